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
//! convolution rule for equal rates, so that it reproduces SNC-Calculator's numbers: its
//! response flows, and its request flows at the ε it gives them (SNC-Calculator's `initFlow`
//! gives a client's first flow the client's whole ε and the second ε/2, a union-bound fault
//! not copied here; `bench/fidelity` and the README compare flow by flow);
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
pub use network::{Analysis, Present};
pub use search::Minimum;

use crate::{
    effective_slo, tenant_result, Bound, BoundOptions, CalculusError, FlowBound, Hint, HintedBound,
    Method, ThetaSearch,
};
use std::ops::ControlFlow;
use tailbound_model::Network;

pub(crate) fn bound_tenants(
    net: &Network,
    method: Method,
    priorities: &[u32],
    tenants: &[usize],
    opts: &BoundOptions,
    hints: &[Option<Hint>],
    each: &mut dyn FnMut(&mut HintedBound) -> ControlFlow<()>,
) -> Result<Vec<HintedBound>, CalculusError> {
    let analysis = Analysis::new(net, method, priorities)?;
    let level = |t: usize| priorities.get(t).copied().unwrap_or(0);
    bound_with(analysis, net, method, &level, tenants, opts, hints, each)
}

/// [`bound_tenants`] of the tenants `present` says are there ([`Analysis::over`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn bound_tenants_over(
    net: &Network,
    method: Method,
    present: &dyn Present,
    tenants: &[usize],
    opts: &BoundOptions,
    hints: &[Option<Hint>],
    each: &mut dyn FnMut(&mut HintedBound) -> ControlFlow<()>,
) -> Result<Vec<HintedBound>, CalculusError> {
    let analysis = Analysis::over(net, method, present);
    let level = |t: usize| present.level(t).unwrap_or(0);
    bound_with(analysis, net, method, &level, tenants, opts, hints, each)
}

#[allow(clippy::too_many_arguments)]
fn bound_with(
    mut analysis: Analysis,
    net: &Network,
    method: Method,
    level: &dyn Fn(usize) -> u32,
    tenants: &[usize],
    opts: &BoundOptions,
    hints: &[Option<Hint>],
    each: &mut dyn FnMut(&mut HintedBound) -> ControlFlow<()>,
) -> Result<Vec<HintedBound>, CalculusError> {
    let mut out = Vec::with_capacity(tenants.len());
    for (k, &t) in tenants.iter().enumerate() {
        let spec = &net.tenants[t];
        let slo = effective_slo(spec.slo, opts);
        let epsilon = slo.percentile.epsilon() / spec.flows.len().max(1) as f64;
        let priority = level(t);
        let hint = hints.get(k).and_then(Option::as_ref);
        if let Some(checked) = hint
            .filter(|_| opts.theta == ThetaSearch::Brent)
            .map(|h| at_hint(&mut analysis, net, t, method, epsilon, h))
            .transpose()?
            .flatten()
        {
            let (flows, thetas) = checked;
            let mut b = HintedBound {
                bound: tenant_result(net, t, priority, opts, flows),
                thetas,
                searched: false,
            };
            let next = each(&mut b);
            out.push(b);
            if next.is_break() {
                break;
            }
            continue;
        }
        let mut flows = Vec::with_capacity(spec.flows.len());
        let mut thetas = Vec::with_capacity(spec.flows.len());
        for &f in &spec.flows {
            let (bound, theta) = analysis.flow_minimum(f, method, epsilon, opts.theta)?;
            tracing::debug!(tenant = %spec.name, flow = %net.flows[f].name, ?bound, "snc bound");
            thetas.push(theta);
            flows.push(FlowBound {
                flow: f,
                name: net.flows[f].name.clone(),
                epsilon,
                bound,
            });
        }
        let mut b = HintedBound {
            bound: tenant_result(net, t, priority, opts, flows),
            thetas,
            searched: true,
        };
        let next = each(&mut b);
        out.push(b);
        if next.is_break() {
            break;
        }
    }
    Ok(out)
}

/// Tenant `t`'s flows bounded exactly at the hint's θs, when every one is defined there and
/// their sum is within the hint's budget (`None`: search instead).
#[allow(clippy::type_complexity)]
fn at_hint(
    analysis: &mut Analysis,
    net: &Network,
    t: usize,
    method: Method,
    epsilon: f64,
    hint: &Hint,
) -> Result<Option<(Vec<FlowBound>, Vec<Option<f64>>)>, CalculusError> {
    let spec = &net.tenants[t];
    if hint.thetas.len() != spec.flows.len() {
        return Ok(None);
    }
    let mut flows = Vec::with_capacity(spec.flows.len());
    let mut total = 0.0;
    for (&f, &theta) in spec.flows.iter().zip(&hint.thetas) {
        let Some(seconds) = analysis.flow_bound_at(f, method, epsilon, theta)? else {
            return Ok(None);
        };
        total += seconds;
        // a NaN budget admits nothing
        if !matches!(
            total.partial_cmp(&hint.budget_s),
            Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
        ) {
            return Ok(None);
        }
        flows.push(FlowBound {
            flow: f,
            name: net.flows[f].name.clone(),
            epsilon,
            bound: Bound::Within(seconds),
        });
    }
    let thetas = hint.thetas.iter().copied().map(Some).collect();
    Ok(Some((flows, thetas)))
}
