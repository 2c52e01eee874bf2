//! EyeQ's experiments (shared/papers/eyeq.txt, "Does it work?" and the memcached table),
//! run on a [`Backend`]: the simulator ([`Simulator`]) or the testbed (real hosts, memcached:
//! [`Testbed`]).
//!
//! **(a) Throughput** ([`Mode`]: none, static, eyeq). One receiving host with a link of
//! `link_rate` is shared by two tenants with equal guarantees (each is promised half the
//! link): a long-lived TCP connection and EyeQ's bursty UDP session (on 5 ms at 2.5 Gbit/s,
//! off 15 ms: 2.5× our 1 Gbit/s link while on). The result is each tenant's delivered
//! throughput over time and the TCP tenant's `share_of_guarantee` while the blaster is on
//! (after a warm-up): its delivered rate in the bins that lie wholly inside the blaster's on
//! periods, divided by its guarantee. `static` limits both tenants to their guarantees
//! (EyeQ's "Strawman: rate limiting": safe, not work conserving).
//!
//! **(b) Latency** ([`Row`]): a memcached-like tenant (open-loop Poisson SETs of 6 KiB
//! objects at 23 % of the link, as EyeQ's 2.3 Gbit/s per 10 Gbit/s server; the papers'
//! network costs per direction) on the same receiving link, alone or beside the blaster,
//! with and without EyeQ: p50 and p99.9 of request latency (request and response). The
//! memcached tenant starts after the warm-up, when the blaster has been running for that
//! long (EyeQ has learnt it).
//!
//! **In the simulator** hosts are queues (senders' NICs `nic_rate`, the receiving link
//! `link_rate`, unbounded FIFO buffers), the TCP connection is window-limited
//! (`sim::ClosedLoop`: `tcp_window` segments in flight, ACKs back after `ack_delay_s`, no
//! loss or congestion window), and EyeQ is `tailbound_shaping::eyeq` driven by the
//! simulator's clock with a receiver on every link into a host. Seeds draw the blaster's
//! phase and its datagrams (Poisson while on) and the memcached arrivals.
//!
//! **On the testbed** ([`Testbed`]) the hosts are network namespaces, the traffic real (a TCP
//! connection, a paced UDP blaster, memcached by PID with open-loop clients) and EyeQ runs in
//! `tailbound_dataplane::eyeq`'s agents; its time constants are scaled
//! ([`EyeqSetup::testbed`]).
//!
//! Feedback overhead is counted from the EyeQ runs of (a) (messages of
//! [`FEEDBACK_FRAME_BYTES`] each), with the agents' CPU time on the testbed. The limiter's CPU
//! cost is measured by `cargo bench -p tailbound-shaping --bench eyeq`, not here.

mod testbed;

pub use testbed::Testbed;

use crate::par_map;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tailbound_curves::NetworkCost;
use tailbound_model::{
    flow_name, Bucket, Excess, FlowModels, Network, NetworkBuilder, NetworkError, NewTenant, Op,
    Request, Slo, Stage,
};
use tailbound_shaping::eyeq::{EyeqConfig, FEEDBACK_FRAME_BYTES};
use tailbound_sim::{
    nearest_rank, simulate, ClosedLoop, EyeqSim, SimConfig, SimError, SizeWork, TenantWorkload,
};
use tailbound_trace::gen::{generate, ArrivalModel, GenError, GenSpec, SizeDist, Vocabulary};

const NS_PER_S: f64 = 1e9;

/// Why the experiment could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EyeqExperimentError {
    #[error("invalid EyeQ experiment setting {field} = {value}; expected {expected}")]
    Setup {
        field: &'static str,
        value: f64,
        expected: &'static str,
    },
    #[error("no seeds given; run at least one (e.g. --seeds 1,2,3)")]
    NoSeeds,
    #[error("simulation: {0}")]
    Sim(#[from] SimError),
    #[error("network: {0}")]
    Network(#[from] NetworkError),
    #[error("memcached workload: {0}")]
    Generate(#[from] GenError),
    #[error("{backend} backend: {message}")]
    Backend {
        backend: &'static str,
        message: String,
    },
}

/// The experiment's parameters (both parts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EyeqSetup {
    /// the receiving host's link [bytes/s]
    pub link_rate: f64,
    /// every sending host's NIC [bytes/s]
    pub nic_rate: f64,
    /// EyeQ's `C` as a fraction of the link (0.98)
    pub capacity_fraction: f64,
    /// (a) length of a run [s]
    pub duration_s: f64,
    /// (a) bins of the throughput series [s]
    pub bin_s: f64,
    /// (a) bins before this time do not count towards the shares [s]
    pub warmup_s: f64,
    /// the blaster's rate while on [bytes/s] (EyeQ: 2.5 Gbit/s)
    pub blaster_rate: f64,
    /// the blaster's on period [s] (EyeQ: 5 ms)
    pub blaster_on_s: f64,
    /// the blaster's off period [s] (EyeQ: 15 ms)
    pub blaster_off_s: f64,
    /// the blaster's datagrams on the wire [bytes]
    pub datagram_bytes: u64,
    /// (a) the TCP connection's segments [bytes]
    pub tcp_segment_bytes: u64,
    /// (a) segments in flight
    pub tcp_window: u32,
    /// (a) from a segment's delivery to the next one's send (the ACK's trip) [s]
    pub ack_delay_s: f64,
    /// EyeQ's feedback from receiver to sender [s]
    pub feedback_delay_s: f64,
    /// a sender's queue in front of its limiter (EyeQ's code: 128 KiB); datagrams that
    /// find it full are dropped [bytes]
    pub sender_queue_bytes: u64,
    /// (b) memcached's offered load, a fraction of the link (EyeQ: 2.3 of 10 Gbit/s)
    pub memcached_load: f64,
    /// (b) memcached's objects (SETs) [bytes] (EyeQ: 6 kB)
    pub object_bytes: u64,
    /// (b) length of a run [s]
    pub latency_duration_s: f64,
    /// worker threads (runs in parallel)
    pub threads: usize,
    /// EyeQ's rate-controller period T [s] (EyeQ: 200 µs). Every other EyeQ time constant
    /// (feedback period and bytes, hold, limiter bursts, the queue term's marking
    /// threshold) scales with it.
    #[serde(default = "default_interval_s")]
    pub eyeq_interval_s: f64,
}

/// EyeQ's own rate-controller period [s].
pub const EYEQ_INTERVAL_S: f64 = 200e-6;

fn default_interval_s() -> f64 {
    EYEQ_INTERVAL_S
}

impl Default for EyeqSetup {
    fn default() -> Self {
        EyeqSetup {
            link_rate: 1.25e8,
            nic_rate: 1.25e9,
            capacity_fraction: 0.98,
            duration_s: 1.0,
            bin_s: 1e-3,
            warmup_s: 0.1,
            blaster_rate: 2.5e9 / 8.0,
            blaster_on_s: 5e-3,
            blaster_off_s: 15e-3,
            datagram_bytes: 1500,
            tcp_segment_bytes: 8192,
            tcp_window: 8,
            ack_delay_s: 50e-6,
            feedback_delay_s: 10e-6,
            sender_queue_bytes: 128 * 1024,
            memcached_load: 0.23,
            object_bytes: 6144,
            latency_duration_s: 4.0,
            threads: 2,
            eyeq_interval_s: EYEQ_INTERVAL_S,
        }
    }
}

impl EyeqSetup {
    /// The testbed's setup (the `testbed` module): EyeQ's experiment with time × 50 and rates ÷ 10.
    /// A user-space agent sustains a 10 ms period, not 200 µs, so T = 10 ms and every time
    /// constant scales with it (blaster on 250 ms, off 750 ms; bins 50 ms); a 100 Mbit/s
    /// receiving link (senders' NICs 1 Gbit/s, the blaster 250 Mbit/s while on: 2.5× the
    /// link, as EyeQ's) keeps the packet rates within what two shared cores forward. Latency
    /// runs last 30 s (about 12 000 requests): with 10 s, p99.9 was the 5th slowest of about
    /// 4 100, which one burst or one descheduled process sets.
    pub fn testbed() -> EyeqSetup {
        EyeqSetup {
            link_rate: 1.25e7,
            nic_rate: 1.25e8,
            duration_s: 10.0,
            bin_s: 0.05,
            warmup_s: 1.0,
            blaster_rate: 3.125e7,
            blaster_on_s: 0.25,
            blaster_off_s: 0.75,
            datagram_bytes: 1514,
            tcp_segment_bytes: 1514,
            latency_duration_s: 30.0,
            threads: 1,
            eyeq_interval_s: 0.01,
            ..EyeqSetup::default()
        }
    }

    /// Checks every setting before any run.
    ///
    /// # Errors
    /// [`EyeqExperimentError::Setup`] naming the first bad setting.
    pub fn validate(&self) -> Result<(), EyeqExperimentError> {
        let bad = |field, value: f64, expected| {
            Err(EyeqExperimentError::Setup {
                field,
                value,
                expected,
            })
        };
        let pos = |v: f64| v.is_finite() && v > 0.0;
        for (field, v) in [
            ("link_rate", self.link_rate),
            ("nic_rate", self.nic_rate),
            ("duration_s", self.duration_s),
            ("bin_s", self.bin_s),
            ("blaster_rate", self.blaster_rate),
            ("blaster_on_s", self.blaster_on_s),
            ("blaster_off_s", self.blaster_off_s),
            ("latency_duration_s", self.latency_duration_s),
        ] {
            if !pos(v) {
                return bad(field, v, "a finite value > 0");
            }
        }
        for (field, v) in [
            ("datagram_bytes", self.datagram_bytes),
            ("tcp_segment_bytes", self.tcp_segment_bytes),
            ("object_bytes", self.object_bytes),
        ] {
            if v == 0 {
                return bad(field, 0.0, "at least 1 byte");
            }
        }
        if self.sender_queue_bytes < self.datagram_bytes {
            return bad(
                "sender_queue_bytes",
                self.sender_queue_bytes as f64,
                "room for at least one datagram",
            );
        }
        if self.tcp_window == 0 {
            return bad("tcp_window", 0.0, "at least 1 segment");
        }
        for (field, v) in [
            ("ack_delay_s", self.ack_delay_s),
            ("feedback_delay_s", self.feedback_delay_s),
            ("warmup_s", self.warmup_s),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, v, "a finite duration >= 0 [s]");
            }
        }
        if self.warmup_s + self.blaster_on_s + self.blaster_off_s >= self.duration_s {
            return bad(
                "warmup_s",
                self.warmup_s,
                "a warm-up that leaves at least one blaster period (on + off) of the run",
            );
        }
        if !(pos(self.memcached_load) && self.memcached_load < 1.0) {
            return bad(
                "memcached_load",
                self.memcached_load,
                "a fraction of the link in (0, 1)",
            );
        }
        if self.bin_s * 1e9 < 1.0 || self.duration_s / self.bin_s > 1e7 {
            return bad(
                "bin_s",
                self.bin_s,
                "a bin of at least 1 ns and at most 1e7 bins per run",
            );
        }
        self.eyeq_config()
            .validate()
            .map_err(|e| EyeqExperimentError::Setup {
                field: "capacity_fraction",
                value: self.capacity_fraction,
                expected: if matches!(
                    e,
                    tailbound_shaping::eyeq::EyeqError::Setting {
                        field: "capacity_fraction",
                        ..
                    }
                ) {
                    "a fraction in (0, 1], e.g. 0.98"
                } else {
                    "settings EyeQ accepts for this link"
                },
            })?;
        if self.threads == 0 {
            return bad("threads", 0.0, "at least 1 worker thread");
        }
        if !(self.eyeq_interval_s.is_finite() && (1e-6..=1.0).contains(&self.eyeq_interval_s)) {
            return bad(
                "eyeq_interval_s",
                self.eyeq_interval_s,
                "a period from 1 µs to 1 s, e.g. 200e-6 (EyeQ) or 0.01 (the testbed)",
            );
        }
        Ok(())
    }

    /// Each tenant's guarantee: half the link [bytes/s].
    pub fn guarantee(&self) -> f64 {
        self.link_rate / 2.0
    }

    /// EyeQ's parameters on the receiving link, its time constants scaled by
    /// `eyeq_interval_s` / 200 µs (unchanged at EyeQ's own period).
    pub fn eyeq_config(&self) -> EyeqConfig {
        let base = EyeqConfig::new(self.link_rate);
        let k = self.eyeq_interval_s / EYEQ_INTERVAL_S;
        let ns = |v: u64| (v as f64 * k).round().max(1.0) as u64;
        EyeqConfig {
            capacity_fraction: self.capacity_fraction,
            interval_ns: ns(base.interval_ns),
            feedback_ns: ns(base.feedback_ns),
            feedback_bytes: ns(base.feedback_bytes),
            hold_ns: ns(base.hold_ns),
            burst_s: base.burst_s * k,
            mark_threshold_s: base.mark_threshold_s * k,
            ..base
        }
    }
}

/// How the throughput experiment enforces the guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// nothing: FIFO sharing
    None,
    /// each tenant limited to its guarantee by a token bucket at its sender
    Static,
    /// EyeQ's receiver-driven limiters
    Eyeq,
}

tailbound_model::names!(Mode, "mode", { None => "none", Static => "static", Eyeq => "eyeq" });

/// A row of EyeQ's memcached table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Row {
    /// memcached alone
    Alone,
    /// alone, with EyeQ running
    AloneEyeq,
    /// beside the blaster
    Interference,
    /// beside the blaster, with EyeQ
    InterferenceEyeq,
}

tailbound_model::names!(Row, "row", {
    Alone => "alone",
    AloneEyeq => "alone_eyeq",
    Interference => "interference",
    InterferenceEyeq => "interference_eyeq",
});

impl Row {
    fn eyeq(self) -> bool {
        matches!(self, Row::AloneEyeq | Row::InterferenceEyeq)
    }

    fn blaster(self) -> bool {
        matches!(self, Row::Interference | Row::InterferenceEyeq)
    }
}

/// What a backend measured in one throughput run.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputRun {
    /// bytes the TCP tenant delivered per bin of `setup.bin_s`, from the start of the run
    pub tcp_bytes: Vec<u64>,
    /// the same for the blaster
    pub blaster_bytes: Vec<u64>,
    /// the blaster's on periods [s]
    pub blaster_on: Vec<(f64, f64)>,
    /// EyeQ feedback messages sent during the run
    pub feedback_messages: u64,
    /// what the real agents cost (the testbed; `None` in the simulator)
    pub agents: Option<AgentCost>,
}

/// What EyeQ's agents did and cost in one testbed run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AgentCost {
    /// the run's length [s]
    pub elapsed_s: f64,
    /// CPU time of the receiver agent [s]
    pub receiver_cpu_s: f64,
    /// CPU time of the sender agents and their `tc` processes [s]
    pub sender_cpu_s: f64,
    /// packets the receiver agent counted
    pub packets: u64,
    /// packets its socket lost before it read them (its counts are short by these)
    pub socket_drops: u64,
    /// `tc class change` commands the sender agents issued
    pub class_changes: u64,
}

/// What a backend measured in one latency run.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyRun {
    /// completed memcached requests
    pub requests: usize,
    /// memcached requests lost (a full sender queue) or failed
    pub dropped: u64,
    /// median latency [s]
    pub p50_s: f64,
    /// 99.9th percentile [s]
    pub p999_s: f64,
}

/// Where the experiment runs: the simulator, or real hosts.
pub trait Backend: Sync {
    /// "simulator", "testbed"
    fn name(&self) -> &'static str;
    /// Part (a) in `mode` with `seed`.
    fn throughput(
        &self,
        setup: &EyeqSetup,
        mode: Mode,
        seed: u64,
    ) -> Result<ThroughputRun, EyeqExperimentError>;
    /// Part (b), one row with `seed`.
    fn latency(
        &self,
        setup: &EyeqSetup,
        row: Row,
        seed: u64,
    ) -> Result<LatencyRun, EyeqExperimentError>;
}

/// One seed of one mode of (a).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSeed {
    pub seed: u64,
    /// the TCP tenant's delivered rate ÷ its guarantee in the bins wholly inside the
    /// blaster's on periods after the warm-up
    pub share_of_guarantee: f64,
    /// the same in the bins wholly inside the off periods (work conservation)
    pub share_of_guarantee_while_off: f64,
    /// the blaster's delivered rate ÷ its guarantee while on
    pub blaster_share_of_guarantee: f64,
    /// delivered rate per bin, TCP tenant [bytes/s]
    pub tcp_rate: Vec<f64>,
    /// delivered rate per bin, blaster [bytes/s]
    pub blaster_rate: Vec<f64>,
    /// the blaster's on periods [s]
    pub blaster_on: Vec<(f64, f64)>,
    /// EyeQ feedback messages per second of the run
    pub feedback_per_s: f64,
    /// what the real agents cost (the testbed)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<AgentCost>,
}

/// One mode of (a) over all seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    pub mode: Mode,
    /// mean over the seeds of [`ThroughputSeed::share_of_guarantee`]
    pub share_of_guarantee: f64,
    /// the smallest over the seeds
    pub min_share_of_guarantee: f64,
    pub seeds: Vec<ThroughputSeed>,
}

/// One seed of one row of (b).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySeed {
    pub seed: u64,
    pub requests: usize,
    /// requests lost (none in the simulator unless memcached itself is limited)
    pub dropped: u64,
    pub p50_s: f64,
    pub p999_s: f64,
}

/// One row of (b) over all seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    pub row: Row,
    /// mean over the seeds [s]
    pub p50_s: f64,
    /// mean over the seeds [s]
    pub p999_s: f64,
    pub seeds: Vec<LatencySeed>,
}

/// EyeQ's feedback traffic, from the EyeQ runs of (a).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedbackOverhead {
    /// messages per second, mean over the seeds
    pub messages_per_s: f64,
    /// bytes per second on the wire ([`FEEDBACK_FRAME_BYTES`] per message)
    pub bytes_per_s: f64,
    /// `bytes_per_s` ÷ the receiving link's rate
    pub fraction_of_link: f64,
    /// the receiver agent's CPU time per second of run (the testbed) [s/s]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_cpu_per_s: Option<f64>,
    /// the sender agents' CPU time (with their `tc`) per second of run (the testbed) [s/s]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_cpu_per_s: Option<f64>,
}

/// One acceptance check of issue 23.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub holds: bool,
    pub detail: String,
}

/// The whole experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EyeqExperiment {
    /// "simulator" or "testbed"
    pub backend: String,
    pub setup: EyeqSetup,
    /// each tenant's guarantee in (a) [bytes/s]
    pub guarantee_bytes_per_s: f64,
    /// (a), one entry per mode
    pub throughput: Vec<ModeResult>,
    /// (b), one entry per row
    pub latency: Vec<LatencyRow>,
    pub feedback: Option<FeedbackOverhead>,
    pub checks: Vec<Check>,
}

impl EyeqExperiment {
    /// Every check holds.
    pub fn holds(&self) -> bool {
        self.checks.iter().all(|c| c.holds)
    }

    /// The mode's results, if run.
    pub fn mode(&self, mode: Mode) -> Option<&ModeResult> {
        self.throughput.iter().find(|m| m.mode == mode)
    }

    /// The row's results, if run.
    pub fn row(&self, row: Row) -> Option<&LatencyRow> {
        self.latency.iter().find(|r| r.row == row)
    }
}

/// Runs (a) in `modes` and (b) in `rows` for every seed on `backend`; `progress` is called
/// after each run (from worker threads).
///
/// # Errors
/// A bad setup before any run; the first run that fails.
pub fn run(
    backend: &dyn Backend,
    setup: &EyeqSetup,
    seeds: &[u64],
    modes: &[Mode],
    rows: &[Row],
    progress: impl Fn() + Sync,
) -> Result<EyeqExperiment, EyeqExperimentError> {
    setup.validate()?;
    if seeds.is_empty() {
        return Err(EyeqExperimentError::NoSeeds);
    }
    let jobs: Vec<Job> = modes
        .iter()
        .flat_map(|&m| seeds.iter().map(move |&s| Job::Throughput(m, s)))
        .chain(
            rows.iter()
                .flat_map(|&r| seeds.iter().map(move |&s| Job::Latency(r, s))),
        )
        .collect();
    let done = par_map(&jobs, setup.threads, |job| {
        let r = match *job {
            Job::Throughput(m, s) => backend.throughput(setup, m, s).map(Done::Throughput),
            Job::Latency(r, s) => backend.latency(setup, r, s).map(Done::Latency),
        };
        progress();
        r
    });
    let mut throughput: Vec<ModeResult> = Vec::new();
    let mut latency: Vec<LatencyRow> = Vec::new();
    for (job, r) in jobs.iter().zip(done) {
        match (*job, r?) {
            (Job::Throughput(mode, seed), Done::Throughput(run)) => {
                let s = throughput_seed(setup, seed, &run);
                match throughput.iter_mut().find(|m| m.mode == mode) {
                    Some(m) => m.seeds.push(s),
                    None => throughput.push(ModeResult {
                        mode,
                        share_of_guarantee: 0.0,
                        min_share_of_guarantee: 0.0,
                        seeds: vec![s],
                    }),
                }
            }
            (Job::Latency(row, seed), Done::Latency(run)) => {
                let s = LatencySeed {
                    seed,
                    requests: run.requests,
                    dropped: run.dropped,
                    p50_s: run.p50_s,
                    p999_s: run.p999_s,
                };
                match latency.iter_mut().find(|r| r.row == row) {
                    Some(r) => r.seeds.push(s),
                    None => latency.push(LatencyRow {
                        row,
                        p50_s: 0.0,
                        p999_s: 0.0,
                        seeds: vec![s],
                    }),
                }
            }
            _ => unreachable!("par_map keeps each job's result beside it"),
        }
    }
    for m in &mut throughput {
        m.share_of_guarantee = mean(m.seeds.iter().map(|s| s.share_of_guarantee));
        m.min_share_of_guarantee = m
            .seeds
            .iter()
            .map(|s| s.share_of_guarantee)
            .fold(f64::INFINITY, f64::min);
    }
    for r in &mut latency {
        r.p50_s = mean(r.seeds.iter().map(|s| s.p50_s));
        r.p999_s = mean(r.seeds.iter().map(|s| s.p999_s));
    }
    let feedback = throughput.iter().find(|m| m.mode == Mode::Eyeq).map(|m| {
        let messages_per_s = mean(m.seeds.iter().map(|s| s.feedback_per_s));
        let bytes_per_s = messages_per_s * FEEDBACK_FRAME_BYTES as f64;
        let costs: Vec<AgentCost> = m.seeds.iter().filter_map(|s| s.agents).collect();
        let per_s = |f: fn(&AgentCost) -> f64| {
            (!costs.is_empty()).then(|| mean(costs.iter().map(|c| f(c) / c.elapsed_s.max(1e-9))))
        };
        FeedbackOverhead {
            messages_per_s,
            bytes_per_s,
            fraction_of_link: bytes_per_s / setup.link_rate,
            receiver_cpu_per_s: per_s(|c| c.receiver_cpu_s),
            sender_cpu_per_s: per_s(|c| c.sender_cpu_s),
        }
    });
    let mut exp = EyeqExperiment {
        backend: backend.name().to_string(),
        setup: setup.clone(),
        guarantee_bytes_per_s: setup.guarantee(),
        throughput,
        latency,
        feedback,
        checks: Vec::new(),
    };
    exp.checks = checks(&exp);
    Ok(exp)
}

#[derive(Debug, Clone, Copy)]
enum Job {
    Throughput(Mode, u64),
    Latency(Row, u64),
}

enum Done {
    Throughput(ThroughputRun),
    Latency(LatencyRun),
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn quantile_s(sorted_ns: &[u64], epsilon: f64) -> f64 {
    nearest_rank(sorted_ns, epsilon).map_or(0.0, |ns| ns as f64 / NS_PER_S)
}

/// Shares while on and off from a run's series.
fn throughput_seed(setup: &EyeqSetup, seed: u64, run: &ThroughputRun) -> ThroughputSeed {
    let bin = setup.bin_s;
    let bins = (setup.duration_s / bin).floor() as usize;
    let first = (setup.warmup_s / bin).ceil() as usize;
    let inside = |k: usize| {
        let (a, b) = (k as f64 * bin, (k + 1) as f64 * bin);
        run.blaster_on
            .iter()
            .any(|&(s, e)| s <= a + 1e-12 && b <= e + 1e-12)
    };
    let touches = |k: usize| {
        let (a, b) = (k as f64 * bin, (k + 1) as f64 * bin);
        run.blaster_on.iter().any(|&(s, e)| s < b && a < e)
    };
    let at = |v: &[u64], k: usize| v.get(k).copied().unwrap_or(0) as f64;
    let (mut on_bins, mut off_bins) = (0usize, 0usize);
    let (mut tcp_on, mut tcp_off, mut blaster_on) = (0.0, 0.0, 0.0);
    for k in first..bins {
        if inside(k) {
            on_bins += 1;
            tcp_on += at(&run.tcp_bytes, k);
            blaster_on += at(&run.blaster_bytes, k);
        } else if !touches(k) {
            off_bins += 1;
            tcp_off += at(&run.tcp_bytes, k);
        }
    }
    let share = |bytes: f64, n: usize| {
        if n == 0 {
            0.0
        } else {
            bytes / (n as f64 * bin) / setup.guarantee()
        }
    };
    let rate = |v: &[u64]| (0..bins).map(|k| at(v, k) / bin).collect();
    ThroughputSeed {
        seed,
        share_of_guarantee: share(tcp_on, on_bins),
        share_of_guarantee_while_off: share(tcp_off, off_bins),
        blaster_share_of_guarantee: share(blaster_on, on_bins),
        tcp_rate: rate(&run.tcp_bytes),
        blaster_rate: rate(&run.blaster_bytes),
        blaster_on: run.blaster_on.clone(),
        feedback_per_s: run.feedback_messages as f64 / setup.duration_s,
        agents: run.agents,
    }
}

/// Share a TCP tenant must keep with EyeQ while the blaster is on (issue 23).
pub const EYEQ_SHARE: f64 = 0.9;
/// With interference and EyeQ, memcached's p99.9 is within this factor of alone.
pub const EYEQ_TAIL_FACTOR: f64 = 2.0;
/// Without EyeQ the interference is visible: p99.9 at least this factor of alone.
pub const INTERFERENCE_TAIL_FACTOR: f64 = 5.0;

/// Issue 23's acceptance, per seed, for the parts that were run.
fn checks(exp: &EyeqExperiment) -> Vec<Check> {
    let mut out = Vec::new();
    if let Some(e) = exp.mode(Mode::Eyeq) {
        let shares: Vec<String> = e
            .seeds
            .iter()
            .map(|s| format!("{:.3}", s.share_of_guarantee))
            .collect();
        out.push(Check {
            name: format!(
                "(a) eyeq: TCP tenant >= {:.0} % of its guarantee while the blaster is on",
                EYEQ_SHARE * 100.0
            ),
            holds: e.seeds.iter().all(|s| s.share_of_guarantee >= EYEQ_SHARE),
            detail: format!("share of guarantee per seed: {}", shares.join(", ")),
        });
        if let Some(n) = exp.mode(Mode::None) {
            let pairs: Vec<(f64, f64)> = n
                .seeds
                .iter()
                .filter_map(|ns| {
                    e.seeds
                        .iter()
                        .find(|es| es.seed == ns.seed)
                        .map(|es| (ns.share_of_guarantee, es.share_of_guarantee))
                })
                .collect();
            out.push(Check {
                name: "(a) none: TCP tenant gets less than with eyeq".into(),
                holds: !pairs.is_empty() && pairs.iter().all(|(n, e)| n < e),
                detail: pairs
                    .iter()
                    .map(|(n, e)| format!("{n:.3} < {e:.3}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    let p999 = |row| {
        exp.row(row).map(|r| {
            r.seeds
                .iter()
                .map(|s| (s.seed, s.p999_s))
                .collect::<Vec<_>>()
        })
    };
    if let Some(alone) = p999(Row::Alone) {
        let ratios = |row| {
            p999(row).map(|v| {
                v.iter()
                    .filter_map(|&(seed, p)| {
                        alone
                            .iter()
                            .find(|a| a.0 == seed)
                            .filter(|a| a.1 > 0.0)
                            .map(|a| p / a.1)
                    })
                    .collect::<Vec<f64>>()
            })
        };
        let fmt = |v: &[f64]| {
            v.iter()
                .map(|r| format!("{r:.2}x"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if let Some(r) = ratios(Row::InterferenceEyeq) {
            out.push(Check {
                name: format!("(b) interference + eyeq: p99.9 within {EYEQ_TAIL_FACTOR}x of alone"),
                holds: !r.is_empty() && r.iter().all(|&x| x <= EYEQ_TAIL_FACTOR),
                detail: format!("p99.9 / alone per seed: {}", fmt(&r)),
            });
        }
        if let Some(r) = ratios(Row::Interference) {
            out.push(Check {
                name: format!("(b) interference: p99.9 at least {INTERFERENCE_TAIL_FACTOR}x alone"),
                holds: !r.is_empty() && r.iter().all(|&x| x >= INTERFERENCE_TAIL_FACTOR),
                detail: format!("p99.9 / alone per seed: {}", fmt(&r)),
            });
        }
    }
    out
}

/// The simulator backend: `tailbound-sim` with `tailbound_shaping::eyeq` on virtual time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Simulator;

/// The blaster's datagrams (Poisson at `blaster_rate` while on) and its on periods, with
/// a phase drawn from the seed.
fn blaster(setup: &EyeqSetup, seed: u64, duration_s: f64) -> (Vec<Request>, Vec<(f64, f64)>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xb1a5_7e55);
    let on = on_periods(setup, &mut rng, duration_s);
    let per_s = setup.blaster_rate / setup.datagram_bytes as f64;
    let mut reqs = Vec::new();
    for &(a, b) in &on {
        let mut t = a;
        loop {
            t += -(1.0 - rng.gen::<f64>()).ln() / per_s;
            if t >= b {
                break;
            }
            reqs.push(Request {
                arrival_ns: (t * NS_PER_S).round() as u64,
                size_bytes: setup.datagram_bytes,
                op: Op::Put,
            });
        }
    }
    (reqs, on)
}

/// The blaster's on periods within `[0, duration_s)` [s], with a phase drawn from `rng` (its
/// first draw of the seed's stream).
fn on_periods(setup: &EyeqSetup, rng: &mut ChaCha8Rng, duration_s: f64) -> Vec<(f64, f64)> {
    let period = setup.blaster_on_s + setup.blaster_off_s;
    let mut start = rng.gen::<f64>() * period - period;
    let mut on = Vec::new();
    while start < duration_s {
        let (a, b) = (start.max(0.0), (start + setup.blaster_on_s).min(duration_s));
        if a < b {
            on.push((a, b));
        }
        start += period;
    }
    on
}

/// The blaster's on periods for `seed` (the same as the simulator's for that seed).
fn blaster_on_periods(setup: &EyeqSetup, seed: u64, duration_s: f64) -> Vec<(f64, f64)> {
    on_periods(
        setup,
        &mut ChaCha8Rng::seed_from_u64(seed ^ 0xb1a5_7e55),
        duration_s,
    )
}

/// A network of queues and single-priority tenants; `flows[t]` lists tenant t's stages as
/// paths of queue indices.
/// Free-standing queues and tenants along explicit paths: each tenant's first path is its
/// request direction ([`Stage::NetIn`]), a second one its response ([`Stage::NetOut`]).
fn network(
    queues: &[(&str, f64)],
    tenants: &[(&str, Vec<Vec<usize>>)],
) -> Result<Network, NetworkError> {
    let mut b = NetworkBuilder::new();
    for &(name, rate) in queues {
        b.queue(name, rate);
    }
    for (name, paths) in tenants {
        let slo = Slo::new(1.0, 99.9).expect("a 1 s p99.9 SLO is valid");
        let t = b.tenant(NewTenant {
            priority: Some(0),
            ..NewTenant::new(*name, slo)
        });
        for (path, stage) in paths.iter().zip([Stage::NetIn, Stage::NetOut]) {
            b.flow_on(
                t,
                flow_name(name, stage),
                stage,
                path.clone(),
                FlowModels::default(),
            );
        }
    }
    b.build()
}

fn eyeq_sim(setup: &EyeqSetup, receivers: Vec<usize>, tenants: usize) -> EyeqSim {
    EyeqSim {
        config: setup.eyeq_config(),
        receivers,
        weights: vec![1.0; tenants],
        feedback_delay_ns: (setup.feedback_delay_s * NS_PER_S).round() as u64,
    }
}

impl Backend for Simulator {
    fn name(&self) -> &'static str {
        "simulator"
    }

    fn throughput(
        &self,
        setup: &EyeqSetup,
        mode: Mode,
        seed: u64,
    ) -> Result<ThroughputRun, EyeqExperimentError> {
        // queues: the TCP sender's NIC, the blaster's NIC, the receiving link
        let net = network(
            &[
                ("tcp-host-out", setup.nic_rate),
                ("udp-host-out", setup.nic_rate),
                ("server-in", setup.link_rate),
            ],
            &[("tcp", vec![vec![0, 2]]), ("blaster", vec![vec![1, 2]])],
        )?;
        // enough segments to keep the connection busy for the whole run at line rate
        let segments = (1.1 * setup.duration_s * setup.link_rate / setup.tcp_segment_bytes as f64)
            .ceil() as usize
            + setup.tcp_window as usize;
        let tcp: Vec<Request> = (0..segments)
            .map(|_| Request {
                arrival_ns: 0,
                size_bytes: setup.tcp_segment_bytes,
                op: Op::Put,
            })
            .collect();
        let (udp, blaster_on) = blaster(setup, seed, setup.duration_s);
        let workloads = [
            TenantWorkload {
                requests: &tcp,
                works: vec![&SizeWork],
            },
            TenantWorkload {
                requests: &udp,
                works: vec![&SizeWork],
            },
        ];
        let bin_ns = (setup.bin_s * NS_PER_S).round() as u64;
        let mut cfg = SimConfig {
            closed_loop: vec![
                Some(ClosedLoop {
                    window: setup.tcp_window,
                    ack_delay_ns: (setup.ack_delay_s * NS_PER_S).round() as u64,
                }),
                None,
            ],
            throughput_bin_ns: Some(bin_ns),
            shaper_queue_bytes: Some(setup.sender_queue_bytes as f64),
            excess: Excess::Wait,
            ..SimConfig::default()
        };
        match mode {
            Mode::None => {}
            Mode::Static => {
                let bucket = Bucket {
                    rate: setup.guarantee(),
                    burst: 2.0 * setup.datagram_bytes.max(setup.tcp_segment_bytes) as f64,
                };
                cfg.shapers = vec![vec![bucket], vec![bucket]];
            }
            Mode::Eyeq => cfg.eyeq = Some(eyeq_sim(setup, vec![2], 2)),
        }
        let r = simulate(&net, &workloads, &cfg)?;
        let mut series = r.throughput.into_iter();
        Ok(ThroughputRun {
            tcp_bytes: series.next().unwrap_or_default(),
            blaster_bytes: series.next().unwrap_or_default(),
            blaster_on,
            feedback_messages: r
                .eyeq
                .iter()
                .map(|e| e.stats.limits + e.stats.releases)
                .sum(),
            agents: None,
        })
    }

    fn latency(
        &self,
        setup: &EyeqSetup,
        row: Row,
        seed: u64,
    ) -> Result<LatencyRun, EyeqExperimentError> {
        // queues: memcached client NIC out/in, the blaster's NIC, the server's link in/out
        let net = network(
            &[
                ("client-out", setup.nic_rate),
                ("client-in", setup.nic_rate),
                ("udp-host-out", setup.nic_rate),
                ("server-in", setup.link_rate),
                ("server-out", setup.link_rate),
            ],
            &[
                ("memcached", vec![vec![0, 3], vec![4, 1]]),
                ("blaster", vec![vec![2, 3]]),
            ],
        )?;
        let request = NetworkCost::REQUEST_DIRECTION;
        let per_request = request.header_bytes + request.write_per_byte * setup.object_bytes as f64;
        let spec = GenSpec {
            arrival: ArrivalModel::Poisson {
                rate_per_s: setup.memcached_load * setup.link_rate / per_request,
            },
            sizes: SizeDist::Fixed {
                bytes: setup.object_bytes,
            },
            read_fraction: 0.0,
            duration_s: setup.latency_duration_s,
            vocabulary: Vocabulary::KeyValue,
        };
        // memcached joins after the warm-up, as a tenant joining a busy host
        let start_ns = (setup.warmup_s * NS_PER_S).round() as u64;
        let mut memcached = generate(&spec, seed)?.requests;
        for r in &mut memcached {
            r.arrival_ns += start_ns;
        }
        let udp = if row.blaster() {
            blaster(setup, seed, setup.warmup_s + setup.latency_duration_s).0
        } else {
            Vec::new()
        };
        let response = NetworkCost::RESPONSE_DIRECTION;
        let workloads = [
            TenantWorkload {
                requests: &memcached,
                works: vec![&request, &response],
            },
            TenantWorkload {
                requests: &udp,
                works: vec![&SizeWork],
            },
        ];
        let cfg = SimConfig {
            eyeq: row.eyeq().then(|| eyeq_sim(setup, vec![3, 1], 2)),
            shaper_queue_bytes: Some(setup.sender_queue_bytes as f64),
            ..SimConfig::default()
        };
        let r = simulate(&net, &workloads, &cfg)?;
        let t = &r.tenants[0];
        Ok(LatencyRun {
            requests: t.latencies_ns.len(),
            dropped: t.dropped,
            p50_s: quantile_s(&t.latencies_ns, 0.5),
            p999_s: quantile_s(&t.latencies_ns, 1e-3),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick() -> EyeqSetup {
        EyeqSetup {
            duration_s: 0.2,
            warmup_s: 0.05,
            latency_duration_s: 0.5,
            ..EyeqSetup::default()
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let s = EyeqSetup {
            link_rate: -1.0,
            ..EyeqSetup::default()
        };
        let e = s.validate().unwrap_err();
        assert!(e.to_string().contains("link_rate = -1"), "{e}");
        let s = EyeqSetup {
            warmup_s: 1.0,
            ..EyeqSetup::default()
        };
        assert!(s.validate().unwrap_err().to_string().contains("warmup_s"));
        let s = EyeqSetup {
            capacity_fraction: 1.5,
            ..EyeqSetup::default()
        };
        assert!(s
            .validate()
            .unwrap_err()
            .to_string()
            .contains("capacity_fraction = 1.5"));
        let e = run(&Simulator, &quick(), &[], &[Mode::Eyeq], &[], || {}).unwrap_err();
        assert!(matches!(e, EyeqExperimentError::NoSeeds));
    }

    #[test]
    fn blaster_keeps_its_on_off_shape() {
        let s = EyeqSetup::default();
        let (reqs, on) = blaster(&s, 7, 1.0);
        // 50 whole periods in 1 s, and a truncated one at 0 when the phase puts it there
        assert!((50..=51).contains(&on.len()), "{on:?}");
        for w in on.windows(2) {
            assert!((w[1].0 - w[0].0 - 0.02).abs() < 1e-9 || w[0].0 == 0.0);
        }
        // every datagram inside an on period; mean rate 2.5 Gbit/s while on (± 5 %)
        assert!(reqs.iter().all(|r| {
            let t = r.arrival_ns as f64 / 1e9;
            on.iter().any(|&(a, b)| a <= t && t < b)
        }));
        let on_s: f64 = on.iter().map(|(a, b)| b - a).sum();
        let rate = reqs.len() as f64 * 1500.0 / on_s;
        assert!((rate / s.blaster_rate - 1.0).abs() < 0.05, "{rate}");
    }

    #[test]
    fn shares_count_only_bins_inside_the_periods() {
        let s = EyeqSetup {
            duration_s: 0.04,
            warmup_s: 0.0,
            bin_s: 0.01,
            ..EyeqSetup::default()
        };
        // on during [0.005, 0.025): bins 1 is wholly inside; bin 3 wholly outside
        let run = ThroughputRun {
            tcp_bytes: vec![1, 312_500, 2, 625_000],
            blaster_bytes: vec![0, 625_000, 0, 0],
            blaster_on: vec![(0.005, 0.025)],
            feedback_messages: 4,
            agents: None,
        };
        let t = throughput_seed(&s, 1, &run);
        assert!((t.share_of_guarantee - 0.5).abs() < 1e-12, "{t:?}");
        assert!((t.share_of_guarantee_while_off - 1.0).abs() < 1e-12);
        assert!((t.blaster_share_of_guarantee - 1.0).abs() < 1e-12);
        assert_eq!(t.feedback_per_s, 100.0);
    }
}
