//! The controller service: tenants arrive and leave all day, and each gets a decision in
//! milliseconds ("admitted at priority 2 on server s3", or "rejected: tenant X would get
//! 41 ms > its SLO 20 ms", with the queues and tenants that decide it), committed to SQLite
//! before it is answered, so that a `kill -9` at any point and a restart answer the same state.
//!
//! * [`api`]: the request and response bodies (HTTP/JSON).
//! * [`engine`]: the decisions in memory, no I/O and no clock: the admission engine
//!   (`tailbound-admission`, its policies unchanged) over a network that grows host by host
//!   and tenant by tenant, WorkloadCompactor's placer for tenants without a server, every
//!   decision first a proposal that is applied only after it is committed.
//! * [`store`]: SQLite (WAL, `synchronous = FULL`, a `schema_version` migration table).
//! * [`server`]: the axum routes, tokens (admin and per tenant, stored as SHA-256 digests),
//!   the body-size limit, per-client request-rate limits ([`limits`]), `/healthz`,
//!   `/metrics` ([`metrics`]), `/openapi.json` ([`openapi`]), the read-only status page
//!   `/status` ([`status`]), the host agents' route (`GET /v1/hosts/{host}/decisions`, read
//!   by `tailbound agent`).
//! * [`vdc`], [`vdc_api`]: Pulsar's VDCs, each with its own `tailbound_control::ControlState`
//!   (the controller of `tailbound vdc serve`), served to enforcers under `/v1/vdcs/{vdc}`
//!   with the protocol of `tailbound_control::protocol`; files and controller snapshots in
//!   SQLite.
//! * [`client`]: a hyper client of the routes (`tailbound tenant`, tests).
//!
//! What is not here: the policies and the calculus (their crates), characterizing traces
//! (`tailbound-scenario`, `tailbound-placement`), the command line (`tailbound serve`,
//! `tailbound tenant` in `tailbound-cli`).

pub mod api;
pub mod auth;
pub mod client;
pub mod engine;
pub mod error;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod server;
pub mod status;
pub mod store;
pub mod vdc;
pub mod vdc_api;

pub use error::ServiceError;
pub use server::{router, serve, AdminToken, Config, Service};
