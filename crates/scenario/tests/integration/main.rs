//! The one integration-test binary of tailbound-scenario: one module per topic.

mod config;
mod errors;
mod fuzz;
mod load;
mod own;
mod topology;

use std::path::{Path, PathBuf};

/// Writes `text` to `name` inside `dir` and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A production trace path as a JSON/TOML string literal.
pub fn production(name: &str) -> String {
    tailbound_testdata::production(name)
        .display()
        .to_string()
        .replace('\\', "\\\\")
}

/// Asserts that `msg` contains every one of `wants`.
pub fn assert_mentions(msg: &str, wants: &[&str]) {
    for w in wants {
        assert!(msg.contains(w), "error {msg:?} does not mention {w:?}");
    }
}
