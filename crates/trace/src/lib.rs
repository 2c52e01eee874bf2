//! Trace ingestion and synthesis: reading request traces with validation, writing them back,
//! describing them, splitting them for characterize-then-replay, and generating synthetic
//! tenants.
//!
//! This crate knows requests and time, nothing more: it does not analyse. Turning traces into
//! r-b curves, arrival curves and MMPP fits lives in `tailbound-curves`; the request type and
//! its ops live in `tailbound-model`; replaying traces lives in the simulator.
//!
//! Main items:
//! * [`Trace`]: a named, time-sorted list of [`Request`]s.
//! * Reading ([`read`]): [`read_trace`], [`parse_trace`], streaming [`open_trace`] /
//!   [`TraceReader`]; errors are [`TraceError`] (file, line, [`TraceErrorKind`]).
//! * Writing ([`write`](mod@write)): [`write_trace`] in either [`Format`].
//! * Statistics ([`stats`]): [`trace_stats`] → [`TraceStats`], [`rate_series`].
//! * Splitting ([`split`](mod@split)): [`split()`], [`split_keep_times`], the [`Part`] a step
//!   uses (whole, first or second half), and [`rotate`] (with [`rotation_period`]) to reuse a
//!   trace or a part of it at a time offset.
//! * Folders ([`dir`]): [`list_traces`], the one rule for which files are traces.
//! * Synthesis ([`gen`]): [`generate`] from a [`GenSpec`] ([`ArrivalModel`], [`SizeDist`],
//!   [`Vocabulary`]).

pub mod dir;
pub mod gen;
pub mod read;
pub mod split;
pub mod stats;
pub mod write;

pub use dir::{list_traces, TraceDirError};
pub use gen::{generate, ArrivalModel, GenError, GenSpec, SizeDist, Vocabulary};
pub use read::{
    open_trace, parse_trace, read_trace, TraceError, TraceErrorKind, TraceReader, MAX_LINE_BYTES,
    MAX_REQUESTS, MAX_REQUEST_BYTES,
};
pub use split::{rotate, rotation_period, split, split_keep_times, Part, SplitError};
pub use stats::{
    rate_series, trace_stats, RatePoint, SizeStats, StatsError, TraceStats, WindowPeak,
};
pub use write::{write_trace, Format};

use tailbound_model::Request;

/// A tenant's requests, sorted by arrival time.
///
/// Traces from [`read_trace`], [`parse_trace`] and [`generate`] hold at least one request and
/// are sorted; a `Trace` built by hand should keep that (the functions here do not panic on an
/// empty one, but report undefined quantities as `None` or errors).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// where the trace came from (file path or generator description)
    pub name: String,
    pub requests: Vec<Request>,
}

impl Trace {
    /// last − first arrival \[ns\]; 0 for an empty trace
    pub fn span_ns(&self) -> u64 {
        match (self.requests.first(), self.requests.last()) {
            (Some(a), Some(b)) => b.arrival_ns.saturating_sub(a.arrival_ns),
            _ => 0,
        }
    }

    /// last − first arrival \[s\]; 0 for an empty trace
    pub fn span_s(&self) -> f64 {
        self.span_ns() as f64 * 1e-9
    }
}
