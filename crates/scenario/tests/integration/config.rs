//! SNC-Meister's model config (`sample_config.txt`).

use tailbound_scenario::snc_meister::read_config;
use tailbound_scenario::{load, TenantSource};

fn sample() -> std::path::PathBuf {
    tailbound_testdata::reference_dir().join("snc-meister/sample_config.txt")
}

#[test]
fn sample_config_has_the_original_shape() {
    let net = read_config(&sample()).unwrap();
    assert_eq!(net.tenants.len(), 4);
    assert_eq!(net.flows.len(), 8);
    assert_eq!(net.queues.len(), 6);
    let flows: Vec<_> = net.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        flows,
        ["F0In", "F0Out", "F1In", "F1Out", "F2In", "F2Out", "F3In", "F3Out"]
    );
    // SLO order gives priorities C3 (10 ms) highest ... C0 (40 ms) lowest
    assert_eq!(net.priorities(), vec![3, 2, 1, 0]);
    for f in &net.flows {
        let m = f.mmpp.as_ref().unwrap();
        m.validate().unwrap();
        // the chain is solvable and carries a load well below the 1 Gbit/s links
        let load = m.mean_work_per_s();
        assert!(load > 0.0 && load < 125e6, "{}: {load}", f.name);
    }
}

#[test]
fn config_with_dependencies_groups_clients() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sample()).unwrap()).unwrap();
    v["clients"][0]["dependencies"] = serde_json::json!(["C2"]);
    let p = crate::write(dir.path(), "deps.json", &v.to_string());
    let s = load(&p).unwrap();
    let groups: Vec<_> = s.network.tenants.iter().map(|t| t.group.clone()).collect();
    assert_eq!(
        groups,
        [
            Some("C0+C2".to_string()),
            None,
            Some("C0+C2".to_string()),
            None
        ]
    );
    assert!(matches!(
        &s.sources[0],
        TenantSource::ModelConfig { trace: Some(t), .. } if t.ends_with("sample_trace1.txt")
    ));
    assert!(s.sources[0].replay_trace().unwrap().is_none());
}
