//! The three SNC network analyses: which operators, in which order, bound a flow's latency.
//!
//! Common ground: flow g is cross traffic for flow f when g ≠ f, g's priority level ≤ f's (same
//! or higher priority; lower priorities are invisible under static priority, and the same
//! level is FIFO, which a leftover bound covers) and g crosses a queue of f's path. Source ids
//! for dependencies: flow f is `f`, queue q is `F + q`, dependency group k is `F + Q + k`.
//!
//! **SNC-Meister** (snc-meister §4.1). `path_service(path, excluded, level)` is the service a
//! bundle of flows (`excluded`, of priority ≤ `level`) gets along `path`:
//! 1. every other flow g of priority ≤ `level` is cut into maximal *segments* [i..j] of the
//!    path that it crosses contiguously in the same order;
//! 2. segments are grouped by (i, j, g's queue just before path\[i\]); a group's arrival at
//!    path\[i\] is the ⊕ of its members' source MMPPs when they start there, otherwise (key
//!    idea 2) the ⊕ of its members' arrivals at the start of their longest common upstream
//!    run U, *then* ⊘ `path_service(U, members, max level of members)`. A single flow's
//!    arrival at the k-th queue of its own path is its source ⊘ `path_service(prefix, {g},
//!    level of g)`;
//! 3. (key idea 1) the segments form intervals on the path; the longest are placed first and
//!    an interval crossing an already placed one (partial overlap) is split into single
//!    queues, the arrival at each later queue being the group's output over the earlier part.
//!    The intervals then nest (a laminar family), and the service of an interval is the
//!    convolution, left to right, of its maximal sub-intervals' services and of the bare
//!    links between them, minus (⊖) the ⊕ of the groups whose segment is exactly that
//!    interval. The whole path is the root interval.
//!
//! For Fig. 6 this gives (S1 ⊗ (S2 ⊖ ((A3 ⊕ A4) ⊘ S3))) ⊖ A2; for two-queue paths it is the
//! original's `aggregateAnalysisTwoHopDep`. f's bound is L(A_f, path_service(f's path, {f},
//! level of f), ε_f). Every composition is a valid bound; inputs that share a source (e.g. a
//! cross flow whose upstream service subtracted f itself) are combined with Hölder.
//!
//! **Hop-by-hop**: A_g^{(0)} is g's source, A_g^{(i+1)} = A_g^{(i)} ⊘ L_g(q_i) with the leftover
//! L_g(q) = S_q ⊖ ⊕{A_h^{(pos of q in h)} : h cross traffic of g at q}. f's bound is
//! Σ_i L(A_f^{(i)}, L_f(q_i), ε_f/k). **Convolution**: L(A_f, ⊗_i L_f(q_i), ε_f).
//! The outputs there derive from common sources, so most of their operators need Hölder:
//! that is the looseness SNC-Meister removes.
//!
//! Every intermediate process is memoised for the whole analysis, every arrival's values at the
//! shared θ grid too (`algebra`), flows with equal MMPPs (tenants replaying one trace) share one
//! `MmppBound` and its memo of ρ at recent θs, and the flows crossing each queue are indexed
//! once, so that finding a path's cross traffic looks at the flows of its queues, not at every
//! flow. The recursion follows traffic upstream; on a network whose flows feed back into
//! themselves it would not end, so re-entering a computation in progress is reported as an
//! error.

use super::algebra::{
    Algebra, ConvolutionRule, Deps, Eval, LatencyProblem, MgfArrival, MgfService,
};
use super::mmpp::MmppBound;
use super::search;
use crate::{Bound, CalculusError, Method, ThetaSearch};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use tailbound_model::Network;

/// The tenants of a network an [`Analysis`] sees, when it is not all of them (the admitted
/// tenants of a long-running admission and a newcomer, say): their levels, their flows by
/// queue and their dependency groups. [`Analysis::over`] reads only what the bounds it is
/// asked for read, so an analysis over a few tenants of a large network costs those tenants;
/// its bounds are those of [`Analysis::new`] on the network of the present tenants alone
/// (their flows in the same order, with these levels and groups).
pub trait Present {
    /// Tenant `t`'s priority level, 0 highest; `None` when it is not present.
    fn level(&self, t: usize) -> Option<u32>;
    /// The present tenants' flows crossing queue `q`, ascending.
    fn flows_at(&self, q: usize) -> Vec<usize>;
    /// The dependency group tenant `t` bursts with, if any.
    fn group(&self, t: usize) -> Option<&str>;
    /// Flow `f`'s MMPP bound when the caller keeps it built (`None`: the analysis builds it
    /// from the flow's MMPP).
    fn mmpp(&self, _f: usize) -> Option<Arc<MmppBound>> {
        None
    }
}

/// A level not computed yet ([`Analysis::level`]).
const UNSET: u32 = u32::MAX;
/// The level of a flow whose tenant is not present: below every level, so never cross
/// traffic.
const ABSENT: u32 = u32::MAX - 1;

/// Something a process derives from: the ids of [`Deps`] (numbered as first met, so that the
/// sets stay as small as the analysis).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Source {
    Flow(usize),
    Queue(usize),
    Group(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    MgfService(Vec<usize>, Vec<usize>, u32),
    Bundle(Vec<usize>, Vec<usize>),
    FlowAt(usize, usize),
    HopArrival(usize, usize),
    HopLeftover(usize, usize),
}

/// One analysis of a network: sources, links and every memoised intermediate process.
pub struct Analysis<'a> {
    net: &'a Network,
    method: Method,
    /// the tenants seen, when not all ([`Present`])
    present: Option<&'a dyn Present>,
    /// priority level per flow (its tenant's), 0 highest; [`UNSET`] until read
    level: Vec<Cell<u32>>,
    /// the common MMPP step [s], once a source is built
    step_s: Option<f64>,
    alg: Algebra,
    /// per flow, its source once built
    source: Vec<Option<MgfArrival>>,
    /// per queue, its link once built
    link: Vec<Option<MgfService>>,
    /// the flows crossing each queue, ascending, once read
    at_queue: Vec<Option<Vec<usize>>>,
    /// the [`Deps`] id of each source met
    ids: HashMap<Source, usize>,
    /// (queue, level): the sum of the sources of every flow that starts at the queue with
    /// priority ≤ level, when they are mutually independent (see [`Self::by_difference`])
    totals: HashMap<(usize, u32), Option<MgfArrival>>,
    /// whether groups of sources are built as a shared total less the rest
    use_totals: bool,
    services: HashMap<Key, MgfService>,
    arrivals: HashMap<Key, MgfArrival>,
    active: HashSet<Key>,
    /// the MMPP bounds built, by content: flows with equal MMPPs share one (and its memo of ρ)
    bounds: HashMap<Vec<u64>, Arc<MmppBound>>,
}

impl<'a> Analysis<'a> {
    /// Checks that every flow has an MMPP with one common step and builds the sources.
    /// `priorities[t]` is tenant t's level.
    pub fn new(
        net: &'a Network,
        method: Method,
        priorities: &[u32],
    ) -> Result<Analysis<'a>, CalculusError> {
        let mut an = Analysis::empty(net, method, None);
        let mut at_queue = vec![Vec::new(); net.queues.len()];
        for (f, flow) in net.flows.iter().enumerate() {
            an.level[f].set(priorities.get(flow.tenant).copied().unwrap_or(0));
            an.source(f)?;
            for &q in &flow.path {
                if let Some(v) = at_queue.get_mut(q) {
                    if v.last() != Some(&f) {
                        v.push(f);
                    }
                }
            }
        }
        an.at_queue = at_queue.into_iter().map(Some).collect();
        Ok(an)
    }

    /// An analysis of the tenants of `net` that `present` says are there, at its levels and
    /// in its groups: it builds only the sources, links and flows by queue that the bounds
    /// asked for read, and checks each flow's MMPP (its step the same as the others') as it
    /// reads it. Bounds only flows of present tenants.
    pub fn over(net: &'a Network, method: Method, present: &'a dyn Present) -> Analysis<'a> {
        Analysis::empty(net, method, Some(present))
    }

    fn empty(net: &'a Network, method: Method, present: Option<&'a dyn Present>) -> Analysis<'a> {
        Analysis {
            net,
            method,
            present,
            level: vec![Cell::new(UNSET); net.flows.len()],
            step_s: None,
            alg: Algebra::new(),
            source: vec![None; net.flows.len()],
            link: vec![None; net.queues.len()],
            at_queue: vec![None; net.queues.len()],
            ids: HashMap::new(),
            totals: HashMap::new(),
            use_totals: true,
            services: HashMap::new(),
            arrivals: HashMap::new(),
            active: HashSet::new(),
            bounds: HashMap::new(),
        }
    }

    /// Flow `f`'s level (its tenant's); [`ABSENT`] when its tenant is not present.
    fn level(&self, f: usize) -> u32 {
        let cell = &self.level[f];
        if cell.get() == UNSET {
            let t = self.net.flows[f].tenant;
            cell.set(self.present.and_then(|p| p.level(t)).unwrap_or(ABSENT));
        }
        cell.get()
    }

    /// The dependency group of tenant `t`, if any.
    fn group_of(&self, t: usize) -> Option<&str> {
        match self.present {
            Some(p) => p.group(t),
            None => self.net.tenants.get(t).and_then(|t| t.group.as_deref()),
        }
    }

    /// The [`Deps`] id of `src`.
    fn id(&mut self, src: Source) -> usize {
        let next = self.ids.len();
        *self.ids.entry(src).or_insert(next)
    }

    /// Flow `f`'s source: its MMPP, of its own flow and its tenant's dependency group.
    fn source(&mut self, f: usize) -> Result<MgfArrival, CalculusError> {
        if let Some(a) = &self.source[f] {
            return Ok(a.clone());
        }
        let flow = &self.net.flows[f];
        let Some(m) = &flow.mmpp else {
            return Err(CalculusError::MissingModel {
                flow: flow.name.clone(),
                model: "MMPP",
                method: self.method.as_str(),
            });
        };
        match self.step_s {
            None => self.step_s = Some(m.step_s),
            Some(a) if (a - m.step_s).abs() > 1e-12 * a.abs() => {
                return Err(CalculusError::MixedSteps { a, b: m.step_s });
            }
            Some(_) => {}
        }
        let bound = match self.present.and_then(|p| p.mmpp(f)) {
            Some(b) => b,
            None => {
                let b = MmppBound::new(m)
                    .map_err(|e| CalculusError::Invalid(format!("flow {:?}: {e}", flow.name)))?;
                self.bounds
                    .entry(b.content_key())
                    .or_insert_with(|| Arc::new(b))
                    .clone()
            }
        };
        let group = self.group_of(flow.tenant).map(str::to_string);
        let mut deps = Deps::single(self.id(Source::Flow(f)));
        if let Some(g) = group {
            deps.insert(self.id(Source::Group(g)));
        }
        let a = self.alg.mmpp_shared(bound, deps);
        self.source[f] = Some(a.clone());
        Ok(a)
    }

    /// Queue `q`'s constant-rate link.
    fn link(&mut self, q: usize) -> MgfService {
        if let Some(s) = &self.link[q] {
            return s.clone();
        }
        let rate = self.net.queues[q].rate * self.step_s();
        let id = self.id(Source::Queue(q));
        let s = self.alg.constant(rate, Deps::single(id));
        self.link[q] = Some(s.clone());
        s
    }

    /// The flows crossing queue `q` (present ones), ascending.
    fn flows_at(&mut self, q: usize) -> &[usize] {
        if self.at_queue.get(q).is_some_and(Option::is_none) {
            self.at_queue[q] = Some(self.present.map(|p| p.flows_at(q)).unwrap_or_default());
        }
        self.at_queue
            .get(q)
            .and_then(Option::as_deref)
            .unwrap_or_default()
    }

    /// This analysis with every group of sources aggregated member by member instead of as a
    /// queue's shared total less the rest (`false`): the reference the totals are checked
    /// against.
    pub fn with_totals(mut self, on: bool) -> Analysis<'a> {
        self.use_totals = on;
        self
    }

    /// The time step of the analysis [s] (its flows' MMPP step; 10 µs before any is read).
    pub fn step_s(&self) -> f64 {
        self.step_s.unwrap_or(1e-5)
    }

    /// The bound of flow `f` at violation probability `epsilon` under `method`.
    pub fn flow_bound(
        &mut self,
        f: usize,
        method: Method,
        epsilon: f64,
        search: ThetaSearch,
    ) -> Result<Bound, CalculusError> {
        Ok(self.flow_minimum(f, method, epsilon, search)?.0)
    }

    /// [`Analysis::flow_bound`] and the θ it was minimised at when the bound is one problem's
    /// minimum without Hölder exponents (SNC-Meister's and the convolution analysis' without
    /// dependent operators): the θ [`Analysis::flow_bound_at`] can check again later.
    pub fn flow_minimum(
        &mut self,
        f: usize,
        method: Method,
        epsilon: f64,
        search: ThetaSearch,
    ) -> Result<(Bound, Option<f64>), CalculusError> {
        let rule = match search {
            ThetaSearch::Grid => ConvolutionRule::Original,
            ThetaSearch::Brent => ConvolutionRule::Exact,
        };
        let problems = self.problems(f, method, epsilon)?;
        let mut steps = 0.0;
        let mut theta = None;
        for p in &problems {
            match search::minimise(p, self.alg.slot_count(), search, rule) {
                Some(m) => {
                    steps += m.steps;
                    theta = (problems.len() == 1 && p.slots().is_empty()).then_some(m.theta);
                }
                None => return Ok((Bound::Unbounded(self.overload_reason(f)), None)),
            }
        }
        let seconds = steps * self.step_s();
        let bound = match Bound::from_seconds(seconds, String::new) {
            Bound::Unbounded(_) => Bound::Unbounded(self.overload_reason(f)),
            within => within,
        };
        let theta = theta.filter(|_| bound.seconds().is_some());
        Ok((bound, theta))
    }

    /// Flow `f`'s latency bound [s] evaluated exactly at `theta` (no search): a valid bound,
    /// looser than the minimum unless `theta` is where the minimum lies. `None` when the
    /// bound is not one problem without Hölder exponents (see [`Analysis::flow_minimum`]) or
    /// is undefined at `theta` (its queues are unstable there).
    pub fn flow_bound_at(
        &mut self,
        f: usize,
        method: Method,
        epsilon: f64,
        theta: f64,
    ) -> Result<Option<f64>, CalculusError> {
        let problems = self.problems(f, method, epsilon)?;
        let [p] = problems.as_slice() else {
            return Ok(None);
        };
        if !p.slots().is_empty() {
            return Ok(None);
        }
        let step_s = self.step_s();
        Ok(p.steps_at(theta, &Eval::PLAIN).map(|steps| steps * step_s))
    }

    /// The latency problems whose minima add up to flow `f`'s bound: one for SNC-Meister and
    /// convolution, one per hop for hop-by-hop (each at ε/k).
    pub fn problems(
        &mut self,
        f: usize,
        method: Method,
        epsilon: f64,
    ) -> Result<Vec<LatencyProblem>, CalculusError> {
        let path = self.net.flows[f].path.clone();
        // the flow's own source first: it fixes the analysis' step before any link is built
        self.source(f)?;
        match method {
            Method::SncHop => {
                let k = path.len() as f64;
                let mut out = Vec::with_capacity(path.len());
                for (i, &q) in path.iter().enumerate() {
                    let a = self.hop_arrival(f, i)?;
                    let s = self.hop_leftover(q, f)?;
                    out.push(self.alg.latency(&a, &s, epsilon / k));
                }
                Ok(out)
            }
            Method::SncConv => {
                let mut hops = Vec::with_capacity(path.len());
                for &q in &path {
                    hops.push(self.hop_leftover(q, f)?);
                }
                // left to right, as the original; a balanced tree was measured looser
                let mut it = hops.into_iter();
                let first = it.next().ok_or_else(|| empty_path(self.net, f))?;
                let svc = it.fold(first, |acc, s| self.alg.convolve(&acc, &s));
                let a = self.source(f)?;
                Ok(vec![self.alg.latency(&a, &svc, epsilon)])
            }
            _ => {
                let s = self.path_service(&path, &[f], self.level(f))?;
                let a = self.source(f)?;
                Ok(vec![self.alg.latency(&a, &s, epsilon)])
            }
        }
    }

    /// Why flow `f` has no bound: the most loaded queue of its path (mean load of the flows it
    /// sees against the capacity).
    pub fn overload_reason(&mut self, f: usize) -> String {
        let lvl = self.level(f);
        let path = &self.net.flows[f].path;
        let mut loads = HashMap::new();
        for &q in path {
            let flows = self.flows_at(q).to_vec();
            let load: f64 = flows
                .into_iter()
                .filter(|&g| g == f || self.level(g) <= lvl)
                .filter_map(|g| self.net.flows[g].mmpp.as_ref())
                .map(|m| m.mean_work_per_s())
                .sum();
            loads.insert(q, load);
        }
        most_loaded_queue(self.net, path, lvl, "no stable θ", |q| {
            loads.get(&q).copied().unwrap_or(0.0)
        })
    }

    fn enter(&mut self, key: &Key) -> Result<(), CalculusError> {
        if self.active.insert(key.clone()) {
            Ok(())
        } else {
            Err(CalculusError::Invalid(format!(
                "the SNC analysis needs a feed-forward network, but the traffic {} depends on \
                 itself; break the cycle between these flows' paths",
                self.describe(key)
            )))
        }
    }

    fn describe(&self, key: &Key) -> String {
        let qn = |qs: &[usize]| {
            qs.iter()
                .map(|&q| self.net.queues[q].name.as_str())
                .collect::<Vec<_>>()
                .join(" → ")
        };
        let fname = |f: usize| self.net.flows[f].name.as_str();
        match key {
            Key::MgfService(p, _, _) | Key::Bundle(_, p) => format!("through {}", qn(p)),
            Key::FlowAt(f, i) | Key::HopArrival(f, i) => {
                format!("of flow {} at hop {i}", fname(*f))
            }
            Key::HopLeftover(q, f) => {
                format!("at queue {} seen by flow {}", qn(&[*q]), fname(*f))
            }
        }
    }

    /// SNC-Meister's service for a bundle (module docs).
    fn path_service(
        &mut self,
        path: &[usize],
        excluded: &[usize],
        level: u32,
    ) -> Result<MgfService, CalculusError> {
        let key = Key::MgfService(path.to_vec(), excluded.to_vec(), level);
        if let Some(s) = self.services.get(&key) {
            return Ok(s.clone());
        }
        if path.is_empty() {
            return Err(CalculusError::Invalid(
                "empty path in the SNC analysis".into(),
            ));
        }
        self.enter(&key)?;
        let result = self.path_service_inner(path, excluded, level);
        self.active.remove(&key);
        let s = result?;
        self.services.insert(key, s.clone());
        Ok(s)
    }

    fn path_service_inner(
        &mut self,
        path: &[usize],
        excluded: &[usize],
        level: u32,
    ) -> Result<MgfService, CalculusError> {
        type Members = Vec<(usize, usize)>;
        let mut groups: BTreeMap<(usize, usize, Option<usize>), Members> = BTreeMap::new();
        // the flows crossing the path, ascending (the order the groups' members keep)
        let mut crossing: Vec<usize> = Vec::new();
        for &q in path {
            crossing.extend_from_slice(self.flows_at(q));
        }
        crossing.sort_unstable();
        crossing.dedup();
        for g in crossing {
            if excluded.contains(&g) || self.level(g) > level {
                continue;
            }
            let gp = &self.net.flows[g].path;
            let mut i = 0;
            while i < path.len() {
                if let Some(pos) = gp.iter().position(|&q| q == path[i]) {
                    let mut j = i;
                    while j + 1 < path.len()
                        && pos + (j + 1 - i) < gp.len()
                        && gp[pos + j + 1 - i] == path[j + 1]
                    {
                        j += 1;
                    }
                    let prev = pos.checked_sub(1).map(|x| gp[x]);
                    groups.entry((i, j, prev)).or_default().push((g, pos));
                    i = j + 1;
                } else {
                    i += 1;
                }
            }
        }
        // each group's arrival at its first shared queue
        let mut segs: Vec<(usize, usize, Members, MgfArrival)> = Vec::with_capacity(groups.len());
        for ((i, j, prev), members) in groups {
            let a = self.group_arrival(&members, prev)?;
            segs.push((i, j, members, a));
        }
        segs.sort_by_key(|&(i, j, _, _)| (std::cmp::Reverse(j - i), i));
        let mut accepted: Vec<(usize, usize)> = Vec::new();
        let mut subtract: BTreeMap<(usize, usize), Vec<MgfArrival>> = BTreeMap::new();
        for (i, j, members, a) in segs {
            let crosses = accepted
                .iter()
                .any(|&(c, d)| (c < i && i <= d && d < j) || (i < c && c <= j && j < d));
            if !crosses {
                if !accepted.contains(&(i, j)) {
                    accepted.push((i, j));
                }
                subtract.entry((i, j)).or_default().push(a);
                continue;
            }
            // split into single queues: the arrival at path[x] is the group's output over
            // path[i..x]
            let mut ids: Vec<usize> = members.iter().map(|&(g, _)| g).collect();
            ids.sort_unstable();
            let lvl = ids.iter().map(|&g| self.level(g)).max().unwrap_or(level);
            for x in i..=j {
                let ax = if x == i {
                    a.clone()
                } else {
                    let s = self.path_service(&path[i..x], &ids, lvl)?;
                    self.alg.output(&a, &s)
                };
                if !accepted.contains(&(x, x)) {
                    accepted.push((x, x));
                }
                subtract.entry((x, x)).or_default().push(ax);
            }
        }
        Ok(self.build(path, 0, path.len() - 1, &accepted, &subtract))
    }

    fn build(
        &mut self,
        path: &[usize],
        i: usize,
        j: usize,
        accepted: &[(usize, usize)],
        subtract: &BTreeMap<(usize, usize), Vec<MgfArrival>>,
    ) -> MgfService {
        let inside = |&(c, d): &(usize, usize)| i <= c && d <= j && (c, d) != (i, j);
        let mut children: Vec<(usize, usize)> = accepted
            .iter()
            .copied()
            .filter(inside)
            .filter(|&(c, d)| {
                !accepted
                    .iter()
                    .any(|&o| o != (c, d) && inside(&o) && o.0 <= c && d <= o.1)
            })
            .collect();
        children.sort_unstable();
        let mut svc: Option<MgfService> = None;
        let mut x = i;
        while x <= j {
            let piece = match children.iter().find(|&&(c, _)| c == x) {
                Some(&(c, d)) => {
                    x = d + 1;
                    self.build(path, c, d, accepted, subtract)
                }
                None => {
                    x += 1;
                    self.link(path[x - 1])
                }
            };
            svc = Some(match svc {
                None => piece,
                Some(prev) => self.alg.convolve(&prev, &piece),
            });
        }
        let mut svc = svc.unwrap_or_else(|| self.link(path[i]));
        if let Some(arrs) = subtract.get(&(i, j)) {
            if let Some(agg) = self.alg.aggregate_all(arrs) {
                svc = self.alg.leftover(&svc, &agg);
            }
        }
        svc
    }

    /// The aggregate arrival of a group at its first shared queue (key idea 2).
    fn group_arrival(
        &mut self,
        members: &[(usize, usize)],
        prev: Option<usize>,
    ) -> Result<MgfArrival, CalculusError> {
        if prev.is_none() {
            if self.use_totals {
                if let Some(a) = self.by_difference(members)? {
                    return Ok(a);
                }
            }
            let mut srcs: Vec<MgfArrival> = Vec::with_capacity(members.len());
            for &(g, _) in members {
                srcs.push(self.source(g)?);
            }
            return self
                .alg
                .aggregate_all(&srcs)
                .ok_or_else(|| CalculusError::Invalid("empty group".into()));
        }
        // longest common upstream run U ending just before the shared queue
        let path_of = |g: usize| &self.net.flows[g].path;
        let (g0, pos0) = members[0];
        let mut len = 1;
        while members
            .iter()
            .all(|&(g, pos)| pos > len && path_of(g)[pos - len - 1] == path_of(g0)[pos0 - len - 1])
        {
            len += 1;
        }
        let upath: Vec<usize> = path_of(g0)[pos0 - len..pos0].to_vec();
        let mut ids: Vec<usize> = members.iter().map(|&(g, _)| g).collect();
        ids.sort_unstable();
        let key = Key::Bundle(ids.clone(), upath.clone());
        if let Some(a) = self.arrivals.get(&key) {
            return Ok(a.clone());
        }
        self.enter(&key)?;
        let result: Result<_, CalculusError> = (|| {
            let mut ins = Vec::with_capacity(members.len());
            for &(g, pos) in members {
                ins.push(self.flow_at(g, pos - len)?);
            }
            let agg = self
                .alg
                .aggregate_all(&ins)
                .ok_or_else(|| CalculusError::Invalid("empty group".into()))?;
            let lvl = ids.iter().map(|&g| self.level(g)).max().unwrap_or(0);
            let s = self.path_service(&upath, &ids, lvl)?;
            Ok(self.alg.output(&agg, &s))
        })();
        self.active.remove(&key);
        let a = result?;
        self.arrivals.insert(key, a.clone());
        Ok(a)
    }

    /// The sources of `members` (flows that all start at one queue q) as the shared total of
    /// the sources starting at q, of priority up to the members' lowest, less the few that are
    /// not members (`Algebra::difference`): what makes a queue's cross traffic cost the same
    /// per evaluation whatever the number of flows sharing it. `None` (aggregate the members
    /// instead) when fewer than half would be left out or when some of those sources depend
    /// on each other (a dependency group: Hölder, not a plain sum).
    fn by_difference(
        &mut self,
        members: &[(usize, usize)],
    ) -> Result<Option<MgfArrival>, CalculusError> {
        let Some(&q) = members
            .first()
            .and_then(|&(g, _)| self.net.flows[g].path.first())
        else {
            return Ok(None);
        };
        let Some(lvl) = members.iter().map(|&(g, _)| self.level(g)).max() else {
            return Ok(None);
        };
        let starting: Vec<usize> = self
            .flows_at(q)
            .to_vec()
            .into_iter()
            .filter(|&g| self.net.flows[g].path.first() == Some(&q) && self.level(g) <= lvl)
            .collect();
        let mut ids: Vec<usize> = members.iter().map(|&(g, _)| g).collect();
        ids.sort_unstable();
        let rest: Vec<usize> = starting
            .iter()
            .copied()
            .filter(|g| ids.binary_search(g).is_err())
            .collect();
        if members.len() < 2 || 2 * rest.len() > members.len() {
            return Ok(None);
        }
        if !self.totals.contains_key(&(q, lvl)) {
            // independent sources only: each derives from its own flow, no dependency group
            let independent = starting
                .iter()
                .all(|&g| self.group_of(self.net.flows[g].tenant).is_none());
            let total = if independent {
                let mut srcs: Vec<MgfArrival> = Vec::with_capacity(starting.len());
                for &g in &starting {
                    srcs.push(self.source(g)?);
                }
                self.alg.aggregate_all(&srcs)
            } else {
                None
            };
            self.totals.insert((q, lvl), total);
        }
        let Some(total) = self.totals.get(&(q, lvl)).cloned().flatten() else {
            return Ok(None);
        };
        if rest.is_empty() {
            return Ok(Some(total));
        }
        // the difference is defined where the total is, below the least pole of every source:
        // an excluded source whose MGF's pole is below the members' would cut their θ range
        // (and with a Hölder exponent p, evaluated at p·θ, cut it further)
        let mut members_pole = f64::INFINITY;
        let mut deps = Deps::none();
        for &(g, _) in members {
            let a = self.source(g)?;
            members_pole = members_pole.min(a.theta_sup(&Eval::PLAIN));
            deps = deps.union(a.deps());
        }
        let mut parts: Vec<MgfArrival> = Vec::with_capacity(rest.len());
        for &g in &rest {
            let a = self.source(g)?;
            if a.theta_sup(&Eval::PLAIN) < members_pole {
                return Ok(None);
            }
            parts.push(a);
        }
        Ok(self.alg.difference(&total, &parts, deps))
    }

    /// Flow g's arrival at the `idx`-th queue of its path, SNC-Meister style.
    fn flow_at(&mut self, g: usize, idx: usize) -> Result<MgfArrival, CalculusError> {
        if idx == 0 {
            return self.source(g);
        }
        let key = Key::FlowAt(g, idx);
        if let Some(a) = self.arrivals.get(&key) {
            return Ok(a.clone());
        }
        self.enter(&key)?;
        let prefix = self.net.flows[g].path[..idx].to_vec();
        let result = self.path_service(&prefix, &[g], self.level(g));
        self.active.remove(&key);
        let s = result?;
        let src = self.source(g)?;
        let a = self.alg.output(&src, &s);
        self.arrivals.insert(key, a.clone());
        Ok(a)
    }

    /// Flow g's arrival at the `idx`-th queue of its path, hop by hop.
    fn hop_arrival(&mut self, g: usize, idx: usize) -> Result<MgfArrival, CalculusError> {
        if idx == 0 {
            return self.source(g);
        }
        let key = Key::HopArrival(g, idx);
        if let Some(a) = self.arrivals.get(&key) {
            return Ok(a.clone());
        }
        self.enter(&key)?;
        let result: Result<_, CalculusError> = (|| {
            let prev = self.hop_arrival(g, idx - 1)?;
            let q = self.net.flows[g].path[idx - 1];
            let s = self.hop_leftover(q, g)?;
            Ok(self.alg.output(&prev, &s))
        })();
        self.active.remove(&key);
        let a = result?;
        self.arrivals.insert(key, a.clone());
        Ok(a)
    }

    /// The leftover of queue q for flow g: the link minus g's cross traffic there.
    fn hop_leftover(&mut self, q: usize, g: usize) -> Result<MgfService, CalculusError> {
        let key = Key::HopLeftover(q, g);
        if let Some(s) = self.services.get(&key) {
            return Ok(s.clone());
        }
        self.enter(&key)?;
        let result: Result<_, CalculusError> = (|| {
            let mut cross = Vec::new();
            let at_q = self.flows_at(q).to_vec();
            for h in at_q {
                if h == g || self.level(h) > self.level(g) {
                    continue;
                }
                if let Some(pos) = self.net.flows[h].path.iter().position(|&x| x == q) {
                    cross.push(self.hop_arrival(h, pos)?);
                }
            }
            let link = self.link(q);
            Ok(match self.alg.aggregate_all(&cross) {
                Some(agg) => self.alg.leftover(&link, &agg),
                None => link,
            })
        })();
        self.active.remove(&key);
        let s = result?;
        self.services.insert(key, s.clone());
        Ok(s)
    }
}

fn empty_path(net: &Network, f: usize) -> CalculusError {
    CalculusError::Invalid(format!("flow {:?} crosses no queue", net.flows[f].name))
}

/// Why a flow of priority `level` along `path` has no bound, told by the most loaded queue of
/// its path (`load(q)`: the mean work per second that queue serves before or with the flow):
/// overloaded, or loaded below capacity but too bursty for any θ (`no_theta` says which kind
/// of θ is missing: the SNC analyses phrase it differently).
pub(crate) fn most_loaded_queue(
    net: &Network,
    path: &[usize],
    level: u32,
    no_theta: &str,
    load: impl Fn(usize) -> f64,
) -> String {
    let mut worst: Option<(f64, usize, f64)> = None;
    for &q in path {
        let load = load(q);
        let rate = net.queues[q].rate;
        if !matches!(worst, Some((u, _, _)) if load / rate <= u) {
            worst = Some((load / rate, q, load));
        }
    }
    match worst {
        Some((u, q, load)) => {
            let name = &net.queues[q].name;
            let rate = net.queues[q].rate;
            if u >= 1.0 {
                format!(
                    "queue {name}: load {load:.4e} ≥ capacity {rate:.4e} [work/s] \
                     (flows of priority ≤ {level})"
                )
            } else {
                format!(
                    "queue {name}: mean load {load:.4e} of capacity {rate:.4e} [work/s] \
                     ({:.1}%), but the bursts leave {no_theta} at this percentile",
                    100.0 * u
                )
            }
        }
        None => "flow crosses no queue".into(),
    }
}
