//! tailbound's own scenario format, TOML and JSON, trace and model tenants.

use serde_json::json;
use tailbound_model::Stage;
use tailbound_scenario::{load, own, Part, TenantSource};

fn example() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/two-servers.toml"
    ))
}

#[test]
fn bundled_example_builds() {
    let s = load(&example()).unwrap();
    let net = &s.network;
    let queues: Vec<_> = net.queues.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(
        queues,
        [
            "client1-out",
            "client1-in",
            "server1-out",
            "server1-in",
            "server1-storage",
            "server2-out",
            "server2-in"
        ]
    );
    assert_eq!(net.queues[4].rate, 1.0);
    assert_eq!(net.queues[5].rate, 1.25e9);
    let flows: Vec<_> = net.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        flows,
        [
            "web-req",
            "web-resp",
            "db-req",
            "db-storage",
            "db-resp",
            "batch-req",
            "batch-resp"
        ]
    );
    assert_eq!(net.tenants[1].flows, vec![2, 3, 4]);
    assert_eq!(net.flows[3].path, vec![4]);
    assert_eq!(net.tenants[2].group.as_deref(), Some("batch-jobs"));
    for f in &net.flows {
        f.mmpp.as_ref().unwrap().validate().unwrap();
        assert!(f.arrival.is_some());
    }
    // storage work is in busy seconds: a 64 KiB read takes well under a second
    assert!(net.flows[3].arrival.as_ref().unwrap().burst() < 1.0);
    assert!(matches!(
        &s.sources[0],
        TenantSource::Generated {
            seed: 1,
            part: Part::FirstHalf,
            ..
        }
    ));
    // replay gives the generated second half
    let replay = s.sources[0].replay_trace().unwrap().unwrap();
    assert!(!replay.requests.is_empty());
    let _ = Stage::Storage;
}

#[test]
fn toml_with_trace_tenants_and_characterize_options() {
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        r#"
[characterize]
part = "whole"
sizes = "empirical"

[[hosts]]
name = "c"
link = "10Gbit"

[[hosts]]
name = "s"
storage = true

[[tenants]]
name = "exchange"
client = "c"
server = "s"
slo = "30ms"
trace = "{}"
storage = true
priority = 1
"#,
        crate::production("trace0006.csv")
    );
    let p = crate::write(dir.path(), "scenario.toml", &toml);
    let s = load(&p).unwrap();
    let t = &s.network.tenants[0];
    assert_eq!(t.slo.latency_s, 0.03);
    assert_eq!(t.slo.percentile.value(), 99.9);
    assert_eq!(t.priority, Some(1));
    assert_eq!(t.flows.len(), 3);
    assert_eq!(s.network.queues[0].rate, 1.25e9);
    assert_eq!(s.network.queues[2].rate, 125e6);
    let m = s.network.flows[0].mmpp.as_ref().unwrap();
    assert!(matches!(
        m.states[0].sizes,
        tailbound_model::SizeModel::Empirical { .. }
    ));
    assert!(matches!(
        &s.sources[0],
        TenantSource::Trace {
            part: Part::Whole,
            ..
        }
    ));
}

#[test]
fn relative_trace_paths_resolve_against_the_scenario_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("traces")).unwrap();
    std::fs::copy(
        tailbound_testdata::production("trace0009.csv"),
        dir.path().join("traces/t.csv"),
    )
    .unwrap();
    let p = crate::write(
        dir.path(),
        "s.toml",
        r#"
[[hosts]]
name = "c"
[[hosts]]
name = "s"
[[tenants]]
name = "t"
client = "c"
server = "s"
slo = 0.05
percentile = 99
trace = "traces/t.csv"
"#,
    );
    let s = own::read(&p).unwrap();
    assert_eq!(s.network.tenants[0].slo.latency_s, 0.05);
    assert_eq!(s.network.flows.len(), 2);
}

#[test]
fn json_with_trace_and_model_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let v = json!({
        "hosts": [ { "name": "c", "link": "1Gbit" }, { "name": "s", "link": 125e6 } ],
        "tenants": [
            { "name": "real", "client": "c", "server": "s", "slo": "20ms", "percentile": 99.9,
              "trace": crate::production("trace0010.csv"), "group": "g" },
            { "name": "synthetic", "client": "c", "server": "s", "slo": "10ms", "percentile": 99,
              "seed": 5,
              "model": { "arrival": { "model": "poisson", "rate_per_s": 50.0 },
                         "sizes": { "model": "fixed", "bytes": 4096 },
                         "read_fraction": 1.0, "duration_s": 30.0, "vocabulary": "key_value" } }
        ]
    });
    let p = crate::write(dir.path(), "scenario.json", &v.to_string());
    let s = load(&p).unwrap();
    assert_eq!(s.network.tenants.len(), 2);
    assert_eq!(s.network.flows.len(), 4);
    assert_eq!(s.network.priorities(), vec![1, 0]);
    assert!(matches!(
        &s.sources[1],
        TenantSource::Generated { seed: 5, .. }
    ));
    // fixed 4 KiB reads: every request is 200 + 0.025·4096 bytes out, 200 + 1.1·4096 back
    let req = s.network.flows[2].mmpp.as_ref().unwrap();
    assert!((req.states[0].sizes.mean() - (200.0 + 0.025 * 4096.0)).abs() < 1e-6);
}

#[test]
fn flows_remember_their_stage_and_tenants_their_hosts() {
    let s = load(&example()).unwrap();
    let net = &s.network;
    let stages: Vec<_> = net.flows.iter().map(|f| f.stage).collect();
    use Stage::*;
    assert_eq!(
        stages,
        [NetIn, NetOut, NetIn, Storage, NetOut, NetIn, NetOut]
    );
    // the storage flow's work is the server's device profile: busy-seconds, not bytes
    assert_eq!(s.work(3).unit(), "busy-s");
    assert_eq!(s.work(2).unit(), "bytes");
    let hosts = net.tenants[1].hosts.unwrap();
    assert_eq!(
        (
            net.hosts[hosts.client].name.as_str(),
            net.hosts[hosts.server].name.as_str()
        ),
        ("client1", "server1")
    );
}

#[test]
fn a_finer_fit_interval_sees_more_states_and_bad_intervals_are_errors() {
    let text = std::fs::read_to_string(example()).unwrap();
    let fine = text.replace(
        "sizes = \"exponential\"",
        "sizes = \"exponential\"\ninterval = \"100ms\"",
    );
    let coarse = own::parse_toml(&example(), &text).unwrap();
    let fine = own::parse_toml(&example(), &fine).unwrap();
    let mmpp = |s: &tailbound_scenario::Scenario| s.network.flows[0].mmpp.clone().unwrap();
    assert_eq!(mmpp(&coarse).interval_s, 1.0);
    assert_eq!(mmpp(&fine).interval_s, 0.1);
    for bad in ["0s", "fast", "-1s"] {
        let t = text.replace(
            "sizes = \"exponential\"",
            &format!("sizes = \"exponential\"\ninterval = \"{bad}\""),
        );
        let e = own::parse_toml(&example(), &t).unwrap_err().to_string();
        assert!(e.contains("interval") || e.contains(bad), "{bad}: {e}");
    }
}
