//! Traffic models of one tenant at one stage: r-b curves, arrival curves and MMPPs.
//!
//! Work is in the stage's unit (bytes on the network, busy-seconds on storage; see
//! [`crate::Stage::work_unit`]). These are data types with evaluation only; building them from
//! traces lives in `tailbound-curves`.
//!
//! * An **r-b curve** (workload-compactor §2.2) lists, for each token-bucket rate r, the least
//!   bucket size b(r) under which the trace is never queued. b is convex, non-increasing and
//!   piecewise linear in r.
//! * An **arrival curve** α(t) = min_r (b(r) + r·t) is its concave dual: the most work the
//!   tenant may send in any window of length t.
//! * An **MMPP** (snc-meister §4.3) is a discrete-time Markov-modulated arrival process: per
//!   time step, state s emits a request with probability `arrival_prob`, whose work is drawn
//!   from the state's size model.

use serde::{Deserialize, Serialize};

/// Relative tolerance used when checking convexity/concavity of curves built from floats.
const SHAPE_TOL: f64 = 1e-9;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CurveError {
    #[error("curve has no vertices")]
    Empty,
    #[error("curve vertex {index} ({x}, {y}) is not finite and non-negative")]
    BadVertex { index: usize, x: f64, y: f64 },
    #[error("curve vertex {index}: x = {x} does not increase (previous {prev}); vertices must be sorted by x")]
    Unsorted { index: usize, x: f64, prev: f64 },
    #[error("curve is not {expected} at vertex {index}")]
    Shape {
        index: usize,
        expected: &'static str,
    },
    #[error("arrival curve must start at t = 0, not {0}")]
    Start(f64),
    #[error("arrival curve tail rate {0} is not finite and non-negative")]
    TailRate(f64),
    #[error("MMPP is invalid: {0}")]
    Mmpp(String),
}

fn check_vertices(v: &[[f64; 2]]) -> Result<(), CurveError> {
    if v.is_empty() {
        return Err(CurveError::Empty);
    }
    for (index, &[x, y]) in v.iter().enumerate() {
        if !(x.is_finite() && y.is_finite() && x >= 0.0 && y >= 0.0) {
            return Err(CurveError::BadVertex { index, x, y });
        }
        if index > 0 && x <= v[index - 1][0] {
            return Err(CurveError::Unsorted {
                index,
                x,
                prev: v[index - 1][0],
            });
        }
    }
    Ok(())
}

fn slope(a: [f64; 2], b: [f64; 2]) -> f64 {
    (b[1] - a[1]) / (b[0] - a[0])
}

fn interpolate(v: &[[f64; 2]], x: f64, tail_slope: f64) -> f64 {
    let i = v.partition_point(|p| p[0] <= x);
    if i == v.len() {
        let [lx, ly] = v[v.len() - 1];
        return ly + tail_slope * (x - lx);
    }
    let (a, b) = (v[i - 1], v[i]);
    a[1] + slope(a, b) * (x - a[0])
}

/// The parameters of a token bucket (workload-compactor §2.2): tokens accrue at `rate` up to
/// `burst`; the work it lets through in any window of length t is at most `burst + rate·t`,
/// so it is also the arrival curve γ(t) = b + r·t. Shapers, rate limits, LP answers and the
/// calculus all speak this one type.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bucket {
    /// token rate [work/s]
    pub rate: f64,
    /// bucket depth [work]
    pub burst: f64,
}

impl Bucket {
    pub fn new(rate: f64, burst: f64) -> Bucket {
        Bucket { rate, burst }
    }

    /// Whether both parameters are finite and non-negative.
    pub fn is_valid(&self) -> bool {
        self.rate.is_finite() && self.rate >= 0.0 && self.burst.is_finite() && self.burst >= 0.0
    }
}

/// An r-b curve: vertices `[rate, burst]` with rate strictly ascending and burst
/// non-increasing, convex in between; for rates above the last vertex the burst stays at the
/// last vertex's value. Rates below the first vertex are not covered by the curve.
///
/// The fields are private so that every curve, including a deserialized one, has passed
/// [`RbCurve::new`]'s checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RbCurveData")]
pub struct RbCurve {
    /// `[rate [work/s], burst [work]]`, rate ascending, at least one
    vertices: Vec<[f64; 2]>,
}

#[derive(Deserialize)]
struct RbCurveData {
    vertices: Vec<[f64; 2]>,
}

impl TryFrom<RbCurveData> for RbCurve {
    type Error = CurveError;
    fn try_from(d: RbCurveData) -> Result<RbCurve, CurveError> {
        RbCurve::new(d.vertices)
    }
}

impl RbCurve {
    pub fn new(vertices: Vec<[f64; 2]>) -> Result<RbCurve, CurveError> {
        check_vertices(&vertices)?;
        for i in 1..vertices.len() {
            if vertices[i][1] > vertices[i - 1][1] * (1.0 + SHAPE_TOL) {
                return Err(CurveError::Shape {
                    index: i,
                    expected: "non-increasing",
                });
            }
            if i >= 2 {
                let (s0, s1) = (
                    slope(vertices[i - 2], vertices[i - 1]),
                    slope(vertices[i - 1], vertices[i]),
                );
                if s1 < s0 - SHAPE_TOL * s0.abs().max(1.0) {
                    return Err(CurveError::Shape {
                        index: i - 1,
                        expected: "convex",
                    });
                }
            }
        }
        Ok(RbCurve { vertices })
    }

    /// `[rate [work/s], burst [work]]`, rate ascending.
    pub fn vertices(&self) -> &[[f64; 2]] {
        &self.vertices
    }

    /// The least bucket size at rate `rate` [work], or `None` below the curve's first rate.
    pub fn burst_at(&self, rate: f64) -> Option<f64> {
        (rate >= self.vertices[0][0]).then(|| interpolate(&self.vertices, rate, 0.0))
    }

    /// The rate above which the burst no longer shrinks: the last vertex.
    pub fn max_rate(&self) -> f64 {
        self.vertices[self.vertices.len() - 1][0]
    }

    /// The dual arrival curve α(t) = min_i (b_i + r_i·t).
    pub fn to_arrival(&self) -> ArrivalCurve {
        let v = &self.vertices;
        let n = v.len();
        let mut out = Vec::with_capacity(n);
        out.push([0.0, v[n - 1][1]]);
        for i in (1..n).rev() {
            // Lines b_i + r_i t and b_{i-1} + r_{i-1} t cross where the tighter one changes.
            let t = (v[i - 1][1] - v[i][1]) / (v[i][0] - v[i - 1][0]);
            let y = v[i][1] + v[i][0] * t;
            if t > out[out.len() - 1][0] {
                out.push([t, y]);
            }
        }
        ArrivalCurve {
            vertices: out,
            tail_rate: v[0][0],
        }
    }
}

/// A concave, non-decreasing piecewise-linear arrival curve: vertices `[t, work]` starting at
/// t = 0, and beyond the last vertex a straight line of slope `tail_rate`.
///
/// The fields are private so that every curve, including a deserialized one, has passed
/// [`ArrivalCurve::new`]'s checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ArrivalCurveData")]
pub struct ArrivalCurve {
    /// `[t [s], work]`, t ascending from 0, at least one
    vertices: Vec<[f64; 2]>,
    /// slope after the last vertex [work/s]; 0 for a curve computed from a whole trace
    tail_rate: f64,
}

#[derive(Deserialize)]
struct ArrivalCurveData {
    vertices: Vec<[f64; 2]>,
    tail_rate: f64,
}

impl TryFrom<ArrivalCurveData> for ArrivalCurve {
    type Error = CurveError;
    fn try_from(d: ArrivalCurveData) -> Result<ArrivalCurve, CurveError> {
        ArrivalCurve::new(d.vertices, d.tail_rate)
    }
}

impl ArrivalCurve {
    pub fn new(vertices: Vec<[f64; 2]>, tail_rate: f64) -> Result<ArrivalCurve, CurveError> {
        check_vertices(&vertices)?;
        if vertices[0][0] != 0.0 {
            return Err(CurveError::Start(vertices[0][0]));
        }
        if !(tail_rate.is_finite() && tail_rate >= 0.0) {
            return Err(CurveError::TailRate(tail_rate));
        }
        let mut prev = f64::INFINITY;
        for i in 1..=vertices.len() {
            let s = if i < vertices.len() {
                slope(vertices[i - 1], vertices[i])
            } else {
                tail_rate
            };
            if s < -SHAPE_TOL * prev.abs().min(1.0) || s > prev + SHAPE_TOL * prev.abs().max(1.0) {
                return Err(CurveError::Shape {
                    index: i - 1,
                    expected: "concave and non-decreasing",
                });
            }
            prev = s;
        }
        Ok(ArrivalCurve {
            vertices,
            tail_rate,
        })
    }

    /// `[t [s], work]`, t ascending from 0.
    pub fn vertices(&self) -> &[[f64; 2]] {
        &self.vertices
    }

    /// Slope after the last vertex [work/s].
    pub fn tail_rate(&self) -> f64 {
        self.tail_rate
    }

    /// α(t) [work] for t ≥ 0.
    pub fn at(&self, t: f64) -> f64 {
        interpolate(&self.vertices, t.max(0.0), self.tail_rate)
    }

    /// The curve restricted to token buckets of rate ≥ `rate` [work/s]: α unchanged while its
    /// slope is at least `rate`, then a straight line of slope `rate` (the tangent of that
    /// slope). An exact curve from a finite trace ends flat at the trace's total work; for a
    /// decision about a stationary tenant only rates at or above its mean make sense (below it
    /// the needed bucket grows with the trace's length), so characterization hands the
    /// calculus `exact.sustained(mean rate)`. Never below `self`; `self` when `rate` is at
    /// most the current tail rate. Non-finite or negative rates leave the curve unchanged.
    pub fn sustained(&self, rate: f64) -> ArrivalCurve {
        if !(rate.is_finite() && rate > self.tail_rate) {
            return self.clone();
        }
        let v = &self.vertices;
        // the first vertex after which the slope falls below `rate`
        let k = (0..v.len())
            .find(|&k| k + 1 == v.len() || slope(v[k], v[k + 1]) < rate)
            .unwrap_or(v.len() - 1);
        ArrivalCurve {
            vertices: v[..=k].to_vec(),
            tail_rate: rate,
        }
    }

    /// The burst α(0) [work].
    pub fn burst(&self) -> f64 {
        self.vertices[0][1]
    }

    /// The token buckets whose minimum is this curve: one `[rate, burst]` per linear piece,
    /// rate ascending. This is the r-b curve at its vertices.
    pub fn to_rb(&self) -> RbCurve {
        let v = &self.vertices;
        let mut out = Vec::with_capacity(v.len());
        let [lx, ly] = v[v.len() - 1];
        out.push([self.tail_rate, ly - self.tail_rate * lx]);
        for i in (1..v.len()).rev() {
            let r = slope(v[i - 1], v[i]);
            let b = v[i - 1][1] - r * v[i - 1][0];
            if r > out[out.len() - 1][0] {
                out.push([r, b]);
            }
        }
        RbCurve { vertices: out }
    }
}

/// The distribution of work per request in one MMPP state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SizeModel {
    /// exponential work with this mean [work] (SNC-Meister's `MGFExponential`)
    Exponential { mean: f64 },
    /// the observed work values: `[work, probability]`, probabilities summing to 1
    Empirical { atoms: Vec<[f64; 2]> },
}

impl SizeModel {
    /// mean work per request [work]
    pub fn mean(&self) -> f64 {
        match self {
            SizeModel::Exponential { mean } => *mean,
            SizeModel::Empirical { atoms } => atoms.iter().map(|[w, p]| w * p).sum(),
        }
    }

    /// E[e^{θW}] for θ ≥ 0, or `None` where it is infinite or overflows (θ ≥ 1/mean for the
    /// exponential model).
    pub fn mgf(&self, theta: f64) -> Option<f64> {
        let m = match self {
            SizeModel::Exponential { mean } => {
                let lambda = 1.0 / mean;
                if theta >= lambda {
                    return None;
                }
                lambda / (lambda - theta)
            }
            SizeModel::Empirical { atoms } => {
                atoms.iter().map(|[w, p]| p * (theta * w).exp()).sum()
            }
        };
        m.is_finite().then_some(m)
    }
}

/// One state of an MMPP.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmppState {
    /// request arrival rate in this state [requests/s]
    pub rate_per_s: f64,
    /// probability that one time step carries an arrival: `rate_per_s · step_s`
    pub arrival_prob: f64,
    pub sizes: SizeModel,
    /// counting intervals of the trace mapped to this state
    pub intervals: u64,
    /// requests observed in those intervals
    pub requests: u64,
    /// work observed in those intervals [work]
    pub work: f64,
}

/// A discrete-time Markov-modulated process (snc-meister §4.3, `sample_config.txt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mmpp {
    /// time step of the chain [s] (SNC-Meister: 10 µs)
    pub step_s: f64,
    /// counting interval the fit used [s] (SNC-Meister: 1 s)
    pub interval_s: f64,
    pub states: Vec<MmppState>,
    /// per-step transition probabilities, `transition[i][j]` = P(i → j); rows sum to 1
    pub transition: Vec<Vec<f64>>,
}

impl Mmpp {
    /// Checks that the chain is a proper MMPP: states present, probabilities in [0, 1], rows
    /// summing to 1, sizes with positive finite means.
    pub fn validate(&self) -> Result<(), CurveError> {
        let bad = |m: String| Err(CurveError::Mmpp(m));
        let n = self.states.len();
        if n == 0 {
            return bad("no states".into());
        }
        if !(self.step_s > 0.0 && self.step_s.is_finite()) {
            return bad(format!("time step {} s is not positive", self.step_s));
        }
        if self.transition.len() != n || self.transition.iter().any(|r| r.len() != n) {
            return bad(format!("transition matrix is not {n}x{n}"));
        }
        for (i, row) in self.transition.iter().enumerate() {
            if row.iter().any(|p| !(0.0..=1.0).contains(p)) {
                return bad(format!("row {i} has a probability outside [0, 1]"));
            }
            let sum: f64 = row.iter().sum();
            if (sum - 1.0).abs() > 1e-9 {
                return bad(format!("row {i} sums to {sum}, not 1"));
            }
        }
        for (i, s) in self.states.iter().enumerate() {
            if !(0.0..=1.0).contains(&s.arrival_prob) {
                return bad(format!(
                    "state {i} arrival probability {} is outside [0, 1]",
                    s.arrival_prob
                ));
            }
            let mean = s.sizes.mean();
            if !(mean.is_finite() && mean > 0.0) {
                return bad(format!("state {i} mean work {mean} is not positive"));
            }
        }
        Ok(())
    }

    /// Long-run fraction of time in each state: the fit's own interval occupancy when the
    /// states record intervals, otherwise the stationary distribution of `transition`, solved
    /// directly (π(P − I) = 0, Σπ = 1; per-step chains mix far too slowly for power iteration).
    pub fn stationary(&self) -> Vec<f64> {
        let n = self.states.len();
        let total: u64 = self.states.iter().map(|s| s.intervals).sum();
        if total > 0 {
            return self
                .states
                .iter()
                .map(|s| s.intervals as f64 / total as f64)
                .collect();
        }
        stationary_distribution(&self.transition).unwrap_or_else(|| vec![1.0 / n as f64; n])
    }

    /// Mean offered load [work/s].
    pub fn mean_work_per_s(&self) -> f64 {
        self.stationary()
            .iter()
            .zip(&self.states)
            .map(|(pi, s)| pi * s.rate_per_s * s.sizes.mean())
            .sum()
    }
}

/// Stationary distribution of a row-stochastic matrix by Gaussian elimination with partial
/// pivoting on (Pᵀ − I) with the last equation replaced by Σπ = 1. `None` when the system is
/// singular (a reducible chain with several closed classes) or the result is not a
/// distribution.
pub fn stationary_distribution(p: &[Vec<f64>]) -> Option<Vec<f64>> {
    let n = p.len();
    if n == 0 {
        return None;
    }
    // a[i][j] = P[j][i] - δ_ij, augmented with the right-hand side
    let mut a: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            let mut row: Vec<f64> = (0..n)
                .map(|j| p[j][i] - if i == j { 1.0 } else { 0.0 })
                .collect();
            row.push(0.0);
            row
        })
        .collect();
    a[n - 1] = vec![1.0; n + 1];
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        for row in 0..n {
            if row != col {
                let f = a[row][col] / a[col][col];
                if f != 0.0 {
                    let pivot_row = a[col].clone();
                    for (x, p) in a[row][col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    let pi: Vec<f64> = (0..n).map(|i| (a[i][n] / a[i][i]).max(0.0)).collect();
    let sum: f64 = pi.iter().sum();
    (sum.is_finite() && sum > 0.0).then(|| pi.iter().map(|x| x / sum).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stationary_distribution_of_a_slow_chain() {
        // per-10 µs chain leaving state 0 at 1e-6 and state 1 at 3e-6 per step
        let p = vec![vec![1.0 - 1e-6, 1e-6], vec![3e-6, 1.0 - 3e-6]];
        let pi = stationary_distribution(&p).unwrap();
        assert!(
            (pi[0] - 0.75).abs() < 1e-9 && (pi[1] - 0.25).abs() < 1e-9,
            "{pi:?}"
        );
        // two closed classes: no unique answer
        assert_eq!(
            stationary_distribution(&[vec![1.0, 0.0], vec![0.0, 1.0]]),
            None
        );
    }

    #[test]
    fn rb_and_arrival_are_duals() {
        let rb = RbCurve::new(vec![[0.0, 100.0], [10.0, 40.0], [50.0, 10.0]]).unwrap();
        let a = rb.to_arrival();
        assert_eq!(a.vertices[0], [0.0, 10.0]);
        assert_eq!(a.tail_rate, 0.0);
        for t in [0.0, 0.3, 0.75, 1.0, 6.0, 10.0] {
            let direct = rb
                .vertices
                .iter()
                .map(|[r, b]| b + r * t)
                .fold(f64::INFINITY, f64::min);
            assert!((a.at(t) - direct).abs() < 1e-9, "t={t}");
        }
        assert_eq!(a.to_rb(), rb);
    }

    #[test]
    fn rejects_non_convex_rb_curve() {
        assert!(RbCurve::new(vec![[0.0, 100.0], [10.0, 90.0], [20.0, 0.0]]).is_err());
        assert!(RbCurve::new(vec![[0.0, 10.0], [1.0, 20.0]]).is_err());
        assert!(RbCurve::new(vec![]).is_err());
        assert!(RbCurve::new(vec![[f64::NAN, 1.0]]).is_err());
    }

    #[test]
    fn rejects_non_concave_arrival_curve() {
        assert!(ArrivalCurve::new(vec![[0.0, 1.0], [1.0, 2.0], [2.0, 5.0]], 0.0).is_err());
        assert!(ArrivalCurve::new(vec![[1.0, 1.0]], 0.0).is_err());
        assert!(ArrivalCurve::new(vec![[0.0, 1.0], [1.0, 5.0], [2.0, 6.0]], 0.5).is_ok());
        assert_eq!(
            ArrivalCurve::new(vec![[0.0, 1.0]], -1.0),
            Err(CurveError::TailRate(-1.0))
        );
    }

    #[test]
    fn sustained_curve_continues_at_the_given_rate() {
        // exact curve of a finite trace: slopes 10, 2, then flat at 14
        let a = ArrivalCurve::new(vec![[0.0, 2.0], [1.0, 12.0], [2.0, 14.0]], 0.0).unwrap();
        let s = a.sustained(5.0);
        assert_eq!(s.vertices(), &[[0.0, 2.0], [1.0, 12.0]]);
        assert_eq!(s.tail_rate(), 5.0);
        for t in [0.0, 0.5, 1.0, 1.5, 2.0, 10.0] {
            assert!(s.at(t) >= a.at(t));
        }
        assert_eq!(s.at(3.0), 22.0);
        assert!(ArrivalCurve::new(s.vertices().to_vec(), s.tail_rate()).is_ok());
        // a rate above every slope keeps only the burst
        assert_eq!(a.sustained(50.0).vertices(), &[[0.0, 2.0]]);
        // at or below the tail rate nothing changes
        assert_eq!(s.sustained(1.0), s);
    }

    #[test]
    fn deserialization_validates_curves() {
        let ok: RbCurve = serde_json::from_str(r#"{"vertices": [[0, 10], [5, 2]]}"#).unwrap();
        assert_eq!(ok.vertices(), &[[0.0, 10.0], [5.0, 2.0]]);
        assert!(serde_json::from_str::<RbCurve>(r#"{"vertices": []}"#).is_err());
        assert!(
            serde_json::from_str::<ArrivalCurve>(r#"{"vertices": [[1, 1]], "tail_rate": 0}"#)
                .is_err()
        );
        let a = ArrivalCurve::new(vec![[0.0, 1.0], [1.0, 2.0]], 0.5).unwrap();
        let back: ArrivalCurve = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn exponential_mgf_is_none_outside_its_domain() {
        let s = SizeModel::Exponential { mean: 2.0 };
        assert_eq!(s.mgf(0.0), Some(1.0));
        assert!((s.mgf(0.25).unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(s.mgf(0.5), None);
        let e = SizeModel::Empirical {
            atoms: vec![[1.0, 0.5], [3.0, 0.5]],
        };
        assert_eq!(e.mean(), 2.0);
        assert_eq!(e.mgf(1e6), None);
    }
}
