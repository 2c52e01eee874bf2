//! PriorityMeister-style DNC analysis of a [`Network`] (snc-meister §5.1's "PM" baseline, with
//! the operators of [`super::curve`]).
//!
//! For flow f of a tenant at level P (0 highest), crossing queues q_1..q_k:
//! * **cross traffic** at q_i is every other flow through q_i whose tenant's level is ≤ P:
//!   strictly higher levels pre-empt f; the same level is served FIFO with f, which this
//!   analysis treats as blind multiplexing (f gets only what the others leave, whatever the
//!   order) — conservative, never tighter than FIFO. Lower levels are invisible to f (fluid,
//!   pre-emptive priority). The tenant's own other flows through q_i count too (they compete).
//! * each cross flow g's **arrival curve at q_i** is its source curve pushed through its own
//!   upstream hops: α_g at hop j+1 = α_g at hop j ⊘ β_{g,j}, where β_{g,j} is g's leftover at
//!   its hop j (computed the same way, at g's level). Results are memoised per (flow, hop).
//! * f's leftover at q_i is β_{f,i} = [C_{q_i}·t − Σ_g α_g at q_i]⁺ (a queue of rate C is a
//!   strict service curve); its end-to-end service is β_{f,1} ⊗ … ⊗ β_{f,k} and its bound is
//!   h(α_f, ⊗β): f's burst is paid once, which is never looser (and usually tighter) than the
//!   sum of per-hop delays ([`DncAnalysis::flow_bound_per_hop_sum`], also provided).
//!
//! Source arrival curves are the flows' exact arrival curves ([`Flow::arrival`], the concave
//! duals of their r-b curves): PriorityMeister's "token buckets from the r-b curve" in the limit
//! of using every bucket. No rate limiter is modelled, so no shaper delay is added.
//!
//! A bound holds for every bit of every request (worst case), so each [`FlowBound`]'s
//! `epsilon` is 0. A queue whose competing load reaches its capacity makes the bound of every
//! flow depending on it [`Bound::Unbounded`] with the queue named. The dependency between
//! flows must be feed-forward (true for host-out → host-in paths); a cyclic dependency met
//! while computing a bound is [`CalculusError::Invalid`].

use super::curve::{delay_bound, output, DncError, Envelope, ServiceCurve};
use crate::{Bound, CalculusError, FlowBound};
use std::collections::HashMap;
use std::rc::Rc;
use tailbound_model::{Flow, Network};
use tracing::debug;

/// Why a computation stopped: an unbounded result (reported in the bound) or a hard error.
enum Fail {
    Unbounded(String),
    Fatal(CalculusError),
}

enum Memo<T> {
    InProgress,
    Done(Result<Rc<T>, String>),
}

/// The DNC analysis of one network, with memoised per-hop arrival curves and leftovers.
pub struct DncAnalysis<'a> {
    net: &'a Network,
    priorities: &'a [u32],
    sources: Vec<Rc<Envelope>>,
    /// per queue: (flow, position of the queue in the flow's path)
    at_queue: Vec<Vec<(usize, usize)>>,
    arrivals: HashMap<(usize, usize), Memo<Envelope>>,
    leftovers: HashMap<(usize, usize), Memo<ServiceCurve>>,
}

impl<'a> DncAnalysis<'a> {
    /// Checks the network, that `priorities` has one level per tenant and that every flow has
    /// an arrival curve ([`CalculusError::MissingModel`] otherwise).
    pub fn new(net: &'a Network, priorities: &'a [u32]) -> Result<DncAnalysis<'a>, CalculusError> {
        net.validate()?;
        if priorities.len() != net.tenants.len() {
            return Err(CalculusError::Invalid(format!(
                "{} priorities for {} tenants; give one level per tenant",
                priorities.len(),
                net.tenants.len()
            )));
        }
        let mut sources = Vec::with_capacity(net.flows.len());
        for f in &net.flows {
            let Some(a) = &f.arrival else {
                return Err(CalculusError::MissingModel {
                    flow: f.name.clone(),
                    model: "arrival curve",
                    method: "dnc",
                });
            };
            sources.push(Rc::new(Envelope::from(a)));
        }
        let mut at_queue = vec![Vec::new(); net.queues.len()];
        for (g, f) in net.flows.iter().enumerate() {
            for (pos, &q) in f.path.iter().enumerate() {
                at_queue[q].push((g, pos));
            }
        }
        Ok(DncAnalysis {
            net,
            priorities,
            sources,
            at_queue,
            arrivals: HashMap::new(),
            leftovers: HashMap::new(),
        })
    }

    fn flow(&self, f: usize) -> Result<&'a Flow, CalculusError> {
        self.net.flows.get(f).ok_or_else(|| {
            CalculusError::Invalid(format!(
                "unknown flow index {f}; the network has {} flows",
                self.net.flows.len()
            ))
        })
    }

    fn level(&self, f: usize) -> u32 {
        self.priorities[self.net.flows[f].tenant]
    }

    /// The arrival curve of `flow` entering hop `hop` of its path (hop 0: its source curve);
    /// `None` when unbounded (an upstream queue is overloaded).
    pub fn arrival_at(
        &mut self,
        flow: usize,
        hop: usize,
    ) -> Result<Option<Envelope>, CalculusError> {
        self.check_hop(flow, hop)?;
        lift(self.arrival_in(flow, hop).map(|a| (*a).clone()))
    }

    /// The leftover service `flow` gets at hop `hop` of its path; `None` when the competing
    /// load reaches the queue's capacity.
    pub fn leftover_at(
        &mut self,
        flow: usize,
        hop: usize,
    ) -> Result<Option<ServiceCurve>, CalculusError> {
        self.check_hop(flow, hop)?;
        lift(self.leftover(flow, hop).map(|s| (*s).clone()))
    }

    fn check_hop(&self, flow: usize, hop: usize) -> Result<(), CalculusError> {
        let f = self.flow(flow)?;
        if hop >= f.path.len() {
            return Err(CalculusError::Invalid(format!(
                "flow {:?} has {} hops, not {}",
                f.name,
                f.path.len(),
                hop + 1
            )));
        }
        Ok(())
    }

    /// The end-to-end bound of `flow` [s]: h(α_f, ⊗_i β_{f,i}) (bursts paid once).
    pub fn flow_bound(&mut self, flow: usize) -> Result<Bound, CalculusError> {
        let f = self.flow(flow)?;
        let result = (|| {
            let mut services = Vec::with_capacity(f.path.len());
            for hop in 0..f.path.len() {
                services.push(self.leftover(flow, hop)?);
            }
            let e2e = ServiceCurve::convolve_all(services.iter().map(|s| &**s))
                .map_err(|e| Fail::Fatal(e.into()))?;
            delay_bound(&self.sources[flow], &e2e).map_err(|e| {
                // name the bottleneck: the hop leaving the least rate
                let hop = (0..services.len())
                    .min_by(|&i, &j| services[i].rate().total_cmp(&services[j].rate()))
                    .unwrap_or(0);
                let queue = &self.net.queues[f.path[hop]].name;
                unbounded(
                    e,
                    format!(
                        "flow {:?} sends more than queue {queue:?} leaves it after traffic of its level and above",
                        f.name
                    ),
                )
            })
        })();
        self.finish(flow, result)
    }

    /// The per-hop-sum bound of `flow` [s]: Σ_i h(α_f at hop i, β_{f,i}), each hop paying the
    /// flow's (grown) burst again. Never below [`DncAnalysis::flow_bound`].
    pub fn flow_bound_per_hop_sum(&mut self, flow: usize) -> Result<Bound, CalculusError> {
        let f = self.flow(flow)?;
        let result = (|| {
            let mut total = 0.0;
            for hop in 0..f.path.len() {
                let a = self.arrival_in(flow, hop)?;
                let s = self.leftover(flow, hop)?;
                total += delay_bound(&a, &s)
                    .map_err(|e| unbounded(e, format!("flow {:?} at hop {hop}", f.name)))?;
            }
            Ok(total)
        })();
        self.finish(flow, result)
    }

    fn finish(&self, flow: usize, result: Result<f64, Fail>) -> Result<Bound, CalculusError> {
        let name = &self.net.flows[flow].name;
        match result {
            Ok(s) => {
                debug!(flow = %name, bound_s = s, "dnc bound");
                Ok(Bound::from_seconds(s, || {
                    format!("flow {name:?}: bound {s} s is not finite")
                }))
            }
            Err(Fail::Unbounded(reason)) => {
                debug!(flow = %name, %reason, "dnc bound unbounded");
                Ok(Bound::Unbounded(reason))
            }
            Err(Fail::Fatal(e)) => Err(e),
        }
    }

    fn arrival_in(&mut self, g: usize, hop: usize) -> Result<Rc<Envelope>, Fail> {
        if hop == 0 {
            return Ok(self.sources[g].clone());
        }
        match self.arrivals.get(&(g, hop)) {
            Some(Memo::Done(r)) => return r.clone().map_err(Fail::Unbounded),
            Some(Memo::InProgress) => return Err(self.cycle(g, hop)),
            None => {}
        }
        self.arrivals.insert((g, hop), Memo::InProgress);
        let result = (|| {
            let a = self.arrival_in(g, hop - 1)?;
            let s = self.leftover(g, hop - 1)?;
            let f = &self.net.flows[g];
            let queue = &self.net.queues[f.path[hop - 1]].name;
            output(&a, &s).map(Rc::new).map_err(|e| {
                unbounded(
                    e,
                    format!(
                        "flow {:?} leaving queue {queue:?} has no output bound",
                        f.name
                    ),
                )
            })
        })();
        self.memoise_arrival(g, hop, result)
    }

    fn memoise_arrival(
        &mut self,
        g: usize,
        hop: usize,
        result: Result<Rc<Envelope>, Fail>,
    ) -> Result<Rc<Envelope>, Fail> {
        match &result {
            Ok(a) => {
                self.arrivals.insert((g, hop), Memo::Done(Ok(a.clone())));
            }
            Err(Fail::Unbounded(r)) => {
                self.arrivals.insert((g, hop), Memo::Done(Err(r.clone())));
            }
            Err(Fail::Fatal(_)) => {
                self.arrivals.remove(&(g, hop));
            }
        }
        result
    }

    fn leftover(&mut self, g: usize, hop: usize) -> Result<Rc<ServiceCurve>, Fail> {
        match self.leftovers.get(&(g, hop)) {
            Some(Memo::Done(r)) => return r.clone().map_err(Fail::Unbounded),
            Some(Memo::InProgress) => return Err(self.cycle(g, hop)),
            None => {}
        }
        self.leftovers.insert((g, hop), Memo::InProgress);
        let result = (|| {
            let net = self.net;
            let level = self.level(g);
            let q = net.flows[g].path[hop];
            let queue = &net.queues[q];
            let competitors: Vec<(usize, usize)> = self.at_queue[q]
                .iter()
                .copied()
                .filter(|&(h, _)| h != g && self.level(h) <= level)
                .collect();
            let mut cross = Vec::with_capacity(competitors.len());
            for (h, pos) in competitors {
                cross.push(self.arrival_in(h, pos)?);
            }
            let cross = Envelope::sum(cross.iter().map(|a| &**a));
            let server =
                ServiceCurve::constant_rate(queue.rate).map_err(|e| Fail::Fatal(e.into()))?;
            server.leftover(&cross).map(Rc::new).map_err(|e| {
                unbounded(
                    e,
                    format!(
                        "queue {:?} is overloaded for flow {:?} at level {level} (flows of level <= {level} compete)",
                        queue.name, net.flows[g].name
                    ),
                )
            })
        })();
        match &result {
            Ok(s) => {
                self.leftovers.insert((g, hop), Memo::Done(Ok(s.clone())));
            }
            Err(Fail::Unbounded(r)) => {
                self.leftovers.insert((g, hop), Memo::Done(Err(r.clone())));
            }
            Err(Fail::Fatal(_)) => {
                self.leftovers.remove(&(g, hop));
            }
        }
        result
    }

    fn cycle(&self, g: usize, hop: usize) -> Fail {
        let f = &self.net.flows[g];
        let queue = &self.net.queues[f.path[hop]].name;
        Fail::Fatal(CalculusError::Invalid(format!(
            "cyclic dependency: the traffic of flow {:?} at queue {queue:?} depends on itself through other flows' upstream queues; the DNC analysis needs a feed-forward network",
            f.name
        )))
    }

    /// The bounds of one tenant's flows, epsilon 0 (worst case).
    pub fn tenant_flows(&mut self, tenant: usize) -> Result<Vec<FlowBound>, CalculusError> {
        let t = self
            .net
            .tenants
            .get(tenant)
            .ok_or(CalculusError::UnknownTenant {
                index: tenant,
                len: self.net.tenants.len(),
            })?;
        t.flows
            .iter()
            .map(|&f| {
                Ok(FlowBound {
                    flow: f,
                    name: self.net.flows[f].name.clone(),
                    epsilon: 0.0,
                    bound: self.flow_bound(f)?,
                })
            })
            .collect()
    }
}

fn unbounded(e: DncError, context: String) -> Fail {
    match e {
        DncError::Unstable { load, capacity } => Fail::Unbounded(format!(
            "{context}: load {load} work/s against capacity {capacity} work/s"
        )),
        other => Fail::Fatal(other.into()),
    }
}

fn lift<T>(r: Result<T, Fail>) -> Result<Option<T>, CalculusError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(Fail::Unbounded(_)) => Ok(None),
        Err(Fail::Fatal(e)) => Err(e),
    }
}
