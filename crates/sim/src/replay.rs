//! Replaying a network's tenants under a policy's [`Decisions`]: the glue between decisions
//! files and the engine, and the OPT search (snc-meister §6.2).
//!
//! [`Replay::new`] takes the network, every tenant's requests (for a scenario, the held-out
//! halves its caller loads with `tailbound-scenario`) and every flow's work function; [`Plan`]
//! says which tenants run, at which priority, on which server and behind which token buckets
//! ([`Plan::from_decisions`], [`Plan::first`]); [`Replay::run`] builds the network of the
//! running tenants and simulates it.

use crate::{simulate, Excess, SimConfig, SimError, SimResult, Transmission};
use crate::{TenantResult, TenantWorkload};
use std::collections::HashMap;
use tailbound_curves::WorkFunction;
use tailbound_model::{Bucket, Decisions, DecisionsError, Network, NetworkError, Request, Stage};

/// Why a replay could not be set up or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error("{what}: {got} given for {expected} {of}; expected one per {of_one}")]
    Length {
        what: &'static str,
        got: usize,
        expected: usize,
        of: &'static str,
        of_one: &'static str,
    },
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
    #[error("the decisions limit flow {flow:?} at stage {given}, but it is a {actual} flow")]
    Stage {
        flow: String,
        given: Stage,
        actual: Stage,
    },
    #[error("the decisions move tenant {tenant:?} to server {server:?}: {source}")]
    Server {
        tenant: String,
        server: String,
        #[source]
        source: NetworkError,
    },
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// A network with every tenant's requests and every flow's work function at hand.
#[derive(Clone)]
pub struct Replay<'a> {
    network: &'a Network,
    requests: Vec<Vec<Request>>,
    works: Vec<&'a dyn WorkFunction>,
}

impl std::fmt::Debug for Replay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("tenants", &self.requests.len())
            .field("flows", &self.works.len())
            .finish()
    }
}

/// What runs in one replay.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// network tenant indices that run, ascending
    pub tenants: Vec<usize>,
    /// explicit priority per network tenant (0 highest); `None`: the network's own or the
    /// dense rank of the SLO among the running tenants
    pub priorities: Vec<Option<u32>>,
    /// server host per network tenant; `None`: the network's own
    pub servers: Vec<Option<usize>>,
    /// token buckets per network flow index (a request passes when all allow it)
    pub shapers: HashMap<usize, Vec<Bucket>>,
    /// what the shapers do with excess requests
    pub excess: Excess,
}

impl Plan {
    /// The first `n` tenants of the network, unshaped, priorities by SLO among them.
    pub fn first(network: &Network, n: usize) -> Plan {
        let count = network.tenants.len();
        Plan {
            tenants: (0..n.min(count)).collect(),
            priorities: vec![None; count],
            servers: vec![None; count],
            shapers: HashMap::new(),
            excess: Excess::Wait,
        }
    }

    /// Every tenant of the network, as the network says.
    pub fn all(network: &Network) -> Plan {
        Plan::first(network, network.tenants.len())
    }

    /// The admitted tenants of `decisions` with their priorities, servers and rate limits.
    /// Every network tenant must be decided; every decided tenant, limited flow (at its own
    /// stage) and server must exist.
    pub fn from_decisions(network: &Network, decisions: &Decisions) -> Result<Plan, ReplayError> {
        decisions.validate()?;
        let net = network;
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
        let mut plan = Plan::first(net, 0);
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
            if let Some(server) = &d.server {
                let host = net
                    .host_named(server)
                    .map_err(|source| ReplayError::Server {
                        tenant: d.name.clone(),
                        server: server.clone(),
                        source,
                    })?;
                plan.servers[ti] = Some(host);
            }
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
                if net.flows[fi].stage != l.stage {
                    return Err(ReplayError::Stage {
                        flow: l.flow.clone(),
                        given: l.stage,
                        actual: net.flows[fi].stage,
                    });
                }
                plan.shapers.entry(fi).or_default().push(l.bucket);
            }
        }
        if let Some(ti) = decided.iter().position(|d| !d) {
            return Err(ReplayError::Undecided(net.tenants[ti].name.clone()));
        }
        plan.tenants.sort_unstable();
        Ok(plan)
    }
}

impl<'a> Replay<'a> {
    /// `requests`: one list per tenant of `network` (sorted by arrival); `works`: one work
    /// function per flow of `network`.
    pub fn new(
        network: &'a Network,
        requests: Vec<Vec<Request>>,
        works: Vec<&'a dyn WorkFunction>,
    ) -> Result<Replay<'a>, ReplayError> {
        let length = |what, got, expected, of, of_one| {
            Err(ReplayError::Length {
                what,
                got,
                expected,
                of,
                of_one,
            })
        };
        if requests.len() != network.tenants.len() {
            return length(
                "request lists",
                requests.len(),
                network.tenants.len(),
                "tenants",
                "tenant",
            );
        }
        if works.len() != network.flows.len() {
            return length(
                "work functions",
                works.len(),
                network.flows.len(),
                "flows",
                "flow",
            );
        }
        Ok(Replay {
            network,
            requests,
            works,
        })
    }

    pub fn network(&self) -> &'a Network {
        self.network
    }

    /// The requests of network tenant `i`.
    pub fn requests(&self, i: usize) -> &[Request] {
        &self.requests[i]
    }

    /// Simulates the tenants of `plan`; the result's tenants are in `plan.tenants` order.
    pub fn run(
        &self,
        plan: &Plan,
        transmission: Transmission,
        window_s: f64,
    ) -> Result<SimResult, ReplayError> {
        let (net, origin) = self.plan_network(plan)?;
        let workloads: Vec<TenantWorkload<'_>> = plan
            .tenants
            .iter()
            .map(|&ti| TenantWorkload {
                requests: &self.requests[ti],
                works: self.network.tenants[ti]
                    .flows
                    .iter()
                    .map(|&f| self.works[f])
                    .collect(),
            })
            .collect();
        let shapers = origin
            .iter()
            .map(|f| plan.shapers.get(f).cloned().unwrap_or_default())
            .collect();
        let cfg = SimConfig {
            transmission,
            priorities: None,
            shapers,
            window_s,
            excess: plan.excess,
            ..SimConfig::default()
        };
        Ok(simulate(&net, &workloads, &cfg)?)
    }

    /// The network of the running tenants (moved to their decided servers, with explicit
    /// priorities from the plan), and the original index of each of its flows.
    fn plan_network(&self, plan: &Plan) -> Result<(Network, Vec<usize>), ReplayError> {
        let (mut net, origin) = self.network.subset(&plan.tenants);
        for (i, &ti) in plan.tenants.iter().enumerate() {
            if let Some(server) = plan.servers[ti] {
                net.move_tenant(i, server)
                    .map_err(|source| ReplayError::Server {
                        tenant: net.tenants[i].name.clone(),
                        server: self
                            .network
                            .hosts
                            .get(server)
                            .map_or_else(|| format!("#{server}"), |h| h.name.clone()),
                        source,
                    })?;
            }
            if let Some(p) = plan.priorities[ti] {
                net.tenants[i].priority = Some(p);
            }
        }
        Ok((net, origin))
    }
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
    transmission: Transmission,
    window_s: f64,
    mut progress: impl FnMut(usize, bool),
) -> Result<Opt, ReplayError> {
    let total = replay.network.tenants.len();
    let mut probes = Vec::new();
    let mut probe = |n: usize| -> Result<bool, ReplayError> {
        let r = replay.run(&Plan::first(replay.network, n), transmission, window_s)?;
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
    transmission: Transmission,
    window_s: f64,
    mut progress: impl FnMut(usize, bool),
) -> Result<Vec<usize>, ReplayError> {
    let total = replay.network.tenants.len();
    let mut plan = Plan::first(replay.network, 0);
    for t in 0..total {
        plan.tenants.push(t);
        let r = replay.run(&plan, transmission, window_s)?;
        let ok = r.tenants.iter().all(|t: &TenantResult| t.meets_slo);
        if !ok {
            plan.tenants.pop();
        }
        progress(t, ok);
    }
    Ok(plan.tenants)
}
