//! The tail-latency probe: RTT distributions of TCP and UDP request-response exchanges, after
//! shared/papers/tail-latency-network-protocols.txt (100K exchanges, 64 B to 512 KB, 1 to 8
//! client-server pairs, blocking vs non-blocking sockets, TCP vs UDP).
//!
//! A [`ProbeSpec`] names one configuration. [`server`] echoes messages (blocking: a thread per
//! connection; non-blocking: tokio over epoll); [`client`] runs the pairs, closed-loop
//! (ping-pong: send, wait for the reply, repeat) or open-loop at a fixed rate, where each RTT is
//! measured from the request's *intended* send time so a slow reply delays no measurement
//! (no coordinated omission). [`run_probe`] starts both on [`Hosts`]: loopback, or two network
//! namespaces ([`crate::netns`]). [`run_sweep`] runs the cross product of a [`SweepPlan`].
//! Results are HdrHistogram percentiles ([`stats`]) in serde structs that the CLI prints as JSON.
//!
//! Limits: IPv4; UDP payloads up to the datagram limit ([`UDP_MAX_PAYLOAD`]); a UDP reply not
//! back within the timeout counts as lost (reported, not part of the distribution). Plotting
//! and tables live in the CLI.

pub mod client;
pub mod pin;
pub mod server;
pub mod stats;
pub mod wire;

use crate::error::ProbeError;
use crate::netns::{LinkOptions, TwoHosts};
use serde::{Deserialize, Serialize};
pub use stats::{CdfPoint, RttStats};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Smallest payload [bytes]: the message header.
pub const MIN_SIZE: usize = wire::HEADER_BYTES;
/// Largest payload [bytes].
pub const MAX_SIZE: usize = wire::MAX_MESSAGE_BYTES;
/// Largest UDP payload over IPv4 [bytes]: 65535 − 20 (IP header) − 8 (UDP header).
pub const UDP_MAX_PAYLOAD: usize = 65_507;
/// Most concurrent client-server pairs.
pub const MAX_PAIRS: usize = 64;
/// Default number of measured exchanges per configuration (the study's 100K).
pub const DEFAULT_COUNT: u64 = 100_000;
/// Longest time limit of one configuration [s]: a day.
pub const MAX_TIME_S: f64 = 86_400.0;

/// Transport protocol of the exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tcp,
    Udp,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Protocol {
    type Err = ProbeError;
    /// `tcp` or `udp`; `rdma` is recognised and refused with the reason.
    fn from_str(s: &str) -> Result<Protocol, ProbeError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "tcp" => Ok(Protocol::Tcp),
            "udp" => Ok(Protocol::Udp),
            "rdma" => Err(ProbeError::RdmaUnavailable(crate::rdma::detect().detail)),
            _ => Err(ProbeError::UnknownProtocol(s.to_string())),
        }
    }
}

/// How sockets wait for data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// blocking system calls, one thread per pair
    Blocking,
    /// non-blocking sockets on epoll (tokio)
    Nonblocking,
}

impl FromStr for IoMode {
    type Err = ProbeError;
    /// `blocking` (or `block`, `sync`) or `nonblocking` (or `non-blocking`, `epoll`, `tokio`,
    /// `async`).
    fn from_str(s: &str) -> Result<IoMode, ProbeError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "blocking" | "block" | "sync" => Ok(IoMode::Blocking),
            "nonblocking" | "non-blocking" | "epoll" | "tokio" | "async" => Ok(IoMode::Nonblocking),
            _ => Err(ProbeError::UnknownIoMode(s.to_string())),
        }
    }
}

impl IoMode {
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Blocking => "blocking",
            IoMode::Nonblocking => "nonblocking",
        }
    }
}

impl fmt::Display for IoMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When requests are sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum Load {
    /// ping-pong: each pair sends its next request when the previous reply is back
    ClosedLoop,
    /// requests at fixed intervals regardless of replies; RTT from the intended send time
    OpenLoop {
        /// requests per second over all pairs [1/s]
        rate_per_s: f64,
    },
}

/// One probe configuration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeSpec {
    pub protocol: Protocol,
    pub io: IoMode,
    /// bytes per request and per reply [bytes]
    pub size_bytes: usize,
    /// concurrent client-server pairs (connections)
    pub pairs: usize,
    /// measured exchanges over all pairs (split evenly between them)
    pub count: u64,
    /// exchanges before measuring, over all pairs (split evenly)
    pub warmup: u64,
    pub load: Load,
    /// stop after this long even when `count` exchanges are not done [s] (warm-up included;
    /// closed loop: no pair starts an exchange after it; open loop: the requests due within
    /// it, see [`ProbeSpec::within_time`]); `None`: `count` alone ends the run
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
}

impl ProbeSpec {
    /// The spec an open loop runs under a time limit: the requests due within `time_s` at
    /// its rate (warm-up first, at least one measured request per pair); a closed loop, or
    /// no limit, is unchanged.
    pub fn within_time(&self) -> ProbeSpec {
        let (Some(time_s), Load::OpenLoop { rate_per_s }) = (self.time_s, self.load) else {
            return *self;
        };
        let due = (rate_per_s * time_s).floor().min(u64::MAX as f64) as u64;
        let warmup = self.warmup.min(due);
        let count = self.count.min(due - warmup).max(self.pairs as u64);
        ProbeSpec {
            count,
            warmup,
            ..*self
        }
    }

    /// Checks sizes, pairs, counts and rates; errors say what to use instead.
    pub fn validate(&self) -> Result<(), ProbeError> {
        validate_size(self.size_bytes as u64)?;
        if self.protocol == Protocol::Udp && self.size_bytes > UDP_MAX_PAYLOAD {
            return Err(ProbeError::UdpTooLarge {
                size_bytes: self.size_bytes,
                limit: UDP_MAX_PAYLOAD,
            });
        }
        if !(1..=MAX_PAIRS).contains(&self.pairs) {
            return Err(ProbeError::Pairs {
                pairs: self.pairs,
                max: MAX_PAIRS,
            });
        }
        if self.count < self.pairs as u64 {
            return Err(ProbeError::Count {
                count: self.count,
                pairs: self.pairs,
            });
        }
        if let Load::OpenLoop { rate_per_s } = self.load {
            if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
                return Err(ProbeError::Rate { rate_per_s });
            }
        }
        if let Some(time_s) = self.time_s {
            if !(time_s.is_finite() && time_s > 0.0 && time_s <= MAX_TIME_S) {
                return Err(ProbeError::Time { time_s });
            }
        }
        Ok(())
    }

    /// (measured, warm-up) exchanges of pair `i`.
    pub fn share(&self, i: usize) -> (u64, u64) {
        let split = |total: u64| {
            let n = self.pairs as u64;
            total / n + u64::from((i as u64) < total % n)
        };
        (split(self.count), split(self.warmup))
    }

    /// Exchanges the run performs, warm-up included.
    pub fn exchanges(&self) -> u64 {
        self.count + self.warmup
    }

    /// A short label: `tcp 1KiB x2 blocking`.
    pub fn label(&self) -> String {
        let load = match self.load {
            Load::ClosedLoop => String::new(),
            Load::OpenLoop { rate_per_s } => format!(" @{rate_per_s}/s"),
        };
        let time = self.time_s.map_or(String::new(), |t| format!(" ≤{t}s"));
        format!(
            "{} {} x{} {}{load}{time}",
            self.protocol,
            size_label(self.size_bytes),
            self.pairs,
            self.io
        )
    }
}

/// Checks a payload size against [`MIN_SIZE`]..=[`MAX_SIZE`].
pub fn validate_size(size_bytes: u64) -> Result<(), ProbeError> {
    if size_bytes < MIN_SIZE as u64 || size_bytes > MAX_SIZE as u64 {
        return Err(ProbeError::Size {
            size_bytes,
            min: MIN_SIZE,
            max: MAX_SIZE,
        });
    }
    Ok(())
}

/// `64B`, `1KiB`, `512KiB`, `1500B`.
pub fn size_label(size_bytes: usize) -> String {
    match size_bytes {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{}MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{}KiB", s >> 10),
        s => format!("{s}B"),
    }
}

/// Shared between a run and whoever watches it: progress and a stop request.
#[derive(Debug, Default)]
pub struct Control {
    done: AtomicU64,
    stop: AtomicBool,
}

impl Control {
    pub fn new() -> Control {
        Control::default()
    }
    /// Exchanges completed so far (warm-up included), over every configuration run with this
    /// control.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
    #[inline]
    pub(crate) fn tick(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }
    /// Asks the run to stop soon; it returns [`ProbeError::Interrupted`].
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Options of a run that are not part of the measured configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// TCP: give up when a reply takes longer; UDP: count it lost [s]
    pub timeout_s: f64,
    /// CPUs for the client's threads (pair i on `client_cpus[i % len]`); empty = unpinned
    pub client_cpus: Vec<usize>,
    /// CPUs for the server's threads; empty = unpinned
    pub server_cpus: Vec<usize>,
    /// the TOS byte the client's requests carry ([`crate::tos`]); `None`: unmarked
    pub tos: Option<u8>,
    /// server port; 0 = any free port
    pub port: u16,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            timeout_s: 2.0,
            client_cpus: Vec::new(),
            server_cpus: Vec::new(),
            tos: None,
            port: 0,
        }
    }
}

impl RunOptions {
    pub fn validate(&self) -> Result<(), ProbeError> {
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(ProbeError::Timeout {
                timeout_s: self.timeout_s,
            });
        }
        pin::check(&self.client_cpus)?;
        pin::check(&self.server_cpus)
    }
}

/// Where server and client run.
#[derive(Debug)]
pub enum Hosts {
    /// both in the calling process's namespace, over 127.0.0.1
    Loopback,
    /// server and client in two namespaces joined by a veth pair
    Netns(TwoHosts),
}

impl Hosts {
    /// Creates two namespaces joined by a veth pair (see [`crate::netns`]).
    pub fn netns(link: LinkOptions) -> Result<Hosts, ProbeError> {
        Ok(Hosts::Netns(TwoHosts::create(link)?))
    }

    /// Describes the setup for reports.
    pub fn setup(&self) -> Setup {
        match self {
            Hosts::Loopback => Setup {
                kind: "loopback".into(),
                bridge: false,
                link_rate_bytes_per_s: None,
            },
            Hosts::Netns(h) => Setup {
                kind: "netns".into(),
                bridge: h.link().bridge,
                link_rate_bytes_per_s: h.link().rate_bytes_per_s,
            },
        }
    }

    fn server_ip(&self) -> IpAddr {
        match self {
            Hosts::Loopback => IpAddr::V4(Ipv4Addr::LOCALHOST),
            Hosts::Netns(h) => h.server_ip(),
        }
    }

    fn server_ns(&self) -> Option<String> {
        match self {
            Hosts::Loopback => None,
            Hosts::Netns(h) => Some(h.server_ns().to_string()),
        }
    }

    fn client_ns(&self) -> Option<String> {
        match self {
            Hosts::Loopback => None,
            Hosts::Netns(h) => Some(h.client_ns().to_string()),
        }
    }
}

/// The host setup of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// `loopback` or `netns`
    pub kind: String,
    /// a bridge between the namespaces
    pub bridge: bool,
    /// HTB rate of the link [bytes/s]
    pub link_rate_bytes_per_s: Option<f64>,
}

/// The result of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub spec: ProbeSpec,
    pub setup: Setup,
    pub rtt: RttStats,
    /// measured requests sent
    pub sent: u64,
    /// measured UDP requests whose reply did not come back within the timeout
    pub lost: u64,
    /// wall time of the measured and warm-up exchanges [s]
    pub elapsed_s: f64,
    /// completed exchanges per second over all pairs, warm-up included [1/s]
    pub exchanges_per_s: f64,
    /// the RTT distribution, fine in the tail
    pub cdf: Vec<CdfPoint>,
    /// every measured RTT [ns] (for `.hgrm` files, [`stats::percentile_distribution`]); not
    /// in the JSON
    #[serde(skip)]
    pub histogram: Option<hdrhistogram::Histogram<u64>>,
}

/// Runs one configuration: starts a server on the server host, the client pairs on the client
/// host, and stops the server.
pub fn run_probe(
    spec: &ProbeSpec,
    hosts: &Hosts,
    opts: &RunOptions,
    ctl: &Arc<Control>,
) -> Result<ProbeResult, ProbeError> {
    spec.validate()?;
    opts.validate()?;
    let server = server::Server::start(&server::ServerConfig {
        bind: SocketAddr::new(hosts.server_ip(), opts.port),
        protocols: vec![spec.protocol],
        io: spec.io,
        threads: spec.pairs.min(available_cpus()),
        netns: hosts.server_ns(),
        cpus: opts.server_cpus.clone(),
    })?;
    let addr = match spec.protocol {
        Protocol::Tcp => server.tcp_addr(),
        Protocol::Udp => server.udp_addr(),
    };
    let Some(addr) = addr else {
        return Err(ProbeError::Panicked("server has no address".into()));
    };
    let outcome = client::run(
        spec,
        &client::ClientConfig {
            server: addr,
            netns: hosts.client_ns(),
            cpus: opts.client_cpus.clone(),
            timeout_s: opts.timeout_s,
            tos: opts.tos,
        },
        ctl,
    );
    server.shutdown();
    let run = outcome?;
    result_of(spec, hosts.setup(), run)
}

/// Turns a client run into a result.
pub fn result_of(
    spec: &ProbeSpec,
    setup: Setup,
    run: client::ClientRun,
) -> Result<ProbeResult, ProbeError> {
    if let (0, Some(time_s)) = (run.sent, spec.time_s) {
        return Err(ProbeError::NothingMeasured {
            time_s,
            warmup: spec.warmup,
        });
    }
    let Some(rtt) = stats::summarize(&run.hist) else {
        return Err(ProbeError::AllLost {
            protocol: spec.protocol.name(),
            lost: run.lost,
            sent: run.sent,
        });
    };
    Ok(ProbeResult {
        spec: *spec,
        setup,
        cdf: stats::cdf(&run.hist),
        histogram: Some(run.hist),
        rtt,
        sent: run.sent,
        lost: run.lost,
        elapsed_s: run.elapsed_s,
        exchanges_per_s: if run.elapsed_s > 0.0 {
            (run.sent + spec.warmup) as f64 / run.elapsed_s
        } else {
            0.0
        },
    })
}

/// CPUs available to this process (at least 1).
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The cross product to sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPlan {
    pub protocols: Vec<Protocol>,
    pub io: Vec<IoMode>,
    /// [bytes]
    pub sizes_bytes: Vec<usize>,
    pub pairs: Vec<usize>,
    /// measured exchanges per configuration
    pub count: u64,
    /// warm-up exchanges per configuration
    pub warmup: u64,
    pub load: Load,
    /// time limit per configuration [s] ([`ProbeSpec::time_s`])
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_s: Option<f64>,
}

/// A configuration the sweep left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub spec: ProbeSpec,
    pub reason: String,
}

impl SweepPlan {
    /// The configurations to run (protocol, I/O mode, pairs, size order) and those left out:
    /// UDP sizes above the datagram limit are skipped, saying so. Other invalid values are
    /// errors.
    pub fn expand(&self) -> Result<(Vec<ProbeSpec>, Vec<Skipped>), ProbeError> {
        let (mut run, mut skipped) = (Vec::new(), Vec::new());
        for &protocol in &self.protocols {
            for &io in &self.io {
                for &pairs in &self.pairs {
                    for &size_bytes in &self.sizes_bytes {
                        let spec = ProbeSpec {
                            protocol,
                            io,
                            size_bytes,
                            pairs,
                            count: self.count,
                            warmup: self.warmup,
                            load: self.load,
                            time_s: self.time_s,
                        };
                        match spec.validate() {
                            Ok(()) => run.push(spec),
                            Err(e @ ProbeError::UdpTooLarge { .. }) => skipped.push(Skipped {
                                spec,
                                reason: e.to_string(),
                            }),
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
        Ok((run, skipped))
    }
}

/// The results of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    pub setup: Setup,
    pub plan: SweepPlan,
    pub results: Vec<ProbeResult>,
    pub skipped: Vec<Skipped>,
    /// RDMA was not measured; this says whether it could have been
    pub rdma: crate::rdma::RdmaStatus,
}

/// Runs every configuration of `plan` in turn on the same hosts; `on_start(i, n, spec)` is
/// called before configuration `i` of `n`.
pub fn run_sweep(
    plan: &SweepPlan,
    hosts: &Hosts,
    opts: &RunOptions,
    ctl: &Arc<Control>,
    on_start: &mut dyn FnMut(usize, usize, &ProbeSpec),
) -> Result<SweepReport, ProbeError> {
    let (specs, skipped) = plan.expand()?;
    for s in &skipped {
        tracing::info!(config = %s.spec.label(), "skipped: {}", s.reason);
    }
    let mut results = Vec::with_capacity(specs.len());
    for (i, spec) in specs.iter().enumerate() {
        on_start(i, specs.len(), spec);
        results.push(run_probe(spec, hosts, opts, ctl)?);
    }
    Ok(SweepReport {
        setup: hosts.setup(),
        plan: plan.clone(),
        results,
        skipped,
        rdma: crate::rdma::detect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ProbeSpec {
        ProbeSpec {
            protocol: Protocol::Tcp,
            io: IoMode::Blocking,
            size_bytes: 1024,
            pairs: 3,
            count: 10,
            warmup: 4,
            load: Load::ClosedLoop,
            time_s: None,
        }
    }

    #[test]
    fn an_open_loop_under_a_time_limit_sends_what_is_due_within_it() {
        let open = ProbeSpec {
            load: Load::OpenLoop { rate_per_s: 100.0 },
            count: 1000,
            warmup: 20,
            time_s: Some(1.5),
            ..spec()
        };
        // 150 requests are due in 1.5 s: 20 warm-up, 130 measured
        let w = open.within_time();
        assert_eq!((w.warmup, w.count), (20, 130));
        // a limit longer than the count changes nothing; a closed loop is bounded while it runs
        let long = ProbeSpec {
            time_s: Some(60.0),
            ..open
        };
        assert_eq!(long.within_time(), long);
        let closed = ProbeSpec {
            time_s: Some(0.1),
            ..spec()
        };
        assert_eq!(closed.within_time(), closed);
        // at least one measured request per pair
        let short = ProbeSpec {
            time_s: Some(0.01),
            ..open
        };
        assert_eq!(short.within_time().count, 3);
        let e = ProbeSpec {
            time_s: Some(0.0),
            ..spec()
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("invalid time 0"), "{e}");
    }

    #[test]
    fn shares_split_counts_evenly_and_add_up() {
        let s = spec();
        let shares: Vec<(u64, u64)> = (0..3).map(|i| s.share(i)).collect();
        assert_eq!(shares, vec![(4, 2), (3, 1), (3, 1)]);
        assert_eq!(s.exchanges(), 14);
    }

    #[test]
    fn bad_specs_are_refused_with_the_value_and_the_fix() {
        let cases: Vec<(ProbeSpec, &str)> = vec![
            (
                ProbeSpec {
                    size_bytes: 0,
                    ..spec()
                },
                "invalid payload size 0",
            ),
            (
                ProbeSpec { pairs: 0, ..spec() },
                "invalid number of pairs 0",
            ),
            (
                ProbeSpec {
                    protocol: Protocol::Udp,
                    size_bytes: 512 << 10,
                    ..spec()
                },
                "datagram limit of 65507",
            ),
            (ProbeSpec { count: 2, ..spec() }, "invalid count 2"),
            (
                ProbeSpec {
                    load: Load::OpenLoop { rate_per_s: 0.0 },
                    ..spec()
                },
                "invalid open-loop rate 0",
            ),
        ];
        for (s, want) in cases {
            let err = s.validate().unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
        }
        assert!(spec().validate().is_ok());
    }

    #[test]
    fn protocols_parse_and_rdma_is_refused_plainly() {
        assert_eq!("TCP".parse::<Protocol>().unwrap(), Protocol::Tcp);
        assert_eq!("udp".parse::<Protocol>().unwrap(), Protocol::Udp);
        let sctp = "sctp".parse::<Protocol>().unwrap_err().to_string();
        assert!(
            sctp.contains("\"sctp\"") && sctp.contains("tcp or udp"),
            "{sctp}"
        );
        if !crate::rdma::detect().available {
            let rdma = "rdma".parse::<Protocol>().unwrap_err().to_string();
            assert!(rdma.contains("rdma is not available"), "{rdma}");
        }
    }

    #[test]
    fn sweep_skips_udp_sizes_above_the_datagram_limit() {
        let plan = SweepPlan {
            protocols: vec![Protocol::Tcp, Protocol::Udp],
            io: vec![IoMode::Blocking],
            sizes_bytes: vec![64, 512 << 10],
            pairs: vec![1, 2],
            count: 10,
            warmup: 0,
            load: Load::ClosedLoop,
            time_s: None,
        };
        let (run, skipped) = plan.expand().unwrap();
        assert_eq!(run.len(), 6);
        assert_eq!(skipped.len(), 2);
        assert!(skipped.iter().all(|s| s.spec.protocol == Protocol::Udp));
        assert!(skipped[0].reason.contains("datagram limit"));
        let bad = SweepPlan {
            pairs: vec![0],
            ..plan
        };
        assert!(bad.expand().is_err());
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(64), "64B");
        assert_eq!(size_label(1024), "1KiB");
        assert_eq!(size_label(512 << 10), "512KiB");
        assert_eq!(size_label(1500), "1500B");
    }
}
