//! Placement time at 1000 workloads (workload-compactor §5.4, Fig. 12): first-fit vs
//! fast-first-fit, and compactor-fff alone (the target: under 60 s on this machine).
//!
//! Workloads: the 42 production traces reused round-robin with SLOs cycling through
//! {100, 150, 250, 500, 1000} ms at p99.9, characterized on their first halves with a 10%
//! safety margin; those that do not fit alone under the LP are left out (as §5.1 does).
//! Characterization happens once, outside the timed part. `PLACEMENT_BENCH_WORKLOADS`
//! overrides the count (default 1000; 20 when run as a test, without `--bench`).

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use tailbound_curves::StorageProfile;
use tailbound_model::Slo;
use tailbound_placement::{characterize, Placement, PlacementConfig, Placer, Policy, Workload};

fn workloads(n: usize) -> Vec<Workload> {
    let profile = StorageProfile::intel710_ssd();
    let slos = [0.1, 0.15, 0.25, 0.5, 1.0];
    let curves: Vec<_> = tailbound_trace::list_traces(&tailbound_testdata::production_dir())
        .unwrap()
        .iter()
        .map(|p| {
            let t = tailbound_trace::read_trace(p).expect("trace");
            let (first, _) = tailbound_trace::split(&t, 0.5).expect("split");
            characterize("t", &first.requests, &profile, None).expect("curves")
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    let mut i = 0usize;
    while out.len() < n {
        let w = Workload {
            name: format!("w{i}"),
            slo: Slo::new(slos[i % slos.len()], 99.9).expect("slo"),
            curves: curves[i % curves.len()].clone(),
        };
        i += 1;
        let mut cfg = PlacementConfig::new(Policy::CompactorFff);
        cfg.safety_margin = 0.1;
        cfg.max_servers = Some(1);
        let mut alone = Placer::new(cfg).expect("placer");
        if matches!(
            alone.arrive(w.clone()).expect("lp").1,
            Placement::Placed { .. }
        ) {
            out.push(w);
        }
    }
    out
}

fn place(ws: &[Workload], policy: Policy) -> usize {
    let mut cfg = PlacementConfig::new(policy);
    cfg.safety_margin = 0.1;
    let mut p = Placer::new(cfg).expect("placer");
    for w in ws {
        p.arrive(w.clone()).expect("placement");
    }
    p.servers_in_use()
}

fn benches(c: &mut Criterion) {
    // `cargo test --all-targets` runs this without `--bench`, in a debug build: a smoke round at
    // 20 workloads (the bench still works), not minutes of LPs in the test suite.
    let full = std::env::args().any(|a| a == "--bench");
    let n: usize = std::env::var("PLACEMENT_BENCH_WORKLOADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if full { 1000 } else { 20 });
    let ws = workloads(n);
    let ff = place(&ws, Policy::Compactor);
    let fff = place(&ws, Policy::CompactorFff);
    eprintln!(
        "{n} workloads: first-fit {ff} servers, fast-first-fit {fff} servers ({:.3}x)",
        fff as f64 / ff as f64
    );
    let mut g = c.benchmark_group("placement");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    g.bench_function(format!("compactor_fff_{n}_workloads"), |b| {
        b.iter(|| place(&ws, Policy::CompactorFff))
    });
    g.bench_function(format!("compactor_ff_{n}_workloads"), |b| {
        b.iter(|| place(&ws, Policy::Compactor))
    });
    g.finish();
}

criterion_group!(placement, benches);
criterion_main!(placement);
