//! A model of what the kernel accepts from tc, for tests of the diff's order: HTB refuses a
//! class under a missing parent, the deletion of a class that has children or that a filter
//! points at, and a second qdisc on a class; deleting a qdisc or a class takes everything below
//! it. The real kernel is exercised by the dataplane's namespace tests; this one lets property
//! tests run thousands of plans.

use std::collections::HashSet;
use tailbound_enforce_plan::state::{ClassId, FilterHandle, QdiscParent};
use tailbound_enforce_plan::{diff, TcOp, TcState};

#[derive(Debug, Default, Clone)]
pub struct Kernel {
    pub state: TcState,
}

impl Kernel {
    pub fn apply(&mut self, ops: &[TcOp]) -> Result<(), String> {
        for (i, op) in ops.iter().enumerate() {
            self.one(op)
                .map_err(|e| format!("op {i} `{}`: {e}", op.line("eth0")))?;
        }
        Ok(())
    }

    /// Applies the diff to `desired` and checks that the result is `desired`.
    pub fn reach(&mut self, desired: &TcState) -> Result<Vec<TcOp>, String> {
        let ops = diff(&self.state, desired);
        self.apply(&ops)?;
        let left = diff(&self.state, desired);
        if !left.is_empty() {
            return Err(format!(
                "after {} ops the state still differs: {:?}",
                ops.len(),
                left.iter().map(|o| o.line("eth0")).collect::<Vec<_>>()
            ));
        }
        Ok(ops)
    }

    fn one(&mut self, op: &TcOp) -> Result<(), String> {
        let s = &mut self.state;
        match op {
            TcOp::DelRoot => {
                if s.root().is_none() {
                    return Err("no root qdisc to delete".into());
                }
                *s = TcState::default();
            }
            TcOp::AddQdisc(q) => {
                if s.qdisc(q.handle).is_some() {
                    return Err("handle exists".into());
                }
                if s.qdiscs.iter().any(|o| o.parent == q.parent) {
                    return Err("the parent already has a qdisc".into());
                }
                if let QdiscParent::Class(p) = q.parent {
                    if s.class(p).is_none() {
                        return Err("parent class missing".into());
                    }
                    if s.classes.iter().any(|c| c.parent == Some(p)) {
                        return Err("parent class is not a leaf".into());
                    }
                }
                s.qdiscs.push(q.clone());
            }
            TcOp::DelQdisc(q) => {
                let found = s.qdisc(q.handle).ok_or("no such qdisc")?;
                if found.parent != q.parent {
                    return Err("qdisc has another parent".into());
                }
                remove_qdisc(s, q.handle);
            }
            TcOp::AddClass(c) => {
                if s.class(c.id).is_some() {
                    return Err("class exists".into());
                }
                if s.qdisc(c.id.major).is_none() {
                    return Err("its qdisc is missing".into());
                }
                if let Some(p) = c.parent {
                    if p.major != c.id.major || s.class(p).is_none() {
                        return Err("parent class missing".into());
                    }
                    if s.qdiscs.iter().any(|q| q.parent == QdiscParent::Class(p)) {
                        return Err("parent holds a qdisc".into());
                    }
                }
                s.classes.push(c.clone());
            }
            TcOp::ChangeClass(c) => {
                let cur = s
                    .classes
                    .iter_mut()
                    .find(|o| o.id == c.id)
                    .ok_or("no such class")?;
                if cur.parent != c.parent {
                    return Err("change cannot move a class".into());
                }
                *cur = c.clone();
            }
            TcOp::DelClass { id } => {
                if s.class(*id).is_none() {
                    return Err("no such class".into());
                }
                if s.classes.iter().any(|c| c.parent == Some(*id)) {
                    return Err("class has children (EBUSY)".into());
                }
                if s.filters.iter().any(|f| f.flowid == *id) {
                    return Err("a filter points at the class (EBUSY)".into());
                }
                remove_class(s, *id);
            }
            TcOp::AddFilter(f) => {
                if s.qdisc(f.qdisc).is_none() {
                    return Err("filter on a missing qdisc".into());
                }
                if f.flowid.major != f.qdisc || s.class(f.flowid).is_none() {
                    return Err("flowid is not a class of the qdisc".into());
                }
                if s.filters.iter().any(|o| o.slot() == f.slot()) {
                    return Err("filter exists".into());
                }
                let mut f = f.clone();
                f.handle = FilterHandle((0x800 << 20) | u32::from(f.handle.node()));
                s.filters.push(f);
            }
            TcOp::ReplaceFilter(f) => {
                if s.class(f.flowid).is_none() {
                    return Err("flowid missing".into());
                }
                let cur = s
                    .filters
                    .iter_mut()
                    .find(|o| o.handle == f.handle && o.qdisc == f.qdisc && o.pref == f.pref)
                    .ok_or("no filter with that full handle")?;
                *cur = f.clone();
            }
            TcOp::DelFilter(f) => {
                let before = s.filters.len();
                s.filters
                    .retain(|o| !(o.handle == f.handle && o.qdisc == f.qdisc && o.pref == f.pref));
                if s.filters.len() == before {
                    return Err("no filter with that full handle".into());
                }
            }
        }
        Ok(())
    }
}

fn remove_qdisc(s: &mut TcState, handle: u16) {
    let classes: Vec<ClassId> = s
        .classes
        .iter()
        .filter(|c| c.id.major == handle)
        .map(|c| c.id)
        .collect();
    s.qdiscs.retain(|q| q.handle != handle);
    s.filters.retain(|f| f.qdisc != handle);
    for c in classes {
        remove_class(s, c);
    }
}

fn remove_class(s: &mut TcState, id: ClassId) {
    let below: HashSet<u16> = s
        .qdiscs
        .iter()
        .filter(|q| q.parent == QdiscParent::Class(id))
        .map(|q| q.handle)
        .collect();
    s.classes.retain(|c| c.id != id);
    for h in below {
        remove_qdisc(s, h);
    }
    let kids: Vec<ClassId> = s
        .classes
        .iter()
        .filter(|c| c.parent == Some(id))
        .map(|c| c.id)
        .collect();
    for k in kids {
        remove_class(s, k);
    }
}
