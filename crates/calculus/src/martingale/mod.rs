//! Martingale-based stochastic network calculus ([`crate::Method::SncMartingale`]): latency
//! bounds at a percentile that replace the union bound over time of the MGF calculus
//! ([`crate::snc`]) by Doob's inequality for an exponential martingale (Ciucu, Poloczek and
//! Schmitt, "Sharp bounds in stochastic network calculus", SIGMETRICS 2013; Poloczek and Ciucu,
//! "Scheduling analysis with martingales", Performance Evaluation 2014), applied to the
//! per-step MMPPs `tailbound-curves` fits (exponential or empirical work per arrival, batches
//! included), at FIFO-within-level, static-priority queues, over SNC-Meister's paths of one or
//! two queues with the martingale localised to one time index and the others covered by a
//! coarse union bound (in the spirit of Bouillard, "Stochastic network calculus with localized
//! application of martingales", 2022). No I/O, no clock; nothing non-finite leaves it.
//!
//! * [`chain`]: one flow's envelope at θ: ρ(θ), κ(θ), κ_palm(θ).
//! * this module: which flows a flow's bound involves, the bound of one queue and of a
//!   two-queue path, the search over θ and the block length, and a per-thread cache of the
//!   envelopes (the admission engine bounds the same flows decision after decision).
//!
//! # Units
//!
//! Discrete time in the flows' common MMPP step Δ [s] (10 µs): a queue of rate R [work/s]
//! serves C = R·Δ [work/step]; θ is in [1/work]; ρ in [work/step]; delays come out in steps
//! and leave as steps × Δ [s]. In each step a flow in state i emits one arrival (a request, or
//! a batch of requests with the fitter's `batch_gap_s`) with probability p_i, of work W_i;
//! arrivals come at the start of the step and the queue serves C during it.
//!
//! # One flow
//!
//! Let φ_i(θ) = E[e^{θW_i}], M_i(θ) = 1 − p_i + p_i φ_i(θ), D = diag(M), P the per-step
//! transitions and π their stationary law. Going *back* in time from a step, the states form
//! the reversed chain P̃ = D_π⁻¹ Pᵀ D_π (stationary too, with the same π), and the arrival of
//! reversed step k depends on its state Y_k alone. With λ = sp(P̃D) = sp(PD) = e^{θρ(θ)} (the
//! ρ of SNC-Meister's Table 1) and h > 0 the right Perron vector of P̃D,
//!
//! M_n = h(Y_{n−1}) · e^{θ S_n} · λ^{−n},  S_n = arrivals of reversed steps 0..n−1,
//!
//! is a martingale: E[h(Y_n) e^{θ a_n} | past] = (P̃Dh)(Y_{n−1}) = λ h(Y_{n−1}). Writing
//! u = D_π D h, the equation P̃Dh = λh reads uᵀ(PD) = λuᵀ: u is the left Perron vector of PD
//! and h_i = u_i/(π_i M_i), so nothing needs P̃ itself. The martingale's start value and
//! lower bound give the prefactors
//!
//! κ(θ) = E[M_1]/min h = Σ_i u_i /(λ·min h),
//! κ_palm(θ) = E[M_1 | the flow arrives at reversed step 0]/min h
//!           = Σ_i (π_i p_i/p̄)·φ_i·h_i /(λ·min h),  p̄ = Σ π_i p_i,
//!
//! (the second is the view of one of the flow's own arrivals: its state is drawn in proportion
//! to π_i p_i and its own work W_i is certain; given that state the past is the reversed chain
//! again, since an arrival depends on its step's state only). Two consequences are used
//! below: for any window of n steps, E[e^{θ A(n)}] ≤ κ·λⁿ; and for a queue of rate C ≥ ρ(θ)
//! fed by the flow alone, P(sup_n (S_n − nC) > b) ≤ κ e^{−θb} (optional stopping of M at the
//! first crossing, where M ≥ min h·e^{θb}). Independent flows multiply: the product of their
//! martingales is a martingale for the joint past, its expectation the product of theirs.
//! Unlike the MGF calculus there is no sum over the time of the crossing, which is what the
//! SNC-Meister bound pays as ln(1 − e^{θ(ρ_A+ρ_S)}) per queue and per convolution.
//!
//! # The delay of a flow's arrival at one queue
//!
//! Flow f at level ℓ arrives (its batch, work W) at step t at a queue of rate C. Ahead of its
//! last bit are the work of levels ≤ ℓ present after step t's arrivals and the arrivals of
//! levels < ℓ (set H) after t; same-level flows (set L) behind it in FIFO order do not count,
//! lower levels are preempted (the calculus is fluid; packets are allowed for by the
//! callers, `sim::packetization_allowance_s`). So with m = ⌈d⌉, delay > d implies
//!
//! sup_{j≥0} [A_{H∪L∪f}(t−j..t) − C·j] + A_H(t+1..t+m) > C·d.
//!
//! In reversed steps from t+m (H from 0, L and f from m, f's first step being its own
//! arrival), this is a crossing of S_N − C·N > C(d − m − 1) at some N ≥ m+1; Doob from m+1
//! gives, for every θ with ρ_H + ρ_L + ρ_f ≤ C,
//!
//! P(delay > d) ≤ Π_{H∪L} κ_g · κ_palm,f · exp(−θ[C·d − (m+1)ρ_H − ρ_L − ρ_f]).
//!
//! This is a per-arrival (Palm) statement: the delay of the last bit of one of f's arrival
//! events, the quantity a replay's per-request percentile sees, where SNC-Meister's bound is
//! time-stationary. It is never below the exact M/G/1 sojourn of the same model
//! ([`crate::mg1::CompoundPoisson::sojourn_quantile`]), which the tests check.
//!
//! # Two queues (SNC-Meister's paths)
//!
//! f crosses q1 (its first hop) then q2. At levels ≤ ℓ: B = other flows crossing q1 then q2
//! (same source host, same destination: SNC-Meister's key idea 1 subtracts them from the
//! tandem), X1 = other flows at q1 only, X2 = flows at q2 that come from another queue p
//! (their first hop) or start at q2. Removing the same-level bits of X1 and B that arrive after
//! t changes nothing for f (they are behind f at every queue they share with it), and the
//! remaining system is bounded by the blind-multiplexing tandem's sample path (pay
//! multiplexing only once): delay > d implies, for some t0 ≤ t1 ≤ t + d,
//!
//! A_f(t0,t] + A_{B_L}(t0,t] + A_{B_H}(t0,t+d] + A_{X1_L}(t0, t1∧t] + A_{X1_H}(t0,t1]
//!   + A^{q2}_{X2}(t1,t+d] > C1(t1 − t0) + C2(t + d − t1).
//!
//! X2's arrivals at q2 are departures of p: over (v, t+d] they are at most p's backlog at v
//! (of levels ≤ ℓ) plus their own arrivals at p after v. The hand-off time t1 is covered by a
//! union over blocks of τ steps (its block's end as v, X1 counted from the block's start, so
//! each block over-counts τ steps); within a block, t0 is covered by Doob's inequality on the
//! martingale of f, B and X1, as above. Per block, the X2 terms are independent of that
//! martingale and enter as *lumps*: their exponential moment multiplies the bound. For an
//! upstream p with relayed flows R_p and others O_p, the lump L_p = R_p(window) + Q_p has
//!
//! E[e^{θL_p}] ≤ E[e^{θR_p(window)}] + ∫₀^∞ θe^{θy} min(U_p, G_p e^{−θ'y}) dy,
//!
//! where U_p = P(Q_p > 0) is p's utilisation by levels ≤ ℓ (exact for a stationary fluid
//! queue) and G_p e^{−θ'y} the Doob bound of p's own walk at some θ' > θ. The blocks' terms
//! fall geometrically once t1 is past t (at the rate of q2's leftover); they are summed
//! explicitly, then bounded by a geometric tail whose ratio bounds every later one.
//! Without X2 (and C2 ≥ C1) the hand-off costs nothing: one Doob term.
//!
//! # Dependency groups
//!
//! Flows of one group may be adversarially correlated, so their martingales do not multiply.
//! Such a flow in a Doob walk is moved out of it: the walk keeps the capacity c_g = ρ_g(θ'')
//! for some θ'' and the flow's excess over that capacity, Y_g = sup (S_g − c_g·n), becomes a
//! lump with P(Y_g > y) ≤ κ_g e^{−θ''y} from its own martingale. Lumps that share a group are
//! combined by Hölder's inequality (equal exponents k for k lumps, evaluated at a grid θ ≥ kθ,
//! since E[e^{xL}]^{1/x} grows with x); independent ones multiply.
//!
//! # Scope
//!
//! Paths of one or two queues whose other flows either start at the queue or come from a
//! queue that is their first hop: SNC-Meister's topologies and every network the scenario
//! crate builds. Anything else is [`CalculusError::Unsupported`] naming the flow.
//!
//! # Search
//!
//! θ runs over the grid 2^{k/8} [1/work] (envelopes are cached per grid point, shared by every
//! bound of an analysis and, per thread, across analyses), from the largest θ where the
//! queues are stable downwards while the bound improves; per θ the block length is the better
//! of two (θ·τ·gap = 0.4 or 1.2 for q2's leftover gap) and d solves P(delay > d) = ε by
//! bisection. Any θ and τ give a valid bound; the search only makes it small.

mod chain;

pub use chain::{Envelope, Tilt};

use crate::{
    effective_slo, tenant_result, Bound, BoundOptions, CalculusError, FlowBound, TenantBound,
};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use tailbound_model::{Mmpp, Network, SizeModel};

/// θ grid points per doubling.
const PER_OCTAVE: f64 = 8.0;

/// θ of grid point k [1/work].
fn grid_theta(k: i32) -> f64 {
    (k as f64 / PER_OCTAVE).exp2()
}

/// The least grid point at or above θ.
fn grid_at_least(theta: f64) -> i32 {
    let k = (theta.log2() * PER_OCTAVE).ceil();
    let k = k.clamp(i32::MIN as f64 / 2.0, i32::MAX as f64 / 2.0) as i32;
    if grid_theta(k) < theta {
        k + 1
    } else {
        k
    }
}

pub(crate) fn bound_tenants(
    net: &Network,
    priorities: &[u32],
    tenants: &[usize],
    opts: &BoundOptions,
) -> Result<Vec<TenantBound>, CalculusError> {
    let analysis = Analysis::new(net, priorities)?;
    let mut out = Vec::with_capacity(tenants.len());
    for &t in tenants {
        let spec = &net.tenants[t];
        let slo = effective_slo(spec.slo, opts);
        let epsilon = slo.percentile.epsilon() / spec.flows.len().max(1) as f64;
        let mut flows = Vec::with_capacity(spec.flows.len());
        for &f in &spec.flows {
            let bound = analysis.flow_bound(f, epsilon)?;
            tracing::debug!(tenant = %spec.name, flow = %net.flows[f].name, ?bound, "martingale bound");
            flows.push(FlowBound {
                flow: f,
                name: net.flows[f].name.clone(),
                epsilon,
                bound,
            });
        }
        let priority = priorities.get(t).copied().unwrap_or(0);
        out.push(tenant_result(net, t, priority, opts, flows));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Envelopes, cached per thread

/// An envelope and its tilts at the grid points asked for so far.
struct Cached {
    env: Envelope,
    tilts: RefCell<HashMap<i32, Option<Tilt>>>,
}

/// Envelopes kept per thread (the admission engine re-bounds the same flows at every
/// decision); cleared when it holds this many.
const CACHE_LIMIT: usize = 4096;

thread_local! {
    static CACHE: RefCell<(usize, HashMap<u64, Vec<(Mmpp, Rc<Cached>)>>)> =
        RefCell::new((0, HashMap::new()));
}

fn fingerprint(m: &Mmpp) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.step_s.to_bits().hash(&mut h);
    for s in &m.states {
        s.arrival_prob.to_bits().hash(&mut h);
        match &s.sizes {
            SizeModel::Exponential { mean } => mean.to_bits().hash(&mut h),
            SizeModel::Empirical { atoms } => {
                for a in atoms {
                    a[0].to_bits().hash(&mut h);
                    a[1].to_bits().hash(&mut h);
                }
            }
        }
    }
    for row in &m.transition {
        for p in row {
            p.to_bits().hash(&mut h);
        }
    }
    h.finish()
}

fn cached_envelope(m: &Mmpp) -> Result<Rc<Cached>, String> {
    let key = fingerprint(m);
    let hit = CACHE.with(|c| {
        c.borrow()
            .1
            .get(&key)
            .and_then(|v| v.iter().find(|(mm, _)| mm == m).map(|(_, e)| e.clone()))
    });
    if let Some(e) = hit {
        return Ok(e);
    }
    let e = Rc::new(Cached {
        env: Envelope::new(m)?,
        tilts: RefCell::new(HashMap::new()),
    });
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 >= CACHE_LIMIT {
            c.0 = 0;
            c.1.clear();
        }
        c.0 += 1;
        c.1.entry(key).or_default().push((m.clone(), e.clone()));
    });
    Ok(e)
}

impl Cached {
    fn at(&self, k: i32) -> Option<Tilt> {
        if let Some(t) = self.tilts.borrow().get(&k) {
            return *t;
        }
        let t = self.env.at(grid_theta(k));
        self.tilts.borrow_mut().insert(k, t);
        t
    }
}

// ---------------------------------------------------------------------------------------------
// The analysis

/// A flow in a Doob walk: it counts from reversed step `start` on.
#[derive(Debug, Clone, Copy)]
struct Member {
    flow: usize,
    start: f64,
    /// the flow's own arrival is the first step (f's view)
    palm: bool,
}

/// A random quantity added to a walk, independent of the walk's martingale.
#[derive(Debug, Clone)]
enum Lump {
    /// a flow's arrivals over a fixed window of `len` steps
    Window { flow: usize, len: f64 },
    /// an upstream queue's backlog plus its relayed flows' arrivals after it
    Upstream(Rc<Upstream>),
    /// a dependent walk member's excess over capacity ρ(θ at grid point `tail`)
    Excess { flow: usize, palm: bool, tail: i32 },
}

/// Upstream queue p of relayed cross traffic, at one window length.
#[derive(Debug)]
struct Upstream {
    /// flows at p going on to the analysed queue (levels ≤ ℓ)
    relayed: Vec<usize>,
    /// the other flows at p (levels ≤ ℓ)
    others: Vec<usize>,
    /// p's rate [work/step]
    rate: f64,
    /// p's utilisation by levels ≤ ℓ
    util: f64,
    /// window of the relayed arrivals after the backlog [steps]
    window: f64,
    /// θ' of p's tail bound (grid point)
    tail: i32,
}

/// P(∃N ≥ n_s: Σ_members S_g[start_g, N) + Σ lumps > rate·N + c).
#[derive(Debug, Clone)]
struct Walk {
    members: Vec<Member>,
    rate: f64,
    n_s: f64,
    c: f64,
    lumps: Vec<Lump>,
}

/// ln of a walk's bound split into the part of the martingale walk (exponent of the crossing)
/// and the part of the lumps, plus the lumps' growth per step of window.
#[derive(Debug, Clone, Copy)]
struct WalkValue {
    walk: f64,
    lumps: f64,
}

impl WalkValue {
    fn total(self) -> f64 {
        self.walk + self.lumps
    }
}

/// The flows a bound of one flow involves, by role.
#[derive(Debug, Clone)]
enum Plan {
    One {
        rate: f64,
        high: Vec<usize>,
        same: Vec<usize>,
    },
    Two {
        c1: f64,
        c2: f64,
        b_high: Vec<usize>,
        b_same: Vec<usize>,
        x1_high: Vec<usize>,
        x1_same: Vec<usize>,
        /// X2 flows that start at q2
        x2_src: Vec<usize>,
        /// upstream queues of relayed X2 flows: (relayed, others, rate, utilisation)
        x2_up: Vec<(Vec<usize>, Vec<usize>, f64, f64)>,
    },
}

struct Analysis<'a> {
    net: &'a Network,
    level: Vec<u32>,
    /// dependency group per flow
    group: Vec<Option<usize>>,
    step_s: f64,
    env: Vec<Rc<Cached>>,
}

fn unsupported(net: &Network, f: usize, why: String) -> CalculusError {
    CalculusError::Unsupported(format!(
        "the snc-martingale analysis cannot bound flow {:?}: {why}; it covers paths of one or \
         two queues whose cross traffic starts there or comes from its first hop (use \
         --method snc-meister for other networks)",
        net.flows[f].name
    ))
}

impl<'a> Analysis<'a> {
    fn new(net: &'a Network, priorities: &[u32]) -> Result<Analysis<'a>, CalculusError> {
        let mut groups: Vec<&str> = net
            .tenants
            .iter()
            .filter_map(|t| t.group.as_deref())
            .collect();
        groups.sort_unstable();
        groups.dedup();
        let mut step_s: Option<f64> = None;
        let mut env = Vec::with_capacity(net.flows.len());
        for flow in &net.flows {
            let Some(m) = &flow.mmpp else {
                return Err(CalculusError::MissingModel {
                    flow: flow.name.clone(),
                    model: "MMPP",
                    method: "snc-martingale",
                });
            };
            match step_s {
                None => step_s = Some(m.step_s),
                Some(a) if (a - m.step_s).abs() > 1e-12 * a.abs() => {
                    return Err(CalculusError::MixedSteps { a, b: m.step_s });
                }
                Some(_) => {}
            }
            env.push(
                cached_envelope(m)
                    .map_err(|e| CalculusError::Invalid(format!("flow {:?}: {e}", flow.name)))?,
            );
        }
        let level = net
            .flows
            .iter()
            .map(|f| priorities.get(f.tenant).copied().unwrap_or(0))
            .collect();
        let group = net
            .flows
            .iter()
            .map(|f| {
                net.tenants
                    .get(f.tenant)
                    .and_then(|t| t.group.as_deref())
                    .and_then(|g| groups.binary_search(&g).ok())
            })
            .collect();
        Ok(Analysis {
            net,
            level,
            group,
            step_s: step_s.unwrap_or(1e-5),
            env,
        })
    }

    fn tilt(&self, f: usize, k: i32) -> Option<Tilt> {
        self.env[f].at(k)
    }

    /// Σ ρ of `flows` at grid point k.
    fn rho(&self, flows: &[usize], k: i32) -> Option<f64> {
        flows
            .iter()
            .try_fold(0.0, |acc, &g| Some(acc + self.tilt(g, k)?.rho))
    }

    /// The other flows at queue q of levels ≤ `lvl`.
    fn at_queue(&self, q: usize, lvl: u32, not: usize) -> impl Iterator<Item = usize> + '_ {
        self.net
            .flows
            .iter()
            .enumerate()
            .filter(move |(g, fl)| *g != not && self.level[*g] <= lvl && fl.path.contains(&q))
            .map(|(g, _)| g)
    }

    fn first_hop(&self, g: usize) -> usize {
        self.net.flows[g].path[0]
    }

    fn plan(&self, f: usize) -> Result<Plan, CalculusError> {
        let path = &self.net.flows[f].path;
        let lvl = self.level[f];
        let step = self.step_s;
        let rate = |q: usize| self.net.queues[q].rate * step;
        let not_first = |g: usize, q: usize| {
            unsupported(
                self.net,
                f,
                format!(
                    "flow {:?} reaches queue {:?} from another queue",
                    self.net.flows[g].name, self.net.queues[q].name
                ),
            )
        };
        match path.as_slice() {
            &[q] => {
                let (mut high, mut same) = (Vec::new(), Vec::new());
                for g in self.at_queue(q, lvl, f) {
                    if self.first_hop(g) != q {
                        return Err(not_first(g, q));
                    }
                    if self.level[g] < lvl {
                        high.push(g);
                    } else {
                        same.push(g);
                    }
                }
                Ok(Plan::One {
                    rate: rate(q),
                    high,
                    same,
                })
            }
            &[q1, q2] => {
                let (mut b_high, mut b_same, mut x1_high, mut x1_same) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for g in self.at_queue(q1, lvl, f) {
                    if self.first_hop(g) != q1 {
                        return Err(not_first(g, q1));
                    }
                    let gp = &self.net.flows[g].path;
                    let both = gp.len() >= 2 && gp[1] == q2;
                    match (both, self.level[g] < lvl) {
                        (true, true) => b_high.push(g),
                        (true, false) => b_same.push(g),
                        (false, true) => x1_high.push(g),
                        (false, false) => x1_same.push(g),
                    }
                }
                let mut x2_src = Vec::new();
                let mut ups: BTreeMap<usize, ()> = BTreeMap::new();
                for g in self.at_queue(q2, lvl, f) {
                    let gp = &self.net.flows[g].path;
                    let pos = gp.iter().position(|&x| x == q2).unwrap_or(0);
                    if pos == 0 {
                        x2_src.push(g);
                    } else if gp[pos - 1] == q1 {
                        // B: already counted at q1 (its first hop, checked there)
                    } else if pos == 1 {
                        ups.insert(gp[0], ());
                    } else {
                        return Err(not_first(g, q2));
                    }
                }
                let mut x2_up = Vec::new();
                for &p in ups.keys() {
                    let (mut relayed, mut others) = (Vec::new(), Vec::new());
                    let mut work = 0.0;
                    for g in self.at_queue(p, lvl, usize::MAX) {
                        if self.first_hop(g) != p {
                            return Err(not_first(g, p));
                        }
                        let gp = &self.net.flows[g].path;
                        if gp.len() >= 2 && gp[1] == q2 {
                            relayed.push(g);
                        } else {
                            others.push(g);
                        }
                        work += self.env[g].env.mean_work_per_step();
                    }
                    x2_up.push((relayed, others, rate(p), work / rate(p)));
                }
                Ok(Plan::Two {
                    c1: rate(q1),
                    c2: rate(q2),
                    b_high,
                    b_same,
                    x1_high,
                    x1_same,
                    x2_src,
                    x2_up,
                })
            }
            _ => Err(unsupported(
                self.net,
                f,
                format!("its path crosses {} queues", path.len()),
            )),
        }
    }

    /// The bound of flow `f` at violation probability `epsilon`.
    fn flow_bound(&self, f: usize, epsilon: f64) -> Result<Bound, CalculusError> {
        if !self.env[f].env.arrives() {
            // no arrival, no delay
            return Ok(Bound::Within(0.0));
        }
        let plan = self.plan(f)?;
        let ln_eps = epsilon.ln();
        let solve = |k: i32| -> Option<f64> {
            match &plan {
                Plan::One { rate, high, same } => self.one_queue(f, k, *rate, high, same, ln_eps),
                Plan::Two { .. } => self.two_queues(f, k, &plan, ln_eps),
            }
        };
        // largest grid θ where the queues are stable (a necessary condition, monotone in θ)
        let involved = self.involved(f, &plan);
        let theta_sup = involved
            .iter()
            .map(|&g| self.env[g].env.theta_sup())
            .fold(f64::INFINITY, f64::min);
        let stable = |k: i32| -> bool {
            let sum = |flows: &[usize]| self.rho(flows, k);
            match &plan {
                Plan::One { rate, high, same } => {
                    let all: Vec<usize> = high.iter().chain(same).copied().chain([f]).collect();
                    sum(&all).is_some_and(|r| r <= *rate)
                }
                Plan::Two {
                    c1,
                    c2,
                    b_high,
                    b_same,
                    x1_high,
                    x1_same,
                    x2_src,
                    x2_up,
                } => {
                    let q1: Vec<usize> = [f]
                        .into_iter()
                        .chain(b_high.iter().chain(b_same).chain(x1_high).chain(x1_same).copied())
                        .collect();
                    let mut q2: Vec<usize> = [f]
                        .into_iter()
                        .chain(b_high.iter().chain(b_same).chain(x2_src).copied())
                        .collect();
                    for (r, _, _, _) in x2_up {
                        q2.extend(r);
                    }
                    sum(&q1).is_some_and(|r| r <= *c1) && sum(&q2).is_some_and(|r| r < *c2)
                }
            }
        };
        let top = if theta_sup.is_finite() {
            grid_at_least(theta_sup) - 1
        } else {
            // work-free flows only: any θ; start well above any useful value
            400
        };
        let mut lo = top - 480;
        if !stable(lo) {
            return Ok(Bound::Unbounded(self.overload_reason(f)));
        }
        let mut hi = top;
        if stable(hi) {
            lo = hi;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if stable(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // scan downwards from the largest stable θ while the bound improves
        let mut best: Option<f64> = None;
        let mut worse = 0;
        let mut k = lo;
        while k > lo - 240 {
            match (solve(k), best) {
                (Some(d), Some(b)) if d >= b => {
                    worse += 1;
                    if worse >= 4 {
                        break;
                    }
                }
                (Some(d), _) => {
                    best = Some(d);
                    worse = 0;
                }
                (None, Some(_)) => {
                    worse += 1;
                    if worse >= 4 {
                        break;
                    }
                }
                (None, None) => {}
            }
            k -= 1;
        }
        Ok(match best {
            Some(steps) => Bound::from_seconds(steps * self.step_s, || self.overload_reason(f)),
            None => Bound::Unbounded(self.overload_reason(f)),
        })
    }

    /// Every flow whose envelope the bound of f uses.
    fn involved(&self, f: usize, plan: &Plan) -> Vec<usize> {
        let mut v = vec![f];
        match plan {
            Plan::One { high, same, .. } => v.extend(high.iter().chain(same)),
            Plan::Two {
                b_high,
                b_same,
                x1_high,
                x1_same,
                x2_src,
                x2_up,
                ..
            } => {
                v.extend(b_high.iter().chain(b_same).chain(x1_high).chain(x1_same).chain(x2_src));
                for (r, o, _, _) in x2_up {
                    v.extend(r.iter().chain(o));
                }
            }
        }
        v
    }

    /// Why flow `f` has no bound: the most loaded queue of its path.
    fn overload_reason(&self, f: usize) -> String {
        let lvl = self.level[f];
        let mut worst: Option<(f64, usize, f64)> = None;
        for &q in &self.net.flows[f].path {
            let load: f64 = self
                .at_queue(q, lvl, usize::MAX)
                .map(|g| self.env[g].env.mean_work_per_step() / self.step_s)
                .sum();
            let rate = self.net.queues[q].rate;
            if !matches!(worst, Some((u, _, _)) if load / rate <= u) {
                worst = Some((load / rate, q, load));
            }
        }
        match worst {
            Some((u, q, load)) => {
                let name = &self.net.queues[q].name;
                let rate = self.net.queues[q].rate;
                if u >= 1.0 {
                    format!(
                        "queue {name}: load {load:.4e} ≥ capacity {rate:.4e} [work/s] \
                         (flows of priority ≤ {lvl})"
                    )
                } else {
                    format!(
                        "queue {name}: mean load {load:.4e} of capacity {rate:.4e} [work/s] \
                         ({:.1}%), but the bursts leave no θ with a finite bound at this \
                         percentile",
                        100.0 * u
                    )
                }
            }
            None => "flow crosses no queue".into(),
        }
    }

    // -----------------------------------------------------------------------------------------
    // one queue

    fn one_queue(
        &self,
        f: usize,
        k: i32,
        rate: f64,
        high: &[usize],
        same: &[usize],
        ln_eps: f64,
    ) -> Option<f64> {
        let walk = |d: f64| -> Walk {
            let m = d.ceil();
            let mut members: Vec<Member> = high
                .iter()
                .map(|&g| Member {
                    flow: g,
                    start: 0.0,
                    palm: false,
                })
                .collect();
            members.extend(same.iter().map(|&g| Member {
                flow: g,
                start: m,
                palm: false,
            }));
            members.push(Member {
                flow: f,
                start: m,
                palm: true,
            });
            Walk {
                members,
                rate,
                n_s: m + 1.0,
                c: rate * (d - m - 1.0),
                lumps: Vec::new(),
            }
        };
        solve_delay(|d| self.walk_value(&walk(d), k).map(WalkValue::total), ln_eps)
    }

    // -----------------------------------------------------------------------------------------
    // two queues

    fn two_queues(&self, f: usize, k: i32, plan: &Plan, ln_eps: f64) -> Option<f64> {
        let Plan::Two {
            c1,
            c2,
            b_high,
            b_same,
            x1_high,
            x1_same,
            x2_src,
            x2_up,
        } = plan
        else {
            return None;
        };
        let (c1, c2) = (*c1, *c2);
        let theta = grid_theta(k);
        let has_x2 = !x2_src.is_empty() || !x2_up.is_empty();
        // θ' of each upstream: chosen once per θ (fixed across blocks, see the tail bound)
        let mut up_tail = Vec::with_capacity(x2_up.len());
        for (relayed, others, rate, util) in x2_up {
            up_tail.push(self.upstream_tail(k, relayed, others, *rate, *util)?);
        }
        // q2's leftover gap at θ (per step), for the block lengths
        let mut q2_flows: Vec<usize> = [f]
            .into_iter()
            .chain(b_high.iter().chain(b_same).chain(x2_src).copied())
            .collect();
        for (r, _, _, _) in x2_up {
            q2_flows.extend(r);
        }
        let gap = c2 - self.rho(&q2_flows, k)?;
        if !(gap > 0.0) {
            return None;
        }
        let taus: Vec<f64> = if !has_x2 && c2 >= c1 {
            vec![1.0]
        } else {
            [0.4, 1.2]
                .iter()
                .map(|x| (x / (theta * gap)).round().max(1.0))
                .collect()
        };
        let block_walk = |d: f64, tau: f64, b: f64| -> Walk {
            let m = d.ceil();
            let a = b * tau;
            let member = |g: usize, start: f64| Member {
                flow: g,
                start,
                palm: false,
            };
            let mut members = vec![Member {
                flow: f,
                start: m,
                palm: true,
            }];
            members.extend(b_same.iter().map(|&g| member(g, m)));
            members.extend(b_high.iter().map(|&g| member(g, 0.0)));
            members.extend(x1_same.iter().map(|&g| member(g, a.max(m))));
            members.extend(x1_high.iter().map(|&g| member(g, a)));
            let w = a + tau;
            let mut lumps: Vec<Lump> = x2_src
                .iter()
                .map(|&g| Lump::Window { flow: g, len: w })
                .collect();
            for ((relayed, others, rate, util), &tail) in x2_up.iter().zip(&up_tail) {
                lumps.push(Lump::Upstream(Rc::new(Upstream {
                    relayed: relayed.clone(),
                    others: others.clone(),
                    rate: *rate,
                    util: *util,
                    window: w,
                    tail,
                })));
            }
            // min over the block of (C2 − C1)·n1
            let n1 = if c2 >= c1 { a } else { a + tau - 1.0 };
            Walk {
                members,
                rate: c1,
                n_s: a.max(m + 1.0),
                c: (c2 - c1) * n1 + c2 * (d - m),
                lumps,
            }
        };
        let mut best: Option<f64> = None;
        for &tau in &taus {
            let ln_p = |d: f64| -> Option<f64> {
                let m = d.ceil();
                // blocks until t1's block is past t (n_s = a from then on), then two more
                let b0 = ((m + 1.0) / tau).ceil();
                let mut terms = Vec::new();
                let mut b = 0.0;
                let mut vals: Vec<WalkValue> = Vec::new();
                loop {
                    let v = self.walk_value(&block_walk(d, tau, b), k)?;
                    terms.push(v.total());
                    vals.push(v);
                    if !has_x2 && c2 >= c1 {
                        // n1 = 0 dominates every other hand-off: one term
                        return Some(v.total());
                    }
                    if b >= b0 + 1.0 {
                        break;
                    }
                    b += 1.0;
                    if b > 10_000.0 {
                        return None;
                    }
                }
                // every later block: the walk part changes linearly, the lumps grow at most
                // as fast as their growth bound
                let n = vals.len();
                let dwalk = vals[n - 1].walk - vals[n - 2].walk;
                let growth = self.lump_growth(&block_walk(d, tau, b), k)? * tau;
                let ln_r = dwalk + growth;
                if !(ln_r < 0.0) {
                    return None;
                }
                let last = terms[n - 1];
                let tail = last + ln_r - (-ln_r.exp_m1()).ln();
                terms.push(tail);
                Some(log_sum_exp(&terms))
            };
            if let Some(d) = solve_delay(ln_p, ln_eps) {
                best = Some(best.map_or(d, |b: f64| b.min(d)));
            }
        }
        best
    }

    /// The θ' of an upstream queue's tail bound at the analysis' grid point k: the grid point
    /// above k (within p's stability) that gives the least lump at a one-step window.
    fn upstream_tail(
        &self,
        k: i32,
        relayed: &[usize],
        others: &[usize],
        rate: f64,
        util: f64,
    ) -> Option<i32> {
        let mut best: Option<(f64, i32)> = None;
        for kt in k + 1..=k + 24 {
            let up = Upstream {
                relayed: relayed.to_vec(),
                others: others.to_vec(),
                rate,
                util,
                window: 1.0,
                tail: kt,
            };
            match self.upstream_ln_mgf(&up, k) {
                Some(v) => {
                    if best.map_or(true, |(b, _)| v < b) {
                        best = Some((v, kt));
                    }
                }
                // beyond p's stability or the MGFs' domain: larger θ' only get worse
                None => break,
            }
        }
        best.map(|(_, kt)| kt)
    }

    // -----------------------------------------------------------------------------------------
    // walks and lumps

    /// ln of the bound on a walk's crossing at grid point k (module docs), `None` where the
    /// walk is unstable or an MGF infinite.
    fn walk_value(&self, walk: &Walk, k: i32) -> Option<WalkValue> {
        let theta = grid_theta(k);
        // groups with two or more flows involved: their walk members become excess lumps
        let mut lumps = walk.lumps.clone();
        let mut counts: HashMap<usize, usize> = HashMap::new();
        let flows_of = |l: &Lump| -> Vec<usize> {
            match l {
                Lump::Window { flow, .. } | Lump::Excess { flow, .. } => vec![*flow],
                Lump::Upstream(u) => u.relayed.iter().chain(&u.others).copied().collect(),
            }
        };
        for g in walk
            .members
            .iter()
            .map(|m| m.flow)
            .chain(lumps.iter().flat_map(flows_of))
        {
            if let Some(grp) = self.group[g] {
                *counts.entry(grp).or_default() += 1;
            }
        }
        let dependent = |g: usize| self.group[g].is_some_and(|grp| counts[&grp] >= 2);
        let mut rate = walk.rate;
        let mut c = walk.c;
        let mut ln_k = 0.0;
        let mut drift = 0.0; // Σ ρ_g (n_s − s_g) of the independent members
        let mut slope = 0.0; // Σ ρ_g of the independent members
        let mut excess = Vec::new();
        for m in &walk.members {
            if m.start > walk.n_s {
                return None;
            }
            if dependent(m.flow) {
                excess.push(*m);
                continue;
            }
            let t = self.tilt(m.flow, k)?;
            ln_k += if m.palm {
                t.ln_kappa_palm?
            } else {
                t.ln_kappa
            };
            drift += t.rho * (walk.n_s - m.start);
            slope += t.rho;
        }
        if !excess.is_empty() {
            // the Hölder grid point of the component the excess lumps will join
            let size = self.components(&lumps, &excess).max(1);
            let kh = k + (PER_OCTAVE * (size as f64).log2()).ceil() as i32;
            let tail = kh + PER_OCTAVE as i32;
            for m in &excess {
                let cap = self.tilt(m.flow, tail)?.rho;
                rate -= cap;
                c += cap * m.start;
                lumps.push(Lump::Excess {
                    flow: m.flow,
                    palm: m.palm,
                    tail,
                });
            }
        }
        if !(rate >= slope && rate > 0.0) {
            return None;
        }
        let walk_part = ln_k - theta * (rate * walk.n_s - drift + c);
        let lump_part = self.lumps_ln_mgf(&lumps, k)?;
        let v = WalkValue {
            walk: walk_part,
            lumps: lump_part,
        };
        (v.walk.is_finite() && v.lumps.is_finite()).then_some(v)
    }

    /// The size of the largest group component the excess members join with the lumps.
    fn components(&self, lumps: &[Lump], excess: &[Member]) -> usize {
        let mut sets: Vec<Vec<usize>> = lumps.iter().map(|l| self.groups_of(l)).collect();
        sets.extend(excess.iter().map(|m| self.group[m.flow].into_iter().collect()));
        union_sizes(&sets).into_iter().max().unwrap_or(1)
    }

    fn groups_of(&self, l: &Lump) -> Vec<usize> {
        let mut v: Vec<usize> = match l {
            Lump::Window { flow, .. } | Lump::Excess { flow, .. } => {
                self.group[*flow].into_iter().collect()
            }
            Lump::Upstream(u) => u
                .relayed
                .iter()
                .chain(&u.others)
                .filter_map(|&g| self.group[g])
                .collect(),
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    /// ln E[e^{θ Σ lumps}] at grid point k: independent components multiply; lumps that share
    /// a group combine by Hölder's inequality.
    fn lumps_ln_mgf(&self, lumps: &[Lump], k: i32) -> Option<f64> {
        let sets: Vec<Vec<usize>> = lumps.iter().map(|l| self.groups_of(l)).collect();
        let comp = component_ids(&sets);
        let mut total = 0.0;
        let ncomp = comp.iter().copied().max().map_or(0, |x| x + 1);
        for c in 0..ncomp {
            let members: Vec<&Lump> = lumps
                .iter()
                .zip(&comp)
                .filter(|(_, &x)| x == c)
                .map(|(l, _)| l)
                .collect();
            if members.len() == 1 {
                total += self.lump_ln_mgf(members[0], k)?;
            } else {
                let kh = k + (PER_OCTAVE * (members.len() as f64).log2()).ceil() as i32;
                let scale = grid_theta(k) / grid_theta(kh);
                for l in members {
                    total += scale * self.lump_ln_mgf(l, kh)?;
                }
            }
        }
        Some(total)
    }

    /// ln E[e^{θ L}] of one lump at grid point k.
    fn lump_ln_mgf(&self, l: &Lump, k: i32) -> Option<f64> {
        let theta = grid_theta(k);
        match l {
            Lump::Window { flow, len } => {
                let t = self.tilt(*flow, k)?;
                Some(t.ln_kappa + len * theta * t.rho)
            }
            Lump::Excess { flow, palm, tail } => {
                if *tail <= k {
                    return None;
                }
                let t = self.tilt(*flow, *tail)?;
                let ln_g = if *palm {
                    t.ln_kappa_palm?
                } else {
                    t.ln_kappa
                };
                // E[e^{θY}] = 1 + ∫θe^{θy} P(Y > y) dy with P(Y > y) ≤ min(1, G e^{−θ''y})
                Some(ln_1p_tail(0.0, ln_g, theta, grid_theta(*tail)))
            }
            Lump::Upstream(u) => self.upstream_ln_mgf(u, k),
        }
    }

    /// ln E[e^{θ L_p}] (module docs, "Two queues").
    fn upstream_ln_mgf(&self, u: &Upstream, k: i32) -> Option<f64> {
        if u.tail <= k || !(u.util < 1.0) {
            return None;
        }
        // the relayed flows' arrivals over the window
        let windows: Vec<Lump> = u
            .relayed
            .iter()
            .map(|&g| Lump::Window {
                flow: g,
                len: u.window,
            })
            .collect();
        let ln_r = self.lumps_ln_mgf(&windows, k)?;
        // p's walk: relayed from 0, the others from the window's end, at θ'
        let mut members: Vec<Member> = u
            .relayed
            .iter()
            .map(|&g| Member {
                flow: g,
                start: 0.0,
                palm: false,
            })
            .collect();
        members.extend(u.others.iter().map(|&g| Member {
            flow: g,
            start: u.window,
            palm: false,
        }));
        let up = Walk {
            members,
            rate: u.rate,
            n_s: u.window + 1.0,
            c: -u.rate * u.window,
            lumps: Vec::new(),
        };
        let ln_g = self.walk_value(&up, u.tail)?.total();
        let theta = grid_theta(k);
        let theta_t = grid_theta(u.tail);
        // E[e^{θR}] + ∫θe^{θy} min(U, G e^{−θ'y}) dy
        let ln_i = ln_tail_integral(u.util.ln(), ln_g, theta, theta_t);
        Some(log_sum_exp(&[ln_r, ln_i]))
    }

    /// An upper bound on the growth per step of window of ln E[e^{θ Σ lumps}].
    fn lump_growth(&self, walk: &Walk, k: i32) -> Option<f64> {
        let sets: Vec<Vec<usize>> = walk.lumps.iter().map(|l| self.groups_of(l)).collect();
        let comp = component_ids(&sets);
        let sizes = {
            let mut s = vec![0usize; comp.iter().copied().max().map_or(0, |x| x + 1)];
            for &c in &comp {
                s[c] += 1;
            }
            s
        };
        let mut g = 0.0;
        for (l, &c) in walk.lumps.iter().zip(&comp) {
            let kk = if sizes[c] > 1 {
                k + (PER_OCTAVE * (sizes[c] as f64).log2()).ceil() as i32
            } else {
                k
            };
            let scale = grid_theta(k) / grid_theta(kk);
            g += scale
                * match l {
                    Lump::Window { flow, .. } => grid_theta(kk) * self.tilt(*flow, kk)?.rho,
                    Lump::Excess { .. } => 0.0,
                    Lump::Upstream(u) => {
                        // the relayed window grows at θρ(θ); the tail term at most at θ'ρ(θ')
                        let kt = u.tail.max(kk);
                        grid_theta(kt) * self.rho(&u.relayed, kt)?
                    }
                };
        }
        // dependent walk members become excess lumps with no growth; nothing else grows
        Some(g)
    }
}

/// Smallest d ≥ 0 [steps] with ln_p(d) ≤ ln_eps, by doubling then bisection; ln_p must be
/// non-increasing in d. `None` when no d up to 2⁴⁰ steps qualifies.
fn solve_delay(ln_p: impl Fn(f64) -> Option<f64>, ln_eps: f64) -> Option<f64> {
    let ok = |d: f64| ln_p(d).is_some_and(|v| v <= ln_eps);
    if ok(0.0) {
        return Some(0.0);
    }
    let mut hi = 1.0;
    while !ok(hi) {
        hi *= 2.0;
        if hi > 1e12 {
            return None;
        }
    }
    let mut lo = if hi > 1.0 { hi / 2.0 } else { 0.0 };
    while hi - lo > 1e-4 * hi.max(1.0) {
        let mid = 0.5 * (lo + hi);
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// ln Σ e^{x_i}.
fn log_sum_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + xs.iter().map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// ln ∫₀^∞ θ e^{θy} min(U, G e^{−θ'y}) dy for θ < θ' (ln U and ln G given).
fn ln_tail_integral(ln_u: f64, ln_g: f64, theta: f64, theta_t: f64) -> f64 {
    let r = theta / (theta_t - theta);
    if ln_g <= ln_u {
        // y0 = 0: G θ/(θ' − θ)
        ln_g + r.ln()
    } else {
        // y0 = ln(G/U)/θ': U [e^{θ y0} θ'/(θ' − θ) − 1]
        let a = (theta / theta_t) * (ln_g - ln_u) + (theta_t / (theta_t - theta)).ln();
        // ln(e^a − 1), a > 0
        ln_u + a + (-(-a).exp()).ln_1p()
    }
}

/// ln(1 + ∫₀^∞ θ e^{θy} min(e^{ln_u}, G e^{−θ'y}) dy).
fn ln_1p_tail(ln_u: f64, ln_g: f64, theta: f64, theta_t: f64) -> f64 {
    log_sum_exp(&[0.0, ln_tail_integral(ln_u, ln_g, theta, theta_t)])
}

/// Component id per set, sets being connected when they share an element.
fn component_ids(sets: &[Vec<usize>]) -> Vec<usize> {
    let n = sets.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut owner: HashMap<usize, usize> = HashMap::new();
    for (i, s) in sets.iter().enumerate() {
        for &e in s {
            match owner.get(&e) {
                Some(&j) => {
                    let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                    if a != b {
                        parent[b] = a;
                    }
                }
                None => {
                    owner.insert(e, i);
                }
            }
        }
    }
    let mut ids: HashMap<usize, usize> = HashMap::new();
    (0..n)
        .map(|i| {
            let r = find(&mut parent, i);
            let next = ids.len();
            *ids.entry(r).or_insert(next)
        })
        .collect()
}

/// Sizes of the components of `sets`.
fn union_sizes(sets: &[Vec<usize>]) -> Vec<usize> {
    let ids = component_ids(sets);
    let mut sizes = vec![0; ids.iter().copied().max().map_or(0, |x| x + 1)];
    for c in ids {
        sizes[c] += 1;
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_points_bracket_theta() {
        for theta in [1e-7, 3.3e-6, 1.0, 17.0, 1e4] {
            let k = grid_at_least(theta);
            assert!(grid_theta(k) >= theta && grid_theta(k - 1) < theta, "{theta}");
        }
    }

    #[test]
    fn the_tail_integral_matches_quadrature() {
        for (u, g, th, tt) in [(0.05, 0.3, 1.0, 2.0), (0.05, 3.0, 1.0, 1.5), (1.0, 0.5, 2.0, 3.0)] {
            let got = ln_tail_integral(f64::ln(u), f64::ln(g), th, tt).exp();
            let mut want = 0.0;
            let dy = 1e-4;
            let mut y = 0.5 * dy;
            while y < 60.0 {
                want += th * (th * y).exp() * f64::min(u, g * (-tt * y).exp()) * dy;
                y += dy;
            }
            assert!((got - want).abs() < 1e-3 * want, "{u} {g}: {got} vs {want}");
        }
    }

    #[test]
    fn delays_solve_monotone_bounds() {
        // ln P(d) = 2 − d/10: P ≤ e^{-5} at d = 70
        let d = solve_delay(|d| Some(2.0 - d / 10.0), -5.0).unwrap();
        assert!((d - 70.0).abs() < 0.01, "{d}");
        assert_eq!(solve_delay(|_| None, -5.0), None);
    }

    #[test]
    fn groups_form_components() {
        let ids = component_ids(&[vec![1], vec![], vec![2, 1], vec![3], vec![3]]);
        assert_eq!(ids[0], ids[2]);
        assert_ne!(ids[0], ids[1]);
        assert_eq!(ids[3], ids[4]);
        assert_eq!(union_sizes(&[vec![1], vec![1], vec![2]]), vec![2, 1]);
    }
}
