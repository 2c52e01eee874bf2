//! Replaying a real production trace (skipped when `shared/traces` is absent): every request
//! completes, bytes add up, and with fractional per-request work (the papers' network costs)
//! busy time matches work / rate up to the documented ½ ns rounding per unit.

use tailbound_curves::NetworkCost;
use tailbound_sim::{simulate, SimConfig, TenantWorkload};

use crate::common::network;

#[test]
fn production_trace_replays_with_conserved_work() {
    if tailbound_testdata::try_shared_dir().is_none() {
        eprintln!("shared traces not found; skipped");
        return;
    }
    let trace = tailbound_trace::read_trace(&tailbound_testdata::production("trace0000.csv"))
        .expect("shared trace reads");
    let replay = tailbound_trace::split(&trace, 0.5)
        .expect("splits")
        .1
        .requests;
    // client-out → server-in, then server-out → client-in, 1 Gbit/s
    let gbit = 125e6;
    let net = network(&[gbit; 4], &[vec![vec![0, 1], vec![2, 3]]], &[0]);
    let (req_dir, resp_dir) = (
        NetworkCost::REQUEST_DIRECTION,
        NetworkCost::RESPONSE_DIRECTION,
    );
    let w = [TenantWorkload {
        requests: &replay,
        works: vec![&req_dir, &resp_dir],
    }];
    let r = simulate(&net, &w, &SimConfig::default()).unwrap();
    let t = &r.tenants[0];
    assert_eq!(t.requests, replay.len() as u64);
    assert_eq!(t.bytes, replay.iter().map(|q| q.size_bytes).sum::<u64>());
    assert!(t.p50_s <= t.p99_s && t.p99_s <= t.p999_s && t.p999_s <= t.max_s);
    assert!(!t.windows.is_empty());
    for q in &r.queues {
        let exact_ns = q.work / gbit * 1e9;
        let slack = 0.5 * q.chunks as f64 + 1.0;
        assert!(
            (q.busy_ns as f64 - exact_ns).abs() <= slack,
            "{}: busy {} ns, work/rate {exact_ns} ns",
            q.name,
            q.busy_ns
        );
    }
    // a hop forwards exactly what it served
    assert_eq!(r.queues[0].chunks, r.queues[1].chunks);
    assert_eq!(r.queues[0].work, r.queues[1].work);
    // the smallest latency is at least the smallest request's own transmission on 4 hops
    let min_work = replay
        .iter()
        .map(|q| {
            use tailbound_curves::WorkFunction;
            req_dir.work(q).min(1500.0) + resp_dir.work(q).min(1500.0)
        })
        .fold(f64::INFINITY, f64::min);
    assert!(t.latencies_ns[0] as f64 >= 2.0 * min_work / gbit * 1e9 - 2.0);
}
