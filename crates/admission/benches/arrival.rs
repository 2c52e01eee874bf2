//! The cost of one arrival decision ([`Admission::decide`]: everything an arrival computes,
//! without recording it) with n tenants admitted, incremental ([`Rebound::Neighbourhood`])
//! against re-bounding every tenant at the newcomer's level or below ([`Rebound::Full`]), for
//! SNC-Meister. The cluster grows with n: n/10 client hosts and n/10 server hosts on 1 Gbit/s
//! links, synthetic tenants (`tailbound_testdata::synthetic`: two-state MMPPs, SLOs of 2 to
//! 50 ms) between a random client and a random server, so each server carries ~10 tenants at
//! ~20 % load. The admitted tenants are restored (recorded grants), not decided, so setting up
//! is cheap; the newcomers are the next 8 tenants of the same seed, decided in turn.
//! `full/10000` takes seconds per decision and is sampled 10 times.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use std::time::Duration;
use tailbound_admission::{Admission, Grant, Policy, Rebound};
use tailbound_testdata::synthetic::{self, Cluster};

const NEWCOMERS: usize = 8;

fn admission(n: usize, rebound: Rebound) -> Admission<'static> {
    let cluster = Cluster {
        clients: n / 10,
        servers: n / 10,
        link_bytes_per_s: 125e6,
    };
    let net = synthetic::network(cluster, n + NEWCOMERS, 1);
    let mut a = Admission::owned(net, Policy::SncMeister)
        .expect("a valid network")
        .with_rebound(rebound);
    for t in 0..n {
        let grant = Grant {
            level: 0,
            buckets: vec![Vec::new(); 2],
            shaper_delay_s: 0.0,
        };
        a.restore(t, grant, None).expect("a new tenant");
    }
    a
}

fn arrival(c: &mut Criterion) {
    let mut g = c.benchmark_group("snc_meister_arrival");
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    for n in [100, 1000, 10_000] {
        for (mode, rebound) in [
            ("incremental", Rebound::Neighbourhood),
            ("full", Rebound::Full),
        ] {
            let a = admission(n, rebound);
            let mut next = 0;
            g.bench_with_input(BenchmarkId::new(mode, n), &a, |b, a| {
                b.iter(|| {
                    next = (next + 1) % NEWCOMERS;
                    black_box(a.decide(n + next, &[]).expect("a decision"))
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, arrival);
criterion_main!(benches);
