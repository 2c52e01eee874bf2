//! `tailbound serve` as a child process: `kill -9` during a burst of arrivals, a restart that
//! answers exactly what was acknowledged; and `tailbound tenant add|rm|ls` against it.

use crate::common::{addr_in, stderr, tailbound, Running};
use hyper::Method;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;
use tailbound_service::api::{Admitted, Decision, TenantView};
use tailbound_service::client::ServiceClient;

const ADMIN: &str = "tb_serve-test-admin";

/// `tailbound serve` on a free port with the admin token in `token_file`, and `extra` flags.
fn spawn_serve(db: &Path, token_file: &Path, extra: &[&str]) -> Running {
    let mut args = vec![
        "serve",
        "--db",
        db.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--admin-token-file",
        token_file.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    Running::spawn(&args)
}

fn start(db: &Path, token_file: &Path) -> (Running, String) {
    let mut s = spawn_serve(db, token_file, &[]);
    let lines = s.lines_until("listening on");
    let url = format!("http://{}", addr_in(lines.last().unwrap()));
    (s, url)
}

pub(crate) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn mmpp_flow(stage: &str, per_s: f64, mean: f64) -> Value {
    json!({"stage": stage, "mmpp": {
        "step_s": 1e-5, "interval_s": 1.0,
        "states": [{"rate_per_s": per_s, "arrival_prob": per_s * 1e-5,
            "sizes": {"type": "exponential", "mean": mean},
            "intervals": 100, "requests": (per_s * 100.0) as u64, "work": per_s * 100.0 * mean}],
        "transition": [[1.0]]}})
}

/// Tenant `i` on server host s(i % 2): small enough that some dozen fit, large enough that
/// the later ones are rejected (the outcomes differ, so the log's content is checked).
fn tenant(i: usize) -> Value {
    json!({
        "name": format!("t{i}"),
        "client": "c0",
        "server": format!("s{}", i % 2),
        "slo": "20ms",
        "traffic": {"flows": [mmpp_flow("net-in", 200.0, 500.0), mmpp_flow("net-out", 1000.0, 3000.0)]}
    })
}

#[test]
fn kill_9_during_a_burst_of_arrivals_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let token = dir.path().join("admin.token");
    std::fs::write(&token, format!("{ADMIN}\n")).unwrap();
    let rt = rt();

    let (mut child, url) = start(&db, &token);
    let admin = ServiceClient::new(&url, Some(ADMIN.into()), Duration::from_secs(60)).unwrap();
    rt.block_on(async {
        for (name, link) in [("s0", "100Mbit"), ("s1", "100Mbit"), ("c0", "10Gbit")] {
            admin
                .call::<Value>(
                    Method::POST,
                    "/v1/hosts",
                    Some(&json!({"name": name, "link": link})),
                )
                .await
                .unwrap();
        }
    });
    // 60 arrivals, 6 at a time; the server is killed (SIGKILL) after the 15th answer
    let n = 60;
    let acked: BTreeMap<String, Decision> = rt.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::channel(n);
        let sem = std::sync::Arc::new(tokio::sync::Semaphore::new(6));
        for i in 0..n {
            let (c, tx, sem) = (admin.clone(), tx.clone(), sem.clone());
            tokio::spawn(async move {
                let _permit = sem.acquire_owned().await.unwrap();
                let r = c
                    .call::<Admitted>(Method::POST, "/v1/tenants", Some(&tenant(i)))
                    .await;
                let _ = tx.send(r.ok().map(|(_, a)| a.decision)).await;
            });
        }
        drop(tx);
        let mut acked = BTreeMap::new();
        let mut answers = 0;
        while let Some(r) = rx.recv().await {
            answers += 1;
            if let Some(d) = r {
                acked.insert(d.tenant.clone(), d);
            }
            if acked.len() == 15 {
                let _ = child.0.kill();
            }
        }
        assert_eq!(answers, n);
        acked
    });
    let _ = child.0.wait();
    assert!(
        acked.len() >= 15 && acked.len() < n,
        "the kill landed during the burst: {} answered",
        acked.len()
    );
    assert!(acked.values().any(|d| d.admitted) && acked.values().any(|d| !d.admitted));

    let (_child, url) = start(&db, &token);
    let admin = ServiceClient::new(&url, Some(ADMIN.into()), Duration::from_secs(60)).unwrap();
    let (tenants, log) = rt.block_on(async {
        let t: Vec<TenantView> = admin
            .call(Method::GET, "/v1/tenants", None::<&()>)
            .await
            .unwrap()
            .1;
        let d: Vec<Decision> = admin
            .call(Method::GET, "/v1/decisions?limit=1000", None::<&()>)
            .await
            .unwrap()
            .1;
        (t, d)
    });
    eprintln!(
        "{} of {n} arrivals answered before the kill ({} admitted); {} decisions in the log after the restart",
        acked.len(),
        acked.values().filter(|d| d.admitted).count(),
        log.len()
    );
    // every acknowledged decision is in the log, unchanged
    let logged: BTreeMap<String, &Decision> = log.iter().map(|d| (d.tenant.clone(), d)).collect();
    for (name, d) in &acked {
        assert_eq!(
            logged.get(name).copied(),
            Some(d),
            "acknowledged decision for {name}"
        );
    }
    // the log is whole: decisions 1..=k without a gap, each tenant at most once
    let seqs: Vec<u64> = log.iter().map(|d| d.seq).collect();
    assert_eq!(seqs, (1..=log.len() as u64).collect::<Vec<_>>());
    assert_eq!(logged.len(), log.len());
    // the admitted tenants are exactly the logged admissions (acknowledged ones among them)
    let admitted: BTreeSet<String> = tenants.iter().map(|t| t.name.clone()).collect();
    let logged_admitted: BTreeSet<String> = log
        .iter()
        .filter(|d| d.admitted)
        .map(|d| d.tenant.clone())
        .collect();
    assert_eq!(admitted, logged_admitted);
    for (name, d) in &acked {
        assert_eq!(admitted.contains(name), d.admitted, "{name}");
    }
    // a decision lost with the kill was never answered: its tenant may arrive again
    let lost: Vec<usize> = (0..n)
        .filter(|i| !logged.contains_key(&format!("t{i}")))
        .collect();
    if let Some(&i) = lost.first() {
        let (status, _): (u16, Admitted) = rt
            .block_on(admin.call(Method::POST, "/v1/tenants", Some(&tenant(i))))
            .unwrap();
        assert!(status == 200 || status == 201);
    }
}

#[test]
fn tenant_add_rm_ls_talk_to_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let token = dir.path().join("admin.token");
    std::fs::write(&token, ADMIN).unwrap();
    let model = dir.path().join("model.json");
    std::fs::write(
        &model,
        r#"{"arrival": {"model": "poisson", "rate_per_s": 1000}, "sizes": {"model": "fixed", "bytes": 4096},
            "read_fraction": 1.0, "duration_s": 20, "vocabulary": "key_value"}"#,
    )
    .unwrap();
    let (_child, url) = start(&db, &token);
    let admin = ServiceClient::new(&url, Some(ADMIN.into()), Duration::from_secs(60)).unwrap();
    rt().block_on(async {
        for (name, link) in [("s0", "100Mbit"), ("c0", "1Gbit")] {
            admin
                .call::<Value>(
                    Method::POST,
                    "/v1/hosts",
                    Some(&json!({"name": name, "link": link})),
                )
                .await
                .unwrap();
        }
    });
    let tok = token.to_str().unwrap();
    let m = model.to_str().unwrap();
    let add = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "tenant",
            "add",
            name,
            "--server",
            &url,
            "--token-file",
            tok,
            "--client",
            "c0",
            "--on",
            "s0",
            "--slo",
            "200ms",
            "--model",
            m,
        ];
        args.extend_from_slice(extra);
        tailbound(&args)
    };
    let out = add("a", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("admitted a on s0") && text.contains("token: tb_"),
        "{text}"
    );
    let out = add("b", &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let b: Admitted = serde_json::from_slice(&out.stdout).unwrap();
    assert!(b.decision.admitted);
    // a third does not fit: exit 1, the reason on stdout
    let out = add("c", &["--what-if"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("what-if: rejected c:"));
    let out = tailbound(&[
        "tenant",
        "ls",
        "--server",
        &url,
        "--token-file",
        tok,
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // a list prints as {"format", "tool", "items": [...]}
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["format"], "tailbound.tenant-list/1");
    let list: Vec<TenantView> = serde_json::from_value(page["items"].clone()).unwrap();
    assert_eq!(
        list.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    let out = tailbound(&["tenant", "rm", "a", "--server", &url, "--token-file", tok]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = tailbound(&["tenant", "ls", "--server", &url, "--token-file", tok]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("b") && !text.lines().any(|l| l.starts_with("a ")),
        "{text}"
    );
    // errors: the service's message with its field, exit 2
    let out = add("b", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("409") && stderr(&out).contains("\"b\" already exists"),
        "{}",
        stderr(&out)
    );
    let out = tailbound(&["tenant", "ls", "--server", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no token"), "{}", stderr(&out));
}

#[test]
fn host_add_ls_token_talk_to_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let token = dir.path().join("admin.token");
    std::fs::write(&token, ADMIN).unwrap();
    let (_child, url) = start(&db, &token);
    let tok = token.to_str().unwrap();
    let host = |args: &[&str]| {
        let mut all = vec!["host"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--server", &url, "--token-file", tok]);
        tailbound(&all)
    };
    let out = host(&["add", "c0", "--link", "1Gbit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "added host c0: link 125000000 bytes/s each way, no storage\n"
    );
    let out = host(&[
        "add",
        "s0",
        "--link",
        "12500000",
        "--storage",
        "1",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let s0: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&s0["format"], &s0["link_bytes_per_s"], &s0["storage_rate"]),
        (&json!("tailbound.host/1"), &json!(12500000.0), &json!(1.0))
    );
    let out = host(&["ls", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(page["format"], "tailbound.host-list/1");
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c0", "s0"]);

    // a host token reads its host's decisions, not another's; a new one replaces it
    let issue = || {
        let out = host(&["token", "c0"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let t = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(t.starts_with("tb_") && !t.contains(' '), "{t:?}");
        t
    };
    let first = issue();
    let status_of = |t: &str, path: &str| {
        let c = ServiceClient::new(&url, Some(t.into()), Duration::from_secs(60)).unwrap();
        match rt().block_on(c.call::<Value>(Method::GET, path, None::<&()>)) {
            Ok((s, _)) => s,
            Err(tailbound_service::client::ClientError::Refused { status, .. }) => status,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(status_of(&first, "/v1/hosts/c0/decisions"), 200);
    assert_eq!(status_of(&first, "/v1/hosts/s0/decisions"), 403);
    let second = issue();
    assert_ne!(first, second);
    assert_eq!(status_of(&first, "/v1/hosts/c0/decisions"), 401);
    assert_eq!(status_of(&second, "/v1/hosts/c0/decisions"), 200);

    // errors name the field or the host, exit 2
    let out = host(&["add", "c1", "--link", "fast"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("link") && stderr(&out).contains("fast"),
        "{}",
        stderr(&out)
    );
    let out = host(&["token", "nohost"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("404") && stderr(&out).contains("nohost"),
        "{}",
        stderr(&out)
    );
    let out = host(&["token", "../tenants"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("\"../tenants\""), "{}", stderr(&out));
}

/// `--log-format json`: log collectors read one JSON object per line, with the event's fields
/// as fields (here the service's start-up event, which says what state it restored).
#[test]
fn serve_logs_one_json_object_per_line_with_the_events_fields() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let token = dir.path().join("admin.token");
    std::fs::write(&token, format!("{ADMIN}\n")).unwrap();
    let mut s = spawn_serve(&db, &token, &["-v", "--log-format", "json"]);
    let lines = s.lines_until("listening on");
    let (banner, logs) = lines.split_last().unwrap();
    assert!(banner.contains("listening on"), "{banner}");
    let logs: Vec<Value> = logs
        .iter()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let restored = logs
        .iter()
        .find(|v| v["fields"]["message"] == "state restored")
        .unwrap_or_else(|| panic!("no start-up event in {logs:?}"));
    assert_eq!(restored["level"], "INFO", "{restored}");
    assert_eq!(restored["fields"]["tenants"], 0, "{restored}");
    assert_eq!(restored["fields"]["hosts"], 0, "{restored}");
    // SIGTERM right after the banner stops it cleanly: the handlers are installed before the
    // banner (they were installed on the first poll after it, and this signal killed it)
    assert_eq!(s.stop(), Some(0));
}
