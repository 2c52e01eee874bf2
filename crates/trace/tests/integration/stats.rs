//! Statistics of a small handmade trace with known answers.

use crate::common::trace;
use tailbound_model::Op::{DiskRead, DiskWrite};
use tailbound_trace::{rate_series, trace_stats, TraceStats};

#[test]
fn handmade_trace_known_answers() {
    // 10 requests over 2 s; 4 of them in the first 10 ms; sizes 1..=10 × 100 bytes.
    let ms = 1_000_000u64;
    let t = trace(&[
        (1000 * ms, 100, DiskRead),
        (1001 * ms, 200, DiskRead),
        (1002 * ms, 300, DiskWrite),
        (1009 * ms, 400, DiskRead),
        (1500 * ms, 500, DiskWrite),
        (1700 * ms, 600, DiskRead),
        (2200 * ms, 700, DiskWrite),
        (2500 * ms, 800, DiskRead),
        (2900 * ms, 900, DiskWrite),
        (3000 * ms, 1000, DiskRead),
    ]);
    let s = trace_stats(&t);
    assert_eq!(s.requests, 10);
    assert_eq!(s.first_s, 1.0);
    assert_eq!(s.last_s, 3.0);
    assert_eq!(s.span_s, 2.0);
    assert_eq!(s.total_bytes, 5500);
    assert_eq!(s.mean_requests_per_s, Some(5.0));
    assert_eq!(s.mean_bytes_per_s, Some(2750.0));
    assert_eq!(s.read_fraction, Some(0.6));
    let sz = s.size_bytes.clone().unwrap();
    // Nearest rank: p50 → rank 5, p90 → rank 9, p99 and p99.9 → rank 10.
    assert_eq!(
        (
            sz.min_bytes,
            sz.p50_bytes,
            sz.p90_bytes,
            sz.p99_bytes,
            sz.p99_9_bytes,
            sz.max_bytes
        ),
        (100, 500, 900, 1000, 1000, 1000)
    );
    assert_eq!(sz.mean_bytes, 550.0);

    let w10ms = &s.windows[0];
    assert_eq!(w10ms.window_s, 0.01);
    assert!((w10ms.peak_requests_per_s - 400.0).abs() < 1e-9);
    assert!((w10ms.peak_bytes_per_s - 100_000.0).abs() < 1e-6);
    assert!((w10ms.peak_to_mean_requests.unwrap() - 80.0).abs() < 1e-9);
    assert!((w10ms.peak_to_mean_bytes.unwrap() - 100_000.0 / 2750.0).abs() < 1e-9);
    // 1 s windows from t = 1 s: [1, 2) holds 6 requests (2100 bytes), [2, 3) 2400 bytes.
    let w1s = &s.windows[2];
    assert_eq!(w1s.peak_requests_per_s, 6.0);
    assert_eq!(w1s.peak_bytes_per_s, 2400.0);
    assert!((w1s.peak_to_mean_requests.unwrap() - 1.2).abs() < 1e-12);

    let series = rate_series(&t, 1.0).unwrap();
    let per_s: Vec<f64> = series.iter().map(|p| p.requests_per_s).collect();
    assert_eq!(per_s, vec![6.0, 3.0, 1.0]);
    assert_eq!(series[1].start_s, 2.0);

    // The JSON shape the CLI prints and tests deserialize.
    let json = serde_json::to_string(&s).unwrap();
    let back: TraceStats = serde_json::from_str(&json).unwrap();
    assert_eq!((back.requests, back.size_bytes), (s.requests, s.size_bytes));
    assert_eq!(back.windows.len(), 3);
    assert!(json.contains("\"p99_9_bytes\":1000"), "{json}");
}
