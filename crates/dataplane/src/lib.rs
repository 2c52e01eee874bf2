//! tailbound's real network code: the tail-latency probe ([`probe`]), which measures RTT
//! distributions of TCP and UDP request-response exchanges over loopback or between two
//! network namespaces ([`netns`]); tc enforcement of decisions on real interfaces ([`tc`]:
//! read over netlink, apply in one `tc -batch`, verify, roll back, remove); senders' DSCP marks
//! ([`tos`]); RDMA detection ([`rdma`]); the memcached text protocol (both halves, an async
//! client, a load generator and a memcached process: [`memcache`]); open-loop replay clients
//! ([`replay`]); EyeQ's receiver and sender agents on real hosts ([`eyeq`]); and the clocks that drive sans-IO state machines at the edge ([`clock`]).
//!
//! Policy (whom to admit, which rates) is decided elsewhere (calculus, policy crates); what tc
//! configuration enforces it is planned in `tailbound-enforce-plan` (no I/O); the `tailbound
//! probe` and `tailbound enforce` commands, their tables and plots live in the CLI. The enforcer
//! proxy that speaks [`memcache`] is `tailbound-enforcer`.
//!
//! Main entry points: [`probe::run_probe`] for one [`probe::ProbeSpec`] on [`probe::Hosts`],
//! [`probe::run_sweep`] for a [`probe::SweepPlan`], [`probe::server::Server`] and
//! [`probe::client::run`] for the two halves on separate machines; [`tc::Enforcer`] for
//! apply/status/remove of plans. Errors: [`ProbeError`], [`NetnsError`], [`TcError`].

pub mod blast;
pub mod clock;
pub mod error;
pub mod eyeq;
pub mod file;
pub mod memcache;
pub mod netns;
pub mod probe;
pub mod rdma;
pub mod replay;
pub mod tc;
pub mod tos;

pub use error::{HostMapFileError, NetnsError, ProbeError, ReplayError, TcError};
