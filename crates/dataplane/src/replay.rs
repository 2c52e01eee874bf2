//! Open-loop replay of tenants' requests against memcached: each request is a `get` or a
//! `set` of its trace size, sent when it is due whatever the state of earlier ones, and timed
//! from when it was due (no coordinated omission).
//!
//! A [`HostReplay`] is one client host: a thread that enters the host's network namespace and
//! runs a current-thread tokio runtime, so every socket it opens belongs to that host. Each
//! [`TenantReplay`] on it has a dispatcher task that sleeps until a request is due and hands
//! it to a task of its own; that task takes an idle connection of the tenant (or opens one,
//! bound to the tenant's address and marked with its IP_TOS), sends, reads the reply and
//! records `completion − due` into HdrHistograms (whole run and per window). One request per
//! connection at a time: a slow reply holds its own connection only, so it never delays the
//! next send; a tenant opens at most [`ReplayOptions::max_connections`] (beyond that a request
//! waits for one, and the wait counts in its latency). Every request has a deadline (due +
//! [`ReplayOptions::timeout`]): past it the request counts as timed out with the timeout as its
//! latency, and its connection is closed. The run ends when every request has completed or
//! timed out, or when the [`Control`] asks it to stop, so it is bounded in count and in time.
//!
//! Keys: a value of `n` bytes is stored under [`key`]`(n)` (`v<n>`); [`preload`] sets every
//! size a replay will `get`, and a `set` writes the same key, so every `get` hits a value of
//! exactly its size (a miss or a wrong size is counted as an error).
//!
//! The memcached protocol is [`crate::memcache`]'s client. What lives elsewhere: which tenants
//! run where and when (the testbed crate), the servers themselves ([`crate::memcache::server`]),
//! namespaces ([`crate::netns`]).

use crate::error::ReplayError;
use crate::memcache::{Client, MemcacheError, Reply, ReplyShape, Request};
use crate::netns;
use crate::probe::stats::new_histogram;
use crate::probe::Control;
use hdrhistogram::Histogram;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The key under which a value of `size_bytes` is stored.
pub fn key(size_bytes: u32) -> String {
    format!("v{size_bytes}")
}

/// Largest value a replay reads or writes [bytes] (memcached's item size limit must be raised
/// above its default 1 MiB for values this large plus their item header).
pub const MAX_VALUE_BYTES: u32 = 1 << 20;

/// One request of a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayRequest {
    /// when it is due, after the replay's start [ns of real time]
    pub due_ns: u64,
    /// the SLO window its latency counts in
    pub window: u32,
    /// `get` (true) or `set` (false)
    pub read: bool,
    /// value size [bytes], 1 to [`MAX_VALUE_BYTES`]
    pub size_bytes: u32,
}

/// One tenant's requests and where they go.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantReplay {
    pub name: String,
    /// memcached's address
    pub server: SocketAddr,
    /// the tenant's own address to send from (`None`: the host's)
    pub source: Option<Ipv4Addr>,
    /// IP_TOS byte of its packets (its priority's DSCP)
    pub tos: u8,
    /// sorted by `due_ns`
    pub requests: Vec<ReplayRequest>,
}

/// One client host: its namespace and its tenants.
#[derive(Debug, Clone, PartialEq)]
pub struct HostReplay {
    /// the namespace the host's thread enters (`None`: the caller's)
    pub netns: Option<String>,
    pub tenants: Vec<TenantReplay>,
}

/// How a replay runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// recorded latency = measured latency × this (a replay slowed down by 1/S records its
    /// latencies × S, in the trace's time)
    pub latency_scale: f64,
    /// a request not complete this long after it was due has timed out [real time]
    pub timeout: Duration,
    /// most connections a tenant opens
    pub max_connections: usize,
    /// connections each tenant opens before the start
    pub initial_connections: usize,
    /// from the moment every host is ready to the replay's start
    pub lead_in: Duration,
    /// the nice value of the client threads (−20 highest, 0 the default, 19 lowest);
    /// `None`: inherited. A testbed on a shared machine raises its clients (and servers)
    /// above unrelated work so that they send when due, as dedicated hosts would
    pub nice: Option<i32>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            latency_scale: 1.0,
            timeout: Duration::from_secs(10),
            max_connections: 256,
            initial_connections: 4,
            lead_in: Duration::from_millis(200),
            nice: None,
        }
    }
}

impl ReplayOptions {
    fn validate(&self) -> Result<(), ReplayError> {
        let bad = |what: String| Err(ReplayError::Options(what));
        if !(self.latency_scale.is_finite() && self.latency_scale > 0.0) {
            return bad(format!(
                "latency scale {} must be a finite factor > 0",
                self.latency_scale
            ));
        }
        if self.timeout.is_zero() {
            return bad("the request timeout must be positive".into());
        }
        if self.max_connections == 0 || self.initial_connections > self.max_connections {
            return bad(format!(
                "{} initial and {} most connections per tenant; use at least 1 connection and \
                 no more initial than most",
                self.initial_connections, self.max_connections
            ));
        }
        Ok(())
    }
}

/// What one tenant's replay measured.
#[derive(Debug, Clone)]
pub struct TenantOutcome {
    pub name: String,
    /// requests sent (all of them unless the run was stopped)
    pub sent: u64,
    /// requests answered as expected (a value of the right size, `STORED`)
    pub replies: u64,
    /// requests that failed: an error reply, a miss, a wrong size, a broken connection
    pub errors: u64,
    /// requests without an answer by their deadline
    pub timeouts: u64,
    /// the first error's description
    pub first_error: Option<String>,
    /// latency of every request (timeouts at the timeout), × the latency scale [ns]
    pub latency: Histogram<u64>,
    /// the same per window, by window number
    pub windows: BTreeMap<u32, Histogram<u64>>,
    /// how late each request was sent after it was due [ns of real time]
    pub lateness: Histogram<u64>,
    /// connections opened
    pub connections: u64,
    /// most requests in flight at once
    pub max_in_flight: u64,
}

impl TenantOutcome {
    fn new(name: String) -> TenantOutcome {
        TenantOutcome {
            name,
            sent: 0,
            replies: 0,
            errors: 0,
            timeouts: 0,
            first_error: None,
            latency: new_histogram(),
            windows: BTreeMap::new(),
            lateness: new_histogram(),
            connections: 0,
            max_in_flight: 0,
        }
    }

    fn record(&mut self, window: u32, latency_ns: u64) {
        self.latency.saturating_record(latency_ns.max(1));
        self.windows
            .entry(window)
            .or_insert_with(new_histogram)
            .saturating_record(latency_ns.max(1));
    }

    fn fail(&mut self, what: String) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(what);
        }
    }
}

/// What a replay measured.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// per tenant, hosts in order and their tenants in order
    pub tenants: Vec<TenantOutcome>,
    /// from the start to the last completion [s of real time]
    pub wall_s: f64,
    /// CPU time of this process over the same span (user + system) [s]
    pub cpu_s: f64,
}

/// Replays every host's tenants at once; see the module docs. Every tenant first opens its
/// initial connections (a failure there is an error: the server cannot be reached), then all
/// start together.
pub fn run(
    hosts: Vec<HostReplay>,
    opts: &ReplayOptions,
    ctl: &Arc<Control>,
) -> Result<ReplayOutcome, ReplayError> {
    opts.validate()?;
    for t in hosts.iter().flat_map(|h| &h.tenants) {
        if let Some(r) = t
            .requests
            .iter()
            .find(|r| r.size_bytes == 0 || r.size_bytes > MAX_VALUE_BYTES)
        {
            return Err(ReplayError::Options(format!(
                "tenant {:?}: a request of {} bytes; values are 1 to {MAX_VALUE_BYTES} bytes",
                t.name, r.size_bytes
            )));
        }
        if t.requests.windows(2).any(|w| w[0].due_ns > w[1].due_ns) {
            return Err(ReplayError::Options(format!(
                "tenant {:?}: requests are not sorted by due time",
                t.name
            )));
        }
    }
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let n = hosts.len();
    let mut starts = Vec::with_capacity(n);
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (i, host) in hosts.into_iter().enumerate() {
            let (start_tx, start_rx) = std::sync::mpsc::channel::<Option<Instant>>();
            starts.push(start_tx);
            let ready = ready_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("replay-host-{i}"))
                .spawn_scoped(scope, move || host_thread(host, opts, ready, start_rx, ctl));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    for s in &starts {
                        let _ = s.send(None);
                    }
                    return Err(ReplayError::Thread(e));
                }
            }
        }
        drop(ready_tx);
        // every host ready (or failed: its thread returns and drops its sender)
        let ready = ready_rx.iter().take(n).count();
        let start = (ready == n).then(|| Instant::now() + opts.lead_in);
        let cpu0 = cpu_seconds();
        for s in &starts {
            let _ = s.send(start);
        }
        let mut tenants = Vec::new();
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(t)) => tenants.extend(t),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(ReplayError::Panicked);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let Some(start) = start else {
            return Err(ReplayError::Panicked);
        };
        if ctl.stopped() {
            return Err(ReplayError::Interrupted);
        }
        Ok(ReplayOutcome {
            tenants,
            wall_s: start.elapsed().as_secs_f64(),
            cpu_s: cpu_seconds() - cpu0,
        })
    })
}

/// Sets the nice value of thread `tid` (0: the calling thread) to `nice` (Linux: priorities
/// are per thread; a runtime's current thread is its own).
pub fn set_nice(tid: u32, nice: i32) -> std::io::Result<()> {
    // SAFETY: setpriority has no memory preconditions.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// CPU time of this process so far (user + system) [s].
pub fn cpu_seconds() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a rusage into the valid pointer.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    if rc != 0 {
        return 0.0;
    }
    // SAFETY: initialised by the successful call above.
    let u = unsafe { u.assume_init() };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    s(u.ru_utime) + s(u.ru_stime)
}

fn runtime() -> Result<tokio::runtime::Runtime, ReplayError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ReplayError::Thread)
}

fn host_thread(
    host: HostReplay,
    opts: &ReplayOptions,
    ready: std::sync::mpsc::Sender<()>,
    start: std::sync::mpsc::Receiver<Option<Instant>>,
    ctl: &Arc<Control>,
) -> Result<Vec<TenantOutcome>, ReplayError> {
    if let Some(ns) = &host.netns {
        netns::enter(ns)?;
    }
    if let Some(nice) = opts.nice {
        if let Err(e) = set_nice(0, nice) {
            tracing::warn!(nice, error = %e, "cannot change the client thread's priority");
        }
    }
    let rt = runtime()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let mut pools = Vec::with_capacity(host.tenants.len());
        for t in &host.tenants {
            let pool = Rc::new(Pool::new(t, opts.max_connections));
            for _ in 0..opts.initial_connections {
                let conn = pool
                    .open(opts.timeout)
                    .await
                    .map_err(|e| ReplayError::Connect {
                        tenant: t.name.clone(),
                        server: t.server,
                        message: e,
                    })?;
                pool.put(conn);
            }
            pools.push(pool);
        }
        let _ = ready.send(());
        drop(ready);
        // the other hosts connect meanwhile; nothing runs here until the start
        let Ok(Some(start)) = start.recv() else {
            return Err(ReplayError::Interrupted);
        };
        let mut dispatchers = Vec::with_capacity(pools.len());
        for (t, pool) in host.tenants.into_iter().zip(pools) {
            dispatchers.push(tokio::task::spawn_local(tenant(
                t,
                pool,
                start,
                opts.clone(),
                Arc::clone(ctl),
            )));
        }
        let mut out = Vec::with_capacity(dispatchers.len());
        for d in dispatchers {
            out.push(d.await.map_err(|_| ReplayError::Panicked)?);
        }
        Ok(out)
    })
}

/// A tenant's connections.
struct Pool {
    server: SocketAddr,
    source: Option<Ipv4Addr>,
    tos: u8,
    idle: RefCell<Vec<Conn>>,
    /// one permit per request in flight, at most `max_connections`
    slots: tokio::sync::Semaphore,
    opened: std::cell::Cell<u64>,
}

impl Pool {
    fn new(t: &TenantReplay, max_connections: usize) -> Pool {
        Pool {
            server: t.server,
            source: t.source,
            tos: t.tos,
            idle: RefCell::new(Vec::new()),
            slots: tokio::sync::Semaphore::new(max_connections),
            opened: std::cell::Cell::new(0),
        }
    }

    async fn open(&self, timeout: Duration) -> Result<Conn, String> {
        let conn = tokio::time::timeout(
            timeout,
            Conn::connect(self.server, self.source, self.tos, timeout),
        )
        .await
        .map_err(|_| format!("connecting timed out after {timeout:?}"))??;
        self.opened.set(self.opened.get() + 1);
        Ok(conn)
    }

    fn take(&self) -> Option<Conn> {
        self.idle.borrow_mut().pop()
    }

    fn put(&self, c: Conn) {
        self.idle.borrow_mut().push(c);
    }
}

/// One tenant's dispatcher: sends each request when due and collects the outcome.
async fn tenant(
    t: TenantReplay,
    pool: Rc<Pool>,
    start: Instant,
    opts: ReplayOptions,
    ctl: Arc<Control>,
) -> TenantOutcome {
    let out = Rc::new(RefCell::new(TenantOutcome::new(t.name.clone())));
    let in_flight = Rc::new(std::cell::Cell::new(0u64));
    let mut tasks = tokio::task::JoinSet::new();
    for &r in &t.requests {
        if ctl.stopped() {
            break;
        }
        let due = start + Duration::from_nanos(r.due_ns);
        tokio::time::sleep_until(due.into()).await;
        let late = Instant::now().saturating_duration_since(due);
        {
            let mut o = out.borrow_mut();
            o.sent += 1;
            o.lateness.saturating_record(late.as_nanos() as u64);
            let now = in_flight.get() + 1;
            in_flight.set(now);
            o.max_in_flight = o.max_in_flight.max(now);
        }
        tasks.spawn_local(exchange(
            r,
            due,
            Rc::clone(&pool),
            Rc::clone(&out),
            Rc::clone(&in_flight),
            opts.clone(),
        ));
        // finished tasks are collected as we go, so memory follows what is in flight
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let mut o = out.replace(TenantOutcome::new(String::new()));
    o.connections = pool.opened.get();
    o
}

/// One request: a connection, the exchange, the record.
async fn exchange(
    r: ReplayRequest,
    due: Instant,
    pool: Rc<Pool>,
    out: Rc<RefCell<TenantOutcome>>,
    in_flight: Rc<std::cell::Cell<u64>>,
    opts: ReplayOptions,
) {
    let deadline = tokio::time::Instant::from_std(due + opts.timeout);
    let scaled = |d: Duration| (d.as_nanos() as f64 * opts.latency_scale).round() as u64;
    let result = tokio::time::timeout_at(deadline, async {
        let _slot = pool
            .slots
            .acquire()
            .await
            .map_err(|e| format!("connection slots closed: {e}"))?;
        let mut conn = match pool.take() {
            Some(c) => c,
            None => pool.open(opts.timeout).await?,
        };
        let res = if r.read {
            conn.get(r.size_bytes).await
        } else {
            conn.set(r.size_bytes).await
        };
        if res.is_ok() {
            pool.put(conn);
        }
        res
    })
    .await;
    in_flight.set(in_flight.get().saturating_sub(1));
    // the connection's own timeouts (connect, read, write) are the request's: an error at or
    // past the deadline is the timeout, whichever timer a late wake-up found expired first
    let result = match result {
        Ok(Err(_)) if tokio::time::Instant::now() >= deadline => Err(()),
        Ok(r) => Ok(r),
        Err(_) => Err(()),
    };
    let mut o = out.borrow_mut();
    match result {
        Ok(Ok(())) => {
            o.replies += 1;
            o.record(r.window, scaled(due.elapsed()));
        }
        Ok(Err(e)) => {
            let what = format!(
                "{} of {} bytes: {e}",
                if r.read { "get" } else { "set" },
                r.size_bytes
            );
            o.fail(what);
            o.record(r.window, scaled(due.elapsed()));
        }
        Err(_) => {
            o.timeouts += 1;
            o.record(r.window, scaled(opts.timeout));
        }
    }
}

/// Zeros written as the data of every `set`.
static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];

/// One memcached connection ([`Client`]), one request at a time.
pub(crate) struct Conn(Client);

impl Conn {
    /// Connects to `server` from `source` (if given) with IP_TOS `tos`; every later read and
    /// write times out after `timeout`.
    pub(crate) async fn connect(
        server: SocketAddr,
        source: Option<Ipv4Addr>,
        tos: u8,
        timeout: Duration,
    ) -> Result<Conn, String> {
        let sock = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
        crate::tos::set_tos(&sock, tos).map_err(|e| format!("cannot set IP_TOS: {e}"))?;
        if let Some(ip) = source {
            sock.bind(SocketAddr::new(ip.into(), 0))
                .map_err(|e| format!("cannot bind {ip}: {e}"))?;
        }
        let stream = sock.connect(server).await.map_err(|e| e.to_string())?;
        Client::from_stream(stream, timeout)
            .map(Conn)
            .map_err(|e| e.to_string())
    }

    /// `get v<size>`; the reply must be the value of exactly `size` bytes.
    pub(crate) async fn get(&mut self, size: u32) -> Result<(), String> {
        let c = &mut self.0;
        c.send(&Request::get(key(size)))
            .await
            .map_err(|e| e.to_string())?;
        let f = c.recv_frame().await.map_err(|e| e.to_string())?;
        match (f.error, f.values, f.value_bytes) {
            (true, ..) => Err("an error reply".into()),
            (false, 0, _) => Err(format!("miss: key {} is not stored", key(size))),
            (false, 1, n) if n == size as usize => Ok(()),
            (false, v, n) => Err(format!("{v} values of {n} bytes, expected one of {size}")),
        }
    }

    /// `set v<size> 0 0 <size>` with `size` zero bytes; the reply must be `STORED`.
    pub(crate) async fn set(&mut self, size: u32) -> Result<(), String> {
        let c = &mut self.0;
        let head = format!("set {} 0 0 {size}\r\n", key(size));
        let e = |e: MemcacheError| e.to_string();
        c.send_raw(head.as_bytes(), None).await.map_err(e)?;
        let mut left = size as usize;
        while left > 0 {
            let n = left.min(ZEROS.len());
            c.send_raw(&ZEROS[..n], None).await.map_err(e)?;
            left -= n;
        }
        c.send_raw(b"\r\n", Some(ReplyShape::Line))
            .await
            .map_err(e)?;
        match c.recv().await.map_err(e)? {
            Reply::Status(s) if s == "STORED" => Ok(()),
            other => Err(format!("expected STORED, got {other:?}")),
        }
    }
}

/// Stores a value of every size in `sizes` under [`key`] on the memcached at `server`,
/// reached from namespace `ns`, and reads each back. Blocks until done (at most `timeout` per
/// value).
pub fn preload(
    ns: Option<&str>,
    server: SocketAddr,
    sizes: &[u32],
    timeout: Duration,
) -> Result<(), ReplayError> {
    if let Some(&s) = sizes.iter().find(|&&s| s == 0 || s > MAX_VALUE_BYTES) {
        return Err(ReplayError::Options(format!(
            "cannot preload a value of {s} bytes; values are 1 to {MAX_VALUE_BYTES} bytes"
        )));
    }
    let ns = ns.map(str::to_string);
    let sizes = sizes.to_vec();
    let err = move |message: String| ReplayError::Preload { server, message };
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("replay-preload".into())
            .spawn_scoped(scope, || {
                if let Some(ns) = &ns {
                    netns::enter(ns)?;
                }
                runtime()?.block_on(async {
                    let mut conn =
                        tokio::time::timeout(timeout, Conn::connect(server, None, 0, timeout))
                            .await
                            .map_err(|_| err(format!("connecting timed out after {timeout:?}")))?
                            .map_err(|e| err(format!("cannot connect: {e}")))?;
                    for &s in &sizes {
                        let step = async {
                            conn.set(s).await?;
                            conn.get(s).await
                        };
                        tokio::time::timeout(timeout, step)
                            .await
                            .map_err(|_| err(format!("storing {} timed out", key(s))))?
                            .map_err(|e| err(format!("storing {}: {e}", key(s))))?;
                    }
                    Ok(())
                })
            })
            .map_err(ReplayError::Thread)?;
        worker.join().map_err(|_| ReplayError::Panicked)?
    })
}

/// A closed loop of `outstanding` concurrent `get`s of `size_bytes` each, from namespace `ns`
/// and address `source` to `server`, repeated until `until`; returns the completed gets. The
/// aggressor that ignores admission (64 outstanding large requests).
pub fn closed_loop_gets(
    ns: Option<&str>,
    server: SocketAddr,
    source: Option<Ipv4Addr>,
    outstanding: usize,
    size_bytes: u32,
    until: Instant,
    ctl: &Arc<Control>,
) -> Result<u64, ReplayError> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("replay-closed-loop".into())
            .spawn_scoped(scope, || {
                if let Some(ns) = ns {
                    netns::enter(ns)?;
                }
                let rt = runtime()?;
                let local = tokio::task::LocalSet::new();
                let done = Rc::new(std::cell::Cell::new(0u64));
                local.block_on(&rt, async {
                    let mut tasks = tokio::task::JoinSet::new();
                    let deadline = tokio::time::Instant::from_std(until);
                    for _ in 0..outstanding {
                        let done = Rc::clone(&done);
                        let ctl = Arc::clone(ctl);
                        tasks.spawn_local(async move {
                            let _ = tokio::time::timeout_at(deadline, async {
                                let mut conn =
                                    Conn::connect(server, source, 0, Duration::from_secs(60))
                                        .await
                                        .ok()?;
                                while !ctl.stopped() {
                                    conn.get(size_bytes).await.ok()?;
                                    done.set(done.get() + 1);
                                }
                                Some(())
                            })
                            .await;
                        });
                    }
                    while tasks.join_next().await.is_some() {}
                });
                Ok(done.get())
            })
            .map_err(ReplayError::Thread)?;
        worker.join().map_err(|_| ReplayError::Panicked)?
    })
}
