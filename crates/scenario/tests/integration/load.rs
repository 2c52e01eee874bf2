//! `load` tells the formats apart.

use tailbound_scenario::{detect, load, FileKind, Models, TenantSource};

#[test]
fn dispatches_every_format() {
    let reference = tailbound_testdata::reference_dir().join("snc-meister");
    // model config (a .txt holding JSON, as the original ships it)
    let config = reference.join("sample_config.txt");
    assert_eq!(detect(&config).unwrap(), FileKind::SncConfig);
    let s = load(&config).unwrap();
    assert_eq!(s.network.tenants.len(), 4);
    assert!(s
        .sources
        .iter()
        .all(|t| matches!(t, TenantSource::ModelConfig { .. })));
    // topology: detected, then fails on its missing traces
    let topo = reference.join("sample_topology.txt");
    assert_eq!(detect(&topo).unwrap(), FileKind::SncTopology);
    assert!(load(&topo)
        .unwrap_err()
        .to_string()
        .contains("sample_trace1.txt"));

    let dir = tempfile::tempdir().unwrap();
    let topo = crate::write(
        dir.path(),
        "t.json",
        &serde_json::json!({ "clients": [ {
            "SLO": 0.02, "trace": crate::production("trace0012.csv"),
            "clientHost": "a", "clientVM": "1", "serverHost": "b", "serverVM": "1" } ] })
        .to_string(),
    );
    let s = load(&topo).unwrap();
    assert_eq!(s.network.tenants[0].slo.percentile.value(), 99.9);
    assert_eq!(s.network.flows.len(), 2);

    // own TOML and own JSON
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/two-servers.toml");
    assert_eq!(detect(example.as_ref()).unwrap(), FileKind::Own);
    let own = crate::write(
        dir.path(),
        "own.json",
        r#"{"hosts": [{"name": "a"}, {"name": "b"}], "tenants": []}"#,
    );
    assert_eq!(detect(&own).unwrap(), FileKind::Own);
    assert_eq!(load(&own).unwrap().network.queues.len(), 4);
}

#[test]
fn unknown_formats_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = crate::write(dir.path(), "x.json", r#"{"tenants": []}"#);
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(&msg, &["x.json", "hosts", "clients"]);
    let p = crate::write(dir.path(), "x.yaml", "hosts: []");
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(&msg, &["x.yaml", "not JSON", ".toml"]);
    let p = crate::write(dir.path(), "broken.json", "{");
    let msg = load(&p).unwrap_err().to_string();
    crate::assert_mentions(&msg, &["broken.json", "invalid JSON"]);
    let msg = load(&dir.path().join("missing.toml"))
        .unwrap_err()
        .to_string();
    crate::assert_mentions(&msg, &["missing.toml", "cannot read"]);
}

/// `Models::Mmpp` fits what `Models::Fitted` fits, and leaves the arrival curves out.
#[test]
fn mmpp_models_are_the_fitted_mmpps_without_arrival_curves() {
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/two-servers.toml");
    let fitted = tailbound_scenario::load_with(example.as_ref(), Models::Fitted).unwrap();
    let mmpp = tailbound_scenario::load_with(example.as_ref(), Models::Mmpp).unwrap();
    assert!(!fitted.network.flows.is_empty());
    for (f, m) in fitted.network.flows.iter().zip(&mmpp.network.flows) {
        assert!(f.arrival.is_some(), "{}", f.name);
        assert!(m.arrival.is_none(), "{}", m.name);
        assert_eq!(f.mmpp, m.mmpp, "{}", f.name);
    }
}
