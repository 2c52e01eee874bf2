//! `tailbound experiment ...`: the papers' experiments, each printing a table (or JSON) and
//! optionally writing JSON to a file and an SVG figure.

use super::{progress, ExperimentOutput};
use crate::table::{bound_cell, render};
use crate::Outcome;
use clap::{Args, Subcommand};
use tailbound_calculus::{Method, ThetaSearch};
use tailbound_experiments::bounds::{
    tenant_counts, vs_dependent, vs_nines, vs_tenants, BoundsConfig, BoundsExperiment,
    TenantWorkload,
};
use tailbound_model::units::BytesPerSec;
use tailbound_model::Percentile;
use tailbound_plot::{Chart, Figure, Scale, Series};

#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// snc-meister Fig. 7: bound vs number of tenants sharing two queues
    BoundsTenants(BoundsTenantsArgs),
    /// snc-meister Fig. 8: bound vs fraction of tenants that are dependent
    BoundsDependent(BoundsDependentArgs),
    /// snc-meister Fig. 13: bound vs number of nines in the SLO percentile
    BoundsNines(BoundsNinesArgs),
    /// pulsar Fig. 12/13/14: virtual datacenters in simulation
    #[command(subcommand)]
    Vdc(super::experiment_vdc::VdcCommand),
    /// snc-meister Fig. 1/10/11: tenants admitted by SNC-Meister and the DNC baselines, replayed
    Admission(super::experiment_admission::AdmissionArgs),
    /// workload-compactor Fig. 6/11/12/13: servers used by WorkloadCompactor vs the baselines
    Placement(super::experiment_placement::PlacementArgs),
    /// EyeQ: a TCP tenant beside a bursty UDP blaster, and memcached's tail, with and
    /// without EyeQ's receiver-driven rate control (simulator)
    Eyeq(super::experiment_eyeq::EyeqArgs),
}

pub fn run(cmd: ExperimentCommand) -> anyhow::Result<Outcome> {
    match cmd {
        ExperimentCommand::Vdc(c) => super::experiment_vdc::run(c),
        ExperimentCommand::Admission(a) => super::experiment_admission::run_admission(a),
        ExperimentCommand::Placement(a) => super::experiment_placement::run_placement(a),
        ExperimentCommand::Eyeq(a) => super::experiment_eyeq::run_eyeq(a),
        ExperimentCommand::BoundsTenants(a) => {
            let cfg = a.common.config()?;
            let counts: Vec<usize> = match a.tenants {
                Some(list) => list,
                None => tenant_counts(a.max_tenants, a.step),
            };
            let bar = progress(counts.len() as u64, a.common.output.json, "bounds");
            let exp = vs_tenants(&cfg, &counts, || bar.inc(1))?;
            bar.finish_and_clear();
            a.common.emit(&exp)
        }
        ExperimentCommand::BoundsDependent(a) => {
            let cfg = a.common.config()?;
            let bar = progress(a.tenants as u64 + 1, a.common.output.json, "bounds");
            let exp = vs_dependent(&cfg, a.tenants, || bar.inc(1))?;
            bar.finish_and_clear();
            a.common.emit(&exp)
        }
        ExperimentCommand::BoundsNines(a) => {
            let mut cfg = a.common.config()?;
            // DNC bounds hold at every percentile: it is the flat reference line.
            if !cfg.methods.contains(&Method::Dnc) {
                cfg.methods.push(Method::Dnc);
            }
            let nines: Vec<u32> = (1..=a.max_nines).collect();
            let bar = progress(nines.len() as u64, a.common.output.json, "bounds");
            let exp = vs_nines(&cfg, a.tenants, &nines, || bar.inc(1))?;
            bar.finish_and_clear();
            a.common.emit(&exp)
        }
    }
}

/// Settings every bounds experiment takes.
#[derive(Debug, Args)]
pub struct BoundsCommon {
    /// rate of both queues, e.g. 1Gbit, 125MB/s (1Kbit to 10000Gbit)
    #[arg(long, default_value = "1Gbit", value_parser = crate::args::link())]
    pub link: BytesPerSec,
    /// seed of the synthetic tenants
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// SLO percentile (strictly between 0 and 100)
    #[arg(long, default_value = "99.9")]
    pub percentile: Percentile,
    /// analyses to compare, comma-separated: dnc, snc-hop, snc-conv, snc-meister,
    /// snc-martingale
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "dnc,snc-hop,snc-conv,snc-meister,snc-martingale"
    )]
    pub methods: Vec<Method>,
    /// θ search of the SNC bounds: brent or grid
    #[arg(long, default_value = "brent")]
    pub theta: ThetaSearch,
    #[command(flatten)]
    pub output: ExperimentOutput,
}

impl BoundsCommon {
    fn config(&self) -> anyhow::Result<BoundsConfig> {
        Ok(BoundsConfig {
            workload: TenantWorkload::default(),
            link_bytes_per_s: self.link.0,
            seed: self.seed,
            percentile: self.percentile,
            methods: self.methods.clone(),
            theta: self.theta,
        })
    }

    fn emit(&self, exp: &BoundsExperiment) -> anyhow::Result<Outcome> {
        self.output.emit(exp, || figure(exp), || table(exp))?;
        Ok(Outcome::Ok)
    }
}

/// Most tenants a bounds experiment takes (the papers' figures use at most 30).
pub const MAX_BOUNDS_TENANTS: u64 = 1000;
/// Most nines of a percentile `bounds-nines` evaluates (10⁻¹⁰⁰ is still a normal float).
pub const MAX_NINES: i64 = 100;

#[derive(Debug, Args)]
pub struct BoundsTenantsArgs {
    #[command(flatten)]
    pub common: BoundsCommon,
    /// tenant counts to evaluate, comma-separated, each 1 to 1000 (default: 1 and every
    /// --step up to --max-tenants)
    #[arg(long, value_delimiter = ',', value_parser = crate::args::count(1, MAX_BOUNDS_TENANTS))]
    pub tenants: Option<Vec<usize>>,
    /// most tenants (1 to 1000)
    #[arg(long, default_value_t = 30, value_parser = crate::args::count(1, MAX_BOUNDS_TENANTS))]
    pub max_tenants: usize,
    /// tenants added per point (1 to 1000)
    #[arg(long, default_value_t = 5, value_parser = crate::args::count(1, MAX_BOUNDS_TENANTS))]
    pub step: usize,
}

#[derive(Debug, Args)]
pub struct BoundsDependentArgs {
    #[command(flatten)]
    pub common: BoundsCommon,
    /// identical tenants sharing the queues (the paper: 7; 1 to 1000)
    #[arg(long, default_value_t = 7, value_parser = crate::args::count(1, MAX_BOUNDS_TENANTS))]
    pub tenants: usize,
}

#[derive(Debug, Args)]
pub struct BoundsNinesArgs {
    #[command(flatten)]
    pub common: BoundsCommon,
    /// identical tenants sharing the queues (1 to 1000)
    #[arg(long, default_value_t = 10, value_parser = crate::args::count(1, MAX_BOUNDS_TENANTS))]
    pub tenants: usize,
    /// largest number of nines (the paper goes to about thirty; 1 to 100)
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=MAX_NINES))]
    pub max_nines: u32,
}

fn methods(exp: &BoundsExperiment) -> Vec<String> {
    exp.methods.iter().map(|m| m.as_str().to_string()).collect()
}

fn table(exp: &BoundsExperiment) -> String {
    let names = methods(exp);
    let mut headers = vec![exp.x_label.as_str()];
    headers.extend(names.iter().map(String::as_str));
    let rows: Vec<Vec<String>> = exp
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![format!("{}", (r.x * 1000.0).round() / 1000.0)];
            row.extend(
                names
                    .iter()
                    .map(|m| bound_cell(r.bound_s.get(m).copied().flatten())),
            );
            row
        })
        .collect();
    render(&headers, &rows)
}

fn figure(exp: &BoundsExperiment) -> Figure {
    let title = match exp.experiment.as_str() {
        "tenants" => "latency bound vs tenants (snc-meister Fig. 7)",
        "dependent" => "latency bound vs dependent tenants (snc-meister Fig. 8)",
        _ => "latency bound vs nines of the percentile (snc-meister Fig. 13)",
    };
    let mut chart = Chart::new(title)
        .x_label(exp.x_label.clone())
        .y_label("latency bound [ms]")
        .y_scale(Scale::Log);
    for m in methods(exp) {
        let pts = exp
            .rows
            .iter()
            .filter_map(|r| r.bound_s.get(&m).copied().flatten().map(|s| (r.x, s * 1e3)))
            .collect();
        chart = chart.series(Series::samples(m, pts));
    }
    Figure::new(vec![chart])
}
