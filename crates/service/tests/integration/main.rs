//! The controller service on 127.0.0.1:0: decisions over HTTP, restarts from the database, the
//! catalogue of bad requests, the OpenAPI document against the routes, VDCs and their
//! enforcers.

mod agents;
mod api;
mod common;
mod errors;
mod routes;
mod status;
mod vdcs;
