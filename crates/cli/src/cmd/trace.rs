//! `tailbound trace ...`: statistics, splitting and synthetic generation of traces.

use super::{display_name, load_trace, print_json, progress, write_figure};
use crate::args;
use crate::report::{GenReport, SplitPart, SplitReport, TraceStatsReport};
use crate::table::{render, si};
use crate::Outcome;
use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use tailbound_model::units::{format_bytes, format_duration_s, Bytes, Seconds};
use tailbound_plot::{Chart, Figure, Series};
use tailbound_trace::{
    generate, rate_series, split, split_keep_times, trace_stats, write_trace, ArrivalModel, Format,
    GenSpec, SizeDist, Trace, Vocabulary,
};

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Summarise traces: rates, read fraction, size percentiles, burstiness
    Stats(StatsArgs),
    /// Split a trace in time: the first part characterizes, the second is replayed
    Split(SplitArgs),
    /// Generate a synthetic tenant trace (deterministic for a seed)
    Gen(GenArgs),
}

pub fn run(cmd: TraceCommand) -> anyhow::Result<Outcome> {
    match cmd {
        TraceCommand::Stats(a) => stats(a),
        TraceCommand::Split(a) => split_cmd(a),
        TraceCommand::Gen(a) => gen(a),
    }
}

/// Most traces `trace stats --svg` draws in one chart.
pub const MAX_PLOTTED_TRACES: usize = 64;

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// trace files (`arrival_ns,0xSIZE,op` or CSV with header `time_s,size_bytes,op`)
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// print JSON on stdout instead of a table
    #[arg(long)]
    pub json: bool,
    /// write a plot of request rate over time (1 s windows) to this SVG file (at most 64
    /// traces)
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = super::DATA_HELP)]
    pub data: Option<PathBuf>,
}

fn stats(a: StatsArgs) -> anyhow::Result<Outcome> {
    let bar = progress(a.files.len() as u64, a.json, "reading");
    let plotted = a.svg.is_some() || a.data.is_some();
    if plotted && a.files.len() > MAX_PLOTTED_TRACES {
        bail!(
            "--svg and --data plot one line per trace; give at most {MAX_PLOTTED_TRACES} traces with it \
             (got {})",
            a.files.len()
        );
    }
    let mut entries = Vec::with_capacity(a.files.len());
    let mut series = Vec::new();
    for path in &a.files {
        bar.set_message(display_name(path));
        let trace = load_trace(path)?;
        if plotted {
            let pts = rate_series(&trace, 1.0)?
                .into_iter()
                .map(|p| (p.start_s, p.requests_per_s))
                .collect();
            series.push(Series::step(short_name(path), pts));
        }
        entries.push(trace_stats(&trace));
        bar.inc(1);
    }
    bar.finish_and_clear();
    write_figure(a.svg.as_deref(), a.data.as_deref(), || {
        let mut chart = Chart::new("request rate over time (1 s windows)")
            .x_label("time [s]")
            .y_label("requests/s");
        for s in series {
            chart = chart.series(s);
        }
        Figure::new(vec![chart])
    })?;
    let report = TraceStatsReport { traces: entries };
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&stats_table(&report))?;
    }
    Ok(Outcome::Ok)
}

fn short_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| display_name(path), |n| n.to_string_lossy().into_owned())
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

fn stats_table(report: &TraceStatsReport) -> String {
    let headers = [
        "trace",
        "requests",
        "span",
        "req/s",
        "bytes/s",
        "read",
        "size p50",
        "p99",
        "max",
        "peak/mean 10ms",
        "100ms",
        "1s",
    ];
    let rows: Vec<Vec<String>> = report
        .traces
        .iter()
        .map(|s| {
            let p2m = |w: f64| {
                s.windows
                    .iter()
                    .find(|x| (x.window_s - w).abs() < 1e-12)
                    .and_then(|x| x.peak_to_mean_requests)
                    .map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
            };
            vec![
                short_name(Path::new(&s.name)),
                s.requests.to_string(),
                format_duration_s(s.span_s),
                opt(s.mean_requests_per_s, si),
                opt(s.mean_bytes_per_s, |v| format!("{}/s", format_bytes(v))),
                opt(s.read_fraction, |f| format!("{:.0}%", f * 100.0)),
                opt(
                    s.size_bytes.as_ref().map(|z| z.p50_bytes as f64),
                    format_bytes,
                ),
                opt(
                    s.size_bytes.as_ref().map(|z| z.p99_bytes as f64),
                    format_bytes,
                ),
                opt(
                    s.size_bytes.as_ref().map(|z| z.max_bytes as f64),
                    format_bytes,
                ),
                p2m(0.01),
                p2m(0.1),
                p2m(1.0),
            ]
        })
        .collect();
    render(&headers, &rows)
}

#[derive(Debug, Args)]
pub struct SplitArgs {
    /// the trace to split
    pub file: PathBuf,
    /// split point as a fraction of the time span, strictly between 0 and 1
    #[arg(long, default_value_t = 0.5, value_parser = args::real(0.0, 1.0, true))]
    pub at: f64,
    /// directory for the two parts, named `<stem>.first.csv` and `<stem>.second.csv`
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// keep the second part's absolute times instead of rebasing them to the split instant
    #[arg(long)]
    pub keep_times: bool,
    /// format of the written parts: native (`arrival_ns,0xSIZE,op`, no header; SNC-Meister,
    /// WorkloadCompactor) or csv (`time_s,size_bytes,op` with that header line)
    #[arg(long, default_value = "native")]
    pub format: Format,
    #[arg(long)]
    pub json: bool,
}

fn split_cmd(a: SplitArgs) -> anyhow::Result<Outcome> {
    let trace = load_trace(&a.file)?;
    let parts = if a.keep_times {
        split_keep_times(&trace, a.at)
    } else {
        split(&trace, a.at)
    };
    let (first, second) = parts.with_context(|| format!("cannot split {}", a.file.display()))?;
    let stem = a
        .file
        .file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let first_ns = trace.requests.first().map_or(0, |r| r.arrival_ns);
    let split_s = second
        .requests
        .first()
        .map_or(0.0, |_| first_ns as f64 * 1e-9 + a.at * span_s(&trace));
    std::fs::create_dir_all(&a.out_dir)
        .with_context(|| format!("cannot create {}", a.out_dir.display()))?;
    let mut parts = Vec::new();
    for (part, name) in [(&first, "first"), (&second, "second")] {
        let path = a.out_dir.join(format!("{stem}.{name}.csv"));
        save(&path, part, a.format)?;
        parts.push(SplitPart {
            file: display_name(&path),
            requests: part.requests.len(),
        });
    }
    let report = SplitReport {
        input: display_name(&a.file),
        at: a.at,
        split_s,
        parts,
    };
    if a.json {
        print_json(&report)?;
    } else {
        let text: String = report
            .parts
            .iter()
            .map(|p| format!("{}: {} requests\n", p.file, p.requests))
            .collect();
        crate::output::print(&text)?;
    }
    Ok(Outcome::Ok)
}

fn span_s(trace: &Trace) -> f64 {
    match (trace.requests.first(), trace.requests.last()) {
        (Some(a), Some(b)) => (b.arrival_ns - a.arrival_ns) as f64 * 1e-9,
        _ => 0.0,
    }
}

/// Writes a trace to a file (whole or not at all), or to stdout for `-`.
fn save(path: &Path, trace: &Trace, format: Format) -> anyhow::Result<()> {
    crate::output::write_to(path, |w| write_trace(w, &trace.requests, format))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// Poisson arrivals at --rate
    Poisson,
    /// Markov-modulated Poisson: --rates with mean --dwell per state
    Mmpp,
    /// on/off source: Poisson at --rate while on, silent while off (--on, --off mean times)
    Onoff,
    /// Pareto (heavy-tailed) inter-arrival times with mean rate --rate and --shape
    Pareto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SizeArg {
    /// every request is --size bytes
    Fixed,
    /// exponential sizes with mean --size
    Exp,
    /// Pareto sizes with minimum --size and --size-shape
    Pareto,
}

#[derive(Debug, Args)]
pub struct GenArgs {
    /// arrival model
    #[arg(long, value_enum)]
    pub model: ModelArg,
    /// seed of the generator: the same seed gives the same trace
    #[arg(long)]
    pub seed: u64,
    /// mean request rate [requests/s] (poisson, pareto; the on-rate for onoff); more than 0,
    /// at most 1e9, and rate × duration at most 20 million requests
    #[arg(long, default_value_t = 100.0, value_parser = args::real(0.0, 1e9, true))]
    pub rate: f64,
    /// per-state rates [requests/s] for mmpp, comma-separated, each 0 to 1e9 (at most 1000
    /// states)
    #[arg(long, value_delimiter = ',', default_values_t = [20.0, 400.0], value_parser = args::real(0.0, 1e9, false))]
    pub rates: Vec<f64>,
    /// mean time in each mmpp state, comma-separated (one value applies to all states); 1ns
    /// to 1e9 s
    #[arg(long, value_delimiter = ',', default_value = "5s", value_parser = args::seconds(1e-9, 1e9, false))]
    pub dwell: Vec<Seconds>,
    /// mean on period (onoff), 1ns to 1e9 s
    #[arg(long, default_value = "1s", value_parser = args::seconds(1e-9, 1e9, false))]
    pub on: Seconds,
    /// mean off period (onoff), 1ns to 1e9 s
    #[arg(long, default_value = "4s", value_parser = args::seconds(1e-9, 1e9, false))]
    pub off: Seconds,
    /// Pareto shape of inter-arrival times (more than 1, at most 1000; smaller is burstier)
    #[arg(long, default_value_t = 1.5, value_parser = args::real(1.0, 1000.0, true))]
    pub shape: f64,
    /// request size distribution
    #[arg(long, value_enum, default_value_t = SizeArg::Fixed)]
    pub size_dist: SizeArg,
    /// request size (mean for exp, minimum for pareto), e.g. 4KiB; 1B to 1GiB
    #[arg(long, default_value = "4KiB", value_parser = args::size(1.0, 1073741824.0))]
    pub size: Bytes,
    /// Pareto shape of sizes (more than 1, at most 1000)
    #[arg(long, default_value_t = 1.5, value_parser = args::real(1.0, 1000.0, true))]
    pub size_shape: f64,
    /// fraction of reads (0 to 1)
    #[arg(long, default_value_t = 0.5, value_parser = args::real(0.0, 1.0, false))]
    pub read_fraction: f64,
    /// length of the trace, e.g. 600s or 10min; more than 0, at most 1e9 s
    #[arg(long, default_value = "600s", value_parser = args::seconds(0.0, 1e9, true))]
    pub duration: Seconds,
    /// op names written: disk (DiskRead/DiskWrite) or key_value (Get/Put)
    #[arg(long, default_value = "disk")]
    pub vocab: Vocabulary,
    /// output file (`-` for stdout)
    #[arg(short, long, default_value = "-")]
    pub output: PathBuf,
    /// native (`arrival_ns,0xSIZE,op`) or csv (`time_s,size_bytes,op` with a header)
    #[arg(long, default_value = "native")]
    pub format: Format,
    /// print a JSON summary on stdout (then --output must be a file)
    #[arg(long)]
    pub json: bool,
}

/// Most states `trace gen --model mmpp` takes.
pub const MAX_MMPP_STATES: usize = 1000;

/// Builds the generator spec from command-line arguments.
pub fn gen_spec(a: &GenArgs) -> anyhow::Result<GenSpec> {
    let arrival = match a.model {
        ModelArg::Poisson => ArrivalModel::Poisson { rate_per_s: a.rate },
        ModelArg::Pareto => ArrivalModel::Pareto {
            rate_per_s: a.rate,
            shape: a.shape,
        },
        ModelArg::Onoff => ArrivalModel::OnOff {
            on_rate_per_s: a.rate,
            mean_on_s: a.on.0,
            mean_off_s: a.off.0,
        },
        ModelArg::Mmpp => {
            if a.rates.len() > MAX_MMPP_STATES {
                bail!(
                    "--rates has {} values; give at most {MAX_MMPP_STATES} states",
                    a.rates.len()
                );
            }
            let mut dwell: Vec<f64> = a.dwell.iter().map(|d| d.0).collect();
            if dwell.len() == 1 {
                dwell = vec![dwell[0]; a.rates.len()];
            }
            if dwell.len() != a.rates.len() {
                bail!(
                    "--dwell has {} values but --rates has {}; give one dwell time or one per rate",
                    dwell.len(),
                    a.rates.len()
                );
            }
            ArrivalModel::Mmpp {
                rates_per_s: a.rates.clone(),
                mean_dwell_s: dwell,
            }
        }
    };
    let size = a.size.0;
    let sizes = match a.size_dist {
        SizeArg::Fixed => SizeDist::Fixed {
            bytes: size.round() as u64,
        },
        SizeArg::Exp => SizeDist::Exponential { mean_bytes: size },
        SizeArg::Pareto => SizeDist::Pareto {
            min_bytes: size,
            shape: a.size_shape,
        },
    };
    Ok(GenSpec {
        arrival,
        sizes,
        read_fraction: a.read_fraction,
        duration_s: a.duration.0,
        vocabulary: a.vocab,
    })
}

fn gen(a: GenArgs) -> anyhow::Result<Outcome> {
    if a.json && a.output == Path::new("-") {
        bail!("--json prints a summary on stdout; give the trace a file with --output FILE");
    }
    let spec = gen_spec(&a)?;
    let trace = generate(&spec, a.seed)?;
    save(&a.output, &trace, a.format)?;
    let report = GenReport {
        file: (a.output != Path::new("-")).then(|| display_name(&a.output)),
        model: format!("{:?}", a.model).to_lowercase(),
        seed: a.seed,
        requests: trace.requests.len(),
    };
    if a.json {
        print_json(&report)?;
    } else if a.output != Path::new("-") {
        crate::output::note(format_args!(
            "wrote {} requests to {}",
            report.requests,
            a.output.display()
        ));
    }
    Ok(Outcome::Ok)
}
