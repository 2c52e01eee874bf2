//! The clocks that drive sans-IO state machines at the edge.
//!
//! The token buckets, the enforcer's core and Pulsar's controller never read a clock: every
//! call takes `now` in nanoseconds. Whoever drives them at run time reads a [`Clock`]: the
//! [`MonotonicClock`] in production, or a [`ManualClock`] that only moves when told, so that
//! tests of real servers assert on what the code decides at a given time instead of on what a
//! busy scheduler delivered.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A monotone time source [ns since the clock's epoch].
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current time [ns].
    fn now_ns(&self) -> u64;

    /// When, in real time, the clock will read `at_ns`: for timers. `None` for a clock that
    /// does not advance by itself ([`ManualClock`]); its owner wakes the waiters.
    fn deadline(&self, at_ns: u64) -> Option<Instant>;
}

/// Real time since the clock was created.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    epoch: Instant,
}

impl MonotonicClock {
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            epoch: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn deadline(&self, at_ns: u64) -> Option<Instant> {
        self.epoch.checked_add(Duration::from_nanos(at_ns))
    }
}

/// A clock that moves only when [`ManualClock::set`] or [`ManualClock::advance`] says so.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ns: AtomicU64,
}

impl ManualClock {
    /// A clock reading `now_ns`.
    pub fn new(now_ns: u64) -> ManualClock {
        ManualClock {
            now_ns: AtomicU64::new(now_ns),
        }
    }

    /// Moves the clock to `now_ns` (never backwards).
    pub fn set(&self, now_ns: u64) {
        self.now_ns.fetch_max(now_ns, Ordering::SeqCst);
    }

    /// Moves the clock forward by `by_ns`.
    pub fn advance(&self, by_ns: u64) {
        let _ = self
            .now_ns
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(by_ns))
            });
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.now_ns.load(Ordering::SeqCst)
    }

    fn deadline(&self, _at_ns: u64) -> Option<Instant> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_forward() {
        let c = ManualClock::new(10);
        c.set(5);
        assert_eq!(c.now_ns(), 10);
        c.advance(7);
        assert_eq!(c.now_ns(), 17);
        assert_eq!(c.deadline(100), None);
    }

    #[test]
    fn monotonic_deadlines_follow_the_epoch() {
        let c = MonotonicClock::new();
        let a = c.deadline(1_000_000).unwrap();
        let b = c.deadline(2_000_000).unwrap();
        assert_eq!(b - a, Duration::from_millis(1));
    }
}
