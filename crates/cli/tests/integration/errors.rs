//! Bad input: exit code 2 and one message naming the file, the line and the value.

use crate::common::{stderr, tailbound};

fn run_on(content: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, content).unwrap();
    let out = tailbound(&["trace", "stats", path.to_str().unwrap()]);
    (
        out.status.code().unwrap_or(-1),
        stderr(&out),
        path.to_string_lossy().into_owned(),
    )
}

#[test]
fn each_bad_trace_form_exits_2_naming_file_line_and_value() {
    let ok = "1000,0x1000,Get\n";
    let cases: &[(&str, String, &str, &str)] = &[
        ("unsorted", format!("{ok}500,0x1000,Get\n"), "2", "500"),
        ("zero size", format!("{ok}2000,0x0,Put\n"), "2", "0x0"),
        (
            "negative size",
            format!("{ok}2000,-0x10,Put\n"),
            "2",
            "-0x10",
        ),
        (
            "unknown op",
            format!("{ok}2000,0x10,Delete\n"),
            "2",
            "Delete",
        ),
        (
            "malformed time",
            format!("{ok}20x0,0x10,Get\n"),
            "2",
            "20x0",
        ),
        (
            "malformed size",
            format!("{ok}2000,0xZZ,Get\n"),
            "2",
            "0xZZ",
        ),
        (
            "csv negative size",
            "time_s,size_bytes,op\n0.5,-3,Get\n".into(),
            "2",
            "-3",
        ),
        (
            "csv unsorted",
            "time_s,size_bytes,op\n0.5,3,Get\n0.25,3,Get\n".into(),
            "3",
            "0.25",
        ),
    ];
    for (what, content, line, value) in cases {
        let (code, err, path) = run_on(content);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(err.contains(&path), "{what}: no file name in {err:?}");
        assert!(err.contains(line), "{what}: no line {line} in {err:?}");
        assert!(err.contains(value), "{what}: no value {value} in {err:?}");
        assert_eq!(err.lines().count(), 1, "{what}: printed once: {err:?}");
        assert!(!err.contains("panicked"), "{what}");
    }
    let (code, err, path) = run_on("");
    assert_eq!(code, 2);
    assert!(err.contains(&path) && err.contains("no requests"), "{err}");
}

#[test]
fn bad_arguments_exit_2() {
    let trace = tailbound_testdata::production("trace0000.csv");
    let t = trace.to_str().unwrap();
    for args in [
        vec!["curve", "rb", t, "--stage", "disk"],
        vec!["curve", "effbw", t, "--stage", "net-in", "--delay", "0ms"],
        vec!["curve", "effbw", t, "--stage", "net-in", "--delay", "fast"],
        vec!["curve", "rb", t, "--stage", "net-in", "--prune", "0"],
        vec!["trace", "split", t, "--at", "1.5"],
        vec![
            "trace", "gen", "--model", "pareto", "--shape", "0.5", "--seed", "1",
        ],
        vec![
            "trace", "gen", "--model", "poisson", "--rate", "-3", "--seed", "1",
        ],
        vec!["curve", "mmpp", t, "--stage", "net-in", "--max-states", "0"],
    ] {
        let out = tailbound(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("error"), "{args:?}");
    }
}

/// Flags are parsed by the libraries' own `FromStr` before any file is touched: a bad value
/// is named (with what is accepted) even when the input file does not exist.
#[test]
fn bad_flag_values_fail_before_any_file_is_read() {
    let missing = "/nonexistent/scenario.toml";
    for (args, want) in [
        (
            vec!["bound", missing, "--percentile", "100"],
            &["100", "strictly between 0 and 100"][..],
        ),
        (
            vec!["bound", missing, "--method", "snc"],
            &["snc", "snc-meister, snc-hop, snc-conv, dnc"][..],
        ),
        (
            vec!["admit", missing, "--policy", "silo"],
            &["silo", "silo++"][..],
        ),
        (
            vec!["simulate", missing, "--window", "3 fortnights"],
            &["3 fortnights", "duration"][..],
        ),
        (
            vec!["simulate", missing, "--replay", "last-half"],
            &["last-half", "whole, first-half, second-half"][..],
        ),
        (
            vec![
                "experiment",
                "admission",
                "--traces",
                missing,
                "--link",
                "fast",
            ],
            &["fast", "rate"][..],
        ),
    ] {
        let out = tailbound(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for w in want {
            assert!(err.contains(w), "{args:?}: no {w:?} in {err}");
        }
        assert!(
            !err.contains("nonexistent"),
            "{args:?} read the file first: {err}"
        );
    }
}
