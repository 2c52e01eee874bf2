//! Integration tests of tailbound-calculus.

mod dnc;
mod snc;
