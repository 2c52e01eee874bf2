//! Latency bounds: given tenants' traffic models on a network of queues, an upper bound on
//! each tenant's request latency at its SLO percentile.
//!
//! Two calculi, one interface ([`bound`]):
//! * [`snc`]: stochastic network calculus (snc-meister §3–4, Table 1): MMPP arrivals and
//!   constant-rate links as (ρ(θ), σ(θ)) MGF bounds, the aggregate, leftover, output and
//!   convolution operators, the latency bound minimised over θ, Hölder's inequality for
//!   dependent inputs; and three network analyses: SNC-Meister's (§4.1), hop-by-hop and
//!   per-hop convolution.
//! * [`dnc`]: deterministic network calculus: token-bucket and concave piecewise-linear arrival
//!   curves, rate-latency service, static-priority leftover, delay bounds; the
//!   PriorityMeister-style analysis and workload-compactor eqs. (1), (5)–(7).
//!
//! * [`martingale`]: stochastic network calculus with exponential martingales of the MMPPs'
//!   time-reversed chains and Doob's inequality instead of the union bound over time (Ciucu,
//!   Poloczek and Schmitt 2013; Poloczek and Ciucu 2014), per arrival of the analysed flow, at
//!   FIFO and static-priority queues and over SNC-Meister's two-queue paths.
//!
//! [`mg1`] is not a calculus but an exact reference: the stationary workload of one FIFO queue
//! fed by compound Poisson batches (Pollaczek–Khinchine), against which the SNC bounds of the
//! same model are tested.
//!
//! This crate does no I/O and reads no clock. Networks come from `tailbound-model`
//! ([`Network`]); building them from files lives in `tailbound-scenario`. Non-finite numbers
//! never leave the crate: an unstable queue gives [`Bound::Unbounded`], never NaN or infinity.

pub mod dnc;
pub mod martingale;
pub mod mg1;
pub mod reach;
pub mod snc;
mod theta;

pub use reach::{QueueIndex, Reach};

use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;
use tailbound_model::{Network, NetworkError, Percentile, Slo};

/// Which analysis computes the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// SNC with SNC-Meister's network analysis (§4.1 key ideas 1 and 2, §4.2 dependencies)
    SncMeister,
    /// SNC one queue at a time, ε split per hop (the "hop-by-hop" baseline of Fig. 7)
    SncHop,
    /// SNC leftover per hop, then convolution of the leftovers (the "convolution" baseline)
    SncConv,
    /// DNC with static priorities (PriorityMeister-style), arrival curves from r-b curves
    Dnc,
    /// SNC with martingale envelopes and Doob's inequality (see [`martingale`])
    SncMartingale,
}

tailbound_model::names!(Method, "method", {
    SncMeister => "snc-meister",
    SncHop => "snc-hop",
    SncConv => "snc-conv",
    Dnc => "dnc",
    SncMartingale => "snc-martingale",
});

/// How the SNC bound is minimised over θ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThetaSearch {
    /// a robust 1-D minimiser on log θ over the stability region (default)
    #[default]
    Brent,
    /// the original's coarse-to-fine grid sweep, for reproducing its numbers
    Grid,
}

tailbound_model::names!(ThetaSearch, "θ search", { Brent => "brent", Grid => "grid" });

/// Options of one bound computation.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct BoundOptions {
    pub theta: ThetaSearch,
    /// when set, every tenant's percentile is replaced by this one
    pub percentile: Option<Percentile>,
}

/// A latency bound: a finite number of seconds, or unbounded with the reason. No caller can
/// mistake `Unbounded` for a number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// bound [s], finite and ≥ 0
    Within(f64),
    /// no finite bound: e.g. a queue whose load reaches its capacity
    Unbounded(String),
}

impl Bound {
    /// A finite bound, or `Unbounded` when `seconds` is not a finite number ≥ 0.
    pub fn from_seconds(seconds: f64, reason: impl FnOnce() -> String) -> Bound {
        if seconds.is_finite() && seconds >= 0.0 {
            Bound::Within(seconds)
        } else {
            Bound::Unbounded(reason())
        }
    }

    /// The bound [s] when finite.
    pub fn seconds(&self) -> Option<f64> {
        match self {
            Bound::Within(s) => Some(*s),
            Bound::Unbounded(_) => None,
        }
    }

    /// Sum of two bounds (e.g. a tenant's request and response flows); unbounded if either is.
    pub fn plus(&self, other: &Bound) -> Bound {
        match (self, other) {
            (Bound::Within(a), Bound::Within(b)) => {
                Bound::from_seconds(a + b, || format!("sum of {a} s and {b} s is not finite"))
            }
            (Bound::Unbounded(r), _) | (_, Bound::Unbounded(r)) => Bound::Unbounded(r.clone()),
        }
    }

    /// Whether this bound meets a latency target [s]; never true when unbounded.
    pub fn meets(&self, slo_s: f64) -> bool {
        self.seconds().is_some_and(|s| s <= slo_s)
    }
}

/// The bound of one flow of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowBound {
    /// index into [`Network::flows`]
    pub flow: usize,
    pub name: String,
    /// violation probability this flow's bound holds at (the tenant's ε split over its flows)
    pub epsilon: f64,
    pub bound: Bound,
}

/// The bound of one tenant: the sum of its flows' bounds (union bound over the flows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantBound {
    /// index into [`Network::tenants`]
    pub tenant: usize,
    pub name: String,
    /// the SLO checked (with the percentile override applied)
    pub slo: Slo,
    /// priority level used, 0 highest
    pub priority: u32,
    pub flows: Vec<FlowBound>,
    pub total: Bound,
    pub meets_slo: bool,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CalculusError {
    #[error("invalid network: {0}")]
    Network(#[from] NetworkError),
    #[error("flow {flow:?} has no {model}; the {method} analysis needs one for every flow (build the network from traces, or use another --method)")]
    MissingModel {
        flow: String,
        model: &'static str,
        method: &'static str,
    },
    #[error("unknown tenant index {index}; the network has {len} tenants")]
    UnknownTenant { index: usize, len: usize },
    #[error(
        "flows use MMPP time steps {a} s and {b} s; all MMPPs of one analysis need the same step"
    )]
    MixedSteps { a: f64, b: f64 },
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unsupported(String),
}

/// Bounds of the listed tenants (indices into `net.tenants`) under `method`.
///
/// Priorities come from [`Network::priorities`]; each tenant's violation probability
/// ε = 1 − p/100 is split evenly over its flows, and its bound is the sum of theirs.
pub fn bound(
    net: &Network,
    method: Method,
    tenants: &[usize],
    opts: &BoundOptions,
) -> Result<Vec<TenantBound>, CalculusError> {
    bound_with_progress(net, method, tenants, opts, &mut || {})
}

/// [`bound`], calling `done` after each tenant's bound (a caller's progress bar: the SNC
/// analyses of thousands of tenants take minutes).
pub fn bound_with_progress(
    net: &Network,
    method: Method,
    tenants: &[usize],
    opts: &BoundOptions,
    done: &mut dyn FnMut(),
) -> Result<Vec<TenantBound>, CalculusError> {
    let mut each = |_: &mut HintedBound| {
        done();
        ControlFlow::Continue(())
    };
    let hinted = bound_hinted(net, method, tenants, opts, &[], &mut each)?;
    Ok(hinted.into_iter().map(|h| h.bound).collect())
}

/// Where to check a tenant's SNC bound before minimising it ([`bound_hinted`]): the θ its
/// flows' bounds were minimised at before (by an earlier [`HintedBound::thetas`]), and the
/// most its bound may be.
#[derive(Debug, Clone, PartialEq)]
pub struct Hint {
    /// θ per flow of the tenant, in its flow order [1/work]
    pub thetas: Vec<f64>,
    /// the bound [s] within which the bound at these θs is taken as it is, without a search
    pub budget_s: f64,
    /// per flow, its share of the budget as a weight (its bound when these θs were found, for
    /// one): each flow but the last is first checked within its share of what the flows
    /// before it leave, which the martingale analysis tells by one evaluation; empty (or not
    /// one finite, non-negative weight per flow with some positive): the flows before the last
    /// are bounded exactly
    pub shares: Vec<f64>,
}

/// A tenant's bound from [`bound_hinted`].
#[derive(Debug, Clone, PartialEq)]
pub struct HintedBound {
    pub bound: TenantBound,
    /// θ per flow where its bound was evaluated [1/work], when the flow's bound is one SNC
    /// minimum without Hölder exponents or a martingale bound (a hint for the next time)
    pub thetas: Vec<Option<f64>>,
    /// whether any of its flows' bounds was minimised over θ (`false`: the hint's θs gave a
    /// bound within its budget, which was kept; `true` with a hint: the flows that did not fit
    /// at the hint's θs were minimised, and those that did may have kept their bounds there)
    pub searched: bool,
}

/// [`bound`], checking first each tenant that has a hint (`hints[k]` for `tenants[k]`;
/// missing ones have none) at the hint's θs under the SNC analyses with [`ThetaSearch::Brent`]
/// and under the martingale analysis (at the θ grid point nearest the hint's): a tenant whose
/// bound evaluated exactly there (every bound at any θ where it is defined is a valid one) is
/// within the hint's budget keeps that bound, possibly looser than its minimum (the martingale
/// analysis only checks that each flow's delay fits in its share of the budget,
/// [`Hint::shares`], and gives that share as the flow's bound); a flow that does not fit at
/// its hint's θ is minimised alone and kept where its minimum fits, and a tenant that does not
/// fit even so is minimised as [`bound`] does (its flows' minima found so far reused). Where
/// each minimum is at most the bound at any θ (the martingale analysis' grid scan; SNC's Brent
/// search where it finds the minimum) a tenant fits exactly where its minima do. A caller that
/// only needs to know whether bounds stay within budgets (admission control re-checking
/// admitted tenants) saves the θ search of every tenant that still meets its budget at its
/// last θ.
///
/// The tenants are bounded in the order given, each handed to `each` as it is found (which
/// may amend it, e.g. add delays of its own); bounding stops after the first for which `each`
/// breaks, and the bounds found up to there are returned. An admission check that only needs
/// the first SLO missed stops there instead of bounding the rest.
pub fn bound_hinted(
    net: &Network,
    method: Method,
    tenants: &[usize],
    opts: &BoundOptions,
    hints: &[Option<Hint>],
    each: &mut dyn FnMut(&mut HintedBound) -> ControlFlow<()>,
) -> Result<Vec<HintedBound>, CalculusError> {
    net.validate()?;
    if let Some(&index) = tenants.iter().find(|&&t| t >= net.tenants.len()) {
        return Err(CalculusError::UnknownTenant {
            index,
            len: net.tenants.len(),
        });
    }
    let priorities = net.priorities();
    let mut out = Vec::new();
    // DNC has no θ: every bound searched
    let mut searched = |bound: TenantBound| {
        let mut h = HintedBound {
            thetas: vec![None; bound.flows.len()],
            bound,
            searched: true,
        };
        let next = each(&mut h);
        out.push(h);
        next
    };
    match method {
        Method::SncMeister | Method::SncHop | Method::SncConv => {
            return snc::bound_tenants(net, method, &priorities, tenants, opts, hints, each)
        }
        Method::SncMartingale => {
            return martingale::bound_tenants(net, &priorities, tenants, opts, hints, each)
        }
        Method::Dnc => dnc::bound_tenants(net, &priorities, tenants, opts, &mut searched)?,
    }
    Ok(out)
}

/// [`bound_hinted`] under [`Method::SncMeister`], [`Method::SncHop`] or [`Method::SncConv`]
/// of the tenants of `net` that `present` says are there, at its levels and in its groups
/// ([`snc::Analysis::over`]): the bounds of the network of those tenants alone, at the cost of
/// what the bounds of `tenants` (present ones) read, not of the network. The network is not
/// validated again (a long-running caller validates what it appends); a flow's missing or
/// inconsistent MMPP is an error when a bound reads it.
///
/// The tenants are bounded in the order given and handed to `each` as in [`bound_hinted`].
pub fn bound_hinted_over(
    net: &Network,
    method: Method,
    present: &dyn snc::Present,
    tenants: &[usize],
    opts: &BoundOptions,
    hints: &[Option<Hint>],
    each: &mut dyn FnMut(&mut HintedBound) -> ControlFlow<()>,
) -> Result<Vec<HintedBound>, CalculusError> {
    if let Some(&index) = tenants.iter().find(|&&t| t >= net.tenants.len()) {
        return Err(CalculusError::UnknownTenant {
            index,
            len: net.tenants.len(),
        });
    }
    if let Some(&t) = tenants.iter().find(|&&t| present.level(t).is_none()) {
        return Err(CalculusError::Invalid(format!(
            "tenant {:?} is not among the tenants analysed, so it has no bound there",
            net.tenants[t].name
        )));
    }
    match method {
        Method::SncMeister | Method::SncHop | Method::SncConv => {
            snc::bound_tenants_over(net, method, present, tenants, opts, hints, each)
        }
        Method::Dnc | Method::SncMartingale => Err(CalculusError::Unsupported(format!(
            "the {method} analysis bounds whole networks only"
        ))),
    }
}

/// Bounds of every tenant.
pub fn bound_all(
    net: &Network,
    method: Method,
    opts: &BoundOptions,
) -> Result<Vec<TenantBound>, CalculusError> {
    let all: Vec<usize> = (0..net.tenants.len()).collect();
    bound(net, method, &all, opts)
}

/// What packets add to a fluid bound on tenant `tenant`'s latency [s] when links carry work
/// in packets of `mtu_bytes`. The calculus serves fluid work; a real link (and the simulator)
/// sends store-and-forward packets, non-preemptive between packets, so each link queue on the
/// tenant's path can cost one packet of store-and-forward plus one packet of a lower level
/// ahead of it: 2·mtu/R per link queue crossed (the packetizer term of network calculus;
/// 24 µs at 1 Gbit/s with Ethernet's MTU), plus 1 µs for the simulator's rounding of times to
/// whole nanoseconds. Storage work is served whole in both and adds nothing.
pub fn packetization_allowance_s(net: &Network, tenant: usize, mtu_bytes: u64) -> f64 {
    1e-6 + net.tenants[tenant]
        .flows
        .iter()
        .map(|&f| &net.flows[f])
        .filter(|f| f.stage.is_link())
        .flat_map(|f| &f.path)
        .map(|&q| 2.0 * mtu_bytes as f64 / net.queues[q].rate)
        .sum::<f64>()
}

/// The SLO a tenant is checked against under `opts` (percentile override applied).
pub fn effective_slo(slo: Slo, opts: &BoundOptions) -> Slo {
    Slo {
        percentile: opts.percentile.unwrap_or(slo.percentile),
        ..slo
    }
}

/// Assembles a tenant's result from its flows' bounds.
pub fn tenant_result(
    net: &Network,
    tenant: usize,
    priority: u32,
    opts: &BoundOptions,
    flows: Vec<FlowBound>,
) -> TenantBound {
    let t = &net.tenants[tenant];
    let slo = effective_slo(t.slo, opts);
    let total = flows
        .iter()
        .fold(Bound::Within(0.0), |acc, f| acc.plus(&f.bound));
    TenantBound {
        tenant,
        name: t.name.clone(),
        slo,
        priority,
        meets_slo: total.meets(slo.latency_s),
        flows,
        total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_seconds_are_unbounded() {
        assert_eq!(Bound::from_seconds(0.5, String::new), Bound::Within(0.5));
        for x in [f64::NAN, f64::INFINITY, -1.0] {
            assert!(matches!(
                Bound::from_seconds(x, || "x".into()),
                Bound::Unbounded(_)
            ));
        }
        let u = Bound::Unbounded("link a-out overloaded".into());
        assert!(!u.meets(1e9));
        assert_eq!(Bound::Within(1.0).plus(&u), u);
        assert!(Bound::Within(0.01).meets(0.01));
    }
}
