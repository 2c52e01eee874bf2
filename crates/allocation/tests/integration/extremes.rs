//! The allocation invariants at the ends of the accepted ranges (issue 27): capacities and
//! demands drawn log-uniformly over all of `MIN_QUANTITY..=MAX_QUANTITY` and weights over
//! `MIN_WEIGHT..=MAX_WEIGHT`, with relative tolerances only (no absolute slack hides a tiny
//! resource): no resource over its capacity and no flow over its demand (every mechanism),
//! every flow below its demand held back by a saturated resource (every mechanism), and DRF's
//! bottleneck condition. `tailbound alloc`'s reader refuses values
//! outside the ranges, naming them.

use proptest::prelude::*;
use tailbound_allocation::input::AllocInput;
use tailbound_allocation::problem::{MAX_QUANTITY, MAX_WEIGHT, MIN_QUANTITY, MIN_WEIGHT};
use tailbound_allocation::{Allocation, Mechanism, Mra, Problem};

/// Relative tolerance of the capacity check (which the mechanisms' post-check makes exact).
const REL: f64 = 1e-9;
/// Relative tolerance of "saturated" and "below its demand" (float noise at ratios of 10²¹).
const SHORT: f64 = 1e-7;

/// `lo·(hi/lo)^u`: log-uniform in `[lo, hi]`.
fn log_uniform(lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    (0.0f64..=1.0).prop_map(move |u| (lo.ln() + u * (hi.ln() - lo.ln())).exp().clamp(lo, hi))
}

fn quantity() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(0.0),
        1 => Just(MIN_QUANTITY),
        1 => Just(MAX_QUANTITY),
        6 => log_uniform(MIN_QUANTITY, MAX_QUANTITY),
    ]
}

fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![
        1 => Just(MIN_WEIGHT),
        1 => Just(MAX_WEIGHT),
        1 => Just(1.0),
        4 => log_uniform(MIN_WEIGHT, MAX_WEIGHT),
    ]
}

fn problem() -> impl Strategy<Value = Problem> {
    (1usize..6, 1usize..4).prop_flat_map(|(n, nt)| {
        let flow = (0..nt, weight(), prop::collection::vec(quantity(), n));
        (
            prop::collection::vec(quantity(), n),
            prop::collection::vec(weight(), nt),
            prop::collection::vec(flow, 1..10),
        )
            .prop_map(|(capacity, tenants, flows)| {
                let mut p = Problem::new(capacity).unwrap();
                for w in tenants {
                    p.add_tenant(w).unwrap();
                }
                for (t, w, d) in flows {
                    let bundle: Vec<(usize, f64)> = d.into_iter().enumerate().collect();
                    p.add_flow(t, w, &bundle).unwrap();
                }
                p
            })
    })
}

fn check(p: &Problem, a: &Allocation, m: Mechanism) -> Result<(), TestCaseError> {
    for (i, &x) in a.fraction.iter().enumerate() {
        prop_assert!(
            x.is_finite() && (0.0..=1.0).contains(&x),
            "{m}: flow {i} fraction {x}"
        );
    }
    let usage = a.usage(p);
    for (j, (&u, &c)) in usage.iter().zip(p.capacity()).enumerate() {
        prop_assert!(u <= c * (1.0 + REL), "{m}: resource {j} uses {u} of {c}");
    }
    let sat = a.saturated(p, SHORT);
    for i in 0..p.flows() {
        if a.fraction[i] < 1.0 - SHORT {
            prop_assert!(
                p.demand(i).any(|(j, _)| sat[j]),
                "{m}: flow {i} at {} crosses no saturated resource (usage {usage:?})",
                a.fraction[i]
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_mechanism_keeps_capacity_and_demand_at_extreme_scales(p in problem()) {
        for m in Mechanism::ALL {
            check(&p, &m.allocate(&p), m)?;
        }
    }

    /// Every flow below its demand crosses a saturated resource on which no flow has a larger
    /// weighted dominant share.
    #[test]
    fn drf_bottleneck_condition_at_extreme_scales(p in problem()) {
        let a = Mechanism::Drf.allocate(&p);
        let sat = a.saturated(&p, SHORT);
        let share = |i: usize| p.dominant_demand(i).map_or(0.0, |d| a.fraction[i] * d / p.weight(i));
        for i in (0..p.flows()).filter(|&i| a.fraction[i] < 1.0 - SHORT) {
            let si = share(i);
            let ok = p.demand(i).any(|(j, _)| {
                sat[j]
                    && (0..p.flows())
                        .filter(|&k| p.demand(k).any(|(jj, _)| jj == j))
                        .all(|k| share(k) <= si * (1.0 + SHORT))
            });
            prop_assert!(ok, "flow {} (share {}) has no bottleneck: {:?}", i, si, a);
        }
    }
}

/// The issue's examples, given to the reader of `tailbound alloc`'s input: each is refused
/// with the accepted range (it used to allocate more than a capacity or starve every other
/// flow), and a flow naming a tenant the `tenants` list lacks is an error, not a new tenant.
#[test]
fn inputs_outside_the_ranges_are_refused() {
    let input = |capacity: f64, tenant_weight: f64, flow_weight: f64, demand: f64, tenant: &str| {
        let text = format!(
            r#"{{"resources": [{{"name": "r", "capacity": {capacity:e}}}],
                "tenants": [{{"name": "a", "weight": {tenant_weight:e}}}],
                "flows": [{{"name": "f", "tenant": "{tenant}", "weight": {flow_weight:e},
                            "demand": {{"r": {demand:e}}}}},
                          {{"name": "g", "tenant": "a", "demand": {{"r": 600}}}}]}}"#
        );
        let parsed = AllocInput::from_json("in.json", &text).unwrap();
        parsed.problem().map(|_| ()).map_err(|e| e.to_string())
    };
    input(1000.0, 1.0, 1.0, 800.0, "a").unwrap();
    input(0.0, 1.0, 1.0, 0.0, "a").unwrap();
    for (what, bad) in [
        ("tiny capacity", input(1e-320, 1.0, 1.0, 800.0, "a")),
        ("huge capacity", input(1e13, 1.0, 1.0, 800.0, "a")),
        ("tiny demand", input(1000.0, 1.0, 1.0, 1e-320, "a")),
        ("tiny flow weight", input(1000.0, 1.0, 1e-100, 800.0, "a")),
        ("huge flow weight", input(1000.0, 1.0, 1e308, 800.0, "a")),
        ("tiny tenant weight", input(1000.0, 1e-100, 1.0, 800.0, "a")),
    ] {
        let e = bad.expect_err(what);
        assert!(e.contains("1e-3 to 1e"), "{what}: {e}");
    }
    let e = input(1000.0, 1.0, 1.0, 800.0, "b").unwrap_err();
    assert!(
        e.contains("unknown tenant \"b\"") && e.contains("known: a"),
        "{e}"
    );
}
