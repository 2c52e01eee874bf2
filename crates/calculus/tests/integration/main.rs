//! Integration tests of tailbound-calculus.

mod dnc;
mod mg1;
mod reach;
mod snc;
