use crate::common::json;
use tailbound_experiments::demo::DemoReport;

#[test]
fn demo_characterizes_and_bounds_every_tenant_deterministically() {
    let a: DemoReport = json(&["demo", "--json"]);
    let b: DemoReport = json(&["demo", "--json"]);
    assert_eq!(a, b, "the demo is seeded");
    assert_eq!(a.tenants.len(), 6);
    for t in &a.tenants {
        assert!(t.flows.len() >= 2, "{}", t.name);
        for f in &t.flows {
            let mean = f.mean_rate.expect("demo flows span time");
            assert!(f.effective_bw.is_finite() && f.effective_bw >= mean * 0.999);
            assert!(f.burst > 0.0 && !f.rb.is_empty() && f.mmpp_states >= 1);
        }
        let snc = t.bound_s["snc-meister"].expect("every demo tenant is bounded");
        let dnc = t.bound_s["dnc"].expect("every demo tenant is bounded");
        assert_eq!(t.meets_slo["snc-meister"], snc <= t.slo_s, "{}", t.name);
        assert_eq!(t.meets_slo["dnc"], dnc <= t.slo_s, "{}", t.name);
    }
    // Bursty key-value tenants are where the stochastic bound pays off (snc-meister §6).
    let kv = a.tenants.iter().find(|t| t.name == "kv-bursty").unwrap();
    assert!(kv.bound_s["snc-meister"].unwrap() < kv.bound_s["dnc"].unwrap());
}

#[test]
fn demo_prints_its_scenario() {
    let out = crate::common::tailbound(&["demo", "--print-scenario"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("[[tenants]]"));
}
