//! The records of `bound`, `admit` and `simulate --json` and how each is built from the
//! calculus', the admission's and the simulator's results.

use serde::{Deserialize, Serialize};
use tailbound_admission::Outcome;
use tailbound_calculus::{Bound, Method, TenantBound};
use tailbound_model::Network;
use tailbound_sim::{Plan, SimResult};

/// `tailbound bound --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundReport {
    pub scenario: String,
    /// the analysis used (snc-meister, snc-hop, snc-conv, dnc)
    pub method: String,
    pub tenants: Vec<BoundTenant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundTenant {
    pub name: String,
    /// latency target [s]
    pub slo_s: f64,
    pub percentile: f64,
    /// priority level, 0 highest
    pub priority: u32,
    /// the tenant's bound [s]: the sum of its flows'; null when unbounded
    pub bound_s: Option<f64>,
    /// why there is no finite bound, when `bound_s` is null
    pub unbounded: Option<String>,
    pub flows: Vec<BoundFlow>,
    pub meets_slo: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundFlow {
    pub name: String,
    /// violation probability of this flow's bound
    pub epsilon: f64,
    /// [s], null when unbounded
    pub bound_s: Option<f64>,
}

/// `tailbound simulate --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    pub scenario: String,
    /// events the engine processed (arrivals, shaper releases, chunk departures)
    pub events: u64,
    /// the tenants that ran, in scenario order
    pub tenants: Vec<SimTenant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimTenant {
    pub name: String,
    pub requests: u64,
    /// sum of request sizes [bytes]
    pub bytes: u64,
    /// SLO latency [s]
    pub slo_s: f64,
    /// SLO percentile, e.g. 99.9
    pub percentile: f64,
    pub latency_s: LatencySummary,
    /// one per window of arrival time holding requests (3 minutes by default)
    pub windows: Vec<SimWindow>,
    /// every window's SLO percentile ≤ the SLO latency
    pub meets_slo: bool,
}

/// Exact nearest-rank latency percentiles [s].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimWindow {
    /// window start in trace time [s]
    pub start_s: f64,
    pub requests: u64,
    /// p99.9 of the window's requests [s]
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// the tenant's SLO percentile of the window's requests [s]
    pub slo_percentile_s: f64,
}

/// `tailbound admit --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmitReport {
    pub scenario: String,
    pub policy: String,
    pub admitted: usize,
    /// in arrival (file) order
    pub tenants: Vec<AdmitTenant>,
    /// what `tailbound simulate --decisions` replays
    pub decisions: tailbound_model::Decisions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmitTenant {
    pub name: String,
    pub slo_s: f64,
    pub percentile: f64,
    pub admitted: bool,
    /// priority level at admission, 0 highest
    pub priority: Option<u32>,
    /// its bound when it arrived (rate-limit shaper delay included) [s]; null: unbounded
    pub bound_s: Option<f64>,
    /// why it was rejected
    pub reason: Option<String>,
    /// existing tenants whose priority level its admission changed
    pub changed: Vec<PriorityChange>,
    /// time to decide [s]
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityChange {
    pub tenant: String,
    pub old: u32,
    pub new: u32,
}

impl BoundReport {
    /// The record of `bounds` (from [`tailbound_calculus::bound`]) of `scenario` (its name as
    /// the user gave it) under `method`.
    pub fn new(scenario: String, method: Method, bounds: &[TenantBound]) -> BoundReport {
        BoundReport {
            scenario,
            method: method.as_str().to_string(),
            tenants: bounds.iter().map(BoundTenant::new).collect(),
        }
    }

    /// Every tenant meets its SLO (the command's exit status).
    pub fn all_meet_slo(&self) -> bool {
        self.tenants.iter().all(|t| t.meets_slo)
    }
}

impl BoundTenant {
    /// The record of one tenant's bound.
    pub fn new(b: &TenantBound) -> BoundTenant {
        BoundTenant {
            name: b.name.clone(),
            slo_s: b.slo.latency_s,
            percentile: b.slo.percentile.value(),
            priority: b.priority,
            bound_s: b.total.seconds(),
            unbounded: match &b.total {
                Bound::Unbounded(r) => Some(r.clone()),
                Bound::Within(_) => None,
            },
            flows: b
                .flows
                .iter()
                .map(|f| BoundFlow {
                    name: f.name.clone(),
                    epsilon: f.epsilon,
                    bound_s: f.bound.seconds(),
                })
                .collect(),
            meets_slo: b.meets_slo,
        }
    }
}

impl AdmitTenant {
    /// The record of tenant `o.tenant` of `net` arriving with outcome `o`, decided in
    /// `seconds`.
    pub fn new(net: &Network, o: &Outcome, seconds: f64) -> AdmitTenant {
        let t = &net.tenants[o.tenant];
        AdmitTenant {
            name: t.name.clone(),
            slo_s: t.slo.latency_s,
            percentile: t.slo.percentile.value(),
            admitted: o.admitted,
            priority: o.level,
            bound_s: o.bound_s,
            reason: o.reason.clone(),
            changed: PriorityChange::list(net, &o.changed),
            seconds,
        }
    }
}

impl PriorityChange {
    /// The records of `changed` (tenant index, old level, new level) of `net`.
    pub fn list(net: &Network, changed: &[(usize, u32, u32)]) -> Vec<PriorityChange> {
        changed
            .iter()
            .map(|&(t, old, new)| PriorityChange {
                tenant: net.tenants[t].name.clone(),
                old,
                new,
            })
            .collect()
    }
}

impl SimReport {
    /// The record of replaying `plan` on `net` with result `r`; `scenario` names the input.
    pub fn new(net: &Network, plan: &Plan, r: &SimResult, scenario: String) -> SimReport {
        SimReport {
            scenario,
            events: r.events,
            tenants: plan
                .tenants
                .iter()
                .zip(&r.tenants)
                .map(|(&ti, t)| {
                    let slo = net.tenants[ti].slo;
                    SimTenant {
                        name: t.name.clone(),
                        requests: t.requests,
                        bytes: t.bytes,
                        slo_s: slo.latency_s,
                        percentile: slo.percentile.value(),
                        latency_s: LatencySummary {
                            mean: t.mean_s,
                            p50: t.p50_s,
                            p90: t.p90_s,
                            p99: t.p99_s,
                            p999: t.p999_s,
                            max: t.max_s,
                        },
                        windows: t
                            .windows
                            .iter()
                            .map(|w| SimWindow {
                                start_s: w.start_s,
                                requests: w.requests,
                                p999: w.p999_s,
                                slo_percentile_s: w.slo_percentile_s,
                            })
                            .collect(),
                        meets_slo: t.meets_slo,
                    }
                })
                .collect(),
        }
    }

    /// Every tenant that ran meets its SLO in every window.
    pub fn all_meet_slo(&self) -> bool {
        self.tenants.iter().all(|t| t.meets_slo)
    }
}
