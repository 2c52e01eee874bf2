//! Weighted dominant resource fairness with demand caps (Ghodsi et al. [24], as used by
//! pulsar §4.1 and §5), computed by progressive filling **by events**.
//!
//! Flow `i` with weight `w_i` and dominant demand share `δ_i = max_j D_ij/C_j` gets
//! `x_i = min(1, w_i·λ/δ_i)` of its bundle at fill level `λ` (its weighted dominant share
//! `x_i·δ_i/w_i` equals `λ`). As `λ` rises, a flow freezes when its demand is met
//! (`λ = δ_i/w_i`) or when a resource on its path saturates. Between events every resource's
//! load is linear in `λ` (`u_j(λ) = a_j + b_j·λ`), so the next saturation is
//! `(C_j − u_j)/b_j` away: a heap of such times (lazily invalidated) and the flows sorted by
//! `δ_i/w_i` give the exact allocation in O(E log E) for E demand entries, with no
//! increments to tune.
//!
//! The result satisfies DRF's bottleneck condition: every flow below its demand crosses a
//! saturated resource on which no flow has a larger weighted dominant share (the flows on that
//! resource froze at or before its saturation level).

use crate::problem::{Allocation, Problem};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An event time on the fill level, ordered for a min-heap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ev {
    pub lambda: f64,
    /// low part of a double-double level (H-DRF's [`crate::hdrf`]); 0 for DRF
    pub lo: f64,
    pub id: u32,
    pub version: u32,
}

impl Eq for Ev {}

impl Ord for Ev {
    fn cmp(&self, other: &Self) -> Ordering {
        // reversed: BinaryHeap is a max-heap
        other
            .lambda
            .total_cmp(&self.lambda)
            .then_with(|| other.lo.total_cmp(&self.lo))
            .then_with(|| other.id.cmp(&self.id))
    }
}

impl PartialOrd for Ev {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Progressive-filling state: resource loads as affine functions of the fill level.
struct Filler<'a> {
    offsets: &'a [usize],
    res: &'a [u32],
    demand: &'a [f64],
    cap: &'a [f64],
    /// x_i = rate_i·λ while active
    rate: Vec<f64>,
    active: Vec<bool>,
    x: Vec<f64>,
    /// load of each resource at level `refl` [tokens/s]
    load: Vec<f64>,
    /// d load / d λ
    slope: Vec<f64>,
    refl: Vec<f64>,
    /// `slope` as last summed exactly (see [`Filler::freeze`])
    exact: Vec<f64>,
    /// flows on each resource and their demands ([`Problem`]'s transpose)
    toff: &'a [usize],
    tcol: &'a [(u32, f64)],
    /// active flows on each resource
    count: Vec<u32>,
    version: Vec<u32>,
    saturated: Vec<bool>,
    heap: BinaryHeap<Ev>,
}

impl Filler<'_> {
    /// Freezes flow `i` at level `lambda` with fraction `xi` and reschedules its resources.
    fn freeze(&mut self, i: usize, lambda: f64, xi: f64) {
        self.active[i] = false;
        self.x[i] = xi;
        for k in self.offsets[i]..self.offsets[i + 1] {
            let j = self.res[k] as usize;
            self.load[j] += self.slope[j] * (lambda - self.refl[j]);
            self.refl[j] = lambda;
            self.count[j] -= 1;
            if self.count[j] == 0 {
                // no float residue: nothing grows on j any more
                self.slope[j] = 0.0;
                continue;
            }
            // Subtracting a large flow's term from the slope leaves a residue of about
            // ε·(that term), which can exceed what the remaining flows contribute when
            // demands and weights span many orders of magnitude: the resource would then
            // saturate at the wrong level (over capacity, or leaving a flow short). When the
            // slope drops below CANCEL of its last exact sum, it is summed again exactly
            // (slopes only fall, so this happens a few times per resource).
            let s = self.slope[j] - self.rate[i] * self.demand[k];
            self.slope[j] = if s < CANCEL * self.exact[j] {
                let exact = self.exact_slope(j);
                self.exact[j] = exact;
                exact
            } else {
                s
            };
            if self.saturated[j] || self.slope[j] <= 0.0 {
                continue;
            }
            self.version[j] += 1;
            self.heap.push(Ev {
                lambda: lambda + ((self.cap[j] - self.load[j]) / self.slope[j]).max(0.0),
                lo: 0.0,
                id: j as u32,
                version: self.version[j],
            });
        }
    }
}

/// Below this fraction of its last exact sum, a resource's slope is summed again exactly.
const CANCEL: f64 = 1e-3;

impl Filler<'_> {
    /// `d load / d λ` of resource `j`: the sum over its active flows.
    fn exact_slope(&self, j: usize) -> f64 {
        self.tcol[self.toff[j]..self.toff[j + 1]]
            .iter()
            .filter(|(i, _)| self.active[*i as usize])
            .map(|&(i, d)| self.rate[i as usize] * d)
            .sum()
    }
}

/// Weighted DRF over `p`; see the module docs.
pub fn drf(p: &Problem) -> Allocation {
    let m = p.flows();
    let n = p.resources();
    let (offsets, res, demand) = p.raw();
    let (toff, tcol) = p.transpose();
    let mut f = Filler {
        offsets,
        res,
        demand,
        cap: p.capacity(),
        rate: vec![0.0; m],
        active: vec![false; m],
        x: vec![0.0; m],
        load: vec![0.0; n],
        slope: vec![0.0; n],
        exact: Vec::new(),
        toff: &toff,
        tcol: &tcol,
        refl: vec![0.0; n],
        count: vec![0; n],
        version: vec![0; n],
        saturated: vec![false; n],
        heap: BinaryHeap::with_capacity(n),
    };
    let mut done_at: Vec<(f64, u32)> = Vec::with_capacity(m);
    for i in 0..m {
        match p.dominant_demand(i) {
            // blocked by a resource of capacity 0
            None => {}
            // empty bundle: its (zero) demand is met
            Some(d) if d <= 0.0 => f.x[i] = 1.0,
            Some(d) => {
                let w = p.weight(i);
                f.rate[i] = w / d;
                f.active[i] = true;
                done_at.push((d / w, i as u32));
                for k in offsets[i]..offsets[i + 1] {
                    let j = res[k] as usize;
                    f.slope[j] += f.rate[i] * demand[k];
                    f.count[j] += 1;
                }
            }
        }
    }
    f.exact = f.slope.clone();
    done_at.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for j in 0..n {
        if f.count[j] > 0 {
            f.heap.push(Ev {
                lambda: f.cap[j] / f.slope[j],
                lo: 0.0,
                id: j as u32,
                version: 0,
            });
        }
    }
    let mut next_done = 0;
    let mut lambda: f64 = 0.0;
    loop {
        while next_done < done_at.len() && !f.active[done_at[next_done].1 as usize] {
            next_done += 1;
        }
        while let Some(top) = f.heap.peek() {
            let j = top.id as usize;
            if f.saturated[j] || top.version != f.version[j] || f.count[j] == 0 {
                f.heap.pop();
            } else {
                break;
            }
        }
        let l_flow = done_at.get(next_done).map(|e| e.0);
        let l_res = f.heap.peek().map(|e| e.lambda);
        let resource_first = match (l_res, l_flow) {
            (None, None) => break,
            (Some(lr), Some(lf)) => lr <= lf,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if resource_first {
            let Some(ev) = f.heap.pop() else { break };
            lambda = lambda.max(ev.lambda);
            let j = ev.id as usize;
            f.saturated[j] = true;
            for &(i, _) in &tcol[toff[j]..toff[j + 1]] {
                let i = i as usize;
                if f.active[i] {
                    let xi = (f.rate[i] * lambda).min(1.0);
                    f.freeze(i, lambda, xi);
                }
            }
        } else {
            lambda = lambda.max(done_at[next_done].0);
            let i = done_at[next_done].1 as usize;
            next_done += 1;
            f.freeze(i, lambda, 1.0);
        }
    }
    Allocation { fraction: f.x }
}

/// First-fit (pulsar §5's "simple first-fit heuristic"): flows in order of decreasing weight
/// (ties: input order) each take the largest fraction of their bundle that fits in what is
/// left of every resource on their path.
pub fn first_fit(p: &Problem) -> Allocation {
    let mut left = p.capacity().to_vec();
    let mut order: Vec<usize> = (0..p.flows()).collect();
    order.sort_by(|&a, &b| p.weight(b).total_cmp(&p.weight(a)).then(a.cmp(&b)));
    let mut x = vec![0.0; p.flows()];
    for i in order {
        let mut xi: f64 = 1.0;
        for (j, d) in p.demand(i) {
            xi = xi.min(left[j] / d);
        }
        let xi = xi.clamp(0.0, 1.0);
        for (j, d) in p.demand(i) {
            left[j] = (left[j] - xi * d).max(0.0);
        }
        x[i] = xi;
    }
    Allocation { fraction: x }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// The DRF paper's example: 9 CPUs, 18 GB; A's tasks <1, 4>, B's <3, 1>. With unbounded
    /// demand DRF gives A 3 tasks and B 2 tasks (shares 2/3 each).
    #[test]
    fn ghodsi_example() {
        let mut p = Problem::new(vec![9.0, 18.0]).unwrap();
        let t = p.add_tenant(1.0).unwrap();
        // demand 100 tasks each: never met
        p.add_flow(t, 1.0, &[(0, 100.0), (1, 400.0)]).unwrap();
        p.add_flow(t, 1.0, &[(0, 300.0), (1, 100.0)]).unwrap();
        let a = drf(&p);
        assert!(close(a.fraction[0] * 100.0, 3.0), "{:?}", a);
        assert!(close(a.fraction[1] * 100.0, 2.0), "{:?}", a);
    }

    #[test]
    fn demand_caps_free_capacity_for_others() {
        let mut p = Problem::new(vec![10.0]).unwrap();
        let t = p.add_tenant(1.0).unwrap();
        p.add_flow(t, 1.0, &[(0, 2.0)]).unwrap();
        p.add_flow(t, 1.0, &[(0, 20.0)]).unwrap();
        p.add_flow(t, 3.0, &[(0, 20.0)]).unwrap();
        let a = drf(&p);
        assert_eq!(a.fraction[0], 1.0);
        // the remaining 8 split 1:3
        assert!(close(a.fraction[1] * 20.0, 2.0));
        assert!(close(a.fraction[2] * 20.0, 6.0));
    }

    #[test]
    fn zero_capacity_blocks_and_empty_bundles_are_met() {
        let mut p = Problem::new(vec![0.0, 5.0]).unwrap();
        let t = p.add_tenant(1.0).unwrap();
        p.add_flow(t, 1.0, &[(0, 1.0), (1, 1.0)]).unwrap();
        p.add_flow(t, 1.0, &[]).unwrap();
        p.add_flow(t, 1.0, &[(1, 10.0)]).unwrap();
        let a = drf(&p);
        assert_eq!(a.fraction, vec![0.0, 1.0, 0.5]);
    }

    #[test]
    fn first_fit_serves_heavier_flows_first() {
        let mut p = Problem::new(vec![10.0]).unwrap();
        let t = p.add_tenant(1.0).unwrap();
        p.add_flow(t, 1.0, &[(0, 8.0)]).unwrap();
        p.add_flow(t, 2.0, &[(0, 8.0)]).unwrap();
        let a = first_fit(&p);
        assert_eq!(a.fraction, vec![0.25, 1.0]);
    }
}
