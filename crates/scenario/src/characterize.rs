//! Characterizing one flow from the requests at hand: an MMPP fit and the arrival curve of its
//! work, both with `tailbound-curves`. Shared by the own format and SNC-Meister topologies,
//! with [`FitCache`], which reads and fits a trace once however many tenants name it.
//!
//! The arrival curve is the exact one of the characterized part, continued at the part's mean
//! work rate (`ArrivalCurve::sustained`): an exact curve of a finite trace ends flat, which
//! would let a deterministic analysis treat an overloaded queue as stable.

use std::collections::HashMap;
use std::hash::Hash;

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

/// The characterized flows of each trace a scenario names, so that tenants sharing a trace
/// file read and fit it once: SNC-Meister topologies reuse the production traces round-robin
/// (180 tenants on 42 traces), and reading and fitting each tenant's copy again was half of
/// `tailbound bound TOPOLOGY`.
///
/// The key must hold everything the fits depend on that varies within the cache's life (the
/// trace's path as resolved, and whatever options differ between tenants); a fit is a pure
/// function of the requests, the work function and the options, so a cached fit is the
/// fit, bit for bit. An error is not kept: the next tenant naming the trace reads it again
/// (and fails the same way), so errors name the first tenant that hit them, as without the
/// cache.
#[derive(Debug)]
pub(crate) struct FitCache<K> {
    fits: HashMap<K, Vec<FlowModels>>,
}

impl<K: Eq + Hash> FitCache<K> {
    pub(crate) fn new() -> FitCache<K> {
        FitCache {
            fits: HashMap::new(),
        }
    }

    /// The flows of `key`: `fit` runs on the first call with the key; later calls return
    /// copies of its result.
    pub(crate) fn get_or_fit<E>(
        &mut self,
        key: K,
        fit: impl FnOnce() -> Result<Vec<FlowModels>, E>,
    ) -> Result<&[FlowModels], E> {
        use std::collections::hash_map::Entry;
        match self.fits.entry(key) {
            Entry::Occupied(e) => Ok(e.into_mut()),
            Entry::Vacant(e) => Ok(e.insert(fit()?)),
        }
    }

    /// How many distinct keys have been fitted.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.fits.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_curves::work::NetworkCost;
    use tailbound_model::Op;

    fn requests(n: u64, gap_ns: u64) -> Vec<Request> {
        (0..n)
            .map(|i| Request {
                arrival_ns: i * gap_ns,
                size_bytes: 4096 + 512 * (i % 7),
                op: if i % 3 == 0 { Op::Put } else { Op::Get },
            })
            .collect()
    }

    #[test]
    fn a_key_is_fitted_once_and_copies_are_the_fit() {
        let reqs = requests(5_000, 700_000);
        let mut cache = FitCache::new();
        let calls = std::cell::Cell::new(0);
        let fit = || {
            calls.set(calls.get() + 1);
            characterize_for(
                crate::Models::Mmpp,
                &reqs,
                &NetworkCost::REQUEST_DIRECTION,
                SizeKind::Exponential,
                1.0,
                0.0,
            )
            .map(|m| vec![m])
        };
        let first = cache.get_or_fit("a", fit).unwrap().to_vec();
        let again = cache.get_or_fit("a", fit).unwrap().to_vec();
        assert_eq!(calls.get(), 1);
        assert_eq!(first, again);
        assert!(first[0].mmpp.is_some());
        cache.get_or_fit("b", fit).unwrap();
        assert_eq!((calls.get(), cache.len()), (2, 2));
    }

    #[test]
    fn errors_are_not_kept() {
        let mut cache: FitCache<&str> = FitCache::new();
        let mut calls = 0;
        for _ in 0..2 {
            let r = cache.get_or_fit("bad", || {
                calls += 1;
                Err::<Vec<FlowModels>, _>(format!("failure {calls}"))
            });
            assert_eq!(r.unwrap_err(), format!("failure {calls}"));
        }
        assert_eq!((calls, cache.len()), (2, 0));
        let ok = cache.get_or_fit("bad", || Ok::<_, String>(vec![FlowModels::default()]));
        assert_eq!(ok.unwrap().len(), 1);
    }
}
