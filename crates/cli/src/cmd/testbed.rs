//! `tailbound testbed run|up|down`: the scenario on a real testbed (namespaces, shaped links,
//! memcached, open-loop replay clients, enforcement), reported beside the simulator and the
//! bound; or a testbed left up for other tools, and taken down.

use super::simulate::read_decisions;
use super::{display_name, print_json, write_figure};
use crate::table::{bound_cell, render, slo_cell};
use crate::Outcome;
use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tailbound_admission::{Admission, Policy};
use tailbound_curves::WorkFunction;
use tailbound_dataplane::probe::Control;
use tailbound_model::units::{format_duration_s, Seconds};
use tailbound_model::{Decisions, Request};
use tailbound_plot::{Chart, Figure, Scale, Series};
use tailbound_scenario::{Part, Scenario};
use tailbound_testbed::run::Step;
use tailbound_testbed::state::{self, DEFAULT_NAME};
use tailbound_testbed::{AggressorSpec, Input, RunOptions, TestbedReport};

#[derive(Debug, Subcommand)]
pub enum TestbedCommand {
    /// Build the testbed, replay every admitted tenant's held-out half, tear it down and
    /// report testbed vs simulator vs bound per tenant (exit 1 if a tenant misses its SLO)
    Run(RunArgs),
    /// Build the testbed and leave it up (namespaces, links, memcached, enforcement) for
    /// other tools; prints its host map
    Up(UpArgs),
    /// Tear down a testbed left up, and the leftovers of runs that died
    Down(DownArgs),
}

/// What the testbed is built from.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// scenario: tailbound's own (TOML/JSON) or SNC-Meister's topology JSON (with traces)
    pub scenario: PathBuf,
    /// decide with this admission policy, tenants in file order (ignored with --decisions)
    #[arg(long, default_value = "snc-meister")]
    pub policy: Policy,
    /// a policy's decisions (JSON from `tailbound admit`/`place`) instead of deciding here;
    /// the report then has no bounds
    #[arg(long)]
    pub decisions: Option<PathBuf>,
    /// link rates and rate limits × S, traces slowed down 1/S times, measured latencies × S
    /// (0 < S ≤ 1; e.g. 0.1: 1 Gbit/s links at 100 Mbit/s), so that this machine keeps up
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// shape the links only; do not apply the decisions (priorities, rate limits)
    #[arg(long)]
    pub no_enforce: bool,
    /// add a tenant that ignores admission: udp or tcp (a blast at line rate toward a
    /// server) or memcached (64 outstanding 1 MiB gets from it), optionally @SERVER
    /// (default: the server with the most tenants)
    #[arg(long, value_parser = aggressor_arg)]
    pub aggressor: Option<AggressorSpec>,
    /// memcached's port on every server host
    #[arg(long, default_value_t = tailbound_testbed::topology::MEMCACHED_PORT)]
    pub port: u16,
    /// the memcached executable
    #[arg(long, default_value = "memcached")]
    pub memcached: PathBuf,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// replay only this much of each held-out half (trace time from the first arrival),
    /// e.g. 60s; default all of it
    #[arg(long)]
    pub duration: Option<Seconds>,
    /// length of the SLO-check windows (trace time)
    #[arg(long, default_value = "180s")]
    pub window: Seconds,
    /// a request not answered this long after it was due has timed out (real time);
    /// default 10 × the largest SLO ÷ scale, at least 5 s
    #[arg(long)]
    pub timeout: Option<Seconds>,
    /// most connections per tenant
    #[arg(long, default_value_t = 256)]
    pub max_connections: usize,
    /// print JSON on stdout
    #[arg(long)]
    pub json: bool,
    /// draw testbed vs simulator vs bound per tenant as SVG
    #[arg(long)]
    pub svg: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = super::DATA_HELP)]
    pub data: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub build: BuildArgs,
    /// the testbed's name (1 to 12 lowercase letters or digits)
    #[arg(long, default_value = DEFAULT_NAME)]
    pub name: String,
    /// print the state (host map, namespaces, memcached PIDs) as JSON
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    /// the testbed's name
    #[arg(long, default_value = DEFAULT_NAME)]
    pub name: String,
    /// print what was removed as JSON
    #[arg(long)]
    pub json: bool,
}

fn aggressor_arg(s: &str) -> Result<AggressorSpec, String> {
    s.parse()
        .map_err(|e: tailbound_testbed::TestbedError| e.to_string())
}

pub fn run(cmd: TestbedCommand) -> anyhow::Result<Outcome> {
    match cmd {
        TestbedCommand::Run(a) => run_run(a),
        TestbedCommand::Up(a) => run_up(a),
        TestbedCommand::Down(a) => run_down(a),
    }
}

/// A scenario with its decisions, bounds and held-out requests.
struct Loaded {
    scenario: Scenario,
    decisions: Decisions,
    bounds: Vec<Option<f64>>,
    requests: Vec<Vec<Request>>,
}

impl Loaded {
    /// The run's input; `works` is `self.scenario.works()`.
    fn input<'a>(&'a self, b: &BuildArgs, works: &'a [&'a dyn WorkFunction]) -> Input<'a> {
        Input {
            name: display_name(&b.scenario),
            network: &self.scenario.network,
            works,
            decisions: &self.decisions,
            requests: &self.requests,
            bounds: &self.bounds,
        }
    }
}

/// One value of a tenant's report, for the figure.
type TenantValue = dyn Fn(&tailbound_testbed::report::TenantReport) -> Option<f64>;

fn load(b: &BuildArgs) -> anyhow::Result<Loaded> {
    tailbound_testbed::topology::check_scale(b.scale)?;
    let scenario = tailbound_scenario::load(&b.scenario)
        .with_context(|| format!("cannot load scenario {}", b.scenario.display()))?;
    let n = scenario.network.tenants.len();
    let (decisions, bounds) = match &b.decisions {
        Some(path) => (read_decisions(path)?, vec![None; n]),
        None => decide(&scenario, b.policy)?,
    };
    let requests = scenario
        .requests(Part::SecondHalf)
        .with_context(|| format!("cannot replay {}", b.scenario.display()))?;
    Ok(Loaded {
        scenario,
        decisions,
        bounds,
        requests,
    })
}

/// Tenants arrive in file order under `policy` (as `tailbound admit`); the decisions and
/// every admitted tenant's final bound.
fn decide(scenario: &Scenario, policy: Policy) -> anyhow::Result<(Decisions, Vec<Option<f64>>)> {
    let net = &scenario.network;
    // the bounds cover Ethernet packets (what the simulator replays)
    let mut engine = Admission::new(net, policy)?;
    for (i, t) in net.tenants.iter().enumerate() {
        engine
            .arrive(i)
            .with_context(|| format!("cannot decide tenant {:?}", t.name))?;
    }
    let mut bounds = vec![None; net.tenants.len()];
    for b in engine.bounds()? {
        bounds[b.tenant] = b.total.seconds();
    }
    Ok((engine.decisions(), bounds))
}

fn options(b: &BuildArgs) -> RunOptions {
    let mut o = RunOptions::default();
    o.topology.scale = b.scale;
    o.topology.port = b.port;
    o.topology.aggressor = b.aggressor.clone();
    o.testbed.enforce = !b.no_enforce;
    o.testbed.memcached = b.memcached.clone();
    o
}

fn run_run(a: RunArgs) -> anyhow::Result<Outcome> {
    let l = load(&a.build)?;
    let mut opts = options(&a.build);
    opts.window_s = a.window.0;
    opts.duration_s = a.duration.map(|d| d.0);
    opts.timeout_s = a.timeout.map(|t| t.0);
    opts.max_connections = a.max_connections;
    let works = l.scenario.works();
    let input = l.input(&a.build, &works);
    let bar = Bar::new(a.json);
    let report =
        tailbound_testbed::run(&input, &opts, &Arc::new(Control::new()), &|s| bar.step(s))?;
    bar.finish();
    if a.json {
        print_json(&report)?;
    } else {
        crate::output::print(&table(&report))?;
    }
    write_figure(a.svg.as_deref(), a.data.as_deref(), || figure(&report))?;
    Ok(if report.violated == 0 {
        Outcome::Ok
    } else {
        Outcome::CheckFailed
    })
}

fn run_up(a: UpArgs) -> anyhow::Result<Outcome> {
    let l = load(&a.build)?;
    let works = l.scenario.works();
    let input = l.input(&a.build, &works);
    let s = state::up(&input, &options(&a.build), &a.name)?;
    if a.json {
        print_json(&s)?;
        return Ok(Outcome::Ok);
    }
    let mut text = format!(
        "testbed {:?} is up: {} hosts, {} tenants, scale {}, decisions {} (state in {})\n",
        s.name,
        s.topology.hosts.len(),
        s.topology.tenants.len(),
        s.topology.scale,
        if s.enforced {
            "enforced"
        } else {
            "not enforced (links shaped only)"
        },
        state::state_path(&s.name).display()
    );
    let rows: Vec<Vec<String>> = s
        .topology
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let pid = s
                .servers
                .iter()
                .find(|(x, _)| *x == i)
                .map_or_else(|| "-".to_string(), |(_, p)| p.pid.to_string());
            vec![
                h.name.clone(),
                s.namespaces.get(i).cloned().unwrap_or_default(),
                h.ip.to_string(),
                format!("{:.1} Mbit/s", h.rate_bytes_per_s * 8e-6),
                pid,
            ]
        })
        .collect();
    text.push_str(&render(
        &["host", "namespace", "address", "link", "memcached pid"],
        &rows,
    ));
    let rows: Vec<Vec<String>> = s
        .topology
        .tenants
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.address.to_string(),
                t.server_addr.to_string(),
                t.priority.to_string(),
                format!("0x{:02x}", t.tos),
            ]
        })
        .collect();
    text.push_str(&render(
        &["tenant", "address", "memcached", "prio", "tos"],
        &rows,
    ));
    text.push_str(&format!(
        "take it down with: tailbound testbed down --name {}\n",
        s.name
    ));
    crate::output::print(&text)?;
    Ok(Outcome::Ok)
}

fn run_down(a: DownArgs) -> anyhow::Result<Outcome> {
    let d = state::down(&a.name)?;
    if a.json {
        print_json(&d)?;
    } else {
        crate::output::print(&format!(
            "testbed {:?}: {} memcached stopped, {} namespaces deleted{}; {} namespaces of dead runs deleted\n",
            a.name,
            d.stopped.len(),
            d.namespaces.len(),
            if d.had_state { "" } else { " (no state file)" },
            d.stale.len()
        ))?;
    }
    Ok(Outcome::Ok)
}

/// Progress on stderr: building, then the replay's expected seconds, then simulating; hidden
/// when stderr is not a terminal or with `--json`.
struct Bar {
    bar: ProgressBar,
    ticker: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Bar {
    fn new(json: bool) -> Bar {
        let bar = ProgressBar::new(1);
        if json || !std::io::stderr().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        } else if let Ok(style) =
            ProgressStyle::with_template("testbed [{bar:30}] {msg} ({elapsed})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Bar {
            bar,
            ticker: std::sync::Mutex::new(None),
        }
    }

    fn step(&self, s: Step) {
        match s {
            Step::Building => self.bar.set_message("building hosts, links and servers"),
            Step::Replaying { seconds } => {
                self.bar.set_length((seconds * 10.0).max(1.0) as u64);
                self.bar.set_position(0);
                self.bar.set_message(format!("replaying {seconds:.0} s"));
                let bar = self.bar.clone();
                let tick = std::thread::spawn(move || {
                    let start = std::time::Instant::now();
                    while !bar.is_finished() && bar.position() < bar.length().unwrap_or(0) {
                        bar.set_position((start.elapsed().as_secs_f64() * 10.0) as u64);
                        std::thread::sleep(Duration::from_millis(200));
                    }
                });
                if let Ok(mut t) = self.ticker.lock() {
                    *t = Some(tick);
                }
            }
            Step::Simulating => {
                self.bar.set_position(self.bar.length().unwrap_or(0));
                self.bar.set_message("simulating the same replay");
            }
        }
    }

    fn finish(&self) {
        self.bar.finish_and_clear();
        if let Ok(mut t) = self.ticker.lock() {
            if let Some(t) = t.take() {
                let _ = t.join();
            }
        }
    }
}

fn ratio_cell(r: Option<f64>) -> String {
    r.map_or_else(|| "-".into(), |x| format!("{x:.2}"))
}

fn table(r: &TestbedReport) -> String {
    let rows: Vec<Vec<String>> = r
        .tenants
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                slo_cell(t.percentile, t.slo_s),
                t.priority.to_string(),
                t.bound_s
                    .map_or_else(|| "-".into(), |b| bound_cell(Some(b))),
                format!("{}/{}", t.replies, t.requests),
                format_duration_s(t.testbed_p50_s),
                format_duration_s(t.testbed_p999_s),
                format_duration_s(t.testbed_worst_window_s),
                format_duration_s(t.sim_p999_s),
                format_duration_s(t.sim_worst_window_s),
                ratio_cell(t.testbed_over_sim),
                if t.violated { "NO" } else { "yes" }.to_string(),
            ]
        })
        .collect();
    let mut out = format!(
        "{} with {} on the testbed: scale {} (links and rate limits × {}, traces {}× slower, \
         latencies in trace time), decisions {}{}\n",
        r.scenario,
        r.policy,
        r.scale,
        r.scale,
        1.0 / r.scale,
        if r.enforced {
            "enforced"
        } else {
            "NOT enforced (links shaped only)"
        },
        r.aggressor.as_ref().map_or_else(String::new, |a| format!(
            ", aggressor {:?} at {} ({:.1} Mbit/s)",
            a.kind,
            a.target,
            a.rate_bytes_per_s * 8e-6
        ))
    );
    out += &render(
        &[
            "tenant",
            "SLO",
            "prio",
            "bound",
            "replies",
            "p50",
            "p99.9",
            "worst window",
            "sim p99.9",
            "sim worst",
            "tb/sim",
            "meets SLO",
        ],
        &rows,
    );
    let c = &r.comparison;
    out += &format!(
        "testbed / simulator p99.9 over {} tenants: median {}, quartiles {} – {}, range {} – {}{}\n",
        c.tenants,
        ratio_cell(c.median),
        ratio_cell(c.p25),
        ratio_cell(c.p75),
        ratio_cell(c.min),
        ratio_cell(c.max),
        if c.apart.is_empty() {
            String::new()
        } else {
            format!("; more than 2× apart: {}", c.apart.join(", "))
        }
    );
    let m = &r.machine;
    out += &format!(
        "machine: {} cores, replay {:.1} s, CPU clients {:.1} s + memcached {:.1} s ({:.0} % of \
         the machine), sends late by p99 {} (max {}), offered {:.0} requests/s and {:.2} MB/s\n",
        m.cores,
        m.wall_s,
        m.client_cpu_s,
        m.server_cpu_s,
        m.cpu_share * 100.0,
        format_duration_s(m.send_late_p99_s),
        format_duration_s(m.send_late_max_s),
        m.offered_requests_per_s,
        m.offered_bytes_per_s / 1e6
    );
    let kernel: Vec<String> = r
        .hosts
        .iter()
        .filter(|h| h.counters != Default::default())
        .map(|h| {
            format!(
                "{} {} retransmits, {}/{} drops out/in",
                h.name, h.counters.retransmits, h.counters.drops_out, h.counters.drops_in
            )
        })
        .collect();
    if !kernel.is_empty() {
        out += &format!("kernel: {}\n", kernel.join("; "));
    }
    for t in r.tenants.iter().filter(|t| t.errors + t.timeouts > 0) {
        out += &format!(
            "{}: {} errors, {} timeouts{}\n",
            t.name,
            t.errors,
            t.timeouts,
            t.first_error
                .as_ref()
                .map_or_else(String::new, |e| format!(" (first: {e})"))
        );
    }
    out
}

/// Per tenant (x): the testbed's and the simulator's worst window, the bound and the SLO.
fn figure(r: &TestbedReport) -> Figure {
    let pts = |f: &dyn Fn(&tailbound_testbed::report::TenantReport) -> Option<f64>| {
        r.tenants
            .iter()
            .enumerate()
            .filter_map(|(i, t)| f(t).filter(|v| *v > 0.0).map(|v| ((i + 1) as f64, v)))
            .collect::<Vec<_>>()
    };
    let names = r
        .tenants
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{} = {}", i + 1, t.name))
        .collect::<Vec<_>>()
        .join(", ");
    let mut chart = Chart::new(format!(
        "testbed vs simulator vs bound (scale {}, {})",
        r.scale,
        if r.enforced {
            "enforced"
        } else {
            "not enforced"
        }
    ))
    .x_label(format!("tenant ({names})"))
    .y_label("worst window's SLO percentile [s]")
    .y_scale(Scale::Log);
    let series: [(&str, &TenantValue); 4] = [
        ("testbed", &|t| Some(t.testbed_worst_window_s)),
        ("simulator", &|t| Some(t.sim_worst_window_s)),
        ("bound", &|t| t.bound_s),
        ("SLO", &|t| Some(t.slo_s)),
    ];
    for (name, f) in series {
        let p = pts(f);
        if !p.is_empty() {
            chart = chart.series(Series::points(name, p));
        }
    }
    Figure::new(vec![chart])
}
