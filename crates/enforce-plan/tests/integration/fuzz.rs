//! The host map reader's fuzz harness (issue 27; the shared edits of
//! `tailbound_testdata::fuzz` on the bundled host map, TOML and JSON): nothing panics, an
//! error names the file, and an accepted map is parsed the same again (TOML and its JSON form
//! agree).

use proptest::prelude::*;
use std::sync::LazyLock;
use tailbound_enforce_plan::HostMap;
use tailbound_testdata::fuzz::mutated;

const HOSTS: &str = include_str!("../../../scenario/examples/two-servers.hosts.toml");

static HOSTS_JSON: LazyLock<&'static str> = LazyLock::new(|| {
    let value: toml::Value = toml::from_str(HOSTS).unwrap();
    Box::leak(
        serde_json::to_string_pretty(&value)
            .unwrap()
            .into_boxed_str(),
    )
});

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn host_map_toml(text in mutated(HOSTS)) {
        match HostMap::parse(&text, "hosts.toml") {
            Err(e) => prop_assert!(e.to_string().contains("hosts.toml"), "{e}"),
            Ok(map) => {
                let value: toml::Value = toml::from_str(&text).unwrap();
                let json = serde_json::to_string(&value).unwrap();
                let back = HostMap::parse(&json, "hosts.json").unwrap();
                prop_assert_eq!((back.hosts, back.tenants), (map.hosts, map.tenants));
            }
        }
    }

    #[test]
    fn host_map_json(text in mutated(&HOSTS_JSON)) {
        if let Err(e) = HostMap::parse(&text, "hosts.json") {
            prop_assert!(e.to_string().contains("hosts.json"), "{e}");
        }
    }
}
