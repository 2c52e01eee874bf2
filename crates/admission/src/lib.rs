//! Admission control (snc-meister §2, §5.1; `shared/DESIGN.md`, Decisions): tenants arrive one
//! by one; each is admitted only if it and every tenant it can affect still meet their SLOs,
//! and admitted tenants get a priority (and, for the DNC baselines, rate limits) that the
//! enforcers and the simulator apply.
//!
//! One engine, [`Admission`], five [`Policy`]s that differ only in how they bound a candidate
//! set of tenants:
//!
//! | policy | levels | rate limits per flow | check |
//! |---|---|---|---|
//! | [`Policy::SncMeister`] | dense rank of SLO | none | SNC-Meister's SNC analysis (§4.1, §4.2 groups) |
//! | [`Policy::SncMartingale`] | dense rank of SLO | none | the martingale SNC analysis (`calculus::martingale`, groups) |
//! | [`Policy::PriorityMeister`] | dense rank of SLO | the r-b curve, pruned to [`PM_BUCKETS`] buckets, from Silo++'s rate up | DNC with priorities |
//! | [`Policy::SiloPlusPlus`] | one level | effective bandwidth, one-packet burst | DNC queueing + shaper delay |
//! | [`Policy::QjumpPlusPlus`] | [`QJUMP_LEVELS`] fixed levels | the level's rate, one-packet burst | DNC with priorities + shaper delay |
//!
//! The engine works on a [`Network`] holding every tenant that may arrive (characterized:
//! flows with MMPPs for SNC, arrival curves of their first half for DNC), borrowed
//! ([`Admission::new`]) or owned and grown one tenant at a time ([`Admission::owned`],
//! [`Admission::extend`]: a long-running service); [`Admission::arrive`] decides tenant i
//! against the admitted ones. A non-finite bound, an unstable queue or an unstable shaper is a
//! rejection with the reason, never an admission. Rejected tenants are not given guarantees
//! (best effort; the replay leaves them out).
//!
//! # What a decision re-bounds
//!
//! Tenants at a higher priority than the newcomer cannot be affected (lower levels are
//! invisible to them), and of the others only those the newcomer's traffic reaches can be
//! ([`Rebound::Neighbourhood`], the default): the tenants [`tailbound_calculus::Reach`] finds
//! affected by the newcomer (and by the tenants whose dependency group it changes): those with
//! a flow at a queue the newcomer crosses, at its level or below, and those downstream of
//! such a queue whose cross traffic's arrival the newcomer changes (SNC-Meister's multi-hop
//! analysis reads the output of cross flows' upstream queues). They are bounded on the network
//! of the tenants their bounds read ([`tailbound_calculus::Reach::inputs`]), which gives the
//! same bounds as the whole network. Every other admitted tenant keeps its bound, which was
//! within its SLO. [`Rebound::Full`] bounds the newcomer and every admitted tenant at its level
//! or below on the whole network: the reference, and the benchmark's baseline. The admitted
//! tenants' levels and their flows by queue are an index kept as tenants are recorded and
//! depart, so that finding the neighbourhood, the newcomer's level and the levels it shifts
//! costs the neighbourhood, not every admitted tenant. A departure only
//! removes traffic, so it re-bounds nothing; the traffic models of admitted tenants are kept in
//! the network and never characterized again.
//!
//! Under the neighbourhood re-bounding an admitted tenant is first checked at the θs its SNC
//! bound was last minimised at, each flow within the share of the SLO its bound had there
//! (kept per tenant from the decisions that admitted tenants):
//! an SNC bound evaluated at any θ is a valid bound, so a tenant within its SLO there is
//! within it at its minimum as well, and only the flows of tenants that miss it there are
//! minimised again, those that do not fit at their θs first ([`tailbound_calculus::bound_hinted`]). The decisions are those of minimising
//! everyone; the newcomer's bound is always minimised. What this saves is the θ search of
//! every affected tenant that still meets its SLO, most of a decision's work. A rejection
//! needs one missed SLO, not all of them: a decision bounds the newcomer first, then the
//! others by tenant index, and stops at the first miss, which is the reason given (both
//! re-boundings, every policy).
//!
//! This crate does no I/O and reads no clock; time per decision is measured by callers.

mod index;
mod names;
mod policy;

pub use policy::{PM_BUCKETS, QJUMP_LEVELS};

use index::AdmittedIndex;
use names::Names;
use policy::{Found, Thetas};

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use tailbound_calculus::snc::MmppBound;
use tailbound_calculus::{packetization_allowance_s, Bound, CalculusError, TenantBound};
use tailbound_model::{
    flow_name, Bucket, Decisions, Excess, Network, NetworkBuilder, NetworkError, NetworkSize,
    RateLimit, TenantDecision, ETHERNET_MTU_BYTES,
};

/// Which tenants an arrival re-bounds (crate docs, "What a decision re-bounds").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rebound {
    /// the newcomer and the admitted tenants its traffic can affect, each on the network of
    /// the tenants its bound reads
    #[default]
    Neighbourhood,
    /// the newcomer and every admitted tenant at its level or below, on the whole network
    Full,
}

/// The admission policies of snc-meister §5.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Policy {
    /// SNC with SNC-Meister's network analysis; priorities by SLO; no rate limits
    #[serde(rename = "snc-meister")]
    SncMeister,
    /// DNC with priorities by SLO; rate limits from the r-b curve
    #[serde(rename = "priority-meister")]
    PriorityMeister,
    /// Silo with effective-bandwidth rate limits and end-host queueing (one level)
    #[serde(rename = "silo++")]
    SiloPlusPlus,
    /// QJump with fixed levels, each tenant at the first level that meets its SLO
    #[serde(rename = "qjump++")]
    QjumpPlusPlus,
    /// SNC-Meister's admission with the martingale bounds of `calculus::martingale`
    #[serde(rename = "snc-martingale")]
    SncMartingale,
}

tailbound_model::names!(Policy, "policy", {
    SncMeister => "snc-meister",
    PriorityMeister => "priority-meister",
    SiloPlusPlus => "silo++",
    QjumpPlusPlus => "qjump++",
    SncMartingale => "snc-martingale",
});

impl Policy {
    /// Whether the policy bounds with stochastic network calculus (MMPPs, no rate limits).
    pub fn is_snc(self) -> bool {
        matches!(self, Policy::SncMeister | Policy::SncMartingale)
    }
}

/// Why a decision could not be made (as opposed to a rejection, which is an outcome).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    #[error("invalid network: {0}")]
    Network(#[from] NetworkError),
    #[error(transparent)]
    Calculus(#[from] CalculusError),
    #[error("unknown tenant index {index}; the network has {len} tenants")]
    UnknownTenant { index: usize, len: usize },
    #[error("tenant {0:?} has already arrived")]
    Arrived(String),
    #[error("tenant {0:?} is not admitted, so it cannot depart")]
    NotAdmitted(String),
    #[error("tenant {0:?} has arrived, so the network cannot drop it")]
    Retract(String),
    #[error(
        "tenant {tenant:?} depends on {name:?}, which is not a tenant; known tenants: {known}"
    )]
    UnknownDependency {
        tenant: String,
        name: String,
        known: String,
    },
    #[error("the traffic to bound differs from the admitted network: {0} (expected the same queues, flows and tenants, with other models)")]
    TrafficMismatch(String),
    #[error("flow {flow:?} has no {model}; the {policy} policy needs one for every flow (characterize the tenants from traces)")]
    MissingModel {
        flow: String,
        model: &'static str,
        policy: Policy,
    },
}

/// What an admitted tenant runs with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    /// priority level, 0 highest (for SLO-ranked policies the dense rank at admission; see
    /// [`Admission::priorities`] for the current one)
    pub level: u32,
    /// token buckets per flow of the tenant, in its flow order (empty: unshaped)
    pub buckets: Vec<Vec<Bucket>>,
    /// the tenant's shaper delay bound, included in its bound [s]
    pub shaper_delay_s: f64,
}

/// The result of one arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub tenant: usize,
    pub admitted: bool,
    /// the newcomer's bound under the evaluated set [s] (the last one tried for QJump++),
    /// `None` when unbounded
    pub bound_s: Option<f64>,
    /// why it was rejected: the first tenant whose SLO would be missed (the newcomer, else the
    /// admitted tenant of lowest index), and by how much
    pub reason: Option<String>,
    /// its level if admitted
    pub level: Option<u32>,
    /// existing tenants whose priority level changed: (tenant index, old, new)
    pub changed: Vec<(usize, u32, u32)>,
}

/// Admission state over a network of candidate tenants.
#[derive(Debug, Clone)]
pub struct Admission<'n> {
    net: Cow<'n, Network>,
    policy: Policy,
    rebound: Rebound,
    /// admitted tenants and what they run with
    admitted: HashMap<usize, Grant>,
    /// tenants that arrived (admitted or not)
    arrived: BTreeSet<usize>,
    /// dependency groups added at arrival, per tenant
    groups: HashMap<usize, String>,
    /// what the emitted rate limits do with excess requests
    excess: Excess,
    /// the packet size links carry work in (`None`: fluid)
    mtu_bytes: Option<u64>,
    /// what packets add to each tenant's fluid bound [s] (empty: nothing)
    packets_s: Vec<f64>,
    /// the admitted tenants' levels and flows by queue
    index: AdmittedIndex,
    /// where each admitted tenant's bound was last minimised
    thetas: Thetas,
    /// the names in the network, for checking what is appended
    names: Names,
    /// per flow, its MMPP bound built once (SNC-Meister; empty otherwise)
    sources: Sources,
}

/// A decided arrival not yet recorded ([`Admission::decide`], [`Admission::record`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Arrival {
    pub outcome: Outcome,
    /// the newcomer's grant when admitted
    pub grant: Option<Grant>,
    /// dependency groups the arrival sets: (tenant, group), the newcomer's and those of the
    /// tenants it depends on that had none
    groups: Vec<(usize, String)>,
    /// where the bounds the decision minimised were found, per tenant (kept when admitted)
    thetas: Vec<(usize, Found)>,
}

impl Arrival {
    /// The dependency group the arrival gives `tenant`, if it sets one.
    pub fn group(&self, tenant: usize) -> Option<String> {
        group_named(&self.groups, tenant).map(str::to_string)
    }
}

/// An [`Admission`]'s state without its network ([`Admission::into_state`]).
#[derive(Debug, Clone)]
pub struct AdmissionState {
    policy: Policy,
    rebound: Rebound,
    admitted: HashMap<usize, Grant>,
    arrived: BTreeSet<usize>,
    groups: HashMap<usize, String>,
    excess: Excess,
    mtu_bytes: Option<u64>,
    packets_s: Vec<f64>,
    thetas: Thetas,
}

impl<'n> Admission<'n> {
    /// An empty system over `net`'s tenants. Every bound includes what Ethernet-sized packets
    /// add to the calculus' fluid bound ([`tailbound_calculus::packetization_allowance_s`]);
    /// [`Admission::with_mtu`] changes the packet size or turns it off.
    pub fn new(net: &'n Network, policy: Policy) -> Result<Admission<'n>, AdmissionError> {
        Admission::over(Cow::Borrowed(net), policy)
    }

    /// [`Admission::new`] owning its network, which [`Admission::extend`] can then grow in
    /// place (a long-running service).
    pub fn owned(net: Network, policy: Policy) -> Result<Admission<'static>, AdmissionError> {
        Admission::over(Cow::Owned(net), policy)
    }

    fn over(net: Cow<'n, Network>, policy: Policy) -> Result<Admission<'n>, AdmissionError> {
        net.validate()?;
        policy::check_models(&net, policy)?;
        let packets_s = allowances(&net, Some(ETHERNET_MTU_BYTES));
        let names = Names::of(&net);
        let sources = mmpp_bounds(&net, policy, 0);
        Ok(Admission {
            net,
            policy,
            rebound: Rebound::default(),
            admitted: HashMap::new(),
            arrived: BTreeSet::new(),
            groups: HashMap::new(),
            excess: Excess::Wait,
            mtu_bytes: Some(ETHERNET_MTU_BYTES),
            packets_s,
            index: AdmittedIndex::new(policy),
            thetas: Thetas::new(),
            names,
            sources,
        })
    }

    /// Which tenants arrivals re-bound (default [`Rebound::Neighbourhood`]).
    pub fn with_rebound(mut self, rebound: Rebound) -> Admission<'n> {
        self.rebound = rebound;
        self
    }

    /// Links carry work in packets of `mtu_bytes` (`None`: fluid, no packetization allowance).
    /// A packetized link can exceed a fluid bound by one store-and-forward packet and one
    /// lower-level packet ahead per link crossed.
    pub fn with_mtu(mut self, mtu_bytes: Option<u64>) -> Admission<'n> {
        self.packets_s = allowances(&self.net, mtu_bytes);
        self.mtu_bytes = mtu_bytes;
        self
    }

    /// Emits decisions whose rate limits treat excess requests as `excess` says (default
    /// [`Excess::Wait`], a strict limiter). The bounds hold either way: they rest on the
    /// conforming traffic, and best-effort excess runs below every tenant's level.
    pub fn with_excess(mut self, excess: Excess) -> Admission<'n> {
        self.excess = excess;
        self
    }

    pub fn policy(&self) -> Policy {
        self.policy
    }

    pub fn network(&self) -> &Network {
        &self.net
    }

    /// Grows the network in place: `grow` appends hosts, queues, tenants and flows through a
    /// builder over it (indices of what is there keep their meaning); what it appended is
    /// validated (not the whole network) and must carry the models the policy needs. Returns
    /// what `grow` returns. On an error the network is as before.
    pub fn extend<R>(
        &mut self,
        grow: impl FnOnce(&mut NetworkBuilder) -> Result<R, NetworkError>,
    ) -> Result<R, AdmissionError> {
        let net = self.net.to_mut();
        let size = net.size();
        let mut b = NetworkBuilder::from_network(std::mem::take(net));
        let grown = grow(&mut b);
        *net = b.into_network();
        let names = &self.names;
        let checked = grown.map_err(AdmissionError::from).and_then(|r| {
            net.validate_from_with(size, &|what, name| names.taken(what, name))?;
            policy::check_models_from(net, self.policy, size.flows)?;
            Ok(r)
        });
        match checked {
            Ok(r) => {
                self.names.add_from(&self.net, size);
                let more = mmpp_bounds(&self.net, self.policy, size.flows);
                self.sources.extend(more);
                if let Some(mtu) = self.mtu_bytes {
                    let net = &self.net;
                    self.packets_s.extend(
                        (size.tenants..net.tenants.len())
                            .map(|t| packetization_allowance_s(net, t, mtu)),
                    );
                }
                Ok(r)
            }
            Err(e) => {
                // nothing appended has arrived, and its names were never recorded
                self.cut(size);
                Err(e)
            }
        }
    }

    /// Drops what was appended to the network after it had size `size` (a proposal not
    /// taken); an error, changing nothing, if a tenant to drop has arrived.
    pub fn truncate(&mut self, size: NetworkSize) -> Result<(), AdmissionError> {
        if let Some(&t) = self.arrived.range(size.tenants..).next() {
            return Err(AdmissionError::Retract(self.net.tenants[t].name.clone()));
        }
        self.names.remove_from(&self.net, size);
        self.cut(size);
        Ok(())
    }

    /// Drops the network's items past `size` (not their names).
    fn cut(&mut self, size: NetworkSize) {
        let net = self.net.to_mut();
        net.hosts.truncate(size.hosts);
        net.queues.truncate(size.queues);
        net.flows.truncate(size.flows);
        net.tenants.truncate(size.tenants);
        self.packets_s.truncate(size.tenants);
        self.sources.truncate(size.flows);
    }

    /// Renames tenant `tenant` and its flows (`<name>-req`, ...): a departed tenant's name
    /// freed for a newcomer while its entry stays in the network.
    pub fn rename(&mut self, tenant: usize, name: &str) -> Result<(), AdmissionError> {
        let len = self.net.tenants.len();
        if tenant >= len {
            return Err(AdmissionError::UnknownTenant { index: tenant, len });
        }
        self.names.remove_tenant(&self.net, tenant);
        let net = self.net.to_mut();
        for i in 0..net.tenants[tenant].flows.len() {
            let f = net.tenants[tenant].flows[i];
            net.flows[f].name = flow_name(name, net.flows[f].stage);
        }
        net.tenants[tenant].name = name.to_string();
        self.names.add_tenant(&self.net, tenant);
        Ok(())
    }

    /// Admitted tenants, ascending.
    pub fn admitted(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.admitted.keys().copied().collect();
        v.sort_unstable();
        v
    }

    pub fn grant(&self, tenant: usize) -> Option<&Grant> {
        self.admitted.get(&tenant)
    }

    /// Current priority level of every admitted tenant.
    pub fn priorities(&self) -> HashMap<usize, u32> {
        self.index.levels()
    }

    /// Admitted tenant `tenant`'s current priority level (`None`: not admitted).
    pub fn priority(&self, tenant: usize) -> Option<u32> {
        self.index.level(&self.net, tenant)
    }

    /// The admitted tenants' flows crossing queue `queue`, with their position on their path,
    /// ascending: an index kept as tenants are admitted and depart.
    pub fn flows_at(&self, queue: usize) -> &[(usize, usize)] {
        self.index.queues().at(queue)
    }

    /// The bound of every admitted tenant with the tenants admitted now, in tenant order; each
    /// includes the tenant's shaper delay, and indices (tenant, flows) are the network's. The
    /// bound a tenant was admitted with may have grown since, up to its SLO: admissions keep
    /// every bound within its SLO.
    pub fn bounds(&self) -> Result<Vec<TenantBound>, AdmissionError> {
        let set: Vec<(usize, &Grant)> = self.admitted.iter().map(|(&t, g)| (t, g)).collect();
        policy::bound_set(
            &self.net,
            self.policy,
            &set,
            &self.groups,
            &self.packets_s,
            policy::Which::All,
        )
    }

    /// The bound of every admitted tenant, as [`Admission::bounds`], but for the traffic
    /// `traffic` describes: the engine's network with other MMPPs and arrival curves (e.g.
    /// fitted on the half a replay sends). Priorities and rate limits stay as decided; each
    /// shaper delay is that of `traffic` through the same buckets, and a tenant whose buckets
    /// cannot carry its traffic (a mean above a limit) is unbounded. This is the verify step's
    /// bound on the traffic actually sent: a replay above it is a failure of a bound or of the
    /// simulator, while a replay only above [`Admission::bounds`] may be the characterization's.
    pub fn bounds_on(&self, traffic: &Network) -> Result<Vec<TenantBound>, AdmissionError> {
        same_shape(&self.net, traffic)?;
        policy::check_models(traffic, self.policy)?;
        let mut unbounded = HashMap::new();
        let grants: Vec<(usize, Grant)> = self
            .admitted
            .iter()
            .map(
                |(&t, g)| match policy::grant(traffic, t, g.level, g.buckets.clone()) {
                    Ok(g) => (t, g),
                    Err(why) => {
                        unbounded.insert(t, why);
                        (t, g.clone())
                    }
                },
            )
            .collect();
        let set: Vec<(usize, &Grant)> = grants.iter().map(|(t, g)| (*t, g)).collect();
        let mut bounds = policy::bound_set(
            traffic,
            self.policy,
            &set,
            &self.groups,
            &self.packets_s,
            policy::Which::All,
        )?;
        for b in &mut bounds {
            if let Some(why) = unbounded.remove(&b.tenant) {
                b.total = Bound::Unbounded(format!("its rate limits cannot carry it: {why}"));
                b.meets_slo = false;
            }
        }
        Ok(bounds)
    }

    /// Decides tenant `tenant` (an index into the network's tenants).
    pub fn arrive(&mut self, tenant: usize) -> Result<Outcome, AdmissionError> {
        self.arrive_with_dependencies(tenant, &[])
    }

    /// Decides tenant `tenant`, which may burst together with the named tenants (snc-meister
    /// §4.2): it joins their dependency group. An unknown name is an error for this arrival
    /// only; the state is unchanged and later arrivals proceed.
    pub fn arrive_with_dependencies(
        &mut self,
        tenant: usize,
        depends_on: &[&str],
    ) -> Result<Outcome, AdmissionError> {
        let arrival = self.decide(tenant, depends_on)?;
        let outcome = arrival.outcome.clone();
        self.record(arrival)?;
        Ok(outcome)
    }

    /// Decides tenant `tenant` as [`Admission::arrive_with_dependencies`] does without
    /// recording it: [`Admission::record`] makes it so (a service commits the decision to its
    /// database in between; a what-if drops it).
    pub fn decide(&self, tenant: usize, depends_on: &[&str]) -> Result<Arrival, AdmissionError> {
        let len = self.net.tenants.len();
        if tenant >= len {
            return Err(AdmissionError::UnknownTenant { index: tenant, len });
        }
        let name = &self.net.tenants[tenant].name;
        if self.arrived.contains(&tenant) {
            return Err(AdmissionError::Arrived(name.clone()));
        }
        let mut set_groups: Vec<(usize, String)> = Vec::new();
        let mut group = None;
        for dep in depends_on {
            let Some(other) = self.net.tenants.iter().position(|t| t.name == *dep) else {
                return Err(AdmissionError::UnknownDependency {
                    tenant: name.clone(),
                    name: dep.to_string(),
                    known: self
                        .net
                        .tenants
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            let g = set_groups
                .iter()
                .find(|(t, _)| *t == other)
                .map(|(_, g)| g.clone())
                .or_else(|| self.group_of(other))
                .unwrap_or_else(|| format!("depends-{}", self.net.tenants[other].name));
            if !self.groups.contains_key(&other) && !set_groups.iter().any(|(t, _)| *t == other) {
                set_groups.push((other, g.clone()));
            }
            group = Some(g);
        }
        if let Some(g) = group {
            set_groups.retain(|(t, _)| *t != tenant);
            set_groups.push((tenant, g));
        }
        // the tenants whose traffic changes: the newcomer, and those whose group it sets
        let changed: Vec<usize> = set_groups
            .iter()
            .map(|(t, _)| *t)
            .filter(|&t| t != tenant && self.group_of(t).as_deref() != group_named(&set_groups, t))
            .chain([tenant])
            .collect();
        let groups: Cow<HashMap<usize, String>> = if set_groups.is_empty() {
            Cow::Borrowed(&self.groups)
        } else {
            let mut g = self.groups.clone();
            g.extend(set_groups.iter().cloned());
            Cow::Owned(g)
        };
        let verdict = policy::decide(
            &self.net,
            self.policy,
            &self.admitted,
            &groups,
            &self.packets_s,
            &self.thetas,
            tenant,
            match self.rebound {
                Rebound::Neighbourhood => policy::Scope::Neighbourhood {
                    changed: &changed,
                    index: &self.index,
                    sources: &self.sources,
                },
                Rebound::Full => policy::Scope::Full,
            },
        )?;
        let mut outcome = Outcome {
            tenant,
            admitted: verdict.grant.is_some(),
            bound_s: verdict.bound_s,
            reason: verdict.reason,
            level: verdict.grant.as_ref().map(|g| g.level),
            changed: Vec::new(),
        };
        if let Some(grant) = &verdict.grant {
            outcome.level = self.index.level_with(&self.net, tenant, tenant, grant);
            outcome.changed = self.index.arrival_changes(&self.net, tenant);
        }
        Ok(Arrival {
            outcome,
            grant: verdict.grant,
            groups: set_groups,
            thetas: verdict.thetas,
        })
    }

    /// Records a decided arrival ([`Admission::decide`]) made on this state; an error if its
    /// tenant has arrived since.
    pub fn record(&mut self, arrival: Arrival) -> Result<(), AdmissionError> {
        let tenant = arrival.outcome.tenant;
        self.mark_arrived(tenant)?;
        self.groups.extend(arrival.groups);
        if let Some(grant) = arrival.grant {
            self.index.insert(&self.net, tenant, &grant);
            self.admitted.insert(tenant, grant);
            self.thetas.extend(arrival.thetas);
        }
        Ok(())
    }

    /// Removes an admitted tenant; returns the tenants whose priority level changed.
    pub fn depart(&mut self, tenant: usize) -> Result<Vec<(usize, u32, u32)>, AdmissionError> {
        let changed = self.departure(tenant)?;
        self.index.remove(&self.net, tenant);
        self.admitted.remove(&tenant);
        self.thetas.remove(&tenant);
        Ok(changed)
    }

    /// What [`Admission::depart`] would change, without departing: the tenants whose priority
    /// level would change. A departure removes traffic, so no bound grows and none is computed.
    pub fn departure(&self, tenant: usize) -> Result<Vec<(usize, u32, u32)>, AdmissionError> {
        if !self.admitted.contains_key(&tenant) {
            let name = self
                .net
                .tenants
                .get(tenant)
                .map_or_else(|| format!("#{tenant}"), |t| t.name.clone());
            return Err(AdmissionError::NotAdmitted(name));
        }
        Ok(self.index.departure_changes(&self.net, tenant))
    }

    /// Detaches the state from the network, so a long-running caller (the controller service)
    /// can grow its network between arrivals and [`Admission::resume`] on the grown one.
    pub fn into_state(self) -> AdmissionState {
        AdmissionState {
            policy: self.policy,
            rebound: self.rebound,
            admitted: self.admitted,
            arrived: self.arrived,
            groups: self.groups,
            excess: self.excess,
            mtu_bytes: self.mtu_bytes,
            packets_s: self.packets_s,
            thetas: self.thetas,
        }
    }

    /// Marks `tenant` arrived; an error if it is not in the network or has arrived already.
    fn mark_arrived(&mut self, tenant: usize) -> Result<(), AdmissionError> {
        let len = self.net.tenants.len();
        if tenant >= len {
            return Err(AdmissionError::UnknownTenant { index: tenant, len });
        }
        if !self.arrived.insert(tenant) {
            return Err(AdmissionError::Arrived(
                self.net.tenants[tenant].name.clone(),
            ));
        }
        Ok(())
    }

    /// Admits `tenant` with `grant` without a check: a decision made and recorded before (a
    /// service restoring its state after a restart), in `group` if it joined one at arrival.
    pub fn restore(
        &mut self,
        tenant: usize,
        grant: Grant,
        group: Option<String>,
    ) -> Result<(), AdmissionError> {
        self.mark_arrived(tenant)?;
        if let Some(g) = group {
            self.groups.insert(tenant, g);
        }
        self.index.insert(&self.net, tenant, &grant);
        self.admitted.insert(tenant, grant);
        Ok(())
    }

    /// The dependency group `tenant` bursts with (joined at arrival, or its own), if any.
    pub fn group(&self, tenant: usize) -> Option<String> {
        self.group_of(tenant)
    }

    /// Goes on from `state` over `net`, which must extend the network the state was taken
    /// from: the same queues first (hosts may be added after them) and the same tenants and
    /// flows first, new ones appended, so that every index keeps its meaning. New tenants get
    /// their packetization allowance at the state's MTU.
    pub fn resume(
        net: &'n Network,
        state: AdmissionState,
    ) -> Result<Admission<'n>, AdmissionError> {
        net.validate()?;
        policy::check_models(net, state.policy)?;
        let len = net.tenants.len();
        if let Some(&t) = state.arrived.iter().next_back().filter(|&&t| t >= len) {
            return Err(AdmissionError::UnknownTenant { index: t, len });
        }
        let mut packets_s = state.packets_s;
        if let Some(mtu) = state.mtu_bytes {
            let known = packets_s.len().min(len);
            packets_s.truncate(known);
            packets_s.extend((known..len).map(|t| packetization_allowance_s(net, t, mtu)));
        }
        let mut index = AdmittedIndex::new(state.policy);
        for (&t, g) in &state.admitted {
            index.insert(net, t, g);
        }
        Ok(Admission {
            net: Cow::Borrowed(net),
            policy: state.policy,
            rebound: state.rebound,
            admitted: state.admitted,
            arrived: state.arrived,
            groups: state.groups,
            excess: state.excess,
            mtu_bytes: state.mtu_bytes,
            packets_s,
            index,
            thetas: state.thetas,
            names: Names::of(net),
            sources: mmpp_bounds(net, state.policy, 0),
        })
    }

    fn group_of(&self, tenant: usize) -> Option<String> {
        self.groups
            .get(&tenant)
            .cloned()
            .or_else(|| self.net.tenants[tenant].group.clone())
    }

    /// The decisions for every tenant that arrived so far, in network order: admitted or not,
    /// current priority, rate limits per flow (flow names of the network).
    pub fn decisions(&self) -> Decisions {
        let levels = self.priorities();
        Decisions {
            policy: self.policy.as_str().to_string(),
            excess: self.excess,
            tenants: self
                .arrived
                .iter()
                .map(|&t| {
                    let spec = &self.net.tenants[t];
                    let grant = self.admitted.get(&t);
                    TenantDecision {
                        name: spec.name.clone(),
                        admitted: grant.is_some(),
                        priority: levels.get(&t).copied(),
                        server: None,
                        limits: grant
                            .map(|g| {
                                spec.flows
                                    .iter()
                                    .zip(&g.buckets)
                                    .flat_map(|(&f, bs)| {
                                        bs.iter().map(move |&bucket| RateLimit {
                                            flow: self.net.flows[f].name.clone(),
                                            stage: self.net.flows[f].stage,
                                            bucket,
                                        })
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    }
                })
                .collect(),
        }
    }
}

/// Per flow, its MMPP bound, built once.
type Sources = Vec<Option<Arc<MmppBound>>>;

/// The MMPP bounds of `net`'s flows from index `from` on, for the policies whose decisions
/// read them over a neighbourhood (SNC-Meister; none otherwise). A flow whose MMPP is
/// missing or invalid has none: the analysis that reads it reports why.
fn mmpp_bounds(net: &Network, policy: Policy, from: usize) -> Sources {
    if policy != Policy::SncMeister {
        return Vec::new();
    }
    net.flows
        .iter()
        .skip(from)
        .map(|f| {
            f.mmpp
                .as_ref()
                .and_then(|m| MmppBound::new(m).ok())
                .map(Arc::new)
        })
        .collect()
}

/// Each tenant's packetization allowance [s] (empty when fluid).
fn allowances(net: &Network, mtu_bytes: Option<u64>) -> Vec<f64> {
    match mtu_bytes {
        None => Vec::new(),
        Some(mtu) => (0..net.tenants.len())
            .map(|t| packetization_allowance_s(net, t, mtu))
            .collect(),
    }
}

/// `traffic` has `net`'s queues (and rates), flows (tenant and path) and tenants (flows and
/// SLO); only the traffic models may differ.
fn same_shape(net: &Network, traffic: &Network) -> Result<(), AdmissionError> {
    let mismatch = |what: String| Err(AdmissionError::TrafficMismatch(what));
    if net.queues != traffic.queues {
        return mismatch("its queues or their rates".into());
    }
    if net.flows.len() != traffic.flows.len() || net.tenants.len() != traffic.tenants.len() {
        return mismatch(format!(
            "{} flows and {} tenants instead of {} and {}",
            traffic.flows.len(),
            traffic.tenants.len(),
            net.flows.len(),
            net.tenants.len()
        ));
    }
    for (a, b) in net.flows.iter().zip(&traffic.flows) {
        if (&a.name, a.tenant, &a.path) != (&b.name, b.tenant, &b.path) {
            return mismatch(format!(
                "flow {:?} is {:?} there, or runs elsewhere",
                a.name, b.name
            ));
        }
    }
    for (a, b) in net.tenants.iter().zip(&traffic.tenants) {
        if (&a.name, &a.flows, &a.slo, a.priority, &a.group)
            != (&b.name, &b.flows, &b.slo, b.priority, &b.group)
        {
            return mismatch(format!(
                "tenant {:?} is {:?} there, or has other flows, another SLO, priority or group",
                a.name, b.name
            ));
        }
    }
    Ok(())
}

/// The group `set` gives tenant `t`, if any.
fn group_named(set: &[(usize, String)], t: usize) -> Option<&str> {
    set.iter().find(|(u, _)| *u == t).map(|(_, g)| g.as_str())
}
