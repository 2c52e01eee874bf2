//! Where the test data lives: `shared/` beside the repository, holding the production traces
//! (`traces/msr-production/`) and the original tools' outputs (`reference/`).
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

#[cfg(test)]
mod tests {
    #[test]
    fn finds_the_42_production_traces() {
        assert_eq!(super::production_traces().len(), 42);
        assert!(super::production("trace0000.csv").is_file());
    }
}
