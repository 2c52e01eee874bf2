//! The MRA interface `A ← MRA(D, W, C)` (pulsar §4.1, eq. 1) and its three mechanisms.

use crate::problem::{Allocation, Problem};
use serde::{Deserialize, Serialize};

/// A multi-resource allocation mechanism: any of them can serve as a tenant's local policy
/// (eq. 2) or the provider's global policy (eq. 3).
pub trait Mra {
    /// short name (`drf`, `hdrf`, `first-fit`)
    fn name(&self) -> &'static str;
    /// The allocation of `p`: never above a flow's demand nor a resource's capacity.
    fn allocate(&self, p: &Problem) -> Allocation;
}

/// The mechanisms tailbound offers, as named in specs and on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// weighted DRF over flows (demand-capped progressive filling)
    #[default]
    Drf,
    /// H-DRF: tenants by weight, then their flows
    Hdrf,
    /// first-fit by decreasing flow weight
    FirstFit,
}

tailbound_model::names!(Mechanism, "allocation mechanism", {
    Drf => "drf",
    Hdrf => "hdrf",
    FirstFit => "first-fit",
});

impl Mechanism {
    /// Parses the names and the aliases `h-drf`, `firstfit`, `ff`.
    pub fn parse(s: &str) -> Option<Mechanism> {
        match s.trim().to_ascii_lowercase().as_str() {
            "h-drf" => Some(Mechanism::Hdrf),
            "firstfit" | "ff" => Some(Mechanism::FirstFit),
            other => other.parse().ok(),
        }
    }
}

impl Mra for Mechanism {
    fn name(&self) -> &'static str {
        self.as_str()
    }

    fn allocate(&self, p: &Problem) -> Allocation {
        match self {
            Mechanism::Drf => crate::drf::drf(p),
            Mechanism::Hdrf => crate::hdrf::hdrf(p),
            Mechanism::FirstFit => crate::drf::first_fit(p),
        }
    }
}
