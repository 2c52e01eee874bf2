use std::io::{BufRead, BufReader};
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

/// A child process killed when dropped (a failing test leaves nothing behind).
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Running {
    pub fn spawn(args: &[&str]) -> Running {
        let child = Command::new(env!("CARGO_BIN_EXE_tailbound"))
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Running(child)
    }

    /// stderr lines until one contains `until` (bounded by time).
    pub fn lines_until(&mut self, until: &str) -> Vec<String> {
        let err = self.0.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut lines = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
                let done = l.contains(until);
                lines.push(l);
                if done {
                    return lines;
                }
            }
        }
        panic!("no {until:?} on stderr: {lines:?}");
    }

    /// SIGTERM, then the exit code (bounded wait).
    pub fn stop(mut self) -> Option<i32> {
        // SAFETY: kill has no memory-safety preconditions; the pid is our child's.
        unsafe {
            libc::kill(self.0.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(s)) = self.0.try_wait() {
                return s.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }
}

/// The address after `on ` in a line like `... on 127.0.0.1:1234 ...` or `on http://...`.
pub fn addr_in(line: &str) -> String {
    let rest = line.split(" on ").nth(1).unwrap();
    let rest = rest.trim_start_matches("http://");
    rest.split([' ', ',']).next().unwrap().to_string()
}
