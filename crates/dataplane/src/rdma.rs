//! RDMA detection. The study also measured RDMA reads; tailbound's machines have no RDMA
//! devices, so the probe only reports whether RDMA could be used and why not.

use serde::{Deserialize, Serialize};
use std::path::Path;

/// Whether this machine has RDMA devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RdmaStatus {
    pub available: bool,
    /// plain-language explanation
    pub detail: String,
}

/// Looks for RDMA devices under `/sys/class/infiniband` (where the kernel lists them).
pub fn detect() -> RdmaStatus {
    detect_in(Path::new("/sys/class/infiniband"))
}

fn detect_in(dir: &Path) -> RdmaStatus {
    let devices: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    if devices.is_empty() {
        RdmaStatus {
            available: false,
            detail: format!(
                "no RDMA devices under {} (needs an RDMA-capable NIC and its kernel driver); the probe measures TCP and UDP only",
                dir.display()
            ),
        }
    } else {
        RdmaStatus {
            available: true,
            detail: format!(
                "RDMA devices {devices:?} found, but tailbound's probe does not measure RDMA yet"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_device_directory_means_unavailable() {
        let s = detect_in(Path::new("/nonexistent/infiniband"));
        assert!(!s.available);
        assert!(s.detail.contains("no RDMA devices"), "{}", s.detail);
    }
}
