//! The network a set of tenants shares, as the calculus sees it: queues with service rates,
//! flows crossing sequences of queues with their traffic models, and tenants owning flows with
//! an SLO, an optional dependency group and an optional explicit priority.
//!
//! Building a [`Network`] from a scenario file or traces lives in `tailbound-scenario`;
//! bounding its tenants' latencies lives in `tailbound-calculus`.
//!
//! Work is in the unit of the queue's stage: a network queue serves bytes at `rate` [bytes/s],
//! a storage queue busy-seconds at `rate` 1 [busy-s/s]. A flow's traffic models are in the
//! same unit.

use crate::{ArrivalCurve, Mmpp, Slo};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// A queue: one direction of a host's link (`host-out`, `host-in`) or a storage device.
/// Static priority between tenants' priority levels, FIFO within a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub name: String,
    /// service rate [work/s]
    pub rate: f64,
}

/// One direction of a tenant's traffic: its arrivals at the source and the queues it crosses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    pub name: String,
    /// index into [`Network::tenants`]
    pub tenant: usize,
    /// queues crossed in order, indices into [`Network::queues`]
    pub path: Vec<usize>,
    /// stochastic model of the arrivals at the source (needed by the SNC analyses)
    pub mmpp: Option<Mmpp>,
    /// deterministic arrival curve at the source (needed by the DNC analysis)
    pub arrival: Option<ArrivalCurve>,
}

/// A tenant: an SLO over the sum of its flows' latencies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantSpec {
    pub name: String,
    pub slo: Slo,
    /// indices into [`Network::flows`], in the order their latencies add up (request, response)
    pub flows: Vec<usize>,
    /// tenants in the same group may burst together adversarially (snc-meister §4.2)
    pub group: Option<String>,
    /// explicit priority level, 0 highest; `None` derives it from the SLO (dense rank of the
    /// SLO latency, tightest first)
    pub priority: Option<u32>,
}

/// Queues, flows and tenants.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Network {
    pub queues: Vec<Queue>,
    pub flows: Vec<Flow>,
    pub tenants: Vec<TenantSpec>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkError {
    #[error("queue {name:?} has rate {rate}; expected a finite rate > 0 [work/s]")]
    QueueRate { name: String, rate: f64 },
    #[error("{what} name {name:?} appears twice; names must be unique")]
    Duplicate { what: &'static str, name: String },
    #[error("flow {flow:?} refers to {what} {index}, but there are only {len}")]
    Index {
        flow: String,
        what: &'static str,
        index: usize,
        len: usize,
    },
    #[error("flow {0:?} crosses no queue; a flow needs a path of at least one queue")]
    EmptyPath(String),
    #[error("flow {flow:?} crosses queue {queue:?} twice")]
    Loop { flow: String, queue: String },
    #[error("tenant {0:?} has no flows")]
    NoFlows(String),
    #[error("flow {flow:?} belongs to tenant {owner} but tenant {tenant:?} lists it")]
    Owner {
        flow: String,
        owner: usize,
        tenant: String,
    },
}

impl Network {
    /// Checks indices, names, rates and ownership.
    pub fn validate(&self) -> Result<(), NetworkError> {
        let mut names = HashSet::new();
        for q in &self.queues {
            if !(q.rate.is_finite() && q.rate > 0.0) {
                return Err(NetworkError::QueueRate {
                    name: q.name.clone(),
                    rate: q.rate,
                });
            }
            if !names.insert(q.name.as_str()) {
                return Err(NetworkError::Duplicate {
                    what: "queue",
                    name: q.name.clone(),
                });
            }
        }
        let mut names = HashSet::new();
        for f in &self.flows {
            if !names.insert(f.name.as_str()) {
                return Err(NetworkError::Duplicate {
                    what: "flow",
                    name: f.name.clone(),
                });
            }
            if f.tenant >= self.tenants.len() {
                return Err(NetworkError::Index {
                    flow: f.name.clone(),
                    what: "tenant",
                    index: f.tenant,
                    len: self.tenants.len(),
                });
            }
            if f.path.is_empty() {
                return Err(NetworkError::EmptyPath(f.name.clone()));
            }
            let mut seen = HashSet::new();
            for &q in &f.path {
                let Some(queue) = self.queues.get(q) else {
                    return Err(NetworkError::Index {
                        flow: f.name.clone(),
                        what: "queue",
                        index: q,
                        len: self.queues.len(),
                    });
                };
                if !seen.insert(q) {
                    return Err(NetworkError::Loop {
                        flow: f.name.clone(),
                        queue: queue.name.clone(),
                    });
                }
            }
        }
        let mut names = HashSet::new();
        for (i, t) in self.tenants.iter().enumerate() {
            if !names.insert(t.name.as_str()) {
                return Err(NetworkError::Duplicate {
                    what: "tenant",
                    name: t.name.clone(),
                });
            }
            if t.flows.is_empty() {
                return Err(NetworkError::NoFlows(t.name.clone()));
            }
            for &f in &t.flows {
                let Some(flow) = self.flows.get(f) else {
                    return Err(NetworkError::Index {
                        flow: format!("#{f} of tenant {}", t.name),
                        what: "flow",
                        index: f,
                        len: self.flows.len(),
                    });
                };
                if flow.tenant != i {
                    return Err(NetworkError::Owner {
                        flow: flow.name.clone(),
                        owner: flow.tenant,
                        tenant: t.name.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Each tenant's priority level, 0 highest: the explicit one when given, otherwise the
    /// dense rank of SLO latencies among tenants without an explicit level (tightest first,
    /// equal SLOs share a level). Any number of levels.
    pub fn priorities(&self) -> Vec<u32> {
        let mut slos: Vec<f64> = self
            .tenants
            .iter()
            .filter(|t| t.priority.is_none())
            .map(|t| t.slo.latency_s)
            .collect();
        slos.sort_by(f64::total_cmp);
        slos.dedup();
        self.tenants
            .iter()
            .map(|t| {
                t.priority
                    .unwrap_or_else(|| slos.partition_point(|&s| s < t.slo.latency_s) as u32)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(slos_ms: &[f64]) -> Network {
        let queues = vec![Queue {
            name: "a-out".into(),
            rate: 125e6,
        }];
        let mut n = Network {
            queues,
            ..Network::default()
        };
        for (i, ms) in slos_ms.iter().enumerate() {
            n.flows.push(Flow {
                name: format!("f{i}"),
                tenant: i,
                path: vec![0],
                mmpp: None,
                arrival: None,
            });
            n.tenants.push(TenantSpec {
                name: format!("t{i}"),
                slo: Slo::new(ms * 1e-3, 99.9).unwrap(),
                flows: vec![i],
                group: None,
                priority: None,
            });
        }
        n
    }

    #[test]
    fn priorities_are_the_dense_rank_of_slos() {
        let n = net(&[
            50.0, 10.0, 20.0, 10.0, 100.0, 20.0, 5.0, 7.0, 8.0, 9.0, 11.0,
        ]);
        n.validate().unwrap();
        // distinct SLOs 5, 7, 8, 9, 10, 11, 20, 50, 100 ms rank 0..=8
        assert_eq!(n.priorities(), vec![7, 4, 6, 4, 8, 6, 0, 1, 2, 3, 5]);
    }

    #[test]
    fn explicit_priorities_win() {
        let mut n = net(&[50.0, 10.0]);
        n.tenants[0].priority = Some(0);
        assert_eq!(n.priorities(), vec![0, 0]);
    }

    #[test]
    fn validation_names_the_problem() {
        let mut n = net(&[10.0]);
        n.flows[0].path = vec![3];
        assert!(n.validate().unwrap_err().to_string().contains("queue 3"));
        let mut n = net(&[10.0, 20.0]);
        n.queues[0].rate = 0.0;
        assert!(n.validate().unwrap_err().to_string().contains("a-out"));
        let mut n = net(&[10.0, 20.0]);
        n.flows[1].tenant = 0;
        assert!(matches!(n.validate(), Err(NetworkError::Owner { .. })));
    }
}
