//! Minimising the latency bound d(θ) over θ, and over the Hölder parameters of dependent
//! operators.
//!
//! * [`ThetaSearch::Grid`]: snc-meister §4.4 as coded: start at θ = 1000, sweep
//!   [max(θ − 10h, 1e-9), θ + 10h] in steps of h for h = 100, 10, …, 1e-9, keeping the best
//!   point of each sweep. θ is absolute [1/work], so the grid suits work in bytes only.
//! * [`ThetaSearch::Brent`] (default): scan θ = θ_sup·10^{−k/2}, k = 1, 2, … downwards from the
//!   supremum of the MGFs' domain until d has been finite and then increased twice (d → ∞ at
//!   both ends of the stability interval), then Brent's method (golden section with parabolic
//!   steps) on ln θ inside the bracket around the best scan point, to 1e-6 in ln θ. Undefined
//!   points count as +∞, so the bracket may reach outside the stability region.
//! * Hölder: every dependent operator has its own p. Starting from p = 2 everywhere, coordinate
//!   descent optimises one slot at a time over ln(p − 1) ∈ [−6, 6] (a 5-point scan, then golden
//!   section on the best neighbourhood), the objective being the θ-minimum; two sweeps at
//!   most. Deterministic: no random restarts.
//! * Speed: under Brent with the exact convolution rule and no Hölder operator in the problem
//!   (the exponents' descent compares bounds a few 1e-4 apart, which interpolation would
//!   blur: it keeps exact values, though every arrival at a grid point is still read from its
//!   cache), the whole search reads the arrivals
//!   off the analysis' shared θ grid ([`Eval::tabulated`], see `algebra`); then d is evaluated
//!   exactly at the four grid points around the minimum it found (θ_{i−1} … θ_{i+2} with
//!   θ_i ≤ θ* < θ_{i+1}, where every arrival's exact value is cached) and, where the parabola
//!   through the best one and its neighbours says the minimum between them is lower by more
//!   than 4e-4 (sharp curvature near an MGF's pole, or a neighbour undefined) or where they
//!   are all above the interpolated minimum by more than 4e-4 (a kink), at θ* as well (where
//!   a sum of MMPPs at most half its pole is its chord, a bound above its exact value: `algebra`);
//!   the lowest is the bound: always d(θ) from bounds at the chosen θ and Hölder exponents, a
//!   valid bound whatever the interpolation did. Half a
//!   grid step (1/256 decade) from the continuous minimum costs about (ln 10/256)²/2 ≈ 4e-5
//!   at unit relative curvature; a property test checks it stays within 0.1 % of the all-exact
//!   search ([`minimise_exact`]). Should neither point be defined, the all-exact search runs
//!   instead. [`ThetaSearch::Grid`] sweeps the interpolated values too (under the original's
//!   convolution rule every arrival without a convolution below is read off the grid) and
//!   evaluates d exactly at the θ the sweep chose: the original's sweep points, its choice
//!   among them unchanged but where two are within the interpolation's error, and d exact.

use super::algebra::{grid_below, grid_theta, ConvolutionRule, Eval, LatencyProblem};
use crate::ThetaSearch;

/// A minimum of the latency bound.
#[derive(Debug, Clone, PartialEq)]
pub struct Minimum {
    /// θ at the minimum [1/work]
    pub theta: f64,
    /// d(θ) [steps]
    pub steps: f64,
    /// Hölder p per slot used (indexed by slot; unused slots are 2)
    pub hoelder: Vec<f64>,
}

/// SNC-Meister's coarse-to-fine sweep (`LatencyBound::calcTheta` with `minSearch`).
pub fn grid(f: impl Fn(f64) -> Option<f64>) -> Option<(f64, f64)> {
    const MIN_THETA: f64 = 1e-9;
    const INITIAL_THETA: f64 = 1000.0;
    const FACTOR: f64 = 10.0;
    let mut theta = INITIAL_THETA;
    let mut step = INITIAL_THETA / FACTOR;
    while step >= MIN_THETA {
        let lo = (theta - FACTOR * step).max(MIN_THETA);
        let hi = theta + FACTOR * step;
        let mut best = lo;
        let mut best_val = f64::INFINITY;
        let mut x = lo;
        while x <= hi {
            if let Some(v) = f(x) {
                if v < best_val {
                    best_val = v;
                    best = x;
                }
            }
            x += step;
        }
        theta = best;
        step /= FACTOR;
    }
    f(theta).map(|d| (theta, d))
}

/// The scan-then-Brent minimiser over ln θ (module docs). `theta_sup` is where the MGFs end.
pub fn brent(f: impl Fn(f64) -> Option<f64>, theta_sup: f64) -> Option<(f64, f64)> {
    let g = |x: f64| f(x.exp()).unwrap_or(f64::INFINITY);
    let top = if theta_sup.is_finite() && theta_sup > 0.0 {
        theta_sup.ln()
    } else {
        1e3f64.ln()
    };
    let half_decade = 0.5 * std::f64::consts::LN_10;
    let mut best: Option<(usize, f64)> = None;
    let mut xs = Vec::with_capacity(48);
    let mut rises = 0;
    for k in 1..=60 {
        let x = top - k as f64 * half_decade;
        let v = g(x);
        xs.push((x, v));
        match best {
            Some((_, bv)) if v >= bv || !v.is_finite() => {
                rises += 1;
                if rises >= 2 {
                    break;
                }
            }
            _ if v.is_finite() => {
                best = Some((xs.len() - 1, v));
                rises = 0;
            }
            _ => {}
        }
    }
    let (i, _) = best?;
    let a = if i + 1 < xs.len() {
        xs[i + 1].0
    } else {
        xs[i].0 - half_decade
    };
    let b = if i > 0 { xs[i - 1].0 } else { top };
    let (x, v) = brent_min(&g, a, xs[i].0, xs[i].1, b, 1e-6, 100);
    Some((x.exp(), v)).filter(|(_, v)| v.is_finite())
}

/// Brent's minimisation of `g` on [a, b] from a point `x0` inside with value `f0`; +∞ values
/// are allowed (golden-section steps only while any of the three kept points is infinite).
fn brent_min(
    g: &impl Fn(f64) -> f64,
    mut a: f64,
    x0: f64,
    f0: f64,
    mut b: f64,
    tol: f64,
    max_iter: usize,
) -> (f64, f64) {
    const CGOLD: f64 = 0.381_966_011_250_105_1;
    let (mut x, mut w, mut v) = (x0, x0, x0);
    let (mut fx, mut fw, mut fv) = (f0, f0, f0);
    let mut d: f64 = 0.0;
    let mut e: f64 = 0.0;
    for _ in 0..max_iter {
        let xm = 0.5 * (a + b);
        let tol1 = tol * x.abs().max(1.0);
        let tol2 = 2.0 * tol1;
        if (x - xm).abs() <= tol2 - 0.5 * (b - a) {
            break;
        }
        let mut golden = true;
        if e.abs() > tol1 && fx.is_finite() && fw.is_finite() && fv.is_finite() {
            let r = (x - w) * (fx - fv);
            let mut q = (x - v) * (fx - fw);
            let mut p = (x - v) * q - (x - w) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            let etemp = e;
            if p.abs() < (0.5 * q * etemp).abs() && p > q * (a - x) && p < q * (b - x) {
                e = d;
                d = p / q;
                let u = x + d;
                if u - a < tol2 || b - u < tol2 {
                    d = tol1.copysign(xm - x);
                }
                golden = false;
            }
        }
        if golden {
            e = if x >= xm { a - x } else { b - x };
            d = CGOLD * e;
        }
        let u = if d.abs() >= tol1 {
            x + d
        } else {
            x + tol1.copysign(d)
        };
        let fu = g(u);
        if fu <= fx {
            if u >= x {
                a = x;
            } else {
                b = x;
            }
            (v, fv) = (w, fw);
            (w, fw) = (x, fx);
            (x, fx) = (u, fu);
        } else {
            if u < x {
                a = u;
            } else {
                b = u;
            }
            if fu <= fw || w == x {
                (v, fv) = (w, fw);
                (w, fw) = (u, fu);
            } else if fu <= fv || v == x || v == w {
                (v, fv) = (u, fu);
            }
        }
    }
    (x, fx)
}

/// Most dependent operators that get their own Hölder exponent (stage 2 of [`minimise`]).
pub const MAX_DESCENT_SLOTS: usize = 4;

/// The least bound of `problem` over θ and its Hölder slots (`slot_count` slots exist in the
/// algebra that built it). `None` when no θ gives a finite bound.
///
/// Deterministic: first one exponent p shared by every dependent operator (a line search
/// over ln(p − 1), each point a θ minimisation), then, when there are at most
/// [`MAX_DESCENT_SLOTS`] dependent operators, two sweeps of one-at-a-time descent. Either
/// stage only keeps a change that lowers the bound.
pub fn minimise(
    problem: &LatencyProblem,
    slot_count: usize,
    search: ThetaSearch,
    convolution: ConvolutionRule,
) -> Option<Minimum> {
    // the Hölder exponents' descent compares bounds a few 1e-4 apart: it runs on exact values
    if !problem.slots().is_empty() {
        return minimise_in(problem, slot_count, search, convolution, false);
    }
    if search == ThetaSearch::Grid {
        // the original's sweep on the shared grid, then d exact at the θ it chose (not at the
        // grid points around it, which could beat the original's sweep where it is coarse)
        let exact_at = |m: Minimum| -> Option<Minimum> {
            let ev = Eval {
                hoelder: &m.hoelder,
                convolution,
                tabulated: false,
            };
            let steps = problem.steps_at(m.theta, &ev)?;
            Some(Minimum { steps, ..m })
        };
        return minimise_in(problem, slot_count, search, convolution, true)
            .and_then(exact_at)
            .or_else(|| minimise_exact(problem, slot_count, search, convolution));
    }
    if convolution != ConvolutionRule::Exact {
        return minimise_in(problem, slot_count, search, convolution, false);
    }
    let exact = |m: Minimum| -> Option<Minimum> {
        let ev = Eval {
            hoelder: &m.hoelder,
            convolution,
            tabulated: false,
        };
        let at = |theta: f64| problem.steps_at(theta, &ev).map(|d| (theta, d));
        let i = grid_below(m.theta)?;
        // exact at the grid points around θ* (every arrival is cached there)
        let pts: Vec<Option<(f64, f64)>> = (i - 1..=i + 2).map(|j| at(grid_theta(j))).collect();
        let mut best = pts
            .iter()
            .flatten()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1));
        // where d curves sharply (near the MGF's pole) or a neighbour is undefined, the
        // minimum between grid points may be lower by more than 4e-4: evaluate there too
        let k = pts
            .iter()
            .enumerate()
            .filter_map(|(k, p)| p.map(|p| (k, p.1)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k);
        let sharp = match k {
            Some(k) if k >= 1 && k + 1 < pts.len() => match (pts[k - 1], pts[k], pts[k + 1]) {
                (Some(l), Some(c), Some(r)) => {
                    let curv = l.1 - 2.0 * c.1 + r.1;
                    curv > 0.0 && (r.1 - l.1).powi(2) / (8.0 * curv) > 4e-4 * c.1
                }
                _ => true,
            },
            _ => true,
        };
        // and where the grid's best is above the interpolated minimum (a kink between points)
        let above = best.is_none_or(|b| b.1 > m.steps * (1.0 + 4e-4));
        if sharp || above {
            if let Some(p) = at(m.theta) {
                if best.is_none_or(|b| p.1 < b.1) {
                    best = Some(p);
                }
            }
        }
        let (theta, steps) = best?;
        Some(Minimum { theta, steps, ..m })
    };
    minimise_in(problem, slot_count, search, convolution, true)
        .and_then(exact)
        .or_else(|| minimise_exact(problem, slot_count, search, convolution))
}

/// As [`minimise`] with no interpolation (every evaluation a bound at its θ): the reference
/// the grid's tightness is measured against.
pub fn minimise_exact(
    problem: &LatencyProblem,
    slot_count: usize,
    search: ThetaSearch,
    convolution: ConvolutionRule,
) -> Option<Minimum> {
    minimise_in(problem, slot_count, search, convolution, false)
}

fn minimise_in(
    problem: &LatencyProblem,
    slot_count: usize,
    search: ThetaSearch,
    convolution: ConvolutionRule,
    tabulated: bool,
) -> Option<Minimum> {
    let theta_min = |ps: &[f64]| -> Option<(f64, f64)> {
        let ev = Eval {
            hoelder: ps,
            convolution,
            tabulated,
        };
        let f = |theta: f64| problem.steps_at(theta, &ev);
        match search {
            ThetaSearch::Grid => grid(f),
            ThetaSearch::Brent => brent(f, problem.theta_sup(&ev)),
        }
    };
    let slots = problem.slots();
    let value = |m: &Option<(f64, f64)>| m.map_or(f64::INFINITY, |(_, d)| d);
    // One 1-D minimisation over u = ln(p − 1): a coarse scan, then Brent around the best
    // point. Returns the best u found.
    let line_search = |obj: &dyn Fn(f64) -> f64| -> f64 {
        let grid_u = [-6.0, -3.0, 0.0, 3.0, 6.0];
        let vals: Vec<f64> = grid_u.iter().map(|&u| obj(u)).collect();
        let mut bi = 2;
        for (i, &v) in vals.iter().enumerate() {
            if v < vals[bi] {
                bi = i;
            }
        }
        let lo = if bi > 0 { grid_u[bi - 1] } else { -9.0 };
        let hi = if bi + 1 < grid_u.len() {
            grid_u[bi + 1]
        } else {
            9.0
        };
        brent_min(&obj, lo, grid_u[bi], vals[bi], hi, 1e-3, 12).0
    };
    let mut ps = vec![2.0; slot_count];
    let mut best = theta_min(&ps);
    if slots.is_empty() {
        let (theta, steps) = best?;
        return Some(Minimum {
            theta,
            steps,
            hoelder: ps,
        });
    }
    // Stage 1: one exponent shared by every dependent operator (one line search, whatever
    // the number of operators).
    let shared = |u: f64| -> Vec<f64> {
        let mut p = ps.clone();
        for &slot in &slots {
            p[slot] = 1.0 + u.exp();
        }
        p
    };
    let u = line_search(&|u: f64| value(&theta_min(&shared(u))));
    let trial = shared(u);
    let r = theta_min(&trial);
    if value(&r) < value(&best) {
        best = r;
        ps = trial;
    }
    // Stage 2: coordinate descent, one exponent at a time. Each operator costs about 18 θ
    // searches per sweep, so only few operators get their own exponent; a per-operator
    // exponent can only tighten the shared-exponent bound.
    if slots.len() <= MAX_DESCENT_SLOTS {
        for _sweep in 0..2 {
            let before = value(&best);
            for &slot in &slots {
                let base = ps.clone();
                let obj = |u: f64| -> f64 {
                    let mut p = base.clone();
                    p[slot] = 1.0 + u.exp();
                    value(&theta_min(&p))
                };
                let u = line_search(&obj);
                let mut trial = ps.clone();
                trial[slot] = 1.0 + u.exp();
                let r = theta_min(&trial);
                if value(&r) < value(&best) {
                    best = r;
                    ps = trial;
                }
            }
            if value(&best) >= before * (1.0 - 1e-6) {
                break;
            }
        }
    }
    let (theta, steps) = best?;
    Some(Minimum {
        theta,
        steps,
        hoelder: ps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brent_finds_the_minimum_of_a_bathtub() {
        // d(θ) = 1/θ + 1/(1 − θ/θ*) style: infinite past θ* = 1e-3
        let f = |t: f64| (t < 1e-3).then(|| 1.0 / t + 1e6 / (1.0 - t / 1e-3));
        let (t, v) = brent(f, 2e-3).unwrap();
        // exact: minimise 1/t + 1e6/(1 − 1000t)
        let (tg, vg) = grid(f).unwrap();
        assert!(
            v <= vg * (1.0 + 1e-9),
            "brent {v} at {t}, grid {vg} at {tg}"
        );
        assert!((t - tg).abs() / tg < 1e-2);
    }

    #[test]
    fn nothing_finite_gives_none() {
        assert_eq!(brent(|_| None, 1.0), None);
        assert_eq!(grid(|_| None), None);
    }
}
