//! The controller ↔ enforcers protocol: HTTP/1.1, JSON bodies, version prefix `/v1`.
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /v1/datacenter` | — | [`DatacenterInfo`]: the compiled VDC file (flows with their hops and the appliances' cost functions), the control interval, samples per interval, the enforcers' minimum rate and carry-over |
//! | `POST /v1/enforcers/{id}/register` | [`Register`]: the flows it enforces, as `tenant/flow` | [`AllocationUpdate`] for those flows: an enforcer that restarts gets its allocation back here |
//! | `POST /v1/enforcers/{id}/report` | [`Report`]: one interval's [`FlowReport`] per flow (pulsar §4.2's utilization, backlog, queueing and outstanding vectors, completed tokens, sub-interval samples) and the interval's length | [`AllocationUpdate`]: the latest allocation vectors, and when the controller's next step is due |
//! | `GET /v1/enforcers/{id}/allocation` | — | [`AllocationUpdate`] |
//! | `GET /v1/status` | — | [`Status`]: enforcers (last report, `stale` flag), flows (demand, allocation), resources (capacity, estimator phase), tenants whose guarantee was violated |
//!
//! Errors are a non-2xx status with an [`ApiError`] body: 400 for a malformed body, 404 for an
//! enforcer that has not registered, 422 for unknown flows or vectors without one entry per hop.
//! An enforcer id is 1 to 64 characters from `[A-Za-z0-9._-]`.
//!
//! **Timing.** The controller steps every `interval_ns` on its own clock; each step uses the
//! reports received since the last one (several reports of a flow are merged, and scaled to
//! the interval by their `span_ns`). An enforcer reports every interval, a little before the
//! step that [`AllocationUpdate::next_step_in_ns`] announces, and applies the allocation it
//! gets back. An enforcer that has not reported for `stale_after` intervals is flagged
//! `stale` (and logged); its flows keep their last demand estimates, so their allocation holds.
//! An enforcer that cannot reach the controller keeps enforcing its last allocation.

use serde::{Deserialize, Serialize};
use tailbound_allocation::{Datacenter, FlowReport};

/// What every enforcer needs to know about the datacenter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatacenterInfo {
    /// the control interval [ns]
    pub interval_ns: u64,
    /// sub-interval samples per report (pulsar's enforcer timer)
    pub samples_per_interval: u32,
    /// the smallest rate an enforcer gives a hop [tokens/s]
    pub min_rate: f64,
    /// unused tokens an enforcer keeps across an allocation update [s at the new rate]
    pub carry_s: f64,
    pub datacenter: Datacenter,
}

/// `POST /v1/enforcers/{id}/register`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Register {
    /// the flows it enforces, `tenant/flow`
    pub flows: Vec<String>,
}

/// One flow's interval in a [`Report`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowStats {
    /// `tenant/flow`
    pub flow: String,
    pub report: FlowReport,
}

/// `POST /v1/enforcers/{id}/report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// length of the interval the statistics cover [ns]
    pub span_ns: u64,
    pub flows: Vec<FlowStats>,
}

/// One flow's allocation vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowAllocation {
    /// `tenant/flow`
    pub flow: String,
    /// per hop of the flow's path [tokens/s] (before the enforcer's minimum rate)
    pub rates: Vec<f64>,
}

/// The allocation vectors of an enforcer's flows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocationUpdate {
    /// control steps run so far (the first runs when the controller starts)
    pub epoch: u64,
    /// the control interval [ns]
    pub interval_ns: u64,
    /// time until the controller's next step [ns]
    pub next_step_in_ns: u64,
    pub flows: Vec<FlowAllocation>,
}

/// An enforcer as the controller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnforcerStatus {
    pub id: String,
    pub flows: Vec<String>,
    /// since its last report (or registration) [s]
    pub silent_s: f64,
    /// it has not reported for `stale_after` intervals
    pub stale: bool,
    /// reports received
    pub reports: u64,
}

/// A flow as the controller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowStatus {
    pub flow: String,
    /// the enforcer that registered it
    pub enforcer: Option<String>,
    /// its hops' physical resources (`-` when none) and virtual resources
    pub hops: Vec<String>,
    /// demand estimate per hop [tokens/s]
    pub demand: Vec<f64>,
    /// allocation per hop [tokens/s]
    pub rates: Vec<f64>,
    /// the guaranteed (local) part of it [tokens/s]
    pub local_rates: Vec<f64>,
}

/// A physical resource as the controller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceStatus {
    pub name: String,
    /// the capacity the last step used [tokens/s]
    pub capacity: f64,
    /// the capacity estimator's phase, for estimated appliances
    pub phase: Option<String>,
}

/// `GET /v1/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Status {
    pub epoch: u64,
    pub interval_ns: u64,
    pub enforcers: Vec<EnforcerStatus>,
    pub flows: Vec<FlowStatus>,
    pub resources: Vec<ResourceStatus>,
    /// tenants whose guarantee was violated at an appliance in the last interval
    pub violated: Vec<String>,
    /// physical resources whose guaranteed allocations exceed their capacity
    pub overcommitted: Vec<String>,
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    pub error: String,
}

/// Whether `id` is a valid enforcer id (see the module docs).
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `tenant/flow` of the datacenter's flow `i`.
pub fn flow_name(dc: &Datacenter, i: usize) -> String {
    let f = &dc.flows[i];
    format!("{}/{}", dc.tenants[f.tenant].name, f.name)
}
