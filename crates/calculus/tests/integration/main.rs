//! Integration tests of tailbound-calculus.

mod dnc;
mod mg1;
mod order;
mod reach;
mod snc;
