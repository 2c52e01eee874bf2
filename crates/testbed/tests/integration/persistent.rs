//! `up` leaves a testbed running and recorded; `down` removes all of it.

use crate::common::{turn, Small};
use tailbound_dataplane::netns;
use tailbound_testbed::run::RunOptions;
use tailbound_testbed::state;

#[test]
fn up_leaves_a_recorded_testbed_and_down_removes_every_part() {
    let Some(_turn) = turn() else { return };
    let small = Small::new();
    let works = small.scenario.works();
    let input = small.input(&works);
    // a name of its own, so that a testbed someone left up is not touched
    let name = format!("t{}", std::process::id() % 1_000_000);
    let up = state::up(&input, &RunOptions::default(), &name).unwrap();
    assert_eq!(up.namespaces.len(), 3);
    assert!(up.namespaces.iter().all(|n| netns::path(n).exists()));
    assert!(up.servers.iter().all(|(_, p)| p.is_memcached()));
    assert_eq!(state::read_state(&name).unwrap().as_ref(), Some(&up));
    // the host map the enforcer reads, with every tenant's address
    let map = std::fs::read_to_string(state::host_map_path(&name)).unwrap();
    let map = tailbound_enforce_plan::HostMap::parse(&map, "m.json").unwrap();
    assert_eq!(map.tenants.len(), 2);
    assert!(map.hosts.iter().any(|h| h.name == "switch"));
    assert!(up.enforced);
    // a second one of the same name is refused while it is up
    let e = state::up(&input, &RunOptions::default(), &name).unwrap_err();
    assert!(e.to_string().contains("testbed down"), "{e}");
    assert!(
        up.servers.iter().all(|(_, p)| p.is_memcached()),
        "the first is untouched"
    );
    let down = state::down(&name).unwrap();
    assert!(down.had_state);
    assert_eq!(down.stopped.len(), 1);
    let mut removed = down.namespaces.clone();
    removed.sort();
    let mut expected = up.namespaces.clone();
    expected.sort();
    assert_eq!(removed, expected);
    assert!(up.servers.iter().all(|(_, p)| !p.is_memcached()));
    assert!(up.namespaces.iter().all(|n| !netns::path(n).exists()));
    assert_eq!(state::read_state(&name).unwrap(), None);
    assert!(!state::host_map_path(&name).exists());
    // nothing left: down again is a no-op
    let again = state::down(&name).unwrap();
    assert!(!again.had_state && again.stopped.is_empty() && again.namespaces.is_empty());
}
