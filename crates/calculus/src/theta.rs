//! The per-tenant loop of the analyses whose bounds are minima over θ (SNC's and the
//! martingale's): each tenant with a [`Hint`] is first bounded at its hint's θs, which is a
//! valid bound wherever it is defined, and kept when within the hint's budget (each flow only
//! needs to fit in its share of it, [`OverTheta::flow_within_at`]); where a flow does not fit
//! there, it is minimised over θ alone, and a tenant that does not fit even so, or has no
//! hint, has every flow minimised ([`crate::bound_hinted`]).

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

    /// Flow `f`'s bound at `theta` checked against `limit_s` [s]. An analysis that can tell
    /// whether a delay is within the limit more cheaply than it computes the bound may answer
    /// [`Check::Within`] with the limit itself.
    fn flow_within_at(
        &mut self,
        f: usize,
        epsilon: f64,
        theta: f64,
        limit_s: f64,
    ) -> Result<Check, CalculusError> {
        Ok(match self.flow_bound_at(f, epsilon, theta)? {
            Some(s) if s <= limit_s => Check::Within(s),
            Some(s) => Check::Over(s),
            None => Check::Undefined,
        })
    }
}

/// A flow's bound at one θ checked against a limit ([`OverTheta::flow_within_at`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Check {
    /// a bound [s] at most the limit (the limit itself, or the bound there)
    Within(f64),
    /// the bound [s] there, above the limit
    Over(f64),
    /// no bound there
    Undefined,
}

impl Check {
    /// The bound [s] (or the limit it is within), `None` where undefined.
    fn seconds(self) -> Option<f64> {
        match self {
            Check::Within(s) | Check::Over(s) => Some(s),
            Check::Undefined => None,
        }
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
            None => AtHint::Missed(vec![None; spec.flows.len()]),
        };
        let (flows, thetas, searched) = match checked {
            AtHint::Kept {
                flows,
                thetas,
                searched,
            } => (flows, thetas, searched),
            AtHint::Missed(mut found) => {
                let mut flows = Vec::with_capacity(spec.flows.len());
                let mut thetas = Vec::with_capacity(spec.flows.len());
                for (i, &f) in spec.flows.iter().enumerate() {
                    let (bound, theta) = match found.get_mut(i).and_then(Option::take) {
                        Some(m) => m,
                        None => an.flow_minimum(f, epsilon)?,
                    };
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

/// A tenant checked at its hint ([`at_hint`]).
enum AtHint {
    /// its flows' bounds within the budget, some of them searched
    Kept {
        flows: Vec<FlowBound>,
        thetas: Vec<Option<f64>>,
        searched: bool,
    },
    /// not within the budget: the minima found so far, by flow (the rest are to be searched)
    Missed(Vec<Option<(Bound, Option<f64>)>>),
}

/// Tenant `t`'s flows bounded at the hint's θs where that keeps their sum within the hint's
/// budget. Each flow but the last is first checked within its share of what is left of the
/// budget ([`Hint::shares`]), the last within all that is left; a flow over its share keeps
/// its bound where it fits in what is left, if need be after the flows kept at their shares
/// are bounded exactly; a flow that does not fit at its hint's θ is searched alone and kept
/// where its minimum fits. So the check keeps a tenant wherever the flows' bounds at the
/// hint's θs sum to within the budget, and a tenant it misses is one whose minima do not fit
/// (the search decides the same: each minimum is at most the bound at any θ).
fn at_hint(
    an: &mut dyn OverTheta,
    net: &Network,
    t: usize,
    epsilon: f64,
    hint: &Hint,
) -> Result<AtHint, CalculusError> {
    let spec = &net.tenants[t];
    let n = spec.flows.len();
    let mut found: Vec<Option<(Bound, Option<f64>)>> = vec![None; n];
    if hint.thetas.len() != n {
        return Ok(AtHint::Missed(found));
    }
    let weights = shares(hint, n);
    // each flow's bound [s], and whether it is its share rather than its bound
    let mut seconds: Vec<(f64, bool)> = Vec::with_capacity(n);
    let mut thetas: Vec<Option<f64>> = Vec::with_capacity(n);
    for (i, (&f, &theta)) in spec.flows.iter().zip(&hint.thetas).enumerate() {
        let left = room(hint, &seconds);
        let rest: f64 = weights.iter().skip(i).sum();
        // the flow's bound at the hint's θ (or its share, where within it), if defined
        let (at, limit) = match weights.get(i) {
            Some(w) if i + 1 < n && rest > 0.0 => {
                let limit = left * (w / rest);
                let at = an.flow_within_at(f, epsilon, theta, limit)?.seconds();
                (at, limit)
            }
            // no shares: the flows before the last are bounded exactly
            _ if i + 1 < n => (an.flow_bound_at(f, epsilon, theta)?, f64::NAN),
            _ => (an.flow_within_at(f, epsilon, theta, left)?.seconds(), left),
        };
        if let Some(s) = at {
            if fits(an, spec.flows.as_slice(), hint, epsilon, &mut seconds, s)? {
                seconds.push((s, s == limit));
                thetas.push(Some(theta));
                continue;
            }
        }
        // not within what is left at the hint's θ: its minimum may be
        let (bound, th) = an.flow_minimum(f, epsilon)?;
        let min = bound.seconds();
        found[i] = Some((bound, th));
        match min {
            Some(s) if fits(an, spec.flows.as_slice(), hint, epsilon, &mut seconds, s)? => {
                seconds.push((s, false));
                thetas.push(th);
            }
            _ => return Ok(AtHint::Missed(found)),
        }
    }
    let searched = found.iter().any(Option::is_some);
    let flows = spec
        .flows
        .iter()
        .zip(&seconds)
        .map(|(&f, &(s, _))| FlowBound {
            flow: f,
            name: net.flows[f].name.clone(),
            epsilon,
            bound: Bound::Within(s),
        })
        .collect();
    Ok(AtHint::Kept {
        flows,
        thetas,
        searched,
    })
}

/// Whether a next flow's bound of `s` [s] fits in what the flows bounded so far (`seconds`,
/// each with whether it is its share rather than its bound) leave of the hint's budget; where
/// it does not, the flows kept at their shares are first bounded exactly at the hint's θs
/// (which may leave more room). A NaN bound or budget fits nowhere.
fn fits(
    an: &mut dyn OverTheta,
    flows: &[usize],
    hint: &Hint,
    epsilon: f64,
    seconds: &mut [(f64, bool)],
    s: f64,
) -> Result<bool, CalculusError> {
    if s <= room(hint, seconds) {
        return Ok(true);
    }
    if !seconds.iter().any(|s| s.1) {
        return Ok(false);
    }
    for (j, (&g, &th)) in flows
        .iter()
        .zip(&hint.thetas)
        .enumerate()
        .take(seconds.len())
    {
        if seconds[j].1 {
            match an.flow_bound_at(g, epsilon, th)? {
                Some(b) => seconds[j] = (b, false),
                None => return Ok(false),
            }
        }
    }
    Ok(s <= room(hint, seconds))
}

/// What the flows bounded so far ([`fits`]) leave of the hint's budget [s].
fn room(hint: &Hint, seconds: &[(f64, bool)]) -> f64 {
    hint.budget_s - seconds.iter().map(|s| s.0).sum::<f64>()
}

/// The weights in which a hint shares its budget among a tenant's `n` flows: its
/// [`Hint::shares`] where there is one finite, non-negative weight per flow and some positive,
/// otherwise none (the flows before the last are then bounded exactly).
fn shares(hint: &Hint, n: usize) -> Vec<f64> {
    let usable = hint.shares.len() == n
        && hint.shares.iter().all(|w| w.is_finite() && *w >= 0.0)
        && hint.shares.iter().any(|w| *w > 0.0);
    if usable {
        hint.shares.clone()
    } else {
        Vec::new()
    }
}
