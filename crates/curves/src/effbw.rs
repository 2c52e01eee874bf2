//! Effective bandwidth: the least shaping rate that keeps a tenant's shaper delay within a
//! latency target (workload-compactor §4.1.2, after Le Boudec and Thiran's effective bandwidth).
//!
//! The effective-bandwidth policy sets the bucket b = 0 and shapes the tenant at a rate r
//! [work/s]: requests leave the shaper FIFO at rate r, so request k leaves once the backlog
//! that includes it has drained, and the largest delay is b(r)/r, with b the tenant's r-b curve
//! ([`crate::rb`]). The effective bandwidth for a target d [s] is therefore the least r with
//! b(r) ≤ r·d. Since b is convex and non-increasing, b(r) − r·d is strictly decreasing, and on
//! the piecewise-linear r-b curve the crossing is found exactly: linear interpolation between
//! the two vertices that bracket it, or b_last/d beyond the last vertex where b is constant.
//! The rate limits themselves are chosen elsewhere (the placement policy); this module only
//! evaluates the curve.

use tailbound_model::RbCurve;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EffBwError {
    #[error("latency target {delay_s} s is not a positive finite number of seconds; give a target > 0, e.g. 0.02 for 20 ms")]
    InvalidDelay { delay_s: f64 },
    #[error("the effective bandwidth for {delay_s} s lies below the curve's first rate {first_rate} [work/s], where the curve says nothing; use a curve that starts at rate 0 (an unpruned rb::rb_curve)")]
    BelowCurve { delay_s: f64, first_rate: f64 },
}

/// The least rate r [work/s] with b(r) ≤ r·`delay_s`: the smallest rate of a bucketless
/// shaper (b = 0) that delays no request of the curve's trace by more than `delay_s` [s].
///
/// Errors for a non-positive or non-finite target, and when the answer lies below the curve's first rate (a curve that does not start at r = 0, e.g. a
/// pruned one). The result is finite and ≥ the curve's first rate; it is 0 only for a curve of
/// no work.
pub fn effective_bandwidth(rb: &RbCurve, delay_s: f64) -> Result<f64, EffBwError> {
    if !(delay_s.is_finite() && delay_s > 0.0) {
        return Err(EffBwError::InvalidDelay { delay_s });
    }
    // RbCurve guarantees at least one finite, non-negative vertex.
    let v = rb.vertices();
    // excess at a vertex: positive while the shaper at that rate is too slow
    let excess = |[r, b]: [f64; 2]| b - r * delay_s;
    let Some(i) = v.iter().position(|&p| excess(p) <= 0.0) else {
        // beyond the last vertex b is constant: the crossing is at b_last / d
        let [r_last, b_last] = v[v.len() - 1];
        return Ok((b_last / delay_s).max(r_last));
    };
    if i == 0 {
        let [r0, b0] = v[0];
        // the crossing is at r0 itself only when the excess is exactly 0 there (or r0 = 0,
        // where b = 0: a curve of no work)
        if r0 == 0.0 || b0 == r0 * delay_s {
            return Ok(r0);
        }
        return Err(EffBwError::BelowCurve {
            delay_s,
            first_rate: r0,
        });
    }
    let (a, b) = (v[i - 1], v[i]);
    let (ea, eb) = (excess(a), excess(b));
    // ea > 0 ≥ eb: interpolate the linear excess between the two vertices
    let f = ea / (ea - eb);
    Ok((a[0] + f * (b[0] - a[0])).clamp(a[0], b[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_is_interpolated_between_vertices() {
        // b(r) = 100 − 2r up to r = 40, then 20 constant
        let rb = RbCurve::new(vec![[0.0, 100.0], [40.0, 20.0]]).unwrap();
        // 100 − 2r = r·1 → r = 100/3
        let r = effective_bandwidth(&rb, 1.0).unwrap();
        assert!((r - 100.0 / 3.0).abs() < 1e-12);
        // beyond the last vertex: 20 = r·0.1 → r = 200
        assert_eq!(effective_bandwidth(&rb, 0.1).unwrap(), 200.0);
        // exactly at the last vertex: 20 = 40·0.5
        assert_eq!(effective_bandwidth(&rb, 0.5).unwrap(), 40.0);
    }

    #[test]
    fn rejects_bad_targets_and_curves() {
        let rb = RbCurve::new(vec![[0.0, 10.0]]).unwrap();
        for d in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = effective_bandwidth(&rb, d).unwrap_err();
            assert!(matches!(e, EffBwError::InvalidDelay { .. }));
        }
        let msg = effective_bandwidth(&rb, -0.5).unwrap_err().to_string();
        assert!(msg.contains("-0.5") && msg.contains("> 0"), "{msg}");
        // a pruned curve starting at rate 5: for a long target the answer is below 5
        let pruned = RbCurve::new(vec![[5.0, 10.0], [10.0, 1.0]]).unwrap();
        assert!(matches!(
            effective_bandwidth(&pruned, 100.0),
            Err(EffBwError::BelowCurve { .. })
        ));
        assert!(effective_bandwidth(&pruned, 0.5).is_ok());
    }

    #[test]
    fn no_work_needs_no_bandwidth() {
        let rb = RbCurve::new(vec![[0.0, 0.0]]).unwrap();
        assert_eq!(effective_bandwidth(&rb, 0.01).unwrap(), 0.0);
    }
}
