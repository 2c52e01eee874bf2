//! A memcached load generator: closed loop (each connection keeps `depth` requests
//! outstanding) or open loop (each connection sends at Poisson times, pipelined, whatever the
//! replies do), with a GET/SET mix over preloaded keys of one value size, and the latency of
//! every request in an HdrHistogram.
//!
//! It runs on blocking sockets, one thread per connection (two in open loop: a sender and a
//! receiver), so that open-loop send times are kept to a few microseconds (`nanosleep` with
//! a 1 ns timer slack) instead of a runtime's millisecond timer wheel. Open-loop latency runs
//! from the *scheduled* send time, so a sender that falls behind is charged for it (no
//! coordinated omission). Every request sent in the measured time is counted, also when its
//! reply comes after the end (not only the survivors). Every run is bounded by its duration
//! and a request count, and every socket operation by a timeout.

use super::reply::{ReplyReader, ReplyShape};
use super::request::Request;
use super::{Limits, MemcacheError};
use crate::probe::stats::{new_histogram, summarize, RttStats};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How requests are issued.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "loop")]
pub enum LoadMode {
    /// each connection keeps `depth` requests outstanding
    Closed { depth: u32 },
    /// Poisson arrivals over all connections [requests/s]
    Open { rate_per_s: f64 },
}

/// One load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    pub addr: SocketAddr,
    pub connections: usize,
    pub mode: LoadMode,
    /// size of every value [bytes]
    pub value_bytes: usize,
    /// fraction of GETs; the rest are SETs of the same keys
    pub get_fraction: f64,
    /// distinct keys, stored before the run
    pub keys: usize,
    /// measured time [s] (after the warm-up)
    pub duration_s: f64,
    /// time before measuring [s]
    pub warmup_s: f64,
    /// stop after this many requests in all (warm-up included)
    pub max_requests: u64,
    /// per socket operation [s]
    pub timeout_s: f64,
    pub seed: u64,
}

impl LoadSpec {
    /// A closed-loop run of one connection, depth 1, half GETs.
    pub fn closed(addr: SocketAddr, value_bytes: usize) -> LoadSpec {
        LoadSpec {
            addr,
            connections: 1,
            mode: LoadMode::Closed { depth: 1 },
            value_bytes,
            get_fraction: 0.5,
            keys: 100,
            duration_s: 2.0,
            warmup_s: 0.2,
            max_requests: 10_000_000,
            timeout_s: 5.0,
            seed: 1,
        }
    }

    /// # Errors
    /// [`MemcacheError::Load`] naming the bad field.
    pub fn validate(&self) -> Result<(), MemcacheError> {
        let bad = |m: String| Err(MemcacheError::Load(m));
        if self.connections == 0 || self.connections > 1024 {
            return bad(format!("{} connections; use 1 to 1024", self.connections));
        }
        match self.mode {
            LoadMode::Closed { depth } if depth == 0 || depth > 1024 => {
                return bad(format!(
                    "depth {depth}; use 1 to 1024 outstanding per connection"
                ))
            }
            LoadMode::Open { rate_per_s } if !(rate_per_s.is_finite() && rate_per_s > 0.0) => {
                return bad(format!(
                    "open-loop rate {rate_per_s}; use a finite rate > 0 [requests/s]"
                ))
            }
            _ => {}
        }
        if self.value_bytes > (1 << 20) - 512 {
            return bad(format!(
                "value of {} bytes exceeds memcached's default item size of 1 MiB",
                self.value_bytes
            ));
        }
        if !(0.0..=1.0).contains(&self.get_fraction) {
            return bad(format!("GET fraction {}; use 0 to 1", self.get_fraction));
        }
        if self.keys == 0 || self.keys > 1_000_000 {
            return bad(format!("{} keys; use 1 to 1000000", self.keys));
        }
        for (what, v, max) in [
            ("duration", self.duration_s, 3600.0),
            ("warm-up", self.warmup_s, 3600.0),
            ("timeout", self.timeout_s, 600.0),
        ] {
            if !(v.is_finite() && v >= 0.0 && v <= max) || (what != "warm-up" && v == 0.0) {
                return bad(format!("{what} {v} s; use a finite time up to {max} s"));
            }
        }
        if self.max_requests == 0 {
            return bad("a request limit of 0".into());
        }
        Ok(())
    }
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    /// requests completed within the measured time
    pub requests: u64,
    /// error replies among them
    pub errors: u64,
    /// GETs among them that missed
    pub misses: u64,
    /// measured time [s]
    pub elapsed_s: f64,
    /// `requests / elapsed_s` [requests/s]
    pub throughput_per_s: f64,
    /// per-request latency (open loop: from the scheduled send time)
    pub latency: Option<RttStats>,
}

/// A small deterministic generator (splitmix64) for op choice and Poisson gaps.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    /// Connection `conn`'s own stream of the run's seed.
    fn for_connection(seed: u64, conn: usize) -> Rng {
        Rng(seed ^ (conn as u64).wrapping_mul(0x2545_F491_4F6C_DD1D))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// uniform in (0, 1]
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
}

/// The encoded requests of a run: a GET and a SET per key.
struct Requests {
    gets: Vec<Vec<u8>>,
    sets: Vec<Vec<u8>>,
}

fn key(i: usize) -> String {
    format!("tb-load-{i}")
}

impl Requests {
    fn new(spec: &LoadSpec) -> Result<Requests, MemcacheError> {
        let value = vec![b'v'; spec.value_bytes];
        let mut gets = Vec::with_capacity(spec.keys);
        let mut sets = Vec::with_capacity(spec.keys);
        for i in 0..spec.keys {
            let mut g = Vec::new();
            Request::get(key(i)).encode(&mut g)?;
            let mut s = Vec::new();
            Request::set(key(i), value.clone()).encode(&mut s)?;
            gets.push(g);
            sets.push(s);
        }
        Ok(Requests { gets, sets })
    }

    /// A request's bytes and reply shape; `true` for a GET.
    fn pick(&self, rng: &mut Rng, get_fraction: f64) -> (&[u8], ReplyShape, bool) {
        let k = (rng.next_u64() % self.gets.len() as u64) as usize;
        if rng.unit() <= get_fraction {
            (&self.gets[k], ReplyShape::Retrieval, true)
        } else {
            (&self.sets[k], ReplyShape::Line, false)
        }
    }
}

/// Blocking reply reader over one socket.
struct Replies {
    stream: TcpStream,
    buf: Vec<u8>,
    start: usize,
    addr: SocketAddr,
    /// [s], for error messages
    timeout_s: f64,
}

/// How one reply ended.
#[derive(Debug, Clone, Copy)]
struct Got {
    error: bool,
    hit: bool,
}

impl Replies {
    fn next(&mut self, shape: ReplyShape) -> Result<Got, MemcacheError> {
        let mut reader = ReplyReader::new(shape, Limits::default());
        let mut got = Got {
            error: false,
            hit: false,
        };
        loop {
            match reader.next_chunk(&self.buf[self.start..]) {
                Err(e) => {
                    return Err(MemcacheError::Protocol {
                        addr: self.addr,
                        message: e.0,
                    })
                }
                Ok(Some(c)) => {
                    self.start += c.len;
                    got.error |= c.error;
                    got.hit |= !c.done;
                    if c.done {
                        return Ok(got);
                    }
                    continue;
                }
                Ok(None) => {}
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            let len = self.buf.len();
            self.buf.resize(len + 64 * 1024, 0);
            let n = match self.stream.read(&mut self.buf[len..]) {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(io_err(self.addr, self.timeout_s, e));
                }
            };
            self.buf.truncate(len + n);
            if n == 0 {
                return Err(MemcacheError::Closed {
                    addr: self.addr,
                    pending: 1,
                });
            }
        }
    }
}

fn io_err(addr: SocketAddr, timeout_s: f64, e: std::io::Error) -> MemcacheError {
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => MemcacheError::Timeout {
            addr,
            what: "a socket operation",
            timeout_s,
        },
        _ => MemcacheError::Io { addr, source: e },
    }
}

fn connect(spec: &LoadSpec) -> Result<TcpStream, MemcacheError> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let s = TcpStream::connect_timeout(&spec.addr, timeout).map_err(|source| {
        MemcacheError::Connect {
            addr: spec.addr,
            source,
        }
    })?;
    let io = |e| io_err(spec.addr, spec.timeout_s, e);
    s.set_nodelay(true).map_err(io)?;
    s.set_read_timeout(Some(timeout)).map_err(io)?;
    s.set_write_timeout(Some(timeout)).map_err(io)?;
    Ok(s)
}

/// Stores every key once, pipelined in batches.
fn preload(spec: &LoadSpec, reqs: &Requests) -> Result<(), MemcacheError> {
    let mut s = connect(spec)?;
    let mut replies = Replies {
        stream: s
            .try_clone()
            .map_err(|e| io_err(spec.addr, spec.timeout_s, e))?,
        buf: Vec::new(),
        start: 0,
        addr: spec.addr,
        timeout_s: spec.timeout_s,
    };
    for batch in reqs.sets.chunks(64) {
        for r in batch {
            s.write_all(r)
                .map_err(|e| io_err(spec.addr, spec.timeout_s, e))?;
        }
        for _ in batch {
            if replies.next(ReplyShape::Line)?.error {
                return Err(MemcacheError::Protocol {
                    addr: spec.addr,
                    message: "preloading a key failed".into(),
                });
            }
        }
    }
    Ok(())
}

/// Per-thread tallies.
struct Tally {
    hist: Histogram<u64>,
    requests: u64,
    errors: u64,
    misses: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            hist: new_histogram(),
            requests: 0,
            errors: 0,
            misses: 0,
        }
    }

    fn record(&mut self, latency: Duration, got: Got, was_get: bool) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.hist.saturating_record(ns);
        self.requests += 1;
        self.errors += u64::from(got.error);
        self.misses += u64::from(was_get && !got.hit && !got.error);
    }
}

/// The shared clock marks of a run.
#[derive(Clone, Copy)]
struct Marks {
    measure_from: Instant,
    end: Instant,
    /// requests per connection (the run's bound, split)
    budget: u64,
}

/// A connection to the server: the writing half and its replies.
fn open_connection(spec: &LoadSpec) -> Result<(TcpStream, Replies), MemcacheError> {
    let s = connect(spec)?;
    let replies = Replies {
        stream: s
            .try_clone()
            .map_err(|e| io_err(spec.addr, spec.timeout_s, e))?,
        buf: Vec::with_capacity(128 * 1024),
        start: 0,
        addr: spec.addr,
        timeout_s: spec.timeout_s,
    };
    Ok((s, replies))
}

fn closed_loop(
    spec: &LoadSpec,
    reqs: &Requests,
    conn: usize,
    depth: u32,
    marks: Marks,
) -> Result<Tally, MemcacheError> {
    let (mut s, mut replies) = open_connection(spec)?;
    let mut rng = Rng::for_connection(spec.seed, conn);
    let mut tally = Tally::new();
    let mut inflight = std::collections::VecDeque::new();
    let mut sent = 0u64;
    loop {
        let now = Instant::now();
        while inflight.len() < depth as usize && now < marks.end && sent < marks.budget {
            let (bytes, shape, get) = reqs.pick(&mut rng, spec.get_fraction);
            inflight.push_back((Instant::now(), shape, get));
            s.write_all(bytes)
                .map_err(|e| io_err(spec.addr, spec.timeout_s, e))?;
            sent += 1;
        }
        let Some((at, shape, get)) = inflight.pop_front() else {
            return Ok(tally);
        };
        let got = replies.next(shape)?;
        let done = Instant::now();
        // every request sent in the measured time counts, however late its reply: dropping
        // those that end after it would drop the slowest
        if at >= marks.measure_from {
            tally.record(done - at, got, get);
        }
    }
}

fn open_loop(
    spec: &LoadSpec,
    reqs: &Requests,
    conn: usize,
    rate_per_s: f64,
    marks: Marks,
) -> Result<Tally, MemcacheError> {
    let (mut s, mut replies) = open_connection(spec)?;
    let (tx, rx) = mpsc::sync_channel::<(Instant, ReplyShape, bool)>(1 << 16);
    let mut rng = Rng::for_connection(spec.seed, conn);
    std::thread::scope(|scope| {
        let receiver = scope.spawn(move || -> Result<Tally, MemcacheError> {
            let mut tally = Tally::new();
            while let Ok((at, shape, get)) = rx.recv() {
                let got = replies.next(shape)?;
                let done = Instant::now();
                if at >= marks.measure_from {
                    tally.record(done.saturating_duration_since(at), got, get);
                }
            }
            Ok(tally)
        });
        // SAFETY: prctl with PR_SET_TIMERSLACK only changes this thread's timer slack.
        unsafe {
            libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0);
        }
        let start = Instant::now();
        let mut next = start;
        let mut sent = 0u64;
        let mut send_err = None;
        while sent < marks.budget {
            let gap = -rng.unit().ln() / rate_per_s;
            next += Duration::from_secs_f64(gap);
            if next >= marks.end {
                break;
            }
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            let (bytes, shape, get) = reqs.pick(&mut rng, spec.get_fraction);
            if tx.send((next, shape, get)).is_err() {
                break;
            }
            if let Err(e) = s.write_all(bytes) {
                send_err = Some(io_err(spec.addr, spec.timeout_s, e));
                break;
            }
            sent += 1;
        }
        drop(tx);
        let tally = receiver
            .join()
            .map_err(|_| MemcacheError::Load("a receiver thread panicked".into()))?;
        match send_err {
            Some(e) => Err(e),
            None => tally,
        }
    })
}

/// Runs the load; see the module docs.
///
/// # Errors
/// An invalid spec, a connection that fails, times out or gets a malformed reply.
pub fn run_load(spec: &LoadSpec) -> Result<LoadResult, MemcacheError> {
    spec.validate()?;
    let reqs = Requests::new(spec)?;
    preload(spec, &reqs)?;
    let start = Instant::now();
    let measure_from = start + Duration::from_secs_f64(spec.warmup_s);
    let marks = Marks {
        measure_from,
        end: measure_from + Duration::from_secs_f64(spec.duration_s),
        budget: spec.max_requests.div_ceil(spec.connections as u64),
    };
    let results: Vec<Result<Tally, MemcacheError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..spec.connections)
            .map(|c| {
                let reqs = &reqs;
                scope.spawn(move || match spec.mode {
                    LoadMode::Closed { depth } => closed_loop(spec, reqs, c, depth, marks),
                    LoadMode::Open { rate_per_s } => {
                        open_loop(spec, reqs, c, rate_per_s / spec.connections as f64, marks)
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(MemcacheError::Load("a load thread panicked".into())))
            })
            .collect()
    });
    let finished = Instant::now().min(marks.end);
    let mut total = Tally::new();
    for r in results {
        let t = r?;
        total
            .hist
            .add(&t.hist)
            .map_err(|e| MemcacheError::Load(format!("merging histograms: {e}")))?;
        total.requests += t.requests;
        total.errors += t.errors;
        total.misses += t.misses;
    }
    let elapsed_s = finished
        .saturating_duration_since(measure_from)
        .as_secs_f64();
    Ok(LoadResult {
        requests: total.requests,
        errors: total.errors,
        misses: total.misses,
        elapsed_s,
        throughput_per_s: if elapsed_s > 0.0 {
            total.requests as f64 / elapsed_s
        } else {
            0.0
        },
        latency: summarize(&total.hist),
    })
}
