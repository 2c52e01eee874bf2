//! One testbed run, start to end: topology and schedule from the scenario, decisions and
//! requests; the capacity check; the testbed up; the replay (with the aggressor); the testbed
//! down; the simulator on the same requests and decisions; the report.

use crate::capacity::{self, Budget, Load, Machine};
use crate::report::{self, TestbedReport};
use crate::schedule::Schedule;
use crate::testbed::{Testbed, TestbedOptions};
use crate::topology::{Topology, TopologyOptions};
use crate::TestbedError;
use std::sync::Arc;
use std::time::Duration;
use tailbound_curves::WorkFunction;
use tailbound_dataplane::probe::Control;
use tailbound_dataplane::replay::ReplayOptions;
use tailbound_model::{Decisions, Network, Request};
use tailbound_sim::{Plan, Replay, SimResult, Transmission};

/// What to run.
pub struct Input<'a> {
    /// the scenario's name, for the report
    pub name: String,
    pub network: &'a Network,
    /// the simulator's work function per network flow (`Scenario::works`)
    pub works: &'a [&'a dyn WorkFunction],
    pub decisions: &'a Decisions,
    /// the requests to replay, one list per scenario tenant (sorted by arrival)
    pub requests: &'a [Vec<Request>],
    /// the admission bound per scenario tenant, when known [s]
    pub bounds: &'a [Option<f64>],
}

/// How to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    pub topology: TopologyOptions,
    pub testbed: TestbedOptions,
    /// SLO-check window [s of trace time]
    pub window_s: f64,
    /// replay only this much trace time from the first arrival [s]
    pub duration_s: Option<f64>,
    /// a request not complete this long after it was due has timed out [s of real time];
    /// `None`: 10 × the largest SLO ÷ scale, at least 5 s
    pub timeout_s: Option<f64>,
    /// most connections per tenant
    pub max_connections: usize,
    /// what one core replays per second (the capacity check)
    pub budget: Budget,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            topology: TopologyOptions::default(),
            testbed: TestbedOptions::default(),
            window_s: 180.0,
            duration_s: None,
            timeout_s: None,
            max_connections: 256,
            budget: Budget::MEASURED,
        }
    }
}

/// Where a run is, for progress display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// the testbed is being built
    Building,
    /// the replay runs; it takes about this long [s]
    Replaying { seconds: f64 },
    /// the simulator replays the same requests
    Simulating,
}

/// Everything a run decides before touching the machine.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub topology: Topology,
    pub schedule: Schedule,
    pub load: Load,
}

/// Topology, schedule and capacity check of `input` (no I/O but reading the machine's size).
pub fn prepare(input: &Input<'_>, opts: &RunOptions) -> Result<Prepared, TestbedError> {
    if input.requests.len() != input.network.tenants.len() {
        return Err(TestbedError::Input(format!(
            "{} request lists for {} tenants",
            input.requests.len(),
            input.network.tenants.len()
        )));
    }
    let topology = Topology::build(input.network, input.decisions, &opts.topology)?;
    let schedule = Schedule::build(&topology, input.requests, opts.window_s, opts.duration_s)?;
    let load = capacity::check(&topology, &schedule, &Machine::detect(), &opts.budget)?;
    Ok(Prepared {
        topology,
        schedule,
        load,
    })
}

/// The request timeout of `opts` for `topology` (see [`RunOptions::timeout_s`]).
pub fn timeout(topology: &Topology, opts: &RunOptions) -> Duration {
    let slo = topology.tenants.iter().map(|t| t.slo_s).fold(0.0, f64::max);
    let s = opts
        .timeout_s
        .unwrap_or_else(|| (10.0 * slo / topology.scale).max(5.0));
    Duration::from_secs_f64(s.clamp(1e-3, 3600.0))
}

/// The value sizes each server host needs.
pub fn sizes(p: &Prepared) -> Vec<(usize, Vec<u32>)> {
    (0..p.topology.hosts.len())
        .filter(|&h| p.topology.hosts[h].server)
        .map(|h| (h, p.schedule.sizes_on(&p.topology, h)))
        .collect()
}

/// The simulator on the requests the testbed replays, under the same decisions.
pub fn simulate(
    input: &Input<'_>,
    schedule: &Schedule,
    window_s: f64,
) -> Result<SimResult, TestbedError> {
    let plan =
        Plan::from_decisions(input.network, input.decisions).map_err(TestbedError::Decisions)?;
    Replay::new(
        input.network,
        schedule.replayed.clone(),
        input.works.to_vec(),
    )
    .map_err(TestbedError::Sim)?
    .run(&plan, Transmission::default(), window_s)
    .map_err(TestbedError::Sim)
}

/// Runs `input` on a testbed built for it and reports; see the module docs. `ctl` stops the
/// replay early (an interrupted run is an error).
pub fn run(
    input: &Input<'_>,
    opts: &RunOptions,
    ctl: &Arc<Control>,
    progress: &dyn Fn(Step),
) -> Result<TestbedReport, TestbedError> {
    let p = prepare(input, opts)?;
    progress(Step::Building);
    let bed = Testbed::up(&p.topology, &sizes(&p), &opts.testbed)?;
    let replay = ReplayOptions {
        latency_scale: p.topology.scale,
        timeout: timeout(&p.topology, opts),
        max_connections: opts.max_connections,
        nice: opts.testbed.nice,
        ..ReplayOptions::default()
    };
    progress(Step::Replaying {
        seconds: p.schedule.replay_s(p.topology.scale),
    });
    let measured = bed.replay(&p.schedule, &replay, ctl)?;
    let enforced = bed.enforced();
    drop(bed);
    progress(Step::Simulating);
    let sim = simulate(input, &p.schedule, opts.window_s)?;
    let ctx = report::Context {
        scenario: input.name.clone(),
        policy: input.decisions.policy.clone(),
        topology: &p.topology,
        sim: &sim.tenants,
        bounds: input.bounds,
        scheduled: p.schedule.tenants.iter().map(|r| r.len() as u64).collect(),
        window_s: opts.window_s,
        span_s: p.schedule.span_s,
        enforced,
        load: p.load,
    };
    Ok(report::build(&ctx, &measured))
}
