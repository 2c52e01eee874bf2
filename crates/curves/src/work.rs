//! Request costs: how much work one request puts on one stage.
//!
//! One trait, [`WorkFunction`], and its implementations:
//! * [`NetworkCost`]: bytes on the wire, `header + per_byte·size` by direction (the originals'
//!   estimators: request direction read `200 + 0.025·size`, write `200 + 1.1·size`; response
//!   direction read `200 + 1.1·size`, write `200 + 0.025·size`).
//! * [`StorageProfile`]: device busy-seconds `size / bandwidth(size)` from a measured profile
//!   (workload-compactor §3.1; the bundled profile is the Intel 710 SSD of
//!   `shared/reference/workload-compactor/profileSSD.txt`), linear interpolation in size.
//! * [`TokenCost`]: Pulsar's virtual cost functions (pulsar §3, Fig. 6): tokens per request,
//!   piecewise linear in size, per op kind.

use serde::{Deserialize, Serialize};
use std::path::Path;
use tailbound_model::{OpKind, Request, Stage};

/// The work one request puts on a stage, in the stage's unit.
pub trait WorkFunction {
    /// work of `req` [unit], finite and ≥ 0
    fn work(&self, req: &Request) -> f64;
    /// unit of the work, for tables and plots ("bytes", "busy-s", "tokens")
    fn unit(&self) -> &'static str;
}

/// Bytes a request puts on a network link in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NetworkCost {
    /// fixed bytes per request (headers, acknowledgement) [bytes]
    pub header_bytes: f64,
    /// bytes per requested byte for reads
    pub read_per_byte: f64,
    /// bytes per requested byte for writes
    pub write_per_byte: f64,
}

impl NetworkCost {
    /// Client → server: a read sends a small request, a write carries its data.
    pub const REQUEST_DIRECTION: NetworkCost = NetworkCost {
        header_bytes: 200.0,
        read_per_byte: 0.025,
        write_per_byte: 1.1,
    };
    /// Server → client: a read returns its data, a write is acknowledged.
    pub const RESPONSE_DIRECTION: NetworkCost = NetworkCost {
        header_bytes: 200.0,
        read_per_byte: 1.1,
        write_per_byte: 0.025,
    };
}

impl WorkFunction for NetworkCost {
    fn work(&self, req: &Request) -> f64 {
        let per_byte = match req.op.kind() {
            OpKind::Read => self.read_per_byte,
            OpKind::Write => self.write_per_byte,
        };
        self.header_bytes + per_byte * req.size_bytes as f64
    }
    fn unit(&self) -> &'static str {
        "bytes"
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    #[error("cannot read device profile {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("device profile {path} is not valid JSON of the form {{\"bandwidthTable\": [{{\"requestSize\", \"readBandwidth\", \"writeBandwidth\"}}, ...]}}: {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("device profile {path}: {message}")]
    Invalid { path: String, message: String },
}

/// One measured row of a device profile.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileRow {
    /// request size [bytes]
    pub request_size: f64,
    /// read throughput at that size [bytes/s]
    pub read_bandwidth: f64,
    /// write throughput at that size [bytes/s]
    pub write_bandwidth: f64,
}

/// A storage device's throughput as a function of request size (workload-compactor §3.1).
///
/// Work of a request = `size / bandwidth(size)` [busy seconds]; bandwidth is interpolated
/// linearly between measured sizes and held constant beyond the smallest and largest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageProfile {
    pub bandwidth_table: Vec<ProfileRow>,
    /// the device's own tail latency without queueing, when profiled [s]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
}

/// The Intel 710 SSD profile published with WorkloadCompactor.
const INTEL710_SSD: &str = include_str!("../profiles/intel710-ssd.json");

impl StorageProfile {
    /// The bundled Intel 710 SSD profile.
    pub fn intel710_ssd() -> StorageProfile {
        StorageProfile::from_json("<bundled intel710-ssd profile>", INTEL710_SSD)
            .expect("the bundled profile is valid")
    }

    /// Reads a profile in WorkloadCompactor's JSON format (`profileSSD.txt`).
    pub fn load(path: &Path) -> Result<StorageProfile, ProfileError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: name.clone(),
            source,
        })?;
        StorageProfile::from_json(&name, &text)
    }

    /// Parses and checks a profile; `name` is used in error messages.
    pub fn from_json(name: &str, text: &str) -> Result<StorageProfile, ProfileError> {
        let mut p: StorageProfile =
            serde_json::from_str(text).map_err(|source| ProfileError::Json {
                path: name.to_string(),
                source,
            })?;
        let invalid = |message: String| ProfileError::Invalid {
            path: name.to_string(),
            message,
        };
        if p.bandwidth_table.is_empty() {
            return Err(invalid(
                "bandwidthTable is empty; expected at least one row".into(),
            ));
        }
        for (i, r) in p.bandwidth_table.iter().enumerate() {
            let ok = |v: f64| v.is_finite() && v > 0.0;
            if !(ok(r.request_size) && ok(r.read_bandwidth) && ok(r.write_bandwidth)) {
                return Err(invalid(format!(
                    "row {i} (requestSize {}, readBandwidth {}, writeBandwidth {}) must be finite and positive",
                    r.request_size, r.read_bandwidth, r.write_bandwidth
                )));
            }
        }
        p.bandwidth_table
            .sort_by(|a, b| a.request_size.total_cmp(&b.request_size));
        if let Some(w) = p
            .bandwidth_table
            .windows(2)
            .find(|w| w[0].request_size == w[1].request_size)
        {
            return Err(invalid(format!(
                "requestSize {} appears twice; expected one row per size",
                w[0].request_size
            )));
        }
        if let Some(l) = p.latency_s {
            if !(l.is_finite() && l >= 0.0) {
                return Err(invalid(format!("latency_s {l} must be finite and >= 0")));
            }
        }
        Ok(p)
    }

    /// Throughput at `size` bytes for this op kind [bytes/s].
    pub fn bandwidth(&self, size_bytes: f64, kind: OpKind) -> f64 {
        let bw = |r: &ProfileRow| match kind {
            OpKind::Read => r.read_bandwidth,
            OpKind::Write => r.write_bandwidth,
        };
        let t = &self.bandwidth_table;
        let i = t.partition_point(|r| r.request_size < size_bytes);
        if i == 0 {
            return bw(&t[0]);
        }
        if i == t.len() {
            return bw(&t[t.len() - 1]);
        }
        let (a, b) = (&t[i - 1], &t[i]);
        let f = (size_bytes - a.request_size) / (b.request_size - a.request_size);
        bw(a) + f * (bw(b) - bw(a))
    }
}

impl WorkFunction for StorageProfile {
    fn work(&self, req: &Request) -> f64 {
        let size = req.size_bytes as f64;
        size / self.bandwidth(size, req.op.kind())
    }
    fn unit(&self) -> &'static str {
        "busy-s"
    }
}

/// A piecewise-linear cost in tokens as a function of request size: vertices
/// `[size_bytes, tokens]`; flat before the first vertex, extended along the last segment
/// after the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PiecewiseCost {
    pub vertices: Vec<[f64; 2]>,
}

impl PiecewiseCost {
    pub fn new(vertices: Vec<[f64; 2]>) -> Result<PiecewiseCost, String> {
        if vertices.is_empty() {
            return Err("a cost function needs at least one [size, tokens] vertex".into());
        }
        for (i, &[s, c]) in vertices.iter().enumerate() {
            if !(s.is_finite() && c.is_finite() && s >= 0.0 && c >= 0.0) {
                return Err(format!(
                    "vertex {i} [{s}, {c}] must be finite and non-negative"
                ));
            }
            if i > 0 && (s <= vertices[i - 1][0] || c < vertices[i - 1][1]) {
                return Err(format!(
                    "vertex {i} [{s}, {c}]: sizes must increase and costs must not decrease"
                ));
            }
        }
        Ok(PiecewiseCost { vertices })
    }

    /// tokens for a request of `size` bytes
    pub fn cost(&self, size: f64) -> f64 {
        let v = &self.vertices;
        if size <= v[0][0] || v.len() == 1 {
            return v[0][1];
        }
        let i = v.partition_point(|p| p[0] < size).clamp(1, v.len() - 1);
        let (a, b) = (v[i - 1], v[i]);
        a[1] + (b[1] - a[1]) / (b[0] - a[0]) * (size - a[0])
    }
}

/// Pulsar's virtual cost function: tokens per request by op kind (pulsar §3, Fig. 6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TokenCost {
    pub read: PiecewiseCost,
    pub write: PiecewiseCost,
}

impl TokenCost {
    /// Pulsar's key-value store example: a flat 8K tokens up to 8 KB, then one token per byte.
    pub fn key_value_store() -> TokenCost {
        let kv = PiecewiseCost {
            vertices: vec![[8192.0, 8192.0], [16384.0, 16384.0]],
        };
        TokenCost {
            read: kv.clone(),
            write: kv,
        }
    }

    /// Pulsar's network: one token per byte.
    pub fn network() -> TokenCost {
        let net = PiecewiseCost {
            vertices: vec![[0.0, 0.0], [1.0, 1.0]],
        };
        TokenCost {
            read: net.clone(),
            write: net,
        }
    }
}

impl WorkFunction for TokenCost {
    fn work(&self, req: &Request) -> f64 {
        let f = match req.op.kind() {
            OpKind::Read => &self.read,
            OpKind::Write => &self.write,
        };
        f.cost(req.size_bytes as f64)
    }
    fn unit(&self) -> &'static str {
        "tokens"
    }
}

/// The work function of a stage: the network estimators for `net-in`/`net-out`, the device
/// profile for `storage`.
pub fn stage_work(stage: Stage, profile: &StorageProfile) -> &dyn WorkFunction {
    match stage {
        Stage::NetIn => &NetworkCost::REQUEST_DIRECTION,
        Stage::NetOut => &NetworkCost::RESPONSE_DIRECTION,
        Stage::Storage => profile,
    }
}

/// The work function of every flow of `net` (in flow order) by its stage, with one storage
/// profile for every device.
pub fn flow_works<'a>(
    net: &tailbound_model::Network,
    profile: &'a StorageProfile,
) -> Vec<&'a dyn WorkFunction> {
    net.flows
        .iter()
        .map(|f| stage_work(f.stage, profile))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::Op;

    fn req(size: u64, op: Op) -> Request {
        Request {
            arrival_ns: 0,
            size_bytes: size,
            op,
        }
    }

    #[test]
    fn network_estimators_match_the_originals() {
        let w = NetworkCost::REQUEST_DIRECTION;
        assert_eq!(w.work(&req(131072, Op::DiskWrite)), 144379.2);
        assert_eq!(w.work(&req(4096, Op::Get)), 200.0 + 0.025 * 4096.0);
        let r = NetworkCost::RESPONSE_DIRECTION;
        assert_eq!(r.work(&req(4096, Op::DiskRead)), 200.0 + 1.1 * 4096.0);
        assert_eq!(r.work(&req(4096, Op::Put)), 200.0 + 0.025 * 4096.0);
    }

    #[test]
    fn storage_profile_interpolates_and_clamps() {
        let p = StorageProfile::intel710_ssd();
        let t = &p.bandwidth_table;
        assert_eq!(t.len(), 132);
        // at a measured size the work is exact
        let w = p.work(&req(512, Op::DiskRead));
        assert_eq!(t[0].request_size, 512.0);
        assert!((w - 512.0 / t[0].read_bandwidth).abs() < 1e-15);
        assert!((t[0].read_bandwidth - 4_895_285.188).abs() < 1e-3);
        // halfway between 512 and 1024 the bandwidth is the mean
        let mid = p.bandwidth(768.0, OpKind::Write);
        assert!((mid - (t[0].write_bandwidth + t[1].write_bandwidth) / 2.0).abs() < 1e-6);
        // beyond the table the last bandwidth holds
        assert_eq!(
            p.bandwidth(1048576.0, OpKind::Read),
            t[t.len() - 1].read_bandwidth
        );
    }

    #[test]
    fn profile_errors_name_the_file() {
        let e = StorageProfile::from_json("dev.json", r#"{"bandwidthTable": []}"#).unwrap_err();
        assert!(e.to_string().contains("dev.json"), "{e}");
        let e = StorageProfile::from_json(
            "dev.json",
            r#"{"bandwidthTable": [{"requestSize": 512, "readBandwidth": -1, "writeBandwidth": 1}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("-1"), "{e}");
    }

    #[test]
    fn pulsar_key_value_cost_is_flat_then_linear() {
        let c = TokenCost::key_value_store();
        assert_eq!(c.work(&req(4096, Op::Put)), 8192.0);
        assert_eq!(c.work(&req(16384, Op::Put)), 16384.0);
        assert_eq!(c.work(&req(32768, Op::Get)), 32768.0);
        assert_eq!(TokenCost::network().work(&req(1500, Op::Get)), 1500.0);
        assert!(PiecewiseCost::new(vec![[10.0, 5.0], [5.0, 6.0]]).is_err());
    }
}
