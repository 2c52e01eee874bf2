use std::path::PathBuf;
use tailbound_model::{Op, Request};
use tailbound_trace::Trace;

/// `/work/shared/traces/msr-production`, or a panic saying where it was looked for.
pub fn msr_dir() -> PathBuf {
    let shared = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared"));
    let dir = shared.join("traces/msr-production");
    assert!(
        dir.is_dir(),
        "shared traces not found at {}; the tests expect the shared folder next to the \
         workspace (../shared from the workspace root)",
        dir.display()
    );
    dir
}

pub fn trace(points: &[(u64, u64, Op)]) -> Trace {
    Trace {
        name: "handmade".into(),
        requests: points
            .iter()
            .map(|&(arrival_ns, size_bytes, op)| Request {
                arrival_ns,
                size_bytes,
                op,
            })
            .collect(),
    }
}
