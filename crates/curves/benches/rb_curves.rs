//! Exact r-b curves vs the original's sampled Algorithm 1 on one production trace.
//!
//! Reads `shared/traces/msr-production/trace0036.csv` (110k requests) beside the repository;
//! when it is absent the benches print a note and do nothing (CI builds them with --no-run).
//! The whole-set comparison is `bench/rb-curves`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tailbound_curves::rb::{arrival_curve, prune, rb_curve, sampled_rb, work_series};
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::Stage;

const TRACE: &str = "trace0036";

fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::NetIn => "net_in",
        Stage::Storage => "storage",
        Stage::NetOut => "net_out",
    }
}

fn benches(c: &mut Criterion) {
    let path = tailbound_testdata::try_shared_dir()
        .unwrap_or_default()
        .join(format!("traces/msr-production/{TRACE}.csv"));
    if !path.is_file() {
        eprintln!(
            "rb_curves: {} is absent; skipping the benches",
            path.display()
        );
        return;
    }
    let trace = match tailbound_trace::read_trace(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "rb_curves: cannot read {}: {e}; skipping the benches",
                path.display()
            );
            return;
        }
    };
    let profile = StorageProfile::intel710_ssd();
    for stage in Stage::ALL {
        let Ok(series) = work_series(&trace.requests, stage_work(stage, &profile)) else {
            eprintln!("rb_curves: invalid work at {}; skipping", stage.as_str());
            continue;
        };
        let name = stage_name(stage);
        c.bench_function(&format!("rb_exact_{TRACE}_{name}"), |b| {
            b.iter(|| rb_curve(black_box(&series)).unwrap())
        });
        let exact = arrival_curve(&series).unwrap();
        c.bench_function(&format!("rb_prune12_{TRACE}_{name}"), |b| {
            b.iter(|| prune(black_box(&exact), 12))
        });
        // the original's grid: k/1000 of 1 Gb/s on the network, of 1 busy-s/s on storage
        let capacity = if stage == Stage::Storage { 1.0 } else { 125e6 };
        let rates: Vec<f64> = (1..=1000).map(|k| capacity * k as f64 / 1000.0).collect();
        let mut group = c.benchmark_group("sampled");
        group.sample_size(10);
        group.bench_function(format!("rb_sampled1000_{TRACE}_{name}"), |b| {
            b.iter(|| sampled_rb(black_box(&series), &rates))
        });
        group.finish();
    }
}

criterion_group!(rb, benches);
criterion_main!(rb);
