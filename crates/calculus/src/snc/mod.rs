//! Stochastic network calculus (SNC): latency bounds at a percentile for tenants whose traffic
//! is an MMPP, over a network of constant-rate queues with static priorities.
//!
//! Sources: snc-meister §3 (Table 1: the operators), §4.1 (the network analysis, key ideas 1
//! and 2), §4.2 (dependencies, Hölder), §4.4 (the θ sweep); the original SNC-Calculator's
//! `SNCOperators.cpp` and `SNC.cpp` for details the paper leaves out. The deterministic
//! calculus lives in [`crate::dnc`]; reading scenario files lives in `tailbound-scenario`.
//!
//! Units: the analysis runs in discrete time with the flows' common MMPP step Δ [s] (10 µs
//! for SNC-Meister's configs). MgfArrival and service bounds are (ρ(θ) [work/step],
//! σ(θ) [work]) with θ [1/work]; a queue of rate R [work/s] is ρ = −R·Δ, σ = 0. Latencies come
//! out in steps and leave this module as steps × Δ [s].
//!
//! * [`mmpp`]: the MMPP arrival bound ρ = ln sp(diag(M(θ))·P)/θ, robust for per-step chains.
//! * [`algebra`]: [`MgfArrival`] and [`MgfService`] (distinct types), the operators ⊕ ⊖ ⊘ ⊗, the
//!   latency bound, dependency sets and Hölder slots.
//! * [`search`]: minimising the bound over θ (Brent on ln θ, or the original's grid) and over
//!   the Hölder parameters.
//! * [`Analysis`]: the three network analyses of [`Method`]: SNC-Meister, hop-by-hop,
//!   convolution.
//!
//! A tenant's violation probability ε = 1 − p/100 is split evenly over its flows (union
//! bound) and its bound is the sum of its flows' bounds. A flow with no finite bound (its
//! queues' load reaches their capacity, or no θ is stable) is [`Bound::Unbounded`] with the
//! reason; never NaN, never "meets its SLO". [`ThetaSearch::Grid`] also selects the original's
//! convolution rule for equal rates, so that it reproduces SNC-Calculator's numbers;
//! [`ThetaSearch::Brent`] uses the exact tandem of constant-rate links.

pub mod algebra;
pub mod mmpp;
mod network;
pub mod search;

pub use algebra::{
    Algebra, ConvolutionRule, Deps, Eval, LatencyProblem, MgfArrival, MgfService, RhoSigma,
};
pub use mmpp::{perron_root, MmppBound};
pub(crate) use network::most_loaded_queue;
pub use network::Analysis;
pub use search::Minimum;

use crate::{
    effective_slo, tenant_result, Bound, BoundOptions, CalculusError, FlowBound, Method,
    TenantBound,
};
use tailbound_model::Network;

pub(crate) fn bound_tenants(
    net: &Network,
    method: Method,
    priorities: &[u32],
    tenants: &[usize],
    opts: &BoundOptions,
    done: &mut dyn FnMut(),
) -> Result<Vec<TenantBound>, CalculusError> {
    let mut analysis = Analysis::new(net, method, priorities)?;
    let mut out = Vec::with_capacity(tenants.len());
    for &t in tenants {
        let spec = &net.tenants[t];
        let slo = effective_slo(spec.slo, opts);
        let epsilon = slo.percentile.epsilon() / spec.flows.len().max(1) as f64;
        let mut flows = Vec::with_capacity(spec.flows.len());
        for &f in &spec.flows {
            let bound: Bound = analysis.flow_bound(f, method, epsilon, opts.theta)?;
            tracing::debug!(tenant = %spec.name, flow = %net.flows[f].name, ?bound, "snc bound");
            flows.push(FlowBound {
                flow: f,
                name: net.flows[f].name.clone(),
                epsilon,
                bound,
            });
        }
        let priority = priorities.get(t).copied().unwrap_or(0);
        out.push(tenant_result(net, t, priority, opts, flows));
        done();
    }
    Ok(out)
}
