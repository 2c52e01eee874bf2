//! Real traffic through applied plans: UDP between two namespaces over a shaped veth link.
//! Assertions hold on a busy machine: arrival times are the kernel's receive timestamps
//! (SO_TIMESTAMPNS, taken when the sender's qdisc hands the packet to the veth), so the
//! receiver's scheduling does not move them; bounds are ones a correct limiter cannot exceed;
//! priority is judged by a ratio against the same flood without priorities, measured in the
//! same test, or by tc's own per-class packet counters. Every sender is bounded in time.

use crate::tc::{apply_all, decisions, host_map, plan_with, root_or_skip, tenant, two_hosts};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tailbound_dataplane::netns::{self, LinkOptions, TwoHosts};
use tailbound_dataplane::tc::{Enforcer, Target};
use tailbound_enforce_plan::link_plan;
use tailbound_enforce_plan::state::ClassRole;
use tailbound_model::{Excess, Stage};

const CLIENT: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 2);
const SERVER: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 1);
/// Ethernet + IPv4 + UDP headers: what HTB counts beyond the payload [bytes].
const HEADERS: usize = 14 + 20 + 8;

/// Sets an int socket option (root may pass the system's buffer limits with the *FORCE ones).
fn set_int(s: &UdpSocket, level: libc::c_int, name: libc::c_int, value: libc::c_int) {
    // SAFETY: valid fd and int option.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "setsockopt {name}");
}

fn enable_timestamps(s: &UdpSocket) {
    set_int(s, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1);
}

/// One datagram and the kernel's receive time [ns]; `None` when the read times out.
fn recv_stamped(s: &UdpSocket, buf: &mut [u8]) -> Option<(u64, usize)> {
    let mut control = [0u8; 128];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: zeroed msghdr, then pointers to live buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = control.len() as _;
    // SAFETY: valid fd and msghdr.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return None;
    }
    // SAFETY: walking the control buffer the kernel filled, with its own macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some((
                    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
                    n as usize,
                ));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    panic!("a datagram without its receive timestamp");
}

/// Sends `payload`-byte datagrams from `src` to `dst` at about `rate` [bytes/s] for
/// `duration`, in bursts every 5 ms, from a thread in namespace `ns`; returns the datagrams
/// offered (those a full socket buffer or queue dropped included).
fn blast(
    ns: String,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    payload: usize,
    rate: f64,
    duration: Duration,
) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        netns::enter(&ns).unwrap();
        let s = UdpSocket::bind(src).unwrap();
        // never block on the socket's send buffer: offer the full rate, drop what does not
        // fit; a large buffer lets the class's queue fill (1000 packets), not the socket's
        s.set_nonblocking(true).unwrap();
        set_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 8 << 20);
        let data = vec![0x5au8; payload];
        let per_tick = ((rate * 0.005) / (payload + HEADERS) as f64)
            .ceil()
            .max(1.0) as u64;
        let start = Instant::now();
        let mut sent = 0u64;
        let mut tick = 0u32;
        while start.elapsed() < duration {
            for _ in 0..per_tick {
                // a full queue drops or says ENOBUFS; either way the datagram is not delivered
                let _ = s.send_to(&data, dst);
                sent += 1;
            }
            tick += 1;
            let next = Duration::from_millis(5) * tick;
            if let Some(wait) = next.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        sent
    })
}

/// The most bytes that arrived within any window of `window_ns` (windows start at arrivals).
fn max_in_window(arrivals: &[(u64, usize)], window_ns: u64) -> usize {
    let (mut best, mut sum, mut j) = (0, 0, 0);
    for i in 0..arrivals.len() {
        while j < arrivals.len() && arrivals[j].0 < arrivals[i].0 + window_ns {
            sum += arrivals[j].1;
            j += 1;
        }
        best = best.max(sum);
        sum -= arrivals[i].1;
    }
    best
}

#[test]
fn a_limited_tenant_never_sends_more_than_r_t_plus_b_in_any_window() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    let e = Enforcer::new(dir.path());
    let m = host_map(&h, 1, "100Mbit");
    let (rate, burst) = (1.0e6, 100e3);
    let d = decisions(
        vec![tenant("t0", 0, &[(Stage::NetIn, rate, burst)])],
        Excess::Wait,
    );
    apply_all(&e, &plan_with(&e, &d, &m));

    let rx_ns = h.server_ns().to_string();
    let done = Arc::new(AtomicBool::new(false));
    let stop = done.clone();
    let receiver = std::thread::spawn(move || {
        netns::enter(&rx_ns).unwrap();
        let s = UdpSocket::bind(SocketAddrV4::new(SERVER, 7000)).unwrap();
        enable_timestamps(&s);
        // a receiver the busy machine does not schedule for a while loses nothing
        set_int(&s, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 32 << 20);
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = vec![0u8; 2048];
        let mut arrivals = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            match recv_stamped(&s, &mut buf) {
                Some((t, n)) => arrivals.push((t, n + HEADERS)),
                None if stop.load(Ordering::SeqCst) => break,
                None => {}
            }
        }
        arrivals
    });
    std::thread::sleep(Duration::from_millis(100));
    // three times the rate for 1.5 s: the bucket empties and the leaf's queue fills
    let send_s = 1.5;
    let sent = blast(
        h.client_ns().to_string(),
        SocketAddrV4::new(CLIENT, 0),
        SocketAddrV4::new(SERVER, 7000),
        1000,
        3.0 * rate,
        Duration::from_secs_f64(send_s),
    )
    .join()
    .unwrap();
    // what HTB still holds drains at r; then the receiver stops on silence
    std::thread::sleep(Duration::from_millis(1500));
    done.store(true, Ordering::SeqCst);
    let mut arrivals = receiver.join().unwrap();
    arrivals.sort();
    let total: usize = arrivals.iter().map(|a| a.1).sum();
    let offered = sent as f64 * (1000 + HEADERS) as f64;
    assert!(
        offered > 2.0 * (rate * send_s + burst),
        "the sender offered only {offered} B"
    );
    // a limiter that lets nothing through would pass the upper bounds trivially
    assert!(
        total as f64 >= 0.25 * rate * send_s,
        "only {total} B arrived in {send_s} s at {rate} B/s"
    );
    for window_s in [0.001, 0.01, 0.1, 0.5, 1.0, 2.0] {
        let most = max_in_window(&arrivals, (window_s * 1e9) as u64);
        let bound = rate * window_s + burst;
        eprintln!("window {window_s} s: at most {most} B arrived, r t + b = {bound} B");
        assert!(
            most as f64 <= 1.05 * bound,
            "{most} B arrived within {window_s} s; r t + b = {bound} B"
        );
    }
}

/// RTTs [s] of `count` small requests sent every 20 ms from the client to an echo server,
/// and how many got no reply within 2 s.
fn probe_rtts(client_ns: &str, server_ns: &str, count: u32) -> (Vec<f64>, u32) {
    // bound before the first request leaves; the socket stays in the server's namespace
    let s = netns_scope(server_ns, || {
        UdpSocket::bind(SocketAddrV4::new(SERVER, 7000)).unwrap()
    });
    let echo = std::thread::spawn(move || {
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut buf = [0u8; 256];
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut idle = 0;
        while Instant::now() < deadline && idle < 10 {
            match s.recv_from(&mut buf) {
                Ok((n, from)) => {
                    idle = 0;
                    let _ = s.send_to(&buf[..n], from);
                }
                Err(_) => idle += 1,
            }
        }
    });
    netns_scope(client_ns, || {
        let s = UdpSocket::bind(SocketAddrV4::new(CLIENT, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        let start = Instant::now();
        let mut sent_at = vec![None; count as usize];
        let mut rtts = Vec::new();
        let mut next = 0u32;
        let mut buf = [0u8; 256];
        let end = Duration::from_millis(20) * count + Duration::from_secs(2);
        while start.elapsed() < end {
            if next < count && start.elapsed() >= Duration::from_millis(20) * next {
                let _ = s.send_to(&next.to_be_bytes(), SocketAddrV4::new(SERVER, 7000));
                sent_at[next as usize] = Some(Instant::now());
                next += 1;
            }
            if let Ok((4, _)) = s.recv_from(&mut buf) {
                let seq = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if let Some(t) = sent_at.get_mut(seq).and_then(Option::take) {
                    rtts.push(t.elapsed().as_secs_f64());
                }
            }
        }
        let lost = sent_at.iter().filter(|t| t.is_some()).count() as u32;
        let _ = echo.join();
        rtts.sort_by(f64::total_cmp);
        (rtts, lost)
    })
}

fn netns_scope<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            netns::enter(ns).unwrap();
            f()
        })
        .join()
        .unwrap()
    })
}

/// The median RTT [s] of the high tenant while the low one floods the link.
fn under_flood(h: &netns::TwoHosts) -> (f64, u32) {
    let sink_ns = h.server_ns().to_string();
    // the flood's receiver reads nothing: its socket drops what does not fit, no ICMP
    let sink = netns_scope(&sink_ns, || {
        UdpSocket::bind(SocketAddrV4::new(SERVER, 7001)).unwrap()
    });
    let flood = blast(
        h.client_ns().to_string(),
        SocketAddrV4::new(CLIENT, 0),
        SocketAddrV4::new(SERVER, 7001),
        1000,
        // four times the 10 Mbit/s link
        5.0e6,
        Duration::from_millis(3500),
    );
    // let the flood's queue fill before measuring
    std::thread::sleep(Duration::from_millis(500));
    let (rtts, lost) = probe_rtts(h.client_ns(), h.server_ns(), 100);
    flood.join().unwrap();
    drop(sink);
    let median = rtts.get(rtts.len() / 2).copied().unwrap_or(f64::INFINITY);
    (median, lost)
}

#[test]
fn a_higher_priority_keeps_its_latency_while_a_lower_one_floods_the_link() {
    if !root_or_skip() {
        return;
    }
    let h = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    let e = Enforcer::new(dir.path());
    let client = Target {
        host: "client",
        netns: Some(h.client_ns()),
        interface: "tb0",
    };
    // without priorities: the link alone, one FIFO that the flood fills
    e.apply_interface(client, &link_plan("tb0", 1.25e6))
        .unwrap();
    let (fifo, _) = under_flood(&h);
    // t0 (ports 7000) at level 0, t1 (7001) at level 1, neither limited
    let m = host_map(&h, 2, "10Mbit");
    let d = decisions(
        vec![tenant("t0", 0, &[]), tenant("t1", 1, &[])],
        Excess::Wait,
    );
    let p = plan_with(&e, &d, &m);
    e.apply(&p.hosts[0]).unwrap();
    let (prioritized, lost) = under_flood(&h);
    eprintln!("median RTT under a flood: {:.1} ms in one FIFO, {:.2} ms at the higher level ({lost} of 100 lost)", fifo * 1e3, prioritized * 1e3);
    // a full FIFO (1000 packets of the flood) at 10 Mbit/s delays by ~0.8 s; the higher level
    // waits for at most the packet on the wire
    assert!(
        prioritized * 5.0 < fifo,
        "median {prioritized} s with priorities vs {fifo} s without"
    );
    assert!(
        lost <= 5,
        "{lost} of the higher tenant's 100 requests were lost"
    );
}

#[test]
fn a_switch_port_sends_each_dscp_to_its_level_and_unmarked_packets_best_effort() {
    if !root_or_skip() {
        return;
    }
    let h = TwoHosts::create(LinkOptions {
        bridge: true,
        rate_bytes_per_s: None,
    })
    .unwrap();
    let sw = h.switch_ns().expect("a bridge").to_string();
    let text = format!(
        "[[hosts]]\nname = \"client\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.2\"\nlink = \"100Mbit\"\n\
         [[hosts]]\nname = \"server\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.1\"\nlink = \"100Mbit\"\n\
         [[hosts]]\nname = \"switch\"\nrole = \"switch\"\nnetns = \"{sw}\"\n[[hosts.interfaces]]\nname = \"tbs\"\nlink = \"100Mbit\"\n\
         [[tenants]]\nname = \"t0\"\nclient = {{ host = \"client\" }}\nserver = {{ host = \"server\", port = 7000 }}\n\
         [[tenants]]\nname = \"t1\"\nclient = {{ host = \"client\" }}\nserver = {{ host = \"server\", port = 7001 }}\n",
        h.client_ns(),
        h.server_ns()
    );
    let m = tailbound_enforce_plan::HostMap::parse(&text, "switch.hosts.toml").unwrap();
    // level 9 lives in the nested qdisc: its packets pass the prio-7 container first
    let d = decisions(
        vec![tenant("t0", 1, &[]), tenant("t1", 9, &[])],
        Excess::Wait,
    );
    let dir = tempfile::tempdir().unwrap();
    let e = Enforcer::new(dir.path());
    let p = plan_with(&e, &d, &m);
    let switch = p.hosts.iter().find(|x| x.host == "switch").unwrap();
    e.apply(switch).unwrap();
    let state = &switch.interfaces[0].state;
    let class = |role: &ClassRole| {
        state
            .classes
            .iter()
            .find(|c| c.serves.as_ref() == Some(role))
            .unwrap()
            .id
    };
    let level1 = class(&ClassRole::Level { priority: 1 });
    let level9 = class(&ClassRole::Level { priority: 9 });
    let container = class(&ClassRole::Container { depth: 1 });
    let best = class(&ClassRole::BestEffort { depth: 0 });

    let sink = netns_scope(h.server_ns(), || {
        UdpSocket::bind(SocketAddrV4::new(SERVER, 7100)).unwrap()
    });
    netns_scope(h.client_ns(), || {
        for tos in [
            tailbound_dataplane::tos::tos_for(1).ok(),
            tailbound_dataplane::tos::tos_for(9).ok(),
            None,
        ] {
            let s = UdpSocket::bind(SocketAddrV4::new(CLIENT, 0)).unwrap();
            if let Some(t) = tos {
                tailbound_dataplane::tos::set_tos(&s, t).unwrap();
            }
            for _ in 0..50 {
                s.send_to(&[7u8; 200], SocketAddrV4::new(SERVER, 7100))
                    .unwrap();
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    });
    drop(sink);
    let port = Target {
        host: "switch",
        netns: Some(&sw),
        interface: "tbs",
    };
    let stats = tailbound_dataplane::tc::read_stats(port).unwrap();
    let sent = |id| stats.iter().find(|s| s.id == id).map_or(0, |s| s.packets);
    assert_eq!(sent(level1), 50, "{stats:?}");
    assert_eq!(sent(level9), 50, "{stats:?}");
    assert!(sent(container) >= 50, "{stats:?}");
    assert!(
        sent(best) >= 50,
        "unmarked packets go best effort: {stats:?}"
    );
}
