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
use tailbound_enforce_plan::{tos_for_priority, MAX_PRIORITY};
use tailbound_model::{Decisions, Excess, Network, Stage};
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
    /// the policy that decided, and what its rate limits do with excess
    pub policy: String,
    pub excess: Excess,
    pub scale: f64,
    /// memcached's port on every server host
    pub port: u16,
    pub hosts: Vec<Host>,
    pub tenants: Vec<Tenant>,
    pub aggressor: Option<Aggressor>,
}

impl Topology {
    /// The topology of `network`'s admitted tenants under `decisions`.
    pub fn build(
        net: &Network,
        decisions: &Decisions,
        opts: &TopologyOptions,
    ) -> Result<Topology, TestbedError> {
        check_scale(opts.scale)?;
        if opts.port == 0 {
            return Err(TestbedError::Input(
                "memcached's port 0 is not a port; use 1 to 65535 (--port)".into(),
            ));
        }
        let plan = Plan::from_decisions(net, decisions).map_err(TestbedError::Decisions)?;
        if plan.tenants.is_empty() {
            return Err(TestbedError::Input(
                "the decisions admit no tenant; nothing to replay on the testbed".into(),
            ));
        }
        // network hosts of each running tenant, moved to its decided server
        let mut ends = Vec::with_capacity(plan.tenants.len());
        for &ti in &plan.tenants {
            let spec = &net.tenants[ti];
            let hosts = spec.hosts.ok_or_else(|| {
                TestbedError::Input(format!(
                    "tenant {:?} has no client and server hosts (an SNC-Meister model config); \
                     the testbed needs a scenario that names its hosts",
                    spec.name
                ))
            })?;
            if let Some(&f) = spec
                .flows
                .iter()
                .find(|&&f| net.flows[f].stage == Stage::Storage)
            {
                return Err(TestbedError::Input(format!(
                    "tenant {:?} crosses storage (flow {:?}); the testbed's memcached serves \
                     from memory and has no storage stage: remove `storage = true` from the \
                     tenant or check it in the simulator",
                    spec.name, net.flows[f].name
                )));
            }
            ends.push((hosts.client, plan.servers[ti].unwrap_or(hosts.server)));
        }
        let used: BTreeSet<usize> = ends.iter().flat_map(|&(c, s)| [c, s]).collect();
        let mut hosts: Vec<Host> = Vec::new();
        let mut index = vec![None; net.hosts.len()];
        for &nh in &used {
            let host = net.hosts.get(nh).ok_or_else(|| {
                TestbedError::Input(format!(
                    "a tenant runs on host {nh}, which the network does not have"
                ))
            })?;
            let i = hosts.len();
            index[nh] = Some(i);
            hosts.push(Host {
                name: host.name.clone(),
                label: format!("h{i}"),
                ip: netns::host_ip(i).ok_or(TestbedError::TooManyHosts {
                    hosts: used.len() + usize::from(opts.aggressor.is_some()),
                    max: netns::MAX_HOSTS,
                })?,
                rate_bytes_per_s: net.queues[host.egress].rate * opts.scale,
                server: false,
                client: false,
            });
        }
        // priorities as the simulator derives them: the decisions', else the dense rank of
        // the SLO among the running tenants
        let running = Network {
            hosts: Vec::new(),
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
            let (client, server) = (index[*c].unwrap_or(0), index[*s].unwrap_or(0));
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
                let stage = net.flows[f].stage;
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
                tos: tos_for_priority(levels[k]).ok_or_else(|| {
                    TestbedError::Input(format!(
                        "tenant {:?} has priority level {}; senders mark at most {} levels \
                         (0 to {MAX_PRIORITY}) in the DSCP",
                        spec.name,
                        levels[k],
                        MAX_PRIORITY + 1
                    ))
                })?,
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
            policy: decisions.policy.clone(),
            excess: decisions.excess,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tailbound_model::{Bucket, Excess, RateLimit, TenantDecision};

    /// Three hosts, three tenants: web and kv from client1 to server1, batch from client1 to
    /// server2; server3 unused.
    const SCENARIO: &str = r#"
[[hosts]]
name = "client1"
link = "1Gbit"
[[hosts]]
name = "server1"
link = "1Gbit"
[[hosts]]
name = "server2"
link = "10Gbit"
[[hosts]]
name = "server3"
[[tenants]]
name = "web"
client = "client1"
server = "server1"
slo = "20ms"
model = { arrival = { model = "poisson", rate_per_s = 50 }, sizes = { model = "fixed", bytes = 4096 }, read_fraction = 0.9, duration_s = 10, vocabulary = "key_value" }
[[tenants]]
name = "kv"
client = "client1"
server = "server1"
slo = "50ms"
model = { arrival = { model = "poisson", rate_per_s = 50 }, sizes = { model = "fixed", bytes = 1024 }, read_fraction = 0.5, duration_s = 10, vocabulary = "key_value" }
[[tenants]]
name = "batch"
client = "client1"
server = "server2"
slo = "20ms"
model = { arrival = { model = "poisson", rate_per_s = 50 }, sizes = { model = "fixed", bytes = 1024 }, read_fraction = 0.5, duration_s = 10, vocabulary = "key_value" }
"#;

    fn scenario() -> Network {
        tailbound_scenario::own::parse_toml(Path::new("t.toml"), SCENARIO)
            .unwrap()
            .network
    }

    fn decide(admitted: &[&str]) -> Decisions {
        Decisions {
            policy: "test".into(),
            excess: Excess::Wait,
            tenants: ["web", "kv", "batch"]
                .iter()
                .map(|n| TenantDecision {
                    name: n.to_string(),
                    admitted: admitted.contains(n),
                    priority: None,
                    server: None,
                    limits: Vec::new(),
                })
                .collect(),
        }
    }

    fn opts(scale: f64) -> TopologyOptions {
        TopologyOptions {
            scale,
            ..TopologyOptions::default()
        }
    }

    #[test]
    fn hosts_are_those_admitted_tenants_use_at_scaled_rates() {
        let t = Topology::build(&scenario(), &decide(&["web", "kv"]), &opts(0.1)).unwrap();
        let names: Vec<&str> = t.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["client1", "server1"]);
        assert!(t
            .hosts
            .iter()
            .all(|h| (h.rate_bytes_per_s - 12.5e6).abs() < 1e-6));
        assert!(t.hosts[0].client && !t.hosts[0].server);
        assert!(t.hosts[1].server && !t.hosts[1].client);
        assert_eq!(t.hosts[1].ip, netns::host_ip(1).unwrap());
        // every tenant its own address, its server's memcached
        assert_ne!(t.tenants[0].address, t.tenants[1].address);
        assert_eq!(
            t.tenants[0].server_addr,
            SocketAddr::new(t.hosts[1].ip.into(), MEMCACHED_PORT)
        );
        // dense rank of the SLO among the admitted: 20 ms → 0, 50 ms → 1
        assert_eq!((t.tenants[0].priority, t.tenants[1].priority), (0, 1));
        assert!(t.tenants[0].tos > t.tenants[1].tos);
        let all =
            Topology::build(&scenario(), &decide(&["web", "kv", "batch"]), &opts(1.0)).unwrap();
        assert_eq!(all.hosts.len(), 3);
        assert_eq!(all.hosts[2].rate_bytes_per_s, 1.25e9);
        assert_eq!(all.tenants[2].priority, 0, "batch shares web's SLO");
    }

    #[test]
    fn decided_servers_priorities_and_limits_are_carried_scaled() {
        let mut d = decide(&["web", "kv"]);
        d.tenants[1].server = Some("server2".into());
        d.tenants[1].priority = Some(5);
        d.tenants[0].limits = vec![RateLimit {
            flow: "web-req".into(),
            stage: Stage::NetIn,
            bucket: Bucket {
                rate: 1e6,
                burst: 3000.0,
            },
        }];
        let t = Topology::build(&scenario(), &d, &opts(0.5)).unwrap();
        assert_eq!(t.hosts[t.tenants[1].server].name, "server2");
        assert_eq!(t.tenants[1].priority, 5);
        assert_eq!(
            t.tenants[0].limits,
            vec![Limit {
                flow: "web-req".into(),
                stage: Stage::NetIn,
                rate_bytes_per_s: 0.5e6,
                burst_bytes: 3000.0,
            }]
        );
    }

    #[test]
    fn the_aggressor_gets_a_host_at_its_targets_rate() {
        let mut o = opts(1.0);
        o.aggressor = Some("udp".parse().unwrap());
        let t = Topology::build(&scenario(), &decide(&["web", "kv", "batch"]), &o).unwrap();
        let a = t.aggressor.as_ref().unwrap();
        // server1 serves two tenants, server2 one
        assert_eq!(t.hosts[a.target].name, "server1");
        assert_eq!(t.hosts[a.host].name, "aggressor");
        assert_eq!(t.hosts[a.host].rate_bytes_per_s, 125e6);
        o.aggressor = Some("memcached@server2".parse().unwrap());
        let t = Topology::build(&scenario(), &decide(&["web", "kv", "batch"]), &o).unwrap();
        let a = t.aggressor.as_ref().unwrap();
        assert_eq!(
            (a.kind, t.hosts[a.target].name.as_str()),
            (AggressorKind::Memcached, "server2")
        );
        assert_eq!(t.hosts[a.host].rate_bytes_per_s, 1.25e9);
        o.aggressor = Some("tcp@server3".parse().unwrap());
        let e = Topology::build(&scenario(), &decide(&["web"]), &o).unwrap_err();
        assert!(e.to_string().contains("\"server3\" is not a server"), "{e}");
    }

    #[test]
    fn bad_input_is_refused_with_what_to_do() {
        for bad in ["icmp", "udp@", ""] {
            let e = bad.parse::<AggressorSpec>().unwrap_err().to_string();
            assert!(
                e.contains("udp, tcp or memcached") || e.contains("names no server"),
                "{bad}: {e}"
            );
        }
        for s in [0.0, -1.0, 1.5, f64::NAN] {
            let e = Topology::build(&scenario(), &decide(&["web"]), &opts(s)).unwrap_err();
            assert!(e.to_string().contains("(0, 1]"), "{e}");
        }
        let e = Topology::build(&scenario(), &decide(&[]), &opts(1.0)).unwrap_err();
        assert!(e.to_string().contains("admit no tenant"), "{e}");
        let no_port = TopologyOptions {
            port: 0,
            ..opts(1.0)
        };
        let e = Topology::build(&scenario(), &decide(&["web"]), &no_port).unwrap_err();
        assert!(e.to_string().contains("port 0 is not a port"), "{e}");
        let mut d = decide(&["web"]);
        d.tenants.pop();
        let e = Topology::build(&scenario(), &d, &opts(1.0)).unwrap_err();
        assert!(e.to_string().contains("batch"), "{e}");
    }

    #[test]
    fn a_tenant_on_storage_is_refused() {
        let text = SCENARIO
            .replace(
                "name = \"server1\"\nlink = \"1Gbit\"",
                "name = \"server1\"\nlink = \"1Gbit\"\nstorage = true",
            )
            .replacen("slo = \"20ms\"\n", "slo = \"20ms\"\nstorage = true\n", 1);
        let s = tailbound_scenario::own::parse_toml(Path::new("t.toml"), &text).unwrap();
        let e = Topology::build(&s.network, &decide(&["web"]), &opts(1.0)).unwrap_err();
        assert!(e.to_string().contains("crosses storage"), "{e}");
    }

    #[test]
    fn more_hosts_than_one_machine_runs_are_refused() {
        let mut text = String::new();
        let hosts = netns::MAX_HOSTS + 1;
        for h in 0..hosts {
            text += &format!("[[hosts]]\nname = \"h{h}\"\n");
        }
        let mut names = Vec::new();
        for t in 0..hosts / 2 + 1 {
            names.push(format!("t{t}"));
            text += &format!(
                "[[tenants]]\nname = \"t{t}\"\nclient = \"h{}\"\nserver = \"h{}\"\nslo = \"1s\"\nmodel = {{ arrival = {{ model = \"poisson\", rate_per_s = 1 }}, sizes = {{ model = \"fixed\", bytes = 100 }}, read_fraction = 1, duration_s = 4, vocabulary = \"key_value\" }}\n",
                (2 * t) % hosts,
                (2 * t + 1) % hosts
            );
        }
        let s = tailbound_scenario::own::parse_toml(Path::new("big.toml"), &text).unwrap();
        let d = Decisions {
            policy: "all".into(),
            excess: Excess::Wait,
            tenants: names
                .iter()
                .map(|n| TenantDecision {
                    name: n.clone(),
                    admitted: true,
                    priority: None,
                    server: None,
                    limits: Vec::new(),
                })
                .collect(),
        };
        let e = Topology::build(&s.network, &d, &opts(1.0)).unwrap_err();
        assert!(
            matches!(e, TestbedError::TooManyHosts { hosts, max } if hosts == netns::MAX_HOSTS + 1 && max == netns::MAX_HOSTS),
            "{e}"
        );
    }
}
