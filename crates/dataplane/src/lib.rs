//! tailbound's real network code. Today: the tail-latency probe ([`probe`]), which measures RTT
//! distributions of TCP and UDP request-response exchanges over loopback or between two
//! network namespaces ([`netns`]), and RDMA detection ([`rdma`]).
//!
//! Policy (whom to admit, which rates) is decided elsewhere (calculus, policy crates); the
//! `tailbound probe` command, its tables and plots live in the CLI. The tc/HTB enforcement of
//! decisions and the enforcer proxy will live here too.
//!
//! Main entry points: [`probe::run_probe`] for one [`probe::ProbeSpec`] on [`probe::Hosts`],
//! [`probe::run_sweep`] for a [`probe::SweepPlan`], [`probe::server::Server`] and
//! [`probe::client::run`] for the two halves on separate machines. Errors: [`ProbeError`],
//! [`NetnsError`].

pub mod error;
pub mod netns;
pub mod probe;
pub mod rdma;
pub mod tc;
pub mod tos;

pub use error::{HostMapFileError, NetnsError, ProbeError, TcError};
