//! `tailbound simulate SCENARIO [--decisions F]`: replay the held-out half of every tenant's
//! trace through the scenario's queues and check each tenant's windowed SLO percentile;
//! `tailbound opt SCENARIO`: the largest n whose first n tenants all meet their SLOs.

use super::{display_name, print_json, progress, write_figure};
use crate::report::{OptProbe, OptReport, SimReport};
use crate::table::{render, slo_cell};
use crate::Outcome;
use anyhow::Context;
use clap::Args;
use std::path::{Path, PathBuf};
use tailbound_model::units::{format_duration_s, Seconds};
use tailbound_model::Decisions;
use tailbound_plot::{Chart, Figure, Scale, Series};
use tailbound_report::ReplayOptions;
use tailbound_scenario::{Part, Scenario};
use tailbound_sim::{opt, opt_greedy, Replay, SimResult, Transmission};

/// How the simulated links serve work.
#[derive(Debug, Args)]
pub struct EngineArgs {
    /// which requests of each trace to replay: second-half (the first half characterized
    /// the tenant), whole or first-half
    #[arg(long, default_value = "second-half")]
    pub replay: Part,
    /// links serve MTU-sized chunks of this many bytes (strict priority preempts between
    /// chunks); 64 to 1048576
    #[arg(long, default_value_t = 1500, conflicts_with = "fluid", value_parser = clap::value_parser!(u64).range(64..=1 << 20))]
    pub mtu: u64,
    /// serve every request as one unit per queue instead of chunks
    #[arg(long)]
    pub fluid: bool,
    /// length of the SLO-check windows (the papers: 3 minutes), e.g. 180s, 3min; 1ms to 1e9 s
    #[arg(long, default_value = "180s", value_parser = crate::args::seconds(1e-3, 1e9, false))]
    pub window: Seconds,
}

impl EngineArgs {
    fn transmission(&self) -> Transmission {
        if self.fluid {
            Transmission::Fluid
        } else {
            Transmission::Chunked {
                mtu_bytes: self.mtu,
            }
        }
    }

    /// The replay of `scenario`'s chosen part of every trace.
    fn replay<'s>(&self, scenario: &'s Scenario, path: &Path) -> anyhow::Result<Replay<'s>> {
        let requests = scenario
            .requests(self.replay)
            .with_context(|| format!("cannot replay {}", path.display()))?;
        Ok(Replay::new(&scenario.network, requests, scenario.works())?)
    }
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// scenario: tailbound's own (TOML/JSON) or SNC-Meister's topology JSON (with traces)
    pub scenario: PathBuf,
    /// a policy's decisions (JSON from `tailbound admit`/`place`): which tenants run, their
    /// priorities, servers and rate limits; default: every tenant, priorities by SLO, no
    /// rate limits
    #[arg(long)]
    pub decisions: Option<PathBuf>,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// write latency CCDFs and windowed SLO percentiles per tenant as SVG
    #[arg(long)]
    pub svg: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = super::DATA_HELP)]
    pub data: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct OptArgs {
    /// scenario: tailbound's own (TOML/JSON) or SNC-Meister's topology JSON (with traces);
    /// tenants arrive in file order
    pub scenario: PathBuf,
    #[command(flatten)]
    pub engine: EngineArgs,
    /// also search by trial and error: each tenant in order joins if all still meet their
    /// SLOs with it (one replay per tenant)
    #[arg(long)]
    pub trial: bool,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

/// The scenario without traffic models: a replay needs the requests, not their fits (so a
/// fit that would fail cannot stop a replay).
fn load_scenario(path: &Path) -> anyhow::Result<Scenario> {
    tailbound_scenario::load_with(path, tailbound_scenario::Models::None)
        .with_context(|| format!("cannot load scenario {}", path.display()))
}

/// Reads a decisions file (JSON).
pub fn read_decisions(path: &Path) -> anyhow::Result<Decisions> {
    let text = super::read_input(path, "decisions")?;
    let d: Decisions = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a decisions file (JSON {{\"policy\": .., \"tenants\": [{{\"name\", \
             \"admitted\", \"priority\", \"server\", \"limits\": [{{\"flow\", \"stage\", \
             \"rate\", \"burst\"}}]}}]}})",
            path.display()
        )
    })?;
    d.validate()
        .with_context(|| format!("{}: invalid decisions", path.display()))?;
    Ok(d)
}

pub fn run_simulate(a: SimulateArgs) -> anyhow::Result<Outcome> {
    let scenario = load_scenario(&a.scenario)?;
    let decisions = a.decisions.as_deref().map(read_decisions).transpose()?;
    let opts = ReplayOptions {
        part: a.engine.replay,
        transmission: a.engine.transmission(),
        window_s: a.engine.window.0,
    };
    let (report, result) = tailbound_report::replay(
        &scenario,
        display_name(&a.scenario),
        decisions.as_ref(),
        &opts,
    )
    .with_context(|| match &a.decisions {
        Some(d) => format!(
            "cannot replay {} under {}",
            a.scenario.display(),
            d.display()
        ),
        None => format!("cannot replay {}", a.scenario.display()),
    })?;
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&table(&report))?;
    }
    write_figure(a.svg.as_deref(), a.data.as_deref(), || {
        figure(&report, &result)
    })?;
    Ok(if report.all_meet_slo() {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

pub fn run_opt(a: OptArgs) -> anyhow::Result<Outcome> {
    let scenario = load_scenario(&a.scenario)?;
    let replay = a.engine.replay(&scenario, &a.scenario)?;
    let total = scenario.network.tenants.len();
    let steps = (usize::BITS - total.leading_zeros()) as u64 + 1;
    let bar = progress(steps, a.json, "opt");
    let found = opt(
        &replay,
        a.engine.transmission(),
        a.engine.window.0,
        |n, ok| {
            bar.set_message(format!("n={n} {}", if ok { "meets" } else { "misses" }));
            bar.inc(1);
        },
    )?;
    bar.finish_and_clear();
    let trial = if a.trial {
        let bar = progress(total as u64, a.json, "trial");
        let kept = opt_greedy(
            &replay,
            a.engine.transmission(),
            a.engine.window.0,
            |_, _| bar.inc(1),
        )?;
        bar.finish_and_clear();
        Some(
            kept.iter()
                .map(|&t| scenario.network.tenants[t].name.clone())
                .collect::<Vec<_>>(),
        )
    } else {
        None
    };
    let report = OptReport {
        trial,
        scenario: display_name(&a.scenario),
        opt: found.n,
        tenants: found.tenants,
        probes: found
            .probes
            .iter()
            .map(|&(n, all_meet)| OptProbe { n, all_meet })
            .collect(),
    };
    if a.json {
        print_json(&report)?;
    } else {
        let mut text = format!(
            "{}: OPT = {} of {} tenants (the first {} all meet their SLOs in replay)\n",
            report.scenario, report.opt, report.tenants, report.opt
        );
        if let Some(kept) = &report.trial {
            text += &format!(
                "by trial and error over the arrival order: {} tenants ({})\n",
                kept.len(),
                kept.join(", ")
            );
        }
        for p in &report.probes {
            text += &format!(
                "  first {:>4}: {}\n",
                p.n,
                if p.all_meet { "all meet" } else { "some miss" }
            );
        }
        crate::output::print(&text)?;
    }
    Ok(Outcome::Ok)
}

fn table(r: &SimReport) -> String {
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .map(|t| {
            let worst = t
                .windows
                .iter()
                .map(|w| w.slo_percentile_s)
                .fold(0.0, f64::max);
            vec![
                t.name.clone(),
                slo_cell(t.percentile, t.slo_s),
                t.requests.to_string(),
                format_duration_s(t.latency_s.p50),
                format_duration_s(t.latency_s.p99),
                format_duration_s(t.latency_s.p999),
                format_duration_s(t.latency_s.max),
                format_duration_s(worst),
                if t.meets_slo { "yes" } else { "NO" }.to_string(),
            ]
        })
        .collect();
    let mut out = format!("{}: replayed {} events\n", r.scenario, r.events);
    out += &render(
        &[
            "tenant",
            "SLO",
            "requests",
            "p50",
            "p99",
            "p99.9",
            "max",
            "worst window",
            "meets SLO",
        ],
        &rows,
    );
    out
}

/// Left: each tenant's latency CCDF; right: each tenant's windowed SLO percentile over its
/// SLO (≤ 1 meets).
fn figure(r: &SimReport, result: &SimResult) -> Figure {
    let mut ccdf = Chart::new("latency CCDF per tenant")
        .x_label("latency [s]")
        .y_label("P(latency > x)")
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    let mut windows = Chart::new("windowed SLO percentile / SLO")
        .x_label("window start [s]")
        .y_label("ratio (≤ 1 meets)")
        .y_from_zero(true);
    for (t, res) in r.tenants.iter().zip(&result.tenants) {
        let n = res.latencies_ns.len();
        if n > 0 {
            // at most ~400 points per curve: every distinct rank near the tail, thinned below
            let step = (n / 400).max(1);
            let mut pts: Vec<(f64, f64)> = Vec::new();
            for (i, &l) in res.latencies_ns.iter().enumerate() {
                let above = (n - i - 1) as f64 / n as f64;
                if l > 0 && above > 0.0 && (i % step == 0 || n - i < 2000) {
                    pts.push((l as f64 * 1e-9, above));
                }
            }
            if !pts.is_empty() {
                ccdf = ccdf.series(Series::step(&t.name, pts));
            }
        }
        let w: Vec<(f64, f64)> = t
            .windows
            .iter()
            .map(|w| (w.start_s, w.slo_percentile_s / t.slo_s))
            .collect();
        if !w.is_empty() {
            windows = windows.series(Series::points(&t.name, w));
        }
    }
    Figure::new(vec![ccdf, windows]).columns(2)
}
