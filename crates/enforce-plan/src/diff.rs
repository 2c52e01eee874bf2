//! The tc operations that turn an interface's current state into the desired one, in an order
//! the kernel accepts and that keeps every tenant classified while it runs.
//!
//! Order: new qdiscs and classes (parents first), changed classes (in place: `class change`),
//! new filters and changed filters (`filter replace` keeps the handle, so a tenant moved to
//! another level is switched over in one step), then deletions: filters first (HTB refuses to
//! delete a class a filter points at), then qdiscs and classes, children first, skipping what
//! a deleted parent takes with it. A moved tenant's new classes therefore exist before its
//! filter points at them, and its old ones go after. When the current state cannot be turned
//! into the desired one object by object (a foreign root qdisc, an id with another parent), the
//! diff rebuilds: it deletes the root and adds everything.
//!
//! Rates compare exactly, bursts within what tc's conversion to 64 ns ticks loses (1 µs of
//! the rate), prio and quantum on leaves only (HTB ignores them on inner classes).

use crate::state::{Class, ClassId, Filter, Qdisc, QdiscParent, TcState};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// One tc command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum TcOp {
    /// back to the kernel's default root (everything below goes with it)
    DelRoot,
    AddQdisc(Qdisc),
    DelQdisc(Qdisc),
    AddClass(Class),
    ChangeClass(Class),
    DelClass {
        id: ClassId,
    },
    AddFilter(Filter),
    ReplaceFilter(Filter),
    DelFilter(Filter),
}

impl TcOp {
    /// The command as a line of `tc -batch` (without the leading `tc`).
    pub fn line(&self, dev: &str) -> String {
        match self {
            TcOp::DelRoot => format!("qdisc del dev {dev} root"),
            TcOp::AddQdisc(q) => {
                let mut s = format!("qdisc add dev {dev} ");
                match q.parent {
                    QdiscParent::Root => s.push_str("root"),
                    QdiscParent::Class(p) => {
                        let _ = write!(s, "parent {p}");
                    }
                }
                let _ = write!(s, " handle {:x}: {}", q.handle, q.kind);
                if q.kind == "htb" {
                    let _ = write!(s, " default {:x}", q.default_minor);
                }
                s
            }
            TcOp::DelQdisc(q) => match q.parent {
                QdiscParent::Root => format!("qdisc del dev {dev} root"),
                QdiscParent::Class(p) => {
                    format!("qdisc del dev {dev} parent {p} handle {:x}:", q.handle)
                }
            },
            TcOp::AddClass(c) => class_line("add", dev, c),
            TcOp::ChangeClass(c) => class_line("change", dev, c),
            TcOp::DelClass { id } => format!("class del dev {dev} classid {id}"),
            TcOp::AddFilter(f) => filter_line("add", dev, f),
            TcOp::ReplaceFilter(f) => filter_line("replace", dev, f),
            TcOp::DelFilter(f) => format!(
                "filter del dev {dev} parent {:x}: protocol ip prio {} handle {} u32",
                f.qdisc, f.pref, f.handle
            ),
        }
    }

    /// What the operation does, for counts: add, change or delete.
    pub fn effect(&self) -> Effect {
        match self {
            TcOp::AddQdisc(_) | TcOp::AddClass(_) | TcOp::AddFilter(_) => Effect::Add,
            TcOp::ChangeClass(_) | TcOp::ReplaceFilter(_) => Effect::Change,
            TcOp::DelRoot | TcOp::DelQdisc(_) | TcOp::DelClass { .. } | TcOp::DelFilter(_) => {
                Effect::Delete
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Add,
    Change,
    Delete,
}

fn class_line(verb: &str, dev: &str, c: &Class) -> String {
    let parent = match c.parent {
        Some(p) => p.to_string(),
        None => format!("{:x}:", c.id.major),
    };
    format!(
        "class {verb} dev {dev} parent {parent} classid {} htb rate {}bps ceil {}bps burst {}b cburst {}b prio {} quantum {}",
        c.id,
        c.rate_bytes_per_s,
        c.ceil_bytes_per_s,
        c.burst_bytes.max(1),
        c.cburst_bytes.max(1),
        c.prio,
        c.quantum_bytes
    )
}

fn filter_line(verb: &str, dev: &str, f: &Filter) -> String {
    let mut s = format!(
        "filter {verb} dev {dev} parent {:x}: protocol ip prio {} handle {} u32",
        f.qdisc, f.pref, f.handle
    );
    for k in &f.keys {
        let at = if k.offmask != 0 { "nexthdr+" } else { "" };
        let _ = write!(
            s,
            " match u32 0x{:08x} 0x{:08x} at {at}{}",
            k.value, k.mask, k.off
        );
    }
    if f.keys.is_empty() {
        s.push_str(" match u32 0 0 at 0");
    }
    let _ = write!(s, " flowid {}", f.flowid);
    s
}

/// The operations from `current` to `desired` (empty when they agree).
pub fn diff(current: &TcState, desired: &TcState) -> Vec<TcOp> {
    let Some(want_root) = desired.root() else {
        return if current.root().is_some() {
            vec![TcOp::DelRoot]
        } else {
            Vec::new()
        };
    };
    match current.root() {
        None => return build_all(desired),
        Some(r) if r.handle != want_root.handle || !same_qdisc(r, want_root) => {
            return rebuild(desired)
        }
        Some(_) => {}
    }
    if conflicts(current, desired) {
        return rebuild(desired);
    }
    let cur_q: HashMap<u16, &Qdisc> = managed(current).map(|q| (q.handle, q)).collect();
    let cur_c: HashMap<ClassId, &Class> = current.classes.iter().map(|c| (c.id, c)).collect();
    let cur_f: HashMap<(u16, u16, u16), &Filter> =
        current.filters.iter().map(|f| (f.slot(), f)).collect();
    let des_q: HashSet<u16> = managed(desired).map(|q| q.handle).collect();
    let des_c: HashSet<ClassId> = desired.classes.iter().map(|c| c.id).collect();
    let des_f: HashSet<(u16, u16, u16)> = desired.filters.iter().map(Filter::slot).collect();
    let inner: HashSet<ClassId> = desired.classes.iter().filter_map(|c| c.parent).collect();

    let mut ops = Vec::new();
    for obj in tree_order(desired) {
        match obj {
            Obj::Qdisc(q) if !cur_q.contains_key(&q.handle) => ops.push(TcOp::AddQdisc(q.clone())),
            Obj::Class(c) if !cur_c.contains_key(&c.id) => ops.push(TcOp::AddClass(c.clone())),
            _ => {}
        }
    }
    for c in &desired.classes {
        if let Some(cur) = cur_c.get(&c.id) {
            if !same_params(cur, c, !inner.contains(&c.id)) {
                ops.push(TcOp::ChangeClass(c.clone()));
            }
        }
    }
    for f in &desired.filters {
        match cur_f.get(&f.slot()) {
            None => ops.push(TcOp::AddFilter(f.clone())),
            Some(cur) if cur.flowid != f.flowid || cur.keys != f.keys => {
                ops.push(TcOp::ReplaceFilter(Filter {
                    handle: cur.handle,
                    ..f.clone()
                }))
            }
            Some(_) => {}
        }
    }
    // what goes, and what goes with it
    let gone_q: HashSet<u16> = cur_q
        .keys()
        .copied()
        .filter(|h| !des_q.contains(h))
        .collect();
    let gone_c: HashSet<ClassId> = current
        .classes
        .iter()
        .map(|c| c.id)
        .filter(|id| !des_c.contains(id))
        .collect();
    let covered_q = |h: u16| covered_qdisc(current, h, &gone_q, &gone_c);
    for f in &current.filters {
        if !des_f.contains(&f.slot()) && !gone_q.contains(&f.qdisc) && !covered_q(f.qdisc) {
            ops.push(TcOp::DelFilter(f.clone()));
        }
    }
    for q in managed(current) {
        if gone_q.contains(&q.handle) && !covered_q(q.handle) {
            if let QdiscParent::Class(p) = q.parent {
                if !gone_c.contains(&p) {
                    ops.push(TcOp::DelQdisc(q.clone()));
                }
            }
        }
    }
    let mut classes: Vec<&Class> = current
        .classes
        .iter()
        .filter(|c| {
            gone_c.contains(&c.id) && !gone_q.contains(&c.id.major) && !covered_q(c.id.major)
        })
        .collect();
    // children before parents
    classes.sort_by_key(|c| std::cmp::Reverse(class_depth(current, c.id)));
    ops.extend(classes.into_iter().map(|c| TcOp::DelClass { id: c.id }));
    ops
}

/// Qdiscs tailbound manages (not the kernel's implicit ones).
fn managed(s: &TcState) -> impl Iterator<Item = &Qdisc> {
    s.qdiscs.iter().filter(|q| !q.is_implicit())
}

fn same_qdisc(a: &Qdisc, b: &Qdisc) -> bool {
    a.parent == b.parent && a.kind == b.kind && a.default_minor == b.default_minor
}

/// What tc's burst → ticks conversion loses: 1 µs at the rate (it truncates to µs, then to
/// 64 ns ticks), plus rounding [bytes].
fn burst_close(a: u64, b: u64, rate: u64) -> bool {
    a.abs_diff(b) as f64 <= rate as f64 * 2e-6 + 2.0
}

fn same_params(cur: &Class, want: &Class, leaf: bool) -> bool {
    cur.rate_bytes_per_s == want.rate_bytes_per_s
        && cur.ceil_bytes_per_s == want.ceil_bytes_per_s
        && burst_close(cur.burst_bytes, want.burst_bytes, want.rate_bytes_per_s)
        && burst_close(cur.cburst_bytes, want.cburst_bytes, want.ceil_bytes_per_s)
        && (!leaf || (cur.prio == want.prio && cur.quantum_bytes == want.quantum_bytes))
}

/// Objects that share an id but not their place cannot be fixed one by one.
fn conflicts(current: &TcState, desired: &TcState) -> bool {
    let cur_q: HashMap<u16, &Qdisc> = managed(current).map(|q| (q.handle, q)).collect();
    let cur_c: HashMap<ClassId, &Class> = current.classes.iter().map(|c| (c.id, c)).collect();
    let by_parent: HashMap<QdiscParent, u16> =
        managed(current).map(|q| (q.parent, q.handle)).collect();
    managed(desired).any(|q| match cur_q.get(&q.handle) {
        Some(c) => !same_qdisc(c, q),
        // a class holds one qdisc: another one there must go first
        None => by_parent.contains_key(&q.parent),
    }) || desired
        .classes
        .iter()
        .any(|c| cur_c.get(&c.id).is_some_and(|cur| cur.parent != c.parent))
}

/// Whether deleting other objects removes qdisc `h` already: its parent class goes, or the
/// qdisc holding that class does.
fn covered_qdisc(s: &TcState, h: u16, gone_q: &HashSet<u16>, gone_c: &HashSet<ClassId>) -> bool {
    let mut handle = h;
    for _ in 0..=s.qdiscs.len() {
        let Some(QdiscParent::Class(p)) = s.qdisc(handle).map(|q| q.parent) else {
            return false;
        };
        if gone_c.contains(&p) || gone_q.contains(&p.major) && p.major != h {
            return true;
        }
        handle = p.major;
    }
    false
}

/// Depth of a class below its qdisc's root classes.
fn class_depth(s: &TcState, id: ClassId) -> usize {
    let mut depth = 0;
    let mut at = id;
    while let Some(p) = s.class(at).and_then(|c| c.parent) {
        depth += 1;
        at = p;
        if depth > s.classes.len() {
            break;
        }
    }
    depth
}

fn rebuild(desired: &TcState) -> Vec<TcOp> {
    let mut ops = vec![TcOp::DelRoot];
    ops.extend(build_all(desired));
    ops
}

/// Every object of `desired`, parents first, filters last.
fn build_all(desired: &TcState) -> Vec<TcOp> {
    let mut ops: Vec<TcOp> = tree_order(desired)
        .into_iter()
        .map(|o| match o {
            Obj::Qdisc(q) => TcOp::AddQdisc(q.clone()),
            Obj::Class(c) => TcOp::AddClass(c.clone()),
        })
        .collect();
    ops.extend(desired.filters.iter().cloned().map(TcOp::AddFilter));
    ops
}

enum Obj<'a> {
    Qdisc(&'a Qdisc),
    Class(&'a Class),
}

/// Managed qdiscs and classes, each after its parent.
fn tree_order(s: &TcState) -> Vec<Obj<'_>> {
    let mut children_of_class: HashMap<ClassId, Vec<Obj<'_>>> = HashMap::new();
    let mut roots_of_qdisc: HashMap<u16, Vec<&Class>> = HashMap::new();
    let mut top = Vec::new();
    for q in managed(s) {
        match q.parent {
            QdiscParent::Root => top.push(q),
            QdiscParent::Class(p) => children_of_class.entry(p).or_default().push(Obj::Qdisc(q)),
        }
    }
    for c in &s.classes {
        match c.parent {
            None => roots_of_qdisc.entry(c.id.major).or_default().push(c),
            Some(p) => children_of_class.entry(p).or_default().push(Obj::Class(c)),
        }
    }
    let mut out = Vec::with_capacity(s.qdiscs.len() + s.classes.len());
    let mut stack: Vec<Obj<'_>> = top.into_iter().rev().map(Obj::Qdisc).collect();
    while let Some(o) = stack.pop() {
        match o {
            Obj::Qdisc(q) => {
                let roots = roots_of_qdisc.remove(&q.handle).unwrap_or_default();
                stack.extend(roots.into_iter().rev().map(Obj::Class));
                out.push(Obj::Qdisc(q));
            }
            Obj::Class(c) => {
                let kids = children_of_class.remove(&c.id).unwrap_or_default();
                stack.extend(kids.into_iter().rev());
                out.push(Obj::Class(c));
            }
        }
    }
    out
}
