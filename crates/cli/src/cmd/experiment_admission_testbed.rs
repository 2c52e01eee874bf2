//! `tailbound experiment admission --testbed`: a small version of the admission experiment
//! replayed on the real testbed, with and without enforcement and an aggressor, beside the
//! simulator and the bounds.

use super::{progress, ExperimentOutput};
use crate::table::render;
use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use tailbound_experiments::admission::AdmissionConfig;
use tailbound_experiments::admission_testbed::{
    run as run_experiment, Mode, TestbedConfig, TestbedExperiment, TestbedProgress,
};
use tailbound_model::units::{format_duration_s, Seconds};
use tailbound_plot::{Chart, Figure, Scale, Series};
use tailbound_testbed::AggressorSpec;

/// The testbed version's flags (with `tailbound experiment admission`).
#[derive(Debug, Args)]
pub struct TestbedArgs {
    /// replay the admitted tenants on the real testbed (namespaces, shaped links, memcached;
    /// as root) instead of the simulator: snc-meister's decisions with and without enforcement
    /// and an aggressor, beside the simulator and the bound
    #[arg(long)]
    pub testbed: bool,
    /// testbed: link rates and rate limits × S, traces slowed down 1/S times
    #[arg(long, default_value_t = 0.2, requires = "testbed")]
    pub scale: f64,
    /// testbed: replay only this much of each held-out half (trace time), e.g. 30s
    #[arg(long, requires = "testbed")]
    pub duration: Option<Seconds>,
    /// testbed: the tenant that ignores admission: udp, tcp or memcached, optionally @SERVER
    #[arg(long, default_value = "udp", value_parser = aggressor_arg, requires = "testbed")]
    pub aggressor: AggressorSpec,
    /// testbed: only these modes (enforced/not × aggressor/none), e.g. enforce+aggressor,open
    /// (enforce, enforce+aggressor, open, open+aggressor)
    #[arg(long, value_delimiter = ',', value_parser = mode_arg, requires = "testbed")]
    pub modes: Vec<Mode>,
    /// testbed: the memcached executable
    #[arg(long, default_value = "memcached", requires = "testbed")]
    pub memcached: PathBuf,
}

fn aggressor_arg(s: &str) -> Result<AggressorSpec, String> {
    s.parse()
        .map_err(|e: tailbound_testbed::TestbedError| e.to_string())
}

fn mode_arg(s: &str) -> Result<Mode, String> {
    let (enforce, aggressor) = match s.trim() {
        "enforce" => (true, false),
        "enforce+aggressor" => (true, true),
        "open" => (false, false),
        "open+aggressor" => (false, true),
        _ => {
            return Err(format!(
                "unknown mode {s:?}; use enforce, enforce+aggressor, open or open+aggressor"
            ))
        }
    };
    Ok(Mode { enforce, aggressor })
}

pub fn run(
    admission: AdmissionConfig,
    a: &TestbedArgs,
    output: &ExperimentOutput,
) -> anyhow::Result<Outcome> {
    let policy = admission
        .policies
        .first()
        .copied()
        .unwrap_or(tailbound_admission::Policy::SncMeister);
    let mut cfg = TestbedConfig::small(Vec::new());
    cfg.admission = admission;
    cfg.policy = policy;
    cfg.scale = a.scale;
    cfg.duration_s = a.duration.map(|d| d.0);
    cfg.aggressor = a.aggressor.clone();
    cfg.memcached = a.memcached.clone();
    if !a.modes.is_empty() {
        cfg.modes = a.modes.clone();
    }
    let steps = cfg.admission.traces.len() + cfg.admission.runs * (1 + cfg.modes.len());
    let bar = progress(steps as u64, output.json, "testbed");
    let result = run_experiment(&cfg, &|p| {
        bar.inc(1);
        match p {
            TestbedProgress::Characterized(n) => {
                bar.set_message(format!("characterized {n} traces"))
            }
            TestbedProgress::Decided { run, admitted } => {
                bar.set_message(format!("run {run}: {admitted} admitted"))
            }
            TestbedProgress::Mode { run, mode } => {
                bar.set_message(format!("run {run}: {}", mode.label()))
            }
        }
    })?;
    bar.finish_and_clear();
    output.emit(&result, || figure(&result), || table(&result))?;
    // the acceptance: enforced, nobody misses
    let enforced_ok = result
        .summary
        .iter()
        .filter(|m| m.mode.enforce)
        .all(|m| m.violated == 0);
    Ok(if enforced_ok {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

fn table(r: &TestbedExperiment) -> String {
    let c = &r.config;
    let mut out =
        format!(
        "{} runs × {} tenant draws on {} clients and {} servers, {:.0} Mbit/s links × scale {} \
         (traces sped up {}×, then slowed down {}×), {} decides, aggressor {:?}{}\n",
        c.admission.runs,
        c.admission.tenants,
        c.admission.clients,
        c.admission.servers,
        c.admission.link_bytes_per_s * 8e-6,
        c.scale,
        c.admission.speed_up,
        1.0 / c.scale,
        c.policy.as_str(),
        c.aggressor.kind,
        c.duration_s
            .map_or_else(String::new, |d| format!(", {} of each half", format_duration_s(d)))
    );
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .flat_map(|run| {
            run.modes.iter().map(move |m| {
                let rep = &m.report;
                let worst = rep
                    .tenants
                    .iter()
                    .map(|t| t.testbed_worst_window_s / t.slo_s)
                    .fold(0.0, f64::max);
                vec![
                    run.run.to_string(),
                    run.seed.to_string(),
                    format!("{}/{}", run.admitted, run.drawn),
                    m.mode.label(),
                    rep.violated.to_string(),
                    format!("{worst:.2}"),
                    rep.tenants
                        .iter()
                        .filter(|t| t.sim_violated)
                        .count()
                        .to_string(),
                    ratio(rep.comparison.median),
                    format!("{:.0} %", rep.machine.cpu_share * 100.0),
                    format_duration_s(rep.machine.send_late_p99_s),
                    rep.hosts
                        .iter()
                        .map(|h| h.counters.retransmits)
                        .sum::<u64>()
                        .to_string(),
                    rep.hosts
                        .iter()
                        .map(|h| h.counters.drops_out + h.counters.drops_in)
                        .sum::<u64>()
                        .to_string(),
                ]
            })
        })
        .collect();
    out += &render(
        &[
            "run",
            "seed",
            "admitted",
            "mode",
            "missed SLO",
            "worst/SLO",
            "sim missed",
            "tb/sim p99.9",
            "CPU",
            "late p99",
            "retrans.",
            "drops",
        ],
        &rows,
    );
    let rows: Vec<Vec<String>> = r
        .summary
        .iter()
        .map(|m| {
            vec![
                m.mode.label(),
                m.tenants.to_string(),
                m.violated.to_string(),
                m.runs_violated.to_string(),
                format!("{:.2}", m.worst_over_slo),
                ratio(m.ratio_median),
                format!("{} – {}", ratio(m.ratio_p25), ratio(m.ratio_p75)),
                m.failed.to_string(),
            ]
        })
        .collect();
    out += &render(
        &[
            "mode",
            "tenants",
            "missed SLO",
            "runs missed",
            "worst/SLO",
            "tb/sim median",
            "quartiles",
            "failed req.",
        ],
        &rows,
    );
    out
}

/// Per mode: every tenant's testbed worst window over its SLO (≤ 1 meets), at x = mode.
fn figure(r: &TestbedExperiment) -> Figure {
    let names = r
        .config
        .modes
        .iter()
        .enumerate()
        .map(|(i, m)| format!("{} = {}", i + 1, m.label()))
        .collect::<Vec<_>>()
        .join("; ");
    let mut worst = Chart::new("testbed: worst window / SLO per admitted tenant")
        .x_label(format!("mode ({names})"))
        .y_label("worst window's SLO percentile / SLO")
        .y_scale(Scale::Log);
    let mut ratios = Chart::new("testbed p99.9 / simulator p99.9 per tenant")
        .x_label(format!("mode ({names})"))
        .y_label("ratio")
        .y_scale(Scale::Log);
    for (i, &mode) in r.config.modes.iter().enumerate() {
        let x = (i + 1) as f64;
        let tenants = r
            .runs
            .iter()
            .flat_map(|run| run.modes.iter().filter(move |m| m.mode == mode))
            .flat_map(|m| &m.report.tenants);
        let (w, q): (Vec<_>, Vec<_>) = tenants
            .map(|t| {
                (
                    (x, t.testbed_worst_window_s / t.slo_s),
                    t.testbed_over_sim.map(|q| (x, q)),
                )
            })
            .unzip();
        let w: Vec<(f64, f64)> = w.into_iter().filter(|p| p.1 > 0.0).collect();
        let q: Vec<(f64, f64)> = q.into_iter().flatten().filter(|p| p.1 > 0.0).collect();
        if !w.is_empty() {
            worst = worst.series(Series::samples(mode.label(), w));
        }
        if !q.is_empty() {
            ratios = ratios.series(Series::samples(mode.label(), q));
        }
    }
    Figure::new(vec![worst, ratios]).columns(2)
}
