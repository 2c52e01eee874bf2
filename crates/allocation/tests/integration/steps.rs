//! The two allocation steps on random datacenters: fixed tenants get exactly their VDC,
//! minimum tenants at least it, nothing exceeds a physical capacity or a maximum, and every
//! flow below its demand is held by a full virtual resource of its VDC (the guarantee is met).

use proptest::prelude::*;
use tailbound_allocation::vdc::{
    ApplianceSpec, FlowSpec, GuaranteeKind, ServerSpec, TenantSpec, VirtualApplianceSpec, VmSpec,
};
use tailbound_allocation::{allocate_vdc, Datacenter, Mechanism, VdcSpec};

#[derive(Debug, Clone)]
struct Case {
    dc: Datacenter,
    demand: Vec<Vec<f64>>,
}

/// 3 servers of 1000 tokens/s, one appliance of 1000 on s0; tenants with 1–3 VMs whose
/// guarantees add up to at most the physical capacities (admission's promise).
fn case() -> impl Strategy<Value = Case> {
    let tenant = (
        prop::bool::ANY,
        prop::collection::vec(
            (0usize..3, 10.0f64..150.0, prop::option::of(1.0f64..3.0)),
            1..4,
        ),
        10.0f64..200.0,
        prop::collection::vec((0usize..3, 0usize..4, prop::bool::ANY), 1..5),
    );
    (
        prop::collection::vec(tenant, 1..5),
        prop::collection::vec(0.0f64..400.0, 64),
    )
        .prop_map(|(tenants, demands)| {
            let mut spec = VdcSpec {
                header_bytes: 0.0,
                servers: (0..3)
                    .map(|s| ServerSpec {
                        name: format!("s{s}"),
                        link: 1000.0,
                    })
                    .collect(),
                appliances: vec![ApplianceSpec {
                    name: "app".into(),
                    server: Some("s0".into()),
                    capacity: 1000.0,
                    max_capacity: None,
                    estimate: false,
                    cost: None,
                }],
                tenants: Vec::new(),
            };
            for (t, (fixed, vms, app, flows)) in tenants.iter().enumerate() {
                let vm_specs: Vec<VmSpec> = vms
                    .iter()
                    .enumerate()
                    .map(|(k, &(s, g, max))| VmSpec {
                        name: format!("v{k}"),
                        server: format!("s{s}"),
                        link: g,
                        link_max: max.map(|m| m * g),
                    })
                    .collect();
                let flow_specs: Vec<FlowSpec> = flows
                    .iter()
                    .enumerate()
                    .map(|(k, &(src, dst, to_app))| FlowSpec {
                        name: format!("f{k}"),
                        src: format!("v{}", src % vms.len()),
                        dst: if to_app {
                            "app".into()
                        } else {
                            format!("v{}", dst % vms.len())
                        },
                        via: vec![],
                        weight: 1.0,
                    })
                    .collect();
                spec.tenants.push(TenantSpec {
                    name: format!("t{t}"),
                    guarantee: if *fixed {
                        GuaranteeKind::Fixed
                    } else {
                        GuaranteeKind::Minimum
                    },
                    mra: Mechanism::Drf,
                    weight: None,
                    vms: vm_specs,
                    appliances: vec![VirtualApplianceSpec {
                        name: "app".into(),
                        appliance: "app".into(),
                        guarantee: *app,
                        max: None,
                    }],
                    flows: flow_specs,
                });
            }
            // scale the guarantees so that every physical resource can carry them all
            let dc = spec.compile().expect("valid spec");
            let mut need = vec![0.0; dc.resources.len()];
            for t in &dc.tenants {
                let mut seen = vec![false; dc.resources.len()];
                for &i in &t.flows {
                    for h in &dc.flows[i].hops {
                        if let (Some(j), Some(v)) = (h.physical, h.virtual_resource) {
                            if !seen[j] {
                                need[j] += t.virtuals[v].guarantee;
                                seen[j] = true;
                            }
                        }
                    }
                }
            }
            // the appliance server's links carry appliance traffic of every VM link too
            let worst = need.iter().cloned().fold(0.0, f64::max) * 3.0;
            if worst > 1000.0 {
                let k = 1000.0 / worst;
                for t in &mut spec.tenants {
                    for v in &mut t.vms {
                        v.link *= k;
                        v.link_max = v.link_max.map(|m| m * k);
                    }
                    for a in &mut t.appliances {
                        a.guarantee *= k;
                    }
                }
            }
            let dc = spec.compile().expect("valid spec");
            let mut it = demands.iter().cycle();
            let demand = dc
                .flows
                .iter()
                .map(|f| {
                    let d = *it.next().unwrap_or(&1.0);
                    f.hops.iter().map(|_| d).collect()
                })
                .collect();
            Case { dc, demand }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn guarantees_hold_and_nothing_overflows(c in case(), global in prop::sample::select(Mechanism::ALL.to_vec())) {
        let dc = &c.dc;
        let cap: Vec<f64> = dc.resources.iter().map(|r| r.capacity).collect();
        let a = allocate_vdc(dc, &c.demand, &cap, global).unwrap();
        // guarantees fit by construction, so nothing is overcommitted
        prop_assert!(a.overcommitted.is_empty(), "{:?}", a.overcommitted);
        let mut used = vec![0.0; dc.resources.len()];
        for (i, f) in dc.flows.iter().enumerate() {
            let t = &dc.tenants[f.tenant];
            prop_assert!(a.fraction[i] >= a.local[i] - 1e-12 && a.fraction[i] <= 1.0 + 1e-12);
            if t.guarantee == GuaranteeKind::Fixed {
                prop_assert_eq!(a.fraction[i], a.local[i]);
            }
            for (h, hop) in f.hops.iter().enumerate() {
                prop_assert!(a.rates[i][h] <= c.demand[i][h] * (1.0 + 1e-12));
                if let Some(j) = hop.physical {
                    used[j] += a.rates[i][h];
                }
            }
        }
        for (j, u) in used.iter().enumerate() {
            prop_assert!(*u <= cap[j] * (1.0 + 1e-9) + 1e-9, "{} uses {} > {}", dc.resources[j].name, u, cap[j]);
        }
        // per tenant: local use of each virtual resource within its guarantee, the total within
        // its maximum, and every flow short of its demand held by a full virtual resource
        for t in &dc.tenants {
            let mut local = vec![0.0; t.virtuals.len()];
            let mut total = vec![0.0; t.virtuals.len()];
            for &i in &t.flows {
                for (h, hop) in dc.flows[i].hops.iter().enumerate() {
                    if let Some(v) = hop.virtual_resource {
                        local[v] += a.local_rates[i][h];
                        total[v] += a.rates[i][h];
                    }
                }
            }
            for (v, vr) in t.virtuals.iter().enumerate() {
                prop_assert!(local[v] <= vr.guarantee * (1.0 + 1e-9) + 1e-9);
                if let Some(m) = vr.max {
                    prop_assert!(total[v] <= m * (1.0 + 1e-9) + 1e-9, "{} max {} used {}", vr.name, m, total[v]);
                }
            }
            for &i in &t.flows {
                if a.local[i] < 1.0 - 1e-9 {
                    let held = dc.flows[i].hops.iter().any(|h| {
                        h.virtual_resource.is_some_and(|v| local[v] >= t.virtuals[v].guarantee * (1.0 - 1e-7))
                    });
                    prop_assert!(held, "flow {} of {} gets {} of its demand with VDC room left", dc.flows[i].name, t.name, a.local[i]);
                }
            }
        }
    }
}

/// Spare capacity goes to minimum tenants only, in proportion to their weights (H-DRF).
#[test]
fn spare_capacity_follows_weights_and_skips_fixed_tenants() {
    let spec = r#"
header_bytes = 0
[[servers]]
name = "s0"
link = 1e9
[[appliances]]
name = "kv"
capacity = 1200
estimate = false
[[tenants]]
name = "A"
weight = 2
vms = [{ name = "a", server = "s0", link = 1e6 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 200 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
[[tenants]]
name = "B"
weight = 1
vms = [{ name = "b", server = "s0", link = 1e6 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 100 }]
flows = [{ name = "b-kv", src = "b", dst = "kv" }]
[[tenants]]
name = "C"
guarantee = "fixed"
vms = [{ name = "c", server = "s0", link = 1e6 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 300 }]
flows = [{ name = "c-kv", src = "c", dst = "kv" }]
"#;
    let (_, dc) = VdcSpec::parse("spare.toml", spec).unwrap();
    // every flow wants 10000 tokens/s of the appliance (hops: vm.up, kv, vm.down)
    let demand: Vec<Vec<f64>> = dc.flows.iter().map(|f| vec![10.0; f.hops.len()]).collect();
    let demand: Vec<Vec<f64>> = demand
        .into_iter()
        .map(|mut d| {
            d[1] = 10_000.0;
            d
        })
        .collect();
    let cap: Vec<f64> = dc.resources.iter().map(|r| r.capacity).collect();
    let a = allocate_vdc(&dc, &demand, &cap, Mechanism::Hdrf).unwrap();
    let kv: Vec<f64> = a.rates.iter().map(|r| r[1]).collect();
    // C: exactly 300; the spare 600 splits 2:1 on top of 200 and 100
    assert!((kv[2] - 300.0).abs() < 1e-6, "{kv:?}");
    assert!((kv[0] - 600.0).abs() < 1e-6, "{kv:?}");
    assert!((kv[1] - 300.0).abs() < 1e-6, "{kv:?}");
}

/// The bundled example spec parses and allocates.
#[test]
fn example_spec_compiles() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/vdc.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let (_, dc) = VdcSpec::parse("vdc.toml", &text).unwrap();
    assert_eq!(dc.tenants.len(), 2);
    assert_eq!(dc.flows.len(), 4);
    let demand: Vec<Vec<f64>> = dc.flows.iter().map(|f| vec![1e8; f.hops.len()]).collect();
    let cap: Vec<f64> = dc.resources.iter().map(|r| r.capacity).collect();
    let a = allocate_vdc(&dc, &demand, &cap, Mechanism::Hdrf).unwrap();
    assert!(a.overcommitted.is_empty());
    assert!(a.fraction.iter().all(|&x| (0.0..=1.0).contains(&x)));
}
