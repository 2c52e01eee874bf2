//! `tailbound demo`: the pipeline on the embedded synthetic tenant set, no files needed
//! (`tailbound_experiments::demo` runs it; this prints its report and draws its figure).

use super::{print_json, write_figure};
use crate::table::{bound_cell, render, si, slo_cell};
use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use tailbound_experiments::demo::{DemoReport, DEMO_SCENARIO};
use tailbound_model::Stage;
use tailbound_plot::{Chart, Figure, Scale, Series};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// plot every flow's r-b curve to this SVG file
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = super::DATA_HELP)]
    pub data: Option<PathBuf>,
    /// print the embedded scenario file and exit
    #[arg(long)]
    pub print_scenario: bool,
}

pub fn run(a: DemoArgs) -> anyhow::Result<Outcome> {
    if a.print_scenario {
        crate::output::print(DEMO_SCENARIO)?;
        return Ok(Outcome::Ok);
    }
    let report = tailbound_experiments::demo::run()?;
    write_figure(a.svg.as_deref(), a.data.as_deref(), || figure(&report))?;
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&summary(&report))?;
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
        // the response flows: the heavier direction of every tenant
        for f in t.flows.iter().filter(|f| f.stage == Stage::NetOut) {
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
