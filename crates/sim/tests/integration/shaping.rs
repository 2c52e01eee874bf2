//! Source shapers: requests wait FIFO for the token bucket, and the wait counts in latency.

use crate::common::{network, req, size_workloads};
use tailbound_model::Bucket;
use tailbound_sim::{simulate, SimConfig, SimError};

#[test]
fn bucket_spaces_a_burst_at_its_rate() {
    // bucket 1 MB/s with a 1000 B burst; link 1 GB/s (1000 B = 1 µs). Three 1000-B requests
    // at t = 0 pass at 0, 1 ms and 2 ms.
    let net = network(&[1e9], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 1000), req(0, 1000), req(0, 1000)]];
    let cfg = SimConfig {
        shapers: vec![vec![Bucket {
            rate: 1e6,
            burst: 1000.0,
        }]],
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
        shapers: vec![vec![Bucket {
            rate: 0.0,
            burst: 1000.0,
        }]],
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
        shapers: vec![vec![Bucket {
            rate: 1e6,
            burst: 1000.0,
        }]],
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
        shapers: vec![vec![Bucket {
            rate: 1e-12,
            burst: 1.0,
        }]],
        ..SimConfig::default()
    };
    let err = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap_err();
    assert!(
        matches!(err, SimError::ShaperStall { index: 1, .. }),
        "{err}"
    );
}

#[test]
fn several_buckets_on_a_flow_release_by_the_tightest_of_them() {
    // 100 requests of 1000 B at t = 0 behind A = (1 MB/s, 10 kB) and B = (100 kB/s, 50 kB):
    // ten pass at once (A's burst), the 11th waits 1 ms for A, and the last waits for B to
    // have refilled 50 kB: 0.5 s. Either bucket alone would end sooner (A: 90 ms, B: 0.5 s
    // but with 50 passing at once).
    let net = network(&[1e9], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 1000); 100]];
    let a = Bucket {
        rate: 1e6,
        burst: 10_000.0,
    };
    let b = Bucket {
        rate: 1e5,
        burst: 50_000.0,
    };
    let run = |buckets: Vec<Bucket>| {
        let cfg = SimConfig {
            shapers: vec![buckets],
            ..SimConfig::default()
        };
        let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
        r.tenants[0].latencies_ns.clone()
    };
    let both = run(vec![a, b]);
    // latencies are sorted; the link adds 1 µs per request served back to back
    assert!(both[9] < 20_000, "{}", both[9]);
    assert!((1_000_000..1_020_000).contains(&both[10]), "{}", both[10]);
    let last = *both.last().unwrap();
    assert!((500_000_000..500_010_000).contains(&last), "{last}");
    let only_a = run(vec![a]);
    let only_b = run(vec![b]);
    assert!(*only_a.last().unwrap() < 100_000_000);
    assert!(only_b[49] < 100_000, "{}", only_b[49]);
    assert!(
        both[49] > 10_000_000,
        "A still spaces requests 11..50: {}",
        both[49]
    );
}

#[test]
fn best_effort_excess_goes_on_at_once_below_every_tenant() {
    use tailbound_sim::Excess;
    // A (level 0) shaped to one 1000-B request per ms; B (level 1) unshaped. At t = 0 A sends
    // three requests and B one, all 1000 B on a 1 GB/s link (1 µs each).
    let net = network(&[1e9], &[vec![vec![0]], vec![vec![0]]], &[0, 1]);
    let reqs = vec![
        vec![req(0, 1000), req(0, 1000), req(0, 1000)],
        vec![req(0, 1000)],
    ];
    let bucket = Bucket {
        rate: 1e6,
        burst: 1000.0,
    };
    let run = |excess| {
        let cfg = SimConfig {
            shapers: vec![vec![bucket], Vec::new()],
            excess,
            ..SimConfig::default()
        };
        simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap()
    };
    let strict = run(Excess::Wait);
    assert_eq!(
        strict.tenants[0].latencies_ns,
        vec![1_000, 1_001_000, 2_001_000]
    );
    let be = run(Excess::BestEffort);
    // A's first request conforms (1 µs); B at level 1 goes next (2 µs); A's two excess
    // requests follow at the best-effort level (3 and 4 µs), not 1 and 2 ms later
    assert_eq!(be.tenants[0].latencies_ns, vec![1_000, 3_000, 4_000]);
    assert_eq!(be.tenants[1].latencies_ns, vec![2_000]);
    // tokens were not taken by the excess: at 1.1 ms A conforms again and overtakes a
    // queue of B's requests, where best-effort excess would wait behind all five
    let reqs = vec![
        vec![req(0, 1000), req(0, 1000), req(1_100_100, 1000)],
        vec![req(1_100_000, 1000); 5],
    ];
    let cfg = SimConfig {
        shapers: vec![vec![bucket], Vec::new()],
        excess: Excess::BestEffort,
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    // B's first is in service until 1.101 ms; A's third goes next: 1.9 µs
    assert_eq!(r.tenants[0].latencies_ns, vec![1_000, 1_900, 2_000]);
    assert_eq!(*r.tenants[1].latencies_ns.last().unwrap(), 6_000);
}

#[test]
fn best_effort_excess_is_promoted_to_its_level_when_its_tokens_come() {
    use tailbound_sim::Excess;
    // A (level 0) shaped to 1000 B per ms with a 1000-B burst sends two 1000-B requests at
    // t = 0; B (level 1, unshaped) sends a thousand 1700-B requests at t = 0 (1.7 µs each on
    // the 1 GB/s link, 1.7 ms in all). A's first conforms (0–1 µs); its second is excess and
    // goes on at best effort, behind B's queue. At 1 ms its tokens are there: as with HTB it
    // moves to A's level and is served at the next chunk boundary of B's request then in
    // service (MTU 1500: B's 588th request is cut at 1.0004 ms), not after all of B's
    // (1.702 ms).
    let net = network(&[1e9], &[vec![vec![0]], vec![vec![0]]], &[0, 1]);
    let reqs = vec![vec![req(0, 1000), req(0, 1000)], vec![req(0, 1700); 1000]];
    let cfg = SimConfig {
        shapers: vec![
            vec![Bucket {
                rate: 1e6,
                burst: 1000.0,
            }],
            Vec::new(),
        ],
        excess: Excess::BestEffort,
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    assert_eq!(r.tenants[0].latencies_ns, vec![1_000, 1_001_400]);
    assert_eq!(*r.tenants[1].latencies_ns.last().unwrap(), 1_702_000);
    // B's conforming traffic is never behind more than A's bucket allows: strict limiting
    // gives B the same completion
    let strict = simulate(
        &net,
        &size_workloads(&net, &reqs),
        &SimConfig {
            excess: Excess::Wait,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_eq!(strict.tenants[0].latencies_ns, vec![1_000, 1_001_400]);
    assert_eq!(*strict.tenants[1].latencies_ns.last().unwrap(), 1_702_000);
}
