//! `tailbound graph ...`: general server graphs (tailbound-graph): per-flow delay and backlog
//! bounds, and conversion to and from Saihu's JSON network description.

use super::{load_trace, read_input};
use crate::output::{note, print, print_json, write_text};
use crate::table::{bound_cell, render};
use crate::Outcome;
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use tailbound_calculus::dnc::Envelope;
use tailbound_curves::mmpp::SizeKind;
use tailbound_curves::rb::prune;
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_graph::{analyze, saihu, Graph, GraphMethod, Outcome as Bound, TokenBucketSpec};
use tailbound_model::units::format_bytes;
use tailbound_model::Stage;

#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Delay and backlog bounds of every flow of a server graph by each method that applies
    /// (tfa, sfa: deterministic; snc: SNC-Meister on MMPP flows)
    Bound(GraphBoundArgs),
    /// Convert a server graph between tailbound's network file and Saihu's JSON
    Convert(ConvertArgs),
}

pub fn run(cmd: GraphCommand) -> anyhow::Result<Outcome> {
    match cmd {
        GraphCommand::Bound(a) => bound(a),
        GraphCommand::Convert(a) => convert(a),
    }
}

#[derive(Debug, Args)]
pub struct GraphBoundArgs {
    /// the network: tailbound's TOML or JSON file (servers, flows), or Saihu's JSON
    /// (recognized by its top-level "network" object)
    pub file: PathBuf,
    /// methods, comma-separated (default: all of tfa, sfa, snc)
    #[arg(long, value_delimiter = ',')]
    pub method: Vec<GraphMethod>,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

/// The formats `graph convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GraphFormat {
    /// Saihu's JSON network description
    Saihu,
    /// tailbound's network file: TOML, or JSON when --out ends in .json
    Tailbound,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// the network file (tailbound TOML/JSON or Saihu JSON)
    pub file: PathBuf,
    /// the format to write
    #[arg(long)]
    pub to: GraphFormat,
    /// write here (whole or not at all) instead of stdout
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Most linear pieces of an arrival curve characterized from a trace (pruning keeps it an
/// upper bound).
const TRACE_CURVE_PIECES: usize = 32;

/// Reads a network file of any accepted format; errors name the file. Flows with a `trace`
/// get their missing arrival curve and MMPP from it (request bytes, the whole trace).
pub fn load_graph(path: &Path) -> anyhow::Result<Graph> {
    let text = read_input(path, "network file")?;
    let name = path.display();
    let is_toml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let mut graph = if is_toml {
        Graph::from_toml(&text).with_context(|| format!("network file {name}"))?
    } else {
        let saihu_format = serde_json::from_str::<serde_json::Value>(&text)
            .map(|v| v.get("network").is_some_and(|n| n.is_object()))
            .unwrap_or(false);
        if saihu_format {
            let imported =
                saihu::import(&text).with_context(|| format!("Saihu network file {name}"))?;
            for line in &imported.ignored {
                note(format_args!("{name}: not modelled, ignored: {line}"));
            }
            imported.graph
        } else {
            Graph::from_json(&text).with_context(|| format!("network file {name}"))?
        }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let profile = StorageProfile::intel710_ssd();
    for flow in &mut graph.flows {
        let Some(trace) = &flow.trace else { continue };
        if !flow.arrival.is_empty() && flow.mmpp.is_some() {
            continue;
        }
        let trace_path = dir.join(trace);
        let requests = load_trace(&trace_path)
            .with_context(|| format!("network file {name}: flow {:?}: trace", flow.name))?
            .requests;
        let models = tailbound_scenario::characterize(
            &requests,
            stage_work(Stage::NetIn, &profile),
            SizeKind::Exponential,
            1.0,
            0.0,
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "{name}: flow {:?}: trace {}: {e}",
                flow.name,
                trace_path.display()
            )
        })?;
        if flow.arrival.is_empty() {
            if let Some(curve) = &models.arrival {
                let curve = prune(curve, TRACE_CURVE_PIECES).with_context(|| {
                    format!("{name}: flow {:?}: pruning the arrival curve", flow.name)
                })?;
                flow.arrival = Envelope::from(&curve)
                    .buckets()
                    .into_iter()
                    .map(|b| TokenBucketSpec {
                        rate_bytes_per_s: b.rate,
                        burst_bytes: b.burst,
                    })
                    .collect();
            }
        }
        if flow.mmpp.is_none() {
            flow.mmpp = models.mmpp;
        }
    }
    graph
        .validate()
        .with_context(|| format!("network file {name}"))?;
    Ok(graph)
}

fn bound(a: GraphBoundArgs) -> anyhow::Result<Outcome> {
    let graph = load_graph(&a.file)?;
    let methods = if a.method.is_empty() {
        GraphMethod::ALL.to_vec()
    } else {
        a.method.clone()
    };
    let report =
        analyze(&graph, &methods).with_context(|| format!("network file {}", a.file.display()))?;
    if a.json {
        print_json(&report)?;
        return Ok(Outcome::Ok);
    }
    let rows: Vec<Vec<String>> = report
        .flows
        .iter()
        .flat_map(|f| {
            f.bounds.iter().map(move |b| {
                let (delay, backlog, note) = match &b.outcome {
                    Bound::Bounded {
                        delay_s,
                        backlog_bytes,
                        violation_probability,
                    } => (
                        bound_cell(Some(*delay_s)),
                        backlog_bytes.map_or("-".into(), format_bytes),
                        if *violation_probability > 0.0 {
                            format!("p{}", 100.0 * (1.0 - violation_probability))
                        } else {
                            "worst case".into()
                        },
                    ),
                    Bound::Unbounded { reason } => ("unbounded".into(), "-".into(), reason.clone()),
                    Bound::NotApplicable { reason } => {
                        ("-".into(), "-".into(), format!("n/a: {reason}"))
                    }
                };
                vec![f.flow.clone(), b.method.to_string(), delay, backlog, note]
            })
        })
        .collect();
    let mut text = render(&["flow", "method", "delay", "backlog", "holds"], &rows);
    let servers: Vec<Vec<String>> = report
        .servers
        .iter()
        .map(|s| {
            vec![
                s.server.clone(),
                s.scheduling.to_string(),
                format!("{:.4}", s.utilization),
                bound_cell(s.tfa.delay_s()),
                s.tfa.backlog_bytes().map_or("-".into(), format_bytes),
            ]
        })
        .collect();
    text.push('\n');
    text.push_str(&render(
        &[
            "server",
            "scheduling",
            "utilization",
            "TFA delay",
            "backlog",
        ],
        &servers,
    ));
    print(&text)?;
    Ok(Outcome::Ok)
}

fn convert(a: ConvertArgs) -> anyhow::Result<Outcome> {
    let graph = load_graph(&a.file)?;
    let context = || format!("converting {} to {:?}", a.file.display(), a.to);
    let json_out = a
        .out
        .as_ref()
        .and_then(|p| p.extension())
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    let mut text = match a.to {
        GraphFormat::Saihu => saihu::export(&graph).with_context(context)?,
        GraphFormat::Tailbound if json_out => {
            serde_json::to_string_pretty(&graph).with_context(context)?
        }
        GraphFormat::Tailbound => graph.to_toml().with_context(context)?,
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    match &a.out {
        Some(p) => write_text(p, &text)?,
        None => print(&text)?,
    }
    Ok(Outcome::Ok)
}
