//! `tailbound place WORKLOADS`: choose each workload's server and rate limits
//! (WorkloadCompactor or a baseline) and print the placement and its decisions.
//!
//! WORKLOADS is a workloads CSV (`tailbound_placement::workloads_csv`: one workload per
//! line, `name,trace,slo,percentile`, trace paths relative to the CSV), a WorkloadCompactor
//! topology (`tailbound_placement::wc_topology`: JSON with `clients`, `clientVMs` and
//! `serverVMs`; placed on its servers in the original's order, each workload in a client VM
//! grouped by server as the original does, the client NICs shared:
//! `tailbound_placement::client_hosts`), or a scenario file (`.toml`, or JSON), whose tenants'
//! traces and SLOs are used. Each workload is characterized
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
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use tailbound_curves::StorageProfile;
use tailbound_model::units::{format_duration_s, BytesPerSec};
use tailbound_model::{Bucket, Decisions, Network, Request, Slo, Stage};
use tailbound_placement::{
    characterize, is_wc_topology, parse_wc_arrival_curve, parse_wc_topology, parse_workloads_csv,
    wc_curve_file_name, ClientHosts, LpStage, Placement, PlacementConfig, Placer, Policy,
    ServerSpec, StageCurves, Workload, WorkloadLine,
};
use tailbound_scenario::{Models, Scenario, TenantSource};
use tailbound_trace::Part;

#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// workloads: a CSV `name,trace,slo,percentile`, a WorkloadCompactor topology (JSON with
    /// clients, clientVMs and serverVMs) or a scenario file
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
    /// read each workload's r-b curves from WorkloadCompactor's arrival-curve files in this
    /// folder (its arrivalCurves/: `arrivalCurve<trace file name><networkIn|storageSSD|networkOut>.txt`)
    /// instead of characterizing its trace; a CSV or topology only
    #[arg(long, value_name = "DIR")]
    pub curves: Option<PathBuf>,
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
    /// `server<k>` (a topology's or scenario's host name); `None`: rejected
    pub server: Option<String>,
    /// the client host and VM it runs in (WorkloadCompactor topologies only)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<tailbound_placement::ClientVm>,
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

/// A workload read from the input, with what characterizes it.
struct Input {
    name: String,
    slo: Slo,
    traffic: Traffic,
}

/// The requests that characterize a workload (shared by the workloads that name the same
/// trace: each is read and characterized once), or its curves as given.
enum Traffic {
    Requests(Rc<Vec<Request>>),
    Curves(StageCurves),
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

/// The workloads of a CSV or topology, their traces read relative to its folder, each trace
/// once; with `curves`, their r-b curves read from WorkloadCompactor's arrival-curve files in
/// that folder instead (the traces are not read).
fn read_lines(
    path: &Path,
    lines: Vec<WorkloadLine>,
    part: Part,
    curves: Option<&Path>,
) -> anyhow::Result<Vec<Input>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut traces: HashMap<PathBuf, Rc<Vec<Request>>> = HashMap::new();
    let mut out = Vec::new();
    for w in lines {
        let at = || format!("{}:{}", path.display(), w.line);
        let traffic = match curves {
            Some(curves) => Traffic::Curves(read_wc_curves(curves, &w.trace).with_context(at)?),
            None => {
                let file = dir.join(&w.trace);
                let requests = match traces.get(&file) {
                    Some(r) => Rc::clone(r),
                    None => {
                        let trace = load_trace(&file).with_context(at)?;
                        let r = Rc::new(part_of(&trace, part, &at())?);
                        traces.insert(file, Rc::clone(&r));
                        r
                    }
                };
                Traffic::Requests(requests)
            }
        };
        out.push(Input {
            traffic,
            name: w.name,
            slo: w.slo,
        });
    }
    Ok(out)
}

/// A workload's r-b curves from the original's arrival-curve files under `dir`
/// (`arrivalCurve<trace file name><networkIn|storageSSD|networkOut>.txt`).
fn read_wc_curves(dir: &Path, trace: &Path) -> anyhow::Result<StageCurves> {
    let curve = |stage: Stage| -> anyhow::Result<tailbound_model::RbCurve> {
        let Some(name) = wc_curve_file_name(trace, stage) else {
            bail!(
                "trace {} has no file name to find its arrival curves by",
                trace.display()
            );
        };
        let file = dir.join(name);
        let text = super::read_input(&file, "arrival curve")?;
        Ok(parse_wc_arrival_curve(&file, &text)?)
    };
    Ok(StageCurves {
        net_in: curve(Stage::NetIn)?,
        storage: curve(Stage::Storage)?,
        net_out: curve(Stage::NetOut)?,
    })
}

/// A WorkloadCompactor topology: its servers and client hosts stand in for the placer's.
struct Topology {
    servers: Vec<String>,
    client_hosts: ClientHosts,
}

fn read_workloads(
    path: &Path,
    part: Part,
    curves: Option<&Path>,
) -> anyhow::Result<(Vec<Input>, Option<Topology>)> {
    let text = super::read_input(path, "workloads")?;
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    if is_csv {
        let lines = parse_workloads_csv(path, &text)?;
        return Ok((read_lines(path, lines, part, curves)?, None));
    }
    let t = parse_wc_topology(path, &text)?;
    let inputs = read_lines(path, t.workloads, part, curves)?;
    Ok((
        inputs,
        Some(Topology {
            servers: t.servers,
            client_hosts: t.client_hosts,
        }),
    ))
}

/// Whether `path` is a workloads CSV or a WorkloadCompactor topology (rather than a scenario).
fn is_workload_list(path: &Path) -> anyhow::Result<bool> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
    {
        return Ok(true);
    }
    let is_json = path
        .extension()
        .is_none_or(|e| !e.eq_ignore_ascii_case("toml"));
    Ok(is_json && is_wc_topology(&super::read_input(path, "workloads")?))
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
            traffic: Traffic::Requests(Rc::new(part_of(&trace, part, &origin)?)),
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
    let (inputs, scenario, topology) = if is_workload_list(&a.workloads)? {
        let part = a.characterize.unwrap_or(Part::Whole);
        let (inputs, topology) = read_workloads(&a.workloads, part, a.curves.as_deref())?;
        (inputs, None, topology)
    } else {
        if let Some(c) = &a.curves {
            bail!(
                "--curves {}: only a workloads CSV or a WorkloadCompactor topology takes \
                 arrival-curve files; {} is a scenario",
                c.display(),
                a.workloads.display()
            );
        }
        let part = super::characterized_part(&a.workloads, a.characterize)?;
        let (inputs, sc) = read_scenario(&a.workloads, part)?;
        (inputs, Some(sc), None)
    };
    // a scenario's tenants are placed on its own server hosts
    let servers = scenario.as_ref().map(|sc| candidate_servers(&sc.network));
    let host_count = servers
        .as_ref()
        .map(Vec::len)
        .or(topology.as_ref().map(|t| t.servers.len()));
    let max_servers = match (host_count, a.servers) {
        (Some(s), Some(n)) if n > s => bail!(
            "--servers {n}: {} has {s} server hosts; give at most {s}",
            a.workloads.display(),
        ),
        (Some(s), None) => Some(s),
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
    if let Some(t) = &topology {
        placer = placer.with_client_hosts(t.client_hosts.clone())?;
    }
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
    // workloads that share a trace share its curves
    let mut characterized: HashMap<*const Vec<Request>, StageCurves> = HashMap::new();
    for input in inputs {
        let curves = match input.traffic {
            Traffic::Curves(c) => c,
            Traffic::Requests(r) => match characterized.get(&Rc::as_ptr(&r)) {
                Some(c) => c.clone(),
                None => {
                    let c = characterize(&input.name, &r, &profile, a.max_segments)?;
                    characterized.insert(Rc::as_ptr(&r), c.clone());
                    c
                }
            },
        };
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
        _ => {
            let mut d = placer.decisions();
            if let Some(t) = &topology {
                // placement server k is the topology's k-th server in first-fit order
                for td in &mut d.tenants {
                    if let Some(a) = assignments.iter().find(|a| a.name == td.name) {
                        td.server = t.servers.get(a.server).cloned();
                    }
                }
            }
            d
        }
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
                client: a.and_then(|a| a.client.clone()),
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
