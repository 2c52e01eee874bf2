//! The stages a request crosses, each of which it loads with work.

use serde::{Deserialize, Serialize};

/// A queue a tenant's requests cross on their way to the server and back.
///
/// Work is measured per stage: bytes on the network stages, device busy-seconds on storage
/// (workload-compactor §2.2 and §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Stage {
    /// request direction: client NIC out → server NIC in [bytes]
    #[serde(rename = "net-in")]
    NetIn,
    /// the server's storage device [busy seconds]
    #[serde(rename = "storage")]
    Storage,
    /// response direction: server NIC out → client NIC in [bytes]
    #[serde(rename = "net-out")]
    NetOut,
}

crate::names!(Stage, "stage", {
    NetIn => "net-in",
    Storage => "storage",
    NetOut => "net-out",
});

impl Stage {
    /// The suffix of a tenant's flow at this stage (`<tenant>-req`, `-storage`, `-resp`).
    pub fn flow_suffix(self) -> &'static str {
        match self {
            Stage::NetIn => "req",
            Stage::Storage => "storage",
            Stage::NetOut => "resp",
        }
    }

    /// Whether work at this stage crosses links (bytes, carried in packets) rather than a
    /// device (busy-seconds, served whole).
    pub fn is_link(self) -> bool {
        matches!(self, Stage::NetIn | Stage::NetOut)
    }

    /// The unit of work at this stage, for tables and plot axes.
    pub fn work_unit(self) -> &'static str {
        match self {
            Stage::NetIn | Stage::NetOut => "bytes",
            Stage::Storage => "busy-s",
        }
    }
}
