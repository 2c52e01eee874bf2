//! The event queue both of tailbound's discrete-event engines run on (the replay here and
//! Pulsar's closed loop in `tailbound-vdc-sim`): events ordered by time, then by the order
//! they were scheduled, so that a simulation is a pure function of its inputs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A min-queue of events of type `E` keyed by time [ns] and insertion order.
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
}

#[derive(Debug, Clone)]
struct Entry<E> {
    at: u64,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// reversed: the heap's greatest is the earliest event, and of equal times the first
    /// scheduled
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `event` at `at` [ns].
    pub fn push(&mut self, at: u64, event: E) {
        self.heap.push(Entry {
            at,
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }

    /// The earliest event and its time; of equal times, the first scheduled.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|e| (e.at, e.event))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_by_scheduling_order() {
        let mut q = EventQueue::new();
        for (at, ev) in [(5, 'a'), (3, 'b'), (5, 'c'), (1, 'd'), (3, 'e')] {
            q.push(at, ev);
        }
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, [(1, 'd'), (3, 'b'), (3, 'e'), (5, 'a'), (5, 'c')]);
        assert!(q.is_empty());
    }
}
