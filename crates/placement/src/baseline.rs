//! The state-of-the-art rate-limit rules WorkloadCompactor is compared with
//! (workload-compactor §4.1), and the fit check they share with it.
//!
//! Each rule picks one ⟨r, b⟩ per stage for a workload on its own, whoever else is on the
//! server; placement then uses the same first-fit and the same latency check as
//! WorkloadCompactor (eq. (1) per stage with priorities by SLO, summed over the stages as in
//! eq. (5), plus the client NIC's own b), without re-optimising anything. Rates and bursts
//! are normalised (see the crate docs):
//!
//! * **k × average rate** (§4.1.1, Silo's choice, k = 1.5 and 2): r = k × the long-term rate
//!   of the stage's r-b curve, b = the curve at r.
//! * **knee of the r-b curve** (§4.1.3): the vertex minimising r + b, with r the fraction of
//!   the stage's capacity [1] and b the time the stage needs to serve the burst at full
//!   capacity [s] (the paper's normalisation: both divided by the stage's bandwidth). On a
//!   convex curve that is the vertex where the slope crosses −1 s.
//! * **effective bandwidth** (§4.1.2): r the least rate whose shaper delay stays within the
//!   delay target when the shaper lets no burst through (`tailbound_curves::effbw`), and b the
//!   curve's least burst: the work that arrives at one instant, at least the largest request.
//!   A bucket of b = 0 cannot pass a request at all, and one that passes whole requests lets
//!   up to the largest through at once (`shaping::Bucket`): the queues must count it, or
//!   the check promises latencies the requests cannot have. The workload crosses three
//!   shapers (net-in, storage, net-out); the latency
//!   check adds the shapers' delays b(r)/r (computed for b = 0: an upper bound) to the
//!   queueing bound. The shapers take half the budget (a sixth each), the queues the other
//!   half, as Silo++ does in admission: with the whole budget in the shapers no other
//!   workload's burst could share a server.
//!
//! The client NIC sees the responses, shaped at net-out: it takes net-out's bucket (the same
//! curve gives the same point for the first two rules).

use crate::lp::levels_of;
use crate::workload::NormCurve;
use crate::{ClientNic, LpStage, PlacementError};
use serde::{Deserialize, Serialize};
use tailbound_calculus::dnc::{wc_multi_stage_latency, DncError, TokenBucketAt};
use tailbound_curves::effbw::{effective_bandwidth, EffBwError};
use tailbound_model::Bucket;

/// Slack kept below Σr ≤ 1 [1], as in the LP.
const CAPACITY_SLACK: f64 = 1e-6;

/// A baseline rule for choosing one workload's rate limits on its own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaselineRule {
    /// r = k × the long-term rate, b from the r-b curve
    AvgRate { k: f64 },
    /// the vertex of the normalised r-b curve minimising r + b
    Knee,
    /// r = the effective bandwidth for a sixth of the SLO budget per shaper, b = the least
    /// burst (one instant's work)
    EffectiveBandwidth,
}

/// The limits a baseline fixed for one workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fixed {
    /// one bucket per stage in [`LpStage::ALL`] order (normalised)
    pub buckets: [Bucket; 4],
    /// the delay the workload's own shapers may add [s] (0 when the buckets lie on the
    /// curves: the characterized traffic is never held)
    pub shaper_delay_s: f64,
}

impl BaselineRule {
    /// The rule's limits for a workload with these normalised curves and SLO budget; `None`
    /// when the rule asks for more than a stage's capacity (the workload fits nowhere).
    pub fn limits(self, curves: &[NormCurve; 4], budget_s: f64) -> Option<Fixed> {
        let mut buckets = [Bucket {
            rate: 0.0,
            burst: 0.0,
        }; 4];
        let mut shaper_delay_s = 0.0;
        for stage in LpStage::SERVER {
            let c = &curves[stage.index()];
            let bucket = match self {
                BaselineRule::AvgRate { k } => {
                    let r = k * c.min_rate();
                    Bucket {
                        rate: r,
                        burst: c.burst_at(r)?,
                    }
                }
                BaselineRule::Knee => {
                    let [r, b] = c.knee();
                    Bucket { rate: r, burst: b }
                }
                BaselineRule::EffectiveBandwidth => {
                    // the shapers take half the budget, the queues the other half
                    let d = budget_s / 6.0;
                    if d.is_nan() || d <= 0.0 {
                        return None;
                    }
                    let rb = c.to_rb()?;
                    let r = match effective_bandwidth(&rb, d) {
                        Ok(r) => r.max(c.min_rate()),
                        // the crossing lies below the long-term rate: the least allowed rate
                        // already keeps the delay within d
                        Err(EffBwError::BelowCurve { .. }) => c.min_rate(),
                        Err(_) => return None,
                    };
                    if r > 0.0 {
                        shaper_delay_s += c.burst_at(r)? / r;
                    }
                    Bucket {
                        rate: r,
                        burst: c.min_burst(),
                    }
                }
            };
            if !(bucket.rate.is_finite() && bucket.burst.is_finite())
                || bucket.rate > 1.0 - CAPACITY_SLACK
            {
                return None;
            }
            buckets[stage.index()] = bucket;
        }
        buckets[LpStage::ClientIn.index()] = buckets[LpStage::NetOut.index()];
        Some(Fixed {
            buckets,
            shaper_delay_s,
        })
    }

    /// The rule's name on the command line (`avg-rate:1.5`, `knee`, `effective-bw`).
    pub fn name(self) -> String {
        match self {
            BaselineRule::AvgRate { k } => format!("avg-rate:{k}"),
            BaselineRule::Knee => "knee".into(),
            BaselineRule::EffectiveBandwidth => "effective-bw".into(),
        }
    }
}

/// One workload with fixed limits in a fit check.
#[derive(Debug, Clone, Copy)]
pub struct FixedMember<'a> {
    pub fixed: &'a Fixed,
    /// SLO latency, for the priority order [s]
    pub slo_s: f64,
    /// SLO latency minus the device latency [s]
    pub budget_s: f64,
}

/// The same latency check as WorkloadCompactor's, for fixed limits: every member's eq. (5)
/// bound over the server stages plus its client NIC's b plus its shaper delay within its
/// budget, and Σr ≤ 1 at every server stage. `Ok(Some(rate sums))` when they fit together.
/// With [`ClientNic::Tandem`] the client NIC adds nothing (see [`ClientNic`]).
pub fn fits(
    members: &[FixedMember<'_>],
    client_nic: ClientNic,
) -> Result<Option<[f64; 3]>, PlacementError> {
    let levels = levels_of(members.iter().map(|m| m.slo_s));
    let mut rate_sums = [0.0; 3];
    let mut stages: [Vec<TokenBucketAt>; 3] = Default::default();
    for (m, &priority) in members.iter().zip(&levels) {
        for stage in LpStage::SERVER {
            let b = m.fixed.buckets[stage.index()];
            rate_sums[stage.index()] += b.rate;
            stages[stage.index()].push(TokenBucketAt {
                rate: b.rate,
                burst: b.burst,
                priority,
            });
        }
    }
    if rate_sums.iter().any(|&s| s > 1.0 - CAPACITY_SLACK) {
        return Ok(None);
    }
    let refs: [&[TokenBucketAt]; 3] = [&stages[0], &stages[1], &stages[2]];
    for (m, &level) in members.iter().zip(&levels) {
        let queueing = match wc_multi_stage_latency(&refs, level) {
            Ok(d) => d,
            Err(DncError::Unstable { .. }) => return Ok(None),
            Err(e) => return Err(PlacementError::Solver(format!("calculus check: {e}"))),
        };
        let client = match client_nic {
            ClientNic::Own => m.fixed.buckets[LpStage::ClientIn.index()].burst,
            ClientNic::Tandem => 0.0,
        };
        let bound = queueing + client + m.fixed.shaper_delay_s;
        if bound.is_nan() || bound > m.budget_s {
            return Ok(None);
        }
    }
    Ok(Some(rate_sums))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::RbCurve;

    fn curves() -> [NormCurve; 4] {
        // long-term 0.1; b 1.0 at 0.1, 0.2 at 0.2, 0.05 at 0.5
        let c = NormCurve::new(
            &RbCurve::new(vec![[0.1, 1.0], [0.2, 0.2], [0.5, 0.05]]).unwrap(),
            1.0,
            0.0,
        );
        [c.clone(), c.clone(), c.clone(), c]
    }

    #[test]
    fn avg_rate_takes_the_curve_at_k_times_the_mean() {
        let f = BaselineRule::AvgRate { k: 1.5 }
            .limits(&curves(), 1.0)
            .unwrap();
        for b in f.buckets {
            assert!(
                (b.rate - 0.15).abs() < 1e-12 && (b.burst - 0.6).abs() < 1e-12,
                "{b:?}"
            );
        }
        assert_eq!(f.shaper_delay_s, 0.0);
        // 11 × 0.1 exceeds a stage
        assert!(BaselineRule::AvgRate { k: 11.0 }
            .limits(&curves(), 1.0)
            .is_none());
    }

    #[test]
    fn knee_and_effective_bandwidth() {
        let f = BaselineRule::Knee.limits(&curves(), 1.0).unwrap();
        assert_eq!((f.buckets[1].rate, f.buckets[1].burst), (0.2, 0.2));
        // budget 1.2: half of it, 0.2 s per shaper; b(r) ≤ 0.2 r crosses on the segment from (0.2, 0.2)
        // to (0.5, 0.05): 0.2 − 0.5 (r − 0.2) = 0.2 r → r = 0.3 / 0.7
        let f = BaselineRule::EffectiveBandwidth
            .limits(&curves(), 1.2)
            .unwrap();
        assert!(
            (f.buckets[0].rate - 0.3 / 0.7).abs() < 1e-12,
            "{:?}",
            f.buckets[0]
        );
        // b is the curve's least burst (0.05), which the queues then count
        assert!(f.buckets.iter().all(|b| b.burst == 0.05), "{:?}", f.buckets);
        // each shaper delays by exactly its sixth of the budget
        assert!(
            (f.shaper_delay_s - 0.6).abs() < 1e-12,
            "{}",
            f.shaper_delay_s
        );
    }

    fn fits_own(members: &[FixedMember<'_>]) -> Result<Option<[f64; 3]>, PlacementError> {
        fits(members, ClientNic::Own)
    }

    #[test]
    fn tandem_client_nic_adds_no_burst() {
        let f = BaselineRule::Knee.limits(&curves(), 1.0).unwrap();
        // 3 × 0.2 = 0.6 on the server; the own client NIC adds 0.2
        let m = FixedMember {
            fixed: &f,
            slo_s: 0.7,
            budget_s: 0.7,
        };
        assert!(fits(&[m], ClientNic::Own).unwrap().is_none());
        assert!(fits(&[m], ClientNic::Tandem).unwrap().is_some());
    }

    #[test]
    fn fixed_limits_fit_until_a_bound_breaks() {
        let f = BaselineRule::Knee.limits(&curves(), 1.0).unwrap();
        let m = |slo: f64| FixedMember {
            fixed: &f,
            slo_s: slo,
            budget_s: slo,
        };
        // alone: 3 × 0.2 + 0.2 = 0.8 ≤ 1
        assert!(fits_own(&[m(1.0)]).unwrap().is_some());
        assert!(fits_own(&[m(0.7)]).unwrap().is_none());
        // two at the same level: 3 × 0.4 + 0.2 = 1.4 > 1
        assert!(fits_own(&[m(1.0), m(1.0)]).unwrap().is_none());
        // the tight one first: it sees only itself (0.8); the loose one 3 × 0.4 / 0.8 + 0.2
        let sums = fits_own(&[m(0.8), m(2.0)]).unwrap().unwrap();
        assert!((sums[0] - 0.4).abs() < 1e-12);
        // five at rate 0.2 fill a stage exactly: over capacity with the slack
        let many: Vec<_> = (0..5).map(|_| m(100.0)).collect();
        assert!(fits_own(&many).unwrap().is_none());
    }
}
