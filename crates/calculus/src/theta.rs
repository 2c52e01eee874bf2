//! The per-tenant loop of the analyses whose bounds are minima over θ (SNC's and the
//! martingale's): each tenant with a [`Hint`] is first bounded at its hint's θs, which is a
//! valid bound wherever it is defined, and kept when within the hint's budget; any other is
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
    let mut flows = Vec::with_capacity(spec.flows.len());
    let mut total = 0.0;
    for (&f, &theta) in spec.flows.iter().zip(&hint.thetas) {
        let Some(seconds) = an.flow_bound_at(f, epsilon, theta)? else {
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
