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
//! * `chain`: one flow's envelope at θ: ρ(θ), κ(θ), κ_palm(θ) of two supermartingales, and a
//!   bound on its exponential moment over a window.
//! * `heavy`: a flow's heavy batches split off, and the sum over the sets of them.
//! * `walk`: Doob walks and lumps prepared at one θ as plain arrays.
//! * this module: which flows a flow's bound involves, the bound of one queue and of a
//!   two-queue path, the search over θ, and a per-thread cache of the envelopes (the
//!   admission engine bounds the same flows decision after decision).
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
//! Any h > 0 with P̃Dh ≤ λ'h gives a *super*martingale with the same consequences (ρ = ln λ'/θ).
//! Besides the Perron vector every flow offers h ≡ 1 with λ' = max_i (P̃D1)_i: the fitted
//! chains change state every few seconds, i.e. every ~10⁵ steps, and for them the Perron
//! vector's components differ by about e^{θ·(work of a whole stay)} (κ of e^4 to e^8 per flow
//! at useful θ), while λ' is within a few percent of sp and κ ≤ 1. Each walk picks, per flow,
//! the one with the smaller cost ln κ + θρ·(its steps in the walk), keeping Σρ within the
//! rate.
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
//! # Windows
//!
//! A walk member that starts counting w steps before the walk's Doob start (the higher levels'
//! arrivals during the delay, the first queue's cross traffic before its block) pays κλ^w for
//! them, its supermartingale's bound on E[e^{θA(w)}]. For the fitted chains, which stay ~10⁵
//! steps in a state, the h ≡ 1 one pays the busiest state's rate for every step of the
//! window, where the flow is in that state only a fraction π of the time: up to ln(1/π) nats
//! too much per flow, and the lower levels sum that over every flow above them. With h ≡ 1
//! the walk from the start on does not depend on the state there, so the member may pay any
//! bound on E[e^{θA(w)}] instead: `chain::Window`'s, which conditions on the window's first
//! state and on whether the chain leaves it (if it leaves, every step is bounded by the
//! busiest state's moment). The same holds for a flow's window lump. The value is then no
//! longer linear in the walk's start, which the two-queue bound's geometric tail of later
//! blocks and the heavy batches' sum rely on: those take the supermartingales alone (the
//! tail from the last block evaluated without windows, which bounds every later block as
//! before).
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
//! # Heavy batches
//!
//! An exponential bound pays for a co-tenant's batch of work W by e^{θW}, only logarithmically
//! in how rare the batch is, where a percentile counts it in proportion to its chance: a light
//! flow beside megabyte batches that come once in minutes was bounded by the time they take
//! to send, far above what such a batch does to its p99.9. So each walk member g other than the
//! analysed flow is also bounded with its batches above a threshold β_g split off
//! (`heavy::split`): per step and given the state, its arrival is dominated by the light
//! arrival (W·1{W ≤ β}, an MMPP of its own with its own supermartingales) plus an independent
//! i.i.d. heavy one of probability b_g = max_i p_i P_i(W > β)/(1 − p_i) and work V_g ~ the
//! largest of the states' tails of W given W > β. β_g is the least of the flow's sizes at which
//! b_g ≤ `HEAVY_PER_S`·Δ. The queue of the dominating arrivals is larger than the real one,
//! so a bound for it is one for the flow.
//!
//! A crossing at N (the first) counts the heavy batches K at reversed positions before N; for
//! K = ∅ it is a crossing of the light walk (and lumps) alone, Q(−1); otherwise the light walk
//! crosses c − ΣV_K from after K's last position k on, and Doob's inequality from there gives
//! Q(k), the light bound with its start moved to k + 1 (a walk's value falls by θ·slack per
//! step; with two queues Q sums the hand-off blocks, each moved). By independence,
//!
//! P(delay > d) ≤ Q(−1) + Σ_{K ≠ ∅} Π_{K} b · E[min(1, e^{θ·ΣV_K} · Q(max K))].
//!
//! The sets by their last position k weigh at most Λ(k)·X(k)^{j−1}/(j−1)! for j batches (Λ
//! the members' Σb at k, X its sum up to k; Maclaurin's inequality); sets of one and two are
//! summed over their laws (rounded up to a 4 % grid), larger ones through
//! min(1, e^y) ≤ e^{ηy} at the best η ∈ (0, 1] tried (`heavy::ln_bound`). A huge batch is so
//! paid for by its chance times how long it keeps the light walk's bound above 1, never by
//! e^{θV}. The split bound has its own θ scan (its grid reaches up to the light parts' largest
//! θ), beside the plain one where it can gain (see "Limits"), and the lesser bound is kept; at a
//! hinted θ both are evaluated under the same rule.
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
//! bound of an analysis and, per thread, across analyses): every grid point down from the
//! largest θ where the queues are stable, until 4 in a row are no better than the best. On the
//! production traces the two-queue bound is a sawtooth of rising teeth in θ (it jumps where one
//! of the bound's discrete choices changes: the whole-step block length, the upstream's θ' grid
//! point, the walk's supermartingales), and the scan finds the floor of the lowest tooth: on
//! the admission experiment's searches of seeds 1–3 (two runs each, 5 573 scans) continued
//! until 40 in a row were no better, no scan without heavy batches split off found a better
//! point after more than 3 in a row, and two of those with them (of 1 773 on seed 3) did after
//! 28 and 30, which the patience of 10 used before missed as well. So a θ hint
//! ([`crate::bound_hinted`]) saves the search without changing a decision. Per θ the block
//! length τ makes θ·τ·gap ≈ 1 for q2's leftover gap (at most 32 blocks before t), each
//! upstream's θ' is the grid point that minimises its lump at a window of one block plus half
//! the flow's SLO, rounded to a quarter octave (the terms of the blocks whose window is about
//! the delay dominate the sum, and the delays that decide an admission are near the SLO: on the
//! admission experiment's first run of seed 1, choosing θ' at one block instead left the 98
//! flows' bounds 1.16× as large in the geometric mean, up to 1.9×; the rounding lets bounds
//! whose second queue differs a little share the lump, which is kept per thread by its inputs,
//! `UpKey`; of the 24 grid points above θ's, the minimum is sought down from the largest where
//! the lump is defined, while its value falls: on the admission experiment's seeds 1 and 2
//! that found the least of all the defined points in each of 45 000 lumps, with about 3
//! evaluations instead of 13), and d is the least point of a grid 0.1% apart with
//! P(delay > d) ≤ ε (`solve_delay`, searched from half the SLO wherever it is solved, so that a
//! hint's check and a search at the same grid point give the same delay), computing each
//! window's lumps once per grid point. Once the scan has a best delay, a grid point is solved
//! only where the delay grid's point just below the best is within ε there (one evaluation,
//! `Goal::LeastWithin`), and a hint's check asks of each of a tenant's flows only whether its
//! delay fits in its share of the budget (one evaluation, at the delay grid's point at or below
//! the share, so that a check passes only where the search's delay at that grid point fits
//! too; `crate::theta`).
//! Any θ, τ and θ' give a valid bound; the search only makes it small.
//!
//! # Limits
//!
//! The bounds are exponential in θ: a co-tenant whose batches reach megabytes keeps θ below
//! about 1/(its largest batch), and every nat of ln(1/ε) then costs that batch's transmission
//! time, for every flow of its level and below on its queues. Removing the union bound over
//! time (about ln(1/(θ·gap)) ≈ 5–6 nats per queue at these θ) is what this analysis gains over
//! SNC-Meister's. Splitting heavy batches off ("Heavy batches") removes the rest of that cost
//! where they are rarer than ε within the delay; it covers the walk members, not the analysed
//! flow's own batches, cross traffic that joins at the second queue (lumps) or the upstream
//! queues' walks, and it is searched only where the plain bound pays a nat or more for them
//! and fewer than 10·ε of them are expected within its delay (elsewhere their chance alone
//! keeps the split bound near the plain one, and the second search would double the cost).

mod chain;
mod heavy;
mod walk;

pub use chain::{Envelope, Opt, Tilt, Window, PEAK, PERRON};

use walk::{lumps_growth, lumps_value, Lump, LumpKind, Pair, Start, Starts, UpLump, Walker};

use crate::theta::{self, Check, OverTheta};
use crate::{Bound, BoundOptions, CalculusError, Hint, HintedBound};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::ops::ControlFlow;
use std::rc::Rc;
use std::sync::Arc;
use tailbound_model::{Mmpp, Network, SizeModel};

/// θ grid points per doubling.
const PER_OCTAVE: f64 = 8.0;

/// θ of grid point k [1/work].
fn grid_theta(k: i32) -> f64 {
    (k as f64 / PER_OCTAVE).exp2()
}

/// The grid point nearest θ, `None` for θ far off the grid (or not finite and positive).
fn grid_point(theta: f64) -> Option<i32> {
    let k = (theta.log2() * PER_OCTAVE).round();
    (-1e6..=1e6).contains(&k).then_some(k as i32)
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

/// Bounds of the listed tenants under the martingale analysis, in that order, each handed to
/// `each` until it breaks; a tenant with a hint (`hints[k]` for `tenants[k]`) is checked at its
/// θs first ([`crate::bound_hinted`]).
pub(crate) fn bound_tenants(
    net: &Network,
    priorities: &[u32],
    tenants: &[usize],
    opts: &BoundOptions,
    hints: &[Option<Hint>],
    each: &mut dyn FnMut(&mut HintedBound) -> ControlFlow<()>,
) -> Result<Vec<HintedBound>, CalculusError> {
    let mut analysis = Analysis::new(net, priorities)?;
    let level = |t: usize| priorities.get(t).copied().unwrap_or(0);
    theta::bound_tenants(&mut analysis, net, &level, tenants, opts, hints, each)
}

// ---------------------------------------------------------------------------------------------
// Envelopes, cached per thread

/// An envelope and its tilts at the grid points asked for so far.
struct Cached {
    env: Envelope,
    tilts: RefCell<HashMap<i32, Option<Tilt>>>,
    windows: RefCell<HashMap<i32, Option<Rc<Window>>>>,
    /// the flow with its heavy batches split off ([`heavy::split`] at [`HEAVY_PER_S`])
    split: OnceCell<Option<SplitPart>>,
}

/// A flow's heavy batches split off: the rest's envelope, the heavy process's per-step
/// probability and law.
struct SplitPart {
    light: Rc<Cached>,
    prob: f64,
    atoms: Vec<(f64, f64)>,
}

/// Batches are split off a flow from the largest down while they come at most this often
/// [1/s] (module docs, "Heavy batches").
const HEAVY_PER_S: f64 = 0.5;

/// Envelopes kept per thread (the admission engine re-bounds the same flows at every
/// decision); cleared when it holds this many.
const CACHE_LIMIT: usize = 4096;

/// Envelopes by fingerprint (each with its model, to tell collisions apart), how many, and by
/// the address of a network's shared model (held, so that the address is not reused): the
/// networks of a decision's neighbourhood share their flows' models with the admission's
/// network, so most look-ups need neither the fingerprint nor a comparison of models.
#[derive(Default)]
struct Cache {
    len: usize,
    by_fingerprint: HashMap<u64, Vec<(Mmpp, Rc<Cached>)>>,
    by_address: HashMap<usize, (Arc<Mmpp>, Rc<Cached>)>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    static UPSTREAM: RefCell<HashMap<UpKey, Option<Rc<UpLump>>>> = RefCell::new(HashMap::default());
}

/// Upstream lumps kept per thread (a decision re-bounds most of the last one's flows at the
/// same grid points); cleared when it holds this many.
const UPSTREAM_LIMIT: usize = 16384;

/// What an upstream queue's lump ([`Analysis::upstream`]) is a function of: the grid point,
/// the window its θ' is chosen at, the queue's rate and utilisation, and its relayed and other
/// flows in order, each by its envelope (the cache's, held so that its address is not reused)
/// and its dependency group (numbered by first appearance).
#[derive(PartialEq, Eq, Hash)]
struct UpKey {
    k: i32,
    w_ref: u64,
    rate: u64,
    util: u64,
    relayed: Vec<(ByAddress, Option<usize>)>,
    others: Vec<(ByAddress, Option<usize>)>,
}

/// An envelope compared and hashed by its address.
struct ByAddress(Rc<Cached>);

impl PartialEq for ByAddress {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ByAddress {}

impl Hash for ByAddress {
    fn hash<H: Hasher>(&self, h: &mut H) {
        Rc::as_ptr(&self.0).hash(h);
    }
}

/// Empties this thread's envelope and upstream lump caches (for benchmarks of a first
/// decision; results never depend on the caches).
pub fn clear_cache() {
    CACHE.with(|c| *c.borrow_mut() = Cache::default());
    UPSTREAM.with(|c| c.borrow_mut().clear());
}

/// A hash of a few of the model's numbers: the cache compares whole models within a hash, and
/// hashing every atom and transition of the hundreds of flows a decision reads cost more.
fn fingerprint(m: &Mmpp) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.step_s.to_bits().hash(&mut h);
    for (s, row) in m.states.iter().zip(&m.transition) {
        s.arrival_prob.to_bits().hash(&mut h);
        match &s.sizes {
            SizeModel::Exponential { mean } => mean.to_bits().hash(&mut h),
            SizeModel::Empirical { atoms } => {
                atoms.len().hash(&mut h);
                for a in atoms.first().into_iter().chain(atoms.last()) {
                    a[0].to_bits().hash(&mut h);
                    a[1].to_bits().hash(&mut h);
                }
            }
        }
        row.len().hash(&mut h);
        row.first().map(|p| p.to_bits()).hash(&mut h);
    }
    h.finish()
}

fn cached_envelope(m: &Mmpp) -> Result<Rc<Cached>, String> {
    let key = fingerprint(m);
    let hit = CACHE.with(|c| {
        c.borrow()
            .by_fingerprint
            .get(&key)
            .and_then(|v| v.iter().find(|(mm, _)| mm == m).map(|(_, e)| e.clone()))
    });
    if let Some(e) = hit {
        return Ok(e);
    }
    let e = Rc::new(Cached {
        env: Envelope::new(m)?,
        tilts: RefCell::new(HashMap::default()),
        windows: RefCell::new(HashMap::default()),
        split: OnceCell::new(),
    });
    CACHE.with(|c| {
        c.borrow_mut()
            .room()
            .by_fingerprint
            .entry(key)
            .or_default()
            .push((m.clone(), e.clone()));
    });
    Ok(e)
}

/// [`cached_envelope`] of a network's shared model, looked up by its address first.
fn cached_shared(m: &Arc<Mmpp>) -> Result<Rc<Cached>, String> {
    let address = Arc::as_ptr(m) as usize;
    let hit = CACHE.with(|c| {
        c.borrow()
            .by_address
            .get(&address)
            .filter(|(held, _)| Arc::ptr_eq(held, m))
            .map(|(_, e)| e.clone())
    });
    if let Some(e) = hit {
        return Ok(e);
    }
    let e = cached_envelope(m)?;
    CACHE.with(|c| {
        c.borrow_mut()
            .room()
            .by_address
            .insert(address, (m.clone(), e.clone()));
    });
    Ok(e)
}

impl Cache {
    /// Counts one more entry, emptying the cache first where it holds [`CACHE_LIMIT`].
    fn room(&mut self) -> &mut Cache {
        if self.len >= CACHE_LIMIT {
            *self = Cache::default();
        }
        self.len += 1;
        self
    }
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

    /// The flow's window bound at grid point k (module docs, "Windows").
    fn window(&self, k: i32) -> Option<Rc<Window>> {
        if let Some(w) = self.windows.borrow().get(&k) {
            return w.clone();
        }
        let w = self.env.window(grid_theta(k)).map(Rc::new);
        self.windows.borrow_mut().insert(k, w.clone());
        w
    }

    /// The flow with its heavy batches split off, `None` where it has none to split.
    fn split(&self, m: &Mmpp) -> Option<&SplitPart> {
        self.split
            .get_or_init(|| {
                let s = heavy::split(m, HEAVY_PER_S * m.step_s)?;
                let light = cached_envelope(&s.light).ok()?;
                Some(SplitPart {
                    light,
                    prob: s.prob,
                    atoms: s.atoms,
                })
            })
            .as_ref()
    }
}

// ---------------------------------------------------------------------------------------------
// The analysis

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
        /// upstream queues of relayed X2 flows
        x2_up: Vec<UpSpec>,
    },
}

impl Plan {
    /// Flow `f` and the flows sharing each queue of its path at its level or above: one list
    /// per queue.
    fn queues(&self, f: usize) -> Vec<Vec<usize>> {
        match self {
            Plan::One { high, same, .. } => {
                vec![high.iter().chain(same).copied().chain([f]).collect()]
            }
            Plan::Two {
                b_high,
                b_same,
                x1_high,
                x1_same,
                x2_src,
                x2_up,
                ..
            } => {
                let both = || [f].into_iter().chain(b_high.iter().chain(b_same).copied());
                let q1 = both()
                    .chain(x1_high.iter().chain(x1_same).copied())
                    .collect();
                let q2 = both()
                    .chain(x2_src.iter().copied())
                    .chain(x2_up.iter().flat_map(|u| u.relayed.iter().copied()))
                    .collect();
                vec![q1, q2]
            }
        }
    }

    /// Every flow whose envelope the bound of `f` uses: the flows at its queues and the others
    /// at the upstream queues of relayed cross traffic.
    fn involved(&self, f: usize) -> Vec<usize> {
        let mut v = self.queues(f).concat();
        if let Plan::Two { x2_up, .. } = self {
            v.extend(x2_up.iter().flat_map(|u| u.others.iter().copied()));
        }
        v
    }
}

/// An upstream queue p of relayed cross traffic.
#[derive(Debug, Clone)]
struct UpSpec {
    /// p, the analysed queue and ℓ: what the rest is a function of in one analysis
    at: (usize, usize, u32),
    /// flows at p going on to the analysed queue (levels ≤ ℓ)
    relayed: Vec<usize>,
    /// the other flows at p (levels ≤ ℓ)
    others: Vec<usize>,
    /// p's rate [work/step]
    rate: f64,
    /// p's utilisation by levels ≤ ℓ
    util: f64,
}

/// A lump before preparation.
#[derive(Debug, Clone, Copy)]
enum LumpSpec {
    /// X2 flow starting at q2: its arrivals over the window
    Window(usize),
    /// index into the plan's upstreams
    Up(usize),
}

/// A walk's cross traffic that enters as lumps: the specs (relayed or window cross traffic)
/// and the plan's upstream queues, with a typical window for choosing the upstream lumps' θ'.
#[derive(Clone, Copy)]
struct Cross<'c> {
    specs: &'c [LumpSpec],
    ups: &'c [UpSpec],
    w_ref: f64,
}

impl Cross<'_> {
    const NONE: Cross<'static> = Cross {
        specs: &[],
        ups: &[],
        w_ref: 0.0,
    };
}

/// The upstream lumps' θ' is chosen at a window of one block plus this fraction of the
/// analysed flow's SLO (module docs, "Search").
const LUMP_WINDOW_OF_SLO: f64 = 0.5;

/// What a solve at one grid point asks for.
#[derive(Debug, Clone, Copy)]
enum Goal {
    /// the least delay [steps] on [`solve_delay`]'s grid whose violation probability is at
    /// most ε, searched from a delay near it
    Least(f64),
    /// whether a delay of this many steps is violated with probability at most ε: the delay
    /// itself if so (a valid bound), `None` if not (one evaluation)
    Within(f64),
    /// [`Goal::Least`] from `near` where a delay of `limit` steps is within ε, `None` (after
    /// one evaluation) where it is not
    LeastWithin { limit: f64, near: f64 },
}

impl Goal {
    /// The goal, given the violation probability ln_p(d) of a delay d [steps].
    fn reach(self, ln_p: impl Fn(f64) -> Option<f64>, ln_eps: f64) -> Option<f64> {
        match self {
            Goal::Least(near) => solve_delay(ln_p, ln_eps, Some(near)),
            Goal::Within(d) => ln_p(d).filter(|&v| v <= ln_eps).map(|_| d),
            Goal::LeastWithin { limit, near } => {
                ln_p(limit).filter(|&v| v <= ln_eps)?;
                solve_delay(ln_p, ln_eps, Some(near))
            }
        }
    }
}

/// A walk and its lumps prepared at one grid point.
#[derive(Debug, Clone)]
struct Prepared {
    walker: Walker,
    lumps: Vec<Lump>,
    /// the heavy batches split off the walk's members
    heavy: Option<heavy::Law>,
}

struct Analysis<'a> {
    net: &'a Network,
    level: Vec<u32>,
    /// dependency group per flow
    group: Vec<Option<usize>>,
    /// whether any flow has a group
    grouped: bool,
    /// each flow's plan, once made
    plans: RefCell<Vec<Option<Rc<Plan>>>>,
    /// upstream lumps found, by [`UpSpec::at`], grid point and window
    #[allow(clippy::type_complexity)]
    ups: RefCell<HashMap<((usize, usize, u32), i32, u64), Option<Rc<UpLump>>>>,
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

/// Grid point of the Hölder exponent for a component of `size` lumps: the least θ ≥ size·θ_k.
fn hoelder_point(k: i32, size: usize) -> i32 {
    if size <= 1 {
        k
    } else {
        k + (PER_OCTAVE * (size as f64).log2()).ceil() as i32
    }
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
                cached_shared(m)
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
            grouped: !groups.is_empty(),
            ups: RefCell::default(),
            plans: RefCell::new(vec![None; net.flows.len()]),
            group,
            step_s: step_s.unwrap_or(1e-5),
            env,
        })
    }

    fn tilt(&self, f: usize, k: i32) -> Option<Tilt> {
        self.env[f].at(k)
    }

    /// The (ρ, ln κ) pairs of flow g at grid point k, seen from its own arrival if `palm`.
    fn pair(&self, g: usize, k: i32, palm: bool) -> Option<Pair> {
        let t = self.tilt(g, k)?;
        let mut p = [(0.0, 0.0); 2];
        for (i, o) in t.opts.iter().enumerate() {
            p[i] = (o.rho, if palm { o.ln_kappa_palm? } else { o.ln_kappa });
        }
        Some(p)
    }

    /// Flow g's heavy batches split off, `None` where it has none to split.
    fn split(&self, g: usize) -> Option<&SplitPart> {
        self.env[g].split(self.net.flows[g].mmpp.as_ref()?)
    }

    /// Σ of the least ρ of `flows` at grid point k, with the heavy batches of those other than
    /// `f` split off where they have any (the least the split bound can need).
    fn rho_split(&self, flows: &[usize], k: i32, f: usize) -> Option<f64> {
        flows.iter().try_fold(0.0, |acc, &g| {
            let t = match self.split(g) {
                Some(sp) if g != f => sp.light.at(k)?,
                _ => self.tilt(g, k)?,
            };
            Some(acc + t.rho())
        })
    }

    /// Σ of the least ρ of `flows` at grid point k.
    fn rho(&self, flows: &[usize], k: i32) -> Option<f64> {
        flows
            .iter()
            .try_fold(0.0, |acc, &g| Some(acc + self.tilt(g, k)?.rho()))
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

    /// Flow `f`'s plan, made once per analysis.
    fn plan(&self, f: usize) -> Result<Rc<Plan>, CalculusError> {
        if let Some(p) = self.plans.borrow().get(f).cloned().flatten() {
            return Ok(p);
        }
        let p = Rc::new(self.make_plan(f)?);
        if let Some(slot) = self.plans.borrow_mut().get_mut(f) {
            *slot = Some(p.clone());
        }
        Ok(p)
    }

    fn make_plan(&self, f: usize) -> Result<Plan, CalculusError> {
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
        match *path.as_slice() {
            [q] => {
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
            [q1, q2] => {
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
                        // B: counted at q1 (its first hop, checked there)
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
                    x2_up.push(UpSpec {
                        at: (p, q2, lvl),
                        relayed,
                        others,
                        rate: rate(p),
                        util: work / rate(p),
                    });
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

    /// Flow `f`'s least delay [steps] at grid point `k`, `None` where no bound holds there: the
    /// lesser of the bounds with and without the walk members' heavy batches split off.
    fn solve(&self, f: usize, k: i32, plan: &Plan, ln_eps: f64) -> Option<f64> {
        let goal = Goal::Least(self.near(f));
        let plain = self.solve_variant(f, k, plan, ln_eps, false, goal);
        if !self.worth_splitting(f, plan, plain.map(|d| (d, k)), ln_eps) {
            return plain;
        }
        match (plain, self.solve_variant(f, k, plan, ln_eps, true, goal)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether the bound with heavy batches split off can be worth its cost: some walk member
    /// has heavy batches; there is no plain bound, or at its delay d and grid point the
    /// members' heavy batches cost it at least one nat (Σ over them of the least
    /// ln κ + θρ(d + 1) of the whole flow less that of its light part) while fewer than 10·ε of
    /// them are expected within d (more, and their chance alone keeps the split bound near
    /// the plain one). Both bounds are valid; this only saves the second search where it
    /// cannot gain much.
    fn worth_splitting(
        &self,
        f: usize,
        plan: &Plan,
        plain: Option<(f64, i32)>,
        ln_eps: f64,
    ) -> bool {
        let mut members: Vec<usize> = plan
            .queues(f)
            .concat()
            .into_iter()
            .filter(|&g| g != f && self.split(g).is_some())
            .collect();
        members.sort_unstable();
        members.dedup();
        if members.is_empty() {
            return false;
        }
        let Some((d, k)) = plain else {
            return true;
        };
        let theta = grid_theta(k);
        let cost = |t: Option<Tilt>| -> Option<f64> {
            let t = t?;
            Some(
                t.opts
                    .iter()
                    .map(|o| o.ln_kappa + theta * o.rho * (d + 1.0))
                    .fold(f64::INFINITY, f64::min),
            )
        };
        let expected: f64 = members
            .iter()
            .filter_map(|&g| self.split(g))
            .map(|sp| sp.prob * (d + 1.0))
            .sum();
        if expected > 10.0 * ln_eps.exp() {
            return false;
        }
        let mut price = 0.0;
        for g in members {
            let Some(sp) = self.split(g) else { continue };
            match (cost(self.tilt(g, k)), cost(sp.light.at(k))) {
                (Some(full), Some(light)) => price += full - light,
                _ => return true,
            }
        }
        price >= 1.0
    }

    /// Flow `f`'s delay [steps] at grid point `k` with the walk members' heavy batches split
    /// off or not, as `goal` asks.
    fn solve_variant(
        &self,
        f: usize,
        k: i32,
        plan: &Plan,
        ln_eps: f64,
        split: bool,
        goal: Goal,
    ) -> Option<f64> {
        match plan {
            Plan::One { .. } => self.one_queue(f, k, plan, ln_eps, split, goal),
            Plan::Two { .. } => self.two_queues(f, k, plan, ln_eps, split, goal),
        }
    }

    /// Flow `f`'s plan and the grid point of `theta`, `None` where its queues are not stable
    /// there (no bound holds).
    fn at_point(&self, f: usize, theta: f64) -> Result<Option<(Rc<Plan>, i32)>, CalculusError> {
        if !(theta.is_finite() && theta > 0.0) {
            return Ok(None);
        }
        let plan = self.plan(f)?;
        Ok(grid_point(theta)
            .filter(|&k| self.stable(f, &plan, k))
            .map(|k| (plan, k)))
    }

    /// Flow `f`'s bound [s] at `theta`'s grid point (no search), `None` where its queues are
    /// not stable there or no bound holds.
    fn bound_at(&self, f: usize, epsilon: f64, theta: f64) -> Result<Option<f64>, CalculusError> {
        if !self.env[f].env.arrives() {
            return Ok(Some(0.0));
        }
        let Some((plan, k)) = self.at_point(f, theta)? else {
            return Ok(None);
        };
        Ok(self
            .solve(f, k, &plan, epsilon.ln())
            .map(|steps| steps * self.step_s)
            .filter(|s| s.is_finite()))
    }

    /// Flow `f`'s bound at `theta`'s grid point checked against `limit_s` [s]: one evaluation
    /// of the plain bound at the delay grid's point at or below the limit (where it passes,
    /// the least delay a solve finds there is within the limit too, for a non-increasing
    /// ln_p) gives the limit itself; otherwise the bound there decides.
    fn within_at(
        &self,
        f: usize,
        epsilon: f64,
        theta: f64,
        limit_s: f64,
    ) -> Result<Check, CalculusError> {
        if !self.env[f].env.arrives() {
            return Ok(Check::Within(0.0));
        }
        let Some((plan, k)) = self.at_point(f, theta)? else {
            return Ok(Check::Undefined);
        };
        let ln_eps = epsilon.ln();
        let steps = limit_s / self.step_s;
        if steps.is_finite() && steps >= 0.0 {
            let goal = Goal::Within(delay_point(delay_index_at_most(steps)));
            if self
                .solve_variant(f, k, &plan, ln_eps, false, goal)
                .is_some()
            {
                return Ok(Check::Within(limit_s));
            }
        }
        Ok(
            match self
                .solve(f, k, &plan, ln_eps)
                .map(|steps| steps * self.step_s)
                .filter(|s| s.is_finite())
            {
                Some(s) if s <= limit_s => Check::Within(s),
                Some(s) => Check::Over(s),
                None => Check::Undefined,
            },
        )
    }

    /// Whether the queues of flow `f`'s bound are stable at grid point `k` (a necessary
    /// condition for a bound there, monotone in `k`).
    fn stable(&self, f: usize, plan: &Plan, k: i32) -> bool {
        self.stable_variant(f, plan, k, false) || self.stable_variant(f, plan, k, true)
    }

    /// [`Analysis::stable`] for one variant.
    fn stable_variant(&self, f: usize, plan: &Plan, k: i32, split: bool) -> bool {
        let sum = |flows: &[usize]| {
            if split {
                self.rho_split(flows, k, f)
            } else {
                self.rho(flows, k)
            }
        };
        match (plan, &plan.queues(f)[..]) {
            (Plan::One { rate, .. }, [all]) => sum(all).is_some_and(|r| r <= *rate),
            (Plan::Two { c1, c2, .. }, [q1, q2]) => {
                sum(q1).is_some_and(|r| r <= *c1) && sum(q2).is_some_and(|r| r < *c2)
            }
            _ => false,
        }
    }

    /// Flow `f`'s bound at violation probability `epsilon`, minimised over the θ grid, and
    /// the θ of the minimum: the better of the scans without and with the walk members' heavy
    /// batches split off (their grids reach different θ).
    fn flow_minimum(&self, f: usize, epsilon: f64) -> Result<(Bound, Option<f64>), CalculusError> {
        if !self.env[f].env.arrives() {
            // no arrival, no delay
            return Ok((Bound::Within(0.0), None));
        }
        let plan = self.plan(f)?;
        let ln_eps = epsilon.ln();
        let mut best = self.scan(f, &plan, ln_eps, false);
        if self.worth_splitting(f, &plan, best, ln_eps) {
            if let Some((d, k)) = self.scan(f, &plan, ln_eps, true) {
                if best.is_none_or(|(b, _)| d < b) {
                    best = Some((d, k));
                }
            }
        }
        Ok(match best {
            Some((steps, k)) => {
                let bound = Bound::from_seconds(steps * self.step_s, || self.overload_reason(f));
                let theta = bound.seconds().map(|_| grid_theta(k));
                (bound, theta)
            }
            None => (Bound::Unbounded(self.overload_reason(f)), None),
        })
    }

    /// The least bound [steps] over the θ grid of one variant, with the walk members' heavy
    /// batches split off or not, and its grid point; `None` where no grid point has one.
    fn scan(&self, f: usize, plan: &Plan, ln_eps: f64, split: bool) -> Option<(f64, i32)> {
        let solve =
            |k: i32| self.solve_variant(f, k, plan, ln_eps, split, Goal::Least(self.near(f)));
        let stable = |k: i32| self.stable_variant(f, plan, k, split);
        // the largest grid θ where the queues are stable (a necessary condition, monotone)
        let theta_sup = plan
            .involved(f)
            .iter()
            .map(|&g| match self.split(g) {
                Some(sp) if split && g != f => sp.light.env.theta_sup(),
                _ => self.env[g].env.theta_sup(),
            })
            .fold(f64::INFINITY, f64::min);
        let top = if theta_sup.is_finite() {
            grid_at_least(theta_sup) - 1
        } else {
            // work-free flows only: any θ; start well above any useful value
            400
        };
        // down by octaves to the first stable point (far below, the roots drown in rounding
        // and nothing is stable: unbounded), then bisect the last octave
        let mut lo = top;
        let mut hi = top;
        while !stable(lo) {
            hi = lo;
            lo -= PER_OCTAVE as i32;
            if lo < top - 480 {
                return None;
            }
        }
        let lo = last_where(lo, hi, stable);
        // every grid point down from the largest stable θ until PATIENCE in a row are no
        // better than the best: the bound is a sawtooth of rising teeth (module docs,
        // "Search"), whose floors a coarser scan misses, and then a θ hint
        // (`crate::bound_hinted`) could meet a budget that the search says is missed
        const PATIENCE: i32 = 4;
        let mut best: Option<(f64, i32)> = None;
        let mut worse = 0;
        let mut k = lo;
        while k > lo - 240 && worse < PATIENCE {
            // once there is a best, a point is better only where its least delay lies below
            // the best's grid point (`solve_delay`): whether the grid point below is within
            // takes one evaluation, and only a point that passes is solved
            let at = match best {
                Some((b, _)) => {
                    let j = delay_index_at_least(b);
                    let goal = Goal::LeastWithin {
                        limit: delay_point(j - 1.0),
                        near: self.near(f),
                    };
                    (j > 0.0)
                        .then(|| self.solve_variant(f, k, plan, ln_eps, split, goal))
                        .flatten()
                }
                None => solve(k),
            };
            match (at, best) {
                (Some(d), Some((b, _))) if d >= b => worse += 1,
                (Some(d), _) => {
                    best = Some((d, k));
                    worse = 0;
                }
                (None, Some(_)) => worse += 1,
                (None, None) => {}
            }
            k -= 1;
        }
        best
    }

    /// Where every delay of flow `f` is searched from: half its tenant's SLO [steps] (the same
    /// start wherever it is solved gives the same answer; [`solve_delay`]).
    fn near(&self, f: usize) -> f64 {
        0.5 * self.net.tenants[self.net.flows[f].tenant].slo.latency_s / self.step_s
    }

    /// Why flow `f` has no bound: the most loaded queue of its path.
    fn overload_reason(&self, f: usize) -> String {
        let lvl = self.level[f];
        crate::snc::most_loaded_queue(
            self.net,
            &self.net.flows[f].path,
            lvl,
            "no θ with a finite bound",
            |q| {
                self.at_queue(q, lvl, usize::MAX)
                    .map(|g| self.env[g].env.mean_work_per_step() / self.step_s)
                    .sum()
            },
        )
    }

    // -----------------------------------------------------------------------------------------
    // preparing walks

    /// The flows inside a lump spec.
    fn spec_flows(&self, s: LumpSpec, ups: &[UpSpec]) -> Vec<usize> {
        match s {
            LumpSpec::Window(g) => vec![g],
            LumpSpec::Up(i) => ups[i]
                .relayed
                .iter()
                .chain(&ups[i].others)
                .copied()
                .collect(),
        }
    }

    /// A Doob walk at grid point k over `members` (flow, start, palm) with service `rate`,
    /// and its lumps: `specs` (relayed or window cross traffic) and the dependent members'
    /// excess. `w_ref` is a typical window for choosing the upstream lumps' θ'.
    fn prepare(
        &self,
        k: i32,
        members: &[(usize, Start, bool)],
        rate: f64,
        cross: Cross,
        split: bool,
    ) -> Option<Prepared> {
        let Cross { specs, ups, w_ref } = cross;
        let theta = grid_theta(k);
        // dependency: a group with two or more flows anywhere in this walk and its lumps
        let mut count: HashMap<usize, usize> = HashMap::default();
        if self.grouped {
            let all_flows = members
                .iter()
                .map(|m| m.0)
                .chain(specs.iter().flat_map(|&s| self.spec_flows(s, ups)));
            for g in all_flows {
                if let Some(grp) = self.group[g] {
                    *count.entry(grp).or_default() += 1;
                }
            }
        }
        let dependent = |g: usize| self.group[g].is_some_and(|grp| count[&grp] >= 2);
        let excess: Vec<(usize, Start, bool)> =
            members.iter().copied().filter(|m| dependent(m.0)).collect();
        // lump units: the specs, then one per dependent member; components by shared group
        // (without groups, each its own)
        let (comp, sizes) = if self.grouped {
            let mut sets: Vec<Vec<usize>> = specs
                .iter()
                .map(|&s| {
                    let mut v: Vec<usize> = self
                        .spec_flows(s, ups)
                        .into_iter()
                        .filter_map(|g| self.group[g])
                        .collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                })
                .collect();
            sets.extend(excess.iter().map(|m| self.group[m.0].into_iter().collect()));
            let comp = component_ids(&sets);
            let mut sizes = vec![0usize; comp.iter().copied().max().map_or(0, |x| x + 1)];
            for &c in &comp {
                sizes[c] += 1;
            }
            (comp, sizes)
        } else {
            ((0..specs.len()).collect(), vec![1; specs.len()])
        };
        let at = |unit: usize| -> (i32, f64) {
            let kh = hoelder_point(k, sizes[comp[unit]]);
            (kh, theta / grid_theta(kh))
        };
        let mut walker = Walker {
            members: Vec::with_capacity(members.len()),
            rate,
            caps: Vec::new(),
            costs: RefCell::default(),
            chosen: RefCell::default(),
        };
        // independent members other than the analysed flow: their heavy batches split off
        let mut parts: Vec<heavy::Part> = Vec::new();
        for &(g, start, palm) in members {
            if !dependent(g) {
                let sp = if split && !palm { self.split(g) } else { None };
                let pair = match sp {
                    Some(sp) => {
                        parts.push(heavy::Part {
                            prob: sp.prob,
                            atoms: &sp.atoms,
                            from_zero: matches!(start, Start::Zero | Start::A),
                        });
                        let t = sp.light.at(k)?;
                        [
                            (t.opts[0].rho, t.opts[0].ln_kappa),
                            (t.opts[1].rho, t.opts[1].ln_kappa),
                        ]
                    }
                    None => self.pair(g, k, palm)?,
                };
                let win = (sp.is_none() && !palm)
                    .then(|| self.env[g].window(k))
                    .flatten();
                walker.members.push((pair, start, win));
            }
        }
        walker.costs = RefCell::new(Vec::with_capacity(walker.members.len()));
        let heavy = if parts.is_empty() {
            None
        } else {
            Some(heavy::Law::new(&parts)?)
        };
        let mut lumps = Vec::with_capacity(specs.len() + excess.len());
        for (i, &s) in specs.iter().enumerate() {
            let (kh, scale) = at(i);
            let kind = match s {
                LumpSpec::Window(g) => {
                    LumpKind::Window(self.pair(g, kh, false)?, self.env[g].window(kh))
                }
                LumpSpec::Up(u) => LumpKind::Up(self.upstream(kh, &ups[u], w_ref)?),
            };
            lumps.push(Lump {
                kind,
                theta_at: grid_theta(kh),
                scale,
            });
        }
        for (j, &(g, start, palm)) in excess.iter().enumerate() {
            let (kh, scale) = at(specs.len() + j);
            // Y_g = sup (S_g − c_g n), c_g = ρ_g(θ''), P(Y_g > y) ≤ κ_g e^{−θ''y} (h ≡ 1)
            let tail = kh + PER_OCTAVE as i32;
            let t = self.tilt(g, tail)?.opts[PEAK];
            let ln_g = if palm { t.ln_kappa_palm? } else { t.ln_kappa };
            walker.rate -= t.rho;
            walker.caps.push((t.rho, start));
            lumps.push(Lump {
                kind: LumpKind::Const(ln_1p_tail(0.0, ln_g, grid_theta(kh), grid_theta(tail))),
                theta_at: grid_theta(kh),
                scale,
            });
        }
        Some(Prepared {
            walker,
            lumps,
            heavy,
        })
    }

    /// An upstream queue's lump at grid point k: its θ' is the grid point above k that gives
    /// the least value at a window of `w_ref` steps (module docs, "Search"; computed once per
    /// thread for the same inputs, `UpKey`).
    fn upstream(&self, k: i32, u: &UpSpec, w_ref: f64) -> Option<Rc<UpLump>> {
        let here = (u.at, k, w_ref.to_bits());
        if let Some(hit) = self.ups.borrow().get(&here) {
            return hit.clone();
        }
        let lump = self.upstream_shared(k, u, w_ref);
        self.ups.borrow_mut().insert(here, lump.clone());
        lump
    }

    /// [`Analysis::upstream`] from this thread's lumps, by their inputs.
    fn upstream_shared(&self, k: i32, u: &UpSpec, w_ref: f64) -> Option<Rc<UpLump>> {
        let mut labels: Vec<usize> = Vec::new();
        let mut keyed = |flows: &[usize]| -> Vec<(ByAddress, Option<usize>)> {
            flows
                .iter()
                .map(|&g| {
                    let label = self.group[g].map(|grp| {
                        labels.iter().position(|&l| l == grp).unwrap_or_else(|| {
                            labels.push(grp);
                            labels.len() - 1
                        })
                    });
                    (ByAddress(self.env[g].clone()), label)
                })
                .collect()
        };
        let key = UpKey {
            k,
            w_ref: w_ref.to_bits(),
            rate: u.rate.to_bits(),
            util: u.util.to_bits(),
            relayed: keyed(&u.relayed),
            others: keyed(&u.others),
        };
        if let Some(hit) = UPSTREAM.with(|c| c.borrow().get(&key).cloned()) {
            return hit;
        }
        let lump = self.upstream_uncached(k, u, w_ref);
        UPSTREAM.with(|c| {
            let mut c = c.borrow_mut();
            if c.len() >= UPSTREAM_LIMIT {
                c.clear();
            }
            c.insert(key, lump.clone());
        });
        lump
    }

    /// [`Analysis::upstream`] without the cache.
    fn upstream_uncached(&self, k: i32, u: &UpSpec, w_ref: f64) -> Option<Rc<UpLump>> {
        if u.util.is_nan() || u.util >= 1.0 {
            return None;
        }
        let theta = grid_theta(k);
        // the relayed windows, Hölder among themselves where dependent
        let sets: Vec<Vec<usize>> = u
            .relayed
            .iter()
            .map(|&g| self.group[g].into_iter().collect())
            .collect();
        let comp = component_ids(&sets);
        let mut relayed = Vec::with_capacity(u.relayed.len());
        let mut window_growth = 0.0;
        for (i, &g) in u.relayed.iter().enumerate() {
            let size = comp.iter().filter(|&&c| c == comp[i]).count();
            let kh = hoelder_point(k, size);
            let p = self.pair(g, kh, false)?;
            let scale = theta / grid_theta(kh);
            window_growth += scale * grid_theta(kh) * p[0].0.max(p[1].0);
            relayed.push((p, grid_theta(kh), scale, self.env[g].window(kh)));
        }
        let members: Vec<(usize, Start, bool)> = u
            .relayed
            .iter()
            .map(|&g| (g, Start::Zero, false))
            .chain(u.others.iter().map(|&g| (g, Start::Window, false)))
            .collect();
        // the lump with θ' at grid point kt, and its value at the window `w_ref`; `None`
        // beyond the queue's stability or the MGFs' domain (and at every larger θ')
        type Candidate = Option<(f64, Rc<UpLump>)>;
        let candidate = |kt: i32| -> Candidate {
            let inner = self.prepare(kt, &members, u.rate, Cross::NONE, false)?;
            let inner_lumps = lumps_value(&inner.lumps, 0.0, false)?;
            let mut rho_tail = 0.0;
            for &g in &u.relayed {
                let t = self.tilt(g, kt)?;
                rho_tail += t.opts[PERRON].rho.max(t.opts[PEAK].rho);
            }
            let lump = Rc::new(UpLump {
                relayed: relayed.clone(),
                inner: inner.walker,
                inner_lumps,
                rate: u.rate,
                ln_util: u.util.ln(),
                theta_tail: grid_theta(kt),
                tail: Tail::new(theta, grid_theta(kt)),
                window_growth,
                tail_growth: grid_theta(kt) * rho_tail,
            });
            let v = lump.value(w_ref, false)?;
            Some((v, lump))
        };
        // the candidates are the grid points from k + 1 up to the first where the lump is
        // undefined (at most 24), and their least is sought from the top down (module docs,
        // "Search"). The top: without dependency groups, the largest point where the flows'
        // least growth rates fit the queue's rate (necessary for a lump, monotone in θ'; a
        // little slack for the walk's own order of summing; a dependent member is kept at
        // another grid point's rate instead), bisected further down where no lump is defined.
        let mut tried: Vec<Option<Candidate>> = vec![None; 24];
        let mut at = |kt: i32| -> Candidate {
            tried[(kt - k - 1) as usize]
                .get_or_insert_with(|| candidate(kt))
                .clone()
        };
        let all: Vec<usize> = u.relayed.iter().chain(&u.others).copied().collect();
        let fits = |kt: i32| {
            self.rho(&all, kt)
                .is_some_and(|r| r <= u.rate * (1.0 + 1e-9))
        };
        let mut top = if self.grouped {
            k + 24
        } else {
            last_where(k, k + 25, fits)
        };
        if top > k && at(top).is_none() {
            top = last_where(k, top, |kt| at(kt).is_some());
        }
        if top <= k {
            return None;
        }
        let mut best = at(top)?;
        for kt in (k + 1..top).rev() {
            match at(kt) {
                Some(c) if c.0 < best.0 => best = c,
                _ => break,
            }
        }
        Some(best.1)
    }

    // -----------------------------------------------------------------------------------------
    // one queue

    fn one_queue(
        &self,
        f: usize,
        k: i32,
        plan: &Plan,
        ln_eps: f64,
        split: bool,
        goal: Goal,
    ) -> Option<f64> {
        let Plan::One { rate, high, same } = plan else {
            return None;
        };
        let rate = *rate;
        let members: Vec<(usize, Start, bool)> = high
            .iter()
            .map(|&g| (g, Start::Zero, false))
            .chain(same.iter().map(|&g| (g, Start::M, false)))
            .chain([(f, Start::M, true)])
            .collect();
        let prep = self.prepare(k, &members, rate, Cross::NONE, split)?;
        if split && prep.heavy.is_none() {
            return None;
        }
        let theta = grid_theta(k);
        let lumps = lumps_value(&prep.lumps, 0.0, false)?;
        // window bounds make the value non-linear in the walk's start, which the heavy
        // batches' sum relies on: they are used without heavy batches only
        let windowed = prep.heavy.is_none();
        let ln_p = |d: f64| -> Option<f64> {
            let m = d.ceil();
            let st = Starts { m, a: 0.0, w: 0.0 };
            let (walk, slack) =
                prep.walker
                    .eval(theta, m + 1.0, rate * (d - m - 1.0), &st, None, windowed)?;
            match &prep.heavy {
                None => Some(walk + lumps),
                Some(law) => {
                    let light = heavy::Light {
                        pieces: vec![(walk + lumps, theta * slack, m + 1.0)],
                        tail: None,
                    };
                    heavy::ln_bound(&light, law, theta, m)
                }
            }
        };
        goal.reach(ln_p, ln_eps)
    }

    // -----------------------------------------------------------------------------------------
    // two queues

    fn two_queues(
        &self,
        f: usize,
        k: i32,
        plan: &Plan,
        ln_eps: f64,
        split: bool,
        goal: Goal,
    ) -> Option<f64> {
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
        let specs: Vec<LumpSpec> = x2_src
            .iter()
            .map(|&g| LumpSpec::Window(g))
            .chain((0..x2_up.len()).map(LumpSpec::Up))
            .collect();
        // without cross traffic at q2 (and C2 ≥ C1) the hand-off n1 = 0 dominates: one term
        let single = specs.is_empty() && c2 >= c1;
        // q2's leftover gap at θ (per step): the blocks' terms fall at e^{−θ·gap} per step
        let q2_flows = plan.queues(f).pop().unwrap_or_default();
        let gap = c2
            - if split {
                self.rho_split(&q2_flows, k, f)?
            } else {
                self.rho(&q2_flows, k)?
            };
        if gap.is_nan() || gap <= 0.0 {
            return None;
        }
        let tau_rule = (1.0 / (theta * gap)).round().max(1.0);
        // the window at which the upstream lumps' θ' is chosen (module docs, "Search"), on a
        // grid of quarter octaves so that bounds whose q2 differs a little share their lumps
        let slo_steps = self.net.tenants[self.net.flows[f].tenant].slo.latency_s / self.step_s;
        let w_ref = ((tau_rule + LUMP_WINDOW_OF_SLO * slo_steps).log2() * 4.0).round() / 4.0;
        let w_ref = w_ref.exp2();
        let members: Vec<(usize, Start, bool)> = [(f, Start::M, true)]
            .into_iter()
            .chain(b_same.iter().map(|&g| (g, Start::M, false)))
            .chain(b_high.iter().map(|&g| (g, Start::Zero, false)))
            .chain(x1_same.iter().map(|&g| (g, Start::MaxAm, false)))
            .chain(x1_high.iter().map(|&g| (g, Start::A, false)))
            .collect();
        let prep = self.prepare(
            k,
            &members,
            c1,
            Cross {
                specs: &specs,
                ups: x2_up,
                w_ref,
            },
            split,
        )?;
        if split && prep.heavy.is_none() {
            return None;
        }
        // the lumps depend on the window only, and the delay's solver asks for the same
        // windows again and again (whole blocks of the same τ): each is computed once
        let lumps_at: RefCell<HashMap<(u64, bool), Option<f64>>> =
            RefCell::new(HashMap::with_capacity_and_hasher(64, Default::default()));
        let lumps_in = |w: f64, windowed: bool| -> Option<f64> {
            *lumps_at
                .borrow_mut()
                .entry((w.to_bits(), windowed))
                .or_insert_with(|| lumps_value(&prep.lumps, w, windowed))
        };
        // window bounds make a block's value non-linear in its start and its lumps grow faster
        // than their growth bound, which the later blocks' geometric tail and the heavy
        // batches' sum rely on: they are used in the blocks summed one by one, without heavy
        // batches
        let windowed = prep.heavy.is_none();
        // one block: n1 ∈ [a, a + τ), X2 over [0, a + τ), X1 from a, Doob from max(a, m + 1)
        let block = |d: f64,
                     tau: f64,
                     b: f64,
                     fixed: Option<&[u8]>,
                     windowed: bool|
         -> Option<(f64, f64, f64)> {
            let m = d.ceil();
            let a = b * tau;
            let w = a + tau;
            let n1 = if c2 >= c1 { a } else { a + tau - 1.0 };
            let st = Starts { m, a, w };
            let (walk, slack) = prep.walker.eval(
                theta,
                a.max(m + 1.0),
                (c2 - c1) * n1 + c2 * (d - m),
                &st,
                fixed,
                windowed,
            )?;
            let lumps = if single { 0.0 } else { lumps_in(w, windowed)? };
            Some((walk, lumps, theta * slack))
        };
        // the blocks' terms, kept between the solver's evaluations
        let terms: RefCell<Vec<f64>> = RefCell::new(Vec::with_capacity(40));
        let ln_p = |d: f64| -> Option<f64> {
            let m = d.ceil();
            if single {
                let (w, l, slack) = block(d, 1.0, 0.0, None, windowed)?;
                return match &prep.heavy {
                    None => Some(w + l),
                    Some(law) => {
                        let light = heavy::Light {
                            pieces: vec![(w + l, slack, m + 1.0)],
                            tail: None,
                        };
                        heavy::ln_bound(&light, law, theta, m)
                    }
                };
            }
            // at most 32 blocks before t (any τ is valid)
            let tau = tau_rule.max(((m + 1.0) / 32.0).ceil());
            // blocks until t1's block is past t (the walk starts at a from then on), and one
            let b_last = ((m + 1.0) / tau).ceil() + 1.0;
            let mut terms = terms.borrow_mut();
            terms.clear();
            let mut light = heavy::Light::default();
            let mut b = 0.0;
            let last = loop {
                let (walk, lumps, slack) = block(d, tau, b, None, windowed)?;
                terms.push(walk + lumps);
                if prep.heavy.is_some() {
                    light
                        .pieces
                        .push((walk + lumps, slack, (b * tau).max(m + 1.0)));
                }
                if b >= b_last {
                    break (walk, lumps, slack);
                }
                b += 1.0;
            };
            // every later block with the last block's supermartingales, without window
            // bounds: the walk part changes linearly, the lumps grow at most at their growth
            // bound
            let (last_walk, last_lumps, slack) = if windowed {
                block(d, tau, b, None, false)?
            } else {
                last
            };
            // the walker's last evaluation was that block's
            let choice = prep.walker.choice();
            let (next_walk, _, _) = block(d, tau, b + 1.0, Some(&choice), false)?;
            let growth = lumps_growth(&prep.lumps, (b + 1.0) * tau)?;
            let ln_r = next_walk - last_walk + growth * tau;
            if ln_r.is_nan() || ln_r >= 0.0 {
                return None;
            }
            if let Some(law) = &prep.heavy {
                light.tail = Some((
                    last_walk + last_lumps + ln_r,
                    ln_r,
                    tau,
                    (b + 1.0) * tau,
                    slack,
                ));
                return heavy::ln_bound(&light, law, theta, m);
            }
            terms.push(last_walk + last_lumps + ln_r - (-ln_r.exp_m1()).ln());
            Some(log_sum_exp(&terms))
        };
        goal.reach(ln_p, ln_eps)
    }
}

/// The largest x in (`ok`, `bad`) where `holds`, or `ok` where there is none, for a `holds`
/// that is true up to some point and false above it (`ok` and `bad` are not asked).
fn last_where(mut ok: i32, mut bad: i32, mut holds: impl FnMut(i32) -> bool) -> i32 {
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if holds(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    ok
}

/// Relative spacing of the delays [`solve_delay`] returns.
const DELAY_SPACING: f64 = 1e-3;

/// Delay grid point j [steps]: (1 + [`DELAY_SPACING`])^j − 1, spaced about
/// `DELAY_SPACING`·max(1, d) apart.
fn delay_point(j: f64) -> f64 {
    (j * DELAY_SPACING.ln_1p()).exp_m1()
}

/// The index of the least delay grid point at or above d ≥ 0.
fn delay_index_at_least(d: f64) -> f64 {
    let mut j = (d.ln_1p() / DELAY_SPACING.ln_1p()).ceil().max(0.0);
    while delay_point(j) < d {
        j += 1.0;
    }
    while j > 0.0 && delay_point(j - 1.0) >= d {
        j -= 1.0;
    }
    j
}

/// The index of the greatest delay grid point at or below d ≥ 0.
fn delay_index_at_most(d: f64) -> f64 {
    let j = delay_index_at_least(d);
    if delay_point(j) > d {
        j - 1.0
    } else {
        j
    }
}

/// The least point d of the delay grid ([`delay_point`]: 0, then about 0.1% apart) with
/// ln_p(d) ≤ ln_eps [steps], `None` when none up to 10⁹ steps qualifies. A bracket grows from
/// `guess` (secant steps, else factors that square), regula falsi (Illinois; bisection where
/// a value is undefined) narrows it to about one grid spacing, and the grid points left in it
/// are evaluated; only evaluated points are returned. For a non-increasing ln_p the answer
/// does not depend on `guess`. The bounds' ln_p rises a little where the delay crosses a whole
/// step, so their answers may differ by a step or so with the start: callers start from a
/// delay that their inputs determine.
fn solve_delay(ln_p: impl Fn(f64) -> Option<f64>, ln_eps: f64, guess: Option<f64>) -> Option<f64> {
    let g = |d: f64| ln_p(d).map(|v| v - ln_eps);
    let below = |v: Option<f64>| v.is_some_and(|v| v <= 0.0);
    let at0 = g(0.0);
    if below(at0) {
        return Some(0.0);
    }
    const MAX: f64 = 1e9;
    let start = guess
        .filter(|x| x.is_finite())
        .map_or(1.0, |x| x.clamp(1.0, MAX));
    let (mut lo, mut g_lo, mut hi, mut g_hi);
    let at_start = g(start);
    // the next point of the bracket's growth from x (the last point, g(x) on the start's
    // side): past the secant's root through the last two points by a little where it points
    // that way within a factor 16 (the bounds' ln_p is close to linear in d, so the bracket is
    // usually found at the second or third point), else `ratio` away
    let next = |x: f64, gx: f64, prev: Option<(f64, f64)>, ratio: f64, up: bool| -> f64 {
        let far = if up { x * ratio } else { x / ratio };
        let Some((xp, gp)) = prev else { return far };
        let root = x - gx * (x - xp) / (gx - gp);
        let past = if up { root * 1.002 } else { root / 1.002 };
        let (least, most) = if up { (x, x * 16.0) } else { (x / 16.0, x) };
        if past.is_finite() && past > least && past < most {
            past
        } else {
            far
        }
    };
    let mut ratio = 1.1f64;
    let mut prev: Option<(f64, f64)> = None;
    if below(at_start) {
        (hi, g_hi) = (start, at_start);
        loop {
            let x = next(hi, g_hi.unwrap_or(0.0), prev, ratio, false);
            if x < 1.0 {
                (lo, g_lo) = (0.0, at0);
                break;
            }
            let v = g(x);
            if below(v) {
                prev = g_hi.map(|gh| (hi, gh));
                (hi, g_hi) = (x, v);
                ratio *= ratio;
            } else {
                (lo, g_lo) = (x, v);
                break;
            }
        }
    } else {
        (lo, g_lo) = (start, at_start);
        loop {
            let x = match g_lo {
                Some(gl) => next(lo, gl, prev, ratio, true),
                None => lo * ratio,
            };
            if x > MAX {
                return None;
            }
            let v = g(x);
            if below(v) {
                (hi, g_hi) = (x, v);
                break;
            }
            prev = g_lo.map(|gl| (lo, gl));
            (lo, g_lo) = (x, v);
            ratio *= ratio;
        }
    }
    let mut side = 0i8;
    for _ in 0..60 {
        if hi - lo <= DELAY_SPACING * hi.max(1.0) {
            break;
        }
        let (Some(a), Some(b)) = (g_lo, g_hi) else {
            let mid = 0.5 * (lo + hi);
            match g(mid) {
                Some(v) if v <= 0.0 => (hi, g_hi) = (mid, Some(v)),
                other => (lo, g_lo) = (mid, other),
            }
            continue;
        };
        // a > 0 ≥ b; Illinois: halve the value of an end kept twice
        let x = (lo * b - hi * a) / (b - a);
        let x = if x > lo && x < hi { x } else { 0.5 * (lo + hi) };
        match g(x) {
            Some(v) if v <= 0.0 => {
                (hi, g_hi) = (x, Some(v));
                if side == 1 {
                    g_lo = Some(a / 2.0);
                }
                side = 1;
            }
            other => {
                (lo, g_lo) = (x, other);
                if side == -1 {
                    g_hi = Some(b / 2.0);
                }
                side = -1;
            }
        }
    }
    if hi - lo > 2.0 * DELAY_SPACING * hi.max(1.0) {
        // not narrowed (undefined values throughout): hi is a valid answer
        return Some(hi);
    }
    // the least grid point at or above the root lies in (lo, grid point at or above hi]
    let mut j = delay_index_at_least(hi);
    while j > 0.0 && delay_point(j - 1.0) > lo {
        if below(g(delay_point(j - 1.0))) {
            j -= 1.0;
        } else {
            break;
        }
    }
    let d = delay_point(j);
    if d == hi || below(g(d)) {
        Some(d)
    } else {
        // ln_p rose between hi and the grid point above it: hi is a valid answer
        Some(hi)
    }
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
    Tail::new(theta, theta_t).ln_integral(ln_u, ln_g)
}

/// The integral of [`ln_tail_integral`] for one θ < θ': its constants.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tail {
    /// θ/θ'
    pub ratio: f64,
    /// ln θ/(θ' − θ)
    ln_r: f64,
    /// ln θ'/(θ' − θ)
    pub ln_c: f64,
}

impl Tail {
    pub fn new(theta: f64, theta_t: f64) -> Tail {
        Tail {
            ratio: theta / theta_t,
            ln_r: (theta / (theta_t - theta)).ln(),
            ln_c: (theta_t / (theta_t - theta)).ln(),
        }
    }

    /// [`ln_tail_integral`] at this θ and θ'.
    pub fn ln_integral(&self, ln_u: f64, ln_g: f64) -> f64 {
        if ln_g <= ln_u {
            // y0 = 0: G θ/(θ' − θ)
            ln_g + self.ln_r
        } else {
            // y0 = ln(G/U)/θ': U [e^{θ y0} θ'/(θ' − θ) − 1]
            let a = self.ratio * (ln_g - ln_u) + self.ln_c;
            // ln(e^a − 1), a > 0
            ln_u + a + (-(-a).exp()).ln_1p()
        }
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
    let mut owner: HashMap<usize, usize> = HashMap::default();
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
    let mut ids: HashMap<usize, usize> = HashMap::default();
    (0..n)
        .map(|i| {
            let r = find(&mut parent, i);
            let next = ids.len();
            *ids.entry(r).or_insert(next)
        })
        .collect()
}

impl OverTheta for Analysis<'_> {
    fn flow_minimum(
        &mut self,
        f: usize,
        epsilon: f64,
    ) -> Result<(Bound, Option<f64>), CalculusError> {
        Analysis::flow_minimum(self, f, epsilon)
    }

    fn flow_bound_at(
        &mut self,
        f: usize,
        epsilon: f64,
        theta: f64,
    ) -> Result<Option<f64>, CalculusError> {
        self.bound_at(f, epsilon, theta)
    }

    fn flow_within_at(
        &mut self,
        f: usize,
        epsilon: f64,
        theta: f64,
        limit_s: f64,
    ) -> Result<Check, CalculusError> {
        self.within_at(f, epsilon, theta, limit_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_points_bracket_theta() {
        for theta in [1e-7, 3.3e-6, 1.0, 17.0, 1e4] {
            let k = grid_at_least(theta);
            assert!(
                grid_theta(k) >= theta && grid_theta(k - 1) < theta,
                "{theta}"
            );
        }
    }

    #[test]
    fn the_tail_integral_matches_quadrature() {
        for (u, g, th, tt) in [
            (0.05, 0.3, 1.0, 2.0),
            (0.05, 3.0, 1.0, 1.5),
            (1.0, 0.5, 2.0, 3.0),
        ] {
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
        let d = solve_delay(|d| Some(2.0 - d / 10.0), -5.0, None).unwrap();
        assert!((70.0..70.0 * (1.0 + DELAY_SPACING)).contains(&d), "{d}");
        // the same grid point from any start, and only points that were evaluated
        for guess in [
            None,
            Some(0.5),
            Some(69.99),
            Some(70.0),
            Some(71.0),
            Some(3e5),
            Some(f64::NAN),
        ] {
            let asked = RefCell::new(Vec::new());
            let got = solve_delay(
                |d| {
                    asked.borrow_mut().push(d);
                    Some(2.0 - d / 10.0)
                },
                -5.0,
                guess,
            );
            assert_eq!(got, Some(d), "{guess:?}");
            assert!(asked.borrow().contains(&d));
        }
        // a step function: the least grid point at or above the step
        let step = |d: f64| Some(if d >= 1234.5 { -6.0 } else { 0.0 });
        let d = solve_delay(step, -5.0, Some(10.0)).unwrap();
        assert_eq!(d, delay_point(delay_index_at_least(1234.5)));
        assert_eq!(solve_delay(step, -5.0, Some(1e6)), Some(d));
        assert_eq!(solve_delay(|_| None, -5.0, None), None);
        assert_eq!(solve_delay(|_| Some(1.0), -5.0, Some(5.0)), None);
        assert_eq!(solve_delay(|_| Some(-6.0), -5.0, Some(5.0)), Some(0.0));
    }

    #[test]
    fn groups_form_components() {
        let ids = component_ids(&[vec![1], vec![], vec![2, 1], vec![3], vec![3]]);
        assert_eq!(ids[0], ids[2]);
        assert_ne!(ids[0], ids[1]);
        assert_eq!(ids[3], ids[4]);
    }
}
