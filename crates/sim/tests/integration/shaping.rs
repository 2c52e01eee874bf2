//! Source shapers: requests wait FIFO for the token bucket, and the wait counts in latency.

use crate::common::{network, req, size_workloads};
use tailbound_sim::{simulate, SimConfig, SimError, StageShaping};

#[test]
fn bucket_spaces_a_burst_at_its_rate() {
    // bucket 1 MB/s with a 1000 B burst; link 1 GB/s (1000 B = 1 µs). Three 1000-B requests
    // at t = 0 pass at 0, 1 ms and 2 ms.
    let net = network(&[1e9], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 1000), req(0, 1000), req(0, 1000)]];
    let cfg = SimConfig {
        shapers: vec![Some(StageShaping {
            rate: 1e6,
            burst: 1000.0,
        })],
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    assert_eq!(r.tenants[0].latencies_ns, vec![1_000, 1_001_000, 2_001_000]);
}

#[test]
fn bad_shaper_names_the_flow() {
    let net = network(&[1e9], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 1000)]];
    let cfg = SimConfig {
        shapers: vec![Some(StageShaping {
            rate: 0.0,
            burst: 1000.0,
        })],
        ..SimConfig::default()
    };
    let err = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap_err();
    assert!(matches!(err, SimError::Shaper { .. }));
    assert!(err.to_string().contains("t0-s0"), "{err}");
}

#[test]
fn request_above_the_burst_waits_for_a_full_bucket_and_leaves_a_deficit() {
    // burst 1000 B at 1 MB/s; a 3000-B request passes at once (bucket full) and leaves −2000;
    // the next 1000-B request waits 3 ms for the bucket to hold 1000 again
    let net = network(&[1e9], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 3000), req(0, 1000)]];
    let cfg = SimConfig {
        shapers: vec![Some(StageShaping {
            rate: 1e6,
            burst: 1000.0,
        })],
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    assert_eq!(r.tenants[0].latencies_ns, vec![3_000, 3_001_000]);
}

#[test]
fn a_shaper_that_would_never_release_is_an_error_not_a_hang() {
    let net = network(&[1e9], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 2), req(0, 2)]];
    let cfg = SimConfig {
        shapers: vec![Some(StageShaping {
            rate: 1e-12,
            burst: 1.0,
        })],
        ..SimConfig::default()
    };
    let err = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap_err();
    assert!(
        matches!(err, SimError::ShaperStall { index: 1, .. }),
        "{err}"
    );
}
