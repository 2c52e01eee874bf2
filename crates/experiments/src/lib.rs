//! The papers' experiments, reproduced with tailbound's own components.
//!
//! Each experiment is a function from a configuration to the data behind a figure (serde
//! structures), so the CLI only prints, writes JSON and draws; tests can assert the papers'
//! orderings on the same data. Today: the bound experiments of snc-meister Fig. 7, 8 and 13
//! ([`bounds`]). Admission, placement and VDC experiments join as their issues land.

pub mod admission;
pub mod bounds;
pub mod placement;
pub mod vdc;
