//! The `tailbound` command line: argument parsing and dispatch to the library crates.
//!
//! This crate holds no logic of its own beyond formatting. Each subcommand lives in
//! [`cmd`]; the structures printed with `--json` live in [`report`] so that tests (and other
//! tools) can deserialize them; tables in [`table`]. Everything written (stdout, files,
//! stderr notes) goes through [`output`]. Exit codes: 0 ok (also when stdout's reader went
//! away), 1 checked and failed, 2 error (printed once on stderr).

pub mod args;
pub mod cmd;
pub mod output;
pub mod report;
pub mod table;

use clap::{Parser, Subcommand};

/// What a successful command concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// everything checked out (exit 0)
    Ok,
    /// the command ran but what it checked failed, e.g. an SLO is violated (exit 1)
    CheckFailed,
}

/// Tail-latency SLOs and throughput guarantees for shared clusters.
///
/// tailbound characterizes tenants from traces (r-b curves, MMPP fits, effective bandwidth),
/// decides whom to admit and where to place them, enforces the decisions and verifies them.
#[derive(Debug, Parser)]
#[command(name = "tailbound", version, propagate_version = true)]
pub struct Cli {
    /// more log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// only errors on stderr
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// log lines on stderr: text (for people, fields as key=value) or json (one object per
    /// line with level, message and fields, for log collectors)
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the pipeline on a seeded synthetic multi-tenant set (no files needed)
    Demo(cmd::demo::DemoArgs),
    /// Read, check, summarise, split and generate request traces
    #[command(subcommand)]
    Trace(cmd::trace::TraceCommand),
    /// Characterize a trace: r-b and arrival curves, MMPP fits, effective bandwidth
    #[command(subcommand)]
    Curve(cmd::curve::CurveCommand),
    /// Bound every tenant's latency in a scenario (SNC-Meister, SNC baselines or DNC)
    Bound(cmd::bound::BoundArgs),
    /// General server graphs: per-flow delay and backlog bounds (TFA, SFA, SNC), Saihu JSON
    #[command(subcommand)]
    Graph(cmd::graph::GraphCommand),
    /// Reproduce the papers' experiments (JSON and SVG output)
    #[command(subcommand)]
    Experiment(cmd::experiment::ExperimentCommand),
    /// Multi-resource allocation (DRF, H-DRF, first-fit) of a JSON input, or its benchmark
    Alloc(cmd::alloc::AllocArgs),
    /// Decide tenant by tenant, in file order, whom to admit (SNC-Meister or a DNC baseline)
    Admit(cmd::admit::AdmitArgs),
    /// Choose each workload's server and rate limits (WorkloadCompactor's LP or a baseline)
    Place(cmd::place::PlaceArgs),
    /// Replay the held-out half of every tenant's trace and check the SLOs (optionally under
    /// a policy's decisions)
    Simulate(cmd::simulate::SimulateArgs),
    /// The most tenants, in arrival order, that all meet their SLOs in replay (OPT)
    Opt(cmd::simulate::OptArgs),
    /// Measure RTT distributions of TCP and UDP exchanges (the tail-latency study)
    #[command(subcommand)]
    Probe(cmd::probe::ProbeCommand),
    /// Run a scenario on a real testbed: hosts in network namespaces, shaped links, real
    /// memcached, open-loop replay clients, enforcement from the decisions (as root)
    #[command(subcommand)]
    Testbed(cmd::testbed::TestbedCommand),
    /// The operator's virtual datacenters: check, allocate, run Pulsar's controller and its
    /// enforcer proxy
    #[command(subcommand)]
    Vdc(cmd::vdc::VdcCommand),
    /// Enforce decisions on hosts with Linux tc: plan, apply, status, remove
    #[command(subcommand)]
    Enforce(cmd::enforce::EnforceCommand),
    /// Run the controller service: tenants admitted and placed one at a time over HTTP/JSON,
    /// state in SQLite
    Serve(cmd::serve::ServeArgs),
    /// Add, remove and list tenants of a running service (`tailbound serve`)
    #[command(subcommand)]
    Tenant(cmd::tenant::TenantCommand),
    /// Register and list a running service's hosts, and issue host agents' tokens
    #[command(subcommand)]
    Host(cmd::host::HostCommand),
    /// Run a host's tc agent: pull the host's decisions from the service and apply them
    Agent(cmd::agent::AgentArgs),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell)
    Completions(cmd::docs::CompletionsArgs),
    /// Write the man pages of tailbound and every command to a folder
    Man(cmd::docs::ManArgs),
    /// Print the JSON Schema of an input file: scenario, vdc, decisions or hosts
    Schema(cmd::schema::SchemaArgs),
}

/// Runs one parsed command.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Demo(a) => cmd::demo::run(a),
        Command::Trace(c) => cmd::trace::run(c),
        Command::Curve(c) => cmd::curve::run(c),
        Command::Bound(a) => cmd::bound::run(a),
        Command::Graph(c) => cmd::graph::run(c),
        Command::Experiment(c) => cmd::experiment::run(c),
        Command::Alloc(a) => cmd::alloc::run(a),
        Command::Probe(c) => cmd::probe::run(c),
        Command::Admit(a) => cmd::admit::run(a),
        Command::Place(a) => cmd::place::run(a),
        Command::Simulate(a) => cmd::simulate::run_simulate(a),
        Command::Opt(a) => cmd::simulate::run_opt(a),
        Command::Testbed(c) => cmd::testbed::run(c),
        Command::Vdc(c) => cmd::vdc::run(c),
        Command::Enforce(c) => cmd::enforce::run(c),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Tenant(c) => cmd::tenant::run(c),
        Command::Host(c) => cmd::host::run(c),
        Command::Agent(a) => cmd::agent::run(a),
        Command::Completions(a) => cmd::docs::completions(a),
        Command::Man(a) => cmd::docs::man(a),
        Command::Schema(a) => cmd::schema::run(a),
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `LEVEL message key=value ...`
    Text,
    /// `{"timestamp":..,"level":..,"fields":{"message":..,..}}`, one per line
    Json,
}

/// Installs the `tracing` subscriber: logs go to stderr, `RUST_LOG` overrides `-v`/`-q`.
pub fn init_logging(verbose: u8, quiet: bool, format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
