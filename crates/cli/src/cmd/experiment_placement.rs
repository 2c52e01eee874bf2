//! `tailbound experiment placement`: servers needed by WorkloadCompactor and the baselines
//! (workload-compactor Fig. 6/11/13), placement time of first-fit vs fast-first-fit
//! (Fig. 12), and the replayed SLO check.

use super::{load_trace, progress, ExperimentOutput};
use crate::args;
use crate::table::render;
use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use tailbound_experiments::placement::{
    run, Events, PlacementExperiment, PlacementExperimentConfig,
};
use tailbound_model::units::{BytesPerSec, Seconds};
use tailbound_model::{Excess, Percentile};
use tailbound_placement::{Policy, ServerSpec};
use tailbound_plot::{Chart, Figure, Series};
use tailbound_sim::Transmission;

#[derive(Debug, Args)]
pub struct PlacementArgs {
    /// folder of production traces (CSV), reused with random offsets
    #[arg(long)]
    pub traces: PathBuf,
    /// workloads to place (1 to 100000)
    #[arg(long, default_value_t = 1000, value_parser = args::count(1, 100_000))]
    pub workloads: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// SLOs to draw from, comma-separated (seconds or durations), each 1us to 1h
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "100ms,150ms,250ms,500ms,1s",
        value_parser = args::seconds(1e-6, 3600.0, false)
    )]
    pub slos: Vec<Seconds>,
    /// one SLO for every workload (the "same SLO" experiments); overrides --slos (1us to 1h)
    #[arg(long, value_parser = args::seconds(1e-6, 3600.0, false))]
    pub same_slo: Option<Seconds>,
    /// SLO percentile (strictly between 0 and 100)
    #[arg(long, default_value = "99.9")]
    pub percentile: Percentile,
    /// arrivals (workloads only arrive; servers counted at the end, Fig. 11) or
    /// arrivals-departures (workloads arrive and depart at random; the peak servers in use,
    /// Fig. 13)
    #[arg(long, default_value = "arrivals")]
    pub events: Events,
    /// safety margin: scale every r-b curve by 1 + this (§5.2); 0 to 10
    #[arg(long, default_value_t = 0.1, value_parser = args::real(0.0, 10.0, false))]
    pub margin: f64,
    /// policies to compare, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = Policy::all())]
    pub policies: Vec<Policy>,
    /// NIC rate of servers and clients (1Kbit to 10000Gbit)
    #[arg(long, default_value = "1Gbit", value_parser = args::link())]
    pub link: BytesPerSec,
    /// SSDs per server (more than 0, at most 1000)
    #[arg(long, default_value_t = 1.0, value_parser = args::real(0.0, 1000.0, true))]
    pub ssds: f64,
    /// prune every r-b curve to at most this many token buckets, 1 to 10000 (default: exact
    /// curves)
    #[arg(long, value_name = "K", value_parser = args::count(1, 10_000))]
    pub max_segments: Option<usize>,
    /// skip the replay in the simulator (no violations are counted)
    #[arg(long)]
    pub no_replay: bool,
    /// replay links as fluid (whole requests) instead of 1500-byte chunks
    #[arg(long)]
    pub fluid: bool,
    /// what the replay's rate limits do with requests beyond them: wait (strict limiter) or
    /// best-effort (go on at a level below every workload)
    #[arg(long, default_value = "best-effort")]
    pub excess: Excess,
    /// worker threads for characterization and replay (1 to 256)
    #[arg(long, default_value_t = 2, value_parser = args::count(1, 256))]
    pub threads: usize,
    // the figure: servers per policy (normalised to compactor) and time vs workloads
    #[command(flatten)]
    pub output: ExperimentOutput,
}

pub fn run_placement(a: PlacementArgs) -> anyhow::Result<Outcome> {
    let slos_s: Vec<f64> = match &a.same_slo {
        Some(s) => vec![s.0],
        None => a.slos.iter().map(|s| s.0).collect(),
    };
    let paths = tailbound_trace::list_traces(&a.traces)?;
    let traces = paths
        .iter()
        .map(|p| load_trace(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let cfg = PlacementExperimentConfig {
        workloads: a.workloads,
        seed: a.seed,
        slos_s,
        percentile: a.percentile.value(),
        events: a.events,
        safety_margin: a.margin,
        server: ServerSpec {
            link_bytes_per_s: a.link.0,
            storage_rate: a.ssds,
            device_latency_s: 0.0,
        },
        policies: a.policies.clone(),
        max_segments: a.max_segments,
        replay: !a.no_replay,
        transmission: if a.fluid {
            Transmission::Fluid
        } else {
            Transmission::default()
        },
        threads: a.threads,
        excess: a.excess,
        ..PlacementExperimentConfig::default()
    };
    let bar = progress(
        (a.workloads + a.policies.len()) as u64,
        a.output.json,
        "placement",
    );
    let exp = run(&traces, &cfg, |_| bar.inc(1))?;
    bar.finish_and_clear();
    a.output.emit(&exp, || figure(&exp), || report(&exp))?;
    Ok(Outcome::Ok)
}

/// The text output: the table, the ratio, what the pool kept, and every violation.
fn report(exp: &PlacementExperiment) -> String {
    use std::fmt::Write;
    let mut out = table(exp);
    if let Some(r) = exp.summary.ratio {
        let _ = writeln!(
            out,
            "best baseline ({}) needs {r:.2}x compactor's servers",
            exp.summary.best_baseline.as_deref().unwrap_or("-")
        );
    }
    let _ = writeln!(
        out,
        "workloads: {} kept, {} redrawn (alone under WorkloadCompactor no limits fit them, \
         or their held-out half missed its SLO behind strict limits; §5.1)",
        exp.setting.workloads, exp.setting.redrawn
    );
    let _ = writeln!(
        out,
        "alone: workloads whose limits under the policy miss their SLO even alone; each \
         has a server of its own without limits (counted in servers)"
    );
    for (name, r) in &exp.policies {
        for v in &r.violators {
            let _ = writeln!(
                out,
                "violation under {name}: {} worst window {:.1} ms, SLO {:.1} ms, unshaped {:.1} ms",
                v.name,
                v.worst_s * 1e3,
                v.slo_s * 1e3,
                v.unshaped_worst_s * 1e3
            );
        }
    }
    out
}

fn table(exp: &PlacementExperiment) -> String {
    let headers = [
        "policy",
        "servers",
        "placed",
        "alone",
        "rejected",
        "seconds",
        "LPs",
        "violations",
        "worst p/SLO",
    ];
    let rows: Vec<Vec<String>> = exp
        .policies
        .iter()
        .map(|(name, r)| {
            vec![
                name.clone(),
                r.servers.to_string(),
                r.placed.to_string(),
                r.dedicated.to_string(),
                r.rejected.to_string(),
                format!("{:.3}", r.seconds),
                r.lp_solves.to_string(),
                r.violations.map_or_else(|| "-".into(), |v| v.to_string()),
                r.worst_latency_ratio
                    .map_or_else(|| "-".into(), |w| format!("{w:.3}")),
            ]
        })
        .collect();
    render(&headers, &rows)
}

fn figure(exp: &PlacementExperiment) -> Figure {
    let base = exp
        .policies
        .get("compactor")
        .or_else(|| exp.policies.get("compactor-fff"))
        .map_or(1.0, |r| r.servers.max(1) as f64);
    let mut bars =
        Chart::new("servers normalised to WorkloadCompactor (workload-compactor Fig. 11/13)")
            .x_label("policy (index in the legend order)")
            .y_label("servers / compactor's")
            .y_from_zero(true);
    for (i, (name, r)) in exp.policies.iter().enumerate() {
        bars = bars.series(Series::points(
            name.clone(),
            vec![(i as f64, r.servers as f64 / base)],
        ));
    }
    let mut time = Chart::new("placement time vs workloads (workload-compactor Fig. 12)")
        .x_label("workloads placed")
        .y_label("cumulative time [s]");
    for name in ["compactor", "compactor-fff"] {
        if let Some(r) = exp.policies.get(name) {
            let label = if name == "compactor" {
                "first-fit"
            } else {
                "fast-first-fit"
            };
            time = time.series(Series::line(
                label,
                r.timeline
                    .iter()
                    .map(|p| (p.workloads as f64, p.seconds))
                    .collect(),
            ));
        }
    }
    Figure::new(vec![bars, time])
}
