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
//! shared θ grid too (`algebra`), and the flows crossing each queue are indexed once, so that
//! finding a path's cross traffic looks at the flows of its queues, not at every flow. The recursion follows
//! traffic upstream; on a network whose flows feed back into themselves it would not end, so
//! re-entering a computation in progress is reported as an error.

use super::algebra::{
    Algebra, ConvolutionRule, Deps, Eval, LatencyProblem, MgfArrival, MgfService,
};
use super::mmpp::MmppBound;
use super::search;
use crate::{Bound, CalculusError, Method, ThetaSearch};
use std::collections::{BTreeMap, HashMap, HashSet};
use tailbound_model::Network;

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
    /// priority level per flow (its tenant's), 0 highest
    level: Vec<u32>,
    step_s: f64,
    alg: Algebra,
    source: Vec<MgfArrival>,
    link: Vec<MgfService>,
    /// the flows crossing each queue, ascending
    at_queue: Vec<Vec<usize>>,
    /// (queue, level): the sum of the sources of every flow that starts at the queue with
    /// priority ≤ level, when they are mutually independent (see [`Self::by_difference`])
    totals: HashMap<(usize, u32), Option<MgfArrival>>,
    /// whether groups of sources are built as a shared total less the rest
    use_totals: bool,
    services: HashMap<Key, MgfService>,
    arrivals: HashMap<Key, MgfArrival>,
    active: HashSet<Key>,
}

impl<'a> Analysis<'a> {
    /// Checks that every flow has an MMPP with one common step and builds the sources.
    /// `priorities[t]` is tenant t's level.
    pub fn new(
        net: &'a Network,
        method: Method,
        priorities: &[u32],
    ) -> Result<Analysis<'a>, CalculusError> {
        let nf = net.flows.len();
        let nq = net.queues.len();
        let mut groups: Vec<&str> = net
            .tenants
            .iter()
            .filter_map(|t| t.group.as_deref())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        let mut step_s: Option<f64> = None;
        let alg = Algebra::new();
        let mut source = Vec::with_capacity(nf);
        for (f, flow) in net.flows.iter().enumerate() {
            let Some(m) = &flow.mmpp else {
                return Err(CalculusError::MissingModel {
                    flow: flow.name.clone(),
                    model: "MMPP",
                    method: method.as_str(),
                });
            };
            match step_s {
                None => step_s = Some(m.step_s),
                Some(a) if (a - m.step_s).abs() > 1e-12 * a.abs() => {
                    return Err(CalculusError::MixedSteps { a, b: m.step_s });
                }
                Some(_) => {}
            }
            let bound = MmppBound::new(m)
                .map_err(|e| CalculusError::Invalid(format!("flow {:?}: {e}", flow.name)))?;
            let mut deps = Deps::single(f);
            if let Some(g) = net
                .tenants
                .get(flow.tenant)
                .and_then(|t| t.group.as_deref())
            {
                if let Ok(k) = groups.binary_search(&g) {
                    deps.insert(nf + nq + k);
                }
            }
            source.push(alg.mmpp(bound, deps));
        }
        let step_s = step_s.unwrap_or(1e-5);
        let link = net
            .queues
            .iter()
            .enumerate()
            .map(|(q, queue)| alg.constant(queue.rate * step_s, Deps::single(nf + q)))
            .collect();
        let level = net
            .flows
            .iter()
            .map(|f| priorities.get(f.tenant).copied().unwrap_or(0))
            .collect();
        let mut at_queue = vec![Vec::new(); nq];
        for (f, flow) in net.flows.iter().enumerate() {
            for &q in &flow.path {
                if let Some(v) = at_queue.get_mut(q) {
                    if v.last() != Some(&f) {
                        v.push(f);
                    }
                }
            }
        }
        Ok(Analysis {
            net,
            level,
            step_s,
            alg,
            source,
            link,
            at_queue,
            totals: HashMap::new(),
            use_totals: true,
            services: HashMap::new(),
            arrivals: HashMap::new(),
            active: HashSet::new(),
        })
    }

    /// This analysis with every group of sources aggregated member by member instead of as a
    /// queue's shared total less the rest (`false`): the reference the totals are checked
    /// against.
    pub fn with_totals(mut self, on: bool) -> Analysis<'a> {
        self.use_totals = on;
        self
    }

    /// The time step of the analysis [s].
    pub fn step_s(&self) -> f64 {
        self.step_s
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
        let seconds = steps * self.step_s;
        let bound = Bound::from_seconds(seconds, || self.overload_reason(f));
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
        Ok(p.steps_at(theta, &Eval::PLAIN)
            .map(|steps| steps * self.step_s))
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
                let a = self.source[f].clone();
                Ok(vec![self.alg.latency(&a, &svc, epsilon)])
            }
            _ => {
                let s = self.path_service(&path, &[f], self.level[f])?;
                let a = self.source[f].clone();
                Ok(vec![self.alg.latency(&a, &s, epsilon)])
            }
        }
    }

    /// Why flow `f` has no bound: the most loaded queue of its path (mean load of the flows it
    /// sees against the capacity).
    pub fn overload_reason(&self, f: usize) -> String {
        let lvl = self.level[f];
        most_loaded_queue(
            self.net,
            &self.net.flows[f].path,
            lvl,
            "no stable θ",
            |q| {
                self.net
                    .flows
                    .iter()
                    .enumerate()
                    .filter(|(g, fl)| (*g == f || self.level[*g] <= lvl) && fl.path.contains(&q))
                    .filter_map(|(_, fl)| fl.mmpp.as_ref().map(|m| m.mean_work_per_s()))
                    .sum()
            },
        )
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
        let mut crossing: Vec<usize> = path
            .iter()
            .filter_map(|&q| self.at_queue.get(q))
            .flatten()
            .copied()
            .collect();
        crossing.sort_unstable();
        crossing.dedup();
        for g in crossing {
            if excluded.contains(&g) || self.level[g] > level {
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
            let lvl = ids.iter().map(|&g| self.level[g]).max().unwrap_or(level);
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
                    self.link[path[x - 1]].clone()
                }
            };
            svc = Some(match svc {
                None => piece,
                Some(prev) => self.alg.convolve(&prev, &piece),
            });
        }
        let mut svc = svc.unwrap_or_else(|| self.link[path[i]].clone());
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
            if let Some(a) = self
                .use_totals
                .then(|| self.by_difference(members))
                .flatten()
            {
                return Ok(a);
            }
            let srcs: Vec<MgfArrival> = members
                .iter()
                .map(|&(g, _)| self.source[g].clone())
                .collect();
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
            let lvl = ids.iter().map(|&g| self.level[g]).max().unwrap_or(0);
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
    fn by_difference(&mut self, members: &[(usize, usize)]) -> Option<MgfArrival> {
        let q = *self.net.flows[members.first()?.0].path.first()?;
        let lvl = members.iter().map(|&(g, _)| self.level[g]).max()?;
        let starting: Vec<usize> = self
            .at_queue
            .get(q)?
            .iter()
            .copied()
            .filter(|&g| self.net.flows[g].path.first() == Some(&q) && self.level[g] <= lvl)
            .collect();
        let rest: Vec<usize> = starting
            .iter()
            .copied()
            .filter(|g| !members.iter().any(|&(m, _)| m == *g))
            .collect();
        if members.len() < 2 || 2 * rest.len() > members.len() {
            return None;
        }
        // the difference is defined where the total is, below the least pole of every source:
        // an excluded source whose MGF's pole is below the members' would cut their θ range
        // (and with a Hölder exponent p, evaluated at p·θ, cut it further)
        let pole = |g: usize| self.source[g].theta_sup(&Eval::PLAIN);
        let members_pole = members
            .iter()
            .map(|&(g, _)| pole(g))
            .fold(f64::INFINITY, f64::min);
        if rest.iter().any(|&g| pole(g) < members_pole) {
            return None;
        }
        if !self.totals.contains_key(&(q, lvl)) {
            // independent sources only: each derives from its own flow, no dependency group
            let independent = starting
                .iter()
                .all(|&g| self.source[g].deps() == &Deps::single(g));
            let total = if independent {
                let srcs: Vec<MgfArrival> =
                    starting.iter().map(|&g| self.source[g].clone()).collect();
                self.alg.aggregate_all(&srcs)
            } else {
                None
            };
            self.totals.insert((q, lvl), total);
        }
        let total = self.totals.get(&(q, lvl))?.clone()?;
        if rest.is_empty() {
            return Some(total);
        }
        let parts: Vec<MgfArrival> = rest.iter().map(|&g| self.source[g].clone()).collect();
        let deps = members.iter().fold(Deps::none(), |acc, &(g, _)| {
            acc.union(self.source[g].deps())
        });
        self.alg.difference(&total, &parts, deps)
    }

    /// Flow g's arrival at the `idx`-th queue of its path, SNC-Meister style.
    fn flow_at(&mut self, g: usize, idx: usize) -> Result<MgfArrival, CalculusError> {
        if idx == 0 {
            return Ok(self.source[g].clone());
        }
        let key = Key::FlowAt(g, idx);
        if let Some(a) = self.arrivals.get(&key) {
            return Ok(a.clone());
        }
        self.enter(&key)?;
        let prefix = self.net.flows[g].path[..idx].to_vec();
        let result = self.path_service(&prefix, &[g], self.level[g]);
        self.active.remove(&key);
        let s = result?;
        let a = self.alg.output(&self.source[g].clone(), &s);
        self.arrivals.insert(key, a.clone());
        Ok(a)
    }

    /// Flow g's arrival at the `idx`-th queue of its path, hop by hop.
    fn hop_arrival(&mut self, g: usize, idx: usize) -> Result<MgfArrival, CalculusError> {
        if idx == 0 {
            return Ok(self.source[g].clone());
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
            let at_q = self.at_queue.get(q).cloned().unwrap_or_default();
            for h in at_q {
                if h == g || self.level[h] > self.level[g] {
                    continue;
                }
                if let Some(pos) = self.net.flows[h].path.iter().position(|&x| x == q) {
                    cross.push(self.hop_arrival(h, pos)?);
                }
            }
            let link = self.link[q].clone();
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
