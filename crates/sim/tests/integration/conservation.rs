//! Work conservation: a queue is busy exactly as long as its work requires, and departures
//! follow a hand-computed script.

use crate::common::{exp_size, network, poisson, req, size_workloads};
use tailbound_sim::{simulate, SimConfig, Transmission};

/// rate 1e6 bytes/s: one byte takes 1 µs
const RATE: f64 = 1e6;

#[test]
fn hand_script_fluid_and_chunked_agree() {
    // 1000 B at 0 (1 ms), 2000 B at 0.5 ms (2 ms), 500 B at 5 ms (0.5 ms):
    // departures at 1, 3 and 5.5 ms; latencies 1, 2.5, 0.5 ms; busy 3.5 ms.
    let net = network(&[RATE], &[vec![vec![0]]], &[0]);
    let reqs = vec![vec![req(0, 1000), req(500_000, 2000), req(5_000_000, 500)]];
    for transmission in [
        Transmission::Fluid,
        Transmission::Chunked { mtu_bytes: 1000 },
    ] {
        let cfg = SimConfig {
            transmission,
            ..SimConfig::default()
        };
        let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
        let q = &r.queues[0];
        assert_eq!(q.busy_ns, 3_500_000, "{transmission:?}");
        assert_eq!(q.last_departure_ns, 5_500_000, "{transmission:?}");
        assert_eq!(q.work, 3500.0);
        assert_eq!(
            r.tenants[0].latencies_ns,
            vec![500_000, 1_000_000, 2_500_000]
        );
        assert_eq!(r.tenants[0].bytes, 3500);
        assert_eq!(r.end_ns, 5_500_000);
    }
}

#[test]
fn busy_time_equals_work_over_rate_under_priority_and_chunking() {
    // three tenants, mixed priorities, two hops; every chunk's service is a whole number of
    // ns (1 B = 1 µs), so busy time must equal work / rate exactly at both queues
    let net = network(
        &[RATE, RATE],
        &[vec![vec![0, 1]], vec![vec![0, 1]], vec![vec![1]]],
        &[2, 0, 1],
    );
    let reqs: Vec<_> = (0..3)
        .map(|t| poisson(10 + t, 2_000, 150.0, exp_size(1000.0)))
        .collect();
    let cfg = SimConfig {
        transmission: Transmission::Chunked { mtu_bytes: 300 },
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    let bytes = |t: usize| reqs[t].iter().map(|q| q.size_bytes).sum::<u64>();
    let q0 = bytes(0) + bytes(1);
    let q1 = q0 + bytes(2);
    assert_eq!(r.queues[0].busy_ns, q0 * 1000);
    assert_eq!(r.queues[1].busy_ns, q1 * 1000);
    assert_eq!(r.queues[1].work, q1 as f64);
    // every request finished, each no faster than its own work on its path
    for (t, res) in r.tenants.iter().enumerate() {
        assert_eq!(res.requests, 2_000);
        let min = reqs[t]
            .iter()
            .map(|q| q.size_bytes.min(300) * 1000)
            .min()
            .unwrap();
        assert!(res.latencies_ns[0] >= min);
    }
}

#[test]
fn strict_priority_preempts_at_chunk_boundaries_only() {
    // low (level 1): 3000 B at 0; high (level 0): 1000 B at 0.5 ms. Chunks of 1000 B = 1 ms.
    let net = network(&[RATE], &[vec![vec![0]], vec![vec![0]]], &[1, 0]);
    let reqs = vec![vec![req(0, 3000)], vec![req(500_000, 1000)]];
    let lat = |transmission| {
        let cfg = SimConfig {
            transmission,
            ..SimConfig::default()
        };
        let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
        (r.tenants[0].latencies_ns[0], r.tenants[1].latencies_ns[0])
    };
    // chunked: low chunk 0–1 ms, high 1–2 ms, low 2–4 ms
    assert_eq!(
        lat(Transmission::Chunked { mtu_bytes: 1000 }),
        (4_000_000, 1_500_000)
    );
    // fluid: low 0–3 ms, high 3–4 ms
    assert_eq!(lat(Transmission::Fluid), (3_000_000, 3_500_000));
}
