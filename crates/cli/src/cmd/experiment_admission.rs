//! `tailbound experiment admission`: snc-meister Fig. 1/10/11 — admitted tenants and bytes per
//! policy over random runs, replay violations, OPT.

use super::{progress, ExperimentOutput};
use crate::args;
use crate::table::render;
use crate::Outcome;
use clap::Args;
use std::path::PathBuf;
use tailbound_admission::Policy;
use tailbound_curves::mmpp::SizeKind;
use tailbound_experiments::admission::{
    run, AdmissionConfig, AdmissionResult, Checked, Progress, RunResult,
};
use tailbound_model::units::{BytesPerSec, Seconds};
use tailbound_model::{Excess, Percentile, SLO_WINDOW_S};
use tailbound_plot::{Chart, Figure, Scale, Series};

#[derive(Debug, Args)]
pub struct AdmissionArgs {
    /// folder of trace files (every *.csv file in it is a trace)
    #[arg(long)]
    pub traces: PathBuf,
    /// random runs (arrival orders), 1 to 1000 [default: 20; 3 with --testbed]
    #[arg(long, value_parser = args::count(1, 1000))]
    pub runs: Option<usize>,
    /// tenants per run (traces are reused with random offsets beyond their number), 1 to 2000
    /// [default: 180; 24 with --testbed]
    #[arg(long, value_parser = args::count(1, 2000))]
    pub tenants: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// SLO latencies drawn uniformly, each 1us to 1h
    #[arg(long, value_delimiter = ',', default_value = "10ms,20ms,50ms,100ms", value_parser = args::seconds(1e-6, 3600.0, false))]
    pub slos: Vec<Seconds>,
    /// SLO percentile (strictly between 0 and 100)
    #[arg(long, default_value = "99.9")]
    pub percentile: Percentile,
    /// every link's rate, each way (1Kbit to 10000Gbit)
    #[arg(long, default_value = "1Gbit", value_parser = args::link())]
    pub link: BytesPerSec,
    /// client hosts, 1 to 1000 [default: 12; 4 with --testbed]
    #[arg(long, value_parser = args::count(1, 1000))]
    pub clients: Option<usize>,
    /// server hosts, 1 to 1000 [default: 6; 2 with --testbed]
    #[arg(long, value_parser = args::count(1, 1000))]
    pub servers: Option<usize>,
    /// policies to compare, comma-separated: snc-meister, priority-meister, silo++, qjump++,
    /// snc-martingale
    #[arg(long, value_delimiter = ',', default_values_t = Policy::ALL)]
    pub policies: Vec<Policy>,
    /// search OPT (bisection in replay) on this many of the runs, the first ones (0 to --runs)
    #[arg(long, default_value_t = 3, value_parser = args::count(0, 1000))]
    pub opt_runs: usize,
    /// MMPP counting interval (1ms to 1h)
    #[arg(long, default_value = "1s", value_parser = args::seconds(1e-3, 3600.0, false))]
    pub fit_interval: Seconds,
    /// requests closer than this to the previous one are one MMPP arrival event (a batch);
    /// 0s: every request is an event (SNC-Meister's fit, unsound on these traces); 0s to 10s
    #[arg(long, default_value = "1ms", value_parser = args::seconds(0.0, 10.0, false))]
    pub batch_gap: Seconds,
    /// MMPP state size model: empirical (the batches' observed work) or exponential
    #[arg(long, default_value = "empirical")]
    pub sizes: SizeKind,
    /// what rate limits do with requests beyond them: wait (strict limiter) or best-effort
    /// (go on at a level below every tenant, moving up when their tokens come, as HTB's
    /// borrowing does)
    #[arg(long, default_value = "best-effort")]
    pub excess: Excess,
    /// keep only tenants whose replayed half meets their SLO alone on idle links (others are
    /// redrawn), so that the paper's OPT (the first n all meeting their SLOs) is not capped by
    /// a tenant no policy could serve; `--isolated false` keeps every draw
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub isolated: bool,
    /// worker threads (runs in parallel), 1 to 256
    #[arg(long, default_value_t = 2, value_parser = args::count(1, 256))]
    pub threads: usize,
    /// compress every trace's time by this factor (arrival times divided by it), which
    /// multiplies each tenant's mean rate and keeps its batch sizes; 1: the traces as recorded
    /// (more than 0, at most 1000)
    #[arg(long, default_value_t = tailbound_experiments::admission::DEFAULT_SPEED_UP, value_parser = args::real(0.0, 1000.0, true))]
    pub speed_up: f64,
    /// also replay traffic sampled from every tenant's fitted models (three times as long as
    /// its replayed half): each policy's bound against its admitted tenants' worst windows
    /// there, and trial and error on it on the OPT runs, the most tenants an exact analysis
    /// of these models could admit (the ceiling of any sound calculus on them; slow: a replay
    /// per tenant)
    #[arg(long)]
    pub replay_models: bool,
    // the figure: box plots of admitted tenants and bytes per policy (snc-meister Fig. 10/11)
    // and each admitted tenant's bound against its replay
    #[command(flatten)]
    pub output: ExperimentOutput,
    #[command(flatten)]
    pub testbed: super::experiment_admission_testbed::TestbedArgs,
}

pub fn run_admission(a: AdmissionArgs) -> anyhow::Result<Outcome> {
    if a.testbed.testbed && a.replay_models {
        anyhow::bail!(
            "--replay-models replays sampled traffic in the simulator; it does not apply to \
             --testbed (drop one of the two)"
        );
    }
    let cfg = config(&a)?;
    if a.testbed.testbed {
        return super::experiment_admission_testbed::run(cfg, &a.testbed, &a.output);
    }
    run_simulated(cfg, &a)
}

/// The experiment's configuration from the flags; sizes default to the paper's, or to the
/// small testbed version with `--testbed`.
fn config(a: &AdmissionArgs) -> anyhow::Result<AdmissionConfig> {
    let traces = tailbound_trace::list_traces(&a.traces)?;
    let small = a.testbed.testbed;
    let runs = a.runs.unwrap_or(if small { 3 } else { 20 });
    Ok(AdmissionConfig {
        traces,
        runs,
        tenants: a.tenants.unwrap_or(if small { 24 } else { 180 }),
        seed: a.seed,
        slos_s: a.slos.iter().map(|s| s.0).collect(),
        percentile: a.percentile.value(),
        link_bytes_per_s: a.link.0,
        clients: a.clients.unwrap_or(if small { 4 } else { 12 }),
        servers: a.servers.unwrap_or(if small { 2 } else { 6 }),
        policies: a.policies.clone(),
        opt_runs: a.opt_runs.min(runs),
        fit_interval_s: a.fit_interval.0,
        batch_gap_s: a.batch_gap.0,
        sizes: a.sizes,
        excess: a.excess,
        window_s: SLO_WINDOW_S,
        isolated: a.isolated,
        threads: a.threads,
        speed_up: a.speed_up,
        models_replayed: a.replay_models,
    })
}

fn run_simulated(cfg: AdmissionConfig, a: &AdmissionArgs) -> anyhow::Result<Outcome> {
    let model_opts = if cfg.models_replayed { cfg.opt_runs } else { 0 };
    let steps = cfg.traces.len() + cfg.runs * cfg.policies.len() + cfg.opt_runs + model_opts;
    let bar = progress(steps as u64, a.output.json, "admission");
    let result = run(&cfg, &|p| {
        bar.inc(1);
        match p {
            Progress::Characterized(n) => bar.set_message(format!("characterized {n} traces")),
            Progress::PolicyDone { run, policy } => bar.set_message(format!("run {run}: {policy}")),
            Progress::OptDone { run } => bar.set_message(format!("run {run}: OPT")),
            Progress::ModelOptDone { run } => {
                bar.set_message(format!("run {run}: trial and error on the models"))
            }
        }
    })?;
    bar.finish_and_clear();
    a.output
        .emit(&result, || figure(&result), || table(&result))?;
    let violations: usize = result
        .runs
        .iter()
        .flat_map(|r| r.policies.values())
        .map(|p| p.violations)
        .sum();
    Ok(if violations == 0 {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn table(r: &AdmissionResult) -> String {
    let rows: Vec<Vec<String>> = r
        .summary
        .policies
        .iter()
        .map(|(name, p)| {
            vec![
                name.clone(),
                format!("{:.1}", p.admitted),
                format!("{:.1}", p.bytes / 1e6),
                format!("{:.2}", p.violations),
                p.of_opt
                    .map_or_else(|| "-".into(), |x| format!("{:.0}%", 100.0 * x)),
                p.of_opt_median
                    .map_or_else(|| "-".into(), |x| format!("{:.0}%", 100.0 * x)),
                p.of_opt_greedy
                    .map_or_else(|| "-".into(), |x| format!("{:.0}%", 100.0 * x)),
                format!("{:.2}", p.seconds_per_decision * 1e3),
                p.bound_over_replay
                    .map_or_else(|| "-".into(), |x| format!("{x:.1}")),
                format!("{:.2}", p.above_bound),
                format!("{:.2}", p.above_replayed_bound),
            ]
        })
        .collect();
    let opts: Vec<String> = r
        .runs
        .iter()
        .filter_map(|x| x.opt.map(|o| o.to_string()))
        .collect();
    let mut out = format!(
        "{} runs × {} tenants, link {:.0} Mbit/s, traces sped up {}×, {} clients, {} servers\n",
        r.runs.len(),
        r.config.tenants,
        r.config.link_bytes_per_s * 8e-6,
        r.config.speed_up,
        r.config.clients,
        r.config.servers
    );
    out += &render(
        &[
            "policy",
            "admitted (mean)",
            "MB (mean)",
            "violations",
            "of OPT (mean)",
            "of OPT (median)",
            "of OPT (trial)",
            "ms/decision",
            "bound/replay (median)",
            "replay > bound",
            "replay > bound on replayed",
        ],
        &rows,
    );
    if r.config.isolated {
        let redrawn: usize = r.runs.iter().map(|x| x.redrawn).sum();
        out += &format!(
            "tenants kept when they meet their SLO alone: {redrawn} draws redrawn in {} runs\n",
            r.runs.len()
        );
    }
    if !opts.is_empty() {
        let greedy: Vec<String> = r
            .runs
            .iter()
            .filter_map(|x| x.opt_greedy.map(|o| o.to_string()))
            .collect();
        out += &format!(
            "OPT on the first runs (first n all meeting their SLOs): {}; by trial and error \
             over the arrival order: {}\n",
            opts.join(", "),
            greedy.join(", ")
        );
    }
    if r.config.models_replayed {
        out += &models_lines(r);
    }
    for (i, run) in r.runs.iter().enumerate() {
        for (policy, p) in &run.policies {
            for v in &p.violators {
                out += &format!(
                    "violation in run {i}: {policy} admitted {}, worst window {:.1} ms > SLO {:.0} ms \
                     (unshaped with the others {:.1} ms{}){}\n",
                    v.name,
                    v.worst_s * 1e3,
                    v.slo_s * 1e3,
                    v.unshaped_worst_s * 1e3,
                    v.alone_limited_worst_s.map_or_else(String::new, |a| format!(
                        "; alone behind its own limits {:.1} ms",
                        a * 1e3
                    )),
                    p.tenants
                        .iter()
                        .find(|t| t.name == v.name)
                        .map_or_else(String::new, |t| diagnosis(policy, t, v.worst_s))
                );
            }
        }
    }
    if let Some(ratio) = r.summary.ratio {
        out += &format!(
            "snc-meister admits {ratio:.2}× the tenants of the best DNC policy ({:.2}× the bytes)\n",
            r.summary.bytes_ratio.unwrap_or(f64::NAN)
        );
    }
    out
}

/// The models' ceiling: trial and error on traffic sampled from the fitted models, and each
/// policy against it.
fn models_lines(r: &AdmissionResult) -> String {
    let ceilings: Vec<String> = r
        .runs
        .iter()
        .filter_map(|x| x.opt_greedy_models.map(|o| o.to_string()))
        .collect();
    let mut out = format!(
        "on traffic sampled from the fitted models ({}× each replayed half): trial and error \
         admits {} (what an exact analysis of the models could admit)\n",
        tailbound_experiments::admission::MODEL_SPAN,
        if ceilings.is_empty() {
            "- (no OPT run)".to_string()
        } else {
            ceilings.join(", ")
        }
    );
    for (name, p) in &r.summary.policies {
        out += &format!(
            "  {name}: admits {} of it (mean), bound / worst window on the models {} (median)\n",
            p.of_opt_greedy_models
                .map_or_else(|| "-".into(), |x| format!("{:.0}%", 100.0 * x)),
            p.bound_over_model
                .map_or_else(|| "-".into(), |x| format!("{x:.2}")),
        );
    }
    out
}

/// What the bound on a violator's replayed traffic says about its violation.
fn diagnosis(policy: &str, t: &Checked, worst_s: f64) -> String {
    let cause = "its replayed half is not the traffic it was admitted on";
    match t.replayed_bound_s {
        None => format!(
            "; on its replayed half the policy's analysis is unbounded, with the same decisions: {cause}"
        ),
        Some(b) if b >= worst_s => format!(
            "; bound on its replayed half {:.1} ms, with the same decisions: {cause}",
            b * 1e3
        ),
        Some(b) => format!(
            "; bound on its replayed half only {:.1} ms, with the same decisions: {} wrong",
            b * 1e3,
            if policy.parse::<Policy>().is_ok_and(Policy::is_snc) {
                "its MMPP fit, a bound or the simulator is"
            } else {
                "a bound (the arrival curve is exact) or the simulator is"
            }
        ),
    }
}

/// A box (quartiles, median) with whiskers (min, max) at x, as one polyline.
fn box_series(name: &str, x: f64, values: &mut [f64]) -> Series {
    values.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let i = p * (values.len() - 1) as f64;
        let (lo, hi) = (i.floor() as usize, i.ceil() as usize);
        values[lo] + (values[hi] - values[lo]) * (i - lo as f64)
    };
    let (min, q1, med, q3, max) = (q(0.0), q(0.25), q(0.5), q(0.75), q(1.0));
    let w = 0.25;
    Series::line(
        name,
        vec![
            (x, min),
            (x, q1),
            (x - w, q1),
            (x - w, q3),
            (x, q3),
            (x, max),
            (x, q3),
            (x + w, q3),
            (x + w, med),
            (x - w, med),
            (x + w, med),
            (x + w, q1),
            (x, q1),
        ],
    )
}

fn figure(r: &AdmissionResult) -> Figure {
    let names: Vec<&str> = Policy::ALL
        .iter()
        .map(|p| p.as_str())
        .filter(|n| r.summary.policies.contains_key(*n))
        .collect();
    let order = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("{} = {n}", i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    let mut tenants = Chart::new("admitted tenants")
        .x_label(format!("policy ({order})"))
        .y_label("tenants admitted")
        .y_from_zero(true);
    let mut bytes = Chart::new("bytes transferred by admitted tenants")
        .x_label(format!("policy ({order})"))
        .y_label("replayed [MB]")
        .y_from_zero(true);
    for (i, name) in names.iter().enumerate() {
        let x = (i + 1) as f64;
        let mut adm: Vec<f64> = r
            .runs
            .iter()
            .map(|run| run.policies[*name].admitted as f64)
            .collect();
        let mut by: Vec<f64> = r
            .runs
            .iter()
            .map(|run| run.policies[*name].bytes as f64 / 1e6)
            .collect();
        tenants = tenants.series(box_series(name, x, &mut adm));
        bytes = bytes.series(box_series(name, x, &mut by));
    }
    // both OPTs at x = policies + 1: the paper's (the first n all meeting their SLOs) and the
    // trial-and-error one
    let x = names.len() as f64 + 1.0;
    type Pick = fn(&RunResult) -> Option<usize>;
    let kinds: [(&str, Pick); 2] = [
        ("OPT: first n meeting SLOs", |run| run.opt),
        ("OPT by trial and error", |run| run.opt_greedy),
    ];
    for (label, pick) in kinds {
        let points: Vec<(f64, f64)> = r
            .runs
            .iter()
            .filter_map(pick)
            .map(|o| (x, o as f64))
            .collect();
        if !points.is_empty() {
            tenants = tenants.series(Series::points(format!("{label} (x = {x})"), points));
        }
    }
    Figure::new(vec![tenants, bytes, tightness(r, &names)]).columns(2)
}

/// Every admitted tenant's bound against its replayed worst window, log-log, per policy, with
/// the diagonal (a point below it: the replay exceeded the bound).
fn tightness(r: &AdmissionResult, names: &[&str]) -> Chart {
    let mut chart = Chart::new("bound vs replay of every admitted tenant (all runs)")
        .x_label("replayed worst-window SLO percentile [ms]")
        .y_label("bound [ms]")
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for name in names {
        let points: Vec<(f64, f64)> = r
            .runs
            .iter()
            .flat_map(|run| &run.policies[*name].tenants)
            .filter(|t| t.worst_s > 0.0 && t.bound_s > 0.0)
            .map(|t| (t.worst_s * 1e3, t.bound_s * 1e3))
            .collect();
        for &(x, y) in &points {
            lo = lo.min(x.min(y));
            hi = hi.max(x.max(y));
        }
        chart = chart.series(Series::points(*name, points));
    }
    if lo < hi {
        chart = chart.series(Series::line("bound = replay", vec![(lo, lo), (hi, hi)]));
    }
    chart
}
