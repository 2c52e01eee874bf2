//! `tailbound testbed`: a small run as JSON, bad input, and runs killed mid-way (SIGTERM:
//! nothing left; SIGKILL: memcached dies with the run, its namespaces go at the next `down`).
//! Root, iproute2 and memcached are needed; without them the tests say "skipped", except under
//! `CI=true`, where that is a failure.

use crate::common::{namespaces_of, poll_until, spawn, stderr, tailbound};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use tailbound_dataplane::netns;
use tailbound_testbed::TestbedReport;

const SMALL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../testbed/examples/two-hosts.toml"
);

static TURN: Mutex<()> = Mutex::new(());

/// The machine can run a testbed; otherwise "skipped" (a failure under `CI=true`). Tests take
/// turns.
fn turn() -> Option<MutexGuard<'static, ()>> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let tools = Command::new("ip").arg("-V").output().is_ok()
        && Command::new("memcached").arg("-V").output().is_ok();
    if !(root && tools) {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the testbed needs root, iproute2 and memcached; under CI=true this test must run"
        );
        eprintln!("skipped: the testbed needs root, iproute2 and memcached");
        return None;
    }
    Some(TURN.lock().unwrap_or_else(|e| e.into_inner()))
}

#[test]
fn a_small_testbed_run_prints_its_report_as_json() {
    let Some(_turn) = turn() else { return };
    let out = tailbound(&[
        "testbed",
        "run",
        SMALL,
        "--duration",
        "1s",
        "--scale",
        "0.5",
        "--json",
    ]);
    // exit 0 (every tenant meets its SLO) or 1 (one misses: a busy machine); never 2
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", stderr(&out));
    let r: TestbedReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.policy, "snc-meister");
    assert_eq!(r.scale, 0.5);
    assert!(!r.tenants.is_empty());
    for t in &r.tenants {
        assert_eq!(
            (t.replies, t.errors, t.timeouts),
            (t.requests, 0, 0),
            "{}",
            t.name
        );
        assert!(t.bound_s.is_some(), "admitted with a bound");
        assert!(t.slo_s > 0.0 && t.sim_p999_s > 0.0);
    }
    assert_eq!(out.status.code() == Some(1), r.violated > 0);
    // the JSON fields the issue names
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for field in [
        "name",
        "slo_s",
        "bound_s",
        "testbed_p999_s",
        "sim_p999_s",
        "violated",
    ] {
        assert!(v["tenants"][0].get(field).is_some(), "{field}");
    }
}

#[test]
fn bad_input_gives_clear_errors_and_exit_2() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["testbed", "run", SMALL, "--scale", "0"],
            "scale 0 is not allowed",
        ),
        (vec!["testbed", "run", SMALL, "--scale", "2"], "(0, 1]"),
        (
            vec!["testbed", "run", SMALL, "--aggressor", "icmp"],
            "udp, tcp or memcached",
        ),
        (
            vec!["testbed", "run", "/nonexistent.toml"],
            "/nonexistent.toml",
        ),
        (
            vec!["testbed", "up", SMALL, "--name", "Bad-Name"],
            "lowercase letters or digits",
        ),
        (
            vec!["testbed", "run", SMALL, "--aggressor", "udp@client1"],
            "\"client1\" is not a server",
        ),
    ];
    for (args, expected) in cases {
        let out = tailbound(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    if let Some(_turn) = turn() {
        let out = tailbound(&[
            "testbed",
            "run",
            SMALL,
            "--duration",
            "1s",
            "--memcached",
            "/nonexistent/memcached",
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("apt-get install -y memcached"),
            "{}",
            stderr(&out)
        );
    }
}

/// Starts a long run, waits until its memcached serves inside its namespaces; returns the
/// child, its namespaces and the memcached's pid.
fn running() -> (std::process::Child, Vec<String>, u32) {
    let child = spawn(&["testbed", "run", SMALL, "--scale", "0.1", "--json"]);
    let pid = child.id();
    let mut server = None;
    let up = poll_until(Duration::from_secs(60), || {
        let names = namespaces_of(pid);
        server = names.iter().flat_map(|n| netns::pids_in(n)).find(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/comm"))
                .is_ok_and(|c| c.trim() == "memcached")
        });
        names.len() == 3 && server.is_some()
    });
    assert!(up, "the run of {pid} never came up");
    (child, namespaces_of(pid), server.unwrap_or(0))
}

fn gone(pid: u32) -> bool {
    poll_until(Duration::from_secs(20), || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z'))
        })
    })
}

#[test]
fn a_run_stopped_with_sigterm_leaves_no_namespace_and_no_memcached() {
    let Some(_turn) = turn() else { return };
    let (mut child, names, server) = running();
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "{status:?}");
    assert!(gone(server), "memcached {server} still runs");
    assert!(names.iter().all(|n| !netns::path(n).exists()), "{names:?}");
}

#[test]
fn a_run_killed_with_sigkill_loses_its_memcached_and_down_removes_its_namespaces() {
    let Some(_turn) = turn() else { return };
    let (mut child, names, server) = running();
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    // memcached dies with the run (death signal), the namespaces stay until the next start
    assert!(gone(server), "memcached {server} outlived its run");
    assert!(names.iter().all(|n| netns::path(n).exists()), "{names:?}");
    let out = tailbound(&["testbed", "down", "--name", "cleanup", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let d: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stale: Vec<String> = serde_json::from_value(d["stale"].clone()).unwrap();
    assert!(
        names.iter().all(|n| stale.contains(n)),
        "{stale:?} lacks {names:?}"
    );
    assert!(names.iter().all(|n| !netns::path(n).exists()), "{names:?}");
}
