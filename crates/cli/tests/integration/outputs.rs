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
