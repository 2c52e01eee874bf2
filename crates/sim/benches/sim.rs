//! `sim_chunk_events`: events per second of the engine on a synthetic cluster — 12 hosts with
//! 10 Gbit/s NICs (one out and one in queue each), 48 key-value tenants on 4 priority levels,
//! Poisson arrivals, exponential value sizes (mean 8 KiB), 1500-byte chunks, request and
//! response flows of two hops each, about 55% load on the busiest NIC. Criterion's
//! throughput line reads "elem/s" = events/s.
//!
//! `sim_replay_180_tenants`: the issue-4 acceptance workload — 180 tenants replaying 300 s of
//! the second halves of the shared production traces (`shared/traces/msr-production`, cycled,
//! later copies shifted in time) through 12 hosts' 1 Gbit/s NICs, request and response flows
//! with the papers' network costs, 4 priority levels, 1500-byte chunks. Skipped when the
//! shared traces are not on this machine.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp};
use tailbound_curves::NetworkCost;
use tailbound_model::{FlowModels, Network, NetworkBuilder, NewTenant, Op, Request, Slo, Stage};
use tailbound_sim::{simulate, SimConfig, TenantWorkload};

/// `hosts` hosts `h<i>` with NICs of `nic` [bytes/s], and per tenant `(client, server, slo,
/// priority)` its request and response flows.
fn star(hosts: usize, nic: f64, tenants: &[(usize, usize, f64, Option<u32>)]) -> Network {
    let mut b = NetworkBuilder::new();
    for h in 0..hosts {
        b.host(format!("h{h}"), nic, None);
    }
    for (t, &(client, server, slo_s, priority)) in tenants.iter().enumerate() {
        let spec = NewTenant {
            priority,
            ..NewTenant::new(format!("t{t}"), Slo::new(slo_s, 99.9).unwrap())
                .between(client, server)
        };
        let id = b.tenant(spec);
        for stage in [Stage::NetIn, Stage::NetOut] {
            b.flow(id, stage, FlowModels::default())
                .expect("hosts exist");
        }
    }
    b.build().expect("a valid cluster")
}

const HOSTS: usize = 12;
const TENANTS: usize = 48;
const NIC: f64 = 1.25e9; // [bytes/s]
const SECONDS: f64 = 0.25;

fn cluster() -> (Network, Vec<Vec<Request>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut tenants = Vec::new();
    let mut reqs = Vec::new();
    for t in 0..TENANTS {
        let client = t % HOSTS;
        let server = (t * 7 + 5) % HOSTS;
        let server = if server == client {
            (server + 1) % HOSTS
        } else {
            server
        };
        tenants.push((client, server, 0.01, Some((t % 4) as u32)));
        // 4 tenants per host share its NIC: 4 · λ · 1.1 · 8 KiB ≈ 0.55 · NIC
        let lambda = 0.55 * NIC / (4.0 * 1.1 * 8192.0);
        let gap = Exp::new(lambda).unwrap();
        let size = Exp::new(1.0 / 8192.0).unwrap();
        let mut t_s: f64 = 0.0;
        let mut v = Vec::new();
        loop {
            t_s += gap.sample(&mut rng);
            if t_s > SECONDS {
                break;
            }
            v.push(Request {
                arrival_ns: (t_s * 1e9) as u64,
                size_bytes: (size.sample(&mut rng) as u64).max(1),
                op: if rng.gen_bool(0.9) { Op::Get } else { Op::Put },
            });
        }
        reqs.push(v);
    }
    (star(HOSTS, NIC, &tenants), reqs)
}

/// 180 tenants on 12 hosts replaying 300 s of the shared traces; `None` without them.
fn replay_180() -> Option<(Network, Vec<Vec<Request>>)> {
    tailbound_testdata::try_shared_dir()?;
    let traces: Vec<Vec<Request>> =
        tailbound_trace::list_traces(&tailbound_testdata::production_dir())
            .ok()?
            .iter()
            .map(|p| {
                let t = tailbound_trace::read_trace(p).expect("shared trace reads");
                tailbound_trace::split(&t, 0.5)
                    .expect("trace splits")
                    .1
                    .requests
            })
            .collect();
    if traces.is_empty() {
        return None;
    }
    let hosts = 12;
    let gbit = 125e6; // [bytes/s]
    let mut tenants = Vec::new();
    let mut reqs = Vec::new();
    for t in 0..180 {
        let client = t % hosts;
        let server = (client + 1 + (t / hosts) % (hosts - 1)) % hosts;
        tenants.push((client, server, [0.01, 0.02, 0.05, 0.1][t % 4], None));
        // copies of the same trace start 13 s apart, wrapped into the 300-s window
        let shift = (t / traces.len()) as u64 * 13_000_000_000;
        let window = 300_000_000_000u64;
        let trace = &traces[t % traces.len()];
        let mut v: Vec<Request> = trace
            .iter()
            .filter(|r| r.arrival_ns < window)
            .map(|r| Request {
                arrival_ns: (r.arrival_ns + shift) % window,
                ..*r
            })
            .collect();
        v.sort_by_key(|r| r.arrival_ns);
        reqs.push(v);
    }
    Some((star(hosts, gbit, &tenants), reqs))
}

fn bench(c: &mut Criterion) {
    let (net, reqs) = cluster();
    let req_dir = NetworkCost::REQUEST_DIRECTION;
    let resp_dir = NetworkCost::RESPONSE_DIRECTION;
    let w: Vec<_> = reqs
        .iter()
        .map(|r| TenantWorkload {
            requests: r,
            works: vec![&req_dir, &resp_dir],
        })
        .collect();
    let cfg = SimConfig::default();
    let events = simulate(&net, &w, &cfg)
        .expect("valid synthetic cluster")
        .events;
    let requests: usize = reqs.iter().map(Vec::len).sum();
    eprintln!("sim_chunk_events: {requests} requests, {events} events per run");
    let mut g = c.benchmark_group("sim");
    g.sample_size(10);
    g.throughput(Throughput::Elements(events));
    g.bench_function("sim_chunk_events", |b| {
        b.iter(|| simulate(&net, &w, &cfg).expect("valid").events)
    });
    if let Some((net, reqs)) = replay_180() {
        let w: Vec<_> = reqs
            .iter()
            .map(|r| TenantWorkload {
                requests: r,
                works: vec![&req_dir, &resp_dir],
            })
            .collect();
        let events = simulate(&net, &w, &cfg).expect("valid replay").events;
        let requests: usize = reqs.iter().map(Vec::len).sum();
        eprintln!("sim_replay_180_tenants: {requests} requests, {events} events per run");
        g.throughput(Throughput::Elements(events));
        g.bench_function("sim_replay_180_tenants", |b| {
            b.iter(|| simulate(&net, &w, &cfg).expect("valid").events)
        });
    } else {
        eprintln!("sim_replay_180_tenants: shared traces not found, skipped");
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
