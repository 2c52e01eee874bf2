//! `tailbound vdc check|alloc|serve` and `tailbound vdc enforcer`: the operator's VDC files, the
//! controller (`vdc serve`, or a VDC of `tailbound serve`) and an enforcer in front of a real
//! memcached, as separate processes.

use crate::common::{addr_in, json, stderr, tailbound, Running};
use hyper::Method;
use std::io::{Read, Write};
use std::time::Duration;
use tailbound_allocation::Datacenter;
use tailbound_cli::report::VdcAllocReport;
use tailbound_control::protocol::Status;
use tailbound_dataplane::memcache::server::available;
use tailbound_dataplane::memcache::{Memcached, MemcachedOptions};
use tailbound_service::client::ServiceClient;

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../allocation/examples/vdc.toml"
);

#[test]
fn vdc_check_shows_paths_and_names_bad_fields() {
    let dc: Datacenter = json(&["vdc", "check", EXAMPLE, "--json"]);
    assert_eq!((dc.tenants.len(), dc.flows.len()), (2, 4));
    let out = tailbound(&["vdc", "check", EXAMPLE]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("enc(enc) → s1.up(b1.up) → s0.down → kv(kv)"),
        "{text}"
    );
    assert!(text.contains("4 flows: valid"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let spec = std::fs::read_to_string(EXAMPLE)
        .unwrap()
        .replace("guarantee = 8e7", "guarantee = -8e7");
    std::fs::write(&bad, spec).unwrap();
    let out = tailbound(&["vdc", "check", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("bad.toml") && e.contains("\"C\"") && e.contains("-80000000"),
        "{e}"
    );
}

#[test]
fn vdc_alloc_reports_both_steps_and_fails_on_overcommitted_guarantees() {
    let r: VdcAllocReport = json(&["vdc", "alloc", EXAMPLE, "--demand", "B/b1-kv=1e8", "--json"]);
    let b1 = &r.flows[0];
    assert_eq!(b1.flow, "B/b1-kv");
    // it asked for 1e8 on every hop and gets it, 8e7 of it guaranteed
    assert!(
        b1.hops.iter().all(|h| h.demand == 1e8 && h.rate == 1e8),
        "{b1:?}"
    );
    assert!(
        b1.hops.iter().all(|h| (h.local - 8e7).abs() < 1.0),
        "{b1:?}"
    );
    assert!(r
        .resources
        .iter()
        .all(|x| x.allocated <= x.capacity * (1.0 + 1e-9)));
    assert!(r.overcommitted.is_empty());
    let out = tailbound(&["vdc", "alloc", EXAMPLE, "--demand", "B/nope=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("flows: B/b1-kv, B/b2-kv, C/c1-c2, C/c1-kv"),
        "{}",
        stderr(&out)
    );
    // guarantees beyond the store's configured capacity cannot all be met: exit 1
    let dir = tempfile::tempdir().unwrap();
    let over = dir.path().join("over.toml");
    let spec = std::fs::read_to_string(EXAMPLE)
        .unwrap()
        .replace("guarantee = 8e7", "guarantee = 3.5e8")
        .replace("link = 1e8", "link = 1e9");
    std::fs::write(&over, spec).unwrap();
    let out = tailbound(&["vdc", "alloc", over.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let r: VdcAllocReport = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.overcommitted, ["kv"]);
}

fn http_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split("\r\n\r\n").nth(1).unwrap().to_string()
}

#[test]
fn controller_and_enforcer_serve_a_tenant_and_stop_cleanly() {
    if !available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "memcached is not installed"
        );
        eprintln!("skipped: memcached is not installed");
        return;
    }
    let mc = Memcached::start(&MemcachedOptions::default()).unwrap();
    let mut ctl = Running::spawn(&["vdc", "serve", EXAMPLE, "--listen", "127.0.0.1:0"]);
    let line = ctl.lines_until("controller:").pop().unwrap();
    let ctl_addr = addr_in(&line);
    let backend = mc.addr().to_string();
    let url = format!("http://{ctl_addr}");
    let mut enf = Running::spawn(&[
        "vdc",
        "enforcer",
        "--backend",
        &backend,
        "--controller",
        &url,
        "--listen",
        "C/c1-kv=127.0.0.1:0",
        "--id",
        "kv-1",
    ]);
    let lines = enf.lines_until("registered");
    let port_line = lines.iter().find(|l| l.contains("C/c1-kv on")).unwrap();
    let mut c = std::net::TcpStream::connect(addr_in(port_line)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"set k 0 0 2\r\nhi\r\nget k\r\n").unwrap();
    let want = b"STORED\r\nVALUE k 0 2\r\nhi\r\nEND\r\n";
    let mut got = vec![0; want.len()];
    c.read_exact(&mut got).unwrap();
    assert_eq!(&got, want);
    let status: Status = serde_json::from_str(&http_get(&ctl_addr, "/v1/status")).unwrap();
    assert_eq!(status.enforcers[0].id, "kv-1");
    assert_eq!(status.enforcers[0].flows, ["C/c1-kv"]);
    assert_eq!(enf.stop(), Some(0));
    assert_eq!(ctl.stop(), Some(0));
}

#[test]
fn an_enforcer_pointed_at_tailbound_serve_registers_reports_and_serves_a_tenant() {
    if !available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "memcached is not installed"
        );
        eprintln!("skipped: memcached is not installed");
        return;
    }
    const ADMIN: &str = "tb_vdc-test-admin";
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("admin.token");
    std::fs::write(&token, ADMIN).unwrap();
    let db = dir.path().join("s.db");
    let mc = Memcached::start(&MemcachedOptions::default()).unwrap();
    let mut svc = Running::spawn(&[
        "serve",
        "--db",
        db.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--admin-token-file",
        token.to_str().unwrap(),
    ]);
    let line = svc.lines_until("listening on").pop().unwrap();
    let base = format!("http://{}", addr_in(&line));
    let admin = ServiceClient::new(&base, Some(ADMIN.into()), Duration::from_secs(30)).unwrap();
    let rt = crate::serve::rt();
    let vdc = serde_json::json!({
        "name": "dc1",
        "toml": std::fs::read_to_string(EXAMPLE).unwrap(),
        "controller": {"interval_s": 0.2}
    });
    let (status, _): (u16, serde_json::Value) = rt
        .block_on(admin.call(Method::POST, "/v1/vdcs", Some(&vdc)))
        .unwrap();
    assert_eq!(status, 201);
    let backend = mc.addr().to_string();
    let url = format!("{base}/v1/vdcs/dc1");
    let mut enf = Running::spawn(&[
        "vdc",
        "enforcer",
        "--backend",
        &backend,
        "--controller",
        &url,
        "--token-file",
        token.to_str().unwrap(),
        "--listen",
        "C/c1-kv=127.0.0.1:0",
        "--id",
        "kv-1",
    ]);
    let lines = enf.lines_until("registered");
    let port_line = lines.iter().find(|l| l.contains("C/c1-kv on")).unwrap();
    let mut c = std::net::TcpStream::connect(addr_in(port_line)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(b"set k 0 0 2\r\nhi\r\nget k\r\n").unwrap();
    let want = b"STORED\r\nVALUE k 0 2\r\nhi\r\nEND\r\n";
    let mut got = vec![0; want.len()];
    c.read_exact(&mut got).unwrap();
    assert_eq!(&got, want);
    // the service's controller has the enforcer and, within a bounded wait, its reports
    let started = std::time::Instant::now();
    let status = loop {
        let (_, st): (u16, Status) = rt
            .block_on(admin.call(Method::GET, "/v1/vdcs/dc1/status", None::<&()>))
            .unwrap();
        if st.enforcers.first().is_some_and(|e| e.reports >= 2) {
            break st;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no reports from the enforcer: {st:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.enforcers[0].id, "kv-1");
    assert_eq!(status.enforcers[0].flows, ["C/c1-kv"]);
    assert!(status.epoch >= 2, "{status:?}");
    assert_eq!(enf.stop(), Some(0));
    assert_eq!(svc.stop(), Some(0));
}
