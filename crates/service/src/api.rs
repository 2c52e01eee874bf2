//! The service's request and response bodies (HTTP/JSON). Clients deserialize the same types
//! (`tailbound tenant`, the integration tests); the OpenAPI document ([`crate::openapi`])
//! describes them.

use serde::{Deserialize, Serialize};
use tailbound_model::{ArrivalCurve, Mmpp, RateLimit, Slo, Stage};
use tailbound_trace::GenSpec;

/// `POST /v1/hosts`: a host with one NIC (a queue each way) and optionally storage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewHost {
    pub name: String,
    /// NIC rate each way: a number [bytes/s] or a rate with a unit ("1Gbit", "125MB/s")
    pub link: Quantity,
    /// storage devices' service rate [busy-s/s] (1 for one SSD); absent: no storage
    #[serde(default)]
    pub storage: Option<f64>,
}

/// A number, or a string with a unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Quantity {
    Number(f64),
    Text(String),
}

/// A registered host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostView {
    pub name: String,
    /// [bytes/s], each way
    pub link_bytes_per_s: f64,
    /// [busy-s/s]; `None`: no storage
    pub storage_rate: Option<f64>,
}

/// `POST /v1/tenants` and `POST /v1/what-if`: a tenant to decide.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    pub name: String,
    /// the host its requests come from
    pub client: String,
    /// the host serving it; absent: placed by the service (WorkloadCompactor fast-first-fit
    /// over the hosts with storage)
    #[serde(default)]
    pub server: Option<String>,
    /// latency target: seconds, or a duration with a unit ("20ms")
    pub slo: Quantity,
    /// percentile of requests within `slo`, strictly between 0 and 100 (default 99.9)
    #[serde(default)]
    pub percentile: Option<f64>,
    /// requests also cross the server's storage device
    #[serde(default)]
    pub storage: bool,
    /// tenants it may burst together with (snc-meister §4.2)
    #[serde(default)]
    pub depends_on: Vec<String>,
    pub traffic: Traffic,
}

/// Where the tenant's traffic models come from: exactly one of the three.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// a trace, as the text of a trace file (any format `tailbound trace` reads)
    #[serde(default)]
    pub trace: Option<String>,
    /// a synthetic generator spec (`tailbound_trace::GenSpec`) and its seed
    #[serde(default)]
    pub model: Option<GenSpec>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// the models of each flow, already characterized
    #[serde(default)]
    pub flows: Option<Vec<FlowSpec>>,
}

/// One flow's models, given directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub stage: Stage,
    /// for the SNC policies
    #[serde(default)]
    pub mmpp: Option<Mmpp>,
    /// for the DNC policies
    #[serde(default)]
    pub arrival: Option<ArrivalCurve>,
}

/// One queue the decision looked at: its load with the tenant and who shares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueLoad {
    pub queue: String,
    /// service rate [work/s]
    pub rate: f64,
    /// mean offered load with the tenant, as a fraction of the rate [1]
    pub load: f64,
    /// the admitted tenants whose flows cross it
    pub tenants: Vec<String>,
}

/// A priority change an arrival or departure caused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityChange {
    pub tenant: String,
    pub from: u32,
    pub to: u32,
}

/// What a decision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionKind {
    Arrive,
    Depart,
    WhatIf,
}

/// A decision and its explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// its number in the decision log (the state's version); 0 for a what-if
    pub seq: u64,
    pub kind: DecisionKind,
    pub tenant: String,
    /// admitted (arrive, what-if) or departed (depart)
    pub admitted: bool,
    /// the admission policy that decided
    pub policy: String,
    /// its server host (chosen by placement when `placed`)
    pub server: Option<String>,
    pub placed: bool,
    pub slo: Option<Slo>,
    /// the tenant's latency bound with the tenants admitted, including it [s]; `None` when
    /// unbounded or departed
    pub bound_s: Option<f64>,
    /// the tenant's priority level, 0 highest
    pub priority: Option<u32>,
    /// why it was rejected: the first tenant whose SLO would be missed (the newcomer itself
    /// when it would miss its own) and by how much
    pub reason: Option<String>,
    /// the queues the tenant crosses, their load and the tenants sharing them
    pub queues: Vec<QueueLoad>,
    /// other tenants whose priority level changed
    pub changed: Vec<PriorityChange>,
    /// rate limits per flow (policies with rate limits)
    pub limits: Vec<RateLimit>,
    /// when it was committed [ms since the Unix epoch]
    pub at_ms: u64,
}

/// `POST /v1/tenants`' answer: the decision, and the tenant's own token when admitted (shown
/// once; the service keeps only its hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Admitted {
    pub decision: Decision,
    pub token: Option<String>,
}

/// An admitted tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantView {
    pub name: String,
    pub client: String,
    pub server: String,
    pub placed: bool,
    pub slo: Slo,
    pub storage: bool,
    pub group: Option<String>,
    pub priority: Option<u32>,
    /// its bound when admitted [s]
    pub admitted_bound_s: Option<f64>,
    /// the decision that admitted it
    pub seq: u64,
}

/// An admitted tenant's bound now, with every tenant admitted now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundView {
    pub tenant: String,
    pub slo: Slo,
    pub priority: u32,
    /// `None`: unbounded
    pub bound_s: Option<f64>,
    pub meets_slo: bool,
}

/// Every error's body: what is wrong, and the field or parameter when one is to blame.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub status: String,
    pub tenants: usize,
    pub hosts: usize,
    /// the latest decision's number
    pub seq: u64,
}

/// `GET /v1/hosts/{host}/decisions`: what the tc enforcer of one host needs, at one version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostDecisions {
    pub host: String,
    /// the decision log's number this state is at (the [`Decision::seq`] of the latest
    /// decision, committed with it); it only grows, so an agent never applies an older state
    /// after a newer one
    pub version: u64,
    /// the admitted tenants whose client or server is the host: priority, server, limits
    pub decisions: tailbound_model::Decisions,
    /// where each of those tenants' packets go: its client and server hosts
    pub endpoints: Vec<TenantEnds>,
}

/// A tenant's two hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantEnds {
    pub tenant: String,
    pub client: String,
    pub server: String,
}

/// `GET /v1/agents`: a host agent as the service last saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    pub host: String,
    /// the version it said it had applied
    pub applied: u64,
    /// decisions it is behind the service's latest version
    pub behind: u64,
    /// when it last asked [ms since the Unix epoch]
    pub seen_ms: u64,
}

/// `POST /v1/hosts/{host}/token`: a host agent's token, shown once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostToken {
    pub host: String,
    /// `Authorization: Bearer TOKEN` for `GET /v1/hosts/{host}/decisions` (and the VDC
    /// enforcer routes as enforcer `host`); the service keeps only its SHA-256
    pub token: String,
}
