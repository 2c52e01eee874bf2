//! A strict-priority scheduler's queue state: any number of levels, 0 the highest, FIFO
//! within a level. No time is involved; the driver (a simulated link, an enforcer) decides
//! when to pop. Preemption granularity (packets, MTU chunks) is the driver's choice too.
//!
//! Levels are dense indexes: memory grows with the highest level pushed, so use small
//! integers (priorities from the admission decisions are 0..n for n tenants or classes).

use std::collections::VecDeque;

/// Strict-priority queue: [`PriorityQueue::pop`] returns the oldest item of the highest
/// (numerically lowest) non-empty level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityQueue<T> {
    levels: Vec<VecDeque<T>>,
    len: usize,
}

impl<T> Default for PriorityQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> PriorityQueue<T> {
    /// An empty queue; levels appear as items are pushed.
    pub fn new() -> Self {
        PriorityQueue {
            levels: Vec::new(),
            len: 0,
        }
    }

    /// An empty queue with `levels` levels preallocated.
    pub fn with_levels(levels: usize) -> Self {
        PriorityQueue {
            levels: (0..levels).map(|_| VecDeque::new()).collect(),
            len: 0,
        }
    }

    /// Appends `item` at the back of `level` (0 is the highest priority).
    pub fn push(&mut self, level: usize, item: T) {
        if level >= self.levels.len() {
            self.levels.resize_with(level + 1, VecDeque::new);
        }
        self.levels[level].push_back(item);
        self.len += 1;
    }

    /// Removes the oldest item of the highest non-empty level, with its level.
    pub fn pop(&mut self) -> Option<(usize, T)> {
        if self.len == 0 {
            return None;
        }
        for (level, queue) in self.levels.iter_mut().enumerate() {
            if let Some(item) = queue.pop_front() {
                self.len -= 1;
                return Some((level, item));
            }
        }
        None
    }

    /// The item [`PriorityQueue::pop`] would return, without removing it.
    pub fn peek(&self) -> Option<(usize, &T)> {
        if self.len == 0 {
            return None;
        }
        self.levels
            .iter()
            .enumerate()
            .find_map(|(level, q)| q.front().map(|item| (level, item)))
    }

    /// The item [`PriorityQueue::pop`] would return, mutable in place (e.g. a run of packets
    /// whose remaining count shrinks as they are served).
    pub fn front_mut(&mut self) -> Option<(usize, &mut T)> {
        if self.len == 0 {
            return None;
        }
        self.levels
            .iter_mut()
            .enumerate()
            .find_map(|(level, q)| q.front_mut().map(|item| (level, item)))
    }

    /// Moves the items of level `from` for which `pick` holds to the back of level `to`,
    /// keeping their order (a promotion: they queue at `to` from now on, behind the items
    /// already there); returns how many moved.
    pub fn move_matching(
        &mut self,
        from: usize,
        to: usize,
        mut pick: impl FnMut(&T) -> bool,
    ) -> usize {
        let Some(level) = self.levels.get_mut(from) else {
            return 0;
        };
        if from == to || level.is_empty() {
            return 0;
        }
        let (moved, kept): (VecDeque<T>, VecDeque<T>) = level.drain(..).partition(|t| pick(t));
        *level = kept;
        let n = moved.len();
        if n > 0 {
            if to >= self.levels.len() {
                self.levels.resize_with(to + 1, VecDeque::new);
            }
            self.levels[to].extend(moved);
        }
        n
    }

    /// Items queued over all levels.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no item is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Items queued at `level` (0 for a level never used).
    pub fn len_at(&self, level: usize) -> usize {
        self.levels.get(level).map_or(0, VecDeque::len)
    }

    /// Items queued per level, index = level, up to the highest level ever used.
    pub fn level_lens(&self) -> Vec<usize> {
        self.levels.iter().map(VecDeque::len).collect()
    }

    /// Number of levels allocated so far (highest level used + 1, or as preallocated).
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_priority_then_fifo() {
        let mut q = PriorityQueue::new();
        q.push(2, "c1");
        q.push(0, "a1");
        q.push(2, "c2");
        q.push(0, "a2");
        assert_eq!(q.len(), 4);
        assert_eq!(q.len_at(2), 2);
        assert_eq!(q.len_at(1), 0);
        assert_eq!(q.level_lens(), vec![2, 0, 2]);
        assert_eq!(q.peek(), Some((0, &"a1")));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(0, "a1"), (0, "a2"), (2, "c1"), (2, "c2")]);
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn preallocated_levels() {
        let q: PriorityQueue<u8> = PriorityQueue::with_levels(4);
        assert_eq!(q.num_levels(), 4);
        assert!(q.is_empty());
        assert_eq!(q.peek(), None);
    }

    #[test]
    fn front_mut_changes_the_head_in_place() {
        let mut q = PriorityQueue::with_levels(2);
        q.push(1, 10);
        q.push(0, 20);
        q.push(0, 21);
        if let Some((level, head)) = q.front_mut() {
            assert_eq!(level, 0);
            *head += 5;
        }
        assert_eq!(q.pop(), Some((0, 25)));
        assert_eq!(q.pop(), Some((0, 21)));
        assert_eq!(q.front_mut().map(|(l, v)| (l, *v)), Some((1, 10)));
    }

    #[test]
    fn move_matching_promotes_in_order_behind_the_items_already_there() {
        let mut q = PriorityQueue::with_levels(3);
        for v in [1, 2, 3, 4] {
            q.push(2, v);
        }
        q.push(0, 10);
        assert_eq!(q.move_matching(2, 0, |v| v % 2 == 0), 2);
        assert_eq!(q.len(), 5);
        assert_eq!(q.level_lens(), vec![3, 0, 2]);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(0, 10), (0, 2), (0, 4), (2, 1), (2, 3)]);
        assert_eq!(q.move_matching(7, 0, |_| true), 0);
    }
}
