//! EyeQ's receiver-driven rate control (shared/papers/eyeq.txt) as sans-IO state machines: the
//! receiver's congestion detector and RCP-style rate controller ([`Receiver`]), and the
//! sender's per-destination rate limiters, bypassed while the destination is uncongested
//! ([`DestinationLimiter`], [`Sender`]).
//!
//! Nothing here reads a clock or touches a socket. The simulator (`tailbound-sim`) drives
//! these objects on virtual time; the dataplane's receiver agent and traffic generators
//! (`tailbound-dataplane::eyeq`) drive the very same objects on real time and carry
//! [`Feedback`] in UDP datagrams.
//!
//! # The receiver
//!
//! One [`Receiver`] watches one receiving link of line rate `L` [bytes/s], shared by the
//! receiver's tenants (EyeQ's VMs), each with a guarantee weight `w_t`. Every packet that
//! arrives is reported with [`Receiver::on_arrival`] (sender, tenant, bytes). Every
//! `interval` T (EyeQ: "recompute R_i every 200us"), for the interval just ended:
//!
//! 1. **Arrival rates.** `y_t` = tenant t's bytes over the last two intervals / 2T
//!    [bytes/s] (one interval holds a few TCP segments at 1 Gbit/s; a two-interval window
//!    halves the error of segments straddling a boundary).
//! 2. **Congestion detector.** A virtual queue drains at `C` = `capacity_fraction` × `L`
//!    (EyeQ: 98 %, so that the real queue stays empty at the fixed point). Each tenant's
//!    arrivals join its virtual backlog (capped at `backlog_intervals` × `C`·T); the
//!    interval's `C`·T bytes of service are shared by weight among the tenants that want
//!    them (weighted fair sharing, unused shares redistributed: water-filling). A tenant
//!    wants its backlog, but at least its recent peak per interval (decaying by
//!    `reserve_decay` = 0.9 per interval), and a limited tenant that *presses on its
//!    limit* (its senders deliver ≥ 90 % of what their limiters allow, or a limited tenant
//!    silent in the interval before sends again) wants everything: its demand is hidden.
//!    A tenant is **congested** when it presses on its limit or its virtual backlog
//!    exceeds `tolerance_intervals` = 1 interval of `C` (more than its weighted fair share
//!    for longer than a burst). A congested tenant's share `C_t` is its service in the
//!    interval / T: its guarantee `C`·`w_t`/Σw when every tenant wants more, more when
//!    others use less (work conservation).
//! 3. **Rate controller** (EyeQ's slide, "Determining rate"): each congested tenant has one
//!    rate `R_t` that every sender to it is told, updated as
//!    `R_t ← R_t (1 − α (y_t − C_t) / C_t)` with α = 0.5, kept in `[min_rate, C_t]`. No
//!    per-source state is needed for the rate: with k bottlenecked senders, `y_t` = k·`R_t`
//!    and the fixed point is `R_t = C_t / k`. A tenant that just became congested starts at
//!    `C_t / k` with k the senders seen in the interval. While `y_t` exceeds 1.5 × what the
//!    tenant's limits allow, the bytes were sent before the limits (a queue in front of the
//!    receiver draining) and the rate holds instead of being cut again for them.
//!
//!    **Queue term.** The law alone drives arrivals to `C`, 2 % below the line rate, so a
//!    queue that stands in front of the receiver (a burst before the limits, a light
//!    tenant's requests on top of a limited tenant at its share) drains at 2 % of the line
//!    rate at best. EyeQ's code (`vq.c`, "ECN1") has the switch mark ECN above a threshold
//!    (`ISO_ECN_MARK_THRESH_BYTES`, 30 packets: 36 µs at 10 Gbit/s) and counts a tenant's
//!    marked arrivals as `y_t += threshold × (1 + marked fraction) / T`, capped at 3 `C_t`,
//!    which keeps cutting the rates until the queue is below the threshold. With `ecn` the
//!    driver reports each arrival's mark ([`Receiver::on_marked_arrival`]; EyeQ's senders
//!    set ECT on every packet and its receiver clears CE before the stack) and the term is
//!    exactly that, per tenant, with the threshold `mark_threshold_s × L`. Without marks
//!    (a driver whose switches cannot mark) the receiver infers the queue from the link: a
//!    link that delivered more than half way from `C` to its line rate over the last two
//!    intervals had a queue throughout (at the fixed point it delivers `C`, with a queue
//!    exactly its line rate). Such an interval counts as every packet marked: each
//!    congested tenant's `y_t` grows by `2 × mark_threshold_s × L / T`. Either way it is
//!    capped at 3 `C_t`, and the term takes back only what a tenant has beyond its
//!    guarantee: it never sets `R_t`
//!    below `C`·`w_t`/Σw/k unless the law without it would (EyeQ's marks fall on every
//!    tenant in the queue; ours would otherwise cut a greedy tenant that had grown into a
//!    blaster's idle share, when the blaster returns, far below its guarantee).
//! 4. **Release.** A limited tenant that is not congested keeps its rate, so that an on/off
//!    sender's next burst starts limited; it is released (unlimited: its senders bypass
//!    their limiters) after `hold` without being congested.
//!
//! *Ours rather than the slides' or EyeQ's code* (each found wanting in the simulator or
//! the op-scripts without it):
//! * the two-interval `y_t`: with one interval, 8 KiB segments at 1 Gbit/s biased the law
//!   downwards (a window-limited connection got 88 % of its share beside a blaster);
//! * the burst tolerance: the original counts a tenant active as soon as its virtual queue
//!   holds a byte, which limits a light, bursty tenant such as memcached for two requests
//!   in one interval (its simulated p99.9 tripled beside a limited blaster);
//! * the reservation of a tenant's recent peak: without it a limited tenant pressing on its
//!   limit takes all of `C` whenever a light tenant is idle for an interval, and the light
//!   tenant's next request queues behind it at the real link (the memcached tail again);
//! * the weighted fair share as `C_t`: the original shares `C` among congested tenants
//!   only, which lets one aim at the whole of `C` beside an uncongested one using part of it;
//! * pressing tenants counted as unbounded demand, including when a limited tenant returns
//!   (otherwise a tenant held below its share by its own limit, or squeezed by the FIFO
//!   at the start of a burst, looks satisfied and never gets its share back);
//! * the slow release: the original releases a tenant as soon as its virtual queue drains,
//!   so an on/off blaster starts every burst unlimited;
//! * the starting rate `C_t / k`, and holding the rate on stale arrivals (without it one
//!   unlimited burst drove every simulated rate to `min_rate`);
//! * the queue term's signal where nothing marks: a saturated link instead of ECN marks (on
//!   the testbed a limited blaster at its work-conserving share plus memcached's Poisson
//!   requests kept a standing queue of 15–60 kB, 1–5 ms, through every burst without any
//!   queue term). It fires 5–25 ms (0.5–2.5 intervals) later than marks at the threshold
//!   would, which is why the testbed reads its switch port's queue instead (marks).
//!
//! *Limits*: the law assumes the bottleneck's queueing delay is a few intervals (shallow
//! switch buffers). A window-limited sender whose window is many intervals' worth of bytes
//! keeps a standing queue in an unbounded FIFO, every measurement lags by its delay and the
//! rates oscillate (a 1 MiB TCP window beside the blaster at 1 Gbit/s in the simulator:
//! 20–100 % of its share per 5 ms). Without marks the queue term sees a standing queue only
//! once it saturates the link for two intervals, not its depth (a dequeue-marking variant of
//! that inference, measured in the simulator, cut rates harder under the same lag and is not
//! included).
//!
//! **Feedback.** While a tenant is limited, each of its senders gets a
//! [`Feedback::Limit`] with `R_t` from [`Receiver::on_arrival`] after every
//! `feedback_bytes` it sends (EyeQ: "rate feedback (R) every 10kB") or `feedback_ns` since
//! its last feedback, whichever comes first, and at once when its tenant becomes limited.
//! A sender that was told a limit gets one [`Feedback::Release`] when its tenant is
//! released. Unlimited tenants' senders get nothing.
//!
//! # The sender
//!
//! A [`DestinationLimiter`] sits in front of one destination (a receiving tenant on a host).
//! Without a limit it passes everything (EyeQ: "per-destination rate limiters: only if dest.
//! is congested... bypass otherwise"). A [`Feedback::Limit`] installs or updates a
//! [`TokenBucket`] of that rate and a burst of `max(rate × burst_s, min_burst_bytes)`;
//! [`Feedback::Release`], or `hold` without feedback, removes it. [`Sender`] keeps one per
//! destination.
//!
//! # Stability
//!
//! With every sender of a congested tenant bottlenecked at its limiter (`y_t` = k·`R_t`)
//! and shares fixed, write `x = y_t / C_t`. One update gives `x' − 1 = (1 − α x)(x − 1)`.
//! For `0 < x < 1/α` the factor `1 − α x` is in (0, 1): the rate approaches its fair share
//! from the side it started on and never overshoots it, the error shrinking by `1 − α` = 0.5
//! per interval near the fixed point. The two-interval `y_t` adds half an interval of lag:
//! near 1, `e'' = (1 − α/2) e' − (α/2) e` for the error `e = x − 1`, whose characteristic
//! roots are complex with modulus √(α/2) = 0.5, so a disturbance may overshoot once but
//! halves every interval: no sustained oscillation. A measurement error of ε (packets
//! straddling an interval boundary) moves the rate by at most α·ε per interval and then
//! decays, so the rate stays within about ε of the fair share: the oscillation bound is the
//! measurement granularity (a packet per `C_t`·T), which the op-script tests assert.
//!
//! Units: time in `u64` ns on the caller's clock (monotone; an earlier `now` is treated as
//! the last one), bytes, rates in bytes/s.

use crate::token_bucket::{NotReady, TokenBucket};
use std::collections::HashMap;
use std::hash::Hash;

const NS_PER_S: f64 = 1e9;

/// Bytes one feedback message occupies on the wire: a minimum Ethernet frame, as EyeQ's
/// (its code sends 64-byte feedback packets). tailbound's UDP encoding
/// (`tailbound-dataplane::eyeq::wire`) is 16 bytes of payload + 8 UDP + 20 IPv4 + 18
/// Ethernet = 62, padded to the 64-byte minimum.
pub const FEEDBACK_FRAME_BYTES: u64 = 64;

/// Invalid EyeQ settings or inputs. Returned before any state changes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EyeqError {
    /// A setting is out of range.
    #[error("invalid EyeQ setting {field} = {value}; expected {expected}")]
    Setting {
        /// the setting's name
        field: &'static str,
        /// the rejected value
        value: f64,
        /// what is accepted
        expected: &'static str,
    },
    /// A tenant's guarantee weight is not a finite number > 0.
    #[error("tenant {tenant}: invalid guarantee weight {weight}; expected a finite weight > 0 (e.g. its guaranteed rate)")]
    Weight {
        /// index of the tenant
        tenant: usize,
        /// the rejected weight
        weight: f64,
    },
    /// A receiver needs at least one tenant.
    #[error("an EyeQ receiver needs at least one tenant (receiving VM) with a guarantee weight")]
    NoTenants,
    /// An arrival names a tenant the receiver does not have.
    #[error("unknown tenant {tenant}: this receiver has tenants 0..{tenants}")]
    UnknownTenant {
        /// the index given
        tenant: usize,
        /// how many tenants the receiver has
        tenants: usize,
    },
    /// Feedback carries a rate that is not finite and > 0.
    #[error("feedback rate {rate} B/s is invalid; a limit must be a finite rate > 0")]
    FeedbackRate {
        /// the rejected rate [bytes/s]
        rate: f64,
    },
}

/// EyeQ's parameters. [`EyeqConfig::new`] gives the defaults for a line rate.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EyeqConfig {
    /// line rate of the receiving link `L` [bytes/s]
    pub line_rate: f64,
    /// the virtual queue drains at `C` = this × `L` (EyeQ: 0.98)
    pub capacity_fraction: f64,
    /// rate-controller period T [ns] (EyeQ: 200 µs)
    pub interval_ns: u64,
    /// aggressiveness α of `R ← R(1 − α(y − C)/C)` (EyeQ: 0.5), in (0, 1]
    pub alpha: f64,
    /// the lowest rate a sender is ever told [bytes/s] (EyeQ's code: 1 Mbit/s)
    pub min_rate: f64,
    /// feedback to a limited sender after this many bytes from it (EyeQ: 10 kB)
    pub feedback_bytes: u64,
    /// ... or this long after its last feedback [ns] (EyeQ's code: 100 µs)
    pub feedback_ns: u64,
    /// a tenant's virtual backlog is capped at this many intervals of `C` [intervals]
    pub backlog_intervals: f64,
    /// a tenant whose virtual backlog is at most this many intervals of `C` is not
    /// congested: bursts shorter than that pass unlimited [intervals]
    pub tolerance_intervals: f64,
    /// each tenant's share of the virtual queue covers at least its recent peak of bytes
    /// per interval, which decays by this factor per interval, so that a bursty tenant's
    /// next burst finds room (0 = no memory: only backlogs count) [per interval]
    pub reserve_decay: f64,
    /// a silent sender or tenant is forgotten, and a limiter without feedback bypassed,
    /// after this long [ns]
    pub hold_ns: u64,
    /// a limiter's bucket holds `rate × burst_s` [s] (a quarter of the interval: a full
    /// bucket then overstates one interval's arrival rate by at most 25 %; EyeQ's code
    /// allows 150 µs at its 25 µs update interval) ...
    pub burst_s: f64,
    /// ... but at least this much [bytes] (two Ethernet frames by default)
    pub min_burst_bytes: f64,
    /// the rate controller's queue term: while the receiving link is saturated (a standing
    /// queue in front of it), each congested tenant's arrival rate counts
    /// `2 × mark_threshold_s × L / T` more, as EyeQ's code counts a tenant's ECN-marked
    /// arrivals with a marking threshold of this long at line rate (30 packets of 1500 B at
    /// 10 Gbit/s: 36 µs); 0 = no queue term [s]
    pub mark_threshold_s: f64,
    /// the driver says which arrivals carry an ECN mark (CE: the switch port's queue was
    /// above `mark_threshold_s` at line rate, as EyeQ's switches mark): the queue term then
    /// counts each tenant's marked arrivals as EyeQ's code does (ECN1) instead of inferring
    /// a queue from a saturated link
    #[serde(default)]
    pub ecn: bool,
    /// the receiver tracks at most this many (sender, tenant) pairs for feedback
    pub max_senders: usize,
}

impl EyeqConfig {
    /// EyeQ's parameters for a receiving link of `line_rate` [bytes/s]: C = 98 % of it,
    /// T = 200 µs, α = 0.5, rates ≥ 1 Mbit/s (or 1 % of the line rate, if less), feedback
    /// every 10 kB or 100 µs, virtual backlogs of at most 8 intervals of C, congestion above
    /// one interval of C (bursts up to that pass), hold 100 ms,
    /// limiter bursts of 50 µs at the limit (at least 3000 B), a queue term with EyeQ's
    /// marking threshold of 36 µs at line rate.
    pub fn new(line_rate: f64) -> EyeqConfig {
        EyeqConfig {
            line_rate,
            capacity_fraction: 0.98,
            interval_ns: 200_000,
            alpha: 0.5,
            min_rate: (1e6 / 8.0_f64).min(line_rate * 0.01),
            feedback_bytes: 10_000,
            feedback_ns: 100_000,
            backlog_intervals: 8.0,
            tolerance_intervals: 1.0,
            reserve_decay: 0.9,
            hold_ns: 100_000_000,
            burst_s: 50e-6,
            min_burst_bytes: 3000.0,
            mark_threshold_s: 36e-6,
            ecn: false,
            max_senders: 4096,
        }
    }

    /// `C` = `capacity_fraction` × `line_rate` [bytes/s].
    pub fn capacity(&self) -> f64 {
        self.capacity_fraction * self.line_rate
    }

    /// The bucket depth of a limiter at `rate` [bytes].
    pub fn burst(&self, rate: f64) -> f64 {
        (rate * self.burst_s).max(self.min_burst_bytes)
    }

    /// Checks every setting.
    ///
    /// # Errors
    /// [`EyeqError::Setting`] naming the first setting out of range and what is accepted.
    pub fn validate(&self) -> Result<(), EyeqError> {
        let bad = |field, value: f64, expected| {
            Err(EyeqError::Setting {
                field,
                value,
                expected,
            })
        };
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !pos(self.line_rate) {
            return bad(
                "line_rate",
                self.line_rate,
                "a finite rate > 0 [bytes/s], e.g. 1.25e8 for 1 Gbit/s",
            );
        }
        if !(pos(self.capacity_fraction) && self.capacity_fraction <= 1.0) {
            return bad(
                "capacity_fraction",
                self.capacity_fraction,
                "a fraction in (0, 1], e.g. 0.98",
            );
        }
        if self.interval_ns == 0 {
            return bad("interval_ns", 0.0, "a period > 0 [ns], e.g. 200000");
        }
        if !(pos(self.alpha) && self.alpha <= 1.0) {
            return bad("alpha", self.alpha, "a gain in (0, 1], e.g. 0.5");
        }
        if !(pos(self.min_rate) && self.min_rate < self.capacity()) {
            return bad(
                "min_rate",
                self.min_rate,
                "a rate > 0 and below capacity_fraction x line_rate [bytes/s]",
            );
        }
        if self.feedback_bytes == 0 {
            return bad("feedback_bytes", 0.0, "at least 1 byte, e.g. 10000");
        }
        if self.feedback_ns == 0 {
            return bad("feedback_ns", 0.0, "a period > 0 [ns], e.g. 100000");
        }
        if !pos(self.backlog_intervals) || self.backlog_intervals > 64.0 {
            return bad(
                "backlog_intervals",
                self.backlog_intervals,
                "a number of intervals in (0, 64], e.g. 8",
            );
        }
        if !(self.tolerance_intervals.is_finite()
            && self.tolerance_intervals >= 0.0
            && self.tolerance_intervals < self.backlog_intervals)
        {
            return bad(
                "tolerance_intervals",
                self.tolerance_intervals,
                "a number of intervals >= 0 and below backlog_intervals, e.g. 1",
            );
        }
        if !(self.reserve_decay.is_finite() && (0.0..1.0).contains(&self.reserve_decay)) {
            return bad(
                "reserve_decay",
                self.reserve_decay,
                "a factor per interval in [0, 1), e.g. 0.9",
            );
        }
        if self.hold_ns < self.interval_ns {
            return bad(
                "hold_ns",
                self.hold_ns as f64,
                "at least one interval [ns], e.g. 100000000",
            );
        }
        if !(self.burst_s.is_finite() && self.burst_s >= 0.0) {
            return bad(
                "burst_s",
                self.burst_s,
                "a finite duration >= 0 [s], e.g. 150e-6",
            );
        }
        if !(self.min_burst_bytes.is_finite() && self.min_burst_bytes >= 0.0) {
            return bad(
                "min_burst_bytes",
                self.min_burst_bytes,
                "a finite size >= 0 [bytes], e.g. 3000",
            );
        }
        if !(self.mark_threshold_s.is_finite() && self.mark_threshold_s >= 0.0) {
            return bad(
                "mark_threshold_s",
                self.mark_threshold_s,
                "a finite duration >= 0 [s], e.g. 36e-6 (0: no queue term)",
            );
        }
        if self.max_senders == 0 {
            return bad("max_senders", 0.0, "at least 1 tracked sender");
        }
        Ok(())
    }

    fn interval_s(&self) -> f64 {
        self.interval_ns as f64 / NS_PER_S
    }
}

/// What a receiver tells one sender about one of its tenants.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Feedback {
    /// the tenant is congested: send to it at most this rate [bytes/s]
    Limit {
        /// [bytes/s]
        rate: f64,
    },
    /// the tenant is no longer congested: bypass the limiter
    Release,
}

/// One tenant's state as the receiver last computed it (for reports and tests).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TenantStatus {
    /// the rate every sender to it is told [bytes/s]; `None` = unlimited
    pub rate: Option<f64>,
    /// arrival rate `y_t` in the last interval [bytes/s]
    pub arrival_rate: f64,
    /// its share `C_t` in the last interval [bytes/s] while congested, else 0
    pub share: f64,
    /// its virtual backlog [bytes]
    pub backlog: f64,
    /// distinct senders in the last interval
    pub senders: u32,
}

/// Counters of a receiver since it was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ReceiverStats {
    /// intervals closed
    pub intervals: u64,
    /// [`Feedback::Limit`] messages returned
    pub limits: u64,
    /// [`Feedback::Release`] messages returned
    pub releases: u64,
    /// arrivals from senders beyond `max_senders`, which are counted but get no feedback
    pub untracked_arrivals: u64,
    /// intervals that closed with the queue term applied (the link saturated, or with `ecn`
    /// marked arrivals)
    #[serde(default)]
    pub saturated_intervals: u64,
    /// arrivals that carried an ECN mark (`ecn`)
    #[serde(default)]
    pub marked_arrivals: u64,
}

#[derive(Debug, Clone, Copy)]
struct TenantState {
    weight: f64,
    /// bytes in the current interval
    bytes: u64,
    /// packets in the current interval, and how many of them carried an ECN mark
    packets: u32,
    marked: u32,
    /// distinct senders in the current interval
    senders: u32,
    backlog: f64,
    rate: Option<f64>,
    last_arrival_ns: u64,
    /// the last interval in which it was congested
    congested_interval: u64,
    /// its recent peak of bytes per interval, decaying: the virtual queue keeps this much
    /// of `C` for it [bytes]
    reserved: f64,
    /// bytes in the interval before the current one
    prev_bytes: u64,
    /// arrival rate over the last two intervals [bytes/s]
    smoothed_rate: f64,
    /// scratch of `close_interval`: limited and delivering what its limit allows
    pressing: bool,
    /// scratch of `close_interval`: over its share or pressing
    congested: bool,
    status: TenantStatus,
}

#[derive(Debug, Clone, Copy)]
struct SenderState {
    bytes_since_feedback: u64,
    last_feedback_ns: u64,
    last_seen_ns: u64,
    /// index of the interval it was last counted in
    seen_interval: u64,
    /// its last feedback was a limit
    limited: bool,
}

/// EyeQ's receive side for one link: congestion detector, rate controller, feedback. `K`
/// names a sender (an address, a flow index). See the module docs.
#[derive(Debug, Clone)]
pub struct Receiver<K> {
    cfg: EyeqConfig,
    tenants: Vec<TenantState>,
    senders: HashMap<(K, usize), SenderState>,
    /// end of the current interval [ns]
    interval_end_ns: u64,
    /// index of the current interval
    interval: u64,
    /// latest time seen [ns]
    now_ns: u64,
    /// when silent senders and tenants were last swept [ns]
    swept_ns: u64,
    stats: ReceiverStats,
    /// scratch for water-filling: tenant indices
    order: Vec<usize>,
    /// the last interval closed with a standing queue in front of the link (the queue term
    /// applied)
    queued: bool,
}

/// Idle intervals closed one by one before the rest of a silence is skipped. After 64
/// intervals without arrivals every virtual backlog has drained (backlogs are capped at 64
/// intervals of `C`) and every limited rate has grown by `(1 + α)^64` (≥ 10^11 at α = 0.5),
/// so closing the skipped intervals would change nothing; with a tiny α a rate may still be
/// limited, which it would have been anyway, and `hold` releases it.
const MAX_IDLE_INTERVALS: u64 = 64;

/// A limited tenant *presses on its limit* when its senders deliver at least this fraction
/// of what their limiters allow (`y_t ≥ 0.9 · k · R_t`).
const PRESSING: f64 = 0.9;

/// The receiving link is *saturated* (a queue stands in front of it) when over the last two
/// intervals it delivered more than this fraction of the way from `C` (the fixed point's
/// arrivals) to its line rate (what it delivers while a queue stands): half way. The gap is
/// 2 % of two intervals' bytes, which at EyeQ's 200 µs and 10 Gbit/s is 10 kB (7 frames), at
/// the testbed's 10 ms and 100 Mbit/s 5 kB (3 frames), at 1 Gbit/s and 200 µs 1 kB (less
/// than a frame: there the signal is as coarse as one packet, and the term can fire at the
/// fixed point).
const SATURATION: f64 = 0.5;

/// EyeQ's code caps a tenant's arrival rate with the queue term at this multiple of its
/// share.
const MAX_QUEUE_TERM_FACTOR: f64 = 3.0;

/// Arrivals above this multiple of what a tenant's limits allow (`y_t > 1.5 · k · R_t`)
/// were sent before the limits took hold: the law leaves the rate alone. A sender
/// within its limit delivers at most `R_t` plus its burst (a quarter of an interval) plus a
/// packet in one interval, so 1.5 leaves room for packetization.
const STALE: f64 = 1.5;

impl<K: Copy + Eq + Hash> Receiver<K> {
    /// A receiver for tenants with guarantee `weights` (one per tenant, e.g. their
    /// guaranteed rates), starting its first interval at `now_ns`.
    ///
    /// # Errors
    /// [`EyeqError::Setting`], [`EyeqError::NoTenants`] or [`EyeqError::Weight`].
    pub fn new(cfg: EyeqConfig, weights: &[f64], now_ns: u64) -> Result<Receiver<K>, EyeqError> {
        cfg.validate()?;
        if weights.is_empty() {
            return Err(EyeqError::NoTenants);
        }
        if let Some((tenant, &weight)) = weights
            .iter()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w > 0.0))
        {
            return Err(EyeqError::Weight { tenant, weight });
        }
        let tenants = weights
            .iter()
            .map(|&weight| TenantState {
                weight,
                bytes: 0,
                packets: 0,
                marked: 0,
                senders: 0,
                backlog: 0.0,
                rate: None,
                last_arrival_ns: now_ns,
                congested_interval: 0,
                reserved: 0.0,
                prev_bytes: 0,
                smoothed_rate: 0.0,
                pressing: false,
                congested: false,
                status: TenantStatus {
                    rate: None,
                    arrival_rate: 0.0,
                    share: 0.0,
                    backlog: 0.0,
                    senders: 0,
                },
            })
            .collect();
        Ok(Receiver {
            cfg,
            tenants,
            senders: HashMap::new(),
            interval_end_ns: now_ns.saturating_add(cfg.interval_ns),
            interval: 0,
            now_ns,
            swept_ns: now_ns,
            stats: ReceiverStats::default(),
            order: Vec::with_capacity(weights.len()),
            queued: false,
        })
    }

    /// The settings.
    pub fn config(&self) -> &EyeqConfig {
        &self.cfg
    }

    /// Number of tenants.
    pub fn tenants(&self) -> usize {
        self.tenants.len()
    }

    /// Counters since creation.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }

    /// Tenant `t`'s state as of the last closed interval (its current rate).
    ///
    /// # Errors
    /// [`EyeqError::UnknownTenant`].
    pub fn status(&self, tenant: usize) -> Result<TenantStatus, EyeqError> {
        let t = self.tenant(tenant)?;
        Ok(TenantStatus {
            rate: t.rate,
            ..t.status
        })
    }

    /// When the current interval ends [ns]: a driver with a timer calls [`Self::tick`]
    /// then; one without lets [`Self::on_arrival`] close intervals as they pass.
    pub fn next_tick_ns(&self) -> u64 {
        self.interval_end_ns
    }

    /// Pairs (sender, tenant) currently tracked for feedback.
    pub fn tracked_senders(&self) -> usize {
        self.senders.len()
    }

    fn tenant(&self, tenant: usize) -> Result<&TenantState, EyeqError> {
        self.tenants.get(tenant).ok_or(EyeqError::UnknownTenant {
            tenant,
            tenants: self.tenants.len(),
        })
    }

    /// Whether the last interval closed with a standing queue in front of the link (marked
    /// arrivals with `ecn`, else the link saturated): the rate controller's queue term applied.
    pub fn queued(&self) -> bool {
        self.queued
    }

    /// Closes every interval that ended by `now_ns` and forgets senders and tenants silent
    /// for `hold`.
    pub fn tick(&mut self, now_ns: u64) {
        let now_ns = now_ns.max(self.now_ns);
        self.now_ns = now_ns;
        let mut closed = 0;
        while self.interval_end_ns <= now_ns {
            if closed == MAX_IDLE_INTERVALS {
                // a long silence: skip to the interval containing now
                let behind = (now_ns - self.interval_end_ns) / self.cfg.interval_ns;
                self.interval += behind;
                self.interval_end_ns = self
                    .interval_end_ns
                    .saturating_add(behind.saturating_mul(self.cfg.interval_ns));
                self.close_interval();
                break;
            }
            self.close_interval();
            closed += 1;
        }
        if now_ns.saturating_sub(self.swept_ns) >= self.cfg.hold_ns {
            self.sweep(now_ns);
        }
    }

    /// A packet of `bytes` from `sender` to `tenant` arrived at `now_ns`. Closes the
    /// intervals that ended before it, counts it, and returns the feedback to send to
    /// `sender` now, if any.
    ///
    /// # Errors
    /// [`EyeqError::UnknownTenant`]; nothing is counted.
    pub fn on_arrival(
        &mut self,
        now_ns: u64,
        sender: K,
        tenant: usize,
        bytes: u64,
    ) -> Result<Option<Feedback>, EyeqError> {
        self.on_marked_arrival(now_ns, sender, tenant, bytes, false)
    }

    /// [`Self::on_arrival`] for a packet that carried an ECN mark (`marked`: the switch
    /// port's queue was above the marking threshold). Marks count only with `ecn` set.
    ///
    /// # Errors
    /// [`EyeqError::UnknownTenant`]; nothing is counted.
    pub fn on_marked_arrival(
        &mut self,
        now_ns: u64,
        sender: K,
        tenant: usize,
        bytes: u64,
        marked: bool,
    ) -> Result<Option<Feedback>, EyeqError> {
        self.tenant(tenant)?;
        self.tick(now_ns);
        let now_ns = self.now_ns;
        let interval = self.interval;
        let marked = marked && self.cfg.ecn;
        self.stats.marked_arrivals += u64::from(marked);
        let t = &mut self.tenants[tenant];
        t.bytes = t.bytes.saturating_add(bytes);
        t.packets = t.packets.saturating_add(1);
        t.marked = t.marked.saturating_add(u32::from(marked));
        t.last_arrival_ns = now_ns;
        let rate = t.rate;
        let key = (sender, tenant);
        if !self.senders.contains_key(&key) && self.senders.len() >= self.cfg.max_senders {
            self.stats.untracked_arrivals += 1;
            return Ok(None);
        }
        let s = self.senders.entry(key).or_insert(SenderState {
            bytes_since_feedback: 0,
            last_feedback_ns: now_ns,
            last_seen_ns: now_ns,
            seen_interval: u64::MAX,
            limited: false,
        });
        if s.seen_interval != interval {
            s.seen_interval = interval;
            t.senders = t.senders.saturating_add(1);
        }
        s.last_seen_ns = now_ns;
        s.bytes_since_feedback = s.bytes_since_feedback.saturating_add(bytes);
        let due = s.bytes_since_feedback >= self.cfg.feedback_bytes
            || now_ns.saturating_sub(s.last_feedback_ns) >= self.cfg.feedback_ns;
        let feedback = match rate {
            Some(rate) if due || !s.limited => {
                s.limited = true;
                self.stats.limits += 1;
                Some(Feedback::Limit { rate })
            }
            None if s.limited => {
                s.limited = false;
                self.stats.releases += 1;
                Some(Feedback::Release)
            }
            _ => None,
        };
        if feedback.is_some() {
            s.bytes_since_feedback = 0;
            s.last_feedback_ns = now_ns;
        }
        Ok(feedback)
    }

    /// Closes the interval ending at `interval_end_ns`: detector, controller, release.
    fn close_interval(&mut self) {
        let cfg = self.cfg;
        let t_s = cfg.interval_s();
        let budget = cfg.capacity() * t_s;
        let max_backlog = cfg.backlog_intervals * budget;
        let tolerance = cfg.tolerance_intervals * budget;
        // a limited tenant silent in the last interval sends again (an on/off sender's next
        // burst): the others may have grown into its share meanwhile, and the FIFO in
        // front of the receiver hides who is over: every limited tenant counts as pressing
        let returning = self
            .tenants
            .iter()
            .any(|t| t.rate.is_some() && t.bytes > 0 && t.status.arrival_rate == 0.0);
        // the link delivered (nearly) its line rate over the last two intervals: a queue
        // stands in front of it; EyeQ's switches mark ECN above a threshold and its receiver
        // counts the marks as extra arrivals (the queue term below)
        let delivered: u64 = self.tenants.iter().map(|t| t.bytes + t.prev_bytes).sum();
        let full = cfg.line_rate * 2.0 * t_s;
        let saturated = delivered as f64 > full - SATURATION * (full - 2.0 * budget);
        // EyeQ's ECN1: a tenant's marked arrivals count as `threshold × (1 + marked
        // fraction)` more bytes; without marks, a saturated link counts as all marked
        let threshold = cfg.mark_threshold_s * cfg.line_rate;
        let queue_term = |t: &TenantState| {
            if cfg.ecn {
                if t.marked == 0 {
                    return 0.0;
                }
                let frac = f64::from(t.marked) / f64::from(t.packets.max(1));
                threshold * (1.0 + frac.min(1.0)) / t_s
            } else if saturated {
                2.0 * threshold / t_s
            } else {
                0.0
            }
        };
        let queued = if cfg.ecn {
            self.tenants.iter().any(|t| t.marked > 0)
        } else {
            saturated
        };
        self.queued = queued;
        if queued {
            self.stats.saturated_intervals += 1;
        }
        for t in &mut self.tenants {
            t.backlog += t.bytes as f64;
            t.status.arrival_rate = t.bytes as f64 / t_s;
            // the controller's y: over the last two intervals (packets and segments
            // straddle interval boundaries; one interval of a few segments is too coarse)
            t.smoothed_rate = (t.bytes + t.prev_bytes) as f64 / (2.0 * t_s);
            t.prev_bytes = t.bytes;
            t.status.share = 0.0;
            t.congested = false;
            t.reserved = (t.reserved * cfg.reserve_decay).max(t.bytes as f64);
            // a limited tenant pressing on its limit hides its demand: count it unbounded
            let allowed = |r: f64| PRESSING * r * f64::from(t.senders.max(1));
            // ... and so does one whose arrivals met a standing queue (marks, or a saturated
            // link): the FIFO in front of the receiver, not its demand, holds it below its limit
            let queued = queue_term(t) > 0.0;
            t.pressing = t
                .rate
                .is_some_and(|r| returning || queued || t.smoothed_rate >= allowed(r));
        }
        // weighted fair service of the virtual queue: water-filling, smallest demand per
        // weight first; pressing tenants want everything, others their backlog, at least
        // their reservation
        let demand = |t: &TenantState| {
            if t.pressing {
                f64::INFINITY
            } else {
                t.backlog.max(t.reserved)
            }
        };
        self.order.clear();
        self.order
            .extend((0..self.tenants.len()).filter(|&i| demand(&self.tenants[i]) > 0.0));
        let tenants = &self.tenants;
        self.order.sort_by(|&a, &b| {
            let key = |i: usize| demand(&tenants[i]) / tenants[i].weight;
            key(a).total_cmp(&key(b))
        });
        let mut left = budget;
        let mut weight_left: f64 = self.order.iter().map(|&i| self.tenants[i].weight).sum();
        for &i in &self.order {
            let t = &mut self.tenants[i];
            let fair = left * t.weight / weight_left;
            let served = demand(t).min(fair);
            t.backlog -= served.min(t.backlog);
            // a backlog within rounding of its share is drained
            if t.backlog <= 1e-9 * budget {
                t.backlog = 0.0;
            }
            t.congested = t.pressing || t.backlog > tolerance;
            if t.congested {
                t.status.share = served / t_s;
            }
            left = (left - served).max(0.0);
            weight_left -= t.weight;
        }
        let total_weight: f64 = self.tenants.iter().map(|t| t.weight).sum();
        for t in &mut self.tenants {
            t.backlog = t.backlog.min(max_backlog);
            t.status.backlog = t.backlog;
            t.status.senders = t.senders;
            if t.congested {
                // the rate controller
                let share = t.status.share.max(cfg.min_rate);
                let senders = f64::from(t.senders.max(1));
                let y = t.smoothed_rate;
                let r = match t.rate {
                    None => share / senders,
                    // arrivals well above what the limits allow were sent before them (a
                    // queue draining): they say nothing about the limit, which holds
                    Some(r) if y > STALE * senders * r => r,
                    Some(r) => {
                        let law = |y: f64| r * (1.0 - cfg.alpha * (y - share) / share);
                        let plain = law(y);
                        let queue_term = queue_term(t);
                        if queue_term > 0.0 {
                            // the queue term: a standing queue counts as more arrivals, which
                            // take back what the tenant has beyond its guarantee, not more
                            let guarantee = budget / t_s * t.weight / total_weight / senders;
                            let y = (y + queue_term).min(MAX_QUEUE_TERM_FACTOR * share.max(y));
                            law(y).max(plain.min(guarantee))
                        } else {
                            plain
                        }
                    }
                };
                t.rate = Some(clamp(r, cfg.min_rate, share));
                t.congested_interval = self.interval;
            } else if t.rate.is_some() {
                // limited but neither over its share nor pressing on its limit: the limit
                // waits (an on/off sender's next burst starts at it) until `hold` passes
                let calm_ns =
                    (self.interval - t.congested_interval).saturating_mul(cfg.interval_ns);
                if calm_ns >= cfg.hold_ns {
                    t.rate = None;
                }
            }
            t.status.rate = t.rate;
            t.bytes = 0;
            t.packets = 0;
            t.marked = 0;
            t.senders = 0;
        }
        self.interval += 1;
        self.interval_end_ns = self.interval_end_ns.saturating_add(cfg.interval_ns);
        self.stats.intervals += 1;
    }

    /// Forgets senders and releases tenants silent for `hold`.
    fn sweep(&mut self, now_ns: u64) {
        let hold = self.cfg.hold_ns;
        self.senders
            .retain(|_, s| now_ns.saturating_sub(s.last_seen_ns) < hold);
        for t in &mut self.tenants {
            if now_ns.saturating_sub(t.last_arrival_ns) >= hold {
                t.rate = None;
                t.backlog = 0.0;
                t.status.rate = None;
                t.status.backlog = 0.0;
            }
        }
        self.swept_ns = now_ns;
    }
}

/// `v` within `[lo, hi]`, `lo` winning when `hi < lo`; NaN maps to `lo`.
fn clamp(v: f64, lo: f64, hi: f64) -> f64 {
    if v.is_nan() {
        return lo;
    }
    v.min(hi).max(lo)
}

/// The sender's limiter for one destination: bypassed until a [`Feedback::Limit`] arrives,
/// then a [`TokenBucket`] at the fed-back rate until a [`Feedback::Release`] or `hold`
/// without feedback.
#[derive(Debug, Clone, PartialEq)]
pub struct DestinationLimiter {
    bucket: Option<TokenBucket>,
    last_feedback_ns: u64,
}

impl Default for DestinationLimiter {
    fn default() -> Self {
        DestinationLimiter::new()
    }
}

impl DestinationLimiter {
    /// A bypassed limiter.
    pub fn new() -> DestinationLimiter {
        DestinationLimiter {
            bucket: None,
            last_feedback_ns: 0,
        }
    }

    /// Applies feedback received at `now_ns`. A new limit keeps the bucket's tokens (capped
    /// at the new burst); a first limit starts with a full bucket.
    ///
    /// # Errors
    /// [`EyeqError::FeedbackRate`] for a limit that is not finite and > 0; nothing changes.
    pub fn on_feedback(
        &mut self,
        cfg: &EyeqConfig,
        now_ns: u64,
        feedback: Feedback,
    ) -> Result<(), EyeqError> {
        match feedback {
            Feedback::Limit { rate } => {
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(EyeqError::FeedbackRate { rate });
                }
                let burst = cfg.burst(rate);
                let bad = |_| EyeqError::FeedbackRate { rate };
                let expired = self.expired(cfg, now_ns);
                match &mut self.bucket {
                    Some(b) if !expired => b.set_rate(now_ns, rate, burst).map_err(bad)?,
                    _ => self.bucket = Some(TokenBucket::new(rate, burst, now_ns).map_err(bad)?),
                }
                self.last_feedback_ns = self.last_feedback_ns.max(now_ns);
            }
            Feedback::Release => self.bucket = None,
        }
        Ok(())
    }

    fn expired(&self, cfg: &EyeqConfig, now_ns: u64) -> bool {
        now_ns.saturating_sub(self.last_feedback_ns) >= cfg.hold_ns
    }

    /// The limit in force at `now_ns` [bytes/s]; `None` = bypassed.
    pub fn limit(&self, cfg: &EyeqConfig, now_ns: u64) -> Option<f64> {
        match &self.bucket {
            Some(b) if !self.expired(cfg, now_ns) => Some(b.rate()),
            _ => None,
        }
    }

    /// Earliest time ≥ `now_ns` at which `bytes` may be sent [ns] (`now_ns` when bypassed).
    pub fn ready_at(&self, cfg: &EyeqConfig, now_ns: u64, bytes: u64) -> u64 {
        match &self.bucket {
            Some(b) if !self.expired(cfg, now_ns) => b.ready_at(now_ns, bytes as f64),
            _ => now_ns,
        }
    }

    /// Sends `bytes` at `now_ns` if the limit allows (always when bypassed).
    ///
    /// # Errors
    /// [`NotReady`] with the exact retry time; nothing is taken.
    pub fn take(&mut self, cfg: &EyeqConfig, now_ns: u64, bytes: u64) -> Result<(), NotReady> {
        if self.expired(cfg, now_ns) {
            self.bucket = None;
        }
        match &mut self.bucket {
            Some(b) => b.take(now_ns, bytes as f64),
            None => Ok(()),
        }
    }
}

/// A sender's per-destination limiters (EyeQ's transmit module), keyed by destination `D`
/// (e.g. a receiver address and the tenant's port). Destinations without a limit cost one
/// hash look-up.
#[derive(Debug, Clone)]
pub struct Sender<D> {
    cfg: EyeqConfig,
    limiters: HashMap<D, DestinationLimiter>,
    feedback: u64,
}

impl<D: Eq + Hash> Sender<D> {
    /// A sender with no limits.
    ///
    /// # Errors
    /// [`EyeqError::Setting`] for invalid settings.
    pub fn new(cfg: EyeqConfig) -> Result<Sender<D>, EyeqError> {
        cfg.validate()?;
        Ok(Sender {
            cfg,
            limiters: HashMap::new(),
            feedback: 0,
        })
    }

    /// Applies feedback about `dest` received at `now_ns`.
    ///
    /// # Errors
    /// [`EyeqError::FeedbackRate`]; nothing changes.
    pub fn on_feedback(
        &mut self,
        now_ns: u64,
        dest: D,
        feedback: Feedback,
    ) -> Result<(), EyeqError> {
        match feedback {
            Feedback::Limit { .. } => {
                let l = self.limiters.entry(dest).or_default();
                l.on_feedback(&self.cfg, now_ns, feedback)?;
            }
            Feedback::Release => {
                self.limiters.remove(&dest);
            }
        }
        self.feedback += 1;
        Ok(())
    }

    /// Feedback messages applied so far.
    pub fn feedback_applied(&self) -> u64 {
        self.feedback
    }

    /// The limit on `dest` at `now_ns` [bytes/s]; `None` = bypassed.
    pub fn limit(&self, now_ns: u64, dest: &D) -> Option<f64> {
        self.limiters
            .get(dest)
            .and_then(|l| l.limit(&self.cfg, now_ns))
    }

    /// Earliest time ≥ `now_ns` at which `bytes` may go to `dest` [ns].
    pub fn ready_at(&self, now_ns: u64, dest: &D, bytes: u64) -> u64 {
        self.limiters
            .get(dest)
            .map_or(now_ns, |l| l.ready_at(&self.cfg, now_ns, bytes))
    }

    /// Sends `bytes` to `dest` at `now_ns` if its limit allows; a limit silent for `hold` is
    /// dropped here.
    ///
    /// # Errors
    /// [`NotReady`] with the exact retry time; nothing is taken.
    pub fn take(&mut self, now_ns: u64, dest: &D, bytes: u64) -> Result<(), NotReady> {
        let Some(l) = self.limiters.get_mut(dest) else {
            return Ok(());
        };
        let r = l.take(&self.cfg, now_ns, bytes);
        if l.bucket.is_none() {
            self.limiters.remove(dest);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: f64 = 1.25e8; // 1 Gbit/s [bytes/s]
    const US: u64 = 1_000;

    #[test]
    fn defaults_are_eyeqs_and_valid() {
        let c = EyeqConfig::new(G);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.interval_ns, 200 * US);
        assert_eq!(c.alpha, 0.5);
        assert_eq!(c.capacity(), 0.98 * G);
        assert_eq!(c.min_rate, 125_000.0);
        assert_eq!(c.burst(G), 50e-6 * G);
        assert_eq!(c.burst(1e6), 3000.0);
    }

    #[test]
    fn invalid_settings_name_the_field() {
        let mut c = EyeqConfig::new(G);
        c.alpha = 1.5;
        let e = c.validate().unwrap_err();
        assert!(e.to_string().contains("alpha = 1.5"), "{e}");
        let c = EyeqConfig::new(f64::NAN);
        assert!(matches!(
            c.validate(),
            Err(EyeqError::Setting {
                field: "line_rate",
                ..
            })
        ));
        let e = Receiver::<u32>::new(EyeqConfig::new(G), &[1.0, -1.0], 0).unwrap_err();
        assert_eq!(
            e,
            EyeqError::Weight {
                tenant: 1,
                weight: -1.0
            }
        );
        assert_eq!(
            Receiver::<u32>::new(EyeqConfig::new(G), &[], 0).unwrap_err(),
            EyeqError::NoTenants
        );
    }

    #[test]
    fn unknown_tenant_is_an_error_and_counts_nothing() {
        let mut r = Receiver::<u32>::new(EyeqConfig::new(G), &[1.0], 0).unwrap();
        assert_eq!(
            r.on_arrival(0, 7, 3, 1500),
            Err(EyeqError::UnknownTenant {
                tenant: 3,
                tenants: 1
            })
        );
        assert_eq!(r.tracked_senders(), 0);
    }

    #[test]
    fn uncongested_traffic_gets_no_feedback() {
        let mut r = Receiver::<u32>::new(EyeqConfig::new(G), &[1.0, 1.0], 0).unwrap();
        // 0.5 of the line rate for 10 ms: 1500 B every 24 µs
        let mut now = 0;
        while now < 10_000 * US {
            assert_eq!(r.on_arrival(now, 1, 0, 1500), Ok(None));
            now += 24 * US;
        }
        assert_eq!(r.status(0).unwrap().rate, None);
        assert!(r.stats().intervals >= 49);
    }

    #[test]
    fn long_silence_is_skipped_and_releases_everything() {
        let mut r = Receiver::<u32>::new(EyeqConfig::new(G), &[1.0], 0).unwrap();
        // 2 x line rate for one interval: congested, limited
        for i in 0..33 {
            r.on_arrival(i * 6 * US, 1, 0, 1500).unwrap();
        }
        let limit = r.on_arrival(200 * US, 1, 0, 100).unwrap();
        assert!(matches!(limit, Some(Feedback::Limit { .. })), "{limit:?}");
        // an hour later: one arrival closes at most 65 intervals' worth of work; the sender
        // was forgotten after `hold`, as its own limiter expired: no release to send
        let before = r.stats().intervals;
        assert_eq!(r.on_arrival(3_600_000_000_000, 1, 0, 100), Ok(None));
        assert!(r.stats().intervals - before <= MAX_IDLE_INTERVALS + 1);
        assert_eq!(r.status(0).unwrap().rate, None);
        assert_eq!(r.tracked_senders(), 1);
    }

    #[test]
    fn limiter_bypasses_until_limited_and_after_release_or_hold() {
        let cfg = EyeqConfig::new(G);
        let mut l = DestinationLimiter::new();
        assert_eq!(l.take(&cfg, 0, 1 << 30), Ok(()));
        l.on_feedback(&cfg, 0, Feedback::Limit { rate: 1e6 })
            .unwrap();
        assert_eq!(l.limit(&cfg, 0), Some(1e6));
        assert_eq!(l.take(&cfg, 0, 3000), Ok(()));
        // the bucket (3000 B) is empty: 1500 B more after 1.5 ms
        assert_eq!(l.ready_at(&cfg, 0, 1500), 1_500 * US);
        assert!(l.take(&cfg, 0, 1500).is_err());
        l.on_feedback(&cfg, 10, Feedback::Release).unwrap();
        assert_eq!(l.take(&cfg, 10, 1500), Ok(()));
        l.on_feedback(&cfg, 20, Feedback::Limit { rate: 1e6 })
            .unwrap();
        assert_eq!(l.limit(&cfg, 20 + cfg.hold_ns - 1), Some(1e6));
        assert_eq!(l.limit(&cfg, 20 + cfg.hold_ns), None);
        assert_eq!(
            l.ready_at(&cfg, 20 + cfg.hold_ns, 1 << 20),
            20 + cfg.hold_ns
        );
        assert_eq!(
            l.on_feedback(
                &cfg,
                30,
                Feedback::Limit {
                    rate: f64::INFINITY
                }
            ),
            Err(EyeqError::FeedbackRate {
                rate: f64::INFINITY
            })
        );
    }

    #[test]
    fn sender_keeps_one_limiter_per_destination() {
        let mut s = Sender::<(u32, u16)>::new(EyeqConfig::new(G)).unwrap();
        s.on_feedback(0, (1, 80), Feedback::Limit { rate: 1e6 })
            .unwrap();
        assert_eq!(s.limit(0, &(1, 80)), Some(1e6));
        assert_eq!(s.limit(0, &(1, 81)), None);
        assert_eq!(s.take(0, &(1, 81), 1 << 20), Ok(()));
        assert_eq!(s.take(0, &(1, 80), 3000), Ok(()));
        assert!(s.take(0, &(1, 80), 3000).is_err());
        s.on_feedback(1, (1, 80), Feedback::Release).unwrap();
        assert_eq!(s.take(1, &(1, 80), 3000), Ok(()));
        assert_eq!(s.feedback_applied(), 2);
    }
}
