//! Integration tests of tailbound-placement: the LP against the calculus (proptest), and
//! placement on production traces.

mod lp_props;
mod traces;
