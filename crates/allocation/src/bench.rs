//! The controller-scalability scenario of pulsar §6.4: a fat-tree datacenter (non-blocking
//! core, so only each server's link matters) with 12 VMs per server, one flow per VM, 44% of
//! the flows to appliances and the rest VM-to-VM; resources are every server's uplink and
//! downlink plus every appliance (2000 servers and 200 appliances: 4200 resources).
//!
//! Seeded and deterministic. Tenants are runs of consecutive VMs of 4–40 VMs; a tenant's
//! global weight is its number of VMs (weights derived from guarantees). Active flows demand
//! log-uniformly between 1% and 100% of a 40 Gbit/s link on their path (tokens = bytes);
//! appliances have 20 GB/s of capacity; inactive flows demand nothing.

use crate::problem::Problem;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Link rate of a server, each direction: 40 Gbit/s [bytes/s].
pub const LINK_BYTES_PER_S: f64 = 5e9;
/// Capacity of an appliance [tokens/s].
pub const APPLIANCE_TOKENS_PER_S: f64 = 2e10;
/// Fraction of flows that go to appliances (pulsar §6.4, after Ananta [49]).
pub const APPLIANCE_FRACTION: f64 = 0.44;

/// Sizes of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FatTree {
    pub vms: usize,
    pub servers: usize,
    pub appliances: usize,
    /// fraction of VMs whose flow has demand
    pub active: f64,
    pub seed: u64,
}

impl Default for FatTree {
    /// pulsar §6.4: 24K VMs, 2000 servers, 200 appliances, all active
    fn default() -> Self {
        FatTree {
            vms: 24_000,
            servers: 2_000,
            appliances: 200,
            active: 1.0,
            seed: 1,
        }
    }
}

impl FatTree {
    /// Resources: `2·servers + appliances`.
    pub fn resources(&self) -> usize {
        2 * self.servers + self.appliances
    }

    /// Builds the global allocation problem. Resource `2s` is server `s`'s uplink, `2s + 1`
    /// its downlink, `2·servers + a` appliance `a`. VM `v` sits on server `v / vms_per_server`
    /// (12 per server when `vms = 12·servers`).
    ///
    /// # Errors
    /// A message if the sizes are zero or `active` is outside `[0, 1]`.
    pub fn build(&self) -> Result<Problem, String> {
        if self.vms == 0 || self.servers == 0 {
            return Err(format!(
                "the scenario needs at least one VM and one server (got {} VMs, {} servers)",
                self.vms, self.servers
            ));
        }
        if !(0.0..=1.0).contains(&self.active) {
            return Err(format!(
                "active fraction {} must be within [0, 1]",
                self.active
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut cap = vec![LINK_BYTES_PER_S; 2 * self.servers];
        cap.resize(2 * self.servers + self.appliances, APPLIANCE_TOKENS_PER_S);
        let mut p = Problem::new(cap).map_err(|e| e.to_string())?;
        let per_server = self.vms.div_ceil(self.servers);
        let mut v = 0;
        while v < self.vms {
            let size = rng.gen_range(4..=40).min(self.vms - v);
            let t = p.add_tenant(size as f64).map_err(|e| e.to_string())?;
            for vm in v..v + size {
                let src = (vm / per_server).min(self.servers - 1);
                let active = rng.gen_bool(self.active);
                let d = if active {
                    LINK_BYTES_PER_S * 10f64.powf(rng.gen_range(-2.0..0.0))
                } else {
                    0.0
                };
                let to_appliance = self.appliances > 0 && rng.gen_bool(APPLIANCE_FRACTION);
                let demand = if to_appliance {
                    let a = rng.gen_range(0..self.appliances);
                    // request on the uplink, the appliance, the response on the downlink
                    let read = rng.gen_bool(0.5);
                    let (up, down) = if read { (0.05 * d, d) } else { (d, 0.05 * d) };
                    vec![
                        (2 * src, up),
                        (2 * self.servers + a, d),
                        (2 * src + 1, down),
                    ]
                } else {
                    let mut dst = rng.gen_range(0..self.servers);
                    if dst == src && self.servers > 1 {
                        dst = (dst + 1) % self.servers;
                    }
                    if dst == src {
                        // a single server: same-host traffic crosses no link
                        vec![]
                    } else {
                        vec![(2 * src, d), (2 * dst + 1, d)]
                    }
                };
                p.add_flow(t, 1.0, &demand).map_err(|e| e.to_string())?;
            }
            v += size;
        }
        Ok(p)
    }
}
