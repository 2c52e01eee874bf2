//! The receiver agent: a packet socket on the receiving host's interface feeding
//! `tailbound_shaping::eyeq::Receiver`, feedback out in UDP datagrams. See the module docs of
//! [`crate::eyeq`].

use super::{io_error, thread_cpu_s, wire, AgentThread, EyeqAgentError};
use crate::netns;
use crate::tc::netlink;
use std::ffi::CString;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use tailbound_shaping::eyeq::{EyeqConfig, Receiver, ReceiverStats};

/// Ethernet header bytes, which the packet socket strips and HTB counts: lengths are reported
/// as frames, the unit the links are shaped in.
const ETH_HLEN: u64 = 14;
/// The most bins one report holds.
const MAX_BINS: u64 = 1_000_000;
/// How long a read waits before the agent closes intervals and checks for a stop.
const POLL: Duration = Duration::from_millis(2);
/// How often the switch port's queue is read for marks [ns].
const MARK_POLL_NS: u64 = 1_000_000;

/// The switch port in front of the receiving host, whose queue marks what it delivers: EyeQ's
/// switches mark ECN above a threshold. This kernel has no marking qdisc, so the agent reads
/// the port's backlog over rtnetlink every millisecond and counts each arrival as marked
/// while the backlog is above `mark_threshold_s` × the line rate (marking at dequeue).
#[derive(Debug, Clone, PartialEq)]
pub struct PortQueue {
    /// the switch's namespace
    pub netns: String,
    /// the port: the switch's end of the receiving host's link
    pub iface: String,
    /// the port's queue: its qdisc handle (`0x0002_0000` for `2:`)
    pub qdisc: u32,
}

/// What a [`ReceiverAgent`] watches and whom it tells.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiverSpec {
    /// the receiving host's namespace
    pub netns: String,
    /// its interface (e.g. [`netns::HOST_IFACE`])
    pub iface: String,
    /// tenant `t` is every packet to `tenants[t]` (each tenant VM has its own address)
    pub tenants: Vec<Ipv4Addr>,
    /// their guarantee weights, one per tenant
    pub weights: Vec<f64>,
    /// EyeQ's parameters for the receiving link
    pub config: EyeqConfig,
    /// send the feedback; `false`: only measure (what EyeQ decides is still computed and
    /// counted, nobody is told)
    pub feedback: bool,
    /// the senders' feedback port ([`wire::PORT`])
    pub feedback_port: u16,
    /// bins of the per-tenant byte series [ns]
    pub bin_ns: u64,
    /// the switch port whose queue marks arrivals; required by, and only with, `config.ecn`
    pub marks: Option<PortQueue>,
    /// the agent stops by itself after this long
    pub max_duration: Duration,
}

/// What a receiver agent saw and did.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReceiverReport {
    /// bytes (frames) each tenant received per bin of `bin_ns`, from [`ReceiverAgent::epoch`]
    pub tenant_bytes: Vec<Vec<u64>>,
    /// the `Receiver`'s counters: `limits + releases` feedback messages decided
    pub stats: ReceiverStats,
    /// IPv4 packets to a tenant
    pub packets: u64,
    /// IPv4 packets to other addresses of the host (not counted)
    pub other_packets: u64,
    /// feedback datagrams sent
    pub feedback_sent: u64,
    /// feedback datagrams the socket refused
    pub feedback_errors: u64,
    /// packets the kernel dropped before the agent read them (its socket buffer was full)
    pub socket_drops: u64,
    /// packets counted as marked (the switch port's queue above the threshold)
    #[serde(default)]
    pub marked: u64,
    /// the largest backlog read at the switch port [bytes]
    #[serde(default)]
    pub port_peak_bytes: u64,
    /// how long it ran [s]
    pub elapsed_s: f64,
    /// CPU time its thread used [s]
    pub cpu_s: f64,
}

/// A running receiver agent; stopped (and its thread joined) by [`ReceiverAgent::stop`] or
/// on drop.
#[derive(Debug)]
pub struct ReceiverAgent {
    thread: AgentThread<ReceiverReport>,
    epoch: Instant,
}

impl ReceiverAgent {
    /// Opens the packet socket in the namespace and starts; returns once it is reading.
    ///
    /// # Errors
    /// A bad spec, a missing namespace or interface, a socket that cannot be opened.
    pub fn start(spec: ReceiverSpec) -> Result<ReceiverAgent, EyeqAgentError> {
        if spec.tenants.is_empty() || spec.tenants.len() != spec.weights.len() {
            return Err(EyeqAgentError::Spec {
                agent: "receiver",
                message: format!(
                    "{} tenant addresses and {} weights",
                    spec.tenants.len(),
                    spec.weights.len()
                ),
                expected: "one guarantee weight per tenant address, at least one tenant",
            });
        }
        if spec.bin_ns == 0
            || spec.max_duration.as_nanos() / u128::from(spec.bin_ns) > u128::from(MAX_BINS)
        {
            return Err(EyeqAgentError::Spec {
                agent: "receiver",
                message: format!("bins of {} ns over {:?}", spec.bin_ns, spec.max_duration),
                expected: "bins > 0 ns, at most 1000000 of them per run",
            });
        }
        if spec.config.ecn != spec.marks.is_some() {
            return Err(EyeqAgentError::Spec {
                agent: "receiver",
                message: format!(
                    "ecn = {} with {} switch port to read marks from",
                    spec.config.ecn,
                    if spec.marks.is_some() { "a" } else { "no" }
                ),
                expected: "a switch port (marks) exactly when the config has ecn set",
            });
        }
        // checked here, so that a bad setting fails before the thread starts
        Receiver::<Ipv4Addr>::new(spec.config, &spec.weights, 0)?;
        let (thread, epoch) =
            AgentThread::spawn("receiver", move |stop, ready| run(&spec, stop, ready))?;
        Ok(ReceiverAgent { thread, epoch })
    }

    /// Time 0 of its clock: of the `Receiver` and of the first bin.
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// Stops it and returns its report.
    ///
    /// # Errors
    /// The error that ended it early (a socket failing).
    pub fn stop(self) -> Result<ReceiverReport, EyeqAgentError> {
        self.thread.stop()
    }
}

fn run(
    spec: &ReceiverSpec,
    stop: &AtomicBool,
    ready: &mpsc::Sender<Instant>,
) -> Result<ReceiverReport, EyeqAgentError> {
    // the port's queue is read through a socket opened in the switch's namespace
    let port = match &spec.marks {
        Some(m) => {
            netns::enter(&m.netns)?;
            let what = format!("reading the queue of switch port {}", m.iface);
            let sock = netlink::Socket::open().map_err(io_error("receiver", &m.netns, &what))?;
            let name = CString::new(m.iface.as_str()).map_err(|_| EyeqAgentError::Spec {
                agent: "receiver",
                message: format!("switch port {:?}", m.iface),
                expected: "an interface name without NUL bytes",
            })?;
            // SAFETY: name is a valid C string.
            let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
            if ifindex == 0 {
                return Err(io_error("receiver", &m.netns, &what)(
                    std::io::Error::last_os_error(),
                ));
            }
            Some((sock, ifindex, m.qdisc))
        }
        None => None,
    };
    netns::enter(&spec.netns)?;
    let sock = PacketSocket::open(&spec.iface).map_err(io_error(
        "receiver",
        &spec.netns,
        &format!("packet socket on {}", spec.iface),
    ))?;
    let out = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(io_error(
        "receiver",
        &spec.netns,
        "feedback socket",
    ))?;
    out.set_nonblocking(true)
        .map_err(io_error("receiver", &spec.netns, "feedback socket"))?;
    let cpu0 = thread_cpu_s();
    let epoch = Instant::now();
    // the kernel stamps each packet on the wall clock; this is the epoch on it
    let epoch_wall_ns = wall_ns();
    let mut rx = Receiver::<Ipv4Addr>::new(spec.config, &spec.weights, 0)?;
    let bins = (spec.max_duration.as_nanos() / u128::from(spec.bin_ns) + 1) as usize;
    let mut report = ReceiverReport {
        tenant_bytes: vec![vec![0; bins]; spec.tenants.len()],
        stats: ReceiverStats::default(),
        packets: 0,
        other_packets: 0,
        feedback_sent: 0,
        feedback_errors: 0,
        socket_drops: 0,
        marked: 0,
        port_peak_bytes: 0,
        elapsed_s: 0.0,
        cpu_s: 0.0,
    };
    let _ = ready.send(epoch);
    let now_ns = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let end_ns = u64::try_from(spec.max_duration.as_nanos()).unwrap_or(u64::MAX);
    let mut buf = [0u8; 64];
    let threshold = spec.config.mark_threshold_s * spec.config.line_rate;
    let (mut marking, mut read_ns) = (false, None);
    while !stop.load(Ordering::Relaxed) {
        let got =
            sock.recv(&mut buf)
                .map_err(io_error("receiver", &spec.netns, "reading packets"))?;
        let now = now_ns();
        if now >= end_ns {
            break;
        }
        if let Some((port, ifindex, qdisc)) = &port {
            if read_ns.is_none_or(|r| now.saturating_sub(r) >= MARK_POLL_NS) {
                read_ns = Some(now);
                let what = "reading the switch port's queue";
                let backlog = netlink::qdisc_backlog(port, *ifindex, *qdisc)
                    .map_err(io_error("receiver", &spec.netns, what))?
                    .unwrap_or(0);
                report.port_peak_bytes = report.port_peak_bytes.max(u64::from(backlog));
                marking = f64::from(backlog) > threshold;
            }
        }
        let Some(Packet { len, host, wall_ns }) = got else {
            rx.tick(now);
            continue;
        };
        // its arrival: the kernel's stamp, not when the agent got to read it (a descheduled
        // agent reads a batch late, which would move bytes into the wrong interval)
        let now = wall_ns
            .map(|w| w.saturating_sub(epoch_wall_ns))
            .filter(|&t| t <= now)
            .unwrap_or(now);
        let Some((src, dst)) = addresses(&buf, len).filter(|_| host) else {
            continue;
        };
        let Some(t) = spec.tenants.iter().position(|&a| a == dst) else {
            report.other_packets += 1;
            rx.tick(now);
            continue;
        };
        let bytes = len as u64 + ETH_HLEN;
        report.packets += 1;
        if let Some(b) = report.tenant_bytes[t].get_mut((now / spec.bin_ns) as usize) {
            *b += bytes;
        }
        report.marked += u64::from(marking);
        if let Some(feedback) = rx.on_marked_arrival(now, src, t, bytes, marking)? {
            if spec.feedback {
                let msg = wire::encode(&wire::Message {
                    dest: dst,
                    feedback,
                });
                match out.send_to(&msg, SocketAddrV4::new(src, spec.feedback_port)) {
                    Ok(_) => report.feedback_sent += 1,
                    Err(_) => report.feedback_errors += 1,
                }
            }
        }
    }
    report.stats = rx.stats();
    report.socket_drops = sock.drops();
    report.elapsed_s = epoch.elapsed().as_secs_f64();
    report.cpu_s = thread_cpu_s() - cpu0;
    Ok(report)
}

/// The wall clock [ns since the Unix epoch], the clock of the kernel's packet stamps.
fn wall_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// One packet read from a [`PacketSocket`].
struct Packet {
    /// its whole length (without the Ethernet header)
    len: usize,
    /// addressed to this host (not one it sent)
    host: bool,
    /// when the kernel received it [ns on the wall clock], if it said
    wall_ns: Option<u64>,
}

/// Source and destination of the IPv4 packet whose first bytes are in `buf` (`len`: its
/// whole length).
fn addresses(buf: &[u8], len: usize) -> Option<(Ipv4Addr, Ipv4Addr)> {
    if len < 20 || buf.len() < 20 || buf[0] >> 4 != 4 {
        return None;
    }
    let ip = |i: usize| Ipv4Addr::new(buf[i], buf[i + 1], buf[i + 2], buf[i + 3]);
    Some((ip(12), ip(16)))
}

/// The `SCM_TIMESTAMPNS` stamp among the control messages `recvmsg` filled in `msg`.
fn timestamp(msg: &libc::msghdr) -> Option<u64> {
    // SAFETY: msg was filled by recvmsg; the CMSG_ macros walk its control buffer within
    // msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                let s = u64::try_from(ts.tv_sec).ok()?;
                let ns = u64::try_from(ts.tv_nsec).ok()?;
                return s.checked_mul(1_000_000_000)?.checked_add(ns);
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// An `AF_PACKET` datagram socket (IPv4 only, headers only) bound to one interface.
struct PacketSocket {
    fd: OwnedFd,
}

/// `struct tpacket_stats` of `<linux/if_packet.h>`.
#[repr(C)]
#[derive(Default)]
struct PacketStats {
    packets: libc::c_uint,
    drops: libc::c_uint,
}

impl PacketSocket {
    fn open(iface: &str) -> std::io::Result<PacketSocket> {
        let proto = (libc::ETH_P_IP as u16).to_be();
        // SAFETY: plain socket(2); the fd is owned right after.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                i32::from(proto),
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a new, valid descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let name = CString::new(iface).map_err(|_| ErrorKind::InvalidInput)?;
        // SAFETY: name is a valid C string.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if ifindex == 0 {
            return Err(std::io::Error::new(
                ErrorKind::NotFound,
                format!("no interface {iface} in this namespace"),
            ));
        }
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = ifindex as i32;
        // SAFETY: sll lives across the call and its size is passed.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let s = PacketSocket { fd };
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: POLL.as_micros() as libc::suseconds_t,
        };
        s.setsockopt(libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout)?;
        // every packet with its arrival time (nanoseconds on the wall clock)
        let on: libc::c_int = 1;
        s.setsockopt(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &on)?;
        // a deep buffer so that a descheduled agent loses no arrivals (root may exceed rmem_max)
        let size: libc::c_int = 8 << 20;
        if s.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &size)
            .is_err()
        {
            s.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, &size)?;
        }
        Ok(s)
    }

    fn setsockopt<T>(&self, level: libc::c_int, name: libc::c_int, v: &T) -> std::io::Result<()> {
        // SAFETY: v lives across the call and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                (v as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// The next packet's first bytes in `buf`, its length, direction and arrival time;
    /// `None` when none came within the poll.
    fn recv(&self, buf: &mut [u8]) -> std::io::Result<Option<Packet>> {
        // SAFETY: as in open.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        // room for one SCM_TIMESTAMPNS message, aligned for cmsghdr
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: msghdr is plain data; all-zero is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&mut sll as *mut libc::sockaddr_ll).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: every buffer msg points to lives across the call with the sizes given.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return match e.kind() {
                ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(Packet {
            len: n as usize,
            host: sll.sll_pkttype == libc::PACKET_HOST,
            wall_ns: timestamp(&msg),
        }))
    }

    /// Packets dropped for a full buffer since the last call.
    fn drops(&self) -> u64 {
        let mut st = PacketStats::default();
        let mut len = std::mem::size_of::<PacketStats>() as libc::socklen_t;
        // SAFETY: st is valid for writes of len bytes.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut PacketStats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            u64::from(st.drops)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_are_attributed_by_their_ipv4_addresses() {
        let mut h = [0u8; 64];
        h[0] = 0x45;
        h[12..16].copy_from_slice(&[10, 199, 0, 2]);
        h[16..20].copy_from_slice(&[10, 199, 1, 1]);
        assert_eq!(
            addresses(&h, 1500),
            Some((Ipv4Addr::new(10, 199, 0, 2), Ipv4Addr::new(10, 199, 1, 1)))
        );
        assert_eq!(addresses(&h, 19), None);
        h[0] = 0x60;
        assert_eq!(addresses(&h, 1500), None);
    }
}
