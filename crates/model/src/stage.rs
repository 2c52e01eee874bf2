//! The stages a request crosses, each of which it loads with work.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A queue a tenant's requests cross on their way to the server and back.
///
/// Work is measured per stage: bytes on the network stages, device busy-seconds on storage
/// (workload-compactor §2.2 and §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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

impl Stage {
    pub const ALL: [Stage; 3] = [Stage::NetIn, Stage::Storage, Stage::NetOut];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::NetIn => "net-in",
            Stage::Storage => "storage",
            Stage::NetOut => "net-out",
        }
    }

    /// The unit of work at this stage, for tables and plot axes.
    pub fn work_unit(self) -> &'static str {
        match self {
            Stage::NetIn | Stage::NetOut => "bytes",
            Stage::Storage => "busy-s",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stage {0:?}; expected net-in, storage or net-out")]
pub struct UnknownStage(pub String);

impl FromStr for Stage {
    type Err = UnknownStage;
    fn from_str(s: &str) -> Result<Stage, UnknownStage> {
        Stage::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownStage(s.to_string()))
    }
}
