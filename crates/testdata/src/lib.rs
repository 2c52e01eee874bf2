//! Where the test data lives: `shared/` beside the repository, holding the production traces
//! (`traces/msr-production/`) and the original tools' outputs (`reference/`); and the small
//! helpers tests of several crates share (root-only tests, decisions to enforce).
//!
//! Only tests, benches and examples depend on this crate. The data is not committed to the
//! project; it is present on every developer machine and in CI. Functions panic with a message
//! saying where they looked, since a test without its data cannot mean anything; benches use
//! [`try_shared_dir`] to skip instead.

pub mod fuzz;
pub mod synthetic;

use std::path::PathBuf;

/// `shared/` beside the repository, if it holds the production traces.
pub fn try_shared_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    dir.join("traces/msr-production").is_dir().then_some(dir)
}

/// `shared/` beside the repository; panics if it is missing.
pub fn shared_dir() -> PathBuf {
    try_shared_dir().unwrap_or_else(|| {
        panic!(
            "{}/../../../shared/traces/msr-production is missing: tests read the production \
             traces from shared/ beside the repository",
            env!("CARGO_MANIFEST_DIR")
        )
    })
}

/// The production traces folder.
pub fn production_dir() -> PathBuf {
    shared_dir().join("traces/msr-production")
}

/// One production trace by file name, e.g. `trace0000.csv`.
pub fn production(name: &str) -> PathBuf {
    production_dir().join(name)
}

/// Whether a test that needs root and iproute2 (network namespaces, tc) can run here. When it
/// cannot, it prints why and the test returns early, except under `CI=true`, where CI runs as
/// root and such a skip would hide a failure: there it panics.
pub fn root_or_skip(what: &str) -> bool {
    let root = effective_uid() == Some(0);
    let ip = std::process::Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if root && ip {
        return true;
    }
    let why = if root {
        "iproute2 (`ip`) is not installed"
    } else {
        "it needs root"
    };
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{what}: {why}, and under CI=true a skipped root test is a failure");
    }
    eprintln!("skipped: {what}: {why}");
    false
}

/// The effective user id of this process, from `/proc/self/status`.
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The original tools' outputs (`shared/reference/`).
pub fn reference_dir() -> PathBuf {
    shared_dir().join("reference")
}

/// A tenant's decision for tests: admitted at `priority`, one token bucket per
/// `(stage, rate [bytes/s], burst [bytes])`, on flow `<name>-<stage>`.
pub fn tenant_decision(
    name: &str,
    priority: u32,
    limits: &[(tailbound_model::Stage, f64, f64)],
) -> tailbound_model::TenantDecision {
    tailbound_model::TenantDecision {
        name: name.into(),
        admitted: true,
        priority: Some(priority),
        server: None,
        limits: limits
            .iter()
            .map(|&(stage, rate, burst)| tailbound_model::RateLimit {
                flow: format!("{name}-{stage}"),
                stage,
                bucket: tailbound_model::Bucket::new(rate, burst),
            })
            .collect(),
    }
}

/// Decisions of a test policy over `tenants`.
pub fn decisions(
    tenants: Vec<tailbound_model::TenantDecision>,
    excess: tailbound_model::Excess,
) -> tailbound_model::Decisions {
    tailbound_model::Decisions {
        policy: "test".into(),
        tenants,
        excess,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_the_effective_uid() {
        assert!(super::effective_uid().is_some());
    }

    #[test]
    fn finds_the_production_traces() {
        assert!(super::production("trace0000.csv").is_file());
    }
}
