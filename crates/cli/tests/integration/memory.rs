//! Under `ulimit -v 4000000` (4 GB of address space, issue 27) the big counts and big inputs
//! an operator's automation can hand tailbound are refused with a message naming the limit,
//! within seconds: never an allocation abort (exit 134), a panic (101) or a hang.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a refusal may take (they take well under a second; loading 10 001 tenants ~2 s).
const REFUSED_WITHIN: Duration = Duration::from_secs(30);

/// Runs `tailbound args` with its address space limited to 4 GB and a time limit; returns the
/// exit code and stderr.
fn limited(args: &[&str]) -> (i32, String) {
    let start = Instant::now();
    let out = Command::new("timeout")
        .arg(REFUSED_WITHIN.as_secs().to_string())
        .args(["sh", "-c", "ulimit -v 4000000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_tailbound"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("timeout, sh and tailbound run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        start.elapsed() < REFUSED_WITHIN && code != 124,
        "tailbound {args:?} ran past {REFUSED_WITHIN:?}: {stderr}"
    );
    (code, stderr)
}

/// A scenario of `n` synthetic tenants sharing one link.
fn many_tenants(dir: &Path, n: usize) -> String {
    let mut text = String::from(
        "[[hosts]]\nname = \"c\"\nlink = \"100Gbit\"\n\n[[hosts]]\nname = \"s\"\nlink = \"100Gbit\"\n",
    );
    for i in 0..n {
        text += &format!(
            "\n[[tenants]]\nname = \"t{i}\"\nclient = \"c\"\nserver = \"s\"\nslo = \"50ms\"\n\
             seed = {i}\nmodel = {{ arrival = {{ model = \"poisson\", rate_per_s = 10 }}, \
             sizes = {{ model = \"exponential\", mean_bytes = 1000 }}, read_fraction = 0.5, \
             duration_s = 2, vocabulary = \"key_value\" }}\n"
        );
    }
    let path = dir.join("many.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn big_counts_and_inputs_are_refused_under_a_4gb_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let many = many_tenants(dir.path(), 10_001);
    let cases: &[(&[&str], &str)] = &[
        (&["trace", "stats", "/dev/zero"], "longer than 65536 bytes"),
        (
            &[
                "experiment",
                "admission",
                "--traces",
                "/nonexistent",
                "--runs",
                "100000000",
            ],
            "1..=1000",
        ),
        (
            &[
                "experiment",
                "placement",
                "--traces",
                "/nonexistent",
                "--workloads",
                "100000000",
            ],
            "1..=100000",
        ),
        (&["alloc", "bench", "--vms", "4000000000"], "1..=1000000"),
        (
            &["experiment", "bounds-nines", "--max-nines", "1000"],
            "1..=100",
        ),
        (
            &["experiment", "vdc", "enforcement", "--duration", "1e12"],
            "at most 60min",
        ),
        (
            &["experiment", "bounds-dependent", "--tenants", "5000"],
            "1..=1000",
        ),
        (&["bound", &many], "at most 10000 tenants"),
        (&["bound", "/dev/zero"], "larger than 64 MiB"),
        (&["alloc", "/dev/zero"], "larger than 64 MiB"),
        (&["vdc", "check", "/dev/zero"], "larger than 64 MiB"),
        (&["place", "/dev/zero"], "larger than 64 MiB"),
    ];
    for (args, fragment) in cases {
        let (code, stderr) = limited(args);
        assert_eq!(code, 2, "tailbound {args:?} exited {code}: {stderr}");
        assert!(
            stderr.contains(fragment) && !stderr.contains("panicked"),
            "tailbound {args:?}: {stderr:?} lacks {fragment:?}"
        );
    }
}
