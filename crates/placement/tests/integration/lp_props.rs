//! Property tests: whatever the curves, an LP answer lies on or above every curve, keeps every
//! stage within capacity and meets every SLO by the calculus' eq. (5); the LP never says "does
//! not fit" when a feasible point is known; more SLO never hurts.

use proptest::prelude::*;
use tailbound_model::RbCurve;
use tailbound_placement::lp::bounds;
use tailbound_placement::{optimise, LpMember, NormCurve};

/// A convex non-increasing curve from a long-term rate and decreasing slopes.
fn curve() -> impl Strategy<Value = NormCurve> {
    (
        0.001f64..0.1,
        0.001f64..0.5,
        prop::collection::vec((0.001f64..0.2, 0.05f64..0.9), 1..6),
    )
        .prop_map(|(r0, b0, steps)| {
            let mut v = vec![[r0, b0]];
            let mut slope_mag = f64::INFINITY;
            for (dr, shrink) in steps {
                let [r, b] = v[v.len() - 1];
                // slopes shrink in magnitude (convex) and b stays positive
                slope_mag = (slope_mag * shrink).min(0.9 * b / dr);
                v.push([r + dr, b - slope_mag * dr]);
            }
            NormCurve::new(&RbCurve::new(v).expect("valid curve"), 1.0, 0.0)
        })
}

fn workload() -> impl Strategy<Value = ([NormCurve; 4], f64)> {
    (
        curve(),
        curve(),
        curve(),
        prop::sample::select(vec![0.1, 0.25, 0.5, 1.0]),
    )
        .prop_map(|(a, b, c, slo)| ([a, b, c.clone(), c], slo))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn lp_answers_satisfy_the_calculus(ws in prop::collection::vec(workload(), 1..6)) {
        let names: Vec<String> = (0..ws.len()).map(|i| format!("w{i}")).collect();
        let members: Vec<LpMember<'_>> = ws
            .iter()
            .zip(&names)
            .map(|((c, slo), name)| LpMember { name, curves: c, slo_s: *slo, budget_s: *slo })
            .collect();
        if let Some(sol) = optimise(&members).unwrap() {
            for (m, b) in members.iter().zip(&sol.buckets) {
                for (c, bucket) in m.curves.iter().zip(b) {
                    let on = c.burst_at(bucket.rate).unwrap();
                    prop_assert!(bucket.burst >= on - 1e-12, "below the curve: {bucket:?} vs {on}");
                    prop_assert!(bucket.rate >= c.min_rate() - 1e-12);
                }
            }
            for s in sol.rate_sums {
                prop_assert!(s <= 1.0);
            }
            for (m, bound) in members.iter().zip(bounds(&sol).unwrap()) {
                prop_assert!(bound <= m.budget_s + 1e-6, "{}: bound {bound} > {}", m.name, m.budget_s);
            }
        } else {
            // infeasible: then no subset containing everything fits with more budget removed;
            // and the same set with every SLO ten times larger may fit, but a strict superset
            // never fits
            let mut more = members.clone();
            more.push(members[0]);
            prop_assert!(optimise(&more).unwrap().is_none(), "a superset of an infeasible set fitted");
        }
    }

    #[test]
    fn a_known_feasible_point_is_found(c in curve(), slo in 0.05f64..2.0) {
        // one workload whose least-rate point meets the SLO alone (4 stages' bursts at the
        // curve's last vertex ≤ SLO) must fit
        let cs = [c.clone(), c.clone(), c.clone(), c.clone()];
        let need = 4.0 * c.min_burst();
        let m = LpMember { name: "w", curves: &cs, slo_s: slo, budget_s: slo };
        let fits = optimise(&[m]).unwrap().is_some();
        if need <= slo * 0.999 && c.vertices().iter().all(|v| v[0] < 0.2) {
            prop_assert!(fits, "min bursts sum to {need} <= SLO {slo} but the LP said no fit");
        }
        if need > slo {
            prop_assert!(!fits, "bursts of at least {need} cannot fit in {slo}");
        }
    }

    #[test]
    fn more_budget_never_hurts(ws in prop::collection::vec(workload(), 1..5), k in 1.0f64..4.0) {
        let names: Vec<String> = (0..ws.len()).map(|i| format!("w{i}")).collect();
        let tight: Vec<LpMember<'_>> = ws.iter().zip(&names)
            .map(|((c, slo), name)| LpMember { name, curves: c, slo_s: *slo, budget_s: *slo }).collect();
        let loose: Vec<LpMember<'_>> = tight.iter()
            .map(|m| LpMember { budget_s: m.budget_s * k, slo_s: m.slo_s * k, ..*m }).collect();
        if optimise(&tight).unwrap().is_some() {
            prop_assert!(optimise(&loose).unwrap().is_some());
        }
    }
}
