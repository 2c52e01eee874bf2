//! Invalid parameters are errors with messages that quote the value and say what to do.

use tailbound_shaping::{MultiBucket, MultiTakeError, ShapingError, TokenBucket};

#[test]
fn rate_zero_negative_nan_infinite() {
    for rate in [0.0, -1.0, f64::NAN, f64::INFINITY, -0.0] {
        let err = TokenBucket::new(rate, 1.0, 0);
        assert!(
            matches!(err, Err(ShapingError::InvalidRate { .. })),
            "rate {rate}: {err:?}"
        );
    }
    let Err(e) = TokenBucket::new(0.0, 1.0, 0) else {
        panic!("rate 0 accepted");
    };
    let msg = e.to_string();
    assert!(msg.starts_with("invalid rate 0:"), "{msg}");
    assert!(msg.contains("> 0"), "{msg}");
}

#[test]
fn burst_negative_nan_infinite() {
    for burst in [-1.0, -1e-300, f64::NAN, f64::INFINITY] {
        let err = TokenBucket::new(1.0, burst, 0);
        assert!(
            matches!(err, Err(ShapingError::InvalidBurst { .. })),
            "burst {burst}: {err:?}"
        );
    }
    let Err(e) = TokenBucket::new(1.0, -2.5, 0) else {
        panic!("negative burst accepted");
    };
    assert!(e.to_string().starts_with("invalid burst -2.5:"), "{e}");
    let Err(e) = TokenBucket::new(f64::NAN, 1.0, 0) else {
        panic!("NaN rate accepted");
    };
    assert!(e.to_string().starts_with("invalid rate NaN:"), "{e}");
}

#[test]
fn zero_burst_is_valid() {
    assert!(TokenBucket::new(1.0, 0.0, 0).is_ok());
}

#[test]
fn set_rate_rejects_and_leaves_the_bucket_unchanged() {
    let Ok(mut tb) = TokenBucket::new(5.0, 5.0, 0) else {
        panic!("valid parameters");
    };
    assert_eq!(tb.take(0, 3.0), Ok(()));
    let before = tb.clone();
    assert!(tb.set_rate(1_000, 0.0, 5.0).is_err());
    assert!(tb.set_rate(1_000, 5.0, f64::NAN).is_err());
    assert_eq!(tb, before);
}

#[test]
fn multi_bucket_names_the_bad_bucket() {
    let err = MultiBucket::with_default_bursts(&[1.0, 0.0, 2.0], 0);
    let Err(e) = err else {
        panic!("rate 0 accepted");
    };
    assert!(matches!(e, ShapingError::InBucket { index: 1, .. }));
    assert!(
        e.to_string().starts_with("bucket 1: invalid rate 0:"),
        "{e}"
    );
    let err = MultiBucket::new(&[(1.0, 1.0), (1.0, -1.0)], 0);
    assert!(matches!(err, Err(ShapingError::InBucket { index: 1, .. })));
}

#[test]
fn multi_bucket_wrong_cost_count() {
    let Ok(mut mb) = MultiBucket::with_default_bursts(&[1.0, 2.0], 0) else {
        panic!("valid rates");
    };
    let Err(MultiTakeError::Invalid(e)) = mb.take(0, &[1.0]) else {
        panic!("wrong cost count accepted");
    };
    assert_eq!(
        e.to_string(),
        "got 1 costs for a multi-resource bucket with 2 buckets; pass exactly one per \
         resource on the flow's path (0 for a resource it does not use)"
    );
}
