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
    // congestion: served 3000 of 5000 offered → revert
    let mut r = report(5000.0, 1e5);
    r.completed = vec![3000.0; 3];
    c.report(0, r).unwrap();
    let out = c.poll(2 * S).unwrap().unwrap();
    assert_eq!(out.capacity[2], 1000.0);
    assert_eq!(out.phase[2], Some(Phase::Revert));
    // a report with the wrong number of hops is refused
    assert!(c.report(0, FlowReport::default()).is_err());
}
