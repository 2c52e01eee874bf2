//! Where the testbed meets the enforcer: links are shaped to their rates when the LAN is built
//! (an HTB root per host interface and switch port, [`tailbound_dataplane::netns::shape_link`]);
//! [`apply`] puts the decisions on top (a class per priority, per-tenant buckets, TOS filters
//! on switch ports), from the [`Topology`], which is the host map the enforcer needs.

use crate::topology::Topology;
use crate::TestbedError;
use tailbound_dataplane::netns::Lan;

/// Applies `topology`'s decisions on every host and switch port of `lan`; returns whether it
/// did (false: only the links are shaped).
pub fn apply(_lan: &Lan, _topology: &Topology) -> Result<bool, TestbedError> {
    tracing::warn!("tc enforcement of decisions is not available yet; links are shaped only");
    Ok(false)
}
