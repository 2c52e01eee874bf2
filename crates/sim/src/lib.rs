//! Deterministic discrete-event replay of request traces through a
//! [`Network`](tailbound_model::Network): the check behind every bound (snc-meister §5.4,
//! workload-compactor §4.2/§5.2; `shared/DESIGN.md`, Verification: Simulator).
//!
//! The engine ([`simulate`]) does no I/O, reads no clock and draws no random numbers. It
//! takes a network and requests, never files: [`replay`] applies a policy's
//! [`Decisions`](tailbound_model::Decisions) (who runs, priorities, servers, rate limits) as a
//! [`Plan`] to a network and each tenant's requests (a scenario's held-out halves, which the
//! caller loads with `tailbound-scenario`), runs the engine, and searches OPT (snc-meister
//! §6.2). The `tailbound simulate` and `tailbound opt` commands are thin wrappers. The soundness harness (`tests/integration/soundness.rs`) checks the engine
//! against the calculus on random scenarios: simulated max ≤ DNC bound, simulated p99.9 ≤
//! SNC-Meister bound (plus the packetization allowance).
//!
//! # What it models
//!
//! ```text
//!  trace arrival ──► [shaper of flow 1] ──► q1 ──► q2 ──► … ──► [shaper of flow 2] ──► … ──► done
//!                     token bucket,          strict priority between tenants' levels,
//!                     FIFO per flow          FIFO within a level, store-and-forward per chunk
//! ```
//!
//! * **Open loop.** Each request of each tenant enters at its trace `arrival_ns`, whatever
//!   the state of the system.
//! * **Stages.** A request crosses its tenant's flows in the order of
//!   [`TenantSpec::flows`](tailbound_model::TenantSpec::flows) (request `<t>-req`, optional
//!   storage `<t>-storage`, response `<t>-resp` for scenario networks). On each flow it puts
//!   the work of that flow's work function (bytes on links, busy-seconds on storage,
//!   matching the queue rates [work/s]). A stage starts when the previous stage's last unit
//!   has left its last queue.
//! * **Shapers.** Optionally token buckets per flow ([`Bucket`]: rate [work/s], burst
//!   [work], full at the earliest arrival), the sans-IO `tailbound_shaping::TokenBucket` the
//!   enforcer also runs. Requests wait FIFO; the head passes when every bucket of the flow
//!   allows its whole stage work (`TokenBucket::take`: `min(work, burst)` tokens present; a
//!   request larger than the burst waits for a full bucket and leaves a deficit) and is
//!   charged to all of them — one bucket for a plain rate limit, several for a concave
//!   arrival curve (PriorityMeister). With [`Excess::BestEffort`] a request the buckets cannot
//!   pass now does not wait: it goes on at once, without taking tokens, at a best-effort
//!   level below every tenant's (at every queue of that stage), and keeps its place in the
//!   shaper's FIFO; when its tokens come it is charged and its units not yet served move to
//!   the tenant's level (HTB's borrowing). If it finishes first, it takes no tokens.
//! * **Chunks.** With [`Transmission::Chunked`] the work of a link flow is cut into
//!   `mtu_bytes` units (the last one partial). Each chunk crosses the flow's queues
//!   store-and-forward: it enters queue k+1 the instant it leaves queue k (no propagation
//!   delay), so a request's chunks pipeline across hops: alone on an h-hop path of rate R a
//!   request of S bytes (a multiple of the MTU) takes S/R + (h−1)·mtu/R. Storage flows and
//!   [`Transmission::Fluid`] serve every request as one unit per queue, so fluid
//!   mode is whole-request store-and-forward (h·S/R alone on h hops) — the classic
//!   non-preemptive M/G/1 queue on one hop.
//! * **Scheduling.** Each queue serves one unit at a time at its `rate`. Between units it
//!   picks the head of the highest non-empty priority level (0 highest; from
//!   [`Network::priorities`](tailbound_model::Network::priorities) unless
//!   [`SimConfig::priorities`] overrides), FIFO within a level.
//!   Priority thus preempts at chunk boundaries, never within a unit. A request's chunks
//!   enter its first queue together, so at the first hop they are not interleaved with those
//!   of later arrivals at the same level.
//! * **Latency** = time the last unit of the last stage leaves its last queue − trace arrival
//!   [ns], shaper waits and queueing included.
//!
//! # Time and units
//!
//! Time is `u64` nanoseconds of trace time. A unit's service time is `work / rate` rounded to
//! the nearest ns (at most 0.5 ns error per unit). Events at the same instant run in the order
//! they were scheduled, so results are a pure function of the inputs.
//!
//! # Outputs
//!
//! Per tenant ([`TenantResult`]): requests, bytes, exact nearest-rank p50/p90/p99/p99.9/max,
//! and for every window of arrival time ([`SimConfig::window_s`], default 3 minutes, counted
//! from the earliest arrival of any tenant) the p99.9 and the SLO percentile. `meets_slo`
//! holds when every window's SLO percentile is ≤ the SLO latency (the papers' check). Per
//! queue ([`QueueStats`]): units, work, busy time, last departure.
//!
//! # EyeQ and closed-loop tenants
//!
//! With [`SimConfig::eyeq`], an EyeQ receiver (`tailbound_shaping::eyeq::Receiver`) watches
//! each listed link: every chunk leaving it is an arrival at the receiving host, and the
//! feedback it returns reaches the sending flow's per-destination limiter
//! (`tailbound_shaping::eyeq::DestinationLimiter`, in front of the flow's first queue, with
//! its token buckets if any) [`EyeqSim::feedback_delay_ns`] later. The limiter holds whole
//! requests of the stage (FIFO, like the token buckets). [`SimConfig::closed_loop`] makes a
//! tenant window-limited (a long-lived TCP connection without loss);
//! [`SimConfig::throughput_bin_ns`] records delivered bytes over time.
//!
//! # Pulsar
//!
//! Pulsar's closed-loop VDC simulation is its own crate, `tailbound-vdc-sim`; it shares only
//! the [`EventQueue`] with this one.
//!
//! # Not yet
//!
//! Propagation delays, TCP dynamics, finite buffers (queues are unbounded; nothing is
//! dropped).

mod engine;
mod error;
pub mod event;
pub mod replay;
mod stats;

pub use engine::{simulate, EyeqReceiverResult, QueueStats, SimResult};
pub use error::SimError;
pub use event::EventQueue;
pub use replay::{opt, opt_greedy, Opt, Plan, Replay, ReplayError};
pub use stats::{nearest_rank, TenantResult, Window};
pub use tailbound_model::Excess;

use tailbound_curves::WorkFunction;
use tailbound_model::{Bucket, Request, ETHERNET_MTU_BYTES, SLO_WINDOW_S};
use tailbound_shaping::eyeq::EyeqConfig;

/// How links carry work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transmission {
    /// link flows carry work in packets of `mtu_bytes` [bytes]
    Chunked { mtu_bytes: u64 },
    /// every request is one unit at every queue
    Fluid,
}

impl Default for Transmission {
    /// Ethernet packets ([`ETHERNET_MTU_BYTES`])
    fn default() -> Self {
        Transmission::Chunked {
            mtu_bytes: ETHERNET_MTU_BYTES,
        }
    }
}

/// EyeQ in the replay (shared/papers/eyeq.txt, `tailbound_shaping::eyeq`): a receiver on
/// each receiving link measures what leaves that link, and every flow that crosses one gets
/// a per-destination limiter in front of its first queue, driven by the receiver's feedback.
#[derive(Debug, Clone, PartialEq)]
pub struct EyeqSim {
    /// EyeQ's parameters; each receiver's `line_rate` is its queue's rate (the one given
    /// here is replaced)
    pub config: EyeqConfig,
    /// the queues an EyeQ receiver watches: links into receiving hosts, indexed like
    /// [`Network::queues`](tailbound_model::Network::queues)
    pub receivers: Vec<usize>,
    /// guarantee weight per network tenant (e.g. its guaranteed rate)
    pub weights: Vec<f64>,
    /// how long a feedback message takes to reach the sender [ns]
    pub feedback_delay_ns: u64,
}

/// A closed-loop tenant: at most `window` requests in flight, the next one entering
/// `ack_delay_ns` after one completes (or at its trace arrival, if later). A long-lived TCP
/// connection is such a tenant with segments as requests, all due at its start: its rate
/// adapts to its share of the bottleneck through the window (ACK clocking), with no loss
/// and no congestion-window changes (the simulator's queues are unbounded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedLoop {
    /// requests in flight at most (≥ 1)
    pub window: u32,
    /// from a completion to the next request's entry (the ACK's trip) [ns]
    pub ack_delay_ns: u64,
}

/// How to run a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    pub transmission: Transmission,
    /// priority level per tenant (0 highest), overriding
    /// [`Network::priorities`](tailbound_model::Network::priorities)
    pub priorities: Option<Vec<u32>>,
    /// the token buckets in front of each flow, indexed like
    /// [`Network::flows`](tailbound_model::Network::flows): a request passes when every
    /// bucket of its flow allows its work (PriorityMeister's several rate limits per flow);
    /// an empty list, or an empty `shapers`, means unshaped
    pub shapers: Vec<Vec<Bucket>>,
    /// length of the SLO-check windows [s]
    pub window_s: f64,
    /// what shapers do with excess requests
    pub excess: Excess,
    /// EyeQ's receivers and limiters ([`EyeqSim`]); requires [`Excess::Wait`]
    pub eyeq: Option<EyeqSim>,
    /// closed-loop tenants, indexed like the network's tenants; empty or `None` = open loop
    pub closed_loop: Vec<Option<ClosedLoop>>,
    /// record every tenant's delivered bytes per bin of this length [ns] (see
    /// [`SimResult::throughput`])
    pub throughput_bin_ns: Option<u64>,
    /// with [`Excess::Wait`]: an open-loop request that finds at least this much work
    /// waiting at its flow's shaper (token buckets, EyeQ's limiter) is dropped, as a
    /// sender's full qdisc drops a datagram (EyeQ's limiter queue holds 128 KiB); closed-loop
    /// tenants are never dropped (their window bounds what waits); `None` = unbounded
    pub shaper_queue_bytes: Option<f64>,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            transmission: Transmission::default(),
            priorities: None,
            shapers: Vec::new(),
            window_s: SLO_WINDOW_S,
            excess: Excess::Wait,
            eyeq: None,
            closed_loop: Vec::new(),
            throughput_bin_ns: None,
            shaper_queue_bytes: None,
        }
    }
}

/// One tenant's input: its requests sorted by arrival, and the work function of each of its
/// flows, in the order of its [`TenantSpec::flows`](tailbound_model::TenantSpec::flows), in
/// the unit of the flow's queues. Whether a flow's work is carried in packets follows from its
/// stage ([`tailbound_model::Stage::is_link`]).
#[derive(Clone)]
pub struct TenantWorkload<'a> {
    pub requests: &'a [Request],
    pub works: Vec<&'a dyn WorkFunction>,
}

impl std::fmt::Debug for TenantWorkload<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantWorkload")
            .field("requests", &self.requests.len())
            .field(
                "works",
                &self.works.iter().map(|w| w.unit()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Work equal to the request's size: `size_bytes` [bytes] (tests, synthetic workloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SizeWork;

impl WorkFunction for SizeWork {
    fn work(&self, req: &Request) -> f64 {
        req.size_bytes as f64
    }
    fn unit(&self) -> &'static str {
        "bytes"
    }
}
