//! The machine-readable results that commands print with `--json`.
//!
//! Every command's JSON is one of these structures, so integration tests (and scripts) can
//! deserialize exactly what a user sees. Field names carry their units.

use serde::{Deserialize, Serialize};
use tailbound_trace::TraceStats;

// `bound`, `admit`, `simulate` and `curve` records are shared with the Python package.
pub use tailbound_report::{
    AdmitReport, AdmitTenant, BoundFlow, BoundReport, BoundTenant, EffBwReport, LatencySummary,
    MmppReport, PriorityChange, RbReport, SimReport, SimTenant, SimWindow,
};

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
    tailbound_service::api::HostView => "host", 1, "host add --json";
    Items<'_, tailbound_service::api::HostView> => "host-list", 1, "host ls --json";
    tailbound_service::api::HostToken => "host-token", 1, "host token --json";
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
    tailbound_experiments::vdc_testbed::VdcTestbedExperiment => "experiment-vdc-enforcement-testbed", 1, "experiment vdc enforcement --testbed --json/--out";
}
