//! The vocabulary every tailbound crate speaks: requests, stages, SLOs, quantities with units,
//! and the traffic models (r-b curves, arrival curves, MMPPs) that characterization produces
//! and the calculus consumes.
//!
//! This crate does no I/O and holds no algorithms beyond evaluating its own types. Reading
//! traces lives in `tailbound-trace`; turning traces into these models lives in
//! `tailbound-curves`; bounds over them live in the calculus crate.
//!
//! Main types: [`Request`] and [`Op`], [`Stage`], [`Slo`] and [`Percentile`], [`Bucket`],
//! [`RbCurve`], [`ArrivalCurve`], [`Mmpp`]; the [`Network`] of hosts, queues, flows and tenants
//! and its one [`NetworkBuilder`]; a policy's [`Decisions`]; unit parsers in [`units`].

pub mod decisions;
pub mod names;
pub mod network;
pub mod request;
pub mod slo;
pub mod stage;
pub mod traffic;
pub mod units;

pub use decisions::{Decisions, DecisionsError, Excess, RateLimit, TenantDecision};
pub use names::UnknownName;
pub use network::{
    flow_name, Flow, FlowModels, Host, Network, NetworkBuilder, NetworkError, NetworkSize,
    NewTenant, Queue, QueueKind, QueueSite, TenantHosts, TenantSpec, ETHERNET_MTU_BYTES,
};
pub use request::{Op, OpKind, Request};
pub use slo::{Percentile, Slo, SloError, SLO_WINDOW_S};
pub use stage::Stage;
pub use traffic::{ArrivalCurve, Bucket, CurveError, Mmpp, MmppState, RbCurve, SizeModel};
