//! Chunked store-and-forward pipelining versus whole-request service, and stage sequencing.

use crate::common::{network, req, size_workloads};
use tailbound_sim::{simulate, SimConfig, Transmission};

const RATE: f64 = 1e6; // 1 B = 1 µs

fn alone(paths: Vec<Vec<usize>>, rates: &[f64], size: u64, transmission: Transmission) -> u64 {
    let net = network(rates, &[paths], &[0]);
    let reqs = vec![vec![req(1_000, size)]];
    let cfg = SimConfig {
        transmission,
        ..SimConfig::default()
    };
    let r = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    r.tenants[0].latencies_ns[0]
}

#[test]
fn chunks_pipeline_across_two_hops() {
    // S = 6000 B, mtu 1500 B, R = 1 MB/s: S/R + (2 − 1)·mtu/R = 6 ms + 1.5 ms
    let chunked = alone(
        vec![vec![0, 1]],
        &[RATE, RATE],
        6000,
        Transmission::Chunked { mtu_bytes: 1500 },
    );
    assert_eq!(chunked, 7_500_000);
    // a partial last chunk: S = 5000 B → chunks 1500, 1500, 1500, 500 leave hop 1 at 1.5, 3,
    // 4.5 and 5 ms; at hop 2 the last waits for the third (4.5–6 ms), then takes 0.5 ms
    let partial = alone(
        vec![vec![0, 1]],
        &[RATE, RATE],
        5000,
        Transmission::Chunked { mtu_bytes: 1500 },
    );
    assert_eq!(partial, 6_500_000);
    // fluid: whole-request store-and-forward, 2·S/R
    let fluid = alone(vec![vec![0, 1]], &[RATE, RATE], 6000, Transmission::Fluid);
    assert_eq!(fluid, 12_000_000);
}

#[test]
fn a_slower_second_hop_is_the_bottleneck() {
    // hop 2 at R/2: chunks of 1 ms then 2 ms each; 4 chunks → 1 ms + 4·2 ms
    let l = alone(
        vec![vec![0, 1]],
        &[RATE, RATE / 2.0],
        4000,
        Transmission::Chunked { mtu_bytes: 1000 },
    );
    assert_eq!(l, 9_000_000);
}

#[test]
fn stages_run_one_after_the_other() {
    // request stage on q0 then response stage on q1 (different queues): the response starts
    // when the request's last chunk is out, so no pipelining across stages
    let l = alone(
        vec![vec![0], vec![1]],
        &[RATE, RATE],
        4000,
        Transmission::Chunked { mtu_bytes: 1000 },
    );
    assert_eq!(l, 8_000_000);
}

/// 2 ms of device time per request [busy-s].
struct TwoMs;

impl tailbound_curves::WorkFunction for TwoMs {
    fn work(&self, _: &tailbound_model::Request) -> f64 {
        2e-3
    }
    fn unit(&self) -> &'static str {
        "busy-s"
    }
}

#[test]
fn storage_stage_serves_whole_requests_between_link_stages() {
    use tailbound_sim::{SizeWork, TenantWorkload};
    // q0 link (req), q1 storage at rate 1 busy-s/s, q2 link (resp); mtu 500 B
    let mut net = network(&[RATE, 1.0, RATE], &[vec![vec![0], vec![1], vec![2]]], &[0]);
    net.flows[1].stage = tailbound_model::Stage::Storage;
    let reqs = [req(0, 1000), req(0, 1000)];
    let w = [TenantWorkload {
        requests: &reqs,
        works: vec![&SizeWork, &TwoMs, &SizeWork],
    }];
    let cfg = SimConfig {
        transmission: Transmission::Chunked { mtu_bytes: 500 },
        ..SimConfig::default()
    };
    let r = simulate(&net, &w, &cfg).unwrap();
    // first: req 0–1 ms, storage 1–3 ms, resp 3–4 ms; second: req 1–2 ms, storage 3–5 ms,
    // resp 5–6 ms
    assert_eq!(r.tenants[0].latencies_ns, vec![4_000_000, 6_000_000]);
    assert_eq!(r.queues[1].chunks, 2);
    assert_eq!(r.queues[1].busy_ns, 4_000_000);
    assert_eq!(r.queues[0].chunks, 4);
}
