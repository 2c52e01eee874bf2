//! The controller loop on scripted reports: it runs once per interval, caps allocations at
//! the estimated demand, and probes an appliance's capacity upward while it is not congested.

use tailbound_allocation::{Controller, ControllerConfig, FlowReport, VdcSpec};
use tailbound_shaping::estimate::Phase;

const SPEC: &str = r#"
header_bytes = 0
[[servers]]
name = "s0"
link = 1e9
[[appliances]]
name = "kv"
capacity = 1000
max_capacity = 9000
[[tenants]]
name = "A"
vms = [{ name = "a", server = "s0", link = 1e6 }]
appliances = [{ name = "kv", appliance = "kv", guarantee = 500 }]
flows = [{ name = "a-kv", src = "a", dst = "kv" }]
"#;

const S: u64 = 1_000_000_000;

fn report(kv: f64, backlog: f64) -> FlowReport {
    FlowReport {
        utilization: vec![kv, kv, kv],
        backlog: vec![backlog; 3],
        queueing: vec![0.0; 3],
        outstanding: vec![1.0; 3],
        completed: vec![kv, kv, kv],
        samples: Vec::new(),
    }
}

#[test]
fn runs_each_interval_and_probes_capacity() {
    let (_, dc) = VdcSpec::parse("c.toml", SPEC).unwrap();
    let cfg = ControllerConfig {
        capacity: tailbound_shaping::CapacityConfig {
            confirm: 1,
            ..ControllerConfig::default().capacity
        },
        demand_gain: 1.0,
        ..ControllerConfig::default()
    };
    let mut c = Controller::new(dc, cfg, 0).unwrap();
    let first = c.poll(0).unwrap().expect("due at 0");
    assert_eq!(first.allocation.rates[0], vec![0.0; 3]);
    assert!(c.poll(S / 2).unwrap().is_none());
    assert_eq!(c.next_run_ns(), S);
    // an open-loop flow with a large backlog: demand = u + b
    c.report(0, report(1000.0, 1e5)).unwrap();
    let out = c.poll(S).unwrap().unwrap();
    // loaded to the estimate without congestion: binary search to the middle of [1000, 9000]
    assert_eq!(out.capacity[2], 5000.0);
    assert_eq!(out.phase[2], Some(Phase::Increase));
    // alone on the appliance, the flow gets its capacity, not more
    assert!((out.allocation.rates[0][1] - 5000.0).abs() < 1e-6);
    // congestion: served 3000 of 5000 offered while 100× the tokens stayed outstanding
    // (33 ms per token instead of 1 ms: the appliance queues) → revert
    let mut r = report(5000.0, 1e5);
    r.completed = vec![3000.0; 3];
    r.outstanding = vec![100.0; 3];
    c.report(0, r).unwrap();
    let out = c.poll(2 * S).unwrap().unwrap();
    assert_eq!(out.capacity[2], 1000.0);
    assert_eq!(out.phase[2], Some(Phase::Revert));
    // a report with the wrong number of hops is refused
    assert!(c.report(0, FlowReport::default()).is_err());
}

/// Three consistent readings are counted over the enforcers' sub-interval samples, so an
/// over-estimate is reverted after the interval in which it showed, not three intervals later
/// (pulsar §4.3: "the appliance does not receive an overloading workload for more than one
/// control interval"); a shortfall without queueing is the flow's demand and changes nothing.
#[test]
fn samples_confirm_congestion_within_one_interval() {
    use tailbound_allocation::FlowSample;
    let (_, dc) = VdcSpec::parse("c.toml", SPEC).unwrap();
    let mut c = Controller::new(dc, ControllerConfig::default(), 0).unwrap();
    c.poll(0).unwrap();
    // tokens per 0.1 s sample: served `kv` while `o` tokens were outstanding on average
    let sampled = |parts: &[(f64, f64)]| {
        let mut r = report(0.0, 1e5);
        r.samples = parts
            .iter()
            .map(|&(kv, o)| FlowSample {
                utilization: vec![kv; 3],
                outstanding: vec![o; 3],
                completed: vec![kv; 3],
            })
            .collect();
        let total: f64 = parts.iter().map(|p| p.0).sum();
        r.utilization = vec![total; 3];
        r.completed = vec![total; 3];
        r
    };
    // served the 1000 tokens/s estimate with 0.1 tokens outstanding (0.1 ms): increase
    c.report(0, sampled(&[(100.0, 0.1); 10])).unwrap();
    let out = c.poll(S).unwrap().unwrap();
    assert_eq!(out.capacity[2], 5000.0);
    // demand-limited: 300 tokens/s with no queueing
    c.report(0, sampled(&[(30.0, 0.03); 10])).unwrap();
    let out = c.poll(2 * S).unwrap().unwrap();
    assert_eq!(
        (out.capacity[2], out.phase[2]),
        (5000.0, Some(Phase::Increase))
    );
    // the last three samples queue (50 ms per token): reverted at once
    let mut parts = vec![(450.0, 0.45); 7];
    parts.extend([(450.0, 22.5); 3]);
    c.report(0, sampled(&parts)).unwrap();
    let out = c.poll(3 * S).unwrap().unwrap();
    assert_eq!(
        (out.capacity[2], out.phase[2]),
        (1000.0, Some(Phase::Revert))
    );
    // samples with the wrong number of hops are refused
    let mut bad = report(0.0, 0.0);
    bad.samples = vec![FlowSample::default()];
    assert!(c.report(0, bad).is_err());
}
