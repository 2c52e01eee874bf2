//! The status page in a real browser: headless Chromium (Debian's `chromium`) loads
//! `/status` from the real server and the DOM it built holds the tenants, queues and
//! decisions. Without Chromium the test is skipped, except under `CI=true`, where it fails.

use crate::common::{host, tenant, Server};
use hyper::Method;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tailbound_service::api::Admitted;
use tailbound_service::Config;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The DOM Chromium builds from `url` (bounded: 90 s, then the browser is killed by PID).
fn dump_dom(browser: &PathBuf, url: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("dom.html");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "chromium exited with {status}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(&out_path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_shows_tenants_queues_and_decisions_in_chromium() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "chromium is missing under CI=true: apt-get install -y chromium"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install -y chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&dir.path().join("s.db"), Config::default()).await;
    let c = s.admin();
    host(&c, "server1", "100Mbit", None).await;
    for i in 0..3 {
        host(&c, &format!("client{i}"), "1Gbit", None).await;
        let t = tenant(
            &format!("t{i}"),
            &format!("client{i}"),
            Some("server1"),
            "200ms",
            1000.0,
        );
        let _: (u16, Admitted) = c.call(Method::POST, "/v1/tenants", Some(&t)).await.unwrap();
    }
    let _: (u16, serde_json::Value) = c
        .call(
            Method::POST,
            "/v1/vdcs",
            Some(&crate::common::new_vdc("dc1")),
        )
        .await
        .unwrap();
    let _: (u16, serde_json::Value) = c
        .call(
            Method::POST,
            "/v1/vdcs/dc1/enforcers/hv-7/register",
            Some(&serde_json::json!({"flows": ["A/a-kv", "B/b-kv"]})),
        )
        .await
        .unwrap();
    let url = format!("{}/status", s.url());
    let dom = tokio::task::spawn_blocking(move || dump_dom(&browser, &url))
        .await
        .unwrap();
    assert!(dom.contains("<title>tailbound status</title>"), "{dom}");
    let table = |id: &str| {
        let start = dom
            .find(&format!("<table id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no table {id}: {dom}"));
        let end = start + dom[start..].find("</table>").unwrap();
        dom[start..end].to_string()
    };
    let tenants = table("tenants");
    assert!(
        tenants.contains("<td>t0</td>") && tenants.contains("<td>t1</td>"),
        "{tenants}"
    );
    assert!(
        !tenants.contains("<td>t2</td>"),
        "t2 was rejected: {tenants}"
    );
    assert!(tenants.contains("p99.9 ≤ 200.000 ms"), "{tenants}");
    let queues = table("queues");
    assert!(queues.contains("<td>server1-out</td>"), "{queues}");
    let decisions = table("decisions");
    assert!(
        decisions.contains("<td>t2</td><td>rejected</td>"),
        "{decisions}"
    );
    assert_eq!(
        decisions.matches("<td>admitted</td>").count(),
        2,
        "{decisions}"
    );
    let vdcs = table("vdcs");
    assert!(
        vdcs.contains("<td>dc1</td><td>A, B</td><td>2</td>"),
        "{vdcs}"
    );
    let enforcers = table("enforcers");
    assert!(
        enforcers.contains("<td>dc1</td><td>hv-7</td><td>A/a-kv, B/b-kv</td><td>0</td>"),
        "{enforcers}"
    );
    s.stop().await;
}
