//! Where the test data lives: `shared/` beside the repository, holding the production traces
//! (`traces/msr-production/`) and the original tools' outputs (`reference/`); and the small
//! helpers tests of several crates share (root-only tests, decisions to enforce).
//!
//! Only tests, benches and examples depend on this crate. The data is not committed to the
//! project; it is present on every developer machine and in CI. Functions panic with a message
//! saying where they looked, since a test without its data cannot mean anything; benches use
//! [`try_shared_dir`] to skip instead.

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

/// Every production trace, sorted by name.
pub fn production_traces() -> Vec<PathBuf> {
    let dir = production_dir();
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    v.sort();
    v
}

/// The original tools' outputs (`shared/reference/`).
pub fn reference_dir() -> PathBuf {
    shared_dir().join("reference")
}

/// Whether a root-only test (network namespaces, tc) can run here: root, and every program of
/// `programs` on the PATH. Under `CI=true` it panics instead of skipping, since a skip there
/// would hide the test; elsewhere it prints "skipped" and the test returns.
pub fn root_or_skip(programs: &[&str]) -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false);
    let missing: Vec<&str> = programs
        .iter()
        .copied()
        .filter(|p| std::process::Command::new(p).arg("-V").output().is_err())
        .collect();
    if root && missing.is_empty() {
        return true;
    }
    let why = if root {
        format!(
            "{} missing (apt-get install -y iproute2)",
            missing.join(", ")
        )
    } else {
        "needs root".to_string()
    };
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true: this test cannot run ({why}); a skip would hide it");
    }
    eprintln!("skipped: {why}");
    false
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
                rate,
                burst,
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
    fn finds_the_42_production_traces() {
        assert_eq!(super::production_traces().len(), 42);
        assert!(super::production("trace0000.csv").is_file());
    }
}
