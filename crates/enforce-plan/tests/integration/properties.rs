//! Laws of planning and diffing over random decisions: plans are idempotent, the kernel
//! accepts every diff and ends at the plan, a priority change touches only the moved tenant's
//! classes and filters (and level classes it alone fills or empties), and ids never run out.

use crate::kernel::Kernel;
use crate::{decisions, map, prior_of, tenant};
use proptest::prelude::*;
use std::collections::HashSet;
use tailbound_enforce_plan::state::{ClassRole, FilterRole};
use tailbound_enforce_plan::{plan, ClassId, HostMap, Plan, PlanOptions, PriorAllocations, TcOp};
use tailbound_model::{Decisions, Excess, Stage, TenantDecision};

const TENANTS: usize = 12;

/// One tenant's random decision: admitted or not, a priority up to 20 (three qdiscs), zero to
/// two request buckets and maybe a response bucket.
fn arb_tenant(i: usize) -> impl Strategy<Value = TenantDecision> {
    (
        any::<bool>(),
        0u32..20,
        prop::collection::vec((1e4f64..5e6, 0f64..2e5), 0..3),
        prop::option::of((1e4f64..5e6, 0f64..2e5)),
    )
        .prop_map(move |(admitted, prio, req, resp)| {
            let mut limits: Vec<(Stage, f64, f64)> =
                req.into_iter().map(|(r, b)| (Stage::NetIn, r, b)).collect();
            limits.extend(resp.map(|(r, b)| (Stage::NetOut, r, b)));
            let mut t = tenant(&format!("t{i}"), prio, &limits);
            t.admitted = admitted;
            t
        })
}

fn arb_decisions() -> impl Strategy<Value = Decisions> {
    (
        (0..TENANTS).map(arb_tenant).collect::<Vec<_>>(),
        any::<bool>(),
    )
        .prop_map(|(tenants, be)| {
            decisions(tenants, if be { Excess::BestEffort } else { Excess::Wait })
        })
}

fn plan_all(d: &Decisions, m: &HostMap, prior: &PriorAllocations) -> Plan {
    plan(d, m, &PlanOptions::default(), prior).expect("random decisions fit the links")
}

/// One kernel per planned interface, in plan order.
fn kernels(p: &Plan) -> Vec<Kernel> {
    p.hosts
        .iter()
        .flat_map(|h| h.interfaces.iter().map(|_| Kernel::default()))
        .collect()
}

fn reach_all(ks: &mut [Kernel], p: &Plan) -> Vec<Vec<TcOp>> {
    let states = p
        .hosts
        .iter()
        .flat_map(|h| h.interfaces.iter().map(|i| &i.state));
    ks.iter_mut()
        .zip(states)
        .map(|(k, s)| k.reach(s).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// The classes and filters an op touches that serve a tenant, by tenant name.
fn tenants_touched(op: &TcOp, before: &[Kernel], i: usize) -> HashSet<String> {
    let class_tenant = |id: ClassId| {
        before[i].state.class(id).and_then(|c| match &c.serves {
            Some(ClassRole::Flow { tenant, .. }) => Some(tenant.clone()),
            _ => None,
        })
    };
    let mut out = HashSet::new();
    match op {
        TcOp::AddClass(c) | TcOp::ChangeClass(c) => {
            if let Some(ClassRole::Flow { tenant, .. }) = &c.serves {
                out.insert(tenant.clone());
            }
        }
        TcOp::DelClass { id } => out.extend(class_tenant(*id)),
        TcOp::AddFilter(f) | TcOp::ReplaceFilter(f) => {
            if let Some(FilterRole::Flow { tenant, .. }) = &f.serves {
                out.insert(tenant.clone());
            }
        }
        TcOp::DelFilter(f) => {
            let cur = before[i]
                .state
                .filters
                .iter()
                .find(|o| o.slot() == f.slot());
            if let Some(FilterRole::Flow { tenant, .. }) = cur.and_then(|f| f.serves.as_ref()) {
                out.insert(tenant.clone());
            }
        }
        TcOp::AddQdisc(q) | TcOp::DelQdisc(q) => {
            if let Some(tailbound_enforce_plan::state::QdiscRole::Bucket { tenant, .. }) = &q.serves
            {
                out.insert(tenant.clone());
            }
        }
        TcOp::DelRoot => {
            out.insert("<everything>".into());
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn plans_are_idempotent_and_every_diff_reaches_its_plan(a in arb_decisions(), b in arb_decisions()) {
        let m = map(TENANTS);
        let pa = plan_all(&a, &m, &PriorAllocations::new());
        let mut ks = kernels(&pa);
        reach_all(&mut ks, &pa);
        // the same decisions again: the same state, nothing to do
        let pa2 = plan_all(&a, &m, &prior_of(&pa));
        prop_assert_eq!(&pa.hosts, &pa2.hosts);
        prop_assert!(reach_all(&mut ks, &pa2).iter().all(Vec::is_empty));
        // other decisions: the kernel accepts the diff and ends at the plan
        let pb = plan_all(&b, &m, &prior_of(&pa2));
        reach_all(&mut ks, &pb);
    }

    #[test]
    fn a_priority_change_touches_only_the_moved_tenant(d in arb_decisions(), who in 0..TENANTS, to in 0u32..20) {
        let m = map(TENANTS);
        let mut d = d;
        d.tenants[who].admitted = true;
        let p1 = plan_all(&d, &m, &PriorAllocations::new());
        let mut ks = kernels(&p1);
        reach_all(&mut ks, &p1);
        let before = ks.clone();
        d.tenants[who].priority = Some(to);
        let p2 = plan_all(&d, &m, &prior_of(&p1));
        let name = format!("t{who}");
        for (i, ops) in reach_all(&mut ks, &p2).iter().enumerate() {
            for op in ops {
                let touched = tenants_touched(op, &before, i);
                prop_assert!(
                    touched.iter().all(|t| *t == name),
                    "moving {} touched {:?}: {}", name, touched, op.line("eth0")
                );
            }
        }
    }
}

/// The acceptance's loop: apply and remove random decisions 10 000 times; ids never run out
/// and stay within twice what a plan needs.
#[test]
fn ten_thousand_applies_and_removes_never_exhaust_ids() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let m = map(TENANTS);
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = arb_decisions();
    let mut prior = PriorAllocations::new();
    let mut ks: Option<Vec<Kernel>> = None;
    let mut most = (0u16, 0u16, 0u16);
    for round in 0..10_000 {
        let d = strategy
            .new_tree(&mut runner)
            .expect("a random decision")
            .current();
        let p = plan_all(&d, &m, &prior);
        let ks = ks.get_or_insert_with(|| kernels(&p));
        reach_all(ks, &p);
        for h in &p.hosts {
            for i in &h.interfaces {
                let (q, c, f) = i.allocation.max_ids();
                most = (most.0.max(q), most.1.max(c), most.2.max(f));
            }
        }
        prior = prior_of(&p);
        if round % 2 == 1 {
            // remove: the enforcer forgets the interface's ids with its record
            prior.clear();
            for k in ks.iter_mut() {
                k.apply(&tailbound_enforce_plan::diff(&k.state, &Default::default()))
                    .expect("remove");
            }
        }
    }
    // 12 tenants x 2 flows: at most 2 x (3 levels qdiscs + 48 bucket qdiscs) majors, etc.
    assert!(most.0 <= 2 * (3 + 2 * TENANTS as u16 * 2) + 2, "{most:?}");
    assert!(most.1 <= 2 * (20 + 3 + 2 * TENANTS as u16) + 3, "{most:?}");
    assert!(most.2 <= 2 * 3 * 2 * TENANTS as u16, "{most:?}");
}
