//! The per-tenant loop of the analyses whose bounds are minima over θ (SNC's and the
//! martingale's): each tenant with a [`Hint`] is first bounded at its hint's θs, which is a
//! valid bound wherever it is defined, and kept when within the hint's budget (its last flow
//! only needs to fit in what the others leave, [`OverTheta::flow_within_at`]); any other is
//! minimised over θ ([`crate::bound_hinted`]).

use crate::{effective_slo, tenant_result, Bound, BoundOptions, CalculusError, FlowBound};
use crate::{Hint, HintedBound};
use std::ops::ControlFlow;
use tailbound_model::Network;

/// An analysis whose flow bounds are minima over θ of bounds valid at every θ.
pub(crate) trait OverTheta {
    /// Flow `f`'s bound at violation probability `epsilon`, minimised over θ, and the θ of
    /// the minimum when that one θ gives it (a hint for the next time).
    fn flow_minimum(
        &mut self,
        f: usize,
        epsilon: f64,
    ) -> Result<(Bound, Option<f64>), CalculusError>;

    /// Flow `f`'s bound [s] at `theta` (no search), `None` where it is undefined there.
    fn flow_bound_at(
        &mut self,
        f: usize,
        epsilon: f64,
        theta: f64,
    ) -> Result<Option<f64>, CalculusError>;

    /// A bound [s] of flow `f` at `theta` that is at most `limit_s`, `None` where its bound
    /// there is undefined or above the limit. An analysis that can tell whether a delay is
    /// within the limit more cheaply than it computes the bound may return the limit itself.
    fn flow_within_at(
        &mut self,
        f: usize,
        epsilon: f64,
        theta: f64,
        limit_s: f64,
    ) -> Result<Option<f64>, CalculusError> {
        Ok(self
            .flow_bound_at(f, epsilon, theta)?
            .filter(|&s| s <= limit_s))
    }
}

/// The bounds of `tenants` in that order under `an`, each handed to `each` until it breaks;
/// `hints[k]` is where `tenants[k]` is checked first.
pub(crate) fn bound_tenants(
    an: &mut dyn OverTheta,
    net: &Network,
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
        let checked = match hints.get(k).and_then(Option::as_ref) {
            Some(h) => at_hint(an, net, t, epsilon, h)?,
            None => None,
        };
        let (flows, thetas, searched) = match checked {
            Some((flows, thetas)) => (flows, thetas, false),
            None => {
                let mut flows = Vec::with_capacity(spec.flows.len());
                let mut thetas = Vec::with_capacity(spec.flows.len());
                for &f in &spec.flows {
                    let (bound, theta) = an.flow_minimum(f, epsilon)?;
                    tracing::debug!(tenant = %spec.name, flow = %net.flows[f].name, ?bound, "bound");
                    thetas.push(theta);
                    flows.push(FlowBound {
                        flow: f,
                        name: net.flows[f].name.clone(),
                        epsilon,
                        bound,
                    });
                }
                (flows, thetas, true)
            }
        };
        let mut b = HintedBound {
            bound: tenant_result(net, t, level(t), opts, flows),
            thetas,
            searched,
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
    an: &mut dyn OverTheta,
    net: &Network,
    t: usize,
    epsilon: f64,
    hint: &Hint,
) -> Result<Option<(Vec<FlowBound>, Vec<Option<f64>>)>, CalculusError> {
    let spec = &net.tenants[t];
    if hint.thetas.len() != spec.flows.len() {
        return Ok(None);
    }
    let last = spec.flows.len().saturating_sub(1);
    let mut flows = Vec::with_capacity(spec.flows.len());
    let mut total = 0.0;
    for (i, (&f, &theta)) in spec.flows.iter().zip(&hint.thetas).enumerate() {
        let left = hint.budget_s - total;
        // the last flow only has to fit in what the others leave of the budget
        let seconds = if i == last {
            an.flow_within_at(f, epsilon, theta, left)?
        } else {
            an.flow_bound_at(f, epsilon, theta)?
        };
        // within what is left (a NaN budget admits nothing)
        let Some(seconds) = seconds.filter(|&s| s <= left) else {
            return Ok(None);
        };
        total += seconds;
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
