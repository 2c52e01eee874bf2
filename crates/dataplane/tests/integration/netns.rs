//! Two namespaces as two hosts: exchanges cross the veth pair (and the bridge), and nothing is
//! left behind. Needs root and iproute2; otherwise each test says why and returns (under `CI=true`, where
//! CI runs as root, it fails instead).

use std::sync::Arc;
use tailbound_dataplane::netns::{self, LinkOptions};
use tailbound_dataplane::probe::{
    run_probe, Control, Hosts, IoMode, Load, ProbeSpec, Protocol, RunOptions,
};

fn can_netns() -> bool {
    tailbound_testdata::root_or_skip("network namespaces")
}

#[test]
fn exchanges_cross_two_namespaces_with_bridge_and_shaping_and_leave_nothing_behind() {
    if !can_netns() {
        return;
    }
    let hosts = Hosts::netns(LinkOptions {
        bridge: true,
        rate_bytes_per_s: Some(1.25e9),
    })
    .unwrap();
    let names: Vec<String> = match &hosts {
        Hosts::Netns(h) => h.names().into_iter().map(String::from).collect(),
        Hosts::Loopback => unreachable!(),
    };
    for protocol in [Protocol::Tcp, Protocol::Udp] {
        for io in [IoMode::Blocking, IoMode::Nonblocking] {
            let s = ProbeSpec {
                protocol,
                io,
                size_bytes: 4096,
                pairs: 2,
                count: 200,
                warmup: 10,
                load: Load::ClosedLoop,
                time_s: None,
            };
            let ctl = Arc::new(Control::new());
            let r = run_probe(&s, &hosts, &RunOptions::default(), &ctl)
                .unwrap_or_else(|e| panic!("{}: {e}", s.label()));
            assert_eq!(r.rtt.count + r.lost, 200, "{}", s.label());
            assert_eq!(r.setup.kind, "netns");
            assert!(r.setup.bridge);
        }
    }
    drop(hosts);
    let left: Vec<String> = netns::list()
        .into_iter()
        .filter(|n| names.contains(n))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
