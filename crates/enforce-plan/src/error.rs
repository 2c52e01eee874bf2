//! Why a host map or a plan cannot be made. Messages quote the value and say what is accepted.

use tailbound_model::{DecisionsError, Stage};

/// A host map that cannot be right.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HostMapError {
    #[error("{file}: {message}")]
    Syntax { file: String, message: String },
    #[error("{file}: {at}: field `{field}`: {message}")]
    Field {
        file: String,
        at: String,
        field: String,
        message: String,
    },
}

/// Decisions that cannot be enforced on the hosts of a map.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    #[error(transparent)]
    Decisions(#[from] DecisionsError),
    #[error("unknown host {host:?} ({what}); the host map {file} has {known}")]
    UnknownHost {
        host: String,
        what: String,
        file: String,
        known: String,
    },
    #[error("host {host:?} is a switch; {what}")]
    Switch { host: String, what: String },
    #[error("tenant {tenant:?} is admitted in the decisions but missing from the host map {file}; add a [[tenants]] entry with name = {tenant:?} and its client and server")]
    MissingTenant { tenant: String, file: String },
    #[error("tenant {tenant:?} has no server: neither the decisions nor the host map {file} say where it runs; add server = {{ host = \"...\" }} to its [[tenants]] entry")]
    NoServer { tenant: String, file: String },
    #[error("tenant {tenant:?} is admitted without a priority; tc enforcement needs every admitted tenant's level (decisions from `tailbound admit` or `tailbound place` have one)")]
    NoPriority { tenant: String },
    #[error("tenant {tenant:?}: priority {priority} is beyond the lowest level tailbound enforces ({max}); levels 0 to {max} fit the 6-bit DSCP that senders mark and switch ports classify on")]
    Priority {
        tenant: String,
        priority: u32,
        max: u32,
    },
    #[error("tenant {tenant:?} has limits on two {stage} flows, {a:?} and {b:?}; the host map recognises one flow per direction per tenant")]
    TwoFlows {
        tenant: String,
        stage: Stage,
        a: String,
        b: String,
    },
    #[error("tenant {tenant:?}, flow {flow:?}: rate {rate_bytes_per_s} B/s is above the link rate {link_bytes_per_s} B/s of host {host:?} interface {interface:?}; no host can send faster than its link (was the scenario's link faster than the host map's?)")]
    RateAboveLink {
        tenant: String,
        flow: String,
        rate_bytes_per_s: f64,
        host: String,
        interface: String,
        link_bytes_per_s: f64,
    },
    #[error("the guaranteed rates on host {host:?} interface {interface:?} add up to {sum_bytes_per_s} B/s, above its link rate {link_bytes_per_s} B/s; the decisions cannot all hold there (was the scenario's link faster than the host map's?)")]
    RatesAboveLink {
        host: String,
        interface: String,
        sum_bytes_per_s: f64,
        link_bytes_per_s: f64,
    },
    #[error("tenant {tenant:?}, flow {flow:?}: burst {burst_bytes} B at rate {rate_bytes_per_s} B/s lasts {seconds:.0} s, beyond the {max_s:.0} s HTB can hold (its bucket is a 32-bit count of 64 ns ticks)")]
    BurstTooLong {
        tenant: String,
        flow: String,
        burst_bytes: f64,
        rate_bytes_per_s: f64,
        seconds: f64,
        max_s: f64,
    },
    #[error("tenants {a:?} and {b:?} send packets no filter can tell apart on host {host:?} interface {interface:?}; give them different ports or protocols in the host map {file}")]
    Ambiguous {
        a: String,
        b: String,
        host: String,
        interface: String,
        file: String,
    },
    #[error("host {host:?} interface {interface:?} needs more than {max} {what}; split its tenants over more interfaces")]
    Exhausted {
        host: String,
        interface: String,
        what: &'static str,
        max: u32,
    },
}
