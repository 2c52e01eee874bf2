//! A real memcached process: started on a free loopback port (or the given one), by PID,
//! stopped when [`Memcached`] is dropped.
//!
//! The child gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies with the thread that started it even
//! if this process is killed without running destructors: start it from a thread that outlives
//! it (the main thread, or a test's own thread; not a `spawn_blocking` thread). It runs as the
//! current user (`-u root` when that is root, since memcached refuses root otherwise), with UDP
//! off.
//!
//! In a network namespace ([`MemcachedOptions::netns`], the testbed's server hosts) the child
//! enters the namespace itself before `exec`, so the PID held is memcached's own, and readiness
//! is probed from inside the namespace. A detached server ([`MemcachedOptions::detached`]: own
//! session, no death signal) outlives this process once [`Memcached::detach`] is called.

use super::MemcacheError;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to start memcached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemcachedOptions {
    /// the executable; default `/usr/bin/memcached` (Debian's package), else `memcached` on
    /// `PATH`
    pub binary: String,
    /// address to listen on (loopback by default)
    pub listen: IpAddr,
    /// port; `None` picks a free one
    pub port: Option<u16>,
    /// item memory [MiB] (`-m`)
    pub memory_mib: u32,
    /// worker threads (`-t`)
    pub threads: u32,
    /// most simultaneous connections (`-c`)
    pub max_connections: u32,
    /// how long to wait for it to accept connections
    pub ready_timeout: Duration,
    /// the network namespace to run in (`None`: the caller's); `port` must then be given
    pub netns: Option<String>,
    /// item size limit (`-I`) [bytes]; `None`: memcached's default, 1 MiB
    pub item_size_bytes: Option<u64>,
    /// outlive this process (own session, no death signal); see [`Memcached::detach`]
    pub detached: bool,
}

impl Default for MemcachedOptions {
    fn default() -> Self {
        let debian = "/usr/bin/memcached";
        MemcachedOptions {
            binary: if std::path::Path::new(debian).exists() {
                debian.into()
            } else {
                "memcached".into()
            },
            listen: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: None,
            memory_mib: 64,
            threads: 2,
            max_connections: 1024,
            ready_timeout: Duration::from_secs(10),
            netns: None,
            item_size_bytes: None,
            detached: false,
        }
    }
}

/// A running memcached; see the module docs.
#[derive(Debug)]
pub struct Memcached {
    /// `None` once detached
    child: Option<Child>,
    pid: u32,
    addr: SocketAddr,
}

/// Whether a memcached executable can be found (tests skip without one, outside CI).
pub fn available() -> bool {
    Command::new(MemcachedOptions::default().binary)
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn free_port(ip: IpAddr) -> std::io::Result<u16> {
    Ok(TcpListener::bind((ip, 0))?.local_addr()?.port())
}

impl Memcached {
    /// Starts memcached and waits until it accepts connections. With `port: None` a free port
    /// is chosen; if another process takes it first, a new one is tried (5 attempts).
    ///
    /// # Errors
    /// [`MemcacheError::Start`] with memcached's own message when it cannot start.
    pub fn start(opts: &MemcachedOptions) -> Result<Memcached, MemcacheError> {
        if opts.netns.is_some() && opts.port.is_none() {
            return Err(MemcacheError::Start {
                binary: opts.binary.clone(),
                message: "a port must be given to listen inside a network namespace".into(),
            });
        }
        let mut last = String::new();
        let attempts = if opts.port.is_some() { 1 } else { 5 };
        for _ in 0..attempts {
            let port = match opts.port {
                Some(p) => p,
                None => free_port(opts.listen).map_err(|e| MemcacheError::Start {
                    binary: opts.binary.clone(),
                    message: format!("no free port on {}: {e}", opts.listen),
                })?,
            };
            match Self::start_on(opts, port) {
                Ok(m) => return Ok(m),
                Err(message) => last = message,
            }
        }
        Err(MemcacheError::Start {
            binary: opts.binary.clone(),
            message: last,
        })
    }

    fn start_on(opts: &MemcachedOptions, port: u16) -> Result<Memcached, String> {
        let mut cmd = Command::new(&opts.binary);
        cmd.args(["-l", &opts.listen.to_string()])
            .args(["-p", &port.to_string()])
            .args(["-U", "0"])
            .args(["-m", &opts.memory_mib.to_string()])
            .args(["-t", &opts.threads.to_string()])
            .args(["-c", &opts.max_connections.to_string()])
            .args(
                opts.item_size_bytes
                    .map(|i| ["-I".to_string(), i.to_string()])
                    .iter()
                    .flatten(),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-u", "root"]);
        }
        let netns_file = match &opts.netns {
            Some(ns) => Some(
                std::fs::File::open(crate::netns::path(ns))
                    .map_err(|e| format!("cannot open network namespace {ns}: {e}"))?,
            ),
            None => None,
        };
        let netns_fd = netns_file.as_ref().map(|f| f.as_raw_fd());
        let detached = opts.detached;
        // SAFETY: setns, setsid and prctl are async-signal-safe; the closure allocates
        // nothing, and the namespace's fd stays open until spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(fd) = netns_fd {
                    if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if detached {
                    libc::setsid();
                } else if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            format!("{e}; install memcached (apt-get install -y memcached) or pass its path")
        })?;
        drop(netns_file);
        let mut m = Memcached {
            pid: child.id(),
            child: Some(child),
            addr: SocketAddr::new(opts.listen, port),
        };
        let start = Instant::now();
        loop {
            if let Some(child) = m.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = e.read_to_string(&mut err);
                    }
                    return Err(format!("exited with {status}: {}", err.trim()));
                }
            }
            // its own socket: another process on the same port must not pass for it
            if listening(m.pid, port) {
                return Ok(m);
            }
            if start.elapsed() > opts.ready_timeout {
                return Err(format!(
                    "not accepting connections on {} after {:?}",
                    m.addr, opts.ready_timeout
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether it is still running (a detached server is no longer watched: false).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Leaves a detached server running after this value and this process are gone; returns
    /// its PID. (Without [`MemcachedOptions::detached`] it still dies with the thread that
    /// started it.)
    pub fn detach(mut self) -> u32 {
        self.child = None;
        self.pid
    }

    /// Stops it: SIGTERM, then SIGKILL if it has not exited within 2 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if !self.is_running() {
            if let Some(mut c) = self.child.take() {
                let _ = c.wait();
            }
            return;
        }
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill has no memory-safety preconditions; pid is our child's.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            if !matches!(child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Whether process `pid` has a TCP socket listening on `port`: a LISTEN entry of its own
/// namespace's `/proc/<pid>/net/tcp` whose inode is one of its open sockets.
fn listening(pid: u32, port: u16) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    let inodes: std::collections::HashSet<String> = fds
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")) else {
        return false;
    };
    // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
    table.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        f.len() > 9
            && f[3] == "0A"
            && f[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
                == Some(port)
            && inodes.contains(f[9])
    })
}
