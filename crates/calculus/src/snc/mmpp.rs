//! The MGF bound of a discrete-time MMPP arrival process (snc-meister §3.2, Table 1 first row).
//!
//! Per time step the chain is in state s, emits one request with probability p_s and the
//! request carries work W_s. The per-step MGF of state s is
//! M_s(θ) = 1 − p_s + p_s·E[e^{θW_s}], and with the per-step transition matrix P
//!
//! ρ_A(θ) = ln sp(diag(M(θ))·P) / θ  [work/step],  σ_A(θ) = 0  [work].
//!
//! Numerics: per-10 µs chains have P ≈ I (off-diagonals ~1e-6) and M_s(θ) ≈ 1, so the
//! spectral radius is 1 + (something tiny). We never form diag(M)·P; we form the shifted
//! Metzler matrix G = diag(M)·P − I entry by entry from M_s − 1 (computed without
//! cancellation: θ/(λ − θ) for exponential sizes, Σ p·expm1(θw) for empirical ones) and
//! P_ii − 1 (exact in floating point), take its rightmost (Perron) eigenvalue λ_G and return
//! ln_1p(λ_G)/θ. λ_G is found in closed form for one and two states and otherwise by Noda's
//! iteration (inverse iteration shifted by the current Collatz–Wielandt bound): with x > 0,
//! μ = max_i (Gx)_i/x_i is an upper bound on the Perron root, μI − G is then a nonsingular
//! M-matrix (elimination without pivoting has positive pivots, its inverse is non-negative),
//! and y = (μI − G)⁻¹x is a better Perron vector whose bound is lower; the bounds decrease
//! monotonically and converge superlinearly (Noda 1971), about six solves of an n×n system
//! where Newton's method on det(λI − G) (the fallback, and the path for more than 16 states)
//! needs a dozen steps of n solves each: per-step chains' eigenvalues lie close together, and
//! Newton on a polynomial slows down near a cluster of roots. Iteration stops when the
//! Collatz–Wielandt bracket is below 1e-13 of the root, or when the upper bound stops
//! decreasing by more than that (reducible chains, whose isolated states keep the lower bound
//! low); the result is the upper bound. A non-positive pivot means the upper bound is the root
//! (a reducible chain whose bound is attained). Reducible chains (identity rows, several closed
//! classes) need no other special case.
//!
//! Resolution: G's diagonal holds P_ii − 1 ≈ −(leaving probability), so λ_G carries an
//! absolute rounding error of a few ulps of that probability. Where λ_G is below 1e-9 of the
//! largest leaving probability (θ·rate ≲ 1e-15 for per-10 µs chains, i.e. bounds of ~10¹⁵
//! steps) ρ is left undefined rather than computed from noise: a noisy ρ there could fall
//! below the mean rate and make an overloaded queue look stable. Above it the diagonal's
//! own rounding (an ulp of 1 in P_ii) can still do that at tiny θ, so ρ is never taken below
//! the chain's stationary mean, which the true ρ(θ) never is (a two-state chain at 1.05× its
//! queue's rate got a finite bound of 7·10¹¹ s before).

use std::sync::Mutex;
use tailbound_model::{Mmpp, SizeModel};

/// Work per request in one state, in the form the MGF needs.
#[derive(Debug, Clone, PartialEq)]
enum Sizes {
    /// exponential work with rate `lambda` [1/work]
    Exponential { lambda: f64 },
    /// `(work, probability)` atoms and the largest work
    Empirical { atoms: Vec<(f64, f64)>, max: f64 },
}

#[derive(Debug, Clone, PartialEq)]
struct State {
    /// arrival probability per step
    prob: f64,
    sizes: Sizes,
}

/// An MMPP arrival as an MGF bound: ρ(θ) [work/step] for θ in its domain, σ = 0.
#[derive(Debug, Clone, PartialEq)]
pub struct MmppBound {
    states: Vec<State>,
    /// per-step transition matrix, row-major n×n
    transition: Vec<f64>,
    /// the least shifted Perron root computed reliably: 1e-9 × the largest leaving
    /// probability per step
    resolution: f64,
    /// the chain's mean work per step under its stationary law (0 where that is not unique):
    /// ρ(θ) is never below it
    mean: f64,
    /// ρ at the θs last asked for
    memo: Memo,
}

/// Slots of [`Memo`]'s recent θs (a power of two).
const MEMO_SLOTS: usize = 64;

/// Most grid points [`Memo`] keeps (a span of 32 decades of the shared θ grid).
const MEMO_GRID_SPAN: usize = 4096;

/// The ρ values of one MMPP already computed: at the θs last asked for, direct-mapped by θ's
/// bits, and at the points of the analyses' shared θ grid. An analysis asks for ρ at the same
/// θ again and again (a queue's total and the flows it leaves out, the flows of one trace
/// shared by several tenants, which [`MmppBound::content_key`] lets an analysis build once,
/// and every arrival's grid points around its minimum), and ρ is a pure function of the chain
/// and θ, so a remembered value is the value, bit for bit. Bounded (64 recent θs, a span of
/// 4096 grid points), so that a bound kept for a long-running admission does not grow
/// without end.
struct Memo(Mutex<MemoValues>);

struct MemoValues {
    /// (θ's bits, ρ or NaN when undefined); bits 0 (θ = 0, never asked for) is an empty slot
    recent: Box<[(u64, f64); MEMO_SLOTS]>,
    /// the grid point of `grid[0]`
    grid_base: i32,
    /// ρ at grid points `grid_base ..`: NaN not computed yet, +∞ undefined
    grid: Vec<f64>,
}

impl Memo {
    fn new() -> Memo {
        Memo(Mutex::new(MemoValues {
            recent: Box::new([(0, f64::NAN); MEMO_SLOTS]),
            grid_base: 0,
            grid: Vec::new(),
        }))
    }

    fn slot(bits: u64) -> usize {
        (bits.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO_SLOTS.trailing_zeros())) as usize
    }

    /// The remembered ρ at θ = `f64::from_bits(bits)`: `Some(Some(ρ))`, `Some(None)` outside
    /// the domain, `None` not remembered.
    fn get(&self, bits: u64) -> Option<Option<f64>> {
        let m = self.0.lock().ok()?;
        let (key, v) = m.recent[Self::slot(bits)];
        (key == bits).then_some((!v.is_nan()).then_some(v))
    }

    fn set(&self, bits: u64, rho: Option<f64>) {
        if let Ok(mut m) = self.0.lock() {
            m.recent[Self::slot(bits)] = (bits, rho.unwrap_or(f64::NAN));
        }
    }

    /// The remembered ρ at grid point `i`, as [`Memo::get`].
    fn get_grid(&self, i: i32) -> Option<Option<f64>> {
        let m = self.0.lock().ok()?;
        let k = usize::try_from(i64::from(i) - i64::from(m.grid_base)).ok()?;
        let v = *m.grid.get(k)?;
        if v.is_nan() {
            None
        } else {
            Some((v != f64::INFINITY).then_some(v))
        }
    }

    /// Remembers ρ at grid point `i` unless the grid span would grow beyond
    /// [`MEMO_GRID_SPAN`].
    fn set_grid(&self, i: i32, rho: Option<f64>) {
        let Ok(mut m) = self.0.lock() else {
            return;
        };
        let v = rho.unwrap_or(f64::INFINITY);
        if m.grid.is_empty() {
            m.grid_base = i;
            m.grid.push(v);
            return;
        }
        let base = i64::from(m.grid_base);
        let (lo, hi) = (
            base.min(i64::from(i)),
            (base + m.grid.len() as i64).max(i64::from(i) + 1),
        );
        if hi - lo > MEMO_GRID_SPAN as i64 {
            return;
        }
        if i64::from(i) < base {
            let grow = (base - i64::from(i)) as usize;
            m.grid.splice(0..0, std::iter::repeat_n(f64::NAN, grow));
            m.grid_base = i;
        }
        let k = (i64::from(i) - i64::from(m.grid_base)) as usize;
        if k >= m.grid.len() {
            m.grid.resize(k + 1, f64::NAN);
        }
        m.grid[k] = v;
    }
}

impl Clone for Memo {
    fn clone(&self) -> Memo {
        Memo::new()
    }
}

impl PartialEq for Memo {
    /// Memos hold no part of a bound's meaning.
    fn eq(&self, _: &Memo) -> bool {
        true
    }
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Memo")
    }
}

impl MmppBound {
    /// The bound of `mmpp` (validated first). Work per step is in the MMPP's size unit.
    pub fn new(mmpp: &Mmpp) -> Result<MmppBound, String> {
        mmpp.validate().map_err(|e| e.to_string())?;
        let states = mmpp
            .states
            .iter()
            .map(|s| State {
                prob: s.arrival_prob,
                sizes: match &s.sizes {
                    SizeModel::Exponential { mean } => Sizes::Exponential { lambda: 1.0 / mean },
                    SizeModel::Empirical { atoms } => Sizes::Empirical {
                        atoms: atoms.iter().map(|[w, p]| (*w, *p)).collect(),
                        max: atoms.iter().map(|a| a[0]).fold(0.0, f64::max),
                    },
                },
            })
            .collect();
        let transition: Vec<f64> = mmpp.transition.iter().flatten().copied().collect();
        let n = mmpp.states.len();
        let leave = (0..n)
            .map(|i| (transition[i * n + i] - 1.0).abs())
            .fold(0.0, f64::max);
        let mean =
            tailbound_model::traffic::stationary_distribution(&mmpp.transition).map_or(0.0, |pi| {
                pi.iter()
                    .zip(&mmpp.states)
                    .map(|(p, s)| p * s.arrival_prob * s.sizes.mean())
                    .sum()
            });
        Ok(MmppBound {
            states,
            transition,
            resolution: 1e-9 * leave,
            mean,
            memo: Memo::new(),
        })
    }

    /// Every number that defines the bound, as bits: equal keys, equal ρ at every θ (an
    /// analysis builds the bound of flows with equal MMPPs once, e.g. tenants replaying one
    /// trace).
    pub fn content_key(&self) -> Vec<u64> {
        let mut key = Vec::with_capacity(2 + 3 * self.states.len() + self.transition.len());
        key.push(self.states.len() as u64);
        for st in &self.states {
            key.push(st.prob.to_bits());
            match &st.sizes {
                Sizes::Exponential { lambda } => key.extend([0, lambda.to_bits()]),
                Sizes::Empirical { atoms, max } => {
                    key.extend([1 + atoms.len() as u64, max.to_bits()]);
                    key.extend(atoms.iter().flat_map(|(w, p)| [w.to_bits(), p.to_bits()]));
                }
            }
        }
        key.extend(self.transition.iter().map(|p| p.to_bits()));
        key.push(self.resolution.to_bits());
        key
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether the chain has no states (never true for a validated MMPP).
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// The supremum of θ [1/work] where every state's MGF is finite: the least exponential
    /// rate, or ln(f64::MAX)/(largest atom) for empirical sizes; infinite when no state can
    /// emit work.
    pub fn theta_sup(&self) -> f64 {
        self.states
            .iter()
            .filter(|s| s.prob > 0.0)
            .map(|s| match &s.sizes {
                Sizes::Exponential { lambda } => *lambda,
                Sizes::Empirical { max, .. } if *max > 0.0 => f64::MAX.ln() / max,
                Sizes::Empirical { .. } => f64::INFINITY,
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// M_s(θ) − 1 for state `s`, or `None` outside the MGF's domain.
    fn mgf_minus_one(&self, s: usize, theta: f64) -> Option<f64> {
        let st = &self.states[s];
        if st.prob == 0.0 {
            return Some(0.0);
        }
        let e = match &st.sizes {
            Sizes::Exponential { lambda } => {
                if theta >= *lambda {
                    return None;
                }
                theta / (lambda - theta)
            }
            Sizes::Empirical { atoms, .. } => {
                atoms.iter().map(|(w, p)| p * (theta * w).exp_m1()).sum()
            }
        };
        let u = st.prob * e;
        u.is_finite().then_some(u)
    }

    /// ρ_A(θ) [work/step] for θ > 0, or `None` outside the domain.
    pub fn rho(&self, theta: f64) -> Option<f64> {
        if !(theta > 0.0 && theta.is_finite()) {
            return None;
        }
        let bits = theta.to_bits();
        if let Some(rho) = self.memo.get(bits) {
            return rho;
        }
        let rho = self.rho_computed(theta);
        self.memo.set(bits, rho);
        rho
    }

    /// [`MmppBound::rho`] at point `i` of the analyses' shared θ grid, whose θ is `theta`
    /// (`algebra::grid_theta(i)`): remembered per grid point, whichever arrival of this bound
    /// asked first.
    pub(crate) fn rho_at_grid(&self, i: i32, theta: f64) -> Option<f64> {
        if let Some(rho) = self.memo.get_grid(i) {
            return rho;
        }
        let rho = self.rho(theta);
        self.memo.set_grid(i, rho);
        rho
    }

    /// [`MmppBound::rho`] computed, for θ > 0 finite.
    fn rho_computed(&self, theta: f64) -> Option<f64> {
        let n = self.states.len();
        let mut buf = [0.0f64; MAX_NODA * MAX_NODA];
        let mut heap;
        let g: &mut [f64] = if n * n <= buf.len() {
            &mut buf[..n * n]
        } else {
            heap = vec![0.0; n * n];
            &mut heap
        };
        for i in 0..n {
            let u = self.mgf_minus_one(i, theta)?;
            for j in 0..n {
                let p = self.transition[i * n + j];
                g[i * n + j] = if i == j {
                    u * p + (p - 1.0)
                } else {
                    (1.0 + u) * p
                };
            }
        }
        let lambda = perron_root(g, n);
        // Below this the root drowns in the rounding of G's diagonal (module docs).
        if lambda <= self.resolution {
            return None;
        }
        // ρ(θ) ≥ the mean for every θ > 0 (Jensen); below it is rounding (P's diagonal 1 − p
        // carries an absolute error of an ulp of 1, which at tiny θ·rate can make an
        // overloaded queue look stable), and the mean is the sound value
        let rho = lambda.ln_1p() / theta;
        rho.is_finite().then_some(rho.max(self.mean))
    }
}

/// The rightmost eigenvalue of the n×n Metzler matrix `g` (row-major, off-diagonals ≥ 0): its
/// Perron root. Closed form for n ≤ 2, Noda's iteration up to 16 states, bracketed Newton
/// otherwise (see the module docs).
pub fn perron_root(g: &[f64], n: usize) -> f64 {
    match n {
        0 => f64::NAN,
        1 => g[0],
        2 => {
            let (a, b, c, d) = (g[0], g[1], g[2], g[3]);
            let delta = (a - d).abs();
            let bc = b * c;
            // λ = max(a,d) + (sqrt(δ² + 4bc) − δ)/2, written without cancellation
            if bc > 0.0 {
                a.max(d) + 2.0 * bc / (delta + (delta * delta + 4.0 * bc).sqrt())
            } else {
                a.max(d)
            }
        }
        3..=MAX_NODA => perron_noda(g, n).unwrap_or_else(|| perron_newton(g, n)),
        _ => perron_newton(g, n),
    }
}

/// Most states for [`perron_noda`] (its buffers live on the stack).
const MAX_NODA: usize = 16;

/// The Collatz–Wielandt bounds (min_i, max_i) of (Gx)_i/x_i for x > 0.
fn collatz_wielandt(g: &[f64], n: usize, x: &[f64]) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (i, row) in g.chunks_exact(n).enumerate() {
        let gx: f64 = row.iter().zip(x).map(|(a, b)| a * b).sum();
        let r = gx / x[i];
        lo = lo.min(r);
        hi = hi.max(r);
    }
    (lo, hi)
}

/// The first-order Perron vector of a nearly diagonal Metzler matrix, from the largest diagonal
/// entry k: x_k = 1, x_j = g_jk/(g_kk − g_jj), in [1e-200, 1] (1 where undefined).
fn first_order_vector(g: &[f64], n: usize, x: &mut [f64]) {
    let mut k = 0;
    for i in 1..n {
        if g[i * n + i] > g[k * n + k] {
            k = i;
        }
    }
    let gkk = g[k * n + k];
    for (j, xj) in x.iter_mut().enumerate().take(n) {
        *xj = if j == k {
            1.0
        } else {
            let denom = gkk - g[j * n + j];
            let v = if denom > 0.0 {
                g[j * n + k] / denom
            } else {
                1.0
            };
            if v.is_finite() {
                v.clamp(1e-200, 1.0)
            } else {
                1.0
            }
        };
    }
}

/// A bracket [lo, hi] of the Perron root of the n×n Metzler matrix `g`: the largest diagonal
/// entry and the largest row sum, narrowed (up to [`MAX_NODA`] states) by the Collatz–Wielandt
/// bounds of the first-order Perron vector, which is left in `x`.
fn perron_bracket(g: &[f64], n: usize, x: &mut [f64; MAX_NODA]) -> (f64, f64) {
    let mut lo = f64::NEG_INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for (i, row) in g.chunks_exact(n).enumerate() {
        lo = lo.max(row[i]);
        hi = hi.max(row.iter().sum::<f64>());
    }
    hi = hi.max(lo);
    if n <= MAX_NODA {
        first_order_vector(g, n, x);
        let (cw_lo, cw_hi) = collatz_wielandt(g, n, &x[..n]);
        if cw_hi.is_finite() && cw_hi < hi {
            hi = cw_hi.max(lo);
        }
        if cw_lo.is_finite() && cw_lo > lo {
            lo = cw_lo.min(hi);
        }
    }
    (lo, hi)
}

/// Perron root of a Metzler matrix of at most [`MAX_NODA`] states by Noda's iteration (module
/// docs); `None` when the iteration breaks down (the caller falls back to Newton's method).
fn perron_noda(g: &[f64], n: usize) -> Option<f64> {
    if !(3..=MAX_NODA).contains(&n) || g.len() != n * n {
        return None;
    }
    let tol = |x: f64| 1e-13 * x.abs().max(1e-300);
    let mut x = [0.0f64; MAX_NODA];
    let (mut lo, mut hi) = perron_bracket(g, n, &mut x);
    let mut b = [0.0f64; MAX_NODA * MAX_NODA];
    let b = &mut b[..n * n];
    let (mut stalls, mut moved) = (0, false);
    for _ in 0..50 {
        if hi - lo <= tol(hi) {
            return Some(hi);
        }
        // y = (hi·I − G)⁻¹ x by elimination without pivoting (an M-matrix above the root)
        for (k, (bk, gk)) in b.iter_mut().zip(g).enumerate() {
            *bk = if k / n == k % n { hi - gk } else { -gk };
        }
        for k in 0..n {
            let piv = b[k * n + k];
            if !(piv > 0.0 && piv.is_finite()) {
                // hi·I − G is singular: the upper bound is attained
                return Some(hi);
            }
            for i in k + 1..n {
                let l = b[i * n + k] / piv;
                b[i * n + k] = l;
                if l != 0.0 {
                    for j in k + 1..n {
                        b[i * n + j] -= l * b[k * n + j];
                    }
                }
            }
        }
        let mut y = [0.0f64; MAX_NODA];
        for i in 0..n {
            let s: f64 = (0..i).map(|j| b[i * n + j] * y[j]).sum();
            y[i] = x[i] - s;
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|j| b[i * n + j] * y[j]).sum();
            y[i] = (y[i] - s) / b[i * n + i];
        }
        let top = y[..n].iter().copied().fold(0.0, f64::max);
        if !(top > 0.0 && top.is_finite()) {
            return None;
        }
        for (xi, yi) in x.iter_mut().zip(&y).take(n) {
            *xi = (yi / top).max(1e-300);
        }
        let (l, h) = collatz_wielandt(g, n, &x[..n]);
        if !(l.is_finite() && h.is_finite()) {
            return None;
        }
        lo = lo.max(l.min(hi));
        if h < hi - tol(hi) {
            (stalls, moved) = (0, true);
        } else {
            stalls += 1;
        }
        hi = hi.min(h).max(lo);
        // converged: the bound no longer moves (the lower bound may stay low for reducible
        // chains)
        if stalls >= 2 || (stalls >= 1 && moved) {
            return Some(hi);
        }
    }
    Some(hi)
}

/// Perron root of a Metzler matrix by Newton's method on det(λI − G) from above.
///
/// The start is the tighter of the row-sum bound and the Collatz–Wielandt bound
/// max_i (Gx)_i/x_i for the first-order Perron vector x (x_k = 1 for the largest diagonal
/// entry k, x_j = g_jk/(g_kk − g_jj) otherwise, floored at a tiny positive number); when the
/// matching lower bound min_i (Gx)_i/x_i is already within tolerance no Newton step is needed.
pub(crate) fn perron_newton(g: &[f64], n: usize) -> f64 {
    let (mut lo, mut hi) = perron_bracket(g, n, &mut [0.0f64; MAX_NODA]);
    let tol = |x: f64| 1e-13 * x.abs().max(1e-300);
    let mut x = hi;
    let mut hi_checked = false;
    for _ in 0..300 {
        if hi - lo <= tol(hi) {
            return hi;
        }
        match newton_step(g, n, x) {
            Some(step) => {
                hi = x;
                hi_checked = true;
                if step <= tol(x) {
                    return (x - step).max(lo);
                }
                let next = x - step;
                x = if next > lo { next } else { 0.5 * (lo + hi) };
            }
            None => {
                if !hi_checked && x == hi {
                    // the upper bound is attained (e.g. a closed class of identical rows)
                    return hi;
                }
                lo = x;
                x = 0.5 * (lo + hi);
            }
        }
    }
    hi
}

/// det(B)/det'(B) = 1/tr(B⁻¹) for B = xI − G when B is a nonsingular M-matrix (all pivots of
/// elimination without pivoting positive); `None` otherwise (x is at or below the root).
fn newton_step(g: &[f64], n: usize, x: f64) -> Option<f64> {
    if n == 3 {
        // leading principal minors of B = xI − G positive ⇔ nonsingular M-matrix;
        // det'(x) is the sum of B's principal 2×2 minors
        let (b1, b2, b3) = (x - g[0], x - g[4], x - g[8]);
        let m12 = b1 * b2 - g[1] * g[3];
        let m23 = b2 * b3 - g[5] * g[7];
        let m13 = b1 * b3 - g[2] * g[6];
        let det = b1 * m23 - g[1] * (g[3] * b3 + g[5] * g[6]) - g[2] * (g[3] * g[7] + b2 * g[6]);
        if !(b1 > 0.0 && m12 > 0.0 && det > 0.0) {
            return None;
        }
        let d1 = m12 + m23 + m13;
        let step = det / d1;
        return (step.is_finite() && step >= 0.0).then_some(step);
    }
    let mut buf = [0.0f64; 256];
    let mut heap;
    let b: &mut [f64] = if n * n <= buf.len() {
        &mut buf[..n * n]
    } else {
        heap = vec![0.0; n * n];
        &mut heap
    };
    for i in 0..n {
        for j in 0..n {
            b[i * n + j] = if i == j {
                x - g[i * n + j]
            } else {
                -g[i * n + j]
            };
        }
    }
    // LU in place, L unit lower
    for k in 0..n {
        let piv = b[k * n + k];
        if !(piv > 0.0 && piv.is_finite()) {
            return None;
        }
        for i in k + 1..n {
            let l = b[i * n + k] / piv;
            b[i * n + k] = l;
            if l != 0.0 {
                for j in k + 1..n {
                    b[i * n + j] -= l * b[k * n + j];
                }
            }
        }
    }
    // tr(B⁻¹) = Σ_i (B⁻¹ e_i)_i
    let mut trace = 0.0;
    let mut y = [0.0f64; 16];
    let mut yh;
    let y: &mut [f64] = if n <= y.len() {
        &mut y[..n]
    } else {
        yh = vec![0.0; n];
        &mut yh
    };
    for col in 0..n {
        // forward: L z = e_col; z is 0 above col (L is unit lower triangular)
        for i in col..n {
            let mut s = if i == col { 1.0 } else { 0.0 };
            for k in col..i {
                s -= b[i * n + k] * y[k];
            }
            y[i] = s;
        }
        // backward: U y = z, only y[col] is needed but needs y[col+1..]
        for i in (col..n).rev() {
            let mut s = y[i];
            for k in i + 1..n {
                s -= b[i * n + k] * y[k];
            }
            y[i] = s / b[i * n + i];
        }
        trace += y[col];
    }
    (trace > 0.0 && trace.is_finite()).then(|| 1.0 / trace)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::MmppState;

    fn state(prob: f64, mean: f64) -> MmppState {
        MmppState {
            rate_per_s: prob / 1e-5,
            arrival_prob: prob,
            sizes: SizeModel::Exponential { mean },
            intervals: 0,
            requests: 0,
            work: 0.0,
        }
    }

    fn mmpp(states: Vec<MmppState>, transition: Vec<Vec<f64>>) -> Mmpp {
        Mmpp {
            step_s: 1e-5,
            interval_s: 1.0,
            states,
            transition,
        }
    }

    /// The textbook 2×2 formula on diag(M)·P, as the original computes it.
    fn naive_two_state(m0: f64, m1: f64, p: &[[f64; 2]; 2]) -> f64 {
        let a = p[0][0] * m0;
        let d = p[1][1] * m1;
        let disc = (a - d) * (a - d) + 4.0 * p[0][1] * p[1][0] * m0 * m1;
        (a + d + disc.sqrt()) / 2.0
    }

    fn three_states(p0: f64) -> Mmpp {
        mmpp(
            vec![state(p0, 4096.0), state(0.003, 8192.0), state(0.0, 1.0)],
            vec![
                vec![1.0 - 3e-6, 2e-6, 1e-6],
                vec![4e-6, 1.0 - 5e-6, 1e-6],
                vec![1e-6, 1e-6, 1.0 - 2e-6],
            ],
        )
    }

    #[test]
    fn remembered_rho_is_the_computed_rho_bit_for_bit() {
        let b = MmppBound::new(&three_states(0.001)).unwrap();
        let sup = b.theta_sup();
        // more θs than the memo holds, each asked for three times, some outside the domain
        let thetas: Vec<f64> = (0..3 * MEMO_SLOTS)
            .map(|k| sup * 10f64.powf(-6.0 + 6.5 * k as f64 / (3 * MEMO_SLOTS) as f64))
            .collect();
        for _ in 0..3 {
            for &t in &thetas {
                let want = b.rho_computed(t);
                assert_eq!(b.rho(t).map(f64::to_bits), want.map(f64::to_bits), "θ {t}");
            }
        }
        assert!(thetas.iter().any(|&t| b.rho(t).is_none()));
        assert!(thetas.iter().any(|&t| b.rho(t).is_some()));
        // a clone starts with an empty memo and gives the same values
        let c = b.clone();
        assert_eq!(c, b);
        assert_eq!(c.rho(thetas[5]), b.rho(thetas[5]));
        assert_eq!(
            (b.rho(0.0), b.rho(-1.0), b.rho(f64::NAN)),
            (None, None, None)
        );
    }

    #[test]
    fn remembered_grid_points_are_the_computed_rho_bit_for_bit() {
        use crate::snc::algebra::grid_theta;
        let b = MmppBound::new(&three_states(0.001)).unwrap();
        let top = crate::snc::algebra::grid_below(b.theta_sup()).unwrap();
        // downwards, upwards, beyond the kept span, and again
        let points: Vec<i32> = (0..300)
            .map(|k| top + 2 - k)
            .chain((0..100).map(|k| top - 500 + k))
            .chain([top - MEMO_GRID_SPAN as i32 - 10, top + 5])
            .collect();
        for _ in 0..2 {
            for &i in &points {
                let want = b.rho_computed(grid_theta(i));
                let got = b.rho_at_grid(i, grid_theta(i));
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "point {i}");
            }
        }
        assert!(points
            .iter()
            .any(|&i| b.rho_at_grid(i, grid_theta(i)).is_none()));
    }

    #[test]
    fn content_keys_tell_bounds_apart() {
        let key = |m: &Mmpp| MmppBound::new(m).unwrap().content_key();
        assert_eq!(key(&three_states(0.001)), key(&three_states(0.001)));
        assert_ne!(key(&three_states(0.001)), key(&three_states(0.0011)));
        let mut other_sizes = three_states(0.001);
        other_sizes.states[1].sizes = SizeModel::Empirical {
            atoms: vec![[8192.0, 1.0]],
        };
        assert_ne!(key(&three_states(0.001)), key(&other_sizes));
        let mut other_chain = three_states(0.001);
        other_chain.transition[0] = vec![1.0 - 3e-6, 1e-6, 2e-6];
        assert_ne!(key(&three_states(0.001)), key(&other_chain));
    }

    #[test]
    fn two_states_match_the_closed_form() {
        let p = [[1.0 - 1e-6, 1e-6], [3e-6, 1.0 - 3e-6]];
        let m = mmpp(
            vec![state(0.002, 1000.0), state(0.004, 1000.0)],
            p.iter().map(|r| r.to_vec()).collect(),
        );
        let b = MmppBound::new(&m).unwrap();
        for theta in [1e-7, 1e-5, 1e-4, 5e-4] {
            let m0 = 1.0 + 0.002 * (1000.0 * theta / (1.0 - 1000.0 * theta));
            let m1 = 1.0 + 0.004 * (1000.0 * theta / (1.0 - 1000.0 * theta));
            let want = naive_two_state(m0, m1, &p).ln() / theta;
            let got = b.rho(theta).unwrap();
            assert!(
                (got - want).abs() <= 1e-6 * want,
                "θ={theta}: {got} vs {want}"
            );
            // the generic Newton path agrees with the closed form
            let n = 2;
            let mut g = vec![0.0; 4];
            for i in 0..n {
                let u = b.mgf_minus_one(i, theta).unwrap();
                for j in 0..n {
                    let pij = p[i][j];
                    g[i * n + j] = if i == j {
                        u * pij + (pij - 1.0)
                    } else {
                        (1.0 + u) * pij
                    };
                }
            }
            let closed = perron_root(&g, 2);
            let newton = perron_newton(&g, 2);
            assert!(
                (closed - newton).abs() <= 1e-12 * closed.abs(),
                "{closed} vs {newton}"
            );
        }
        assert_eq!(b.rho(1e-3), None, "outside the exponential MGF's domain");
        assert_eq!(b.rho(0.0), None);
    }

    #[test]
    fn small_theta_rho_tends_to_the_mean_rate() {
        // stationary (0.75, 0.25): mean work per step 0.75·2 + 0.25·4 = 2.5
        let m = mmpp(
            vec![state(0.002, 1000.0), state(0.004, 1000.0)],
            vec![vec![1.0 - 1e-6, 1e-6], vec![3e-6, 1.0 - 3e-6]],
        );
        let b = MmppBound::new(&m).unwrap();
        let r = b.rho(1e-12).unwrap();
        assert!((r - 2.5).abs() < 1e-3, "{r}");
        // ρ is non-decreasing in θ
        let mut prev = 0.0;
        for k in 0..40 {
            let theta = 1e-9 * 1.3f64.powi(k);
            if let Some(r) = b.rho(theta) {
                assert!(r >= prev - 1e-9 * r, "θ={theta}");
                prev = r;
            }
        }
    }

    #[test]
    fn reducible_chains_and_near_identity_rows() {
        // state 2 is closed (identity row), as in the sample config's client C1
        let p = vec![
            vec![1.0 - 4.4e-7, 4.2e-7, 0.0, 2e-8],
            vec![9.7e-6, 1.0 - 9.98e-6, 0.0, 2.8e-7],
            vec![0.0, 0.0, 1.0, 0.0],
            vec![7.5e-6, 0.0, 0.0, 1.0 - 7.5e-6],
        ];
        let m = mmpp(
            vec![
                state(0.0022, 1019.2),
                state(0.0028, 1019.2),
                state(0.0035, 1e-6),
                state(0.0043, 1019.2),
            ],
            p.clone(),
        );
        let b = MmppBound::new(&m).unwrap();
        for theta in [1e-8, 1e-6, 1e-4, 9e-4] {
            let got = b.rho(theta).unwrap();
            // the closed class {2} on its own and the rest on their own
            let rest = mmpp(
                vec![
                    state(0.0022, 1019.2),
                    state(0.0028, 1019.2),
                    state(0.0043, 1019.2),
                ],
                vec![
                    vec![1.0 - 4.4e-7, 4.2e-7, 2e-8],
                    vec![9.7e-6, 1.0 - 9.98e-6, 2.8e-7],
                    vec![7.5e-6, 0.0, 1.0 - 7.5e-6],
                ],
            );
            let r_rest = MmppBound::new(&rest).unwrap().rho(theta).unwrap();
            let r_closed = (0.0035 * (1e-6 * theta / (1.0 - 1e-6 * theta))).ln_1p() / theta;
            let want = r_rest.max(r_closed);
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "θ={theta}: {got} vs {want}"
            );
        }
        // a fully reducible chain: the identity
        let id = mmpp(
            vec![
                state(0.002, 1000.0),
                state(0.003, 1000.0),
                state(0.001, 500.0),
            ],
            vec![
                vec![1.0, 0.0, 0.0],
                vec![0.0, 1.0, 0.0],
                vec![0.0, 0.0, 1.0],
            ],
        );
        let theta = 1e-4;
        let got = MmppBound::new(&id).unwrap().rho(theta).unwrap();
        let want = (0.003 * (1000.0 * theta / (1.0 - 1000.0 * theta))).ln_1p() / theta;
        assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    }

    #[test]
    fn newton_matches_power_iteration_on_a_mixing_chain() {
        let g = [
            -0.5, 0.3, 0.2, //
            0.1, -0.2, 0.1, //
            0.4, 0.4, -0.6,
        ];
        // power iteration on G + I (nonnegative)
        let mut v = [1.0f64; 3];
        let mut lam = 0.0;
        for _ in 0..2000 {
            let w: Vec<f64> = (0..3)
                .map(|i| {
                    (0..3)
                        .map(|j| (g[i * 3 + j] + f64::from(i == j)) * v[j])
                        .sum()
                })
                .collect();
            lam = w.iter().cloned().fold(0.0, f64::max);
            for i in 0..3 {
                v[i] = w[i] / lam;
            }
        }
        let got = perron_root(&g, 3);
        assert!((got - (lam - 1.0)).abs() < 1e-12, "{got} vs {}", lam - 1.0);
    }

    /// G of a per-10 µs chain at θ: `states` (probability, mean size) and the transition rows.
    fn shifted(states: &[(f64, f64)], p: &[Vec<f64>], theta: f64) -> Vec<f64> {
        let n = states.len();
        let mut g = vec![0.0; n * n];
        for (i, &(prob, mean)) in states.iter().enumerate() {
            let u = prob * (mean * theta / (1.0 - mean * theta));
            for j in 0..n {
                let pij = p[i][j];
                g[i * n + j] = if i == j {
                    u * pij + (pij - 1.0)
                } else {
                    (1.0 + u) * pij
                };
            }
        }
        g
    }

    #[test]
    fn noda_agrees_with_newton_on_per_step_chains() {
        // ten states as SNC-ConfigGen fits them: a mixing class of six and four isolated
        // states that never saw a request (identity rows), over five decades of θ
        let mut states = Vec::new();
        let mut p = vec![vec![0.0; 10]; 10];
        for (i, row) in p.iter_mut().enumerate() {
            let isolated = (4..8).contains(&i);
            states.push((
                2.5e-5 * (i + 1) as f64,
                if isolated { 1e-6 } else { 3e4 / (i + 1) as f64 },
            ));
            if isolated {
                row[i] = 1.0;
                continue;
            }
            let mut leave = 0.0;
            for j in (0..10).filter(|j| !(4..8).contains(j) && *j != i) {
                row[j] = 1e-6 * ((i * 7 + j * 3) % 5 + 1) as f64;
                leave += row[j];
            }
            row[i] = 1.0 - leave;
        }
        let sup = 1.0 / 3e4;
        let mut steps = 0;
        for k in 0..100 {
            let theta = sup * 10f64.powf(-5.0 + 0.0499 * f64::from(k));
            let g = shifted(&states, &p, theta);
            let newton = perron_newton(&g, 10);
            let noda = perron_noda(&g, 10).expect("Noda's iteration converges");
            // both carry the rounding of G's diagonal (~1e-16 of the leaving probabilities,
            // ~1e-5 here: module docs), which dominates at small θ
            let floor = 1e-20;
            assert!(
                (noda - newton).abs() <= 1e-12 * newton.abs() + floor,
                "θ={theta:e}: Noda {noda:e} vs Newton {newton:e}"
            );
            steps += 1;
        }
        assert_eq!(steps, 100);
        // a mixing 3×3 chain (power iteration's reference in the test above) and the identity
        let g = [-0.5, 0.3, 0.2, 0.1, -0.2, 0.1, 0.4, 0.4, -0.6];
        let (a, b) = (perron_noda(&g, 3).unwrap(), perron_newton(&g, 3));
        assert!((a - b).abs() < 1e-13, "{a} vs {b}");
        let id = [0.2, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.1];
        assert_eq!(perron_noda(&id, 3), Some(0.5));
    }

    #[test]
    fn zero_probability_states_never_leave_the_domain() {
        let m = mmpp(
            vec![state(0.0, 1.0), state(0.001, 100.0)],
            vec![vec![0.5, 0.5], vec![0.5, 0.5]],
        );
        let b = MmppBound::new(&m).unwrap();
        assert_eq!(b.theta_sup(), 0.01);
        assert!(b.rho(0.005).is_some());
    }
}
