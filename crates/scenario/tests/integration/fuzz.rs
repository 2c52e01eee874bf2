//! Fuzz harnesses of the scenario readers (issue 27; the shared edits of
//! `tailbound_testdata::fuzz`): tailbound's own TOML and JSON, SNC-Meister's model config and
//! its topology. Nothing panics, an error names the file, and an accepted TOML scenario
//! written as JSON loads to the same scenario.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use tailbound_scenario::{load_with, Models};
use tailbound_testdata::fuzz::mutated;

const OWN: &str = include_str!("../../examples/two-servers.toml");

/// The bundled scenario in tailbound's JSON form.
static OWN_JSON: LazyLock<&'static str> = LazyLock::new(|| {
    let value: toml::Value = toml::from_str(OWN).unwrap();
    Box::leak(
        serde_json::to_string_pretty(&value)
            .unwrap()
            .into_boxed_str(),
    )
});

/// SNC-Meister's sample model config.
static CONFIG: LazyLock<&'static str> = LazyLock::new(|| {
    let path = tailbound_testdata::reference_dir().join("snc-meister/sample_config.txt");
    Box::leak(std::fs::read_to_string(path).unwrap().into_boxed_str())
});

/// A folder with one small trace, and an SNC-Meister topology of two clients over it.
static TOPOLOGY: LazyLock<(tempfile::TempDir, &'static str)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let trace: String = (1..=400)
        .map(|i| format!("{},0x{:x},Get\n", i * 2_500_000, 1000 + (i * 37) % 4000))
        .collect();
    std::fs::write(dir.path().join("t.csv"), trace).unwrap();
    let text = format!(
        r#"{{"addrPrefix": "u", "outputConfig": "out.txt", "clients": [
  {{"SLO": 0.04, "SLOpercentile": 99.9, "trace": "{t}", "clientHost": "c1", "clientVM": "1",
    "serverHost": "s1", "serverVM": "1"}},
  {{"SLO": 0.02, "SLOpercentile": 99, "trace": "{t}", "clientHost": "c1", "clientVM": "2",
    "serverHost": "s2", "serverVM": "1", "dependencies": ["C0"]}}]}}"#,
        t = dir.path().join("t.csv").display()
    );
    (dir, Box::leak(text.into_boxed_str()))
});

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Loads `text` as file `name`; an error must name the file.
fn load(
    dir: &Path,
    name: &str,
    text: &str,
    models: Models,
) -> Result<Option<tailbound_scenario::Scenario>, TestCaseError> {
    let path = write(dir, name, text);
    match load_with(&path, models) {
        Ok(s) => Ok(Some(s)),
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(msg.contains(name), "{msg}");
            Ok(None)
        }
    }
}

proptest! {
    // ~10% of the edited files are accepted (most edits break a cross-reference): enough
    // cases that dozens round-trip
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn own_toml_and_json(text in mutated(OWN)) {
        let dir = tempfile::tempdir().unwrap();
        if let Some(s) = load(dir.path(), "s.toml", &text, Models::None)? {
            let value: toml::Value = toml::from_str(&text).unwrap();
            let json = serde_json::to_string(&value).unwrap();
            let back = load(dir.path(), "s.json", &json, Models::None)?;
            prop_assert_eq!(back.map(|b| b.network), Some(s.network));
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn own_json(text in mutated(&OWN_JSON)) {
        let dir = tempfile::tempdir().unwrap();
        load(dir.path(), "s.json", &text, Models::None)?;
    }

    #[test]
    fn snc_meister_model_config(text in mutated(&CONFIG)) {
        let dir = tempfile::tempdir().unwrap();
        load(dir.path(), "config.json", &text, Models::Fitted)?;
    }
}

proptest! {
    // each accepted topology characterizes its traces: fewer cases
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn snc_meister_topology(text in mutated(TOPOLOGY.1)) {
        let dir = tempfile::tempdir().unwrap();
        load(dir.path(), "topology.json", &text, Models::Fitted)?;
    }
}
