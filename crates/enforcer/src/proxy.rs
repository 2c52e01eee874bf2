//! The enforcer proxy (tokio): memcached clients connect to it, it forwards their requests to
//! one memcached (the appliance) when the enforcer's core lets them go, and their replies back.
//!
//! ```text
//!  client ──► request task: parse (memcache::request) ─ charge (cost) ─ core.submit ─┐
//!     ▲                      wait for the gate, in order; forward to the backend     │ slot per
//!     │                                                                              ▼ request
//!     └──── reply task: frame the backend's replies (memcache::reply), settle costs, ◄─┘
//!                       core.complete; error replies of rejected requests in order
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
//! is bounded by one line, one value and `depth` requests in flight.
//!
//! **Time.** All decisions take `now` from the [`Clock`] given at start: the real monotonic
//! clock in production, a manual one in tests, where [`Proxy::tick`] releases what is due.

use crate::core::{
    Admit, CoreConfig, CoreError, EnforcerCore, FlowSetup, FlowStatus, IntervalReport, Ticket,
};
use crate::cost::Charger;
use bytes::{Buf, Bytes, BytesMut};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tailbound_dataplane::clock::Clock;
use tailbound_dataplane::memcache::reply::ReplyReader;
use tailbound_dataplane::memcache::request::{Rejection, Suppressed};
use tailbound_dataplane::memcache::{parse_request, Command, Limits, Parse, ReplyShape};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;

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
    fn open(&self, released: Vec<(Waker, Ticket)>) {
        let mut orphans = Vec::new();
        for (gate, ticket) in released {
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
        self.open(released);
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
        self.shared.open(released);
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
        self.shared.open(released);
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

/// What the reply task must do for each request, in order.
enum Slot {
    /// the proxy's own reply (a rejected request)
    Local(Bytes),
    /// a request sent to the backend
    Backend {
        shape: ReplyShape,
        /// the client asked for a quiet reply: drop what it suppresses
        suppressed: Option<Suppressed>,
        /// keys read (costs settled from the reply)
        reads: u32,
        ticket: Ticket,
    },
    /// `quit`: close after the replies before it
    Quit,
}

/// A parsed request on its way out, in order.
enum Out {
    Local(Bytes),
    Request {
        bytes: Bytes,
        shape: ReplyShape,
        suppressed: Option<Suppressed>,
        reads: u32,
        gate: Gate,
    },
    Quit,
    /// reply, then close (a line too long to resynchronise)
    Close(Bytes),
}

/// Whether a request may go: its ticket, or where its ticket will come from.
enum Gate {
    Open(Ticket),
    Wait(oneshot::Receiver<Ticket>),
}

async fn read_some(
    r: &mut OwnedReadHalf,
    buf: &mut BytesMut,
    closing: &mut watch::Receiver<bool>,
) -> Result<usize, ConnError> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(16 * 1024);
    }
    tokio::select! {
        n = r.read_buf(buf) => n.map_err(ConnError::Client),
        _ = closing.changed() => Ok(0),
    }
}

/// The first request must be memcached's text auth: `set <key> <flags> <exp> <n>` with data
/// `<user> <secret>`. Returns the flow, having answered `STORED`.
async fn authenticate(
    shared: &Shared,
    r: &mut OwnedReadHalf,
    w: &mut OwnedWriteHalf,
    buf: &mut BytesMut,
) -> Result<usize, ConnError> {
    let (_tx, mut never) = watch::channel(false);
    let timeout = shared.cfg.client_timeout;
    let parsed = tokio::time::timeout(timeout, async {
        loop {
            if let Some(p) = parse_request(buf, &shared.cfg.limits) {
                return Ok(p);
            }
            if read_some(r, buf, &mut never).await? == 0 {
                return Err(ConnError::Protocol("closed before authenticating"));
            }
        }
    })
    .await
    .map_err(|_| ConnError::Protocol("no authentication within the client timeout"))??;
    let flow = match &parsed {
        Parse::Request(p) if p.command == Command::Set => {
            let data = &buf[p.line_len..p.line_len + p.data_len];
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
    let _ = tokio::time::timeout(timeout, w.write_all(reply)).await;
    let len = match parsed {
        Parse::Request(p) => p.len,
        Parse::Reject { len, .. } => len,
    };
    buf.advance(len.min(buf.len()));
    flow.ok_or(ConnError::Auth)
}

async fn serve(
    shared: &Arc<Shared>,
    stream: TcpStream,
    identify: Identify,
) -> Result<(), ConnError> {
    let (mut cr, mut cw) = stream.into_split();
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let flow = match identify {
        Identify::Flow(f) => f,
        Identify::Auth => authenticate(shared, &mut cr, &mut cw, &mut buf).await?,
    };
    let backend = shared.cfg.backend;
    let t = shared.cfg.backend_timeout;
    let connected = match tokio::time::timeout(t, TcpStream::connect(backend)).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no connection within {t:?}")),
    };
    let bs = match connected {
        Ok(s) => s,
        Err(e) => {
            // answer the first request, then close (memcached closes after a severe error)
            let (_tx, mut never) = watch::channel(false);
            let _ = tokio::time::timeout(shared.cfg.client_timeout, async {
                while parse_request(&buf, &shared.cfg.limits).is_none() {
                    if read_some(&mut cr, &mut buf, &mut never).await.unwrap_or(0) == 0 {
                        return;
                    }
                }
            })
            .await;
            let msg = format!("SERVER_ERROR backend unavailable: {e}\r\n");
            let _ =
                tokio::time::timeout(shared.cfg.client_timeout, cw.write_all(msg.as_bytes())).await;
            return Err(ConnError::Backend(e));
        }
    };
    let _ = bs.set_nodelay(true);
    let (br, bw) = bs.into_split();
    let (tx, rx) = mpsc::channel::<Slot>(shared.cfg.depth);
    let (closing_tx, closing) = watch::channel(false);
    let replies = tokio::spawn(reply_task(shared.clone(), flow, br, cw, rx, closing_tx));
    let r = request_task(shared, flow, cr, bw, buf, tx, closing).await;
    let r2 = replies.await.unwrap_or(Ok(()));
    r.and(r2)
}

/// Parses, charges, waits for the gates in order and forwards; see the module docs.
async fn request_task(
    shared: &Arc<Shared>,
    flow: usize,
    mut cr: OwnedReadHalf,
    mut bw: OwnedWriteHalf,
    mut buf: BytesMut,
    tx: mpsc::Sender<Slot>,
    mut closing: watch::Receiver<bool>,
) -> Result<(), ConnError> {
    let limits = shared.cfg.limits;
    let charger = shared.flows[flow].charger.clone();
    let mut swallow = 0usize;
    let mut outq: VecDeque<Out> = VecDeque::new();
    let mut wbuf: Vec<Bytes> = Vec::new();
    let mut released = Vec::new();
    let mut eof = false;
    loop {
        if swallow > 0 {
            let n = swallow.min(buf.len());
            buf.advance(n);
            swallow -= n;
        }
        // parse what is complete, up to the depth
        while swallow == 0 && outq.len() < shared.cfg.depth {
            let Some(parsed) = parse_request(&buf, &limits) else {
                break;
            };
            match parsed {
                Parse::Request(p) if p.command == Command::Quit => {
                    buf.advance(p.len);
                    outq.push_back(Out::Quit);
                    eof = true;
                    break;
                }
                Parse::Request(p) => {
                    let charge = charger.charge(&p);
                    let raw = buf.split_to(p.len).freeze();
                    let bytes = match p.quiet {
                        None => raw,
                        Some((a, b)) => {
                            let mut v = BytesMut::with_capacity(raw.len() - (b - a));
                            v.extend_from_slice(&raw[..a]);
                            v.extend_from_slice(&raw[b..]);
                            v.freeze()
                        }
                    };
                    let mut wait = None;
                    let admit = {
                        let now = shared.now();
                        shared.core().submit(
                            now,
                            flow,
                            charge.costs,
                            || {
                                let (gtx, grx) = oneshot::channel();
                                wait = Some(grx);
                                gtx
                            },
                            &mut released,
                        )
                    };
                    shared.open(std::mem::take(&mut released));
                    let gate = match admit {
                        Ok(Admit::Now(t)) => Gate::Open(t),
                        Ok(Admit::Queued) => {
                            shared.wake.notify_one();
                            match wait {
                                Some(w) => Gate::Wait(w),
                                None => return Err(ConnError::Protocol("queued without a gate")),
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "enforcer refused a request");
                            outq.push_back(Out::Local(Bytes::from_static(
                                b"SERVER_ERROR enforcer error\r\n",
                            )));
                            continue;
                        }
                    };
                    outq.push_back(Out::Request {
                        bytes,
                        shape: p.command.reply_shape(),
                        suppressed: p.quiet.and_then(|_| p.command.quiet_suppresses()),
                        reads: charge.reads,
                        gate,
                    });
                }
                Parse::Reject { len, reason, close } => {
                    let n = len.min(buf.len());
                    buf.advance(n);
                    swallow = len - n;
                    let reply = Bytes::from(reason.reply().into_owned());
                    if close || reason == Rejection::LineTooLong {
                        outq.push_back(Out::Close(reply));
                        eof = true;
                        break;
                    }
                    outq.push_back(Out::Local(reply));
                }
            }
        }
        // forward in order; a request waiting for tokens holds back the ones behind it
        while let Some(out) = outq.pop_front() {
            match out {
                Out::Local(b) => send_slot(&tx, Slot::Local(b)).await?,
                Out::Close(b) => {
                    flush(&mut bw, &mut wbuf, shared.cfg.backend_timeout).await?;
                    send_slot(&tx, Slot::Local(b)).await?;
                    send_slot(&tx, Slot::Quit).await?;
                }
                Out::Quit => {
                    flush(&mut bw, &mut wbuf, shared.cfg.backend_timeout).await?;
                    send_slot(&tx, Slot::Quit).await?;
                }
                Out::Request {
                    bytes,
                    shape,
                    suppressed,
                    reads,
                    gate,
                } => {
                    let ticket = match gate {
                        Gate::Open(t) => t,
                        Gate::Wait(rx) => {
                            flush(&mut bw, &mut wbuf, shared.cfg.backend_timeout).await?;
                            tokio::select! {
                                t = rx => t.map_err(|_| ConnError::Protocol("gate dropped"))?,
                                _ = closing.changed() => return Ok(()),
                            }
                        }
                    };
                    let slot = Slot::Backend {
                        shape,
                        suppressed,
                        reads,
                        ticket,
                    };
                    send_slot(&tx, slot).await?;
                    wbuf.push(bytes);
                }
            }
        }
        flush(&mut bw, &mut wbuf, shared.cfg.backend_timeout).await?;
        if eof {
            return Ok(());
        }
        if parse_request(&buf, &limits).is_some() && swallow == 0 {
            continue;
        }
        if read_some(&mut cr, &mut buf, &mut closing).await? == 0 {
            return Ok(());
        }
    }
}

async fn send_slot(tx: &mpsc::Sender<Slot>, slot: Slot) -> Result<(), ConnError> {
    tx.send(slot)
        .await
        .map_err(|_| ConnError::Protocol("reply task ended"))
}

async fn flush(
    bw: &mut OwnedWriteHalf,
    wbuf: &mut Vec<Bytes>,
    t: Duration,
) -> Result<(), ConnError> {
    let write = async {
        match wbuf.len() {
            0 => Ok(()),
            1 => bw.write_all(&wbuf[0]).await,
            _ => {
                let mut all = Vec::with_capacity(wbuf.iter().map(Bytes::len).sum());
                for b in wbuf.iter() {
                    all.extend_from_slice(b);
                }
                bw.write_all(&all).await
            }
        }
    };
    let r = tokio::time::timeout(t, write).await;
    wbuf.clear();
    match r {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(ConnError::Backend(e.to_string())),
        Err(_) => Err(ConnError::Backend(format!(
            "not accepting requests within {t:?}"
        ))),
    }
}

/// Frames the backend's replies in request order, forwards them, settles costs and completes
/// tickets; see the module docs.
async fn reply_task(
    shared: Arc<Shared>,
    flow: usize,
    mut br: OwnedReadHalf,
    mut cw: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Slot>,
    closing: watch::Sender<bool>,
) -> Result<(), ConnError> {
    let limits = shared.cfg.limits;
    let charger = shared.flows[flow].charger.clone();
    let ct = shared.cfg.client_timeout;
    let bt = shared.cfg.backend_timeout;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut out: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut reader = ReplyReader::new(ReplyShape::Line, limits);
    let mut sizes: Vec<usize> = Vec::new();
    let mut released = Vec::new();
    let result: Result<(), ConnError> = 'run: loop {
        let slot = match rx.try_recv() {
            Ok(s) => s,
            Err(mpsc::error::TryRecvError::Disconnected) => break 'run Ok(()),
            Err(mpsc::error::TryRecvError::Empty) => {
                if let Err(e) = write_client(&mut cw, &mut out, ct).await {
                    break 'run Err(e);
                }
                match rx.recv().await {
                    Some(s) => s,
                    None => break 'run Ok(()),
                }
            }
        };
        let (shape, suppressed, reads, ticket) = match slot {
            Slot::Local(b) => {
                out.extend_from_slice(&b);
                continue;
            }
            Slot::Quit => break 'run Ok(()),
            Slot::Backend {
                shape,
                suppressed,
                reads,
                ticket,
            } => (shape, suppressed, reads, ticket),
        };
        reader.reset(shape);
        sizes.clear();
        let mut pending = Some(ticket);
        'reply: loop {
            // a chunk of the reply, or why the backend failed it
            let c = 'chunk: {
                let failure = match reader.next_chunk(&buf) {
                    Ok(Some(c)) => break 'chunk c,
                    Ok(None) => {
                        // the client gets what is ready while the backend works
                        if !out.is_empty() {
                            if let Err(e) = write_client(&mut cw, &mut out, ct).await {
                                break 'run Err(e);
                            }
                        }
                        if buf.capacity() - buf.len() < 16 * 1024 {
                            buf.reserve(64 * 1024);
                        }
                        match tokio::time::timeout(bt, br.read_buf(&mut buf)).await {
                            Ok(Ok(n)) if n > 0 => continue 'reply,
                            Ok(Ok(_)) => "SERVER_ERROR backend connection lost".to_string(),
                            Ok(Err(e)) => format!("SERVER_ERROR backend connection lost: {e}"),
                            Err(_) => {
                                format!("SERVER_ERROR backend timeout: no reply within {bt:?}")
                            }
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "malformed reply from the backend");
                        format!("SERVER_ERROR malformed reply from the backend: {e}")
                    }
                };
                break 'run fail(
                    &shared,
                    &mut cw,
                    &mut out,
                    &mut rx,
                    pending.take(),
                    &failure,
                    ct,
                )
                .await;
            };
            // a value read: every item of a retrieval, the `VA` of an `mg`
            let value = (shape == ReplyShape::Retrieval && !c.done && !c.error)
                || (shape == ReplyShape::Meta && c.code == *b"VA" && reads > 0);
            if value {
                sizes.push(c.value_bytes);
            }
            let drop_it = match suppressed {
                Some(Suppressed::AllButErrors) => !c.error,
                Some(Suppressed::Code(code)) => c.done && !c.error && c.code == code,
                None => false,
            };
            if !drop_it {
                out.extend_from_slice(&buf[..c.len]);
            }
            buf.advance(c.len);
            if out.len() >= 256 * 1024 {
                if let Err(e) = write_client(&mut cw, &mut out, ct).await {
                    break 'run Err(e);
                }
            }
            if c.done {
                break;
            }
        }
        if let Some(t) = pending.take() {
            let actual = (reads > 0).then(|| charger.settle(reads, &sizes));
            let now = shared.now();
            let r = shared
                .core()
                .complete(now, t, actual.as_deref(), &mut released);
            if let Err(e) = r {
                tracing::warn!(error = %e, "completing a request");
            }
            shared.open(std::mem::take(&mut released));
        }
    };
    let flushed = write_client(&mut cw, &mut out, ct).await;
    let _ = cw.shutdown().await;
    let _ = closing.send(true);
    // requests still in the channel never reach the backend now
    rx.close();
    while let Some(slot) = rx.recv().await {
        if let Slot::Backend { ticket, .. } = slot {
            complete_unanswered(&shared, ticket);
        }
    }
    result.and(flushed)
}

fn complete_unanswered(shared: &Shared, ticket: Ticket) {
    let mut released = Vec::new();
    let now = shared.now();
    let _ = shared.core().complete(now, ticket, None, &mut released);
    shared.open(released);
}

/// The backend failed: the current request and every one still queued for a reply get
/// `msg`, then the connection closes.
async fn fail(
    shared: &Shared,
    cw: &mut OwnedWriteHalf,
    out: &mut Vec<u8>,
    rx: &mut mpsc::Receiver<Slot>,
    current: Option<Ticket>,
    msg: &str,
    ct: Duration,
) -> Result<(), ConnError> {
    let line = format!("{msg}\r\n");
    if let Some(t) = current {
        out.extend_from_slice(line.as_bytes());
        complete_unanswered(shared, t);
    }
    while let Ok(slot) = rx.try_recv() {
        match slot {
            Slot::Local(b) => out.extend_from_slice(&b),
            Slot::Backend { ticket, .. } => {
                out.extend_from_slice(line.as_bytes());
                complete_unanswered(shared, ticket);
            }
            Slot::Quit => break,
        }
    }
    write_client(cw, out, ct).await?;
    Err(ConnError::Backend(msg.to_string()))
}

async fn write_client(
    cw: &mut OwnedWriteHalf,
    out: &mut Vec<u8>,
    t: Duration,
) -> Result<(), ConnError> {
    if out.is_empty() {
        return Ok(());
    }
    let r = tokio::time::timeout(t, cw.write_all(out)).await;
    out.clear();
    match r {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(ConnError::Client(e)),
        Err(_) => Err(ConnError::ClientTimeout(t)),
    }
}
