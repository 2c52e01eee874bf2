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

use crate::theta::{self, OverTheta};
use crate::{Bound, BoundOptions, CalculusError, Hint, HintedBound, Method, ThetaSearch};
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

/// SNC's [`Analysis`] under one method and θ search, as the θ loop sees it: hints are
/// checked only under [`ThetaSearch::Brent`] (the grid reproduces the original's numbers).
struct Search<'s, 'a> {
    analysis: &'s mut Analysis<'a>,
    method: Method,
    search: ThetaSearch,
}

impl OverTheta for Search<'_, '_> {
    fn flow_minimum(
        &mut self,
        f: usize,
        epsilon: f64,
    ) -> Result<(Bound, Option<f64>), CalculusError> {
        self.analysis
            .flow_minimum(f, self.method, epsilon, self.search)
    }

    fn flow_bound_at(
        &mut self,
        f: usize,
        epsilon: f64,
        theta: f64,
    ) -> Result<Option<f64>, CalculusError> {
        if self.search != ThetaSearch::Brent {
            return Ok(None);
        }
        self.analysis.flow_bound_at(f, self.method, epsilon, theta)
    }
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
    let mut search = Search {
        analysis: &mut analysis,
        method,
        search: opts.theta,
    };
    theta::bound_tenants(&mut search, net, level, tenants, opts, hints, each)
}
