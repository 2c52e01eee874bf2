//! The testbed's links and decisions on tc, through the enforcer (`tailbound-enforce-plan`
//! plans, `tailbound_dataplane::tc` applies): the [`Topology`] becomes a host map (every host
//! its namespace and `tb0` with the tenants' addresses as aliases; the switch its ports, each
//! at the rate of the host behind it), and then either
//!
//! * without enforcement, every host interface and switch port gets the plan of no tenants:
//!   an HTB root at its link rate (`link_plan`), so the links are just links; or
//! * with enforcement, the decisions (scaled: rates × scale, priorities as the topology has
//!   them) are planned and applied on every host and switch port: priority levels, a leaf per
//!   tenant flow with its buckets, u32 filters on addresses on hosts and on the DSCP on switch
//!   ports (`tailbound enforce` does the same from files).
//!
//! The enforcer keeps its records (what each interface had before) in a directory per testbed
//! under `/run/tailbound/enforce/`, named after the switch's namespace and removed with it.

use crate::topology::Topology;
use crate::TestbedError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use tailbound_dataplane::netns::{self, Lan};
use tailbound_dataplane::tc::{Enforcer, Target};
use tailbound_enforce_plan::{link_plan, plan, HostMap, PlanOptions, PriorAllocations};
use tailbound_model::{Bucket, Decisions, RateLimit, TenantDecision};

/// Where the enforcer's records of every testbed live.
pub const RECORDS_DIR: &str = "/run/tailbound/enforce";

#[derive(Serialize)]
struct MapFile {
    hosts: Vec<MapHost>,
    tenants: Vec<MapTenant>,
}

#[derive(Serialize)]
struct MapHost {
    name: String,
    netns: String,
    role: &'static str,
    interfaces: Vec<MapInterface>,
}

#[derive(Serialize)]
struct MapInterface {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
    link: f64,
}

#[derive(Serialize)]
struct MapEndpoint {
    host: String,
    address: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    port: Option<u16>,
}

#[derive(Serialize)]
struct MapTenant {
    name: String,
    client: MapEndpoint,
    server: MapEndpoint,
    protocol: &'static str,
}

/// The name of the switch in the host map: `switch`, or with `_` appended while a scenario
/// host has that name.
pub fn switch_name(topology: &Topology) -> String {
    let mut name = "switch".to_string();
    while topology.hosts.iter().any(|h| h.name == name) {
        name.push('_');
    }
    name
}

/// The host map of `topology` built as `lan`, as JSON (the format `tailbound enforce --hosts`
/// reads).
pub fn host_map_json(lan: &Lan, topology: &Topology) -> Result<String, TestbedError> {
    let mut hosts: Vec<MapHost> = topology
        .hosts
        .iter()
        .zip(lan.hosts())
        .enumerate()
        .map(|(h, (host, built))| MapHost {
            name: host.name.clone(),
            netns: built.ns.clone(),
            role: "host",
            interfaces: vec![MapInterface {
                name: built.iface.clone(),
                address: Some(host.ip.to_string()),
                aliases: topology
                    .tenants_on(h)
                    .map(|t| t.address.to_string())
                    .collect(),
                link: host.rate_bytes_per_s,
            }],
        })
        .collect();
    let switch = lan
        .switch_ns()
        .ok_or_else(|| TestbedError::Input("the testbed's LAN has no switch".into()))?;
    hosts.push(MapHost {
        name: switch_name(topology),
        netns: switch.to_string(),
        role: "switch",
        interfaces: topology
            .hosts
            .iter()
            .zip(lan.hosts())
            .map(|(host, built)| MapInterface {
                name: built.port.clone().unwrap_or_default(),
                address: None,
                aliases: Vec::new(),
                link: host.rate_bytes_per_s,
            })
            .collect(),
    });
    let tenants = topology
        .tenants
        .iter()
        .map(|t| MapTenant {
            name: t.name.clone(),
            client: MapEndpoint {
                host: topology.hosts[t.client].name.clone(),
                address: t.address.to_string(),
                port: None,
            },
            server: MapEndpoint {
                host: topology.hosts[t.server].name.clone(),
                address: t.server_addr.ip().to_string(),
                port: Some(t.server_addr.port()),
            },
            protocol: "tcp",
        })
        .collect();
    serde_json::to_string_pretty(&MapFile { hosts, tenants })
        .map_err(|e| TestbedError::Input(format!("cannot write the host map: {e}")))
}

/// The host map of `topology` built as `lan`, validated by the enforcer's parser.
pub fn host_map(lan: &Lan, topology: &Topology) -> Result<HostMap, TestbedError> {
    let text = host_map_json(lan, topology)?;
    HostMap::parse(&text, "testbed.hosts.json")
        .map_err(|e| TestbedError::Enforce(format!("the testbed's host map: {e}")))
}

/// The decisions the testbed enforces: its tenants with their priorities, servers and
/// (scaled) limits.
pub fn decisions(topology: &Topology) -> Decisions {
    Decisions {
        policy: topology.policy.clone(),
        excess: topology.excess,
        tenants: topology
            .tenants
            .iter()
            .map(|t| TenantDecision {
                name: t.name.clone(),
                admitted: true,
                priority: Some(t.priority),
                server: Some(topology.hosts[t.server].name.clone()),
                limits: t
                    .limits
                    .iter()
                    .map(|l| RateLimit {
                        flow: l.flow.clone(),
                        stage: l.stage,
                        bucket: Bucket {
                            rate: l.rate_bytes_per_s,
                            burst: l.burst_bytes,
                        },
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The enforcer's records directory of the testbed whose switch namespace is `switch_ns`.
pub fn records_dir(switch_ns: &str) -> PathBuf {
    Path::new(RECORDS_DIR).join(switch_ns)
}

/// Shapes every link of `lan` and, with `enforce`, applies `topology`'s decisions on every host
/// and switch port; returns the records directory (remove it when the LAN goes).
pub fn apply(lan: &Lan, topology: &Topology, enforce: bool) -> Result<PathBuf, TestbedError> {
    let map = host_map(lan, topology)?;
    let dir = records_dir(lan.switch_ns().unwrap_or("none"));
    let enforcer = Enforcer::new(&dir);
    let tc = |e: tailbound_dataplane::TcError| TestbedError::Enforce(e.to_string());
    if enforce {
        let p = plan(
            &decisions(topology),
            &map,
            &PlanOptions::default(),
            &PriorAllocations::new(),
        )
        .map_err(|e| TestbedError::Enforce(format!("cannot plan the decisions: {e}")))?;
        for host in &p.hosts {
            let reports = enforcer.apply(host).map_err(tc)?;
            tracing::debug!(host = %host.host, changes = reports.iter().map(|r| r.changes).sum::<usize>(), "enforced");
        }
    } else {
        for h in &map.hosts {
            for i in &h.interfaces {
                let target = Target {
                    host: &h.name,
                    netns: h.netns.as_deref(),
                    interface: &i.name,
                };
                enforcer
                    .apply_interface(target, &link_plan(&i.name, i.link_bytes_per_s))
                    .map_err(tc)?;
            }
        }
    }
    Ok(dir)
}

/// Removes the records directories of testbeds whose switch namespace is gone.
pub fn remove_stale_records() {
    let Ok(dir) = std::fs::read_dir(RECORDS_DIR) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(netns::PREFIX) && !netns::path(&name).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}
