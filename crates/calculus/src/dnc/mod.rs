//! Deterministic network calculus (DNC): worst-case latency bounds from arrival and service
//! curves, the PriorityMeister-style network analysis behind [`crate::Method::Dnc`], and
//! WorkloadCompactor's closed forms.
//!
//! The SNC counterpart lives in [`crate::snc`]; traffic models come from `tailbound-model`
//! (arrival curves are the duals of `tailbound-curves`' exact r-b curves); choosing rate limits
//! by LP and placing workloads lives in the policy layer, which mirrors [`wc`]'s formulas as
//! constraints. Time is in seconds, work in the queue's unit, rates in work per second.
//!
//! * [`curve`]: the algebra, exact on piecewise-linear curves — [`Envelope`] (concave; a token
//!   bucket b + r·t is the special case), [`ServiceCurve`] (convex, 0 up to a latency; rate-latency
//!   R·(t − T)⁺ is the special case), aggregate ([`Envelope::plus`]), convolution
//!   ([`ServiceCurve::convolve`]), output ([`output`]), static-priority leftover
//!   ([`ServiceCurve::leftover`]), delay and backlog bounds ([`delay_bound`], [`backlog_bound`]),
//!   shaper delay ([`shaper_delay`]). Sources: Le Boudec & Thiran, *Network Calculus*, ch. 1
//!   and 3; `shared/DESIGN.md` §Calculus.
//! * [`network`]: [`DncAnalysis`], per-flow bounds over a [`Network`] with static priorities
//!   (level 0 highest), cross traffic propagated hop by hop, bursts paid once.
//! * [`wc`]: workload-compactor §2.3 eqs. (1), (3), (5)–(7) on normalised capacity.
//!
//! DNC bounds are worst-case: they hold at every percentile, so a tenant's flows carry
//! `epsilon = 0` and the percentile override of [`BoundOptions`] does not change them.
//! Instability is never a NaN or infinity: the algebra returns [`DncError::Unstable`] and the
//! analysis turns it into [`crate::Bound::Unbounded`] (so `meets_slo` is false).

pub mod curve;
pub mod network;
pub mod wc;

pub use curve::{
    backlog_bound, delay_bound, output, shaper_delay, DncError, Envelope, RateLatency,
    ServiceCurve, ServicePiece,
};
pub use network::DncAnalysis;
pub use wc::{
    wc_eq3_lhs, wc_eq7_lhs, wc_latency, wc_min_rp, wc_multi_stage_latency, wc_relaxed_latency,
    TokenBucketAt,
};

use crate::{BoundOptions, CalculusError, TenantBound};
use std::ops::ControlFlow;
use tailbound_model::Network;

impl From<DncError> for CalculusError {
    fn from(e: DncError) -> CalculusError {
        CalculusError::Invalid(e.to_string())
    }
}

/// Bounds of the listed tenants under the DNC analysis ([`DncAnalysis`]), in that order, each
/// handed to `each` until it breaks; each tenant's bound is the sum of its flows' bounds.
pub(crate) fn bound_tenants(
    net: &Network,
    priorities: &[u32],
    tenants: &[usize],
    opts: &BoundOptions,
    each: &mut dyn FnMut(TenantBound) -> ControlFlow<()>,
) -> Result<(), CalculusError> {
    let mut analysis = DncAnalysis::new(net, priorities)?;
    for &t in tenants {
        let flows = analysis.tenant_flows(t)?;
        if each(crate::tenant_result(net, t, priorities[t], opts, flows)).is_break() {
            break;
        }
    }
    Ok(())
}
