//! One request of a trace: when it arrived, how large it is, and what it does.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The operation of a request, in the vocabulary of the trace it came from.
///
/// Key-value traces (SNC-Meister) say `Get`/`Put`; block traces (WorkloadCompactor, the MSR
/// production traces) say `DiskRead`/`DiskWrite`. Both vocabularies are kept so that a trace
/// written back out (e.g. by `trace split`) reads exactly as it came in; [`Op::kind`] gives
/// the direction that the work functions use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    Get,
    Put,
    DiskRead,
    DiskWrite,
}

/// Whether a request reads or writes data: what the work functions care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    Read,
    Write,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Get, Op::Put, Op::DiskRead, Op::DiskWrite];

    pub fn kind(self) -> OpKind {
        match self {
            Op::Get | Op::DiskRead => OpKind::Read,
            Op::Put | Op::DiskWrite => OpKind::Write,
        }
    }

    pub fn is_read(self) -> bool {
        self.kind() == OpKind::Read
    }

    /// The name as written in traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Get => "Get",
            Op::Put => "Put",
            Op::DiskRead => "DiskRead",
            Op::DiskWrite => "DiskWrite",
        }
    }

    /// Parses an op name, ignoring ASCII case. Returns `None` for anything else.
    pub fn parse_bytes(s: &[u8]) -> Option<Op> {
        Op::ALL
            .into_iter()
            .find(|op| op.as_str().as_bytes().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error for an op name that is none of `Get`, `Put`, `DiskRead`, `DiskWrite`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown op {0:?}; expected one of Get, Put, DiskRead, DiskWrite (any case)")]
pub struct UnknownOp(pub String);

impl FromStr for Op {
    type Err = UnknownOp;
    fn from_str(s: &str) -> Result<Op, UnknownOp> {
        Op::parse_bytes(s.trim().as_bytes()).ok_or_else(|| UnknownOp(s.to_string()))
    }
}

/// One request of a tenant's trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// arrival time since the start of the trace [ns]
    pub arrival_ns: u64,
    /// bytes requested (read) or carried (write) [bytes], always > 0
    pub size_bytes: u64,
    pub op: Op,
}

impl Request {
    /// arrival time [s]
    pub fn arrival_s(&self) -> f64 {
        self.arrival_ns as f64 * 1e-9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_names_parse_in_any_case() {
        assert_eq!("diskread".parse::<Op>(), Ok(Op::DiskRead));
        assert_eq!("PUT".parse::<Op>(), Ok(Op::Put));
        assert_eq!(Op::parse_bytes(b"gEt"), Some(Op::Get));
        assert!("Delete".parse::<Op>().is_err());
        assert!(Op::DiskRead.is_read() && Op::Get.is_read());
        assert!(!Op::DiskWrite.is_read() && !Op::Put.is_read());
    }
}
