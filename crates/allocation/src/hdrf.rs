//! Hierarchical DRF, two levels: tenants, then their flows (Bhattacharya et al. [16], as
//! pulsar §5 uses it for global allocations with weights derived from tenants' guarantees).
//!
//! **Definition.** Tenant `t` (weight `w_t`) has dominant share
//! `dom_t = max_j Σ_{i∈t} A_ij / C_j`, its flows included whether they still grow or not.
//! Progressive filling raises a level `λ`; every tenant with a growing flow keeps
//! `dom_t = w_t·λ`, and inside it every growing flow keeps the same weighted dominant share
//! `μ_t` (`x_i = w_i·μ_t/δ_i`, `δ_i = max_j D_ij/C_j`, as in [`crate::drf`]). A flow stops
//! growing when its demand is met or a resource on its path saturates; a tenant stops when
//! all its flows have. When some of a tenant's flows stop on its dominant resource, the
//! others keep growing without raising `dom_t` until they reach it — they take that share at
//! once, which is what H-DRF's equal *tenant* shares mean.
//!
//! **Computation, by events.** With `U_tj(μ) = F_tj + β_tj·μ` (stopped flows' use plus the
//! growing flows' use per unit of `μ`), `μ_t(λ) = min_j (w_t·λ·C_j − F_tj)/β_tj` over the
//! resources with `β_tj > 0`: piecewise linear in `λ`, so every resource's load is too. Events
//! are resource saturations, flows meeting their demand, and changes of a tenant's binding
//! resource; each costs O(size of the tenant), so the whole allocation is about
//! O(E·k·log E) for E demand entries and tenants of k entries — a tenant with every flow of
//! the datacenter would make it quadratic. Instantaneous catch-ups (the jump above) are
//! resolved at fixed `λ` with the same events, so nothing exceeds capacity during them.
//!
//! The level is a double-double (`Level`) and a tenant restarts a little after the level of
//! its catch-up (`after`): at weights and demands ~10⁵ apart a tenant's μ can grow ~10¹⁵
//! times faster than `λ`, which an f64 level cannot follow (issue 27).
//!
//! With one flow per tenant this is exactly weighted DRF (a property test checks it).

use crate::drf::Ev;
use crate::problem::{Allocation, Problem};
use std::collections::BinaryHeap;

const REL: f64 = 1e-12;

/// How far after `λ`, relative to it, a tenant leaves a catch-up; see [`after`].
const AFTER: f64 = 1e-12;

/// The fill level `λ`, carried as an unevaluated sum `hi + lo` (double-double, ~32 digits).
///
/// A tenant whose dominant resource is pinned by stopped flows grows μ at ~10¹⁵ per unit of
/// `λ`, so a resource can fill within a few ulps of an f64 `λ`; loads and μ computed from
/// `λ − λ_ref` then carried errors of ~10⁻⁷ of a capacity (and an event one ulp away landed
/// on `λ` itself, stopping the fill). Differences of two levels are exact here, and every
/// event time is a level plus an f64 step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Level {
    hi: f64,
    lo: f64,
}

impl Level {
    /// `self + d`, renormalised (Knuth's two-sum).
    fn plus(self, d: f64) -> Level {
        let s = self.hi + d;
        let bb = s - self.hi;
        let err = (self.hi - (s - bb)) + (d - bb);
        let lo = self.lo + err;
        let hi = s + lo;
        Level {
            hi,
            lo: lo - (hi - s),
        }
    }

    /// `self − other` as an f64 (exact to its last bit when the two are close).
    fn minus(self, other: Level) -> f64 {
        let s = self.hi - other.hi;
        let bb = s - self.hi;
        let err = (self.hi - (s - bb)) + (-other.hi - bb);
        s + (err + (self.lo - other.lo))
    }

    fn value(self) -> f64 {
        self.hi + self.lo
    }

    fn max(self, other: Level) -> Level {
        if other.minus(self) > 0.0 {
            other
        } else {
            self
        }
    }
}

/// The level a tenant leaves a catch-up at: a little after `lambda` (relative [`AFTER`]),
/// where its μ bounds are evaluated and from which it grows again.
///
/// When weights and demands are ~10⁵ apart, a flow that stopped on its tenant's dominant
/// resource leaves a sibling that barely uses it: that resource's bound on μ is a line whose
/// value is rounding noise (the tenant's share minus the stopped flows' use, ~10¹¹ − 10¹¹)
/// and whose slope is ~10¹⁸. It crosses the flat line that really binds a few ulps of `λ`
/// later, so evaluated at `λ` the steep line bound μ: events "at the crossing" (and resources
/// saturating under the steep slope) landed on `λ` again, the fill made no progress and
/// stopped flows short of their demand with no resource saturated. At `after(λ)` the steep
/// line has left, the catch-up takes μ to the flat one at once, and the tenant's growth
/// restarts from `after(λ)`, so its shares stay on its lines (nothing runs ahead of `wλ`).
/// Capacity is never exceeded: the catch-up stops at every resource's headroom.
fn after(lambda: Level) -> Level {
    lambda.plus((lambda.hi * AFTER).max(f64::MIN_POSITIVE))
}

/// Below this fraction of its previous value, an incrementally updated sum is recomputed.
const CANCEL: f64 = 1e-3;

struct Hdrf<'a> {
    p: &'a Problem,
    cap: &'a [f64],
    // flows
    /// x_i = r_i·μ_t while growing
    r: Vec<f64>,
    /// μ at which the flow's demand is met
    full_at: Vec<f64>,
    active: Vec<bool>,
    x: Vec<f64>,
    /// per demand entry: index of its (tenant, resource) slot
    slot_of: Vec<u32>,
    // tenants
    /// flows of each tenant sorted by `full_at`: CSR
    t_flows_off: Vec<usize>,
    t_flows: Vec<u32>,
    t_next: Vec<usize>,
    /// (tenant, resource) slots: CSR per tenant
    t_slot_off: Vec<usize>,
    slot_res: Vec<u32>,
    slot_f: Vec<f64>,
    slot_beta: Vec<f64>,
    slot_count: Vec<u32>,
    t_active: Vec<u32>,
    t_mu: Vec<f64>,
    t_slope: Vec<f64>,
    t_ref: Vec<Level>,
    t_version: Vec<u32>,
    t_detached: Vec<bool>,
    // resources
    load: Vec<f64>,
    slope: Vec<f64>,
    refl: Vec<Level>,
    count: Vec<u32>,
    version: Vec<u32>,
    saturated: Vec<bool>,
    dirty: Vec<bool>,
    dirty_list: Vec<u32>,
    toff: Vec<usize>,
    tcol: Vec<(u32, f64)>,
    // queues
    res_heap: BinaryHeap<Ev>,
    ten_heap: BinaryHeap<Ev>,
    work: Vec<u32>,
}

impl<'a> Hdrf<'a> {
    fn new(p: &'a Problem) -> Hdrf<'a> {
        let (m, n, nt) = (p.flows(), p.resources(), p.tenants());
        let (offsets, res, demand) = p.raw();
        let mut r = vec![0.0; m];
        let mut full_at = vec![f64::INFINITY; m];
        let mut active = vec![false; m];
        let mut x = vec![0.0; m];
        for i in 0..m {
            match p.dominant_demand(i) {
                None => {}
                Some(d) if d <= 0.0 => x[i] = 1.0,
                Some(d) => {
                    let w = p.weight(i);
                    r[i] = w / d;
                    full_at[i] = d / w;
                    active[i] = true;
                }
            }
        }
        // flows per tenant, sorted by full_at
        let mut t_flows_off = vec![0usize; nt + 1];
        for i in 0..m {
            t_flows_off[p.tenant(i) + 1] += 1;
        }
        for t in 0..nt {
            t_flows_off[t + 1] += t_flows_off[t];
        }
        let mut fill = t_flows_off.clone();
        let mut t_flows = vec![0u32; m];
        for i in 0..m {
            let t = p.tenant(i);
            t_flows[fill[t]] = i as u32;
            fill[t] += 1;
        }
        for t in 0..nt {
            t_flows[t_flows_off[t]..t_flows_off[t + 1]]
                .sort_by(|&a, &b| full_at[a as usize].total_cmp(&full_at[b as usize]));
        }
        // (tenant, resource) slots
        let mut t_slot_off = vec![0usize; nt + 1];
        let mut slot_res = Vec::new();
        let mut slot_of = vec![0u32; res.len()];
        let mut seen: Vec<u32> = vec![u32::MAX; n];
        for t in 0..nt {
            let first = slot_res.len();
            for &i in &t_flows[t_flows_off[t]..t_flows_off[t + 1]] {
                let i = i as usize;
                for k in offsets[i]..offsets[i + 1] {
                    let j = res[k] as usize;
                    if seen[j] == u32::MAX || (seen[j] as usize) < first {
                        seen[j] = slot_res.len() as u32;
                        slot_res.push(j as u32);
                    }
                    slot_of[k] = seen[j];
                }
            }
            t_slot_off[t + 1] = slot_res.len();
        }
        let ns = slot_res.len();
        let mut slot_beta = vec![0.0; ns];
        let mut slot_count = vec![0u32; ns];
        let mut t_active = vec![0u32; nt];
        let mut count = vec![0u32; n];
        for i in 0..m {
            if active[i] {
                t_active[p.tenant(i)] += 1;
                for k in offsets[i]..offsets[i + 1] {
                    let s = slot_of[k] as usize;
                    slot_beta[s] += r[i] * demand[k];
                    slot_count[s] += 1;
                    count[res[k] as usize] += 1;
                }
            }
        }
        let (toff, tcol) = p.transpose();
        Hdrf {
            p,
            cap: p.capacity(),
            r,
            full_at,
            active,
            x,
            slot_of,
            t_flows_off,
            t_flows,
            t_next: vec![0; nt],
            t_slot_off,
            slot_res,
            slot_f: vec![0.0; ns],
            slot_beta,
            slot_count,
            t_active,
            t_mu: vec![0.0; nt],
            t_slope: vec![0.0; nt],
            t_ref: vec![Level::default(); nt],
            t_version: vec![0; nt],
            t_detached: vec![false; nt],
            load: vec![0.0; n],
            slope: vec![0.0; n],
            refl: vec![Level::default(); n],
            count,
            version: vec![0; n],
            saturated: vec![false; n],
            dirty: vec![false; n],
            dirty_list: Vec::new(),
            toff,
            tcol,
            res_heap: BinaryHeap::new(),
            ten_heap: BinaryHeap::new(),
            work: Vec::new(),
        }
    }

    fn advance_res(&mut self, j: usize, lambda: Level) {
        self.load[j] += self.slope[j] * lambda.minus(self.refl[j]);
        self.refl[j] = lambda;
    }

    fn mark_dirty(&mut self, j: usize) {
        self.version[j] += 1;
        if !self.dirty[j] {
            self.dirty[j] = true;
            self.dirty_list.push(j as u32);
        }
    }

    /// Takes tenant `t` out of the fill at `lambda`: its μ and its resources' loads are brought
    /// to `lambda` and its slope contributions removed.
    fn detach(&mut self, t: usize, lambda: Level) {
        if self.t_detached[t] {
            return;
        }
        self.t_detached[t] = true;
        self.t_mu[t] += self.t_slope[t] * lambda.minus(self.t_ref[t]);
        self.t_ref[t] = lambda;
        self.t_version[t] += 1;
        let s = self.t_slope[t];
        for k in self.t_slot_off[t]..self.t_slot_off[t + 1] {
            let j = self.slot_res[k] as usize;
            self.advance_res(j, lambda);
            let before = self.slope[j];
            self.slope[j] -= self.slot_beta[k] * s;
            if self.slope[j] < CANCEL * before {
                self.slope[j] = self.exact_slope(j);
            }
            self.mark_dirty(j);
        }
        self.t_slope[t] = 0.0;
        self.work.push(t as u32);
    }

    /// Stops flow `i` (its tenant is detached) at fraction `xi`.
    fn freeze(&mut self, i: usize, xi: f64) {
        let (offsets, res, demand) = self.p.raw();
        self.active[i] = false;
        self.x[i] = xi;
        let t = self.p.tenant(i);
        self.t_active[t] -= 1;
        for k in offsets[i]..offsets[i + 1] {
            let s = self.slot_of[k] as usize;
            self.slot_f[s] += xi * demand[k];
            self.slot_count[s] -= 1;
            let before = self.slot_beta[s];
            self.slot_beta[s] = if self.slot_count[s] == 0 {
                0.0
            } else {
                self.slot_beta[s] - self.r[i] * demand[k]
            };
            if self.slot_beta[s] < CANCEL * before {
                self.slot_beta[s] = self.exact_beta(t, s);
            }
            let j = res[k] as usize;
            self.count[j] -= 1;
            if self.count[j] == 0 {
                self.slope[j] = 0.0;
            }
        }
    }

    /// `β` of slot `s` of tenant `t` summed exactly over its growing flows. Subtracting a
    /// large flow's term leaves a residue of about ε·(that term), which can exceed what the
    /// other flows contribute when weights and demands span many orders of magnitude; below
    /// [`CANCEL`] of its previous value a sum is therefore recomputed (sums only fall between
    /// attachments, so this happens a few times per slot).
    fn exact_beta(&self, t: usize, s: usize) -> f64 {
        let (offsets, _, demand) = self.p.raw();
        let mut beta = 0.0;
        for &i in &self.t_flows[self.t_flows_off[t]..self.t_flows_off[t + 1]] {
            let i = i as usize;
            if self.active[i] {
                let entries = offsets[i]..offsets[i + 1];
                for (&slot, &d) in self.slot_of[entries.clone()].iter().zip(&demand[entries]) {
                    if slot as usize == s {
                        beta += self.r[i] * d;
                    }
                }
            }
        }
        beta
    }

    /// Resource `j`'s `d load / d λ` summed exactly over the growing flows of attached
    /// tenants (as [`Hdrf::exact_beta`]).
    fn exact_slope(&self, j: usize) -> f64 {
        self.tcol[self.toff[j]..self.toff[j + 1]]
            .iter()
            .filter(|(i, _)| {
                let i = *i as usize;
                self.active[i] && !self.t_detached[self.p.tenant(i)]
            })
            .map(|&(i, d)| self.r[i as usize] * d * self.t_slope[self.p.tenant(i as usize)])
            .sum()
    }

    /// Resource `j` is full at `lambda`: every flow still growing on it stops.
    fn saturate(&mut self, j: usize, lambda: Level) {
        self.saturated[j] = true;
        for e in self.toff[j]..self.toff[j + 1] {
            let i = self.tcol[e].0 as usize;
            if self.active[i] {
                let t = self.p.tenant(i);
                self.detach(t, lambda);
                let xi = (self.r[i] * self.t_mu[t]).min(1.0);
                self.freeze(i, xi);
            }
        }
    }

    /// The μ bound of slot `k` (β > 0) of tenant `t` at `lambda`, as `(value, slope dμ/dλ)`.
    fn line(&self, t: usize, k: usize, lambda: Level) -> (f64, f64) {
        let j = self.slot_res[k] as usize;
        let wt = self.p.tenant_weight(t);
        let b = self.slot_beta[k];
        (
            (wt * lambda.value() * self.cap[j] - self.slot_f[k]) / b,
            wt * self.cap[j] / b,
        )
    }

    /// Lets detached tenant `t` catch up at fixed `lambda` (flows meeting demand and resources
    /// saturating on the way), then re-attaches it.
    fn process(&mut self, t: usize, lambda: Level) {
        let slots = self.t_slot_off[t]..self.t_slot_off[t + 1];
        loop {
            if self.t_active[t] == 0 {
                self.t_detached[t] = false;
                return;
            }
            let mu = self.t_mu[t];
            let mut target = f64::INFINITY;
            let mut headroom = f64::INFINITY;
            for k in slots.clone() {
                if self.slot_beta[k] > 0.0 {
                    target = target.min(self.line(t, k, after(lambda)).0);
                    let j = self.slot_res[k] as usize;
                    headroom =
                        headroom.min(((self.cap[j] - self.load[j]) / self.slot_beta[k]).max(0.0));
                }
            }
            let next_full = self.next_full(t);
            let to = target.min(next_full).min(mu + headroom);
            if to > mu {
                for k in slots.clone() {
                    if self.slot_beta[k] > 0.0 {
                        let j = self.slot_res[k] as usize;
                        self.load[j] += self.slot_beta[k] * (to - mu);
                    }
                }
                self.t_mu[t] = to;
            }
            let mu = self.t_mu[t];
            let mut changed = false;
            // flows whose demand is met
            let fl = self.t_flows_off[t]..self.t_flows_off[t + 1];
            while self.t_next[t] < fl.len() {
                let i = self.t_flows[fl.start + self.t_next[t]] as usize;
                if !self.active[i] {
                    self.t_next[t] += 1;
                } else if self.full_at[i] <= mu * (1.0 + REL) {
                    self.freeze(i, 1.0);
                    self.t_next[t] += 1;
                    changed = true;
                } else {
                    break;
                }
            }
            // resources that filled up
            for k in slots.clone() {
                let j = self.slot_res[k] as usize;
                if !self.saturated[j]
                    && self.count[j] > 0
                    && self.load[j] >= self.cap[j] * (1.0 - REL)
                {
                    self.saturate(j, lambda);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        self.attach(t, lambda);
    }

    fn next_full(&mut self, t: usize) -> f64 {
        let fl = self.t_flows_off[t]..self.t_flows_off[t + 1];
        while self.t_next[t] < fl.len() {
            let i = self.t_flows[fl.start + self.t_next[t]] as usize;
            if self.active[i] {
                return self.full_at[i];
            }
            self.t_next[t] += 1;
        }
        f64::INFINITY
    }

    /// Puts tenant `t` back into the fill at `lambda` with the slope of its binding resource.
    fn attach(&mut self, t: usize, lambda: Level) {
        self.t_detached[t] = false;
        let slots = self.t_slot_off[t]..self.t_slot_off[t + 1];
        let mu = self.t_mu[t];
        // the tenant grows again from `at` (see `after`); the lines are evaluated there
        let at = after(lambda);
        // binding lines: value at (or below) μ; among them the least slope binds for λ > λ0
        let mut min_val = f64::INFINITY;
        for k in slots.clone() {
            if self.slot_beta[k] > 0.0 {
                min_val = min_val.min(self.line(t, k, at).0);
            }
        }
        if !min_val.is_finite() {
            return;
        }
        let tie = mu.max(min_val) + 1e-9 * mu.abs().max(min_val.abs()).max(1e-300);
        let mut s = f64::INFINITY;
        for k in slots.clone() {
            if self.slot_beta[k] > 0.0 {
                let (v, sl) = self.line(t, k, at);
                if v <= tie {
                    s = s.min(sl);
                }
            }
        }
        self.t_slope[t] = s;
        self.t_ref[t] = at;
        for k in slots.clone() {
            let j = self.slot_res[k] as usize;
            self.advance_res(j, lambda);
            // the load's line passes through this tenant's use at `at`, not at `lambda`
            self.load[j] -= self.slot_beta[k] * s * at.minus(lambda);
            self.slope[j] += self.slot_beta[k] * s;
            self.mark_dirty(j);
        }
        // next tenant event: a flow meets its demand, or another resource binds (at λ⁺ or
        // later, see `line`)
        let mut step = (self.next_full(t) - mu).max(0.0) / s;
        for k in slots {
            if self.slot_beta[k] > 0.0 {
                let (v, sl) = self.line(t, k, at);
                if sl < s && v > tie {
                    step = step.min((v - mu) / (s - sl));
                }
            }
        }
        self.t_version[t] += 1;
        if step.is_finite() {
            let next = at.plus(step);
            self.ten_heap.push(Ev {
                lambda: next.hi,
                lo: next.lo,
                id: t as u32,
                version: self.t_version[t],
            });
        }
    }

    fn drain(&mut self, lambda: Level) {
        while let Some(t) = self.work.pop() {
            let t = t as usize;
            if self.t_detached[t] {
                self.process(t, lambda);
            }
        }
        for d in std::mem::take(&mut self.dirty_list) {
            let j = d as usize;
            self.dirty[j] = false;
            if self.saturated[j] || self.count[j] == 0 || self.slope[j] <= 0.0 {
                continue;
            }
            let at = self.refl[j].plus(((self.cap[j] - self.load[j]) / self.slope[j]).max(0.0));
            self.res_heap.push(Ev {
                lambda: at.hi,
                lo: at.lo,
                id: j as u32,
                version: self.version[j],
            });
        }
    }

    fn run(mut self) -> Allocation {
        for t in 0..self.p.tenants() {
            if self.t_active[t] > 0 {
                self.t_detached[t] = true;
                self.work.push(t as u32);
            }
        }
        let mut lambda = Level::default();
        self.drain(lambda);
        // each event stops a flow, fills a resource or changes a tenant's binding resource
        let mut budget = 64 * (self.p.flows() + self.p.resources() + self.p.tenants()) + 64;
        while budget > 0 {
            budget -= 1;
            while let Some(e) = self.res_heap.peek() {
                let j = e.id as usize;
                if self.saturated[j] || e.version != self.version[j] || self.count[j] == 0 {
                    self.res_heap.pop();
                } else {
                    break;
                }
            }
            while let Some(e) = self.ten_heap.peek() {
                let t = e.id as usize;
                if e.version != self.t_version[t] || self.t_active[t] == 0 {
                    self.ten_heap.pop();
                } else {
                    break;
                }
            }
            let lr = self.res_heap.peek().map(|e| (e.lambda, e.lo));
            let lt = self.ten_heap.peek().map(|e| (e.lambda, e.lo));
            let resource_first = match (lr, lt) {
                (None, None) => break,
                (Some(a), Some(b)) => a <= b,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            if resource_first {
                let Some(e) = self.res_heap.pop() else { break };
                lambda = lambda.max(Level {
                    hi: e.lambda,
                    lo: e.lo,
                });
                self.saturate(e.id as usize, lambda);
            } else {
                let Some(e) = self.ten_heap.pop() else { break };
                lambda = lambda.max(Level {
                    hi: e.lambda,
                    lo: e.lo,
                });
                self.detach(e.id as usize, lambda);
            }
            self.drain(lambda);
        }
        // any flow still growing (only if the budget ran out) keeps what it has
        for i in 0..self.p.flows() {
            if self.active[i] {
                let t = self.p.tenant(i);
                let mu = self.t_mu[t] + self.t_slope[t] * lambda.minus(self.t_ref[t]);
                self.x[i] = (self.r[i] * mu).clamp(0.0, 1.0);
            }
        }
        Allocation { fraction: self.x }
    }
}

/// Two-level H-DRF over `p` (tenants, then flows); see the module docs.
pub fn hdrf(p: &Problem) -> Allocation {
    Hdrf::new(p).run()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    /// Tenant A has three flows on link 0, tenant B one: per-flow DRF gives B a quarter,
    /// H-DRF gives each tenant half.
    #[test]
    fn tenants_share_before_flows() {
        let mut p = Problem::new(vec![12.0]).unwrap();
        let a = p.add_tenant(1.0).unwrap();
        let b = p.add_tenant(1.0).unwrap();
        for _ in 0..3 {
            p.add_flow(a, 1.0, &[(0, 100.0)]).unwrap();
        }
        p.add_flow(b, 1.0, &[(0, 100.0)]).unwrap();
        let h = hdrf(&p);
        for i in 0..3 {
            assert!(close(h.fraction[i] * 100.0, 2.0), "{h:?}");
        }
        assert!(close(h.fraction[3] * 100.0, 6.0), "{h:?}");
        let d = crate::drf::drf(&p);
        assert!(close(d.fraction[3] * 100.0, 3.0), "{d:?}");
    }

    /// Weights 3:2:1 split one appliance 3:2:1 (pulsar Fig. 14's guarantee ratio).
    #[test]
    fn tenant_weights_split_spare_capacity() {
        let mut p = Problem::new(vec![6000.0]).unwrap();
        for w in [3.0, 2.0, 1.0] {
            let t = p.add_tenant(w).unwrap();
            p.add_flow(t, 1.0, &[(0, 1e6)]).unwrap();
            p.add_flow(t, 1.0, &[(0, 1e6)]).unwrap();
        }
        let h = hdrf(&p);
        let per_tenant: Vec<f64> = (0..3)
            .map(|t| (h.fraction[2 * t] + h.fraction[2 * t + 1]) * 1e6)
            .collect();
        assert!(close(per_tenant[0], 3000.0), "{per_tenant:?}");
        assert!(close(per_tenant[1], 2000.0), "{per_tenant:?}");
        assert!(close(per_tenant[2], 1000.0), "{per_tenant:?}");
    }

    /// A tenant whose flow stops on its dominant resource lets its other flow catch up to the
    /// same tenant share at once (the jump), without exceeding any capacity.
    #[test]
    fn blocked_flow_lets_its_sibling_catch_up() {
        // link 0 (cap 2) carries A's flow 0 and B's flow; link 1 (cap 10) carries A's flow 1
        let mut p = Problem::new(vec![2.0, 10.0]).unwrap();
        let a = p.add_tenant(1.0).unwrap();
        let b = p.add_tenant(1.0).unwrap();
        p.add_flow(a, 1.0, &[(0, 100.0)]).unwrap();
        p.add_flow(a, 1.0, &[(1, 100.0)]).unwrap();
        p.add_flow(b, 1.0, &[(0, 100.0)]).unwrap();
        let h = hdrf(&p);
        let u = h.usage(&p);
        assert!(
            u[0] <= 2.0 * (1.0 + 1e-12) && u[1] <= 10.0 * (1.0 + 1e-12),
            "{u:?}"
        );
        // link 0 split 1:1, then A's flow 1 takes all of link 1 (nobody else wants it)
        assert!(close(h.fraction[0] * 100.0, 1.0), "{h:?}");
        assert!(close(h.fraction[2] * 100.0, 1.0), "{h:?}");
        assert!(close(h.fraction[1] * 100.0, 10.0), "{h:?}");
    }

    /// The catch-up can fill a resource on the way: A's link-1 flow jumps from 25 to the
    /// tenant share 50 when link 0 fills, which fills link 1 and stops C there.
    #[test]
    fn catch_up_stops_at_a_resource_that_fills() {
        let mut p = Problem::new(vec![4.0, 100.0]).unwrap();
        let a = p.add_tenant(1.0).unwrap();
        let b = p.add_tenant(1.0).unwrap();
        let c = p.add_tenant(1.0).unwrap();
        p.add_flow(a, 1.0, &[(0, 100.0)]).unwrap();
        p.add_flow(a, 1.0, &[(0, 100.0)]).unwrap();
        p.add_flow(a, 1.0, &[(1, 100.0)]).unwrap();
        p.add_flow(b, 1.0, &[(0, 100.0)]).unwrap();
        p.add_flow(c, 1.0, &[(1, 1000.0)]).unwrap();
        let h = hdrf(&p);
        let got: Vec<f64> = (0..5).map(|i| h.flow(&p, i).map(|e| e.1).sum()).collect();
        let want = [1.0, 1.0, 50.0, 2.0, 50.0];
        for (g, w) in got.iter().zip(want) {
            assert!(close(*g, w), "{got:?}");
        }
    }

    /// Regressions of issue 27 (found by `tests/integration/extremes.rs`): one tenant whose
    /// dominant resource is pinned by a stopped flow while a sibling barely uses it. H-DRF
    /// stopped the sibling short of its demand with no resource saturated (events landed on
    /// the same f64 level, or a resource filled within an ulp of it).
    #[test]
    fn pinned_dominant_resource_does_not_stop_a_sibling_short() {
        let mut p = Problem::new(vec![1e12, 2932417163.181276]).unwrap();
        let t = p.add_tenant(0.001).unwrap();
        p.add_flow(t, 1.0, &[(0, 0.001), (1, 1e12)]).unwrap();
        p.add_flow(t, 1000.0, &[(0, 6.281182399011466)]).unwrap();
        let h = hdrf(&p);
        // flow 0 grows until link 1 is full
        assert!(close(h.usage(&p)[1], 2932417163.181276), "{h:?}");

        let mut p = Problem::new(vec![298.6368140776545, 2422574333.671735]).unwrap();
        let t = p.add_tenant(0.001).unwrap();
        p.add_flow(t, 1000.0, &[(1, 679080438.2419434)]).unwrap();
        p.add_flow(t, 1.0, &[(0, 1e12), (1, 0.001)]).unwrap();
        p.add_flow(t, 1000.0, &[(0, 9.83423861452965)]).unwrap();
        let h = hdrf(&p);
        assert!(close(h.usage(&p)[0], 298.6368140776545), "{h:?}");
        assert!(
            close(h.fraction[0], 1.0) && close(h.fraction[2], 1.0),
            "{h:?}"
        );
    }
}
