//! Heavy batches kept out of the exponential (parent module docs, "Heavy batches").
//!
//! * [`split`]: one flow's batches above a threshold β, dominated step by step by an
//!   independent i.i.d. process, and the rest of the flow as an MMPP of its own.
//! * [`Law`]: the work of one and of two heavy batches of a walk's members, rounded up to a
//!   geometric grid.
//! * [`Light`] and [`ln_bound`]: the bound of a crossing given the rest's bound as a function of
//!   where its Doob walk starts, summed over the sets of heavy batches before the crossing.

use tailbound_model::{Mmpp, MmppState, SizeModel};

/// A flow's batches above β split off.
#[derive(Debug, Clone)]
pub(super) struct Split {
    /// the flow without them: per state, arrival probability p_i·P_i(W ≤ β), work W | W ≤ β
    pub light: Mmpp,
    /// b*: per-step probability of the dominating heavy process
    pub prob: f64,
    /// the heavy work's law, (work, probability) by work ascending
    pub atoms: Vec<(f64, f64)>,
}

/// P(W > x) of one state's atoms.
fn above(atoms: &[[f64; 2]], x: f64) -> f64 {
    atoms.iter().filter(|a| a[0] > x).map(|a| a[1]).sum()
}

/// The per-step probability b* of a process dominating the batches of `m` above `beta`:
/// max_i p_i·P_i(W > β)/(1 − p_i) (infinite where a state arrives every step).
fn dominating_prob(m: &Mmpp, beta: f64) -> f64 {
    let mut b: f64 = 0.0;
    for s in &m.states {
        let SizeModel::Empirical { atoms } = &s.sizes else {
            return f64::INFINITY;
        };
        let heavy = s.arrival_prob * above(atoms, beta);
        if heavy > 0.0 {
            b = b.max(if s.arrival_prob < 1.0 {
                heavy / (1.0 - s.arrival_prob)
            } else {
                f64::INFINITY
            });
        }
    }
    b
}

/// Flow `m` with its batches above the least threshold β (one of its sizes) at which the
/// dominating heavy process comes at most `cap` times per step; `None` when its sizes are not
/// all empirical or even its largest batches come more often.
///
/// Per step and given the state i, the flow's arrival X (work W with probability p_i) is
/// dominated by L + H with L the light arrival (W·1{W ≤ β}) and H independent of everything,
/// H = V with probability b*, V ~ max_i P_i(W > · | W > β): below β, P(L + H > x) ≥
/// P(L > x) + (1 − P(L > x))·b* ≥ p_i P(W > x) because 1 − P(L > x) ≥ 1 − p_i; at or above β,
/// P(H > x) = b*·P(V > x) ≥ p_i·P_i(W > x). So a coupling puts the flow's arrivals below the
/// light MMPP's plus an i.i.d. heavy process, step by step (Strassen), and every queue fed by
/// them is larger.
pub(super) fn split(m: &Mmpp, cap: f64) -> Option<Split> {
    let mut sizes: Vec<f64> = Vec::new();
    for s in &m.states {
        let SizeModel::Empirical { atoms } = &s.sizes else {
            return None;
        };
        sizes.extend(atoms.iter().filter(|a| a[1] > 0.0).map(|a| a[0]));
    }
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    // b* grows as β falls: the least β still within the cap
    let mut beta = None;
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        if dominating_prob(m, sizes[i]) <= cap {
            beta = Some(sizes[i]);
        } else {
            break;
        }
    }
    let beta = beta?;
    let prob = dominating_prob(m, beta);
    if !(prob > 0.0 && prob.is_finite()) {
        return None;
    }
    let heavy: Vec<f64> = sizes.iter().copied().filter(|&w| w > beta).collect();
    // the heavy law's tail at each heavy size: the largest of the states' conditional tails
    let mut tail = vec![0.0f64; heavy.len() + 1];
    let mut states = Vec::with_capacity(m.states.len());
    for s in &m.states {
        let SizeModel::Empirical { atoms } = &s.sizes else {
            return None;
        };
        let t = above(atoms, beta);
        if t > 0.0 {
            for (k, &h) in heavy.iter().enumerate() {
                let at_least: f64 = atoms.iter().filter(|a| a[0] >= h).map(|a| a[1]).sum();
                tail[k] = tail[k].max((at_least / t).min(1.0));
            }
        }
        let q = 1.0 - t;
        let light_atoms: Vec<[f64; 2]> = atoms
            .iter()
            .filter(|a| a[0] <= beta && a[1] > 0.0)
            .map(|a| [a[0], a[1] / q])
            .collect();
        let (p, atoms) = if q > 0.0 && !light_atoms.is_empty() {
            (s.arrival_prob * q, light_atoms)
        } else {
            (0.0, vec![[sizes[0], 1.0]])
        };
        states.push(MmppState {
            rate_per_s: p / m.step_s,
            arrival_prob: p,
            sizes: SizeModel::Empirical { atoms },
            intervals: s.intervals,
            requests: s.requests,
            work: s.work,
        });
    }
    tail[0] = 1.0;
    let atoms = heavy
        .iter()
        .enumerate()
        .map(|(k, &h)| (h, (tail[k] - tail[k + 1]).max(0.0)))
        .filter(|a| a.1 > 0.0)
        .collect();
    Some(Split {
        light: Mmpp {
            step_s: m.step_s,
            interval_s: m.interval_s,
            states,
            transition: m.transition.clone(),
        },
        prob,
        atoms,
    })
}

/// Ratio of the geometric grid heavy work is rounded up to.
const GRID: f64 = 1.04;

/// Rounds the atoms' work up to the grid from `base` and merges them, ascending.
fn binned(atoms: impl Iterator<Item = (f64, f64)>, base: f64) -> Vec<(f64, f64)> {
    let mut bins: std::collections::BTreeMap<i64, f64> = std::collections::BTreeMap::new();
    for (w, p) in atoms {
        if p > 0.0 {
            let mut j = ((w / base).ln() / GRID.ln()).ceil().max(0.0) as i64;
            if base * GRID.powi(j as i32) < w {
                j += 1;
            }
            *bins.entry(j).or_default() += p;
        }
    }
    bins.into_iter()
        .map(|(j, p)| (base * GRID.powi(j as i32), p))
        .collect()
}

/// One walk member's heavy batches.
#[derive(Debug, Clone, Copy)]
pub(super) struct Part<'a> {
    /// per-step probability
    pub prob: f64,
    /// law of their work, ascending
    pub atoms: &'a [(f64, f64)],
    /// counted from step 0 rather than from step m
    pub from_zero: bool,
}

/// The heavy batches of a walk's members: the law of one (dominating every mixture of the
/// members active at a position) and of the sum of two, and the rates before and after step m.
#[derive(Debug, Clone)]
pub(super) struct Law {
    pub one: Vec<(f64, f64)>,
    pub two: Vec<(f64, f64)>,
    /// per-step rate of the members counted from step 0
    pub lam0: f64,
    /// per-step rate of the members counted from step m
    pub lam_m: f64,
}

impl Law {
    /// From the members' heavy batches.
    pub fn new(parts: &[Part]) -> Option<Law> {
        let lam0: f64 = parts.iter().filter(|p| p.from_zero).map(|p| p.prob).sum();
        let lam_m: f64 = parts.iter().filter(|p| !p.from_zero).map(|p| p.prob).sum();
        let base = parts
            .iter()
            .flat_map(|p| p.atoms.iter().map(|a| a.0))
            .fold(f64::INFINITY, f64::min);
        if !(base.is_finite() && base > 0.0 && lam0 + lam_m > 0.0) {
            return None;
        }
        let mix = |from_zero_only: bool| {
            let members = || parts.iter().filter(move |p| p.from_zero || !from_zero_only);
            let total: f64 = members().map(|p| p.prob).sum();
            binned(
                members().flat_map(|p| p.atoms.iter().map(move |a| (a.0, a.1 * p.prob / total))),
                base,
            )
        };
        // the tail of the mixture of all members and, before m, of those from step 0
        let mut one = mix(false);
        if lam0 > 0.0 && lam_m > 0.0 {
            one = tail_max(&one, &mix(true));
        }
        let two = binned(
            one.iter()
                .flat_map(|&(a, p)| one.iter().map(move |&(b, q)| (a + b, p * q))),
            base,
        );
        Some(Law {
            one,
            two,
            lam0,
            lam_m,
        })
    }

    /// Σ_{i ≤ k} of the per-step rate.
    fn cumulative(&self, k: f64, m: f64) -> f64 {
        self.lam0 * (k + 1.0) + self.lam_m * (k - m + 1.0).max(0.0)
    }

    /// Σ over integer k in [a, b) of Λ(k) and of Λ(k)·X(k), X the cumulative rate.
    fn weights(&self, a: f64, b: f64, m: f64) -> (f64, f64) {
        let mut w1 = 0.0;
        let mut w2 = 0.0;
        // Λ is constant and X linear on [a, min(b, m)) and [max(a, m), b)
        for (lo, hi) in [(a, b.min(m)), (a.max(m), b)] {
            if hi <= lo {
                continue;
            }
            let lam = if lo >= m {
                self.lam0 + self.lam_m
            } else {
                self.lam0
            };
            let n = hi - lo;
            w1 += lam * n;
            // X(k) = X(lo) + lam·(k − lo): Σ = n·X(lo) + lam·n(n − 1)/2
            w2 += lam * (n * self.cumulative(lo, m) + lam * n * (n - 1.0) / 2.0);
        }
        (w1, w2)
    }
}

/// The law whose tail is the larger of the two tails (both ascending by work).
fn tail_max(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut xs: Vec<f64> = a.iter().chain(b).map(|x| x.0).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let at_least =
        |l: &[(f64, f64)], x: f64| -> f64 { l.iter().filter(|y| y.0 >= x).map(|y| y.1).sum() };
    let t: Vec<f64> = xs
        .iter()
        .map(|&x| at_least(a, x).max(at_least(b, x)))
        .collect();
    xs.iter()
        .enumerate()
        .map(|(i, &x)| (x, t[i] - t.get(i + 1).copied().unwrap_or(0.0)))
        .filter(|y| y.1 > 0.0)
        .collect()
}

/// The bound of the rest (the light walk and its lumps) when its Doob walk must start after
/// heavy position k: Q(k) = Σ_p e^{v_p − s_p·(k + 1 − n_p)₊} + the tail family's
/// Σ_{i≥0} e^{v + i·ln_r − s·(k + 1 − n − iτ)₊} (the later hand-off blocks of two queues).
#[derive(Debug, Clone, Default)]
pub(super) struct Light {
    /// (ln value, decay per step [1/step], start [steps])
    pub pieces: Vec<(f64, f64, f64)>,
    /// (ln value of the first, ln ratio per block (< 0), block length, its start, decay)
    pub tail: Option<(f64, f64, f64, f64, f64)>,
}

impl Light {
    /// ln Q(k).
    fn ln_q(&self, k: f64) -> f64 {
        let mut xs: Vec<f64> = self
            .pieces
            .iter()
            .map(|&(v, s, n)| v - s * (k + 1.0 - n).max(0.0))
            .collect();
        if let Some((v, ln_r, tau, n, s)) = self.tail {
            // blocks started by k + 1: i < i1
            let i1 = ((k + 1.0 - n) / tau).ceil().max(0.0);
            xs.push(v + i1 * ln_r - ln_1m_exp(ln_r));
            if i1 > 0.0 {
                // Σ_{i<i1} e^{v − s(k+1−n) + i(ln_r + sτ)}
                let g = ln_r + s * tau;
                let ln_sum = if g.abs() < 1e-12 {
                    i1.ln()
                } else if g > 0.0 {
                    // (e^{g·i1} − 1)/(e^g − 1)
                    g * i1 + ln_1m_exp(-g * i1) - ln_1m_exp(-g) - g
                } else {
                    ln_1m_exp(g * i1) - ln_1m_exp(g)
                };
                xs.push(v - s * (k + 1.0 - n) + ln_sum);
            }
        }
        super::log_sum_exp(&xs)
    }

    /// The largest start: from there on Q decays at least at [`Light::decay`].
    fn settled(&self) -> f64 {
        let a = self.pieces.iter().map(|p| p.2).fold(0.0, f64::max);
        match self.tail {
            Some((_, _, _, n, _)) => a.max(n),
            None => a,
        }
    }

    /// A decay rate δ > 0 and ln R with Q(k) ≤ R·e^{−δ(k − K)} for every k ≥ K (K =
    /// [`Light::settled`]): each piece decays at its own rate, and each term of the tail family
    /// satisfies i·ln_r − s(x − iτ)₊ ≤ −δx + i(ln_r + δτ) for δ ≤ s, so the family is at most
    /// e^{v − δ(k + 1 − n)}/(1 − e^{ln_r + δτ}) with δ ≤ −ln_r/(2τ).
    fn decay(&self, big_k: f64) -> Option<(f64, f64)> {
        let mut delta = f64::INFINITY;
        let mut xs = Vec::new();
        for &(v, s, n) in &self.pieces {
            delta = delta.min(s);
            xs.push(v - s * (big_k + 1.0 - n).max(0.0));
        }
        if let Some((v, ln_r, tau, n, s)) = self.tail {
            let d = s.min(-ln_r / (2.0 * tau));
            delta = delta.min(d);
            xs.push(v - d * (big_k + 1.0 - n) - ln_1m_exp(ln_r + d * tau));
        }
        (delta > 0.0 && delta.is_finite()).then(|| (delta, super::log_sum_exp(&xs)))
    }
}

/// ln(1 − e^x) for x < 0.
fn ln_1m_exp(x: f64) -> f64 {
    if x > -std::f64::consts::LN_2 {
        (-x.exp_m1()).ln()
    } else {
        (-x.exp()).ln_1p()
    }
}

/// At most this many grid intervals before the settled start.
const INTERVALS: usize = 64;

/// ln of the bound on the crossing's probability: the rest's alone, Q(−1), plus, over the sets
/// K of heavy batches before the crossing (by their last position k), P(K)·min(1, e^{θ·ΣK}·Q(k)).
/// Sets of one and two are summed over their laws; larger ones through
/// min(1, e^y) ≤ e^{ηy} for the best η ∈ (0, 1] tried, with the size-j sets with last position
/// k weighing at most Λ(k)·X(k)^{j−1}/(j−1)! (X: the rate summed up to k, Maclaurin). `None`
/// where no bound results.
pub(super) fn ln_bound(light: &Light, law: &Law, theta: f64, m: f64) -> Option<f64> {
    let big_k = light.settled().max(m).ceil();
    let (delta, ln_r) = light.decay(big_k)?;
    // grid intervals [k_i, k_{i+1}) over [0, K): breakpoints at the pieces' starts and m,
    // subdivided to at most ~0.25 of decay each
    let s_max = light
        .pieces
        .iter()
        .map(|p| p.1)
        .chain(light.tail.map(|t| t.4))
        .fold(0.0, f64::max);
    let mut cuts: Vec<f64> = vec![0.0, big_k, m.min(big_k)];
    cuts.extend(
        light
            .pieces
            .iter()
            .map(|p| (p.2 - 1.0).clamp(0.0, big_k).ceil()),
    );
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let step = (0.25 / s_max.max(1e-300))
        .max(big_k / INTERVALS as f64)
        .max(1.0)
        .floor();
    let mut grid: Vec<(f64, f64)> = Vec::new(); // (k_i, k_{i+1})
    for w in cuts.windows(2) {
        let mut a = w[0];
        while a < w[1] {
            let b = (a + step).min(w[1]);
            grid.push((a, b));
            a = b;
        }
    }
    // per interval: ln Q at its start (Q is non-increasing) and the weights of sets of 1, 2
    let rows: Vec<(f64, f64, f64)> = grid
        .iter()
        .map(|&(a, b)| {
            let (w1, w2) = law.weights(a, b, m);
            (light.ln_q(a), w1, w2)
        })
        .collect();
    let lam = law.lam0 + law.lam_m;
    let x_k = law.cumulative(big_k, m);
    let z = (-delta).exp();
    // the sets of j ∈ {1, 2} with work σ: intervals where e^{θσ}Q ≥ 1 count their weight,
    // the others e^{θσ}·Q·weight (ln Q falls from row to row: a prefix and a suffix); past K
    // the closed forms of Q ≤ R e^{−δ(k−K)}
    let n = rows.len();
    let mut prefix = vec![(0.0, 0.0); n + 1];
    for (i, r) in rows.iter().enumerate() {
        prefix[i + 1] = (prefix[i].0 + r.1, prefix[i].1 + r.2);
    }
    let mut suffix = vec![(0.0, 0.0); n + 1];
    for (i, r) in rows.iter().enumerate().rev() {
        let e = if r.0 < 0.0 { r.0.exp() } else { 0.0 };
        suffix[i] = (suffix[i + 1].0 + r.1 * e, suffix[i + 1].1 + r.2 * e);
    }
    let sets = |atoms: &[(f64, f64)], two: bool| -> f64 {
        let mut total = 0.0;
        for &(sigma, p) in atoms {
            let ts = theta * sigma;
            // first row with θσ + ln Q < 0
            let i = rows.partition_point(|r| ts + r.0 >= 0.0);
            let pick = |x: (f64, f64)| if two { x.1 } else { x.0 };
            let mut t = pick(prefix[i])
                + if ts < 600.0 {
                    ts.exp() * pick(suffix[i])
                } else {
                    // e^{θσ} alone would overflow: row by row
                    rows[i..]
                        .iter()
                        .map(|r| pick((r.1, r.2)) * (ts + r.0).exp())
                        .sum()
                };
            let b = ts + ln_r;
            let n0 = if b >= 0.0 {
                (b / delta).floor() + 1.0
            } else {
                0.0
            };
            let e = (b - delta * n0).exp();
            t += if two {
                lam * (n0 * x_k + lam * n0 * (n0 - 1.0) / 2.0)
                    + lam * e * ((x_k + lam * n0) / (1.0 - z) + lam * z / ((1.0 - z) * (1.0 - z)))
            } else {
                lam * (n0 + e / (1.0 - z))
            };
            total += p * t;
        }
        total
    };
    let t1 = sets(&law.one, false);
    let t2 = sets(&law.two, true);
    // three or more: η-trick
    let mut t3 = f64::INFINITY;
    for eta in [1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625] {
        let phi: f64 = law
            .one
            .iter()
            .map(|&(s, p)| p * (eta * theta * s).exp())
            .sum();
        let lp = lam * phi;
        let q = (lp - eta * delta).exp();
        if q.is_nan() || q >= 1.0 {
            continue;
        }
        let mut t = 0.0;
        for (i, &(_, b)) in grid.iter().enumerate() {
            let (lq, w1, _) = rows[i];
            // the weight Λ(k)·φ·(Xφ)²/2·e^{Xφ} grows with k: at most w1·φ·g(X(b − 1))
            let y = law.cumulative(b - 1.0, m) * phi;
            t += w1 * phi * y * y / 2.0 * y.exp() * (eta * lq).exp();
        }
        let y0 = x_k * phi;
        let h0 = 1.0 / (1.0 - q);
        let h1 = q / ((1.0 - q) * (1.0 - q));
        let h2 = q * (1.0 + q) / ((1.0 - q) * (1.0 - q) * (1.0 - q));
        t += lp * (eta * ln_r).exp() * y0.exp() / 2.0
            * (y0 * y0 * h0 + 2.0 * y0 * lp * h1 + lp * lp * h2);
        if t.is_finite() {
            t3 = t3.min(t);
        }
    }
    let total = light.ln_q(-1.0).exp() + t1 + t2 + t3;
    let v = total.ln();
    (v.is_finite() && !v.is_nan()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(p: f64, atoms: Vec<[f64; 2]>) -> MmppState {
        MmppState {
            rate_per_s: p / 1e-5,
            arrival_prob: p,
            sizes: SizeModel::Empirical { atoms },
            intervals: 0,
            requests: 0,
            work: 0.0,
        }
    }

    /// P(X > x) of a discrete law.
    fn tail_of(law: &[(f64, f64)], x: f64) -> f64 {
        law.iter().filter(|a| a.0 > x).map(|a| a.1).sum()
    }

    #[test]
    fn the_split_dominates_every_state_step_by_step() {
        let m = Mmpp {
            step_s: 1e-5,
            interval_s: 1.0,
            states: vec![
                state(
                    0.01,
                    vec![[100.0, 0.9], [5e3, 0.0999], [1e6, 0.00005], [4e6, 0.00005]],
                ),
                state(
                    0.2,
                    vec![[100.0, 0.5], [2e3, 0.499], [1e6, 0.0001], [4e6, 0.0009]],
                ),
            ],
            transition: vec![vec![0.999, 0.001], vec![0.01, 0.99]],
        };
        // 4 MiB and 1 MiB come less than 1e-3 per step; 5 KB ones do not
        let s = split(&m, 1e-3).expect("a split");
        let heavy_sizes: Vec<f64> = s.atoms.iter().map(|a| a.0).collect();
        assert_eq!(heavy_sizes, vec![1e6, 4e6]);
        // the larger of the states' conditional tails: 4 MiB in 90 % (the second state's)
        assert!((s.atoms[1].1 - 0.9).abs() < 1e-12, "{:?}", s.atoms);
        assert!((s.atoms.iter().map(|a| a.1).sum::<f64>() - 1.0).abs() < 1e-12);
        for (i, st) in m.states.iter().enumerate() {
            let SizeModel::Empirical { atoms } = &st.sizes else {
                unreachable!()
            };
            let SizeModel::Empirical { atoms: light } = &s.light.states[i].sizes else {
                unreachable!()
            };
            let pl = s.light.states[i].arrival_prob;
            // the law of L + H with L, H independent, against X's, at every size and between
            let mut sum: Vec<(f64, f64)> = vec![(0.0, (1.0 - pl) * (1.0 - s.prob))];
            for a in light {
                sum.push((a[0], pl * a[1] * (1.0 - s.prob)));
                for h in &s.atoms {
                    sum.push((a[0] + h.0, pl * a[1] * s.prob * h.1));
                }
            }
            for h in &s.atoms {
                sum.push((h.0, (1.0 - pl) * s.prob * h.1));
            }
            let x_law: Vec<(f64, f64)> = atoms
                .iter()
                .map(|a| (a[0], st.arrival_prob * a[1]))
                .collect();
            for x in [
                0.0,
                50.0,
                100.0,
                1e3,
                2e3,
                4e3,
                5e3,
                1e5,
                1e6,
                2e6,
                4e6 - 1.0,
            ] {
                assert!(
                    tail_of(&sum, x) >= tail_of(&x_law, x) * (1.0 - 1e-12),
                    "state {i} at {x}: {} < {}",
                    tail_of(&sum, x),
                    tail_of(&x_law, x)
                );
            }
            // the light part is the state's batches up to β
            assert!(
                (pl - st.arrival_prob * tail_of(&x_law, -1.0).min(1.0)).abs() <= st.arrival_prob
            );
        }
        // nothing to split where even the largest batches come too often, or sizes are not
        // empirical
        assert!(split(&m, 1e-9).is_none());
        let mut e = m.clone();
        e.states[0].sizes = SizeModel::Exponential { mean: 100.0 };
        assert!(split(&e, 1e-3).is_none());
    }

    #[test]
    fn the_tail_family_is_summed_in_closed_form() {
        let light = Light {
            pieces: vec![(-3.0, 0.02, 40.0)],
            tail: Some((-5.0, -0.7, 16.0, 60.0, 0.05)),
        };
        for k in [-1.0, 0.0, 10.0, 59.0, 60.0, 75.0, 200.0, 1000.0] {
            let mut want = (-3.0 - 0.02 * (k + 1.0 - 40.0f64).max(0.0)).exp();
            for i in 0..20000 {
                let i = i as f64;
                want += (-5.0 + i * -0.7 - 0.05 * (k + 1.0 - 60.0 - i * 16.0).max(0.0)).exp();
            }
            let got = light.ln_q(k).exp();
            assert!((got - want).abs() <= 1e-9 * want, "{k}: {got} vs {want}");
        }
        // past the settled start, the decay bound holds
        let big_k = light.settled();
        let (delta, ln_r) = light.decay(big_k).unwrap();
        for u in [0.0, 1.0, 10.0, 100.0, 1000.0] {
            assert!(light.ln_q(big_k + u) <= ln_r - delta * u + 1e-12);
        }
    }

    #[test]
    fn the_set_sums_bound_the_union_and_stay_close_to_it() {
        // a walk of bound e^{−2} from start 31 falling by 0.01 per step; heavy batches of 1e4 or
        // 3e4 work at θ = 1e-3 (e^10, e^30 at once), rare
        let light = Light {
            pieces: vec![(-2.0, 0.01, 31.0)],
            tail: None,
        };
        let law = Law::new(&[
            Part {
                prob: 1e-6,
                atoms: &[(1e4, 0.7), (3e4, 0.3)],
                from_zero: true,
            },
            Part {
                prob: 2e-6,
                atoms: &[(3e4, 1.0)],
                from_zero: false,
            },
        ])
        .unwrap();
        let (theta, m) = (1e-3, 30.0);
        let q = |k: f64| light.ln_q(k);
        let lam = |k: f64| law.lam0 + if k >= m { law.lam_m } else { 0.0 };
        let mut x = 0.0;
        let (mut t1, mut t2) = (0.0, 0.0);
        for k in 0..200_000 {
            let k = k as f64;
            x += lam(k);
            for &(s, p) in &law.one {
                t1 += lam(k) * p * (theta * s + q(k)).min(0.0).exp();
            }
            for &(s, p) in &law.two {
                t2 += lam(k) * x * p * (theta * s + q(k)).min(0.0).exp();
            }
        }
        let exact = q(-1.0).exp() + t1 + t2;
        let got = ln_bound(&light, &law, theta, m).unwrap().exp();
        assert!(got >= exact, "{got} < {exact}");
        assert!(got <= 1.2 * exact, "{got} vs {exact}");
        // the heavy batches add a little to the rest's e^{−2}, where paying e^{θ·size} would
        // have given e^{−2 + 30}
        assert!(got < 1.5 * (-2.0f64).exp(), "{got}");
    }
}
