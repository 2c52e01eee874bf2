//! End-to-end tests of the `tailbound` binary: real traces in, `--json` reports out,
//! deserialized into the structures of `tailbound_cli::report`.

mod agent;
mod alloc;
mod bound;
mod catalogue;
mod common;
mod curve;
mod decisions_fuzz;
mod demo;
mod docs;
mod enforce;
mod errors;
mod experiment;
mod experiment_vdc_testbed;
mod experiment_vdc_testbed_capacity;
mod graph;
mod memory;
mod outputs;
mod place;
mod probe;
mod serve;
mod simulate;
mod testbed;
mod trace;
mod vdc;
