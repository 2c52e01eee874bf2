//! Which bounds a change of traffic can move, and whose traffic a bound reads: what lets an
//! admission decision cost its neighbourhood instead of the whole network.
//!
//! Every analysis here ([`crate::Method::SncMeister`], [`crate::Method::SncMartingale`],
//! [`crate::Method::Dnc`]; the hop-by-hop and convolution SNC analyses too) bounds flow f from
//! the traffic of levels ≤ f's (0 highest) at the queues of f's path, and takes that traffic's
//! arrival at each of those queues from its source through its own *upstream* queues, whose
//! traffic it reads the same way; nothing flows back from a queue to the ones before it. In
//! detail:
//! * SNC-Meister (`snc::network`): f's `path_service` reads the flows g of level ≤ ℓ_f crossing
//!   f's path; a g that joins from upstream enters through the bundle of its group, its
//!   arrival being the members' arrivals at the start of their common upstream run U through
//!   `path_service(U, members, max level of the members)` (each member's arrival there through
//!   `path_service(prefix, {g}, ℓ_g)`), so the flows of U of level ≤ that maximum ≤ ℓ_f are read,
//!   and so on upstream; a group starting at a queue may be formed as the queue's total of
//!   sources of level ≤ the group's less the rest, which reads only flows crossing that queue
//!   at such levels;
//! * the martingale analysis: f's one or two queues and, at an upstream queue p of relayed
//!   cross traffic, every flow of p of level ≤ ℓ_f (relayed or not, whatever the relaying
//!   flow's level);
//! * DNC: each cross flow's arrival at hop j + 1 is its arrival at hop j through its leftover
//!   there, at its level.
//!
//! So, with "perturbation (q, L)" meaning that the traffic of level L (or a flow at q with a
//! level ≥ L read with it) at queue q has changed:
//! * **affected** ([`Reach::affected`]): a changed tenant (arriving, departing, or joining a
//!   dependency group) perturbs each queue q of its paths at its level ℓ. A perturbation (q, L)
//!   changes the bound of every flow at q of level ≥ L, and the arrival of *every* flow g at q
//!   at the queues after q on g's path, as read by flows of level ≥ max(L, ℓ_g): a
//!   perturbation (q', max(L, ℓ_g)) at each such q'. The tenants of the changed flows, and the
//!   changed tenants themselves, are the ones whose bounds can move; no other bound moves.
//! * **inputs** ([`Reach::inputs`]): a bound of tenant t reads the flows of level ≤ ℓ_t at the
//!   queues of t's paths, and, for each flow g read at queue q, the flows of level ≤ ℓ_t at the
//!   queues of g's path before q, and so on upstream. Bounding t on the network of the tenants
//!   owning those flows (in the same order) gives t's bound on the whole network, bit for bit:
//!   the analyses see the same flows in the same order, levels in the same order, and the
//!   same shared θ grid.
//!
//! Both rules are closures over a feed-forward network and cost the flows of the queues they
//! reach, not the network.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use tailbound_model::Network;

/// The flows of the tenants present in a network, by queue: what [`Reach`] walks. A
/// long-running caller keeps one as tenants come and go ([`QueueIndex::insert`],
/// [`QueueIndex::remove`]: each costs the tenant's flows and the flows sharing its queues),
/// so that a decision does not index the whole network again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueIndex {
    /// per queue, the present flows crossing it with their position on the path, ascending
    at_queue: Vec<Vec<(usize, usize)>>,
}

impl QueueIndex {
    /// An index of no tenant.
    pub fn new() -> QueueIndex {
        QueueIndex::default()
    }

    /// Adds tenant `tenant` of `net` (its flows at each queue of their paths).
    pub fn insert(&mut self, net: &Network, tenant: usize) {
        for &f in &net.tenants[tenant].flows {
            for (pos, &q) in net.flows[f].path.iter().enumerate() {
                if self.at_queue.len() <= q {
                    self.at_queue.resize_with(q + 1, Vec::new);
                }
                let v = &mut self.at_queue[q];
                if let Err(i) = v.binary_search(&(f, pos)) {
                    v.insert(i, (f, pos));
                }
            }
        }
    }

    /// Removes tenant `tenant` of `net`.
    pub fn remove(&mut self, net: &Network, tenant: usize) {
        for &f in &net.tenants[tenant].flows {
            for (pos, &q) in net.flows[f].path.iter().enumerate() {
                if let Some(v) = self.at_queue.get_mut(q) {
                    if let Ok(i) = v.binary_search(&(f, pos)) {
                        v.remove(i);
                    }
                }
            }
        }
    }

    /// The present flows crossing queue `q` with their position on their path, ascending.
    pub fn at(&self, q: usize) -> &[(usize, usize)] {
        self.at_queue.get(q).map_or(&[], Vec::as_slice)
    }
}

/// Some tenants of a network (the admitted ones and a newcomer, say) with their priority
/// levels, and their flows by queue.
pub struct Reach<'a> {
    net: &'a Network,
    /// level of a present tenant, 0 highest; `None` for the others
    level: Box<dyn Fn(usize) -> Option<u32> + 'a>,
    /// the flows of present tenants by queue
    index: Cow<'a, QueueIndex>,
    /// present tenants' flows the index leaves out: (queue, flow, position on the path)
    extra: Vec<(usize, usize, usize)>,
}

impl std::fmt::Debug for Reach<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reach")
            .field("index", &self.index)
            .field("extra", &self.extra)
            .finish_non_exhaustive()
    }
}

impl<'a> Reach<'a> {
    /// The present tenants of `net` with their levels (`(tenant, level)`, 0 highest).
    pub fn new(net: &'a Network, levels: &[(usize, u32)]) -> Reach<'a> {
        let mut index = QueueIndex::new();
        for &(t, _) in levels {
            index.insert(net, t);
        }
        let level: HashMap<usize, u32> = levels.iter().copied().collect();
        Reach {
            net,
            level: Box::new(move |t| level.get(&t).copied()),
            index: Cow::Owned(index),
            extra: Vec::new(),
        }
    }

    /// The tenants of `index` and the tenants `more` (not in it) present, with their levels
    /// `level` (`None`: not present): what a caller keeping the index incrementally asks
    /// about a newcomer, at the cost of the queues it reaches, not of the network.
    pub fn over(
        net: &'a Network,
        index: &'a QueueIndex,
        more: &[usize],
        level: impl Fn(usize) -> Option<u32> + 'a,
    ) -> Reach<'a> {
        let extra = more
            .iter()
            .flat_map(|&t| &net.tenants[t].flows)
            .flat_map(|&f| {
                net.flows[f]
                    .path
                    .iter()
                    .enumerate()
                    .map(move |(pos, &q)| (q, f, pos))
            })
            .collect();
        Reach {
            net,
            level: Box::new(level),
            index: Cow::Borrowed(index),
            extra,
        }
    }

    /// The present flows crossing queue `q`, with their positions.
    fn at(&self, q: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.index.at(q).iter().copied().chain(
            self.extra
                .iter()
                .filter(move |&&(x, _, _)| x == q)
                .map(|&(_, f, pos)| (f, pos)),
        )
    }

    /// Tenant `t`'s level, `None` when it is not present.
    pub fn level(&self, t: usize) -> Option<u32> {
        (self.level)(t)
    }

    /// The present flows crossing queue `q`, ascending (each once).
    pub fn flows_at(&self, q: usize) -> Vec<usize> {
        let mut v: Vec<usize> = self.at(q).map(|(f, _)| f).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn flow_level(&self, f: usize) -> u32 {
        (self.level)(self.net.flows[f].tenant).unwrap_or(u32::MAX)
    }

    /// The present tenants whose bounds can change when the tenants `changed` (present or
    /// not, each with its level) change their traffic, ascending (module docs). A changed
    /// tenant that is present is among them.
    pub fn affected(&self, changed: &[(usize, u32)]) -> Vec<usize> {
        let mut out = BTreeSet::new();
        // the lowest level perturbed at each queue, and the queues to visit
        let mut seen: HashMap<usize, u32> = HashMap::new();
        let mut work: Vec<(usize, u32)> = Vec::new();
        for &(t, lvl) in changed {
            if (self.level)(t).is_some() {
                out.insert(t);
            }
            for &f in &self.net.tenants[t].flows {
                work.extend(self.net.flows[f].path.iter().map(|&q| (q, lvl)));
            }
        }
        while let Some((q, lvl)) = work.pop() {
            if seen.get(&q).is_some_and(|&l| l <= lvl) {
                continue;
            }
            seen.insert(q, lvl);
            for (g, pos) in self.at(q) {
                let lg = self.flow_level(g);
                if lg >= lvl {
                    out.insert(self.net.flows[g].tenant);
                }
                let later = &self.net.flows[g].path[pos + 1..];
                work.extend(later.iter().map(|&q2| (q2, lvl.max(lg))));
            }
        }
        out.into_iter().collect()
    }

    /// The present tenants whose traffic the bounds of `bounded` read (module docs),
    /// `bounded` included, ascending.
    pub fn inputs(&self, bounded: &[usize]) -> Vec<usize> {
        let mut out: BTreeSet<usize> = bounded.iter().copied().collect();
        // the highest level read at each queue, and the queues to visit
        let mut seen: HashMap<usize, u32> = HashMap::new();
        let mut work: Vec<(usize, u32)> = Vec::new();
        for &t in bounded {
            let lvl = (self.level)(t).unwrap_or(u32::MAX);
            for &f in &self.net.tenants[t].flows {
                work.extend(self.net.flows[f].path.iter().map(|&q| (q, lvl)));
            }
        }
        while let Some((q, lvl)) = work.pop() {
            if seen.get(&q).is_some_and(|&l| l >= lvl) {
                continue;
            }
            seen.insert(q, lvl);
            for (g, pos) in self.at(q) {
                if self.flow_level(g) <= lvl {
                    out.insert(self.net.flows[g].tenant);
                    let earlier = &self.net.flows[g].path[..pos];
                    work.extend(earlier.iter().map(|&q0| (q0, lvl)));
                }
            }
        }
        out.into_iter().collect()
    }
}
