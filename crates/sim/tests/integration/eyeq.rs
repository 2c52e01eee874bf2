//! EyeQ in the engine, closed-loop tenants and throughput series.
//!
//! The EyeQ scenario: two senders with 10 Gbit/s NICs (`q0`, `q1`) send to one receiver
//! whose 1 Gbit/s link (`q2`) EyeQ watches. Tenant 0 is a long-lived TCP-like connection
//! (closed loop, 8 segments of 8 KiB in flight), tenant 1 a UDP blaster offering
//! 2.5 Gbit/s of 1500-byte datagrams for 100 ms, open loop. Equal guarantees: each is
//! promised half of the link.

use crate::common::{network, req, size_workloads};
use tailbound_model::Request;
use tailbound_shaping::eyeq::EyeqConfig;
use tailbound_sim::{simulate, ClosedLoop, Excess, EyeqSim, SimConfig, SimError};

const TEN_G: f64 = 1.25e9;
const ONE_G: f64 = 1.25e8;
const MS: u64 = 1_000_000;
const SEGMENT: u64 = 8192;
const BIN: u64 = MS;

fn scenario() -> (tailbound_model::Network, Vec<Vec<Request>>) {
    let net = network(
        &[TEN_G, TEN_G, ONE_G],
        &[vec![vec![0, 2]], vec![vec![1, 2]]],
        &[0, 0],
    );
    // the TCP tenant always has data: 4000 segments (33 MB) due at 0
    let tcp = (0..4000).map(|_| req(0, SEGMENT)).collect();
    // the blaster: 2.5 Gbit/s = one 1500 B datagram every 4.8 µs, for 100 ms
    let blaster = (0..20_833).map(|i| req(i * 4_800, 1500)).collect();
    (net, vec![tcp, blaster])
}

fn config(eyeq: bool) -> SimConfig {
    SimConfig {
        closed_loop: vec![
            Some(ClosedLoop {
                window: 8,
                ack_delay_ns: 50_000,
            }),
            None,
        ],
        throughput_bin_ns: Some(BIN),
        eyeq: eyeq.then(|| EyeqSim {
            config: EyeqConfig::new(ONE_G),
            receivers: vec![2],
            weights: vec![1.0, 1.0],
            feedback_delay_ns: 10_000,
        }),
        ..SimConfig::default()
    }
}

/// Mean delivered rate of `series` over bins `[from, to)` [bytes/s].
fn rate(series: &[u64], from: usize, to: usize) -> f64 {
    let bytes: u64 = series.iter().skip(from).take(to - from).sum();
    bytes as f64 / ((to - from) as f64 * BIN as f64 / 1e9)
}

#[test]
fn eyeq_gives_the_tcp_tenant_its_share_against_a_blaster() {
    let (net, reqs) = scenario();
    let w = size_workloads(&net, &reqs);
    let guarantee = ONE_G / 2.0;
    let fair = 0.98 * guarantee;
    // while the blaster is on, after EyeQ's first 10 ms (the blaster's unlimited first
    // intervals leave a queue that drains at the 2 % headroom)
    let none = simulate(&net, &w, &config(false)).unwrap();
    let with = simulate(&net, &w, &config(true)).unwrap();
    let tcp_none = rate(&none.throughput[0], 10, 100);
    let tcp_eyeq = rate(&with.throughput[0], 10, 100);
    let blaster_eyeq = rate(&with.throughput[1], 10, 100);
    // without EyeQ the blaster's backlog fills the FIFO and the window-limited connection
    // gets a small fraction of its share
    assert!(
        tcp_none < 0.2 * guarantee,
        "without EyeQ: {tcp_none:.3e} B/s"
    );
    assert!(tcp_eyeq >= 0.9 * guarantee, "with EyeQ: {tcp_eyeq:.3e} B/s");
    assert!(
        (blaster_eyeq - fair).abs() <= 0.05 * fair,
        "blaster: {blaster_eyeq:.3e}"
    );
    // feedback went back and forth, and every byte was delivered in the end
    let stats = with.eyeq[0].stats;
    assert_eq!(with.eyeq[0].queue, "q2");
    assert!(stats.limits > 100, "{stats:?}");
    assert_eq!(
        with.throughput[1].iter().sum::<u64>(),
        20_833 * 1500,
        "the blaster's datagrams all arrive"
    );
    assert_eq!(with.throughput[0].iter().sum::<u64>(), 4000 * SEGMENT);
}

#[test]
fn without_contention_eyeq_changes_nothing() {
    // the blaster alone at 40 % of the link: never congested, never limited, so the run is
    // identical with and without EyeQ
    let net = network(&[TEN_G, ONE_G], &[vec![vec![0, 1]]], &[0]);
    let reqs = vec![(0..2000).map(|i| req(i * 30_000, 1500)).collect::<Vec<_>>()];
    let w = size_workloads(&net, &reqs);
    let mut cfg = SimConfig::default();
    let plain = simulate(&net, &w, &cfg).unwrap();
    cfg.eyeq = Some(EyeqSim {
        config: EyeqConfig::new(ONE_G),
        receivers: vec![1],
        weights: vec![1.0],
        feedback_delay_ns: 10_000,
    });
    let with = simulate(&net, &w, &cfg).unwrap();
    assert_eq!(plain.tenants[0].latencies_ns, with.tenants[0].latencies_ns);
    assert_eq!(with.eyeq[0].stats.limits, 0);
    assert!(with.eyeq[0].stats.intervals >= 290);
}

#[test]
fn a_closed_loop_window_of_one_serializes_requests() {
    // 1000 B on a 1 MB/s queue take 1 ms; window 1 with a 0.5 ms ack delay: the second
    // request enters at 1.5 ms, the third at 3 ms, all due at 0
    let net = network(&[1e6], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 1000), req(0, 1000), req(0, 1000)]];
    let cfg = SimConfig {
        closed_loop: vec![Some(ClosedLoop {
            window: 1,
            ack_delay_ns: 500_000,
        })],
        throughput_bin_ns: Some(MS),
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    assert_eq!(r.tenants[0].latencies_ns, vec![MS, 2_500_000, 4_000_000]);
    // delivered in MTU chunks of the 1000 B: bins [0,1) [1,2) ... by departure time
    assert_eq!(r.throughput[0].iter().sum::<u64>(), 3000);
    assert_eq!(r.throughput[0], vec![0, 1000, 1000, 0, 1000]);
}

#[test]
fn eyeq_and_window_settings_are_checked() {
    let (net, reqs) = scenario();
    let w = size_workloads(&net, &reqs);
    let mut cfg = config(true);
    cfg.excess = Excess::BestEffort;
    assert_eq!(simulate(&net, &w, &cfg).unwrap_err(), SimError::EyeqExcess);
    let mut cfg = config(true);
    cfg.eyeq.as_mut().unwrap().receivers = vec![9];
    let e = simulate(&net, &w, &cfg).unwrap_err();
    assert_eq!(
        e,
        SimError::EyeqQueue {
            index: 9,
            queues: 3
        }
    );
    let mut cfg = config(true);
    cfg.eyeq.as_mut().unwrap().receivers = vec![0, 2];
    let e = simulate(&net, &w, &cfg).unwrap_err();
    assert!(matches!(e, SimError::EyeqTwoReceivers { .. }), "{e}");
    let mut cfg = config(true);
    cfg.eyeq.as_mut().unwrap().weights = vec![1.0, -1.0];
    let e = simulate(&net, &w, &cfg).unwrap_err();
    assert!(e.to_string().contains("weight -1"), "{e}");
    let mut cfg = config(false);
    cfg.closed_loop[0] = Some(ClosedLoop {
        window: 0,
        ack_delay_ns: 0,
    });
    assert_eq!(
        simulate(&net, &w, &cfg).unwrap_err(),
        SimError::ClosedLoopWindow("t0".into())
    );
    let mut cfg = config(false);
    cfg.throughput_bin_ns = Some(0);
    assert_eq!(
        simulate(&net, &w, &cfg).unwrap_err(),
        SimError::ThroughputBin
    );
}

#[test]
fn a_full_shaper_queue_drops_open_loop_requests_only() {
    // ten 1000 B requests at 0 behind a 1000 B/s bucket (burst 1000 B) with room for 3000 B:
    // the first passes, three wait, six are dropped; a closed-loop tenant is never dropped
    let net = network(&[1e6], &[vec![vec![0]]], &[0]);
    let reqs = vec![(0..10).map(|_| req(0, 1000)).collect::<Vec<_>>()];
    let w = size_workloads(&net, &reqs);
    let mut cfg = SimConfig {
        shapers: vec![vec![tailbound_model::Bucket {
            rate: 1000.0,
            burst: 1000.0,
        }]],
        shaper_queue_bytes: Some(3000.0),
        throughput_bin_ns: Some(1_000_000_000),
        ..SimConfig::default()
    };
    let r = simulate(&net, &w, &cfg).unwrap();
    let t = &r.tenants[0];
    assert_eq!((t.requests, t.dropped, t.bytes), (4, 6, 4000));
    assert_eq!(
        t.latencies_ns,
        vec![MS, 1_001_000_000, 2_001_000_000, 3_001_000_000]
    );
    assert_eq!(r.throughput[0].iter().sum::<u64>(), 4000);
    cfg.closed_loop = vec![Some(ClosedLoop {
        window: 10,
        ack_delay_ns: 0,
    })];
    let r = simulate(&net, &w, &cfg).unwrap();
    assert_eq!((r.tenants[0].requests, r.tenants[0].dropped), (10, 0));
    cfg.shaper_queue_bytes = Some(f64::NAN);
    assert!(matches!(
        simulate(&net, &w, &cfg),
        Err(SimError::ShaperQueue(_))
    ));
}
