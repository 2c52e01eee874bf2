//! The testbed's picture of a scenario under a policy's decisions: which hosts exist (as
//! namespaces), at which scaled link rates, which tenants run between which of them, with
//! which addresses, priorities and rate limits — the host map that the enforcer and the
//! replay clients work from. No I/O.
//!
//! Hosts are the scenario hosts that an admitted tenant uses (client or server), in scenario
//! queue order, plus the aggressor's own host when there is one. Every tenant is a "VM" on its
//! client host with an address of its own ([`tailbound_dataplane::netns::extra_ip`]), so its
//! traffic is recognised by address in both directions; its server is the memcached on its
//! (decided) server host. Priorities are the decisions', or the dense rank of the SLO among
//! the admitted tenants, exactly as the simulator derives them.
//!
//! Scaling (`scale` S, 0 < S ≤ 1): every link rate and every rate limit is multiplied by S
//! and every trace time divided by it (bursts stay in bytes), so the replay is the scenario
//! slowed down 1/S times, and a latency measured on the testbed is multiplied by S to be
//! compared with the scenario's (the simulator's, the bound, the SLO).

use crate::TestbedError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::str::FromStr;
use tailbound_dataplane::netns;
use tailbound_model::{Decisions, Network, Stage};
use tailbound_scenario::Scenario;
use tailbound_sim::Plan;

/// memcached's port on every server host.
pub const MEMCACHED_PORT: u16 = 11211;

/// What the aggressor does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AggressorKind {
    /// UDP datagrams at its link's rate toward the target server (its in direction)
    Udp,
    /// one TCP connection sending as fast as its link allows toward the target server
    Tcp,
    /// 64 outstanding `get`s of the largest value from the target's memcached (loading the
    /// server's out direction)
    Memcached,
}

/// A tenant that ignores admission: `udp`, `tcp` or `memcached`, optionally `@SERVER` (a
/// server host of the scenario; default the one with the most admitted tenants).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AggressorSpec {
    pub kind: AggressorKind,
    pub target: Option<String>,
}

impl FromStr for AggressorSpec {
    type Err = TestbedError;
    fn from_str(s: &str) -> Result<AggressorSpec, TestbedError> {
        let (kind, target) = match s.split_once('@') {
            Some((k, t)) => (k, Some(t.to_string())),
            None => (s, None),
        };
        let kind = match kind.trim().to_ascii_lowercase().as_str() {
            "udp" => AggressorKind::Udp,
            "tcp" => AggressorKind::Tcp,
            "memcached" => AggressorKind::Memcached,
            _ => {
                return Err(TestbedError::Input(format!(
                    "unknown aggressor {s:?}; use udp, tcp or memcached, optionally @SERVER \
                     (e.g. udp@server1)"
                )))
            }
        };
        if target.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(TestbedError::Input(format!(
                "aggressor {s:?} names no server after '@'; e.g. udp@server1"
            )));
        }
        Ok(AggressorSpec { kind, target })
    }
}

/// How the topology is derived.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyOptions {
    /// link rates and rate limits × scale, trace times ÷ scale; 0 < scale ≤ 1
    pub scale: f64,
    pub port: u16,
    pub aggressor: Option<AggressorSpec>,
}

impl Default for TopologyOptions {
    fn default() -> Self {
        TopologyOptions {
            scale: 1.0,
            port: MEMCACHED_PORT,
            aggressor: None,
        }
    }
}

/// Checks a scale factor.
pub fn check_scale(scale: f64) -> Result<(), TestbedError> {
    if scale.is_finite() && scale > 0.0 && scale <= 1.0 {
        Ok(())
    } else {
        Err(TestbedError::Input(format!(
            "scale {scale} is not allowed; use a factor in (0, 1]: links run at rate × scale \
             and traces are slowed down 1/scale times (e.g. --scale 0.1 for 1 Gbit/s links at \
             100 Mbit/s)"
        )))
    }
}

/// One host of the testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// the scenario's host name (`aggressor` for the aggressor's)
    pub name: String,
    /// its namespace label (`h0`, `h1`, ..., `agg`)
    pub label: String,
    /// its primary address
    pub ip: Ipv4Addr,
    /// its link rate on the testbed, each way (the scenario's × scale) [bytes/s]
    pub rate_bytes_per_s: f64,
    /// runs a memcached
    pub server: bool,
    /// runs replay clients
    pub client: bool,
}

/// A token bucket of a tenant's flow, scaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// the flow's name in the network (`<tenant>-req`, `<tenant>-resp`)
    pub flow: String,
    pub stage: Stage,
    /// token rate on the testbed (the decision's × scale) [bytes/s]
    pub rate_bytes_per_s: f64,
    /// bucket depth [bytes]
    pub burst_bytes: f64,
}

/// One admitted tenant on the testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tenant {
    pub name: String,
    /// index into the scenario's tenants
    pub scenario_index: usize,
    /// index into [`Topology::hosts`] of its client and server hosts
    pub client: usize,
    pub server: usize,
    /// its own address on its client host
    pub address: Ipv4Addr,
    /// its memcached
    pub server_addr: SocketAddr,
    /// priority level, 0 highest
    pub priority: u32,
    /// the IP_TOS byte its packets carry
    pub tos: u8,
    /// its SLO latency [s] and percentile, as in the scenario
    pub slo_s: f64,
    pub percentile: f64,
    pub limits: Vec<Limit>,
}

/// The aggressor on the testbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggressor {
    pub kind: AggressorKind,
    /// index into [`Topology::hosts`] of its own host and of the server it aims at
    pub host: usize,
    pub target: usize,
}

/// Hosts, tenants and addresses of a testbed (the host map); see the module docs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    pub scale: f64,
    /// memcached's port on every server host
    pub port: u16,
    pub hosts: Vec<Host>,
    pub tenants: Vec<Tenant>,
    pub aggressor: Option<Aggressor>,
}

/// The IP_TOS byte of priority level `level` (0 highest): DSCP 63 − level (levels above 62
/// share DSCP 1), shifted into the TOS byte. DSCP 0, the default, is below every tenant: the
/// best effort of traffic that ignores admission.
pub fn tos_of_level(level: u32) -> u8 {
    let dscp = 63 - level.min(62) as u8;
    dscp << 2
}

/// The link rate of scenario host `name`: the rate of its out queue [bytes/s].
fn link_rate(net: &Network, name: &str) -> Option<f64> {
    let out = format!("{name}-out");
    net.queues.iter().find(|q| q.name == out).map(|q| q.rate)
}

/// The scenario hosts in the order of their queues.
fn host_order(net: &Network) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for q in &net.queues {
        if let Some(h) = q.name.strip_suffix("-out") {
            if seen.insert(h.to_string()) {
                order.push(h.to_string());
            }
        }
    }
    order
}

impl Topology {
    /// The topology of `scenario`'s admitted tenants under `decisions`.
    pub fn build(
        scenario: &Scenario,
        decisions: &Decisions,
        opts: &TopologyOptions,
    ) -> Result<Topology, TestbedError> {
        check_scale(opts.scale)?;
        let net = &scenario.network;
        let plan = Plan::from_decisions(scenario, decisions).map_err(TestbedError::Decisions)?;
        if plan.tenants.is_empty() {
            return Err(TestbedError::Input(
                "the decisions admit no tenant; nothing to replay on the testbed".into(),
            ));
        }
        // hosts of each running tenant, moved to its decided server
        let mut ends = Vec::with_capacity(plan.tenants.len());
        for &ti in &plan.tenants {
            let spec = &net.tenants[ti];
            let hosts = scenario.hosts[ti].as_ref().ok_or_else(|| {
                TestbedError::Input(format!(
                    "tenant {:?} has no client and server hosts (an SNC-Meister model config); \
                     the testbed needs a scenario that names its hosts",
                    spec.name
                ))
            })?;
            if let Some(f) = spec.flows.iter().find(|&&f| {
                scenario.flows[f]
                    .as_ref()
                    .is_some_and(|s| s.stage == Stage::Storage)
            }) {
                return Err(TestbedError::Input(format!(
                    "tenant {:?} crosses storage (flow {:?}); the testbed's memcached serves \
                     from memory and has no storage stage: remove `storage = true` from the \
                     tenant or check it in the simulator",
                    spec.name, net.flows[*f].name
                )));
            }
            let server = plan.servers[ti]
                .clone()
                .unwrap_or_else(|| hosts.server.clone());
            ends.push((hosts.client.clone(), server));
        }
        let order = host_order(net);
        let used: BTreeSet<&str> = ends
            .iter()
            .flat_map(|(c, s)| [c.as_str(), s.as_str()])
            .collect();
        let mut hosts: Vec<Host> = Vec::new();
        for name in order.iter().filter(|h| used.contains(h.as_str())) {
            let rate = link_rate(net, name).ok_or_else(|| {
                TestbedError::Input(format!("host {name:?} has no link in the scenario"))
            })?;
            let i = hosts.len();
            hosts.push(Host {
                name: name.clone(),
                label: format!("h{i}"),
                ip: netns::host_ip(i).ok_or(TestbedError::TooManyHosts {
                    hosts: used.len() + 1,
                    max: netns::MAX_HOSTS,
                })?,
                rate_bytes_per_s: rate * opts.scale,
                server: false,
                client: false,
            });
        }
        let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
        let index = |name: &str| names.iter().position(|h| h == name);
        if let Some((c, s)) = ends
            .iter()
            .find(|(c, s)| index(c).is_none() || index(s).is_none())
        {
            return Err(TestbedError::Input(format!(
                "a tenant runs between hosts {c:?} and {s:?}, which are not both hosts of the \
                 scenario (with links)"
            )));
        }
        // priorities as the simulator derives them: the decisions', else the dense rank of
        // the SLO among the running tenants
        let running = Network {
            queues: Vec::new(),
            flows: Vec::new(),
            tenants: plan
                .tenants
                .iter()
                .map(|&ti| {
                    let mut t = net.tenants[ti].clone();
                    if let Some(p) = plan.priorities[ti] {
                        t.priority = Some(p);
                    }
                    t
                })
                .collect(),
        };
        let levels = running.priorities();
        let mut tenants = Vec::with_capacity(plan.tenants.len());
        for (k, (&ti, (c, s))) in plan.tenants.iter().zip(&ends).enumerate() {
            let spec = &net.tenants[ti];
            let (client, server) = (index(c).unwrap_or(0), index(s).unwrap_or(0));
            hosts[client].client = true;
            hosts[server].server = true;
            let address = netns::extra_ip(k).ok_or_else(|| {
                TestbedError::Input(format!(
                    "{} tenants; the testbed gives at most {} tenants an address",
                    plan.tenants.len(),
                    netns::MAX_EXTRA
                ))
            })?;
            let mut limits = Vec::new();
            for &f in &spec.flows {
                let stage = scenario.flows[f].as_ref().map_or(Stage::NetIn, |s| s.stage);
                for b in plan.shapers.get(&f).into_iter().flatten() {
                    limits.push(Limit {
                        flow: net.flows[f].name.clone(),
                        stage,
                        rate_bytes_per_s: b.rate * opts.scale,
                        burst_bytes: b.burst,
                    });
                }
            }
            tenants.push(Tenant {
                name: spec.name.clone(),
                scenario_index: ti,
                client,
                server,
                address,
                server_addr: SocketAddr::new(hosts[server].ip.into(), opts.port),
                priority: levels[k],
                tos: tos_of_level(levels[k]),
                slo_s: spec.slo.latency_s,
                percentile: spec.slo.percentile.value(),
                limits,
            });
        }
        let aggressor = match &opts.aggressor {
            None => None,
            Some(a) => Some(add_aggressor(&mut hosts, &tenants, a)?),
        };
        if hosts.len() > netns::MAX_HOSTS {
            return Err(TestbedError::TooManyHosts {
                hosts: hosts.len(),
                max: netns::MAX_HOSTS,
            });
        }
        Ok(Topology {
            scale: opts.scale,
            port: opts.port,
            hosts,
            tenants,
            aggressor,
        })
    }

    /// The tenants whose client is host `h`.
    pub fn tenants_on(&self, h: usize) -> impl Iterator<Item = &Tenant> {
        self.tenants.iter().filter(move |t| t.client == h)
    }
}

/// Adds the aggressor's host, at its target's link rate, and says where it aims.
fn add_aggressor(
    hosts: &mut Vec<Host>,
    tenants: &[Tenant],
    spec: &AggressorSpec,
) -> Result<Aggressor, TestbedError> {
    let servers: Vec<usize> = (0..hosts.len()).filter(|&h| hosts[h].server).collect();
    let target = match &spec.target {
        Some(name) => hosts
            .iter()
            .position(|h| &h.name == name && h.server)
            .ok_or_else(|| {
                TestbedError::Input(format!(
                    "aggressor target {name:?} is not a server of an admitted tenant; the \
                     servers are {}",
                    servers
                        .iter()
                        .map(|&h| format!("{:?}", hosts[h].name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
        // the server with the most tenants (the first of equals)
        None => servers
            .iter()
            .copied()
            .max_by_key(|&h| {
                (
                    tenants.iter().filter(|t| t.server == h).count(),
                    std::cmp::Reverse(h),
                )
            })
            .unwrap_or(0),
    };
    let mut name = "aggressor".to_string();
    while hosts.iter().any(|h| h.name == name) {
        name.push('_');
    }
    let i = hosts.len();
    hosts.push(Host {
        name,
        label: "agg".into(),
        ip: netns::host_ip(i).ok_or(TestbedError::TooManyHosts {
            hosts: i + 1,
            max: netns::MAX_HOSTS,
        })?,
        rate_bytes_per_s: hosts[target].rate_bytes_per_s,
        server: false,
        client: false,
    });
    Ok(Aggressor {
        kind: spec.kind,
        host: i,
        target,
    })
}
