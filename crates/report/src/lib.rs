//! The jobs behind `tailbound bound`, `admit` and `simulate` on a loaded scenario, and the
//! records they print with `--json`.
//!
//! The CLI prints these and the Python package (`crates/py`) returns them as dicts, so the
//! two front doors cannot drift apart: each job ([`bound`], [`admit`], [`replay`]) and each
//! record is built here and nowhere else. Reading files and naming them in errors stays with
//! the callers; the other commands' records stay in the CLI (`crates/cli/src/report.rs`).
//! Field names carry their units.

mod curve;
mod records;

pub use curve::{effbw, mmpp, rb, EffBwReport, MmppReport, RbReport};
pub use records::{
    AdmitReport, AdmitTenant, BoundFlow, BoundReport, BoundTenant, LatencySummary, PriorityChange,
    SimReport, SimTenant, SimWindow,
};

use std::path::Path;
use std::time::Instant;
use tailbound_admission::{Admission, AdmissionError, Policy};
use tailbound_calculus::{bound_with_progress, BoundOptions, CalculusError, Method};
use tailbound_curves::effbw::EffBwError;
use tailbound_curves::mmpp::FitError;
use tailbound_curves::rb::RbError;
use tailbound_model::Decisions;
use tailbound_scenario::{Models, Part, Scenario, ScenarioError};
use tailbound_sim::{Plan, Replay, ReplayError, SimResult, Transmission};

/// The most tenants [`bound`] analyses: the SNC analyses grow faster than quadratically with
/// the tenants sharing queues (1000 tenants on one link take ~10 s, 5000 ~20 min on one core
/// of a 2-core box), so more would not finish in an operator's session.
pub const MAX_TENANTS: usize = 10_000;

/// Why a job failed (the caller adds which file).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    #[error(
        "{tenants} tenants; bound analyses at most {MAX_TENANTS} tenants per scenario (split it)"
    )]
    TooManyTenants { tenants: usize },
    #[error(transparent)]
    Calculus(#[from] CalculusError),
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    #[error("cannot decide tenant {name:?}: {source}")]
    Decide {
        name: String,
        #[source]
        source: AdmissionError,
    },
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("cannot apply the decisions: {0}")]
    Decisions(#[source] ReplayError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Curve(#[from] RbError),
    #[error(transparent)]
    Fit(#[from] FitError),
    #[error(transparent)]
    EffBw(#[from] EffBwError),
}

/// What characterizes each tenant of the scenario at `path` for `bound` and `place`: the
/// operator's choice `flag` when given; otherwise the whole trace for an SNC-Meister topology
/// (what SNC-ConfigGen does with the file it is given) and the scenario's own
/// `[characterize] part` for tailbound's format (`None`: the format decides).
pub fn characterized_part(path: &Path, flag: Option<Part>) -> Result<Option<Part>, ScenarioError> {
    if flag.is_some() {
        return Ok(flag);
    }
    Ok(match tailbound_scenario::detect(path)? {
        tailbound_scenario::FileKind::SncTopology => Some(Part::Whole),
        _ => None,
    })
}

/// The traffic models [`bound`] needs fitted for `method`: the SNC analyses read MMPPs only;
/// DNC reads arrival curves only, but the MMPP fit beside them is cheap.
pub fn bound_models(method: Method) -> Models {
    match method {
        Method::Dnc => Models::Fitted,
        _ => Models::Mmpp,
    }
}

/// `tailbound bound`: every tenant's bound under `method`, calling `done` after each tenant.
/// `name` is the scenario as the user named it.
pub fn bound(
    scenario: &Scenario,
    name: String,
    method: Method,
    opts: &BoundOptions,
    done: &mut dyn FnMut(),
) -> Result<BoundReport, JobError> {
    let net = &scenario.network;
    let n = net.tenants.len();
    if n > MAX_TENANTS {
        return Err(JobError::TooManyTenants { tenants: n });
    }
    let all: Vec<usize> = (0..n).collect();
    let bounds = bound_with_progress(net, method, &all, opts, done)?;
    Ok(BoundReport::new(name, method, &bounds))
}

/// `tailbound admit`: the tenants of `scenario` arrive in file order under `policy` (bounds
/// for Ethernet packets, what [`replay`] serves by default).
pub fn admit(scenario: &Scenario, name: String, policy: Policy) -> Result<AdmitReport, JobError> {
    let net = &scenario.network;
    let mut engine = Admission::new(net, policy)?;
    let mut tenants = Vec::with_capacity(net.tenants.len());
    for (i, t) in net.tenants.iter().enumerate() {
        let start = Instant::now();
        let o = engine.arrive(i).map_err(|source| JobError::Decide {
            name: t.name.clone(),
            source,
        })?;
        tenants.push(AdmitTenant::new(net, &o, start.elapsed().as_secs_f64()));
    }
    Ok(AdmitReport {
        scenario: name,
        policy: policy.as_str().to_string(),
        admitted: tenants.iter().filter(|t| t.admitted).count(),
        tenants,
        decisions: engine.decisions(),
    })
}

/// How [`replay`] serves a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayOptions {
    /// which requests of each trace to replay (the papers: the second half)
    pub part: Part,
    pub transmission: Transmission,
    /// length of the SLO-check windows [s]
    pub window_s: f64,
}

/// `tailbound simulate`: `scenario`'s requests replayed under `decisions` (`None`: every
/// tenant, priorities by SLO, no rate limits); the record and the simulator's result.
pub fn replay(
    scenario: &Scenario,
    name: String,
    decisions: Option<&Decisions>,
    opts: &ReplayOptions,
) -> Result<(SimReport, SimResult), JobError> {
    let net = &scenario.network;
    let plan = match decisions {
        Some(d) => Plan::from_decisions(net, d).map_err(JobError::Decisions)?,
        None => Plan::all(net),
    };
    let replay = Replay::new(net, scenario.requests(opts.part)?, scenario.works())?;
    let result = replay.run(&plan, opts.transmission, opts.window_s)?;
    Ok((SimReport::new(net, &plan, &result, name), result))
}
