//! Traffic that ignores admission: a UDP or TCP blast at line rate from one host toward a
//! [`Sink`] on another, for showing what enforcement protects tenants against (the
//! interference of EyeQ's and SNC-Meister's experiments).
//!
//! A UDP blast paces datagrams of [`DATAGRAM_BYTES`] at the given rate in 1 ms steps (no busy
//! loop: on two cores a sender that spins would starve the run it disturbs); a TCP blast
//! writes as fast as the connection takes data, so its own link's shaper sets its rate. Both
//! stop by themselves at their deadline or when the [`Control`] asks. The sink reads and
//! discards, on threads in the target's namespace, until stopped; every blocking call on its
//! sockets times out every 100 ms so that it notices the stop.
//!
//! Where the blast goes and when it runs is the testbed's to decide; the replayed tenants'
//! own traffic lives in [`crate::replay`].

use crate::error::ReplayError;
use crate::netns;
use crate::probe::Control;
use crate::tos::set_tos;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Payload of a blast datagram [bytes]: one 1500-byte Ethernet frame with its IP and UDP
/// headers.
pub const DATAGRAM_BYTES: usize = 1472;

/// How often blocking socket calls wake up to check for a stop.
const POLL: Duration = Duration::from_millis(100);

/// The transport of a blast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlastProtocol {
    Udp,
    Tcp,
}

impl BlastProtocol {
    fn name(self) -> &'static str {
        match self {
            BlastProtocol::Udp => "udp",
            BlastProtocol::Tcp => "tcp",
        }
    }
}

/// Reads and discards a blast; see the module docs.
#[derive(Debug)]
pub struct Sink {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    received: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

/// Runs `f` on a new thread in namespace `ns` and returns its result.
fn in_netns<T: Send>(
    ns: Option<&str>,
    f: impl FnOnce() -> Result<T, ReplayError> + Send,
) -> Result<T, ReplayError> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("blast-setup".into())
            .spawn_scoped(scope, || {
                if let Some(ns) = ns {
                    netns::enter(ns)?;
                }
                f()
            })
            .map_err(ReplayError::Thread)?
            .join()
            .map_err(|_| ReplayError::Panicked)?
    })
}

impl Sink {
    /// Binds `bind` (port 0: any free one) in namespace `ns` and starts discarding.
    pub fn start(
        ns: Option<&str>,
        bind: SocketAddr,
        protocol: BlastProtocol,
    ) -> Result<Sink, ReplayError> {
        let err = |source| ReplayError::Bind {
            protocol: protocol.name(),
            addr: bind,
            source,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let received = Arc::new(AtomicU64::new(0));
        let mut sink = Sink {
            addr: bind,
            stop: Arc::clone(&stop),
            received: Arc::clone(&received),
            threads: Vec::new(),
        };
        match protocol {
            BlastProtocol::Udp => {
                let sock = in_netns(ns, || UdpSocket::bind(bind).map_err(err))?;
                sock.set_read_timeout(Some(POLL)).map_err(err)?;
                sink.addr = sock.local_addr().map_err(err)?;
                sink.spawn("blast-sink-udp", move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(n) = sock.recv(&mut buf) {
                            received.fetch_add(n as u64, Ordering::Relaxed);
                        }
                    }
                })?;
            }
            BlastProtocol::Tcp => {
                let listener = in_netns(ns, || TcpListener::bind(bind).map_err(err))?;
                listener.set_nonblocking(true).map_err(err)?;
                sink.addr = listener.local_addr().map_err(err)?;
                sink.spawn("blast-sink-tcp", move || {
                    let mut readers = Vec::new();
                    while !stop.load(Ordering::Relaxed) {
                        match listener.accept() {
                            Ok((s, _)) => {
                                let (stop, received) = (Arc::clone(&stop), Arc::clone(&received));
                                readers
                                    .push(std::thread::spawn(move || discard(s, &stop, &received)));
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(10)),
                        }
                    }
                    for r in readers {
                        let _ = r.join();
                    }
                })?;
            }
        }
        Ok(sink)
    }

    /// Starts `f` on a thread named `name`, and returns once that thread runs (named, at the
    /// priority it inherits), however late a busy machine schedules it.
    fn spawn(&mut self, name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), ReplayError> {
        let (running, started) = std::sync::mpsc::channel();
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let _ = running.send(());
                f()
            })
            .map_err(ReplayError::Thread)?;
        // an error only if the thread ended without sending: nothing to wait for then
        let _ = started.recv();
        self.threads.push(h);
        Ok(())
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops it; returns the bytes it received.
    pub fn stop(mut self) -> u64 {
        self.halt();
        self.received.load(Ordering::Relaxed)
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.halt();
    }
}

fn discard(mut s: TcpStream, stop: &AtomicBool, received: &AtomicU64) {
    if s.set_nonblocking(false).is_err() || s.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// One blast.
#[derive(Debug, Clone, PartialEq)]
pub struct BlastSpec {
    pub protocol: BlastProtocol,
    /// the sending host's namespace (`None`: the caller's)
    pub netns: Option<String>,
    /// the address to send from (`None`: the host's)
    pub source: Option<Ipv4Addr>,
    /// the sink
    pub target: SocketAddr,
    /// UDP: the pace [bytes/s of payload]; TCP: ignored (the link sets it)
    pub rate_bytes_per_s: f64,
    /// IP_TOS of its packets
    pub tos: u8,
}

/// Sends `spec`'s blast until `until` (or a stop); returns the payload bytes sent. Blocks.
pub fn blast(spec: &BlastSpec, until: Instant, ctl: &Control) -> Result<u64, ReplayError> {
    if spec.protocol == BlastProtocol::Udp
        && !(spec.rate_bytes_per_s.is_finite() && spec.rate_bytes_per_s > 0.0)
    {
        return Err(ReplayError::Options(format!(
            "blast rate {} B/s; a UDP blast needs a finite rate > 0",
            spec.rate_bytes_per_s
        )));
    }
    let io = |source: std::io::Error| ReplayError::Bind {
        protocol: spec.protocol.name(),
        addr: spec.target,
        source,
    };
    let src = SocketAddr::new(spec.source.unwrap_or(Ipv4Addr::UNSPECIFIED).into(), 0);
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("blast".into())
            .spawn_scoped(scope, || {
                if let Some(ns) = &spec.netns {
                    netns::enter(ns)?;
                }
                match spec.protocol {
                    BlastProtocol::Udp => {
                        let sock = UdpSocket::bind(src).map_err(io)?;
                        set_tos(&sock, spec.tos).map_err(io)?;
                        sock.connect(spec.target).map_err(io)?;
                        Ok(udp(&sock, spec.rate_bytes_per_s, until, ctl))
                    }
                    BlastProtocol::Tcp => {
                        let left = until.saturating_duration_since(Instant::now());
                        let s =
                            tcp_connect(src, spec.target, spec.tos, left.max(POLL)).map_err(io)?;
                        Ok(tcp(s, until, ctl))
                    }
                }
            })
            .map_err(ReplayError::Thread)?
            .join()
            .map_err(|_| ReplayError::Panicked)?
    })
}

fn udp(sock: &UdpSocket, rate: f64, until: Instant, ctl: &Control) -> u64 {
    let payload = [0u8; DATAGRAM_BYTES];
    let start = Instant::now();
    let mut sent = 0u64;
    let step = Duration::from_millis(1);
    let mut next = start;
    while next < until && !ctl.stopped() {
        // what the pace allows by the end of this step
        let due = ((next + step - start).as_secs_f64() * rate) as u64;
        while sent < due {
            match sock.send(&payload) {
                Ok(n) => sent += n as u64,
                // a full queue drops the datagram, as a wire would
                Err(_) => sent += DATAGRAM_BYTES as u64,
            }
        }
        next += step;
        if let Some(d) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
    }
    sent
}

fn tcp_connect(
    src: SocketAddr,
    target: SocketAddr,
    tos: u8,
    timeout: Duration,
) -> std::io::Result<TcpStream> {
    // std cannot bind before connecting; a nonblocking tokio socket can, on a small runtime
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4()?;
        set_tos(&sock, tos)?;
        sock.bind(src)?;
        let s = tokio::time::timeout(timeout, sock.connect(target))
            .await
            .map_err(|_| std::io::Error::new(ErrorKind::TimedOut, "connecting timed out"))??;
        let s = s.into_std()?;
        s.set_nonblocking(false)?;
        Ok(s)
    })
}

fn tcp(mut s: TcpStream, until: Instant, ctl: &Control) -> u64 {
    if s.set_write_timeout(Some(POLL)).is_err() {
        return 0;
    }
    let chunk = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    while Instant::now() < until && !ctl.stopped() {
        match s.write(&chunk) {
            Ok(n) => sent += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
    sent
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_udp_blast_sends_its_rate_and_stops_at_its_deadline() {
        let sink = Sink::start(None, "127.0.0.1:0".parse().unwrap(), BlastProtocol::Udp).unwrap();
        let spec = BlastSpec {
            protocol: BlastProtocol::Udp,
            netns: None,
            source: None,
            target: sink.addr(),
            rate_bytes_per_s: 1e6,
            tos: 0,
        };
        let start = Instant::now();
        let sent = blast(&spec, start + Duration::from_millis(200), &Control::new()).unwrap();
        // the pace never runs ahead: at most the rate times the span, one step more
        let span = start.elapsed().as_secs_f64();
        assert!(
            sent as f64 <= 1e6 * (span + 0.001) + DATAGRAM_BYTES as f64,
            "{sent} in {span}"
        );
        assert!(sent > 0);
        let _ = sink.stop();
    }

    #[test]
    fn a_tcp_blast_reaches_its_sink_and_a_stopped_control_ends_it() {
        let sink = Sink::start(None, "127.0.0.1:0".parse().unwrap(), BlastProtocol::Tcp).unwrap();
        let spec = BlastSpec {
            protocol: BlastProtocol::Tcp,
            netns: None,
            source: Some(Ipv4Addr::LOCALHOST),
            target: sink.addr(),
            rate_bytes_per_s: 0.0,
            tos: 0x10,
        };
        let sent = blast(
            &spec,
            Instant::now() + Duration::from_millis(100),
            &Control::new(),
        )
        .unwrap();
        assert!(sent > 0);
        let stopped = Control::new();
        stopped.stop();
        let none = blast(&spec, Instant::now() + Duration::from_secs(600), &stopped).unwrap();
        assert_eq!(none, 0);
        let received = sink.stop();
        assert!(received <= sent, "{received} > {sent}");
    }
}
