//! Pulsar's controller as a network service (pulsar §4–§5): what enforcers and the controller
//! say to each other, and the controller's side of it.
//!
//! * [`protocol`] — the protocol, documented route by route: HTTP/1.1 with JSON bodies
//!   (`/v1/datacenter`, `/v1/enforcers/{id}/register|report|allocation`, `/v1/status`).
//! * [`state`] — [`state::ControlState`]: `tailbound_allocation::Controller` (demand and
//!   capacity estimators, DRF/H-DRF local and global steps) plus enforcer registration,
//!   report merging, the last allocation for enforcers that restart, and staleness. No I/O;
//!   every call takes `now`.
//! * [`server`] — the axum routes and the step task (`tailbound vdc serve`).
//! * [`client`] — the hyper client the enforcers use (`tailbound_enforcer::link`), of `vdc
//!   serve` or of a VDC of `tailbound serve`.
//!
//! What lives elsewhere: the allocation itself (`tailbound-allocation`), the enforcers
//! (`tailbound-enforcer`), the long-running service with persistence (`tailbound-service`: a
//! [`ControlState`] per VDC under `/v1/vdcs/{vdc}`, its [`Snapshot`] in SQLite).

pub mod client;
pub mod http;
pub mod protocol;
pub mod server;
pub mod state;

pub use client::{ClientError, ControlClient};
pub use server::Service;
pub use state::{ControlConfig, ControlError, ControlState, Snapshot};
