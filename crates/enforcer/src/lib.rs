//! Pulsar's rate enforcer (pulsar §4.4, §5) as a userspace proxy in front of an appliance —
//! memcached, speaking its text protocol — which is where an operator deploys it when the
//! hypervisor is not theirs to change.
//!
//! * [`core`] — the decisions, without I/O: per flow a FIFO and a
//!   `tailbound_shaping::MultiBucket` over its hops, an optional window with strict priorities
//!   between tenants, and the interval statistics the controller's estimators need. Every call
//!   takes `now`; the simulator's rules (`tailbound_vdc_sim`) exactly.
//! * [`cost`] — what a memcached request costs per hop: the datacenter's virtual cost functions
//!   (`tailbound_allocation::Datacenter::hop_cost`), with GET sizes settled from the reply.
//! * [`proxy`] — the tokio proxy: listeners per tenant flow or with memcached's text auth,
//!   pipelining in order, error replies for malformed input, timeouts for a slow or dead
//!   backend, bounded memory per connection.
//! * [`link`] — the enforcer's side of the controller protocol (`tailbound_control`): register,
//!   recover the allocation after a restart, report every interval, apply the allocation
//!   vectors, keep the last one when the controller is unreachable.
//!
//! What lives elsewhere: the memcached codec and client are `tailbound_dataplane::memcache`;
//! the allocation and the estimators `tailbound_allocation` and `tailbound_shaping`; the
//! controller service `tailbound_control`; the `tailbound vdc enforcer` command the CLI.

pub mod core;
pub mod cost;
pub mod link;
pub mod proxy;

pub use crate::core::{Admit, CoreConfig, CoreError, EnforcerCore, FlowSetup, Ticket};
pub use cost::Charger;
pub use proxy::{AuthUser, Identify, ListenerSpec, Proxy, ProxyConfig, ProxyError, ProxyFlow};
