//! snc-meister Fig. 1/10/11 (§5.4, §6.1–6.2): tenants drawn from production traces arrive in
//! a random order with random p99.9 SLOs; every policy decides whom to admit from the first
//! half of each trace; the admitted tenants' second halves are replayed together in the
//! simulator with the policy's priorities and rate limits; OPT (the most tenants, in arrival
//! order, that all meet their SLOs in replay) is searched on some runs.
//!
//! Topology (snc-meister Fig. 2): `clients` client hosts and `servers` server hosts, every
//! link `link` [bytes/s] each way. A tenant sits on a random client and talks to a random
//! server: a request flow (client-out → server-in, [`Stage::NetIn`] work) and a response flow
//! (server-out → client-in, [`Stage::NetOut`] work). A trace is used by several tenants when
//! there are more tenants than traces; each tenant's replayed half is rotated by its own
//! random offset, so copies do not burst in lockstep. Every trace may be sped up
//! ([`AdmissionConfig::speed_up`]). With [`AdmissionConfig::isolated`] a
//! drawn tenant whose replayed half misses its SLO alone is redrawn.
//!
//! Verify: every admitted tenant's final bound (with everyone its policy admitted) is reported
//! beside its replayed worst window ([`Checked`]), and the summary gives their median ratio.
//! A bound rests on the characterized half, so a replay above it may be the trace's doing
//! (its replayed half busier than the characterized one) or a failure of the bound or of the
//! simulator. To tell them apart, the admitted tenants are bounded again under the same
//! decisions on models of the halves they replayed ([`Checked::replayed_bound_s`]): a
//! worst-case (DNC) bound there must lie above the replay.
//!
//! The models' ceiling ([`AdmissionConfig::models_replayed`]): every tenant's traffic is also
//! sampled from its fitted models ([`model_traffic`]) and replayed, under every policy's
//! decisions ([`Checked::model_worst_s`]: how far a bound is from what its own model does) and
//! by trial and error on the OPT runs ([`RunResult::opt_greedy_models`]: the most tenants an
//! exact analysis of these models could admit, the ceiling of every sound calculus on them).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::par_map;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tailbound_admission::{Admission, Policy};
use tailbound_calculus::Bound;
use tailbound_curves::mmpp::SizeKind;
use tailbound_curves::{flow_works, stage_work, NetworkCost, StorageProfile};
use tailbound_model::{
    Excess, FlowModels, Network, NetworkBuilder, NewTenant, Op, Percentile, Request, Slo, Stage,
    ETHERNET_MTU_BYTES, SLO_WINDOW_S,
};
use tailbound_sim::{opt, opt_greedy, Plan, Replay, Transmission};
use tailbound_trace::Part;

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmissionConfig {
    /// trace files (each a tenant's traffic)
    pub traces: Vec<PathBuf>,
    pub runs: usize,
    /// tenants per run
    pub tenants: usize,
    pub seed: u64,
    /// SLO latencies to draw from [s]
    pub slos_s: Vec<f64>,
    /// SLO percentile, e.g. 99.9
    pub percentile: f64,
    /// every link's rate [bytes/s]
    pub link_bytes_per_s: f64,
    pub clients: usize,
    pub servers: usize,
    pub policies: Vec<Policy>,
    /// OPT is searched on the first `opt_runs` runs
    pub opt_runs: usize,
    /// MMPP counting interval [s]
    pub fit_interval_s: f64,
    /// requests closer than this form one MMPP arrival event [s]; 0: none
    #[serde(default)]
    pub batch_gap_s: f64,
    /// MMPP state sizes
    #[serde(default)]
    pub sizes: SizeKind,
    /// what rate limits do with requests beyond them
    #[serde(default)]
    pub excess: Excess,
    /// SLO-check window [s]
    pub window_s: f64,
    /// keep only tenants whose replayed half meets their SLO alone (unshaped, on otherwise
    /// idle links); a tenant that does not is redrawn (trace, hosts, SLO, rotation). Without
    /// it, tenants that no policy could serve cap the paper's OPT (the first n all meeting
    /// their SLOs) at the first of them.
    #[serde(default)]
    pub isolated: bool,
    /// worker threads (runs in parallel)
    pub threads: usize,
    /// time compression of every trace: arrival times are divided by it before
    /// characterization and replay, which multiplies each tenant's mean rate while keeping its
    /// batches' sizes (1: the traces as recorded)
    #[serde(default = "one")]
    pub speed_up: f64,
    /// also replay traffic sampled from every tenant's fitted models, [`MODEL_SPAN`] times as
    /// long as its replayed half: each policy's admitted tenants on it, and trial and error on
    /// it on the OPT runs (see the module docs)
    #[serde(default)]
    pub models_replayed: bool,
}

fn one() -> f64 {
    1.0
}

impl AdmissionConfig {
    /// The paper's setup on `traces`: 12 clients, 6 servers, SLOs {10, 20, 50, 100} ms at
    /// p99.9, every policy, OPT on 3 runs; the traces sped up [`DEFAULT_SPEED_UP`] times and
    /// tenants kept when they meet their SLO alone.
    pub fn paper(traces: Vec<PathBuf>) -> AdmissionConfig {
        AdmissionConfig {
            traces,
            runs: 20,
            tenants: 180,
            seed: 1,
            slos_s: vec![0.010, 0.020, 0.050, 0.100],
            percentile: 99.9,
            link_bytes_per_s: DEFAULT_LINK,
            clients: 12,
            servers: 6,
            policies: Policy::ALL.to_vec(),
            opt_runs: 3,
            fit_interval_s: 1.0,
            batch_gap_s: DEFAULT_BATCH_GAP,
            sizes: SizeKind::Empirical,
            excess: Excess::BestEffort,
            window_s: SLO_WINDOW_S,
            isolated: true,
            threads: 2,
            speed_up: DEFAULT_SPEED_UP,
            models_replayed: false,
        }
    }
}

/// Default link rate: 1 Gbit/s, the paper's [bytes/s] (see the README for why).
pub const DEFAULT_LINK: f64 = 125e6;

/// Default time compression of the traces: the production traces load a 1 Gbit/s link
/// lightly, so that the replay sees almost no contention between tenants as recorded; five
/// times their rates, with their batch sizes kept, it does (see the README's regime section).
pub const DEFAULT_SPEED_UP: f64 = 5.0;

/// How many times as long as a tenant's replayed half its traffic sampled from its models is
/// (more samples of the models' tails than one half gives: a window's p99.9 of a few thousand
/// requests is its 1st to 3rd largest).
pub const MODEL_SPAN: f64 = 3.0;

/// Default MMPP batch gap [s]: the production traces arrive in batches of up to hundreds of
/// requests within microseconds, which a Poisson-within-state MMPP of single requests cannot
/// represent (see `curves::mmpp`, "Batches").
pub const DEFAULT_BATCH_GAP: f64 = 1e-3;

/// One policy in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyRun {
    pub admitted: usize,
    /// bytes the admitted tenants transfer in the replayed half [bytes]
    pub bytes: u64,
    /// admitted tenants whose replayed windowed p99.9 exceeds their SLO
    pub violations: usize,
    /// time to decide all arrivals [s]
    pub seconds: f64,
    /// mean time per admission decision [s]
    pub seconds_per_decision: f64,
    /// the admitted tenants that missed their SLO in replay: name, worst windowed SLO
    /// percentile [s], SLO [s], and the same percentile when replayed without rate limits [s]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violators: Vec<Violator>,
    /// every admitted tenant: the policy's bound and what the replay measured
    #[serde(default)]
    pub tenants: Vec<Checked>,
}

/// An admitted tenant's bound beside its replay (the verify step: how tight the policy's
/// bounds are on the held-out half).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    pub name: String,
    pub slo_s: f64,
    /// its bound with all the tenants the policy admitted, its shaper delay and what packets
    /// add to the calculus' fluid bound ([`packetization_allowance_s`]) included [s]
    pub bound_s: f64,
    /// its worst window's SLO percentile in replay [s]
    pub worst_s: f64,
    /// its bound under the same decisions when every admitted tenant is characterized on the
    /// half it replayed (as rotated) instead of its first half [s];
    /// `None`: unbounded there (a rate limit below its replayed traffic's mean, or an
    /// overloaded queue)
    #[serde(default)]
    pub replayed_bound_s: Option<f64>,
    /// its worst window when the traffic sampled from every tenant's models is replayed under
    /// the same decisions [s] (with [`AdmissionConfig::models_replayed`])
    #[serde(default)]
    pub model_worst_s: Option<f64>,
}

/// An admitted tenant that missed its SLO in replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violator {
    pub name: String,
    /// its worst window's SLO percentile [s]
    pub worst_s: f64,
    pub slo_s: f64,
    /// the same replay without any rate limits: its worst window [s] (shows whether its own
    /// shaper or the others' traffic made it miss)
    pub unshaped_worst_s: f64,
    /// the tenant alone, behind its own rate limits as strict limiters: its worst window [s].
    /// Above the bound, its replayed half needs more than the characterized half it was
    /// admitted on: no co-tenant and no bound made it miss
    /// (not computed by the placement experiment)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alone_limited_worst_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub seed: u64,
    /// draws the isolation test replaced (0 unless [`AdmissionConfig::isolated`])
    #[serde(default)]
    pub redrawn: usize,
    pub policies: BTreeMap<String, PolicyRun>,
    /// OPT for this run's arrival order, when searched: the largest n whose first n tenants
    /// all meet their SLOs in replay (snc-meister §6.2)
    pub opt: Option<usize>,
    /// the empirical optimum by trial and error, when searched: tenants in arrival order, each
    /// kept if the replay with it still meets every kept tenant's SLO
    #[serde(default)]
    pub opt_greedy: Option<usize>,
    /// trial and error as [`RunResult::opt_greedy`] on the traffic sampled from the tenants'
    /// models (with [`AdmissionConfig::models_replayed`], on the OPT runs): what an exact
    /// analysis of the models could admit
    #[serde(default)]
    pub opt_greedy_models: Option<usize>,
}

/// Means over runs of one policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySummary {
    pub admitted: f64,
    pub bytes: f64,
    pub violations: f64,
    pub seconds: f64,
    pub seconds_per_decision: f64,
    /// mean admitted / OPT over the runs where OPT was searched
    pub of_opt: Option<f64>,
    /// the median of the same ratios (snc-meister §6.2 reports the median: one run whose OPT
    /// stops at an early collision weighs on the mean)
    #[serde(default)]
    pub of_opt_median: Option<f64>,
    /// mean admitted / the trial-and-error optimum over the runs where it was searched
    #[serde(default)]
    pub of_opt_greedy: Option<f64>,
    /// median over all admitted tenants of all runs of bound / replayed worst window
    #[serde(default)]
    pub bound_over_replay: Option<f64>,
    /// median over all admitted tenants of all runs of bound / worst window on the traffic
    /// sampled from the models ([`Checked::model_worst_s`])
    #[serde(default)]
    pub bound_over_model: Option<f64>,
    /// mean admitted / trial and error on the models ([`RunResult::opt_greedy_models`])
    #[serde(default)]
    pub of_opt_greedy_models: Option<f64>,
    /// mean per run of the admitted tenants whose replayed worst window exceeds their bound
    /// (a bound rests on the characterized first half; the replay is the second)
    #[serde(default)]
    pub above_bound: f64,
    /// the same against the bound on the replayed traffic ([`Checked::replayed_bound_s`]):
    /// none for a worst-case (DNC) policy unless a bound or the simulator is wrong
    #[serde(default)]
    pub above_replayed_bound: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// mean snc-meister admitted / mean admitted of the best DNC policy
    pub ratio: Option<f64>,
    /// the same for bytes
    pub bytes_ratio: Option<f64>,
    pub policies: BTreeMap<String, PolicySummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmissionResult {
    pub config: AdmissionConfig,
    pub runs: Vec<RunResult>,
    pub summary: Summary,
}

#[derive(Debug, thiserror::Error)]
pub enum AdmissionExperimentError {
    #[error("{0}")]
    Config(String),
    #[error("trace {path}: {message}")]
    Trace { path: PathBuf, message: String },
    #[error(transparent)]
    Admission(#[from] tailbound_admission::AdmissionError),
    #[error(transparent)]
    Replay(#[from] tailbound_sim::ReplayError),
}

/// A trace characterized once: its first half's models per stage, its second half.
pub(crate) struct Characterized {
    name: String,
    models: Models,
    replay: Vec<Request>,
}

/// The (request, response) flows' MMPP and arrival curve.
type Models = [FlowModels; 2];

const STAGES: [Stage; 2] = [Stage::NetIn, Stage::NetOut];

/// The models of a tenant sending `requests`, at each of [`STAGES`].
fn models(requests: &[Request], cfg: &AdmissionConfig) -> Result<Models, String> {
    let profile = StorageProfile::intel710_ssd();
    let model = |stage| {
        tailbound_scenario::characterize(
            requests,
            stage_work(stage, &profile),
            cfg.sizes,
            cfg.fit_interval_s,
            cfg.batch_gap_s,
        )
        .map_err(|m| format!("{stage}: {m}"))
    };
    Ok([model(STAGES[0])?, model(STAGES[1])?])
}

pub(crate) fn characterize(
    path: &Path,
    cfg: &AdmissionConfig,
) -> Result<Characterized, AdmissionExperimentError> {
    let err = |message: String| AdmissionExperimentError::Trace {
        path: path.to_path_buf(),
        message,
    };
    let mut trace = tailbound_trace::read_trace(path).map_err(|e| err(e.to_string()))?;
    if cfg.speed_up != 1.0 {
        for r in &mut trace.requests {
            r.arrival_ns = (r.arrival_ns as f64 / cfg.speed_up).round() as u64;
        }
    }
    let first = Part::FirstHalf.of(&trace).map_err(|e| err(e.to_string()))?;
    let second = Part::FirstHalf
        .held_out()
        .of(&trace)
        .map_err(|e| err(e.to_string()))?;
    Ok(Characterized {
        name: path.file_stem().map_or_else(
            || path.display().to_string(),
            |s| s.to_string_lossy().into_owned(),
        ),
        models: models(&first.requests, cfg).map_err(err)?,
        replay: second.requests,
    })
}

/// One drawn tenant: its trace, hosts, SLO and the rotation of its replayed half.
struct Draw {
    trace: usize,
    client: usize,
    server: usize,
    slo_s: f64,
    offset_ns: u64,
}

impl Draw {
    fn new(trace: usize, cfg: &AdmissionConfig, rng: &mut ChaCha8Rng) -> Draw {
        Draw {
            trace,
            client: rng.gen_range(0..cfg.clients),
            server: cfg.clients + rng.gen_range(0..cfg.servers),
            slo_s: cfg.slos_s[rng.gen_range(0..cfg.slos_s.len())],
            offset_ns: rng.gen::<u64>(),
        }
    }
}

/// Fig. 2's hosts (`client<i>`, then `server<i>`), every link `cfg.link_bytes_per_s` each way,
/// and no tenants yet.
fn empty_run(cfg: &AdmissionConfig) -> NetworkBuilder {
    let mut b = NetworkBuilder::new();
    for i in 0..cfg.clients {
        b.host(format!("client{i}"), cfg.link_bytes_per_s, None);
    }
    for i in 0..cfg.servers {
        b.host(format!("server{i}"), cfg.link_bytes_per_s, None);
    }
    b
}

/// Adds tenant `name` as `d` draws it: a request flow (client-out → server-in) and a response
/// flow (server-out → client-in) with the trace's models.
fn push_tenant(
    b: &mut NetworkBuilder,
    name: String,
    d: &Draw,
    tr: &Characterized,
    percentile: Percentile,
) -> Result<(), AdmissionExperimentError> {
    let slo = Slo {
        latency_s: d.slo_s,
        percentile,
    };
    let t = b.tenant(NewTenant::new(name, slo).between(d.client, d.server));
    for (stage, models) in STAGES.into_iter().zip(&tr.models) {
        b.flow(t, stage, models.clone())
            .map_err(|e| AdmissionExperimentError::Config(e.to_string()))?;
    }
    Ok(())
}

/// Every flow's work function: the network estimators of its direction.
pub(crate) fn works(net: &Network) -> Vec<&'static dyn tailbound_curves::WorkFunction> {
    static PROFILE: std::sync::OnceLock<StorageProfile> = std::sync::OnceLock::new();
    flow_works(net, PROFILE.get_or_init(StorageProfile::intel710_ssd))
}

/// One run's tenants: the network, every tenant's replayed requests and trace index, and how
/// many draws the isolation test redrew.
pub(crate) struct Run {
    pub(crate) network: Network,
    pub(crate) requests: Vec<Vec<Request>>,
    pub(crate) traces: Vec<usize>,
    pub(crate) redrawn: usize,
}

/// Draws one run's tenants ([`Run`]; [`AdmissionConfig::isolated`] redraws).
pub(crate) fn build_run(
    cfg: &AdmissionConfig,
    traces: &[Characterized],
    seed: u64,
) -> Result<Run, AdmissionExperimentError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let empty = empty_run(cfg);
    // every trace once in random order, then random reuse
    let mut order: Vec<usize> = (0..traces.len()).collect();
    order.shuffle(&mut rng);
    while order.len() < cfg.tenants {
        order.push(rng.gen_range(0..traces.len()));
    }
    order.truncate(cfg.tenants);
    let percentile = Percentile::new(cfg.percentile)
        .map_err(|e| AdmissionExperimentError::Config(e.to_string()))?;
    let mut builder = empty.clone();
    let mut requests = Vec::new();
    let mut trace_of = Vec::new();
    let mut redrawn = 0;
    for (i, &first) in order.iter().enumerate() {
        let mut d = Draw::new(first, cfg, &mut rng);
        loop {
            let tr = &traces[d.trace];
            let name = format!("t{i}-{}", tr.name);
            let replay = tailbound_trace::rotate(&tr.replay, d.offset_ns);
            let keep = !cfg.isolated || {
                let mut alone = empty.clone();
                push_tenant(&mut alone, name.clone(), &d, tr, percentile)?;
                let alone = alone
                    .build()
                    .map_err(|e| AdmissionExperimentError::Config(e.to_string()))?;
                let r = Replay::new(&alone, vec![replay.clone()], works(&alone))?.run(
                    &Plan::first(&alone, 1),
                    Transmission::default(),
                    cfg.window_s,
                )?;
                r.tenants[0].meets_slo
            };
            if keep {
                push_tenant(&mut builder, name, &d, tr, percentile)?;
                requests.push(replay);
                trace_of.push(d.trace);
                break;
            }
            redrawn += 1;
            if redrawn > MAX_REDRAWS_PER_TENANT * cfg.tenants {
                return Err(AdmissionExperimentError::Config(format!(
                    "{redrawn} draws missed their SLO alone; few of these traces can meet SLOs \
                     {:?} s on {} bytes/s links (try longer SLOs or faster links, a smaller --speed-up, or \
                     --isolated false)",
                    cfg.slos_s, cfg.link_bytes_per_s
                )));
            }
            d = Draw::new(rng.gen_range(0..traces.len()), cfg, &mut rng);
        }
    }
    Ok(Run {
        network: builder
            .build()
            .map_err(|e| AdmissionExperimentError::Config(e.to_string()))?,
        requests,
        traces: trace_of,
        redrawn,
    })
}

/// The isolation test gives up after this many redraws per tenant on average.
const MAX_REDRAWS_PER_TENANT: usize = 100;

/// What the progress callback hears.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Progress {
    /// traces characterized so far
    Characterized(usize),
    /// a policy of a run is decided and replayed
    PolicyDone { run: usize, policy: Policy },
    /// a run's OPT search finished
    OptDone { run: usize },
    /// a run's trial and error on its models' traffic finished
    ModelOptDone { run: usize },
}

/// Runs the experiment; `progress` may be called from worker threads.
pub fn run(
    cfg: &AdmissionConfig,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<AdmissionResult, AdmissionExperimentError> {
    check(cfg)?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    let traces: Vec<Characterized> = par_map(&cfg.traces, cfg.threads, |p| {
        let c = characterize(p, cfg);
        progress(Progress::Characterized(
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        ));
        c
    })
    .into_iter()
    .collect::<Result<_, _>>()?;
    let run_ids: Vec<usize> = (0..cfg.runs).collect();
    let runs = par_map(&run_ids, cfg.threads, |&r| {
        one_run(cfg, &traces, r, progress)
    })
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    let summary = summarize(&runs);
    Ok(AdmissionResult {
        config: cfg.clone(),
        runs,
        summary,
    })
}

/// The seed of run `run`'s draws.
pub(crate) fn run_seed(cfg: &AdmissionConfig, run: usize) -> u64 {
    cfg.seed
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(run as u64)
}

/// Checks a configuration before any trace is read.
pub(crate) fn check(cfg: &AdmissionConfig) -> Result<(), AdmissionExperimentError> {
    if cfg.traces.is_empty() {
        return Err(AdmissionExperimentError::Config(
            "no traces given; point --traces at a folder of trace files".into(),
        ));
    }
    if cfg.slos_s.iter().any(|s| !(s.is_finite() && *s > 0.0)) || cfg.slos_s.is_empty() {
        return Err(AdmissionExperimentError::Config(format!(
            "SLOs {:?} are not allowed; expected durations > 0, e.g. 10ms,20ms",
            cfg.slos_s
        )));
    }
    if cfg.clients == 0 || cfg.servers == 0 || cfg.tenants == 0 || cfg.runs == 0 {
        return Err(AdmissionExperimentError::Config(
            "runs, tenants, clients and servers must all be at least 1".into(),
        ));
    }
    if !(cfg.link_bytes_per_s.is_finite() && cfg.link_bytes_per_s > 0.0) {
        return Err(AdmissionExperimentError::Config(format!(
            "link rate {} is not allowed; expected a rate > 0, e.g. 100Mbit",
            cfg.link_bytes_per_s
        )));
    }
    if !(cfg.speed_up.is_finite() && cfg.speed_up > 0.0) {
        return Err(AdmissionExperimentError::Config(format!(
            "speed-up {} is not allowed; expected a factor > 0, e.g. 4 (1: the traces as recorded)",
            cfg.speed_up
        )));
    }
    Ok(())
}

/// A run's network with tenants characterized on the halves they replay instead of their
/// first halves, recharacterized as they are asked for.
struct ReplayedTraffic<'a> {
    net: Network,
    done: Vec<bool>,
    replay: &'a Replay<'a>,
    /// each tenant's trace file
    paths: Vec<&'a Path>,
    cfg: &'a AdmissionConfig,
}

impl<'a> ReplayedTraffic<'a> {
    fn new(
        replay: &'a Replay<'a>,
        paths: Vec<&'a Path>,
        cfg: &'a AdmissionConfig,
    ) -> ReplayedTraffic<'a> {
        let net = replay.network().clone();
        ReplayedTraffic {
            done: vec![false; net.tenants.len()],
            net,
            replay,
            paths,
            cfg,
        }
    }

    /// The network with at least `tenants` characterized on their replayed halves.
    fn covering(&mut self, tenants: &[usize]) -> Result<&Network, AdmissionExperimentError> {
        for &t in tenants {
            if std::mem::replace(&mut self.done[t], true) {
                continue;
            }
            let ms = models(self.replay.requests(t), self.cfg).map_err(|message| {
                AdmissionExperimentError::Trace {
                    path: self.paths[t].to_path_buf(),
                    message: format!("the replayed half of tenant {t}: {message}"),
                }
            })?;
            for (&f, m) in self.replay.network().tenants[t].flows.iter().zip(ms) {
                self.net.flows[f].mmpp = m.mmpp.map(Arc::new);
                self.net.flows[f].arrival = m.arrival;
            }
        }
        Ok(&self.net)
    }
}

/// Requests sampled from tenant `tenant`'s fitted flow models over `duration_s`: each event of
/// its request flow's MMPP a write, each of its response flow's a read, one request per event
/// (a batch as one request), sized so that the event's work crosses its direction
/// ([`NetworkCost`]). The flows are sampled independently, as the calculus models them; each
/// request also puts a header on the other direction, a little more than the models say.
/// Deterministic for a seed.
pub fn model_traffic(
    net: &Network,
    tenant: usize,
    duration_s: f64,
    seed: u64,
) -> Result<Vec<Request>, AdmissionExperimentError> {
    let t = &net.tenants[tenant];
    let mut out = Vec::new();
    for (k, &f) in t.flows.iter().enumerate() {
        let flow = &net.flows[f];
        let fail = |why: String| {
            AdmissionExperimentError::Config(format!(
                "tenant {:?}, flow {:?}: cannot sample traffic from its model: {why}",
                t.name, flow.name
            ))
        };
        let Some(m) = &flow.mmpp else {
            return Err(fail("it has no MMPP".into()));
        };
        let (op, cost, per_byte) = match flow.stage {
            Stage::NetIn => (
                Op::DiskWrite,
                NetworkCost::REQUEST_DIRECTION,
                NetworkCost::REQUEST_DIRECTION.write_per_byte,
            ),
            Stage::NetOut => (
                Op::DiskRead,
                NetworkCost::RESPONSE_DIRECTION,
                NetworkCost::RESPONSE_DIRECTION.read_per_byte,
            ),
            other => return Err(fail(format!("stage {other} is not a network direction"))),
        };
        let events = tailbound_trace::gen::fitted_events(m, duration_s, seed ^ ((k as u64) << 56))
            .map_err(|e| fail(e.to_string()))?;
        out.extend(events.into_iter().map(|(ns, work)| Request {
            arrival_ns: ns,
            size_bytes: ((work - cost.header_bytes) / per_byte).round().max(1.0) as u64,
            op,
        }));
    }
    out.sort_by_key(|r| r.arrival_ns);
    Ok(out)
}

/// Every tenant's traffic sampled from its models, [`MODEL_SPAN`] times as long as its
/// replayed half.
fn models_replay<'a>(
    network: &'a Network,
    requests: &[Vec<Request>],
    seed: u64,
) -> Result<Replay<'a>, AdmissionExperimentError> {
    let traffic = requests
        .iter()
        .enumerate()
        .map(|(t, half)| {
            let span_s = half.last().map_or(0.0, |r| r.arrival_s()).max(1.0);
            model_traffic(network, t, MODEL_SPAN * span_s, seed.wrapping_add(t as u64))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Replay::new(network, traffic, works(network))?)
}

fn one_run(
    cfg: &AdmissionConfig,
    traces: &[Characterized],
    run: usize,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<RunResult, AdmissionExperimentError> {
    let seed = run_seed(cfg, run);
    let Run {
        network,
        requests,
        traces: trace_of,
        redrawn,
    } = build_run(cfg, traces, seed)?;
    let models = if cfg.models_replayed {
        Some(models_replay(&network, &requests, seed)?)
    } else {
        None
    };
    let replay = Replay::new(&network, requests, works(&network))?;
    let paths = trace_of.iter().map(|&i| cfg.traces[i].as_path()).collect();
    let mut replayed = ReplayedTraffic::new(&replay, paths, cfg);
    let service = Transmission::Chunked {
        mtu_bytes: ETHERNET_MTU_BYTES,
    };
    let mut policies = BTreeMap::new();
    for &policy in &cfg.policies {
        let mut engine = Admission::new(&network, policy)?
            .with_excess(cfg.excess)
            .with_mtu(Some(ETHERNET_MTU_BYTES));
        let start = Instant::now();
        for t in 0..network.tenants.len() {
            engine.arrive(t)?;
        }
        let seconds = start.elapsed().as_secs_f64();
        // admissions keep every admitted tenant's bound within its SLO, so all are finite
        let bounds: BTreeMap<usize, f64> = engine
            .bounds()?
            .into_iter()
            .map(|b| match b.total {
                Bound::Within(s) => Ok((b.tenant, s)),
                Bound::Unbounded(why) => Err(AdmissionExperimentError::Config(format!(
                    "{policy} admitted tenant {:?}, which is now unbounded ({why}): a bug in the engine",
                    b.name
                ))),
            })
            .collect::<Result<_, _>>()?;
        let decisions = engine.decisions();
        let plan = Plan::from_decisions(&network, &decisions)?;
        let result = replay.run(&plan, service, cfg.window_s)?;
        let on_models = match &models {
            Some(m) => Some(m.run(&plan, service, cfg.window_s)?),
            None => None,
        };
        let replayed_bounds: BTreeMap<usize, Option<f64>> = engine
            .bounds_on(replayed.covering(&engine.admitted())?)?
            .into_iter()
            .map(|b| (b.tenant, b.total.seconds()))
            .collect();
        let tenants: Vec<Checked> = result
            .tenants
            .iter()
            .zip(&plan.tenants)
            .enumerate()
            .map(|(k, (t, ti))| Checked {
                name: t.name.clone(),
                slo_s: network.tenants[*ti].slo.latency_s,
                bound_s: bounds[ti],
                worst_s: t.worst_window_s(),
                replayed_bound_s: replayed_bounds[ti],
                model_worst_s: on_models.as_ref().map(|r| r.tenants[k].worst_window_s()),
            })
            .collect();
        // a tenant misses its SLO when its worst window does
        let (violator_ids, mut violators): (Vec<usize>, Vec<Violator>) = tenants
            .iter()
            .zip(&plan.tenants)
            .filter(|(t, _)| t.worst_s > t.slo_s)
            .map(|(t, &ti)| {
                (
                    ti,
                    Violator {
                        name: t.name.clone(),
                        worst_s: t.worst_s,
                        slo_s: t.slo_s,
                        unshaped_worst_s: f64::NAN,
                        alone_limited_worst_s: None,
                    },
                )
            })
            .unzip();
        if !violators.is_empty() {
            let unshaped = Plan {
                shapers: Default::default(),
                ..plan.clone()
            };
            let free = replay.run(&unshaped, service, cfg.window_s)?;
            let worst = |r: &tailbound_sim::SimResult, name: &str| {
                r.tenants
                    .iter()
                    .find(|t| t.name == name)
                    .map_or(f64::NAN, |t| t.worst_window_s())
            };
            for (v, &ti) in violators.iter_mut().zip(&violator_ids) {
                v.unshaped_worst_s = worst(&free, &v.name);
                let alone = Plan {
                    tenants: vec![ti],
                    excess: Excess::Wait,
                    ..plan.clone()
                };
                v.alone_limited_worst_s =
                    Some(worst(&replay.run(&alone, service, cfg.window_s)?, &v.name));
            }
        }
        policies.insert(
            policy.as_str().to_string(),
            PolicyRun {
                admitted: plan.tenants.len(),
                bytes: result.tenants.iter().map(|t| t.bytes).sum(),
                violations: violators.len(),
                tenants,
                seconds,
                seconds_per_decision: seconds / network.tenants.len() as f64,
                violators,
            },
        );
        progress(Progress::PolicyDone { run, policy });
    }
    let (opt, opt_greedy) = if run < cfg.opt_runs {
        let o = opt(&replay, service, cfg.window_s, |_, _| {})?;
        let g = opt_greedy(&replay, service, cfg.window_s, |_, _| {})?;
        progress(Progress::OptDone { run });
        (Some(o.n), Some(g.len()))
    } else {
        (None, None)
    };
    let opt_greedy_models = match &models {
        Some(m) if run < cfg.opt_runs => {
            let g = tailbound_sim::opt_greedy(m, service, cfg.window_s, |_, _| {})?;
            progress(Progress::ModelOptDone { run });
            Some(g.len())
        }
        _ => None,
    };
    Ok(RunResult {
        seed,
        redrawn,
        policies,
        opt,
        opt_greedy,
        opt_greedy_models,
    })
}

fn mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let (s, n) = v
        .into_iter()
        .fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        s / n as f64
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn summarize(runs: &[RunResult]) -> Summary {
    let names: Vec<String> = runs
        .first()
        .map(|r| r.policies.keys().cloned().collect())
        .unwrap_or_default();
    let mut policies = BTreeMap::new();
    for name in &names {
        let get = |f: &dyn Fn(&PolicyRun) -> f64| mean(runs.iter().map(|r| f(&r.policies[name])));
        let of = |pick: fn(&RunResult) -> Option<usize>| -> Vec<f64> {
            runs.iter()
                .filter_map(|r| {
                    pick(r)
                        .filter(|&o| o > 0)
                        .map(|o| r.policies[name].admitted as f64 / o as f64)
                })
                .collect()
        };
        let with_opt = of(|r| r.opt);
        let with_greedy = of(|r| r.opt_greedy);
        let with_greedy_models = of(|r| r.opt_greedy_models);
        policies.insert(
            name.clone(),
            PolicySummary {
                admitted: get(&|p| p.admitted as f64),
                bytes: get(&|p| p.bytes as f64),
                violations: get(&|p| p.violations as f64),
                seconds: get(&|p| p.seconds),
                seconds_per_decision: get(&|p| p.seconds_per_decision),
                of_opt: (!with_opt.is_empty()).then(|| mean(with_opt.iter().copied())),
                of_opt_median: median(with_opt),
                bound_over_replay: median(
                    runs.iter()
                        .flat_map(|r| &r.policies[name].tenants)
                        .filter(|t| t.worst_s > 0.0)
                        .map(|t| t.bound_s / t.worst_s)
                        .collect(),
                ),
                bound_over_model: median(
                    runs.iter()
                        .flat_map(|r| &r.policies[name].tenants)
                        .filter_map(|t| t.model_worst_s.filter(|&w| w > 0.0).map(|w| t.bound_s / w))
                        .collect(),
                ),
                of_opt_greedy_models: (!with_greedy_models.is_empty())
                    .then(|| mean(with_greedy_models)),
                above_bound: get(&|p| {
                    p.tenants.iter().filter(|t| t.worst_s > t.bound_s).count() as f64
                }),
                above_replayed_bound: get(&|p| {
                    p.tenants
                        .iter()
                        .filter(|t| t.replayed_bound_s.is_some_and(|b| t.worst_s > b))
                        .count() as f64
                }),
                of_opt_greedy: (!with_greedy.is_empty()).then(|| mean(with_greedy)),
            },
        );
    }
    let snc = policies.get(Policy::SncMeister.as_str());
    let best_other = |f: fn(&PolicySummary) -> f64| {
        policies
            .iter()
            .filter(|(n, _)| !n.parse::<Policy>().is_ok_and(Policy::is_snc))
            .map(|(_, p)| f(p))
            .fold(None, |acc: Option<f64>, x| {
                Some(acc.map_or(x, |a| a.max(x)))
            })
    };
    let ratio = |f: fn(&PolicySummary) -> f64| match (snc, best_other(f)) {
        (Some(s), Some(b)) if b > 0.0 => Some(f(s) / b),
        _ => None,
    };
    Summary {
        ratio: ratio(|p| p.admitted),
        bytes_ratio: ratio(|p| p.bytes),
        policies,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ns: u64, bytes: u64) -> Request {
        Request {
            arrival_ns: ns,
            size_bytes: bytes,
            op: Op::DiskRead,
        }
    }

    /// A trace characterized on `first` and replaying `replay`.
    fn traced(name: &str, first: &[Request], replay: Vec<Request>) -> Characterized {
        let cfg = AdmissionConfig::paper(Vec::new());
        Characterized {
            name: name.into(),
            models: models(first, &cfg).unwrap(),
            replay,
        }
    }

    /// Two traces characterized on a 4 KiB read every 10 ms for 60 s (microseconds alone on
    /// 1 Gbit/s links): "steady" replays the same, "burst" the same with `reads` reads of
    /// 64 KiB at once at 30 s; and the paper's setup on them without the isolation test.
    fn steady_and_burst(reads: usize) -> ([Characterized; 2], AdmissionConfig) {
        let steady: Vec<Request> = (0..6000).map(|i| read(i * 10_000_000, 4096)).collect();
        let mut burst = steady.clone();
        burst.extend((0..reads).map(|_| read(30_000_000_000, 65536)));
        burst.sort_by_key(|r| r.arrival_ns);
        let traces = [
            traced("steady", &steady, steady.clone()),
            traced("burst", &steady, burst),
        ];
        let mut cfg = AdmissionConfig::paper(vec!["steady.csv".into(), "burst.csv".into()]);
        cfg.isolated = false;
        (traces, cfg)
    }

    #[test]
    fn a_replay_beyond_the_characterization_stays_under_the_bound_on_the_replayed_half() {
        // 2 MB of responses at 30 s that the characterization never saw
        let (traces, mut cfg) = steady_and_burst(30);
        cfg.tenants = 6;
        cfg.slos_s = vec![0.050];
        cfg.opt_runs = 0;
        // strict limiters hold the burst back for seconds; best-effort excess lets it by
        for excess in [Excess::Wait, Excess::BestEffort] {
            cfg.excess = excess;
            let run = one_run(&cfg, &traces, 0, &|_| {}).unwrap();
            let mut missed = 0;
            for (policy, p) in &run.policies {
                let dnc = !policy.parse::<Policy>().is_ok_and(Policy::is_snc);
                for t in &p.tenants {
                    let replayed = t.replayed_bound_s.unwrap_or(f64::INFINITY);
                    if dnc {
                        // worst case for what the tenants sent: never below the replay
                        assert!(t.worst_s <= replayed, "{excess:?} {policy}: {t:?}");
                    }
                    if t.name.ends_with("-steady") {
                        // the same traffic as characterized, the same bound (or more, with a
                        // bursting co-tenant)
                        assert!(
                            replayed >= t.bound_s * (1.0 - 1e-9),
                            "{excess:?} {policy}: {t:?}"
                        );
                    }
                    if dnc && excess == Excess::Wait && t.name.ends_with("-burst") {
                        assert!(
                            t.worst_s > 1.0 && t.worst_s > 10.0 * t.bound_s,
                            "{policy}: {t:?}"
                        );
                        assert!(p.violators.iter().any(|v| v.name == t.name), "{policy}");
                        // its mean stays within its limits: a finite bound on what it sent
                        assert!(t.replayed_bound_s.is_some(), "{policy}: {t:?}");
                        missed += 1;
                    }
                }
            }
            if excess == Excess::Wait {
                assert!(missed >= 3, "every DNC policy admitted a bursting tenant");
            }
        }
    }

    #[test]
    fn model_traffic_carries_each_events_work_on_its_direction() {
        use tailbound_curves::WorkFunction;
        let (traces, cfg) = steady_and_burst(0);
        let d = Draw {
            trace: 0,
            client: 0,
            server: cfg.clients,
            slo_s: 0.05,
            offset_ns: 0,
        };
        let mut b = empty_run(&cfg);
        let percentile = Percentile::new(99.9).unwrap();
        push_tenant(&mut b, "t0-steady".into(), &d, &traces[0], percentile).unwrap();
        let net = b.build().unwrap();
        let reqs = model_traffic(&net, 0, 60.0, 7).unwrap();
        assert_eq!(
            reqs,
            model_traffic(&net, 0, 60.0, 7).unwrap(),
            "deterministic"
        );
        assert!(reqs.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
        assert!(reqs.last().unwrap().arrival_ns < 60_000_000_000);
        // the steady trace: a 4 KiB read every 10 ms, one event per read on each direction at
        // the fitted state's rate (its band's centre, 81.9/s for 100 per interval)
        let (reads, writes): (Vec<&Request>, Vec<&Request>) =
            reqs.iter().partition(|r| r.op == Op::DiskRead);
        for (n, &f) in [reads.len(), writes.len()]
            .into_iter()
            .zip(&net.tenants[0].flows)
        {
            let rate = net.flows[f].mmpp.as_ref().unwrap().states[0].rate_per_s;
            assert!(rate > 50.0, "{rate}");
            let expected = rate * 60.0;
            assert!(
                (n as f64 - expected).abs() < 0.05 * expected,
                "{n} events in 60 s at {rate}/s"
            );
        }
        // each read carries the response work of a 4 KiB read, each write the request work
        let response = NetworkCost::RESPONSE_DIRECTION.work(reads[0]);
        assert!(
            (response - (200.0 + 1.1 * 4096.0)).abs() <= 1.1,
            "{response}"
        );
        let request = NetworkCost::REQUEST_DIRECTION.work(writes[0]);
        assert!(
            (request - (200.0 + 0.025 * 4096.0)).abs() <= 1.1,
            "{request}"
        );
    }

    #[test]
    fn the_models_replayed_give_their_ceiling_and_a_bound_never_below_them() {
        let (traces, mut cfg) = steady_and_burst(30);
        cfg.tenants = 6;
        cfg.slos_s = vec![0.020];
        cfg.opt_runs = 1;
        cfg.policies = vec![Policy::SncMartingale, Policy::SiloPlusPlus];
        let off = one_run(&cfg, &traces, 0, &|_| {}).unwrap();
        assert_eq!(off.opt_greedy_models, None);
        cfg.models_replayed = true;
        let on = one_run(&cfg, &traces, 0, &|_| {}).unwrap();
        let ceiling = on.opt_greedy_models.unwrap();
        // every tenant's model is a light steady one: all fit on their models, as on the traces
        assert_eq!(ceiling, 6);
        assert_eq!(on.opt_greedy, Some(6));
        for (policy, p) in &on.policies {
            assert!(!p.tenants.is_empty(), "{policy}");
            for t in &p.tenants {
                let w = t.model_worst_s.unwrap();
                assert!(w > 0.0, "{policy}: {t:?}");
                // a sound bound covers what its own model does
                assert!(t.bound_s >= w, "{policy}: {t:?}");
            }
        }
        let s = summarize(&[on]);
        let mart = &s.policies["snc-martingale"];
        assert!(mart.bound_over_model.is_some_and(|r| r >= 1.0));
        assert!(mart
            .of_opt_greedy_models
            .is_some_and(|r| r > 0.0 && r <= 1.0));
    }

    #[test]
    fn summary_gives_the_mean_and_the_median_of_admitted_over_opt() {
        let run = |admitted: [usize; 2], opt: Option<usize>| RunResult {
            seed: 0,
            redrawn: 0,
            policies: ["snc-meister", "silo++"]
                .iter()
                .zip(admitted)
                .map(|(n, a)| {
                    let p = PolicyRun {
                        admitted: a,
                        bytes: 1000 * a as u64,
                        violations: 0,
                        seconds: 0.0,
                        seconds_per_decision: 0.0,
                        violators: Vec::new(),
                        tenants: Vec::new(),
                    };
                    (n.to_string(), p)
                })
                .collect(),
            opt,
            opt_greedy: None,
            opt_greedy_models: None,
        };
        // snc-meister / OPT: 2.0 (an OPT stopped early), 0.9, 0.9; the run without OPT is left out
        let runs = [
            run([20, 10], Some(10)),
            run([36, 20], Some(40)),
            run([90, 30], Some(100)),
            run([50, 25], None),
        ];
        let s = summarize(&runs);
        let snc = &s.policies["snc-meister"];
        assert!((snc.of_opt.unwrap() - 3.8 / 3.0).abs() < 1e-12);
        assert!((snc.of_opt_median.unwrap() - 0.9).abs() < 1e-12);
        assert!((s.ratio.unwrap() - 49.0 / 21.25).abs() < 1e-12);
        assert_eq!(s.policies["silo++"].of_opt_median, Some(0.5));
    }

    #[test]
    fn speed_up_divides_arrival_times_and_keeps_sizes() {
        let dir = std::env::temp_dir().join(format!("tailbound-speed-up-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("steady.csv");
        // a 4 KiB read every 10 ms for 120 s
        let body: String = (0..12_000u64)
            .map(|i| format!("{},0x1000,DiskRead\n", i * 10_000_000))
            .collect();
        std::fs::write(&path, body).unwrap();
        let mut cfg = AdmissionConfig::paper(vec![path.clone()]);
        cfg.speed_up = 1.0;
        let plain = characterize(&path, &cfg).unwrap();
        cfg.speed_up = 4.0;
        let fast = characterize(&path, &cfg).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(plain.replay.len(), fast.replay.len());
        for (a, b) in plain.replay.iter().zip(&fast.replay) {
            assert_eq!(b.size_bytes, a.size_bytes);
            assert_eq!(b.arrival_ns, a.arrival_ns / 4);
        }
        for k in 0..2 {
            let rate = |c: &Characterized| c.models[k].arrival.as_ref().unwrap().tail_rate();
            let (p, f) = (rate(&plain), rate(&fast));
            assert!((f / p - 4.0).abs() < 0.01, "mean rate {p} sped up 4x: {f}");
        }
        // a factor that is not > 0 is refused, naming it
        for bad in [0.0, -2.0, f64::NAN] {
            cfg.speed_up = bad;
            match run(&cfg, &|_| {}) {
                Err(AdmissionExperimentError::Config(m)) => {
                    assert!(m.contains(&format!("speed-up {bad}")), "{m}")
                }
                other => panic!("speed-up {bad}: {:?}", other.map(|r| r.summary)),
            }
        }
    }

    #[test]
    fn isolation_redraws_tenants_that_miss_their_slo_alone() {
        // the burst: 19.7 MB of responses, 157 ms on a 1 Gbit/s link, alone
        let (traces, mut cfg) = steady_and_burst(300);
        cfg.speed_up = 1.0;
        cfg.tenants = 8;
        cfg.slos_s = vec![0.010];
        let uses =
            |s: &Network, name: &str| s.tenants.iter().filter(|t| t.name.ends_with(name)).count();
        // every trace is drawn once before any is reused, so "burst" is in the plain draw ...
        let plain = build_run(&cfg, &traces, 7).unwrap();
        assert_eq!(plain.redrawn, 0);
        assert!(uses(&plain.network, "-burst") >= 1);
        // ... and replayed alone (rotated as drawn) it misses 10 ms, while "steady" meets it
        let net = &plain.network;
        let replay = Replay::new(net, plain.requests.clone(), works(net)).unwrap();
        for (i, t) in net.tenants.iter().enumerate() {
            let mut plan = Plan::first(net, 0);
            plan.tenants = vec![i];
            let r = replay
                .run(&plan, Transmission::default(), cfg.window_s)
                .unwrap();
            assert_eq!(
                r.tenants[0].meets_slo,
                t.name.ends_with("-steady"),
                "{}",
                t.name
            );
        }
        // with the isolation test every burst draw is replaced by a steady one
        cfg.isolated = true;
        let kept = build_run(&cfg, &traces, 7).unwrap();
        assert_eq!(uses(&kept.network, "-burst"), 0);
        assert_eq!(uses(&kept.network, "-steady"), 8);
        assert!(kept.redrawn >= 1);
        assert_eq!(kept.requests.len(), 8);
    }
}
