//! The service's decisions in memory: one live admission engine ([`Admission`]) owning the
//! network of hosts and admitted tenants, and the placer for tenants that ask to be placed.
//! No I/O and no clock: callers pass `now`, and every decision is first a [`Proposal`] (what
//! would change) that the caller commits to the database before it [`Engine::apply`]s it, so
//! memory never runs ahead of what is on disk. A what-if is a proposal that is dropped.
//!
//! What lives elsewhere: the policies and bounds (`tailbound-admission`, unchanged), the
//! placement (`tailbound-placement`'s [`Placer`], compactor fast-first-fit), characterizing
//! traces (`tailbound-scenario::characterize`, `tailbound-placement::characterize`).
//!
//! # Placement
//!
//! A tenant without a server is placed by WorkloadCompactor's placer over the hosts with
//! storage that can hold a placement server ([`ServerSpec::default`]: a 1 Gbit/s NIC and one
//! SSD, or more), in registration order; the placer's server k is the k-th such host. The
//! placer sees only the tenants it placed (a tenant given an explicit server is not in its
//! books), so its choice is a proposal: the admission policy then checks the tenant on that
//! server with every admitted tenant, and its answer is the decision.
//!
//! # Cost
//!
//! An arrival appends the newcomer to the live network in place, decides it, and drops it
//! again ([`Admission::extend`], [`Admission::decide`], [`Admission::truncate`]: nothing is
//! copied); applying the proposal appends it for good and records the decision. The decision
//! re-bounds only the newcomer's neighbourhood: the admitted tenants whose bounds its traffic
//! can change, each on the network of the tenants its bound reads ([`Rebound`], the
//! admission crate's docs); [`Engine::with_rebound`] switches to re-bounding every tenant at
//! the newcomer's level or below (the benchmark's baseline). Levels, the tenants an arrival
//! reaches and the queue loads a decision reports are read off the admission's index of the
//! admitted tenants ([`Admission::flows_at`]), not recomputed from all of them. A departure
//! re-bounds nothing. Departed tenants stay in the network, unbounded and unseen, until they outnumber the
//! admitted ones, when the network is rebuilt from the admitted tenants alone.

use crate::api::{
    Decision, DecisionKind, FlowSpec, HostView, NewTenant, PriorityChange, Quantity, QueueLoad,
    TenantView, Traffic,
};
use crate::error::ServiceError;
use crate::store::{Change, PlacementEvent, TenantRow};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;
use tailbound_admission::{Admission, AdmissionError, Arrival, Grant, Policy, Rebound};
use tailbound_curves::mmpp::SizeKind;
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::units::{parse_duration_s, parse_rate_bytes_per_s};
use tailbound_model::{
    FlowModels, Network, NetworkBuilder, RateLimit, Request, Slo, SloError, Stage, TenantHosts,
};
use tailbound_placement::{Placement, PlacementConfig, Placer, ServerSpec, Workload, WorkloadId};

/// The SLO percentile when a request gives none.
pub const DEFAULT_PERCENTILE: f64 = 99.9;
/// The most requests a generator spec may ask for (`rate × duration`).
pub const MAX_GENERATED_REQUESTS: f64 = 200_000.0;
/// The longest tenant or host name.
pub const MAX_NAME_LEN: usize = 64;
/// Token buckets per stage in a placed tenant's r-b curves (the original's 12).
const PLACEMENT_SEGMENTS: usize = 12;

/// A tenant as the service keeps it: what it asked for and how it was characterized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantRecord {
    pub name: String,
    pub client: String,
    /// its server host; empty until placement chose one
    pub server: String,
    /// the server was chosen by placement
    pub placed: bool,
    pub slo: Slo,
    pub storage: bool,
    pub depends_on: Vec<String>,
    /// its flows' models, in stage order (request, storage, response)
    pub flows: Vec<(Stage, FlowModels)>,
    /// the dependency group it joined at arrival
    #[serde(default)]
    pub group: Option<String>,
    /// its bound when admitted [s]
    #[serde(default)]
    pub admitted_bound_s: Option<f64>,
}

/// A tenant ready to be decided: validated and characterized (see [`prepare`]).
#[derive(Debug, Clone)]
pub struct Candidate {
    pub record: TenantRecord,
    /// its r-b curves for the placer, when it asks to be placed
    pub workload: Option<Workload>,
}

#[derive(Debug, Clone)]
struct Live {
    index: usize,
    seq: u64,
    record: TenantRecord,
    grant: Grant,
    token_sha256: String,
    placer_id: Option<WorkloadId>,
}

/// What a decision would change; [`Engine::apply`] makes it so after the caller committed
/// [`Proposal::change`].
#[derive(Debug)]
pub struct Proposal {
    pub decision: Decision,
    /// what to commit
    pub change: Change,
    next: Option<Next>,
}

#[derive(Debug)]
struct Next {
    /// the newcomer's decision, to record once it is appended again
    arrival: Option<Arrival>,
    /// a departure: the tenant's index and the name it keeps in the network
    depart: Option<(usize, String)>,
    placer: Option<Placer>,
    insert: Option<Live>,
    remove: Option<String>,
    host: Option<HostView>,
}

/// The in-memory state.
#[derive(Debug)]
pub struct Engine {
    policy: Policy,
    rebound: Rebound,
    hosts: Vec<HostView>,
    adm: Admission<'static>,
    live: HashMap<String, Live>,
    /// departed tenants still in `net`
    dead: usize,
    placer: Placer,
    seq: u64,
}

fn internal(e: impl std::fmt::Display) -> ServiceError {
    ServiceError::Internal(e.to_string())
}

fn placement_config() -> PlacementConfig {
    PlacementConfig::new(tailbound_placement::Policy::CompactorFff)
}

fn profile() -> &'static StorageProfile {
    static P: OnceLock<StorageProfile> = OnceLock::new();
    P.get_or_init(StorageProfile::intel710_ssd)
}

impl Engine {
    /// An empty service deciding with `policy`.
    pub fn new(policy: Policy) -> Result<Engine, ServiceError> {
        let adm = Admission::owned(Network::default(), policy).map_err(internal)?;
        Ok(Engine {
            policy,
            rebound: Rebound::default(),
            hosts: Vec::new(),
            adm,
            live: HashMap::new(),
            dead: 0,
            placer: Placer::new(placement_config()).map_err(internal)?,
            seq: 0,
        })
    }

    /// The state the database holds: hosts, admitted tenants (restored with the grants they
    /// were admitted with, not decided again), the placer replayed from its log.
    ///
    /// # Errors
    /// A stored row does not parse or no longer fits the network (a damaged database).
    pub fn load(
        policy: Policy,
        hosts: Vec<HostView>,
        tenants: Vec<TenantRow>,
        placements: Vec<PlacementEvent>,
        seq: u64,
    ) -> Result<Engine, ServiceError> {
        let mut e = Engine::new(policy)?;
        e.seq = seq;
        e.hosts = hosts;
        let mut ids = HashMap::new();
        for (i, p) in placements.iter().enumerate() {
            match &p.workload {
                Some(w) => {
                    let w: Workload = serde_json::from_str(w)?;
                    let (id, _) = e.placer.arrive(w).map_err(internal)?;
                    ids.insert(p.tenant.clone(), id);
                }
                None => {
                    let id = ids.remove(&p.tenant).ok_or_else(|| {
                        internal(format!(
                            "placement log entry {i}: {:?} departs but was not placed",
                            p.tenant
                        ))
                    })?;
                    e.placer.depart(id).map_err(internal)?;
                }
            }
        }
        let mut lives = Vec::with_capacity(tenants.len());
        for row in tenants {
            let record: TenantRecord = serde_json::from_str(&row.record)?;
            let grant: Grant = serde_json::from_str(&row.grant)?;
            lives.push(Live {
                index: 0,
                seq: row.seq,
                placer_id: ids.get(&row.name).copied(),
                record,
                grant,
                token_sha256: row.token_sha256,
            });
        }
        e.rebuild(lives)?;
        Ok(e)
    }

    /// Sets the network and admission state to the hosts and `lives`, in admission order.
    fn rebuild(&mut self, mut lives: Vec<Live>) -> Result<(), ServiceError> {
        lives.sort_by_key(|l| l.seq);
        let mut b = hosts_builder(&self.hosts);
        for l in &mut lives {
            l.index = add_tenant(&mut b, &l.record)
                .map_err(|e| internal(format!("stored tenant {:?}: {}", l.record.name, e)))?;
        }
        let net = b.build().map_err(internal)?;
        let mut adm = Admission::owned(net, self.policy)
            .map_err(internal)?
            .with_rebound(self.rebound);
        for l in &lives {
            adm.restore(l.index, l.grant.clone(), l.record.group.clone())
                .map_err(internal)?;
        }
        self.adm = adm;
        self.dead = 0;
        self.live = lives
            .into_iter()
            .map(|l| (l.record.name.clone(), l))
            .collect();
        Ok(())
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Which tenants arrivals re-bound (default [`Rebound::Neighbourhood`]; [`Rebound::Full`]
    /// is the benchmark's baseline).
    pub fn with_rebound(mut self, rebound: Rebound) -> Engine {
        self.rebound = rebound;
        self.adm = self.adm.with_rebound(rebound);
        self
    }

    /// The latest decision's number.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    pub fn hosts(&self) -> &[HostView] {
        &self.hosts
    }

    pub fn tenant_count(&self) -> usize {
        self.live.len()
    }

    /// The token digest of admitted tenant `name`.
    pub fn token_of(&self, name: &str) -> Option<&str> {
        self.live.get(name).map(|l| l.token_sha256.as_str())
    }

    /// The admitted tenant whose token digest is `digest`.
    pub fn tenant_with_token(&self, digest: &str) -> Option<&str> {
        self.live
            .values()
            .find(|l| l.token_sha256 == digest)
            .map(|l| l.record.name.as_str())
    }

    /// Admitted tenants in admission order.
    pub fn tenants(&self) -> Vec<TenantView> {
        let levels = self.levels();
        let mut v: Vec<&Live> = self.live.values().collect();
        v.sort_by_key(|l| l.seq);
        v.into_iter().map(|l| view(l, &levels)).collect()
    }

    pub fn tenant(&self, name: &str) -> Option<TenantView> {
        let levels = self.levels();
        self.live.get(name).map(|l| view(l, &levels))
    }

    fn levels(&self) -> HashMap<usize, u32> {
        self.adm.priorities()
    }

    /// What host `host`'s tc enforcer needs now: every admitted tenant whose client or server
    /// it is, with its current priority level and its limits, in admission order; `None`: no
    /// such host. Read-only (the agents' route, `GET /v1/hosts/{host}/decisions`).
    pub fn host_decisions(
        &self,
        host: &str,
    ) -> Option<(tailbound_model::Decisions, Vec<crate::api::TenantEnds>)> {
        self.hosts.iter().find(|h| h.name == host)?;
        let levels = self.levels();
        let mut v: Vec<&Live> = self
            .live
            .values()
            .filter(|l| l.record.client == host || l.record.server == host)
            .collect();
        v.sort_by_key(|l| l.seq);
        let tenants = v
            .iter()
            .map(|l| tailbound_model::TenantDecision {
                name: l.record.name.clone(),
                admitted: true,
                priority: levels.get(&l.index).copied(),
                server: Some(l.record.server.clone()),
                limits: limits(self.adm.network(), l.index, &l.grant),
            })
            .collect();
        let ends = v
            .iter()
            .map(|l| crate::api::TenantEnds {
                tenant: l.record.name.clone(),
                client: l.record.client.clone(),
                server: l.record.server.clone(),
            })
            .collect();
        let decisions = tailbound_model::Decisions {
            policy: self.policy.to_string(),
            tenants,
            excess: tailbound_model::Excess::default(),
        };
        Some((decisions, ends))
    }

    /// Every admitted tenant's bound with the tenants admitted now (a full re-bound).
    pub fn bounds(&self) -> Result<Vec<crate::api::BoundView>, ServiceError> {
        let bounds = self.adm.bounds().map_err(internal)?;
        Ok(bounds
            .into_iter()
            .map(|b| crate::api::BoundView {
                tenant: b.name,
                slo: b.slo,
                priority: b.priority,
                bound_s: b.total.seconds(),
                meets_slo: b.meets_slo,
            })
            .collect())
    }

    /// Proposes host `h` (validated and new).
    pub fn propose_host(&self, h: crate::api::NewHost) -> Result<Proposal, ServiceError> {
        check_name("name", &h.name)?;
        if self.hosts.iter().any(|x| x.name == h.name) {
            return Err(ServiceError::Conflict {
                what: "host",
                name: h.name,
            });
        }
        let link = match &h.link {
            Quantity::Number(v) => *v,
            Quantity::Text(t) => parse_rate_bytes_per_s(t)
                .map_err(|e| ServiceError::invalid("link", format!("{t:?}: {e}")))?,
        };
        if !(link.is_finite() && link > 0.0) {
            return Err(ServiceError::invalid(
                "link",
                format!("{link} bytes/s is not a rate; expected a finite rate > 0, e.g. \"1Gbit\" or 125e6"),
            ));
        }
        if let Some(s) = h.storage {
            if !(s.is_finite() && s > 0.0) {
                return Err(ServiceError::invalid(
                    "storage",
                    format!("{s} busy-s/s is not a storage rate; expected the number of devices (> 0), e.g. 1"),
                ));
            }
        }
        let host = HostView {
            name: h.name,
            link_bytes_per_s: link,
            storage_rate: h.storage,
        };
        // its queues' names must be new too ([`Engine::apply`] appends them)
        let mut b = NetworkBuilder::new();
        b.host(host.name.clone(), link, host.storage_rate);
        let net = self.adm.network();
        if let Some(q) = b
            .network()
            .queues
            .iter()
            .find(|q| net.queues.iter().any(|o| o.name == q.name))
        {
            return Err(ServiceError::invalid(
                "name",
                format!(
                    "host {:?} would have a queue named {:?}, which another host has; choose another name",
                    host.name, q.name
                ),
            ));
        }
        Ok(Proposal {
            decision: Decision {
                seq: self.seq,
                kind: DecisionKind::WhatIf,
                tenant: String::new(),
                admitted: false,
                policy: self.policy.to_string(),
                server: None,
                placed: false,
                slo: None,
                bound_s: None,
                priority: None,
                reason: None,
                queues: Vec::new(),
                changed: Vec::new(),
                limits: Vec::new(),
                at_ms: 0,
            },
            change: Change {
                insert_host: Some(host.clone()),
                ..Change::default()
            },
            next: Some(Next {
                arrival: None,
                depart: None,
                placer: None,
                insert: None,
                remove: None,
                host: Some(host),
            }),
        })
    }

    /// Decides `c` against the admitted tenants (a what-if when `kind` is
    /// [`DecisionKind::WhatIf`]: the proposal is then only for reading). The newcomer is
    /// appended to the live network for the decision and dropped again before this returns,
    /// so the state is as before whatever the outcome.
    pub fn propose_arrival(
        &mut self,
        c: &Candidate,
        kind: DecisionKind,
        token_sha256: &str,
        now_ms: u64,
    ) -> Result<Proposal, ServiceError> {
        let r = &c.record;
        if self.live.contains_key(&r.name) {
            return Err(ServiceError::Conflict {
                what: "tenant",
                name: r.name.clone(),
            });
        }
        let host = |field: &str, name: &str| {
            self.hosts.iter().position(|h| h.name == name).ok_or_else(|| {
                ServiceError::invalid(
                    field,
                    format!(
                        "unknown host {name:?}; the hosts are [{}] (register hosts with POST /v1/hosts)",
                        self.hosts
                            .iter()
                            .map(|h| h.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
        };
        host("client", &r.client)?;
        for d in &r.depends_on {
            if !self.live.contains_key(d) {
                return Err(ServiceError::invalid(
                    "depends_on",
                    format!("{d:?} is not an admitted tenant"),
                ));
            }
        }
        let seq = if kind == DecisionKind::WhatIf {
            0
        } else {
            self.seq + 1
        };
        let mut record = r.clone();
        let mut placer = None;
        let mut placer_id = None;
        let mut placement_failure = None;
        if record.server.is_empty() {
            let w = c.workload.clone().ok_or_else(|| {
                ServiceError::invalid(
                    "server",
                    "placement needs the tenant's requests: give traffic.trace or traffic.model, or name a server",
                )
            })?;
            let eligible = self.placement_hosts();
            let mut p = self.placer.clone();
            let (id, outcome) = p.arrive(w).map_err(internal)?;
            match outcome {
                Placement::Placed { server } if server < eligible.len() => {
                    record.server = self.hosts[eligible[server]].name.clone();
                    record.placed = true;
                    placer = Some(p);
                    placer_id = Some(id);
                }
                Placement::Placed { .. } | Placement::NoServer => {
                    placement_failure = Some(format!(
                        "placement needs another server, and all {} hosts that can hold one (storage rate >= 1, link >= 1 Gbit/s) are in use",
                        eligible.len()
                    ));
                }
                Placement::FitsNowhere => {
                    placement_failure = Some(
                        "placement: the tenant fits on no server, not even an empty one".into(),
                    );
                }
            }
        } else {
            let s = host("server", &record.server)?;
            if record.storage && self.hosts[s].storage_rate.is_none() {
                return Err(ServiceError::invalid(
                    "storage",
                    format!(
                        "is true but server host {:?} has no storage; register it with storage or send storage: false",
                        record.server
                    ),
                ));
            }
        }
        let decision = Decision {
            seq,
            kind,
            tenant: record.name.clone(),
            admitted: false,
            policy: self.policy.to_string(),
            server: (!record.server.is_empty()).then(|| record.server.clone()),
            placed: record.placed,
            slo: Some(record.slo),
            bound_s: None,
            priority: None,
            reason: placement_failure.clone(),
            queues: Vec::new(),
            changed: Vec::new(),
            limits: Vec::new(),
            at_ms: now_ms,
        };
        if placement_failure.is_some() {
            return Ok(self.rejection(decision));
        }
        let size = self.adm.network().size();
        let ti = self
            .adm
            .extend(|b| add_tenant(b, &record))
            .map_err(|e| match e {
                AdmissionError::Network(_) | AdmissionError::MissingModel { .. } => {
                    ServiceError::invalid("traffic", e.to_string())
                }
                e => internal(e),
            })?;
        let decided =
            self.decide_appended(ti, decision, record, c, token_sha256, placer, placer_id);
        self.adm.truncate(size).map_err(internal)?;
        decided
    }

    /// [`Engine::propose_arrival`]'s decision once the newcomer is tenant `ti` of the network.
    #[allow(clippy::too_many_arguments)]
    fn decide_appended(
        &self,
        ti: usize,
        mut decision: Decision,
        mut record: TenantRecord,
        c: &Candidate,
        token_sha256: &str,
        placer: Option<Placer>,
        placer_id: Option<WorkloadId>,
    ) -> Result<Proposal, ServiceError> {
        let seq = decision.seq;
        let net = self.adm.network();
        let deps: Vec<&str> = record.depends_on.iter().map(String::as_str).collect();
        let arrival = self
            .adm
            .decide(ti, &deps)
            .map_err(|e| ServiceError::invalid("traffic", e.to_string()))?;
        let out = &arrival.outcome;
        decision.queues = queue_loads(&self.adm, ti);
        decision.bound_s = out.bound_s;
        decision.reason = out.reason.clone();
        let Some(grant) = arrival.grant.clone().filter(|_| out.admitted) else {
            return Ok(self.rejection(decision));
        };
        record.group = arrival.group(ti);
        record.admitted_bound_s = out.bound_s;
        decision.admitted = true;
        decision.priority = out.level;
        decision.changed = changes(net, &out.changed);
        decision.limits = limits(net, ti, &grant);
        let mut change = Change {
            decision: Some(decision.clone()),
            ..Change::default()
        };
        let live = Live {
            index: ti,
            seq,
            record: record.clone(),
            grant: grant.clone(),
            token_sha256: token_sha256.to_string(),
            placer_id,
        };
        change.insert_tenant = Some(TenantRow {
            seq,
            name: record.name.clone(),
            record: serde_json::to_string(&record)?,
            grant: serde_json::to_string(&grant)?,
            token_sha256: token_sha256.to_string(),
        });
        if placer.is_some() {
            let w = c
                .workload
                .as_ref()
                .ok_or_else(|| internal("placed without a workload"))?;
            change.placements.push(PlacementEvent {
                tenant: record.name.clone(),
                workload: Some(serde_json::to_string(w)?),
            });
        }
        Ok(Proposal {
            decision,
            change,
            next: Some(Next {
                arrival: Some(arrival),
                depart: None,
                placer,
                insert: Some(live),
                remove: None,
                host: None,
            }),
        })
    }

    /// A rejection: logged as a decision, nothing else changes.
    fn rejection(&self, decision: Decision) -> Proposal {
        let logged = decision.kind != DecisionKind::WhatIf;
        Proposal {
            change: Change {
                decision: logged.then(|| decision.clone()),
                ..Change::default()
            },
            decision,
            next: logged.then_some(Next {
                arrival: None,
                depart: None,
                placer: None,
                insert: None,
                remove: None,
                host: None,
            }),
        }
    }

    /// Proposes tenant `name`'s departure.
    pub fn propose_departure(&self, name: &str, now_ms: u64) -> Result<Proposal, ServiceError> {
        let l = self.live.get(name).ok_or_else(|| ServiceError::NotFound {
            what: "tenant",
            name: name.to_string(),
        })?;
        let changed = self.adm.departure(l.index).map_err(internal)?;
        let mut placer = None;
        let mut change = Change::default();
        if let Some(id) = l.placer_id {
            let mut p = self.placer.clone();
            p.depart(id).map_err(internal)?;
            placer = Some(p);
            change.placements.push(PlacementEvent {
                tenant: name.to_string(),
                workload: None,
            });
        }
        let decision = Decision {
            seq: self.seq + 1,
            kind: DecisionKind::Depart,
            tenant: name.to_string(),
            admitted: false,
            policy: self.policy.to_string(),
            server: Some(l.record.server.clone()),
            placed: l.record.placed,
            slo: Some(l.record.slo),
            bound_s: None,
            priority: None,
            reason: None,
            queues: Vec::new(),
            changed: changes(self.adm.network(), &changed),
            limits: Vec::new(),
            at_ms: now_ms,
        };
        change.decision = Some(decision.clone());
        change.delete_tenant = Some(name.to_string());
        // the departed tenant stays in the network, unbounded and unseen, until the next
        // rebuild; a name no request can use frees its own for a newcomer
        let gone = format!("{name}~departed{}", decision.seq);
        Ok(Proposal {
            decision,
            change,
            next: Some(Next {
                arrival: None,
                depart: Some((l.index, gone)),
                placer,
                insert: None,
                remove: Some(name.to_string()),
                host: None,
            }),
        })
    }

    /// Makes a committed proposal the state.
    ///
    /// # Errors
    /// Rebuilding the network after departures failed (the state is then unchanged).
    pub fn apply(&mut self, p: Proposal) -> Result<(), ServiceError> {
        let Some(next) = p.next else {
            return Ok(());
        };
        if p.change.decision.is_some() {
            self.seq = p.decision.seq;
        }
        if let Some(h) = next.host {
            self.adm
                .extend(|b| Ok(b.host(h.name.clone(), h.link_bytes_per_s, h.storage_rate)))
                .map_err(internal)?;
            self.hosts.push(h);
        }
        if let (Some(arrival), Some(l)) = (next.arrival, &next.insert) {
            let ti = self
                .adm
                .extend(|b| add_tenant(b, &l.record))
                .map_err(internal)?;
            if ti != l.index {
                return Err(internal(format!(
                    "tenant {:?} was decided as tenant {} of the network but appended as {ti}",
                    l.record.name, l.index
                )));
            }
            self.adm.record(arrival).map_err(internal)?;
        }
        if let Some((index, gone)) = next.depart {
            self.adm.depart(index).map_err(internal)?;
            self.adm.rename(index, &gone).map_err(internal)?;
        }
        if let Some(placer) = next.placer {
            self.placer = placer;
        }
        if let Some(l) = next.insert {
            self.live.insert(l.record.name.clone(), l);
        }
        if let Some(name) = next.remove {
            self.live.remove(&name);
            self.dead += 1;
            if self.dead > 64 && self.dead > self.live.len() {
                let lives = self.live.values().cloned().collect();
                self.rebuild(lives)?;
            }
        }
        Ok(())
    }

    /// The hosts the placer's servers map to, in registration order.
    fn placement_hosts(&self) -> Vec<usize> {
        let spec = ServerSpec::default();
        self.hosts
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                h.link_bytes_per_s >= spec.link_bytes_per_s
                    && h.storage_rate.is_some_and(|s| s >= spec.storage_rate)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// The mean load of every host's links with the admitted tenants [1 = the link's rate].
    pub fn link_loads(&self) -> Vec<(String, f64)> {
        let admitted: HashSet<usize> = self.live.values().map(|l| l.index).collect();
        let net = self.adm.network();
        let mut load = vec![0.0; net.queues.len()];
        for f in &net.flows {
            if admitted.contains(&f.tenant) {
                for &q in &f.path {
                    load[q] += mean_rate(&f.mmpp, &f.arrival);
                }
            }
        }
        net.queues
            .iter()
            .zip(load)
            .map(|(q, l)| (q.name.clone(), l / q.rate))
            .collect()
    }
}

fn view(l: &Live, levels: &HashMap<usize, u32>) -> TenantView {
    TenantView {
        name: l.record.name.clone(),
        client: l.record.client.clone(),
        server: l.record.server.clone(),
        placed: l.record.placed,
        slo: l.record.slo,
        storage: l.record.storage,
        group: l.record.group.clone(),
        priority: levels.get(&l.index).copied(),
        admitted_bound_s: l.record.admitted_bound_s,
        seq: l.seq,
    }
}

fn hosts_builder(hosts: &[HostView]) -> NetworkBuilder {
    let mut b = NetworkBuilder::new();
    for h in hosts {
        b.host(h.name.clone(), h.link_bytes_per_s, h.storage_rate);
    }
    b
}

/// Adds `r` (with its server set) and its flows; returns its index.
fn add_tenant(
    b: &mut NetworkBuilder,
    r: &TenantRecord,
) -> Result<usize, tailbound_model::NetworkError> {
    let client = b.network().host_named(&r.client)?;
    let server = b.network().host_named(&r.server)?;
    let t = b.tenant(tailbound_model::NewTenant {
        name: r.name.clone(),
        slo: r.slo,
        group: None,
        priority: None,
        hosts: Some(TenantHosts { client, server }),
    });
    for (stage, models) in &r.flows {
        b.flow(t, *stage, models.clone())?;
    }
    Ok(t)
}

fn mean_rate(
    mmpp: &Option<std::sync::Arc<tailbound_model::Mmpp>>,
    arrival: &Option<tailbound_model::ArrivalCurve>,
) -> f64 {
    match (mmpp, arrival) {
        (Some(m), _) => m.mean_work_per_s(),
        (None, Some(a)) => a.tail_rate(),
        (None, None) => 0.0,
    }
}

/// The queues newcomer `t` (the network's last tenant, not admitted) crosses, with their load
/// once it is admitted and the admitted tenants on them: read off the admitted flows' index
/// by queue, so it costs the tenants sharing its queues, not the cluster.
fn queue_loads(adm: &Admission, t: usize) -> Vec<QueueLoad> {
    let net = adm.network();
    let mut queues: Vec<usize> = Vec::new();
    for &f in &net.tenants[t].flows {
        for &q in &net.flows[f].path {
            if !queues.contains(&q) {
                queues.push(q);
            }
        }
    }
    queues
        .into_iter()
        .map(|q| {
            let mut load = 0.0;
            let mut tenants: Vec<String> = Vec::new();
            // the admitted flows in network order, then the newcomer's (appended last)
            let own = net.tenants[t]
                .flows
                .iter()
                .filter(|&&f| net.flows[f].path.contains(&q));
            for f in adm.flows_at(q).iter().map(|(f, _)| f).chain(own) {
                let flow = &net.flows[*f];
                load += mean_rate(&flow.mmpp, &flow.arrival);
                let name = &net.tenants[flow.tenant].name;
                if flow.tenant != t && !tenants.contains(name) {
                    tenants.push(name.clone());
                }
            }
            QueueLoad {
                queue: net.queues[q].name.clone(),
                rate: net.queues[q].rate,
                load: load / net.queues[q].rate,
                tenants,
            }
        })
        .collect()
}

fn changes(net: &Network, changed: &[(usize, u32, u32)]) -> Vec<PriorityChange> {
    changed
        .iter()
        .map(|&(t, from, to)| PriorityChange {
            tenant: net.tenants[t].name.clone(),
            from,
            to,
        })
        .collect()
}

fn limits(net: &Network, t: usize, g: &Grant) -> Vec<RateLimit> {
    net.tenants[t]
        .flows
        .iter()
        .zip(&g.buckets)
        .flat_map(|(&f, bs)| {
            bs.iter().map(move |&bucket| RateLimit {
                flow: net.flows[f].name.clone(),
                stage: net.flows[f].stage,
                bucket,
            })
        })
        .collect()
}

fn check_name(field: &str, name: &str) -> Result<(), ServiceError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ServiceError::invalid(
            field,
            format!("{name:?} is not a name; expected 1 to {MAX_NAME_LEN} of A-Z a-z 0-9 - _ ."),
        ))
    }
}

/// Validates `req` and characterizes its traffic for `policy` (the slow part of an arrival,
/// done before the state is locked).
///
/// # Errors
/// A 422 naming the field for every bad value.
pub fn prepare(req: NewTenant, policy: Policy) -> Result<Candidate, ServiceError> {
    check_name("name", &req.name)?;
    check_name("client", &req.client)?;
    if let Some(s) = &req.server {
        check_name("server", s)?;
    }
    let slo_s = match &req.slo {
        Quantity::Number(v) => *v,
        Quantity::Text(t) => parse_duration_s(t)
            .map_err(|e| ServiceError::invalid("slo", format!("{t:?} is not a duration: {e}")))?,
    };
    let percentile = req.percentile.unwrap_or(DEFAULT_PERCENTILE);
    let slo = Slo::new(slo_s, percentile).map_err(|e| match e {
        SloError::Latency(_) => ServiceError::invalid(
            "slo",
            format!("{slo_s} s: {e}; expected a finite latency > 0, e.g. \"20ms\""),
        ),
        e => ServiceError::invalid("percentile", format!("{percentile}: {e}")),
    })?;
    let mut depends_on = Vec::new();
    for d in &req.depends_on {
        if d == &req.name {
            return Err(ServiceError::invalid(
                "depends_on",
                format!("{d:?} is the tenant itself"),
            ));
        }
        if !depends_on.contains(d) {
            depends_on.push(d.clone());
        }
    }
    let stages: Vec<Stage> = if req.storage {
        vec![Stage::NetIn, Stage::Storage, Stage::NetOut]
    } else {
        vec![Stage::NetIn, Stage::NetOut]
    };
    let place = req.server.is_none();
    let (flows, workload) = characterize_traffic(&req.name, &req.traffic, &stages, policy, place)?;
    let workload = workload.map(|curves| Workload {
        name: req.name.clone(),
        slo,
        curves,
    });
    Ok(Candidate {
        record: TenantRecord {
            name: req.name,
            client: req.client,
            server: req.server.unwrap_or_default(),
            placed: false,
            slo,
            storage: req.storage,
            depends_on,
            flows,
            group: None,
            admitted_bound_s: None,
        },
        workload,
    })
}

type Characterized = (
    Vec<(Stage, FlowModels)>,
    Option<tailbound_placement::StageCurves>,
);

fn characterize_traffic(
    name: &str,
    t: &Traffic,
    stages: &[Stage],
    policy: Policy,
    place: bool,
) -> Result<Characterized, ServiceError> {
    let given = [t.trace.is_some(), t.model.is_some(), t.flows.is_some()]
        .iter()
        .filter(|&&g| g)
        .count();
    if given != 1 {
        return Err(ServiceError::invalid(
            "traffic",
            format!("{given} of trace, model and flows are given; give exactly one"),
        ));
    }
    if t.seed.is_some() && t.model.is_none() {
        return Err(ServiceError::invalid(
            "traffic.seed",
            "is given without traffic.model; a seed only applies to a generator spec",
        ));
    }
    if let Some(flows) = &t.flows {
        return given_flows(flows, stages, policy).map(|f| (f, None));
    }
    let requests: Vec<Request> = if let Some(text) = &t.trace {
        let trace = tailbound_trace::parse_trace(&format!("{name}.trace"), text.as_bytes())
            .map_err(|e| ServiceError::invalid("traffic.trace", e.to_string()))?;
        trace.requests
    } else if let Some(spec) = &t.model {
        let expected = spec.arrival.max_rate_per_s() * spec.duration_s;
        if expected.is_nan() || expected > MAX_GENERATED_REQUESTS {
            return Err(ServiceError::invalid(
                "traffic.model.duration_s",
                format!(
                    "the spec asks for about {expected:.3e} requests; the service generates at most {MAX_GENERATED_REQUESTS:e}: lower the rate or the duration"
                ),
            ));
        }
        tailbound_trace::generate(spec, t.seed.unwrap_or(0))
            .map_err(|e| ServiceError::invalid("traffic.model", e.to_string()))?
            .requests
    } else {
        Vec::new()
    };
    if requests.is_empty() {
        return Err(ServiceError::invalid(
            "traffic",
            "holds no requests; a tenant is characterized from at least one",
        ));
    }
    let mut flows = Vec::with_capacity(stages.len());
    for &stage in stages {
        let m = tailbound_scenario::characterize(
            &requests,
            stage_work(stage, profile()),
            SizeKind::default(),
            1.0,
            0.0,
        )
        .map_err(|e| ServiceError::invalid("traffic", format!("{stage} work: {e}")))?;
        flows.push((stage, m));
    }
    let curves = if place {
        Some(
            tailbound_placement::characterize(name, &requests, profile(), Some(PLACEMENT_SEGMENTS))
                .map_err(|e| ServiceError::invalid("traffic", e.to_string()))?,
        )
    } else {
        None
    };
    Ok((flows, curves))
}

fn given_flows(
    flows: &[FlowSpec],
    stages: &[Stage],
    policy: Policy,
) -> Result<Vec<(Stage, FlowModels)>, ServiceError> {
    let mut out: Vec<(Stage, FlowModels)> = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        let field = |x: &str| format!("traffic.flows[{i}].{x}");
        if !stages.contains(&f.stage) {
            return Err(ServiceError::invalid(
                field("stage"),
                format!(
                    "{} is not a stage of this tenant; expected {}",
                    f.stage,
                    stages
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if out.iter().any(|(s, _)| *s == f.stage) {
            return Err(ServiceError::invalid(
                field("stage"),
                format!("{} is given twice", f.stage),
            ));
        }
        if let Some(m) = &f.mmpp {
            m.validate()
                .map_err(|e| ServiceError::invalid(field("mmpp"), e.to_string()))?;
        }
        let (missing, model) = if policy.is_snc() {
            (f.mmpp.is_none(), "mmpp")
        } else {
            (f.arrival.is_none(), "arrival")
        };
        if missing {
            return Err(ServiceError::invalid(
                field(model),
                format!("is missing; the {policy} policy needs one for every flow"),
            ));
        }
        out.push((
            f.stage,
            FlowModels {
                mmpp: f.mmpp.clone(),
                arrival: f.arrival.clone(),
            },
        ));
    }
    if let Some(s) = stages.iter().find(|s| !out.iter().any(|(o, _)| o == *s)) {
        return Err(ServiceError::invalid(
            "traffic.flows",
            format!(
                "has no {s} flow; this tenant needs one per stage: {}",
                stages
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    out.sort_by_key(|(s, _)| *s);
    Ok(out)
}
