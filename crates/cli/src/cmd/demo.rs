//! `tailbound demo`: the pipeline on a seeded synthetic multi-tenant set, no files needed.
//!
//! Today the pipeline is characterization: each tenant's trace is generated, split in time
//! (the first half characterizes), and turned into exact r-b curves, MMPP fits and effective
//! bandwidths at every stage. Later stages (admission, placement, replay) extend this command.

use super::{print_json, progress, write_svg};
use crate::report::{DemoReport, DemoStage, DemoTenant};
use crate::table::{render, si};
use crate::Outcome;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use tailbound_curves::effbw::effective_bandwidth;
use tailbound_curves::mmpp::{fit_mmpp, MmppFitOptions};
use tailbound_curves::rb::{arrival_curve, work_series};
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::units::{format_duration_s, parse_duration_s};
use tailbound_model::{Slo, Stage};
use tailbound_plot::{Chart, Figure, Scale, Series};
use tailbound_trace::{generate, split, trace_stats, ArrivalModel, GenSpec, SizeDist, Vocabulary};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// seed of the synthetic tenant set
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// length of each tenant's trace (the first half is characterized)
    #[arg(long, default_value = "120s")]
    pub duration: String,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// plot every tenant's net-out r-b curve to this SVG file
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// The embedded tenant set: a mix of the arrival models with SLOs from the papers' ranges.
fn tenants(duration_s: f64) -> Vec<(&'static str, GenSpec, Slo)> {
    let spec = |arrival, sizes, read_fraction, vocabulary| GenSpec {
        arrival,
        sizes,
        read_fraction,
        duration_s,
        vocabulary,
    };
    let slo = |ms: f64, p: f64| Slo::new(ms * 1e-3, p).expect("valid embedded SLO");
    vec![
        (
            "kv-steady",
            spec(
                ArrivalModel::Poisson { rate_per_s: 400.0 },
                SizeDist::Fixed { bytes: 4096 },
                0.9,
                Vocabulary::KeyValue,
            ),
            slo(10.0, 99.9),
        ),
        (
            "kv-bursty",
            spec(
                ArrivalModel::Mmpp {
                    rates_per_s: vec![100.0, 1500.0],
                    mean_dwell_s: vec![4.0, 0.5],
                },
                SizeDist::Exponential { mean_bytes: 8192.0 },
                0.8,
                Vocabulary::KeyValue,
            ),
            slo(20.0, 99.9),
        ),
        (
            "batch-onoff",
            spec(
                ArrivalModel::OnOff {
                    on_rate_per_s: 600.0,
                    mean_on_s: 0.5,
                    mean_off_s: 3.0,
                },
                SizeDist::Fixed { bytes: 65536 },
                0.3,
                Vocabulary::Disk,
            ),
            slo(100.0, 99.9),
        ),
        (
            "web-heavy-tail",
            spec(
                ArrivalModel::Pareto {
                    rate_per_s: 250.0,
                    shape: 1.4,
                },
                SizeDist::Pareto {
                    min_bytes: 1024.0,
                    shape: 1.6,
                },
                0.95,
                Vocabulary::KeyValue,
            ),
            slo(50.0, 99.0),
        ),
        (
            "log-writer",
            spec(
                ArrivalModel::Poisson { rate_per_s: 50.0 },
                SizeDist::Fixed { bytes: 262144 },
                0.0,
                Vocabulary::Disk,
            ),
            slo(100.0, 99.9),
        ),
        (
            "db-mixed",
            spec(
                ArrivalModel::Mmpp {
                    rates_per_s: vec![50.0, 300.0, 900.0],
                    mean_dwell_s: vec![5.0, 2.0, 0.3],
                },
                SizeDist::Exponential {
                    mean_bytes: 16384.0,
                },
                0.7,
                Vocabulary::Disk,
            ),
            slo(20.0, 99.9),
        ),
    ]
}

pub fn run(a: DemoArgs) -> anyhow::Result<Outcome> {
    let duration_s = parse_duration_s(&a.duration)?;
    let profile = StorageProfile::intel710_ssd();
    let set = tenants(duration_s);
    let bar = progress(set.len() as u64, a.json, "characterizing");
    let mut out = Vec::with_capacity(set.len());
    let mut plot = Chart::new("r-b curves at net-out (first half of each trace)")
        .x_label("rate r [bytes/s]")
        .y_label("bucket b [bytes]")
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    for (i, (name, spec, slo)) in set.iter().enumerate() {
        bar.set_message(name.to_string());
        let trace = generate(spec, a.seed.wrapping_add(i as u64))
            .with_context(|| format!("cannot generate tenant {name}"))?;
        let (first, _replay) =
            split(&trace, 0.5).with_context(|| format!("cannot split tenant {name}'s trace"))?;
        let stats = trace_stats(&first);
        let mut stages = Vec::new();
        for stage in Stage::ALL {
            let work = stage_work(stage, &profile);
            let curve = arrival_curve(&work_series(&first.requests, work)?)?;
            let rb = curve.to_rb();
            let mean = curve
                .vertices()
                .last()
                .and_then(|&[span, total]| (span > 0.0).then(|| total / span));
            let mmpp = fit_mmpp(&first.requests, work, &MmppFitOptions::default())
                .with_context(|| format!("cannot fit an MMPP to tenant {name} at {stage}"))?;
            if stage == Stage::NetOut {
                plot = plot.series(Series::line(
                    *name,
                    rb.vertices().iter().map(|&[r, b]| (r, b)).collect(),
                ));
            }
            stages.push(DemoStage {
                stage,
                unit: stage.work_unit().to_string(),
                mean_rate: mean,
                arrival_pieces: rb.vertices().len(),
                burst: curve.burst(),
                burst_at_2x_mean: mean.and_then(|m| rb.burst_at(2.0 * m)),
                effective_bw: effective_bandwidth(&rb, slo.latency_s)?,
                mmpp_states: mmpp.states.len(),
            });
        }
        out.push(DemoTenant {
            name: name.to_string(),
            model: spec.arrival.describe(),
            slo_s: slo.latency_s,
            percentile: slo.percentile.value(),
            requests: first.requests.len(),
            mean_requests_per_s: stats.mean_requests_per_s,
            peak_to_mean_100ms: stats
                .windows
                .iter()
                .find(|w| (w.window_s - 0.1).abs() < 1e-12)
                .and_then(|w| w.peak_to_mean_requests),
            stages,
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Some(svg) = &a.svg {
        write_svg(svg, &Figure::new(vec![plot]))?;
    }
    let report = DemoReport {
        seed: a.seed,
        duration_s,
        tenants: out,
    };
    if a.json {
        print_json(&report)?;
    } else {
        print!("{}", summary(&report));
    }
    Ok(Outcome::Ok)
}

fn summary(r: &DemoReport) -> String {
    let mut s = format!(
        "tailbound demo: {} synthetic tenants (seed {}), {} traces, first half characterized\n\n",
        r.tenants.len(),
        r.seed,
        format_duration_s(r.duration_s)
    );
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.model.clone(),
                format!("p{} ≤ {}", t.percentile, format_duration_s(t.slo_s)),
                t.requests.to_string(),
                t.mean_requests_per_s.map_or("-".into(), si),
                t.peak_to_mean_100ms
                    .map_or("-".into(), |v| format!("{v:.1}")),
            ]
        })
        .collect();
    s += &render(
        &[
            "tenant",
            "arrivals",
            "SLO",
            "requests",
            "req/s",
            "peak/mean 100ms",
        ],
        &rows,
    );
    s += "\nper stage (work in bytes on the network, busy-seconds on storage):\n";
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .flat_map(|t| {
            t.stages.iter().map(move |st| {
                let mean = st.mean_rate.unwrap_or(f64::NAN);
                vec![
                    t.name.clone(),
                    st.stage.to_string(),
                    si(mean),
                    si(st.burst),
                    st.burst_at_2x_mean.map_or("-".into(), si),
                    si(st.effective_bw),
                    format!("{:.2}", st.effective_bw / mean),
                    st.arrival_pieces.to_string(),
                    st.mmpp_states.to_string(),
                ]
            })
        })
        .collect();
    s += &render(
        &[
            "tenant",
            "stage",
            "mean/s",
            "burst α(0)",
            "b(2·mean)",
            "eff. bw/s",
            "eff/mean",
            "r-b pieces",
            "MMPP states",
        ],
        &rows,
    );
    s
}
