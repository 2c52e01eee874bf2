//! wcPlacer: online placement of arriving and departing workloads onto servers
//! (workload-compactor §2.4, §5.2, §5.5).
//!
//! * **First-fit**: servers are tried in the order they were opened; the workload goes to the
//!   first one where it fits, else a new server is opened (unless `max_servers` are open:
//!   then it is rejected). Under [`Policy::Compactor`] "fits" means the server's LP
//!   ([`crate::lp`]) with the newcomer is feasible, and its answer re-sets every rate limit
//!   on that server; under a baseline it means the fixed limits pass
//!   [`crate::baseline::fits`].
//! * **Fast-first-fit** ([`Policy::CompactorFff`]): before solving a server's LP, skip it when
//!   at some server stage the sum of its current rates plus the newcomer's long-term rate
//!   exceeds the capacity (eq. (4) assuming the current limits were not reconfigured). A skip
//!   can miss a server where re-optimising would have made room, never admit a wrong one.
//!   Baselines always use this test: with fixed limits it is exact.
//! * A workload that does not fit on an empty server is rejected (it would fit nowhere); the
//!   empty server is tried last, as the new server first-fit opens, so one LP answers both.
//! * **Departures** free the workload's share; under WorkloadCompactor the touched server's
//!   LP is solved again so the remaining workloads get the best limits for the new set.
//! * **Safety margin** (§5.2): every r-b curve is scaled by 1 + margin before anything else.
//! * **Client hosts** ([`Placer::with_client_hosts`]): by default every workload has its own
//!   client NIC ([`ClientNic::Own`]); given WorkloadCompactor's client hosts, each workload
//!   also gets a client VM, grouped by server as the original does ([`crate::client_hosts`]),
//!   and the LP models the shared client NICs ([`ClientNic::Tandem`]). A server whose client
//!   host has no free VM is skipped, and a new server needs an unused client host
//!   ([`Placement::NoServer`] otherwise).

use crate::baseline::{fits, BaselineRule, Fixed, FixedMember};
use crate::client_hosts::{ClientHosts, ClientState, ClientVm};
use crate::lp::{levels_of, optimise_with, LpMember};
use crate::workload::Prepared;
use crate::{ClientNic, LpStage, PlacementError, ServerSpec, Workload};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use tailbound_model::{flow_name, Bucket};
use tailbound_model::{Decisions, RateLimit, TenantDecision};

/// Slack kept below Σr ≤ 1 in the fast-first-fit test [1], as in the LP.
const CAPACITY_SLACK: f64 = 1e-6;

/// How rate limits are chosen and servers tried.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Policy {
    /// WorkloadCompactor with plain first-fit: the LP on every server in turn
    Compactor,
    /// WorkloadCompactor with fast-first-fit
    CompactorFff,
    /// a baseline rule of §4.1, first-fit
    Baseline(BaselineRule),
}

impl Policy {
    /// The six policies of the experiments, in report order.
    pub fn all() -> Vec<Policy> {
        vec![
            Policy::Compactor,
            Policy::CompactorFff,
            Policy::Baseline(BaselineRule::AvgRate { k: 1.5 }),
            Policy::Baseline(BaselineRule::AvgRate { k: 2.0 }),
            Policy::Baseline(BaselineRule::Knee),
            Policy::Baseline(BaselineRule::EffectiveBandwidth),
        ]
    }

    pub fn is_baseline(self) -> bool {
        matches!(self, Policy::Baseline(_))
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Policy::Compactor => f.write_str("compactor"),
            Policy::CompactorFff => f.write_str("compactor-fff"),
            Policy::Baseline(b) => f.write_str(&b.name()),
        }
    }
}

impl FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Policy, String> {
        let expected = "expected compactor, compactor-fff, avg-rate:K (e.g. avg-rate:1.5), knee or effective-bw";
        Ok(match s {
            "compactor" => Policy::Compactor,
            "compactor-fff" => Policy::CompactorFff,
            "knee" => Policy::Baseline(BaselineRule::Knee),
            "effective-bw" => Policy::Baseline(BaselineRule::EffectiveBandwidth),
            _ => {
                let Some(k) = s.strip_prefix("avg-rate:") else {
                    return Err(format!("unknown policy {s:?}; {expected}"));
                };
                let k: f64 = k
                    .parse()
                    .map_err(|_| format!("policy {s:?}: {k:?} is not a number; {expected}"))?;
                if !(k.is_finite() && k >= 1.0) {
                    return Err(format!(
                        "policy {s:?}: k = {k} is not allowed; expected a finite k >= 1"
                    ));
                }
                Policy::Baseline(BaselineRule::AvgRate { k })
            }
        })
    }
}

/// Everything a [`Placer`] needs besides the workloads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlacementConfig {
    pub policy: Policy,
    pub server: ServerSpec,
    /// the r-b curves are scaled by 1 + this (§5.2; 0.1 for the paper's 10%) [1]
    pub safety_margin: f64,
    /// at most this many servers; `None`: as many as needed
    pub max_servers: Option<usize>,
}

impl PlacementConfig {
    pub fn new(policy: Policy) -> PlacementConfig {
        PlacementConfig {
            policy,
            server: ServerSpec::default(),
            safety_margin: 0.0,
            max_servers: None,
        }
    }
}

/// A workload handed to [`Placer::arrive`], in arrival order (0, 1, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct WorkloadId(pub usize);

/// What became of an arriving workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "outcome")]
pub enum Placement {
    /// placed on server `server` (index in opening order)
    Placed { server: usize },
    /// fits on no server, not even an empty one
    FitsNowhere,
    /// would need a new server, but `max_servers` are open (or, with client hosts, no unused
    /// client host with a free VM is left for it)
    NoServer,
}

/// A placed workload's server, priority and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    pub id: WorkloadId,
    pub name: String,
    pub server: usize,
    /// level among every placed workload, 0 highest (dense rank of the SLO)
    pub priority: u32,
    /// per stage in [`LpStage::ALL`] order, in work units ([bytes/s, bytes] on links,
    /// [busy-s/s, busy-s] on storage)
    pub limits: [Bucket; 4],
    /// the same, normalised
    pub buckets: [Bucket; 4],
    /// the client VM it runs in, when the placer has client hosts
    pub client: Option<ClientVm>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Placed(usize),
    Rejected,
    Departed,
}

#[derive(Debug, Clone)]
struct Entry {
    workload: Workload,
    prepared: Prepared,
    fixed: Option<Fixed>,
    state: State,
    /// current limits while placed (normalised)
    buckets: [Bucket; 4],
    /// its client host (index) and VM while placed, when the placer has client hosts
    client: Option<(usize, String)>,
}

#[derive(Debug, Clone, Default)]
struct Server {
    /// entry indices
    members: Vec<usize>,
    /// Σ r per server stage [1]
    rate_sums: [f64; 3],
}

/// Places workloads one event at a time. Deterministic; no clock, no I/O.
#[derive(Debug, Clone)]
pub struct Placer {
    cfg: PlacementConfig,
    entries: Vec<Entry>,
    servers: Vec<Server>,
    peak_servers: usize,
    lp_solves: u64,
    clients: Option<ClientState>,
}

impl Placer {
    pub fn new(cfg: PlacementConfig) -> Result<Placer, PlacementError> {
        cfg.server.validate()?;
        if !(cfg.safety_margin.is_finite() && cfg.safety_margin >= 0.0) {
            return Err(PlacementError::Config(format!(
                "safety margin {} is not allowed; expected a finite fraction >= 0, e.g. 0.1 for 10%",
                cfg.safety_margin
            )));
        }
        Ok(Placer {
            cfg,
            entries: Vec::new(),
            servers: Vec::new(),
            peak_servers: 0,
            lp_solves: 0,
            clients: None,
        })
    }

    /// Gives the workloads client VMs on `hosts` (see the module docs); before any arrival.
    pub fn with_client_hosts(mut self, hosts: ClientHosts) -> Result<Placer, PlacementError> {
        if !self.entries.is_empty() {
            return Err(PlacementError::Config(
                "client hosts must be given before the first workload arrives".into(),
            ));
        }
        self.clients = Some(ClientState::new(hosts));
        Ok(self)
    }

    /// How the client NIC is modelled: [`ClientNic::Tandem`] with client hosts.
    pub fn client_nic(&self) -> ClientNic {
        match self.clients {
            Some(_) => ClientNic::Tandem,
            None => ClientNic::Own,
        }
    }

    pub fn config(&self) -> &PlacementConfig {
        &self.cfg
    }

    /// Servers holding at least one workload now.
    pub fn servers_in_use(&self) -> usize {
        self.servers
            .iter()
            .filter(|s| !s.members.is_empty())
            .count()
    }

    /// The most servers in use at any time so far (Fig. 13's measure).
    pub fn peak_servers(&self) -> usize {
        self.peak_servers
    }

    /// Servers ever opened (a server emptied by departures stays open and is tried first-fit).
    pub fn servers_opened(&self) -> usize {
        self.servers.len()
    }

    /// LPs solved so far.
    pub fn lp_solves(&self) -> u64 {
        self.lp_solves
    }

    /// Places `w` (see the module docs). The id is the arrival index.
    pub fn arrive(&mut self, w: Workload) -> Result<(WorkloadId, Placement), PlacementError> {
        if !(w.slo.latency_s.is_finite() && w.slo.latency_s > 0.0) {
            return Err(PlacementError::Workload {
                name: w.name.clone(),
                message: format!("SLO {} s is not a positive latency", w.slo.latency_s),
            });
        }
        let prepared = Prepared::new(&w, &self.cfg.server, self.cfg.safety_margin)?;
        let fixed = match self.cfg.policy {
            Policy::Baseline(rule) => rule.limits(&prepared.curves, prepared.budget_s),
            _ => None,
        };
        let id = self.entries.len();
        self.entries.push(Entry {
            workload: w,
            prepared,
            fixed,
            state: State::Rejected,
            buckets: [Bucket {
                rate: 0.0,
                burst: 0.0,
            }; 4],
            client: None,
        });
        let outcome = self.place(id)?;
        if let Placement::Placed { .. } = outcome {
            self.peak_servers = self.peak_servers.max(self.servers_in_use());
        }
        Ok((WorkloadId(id), outcome))
    }

    fn place(&mut self, id: usize) -> Result<Placement, PlacementError> {
        if self.cfg.policy.is_baseline() && self.entries[id].fixed.is_none() {
            return Ok(Placement::FitsNowhere);
        }
        let min_rates = match &self.entries[id].fixed {
            Some(f) => LpStage::SERVER.map(|s| f.buckets[s.index()].rate),
            None => self.entries[id].prepared.min_rates(),
        };
        let skip_full = self.cfg.policy != Policy::Compactor;
        for k in 0..self.servers.len() {
            let s = &self.servers[k];
            if skip_full
                && !s.members.is_empty()
                && (0..3).any(|i| s.rate_sums[i] + min_rates[i] > 1.0 - CAPACITY_SLACK)
            {
                continue;
            }
            if self
                .clients
                .as_ref()
                .is_some_and(|c| c.host_for(k).is_none())
            {
                continue;
            }
            if self.try_server(id, Some(k))? {
                return Ok(Placement::Placed { server: k });
            }
        }
        let no_server = self
            .cfg
            .max_servers
            .is_some_and(|m| self.servers.len() >= m)
            || self
                .clients
                .as_ref()
                .is_some_and(|c| c.host_for(self.servers.len()).is_none());
        if no_server {
            // a workload that does not fit alone fits nowhere
            return Ok(if self.try_server(id, None)? {
                Placement::NoServer
            } else {
                Placement::FitsNowhere
            });
        }
        // a new server is the workload alone: one LP answers both questions (with others it
        // did not fit either when it does not fit alone: more members only add constraints)
        self.servers.push(Server::default());
        let k = self.servers.len() - 1;
        if !self.try_server(id, Some(k))? {
            self.servers.pop();
            return Ok(Placement::FitsNowhere);
        }
        Ok(Placement::Placed { server: k })
    }

    /// Tries `id` on server `k` (None: an empty server, without committing). Commits on
    /// success when `k` is given.
    fn try_server(&mut self, id: usize, k: Option<usize>) -> Result<bool, PlacementError> {
        let mut members: Vec<usize> = k.map_or_else(Vec::new, |k| self.servers[k].members.clone());
        members.push(id);
        match self.solve(&members)? {
            None => Ok(false),
            Some((buckets, sums)) => {
                if let Some(k) = k {
                    for (&m, b) in members.iter().zip(buckets) {
                        self.entries[m].buckets = b;
                    }
                    if let Some(c) = self.clients.as_mut() {
                        let taken = c.host_for(k).and_then(|h| c.take(h, k));
                        if taken.is_none() {
                            return Err(PlacementError::Config(format!(
                                "no client VM for workload {:?} on server {k}, though one was free",
                                self.entries[id].workload.name
                            )));
                        }
                        self.entries[id].client = taken;
                    }
                    self.entries[id].state = State::Placed(k);
                    self.servers[k].members = members;
                    self.servers[k].rate_sums = sums;
                }
                Ok(true)
            }
        }
    }

    /// The limits of `members` together on one server, or `None` when they do not fit.
    #[allow(clippy::type_complexity)]
    fn solve(
        &mut self,
        members: &[usize],
    ) -> Result<Option<(Vec<[Bucket; 4]>, [f64; 3])>, PlacementError> {
        if self.cfg.policy.is_baseline() {
            let mut fm = Vec::with_capacity(members.len());
            for &m in members {
                let e = &self.entries[m];
                let Some(fixed) = e.fixed.as_ref() else {
                    return Ok(None);
                };
                fm.push(FixedMember {
                    fixed,
                    slo_s: e.workload.slo.latency_s,
                    budget_s: e.prepared.budget_s,
                });
            }
            Ok(fits(&fm, self.client_nic())?
                .map(|sums| (fm.iter().map(|m| m.fixed.buckets).collect(), sums)))
        } else {
            let lm: Vec<LpMember<'_>> = members
                .iter()
                .map(|&m| {
                    let e = &self.entries[m];
                    LpMember {
                        name: &e.workload.name,
                        curves: &e.prepared.curves,
                        slo_s: e.workload.slo.latency_s,
                        budget_s: e.prepared.budget_s,
                    }
                })
                .collect();
            let sol = optimise_with(&lm, self.client_nic())?;
            self.lp_solves += 1;
            Ok(sol.map(|s| (s.buckets, s.rate_sums)))
        }
    }

    /// Removes a placed workload; under WorkloadCompactor re-optimises its server's limits.
    /// Departing a rejected workload does nothing; departing twice is an error.
    pub fn depart(&mut self, id: WorkloadId) -> Result<(), PlacementError> {
        let e = self
            .entries
            .get(id.0)
            .ok_or(PlacementError::UnknownWorkload(id.0))?;
        let k = match e.state {
            State::Placed(k) => k,
            State::Rejected => return Ok(()),
            State::Departed => return Err(PlacementError::UnknownWorkload(id.0)),
        };
        self.entries[id.0].state = State::Departed;
        let members: Vec<usize> = self.servers[k]
            .members
            .iter()
            .copied()
            .filter(|&m| m != id.0)
            .collect();
        match self.solve(&members)? {
            Some((buckets, sums)) => {
                for (&m, b) in members.iter().zip(buckets) {
                    self.entries[m].buckets = b;
                }
                self.servers[k].rate_sums = sums;
            }
            None => {
                // fewer workloads never make a feasible set infeasible: keep the old limits,
                // which remain valid, and account for the freed rates
                tracing::warn!(server = k, "re-optimisation after a departure found no solution; keeping the previous limits");
                let freed = self.entries[id.0].buckets;
                for s in LpStage::SERVER {
                    self.servers[k].rate_sums[s.index()] -= freed[s.index()].rate;
                }
            }
        }
        if let (Some(c), Some((h, vm))) = (self.clients.as_mut(), self.entries[id.0].client.take())
        {
            c.release(h, vm, members.is_empty());
        }
        self.servers[k].members = members;
        Ok(())
    }

    /// The current assignment of every placed workload, in arrival order.
    pub fn assignments(&self) -> Vec<Assignment> {
        let placed: Vec<usize> = (0..self.entries.len())
            .filter(|&i| matches!(self.entries[i].state, State::Placed(_)))
            .collect();
        let levels = levels_of(
            placed
                .iter()
                .map(|&i| self.entries[i].workload.slo.latency_s),
        );
        placed
            .iter()
            .zip(levels)
            .map(|(&i, priority)| {
                let e = &self.entries[i];
                let State::Placed(server) = e.state else {
                    unreachable!("filtered above")
                };
                let limits = LpStage::ALL.map(|s| {
                    let cap = self.cfg.server.capacity(s);
                    let b = e.buckets[s.index()];
                    Bucket {
                        rate: b.rate * cap,
                        burst: b.burst * cap,
                    }
                });
                Assignment {
                    id: WorkloadId(i),
                    name: e.workload.name.clone(),
                    server,
                    priority,
                    limits,
                    buckets: e.buckets,
                    client: match (&self.clients, &e.client) {
                        (Some(c), Some((h, vm))) => Some(c.vm(*h, vm)),
                        _ => None,
                    },
                }
            })
            .collect()
    }

    /// The names of workloads that were rejected, in arrival order.
    pub fn rejected(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.state == State::Rejected)
            .map(|e| e.workload.name.clone())
            .collect()
    }

    /// The decisions of this placement for every workload not departed: placed ones admitted
    /// on `server<k>` with token buckets on their flows `<name>-req` (net-in), `<name>-storage`
    /// and `<name>-resp` (net-out), in work units; rejected ones not admitted. The client
    /// NIC's bucket is the analysis' only: the response flow is shaped once, at net-out.
    pub fn decisions(&self) -> Decisions {
        let assignments = self.assignments();
        let mut next = assignments.iter().peekable();
        let mut tenants = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            match e.state {
                State::Departed => {}
                State::Rejected => tenants.push(TenantDecision {
                    name: e.workload.name.clone(),
                    admitted: false,
                    priority: None,
                    server: None,
                    limits: Vec::new(),
                }),
                State::Placed(_) => {
                    let Some(a) = next.next_if(|a| a.id.0 == i) else {
                        continue;
                    };
                    let limits = LpStage::SERVER
                        .iter()
                        .filter(|s| a.limits[s.index()].rate > 0.0)
                        .filter_map(|s| {
                            let stage = s.flow_stage()?;
                            Some(RateLimit {
                                flow: flow_name(&a.name, stage),
                                stage,
                                bucket: a.limits[s.index()],
                            })
                        })
                        .collect();
                    tenants.push(TenantDecision {
                        name: a.name.clone(),
                        admitted: true,
                        priority: Some(a.priority),
                        server: Some(server_name(a.server)),
                        limits,
                    });
                }
            }
        }
        Decisions {
            policy: self.cfg.policy.to_string(),
            tenants,
            excess: tailbound_model::Excess::Wait,
        }
    }
}

/// The host name of server `k` in decisions and replay networks.
pub fn server_name(k: usize) -> String {
    format!("server{k}")
}
