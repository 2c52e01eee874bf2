//! The one integration-test binary of `tailbound-shaping`, one module per topic.

mod conformance;
mod errors;
mod eyeq;
mod multi;
mod priority;
mod script;
