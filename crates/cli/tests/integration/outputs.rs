//! Standard outputs (issue 26 item 3): every JSON output names its format and the tool's
//! version; figures' data as CSV (`--data`); JSON Schemas of the input files
//! (`tailbound schema`), which validate every example file and our own decisions.

use crate::common::{json, stderr, tailbound};
use serde_json::Value;
use std::path::{Path, PathBuf};
use tailbound_cli::report::{AdmitReport, FORMATS};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenario/examples")
}

fn two_servers() -> String {
    examples().join("two-servers.toml").display().to_string()
}

const TOOL: &str = concat!("tailbound ", env!("CARGO_PKG_VERSION"));

/// `admit --json` and its `--decisions-out` file open with their format and the tool; the
/// report still deserializes as before, and the stamped decisions replay.
#[test]
fn json_outputs_name_their_format_and_the_tool_and_stamped_decisions_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d.json");
    let s = two_servers();
    let args = [
        "admit",
        &s,
        "--json",
        "--decisions-out",
        d.to_str().unwrap(),
    ];
    let report: Value = json(&args);
    assert_eq!(report["format"], "tailbound.admit/1");
    assert_eq!(report["tool"], TOOL);
    let typed: AdmitReport = serde_json::from_value(report.clone()).unwrap();
    assert!(!typed.tenants.is_empty());
    // the format comes first, then the tool, then the report's own fields
    let text = String::from_utf8(tailbound(&args).stdout).unwrap();
    let (f, t) = (
        text.find("\"format\"").unwrap(),
        text.find("\"tool\"").unwrap(),
    );
    assert!(f < t && t < text.find("\"tenants\"").unwrap(), "{text}");

    let written: Value = serde_json::from_str(&std::fs::read_to_string(&d).unwrap()).unwrap();
    assert_eq!(written["format"], "tailbound.decisions/1");
    assert_eq!(written["tool"], TOOL);
    let out = tailbound(&["simulate", &s, "--decisions", d.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));

    // a decisions file of another format is refused, naming the format
    let text = std::fs::read_to_string(&d).unwrap();
    std::fs::write(&d, text.replace("decisions/1", "decisions/9")).unwrap();
    let out = tailbound(&["simulate", &s, "--decisions", d.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("tailbound.decisions/9"),
        "{}",
        stderr(&out)
    );
}

/// The format kinds are unique, and README documents every one.
#[test]
fn every_format_is_unique_and_documented_in_the_readme() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let mut seen = std::collections::HashSet::new();
    for (format, _) in FORMATS {
        assert!(seen.insert(format), "{format} twice");
        assert!(
            readme.contains(&format!("`{format}`")),
            "README lacks {format}"
        );
    }
}

/// `--data` writes the figure's numbers as CSV (with or without `--svg`): a header naming the
/// columns, one row per point, the axes with their units.
#[test]
fn data_writes_the_figure_as_csv_beside_or_without_the_svg() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    let (svg, data) = (dir.path().join("f.svg"), dir.path().join("f.csv"));
    let out = tailbound(&[
        "trace",
        "gen",
        "--model",
        "poisson",
        "--rate",
        "100",
        "--duration",
        "5s",
        "--seed",
        "1",
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = trace.to_str().unwrap();
    let out = tailbound(&[
        "trace",
        "stats",
        t,
        "--svg",
        svg.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let csv = std::fs::read_to_string(&data).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("chart,series,x,y,x_axis,y_axis"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.len() >= 5, "{csv}");
    assert!(rows
        .iter()
        .all(|r| r.len() == 6 && r[4] == "time [s]" && r[5] == "requests/s"));
    // 100 requests/s for 5 s: the 1 s windows hold the 500-odd requests
    let total: f64 = rows.iter().map(|r| r[3].parse::<f64>().unwrap()).sum();
    assert!((300.0..700.0).contains(&total), "{total}");
    // --data alone writes the same data and no figure
    let alone = dir.path().join("alone.csv");
    let out = tailbound(&["trace", "stats", t, "--data", alone.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&alone).unwrap(), csv);
}

/// One line of an `.hgrm` percentile distribution: value [µs], percentile, total count.
fn hgrm_lines(text: &str) -> (Vec<(f64, f64, u64)>, u64) {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    );
    assert_eq!(lines.next(), Some(""));
    let mut rows = Vec::new();
    let mut total = None;
    for line in lines {
        if let Some(rest) = line.strip_prefix("#[Max     = ") {
            let count = rest.split("Total count    =").nth(1).unwrap();
            total = Some(count.trim_end_matches(']').trim().parse().unwrap());
            continue;
        }
        if line.starts_with("#[") {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let (v, p, c): (f64, f64, u64) = (
            f[0].parse().unwrap(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        );
        if p < 1.0 {
            // the last column is 1/(1-percentile), to 2 decimals
            let inv: f64 = f[3].parse().unwrap();
            assert!((inv - 1.0 / (1.0 - p)).abs() <= 0.006, "{line}");
        } else {
            assert_eq!(f.len(), 3, "{line}");
        }
        rows.push((v, p, c));
    }
    (rows, total.expect("a #[Max ... Total count] footer"))
}

/// `probe run --hgrm` writes HdrHistogram's percentile distribution of the RTTs it measured:
/// read back, it holds every measured exchange and agrees with the JSON's percentiles; the
/// JSON reports p99.999 beside the others.
#[test]
fn probe_writes_an_hgrm_that_reads_back_to_its_percentiles() {
    let dir = tempfile::tempdir().unwrap();
    let hgrm = dir.path().join("rtt.hgrm");
    let r: Value = json(&[
        "probe",
        "run",
        "--count",
        "2000",
        "--warmup",
        "10",
        "--json",
        "--hgrm",
        hgrm.to_str().unwrap(),
    ]);
    assert_eq!(r["format"], "tailbound.probe/1");
    let q = &r["rtt"];
    let f = |k: &str| q[k].as_f64().unwrap();
    assert!(
        f("p99_99_us") <= f("p99_999_us") && f("p99_999_us") <= f("max_us"),
        "{q}"
    );
    let (rows, total) = hgrm_lines(&std::fs::read_to_string(&hgrm).unwrap());
    assert_eq!(total, 2000);
    assert!(rows
        .windows(2)
        .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && w[0].2 <= w[1].2));
    let last = rows.last().unwrap();
    assert_eq!((last.1, last.2), (1.0, 2000));
    // the median line agrees with p50 (µs, 3 decimals, both the highest value of its bucket)
    let median = rows.iter().find(|r| r.1 >= 0.5).unwrap();
    assert!(
        (median.0 - f("p50_us")).abs() <= 0.0015 + f("p50_us") * 1e-3,
        "{median:?} {q}"
    );
    assert!(
        (last.0 - f("max_us")).abs() <= 0.0015 + f("max_us") * 1e-3,
        "{last:?} {q}"
    );
}

/// `--time` bounds a run that `--count` would not: a closed loop starts no exchange after it
/// (so it ends within the time plus one reply timeout), an open loop sends the requests due
/// within it.
#[test]
fn probe_time_stops_a_run_by_itself() {
    let r: Value = json(&[
        "probe",
        "run",
        "--count",
        "1000000000",
        "--warmup",
        "0",
        "--time",
        "300ms",
        "--timeout",
        "2s",
        "--json",
    ]);
    assert_eq!(r["spec"]["time_s"], 0.3);
    let count = r["rtt"]["count"].as_u64().unwrap();
    assert!(count > 0 && count < 1_000_000_000, "{r}");
    assert_eq!(r["sent"].as_u64().unwrap(), count);
    assert!(r["elapsed_s"].as_f64().unwrap() <= 2.3 + 1e-3, "{r}");
    // open loop at 1000/s for 200 ms: 200 requests due, 10 of them warm-up
    let r: Value = json(&[
        "probe", "run", "--count", "1000000", "--warmup", "10", "--rate", "1000", "--time",
        "200ms", "--json",
    ]);
    assert_eq!(r["rtt"]["count"], 190, "{r}");
    let out = tailbound(&["probe", "run", "--time", "0s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--time"), "{}", stderr(&out));
}

/// The schema `tailbound schema KIND` prints, compiled by a real validator.
fn validator(kind: &str) -> jsonschema::Validator {
    let out = tailbound(&["schema", kind]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("schema {kind}: {e}"))
}

/// A JSON or TOML file as a JSON value.
fn value_of(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }
}

/// Which of the four inputs a file is, by its shape; `None`: none of them (an allocation
/// input, a storage profile, another tool's network...).
fn kind_of(v: &Value) -> Option<&'static str> {
    let first = |key: &str| v.get(key).and_then(|a| a.get(0));
    if first("hosts").is_some_and(|h| h.get("interfaces").is_some()) {
        Some("hosts")
    } else if v.get("servers").is_some() && first("tenants").is_some_and(|t| t.get("vms").is_some())
    {
        Some("vdc")
    } else if first("tenants").is_some_and(|t| t.get("admitted").is_some()) {
        Some("decisions")
    } else if v.get("hosts").is_some() {
        Some("scenario")
    } else {
        None
    }
}

/// Every `.toml`/`.json` file under an `examples` folder of the repository, and the scenario
/// the demo embeds.
fn example_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, under_examples: bool, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && name != "node_modules" {
                    walk(&path, under_examples || name == "examples", out);
                }
            } else if under_examples && (name.ends_with(".toml") || name.ends_with(".json")) {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    walk(&root, false, &mut files);
    files.push(root.join("crates/experiments/src/demo.toml"));
    files.sort();
    files
}

/// `tailbound schema` validates every example scenario, VDC and host map in the repository
/// (TOML as its JSON value) and the decisions our own commands write, and refuses files the
/// readers refuse for their shape.
#[test]
fn schemas_validate_every_example_file_and_our_own_decisions() {
    let kinds = ["scenario", "vdc", "decisions", "hosts"];
    let validators: Vec<(&str, jsonschema::Validator)> =
        kinds.iter().map(|k| (*k, validator(k))).collect();
    let check = |kind: &str, path: &Path, v: &Value| {
        let (_, val) = validators.iter().find(|(k, _)| *k == kind).unwrap();
        let errors: Vec<String> = val
            .iter_errors(v)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(
            errors.is_empty(),
            "{} is not a valid {kind}: {errors:?}",
            path.display()
        );
    };
    let mut seen = std::collections::BTreeMap::<&str, Vec<String>>::new();
    for path in example_files() {
        let v = value_of(&path);
        if let Some(kind) = kind_of(&v) {
            check(kind, &path, &v);
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            seen.entry(kind).or_default().push(name);
        }
    }
    // the known examples were all found and classified as what they are
    for (kind, name) in [
        ("scenario", "two-servers.toml"),
        ("scenario", "six-tenants.toml"),
        ("scenario", "two-hosts.toml"),
        ("scenario", "demo.toml"),
        ("vdc", "vdc.toml"),
        ("hosts", "two-servers.hosts.toml"),
        ("hosts", "six-tenants.hosts.toml"),
    ] {
        assert!(
            seen.get(kind).is_some_and(|n| n.iter().any(|n| n == name)),
            "{kind} {name}: {seen:?}"
        );
    }

    // decisions written by admit and place, with their format and tool fields
    let dir = tempfile::tempdir().unwrap();
    let s = two_servers();
    for (cmd, policy) in [
        ("admit", "snc-meister"),
        ("admit", "priority-meister"),
        ("place", ""),
    ] {
        let d = dir.path().join(format!("{cmd}-{policy}.json"));
        let mut args = vec![cmd, s.as_str(), "--decisions-out", d.to_str().unwrap()];
        if !policy.is_empty() {
            args.extend(["--policy", policy]);
        }
        let out = tailbound(&args);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        let v = value_of(&d);
        assert_eq!(kind_of(&v), Some("decisions"));
        check("decisions", &d, &v);
    }

    // what the readers refuse for its shape, the schemas refuse too
    let (_, scenario) = &validators[0];
    let mut v = value_of(&examples().join("two-servers.toml"));
    v["tenants"][0]["slo_ms"] = 20.into();
    assert!(!scenario.is_valid(&v), "an unknown tenant field passed");
    let (_, decisions) = &validators[2];
    let bad = serde_json::json!({"tenants": [{"name": "t0", "admitted": "yes"}]});
    assert!(!decisions.is_valid(&bad));
    let (_, hosts) = &validators[3];
    let mut v = value_of(&examples().join("two-servers.hosts.toml"));
    v["hosts"][0]["role"] = "router".into();
    assert!(!hosts.is_valid(&v), "an unknown host role passed");
}
