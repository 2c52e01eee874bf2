//! Errors of the shaping crate: invalid bucket parameters and mismatched cost vectors.
//!
//! Waiting for tokens is not an error of this kind; it is [`crate::NotReady`].

use crate::token_bucket::NotReady;

/// Invalid input to a shaping state machine. Returned before any state changes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapingError {
    /// The rate is zero, negative, infinite or NaN.
    #[error(
        "invalid rate {rate}: a token bucket needs a finite rate > 0 [work/s]; \
         to block a flow, do not admit it instead of giving it rate 0"
    )]
    InvalidRate {
        /// the rejected rate [work/s]
        rate: f64,
    },
    /// The burst is negative, infinite or NaN.
    #[error(
        "invalid burst {burst}: a token bucket needs a finite burst >= 0 [work]; \
         use 0 for a pure pacer"
    )]
    InvalidBurst {
        /// the rejected burst [work]
        burst: f64,
    },
    /// One bucket of a [`crate::MultiBucket`] has invalid parameters.
    #[error("bucket {index}: {source}")]
    InBucket {
        /// index of the bucket (resource) on the flow's path
        index: usize,
        /// what is wrong with it
        source: Box<ShapingError>,
    },
    /// A cost or rate vector does not have one entry per bucket.
    #[error(
        "got {got} {what} for a multi-resource bucket with {expected} buckets; \
         pass exactly one per resource on the flow's path (0 for a resource it does not use)"
    )]
    WrongLength {
        /// what was passed ("costs", "rates")
        what: &'static str,
        /// entries passed
        got: usize,
        /// buckets in the multi-resource bucket
        expected: usize,
    },
}

/// Why [`crate::MultiBucket::take`] did not take: either not enough tokens yet, or bad input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MultiTakeError {
    /// Some bucket lacks tokens; nothing was taken. Retry at `ready_at_ns`.
    #[error(transparent)]
    NotReady(#[from] NotReady),
    /// The cost vector is invalid; nothing was taken.
    #[error(transparent)]
    Invalid(#[from] ShapingError),
}

/// Checks token-bucket parameters: `rate` finite and > 0, `burst` finite and >= 0.
pub(crate) fn validate(rate: f64, burst: f64) -> Result<(), ShapingError> {
    if !(rate.is_finite() && rate > 0.0) {
        return Err(ShapingError::InvalidRate { rate });
    }
    if !(burst.is_finite() && burst >= 0.0) {
        return Err(ShapingError::InvalidBurst { burst });
    }
    Ok(())
}
