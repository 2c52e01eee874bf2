//! The tc configuration of one network interface as tailbound sees it: HTB qdiscs, HTB classes
//! and u32 filters, under the ids the kernel knows them by. The planner produces the desired
//! state (with each object's role); the dataplane reads the current one from the kernel; the
//! diff turns one into the other.
//!
//! Ids are printed in tc's notation: hexadecimal, so class `2:1a` is major 2, minor 26, and the
//! u32 filter handle `800::5` is hash table 0x800, node 5. Rates are whole bytes per second and
//! bursts whole bytes (tc's `bps` is bytes per second).

use crate::hosts::Protocol;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;
use tailbound_model::Stage;

/// A class id `major:minor`: the qdisc's handle and the class's number in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClassId {
    pub major: u16,
    pub minor: u16,
}

impl ClassId {
    pub const fn new(major: u16, minor: u16) -> ClassId {
        ClassId { major, minor }
    }

    /// From the kernel's 32-bit form (`major << 16 | minor`).
    pub const fn from_raw(raw: u32) -> ClassId {
        ClassId {
            major: (raw >> 16) as u16,
            minor: raw as u16,
        }
    }

    /// The kernel's 32-bit form.
    pub const fn raw(self) -> u32 {
        ((self.major as u32) << 16) | self.minor as u32
    }
}

impl fmt::Display for ClassId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:x}:{:x}", self.major, self.minor)
    }
}

/// A class id that is not `major:minor` in hexadecimal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid class id {0:?}; expected major:minor in hexadecimal, e.g. 1:1a")]
pub struct BadClassId(pub String);

impl FromStr for ClassId {
    type Err = BadClassId;
    fn from_str(s: &str) -> Result<ClassId, BadClassId> {
        let bad = || BadClassId(s.to_string());
        let (major, minor) = s.split_once(':').ok_or_else(bad)?;
        let major = u16::from_str_radix(major, 16).map_err(|_| bad())?;
        let minor = u16::from_str_radix(minor, 16).map_err(|_| bad())?;
        Ok(ClassId { major, minor })
    }
}

/// Serde as the string tc prints (`Display`) and reads back (`FromStr`).
macro_rules! serde_as_text {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$t, D::Error> {
                String::deserialize(d)?
                    .parse()
                    .map_err(serde::de::Error::custom)
            }
        }
    )*};
}

serde_as_text!(ClassId, QdiscParent, FilterHandle);

/// Where a qdisc hangs: at the root of the interface's egress, or under a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QdiscParent {
    Root,
    Class(ClassId),
}

impl fmt::Display for QdiscParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QdiscParent::Root => f.write_str("root"),
            QdiscParent::Class(c) => c.fmt(f),
        }
    }
}

impl FromStr for QdiscParent {
    type Err = BadClassId;
    fn from_str(s: &str) -> Result<QdiscParent, BadClassId> {
        match s {
            "root" => Ok(QdiscParent::Root),
            _ => s.parse().map(QdiscParent::Class),
        }
    }
}

/// A qdisc on the interface's egress.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Qdisc {
    /// the handle's major number (`2` is `2:`)
    pub handle: u16,
    pub parent: QdiscParent,
    /// `htb` for every qdisc tailbound creates
    pub kind: String,
    /// HTB's `default`: the minor of the class that takes unclassified packets (0 for other
    /// kinds)
    pub default_minor: u16,
    /// what the qdisc is for (desired state only)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<QdiscRole>,
}

impl Qdisc {
    /// A qdisc the kernel attached by itself: a leaf class's default queue (`pfifo 8001:`)
    /// or the interface's default root (handle `0:`). tailbound neither creates nor deletes
    /// these; the planner's majors stay below 0x8000, where the kernel's own begin.
    pub fn is_implicit(&self) -> bool {
        self.kind != "htb" && (self.handle == 0 || self.handle >= AUTO_HANDLE_START)
    }
}

/// The first qdisc major the kernel assigns by itself.
pub const AUTO_HANDLE_START: u16 = 0x8000;

/// What a qdisc of the desired state is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "kebab-case")]
pub enum QdiscRole {
    /// the interface's root: everything it sends passes its one class, at the link rate
    Link,
    /// the priority levels `7·depth` to `7·depth + 6` (and, at depth 0, best effort)
    Levels { depth: u32 },
    /// a tenant flow's `bucket`-th token bucket (a flow with several buckets chains them)
    Bucket {
        tenant: String,
        stage: Stage,
        bucket: usize,
    },
}

/// An HTB class. A leaf sends while its own bucket (`rate`, `burst`) has tokens, at its `prio`
/// before every leaf of a larger `prio`; beyond that it may borrow from its parents up to
/// `ceil` (bucket `cburst`), after every leaf that is within its rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Class {
    pub id: ClassId,
    /// `None`: a root class of qdisc `id.major`
    pub parent: Option<ClassId>,
    /// guaranteed rate [bytes/s]
    pub rate_bytes_per_s: u64,
    /// maximum rate, borrowing included [bytes/s]
    pub ceil_bytes_per_s: u64,
    /// depth of the rate bucket [bytes]
    pub burst_bytes: u64,
    /// depth of the ceil bucket [bytes]
    pub cburst_bytes: u64,
    /// HTB priority among leaves, 0 (first) to 7
    pub prio: u8,
    /// bytes served per round among leaves of equal prio [bytes]
    pub quantum_bytes: u32,
    /// what the class is for (desired state only)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<ClassRole>,
}

/// What a class of the desired state is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "kebab-case")]
pub enum ClassRole {
    /// the link: the one class of the root qdisc, rate = ceil = link rate
    Link,
    /// the root of the levels at `depth`, which everything in them borrows from
    Root { depth: u32 },
    /// unclassified traffic and rejected tenants: a guaranteed minimum, the rest borrowed
    /// after every tenant's conforming traffic
    BestEffort { depth: u32 },
    /// one priority level (HTB prio `priority mod 7` at depth `priority div 7`)
    Level { priority: u32 },
    /// HTB prio 7 at `depth - 1`: holds the qdisc of the levels at `depth`
    Container { depth: u32 },
    /// a tenant flow's `bucket`-th token bucket (0: the leaf at the flow's priority)
    Flow {
        tenant: String,
        stage: Stage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flow: Option<String>,
        priority: u32,
        bucket: usize,
        buckets: usize,
    },
}

/// One 32-bit word a u32 filter compares: `(word at off) & mask == value`, in network order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct U32Key {
    /// byte offset from the start of the IP header
    pub off: i32,
    /// nonzero: the offset is relative to the next header (tc's `nexthdr+`)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offmask: i32,
    pub value: u32,
    pub mask: u32,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// Merges keys that compare the same word (as tc does) and sorts them, so two filters that
/// match the same packets compare equal.
pub fn canonical_keys(keys: &[U32Key]) -> Vec<U32Key> {
    let mut out: Vec<U32Key> = Vec::with_capacity(keys.len());
    for k in keys {
        match out
            .iter_mut()
            .find(|o| o.off == k.off && o.offmask == k.offmask)
        {
            Some(o) => {
                o.value |= k.value & k.mask;
                o.mask |= k.mask;
            }
            None => out.push(U32Key {
                value: k.value & k.mask,
                ..*k
            }),
        }
    }
    out.sort();
    out
}

/// What a tenant flow's packets look like, in the fields a u32 filter on IPv4 can compare.
/// Port matches assume an IP header without options (tc's `match ip sport/dport`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FlowMatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sport: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dport: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// the DSCP (upper six bits of the TOS byte)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dscp: Option<u8>,
}

impl FlowMatch {
    /// The u32 keys of this match, canonical.
    pub fn keys(&self) -> Vec<U32Key> {
        let mut keys = Vec::new();
        let key = |off, value, mask| U32Key {
            off,
            offmask: 0,
            value,
            mask,
        };
        if let Some(d) = self.dscp {
            // byte 1 of the header is the TOS; its upper six bits the DSCP
            keys.push(key(0, u32::from(d & 0x3f) << 18, 0x00fc_0000));
        }
        if let Some(p) = self.protocol {
            keys.push(key(8, u32::from(p.number()) << 16, 0x00ff_0000));
        }
        if let Some(a) = self.src {
            keys.push(key(12, u32::from(a), u32::MAX));
        }
        if let Some(a) = self.dst {
            keys.push(key(16, u32::from(a), u32::MAX));
        }
        if let Some(p) = self.sport {
            keys.push(key(20, u32::from(p) << 16, 0xffff_0000));
        }
        if let Some(p) = self.dport {
            keys.push(key(20, u32::from(p), 0x0000_ffff));
        }
        canonical_keys(&keys)
    }

    /// Whether some packet could match both (no field tells them apart).
    pub fn overlaps(&self, other: &FlowMatch) -> bool {
        fn differ<T: PartialEq>(a: &Option<T>, b: &Option<T>) -> bool {
            matches!((a, b), (Some(x), Some(y)) if x != y)
        }
        !(differ(&self.src, &other.src)
            || differ(&self.dst, &other.dst)
            || differ(&self.sport, &other.sport)
            || differ(&self.dport, &other.dport)
            || differ(&self.protocol, &other.protocol)
            || differ(&self.dscp, &other.dscp))
    }
}

/// A u32 filter handle: hash table (`htid`, 12 bits), bucket and node (12 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FilterHandle(pub u32);

impl FilterHandle {
    /// Node `node` of whatever table the filter's priority uses (`::5`).
    pub const fn node_only(node: u16) -> FilterHandle {
        FilterHandle(node as u32 & 0xfff)
    }
    pub const fn htid(self) -> u32 {
        self.0 >> 20
    }
    pub const fn node(self) -> u16 {
        (self.0 & 0xfff) as u16
    }
}

impl fmt::Display for FilterHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hash = (self.0 >> 12) & 0xff;
        match (self.htid(), hash) {
            (0, 0) => write!(f, "::{:x}", self.node()),
            (h, 0) => write!(f, "{h:x}::{:x}", self.node()),
            (h, b) => write!(f, "{h:x}:{b:x}:{:x}", self.node()),
        }
    }
}

/// A u32 handle that is not `htid:hash:node` in hexadecimal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid u32 handle {0:?}; expected htid:hash:node in hexadecimal, e.g. 800::5")]
pub struct BadFilterHandle(pub String);

impl FromStr for FilterHandle {
    type Err = BadFilterHandle;
    fn from_str(s: &str) -> Result<FilterHandle, BadFilterHandle> {
        let bad = || BadFilterHandle(s.to_string());
        let num = |t: &str| {
            if t.is_empty() {
                Ok(0)
            } else {
                u32::from_str_radix(t, 16).map_err(|_| bad())
            }
        };
        let parts: Vec<&str> = s.split(':').collect();
        let [h, b, n] = parts[..] else {
            return Err(bad());
        };
        Ok(FilterHandle(
            (num(h)? << 20) | ((num(b)? & 0xff) << 12) | (num(n)? & 0xfff),
        ))
    }
}

/// A u32 filter attached to an HTB qdisc: packets whose words match every key go to `flowid`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// major of the qdisc it is attached to
    pub qdisc: u16,
    /// tc's `prio` (preference) of the filter
    pub pref: u16,
    pub handle: FilterHandle,
    /// the class matching packets go to
    pub flowid: ClassId,
    /// canonical keys ([`canonical_keys`])
    pub keys: Vec<U32Key>,
    /// the same keys as fields (desired state only)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<FlowMatch>,
    /// what the filter classifies (desired state only)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serves: Option<FilterRole>,
}

impl Filter {
    /// What identifies a filter across states: its qdisc, preference and node (the hash table
    /// id is the kernel's choice).
    pub fn slot(&self) -> (u16, u16, u16) {
        (self.qdisc, self.pref, self.handle.node())
    }
}

/// What a filter of the desired state classifies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "kebab-case")]
pub enum FilterRole {
    /// a tenant flow, by addresses, ports and protocol
    Flow {
        tenant: String,
        stage: Stage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flow: Option<String>,
        priority: u32,
    },
    /// the packets senders marked with a priority's DSCP (switch ports)
    Level { priority: u32 },
}

/// The tc configuration of one interface's egress. No qdisc means the kernel's default root.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TcState {
    pub qdiscs: Vec<Qdisc>,
    pub classes: Vec<Class>,
    pub filters: Vec<Filter>,
}

impl TcState {
    /// The root qdisc, unless it is the kernel's default.
    pub fn root(&self) -> Option<&Qdisc> {
        self.qdiscs
            .iter()
            .find(|q| q.parent == QdiscParent::Root && !q.is_implicit())
    }

    /// Whether any HTB qdisc is configured.
    pub fn has_htb(&self) -> bool {
        self.qdiscs.iter().any(|q| q.kind == "htb")
    }

    pub fn class(&self, id: ClassId) -> Option<&Class> {
        self.classes.iter().find(|c| c.id == id)
    }

    pub fn qdisc(&self, handle: u16) -> Option<&Qdisc> {
        self.qdiscs.iter().find(|q| q.handle == handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_print_and_parse_in_hex() {
        let c = ClassId::new(2, 26);
        assert_eq!(c.to_string(), "2:1a");
        assert_eq!("2:1a".parse::<ClassId>().unwrap(), c);
        assert_eq!(ClassId::from_raw(c.raw()), c);
        assert!("2".parse::<ClassId>().is_err());
        assert!("x:1".parse::<ClassId>().is_err());
        assert_eq!(FilterHandle(0x8000_0005).to_string(), "800::5");
        assert_eq!(FilterHandle::node_only(0x1f).to_string(), "::1f");
        let h: FilterHandle = serde_json::from_str("\"800::5\"").unwrap();
        assert_eq!(h, FilterHandle(0x8000_0005));
    }

    #[test]
    fn flow_match_keys_are_the_words_tc_compares() {
        // the keys `tc filter show` printed for `match ip src 10.250.0.1/32 match ip dst
        // 10.250.0.2/32 match ip dport 11211 0xffff match ip protocol 6 0xff`
        let m = FlowMatch {
            src: Some(Ipv4Addr::new(10, 250, 0, 1)),
            dst: Some(Ipv4Addr::new(10, 250, 0, 2)),
            dport: Some(11211),
            protocol: Some(Protocol::Tcp),
            ..FlowMatch::default()
        };
        let k = m.keys();
        let expect = |off, value, mask| U32Key {
            off,
            offmask: 0,
            value,
            mask,
        };
        assert_eq!(
            k,
            vec![
                expect(8, 0x0006_0000, 0x00ff_0000),
                expect(12, 0x0afa_0001, u32::MAX),
                expect(16, 0x0afa_0002, u32::MAX),
                expect(20, 0x2bcb, 0xffff),
            ]
        );
        // both ports share one word
        let both = FlowMatch {
            sport: Some(1),
            dport: Some(2),
            ..FlowMatch::default()
        };
        assert_eq!(both.keys(), vec![expect(20, 0x0001_0002, u32::MAX)]);
        // `match ip tos 0xfc 0xfc` is word 0, bits 16..23
        let tos = FlowMatch {
            dscp: Some(63),
            ..FlowMatch::default()
        };
        assert_eq!(tos.keys(), vec![expect(0, 0x00fc_0000, 0x00fc_0000)]);
    }

    #[test]
    fn overlapping_matches_are_those_no_field_separates() {
        let a = FlowMatch {
            src: Some(Ipv4Addr::new(10, 0, 0, 1)),
            dport: Some(80),
            ..FlowMatch::default()
        };
        let mut b = a.clone();
        assert!(a.overlaps(&b));
        b.dport = Some(81);
        assert!(!a.overlaps(&b));
        b.dport = None;
        assert!(a.overlaps(&b), "a match without a port catches a's packets");
    }
}
