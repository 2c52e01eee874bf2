//! Traffic characterization: from a tenant's trace to the models the decisions need.
//!
//! A trace (from `tailbound-trace`) becomes work per request at each stage ([`work`]); the
//! per-stage work sequence becomes an exact r-b curve and its dual arrival curve ([`rb`]), an
//! effective bandwidth for a latency target ([`effbw`]), and an MMPP fit ([`mmpp`]). The
//! resulting types live in `tailbound-model`; bounds over them live in the calculus crate.
//! Nothing here knows about admission or placement.

pub mod effbw;
pub mod mmpp;
pub mod rb;
pub mod work;

pub use work::{flow_works, stage_work, NetworkCost, StorageProfile, TokenCost, WorkFunction};
