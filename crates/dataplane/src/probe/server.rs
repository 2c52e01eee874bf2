//! The echo server: returns every message unchanged.
//!
//! TCP: one listener; each connection is one pair. UDP: one well-known socket answers each
//! client's `HELLO` from a new socket dedicated to that client, so every pair has its own
//! server socket as with TCP. Blocking mode serves each pair on its own thread; non-blocking
//! mode runs everything as tokio tasks on `threads` epoll worker threads. Every server thread
//! first enters the server's network namespace, if any, so sockets created later live there.

use super::wire::{self, Header};
use super::{pin, IoMode, Protocol};
use crate::error::ProbeError;
use crate::netns;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often idle blocking threads look at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// What to serve and where.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// address to listen on; port 0 = any free port (the same one for TCP and UDP)
    pub bind: SocketAddr,
    pub protocols: Vec<Protocol>,
    pub io: IoMode,
    /// epoll worker threads in non-blocking mode (at least 1)
    pub threads: usize,
    /// network namespace to serve in; `None` = the caller's
    pub netns: Option<String>,
    /// CPUs for the server's threads; empty = unpinned
    pub cpus: Vec<usize>,
}

/// A running server; [`Server::shutdown`] stops it and joins its threads.
#[derive(Debug)]
pub struct Server {
    tcp: Option<SocketAddr>,
    udp: Option<SocketAddr>,
    shared: Arc<Shared>,
    main: Vec<JoinHandle<()>>,
    tokio_stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// State the server's threads share.
#[derive(Debug, Default)]
struct Shared {
    stop: AtomicBool,
    /// clones of open TCP connections, shut down to wake their blocked threads
    conns: Mutex<Vec<TcpStream>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    next_cpu: AtomicUsize,
    cpus: Vec<usize>,
    netns: Option<String>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Starts a worker thread in the server's namespace, pinned round-robin.
    fn spawn(self: &Arc<Self>, name: &str, f: impl FnOnce() + Send + 'static) {
        let me = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                me.enter();
                f()
            });
        match spawned {
            Ok(h) => {
                if let Ok(mut w) = self.workers.lock() {
                    w.push(h);
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot start a server thread"),
        }
    }

    /// Enters the namespace and takes the next CPU; for every server thread.
    fn enter(&self) {
        if let Some(ns) = &self.netns {
            if let Err(e) = netns::enter(ns) {
                tracing::warn!(error = %e, "server thread stays outside the namespace");
            }
        }
        pin::pin_nth(&self.cpus, self.next_cpu.fetch_add(1, Ordering::Relaxed));
    }
}

impl Server {
    /// Binds the sockets (errors such as a port in use are returned here) and starts serving.
    pub fn start(cfg: &ServerConfig) -> Result<Server, ProbeError> {
        pin::check(&cfg.cpus)?;
        let shared = Arc::new(Shared {
            cpus: cfg.cpus.clone(),
            netns: cfg.netns.clone(),
            ..Shared::default()
        });
        let (listener, udp) = in_netns(cfg.netns.as_deref(), || bind(cfg))??;
        let tcp_addr = listener.as_ref().and_then(|l| l.local_addr().ok());
        let udp_addr = udp.as_ref().and_then(|u| u.local_addr().ok());
        let mut server = Server {
            tcp: tcp_addr,
            udp: udp_addr,
            shared: Arc::clone(&shared),
            main: Vec::new(),
            tokio_stop: None,
        };
        match cfg.io {
            IoMode::Blocking => {
                if let Some(l) = listener {
                    let s = Arc::clone(&shared);
                    server.main.push(thread("probe-accept", move || {
                        s.enter();
                        accept_loop(&s, l)
                    })?);
                }
                if let Some(u) = udp {
                    let s = Arc::clone(&shared);
                    server.main.push(thread("probe-udp-hello", move || {
                        s.enter();
                        hello_loop(&s, u)
                    })?);
                }
            }
            IoMode::Nonblocking => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let s = Arc::clone(&shared);
                let threads = cfg.threads.max(1);
                server.tokio_stop = Some(tx);
                server.main.push(thread("probe-server-rt", move || {
                    s.enter();
                    nb::serve(s, threads, listener, udp, rx)
                })?);
            }
        }
        tracing::debug!(tcp = ?tcp_addr, udp = ?udp_addr, io = %cfg.io, "probe server listening");
        Ok(server)
    }

    /// The TCP address served, when TCP is served.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.tcp
    }
    /// The UDP address of the handshake socket, when UDP is served.
    pub fn udp_addr(&self) -> Option<SocketAddr> {
        self.udp
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        for h in self.main.drain(..) {
            let _ = h.join();
        }
    }

    /// Stops serving, closes every connection and joins every thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(tx) = self.tokio_stop.take() {
            let _ = tx.send(());
        }
        if let Ok(conns) = self.shared.conns.lock() {
            for c in conns.iter() {
                let _ = c.shutdown(Shutdown::Both);
            }
        }
        for h in self.main.drain(..) {
            let _ = h.join();
        }
        let workers: Vec<JoinHandle<()>> = self
            .shared
            .workers
            .lock()
            .map(|mut w| w.drain(..).collect())
            .unwrap_or_default();
        for h in workers {
            let _ = h.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !self.shared.stopped() {
            self.stop();
        }
    }
}

fn thread(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, ProbeError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(ProbeError::Thread)
}

/// Runs `f` on a thread inside namespace `ns` (or directly when `None`).
pub(crate) fn in_netns<T: Send>(
    ns: Option<&str>,
    f: impl FnOnce() -> T + Send,
) -> Result<T, ProbeError> {
    let Some(ns) = ns else {
        return Ok(f());
    };
    std::thread::scope(|scope| {
        let h = std::thread::Builder::new()
            .spawn_scoped(scope, move || -> Result<T, ProbeError> {
                netns::enter(ns)?;
                Ok(f())
            })
            .map_err(ProbeError::Thread)?;
        h.join()
            .map_err(|_| ProbeError::Panicked("namespace helper".into()))?
    })
}

type Bound = (Option<TcpListener>, Option<UdpSocket>);

fn bind(cfg: &ServerConfig) -> Result<Bound, ProbeError> {
    let wants = |p| cfg.protocols.contains(&p);
    let bind_err = |protocol: &'static str, addr: SocketAddr| {
        move |source: std::io::Error| {
            if source.kind() == ErrorKind::AddrInUse {
                ProbeError::PortInUse { protocol, addr }
            } else {
                ProbeError::Bind {
                    protocol,
                    addr,
                    source,
                }
            }
        }
    };
    // With port 0 and both protocols, retry until TCP's free port is also free for UDP.
    let tries = if cfg.bind.port() == 0 { 20 } else { 1 };
    let mut last = None;
    for _ in 0..tries {
        let listener = if wants(Protocol::Tcp) {
            Some(TcpListener::bind(cfg.bind).map_err(bind_err("tcp", cfg.bind))?)
        } else {
            None
        };
        let udp_addr = match &listener {
            Some(l) => l.local_addr().map_err(bind_err("tcp", cfg.bind))?,
            None => cfg.bind,
        };
        if !wants(Protocol::Udp) {
            return Ok((listener, None));
        }
        match UdpSocket::bind(udp_addr).map_err(bind_err("udp", udp_addr)) {
            Ok(u) => return Ok((listener, Some(u))),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or(ProbeError::Panicked("no bind attempt".into())))
}

/// Waits up to [`POLL`] for `fd` to become readable.
fn readable(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, POLL.as_millis() as i32) > 0 }
}

fn accept_loop(shared: &Arc<Shared>, listener: TcpListener) {
    while !shared.stopped() {
        if !readable(listener.as_raw_fd()) {
            continue;
        }
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let _ = stream.set_nonblocking(false);
        if let (Ok(clone), Ok(mut conns)) = (stream.try_clone(), shared.conns.lock()) {
            conns.push(clone);
        }
        tracing::debug!(%peer, "tcp pair connected");
        shared.spawn("probe-tcp-echo", move || {
            if let Err(e) = tcp_echo(stream) {
                tracing::debug!(%peer, error = %e, "tcp pair ended");
            }
        });
    }
}

/// Echoes framed messages until the peer closes.
fn tcp_echo(mut s: TcpStream) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 << 10];
    let mut filled = 0;
    loop {
        while filled < wire::HEADER_BYTES {
            match s.read(&mut buf[filled..])? {
                0 => return Ok(()),
                n => filled += n,
            }
        }
        let len = frame_len(&buf[..filled])?;
        if buf.len() < len {
            buf.resize(len, 0);
        }
        while filled < len {
            match s.read(&mut buf[filled..])? {
                0 => return Ok(()),
                n => filled += n,
            }
        }
        s.write_all(&buf[..len])?;
        buf.copy_within(len..filled, 0);
        filled -= len;
    }
}

/// Length of the message starting `buf`, or an error for anything that is not a probe message.
fn frame_len(buf: &[u8]) -> std::io::Result<usize> {
    match Header::read(buf) {
        Some(h) if h.valid_data() => Ok(h.len as usize),
        _ => Err(std::io::Error::new(
            ErrorKind::InvalidData,
            "not a tailbound probe message",
        )),
    }
}

/// The handshake loop of the well-known UDP socket (blocking mode).
fn hello_loop(shared: &Arc<Shared>, sock: UdpSocket) {
    let _ = sock.set_read_timeout(Some(POLL));
    let mut pairs: Vec<(SocketAddr, UdpSocket)> = Vec::new();
    let mut buf = [0u8; 64];
    while !shared.stopped() {
        let Ok((n, peer)) = sock.recv_from(&mut buf) else {
            continue;
        };
        let Some(hello) = Header::read(&buf[..n]).filter(|h| h.magic == wire::HELLO) else {
            continue;
        };
        if let Some((_, pair)) = pairs.iter().find(|(p, _)| *p == peer) {
            // The client missed our welcome: say it again from the same socket.
            let _ = pair.send(&welcome(hello.seq));
            continue;
        }
        let pair = match pair_socket(&sock, peer) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(%peer, error = %e, "cannot open a udp pair socket");
                continue;
            }
        };
        let _ = pair.send(&welcome(hello.seq));
        if let Ok(clone) = pair.try_clone() {
            let s = Arc::clone(shared);
            shared.spawn("probe-udp-echo", move || udp_echo(&s, clone));
        }
        pairs.push((peer, pair));
    }
}

/// A new socket on the server's address, connected to `peer`.
fn pair_socket(main: &UdpSocket, peer: SocketAddr) -> std::io::Result<UdpSocket> {
    let mut local = main.local_addr()?;
    local.set_port(0);
    let pair = UdpSocket::bind(local)?;
    pair.connect(peer)?;
    Ok(pair)
}

fn welcome(nonce: u64) -> [u8; wire::HEADER_BYTES] {
    let mut b = [0u8; wire::HEADER_BYTES];
    Header {
        magic: wire::WELCOME,
        len: wire::HEADER_BYTES as u32,
        seq: nonce,
    }
    .write(&mut b);
    b
}

fn udp_echo(shared: &Shared, sock: UdpSocket) {
    let _ = sock.set_read_timeout(Some(POLL));
    let mut buf = vec![0u8; 65_536];
    while !shared.stopped() {
        match sock.recv(&mut buf) {
            Ok(n) if Header::read(&buf[..n]).is_some_and(|h| h.magic == wire::DATA) => {
                let _ = sock.send(&buf[..n]);
            }
            _ => {}
        }
    }
}

/// The non-blocking server on tokio.
mod nb {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    pub(super) fn serve(
        shared: Arc<Shared>,
        threads: usize,
        listener: Option<TcpListener>,
        udp: Option<UdpSocket>,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        let s = Arc::clone(&shared);
        let rt = if threads <= 1 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .on_thread_start(move || s.enter())
                .enable_all()
                .build()
        };
        let rt = match rt {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "cannot start the tokio runtime");
                return;
            }
        };
        rt.block_on(async move {
            let tcp = async {
                if let Some(l) = listener {
                    if let Err(e) = tcp_accept(l).await {
                        tracing::warn!(error = %e, "tcp accept loop ended");
                    }
                }
                std::future::pending::<()>().await
            };
            let udp = async {
                if let Some(u) = udp {
                    if let Err(e) = udp_hello(u).await {
                        tracing::warn!(error = %e, "udp handshake loop ended");
                    }
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                _ = stop => {}
                _ = tcp => {}
                _ = udp => {}
            }
        });
        rt.shutdown_timeout(Duration::from_secs(1));
    }

    async fn tcp_accept(l: TcpListener) -> std::io::Result<()> {
        l.set_nonblocking(true)?;
        let l = tokio::net::TcpListener::from_std(l)?;
        loop {
            let (s, peer) = l.accept().await?;
            let _ = s.set_nodelay(true);
            tokio::spawn(async move {
                if let Err(e) = tcp_echo(s).await {
                    tracing::debug!(%peer, error = %e, "tcp pair ended");
                }
            });
        }
    }

    async fn tcp_echo(mut s: tokio::net::TcpStream) -> std::io::Result<()> {
        let mut buf = vec![0u8; 64 << 10];
        let mut filled = 0;
        loop {
            while filled < wire::HEADER_BYTES {
                match s.read(&mut buf[filled..]).await? {
                    0 => return Ok(()),
                    n => filled += n,
                }
            }
            let len = frame_len(&buf[..filled])?;
            if buf.len() < len {
                buf.resize(len, 0);
            }
            while filled < len {
                match s.read(&mut buf[filled..]).await? {
                    0 => return Ok(()),
                    n => filled += n,
                }
            }
            s.write_all(&buf[..len]).await?;
            buf.copy_within(len..filled, 0);
            filled -= len;
        }
    }

    async fn udp_hello(u: UdpSocket) -> std::io::Result<()> {
        u.set_nonblocking(true)?;
        let u = tokio::net::UdpSocket::from_std(u)?;
        let mut pairs: Vec<(SocketAddr, Arc<tokio::net::UdpSocket>)> = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            let (n, peer) = u.recv_from(&mut buf).await?;
            let Some(hello) = Header::read(&buf[..n]).filter(|h| h.magic == wire::HELLO) else {
                continue;
            };
            if let Some((_, pair)) = pairs.iter().find(|(p, _)| *p == peer) {
                let _ = pair.send(&welcome(hello.seq)).await;
                continue;
            }
            let mut local = u.local_addr()?;
            local.set_port(0);
            // Runs on a runtime thread, which entered the server's namespace.
            let pair = Arc::new(tokio::net::UdpSocket::bind(local).await?);
            pair.connect(peer).await?;
            pair.send(&welcome(hello.seq)).await?;
            let echo = Arc::clone(&pair);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65_536];
                while let Ok(n) = echo.recv(&mut buf).await {
                    if Header::read(&buf[..n]).is_some_and(|h| h.magic == wire::DATA) {
                        let _ = echo.send(&buf[..n]).await;
                    }
                }
            });
            pairs.push((peer, pair));
        }
    }
}
