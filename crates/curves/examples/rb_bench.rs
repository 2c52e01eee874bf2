//! Acceptance benchmark for exact r-b curves: all production traces × 3 stages.
//!
//! Usage: `rb_bench [TRACE_DIR]` (default: `shared/traces/msr-production` beside the repo).
//! Reads every `*.csv` trace and builds its work series at each stage (not timed), then times
//! (a) the exact curves ([`rb_curve`]) and (b) the original method, Algorithm 1 at 1000 rates
//! ([`sampled_rb`]), on the same series, 5 runs each on one thread. The sampled grid is the
//! original rbGen's: rates k/1000 of the stage's capacity for k = 1..=1000, capacity 1 Gb/s
//! (125e6 bytes/s, NetEnforcer's default link) on the network and 1 busy-s/s on storage; the
//! reference curves' rates are multiples of these steps. Prints the median of each, the ratio
//! sampled/exact, a check that both agree on the grid, and whether exact < 5 s.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use tailbound_curves::rb::{rb_curve, sampled_rb, work_series, WorkSeries};
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::Stage;

const RUNS: usize = 5;
const RATES: usize = 1000;

/// the original's rate grid for a stage [work/s]
fn grid(stage: Stage) -> Vec<f64> {
    let capacity = match stage {
        Stage::NetIn | Stage::NetOut => 125e6,
        Stage::Storage => 1.0,
    };
    (1..=RATES)
        .map(|k| capacity * k as f64 / RATES as f64)
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(tailbound_testdata::production_dir);
    let paths = tailbound_trace::list_traces(&dir)?;

    let profile = StorageProfile::intel710_ssd();
    let mut inputs: Vec<(Stage, WorkSeries)> = Vec::new();
    let mut requests = 0;
    for p in &paths {
        let trace = tailbound_trace::read_trace(p)?;
        requests += trace.requests.len();
        for stage in Stage::ALL {
            let s = work_series(&trace.requests, stage_work(stage, &profile))
                .with_context(|| format!("{} at {}", p.display(), stage.as_str()))?;
            inputs.push((stage, s));
        }
    }
    let instants: usize = inputs.iter().map(|(_, s)| s.len()).sum::<usize>() / 3;
    println!(
        "rb-curves: {} traces x 3 stages = {} curves, {requests} requests ({instants} distinct instants) from {}",
        paths.len(),
        inputs.len(),
        dir.display()
    );
    let grids: Vec<(Stage, Vec<f64>)> = Stage::ALL.iter().map(|&s| (s, grid(s))).collect();
    let grid_of = |stage: Stage| {
        grids
            .iter()
            .find(|(s, _)| *s == stage)
            .map(|(_, g)| g.as_slice())
            .unwrap_or(&[])
    };

    let (mut exact_s, mut sampled_s) = (Vec::new(), Vec::new());
    let mut curves = Vec::new();
    let mut sampled = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        curves = inputs
            .iter()
            .map(|(_, s)| rb_curve(s).map(black_box))
            .collect::<Result<Vec<_>, _>>()?;
        exact_s.push(t.elapsed().as_secs_f64());

        let t = Instant::now();
        sampled = inputs
            .iter()
            .map(|(stage, s)| sampled_rb(s, grid_of(*stage)).map(black_box))
            .collect::<Result<Vec<_>, _>>()?;
        sampled_s.push(t.elapsed().as_secs_f64());
    }

    // both methods must agree where they overlap
    let mut worst = 0.0f64;
    for (rb, points) in curves.iter().zip(&sampled) {
        for &[r, b] in points {
            let exact = rb.burst_at(r).unwrap_or(f64::NAN);
            let rel = (exact - b).abs() / b.abs().max(f64::MIN_POSITIVE);
            worst = worst.max(if rel.is_nan() { f64::INFINITY } else { rel });
        }
    }
    let vertices: usize = curves.iter().map(|c| c.vertices().len()).sum();
    let (exact, sampled_med) = (median(exact_s.clone()), median(sampled_s.clone()));
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "exact curves (divide and conquer):  median {exact:.3} s over {RUNS} runs [{}], {:.1} vertices per curve on average",
        fmt(&exact_s),
        vertices as f64 / curves.len() as f64
    );
    println!(
        "sampled Algorithm 1 at {RATES} rates:  median {sampled_med:.3} s over {RUNS} runs [{}]",
        fmt(&sampled_s)
    );
    println!("ratio sampled/exact: {:.1}x", sampled_med / exact);
    println!(
        "check: exact b equals sampled b at all {} grid points within {worst:.1e} relative",
        sampled.iter().map(Vec::len).sum::<usize>()
    );
    println!(
        "exact < 5 s total on one core: {} ({exact:.3} s)",
        if exact < 5.0 { "yes" } else { "NO" }
    );
    Ok(())
}
