//! A real memcached process: started on a free loopback port (or the given one), by PID,
//! stopped when [`Memcached`] is dropped.
//!
//! The child gets `PR_SET_PDEATHSIG = SIGKILL`, so it dies with the thread that started it even
//! if this process is killed without running destructors: start it from a thread that outlives
//! it (the main thread, or a test's own thread; not a `spawn_blocking` thread). It runs as the
//! current user (`-u root` when that is root, since memcached refuses root otherwise), with UDP
//! off.

use super::MemcacheError;
use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
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
        }
    }
}

/// A running memcached; see the module docs.
#[derive(Debug)]
pub struct Memcached {
    child: Child,
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
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            cmd.args(["-u", "root"]);
        }
        // SAFETY: prctl is async-signal-safe; the closure allocates nothing.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|e| {
            format!("{e}; install memcached (apt-get install -y memcached) or pass its path")
        })?;
        let mut m = Memcached {
            child,
            addr: SocketAddr::new(opts.listen, port),
        };
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = m.child.try_wait() {
                let mut err = String::new();
                if let Some(mut e) = m.child.stderr.take() {
                    let _ = e.read_to_string(&mut err);
                }
                return Err(format!("exited with {status}: {}", err.trim()));
            }
            if TcpStream::connect_timeout(&m.addr, Duration::from_millis(100)).is_ok() {
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
        self.child.id()
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Stops it: SIGTERM, then SIGKILL if it has not exited within 2 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if !self.is_running() {
            return;
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill has no memory-safety preconditions; pid is our child's.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(2) {
            if !self.is_running() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        self.terminate();
    }
}
