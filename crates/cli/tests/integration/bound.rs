use crate::common::{json, stderr, tailbound};
use tailbound_cli::report::BoundReport;

fn config() -> String {
    tailbound_testdata::reference_dir()
        .join("snc-meister/sample_config.txt")
        .display()
        .to_string()
}

/// The original SNC-Calculator's tenant totals for sample_config.txt [s]
/// (golden_SNC-Calculator_output.txt).
const GOLDEN: [(&str, f64); 4] = [
    ("C0", 0.0394871),
    ("C1", 0.0251546),
    ("C2", 0.0145948),
    ("C3", 0.00730434),
];

#[test]
fn sample_config_reproduces_the_original_within_one_percent() {
    for theta in ["grid", "brent"] {
        let r: BoundReport = json(&["bound", &config(), "--theta", theta, "--json"]);
        assert_eq!(r.method, "snc-meister");
        assert_eq!(r.tenants.len(), 4);
        for (name, golden) in GOLDEN {
            let t = r.tenants.iter().find(|t| t.name == name).unwrap();
            let ours = t.bound_s.expect("bounded");
            match theta {
                // the faithful sweep reproduces the original
                "grid" => assert!(
                    (ours - golden).abs() <= 0.01 * golden,
                    "{name}: ours {ours} vs golden {golden}"
                ),
                // a better θ search may only tighten it
                _ => assert!(
                    ours <= golden * 1.01,
                    "{name}: ours {ours} vs golden {golden}"
                ),
            }
            assert!(t.meets_slo, "{name} meets its SLO in the original");
            assert_eq!(t.flows.len(), 2);
            assert!((t.flows[0].epsilon - (100.0 - t.percentile) / 200.0).abs() < 1e-12);
        }
    }
}

#[test]
fn dnc_needs_arrival_curves() {
    let out = tailbound(&["bound", &config(), "--method", "dnc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("arrival curve"), "{}", stderr(&out));
}

#[test]
fn a_tight_percentile_override_can_fail_the_check() {
    // At p99.99999 the tightest tenant (10 ms) no longer meets its SLO: exit code 1.
    let out = tailbound(&["bound", &config(), "--percentile", "99.99999"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("NO"), "{table}");
}
