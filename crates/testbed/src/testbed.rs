//! A testbed that is up: the namespaces and links of a [`Topology`], a memcached per server
//! host with every value a replay needs, the aggressor's sink, and the replay on top.
//!
//! [`Testbed::up`] builds it in that order (links shaped, and the decisions enforced, by the
//! enforcer: [`crate::enforce`]); an error at any step drops what was built (servers stopped,
//! namespaces deleted). Dropping a [`Testbed`] tears it down; [`Testbed::keep`]
//! leaves a persistent one running for `tailbound testbed down`. Servers reflect the TOS of
//! a connection's first packet in their replies (`net.ipv4.tcp_reflect_tos`), so a tenant's
//! responses carry its priority as its requests do.

use crate::enforce;
use crate::memcached::{self, ProcessId};
use crate::schedule::Schedule;
use crate::topology::{AggressorKind, Topology};
use crate::TestbedError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailbound_dataplane::blast::{self, BlastProtocol, BlastSpec, Sink};
use tailbound_dataplane::memcache::Memcached;
use tailbound_dataplane::netns::{self, HostSpec, Lan, LanSpec};
use tailbound_dataplane::probe::Control;
use tailbound_dataplane::replay::{
    self, HostReplay, ReplayOptions, TenantOutcome, TenantReplay, MAX_VALUE_BYTES,
};

/// How a testbed is built.
#[derive(Debug, Clone, PartialEq)]
pub struct TestbedOptions {
    /// apply the decisions (priorities, rate limits) on every host and switch port; without
    /// it the links are only shaped to their rates
    pub enforce: bool,
    /// the memcached executable
    pub memcached: PathBuf,
    /// a persistent testbed of this name (`tailbound testbed up`): its servers are detached
    pub persistent: Option<String>,
    /// the nice value of the servers and of the replay's clients (see [`NICE`]); `None`:
    /// inherited
    pub nice: Option<i32>,
}

/// The nice value a testbed gives its clients and servers by default: above the rest of a
/// shared machine (builds, other tests), which would otherwise delay the sends and replies of
/// hosts that stand in for dedicated machines.
pub const NICE: i32 = -10;

/// The nice value of the aggressor's threads (its sender and its sink, and the threads they
/// start): the lowest. On a cluster the aggressor is a machine of its own; on one machine its
/// CPU work — its system calls and the kernel's per-packet work done in them, about a quarter
/// of a core for a UDP blast at 200 Mbit/s on a 2-core machine — came out of the hosts'
/// clients and servers and delayed every tenant's sends by up to 0.65 s, enforced or not: an
/// artefact of the testbed, not contention in the network. At the lowest priority it uses the
/// CPU the hosts leave; the report says how much it sent.
pub const AGGRESSOR_NICE: i32 = 19;

/// This process's session (its scheduler autogroup) at a nice value while the guard lives, at
/// its previous one afterwards. With `kernel.sched_autogroup_enabled` (the default of most
/// distributions) Linux shares the CPU between sessions first and applies a thread's nice value
/// only among its own session's threads: clients and servers at [`NICE`] got no more of a
/// machine than each session building beside them (a nice −10 thread woke up to 1.2 s late at
/// load 14). Memcached, started by this process, is in the same session.
#[derive(Debug)]
pub struct SessionNice {
    previous: Option<i32>,
}

/// Where Linux shows and takes a session's nice value.
const AUTOGROUP: &str = "/proc/self/autogroup";

impl SessionNice {
    /// Sets the session's nice value to `nice` (root may raise it); warns and changes nothing
    /// when it cannot.
    pub fn set(nice: i32) -> SessionNice {
        let previous = session_nice();
        if previous.is_some() {
            if let Err(e) = std::fs::write(AUTOGROUP, nice.to_string()) {
                tracing::warn!(nice, error = %e, "cannot change the session's priority (autogroup)");
                return SessionNice { previous: None };
            }
        }
        SessionNice { previous }
    }
}

impl Drop for SessionNice {
    fn drop(&mut self) {
        if let Some(nice) = self.previous {
            let _ = std::fs::write(AUTOGROUP, nice.to_string());
        }
    }
}

/// This process's session's nice value (`/proc/self/autogroup`: `/autogroup-N nice V`);
/// `None` without autogroups.
pub fn session_nice() -> Option<i32> {
    std::fs::read_to_string(AUTOGROUP)
        .ok()?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

/// The calling thread's nice value (`/proc/thread-self/stat`, field 19); `None` where Linux
/// does not show it.
pub fn thread_nice() -> Option<i32> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let (_, fields) = stat.rsplit_once(") ")?;
    fields.split_whitespace().nth(16)?.parse().ok()
}

/// Runs `f` on a thread of its own at [`AGGRESSOR_NICE`]; the threads `f` starts inherit that
/// priority (Linux: a new thread starts with its creator's nice value).
pub fn as_aggressor<T: Send>(
    f: impl FnOnce() -> Result<T, TestbedError> + Send,
) -> Result<T, TestbedError> {
    let thread = |e| TestbedError::Replay(tailbound_dataplane::ReplayError::Thread(e));
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("aggressor".into())
            .spawn_scoped(scope, || {
                lower_to_aggressor();
                f()
            })
            .map_err(thread)?
            .join()
            .map_err(|_| TestbedError::Replay(tailbound_dataplane::ReplayError::Panicked))?
    })
}

/// Lowers the calling thread to [`AGGRESSOR_NICE`] (always allowed; it cannot be undone without
/// privileges, so only on threads of the aggressor's own).
pub fn lower_to_aggressor() {
    if let Err(e) = replay::set_nice(0, AGGRESSOR_NICE) {
        tracing::warn!(nice = AGGRESSOR_NICE, error = %e, "cannot lower the aggressor's priority");
    }
}

impl Default for TestbedOptions {
    fn default() -> Self {
        TestbedOptions {
            enforce: true,
            memcached: PathBuf::from("memcached"),
            persistent: None,
            nice: Some(NICE),
        }
    }
}

/// How long storing one value may take while preloading.
const PRELOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// What a replay on the testbed measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// per tenant of the topology, in its order
    pub tenants: Vec<TenantOutcome>,
    /// the replay's span [s of real time]
    pub wall_s: f64,
    /// CPU time of this process (the clients) and of every memcached over the replay [s]
    pub client_cpu_s: f64,
    pub server_cpu_s: f64,
    /// payload bytes the aggressor sent (or, for `memcached`, read)
    pub aggressor_bytes: u64,
    /// per host of the topology, what its kernel did over the replay
    pub hosts: Vec<HostCounters>,
}

/// What one host's kernel counted over a replay: why a testbed latency can exceed the
/// simulator's (which neither drops nor retransmits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct HostCounters {
    /// TCP segments its stack retransmitted
    pub retransmits: u64,
    /// packets dropped by the shaper of its link's out direction (its interface) and in
    /// direction (its switch port)
    pub drops_out: u64,
    pub drops_in: u64,
}

impl HostCounters {
    fn since(self, before: HostCounters) -> HostCounters {
        HostCounters {
            retransmits: self.retransmits.saturating_sub(before.retransmits),
            drops_out: self.drops_out.saturating_sub(before.drops_out),
            drops_in: self.drops_in.saturating_sub(before.drops_in),
        }
    }
}

/// A testbed that is up; see the module docs.
#[derive(Debug)]
pub struct Testbed {
    topology: Topology,
    servers: Vec<(usize, Memcached)>,
    sink: Option<Sink>,
    enforced: bool,
    records: Records,
    // dropped last: the namespaces go after the processes in them
    lan: Lan,
}

/// The enforcer's records of a testbed, removed with it.
#[derive(Debug)]
struct Records(PathBuf);

impl Records {
    /// Keeps the directory (a persistent testbed's; `down` removes it).
    fn keep(mut self) {
        self.0 = PathBuf::new();
    }
}

impl Drop for Records {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Testbed {
    /// Builds `topology`: namespaces, shaped links, enforcement, servers holding the values of
    /// `sizes` (per server host: the distinct value sizes its tenants use), the aggressor's
    /// sink.
    pub fn up(
        topology: &Topology,
        sizes: &[(usize, Vec<u32>)],
        opts: &TestbedOptions,
    ) -> Result<Testbed, TestbedError> {
        memcached::check_binary(&opts.memcached)?;
        if !netns::is_root() {
            return Err(TestbedError::Netns(
                tailbound_dataplane::NetnsError::NotRoot,
            ));
        }
        let lan = Lan::create(&LanSpec {
            hosts: topology
                .hosts
                .iter()
                .enumerate()
                .map(|(h, host)| HostSpec {
                    label: host.label.clone(),
                    // shaped by the enforcer below
                    rate_bytes_per_s: None,
                    extra: topology.tenants_on(h).map(|t| t.address).collect(),
                })
                .collect(),
            bridge: true,
            mtu_packets: true,
            persistent: opts.persistent.clone(),
        })?;
        let names: Vec<String> = lan.hosts().iter().map(|h| h.ns.clone()).collect();
        let ns = |h: usize| names[h].clone();
        for (h, host) in topology.hosts.iter().enumerate() {
            if host.server {
                reflect_tos(&ns(h));
            }
        }
        enforce::remove_stale_records();
        let records = enforce::records_dir(lan.switch_ns().unwrap_or("none"));
        let mut bed = Testbed {
            topology: topology.clone(),
            servers: Vec::new(),
            sink: None,
            enforced: opts.enforce,
            records: Records(records.clone()),
            lan,
        };
        enforce::apply(&bed.lan, topology, opts.enforce)?;
        for (h, host) in topology.hosts.iter().enumerate() {
            if !host.server {
                continue;
            }
            let values = sizes
                .iter()
                .find(|(s, _)| *s == h)
                .map_or(&[][..], |(_, v)| v.as_slice());
            let bytes = values.iter().map(|&s| u64::from(s)).sum();
            let addr = SocketAddr::new(host.ip.into(), topology.port);
            let server = memcached::start(
                &ns(h),
                &host.name,
                addr,
                memcached::memory_mib(bytes, values.len()),
                &opts.memcached,
                opts.persistent.is_some(),
            )?;
            if let Some(nice) = opts.nice {
                memcached::renice(server.pid(), nice);
            }
            bed.servers.push((h, server));
            replay::preload(Some(&ns(h)), addr, values, PRELOAD_TIMEOUT)?;
        }
        if let Some(a) = &topology.aggressor {
            let protocol = match a.kind {
                AggressorKind::Udp => Some(BlastProtocol::Udp),
                AggressorKind::Tcp => Some(BlastProtocol::Tcp),
                AggressorKind::Memcached => None,
            };
            if let Some(p) = protocol {
                let target = &topology.hosts[a.target];
                let sink_ns = ns(a.target);
                bed.sink = Some(as_aggressor(|| {
                    Ok(Sink::start(
                        Some(&sink_ns),
                        SocketAddr::new(target.ip.into(), 0),
                        p,
                    )?)
                })?);
            } else {
                // the aggressor reads the largest value; make sure it is stored
                let (_, server) = bed
                    .servers
                    .iter()
                    .find(|(h, _)| *h == a.target)
                    .ok_or_else(|| {
                        TestbedError::Input("the aggressor's target runs no server".into())
                    })?;
                replay::preload(
                    Some(&ns(a.target)),
                    server.addr(),
                    &[MAX_VALUE_BYTES],
                    PRELOAD_TIMEOUT,
                )?;
            }
        }
        Ok(bed)
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn lan(&self) -> &Lan {
        &self.lan
    }

    /// The enforcer's records directory.
    pub fn records_dir(&self) -> &std::path::Path {
        &self.records.0
    }

    /// Whether the decisions are enforced (not just the links shaped).
    pub fn enforced(&self) -> bool {
        self.enforced
    }

    /// The memcached processes, by server host.
    pub fn servers(&self) -> Vec<(usize, ProcessId)> {
        self.servers
            .iter()
            .filter_map(|(h, s)| ProcessId::of(s.pid()).map(|p| (*h, p)))
            .collect()
    }

    /// Replays `schedule` (built on this testbed's topology) with the aggressor, if any,
    /// running from before the first request until the last completes.
    pub fn replay(
        &self,
        schedule: &Schedule,
        opts: &ReplayOptions,
        ctl: &Arc<Control>,
    ) -> Result<Measured, TestbedError> {
        let topo = &self.topology;
        let mut order = Vec::with_capacity(topo.tenants.len());
        let mut hosts = Vec::new();
        for h in 0..topo.hosts.len() {
            let mut tenants = Vec::new();
            for (k, t) in topo
                .tenants
                .iter()
                .enumerate()
                .filter(|(_, t)| t.client == h)
            {
                order.push(k);
                tenants.push(TenantReplay {
                    name: t.name.clone(),
                    server: t.server_addr,
                    source: Some(t.address),
                    tos: t.tos,
                    requests: schedule.tenants[k].clone(),
                });
            }
            if !tenants.is_empty() {
                hosts.push(HostReplay {
                    netns: Some(self.lan.hosts()[h].ns.clone()),
                    tenants,
                });
            }
        }
        let ids = self.servers();
        let servers_cpu = || ids.iter().map(|(_, p)| p.cpu_seconds()).sum::<f64>();
        let cpu0 = servers_cpu();
        let counters0 = self.counters();
        // the hosts' priority holds against other sessions only if their session has it too
        let _session = opts.nice.map(SessionNice::set);
        let stop_aggressor = Arc::new(Control::new());
        // the aggressor stops by itself at the latest when every request has timed out
        let until = Instant::now()
            + opts.lead_in
            + Duration::from_secs_f64(schedule.replay_s(topo.scale))
            + opts.timeout
            + Duration::from_secs(1);
        let outcome = std::thread::scope(|scope| {
            let aggressor = self.topology.aggressor.as_ref().map(|_| {
                scope.spawn(|| {
                    lower_to_aggressor();
                    self.aggress(until, &stop_aggressor)
                })
            });
            let outcome = replay::run(hosts, opts, ctl);
            stop_aggressor.stop();
            let sent = match aggressor.map(|h| h.join()) {
                None => Ok(0),
                Some(Ok(r)) => r,
                Some(Err(_)) => Err(TestbedError::Replay(
                    tailbound_dataplane::ReplayError::Panicked,
                )),
            };
            (outcome, sent)
        });
        let (outcome, aggressor_bytes) = (outcome.0?, outcome.1?);
        let mut tenants: Vec<Option<TenantOutcome>> = vec![None; topo.tenants.len()];
        for (k, t) in order.into_iter().zip(outcome.tenants) {
            tenants[k] = Some(t);
        }
        Ok(Measured {
            tenants: tenants.into_iter().flatten().collect(),
            wall_s: outcome.wall_s,
            client_cpu_s: outcome.cpu_s,
            server_cpu_s: servers_cpu() - cpu0,
            aggressor_bytes,
            hosts: self
                .counters()
                .into_iter()
                .zip(counters0)
                .map(|(after, before)| after.since(before))
                .collect(),
        })
    }

    /// Every host's kernel counters now.
    fn counters(&self) -> Vec<HostCounters> {
        let sw = self.lan.switch_ns();
        self.lan
            .hosts()
            .iter()
            .map(|h| HostCounters {
                retransmits: retransmits(&h.ns),
                drops_out: root_drops(&h.ns, &h.iface),
                drops_in: match (sw, &h.port) {
                    (Some(sw), Some(port)) => root_drops(sw, port),
                    _ => 0,
                },
            })
            .collect()
    }

    /// Runs the aggressor until `until` or a stop; returns its bytes.
    fn aggress(&self, until: Instant, ctl: &Arc<Control>) -> Result<u64, TestbedError> {
        let Some(a) = &self.topology.aggressor else {
            return Ok(0);
        };
        let host = &self.lan.hosts()[a.host];
        let rate = self.topology.hosts[a.host].rate_bytes_per_s;
        let ns = Some(host.ns.clone());
        let bytes = match (a.kind, &self.sink) {
            (AggressorKind::Memcached, _) => {
                let server =
                    SocketAddr::new(self.topology.hosts[a.target].ip.into(), self.topology.port);
                let gets = replay::closed_loop_gets(
                    ns.as_deref(),
                    server,
                    None,
                    AGGRESSOR_OUTSTANDING,
                    MAX_VALUE_BYTES,
                    until,
                    ctl,
                )?;
                gets * u64::from(MAX_VALUE_BYTES)
            }
            (kind, Some(sink)) => blast::blast(
                &BlastSpec {
                    protocol: if kind == AggressorKind::Udp {
                        BlastProtocol::Udp
                    } else {
                        BlastProtocol::Tcp
                    },
                    netns: ns,
                    source: None,
                    target: sink.addr(),
                    rate_bytes_per_s: rate,
                    tos: 0,
                },
                until,
                ctl,
            )?,
            (_, None) => 0,
        };
        Ok(bytes)
    }

    /// Leaves the testbed up (a persistent one) and returns its servers' processes.
    pub fn keep(mut self) -> Vec<(usize, ProcessId)> {
        let servers = self.servers();
        for (_, s) in std::mem::take(&mut self.servers) {
            s.detach();
        }
        if let Some(sink) = self.sink.take() {
            // a sink is a thread of this process; nothing of it outlives the process
            drop(sink);
        }
        let Testbed { lan, records, .. } = self;
        records.keep();
        lan.keep();
        servers
    }
}

/// Requests the `memcached` aggressor keeps outstanding.
pub const AGGRESSOR_OUTSTANDING: usize = 64;

/// Sets `net.ipv4.tcp_reflect_tos` in namespace `ns` (a thread enters it; /proc/sys/net is
/// the opener's namespace's). Without it (old kernels) replies carry TOS 0; say so.
fn reflect_tos(ns: &str) {
    let ns = ns.to_string();
    let done = std::thread::spawn(move || -> std::io::Result<()> {
        netns::enter(&ns).map_err(std::io::Error::other)?;
        std::fs::write("/proc/sys/net/ipv4/tcp_reflect_tos", "1")
    })
    .join();
    if !matches!(done, Ok(Ok(()))) {
        tracing::warn!("cannot set net.ipv4.tcp_reflect_tos; memcached's replies carry TOS 0");
    }
}

/// TCP segments retransmitted in namespace `ns` so far (`RetransSegs` of its
/// `/proc/thread-self/net/snmp`, read by a thread inside the namespace); 0 when unreadable.
fn retransmits(ns: &str) -> u64 {
    let ns = ns.to_string();
    let snmp = std::thread::spawn(move || -> Option<String> {
        netns::enter(&ns).ok()?;
        std::fs::read_to_string("/proc/thread-self/net/snmp").ok()
    })
    .join()
    .ok()
    .flatten()
    .unwrap_or_default();
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (Some(names), Some(values)) = (tcp.next(), tcp.next()) else {
        return 0;
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "RetransSegs")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// Packets the root qdisc of `dev` in namespace `ns` dropped so far (its children's drops
/// included); 0 when unreadable.
fn root_drops(ns: &str, dev: &str) -> u64 {
    let Ok(out) = std::process::Command::new("tc")
        .args(["-n", ns, "-s", "qdisc", "show", "dev", dev])
        .output()
    else {
        return 0;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text
        .lines()
        .skip_while(|l| !(l.starts_with("qdisc") && l.contains(" root ")));
    lines
        .find_map(|l| {
            l.split_once("(dropped ")
                .and_then(|(_, rest)| rest.split(',').next()?.trim().parse().ok())
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nice() -> i32 {
        thread_nice().expect("Linux shows a thread's nice value")
    }

    #[test]
    fn the_aggressor_and_the_threads_it_starts_run_at_the_lowest_priority() {
        let before = nice();
        let (own, started) = as_aggressor(|| {
            let started = std::thread::spawn(nice).join().unwrap();
            Ok((nice(), started))
        })
        .unwrap();
        assert_eq!((own, started), (AGGRESSOR_NICE, AGGRESSOR_NICE));
        const { assert!(AGGRESSOR_NICE > NICE) };
        assert_eq!(nice(), before, "the caller keeps its priority");
        let e =
            as_aggressor(|| -> Result<(), TestbedError> { Err(TestbedError::Input("x".into())) });
        assert!(matches!(e, Err(TestbedError::Input(_))));
    }
}
