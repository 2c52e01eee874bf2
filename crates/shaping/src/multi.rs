//! Pulsar's multi-resource token bucket (pulsar §4.4; issue 7 item 4).
//!
//! One [`TokenBucket`] per resource on a flow's path (links, appliances), each refilled at the
//! flow's allocation for that resource [tokens/s]. A request carries a cost vector, one entry
//! per bucket; it passes only when *every* bucket would let its cost through
//! ([`TokenBucket`]'s rule), and then it is charged to all buckets at once — all or none. So a
//! flow whose per-request cost shifts to another resource (pulsar's 500 B → 4 KB READ example)
//! is held to its allocation on every resource, not just the first.
//!
//! Bucket sizes default to rate × [`DEFAULT_BURST_S`] (1 s, as in Pulsar). The allocation
//! itself (DRF, H-DRF, ...) is computed elsewhere and pushed in with
//! [`MultiBucket::set_rates`] each control interval.

use crate::error::{validate, ShapingError};
use crate::token_bucket::{NotReady, TokenBucket};
use crate::MultiTakeError;

/// Default bucket size as a time at the bucket's rate [s]: burst = rate × 1 s.
pub const DEFAULT_BURST_S: f64 = 1.0;

/// One token bucket per resource on a flow's path; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiBucket {
    buckets: Vec<TokenBucket>,
}

fn in_bucket(index: usize) -> impl Fn(ShapingError) -> ShapingError {
    move |e| ShapingError::InBucket {
        index,
        source: Box::new(e),
    }
}

impl MultiBucket {
    /// Buckets with `(rate [work/s], burst [work])` per resource, all full at `now_ns`.
    ///
    /// # Errors
    /// [`ShapingError::InBucket`] naming the first invalid pair.
    pub fn new(params: &[(f64, f64)], now_ns: u64) -> Result<MultiBucket, ShapingError> {
        let buckets = params
            .iter()
            .enumerate()
            .map(|(i, &(rate, burst))| TokenBucket::new(rate, burst, now_ns).map_err(in_bucket(i)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MultiBucket { buckets })
    }

    /// Buckets with the given rates [work/s] and bursts of rate × [`DEFAULT_BURST_S`], full at
    /// `now_ns`.
    ///
    /// # Errors
    /// [`ShapingError::InBucket`] naming the first invalid rate.
    pub fn with_default_bursts(rates: &[f64], now_ns: u64) -> Result<MultiBucket, ShapingError> {
        let params: Vec<(f64, f64)> = rates.iter().map(|&r| (r, r * DEFAULT_BURST_S)).collect();
        Self::new(&params, now_ns)
    }

    /// Wraps existing buckets (e.g. with different creation times).
    pub fn from_buckets(buckets: Vec<TokenBucket>) -> MultiBucket {
        MultiBucket { buckets }
    }

    /// Number of buckets (resources on the path).
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Whether the path has no resources (every request then passes at once).
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The buckets, in path order.
    pub fn buckets(&self) -> &[TokenBucket] {
        &self.buckets
    }

    /// Level of every bucket at `now_ns` [work].
    pub fn tokens(&self, now_ns: u64) -> Vec<f64> {
        self.buckets.iter().map(|b| b.tokens(now_ns)).collect()
    }

    fn check_len(&self, what: &'static str, got: usize) -> Result<(), ShapingError> {
        if got == self.buckets.len() {
            Ok(())
        } else {
            Err(ShapingError::WrongLength {
                what,
                got,
                expected: self.buckets.len(),
            })
        }
    }

    /// Earliest `t >= now_ns` [ns] at which `take(t, costs)` succeeds: the maximum over buckets
    /// of [`TokenBucket::ready_at`] (exact, since each bucket's condition is monotone in time).
    ///
    /// # Errors
    /// [`ShapingError::WrongLength`] unless there is one cost per bucket.
    pub fn ready_at(&self, now_ns: u64, costs: &[f64]) -> Result<u64, ShapingError> {
        self.check_len("costs", costs.len())?;
        Ok(self
            .buckets
            .iter()
            .zip(costs)
            .map(|(b, &c)| b.ready_at(now_ns, c))
            .fold(now_ns, u64::max))
    }

    /// Charges `costs[i]` to bucket `i` at `now_ns` if every bucket lets its cost through;
    /// otherwise charges nothing.
    ///
    /// # Errors
    /// [`MultiTakeError::NotReady`] with the exact retry time, or
    /// [`MultiTakeError::Invalid`] for a cost vector of the wrong length.
    pub fn take(&mut self, now_ns: u64, costs: &[f64]) -> Result<(), MultiTakeError> {
        self.check_len("costs", costs.len())?;
        let all = self
            .buckets
            .iter()
            .zip(costs)
            .all(|(b, &c)| b.can_take(now_ns, c));
        if !all {
            return Err(NotReady {
                ready_at_ns: self.ready_at(now_ns, costs)?,
            }
            .into());
        }
        for (b, &c) in self.buckets.iter_mut().zip(costs) {
            b.commit(now_ns, c);
        }
        Ok(())
    }

    /// Corrects an earlier [`MultiBucket::take`] by `deltas[i]` tokens per bucket at `now_ns`,
    /// with [`TokenBucket::adjust`]'s semantics: an enforcer charges a GET its estimated size
    /// and settles the difference when the reply shows the real one.
    ///
    /// # Errors
    /// [`ShapingError::WrongLength`] unless there is one delta per bucket; nothing changes.
    pub fn adjust(&mut self, now_ns: u64, deltas: &[f64]) -> Result<(), ShapingError> {
        self.check_len("deltas", deltas.len())?;
        for (b, &d) in self.buckets.iter_mut().zip(deltas) {
            b.adjust(now_ns, d);
        }
        Ok(())
    }

    /// New `(rate, burst)` for every bucket at `now_ns` (one control-interval update), with
    /// [`TokenBucket::set_rate`]'s semantics. All or nothing.
    ///
    /// # Errors
    /// [`ShapingError::WrongLength`] or [`ShapingError::InBucket`]; nothing changes on error.
    pub fn set_rates(&mut self, now_ns: u64, params: &[(f64, f64)]) -> Result<(), ShapingError> {
        self.check_len("rates", params.len())?;
        for (i, &(rate, burst)) in params.iter().enumerate() {
            validate(rate, burst).map_err(in_bucket(i))?;
        }
        for (i, (b, &(rate, burst))) in self.buckets.iter_mut().zip(params).enumerate() {
            b.set_rate(now_ns, rate, burst).map_err(in_bucket(i))?;
        }
        Ok(())
    }

    /// New rates for every bucket at `now_ns`, bursts rate × [`DEFAULT_BURST_S`].
    ///
    /// # Errors
    /// As [`MultiBucket::set_rates`].
    pub fn set_rates_default_bursts(
        &mut self,
        now_ns: u64,
        rates: &[f64],
    ) -> Result<(), ShapingError> {
        let params: Vec<(f64, f64)> = rates.iter().map(|&r| (r, r * DEFAULT_BURST_S)).collect();
        self.set_rates(now_ns, &params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// Pulsar §4.4's example: allocation <800, 5000>, 4 KB READs cost <80, 4000>.
    #[test]
    fn pulsar_example_holds_second_resource() -> Result<(), ShapingError> {
        let mut mb = MultiBucket::with_default_bursts(&[800.0, 5000.0], 0)?;
        let costs = [80.0, 4000.0];
        assert_eq!(mb.take(0, &costs), Ok(()));
        let err = mb.take(0, &costs);
        assert!(matches!(err, Err(MultiTakeError::NotReady(_))));
        // Nothing was charged to the first bucket by the failed take.
        assert_eq!(mb.tokens(0), vec![720.0, 1000.0]);
        // Over one second only two such READs pass (5000 + 5000 tokens of resource 2).
        let mut passed = 1;
        let mut t = 0;
        while t < S {
            t = mb.ready_at(t, &costs)?;
            if t >= S {
                break;
            }
            mb.take(t, &costs)
                .map_err(|_| ShapingError::InvalidRate { rate: 0.0 })?;
            passed += 1;
        }
        assert_eq!(passed, 2);
        Ok(())
    }

    #[test]
    fn wrong_length_is_an_error() -> Result<(), ShapingError> {
        let mut mb = MultiBucket::with_default_bursts(&[1.0, 2.0], 0)?;
        assert!(matches!(
            mb.ready_at(0, &[1.0]),
            Err(ShapingError::WrongLength {
                got: 1,
                expected: 2,
                ..
            })
        ));
        assert!(matches!(
            mb.take(0, &[1.0, 1.0, 1.0]),
            Err(MultiTakeError::Invalid(_))
        ));
        assert!(mb.set_rates(0, &[(1.0, 1.0)]).is_err());
        Ok(())
    }

    #[test]
    fn set_rates_is_all_or_nothing() -> Result<(), ShapingError> {
        let mut mb = MultiBucket::with_default_bursts(&[1.0, 2.0], 0)?;
        let before = mb.clone();
        let err = mb.set_rates(S, &[(3.0, 3.0), (f64::NAN, 1.0)]);
        assert!(matches!(err, Err(ShapingError::InBucket { index: 1, .. })));
        assert_eq!(mb, before);
        mb.set_rates_default_bursts(S, &[3.0, 4.0])?;
        assert_eq!(mb.buckets()[1].burst(), 4.0);
        Ok(())
    }

    #[test]
    fn empty_path_always_passes() -> Result<(), ShapingError> {
        let mut mb = MultiBucket::new(&[], 5)?;
        assert!(mb.is_empty());
        assert_eq!(mb.ready_at(5, &[])?, 5);
        assert_eq!(mb.take(5, &[]), Ok(()));
        Ok(())
    }
}
