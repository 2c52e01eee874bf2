//! `tailbound experiment vdc ...`: Pulsar's evaluation in simulation — `enforcement`
//! (Fig. 12/13: guarantees with and without isolation) and `capacity` (Fig. 14: the capacity
//! estimate as tenants arrive); both also on the testbed with `--testbed`. Exit 1 when Pulsar itself misses a guarantee, or when a
//! Fig. 14 phase does not settle within 15 intervals, misses a guarantee or lets the
//! throughput/guarantee ratios spread by more than 25% (the paper keeps them).

use super::{progress, ExperimentOutput};
use crate::table::render;
use crate::Outcome;
use clap::{Args, Subcommand};
use tailbound_allocation::Mechanism;
use tailbound_experiments::vdc::{
    capacity, enforcement, CapacityExperiment, CapacityPhase, EnforcementExperiment, Isolation,
    VdcConfig,
};
use tailbound_model::units::Seconds;
use tailbound_plot::{Chart, Figure, Series};

#[derive(Debug, Subcommand)]
pub enum VdcCommand {
    /// pulsar Fig. 12/13: four tenants' guarantees under Pulsar and the baselines
    Enforcement(EnforcementArgs),
    /// pulsar Fig. 14: appliance capacity estimation as tenants start one by one
    Capacity(CapacityArgs),
}

/// Settings of both VDC experiments.
#[derive(Debug, Args)]
pub struct VdcCommon {
    /// simulated time (per phase for `capacity`), at least four control intervals and at most
    /// 1h, e.g. 40s (the default)
    #[arg(long, value_parser = crate::args::seconds(0.0, MAX_VDC_DURATION_S, true))]
    pub duration: Option<Seconds>,
    /// control interval, 10ms to 60s [default: 1s; 500ms with --testbed]
    #[arg(long, value_parser = crate::args::seconds(0.01, 60.0, false))]
    pub interval: Option<Seconds>,
    /// the provider's global allocation mechanism: drf, hdrf or first-fit
    #[arg(long, default_value = "hdrf")]
    pub global: Mechanism,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[command(flatten)]
    pub output: ExperimentOutput,
}

/// Longest simulated time of a VDC experiment [s] (about a minute of computing per simulated
/// hour and mode on one core).
pub const MAX_VDC_DURATION_S: f64 = 3600.0;

impl VdcCommon {
    fn config(&self, default_duration_s: f64) -> VdcConfig {
        VdcConfig {
            duration_s: self.duration.map_or(default_duration_s, |d| d.0),
            interval_s: self.interval.map_or(1.0, |i| i.0),
            global: self.global,
            seed: self.seed,
        }
    }
}

#[derive(Debug, Args)]
pub struct EnforcementArgs {
    #[command(flatten)]
    pub common: VdcCommon,
    /// isolation modes to compare, comma-separated: pulsar, none, per-appliance, network-only
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "pulsar,none,per-appliance,network-only"
    )]
    pub modes: Vec<Isolation>,
    #[command(flatten)]
    pub testbed: super::experiment_vdc_testbed::VdcTestbedArgs,
}

#[derive(Debug, Args)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub common: VdcCommon,
    #[command(flatten)]
    pub testbed: super::experiment_vdc_testbed_capacity::CapacityTestbedArgs,
}

/// The progress bars' length: the experiments report the fraction simulated.
const PERMILLE: u64 = 1000;

fn permille(fraction: f64) -> u64 {
    (fraction.clamp(0.0, 1.0) * PERMILLE as f64) as u64
}

pub fn run(cmd: VdcCommand) -> anyhow::Result<Outcome> {
    match cmd {
        VdcCommand::Enforcement(a) if a.testbed.testbed => super::experiment_vdc_testbed::run(
            &a.testbed,
            a.common.duration,
            a.common.interval,
            a.common.global,
            &a.modes,
            &a.common.output,
        ),
        VdcCommand::Enforcement(a) => {
            let cfg = a.common.config(40.0);
            let modes: Vec<Isolation> = a.modes.clone();
            let bar = progress(PERMILLE, a.common.output.json, "simulating");
            let exp = enforcement(&cfg, &modes, |f| bar.set_position(permille(f)))?;
            bar.finish_and_clear();
            a.common.output.emit(
                &exp,
                || enforcement_figure(&exp),
                || enforcement_table(&exp),
            )?;
            let pulsar_ok = exp
                .modes
                .iter()
                .filter(|m| m.isolation == Isolation::Pulsar)
                .all(|m| m.all_met);
            Ok(if pulsar_ok {
                Outcome::Ok
            } else {
                Outcome::CheckFailed
            })
        }
        VdcCommand::Capacity(a) if a.testbed.testbed => {
            super::experiment_vdc_testbed_capacity::run(&a.testbed, &a.common)
        }
        VdcCommand::Capacity(a) => {
            let cfg = a.common.config(40.0);
            let bar = progress(PERMILLE, a.common.output.json, "simulating");
            let exp = capacity(&cfg, |f| bar.set_position(permille(f)))?;
            bar.finish_and_clear();
            a.common
                .output
                .emit(&exp, || capacity_figure(&exp), || capacity_table(&exp))?;
            let ok = exp.phases.iter().all(CapacityPhase::holds);
            Ok(if ok {
                Outcome::Ok
            } else {
                Outcome::CheckFailed
            })
        }
    }
}

fn enforcement_table(exp: &EnforcementExperiment) -> String {
    let mut rows = Vec::new();
    for m in &exp.modes {
        for t in &m.tenants {
            rows.push(vec![
                m.isolation.as_str().to_string(),
                t.tenant.clone(),
                t.resource.clone(),
                format!("{:.0}", t.guarantee),
                format!("{:.0}", t.throughput),
                format!("{:.2}", t.ratio),
                if t.met { "yes" } else { "NO" }.to_string(),
            ]);
        }
    }
    render(
        &[
            "isolation",
            "tenant",
            "resource",
            "guarantee [tokens/s]",
            "throughput [tokens/s]",
            "ratio",
            "met",
        ],
        &rows,
    )
}

fn enforcement_figure(exp: &EnforcementExperiment) -> Figure {
    let mut ratio = Chart::new("throughput / guarantee per tenant (pulsar Fig. 12/13)")
        .x_label("tenant (0 = A, 1 = B, 2 = C, 3 = D)")
        .y_label("throughput / guarantee")
        .y_from_zero(true);
    for m in &exp.modes {
        let pts = m
            .tenants
            .iter()
            .enumerate()
            .map(|(k, t)| (k as f64, t.ratio))
            .collect();
        ratio = ratio.series(Series::points(m.isolation.as_str(), pts));
    }
    ratio = ratio.series(Series::line("guarantee", vec![(0.0, 1.0), (3.0, 1.0)]));
    let mut charts = vec![ratio];
    for m in &exp.modes {
        charts.push(throughput_chart(
            format!("{}: throughput over time", m.isolation.as_str()),
            m.tenants.iter().map(|t| t.tenant.as_str()),
            &m.series,
        ));
    }
    Figure::new(charts).columns(2)
}

/// Tokens/s of each tenant over time, one step series per tenant: `series` holds, per sample
/// time [s], one value per tenant in `tenants`' order.
pub(crate) fn throughput_chart<'a>(
    title: String,
    tenants: impl Iterator<Item = &'a str>,
    series: &[(f64, Vec<f64>)],
) -> Chart {
    let mut c = Chart::new(title)
        .x_label("time [s]")
        .y_label("tokens/s")
        .y_from_zero(true);
    for (k, name) in tenants.enumerate() {
        let pts = series.iter().map(|(x, v)| (*x, v[k])).collect();
        c = c.series(Series::step(name.to_string(), pts));
    }
    c
}

pub(super) fn capacity_table(exp: &CapacityExperiment) -> String {
    let rows: Vec<Vec<String>> = exp
        .phases
        .iter()
        .map(|p| {
            vec![
                p.active.join("+"),
                format!("{:.0}", p.start_s),
                format!("{:.0}", p.final_estimate),
                p.settle_intervals
                    .map_or_else(|| "-".into(), |s| s.to_string()),
                p.guarantee_ratio
                    .iter()
                    .map(|r| format!("{r:.2}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                format!("{:.2}", p.ratio_spread),
                format!("{:.2}", p.residence_ms),
                if p.guarantees_met { "yes" } else { "NO" }.to_string(),
                if p.holds() { "yes" } else { "NO" }.to_string(),
            ]
        })
        .collect();
    render(
        &[
            "active",
            "from [s]",
            "estimate [tokens/s]",
            "settled after [intervals]",
            "throughput / guarantee",
            "spread",
            "residence [ms]",
            "met",
            "holds",
        ],
        &rows,
    )
}

pub(super) fn capacity_figure(exp: &CapacityExperiment) -> Figure {
    let mut c = Chart::new("key-value store capacity estimate (pulsar Fig. 14(a))")
        .x_label("time [s]")
        .y_label("tokens/s")
        .y_from_zero(true);
    c = c.series(Series::step(
        "estimate",
        exp.series.iter().map(|p| (p.t_s, p.estimate)).collect(),
    ));
    c = c.series(Series::step(
        "appliance throughput",
        exp.series.iter().map(|p| (p.t_s, p.appliance)).collect(),
    ));
    for (k, (name, _)) in exp.tenants.iter().enumerate() {
        c = c.series(Series::step(
            name.clone(),
            exp.series
                .iter()
                .map(|p| (p.t_s, p.throughput[k]))
                .collect(),
        ));
    }
    Figure::new(vec![c])
}
