//! Descriptive statistics of a trace: counts, mean and peak rates, size percentiles, and the
//! rate over time for plots.
//!
//! Definitions:
//! * The **span** is `last − first` arrival; mean rates are `requests / span` and
//!   `bytes / span`. A trace whose requests all share one instant has span 0 and no mean rate
//!   (`None`, JSON `null`) — never a division by zero.
//! * **Windows** are aligned at the first request: window k covers
//!   `[first + k·w, first + (k+1)·w)`. The peak rate of a window length is the largest count
//!   (or byte sum) of any window divided by w. The last window may be partly past the end of
//!   the trace; it is still divided by the full w. Peak-to-mean is peak rate / mean rate; it
//!   can be below 1 when the span is shorter than the window.
//! * **Percentiles** are exact nearest-rank: the p-th percentile of n sorted sizes is the
//!   value of rank ⌈p·n/100⌉ (1-based, at least 1), computed in integer arithmetic.
//!
//! Characterization (r-b curves, MMPP fits) lives in `tailbound-curves`, not here.

use serde::{Deserialize, Serialize};

use crate::Trace;

/// Window lengths [`trace_stats`] reports peaks for \[s\]: 10 ms, 100 ms, 1 s.
pub const PEAK_WINDOWS_S: [f64; 3] = [0.01, 0.1, 1.0];

/// Most points [`rate_series`] will produce.
pub const MAX_RATE_POINTS: u64 = 10_000_000;

/// Summary of one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStats {
    /// the trace's name
    pub name: String,
    pub requests: u64,
    /// first arrival \[s\] (0 for an empty trace)
    pub first_s: f64,
    /// last arrival \[s\] (0 for an empty trace)
    pub last_s: f64,
    /// last − first arrival \[s\]
    pub span_s: f64,
    /// requests / span [requests/s]; `None` when the span is 0
    pub mean_requests_per_s: Option<f64>,
    /// bytes / span [bytes/s]; `None` when the span is 0
    pub mean_bytes_per_s: Option<f64>,
    /// fraction of requests that read (Get, DiskRead); `None` for an empty trace
    pub read_fraction: Option<f64>,
    /// sum of request sizes \[bytes\] (exact: 128 bits)
    pub total_bytes: u128,
    /// request size distribution; `None` for an empty trace
    pub size_bytes: Option<SizeStats>,
    /// peak rates per window length, one entry per [`PEAK_WINDOWS_S`]
    pub windows: Vec<WindowPeak>,
}

/// Request size distribution, nearest-rank percentiles \[bytes\].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeStats {
    pub min_bytes: u64,
    pub p50_bytes: u64,
    pub p90_bytes: u64,
    pub p99_bytes: u64,
    pub p99_9_bytes: u64,
    pub max_bytes: u64,
    pub mean_bytes: f64,
}

/// Peak rates over windows of one length.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowPeak {
    /// window length \[s\]
    pub window_s: f64,
    /// most requests in one window / window length [requests/s]
    pub peak_requests_per_s: f64,
    /// most bytes in one window / window length [bytes/s]
    pub peak_bytes_per_s: f64,
    /// peak / mean request rate; `None` when the mean is undefined (span 0)
    pub peak_to_mean_requests: Option<f64>,
    /// peak / mean byte rate; `None` when the mean is undefined (span 0)
    pub peak_to_mean_bytes: Option<f64>,
}

/// One window of [`rate_series`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    /// start of the window, absolute trace time \[s\]
    pub start_s: f64,
    /// requests in the window / window length [requests/s]
    pub requests_per_s: f64,
    /// bytes in the window / window length [bytes/s]
    pub bytes_per_s: f64,
}

/// Why a rate series could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    #[error("window {window_s} s is invalid; expected a finite length of at least 1 ns, e.g. 0.1")]
    Window { window_s: f64 },
    #[error("window {window_s} s cuts the trace into {windows} windows; expected at most {max}, use a longer window")]
    TooManyWindows {
        window_s: f64,
        windows: u64,
        max: u64,
    },
}

/// The p-th percentile (p = num/den · 100) of sorted values, nearest rank.
fn nearest_rank(sorted: &[u64], num: u128, den: u128) -> u64 {
    let n = sorted.len() as u128;
    let rank = (n * num).div_ceil(den).max(1);
    let index = usize::try_from(rank - 1).unwrap_or(usize::MAX);
    sorted
        .get(index)
        .or(sorted.last())
        .copied()
        .unwrap_or_default()
}

fn size_stats(trace: &Trace) -> Option<SizeStats> {
    let mut sizes: Vec<u64> = trace.requests.iter().map(|r| r.size_bytes).collect();
    sizes.sort_unstable();
    let total: u128 = sizes.iter().map(|&s| u128::from(s)).sum();
    Some(SizeStats {
        min_bytes: *sizes.first()?,
        p50_bytes: nearest_rank(&sizes, 1, 2),
        p90_bytes: nearest_rank(&sizes, 9, 10),
        p99_bytes: nearest_rank(&sizes, 99, 100),
        p99_9_bytes: nearest_rank(&sizes, 999, 1000),
        max_bytes: *sizes.last()?,
        mean_bytes: total as f64 / sizes.len() as f64,
    })
}

/// Window length in whole nanoseconds, if it is at least 1 ns and finite.
fn window_ns(window_s: f64) -> Option<u64> {
    let ns = (window_s * 1e9).round();
    (1.0..18_446_744_073_709_551_616.0)
        .contains(&ns)
        .then_some(ns as u64)
}

/// Largest (count, bytes) in any window of `w_ns`, windows aligned at the first request.
fn peak_counts(trace: &Trace, w_ns: u64) -> (u64, u128) {
    let Some(first) = trace.requests.first().map(|r| r.arrival_ns) else {
        return (0, 0);
    };
    let (mut peak_n, mut peak_b) = (0u64, 0u128);
    let (mut window, mut n, mut b) = (0u64, 0u64, 0u128);
    for r in &trace.requests {
        let k = r.arrival_ns.saturating_sub(first) / w_ns;
        if k != window {
            window = k;
            n = 0;
            b = 0;
        }
        n += 1;
        b += u128::from(r.size_bytes);
        peak_n = peak_n.max(n);
        peak_b = peak_b.max(b);
    }
    (peak_n, peak_b)
}

/// Summarizes a trace (see the module docs for definitions). Never divides by zero: rates
/// that need a positive span are `None` when the span is 0.
pub fn trace_stats(trace: &Trace) -> TraceStats {
    let reqs = &trace.requests;
    let first_ns = reqs.first().map_or(0, |r| r.arrival_ns);
    let last_ns = reqs.last().map_or(0, |r| r.arrival_ns);
    let span_ns = last_ns.saturating_sub(first_ns);
    let span_s = span_ns as f64 * 1e-9;
    let n = reqs.len() as u64;
    let total: u128 = reqs.iter().map(|r| u128::from(r.size_bytes)).sum();
    let reads = reqs.iter().filter(|r| r.op.is_read()).count();
    let per_span = |x: f64| (span_ns > 0).then(|| x / span_s);
    let mean_requests_per_s = per_span(n as f64);
    let mean_bytes_per_s = per_span(total as f64);
    let windows = PEAK_WINDOWS_S
        .iter()
        .map(|&window_s| {
            let w_ns = window_ns(window_s).unwrap_or(1);
            let w = w_ns as f64 * 1e-9;
            let (peak_n, peak_b) = peak_counts(trace, w_ns);
            let peak_requests_per_s = peak_n as f64 / w;
            let peak_bytes_per_s = peak_b as f64 / w;
            WindowPeak {
                window_s,
                peak_requests_per_s,
                peak_bytes_per_s,
                peak_to_mean_requests: mean_requests_per_s
                    .filter(|&m| m > 0.0)
                    .map(|m| peak_requests_per_s / m),
                peak_to_mean_bytes: mean_bytes_per_s
                    .filter(|&m| m > 0.0)
                    .map(|m| peak_bytes_per_s / m),
            }
        })
        .collect();
    TraceStats {
        name: trace.name.clone(),
        requests: n,
        first_s: first_ns as f64 * 1e-9,
        last_s: last_ns as f64 * 1e-9,
        span_s,
        mean_requests_per_s,
        mean_bytes_per_s,
        read_fraction: (n > 0).then(|| reads as f64 / n as f64),
        total_bytes: total,
        size_bytes: size_stats(trace),
        windows,
    }
}

/// Request and byte rate per window of `window_s`, windows aligned at the first request, from
/// the first to the window holding the last request (empty windows included, as zeros). An
/// empty trace gives an empty series.
pub fn rate_series(trace: &Trace, window_s: f64) -> Result<Vec<RatePoint>, StatsError> {
    let w_ns = window_ns(window_s).ok_or(StatsError::Window { window_s })?;
    let (Some(first), Some(last)) = (trace.requests.first(), trace.requests.last()) else {
        return Ok(Vec::new());
    };
    let first_ns = first.arrival_ns;
    let windows = last.arrival_ns.saturating_sub(first_ns) / w_ns + 1;
    if windows > MAX_RATE_POINTS {
        return Err(StatsError::TooManyWindows {
            window_s,
            windows,
            max: MAX_RATE_POINTS,
        });
    }
    let w = w_ns as f64 * 1e-9;
    let mut counts = vec![(0u64, 0u128); windows as usize];
    for r in &trace.requests {
        let k = r.arrival_ns.saturating_sub(first_ns) / w_ns;
        if let Some((n, b)) = usize::try_from(k).ok().and_then(|k| counts.get_mut(k)) {
            *n += 1;
            *b += u128::from(r.size_bytes);
        }
    }
    Ok(counts
        .into_iter()
        .zip(0u64..)
        .map(|((n, b), k)| RatePoint {
            start_s: (u128::from(first_ns) + u128::from(k) * u128::from(w_ns)) as f64 * 1e-9,
            requests_per_s: n as f64 / w,
            bytes_per_s: b as f64 / w,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::{Op, Request};

    fn trace(points: &[(u64, u64, Op)]) -> Trace {
        Trace {
            name: "t".into(),
            requests: points
                .iter()
                .map(|&(arrival_ns, size_bytes, op)| Request {
                    arrival_ns,
                    size_bytes,
                    op,
                })
                .collect(),
        }
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=1000).collect();
        assert_eq!(nearest_rank(&v, 1, 2), 500);
        assert_eq!(nearest_rank(&v, 999, 1000), 999);
        assert_eq!(nearest_rank(&[7], 999, 1000), 7);
        assert_eq!(nearest_rank(&[1, 2], 1, 2), 1);
        assert_eq!(nearest_rank(&[], 1, 2), 0);
    }

    /// The original tool divided by the span, which is 0 when every request arrives at once.
    #[test]
    fn regression_single_instant_trace_has_no_mean_rate_instead_of_dividing_by_zero() {
        let t = trace(&[(5_000, 10, Op::Get), (5_000, 30, Op::Put)]);
        let s = trace_stats(&t);
        assert_eq!(s.span_s, 0.0);
        assert_eq!(s.mean_requests_per_s, None);
        assert_eq!(s.mean_bytes_per_s, None);
        for w in &s.windows {
            assert!(w.peak_requests_per_s.is_finite());
            assert_eq!(w.peak_to_mean_requests, None);
            assert_eq!(w.peak_to_mean_bytes, None);
        }
        assert_eq!(s.windows[2].peak_requests_per_s, 2.0);
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"mean_requests_per_s\":null"), "{json}");
        assert!(!json.contains("NaN") && !json.contains("inf"));
    }

    #[test]
    fn empty_trace_does_not_panic() {
        let s = trace_stats(&trace(&[]));
        assert_eq!(s.requests, 0);
        assert_eq!(s.size_bytes, None);
        assert_eq!(s.read_fraction, None);
        assert!(rate_series(&trace(&[]), 1.0).unwrap().is_empty());
    }

    #[test]
    fn rate_series_counts_per_window() {
        let t = trace(&[
            (1_000_000_000, 100, Op::Get),
            (1_400_000_000, 100, Op::Get),
            (3_100_000_000, 50, Op::Put),
        ]);
        let s = rate_series(&t, 1.0).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].requests_per_s, 2.0);
        assert_eq!(s[0].bytes_per_s, 200.0);
        assert_eq!(s[1].requests_per_s, 0.0);
        assert_eq!(s[2].start_s, 3.0);
        assert_eq!(s[2].bytes_per_s, 50.0);
        assert!(rate_series(&t, 0.0).is_err());
        assert!(rate_series(&t, f64::NAN).is_err());
        assert!(matches!(
            rate_series(&t, 1e-9),
            Err(StatsError::TooManyWindows { .. })
        ));
    }
}
