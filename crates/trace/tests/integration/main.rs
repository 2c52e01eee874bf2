//! The one integration-test binary of tailbound-trace; one module per topic.

mod bad_input;
mod common;
mod fuzz;
mod generate;
mod real_traces;
mod roundtrip;
mod split;
mod stats;
