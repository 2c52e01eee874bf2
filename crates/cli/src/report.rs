//! The machine-readable results that commands print with `--json`.
//!
//! Every command's JSON is one of these structures, so integration tests (and scripts) can
//! deserialize exactly what a user sees. Field names carry their units.

use serde::{Deserialize, Serialize};
use tailbound_model::{Mmpp, Stage};
use tailbound_trace::TraceStats;

/// `tailbound trace stats --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStatsReport {
    /// one entry per file, in the order given; `name` is the path
    pub traces: Vec<TraceStats>,
}

/// `tailbound trace split --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitReport {
    pub input: String,
    /// split point as a fraction of the trace's time span
    pub at: f64,
    /// split instant, from the start of the trace [s]
    pub split_s: f64,
    pub parts: Vec<SplitPart>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitPart {
    pub file: String,
    pub requests: usize,
}

/// `tailbound trace gen --json` (the trace itself goes to the output file)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenReport {
    pub file: Option<String>,
    pub model: String,
    pub seed: u64,
    pub requests: usize,
}

/// `tailbound curve rb --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RbReport {
    pub trace: String,
    pub stage: Stage,
    /// unit of work at this stage (bytes or busy-s)
    pub unit: String,
    pub requests: usize,
    /// mean work rate over the trace's span [unit/s]; null for a trace of one instant
    pub mean_rate: Option<f64>,
    /// r-b curve vertices `[rate [unit/s], burst [unit]]`, rate ascending; b stays at the
    /// last vertex's value for higher rates
    pub rb: Vec<[f64; 2]>,
    /// arrival-curve vertices `[t [s], work [unit]]`; flat (or `tail_rate`) after the last
    pub arrival: Vec<[f64; 2]>,
    /// slope of the arrival curve after its last vertex [unit/s]
    pub tail_rate: f64,
    /// when `--prune K` was given: the curve was pruned to at most K pieces (an upper bound)
    pub pruned_to: Option<usize>,
}

/// `tailbound curve mmpp --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmppReport {
    pub trace: String,
    pub stage: Stage,
    pub unit: String,
    pub requests: usize,
    pub mmpp: Mmpp,
    /// the fitted chain's mean load [unit/s]
    pub mean_rate: f64,
}

/// `tailbound curve effbw --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffBwReport {
    pub trace: String,
    pub stage: Stage,
    pub unit: String,
    /// shaper delay target [s]
    pub delay_s: f64,
    /// least rate of a bucket-less shaper meeting the target [unit/s]
    pub rate: f64,
    /// mean work rate of the trace [unit/s], for comparison
    pub mean_rate: Option<f64>,
}

/// `tailbound bound --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundReport {
    pub scenario: String,
    /// the analysis used (snc-meister, snc-hop, snc-conv, dnc)
    pub method: String,
    pub tenants: Vec<BoundTenant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundTenant {
    pub name: String,
    /// latency target [s]
    pub slo_s: f64,
    pub percentile: f64,
    /// priority level, 0 highest
    pub priority: u32,
    /// the tenant's bound [s]: the sum of its flows'; null when unbounded
    pub bound_s: Option<f64>,
    /// why there is no finite bound, when `bound_s` is null
    pub unbounded: Option<String>,
    pub flows: Vec<BoundFlow>,
    pub meets_slo: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoundFlow {
    pub name: String,
    /// violation probability of this flow's bound
    pub epsilon: f64,
    /// [s], null when unbounded
    pub bound_s: Option<f64>,
}

/// `tailbound simulate --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    pub scenario: String,
    /// events the engine processed (arrivals, shaper releases, chunk departures)
    pub events: u64,
    /// the tenants that ran, in scenario order
    pub tenants: Vec<SimTenant>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimTenant {
    pub name: String,
    pub requests: u64,
    /// sum of request sizes [bytes]
    pub bytes: u64,
    /// SLO latency [s]
    pub slo_s: f64,
    /// SLO percentile, e.g. 99.9
    pub percentile: f64,
    pub latency_s: LatencySummary,
    /// one per window of arrival time holding requests (3 minutes by default)
    pub windows: Vec<SimWindow>,
    /// every window's SLO percentile ≤ the SLO latency
    pub meets_slo: bool,
}

/// Exact nearest-rank latency percentiles [s].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    #[serde(rename = "p99.9")]
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimWindow {
    /// window start in trace time [s]
    pub start_s: f64,
    pub requests: u64,
    /// p99.9 of the window's requests [s]
    #[serde(rename = "p99.9")]
    pub p999: f64,
    /// the tenant's SLO percentile of the window's requests [s]
    pub slo_percentile_s: f64,
}

/// `tailbound opt --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptReport {
    pub scenario: String,
    /// the largest n whose first n tenants all meet their SLOs in replay
    pub opt: usize,
    /// tenants in the scenario
    pub tenants: usize,
    /// the bisection's probes in the order tried
    pub probes: Vec<OptProbe>,
    /// with `--trial`: the tenants kept by trial and error over the arrival order
    #[serde(default)]
    pub trial: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptProbe {
    pub n: usize,
    pub all_meet: bool,
}

/// `tailbound admit --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmitReport {
    pub scenario: String,
    pub policy: String,
    pub admitted: usize,
    /// in arrival (file) order
    pub tenants: Vec<AdmitTenant>,
    /// what `tailbound simulate --decisions` replays
    pub decisions: tailbound_model::Decisions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmitTenant {
    pub name: String,
    pub slo_s: f64,
    pub percentile: f64,
    pub admitted: bool,
    /// priority level at admission, 0 highest
    pub priority: Option<u32>,
    /// its bound when it arrived (rate-limit shaper delay included) [s]; null: unbounded
    pub bound_s: Option<f64>,
    /// why it was rejected
    pub reason: Option<String>,
    /// existing tenants whose priority level its admission changed
    pub changed: Vec<PriorityChange>,
    /// time to decide [s]
    pub seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorityChange {
    pub tenant: String,
    pub old: u32,
    pub new: u32,
}

/// `tailbound vdc alloc --json`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VdcAllocReport {
    pub file: String,
    /// the global mechanism
    pub global: String,
    pub flows: Vec<VdcAllocFlow>,
    pub resources: Vec<VdcAllocResource>,
    /// resources whose guaranteed allocations exceed their capacity
    pub overcommitted: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VdcAllocFlow {
    /// `tenant/flow`
    pub flow: String,
    pub hops: Vec<VdcAllocHop>,
}

/// One hop of a flow's path and what it gets there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VdcAllocHop {
    /// physical resource, `-` for none
    pub physical: String,
    /// the tenant's virtual resource, `-` for none
    pub virtual_resource: String,
    /// what the hop charges: request, response or appliance
    pub charge: String,
    /// [tokens/s]
    pub demand: f64,
    /// the guaranteed (local) part of the allocation [tokens/s]
    pub local: f64,
    /// the whole allocation [tokens/s]
    pub rate: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VdcAllocResource {
    pub name: String,
    /// [tokens/s]
    pub capacity: f64,
    /// allocated to all flows crossing it [tokens/s]
    pub allocated: f64,
}

/// `tailbound enforce apply --json` and `tailbound enforce remove --json`: what each interface
/// went through, in host-map order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnforceReport {
    /// tc commands run over all interfaces
    pub changes: usize,
    pub interfaces: Vec<tailbound_dataplane::tc::InterfaceReport>,
    /// limits of the decisions tc does not enforce (storage), and why
    #[serde(default)]
    pub unenforced: Vec<tailbound_enforce_plan::planner::Unenforced>,
}

/// `tailbound enforce status --json`: how far each interface is from the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnforceStatusReport {
    /// whether any interface differs from the plan (exit code 1)
    pub drift: bool,
    pub interfaces: Vec<tailbound_dataplane::tc::InterfaceStatus>,
}

/// Gives each JSON output its format, `tailbound.<kind>/<version>`, and lists them in
/// [`FORMATS`] (README's table of format kinds is checked against it).
macro_rules! json_formats {
    ($($ty:ty => $kind:literal, $version:literal, $what:literal;)*) => {
        $(impl crate::output::JsonOutput for $ty {
            const FORMAT: &'static str = concat!("tailbound.", $kind, "/", $version);
        })*
        /// Every JSON format the binary prints or writes: (format, what writes it).
        pub const FORMATS: &[(&str, &str)] =
            &[$((concat!("tailbound.", $kind, "/", $version), $what)),*];
    };
}

use crate::output::Items;

json_formats! {
    tailbound_model::Decisions => "decisions", 1, "admit/place --decisions-out (also an input: simulate, enforce, testbed --decisions)";
    AdmitReport => "admit", 1, "admit --json";
    tailbound_allocation::input::AllocOutput => "alloc", 1, "alloc --json";
    crate::cmd::alloc::AllocBenchReport => "alloc-bench", 1, "alloc bench --json";
    BoundReport => "bound", 1, "bound --json";
    RbReport => "curve-rb", 1, "curve rb --json";
    MmppReport => "curve-mmpp", 1, "curve mmpp --json";
    EffBwReport => "curve-effbw", 1, "curve effbw --json";
    tailbound_experiments::demo::DemoReport => "demo", 1, "demo --json";
    tailbound_enforce_plan::Plan => "enforce-plan", 1, "enforce plan --json";
    EnforceReport => "enforce", 1, "enforce apply|remove --json";
    EnforceStatusReport => "enforce-status", 1, "enforce status --json";
    crate::cmd::place::PlaceReport => "place", 1, "place --json";
    tailbound_dataplane::probe::ProbeResult => "probe", 1, "probe --json (one run)";
    Items<'_, tailbound_dataplane::probe::ProbeResult> => "probe-list", 1, "probe --json (several runs)";
    tailbound_dataplane::probe::SweepReport => "probe-sweep", 1, "probe --sweep --json";
    SimReport => "simulate", 1, "simulate --json";
    OptReport => "simulate-opt", 1, "simulate --optimize --json";
    tailbound_service::api::Decision => "tenant-decision", 1, "tenant add --what-if|rm --json";
    tailbound_service::api::Admitted => "tenant-admitted", 1, "tenant add --json";
    Items<'_, tailbound_service::api::TenantView> => "tenant-list", 1, "tenant ls --json";
    tailbound_testbed::TestbedReport => "testbed", 1, "testbed run --json";
    tailbound_testbed::state::UpState => "testbed-up", 1, "testbed up --json";
    tailbound_testbed::state::Down => "testbed-down", 1, "testbed down --json";
    TraceStatsReport => "trace-stats", 1, "trace stats --json";
    SplitReport => "trace-split", 1, "trace split --json";
    GenReport => "trace-gen", 1, "trace gen --json";
    tailbound_graph::GraphReport => "graph-bound", 1, "graph bound --json";
    tailbound_allocation::Datacenter => "vdc-datacenter", 1, "vdc check --json";
    VdcAllocReport => "vdc-alloc", 1, "vdc alloc --json";
    tailbound_experiments::bounds::BoundsExperiment => "experiment-bounds", 1, "experiment bounds-* --json/--out";
    tailbound_experiments::admission::AdmissionResult => "experiment-admission", 1, "experiment admission --json/--out";
    tailbound_experiments::admission_testbed::TestbedExperiment => "experiment-admission-testbed", 1, "experiment admission-testbed --json/--out";
    tailbound_experiments::eyeq::EyeqExperiment => "experiment-eyeq", 1, "experiment eyeq --json/--out";
    tailbound_experiments::placement::PlacementExperiment => "experiment-placement", 1, "experiment placement --json/--out";
    tailbound_experiments::vdc::EnforcementExperiment => "experiment-vdc-enforcement", 1, "experiment vdc-enforcement --json/--out";
    tailbound_experiments::vdc::CapacityExperiment => "experiment-vdc-capacity", 1, "experiment vdc-capacity --json/--out";
}
