//! From decisions to Linux tc: the configuration every host interface should have to enforce a
//! policy's [`Decisions`](tailbound_model::Decisions) (priorities and token buckets), and the
//! ordered tc operations that get an interface there. No I/O and no clock: reading the kernel's
//! state and running `tc` live in `tailbound-dataplane` (`tc` module); the decisions come from
//! the policy crates; the simulator enforces the same decisions with `tailbound-shaping`.
//!
//! * [`hosts`]: the host map (which namespace and interface each host is, how each tenant's
//!   packets look), validated with file, field and value in every error.
//! * [`planner`]: decisions + map → [`Plan`]: per host and interface a desired [`TcState`]
//!   whose classes and filters say which tenant flow they serve.
//! * [`alloc`]: ids that stay with their objects across plans and are reused once freed.
//! * [`diff`]: current state → desired state as an ordered list of [`TcOp`]s (`tc -batch`
//!   lines).
//! * [`state`]: the state both sides share.
//!
//! # The construction
//!
//! ```text
//!  1: htb (root, default 1:1)
//!  └─ 1:1  link: rate = ceil = link rate              every packet passes here: the link cap
//!     └─ 2: htb (default 2:2)                          levels 0..6
//!        └─ 2:1  root: rate = ceil = link
//!           ├─ 2:2  best effort: 0.1 % guaranteed, ceil link, prio 7   (unclassified, rejected)
//!           ├─ 2:L  level p: 0.1 % guaranteed, ceil link               (one per priority in use)
//!           │  └─ 2:F  tenant flow: token bucket (rate r, burst b), prio p mod 7
//!           │     └─ N: htb → N:1  the flow's further buckets, if it has several (strict)
//!           └─ 2:C  container: rate = ceil = link, prio 7
//!              └─ 3: htb   levels 7..13, the same shape, and so on
//! ```
//!
//! Why it enforces what the calculus and the simulator assume: an HTB leaf within its own
//! bucket is served before every leaf that is not, and among those by `prio`: conforming
//! traffic goes in strict priority order, at each level's place. A leaf beyond its bucket
//! either waits (`--excess wait`: ceil = rate) or borrows (`--excess best-effort`: ceil = link);
//! borrowed packets are served only when no leaf within its bucket has one, and HTB charges
//! them to the ceil bucket only, so excess neither delays conforming traffic nor eats the
//! tenant's tokens (the simulator's `Excess::BestEffort`). A flow without a limit has a leaf at
//! the link rate: all its traffic is at its level. The link class caps the sum at the link
//! rate, which also holds on interfaces (veth) that have no rate of their own. Levels 7 and
//! beyond sit in a nested HTB qdisc under a class of prio 7 that is always within its rate, so
//! they come after levels 0..6 and before every excess; each nested qdisc has its own u32
//! filters, which send the flow on toward its leaf. A flow with several buckets (a concave
//! arrival curve) keeps all of them: the leaf holds the long-term (smallest-rate) bucket, and
//! nested single-class qdiscs the others, so a packet leaves only when every bucket allows it.
//!
//! Switch ports have the same tree with the levels as leaves at the link rate and u32 filters
//! on the DSCP senders set ([`dscp_for_priority`]); unmarked packets go best effort.
//!
//! # Limits
//!
//! * 63 levels, 0 to [`MAX_PRIORITY`]: the DSCP has six bits; each seven levels add a nested
//!   qdisc (nine at most).
//! * HTB serves a packet while a bucket is not negative, so a leaf sends up to r·t + b plus one
//!   packet (on interfaces with GSO, one GSO packet, up to 64 KiB).
//! * Best-effort excess of a flow with several buckets borrows beyond its long-term bucket
//!   only; beyond its other buckets it waits (HTB decides borrowing once per class).
//! * Among excess traffic, order is not by priority: excess of levels 7 and beyond passes the
//!   prio-7 container, which is within its rate, before the excess of levels 0..6.
//! * IPv4 only; port matches assume IP headers without options (tc's own `ip sport/dport`).
//! * Storage limits are not network traffic: the plan lists them as unenforced.
//! * A bucket may hold at most [`planner::MAX_BUFFER_S`] seconds of its rate (HTB keeps it as
//!   a 32-bit count of 64 ns ticks).

pub mod alloc;
pub mod diff;
pub mod error;
pub mod hosts;
pub mod planner;
pub mod state;

pub use alloc::Allocation;
pub use diff::{diff, TcOp};
pub use error::{HostMapError, PlanError};
pub use hosts::{HostMap, HostRole, Protocol};
pub use planner::{link_plan, plan, HostPlan, InterfacePlan, Plan, PlanOptions, PriorAllocations};
pub use state::{Class, ClassId, ClassRole, Filter, FilterRole, FlowMatch, Qdisc, TcState};

/// The lowest priority level tailbound enforces (0 is the highest).
pub const MAX_PRIORITY: u32 = 62;

/// The DSCP a sender marks a priority level's packets with: 63 − p, so the highest level has
/// the highest code point and DSCP 0 (unmarked) stays best effort. `None` beyond
/// [`MAX_PRIORITY`].
pub fn dscp_for_priority(priority: u32) -> Option<u8> {
    (priority <= MAX_PRIORITY).then(|| 63 - priority as u8)
}

/// The TOS byte (`IP_TOS`) for a priority level: its DSCP in the upper six bits, ECN clear.
pub fn tos_for_priority(priority: u32) -> Option<u8> {
    dscp_for_priority(priority).map(|d| d << 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_map_to_distinct_nonzero_code_points() {
        let codes: std::collections::HashSet<u8> =
            (0..=MAX_PRIORITY).filter_map(dscp_for_priority).collect();
        assert_eq!(codes.len(), 63);
        assert!(!codes.contains(&0), "DSCP 0 is unmarked traffic");
        assert_eq!(tos_for_priority(0), Some(0xfc));
        assert_eq!(tos_for_priority(62), Some(0x04));
        assert_eq!(dscp_for_priority(63), None);
    }
}
