use std::path::PathBuf;
use std::process::{Command, Output};

/// `shared/` beside the repository (present on developer machines and in CI).
pub fn shared() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    assert!(
        dir.join("traces/msr-production").is_dir(),
        "{} is missing: the tests read the production traces from shared/ beside the repository",
        dir.display()
    );
    dir
}

pub fn production(name: &str) -> PathBuf {
    shared().join("traces/msr-production").join(name)
}

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
