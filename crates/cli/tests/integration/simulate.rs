//! `tailbound simulate` and `tailbound opt` on a seeded synthetic scenario: three tenants of
//! ~4.7 MB/s each on a 12.5 MB/s server link (two fit), and decisions files that choose
//! who runs.

use crate::common::{json, stderr, tailbound};
use tailbound_cli::report::{OptReport, SimReport};

fn scenario(dir: &std::path::Path) -> std::path::PathBuf {
    let mut text = String::from("[[hosts]]\nname = \"server1\"\nlink = \"100Mbit\"\n");
    for i in 0..3 {
        text += &format!(
            "[[hosts]]\nname = \"client{i}\"\nlink = \"1Gbit\"\n[[tenants]]\nname = \"t{i}\"\n\
             client = \"client{i}\"\nserver = \"server1\"\nslo = \"50ms\"\nseed = {}\n\
             model = {{ arrival = {{ model = \"poisson\", rate_per_s = 1000 }}, sizes = {{ model = \
             \"fixed\", bytes = 4096 }}, read_fraction = 1.0, duration_s = 20, vocabulary = \
             \"key_value\" }}\n",
            i + 1
        );
    }
    let path = dir.join("three.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn simulate_reports_every_tenant_and_fails_when_an_slo_is_missed() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path());
    let p = path.to_str().unwrap();
    let out = tailbound(&["simulate", p, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r: SimReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.tenants.len(), 3);
    assert!(r.tenants.iter().any(|t| !t.meets_slo));
    let raw: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t0 = &raw["tenants"][0];
    for key in ["p50", "p90", "p99", "p99.9", "max"] {
        assert!(
            t0["latency_s"][key].as_f64().is_some(),
            "latency_s.{key} missing: {t0}"
        );
    }
    assert!(t0["windows"][0]["p99.9"].as_f64().is_some(), "{t0}");

    let decisions = dir.path().join("decisions.json");
    std::fs::write(
        &decisions,
        r#"{"policy": "hand", "tenants": [
            {"name": "t0", "admitted": true},
            {"name": "t1", "admitted": false},
            {"name": "t2", "admitted": true, "priority": 0,
             "limits": [{"flow": "t2-resp", "stage": "net-out", "rate": 6e6, "burst": 100000}]}]}"#,
    )
    .unwrap();
    let svg = dir.path().join("sim.svg");
    let r: SimReport = json(&[
        "simulate",
        p,
        "--decisions",
        decisions.to_str().unwrap(),
        "--json",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    let names: Vec<_> = r.tenants.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t0", "t2"]);
    assert!(r.tenants.iter().all(|t| t.meets_slo && t.requests > 8000));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn opt_finds_the_two_tenants_that_fit() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path());
    let r: OptReport = json(&["opt", path.to_str().unwrap(), "--json", "--trial"]);
    assert_eq!((r.opt, r.tenants), (2, 3), "{r:?}");
    assert_eq!(
        r.trial.as_deref(),
        Some(&["t0".to_string(), "t1".to_string()][..])
    );
    assert!(r.probes.iter().any(|p| p.n == 3 && !p.all_meet));
}

#[test]
fn bad_decisions_exit_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path());
    let p = path.to_str().unwrap();
    let cases = [
        (
            r#"{"tenants": [{"name": "t0", "admitted": true, "prio": 1}]}"#,
            "prio",
        ),
        (
            r#"{"tenants": [{"name": "t0", "admitted": true, "limits": [{"flow": "t0-req", "stage": "net-in", "rate": -5, "burst": 1}]}]}"#,
            "rate -5",
        ),
        (
            r#"{"tenants": [{"name": "t0", "admitted": true}, {"name": "t1", "admitted": true}]}"#,
            "\"t2\"",
        ),
        (
            r#"{"tenants": [{"name": "x", "admitted": true}]}"#,
            "t0, t1, t2",
        ),
    ];
    for (i, (text, expect)) in cases.iter().enumerate() {
        let d = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&d, text).unwrap();
        let out = tailbound(&["simulate", p, "--decisions", d.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(
            err.contains(expect) && err.contains(&format!("bad{i}.json")),
            "{text}: {err}"
        );
    }
    let config = tailbound_testdata::reference_dir().join("snc-meister/sample_config.txt");
    let out = tailbound(&["simulate", config.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no requests to replay"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn admit_emits_decisions_that_simulate_replays() {
    use tailbound_cli::report::AdmitReport;
    let dir = tempfile::tempdir().unwrap();
    let path = scenario(dir.path());
    let p = path.to_str().unwrap();
    for policy in ["snc-meister", "priority-meister", "silo++", "qjump++"] {
        let out = dir.path().join(format!("{policy}.json"));
        let r: AdmitReport = json(&[
            "admit",
            p,
            "--policy",
            policy,
            "--json",
            "--decisions-out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r.tenants.len(), 3);
        // the server link carries two of the three
        assert!((1..=2).contains(&r.admitted), "{policy}: {}", r.admitted);
        assert!(r.tenants.iter().all(|t| t.admitted || t.reason.is_some()));
        let sim: SimReport = json(&[
            "simulate",
            p,
            "--decisions",
            out.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(sim.tenants.len(), r.admitted, "{policy}");
    }
    let out = tailbound(&["admit", p, "--policy", "fastest"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("snc-meister"), "{}", stderr(&out));
}
