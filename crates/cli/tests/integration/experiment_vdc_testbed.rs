//! `tailbound experiment vdc enforcement --testbed`: a short run of two modes on one seed, as
//! JSON. Asserts what the code decides (the modes and tenants in order, the controller's
//! allocation reaching the proxies under `pulsar`, no proxy under `none`), not throughput,
//! which depends on how busy the machine is. Root, iproute2 and memcached are needed; without
//! them the test says "skipped", except under `CI=true`, where that is a failure.

use crate::common::{stderr, tailbound};
use tailbound_experiments::vdc_testbed::{Isolation, VdcTestbedExperiment};

#[test]
fn a_short_testbed_run_reaches_the_proxies_with_the_controllers_allocation() {
    if !tailbound_testdata::root_or_skip("the VDC testbed experiment (network namespaces)") {
        return;
    }
    let out = tailbound(&[
        "experiment",
        "vdc",
        "enforcement",
        "--testbed",
        "--seeds",
        "7",
        "--modes",
        "pulsar,none",
        "--duration",
        "1s",
        "--warmup",
        "1s",
        "--interval",
        "250ms",
        "--json",
    ]);
    // 0 or 1 (a guarantee missed on a busy machine), never an error
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["format"],
        "tailbound.experiment-vdc-enforcement-testbed/1"
    );
    for field in ["guarantee", "achieved", "guarantee_met"] {
        assert!(
            v["runs"][0]["modes"][0]["tenants"][0].get(field).is_some(),
            "{field}"
        );
    }
    let r: VdcTestbedExperiment = serde_json::from_value(v).unwrap();
    assert_eq!(out.status.code() == Some(0), r.pulsar_held);
    assert_eq!(r.runs.len(), 1);
    assert_eq!(r.runs[0].seed, 7);
    let modes: Vec<Isolation> = r.runs[0].modes.iter().map(|m| m.mode).collect();
    assert_eq!(modes, [Isolation::Pulsar, Isolation::None]);
    let (pulsar, none) = (&r.runs[0].modes[0], &r.runs[0].modes[1]);
    for m in [pulsar, none] {
        let names: Vec<&str> = m.tenants.iter().map(|t| t.tenant.as_str()).collect();
        assert_eq!(names, ["A", "B", "C", "D"]);
        assert_eq!(m.series.len(), 8, "2 s in bins of 250 ms");
        for t in &m.tenants {
            assert!(t.guarantee > 0.0 && t.achieved.is_finite());
            assert_eq!(t.guarantee_met, t.achieved >= 0.95 * t.guarantee);
        }
    }
    // the controller stepped on the proxies' reports, and its allocation reached them: every
    // flow's buckets moved off the 1e5 tokens/s a new flow starts with
    assert!(pulsar.epoch.is_some_and(|e| e >= 2), "{:?}", pulsar.epoch);
    for t in &pulsar.tenants {
        assert!(!t.rates.is_empty(), "tenant {}", t.tenant);
        assert!(
            t.rates.iter().any(|&r| r > 1e5),
            "tenant {}: {:?}",
            t.tenant,
            t.rates
        );
    }
    // no proxy, no controller without isolation
    assert_eq!(none.epoch, None);
    assert!(none.tenants.iter().all(|t| t.rates.is_empty()));
    // the simulator's run of the same datacenter, beside
    let sim = r.simulated.expect("the simulator ran");
    assert_eq!(sim.modes.len(), 2);
}
