//! Shaping state machines: the token bucket, Pulsar's multi-resource token bucket, a
//! strict-priority queue and EyeQ's rate control, written once and driven by whoever owns the clock.
//!
//! **Sans-IO.** Nothing here reads a clock, sleeps, spawns or does I/O, and there is no global
//! state. Every time-dependent call takes `now_ns`, the caller's current time. The simulator
//! (`tailbound-sim`) drives these types on virtual time; the enforcer proxy in
//! `tailbound-dataplane` will drive the very same types on real time (quinn-proto's rule, see
//! `shared/STYLE.md`, "A sans-IO core"). Clocks are assumed monotone; a `now_ns` earlier than
//! the last update is treated as that last update, so state never runs backwards.
//!
//! **What lives elsewhere.** Which rates, bursts and priorities to use is decided by the
//! calculus and the admission/allocation code (SNC-Meister, WorkloadCompactor, Pulsar's MRA);
//! this crate only enforces them. Queues of waiting requests, event scheduling and timers
//! belong to the driver (sim or dataplane); [`TokenBucket::ready_at`] tells the driver exactly
//! when to come back.
//!
//! **Units.** Time is `u64` nanoseconds on the caller's clock (integer, so no drift accumulates
//! in timestamps). Work, tokens, costs and bursts are `f64` in the caller's unit (bytes,
//! busy-seconds, Pulsar tokens); rates are that unit per second [work/s].
//!
//! Main types: [`TokenBucket`] (with [`NotReady`]), [`MultiBucket`] (Pulsar §4.4),
//! [`PriorityQueue`] (strict priority, FIFO within a level), errors in [`ShapingError`];
//! Pulsar's demand and appliance-capacity estimators in [`estimate`] (§4.2–§4.3); EyeQ's
//! receiver (congestion detector, rate controller, feedback) and per-destination sender
//! limiters in [`eyeq`].

pub mod error;
pub mod estimate;
pub mod eyeq;
pub mod multi;
pub mod priority;
pub mod token_bucket;

pub use error::{MultiTakeError, ShapingError};
pub use estimate::{CapacityConfig, CapacityEstimator, CapacityState, DemandEstimator, Phase};
pub use multi::{MultiBucket, DEFAULT_BURST_S};
pub use priority::PriorityQueue;
pub use token_bucket::{NotReady, TokenBucket};
