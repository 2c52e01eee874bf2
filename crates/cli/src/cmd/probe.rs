//! `tailbound probe ...`: RTT distributions of TCP and UDP request-response exchanges (the
//! tail-latency study). Parsing and printing only; the probe lives in `tailbound_dataplane`.

use super::{print_json, progress, write_figure};
use crate::table::render;
use crate::Outcome;
use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tailbound_dataplane::netns::LinkOptions;
use tailbound_dataplane::probe::server::{Server, ServerConfig};
use tailbound_dataplane::probe::{
    self, client, run_probe, run_sweep, size_label, Control, Hosts, IoMode, Load, ProbeResult,
    ProbeSpec, Protocol, RunOptions, Setup, SweepPlan, SweepReport, MAX_PAIRS,
};
use tailbound_model::units::{parse_duration_s, parse_size_bytes, BytesPerSec};
use tailbound_plot::{Chart, Figure, Scale, Series};

#[derive(Debug, Subcommand)]
pub enum ProbeCommand {
    /// Echo server for `probe client`; serves until Ctrl-C
    Server(ServerArgs),
    /// Client pairs against a running `probe server`
    Client(ClientArgs),
    /// Server and client together, over loopback or two network namespaces (--netns)
    Run(RunArgs),
    /// Every combination of protocols × I/O modes × pairs × sizes, one after another
    Sweep(SweepArgs),
}

pub fn run(cmd: ProbeCommand) -> anyhow::Result<Outcome> {
    match cmd {
        ProbeCommand::Server(a) => server(a),
        ProbeCommand::Client(a) => client_cmd(a),
        ProbeCommand::Run(a) => run_cmd(a),
        ProbeCommand::Sweep(a) => sweep(a),
    }
}

fn parse_size(s: &str) -> Result<usize, String> {
    let b = parse_size_bytes(s).map_err(|e| e.to_string())?;
    let bytes = b.round() as u64;
    probe::validate_size(bytes).map_err(|e| e.to_string())?;
    Ok(bytes as usize)
}

fn parse_pairs(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("invalid number of pairs {s:?}; use 1 to {MAX_PAIRS}"))?;
    if !(1..=MAX_PAIRS).contains(&n) {
        return Err(format!("invalid number of pairs {n}; use 1 to {MAX_PAIRS}"));
    }
    Ok(n)
}

/// Most exchanges (measured or warm-up) one configuration takes.
pub const MAX_COUNT: u64 = 1_000_000_000;

fn parse_timeout(s: &str) -> Result<f64, String> {
    let t = parse_duration_s(s).map_err(|e| e.to_string())?;
    if !(t > 0.0 && t <= 3600.0) {
        return Err(format!(
            "invalid timeout {s:?}; use a positive duration of at most 1h (e.g. 2s)"
        ));
    }
    Ok(t)
}

fn parse_time(s: &str) -> Result<f64, String> {
    let t = parse_duration_s(s).map_err(|e| e.to_string())?;
    if !(t > 0.0 && t <= probe::MAX_TIME_S) {
        return Err(format!(
            "invalid time {s:?}; use a positive duration of at most 1d (e.g. 30s)"
        ));
    }
    Ok(t)
}

fn parse_rate_per_s(s: &str) -> Result<f64, String> {
    let r: f64 = s
        .trim()
        .trim_end_matches("/s")
        .parse()
        .map_err(|_| format!("invalid rate {s:?}; use requests per second, e.g. 10000"))?;
    if !(r.is_finite() && r > 0.0 && r <= 1e9) {
        return Err(format!(
            "invalid rate {s:?}; use a positive number of requests per second, at most 1e9"
        ));
    }
    Ok(r)
}

/// How each exchange looks and how many there are.
#[derive(Debug, Args)]
pub struct ExchangeArgs {
    /// tcp or udp (rdma is detected and refused: not available here)
    #[arg(long, default_value = "tcp")]
    pub protocol: Protocol,
    /// blocking (a thread per pair) or nonblocking (epoll via tokio)
    #[arg(long, default_value = "blocking")]
    pub io: IoMode,
    /// bytes per request and per reply, 16B to 16MiB (UDP: at most 65507B, the datagram limit)
    #[arg(long, default_value = "1KiB", value_parser = parse_size)]
    pub size: usize,
    /// concurrent client-server pairs (connections)
    #[arg(long, default_value_t = 1, value_parser = parse_pairs)]
    pub pairs: usize,
    /// measured exchanges over all pairs (1 to 1e9)
    #[arg(long, default_value_t = probe::DEFAULT_COUNT, value_parser = clap::value_parser!(u64).range(1..=MAX_COUNT))]
    pub count: u64,
    /// exchanges before measuring, over all pairs (0 to 1e9)
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub warmup: u64,
    #[command(flatten)]
    pub client: ClientOpts,
}

/// Client-side options shared by every command that runs pairs.
#[derive(Debug, Args)]
pub struct ClientOpts {
    /// open loop at this many requests per second over all pairs (RTT measured from each
    /// request's intended send time); default: closed-loop ping-pong
    #[arg(long, value_name = "PER_S", value_parser = parse_rate_per_s)]
    pub rate: Option<f64>,
    /// TCP: give up when a reply takes longer; UDP: count it lost
    #[arg(long, default_value = "2s", value_parser = parse_timeout)]
    pub timeout: f64,
    /// stop each configuration after this long even if --count is not reached (warm-up
    /// included; at most 1d): closed loop, no exchange starts after it; open loop, only the
    /// requests due within it are sent
    #[arg(long, value_name = "DURATION", value_parser = parse_time)]
    pub time: Option<f64>,
    /// pin the client's pair threads to these CPUs (pair i on the i-th, round robin)
    #[arg(long, value_name = "CPUS", value_delimiter = ',')]
    pub pin_client: Vec<usize>,
    /// mark every request with the DSCP of this priority level (0 highest to 62), as a tenant
    /// at that level does; switch ports of `tailbound enforce` classify on it
    #[arg(long, value_name = "P", value_parser = parse_priority_tos, conflicts_with = "tos")]
    pub priority: Option<u8>,
    /// mark every request with this TOS byte (0 to 255, decimal or 0x hex)
    #[arg(long, value_name = "TOS", value_parser = parse_tos)]
    pub tos: Option<u8>,
}

/// The TOS byte of a priority level.
fn parse_priority_tos(s: &str) -> Result<u8, String> {
    let p: u32 = s
        .trim()
        .parse()
        .map_err(|_| format!("invalid priority {s:?}; expected a level from 0 (highest) to 62"))?;
    tailbound_dataplane::tos::tos_for(p).map_err(|e| e.to_string())
}

fn parse_tos(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let v = match t.strip_prefix("0x") {
        Some(h) => u8::from_str_radix(h, 16),
        None => t.parse(),
    };
    v.map_err(|_| format!("invalid TOS {s:?}; expected a byte, 0 to 255 (e.g. 0xb8)"))
}

impl ClientOpts {
    fn load(&self) -> Load {
        match self.rate {
            Some(rate_per_s) => Load::OpenLoop { rate_per_s },
            None => Load::ClosedLoop,
        }
    }
}

impl ExchangeArgs {
    fn spec(&self) -> ProbeSpec {
        ProbeSpec {
            protocol: self.protocol,
            io: self.io,
            size_bytes: self.size,
            pairs: self.pairs,
            count: self.count,
            warmup: self.warmup,
            load: self.client.load(),
            time_s: self.client.time,
        }
    }
}

/// Where the two ends run.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// run server and client in two new network namespaces joined by a veth pair (needs root;
    /// removed afterwards, also on Ctrl-C); default: loopback
    #[arg(long)]
    pub netns: bool,
    /// put a bridge between the two namespaces
    #[arg(long, requires = "netns")]
    pub bridge: bool,
    /// shape the link with HTB at this rate in each direction (e.g. 1Gbit; 1Kbit to 10000Gbit)
    #[arg(long, requires = "netns", value_parser = crate::args::link())]
    pub link_rate: Option<BytesPerSec>,
    /// pin the server's threads to these CPUs
    #[arg(long, value_name = "CPUS", value_delimiter = ',')]
    pub pin_server: Vec<usize>,
    /// server port (0 = any free port)
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

impl HostArgs {
    fn hosts(&self) -> anyhow::Result<Hosts> {
        if !self.netns {
            return Ok(Hosts::Loopback);
        }
        Hosts::netns(LinkOptions {
            bridge: self.bridge,
            rate_bytes_per_s: self.link_rate.map(|r| r.0),
        })
        .context("cannot set up the two network namespaces")
    }
}

/// Result files and formats.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// print JSON on stdout instead of a table
    #[arg(long)]
    pub json: bool,
    /// also write one CSV row per configuration to this file
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// also plot the RTT distributions to this SVG file
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// also write the RTT histogram as an HdrHistogram percentile distribution (.hgrm, values
    /// in µs) to this file; several configurations write FILE's name plus -CONFIGURATION
    /// each (run-tcp-1KiB-x1-blocking.hgrm)
    #[arg(long, value_name = "FILE")]
    pub hgrm: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = super::DATA_HELP)]
    pub data: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServerArgs {
    /// address to listen on
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub bind: IpAddr,
    /// port for TCP and UDP (0 = any free port)
    #[arg(long, default_value_t = 7470)]
    pub port: u16,
    /// protocols to serve
    #[arg(long, default_value = "tcp,udp", value_delimiter = ',')]
    pub protocol: Vec<Protocol>,
    /// blocking (a thread per pair) or nonblocking (epoll via tokio)
    #[arg(long, default_value = "blocking")]
    pub io: IoMode,
    /// epoll worker threads in nonblocking mode (default: one per CPU)
    #[arg(long)]
    pub threads: Option<usize>,
    /// pin the server's threads to these CPUs
    #[arg(long, value_name = "CPUS", value_delimiter = ',')]
    pub pin: Vec<usize>,
    /// print the listening addresses as JSON
    #[arg(long)]
    pub json: bool,
}

fn server(a: ServerArgs) -> anyhow::Result<Outcome> {
    let server = Server::start(&ServerConfig {
        bind: SocketAddr::new(a.bind, a.port),
        protocols: a.protocol,
        io: a.io,
        threads: a.threads.unwrap_or_else(probe::available_cpus),
        netns: None,
        cpus: a.pin,
    })?;
    let show = |addr: Option<SocketAddr>| addr.map_or("-".to_string(), |a| a.to_string());
    // One line on stdout, flushed, so scripts know where to connect.
    let line = if a.json {
        serde_json::json!({
            "tcp": server.tcp_addr().map(|a| a.to_string()),
            "udp": server.udp_addr().map(|a| a.to_string()),
            "io": a.io,
        })
        .to_string()
    } else {
        format!(
            "listening tcp {} udp {} ({})",
            show(server.tcp_addr()),
            show(server.udp_addr()),
            a.io
        )
    };
    crate::output::print(&(line + "\n"))?;
    crate::output::note(format_args!("serving until interrupted (Ctrl-C)"));
    server.wait();
    Ok(Outcome::Ok)
}

#[derive(Debug, Args)]
pub struct ClientArgs {
    /// the server's address (for UDP: its handshake port)
    #[arg(long, default_value = "127.0.0.1:7470")]
    pub server: SocketAddr,
    #[command(flatten)]
    pub exchange: ExchangeArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn client_cmd(a: ClientArgs) -> anyhow::Result<Outcome> {
    let spec = a.exchange.spec();
    spec.validate()?;
    let ctl = Arc::new(Control::new());
    let bar = progress(spec.exchanges(), a.output.json, "probe");
    bar.set_message(spec.label());
    let run = with_progress(&ctl, &bar, || {
        client::run(
            &spec,
            &client::ClientConfig {
                server: a.server,
                netns: None,
                cpus: a.exchange.client.pin_client.clone(),
                timeout_s: a.exchange.client.timeout,
                tos: a.exchange.client.priority.or(a.exchange.client.tos),
            },
            &ctl,
        )
    })?;
    let setup = Setup {
        kind: format!("remote {}", a.server),
        bridge: false,
        link_rate_bytes_per_s: None,
    };
    let result = probe::result_of(&spec, setup, run)?;
    output_results(&[result], &a.output)
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub exchange: ExchangeArgs,
    #[command(flatten)]
    pub hosts: HostArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn run_options(c: &ClientOpts, h: &HostArgs) -> RunOptions {
    RunOptions {
        timeout_s: c.timeout,
        client_cpus: c.pin_client.clone(),
        server_cpus: h.pin_server.clone(),
        tos: c.priority.or(c.tos),
        port: h.port,
    }
}

fn run_cmd(a: RunArgs) -> anyhow::Result<Outcome> {
    let spec = a.exchange.spec();
    spec.validate()?;
    let opts = run_options(&a.exchange.client, &a.hosts);
    opts.validate()?;
    let hosts = a.hosts.hosts()?;
    let ctl = Arc::new(Control::new());
    let bar = progress(spec.exchanges(), a.output.json, "probe");
    bar.set_message(spec.label());
    let result = with_progress(&ctl, &bar, || run_probe(&spec, &hosts, &opts, &ctl))?;
    drop(hosts);
    output_results(&[result], &a.output)
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// protocols to sweep
    #[arg(long, default_value = "tcp,udp", value_delimiter = ',')]
    pub protocols: Vec<Protocol>,
    /// I/O modes to sweep
    #[arg(long, default_value = "blocking,nonblocking", value_delimiter = ',')]
    pub io: Vec<IoMode>,
    /// payload sizes to sweep (UDP skips sizes above the 65507B datagram limit, saying so)
    #[arg(
        long,
        default_value = "64B,512B,4KiB,32KiB,256KiB,512KiB",
        value_delimiter = ',',
        value_parser = parse_size
    )]
    pub sizes: Vec<usize>,
    /// numbers of concurrent pairs to sweep
    #[arg(long, default_value = "1,2,4,8", value_delimiter = ',', value_parser = parse_pairs)]
    pub pairs: Vec<usize>,
    /// measured exchanges per configuration (the study used 100000; the default keeps a full
    /// sweep within minutes); 1 to 1e9
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=MAX_COUNT))]
    pub count: u64,
    /// warm-up exchanges per configuration (0 to 1e9)
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u64).range(0..=MAX_COUNT))]
    pub warmup: u64,
    #[command(flatten)]
    pub client: ClientOpts,
    #[command(flatten)]
    pub hosts: HostArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn sweep(a: SweepArgs) -> anyhow::Result<Outcome> {
    let plan = SweepPlan {
        protocols: a.protocols.clone(),
        io: a.io.clone(),
        sizes_bytes: a.sizes.clone(),
        pairs: a.pairs.clone(),
        count: a.count,
        warmup: a.warmup,
        load: a.client.load(),
        time_s: a.client.time,
    };
    let (specs, _) = plan.expand()?;
    let opts = run_options(&a.client, &a.hosts);
    opts.validate()?;
    let hosts = a.hosts.hosts()?;
    let ctl = Arc::new(Control::new());
    let total: u64 = specs.iter().map(ProbeSpec::exchanges).sum();
    let bar = progress(total, a.output.json, "sweep");
    let report = with_progress(&ctl, &bar, || {
        run_sweep(&plan, &hosts, &opts, &ctl, &mut |i, n, spec| {
            bar.set_message(format!("[{}/{n}] {}", i + 1, spec.label()));
            tracing::info!(config = %spec.label(), "probing");
        })
    })?;
    drop(hosts);
    for s in &report.skipped {
        crate::output::note(format_args!("skipped {}: {}", s.spec.label(), s.reason));
    }
    if !report.rdma.available || !a.output.json {
        crate::output::note(format_args!("rdma: {}", report.rdma.detail));
    }
    if report.results.is_empty() {
        bail!(
            "every configuration of the sweep was skipped ({} of them, reasons above); \
             choose --protocols, --sizes and --pairs that can run",
            report.skipped.len()
        );
    }
    write_files(&report.results, &a.output, Some(&report))?;
    if a.output.json {
        print_json(&report)?;
    } else {
        crate::output::print(&table(&report.results))?;
    }
    Ok(Outcome::Ok)
}

/// Runs `f` while a thread moves the progress bar along with the exchanges done.
fn with_progress<T>(ctl: &Arc<Control>, bar: &indicatif::ProgressBar, f: impl FnOnce() -> T) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                bar.set_position(ctl.done());
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        bar.finish_and_clear();
        out
    })
}

fn output_results(results: &[ProbeResult], out: &OutputArgs) -> anyhow::Result<Outcome> {
    write_files(results, out, None)?;
    match results {
        [one] if out.json => print_json(one)?,
        _ if out.json => print_json(&crate::output::Items { items: results })?,
        _ => crate::output::print(&table(results))?,
    }
    Ok(Outcome::Ok)
}

fn write_files(
    results: &[ProbeResult],
    out: &OutputArgs,
    sweep: Option<&SweepReport>,
) -> anyhow::Result<()> {
    if let Some(path) = &out.csv {
        crate::output::write_text(path, &csv(results))?;
    }
    if let Some(path) = &out.hgrm {
        write_hgrm(path, results)?;
    }
    write_figure(out.svg.as_deref(), out.data.as_deref(), || match sweep {
        Some(report) => sweep_figure(report),
        None => cdf_figure(results),
    })?;
    Ok(())
}

/// Writes each result's histogram in HdrHistogram's percentile distribution format: one
/// result to `path`, several to `path`'s name plus `-<configuration>` each.
fn write_hgrm(path: &Path, results: &[ProbeResult]) -> anyhow::Result<()> {
    use tailbound_dataplane::probe::stats;
    for r in results {
        let Some(h) = &r.histogram else { continue };
        let text = stats::percentile_distribution(
            h,
            stats::HGRM_TICKS_PER_HALF_DISTANCE,
            stats::HGRM_UNIT_RATIO,
        );
        let file = match results {
            [_] => path.to_path_buf(),
            _ => hgrm_name(path, &r.spec),
        };
        crate::output::write_text(&file, &text)?;
    }
    Ok(())
}

/// `out.hgrm` for `tcp 1KiB x2 blocking` → `out-tcp-1KiB-x2-blocking.hgrm` (open loop adds
/// `-<rate>per_s`).
fn hgrm_name(path: &Path, spec: &ProbeSpec) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "probe".into(), |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(|| "hgrm".into(), |e| e.to_string_lossy().into_owned());
    let mut name = format!(
        "{stem}-{}-{}-x{}-{}",
        spec.protocol,
        size_label(spec.size_bytes),
        spec.pairs,
        spec.io
    );
    if let Load::OpenLoop { rate_per_s } = spec.load {
        name.push_str(&format!("-{rate_per_s}per_s"));
    }
    path.with_file_name(format!("{name}.{ext}"))
}

fn us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// The human-readable table: one row per configuration, RTTs in µs.
pub fn table(results: &[ProbeResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let q = &r.rtt;
            vec![
                r.spec.label(),
                q.count.to_string(),
                r.lost.to_string(),
                us(q.p50_us),
                us(q.p90_us),
                us(q.p99_us),
                us(q.p99_9_us),
                us(q.p99_99_us),
                us(q.p99_999_us),
                us(q.max_us),
                format!("{:.1}", q.max_over_median),
            ]
        })
        .collect();
    let setup = results
        .first()
        .map_or(String::new(), |r| setup_label(&r.setup));
    format!(
        "RTT [µs] over {setup}\n{}",
        render(
            &[
                "configuration",
                "count",
                "lost",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "p99.99",
                "p99.999",
                "max",
                "max/p50"
            ],
            &rows
        )
    )
}

fn setup_label(s: &Setup) -> String {
    let mut out = s.kind.clone();
    if s.bridge {
        out.push_str(" + bridge");
    }
    if let Some(r) = s.link_rate_bytes_per_s {
        out.push_str(&format!(" @ {} Mbit/s", r * 8.0 / 1e6));
    }
    out
}

/// One CSV row per configuration.
pub fn csv(results: &[ProbeResult]) -> String {
    let mut out = String::from(
        "protocol,io,size_bytes,pairs,load,rate_per_s,setup,count,lost,min_us,mean_us,p50_us,p90_us,p99_us,p99_9_us,p99_99_us,p99_999_us,max_us,max_over_median,exchanges_per_s\n",
    );
    for r in results {
        let q = &r.rtt;
        let (load, rate) = match r.spec.load {
            Load::ClosedLoop => ("closed-loop", String::new()),
            Load::OpenLoop { rate_per_s } => ("open-loop", rate_per_s.to_string()),
        };
        out.push_str(&format!(
            "{},{},{},{},{load},{rate},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
            r.spec.protocol,
            r.spec.io,
            r.spec.size_bytes,
            r.spec.pairs,
            setup_label(&r.setup),
            q.count,
            r.lost,
            q.min_us,
            q.mean_us,
            q.p50_us,
            q.p90_us,
            q.p99_us,
            q.p99_9_us,
            q.p99_99_us,
            q.p99_999_us,
            q.max_us,
            q.max_over_median,
            r.exchanges_per_s
        ));
    }
    out
}

/// CDF and tail (1 − CDF, log) of each result's RTTs: the study's distribution plots.
fn cdf_charts(results: &[&ProbeResult], title: &str) -> Vec<Chart> {
    let mut cdf = Chart::new(format!("RTT CDF: {title}"))
        .x_label("RTT [µs]")
        .y_label("fraction of exchanges")
        .x_scale(Scale::Log);
    let mut tail = Chart::new(format!("RTT tail: {title}"))
        .x_label("RTT [µs]")
        .y_label("fraction slower (1 − CDF)")
        .x_scale(Scale::Log)
        .y_scale(Scale::Log);
    for r in results {
        let label = r.spec.label();
        let pts = |f: fn(f64) -> f64| r.cdf.iter().map(|p| (p.rtt_us, f(p.fraction))).collect();
        cdf = cdf.series(Series::step(label.clone(), pts(|q| q)));
        tail = tail.series(Series::step(label, pts(|q| 1.0 - q)));
    }
    vec![cdf, tail]
}

fn cdf_figure(results: &[ProbeResult]) -> Figure {
    let all: Vec<&ProbeResult> = results.iter().collect();
    let title = results
        .first()
        .map_or_else(String::new, |r| setup_label(&r.setup));
    Figure::new(cdf_charts(&all, &title))
}

/// The sweep's figure: CDFs at the size nearest 1 KiB with the fewest pairs; per protocol,
/// p50 and p99.9 vs payload size (fewest pairs) and p99.9 vs payload size for each number of
/// pairs (first I/O mode).
fn sweep_figure(report: &SweepReport) -> Figure {
    let results = &report.results;
    let min_pairs = results.iter().map(|r| r.spec.pairs).min().unwrap_or(1);
    let near_1k = results
        .iter()
        .map(|r| r.spec.size_bytes)
        .min_by(|a, b| {
            let dist = |s: usize| (s as f64 / 1024.0).ln().abs();
            dist(*a).total_cmp(&dist(*b))
        })
        .unwrap_or(1024);
    let cdfs: Vec<&ProbeResult> = results
        .iter()
        .filter(|r| r.spec.pairs == min_pairs && r.spec.size_bytes == near_1k)
        .collect();
    let mut charts = cdf_charts(&cdfs, &format!("{} x{min_pairs}", size_label(near_1k)));
    let mut protocols: Vec<Protocol> = results.iter().map(|r| r.spec.protocol).collect();
    protocols.dedup();
    let mut ios: Vec<IoMode> = results.iter().map(|r| r.spec.io).collect();
    ios.sort();
    ios.dedup();
    let mut pairs: Vec<usize> = results.iter().map(|r| r.spec.pairs).collect();
    pairs.sort();
    pairs.dedup();
    for p in protocols {
        let mut by_size = Chart::new(format!("{p}: RTT vs payload ({min_pairs} pair)"))
            .x_label("payload [bytes]")
            .y_label("RTT [µs]")
            .x_scale(Scale::Log)
            .y_scale(Scale::Log);
        for &io in &ios {
            let sel: Vec<&ProbeResult> = results
                .iter()
                .filter(|r| r.spec.protocol == p && r.spec.io == io && r.spec.pairs == min_pairs)
                .collect();
            let line = |f: fn(&ProbeResult) -> f64| {
                sel.iter()
                    .map(|r| (r.spec.size_bytes as f64, f(r)))
                    .collect::<Vec<_>>()
            };
            by_size = by_size
                .series(Series::samples(format!("p50 {io}"), line(|r| r.rtt.p50_us)))
                .series(Series::samples(
                    format!("p99.9 {io}"),
                    line(|r| r.rtt.p99_9_us),
                ))
                .series(Series::points(format!("max {io}"), line(|r| r.rtt.max_us)));
        }
        charts.push(by_size);
        let Some(&io) = ios.first() else { continue };
        let mut by_pairs = Chart::new(format!("{p}: p99.9 vs payload by pairs ({io})"))
            .x_label("payload [bytes]")
            .y_label("p99.9 RTT [µs]")
            .x_scale(Scale::Log)
            .y_scale(Scale::Log);
        for &n in &pairs {
            let pts: Vec<(f64, f64)> = results
                .iter()
                .filter(|r| r.spec.protocol == p && r.spec.io == io && r.spec.pairs == n)
                .map(|r| (r.spec.size_bytes as f64, r.rtt.p99_9_us))
                .collect();
            if !pts.is_empty() {
                by_pairs = by_pairs.series(Series::samples(format!("{n} pairs"), pts));
            }
        }
        charts.push(by_pairs);
    }
    Figure::new(charts)
}
