//! Integration tests of tailbound-graph: published networks, the Saihu format, the methods'
//! applicability and errors.

mod methods;
mod published;
mod saihu;

use std::path::PathBuf;

/// A file under the repository's examples/graphs/.
pub fn example(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/graphs")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Asserts `got` is within `rel` of `want`.
pub fn within(got: f64, want: f64, rel: f64, what: &str) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "{what}: got {got}, published {want} (tolerance {} %)",
        rel * 100.0
    );
}
