//! `tailbound bound SCENARIO`: every tenant's latency bound, per flow and in total.

pub use tailbound_report::MAX_TENANTS;

use super::{display_name, print_json, progress};
use crate::report::BoundReport;
use crate::table::{bound_cell, render, slo_cell};
use crate::Outcome;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use tailbound_calculus::{BoundOptions, Method, ThetaSearch};
use tailbound_model::Percentile;

#[derive(Debug, Args)]
pub struct BoundArgs {
    /// scenario: tailbound's own (TOML/JSON), SNC-Meister's topology JSON, or its model
    /// config JSON; at most 10 000 tenants (thousands sharing a link take minutes: a progress
    /// bar on stderr counts them). A topology's traces are fitted as SNC-Meister fits them,
    /// every request one arrival: a trace that arrives in batches (megabytes within a
    /// millisecond) can replay above that bound; fit its batches in tailbound's own format
    /// (`[characterize] sizes = "empirical"`, `batch_gap = "1ms"`)
    pub scenario: PathBuf,
    /// the analysis: snc-meister (SNC with SNC-Meister's network analysis and dependency
    /// groups), snc-hop (SNC one queue at a time, ε split per hop), snc-conv (SNC leftover per
    /// hop, then convolution), dnc (deterministic, static priorities, PriorityMeister-style) or
    /// snc-martingale (SNC with martingale envelopes and Doob's inequality, per arrival; one-
    /// and two-queue paths)
    #[arg(long, default_value = "snc-meister")]
    pub method: Method,
    /// check every tenant at this percentile instead of its own (strictly between 0 and 100,
    /// e.g. 99.9)
    #[arg(long)]
    pub percentile: Option<Percentile>,
    /// how the SNC bound is minimised over θ: brent (robust 1-D minimisation on log θ) or grid
    /// (the original SNC-Meister's coarse-to-fine sweep); snc-martingale searches its own grid
    #[arg(long, default_value = "brent")]
    pub theta: ThetaSearch,
    /// the part of each trace that characterizes its tenant: whole or first-half; default the
    /// whole trace for an SNC-Meister topology, a tailbound scenario's `[characterize] part`
    #[arg(long, value_name = "PART", value_parser = crate::args::characterize())]
    pub characterize: Option<tailbound_trace::Part>,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: BoundArgs) -> anyhow::Result<Outcome> {
    let part = super::characterized_part(&a.scenario, a.characterize)
        .with_context(|| format!("cannot load scenario {}", a.scenario.display()))?;
    let models = tailbound_report::bound_models(a.method);
    let scenario = tailbound_scenario::load_part(&a.scenario, models, part)
        .with_context(|| format!("cannot load scenario {}", a.scenario.display()))?;
    let opts = BoundOptions {
        theta: a.theta,
        percentile: a.percentile,
    };
    let bar = progress(scenario.network.tenants.len() as u64, a.json, "bounds");
    let report = tailbound_report::bound(
        &scenario,
        display_name(&a.scenario),
        a.method,
        &opts,
        &mut || bar.inc(1),
    )
    .with_context(|| format!("{}", a.scenario.display()))?;
    bar.finish_and_clear();
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&table(&report))?;
    }
    Ok(if report.all_meet_slo() {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn table(r: &BoundReport) -> String {
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                slo_cell(t.percentile, t.slo_s),
                t.priority.to_string(),
                t.flows
                    .iter()
                    .map(|f| format!("{} {}", f.name, bound_cell(f.bound_s)))
                    .collect::<Vec<_>>()
                    .join(", "),
                bound_cell(t.bound_s),
                if t.meets_slo { "yes" } else { "NO" }.to_string(),
            ]
        })
        .collect();
    let mut out = format!("{} with {}\n", r.scenario, r.method);
    out += &render(
        &["tenant", "SLO", "prio", "flows", "bound", "meets SLO"],
        &rows,
    );
    for t in r.tenants.iter().filter(|t| t.unbounded.is_some()) {
        out += &format!(
            "{}: unbounded: {}\n",
            t.name,
            t.unbounded.as_deref().unwrap_or("")
        );
    }
    out
}
