//! The diff: what it changes, in which order, and the tc lines it writes.

use crate::kernel::Kernel;
use crate::{decisions, map, prior_of, state, tenant};
use tailbound_enforce_plan::diff::Effect;
use tailbound_enforce_plan::state::{ClassRole, QdiscParent};
use tailbound_enforce_plan::{
    diff, plan, ClassId, PlanOptions, PriorAllocations, Qdisc, TcOp, TcState,
};
use tailbound_model::{Excess, Stage};

fn plan_with(
    d: &tailbound_model::Decisions,
    prior: &PriorAllocations,
) -> tailbound_enforce_plan::Plan {
    plan(d, &map(4), &PlanOptions::default(), prior).unwrap()
}

#[test]
fn from_the_default_root_everything_is_added_parents_first_filters_last() {
    let d = decisions(
        vec![
            tenant(
                "t0",
                0,
                &[(Stage::NetIn, 1e6, 1e4), (Stage::NetIn, 5e6, 1e3)],
            ),
            tenant("t1", 8, &[]),
        ],
        Excess::Wait,
    );
    let p = plan_with(&d, &PriorAllocations::new());
    let want = state(&p, "client");
    let ops = diff(&TcState::default(), want);
    assert!(ops.iter().all(|o| o.effect() == Effect::Add));
    assert_eq!(
        ops.len(),
        want.qdiscs.len() + want.classes.len() + want.filters.len()
    );
    let first_filter = ops
        .iter()
        .position(|o| matches!(o, TcOp::AddFilter(_)))
        .unwrap();
    assert!(ops[first_filter..]
        .iter()
        .all(|o| matches!(o, TcOp::AddFilter(_))));
    // the kernel model accepts the order
    let mut k = Kernel::default();
    k.reach(want).unwrap();
}

#[test]
fn the_same_plan_twice_changes_nothing_and_a_rate_is_changed_in_place() {
    let d = decisions(
        vec![tenant("t0", 1, &[(Stage::NetIn, 1e6, 1e4)])],
        Excess::Wait,
    );
    let p1 = plan_with(&d, &PriorAllocations::new());
    let mut k = Kernel::default();
    k.reach(state(&p1, "client")).unwrap();
    let p2 = plan_with(&d, &prior_of(&p1));
    assert_eq!(state(&p1, "client"), state(&p2, "client"));
    assert!(diff(&k.state, state(&p2, "client")).is_empty());
    let mut faster = d.clone();
    faster.tenants[0].limits[0].bucket.rate = 2e6;
    let p3 = plan_with(&faster, &prior_of(&p2));
    let ops = k.reach(state(&p3, "client")).unwrap();
    assert_eq!(ops.len(), 1, "{ops:?}");
    assert!(matches!(&ops[0], TcOp::ChangeClass(c) if c.rate_bytes_per_s == 2_000_000));
}

#[test]
fn a_tenant_moved_to_another_level_is_built_switched_and_then_removed() {
    let d = decisions(
        vec![
            tenant("t0", 1, &[(Stage::NetIn, 1e6, 1e4)]),
            tenant("t1", 2, &[]),
        ],
        Excess::Wait,
    );
    let p1 = plan_with(&d, &PriorAllocations::new());
    let mut k = Kernel::default();
    k.reach(state(&p1, "client")).unwrap();
    let mut moved = d.clone();
    moved.tenants[0].priority = Some(2);
    let p2 = plan_with(&moved, &prior_of(&p1));
    let ops = k.reach(state(&p2, "client")).unwrap();
    let kinds: Vec<&str> = ops
        .iter()
        .map(|o| match o {
            TcOp::AddClass(_) => "add-class",
            TcOp::ReplaceFilter(_) => "replace-filter",
            TcOp::DelClass { .. } => "del-class",
            _ => "other",
        })
        .collect();
    // the new leaf, the filter switched to it, the old leaf and its emptied level gone
    assert_eq!(
        kinds,
        ["add-class", "replace-filter", "del-class", "del-class"],
        "{ops:?}"
    );
    let old_leaf = state(&p1, "client")
        .classes
        .iter()
        .find(|c| matches!(&c.serves, Some(ClassRole::Flow { tenant, .. }) if tenant == "t0"))
        .unwrap()
        .id;
    assert!(matches!(ops[2], TcOp::DelClass { id } if id == old_leaf));
}

#[test]
fn removing_a_tenant_deletes_its_filter_then_its_leaf_whose_buckets_go_with_it() {
    let d = decisions(
        vec![
            tenant(
                "t0",
                0,
                &[(Stage::NetIn, 1e6, 1e4), (Stage::NetIn, 5e6, 1e3)],
            ),
            tenant("t1", 0, &[]),
        ],
        Excess::Wait,
    );
    let p1 = plan_with(&d, &PriorAllocations::new());
    let mut k = Kernel::default();
    k.reach(state(&p1, "client")).unwrap();
    let mut less = d.clone();
    less.tenants.remove(0);
    let p2 = plan_with(&less, &prior_of(&p1));
    let ops = k.reach(state(&p2, "client")).unwrap();
    assert_eq!(ops.len(), 2, "{ops:?}");
    assert!(matches!(ops[0], TcOp::DelFilter(_)));
    assert!(matches!(ops[1], TcOp::DelClass { .. }));
}

#[test]
fn a_foreign_root_is_replaced_and_an_empty_plan_restores_the_default() {
    let d = decisions(vec![tenant("t0", 0, &[])], Excess::Wait);
    let p = plan_with(&d, &PriorAllocations::new());
    let want = state(&p, "client");
    let foreign = TcState {
        qdiscs: vec![Qdisc {
            handle: 9,
            parent: QdiscParent::Root,
            kind: "htb".into(),
            default_minor: 0,
            serves: None,
        }],
        ..TcState::default()
    };
    let ops = diff(&foreign, want);
    assert!(matches!(ops[0], TcOp::DelRoot));
    assert!(ops[1..].iter().all(|o| o.effect() == Effect::Add));
    assert_eq!(diff(want, &TcState::default()), vec![TcOp::DelRoot]);
    assert!(diff(&TcState::default(), &TcState::default()).is_empty());
}

#[test]
fn batch_lines_are_what_tc_reads() {
    let d = decisions(
        vec![tenant("t0", 3, &[(Stage::NetIn, 1e6, 64e3)])],
        Excess::Wait,
    );
    let p = plan_with(&d, &PriorAllocations::new());
    let lines: Vec<String> = diff(&TcState::default(), state(&p, "client"))
        .iter()
        .map(|o| o.line("eth0"))
        .collect();
    assert_eq!(lines[0], "qdisc add dev eth0 root handle 1: htb default 1");
    assert_eq!(
        lines[1],
        "class add dev eth0 parent 1: classid 1:1 htb rate 125000000bps ceil 125000000bps burst 125000b cburst 125000b prio 0 quantum 200000"
    );
    assert_eq!(
        lines[2],
        "qdisc add dev eth0 parent 1:1 handle 2: htb default 2"
    );
    assert!(lines.contains(
        &"class add dev eth0 parent 2:3 classid 2:4 htb rate 1000000bps ceil 1000000bps burst 64000b cburst 64000b prio 3 quantum 100000".to_string()
    ), "{lines:#?}");
    assert_eq!(
        lines.last().unwrap(),
        "filter add dev eth0 parent 2: protocol ip prio 1 handle ::1 u32 match u32 0x00060000 0x00ff0000 at 8 match u32 0x0a000001 0xffffffff at 12 match u32 0x0a000002 0xffffffff at 16 match u32 0x00002bcb 0x0000ffff at 20 flowid 2:4"
    );
    let del = TcOp::DelClass {
        id: ClassId::new(2, 0x1a),
    };
    assert_eq!(del.line("eth0"), "class del dev eth0 classid 2:1a");
}
