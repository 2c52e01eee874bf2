//! The martingale envelope of one MMPP flow: at each θ, for each of two exponential
//! supermartingales of its time-reversed chain, the growth rate ρ(θ) and the prefactors κ(θ)
//! (stationary) and κ_palm(θ) (seen from one of the flow's own arrivals). The derivation is in
//! the parent module's docs ("One flow"); this file computes it.
//!
//! * [`PERRON`]: h the right Perron vector of P̃D, λ = sp(P̃D): the martingale itself, least ρ.
//! * [`PEAK`]: h ≡ 1, λ' = max_i (P̃D1)_i ≥ sp: a supermartingale whose κ ≤ 1. For per-10 µs
//!   chains that stay seconds in a state, λ' is barely above sp while the Perron vector's
//!   ratio between states is about e^{θ·(work of a whole stay)}, so κ of the Perron
//!   martingale is huge and the peak one is far better; for fast chains the reverse.
//!
//! Numerics follow [`crate::snc::mmpp`]: per-10 µs chains have P ≈ I, so every matrix is
//! formed shifted (P·D − I, entry by entry from M_i − 1 and the leaving probabilities, never
//! from 1 − (1 − x)), the Perron root comes from [`perron_root`], and the left Perron vector
//! from one linear solve with a nonsingular M-matrix (Gaussian elimination without pivoting,
//! whose pivots stay positive). A root below the resolution of the shifted diagonal gives
//! `None` rather than a value computed from rounding noise.
//!
//! Chains that are not irreducible (a state seen once at the end of a trace keeps an identity
//! row) have no unique stationary law. Every strongly connected class of states is then taken
//! as a regime of its own (its rows renormalised within the class), and the envelope is the
//! worst over the regimes: the largest ρ and the largest prefactors. That covers whichever
//! regime the process settles in, as the SNC-Meister bound's spectral radius (the largest over
//! the diagonal blocks) does.

use crate::snc::perron_root;
use tailbound_model::{Mmpp, SizeModel};

/// Work of one arrival in a state, in the form the MGF needs.
#[derive(Debug, Clone, PartialEq)]
enum Sizes {
    /// exponential work with this mean [work]
    Exponential { mean: f64 },
    /// `(work, probability)` atoms
    Atoms(Vec<(f64, f64)>),
}

impl Sizes {
    /// E[e^{θW}] − 1, or `None` outside the domain.
    fn mgf_minus_one(&self, theta: f64) -> Option<f64> {
        let v = match self {
            Sizes::Exponential { mean } => {
                let x = theta * mean;
                if x >= 1.0 {
                    return None;
                }
                x / (1.0 - x)
            }
            Sizes::Atoms(atoms) => atoms.iter().map(|&(w, p)| p * (theta * w).exp_m1()).sum(),
        };
        v.is_finite().then_some(v)
    }

    fn mean(&self) -> f64 {
        match self {
            Sizes::Exponential { mean } => *mean,
            Sizes::Atoms(atoms) => atoms.iter().map(|&(w, p)| w * p).sum(),
        }
    }

    /// Supremum of θ where the MGF is finite (exp overflow for atoms).
    fn theta_sup(&self) -> f64 {
        match self {
            Sizes::Exponential { mean } => 1.0 / mean,
            Sizes::Atoms(atoms) => {
                let max = atoms.iter().map(|a| a.0).fold(0.0, f64::max);
                if max > 0.0 {
                    f64::MAX.ln() / max
                } else {
                    f64::INFINITY
                }
            }
        }
    }
}

/// One strongly connected class of states, as its own stationary chain.
#[derive(Debug, Clone)]
struct Regime {
    /// indices of the states in the class
    states: Vec<usize>,
    /// transitions within the class, rows renormalised, row-major k×k
    p: Vec<f64>,
    /// leaving probability of each state within the class: Σ_{j≠i} p_ij
    leave: Vec<f64>,
    /// stationary distribution within the class
    pi: Vec<f64>,
    /// arrivals per step, Σ π_i p_i
    arrivals: f64,
    /// mean work per step, Σ π_i p_i E[W_i]
    work: f64,
    /// least Perron root of the shifted matrix computed reliably
    resolution: f64,
}

/// One supermartingale of a flow at one θ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Opt {
    /// ln λ/θ of its normaliser λ [work/step]
    pub rho: f64,
    /// ln κ: E[M_1]/min h for the stationary reversed chain (dimensionless)
    pub ln_kappa: f64,
    /// ln κ_palm: the same given an arrival of the flow in the first reversed step; `None`
    /// when the flow never arrives
    pub ln_kappa_palm: Option<f64>,
}

/// Index of the Perron martingale in [`Tilt::opts`] (the least ρ).
pub const PERRON: usize = 0;
/// Index of the h ≡ 1 supermartingale in [`Tilt::opts`].
pub const PEAK: usize = 1;

/// A flow's supermartingales at one θ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tilt {
    pub opts: [Opt; 2],
}

impl Tilt {
    /// The least growth rate, sp(P·D)'s [work/step].
    pub fn rho(&self) -> f64 {
        self.opts[PERRON].rho
    }
}

/// A bound on a flow's exponential moment over a window of w steps, E[e^{θA(w)}], sharper
/// than a supermartingale's κλ^w for chains that stay long in a state: from a state i drawn
/// from π, either the chain stays in i for the whole window (probability s_i^{w−1}, s_i the
/// chance of staying one step) and the moment is M_i^w, or it leaves, and every step's
/// moment is at most M̂ = max_j M_j whatever the states do:
///
/// E[e^{θA(w)}] ≤ Σ_i π_i [s_i^{w−1} M_i^w + (1 − s_i^{w−1}) M̂^w],
///
/// the largest over the flow's regimes. A walk member that counts w steps before its Doob
/// walk starts may pay this instead of its h ≡ 1 supermartingale's κλ'^w (the walk goes on
/// with λ' from there: parent module docs, "Windows").
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// ln M̂ (≥ 0)
    ln_peak: f64,
    /// per regime, per state: (π_i, ln M_i − ln M̂, ln s_i)
    regimes: Vec<Vec<[f64; 3]>>,
}

impl Window {
    /// ln of the bound on E[e^{θA(w)}] for a window of `w` ≥ 0 steps.
    pub fn ln_mgf(&self, w: f64) -> f64 {
        if w.is_nan() || w < 1.0 {
            return 0.0;
        }
        let worst = self
            .regimes
            .iter()
            .map(|states| {
                // Σ π_i [1 − s^{w−1} + s^{w−1} (M_i/M̂)^w], each term in (0, 1]
                states
                    .iter()
                    .map(|&[pi, ln_r, ln_s]| {
                        if ln_r == 0.0 {
                            // M_i = M̂: π_i whether the chain stays or not
                            return pi;
                        }
                        let stay = (w - 1.0) * ln_s;
                        pi * (-stay.exp_m1() + (stay + w * ln_r).exp())
                    })
                    .sum::<f64>()
            })
            .fold(0.0, f64::max);
        if worst > 0.0 {
            w * self.ln_peak + worst.min(1.0).ln()
        } else {
            w * self.ln_peak
        }
    }
}

fn worse(a: Opt, b: Opt) -> Opt {
    Opt {
        rho: a.rho.max(b.rho),
        ln_kappa: a.ln_kappa.max(b.ln_kappa),
        ln_kappa_palm: match (a.ln_kappa_palm, b.ln_kappa_palm) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        },
    }
}

/// The per-flow part of the martingale analysis (see the module docs).
#[derive(Debug, Clone)]
pub struct Envelope {
    /// arrival probability per step of each state
    prob: Vec<f64>,
    /// ln of each state's probability of staying put for one step (the transitions as given)
    ln_stay: Vec<f64>,
    sizes: Vec<Sizes>,
    regimes: Vec<Regime>,
}

impl Envelope {
    /// The envelope of `mmpp` (validated first).
    pub fn new(mmpp: &Mmpp) -> Result<Envelope, String> {
        mmpp.validate().map_err(|e| e.to_string())?;
        let n = mmpp.states.len();
        let prob: Vec<f64> = mmpp.states.iter().map(|s| s.arrival_prob).collect();
        let ln_stay: Vec<f64> = (0..n)
            .map(|i| {
                let leave: f64 = (0..n)
                    .filter(|&j| j != i)
                    .map(|j| mmpp.transition[i][j])
                    .sum();
                (-leave.min(1.0)).ln_1p()
            })
            .collect();
        let sizes: Vec<Sizes> = mmpp
            .states
            .iter()
            .map(|s| match &s.sizes {
                SizeModel::Exponential { mean } => Sizes::Exponential { mean: *mean },
                SizeModel::Empirical { atoms } => Sizes::Atoms(
                    atoms
                        .iter()
                        .filter(|a| a[1] > 0.0)
                        .map(|a| (a[0], a[1]))
                        .collect(),
                ),
            })
            .collect();
        let mut regimes = Vec::new();
        for class in strongly_connected(&mmpp.transition) {
            let k = class.len();
            let mut p = vec![0.0; k * k];
            let mut leave = vec![0.0; k];
            for (a, &i) in class.iter().enumerate() {
                let row_sum: f64 = class.iter().map(|&j| mmpp.transition[i][j]).sum();
                if row_sum.is_nan() || row_sum <= 0.0 {
                    return Err(format!("state {i} has no transition within its class"));
                }
                for (b, &j) in class.iter().enumerate() {
                    p[a * k + b] = mmpp.transition[i][j] / row_sum;
                    if a != b {
                        leave[a] += p[a * k + b];
                    }
                }
            }
            // stationary law: left Perron vector of P − I (root 0)
            let g: Vec<f64> = (0..k * k)
                .map(|x| {
                    let (a, b) = (x / k, x % k);
                    if a == b {
                        -leave[a]
                    } else {
                        p[x]
                    }
                })
                .collect();
            let pi = match k {
                1 => vec![1.0],
                _ => {
                    let u = left_perron(&g, k, 0.0).ok_or_else(|| {
                        "the stationary distribution of a class of states cannot be computed"
                            .to_string()
                    })?;
                    let s: f64 = u.iter().sum();
                    u.iter().map(|x| x / s).collect()
                }
            };
            let arrivals: f64 = class.iter().zip(&pi).map(|(&i, w)| w * prob[i]).sum();
            let work: f64 = class
                .iter()
                .zip(&pi)
                .map(|(&i, w)| w * prob[i] * sizes[i].mean())
                .sum();
            let resolution = 1e-9 * leave.iter().copied().fold(0.0, f64::max);
            regimes.push(Regime {
                states: class,
                p,
                leave,
                pi,
                arrivals,
                work,
                resolution,
            });
        }
        debug_assert_eq!(regimes.iter().map(|r| r.states.len()).sum::<usize>(), n);
        Ok(Envelope {
            prob,
            ln_stay,
            sizes,
            regimes,
        })
    }

    /// The largest mean work per step over the regimes [work/step].
    pub fn mean_work_per_step(&self) -> f64 {
        self.regimes.iter().map(|r| r.work).fold(0.0, f64::max)
    }

    /// Whether the flow can arrive at all (some regime has arrivals).
    pub fn arrives(&self) -> bool {
        self.regimes.iter().any(|r| r.arrivals > 0.0)
    }

    /// Supremum of θ [1/work] where every state's MGF is finite.
    pub fn theta_sup(&self) -> f64 {
        self.sizes
            .iter()
            .zip(&self.prob)
            .filter(|(_, &p)| p > 0.0)
            .map(|(s, _)| s.theta_sup())
            .fold(f64::INFINITY, f64::min)
    }

    /// The flow's quantities at θ > 0, worst over its regimes; `None` outside the domain.
    pub fn at(&self, theta: f64) -> Option<Tilt> {
        if !(theta > 0.0 && theta.is_finite()) {
            return None;
        }
        // M_i − 1 and φ_i − 1 per state
        let mut phi_m1 = Vec::with_capacity(self.prob.len());
        for (s, &p) in self.sizes.iter().zip(&self.prob) {
            phi_m1.push(if p > 0.0 {
                s.mgf_minus_one(theta)?
            } else {
                0.0
            });
        }
        let mut out: Option<Tilt> = None;
        for r in &self.regimes {
            let t = self.regime_at(r, theta, &phi_m1)?;
            out = Some(match out {
                None => t,
                Some(o) => Tilt {
                    opts: [
                        worse(o.opts[PERRON], t.opts[PERRON]),
                        worse(o.opts[PEAK], t.opts[PEAK]),
                    ],
                },
            });
        }
        out
    }

    /// The flow's window bound at θ > 0 ([`Window`]); `None` outside the domain, and for a
    /// flow whose every regime is one state (the h ≡ 1 walk's κλ^w is then exact).
    pub fn window(&self, theta: f64) -> Option<Window> {
        if !(theta > 0.0 && theta.is_finite()) || self.regimes.iter().all(|r| r.states.len() == 1) {
            return None;
        }
        let mut ln_m = Vec::with_capacity(self.prob.len());
        for (s, &p) in self.sizes.iter().zip(&self.prob) {
            ln_m.push(if p > 0.0 {
                (p * s.mgf_minus_one(theta)?).ln_1p()
            } else {
                0.0
            });
        }
        let ln_peak = ln_m.iter().copied().fold(0.0, f64::max);
        let regimes = self
            .regimes
            .iter()
            .map(|r| {
                r.states
                    .iter()
                    .zip(&r.pi)
                    .map(|(&i, &pi)| [pi, ln_m[i] - ln_peak, self.ln_stay[i]])
                    .collect()
            })
            .collect();
        (ln_peak.is_finite() && ln_m.iter().all(|x| x.is_finite()))
            .then_some(Window { ln_peak, regimes })
    }

    fn regime_at(&self, r: &Regime, theta: f64, phi_m1: &[f64]) -> Option<Tilt> {
        let k = r.states.len();
        // M_i − 1 = p_i (φ_i − 1)
        let m1: Vec<f64> = r.states.iter().map(|&i| self.prob[i] * phi_m1[i]).collect();
        // G = P·D − I: g_ab = p_ab·M_b for a ≠ b, p_aa(M_a − 1) − leave_a on the diagonal
        let mut g = vec![0.0; k * k];
        for a in 0..k {
            for b in 0..k {
                g[a * k + b] = if a == b {
                    r.p[a * k + a] * m1[a] - r.leave[a]
                } else {
                    r.p[a * k + b] * (1.0 + m1[b])
                };
            }
        }
        let lambda_g = perron_root(&g, k);
        if lambda_g.is_nan() || lambda_g <= r.resolution || !lambda_g.is_finite() {
            return None;
        }
        let ln_lambda = lambda_g.ln_1p();
        let rho = ln_lambda / theta;
        // u: left Perron vector of P·D; h_i = u_i/(π_i M_i)
        let u = if k == 1 {
            vec![1.0]
        } else {
            left_perron(&g, k, lambda_g)?
        };
        let h: Vec<f64> = (0..k).map(|a| u[a] / (r.pi[a] * (1.0 + m1[a]))).collect();
        let min_h = h.iter().copied().fold(f64::INFINITY, f64::min);
        if !(min_h > 0.0 && min_h.is_finite()) {
            return None;
        }
        let sum_u: f64 = u.iter().sum();
        let ln_kappa = sum_u.ln() - ln_lambda - min_h.ln();
        let ln_kappa_palm = (r.arrivals > 0.0).then(|| {
            let s: f64 = (0..k)
                .map(|a| {
                    let i = r.states[a];
                    self.prob[i] * (1.0 + phi_m1[i]) / (1.0 + m1[a]) * u[a]
                })
                .sum();
            (s / r.arrivals).ln() - ln_lambda - min_h.ln()
        });
        let perron = Opt {
            rho,
            ln_kappa,
            ln_kappa_palm,
        };
        // h ≡ 1: λ' − 1 = max_a (P̃(D − I)1)_a = max_a Σ_b π_b p_ba (M_b − 1)/π_a, written
        // without 1 − 1 (Σ_b π_b p_ba = π_a)
        let mut peak_m1 = f64::NEG_INFINITY;
        for a in 0..k {
            let s: f64 = (0..k).map(|b| r.pi[b] * r.p[b * k + a] * m1[b]).sum();
            peak_m1 = peak_m1.max(s / r.pi[a]);
        }
        let ln_peak = peak_m1.max(lambda_g).ln_1p();
        let mean_m1: f64 = (0..k).map(|a| r.pi[a] * m1[a]).sum();
        let peak = Opt {
            rho: ln_peak / theta,
            ln_kappa: mean_m1.ln_1p() - ln_peak,
            ln_kappa_palm: (r.arrivals > 0.0).then(|| {
                let s: f64 = (0..k)
                    .map(|a| r.pi[a] * self.prob[r.states[a]] * (1.0 + phi_m1[r.states[a]]))
                    .sum();
                (s / r.arrivals).ln() - ln_peak
            }),
        };
        let finite = |o: &Opt| {
            o.rho.is_finite()
                && o.ln_kappa.is_finite()
                && o.ln_kappa_palm.is_none_or(|x| x.is_finite())
        };
        (finite(&perron) && finite(&peak)).then_some(Tilt {
            opts: [perron, peak],
        })
    }
}

/// The left Perron vector u (uᵀG = λ uᵀ, u > 0) of the irreducible k×k Metzler matrix `g`
/// whose Perron root is `lambda`: u_0 = 1, and the other components solve the transposed
/// system of the nonsingular M-matrix (λI − G) without row and column 0. `None` when a pivot
/// is not positive or a component not finite and positive (rounding beyond repair).
fn left_perron(g: &[f64], k: usize, lambda: f64) -> Option<Vec<f64>> {
    let n = k - 1;
    // a = (λI − G)_sub transposed: a[i][j] = λδ_ij − g[(j+1)][(i+1)]; rhs_i = g[0][i+1]
    let mut a = vec![0.0; n * n];
    let mut x: Vec<f64> = (0..n).map(|i| g[i + 1]).collect();
    for i in 0..n {
        for j in 0..n {
            let gji = g[(j + 1) * k + (i + 1)];
            a[i * n + j] = if i == j { lambda - gji } else { -gji };
        }
    }
    for c in 0..n {
        let piv = a[c * n + c];
        if !(piv > 0.0 && piv.is_finite()) {
            return None;
        }
        for r in c + 1..n {
            let l = a[r * n + c] / piv;
            if l != 0.0 {
                for j in c + 1..n {
                    a[r * n + j] -= l * a[c * n + j];
                }
                x[r] -= l * x[c];
            }
        }
    }
    for c in (0..n).rev() {
        let mut s = x[c];
        for j in c + 1..n {
            s -= a[c * n + j] * x[j];
        }
        x[c] = s / a[c * n + c];
    }
    let mut u = Vec::with_capacity(k);
    u.push(1.0);
    for v in x {
        if !(v > 0.0 && v.is_finite()) {
            return None;
        }
        u.push(v);
    }
    Some(u)
}

/// The strongly connected classes of the transition graph (edges where p_ij > 0), each sorted,
/// in order of their least state (Kosaraju).
fn strongly_connected(p: &[Vec<f64>]) -> Vec<Vec<usize>> {
    let n = p.len();
    let edge = |i: usize, j: usize| p[i][j] > 0.0;
    // first pass: finishing order
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut stack = vec![(s, 0usize)];
        while let Some((v, next)) = stack.pop() {
            match (next..n).find(|&w| edge(v, w) && !seen[w]) {
                Some(w) => {
                    stack.push((v, w + 1));
                    seen[w] = true;
                    stack.push((w, 0));
                }
                None => order.push(v),
            }
        }
    }
    // second pass on the transposed graph
    let mut comp = vec![usize::MAX; n];
    let mut classes: Vec<Vec<usize>> = Vec::new();
    for &s in order.iter().rev() {
        if comp[s] != usize::MAX {
            continue;
        }
        let id = classes.len();
        let mut members = vec![s];
        comp[s] = id;
        let mut stack = vec![s];
        while let Some(v) = stack.pop() {
            for (w, c) in comp.iter_mut().enumerate() {
                if *c == usize::MAX && edge(w, v) {
                    *c = id;
                    members.push(w);
                    stack.push(w);
                }
            }
        }
        members.sort_unstable();
        classes.push(members);
    }
    classes.sort_by_key(|c| c[0]);
    classes
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::MmppState;

    fn state(prob: f64, sizes: SizeModel) -> MmppState {
        MmppState {
            rate_per_s: prob / 1e-5,
            arrival_prob: prob,
            sizes,
            intervals: 0,
            requests: 0,
            work: 0.0,
        }
    }

    fn chain(states: Vec<MmppState>, transition: Vec<Vec<f64>>) -> Mmpp {
        Mmpp {
            step_s: 1e-5,
            interval_s: 1.0,
            states,
            transition,
        }
    }

    /// Dense reference: h from the reversed chain directly, by power iteration on P̃D.
    fn reference(m: &Mmpp, theta: f64) -> (f64, f64, f64) {
        let n = m.states.len();
        let pi = tailbound_model::traffic::stationary_distribution(&m.transition).unwrap();
        let mm = step_mgfs(m, theta);
        let pt = |i: usize, j: usize| pi[j] * m.transition[j][i] / pi[i];
        let mut h = vec![1.0; n];
        let mut lam: f64 = 1.0;
        for _ in 0..200_000 {
            let nh: Vec<f64> = (0..n)
                .map(|i| (0..n).map(|j| pt(i, j) * mm[j] * h[j]).sum())
                .collect();
            lam = nh[0] / h[0];
            let s: f64 = nh.iter().sum();
            h = nh.iter().map(|x| x / s).collect();
        }
        let min_h = h.iter().copied().fold(f64::INFINITY, f64::min);
        let kappa: f64 = (0..n).map(|i| pi[i] * mm[i] * h[i]).sum::<f64>() / lam / min_h;
        let pbar: f64 = (0..n).map(|i| pi[i] * m.states[i].arrival_prob).sum();
        let palm: f64 = (0..n)
            .map(|i| {
                pi[i] * m.states[i].arrival_prob / pbar
                    * m.states[i].sizes.mgf(theta).unwrap()
                    * h[i]
            })
            .sum::<f64>()
            / lam
            / min_h;
        (lam.ln() / theta, kappa, palm)
    }

    #[test]
    fn envelope_matches_the_reversed_chain_computed_directly() {
        // a fast-mixing 3-state chain that power iteration can handle, non-reversible
        let m = chain(
            vec![
                state(0.01, SizeModel::Exponential { mean: 100.0 }),
                state(
                    0.05,
                    SizeModel::Empirical {
                        atoms: vec![[50.0, 0.5], [400.0, 0.5]],
                    },
                ),
                state(0.2, SizeModel::Exponential { mean: 30.0 }),
            ],
            vec![
                vec![0.90, 0.08, 0.02],
                vec![0.01, 0.95, 0.04],
                vec![0.10, 0.05, 0.85],
            ],
        );
        let e = Envelope::new(&m).unwrap();
        for theta in [1e-4, 1e-3, 5e-3] {
            let t = e.at(theta).unwrap().opts[PERRON];
            let (rho, kappa, palm) = reference(&m, theta);
            assert!((t.rho - rho).abs() <= 1e-9 * rho, "ρ {} vs {rho}", t.rho);
            assert!(
                (t.ln_kappa.exp() - kappa).abs() <= 1e-6 * kappa,
                "κ {} vs {kappa}",
                t.ln_kappa.exp()
            );
            let p = t.ln_kappa_palm.unwrap().exp();
            assert!((p - palm).abs() <= 1e-6 * palm, "κ_palm {p} vs {palm}");
        }
    }

    #[test]
    fn a_poisson_source_has_unit_kappa_and_its_batch_mgf_seen_from_an_arrival() {
        let sizes = SizeModel::Empirical {
            atoms: vec![[4096.0, 0.99], [1_048_576.0, 0.01]],
        };
        let m = chain(vec![state(0.002, sizes.clone())], vec![vec![1.0]]);
        let e = Envelope::new(&m).unwrap();
        let theta = 2e-6;
        let tilt = e.at(theta).unwrap();
        // one state: both supermartingales are the same
        assert!((tilt.opts[PERRON].rho - tilt.opts[PEAK].rho).abs() < 1e-9 * tilt.rho());
        let t = tilt.opts[PERRON];
        assert!(t.ln_kappa.abs() < 1e-12);
        // κ_palm = φ/M
        let phi = sizes.mgf(theta).unwrap();
        let mm = 1.0 - 0.002 + 0.002 * phi;
        assert!((t.ln_kappa_palm.unwrap() - (phi / mm).ln()).abs() < 1e-12);
        assert!((t.rho - mm.ln() / theta).abs() < 1e-9 * t.rho);
    }

    #[test]
    fn per_step_chains_are_solved_without_cancellation() {
        // per-10 µs chain leaving its states at 1e-6 and 3e-6 per step
        let m = chain(
            vec![
                state(0.002, SizeModel::Exponential { mean: 1000.0 }),
                state(0.004, SizeModel::Exponential { mean: 1000.0 }),
            ],
            vec![vec![1.0 - 1e-6, 1e-6], vec![3e-6, 1.0 - 3e-6]],
        );
        let e = Envelope::new(&m).unwrap();
        // ρ agrees with the SNC-Meister bound of the same chain
        let snc = crate::snc::MmppBound::new(&m).unwrap();
        let mut prev = 0.0;
        for theta in [1e-7, 1e-5, 1e-4, 5e-4] {
            let t = e.at(theta).unwrap().opts[PERRON];
            let r = snc.rho(theta).unwrap();
            assert!((t.rho - r).abs() <= 1e-7 * r, "θ={theta}: {} vs {r}", t.rho);
            // the prefactor grows with θ and stays ≥ 1
            assert!(t.ln_kappa >= prev - 1e-9, "θ={theta}");
            prev = t.ln_kappa;
        }
        assert!(e.at(1e-3).is_none(), "outside the exponential MGF's domain");
    }

    #[test]
    fn reducible_chains_take_the_worst_class() {
        // state 2 is closed (seen once at the end of a trace)
        let m = chain(
            vec![
                state(0.002, SizeModel::Exponential { mean: 1000.0 }),
                state(0.004, SizeModel::Exponential { mean: 1000.0 }),
                state(0.03, SizeModel::Exponential { mean: 1000.0 }),
            ],
            vec![
                vec![1.0 - 2e-6, 1e-6, 1e-6],
                vec![3e-6, 1.0 - 3e-6, 0.0],
                vec![0.0, 0.0, 1.0],
            ],
        );
        let classes = strongly_connected(&m.transition);
        assert_eq!(classes, vec![vec![0, 1], vec![2]]);
        let e = Envelope::new(&m).unwrap();
        let theta = 1e-4;
        let t = e.at(theta).unwrap().opts[PERRON];
        // the closed class alone is a Poisson source at p = 0.03
        let m2: f64 = 1.0 + 0.03 * (0.1 / 0.9);
        assert!((t.rho - m2.ln() / theta).abs() < 1e-9 * t.rho);
        assert!((e.mean_work_per_step() - 30.0).abs() < 1e-9);
    }

    /// 400 requests/s of 8 KiB while on (0.5 s), `off_prob` per 10 µs step while off (2 s).
    fn on_off(off_prob: f64) -> Mmpp {
        chain(
            vec![
                state(0.004, SizeModel::Exponential { mean: 8192.0 }),
                state(off_prob, SizeModel::Exponential { mean: 8192.0 }),
            ],
            vec![vec![1.0 - 2e-5, 2e-5], vec![5e-6, 1.0 - 5e-6]],
        )
    }

    /// Each state's per-step moment M_i = 1 − p_i + p_i φ_i(θ).
    fn step_mgfs(m: &Mmpp, theta: f64) -> Vec<f64> {
        m.states
            .iter()
            .map(|s| 1.0 - s.arrival_prob + s.arrival_prob * s.sizes.mgf(theta).unwrap())
            .collect()
    }

    #[test]
    fn the_peak_supermartingale_tames_slow_on_off_chains() {
        let m = on_off(1e-7);
        let e = Envelope::new(&m).unwrap();
        let t = e.at(3e-5).unwrap();
        let (perron, peak) = (t.opts[PERRON], t.opts[PEAK]);
        // the Perron vector is about e^4 apart between the states: κ_palm ≈ e^6
        assert!(perron.ln_kappa_palm.unwrap() > 5.0, "{perron:?}");
        // h ≡ 1: κ ≤ 1 and κ_palm is the batch's MGF over λ', with λ' within 2% of sp
        assert!(
            peak.ln_kappa <= 0.0 && peak.ln_kappa_palm.unwrap() < 0.5,
            "{peak:?}"
        );
        assert!(
            peak.rho >= perron.rho && peak.rho <= 1.02 * perron.rho,
            "{peak:?} {perron:?}"
        );
    }

    /// E[e^{θA(w)}] = πᵀ D (P D)^{w−1} 1, by w − 1 products with a vector.
    fn exact_window(m: &Mmpp, theta: f64, w: usize) -> f64 {
        let n = m.states.len();
        let pi = tailbound_model::traffic::stationary_distribution(&m.transition).unwrap();
        let mm = step_mgfs(m, theta);
        // v = D (P D)^{w−1} 1, from the right
        let mut v = mm.clone();
        for _ in 1..w {
            v = (0..n)
                .map(|i| mm[i] * (0..n).map(|j| m.transition[i][j] * v[j]).sum::<f64>())
                .collect();
        }
        (0..n).map(|i| pi[i] * v[i]).sum()
    }

    #[test]
    fn the_window_bound_covers_the_exact_moment_and_beats_the_peak_walk_on_slow_chains() {
        // a slow on/off chain and a fast one
        let slow = on_off(1e-4);
        let fast = chain(
            vec![
                state(0.01, SizeModel::Exponential { mean: 100.0 }),
                state(0.2, SizeModel::Exponential { mean: 30.0 }),
            ],
            vec![vec![0.9, 0.1], vec![0.3, 0.7]],
        );
        for (m, theta) in [(&slow, 3e-5), (&fast, 1e-3)] {
            let e = Envelope::new(m).unwrap();
            let win = e.window(theta).unwrap();
            let peak = e.at(theta).unwrap().opts[PEAK];
            assert_eq!(win.ln_mgf(0.0), 0.0);
            for w in [1usize, 2, 10, 300, 3_000, 20_000] {
                let exact = exact_window(m, theta, w).ln();
                let bound = win.ln_mgf(w as f64);
                assert!(
                    bound >= exact - 1e-9 * exact.abs().max(1.0),
                    "w={w}: bound {bound} below the exact {exact}"
                );
                if std::ptr::eq(m, &slow) && w >= 3_000 {
                    // within a stay, the window bound pays the states' mix (near the exact
                    // moment), the walk the on state for every step: ln(1/π_on) ≈ 1.6 more
                    let walk = peak.ln_kappa + theta * peak.rho * w as f64;
                    assert!(bound < walk - 1.0, "w={w}: {bound} vs the walk's {walk}");
                    assert!(bound < 1.05 * exact, "w={w}: {bound} vs the exact {exact}");
                }
            }
        }
    }
}
