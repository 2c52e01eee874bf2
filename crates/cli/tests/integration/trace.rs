use crate::common::{json, tailbound};
use tailbound_cli::report::{GenReport, SplitReport, TraceStatsReport};
use tailbound_testdata::production;

#[test]
fn stats_of_trace0000_reports_2871_requests() {
    let path = production("trace0000.csv");
    let r: TraceStatsReport = json(&["trace", "stats", path.to_str().unwrap(), "--json"]);
    assert_eq!(r.traces.len(), 1);
    let s = &r.traces[0];
    assert_eq!(s.requests, 2871);
    assert!(s.span_s > 590.0 && s.span_s < 600.0, "span {}", s.span_s);
    let fraction = s.read_fraction.expect("read fraction of a non-empty trace");
    assert!(fraction > 0.0 && fraction < 1.0);
    assert_eq!(s.windows.len(), 3);
    // Shorter windows see higher peaks.
    let p = |i: usize| s.windows[i].peak_requests_per_s;
    assert!(p(0) >= p(1) && p(1) >= p(2));
}

#[test]
fn stats_table_and_svg_for_several_files() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("rate.svg");
    let (a, b) = (production("trace0000.csv"), production("trace0004.csv"));
    let out = tailbound(&[
        "trace",
        "stats",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("trace0000.csv") && table.contains("trace0004.csv"));
    assert!(table.contains("2871"));
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.matches("<path").count() == 2);
}

#[test]
fn split_halves_add_up_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = production("trace0000.csv");
    let r: SplitReport = json(&[
        "trace",
        "split",
        path.to_str().unwrap(),
        "--at",
        "0.5",
        "--out-dir",
        dir.path().to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r.parts.len(), 2);
    assert_eq!(r.parts[0].requests + r.parts[1].requests, 2871);
    assert!(r.parts.iter().all(|p| p.requests > 0));
    for p in &r.parts {
        let s: TraceStatsReport = json(&["trace", "stats", &p.file, "--json"]);
        assert_eq!(s.traces[0].requests as usize, p.requests);
    }
}

#[test]
fn gen_is_deterministic_for_a_seed() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, seed: &str| {
        let path = dir.path().join(name);
        let r: GenReport = json(&[
            "trace",
            "gen",
            "--model",
            "mmpp",
            "--rates",
            "20,400",
            "--dwell",
            "2s",
            "--duration",
            "60s",
            "--seed",
            seed,
            "-o",
            path.to_str().unwrap(),
            "--json",
        ]);
        assert!(r.requests > 0);
        std::fs::read(path).unwrap()
    };
    let (a, b, c) = (run("a.csv", "7"), run("b.csv", "7"), run("c.csv", "8"));
    assert_eq!(a, b, "same seed, same trace");
    assert_ne!(a, c, "different seed, different trace");
}

#[test]
fn every_generator_model_produces_a_readable_trace() {
    let dir = tempfile::tempdir().unwrap();
    for model in ["poisson", "mmpp", "onoff", "pareto"] {
        let path = dir.path().join(format!("{model}.csv"));
        let out = tailbound(&[
            "trace",
            "gen",
            "--model",
            model,
            "--seed",
            "1",
            "--duration",
            "30s",
            "--format",
            "csv",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{model}: {}",
            crate::common::stderr(&out)
        );
        let s: TraceStatsReport = json(&["trace", "stats", path.to_str().unwrap(), "--json"]);
        assert!(s.traces[0].requests > 10, "{model}");
    }
}
