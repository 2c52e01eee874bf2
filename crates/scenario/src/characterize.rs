//! Characterizing one flow from the requests at hand: an MMPP fit and the arrival curve of its
//! work, both with `tailbound-curves`. Shared by the own format and SNC-Meister topologies.
//!
//! The arrival curve is the exact one of the characterized part, continued at the part's mean
//! work rate (`ArrivalCurve::sustained`): an exact curve of a finite trace ends flat, which
//! would let a deterministic analysis treat an overloaded queue as stable.

use tailbound_curves::mmpp::{fit_mmpp, MmppFitOptions, SizeKind};
use tailbound_curves::rb::{sustained_arrival_curve, work_series};
use tailbound_curves::WorkFunction;
use tailbound_model::{FlowModels, Mmpp, Request};

/// [`characterize`] when `models` asks for both fits, the MMPP alone for [`crate::Models::Mmpp`],
/// no models otherwise.
pub(crate) fn characterize_for(
    models: crate::Models,
    requests: &[Request],
    work: &dyn WorkFunction,
    sizes: SizeKind,
    interval_s: f64,
    batch_gap_s: f64,
) -> Result<FlowModels, String> {
    match models {
        crate::Models::Fitted => characterize(requests, work, sizes, interval_s, batch_gap_s),
        crate::Models::Mmpp => Ok(FlowModels {
            mmpp: Some(fit(requests, work, sizes, interval_s, batch_gap_s)?),
            arrival: None,
        }),
        crate::Models::None => Ok(FlowModels::default()),
    }
}

/// MMPP (default fit options but `sizes`, the counting interval [s] and the batch gap [s]) and sustained arrival curve of `requests` under
/// `work`.
pub fn characterize(
    requests: &[Request],
    work: &dyn WorkFunction,
    sizes: SizeKind,
    interval_s: f64,
    batch_gap_s: f64,
) -> Result<FlowModels, String> {
    let mmpp = fit(requests, work, sizes, interval_s, batch_gap_s)?;
    let series = work_series(requests, work).map_err(|e| format!("work series failed: {e}"))?;
    let arrival =
        sustained_arrival_curve(&series).map_err(|e| format!("arrival curve failed: {e}"))?;
    Ok(FlowModels {
        mmpp: Some(mmpp),
        arrival: Some(arrival),
    })
}

/// The MMPP of `requests` under `work` (default fit options but `sizes`, the counting interval
/// [s] and the batch gap [s]).
fn fit(
    requests: &[Request],
    work: &dyn WorkFunction,
    sizes: SizeKind,
    interval_s: f64,
    batch_gap_s: f64,
) -> Result<Mmpp, String> {
    let opts = MmppFitOptions {
        sizes,
        interval_s,
        batch_gap_s,
        ..MmppFitOptions::default()
    };
    fit_mmpp(requests, work, &opts).map_err(|e| format!("mmpp fit failed: {e}"))
}
