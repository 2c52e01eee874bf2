//! `tailbound experiment vdc capacity --testbed`: a short run (phases of 2.5 s), as JSON.
//! Asserts what the code decides: the controller starts at the declared capacity, its
//! estimate, driven only by the proxy's reports, moves from there toward the capacity measured
//! without enforcement (here about 2.7× the declared one), and a probe above what the store
//! can serve comes down again — not how close it ends or how fast, which depends on how busy
//! the machine is (`converged` is reported, not asserted). Root, iproute2 and memcached are
//! needed; without them the test says "skipped", except under `CI=true`, where that is a
//! failure.

use crate::common::{stderr, tailbound};
use tailbound_experiments::vdc_testbed_capacity::{CapacityTestbedExperiment, INITIAL_CAPACITY};

#[test]
fn the_capacity_estimate_moves_from_the_declared_value_toward_the_measured_one() {
    if !tailbound_testdata::root_or_skip("the VDC capacity testbed experiment (network namespaces)")
    {
        return;
    }
    let out = tailbound(&[
        "experiment",
        "vdc",
        "capacity",
        "--testbed",
        "--duration",
        "2500ms",
        "--interval",
        "250ms",
        "--calibrate",
        "1s",
        "--json",
    ]);
    // 0 or 1 (not within 25% at the end on a busy machine), never an error
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "tailbound.experiment-vdc-capacity-testbed/1");
    let r: CapacityTestbedExperiment = serde_json::from_value(v).unwrap();
    assert_eq!(out.status.code() == Some(0), r.converged);
    // the store is declared at 0.35 of its 4 MB/s link; the link bounds what it serves
    assert_eq!(r.initial_estimate, INITIAL_CAPACITY * 4e6);
    assert!(
        r.measured_capacity > 1.5 * r.initial_estimate && r.measured_capacity < 4.4e6,
        "{}",
        r.measured_capacity
    );
    assert_eq!(r.testbed.series.len(), 30, "7.5 s in bins of 250 ms");
    let names: Vec<&str> = r.testbed.tenants.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(names, ["D", "C", "B"]);
    assert_eq!(r.testbed.phases.len(), 3);
    assert!(r.steps >= 10, "{} controller steps", r.steps);
    // the estimate rose off the declared value and came closer to the measured capacity
    let m = r.measured_capacity;
    let estimates: Vec<f64> = r.testbed.series.iter().map(|p| p.estimate).collect();
    assert!(
        estimates.iter().any(|&e| e > 1.2 * r.initial_estimate),
        "{estimates:?}"
    );
    let closest = estimates
        .iter()
        .map(|e| (e - m).abs())
        .fold(f64::INFINITY, f64::min);
    assert!(
        closest < (r.initial_estimate - m).abs(),
        "{estimates:?} vs {m}"
    );
    // a probe above the link rate cannot be served: the store's queue (behind the proxy)
    // shows in the proxy's outstanding tokens and the estimate comes down again (before the
    // store sat behind the proxy's own shaped link, it rose to 1.7x the capacity and stayed)
    let link = 4e6;
    if let Some(first) = estimates[..estimates.len() - 4]
        .iter()
        .position(|&e| e > link)
    {
        assert!(
            estimates[first..].iter().any(|&e| e < link),
            "the estimate went above the {link} tokens/s link and never came back: {estimates:?}"
        );
    }
    // tenants start one per phase: C completes nothing in D's phase
    assert!(r.testbed.series[..9].iter().all(|p| p.throughput[1] == 0.0));
    assert!(r.testbed.series[12..].iter().any(|p| p.throughput[1] > 0.0));
    let sim = r.simulated.expect("the simulator ran");
    assert_eq!(sim.phases.len(), 3);
}
