//! `tailbound demo`: the pipeline on the embedded synthetic tenant set, no files needed.
//!
//! The tenant set is a scenario in tailbound's own format (`demo.toml`, embedded in the
//! binary): it is generated from seeds, characterized on the first half of each trace (exact
//! arrival curves, MMPP fits, effective bandwidths per flow) and every tenant's latency is
//! bounded with SNC-Meister's analysis and with DNC. Then every admission policy decides the
//! tenants in file order and the second halves are replayed under its decisions: a small
//! snc-meister Fig. 10.

use super::{print_json, write_svg};
use crate::report::{DemoFlow, DemoPolicy, DemoReport, DemoTenant};
use crate::table::{bound_cell, render, si, slo_cell};
use crate::Outcome;
use anyhow::Context;
use clap::Args;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tailbound_admission::{Admission, Policy};
use tailbound_calculus::{bound_all, BoundOptions, Method};
use tailbound_curves::effbw::effective_bandwidth;
use tailbound_plot::{Chart, Figure, Scale, Series};
use tailbound_scenario::TenantSource;
use tailbound_sim::{packetization_allowance_s, Plan, Replay, ReplayPart, Service, ETHERNET_MTU};

/// The embedded tenant set.
pub const DEMO_SCENARIO: &str = include_str!("demo.toml");

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// plot every flow's r-b curve to this SVG file
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// print the embedded scenario file and exit
    #[arg(long)]
    pub print_scenario: bool,
}

/// The methods the demo compares.
const METHODS: [Method; 2] = [Method::SncMeister, Method::Dnc];

pub fn run(a: DemoArgs) -> anyhow::Result<Outcome> {
    if a.print_scenario {
        print!("{DEMO_SCENARIO}");
        return Ok(Outcome::Ok);
    }
    let name = Path::new("<embedded demo.toml>");
    let scenario = tailbound_scenario::own::parse_toml(name, DEMO_SCENARIO)
        .context("the embedded demo scenario")?;
    let net = &scenario.network;
    let mut bounds = BTreeMap::new();
    for m in METHODS {
        bounds.insert(m, bound_all(net, m, &BoundOptions::default())?);
    }
    let mut tenants = Vec::with_capacity(net.tenants.len());
    for (i, t) in net.tenants.iter().enumerate() {
        let mut flows = Vec::with_capacity(t.flows.len());
        for &f in &t.flows {
            let flow = &net.flows[f];
            let arrival = flow
                .arrival
                .as_ref()
                .context("demo flows carry arrival curves")?;
            // scenario curves continue at the characterized part's mean rate
            let mean = arrival.tail_rate();
            flows.push(DemoFlow {
                name: flow.name.clone(),
                path: flow
                    .path
                    .iter()
                    .map(|&q| net.queues[q].name.clone())
                    .collect(),
                mean_rate: (mean > 0.0).then_some(mean),
                burst: arrival.burst(),
                effective_bw: effective_bandwidth(&arrival.to_rb(), t.slo.latency_s)?,
                rb: arrival.to_rb().vertices().to_vec(),
                mmpp_states: flow.mmpp.as_ref().map_or(0, |m| m.states.len()),
            });
        }
        let model = match &scenario.tenants[i] {
            TenantSource::Generated { spec, .. } => spec.arrival.describe(),
            other => format!("{other:?}"),
        };
        tenants.push(DemoTenant {
            name: t.name.clone(),
            model,
            slo_s: t.slo.latency_s,
            percentile: t.slo.percentile.value(),
            group: t.group.clone(),
            flows,
            bound_s: METHODS
                .iter()
                .map(|m| (m.as_str().to_string(), bounds[m][i].total.seconds()))
                .collect(),
            meets_slo: METHODS
                .iter()
                .map(|m| (m.as_str().to_string(), bounds[m][i].meets_slo))
                .collect(),
        });
    }
    let replay = Replay::load(&scenario, ReplayPart::SecondHalf)?;
    let mut admission = Vec::new();
    for policy in Policy::ALL {
        let mut engine = Admission::new(net, policy)?
            .with_packetization(packetization_allowance_s(&scenario, ETHERNET_MTU))?;
        for t in 0..net.tenants.len() {
            engine.arrive(t)?;
        }
        let plan = Plan::from_decisions(&scenario, &engine.decisions())?;
        let result = replay.run(&plan, Service::default(), 180.0)?;
        admission.push(DemoPolicy {
            policy: policy.as_str().to_string(),
            admitted: result.tenants.iter().map(|t| t.name.clone()).collect(),
            bytes: result.tenants.iter().map(|t| t.bytes).sum(),
            violations: result
                .tenants
                .iter()
                .filter(|t| !t.meets_slo)
                .map(|t| t.name.clone())
                .collect(),
        });
    }
    let report = DemoReport { tenants, admission };
    if let Some(svg) = &a.svg {
        write_svg(svg, &figure(&report))?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        print!("{}", summary(&report));
    }
    Ok(Outcome::Ok)
}

fn figure(r: &DemoReport) -> Figure {
    let mut chart = Chart::new("r-b curves of every flow (first half of each trace)")
        .x_label("rate r [work/s]")
        .y_label("bucket b [work]")
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    for t in &r.tenants {
        for f in t.flows.iter().filter(|f| f.name.ends_with("-resp")) {
            chart = chart.series(Series::line(
                f.name.clone(),
                f.rb.iter().map(|&[r, b]| (r, b)).collect(),
            ));
        }
    }
    Figure::new(vec![chart])
}

fn summary(r: &DemoReport) -> String {
    let mut s = format!(
        "tailbound demo: {} synthetic tenants on 2 clients and 2 servers (1 Gbit links, one SSD),\n\
         characterized on the first half of each trace (`tailbound demo --print-scenario`)\n\n",
        r.tenants.len()
    );
    let yes = |ok: bool| if ok { "yes" } else { "NO" }.to_string();
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.model.clone(),
                slo_cell(t.percentile, t.slo_s),
                bound_cell(t.bound_s["snc-meister"]),
                yes(t.meets_slo["snc-meister"]),
                bound_cell(t.bound_s["dnc"]),
                yes(t.meets_slo["dnc"]),
            ]
        })
        .collect();
    s += &render(
        &[
            "tenant",
            "arrivals",
            "SLO",
            "SNC-Meister",
            "meets",
            "DNC",
            "meets",
        ],
        &rows,
    );
    s += "\nper flow (work: bytes on network queues, busy-seconds on the SSD):\n";
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .flat_map(|t| {
            t.flows.iter().map(|f| {
                let mean = f.mean_rate.unwrap_or(f64::NAN);
                vec![
                    f.name.clone(),
                    f.path.join(" → "),
                    si(mean),
                    si(f.burst),
                    si(f.effective_bw),
                    format!("{:.2}", f.effective_bw / mean),
                    f.rb.len().to_string(),
                    f.mmpp_states.to_string(),
                ]
            })
        })
        .collect();
    s += &render(
        &[
            "flow",
            "path",
            "mean/s",
            "burst α(0)",
            "eff. bw/s",
            "eff/mean",
            "r-b pieces",
            "MMPP states",
        ],
        &rows,
    );
    s += "\nadmission in file order, then replay of the second halves under each policy's \
          decisions:\n";
    let rows: Vec<Vec<String>> = r
        .admission
        .iter()
        .map(|p| {
            vec![
                p.policy.clone(),
                format!("{} of {}", p.admitted.len(), r.tenants.len()),
                si(p.bytes as f64),
                if p.violations.is_empty() {
                    "none".to_string()
                } else {
                    p.violations.join(", ")
                },
            ]
        })
        .collect();
    s += &render(
        &["policy", "admitted", "bytes", "SLO missed in replay"],
        &rows,
    );
    s
}
