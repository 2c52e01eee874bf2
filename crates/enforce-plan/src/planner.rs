//! Decisions + host map → the tc state every interface should have.
//!
//! Each interface gets the same construction (see the crate docs for the picture): a link
//! qdisc `1:` whose one class `1:1` sends at most the link rate; under it an HTB qdisc of
//! priority levels with a root class, a best-effort class (the default for unclassified
//! packets) and one class per level; on end hosts one leaf per tenant flow under its level,
//! with the flow's token buckets; on switch ports the level classes are the leaves and u32
//! filters on the DSCP classify. Levels 7 and beyond live in a nested HTB qdisc under a class
//! of HTB prio 7, seven levels per qdisc.

use crate::alloc::{Allocation, Allocator, Exhausted, ObjectKey};
use crate::error::PlanError;
use crate::hosts::{Host, HostMap, HostRole, Interface};
use crate::state::{
    Class, ClassId, ClassRole, Filter, FilterHandle, FilterRole, FlowMatch, Qdisc, QdiscParent,
    QdiscRole, TcState,
};
use crate::{dscp_for_priority, MAX_PRIORITY};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tailbound_model::{Decisions, Excess, Stage};

/// HTB prios 0..=6 carry levels; prio 7 is the container of the next seven (and best effort).
pub const LEVELS_PER_QDISC: u32 = 7;
/// The largest Ethernet frame of a 1500-byte MTU [bytes].
pub const MTU_FRAME_BYTES: u64 = 1514;
/// The preference of every filter tailbound adds.
pub const FILTER_PREF: u16 = 1;
/// The longest bucket HTB holds: 2^32 ticks of 64 ns [s].
pub const MAX_BUFFER_S: f64 = 274.0;

/// What the planner may be told besides the decisions and the map.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// what leaves do beyond their buckets; `None`: what the decisions say
    pub excess: Option<Excess>,
    /// plan this host only
    pub host: Option<String>,
}

/// The ids each interface had in its last applied plan, by (host, interface).
pub type PriorAllocations = BTreeMap<(String, String), Allocation>;

/// The tc state of every planned interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// the policy that made the decisions
    pub policy: String,
    pub excess: Excess,
    pub hosts: Vec<HostPlan>,
    /// limits tc does not enforce, and why
    pub unenforced: Vec<Unenforced>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPlan {
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    pub role: HostRole,
    pub interfaces: Vec<InterfacePlan>,
}

/// The desired state of one interface's egress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfacePlan {
    pub interface: String,
    /// [bytes/s]
    pub link_bytes_per_s: u64,
    pub state: TcState,
    /// the ids the state uses, for the next plan of this interface
    #[serde(skip)]
    pub allocation: Allocation,
}

/// A limit of the decisions that tc does not enforce.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unenforced {
    pub tenant: String,
    pub flow: String,
    pub stage: Stage,
    pub reason: String,
}

/// One tenant flow and where it is enforced.
#[derive(Debug, Clone)]
struct FlowSpec {
    tenant: String,
    stage: Stage,
    flow: Option<String>,
    priority: u32,
    /// (rate [bytes/s], burst [bytes]); empty: not shaped
    buckets: Vec<(f64, f64)>,
    matches: FlowMatch,
    host: String,
    interface: String,
}

/// Plans every host of the map (or `opts.host`), keeping the ids of `prior` where it can.
pub fn plan(
    decisions: &Decisions,
    map: &HostMap,
    opts: &PlanOptions,
    prior: &PriorAllocations,
) -> Result<Plan, PlanError> {
    decisions.validate()?;
    let excess = opts.excess.unwrap_or(decisions.excess);
    let (flows, unenforced) = flows(decisions, map)?;
    let hosts: Vec<&Host> = match &opts.host {
        None => map.hosts.iter().collect(),
        Some(h) => vec![map.host(h).ok_or_else(|| PlanError::UnknownHost {
            host: h.clone(),
            what: "--host".into(),
            file: map.origin.clone(),
            known: map.host_names(),
        })?],
    };
    // switch ports carry every admitted level
    let levels: BTreeSet<u32> = flows.iter().map(|f| f.priority).collect();
    let empty = Allocation::default();
    let mut out = Vec::with_capacity(hosts.len());
    for host in hosts {
        let mut interfaces = Vec::with_capacity(host.interfaces.len());
        for iface in &host.interfaces {
            let prior = prior
                .get(&(host.name.clone(), iface.name.clone()))
                .unwrap_or(&empty);
            let mine: Vec<&FlowSpec> = flows
                .iter()
                .filter(|f| f.host == host.name && f.interface == iface.name)
                .collect();
            check_interface(map, host, iface, &mine)?;
            let switch_levels = (host.role == HostRole::Switch).then_some(&levels);
            interfaces.push(
                build(iface, &mine, switch_levels, excess, prior).map_err(|e| {
                    PlanError::Exhausted {
                        host: host.name.clone(),
                        interface: iface.name.clone(),
                        what: e.what,
                        max: e.max,
                    }
                })?,
            );
        }
        out.push(HostPlan {
            host: host.name.clone(),
            netns: host.netns.clone(),
            role: host.role,
            interfaces,
        });
    }
    Ok(Plan {
        policy: decisions.policy.clone(),
        excess,
        hosts: out,
        unenforced,
    })
}

/// The plan of an interface with no tenants: its link rate alone (`1:` with class `1:1`). The
/// testbed shapes its links this way; applying a plan with tenants later keeps the link class.
pub fn link_plan(interface: &str, link_bytes_per_s: f64) -> InterfacePlan {
    let iface = Interface {
        name: interface.to_string(),
        address: None,
        link_bytes_per_s,
    };
    // no flows and no levels: nothing to allocate, so nothing can run out
    build(&iface, &[], None, Excess::Wait, &Allocation::default()).unwrap_or_else(|_| {
        InterfacePlan {
            interface: interface.to_string(),
            link_bytes_per_s: whole(link_bytes_per_s),
            state: TcState::default(),
            allocation: Allocation::default(),
        }
    })
}

/// The tenant flows of the decisions on the map's hosts, and the limits tc leaves alone.
fn flows(
    decisions: &Decisions,
    map: &HostMap,
) -> Result<(Vec<FlowSpec>, Vec<Unenforced>), PlanError> {
    let mut flows = Vec::new();
    let mut unenforced = Vec::new();
    for t in decisions.tenants.iter().filter(|t| t.admitted) {
        let traffic = map
            .tenant(&t.name)
            .ok_or_else(|| PlanError::MissingTenant {
                tenant: t.name.clone(),
                file: map.origin.clone(),
            })?;
        let priority = t.priority.ok_or_else(|| PlanError::NoPriority {
            tenant: t.name.clone(),
        })?;
        if priority > MAX_PRIORITY {
            return Err(PlanError::Priority {
                tenant: t.name.clone(),
                priority,
                max: MAX_PRIORITY,
            });
        }
        let client = &traffic.client;
        // the decisions' server wins (placement decides it); the map's port stays
        let (server_host, server_addr, server_port) = match (&t.server, &traffic.server) {
            (Some(s), Some(ep)) if *s == ep.host => (ep.host.clone(), ep.address, ep.port),
            (Some(s), ep) => {
                let h = map.host(s).ok_or_else(|| PlanError::UnknownHost {
                    host: s.clone(),
                    what: format!("the server of tenant {:?} in the decisions", t.name),
                    file: map.origin.clone(),
                    known: map.host_names(),
                })?;
                let addr = match (h.role, h.first_address()) {
                    (HostRole::Host, Some(a)) => a,
                    _ => {
                        return Err(PlanError::Switch {
                            host: s.clone(),
                            what: format!(
                            "the decisions place tenant {:?} on it, but tenants run on end hosts",
                            t.name
                        ),
                        })
                    }
                };
                (s.clone(), addr, ep.as_ref().and_then(|e| e.port))
            }
            (None, Some(ep)) => (ep.host.clone(), ep.address, ep.port),
            (None, None) => {
                return Err(PlanError::NoServer {
                    tenant: t.name.clone(),
                    file: map.origin.clone(),
                })
            }
        };
        let mut by_stage: BTreeMap<Stage, (String, Vec<(f64, f64)>)> = BTreeMap::new();
        for l in &t.limits {
            let entry = by_stage
                .entry(l.stage)
                .or_insert_with(|| (l.flow.clone(), Vec::new()));
            if entry.0 != l.flow {
                return Err(PlanError::TwoFlows {
                    tenant: t.name.clone(),
                    stage: l.stage,
                    a: entry.0.clone(),
                    b: l.flow.clone(),
                });
            }
            entry.1.push((l.bucket.rate, l.bucket.burst));
        }
        if let Some((flow, _)) = by_stage.get(&Stage::Storage) {
            unenforced.push(Unenforced {
                tenant: t.name.clone(),
                flow: flow.clone(),
                stage: Stage::Storage,
                reason: "storage work is busy-seconds of the server's device, not packets; tc shapes network traffic only".into(),
            });
        }
        let client_iface = iface_of(map, &client.host, client.address);
        let server_iface = iface_of(map, &server_host, server_addr);
        for (stage, host, iface, matches) in [
            (
                Stage::NetIn,
                &client.host,
                client_iface,
                FlowMatch {
                    src: Some(client.address),
                    dst: Some(server_addr),
                    sport: client.port,
                    dport: server_port,
                    protocol: traffic.protocol,
                    dscp: None,
                },
            ),
            (
                Stage::NetOut,
                &server_host,
                server_iface,
                FlowMatch {
                    src: Some(server_addr),
                    dst: Some(client.address),
                    sport: server_port,
                    dport: client.port,
                    protocol: traffic.protocol,
                    dscp: None,
                },
            ),
        ] {
            let (flow, buckets) = by_stage.get(&stage).cloned().unzip();
            flows.push(FlowSpec {
                tenant: t.name.clone(),
                stage,
                flow,
                priority,
                buckets: buckets.unwrap_or_default(),
                matches,
                host: host.clone(),
                interface: iface,
            });
        }
    }
    Ok((flows, unenforced))
}

/// The name of `host`'s interface with `address` (the map validated both).
fn iface_of(map: &HostMap, host: &str, address: std::net::Ipv4Addr) -> String {
    map.host(host)
        .and_then(|h| h.interface_with(address))
        .map(|i| i.name.clone())
        .unwrap_or_default()
}

/// Rates, bursts and matches an interface can carry.
fn check_interface(
    map: &HostMap,
    host: &Host,
    iface: &Interface,
    flows: &[&FlowSpec],
) -> Result<(), PlanError> {
    let link = iface.link_bytes_per_s;
    let mut sum = 0.0;
    for f in flows {
        let flow = f.flow.clone().unwrap_or_else(|| f.stage.to_string());
        // the long-term (smallest) rate is what the flow is guaranteed; the other buckets of a
        // concave curve may be faster than the link (they bound bursts)
        let long_term = f.buckets.iter().map(|b| b.0).reduce(f64::min);
        if let Some(rate) = long_term.filter(|&r| r > link) {
            return Err(PlanError::RateAboveLink {
                tenant: f.tenant.clone(),
                flow,
                rate_bytes_per_s: rate,
                host: host.name.clone(),
                interface: iface.name.clone(),
                link_bytes_per_s: link,
            });
        }
        for &(rate, burst) in &f.buckets {
            if burst / rate > MAX_BUFFER_S {
                return Err(PlanError::BurstTooLong {
                    tenant: f.tenant.clone(),
                    flow,
                    burst_bytes: burst,
                    rate_bytes_per_s: rate,
                    seconds: burst / rate,
                    max_s: MAX_BUFFER_S,
                });
            }
        }
        // a flow's guarantee is its long-term (smallest) rate; unshaped flows have none
        sum += f
            .buckets
            .iter()
            .map(|b| b.0)
            .reduce(f64::min)
            .unwrap_or(0.0);
    }
    if sum > link {
        return Err(PlanError::RatesAboveLink {
            host: host.name.clone(),
            interface: iface.name.clone(),
            sum_bytes_per_s: sum,
            link_bytes_per_s: link,
        });
    }
    // only flows between the same addresses to the same port (or to any port) can overlap:
    // compare within those groups, not every pair
    let mut groups: HashMap<_, Vec<&FlowSpec>> = HashMap::new();
    for f in flows {
        groups
            .entry((f.matches.src, f.matches.dst, f.matches.dport))
            .or_default()
            .push(f);
    }
    for ((src, dst, dport), group) in &groups {
        let wild = dport
            .is_some()
            .then(|| groups.get(&(*src, *dst, None)))
            .flatten()
            .map_or(&[][..], Vec::as_slice);
        for (i, a) in group.iter().enumerate() {
            let clash = group[i + 1..]
                .iter()
                .chain(wild)
                .find(|b| a.matches.overlaps(&b.matches));
            if let Some(b) = clash {
                return Err(PlanError::Ambiguous {
                    a: a.tenant.clone(),
                    b: b.tenant.clone(),
                    host: host.name.clone(),
                    interface: iface.name.clone(),
                    file: map.origin.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Whole units, rounded down, at least 1 (HTB takes integers; rounding down never lets a
/// flow exceed its decision).
fn whole(v: f64) -> u64 {
    (v.floor() as u64).max(1)
}

/// Bucket of the classes that run at the link rate: 1 ms of it, at least two frames [bytes].
fn link_burst(link: u64) -> u64 {
    (link / 1000).max(2 * MTU_FRAME_BYTES)
}

/// The guaranteed minimum of a level and of best effort: 0.1 % of the link [bytes/s].
fn guaranteed_minimum(link: u64) -> u64 {
    (link / 1000).max(125)
}

/// HTB's default quantum (rate / r2q, r2q = 10), kept inside the range it accepts silently.
fn quantum(rate: u64) -> u32 {
    (rate / 10).clamp(MTU_FRAME_BYTES, 200_000) as u32
}

/// The HTB prio of a priority level inside its qdisc.
fn htb_prio(priority: u32) -> u8 {
    (priority % LEVELS_PER_QDISC) as u8
}

#[allow(clippy::too_many_arguments)]
fn class(
    id: ClassId,
    parent: Option<ClassId>,
    rate: u64,
    ceil: u64,
    burst: u64,
    cburst: u64,
    prio: u8,
    role: ClassRole,
) -> Class {
    Class {
        id,
        parent,
        rate_bytes_per_s: rate,
        ceil_bytes_per_s: ceil,
        burst_bytes: burst,
        cburst_bytes: cburst,
        prio,
        quantum_bytes: quantum(rate),
        serves: Some(role),
    }
}

fn htb(handle: u16, parent: QdiscParent, default_minor: u16, role: QdiscRole) -> Qdisc {
    Qdisc {
        handle,
        parent,
        kind: "htb".into(),
        default_minor,
        serves: Some(role),
    }
}

/// The state of one interface.
fn build(
    iface: &Interface,
    flows: &[&FlowSpec],
    switch_levels: Option<&BTreeSet<u32>>,
    excess: Excess,
    prior: &Allocation,
) -> Result<InterfacePlan, Exhausted> {
    let link = whole(iface.link_bytes_per_s);
    let lb = link_burst(link);
    let min = guaranteed_minimum(link);
    let min_burst = 2 * MTU_FRAME_BYTES;
    let mut st = TcState::default();
    let link_class = ClassId::new(1, 1);
    st.qdiscs
        .push(htb(1, QdiscParent::Root, 1, QdiscRole::Link));
    st.classes.push(class(
        link_class,
        None,
        link,
        link,
        lb,
        lb,
        0,
        ClassRole::Link,
    ));
    let switch = switch_levels.is_some();
    let priorities: BTreeSet<u32> = match switch_levels {
        Some(levels) => levels.clone(),
        None => flows.iter().map(|f| f.priority).collect(),
    };
    let mut alloc = Allocator::new(prior);
    let Some(&deepest) = priorities.last() else {
        return Ok(InterfacePlan {
            interface: iface.name.clone(),
            link_bytes_per_s: link,
            state: st,
            allocation: alloc.finish(),
        });
    };
    let max_depth = deepest / LEVELS_PER_QDISC;
    let mut majors = Vec::new();
    let mut containers = Vec::new();
    let mut levels: BTreeMap<u32, ClassId> = BTreeMap::new();
    let mut parent = link_class;
    for depth in 0..=max_depth {
        let major = alloc.qdisc(ObjectKey::LevelsQdisc { depth }, parent)?;
        st.qdiscs.push(htb(
            major,
            QdiscParent::Class(parent),
            2,
            QdiscRole::Levels { depth },
        ));
        let root = ClassId::new(major, 1);
        st.classes.push(class(
            root,
            None,
            link,
            link,
            lb,
            lb,
            0,
            ClassRole::Root { depth },
        ));
        st.classes.push(class(
            ClassId::new(major, 2),
            Some(root),
            min,
            link,
            min_burst,
            lb,
            7,
            ClassRole::BestEffort { depth },
        ));
        for &p in priorities
            .iter()
            .filter(|&&p| p / LEVELS_PER_QDISC == depth)
        {
            let id = alloc.class(ObjectKey::LevelClass { priority: p }, major, root)?;
            let role = ClassRole::Level { priority: p };
            st.classes.push(if switch {
                // a leaf: everything marked with the level goes at its prio
                class(id, Some(root), link, link, lb, lb, htb_prio(p), role)
            } else {
                class(id, Some(root), min, link, min_burst, lb, htb_prio(p), role)
            });
            levels.insert(p, id);
        }
        if depth < max_depth {
            let next = depth + 1;
            let id = alloc.class(ObjectKey::Container { depth: next }, major, root)?;
            st.classes.push(class(
                id,
                Some(root),
                link,
                link,
                lb,
                lb,
                7,
                ClassRole::Container { depth: next },
            ));
            containers.push(id);
            parent = id;
        }
        majors.push(major);
    }
    let chain = Chain {
        majors: &majors,
        containers: &containers,
    };
    let mut sorted: Vec<&&FlowSpec> = flows.iter().collect();
    sorted.sort_by(|a, b| (&a.tenant, a.stage).cmp(&(&b.tenant, b.stage)));
    for f in sorted {
        let depth = f.priority / LEVELS_PER_QDISC;
        let major = majors[depth as usize];
        let level = levels[&f.priority];
        let mut buckets: Vec<(u64, u64)> = f
            .buckets
            .iter()
            .map(|&(r, b)| (whole(r), whole(b)))
            .collect();
        // the leaf holds the long-term bucket (the one excess borrows beyond)
        buckets.sort();
        let n = buckets.len().max(1);
        let role = |bucket| ClassRole::Flow {
            tenant: f.tenant.clone(),
            stage: f.stage,
            flow: f.flow.clone(),
            priority: f.priority,
            bucket,
            buckets: n,
        };
        let key = |bucket| ObjectKey::FlowClass {
            tenant: f.tenant.clone(),
            stage: f.stage,
            bucket,
        };
        let leaf = alloc.class(key(0), major, level)?;
        let prio = htb_prio(f.priority);
        st.classes.push(match buckets.first() {
            None => class(leaf, Some(level), link, link, lb, lb, prio, role(0)),
            Some(&(r, b)) if excess == Excess::Wait => {
                class(leaf, Some(level), r, r, b, b, prio, role(0))
            }
            Some(&(r, b)) => class(leaf, Some(level), r, link, b, lb, prio, role(0)),
        });
        let mut holder = leaf;
        for (k, &(r, b)) in buckets.iter().enumerate().skip(1) {
            let q = alloc.qdisc(
                ObjectKey::BucketQdisc {
                    tenant: f.tenant.clone(),
                    stage: f.stage,
                    bucket: k,
                },
                holder,
            )?;
            st.qdiscs.push(htb(
                q,
                QdiscParent::Class(holder),
                1,
                QdiscRole::Bucket {
                    tenant: f.tenant.clone(),
                    stage: f.stage,
                    bucket: k,
                },
            ));
            holder = ClassId::new(q, 1);
            st.classes.push(class(holder, None, r, r, b, b, 0, role(k)));
        }
        let serves = FilterRole::Flow {
            tenant: f.tenant.clone(),
            stage: f.stage,
            flow: f.flow.clone(),
            priority: f.priority,
        };
        let key = |d| ObjectKey::FlowFilter {
            tenant: f.tenant.clone(),
            stage: f.stage,
            depth: d,
        };
        chain.filters(&mut alloc, &mut st, depth, leaf, &f.matches, &serves, key)?;
    }
    if switch {
        for &p in &priorities {
            let depth = p / LEVELS_PER_QDISC;
            let matches = FlowMatch {
                dscp: dscp_for_priority(p),
                ..FlowMatch::default()
            };
            let key = |d| ObjectKey::LevelFilter {
                priority: p,
                depth: d,
            };
            let serves = FilterRole::Level { priority: p };
            chain.filters(
                &mut alloc, &mut st, depth, levels[&p], &matches, &serves, key,
            )?;
        }
    }
    Ok(InterfacePlan {
        interface: iface.name.clone(),
        link_bytes_per_s: link,
        state: st,
        allocation: alloc.finish(),
    })
}

/// The qdisc of each depth and the container that leads from each depth to the next.
struct Chain<'a> {
    majors: &'a [u16],
    containers: &'a [ClassId],
}

impl Chain<'_> {
    /// The filters that send `matches` from the top qdisc down to `target` at `depth`: at each
    /// shallower depth toward that depth's container.
    #[allow(clippy::too_many_arguments)]
    fn filters(
        &self,
        alloc: &mut Allocator<'_>,
        st: &mut TcState,
        depth: u32,
        target: ClassId,
        matches: &FlowMatch,
        serves: &FilterRole,
        key: impl Fn(u32) -> ObjectKey,
    ) -> Result<(), Exhausted> {
        for d in 0..=depth {
            let at = self.majors[d as usize];
            let node = alloc.filter(key(d), at)?;
            st.filters.push(Filter {
                qdisc: at,
                pref: FILTER_PREF,
                handle: FilterHandle::node_only(node),
                flowid: if d < depth {
                    self.containers[d as usize]
                } else {
                    target
                },
                keys: matches.keys(),
                matches: Some(matches.clone()),
                serves: Some(serves.clone()),
            });
        }
        Ok(())
    }
}
