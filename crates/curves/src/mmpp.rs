//! Fitting a Markov-modulated arrival process (MMPP) to a tenant's trace at one stage.
//!
//! Source: snc-meister §4.3 (`shared/papers/snc-meister.txt`), as the original codes it
//! (`MMBPArrival::init` in SNC-Meister's `SNCOperators.cpp`); check values in
//! `shared/reference/snc-meister/sample_config.txt`. The result type, [`Mmpp`], and its
//! evaluation live in `tailbound-model`; the SNC bound over it lives in the calculus crate;
//! work per request comes from [`crate::work`].
//!
//! # Definition
//!
//! 1. **Counting.** The trace is cut into counting intervals of `interval_s` \[s\] (default 1 s)
//!    starting at the *first request*; interval m holds the requests with
//!    `m·interval_s ≤ t − t_first < (m+1)·interval_s`, through the interval of the last
//!    request. c_m is its request count [requests/interval].
//! 2. **Bands.** With band factor k (default 2) and `max = max_m c_m`, the top band has centre
//!    λ_0 with λ_0 + k√λ_0 = max; each next centre is λ' = (√λ − k)², and band λ covers
//!    (λ − k√λ, λ + k√λ]. Because (√λ − k)² + k(√λ − k) = λ − k√λ the bands are contiguous: a
//!    band's lower edge is the next band's upper edge. Bands are added downward until one's
//!    lower edge reaches the least count `min` (if the edge is negative, the band extends to
//!    0). If more than `max_states` bands would be needed, the factor is raised (see below)
//!    to the least k with which `max_states` bands cover [min, max]. See [`count_bands`].
//! 3. **States.** Each interval belongs to the band containing its count; bands with no
//!    intervals are dropped, and the rest become the states, ordered by rate ascending (as in
//!    the original's output). Per state: intervals, requests and total work [stage unit].
//! 4. **Rates.** [`StateRate::BandCentre`] (the original): `rate_per_s = λ / interval_s`;
//!    [`StateRate::Observed`]: mean count of the state's intervals / `interval_s`. With
//!    observed rates `Mmpp::mean_work_per_s` equals the trace's work / counted span exactly.
//!    `arrival_prob = rate_per_s · step_s` [per step] must be ≤ 1.
//! 5. **Transitions** per time step `step_s` (default 10 µs), for i ≠ j:
//!    P(i→j) = n_ij / m_i · step_s / interval_s, where n_ij counts consecutive interval pairs
//!    (i, j) and m_i the intervals of state i that have a successor; P(i→i) = 1 − Σ_{j≠i}.
//!    A state whose only interval is the last one keeps an identity row. The chain thus
//!    leaves state i with the observed per-interval frequency spread over the interval's
//!    steps, so the mean dwell time in a state is the observed one.
//! 6. **Sizes.** From the work of the requests in the state's intervals:
//!    [`SizeKind::Exponential`] (mean = work / requests; the original's `MGFExponential`, whose
//!    `lambda` is 1/mean) or [`SizeKind::Empirical`] (one atom per distinct work value, with
//!    its relative frequency: the observed sizes exactly, with an MGF finite for every θ,
//!    where the exponential's ends at θ = 1/mean). A state with intervals but no requests (a band containing count 0) takes the
//!    size distribution of the whole trace: it emits at its band's rate under
//!    [`StateRate::BandCentre`], and what matters for it is that rate; under
//!    [`StateRate::Observed`] its rate is 0 and the sizes never matter. A state whose requests
//!    all have zero work does the same (a work function may price some requests at 0; an
//!    MMPP state needs a positive mean).
//!
//! # Batches
//!
//! Within a state the MMPP emits requests as a Poisson process, so the chance that hundreds
//! of requests arrive within a millisecond is negligible in the model. Block-storage traces
//! do exactly that (`shared/traces/msr-production/trace0033.csv` has a batch of 783 writes,
//! 6.5 MB, with gaps under 1 ms), and an MMPP fitted to their single requests gives bounds far
//! below what a replay measures: alone on 1 Gbit/s links trace0033's SNC bound at p99.9 is
//! 3.1 ms (1 s counting), 8.3 ms (10 ms counting), while its replayed p99.9 is 15.2 ms and
//! its DNC bound 23.3 ms. With [`MmppFitOptions::batch_gap_s`] > 0 a request closer than
//! the gap to the previous one joins its batch; a batch is one arrival event at its first
//! request's time whose work is the sum, and steps 1–6 run on events instead of requests
//! (state `requests` then count events). With [`SizeKind::Empirical`] the batches' observed
//! work enters the MGF exactly: trace0033's bound becomes 68 ms with a 1 ms gap (sound,
//! and looser than DNC for one tenant; the statistical multiplexing of many tenants is where
//! SNC gains). Default 0: every request is an event, as the original fits.
//!
//! # Deviations from the original
//!
//! * **Intervals count from the first request.** The original counts from t = 0, so a trace
//!   whose first request is late gets leading empty intervals, a spurious zero-rate state and
//!   transitions out of it (regression test `intervals_count_from_first_request`).
//! * **States without samples are dropped.** The original keeps every band: in
//!   `sample_config.txt` flow `F1In` state 2 has `count` 0, `lambda` 1e6 (a placeholder) and
//!   an identity transition row, yet `p` at its band centre.
//! * **Number of bands.** The original keeps the bands whose *centre* is at least `min` (the
//!   lowest then extends down to `min`); here bands are added until one's *lower edge* reaches
//!   `min` (as DESIGN.md words it), which can add one band whose centre is below `min`.
//! * **Band factor search, and its direction.** DESIGN.md says to *shrink* the factor when
//!   `max_states` bands do not reach `min`. The opposite is needed: a larger factor makes every
//!   band wider (the lower edge of the n-th band, s(s − k) with s = √λ_0 − (n−1)k, falls as k
//!   grows, since √λ_0 itself falls with k), so fewer bands cover the range. We raise k by
//!   bisection to the least factor with which `max_states` bands reach `min` (relative
//!   precision 1e-12). The original runs its search (`binarySearchReverse(0, max, min, 0.01)`,
//!   absolute precision 0.01) whenever the top `max_states − 1` centres are ≥ `min`, so it
//!   also *shrinks* k when the default factor covers the range with exactly `max_states`
//!   bands and room to spare; that is presumably where "shrink" comes from. It does so
//!   *always* when some interval is empty: with `min` = 0 its test `lambda < low` never holds,
//!   so it spreads exactly `max_states` bands over [0, max], whatever the default factor would
//!   need. On the production traces that is the common case (23 of the 30 traces of
//!   `bench/fidelity`'s 30 tenants have an idle second; 14 of them get k of 0.69–1.87), and
//!   it is the largest of the fit differences between the two tools' bounds (README,
//!   "Fidelity against SNC-Meister"). Here the default factor is kept whenever it suffices.
//! * **Transition normalisation.** The original divides n_ij by
//!   `floor(n_i · interval / step)`, with n_i *all* intervals of state i (including the last
//!   interval, which has no successor), and that floor suffers from float error (37 intervals
//!   of 1 s at 1e-5 s give 3 699 999 steps, not 3 700 000). For flow `F0In` of
//!   `sample_config.txt`, row 0 is 70/82 200 000 = 35/411 · 1e-5 and 2/82 200 000 (state 0 has
//!   822 intervals: its 181 833 requests at 221 per interval fall in its band); row 1 is
//!   70/7 399 999 (74 intervals, 7 399 999 from the float floor). We divide by m_i (intervals
//!   with a successor) and scale by step/interval exactly, so our entries equal the original's
//!   except in the row of the last interval's state (relative difference 1/n_i) and for the
//!   floor error (relative ≈ step/(n_i·interval)). Both discard self-transition counts and set
//!   the diagonal to the complement.
//! * **Empirical sizes** are an option (the original is exponential only), and zero-request
//!   states take the trace's sizes instead of the original's placeholder `lambda` 1e6. The
//!   empirical MGF is not always below the exponential one of the same mean (DESIGN.md calls
//!   it "tighter"): on the production traces the observed sizes are often more variable than
//!   exponential, and then the exponential model understates the tail.
//!
//! # Limits
//!
//! At most [`MAX_INTERVALS`] counting intervals and [`MAX_STATES_LIMIT`] states (the
//! transition matrix is dense). Counts are exact; rates and probabilities are `f64`.

use serde::{Deserialize, Serialize};
use tailbound_model::{CurveError, Mmpp, MmppState, Request, SizeModel};

use crate::WorkFunction;

/// Most counting intervals a fit may use (memory: 12 bytes per interval).
pub const MAX_INTERVALS: u64 = 50_000_000;

/// Largest `max_states` accepted: the transition matrix has `max_states²` entries.
pub const MAX_STATES_LIMIT: usize = 1000;

/// Relative precision of the band-factor bisection.
const BISECTION_REL_TOL: f64 = 1e-12;

/// How a state's request sizes (work per request) are modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum SizeKind {
    /// exponential work with the state's observed mean (the original's `MGFExponential`)
    #[default]
    Exponential,
    /// the state's observed work values and their frequencies
    Empirical,
}

tailbound_model::names!(SizeKind, "size model", {
    Exponential => "exponential",
    Empirical => "empirical",
});

/// How a state's arrival rate is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StateRate {
    /// the centre λ of the state's count band, / interval (the original)
    #[default]
    BandCentre,
    /// the mean count of the state's intervals, / interval
    Observed,
}

tailbound_model::names!(StateRate, "state rate", {
    BandCentre => "band-centre",
    Observed => "observed",
});

/// Options of [`fit_mmpp`]. `Default` gives SNC-Meister's settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MmppFitOptions {
    /// counting interval \[s\]; default 1
    pub interval_s: f64,
    /// time step of the fitted chain \[s\]; default 1e-5 (10 µs)
    pub step_s: f64,
    /// band half-width in standard deviations, k in λ ± k√λ; default 2
    pub band_factor: f64,
    /// most states; default 10
    pub max_states: usize,
    /// size model per state; default exponential
    pub sizes: SizeKind,
    /// rate per state; default band centre
    pub state_rate: StateRate,
    /// requests closer than this to the previous one are one arrival event (a batch) whose
    /// work is their sum \[s\]; default 0: every request is an event (the original). See
    /// the module docs, "Batches".
    #[serde(default)]
    pub batch_gap_s: f64,
}

impl Default for MmppFitOptions {
    fn default() -> MmppFitOptions {
        MmppFitOptions {
            interval_s: 1.0,
            step_s: 1e-5,
            band_factor: 2.0,
            max_states: 10,
            sizes: SizeKind::Exponential,
            state_rate: StateRate::BandCentre,
            batch_gap_s: 0.0,
        }
    }
}

/// Errors of fitting an MMPP.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    #[error("trace has no requests; an mmpp is fitted to at least one request")]
    EmptyTrace,
    #[error(
        "option {option} = {value} is not a positive finite number; use e.g. the default {default}"
    )]
    InvalidOption {
        option: &'static str,
        value: f64,
        default: f64,
    },
    #[error(
        "max_states is 0; an mmpp has at least one state, so give max_states >= 1 (default 10)"
    )]
    NoStates,
    #[error("max_states = {max_states} is above {limit}; the transition matrix is dense, so give at most {limit}")]
    TooManyStates { max_states: usize, limit: usize },
    #[error("time step {step_s} s is longer than the counting interval {interval_s} s; use a step of at most the interval")]
    StepExceedsInterval { step_s: f64, interval_s: f64 },
    #[error("trace span {span_s} s makes {intervals} counting intervals of {interval_s} s, more than {limit}; use a longer counting interval")]
    TooManyIntervals {
        span_s: f64,
        interval_s: f64,
        intervals: f64,
        limit: u64,
    },
    #[error("request {index}: work {work} is not finite and non-negative; work functions must return finite work >= 0")]
    InvalidWork { index: usize, work: f64 },
    #[error("total work {total} is not finite and positive; an mmpp needs requests with positive, summable work")]
    TotalWork { total: f64 },
    #[error("state {state}: rate {rate_per_s} requests/s gives arrival probability {arrival_prob} per {step_s} s step, above 1; use a time step of at most {max_step_s} s")]
    ArrivalProbability {
        state: usize,
        rate_per_s: f64,
        step_s: f64,
        arrival_prob: f64,
        max_step_s: f64,
    },
    #[error(
        "fitted mmpp is invalid ({0}); this is a bug in the fit, please report it with the trace"
    )]
    Invalid(#[from] CurveError),
}

/// One band of request counts per counting interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    /// lower edge [requests/interval], exclusive (the lowest band includes it); ≥ 0
    pub lower: f64,
    /// centre λ [requests/interval]
    pub centre: f64,
    /// upper edge [requests/interval], inclusive
    pub upper: f64,
}

/// The bands covering the counts of a trace, lowest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Bands {
    /// band factor k used (the requested one, or the least larger one that fits `max_states`)
    pub factor: f64,
    /// contiguous bands, ascending: `bands[i].upper == bands[i + 1].lower`, the last band's
    /// upper edge is the largest count and the first band's lower edge is at most the least
    pub bands: Vec<Band>,
}

impl Bands {
    /// Index of the band holding `count`: the lowest band whose upper edge is ≥ `count`
    /// (counts above the top band go to the top band).
    pub fn band_of(&self, count: u64) -> usize {
        let c = count as f64;
        self.bands
            .partition_point(|b| b.upper < c)
            .min(self.bands.len().saturating_sub(1))
    }
}

/// √λ of the top band: the root of s² + k·s = max, in a form without cancellation or overflow.
fn top_root(max_count: f64, k: f64) -> f64 {
    2.0 * max_count / (k + k.hypot(2.0 * max_count.sqrt()))
}

/// The roots s_i = √λ_i, top first, of the bands with factor k, stopping at the first band
/// whose lower edge s(s − k) is ≤ `min_count`, or after `limit` bands. Returns the roots and
/// whether the range was covered.
fn band_roots(min_count: f64, max_count: f64, k: f64, limit: usize) -> (Vec<f64>, bool) {
    let mut roots = Vec::new();
    let mut s = top_root(max_count, k);
    while roots.len() < limit {
        roots.push(s);
        if s * (s - k) <= min_count {
            return (roots, true);
        }
        s -= k;
    }
    (roots, false)
}

/// Contiguous count bands covering [`min_count`, `max_count`] with factor `band_factor`
/// (step 2 of the module docs). If more than `max_states` bands would be needed, the factor
/// is raised by bisection to the least one with which `max_states` bands suffice.
pub fn count_bands(
    min_count: u64,
    max_count: u64,
    band_factor: f64,
    max_states: usize,
) -> Result<Bands, FitError> {
    check_positive("band_factor", band_factor, 2.0)?;
    check_max_states(max_states)?;
    let (lo_count, hi_count) = (
        min_count.min(max_count) as f64,
        min_count.max(max_count) as f64,
    );
    if hi_count <= 0.0 {
        // Every interval is empty (never the case for a fitted trace): one band at 0.
        return Ok(Bands {
            factor: band_factor,
            bands: vec![Band {
                lower: 0.0,
                centre: 0.0,
                upper: 0.0,
            }],
        });
    }
    let (mut roots, covered) = band_roots(lo_count, hi_count, band_factor, max_states);
    let mut factor = band_factor;
    if !covered {
        // n(k), the number of bands needed, is non-increasing in k: widen the bands. At
        // k ≥ √(max/2) one band reaches 0, so `hi` is feasible.
        let mut lo = band_factor;
        let mut hi = band_factor.max((hi_count / 2.0).sqrt()) * 2.0;
        let (hi_roots, hi_ok) = band_roots(lo_count, hi_count, hi, max_states);
        roots = hi_roots;
        debug_assert!(
            hi_ok,
            "band factor {hi} should cover [{lo_count}, {hi_count}]"
        );
        for _ in 0..200 {
            if hi - lo <= BISECTION_REL_TOL * hi {
                break;
            }
            let mid = 0.5 * (lo + hi);
            let (mid_roots, ok) = band_roots(lo_count, hi_count, mid, max_states);
            if ok {
                hi = mid;
                roots = mid_roots;
            } else {
                lo = mid;
            }
        }
        factor = hi;
        tracing::debug!(
            requested = band_factor,
            factor,
            max_states,
            min_count,
            max_count,
            "widened mmpp count bands to fit max_states"
        );
    }
    // Edges, top first: the top band's upper edge is exactly the largest count; each lower
    // edge is the next band's upper edge (the same f64), the last clamped at 0.
    let mut bands = Vec::with_capacity(roots.len());
    let mut upper = hi_count;
    for (i, &s) in roots.iter().enumerate() {
        let mut lower = s * (s - factor);
        if i + 1 == roots.len() {
            lower = lower.max(0.0);
        }
        bands.push(Band {
            lower,
            centre: s * s,
            upper,
        });
        upper = lower;
    }
    bands.reverse();
    Ok(Bands { factor, bands })
}

fn check_positive(option: &'static str, value: f64, default: f64) -> Result<(), FitError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(FitError::InvalidOption {
            option,
            value,
            default,
        })
    }
}

fn check_max_states(max_states: usize) -> Result<(), FitError> {
    if max_states == 0 {
        return Err(FitError::NoStates);
    }
    if max_states > MAX_STATES_LIMIT {
        return Err(FitError::TooManyStates {
            max_states,
            limit: MAX_STATES_LIMIT,
        });
    }
    Ok(())
}

/// Where requests fall among counting intervals that start at the first request.
struct Intervals {
    first_ns: u64,
    interval_ns: f64,
    count: usize,
}

impl Intervals {
    fn new(requests: &[Request], interval_s: f64) -> Result<Intervals, FitError> {
        Intervals::over(requests.iter().map(|r| r.arrival_ns), interval_s)
    }

    fn over(
        times: impl Iterator<Item = u64> + Clone,
        interval_s: f64,
    ) -> Result<Intervals, FitError> {
        check_positive("interval_s", interval_s, 1.0)?;
        let first_ns = times.clone().min().ok_or(FitError::EmptyTrace)?;
        let last_ns = times.max().unwrap_or(first_ns);
        let interval_ns = interval_s * 1e9;
        let span_ns = (last_ns - first_ns) as f64;
        let intervals = (span_ns / interval_ns).floor() + 1.0;
        if intervals.is_nan() || intervals > MAX_INTERVALS as f64 {
            return Err(FitError::TooManyIntervals {
                span_s: span_ns * 1e-9,
                interval_s,
                intervals,
                limit: MAX_INTERVALS,
            });
        }
        Ok(Intervals {
            first_ns,
            interval_ns,
            count: intervals as usize,
        })
    }

    fn index(&self, req: &Request) -> usize {
        self.index_ns(req.arrival_ns)
    }

    fn index_ns(&self, t_ns: u64) -> usize {
        let i = ((t_ns - self.first_ns) as f64 / self.interval_ns) as usize;
        i.min(self.count - 1)
    }
}

/// Requests per counting interval \[requests\], intervals of `interval_s` \[s\] counted from the
/// first request through the last (step 1 of the module docs). The requests need not be
/// sorted.
pub fn interval_counts(requests: &[Request], interval_s: f64) -> Result<Vec<u64>, FitError> {
    let iv = Intervals::new(requests, interval_s)?;
    let mut counts = vec![0u64; iv.count];
    for r in requests {
        counts[iv.index(r)] += 1;
    }
    Ok(counts)
}

/// Per-state tallies while fitting.
#[derive(Debug, Clone, Default)]
struct Tally {
    intervals: u64,
    requests: u64,
    work: f64,
    /// intervals of this state that have a successor interval
    with_successor: u64,
    /// work values of the state's requests (only kept for empirical sizes)
    works: Vec<f64>,
}

/// Atoms `[work, probability]` of the distinct values in `works`, ascending.
fn empirical_atoms(mut works: Vec<f64>) -> Vec<[f64; 2]> {
    works.sort_by(f64::total_cmp);
    let n = works.len() as f64;
    let mut atoms: Vec<[f64; 2]> = Vec::new();
    let mut run = 0usize;
    for (i, &w) in works.iter().enumerate() {
        run += 1;
        if works.get(i + 1) != Some(&w) {
            atoms.push([w, run as f64 / n]);
            run = 0;
        }
    }
    atoms
}

/// Merges arrival events `(time [ns], work)` closer than `gap_ns` to the previous one into one
/// event at the first one's time with the summed work; the result is sorted by time.
fn batches(mut events: Vec<(u64, f64)>, gap_ns: u64) -> Vec<(u64, f64)> {
    events.sort_by_key(|e| e.0);
    let mut out: Vec<(u64, f64)> = Vec::with_capacity(events.len());
    let mut last = None;
    for (t, w) in events {
        match (out.last_mut(), last) {
            (Some(batch), Some(prev)) if t - prev < gap_ns => batch.1 += w,
            _ => out.push((t, w)),
        }
        last = Some(t);
    }
    out
}

/// Fits an MMPP to `requests` (any order), with the work of each request from `work`, as
/// described in the module docs. The result passes [`Mmpp::validate`].
pub fn fit_mmpp(
    requests: &[Request],
    work: &dyn WorkFunction,
    opts: &MmppFitOptions,
) -> Result<Mmpp, FitError> {
    check_positive("interval_s", opts.interval_s, 1.0)?;
    check_positive("step_s", opts.step_s, 1e-5)?;
    check_positive("band_factor", opts.band_factor, 2.0)?;
    check_max_states(opts.max_states)?;
    if opts.step_s > opts.interval_s {
        return Err(FitError::StepExceedsInterval {
            step_s: opts.step_s,
            interval_s: opts.interval_s,
        });
    }
    if requests.is_empty() {
        return Err(FitError::EmptyTrace);
    }

    // 1. Arrival events (requests, or batches of them) and counts per interval.
    if !(opts.batch_gap_s.is_finite() && opts.batch_gap_s >= 0.0) {
        return Err(FitError::InvalidOption {
            option: "batch_gap_s",
            value: opts.batch_gap_s,
            default: 0.0,
        });
    }
    let mut events: Vec<(u64, f64)> = Vec::with_capacity(requests.len());
    for (index, r) in requests.iter().enumerate() {
        let w = work.work(r);
        if !(w.is_finite() && w >= 0.0) {
            return Err(FitError::InvalidWork { index, work: w });
        }
        events.push((r.arrival_ns, w));
    }
    if opts.batch_gap_s > 0.0 {
        events = batches(events, (opts.batch_gap_s * 1e9) as u64);
    }
    let iv = Intervals::over(events.iter().map(|e| e.0), opts.interval_s)?;
    let mut counts = vec![0u64; iv.count];
    for &(t, _) in &events {
        counts[iv.index_ns(t)] += 1;
    }
    let works: Vec<f64> = events.iter().map(|e| e.1).collect();
    let total_work: f64 = works.iter().sum();
    if !(total_work.is_finite() && total_work > 0.0) {
        return Err(FitError::TotalWork { total: total_work });
    }

    // 2. Bands.
    let (min_count, max_count) = counts
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), &c| (lo.min(c), hi.max(c)));
    let bands = count_bands(min_count, max_count, opts.band_factor, opts.max_states)?;

    // 3. Intervals → bands; tallies per band.
    let band_of: Vec<u32> = counts.iter().map(|&c| bands.band_of(c) as u32).collect();
    let mut tally = vec![Tally::default(); bands.bands.len()];
    let mut pairs = vec![vec![0u64; bands.bands.len()]; bands.bands.len()];
    for (m, &b) in band_of.iter().enumerate() {
        let t = &mut tally[b as usize];
        t.intervals += 1;
        if let Some(&next) = band_of.get(m + 1) {
            t.with_successor += 1;
            pairs[b as usize][next as usize] += 1;
        }
    }
    let keep_sizes = opts.sizes == SizeKind::Empirical;
    for &(time, w) in &events {
        let t = &mut tally[band_of[iv.index_ns(time)] as usize];
        t.requests += 1;
        t.work += w;
        if keep_sizes {
            t.works.push(w);
        }
    }

    // Drop bands without intervals; `kept[i]` is the band of state i, rates ascending.
    let kept: Vec<usize> = (0..bands.bands.len())
        .filter(|&b| tally[b].intervals > 0)
        .collect();
    if kept.len() < bands.bands.len() {
        tracing::debug!(
            bands = bands.bands.len(),
            states = kept.len(),
            "dropped mmpp bands without intervals"
        );
    }

    // 6. Sizes of the whole trace, for states without (positive) work.
    let trace_sizes = || match opts.sizes {
        SizeKind::Exponential => SizeModel::Exponential {
            mean: total_work / events.len() as f64,
        },
        SizeKind::Empirical => SizeModel::Empirical {
            atoms: empirical_atoms(works.clone()),
        },
    };
    let mut trace_sizes_cache: Option<SizeModel> = None;
    let with_successor: Vec<u64> = tally.iter().map(|t| t.with_successor).collect();

    let mut states = Vec::with_capacity(kept.len());
    for (state, &b) in kept.iter().enumerate() {
        let t = std::mem::take(&mut tally[b]);
        // 4. Rate.
        let per_interval = match opts.state_rate {
            StateRate::BandCentre => bands.bands[b].centre,
            StateRate::Observed => t.requests as f64 / t.intervals as f64,
        };
        let rate_per_s = per_interval / opts.interval_s;
        let arrival_prob = rate_per_s * opts.step_s;
        if arrival_prob.is_nan() || arrival_prob > 1.0 {
            return Err(FitError::ArrivalProbability {
                state,
                rate_per_s,
                step_s: opts.step_s,
                arrival_prob,
                max_step_s: 1.0 / rate_per_s,
            });
        }
        let sizes = if t.requests > 0 && t.work > 0.0 {
            match opts.sizes {
                SizeKind::Exponential => SizeModel::Exponential {
                    mean: t.work / t.requests as f64,
                },
                SizeKind::Empirical => SizeModel::Empirical {
                    atoms: empirical_atoms(t.works),
                },
            }
        } else {
            trace_sizes_cache.get_or_insert_with(trace_sizes).clone()
        };
        states.push(MmppState {
            rate_per_s,
            arrival_prob,
            sizes,
            intervals: t.intervals,
            requests: t.requests,
            work: t.work,
        });
    }

    // 5. Transitions per step.
    let scale = opts.step_s / opts.interval_s;
    let mut transition = vec![vec![0.0; kept.len()]; kept.len()];
    for (i, &bi) in kept.iter().enumerate() {
        let row = &mut transition[i];
        let m = with_successor[bi];
        let mut off = 0.0;
        if m > 0 {
            for (j, &bj) in kept.iter().enumerate() {
                if i != j {
                    let p = pairs[bi][bj] as f64 / m as f64 * scale;
                    row[j] = p;
                    off += p;
                }
            }
        }
        row[i] = (1.0 - off).max(0.0);
    }

    let mmpp = Mmpp {
        step_s: opts.step_s,
        interval_s: opts.interval_s,
        states,
        transition,
    };
    mmpp.validate()?;
    Ok(mmpp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NetworkCost;
    use tailbound_model::Op;

    fn req(t_s: f64, size: u64) -> Request {
        Request {
            arrival_ns: (t_s * 1e9).round() as u64,
            size_bytes: size,
            op: Op::DiskRead,
        }
    }

    /// Requests spread evenly over each 1 s interval, `counts[m]` in interval m, from `t0_s`.
    fn trace_with_counts(t0_s: f64, counts: &[u64], size: u64) -> Vec<Request> {
        let mut v = Vec::new();
        for (m, &c) in counts.iter().enumerate() {
            for k in 0..c {
                v.push(req(t0_s + m as f64 + k as f64 / c as f64, size));
            }
        }
        v
    }

    /// Work = size in bytes, so tests can reason about work directly.
    struct Bytes;
    impl WorkFunction for Bytes {
        fn work(&self, r: &Request) -> f64 {
            r.size_bytes as f64
        }
        fn unit(&self) -> &'static str {
            "bytes"
        }
    }

    #[test]
    fn band_centres_follow_the_square_root_recurrence() {
        let b = count_bands(0, 500, 2.0, 100).unwrap();
        assert_eq!(b.factor, 2.0);
        let top = b.bands.last().unwrap();
        assert_eq!(top.upper, 500.0);
        assert!((top.centre + 2.0 * top.centre.sqrt() - 500.0).abs() < 1e-9);
        for w in b.bands.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            assert_eq!(lo.upper, hi.lower);
            assert!((lo.centre - (hi.centre.sqrt() - 2.0).powi(2)).abs() < 1e-9);
            assert!((hi.lower - (hi.centre - 2.0 * hi.centre.sqrt())).abs() < 1e-9);
        }
        assert_eq!(b.bands[0].lower, 0.0);
    }

    #[test]
    fn equal_counts_give_one_band() {
        let b = count_bands(7, 7, 2.0, 10).unwrap();
        assert_eq!(b.bands.len(), 1);
        assert_eq!(b.band_of(7), 0);
    }

    #[test]
    fn counts_map_to_the_band_containing_them() {
        // max = 120 = 10² + 2·10: roots 10, 8, 6, 4, 2 and edges 0, 8, 24, 48, 80, 120.
        let b = count_bands(0, 120, 2.0, 10).unwrap();
        let edges: Vec<f64> = b.bands.iter().map(|x| x.upper).collect();
        for (e, want) in edges.iter().zip([8.0, 24.0, 48.0, 80.0, 120.0]) {
            assert!((e - want).abs() < 1e-9, "{edges:?}");
        }
        for (count, band) in [(0, 0), (7, 0), (9, 1), (47, 2), (49, 3), (79, 3), (81, 4)] {
            assert_eq!(b.band_of(count), band, "count {count}");
        }
        assert_eq!(b.band_of(120), 4);
        assert_eq!(b.band_of(1000), 4);
    }

    #[test]
    fn single_interval_gives_one_state_with_identity() {
        let reqs = trace_with_counts(5.0, &[30], 100);
        let m = fit_mmpp(&reqs, &Bytes, &MmppFitOptions::default()).unwrap();
        assert_eq!(m.states.len(), 1);
        assert_eq!(m.transition, vec![vec![1.0]]);
        assert_eq!(m.states[0].intervals, 1);
        assert_eq!(m.states[0].requests, 30);
        assert_eq!(m.states[0].sizes, SizeModel::Exponential { mean: 100.0 });
    }

    #[test]
    fn requests_at_one_instant_fit() {
        let reqs: Vec<Request> = (0..50).map(|_| req(3.0, 10)).collect();
        for state_rate in [StateRate::BandCentre, StateRate::Observed] {
            let opts = MmppFitOptions {
                state_rate,
                ..MmppFitOptions::default()
            };
            let m = fit_mmpp(&reqs, &Bytes, &opts).unwrap();
            assert_eq!(m.states.len(), 1);
            assert!(m.states[0].rate_per_s > 0.0 && m.states[0].rate_per_s <= 50.0);
        }
    }

    #[test]
    fn counting_starts_at_the_first_request() {
        let reqs = trace_with_counts(1000.5, &[3, 0, 5], 1);
        assert_eq!(interval_counts(&reqs, 1.0).unwrap(), vec![3, 0, 5]);
        // Unsorted input counts the same.
        let mut rev = reqs.clone();
        rev.reverse();
        assert_eq!(interval_counts(&rev, 1.0).unwrap(), vec![3, 0, 5]);
    }

    #[test]
    fn transitions_are_per_interval_frequencies_scaled_to_the_step() {
        // States by interval: A A B A B B (A = 10 requests, B = 100). A has 3 intervals with
        // a successor (A→A, A→B, A→B), B has 2 (B→A, B→B); the last interval is B.
        let reqs = trace_with_counts(0.0, &[10, 10, 100, 10, 100, 100], 1);
        let opts = MmppFitOptions {
            state_rate: StateRate::Observed,
            ..MmppFitOptions::default()
        };
        let m = fit_mmpp(&reqs, &Bytes, &opts).unwrap();
        assert_eq!(m.states.len(), 2);
        let (a, b) = (&m.states[0], &m.states[1]);
        assert_eq!((a.intervals, b.intervals), (3, 3));
        assert_eq!((a.rate_per_s, b.rate_per_s), (10.0, 100.0));
        let step = 1e-5;
        assert!((m.transition[0][1] - 2.0 / 3.0 * step).abs() < 1e-18);
        assert!((m.transition[1][0] - 1.0 / 2.0 * step).abs() < 1e-18);
        assert_eq!(m.transition[0][0], 1.0 - m.transition[0][1]);
        assert_eq!(m.transition[1][1], 1.0 - m.transition[1][0]);
    }

    #[test]
    fn a_state_seen_only_last_keeps_an_identity_row() {
        let reqs = trace_with_counts(0.0, &[10, 10, 10, 500], 1);
        let m = fit_mmpp(&reqs, &Bytes, &MmppFitOptions::default()).unwrap();
        assert_eq!(m.states.len(), 2);
        assert_eq!(m.transition[1], vec![0.0, 1.0]);
        assert!((m.transition[0][1] - 1e-5 / 3.0).abs() < 1e-18);
    }

    #[test]
    fn empty_intervals_take_the_trace_sizes() {
        // Counts 100, 0, 0, 100: the zero band is its own state, without requests.
        let mut reqs = trace_with_counts(0.0, &[100], 10);
        reqs.extend(trace_with_counts(3.0, &[100], 30));
        let opts = MmppFitOptions {
            sizes: SizeKind::Empirical,
            ..MmppFitOptions::default()
        };
        let m = fit_mmpp(&reqs, &Bytes, &opts).unwrap();
        let empty: Vec<&MmppState> = m.states.iter().filter(|s| s.requests == 0).collect();
        assert_eq!(empty.len(), 1);
        assert_eq!(empty[0].intervals, 2);
        assert_eq!(
            empty[0].sizes,
            SizeModel::Empirical {
                atoms: vec![[10.0, 0.5], [30.0, 0.5]]
            }
        );
    }

    #[test]
    fn empirical_atoms_merge_equal_values() {
        let atoms = empirical_atoms(vec![3.0, 1.0, 3.0, 2.0, 3.0, 1.0]);
        assert_eq!(
            atoms,
            vec![[1.0, 2.0 / 6.0], [2.0, 1.0 / 6.0], [3.0, 3.0 / 6.0]]
        );
    }

    #[test]
    fn state_sizes_use_the_work_function() {
        let reqs = trace_with_counts(0.0, &[4, 4], 1000);
        let m = fit_mmpp(
            &reqs,
            &NetworkCost::RESPONSE_DIRECTION,
            &MmppFitOptions::default(),
        )
        .unwrap();
        assert_eq!(m.states.len(), 1);
        assert!((m.states[0].sizes.mean() - 1300.0).abs() < 1e-9);
        assert!((m.states[0].work - 8.0 * 1300.0).abs() < 1e-9);
    }

    #[test]
    fn bad_options_are_errors() {
        let reqs = trace_with_counts(0.0, &[5, 6], 1);
        let d = MmppFitOptions::default();
        let fit = |o: MmppFitOptions| fit_mmpp(&reqs, &Bytes, &o).unwrap_err();
        for v in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                fit(MmppFitOptions { interval_s: v, ..d }),
                FitError::InvalidOption {
                    option: "interval_s",
                    ..
                }
            ));
            assert!(matches!(
                fit(MmppFitOptions { step_s: v, ..d }),
                FitError::InvalidOption {
                    option: "step_s",
                    ..
                }
            ));
            assert!(matches!(
                fit(MmppFitOptions {
                    band_factor: v,
                    ..d
                }),
                FitError::InvalidOption {
                    option: "band_factor",
                    ..
                }
            ));
        }
        assert_eq!(
            fit(MmppFitOptions { max_states: 0, ..d }),
            FitError::NoStates
        );
        assert!(matches!(
            fit(MmppFitOptions {
                max_states: 1_000_000,
                ..d
            }),
            FitError::TooManyStates { .. }
        ));
        assert!(matches!(
            fit(MmppFitOptions { step_s: 2.0, ..d }),
            FitError::StepExceedsInterval { .. }
        ));
        assert!(matches!(
            fit(MmppFitOptions {
                interval_s: 1e-9,
                step_s: 1e-10,
                ..d
            }),
            FitError::TooManyIntervals { .. }
        ));
        assert_eq!(fit_mmpp(&[], &Bytes, &d).unwrap_err(), FitError::EmptyTrace);
    }

    #[test]
    fn too_fast_a_state_asks_for_a_smaller_step() {
        let reqs = trace_with_counts(0.0, &[5000, 5000], 1);
        let opts = MmppFitOptions {
            step_s: 1e-3,
            ..MmppFitOptions::default()
        };
        let e = fit_mmpp(&reqs, &Bytes, &opts).unwrap_err();
        let FitError::ArrivalProbability { max_step_s, .. } = e else {
            panic!("{e:?}");
        };
        assert!(max_step_s < 1e-3 && max_step_s > 1e-4);
        assert!(e.to_string().contains("use a time step of at most"));
    }

    #[test]
    fn bad_work_is_an_error() {
        struct Nan;
        impl WorkFunction for Nan {
            fn work(&self, _: &Request) -> f64 {
                f64::NAN
            }
            fn unit(&self) -> &'static str {
                "?"
            }
        }
        struct Zero;
        impl WorkFunction for Zero {
            fn work(&self, _: &Request) -> f64 {
                0.0
            }
            fn unit(&self) -> &'static str {
                "?"
            }
        }
        let reqs = trace_with_counts(0.0, &[5], 1);
        let d = MmppFitOptions::default();
        assert!(matches!(
            fit_mmpp(&reqs, &Nan, &d),
            Err(FitError::InvalidWork { index: 0, .. })
        ));
        assert!(matches!(
            fit_mmpp(&reqs, &Zero, &d),
            Err(FitError::TotalWork { .. })
        ));
    }

    #[test]
    fn batches_merge_close_requests_into_one_event_with_their_work() {
        let events = vec![
            (0u64, 1.0),
            (500_000, 2.0),
            (900_000, 3.0),
            (5_000_000, 4.0),
        ];
        // chained gaps: 0.5 ms and 0.4 ms are under 1 ms, 4.1 ms is not
        assert_eq!(
            batches(events.clone(), 1_000_000),
            vec![(0, 6.0), (5_000_000, 4.0)]
        );
        assert_eq!(batches(events.clone(), 1), events);
        assert_eq!(batches(vec![(7, 1.0), (3, 2.0)], 10), vec![(3, 3.0)]);
    }

    #[test]
    fn a_batchy_trace_fitted_by_batches_carries_the_batch_work() {
        // 20 batches of 50 requests of 1000 B, 1 µs apart, one batch every 0.5 s
        let mut reqs = Vec::new();
        for b in 0..20 {
            for k in 0..50 {
                reqs.push(Request {
                    arrival_ns: b * 500_000_000 + k * 1_000,
                    size_bytes: 1000,
                    op: Op::DiskRead,
                });
            }
        }
        struct Bytes;
        impl WorkFunction for Bytes {
            fn work(&self, r: &Request) -> f64 {
                r.size_bytes as f64
            }
            fn unit(&self) -> &'static str {
                "bytes"
            }
        }
        let sizes = Bytes;
        let single = fit_mmpp(&reqs, &sizes, &MmppFitOptions::default()).unwrap();
        let batched = fit_mmpp(
            &reqs,
            &sizes,
            &MmppFitOptions {
                batch_gap_s: 1e-3,
                sizes: SizeKind::Empirical,
                ..MmppFitOptions::default()
            },
        )
        .unwrap();
        let events = |m: &Mmpp| m.states.iter().map(|s| s.requests).sum::<u64>();
        assert_eq!(events(&single), 1000);
        assert_eq!(events(&batched), 20);
        // same work either way; each batched event carries 50 kB
        let work = |m: &Mmpp| m.states.iter().map(|s| s.work).sum::<f64>();
        assert_eq!(work(&single), work(&batched));
        let theta = 1e-4;
        let mgf = batched.states[0].sizes.mgf(theta).unwrap();
        assert!((mgf - (theta * 50_000.0).exp()).abs() < 1e-9 * mgf, "{mgf}");
        let bad = MmppFitOptions {
            batch_gap_s: -1.0,
            ..MmppFitOptions::default()
        };
        assert!(matches!(
            fit_mmpp(&reqs, &sizes, &bad),
            Err(FitError::InvalidOption {
                option: "batch_gap_s",
                ..
            })
        ));
    }
}
