//! Hosts on one machine: Linux network namespaces joined by veth pairs, through a bridge in a
//! "switch" namespace (any number of hosts, [`Lan`]) or directly (two hosts), optionally with
//! HTB-shaped links. [`TwoHosts`] is the probe's two-host case of the same builder.
//!
//! Threads enter a namespace with [`enter`] (`setns(2)` applies per thread); a socket keeps the
//! namespace it was created in, so a thread that enters a host's namespace and then opens
//! sockets talks as that host while nothing else in the process changes.
//!
//! # Addresses and interfaces
//!
//! Every host has one interface, `tb0` ([`HOST_IFACE`]), with address [`host_ip`]`(i)` in
//! `10.199.0.0/16`; callers may add more addresses per host from [`extra_ip`] (one per tenant
//! VM, so that a tenant's traffic is recognised by its address). With a bridge, host `i`'s
//! veth peer is port `p<i>` ([`switch_port`]) of bridge `br0` in the switch namespace. With
//! a rate, HTB shapes each host's `tb0` egress (its link's out direction) and each switch port's
//! egress (the host's in direction) at that rate: an HTB root with one class, which is what
//! a tc plan with no tenants is ([`shape_link`]). Packets can be limited to one MTU each
//! ([`LanSpec::mtu_packets`]: no segmentation offload), so that priorities act between
//! packets as they would on a wire.
//!
//! # Clean-up
//!
//! A [`Lan`] deletes its namespaces when dropped (veth pairs and the bridge go with them),
//! after killing any process still inside them (`ip netns pids`). Namespace names carry the
//! tailbound prefix and the creating process id (`tailbound-<pid>-<n>-<label>`); creating hosts
//! first deletes namespaces left by processes that no longer exist (a run killed with SIGKILL),
//! with whatever still runs in them, and the first creation installs a SIGINT/SIGTERM/SIGHUP
//! handler that deletes the live namespaces before the process dies with the signal's default
//! action. A persistent LAN ([`LanSpec::persistent`], `tailbound testbed up`) is named
//! `tailbound-up-<name>-<label>` instead, outlives its process once [`Lan::keep`] is called, and is
//! removed by [`delete_persistent`]. Only `ip` and `tc` commands are run, each waited for and
//! checked.
//!
//! Limits: IPv4 only; addresses are private and exist only inside the namespaces created here.
//! Needs root and iproute2. The tc configuration of tenants (priorities, per-tenant classes)
//! is a separate concern and does not live here.

use crate::error::NetnsError;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Prefix of every namespace tailbound creates.
pub const PREFIX: &str = "tailbound-";
/// Prefix of a persistent LAN's namespaces (`tailbound testbed up`).
pub const PERSISTENT_PREFIX: &str = "tailbound-up-";

/// Where `ip netns` keeps its named namespaces.
const NETNS_DIR: &str = "/var/run/netns";

/// Each host's interface toward the switch (or the other host).
pub const HOST_IFACE: &str = "tb0";
/// The bridge in the switch namespace.
const BRIDGE: &str = "br0";

/// The most hosts one LAN holds (host addresses `10.199.0.1` .. `10.199.0.250`).
pub const MAX_HOSTS: usize = 250;
/// The most extra addresses ([`extra_ip`]) one LAN hands out.
pub const MAX_EXTRA: usize = 254 * 255;

/// The server's address inside its namespace (host 0 of [`TwoHosts`]).
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 1);
/// The client's address inside its namespace (host 1 of [`TwoHosts`]).
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 2);

/// Prefix length of the LAN's subnet `10.199.0.0/16`.
const PREFIX_LEN: u8 = 16;

/// Namespaces alive in this process, deleted by the signal handler.
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SEQ: AtomicU32 = AtomicU32::new(0);
static SIGNALS: OnceLock<()> = OnceLock::new();
/// Held while namespaces are being created, so the signal handler sees all of them.
static BUILDING: Mutex<()> = Mutex::new(());

/// Address of host `i` (0-based, below [`MAX_HOSTS`]): `10.199.0.(i+1)`.
pub fn host_ip(i: usize) -> Option<Ipv4Addr> {
    (i < MAX_HOSTS).then(|| Ipv4Addr::new(10, 199, 0, i as u8 + 1))
}

/// The `k`-th extra address (0-based, below [`MAX_EXTRA`]): `10.199.(1 + k/254).(1 + k%254)`,
/// in the LAN's subnet but apart from every host address.
pub fn extra_ip(k: usize) -> Option<Ipv4Addr> {
    (k < MAX_EXTRA).then(|| Ipv4Addr::new(10, 199, (1 + k / 254) as u8, (1 + k % 254) as u8))
}

/// The switch's port toward host `i`.
pub fn switch_port(i: usize) -> String {
    format!("p{i}")
}

/// How the two hosts of [`TwoHosts`] are joined.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct LinkOptions {
    /// put a bridge ("switch") in a third namespace between the hosts
    pub bridge: bool,
    /// shape each direction of the link with HTB at this rate [bytes/s]; `None` = unshaped
    pub rate_bytes_per_s: Option<f64>,
}

/// One host of a [`LanSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct HostSpec {
    /// the namespace's suffix: 1 to 12 lowercase letters, digits or `-` (e.g. `srv`, `h3`)
    pub label: String,
    /// HTB rate of the host's link, each way [bytes/s]; `None` = unshaped
    pub rate_bytes_per_s: Option<f64>,
    /// more addresses on the host's interface, from [`extra_ip`]
    pub extra: Vec<Ipv4Addr>,
}

/// What [`Lan::create`] builds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LanSpec {
    pub hosts: Vec<HostSpec>,
    /// join the hosts through a bridge in a switch namespace (required for more than two)
    pub bridge: bool,
    /// at most one MTU per packet (segmentation offload off), so that HTB's priorities act
    /// between packets as a switch's do
    pub mtu_packets: bool,
    /// a persistent LAN of this name (1 to 12 lowercase letters or digits): the namespaces are named
    /// `tailbound-up-<name>-<label>` (the switch `tailbound-up-<name>-sw`), outlive the process
    /// after [`Lan::keep`] and are removed by [`delete_persistent`]
    pub persistent: Option<String>,
}

/// One host of a built [`Lan`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LanHost {
    pub label: String,
    /// its network namespace
    pub ns: String,
    /// its primary address
    pub ip: Ipv4Addr,
    /// its interface ([`HOST_IFACE`])
    pub iface: String,
    /// the switch's port toward it (in the switch namespace), when there is a bridge
    pub port: Option<String>,
    /// its link rate [bytes/s], when shaped
    pub rate_bytes_per_s: Option<f64>,
    pub extra: Vec<Ipv4Addr>,
}

/// Network namespaces as hosts on one switch; deleted on drop unless kept.
#[derive(Debug)]
pub struct Lan {
    hosts: Vec<LanHost>,
    switch: Option<String>,
    /// delete the namespaces on drop
    owned: bool,
}

/// Checks root and a rate; shared by every builder.
fn check_rate(rate: Option<f64>) -> Result<(), NetnsError> {
    if let Some(rate) = rate {
        if !(rate.is_finite() && rate >= 125.0) {
            return Err(NetnsError::Rate {
                rate_bytes_per_s: rate,
            });
        }
    }
    Ok(())
}

/// Whether the calling process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Lan {
    /// Creates the namespaces, links, addresses, bridge and shaping of `spec`. Stale
    /// namespaces of dead tailbound processes are deleted first. On an error, whatever was
    /// built is deleted.
    pub fn create(spec: &LanSpec) -> Result<Lan, NetnsError> {
        if !is_root() {
            return Err(NetnsError::NotRoot);
        }
        if spec.hosts.is_empty() || spec.hosts.len() > MAX_HOSTS {
            return Err(NetnsError::Hosts {
                hosts: spec.hosts.len(),
                max: MAX_HOSTS,
            });
        }
        if !spec.bridge && spec.hosts.len() != 2 {
            return Err(NetnsError::Hosts {
                hosts: spec.hosts.len(),
                max: 2,
            });
        }
        let mut labels = std::collections::HashSet::new();
        for h in &spec.hosts {
            if !valid_label(&h.label) || h.label == "sw" || !labels.insert(h.label.as_str()) {
                return Err(NetnsError::Label(h.label.clone()));
            }
            check_rate(h.rate_bytes_per_s)?;
        }
        if let Some(name) = &spec.persistent {
            if !valid_label(name) || name.contains('-') {
                return Err(NetnsError::Label(name.clone()));
            }
        }
        install_signal_cleanup();
        let removed = cleanup_stale()?;
        if !removed.is_empty() {
            tracing::info!(?removed, "deleted namespaces of dead tailbound runs");
        }
        let base = if let Some(name) = &spec.persistent {
            let base = format!("{PERSISTENT_PREFIX}{name}");
            let existing = persistent_names(name);
            if !existing.is_empty() {
                return Err(NetnsError::Exists(existing));
            }
            base
        } else {
            let n = SEQ.fetch_add(1, Ordering::Relaxed);
            format!("{PREFIX}{}-{n}", std::process::id())
        };
        let hosts = spec
            .hosts
            .iter()
            .enumerate()
            .map(|(i, h)| LanHost {
                label: h.label.clone(),
                ns: format!("{base}-{}", h.label),
                ip: host_ip(i).unwrap_or(Ipv4Addr::UNSPECIFIED),
                iface: HOST_IFACE.to_string(),
                port: spec.bridge.then(|| switch_port(i)),
                rate_bytes_per_s: h.rate_bytes_per_s,
                extra: h.extra.clone(),
            })
            .collect();
        let mut lan = Lan {
            hosts,
            switch: spec.bridge.then(|| format!("{base}-sw")),
            owned: true,
        };
        // On failure the partly built LAN is dropped, which deletes what exists.
        let building = BUILDING.lock();
        lan.build(spec.mtu_packets)?;
        drop(building);
        Ok(lan)
    }

    fn build(&mut self, mtu_packets: bool) -> Result<(), NetnsError> {
        let names: Vec<String> = self.names().into_iter().map(String::from).collect();
        for name in &names {
            // Registered before it exists so a signal during creation still removes it.
            register(name);
            ip(&["netns", "add", name])?;
            ip(&["-n", name, "link", "set", "lo", "up"])?;
        }
        match &self.switch {
            None => {
                let (a, b) = (&self.hosts[0].ns, &self.hosts[1].ns);
                ip(&[
                    "link", "add", HOST_IFACE, "netns", a, "type", "veth", "peer", "name",
                    HOST_IFACE, "netns", b,
                ])?;
            }
            Some(sw) => {
                ip(&["-n", sw, "link", "add", BRIDGE, "type", "bridge"])?;
                ip(&["-n", sw, "link", "set", BRIDGE, "up"])?;
                for h in &self.hosts {
                    let port = h.port.as_deref().unwrap_or_default();
                    ip(&[
                        "link", "add", HOST_IFACE, "netns", &h.ns, "type", "veth", "peer", "name",
                        port, "netns", sw,
                    ])?;
                    ip(&["-n", sw, "link", "set", port, "master", BRIDGE])?;
                    if mtu_packets {
                        no_offload(sw, port)?;
                    }
                    ip(&["-n", sw, "link", "set", port, "up"])?;
                    if let Some(rate) = h.rate_bytes_per_s {
                        shape_link(sw, port, rate)?;
                    }
                }
            }
        }
        for h in &self.hosts {
            let addrs = std::iter::once(h.ip).chain(h.extra.iter().copied());
            for addr in addrs {
                ip(&[
                    "-n",
                    &h.ns,
                    "addr",
                    "add",
                    &format!("{addr}/{PREFIX_LEN}"),
                    "dev",
                    HOST_IFACE,
                ])?;
            }
            if mtu_packets {
                no_offload(&h.ns, HOST_IFACE)?;
            }
            ip(&["-n", &h.ns, "link", "set", HOST_IFACE, "up"])?;
            if let Some(rate) = h.rate_bytes_per_s {
                shape_link(&h.ns, HOST_IFACE, rate)?;
            }
        }
        Ok(())
    }

    pub fn hosts(&self) -> &[LanHost] {
        &self.hosts
    }

    /// Name of the switch namespace, when there is a bridge.
    pub fn switch_ns(&self) -> Option<&str> {
        self.switch.as_deref()
    }

    /// Every namespace of the LAN: the hosts in order, then the switch.
    pub fn names(&self) -> Vec<&str> {
        self.hosts
            .iter()
            .map(|h| h.ns.as_str())
            .chain(self.switch.as_deref())
            .collect()
    }

    /// Leaves the namespaces in place when this value is dropped or the process ends (a
    /// persistent LAN that [`delete_persistent`] removes later).
    pub fn keep(mut self) {
        self.owned = false;
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|n| !self.names().contains(&n.as_str()));
        }
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let names: Vec<String> = self.names().into_iter().map(String::from).collect();
        for name in names {
            if let Err(e) = delete(&name) {
                tracing::warn!(ns = %name, error = %e, "cannot delete namespace");
            }
        }
    }
}

/// Two network namespaces joined by a veth pair, or through a bridge; deleted on drop.
#[derive(Debug)]
pub struct TwoHosts {
    lan: Lan,
    link: LinkOptions,
}

impl TwoHosts {
    /// Creates the namespaces, the link, the addresses and the optional bridge and shaping.
    /// Stale namespaces of dead tailbound processes are deleted first.
    pub fn create(link: LinkOptions) -> Result<TwoHosts, NetnsError> {
        if !is_root() {
            return Err(NetnsError::NotRoot);
        }
        check_rate(link.rate_bytes_per_s)?;
        let host = |label: &str| HostSpec {
            label: label.to_string(),
            rate_bytes_per_s: link.rate_bytes_per_s,
            extra: Vec::new(),
        };
        let lan = Lan::create(&LanSpec {
            hosts: vec![host("srv"), host("cli")],
            bridge: link.bridge,
            mtu_packets: false,
            persistent: None,
        })?;
        Ok(TwoHosts { lan, link })
    }

    /// Name of the server's namespace.
    pub fn server_ns(&self) -> &str {
        &self.lan.hosts[0].ns
    }
    /// Name of the client's namespace.
    pub fn client_ns(&self) -> &str {
        &self.lan.hosts[1].ns
    }
    /// Name of the switch namespace, when there is a bridge.
    pub fn switch_ns(&self) -> Option<&str> {
        self.lan.switch_ns()
    }
    /// The switch's port toward the server, when there is a bridge.
    pub fn server_port(&self) -> Option<&str> {
        self.lan.hosts[0].port.as_deref()
    }
    /// The server's address (reachable from the client's namespace).
    pub fn server_ip(&self) -> IpAddr {
        IpAddr::V4(SERVER_IP)
    }
    pub fn link(&self) -> LinkOptions {
        self.link
    }
    /// Every namespace of these hosts.
    pub fn names(&self) -> Vec<&str> {
        self.lan.names()
    }
}

/// Shapes the egress of interface `dev` in namespace `ns` to `rate_bytes_per_s`: an HTB root
/// whose one class carries everything. This is the link itself, what a tc plan without
/// tenants sets up; per-tenant classes under it are the enforcer's.
pub fn shape_link(ns: &str, dev: &str, rate_bytes_per_s: f64) -> Result<(), NetnsError> {
    check_rate(Some(rate_bytes_per_s))?;
    let rate = format!("{}bit", (rate_bytes_per_s * 8.0).round() as u64);
    // HTB warns when quantum = rate / r2q falls outside [1000, 200000] bytes; set it.
    let quantum = ((rate_bytes_per_s / 10.0) as u64)
        .clamp(1514, 200_000)
        .to_string();
    tc(&[
        "-n", ns, "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
    ])?;
    tc(&[
        "-n", ns, "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate",
        &rate, "ceil", &rate, "quantum", &quantum,
    ])
}

/// No segmentation offload on `dev`: every packet at most one MTU.
fn no_offload(ns: &str, dev: &str) -> Result<(), NetnsError> {
    ip(&["-n", ns, "link", "set", dev, "gso_max_size", "1500"])
}

/// Runs `ip` with `args` and checks its exit status.
fn ip(args: &[&str]) -> Result<(), NetnsError> {
    run("ip", args).map(drop)
}

fn tc(args: &[&str]) -> Result<(), NetnsError> {
    run("tc", args).map(drop)
}

/// Runs `program` with `args`, checks its exit status and returns its stdout.
fn run(program: &str, args: &[&str]) -> Result<String, NetnsError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| NetnsError::Spawn {
            program: program.to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(NetnsError::Command {
            command: format!("{program} {}", args.join(" ")),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn register(name: &str) {
    if let Ok(mut live) = LIVE.lock() {
        live.push(name.to_string());
    }
}

/// Process ids whose network namespace is the named one (`ip netns pids`), this process
/// excluded.
pub fn pids_in(name: &str) -> Vec<u32> {
    let me = std::process::id();
    run("ip", &["netns", "pids", name])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .filter(|&p| p != me)
                .collect()
        })
        .unwrap_or_default()
}

/// How long a process in a namespace being deleted gets to exit after SIGTERM.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// Ends the processes in namespace `name`: SIGTERM, then SIGKILL to those still alive after
/// [`TERM_GRACE`]. They can only be tailbound's (its namespaces hold nothing else).
fn kill_inside(name: &str) {
    let pids = pids_in(name);
    if pids.is_empty() {
        return;
    }
    tracing::info!(ns = %name, ?pids, "stopping processes left in the namespace");
    for &p in &pids {
        // SAFETY: kill has no memory preconditions; the pid is one ip listed in the namespace.
        unsafe { libc::kill(p as libc::pid_t, libc::SIGTERM) };
    }
    let deadline = Instant::now() + TERM_GRACE;
    let alive = |p: &u32| Path::new("/proc").join(p.to_string()).exists() && !zombie(*p);
    while pids.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for p in pids.iter().filter(|p| alive(p)) {
        // SAFETY: as above.
        unsafe { libc::kill(*p as libc::pid_t, libc::SIGKILL) };
    }
}

/// Whether process `pid` has exited and waits to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(|st| st == "Z"))
        })
        .unwrap_or(false)
}

/// Deletes a namespace (if it exists), after ending what runs in it, and forgets it.
fn delete(name: &str) -> Result<(), NetnsError> {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|n| n != name);
    }
    if !Path::new(NETNS_DIR).join(name).exists() {
        return Ok(());
    }
    kill_inside(name);
    ip(&["netns", "del", name])
}

/// The pid in a tailbound namespace name `tailbound-<pid>-...`.
fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Names of the tailbound namespaces that exist now.
pub fn list() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut names: Vec<String> = dir
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    names.sort();
    names
}

/// Deletes tailbound namespaces whose creating process no longer exists, and what still runs
/// in them; returns their names.
pub fn cleanup_stale() -> Result<Vec<String>, NetnsError> {
    delete_where(|name| {
        owner_pid(name).is_some_and(|pid| !Path::new("/proc").join(pid.to_string()).exists())
    })
}

/// The namespaces of persistent LAN `name` that exist now.
pub fn persistent_names(name: &str) -> Vec<String> {
    let prefix = format!("{PERSISTENT_PREFIX}{name}-");
    list()
        .into_iter()
        .filter(|n| persistent_of(n, &prefix))
        .collect()
}

/// Whether `ns` belongs to the persistent LAN whose names start with `prefix`
/// (`tailbound-up-<name>-`; names hold no `-`, so no LAN's prefix starts another's).
fn persistent_of(ns: &str, prefix: &str) -> bool {
    ns.starts_with(prefix)
}

/// Deletes persistent LAN `name`'s namespaces and what runs in them; returns their names.
pub fn delete_persistent(name: &str) -> Result<Vec<String>, NetnsError> {
    let prefix = format!("{PERSISTENT_PREFIX}{name}-");
    delete_where(|ns| persistent_of(ns, &prefix))
}

/// 1 to 12 lowercase letters, digits or `-`.
fn valid_label(label: &str) -> bool {
    (1..=12).contains(&label.len())
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn delete_where(doomed: impl Fn(&str) -> bool) -> Result<Vec<String>, NetnsError> {
    let mut removed = Vec::new();
    for name in list() {
        if !doomed(&name) {
            continue;
        }
        if let Err(e) = delete(&name) {
            // Another cleanup (a concurrent run or thread) may have removed it first.
            if list().contains(&name) {
                return Err(e);
            }
            continue;
        }
        removed.push(name);
    }
    Ok(removed)
}

/// Deletes every namespace this process created and has not deleted yet.
pub fn cleanup_live() {
    let names: Vec<String> = LIVE.lock().map(|l| l.clone()).unwrap_or_default();
    for name in names {
        let _ = delete(&name);
    }
}

/// On SIGINT, SIGTERM or SIGHUP: delete this process's namespaces (ending what runs in them),
/// then let the signal take its default action (the process ends as if there were no
/// handler). Installed once.
pub fn install_signal_cleanup() {
    SIGNALS.get_or_init(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot install the signal handler; an interrupted run may leave namespaces behind (the next run deletes them)");
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name("tailbound-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    tracing::warn!(signal = sig, "interrupted; deleting network namespaces");
                    // Wait for a creation in progress to finish, then delete everything.
                    let building = BUILDING.lock();
                    cleanup_live();
                    drop(building);
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the signal thread");
        }
    });
}

/// Path of a named namespace.
pub fn path(name: &str) -> PathBuf {
    Path::new(NETNS_DIR).join(name)
}

/// Moves the calling thread into the named network namespace (sockets it creates afterwards
/// live there). Other threads are not affected.
pub fn enter(name: &str) -> Result<(), NetnsError> {
    let err = |source| NetnsError::Enter {
        name: name.to_string(),
        source,
    };
    let file = std::fs::File::open(path(name)).map_err(err)?;
    // SAFETY: the fd is valid for the duration of the call; CLONE_NEWNET only changes the
    // calling thread's network namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        return Err(err(std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests below create namespaces and run `cleanup_stale`, which deletes every
    /// dead-pid namespace: run concurrently, one test's cleanup can remove another's fake
    /// stale namespace while `ip netns add` is still creating it. They take turns.
    static NETNS_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn netns_turn() -> std::sync::MutexGuard<'static, ()> {
        NETNS_TESTS.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn owner_pid_reads_the_prefix_and_pid() {
        assert_eq!(owner_pid("tailbound-1234-0-srv"), Some(1234));
        assert_eq!(owner_pid("tailbound-x-0-srv"), None);
        assert_eq!(owner_pid("other-1234-0-srv"), None);
    }

    #[test]
    fn stale_namespaces_of_dead_processes_are_removed_and_live_ones_kept() {
        let _turn = netns_turn();
        if !is_root() || Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        // A pid above pid_max can never be alive.
        let stale = format!("{PREFIX}99999999-0-srv");
        let live = format!("{PREFIX}{}-777-srv", std::process::id());
        ip(&["netns", "add", &stale]).unwrap();
        ip(&["netns", "add", &live]).unwrap();
        let removed = cleanup_stale().unwrap();
        let now = list();
        let _ = delete(&live);
        // A concurrent cleanup (TwoHosts::create in another test) may have removed it first.
        assert!(
            removed.contains(&stale) || !now.contains(&stale),
            "{removed:?}"
        );
        assert!(!now.contains(&stale));
        assert!(now.contains(&live));
    }

    #[test]
    fn concurrent_cleanups_do_not_fail_each_other() {
        let _turn = netns_turn();
        // regression: two cleanups racing for one stale namespace made the loser fail, and
        // with it TwoHosts::create
        if !is_root() || Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        for round in 0..5 {
            let stale = format!("{PREFIX}999999{round}-0-srv");
            ip(&["netns", "add", &stale]).unwrap();
            let racers: Vec<_> = (0..4).map(|_| std::thread::spawn(cleanup_stale)).collect();
            for r in racers {
                r.join().unwrap().unwrap();
            }
            assert!(!list().contains(&stale));
        }
    }

    #[test]
    fn two_hosts_with_bridge_and_shaping_are_built_and_removed() {
        let _turn = netns_turn();
        if !is_root() || Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        let hosts = TwoHosts::create(LinkOptions {
            bridge: true,
            rate_bytes_per_s: Some(125e6),
        })
        .unwrap();
        let names: Vec<String> = hosts.names().into_iter().map(String::from).collect();
        assert_eq!(names.len(), 3);
        assert!(names.iter().all(|n| path(n).exists()));
        drop(hosts);
        assert!(names.iter().all(|n| !path(n).exists()));
    }

    #[test]
    fn host_and_extra_addresses_never_collide() {
        assert_eq!(host_ip(0), Some(SERVER_IP));
        assert_eq!(host_ip(1), Some(CLIENT_IP));
        assert_eq!(host_ip(MAX_HOSTS - 1), Some(Ipv4Addr::new(10, 199, 0, 250)));
        assert_eq!(host_ip(MAX_HOSTS), None);
        assert_eq!(extra_ip(0), Some(Ipv4Addr::new(10, 199, 1, 1)));
        assert_eq!(extra_ip(254), Some(Ipv4Addr::new(10, 199, 2, 1)));
        assert_eq!(
            extra_ip(MAX_EXTRA - 1),
            Some(Ipv4Addr::new(10, 199, 255, 254))
        );
        assert_eq!(extra_ip(MAX_EXTRA), None);
    }

    #[test]
    fn bad_specs_are_refused_before_anything_is_built() {
        let host = |label: &str| HostSpec {
            label: label.into(),
            rate_bytes_per_s: None,
            extra: Vec::new(),
        };
        let spec = |hosts: Vec<HostSpec>, bridge: bool| LanSpec {
            hosts,
            bridge,
            ..LanSpec::default()
        };
        if !is_root() {
            assert!(matches!(
                Lan::create(&spec(vec![host("a"), host("b")], true)),
                Err(NetnsError::NotRoot)
            ));
            return;
        }
        let e = Lan::create(&spec(vec![host("a"), host("b"), host("c")], false)).unwrap_err();
        assert!(matches!(e, NetnsError::Hosts { hosts: 3, max: 2 }), "{e}");
        for bad in ["", "Upper", "sw", "a_b", "thirteen-char"] {
            let e = Lan::create(&spec(vec![host(bad), host("b")], true)).unwrap_err();
            assert!(matches!(e, NetnsError::Label(ref l) if l == bad), "{e}");
        }
        let e = Lan::create(&spec(vec![host("a"), host("a")], true)).unwrap_err();
        assert!(matches!(e, NetnsError::Label(_)), "{e}");
        let many: Vec<HostSpec> = (0..=MAX_HOSTS).map(|i| host(&format!("h{i}"))).collect();
        assert!(matches!(
            Lan::create(&spec(many, true)),
            Err(NetnsError::Hosts { .. })
        ));
    }

    #[test]
    fn a_lan_of_three_hosts_reaches_every_host_and_deletion_ends_processes_inside() {
        let _turn = netns_turn();
        if !is_root() || Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        let extra = extra_ip(7).unwrap();
        let lan = Lan::create(&LanSpec {
            hosts: (0..3)
                .map(|i| HostSpec {
                    label: format!("h{i}"),
                    rate_bytes_per_s: Some(12.5e6),
                    extra: if i == 2 { vec![extra] } else { Vec::new() },
                })
                .collect(),
            bridge: true,
            mtu_packets: true,
            persistent: None,
        })
        .unwrap();
        let names: Vec<String> = lan.names().into_iter().map(String::from).collect();
        assert_eq!(names.len(), 4);
        // every host's link and every switch port is shaped at the rate
        let sw = lan.switch_ns().unwrap().to_string();
        for h in lan.hosts() {
            for (ns, dev) in [
                (h.ns.as_str(), "tb0"),
                (sw.as_str(), h.port.as_deref().unwrap()),
            ] {
                let out = run("tc", &["-n", ns, "class", "show", "dev", dev]).unwrap();
                assert!(out.contains("rate 100Mbit"), "{ns} {dev}: {out}");
            }
        }
        // host 0 reaches host 2's primary and extra address through the bridge
        for target in [lan.hosts()[2].ip, extra] {
            let (server_ns, client_ns) = (lan.hosts()[2].ns.clone(), lan.hosts()[0].ns.clone());
            let listener = std::thread::spawn(move || {
                enter(&server_ns).unwrap();
                std::net::TcpListener::bind((target, 0)).unwrap()
            })
            .join()
            .unwrap();
            let addr = listener.local_addr().unwrap();
            std::thread::spawn(move || {
                enter(&client_ns).unwrap();
                std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(30)).unwrap()
            })
            .join()
            .unwrap();
            listener.accept().unwrap();
        }
        let addrs = run("ip", &["-n", &lan.hosts()[2].ns, "addr", "show", "tb0"]).unwrap();
        assert!(addrs.contains(&format!("{extra}/16")), "{addrs}");
        // a process left inside a host is ended when the LAN goes
        let child = Command::new("ip")
            .args(["netns", "exec", &lan.hosts()[1].ns, "sleep", "600"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pids_in(&lan.hosts()[1].ns).contains(&pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(pids_in(&lan.hosts()[1].ns).contains(&pid));
        drop(lan);
        let mut child = child;
        let status = child.wait().unwrap();
        assert!(!status.success(), "sleep was ended by a signal");
        assert!(names.iter().all(|n| !path(n).exists()));
    }

    #[test]
    fn a_persistent_lan_outlives_its_value_until_deleted() {
        let _turn = netns_turn();
        if !is_root() || Command::new("ip").arg("-V").output().is_err() {
            eprintln!("skipped: needs root and iproute2");
            return;
        }
        let spec = LanSpec {
            hosts: vec![
                HostSpec {
                    label: "tsta".into(),
                    rate_bytes_per_s: None,
                    extra: Vec::new(),
                },
                HostSpec {
                    label: "tstb".into(),
                    rate_bytes_per_s: None,
                    extra: Vec::new(),
                },
            ],
            bridge: true,
            mtu_packets: false,
            persistent: Some(format!("t{}", std::process::id())),
        };
        let name = spec.persistent.clone().unwrap();
        let lan = Lan::create(&spec).unwrap();
        let names: Vec<String> = lan.names().into_iter().map(String::from).collect();
        assert!(
            names.iter().all(|n| n.starts_with(PERSISTENT_PREFIX)),
            "{names:?}"
        );
        lan.keep();
        assert!(names.iter().all(|n| path(n).exists()));
        // a second one is refused while the first is up, and stale clean-up leaves it alone
        assert!(matches!(Lan::create(&spec), Err(NetnsError::Exists(_))));
        cleanup_stale().unwrap();
        assert!(names.iter().all(|n| path(n).exists()));
        assert_eq!(persistent_names(&name).len(), 3);
        let mut removed = delete_persistent(&name).unwrap();
        removed.sort();
        let mut expected = names.clone();
        expected.sort();
        assert_eq!(removed, expected);
        assert!(names.iter().all(|n| !path(n).exists()));
    }
}
