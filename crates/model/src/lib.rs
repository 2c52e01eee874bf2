//! The vocabulary every tailbound crate speaks: requests, stages, SLOs, quantities with units,
//! and the traffic models (r-b curves, arrival curves, MMPPs) that characterization produces
//! and the calculus consumes.
//!
//! This crate does no I/O and holds no algorithms beyond evaluating its own types. Reading
//! traces lives in `tailbound-trace`; turning traces into these models lives in
//! `tailbound-curves`; bounds over them live in the calculus crate.
//!
//! Main types: [`Request`] and [`Op`], [`Stage`], [`Slo`] and [`Percentile`], [`RbCurve`],
//! [`ArrivalCurve`], [`Mmpp`]; unit parsers in [`units`].

pub mod decisions;
pub mod network;
pub mod request;
pub mod slo;
pub mod stage;
pub mod traffic;
pub mod units;

pub use decisions::{Decisions, DecisionsError, Excess, RateLimit, TenantDecision};
pub use network::{Flow, Network, NetworkError, Queue, TenantSpec};
pub use request::{Op, OpKind, Request};
pub use slo::{Percentile, Slo, SloError};
pub use stage::Stage;
pub use traffic::{ArrivalCurve, CurveError, Mmpp, MmppState, RbCurve, SizeModel};
