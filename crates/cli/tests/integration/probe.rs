//! `tailbound probe`: real exchanges over loopback and between network namespaces (small
//! counts), bad arguments, and interrupted runs that must leave no namespace or process behind.
//! Tests that need root and iproute2 say why and return otherwise (under `CI=true` they fail).

use crate::common::{json, stderr, tailbound};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tailbound_dataplane::netns;
use tailbound_dataplane::probe::{IoMode, ProbeResult, Protocol, SweepReport};

fn can_netns() -> bool {
    tailbound_testdata::root_or_skip("network namespaces")
}

/// Polls `cond` until it holds or `limit` passes; returns whether it held.
fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tailbound"))
        .args(args)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tailbound binary starts")
}

/// Namespaces created by process `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("{}{pid}-", netns::PREFIX);
    netns::list()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}

/// Processes whose parent is `pid` or whose command line names one of its namespaces.
fn processes_of(pid: u32) -> Vec<String> {
    let marker = format!("{}{pid}-", netns::PREFIX);
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let dir = entry.path();
        let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(|v| v.trim().to_string());
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if ppid.as_deref() == Some(&pid.to_string()) || cmdline.contains(&marker) {
            found.push(format!("{}: {cmdline}", dir.display()));
        }
    }
    found
}

#[test]
fn probe_run_over_loopback_prints_percentiles_as_json() {
    let r: ProbeResult = json(&[
        "probe",
        "run",
        "--protocol",
        "tcp",
        "--size",
        "1KB",
        "--pairs",
        "2",
        "--count",
        "400",
        "--warmup",
        "20",
        "--json",
    ]);
    assert_eq!(r.spec.protocol, Protocol::Tcp);
    assert_eq!((r.spec.size_bytes, r.spec.pairs), (1000, 2));
    assert_eq!(r.rtt.count, 400);
    assert!(r.rtt.p50_us > 0.0 && r.rtt.p50_us <= r.rtt.p99_9_us);
    assert!(r.rtt.max_over_median >= 1.0);
    assert_eq!(r.setup.kind, "loopback");
}

#[test]
fn probe_run_open_loop_nonblocking_udp_writes_csv_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, svg) = (dir.path().join("r.csv"), dir.path().join("r.svg"));
    let out = tailbound(&[
        "probe",
        "run",
        "--protocol",
        "udp",
        "--io",
        "nonblocking",
        "--rate",
        "5000",
        "--count",
        "300",
        "--warmup",
        "0",
        "--csv",
        csv.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("p99.9") && table.contains("udp 1KiB x1 nonblocking @5000/s"),
        "{table}"
    );
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv
        .lines()
        .nth(1)
        .unwrap()
        .starts_with("udp,nonblocking,1024,1,open-loop,5000"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn separate_server_and_client_processes_exchange_over_tcp_and_udp() {
    let mut server = spawn(&[
        "probe",
        "server",
        "--bind",
        "127.0.0.1",
        "--port",
        "0",
        "--io",
        "nonblocking",
    ]);
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "listening tcp 127.0.0.1:P udp 127.0.0.1:P (nonblocking)"
    let words: Vec<&str> = line.split_whitespace().collect();
    let result = std::panic::catch_unwind(|| {
        assert_eq!(words.first(), Some(&"listening"), "{line:?}");
        for (protocol, addr) in [("tcp", words[2]), ("udp", words[4])] {
            let r: ProbeResult = json(&[
                "probe",
                "client",
                "--server",
                addr,
                "--protocol",
                protocol,
                "--count",
                "200",
                "--warmup",
                "0",
                "--pairs",
                "2",
                "--json",
            ]);
            assert_eq!(r.rtt.count + r.lost, 200, "{protocol}");
        }
    });
    let _ = server.kill();
    let _ = server.wait();
    result.unwrap();
}

#[test]
fn bad_arguments_give_clear_errors() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["probe", "run", "--size", "0"],
            vec!["invalid payload size 0"],
        ),
        (
            vec!["probe", "run", "--pairs", "0"],
            vec!["invalid number of pairs 0"],
        ),
        (
            vec!["probe", "run", "--protocol", "sctp"],
            vec!["unknown protocol \"sctp\"", "tcp or udp"],
        ),
        (
            vec!["probe", "run", "--protocol", "rdma"],
            vec!["rdma is not available"],
        ),
        (
            vec!["probe", "run", "--io", "magic"],
            vec!["unknown I/O mode"],
        ),
        (
            vec!["probe", "run", "--protocol", "udp", "--size", "512KiB"],
            vec!["datagram limit of 65507"],
        ),
        (vec!["probe", "run", "--rate", "0"], vec!["invalid rate"]),
        (
            vec!["probe", "run", "--count", "1", "--pairs", "2"],
            vec!["invalid count 1"],
        ),
        (
            vec!["probe", "run", "--pin-client", "4096"],
            vec!["cannot pin to cpu 4096"],
        ),
        (
            vec!["probe", "sweep", "--sizes", "64B,0"],
            vec!["invalid payload size 0"],
        ),
        (
            vec![
                "probe",
                "server",
                "--bind",
                "127.0.0.1",
                "--port",
                &port,
                "--protocol",
                "tcp",
            ],
            vec!["already in use", &port],
        ),
        (
            vec!["probe", "run", "--port", &port, "--count", "10"],
            vec!["already in use", &port],
        ),
    ];
    for (args, wants) in cases {
        let out = tailbound(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        for want in wants {
            assert!(err.contains(want), "{args:?}: {err:?} lacks {want:?}");
        }
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn sweep_over_netns_writes_json_and_svg_and_skips_large_udp() {
    if !can_netns() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("sweep.svg");
    let r: SweepReport = json(&[
        "probe",
        "sweep",
        "--netns",
        "--protocols",
        "tcp,udp",
        "--io",
        "blocking,nonblocking",
        "--sizes",
        "64B,1KiB,512KiB",
        "--pairs",
        "1,2",
        "--count",
        "40",
        "--warmup",
        "4",
        "--svg",
        svg.to_str().unwrap(),
        "--json",
    ]);
    // tcp: 2 io × 2 pairs × 3 sizes; udp: 512KiB skipped.
    assert_eq!(r.results.len(), 12 + 8);
    assert_eq!(r.skipped.len(), 4);
    assert!(r.skipped.iter().all(|s| s.spec.protocol == Protocol::Udp
        && s.spec.size_bytes == 512 << 10
        && s.reason.contains("datagram limit")));
    assert!(r.results.iter().any(|x| x.spec.io == IoMode::Nonblocking));
    assert!(r
        .results
        .iter()
        .all(|x| x.setup.kind == "netns" && x.rtt.count + x.lost == 40));
    assert!(!r.rdma.available || r.rdma.detail.contains("RDMA"));
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("p99.9"));
}

/// Starts a long run over `--netns`, waits until its namespaces exist, signals it and checks
/// that it leaves no namespace and no process behind.
fn interrupted_run_leaves_nothing(signal: i32) {
    let mut child = spawn(&[
        "probe",
        "run",
        "--netns",
        "--bridge",
        "--count",
        "100000000",
        "--timeout",
        "5s",
    ]);
    let pid = child.id();
    let up = poll_until(Duration::from_secs(20), || namespaces_of(pid).len() == 3);
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(pid as i32, signal) };
    let status = child.wait().unwrap();
    assert!(up, "namespaces of {pid} never appeared");
    assert!(!status.success(), "signal {signal}: {status:?}");
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "signal {signal}");
    assert_eq!(processes_of(pid), Vec::<String>::new(), "signal {signal}");
}

#[test]
fn a_run_killed_with_sigint_or_sigterm_leaves_no_namespace_or_process() {
    if !can_netns() {
        return;
    }
    interrupted_run_leaves_nothing(libc::SIGINT);
    interrupted_run_leaves_nothing(libc::SIGTERM);
}

#[test]
fn namespaces_of_a_sigkilled_run_are_removed_by_the_next_run() {
    if !can_netns() {
        return;
    }
    let mut child = spawn(&["probe", "run", "--netns", "--count", "100000000"]);
    let pid = child.id();
    let up = poll_until(Duration::from_secs(20), || namespaces_of(pid).len() == 2);
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert!(up, "namespaces of {pid} never appeared");
    let stale = namespaces_of(pid);
    assert_eq!(stale.len(), 2, "SIGKILL leaves them behind: {stale:?}");
    let out = tailbound(&["probe", "run", "--netns", "--count", "20", "--warmup", "0"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(namespaces_of(pid), Vec::<String>::new());
    assert!(stale
        .iter()
        .all(|n| !Path::new("/var/run/netns").join(n).exists()));
}
