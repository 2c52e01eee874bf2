//! Pulsar's estimators as sans-IO state machines (pulsar §4.2–§4.3): a flow's demand from the
//! enforcer's interval statistics, and an appliance's capacity from congestion signals.
//!
//! Both are fed once per control interval by whoever owns the clock (the controller in
//! `tailbound-allocation`, on virtual time in the simulator); neither reads a clock.
//!
//! **Demand** ([`DemandEstimator`]). Per resource on the flow's path, over interval `i`: the
//! utilization `u` (tokens its requests consumed), backlog `b` (tokens queued at the end),
//! queueing `q` and outstanding `o` (average tokens queued at the enforcer and outstanding
//! beyond it, from periodic samples). The demand for the next interval is eq. (6),
//! `d = u + max(b, q·u/o)` element-wise (eq. 4 for open-loop flows, eq. 5 for closed-loop
//! ones, the larger of the two since the controller cannot tell them apart), divided by the
//! interval length to get tokens/s and smoothed by an exponentially weighted moving average.
//!
//! **Capacity** ([`CapacityEstimator`], Fig. 8). A probing window `[minW, maxW]` holds the
//! appliance's real capacity; the estimate `C_EST` is in it. Each control interval arrives as
//! its sub-interval samples ([`ApplianceReading`]s, the enforcers' timer of pulsar §5; or one
//! reading for the whole interval).
//!
//! *Signals.* Pulsar's throughput signal is "the appliance served less than `C_EST`". Alone it
//! cannot tell an overloaded appliance from tenants that asked for less, and it misses the
//! overload that matters most: closed-loop tenants behind an appliance allocated at or just
//! above its capacity keep their whole windows queued there, their enforcers empty, eq. (5)
//! sees no demand beyond what they get, the appliance serves ≈ `C_EST` and its FIFO shares it
//! by window size, not by guarantee (issue 7: B got half its guarantee in Fig. 14). So a
//! reading is attributed to the appliance with `O`, the quantity eq. (7) relies on: the
//! appliance is **queueing** when its residence time `O / throughput` exceeds `queue_factor`
//! (4) × its unloaded residence time (the smallest interval value seen, allowed to drift up 5%
//! per interval so that slower requests are learnt). A reading is then *congested* (queueing:
//! the throughput signal, including a queue that builds while throughput is within the
//! tolerance of `C_EST`), *violated* (some tenant's guarantee was not met **while** the
//! appliance queued: pulsar's VDC-violation signal is uneven queueing at an overloaded
//! appliance; a shortfall without it comes from elsewhere on the path), *clean* (served at
//! least `(1 − tolerance)·C_EST` without queueing), *limited* (less, without queueing: the
//! tenants' demand; no information) or *idle*.
//!
//! *Three consistent readings* (pulsar §5) are counted over samples, across intervals: a run
//! of `confirm` congested-or-violated samples anywhere in an interval acts at its end. Counting
//! whole intervals instead would let an over-estimate overload the appliance for three
//! intervals, against §4.3's "not more than one control interval" (and Fig. 8, which reverts
//! one interval after the overshoot).
//!
//! Phases:
//! 1. **Increase** (binary search, like BIC-TCP): after an interval that served `C_EST`
//!    without queueing or violations, `minW := C_EST` and `C_EST := (minW + maxW)/2`; when
//!    `maxW − minW` falls below a fraction of `maxW` (1%) the estimator is **stable** at
//!    `minW`. Limited intervals hold the window.
//! 2. **Revert**: on confirmed congestion `maxW := C_EST`, `C_EST := minW`. At `C_EST = minW`
//!    congestion changes nothing (queues an over-estimate built are draining) unless the
//!    appliance queued in *every* sample of the interval: minW was verified on a load within
//!    the tolerance below it and is not available, so the window drops to
//!    `(1 − tolerance)` × what the appliance served while queueing (never below the
//!    configured floor); otherwise closed-loop tenants keep it saturated indefinitely.
//! 3. **Wait**: on a confirmed violation revert, then hold `C_EST` until `confirm` samples in
//!    a row meet every guarantee (the appliance drains the queues an over-estimate built).
//! 4. **Stable**: eq. (7) once per interval, `C_EST[i+1] = C_EST[i] − α·(O[i] − O_s)` with
//!    `O_s` the outstanding tokens when the phase began (not raised on a demand-limited
//!    interval); a workload mix more than 10% (total-variation distance) from the one at the
//!    start of the phase, in `confirm` samples in a row *and* over the interval, or a
//!    confirmed violation, restarts the search from the initial window.
//!
//! What is ours rather than pulsar's: the queueing attribution and its factor, the residence
//! drift, the floor lowering, α = 0.5/s and the 10% serve tolerance (the enforcers deliver
//! ~90–95% of an allocation at the simulator's request rates: each flow's per-hop demand
//! vector is noisy and its multi-resource bucket binds on whichever hop runs short).

/// Invalid estimator settings or inputs. Returned before any state changes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EstimateError {
    #[error("invalid EWMA gain {gain}: expected a weight of the newest interval in (0, 1]")]
    InvalidGain { gain: f64 },
    #[error("invalid control interval {interval_s} s: expected a finite length > 0")]
    InvalidInterval { interval_s: f64 },
    #[error(
        "invalid capacity window [{min_w}, {max_w}] or settings: expected 0 < minW < maxW \
         (finite) [tokens/s], fractions in (0, 1), alpha >= 0 and confirm >= 1"
    )]
    InvalidWindow { min_w: f64, max_w: f64 },
    #[error(
        "invalid stored capacity estimate {estimate} in window [{min_w}, {max_w}]: expected \
         finite numbers with {cfg_min_w} <= minW <= maxW <= {cfg_max_w} and the estimate \
         within [{cfg_min_w}, {cfg_max_w}] [tokens/s], and non-negative outstanding, workload \
         and residence time"
    )]
    InvalidState {
        estimate: f64,
        min_w: f64,
        max_w: f64,
        cfg_min_w: f64,
        cfg_max_w: f64,
    },
    #[error(
        "got {got} {what} entries for a flow with {expected} resources on its path; \
         pass one per resource"
    )]
    WrongLength {
        what: &'static str,
        got: usize,
        expected: usize,
    },
}

/// EWMA-smoothed demand of one flow (pulsar §4.2, eqs. 4–6).
#[derive(Debug, Clone, PartialEq)]
pub struct DemandEstimator {
    /// weight of the newest interval in the moving average, in (0, 1]
    gain: f64,
    /// smoothed demand per resource on the path [tokens/s]; `None` before the first interval
    smoothed: Option<Vec<f64>>,
}

/// One interval's statistics of a flow at its enforcer, per resource on its path [tokens].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemandReport<'a> {
    /// tokens consumed by the flow's requests during the interval
    pub utilization: &'a [f64],
    /// tokens of requests still queued at the enforcer at the end of the interval
    pub backlog: &'a [f64],
    /// average tokens queued at the enforcer during the interval
    pub queueing: &'a [f64],
    /// average tokens outstanding beyond the enforcer during the interval
    pub outstanding: &'a [f64],
}

/// Eq. (6): `u + max(b, q·u/o)` element-wise [tokens]; the closed-loop term is 0 where no
/// tokens were outstanding. Negative or non-finite inputs count as 0.
pub fn raw_demand(r: &DemandReport<'_>) -> Vec<f64> {
    let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    (0..r.utilization.len())
        .map(|k| {
            let u = clean(r.utilization[k]);
            let b = clean(r.backlog[k]);
            let q = clean(r.queueing[k]);
            let o = clean(r.outstanding[k]);
            let closed = if o > 0.0 { q * u / o } else { 0.0 };
            u + b.max(closed)
        })
        .collect()
}

impl DemandEstimator {
    /// An estimator whose moving average gives the newest interval weight `gain` ∈ (0, 1]
    /// (1: no smoothing).
    ///
    /// # Errors
    /// [`EstimateError::InvalidGain`].
    pub fn new(gain: f64) -> Result<DemandEstimator, EstimateError> {
        if !(gain.is_finite() && gain > 0.0 && gain <= 1.0) {
            return Err(EstimateError::InvalidGain { gain });
        }
        Ok(DemandEstimator {
            gain,
            smoothed: None,
        })
    }

    /// Takes one interval of `interval_s` seconds and returns the smoothed demand for the next
    /// one [tokens/s]. The first interval initializes the average.
    ///
    /// # Errors
    /// [`EstimateError::WrongLength`] unless the four vectors have one entry per resource (as
    /// many as the first report had); [`EstimateError::InvalidInterval`].
    pub fn observe(
        &mut self,
        report: &DemandReport<'_>,
        interval_s: f64,
    ) -> Result<&[f64], EstimateError> {
        if !(interval_s.is_finite() && interval_s > 0.0) {
            return Err(EstimateError::InvalidInterval { interval_s });
        }
        let n = self
            .smoothed
            .as_ref()
            .map_or(report.utilization.len(), Vec::len);
        for (what, v) in [
            ("utilization", report.utilization),
            ("backlog", report.backlog),
            ("queueing", report.queueing),
            ("outstanding", report.outstanding),
        ] {
            if v.len() != n {
                return Err(EstimateError::WrongLength {
                    what,
                    got: v.len(),
                    expected: n,
                });
            }
        }
        let d: Vec<f64> = raw_demand(report)
            .into_iter()
            .map(|t| t / interval_s)
            .collect();
        let g = self.gain;
        let s = match self.smoothed.take() {
            None => d,
            Some(prev) => prev
                .iter()
                .zip(&d)
                .map(|(p, x)| g * x + (1.0 - g) * p)
                .collect(),
        };
        Ok(self.smoothed.insert(s))
    }

    /// The current smoothed demand [tokens/s], if any interval was observed.
    pub fn demand(&self) -> Option<&[f64]> {
        self.smoothed.as_deref()
    }
}

/// One reading of an appliance as the controller sees it (pulsar §4.3): a whole control
/// interval, or one of the equal sub-interval samples the enforcers' timer takes within it
/// (pulsar §5: a 10 ms timer). Rates are over the reading's own span.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplianceReading {
    /// tokens/s the appliance completed (appliance throughput) [tokens/s]
    pub throughput: f64,
    /// tokens/s the enforcers let through towards it (0: idle, no information) [tokens/s]
    pub offered: f64,
    /// average tokens outstanding at the appliance, `O[i]` (footnote 6: the sum of the flows'
    /// outstanding vectors' entries for it) [tokens]
    pub outstanding: f64,
    /// some tenant's guarantee across the appliance was not met
    pub vdc_violated: bool,
    /// the workload mix reaching the appliance, e.g. each tenant's share of its throughput
    /// (any non-negative weights; compared after normalizing)
    pub workload: Vec<f64>,
}

/// The phase the estimator is in (Fig. 8); `Revert` labels the interval in which a revert
/// happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// ① binary-search increase
    Increase,
    /// ② revert to `minW` after a throughput congestion signal
    Revert,
    /// ③ hold at `minW` until every guarantee is met again
    Wait,
    /// ④ stable: eq. (7)
    Stable,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Increase => "increase",
            Phase::Revert => "revert",
            Phase::Wait => "wait",
            Phase::Stable => "stable",
        }
    }
}

/// Tuning of the capacity estimator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityConfig {
    /// initial and restart lower end of the window, a capacity known to be available [tokens/s]
    pub min_w: f64,
    /// initial and restart upper end, known to exceed the real capacity [tokens/s]
    pub max_w: f64,
    /// stable once `maxW − minW < stable_fraction·maxW` (pulsar: 1%)
    pub stable_fraction: f64,
    /// α of eq. (7) [1/s]: estimate change per outstanding token
    pub alpha_per_s: f64,
    /// relative throughput below the estimate that still counts as serving the estimate
    pub tolerance: f64,
    /// the appliance is *queueing* (it, not the tenants' demand, limits throughput) when its
    /// residence time `O / throughput` exceeds this multiple of its unloaded residence time;
    /// > 1
    pub queue_factor: f64,
    /// the unloaded residence time is the smallest interval's `O / throughput`, allowed to
    /// grow by this fraction per interval so that a workload of slower requests is learnt
    /// (≥ 0)
    pub residence_drift: f64,
    /// total-variation distance of the workload mix that restarts a stable estimate (10%)
    pub shift: f64,
    /// consecutive readings a congestion, violation or shift signal needs (3)
    pub confirm: u32,
}

impl CapacityConfig {
    /// Pulsar's settings for a window `[min_w, max_w]`: 1% stability, 10% shift, three
    /// readings; α = 0.5/s, 10% tolerance, a queue factor of 4 and a 5% drift are ours.
    pub fn new(min_w: f64, max_w: f64) -> CapacityConfig {
        CapacityConfig {
            min_w,
            max_w,
            stable_fraction: 0.01,
            alpha_per_s: 0.5,
            tolerance: 0.10,
            queue_factor: 4.0,
            residence_drift: 0.05,
            shift: 0.10,
            confirm: 3,
        }
    }
}

/// How one reading is classified (module docs, "Signals").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// nothing sent, nothing served
    Idle,
    /// served less than the estimate without queueing: the tenants' demand limited it
    Limited,
    /// served the estimate without queueing
    Clean,
    /// the appliance queued: the throughput congestion signal
    Congested,
    /// a tenant's guarantee was not met while the appliance queued
    Violated,
}

/// Pulsar's appliance capacity estimator (§4.3, Fig. 8); see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityEstimator {
    cfg: CapacityConfig,
    phase: Phase,
    estimate: f64,
    min_w: f64,
    max_w: f64,
    /// O_s [tokens] and the workload at the start of the stable phase
    stable_outstanding: f64,
    stable_workload: Vec<f64>,
    /// the unloaded residence time `O / throughput` [s] (see [`CapacityConfig::residence_drift`])
    base_residence_s: Option<f64>,
    /// consecutive readings (across intervals) showing congestion or a violation, showing a
    /// violation, showing none, and showing a workload shift
    trouble_run: u32,
    violation_run: u32,
    clear_run: u32,
    shift_run: u32,
}

/// What a [`CapacityEstimator`] has learnt ([`CapacityEstimator::state`]), kept by its
/// controller's host across a restart ([`CapacityEstimator::resume`]); the runs of consistent
/// readings start again.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityState {
    pub phase: Phase,
    /// `C_EST` [tokens/s]
    pub estimate: f64,
    /// the probing window [tokens/s]
    pub min_w: f64,
    pub max_w: f64,
    /// `O_s` [tokens] and the workload mix when the stable phase began
    pub stable_outstanding: f64,
    pub stable_workload: Vec<f64>,
    /// the unloaded residence time [s]
    pub base_residence_s: Option<f64>,
}

/// Total-variation distance between two non-negative weight vectors after normalizing (0 when
/// both are empty or zero; 1 when exactly one is).
pub fn workload_distance(a: &[f64], b: &[f64]) -> f64 {
    let clean = |v: f64| if v.is_finite() && v > 0.0 { v } else { 0.0 };
    let sa: f64 = a.iter().map(|&v| clean(v)).sum();
    let sb: f64 = b.iter().map(|&v| clean(v)).sum();
    match (sa > 0.0, sb > 0.0) {
        (false, false) => return 0.0,
        (true, false) | (false, true) => return 1.0,
        _ => {}
    }
    let n = a.len().max(b.len());
    let get = |v: &[f64], k: usize, s: f64| v.get(k).map_or(0.0, |&x| clean(x) / s);
    0.5 * (0..n)
        .map(|k| (get(a, k, sa) - get(b, k, sb)).abs())
        .sum::<f64>()
}

/// A reading with non-finite or negative numbers replaced by 0.
fn sanitized(r: &ApplianceReading) -> (f64, f64, f64) {
    let fin = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
    (fin(r.throughput), fin(r.offered), fin(r.outstanding))
}

impl CapacityEstimator {
    /// Starts in the increase phase at `C_EST = minW`.
    ///
    /// # Errors
    /// [`EstimateError::InvalidWindow`] unless `0 < min_w < max_w` (finite), the fractions are in
    /// (0, 1), α ≥ 0, the queue factor > 1 and `confirm ≥ 1`.
    pub fn new(cfg: CapacityConfig) -> Result<CapacityEstimator, EstimateError> {
        let frac = |v: f64| v.is_finite() && v > 0.0 && v < 1.0;
        if !(cfg.min_w.is_finite()
            && cfg.max_w.is_finite()
            && cfg.min_w > 0.0
            && cfg.min_w < cfg.max_w
            && frac(cfg.stable_fraction)
            && frac(cfg.tolerance)
            && frac(cfg.shift)
            && cfg.alpha_per_s.is_finite()
            && cfg.alpha_per_s >= 0.0
            && cfg.queue_factor.is_finite()
            && cfg.queue_factor > 1.0
            && cfg.residence_drift.is_finite()
            && cfg.residence_drift >= 0.0
            && cfg.confirm >= 1)
        {
            return Err(EstimateError::InvalidWindow {
                min_w: cfg.min_w,
                max_w: cfg.max_w,
            });
        }
        Ok(CapacityEstimator {
            cfg,
            phase: Phase::Increase,
            estimate: cfg.min_w,
            min_w: cfg.min_w,
            max_w: cfg.max_w,
            stable_outstanding: 0.0,
            stable_workload: Vec::new(),
            base_residence_s: None,
            trouble_run: 0,
            violation_run: 0,
            clear_run: 0,
            shift_run: 0,
        })
    }

    /// The current estimate `C_EST` [tokens/s].
    pub fn estimate(&self) -> f64 {
        self.estimate
    }

    /// The probing window `(minW, maxW)` [tokens/s].
    pub fn window(&self) -> (f64, f64) {
        (self.min_w, self.max_w)
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The appliance's unloaded residence time `O / throughput` the queueing signal compares
    /// with, once a reading has served the estimate [s].
    pub fn base_residence_s(&self) -> Option<f64> {
        self.base_residence_s
    }

    /// What the estimator has learnt, to [`CapacityEstimator::resume`] it after a restart.
    pub fn state(&self) -> CapacityState {
        CapacityState {
            phase: self.phase,
            estimate: self.estimate,
            min_w: self.min_w,
            max_w: self.max_w,
            stable_outstanding: self.stable_outstanding,
            stable_workload: self.stable_workload.clone(),
            base_residence_s: self.base_residence_s,
        }
    }

    /// Continues from `s` (what [`CapacityEstimator::state`] returned before a restart); the
    /// runs of consistent readings start again.
    ///
    /// # Errors
    /// [`EstimateError::InvalidState`] unless `s` is one this estimator's settings can reach:
    /// finite, the window `minW ≤ maxW` and `C_EST` inside the configured window (eq. (7) may
    /// move `C_EST` below `minW` in the stable phase), outstanding, workload and residence
    /// time non-negative. Nothing changes then.
    pub fn resume(&mut self, s: &CapacityState) -> Result<(), EstimateError> {
        let fin = |v: f64| v.is_finite() && v >= 0.0;
        let ok = s.min_w.is_finite()
            && s.estimate.is_finite()
            && s.max_w.is_finite()
            && self.cfg.min_w <= s.min_w
            && s.min_w <= s.max_w
            && s.max_w <= self.cfg.max_w
            && self.cfg.min_w <= s.estimate
            && s.estimate <= self.cfg.max_w
            && fin(s.stable_outstanding)
            && s.stable_workload.iter().all(|&w| fin(w))
            && s.base_residence_s.is_none_or(fin);
        if !ok {
            return Err(EstimateError::InvalidState {
                estimate: s.estimate,
                min_w: s.min_w,
                max_w: s.max_w,
                cfg_min_w: self.cfg.min_w,
                cfg_max_w: self.cfg.max_w,
            });
        }
        self.phase = s.phase;
        self.estimate = s.estimate;
        self.min_w = s.min_w;
        self.max_w = s.max_w;
        self.stable_outstanding = s.stable_outstanding;
        self.stable_workload.clone_from(&s.stable_workload);
        self.base_residence_s = s.base_residence_s;
        self.clear_runs();
        Ok(())
    }

    fn restart(&mut self) {
        self.min_w = self.cfg.min_w;
        self.max_w = self.cfg.max_w;
        self.estimate = self.min_w;
        self.phase = Phase::Increase;
        // the unloaded residence time is kept: the first intervals after a shift still drain
        // queues the old estimate built, and would teach a loaded value
        self.clear_runs();
    }

    /// The appliance queued through a whole interval at `C_EST = minW`: minW was verified on
    /// a load below it (within the tolerance) and is not available. What the appliance served
    /// while queueing bounds its capacity; the window drops to `(1 − tolerance)` of that, so
    /// the queue drains (closed-loop tenants otherwise keep it full at any allocation ≥ the
    /// real capacity).
    fn lower_floor(&mut self, throughput: f64) {
        let lower = ((1.0 - self.cfg.tolerance) * throughput).max(self.cfg.min_w);
        if lower < self.min_w {
            self.max_w = self.min_w;
            self.min_w = lower;
            self.estimate = lower;
            self.phase = Phase::Revert;
        }
    }

    fn clear_runs(&mut self) {
        self.trouble_run = 0;
        self.violation_run = 0;
        self.clear_run = 0;
        self.shift_run = 0;
    }

    fn serves_estimate(&self, throughput: f64) -> bool {
        throughput > 0.0 && throughput >= (1.0 - self.cfg.tolerance) * self.estimate
    }

    fn queueing(&self, throughput: f64, outstanding: f64) -> bool {
        match self.base_residence_s {
            Some(base) if throughput > 0.0 => {
                outstanding / throughput > self.cfg.queue_factor * base
            }
            _ => false,
        }
    }

    fn classify(&self, r: &ApplianceReading) -> Class {
        let (thr, offered, outstanding) = sanitized(r);
        let queueing = self.queueing(thr, outstanding);
        if offered <= 0.0 && thr <= 0.0 && outstanding <= 0.0 {
            Class::Idle
        } else if r.vdc_violated && queueing {
            // pulsar's VDC-violation signal is uneven queueing at an overloaded appliance; a
            // shortfall while the appliance does not queue comes from elsewhere on the path
            Class::Violated
        } else if queueing {
            Class::Congested
        } else if self.serves_estimate(thr) {
            Class::Clean
        } else {
            Class::Limited
        }
    }

    /// Takes one control interval given as a single reading and returns the estimate for the
    /// next interval [tokens/s]; see [`CapacityEstimator::observe_interval`].
    pub fn observe(&mut self, r: &ApplianceReading) -> f64 {
        self.observe_interval(std::slice::from_ref(r))
    }

    /// Takes one control interval's readings (its sub-interval samples in order, or one
    /// reading for the whole interval) and returns the estimate for the next interval
    /// [tokens/s]. Signals are counted per reading, across intervals; the estimate changes at
    /// most once, at the end of the interval. Non-finite numbers count as 0; an empty slice
    /// changes nothing.
    pub fn observe_interval(&mut self, readings: &[ApplianceReading]) -> f64 {
        if readings.is_empty() {
            return self.estimate;
        }
        let n = readings.len() as f64;
        let mut thr = 0.0;
        let mut outstanding = 0.0;
        let mut workload: Vec<f64> = Vec::new();
        for r in readings {
            let (t, _, o) = sanitized(r);
            thr += t / n;
            outstanding += o / n;
            if workload.len() < r.workload.len() {
                workload.resize(r.workload.len(), 0.0);
            }
            for (w, &x) in workload.iter_mut().zip(&r.workload) {
                *w += if x.is_finite() && x > 0.0 { x } else { 0.0 };
            }
        }
        // the unloaded residence time: the smallest seen, drifting up slowly
        if thr > 0.0 && outstanding > 0.0 {
            let tau = outstanding / thr;
            let drifted = self
                .base_residence_s
                .map_or(tau, |b| b * (1.0 + self.cfg.residence_drift));
            self.base_residence_s = Some(tau.min(drifted));
        }
        // count consistent readings; a run that reaches `confirm` anywhere in the interval
        // acts at its end
        let confirm = self.cfg.confirm;
        let (mut congestion, mut violation, mut shift) = (false, false, false);
        let mut any_violated = false;
        let mut all_queueing = true;
        for r in readings {
            let last = self.classify(r);
            any_violated |= last == Class::Violated;
            let (t, _, o) = sanitized(r);
            all_queueing &= self.queueing(t, o);
            let trouble = matches!(last, Class::Congested | Class::Violated);
            self.trouble_run = if trouble { self.trouble_run + 1 } else { 0 };
            self.violation_run = if last == Class::Violated {
                self.violation_run + 1
            } else {
                0
            };
            self.clear_run = if last == Class::Violated {
                0
            } else {
                self.clear_run + 1
            };
            let shifted = self.phase == Phase::Stable
                && r.throughput > 0.0
                && workload_distance(&r.workload, &self.stable_workload) > self.cfg.shift;
            self.shift_run = if shifted { self.shift_run + 1 } else { 0 };
            congestion |= self.trouble_run >= confirm;
            violation |= self.violation_run >= confirm;
            shift |= self.shift_run >= confirm;
        }
        // the appliance queued in every reading of the interval
        let persistent = all_queueing && self.queueing(thr, outstanding);
        match self.phase {
            Phase::Increase | Phase::Revert => {
                self.phase = Phase::Increase;
                if congestion {
                    if self.estimate > self.min_w {
                        // ② revert (③ wait after a violation): the capacity is below C_EST
                        self.max_w = self.estimate;
                        self.estimate = self.min_w;
                        self.phase = if violation {
                            Phase::Wait
                        } else {
                            Phase::Revert
                        };
                    } else if persistent {
                        self.lower_floor(thr);
                        if violation {
                            self.phase = Phase::Wait;
                        }
                    } else if violation {
                        // at minW, which was verified: the queues an earlier estimate built
                        // are still draining; the window stays
                        self.phase = Phase::Wait;
                    }
                    self.trouble_run = 0;
                    self.violation_run = 0;
                } else if self.trouble_run == 0
                    && !any_violated
                    && self.serves_estimate(thr)
                    && !self.queueing(thr, outstanding)
                {
                    // ① binary-search increase
                    self.min_w = self.estimate;
                    if self.max_w - self.min_w <= self.cfg.stable_fraction * self.max_w {
                        self.phase = Phase::Stable;
                        self.estimate = self.min_w;
                        self.stable_outstanding = outstanding;
                        self.stable_workload = workload;
                        self.shift_run = 0;
                    } else {
                        self.estimate = 0.5 * (self.min_w + self.max_w);
                    }
                }
            }
            Phase::Wait => {
                // the guarantees decide; the appliance may still be draining its queues
                if self.clear_run >= confirm {
                    self.phase = Phase::Increase;
                    self.trouble_run = 0;
                } else if persistent {
                    // not draining: it cannot serve minW
                    self.lower_floor(thr);
                    self.phase = Phase::Wait;
                }
            }
            Phase::Stable => {
                // a shift must also hold for the interval as a whole: a sample holds a few
                // large requests, so three of them can stray 10% while the mix has not moved
                let shift =
                    shift && workload_distance(&workload, &self.stable_workload) > self.cfg.shift;
                if shift || violation {
                    self.restart();
                    return self.estimate;
                }
                // ④ eq. (7); a demand-limited interval says nothing about a higher capacity
                if self.serves_estimate(thr) || outstanding > self.stable_outstanding {
                    let next = self.estimate
                        - self.cfg.alpha_per_s * (outstanding - self.stable_outstanding);
                    self.estimate = next.clamp(self.cfg.min_w, self.cfg.max_w);
                }
            }
        }
        self.estimate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(thr: f64, offered: f64, o: f64, v: bool, w: Vec<f64>) -> ApplianceReading {
        ApplianceReading {
            throughput: thr,
            offered,
            outstanding: o,
            vdc_violated: v,
            workload: w,
        }
    }

    /// Operation script for the capacity estimator (STYLE.md's op-script tests).
    enum Op {
        /// one interval as one reading: (throughput, offered, outstanding, violated, workload)
        Read(f64, f64, f64, bool, Vec<f64>),
        /// one interval as several sub-interval readings
        Samples(Vec<ApplianceReading>),
        /// expect (phase, estimate, minW, maxW)
        Expect(Phase, f64, f64, f64),
    }

    fn check(cfg: CapacityConfig, script: Vec<Op>) {
        let mut e = CapacityEstimator::new(cfg).unwrap();
        for (step, op) in script.into_iter().enumerate() {
            match op {
                Op::Read(thr, offered, o, v, w) => {
                    e.observe(&reading(thr, offered, o, v, w));
                }
                Op::Samples(rs) => {
                    e.observe_interval(&rs);
                }
                Op::Expect(phase, est, lo, hi) => {
                    let (a, b) = e.window();
                    assert_eq!(e.phase(), phase, "step {step}");
                    assert!((e.estimate() - est).abs() < 1e-9, "step {step}: {e:?}");
                    assert!(
                        (a - lo).abs() < 1e-9 && (b - hi).abs() < 1e-9,
                        "step {step}: {e:?}"
                    );
                }
            }
        }
    }

    fn cfg1() -> CapacityConfig {
        CapacityConfig {
            confirm: 1,
            ..CapacityConfig::new(1000.0, 9000.0)
        }
    }

    /// Served the estimate `at` with a residence time of 1 ms (`O = at · 1 ms`).
    fn clean(at: f64) -> Op {
        Op::Read(at, at, at * 1e-3, false, vec![1.0])
    }

    /// Served `thr` while the appliance held `O = thr · 50 ms`: 50× the unloaded residence.
    fn queued(thr: f64) -> Op {
        Op::Read(thr, thr, thr * 50e-3, false, vec![1.0])
    }

    #[test]
    fn binary_search_increase_raises_min_and_halves_the_window() {
        check(
            cfg1(),
            vec![
                Op::Expect(Phase::Increase, 1000.0, 1000.0, 9000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                clean(5000.0),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
                // idle (nothing sent): nothing changes
                Op::Read(0.0, 0.0, 0.0, false, vec![]),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
            ],
        );
    }

    #[test]
    fn throughput_shortfall_with_queueing_reverts_to_min_and_lowers_max() {
        check(
            cfg1(),
            vec![
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                // estimate 5000, served 4000 while the appliance queued: congested
                queued(4000.0),
                Op::Expect(Phase::Revert, 1000.0, 1000.0, 5000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 3000.0, 1000.0, 5000.0),
            ],
        );
    }

    #[test]
    fn shortfall_without_queueing_is_demand_and_holds_the_window() {
        check(
            cfg1(),
            vec![
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                // the tenants asked for 2000 only: residence as unloaded, nothing learned
                Op::Read(2000.0, 2000.0, 2.0, false, vec![1.0]),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                clean(5000.0),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
            ],
        );
    }

    #[test]
    fn queue_building_at_the_estimate_is_congestion() {
        // closed-loop tenants behind an appliance that serves 6800 of an estimate of 7000:
        // throughput is within the tolerance, but their requests pile up at the appliance
        check(
            cfg1(),
            vec![
                clean(1000.0),
                clean(5000.0),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
                queued(6800.0),
                Op::Expect(Phase::Revert, 5000.0, 5000.0, 7000.0),
            ],
        );
    }

    /// Regression (issue 7, Fig. 14 "D alone"): while the demand estimate ramps up, the
    /// appliance serves less than minW; that used to count as congestion, set maxW := minW and
    /// pin the estimate at the floor for good.
    #[test]
    fn shortfall_at_min_never_collapses_the_window() {
        check(
            CapacityConfig::new(1000.0, 9000.0),
            vec![
                Op::Read(200.0, 200.0, 0.2, false, vec![1.0]),
                Op::Read(500.0, 500.0, 0.5, false, vec![1.0]),
                Op::Read(800.0, 800.0, 0.8, false, vec![1.0]),
                Op::Expect(Phase::Increase, 1000.0, 1000.0, 9000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
            ],
        );
        // a violation at minW waits without touching the window
        check(
            cfg1(),
            vec![
                clean(1000.0),
                Op::Read(5000.0, 5000.0, 250.0, true, vec![1.0]),
                Op::Expect(Phase::Wait, 1000.0, 1000.0, 5000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 1000.0, 1000.0, 5000.0),
                // violated again at minW: wait, maxW unchanged
                Op::Read(1000.0, 1000.0, 50.0, true, vec![1.0]),
                Op::Expect(Phase::Wait, 1000.0, 1000.0, 5000.0),
            ],
        );
    }

    #[test]
    fn vdc_violation_reverts_then_waits_until_guarantees_hold() {
        check(
            cfg1(),
            vec![
                clean(1000.0),
                // a tenant below its guarantee while the appliance queues
                Op::Read(5000.0, 5000.0, 250.0, true, vec![1.0]),
                Op::Expect(Phase::Wait, 1000.0, 1000.0, 5000.0),
                Op::Read(1000.0, 1000.0, 90.0, true, vec![1.0]),
                Op::Expect(Phase::Wait, 1000.0, 1000.0, 5000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 1000.0, 1000.0, 5000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 3000.0, 1000.0, 5000.0),
            ],
        );
    }

    #[test]
    fn violation_without_queueing_is_not_the_appliances() {
        // the tenant's shortfall comes from elsewhere on its path: the search goes on
        check(
            cfg1(),
            vec![
                clean(1000.0),
                Op::Read(5000.0, 5000.0, 5.0, true, vec![1.0]),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
            ],
        );
    }

    /// Regression (issue 7, Fig. 14 "D + C"): minW passed as clean on a load just below it;
    /// after the next overshoot the revert landed on it and closed-loop tenants kept the
    /// appliance saturated there for 30 intervals.
    #[test]
    fn queueing_through_an_interval_at_min_lowers_the_floor() {
        check(
            cfg1(),
            vec![
                clean(1000.0),
                clean(5000.0),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
                queued(6000.0),
                Op::Expect(Phase::Revert, 5000.0, 5000.0, 7000.0),
                // still queueing at minW = 5000, serving 4000: the floor drops below 4000
                queued(4000.0),
                Op::Expect(Phase::Revert, 3600.0, 3600.0, 5000.0),
                // never below the configured floor
                queued(500.0),
                Op::Expect(Phase::Revert, 1000.0, 1000.0, 3600.0),
            ],
        );
    }

    #[test]
    fn small_window_is_stable_and_follows_eq7() {
        let cfg = CapacityConfig {
            stable_fraction: 0.3,
            ..cfg1()
        };
        check(
            cfg,
            vec![
                clean(1000.0),
                clean(5000.0),
                // window [5000, 9000]: 4000 > 0.3·9000; next clean makes it [7000, 9000]
                Op::Read(7000.0, 7000.0, 10.0, false, vec![1.0]),
                Op::Expect(Phase::Stable, 7000.0, 7000.0, 9000.0),
                // O_s = 10; outstanding 30 → C_EST − 0.5·20
                Op::Read(7000.0, 7000.0, 30.0, false, vec![1.0]),
                Op::Expect(Phase::Stable, 6990.0, 7000.0, 9000.0),
                Op::Read(6990.0, 6990.0, 0.0, false, vec![1.0]),
                Op::Expect(Phase::Stable, 6995.0, 7000.0, 9000.0),
                // demand-limited with fewer outstanding: no reason to raise it
                Op::Read(3000.0, 3000.0, 0.0, false, vec![1.0]),
                Op::Expect(Phase::Stable, 6995.0, 7000.0, 9000.0),
            ],
        );
    }

    #[test]
    fn a_resumed_estimator_continues_where_its_state_was_taken() {
        let cfg = CapacityConfig {
            stable_fraction: 0.3,
            ..cfg1()
        };
        let mut a = CapacityEstimator::new(cfg).unwrap();
        for thr in [1000.0, 5000.0, 7000.0] {
            a.observe(&reading(thr, thr, 10.0, false, vec![1.0]));
        }
        assert_eq!(a.phase(), Phase::Stable);
        let mut b = CapacityEstimator::new(cfg).unwrap();
        b.resume(&a.state()).unwrap();
        assert_eq!(b.state(), a.state());
        // eq. (7) from the stored O_s: both move alike, below minW
        let next = reading(7000.0, 7000.0, 30.0, false, vec![1.0]);
        assert_eq!(a.observe(&next), 6990.0);
        assert_eq!(b.observe(&next), 6990.0);
        let mut d = CapacityEstimator::new(cfg).unwrap();
        d.resume(&a.state()).unwrap();
        assert_eq!(d.estimate(), 6990.0);
        // a state outside the configured window is refused and changes nothing
        let mut c = CapacityEstimator::new(cfg).unwrap();
        for bad in [
            CapacityState {
                max_w: 2e4,
                ..a.state()
            },
            CapacityState {
                estimate: f64::NAN,
                ..a.state()
            },
            CapacityState {
                min_w: 9500.0,
                ..a.state()
            },
            CapacityState {
                estimate: 500.0,
                ..a.state()
            },
        ] {
            assert!(matches!(
                c.resume(&bad),
                Err(EstimateError::InvalidState { .. })
            ));
            assert_eq!(c, CapacityEstimator::new(cfg).unwrap());
        }
    }

    #[test]
    fn workload_shift_restarts_from_the_initial_window() {
        let cfg = CapacityConfig {
            stable_fraction: 0.3,
            ..cfg1()
        };
        check(
            cfg,
            vec![
                clean(1000.0),
                clean(5000.0),
                clean(7000.0),
                Op::Expect(Phase::Stable, 7000.0, 7000.0, 9000.0),
                // 5% of the mix moves: not a shift
                Op::Read(7000.0, 7000.0, 7.0, false, vec![0.95, 0.05]),
                Op::Expect(Phase::Stable, 7000.0, 7000.0, 9000.0),
                // half of it moves: restart
                Op::Read(7000.0, 7000.0, 7.0, false, vec![0.5, 0.5]),
                Op::Expect(Phase::Increase, 1000.0, 1000.0, 9000.0),
            ],
        );
    }

    #[test]
    fn signals_need_consecutive_confirmations() {
        let cfg = CapacityConfig::new(1000.0, 9000.0);
        check(
            cfg,
            vec![
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                queued(4000.0),
                queued(4000.0),
                // two readings: held, not reverted
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                // a clean reading breaks the run (and increases)
                clean(5000.0),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
                queued(4000.0),
                queued(4000.0),
                queued(4000.0),
                Op::Expect(Phase::Revert, 5000.0, 5000.0, 7000.0),
            ],
        );
    }

    #[test]
    fn sub_interval_readings_confirm_within_one_interval() {
        let ok = |at: f64| reading(at, at, at * 1e-3, false, vec![1.0]);
        let bad = |thr: f64| reading(thr, thr, thr * 50e-3, false, vec![1.0]);
        let cfg = CapacityConfig::new(1000.0, 9000.0);
        check(
            cfg,
            vec![
                Op::Samples(vec![ok(1000.0); 10]),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                // the overshoot shows in the last three of ten samples: revert at once
                Op::Samples([vec![ok(5000.0); 7], vec![bad(4000.0); 3]].concat()),
                Op::Expect(Phase::Revert, 1000.0, 1000.0, 5000.0),
                Op::Samples(vec![ok(1000.0); 10]),
                Op::Expect(Phase::Increase, 3000.0, 1000.0, 5000.0),
                // two trailing samples: not yet, and no increase either...
                Op::Samples([vec![ok(3000.0); 8], vec![bad(2900.0); 2]].concat()),
                Op::Expect(Phase::Increase, 3000.0, 1000.0, 5000.0),
                // ...the run continues into the next interval's first sample and acts
                Op::Samples([vec![bad(2900.0)], vec![ok(3000.0); 9]].concat()),
                Op::Expect(Phase::Revert, 1000.0, 1000.0, 3000.0),
            ],
        );
    }

    #[test]
    fn demand_is_eq6_smoothed() {
        let mut d = DemandEstimator::new(0.5).unwrap();
        // open loop: u + b; closed loop: u + q·u/o
        let r = DemandReport {
            utilization: &[100.0, 100.0],
            backlog: &[50.0, 0.0],
            queueing: &[0.0, 30.0],
            outstanding: &[10.0, 10.0],
        };
        assert_eq!(raw_demand(&r), vec![150.0, 400.0]);
        assert_eq!(d.observe(&r, 2.0).unwrap(), &[75.0, 200.0]);
        let idle = DemandReport {
            utilization: &[0.0, 0.0],
            backlog: &[0.0, 0.0],
            queueing: &[0.0, 0.0],
            outstanding: &[0.0, 0.0],
        };
        assert_eq!(d.observe(&idle, 2.0).unwrap(), &[37.5, 100.0]);
        let short = DemandReport {
            utilization: &[0.0],
            ..idle
        };
        assert!(matches!(
            d.observe(&short, 1.0),
            Err(EstimateError::WrongLength { .. })
        ));
        assert!(DemandEstimator::new(0.0).is_err());
        assert!(d.observe(&idle, 0.0).is_err());
    }

    #[test]
    fn workload_distance_is_total_variation() {
        assert_eq!(workload_distance(&[1.0, 1.0], &[2.0, 2.0]), 0.0);
        assert!((workload_distance(&[1.0, 0.0], &[0.0, 1.0, 0.0]) - 1.0).abs() < 1e-12);
        assert!((workload_distance(&[3.0, 1.0], &[1.0, 1.0]) - 0.25).abs() < 1e-12);
        assert_eq!(workload_distance(&[], &[0.0]), 0.0);
        assert!(CapacityEstimator::new(CapacityConfig::new(5.0, 5.0)).is_err());
    }
}
