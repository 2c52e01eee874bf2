//! Bound computation time: re-checking every tenant after one arrival, as admission control
//! does. `snc_bound_<n>_tenants`: n tenants spread over 6 server hosts and 4 client hosts,
//! each with a request flow (client-out → server-in) and a response flow (server-out →
//! client-in), 2–3 state per-10 µs MMPPs, SLOs p99.9 of {10, 20, 50, 100} ms (4 priority
//! levels); SNC-Meister's analysis with the default (Brent) θ search, on one core, and the
//! martingale analysis (`martingale_bound_<n>_tenants`) beside it: `cold` clears its
//! per-thread envelope cache before every iteration (a first decision), `warm` keeps it (the
//! admission engine's later decisions re-bound flows it has seen).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::hint::black_box;
use tailbound_calculus::{bound_all, BoundOptions, Method, ThetaSearch};
use tailbound_model::{
    FlowModels, Mmpp, MmppState, Network, NetworkBuilder, NewTenant, SizeModel, Slo, Stage,
};

const STEP_S: f64 = 1e-5;
const GBPS: f64 = 125e6;
const SERVERS: usize = 6;
const CLIENTS: usize = 4;

/// A per-10 µs MMPP with `states` states: base request rate [req/s], burst states at 2× and
/// 3.5×, mean sizes [bytes]; bursts last ~0.1–0.3 s and come every ~1–3 s.
fn mmpp(rng: &mut ChaCha8Rng, states: usize, base_per_s: f64, mean: f64) -> Mmpp {
    let mult = [1.0, 2.0, 3.5];
    let st: Vec<MmppState> = (0..states)
        .map(|s| {
            let rate = base_per_s * mult[s];
            MmppState {
                rate_per_s: rate,
                arrival_prob: rate * STEP_S,
                sizes: SizeModel::Exponential { mean },
                intervals: 0,
                requests: 0,
                work: 0.0,
            }
        })
        .collect();
    let mut transition = vec![vec![0.0; states]; states];
    for (i, row) in transition.iter_mut().enumerate() {
        // leave state i after ~1–3 s (base) or ~0.1–0.3 s (bursts), per 10 µs step
        let stay_s = if i == 0 {
            rng.gen_range(1.0..3.0)
        } else {
            rng.gen_range(0.1..0.3)
        };
        let leave = STEP_S / stay_s;
        let others = states - 1;
        for (j, p) in row.iter_mut().enumerate() {
            *p = if i == j {
                1.0 - leave
            } else {
                leave / others as f64
            };
        }
    }
    Mmpp {
        step_s: STEP_S,
        interval_s: 1.0,
        states: st,
        transition,
    }
}

/// `n` tenants on 4 clients and 6 servers (see the file docs), deterministic for a seed.
fn network(n: usize, seed: u64) -> Network {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = NetworkBuilder::new();
    for c in 0..CLIENTS {
        b.host(format!("client{c}"), GBPS, None);
    }
    for s in 0..SERVERS {
        b.host(format!("server{s}"), GBPS, None);
    }
    let slos = [0.010, 0.020, 0.050, 0.100];
    for t in 0..n {
        let (client, server) = (t % CLIENTS, CLIENTS + t % SERVERS);
        let states = 2 + t % 2;
        // ~60–200 req/s base (x2, x3.5 in bursts), 200–600 B requests, 2–6 KB responses
        let base = rng.gen_range(60.0..200.0);
        let (req_b, resp_b) = (rng.gen_range(200.0..600.0), rng.gen_range(2000.0..6000.0));
        let req = mmpp(&mut rng, states, base, req_b);
        let resp = mmpp(&mut rng, states, base, resp_b);
        let slo = Slo::new(slos[rng.gen_range(0..slos.len())], 99.9).expect("valid SLO constant");
        let tenant = b.tenant(NewTenant::new(format!("T{t}"), slo).between(client, server));
        for (suffix, stage, model) in [("req", Stage::NetIn, req), ("resp", Stage::NetOut, resp)] {
            let models = FlowModels {
                mmpp: Some(model),
                arrival: None,
            };
            b.named_flow(tenant, format!("T{t}.{suffix}"), stage, models)
                .expect("hosts exist");
        }
    }
    b.build().expect("bench network is valid")
}

fn bench(c: &mut Criterion) {
    let opts = BoundOptions {
        theta: ThetaSearch::Brent,
        percentile: None,
    };
    // sanity: most tenants are bounded and the numbers are plausible
    let net = network(180, 7);
    let res = bound_all(&net, Method::SncMeister, &opts).expect("bench network bounds");
    let bounded = res.iter().filter(|t| t.total.seconds().is_some()).count();
    let meets = res.iter().filter(|t| t.meets_slo).count();
    eprintln!("180 tenants: {bounded} bounded, {meets} meet their SLO");

    c.bench_function("snc_bound_180_tenants", |b| {
        b.iter(|| bound_all(black_box(&net), Method::SncMeister, &opts))
    });
    let res = bound_all(&net, Method::SncMartingale, &opts).expect("bench network bounds");
    let bounded = res.iter().filter(|t| t.total.seconds().is_some()).count();
    let meets = res.iter().filter(|t| t.meets_slo).count();
    eprintln!("180 tenants, snc-martingale: {bounded} bounded, {meets} meet their SLO");
    let mut mart = c.benchmark_group("martingale_bound_180_tenants");
    mart.sample_size(10);
    mart.bench_function("cold", |b| {
        b.iter(|| {
            tailbound_calculus::martingale::clear_cache();
            bound_all(black_box(&net), Method::SncMartingale, &opts)
        })
    });
    mart.bench_function("warm", |b| {
        b.iter(|| bound_all(black_box(&net), Method::SncMartingale, &opts))
    });
    mart.finish();
    let mut group = c.benchmark_group("snc_bound_tenants");
    for n in [30, 60, 120, 180] {
        let net = network(n, 7);
        group.bench_with_input(BenchmarkId::from_parameter(n), &net, |b, net| {
            b.iter(|| bound_all(black_box(net), Method::SncMeister, &opts))
        });
    }
    group.finish();
    let mut grid = c.benchmark_group("snc_bound_tenants_grid");
    grid.sample_size(10);
    let grid_opts = BoundOptions {
        theta: ThetaSearch::Grid,
        percentile: None,
    };
    for n in [30, 180] {
        let net = network(n, 7);
        grid.bench_with_input(BenchmarkId::from_parameter(n), &net, |b, net| {
            b.iter(|| bound_all(black_box(net), Method::SncMeister, &grid_opts))
        });
    }
    grid.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
