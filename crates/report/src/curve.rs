//! `tailbound curve rb|mmpp|effbw`: the characterization of one trace at one stage, and its
//! records.

use crate::JobError;
use serde::{Deserialize, Serialize};
use tailbound_curves::effbw::effective_bandwidth;
use tailbound_curves::mmpp::{fit_mmpp, MmppFitOptions};
use tailbound_curves::rb::{arrival_curve, prune, work_series, WorkSeries};
use tailbound_curves::{stage_work, StorageProfile};
use tailbound_model::{ArrivalCurve, Mmpp, Stage};
use tailbound_trace::Trace;

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

/// The work `trace` brings to `stage` (storage work by `profile`).
fn series(trace: &Trace, stage: Stage, profile: &StorageProfile) -> Result<WorkSeries, JobError> {
    Ok(work_series(&trace.requests, stage_work(stage, profile))?)
}

/// The mean work rate of an exact arrival curve, which ends at (span, total work).
fn mean_rate(curve: &ArrivalCurve) -> Option<f64> {
    let [span, total] = *curve.vertices().last()?;
    (span > 0.0).then(|| total / span)
}

/// `tailbound curve rb`: the r-b and arrival curves of `trace` (named `name`) at `stage`,
/// pruned to at most `prune_to` pieces when given; the record and the exact curve.
pub fn rb(
    name: String,
    trace: &Trace,
    stage: Stage,
    profile: &StorageProfile,
    prune_to: Option<usize>,
) -> Result<(RbReport, ArrivalCurve), JobError> {
    let exact = arrival_curve(&series(trace, stage, profile)?)?;
    let curve = match prune_to {
        Some(k) => prune(&exact, k)?,
        None => exact.clone(),
    };
    let report = RbReport {
        trace: name,
        stage,
        unit: stage.work_unit().to_string(),
        requests: trace.requests.len(),
        mean_rate: mean_rate(&exact),
        rb: curve.to_rb().vertices().to_vec(),
        arrival: curve.vertices().to_vec(),
        tail_rate: curve.tail_rate(),
        pruned_to: prune_to,
    };
    Ok((report, exact))
}

/// `tailbound curve mmpp`: an MMPP fitted to `trace`'s work at `stage`.
pub fn mmpp(
    name: String,
    trace: &Trace,
    stage: Stage,
    profile: &StorageProfile,
    opts: &MmppFitOptions,
) -> Result<MmppReport, JobError> {
    let fit = fit_mmpp(&trace.requests, stage_work(stage, profile), opts)?;
    Ok(MmppReport {
        trace: name,
        stage,
        unit: stage.work_unit().to_string(),
        requests: trace.requests.len(),
        mean_rate: fit.mean_work_per_s(),
        mmpp: fit,
    })
}

/// `tailbound curve effbw`: the least bucket-less shaper rate that delays `trace`'s work at
/// `stage` by at most `delay_s`.
pub fn effbw(
    name: String,
    trace: &Trace,
    stage: Stage,
    profile: &StorageProfile,
    delay_s: f64,
) -> Result<EffBwReport, JobError> {
    let curve = arrival_curve(&series(trace, stage, profile)?)?;
    Ok(EffBwReport {
        trace: name,
        stage,
        unit: stage.work_unit().to_string(),
        delay_s,
        rate: effective_bandwidth(&curve.to_rb(), delay_s)?,
        mean_rate: mean_rate(&curve),
    })
}
