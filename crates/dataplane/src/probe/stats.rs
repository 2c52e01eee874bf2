//! RTT distributions: an HdrHistogram of nanoseconds per pair (fixed size, no allocation while
//! recording), merged per configuration and summarised as percentiles and a CDF, or written
//! whole as HdrHistogram's percentile distribution ([`percentile_distribution`], `.hgrm`).

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
    /// 99.999th percentile [µs] (needs 100K exchanges or more to differ from the maximum)
    #[serde(default)]
    pub p99_999_us: f64,
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
        p99_999_us: us(h.value_at_quantile(0.99999)),
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

/// Values in `.hgrm` files are microseconds: the histogram's nanoseconds divided by this.
pub const HGRM_UNIT_RATIO: f64 = 1e3;
/// Percentile ticks per half distance to 100% in `.hgrm` files (HistogramLogProcessor's 5).
pub const HGRM_TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The histogram in HdrHistogram's percentile distribution format (`.hgrm`, what
/// `Histogram.outputPercentileDistribution` prints and HdrHistogram's plotter and
/// HistogramLogProcessor read): a header, then one line per percentile tick
/// (`Value Percentile TotalCount 1/(1-Percentile)`, the last line, at percentile 1, without
/// the last column), then the mean, standard deviation, maximum, count and the histogram's
/// bucket layout. Values are divided by `unit_ratio` (see [`HGRM_UNIT_RATIO`]) and printed
/// with as many decimals as the histogram has significant digits.
pub fn percentile_distribution(
    h: &Histogram<u64>,
    ticks_per_half_distance: u32,
    unit_ratio: f64,
) -> String {
    use std::fmt::Write as _;
    let digits = usize::from(h.sigfig());
    let mut out = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        let mut total = 0u64;
        for v in h.iter_quantiles(ticks_per_half_distance.max(1)) {
            total += v.count_since_last_iteration();
            let value = v.value_iterated_to() as f64 / unit_ratio;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{value:12.digits$} {q:2.12} {total:10} {:14.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(out, "{value:12.digits$} {q:2.12} {total:10}");
            }
        }
    }
    let (mean, stdev, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (h.mean(), h.stdev(), h.max() as f64)
    };
    let _ = writeln!(
        out,
        "#[Mean    = {:12.digits$}, StdDeviation   = {:12.digits$}]",
        mean / unit_ratio,
        stdev / unit_ratio
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.digits$}, Total count    = {:12}]",
        max / unit_ratio,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        sub_buckets(h.sigfig())
    );
    out
}

/// HdrHistogram's sub-bucket count for `sigfig` significant digits: the power of two that
/// holds 2·10^sigfig values at unit resolution (2048 for 3 digits).
fn sub_buckets(sigfig: u8) -> u64 {
    let single_unit = 2.0 * 10f64.powi(i32::from(sigfig));
    let magnitude = single_unit.log2().ceil() as u32;
    1u64 << magnitude.max(1)
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

    /// The `.hgrm` text matches HdrHistogram's format exactly: header, tick lines, footer.
    #[test]
    fn percentile_distribution_is_hdrhistograms_format() {
        let mut h = new_histogram();
        for v in 1..=4u64 {
            h.saturating_record(v * 1000); // 1, 2, 3, 4 µs
        }
        // values are the highest of their bucket (2 ns wide above 2048 ns), as HdrHistogram
        // reports them
        let text = percentile_distribution(&h, 1, HGRM_UNIT_RATIO);
        let expected = "       Value     Percentile TotalCount 1/(1-Percentile)\n\n\
            \x20      1.000 0.000000000000          1           1.00\n\
            \x20      2.000 0.500000000000          2           2.00\n\
            \x20      3.001 0.750000000000          3           4.00\n\
            \x20      4.001 0.875000000000          4           8.00\n\
            \x20      4.001 1.000000000000          4\n\
            #[Mean    =        2.501, StdDeviation   =        1.118]\n\
            #[Max     =        4.001, Total count    =            4]\n\
            #[Buckets =           26, SubBuckets     =         2048]\n";
        assert_eq!(text, expected);
        let empty = percentile_distribution(&new_histogram(), 5, HGRM_UNIT_RATIO);
        assert!(empty.contains("Total count    =            0"), "{empty}");
    }

    #[test]
    fn values_beyond_a_minute_saturate_instead_of_failing() {
        let mut h = new_histogram();
        h.saturating_record(u64::MAX);
        assert!(summarize(&h).unwrap().max_us >= 59e6);
    }
}
