//! Allocation time of the global step on pulsar §6.4's fat-tree scenario (24K VMs, 2000
//! servers, 200 appliances: 4200 resources), DRF and H-DRF, and how it grows with VMs.
//! Targets (issue 7): DRF < 100 ms, H-DRF < 1 s on one core (the paper: 1–5 s for DRF).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use tailbound_allocation::bench::FatTree;
use tailbound_allocation::{Mechanism, Mra};

fn alloc_24k(c: &mut Criterion) {
    let p = FatTree::default().build().expect("valid scenario");
    let mut g = c.benchmark_group("alloc");
    g.sample_size(10);
    g.bench_function("drf_24k_vms", |b| {
        b.iter(|| black_box(Mechanism::Drf.allocate(black_box(&p))))
    });
    g.bench_function("hdrf_24k_vms", |b| {
        b.iter(|| black_box(Mechanism::Hdrf.allocate(black_box(&p))))
    });
    g.bench_function("first_fit_24k_vms", |b| {
        b.iter(|| black_box(Mechanism::FirstFit.allocate(black_box(&p))))
    });
    g.finish();
}

fn alloc_scaling(c: &mut Criterion) {
    let mut g = c.benchmark_group("alloc_scaling");
    g.sample_size(10);
    for vms in [3_000, 6_000, 12_000, 24_000, 48_000] {
        let p = FatTree {
            vms,
            servers: vms / 12,
            appliances: (vms / 120).max(1),
            ..FatTree::default()
        }
        .build()
        .expect("valid scenario");
        for m in [Mechanism::Drf, Mechanism::Hdrf] {
            g.bench_with_input(BenchmarkId::new(m.name(), vms), &p, |b, p| {
                b.iter(|| black_box(m.allocate(black_box(p))))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, alloc_24k, alloc_scaling);
criterion_main!(benches);
