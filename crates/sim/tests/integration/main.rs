//! The one integration-test binary of `tailbound-sim`: one module per topic.

mod chunking;
mod common;
mod conservation;
mod determinism;
mod eyeq;
mod plan;
mod replay;
mod shaping;
mod theory;
