//! Per-flow delay and backlog bounds of a [`Graph`] by every method that applies.
//!
//! **DNC** (deterministic; Le Boudec & Thiran, *Network Calculus*, ch. 1 and 6; Bondorf &
//! Schmitt's DiscoDNC names the methods). One pass over the servers in feed-forward order
//! computes, at every server s and for every flow f crossing it:
//! * f's **leftover service** β_{f,s}: under FIFO, [`ServiceCurve::fifo_leftover`] of s's
//!   service against the other flows' arrival curves at s; under arbitrary multiplexing,
//!   [`ServiceCurve::leftover`] (blind); under static priority, the blind leftover after the
//!   higher levels plus one packet of the largest lower-level flow (non-preemptive blocking),
//!   then the FIFO leftover against f's own level.
//! * the **TFA delay** of f at s: the delay of f's whole class (every flow under FIFO, f's
//!   level under static priority) through s's service (left by the higher levels), h(Σα, β);
//!   under arbitrary multiplexing h(α_f, β_{f,s}).
//! * f's **arrival curve at its next server**: the tighter of its output through β_{f,s}
//!   (α ⊘ β) and α delayed by the TFA delay (α ⊘ δ_D), both valid.
//!
//! [`GraphMethod::Tfa`] (total flow analysis) adds f's TFA delays; its backlog bound is α_f(D):
//! every bit that arrived before t − D has left by t. [`GraphMethod::Sfa`] (separated flow
//! analysis) convolves f's leftovers into one end-to-end service curve and takes the horizontal
//! and vertical deviations from f's source curve: f's burst is paid only once.
//! PMOO (pay multiplexing only once) is not implemented.
//!
//! **SNC** ([`GraphMethod::Snc`]): SNC-Meister's MGF analysis ([`tailbound_calculus`]'s
//! `snc-meister` method) on the same network, when every flow has an MMPP and every server is
//! constant-rate (the queues that analysis models); flows are independent, static priority
//! between levels and FIFO within one. Its delay bound holds with probability 1 − ε at each
//! flow's percentile; it gives no backlog bound.

use crate::{Graph, GraphError, GraphFlow, Scheduling};
use serde::{Deserialize, Serialize};
use tailbound_calculus::dnc::{
    backlog_bound, delay_bound, output, DncError, Envelope, RateLatency, ServiceCurve,
};
use tailbound_calculus::{BoundOptions, Method};
use tailbound_model::{Bucket, FlowModels, NetworkBuilder, NewTenant, Slo, Stage};

/// A method of bounding a flow's delay and backlog in a server graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GraphMethod {
    /// DNC total flow analysis: the sum of per-server delays
    Tfa,
    /// DNC separated flow analysis: the flow's leftovers convolved, bursts paid once
    Sfa,
    /// SNC-Meister's MGF analysis on MMPP flows (a percentile bound)
    Snc,
}

tailbound_model::names!(GraphMethod, "method", { Tfa => "tfa", Sfa => "sfa", Snc => "snc" });

/// What one method says about one flow (or server).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Outcome {
    Bounded {
        /// end-to-end delay bound [s]
        delay_s: f64,
        /// backlog bound [bytes]; `None` when the method gives none
        backlog_bytes: Option<f64>,
        /// probability the delay bound may be exceeded (0 for DNC)
        violation_probability: f64,
    },
    /// the method applies but finds no finite bound (an overloaded server)
    Unbounded { reason: String },
    /// the method does not apply to this network
    NotApplicable { reason: String },
}

impl Outcome {
    fn bounded(delay_s: f64, backlog_bytes: Option<f64>, eps: f64) -> Outcome {
        let finite = |x: f64| x.is_finite() && x >= 0.0;
        if finite(delay_s) && backlog_bytes.is_none_or(finite) {
            Outcome::Bounded {
                delay_s,
                backlog_bytes,
                violation_probability: eps,
            }
        } else {
            Outcome::Unbounded {
                reason: format!("the bound is not finite (delay {delay_s} s)"),
            }
        }
    }

    /// The delay bound [s] when bounded.
    pub fn delay_s(&self) -> Option<f64> {
        match self {
            Outcome::Bounded { delay_s, .. } => Some(*delay_s),
            _ => None,
        }
    }

    /// The backlog bound [bytes] when bounded and the method gives one.
    pub fn backlog_bytes(&self) -> Option<f64> {
        match self {
            Outcome::Bounded { backlog_bytes, .. } => *backlog_bytes,
            _ => None,
        }
    }
}

/// One method's result for one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodBound {
    pub method: GraphMethod,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The bounds of one flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowReport {
    pub flow: String,
    pub path: Vec<String>,
    pub bounds: Vec<MethodBound>,
}

impl FlowReport {
    /// The outcome of `method`, when it was asked for.
    pub fn outcome(&self, method: GraphMethod) -> Option<&Outcome> {
        self.bounds
            .iter()
            .find(|b| b.method == method)
            .map(|b| &b.outcome)
    }
}

/// One server under total flow analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    pub server: String,
    pub scheduling: Scheduling,
    /// Σ long-term arrival rates / long-term service rate
    pub utilization: f64,
    /// the largest TFA delay of a flow at this server and the server's backlog bound
    pub tfa: Outcome,
}

/// Every flow's bounds, and the servers under TFA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphReport {
    pub network: String,
    pub methods: Vec<GraphMethod>,
    pub flows: Vec<FlowReport>,
    pub servers: Vec<ServerReport>,
}

/// Bounds of every flow of `graph` by each of `methods` (in that order).
pub fn analyze(graph: &Graph, methods: &[GraphMethod]) -> Result<GraphReport, GraphError> {
    graph.validate()?;
    let dnc = Dnc::run(graph)?;
    let snc = if methods.contains(&GraphMethod::Snc) {
        snc(graph)
    } else {
        Vec::new()
    };
    let flows = graph
        .flows
        .iter()
        .enumerate()
        .map(|(f, flow)| FlowReport {
            flow: flow.name.clone(),
            path: flow.path.clone(),
            bounds: methods
                .iter()
                .map(|&m| MethodBound {
                    method: m,
                    outcome: match m {
                        GraphMethod::Tfa => dnc.tfa(f),
                        GraphMethod::Sfa => dnc.sfa(f),
                        GraphMethod::Snc => snc[f].clone(),
                    },
                })
                .collect(),
        })
        .collect();
    let mut servers = dnc.servers;
    if let Some(reason) = &dnc.missing {
        for s in &mut servers {
            s.tfa = Outcome::NotApplicable {
                reason: reason.clone(),
            };
        }
    }
    Ok(GraphReport {
        network: graph.name.clone(),
        methods: methods.to_vec(),
        flows,
        servers,
    })
}

type Step<T> = Result<T, String>;

/// The DNC pass (see the module docs).
struct Dnc {
    /// why DNC does not apply (a flow without an arrival curve)
    missing: Option<String>,
    sources: Vec<Envelope>,
    /// per flow, per hop
    leftovers: Vec<Vec<Step<ServiceCurve>>>,
    tfa_delays: Vec<Vec<Step<f64>>>,
    servers: Vec<ServerReport>,
}

fn at_server(server: &str) -> impl Fn(DncError) -> String + '_ {
    move |e| format!("server {server:?}: {e}")
}

/// A server's service curve.
pub fn service_curve(s: &crate::Server) -> Result<ServiceCurve, GraphError> {
    let curves: Vec<RateLatency> = s
        .service
        .iter()
        .map(|c| RateLatency {
            rate: c.rate_bytes_per_s,
            latency_s: c.latency_s,
        })
        .collect();
    ServiceCurve::max_of(&curves)
        .map_err(|e| GraphError::Invalid(format!("server {:?}: service: {e}", s.name)))
}

/// A flow's arrival curve at its source; `None` without token buckets.
pub fn arrival_curve(f: &GraphFlow) -> Result<Option<Envelope>, GraphError> {
    if f.arrival.is_empty() {
        return Ok(None);
    }
    let buckets: Vec<Bucket> = f
        .arrival
        .iter()
        .map(|b| Bucket::new(b.rate_bytes_per_s, b.burst_bytes))
        .collect();
    Envelope::from_buckets(&buckets)
        .map(Some)
        .map_err(|e| GraphError::Invalid(format!("flow {:?}: arrival: {e}", f.name)))
}

impl Dnc {
    fn run(graph: &Graph) -> Result<Dnc, GraphError> {
        let services = graph
            .servers
            .iter()
            .map(service_curve)
            .collect::<Result<Vec<_>, _>>()?;
        let mut sources = Vec::with_capacity(graph.flows.len());
        let mut missing = None;
        for f in &graph.flows {
            match arrival_curve(f)? {
                Some(a) => sources.push(a),
                None => {
                    missing.get_or_insert_with(|| {
                        format!("flow {:?} has no arrival curve (give `arrival` token buckets or a `trace`); the DNC methods need one for every flow", f.name)
                    });
                    sources.push(Envelope::zero());
                }
            }
        }
        let hops: Vec<Vec<usize>> = graph
            .flows
            .iter()
            .map(|f| {
                f.path
                    .iter()
                    .filter_map(|n| graph.server_index(n))
                    .collect()
            })
            .collect();
        let mut members: Vec<Vec<(usize, usize)>> = vec![Vec::new(); graph.servers.len()];
        for (f, path) in hops.iter().enumerate() {
            for (h, &s) in path.iter().enumerate() {
                members[s].push((f, h));
            }
        }
        let mut arrivals: Vec<Vec<Step<Envelope>>> = hops
            .iter()
            .enumerate()
            .map(|(f, p)| {
                let mut v = vec![Err(String::new()); p.len()];
                v[0] = Ok(sources[f].clone());
                v
            })
            .collect();
        let mut leftovers: Vec<Vec<Step<ServiceCurve>>> = hops
            .iter()
            .map(|p| vec![Err(String::new()); p.len()])
            .collect();
        let mut tfa_delays: Vec<Vec<Step<f64>>> = hops
            .iter()
            .map(|p| vec![Err(String::new()); p.len()])
            .collect();
        let mut servers: Vec<Option<ServerReport>> = vec![None; graph.servers.len()];
        for s in graph.topological_order()? {
            let server = &graph.servers[s];
            let beta = &services[s];
            let here = &members[s];
            let mut report = ServerReport {
                server: server.name.clone(),
                scheduling: server.scheduling,
                utilization: 0.0,
                tfa: Outcome::Bounded {
                    delay_s: 0.0,
                    backlog_bytes: Some(0.0),
                    violation_probability: 0.0,
                },
            };
            let incoming: Step<Vec<Envelope>> =
                here.iter().map(|&(f, h)| arrivals[f][h].clone()).collect();
            let incoming = match incoming {
                Ok(a) => a,
                Err(reason) => {
                    for &(f, h) in here {
                        leftovers[f][h] = Err(reason.clone());
                        tfa_delays[f][h] = Err(reason.clone());
                        if h + 1 < hops[f].len() {
                            arrivals[f][h + 1] = Err(reason.clone());
                        }
                    }
                    report.tfa = Outcome::Unbounded { reason };
                    servers[s] = Some(report);
                    continue;
                }
            };
            let total = Envelope::sum(&incoming);
            report.utilization = total.long_term_rate() / beta.rate();
            let mut worst = 0.0_f64;
            let mut failure: Option<String> = None;
            for (i, &(f, h)) in here.iter().enumerate() {
                let level = graph.flows[f].priority;
                let sp = server.scheduling == Scheduling::StaticPriority;
                let others = || here.iter().enumerate().filter(move |&(j, _)| j != i);
                let same: Vec<&Envelope> = others()
                    .filter(|&(_, &(g, _))| !sp || graph.flows[g].priority == level)
                    .map(|(j, _)| &incoming[j])
                    .collect();
                let same = Envelope::sum(same);
                let base: Step<ServiceCurve> = if sp {
                    let higher = Envelope::sum(
                        others()
                            .filter(|&(_, &(g, _))| graph.flows[g].priority < level)
                            .map(|(j, _)| &incoming[j]),
                    );
                    let blocking = others()
                        .filter(|&(_, &(g, _))| graph.flows[g].priority > level)
                        .filter_map(|(_, &(g, _))| graph.flows[g].max_packet_bytes)
                        .fold(0.0, f64::max);
                    Envelope::token_bucket(Bucket::new(0.0, blocking))
                        .and_then(|b| beta.leftover(&higher.plus(&b)))
                        .map_err(at_server(&server.name))
                } else {
                    Ok(beta.clone())
                };
                let left = base.clone().and_then(|b| {
                    match server.scheduling {
                        Scheduling::Arbitrary => b.leftover(&same),
                        _ => b.fifo_leftover(&same),
                    }
                    .map_err(at_server(&server.name))
                });
                let alpha = &incoming[i];
                let tfa = match server.scheduling {
                    Scheduling::Arbitrary => left
                        .clone()
                        .and_then(|l| delay_bound(alpha, &l).map_err(at_server(&server.name))),
                    _ => base.and_then(|b| {
                        delay_bound(&alpha.plus(&same), &b).map_err(at_server(&server.name))
                    }),
                };
                if h + 1 < hops[f].len() {
                    let through = left
                        .as_ref()
                        .map_err(Clone::clone)
                        .and_then(|l| output(alpha, l).map_err(at_server(&server.name)));
                    let shifted = tfa
                        .clone()
                        .and_then(|d| alpha.delayed(d).map_err(at_server(&server.name)));
                    arrivals[f][h + 1] = match (through, shifted) {
                        (Ok(a), Ok(b)) => a.min(&b).map_err(at_server(&server.name)),
                        (Ok(a), Err(_)) | (Err(_), Ok(a)) => Ok(a),
                        (Err(e), Err(_)) => Err(e),
                    };
                }
                match &tfa {
                    Ok(d) => worst = worst.max(*d),
                    Err(e) => {
                        failure.get_or_insert_with(|| e.clone());
                    }
                }
                leftovers[f][h] = left;
                tfa_delays[f][h] = tfa;
            }
            report.tfa = match failure {
                Some(reason) => Outcome::Unbounded { reason },
                None => match backlog_bound(&total, beta) {
                    Ok(b) => Outcome::bounded(worst, Some(b), 0.0),
                    Err(e) => Outcome::Unbounded {
                        reason: at_server(&server.name)(e),
                    },
                },
            };
            servers[s] = Some(report);
        }
        Ok(Dnc {
            missing,
            sources,
            leftovers,
            tfa_delays,
            servers: servers.into_iter().flatten().collect(),
        })
    }

    fn tfa(&self, f: usize) -> Outcome {
        if let Some(reason) = &self.missing {
            return Outcome::NotApplicable {
                reason: reason.clone(),
            };
        }
        match self.tfa_delays[f].iter().cloned().sum::<Step<f64>>() {
            Ok(d) => Outcome::bounded(d, Some(self.sources[f].at(d)), 0.0),
            Err(reason) => Outcome::Unbounded { reason },
        }
    }

    fn sfa(&self, f: usize) -> Outcome {
        if let Some(reason) = &self.missing {
            return Outcome::NotApplicable {
                reason: reason.clone(),
            };
        }
        let bounds = self.leftovers[f]
            .iter()
            .cloned()
            .collect::<Step<Vec<ServiceCurve>>>()
            .and_then(|ls| ServiceCurve::convolve_all(&ls).map_err(|e| e.to_string()))
            .and_then(|e2e| {
                let a = &self.sources[f];
                let d = delay_bound(a, &e2e).map_err(|e| e.to_string())?;
                let b = backlog_bound(a, &e2e).map_err(|e| e.to_string())?;
                Ok((d, b))
            });
        match bounds {
            Ok((d, b)) => Outcome::bounded(d, Some(b), 0.0),
            Err(reason) => Outcome::Unbounded { reason },
        }
    }
}

/// The SNC method's outcome per flow (see the module docs).
fn snc(graph: &Graph) -> Vec<Outcome> {
    let na = |reason: String| vec![Outcome::NotApplicable { reason }; graph.flows.len()];
    if let Some(f) = graph.flows.iter().find(|f| f.mmpp.is_none()) {
        return na(format!("flow {:?} has no MMPP (give `mmpp` or a `trace`); the SNC method needs one for every flow", f.name));
    }
    if let Some(s) = graph
        .servers
        .iter()
        .find(|s| s.service.len() != 1 || s.service[0].latency_s != 0.0)
    {
        return na(format!(
            "server {:?} is not constant-rate; the SNC method models constant-rate queues",
            s.name
        ));
    }
    if let Some(s) = graph
        .servers
        .iter()
        .find(|s| s.scheduling == Scheduling::Arbitrary)
    {
        return na(format!(
            "server {:?} multiplexes arbitrarily; the SNC method models FIFO and static priority",
            s.name
        ));
    }
    let all_fifo = graph
        .servers
        .iter()
        .all(|s| s.scheduling == Scheduling::Fifo);
    let all_sp = graph
        .servers
        .iter()
        .all(|s| s.scheduling == Scheduling::StaticPriority);
    let levels_differ = graph
        .flows
        .windows(2)
        .any(|w| w[0].priority != w[1].priority);
    if !all_fifo && !all_sp && levels_differ {
        return na("FIFO and static-priority servers with flows of different levels; the SNC method applies one policy to every server".into());
    }
    let mut b = NetworkBuilder::new();
    for s in &graph.servers {
        b.queue(s.name.clone(), s.service[0].rate_bytes_per_s);
    }
    let mut eps = Vec::with_capacity(graph.flows.len());
    for f in &graph.flows {
        let p = f.percentile.unwrap_or(99.9);
        eps.push((100.0 - p) / 100.0);
        // the SLO's latency is not checked here: only the bound is reported
        let slo = match Slo::new(1.0, p) {
            Ok(s) => s,
            Err(e) => return na(format!("flow {:?}: {e}", f.name)),
        };
        let mut t = NewTenant::new(f.name.clone(), slo);
        t.priority = Some(if all_fifo { 0 } else { f.priority });
        let tenant = b.tenant(t);
        let path = f
            .path
            .iter()
            .filter_map(|n| graph.server_index(n))
            .collect();
        let models = FlowModels {
            mmpp: f.mmpp.clone(),
            arrival: None,
        };
        b.flow_on(tenant, f.name.clone(), Stage::NetIn, path, models);
    }
    let bounds = b.build().map_err(|e| e.to_string()).and_then(|net| {
        tailbound_calculus::bound_all(&net, Method::SncMeister, &BoundOptions::default())
            .map_err(|e| e.to_string())
    });
    match bounds {
        Err(reason) => na(reason),
        Ok(tenants) => tenants
            .iter()
            .zip(&eps)
            .map(|(t, &e)| match &t.total {
                tailbound_calculus::Bound::Within(d) => Outcome::bounded(*d, None, e),
                tailbound_calculus::Bound::Unbounded(reason) => Outcome::Unbounded {
                    reason: reason.clone(),
                },
            })
            .collect(),
    }
}
