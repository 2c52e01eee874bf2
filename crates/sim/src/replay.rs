//! Replaying a [`Scenario`] under a policy's [`Decisions`]: the glue between scenario files,
//! decisions files and the engine, and the OPT search (snc-meister §6.2).
//!
//! [`Replay::load`] reads every tenant's requests once (the held-out second half of its
//! trace, or the whole trace); [`Plan`] says which tenants run, at which priority, on which
//! server and behind which token buckets ([`Plan::from_decisions`], [`Plan::first`]);
//! [`Replay::run`] builds the network of the running tenants and simulates it. Each flow
//! puts the work its scenario characterized it with ([`FlowSource::work`]): the papers'
//! network costs on links, the device profile on storage.

use crate::{simulate, Excess, FlowWork, Service, SimConfig, SimError, SimResult, StageShaping};
use crate::{TenantResult, TenantWorkload};
use std::collections::HashMap;
use tailbound_model::{Decisions, DecisionsError, Network, Request, Stage};
use tailbound_scenario::{FlowSource, Part, Scenario, ScenarioError};

/// Which requests of each tenant a replay uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayPart {
    /// the second half by time, rebased (both papers: the first half characterizes)
    #[default]
    SecondHalf,
    /// every request (what SNC-Meister's tools check against when characterizing the whole
    /// trace)
    Whole,
}

/// Why a replay could not be set up or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("tenant {0:?} has no requests to replay: it comes from an SNC-Meister model config, which holds fitted MMPPs but no trace; simulate a topology or tailbound scenario with traces instead")]
    NoRequests(String),
    #[error("flow {0:?} has no work function (model config); simulate a scenario with traces")]
    NoWork(String),
    #[error("invalid decisions: {0}")]
    Decisions(#[from] DecisionsError),
    #[error("the decisions name tenant {name:?}, which the scenario does not have; its tenants are {known}")]
    UnknownTenant { name: String, known: String },
    #[error("the decisions say nothing about tenant {0:?}; list every tenant of the scenario (admitted true or false)")]
    Undecided(String),
    #[error("the decisions limit flow {flow:?} of tenant {tenant:?}, which has no such flow; its flows are {known}")]
    UnknownFlow {
        tenant: String,
        flow: String,
        known: String,
    },
    #[error("the decisions move tenant {tenant:?} to server {server:?}, but the scenario has no queue {queue:?}")]
    UnknownServer {
        tenant: String,
        server: String,
        queue: String,
    },
    #[error("the decisions move tenant {0:?} to another server, but the scenario does not name its hosts (model config)")]
    NoHosts(String),
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// A scenario with every tenant's requests at hand.
#[derive(Debug, Clone)]
pub struct Replay<'s> {
    scenario: &'s Scenario,
    requests: Vec<Vec<Request>>,
}

/// What runs in one replay.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// scenario tenant indices that run, in scenario order
    pub tenants: Vec<usize>,
    /// explicit priority per scenario tenant (0 highest); `None`: the scenario's own or the
    /// dense rank of the SLO among the running tenants
    pub priorities: Vec<Option<u32>>,
    /// server per scenario tenant; `None`: the scenario's own
    pub servers: Vec<Option<String>>,
    /// token buckets per scenario flow index (a request passes when all allow it)
    pub shapers: HashMap<usize, Vec<StageShaping>>,
    /// what the shapers do with excess requests
    pub excess: Excess,
}

impl Plan {
    /// The first `n` tenants of the scenario, unshaped, priorities by SLO among them.
    pub fn first(scenario: &Scenario, n: usize) -> Plan {
        let count = scenario.network.tenants.len();
        Plan {
            tenants: (0..n.min(count)).collect(),
            priorities: vec![None; count],
            servers: vec![None; count],
            shapers: HashMap::new(),
            excess: Excess::Wait,
        }
    }

    /// Every tenant of the scenario, as the scenario says.
    pub fn all(scenario: &Scenario) -> Plan {
        Plan::first(scenario, scenario.network.tenants.len())
    }

    /// The admitted tenants of `decisions` with their priorities, servers and rate limits.
    /// Every scenario tenant must be decided, every decided tenant and limited flow must exist.
    pub fn from_decisions(scenario: &Scenario, decisions: &Decisions) -> Result<Plan, ReplayError> {
        decisions.validate()?;
        let net = &scenario.network;
        let known = || {
            net.tenants
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let index: HashMap<&str, usize> = net
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.as_str(), i))
            .collect();
        let mut plan = Plan::first(scenario, 0);
        plan.excess = decisions.excess;
        let mut decided = vec![false; net.tenants.len()];
        for d in &decisions.tenants {
            let &ti = index
                .get(d.name.as_str())
                .ok_or_else(|| ReplayError::UnknownTenant {
                    name: d.name.clone(),
                    known: known(),
                })?;
            decided[ti] = true;
            if !d.admitted {
                continue;
            }
            plan.tenants.push(ti);
            plan.priorities[ti] = d.priority;
            plan.servers[ti] = d.server.clone();
            let spec = &net.tenants[ti];
            for l in &d.limits {
                let fi = spec
                    .flows
                    .iter()
                    .copied()
                    .find(|&f| net.flows[f].name == l.flow)
                    .ok_or_else(|| ReplayError::UnknownFlow {
                        tenant: d.name.clone(),
                        flow: l.flow.clone(),
                        known: spec
                            .flows
                            .iter()
                            .map(|&f| net.flows[f].name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    })?;
                plan.shapers.entry(fi).or_default().push(StageShaping {
                    rate: l.rate,
                    burst: l.burst,
                });
            }
        }
        if let Some(ti) = decided.iter().position(|d| !d) {
            return Err(ReplayError::Undecided(net.tenants[ti].name.clone()));
        }
        plan.tenants.sort_unstable();
        Ok(plan)
    }
}

impl<'s> Replay<'s> {
    /// Reads (or generates) every tenant's requests: `part` of each trace.
    pub fn load(scenario: &'s Scenario, part: ReplayPart) -> Result<Replay<'s>, ReplayError> {
        let part = match part {
            ReplayPart::SecondHalf => Part::FirstHalf,
            ReplayPart::Whole => Part::Whole,
        };
        let requests = scenario
            .tenants
            .iter()
            .zip(&scenario.network.tenants)
            .map(|(source, spec)| match source.replay_part(part)? {
                Some(t) => Ok(t.requests),
                None => Err(ReplayError::NoRequests(spec.name.clone())),
            })
            .collect::<Result<Vec<_>, ReplayError>>()?;
        Ok(Replay { scenario, requests })
    }

    /// Requests given directly, one list per scenario tenant (sorted by arrival).
    pub fn with_requests(scenario: &'s Scenario, requests: Vec<Vec<Request>>) -> Replay<'s> {
        assert_eq!(
            requests.len(),
            scenario.network.tenants.len(),
            "one request list per tenant"
        );
        Replay { scenario, requests }
    }

    pub fn scenario(&self) -> &'s Scenario {
        self.scenario
    }

    /// The requests of scenario tenant `i`.
    pub fn requests(&self, i: usize) -> &[Request] {
        &self.requests[i]
    }

    /// Simulates the tenants of `plan`; the result's tenants are in `plan.tenants` order.
    pub fn run(
        &self,
        plan: &Plan,
        service: Service,
        window_s: f64,
    ) -> Result<SimResult, ReplayError> {
        let net = self.network(plan)?;
        let mut workloads = Vec::with_capacity(plan.tenants.len());
        let mut shapers = Vec::with_capacity(net.flows.len());
        for &ti in &plan.tenants {
            let spec = &self.scenario.network.tenants[ti];
            let mut flows = Vec::with_capacity(spec.flows.len());
            for &fi in &spec.flows {
                let source: &FlowSource = self.scenario.flows[fi].as_ref().ok_or_else(|| {
                    ReplayError::NoWork(self.scenario.network.flows[fi].name.clone())
                })?;
                flows.push(if source.stage == Stage::Storage {
                    FlowWork::device(source.work())
                } else {
                    FlowWork::link(source.work())
                });
                shapers.push(plan.shapers.get(&fi).cloned().unwrap_or_default());
            }
            workloads.push(TenantWorkload {
                requests: &self.requests[ti],
                flows,
            });
        }
        let cfg = SimConfig {
            service,
            priorities: None,
            shapers,
            window_s,
            excess: plan.excess,
            ..SimConfig::default()
        };
        Ok(simulate(&net, &workloads, &cfg)?)
    }

    /// The network of the running tenants: all queues, their flows (in tenant order, moved
    /// to their decided server), explicit priorities from the plan.
    fn network(&self, plan: &Plan) -> Result<Network, ReplayError> {
        let src = &self.scenario.network;
        let queue_index: HashMap<&str, usize> = src
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| (q.name.as_str(), i))
            .collect();
        let mut net = Network {
            queues: src.queues.clone(),
            flows: Vec::new(),
            tenants: Vec::with_capacity(plan.tenants.len()),
        };
        for &ti in &plan.tenants {
            let spec = &src.tenants[ti];
            let moved = match &plan.servers[ti] {
                None => None,
                Some(server) => {
                    let hosts = self.scenario.hosts[ti]
                        .as_ref()
                        .ok_or_else(|| ReplayError::NoHosts(spec.name.clone()))?;
                    (hosts.server != *server).then_some((hosts.server.as_str(), server.as_str()))
                }
            };
            let mut flows = Vec::with_capacity(spec.flows.len());
            for &fi in &spec.flows {
                let mut flow = src.flows[fi].clone();
                flow.tenant = net.tenants.len();
                if let Some((old, new)) = moved {
                    for q in &mut flow.path {
                        let name = &src.queues[*q].name;
                        if let Some(suffix) = name.strip_prefix(old).filter(|s| s.starts_with('-'))
                        {
                            let target = format!("{new}{suffix}");
                            *q = *queue_index.get(target.as_str()).ok_or_else(|| {
                                ReplayError::UnknownServer {
                                    tenant: spec.name.clone(),
                                    server: new.to_string(),
                                    queue: target.clone(),
                                }
                            })?;
                        }
                    }
                }
                flows.push(net.flows.len());
                net.flows.push(flow);
            }
            let mut tenant = spec.clone();
            tenant.flows = flows;
            if let Some(p) = plan.priorities[ti] {
                tenant.priority = Some(p);
            }
            net.tenants.push(tenant);
        }
        Ok(net)
    }
}

/// What the simulator's packets can add to a fluid bound on each `scenario` tenant's latency
/// [s, by tenant] under [`Service::Chunked`] with `mtu_bytes`. The calculus serves fluid work; the
/// simulator serves link work in `mtu_bytes` chunks, store-and-forward and non-preemptive
/// between chunks, so each link queue on the tenant's path can cost one chunk of
/// store-and-forward plus one chunk of a lower level ahead of it: 2·mtu/R per link queue
/// crossed (the packetizer term of network calculus; 24 µs at 1 Gbit/s). Plus 1 µs for the
/// engine's ns rounding. Storage flows are served whole in both and add nothing, and so do
/// flows without a source (the simulator cannot replay them).
pub fn packetization_allowance_s(scenario: &Scenario, mtu_bytes: u64) -> Vec<f64> {
    let net = &scenario.network;
    let link = |f: usize| {
        scenario.flows[f]
            .as_ref()
            .is_some_and(|s| s.stage != Stage::Storage)
    };
    net.tenants
        .iter()
        .map(|t| {
            1e-6 + t
                .flows
                .iter()
                .filter(|&&f| link(f))
                .flat_map(|&f| &net.flows[f].path)
                .map(|&q| 2.0 * mtu_bytes as f64 / net.queues[q].rate)
                .sum::<f64>()
        })
        .collect()
}

/// What [`opt`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    /// the largest n whose first n tenants all met their SLOs (0 if even the first missed)
    pub n: usize,
    /// tenants in the scenario
    pub tenants: usize,
    /// every n tried and whether all of its first n tenants met their SLOs, in order tried
    pub probes: Vec<(usize, bool)>,
}

/// OPT (snc-meister §6.2): the largest n such that the first n tenants, replayed together
/// with priorities by SLO and no rate limits, all meet their SLOs; bisection over n
/// (assumes that adding tenants never helps). `progress` is called after every probe.
pub fn opt(
    replay: &Replay<'_>,
    service: Service,
    window_s: f64,
    mut progress: impl FnMut(usize, bool),
) -> Result<Opt, ReplayError> {
    let total = replay.scenario.network.tenants.len();
    let mut probes = Vec::new();
    let mut probe = |n: usize| -> Result<bool, ReplayError> {
        let r = replay.run(&Plan::first(replay.scenario, n), service, window_s)?;
        let ok = r.tenants.iter().all(|t: &TenantResult| t.meets_slo);
        probes.push((n, ok));
        progress(n, ok);
        Ok(ok)
    };
    // invariant: the first `lo` pass (0 vacuously), the first `hi` fail (total + 1 virtually)
    let (mut lo, mut hi) = (0usize, total + 1);
    if total > 0 && probe(total)? {
        lo = total;
    } else {
        hi = total;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if probe(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Opt {
        n: lo,
        tenants: total,
        probes,
    })
}

/// The empirical optimum by trial and error over the arrival order (snc-meister §6.2 without
/// its "first n" restriction): each tenant in scenario order joins if the tenants admitted so
/// far plus it, replayed together with priorities by SLO and no rate limits, all meet their
/// SLOs; otherwise it is skipped. Returns the admitted tenants. One replay per tenant.
/// `progress` is called after every trial with (tenant, admitted).
pub fn opt_greedy(
    replay: &Replay<'_>,
    service: Service,
    window_s: f64,
    mut progress: impl FnMut(usize, bool),
) -> Result<Vec<usize>, ReplayError> {
    let total = replay.scenario.network.tenants.len();
    let mut plan = Plan::first(replay.scenario, 0);
    for t in 0..total {
        plan.tenants.push(t);
        let r = replay.run(&plan, service, window_s)?;
        let ok = r.tenants.iter().all(|t: &TenantResult| t.meets_slo);
        if !ok {
            plan.tenants.pop();
        }
        progress(t, ok);
    }
    Ok(plan.tenants)
}
