//! `tailbound curve ...`: r-b and arrival curves, MMPP fits and effective bandwidth of a trace.

use super::{display_name, load_trace, print_json, write_figure};
use crate::report::RbReport;
use crate::table::{render, si};
use crate::Outcome;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use tailbound_curves::mmpp::{MmppFitOptions, SizeKind, StateRate};
use tailbound_curves::StorageProfile;
use tailbound_model::units::{format_duration_s, Seconds};
use tailbound_model::{ArrivalCurve, Stage};
use tailbound_plot::{Chart, Figure, Scale, Series};
use tailbound_trace::{Part, Trace};

#[derive(Debug, Subcommand)]
pub enum CurveCommand {
    /// Exact r-b curve and arrival curve of a trace at one stage
    Rb(RbArgs),
    /// Fit a Markov-modulated Poisson process (SNC-Meister §4.3)
    Mmpp(MmppArgs),
    /// Effective bandwidth: least bucket-less shaper rate meeting a delay target
    Effbw(EffBwArgs),
}

pub fn run(cmd: CurveCommand) -> anyhow::Result<Outcome> {
    match cmd {
        CurveCommand::Rb(a) => rb(a),
        CurveCommand::Mmpp(a) => mmpp(a),
        CurveCommand::Effbw(a) => effbw(a),
    }
}

/// What every characterization command takes: a trace, a stage, a device profile.
#[derive(Debug, Args)]
pub struct StageArgs {
    /// the trace file
    pub file: PathBuf,
    /// stage whose work is characterized (network bytes in each direction, or storage
    /// busy-seconds)
    #[arg(long)]
    pub stage: Stage,
    /// storage device profile in WorkloadCompactor's JSON format (default: the bundled
    /// Intel 710 SSD profile)
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// part of the trace to characterize: whole, first-half (the papers characterize on it)
    /// or second-half (the papers replay it)
    #[arg(long, default_value = "whole")]
    pub part: Part,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
}

/// The chosen part of the trace and the storage device profile.
struct Loaded {
    trace: Trace,
    profile: StorageProfile,
}

fn load(a: &StageArgs) -> anyhow::Result<Loaded> {
    let full = load_trace(&a.file)?;
    let trace = a
        .part
        .of(&full)
        .with_context(|| format!("cannot take the {} of {}", a.part, a.file.display()))?;
    let profile = match &a.profile {
        Some(p) => StorageProfile::load(p)?,
        None => StorageProfile::intel710_ssd(),
    };
    Ok(Loaded { trace, profile })
}

#[derive(Debug, Args)]
pub struct RbArgs {
    #[command(flatten)]
    pub stage: StageArgs,
    /// prune the curve to at most K linear pieces, staying an upper bound (1 to 10000)
    #[arg(long, value_name = "K", value_parser = crate::args::count(1, 10_000))]
    pub prune: Option<usize>,
    /// plot b vs r and α vs t to this SVG file
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = super::DATA_HELP)]
    pub data: Option<PathBuf>,
}

fn rb(a: RbArgs) -> anyhow::Result<Outcome> {
    let l = load(&a.stage)?;
    let (report, exact) = tailbound_report::rb(
        display_name(&a.stage.file),
        &l.trace,
        a.stage.stage,
        &l.profile,
        a.prune,
    )?;
    let unit = report.unit.as_str();
    write_figure(a.svg.as_deref(), a.data.as_deref(), || {
        rb_figure(&report, &exact, a.prune.is_some())
    })?;
    if a.stage.json {
        print_json(&report)?;
    } else {
        let head = format!(
            "{} at {}: {} requests, mean rate {} {unit}/s, {} pieces\n",
            report.trace,
            report.stage,
            report.requests,
            report.mean_rate.map_or("-".into(), si),
            report.rb.len()
        );
        let rows: Vec<Vec<String>> = report
            .rb
            .iter()
            .map(|[r, b]| vec![si(*r), si(*b), format_duration_s(b / r)])
            .collect();
        crate::output::print(
            &(head
                + &render(
                    &[
                        &format!("rate [{unit}/s]"),
                        &format!("burst [{unit}]"),
                        "b/r",
                    ],
                    &rows,
                )),
        )?;
    }
    Ok(Outcome::Ok)
}

fn rb_figure(report: &RbReport, exact: &ArrivalCurve, pruned: bool) -> Figure {
    let unit = &report.unit;
    let name = std::path::Path::new(&report.trace).file_name().map_or_else(
        || report.trace.clone(),
        |n| n.to_string_lossy().into_owned(),
    );
    // Both curves span decades of rate and time: log-log axes (the r = 0 and t = 0 vertices
    // are left out of the picture, not of the curve).
    let mut rb = Chart::new(format!("r-b curve of {name} at {}", report.stage))
        .x_label(format!("rate r [{unit}/s]"))
        .y_label(format!("bucket b [{unit}]"))
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    let mut arrival = Chart::new("arrival curve α(t) = min_r b(r) + r·t")
        .x_label("window t [s]")
        .y_label(format!("work [{unit}]"))
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    let pts = |v: &[[f64; 2]]| v.iter().map(|&[x, y]| (x, y)).collect::<Vec<_>>();
    let mut exact_rb = pts(exact.to_rb().vertices());
    // show the flat part beyond the last vertex
    if let Some(&(r, b)) = exact_rb.last() {
        exact_rb.push((r * 1.5, b));
    }
    rb = rb.series(Series::line("exact", exact_rb));
    arrival = arrival.series(Series::line("exact", pts(exact.vertices())));
    if pruned {
        let mut p = pts(&report.rb);
        if let Some(&(r, b)) = p.last() {
            p.push((r * 1.5, b));
        }
        rb = rb.series(Series::line(
            format!("pruned to {}", report.pruned_to.unwrap_or(0)),
            p,
        ));
        arrival = arrival.series(Series::line("pruned", pts(&report.arrival)));
    }
    Figure::new(vec![rb, arrival])
}

#[derive(Debug, Args)]
pub struct MmppArgs {
    #[command(flatten)]
    pub stage: StageArgs,
    /// size model of each state: exponential (work per request exponential with the state's
    /// mean, SNC-Meister's MGFExponential) or empirical (the observed work values)
    #[arg(long, default_value = "exponential")]
    pub sizes: SizeKind,
    /// rate of each state: band-centre (as SNC-Meister codes it) or observed (the mean count
    /// of the state's intervals)
    #[arg(long, default_value = "band-centre")]
    pub state_rate: StateRate,
    /// counting interval (1ms to 1e6 s)
    #[arg(long, default_value = "1s", value_parser = crate::args::seconds(1e-3, 1e6, false))]
    pub interval: Seconds,
    /// time step of the discrete chain (1ns to the counting interval)
    #[arg(long, default_value = "10us", value_parser = crate::args::seconds(1e-9, 1e6, false))]
    pub step: Seconds,
    /// requests closer than this to the previous one are one arrival event (a batch); 0s:
    /// every request is one (SNC-Meister); 0s to 1e6 s
    #[arg(long, default_value = "0s", value_parser = crate::args::seconds(0.0, 1e6, false))]
    pub batch_gap: Seconds,
    /// most states (1 to 1000)
    #[arg(long, default_value_t = 10, value_parser = crate::args::count(1, tailbound_curves::mmpp::MAX_STATES_LIMIT as u64))]
    pub max_states: usize,
    /// half-width of a state's band in standard deviations (√λ); more than 0, at most 1000
    #[arg(long, default_value_t = 2.0, value_parser = crate::args::real(0.0, 1000.0, true))]
    pub band_factor: f64,
}

fn mmpp(a: MmppArgs) -> anyhow::Result<Outcome> {
    let l = load(&a.stage)?;
    let opts = MmppFitOptions {
        interval_s: a.interval.0,
        step_s: a.step.0,
        band_factor: a.band_factor,
        max_states: a.max_states,
        sizes: a.sizes,
        batch_gap_s: a.batch_gap.0,
        state_rate: a.state_rate,
    };
    let report = tailbound_report::mmpp(
        display_name(&a.stage.file),
        &l.trace,
        a.stage.stage,
        &l.profile,
        &opts,
    )
    .with_context(|| format!("cannot fit an MMPP to {}", a.stage.file.display()))?;
    let unit = report.unit.as_str();
    if a.stage.json {
        print_json(&report)?;
        return Ok(Outcome::Ok);
    }
    let m = &report.mmpp;
    let head = format!(
        "{} at {}: {} states, step {}, interval {}, mean load {} {unit}/s\n",
        report.trace,
        report.stage,
        m.states.len(),
        format_duration_s(m.step_s),
        format_duration_s(m.interval_s),
        si(report.mean_rate)
    );
    let rows: Vec<Vec<String>> = m
        .states
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let leave = 1.0 - m.transition[i][i];
            vec![
                i.to_string(),
                si(s.rate_per_s),
                si(s.sizes.mean()),
                s.intervals.to_string(),
                s.requests.to_string(),
                if leave > 0.0 {
                    format_duration_s(m.step_s / leave)
                } else {
                    "-".into()
                },
            ]
        })
        .collect();
    crate::output::print(
        &(head
            + &render(
                &[
                    "state",
                    "req/s",
                    &format!("mean [{unit}]"),
                    "intervals",
                    "requests",
                    "mean dwell",
                ],
                &rows,
            )),
    )?;
    Ok(Outcome::Ok)
}

#[derive(Debug, Args)]
pub struct EffBwArgs {
    #[command(flatten)]
    pub stage: StageArgs,
    /// shaper delay target, e.g. 20ms; more than 0, at most 1e6 s
    #[arg(long, value_parser = crate::args::seconds(0.0, 1e6, true))]
    pub delay: Seconds,
}

fn effbw(a: EffBwArgs) -> anyhow::Result<Outcome> {
    let delay_s = a.delay.0;
    let l = load(&a.stage)?;
    let report = tailbound_report::effbw(
        display_name(&a.stage.file),
        &l.trace,
        a.stage.stage,
        &l.profile,
        delay_s,
    )?;
    let unit = report.unit.as_str();
    if a.stage.json {
        print_json(&report)?;
    } else {
        crate::output::print(&format!(
            "{} at {}: effective bandwidth {} {unit}/s for {} ({} x the mean rate)\n",
            report.trace,
            report.stage,
            si(report.rate),
            format_duration_s(delay_s),
            report
                .mean_rate
                .map_or("-".into(), |m| format!("{:.2}", report.rate / m))
        ))?;
    }
    Ok(Outcome::Ok)
}
