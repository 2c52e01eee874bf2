//! The enforcer proxy (tokio): memcached clients connect to it, it forwards their requests to
//! one memcached (the appliance) when the enforcer's core lets them go, and their replies back.
//!
//! ```text
//!  client ──► one task per connection, woken by its sockets' readiness (no channels, no
//!  ▲          second task): read ─► parse in place (memcache::request) ─► charge (cost) ─►
//!  │          core.submit ─► admitted: into the backend's write buffer (every complete
//!  │          request of a read leaves in one write) | queued: held in order until its gate
//!  │          opens ─► backend ─► replies framed in place (memcache::reply), in request
//!  └───────── order, into the client's write buffer; costs settled, core.complete
//!  scheduler task: at core.next_wakeup() (or when poked), core.poll → open the gates
//! ```
//!
//! **Tenants.** Each listener either stands for one flow (a listening port per tenant flow) or
//! asks for memcached's own text-protocol authentication first (`set <any> 0 0 <n>` with data
//! `<tenant>/<flow> <secret>`, answered `STORED` or `CLIENT_ERROR authentication failure`).
//!
//! **Order and framing.** Every connection has its own backend connection; its requests leave
//! in arrival order (a request waiting for tokens holds back the ones behind it) and every
//! reply, including the proxy's own error replies, comes back in request order. Quiet requests
//! (`noreply`, meta `q`) are forwarded without their quiet token and the reply the client did
//! not ask for is dropped here, so the proxy always knows where a reply ends and when a request
//! completed.
//!
//! **Failures.** Malformed requests get memcached's error replies (see
//! `tailbound_dataplane::memcache`). An unreachable backend gets `SERVER_ERROR backend
//! unavailable` for the first request, then the connection closes; a backend that closes, errs
//! or stays silent longer than the backend timeout gets `SERVER_ERROR` for every request still
//! waiting for it, then the connection closes (as memcached does on severe errors). A client
//! that does not read its replies within the client timeout is dropped. Memory per connection
//! is bounded by one line, one value and `depth` requests in flight. Both timeouts share one
//! timer per connection, re-armed only when it fires (no timer per read or per request).
//!
//! **Time.** All decisions take `now` from the [`Clock`] given at start: the real monotonic
//! clock in production, a manual one in tests, where [`Proxy::tick`] releases what is due.

use crate::core::{
    Admit, CoreConfig, CoreError, EnforcerCore, FlowSetup, FlowStatus, IntervalReport, Ticket,
};
use crate::cost::Charger;
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;
use tailbound_dataplane::clock::Clock;
use tailbound_dataplane::memcache::reply::ReplyReader;
use tailbound_dataplane::memcache::request::{Rejection, Suppressed};
use tailbound_dataplane::memcache::{parse_request, Command, Limits, Parse, Parsed, ReplyShape};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How a listener tells which flow a connection belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identify {
    /// every connection is this flow (index into the proxy's flows)
    Flow(usize),
    /// the first request must authenticate (memcached's text-protocol auth)
    Auth,
}

/// One listening address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSpec {
    pub addr: SocketAddr,
    pub identify: Identify,
}

/// A user of authenticating listeners: the flow it is and its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthUser {
    /// `tenant/flow`
    pub user: String,
    pub secret: String,
    /// index into the proxy's flows
    pub flow: usize,
}

/// A flow the proxy polices: its core settings and how its requests are charged.
#[derive(Debug, Clone)]
pub struct ProxyFlow {
    pub setup: FlowSetup,
    pub charger: Arc<Charger>,
}

/// How the proxy runs.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// the memcached it protects
    pub backend: SocketAddr,
    pub listeners: Vec<ListenerSpec>,
    pub auth: Vec<AuthUser>,
    pub limits: Limits,
    /// connecting to the backend, and the longest wait for a reply
    pub backend_timeout: Duration,
    /// the longest a client may leave its replies unread
    pub client_timeout: Duration,
    /// most client connections at once
    pub max_connections: usize,
    /// most requests of one connection in flight (parsed and not yet answered)
    pub depth: usize,
    pub core: CoreConfig,
}

impl ProxyConfig {
    /// Defaults around `backend` and `listeners`.
    pub fn new(backend: SocketAddr, listeners: Vec<ListenerSpec>) -> ProxyConfig {
        ProxyConfig {
            backend,
            listeners,
            auth: Vec::new(),
            limits: Limits::default(),
            backend_timeout: Duration::from_secs(5),
            client_timeout: Duration::from_secs(30),
            max_connections: 4096,
            depth: 256,
            core: CoreConfig::default(),
        }
    }
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Core(#[from] CoreError),
    #[error("invalid proxy settings: {0}")]
    Config(String),
}

type Waker = oneshot::Sender<Ticket>;

struct Shared {
    core: Mutex<EnforcerCore<Waker>>,
    clock: Arc<dyn Clock>,
    /// the scheduler re-reads the next wake-up
    wake: Notify,
    flows: Vec<ProxyFlow>,
    auth: HashMap<String, AuthUser>,
    cfg: ProxyConfig,
    connections: AtomicUsize,
    shutdown: watch::Sender<bool>,
}

impl Shared {
    fn core(&self) -> MutexGuard<'_, EnforcerCore<Waker>> {
        // a panic elsewhere cannot leave the core half-updated: every method finishes its
        // bookkeeping before it returns, so a poisoned lock is still consistent
        self.core.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Opens released gates; a gate whose connection is gone completes at once.
    fn open(&self, released: &mut Vec<(Waker, Ticket)>) {
        let mut orphans = Vec::new();
        for (gate, ticket) in released.drain(..) {
            if let Err(ticket) = gate.send(ticket) {
                orphans.push(ticket);
            }
        }
        while !orphans.is_empty() {
            let mut more = Vec::new();
            {
                let now = self.now();
                let mut core = self.core();
                for t in orphans.drain(..) {
                    let _ = core.complete(now, t, None, &mut more);
                }
            }
            for (gate, ticket) in more {
                if let Err(ticket) = gate.send(ticket) {
                    orphans.push(ticket);
                }
            }
        }
    }

    fn tick(&self) {
        let mut released = Vec::new();
        let now = self.now();
        self.core().poll(now, &mut released);
        self.open(&mut released);
    }
}

/// A running proxy; see the module docs. Dropping it stops accepting; [`Proxy::shutdown`] also
/// waits for the listeners and the scheduler to end.
pub struct Proxy {
    shared: Arc<Shared>,
    addrs: Vec<SocketAddr>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("addrs", &self.addrs).finish()
    }
}

impl Proxy {
    /// Binds every listener and starts serving (inside a tokio runtime).
    ///
    /// # Errors
    /// [`ProxyError`] naming the address that cannot be bound, or invalid settings.
    pub async fn start(
        cfg: ProxyConfig,
        flows: Vec<ProxyFlow>,
        clock: Arc<dyn Clock>,
    ) -> Result<Proxy, ProxyError> {
        if cfg.depth == 0 || cfg.max_connections == 0 {
            return Err(ProxyError::Config(
                "depth and max connections must be at least 1".into(),
            ));
        }
        for l in &cfg.listeners {
            if let Identify::Flow(i) = l.identify {
                if i >= flows.len() {
                    return Err(ProxyError::Config(format!(
                        "listener {} names flow #{i} of {}",
                        l.addr,
                        flows.len()
                    )));
                }
            }
        }
        let mut auth = HashMap::new();
        for u in &cfg.auth {
            if u.flow >= flows.len() {
                return Err(ProxyError::Config(format!(
                    "user {:?} names flow #{} of {}",
                    u.user,
                    u.flow,
                    flows.len()
                )));
            }
            auth.insert(u.user.clone(), u.clone());
        }
        let now = clock.now_ns();
        let core = EnforcerCore::new(
            flows.iter().map(|f| f.setup.clone()).collect(),
            cfg.core.clone(),
            now,
        )?;
        let mut listeners = Vec::new();
        let mut addrs = Vec::new();
        for l in &cfg.listeners {
            let listener =
                TcpListener::bind(l.addr)
                    .await
                    .map_err(|source| ProxyError::Listen {
                        addr: l.addr,
                        source,
                    })?;
            addrs.push(listener.local_addr().map_err(|source| ProxyError::Listen {
                addr: l.addr,
                source,
            })?);
            listeners.push((listener, l.identify.clone()));
        }
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            core: Mutex::new(core),
            clock,
            wake: Notify::new(),
            flows,
            auth,
            cfg,
            connections: AtomicUsize::new(0),
            shutdown,
        });
        let mut tasks = Vec::new();
        for (listener, identify) in listeners {
            tasks.push(tokio::spawn(accept_loop(
                shared.clone(),
                listener,
                identify,
            )));
        }
        tasks.push(tokio::spawn(scheduler(shared.clone())));
        Ok(Proxy {
            shared,
            addrs,
            tasks: Mutex::new(tasks),
        })
    }

    /// The bound addresses, in listener order (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Releases every queued request that is due now (the scheduler does this by itself on a
    /// real clock; with a manual clock, call it after moving the clock).
    pub fn tick(&self) {
        self.shared.tick();
    }

    /// The next time a queued request will be due [ns], if any waits for tokens.
    pub fn next_wakeup(&self) -> Option<u64> {
        let now = self.shared.now();
        self.shared.core().next_wakeup(now)
    }

    /// The current time on the proxy's clock [ns].
    pub fn now_ns(&self) -> u64 {
        self.shared.now()
    }

    /// New allocation vector for flow `flow` [tokens/s per hop].
    ///
    /// # Errors
    /// [`CoreError`] for an unknown flow or a bad vector.
    pub fn set_allocation(&self, flow: usize, rates: &[f64]) -> Result<(), CoreError> {
        let mut released = Vec::new();
        let now = self.shared.now();
        self.shared
            .core()
            .set_allocation(now, flow, rates, &mut released)?;
        self.shared.open(&mut released);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Makes flow `flow` unlimited.
    ///
    /// # Errors
    /// [`CoreError::UnknownFlow`].
    pub fn set_unlimited(&self, flow: usize) -> Result<(), CoreError> {
        let mut released = Vec::new();
        let now = self.shared.now();
        self.shared.core().set_unlimited(now, flow, &mut released)?;
        self.shared.open(&mut released);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Closes a sub-interval sample of every flow.
    pub fn sample(&self) {
        let now = self.shared.now();
        self.shared.core().sample(now);
    }

    /// Closes the interval and returns every flow's report.
    pub fn report(&self) -> IntervalReport {
        let now = self.shared.now();
        self.shared.core().report(now)
    }

    /// Every flow's queue and buckets now.
    pub fn status(&self) -> Vec<FlowStatus> {
        let now = self.shared.now();
        self.shared.core().status(now)
    }

    /// The flows, in order.
    pub fn flows(&self) -> Vec<FlowSetup> {
        self.shared.flows.iter().map(|f| f.setup.clone()).collect()
    }

    /// Client connections open now.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting and waits for the listeners and the scheduler (open connections finish
    /// on their own).
    pub async fn shutdown(&self) {
        let _ = self.shared.shutdown.send(true);
        let tasks: Vec<JoinHandle<()>> = self
            .tasks
            .lock()
            .map(|mut t| t.drain(..).collect())
            .unwrap_or_default();
        for t in tasks {
            let _ = t.await;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.shared.shutdown.send(true);
        if let Ok(tasks) = self.tasks.lock() {
            for t in tasks.iter() {
                t.abort();
            }
        }
    }
}

async fn scheduler(shared: Arc<Shared>) {
    let mut stop = shared.shutdown.subscribe();
    loop {
        let next = {
            let now = shared.now();
            shared.core().next_wakeup(now)
        };
        let deadline = next.and_then(|t| shared.clock.deadline(t));
        tokio::select! {
            _ = stop.changed() => return,
            _ = shared.wake.notified() => {}
            _ = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            } => {}
        }
        shared.tick();
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: TcpListener, identify: Identify) {
    let mut stop = shared.shutdown.subscribe();
    loop {
        let accepted = tokio::select! {
            _ = stop.changed() => return,
            a = listener.accept() => a,
        };
        let (mut stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if shared.connections.fetch_add(1, Ordering::SeqCst) >= shared.cfg.max_connections {
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"SERVER_ERROR too many connections\r\n")
                    .await;
            });
            continue;
        }
        let shared = shared.clone();
        let identify = identify.clone();
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            if let Err(e) = serve(&shared, stream, identify).await {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
            shared.connections.fetch_sub(1, Ordering::SeqCst);
            // requests of this connection still queued in the core go nowhere
            let now = shared.now();
            shared.core().cancel(now, oneshot::Sender::is_closed);
        });
    }
}

/// Why a connection ended early (logged at debug level).
#[derive(Debug, thiserror::Error)]
enum ConnError {
    #[error("client: {0}")]
    Client(std::io::Error),
    #[error("client did not read its replies within {0:?}")]
    ClientTimeout(Duration),
    #[error("backend: {0}")]
    Backend(String),
    #[error("authentication failed")]
    Auth,
    #[error("{0}")]
    Protocol(&'static str),
}

/// Free room every socket read gets at least [bytes].
const READ_ROOM: usize = 16 * 1024;
/// A buffer that grew beyond this (a large value) is given back once it is empty [bytes].
const KEEP_BUFFER: usize = 256 * 1024;
/// Replies waiting for a slow client beyond this hold back the reading of more [bytes].
const CLIENT_BACKLOG: usize = 256 * 1024;

/// Bytes read from a socket and parsed where they lie: the unparsed data is
/// `buf[start..end]`. The buffer is zeroed when it grows, never per read.
struct InBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl InBuf {
    fn new() -> InBuf {
        InBuf {
            buf: vec![0; 2 * READ_ROOM],
            start: 0,
            end: 0,
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > KEEP_BUFFER {
                self.buf = vec![0; 2 * READ_ROOM];
            }
        }
    }

    /// Reads what the socket holds into at least [`READ_ROOM`] of room; `Ok(0)` at its end.
    fn poll_fill(
        &mut self,
        s: &mut TcpStream,
        cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<usize>> {
        if self.buf.len() - self.end < READ_ROOM {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < READ_ROOM {
                let grown = (2 * self.buf.len()).max(self.end + READ_ROOM);
                self.buf.resize(grown, 0);
            }
        }
        let mut rb = ReadBuf::new(&mut self.buf[self.end..]);
        match Pin::new(s).poll_read(cx, &mut rb) {
            Poll::Ready(Ok(())) => {
                let n = rb.filled().len();
                self.end += n;
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    async fn fill(&mut self, s: &mut TcpStream) -> std::io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_fill(s, cx)).await
    }
}

/// Bytes for a socket, in order; `buf[at..]` is still to go.
#[derive(Default)]
struct OutBuf {
    buf: Vec<u8>,
    at: usize,
}

impl OutBuf {
    fn pending(&self) -> usize {
        self.buf.len() - self.at
    }

    fn extend(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// Writes what the socket takes: ready when all went (or on an error); `moved` tells
    /// whether any byte went.
    fn poll_flush(
        &mut self,
        s: &mut TcpStream,
        cx: &mut Context<'_>,
        moved: &mut bool,
    ) -> Poll<std::io::Result<()>> {
        while self.at < self.buf.len() {
            match Pin::new(&mut *s).poll_write(cx, &self.buf[self.at..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => {
                    self.at += n;
                    *moved = true;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.buf.clear();
        self.at = 0;
        if self.buf.capacity() > KEEP_BUFFER {
            self.buf = Vec::new();
        }
        Poll::Ready(Ok(()))
    }
}

/// How the reply to a forwarded request is framed and settled.
#[derive(Debug, Clone, Copy)]
struct ReplyOf {
    shape: ReplyShape,
    /// the client asked for a quiet reply: drop what it suppresses
    suppressed: Option<Suppressed>,
    /// keys read (costs settled from the reply)
    reads: u32,
}

/// A request's place in the reply order, once it left (or needs no backend).
enum Sent {
    /// the proxy's own reply (a rejected request)
    Local(Bytes),
    /// forwarded to the backend
    Backend(ReplyOf, Ticket),
    /// `quit`, or a line too long to resynchronise: close after the replies before it
    Close,
}

/// A request parsed behind one that waits for tokens, kept in arrival order.
enum Held {
    Request {
        /// what is forwarded (without a quiet token)
        bytes: Bytes,
        reply: ReplyOf,
        gate: Gate,
    },
    Other(Sent),
}

/// Whether a held request may go: its ticket, or where its ticket will come from.
enum Gate {
    Open(Ticket),
    Wait(oneshot::Receiver<Ticket>),
}

/// Appends request `raw` to `out` without its quiet token (every request gets a reply from
/// the backend, so the proxy always knows where one ends).
fn without_quiet(raw: &[u8], quiet: Option<(usize, usize)>, out: &mut Vec<u8>) {
    match quiet {
        None => out.extend_from_slice(raw),
        Some((a, b)) => {
            out.extend_from_slice(&raw[..a]);
            out.extend_from_slice(&raw[b..]);
        }
    }
}

/// The first request must be memcached's text auth: `set <key> <flags> <exp> <n>` with data
/// `<user> <secret>`. Returns the flow, having answered `STORED`.
async fn authenticate(
    shared: &Shared,
    s: &mut TcpStream,
    buf: &mut InBuf,
) -> Result<usize, ConnError> {
    let timeout = shared.cfg.client_timeout;
    let parsed = tokio::time::timeout(timeout, async {
        loop {
            if let Some(p) = parse_request(buf.data(), &shared.cfg.limits) {
                return Ok(p);
            }
            if buf.fill(s).await.map_err(ConnError::Client)? == 0 {
                return Err(ConnError::Protocol("closed before authenticating"));
            }
        }
    })
    .await
    .map_err(|_| ConnError::Protocol("no authentication within the client timeout"))??;
    let flow = match &parsed {
        Parse::Request(p) if p.command == Command::Set => {
            let data = &buf.data()[p.line_len..p.line_len + p.data_len];
            let text = String::from_utf8_lossy(data);
            let mut it = text.split_whitespace();
            let (user, secret) = (it.next().unwrap_or(""), it.next().unwrap_or(""));
            shared
                .auth
                .get(user)
                .filter(|u| u.secret == secret && it.next().is_none())
                .map(|u| u.flow)
        }
        _ => None,
    };
    let reply: &[u8] = match flow {
        Some(_) => b"STORED\r\n",
        None => b"CLIENT_ERROR authentication failure\r\n",
    };
    let _ = tokio::time::timeout(timeout, s.write_all(reply)).await;
    let len = match parsed {
        Parse::Request(p) => p.len,
        Parse::Reject { len, .. } => len,
    };
    buf.consume(len);
    flow.ok_or(ConnError::Auth)
}

async fn serve(
    shared: &Arc<Shared>,
    mut client: TcpStream,
    identify: Identify,
) -> Result<(), ConnError> {
    let mut cin = InBuf::new();
    let flow = match identify {
        Identify::Flow(f) => f,
        Identify::Auth => authenticate(shared, &mut client, &mut cin).await?,
    };
    let backend = shared.cfg.backend;
    let t = shared.cfg.backend_timeout;
    let connected = match tokio::time::timeout(t, TcpStream::connect(backend)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no connection within {t:?}")),
    };
    let backend = match connected {
        Ok(s) => s,
        Err(e) => {
            // answer the first request, then close (memcached closes after a severe error)
            let _ = tokio::time::timeout(shared.cfg.client_timeout, async {
                while parse_request(cin.data(), &shared.cfg.limits).is_none() {
                    if cin.fill(&mut client).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
            })
            .await;
            let msg = format!("SERVER_ERROR backend unavailable: {e}\r\n");
            let _ =
                tokio::time::timeout(shared.cfg.client_timeout, client.write_all(msg.as_bytes()))
                    .await;
            return Err(ConnError::Backend(e));
        }
    };
    let _ = backend.set_nodelay(true);
    let charger = shared.flows[flow].charger.clone();
    let mut conn = Conn {
        shared,
        flow,
        charger: &charger,
        depth: shared.cfg.depth,
        client,
        backend,
        cin,
        swallow: 0,
        eof: false,
        closing: false,
        held: VecDeque::new(),
        bout: OutBuf::default(),
        sent: VecDeque::new(),
        outstanding: 0,
        bin: InBuf::new(),
        reader: ReplyReader::new(ReplyShape::Line, shared.cfg.limits),
        reading: false,
        sizes: Vec::new(),
        actual: Vec::new(),
        cout: OutBuf::default(),
        released: Vec::new(),
        timer: Box::pin(tokio::time::sleep(Duration::ZERO)),
        armed: None,
        backend_since: None,
        backend_moved: false,
        client_since: None,
        client_moved: false,
    };
    let r = std::future::poll_fn(|cx| conn.poll_run(cx)).await;
    conn.abandon();
    // what is ready for the client goes out, then the connection closes
    let flushed = match r {
        Err(ConnError::Client(_) | ConnError::ClientTimeout(_)) => Ok(()),
        _ => {
            let ct = shared.cfg.client_timeout;
            let out = &conn.cout.buf[conn.cout.at..];
            match tokio::time::timeout(ct, conn.client.write_all(out)).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(ConnError::Client(e)),
                Err(_) => Err(ConnError::ClientTimeout(ct)),
            }
        }
    };
    let _ = conn.client.shutdown().await;
    r.and(flushed)
}

/// One client connection and its backend connection, driven by one task: every socket is
/// polled where the state says it matters, so a request costs no channel hop, no task
/// switch, no allocation on its way (but its cost vector) and no timer of its own.
struct Conn<'a> {
    shared: &'a Shared,
    flow: usize,
    charger: &'a Charger,
    depth: usize,
    client: TcpStream,
    backend: TcpStream,
    /// the client's bytes not parsed yet
    cin: InBuf,
    /// bytes of a rejected value still to skip
    swallow: usize,
    /// the client sent its last byte
    eof: bool,
    /// no request is parsed any more (`quit`, a line too long)
    closing: bool,
    /// parsed, behind a request that waits for tokens
    held: VecDeque<Held>,
    /// requests for the backend, batched
    bout: OutBuf,
    /// every request gone (or answered here), in order, until its reply is framed
    sent: VecDeque<Sent>,
    /// `Sent::Backend` in `sent`
    outstanding: usize,
    /// the backend's bytes not framed yet
    bin: InBuf,
    reader: ReplyReader,
    /// `reader` was reset for the reply at the head of `sent`
    reading: bool,
    /// values read in the head reply [bytes]
    sizes: Vec<usize>,
    /// the head reply's real costs per hop
    actual: Vec<f64>,
    /// replies for the client, batched
    cout: OutBuf,
    released: Vec<(Waker, Ticket)>,
    /// the connection's one timer, for the backend's and the client's deadlines, re-armed
    /// only when it fires or must fire earlier
    timer: Pin<Box<tokio::time::Sleep>>,
    armed: Option<Instant>,
    /// since when the backend has been busy without progress (set when the task idles)
    backend_since: Option<Instant>,
    backend_moved: bool,
    /// since when replies have waited for the client without progress
    client_since: Option<Instant>,
    client_moved: bool,
}

impl Conn<'_> {
    fn poll_run(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ConnError>> {
        loop {
            let mut progress = false;
            // requests in
            if !self.eof && !self.closing && self.held.len() + self.sent.len() < self.depth {
                match self.cin.poll_fill(&mut self.client, cx) {
                    Poll::Ready(Ok(0)) => {
                        self.eof = true;
                        progress = true;
                    }
                    Poll::Ready(Ok(_)) => progress = true,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(ConnError::Client(e))),
                    Poll::Pending => {}
                }
            }
            progress |= self.parse();
            match self.release(cx) {
                Ok(p) => progress |= p,
                Err(e) => return Poll::Ready(Err(e)),
            }
            // requests out, every complete one at once
            if self.bout.pending() > 0 {
                let mut moved = false;
                if let Poll::Ready(Err(e)) = self.bout.poll_flush(&mut self.backend, cx, &mut moved)
                {
                    return self.fail(format!("SERVER_ERROR backend connection lost: {e}"));
                }
                self.backend_moved |= moved;
                progress |= moved;
            }
            // replies in, framed in request order
            if self.outstanding > 0 && self.cout.pending() < CLIENT_BACKLOG {
                match self.bin.poll_fill(&mut self.backend, cx) {
                    Poll::Ready(Ok(0)) => {
                        return self.fail("SERVER_ERROR backend connection lost".into());
                    }
                    Poll::Ready(Ok(_)) => {
                        self.backend_moved = true;
                        progress = true;
                    }
                    Poll::Ready(Err(e)) => {
                        return self.fail(format!("SERVER_ERROR backend connection lost: {e}"));
                    }
                    Poll::Pending => {}
                }
            }
            match self.frame() {
                Ok(p) => progress |= p,
                Err(msg) => return self.fail(msg),
            }
            // replies out
            if self.cout.pending() > 0 {
                let mut moved = false;
                match self.cout.poll_flush(&mut self.client, cx, &mut moved) {
                    Poll::Ready(Ok(())) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(ConnError::Client(e))),
                    Poll::Pending => {}
                }
                self.client_moved |= moved;
                progress |= moved;
            }
            // the end: `quit` reached, or the client is done and everything answered
            if matches!(self.sent.front(), Some(Sent::Close)) {
                return Poll::Ready(Ok(()));
            }
            if (self.eof || self.closing) && self.held.is_empty() && self.sent.is_empty() {
                let more = self.eof
                    && !self.closing
                    && self.swallow == 0
                    && parse_request(self.cin.data(), &self.shared.cfg.limits).is_some();
                if !more {
                    return Poll::Ready(Ok(()));
                }
                progress = true;
            }
            if progress {
                continue;
            }
            match self.poll_deadlines(cx) {
                Poll::Ready(Some(r)) => return Poll::Ready(r),
                Poll::Ready(None) => continue,
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// The task is idle: a backend busy without progress for the backend timeout fails the
    /// requests waiting for it; a client that leaves its replies unread for the client
    /// timeout is dropped. `Ready(None)`: look again.
    fn poll_deadlines(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<(), ConnError>>> {
        // the backend is waited for only while replies are read (not behind a slow client)
        let backend_busy = (self.outstanding > 0 && self.cout.pending() < CLIENT_BACKLOG)
            || self.bout.pending() > 0;
        let client_stuck = self.cout.pending() > 0;
        if !backend_busy {
            self.backend_since = None;
        }
        if !client_stuck {
            self.client_since = None;
        }
        if !backend_busy && !client_stuck {
            return Poll::Pending;
        }
        let now = Instant::now();
        if backend_busy && (self.backend_moved || self.backend_since.is_none()) {
            self.backend_since = Some(now);
        }
        if client_stuck && (self.client_moved || self.client_since.is_none()) {
            self.client_since = Some(now);
        }
        self.backend_moved = false;
        self.client_moved = false;
        let (bt, ct) = (
            self.shared.cfg.backend_timeout,
            self.shared.cfg.client_timeout,
        );
        let backend_due = self.backend_since.map(|t| t + bt);
        let client_due = self.client_since.map(|t| t + ct);
        if backend_due.is_some_and(|d| d <= now) {
            let msg = if self.bout.pending() > 0 {
                format!("SERVER_ERROR backend timeout: not accepting requests within {bt:?}")
            } else {
                format!("SERVER_ERROR backend timeout: no reply within {bt:?}")
            };
            return self.fail(msg).map(Some);
        }
        if client_due.is_some_and(|d| d <= now) {
            return Poll::Ready(Some(Err(ConnError::ClientTimeout(ct))));
        }
        let Some(due) = backend_due.into_iter().chain(client_due).min() else {
            return Poll::Pending;
        };
        if self.armed.is_none_or(|a| a > due || a <= now) {
            self.timer.as_mut().reset(due);
            self.armed = Some(due);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.armed = None;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    /// Puts `s` in the reply order: behind the held requests if any wait.
    fn push(&mut self, s: Sent) {
        if self.held.is_empty() {
            self.sent.push_back(s);
        } else {
            self.held.push_back(Held::Other(s));
        }
    }

    /// Parses what is complete in the client's bytes, up to the depth: charges, submits and
    /// forwards (or holds) requests, answers rejected ones.
    fn parse(&mut self) -> bool {
        let mut progress = false;
        loop {
            if self.swallow > 0 {
                let n = self.swallow.min(self.cin.data().len());
                self.cin.consume(n);
                self.swallow -= n;
                progress |= n > 0;
                if self.swallow > 0 {
                    break;
                }
            }
            if self.closing || self.held.len() + self.sent.len() >= self.depth {
                break;
            }
            let Some(parsed) = parse_request(self.cin.data(), &self.shared.cfg.limits) else {
                break;
            };
            progress = true;
            match parsed {
                Parse::Request(p) if p.command == Command::Quit => {
                    self.cin.consume(p.len);
                    self.push(Sent::Close);
                    self.closing = true;
                }
                Parse::Request(p) => self.submit(&p),
                Parse::Reject { len, reason, close } => {
                    let n = len.min(self.cin.data().len());
                    self.cin.consume(n);
                    self.swallow = len - n;
                    self.push(Sent::Local(Bytes::from(reason.reply().into_owned())));
                    if close || reason == Rejection::LineTooLong {
                        self.push(Sent::Close);
                        self.closing = true;
                    }
                }
            }
        }
        progress
    }

    /// Charges request `p` (at the front of the client's bytes) and hands it to the core:
    /// admitted with nothing held, it is appended to the backend's bytes; otherwise held.
    fn submit(&mut self, p: &Parsed) {
        let mut wait = None;
        let (admit, reads) = {
            let now = self.shared.now();
            let mut core = self.shared.core();
            let mut costs = core.costs_buffer();
            let reads = self.charger.charge_into(p, &mut costs);
            let admit = core.submit(
                now,
                self.flow,
                costs,
                || {
                    let (gtx, grx) = oneshot::channel();
                    wait = Some(grx);
                    gtx
                },
                &mut self.released,
            );
            (admit, reads)
        };
        self.shared.open(&mut self.released);
        let reply = ReplyOf {
            shape: p.command.reply_shape(),
            suppressed: p.quiet.and_then(|_| p.command.quiet_suppresses()),
            reads,
        };
        let gate = match admit {
            Ok(Admit::Now(t)) if self.held.is_empty() => {
                // the common path: straight into the backend's bytes
                without_quiet(&self.cin.data()[..p.len], p.quiet, &mut self.bout.buf);
                self.cin.consume(p.len);
                self.sent.push_back(Sent::Backend(reply, t));
                self.outstanding += 1;
                return;
            }
            Ok(Admit::Now(t)) => Gate::Open(t),
            Ok(Admit::Queued) => {
                self.shared.wake.notify_one();
                match wait {
                    Some(w) => Gate::Wait(w),
                    None => {
                        // the core queues only with an item; refuse rather than lose order
                        tracing::warn!("the enforcer queued a request without its gate");
                        self.cin.consume(p.len);
                        self.push(Sent::Local(Bytes::from_static(
                            b"SERVER_ERROR enforcer error\r\n",
                        )));
                        return;
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "enforcer refused a request");
                self.cin.consume(p.len);
                self.push(Sent::Local(Bytes::from_static(
                    b"SERVER_ERROR enforcer error\r\n",
                )));
                return;
            }
        };
        let mut bytes = Vec::with_capacity(p.len);
        without_quiet(&self.cin.data()[..p.len], p.quiet, &mut bytes);
        self.cin.consume(p.len);
        self.held.push_back(Held::Request {
            bytes: Bytes::from(bytes),
            reply,
            gate,
        });
    }

    /// Forwards held requests whose gates opened, in order.
    fn release(&mut self, cx: &mut Context<'_>) -> Result<bool, ConnError> {
        let mut progress = false;
        loop {
            let opened = match self.held.front_mut() {
                None => break,
                Some(Held::Request {
                    gate: Gate::Wait(rx),
                    ..
                }) => match Pin::new(rx).poll(cx) {
                    Poll::Ready(Ok(t)) => Some(t),
                    Poll::Ready(Err(_)) => return Err(ConnError::Protocol("gate dropped")),
                    Poll::Pending => break,
                },
                Some(_) => None,
            };
            let Some(h) = self.held.pop_front() else {
                break;
            };
            progress = true;
            match (h, opened) {
                (Held::Request { bytes, reply, .. }, Some(t))
                | (
                    Held::Request {
                        bytes,
                        reply,
                        gate: Gate::Open(t),
                    },
                    None,
                ) => {
                    self.bout.extend(&bytes);
                    self.sent.push_back(Sent::Backend(reply, t));
                    self.outstanding += 1;
                }
                (Held::Request { .. }, None) => {
                    return Err(ConnError::Protocol("a held request lost its gate"));
                }
                (Held::Other(s), _) => self.sent.push_back(s),
            }
        }
        Ok(progress)
    }

    /// Frames the backend's replies in request order into the client's bytes, settles each
    /// request's costs when its reply is complete. `Err`: the reply line for a malformed reply.
    fn frame(&mut self) -> Result<bool, String> {
        let mut progress = false;
        while self.cout.pending() < CLIENT_BACKLOG {
            let reply = match self.sent.front() {
                None | Some(Sent::Close) => break,
                Some(Sent::Local(_)) => {
                    if let Some(Sent::Local(b)) = self.sent.pop_front() {
                        self.cout.extend(&b);
                    }
                    progress = true;
                    continue;
                }
                Some(Sent::Backend(reply, _)) => *reply,
            };
            if !self.reading {
                self.reader.reset(reply.shape);
                self.sizes.clear();
                self.reading = true;
            }
            let c = match self.reader.next_chunk(self.bin.data()) {
                Ok(Some(c)) => c,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "malformed reply from the backend");
                    return Err(format!(
                        "SERVER_ERROR malformed reply from the backend: {e}"
                    ));
                }
            };
            progress = true;
            // a value read: every item of a retrieval, the `VA` of an `mg`
            let value = (reply.shape == ReplyShape::Retrieval && !c.done && !c.error)
                || (reply.shape == ReplyShape::Meta && c.code == *b"VA" && reply.reads > 0);
            if value {
                self.sizes.push(c.value_bytes);
            }
            let drop_it = match reply.suppressed {
                Some(Suppressed::AllButErrors) => !c.error,
                Some(Suppressed::Code(code)) => c.done && !c.error && c.code == code,
                None => false,
            };
            if !drop_it {
                self.cout.extend(&self.bin.data()[..c.len]);
            }
            self.bin.consume(c.len);
            if c.done {
                self.reading = false;
                if let Some(Sent::Backend(reply, ticket)) = self.sent.pop_front() {
                    self.outstanding -= 1;
                    self.settle(reply, ticket);
                }
            }
        }
        Ok(progress)
    }

    /// A reply is complete: the request's real costs go to the core.
    fn settle(&mut self, reply: ReplyOf, ticket: Ticket) {
        if reply.reads > 0 {
            self.charger
                .settle_into(reply.reads, &self.sizes, &mut self.actual);
        }
        let actual = (reply.reads > 0).then_some(self.actual.as_slice());
        let now = self.shared.now();
        let r = self
            .shared
            .core()
            .complete(now, ticket, actual, &mut self.released);
        if let Err(e) = r {
            tracing::warn!(error = %e, "completing a request");
        }
        self.shared.open(&mut self.released);
    }

    /// The backend failed: every request waiting for it gets `msg` (the proxy's own replies
    /// in between keep their places), then the connection closes.
    fn fail<T>(&mut self, msg: String) -> Poll<Result<T, ConnError>> {
        let line = format!("{msg}\r\n");
        while let Some(s) = self.sent.pop_front() {
            match s {
                Sent::Local(b) => self.cout.extend(&b),
                Sent::Backend(_, t) => {
                    self.cout.extend(line.as_bytes());
                    complete_unanswered(self.shared, t);
                }
                Sent::Close => break,
            }
        }
        self.outstanding = 0;
        self.reading = false;
        Poll::Ready(Err(ConnError::Backend(msg)))
    }

    /// The connection ends: requests released to it and never answered complete for the
    /// core (so nothing stays outstanding), queued ones are cancelled by their closed gates.
    fn abandon(&mut self) {
        for s in std::mem::take(&mut self.sent) {
            if let Sent::Backend(_, t) = s {
                complete_unanswered(self.shared, t);
            }
        }
        self.outstanding = 0;
        for h in std::mem::take(&mut self.held) {
            match h {
                Held::Request {
                    gate: Gate::Open(t),
                    ..
                } => complete_unanswered(self.shared, t),
                Held::Request {
                    gate: Gate::Wait(mut rx),
                    ..
                } => {
                    rx.close();
                    if let Ok(t) = rx.try_recv() {
                        complete_unanswered(self.shared, t);
                    }
                }
                Held::Other(_) => {}
            }
        }
    }
}

fn complete_unanswered(shared: &Shared, ticket: Ticket) {
    let mut released = Vec::new();
    let now = shared.now();
    let _ = shared.core().complete(now, ticket, None, &mut released);
    shared.open(&mut released);
}
