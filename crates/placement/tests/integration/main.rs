//! Integration tests of tailbound-placement: the LP against the calculus (proptest), and
//! placement on production traces.

mod fuzz;
mod lp_props;
mod traces;
