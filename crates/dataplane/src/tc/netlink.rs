//! Reading an interface's qdiscs, HTB classes and u32 filters from the kernel over rtnetlink
//! (RTM_GETQDISC, RTM_GETTCLASS, RTM_GETTFILTER dumps), inside a network namespace when asked.
//!
//! Why netlink and not `tc -j ... show`: iproute2 6.1 (Debian 12) prints HTB classes as text
//! even with `-j`, rounds their rates to three significant digits (`9876Kbit`), and prints a
//! u32 filter's keys as repeated JSON keys; netlink gives the kernel's exact numbers, and a dump
//! of thousands of objects takes milliseconds instead of a `tc` process per kind. The decoding
//! ([`decode_qdisc`], [`decode_class`], [`decode_filter`]) is pure: bytes in, state out.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use tailbound_enforce_plan::state::{
    canonical_keys, Class, ClassId, Filter, FilterHandle, Qdisc, QdiscParent, U32Key,
};
use tailbound_enforce_plan::TcState;

const RTM_GETQDISC: u16 = 38;
const RTM_GETTCLASS: u16 = 42;
const RTM_GETTFILTER: u16 = 46;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_HDRLEN: usize = 16;
const TCMSG_LEN: usize = 20;

const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
const TCA_U32_CLASSID: u16 = 1;
const TCA_U32_DIVISOR: u16 = 4;
const TCA_U32_SEL: u16 = 5;

const TC_H_ROOT: u32 = 0xffff_ffff;
const TC_H_INGRESS: u32 = 0xffff_fff1;
/// The kernel keeps HTB buckets in ticks of 2^6 ns (PSCHED_SHIFT).
const TICK_NS: u128 = 64;

/// The state of interface `ifindex` as the kernel has it, read through `sock`.
pub fn read(sock: &Socket, ifindex: u32) -> io::Result<TcState> {
    let mut state = TcState::default();
    for msg in sock.dump(RTM_GETQDISC, ifindex, 0)? {
        if let Some(q) = decode_qdisc(&msg, ifindex) {
            state.qdiscs.push(q);
        }
    }
    for msg in sock.dump(RTM_GETTCLASS, ifindex, 0)? {
        if let Some(c) = decode_class(&msg, ifindex) {
            state.classes.push(c);
        }
    }
    let htb: Vec<u16> = state
        .qdiscs
        .iter()
        .filter(|q| q.kind == "htb")
        .map(|q| q.handle)
        .collect();
    for handle in htb {
        for msg in sock.dump(RTM_GETTFILTER, ifindex, u32::from(handle) << 16)? {
            if let Some(f) = decode_filter(&msg, ifindex) {
                state.filters.push(f);
            }
        }
    }
    Ok(state)
}

/// What the kernel counted for one class: everything it sent and dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClassStats {
    pub id: ClassId,
    /// [bytes]
    pub bytes: u64,
    pub packets: u32,
    pub drops: u32,
}

/// The counters of every HTB class of interface `ifindex`.
pub fn read_stats(sock: &Socket, ifindex: u32) -> io::Result<Vec<ClassStats>> {
    Ok(sock
        .dump(RTM_GETTCLASS, ifindex, 0)?
        .iter()
        .filter_map(|m| decode_stats(m, ifindex))
        .collect())
}

const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;

/// A class's counters from an RTM_NEWTCLASS payload (struct gnet_stats_basic: bytes u64,
/// packets u32; struct gnet_stats_queue: qlen, backlog, drops, ...).
pub fn decode_stats(msg: &[u8], ifindex: u32) -> Option<ClassStats> {
    let (ifi, handle, _, _) = tcmsg(msg)?;
    if ifi != ifindex {
        return None;
    }
    let list = attrs(&msg[TCMSG_LEN..]);
    let stats = attrs(attr(&list, TCA_STATS2)?);
    let basic = attr(&stats, TCA_STATS_BASIC)?;
    Some(ClassStats {
        id: ClassId::from_raw(handle),
        bytes: u64_at(basic, 0),
        packets: u32_at(basic, 8),
        drops: attr(&stats, TCA_STATS_QUEUE).map_or(0, |q| u32_at(q, 8)),
    })
}

/// The backlog [bytes] of qdisc `handle` (e.g. `2:0` as `0x0002_0000`) of interface
/// `ifindex`, read through `sock`; `None` when it has no such qdisc.
pub fn qdisc_backlog(sock: &Socket, ifindex: u32, handle: u32) -> io::Result<Option<u32>> {
    Ok(sock
        .dump(RTM_GETQDISC, ifindex, 0)?
        .iter()
        .find_map(|m| decode_backlog(m, ifindex, handle)))
}

/// The backlog [bytes] in an RTM_NEWQDISC payload of qdisc `handle` of `ifindex` (struct
/// gnet_stats_queue: qlen, backlog, ...).
pub fn decode_backlog(msg: &[u8], ifindex: u32, handle: u32) -> Option<u32> {
    let (ifi, h, _, _) = tcmsg(msg)?;
    if ifi != ifindex || h != handle {
        return None;
    }
    let list = attrs(&msg[TCMSG_LEN..]);
    let stats = attrs(attr(&list, TCA_STATS2)?);
    attr(&stats, TCA_STATS_QUEUE).map(|q| u32_at(q, 4))
}

/// An rtnetlink socket, in the network namespace of the thread that opened it.
pub struct Socket {
    fd: OwnedFd,
    seq: std::cell::Cell<u32>,
}

impl Socket {
    pub fn open() -> io::Result<Socket> {
        // SAFETY: plain socket(2); the fd is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // a dump that stalls must not hang the caller
        let timeout = libc::timeval {
            tv_sec: 10,
            tv_usec: 0,
        };
        // SAFETY: valid fd, option and pointer to a timeval of the given size.
        let rc = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Socket {
            fd,
            seq: std::cell::Cell::new(1),
        })
    }

    /// Sends a dump request for `kind` objects of `ifindex` (filters: of qdisc `parent`) and
    /// returns the payload (tcmsg and attributes) of every answer.
    fn dump(&self, kind: u16, ifindex: u32, parent: u32) -> io::Result<Vec<Vec<u8>>> {
        let seq = self.seq.get();
        self.seq.set(seq.wrapping_add(1));
        let mut req = Vec::with_capacity(NLMSG_HDRLEN + TCMSG_LEN);
        req.extend_from_slice(&((NLMSG_HDRLEN + TCMSG_LEN) as u32).to_ne_bytes());
        req.extend_from_slice(&kind.to_ne_bytes());
        req.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req.extend_from_slice(&seq.to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        // tcmsg: family, pad, ifindex, handle, parent, info
        req.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
        req.extend_from_slice(&(ifindex as i32).to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        req.extend_from_slice(&parent.to_ne_bytes());
        req.extend_from_slice(&0u32.to_ne_bytes());
        // SAFETY: an all-zero sockaddr_nl addresses the kernel.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: valid fd, buffer and address of the given sizes.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                req.as_ptr().cast(),
                req.len(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: valid fd and buffer.
            let n =
                unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let mut at = 0;
            let n = n as usize;
            while at + NLMSG_HDRLEN <= n {
                let len = u32_at(&buf, at) as usize;
                let typ = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
                let msg_seq = u32_at(&buf, at + 8);
                if len < NLMSG_HDRLEN || at + len > n {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "truncated netlink message",
                    ));
                }
                if msg_seq == seq {
                    match typ {
                        NLMSG_DONE => return Ok(out),
                        NLMSG_ERROR => {
                            let code = i32::from_ne_bytes([
                                buf[at + 16],
                                buf[at + 17],
                                buf[at + 18],
                                buf[at + 19],
                            ]);
                            if code != 0 {
                                return Err(io::Error::from_raw_os_error(-code));
                            }
                            return Ok(out);
                        }
                        _ => out.push(buf[at + NLMSG_HDRLEN..at + len].to_vec()),
                    }
                }
                at += align4(len);
            }
        }
    }
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_ne_bytes(a)
    })
}

/// The tcmsg header of a message: (ifindex, handle, parent, info).
fn tcmsg(msg: &[u8]) -> Option<(u32, u32, u32, u32)> {
    (msg.len() >= TCMSG_LEN).then(|| {
        (
            u32_at(msg, 4),
            u32_at(msg, 8),
            u32_at(msg, 12),
            u32_at(msg, 16),
        )
    })
}

/// The (type, payload) attributes of `b`; the nested flag is masked off.
fn attrs(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 4 <= b.len() {
        let len = u16::from_ne_bytes([b[at], b[at + 1]]) as usize;
        let typ = u16::from_ne_bytes([b[at + 2], b[at + 3]]) & 0x3fff;
        if len < 4 || at + len > b.len() {
            break;
        }
        out.push((typ, &b[at + 4..at + len]));
        at += align4(len);
    }
    out
}

fn attr<'a>(list: &[(u16, &'a [u8])], typ: u16) -> Option<&'a [u8]> {
    list.iter().find(|(t, _)| *t == typ).map(|(_, p)| *p)
}

fn kind_of(list: &[(u16, &[u8])]) -> String {
    attr(list, TCA_KIND)
        .map(|k| {
            String::from_utf8_lossy(k.split(|&c| c == 0).next().unwrap_or_default()).into_owned()
        })
        .unwrap_or_default()
}

/// A qdisc of `ifindex` from an RTM_NEWQDISC payload; `None` for other interfaces and for
/// ingress/clsact.
pub fn decode_qdisc(msg: &[u8], ifindex: u32) -> Option<Qdisc> {
    let (ifi, handle, parent, _) = tcmsg(msg)?;
    if ifi != ifindex || parent == TC_H_INGRESS {
        return None;
    }
    let list = attrs(&msg[TCMSG_LEN..]);
    let kind = kind_of(&list);
    let default_minor = if kind == "htb" {
        attr(&list, TCA_OPTIONS)
            .and_then(|o| attr(&attrs(o), TCA_HTB_INIT).map(|g| u32_at(g, 8) as u16))
            .unwrap_or(0)
    } else {
        0
    };
    Some(Qdisc {
        handle: (handle >> 16) as u16,
        parent: if parent == TC_H_ROOT {
            QdiscParent::Root
        } else {
            QdiscParent::Class(ClassId::from_raw(parent))
        },
        kind,
        default_minor,
        serves: None,
    })
}

/// A burst from HTB's bucket in ticks at `rate` [bytes].
fn burst_bytes(ticks: u32, rate: u64) -> u64 {
    ((u128::from(ticks) * TICK_NS * u128::from(rate) + 500_000_000) / 1_000_000_000) as u64
}

/// An HTB class of `ifindex` from an RTM_NEWTCLASS payload.
pub fn decode_class(msg: &[u8], ifindex: u32) -> Option<Class> {
    let (ifi, handle, parent, _) = tcmsg(msg)?;
    if ifi != ifindex {
        return None;
    }
    let list = attrs(&msg[TCMSG_LEN..]);
    if kind_of(&list) != "htb" {
        return None;
    }
    let opts = attrs(attr(&list, TCA_OPTIONS)?);
    let p = attr(&opts, TCA_HTB_PARMS)?;
    if p.len() < 44 {
        return None;
    }
    // struct tc_htb_opt: rate and ceil tc_ratespec (12 bytes, rate at 8), buffer, cbuffer,
    // quantum, level, prio
    let mut rate = u64::from(u32_at(p, 8));
    let mut ceil = u64::from(u32_at(p, 20));
    if let Some(r) = attr(&opts, TCA_HTB_RATE64) {
        rate = u64_at(r, 0);
    }
    if let Some(c) = attr(&opts, TCA_HTB_CEIL64) {
        ceil = u64_at(c, 0);
    }
    Some(Class {
        id: ClassId::from_raw(handle),
        parent: (parent != TC_H_ROOT).then(|| ClassId::from_raw(parent)),
        rate_bytes_per_s: rate,
        ceil_bytes_per_s: ceil,
        burst_bytes: burst_bytes(u32_at(p, 24), rate),
        cburst_bytes: burst_bytes(u32_at(p, 28), ceil),
        quantum_bytes: u32_at(p, 32),
        prio: u32_at(p, 40).min(7) as u8,
        serves: None,
    })
}

/// A u32 filter node of `ifindex` from an RTM_NEWTFILTER payload; `None` for the hash-table
/// entries the kernel lists beside the filters.
pub fn decode_filter(msg: &[u8], ifindex: u32) -> Option<Filter> {
    let (ifi, handle, parent, info) = tcmsg(msg)?;
    if ifi != ifindex {
        return None;
    }
    let list = attrs(&msg[TCMSG_LEN..]);
    if kind_of(&list) != "u32" {
        return None;
    }
    let handle = FilterHandle(handle);
    let opts = attrs(attr(&list, TCA_OPTIONS)?);
    if handle.node() == 0 || attr(&opts, TCA_U32_DIVISOR).is_some() {
        return None;
    }
    let sel = attr(&opts, TCA_U32_SEL)?;
    // struct tc_u32_sel: flags, offshift, nkeys, pad, offmask, off, offoff, hoff, hmask,
    // then nkeys keys of {mask, val (network order), off, offmask}
    let nkeys = *sel.get(2)? as usize;
    let mut keys = Vec::with_capacity(nkeys);
    for k in 0..nkeys {
        let at = 16 + 16 * k;
        let key = sel.get(at..at + 16)?;
        keys.push(U32Key {
            mask: u32::from_be_bytes([key[0], key[1], key[2], key[3]]),
            value: u32::from_be_bytes([key[4], key[5], key[6], key[7]]),
            off: i32::from_ne_bytes([key[8], key[9], key[10], key[11]]),
            offmask: i32::from_ne_bytes([key[12], key[13], key[14], key[15]]),
        });
    }
    Some(Filter {
        qdisc: (parent >> 16) as u16,
        pref: (info >> 16) as u16,
        handle,
        flowid: ClassId::from_raw(attr(&opts, TCA_U32_CLASSID).map_or(0, |c| u32_at(c, 0))),
        keys: canonical_keys(&keys),
        matches: None,
        serves: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nla(typ: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&typ.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn msg(ifindex: u32, handle: u32, parent: u32, info: u32, attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut m = vec![0u8, 0, 0, 0];
        for v in [ifindex, handle, parent, info] {
            m.extend_from_slice(&v.to_ne_bytes());
        }
        for a in attrs {
            m.extend_from_slice(a);
        }
        m
    }

    #[test]
    fn a_qdiscs_backlog_is_read_from_its_queue_stats() {
        // gnet_stats_queue: qlen 3, backlog 4542, drops 1, requeues 0, overlimits 9
        let mut queue = Vec::new();
        for v in [3u32, 4542, 1, 0, 9] {
            queue.extend_from_slice(&v.to_ne_bytes());
        }
        let stats = nla(TCA_STATS2, &nla(TCA_STATS_QUEUE, &queue));
        let m = msg(
            7,
            0x0002_0000,
            0x0001_0001,
            0,
            &[nla(TCA_KIND, b"bfifo\0"), stats],
        );
        assert_eq!(decode_backlog(&m, 7, 0x0002_0000), Some(4542));
        assert_eq!(decode_backlog(&m, 7, 0x0001_0000), None);
        assert_eq!(decode_backlog(&m, 8, 0x0002_0000), None);
    }

    #[test]
    fn an_htb_class_decodes_to_exact_rates_and_bursts() {
        // rate 1 MB/s, burst 64000 B: tc stores 64 ms as 1 000 000 ticks of 64 ns
        let mut opt = vec![0u8; 44];
        opt[8..12].copy_from_slice(&1_000_000u32.to_ne_bytes());
        opt[20..24].copy_from_slice(&2_000_000u32.to_ne_bytes());
        opt[24..28].copy_from_slice(&1_000_000u32.to_ne_bytes());
        opt[28..32].copy_from_slice(&500_000u32.to_ne_bytes());
        opt[32..36].copy_from_slice(&100_000u32.to_ne_bytes());
        opt[40..44].copy_from_slice(&3u32.to_ne_bytes());
        let m = msg(
            7,
            0x0002_0004,
            0x0002_0003,
            0,
            &[
                nla(TCA_KIND, b"htb\0"),
                nla(TCA_OPTIONS | 0x8000, &nla(TCA_HTB_PARMS, &opt)),
            ],
        );
        let c = decode_class(&m, 7).unwrap();
        assert_eq!(c.id, ClassId::new(2, 4));
        assert_eq!(c.parent, Some(ClassId::new(2, 3)));
        assert_eq!(
            (c.rate_bytes_per_s, c.ceil_bytes_per_s),
            (1_000_000, 2_000_000)
        );
        assert_eq!((c.burst_bytes, c.cburst_bytes), (64_000, 64_000));
        assert_eq!((c.prio, c.quantum_bytes), (3, 100_000));
        assert!(decode_class(&m, 8).is_none(), "another interface");
        // beyond 32 bits the rate comes in its own attribute
        let big = msg(
            7,
            0x0001_0001,
            TC_H_ROOT,
            0,
            &[
                nla(TCA_KIND, b"htb\0"),
                nla(
                    TCA_OPTIONS,
                    &[
                        nla(TCA_HTB_PARMS, &opt),
                        nla(TCA_HTB_RATE64, &5_000_000_000u64.to_ne_bytes()),
                    ]
                    .concat(),
                ),
            ],
        );
        let c = decode_class(&big, 7).unwrap();
        assert_eq!(c.rate_bytes_per_s, 5_000_000_000);
        assert_eq!(c.parent, None);
    }

    #[test]
    fn a_u32_filter_decodes_its_keys_in_network_order() {
        let mut sel = vec![0u8; 16];
        sel[2] = 2;
        for (mask, val, off) in [
            (0xffff_ffffu32, 0x0afa_0001u32, 12i32),
            (0xffff, 0x2bcb, 20),
        ] {
            sel.extend_from_slice(&mask.to_be_bytes());
            sel.extend_from_slice(&val.to_be_bytes());
            sel.extend_from_slice(&off.to_ne_bytes());
            sel.extend_from_slice(&0i32.to_ne_bytes());
        }
        let opts = [
            nla(TCA_U32_CLASSID, &0x0002_0004u32.to_ne_bytes()),
            nla(TCA_U32_SEL, &sel),
        ]
        .concat();
        let m = msg(
            7,
            0x8000_0005,
            0x0002_0000,
            (1 << 16) | 0x0008,
            &[nla(TCA_KIND, b"u32\0"), nla(TCA_OPTIONS, &opts)],
        );
        let f = decode_filter(&m, 7).unwrap();
        assert_eq!((f.qdisc, f.pref, f.handle.node()), (2, 1, 5));
        assert_eq!(f.flowid, ClassId::new(2, 4));
        assert_eq!(f.keys.len(), 2);
        assert_eq!((f.keys[0].off, f.keys[0].value), (12, 0x0afa_0001));
        // the hash table the kernel lists beside it is not a filter
        let table = msg(
            7,
            0x8000_0000,
            0x0002_0000,
            1 << 16,
            &[
                nla(TCA_KIND, b"u32\0"),
                nla(TCA_OPTIONS, &nla(TCA_U32_DIVISOR, &1u32.to_ne_bytes())),
            ],
        );
        assert!(decode_filter(&table, 7).is_none());
    }

    #[test]
    fn an_htb_qdisc_decodes_its_default_class() {
        let glob = [3u32, 10, 0x2, 0, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>();
        let m = msg(
            7,
            0x0002_0000,
            0x0001_0001,
            0,
            &[
                nla(TCA_KIND, b"htb\0"),
                nla(TCA_OPTIONS, &nla(TCA_HTB_INIT, &glob)),
            ],
        );
        let q = decode_qdisc(&m, 7).unwrap();
        assert_eq!(q.handle, 2);
        assert_eq!(q.parent, QdiscParent::Class(ClassId::new(1, 1)));
        assert_eq!(q.default_minor, 2);
        let noqueue = msg(7, 0, TC_H_ROOT, 0, &[nla(TCA_KIND, b"noqueue\0")]);
        let q = decode_qdisc(&noqueue, 7).unwrap();
        assert!(q.is_implicit());
    }
}
