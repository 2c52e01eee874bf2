//! `tailbound experiment vdc capacity --testbed`: pulsar Fig. 14(a) on the real testbed — the
//! controller's capacity estimate of a real memcached (behind an HTB-shaped link) as tenants
//! D, C, B start one per phase, against the capacity measured without enforcement; the
//! simulator's run of the same datacenter beside. Exit 1 when the estimate does not end
//! within 25% of the measured capacity.

use super::experiment_vdc::{capacity_figure, capacity_table, VdcCommon};
use super::progress;
use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use tailbound_experiments::vdc_testbed_capacity::{
    run as run_experiment, CapacityTestbedConfig, CapacityTestbedExperiment,
    CapacityTestbedProgress,
};
use tailbound_model::units::{BytesPerSec, Seconds};
use tailbound_plot::{Figure, Series};

/// The testbed version's flags (with `tailbound experiment vdc capacity`).
#[derive(Debug, Args)]
pub struct CapacityTestbedArgs {
    /// run on the real testbed (as root): tenant hosts and the key-value store's server in
    /// network namespaces, its link shaped with HTB, a real memcached, Pulsar's enforcer proxy
    /// and controller (capacity estimation on) in-process; --duration is each phase
    /// [default: 10s]
    #[arg(long)]
    pub testbed: bool,
    /// testbed: the direct run that measures the real capacity (0.5 to 60 s)
    #[arg(long, default_value = "3s", requires = "testbed",
          value_parser = crate::args::seconds(0.5, 60.0, false))]
    pub calibrate: Seconds,
    /// testbed: the key-value store's server link, each way, 100kB/s to 1GB/s, e.g. 32Mbit
    #[arg(long, default_value = "4MB/s", requires = "testbed",
          value_parser = crate::args::rate(1e5, 1e9))]
    pub link_rate: BytesPerSec,
    /// testbed: the memcached executable
    #[arg(long, default_value = "memcached", requires = "testbed")]
    pub memcached: PathBuf,
}

/// Runs the testbed experiment with the common flags' phase length (`--duration`), interval,
/// mechanism and seed.
pub fn run(a: &CapacityTestbedArgs, common: &VdcCommon) -> anyhow::Result<Outcome> {
    let cfg = CapacityTestbedConfig {
        phase_s: common.duration.map_or(10.0, |d| d.0),
        interval_s: common.interval.map_or(0.5, |i| i.0),
        calibrate_s: a.calibrate.0,
        link_bytes_per_s: a.link_rate.0,
        global: common.global,
        seed: common.seed,
        memcached: a.memcached.clone(),
        simulate: true,
    };
    let bar = progress(4, common.output.json, "testbed");
    let exp = run_experiment(&cfg, |p| {
        bar.inc(1);
        bar.set_message(match p {
            CapacityTestbedProgress::Up => "up",
            CapacityTestbedProgress::Calibrated => "capacity measured",
            CapacityTestbedProgress::Ran => "pulsar run done",
            CapacityTestbedProgress::Simulated => "simulated",
        });
    })?;
    bar.finish_and_clear();
    common.output.emit(&exp, || figure(&exp), || table(&exp))?;
    Ok(if exp.converged {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn table(exp: &CapacityTestbedExperiment) -> String {
    let mut out = format!(
        "testbed: measured capacity {:.0} tokens/s (direct, {:.1} s); estimate {:.0} at first \
         (declared), {:.0} at the end after {} controller steps; mean error over the last \
         half phase {:.1}%; converged: {}; client errors {}\n",
        exp.measured_capacity,
        exp.config.calibrate_s,
        exp.initial_estimate,
        exp.final_estimate,
        exp.steps,
        100.0 * exp.late_error,
        if exp.converged { "yes" } else { "NO" },
        exp.errors
    );
    out.push_str(&capacity_table(&exp.testbed));
    if let Some(sim) = &exp.simulated {
        out.push_str(
            "\nsimulator (the same datacenter, its store serving the measured capacity):\n",
        );
        out.push_str(&capacity_table(sim));
    }
    out
}

/// Fig. 14(a) of the testbed run with the measured capacity, and the simulator's beside.
fn figure(exp: &CapacityTestbedExperiment) -> Figure {
    let mut charts = Vec::new();
    for (run, title) in std::iter::once((&exp.testbed, "testbed"))
        .chain(exp.simulated.iter().map(|s| (s, "simulator")))
    {
        let end = run.series.last().map_or(0.0, |p| p.t_s);
        let Some(mut c) = capacity_figure(run).charts.into_iter().next() else {
            continue;
        };
        c.title = format!("{title}: key-value store capacity estimate (pulsar Fig. 14(a))");
        c = c.series(Series::line(
            "measured capacity",
            vec![(0.0, exp.measured_capacity), (end, exp.measured_capacity)],
        ));
        charts.push(c);
    }
    Figure::new(charts)
}
