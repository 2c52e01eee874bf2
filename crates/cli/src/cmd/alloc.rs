//! `tailbound alloc`: multi-resource allocation (pulsar §4.1) of a flat JSON input, and the
//! controller-scalability benchmark of pulsar §6.4.
//!
//! `tailbound alloc INPUT --mra drf|hdrf|first-fit [--json]` (also `alloc run INPUT`) and
//! `tailbound alloc bench --vms 24000 --servers 2000 --appliances 200 --active 1.0 --mra drf`.

use super::print_json;
use crate::args;
use crate::table::render;
use crate::Outcome;
use anyhow::Context;
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;
use tailbound_allocation::bench::FatTree;
use tailbound_allocation::input::AllocInput;
use tailbound_allocation::{Mechanism, Mra};

/// `tailbound alloc ...`: a positional INPUT, or a subcommand.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct AllocArgs {
    #[command(subcommand)]
    pub command: Option<AllocCommand>,
    #[command(flatten)]
    pub run: AllocRunArgs,
}

#[derive(Debug, Subcommand)]
pub enum AllocCommand {
    /// Allocate a JSON input (the same as `tailbound alloc INPUT`)
    Run(AllocRunArgs),
    /// Time the global allocation on pulsar §6.4's fat-tree datacenter
    Bench(AllocBenchArgs),
}

#[derive(Debug, Args)]
pub struct AllocRunArgs {
    /// JSON: {"resources": [{"name", "capacity"}], "flows": [{"name", "tenant", "weight",
    /// "demand": {resource: tokens/s}}]}
    #[arg(value_name = "INPUT", required = true)]
    pub input: Option<PathBuf>,
    /// allocation mechanism: drf, hdrf or first-fit
    #[arg(long, default_value = "drf")]
    pub mra: Mechanism,
    /// print {"allocations": [{"flow", "alloc": {resource: tokens/s}}]}
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AllocBenchArgs {
    /// VMs, one flow each (1 to 1000000; the paper: 24000)
    #[arg(long, default_value_t = 24_000, value_parser = args::count(1, 1_000_000))]
    pub vms: usize,
    /// servers, each with an uplink and a downlink (1 to 100000)
    #[arg(long, default_value_t = 2_000, value_parser = args::count(1, 100_000))]
    pub servers: usize,
    /// appliances (0 to 100000)
    #[arg(long, default_value_t = 200, value_parser = args::count(0, 100_000))]
    pub appliances: usize,
    /// fraction of VMs whose flow has demand (0 to 1)
    #[arg(long, default_value_t = 1.0, value_parser = args::real(0.0, 1.0, false))]
    pub active: f64,
    /// allocation mechanism: drf, hdrf or first-fit
    #[arg(long, default_value = "drf")]
    pub mra: Mechanism,
    /// allocations to time (the median is reported), 1 to 1000
    #[arg(long, default_value_t = 5, value_parser = args::count(1, 1000))]
    pub runs: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// `tailbound alloc bench --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocBenchReport {
    pub mra: String,
    pub vms: usize,
    pub servers: usize,
    pub appliances: usize,
    /// 2·servers + appliances
    pub resources: usize,
    pub flows: usize,
    /// non-zero demand entries
    pub entries: usize,
    pub active: f64,
    pub runs: usize,
    /// median allocation time [s]
    pub seconds: f64,
    pub min_seconds: f64,
    pub max_seconds: f64,
    /// flows at their full demand in the allocation
    pub satisfied_flows: usize,
}

pub fn run(args: AllocArgs) -> anyhow::Result<Outcome> {
    match args.command {
        Some(AllocCommand::Run(a)) => run_input(a),
        Some(AllocCommand::Bench(b)) => bench(b),
        None => run_input(args.run),
    }
}

fn run_input(a: AllocRunArgs) -> anyhow::Result<Outcome> {
    let path = a.input.context("an INPUT file is required")?;
    let name = path.display().to_string();
    let text = super::read_input(&path, "allocation input")?;
    let input = AllocInput::from_json(&name, &text)?;
    let mra = a.mra;
    let out = input
        .allocate(&mra)
        .with_context(|| format!("invalid allocation input {name}"))?;
    if a.json {
        print_json(&out)?;
    } else {
        let mut rows = Vec::new();
        for (f, fa) in input.flows.iter().zip(&out.allocations) {
            for (r, v) in &fa.alloc {
                rows.push(vec![
                    fa.flow.clone(),
                    r.clone(),
                    format!("{v:.6}"),
                    format!("{:.6}", f.demand[r]),
                ]);
            }
        }
        crate::output::print(&render(
            &["flow", "resource", "alloc [tokens/s]", "demand [tokens/s]"],
            &rows,
        ))?;
    }
    Ok(Outcome::Ok)
}

fn bench(b: AllocBenchArgs) -> anyhow::Result<Outcome> {
    let scenario = FatTree {
        vms: b.vms,
        servers: b.servers,
        appliances: b.appliances,
        active: b.active,
        seed: b.seed,
    };
    let p = scenario.build().map_err(anyhow::Error::msg)?;
    let mra = b.mra;
    let bar = super::progress(b.runs as u64, b.json, "allocating");
    let mut times = Vec::with_capacity(b.runs);
    let mut satisfied = 0;
    for _ in 0..b.runs {
        let t0 = Instant::now();
        let a = mra.allocate(&p);
        times.push(t0.elapsed().as_secs_f64());
        satisfied = a.fraction.iter().filter(|&&x| x >= 1.0 - 1e-12).count();
        bar.inc(1);
    }
    bar.finish_and_clear();
    times.sort_by(f64::total_cmp);
    let report = AllocBenchReport {
        mra: mra.name().to_string(),
        vms: b.vms,
        servers: b.servers,
        appliances: b.appliances,
        resources: p.resources(),
        flows: p.flows(),
        entries: p.entries(),
        active: b.active,
        runs: b.runs,
        seconds: times[times.len() / 2],
        min_seconds: times[0],
        max_seconds: times[times.len() - 1],
        satisfied_flows: satisfied,
    };
    if b.json {
        print_json(&report)?;
    } else {
        crate::output::print(&render(
            &[
                "mra",
                "VMs",
                "resources",
                "demand entries",
                "median [ms]",
                "min [ms]",
                "max [ms]",
            ],
            &[vec![
                report.mra.clone(),
                report.vms.to_string(),
                report.resources.to_string(),
                report.entries.to_string(),
                format!("{:.2}", report.seconds * 1e3),
                format!("{:.2}", report.min_seconds * 1e3),
                format!("{:.2}", report.max_seconds * 1e3),
            ]],
        ))?;
    }
    Ok(Outcome::Ok)
}
