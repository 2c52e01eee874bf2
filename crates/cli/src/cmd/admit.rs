//! `tailbound admit SCENARIO --policy P`: tenants arrive in file order; each is admitted only
//! if it and every tenant it can affect still meet their SLOs.

use super::{display_name, print_json};
use crate::report::AdmitReport;
use crate::table::{bound_cell, render, slo_cell};
use crate::Outcome;
use anyhow::Context;
use clap::Args;
use std::path::PathBuf;
use tailbound_admission::Policy;

#[derive(Debug, Args)]
pub struct AdmitArgs {
    /// scenario: tailbound's own (TOML/JSON), SNC-Meister's topology JSON or model config;
    /// tenants arrive in file order
    pub scenario: PathBuf,
    /// the admission policy: snc-meister (SNC, priorities by SLO), priority-meister (DNC,
    /// priorities by SLO, rate limits from the r-b curve), silo++ (DNC, effective-bandwidth
    /// rate limits, one level), qjump++ (DNC, fixed QJump levels) or snc-martingale
    /// (SNC-Meister's admission with martingale bounds: tighter; one- and two-queue paths)
    #[arg(long, default_value = "snc-meister")]
    pub policy: Policy,
    /// write the decisions (for `tailbound simulate --decisions`) to this file
    #[arg(long)]
    pub decisions_out: Option<PathBuf>,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: AdmitArgs) -> anyhow::Result<Outcome> {
    let scenario = tailbound_scenario::load(&a.scenario)
        .with_context(|| format!("cannot load scenario {}", a.scenario.display()))?;
    let report = tailbound_report::admit(&scenario, display_name(&a.scenario), a.policy)
        .with_context(|| format!("cannot admit the tenants of {}", a.scenario.display()))?;
    if let Some(path) = &a.decisions_out {
        crate::output::write_json(path, &report.decisions)?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&table(&report))?;
    }
    Ok(Outcome::Ok)
}

fn table(r: &AdmitReport) -> String {
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                slo_cell(t.percentile, t.slo_s),
                if t.admitted { "yes" } else { "no" }.to_string(),
                t.priority.map_or_else(|| "-".into(), |p| p.to_string()),
                bound_cell(t.bound_s),
                t.reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut out = format!(
        "{} with {}: {} of {} admitted\n",
        r.scenario,
        r.policy,
        r.admitted,
        r.tenants.len()
    );
    out += &render(
        &["tenant", "SLO", "admitted", "prio", "bound", "why not"],
        &rows,
    );
    for t in &r.tenants {
        for c in &t.changed {
            out += &format!(
                "admitting {} moved {} from priority {} to {}\n",
                t.name, c.tenant, c.old, c.new
            );
        }
    }
    out
}
