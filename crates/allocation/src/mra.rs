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
        within_limits(
            p,
            match self {
                Mechanism::Drf => crate::drf::drf(p),
                Mechanism::Hdrf => crate::hdrf::hdrf(p),
                Mechanism::FirstFit => crate::drf::first_fit(p),
            },
        )
    }
}

/// The post-check behind [`Mra::allocate`]'s promise: every fraction in `[0, 1]` (no flow
/// above its demand) and no resource above its capacity. The mechanisms keep both already (H-DRF
/// keeps its water level as a double-double, so it is exact even when weights and demands span
/// many orders of magnitude); this is the guard behind the promise, for rounding in the last
/// bits: a resource over capacity has every flow crossing it scaled by the least
/// `capacity / use` over its path, which restores `Σ ≤ C`. A no-op otherwise.
fn within_limits(p: &Problem, mut a: Allocation) -> Allocation {
    for x in &mut a.fraction {
        *x = if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    }
    let ratio: Vec<f64> = a
        .usage(p)
        .iter()
        .zip(p.capacity())
        .map(|(&u, &c)| if u > c { c / u } else { 1.0 })
        .collect();
    if ratio.iter().any(|&r| r < 1.0) {
        for (i, x) in a.fraction.iter_mut().enumerate() {
            *x *= p.demand(i).map(|(j, _)| ratio[j]).fold(1.0, f64::min);
        }
    }
    a
}
