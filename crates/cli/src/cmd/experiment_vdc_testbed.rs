//! `tailbound experiment vdc enforcement --testbed`: pulsar Fig. 12/13 on the real testbed
//! (namespaces, an HTB-shaped link, two real memcached, the enforcer proxies and the controller
//! in-process), every isolation mode on every seed, the simulator's run of the same datacenter
//! beside. Exit 1 when Pulsar misses a guarantee on some seed.

use super::{progress, ExperimentOutput};
use crate::table::render;
use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use tailbound_allocation::Mechanism;
use tailbound_experiments::vdc_testbed::{
    run as run_experiment, Isolation, VdcTestbedConfig, VdcTestbedExperiment, VdcTestbedProgress,
};
use tailbound_model::units::{BytesPerSec, Seconds};
use tailbound_plot::{Chart, Figure, Series};

/// The testbed version's flags (with `tailbound experiment vdc enforcement`).
#[derive(Debug, Args)]
pub struct VdcTestbedArgs {
    /// run on the real testbed (as root): tenant hosts and the appliances' server in network
    /// namespaces, its link shaped with HTB, two real memcached, Pulsar's enforcer proxies and
    /// controller in-process; the simulator's run of the same datacenter beside
    #[arg(long)]
    pub testbed: bool,
    /// testbed: seeds, a fresh testbed each, e.g. 1,2,3 (instead of --seed)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2,3",
        requires = "testbed"
    )]
    pub seeds: Vec<u64>,
    /// testbed: time before measuring, for the controller to converge (0 to 600 s)
    #[arg(long, default_value = "8s", requires = "testbed",
          value_parser = crate::args::seconds(0.0, 600.0, false))]
    pub warmup: Seconds,
    /// testbed: the appliances' server link, each way, 100kB/s to 1GB/s (the load is bounded
    /// by it), e.g. 32Mbit
    #[arg(long, default_value = "4MB/s", requires = "testbed",
          value_parser = crate::args::rate(1e5, 1e9))]
    pub link_rate: BytesPerSec,
    /// testbed: the memcached executable
    #[arg(long, default_value = "memcached", requires = "testbed")]
    pub memcached: PathBuf,
}

/// Runs the testbed experiment with the common flags' interval, mechanism and measured
/// `duration` (default 8 s per mode).
pub fn run(
    a: &VdcTestbedArgs,
    duration: Option<Seconds>,
    interval: Option<Seconds>,
    global: Mechanism,
    modes: &[Isolation],
    output: &ExperimentOutput,
) -> anyhow::Result<Outcome> {
    let cfg = VdcTestbedConfig {
        duration_s: duration.map_or(8.0, |d| d.0),
        warmup_s: a.warmup.0,
        interval_s: interval.map_or(0.5, |i| i.0),
        link_bytes_per_s: a.link_rate.0,
        global,
        seeds: a.seeds.clone(),
        modes: modes.to_vec(),
        memcached: a.memcached.clone(),
        simulate: true,
    };
    let steps = cfg.seeds.len() * (1 + cfg.modes.len()) + 1;
    let bar = progress(steps as u64, output.json, "testbed");
    let exp = run_experiment(&cfg, |p| {
        bar.inc(1);
        match p {
            VdcTestbedProgress::Up { seed } => bar.set_message(format!("seed {seed}: up")),
            VdcTestbedProgress::Mode { seed, mode } => {
                bar.set_message(format!("seed {seed}: {mode} done"))
            }
            VdcTestbedProgress::Simulated => bar.set_message("simulated"),
        }
    })?;
    bar.finish_and_clear();
    output.emit(&exp, || figure(&exp), || table(&exp))?;
    Ok(if exp.pulsar_held {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn table(exp: &VdcTestbedExperiment) -> String {
    let mut rows = Vec::new();
    for r in &exp.runs {
        for m in &r.modes {
            for t in &m.tenants {
                rows.push(vec![
                    r.seed.to_string(),
                    m.mode.as_str().to_string(),
                    t.tenant.clone(),
                    t.resource.clone(),
                    format!("{:.0}", t.guarantee),
                    format!("{:.0}", t.achieved),
                    format!("{:.2}", t.ratio),
                    if t.guarantee_met { "yes" } else { "NO" }.to_string(),
                    t.errors.to_string(),
                ]);
            }
        }
    }
    if let Some(sim) = &exp.simulated {
        for m in &sim.modes {
            for t in &m.tenants {
                rows.push(vec![
                    "sim".into(),
                    m.isolation.as_str().to_string(),
                    t.tenant.clone(),
                    t.resource.clone(),
                    format!("{:.0}", t.guarantee),
                    format!("{:.0}", t.throughput),
                    format!("{:.2}", t.ratio),
                    if t.met { "yes" } else { "NO" }.to_string(),
                    "-".into(),
                ]);
            }
        }
    }
    let mut out = render(
        &[
            "seed",
            "mode",
            "tenant",
            "appliance",
            "guarantee [tokens/s]",
            "achieved [tokens/s]",
            "ratio",
            "met",
            "errors",
        ],
        &rows,
    );
    out.push_str(&format!(
        "pulsar met every guarantee on every seed: {}; without isolation a guarantee broke on every seed: {}\n",
        if exp.pulsar_held { "yes" } else { "NO" },
        if exp.none_broke { "yes" } else { "NO" },
    ));
    out
}

/// Achieved / guarantee per tenant and mode (every seed), and the first seed's throughput over
/// time per mode.
fn figure(exp: &VdcTestbedExperiment) -> Figure {
    let mut ratio = Chart::new("testbed: achieved / guarantee per tenant (pulsar Fig. 12/13)")
        .x_label("tenant (0 = A, 1 = B, 2 = C, 3 = D)")
        .y_label("achieved / guarantee")
        .y_from_zero(true);
    for mode in &exp.config.modes {
        let pts = exp
            .runs
            .iter()
            .flat_map(|r| r.modes.iter().filter(|m| m.mode == *mode))
            .flat_map(|m| {
                m.tenants
                    .iter()
                    .enumerate()
                    .map(|(k, t)| (k as f64, t.ratio))
            })
            .collect();
        ratio = ratio.series(Series::points(mode.as_str(), pts));
    }
    ratio = ratio.series(Series::line("guarantee", vec![(0.0, 1.0), (3.0, 1.0)]));
    let mut charts = vec![ratio];
    if let Some(first) = exp.runs.first() {
        for m in &first.modes {
            charts.push(super::experiment_vdc::throughput_chart(
                format!(
                    "seed {}, {}: tokens/s at each tenant's appliance",
                    first.seed,
                    m.mode.as_str()
                ),
                m.tenants.iter().map(|t| t.tenant.as_str()),
                &m.series,
            ));
        }
    }
    Figure::new(charts).columns(2)
}
