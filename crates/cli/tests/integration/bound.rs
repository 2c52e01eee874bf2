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

/// An SNC-Meister topology of two clients on production traces, in a temporary folder.
fn topology(dir: &std::path::Path) -> std::path::PathBuf {
    let trace = |name: &str| tailbound_testdata::production_dir().join(name);
    let client = |slo: f64, t: &str, c: &str| {
        serde_json::json!({
            "SLO": slo, "SLOpercentile": 99.9, "trace": trace(t),
            "clientHost": c, "clientVM": "1", "serverHost": "s", "serverVM": "1"
        })
    };
    let path = dir.join("topology.json");
    let text = serde_json::json!({
        "clients": [client(0.05, "trace0000.csv", "a"), client(0.02, "trace0004.csv", "b")]
    });
    std::fs::write(&path, text.to_string()).unwrap();
    path
}

#[test]
fn an_operators_topology_is_characterized_on_the_whole_trace_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let path = topology(dir.path());
    let p = path.to_str().unwrap();
    let bounds = |extra: &[&str]| -> Vec<Option<f64>> {
        let mut args = vec!["bound", p, "--json"];
        args.extend_from_slice(extra);
        let out = tailbound(&args);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{}",
            stderr(&out)
        );
        let r: BoundReport = serde_json::from_slice(&out.stdout).unwrap();
        r.tenants.iter().map(|t| t.bound_s).collect()
    };
    let default = bounds(&[]);
    assert_eq!(default, bounds(&["--characterize", "whole"]));
    let half = bounds(&["--characterize", "first-half"]);
    assert_eq!(half.len(), 2);
    assert_ne!(
        default, half,
        "the first half is a different characterization"
    );
    // the second half characterizes nothing an operator runs: a clear error, exit 2
    let out = tailbound(&["bound", p, "--characterize", "second-half"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("expected whole or first-half"));
}
