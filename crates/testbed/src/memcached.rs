//! Real memcached servers (Debian's package), one per server host, started inside the host's
//! network namespace by this process (`tailbound_dataplane::memcache::Memcached`), tracked by
//! PID and stopped by it.
//!
//! Each listens on its host's address only, TCP only, with the item size limit raised above
//! the largest value a replay stores (`-I`, [`ITEM_SIZE_BYTES`]). For a run it dies with the
//! thread that started it if this process is killed without running its destructors
//! (SIGKILL): start it from the thread that runs the whole testbed. A persistent testbed's
//! servers (`tailbound testbed up`) are detached instead and stopped by `down`, which checks
//! that a recorded PID is still the same memcached ([`ProcessId`]) before signalling it.

use crate::TestbedError;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tailbound_dataplane::memcache::{MemcacheError, Memcached, MemcachedOptions};

/// memcached's item size limit on the testbed [bytes]: 2 MiB, above the largest value a
/// replay stores (1 MiB, the traces' largest request) plus its item header.
pub const ITEM_SIZE_BYTES: u64 = 2 << 20;

/// Checks that `binary` runs; returns its version line (`memcached 1.6.18`).
pub fn check_binary(binary: &Path) -> Result<String, TestbedError> {
    let missing = |why: String| TestbedError::MemcachedMissing {
        binary: binary.to_path_buf(),
        why,
    };
    let out = Command::new(binary)
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing(e.to_string()))?;
    if !out.status.success() {
        return Err(missing(format!(
            "`{} -V` failed with {}",
            binary.display(),
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Item memory for a server that stores `bytes` in values of `sizes` distinct sizes [MiB]:
/// twice the data (slab rounding), a slab page per size class and room for the hash table.
pub fn memory_mib(bytes: u64, sizes: usize) -> u64 {
    64 + 2 * bytes.div_ceil(1 << 20) + 2 * sizes as u64 * ITEM_SIZE_BYTES.div_ceil(1 << 20)
}

/// A process, identified by its PID and its start time (so that a recycled PID is never
/// mistaken for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProcessId {
    pub pid: u32,
    /// start time after boot [clock ticks], field 22 of `/proc/<pid>/stat`
    pub start_ticks: u64,
}

/// Fields of `/proc/<pid>/stat` after the command (field 3 onwards).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    Some(rest.split_whitespace().map(String::from).collect())
}

impl ProcessId {
    /// The process `pid` as it is now; `None` if there is none.
    pub fn of(pid: u32) -> Option<ProcessId> {
        let f = stat_fields(pid)?;
        Some(ProcessId {
            pid,
            start_ticks: f.get(19)?.parse().ok()?,
        })
    }

    /// Whether this very process still exists (not a zombie) and runs memcached.
    pub fn is_memcached(&self) -> bool {
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", self.pid)).unwrap_or_default();
        ProcessId::of(self.pid) == Some(*self)
            && comm.trim() == "memcached"
            && stat_fields(self.pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z"))
    }

    /// CPU time it has used (user + system) [s]; 0 when it is gone.
    pub fn cpu_seconds(&self) -> f64 {
        // SAFETY: sysconf has no preconditions.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        stat_fields(self.pid)
            .and_then(|f| {
                let u: f64 = f.get(11)?.parse().ok()?;
                let s: f64 = f.get(12)?.parse().ok()?;
                Some((u + s) / tck)
            })
            .unwrap_or(0.0)
    }
}

/// Starts memcached on server host `host` (namespace `ns`) listening on `addr` with
/// `memory_mib` of item memory and the testbed's item size limit, from `binary`; waits until
/// it accepts connections. A server that cannot start is an error naming the host and saying
/// why (a port in use, the binary missing, its own message).
pub fn start(
    ns: &str,
    host: &str,
    addr: SocketAddr,
    memory_mib: u64,
    binary: &Path,
    detached: bool,
) -> Result<Memcached, TestbedError> {
    let opts = MemcachedOptions {
        binary: binary.display().to_string(),
        listen: addr.ip(),
        port: Some(addr.port()),
        memory_mib: u32::try_from(memory_mib).unwrap_or(u32::MAX),
        threads: 1,
        max_connections: 8192,
        ready_timeout: Duration::from_secs(30),
        netns: Some(ns.to_string()),
        item_size_bytes: Some(ITEM_SIZE_BYTES),
        detached,
    };
    let server = Memcached::start(&opts).map_err(|e| {
        let message = match e {
            MemcacheError::Start { message, .. } => message,
            other => other.to_string(),
        };
        if message.contains("Address already in use") {
            TestbedError::PortInUse {
                host: host.to_string(),
                addr,
                message,
            }
        } else if message.contains("install memcached") {
            TestbedError::MemcachedMissing {
                binary: binary.to_path_buf(),
                why: message,
            }
        } else {
            TestbedError::Server {
                host: host.to_string(),
                addr,
                message,
            }
        }
    })?;
    tracing::info!(host, %addr, pid = server.pid(), "memcached started");
    Ok(server)
}

/// Gives every thread of process `pid` the nice value `nice` (a server started before its
/// threads are counted has them all once it accepts connections).
pub fn renice(pid: u32, nice: i32) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return;
    };
    for t in tasks.flatten() {
        if let Some(tid) = t.file_name().to_str().and_then(|s| s.parse().ok()) {
            if let Err(e) = tailbound_dataplane::replay::set_nice(tid, nice) {
                tracing::warn!(pid, tid, nice, error = %e, "cannot change memcached's priority");
            }
        }
    }
}

/// Stops a detached memcached recorded earlier, if that very process still runs: SIGTERM,
/// then SIGKILL after 2 s. Returns whether it was running.
pub fn stop_recorded(id: ProcessId) -> bool {
    if !id.is_memcached() {
        return false;
    }
    // SAFETY: kill has no memory preconditions; `is_memcached` checked the start time, so the
    // pid is still the process we recorded.
    unsafe { libc::kill(id.pid as libc::pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while id.is_memcached() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if id.is_memcached() {
        // SAFETY: as above.
        unsafe { libc::kill(id.pid as libc::pid_t, libc::SIGKILL) };
    }
    true
}
