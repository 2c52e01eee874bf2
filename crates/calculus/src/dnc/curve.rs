//! DNC curves and their operators, exact on piecewise-linear curves in continuous time.
//!
//! Time is in seconds; work is in the unit of the queue's stage (bytes, busy-seconds), rates in
//! work per second. Definitions follow Le Boudec & Thiran, *Network Calculus* (2001), ch. 1 and
//! 3; `shared/DESIGN.md` §Calculus lists the closed forms this module reduces to.
//!
//! * [`Envelope`] α: concave, non-decreasing, piecewise linear on t ≥ 0, α(0) = its burst (the
//!   right limit; the usual α(0) = 0 convention changes no bound below). A token bucket (r, b)
//!   is α(t) = b + r·t. Its dual is the r-b function b(r) = sup_t [α(t) − r·t]
//!   ([`Envelope::burst_at_rate`]), and α(t) = min_r [b(r) + r·t].
//! * [`ServiceCurve`] β: convex, non-decreasing, piecewise linear, 0 on [0, T] (T its latency), then
//!   pieces of strictly increasing positive rates, the last one unbounded. A rate-latency curve
//!   R·(t − T)⁺ is the special case with one piece. A constant-rate queue has the *strict*
//!   service curve R·t.
//!
//! Operators (α, α_i arrivals; β, β_i services):
//! * aggregate α_1 + α_2 ([`Envelope::plus`]): pointwise sum, exact (breakpoints merged);
//! * convolution β_1 ⊗ β_2 ([`ServiceCurve::convolve`]): for convex curves, the pieces of both sorted
//!   by rate (latencies add, the result's last rate is the smaller last rate); exact;
//! * output bound α ⊘ β ([`output`]): sup_{u ≥ 0} [α(t + u) − β(u)], computed exactly in the
//!   r-b domain: (α ⊘ β)(t) = min_r [b(r) + β*(r) + r·t] with β*(r) = sup_u [r·u − β(u)] the
//!   convex conjugate (minimax over a compact rate interval, so equality holds). For a token
//!   bucket through a rate-latency curve this is b + r·T + r·t;
//! * static-priority leftover ([`ServiceCurve::leftover`]): β_L(t) = [β(t) − α_H(t)]⁺, valid when β
//!   is a strict service curve (a constant-rate queue is); for convex β and concave α_H this is
//!   already convex and non-decreasing. For rate-latency (R, T) and token buckets (r_i, b_i):
//!   R' = R − Σr_i, T' = T + (Σb_i + Σr_i·T)/R';
//! * delay bound h(α, β) = sup_t inf{d ≥ 0 : α(t) ≤ β(t + d)} ([`delay_bound`]), the horizontal
//!   deviation; backlog bound v(α, β) = sup_t [α(t) − β(t)] ([`backlog_bound`]);
//! * shaper delay ([`shaper_delay`]): the horizontal deviation between α and the token-bucket
//!   line b + r·t, i.e. (b_α(r) − b)⁺ / r: the time a request waits in a (r, b) rate limiter.
//!
//! Instability is an error, never infinity: a leftover with no positive rate or an arrival whose
//! long-term rate exceeds the service's ultimate rate is [`DncError::Unstable`]. A delay bound
//! with long-term rate *equal* to the service rate is finite and returned.

use serde::{Deserialize, Serialize};
use tailbound_model::{ArrivalCurve, Bucket, CurveError};

/// Errors of the DNC algebra.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DncError {
    /// long-term load exceeds (or, for a leftover, reaches) the rate that serves it
    #[error("unstable: load {load} work/s against capacity {capacity} work/s; lower the rates sharing this queue or raise its capacity")]
    Unstable {
        /// long-term rate of the traffic [work/s]
        load: f64,
        /// rate offered to it [work/s]
        capacity: f64,
    },
    /// a curve or parameter that is not finite, not ordered or out of range
    #[error("{0}")]
    Invalid(String),
}

/// A token bucket's parameters must be finite and non-negative to be a curve.
fn check_bucket(b: &Bucket) -> Result<(), DncError> {
    if b.is_valid() {
        Ok(())
    } else {
        Err(DncError::Invalid(format!(
            "token bucket rate {} burst {} must be finite and >= 0",
            b.rate, b.burst
        )))
    }
}

/// A rate-latency service curve R·(t − T)⁺.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateLatency {
    /// rate R [work/s]
    pub rate: f64,
    /// latency T [s]
    pub latency_s: f64,
}

/// One finite piece of a [`ServiceCurve`] curve after its latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServicePiece {
    /// slope [work/s]
    pub rate: f64,
    /// length [s]
    pub duration_s: f64,
}

/// Start time of interval `i` of a curve whose interval boundaries are `start` then `breaks`.
fn interval_start(start: f64, breaks: &[f64], i: usize) -> f64 {
    if i == 0 {
        start
    } else {
        breaks[i - 1]
    }
}

/// A concave, non-decreasing piecewise-linear arrival curve (see the module docs).
///
/// Fields are private: every curve is concave by construction (rates non-increasing).
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// α(0) [work]
    burst: f64,
    /// breakpoints t_1 < … < t_m, all > 0 [s]
    breaks: Vec<f64>,
    /// rate on [t_i, t_{i+1}) with t_0 = 0, the last one unbounded; non-increasing, ≥ 0 [work/s]
    rates: Vec<f64>,
    /// α(t_i) for t_0 = 0, t_1, …, t_m [work]
    values: Vec<f64>,
}

impl Envelope {
    /// Builds a curve from its burst, breakpoints and rates, dropping empty intervals and
    /// merging equal rates. The caller guarantees finiteness and `rates.len() == breaks.len() + 1`.
    /// Rates are made non-increasing by raising earlier rates (the curve only grows: still an
    /// upper bound), which repairs float noise.
    fn build(burst: f64, breaks: &[f64], rates: &[f64]) -> Envelope {
        let mut fixed: Vec<f64> = rates.iter().map(|r| r.max(0.0)).collect();
        for i in (0..fixed.len().saturating_sub(1)).rev() {
            if fixed[i] < fixed[i + 1] {
                fixed[i] = fixed[i + 1];
            }
        }
        let (out_breaks, out_rates) = merge_breaks(breaks, &fixed, 0.0);
        let mut values = Vec::with_capacity(out_rates.len());
        values.push(burst);
        for i in 0..out_breaks.len() {
            let t0 = interval_start(0.0, &out_breaks, i);
            values.push(values[i] + out_rates[i] * (out_breaks[i] - t0));
        }
        Envelope {
            burst,
            breaks: out_breaks,
            rates: out_rates,
            values,
        }
    }

    /// The token bucket b + r·t.
    pub fn token_bucket(bucket: Bucket) -> Result<Envelope, DncError> {
        check_bucket(&bucket)?;
        Ok(Envelope::build(bucket.burst, &[], &[bucket.rate]))
    }

    /// No traffic: α = 0.
    pub fn zero() -> Envelope {
        Envelope::build(0.0, &[], &[0.0])
    }

    /// The minimum of token buckets, min_i (b_i + r_i·t), for t ≥ 0 (the lower envelope of
    /// their lines). At least one bucket.
    pub fn from_buckets(buckets: &[Bucket]) -> Result<Envelope, DncError> {
        for b in buckets {
            check_bucket(b)?;
        }
        let mut lines: Vec<Bucket> = buckets.to_vec();
        // rate descending, burst ascending
        lines.sort_by(|x, y| y.rate.total_cmp(&x.rate).then(x.burst.total_cmp(&y.burst)));
        // the line lowest at t = 0 (ties: the smallest rate) starts the envelope; lines of
        // higher rate lie above it for all t ≥ 0
        let Some(start) = lines
            .iter()
            .enumerate()
            .min_by(|(_, x), (_, y)| x.burst.total_cmp(&y.burst).then(x.rate.total_cmp(&y.rate)))
        else {
            return Err(DncError::Invalid(
                "an arrival curve needs at least one token bucket".into(),
            ));
        };
        let start = start.0;
        let mut stack: Vec<Bucket> = Vec::new();
        let mut xs: Vec<f64> = Vec::new(); // xs[i] = where stack[i+1] takes over from stack[i]
        for &line in &lines[start..] {
            if let Some(top) = stack.last() {
                if line.rate >= top.rate {
                    continue; // same rate, larger burst: never lower
                }
            }
            while let Some(&top) = stack.last() {
                let x = (line.burst - top.burst) / (top.rate - line.rate);
                let prev_x = xs.last().copied().unwrap_or(0.0);
                if stack.len() >= 2 && x <= prev_x {
                    stack.pop();
                    xs.pop();
                    continue;
                }
                xs.push(x.max(prev_x));
                break;
            }
            stack.push(line);
        }
        let rates: Vec<f64> = stack.iter().map(|l| l.rate).collect();
        Ok(Envelope::build(stack[0].burst, &xs, &rates))
    }

    /// α(0) [work].
    pub fn burst(&self) -> f64 {
        self.burst
    }

    /// The slope beyond the last breakpoint [work/s].
    pub fn long_term_rate(&self) -> f64 {
        self.rates[self.rates.len() - 1]
    }

    /// Vertices `[t [s], work]` from t = 0; beyond the last one the slope is
    /// [`Envelope::long_term_rate`].
    pub fn vertices(&self) -> Vec<[f64; 2]> {
        std::iter::once(0.0)
            .chain(self.breaks.iter().copied())
            .zip(self.values.iter().copied())
            .map(|(t, y)| [t, y])
            .collect()
    }

    /// One token bucket per linear piece; their minimum is this curve.
    pub fn buckets(&self) -> Vec<Bucket> {
        (0..self.rates.len())
            .map(|i| {
                let t = interval_start(0.0, &self.breaks, i);
                Bucket {
                    rate: self.rates[i],
                    burst: (self.values[i] - self.rates[i] * t).max(0.0),
                }
            })
            .collect()
    }

    /// Index of the interval containing t ≥ 0.
    fn interval(&self, t: f64) -> usize {
        self.breaks.partition_point(|&b| b <= t)
    }

    /// α(t) [work], t ≥ 0 (negative t is read as 0).
    pub fn at(&self, t: f64) -> f64 {
        let t = t.max(0.0);
        let i = self.interval(t);
        self.values[i] + self.rates[i] * (t - interval_start(0.0, &self.breaks, i))
    }

    /// The r-b function b(r) = sup_t [α(t) − r·t] [work]: the least bucket of rate r [work/s]
    /// that the curve conforms to. `None` when r is below the long-term rate.
    pub fn burst_at_rate(&self, rate: f64) -> Option<f64> {
        if rate < self.long_term_rate() {
            return None;
        }
        // the sup is at the start of the first interval whose slope is ≤ r
        let i = self.rates.partition_point(|&x| x > rate);
        let t = interval_start(0.0, &self.breaks, i);
        Some(self.values[i] - rate * t)
    }

    /// Least t with α(t) ≥ y, or `None` if α never reaches y.
    fn inverse(&self, y: f64) -> Option<f64> {
        if y <= self.burst {
            return Some(0.0);
        }
        // values[i] < y ≤ values[i+1], or the last interval
        let i = self.values.partition_point(|&v| v < y) - 1;
        let r = self.rates[i];
        if r <= 0.0 {
            return None;
        }
        Some(interval_start(0.0, &self.breaks, i) + (y - self.values[i]) / r)
    }

    /// The aggregate α + other (exact).
    pub fn plus(&self, other: &Envelope) -> Envelope {
        let mut breaks: Vec<f64> = self.breaks.iter().chain(&other.breaks).copied().collect();
        breaks.sort_by(f64::total_cmp);
        breaks.dedup();
        let mut rates = Vec::with_capacity(breaks.len() + 1);
        for i in 0..=breaks.len() {
            let t = interval_start(0.0, &breaks, i);
            rates.push(self.rates[self.interval(t)] + other.rates[other.interval(t)]);
        }
        Envelope::build(self.burst + other.burst, &breaks, &rates)
    }

    /// The aggregate of several curves; [`Envelope::zero`] when there are none.
    pub fn sum<'a>(curves: impl IntoIterator<Item = &'a Envelope>) -> Envelope {
        curves
            .into_iter()
            .fold(Envelope::zero(), |acc, a| acc.plus(a))
    }

    /// Whether the curve is identically 0.
    fn is_zero(&self) -> bool {
        self.burst == 0.0 && self.rates[0] == 0.0
    }

    /// The curve as a model [`ArrivalCurve`]. Vertices a hair apart (where lines of an
    /// envelope cross almost at one point) make slopes recomputed from vertices noisy, so the
    /// vertices are reduced to their upper concave hull under the model's own slope formula:
    /// the result is concave as the model checks it, and never below this curve.
    pub fn to_model(&self) -> Result<ArrivalCurve, CurveError> {
        let slope = |a: [f64; 2], b: [f64; 2]| (b[1] - a[1]) / (b[0] - a[0]);
        let tail = self.long_term_rate();
        let mut hull: Vec<[f64; 2]> = Vec::with_capacity(self.values.len());
        for p in self.vertices() {
            while hull.len() >= 2
                && slope(hull[hull.len() - 2], hull[hull.len() - 1])
                    <= slope(hull[hull.len() - 1], p)
            {
                hull.pop();
            }
            hull.push(p);
        }
        // the tail continues from the last vertex: drop vertices reached at a lower slope
        while hull.len() >= 2 && slope(hull[hull.len() - 2], hull[hull.len() - 1]) < tail {
            hull.pop();
        }
        ArrivalCurve::new(hull, tail)
    }
}

impl From<&ArrivalCurve> for Envelope {
    /// Exact conversion; slopes violating concavity by float noise (within the model's
    /// tolerance) are raised to the next slope, so the curve stays an upper bound.
    fn from(a: &ArrivalCurve) -> Envelope {
        let v = a.vertices();
        let breaks: Vec<f64> = v[1..].iter().map(|p| p[0]).collect();
        let mut rates: Vec<f64> = v
            .windows(2)
            .map(|w| (w[1][1] - w[0][1]) / (w[1][0] - w[0][0]))
            .collect();
        rates.push(a.tail_rate());
        Envelope::build(v[0][1], &breaks, &rates)
    }
}

/// A convex, non-decreasing piecewise-linear service curve, 0 up to its latency (see the
/// module docs).
///
/// Fields are private: every curve is convex by construction (rates increasing, positive).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceCurve {
    /// latency T [s]
    latency_s: f64,
    /// breakpoints after the latency, T < u_1 < … < u_m [s]
    breaks: Vec<f64>,
    /// rate on [u_i, u_{i+1}) with u_0 = T, the last one unbounded; strictly increasing, > 0
    /// [work/s]
    rates: Vec<f64>,
    /// β(u_i) for u_0 = T, u_1, …, u_m [work]
    values: Vec<f64>,
}

impl ServiceCurve {
    /// Builds from latency, breakpoints and rates (`rates.len() == breaks.len() + 1`, rates > 0),
    /// dropping empty intervals and merging equal rates; rates are made non-decreasing by
    /// lowering earlier ones (the curve only shrinks: still a lower bound).
    fn build(latency_s: f64, breaks: &[f64], rates: &[f64]) -> ServiceCurve {
        let mut fixed = rates.to_vec();
        for i in (0..fixed.len().saturating_sub(1)).rev() {
            if fixed[i] > fixed[i + 1] {
                fixed[i] = fixed[i + 1];
            }
        }
        let (out_breaks, out_rates) = merge_breaks(breaks, &fixed, latency_s);
        let mut values = Vec::with_capacity(out_rates.len());
        values.push(0.0);
        for i in 0..out_breaks.len() {
            let u0 = interval_start(latency_s, &out_breaks, i);
            values.push(values[i] + out_rates[i] * (out_breaks[i] - u0));
        }
        ServiceCurve {
            latency_s,
            breaks: out_breaks,
            rates: out_rates,
            values,
        }
    }

    /// The rate-latency curve R·(t − T)⁺; R finite > 0, T finite ≥ 0.
    pub fn rate_latency(rate: f64, latency_s: f64) -> Result<ServiceCurve, DncError> {
        if !(rate.is_finite() && rate > 0.0 && latency_s.is_finite() && latency_s >= 0.0) {
            return Err(DncError::Invalid(format!(
                "rate-latency curve needs a finite rate > 0 and latency >= 0, not rate {rate} latency {latency_s} s"
            )));
        }
        Ok(ServiceCurve::build(latency_s, &[], &[rate]))
    }

    /// A constant-rate server R·t (a strict service curve).
    pub fn constant_rate(rate: f64) -> Result<ServiceCurve, DncError> {
        ServiceCurve::rate_latency(rate, 0.0)
    }

    /// A general convex curve: 0 up to `latency_s`, then `pieces` (rates strictly increasing),
    /// then `tail_rate` forever (greater than every piece's rate).
    pub fn new(
        latency_s: f64,
        pieces: &[ServicePiece],
        tail_rate: f64,
    ) -> Result<ServiceCurve, DncError> {
        let bad = |m: String| Err(DncError::Invalid(m));
        if !(latency_s.is_finite() && latency_s >= 0.0) {
            return bad(format!("latency {latency_s} s must be finite and >= 0"));
        }
        let mut breaks = Vec::with_capacity(pieces.len());
        let mut rates = Vec::with_capacity(pieces.len() + 1);
        let mut t = latency_s;
        for (i, p) in pieces.iter().enumerate() {
            if !(p.rate.is_finite() && p.rate > 0.0 && p.duration_s.is_finite())
                || p.duration_s <= 0.0
            {
                return bad(format!(
                    "service piece {i} (rate {}, duration {} s) needs a finite rate > 0 and duration > 0",
                    p.rate, p.duration_s
                ));
            }
            if rates.last().is_some_and(|&r| p.rate <= r) {
                return bad(format!(
                    "service piece {i} rate {} does not increase; a service curve is convex",
                    p.rate
                ));
            }
            rates.push(p.rate);
            t += p.duration_s;
            breaks.push(t);
        }
        if !(tail_rate.is_finite() && rates.last().map_or(tail_rate > 0.0, |&r| tail_rate > r)) {
            return bad(format!(
                "service tail rate {tail_rate} must be finite and above every piece's rate"
            ));
        }
        rates.push(tail_rate);
        Ok(ServiceCurve::build(latency_s, &breaks, &rates))
    }

    /// Latency T [s].
    pub fn latency_s(&self) -> f64 {
        self.latency_s
    }

    /// The ultimate rate (slope of the last, unbounded piece) [work/s].
    pub fn rate(&self) -> f64 {
        self.rates[self.rates.len() - 1]
    }

    /// `Some` when the curve is rate-latency (one piece).
    pub fn as_rate_latency(&self) -> Option<RateLatency> {
        (self.rates.len() == 1).then(|| RateLatency {
            rate: self.rates[0],
            latency_s: self.latency_s,
        })
    }

    /// Vertices `[t [s], work]`: `[0, 0]`, `[T, 0]` (when T > 0), then the breakpoints; beyond
    /// the last the slope is [`ServiceCurve::rate`].
    pub fn vertices(&self) -> Vec<[f64; 2]> {
        let mut v = vec![[0.0, 0.0]];
        if self.latency_s > 0.0 {
            v.push([self.latency_s, 0.0]);
        }
        v.extend(
            self.breaks
                .iter()
                .zip(&self.values[1..])
                .map(|(&t, &y)| [t, y]),
        );
        v
    }

    /// The finite pieces after the latency (the last, unbounded rate is [`ServiceCurve::rate`]).
    pub fn pieces(&self) -> Vec<ServicePiece> {
        (0..self.breaks.len())
            .map(|i| ServicePiece {
                rate: self.rates[i],
                duration_s: self.breaks[i] - interval_start(self.latency_s, &self.breaks, i),
            })
            .collect()
    }

    fn interval(&self, t: f64) -> usize {
        self.breaks.partition_point(|&b| b <= t)
    }

    /// β(t) [work].
    pub fn at(&self, t: f64) -> f64 {
        if t <= self.latency_s {
            return 0.0;
        }
        let i = self.interval(t);
        self.values[i] + self.rates[i] * (t - interval_start(self.latency_s, &self.breaks, i))
    }

    /// Slope of β on the interval starting at t (0 inside the latency).
    fn rate_at(&self, t: f64) -> f64 {
        if t < self.latency_s {
            0.0
        } else {
            self.rates[self.interval(t)]
        }
    }

    /// sup{u : β(u) ≤ y} for y ≥ 0 (T for y = 0).
    fn inverse(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return self.latency_s;
        }
        let i = self.values.partition_point(|&v| v < y) - 1;
        interval_start(self.latency_s, &self.breaks, i) + (y - self.values[i]) / self.rates[i]
    }

    /// The convex conjugate β*(r) = sup_{u ≥ 0} [r·u − β(u)] for 0 ≤ r ≤ the ultimate rate.
    fn conjugate(&self, rate: f64) -> f64 {
        if rate <= 0.0 {
            return 0.0;
        }
        // the sup is at the start of the first interval whose slope is ≥ r
        let j = self
            .rates
            .partition_point(|&x| x < rate)
            .min(self.rates.len() - 1);
        let u = interval_start(self.latency_s, &self.breaks, j);
        rate * u - self.values[j]
    }

    /// The min-plus convolution β ⊗ other (exact for convex curves): latencies add, the
    /// pieces of both are sorted by rate, and the result's ultimate rate is the smaller one.
    pub fn convolve(&self, other: &ServiceCurve) -> ServiceCurve {
        let tail = self.rate().min(other.rate());
        let mut pieces: Vec<ServicePiece> = self
            .pieces()
            .into_iter()
            .chain(other.pieces())
            .filter(|p| p.rate < tail)
            .collect();
        pieces.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let latency_s = self.latency_s + other.latency_s;
        let mut breaks = Vec::with_capacity(pieces.len());
        let mut rates = Vec::with_capacity(pieces.len() + 1);
        let mut t = latency_s;
        for p in &pieces {
            t += p.duration_s;
            breaks.push(t);
            rates.push(p.rate);
        }
        rates.push(tail);
        ServiceCurve::build(latency_s, &breaks, &rates)
    }

    /// The convolution of a non-empty sequence of curves.
    pub fn convolve_all<'a>(
        services: impl IntoIterator<Item = &'a ServiceCurve>,
    ) -> Result<ServiceCurve, DncError> {
        let mut it = services.into_iter();
        let Some(first) = it.next() else {
            return Err(DncError::Invalid("convolution of no service curves".into()));
        };
        Ok(it.fold(first.clone(), |acc, s| acc.convolve(s)))
    }

    /// The leftover service under static priority (or blind multiplexing) when `cross` has
    /// precedence: [β(t) − α(t)]⁺, exact. `self` must be a strict service curve (a constant-rate
    /// queue is). [`DncError::Unstable`] when the cross traffic's long-term rate reaches β's
    /// ultimate rate (nothing would be left).
    pub fn leftover(&self, cross: &Envelope) -> Result<ServiceCurve, DncError> {
        let load = cross.long_term_rate();
        if load >= self.rate() {
            return Err(DncError::Unstable {
                load,
                capacity: self.rate(),
            });
        }
        // h = β − α is convex: ≤ 0 on [0, t0], then positive with non-decreasing slopes
        let mut xs: Vec<f64> = std::iter::once(0.0)
            .chain(std::iter::once(self.latency_s))
            .chain(self.breaks.iter().copied())
            .chain(cross.breaks.iter().copied())
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        let h = |t: f64| self.at(t) - cross.at(t);
        let slope = |t: f64| self.rate_at(t) - cross.rates[cross.interval(t)];
        // last point where h ≤ 0; the crossing lies in the interval starting there
        let k = xs.partition_point(|&x| h(x) <= 0.0).saturating_sub(1);
        let (xk, s) = (xs[k], slope(xs[k]));
        let t0 = match xs.get(k + 1) {
            // float noise made the crossing interval look flat: start at its end
            Some(&next) if s <= 0.0 => next,
            Some(&next) => (xk + (-h(xk)).max(0.0) / s).min(next),
            // the last interval has the tail slope, > 0 by the stability check
            None => xk + (-h(xk)).max(0.0) / s,
        };
        let breaks: Vec<f64> = xs[k + 1..].to_vec();
        let rates: Vec<f64> = std::iter::once(s)
            .chain(breaks.iter().map(|&x| slope(x)))
            .collect();
        Ok(ServiceCurve::build(t0, &breaks, &rates))
    }
}

/// The output arrival curve α ⊘ β of traffic α leaving a server offering β (exact, see the
/// module docs). [`DncError::Unstable`] when α's long-term rate exceeds β's ultimate rate.
pub fn output(arrival: &Envelope, service: &ServiceCurve) -> Result<Envelope, DncError> {
    let (lo, hi) = (arrival.long_term_rate(), service.rate());
    if lo > hi {
        return Err(DncError::Unstable {
            load: lo,
            capacity: hi,
        });
    }
    // φ(r) = b(r) + β*(r) is convex piecewise linear on [lo, hi], with breakpoints at the
    // rates of both curves; min_r [φ(r) + r·t] is attained at one of them or an end.
    let mut lines = Vec::new();
    for r in arrival
        .rates
        .iter()
        .chain(&service.rates)
        .copied()
        .chain([0.0, lo, hi])
    {
        if r < lo || r > hi {
            continue;
        }
        if let Some(b) = arrival.burst_at_rate(r) {
            lines.push(Bucket {
                rate: r,
                burst: (b + service.conjugate(r)).max(0.0),
            });
        }
    }
    Envelope::from_buckets(&lines)
}

/// The delay bound h(α, β) [s]: the horizontal deviation, the worst delay of a bit of traffic
/// constrained by α through a server offering β (FIFO for that traffic).
/// [`DncError::Unstable`] when α's long-term rate exceeds β's ultimate rate.
pub fn delay_bound(arrival: &Envelope, service: &ServiceCurve) -> Result<f64, DncError> {
    let (load, capacity) = (arrival.long_term_rate(), service.rate());
    if load > capacity {
        return Err(DncError::Unstable { load, capacity });
    }
    if arrival.is_zero() {
        return Ok(0.0);
    }
    // d(t) = β⁻¹(α(t)) − t is concave: its max is at a breakpoint of α or where α reaches a
    // breakpoint value of β.
    let d = |t: f64| service.inverse(arrival.at(t)) - t;
    let mut best = d(0.0);
    for &t in &arrival.breaks {
        best = best.max(d(t));
    }
    for &y in &service.values {
        if let Some(t) = arrival.inverse(y) {
            best = best.max(d(t));
        }
    }
    Ok(best.max(0.0))
}

/// The backlog bound v(α, β) = sup_t [α(t) − β(t)] [work].
/// [`DncError::Unstable`] when α's long-term rate exceeds β's ultimate rate.
pub fn backlog_bound(arrival: &Envelope, service: &ServiceCurve) -> Result<f64, DncError> {
    let (load, capacity) = (arrival.long_term_rate(), service.rate());
    if load > capacity {
        return Err(DncError::Unstable { load, capacity });
    }
    let v = |t: f64| arrival.at(t) - service.at(t);
    Ok(std::iter::once(0.0)
        .chain(std::iter::once(service.latency_s))
        .chain(arrival.breaks.iter().copied())
        .chain(service.breaks.iter().copied())
        .map(v)
        .fold(0.0, f64::max))
}

/// The shaper delay [s] of traffic α through a token-bucket rate limiter (r, b): the
/// horizontal deviation between α and the line b + r·t, (b_α(r) − b)⁺ / r (DESIGN.md
/// §Calculus: add it to the network bound when the tenant is rate limited).
/// [`DncError::Unstable`] when r is below α's long-term rate (or r = 0 and α exceeds b).
pub fn shaper_delay(arrival: &Envelope, bucket: Bucket) -> Result<f64, DncError> {
    check_bucket(&bucket)?;
    let unstable = || DncError::Unstable {
        load: arrival.long_term_rate(),
        capacity: bucket.rate,
    };
    let need = arrival.burst_at_rate(bucket.rate).ok_or_else(unstable)?;
    let excess = need - bucket.burst;
    if excess <= 0.0 {
        return Ok(0.0);
    }
    if bucket.rate <= 0.0 {
        return Err(unstable());
    }
    Ok(excess / bucket.rate)
}

/// Piecewise rates `rates[0]` up to `breaks[0]`, `rates[1]` up to `breaks[1]`, ... (one more
/// rate than breaks), from time `from_t` on: drops empty intervals (a break at or before the
/// previous one, or before `from_t`: the later rate takes over) and merges equal neighbours.
fn merge_breaks(breaks: &[f64], rates: &[f64], from_t: f64) -> (Vec<f64>, Vec<f64>) {
    let mut out_breaks: Vec<f64> = Vec::with_capacity(breaks.len());
    let mut out_rates: Vec<f64> = Vec::with_capacity(rates.len());
    out_rates.push(rates[0]);
    let mut last_t = from_t;
    for (i, &t) in breaks.iter().enumerate() {
        let next_rate = rates[i + 1];
        if t <= last_t {
            // empty interval: the next rate takes over from here on
            if let Some(r) = out_rates.last_mut() {
                *r = next_rate;
            }
            continue;
        }
        if out_rates.last() == Some(&next_rate) {
            continue;
        }
        out_breaks.push(t);
        out_rates.push(next_rate);
        last_t = t;
    }
    (out_breaks, out_rates)
}

/// Operators for analyses of general server graphs (total and separated flow analysis in
/// `tailbound-graph`): delayed traffic, the minimum of two arrival curves, service curves given
/// as a maximum of rate-latency curves, and the FIFO leftover.
impl Envelope {
    /// α ⊘ δ_d, i.e. t ↦ α(t + d): an arrival curve of traffic α after a system that delays
    /// every bit by at most `delay_s` (Le Boudec & Thiran, *Network Calculus*, Thm 1.4.3 with
    /// the pure-delay service curve δ_d).
    pub fn delayed(&self, delay_s: f64) -> Result<Envelope, DncError> {
        if !(delay_s.is_finite() && delay_s >= 0.0) {
            return Err(DncError::Invalid(format!(
                "delay {delay_s} s must be finite and >= 0"
            )));
        }
        let i = self.interval(delay_s);
        let breaks: Vec<f64> = self.breaks[i..].iter().map(|b| b - delay_s).collect();
        Ok(Envelope::build(self.at(delay_s), &breaks, &self.rates[i..]))
    }

    /// min(α, other): both are minima of their token buckets, so this is the minimum of all
    /// of them (still concave).
    pub fn min(&self, other: &Envelope) -> Result<Envelope, DncError> {
        let lines: Vec<Bucket> = self.buckets().into_iter().chain(other.buckets()).collect();
        Envelope::from_buckets(&lines)
    }

    /// α − α(0): the curve without its burst (0 at t = 0).
    fn without_burst(&self) -> Envelope {
        Envelope::build(0.0, &self.breaks, &self.rates)
    }
}

impl ServiceCurve {
    /// The maximum of rate-latency curves, max_i R_i·(t − T_i)⁺ (convex, as a maximum of
    /// convex curves): Saihu's and Panco's multi-segment service curve. At least one curve.
    pub fn max_of(curves: &[RateLatency]) -> Result<ServiceCurve, DncError> {
        for c in curves {
            ServiceCurve::rate_latency(c.rate, c.latency_s)?;
        }
        // the curve leaves 0 on the line of least latency (ties: the fastest)
        let Some(mut cur) = curves.iter().copied().min_by(|a, b| {
            a.latency_s
                .total_cmp(&b.latency_s)
                .then(b.rate.total_cmp(&a.rate))
        }) else {
            return Err(DncError::Invalid(
                "a service curve needs at least one rate-latency curve".into(),
            ));
        };
        let latency_s = cur.latency_s;
        let (mut breaks, mut rates) = (Vec::new(), Vec::new());
        let mut t = latency_s;
        // then, at each step, the faster line that overtakes the current one first
        loop {
            let next = curves
                .iter()
                .filter(|c| c.rate > cur.rate)
                .map(|c| {
                    let x = (c.rate * c.latency_s - cur.rate * cur.latency_s) / (c.rate - cur.rate);
                    (x.max(t), *c)
                })
                .min_by(|(x, a), (y, b)| x.total_cmp(y).then(b.rate.total_cmp(&a.rate)));
            let Some((x, line)) = next else { break };
            breaks.push(x);
            rates.push(cur.rate);
            cur = line;
            t = x;
        }
        rates.push(cur.rate);
        Ok(ServiceCurve::build(latency_s, &breaks, &rates))
    }

    /// The leftover service of a flow at a FIFO server offering β when the other flows through
    /// it are constrained by `cross`: β_θ(t) = [β(t) − α(t − θ)]⁺·1{t > θ}, a service curve for
    /// every θ ≥ 0 (Le Boudec & Thiran, *Network Calculus*, Prop. 6.2.1), taken at
    /// θ = β⁻¹(α(0)), where it starts continuously; for a rate-latency β and a token bucket α
    /// it is (R − r)·(t − T − b/R)⁺ (ibid., Cor. 6.2.3). Exact on the piecewise-linear curves.
    /// [`DncError::Unstable`] when the cross traffic's long-term rate reaches β's ultimate rate.
    pub fn fifo_leftover(&self, cross: &Envelope) -> Result<ServiceCurve, DncError> {
        let load = cross.long_term_rate();
        if load >= self.rate() {
            return Err(DncError::Unstable {
                load,
                capacity: self.rate(),
            });
        }
        if cross.is_zero() {
            return Ok(self.clone());
        }
        let theta = self.inverse(cross.burst());
        // β(θ + u) − β(θ): what β serves after θ
        let i = self.interval(theta);
        let breaks: Vec<f64> = self.breaks[i..].iter().map(|b| b - theta).collect();
        let after = ServiceCurve::build(0.0, &breaks, &self.rates[i..]);
        let rest = after.leftover(&cross.without_burst())?;
        let breaks: Vec<f64> = rest.breaks.iter().map(|b| b + theta).collect();
        Ok(ServiceCurve::build(
            rest.latency_s + theta,
            &breaks,
            &rest.rates,
        ))
    }
}

#[cfg(test)]
mod graph_ops_tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn delayed_token_bucket_gains_rate_times_delay() {
        let a = Envelope::from_buckets(&[Bucket::new(2.0, 10.0), Bucket::new(1.0, 20.0)]).unwrap();
        let d = a.delayed(4.0).unwrap();
        // α(4) = min(18, 24) = 18; the knee at t = 10 moves to 6
        assert!(close(d.burst(), 18.0));
        assert!(close(d.at(6.0), a.at(10.0)));
        assert!(close(d.at(20.0), a.at(24.0)));
        assert!(a.delayed(f64::NAN).is_err());
    }

    #[test]
    fn min_of_two_buckets_is_their_lower_envelope() {
        let a = Envelope::token_bucket(Bucket::new(2.0, 10.0)).unwrap();
        let b = Envelope::token_bucket(Bucket::new(1.0, 20.0)).unwrap();
        let m = a.min(&b).unwrap();
        for t in [0.0, 5.0, 10.0, 30.0] {
            assert!(close(m.at(t), a.at(t).min(b.at(t))), "t = {t}");
        }
    }

    #[test]
    fn max_of_rate_latencies_switches_to_the_faster_line() {
        // 4·(t − 10)⁺ and 50·(t − 1000)⁺ cross at t = 49960 / 46
        let s = ServiceCurve::max_of(&[
            RateLatency {
                rate: 4.0,
                latency_s: 10.0,
            },
            RateLatency {
                rate: 50.0,
                latency_s: 1000.0,
            },
        ])
        .unwrap();
        let x = 49_960.0 / 46.0;
        assert!(close(s.latency_s(), 10.0));
        assert!(close(s.rate(), 50.0));
        for t in [0.0_f64, 10.0, 500.0, x, 2000.0] {
            let want = (4.0 * (t - 10.0)).max(50.0 * (t - 1000.0)).max(0.0);
            assert!(close(s.at(t), want), "t = {t}: {} vs {want}", s.at(t));
        }
        // a line that never rises above the others is dropped
        let one = ServiceCurve::max_of(&[
            RateLatency {
                rate: 4.0,
                latency_s: 1.0,
            },
            RateLatency {
                rate: 2.0,
                latency_s: 3.0,
            },
        ])
        .unwrap();
        assert_eq!(
            one.as_rate_latency(),
            Some(RateLatency {
                rate: 4.0,
                latency_s: 1.0
            })
        );
        assert!(ServiceCurve::max_of(&[]).is_err());
    }

    #[test]
    fn fifo_leftover_of_rate_latency_is_le_boudec_cor_6_2_3() {
        // (R − r)·(t − T − b/R)⁺ with R = 10, T = 1, r = 2, b = 5: rate 8, latency 1.5
        let beta = ServiceCurve::rate_latency(10.0, 1.0).unwrap();
        let cross = Envelope::token_bucket(Bucket::new(2.0, 5.0)).unwrap();
        let left = beta.fifo_leftover(&cross).unwrap();
        let rl = left.as_rate_latency().unwrap();
        assert!(close(rl.rate, 8.0) && close(rl.latency_s, 1.5), "{rl:?}");
        // never worse than blind multiplexing: (R − r)·(t − (T·R + b)/(R − r))⁺, latency 1.875
        let blind = beta.leftover(&cross).unwrap();
        assert!(close(blind.latency_s(), 1.875));
        assert!(beta
            .fifo_leftover(&Envelope::token_bucket(Bucket::new(10.0, 0.0)).unwrap())
            .is_err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tb(rate: f64, burst: f64) -> Envelope {
        Envelope::token_bucket(Bucket { rate, burst }).unwrap()
    }

    fn rl(rate: f64, latency_s: f64) -> ServiceCurve {
        ServiceCurve::rate_latency(rate, latency_s).unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    }

    #[test]
    fn token_bucket_through_rate_latency() {
        // h = T + b/R, v = b + r·T, output b + r·T + r·t
        let (a, s) = (tb(2.0, 5.0), rl(10.0, 0.3));
        assert!(close(delay_bound(&a, &s).unwrap(), 0.3 + 0.5));
        assert!(close(backlog_bound(&a, &s).unwrap(), 5.0 + 0.6));
        let out = output(&a, &s).unwrap();
        assert_eq!(out.buckets().len(), 1);
        assert!(close(out.burst(), 5.6) && close(out.long_term_rate(), 2.0));
    }

    #[test]
    fn envelope_of_buckets() {
        let a = Envelope::from_buckets(&[
            Bucket {
                rate: 1.0,
                burst: 10.0,
            },
            Bucket {
                rate: 5.0,
                burst: 2.0,
            },
            Bucket {
                rate: 6.0,
                burst: 3.0,
            }, // dominated
            Bucket {
                rate: 3.0,
                burst: 20.0,
            }, // dominated
        ])
        .unwrap();
        assert_eq!(a.vertices(), vec![[0.0, 2.0], [2.0, 12.0]]);
        assert_eq!(a.long_term_rate(), 1.0);
        assert_eq!(a.burst_at_rate(1.0), Some(10.0));
        assert_eq!(a.burst_at_rate(3.0), Some(6.0));
        assert_eq!(a.burst_at_rate(0.5), None);
        assert!(Envelope::from_buckets(&[]).is_err());
    }

    #[test]
    fn leftover_of_concave_cross_traffic() {
        // cross: min(4 + 2t, 8 + t) = 4 + 2t up to t = 4, then 8 + t; β = 10·t
        let cross = Envelope::from_buckets(&[
            Bucket {
                rate: 2.0,
                burst: 4.0,
            },
            Bucket {
                rate: 1.0,
                burst: 8.0,
            },
        ])
        .unwrap();
        let l = ServiceCurve::constant_rate(10.0)
            .unwrap()
            .leftover(&cross)
            .unwrap();
        // 10t − 4 − 2t = 0 at t = 0.5; slope 8 to t = 4, then 9
        assert!(close(l.latency_s(), 0.5));
        assert_eq!(l.pieces().len(), 1);
        assert!(close(l.pieces()[0].rate, 8.0) && close(l.rate(), 9.0));
        assert!(close(l.at(4.0), 28.0) && close(l.at(5.0), 37.0));
    }

    #[test]
    fn unstable_is_an_error() {
        assert!(matches!(
            rl(3.0, 0.0).leftover(&tb(3.0, 1.0)),
            Err(DncError::Unstable { .. })
        ));
        assert!(matches!(
            delay_bound(&tb(4.0, 1.0), &rl(3.0, 0.0)),
            Err(DncError::Unstable { .. })
        ));
        // equal rates: finite
        assert!(close(
            delay_bound(&tb(3.0, 3.0), &rl(3.0, 1.0)).unwrap(),
            2.0
        ));
        assert!(ServiceCurve::rate_latency(0.0, 1.0).is_err());
        assert!(Envelope::token_bucket(Bucket {
            rate: f64::NAN,
            burst: 1.0
        })
        .is_err());
    }

    #[test]
    fn shaper_delay_is_the_horizontal_distance_to_the_bucket_line() {
        // α = min(10 + 100 t, 30 + 10 t): b_α(20) = 30 + 10·(2/9)... computed directly
        let a = Envelope::from_buckets(&[
            Bucket {
                rate: 100.0,
                burst: 10.0,
            },
            Bucket {
                rate: 10.0,
                burst: 30.0,
            },
        ])
        .unwrap();
        let knee = 20.0 / 90.0;
        let need = a.at(knee) - 20.0 * knee;
        let d = shaper_delay(
            &a,
            Bucket {
                rate: 20.0,
                burst: 12.0,
            },
        )
        .unwrap();
        assert!(close(d, (need - 12.0) / 20.0));
        // brute force horizontal distance
        let brute = (0..=10_000)
            .map(|i| {
                let t = i as f64 * 1e-4;
                ((a.at(t) - 12.0) / 20.0 - t).max(0.0)
            })
            .fold(0.0, f64::max);
        // the grid misses the knee by < 1e-4 s, where the gap has slope ≤ 80/20
        assert!(d >= brute && d - brute < 4e-4, "{d} vs {brute}");
        let big = Bucket {
            rate: 20.0,
            burst: 100.0,
        };
        assert_eq!(shaper_delay(&a, big).unwrap(), 0.0);
        let slow = Bucket {
            rate: 5.0,
            burst: 100.0,
        };
        assert!(shaper_delay(&a, slow).is_err());
    }

    #[test]
    fn output_matches_brute_force_deconvolution() {
        let a = Envelope::from_buckets(&[
            Bucket {
                rate: 50.0,
                burst: 1.0,
            },
            Bucket {
                rate: 5.0,
                burst: 10.0,
            },
            Bucket {
                rate: 1.0,
                burst: 30.0,
            },
        ])
        .unwrap();
        let s = rl(20.0, 0.1).convolve(
            &ServiceCurve::new(
                0.05,
                &[ServicePiece {
                    rate: 3.0,
                    duration_s: 0.5,
                }],
                40.0,
            )
            .unwrap(),
        );
        let out = output(&a, &s).unwrap();
        for i in 0..200 {
            let t = i as f64 * 0.05;
            let brute = (0..20_000)
                .map(|k| {
                    let u = k as f64 * 1e-3;
                    a.at(t + u) - s.at(u)
                })
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(out.at(t) >= brute - 1e-9, "t={t}: {} < {brute}", out.at(t));
            assert!(out.at(t) <= brute + 0.05, "t={t}: {} >> {brute}", out.at(t));
        }
    }

    #[test]
    fn model_conversion_is_exact() {
        let m = ArrivalCurve::new(vec![[0.0, 1.0], [1.0, 5.0], [2.0, 6.0]], 0.5).unwrap();
        let a = Envelope::from(&m);
        for t in [0.0, 0.5, 1.0, 1.5, 2.0, 7.0] {
            assert!(close(a.at(t), m.at(t)));
        }
        assert_eq!(a.to_model().unwrap(), m);
    }
}
