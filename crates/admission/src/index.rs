//! The admitted tenants indexed for decisions, kept as tenants are admitted and depart: their
//! priority levels (the dense rank of their SLOs, or the levels their grants fix) and their
//! flows by queue. With it a decision costs the newcomer's neighbourhood: its level, the levels
//! it shifts and the tenants its traffic reaches are read off the index instead of being
//! recomputed from every admitted tenant.

use crate::{Grant, Policy};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tailbound_calculus::QueueIndex;
use tailbound_model::Network;

/// An SLO latency [s] ordered as `f64::total_cmp` orders it (SLOs are finite and > 0).
#[derive(Debug, Clone, Copy)]
struct SloKey(f64);

impl PartialEq for SloKey {
    fn eq(&self, other: &SloKey) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for SloKey {}

impl PartialOrd for SloKey {
    fn partial_cmp(&self, other: &SloKey) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SloKey {
    fn cmp(&self, other: &SloKey) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The admitted tenants' levels and flows by queue (module docs).
#[derive(Debug, Clone)]
pub(crate) struct AdmittedIndex {
    /// levels are the dense rank of SLOs (SNC-Meister, the martingale SNC, PriorityMeister);
    /// otherwise the grants' (Silo++, QJump++)
    ranked: bool,
    /// the admitted tenants ranked by SLO (no explicit priority), per distinct SLO latency
    by_slo: BTreeMap<SloKey, BTreeSet<usize>>,
    /// the keys of `by_slo`, ascending: a rank is a binary search
    distinct: Vec<SloKey>,
    /// per tenant index, whether it is in `by_slo` (a decision asks for levels per flow it
    /// reads: this answers without searching the sets)
    ranked_in: Vec<bool>,
    /// the admitted tenants whose level is fixed: an explicit priority, or the grant's level
    fixed: HashMap<usize, u32>,
    queues: QueueIndex,
}

impl AdmittedIndex {
    pub fn new(policy: Policy) -> AdmittedIndex {
        AdmittedIndex {
            ranked: matches!(
                policy,
                Policy::SncMeister | Policy::SncMartingale | Policy::PriorityMeister
            ),
            by_slo: BTreeMap::new(),
            distinct: Vec::new(),
            ranked_in: Vec::new(),
            fixed: HashMap::new(),
            queues: QueueIndex::new(),
        }
    }

    /// The admitted flows by queue.
    pub fn queues(&self) -> &QueueIndex {
        &self.queues
    }

    /// Tenant `t`'s SLO key when its level is the rank of its SLO, `None` when it is fixed.
    fn ranked_slo(&self, net: &Network, t: usize) -> Option<SloKey> {
        let spec = &net.tenants[t];
        (self.ranked && spec.priority.is_none()).then_some(SloKey(spec.slo.latency_s))
    }

    /// The level tenant `t`, not ranked by SLO, has when admitted with `grant`.
    fn fixed_level(&self, net: &Network, t: usize, grant: &Grant) -> u32 {
        match (self.ranked, net.tenants[t].priority) {
            (true, Some(p)) => p,
            _ => grant.level,
        }
    }

    /// The number of distinct admitted SLOs below `key`: the dense rank of `key`.
    fn rank(&self, key: SloKey) -> u32 {
        self.distinct.partition_point(|&k| k < key) as u32
    }

    fn is_new(&self, key: SloKey) -> bool {
        !self.by_slo.contains_key(&key)
    }

    /// Records admitted tenant `t` with `grant`.
    pub fn insert(&mut self, net: &Network, t: usize, grant: &Grant) {
        match self.ranked_slo(net, t) {
            Some(key) => {
                if self.is_new(key) {
                    let at = self.distinct.partition_point(|&k| k < key);
                    self.distinct.insert(at, key);
                }
                self.by_slo.entry(key).or_default().insert(t);
                if self.ranked_in.len() <= t {
                    self.ranked_in.resize(t + 1, false);
                }
                self.ranked_in[t] = true;
            }
            None => {
                let level = self.fixed_level(net, t, grant);
                self.fixed.insert(t, level);
            }
        }
        self.queues.insert(net, t);
    }

    /// Forgets admitted tenant `t`.
    pub fn remove(&mut self, net: &Network, t: usize) {
        match self.ranked_slo(net, t) {
            Some(key) => {
                if let Some(r) = self.ranked_in.get_mut(t) {
                    *r = false;
                }
                if let Some(set) = self.by_slo.get_mut(&key) {
                    set.remove(&t);
                    if set.is_empty() {
                        self.by_slo.remove(&key);
                        self.distinct.retain(|&k| k != key);
                    }
                }
            }
            None => {
                self.fixed.remove(&t);
            }
        }
        self.queues.remove(net, t);
    }

    /// Admitted tenant `t`'s level (`None`: not admitted).
    pub fn level(&self, net: &Network, t: usize) -> Option<u32> {
        match self.ranked_slo(net, t) {
            Some(key) => self
                .ranked_in
                .get(t)
                .is_some_and(|&r| r)
                .then(|| self.rank(key)),
            None => self.fixed.get(&t).copied(),
        }
    }

    /// The level of every admitted tenant.
    pub fn levels(&self) -> HashMap<usize, u32> {
        let mut out = self.fixed.clone();
        for (rank, set) in self.by_slo.values().enumerate() {
            out.extend(set.iter().map(|&t| (t, rank as u32)));
        }
        out
    }

    /// Tenant `t`'s level once `newcomer` is admitted with `grant` (`None`: `t` is neither
    /// admitted nor the newcomer).
    pub fn level_with(
        &self,
        net: &Network,
        t: usize,
        newcomer: usize,
        grant: &Grant,
    ) -> Option<u32> {
        let new_key = self.ranked_slo(net, newcomer);
        if t == newcomer {
            return Some(match new_key {
                Some(key) => self.rank(key),
                None => self.fixed_level(net, t, grant),
            });
        }
        let level = self.level(net, t)?;
        let shifted = match (new_key, self.ranked_slo(net, t)) {
            (Some(new), Some(key)) => self.is_new(new) && new < key,
            _ => false,
        };
        Some(level + u32::from(shifted))
    }

    /// The admitted tenants whose level the newcomer's arrival changes, `(tenant, old, new)`
    /// ascending: those ranked above a new distinct SLO move down one level.
    pub fn arrival_changes(&self, net: &Network, newcomer: usize) -> Vec<(usize, u32, u32)> {
        match self.ranked_slo(net, newcomer) {
            Some(new) if self.is_new(new) => self.moved(new, 1),
            _ => Vec::new(),
        }
    }

    /// The admitted tenants whose level `t`'s departure changes, `(tenant, old, new)`
    /// ascending: if `t` was the last with its SLO, those ranked above move up one level.
    pub fn departure_changes(&self, net: &Network, t: usize) -> Vec<(usize, u32, u32)> {
        match self.ranked_slo(net, t) {
            Some(key) if self.by_slo.get(&key).is_some_and(|s| s.len() == 1) => self.moved(key, -1),
            _ => Vec::new(),
        }
    }

    /// Every tenant ranked strictly above `key`, its level moved by `by`.
    fn moved(&self, key: SloKey, by: i64) -> Vec<(usize, u32, u32)> {
        let mut v: Vec<(usize, u32, u32)> = Vec::new();
        let above = self
            .by_slo
            .range((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded));
        for (&k, set) in above {
            let old = self.rank(k);
            let new = (i64::from(old) + by).max(0) as u32;
            v.extend(set.iter().map(|&t| (t, old, new)));
        }
        v.sort_unstable();
        v
    }
}
