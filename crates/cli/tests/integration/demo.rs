use crate::common::json;
use tailbound_cli::report::DemoReport;

#[test]
fn demo_characterizes_every_tenant_at_every_stage_deterministically() {
    let a: DemoReport = json(&["demo", "--duration", "40s", "--json"]);
    let b: DemoReport = json(&["demo", "--duration", "40s", "--json"]);
    assert_eq!(a, b, "the demo is seeded");
    assert!(a.tenants.len() >= 4);
    for t in &a.tenants {
        assert_eq!(t.stages.len(), 3, "{}", t.name);
        for s in &t.stages {
            let mean = s.mean_rate.expect("demo tenants span time");
            assert!(s.effective_bw.is_finite() && s.effective_bw >= mean * 0.999);
            assert!(s.burst > 0.0 && s.arrival_pieces >= 1 && s.mmpp_states >= 1);
        }
    }
    let c: DemoReport = json(&["demo", "--duration", "40s", "--seed", "2", "--json"]);
    assert_ne!(a, c);
}
