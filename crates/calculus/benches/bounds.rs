//! Bound computation time: re-checking every tenant after one arrival, as admission control
//! does. `snc_bound_<n>_tenants`: n tenants spread over 6 server hosts and 4 client hosts,
//! each with a request flow (client-out → server-in) and a response flow (server-out →
//! client-in), 2–3 state per-10 µs MMPPs, SLOs p99.9 of {10, 20, 50, 100} ms (4 priority
//! levels); SNC-Meister's analysis with the default (Brent) θ search, on one core, and the
//! martingale analysis (`martingale_bound_<n>_tenants`) beside it: `cold` clears its
//! per-thread envelope cache before every iteration (a first decision), `warm` keeps it (the
//! admission engine's later decisions re-bound flows it has seen).
//!
//! `snc_bound_18_hosts/<n>`: the paper's cluster, 18 hosts each both client and server, n
//! tenants spread evenly (client t mod 18, server on another host), request rates scaled by
//! 180/n so that every queue carries the same load at every n (the tenants share the hosts);
//! then a sweep over 180..2000 tenants measures the CPU time of one `bound_all` (median of
//! interleaved runs) and prints the log-log slope of time against tenants (the goal:
//! ≤ 1.2). `SNC_SWEEP_MAX` caps the sweep's largest n (default 2000; 0 skips it).

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

/// Hosts of the paper's cluster (snc-meister §6).
const PAPER_HOSTS: usize = 18;

/// `n` tenants on the paper's 18 hosts, per-queue load independent of `n` (file docs).
fn paper_network(n: usize, seed: u64) -> Network {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut b = NetworkBuilder::new();
    for h in 0..PAPER_HOSTS {
        b.host(format!("h{h:02}"), GBPS, None);
    }
    let slos = [0.010, 0.020, 0.050, 0.100];
    let scale = 8.0 * 180.0 / n as f64;
    for t in 0..n {
        let client = t % PAPER_HOSTS;
        let server = (client + 1 + (t / PAPER_HOSTS) % (PAPER_HOSTS - 1)) % PAPER_HOSTS;
        let states = 2 + t % 2;
        let base = rng.gen_range(60.0..200.0) * scale;
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

/// CPU time this thread has run [s] (Linux: /proc/thread-self/schedstat), so that other
/// processes on a shared machine do not count; wall time elsewhere.
fn thread_cpu_s() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or_else(
            || {
                static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
                START
                    .get_or_init(std::time::Instant::now)
                    .elapsed()
                    .as_secs_f64()
            },
            |ns| ns * 1e-9,
        )
}

/// The tenant-count sweep on the paper's hosts (file docs): medians of interleaved runs,
/// then the least-squares slope of ln(time) against ln(tenants).
fn sweep(opts: &BoundOptions) {
    let max: usize = std::env::var("SNC_SWEEP_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let sizes: Vec<usize> = [180, 360, 720, 1000, 1440, 2000]
        .into_iter()
        .filter(|&n| n <= max)
        .collect();
    if sizes.len() < 2 {
        return;
    }
    let nets: Vec<Network> = sizes.iter().map(|&n| paper_network(n, 7)).collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    for _round in 0..5 {
        for (net, t) in nets.iter().zip(&mut times) {
            let start = thread_cpu_s();
            let res = bound_all(black_box(net), Method::SncMeister, opts);
            t.push(thread_cpu_s() - start);
            black_box(res).expect("sweep network bounds");
        }
    }
    let medians: Vec<f64> = times
        .iter_mut()
        .map(|t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        })
        .collect();
    for (n, m) in sizes.iter().zip(&medians) {
        eprintln!(
            "sweep: {n:5} tenants on {PAPER_HOSTS} hosts: {:9.2} ms CPU (median of 5)",
            m * 1e3
        );
    }
    let xs: Vec<f64> = sizes.iter().map(|&n| (n as f64).ln()).collect();
    let ys: Vec<f64> = medians.iter().map(|m| m.ln()).collect();
    let k = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / k, ys.iter().sum::<f64>() / k);
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    eprintln!(
        "sweep: log-log slope {:.2} from {} to {} tenants (goal ≤ 1.2)",
        sxy / sxx,
        sizes[0],
        sizes[sizes.len() - 1]
    );
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
    let paper = paper_network(180, 7);
    let res = bound_all(&paper, Method::SncMeister, &opts).expect("paper network bounds");
    let bounded = res.iter().filter(|t| t.total.seconds().is_some()).count();
    let meets = res.iter().filter(|t| t.meets_slo).count();
    eprintln!("180 tenants on 18 hosts: {bounded} bounded, {meets} meet their SLO");
    let mut hosts = c.benchmark_group("snc_bound_18_hosts");
    hosts.sample_size(10);
    for n in [180, 720] {
        let net = paper_network(n, 7);
        hosts.bench_with_input(BenchmarkId::from_parameter(n), &net, |b, net| {
            b.iter(|| bound_all(black_box(net), Method::SncMeister, &opts))
        });
    }
    hosts.finish();
    sweep(&opts);
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
