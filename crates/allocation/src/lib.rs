//! Pulsar's control plane without I/O (pulsar §3–§4): virtual datacenter specs, multi-resource
//! allocation, the local and global allocation steps and the controller loop.
//!
//! **What lives here.** [`Problem`] and [`Allocation`] (`A ← MRA(D, W, C)`, eq. 1) with the
//! mechanisms behind the [`Mra`] trait: [`drf::drf`] (weighted DRF by event-driven progressive
//! filling), [`hdrf::hdrf`] (tenants, then flows) and [`drf::first_fit`]. [`vdc`] holds the VDC
//! spec (TOML/JSON: servers, appliances with virtual cost functions, tenants with VMs, virtual
//! appliances, guarantees and flows) compiled into a [`vdc::Datacenter`] whose flows carry
//! their paths. [`steps`] is the two-step allocation of §4.1: per tenant over its VDC
//! (eq. 2), then spare physical capacity to tenants with minimum guarantees (eq. 3).
//! [`controller::Controller`] runs both every control interval from the enforcers' reports,
//! estimating demands and appliance capacities with the state machines of
//! `tailbound_shaping::estimate`. [`input`] is the flat JSON of `tailbound alloc`, [`bench`]
//! the §6.4 fat-tree scenario.
//!
//! **What does not.** Enforcement (the multi-resource token bucket, the estimators) is in
//! `tailbound-shaping`; the simulation of the whole loop is `tailbound_sim::vdc`; reading
//! files and printing belong to the CLI. Nothing here reads a clock or does I/O: the
//! controller takes `now` and reports, and returns allocations.
//!
//! **Units.** Throughput and capacity in tokens/s (network tokens are bytes); time in `u64`
//! nanoseconds.

pub mod bench;
pub mod controller;
pub mod drf;
pub mod error;
pub mod hdrf;
pub mod input;
pub mod mra;
pub mod problem;
pub mod steps;
pub mod vdc;

pub use controller::{
    ControlOutput, Controller, ControllerConfig, FlowMeter, FlowReport, FlowSample,
};
pub use error::AllocError;
pub use mra::{Mechanism, Mra};
pub use problem::{Allocation, Problem, TenantId};
pub use steps::{allocate_vdc, VdcAllocation};
pub use tailbound_shaping::CapacityState;
pub use vdc::{Datacenter, VdcSpec};
