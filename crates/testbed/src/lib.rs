//! A real testbed on one machine, built from the same scenario files the simulator reads: each
//! host of the scenario is a network namespace, the switch is a bridge in one more, every link
//! is shaped with HTB at the scenario's rate × `--scale`, every server host runs a real
//! memcached (Debian's package, started and stopped by PID), and every admitted tenant replays
//! the held-out half of its trace open loop from its client host, `get`s and `set`s of the
//! trace's sizes, its packets marked with its priority; enforcement applies the decisions on
//! every host and switch port. The measured latencies are reported beside the simulator's for
//! the same scenario and decisions, the bound and the SLO (snc-meister §5, Fig. 2; DESIGN.md,
//! Verification: Testbed).
//!
//! ```text
//!  client host (netns)                 switch (netns)                server host (netns)
//!  tenant VMs: replay clients ──tb0══ p0 ─┐            ┌─ p1 ══tb0── memcached
//!  (tokio, IP_TOS, own address)  HTB out   │  bridge br0 │  HTB in      (-I 2m, by PID)
//!                                          └────────────┘
//! ```
//!
//! Pieces, in the order a run uses them: [`topology`] (hosts, tenants, addresses, priorities,
//! scaled rates: the host map), [`schedule`] (when each request is due, which requests the
//! simulator replays beside), [`capacity`] (what this machine can run; refuses more, with the
//! `--scale` that fits), [`testbed`] (namespaces, servers, preloaded keys, enforcement, the
//! aggressor, the replay), [`report`] (testbed vs simulator vs bound per tenant), [`run`] (the
//! whole run), [`state`] (a persistent testbed: `tailbound testbed up`/`down`).
//!
//! What lives elsewhere: namespaces, replay clients and blast traffic in `tailbound-dataplane`;
//! the simulator in `tailbound-sim`; deciding (admission) in `tailbound-admission` — the
//! testbed takes decisions, never a decider.
//!
//! Clean-up: every namespace and process a run creates goes on success, on error, on
//! SIGINT/SIGTERM/SIGHUP (the namespace module's handler ends the processes inside the
//! namespaces) and, after a SIGKILL, at the next start (memcached dies with its parent by
//! `PR_SET_PDEATHSIG`; namespaces of dead runs are deleted by the next run, `up` or `down`).

pub mod capacity;
pub mod enforce;
pub mod memcached;
pub mod report;
pub mod run;
pub mod schedule;
pub mod state;
pub mod testbed;
pub mod topology;

pub use report::TestbedReport;
pub use run::{run, Input, RunOptions};
pub use topology::{AggressorKind, AggressorSpec, Topology};

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why a testbed could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestbedError {
    #[error("{0}")]
    Input(String),
    #[error("cannot apply the decisions: {0}")]
    Decisions(#[source] tailbound_sim::ReplayError),
    #[error("the testbed would have {hosts} hosts; one machine runs at most {max} (namespaces on one switch)")]
    TooManyHosts { hosts: usize, max: usize },
    #[error("this machine cannot run the testbed: {0}")]
    Capacity(String),
    #[error("memcached is not available as {}: {why}; install it (apt-get install -y memcached) or pass --memcached PATH", binary.display())]
    MemcachedMissing { binary: PathBuf, why: String },
    #[error("memcached on host {host:?} cannot listen on {addr}: the port is in use ({message}); choose another --port")]
    PortInUse {
        host: String,
        addr: SocketAddr,
        message: String,
    },
    #[error("memcached on host {host:?} ({addr}): {message}")]
    Server {
        host: String,
        addr: SocketAddr,
        message: String,
    },
    #[error(transparent)]
    Netns(#[from] tailbound_dataplane::NetnsError),
    #[error(transparent)]
    Replay(#[from] tailbound_dataplane::ReplayError),
    #[error("cannot simulate the same replay: {0}")]
    Sim(#[source] tailbound_sim::ReplayError),
    #[error("cannot enforce on the testbed: {0}")]
    Enforce(String),
    #[error("testbed state {}: {message}", path.display())]
    State { path: PathBuf, message: String },
}
