//! Same inputs, same outputs: no clock, no global randomness, ties broken by insertion order.

use crate::common::{exp_size, network, poisson, size_workloads};
use tailbound_model::Bucket;
use tailbound_sim::{simulate, SimConfig};

#[test]
fn identical_runs_give_identical_results() {
    let net = network(
        &[1e8, 1e8, 5e7],
        &[
            vec![vec![0, 2], vec![2, 1]],
            vec![vec![1, 2], vec![2, 0]],
            vec![vec![0, 1]],
        ],
        &[0, 1, 1],
    );
    let reqs: Vec<_> = (0..3)
        .map(|t| poisson(100 + t, 3_000, 2_000.0, exp_size(8_000.0)))
        .collect();
    let mut cfg = SimConfig {
        shapers: vec![Vec::new(); net.flows.len()],
        ..SimConfig::default()
    };
    cfg.shapers[0] = vec![Bucket {
        rate: 2e7,
        burst: 50_000.0,
    }];
    let a = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    let b = simulate(&net, &size_workloads(&net, &reqs), &cfg).unwrap();
    assert_eq!(a, b);
    assert!(a.events > 3 * 3_000);
}
