//! The cost of one decision (a what-if arrival: everything an arrival computes, without the
//! commit) with `n` tenants admitted on `s` servers, each server with its own client host.
//! The admitted tenants are restored from rows, not decided, so setting up is cheap.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::json;
use tailbound_admission::Policy;
use tailbound_model::{FlowModels, Mmpp, Slo, Stage};
use tailbound_service::api::{DecisionKind, HostView};
use tailbound_service::engine::{Candidate, Engine, TenantRecord};
use tailbound_service::store::TenantRow;

/// A one-state MMPP: `per_s` requests/s of exponential work with mean `mean` [bytes].
fn mmpp(per_s: f64, mean: f64) -> Mmpp {
    serde_json::from_value(json!({
        "step_s": 1e-5, "interval_s": 1.0,
        "states": [{"rate_per_s": per_s, "arrival_prob": per_s * 1e-5,
            "sizes": {"type": "exponential", "mean": mean},
            "intervals": 100, "requests": (per_s * 100.0) as u64, "work": per_s * 100.0 * mean}],
        "transition": [[1.0]]
    }))
    .unwrap()
}

fn record(i: usize, servers: usize) -> TenantRecord {
    let k = i % servers;
    let flow = |per_s, mean| FlowModels {
        mmpp: Some(mmpp(per_s, mean)),
        arrival: None,
    };
    TenantRecord {
        name: format!("t{i}"),
        client: format!("c{k}"),
        server: format!("s{k}"),
        placed: false,
        slo: Slo::new([0.01, 0.02, 0.05][i % 3], 99.9).unwrap(),
        storage: false,
        depends_on: Vec::new(),
        flows: vec![
            (Stage::NetIn, flow(100.0, 500.0)),
            (Stage::NetOut, flow(100.0, 10_000.0)),
        ],
        group: None,
        admitted_bound_s: None,
    }
}

fn engine(tenants: usize, servers: usize) -> Engine {
    let mut hosts = Vec::new();
    for k in 0..servers {
        for name in [format!("s{k}"), format!("c{k}")] {
            hosts.push(HostView {
                name,
                link_bytes_per_s: 125e6,
                storage_rate: None,
            });
        }
    }
    let grant = json!({"level": 0, "buckets": [[], []], "shaper_delay_s": 0.0}).to_string();
    let rows = (0..tenants)
        .map(|i| TenantRow {
            seq: i as u64 + 1,
            name: format!("t{i}"),
            record: serde_json::to_string(&record(i, servers)).unwrap(),
            grant: grant.clone(),
            token_sha256: format!("{i}"),
        })
        .collect();
    Engine::load(Policy::SncMeister, hosts, rows, Vec::new(), tenants as u64).unwrap()
}

fn decide(c: &mut Criterion) {
    let mut g = c.benchmark_group("what_if_arrival");
    g.sample_size(10);
    for (tenants, servers) in [(100, 10), (1000, 100)] {
        let mut e = engine(tenants, servers);
        let cand = Candidate {
            record: record(tenants, servers),
            workload: None,
        };
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{tenants}_tenants_{servers}_servers")),
            &cand,
            |b, cand| {
                b.iter(|| {
                    e.propose_arrival(cand, DecisionKind::WhatIf, "", 0)
                        .unwrap()
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, decide);
criterion_main!(benches);
