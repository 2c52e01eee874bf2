//! Stable ids for the objects of a plan: qdisc majors, class minors and u32 filter nodes.
//!
//! An [`Allocation`] remembers, per interface, which object (by what it is for: a tenant
//! flow's bucket, a priority level, ...) has which id and under which parent. The next plan
//! keeps an object's id while its parent stays, so re-planning the same decisions yields the
//! same state and a changed rate is a change in place. An object whose parent changes (a
//! tenant moved to another level: HTB cannot move a class) gets a fresh id, so the new one is
//! built before the old one goes. Ids the previous plan used are not handed to another object
//! in the same round (the host still has them while the diff runs); ids no longer used are
//! free from the round after, smallest first. Live ids therefore never exceed twice the
//! objects of the larger of two consecutive plans, and a long run of applies and removes
//! cannot exhaust them.

use crate::state::{ClassId, AUTO_HANDLE_START};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use tailbound_model::Stage;

/// Major 1 is the link qdisc; the kernel numbers its own qdiscs from 0x8000.
pub const FIRST_MAJOR: u16 = 2;
pub const LAST_MAJOR: u16 = AUTO_HANDLE_START - 1;
/// Minor 1 is each qdisc's root class and minor 2 the levels' best-effort class.
pub const FIRST_MINOR: u16 = 3;
pub const LAST_MINOR: u16 = 0xffff;
/// u32 nodes are 12 bits.
pub const FIRST_NODE: u16 = 1;
pub const LAST_NODE: u16 = 0xfff;

/// What an allocated object is for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ObjectKey {
    /// the qdisc of the levels at `depth`
    LevelsQdisc { depth: u32 },
    /// a priority level's class
    LevelClass { priority: u32 },
    /// the class at `depth - 1` that holds the levels at `depth`
    Container { depth: u32 },
    /// a tenant flow's `bucket`-th class (0: its leaf at its level)
    FlowClass {
        tenant: String,
        stage: Stage,
        bucket: usize,
    },
    /// the qdisc holding a tenant flow's `bucket`-th class (`bucket` >= 1)
    BucketQdisc {
        tenant: String,
        stage: Stage,
        bucket: usize,
    },
    /// the filter at `depth` that sends a tenant flow toward its leaf
    FlowFilter {
        tenant: String,
        stage: Stage,
        depth: u32,
    },
    /// the filter at `depth` that sends a priority's DSCP toward its level (switch ports)
    LevelFilter { priority: u32, depth: u32 },
}

/// One allocated id: a qdisc major, a class id or a filter (qdisc major, node), in the
/// kernel's 32-bit forms, with the parent it was allocated under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub id: u32,
    pub parent: u32,
}

/// The ids of one interface's plan.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(from = "Vec<(ObjectKey, Slot)>", into = "Vec<(ObjectKey, Slot)>")]
pub struct Allocation {
    slots: BTreeMap<ObjectKey, Slot>,
}

impl From<Vec<(ObjectKey, Slot)>> for Allocation {
    fn from(v: Vec<(ObjectKey, Slot)>) -> Allocation {
        Allocation {
            slots: v.into_iter().collect(),
        }
    }
}

impl From<Allocation> for Vec<(ObjectKey, Slot)> {
    fn from(a: Allocation) -> Vec<(ObjectKey, Slot)> {
        a.slots.into_iter().collect()
    }
}

impl Allocation {
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
    pub fn get(&self, key: &ObjectKey) -> Option<Slot> {
        self.slots.get(key).copied()
    }
    /// The largest id of each kind in use: (qdisc major, class minor, filter node).
    pub fn max_ids(&self) -> (u16, u16, u16) {
        let mut m = (0, 0, 0);
        for (k, s) in &self.slots {
            match kind_of(k) {
                Kind::Qdisc => m.0 = m.0.max(s.id as u16),
                Kind::Class => m.1 = m.1.max(s.id as u16),
                Kind::Filter => m.2 = m.2.max(s.id as u16),
            }
        }
        m
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Qdisc,
    Class,
    Filter,
}

fn kind_of(k: &ObjectKey) -> Kind {
    match k {
        ObjectKey::LevelsQdisc { .. } | ObjectKey::BucketQdisc { .. } => Kind::Qdisc,
        ObjectKey::LevelClass { .. }
        | ObjectKey::Container { .. }
        | ObjectKey::FlowClass { .. } => Kind::Class,
        ObjectKey::FlowFilter { .. } | ObjectKey::LevelFilter { .. } => Kind::Filter,
    }
}

/// Ids ran out (the caller names the interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    pub what: &'static str,
    pub max: u32,
}

/// Hands out ids for one plan of one interface.
pub struct Allocator<'a> {
    old: &'a Allocation,
    new: Allocation,
    majors: BTreeSet<u16>,
    minors: HashMap<u16, BTreeSet<u16>>,
    nodes: HashMap<u16, BTreeSet<u16>>,
}

impl<'a> Allocator<'a> {
    /// Starts a round: every id of `old` stays taken until the round ends.
    pub fn new(old: &'a Allocation) -> Allocator<'a> {
        let mut a = Allocator {
            old,
            new: Allocation::default(),
            majors: BTreeSet::new(),
            minors: HashMap::new(),
            nodes: HashMap::new(),
        };
        for (k, s) in &old.slots {
            a.mark(kind_of(k), s.id);
        }
        a
    }

    fn mark(&mut self, kind: Kind, id: u32) {
        match kind {
            Kind::Qdisc => {
                self.majors.insert(id as u16);
            }
            Kind::Class => {
                let c = ClassId::from_raw(id);
                self.minors.entry(c.major).or_default().insert(c.minor);
            }
            Kind::Filter => {
                let c = ClassId::from_raw(id);
                self.nodes.entry(c.major).or_default().insert(c.minor);
            }
        }
    }

    /// The old id of `key` if it was allocated under `parent`.
    fn kept(&self, key: &ObjectKey, parent: u32, same_space: impl Fn(u32) -> bool) -> Option<u32> {
        self.old
            .slots
            .get(key)
            .filter(|s| s.parent == parent && same_space(s.id))
            .map(|s| s.id)
    }

    fn record(&mut self, key: ObjectKey, id: u32, parent: u32) {
        let kind = kind_of(&key);
        self.new.slots.insert(key, Slot { id, parent });
        self.mark(kind, id);
    }

    /// A qdisc major for `key` under class `parent`.
    pub fn qdisc(&mut self, key: ObjectKey, parent: ClassId) -> Result<u16, Exhausted> {
        let id = match self.kept(&key, parent.raw(), |_| true) {
            Some(id) => id as u16,
            None => smallest_free(&self.majors, FIRST_MAJOR, LAST_MAJOR).ok_or(Exhausted {
                what: "qdisc handles",
                max: u32::from(LAST_MAJOR - FIRST_MAJOR + 1),
            })?,
        };
        self.record(key, u32::from(id), parent.raw());
        Ok(id)
    }

    /// A class id in qdisc `major` for `key` under class `parent`.
    pub fn class(
        &mut self,
        key: ObjectKey,
        major: u16,
        parent: ClassId,
    ) -> Result<ClassId, Exhausted> {
        let id = match self.kept(&key, parent.raw(), |id| {
            ClassId::from_raw(id).major == major
        }) {
            Some(id) => ClassId::from_raw(id),
            None => {
                let used = self.minors.entry(major).or_default();
                let minor = smallest_free(used, FIRST_MINOR, LAST_MINOR).ok_or(Exhausted {
                    what: "class ids in one qdisc",
                    max: u32::from(LAST_MINOR - FIRST_MINOR + 1),
                })?;
                ClassId::new(major, minor)
            }
        };
        self.record(key, id.raw(), parent.raw());
        Ok(id)
    }

    /// A filter node on qdisc `major` for `key`.
    pub fn filter(&mut self, key: ObjectKey, major: u16) -> Result<u16, Exhausted> {
        let parent = u32::from(major);
        let node = match self.kept(&key, parent, |_| true) {
            Some(id) => ClassId::from_raw(id).minor,
            None => {
                let used = self.nodes.entry(major).or_default();
                smallest_free(used, FIRST_NODE, LAST_NODE).ok_or(Exhausted {
                    what: "u32 filters on one qdisc",
                    max: u32::from(LAST_NODE - FIRST_NODE + 1),
                })?
            }
        };
        self.record(key, ClassId::new(major, node).raw(), parent);
        Ok(node)
    }

    /// Ends the round: the ids of this plan.
    pub fn finish(self) -> Allocation {
        self.new
    }
}

fn smallest_free(used: &BTreeSet<u16>, first: u16, last: u16) -> Option<u16> {
    let mut candidate = first;
    for &u in used.range(first..=last) {
        if u != candidate {
            break;
        }
        candidate = candidate.checked_add(1)?;
    }
    (candidate <= last).then_some(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(t: &str) -> ObjectKey {
        ObjectKey::FlowClass {
            tenant: t.into(),
            stage: Stage::NetIn,
            bucket: 0,
        }
    }

    #[test]
    fn smallest_free_skips_used_ids() {
        let used: BTreeSet<u16> = [3, 4, 6].into_iter().collect();
        assert_eq!(smallest_free(&used, 3, 10), Some(5));
        assert_eq!(smallest_free(&used, 1, 10), Some(1));
        let full: BTreeSet<u16> = (3..=5).collect();
        assert_eq!(smallest_free(&full, 3, 5), None);
    }

    #[test]
    fn ids_stay_with_their_parent_and_freed_ids_wait_one_round() {
        let p1 = ClassId::new(2, 3);
        let p2 = ClassId::new(2, 4);
        let none = Allocation::default();
        let mut a = Allocator::new(&none);
        let x = a.class(flow("x"), 2, p1).unwrap();
        let y = a.class(flow("y"), 2, p1).unwrap();
        assert_eq!((x.minor, y.minor), (3, 4));
        let first = a.finish();
        // same parent: same id; y moves to another parent: a fresh id, not x's or its own
        let mut b = Allocator::new(&first);
        assert_eq!(b.class(flow("x"), 2, p1).unwrap(), x);
        let y2 = b.class(flow("y"), 2, p2).unwrap();
        assert_eq!(y2.minor, 5);
        let second = b.finish();
        // y's old minor 4 is free again one round later
        let mut c = Allocator::new(&second);
        c.class(flow("x"), 2, p1).unwrap();
        c.class(flow("y"), 2, p2).unwrap();
        assert_eq!(c.class(flow("z"), 2, p1).unwrap().minor, 4);
    }

    #[test]
    fn exhaustion_is_an_error_not_a_wrap() {
        let none = Allocation::default();
        let mut a = Allocator::new(&none);
        for n in 0..u32::from(LAST_NODE) {
            a.filter(
                ObjectKey::LevelFilter {
                    priority: n,
                    depth: 0,
                },
                2,
            )
            .unwrap();
        }
        let e = a
            .filter(
                ObjectKey::LevelFilter {
                    priority: 1 << 20,
                    depth: 0,
                },
                2,
            )
            .unwrap_err();
        assert_eq!(e.max, 4095);
    }

    #[test]
    fn allocations_round_trip_through_json() {
        let none = Allocation::default();
        let mut a = Allocator::new(&none);
        a.qdisc(ObjectKey::LevelsQdisc { depth: 0 }, ClassId::new(1, 1))
            .unwrap();
        a.class(flow("x"), 2, ClassId::new(2, 1)).unwrap();
        let done = a.finish();
        let text = serde_json::to_string(&done).unwrap();
        assert_eq!(serde_json::from_str::<Allocation>(&text).unwrap(), done);
    }
}
