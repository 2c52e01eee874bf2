use std::process::{Command, Output};

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
