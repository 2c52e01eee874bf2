//! WorkloadCompactor placement (`shared/papers/workload-compactor.txt` §2.3–§2.4, §4.1, §5):
//! choose each workload's server and its ⟨r, b⟩ token buckets per stage so that every
//! tail-latency SLO holds on as few servers as possible.
//!
//! What lives here and what does not: r-b curves come from `tailbound-curves` (this crate only
//! turns requests into curves through it, [`characterize`]); the latency formulas (eqs. (1),
//! (5)–(7)) live in `tailbound-calculus::dnc::wc`, which this crate mirrors as LP constraints
//! and uses to check every answer; replaying placed workloads lives in `tailbound-sim` and the
//! experiment harness in `tailbound-experiments`. No I/O and no clock in here: the caller
//! times the policies.
//!
//! * [`lp`]: the per-server LP (solved by HiGHS): for every workload and every stage it crosses
//!   (network into the server, storage, network out of the server, and the client NIC that
//!   receives the responses, which the original omits) variables r and b on or above the
//!   stage's r-b curve, eq. (7) per priority level with R_p, Σr ≤ 1 per stage, objective
//!   min Σr. An infeasible LP means "does not fit".
//! * [`baseline`]: the rate-limit rules of §4.1 (k × average rate, knee of the r-b curve,
//!   effective bandwidth) and the fixed-limit fit check they share (eq. (5) per level).
//! * [`placer`]: [`Placer`], first-fit and fast-first-fit over servers, arrivals and
//!   departures (re-optimising every limit on the touched server), the safety margin of §5.2,
//!   and the result as [`tailbound_model::Decisions`].
//!
//! # Regime
//!
//! As in the paper's testbed (§4.3): every server has one 1 Gbit/s NIC (125e6 bytes/s each
//! way) and one Intel 710 SSD (storage capacity 1 busy-s/s, the bundled profile); every
//! workload has its own client VM with its own NIC of the same rate, so the receiving NIC is
//! uncontended and adds only its own b/C. With the 42 MSR production traces (0.02–3.8 MB/s,
//! bursty) storage is the bottleneck and a server holds roughly ten workloads, so 1000
//! workloads need on the order of a hundred servers (the paper: ~115 with one SSD, Fig. 14).
//! [`ServerSpec`] changes the link rate, the number of SSDs (storage rate) and the device
//! latency. WorkloadCompactor's own cluster model, client hosts whose NICs a server's
//! workloads share ([`client_hosts`], [`ClientNic::Tandem`]), replaces the client NIC per
//! workload when a [`Placer`] is given client hosts; [`wc_topology`] reads the original's
//! topology and cached arrival curves.
//!
//! # Units
//!
//! Curves enter in the stage's work unit (bytes on links, busy-seconds on storage) and are
//! normalised by the stage's capacity inside, as the paper does: a normalised rate is a
//! fraction of the stage [1], a normalised burst the time the stage needs to serve it at full
//! capacity [s]; both are a [`tailbound_model::Bucket`] (normalised buckets are named so, e.g.
//! [`placer::Assignment::buckets`]). Limits leave in work units again
//! ([`placer::Assignment::limits`]).
//!
//! # Priorities
//!
//! By SLO: the dense rank of the SLO latency among the workloads, tightest first, level 0
//! highest (as everywhere in tailbound). The LP of a server only needs their order.

pub mod baseline;
pub mod client_hosts;
pub mod lp;
pub mod placer;
pub mod wc_topology;
mod workload;
pub mod workloads_csv;

pub use baseline::BaselineRule;
pub use client_hosts::{ClientHost, ClientHosts, ClientVm};
pub use lp::{optimise, LpMember, LpSolution};
pub use placer::{server_name, Assignment, Placement, PlacementConfig, Placer, Policy, WorkloadId};
pub use wc_topology::{
    is_wc_topology, parse_wc_arrival_curve, parse_wc_topology, wc_curve_file_name, WcTopology,
};
pub use workload::{characterize, NormCurve, StageCurves, Workload};
pub use workloads_csv::{parse_workloads_csv, WorkloadLine, WorkloadsFileError};

use serde::{Deserialize, Serialize};

/// Where a workload's work is served, in the order the LP and the limits list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LpStage {
    /// the server NIC receiving requests [bytes]
    NetIn,
    /// the server's storage device [busy-s]
    Storage,
    /// the server NIC sending responses [bytes]
    NetOut,
    /// the client NIC receiving responses [bytes] (one per workload: uncontended)
    ClientIn,
}

impl LpStage {
    pub const ALL: [LpStage; 4] = [
        LpStage::NetIn,
        LpStage::Storage,
        LpStage::NetOut,
        LpStage::ClientIn,
    ];
    /// the stages on the server, shared by its workloads
    pub const SERVER: [LpStage; 3] = [LpStage::NetIn, LpStage::Storage, LpStage::NetOut];

    pub fn index(self) -> usize {
        self as usize
    }

    /// The flow stage this LP stage limits: the response's client NIC is the response flow's
    /// second hop, shaped once at net-out, so it has none.
    pub fn flow_stage(self) -> Option<tailbound_model::Stage> {
        use tailbound_model::Stage;
        match self {
            LpStage::NetIn => Some(Stage::NetIn),
            LpStage::Storage => Some(Stage::Storage),
            LpStage::NetOut => Some(Stage::NetOut),
            LpStage::ClientIn => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LpStage::NetIn => "net-in",
            LpStage::Storage => "storage",
            LpStage::NetOut => "net-out",
            LpStage::ClientIn => "client-in",
        }
    }
}

/// How the NIC that receives a workload's responses at its client is modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientNic {
    /// every workload has its own client host (tailbound's default regime, see the crate
    /// docs): its NIC carries no other flow and adds the workload's own b/C
    /// ([`LpStage::ClientIn`])
    #[default]
    Own,
    /// the workloads of a server share one client host that no other server's workloads use
    /// (WorkloadCompactor's topology and its `clientServerPlacement`, see
    /// [`crate::client_hosts`]): requests cross the client's out-NIC then the server's
    /// in-NIC, responses the server's out-NIC then the client's in-NIC, and the two NICs of
    /// each pair carry the same flows at the same rate, so the second one never queues and
    /// adds no latency. The LP then has the three server stages only; Σr ≤ 1 at a server
    /// stage is the same constraint at its client NIC.
    Tandem,
}

/// Capacities of one server and of its workloads' client NICs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ServerSpec {
    /// NIC rate of the server and of every client, each direction [bytes/s]
    pub link_bytes_per_s: f64,
    /// storage service rate [busy-s/s]: the number of SSDs
    pub storage_rate: f64,
    /// the device's own profiled tail latency, taken from every SLO budget [s]
    pub device_latency_s: f64,
}

impl Default for ServerSpec {
    /// 1 Gbit/s NICs and one SSD without a profiled latency (the paper's testbed).
    fn default() -> ServerSpec {
        ServerSpec {
            link_bytes_per_s: 125e6,
            storage_rate: 1.0,
            device_latency_s: 0.0,
        }
    }
}

impl ServerSpec {
    /// The capacity of `stage` [work/s].
    pub fn capacity(&self, stage: LpStage) -> f64 {
        match stage {
            LpStage::Storage => self.storage_rate,
            _ => self.link_bytes_per_s,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), PlacementError> {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        if !ok(self.link_bytes_per_s) {
            return Err(PlacementError::Config(format!(
                "link rate {} bytes/s is not allowed; expected a finite rate > 0, e.g. 125e6 for 1 Gbit/s",
                self.link_bytes_per_s
            )));
        }
        if !ok(self.storage_rate) {
            return Err(PlacementError::Config(format!(
                "storage rate {} busy-s/s is not allowed; expected the number of SSDs (> 0)",
                self.storage_rate
            )));
        }
        if !(self.device_latency_s.is_finite() && self.device_latency_s >= 0.0) {
            return Err(PlacementError::Config(format!(
                "device latency {} s is not allowed; expected a finite latency >= 0",
                self.device_latency_s
            )));
        }
        Ok(())
    }
}

/// Why placement failed (as opposed to a workload that does not fit, which is an answer).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PlacementError {
    #[error("invalid placement configuration: {0}")]
    Config(String),
    #[error("workload {name:?}: {message}")]
    Workload { name: String, message: String },
    #[error("the LP solver failed: {0}; the problem was neither solved nor proven infeasible")]
    Solver(String),
    #[error("the LP's rate limits for workload {name:?} violate its SLO in the calculus check: bound {bound_s} s > SLO budget {budget_s} s; the LP and eq. (5) disagree")]
    Inconsistent {
        name: String,
        bound_s: f64,
        budget_s: f64,
    },
    #[error("unknown workload id {0}")]
    UnknownWorkload(usize),
    #[error("could not characterize workload {name:?}: {message}")]
    Characterize { name: String, message: String },
}
