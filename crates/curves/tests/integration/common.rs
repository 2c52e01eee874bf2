//! Shared helpers: where the shared traces and reference outputs are.

use std::path::PathBuf;

/// `shared/` beside the repository (present on every developer machine and in CI).
pub fn shared_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    assert!(
        dir.join("traces/msr-production").is_dir(),
        "{} is missing: the tests read the production traces from shared/ beside the repository",
        dir.display()
    );
    dir
}

/// Every production trace, sorted by name.
#[allow(dead_code)]
pub fn production_traces() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(shared_dir().join("traces/msr-production"))
        .expect("readable traces dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    v.sort();
    v
}
