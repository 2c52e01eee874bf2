//! The SNC algebra: arrival and service processes as (ρ(θ), σ(θ)) MGF bounds and the operators
//! of snc-meister Table 1, with Hölder's inequality for dependent inputs (§4.2).
//!
//! Discrete time with the analysis' step: ρ in [work/step], σ in [work], θ in [1/work].
//! An arrival A satisfies E[e^{θA(m,n)}] ≤ e^{θ(ρ_A(θ)(n−m) + σ_A(θ))}; a service S satisfies
//! E[e^{−θS(m,n)}] ≤ e^{θ(ρ_S(θ)(n−m) + σ_S(θ))} (so ρ_S < 0 for a useful server).
//!
//! | operator | ρ | σ |
//! |---|---|---|
//! | link of rate R | −R | 0 |
//! | aggregate A ⊕ B | ρ_A(pθ) + ρ_B(qθ) | σ_A(pθ) + σ_B(qθ) |
//! | leftover S ⊖ A | ρ_A(pθ) + ρ_S(qθ) | σ_A + σ_S |
//! | output A ⊘ S | ρ_A(pθ) | σ_A + σ_S − ln(1 − e^{θ(ρ_A(pθ)+ρ_S(qθ))})/θ |
//! | convolution S ⊗ T | max(ρ_S(pθ), ρ_T(qθ)) | σ_S + σ_T − ln(1 − e^{−θ\|ρ_S−ρ_T\|})/θ |
//!
//! For independent inputs p = q = 1. Two inputs are dependent when their [`Deps`] intersect
//! (a common source flow, queue or dependency group); the operator then gets a Hölder slot and
//! is evaluated with 1/p + 1/q = 1, p read from the slot at evaluation time ([`Eval`]). Slots
//! are numbered by the [`Algebra`] that built the operator; the θ search optimises each slot's
//! p (see `search`).
//!
//! The output operator needs ρ_A + ρ_S < 0 (stable queue) and is undefined otherwise; every
//! operator is undefined (`None`) where an input is.
//!
//! Equal rates in the convolution: the geometric-sum term is infinite for ρ_S = ρ_T and huge
//! when they are close (a link convolved with the same link minus a trickle of cross traffic
//! would be far worse than with no cross traffic at all). Under [`ConvolutionRule::Exact`]
//! (the default):
//! * two deterministic constant-rate servers (links, tandems of links) convolve exactly, as in
//!   min-plus algebra: ρ = max(ρ_S, ρ_T), σ = 0, whatever the rates;
//! * otherwise the gap used is at least δ = 1% of the faster rate: when |ρ_S − ρ_T| < δ the
//!   slower server is slowed further, to ρ_max + (δ − |ρ_S − ρ_T|), and the sum term uses δ.
//!   Raising ρ of a service only removes service, so this is valid; it makes the operator
//!   monotone in its inputs and continuous at equal rates.
//!
//! [`ConvolutionRule::Original`] is SNC-Meister's: exactly equal rates weaken ρ_S to 0.99·ρ_S,
//! close-but-unequal rates use their gap as is, deterministic servers get no special case.
//!
//! **The shared θ grid.** An analysis evaluates the same arrivals (every flow's MMPP, the
//! groups' outputs upstream) at thousands of θ, one θ search per flow. Every arrival without a
//! Hölder operator below it (its value does not depend on the Hölder exponents) keeps its
//! exact (ρ, σ) at the points θ_i = 10^{i/128} of one grid shared by the whole analysis
//! ([`grid_theta`]), each computed once, on first use, from its inputs' grid values (under
//! the exact convolution rule, or under either rule when no convolution lies below: every
//! flow's MMPP, the sums, and the outputs of single queues, whatever the θ search); an exact
//! evaluation at a grid point reads them (exact, and cheap). With [`Eval::tabulated`], such an
//! arrival is read between grid points by cubic interpolation in ln θ over the four nearest
//! points (exact where every one is defined; at the domain's edges, where a neighbour is
//! undefined, and within a factor 1.25 of the pole of an MGF below, the exact value is computed
//! instead). An interpolated value is a guide for the θ
//! search only, not a bound: the search evaluates exactly at the grid points around the
//! minimum it finds (see `search`).
//!
//! **Sums of many flows.** A queue's cross traffic is a sum over its flows, and near the sum's
//! pole (the least of its parts') it is evaluated from its parts. So a sum keeps each distinct
//! part once (flows replaying one trace share one MMPP bound: k evaluations for n flows of k
//! traces, then n additions in the flows' order, the same bits as part by part), and
//! [`Algebra::aggregate_all`] adds the parts whose pole is at least twice the least one's as one
//! inner sum first: near the outer pole that inner sum is still read off its own grid, so an
//! evaluation there costs the few parts near the pole, not every flow of the queue. Between
//! grid points, a sum of MMPPs at most half its pole is evaluated by the chord of its log-MGF
//! rate Λ(θ) = θρ(θ) through the two grid points around θ: Λ is convex (an MMPP's is the log of
//! the spectral radius of a matrix of log-convex entries, Kingman 1961; sums add them), so the
//! chord lies above it and is a valid bound, within a few 1e-5 of the exact value there; the
//! parts near the pole stay exact.

use super::mmpp::MmppBound;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The set of independent sources a process derives from: flows, queues, dependency groups.
/// Ids are chosen by the caller (the network analysis numbers flows, then queues, then groups).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Deps {
    words: Vec<u64>,
}

impl Deps {
    /// The empty set.
    pub fn none() -> Deps {
        Deps::default()
    }

    /// A set with one source.
    pub fn single(id: usize) -> Deps {
        let mut d = Deps::default();
        d.insert(id);
        d
    }

    pub fn insert(&mut self, id: usize) {
        let w = id / 64;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (id % 64);
    }

    pub fn contains(&self, id: usize) -> bool {
        self.words
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub fn union(&self, other: &Deps) -> Deps {
        let (long, short) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut words = long.words.clone();
        for (w, o) in words.iter_mut().zip(&short.words) {
            *w |= o;
        }
        Deps { words }
    }

    pub fn intersects(&self, other: &Deps) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }
}

/// A (ρ, σ) pair at one θ: ρ [work/step], σ [work].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RhoSigma {
    pub rho: f64,
    pub sigma: f64,
}

/// How the convolution treats equal rates (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConvolutionRule {
    /// exact for deterministic servers, 1% perturbation otherwise
    #[default]
    Exact,
    /// SNC-Meister's: 1% perturbation whenever the rates are equal
    Original,
}

/// Evaluation settings: the Hölder p of every slot (missing slots use p = 2) and the
/// convolution rule.
#[derive(Debug, Clone, Copy)]
pub struct Eval<'a> {
    pub hoelder: &'a [f64],
    pub convolution: ConvolutionRule,
    /// read arrivals off the shared θ grid by interpolation (module docs): a guide for a θ
    /// search, not a bound; `false`: every value a bound at θ itself (exact, but for a sum of
    /// MMPPs between grid points at most half its pole: its chord, module docs)
    pub tabulated: bool,
}

impl Eval<'_> {
    /// Independent evaluation with the exact convolution rule.
    pub const PLAIN: Eval<'static> = Eval {
        hoelder: &[],
        convolution: ConvolutionRule::Exact,
        tabulated: false,
    };

    /// This evaluation with every value a bound at θ itself (not interpolated).
    pub fn exact(&self) -> Eval<'_> {
        Eval {
            tabulated: false,
            ..*self
        }
    }

    /// (p, q) of a slot; (1, 1) for an independent operator.
    fn pq(&self, slot: Option<usize>) -> (f64, f64) {
        match slot {
            None => (1.0, 1.0),
            Some(s) => {
                let p = self.hoelder.get(s).copied().unwrap_or(2.0);
                (p, p / (p - 1.0))
            }
        }
    }
}

/// An arrival process bound. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct MgfArrival(Arc<ArrivalNode>);

#[derive(Debug)]
struct ArrivalNode {
    kind: ArrivalKind,
    deps: Deps,
    /// no Hölder operator below: the value depends on θ (and the convolution rule) only
    fixed: bool,
    /// no convolution below: the value does not depend on the convolution rule either
    rule_free: bool,
    /// supremum of θ where the MGFs below are finite, with every Hölder exponent 1 (the
    /// domain of a `fixed` arrival)
    sup: f64,
    /// an MMPP or a sum of them: σ = 0 and θρ(θ), the log-MGF rate, is convex in θ
    convex: bool,
    /// exact values at the shared grid's points under [`ConvolutionRule::Exact`], which are
    /// those under either rule when `rule_free` (module docs)
    grid: Mutex<GridValues>,
}

impl ArrivalNode {
    fn new(kind: ArrivalKind, deps: Deps) -> ArrivalNode {
        let fixed = match &kind {
            ArrivalKind::Mmpp(_) => true,
            ArrivalKind::Sum(terms) => terms.distinct.iter().all(|a| a.0.fixed),
            ArrivalKind::Aggregate(a, b, slot) => slot.is_none() && a.0.fixed && b.0.fixed,
            ArrivalKind::Output(a, s, slot) => slot.is_none() && a.0.fixed && s.0.fixed,
            ArrivalKind::Difference(total, parts) => {
                total.0.fixed && parts.iter().all(|a| a.0.fixed)
            }
        };
        let rule_free = match &kind {
            ArrivalKind::Mmpp(_) => true,
            ArrivalKind::Sum(terms) => terms.distinct.iter().all(|a| a.0.rule_free),
            ArrivalKind::Aggregate(a, b, _) => a.0.rule_free && b.0.rule_free,
            ArrivalKind::Output(a, s, _) => a.0.rule_free && s.0.rule_free,
            ArrivalKind::Difference(total, parts) => {
                total.0.rule_free && parts.iter().all(|a| a.0.rule_free)
            }
        };
        let sup = match &kind {
            ArrivalKind::Mmpp(m) => m.theta_sup(),
            ArrivalKind::Sum(terms) => terms
                .distinct
                .iter()
                .map(|a| a.0.sup)
                .fold(f64::INFINITY, f64::min),
            ArrivalKind::Aggregate(a, b, _) => a.0.sup.min(b.0.sup),
            ArrivalKind::Output(a, s, _) => a.0.sup.min(s.0.sup),
            ArrivalKind::Difference(total, _) => total.0.sup,
        };
        let convex = match &kind {
            ArrivalKind::Mmpp(_) => true,
            ArrivalKind::Sum(terms) => terms.distinct.iter().all(|a| a.0.convex),
            _ => false,
        };
        ArrivalNode {
            kind,
            deps,
            fixed,
            rule_free,
            sup,
            convex,
            grid: Mutex::new(GridValues::default()),
        }
    }
}

/// One arrival's values at a run of consecutive grid points, grown as θ searches reach new
/// points: `values[k]` is grid point `base + k`; ρ = NaN marks a point not computed yet,
/// ρ = +∞ a point outside the domain.
#[derive(Debug, Default)]
struct GridValues {
    base: i32,
    values: Vec<RhoSigma>,
}

const UNKNOWN: RhoSigma = RhoSigma {
    rho: f64::NAN,
    sigma: 0.0,
};
const UNDEFINED: RhoSigma = RhoSigma {
    rho: f64::INFINITY,
    sigma: 0.0,
};

impl GridValues {
    /// The stored value of point `i`: `None` not computed, `Some(None)` undefined.
    fn get(&self, i: i32) -> Option<Option<RhoSigma>> {
        let k = usize::try_from(i64::from(i) - i64::from(self.base)).ok()?;
        let v = self.values.get(k)?;
        if v.rho.is_nan() {
            None
        } else if v.rho == f64::INFINITY {
            Some(None)
        } else {
            Some(Some(*v))
        }
    }

    fn set(&mut self, i: i32, v: Option<RhoSigma>) {
        if self.values.is_empty() {
            self.base = i;
        }
        if i < self.base {
            let grow = (self.base - i) as usize;
            self.values.splice(0..0, std::iter::repeat_n(UNKNOWN, grow));
            self.base = i;
        }
        let k = (i - self.base) as usize;
        if k >= self.values.len() {
            self.values.resize(k + 1, UNKNOWN);
        }
        self.values[k] = v.unwrap_or(UNDEFINED);
    }
}

/// Points of the shared θ grid per decade.
pub const GRID_PER_DECADE: f64 = 128.0;

/// θ at point `i` of the shared grid: 10^{i/128} [1/work].
pub fn grid_theta(i: i32) -> f64 {
    // each point's power computed once per process (`powf` is most of a grid read otherwise):
    // the table holds exactly what `powf` returns, 0 for a point not computed yet
    let Some(slot) = usize::try_from(i64::from(i) + GRID_TABLE_HALF as i64)
        .ok()
        .and_then(|k| GRID_TABLE.get(k))
    else {
        return grid_theta_computed(i);
    };
    match slot.load(Ordering::Relaxed) {
        0 => {
            let theta = grid_theta_computed(i);
            slot.store(theta.to_bits(), Ordering::Relaxed);
            theta
        }
        bits => f64::from_bits(bits),
    }
}

fn grid_theta_computed(i: i32) -> f64 {
    10f64.powf(f64::from(i) / GRID_PER_DECADE)
}

/// Grid points on either side of θ = 1 that [`grid_theta`] keeps: 10^{±32}.
const GRID_TABLE_HALF: usize = 32 * GRID_PER_DECADE as usize;

static GRID_TABLE: [AtomicU64; 2 * GRID_TABLE_HALF] =
    [const { AtomicU64::new(0) }; 2 * GRID_TABLE_HALF];

/// The grid points around θ: `i` with θ_i ≤ θ < θ_{i+1} (`None` for θ ≤ 0, non-finite, or
/// beyond the grid).
pub fn grid_below(theta: f64) -> Option<i32> {
    if !(theta > 0.0 && theta.is_finite()) {
        return None;
    }
    let u = (theta.log10() * GRID_PER_DECADE).floor();
    if !(u > f64::from(i32::MIN) + 2.0 && u < f64::from(i32::MAX) - 2.0) {
        return None;
    }
    let mut i = u as i32;
    // rounding of log10 may land one point off
    if grid_theta(i) > theta {
        i -= 1;
    } else if grid_theta(i + 1) <= theta {
        i += 1;
    }
    Some(i)
}

/// `Some(i)` when θ is exactly grid point `i`.
fn grid_point(theta: f64) -> Option<i32> {
    let i = grid_below(theta)?;
    (grid_theta(i) == theta).then_some(i)
}

#[derive(Debug)]
enum ArrivalKind {
    Mmpp(Arc<MmppBound>),
    /// mutually independent arrivals added up (an n-ary ⊕ without Hölder)
    Sum(Terms),
    Aggregate(MgfArrival, MgfArrival, Option<usize>),
    Output(MgfArrival, MgfService, Option<usize>),
    /// a sum of independent MMPPs without some of them (see [`Algebra::difference`])
    Difference(MgfArrival, Vec<MgfArrival>),
}

/// The arrivals of a sum, each distinct one kept once: arrivals equal in value (one node, or
/// MMPP arrivals of one shared bound: tenants replaying one trace) are evaluated once per θ,
/// so that a sum over n flows of k distinct MMPPs costs k evaluations and n additions.
#[derive(Debug)]
struct Terms {
    /// the distinct arrivals
    distinct: Vec<MgfArrival>,
    /// the arrivals added up, in order, as indices into `distinct`
    order: Vec<usize>,
}

impl Terms {
    fn new(parts: Vec<MgfArrival>) -> Terms {
        let mut index: HashMap<*const (), usize> = HashMap::with_capacity(parts.len());
        let mut distinct = Vec::new();
        let mut order = Vec::with_capacity(parts.len());
        for a in parts {
            let next = distinct.len();
            let k = *index.entry(a.value_key()).or_insert(next);
            if k == next {
                distinct.push(a);
            }
            order.push(k);
        }
        Terms { distinct, order }
    }

    /// Σ of the arrivals at θ, added in order (as each would be one by one: the same bits);
    /// `None` where one is undefined.
    fn bound(&self, theta: f64, ev: &Eval) -> Option<RhoSigma> {
        let mut values = Vec::with_capacity(self.distinct.len());
        for a in &self.distinct {
            values.push(a.bound(theta, ev)?);
        }
        let mut acc = RhoSigma {
            rho: 0.0,
            sigma: 0.0,
        };
        for &k in &self.order {
            let b: &RhoSigma = values.get(k)?;
            acc.rho += b.rho;
            acc.sigma += b.sigma;
        }
        Some(acc)
    }
}

/// Mutually independent arrivals added up, in this order.
fn sum(parts: Vec<MgfArrival>) -> MgfArrival {
    let deps = parts
        .iter()
        .fold(Deps::none(), |acc, a| acc.union(a.deps()));
    MgfArrival(Arc::new(ArrivalNode::new(
        ArrivalKind::Sum(Terms::new(parts)),
        deps,
    )))
}

/// A sum of many independent arrivals adds up the parts whose MGF's pole is at least this
/// factor above the least one's as one inner sum (module docs).
const FAR_POLE: f64 = 2.0;

/// A service process bound. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct MgfService(Arc<ServiceNode>);

#[derive(Debug)]
struct ServiceNode {
    kind: ServiceKind,
    deps: Deps,
    /// a constant-rate server or a tandem of them (σ = 0, ρ constant)
    deterministic: bool,
    /// no Hölder operator below (see [`ArrivalNode::fixed`])
    fixed: bool,
    /// no convolution below (see [`ArrivalNode::rule_free`])
    rule_free: bool,
    /// see [`ArrivalNode::sup`]
    sup: f64,
}

impl ServiceNode {
    fn new(kind: ServiceKind, deps: Deps, deterministic: bool) -> ServiceNode {
        let fixed = match &kind {
            ServiceKind::Constant(_) => true,
            ServiceKind::Leftover(s, a, slot) => slot.is_none() && s.0.fixed && a.0.fixed,
            ServiceKind::Convolution(s, t, slot) => slot.is_none() && s.0.fixed && t.0.fixed,
        };
        let rule_free = match &kind {
            ServiceKind::Constant(_) => true,
            ServiceKind::Leftover(s, a, _) => s.0.rule_free && a.0.rule_free,
            ServiceKind::Convolution(..) => false,
        };
        let sup = match &kind {
            ServiceKind::Constant(_) => f64::INFINITY,
            ServiceKind::Leftover(s, a, _) => s.0.sup.min(a.0.sup),
            ServiceKind::Convolution(s, t, _) => s.0.sup.min(t.0.sup),
        };
        ServiceNode {
            kind,
            deps,
            deterministic,
            fixed,
            rule_free,
            sup,
        }
    }
}

#[derive(Debug)]
enum ServiceKind {
    /// rate [work/step] > 0
    Constant(f64),
    Leftover(MgfService, MgfArrival, Option<usize>),
    Convolution(MgfService, MgfService, Option<usize>),
}

fn geometric_sigma(theta: f64, x: f64) -> f64 {
    // −ln(1 − e^{θx})/θ for x < 0
    -(-(theta * x).exp_m1()).ln() / theta
}

impl MgfArrival {
    /// The sources this arrival derives from.
    pub fn deps(&self) -> &Deps {
        &self.0.deps
    }

    /// Equal for arrivals equal in value at every θ: one node, or MMPP arrivals of one bound
    /// (their dependencies may differ, their values do not).
    fn value_key(&self) -> *const () {
        match &self.0.kind {
            ArrivalKind::Mmpp(m) => Arc::as_ptr(m).cast(),
            _ => Arc::as_ptr(&self.0).cast(),
        }
    }

    /// (ρ, σ) at θ, or `None` outside the domain; interpolated on the shared grid when
    /// `ev.tabulated` and this arrival has no Hölder operator below (module docs).
    pub fn bound(&self, theta: f64, ev: &Eval) -> Option<RhoSigma> {
        if self.0.fixed && (ev.convolution == ConvolutionRule::Exact || self.0.rule_free) {
            if ev.tabulated {
                return self.interpolated(theta, ev);
            }
            if let Some(i) = grid_point(theta) {
                return self.at_point(i, ev);
            }
            if let Some(v) = self.chord(theta, ev) {
                return Some(v);
            }
        }
        self.exact(theta, ev)
    }

    /// A sum of MMPPs at θ between grid points θ_i < θ < θ_{i+1}, θ at most half its pole:
    /// ρ(θ) = Λ(θ)/θ with Λ, the log-MGF rate, on the chord through the grid's exact
    /// Λ(θ_i) and Λ(θ_{i+1}). Λ is convex (an MMPP's is the log of the spectral radius of a
    /// matrix of log-convex entries, Kingman 1961; sums add them), so the chord is above it: a
    /// valid bound, read off the sum's grid instead of evaluating every part (module docs).
    /// `None` when another evaluation is needed.
    fn chord(&self, theta: f64, ev: &Eval) -> Option<RhoSigma> {
        if !(self.0.convex && matches!(self.0.kind, ArrivalKind::Sum(_)))
            || 2.0 * theta > self.0.sup
        {
            return None;
        }
        let i = grid_below(theta)?;
        let (lo, hi) = (grid_theta(i), grid_theta(i + 1));
        let a = self.at_point(i, ev)?;
        let b = self.at_point(i + 1, ev)?;
        let w = (theta - lo) / (hi - lo);
        let rho = ((1.0 - w) * lo * a.rho + w * hi * b.rho) / theta;
        rho.is_finite().then_some(RhoSigma { rho, sigma: 0.0 })
    }

    /// The exact values at the four grid points from `i`, each computed once per arrival;
    /// `None` when one is undefined.
    fn at_grid(&self, i: i32, ev: &Eval) -> Option<[RhoSigma; 4]> {
        let mut out = [UNKNOWN; 4];
        let mut missing = false;
        if let Ok(g) = self.0.grid.lock() {
            for (k, o) in out.iter_mut().enumerate() {
                match g.get(i + k as i32) {
                    Some(Some(v)) => *o = v,
                    Some(None) => return None,
                    None => missing = true,
                }
            }
        }
        if !missing {
            return Some(out);
        }
        // the inputs' grid values compose exactly at the same θ (no Hölder scaling below);
        // computed without the lock (the inputs have their own)
        let mut fresh = Vec::with_capacity(4);
        for (k, o) in out.iter_mut().enumerate() {
            if o.rho.is_nan() {
                let j = i + k as i32;
                let v = self.exact_at_grid(j, ev);
                fresh.push((j, v));
                match v {
                    Some(v) => *o = v,
                    None => break,
                }
            }
        }
        if let Ok(mut g) = self.0.grid.lock() {
            for &(j, v) in &fresh {
                g.set(j, v);
            }
        }
        fresh.iter().all(|(_, v)| v.is_some()).then_some(out)
    }

    /// The exact value at grid point `i`.
    fn at_point(&self, i: i32, ev: &Eval) -> Option<RhoSigma> {
        if let Some(v) = self.0.grid.lock().ok().and_then(|g| g.get(i)) {
            return v;
        }
        let v = self.exact_at_grid(i, ev);
        if let Ok(mut g) = self.0.grid.lock() {
            g.set(i, v);
        }
        v
    }

    /// [`MgfArrival::exact`] at grid point `i`; an MMPP's from the values its bound keeps per
    /// grid point, which every arrival of the same bound (flows replaying one trace) shares.
    fn exact_at_grid(&self, i: i32, ev: &Eval) -> Option<RhoSigma> {
        match &self.0.kind {
            ArrivalKind::Mmpp(m) => Some(RhoSigma {
                rho: m.rho_at_grid(i, grid_theta(i))?,
                sigma: 0.0,
            }),
            _ => self.exact(grid_theta(i), ev),
        }
    }

    /// Cubic interpolation in ln θ over the four nearest grid points; exact at a grid point
    /// and wherever a neighbour is undefined.
    fn interpolated(&self, theta: f64, ev: &Eval) -> Option<RhoSigma> {
        if !(theta > 0.0 && theta.is_finite()) {
            return None;
        }
        let u = theta.log10() * GRID_PER_DECADE;
        let (lo, t) = (u.floor(), u - u.floor());
        if !(lo > f64::from(i32::MIN) + 2.0 && lo < f64::from(i32::MAX) - 2.0) {
            return self.exact(theta, ev);
        }
        let i = lo as i32;
        // near an MGF's pole the values blow up faster than a cubic follows: the error grows
        // like (h/δ)⁴ for a grid step h = ln 10/128 at a distance δ = ln(θ_sup/θ), 3e-5 at
        // δ = ln 1.25 (the search corrects it with exact values, see `search`)
        if 1.25 * grid_theta(i + 2) > self.0.sup {
            return self.exact(theta, ev);
        }
        if !(1e-9..=1.0 - 1e-9).contains(&t) {
            return self.at_point(if t < 0.5 { i } else { i + 1 }, ev);
        }
        let Some(pts) = self.at_grid(i - 1, ev) else {
            return self.exact(theta, ev);
        };
        // Lagrange weights of the nodes −1, 0, 1, 2 at t
        let w = [
            -t * (t - 1.0) * (t - 2.0) / 6.0,
            (t + 1.0) * (t - 1.0) * (t - 2.0) / 2.0,
            -(t + 1.0) * t * (t - 2.0) / 2.0,
            (t + 1.0) * t * (t - 1.0) / 6.0,
        ];
        let mut out = RhoSigma {
            rho: 0.0,
            sigma: 0.0,
        };
        for (wk, p) in w.iter().zip(&pts) {
            out.rho += wk * p.rho;
            out.sigma += wk * p.sigma;
        }
        (out.rho.is_finite() && out.sigma.is_finite()).then_some(out)
    }

    /// (ρ, σ) at θ from the definitions (inputs read as `ev` says).
    fn exact(&self, theta: f64, ev: &Eval) -> Option<RhoSigma> {
        match &self.0.kind {
            ArrivalKind::Mmpp(m) => Some(RhoSigma {
                rho: m.rho(theta)?,
                sigma: 0.0,
            }),
            ArrivalKind::Sum(terms) => terms.bound(theta, ev),
            ArrivalKind::Aggregate(a, b, slot) => {
                let (p, q) = ev.pq(*slot);
                let x = a.bound(p * theta, ev)?;
                let y = b.bound(q * theta, ev)?;
                Some(RhoSigma {
                    rho: x.rho + y.rho,
                    sigma: x.sigma + y.sigma,
                })
            }
            ArrivalKind::Output(a, s, slot) => {
                let (p, q) = ev.pq(*slot);
                let x = a.bound(p * theta, ev)?;
                let y = s.bound(q * theta, ev)?;
                let load = x.rho + y.rho;
                if load.is_nan() || load >= 0.0 {
                    return None;
                }
                let sigma = x.sigma + y.sigma + geometric_sigma(theta, load);
                sigma.is_finite().then_some(RhoSigma { rho: x.rho, sigma })
            }
            ArrivalKind::Difference(total, parts) => {
                let mut acc = total.bound(theta, ev)?;
                for a in parts {
                    let b = a.bound(theta, ev)?;
                    acc.rho -= b.rho;
                    acc.sigma -= b.sigma;
                }
                Some(acc)
            }
        }
    }

    /// Supremum of θ where every MGF below is finite (∞ when unconstrained).
    pub fn theta_sup(&self, ev: &Eval) -> f64 {
        if self.0.fixed {
            // no Hölder exponent below: the domain kept at construction
            return self.0.sup;
        }
        match &self.0.kind {
            ArrivalKind::Mmpp(m) => m.theta_sup(),
            ArrivalKind::Sum(terms) => terms
                .distinct
                .iter()
                .map(|a| a.theta_sup(ev))
                .fold(f64::INFINITY, f64::min),
            ArrivalKind::Aggregate(a, b, slot) => {
                let (p, q) = ev.pq(*slot);
                (a.theta_sup(ev) / p).min(b.theta_sup(ev) / q)
            }
            ArrivalKind::Output(a, s, slot) => {
                let (p, q) = ev.pq(*slot);
                (a.theta_sup(ev) / p).min(s.theta_sup(ev) / q)
            }
            ArrivalKind::Difference(total, _) => total.theta_sup(ev),
        }
    }

    fn slots(&self, out: &mut Vec<usize>) {
        if self.0.fixed {
            return;
        }
        match &self.0.kind {
            ArrivalKind::Mmpp(_) => {}
            ArrivalKind::Sum(terms) => terms.distinct.iter().for_each(|a| a.slots(out)),
            ArrivalKind::Aggregate(a, b, slot) => {
                out.extend(slot);
                a.slots(out);
                b.slots(out);
            }
            ArrivalKind::Output(a, s, slot) => {
                out.extend(slot);
                a.slots(out);
                s.slots(out);
            }
            ArrivalKind::Difference(total, parts) => {
                total.slots(out);
                parts.iter().for_each(|a| a.slots(out));
            }
        }
    }
}

impl MgfService {
    /// The sources this service derives from.
    pub fn deps(&self) -> &Deps {
        &self.0.deps
    }

    /// Whether this is a constant-rate server or a tandem of them.
    pub fn is_deterministic(&self) -> bool {
        self.0.deterministic
    }

    /// (ρ, σ) at θ, or `None` outside the domain.
    pub fn bound(&self, theta: f64, ev: &Eval) -> Option<RhoSigma> {
        match &self.0.kind {
            ServiceKind::Constant(rate) => Some(RhoSigma {
                rho: -rate,
                sigma: 0.0,
            }),
            ServiceKind::Leftover(s, a, slot) => {
                let (p, q) = ev.pq(*slot);
                let x = a.bound(p * theta, ev)?;
                let y = s.bound(q * theta, ev)?;
                Some(RhoSigma {
                    rho: x.rho + y.rho,
                    sigma: x.sigma + y.sigma,
                })
            }
            ServiceKind::Convolution(s, t, slot) => {
                if ev.convolution == ConvolutionRule::Exact && self.0.deterministic {
                    // min-plus convolution of constant-rate servers: the slower rate, no delay
                    let x = s.bound(theta, ev)?;
                    let y = t.bound(theta, ev)?;
                    return Some(RhoSigma {
                        rho: x.rho.max(y.rho),
                        sigma: x.sigma + y.sigma,
                    });
                }
                let (p, q) = ev.pq(*slot);
                let mut x = s.bound(p * theta, ev)?;
                let y = t.bound(q * theta, ev)?;
                let (rho, gap) = match ev.convolution {
                    ConvolutionRule::Original => {
                        if x.rho == y.rho {
                            x.rho *= 0.99;
                        }
                        (x.rho.max(y.rho), (x.rho - y.rho).abs())
                    }
                    ConvolutionRule::Exact => {
                        // gap of at least 1% of the faster rate, by slowing the slower server
                        let gap = (x.rho - y.rho).abs();
                        let floor = 0.01 * x.rho.abs().max(y.rho.abs());
                        (x.rho.max(y.rho) + (floor - gap).max(0.0), gap.max(floor))
                    }
                };
                let sigma = x.sigma + y.sigma + geometric_sigma(theta, -gap);
                sigma.is_finite().then_some(RhoSigma { rho, sigma })
            }
        }
    }

    /// Supremum of θ where every MGF below is finite (∞ when unconstrained).
    pub fn theta_sup(&self, ev: &Eval) -> f64 {
        if self.0.fixed {
            return self.0.sup;
        }
        match &self.0.kind {
            ServiceKind::Constant(_) => f64::INFINITY,
            ServiceKind::Leftover(s, a, slot) => {
                let (p, q) = ev.pq(*slot);
                (a.theta_sup(ev) / p).min(s.theta_sup(ev) / q)
            }
            ServiceKind::Convolution(s, t, slot) => {
                let (p, q) = ev.pq(*slot);
                (s.theta_sup(ev) / p).min(t.theta_sup(ev) / q)
            }
        }
    }

    fn slots(&self, out: &mut Vec<usize>) {
        if self.0.fixed {
            return;
        }
        match &self.0.kind {
            ServiceKind::Constant(_) => {}
            ServiceKind::Leftover(s, a, slot) => {
                out.extend(slot);
                s.slots(out);
                a.slots(out);
            }
            ServiceKind::Convolution(s, t, slot) => {
                out.extend(slot);
                s.slots(out);
                t.slots(out);
            }
        }
    }
}

/// The latency bound of an arrival through a service at violation probability ε
/// (Table 1, last line): for θ with ρ_A(pθ) + ρ_S(qθ) < 0 and ρ_S < 0,
///
/// d(θ) = [ln(ε(1 − e^{θ(ρ_A+ρ_S)}))/θ − (σ_A+σ_S)] / ρ_S  [steps],
///
/// a valid bound for every such θ: P(delay > d(θ)) ≤ ε.
#[derive(Debug, Clone)]
pub struct LatencyProblem {
    pub arrival: MgfArrival,
    pub service: MgfService,
    /// violation probability in (0, 1)
    pub epsilon: f64,
    slot: Option<usize>,
}

impl LatencyProblem {
    /// d(θ) [steps], or `None` where undefined or unstable.
    pub fn steps_at(&self, theta: f64, ev: &Eval) -> Option<f64> {
        if theta.is_nan() || theta <= 0.0 {
            return None;
        }
        let (p, q) = ev.pq(self.slot);
        let a = self.arrival.bound(p * theta, ev)?;
        let s = self.service.bound(q * theta, ev)?;
        if s.rho.is_nan() || s.rho >= 0.0 {
            return None;
        }
        let load = a.rho + s.rho;
        if load.is_nan() || load >= 0.0 {
            return None;
        }
        let d =
            ((self.epsilon * -(theta * load).exp_m1()).ln() / theta - (a.sigma + s.sigma)) / s.rho;
        (d.is_finite() && d >= 0.0).then_some(d)
    }

    /// Supremum of θ where every MGF in the problem is finite.
    pub fn theta_sup(&self, ev: &Eval) -> f64 {
        let (p, q) = ev.pq(self.slot);
        (self.arrival.theta_sup(ev) / p).min(self.service.theta_sup(ev) / q)
    }

    /// The Hölder slots in this problem, each once, ascending.
    pub fn slots(&self) -> Vec<usize> {
        let mut out = Vec::new();
        out.extend(self.slot);
        self.arrival.slots(&mut out);
        self.service.slots(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Builds processes and numbers the Hölder slots of dependent operators. No I/O, no state
/// beyond the slot counter.
#[derive(Debug, Default)]
pub struct Algebra {
    slots: usize,
    always_hoelder: bool,
}

impl Algebra {
    pub fn new() -> Algebra {
        Algebra::default()
    }

    /// Treat every subsequent binary operator as dependent (for checking that Hölder never
    /// tightens a bound).
    pub fn always_hoelder(mut self, on: bool) -> Algebra {
        self.always_hoelder = on;
        self
    }

    /// Number of Hölder slots handed out.
    pub fn slot_count(&self) -> usize {
        self.slots
    }

    fn slot(&mut self, a: &Deps, b: &Deps) -> Option<usize> {
        (self.always_hoelder || a.intersects(b)).then(|| {
            self.slots += 1;
            self.slots - 1
        })
    }

    /// An MMPP arrival deriving from `deps` (its flow, its dependency group).
    pub fn mmpp(&self, m: MmppBound, deps: Deps) -> MgfArrival {
        self.mmpp_shared(Arc::new(m), deps)
    }

    /// [`Algebra::mmpp`] of a bound shared with other analyses (built once, e.g. when its flow
    /// was added to a long-running admission).
    pub fn mmpp_shared(&self, m: Arc<MmppBound>, deps: Deps) -> MgfArrival {
        MgfArrival(Arc::new(ArrivalNode::new(ArrivalKind::Mmpp(m), deps)))
    }

    /// A constant-rate server: ρ = −rate, σ = 0; `rate` [work/step] > 0.
    pub fn constant(&self, rate_per_step: f64, deps: Deps) -> MgfService {
        MgfService(Arc::new(ServiceNode::new(
            ServiceKind::Constant(rate_per_step),
            deps,
            true,
        )))
    }

    /// A ⊕ B.
    pub fn aggregate(&mut self, a: &MgfArrival, b: &MgfArrival) -> MgfArrival {
        let slot = self.slot(a.deps(), b.deps());
        MgfArrival(Arc::new(ArrivalNode::new(
            ArrivalKind::Aggregate(a.clone(), b.clone(), slot),
            a.deps().union(b.deps()),
        )))
    }

    /// ⊕ of many arrivals, grouping dependent ones first (§4.2): the arrivals are split into
    /// connected components of the "dependent" relation; each component is aggregated as a
    /// balanced binary tree (Hölder where inputs intersect), and the components, being mutually
    /// independent, are added without Hölder. `None` for an empty list.
    pub fn aggregate_all(&mut self, arrivals: &[MgfArrival]) -> Option<MgfArrival> {
        match arrivals.len() {
            0 => return None,
            1 => return Some(arrivals[0].clone()),
            _ => {}
        }
        // union-find over pairwise intersection
        let n = arrivals.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut x: usize) -> usize {
            while p[x] != x {
                p[x] = p[p[x]];
                x = p[x];
            }
            x
        }
        if !self.always_hoelder {
            for i in 0..n {
                for j in i + 1..n {
                    if arrivals[i].deps().intersects(arrivals[j].deps()) {
                        let (a, b) = (find(&mut parent, i), find(&mut parent, j));
                        if a != b {
                            parent[b] = a;
                        }
                    }
                }
            }
        }
        let mut comps: Vec<(usize, Vec<&MgfArrival>)> = Vec::new();
        for (i, a) in arrivals.iter().enumerate() {
            let r = if self.always_hoelder {
                0
            } else {
                find(&mut parent, i)
            };
            match comps.iter_mut().find(|(root, _)| *root == r) {
                Some((_, v)) => v.push(a),
                None => comps.push((r, vec![a])),
            }
        }
        let mut parts: Vec<MgfArrival> = Vec::with_capacity(comps.len());
        for (_, members) in comps {
            // a balanced tree keeps nested Hölder scalings at depth log2(n)
            let mut level: Vec<MgfArrival> = members.into_iter().cloned().collect();
            while level.len() > 1 {
                let mut next = Vec::with_capacity(level.len().div_ceil(2));
                let mut it = level.into_iter();
                while let Some(a) = it.next() {
                    next.push(match it.next() {
                        Some(b) => self.aggregate(&a, &b),
                        None => a,
                    });
                }
                level = next;
            }
            parts.extend(level);
        }
        if parts.len() == 1 {
            return parts.pop();
        }
        // the parts far from the least pole, added up first: near that pole, where the sum is
        // evaluated from its parts, they are still read off one grid (module docs)
        let least = parts.iter().map(|a| a.0.sup).fold(f64::INFINITY, f64::min);
        let (near, far): (Vec<MgfArrival>, Vec<MgfArrival>) = parts
            .iter()
            .cloned()
            .partition(|a| a.0.sup < FAR_POLE * least);
        if near.is_empty() || far.len() < 2 {
            return Some(sum(parts));
        }
        let mut terms = near;
        terms.push(sum(far));
        Some(sum(terms))
    }

    /// The sum `total` of mutually independent MMPP sources without `parts`, some of those
    /// sources: ρ = ρ_total − Σ ρ_part, σ = 0, exact (the MGF of independent arrivals is the
    /// product of theirs, and an MMPP's ρ is its exact log-MGF rate), so that a queue's cross
    /// traffic is its one shared total less the few flows it excludes, O(excluded) and not
    /// O(flows) per evaluation. `deps` are the remaining sources'. Defined where `total` is
    /// (its domain is the least of all the sources'). The caller guarantees the precondition
    /// (`None` when `total` is not a sum of MMPPs).
    pub fn difference(
        &self,
        total: &MgfArrival,
        parts: &[MgfArrival],
        deps: Deps,
    ) -> Option<MgfArrival> {
        let is_mmpp = |a: &MgfArrival| matches!(a.0.kind, ArrivalKind::Mmpp(_));
        let sums = matches!(total.0.kind, ArrivalKind::Sum(_)) && total.0.convex;
        (sums && parts.iter().all(is_mmpp)).then(|| {
            MgfArrival(Arc::new(ArrivalNode::new(
                ArrivalKind::Difference(total.clone(), parts.to_vec()),
                deps,
            )))
        })
    }

    /// A ⊘ S: the departures of A from a queue offering S.
    pub fn output(&mut self, a: &MgfArrival, s: &MgfService) -> MgfArrival {
        let slot = self.slot(a.deps(), s.deps());
        MgfArrival(Arc::new(ArrivalNode::new(
            ArrivalKind::Output(a.clone(), s.clone(), slot),
            a.deps().union(s.deps()),
        )))
    }

    /// S ⊖ A: what S leaves after serving A (A of equal or higher priority).
    pub fn leftover(&mut self, s: &MgfService, a: &MgfArrival) -> MgfService {
        let slot = self.slot(a.deps(), s.deps());
        MgfService(Arc::new(ServiceNode::new(
            ServiceKind::Leftover(s.clone(), a.clone(), slot),
            a.deps().union(s.deps()),
            false,
        )))
    }

    /// S ⊗ T: two servers in tandem as one.
    pub fn convolve(&mut self, s: &MgfService, t: &MgfService) -> MgfService {
        let slot = self.slot(s.deps(), t.deps());
        MgfService(Arc::new(ServiceNode::new(
            ServiceKind::Convolution(s.clone(), t.clone(), slot),
            s.deps().union(t.deps()),
            s.is_deterministic() && t.is_deterministic(),
        )))
    }

    /// The latency problem of `a` through `s` at violation probability `epsilon`.
    pub fn latency(&mut self, a: &MgfArrival, s: &MgfService, epsilon: f64) -> LatencyProblem {
        LatencyProblem {
            slot: self.slot(a.deps(), s.deps()),
            arrival: a.clone(),
            service: s.clone(),
            epsilon,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::{Mmpp, MmppState, SizeModel};

    pub(crate) fn two_state(p0: f64, p1: f64, mean: f64) -> MmppBound {
        let st = |p: f64| MmppState {
            rate_per_s: p / 1e-5,
            arrival_prob: p,
            sizes: SizeModel::Exponential { mean },
            intervals: 0,
            requests: 0,
            work: 0.0,
        };
        MmppBound::new(&Mmpp {
            step_s: 1e-5,
            interval_s: 1.0,
            states: vec![st(p0), st(p1)],
            transition: vec![vec![1.0 - 1e-6, 1e-6], vec![3e-6, 1.0 - 3e-6]],
        })
        .unwrap()
    }

    #[test]
    fn grid_points_are_the_powers_bit_for_bit() {
        let half = GRID_TABLE_HALF as i32;
        for _ in 0..2 {
            for i in (-half - 3..half + 3).chain([i32::MIN, i32::MAX, -20_000, 20_000]) {
                assert_eq!(
                    grid_theta(i).to_bits(),
                    grid_theta_computed(i).to_bits(),
                    "point {i}"
                );
            }
        }
        assert_eq!(grid_theta(0), 1.0);
        assert_eq!(grid_theta(128), 10.0);
    }

    #[test]
    fn deps_sets() {
        let mut a = Deps::single(3);
        a.insert(130);
        let b = Deps::single(130);
        assert!(a.intersects(&b) && b.intersects(&a));
        assert!(!Deps::single(2).intersects(&a));
        let u = Deps::single(2).union(&a);
        assert!(u.contains(2) && u.contains(3) && u.contains(130) && !u.contains(4));
    }

    #[test]
    fn operators_follow_table_1() {
        let mut alg = Algebra::new();
        let a = alg.mmpp(two_state(0.002, 0.004, 1000.0), Deps::single(0));
        let b = alg.mmpp(two_state(0.001, 0.003, 500.0), Deps::single(1));
        let s = alg.constant(1250.0, Deps::single(10));
        let t = alg.constant(1000.0, Deps::single(11));
        let ev = Eval::PLAIN;
        let theta = 2e-4;
        let ra = a.bound(theta, &ev).unwrap();
        let rb = b.bound(theta, &ev).unwrap();
        let agg = alg.aggregate(&a, &b).bound(theta, &ev).unwrap();
        assert!((agg.rho - (ra.rho + rb.rho)).abs() < 1e-12);
        let lo = alg.leftover(&s, &a).bound(theta, &ev).unwrap();
        assert!((lo.rho - (ra.rho - 1250.0)).abs() < 1e-9 && lo.sigma == 0.0);
        let out = alg.output(&b, &s).bound(theta, &ev).unwrap();
        let want = -(1.0 - (theta * (rb.rho - 1250.0)).exp()).ln() / theta;
        assert!((out.sigma - want).abs() < 1e-9 * want && out.rho == rb.rho);
        // deterministic tandem: exact under Exact, the SNC formula under Original
        let st = alg.convolve(&s, &t);
        assert_eq!(
            st.bound(theta, &ev).unwrap(),
            RhoSigma {
                rho: -1000.0,
                sigma: 0.0
            }
        );
        let orig = Eval {
            hoelder: &[],
            convolution: ConvolutionRule::Original,
            tabulated: false,
        };
        let so = st.bound(theta, &orig).unwrap();
        let want = -(1.0 - (-theta * 250.0).exp()).ln() / theta;
        assert!((so.sigma - want).abs() < 1e-9 * want && so.rho == -1000.0);
        // equal rates under Original: one side weakened by 1%
        let ss = alg.convolve(&s, &alg.constant(1250.0, Deps::single(12)));
        let x = ss.bound(theta, &orig).unwrap();
        assert!((x.rho + 0.99 * 1250.0).abs() < 1e-9);
        // an unstable output is undefined
        let big = alg.constant(1.0, Deps::single(13));
        assert!(alg.output(&a, &big).bound(theta, &ev).is_none());
    }

    #[test]
    fn dependent_inputs_get_a_hoelder_slot() {
        let mut alg = Algebra::new();
        let a = alg.mmpp(two_state(0.002, 0.004, 1000.0), Deps::single(0));
        let s = alg.constant(1250.0, Deps::single(10));
        let out = alg.output(&a, &s);
        assert_eq!(alg.slot_count(), 0);
        let l = alg.leftover(&s, &out); // shares queue 10 and flow 0
        assert_eq!(alg.slot_count(), 1);
        let theta = 1e-4;
        let p2 = l.bound(theta, &Eval::PLAIN).unwrap(); // slot missing: p = 2
        let ra = out.bound(2.0 * theta, &Eval::PLAIN).unwrap();
        assert!((p2.rho - (ra.rho - 1250.0)).abs() < 1e-9);
    }

    #[test]
    fn aggregate_all_groups_dependent_arrivals_first() {
        let mut alg = Algebra::new();
        let mk = |alg: &Algebra, id: usize, g: Option<usize>| {
            let mut d = Deps::single(id);
            d.extend_group(g);
            alg.mmpp(two_state(0.002, 0.004, 1000.0), d)
        };
        let v = vec![
            mk(&alg, 0, Some(100)),
            mk(&alg, 1, None),
            mk(&alg, 2, Some(100)),
            mk(&alg, 3, None),
            mk(&alg, 4, Some(100)),
        ];
        let agg = alg.aggregate_all(&v).unwrap();
        // only the three group members need Hölder: two dependent operators
        assert_eq!(alg.slot_count(), 2);
        let theta = 1e-4;
        let one = v[1].bound(theta, &Eval::PLAIN).unwrap().rho;
        let all = agg.bound(theta, &Eval::PLAIN).unwrap().rho;
        assert!(all > 5.0 * one, "Hölder inflates the dependent part");
    }

    /// 40 flows' arrivals of three MMPPs, poles 1e-3, 1/300 and 1e-2 [1/work], each bound
    /// shared by the flows replaying its trace, in a mixed order.
    fn shared_sources(alg: &Algebra) -> Vec<MgfArrival> {
        let bounds = [
            Arc::new(two_state(0.002, 0.004, 1000.0)),
            Arc::new(two_state(0.001, 0.003, 300.0)),
            Arc::new(two_state(0.003, 0.005, 100.0)),
        ];
        (0..40)
            .map(|f| alg.mmpp_shared(bounds[(f * 7 + f / 5) % 3].clone(), Deps::single(f)))
            .collect()
    }

    /// The parts' values added one by one, in order.
    fn one_by_one(parts: &[MgfArrival], theta: f64, ev: &Eval) -> Option<RhoSigma> {
        let mut acc = RhoSigma {
            rho: 0.0,
            sigma: 0.0,
        };
        for a in parts {
            let b = a.bound(theta, ev)?;
            acc.rho += b.rho;
            acc.sigma += b.sigma;
        }
        Some(acc)
    }

    /// θs from 1e-6 to past the least pole (1e-3), grid points and points between them.
    fn thetas() -> impl Iterator<Item = f64> {
        (0..400).flat_map(|k| {
            let theta = 1e-6 * 10f64.powf(3.2 * f64::from(k) / 400.0);
            [theta, grid_theta(grid_below(theta).unwrap_or(0))]
        })
    }

    const TABULATED: Eval<'static> = Eval {
        hoelder: &[],
        convolution: ConvolutionRule::Exact,
        tabulated: true,
    };

    #[test]
    fn a_sum_evaluates_each_distinct_arrival_once_and_adds_every_flow_in_order() {
        let alg = Algebra::new();
        let parts = shared_sources(&alg);
        let total = sum(parts.clone());
        let ArrivalKind::Sum(terms) = &total.0.kind else {
            panic!("not a sum");
        };
        assert_eq!((terms.distinct.len(), terms.order.len()), (3, 40));
        for theta in thetas() {
            for ev in [&Eval::PLAIN, &TABULATED] {
                // the same bits as every flow's value added in turn
                assert_eq!(
                    terms.bound(theta, ev),
                    one_by_one(&parts, theta, ev),
                    "θ {theta}"
                );
            }
        }
    }

    #[test]
    fn a_sum_adds_the_arrivals_far_from_its_pole_as_one_with_the_same_values() {
        let mut alg = Algebra::new();
        let parts = shared_sources(&alg);
        let agg = alg.aggregate_all(&parts).expect("a sum");
        // the flows of the pole 1e-3 on their own, those of the poles ≥ 2e-3 as one inner sum
        let ArrivalKind::Sum(terms) = &agg.0.kind else {
            panic!("not a sum");
        };
        assert_eq!(terms.distinct.len(), 2);
        assert!(matches!(terms.distinct[1].0.kind, ArrivalKind::Sum(_)));
        for theta in thetas() {
            let exact = one_by_one(&parts, theta, &Eval::PLAIN);
            match (agg.bound(theta, &Eval::PLAIN), exact) {
                (Some(a), Some(e)) if grid_point(theta).is_some() => {
                    assert!(
                        (a.rho - e.rho).abs() <= 1e-12 * e.rho,
                        "θ {theta}: {a:?} {e:?}"
                    );
                }
                // between grid points a sum at most half its pole (the inner one, say) is its
                // chord: above, and close
                (Some(a), Some(e)) => {
                    assert!(
                        a.rho >= e.rho * (1.0 - 1e-12) && a.rho <= e.rho * (1.0 + 1e-3),
                        "θ {theta}: {a:?} {e:?}"
                    );
                }
                (a, e) => assert_eq!(a.is_some(), e.is_some(), "θ {theta}"),
            }
            // the search's guide: the same up to the interpolation's error
            let (a, e) = (
                agg.bound(theta, &TABULATED),
                one_by_one(&parts, theta, &TABULATED),
            );
            if let (Some(a), Some(e)) = (a, e) {
                assert!(
                    (a.rho - e.rho).abs() <= 1e-4 * e.rho,
                    "θ {theta}: {a:?} {e:?}"
                );
            } else {
                assert_eq!(a.is_some(), e.is_some(), "θ {theta}");
            }
        }
    }

    impl Deps {
        fn extend_group(&mut self, g: Option<usize>) {
            if let Some(g) = g {
                self.insert(g);
            }
        }
    }
}
