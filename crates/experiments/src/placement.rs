//! Servers needed to meet tail-latency SLOs: WorkloadCompactor vs the baselines
//! (workload-compactor Fig. 6, 11, 12 and 13; §4–§5).
//!
//! 1. **Workloads.** Each of `workloads` workloads reuses a production trace drawn at random,
//!    rotated by a random offset ([`tailbound_trace::rotate`]: the trace is treated as
//!    periodic with period span + mean gap, so reused traces do not burst in step) and gets
//!    an SLO drawn from `slos_s` at the SLO percentile. The first half (by time) characterizes
//!    it ([`characterize`]: exact r-b curves at the mean rate and above); the second half is
//!    replayed. As in §5.1 ("we only consider workloads that can meet their SLOs when run in
//!    isolation") a workload is kept only if it meets its SLO alone on a server under
//!    WorkloadCompactor, whatever share of its latency budget a shared server leaves it: for
//!    the whole budget, half and a quarter of it, the LP finds limits for it alone (with the
//!    safety margin; a share where none fit is skipped, but the whole budget must fit) and
//!    its second half, replayed alone through strict limiters with those limits, meets the
//!    whole SLO; others are redrawn. This keeps out workloads whose held-out half overflows
//!    the buckets drawn from their first half (a burst the characterized half never showed:
//!    their r-b curves are too small, §5.2), at the points of the curve a shared server may
//!    give them, not only at the one it gets alone. The pool is a property of the workloads,
//!    the same whichever policies are compared.
//!
//!    A baseline rule may still pick limits under which a kept workload misses its SLO even
//!    alone by the baseline's own latency check (avg-rate's b at 1.5× the mean can exceed
//!    the SLO by itself): such a workload gets a server of its own without limits, where it
//!    meets its SLO (a replay without limits is never later than the pool's strictly limited
//!    one); it counts in the policy's servers and in `dedicated`.
//! 2. **Placement.** Every policy places the same workloads in the same order
//!    ([`tailbound_placement::Placer`]); with `events` = arrivals and departures, after each
//!    arrival past the first tenth a random live workload departs with probability ½, and the
//!    measure is the peak number of servers in use (Fig. 13). Each policy is timed here
//!    (wall clock around its placement calls only).
//! 3. **Replay.** The second half of every workload placed at the end is replayed in
//!    `tailbound-sim` with its policy's rate limits and priorities: per server, queues
//!    `server<k>-in`, `server<k>-storage`, `server<k>-out` and the workload's own client NIC
//!    (`<name>-client-out`, `<name>-client-in`); flows `<name>-req`, `<name>-storage`,
//!    `<name>-resp` shaped by the net-in, storage and net-out buckets. A violation is a
//!    workload whose windowed SLO percentile (3-minute windows) exceeds its SLO.
//!
//! Traces are read by the caller; this module does no I/O.

use crate::admission::Violator;
use crate::par_map;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;
use tailbound_curves::{NetworkCost, StorageProfile};
use tailbound_model::{
    FlowModels, Network, NetworkBuilder, NewTenant, Request, Slo, SloError, SLO_WINDOW_S,
};
use tailbound_placement::{
    characterize, server_name, Assignment, LpStage, Placement, PlacementConfig, PlacementError,
    Placer, Policy, ServerSpec, Workload, WorkloadId,
};
use tailbound_sim::{
    simulate, Excess, SimConfig, SimError, SimResult, TenantWorkload, Transmission,
};
use tailbound_trace::{rotate, rotation_period, Trace};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementExperimentError {
    #[error(transparent)]
    Placement(#[from] PlacementError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Slo(#[from] SloError),
    #[error("{0}")]
    Config(String),
}

/// Whether workloads only arrive, or also depart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Events {
    #[default]
    Arrivals,
    ArrivalsDepartures,
}

tailbound_model::names!(Events, "event mode", {
    Arrivals => "arrivals",
    ArrivalsDepartures => "arrivals-departures",
});

/// The experiment's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacementExperimentConfig {
    pub workloads: usize,
    pub seed: u64,
    /// SLO latencies to draw from [s] (one value: the "same SLO" experiments)
    pub slos_s: Vec<f64>,
    /// SLO percentile (99.9 in the paper)
    pub percentile: f64,
    pub events: Events,
    /// r-b curves scaled by 1 + this [1]
    pub safety_margin: f64,
    pub server: ServerSpec,
    pub policies: Vec<Policy>,
    /// prune every curve to this many token buckets (None: exact curves)
    pub max_segments: Option<usize>,
    /// replay the second halves in the simulator
    pub replay: bool,
    /// how the simulator's links carry work
    pub transmission: Transmission,
    /// what the replay's shapers do with requests beyond the chosen ⟨r, b⟩
    pub excess: Excess,
    pub profile: StorageProfile,
    /// worker threads for characterization and replay
    pub threads: usize,
}

impl Default for PlacementExperimentConfig {
    fn default() -> Self {
        PlacementExperimentConfig {
            workloads: 1000,
            seed: 1,
            slos_s: vec![0.1, 0.15, 0.25, 0.5, 1.0],
            percentile: 99.9,
            events: Events::Arrivals,
            safety_margin: 0.1,
            server: ServerSpec::default(),
            policies: Policy::all(),
            max_segments: None,
            replay: true,
            transmission: Transmission::default(),
            excess: Excess::BestEffort,
            profile: StorageProfile::intel710_ssd(),
            threads: 2,
        }
    }
}

/// One sampled workload.
#[derive(Debug, Clone)]
pub struct Sampled {
    pub workload: Workload,
    /// the trace it reuses
    pub trace: String,
    /// rotation [s]
    pub offset_s: f64,
    /// the held-out second half, rebased to start near 0
    pub replay: Vec<Request>,
}

/// What one policy did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyResult {
    /// servers used: at the end (arrivals) or at the peak (arrivals and departures)
    pub servers: usize,
    /// wall-clock time of the placement calls [s]
    pub seconds: f64,
    /// placed workloads whose replayed windowed SLO percentile exceeds their SLO (`None`: no
    /// replay)
    pub violations: Option<usize>,
    /// workloads placed at the end
    pub placed: usize,
    /// workloads the policy could not place anywhere
    pub rejected: usize,
    /// workloads whose limits under this policy miss their SLO even alone on a server: each
    /// gets a server of its own without rate limits, where it meets its SLO (it was sampled
    /// only if it does, §5.1); included in `servers` (at the end, or at the peak)
    #[serde(default)]
    pub dedicated: usize,
    /// LPs solved
    pub lp_solves: u64,
    /// the largest replayed windowed SLO percentile / SLO over placed workloads [1]
    pub worst_latency_ratio: Option<f64>,
    /// the placed workloads that missed their SLO in replay, with their server's replay
    /// without rate limits
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violators: Vec<Violator>,
    /// cumulative placement time and servers in use after every `step` arrivals
    pub timeline: Vec<TimelinePoint>,
}

/// Progress of one policy after a number of arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    pub workloads: usize,
    /// cumulative placement time [s]
    pub seconds: f64,
    pub servers: usize,
}

/// The headline numbers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// best baseline's servers / compactor's servers (compactor-fff when compactor did not run)
    pub ratio: Option<f64>,
    pub best_baseline: Option<String>,
    /// compactor-fff's servers / compactor's servers
    pub fff_servers_ratio: Option<f64>,
    /// compactor's time / compactor-fff's time
    pub fff_speedup: Option<f64>,
}

/// The settings echoed in the result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setting {
    pub workloads: usize,
    pub seed: u64,
    pub slos_s: Vec<f64>,
    pub percentile: f64,
    pub events: Events,
    pub safety_margin: f64,
    pub server: ServerSpec,
    pub max_segments: Option<usize>,
    pub traces: usize,
    /// workloads redrawn because they cannot meet their SLO in isolation
    pub redrawn: usize,
}

/// The data behind Fig. 6/11/12/13.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementExperiment {
    pub setting: Setting,
    /// by policy name (`compactor`, `compactor-fff`, `avg-rate:1.5`, ...)
    pub policies: BTreeMap<String, PolicyResult>,
    pub summary: Summary,
}

/// Whether a sampled workload can meet its SLO in isolation (§5.1: "we only consider
/// workloads that can meet their SLOs when run in isolation"), run as the paper runs it, under
/// WorkloadCompactor: for every share in [`BUDGET_SHARES`] of its latency budget, the LP
/// finds limits for it alone on an empty server with that budget (with the safety margin),
/// and its held-out half, replayed alone on that server through strict limiters
/// ([`Excess::Wait`]) with those limits, meets the whole SLO. A smaller share moves the limits
/// along the curve as co-located workloads do (a higher rate, a smaller burst: the budget the
/// others' bursts take is not this workload's). The replay keeps out workloads whose first
/// half understates their second so much that limits drawn from it would hold them past
/// their SLO with nobody else on the server (their r-b curves are too small, §5.2). It is
/// experiment design, as in the paper: a placement policy never sees the held-out half.
fn meets_slo_in_isolation(
    s: &Sampled,
    cfg: &PlacementExperimentConfig,
) -> Result<bool, PlacementExperimentError> {
    for (k, share) in BUDGET_SHARES.iter().enumerate() {
        // the LP's budget is the SLO minus the device's latency: scale what is above it
        let mut w = s.workload.clone();
        let device_s = cfg.server.device_latency_s;
        w.slo.latency_s = device_s + share * (w.slo.latency_s - device_s);
        let Some(alone) = alone_assignment(w, cfg)? else {
            if k == 0 {
                return Ok(false);
            }
            break;
        };
        let (_, sim) = simulate_server(0, &[(&alone, s)], cfg, Some(Excess::Wait))?;
        if !sim.tenants.iter().all(|t| t.meets_slo) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The limits WorkloadCompactor gives `w` alone on an empty server; `None` if none fit.
fn alone_assignment(
    w: Workload,
    cfg: &PlacementExperimentConfig,
) -> Result<Option<Assignment>, PlacementExperimentError> {
    let mut placer = Placer::new(PlacementConfig {
        policy: Policy::CompactorFff,
        server: cfg.server,
        safety_margin: cfg.safety_margin,
        max_servers: Some(1),
    })?;
    let (_, outcome) = placer.arrive(w)?;
    Ok(matches!(outcome, Placement::Placed { .. }).then(|| placer.assignments().remove(0)))
}

/// Shares of a workload's latency budget at which [`meets_slo_in_isolation`] tries its limits;
/// the first must fit, the others are tried while they do.
const BUDGET_SHARES: [f64; 3] = [1.0, 0.5, 0.25];

/// Draws and characterizes the workloads (see the module docs). `progress` is called once
/// per kept workload. Returns the workloads and how many were redrawn.
pub fn sample_workloads(
    traces: &[Trace],
    cfg: &PlacementExperimentConfig,
    progress: impl Fn() + Sync,
) -> Result<(Vec<Sampled>, usize), PlacementExperimentError> {
    if traces.is_empty() || traces.iter().any(|t| t.requests.len() < 2) {
        return Err(PlacementExperimentError::Config(
            "the experiment needs at least one trace, each with at least two requests".into(),
        ));
    }
    if cfg.slos_s.is_empty() || cfg.slos_s.iter().any(|&s| !(s.is_finite() && s > 0.0)) {
        return Err(PlacementExperimentError::Config(format!(
            "SLOs {:?} are not allowed; give at least one positive latency [s]",
            cfg.slos_s
        )));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut kept: Vec<Sampled> = Vec::with_capacity(cfg.workloads);
    let mut redrawn = 0;
    let mut attempts = 0usize;
    while kept.len() < cfg.workloads {
        let want = cfg.workloads - kept.len();
        attempts += want;
        if attempts > 20 * cfg.workloads + 100 {
            return Err(PlacementExperimentError::Config(format!(
                "after {attempts} draws only {} workloads meet their SLO alone; loosen the SLOs",
                kept.len()
            )));
        }
        // draw in order, characterize in parallel
        let draws: Vec<(usize, usize, u64, f64)> = (0..want)
            .map(|i| {
                let t = rng.gen_range(0..traces.len());
                let span = traces[t].span_ns().max(1);
                let offset = rng.gen_range(0..span);
                let slo = *cfg.slos_s.choose(&mut rng).unwrap_or(&cfg.slos_s[0]);
                (kept.len() + redrawn + i, t, offset, slo)
            })
            .collect();
        let results = par_map(
            &draws,
            cfg.threads,
            |&(_, t, offset, slo)| -> Result<Option<Sampled>, PlacementExperimentError> {
                let requests = &traces[t].requests;
                let rotated = rotate(requests, offset);
                let half = requests[0].arrival_ns + rotation_period(requests) / 2;
                let split = rotated.partition_point(|r| r.arrival_ns < half);
                let first = &rotated[..split];
                let replay: Vec<Request> = rotated[split..]
                    .iter()
                    .map(|r| Request {
                        arrival_ns: r.arrival_ns - half,
                        ..*r
                    })
                    .collect();
                let curves = characterize(&traces[t].name, first, &cfg.profile, cfg.max_segments);
                let sampled = match curves {
                    Ok(curves) if !replay.is_empty() => Sampled {
                        workload: Workload {
                            name: format!("{}@{offset}", traces[t].name),
                            slo: Slo::new(slo, cfg.percentile)?,
                            curves,
                        },
                        trace: traces[t].name.clone(),
                        offset_s: offset as f64 * 1e-9,
                        replay,
                    },
                    _ => return Ok(None),
                };
                Ok(meets_slo_in_isolation(&sampled, cfg)?.then_some(sampled))
            },
        );
        for result in results {
            let Some(mut sampled) = result? else {
                redrawn += 1;
                continue;
            };
            if kept.len() >= cfg.workloads {
                continue;
            }
            sampled.workload.name = format!("w{:04}", kept.len());
            kept.push(sampled);
            progress();
        }
    }
    Ok((kept, redrawn))
}

/// The event sequence: `Some(i)` = workload i arrives, `None`-free; departures as
/// `(false, i)`. Identical for every policy.
pub fn event_sequence(n: usize, events: Events, seed: u64) -> Vec<(bool, usize)> {
    let mut out = Vec::with_capacity(2 * n);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_de9a);
    let mut live: Vec<usize> = Vec::new();
    for i in 0..n {
        out.push((true, i));
        live.push(i);
        if events == Events::ArrivalsDepartures && i >= n / 10 && rng.gen_bool(0.5) {
            let k = rng.gen_range(0..live.len());
            out.push((false, live.swap_remove(k)));
        }
    }
    out
}

/// Places the workloads under one policy; returns the placer and the result without replay.
pub fn place(
    sampled: &[Sampled],
    cfg: &PlacementExperimentConfig,
    policy: Policy,
) -> Result<(Placer, PolicyResult), PlacementExperimentError> {
    let mut placer = Placer::new(PlacementConfig {
        policy,
        server: cfg.server,
        safety_margin: cfg.safety_margin,
        max_servers: None,
    })?;
    let events = event_sequence(sampled.len(), cfg.events, cfg.seed);
    let step = (sampled.len() / 20).max(1);
    let mut timeline = Vec::new();
    let mut ids: Vec<Option<WorkloadId>> = vec![None; sampled.len()];
    let mut seconds = 0.0;
    let mut rejected = 0;
    // workloads on a server of their own (see `PolicyResult::dedicated`): ever, and now
    let (mut dedicated, mut dedicated_live, mut peak) = (0, 0, 0);
    let mut alone = vec![false; sampled.len()];
    for (arrive, i) in events {
        let start = Instant::now();
        if arrive {
            let (id, outcome) = placer.arrive(sampled[i].workload.clone())?;
            ids[i] = Some(id);
            match outcome {
                Placement::Placed { .. } => {}
                Placement::FitsNowhere if policy.is_baseline() => {
                    alone[i] = true;
                    dedicated += 1;
                    dedicated_live += 1;
                }
                _ => rejected += 1,
            }
        } else if alone[i] {
            alone[i] = false;
            dedicated_live -= 1;
        } else if let Some(id) = ids[i] {
            placer.depart(id)?;
        }
        seconds += start.elapsed().as_secs_f64();
        peak = peak.max(placer.servers_in_use() + dedicated_live);
        if arrive && ((i + 1) % step == 0 || i + 1 == sampled.len()) {
            timeline.push(TimelinePoint {
                workloads: i + 1,
                seconds,
                servers: placer.servers_in_use() + dedicated_live,
            });
        }
    }
    let servers = match cfg.events {
        Events::Arrivals => placer.servers_in_use() + dedicated_live,
        Events::ArrivalsDepartures => peak,
    };
    let placed = placer.assignments().len();
    let result = PolicyResult {
        servers,
        seconds,
        violations: None,
        placed,
        rejected,
        dedicated,
        lp_solves: placer.lp_solves(),
        worst_latency_ratio: None,
        violators: Vec::new(),
        timeline,
    };
    Ok((placer, result))
}

/// The replay network of one server: the server (NIC and storage), each workload's client
/// host (its own NIC), and per workload the flows req → storage → resp.
fn server_network(
    k: usize,
    members: &[(&Assignment, &Sampled)],
    server: &ServerSpec,
    percentile: f64,
) -> Result<Network, PlacementExperimentError> {
    let link = server.link_bytes_per_s;
    let mut b = NetworkBuilder::new();
    let host = b.host(server_name(k), link, Some(server.storage_rate));
    for (a, s) in members {
        let client = b.host(format!("{}-client", a.name), link, None);
        let slo = Slo::new(s.workload.slo.latency_s, percentile)?;
        let t = b.tenant(NewTenant {
            priority: Some(a.priority),
            ..NewTenant::new(a.name.clone(), slo).between(client, host)
        });
        for stage in LpStage::SERVER.iter().filter_map(|s| s.flow_stage()) {
            b.flow(t, stage, FlowModels::default())
                .map_err(|e| PlacementExperimentError::Config(e.to_string()))?;
        }
    }
    b.build()
        .map_err(|e| PlacementExperimentError::Config(e.to_string()))
}

/// What the replay of the placed workloads found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplayOutcome {
    /// the worst windowed SLO percentile / SLO over the placed workloads [1]
    pub worst_ratio: f64,
    /// the placed workloads that missed their SLO
    pub violators: Vec<Violator>,
}

/// Replays every placed workload's second half, server by server; a server with a violator
/// is replayed once more without rate limits (the violator's `unshaped_worst_s`).
pub fn replay(
    placer: &Placer,
    sampled: &[Sampled],
    cfg: &PlacementExperimentConfig,
) -> Result<ReplayOutcome, PlacementExperimentError> {
    let assignments = placer.assignments();
    let by_name: BTreeMap<&str, &Sampled> = sampled
        .iter()
        .map(|s| (s.workload.name.as_str(), s))
        .collect();
    let mut servers: BTreeMap<usize, Vec<(&Assignment, &Sampled)>> = BTreeMap::new();
    for a in &assignments {
        let s = by_name.get(a.name.as_str()).ok_or_else(|| {
            PlacementExperimentError::Config(format!("placed workload {} was not sampled", a.name))
        })?;
        servers.entry(a.server).or_default().push((a, s));
    }
    let servers: Vec<(usize, Vec<(&Assignment, &Sampled)>)> = servers.into_iter().collect();
    let results = par_map(&servers, cfg.threads, |(k, members)| {
        replay_server(*k, members, cfg)
    });
    let mut out = ReplayOutcome::default();
    for r in results {
        let r = r?;
        out.worst_ratio = out.worst_ratio.max(r.worst_ratio);
        out.violators.extend(r.violators);
    }
    Ok(out)
}

/// Simulates one server's workloads replaying their second halves, shaped by their limits
/// with `shaping` as the excess policy, or (`None`) without limits. Returns the server's
/// network and the result (tenants in member order).
fn simulate_server(
    k: usize,
    members: &[(&Assignment, &Sampled)],
    cfg: &PlacementExperimentConfig,
    shaping: Option<Excess>,
) -> Result<(Network, SimResult), PlacementExperimentError> {
    let net = server_network(k, members, &cfg.server, cfg.percentile)?;
    let (request_cost, response_cost) = (
        NetworkCost::REQUEST_DIRECTION,
        NetworkCost::RESPONSE_DIRECTION,
    );
    let workloads: Vec<TenantWorkload<'_>> = members
        .iter()
        .map(|(_, s)| TenantWorkload {
            requests: &s.replay,
            works: vec![&request_cost, &cfg.profile, &response_cost],
        })
        .collect();
    let mut shapers = Vec::with_capacity(net.flows.len());
    for (a, _) in members {
        for stage in [LpStage::NetIn, LpStage::Storage, LpStage::NetOut] {
            let l = a.limits[stage.index()];
            shapers.push(if shaping.is_some() && l.rate > 0.0 {
                vec![l]
            } else {
                Vec::new()
            });
        }
    }
    let sim = simulate(
        &net,
        &workloads,
        &SimConfig {
            transmission: cfg.transmission,
            priorities: None,
            shapers,
            window_s: SLO_WINDOW_S,
            excess: shaping.unwrap_or(cfg.excess),
            ..SimConfig::default()
        },
    )?;
    Ok((net, sim))
}

/// Replays one server's workloads with their limits (and, if one misses its SLO, without).
fn replay_server(
    k: usize,
    members: &[(&Assignment, &Sampled)],
    cfg: &PlacementExperimentConfig,
) -> Result<ReplayOutcome, PlacementExperimentError> {
    let (net, sim) = simulate_server(k, members, cfg, Some(cfg.excess))?;
    let mut out = ReplayOutcome::default();
    let mut missed = Vec::new();
    for (t, r) in sim.tenants.iter().enumerate() {
        let slo = net.tenants[t].slo.latency_s;
        out.worst_ratio = out.worst_ratio.max(r.worst_window_s() / slo);
        if !r.meets_slo {
            missed.push(t);
        }
    }
    if missed.is_empty() {
        return Ok(out);
    }
    for (t, ((a, s), r)) in members.iter().zip(&sim.tenants).enumerate() {
        tracing::info!(
            server = k,
            workload = %a.name,
            trace = %s.trace,
            slo_s = net.tenants[t].slo.latency_s,
            priority = a.priority,
            limits = ?a.limits.map(|l| (l.rate, l.burst)),
            worst_s = r.worst_window_s(),
            p999_s = r.p999_s,
            "member of a server with a violation"
        );
    }
    let (_, free) = simulate_server(k, members, cfg, None)?;
    out.violators = missed
        .into_iter()
        .map(|t| Violator {
            name: format!("{} ({}, server {k})", members[t].0.name, members[t].1.trace),
            worst_s: sim.tenants[t].worst_window_s(),
            slo_s: net.tenants[t].slo.latency_s,
            unshaped_worst_s: free.tenants[t].worst_window_s(),
            alone_limited_worst_s: None,
        })
        .collect();
    Ok(out)
}

/// Runs the whole experiment on already-read `traces`. `progress(stage, done)` reports
/// "sample" once per workload and "policy" once per policy placed (and replayed).
pub fn run(
    traces: &[Trace],
    cfg: &PlacementExperimentConfig,
    progress: impl Fn(&str) + Sync,
) -> Result<PlacementExperiment, PlacementExperimentError> {
    if cfg.workloads == 0 {
        return Err(PlacementExperimentError::Config(
            "no workloads to place; give --workloads >= 1".into(),
        ));
    }
    let (sampled, redrawn) = sample_workloads(traces, cfg, || progress("sample"))?;
    let mut policies = BTreeMap::new();
    for &policy in &cfg.policies {
        let (placer, mut result) = place(&sampled, cfg, policy)?;
        if cfg.replay {
            let r = replay(&placer, &sampled, cfg)?;
            result.violations = Some(r.violators.len());
            result.worst_latency_ratio = Some(r.worst_ratio);
            result.violators = r.violators;
        }
        tracing::info!(policy = %policy, servers = result.servers, seconds = result.seconds, "placed");
        policies.insert(policy.to_string(), result);
        progress("policy");
    }
    let summary = summarize(&policies);
    Ok(PlacementExperiment {
        setting: Setting {
            workloads: cfg.workloads,
            seed: cfg.seed,
            slos_s: cfg.slos_s.clone(),
            percentile: cfg.percentile,
            events: cfg.events,
            safety_margin: cfg.safety_margin,
            server: cfg.server,
            max_segments: cfg.max_segments,
            traces: traces.len(),
            redrawn,
        },
        policies,
        summary,
    })
}

/// Ratios between the policies' results.
pub fn summarize(policies: &BTreeMap<String, PolicyResult>) -> Summary {
    let compactor = policies
        .get("compactor")
        .or_else(|| policies.get("compactor-fff"));
    let best = policies
        .iter()
        .filter(|(name, _)| !name.starts_with("compactor"))
        .min_by_key(|(_, r)| r.servers);
    let ratio = match (compactor, best) {
        (Some(c), Some((_, b))) if c.servers > 0 => Some(b.servers as f64 / c.servers as f64),
        _ => None,
    };
    let (ff, fff) = (policies.get("compactor"), policies.get("compactor-fff"));
    Summary {
        ratio,
        best_baseline: best.map(|(n, _)| n.clone()),
        fff_servers_ratio: match (ff, fff) {
            (Some(a), Some(b)) if a.servers > 0 => Some(b.servers as f64 / a.servers as f64),
            _ => None,
        },
        fff_speedup: match (ff, fff) {
            (Some(a), Some(b)) if b.seconds > 0.0 => Some(a.seconds / b.seconds),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::Op;

    fn req(ns: u64) -> Request {
        Request {
            arrival_ns: ns,
            size_bytes: 4096,
            op: Op::DiskRead,
        }
    }

    #[test]
    fn isolation_replays_the_held_out_half_through_its_own_limits() {
        let cfg = PlacementExperimentConfig {
            workloads: 1,
            slos_s: vec![0.1],
            threads: 1,
            ..PlacementExperimentConfig::default()
        };
        // characterized half: a 4 KiB read every 10 ms for 60 s
        let first: Vec<Request> = (0..6000).map(|i| req(i * 10_000_000)).collect();
        let sampled = |replay: Vec<Request>| Sampled {
            workload: Workload {
                name: "w".into(),
                slo: Slo::new(0.1, 99.9).unwrap(),
                curves: characterize("w", &first, &cfg.profile, None).unwrap(),
            },
            trace: "t".into(),
            offset_s: 0.0,
            replay,
        };
        let steady = sampled(first.clone());
        assert!(meets_slo_in_isolation(&steady, &cfg).unwrap());
        // held-out half: the same plus 300 reads at once at 30 s, a burst the first half
        // never showed
        let mut burst = first.clone();
        burst.extend((0..300).map(|_| req(30_000_000_000)));
        burst.sort_by_key(|r| r.arrival_ns);
        let burst = sampled(burst);
        // alone on a server without limits it drains well within the SLO ...
        let alone = alone_assignment(burst.workload.clone(), &cfg)
            .unwrap()
            .unwrap();
        let (_, free) = simulate_server(0, &[(&alone, &burst)], &cfg, None).unwrap();
        let free_worst = free.tenants[0].worst_window_s();
        assert!(free_worst < 0.05, "{free_worst}");
        // ... but the limits drawn from its first half hold it past its SLO: not kept
        let (_, held) = simulate_server(0, &[(&alone, &burst)], &cfg, Some(Excess::Wait)).unwrap();
        assert!(held.tenants[0].worst_window_s() > 0.1);
        assert!(!meets_slo_in_isolation(&burst, &cfg).unwrap());
    }

    #[test]
    fn departures_only_remove_live_workloads_once() {
        let ev = event_sequence(200, Events::ArrivalsDepartures, 3);
        let mut live = std::collections::HashSet::new();
        let mut departures = 0;
        for (arrive, i) in ev {
            if arrive {
                assert!(live.insert(i));
            } else {
                assert!(live.remove(&i), "workload {i} departs while not live");
                departures += 1;
            }
        }
        assert!(departures > 50 && departures < 130, "{departures}");
        assert!(event_sequence(50, Events::Arrivals, 3).iter().all(|e| e.0));
    }
}
