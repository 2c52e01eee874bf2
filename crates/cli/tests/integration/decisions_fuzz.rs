//! The decisions reader's fuzz harness (issue 27; the shared edits of
//! `tailbound_testdata::fuzz`): `simulate --decisions`, `enforce` and `testbed` read decisions
//! through `read_decisions`. Nothing panics, an error names the file, and accepted decisions
//! written back as JSON read back the same.

use proptest::prelude::*;
use tailbound_cli::cmd::simulate::read_decisions;
use tailbound_testdata::fuzz::mutated;

const SEED: &str = r#"{"policy": "hand", "tenants": [
    {"name": "t0", "admitted": true},
    {"name": "t1", "admitted": false},
    {"name": "t2", "admitted": true, "priority": 0, "server": "s1",
     "limits": [{"flow": "t2-req", "stage": "net-in", "rate": 6e6, "burst": 100000},
                {"flow": "t2-resp", "stage": "net-out", "rate": 1.5e7, "burst": 1500}]}]}"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decisions(text in mutated(SEED)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.json");
        std::fs::write(&path, &text).unwrap();
        match read_decisions(&path) {
            Err(e) => {
                let msg = format!("{e:#}");
                prop_assert!(msg.contains("d.json"), "{msg}");
            }
            Ok(d) => {
                let back = dir.path().join("back.json");
                std::fs::write(&back, serde_json::to_string(&d).unwrap()).unwrap();
                prop_assert_eq!(read_decisions(&back).unwrap(), d);
            }
        }
    }
}
