//! `tailbound alloc` and `tailbound experiment vdc`.

use crate::common::{json, stderr, tailbound};
use tailbound_allocation::input::AllocOutput;
use tailbound_cli::cmd::alloc::AllocBenchReport;
use tailbound_experiments::vdc::{CapacityExperiment, EnforcementExperiment};

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../allocation/examples/alloc.json"
);

#[test]
fn alloc_input_with_each_mechanism() {
    for mra in ["drf", "hdrf", "first-fit"] {
        let out: AllocOutput = json(&["alloc", EXAMPLE, "--mra", mra, "--json"]);
        assert_eq!(out.allocations.len(), 3);
        // kv (600) is never over-allocated, and nobody gets more than asked
        let kv: f64 = out
            .allocations
            .iter()
            .filter_map(|a| a.alloc.get("kv"))
            .sum();
        assert!(kv <= 600.0 + 1e-6, "{mra}: {out:?}");
        assert!(out.allocations[0].alloc["s0.up"] <= 800.0 + 1e-9);
    }
    let same: AllocOutput = json(&["alloc", "run", EXAMPLE, "--mra", "drf", "--json"]);
    let first: AllocOutput = json(&["alloc", EXAMPLE, "--json"]);
    assert_eq!(same, first);
}

#[test]
fn alloc_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"resources": [{"name": "l", "capacity": -1}], "flows": []}"#,
    )
    .unwrap();
    let out = tailbound(&["alloc", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("bad.json") && e.contains("-1"), "{e}");
}

#[test]
fn alloc_bench_reports_sizes_and_time() {
    let r: AllocBenchReport = json(&[
        "alloc",
        "bench",
        "--vms",
        "1200",
        "--servers",
        "100",
        "--appliances",
        "10",
        "--active",
        "0.5",
        "--mra",
        "hdrf",
        "--runs",
        "3",
        "--json",
    ]);
    assert_eq!((r.vms, r.resources, r.flows), (1200, 210, 1200));
    assert!(r.seconds > 0.0 && r.min_seconds <= r.seconds && r.seconds <= r.max_seconds);
}

#[test]
fn vdc_enforcement_writes_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (out, svg) = (dir.path().join("fig12.json"), dir.path().join("fig12.svg"));
    let res = tailbound(&[
        "experiment",
        "vdc",
        "enforcement",
        "--duration",
        "18",
        "--modes",
        "pulsar,none",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    // Pulsar meets every guarantee: exit 0
    assert_eq!(res.status.code(), Some(0), "{}", stderr(&res));
    let exp: EnforcementExperiment = serde_json::from_slice(&res.stdout).unwrap();
    assert_eq!(exp.modes.len(), 2);
    assert!(exp.modes.iter().all(|m| m.tenants.len() == 4));
    assert!(exp.modes[0].all_met, "{:?}", exp.modes[0].tenants);
    // without isolation the aggressive tenants push B below its guarantee (Fig. 12, right)
    assert!(
        !exp.modes[1].tenants[1].met,
        "{:?}",
        exp.modes[1].tenants[1]
    );
    let written: EnforcementExperiment =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(written, exp);
    assert!(std::fs::read_to_string(svg).unwrap().contains("Fig. 12"));
}

#[test]
fn vdc_capacity_converges_and_writes_json_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (out, svg) = (dir.path().join("fig14.json"), dir.path().join("fig14.svg"));
    let res = tailbound(&[
        "experiment",
        "vdc",
        "capacity",
        "--json",
        "--out",
        out.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(res.status.code(), Some(0), "{}", stderr(&res));
    let exp: CapacityExperiment = serde_json::from_slice(&res.stdout).unwrap();
    assert_eq!(exp.phases.len(), 3);
    for p in &exp.phases {
        assert!(p.settle_intervals.is_some_and(|s| s <= 15), "{p:?}");
        assert!(p.guarantees_met && p.ratio_spread <= 1.25, "{p:?}");
    }
    // one point per control interval over the three 40 s phases
    assert_eq!(exp.series.len(), 120);
    let written: CapacityExperiment =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(written, exp);
    assert!(std::fs::read_to_string(svg).unwrap().contains("Fig. 14"));
}
