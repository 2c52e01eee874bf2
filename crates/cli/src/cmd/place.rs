//! `tailbound place WORKLOADS`: choose each workload's server and rate limits
//! (WorkloadCompactor or a baseline) and print the placement and its decisions.
//!
//! WORKLOADS is either a CSV `name,trace,slo_s,percentile` (one workload per line, trace paths
//! relative to the CSV, an optional header line, `#` comments; the SLO in seconds or with a
//! unit, e.g. `0.25` or `250ms`) or a scenario file (`.toml`, or JSON), whose tenants' traces
//! and SLOs are used. Each workload is characterized on the first half of its trace.

use super::{display_name, load_trace, print_json, progress};
use crate::table::render;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tailbound_curves::StorageProfile;
use tailbound_model::units::{format_duration_s, parse_duration_s, parse_rate_bytes_per_s};
use tailbound_model::{Decisions, Request, Slo};
use tailbound_placement::{
    characterize, Arrival, LpStage, PlacementConfig, Placer, Policy, ServerSpec, Workload,
};
use tailbound_scenario::TenantSource;

#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// workloads: a CSV `name,trace,slo_s,percentile` or a scenario file
    pub workloads: PathBuf,
    /// at most this many servers (workloads that do not fit are rejected)
    #[arg(long, value_name = "N")]
    pub servers: Option<usize>,
    /// compactor, compactor-fff, avg-rate:K (e.g. avg-rate:1.5), knee or effective-bw
    #[arg(long, default_value = "compactor-fff", value_parser = parse_policy)]
    pub policy: Policy,
    /// safety margin: scale every r-b curve by 1 + this (0.1 = 10%)
    #[arg(long, default_value_t = 0.0)]
    pub margin: f64,
    /// NIC rate of servers and clients
    #[arg(long, default_value = "1Gbit")]
    pub link: String,
    /// SSDs per server (storage capacity in busy-s/s)
    #[arg(long, default_value_t = 1.0)]
    pub ssds: f64,
    /// device profile JSON (WorkloadCompactor's profileSSD.txt format); default: the bundled
    /// Intel 710 SSD
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// prune every r-b curve to at most this many token buckets (default: exact curves)
    #[arg(long, value_name = "K")]
    pub max_segments: Option<usize>,
    /// print JSON on stdout instead of a table
    #[arg(long)]
    pub json: bool,
    /// also write the decisions (for `tailbound simulate --decisions`) to this file
    #[arg(long, value_name = "FILE")]
    pub decisions_out: Option<PathBuf>,
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    s.parse()
}

/// One workload's line of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacedWorkload {
    pub name: String,
    pub slo_s: f64,
    /// `server<k>`; `None`: rejected
    pub server: Option<String>,
    pub priority: Option<u32>,
    /// per stage (`net-in`, `storage`, `net-out`, `client-in`): [rate [work/s], burst [work]]
    pub limits: Vec<StageLimitReport>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageLimitReport {
    pub stage: String,
    /// [bytes/s] or [busy-s/s]
    pub rate: f64,
    /// [bytes] or [busy-s]
    pub burst: f64,
    /// rate as a fraction of the stage [1]
    pub share: f64,
}

/// `tailbound place --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceReport {
    pub policy: String,
    pub servers_used: usize,
    pub placed: usize,
    pub rejected: usize,
    pub lp_solves: u64,
    pub workloads: Vec<PlacedWorkload>,
    pub decisions: Decisions,
}

/// A workload read from the input, with the requests that characterize it.
struct Input {
    name: String,
    slo: Slo,
    requests: Vec<Request>,
}

fn first_half(trace: &tailbound_trace::Trace, origin: &str) -> anyhow::Result<Vec<Request>> {
    let (first, _) = tailbound_trace::split(trace, 0.5)
        .with_context(|| format!("cannot split the trace of {origin} in halves"))?;
    Ok(first.requests)
}

fn read_csv(path: &Path) -> anyhow::Result<Vec<Input>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || (i == 0 && line.starts_with("name,")) {
            continue;
        }
        let at = || format!("{}:{line_no}", path.display());
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != 4 {
            bail!(
                "{}: {} fields in {line:?}; expected name,trace,slo_s,percentile (e.g. w1,trace0000.csv,0.25,99.9)",
                at(),
                fields.len()
            );
        }
        let slo_s = fields[2]
            .parse::<f64>()
            .ok()
            .map_or_else(|| parse_duration_s(fields[2]), Ok)
            .with_context(|| {
                format!(
                    "{}: SLO {:?}; expected seconds (0.25) or a duration (250ms)",
                    at(),
                    fields[2]
                )
            })?;
        let percentile: f64 = fields[3].parse().with_context(|| {
            format!(
                "{}: percentile {:?} is not a number; expected e.g. 99.9",
                at(),
                fields[3]
            )
        })?;
        let slo = Slo::new(slo_s, percentile).with_context(at)?;
        let trace_path = dir.join(fields[1]);
        let trace = load_trace(&trace_path).with_context(at)?;
        out.push(Input {
            name: fields[0].to_string(),
            slo,
            requests: first_half(&trace, &at())?,
        });
    }
    if out.is_empty() {
        bail!(
            "{} lists no workloads; expected lines name,trace,slo_s,percentile",
            path.display()
        );
    }
    Ok(out)
}

fn read_scenario(path: &Path) -> anyhow::Result<Vec<Input>> {
    let sc = tailbound_scenario::load(path)?;
    let mut out = Vec::new();
    for (spec, source) in sc.network.tenants.iter().zip(&sc.tenants) {
        let origin = format!("tenant {:?} of {}", spec.name, path.display());
        let trace = match source {
            TenantSource::Trace { path, .. } => load_trace(path)?,
            TenantSource::Generated { spec, seed, .. } => tailbound_trace::generate(spec, *seed)
                .with_context(|| format!("cannot generate the trace of {origin}"))?,
            _ => bail!("{origin} has no requests (a model config); placement needs traces"),
        };
        out.push(Input {
            name: spec.name.clone(),
            slo: spec.slo,
            requests: first_half(&trace, &origin)?,
        });
    }
    Ok(out)
}

pub fn run(a: PlaceArgs) -> anyhow::Result<Outcome> {
    let is_csv = a
        .workloads
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let inputs = if is_csv {
        read_csv(&a.workloads)?
    } else {
        read_scenario(&a.workloads)?
    };
    let profile = match &a.profile {
        Some(p) => StorageProfile::load(p)?,
        None => StorageProfile::intel710_ssd(),
    };
    let server = ServerSpec {
        link_bytes_per_s: parse_rate_bytes_per_s(&a.link)?,
        storage_rate: a.ssds,
        device_latency_s: profile.latency_s.unwrap_or(0.0),
    };
    let mut placer = Placer::new(PlacementConfig {
        policy: a.policy,
        server,
        safety_margin: a.margin,
        max_servers: a.servers,
    })?;
    let bar = progress(inputs.len() as u64, a.json, "place");
    let mut rejected = 0;
    let slos: std::collections::HashMap<String, f64> = inputs
        .iter()
        .map(|i| (i.name.clone(), i.slo.latency_s))
        .collect();
    if slos.len() != inputs.len() {
        bail!(
            "{} names a workload twice; workload names must be unique",
            a.workloads.display()
        );
    }
    for input in inputs {
        let curves = characterize(&input.name, &input.requests, &profile, a.max_segments)?;
        let (_, outcome) = placer.arrive(Workload {
            name: input.name,
            slo: input.slo,
            curves,
        })?;
        if !matches!(outcome, Arrival::Placed { .. }) {
            rejected += 1;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let decisions = placer.decisions();
    let assignments = placer.assignments();
    let workloads: Vec<PlacedWorkload> = decisions
        .tenants
        .iter()
        .map(|t| {
            let a = assignments.iter().find(|a| a.name == t.name);
            PlacedWorkload {
                name: t.name.clone(),
                slo_s: slos.get(&t.name).copied().unwrap_or_default(),
                server: t.server.clone(),
                priority: t.priority,
                limits: a
                    .map(|a| {
                        LpStage::ALL
                            .iter()
                            .map(|s| StageLimitReport {
                                stage: s.as_str().into(),
                                rate: a.limits[s.index()].rate,
                                burst: a.limits[s.index()].burst,
                                share: a.buckets[s.index()].r,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect();
    let report = PlaceReport {
        policy: a.policy.to_string(),
        servers_used: placer.servers_in_use(),
        placed: assignments.len(),
        rejected,
        lp_solves: placer.lp_solves(),
        workloads,
        decisions,
    };
    if let Some(path) = &a.decisions_out {
        let json = serde_json::to_string_pretty(&report.decisions)?;
        std::fs::write(path, json + "\n")
            .with_context(|| format!("cannot write {}", display_name(path)))?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        print!("{}", table(&report));
        println!(
            "{}: {} placed on {} servers, {} rejected",
            report.policy, report.placed, report.servers_used, report.rejected
        );
    }
    Ok(if rejected == 0 {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn table(r: &PlaceReport) -> String {
    let headers = [
        "workload",
        "server",
        "priority",
        "net-in",
        "storage",
        "net-out",
        "client-in",
    ];
    let rows: Vec<Vec<String>> = r
        .workloads
        .iter()
        .map(|w| {
            let mut row = vec![
                w.name.clone(),
                w.server.clone().unwrap_or_else(|| "rejected".into()),
                w.priority.map_or_else(|| "-".into(), |p| p.to_string()),
            ];
            for l in &w.limits {
                let burst_s = if l.share > 0.0 {
                    l.burst * l.share / l.rate
                } else {
                    0.0
                };
                row.push(format!(
                    "{:.1}% / {}",
                    l.share * 100.0,
                    format_duration_s(burst_s)
                ));
            }
            row.resize(headers.len(), "-".into());
            row
        })
        .collect();
    render(&headers, &rows)
}
