//! `tailbound bound SCENARIO`: every tenant's latency bound, per flow and in total.

/// The most tenants `bound` analyses: the SNC analyses grow faster than quadratically with
/// the tenants sharing queues (1000 tenants on one link take ~10 s, 5000 ~20 min on one core
/// of a 2-core box), so more would not finish in an operator's session.
pub const MAX_TENANTS: usize = 10_000;

use super::{display_name, print_json, progress};
use crate::report::{BoundFlow, BoundReport, BoundTenant};
use crate::table::{bound_cell, render, slo_cell};
use crate::Outcome;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use tailbound_calculus::{bound_with_progress, BoundOptions, Method, ThetaSearch};
use tailbound_model::Percentile;

#[derive(Debug, Args)]
pub struct BoundArgs {
    /// scenario: tailbound's own (TOML/JSON), SNC-Meister's topology JSON, or its model
    /// config JSON; at most 10 000 tenants (thousands sharing a link take minutes: a progress
    /// bar on stderr counts them)
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
    // the SNC analyses read MMPPs only; DNC reads arrival curves only but the fit is cheap
    let models = match a.method {
        Method::Dnc => tailbound_scenario::Models::Fitted,
        _ => tailbound_scenario::Models::Mmpp,
    };
    let scenario = tailbound_scenario::load_part(&a.scenario, models, part)
        .with_context(|| format!("cannot load scenario {}", a.scenario.display()))?;
    let opts = BoundOptions {
        theta: a.theta,
        percentile: a.percentile,
    };
    let method = a.method;
    let net = &scenario.network;
    let n = net.tenants.len();
    anyhow::ensure!(
        n <= MAX_TENANTS,
        "{}: {n} tenants; bound analyses at most {MAX_TENANTS} tenants per scenario (split it)",
        a.scenario.display()
    );
    let bar = progress(n as u64, a.json, "bounds");
    let all: Vec<usize> = (0..n).collect();
    let bounds = bound_with_progress(net, method, &all, &opts, &mut || bar.inc(1))?;
    bar.finish_and_clear();
    let report = BoundReport {
        scenario: display_name(&a.scenario),
        method: method.as_str().to_string(),
        tenants: bounds
            .iter()
            .map(|b| BoundTenant {
                name: b.name.clone(),
                slo_s: b.slo.latency_s,
                percentile: b.slo.percentile.value(),
                priority: b.priority,
                bound_s: b.total.seconds(),
                unbounded: match &b.total {
                    tailbound_calculus::Bound::Unbounded(r) => Some(r.clone()),
                    tailbound_calculus::Bound::Within(_) => None,
                },
                flows: b
                    .flows
                    .iter()
                    .map(|f| BoundFlow {
                        name: f.name.clone(),
                        epsilon: f.epsilon,
                        bound_s: f.bound.seconds(),
                    })
                    .collect(),
                meets_slo: b.meets_slo,
            })
            .collect(),
    };
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&table(&report))?;
    }
    let all_met = report.tenants.iter().all(|t| t.meets_slo);
    Ok(if all_met {
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
