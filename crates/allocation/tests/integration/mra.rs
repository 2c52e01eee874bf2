//! Property tests of the three mechanisms on random instances (issue 7's acceptance): never
//! above demand or capacity, proportional to each flow's bundle, DRF's bottleneck condition,
//! and H-DRF = DRF when every tenant has one flow.

use proptest::prelude::*;
use tailbound_allocation::{Allocation, Mechanism, Mra, Problem};

const TOL: f64 = 1e-9;

#[derive(Debug, Clone)]
struct Instance {
    capacity: Vec<f64>,
    tenant_weights: Vec<f64>,
    /// (tenant, weight, demand per resource; 0 = not on the path)
    flows: Vec<(usize, f64, Vec<f64>)>,
}

impl Instance {
    fn problem(&self) -> Problem {
        let mut p = Problem::new(self.capacity.clone()).unwrap();
        for &w in &self.tenant_weights {
            p.add_tenant(w).unwrap();
        }
        for (t, w, d) in &self.flows {
            let bundle: Vec<(usize, f64)> = d.iter().copied().enumerate().collect();
            p.add_flow(*t, *w, &bundle).unwrap();
        }
        p
    }
}

fn instance() -> impl Strategy<Value = Instance> {
    (1usize..7, 1usize..5).prop_flat_map(|(n, nt)| {
        let cap = prop::collection::vec(prop_oneof![1 => Just(0.0), 8 => 1.0f64..100.0], n);
        let tw = prop::collection::vec(0.5f64..4.0, nt);
        let flow = (
            0..nt,
            prop_oneof![3 => Just(1.0), 1 => 0.25f64..4.0],
            prop::collection::vec(prop_oneof![2 => Just(0.0), 3 => 0.1f64..80.0], n),
        );
        let flows = prop::collection::vec(flow, 1..16);
        (cap, tw, flows).prop_map(|(capacity, tenant_weights, flows)| Instance {
            capacity,
            tenant_weights,
            flows,
        })
    })
}

/// x within [0, 1] (≤ demand, proportional by construction) and Σ ≤ C.
fn feasible(p: &Problem, a: &Allocation) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.fraction.len(), p.flows());
    for &x in &a.fraction {
        prop_assert!(x.is_finite() && (0.0..=1.0).contains(&x), "fraction {}", x);
    }
    for (j, (u, c)) in a.usage(p).iter().zip(p.capacity()).enumerate() {
        prop_assert!(
            *u <= c * (1.0 + TOL) + 1e-12,
            "resource {} used {} > {}",
            j,
            u,
            c
        );
    }
    Ok(())
}

/// Every flow below its demand crosses a saturated resource (nothing is wasted).
fn non_wasteful(p: &Problem, a: &Allocation) -> Result<(), TestCaseError> {
    let sat = a.saturated(p, 1e-7);
    for i in 0..p.flows() {
        if a.fraction[i] < 1.0 - 1e-9 {
            prop_assert!(
                p.demand(i).any(|(j, _)| sat[j]),
                "flow {} at {} crosses no saturated resource",
                i,
                a.fraction[i]
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn every_mechanism_is_feasible_and_non_wasteful(inst in instance()) {
        let p = inst.problem();
        for m in Mechanism::ALL {
            let a = m.allocate(&p);
            feasible(&p, &a)?;
            non_wasteful(&p, &a)?;
        }
    }

    /// DRF's bottleneck condition: every flow below its demand crosses a saturated resource on
    /// which no flow has a larger weighted dominant share `x_i·δ_i/w_i`.
    #[test]
    fn drf_bottleneck_condition(inst in instance()) {
        let p = inst.problem();
        let a = Mechanism::Drf.allocate(&p);
        let sat = a.saturated(&p, 1e-7);
        let share = |i: usize| match p.dominant_demand(i) {
            Some(d) => a.fraction[i] * d / p.weight(i),
            None => 0.0,
        };
        for i in 0..p.flows() {
            if a.fraction[i] >= 1.0 - 1e-9 {
                continue;
            }
            let si = share(i);
            let ok = p.demand(i).any(|(j, _)| {
                sat[j]
                    && (0..p.flows()).all(|k| {
                        !p.demand(k).any(|(jj, _)| jj == j) || share(k) <= si * (1.0 + 1e-7) + 1e-12
                    })
            });
            prop_assert!(ok, "flow {} (share {}) has no bottleneck: {:?}", i, si, a);
        }
    }

    /// With one flow per tenant (tenant weight = flow weight), H-DRF is weighted DRF.
    #[test]
    fn hdrf_with_singleton_tenants_is_drf(inst in instance()) {
        let mut p = Problem::new(inst.capacity.clone()).unwrap();
        for (_, w, d) in &inst.flows {
            let t = p.add_tenant(*w).unwrap();
            let bundle: Vec<(usize, f64)> = d.iter().copied().enumerate().collect();
            p.add_flow(t, 1.0, &bundle).unwrap();
        }
        let mut q = Problem::new(inst.capacity.clone()).unwrap();
        let t = q.add_tenant(1.0).unwrap();
        for (_, w, d) in &inst.flows {
            let bundle: Vec<(usize, f64)> = d.iter().copied().enumerate().collect();
            q.add_flow(t, *w, &bundle).unwrap();
        }
        let h = Mechanism::Hdrf.allocate(&p);
        let d = Mechanism::Drf.allocate(&q);
        for (x, y) in h.fraction.iter().zip(&d.fraction) {
            prop_assert!((x - y).abs() <= 1e-7, "hdrf {:?} vs drf {:?}", h.fraction, d.fraction);
        }
    }

    /// H-DRF: tenants whose flows all still want more and share one saturated resource get
    /// tenant shares in proportion to their weights there... at least: scaling every tenant
    /// weight by the same factor changes nothing.
    #[test]
    fn hdrf_is_invariant_to_scaling_weights(inst in instance(), k in 0.1f64..10.0) {
        let p = inst.problem();
        let mut scaled = inst.clone();
        for w in &mut scaled.tenant_weights {
            *w *= k;
        }
        let a = Mechanism::Hdrf.allocate(&p);
        let b = Mechanism::Hdrf.allocate(&scaled.problem());
        for (x, y) in a.fraction.iter().zip(&b.fraction) {
            prop_assert!((x - y).abs() <= 1e-7);
        }
    }
}

/// Two tenants with equal weights and equal single-resource demand on one link: H-DRF gives
/// each half whatever their flow counts; DRF gives each flow the same.
#[test]
fn hdrf_equal_tenants_split_a_link_in_half() {
    let mut p = Problem::new(vec![100.0]).unwrap();
    let a = p.add_tenant(1.0).unwrap();
    let b = p.add_tenant(1.0).unwrap();
    for _ in 0..4 {
        p.add_flow(a, 1.0, &[(0, 1000.0)]).unwrap();
    }
    p.add_flow(b, 1.0, &[(0, 1000.0)]).unwrap();
    let h = Mechanism::Hdrf.allocate(&p);
    let ta: f64 = (0..4).map(|i| h.fraction[i] * 1000.0).sum();
    assert!((ta - 50.0).abs() < 1e-9 && (h.fraction[4] * 1000.0 - 50.0).abs() < 1e-9);
    let d = Mechanism::Drf.allocate(&p);
    assert!((d.fraction[4] * 1000.0 - 20.0).abs() < 1e-9);
}
