//! `tailbound place WORKLOADS`: choose each workload's server and rate limits
//! (WorkloadCompactor or a baseline) and print the placement and its decisions.
//!
//! WORKLOADS is either a workloads CSV (`tailbound_placement::workloads_csv`: one workload per
//! line, `name,trace,slo,percentile`, trace paths relative to the CSV) or a scenario file
//! (`.toml`, or JSON), whose tenants' traces and SLOs are used. Each workload is characterized
//! on the part of its trace `--characterize` names: by default the whole trace for a CSV or an
//! SNC-Meister topology, a tailbound scenario's own `[characterize] part`. A scenario's tenants are placed on its own server hosts
//! (those with storage first; `--servers` at most their number), and the decisions speak the
//! scenario's names — hosts, and only the flows each tenant has — so that `tailbound simulate
//! SCENARIO --decisions` replays them.

use super::{load_trace, print_json, progress};
use crate::args;
use crate::table::render;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::Args;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use tailbound_curves::StorageProfile;
use tailbound_model::units::{format_duration_s, BytesPerSec};
use tailbound_model::{Bucket, Decisions, Network, Request, Slo, Stage};
use tailbound_placement::{
    characterize, parse_workloads_csv, LpStage, Placement, PlacementConfig, Placer, Policy,
    ServerSpec, Workload,
};
use tailbound_scenario::{Models, Scenario, TenantSource};
use tailbound_trace::Part;

#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// workloads: a CSV `name,trace,slo,percentile` or a scenario file
    pub workloads: PathBuf,
    /// at most this many servers (workloads that do not fit are rejected); 1 to 100000, and
    /// for a scenario at most its server hosts (their number by default)
    #[arg(long, value_name = "N", value_parser = args::count(1, 100_000))]
    pub servers: Option<usize>,
    /// compactor, compactor-fff, avg-rate:K (e.g. avg-rate:1.5), knee or effective-bw
    #[arg(long, default_value = "compactor-fff")]
    pub policy: Policy,
    /// safety margin: scale every r-b curve by 1 + this (0.1 = 10%); 0 to 10
    #[arg(long, default_value_t = 0.0, value_parser = args::real(0.0, 10.0, false))]
    pub margin: f64,
    /// NIC rate of servers and clients (1Kbit to 10000Gbit)
    #[arg(long, default_value = "1Gbit", value_parser = args::link())]
    pub link: BytesPerSec,
    /// SSDs per server (storage capacity in busy-s/s); more than 0, at most 1000
    #[arg(long, default_value_t = 1.0, value_parser = args::real(0.0, 1000.0, true))]
    pub ssds: f64,
    /// device profile JSON (WorkloadCompactor's profileSSD.txt format); default: the bundled
    /// Intel 710 SSD
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// prune every r-b curve to at most this many token buckets, 1 to 10000 (default: exact
    /// curves)
    #[arg(long, value_name = "K", value_parser = args::count(1, 10_000))]
    pub max_segments: Option<usize>,
    /// the part of each trace that characterizes its workload: whole or first-half; default the
    /// whole trace for a CSV or an SNC-Meister topology, a tailbound scenario's
    /// `[characterize] part`
    #[arg(long, value_name = "PART", value_parser = args::characterize())]
    pub characterize: Option<Part>,
    /// print JSON on stdout instead of a table
    #[arg(long)]
    pub json: bool,
    /// also write the decisions (for `tailbound simulate --decisions`) to this file
    #[arg(long, value_name = "FILE")]
    pub decisions_out: Option<PathBuf>,
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
    /// [bytes/s, bytes] or [busy-s/s, busy-s]
    #[serde(flatten)]
    pub bucket: Bucket,
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

fn part_of(
    trace: &tailbound_trace::Trace,
    part: Part,
    origin: &str,
) -> anyhow::Result<Vec<Request>> {
    let chosen = part
        .of(trace)
        .with_context(|| format!("cannot take the {part} of the trace of {origin}"))?;
    Ok(chosen.requests)
}

fn read_csv(path: &Path, part: Part) -> anyhow::Result<Vec<Input>> {
    let text = super::read_input(path, "workloads")?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for w in parse_workloads_csv(path, &text)? {
        let at = || format!("{}:{}", path.display(), w.line);
        let trace = load_trace(&dir.join(&w.trace)).with_context(at)?;
        out.push(Input {
            requests: part_of(&trace, part, &at())?,
            name: w.name,
            slo: w.slo,
        });
    }
    Ok(out)
}

fn read_scenario(path: &Path, part: Option<Part>) -> anyhow::Result<(Vec<Input>, Scenario)> {
    // placement characterizes the requests itself: no MMPP or arrival curve needed here
    let sc = tailbound_scenario::load_part(path, Models::None, part)?;
    let mut out = Vec::new();
    for (spec, source) in sc.network.tenants.iter().zip(&sc.sources) {
        let origin = format!("tenant {:?} of {}", spec.name, path.display());
        let (trace, part) = match source {
            TenantSource::Trace { path, part } => (load_trace(path)?, *part),
            TenantSource::Generated { spec, seed, part } => (
                tailbound_trace::generate(spec, *seed)
                    .with_context(|| format!("cannot generate the trace of {origin}"))?,
                *part,
            ),
            _ => bail!("{origin} has no requests (a model config); placement needs traces"),
        };
        out.push(Input {
            name: spec.name.clone(),
            slo: spec.slo,
            requests: part_of(&trace, part, &origin)?,
        });
    }
    Ok((out, sc))
}

/// The scenario's hosts that can take placed tenants: every host some tenant uses as its
/// server, those with storage first (WorkloadCompactor's servers have an SSD, and first-fit
/// fills the first servers first), each group in file order.
fn candidate_servers(net: &Network) -> Vec<usize> {
    let mut servers: Vec<usize> = (0..net.hosts.len())
        .filter(|&h| {
            net.tenants
                .iter()
                .any(|t| t.hosts.is_some_and(|th| th.server == h))
        })
        .collect();
    servers.sort_by_key(|&h| net.hosts[h].storage.is_none());
    servers
}

/// The placement's decisions in the scenario's own terms, so that `tailbound simulate
/// SCENARIO --decisions` replays them: placement server k is the scenario's k-th candidate
/// host ([`candidate_servers`]), and each tenant keeps the limits of the stages it has flows
/// on, under its flows' names (the LP bounds every stage of every workload; a tenant without
/// storage has no storage flow to limit).
fn scenario_decisions(
    mut d: Decisions,
    net: &Network,
    servers: &[usize],
    placed: &[(String, usize)],
    origin: &Path,
) -> anyhow::Result<Decisions> {
    for t in &mut d.tenants {
        let Some(ti) = net.tenants.iter().position(|s| s.name == t.name) else {
            bail!(
                "placement decided on tenant {:?}, which {} does not have",
                t.name,
                origin.display()
            );
        };
        if let Some(&(_, k)) = placed.iter().find(|(name, _)| *name == t.name) {
            let Some(&host) = servers.get(k) else {
                bail!(
                    "tenant {:?} was placed on server {k}, but {} has {} server hosts; give \
                     --servers {} or fewer",
                    t.name,
                    origin.display(),
                    servers.len(),
                    servers.len()
                );
            };
            let flows = &net.tenants[ti].flows;
            let uses_storage = flows.iter().any(|&f| net.flows[f].stage == Stage::Storage);
            if uses_storage && net.hosts[host].storage.is_none() {
                bail!(
                    "tenant {:?} uses storage but was placed on host {:?}, which has none; give \
                     --servers {} (the hosts with storage) or add storage to that host",
                    t.name,
                    net.hosts[host].name,
                    servers
                        .iter()
                        .filter(|&&h| net.hosts[h].storage.is_some())
                        .count()
                );
            }
            t.server = Some(net.hosts[host].name.clone());
        }
        t.limits.retain_mut(
            |l| match flows_of(net, ti).find(|&f| net.flows[f].stage == l.stage) {
                Some(f) => {
                    l.flow = net.flows[f].name.clone();
                    true
                }
                None => false,
            },
        );
    }
    Ok(d)
}

fn flows_of(net: &Network, tenant: usize) -> impl Iterator<Item = usize> + '_ {
    net.tenants[tenant].flows.iter().copied()
}

pub fn run(a: PlaceArgs) -> anyhow::Result<Outcome> {
    let is_csv = a
        .workloads
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let (inputs, scenario) = if is_csv {
        let part = a.characterize.unwrap_or(Part::Whole);
        (read_csv(&a.workloads, part)?, None)
    } else {
        let part = super::characterized_part(&a.workloads, a.characterize)?;
        let (inputs, sc) = read_scenario(&a.workloads, part)?;
        (inputs, Some(sc))
    };
    // a scenario's tenants are placed on its own server hosts
    let servers = scenario.as_ref().map(|sc| candidate_servers(&sc.network));
    let max_servers = match (&servers, a.servers) {
        (Some(s), Some(n)) if n > s.len() => bail!(
            "--servers {n}: {} has {} server hosts; give at most {}",
            a.workloads.display(),
            s.len(),
            s.len()
        ),
        (Some(s), None) => Some(s.len()),
        (_, n) => n,
    };
    let profile = match &a.profile {
        Some(p) => StorageProfile::load(p)?,
        None => StorageProfile::intel710_ssd(),
    };
    let server = ServerSpec {
        link_bytes_per_s: a.link.0,
        storage_rate: a.ssds,
        device_latency_s: profile.latency_s.unwrap_or(0.0),
    };
    let mut placer = Placer::new(PlacementConfig {
        policy: a.policy,
        server,
        safety_margin: a.margin,
        max_servers,
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
        if !matches!(outcome, Placement::Placed { .. }) {
            rejected += 1;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let assignments = placer.assignments();
    let decisions = match (&scenario, &servers) {
        (Some(sc), Some(servers)) => {
            let placed: Vec<(String, usize)> = assignments
                .iter()
                .map(|a| (a.name.clone(), a.server))
                .collect();
            scenario_decisions(
                placer.decisions(),
                &sc.network,
                servers,
                &placed,
                &a.workloads,
            )?
        }
        _ => placer.decisions(),
    };
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
                                bucket: a.limits[s.index()],
                                share: a.buckets[s.index()].rate,
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
        crate::output::write_json(path, &report.decisions)?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&format!(
            "{}{}: {} placed on {} servers, {} rejected\n",
            table(&report),
            report.policy,
            report.placed,
            report.servers_used,
            report.rejected
        ))?;
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
                    l.bucket.burst * l.share / l.bucket.rate
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
