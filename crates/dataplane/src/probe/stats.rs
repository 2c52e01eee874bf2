//! RTT distributions: an HdrHistogram of nanoseconds per pair (fixed size, no allocation while
//! recording), merged per configuration and summarised as percentiles and a CDF.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest RTT a histogram holds [ns]; larger values saturate to it.
const MAX_NS: u64 = 60_000_000_000;

/// A new histogram of RTTs [ns], 3 significant digits (0.1% resolution), 1 ns to 60 s.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("constant bounds within hdrhistogram's limits")
}

/// Percentiles of one configuration's RTTs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttStats {
    /// measured exchanges (warm-up and lost ones excluded)
    pub count: u64,
    /// [µs]
    pub min_us: f64,
    /// [µs]
    pub mean_us: f64,
    /// median [µs]
    pub p50_us: f64,
    /// [µs]
    pub p90_us: f64,
    /// [µs]
    pub p99_us: f64,
    /// 99.9th percentile [µs]
    pub p99_9_us: f64,
    /// 99.99th percentile [µs]
    pub p99_99_us: f64,
    /// [µs]
    pub max_us: f64,
    /// max / median: the study's measure of how extreme the tail is
    pub max_over_median: f64,
}

/// One point of an RTT CDF.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CdfPoint {
    /// [µs]
    pub rtt_us: f64,
    /// fraction of exchanges with an RTT at most `rtt_us`
    pub fraction: f64,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Summarises a histogram; `None` when it is empty.
pub fn summarize(h: &Histogram<u64>) -> Option<RttStats> {
    if h.is_empty() {
        return None;
    }
    let p50 = us(h.value_at_quantile(0.5));
    let max = us(h.max());
    Some(RttStats {
        count: h.len(),
        min_us: us(h.min()),
        mean_us: h.mean() / 1e3,
        p50_us: p50,
        p90_us: us(h.value_at_quantile(0.9)),
        p99_us: us(h.value_at_quantile(0.99)),
        p99_9_us: us(h.value_at_quantile(0.999)),
        p99_99_us: us(h.value_at_quantile(0.9999)),
        max_us: max,
        max_over_median: if p50 > 0.0 { max / p50 } else { 0.0 },
    })
}

/// The CDF at fractions 0, 0.01, ..., 0.9, then tail fractions 1 - 10^-x for x = 1.1 ... 5 in
/// steps of 0.1, then the maximum: fine where the tail is. Repeated values are kept once.
pub fn cdf(h: &Histogram<u64>) -> Vec<CdfPoint> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut fractions: Vec<f64> = (0..=90).map(|i| i as f64 / 100.0).collect();
    fractions.extend((11..=50).map(|i| 1.0 - 10f64.powf(-(i as f64) / 10.0)));
    let mut out: Vec<CdfPoint> = Vec::with_capacity(fractions.len() + 1);
    let points = fractions
        .into_iter()
        .map(|q| (us(h.value_at_quantile(q)), q))
        .chain([(us(h.max()), 1.0)]);
    for (rtt_us, q) in points {
        match out.last_mut() {
            Some(last) if last.rtt_us == rtt_us => last.fraction = q,
            _ => out.push(CdfPoint {
                rtt_us,
                fraction: q,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = new_histogram();
        // 1..=10000 µs, one exchange each.
        for v in 1..=10_000u64 {
            h.saturating_record(v * 1000);
        }
        let s = summarize(&h).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.002;
        assert_eq!(s.count, 10_000);
        assert!(close(s.p50_us, 5000.0), "{s:?}");
        assert!(close(s.p90_us, 9000.0), "{s:?}");
        assert!(close(s.p99_us, 9900.0), "{s:?}");
        assert!(close(s.p99_9_us, 9990.0), "{s:?}");
        assert!(close(s.max_us, 10_000.0), "{s:?}");
        assert!(close(s.max_over_median, 2.0), "{s:?}");
        let c = cdf(&h);
        assert!(c.windows(2).all(|w| w[0].rtt_us < w[1].rtt_us));
        assert!(c.windows(2).all(|w| w[0].fraction <= w[1].fraction));
        assert_eq!(c.last().unwrap().fraction, 1.0);
        assert!(summarize(&new_histogram()).is_none());
    }

    #[test]
    fn values_beyond_a_minute_saturate_instead_of_failing() {
        let mut h = new_histogram();
        h.saturating_record(u64::MAX);
        assert!(summarize(&h).unwrap().max_us >= 59e6);
    }
}
