//! Two "hosts" on one machine: a pair of Linux network namespaces joined by a veth pair,
//! optionally through a bridge in a third "switch" namespace, optionally with an HTB-shaped
//! link rate.
//!
//! Threads enter a namespace with [`enter`] (`setns(2)` applies per thread); a socket keeps the
//! namespace it was created in, so the probe's server and client threads each enter their own
//! namespace first and nothing else in the process changes.
//!
//! Cleanup: [`TwoHosts`] deletes its namespaces when dropped (the veth pair and the bridge go
//! with them). Namespace names carry the tailbound prefix and the creating process id
//! (`tailbound-<pid>-<n>-srv`); creating new hosts first deletes namespaces left by processes
//! that no longer exist (a run killed with SIGKILL), and the first [`TwoHosts::create`]
//! installs a SIGINT/SIGTERM/SIGHUP handler that deletes the live namespaces before the process
//! dies with the signal's default action. No long-lived child processes are started: only
//! `ip` and `tc` commands, each waited for and checked.
//!
//! Limits: IPv4 only; addresses are private and exist only inside the namespaces created here
//! (`10.199.0.1` server, `10.199.0.2` client). Needs root and iproute2. The tc configuration of
//! tenants (priorities, per-tenant classes) is a separate concern and does not live here.

use crate::error::NetnsError;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// Prefix of every namespace tailbound creates.
pub const PREFIX: &str = "tailbound-";

/// Where `ip netns` keeps its named namespaces.
const NETNS_DIR: &str = "/var/run/netns";

/// The server's address inside its namespace.
pub const SERVER_IP: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 1);
/// The client's address inside its namespace.
pub const CLIENT_IP: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 2);

/// Namespaces alive in this process, deleted by the signal handler.
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SEQ: AtomicU32 = AtomicU32::new(0);
static SIGNALS: OnceLock<()> = OnceLock::new();
/// Held while namespaces are being created, so the signal handler sees all of them.
static BUILDING: Mutex<()> = Mutex::new(());

/// How the two hosts are joined.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct LinkOptions {
    /// put a bridge ("switch") in a third namespace between the hosts
    pub bridge: bool,
    /// shape each direction of the link with HTB at this rate [bytes/s]; `None` = unshaped
    pub rate_bytes_per_s: Option<f64>,
}

/// Two network namespaces joined by a veth pair; deleted on drop.
#[derive(Debug)]
pub struct TwoHosts {
    server: String,
    client: String,
    switch: Option<String>,
    link: LinkOptions,
}

impl TwoHosts {
    /// Creates the namespaces, the link, the addresses and the optional bridge and shaping.
    /// Stale namespaces of dead tailbound processes are deleted first.
    pub fn create(link: LinkOptions) -> Result<TwoHosts, NetnsError> {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Err(NetnsError::NotRoot);
        }
        if let Some(rate) = link.rate_bytes_per_s {
            if !(rate.is_finite() && rate >= 125.0) {
                return Err(NetnsError::Rate {
                    rate_bytes_per_s: rate,
                });
            }
        }
        install_signal_cleanup();
        let removed = cleanup_stale()?;
        if !removed.is_empty() {
            tracing::info!(?removed, "deleted namespaces of dead tailbound runs");
        }
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let base = format!("{PREFIX}{}-{n}", std::process::id());
        let mut hosts = TwoHosts {
            server: format!("{base}-srv"),
            client: format!("{base}-cli"),
            switch: link.bridge.then(|| format!("{base}-sw")),
            link,
        };
        // On failure the partly built hosts are dropped, which deletes what exists.
        let building = BUILDING.lock();
        hosts.build()?;
        drop(building);
        Ok(hosts)
    }

    fn build(&mut self) -> Result<(), NetnsError> {
        let names: Vec<String> = [Some(&self.server), Some(&self.client), self.switch.as_ref()]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        for name in &names {
            // Registered before it exists so a signal during creation still removes it.
            register(name);
            ip(&["netns", "add", name])?;
            ip(&["-n", name, "link", "set", "lo", "up"])?;
        }
        let (srv, cli) = (self.server.as_str(), self.client.as_str());
        match &self.switch {
            None => {
                ip(&[
                    "link", "add", "tb0", "netns", srv, "type", "veth", "peer", "name", "tb0",
                    "netns", cli,
                ])?;
            }
            Some(sw) => {
                ip(&["-n", sw, "link", "add", "br0", "type", "bridge"])?;
                ip(&["-n", sw, "link", "set", "br0", "up"])?;
                for (host, port) in [(srv, "tbs"), (cli, "tbc")] {
                    ip(&[
                        "link", "add", "tb0", "netns", host, "type", "veth", "peer", "name", port,
                        "netns", sw,
                    ])?;
                    ip(&["-n", sw, "link", "set", port, "master", "br0"])?;
                    ip(&["-n", sw, "link", "set", port, "up"])?;
                }
            }
        }
        for (host, addr) in [(srv, SERVER_IP), (cli, CLIENT_IP)] {
            ip(&[
                "-n",
                host,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                "tb0",
            ])?;
            ip(&["-n", host, "link", "set", "tb0", "up"])?;
            if let Some(rate) = self.link.rate_bytes_per_s {
                shape(host, rate)?;
            }
        }
        Ok(())
    }

    /// Name of the server's namespace.
    pub fn server_ns(&self) -> &str {
        &self.server
    }
    /// Name of the client's namespace.
    pub fn client_ns(&self) -> &str {
        &self.client
    }
    /// Name of the switch namespace, when there is a bridge.
    pub fn switch_ns(&self) -> Option<&str> {
        self.switch.as_deref()
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
        [
            Some(self.server.as_str()),
            Some(self.client.as_str()),
            self.switch.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        let names: Vec<String> = self.names().into_iter().map(String::from).collect();
        for name in names {
            if let Err(e) = delete(&name) {
                tracing::warn!(ns = %name, error = %e, "cannot delete namespace");
            }
        }
    }
}

/// HTB root with one class at `rate` on the host's link interface (its egress direction).
fn shape(ns: &str, rate_bytes_per_s: f64) -> Result<(), NetnsError> {
    let rate = format!("{}bit", (rate_bytes_per_s * 8.0).round() as u64);
    // HTB warns when quantum = rate / r2q falls outside [1000, 200000] bytes; set it.
    let quantum = ((rate_bytes_per_s / 10.0) as u64)
        .clamp(1514, 200_000)
        .to_string();
    let q = [
        "-n", ns, "qdisc", "add", "dev", "tb0", "root", "handle", "1:", "htb",
    ];
    tc(&[&q[..], &["default", "1"]].concat())?;
    tc(&[
        "-n", ns, "class", "add", "dev", "tb0", "parent", "1:", "classid", "1:1", "htb", "rate",
        &rate, "ceil", &rate, "quantum", &quantum,
    ])
}

/// Runs `ip` with `args` and checks its exit status.
fn ip(args: &[&str]) -> Result<(), NetnsError> {
    run("ip", args)
}

fn tc(args: &[&str]) -> Result<(), NetnsError> {
    run("tc", args)
}

fn run(program: &str, args: &[&str]) -> Result<(), NetnsError> {
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
    Ok(())
}

fn register(name: &str) {
    if let Ok(mut live) = LIVE.lock() {
        live.push(name.to_string());
    }
}

/// Deletes a namespace (if it exists) and forgets it.
fn delete(name: &str) -> Result<(), NetnsError> {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|n| n != name);
    }
    if !Path::new(NETNS_DIR).join(name).exists() {
        return Ok(());
    }
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

/// Deletes tailbound namespaces whose creating process no longer exists; returns their names.
pub fn cleanup_stale() -> Result<Vec<String>, NetnsError> {
    let mut removed = Vec::new();
    for name in list() {
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if Path::new("/proc").join(pid.to_string()).exists() {
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

/// On SIGINT, SIGTERM or SIGHUP: delete this process's namespaces, then let the signal take its
/// default action (the process ends as if there were no handler). Installed once.
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
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 || Command::new("ip").arg("-V").output().is_err() {
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
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 || Command::new("ip").arg("-V").output().is_err() {
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
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 || Command::new("ip").arg("-V").output().is_err() {
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
}
