//! Real memcached servers (Debian's package), one per server host, started inside the host's
//! network namespace by this process, tracked by PID and stopped by it.
//!
//! The child enters the namespace itself before `exec` (`setns` in `pre_exec`), so the PID we
//! hold is memcached's own. It listens on the host's address only, TCP only (`-U 0`), with the
//! item size limit raised above the largest value a replay stores (`-I`, [`ITEM_SIZE_BYTES`]).
//! For a run it gets `PR_SET_PDEATHSIG = SIGKILL`: if this process dies without running its
//! destructors (SIGKILL), memcached dies with the thread that started it (start it from the
//! thread that runs the whole testbed). A persistent testbed's servers (`tailbound testbed up`)
//! are detached instead (own session, no death signal) and stopped by `down`, which checks
//! that a recorded PID is still the same memcached ([`ProcessId`]) before signalling it.

use crate::TestbedError;
use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tailbound_dataplane::netns;

/// memcached's item size limit on the testbed [bytes]: 2 MiB, above the largest value a
/// replay stores (1 MiB, the traces' largest request) plus its item header.
pub const ITEM_SIZE_BYTES: u64 = 2 << 20;

/// How the servers are started.
#[derive(Debug, Clone, PartialEq)]
pub struct MemcachedOptions {
    /// the executable
    pub binary: PathBuf,
    /// worker threads per server (`-t`)
    pub threads: u32,
    /// most connections per server (`-c`)
    pub max_connections: u32,
    /// how long a server may take to accept connections
    pub ready_timeout: Duration,
    /// detach the servers (persistent testbed): no death signal, own session
    pub detached: bool,
}

impl Default for MemcachedOptions {
    fn default() -> Self {
        MemcachedOptions {
            binary: PathBuf::from("memcached"),
            threads: 1,
            max_connections: 8192,
            ready_timeout: Duration::from_secs(30),
            detached: false,
        }
    }
}

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

/// A running memcached; stopped when dropped (unless detached and kept).
#[derive(Debug)]
pub struct Server {
    child: Option<Child>,
    id: ProcessId,
    host: String,
    addr: SocketAddr,
}

impl Server {
    /// Starts memcached in namespace `ns` (host `host`) listening on `addr`, with `memory_mib`
    /// of item memory, and waits until it accepts connections. A server that exits at start
    /// (a port in use, a bad option) is an error with its own message.
    pub fn start(
        ns: &str,
        host: &str,
        addr: SocketAddr,
        memory_mib: u64,
        opts: &MemcachedOptions,
    ) -> Result<Server, TestbedError> {
        let netns_file =
            std::fs::File::open(netns::path(ns)).map_err(|e| TestbedError::Server {
                host: host.to_string(),
                addr,
                message: format!("cannot open namespace {ns}: {e}"),
            })?;
        let mut cmd = Command::new(&opts.binary);
        cmd.args(["-l", &addr.ip().to_string()])
            .args(["-p", &addr.port().to_string()])
            .args(["-U", "0"])
            .args(["-I", &ITEM_SIZE_BYTES.to_string()])
            .args(["-m", &memory_mib.to_string()])
            .args(["-t", &opts.threads.to_string()])
            .args(["-c", &opts.max_connections.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if netns::is_root() {
            // memcached refuses to run as root unless told which user to be
            cmd.args(["-u", "root"]);
        }
        let fd = netns_file.as_raw_fd();
        let detached = opts.detached;
        // SAFETY: setns, prctl and setsid are async-signal-safe system calls; the closure
        // allocates nothing and the fd stays open until spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if detached {
                    libc::setsid();
                } else if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| TestbedError::MemcachedMissing {
            binary: opts.binary.clone(),
            why: e.to_string(),
        })?;
        drop(netns_file);
        let pid = child.id();
        let mut server = Server {
            id: ProcessId::of(pid).unwrap_or(ProcessId {
                pid,
                start_ticks: 0,
            }),
            child: Some(child),
            host: host.to_string(),
            addr,
        };
        server.wait_ready(ns, opts.ready_timeout)?;
        tracing::info!(host, %addr, pid, "memcached started");
        Ok(server)
    }

    /// Polls until a connection from inside `ns` succeeds, the server exits or `timeout`
    /// passes.
    fn wait_ready(&mut self, ns: &str, timeout: Duration) -> Result<(), TestbedError> {
        let addr = self.addr;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stop_probe = std::sync::Arc::clone(&stop);
        let ns = ns.to_string();
        let deadline = Instant::now() + timeout;
        let probe = std::thread::Builder::new()
            .name("memcached-ready".into())
            .spawn(move || {
                if netns::enter(&ns).is_err() {
                    return;
                }
                while !stop_probe.load(std::sync::atomic::Ordering::Relaxed)
                    && Instant::now() < deadline
                {
                    if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200))
                        .is_ok()
                    {
                        let _ = tx.send(());
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
            .map_err(|e| self.fail(format!("cannot start a thread: {e}")))?;
        let result = loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    let err = err.trim().to_string();
                    break Err(if err.contains("Address already in use") {
                        TestbedError::PortInUse {
                            host: self.host.clone(),
                            addr,
                            message: err,
                        }
                    } else {
                        self.fail(format!("memcached exited at start with {status}: {err}"))
                    });
                }
            }
            match rx.recv_timeout(Duration::from_millis(5)) {
                Ok(()) => break Ok(()),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    // the probe gave up: the deadline passed (or it could not enter)
                    if Instant::now() >= deadline {
                        break Err(self.fail(format!(
                            "memcached does not accept connections after {timeout:?}"
                        )));
                    }
                    break Err(self.fail("cannot probe memcached from its namespace".into()));
                }
            }
        };
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = probe.join();
        result
    }

    fn fail(&self, message: String) -> TestbedError {
        TestbedError::Server {
            host: self.host.clone(),
            addr: self.addr,
            message,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn id(&self) -> ProcessId {
        self.id
    }

    /// Leaves a detached server running when this value goes (a persistent testbed).
    pub fn keep(mut self) -> ProcessId {
        self.child = None;
        self.id
    }

    /// Stops it: SIGTERM, then SIGKILL if it has not exited within 2 s; reaps it.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(None)) {
            // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet
            // reaped, so it cannot have been recycled.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(2);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = child.kill();
        }
        let _ = child.wait();
        tracing::info!(host = %self.host, pid = self.id.pid, "memcached stopped");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Stops a detached memcached recorded earlier, if that very process still runs: SIGTERM,
/// then SIGKILL after 2 s. Returns whether it was running.
pub fn stop_recorded(id: ProcessId) -> bool {
    if !id.is_memcached() {
        return false;
    }
    // SAFETY: as in `Server::terminate`; `is_memcached` checked the start time, so the pid is
    // still the process we recorded.
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
