use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tailbound_dataplane::netns;

/// Runs `tailbound` with `args`.
pub fn tailbound(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tailbound"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the tailbound binary runs")
}

/// Runs `tailbound`, asserts success, and deserializes its stdout.
pub fn json<T: serde::de::DeserializeOwned>(args: &[&str]) -> T {
    let out = tailbound(args);
    assert!(
        out.status.success(),
        "tailbound {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "tailbound {args:?} printed invalid JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Polls `cond` until it holds or `limit` passes; returns whether it held.
pub fn poll_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// Starts `tailbound` with `args` in the background (stdout and stderr piped).
pub fn spawn(args: &[&str]) -> Child {
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
pub fn namespaces_of(pid: u32) -> Vec<String> {
    let prefix = format!("{}{pid}-", netns::PREFIX);
    netns::list()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect()
}
