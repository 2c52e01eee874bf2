//! The client pairs: connect, then exchange messages and record each RTT.
//!
//! Closed loop: a pair sends a request, waits for its reply, records `reply − send` and sends
//! the next. Open loop: request `k` of a pair is due at `start + k / rate` (pairs are offset so
//! the aggregate is evenly spaced); a sender sends each request when due and a receiver records
//! `reply − due`, so a slow reply that delays later sends shows up in their RTTs instead of
//! being hidden (no coordinated omission).
//!
//! The measuring loops allocate nothing and take no locks: each pair records into its own
//! histogram, merged at the end. Blocking mode runs each pair on its own thread (two in open
//! loop); non-blocking mode runs the pairs as tokio tasks (current-thread runtime for one pair,
//! otherwise one epoll worker per CPU up to the number of pairs).

use super::stats::new_histogram;
use super::wire::{self, Header};
use super::{pin, Control, IoMode, Load, ProbeSpec, Protocol};
use crate::error::ProbeError;
use crate::netns;
use hdrhistogram::Histogram;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Where and how the client runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// the server's TCP address, or its UDP handshake address
    pub server: SocketAddr,
    /// network namespace to run in; `None` = the caller's
    pub netns: Option<String>,
    /// CPUs for the pairs' threads; empty = unpinned
    pub cpus: Vec<usize>,
    /// TCP: give up when a reply takes longer; UDP: count it lost [s]
    pub timeout_s: f64,
    /// the TOS byte of every request (a tenant's DSCP, [`crate::tos`]); `None`: unmarked
    pub tos: Option<u8>,
}

/// What the pairs measured together.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// measured RTTs [ns]
    pub hist: Histogram<u64>,
    /// measured requests sent
    pub sent: u64,
    /// measured UDP requests without a reply
    pub lost: u64,
    /// wall time from the first send to the last reply [s]
    pub elapsed_s: f64,
}

/// One pair's share of the run.
#[derive(Debug, Clone, Copy)]
struct Job {
    pair: usize,
    count: u64,
    warmup: u64,
    size: usize,
    /// open loop: interval between this pair's requests, and its offset from the common start
    pace: Option<(Duration, Duration)>,
    timeout: Duration,
    protocol: Protocol,
    server: SocketAddr,
    tos: Option<u8>,
    /// closed loop: no exchange starts this long after the pair's start (`--time`)
    time: Option<Duration>,
}

impl Job {
    fn total(&self) -> u64 {
        self.count + self.warmup
    }
    /// When a closed-loop pair that started at `start` stops starting exchanges.
    fn end(&self, start: Instant) -> Option<Instant> {
        self.time.map(|t| start + t)
    }
    /// Measured exchanges among the first `done` (the warm-up ones are not).
    fn measured(&self, done: u64) -> u64 {
        done.saturating_sub(self.warmup)
    }
    fn io_err(&self, source: std::io::Error) -> ProbeError {
        if matches!(source.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            return self.timeout_err(u64::MAX);
        }
        ProbeError::Io {
            protocol: self.protocol.name(),
            addr: self.server,
            pair: self.pair,
            source,
        }
    }
    fn timeout_err(&self, seq: u64) -> ProbeError {
        ProbeError::ReplyTimeout {
            protocol: self.protocol.name(),
            addr: self.server,
            pair: self.pair,
            seq,
            timeout_s: self.timeout.as_secs_f64(),
        }
    }
    /// A closed-loop TCP reply must answer the exchange just sent.
    fn check_reply(&self, seq: u64, reply: &[u8]) -> Result<(), ProbeError> {
        let got = wire::seq_of(reply);
        if got == seq {
            Ok(())
        } else {
            Err(self.bad_reply(format!("reply to exchange {seq} carries sequence {got}")))
        }
    }
    fn bad_reply(&self, what: String) -> ProbeError {
        ProbeError::Protocol {
            addr: self.server,
            pair: self.pair,
            what,
        }
    }
    /// When request `seq` is due (open loop).
    #[inline]
    fn due(&self, start: Instant, seq: u64) -> Instant {
        match self.pace {
            Some((interval, offset)) => start + offset + interval.mul_f64(seq as f64),
            None => start,
        }
    }
}

/// One pair's measurements.
#[derive(Debug)]
struct PairRun {
    hist: Histogram<u64>,
    sent: u64,
    lost: u64,
    first: Instant,
    last: Instant,
}

impl PairRun {
    fn new(start: Instant) -> PairRun {
        PairRun {
            hist: new_histogram(),
            sent: 0,
            lost: 0,
            first: start,
            last: start,
        }
    }
    /// Exchange `seq`, due or sent at `from`, was answered at `at`: its RTT is recorded
    /// (after the warm-up) and `at` is the last answer so far.
    #[inline]
    fn record(&mut self, job: &Job, seq: u64, from: Instant, at: Instant) {
        if seq >= job.warmup {
            let rtt = at.saturating_duration_since(from);
            self.hist.saturating_record(rtt.as_nanos() as u64);
        }
        self.last = at;
    }

    /// Exchange `seq` got no answer in time (counted after the warm-up).
    fn lose(&mut self, job: &Job, seq: u64) {
        if seq >= job.warmup {
            self.lost += 1;
        }
    }
}

/// A connected socket of one pair.
#[derive(Debug)]
enum Conn {
    Tcp(TcpStream),
    Udp(UdpSocket),
}

/// Runs the pairs of `spec` against a server and merges their measurements.
pub fn run(
    spec: &ProbeSpec,
    cfg: &ClientConfig,
    ctl: &Arc<Control>,
) -> Result<ClientRun, ProbeError> {
    spec.validate()?;
    let spec = &spec.within_time();
    pin::check(&cfg.cpus)?;
    if !(cfg.timeout_s.is_finite() && cfg.timeout_s > 0.0) {
        return Err(ProbeError::Timeout {
            timeout_s: cfg.timeout_s,
        });
    }
    let jobs: Vec<Job> = (0..spec.pairs)
        .map(|pair| {
            let (count, warmup) = spec.share(pair);
            let pace = match spec.load {
                Load::ClosedLoop => None,
                Load::OpenLoop { rate_per_s } => {
                    let interval = Duration::from_secs_f64(spec.pairs as f64 / rate_per_s);
                    Some((interval, interval.mul_f64(pair as f64 / spec.pairs as f64)))
                }
            };
            Job {
                pair,
                count,
                warmup,
                size: spec.size_bytes,
                pace,
                timeout: Duration::from_secs_f64(cfg.timeout_s),
                protocol: spec.protocol,
                server: cfg.server,
                tos: cfg.tos,
                time: match spec.load {
                    Load::ClosedLoop => spec.time_s.map(Duration::from_secs_f64),
                    // an open loop's time is already in its count (`within_time`)
                    Load::OpenLoop { .. } => None,
                },
            }
        })
        .collect();
    let pairs = match spec.io {
        IoMode::Blocking => blocking(&jobs, cfg, ctl)?,
        IoMode::Nonblocking => nb::run(&jobs, cfg, ctl)?,
    };
    let mut out = ClientRun {
        hist: new_histogram(),
        sent: 0,
        lost: 0,
        elapsed_s: 0.0,
    };
    let first = pairs.iter().map(|p| p.first).min();
    let last = pairs.iter().map(|p| p.last).max();
    for p in pairs {
        // Same bounds and precision: adding cannot fail.
        let _ = out.hist.add(&p.hist);
        out.sent += p.sent;
        out.lost += p.lost;
    }
    if let (Some(first), Some(last)) = (first, last) {
        out.elapsed_s = last.saturating_duration_since(first).as_secs_f64();
    }
    Ok(out)
}

/// Connects one pair (in the caller's namespace): TCP connect, or the UDP handshake.
fn connect(job: &Job) -> Result<Conn, ProbeError> {
    let connect_err = |source| ProbeError::Connect {
        protocol: job.protocol.name(),
        addr: job.server,
        source,
    };
    match job.protocol {
        Protocol::Tcp => {
            let s =
                TcpStream::connect_timeout(&job.server, job.timeout.max(Duration::from_secs(1)))
                    .map_err(connect_err)?;
            if let Some(t) = job.tos {
                crate::tos::set_tos(&s, t).map_err(connect_err)?;
            }
            s.set_nodelay(true).map_err(connect_err)?;
            s.set_read_timeout(Some(job.timeout)).map_err(connect_err)?;
            Ok(Conn::Tcp(s))
        }
        Protocol::Udp => {
            let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(connect_err)?;
            if let Some(t) = job.tos {
                crate::tos::set_tos(&s, t).map_err(connect_err)?;
            }
            handshake(&s, job.server).map_err(|e| match e {
                Some(source) => connect_err(source),
                None => ProbeError::Handshake {
                    addr: job.server,
                    timeout_s: HANDSHAKE.as_secs_f64(),
                },
            })?;
            s.set_read_timeout(Some(job.timeout)).map_err(connect_err)?;
            Ok(Conn::Udp(s))
        }
    }
}

/// How long to try the UDP handshake.
const HANDSHAKE: Duration = Duration::from_secs(5);

/// Sends `HELLO` until a `WELCOME` with our nonce arrives, then connects the socket to the
/// pair socket it came from. `Err(None)` = no answer in time.
fn handshake(s: &UdpSocket, server: SocketAddr) -> Result<(), Option<std::io::Error>> {
    handshake_io(s, server).map_err(Some)?.ok_or(None)
}

/// `Ok(None)` = no answer in time.
fn handshake_io(s: &UdpSocket, server: SocketAddr) -> std::io::Result<Option<()>> {
    let nonce = u64::from(std::process::id()) << 32 | u64::from(s.local_addr()?.port());
    let mut hello = [0u8; wire::HEADER_BYTES];
    Header {
        magic: wire::HELLO,
        len: wire::HEADER_BYTES as u32,
        seq: nonce,
    }
    .write(&mut hello);
    s.set_read_timeout(Some(Duration::from_millis(200)))?;
    let deadline = Instant::now() + HANDSHAKE;
    let mut buf = [0u8; 64];
    while Instant::now() < deadline {
        s.send_to(&hello, server)?;
        let until = Instant::now() + Duration::from_millis(200);
        while Instant::now() < until {
            match s.recv_from(&mut buf) {
                Ok((n, from)) => {
                    let ok = Header::read(&buf[..n])
                        .is_some_and(|h| h.magic == wire::WELCOME && h.seq == nonce);
                    if ok && from.ip() == server.ip() {
                        s.connect(from)?;
                        return Ok(Some(()));
                    }
                }
                // Connection refused (ICMP port unreachable) means nobody is there.
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => return Err(e),
                Err(_) => break,
            }
        }
    }
    Ok(None)
}

/// Waits until `t`: sleeps while far, then yields (a sleep overshoots by tens of µs).
fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(300) {
            std::thread::sleep(left - Duration::from_micros(200));
        } else {
            std::thread::yield_now();
        }
    }
}

fn blocking(jobs: &[Job], cfg: &ClientConfig, ctl: &Control) -> Result<Vec<PairRun>, ProbeError> {
    let barrier = Barrier::new(jobs.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|job| {
                let barrier = &barrier;
                std::thread::Builder::new()
                    .name(format!("probe-pair-{}", job.pair))
                    .spawn_scoped(scope, move || {
                        pin::pin_nth(&cfg.cpus, job.pair);
                        let conn = match &cfg.netns {
                            Some(ns) => netns::enter(ns)
                                .map_err(ProbeError::from)
                                .and_then(|()| connect(job)),
                            None => connect(job),
                        };
                        // Every pair waits here, connected or not, so none starts early.
                        barrier.wait();
                        let conn = conn?;
                        match job.pace {
                            None => closed_loop(job, conn, ctl),
                            Some(_) => open_loop(job, conn, cfg, ctl),
                        }
                    })
                    .map_err(ProbeError::Thread)
            })
            .collect();
        let mut out = Vec::new();
        let mut first_err = None;
        for h in handles {
            let r = h.and_then(|h| {
                h.join()
                    .map_err(|_| ProbeError::Panicked("client pair".into()))?
            });
            match r {
                Ok(p) => out.push(p),
                Err(e) => {
                    // Stop the other pairs early; keep the first error.
                    ctl.stop();
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    })
}

fn closed_loop(job: &Job, conn: Conn, ctl: &Control) -> Result<PairRun, ProbeError> {
    let mut req = wire::message(job.size);
    let mut resp = vec![0u8; job.size.max(wire::HEADER_BYTES) + 1];
    let start = Instant::now();
    let end = job.end(start);
    let mut run = PairRun::new(start);
    let mut done = 0;
    match conn {
        Conn::Tcp(mut s) => {
            for seq in 0..job.total() {
                if ctl.stopped() {
                    return Err(ProbeError::Interrupted);
                }
                wire::set_seq(&mut req, seq);
                let t0 = Instant::now();
                if end.is_some_and(|e| t0 >= e) {
                    break;
                }
                s.write_all(&req).map_err(|e| job.io_err(e))?;
                s.read_exact(&mut resp[..job.size])
                    .map_err(|e| with_seq(job.io_err(e), seq))?;
                let t1 = Instant::now();
                job.check_reply(seq, &resp)?;
                run.record(job, seq, t0, t1);
                ctl.tick();
                done = seq + 1;
            }
        }
        Conn::Udp(s) => {
            for seq in 0..job.total() {
                if ctl.stopped() {
                    return Err(ProbeError::Interrupted);
                }
                wire::set_seq(&mut req, seq);
                let t0 = Instant::now();
                if end.is_some_and(|e| t0 >= e) {
                    break;
                }
                s.send(&req).map_err(|e| job.io_err(e))?;
                loop {
                    match s.recv(&mut resp) {
                        Ok(n) if n >= wire::HEADER_BYTES && wire::seq_of(&resp) == seq => {
                            let t1 = Instant::now();
                            run.record(job, seq, t0, t1);
                            break;
                        }
                        // A late reply to an earlier exchange counted lost.
                        Ok(_) => continue,
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                        {
                            run.lose(job, seq);
                            break;
                        }
                        Err(e) => return Err(job.io_err(e)),
                    }
                }
                ctl.tick();
                done = seq + 1;
            }
        }
    }
    run.sent = job.measured(done);
    Ok(run)
}

fn with_seq(e: ProbeError, seq: u64) -> ProbeError {
    match e {
        ProbeError::ReplyTimeout {
            protocol,
            addr,
            pair,
            timeout_s,
            ..
        } => ProbeError::ReplyTimeout {
            protocol,
            addr,
            pair,
            seq,
            timeout_s,
        },
        other => other,
    }
}

/// Open loop, blocking: this thread sends on schedule, a second one receives.
fn open_loop(
    job: &Job,
    conn: Conn,
    cfg: &ClientConfig,
    ctl: &Control,
) -> Result<PairRun, ProbeError> {
    let (mut tx, rx) = match conn {
        Conn::Tcp(s) => {
            let r = s.try_clone().map_err(|e| job.io_err(e))?;
            (Conn::Tcp(s), Conn::Tcp(r))
        }
        Conn::Udp(s) => {
            let r = s.try_clone().map_err(|e| job.io_err(e))?;
            (Conn::Udp(s), Conn::Udp(r))
        }
    };
    let start = Instant::now() + Duration::from_millis(1);
    let sender_done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let receiver = std::thread::Builder::new()
            .name(format!("probe-recv-{}", job.pair))
            .spawn_scoped(scope, || {
                pin::pin_nth(&cfg.cpus, job.pair);
                receive(job, rx, start, &sender_done, ctl)
            })
            .map_err(ProbeError::Thread)?;
        let mut req = wire::message(job.size);
        let mut sent = Ok(());
        for seq in 0..job.total() {
            if ctl.stopped() {
                sent = Err(ProbeError::Interrupted);
                break;
            }
            wire::set_seq(&mut req, seq);
            wait_until(job.due(start, seq));
            let r = match &mut tx {
                Conn::Tcp(s) => s.write_all(&req),
                Conn::Udp(s) => s.send(&req).map(|_| ()),
            };
            if let Err(e) = r {
                sent = Err(job.io_err(e));
                break;
            }
        }
        sender_done.store(true, Ordering::Release);
        if sent.is_err() {
            // Unblock the receiver.
            if let Conn::Tcp(s) = &tx {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            ctl.stop();
        }
        let received = receiver
            .join()
            .map_err(|_| ProbeError::Panicked("receiver".into()))?;
        sent?;
        let mut run = received?;
        run.first = start;
        run.sent = job.count;
        Ok(run)
    })
}

fn receive(
    job: &Job,
    rx: Conn,
    start: Instant,
    sender_done: &AtomicBool,
    ctl: &Control,
) -> Result<PairRun, ProbeError> {
    let mut run = PairRun::new(start);
    let mut resp = vec![0u8; job.size.max(wire::HEADER_BYTES) + 1];
    let mut received = 0u64;
    let mut measured = 0u64;
    match rx {
        Conn::Tcp(mut s) => {
            // The schedule itself may leave the connection idle for an interval.
            let idle = job.pace.map_or(Duration::ZERO, |(interval, _)| interval);
            s.set_read_timeout(Some(job.timeout + idle))
                .map_err(|e| job.io_err(e))?;
            while received < job.total() {
                if ctl.stopped() {
                    return Err(ProbeError::Interrupted);
                }
                s.read_exact(&mut resp[..job.size])
                    .map_err(|e| with_seq(job.io_err(e), received))?;
                let now = Instant::now();
                let seq = wire::seq_of(&resp);
                run.record(job, seq, job.due(start, seq), now);
                received += 1;
                ctl.tick();
            }
        }
        Conn::Udp(s) => {
            let last_due = job.due(start, job.total().saturating_sub(1));
            while received < job.total() {
                if ctl.stopped() {
                    return Err(ProbeError::Interrupted);
                }
                match s.recv(&mut resp) {
                    Ok(n) if n >= wire::HEADER_BYTES => {
                        let now = Instant::now();
                        let seq = wire::seq_of(&resp);
                        run.record(job, seq, job.due(start, seq), now);
                        received += 1;
                        measured += u64::from(seq >= job.warmup);
                        ctl.tick();
                    }
                    Ok(_) => {}
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        // A whole timeout after the last request was due: the rest is lost.
                        if sender_done.load(Ordering::Acquire)
                            && Instant::now() >= last_due + job.timeout
                        {
                            break;
                        }
                    }
                    Err(e) => return Err(job.io_err(e)),
                }
            }
            run.lost = job.count.saturating_sub(measured);
        }
    }
    Ok(run)
}

/// The non-blocking client on tokio.
mod nb {
    use super::*;

    pub(super) fn run(
        jobs: &[Job],
        cfg: &ClientConfig,
        ctl: &Arc<Control>,
    ) -> Result<Vec<PairRun>, ProbeError> {
        let workers = jobs.len().min(super::super::available_cpus());
        let cpus = cfg.cpus.clone();
        std::thread::scope(|scope| {
            let h = std::thread::Builder::new()
                .name("probe-client-rt".into())
                .spawn_scoped(scope, move || {
                    if let Some(ns) = &cfg.netns {
                        netns::enter(ns)?;
                    }
                    pin::pin_nth(&cfg.cpus, 0);
                    // Connect (and handshake) with blocking calls, then hand the sockets over.
                    let conns = jobs.iter().map(connect).collect::<Result<Vec<_>, _>>()?;
                    let next = Arc::new(AtomicUsize::new(0));
                    let rt = if workers <= 1 {
                        tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                    } else {
                        tokio::runtime::Builder::new_multi_thread()
                            .worker_threads(workers)
                            .on_thread_start(move || {
                                pin::pin_nth(&cpus, next.fetch_add(1, Ordering::Relaxed))
                            })
                            .enable_all()
                            .build()
                    }
                    .map_err(ProbeError::Thread)?;
                    rt.block_on(async {
                        let mut tasks = tokio::task::JoinSet::new();
                        for (job, conn) in jobs.iter().copied().zip(conns) {
                            tasks.spawn(pair(job, conn, Arc::clone(ctl)));
                        }
                        let mut out = Vec::new();
                        let mut first_err = None;
                        while let Some(r) = tasks.join_next().await {
                            match r {
                                Ok(Ok(p)) => out.push(p),
                                Ok(Err(e)) => {
                                    ctl.stop();
                                    first_err.get_or_insert(e);
                                }
                                Err(e) => {
                                    ctl.stop();
                                    first_err.get_or_insert(ProbeError::Panicked(e.to_string()));
                                }
                            }
                        }
                        match first_err {
                            Some(e) => Err(e),
                            None => Ok(out),
                        }
                    })
                })
                .map_err(ProbeError::Thread)?;
            h.join()
                .map_err(|_| ProbeError::Panicked("client runtime".into()))?
        })
    }
}

impl Conn {
    fn into_tokio_tcp(s: TcpStream) -> std::io::Result<tokio::net::TcpStream> {
        s.set_nonblocking(true)?;
        tokio::net::TcpStream::from_std(s)
    }
    fn into_tokio_udp(s: UdpSocket) -> std::io::Result<tokio::net::UdpSocket> {
        s.set_nonblocking(true)?;
        tokio::net::UdpSocket::from_std(s)
    }
}

/// One pair as a tokio task.
async fn pair(job: Job, conn: Conn, ctl: Arc<Control>) -> Result<PairRun, ProbeError> {
    match conn {
        Conn::Tcp(s) => {
            let s = Conn::into_tokio_tcp(s).map_err(|e| job.io_err(e))?;
            match job.pace {
                None => nb_tcp_closed(&job, s, &ctl).await,
                Some(_) => nb_tcp_open(&job, s, &ctl).await,
            }
        }
        Conn::Udp(s) => {
            let s = Arc::new(Conn::into_tokio_udp(s).map_err(|e| job.io_err(e))?);
            match job.pace {
                None => nb_udp_closed(&job, &s, &ctl).await,
                Some(_) => nb_udp_open(&job, s, &ctl).await,
            }
        }
    }
}

async fn nb_tcp_closed(
    job: &Job,
    mut s: tokio::net::TcpStream,
    ctl: &Control,
) -> Result<PairRun, ProbeError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut req = wire::message(job.size);
    let mut resp = vec![0u8; job.size];
    let start = Instant::now();
    let (end, mut done) = (job.end(start), 0);
    let mut run = PairRun::new(start);
    for seq in 0..job.total() {
        if ctl.stopped() {
            return Err(ProbeError::Interrupted);
        }
        wire::set_seq(&mut req, seq);
        let t0 = Instant::now();
        if end.is_some_and(|e| t0 >= e) {
            break;
        }
        s.write_all(&req).await.map_err(|e| job.io_err(e))?;
        match tokio::time::timeout(job.timeout, s.read_exact(&mut resp)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(job.io_err(e)),
            Err(_) => return Err(job.timeout_err(seq)),
        }
        let t1 = Instant::now();
        job.check_reply(seq, &resp)?;
        run.record(job, seq, t0, t1);
        ctl.tick();
        done = seq + 1;
    }
    run.sent = job.measured(done);
    Ok(run)
}

async fn nb_udp_closed(
    job: &Job,
    s: &tokio::net::UdpSocket,
    ctl: &Control,
) -> Result<PairRun, ProbeError> {
    let mut req = wire::message(job.size);
    let mut resp = vec![0u8; job.size + 1];
    let start = Instant::now();
    let (end, mut done) = (job.end(start), 0);
    let mut run = PairRun::new(start);
    for seq in 0..job.total() {
        if ctl.stopped() {
            return Err(ProbeError::Interrupted);
        }
        wire::set_seq(&mut req, seq);
        let t0 = Instant::now();
        if end.is_some_and(|e| t0 >= e) {
            break;
        }
        s.send(&req).await.map_err(|e| job.io_err(e))?;
        let deadline = tokio::time::Instant::from_std(t0 + job.timeout);
        loop {
            match tokio::time::timeout_at(deadline, s.recv(&mut resp)).await {
                Ok(Ok(n)) if n >= wire::HEADER_BYTES && wire::seq_of(&resp) == seq => {
                    let t1 = Instant::now();
                    run.record(job, seq, t0, t1);
                    break;
                }
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => return Err(job.io_err(e)),
                Err(_) => {
                    run.lose(job, seq);
                    break;
                }
            }
        }
        ctl.tick();
        done = seq + 1;
    }
    run.sent = job.measured(done);
    Ok(run)
}

/// Waits until `t` on tokio: its timer has 1 ms granularity, so sleep to 1 ms before, then
/// yield to the scheduler until due.
async fn nb_wait_until(t: Instant) {
    let now = Instant::now();
    if t > now + Duration::from_micros(1500) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(t - Duration::from_millis(1)))
            .await;
    }
    while Instant::now() < t {
        tokio::task::yield_now().await;
    }
}

async fn nb_tcp_open(
    job: &Job,
    s: tokio::net::TcpStream,
    ctl: &Arc<Control>,
) -> Result<PairRun, ProbeError> {
    use tokio::io::AsyncReadExt;
    let (mut rx, tx) = s.into_split();
    let start = Instant::now() + Duration::from_millis(1);
    let job2 = *job;
    let ctl2 = Arc::clone(ctl);
    let receiver = tokio::spawn(async move {
        let job = &job2;
        let idle = job.pace.map_or(Duration::ZERO, |(interval, _)| interval);
        let mut run = PairRun::new(start);
        let mut resp = vec![0u8; job.size];
        for received in 0..job.total() {
            if ctl2.stopped() {
                return Err(ProbeError::Interrupted);
            }
            match tokio::time::timeout(job.timeout + idle, rx.read_exact(&mut resp)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(job.io_err(e)),
                Err(_) => return Err(job.timeout_err(received)),
            }
            let now = Instant::now();
            let seq = wire::seq_of(&resp);
            run.record(job, seq, job.due(start, seq), now);
            ctl2.tick();
        }
        Ok(run)
    });
    nb_send_paced(job, ctl, start, receiver, NbSender::Tcp(tx)).await
}

async fn nb_udp_open(
    job: &Job,
    s: Arc<tokio::net::UdpSocket>,
    ctl: &Arc<Control>,
) -> Result<PairRun, ProbeError> {
    let start = Instant::now() + Duration::from_millis(1);
    let last_due = job.due(start, job.total().saturating_sub(1));
    let job2 = *job;
    let ctl2 = Arc::clone(ctl);
    let rs = Arc::clone(&s);
    let receiver = tokio::spawn(async move {
        let job = &job2;
        let mut run = PairRun::new(start);
        let mut resp = vec![0u8; job.size + 1];
        let (mut received, mut measured) = (0u64, 0u64);
        let deadline = tokio::time::Instant::from_std(last_due + job.timeout);
        while received < job.total() && !ctl2.stopped() {
            match tokio::time::timeout_at(deadline, rs.recv(&mut resp)).await {
                Ok(Ok(n)) if n >= wire::HEADER_BYTES => {
                    let now = Instant::now();
                    let seq = wire::seq_of(&resp);
                    run.record(job, seq, job.due(start, seq), now);
                    received += 1;
                    measured += u64::from(seq >= job.warmup);
                    ctl2.tick();
                }
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(job.io_err(e)),
                Err(_) => break,
            }
        }
        if ctl2.stopped() {
            return Err(ProbeError::Interrupted);
        }
        run.lost = job.count.saturating_sub(measured);
        Ok(run)
    });
    nb_send_paced(job, ctl, start, receiver, NbSender::Udp(s)).await
}

/// The sending side of a non-blocking pair.
enum NbSender {
    Tcp(tokio::net::tcp::OwnedWriteHalf),
    Udp(Arc<tokio::net::UdpSocket>),
}

impl NbSender {
    async fn send(&mut self, req: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        match self {
            NbSender::Tcp(tx) => tx.write_all(req).await,
            NbSender::Udp(s) => s.send(req).await.map(|_| ()),
        }
    }
}

/// The sending half of an open-loop pair: sends every request at its intended time with
/// `tx`, then collects the receiver's measurements. On a send error or a stop request the
/// receiver is aborted.
async fn nb_send_paced(
    job: &Job,
    ctl: &Arc<Control>,
    start: Instant,
    receiver: tokio::task::JoinHandle<Result<PairRun, ProbeError>>,
    mut tx: NbSender,
) -> Result<PairRun, ProbeError> {
    let mut req = wire::message(job.size);
    let mut sent = Ok(());
    for seq in 0..job.total() {
        if ctl.stopped() {
            sent = Err(ProbeError::Interrupted);
            break;
        }
        wire::set_seq(&mut req, seq);
        nb_wait_until(job.due(start, seq)).await;
        if let Err(e) = tx.send(&req).await {
            sent = Err(job.io_err(e));
            break;
        }
    }
    if sent.is_err() {
        ctl.stop();
        receiver.abort();
    }
    sent?;
    let mut run = receiver
        .await
        .map_err(|e| ProbeError::Panicked(e.to_string()))??;
    run.first = start;
    run.sent = job.count;
    Ok(run)
}
