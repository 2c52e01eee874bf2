//! Bad input and a hostile machine: a clear error and a clean machine.

use crate::common::{own_namespaces, turn, Small};
use std::path::PathBuf;
use tailbound_dataplane::netns;
use tailbound_testbed::memcached;
use tailbound_testbed::run::{prepare, sizes, RunOptions};
use tailbound_testbed::testbed::{Testbed, TestbedOptions};
use tailbound_testbed::TestbedError;

#[test]
fn memcached_missing_is_refused_before_anything_is_built() {
    let Some(_turn) = turn() else { return };
    let small = Small::new();
    let works = small.scenario.works();
    let input = small.input(&works);
    let p = prepare(&input, &RunOptions::default()).unwrap();
    let opts = TestbedOptions {
        memcached: PathBuf::from("/nonexistent/memcached"),
        ..TestbedOptions::default()
    };
    let e = Testbed::up(&p.topology, &sizes(&p), &opts).unwrap_err();
    assert!(matches!(e, TestbedError::MemcachedMissing { .. }), "{e}");
    assert!(
        e.to_string().contains("apt-get install -y memcached"),
        "{e}"
    );
    assert!(own_namespaces().is_empty(), "{:?}", own_namespaces());
}

#[test]
fn a_port_in_use_is_named_and_the_failed_server_leaves_nothing() {
    let Some(_turn) = turn() else { return };
    let small = Small::new();
    let works = small.scenario.works();
    let input = small.input(&works);
    let p = prepare(&input, &RunOptions::default()).unwrap();
    let bed = Testbed::up(&p.topology, &sizes(&p), &TestbedOptions::default()).unwrap();
    let (h, running) = bed.servers()[0];
    let ns = bed.lan().hosts()[h].ns.clone();
    let addr = p.topology.tenants[0].server_addr;
    // a second server on the same host and port
    let e =
        memcached::start(&ns, "server1", addr, 64, &PathBuf::from("memcached"), false).unwrap_err();
    assert!(matches!(e, TestbedError::PortInUse { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("server1") && text.contains(&addr.to_string()),
        "{text}"
    );
    assert!(text.contains("choose another --port"), "{text}");
    // only the first server is in the namespace
    assert_eq!(netns::pids_in(&ns), vec![running.pid]);
    drop(bed);
    assert!(!running.is_memcached());
    assert!(own_namespaces().is_empty(), "{:?}", own_namespaces());
}
