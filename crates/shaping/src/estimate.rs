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
//! appliance's real capacity; the estimate `C_EST` is in it. Each interval's
//! [`ApplianceReading`] is classified: *VDC violation* (some tenant got less than its
//! guarantee through the appliance), *congested* (the appliance served noticeably less than
//! the estimate: pulsar's throughput signal), *clean* (it served the estimate) or *idle*
//! (nothing was sent to it: no information). A demand-limited appliance also reads as
//! congested, so its estimate follows its load down to `minW`-side values; that is harmless
//! (allocations are demand-capped) and the search resumes once the load reaches the estimate.
//! Phases:
//! 1. **Increase** (binary search, like BIC-TCP): on a clean reading `minW := C_EST` and
//!    `C_EST := (minW + maxW)/2`; when `maxW − minW` falls below a fraction of `maxW` (1%) the
//!    estimator is **stable** at `minW`.
//! 2. **Revert**: on congestion `maxW := C_EST`, `C_EST := minW`, back to increase.
//! 3. **Wait**: on a VDC violation revert, then hold `C_EST` until the guarantees are met
//!    again (the appliance drains the queues an over-estimate built).
//! 4. **Stable**: eq. (7), `C_EST[i+1] = C_EST[i] − α·(O[i] − O_s)` with `O_s` the outstanding
//!    tokens when the phase began; a workload that moves more than 10% (total-variation
//!    distance of the mix) away from the one at the start of the phase restarts the estimation
//!    from the initial window.
//!
//! Congestion, violation and workload-shift signals act only after `confirm` consecutive
//! readings agree (3 in pulsar §5), so one noisy interval does not move the window.

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

/// One interval of an appliance, as the controller sees it (pulsar §4.3).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// relative shortfall of throughput below what was offered that counts as congestion,
    /// and relative load below the estimate that counts as idle
    pub tolerance: f64,
    /// total-variation distance of the workload mix that restarts a stable estimate (10%)
    pub shift: f64,
    /// consecutive readings a congestion, violation or shift signal needs (3)
    pub confirm: u32,
}

impl CapacityConfig {
    /// Pulsar's settings for a window `[min_w, max_w]`: 1% stability, 10% shift, three
    /// readings, α = 0.5/s, 5% tolerance.
    pub fn new(min_w: f64, max_w: f64) -> CapacityConfig {
        CapacityConfig {
            min_w,
            max_w,
            stable_fraction: 0.01,
            alpha_per_s: 0.5,
            tolerance: 0.05,
            shift: 0.10,
            confirm: 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signal {
    Violation,
    Congested,
    Shift,
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
    /// a signal seen in the last `count` consecutive readings
    pending: Option<(Signal, u32)>,
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

impl CapacityEstimator {
    /// Starts in the increase phase at `C_EST = minW`.
    ///
    /// # Errors
    /// [`EstimateError::InvalidWindow`] unless `0 < min_w < max_w` (finite), the fractions are in
    /// (0, 1), α ≥ 0 and `confirm ≥ 1`.
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
            pending: None,
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

    /// Counts `signal`; true once it has been seen `confirm` times in a row.
    fn confirmed(&mut self, signal: Signal) -> bool {
        let count = match self.pending {
            Some((s, c)) if s == signal => c + 1,
            _ => 1,
        };
        if count >= self.cfg.confirm {
            self.pending = None;
            true
        } else {
            self.pending = Some((signal, count));
            false
        }
    }

    fn restart(&mut self) {
        self.min_w = self.cfg.min_w;
        self.max_w = self.cfg.max_w;
        self.estimate = self.min_w;
        self.phase = Phase::Increase;
    }

    /// Takes one interval's reading and returns the estimate for the next interval
    /// [tokens/s]. Non-finite numbers in the reading count as 0.
    pub fn observe(&mut self, r: &ApplianceReading) -> f64 {
        let fin = |v: f64| if v.is_finite() { v.max(0.0) } else { 0.0 };
        let (thr, offered, outstanding) = (fin(r.throughput), fin(r.offered), fin(r.outstanding));
        let tol = self.cfg.tolerance;
        let idle = offered <= 0.0 && thr <= 0.0;
        let congested = !idle && thr < (1.0 - tol) * self.estimate;
        let loaded = !idle && !congested;
        match self.phase {
            Phase::Increase | Phase::Revert => {
                self.phase = Phase::Increase;
                if r.vdc_violated {
                    if self.confirmed(Signal::Violation) {
                        self.max_w = self.estimate.max(self.min_w);
                        self.estimate = self.min_w;
                        self.phase = Phase::Wait;
                    }
                } else if congested {
                    if self.confirmed(Signal::Congested) {
                        self.max_w = self.estimate.max(self.min_w);
                        self.estimate = self.min_w;
                        self.phase = Phase::Revert;
                    }
                } else if loaded {
                    self.pending = None;
                    let previous = self.estimate;
                    self.min_w = previous;
                    if self.max_w - self.min_w <= self.cfg.stable_fraction * self.max_w {
                        self.phase = Phase::Stable;
                        self.estimate = self.min_w;
                        self.stable_outstanding = outstanding;
                        self.stable_workload = r.workload.clone();
                    } else {
                        self.estimate = 0.5 * (self.min_w + self.max_w);
                    }
                } else {
                    // idle: no information about the capacity
                    self.pending = None;
                }
            }
            Phase::Wait => {
                // the guarantees decide; the appliance may still be draining its queues
                self.pending = None;
                if !r.vdc_violated {
                    self.phase = Phase::Increase;
                }
            }
            Phase::Stable => {
                let shifted = workload_distance(&r.workload, &self.stable_workload)
                    > self.cfg.shift
                    && thr > 0.0;
                if shifted || r.vdc_violated {
                    let s = if shifted {
                        Signal::Shift
                    } else {
                        Signal::Violation
                    };
                    if self.confirmed(s) {
                        self.restart();
                        return self.estimate;
                    }
                } else {
                    self.pending = None;
                }
                if loaded || outstanding > self.stable_outstanding {
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

    /// Operation script for the capacity estimator (STYLE.md's op-script tests).
    enum Op {
        /// a reading: (throughput, offered, outstanding, violated, workload)
        Read(f64, f64, f64, bool, Vec<f64>),
        /// expect (phase, estimate, minW, maxW)
        Expect(Phase, f64, f64, f64),
    }

    fn check(cfg: CapacityConfig, script: Vec<Op>) {
        let mut e = CapacityEstimator::new(cfg).unwrap();
        for (step, op) in script.into_iter().enumerate() {
            match op {
                Op::Read(thr, offered, o, v, w) => {
                    e.observe(&ApplianceReading {
                        throughput: thr,
                        offered,
                        outstanding: o,
                        vdc_violated: v,
                        workload: w,
                    });
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

    fn clean(at: f64) -> Op {
        Op::Read(at, at, 10.0, false, vec![1.0])
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
    fn throughput_congestion_reverts_to_min_and_lowers_max() {
        check(
            cfg1(),
            vec![
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                // estimate 5000, served 4000: congested
                Op::Read(4000.0, 5000.0, 50.0, false, vec![1.0]),
                Op::Expect(Phase::Revert, 1000.0, 1000.0, 5000.0),
                clean(1000.0),
                Op::Expect(Phase::Increase, 3000.0, 1000.0, 5000.0),
            ],
        );
    }

    #[test]
    fn vdc_violation_reverts_then_waits_until_guarantees_hold() {
        check(
            cfg1(),
            vec![
                clean(1000.0),
                Op::Read(5000.0, 5000.0, 90.0, true, vec![1.0]),
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
                clean(7000.0),
                Op::Expect(Phase::Stable, 7000.0, 7000.0, 9000.0),
                // O_s = 10; outstanding 30 → C_EST − 0.5·20
                Op::Read(7000.0, 7000.0, 30.0, false, vec![1.0]),
                Op::Expect(Phase::Stable, 6990.0, 7000.0, 9000.0),
                Op::Read(6990.0, 6990.0, 0.0, false, vec![1.0]),
                Op::Expect(Phase::Stable, 6995.0, 7000.0, 9000.0),
            ],
        );
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
                Op::Read(7000.0, 7000.0, 10.0, false, vec![0.95, 0.05]),
                Op::Expect(Phase::Stable, 7000.0, 7000.0, 9000.0),
                // half of it moves: restart
                Op::Read(7000.0, 7000.0, 10.0, false, vec![0.5, 0.5]),
                Op::Expect(Phase::Increase, 1000.0, 1000.0, 9000.0),
            ],
        );
    }

    #[test]
    fn signals_need_consecutive_confirmations() {
        let cfg = CapacityConfig::new(1000.0, 9000.0);
        let congested = || Op::Read(4000.0, 5000.0, 50.0, false, vec![1.0]);
        check(
            cfg,
            vec![
                clean(1000.0),
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                congested(),
                congested(),
                // two readings: held, not reverted
                Op::Expect(Phase::Increase, 5000.0, 1000.0, 9000.0),
                // a clean reading breaks the run (and increases)
                clean(5000.0),
                Op::Expect(Phase::Increase, 7000.0, 5000.0, 9000.0),
                congested(),
                congested(),
                congested(),
                Op::Expect(Phase::Revert, 5000.0, 5000.0, 7000.0),
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
