//! The single-resource token bucket: rate `r` [work/s], bucket size (burst) `b` [work].
//!
//! **State.** A level `L` [work] at the time of the last update. Between updates `L` grows at
//! `r` and is capped at `b`; the bucket starts full. `L` may be negative: a deficit left by a
//! request larger than the bucket, repaid at `r`.
//!
//! **Rule (variable-size requests).** A request of cost `c` passes at `t` iff
//! `L(t) >= min(c, b)`, and then `L := L(t) - c`.
//! * `c <= b`: the classic bucket — wait for `c` tokens, never go negative. With every request
//!   at most `b`, the departures conform exactly to the arrival curve `b + r·t`, the token
//!   bucket of workload-compactor §2.2 / Fig. 1 (its "virtual bucket" that fills by `c` per
//!   request and drains at `r` is the mirror image of this one).
//! * `c > b`: a request that could never find `c` tokens waits until the bucket is *full* and
//!   then drives it to `b - c < 0`; later requests wait until the deficit is repaid.
//!
//! **Conformance.** Departures through the bucket satisfy, for every window `[s, t]`
//! (both ends included), `work(s, t) <= max(b, c_max) + r·(t - s)`, where `c_max` is the
//! largest request in the window, which is at most `b + r·(t - s) + c_max`. Proof: the tokens
//! taken in the window are `L(s-) - L(t+) + refill`, with `L(s-) <= b` (the cap), `refill <=
//! r·(t - s)`, and `L(t+) >= min(0, b - c)` after any departure of cost `c` (a request with
//! `c <= b` leaves `L >= 0`; one with `c > b` leaves exactly `b - c`).
//! The alternative "pass whenever `L >= 0`" only meets `b + r·t + c_max` and, for ordinary
//! requests, admits more than `b` back to back, so it does not conform to `(r, b)` even when
//! every request fits in the bucket; it is rejected.
//!
//! **Exact times.** [`TokenBucket::ready_at`] returns the smallest integer nanosecond `t >= now`
//! at which [`TokenBucket::take`] succeeds, using the same float expression `take` evaluates
//! (which is monotone in `t`), corrected by a bounded search, never an open loop. Costs that
//! are negative or NaN count as 0; costs above `f64::MAX` count as `f64::MAX`. A wait longer
//! than the `u64` clock can express (≈584 years) saturates at `u64::MAX`.

use crate::error::{validate, ShapingError};

const NS_PER_S: f64 = 1e9;

/// Not enough tokens yet. Nothing was taken; retry at `ready_at_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not enough tokens: retry at {ready_at_ns} ns")]
pub struct NotReady {
    /// earliest time at which the same request would pass [ns]
    pub ready_at_ns: u64,
}

/// A token bucket of rate [work/s] and burst [work], sans-IO: every call takes `now_ns`.
/// See the module docs for the exact rule and its conformance bound.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    /// refill rate [work/s]
    rate: f64,
    /// bucket size [work]
    burst: f64,
    /// level at `at_ns` [work]; never above `burst`, negative while in deficit
    level: f64,
    /// time of the last update [ns]
    at_ns: u64,
}

/// Costs outside `[0, f64::MAX]` (negative, NaN, infinite) mapped into it.
fn clamp_cost(cost: f64) -> f64 {
    if cost > 0.0 {
        cost.min(f64::MAX)
    } else {
        0.0
    }
}

impl TokenBucket {
    /// A bucket of `rate` [work/s] and `burst` [work], full at `now_ns`.
    ///
    /// # Errors
    /// [`ShapingError::InvalidRate`] unless `rate` is finite and > 0;
    /// [`ShapingError::InvalidBurst`] unless `burst` is finite and >= 0.
    pub fn new(rate: f64, burst: f64, now_ns: u64) -> Result<TokenBucket, ShapingError> {
        validate(rate, burst)?;
        Ok(TokenBucket {
            rate,
            burst,
            level: burst,
            at_ns: now_ns,
        })
    }

    /// Refill rate [work/s].
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Bucket size [work].
    pub fn burst(&self) -> f64 {
        self.burst
    }

    /// Level at `now_ns` [work]: refilled since the last update, capped at the burst; negative
    /// while a request larger than the burst is being repaid.
    pub fn tokens(&self, now_ns: u64) -> f64 {
        let dt_ns = now_ns.saturating_sub(self.at_ns);
        if dt_ns == 0 {
            return self.level;
        }
        (self.level + self.rate * (dt_ns as f64 / NS_PER_S)).min(self.burst)
    }

    /// Tokens that must be in the bucket for a request of `cost` to pass: `min(cost, burst)`.
    fn need(&self, cost: f64) -> f64 {
        clamp_cost(cost).min(self.burst)
    }

    /// Whether a request of `cost` passes at `now_ns` (the one predicate `take` uses).
    pub(crate) fn can_take(&self, now_ns: u64, cost: f64) -> bool {
        self.tokens(now_ns) >= self.need(cost)
    }

    /// Takes `cost` at `now_ns` unconditionally (callers check [`Self::can_take`] first).
    pub(crate) fn commit(&mut self, now_ns: u64, cost: f64) {
        let tokens = self.tokens(now_ns);
        self.level = (tokens - clamp_cost(cost)).max(-f64::MAX);
        self.at_ns = self.at_ns.max(now_ns);
    }

    /// Earliest `t >= now_ns` [ns] at which `take(t, cost)` succeeds (if nothing else is taken
    /// meanwhile). Exact to the nanosecond: `take(t - 1, cost)` fails when `t > now_ns`.
    /// Saturates at `u64::MAX` if the wait exceeds the clock's range.
    pub fn ready_at(&self, now_ns: u64, cost: f64) -> u64 {
        if self.can_take(now_ns, cost) {
            return now_ns;
        }
        // `ok(t)` is monotone in `t`; `now_ns` fails. Estimate the answer in closed form, then
        // correct the float rounding with a bounded gallop and bisection (<= 128 steps).
        let ok = |t: u64| self.can_take(t, cost);
        let lo = now_ns;
        let deficit = self.need(cost) - self.level;
        let wait_ns = (deficit / self.rate * NS_PER_S).ceil();
        let estimate = if wait_ns < u64::MAX as f64 {
            self.at_ns.saturating_add(wait_ns.max(0.0) as u64)
        } else {
            u64::MAX
        };
        let guess = estimate.max(lo.saturating_add(1));
        if ok(guess) {
            // Usually exact: confirm the nanosecond before fails.
            if guess - 1 == lo || !ok(guess - 1) {
                return guess;
            }
            return first_ok(lo, guess, ok);
        }
        // Rounding put the guess short: gallop up until it passes.
        let mut below = guess;
        let mut step: u64 = 1;
        loop {
            let above = below.saturating_add(step);
            if ok(above) {
                return first_ok(below, above, ok);
            }
            if above == u64::MAX {
                return u64::MAX;
            }
            below = above;
            step = step.saturating_mul(2);
        }
    }

    /// Takes `cost` tokens at `now_ns` if the request passes (level >= min(cost, burst)),
    /// leaving the level at `tokens(now_ns) - cost` (negative for a request larger than the
    /// burst).
    ///
    /// # Errors
    /// [`NotReady`] with the exact retry time; nothing is taken.
    pub fn take(&mut self, now_ns: u64, cost: f64) -> Result<(), NotReady> {
        if self.can_take(now_ns, cost) {
            self.commit(now_ns, cost);
            Ok(())
        } else {
            Err(NotReady {
                ready_at_ns: self.ready_at(now_ns, cost),
            })
        }
    }

    /// Corrects an earlier charge by `delta` tokens at `now_ns`: a positive `delta` is taken
    /// unconditionally (the level may go negative, repaid at the rate), a negative one is given
    /// back, never above the burst. For costs known only after the fact (a GET's size arrives
    /// with its reply). Non-finite deltas count as 0.
    pub fn adjust(&mut self, now_ns: u64, delta: f64) {
        let delta = if delta.is_finite() { delta } else { 0.0 };
        let tokens = self.tokens(now_ns);
        self.level = (tokens - delta).clamp(-f64::MAX, self.burst);
        self.at_ns = self.at_ns.max(now_ns);
    }

    /// Changes rate and burst at `now_ns` (enforcement updates). Tokens accrued so far are
    /// counted at the old rate and capped at the old burst; the level is then capped at the new
    /// burst. A larger burst adds no tokens by itself; a deficit is kept and repaid at the new
    /// rate.
    ///
    /// # Errors
    /// As [`TokenBucket::new`]; the bucket is unchanged on error.
    pub fn set_rate(&mut self, now_ns: u64, rate: f64, burst: f64) -> Result<(), ShapingError> {
        validate(rate, burst)?;
        let tokens = self.tokens(now_ns);
        self.level = tokens.min(burst);
        self.at_ns = self.at_ns.max(now_ns);
        self.rate = rate;
        self.burst = burst;
        Ok(())
    }
}

/// Smallest `t` in `(lo, hi]` with `ok(t)`, given `!ok(lo)`, `ok(hi)` and `ok` monotone.
fn first_ok(mut lo: u64, mut hi: u64, ok: impl Fn(u64) -> bool) -> u64 {
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn starts_full_and_drains() -> Result<(), ShapingError> {
        let mut tb = TokenBucket::new(100.0, 50.0, 7)?;
        assert_eq!(tb.tokens(7), 50.0);
        assert_eq!(tb.take(7, 30.0), Ok(()));
        assert_eq!(tb.tokens(7), 20.0);
        assert!(tb.take(7, 30.0).is_err());
        Ok(())
    }

    #[test]
    fn refill_is_capped() -> Result<(), ShapingError> {
        let mut tb = TokenBucket::new(10.0, 5.0, 0)?;
        assert_eq!(tb.take(0, 5.0), Ok(()));
        assert_eq!(tb.tokens(S / 10), 1.0);
        assert_eq!(tb.tokens(100 * S), 5.0);
        Ok(())
    }

    #[test]
    fn ready_at_is_exact_for_awkward_rates() -> Result<(), ShapingError> {
        for &(rate, cost) in &[
            (3.0, 1.0),
            (1e9 / 3.0, 7.0),
            (0.1, 0.3),
            (1e-6, 1e-7),
            (7e12, 1.0),
        ] {
            let mut tb = TokenBucket::new(rate, cost, 123)?;
            tb.take(123, cost)
                .map_err(|_| ShapingError::InvalidRate { rate })?;
            let t = tb.ready_at(123, cost);
            assert!(t > 123);
            assert!(!tb.can_take(t - 1, cost), "rate {rate} cost {cost} t {t}");
            assert_eq!(tb.take(t, cost), Ok(()));
        }
        Ok(())
    }

    #[test]
    fn huge_wait_saturates() -> Result<(), ShapingError> {
        let mut tb = TokenBucket::new(1e-12, 0.0, 0)?;
        assert_eq!(tb.take(0, 1e6), Ok(()));
        assert_eq!(tb.ready_at(0, 1.0), u64::MAX);
        Ok(())
    }

    #[test]
    fn clock_going_backwards_is_ignored() -> Result<(), ShapingError> {
        let mut tb = TokenBucket::new(1.0, 1.0, 10 * S)?;
        assert_eq!(tb.take(10 * S, 1.0), Ok(()));
        assert_eq!(tb.tokens(5 * S), 0.0);
        assert_eq!(tb.take(5 * S, 0.0), Ok(()));
        assert_eq!(tb.ready_at(5 * S, 1.0), 11 * S);
        Ok(())
    }

    #[test]
    fn adjust_charges_and_refunds_within_the_burst() -> Result<(), ShapingError> {
        let mut tb = TokenBucket::new(10.0, 5.0, 0)?;
        assert_eq!(tb.take(0, 4.0), Ok(()));
        tb.adjust(0, 3.0);
        assert_eq!(tb.tokens(0), -2.0);
        assert_eq!(tb.ready_at(0, 1.0), 3 * S / 10);
        tb.adjust(0, -100.0);
        assert_eq!(tb.tokens(0), 5.0);
        tb.adjust(0, f64::NAN);
        assert_eq!(tb.tokens(0), 5.0);
        Ok(())
    }

    #[test]
    fn bad_costs_are_clamped() -> Result<(), ShapingError> {
        let mut tb = TokenBucket::new(1.0, 1.0, 0)?;
        assert_eq!(tb.take(0, f64::NAN), Ok(()));
        assert_eq!(tb.take(0, -5.0), Ok(()));
        assert_eq!(tb.tokens(0), 1.0);
        assert_eq!(tb.take(0, f64::INFINITY), Ok(()));
        assert!(tb.tokens(S).is_finite());
        assert_eq!(tb.ready_at(0, 1.0), u64::MAX);
        Ok(())
    }
}
