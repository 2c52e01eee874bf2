//! Splitting a trace in two by time: following SNC-Meister and WorkloadCompactor, the first
//! part characterizes a workload and the second is replayed to check its SLO.
//!
//! The split instant is `t_split = first + at·span` (span = last − first arrival), `at`
//! strictly between 0 and 1. The first part holds the arrivals `< t_split`, the second the
//! rest. Arrival times are integer nanoseconds, so `t_split` is taken as
//! `first + ⌈at·span⌉` ns, which selects the same requests.
//!
//! [`split`] **rebases** the second part: its times have `t_split` subtracted, so a replay of
//! it starts near 0 (the gap from the split instant to its first request is kept).
//! [`split_keep_times`] keeps absolute times in both parts.
//!
//! [`rotate`] reuses a part at a time offset, so that several tenants replaying the same
//! trace do not burst in step, while each keeps exactly the requests of its part.

use crate::Trace;
use tailbound_model::Request;

/// Why a trace could not be split.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    #[error("split point {at} is not strictly between 0 and 1; expected a fraction of the trace's time span, e.g. 0.5")]
    Fraction { at: f64 },
    #[error("trace {name:?} holds no requests; nothing to split")]
    EmptyTrace { name: String },
    #[error("split point {at} leaves the {part} part of {name:?} empty ({requests} requests over {span_s} s); expected a split point with requests on both sides")]
    EmptyPart {
        at: f64,
        name: String,
        part: &'static str,
        requests: usize,
        span_s: f64,
    },
}

/// Which requests of a trace a step uses: the whole trace or one half by time. Both papers
/// characterize a tenant on its first half and replay the second ([`Part::held_out`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Part {
    /// every request
    Whole,
    /// the first half of the time span
    #[default]
    FirstHalf,
    /// the second half of the time span, rebased to start near 0 (see [`split`])
    SecondHalf,
}

tailbound_model::names!(Part, "part", {
    Whole => "whole",
    FirstHalf => "first-half",
    SecondHalf => "second-half",
});

impl Part {
    /// The part a replay checks when this part characterized the tenant: the other half, or
    /// the whole trace again (optimistic, but what SNC-Meister's own tools do with the file
    /// they are given).
    pub fn held_out(self) -> Part {
        match self {
            Part::Whole => Part::Whole,
            Part::FirstHalf => Part::SecondHalf,
            Part::SecondHalf => Part::FirstHalf,
        }
    }

    /// This part of `trace`.
    pub fn of(self, trace: &Trace) -> Result<Trace, SplitError> {
        match self {
            Part::Whole => Ok(trace.clone()),
            Part::FirstHalf => Ok(split(trace, 0.5)?.0),
            Part::SecondHalf => Ok(split(trace, 0.5)?.1),
        }
    }
}

/// Splits at fraction `at` of the time span; the second part's times are rebased to start at
/// the split instant (see the module docs). Names are `"{name} [0, {at})"` and
/// `"{name} [{at}, 1]"`.
pub fn split(trace: &Trace, at: f64) -> Result<(Trace, Trace), SplitError> {
    split_impl(trace, at, true)
}

/// Like [`split`], but both parts keep the original (absolute) arrival times.
pub fn split_keep_times(trace: &Trace, at: f64) -> Result<(Trace, Trace), SplitError> {
    split_impl(trace, at, false)
}

fn split_impl(trace: &Trace, at: f64, rebase: bool) -> Result<(Trace, Trace), SplitError> {
    if !(at > 0.0 && at < 1.0) {
        return Err(SplitError::Fraction { at });
    }
    let reqs = &trace.requests;
    let (Some(first), Some(last)) = (reqs.first(), reqs.last()) else {
        return Err(SplitError::EmptyTrace {
            name: trace.name.clone(),
        });
    };
    let first_ns = first.arrival_ns;
    let span_ns = last.arrival_ns.saturating_sub(first_ns);
    // at·span ≤ span, so the offset fits and first + offset ≤ last.
    let offset_ns = ((at * span_ns as f64).ceil() as u64).min(span_ns);
    let split_ns = first_ns.saturating_add(offset_ns);
    let index = reqs.partition_point(|r| r.arrival_ns < split_ns);
    let empty = |part: &'static str| SplitError::EmptyPart {
        at,
        name: trace.name.clone(),
        part,
        requests: reqs.len(),
        span_s: span_ns as f64 * 1e-9,
    };
    if index == 0 {
        return Err(empty("first"));
    }
    if index == reqs.len() {
        return Err(empty("second"));
    }
    let (head, tail) = reqs.split_at(index);
    let mut tail = tail.to_vec();
    if rebase {
        for r in &mut tail {
            r.arrival_ns = r.arrival_ns.saturating_sub(split_ns);
        }
    }
    Ok((
        Trace {
            name: format!("{} [0, {at})", trace.name),
            requests: head.to_vec(),
        },
        Trace {
            name: format!("{} [{at}, 1]", trace.name),
            requests: tail,
        },
    ))
}

/// The period [`rotate`] treats sorted `requests` as repeating with [ns]: their span plus
/// their mean gap, plus 1 ns so that the last request never lands on the first (1 for one
/// request, 0 for none).
pub fn rotation_period(requests: &[Request]) -> u64 {
    let (Some(first), Some(last)) = (requests.first(), requests.last()) else {
        return 0;
    };
    let span = last.arrival_ns - first.arrival_ns;
    let n = requests.len() as u64;
    span + if n > 1 { span / (n - 1) } else { 0 } + 1
}

/// Rotates sorted `requests` by `offset_ns` within a period of span + mean gap (so the seam
/// where the last request wraps around to the front is one ordinary gap, not a burst): times
/// become `first + (t − first − offset) mod period`, sorted. The same requests and sizes, in
/// `[first, first + period)`; an offset of 0 (or of a whole period) changes nothing.
pub fn rotate(requests: &[Request], offset_ns: u64) -> Vec<Request> {
    let Some(first) = requests.first() else {
        return Vec::new();
    };
    let period = rotation_period(requests);
    let offset = offset_ns % period;
    let mut out: Vec<Request> = requests
        .iter()
        .map(|r| Request {
            arrival_ns: first.arrival_ns
                + (r.arrival_ns - first.arrival_ns + period - offset) % period,
            ..*r
        })
        .collect();
    out.sort_by_key(|r| r.arrival_ns);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::Op;

    fn trace(times: &[u64]) -> Trace {
        Trace {
            name: "t".into(),
            requests: times
                .iter()
                .map(|&arrival_ns| Request {
                    arrival_ns,
                    size_bytes: 1,
                    op: Op::Get,
                })
                .collect(),
        }
    }

    fn times(t: &Trace) -> Vec<u64> {
        t.requests.iter().map(|r| r.arrival_ns).collect()
    }

    #[test]
    fn splits_at_half_the_span_from_the_first_arrival() {
        // span 100..300, split instant 200: 200 goes to the second part.
        let t = trace(&[100, 150, 199, 200, 250, 300]);
        let (a, b) = split(&t, 0.5).unwrap();
        assert_eq!(times(&a), vec![100, 150, 199]);
        assert_eq!(times(&b), vec![0, 50, 100]);
        assert_eq!(a.name, "t [0, 0.5)");
        assert_eq!(b.name, "t [0.5, 1]");
        let (_, b) = split_keep_times(&t, 0.5).unwrap();
        assert_eq!(times(&b), vec![200, 250, 300]);
    }

    #[test]
    fn fractional_split_instant_rounds_up() {
        // 0.25 · 3 = 0.75 ns: the instant is 10.75, so 10 is before it and 11 after.
        let (a, b) = split_keep_times(&trace(&[10, 11, 13]), 0.25).unwrap();
        assert_eq!(times(&a), vec![10]);
        assert_eq!(times(&b), vec![11, 13]);
    }

    #[test]
    fn rejects_bad_fractions_and_empty_parts() {
        let t = trace(&[1, 2, 3]);
        for at in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
            let err = split(&t, at).unwrap_err();
            assert!(matches!(err, SplitError::Fraction { .. }), "{err}");
        }
        let err = split(&trace(&[5, 5, 5]), 0.5).unwrap_err();
        assert!(err.to_string().contains("first part"), "{err}");
        assert!(split(&trace(&[]), 0.5).is_err());
    }

    #[test]
    fn rotation_keeps_the_requests_and_wraps_within_span_plus_a_mean_gap() {
        let t = trace(&[100, 200, 400, 1000]);
        // span 900, mean gap 300, period 1201; rel 0,100,300,900 shifted by −300 mod 1201
        // = 901, 1001, 0, 600, plus the first arrival 100
        assert_eq!(rotation_period(&t.requests), 1201);
        let rot = rotate(&t.requests, 300);
        assert_eq!(
            rot.iter().map(|r| r.arrival_ns).collect::<Vec<_>>(),
            vec![100, 700, 1001, 1101]
        );
        for offset in [0u64, 1, 7, 299, 300, 1200, 1201, 5000] {
            let r = rotate(&t.requests, offset);
            assert!(r.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
            assert!(
                r.iter().all(|q| (100..1301).contains(&q.arrival_ns)),
                "{offset}: {r:?}"
            );
            assert_eq!(r.len(), 4);
        }
        assert_eq!(rotate(&t.requests, 0), t.requests);
        assert_eq!(rotate(&t.requests, 1201), t.requests);
        assert!(rotate(&[], 5).is_empty());
    }
}
