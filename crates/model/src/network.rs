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

use crate::{ArrivalCurve, Mmpp, Slo, Stage};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::Arc;

/// Ethernet's MTU [bytes]: the packet size links carry work in (the simulator's chunks, the
/// calculus' packetization allowance).
pub const ETHERNET_MTU_BYTES: u64 = 1500;

/// A host: a NIC with one queue per direction, and optionally a storage device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub name: String,
    /// its NIC's queue toward the network (`<host>-out`), index into [`Network::queues`]
    pub egress: usize,
    /// its NIC's queue from the network (`<host>-in`), index into [`Network::queues`]
    pub ingress: usize,
    /// its storage device (`<host>-storage`), index into [`Network::queues`]
    pub storage: Option<usize>,
}

/// What a queue of a host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    /// the host's NIC toward the network [bytes]
    Egress,
    /// the host's NIC from the network [bytes]
    Ingress,
    /// the host's storage device [busy-s]
    Storage,
}

impl QueueKind {
    /// The suffix of the queue's name after the host's (`<host>-out`, ...).
    pub fn suffix(self) -> &'static str {
        match self {
            QueueKind::Egress => "out",
            QueueKind::Ingress => "in",
            QueueKind::Storage => "storage",
        }
    }
}

/// Where a queue sits: which host, which part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QueueSite {
    /// index into [`Network::hosts`]
    pub host: usize,
    pub kind: QueueKind,
}

/// A queue: one direction of a host's link, a storage device, or (in networks given as raw
/// queues, such as SNC-Meister's model configs) a server that belongs to no host. Static
/// priority between tenants' priority levels, FIFO within a level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queue {
    pub name: String,
    /// service rate [work/s]
    pub rate: f64,
    /// the host and part of it this queue is; `None` for a queue of no host
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<QueueSite>,
}

/// One direction of a tenant's traffic: its arrivals at the source and the queues it crosses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    pub name: String,
    /// index into [`Network::tenants`]
    pub tenant: usize,
    /// the stage this flow loads: its work unit and, for flows between hosts, its direction
    pub stage: Stage,
    /// queues crossed in order, indices into [`Network::queues`]
    pub path: Vec<usize>,
    /// stochastic model of the arrivals at the source (needed by the SNC analyses), shared:
    /// a network of some of the tenants (an admission decision's neighbourhood) clones the
    /// pointer, not the model
    pub mmpp: Option<Arc<Mmpp>>,
    /// deterministic arrival curve at the source (needed by the DNC analysis)
    pub arrival: Option<ArrivalCurve>,
}

/// The traffic models of one flow, as characterization produces them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FlowModels {
    pub mmpp: Option<Mmpp>,
    pub arrival: Option<ArrivalCurve>,
}

/// The hosts a tenant's requests run between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TenantHosts {
    /// index into [`Network::hosts`]
    pub client: usize,
    /// index into [`Network::hosts`]
    pub server: usize,
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
    /// its client and server; `None` in networks given as raw queues
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<TenantHosts>,
}

/// How many of each part a [`Network`] has ([`Network::size`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NetworkSize {
    pub hosts: usize,
    pub queues: usize,
    pub flows: usize,
    pub tenants: usize,
}

/// Hosts, queues, flows and tenants. Build one with [`NetworkBuilder`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Network {
    #[serde(default)]
    pub hosts: Vec<Host>,
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
    #[error("host {host:?}: its {kind:?} queue {index} is not a queue of this host")]
    HostQueue {
        host: String,
        kind: QueueKind,
        index: usize,
    },
    #[error("tenant {tenant:?} refers to host {index}, but there are only {len}")]
    HostIndex {
        tenant: String,
        index: usize,
        len: usize,
    },
    #[error("tenant {0:?} names no client and server hosts, so its flows cannot be routed; give it hosts or explicit paths")]
    NoHosts(String),
    #[error("tenant {tenant:?} uses the storage of host {host:?}, which has none")]
    NoStorage { tenant: String, host: String },
    #[error("unknown host {name:?}; the hosts are {known}")]
    UnknownHost { name: String, known: String },
}

impl Network {
    /// Checks indices, names, rates, ownership, and that every host's queues sit at it.
    pub fn validate(&self) -> Result<(), NetworkError> {
        self.validate_from(NetworkSize::default())
    }

    /// How many hosts, queues, flows and tenants the network has.
    pub fn size(&self) -> NetworkSize {
        NetworkSize {
            hosts: self.hosts.len(),
            queues: self.queues.len(),
            flows: self.flows.len(),
            tenants: self.tenants.len(),
        }
    }

    /// [`Network::validate`] for what was appended to a valid network of size `from`: the
    /// items past `from` are checked as `validate` checks them (their names against every
    /// name), in time linear in the network rather than a hash of every name, so that a
    /// network grown one tenant at a time is not checked whole at every step.
    pub fn validate_from(&self, from: NetworkSize) -> Result<(), NetworkError> {
        let before = |what: &'static str, n: &str| match what {
            "host" => self.hosts[..from.hosts].iter().any(|h| h.name == n),
            "queue" => self.queues[..from.queues].iter().any(|q| q.name == n),
            "flow" => self.flows[..from.flows].iter().any(|f| f.name == n),
            _ => self.tenants[..from.tenants].iter().any(|t| t.name == n),
        };
        self.validate_from_with(from, &before)
    }

    /// [`Network::validate_from`] with the names of the items before `from` looked up in
    /// `taken(what, name)` (`what`: "host", "queue", "flow" or "tenant") instead of scanned:
    /// for a caller that keeps them indexed, so that appending costs what is appended.
    pub fn validate_from_with(
        &self,
        from: NetworkSize,
        taken: &dyn Fn(&'static str, &str) -> bool,
    ) -> Result<(), NetworkError> {
        let unique = |what: &'static str,
                      names: &mut dyn Iterator<Item = &str>|
         -> Result<(), NetworkError> {
            let mut seen = HashSet::new();
            for n in names {
                if !seen.insert(n) || taken(what, n) {
                    return Err(NetworkError::Duplicate {
                        what,
                        name: n.to_string(),
                    });
                }
            }
            Ok(())
        };
        unique(
            "host",
            &mut self.hosts.iter().skip(from.hosts).map(|h| h.name.as_str()),
        )?;
        unique(
            "queue",
            &mut self
                .queues
                .iter()
                .skip(from.queues)
                .map(|q| q.name.as_str()),
        )?;
        unique(
            "flow",
            &mut self.flows.iter().skip(from.flows).map(|f| f.name.as_str()),
        )?;
        unique(
            "tenant",
            &mut self
                .tenants
                .iter()
                .skip(from.tenants)
                .map(|t| t.name.as_str()),
        )?;
        for (hi, h) in self.hosts.iter().enumerate().skip(from.hosts) {
            let queues = [
                (QueueKind::Egress, Some(h.egress)),
                (QueueKind::Ingress, Some(h.ingress)),
                (QueueKind::Storage, h.storage),
            ];
            for (kind, q) in queues {
                let Some(index) = q else { continue };
                let site = self.queues.get(index).and_then(|q| q.site);
                if site != Some(QueueSite { host: hi, kind }) {
                    return Err(NetworkError::HostQueue {
                        host: h.name.clone(),
                        kind,
                        index,
                    });
                }
            }
        }
        for q in self.queues.iter().skip(from.queues) {
            if !(q.rate.is_finite() && q.rate > 0.0) {
                return Err(NetworkError::QueueRate {
                    name: q.name.clone(),
                    rate: q.rate,
                });
            }
        }
        for f in self.flows.iter().skip(from.flows) {
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
        for (i, t) in self.tenants.iter().enumerate().skip(from.tenants) {
            if t.flows.is_empty() {
                return Err(NetworkError::NoFlows(t.name.clone()));
            }
            if let Some(h) = t.hosts {
                for index in [h.client, h.server] {
                    if index >= self.hosts.len() {
                        return Err(NetworkError::HostIndex {
                            tenant: t.name.clone(),
                            index,
                            len: self.hosts.len(),
                        });
                    }
                }
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
        let all: Vec<usize> = (0..self.tenants.len()).collect();
        self.priorities_of(&all)
    }

    /// [`Network::priorities`] of the network of tenants `tenants` only (what
    /// [`Network::subset`] of them would give), in that order, without building it.
    pub fn priorities_of(&self, tenants: &[usize]) -> Vec<u32> {
        let mut slos: Vec<f64> = tenants
            .iter()
            .map(|&t| &self.tenants[t])
            .filter(|t| t.priority.is_none())
            .map(|t| t.slo.latency_s)
            .collect();
        slos.sort_by(f64::total_cmp);
        slos.dedup();
        tenants
            .iter()
            .map(|&t| &self.tenants[t])
            .map(|t| {
                t.priority
                    .unwrap_or_else(|| slos.partition_point(|&s| s < t.slo.latency_s) as u32)
            })
            .collect()
    }

    /// The network of tenants `tenants` only (in that order), with all hosts and queues; each
    /// tenant keeps its flows, renumbered. Also returns, per flow of the result, its index in
    /// `self`.
    pub fn subset(&self, tenants: &[usize]) -> (Network, Vec<usize>) {
        let mut net = Network {
            hosts: self.hosts.clone(),
            queues: self.queues.clone(),
            flows: Vec::new(),
            tenants: Vec::with_capacity(tenants.len()),
        };
        let mut origin = Vec::new();
        for &t in tenants {
            let mut spec = self.tenants[t].clone();
            for f in &mut spec.flows {
                let mut flow = self.flows[*f].clone();
                flow.tenant = net.tenants.len();
                origin.push(*f);
                *f = net.flows.len();
                net.flows.push(flow);
            }
            net.tenants.push(spec);
        }
        (net, origin)
    }

    /// The host named `name`.
    pub fn host_index(&self, name: &str) -> Option<usize> {
        self.hosts.iter().position(|h| h.name == name)
    }

    /// The host named `name`, or an error listing the hosts.
    pub fn host_named(&self, name: &str) -> Result<usize, NetworkError> {
        self.host_index(name)
            .ok_or_else(|| NetworkError::UnknownHost {
                name: name.to_string(),
                known: self
                    .hosts
                    .iter()
                    .map(|h| h.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The queues a flow of `stage` crosses between `hosts` (the one rule of the client-server
    /// model): the request goes client out → server in, storage is the server's device, the
    /// response goes server out → client in.
    pub fn route(
        &self,
        tenant: &str,
        stage: Stage,
        hosts: TenantHosts,
    ) -> Result<Vec<usize>, NetworkError> {
        let host = |i: usize| {
            self.hosts.get(i).ok_or_else(|| NetworkError::HostIndex {
                tenant: tenant.to_string(),
                index: i,
                len: self.hosts.len(),
            })
        };
        let (client, server) = (host(hosts.client)?, host(hosts.server)?);
        Ok(match stage {
            Stage::NetIn => vec![client.egress, server.ingress],
            Stage::Storage => vec![server.storage.ok_or_else(|| NetworkError::NoStorage {
                tenant: tenant.to_string(),
                host: server.name.clone(),
            })?],
            Stage::NetOut => vec![server.egress, client.ingress],
        })
    }

    /// Moves tenant `tenant` to server host `server`: every flow is routed anew between its
    /// client and the new server ([`Network::route`]).
    pub fn move_tenant(&mut self, tenant: usize, server: usize) -> Result<(), NetworkError> {
        let t = &self.tenants[tenant];
        let hosts = t
            .hosts
            .ok_or_else(|| NetworkError::NoHosts(t.name.clone()))?;
        let hosts = TenantHosts { server, ..hosts };
        let mut paths = Vec::with_capacity(t.flows.len());
        for &f in &t.flows {
            paths.push(self.route(&t.name, self.flows[f].stage, hosts)?);
        }
        for (&f, path) in self.tenants[tenant].flows.iter().zip(paths) {
            self.flows[f].path = path;
        }
        self.tenants[tenant].hosts = Some(hosts);
        Ok(())
    }
}

/// The name of tenant `tenant`'s routed flow at `stage`: `<tenant>-req`, `<tenant>-storage`
/// or `<tenant>-resp` (what [`NetworkBuilder::flow`] names it, and what decisions refer to).
pub fn flow_name(tenant: &str, stage: Stage) -> String {
    format!("{tenant}-{}", stage.flow_suffix())
}

/// A tenant to add with [`NetworkBuilder::tenant`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewTenant {
    pub name: String,
    pub slo: Slo,
    /// dependency group (snc-meister §4.2)
    pub group: Option<String>,
    /// explicit priority, 0 highest; `None`: from the SLO
    pub priority: Option<u32>,
    /// client and server, indices of hosts added before; `None` for flows with explicit paths
    pub hosts: Option<TenantHosts>,
}

impl NewTenant {
    /// A tenant with an SLO and nothing else set.
    pub fn new(name: impl Into<String>, slo: Slo) -> NewTenant {
        NewTenant {
            name: name.into(),
            slo,
            group: None,
            priority: None,
            hosts: None,
        }
    }

    /// The same tenant between `client` and `server`.
    pub fn between(self, client: usize, server: usize) -> NewTenant {
        NewTenant {
            hosts: Some(TenantHosts { client, server }),
            ..self
        }
    }
}

/// The one way tailbound assembles a [`Network`]: hosts (with their queues), free-standing
/// queues, tenants and their flows, validated by [`NetworkBuilder::build`]. Every scenario
/// format, experiment and test fixture builds through it.
///
/// Names follow one convention, made here and nowhere else: a host `h` has queues `h-out`
/// (egress), `h-in` (ingress) and, with storage, `h-storage`; a tenant `t`'s routed flows are
/// `t-req` ([`Stage::NetIn`]), `t-storage` and `t-resp` ([`Stage::NetOut`]). Nothing reads
/// these names back: queues know their [`QueueSite`], flows their [`Stage`], tenants their
/// [`TenantHosts`].
#[derive(Debug, Clone, Default)]
pub struct NetworkBuilder {
    net: Network,
}

impl NetworkBuilder {
    pub fn new() -> NetworkBuilder {
        NetworkBuilder::default()
    }

    /// Adds host `name` with a NIC of `link_bytes_per_s` each way [bytes/s] and, when
    /// `storage_rate` is given, a storage device serving that many busy-seconds per second
    /// (1 for one device). Returns its index.
    pub fn host(
        &mut self,
        name: impl Into<String>,
        link_bytes_per_s: f64,
        storage_rate: Option<f64>,
    ) -> usize {
        let name = name.into();
        let host = self.net.hosts.len();
        let mut push = |kind: QueueKind, rate: f64| {
            self.net.queues.push(Queue {
                name: format!("{name}-{}", kind.suffix()),
                rate,
                site: Some(QueueSite { host, kind }),
            });
            self.net.queues.len() - 1
        };
        let egress = push(QueueKind::Egress, link_bytes_per_s);
        let ingress = push(QueueKind::Ingress, link_bytes_per_s);
        let storage = storage_rate.map(|r| push(QueueKind::Storage, r));
        self.net.hosts.push(Host {
            name,
            egress,
            ingress,
            storage,
        });
        host
    }

    /// Adds a queue that belongs to no host (a server of a general network). Returns its index.
    pub fn queue(&mut self, name: impl Into<String>, rate: f64) -> usize {
        self.net.queues.push(Queue {
            name: name.into(),
            rate,
            site: None,
        });
        self.net.queues.len() - 1
    }

    /// Adds a tenant without flows. Returns its index.
    pub fn tenant(&mut self, t: NewTenant) -> usize {
        self.net.tenants.push(TenantSpec {
            name: t.name,
            slo: t.slo,
            flows: Vec::new(),
            group: t.group,
            priority: t.priority,
            hosts: t.hosts,
        });
        self.net.tenants.len() - 1
    }

    /// Adds tenant `tenant`'s flow of `stage` along its hosts ([`Network::route`]), named
    /// `<tenant>-req`, `<tenant>-storage` or `<tenant>-resp`.
    pub fn flow(
        &mut self,
        tenant: usize,
        stage: Stage,
        models: FlowModels,
    ) -> Result<usize, NetworkError> {
        let name = flow_name(&self.net.tenants[tenant].name, stage);
        self.named_flow(tenant, name, stage, models)
    }

    /// [`NetworkBuilder::flow`] with a name of the caller's (an input format's own).
    pub fn named_flow(
        &mut self,
        tenant: usize,
        name: impl Into<String>,
        stage: Stage,
        models: FlowModels,
    ) -> Result<usize, NetworkError> {
        let t = &self.net.tenants[tenant];
        let hosts = t
            .hosts
            .ok_or_else(|| NetworkError::NoHosts(t.name.clone()))?;
        let path = self.net.route(&t.name, stage, hosts)?;
        Ok(self.flow_on(tenant, name, stage, path, models))
    }

    /// Adds a flow of `tenant` along an explicit `path` of queue indices.
    pub fn flow_on(
        &mut self,
        tenant: usize,
        name: impl Into<String>,
        stage: Stage,
        path: Vec<usize>,
        models: FlowModels,
    ) -> usize {
        let f = self.net.flows.len();
        self.net.flows.push(Flow {
            name: name.into(),
            tenant,
            stage,
            path,
            mmpp: models.mmpp.map(Arc::new),
            arrival: models.arrival,
        });
        self.net.tenants[tenant].flows.push(f);
        f
    }

    /// A builder that goes on from an existing network (to add tenants or queues to it).
    pub fn from_network(net: Network) -> NetworkBuilder {
        NetworkBuilder { net }
    }

    /// The network so far (for lookups while building).
    pub fn network(&self) -> &Network {
        &self.net
    }

    /// The network so far, unchecked: for a caller that validates only what it added
    /// ([`Network::validate_from`]).
    pub fn into_network(self) -> Network {
        self.net
    }

    /// Validates and returns the network.
    pub fn build(self) -> Result<Network, NetworkError> {
        self.net.validate()?;
        Ok(self.net)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(slos_ms: &[f64]) -> Network {
        let mut b = NetworkBuilder::new();
        let q = b.queue("a-out", 125e6);
        for (i, ms) in slos_ms.iter().enumerate() {
            let t = b.tenant(NewTenant::new(
                format!("t{i}"),
                Slo::new(ms * 1e-3, 99.9).unwrap(),
            ));
            b.flow_on(
                t,
                format!("f{i}"),
                Stage::NetIn,
                vec![q],
                FlowModels::default(),
            );
        }
        b.build().unwrap()
    }

    #[test]
    fn priorities_are_the_dense_rank_of_slos() {
        let n = net(&[
            50.0, 10.0, 20.0, 10.0, 100.0, 20.0, 5.0, 7.0, 8.0, 9.0, 11.0,
        ]);
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

    fn slo() -> Slo {
        Slo::new(0.02, 99.9).unwrap()
    }

    #[test]
    fn routed_flows_follow_the_client_server_rule_and_move_with_the_server() {
        let mut b = NetworkBuilder::new();
        let c = b.host("c", 125e6, None);
        let s1 = b.host("s1", 125e6, Some(1.0));
        let s2 = b.host("s2", 1.25e9, Some(1.0));
        let t = b.tenant(NewTenant::new("web", slo()).between(c, s1));
        for stage in Stage::ALL {
            b.flow(t, stage, FlowModels::default()).unwrap();
        }
        let mut n = b.build().unwrap();
        let names = |n: &Network, f: usize| -> Vec<String> {
            n.flows[f]
                .path
                .iter()
                .map(|&q| n.queues[q].name.clone())
                .collect()
        };
        let flows: Vec<&str> = n.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(flows, ["web-req", "web-storage", "web-resp"]);
        assert_eq!(names(&n, 0), ["c-out", "s1-in"]);
        assert_eq!(names(&n, 1), ["s1-storage"]);
        assert_eq!(names(&n, 2), ["s1-out", "c-in"]);
        n.move_tenant(t, s2).unwrap();
        assert_eq!(names(&n, 0), ["c-out", "s2-in"]);
        assert_eq!(names(&n, 1), ["s2-storage"]);
        assert_eq!(names(&n, 2), ["s2-out", "c-in"]);
        assert_eq!(
            n.tenants[t].hosts,
            Some(TenantHosts {
                client: c,
                server: s2
            })
        );
        n.validate().unwrap();
        // every queue knows its host and kind
        let s2_in = n.hosts[s2].ingress;
        assert_eq!(
            n.queues[s2_in].site,
            Some(QueueSite {
                host: s2,
                kind: QueueKind::Ingress
            })
        );
    }

    #[test]
    fn storage_on_a_host_without_one_is_an_error_naming_both() {
        let mut b = NetworkBuilder::new();
        let c = b.host("c", 125e6, None);
        let s = b.host("s", 125e6, None);
        let t = b.tenant(NewTenant::new("db", slo()).between(c, s));
        let e = b
            .flow(t, Stage::Storage, FlowModels::default())
            .unwrap_err();
        assert_eq!(
            e,
            NetworkError::NoStorage {
                tenant: "db".into(),
                host: "s".into()
            }
        );
        let t2 = b.tenant(NewTenant::new("raw", slo()));
        assert_eq!(
            b.flow(t2, Stage::NetIn, FlowModels::default()).unwrap_err(),
            NetworkError::NoHosts("raw".into())
        );
    }

    #[test]
    fn a_host_queue_that_moved_is_caught() {
        let mut b = NetworkBuilder::new();
        b.host("a", 125e6, None);
        b.host("b", 125e6, None);
        let mut n = b.build().unwrap();
        n.hosts[0].egress = 3;
        assert!(matches!(n.validate(), Err(NetworkError::HostQueue { .. })));
    }
}
