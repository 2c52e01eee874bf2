//! The exact stationary workload of a FIFO queue fed by compound Poisson arrivals (M/G/1).
//! It is a reference for the SNC bounds on one queue, and it shows how loose they are.
//!
//! Batches arrive as a Poisson process of rate λ [1/s], each one i.i.d. work S [work] with
//! mean m, at a queue of constant rate c [work/s] with load ρ = λm/c < 1. Independent
//! compound Poisson sources superpose into one ([`CompoundPoisson::superpose`]: the rates add
//! and the sizes mix in proportion to them). By Pollaczek–Khinchine, the stationary workload V
//! (the time-stationary virtual delay is V/c) is a geometric sum
//!
//! V = Y_1 + … + Y_N,  P(N = n) = (1 − ρ)ρⁿ,  Y_i i.i.d. with density P(S > y)/m
//!
//! (the ladder heights, S's equilibrium distribution). Here the Y_i are put on a grid of width
//! h, **rounded up** to the next grid point: the computed V is stochastically larger than the
//! true one, so its tail and quantiles are upper bounds, within N·h of the exact ones. The law
//! of the discretised V follows from Panjer's recursion g_0 = 1 − ρ,
//! g_k = ρ·Σ_{j=1..k} q_j·g_{k−j}, with q_j = P((j−1)h < Y ≤ jh). That costs O(K²) for K grid
//! points. The grid doubles its range until the tail at its end is below ε.
//!
//! No I/O, no clock. Non-finite or out-of-range inputs are errors; an overloaded queue (ρ ≥ 1)
//! has no stationary workload and is an error too, never an infinite or NaN quantile.

use crate::CalculusError;
use tailbound_model::SizeModel;

/// A compound Poisson arrival process of batches.
#[derive(Debug, Clone, PartialEq)]
pub struct CompoundPoisson {
    /// batches per second
    rate_per_s: f64,
    sizes: Sizes,
}

#[derive(Debug, Clone, PartialEq)]
enum Sizes {
    Exponential {
        mean: f64,
    },
    /// `(work, probability)`, probabilities summing to 1
    Atoms(Vec<(f64, f64)>),
}

/// Grid points per pass of [`CompoundPoisson::workload_quantile`].
pub const DEFAULT_CELLS: usize = 8000;

fn invalid(what: String) -> CalculusError {
    CalculusError::Invalid(what)
}

impl CompoundPoisson {
    /// Batches at `rate_per_s` [1/s] with work drawn from `sizes` (a finite mean above 0;
    /// empirical atoms with finite work ≥ 0 and probabilities summing to 1).
    pub fn new(rate_per_s: f64, sizes: &SizeModel) -> Result<CompoundPoisson, CalculusError> {
        if !(rate_per_s.is_finite() && rate_per_s >= 0.0) {
            return Err(invalid(format!(
                "batch rate {rate_per_s} is not allowed; expected a finite rate ≥ 0 [1/s]"
            )));
        }
        let sizes = match sizes {
            SizeModel::Exponential { mean } => {
                if !(mean.is_finite() && *mean > 0.0) {
                    return Err(invalid(format!(
                        "exponential batch mean {mean} is not allowed; expected a finite \
                         work > 0"
                    )));
                }
                Sizes::Exponential { mean: *mean }
            }
            SizeModel::Empirical { atoms } => {
                let total: f64 = atoms.iter().map(|a| a[1]).sum();
                if let Some(a) = atoms
                    .iter()
                    .find(|a| !(a[0].is_finite() && a[0] >= 0.0 && a[1].is_finite() && a[1] >= 0.0))
                {
                    return Err(invalid(format!(
                        "batch size atom {a:?} is not allowed; expected [work ≥ 0, \
                         probability ≥ 0]"
                    )));
                }
                if (total - 1.0).abs() > 1e-9 || atoms.iter().all(|a| a[0] * a[1] == 0.0) {
                    return Err(invalid(format!(
                        "batch size atoms must have probabilities summing to 1 (they sum to \
                         {total}) and a mean above 0"
                    )));
                }
                Sizes::Atoms(
                    atoms
                        .iter()
                        .filter(|a| a[1] > 0.0)
                        .map(|a| (a[0], a[1]))
                        .collect(),
                )
            }
        };
        Ok(CompoundPoisson { rate_per_s, sizes })
    }

    /// The superposition of independent sources: one compound Poisson process whose rate is
    /// the sum and whose batch is drawn from source i with probability λ_i/Σλ. Exponential
    /// sizes join as they are only if every source has the same mean; otherwise use empirical
    /// sizes.
    pub fn superpose(parts: &[CompoundPoisson]) -> Result<CompoundPoisson, CalculusError> {
        let rate: f64 = parts.iter().map(|p| p.rate_per_s).sum();
        if parts.is_empty() || rate == 0.0 {
            return Ok(CompoundPoisson {
                rate_per_s: 0.0,
                sizes: Sizes::Atoms(vec![(0.0, 1.0)]),
            });
        }
        let mut atoms = Vec::new();
        let mut means = Vec::new();
        for p in parts {
            let w = p.rate_per_s / rate;
            match &p.sizes {
                Sizes::Exponential { mean } => means.push((*mean, w)),
                Sizes::Atoms(a) => atoms.extend(a.iter().map(|&(x, q)| (x, q * w))),
            }
        }
        if atoms.is_empty() && means.windows(2).all(|m| m[0].0 == m[1].0) {
            return Ok(CompoundPoisson {
                rate_per_s: rate,
                sizes: Sizes::Exponential { mean: means[0].0 },
            });
        }
        if !means.is_empty() {
            return Err(invalid(
                "cannot superpose exponential batch sizes of different means (or with \
                 empirical ones); give every source empirical sizes"
                    .into(),
            ));
        }
        Ok(CompoundPoisson {
            rate_per_s: rate,
            sizes: Sizes::Atoms(atoms),
        })
    }

    /// Mean work per batch [work].
    pub fn mean_size(&self) -> f64 {
        match &self.sizes {
            Sizes::Exponential { mean } => *mean,
            Sizes::Atoms(a) => a.iter().map(|(x, p)| x * p).sum(),
        }
    }

    /// Load on a queue of `rate` [work/s]: λ·m/c.
    pub fn load(&self, rate: f64) -> f64 {
        self.rate_per_s * self.mean_size() / rate
    }

    /// ∫₀^y P(S > u) du: E[min(S, y)] [work].
    fn integrated_tail(&self, y: f64) -> f64 {
        match &self.sizes {
            Sizes::Exponential { mean } => mean * -(-y / mean).exp_m1(),
            Sizes::Atoms(a) => a.iter().map(|&(x, p)| p * x.min(y)).sum(),
        }
    }

    /// The ε-quantile of the stationary workload on a queue of `rate` [work/s] with `cells`
    /// grid points per pass: the least grid point x with P(V > x) ≤ ε for the rounded-up V
    /// (module docs), so an upper bound on the exact quantile [work]. Divide by `rate` for
    /// the virtual delay [s].
    pub fn workload_quantile(
        &self,
        rate: f64,
        epsilon: f64,
        cells: usize,
    ) -> Result<f64, CalculusError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(invalid(format!(
                "queue rate {rate} is not allowed; expected a finite rate > 0 [work/s]"
            )));
        }
        if !(epsilon > 0.0 && epsilon < 1.0) {
            return Err(invalid(format!(
                "violation probability {epsilon} is not allowed; expected 0 < ε < 1"
            )));
        }
        if cells < 2 {
            return Err(invalid(format!(
                "{cells} grid cells are too few; expected at least 2"
            )));
        }
        let rho = self.load(rate);
        if rho.is_nan() || rho >= 1.0 {
            return Err(invalid(format!(
                "load {rho:.4} ≥ 1: the queue has no stationary workload"
            )));
        }
        if rho <= epsilon {
            // P(V > 0) = ρ: the queue is empty with probability at least 1 − ε
            return Ok(0.0);
        }
        let m = self.mean_size();
        // start at the M/M/1 quantile of this mean, then widen
        let mut range = (m * (rho / epsilon).ln() / (1.0 - rho)).max(m);
        for _ in 0..60 {
            let h = range / cells as f64;
            let tails = self.tails(rho, h, cells);
            if let Some(k) = tails.iter().position(|&t| t <= epsilon) {
                // k > 0: P(V > 0) = ρ > ε here
                let found = k as f64 * h;
                // Again on [0, found] only: a finer grid rounds up less. Both quantiles are
                // upper bounds of the exact one, so the lesser is too.
                let h2 = found / cells as f64;
                let k2 = self
                    .tails(rho, h2, cells)
                    .iter()
                    .position(|&t| t <= epsilon)
                    .unwrap_or(cells);
                return Ok((k2 as f64 * h2).min(found));
            }
            range *= 4.0;
        }
        Err(invalid(format!(
            "the workload's {epsilon}-quantile is beyond {range:.4e} [work]"
        )))
    }

    /// The ε-quantile of the sojourn of one of `own`'s batches: the stationary workload it
    /// finds (Poisson arrivals see time averages) plus its own work, S ~ `own`'s sizes and
    /// independent of V; `self` is the superposition of every source, `own` included. As
    /// [`CompoundPoisson::workload_quantile`], both parts are rounded up on the grid, so the
    /// result is an upper bound on the exact quantile [work]; divide by `rate` for the delay
    /// of the batch's last bit [s], the per-arrival quantity `martingale` bounds.
    pub fn sojourn_quantile(
        &self,
        own: &CompoundPoisson,
        rate: f64,
        epsilon: f64,
        cells: usize,
    ) -> Result<f64, CalculusError> {
        // validates rate, ε, cells and stability
        let v = self.workload_quantile(rate, epsilon, cells)?;
        let rho = self.load(rate);
        let mut range = (v + own.size_quantile(epsilon)).max(own.mean_size());
        for _ in 0..60 {
            let h = range / cells as f64;
            if let Some(k) = self.sojourn_cell(own, rho, h, cells, epsilon) {
                let found = k as f64 * h;
                let h2 = found / cells as f64;
                let again = self
                    .sojourn_cell(own, rho, h2, cells, epsilon)
                    .map_or(found, |k2| k2 as f64 * h2);
                return Ok(again.min(found));
            }
            range *= 4.0;
        }
        Err(invalid(format!(
            "the sojourn's {epsilon}-quantile is beyond {range:.4e} [work]"
        )))
    }

    /// The least grid cell k with P(V + S > k·h) ≤ ε for the rounded-up V and S.
    fn sojourn_cell(
        &self,
        own: &CompoundPoisson,
        rho: f64,
        h: f64,
        cells: usize,
        epsilon: f64,
    ) -> Option<usize> {
        if h.is_nan() || h <= 0.0 {
            return None;
        }
        let tails = self.tails(rho, h, cells);
        // s_j = P(S rounded up = j·h); the mass beyond the grid is never below any cell
        let mut s = vec![0.0; cells + 1];
        let mut prev = own.size_cdf(0.0);
        s[0] = prev;
        for (j, sj) in s.iter_mut().enumerate().skip(1) {
            let c = own.size_cdf(j as f64 * h);
            *sj = (c - prev).max(0.0);
            prev = c;
        }
        (0..=cells).find(|&k| {
            let below: f64 = (0..=k).map(|j| s[j] * (1.0 - tails[k - j])).sum();
            1.0 - below <= epsilon
        })
    }

    /// P(S ≤ x) for one batch.
    fn size_cdf(&self, x: f64) -> f64 {
        match &self.sizes {
            Sizes::Exponential { mean } => -(-x / mean).exp_m1(),
            Sizes::Atoms(a) => a.iter().filter(|(w, _)| *w <= x).map(|(_, p)| p).sum(),
        }
    }

    /// The least work w with P(S > w) ≤ ε.
    fn size_quantile(&self, epsilon: f64) -> f64 {
        match &self.sizes {
            Sizes::Exponential { mean } => mean * (1.0 / epsilon).ln(),
            Sizes::Atoms(a) => {
                let mut atoms = a.clone();
                atoms.sort_by(|x, y| y.0.total_cmp(&x.0));
                let mut above = 0.0;
                for (w, p) in atoms {
                    above += p;
                    if above > epsilon {
                        return w;
                    }
                }
                0.0
            }
        }
    }

    /// P(V > k·h) for k = 0..cells of the rounded-up V on grid width `h`.
    fn tails(&self, rho: f64, h: f64, cells: usize) -> Vec<f64> {
        let m = self.mean_size();
        // q_j = P((j−1)h < Y ≤ jh), j = 1..cells
        let mut q = vec![0.0; cells + 1];
        let mut prev = 0.0;
        for (j, qj) in q.iter_mut().enumerate().skip(1) {
            let cdf = (self.integrated_tail(j as f64 * h) / m).min(1.0);
            *qj = (cdf - prev).max(0.0);
            prev = cdf;
        }
        let mut g = vec![0.0; cells + 1];
        g[0] = 1.0 - rho;
        for k in 1..=cells {
            let mut s = 0.0;
            for j in 1..=k {
                s += q[j] * g[k - j];
            }
            g[k] = rho * s;
        }
        let mut tails = Vec::with_capacity(cells + 1);
        let mut cum = 0.0;
        for gk in g {
            cum += gk;
            tails.push((1.0 - cum).max(0.0));
        }
        tails
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp(rate: f64, mean: f64) -> CompoundPoisson {
        CompoundPoisson::new(rate, &SizeModel::Exponential { mean }).unwrap()
    }

    #[test]
    fn mm1_quantile_matches_the_closed_form_from_above() {
        // P(V > x) = ρ·e^{−(1−ρ)x/m}
        for rho in [0.1, 0.5, 0.9] {
            let m = 10_000.0;
            let c = 125e6;
            let q = exp(rho * c / m, m);
            for eps in [1e-3, 1e-6] {
                let exact = m * (rho / eps).ln() / (1.0 - rho);
                let got = q.workload_quantile(c, eps, DEFAULT_CELLS).unwrap();
                assert!(got >= exact, "ρ {rho} ε {eps}: {got} < {exact}");
                assert!(got <= exact * 1.03, "ρ {rho} ε {eps}: {got} ≫ {exact}");
            }
        }
    }

    #[test]
    fn an_almost_idle_queue_has_a_zero_quantile() {
        assert_eq!(
            exp(1.0, 1000.0)
                .workload_quantile(1e9, 1e-3, DEFAULT_CELLS)
                .unwrap(),
            0.0
        );
    }

    #[test]
    fn bad_inputs_are_errors_not_infinities() {
        let q = exp(2e4, 10_000.0);
        // load 1.6
        let e = q.workload_quantile(125e6, 1e-3, DEFAULT_CELLS).unwrap_err();
        assert!(e.to_string().contains("load 1.6"), "{e}");
        assert!(q.workload_quantile(f64::NAN, 1e-3, 10).is_err());
        assert!(q.workload_quantile(1e12, 1.0, 10).is_err());
        assert!(q.workload_quantile(1e12, 1e-3, 1).is_err());
        assert!(CompoundPoisson::new(-1.0, &SizeModel::Exponential { mean: 1.0 }).is_err());
        assert!(CompoundPoisson::new(1.0, &SizeModel::Exponential { mean: -1.0 }).is_err());
    }

    #[test]
    fn superposition_adds_rates_and_mixes_sizes() {
        let a = CompoundPoisson::new(
            100.0,
            &SizeModel::Empirical {
                atoms: vec![[1000.0, 1.0]],
            },
        )
        .unwrap();
        let b = CompoundPoisson::new(
            300.0,
            &SizeModel::Empirical {
                atoms: vec![[5000.0, 0.5], [1000.0, 0.5]],
            },
        )
        .unwrap();
        let s = CompoundPoisson::superpose(&[a.clone(), b.clone()]).unwrap();
        // mean work per second adds up
        let per_s = |p: &CompoundPoisson| p.rate_per_s * p.mean_size();
        assert!((per_s(&s) - per_s(&a) - per_s(&b)).abs() < 1e-9 * per_s(&s));
        assert_eq!(s.rate_per_s, 400.0);
        assert!(CompoundPoisson::superpose(&[a, exp(1.0, 2.0)]).is_err());
    }
}
