//! The catalogue of bad inputs and hostile conditions (issue 27): each entry runs the binary
//! once and states the exit code and a fragment the message must hold (the flag, file or value
//! at fault, and what is accepted). Nothing here may panic (exit 101), abort or hang; every run
//! is small (flag errors stop before any work; files are a few lines).
//!
//! The conditions on stdout and files (a closed pipe, a full disk, a missing or unusable
//! output folder, an interrupted write) have their own tests below the table.

use crate::common::{stderr, tailbound};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The small input files the catalogue refers to, in one temporary folder.
struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        let w = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        w("one.csv", "1000,0x1000,Get\n2000,0x10,Put\n");
        w("empty.csv", "");
        w("comments.csv", "# nothing but a comment\n\n");
        w("header.csv", "when,how_big,what\n1,2,Get\n");
        w("unsorted.csv", "2000,0x10,Get\n1000,0x10,Get\n");
        w("zero.csv", "1000,0x0,Get\n");
        w("huge-size.csv", "1000,0x10000000001,Get\n");
        w("overflow.csv", "1000,0x1ffffffffffffffff,Get\n");
        w("op.csv", "1000,0x10,Delete\n");
        w("fields.csv", "1000,0x10\n");
        w("long-line.csv", &"9".repeat(100_000));
        w("binary.csv", "\u{0}\u{1}\u{2}\u{fffd}\n");
        w("csv-negative.csv", "time_s,size_bytes,op\n0.5,-3,Get\n");
        w("csv-nan.csv", "time_s,size_bytes,op\nNaN,3,Get\n");
        // two requests of 0xffffffffff bytes: the exact total is 2 199 023 255 550
        w("big.csv", "1,0xffffffffff,Get\n2,0xffffffffff,Get\n");
        std::fs::create_dir(dir.path().join("folder.csv")).unwrap();
        w("not-a-folder", "");
        let scenario = std::fs::read_to_string(two_servers()).unwrap();
        w("two-servers.toml", &scenario);
        w(
            "link-type.toml",
            &scenario.replacen("link = \"1Gbit\"", "link = true", 1),
        );
        w(
            "link-unit.toml",
            &scenario.replacen("link = \"10Gbit\"", "link = \"fast\"", 1),
        );
        w(
            "unknown-host.toml",
            &scenario.replacen("server = \"server1\"", "server = \"nowhere\"", 1),
        );
        w(
            "unknown-key.toml",
            &scenario.replacen("[[hosts]]", "[[hosts]]\nspeed = 3", 1),
        );
        w("syntax.toml", "[[hosts]\nname = \"a\"\n");
        w(
            "missing-trace.toml",
            "[[hosts]]\nname = \"c\"\n[[hosts]]\nname = \"s\"\n[[tenants]]\nname = \"t\"\n\
             client = \"c\"\nserver = \"s\"\nslo = \"20ms\"\ntrace = \"nosuch.csv\"\n",
        );
        w(
            "folder-trace.toml",
            "[[hosts]]\nname = \"c\"\n[[hosts]]\nname = \"s\"\n[[tenants]]\nname = \"t\"\n\
             client = \"c\"\nserver = \"s\"\nslo = \"20ms\"\ntrace = \"folder.csv\"\n",
        );
        w("scenario.json", "{\"hosts\": 3}");
        w("workloads-header.csv", "who,what\n");
        w(
            "workloads-empty-name.csv",
            "name,trace,slo_s,percentile\n,one.csv,0.25,99.9\n",
        );
        w(
            "workloads-missing.csv",
            "name,trace,slo_s,percentile\na,nosuch.csv,0.25,99.9\n",
        );
        w(
            "workloads-folder.csv",
            "name,trace,slo_s,percentile\na,folder.csv,0.25,99.9\n",
        );
        w(
            "workloads-slo.csv",
            "name,trace,slo_s,percentile\na,one.csv,-1,99.9\n",
        );
        w(
            "workloads-percentile.csv",
            "name,trace,slo_s,percentile\na,one.csv,0.25,100\n",
        );
        w("alloc-syntax.json", "{\"resources\": [");
        w(
            "alloc-capacity.json",
            r#"{"resources": [{"name": "r", "capacity": -5}], "flows": []}"#,
        );
        w(
            "alloc-resource.json",
            r#"{"resources": [{"name": "r", "capacity": 5}],
                "flows": [{"name": "f", "tenant": "t", "weight": 1, "demand": {"q": 1}}]}"#,
        );
        w(
            "decisions-flow.json",
            r#"{"policy": "x", "tenants": [{"name": "web", "admitted": true, "priority": 0,
                "limits": [{"flow": "nosuch", "stage": "net-in", "rate": 1e6, "burst": 1e4}]}]}"#,
        );
        w("decisions-syntax.json", "{\"tenants\": 3}");
        w(
            "alloc-weight.json",
            r#"{"resources": [{"name": "r", "capacity": 1000}],
                "flows": [{"name": "f", "weight": 1e-100, "demand": {"r": 800}},
                          {"name": "g", "demand": {"r": 600}}]}"#,
        );
        w(
            "alloc-tenant.json",
            r#"{"resources": [{"name": "r", "capacity": 1000}], "tenants": [{"name": "a"}],
                "flows": [{"name": "f", "tenant": "b", "demand": {"r": 800}}]}"#,
        );
        Files { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }
}

fn two_servers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenario/examples/two-servers.toml")
}

/// One entry: what it is, the arguments (`@name` is a file of [`Files`]), the exit code and the
/// fragments stderr must hold.
type Case = (
    &'static str,
    &'static [&'static str],
    i32,
    &'static [&'static str],
);

const CASES: &[Case] = &[
    // ---- counts and limits: refused while parsing flags, naming the flag and the range ----
    (
        "runs 0",
        &["experiment", "admission", "--traces", "@", "--runs", "0"],
        2,
        &["--runs", "1..=1000"],
    ),
    (
        "runs 1e8",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--runs",
            "100000000",
        ],
        2,
        &["--runs", "1..=1000"],
    ),
    (
        "models replayed on the testbed",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--testbed",
            "--replay-models",
        ],
        2,
        &["--replay-models", "--testbed"],
    ),
    (
        "tenants per run",
        &["experiment", "admission", "--traces", "@", "--tenants", "0"],
        2,
        &["--tenants", "1..=2000"],
    ),
    (
        "threads 0",
        &["experiment", "admission", "--traces", "@", "--threads", "0"],
        2,
        &["--threads", "1..=256"],
    ),
    (
        "speed-up 0",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--speed-up",
            "0",
        ],
        2,
        &["--speed-up", "more than 0"],
    ),
    (
        "speed-up NaN",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--speed-up",
            "nan",
        ],
        2,
        &["--speed-up", "out of range"],
    ),
    (
        "speed-up inf",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--speed-up",
            "inf",
        ],
        2,
        &["--speed-up", "at most 1000"],
    ),
    (
        "admission link",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--link",
            "20000Gbit",
        ],
        2,
        &["--link", "1Kbit to 10000Gbit"],
    ),
    (
        "admission slo",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--slos",
            "10ms,120min",
        ],
        2,
        &["--slos", "to 60min"],
    ),
    (
        "fit interval",
        &[
            "experiment",
            "admission",
            "--traces",
            "@",
            "--fit-interval",
            "0s",
        ],
        2,
        &["--fit-interval", "1ms to 60min"],
    ),
    (
        "workloads 1e8",
        &[
            "experiment",
            "placement",
            "--traces",
            "@",
            "--workloads",
            "100000000",
        ],
        2,
        &["--workloads", "1..=100000"],
    ),
    (
        "placement margin",
        &["experiment", "placement", "--traces", "@", "--margin=-1"],
        2,
        &["--margin", "0 to 10"],
    ),
    (
        "placement ssds",
        &["experiment", "placement", "--traces", "@", "--ssds", "0"],
        2,
        &["--ssds", "more than 0"],
    ),
    (
        "placement threads",
        &["experiment", "placement", "--traces", "@", "--threads", "0"],
        2,
        &["--threads"],
    ),
    (
        "max-tenants 0",
        &["experiment", "bounds-tenants", "--max-tenants", "0"],
        2,
        &["--max-tenants", "1..=1000"],
    ),
    (
        "step 0",
        &["experiment", "bounds-tenants", "--step", "0"],
        2,
        &["--step", "1..=1000"],
    ),
    (
        "tenant count 0",
        &["experiment", "bounds-tenants", "--tenants", "3,0"],
        2,
        &["--tenants", "1..=1000"],
    ),
    (
        "5000 tenants",
        &["experiment", "bounds-dependent", "--tenants", "5000"],
        2,
        &["--tenants", "1..=1000"],
    ),
    (
        "max-nines 1000",
        &["experiment", "bounds-nines", "--max-nines", "1000"],
        2,
        &["--max-nines", "1..=100"],
    ),
    (
        "bounds link 0",
        &["experiment", "bounds-tenants", "--link", "0bit"],
        2,
        &["--link"],
    ),
    (
        "vdc duration 1e12",
        &["experiment", "vdc", "enforcement", "--duration", "1e12"],
        2,
        &["--duration", "at most 60min"],
    ),
    (
        "vdc duration 0",
        &["experiment", "vdc", "capacity", "--duration", "0s"],
        2,
        &["--duration", "more than 0s"],
    ),
    (
        "vdc interval",
        &["experiment", "vdc", "enforcement", "--interval", "1ms"],
        2,
        &["--interval", "10ms to 1min"],
    ),
    (
        "vms 4e9",
        &["alloc", "bench", "--vms", "4000000000"],
        2,
        &["--vms", "1..=1000000"],
    ),
    (
        "servers 0",
        &["alloc", "bench", "--servers", "0"],
        2,
        &["--servers", "1..=100000"],
    ),
    (
        "active 2",
        &["alloc", "bench", "--active", "2"],
        2,
        &["--active", "0 to 1"],
    ),
    (
        "bench runs 0",
        &["alloc", "bench", "--runs", "0"],
        2,
        &["--runs", "1..=1000"],
    ),
    (
        "place margin",
        &["place", "@one.csv", "--margin=-1"],
        2,
        &["--margin", "0 to 10"],
    ),
    (
        "place link",
        &["place", "@one.csv", "--link", "0"],
        2,
        &["--link", "invalid rate"],
    ),
    (
        "place servers 0",
        &["place", "@one.csv", "--servers", "0"],
        2,
        &["--servers", "1..=100000"],
    ),
    (
        "place segments 0",
        &["place", "@one.csv", "--max-segments", "0"],
        2,
        &["--max-segments", "1..=10000"],
    ),
    (
        "effbw delay 0",
        &[
            "curve", "effbw", "@one.csv", "--stage", "net-in", "--delay", "0",
        ],
        2,
        &["--delay", "more than 0s"],
    ),
    (
        "rb prune 0",
        &[
            "curve", "rb", "@one.csv", "--stage", "net-in", "--prune", "0",
        ],
        2,
        &["--prune", "1..=10000"],
    ),
    (
        "mmpp states 0",
        &[
            "curve",
            "mmpp",
            "@one.csv",
            "--stage",
            "net-in",
            "--max-states",
            "0",
        ],
        2,
        &["--max-states"],
    ),
    (
        "mmpp band 0",
        &[
            "curve",
            "mmpp",
            "@one.csv",
            "--stage",
            "net-in",
            "--band-factor",
            "0",
        ],
        2,
        &["--band-factor", "more than 0"],
    ),
    (
        "mmpp step 0",
        &[
            "curve", "mmpp", "@one.csv", "--stage", "net-in", "--step", "0s",
        ],
        2,
        &["--step", "1ns"],
    ),
    (
        "simulate mtu",
        &["simulate", "@two-servers.toml", "--mtu", "10"],
        2,
        &["--mtu", "64..=1048576"],
    ),
    (
        "simulate window",
        &["simulate", "@two-servers.toml", "--window", "0s"],
        2,
        &["--window", "1ms"],
    ),
    (
        "gen rate 0",
        &[
            "trace", "gen", "--model", "poisson", "--seed", "1", "--rate", "0", "-o", "-",
        ],
        2,
        &["--rate", "more than 0"],
    ),
    (
        "gen rate 1e10",
        &[
            "trace", "gen", "--model", "poisson", "--seed", "1", "--rate", "1e10", "-o", "-",
        ],
        2,
        &["--rate", "at most 1000000000"],
    ),
    (
        "gen too many",
        &[
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--rate",
            "1e5",
            "--duration",
            "500s",
            "-o",
            "-",
        ],
        2,
        &["at most 20000000"],
    ),
    (
        "gen duration 0",
        &[
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--duration",
            "0s",
            "-o",
            "-",
        ],
        2,
        &["--duration", "more than 0s"],
    ),
    (
        "gen size 2GiB",
        &[
            "trace", "gen", "--model", "poisson", "--seed", "1", "--size", "2GiB", "-o", "-",
        ],
        2,
        &["--size", "1B to 1GiB"],
    ),
    (
        "gen read fraction",
        &[
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--read-fraction",
            "1.5",
            "-o",
            "-",
        ],
        2,
        &["--read-fraction", "0 to 1"],
    ),
    (
        "gen shape 1",
        &[
            "trace", "gen", "--model", "pareto", "--seed", "1", "--shape", "1", "-o", "-",
        ],
        2,
        &["--shape", "more than 1"],
    ),
    (
        "split at 0",
        &["trace", "split", "@one.csv", "--at", "0", "--out-dir", "@"],
        2,
        &["--at", "more than 0"],
    ),
    (
        "probe count 0",
        &["probe", "sweep", "--count", "0"],
        2,
        &["--count", "1..=1000000000"],
    ),
    (
        "probe timeout 2h",
        &["probe", "client", "--timeout", "120min"],
        2,
        &["--timeout", "at most 1h"],
    ),
    (
        "svg of too many traces",
        &[
            "trace", "stats", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv", "@one.csv",
            "@one.csv", "@one.csv", "@one.csv", "@one.csv", "--svg", "@x.svg",
        ],
        2,
        &["at most 64 traces"],
    ),
    // ---- traces: the file, the line, the value, what is accepted ----
    (
        "endless line",
        &["trace", "stats", "/dev/zero"],
        2,
        &["/dev/zero line 1", "longer than 65536 bytes"],
    ),
    (
        "long line",
        &["trace", "stats", "@long-line.csv"],
        2,
        &["long-line.csv line 1", "longer than 65536"],
    ),
    (
        "folder as trace",
        &["trace", "stats", "@folder.csv"],
        2,
        &["folder.csv", "is a folder"],
    ),
    (
        "missing trace",
        &["trace", "stats", "@nosuch.csv"],
        2,
        &["nosuch.csv", "No such file"],
    ),
    (
        "empty trace",
        &["trace", "stats", "@empty.csv"],
        2,
        &["empty.csv", "no requests"],
    ),
    (
        "only comments",
        &["trace", "stats", "@comments.csv"],
        2,
        &["comments.csv", "no requests"],
    ),
    (
        "bad header",
        &["trace", "stats", "@header.csv"],
        2,
        &["header.csv line 1", "time_s,size_bytes,op"],
    ),
    (
        "unsorted",
        &["trace", "stats", "@unsorted.csv"],
        2,
        &["unsorted.csv line 2", "1000"],
    ),
    (
        "zero size",
        &["trace", "stats", "@zero.csv"],
        2,
        &["zero.csv line 1", "0x0"],
    ),
    (
        "size above 1 TiB",
        &["trace", "stats", "@huge-size.csv"],
        2,
        &["huge-size.csv line 1", "1 TiB"],
    ),
    (
        "size beyond 64 bits",
        &["trace", "stats", "@overflow.csv"],
        2,
        &["overflow.csv line 1", "0x1ffffffffffffffff"],
    ),
    (
        "unknown op",
        &["trace", "stats", "@op.csv"],
        2,
        &["op.csv line 1", "Delete", "DiskWrite"],
    ),
    (
        "two fields",
        &["trace", "stats", "@fields.csv"],
        2,
        &["fields.csv line 1", "expected 3"],
    ),
    (
        "binary",
        &["trace", "stats", "@binary.csv"],
        2,
        &["binary.csv line 1"],
    ),
    (
        "csv negative size",
        &["trace", "stats", "@csv-negative.csv"],
        2,
        &["csv-negative.csv line 2", "-3"],
    ),
    (
        "csv NaN time",
        &["trace", "stats", "@csv-nan.csv"],
        2,
        &["csv-nan.csv line 2", "NaN"],
    ),
    // ---- scenarios ----
    (
        "missing scenario",
        &["bound", "@nosuch.toml"],
        2,
        &["nosuch.toml"],
    ),
    (
        "TOML syntax",
        &["bound", "@syntax.toml"],
        2,
        &["syntax.toml", "line 1"],
    ),
    (
        "unknown key",
        &["bound", "@unknown-key.toml"],
        2,
        &["unknown-key.toml", "speed"],
    ),
    (
        "unknown host",
        &["bound", "@unknown-host.toml"],
        2,
        &["unknown-host.toml", "nowhere"],
    ),
    (
        "rate without unit",
        &["bound", "@link-unit.toml"],
        2,
        &["link-unit.toml", "\"fast\"", "Gbit"],
    ),
    (
        "scenario JSON shape",
        &["bound", "@scenario.json"],
        2,
        &["scenario.json"],
    ),
    (
        "missing trace of a tenant",
        &["bound", "@missing-trace.toml"],
        2,
        &["nosuch.csv", "not found", "relative to the scenario"],
    ),
    (
        "folder as a tenant's trace",
        &["bound", "@folder-trace.toml"],
        2,
        &["folder.csv", "is a folder"],
    ),
    // ---- workloads, decisions, allocation input ----
    (
        "workloads header",
        &["place", "@workloads-header.csv"],
        2,
        &["workloads-header.csv"],
    ),
    (
        "empty workload name",
        &["place", "@workloads-empty-name.csv"],
        2,
        &["workloads-empty-name.csv:2", "name is empty"],
    ),
    (
        "workload trace missing",
        &["place", "@workloads-missing.csv"],
        2,
        &["workloads-missing.csv:2", "nosuch.csv"],
    ),
    (
        "workload trace folder",
        &["place", "@workloads-folder.csv"],
        2,
        &["workloads-folder.csv:2", "is a folder"],
    ),
    (
        "workload slo",
        &["place", "@workloads-slo.csv"],
        2,
        &["workloads-slo.csv:2"],
    ),
    (
        "workload percentile",
        &["place", "@workloads-percentile.csv"],
        2,
        &["workloads-percentile.csv:2", "100"],
    ),
    (
        "more servers than the scenario has",
        &["place", "@two-servers.toml", "--servers", "5"],
        2,
        &["--servers 5", "give at most"],
    ),
    (
        "decisions for an unknown flow",
        &[
            "simulate",
            "@two-servers.toml",
            "--decisions",
            "@decisions-flow.json",
        ],
        2,
        &["nosuch"],
    ),
    (
        "decisions syntax",
        &[
            "simulate",
            "@two-servers.toml",
            "--decisions",
            "@decisions-syntax.json",
        ],
        2,
        &["decisions-syntax.json"],
    ),
    (
        "alloc syntax",
        &["alloc", "@alloc-syntax.json"],
        2,
        &["alloc-syntax.json"],
    ),
    (
        "alloc negative capacity",
        &["alloc", "@alloc-capacity.json"],
        2,
        &["capacity", "-5"],
    ),
    (
        "alloc unknown resource",
        &["alloc", "@alloc-resource.json"],
        2,
        &["\"q\""],
    ),
    (
        "alloc weight 1e-100",
        &["alloc", "@alloc-weight.json"],
        2,
        &["\"f\"", "1e-100", "1e-3 to 1e3"],
    ),
    (
        "alloc flow of an unlisted tenant",
        &["alloc", "@alloc-tenant.json"],
        2,
        &["unknown tenant \"b\"", "known: a"],
    ),
    (
        "alloc missing input",
        &["alloc", "@nosuch.json"],
        2,
        &["nosuch.json"],
    ),
    // ---- files we write: the path, and why ----
    (
        "out into a missing folder",
        &[
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--duration",
            "1s",
            "-o",
            "@no/such/t.csv",
        ],
        2,
        &["no/such/t.csv", "does not exist"],
    ),
    (
        "out onto a folder",
        &[
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--duration",
            "1s",
            "-o",
            "@folder.csv",
        ],
        2,
        &["folder.csv", "is a folder"],
    ),
    (
        "out to a full disk",
        &[
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--duration",
            "1s",
            "-o",
            "/dev/full",
        ],
        2,
        &["/dev/full", "No space left"],
    ),
    (
        "svg into a missing folder",
        &[
            "curve",
            "rb",
            "@one.csv",
            "--stage",
            "net-in",
            "--svg",
            "@no/r.svg",
        ],
        2,
        &["no/r.svg", "does not exist"],
    ),
    (
        "experiment out onto a folder",
        &[
            "experiment",
            "bounds-tenants",
            "--tenants",
            "1",
            "--out",
            "@folder.csv",
        ],
        2,
        &["folder.csv", "is a folder"],
    ),
    (
        "decisions into a missing folder",
        &[
            "admit",
            "@two-servers.toml",
            "--decisions-out",
            "@no/d.json",
        ],
        2,
        &["no/d.json", "does not exist"],
    ),
    (
        "split into a file",
        &["trace", "split", "@one.csv", "--out-dir", "@not-a-folder"],
        2,
        &["not-a-folder"],
    ),
];

fn resolve(files: &Files, args: &[&str]) -> Vec<String> {
    args.iter()
        .map(|a| match a.strip_prefix('@') {
            Some("") => files.path(""),
            Some(name) => files.path(name),
            None => a.to_string(),
        })
        .collect()
}

#[test]
fn every_bad_input_is_refused_with_its_cause() {
    assert!(CASES.len() >= 60, "{} cases", CASES.len());
    let files = Files::new();
    let mut failures = Vec::new();
    for (what, args, code, fragments) in CASES {
        let args = resolve(&files, args);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = tailbound(&refs);
        let err = stderr(&out);
        let missing: Vec<_> = fragments.iter().filter(|f| !err.contains(*f)).collect();
        if out.status.code() != Some(*code) || !missing.is_empty() || err.contains("panicked") {
            failures.push(format!(
                "{what}: exit {:?} (expected {code}), missing {missing:?} in:\n{err}",
                out.status.code()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs the binary with stdout on `stdout`.
fn run_to(args: &[String], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailbound"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// Commands that print a table, JSON, help or a trace on stdout, and their exit code when
/// all goes well.
fn printers(files: &Files) -> Vec<(Vec<String>, i32)> {
    let s = |v: &[&str]| resolve(files, v);
    vec![
        (s(&["trace", "stats", "@one.csv"]), 0),
        (s(&["trace", "stats", "@one.csv", "--json"]), 0),
        (
            s(&[
                "trace",
                "gen",
                "--model",
                "poisson",
                "--seed",
                "1",
                "--duration",
                "10s",
                "-o",
                "-",
            ]),
            0,
        ),
        (s(&["demo", "--print-scenario"]), 0),
        (s(&["--help"]), 0),
        (s(&["bound", "@two-servers.toml"]), 0),
        (
            s(&[
                "alloc",
                "bench",
                "--vms",
                "10",
                "--servers",
                "2",
                "--appliances",
                "1",
                "--runs",
                "1",
            ]),
            0,
        ),
    ]
}

/// `tailbound ... | head -1`: a reader that went away ends the command quietly, with the exit
/// code it would have had (here, stdout's reader is gone before the command starts).
#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    let files = Files::new();
    for (args, code) in printers(&files) {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = run_to(&args, Stdio::from(writer));
        let err = stderr(&out);
        let expected = if args[0] == "bound" {
            // bound's outcome: 0 when every tenant meets its SLO, 1 otherwise
            out.status.code().filter(|c| *c == 0 || *c == 1)
        } else {
            Some(code)
        };
        assert_eq!(out.status.code(), expected, "{args:?}: {err}");
        assert!(
            out.status.code().is_some(),
            "{args:?} was killed by a signal"
        );
        assert!(
            !err.contains("error") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// `tailbound ... > /dev/full`: a full disk is an error naming stdout (exit 2), never a panic.
#[test]
fn a_full_disk_on_stdout_is_exit_2() {
    let files = Files::new();
    for (args, _) in printers(&files) {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = run_to(&args, Stdio::from(full));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("stdout") && err.contains("No space left"),
            "{args:?}: {err}"
        );
    }
}

/// What `trace stats --json` reports as the total of two 1 TiB requests is exact (it used to
/// saturate silently at 2⁶⁴ − 1 for larger sums).
#[test]
fn total_bytes_is_exact() {
    let files = Files::new();
    let r: tailbound_cli::report::TraceStatsReport =
        crate::common::json(&["trace", "stats", &files.path("big.csv"), "--json"]);
    assert_eq!(r.traces[0].total_bytes, 2 * 0xff_ffff_ffffu128);
}

/// A file appears whole or not at all: a failed write leaves the old file, an interrupted
/// `trace gen -o` leaves either nothing or the whole trace, and no temporary file stays.
#[test]
fn files_appear_whole_or_not_at_all() {
    let files = Files::new();
    let dir = files.dir.path();
    // a write that fails does not touch what was there
    let existing = dir.join("old.csv");
    std::fs::write(&existing, "1,0x1,Get\n").unwrap();
    let out = tailbound(&[
        "trace",
        "gen",
        "--model",
        "poisson",
        "--seed",
        "1",
        "--seed",
        "1",
        "--rate",
        "1e10",
        "-o",
        existing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "1,0x1,Get\n");

    // interrupted while generating or writing about a million requests (20 MB)
    let target = dir.join("gen.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tailbound"))
        .args([
            "trace",
            "gen",
            "--model",
            "poisson",
            "--seed",
            "1",
            "--rate",
            "2000",
            "--duration",
            "500s",
        ])
        .arg("-o")
        .arg(&target)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // whenever the signal lands (before, during or after the write), the invariant holds
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) on the child's own pid with SIGTERM; no memory is involved.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    // the exit status is not part of the invariant: a signal that lands after the rename
    // still ends the process by the signal, with the file already whole in place
    child.wait().unwrap();
    if target.exists() {
        let text = std::fs::read_to_string(&target).unwrap();
        let t = tailbound_trace::parse_trace("gen.csv", text.as_bytes()).unwrap();
        assert!(t.requests.len() > 990_000, "{}", t.requests.len());
    }
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

/// `place --decisions-out` on the bundled scenario writes decisions in the scenario's own terms
/// (its hosts, only the flows each tenant has), which `simulate --decisions` replays (it used to
/// reject a storage limit for a tenant without storage).
#[test]
fn placement_decisions_of_the_bundled_example_replay() {
    let dir = tempfile::tempdir().unwrap();
    let decisions = dir.path().join("d.json");
    let scenario = two_servers();
    let (s, d) = (scenario.to_str().unwrap(), decisions.to_str().unwrap());
    let out = tailbound(&["place", s, "--decisions-out", d]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written: tailbound_model::Decisions =
        serde_json::from_str(&std::fs::read_to_string(&decisions).unwrap()).unwrap();
    let web = written.tenants.iter().find(|t| t.name == "web").unwrap();
    assert!(
        web.limits.iter().all(|l| l.flow.starts_with("web-")),
        "{web:?}"
    );
    assert!(web
        .limits
        .iter()
        .all(|l| l.stage != tailbound_model::Stage::Storage));
    let out = tailbound(&["simulate", s, "--decisions", d]);
    // 0 or 1 is the replay's verdict on the SLOs; 2 would be decisions it cannot apply
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
}
