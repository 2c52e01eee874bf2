//! WorkloadCompactor's closed-form latency bounds: eqs. (1), (3), (5), (6) and (7) of
//! `shared/papers/workload-compactor.txt` §2.3, over the token buckets selected at one server.
//!
//! **Units.** Capacity is normalised to 1 per stage, as in the paper: a bucket's `rate` is the
//! fraction of the stage's capacity (dimensionless, `rate [work/s] / capacity [work/s]`), its
//! `burst` is the time the stage needs to serve it at full capacity
//! (`burst [work] / capacity [work/s]`, in [s]). [`TokenBucketAt::normalised`] converts.
//!
//! **Priorities.** Here level 0 is the *highest* priority (as everywhere in tailbound); the
//! paper writes p_j > p for "j has higher priority than p". So the paper's
//! * "p_j ≥ p" (higher or equal priority) is `level_j ≤ level` here, and
//! * "p_j > p" (strictly higher priority) is `level_j < level` here.
//!
//! **Formulas** for the workload(s) at level p (B_≤ = Σ_{level_j ≤ p} b_j, including the
//! workload itself and every other workload at its level; R_< = Σ_{level_j < p} r_j):
//! * eq. (1), one stage: latency(p) ≤ B_≤ / (1 − R_<) ([`wc_latency`]);
//! * eq. (3), its LP form: B_≤ + R_<·SLO_p ≤ SLO_p ([`wc_eq3_lhs`]);
//! * eq. (5), stages s = 1..k in sequence: latency(p) ≤ Σ_s B_≤^s / (1 − R_<^s)
//!   ([`wc_multi_stage_latency`]);
//! * eq. (6), relaxed with one R_p per level, R_p ≥ R_<^s for every stage:
//!   latency(p) ≤ Σ_s B_≤^s / (1 − R_p) ([`wc_relaxed_latency`]; the least such R_p is
//!   [`wc_min_rp`], for which eq. (6) equals eq. (5) when all R_<^s are equal);
//! * eq. (7), its LP form: Σ_s B_≤^s + R_p·SLO_p ≤ SLO_p ([`wc_eq7_lhs`]).
//!
//! **Assumptions** (why eq. (1) is a DNC bound, cf. [`super::curve`]): each stage is a
//! work-conserving fluid server of rate 1 with preemptive static priority between levels and
//! FIFO within a level; every workload's traffic entering the stage conforms to its own token
//! bucket (r_j, b_j) *at that stage* (WorkloadCompactor rate-limits each stage); the level's
//! aggregate Σ_{level_j = p} (b_j + r_j·t) then sees the leftover of the higher levels,
//! rate-latency with R = 1 − R_< and T = Σ_{level_j < p} b_j / R, and the FIFO aggregate's delay
//! is T + Σ_{level_j = p} b_j / R = eq. (1). Eq. (5) adds the stages' bounds (each stage pays
//! its own bursts: no pay-bursts-only-once, since each stage has its own buckets). The bound is
//! valid only while Σ_{level_j ≤ p} r_j ≤ 1 at every stage (the paper's eq. (4), Σ_j r_j ≤ 1,
//! implies it); otherwise these functions return [`DncError::Unstable`].

use super::curve::DncError;
use serde::{Deserialize, Serialize};
use tailbound_model::Bucket;

/// A workload's selected token bucket at one stage, normalised to the stage's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TokenBucketAt {
    /// rate as a fraction of the stage's capacity [1]
    pub rate: f64,
    /// bucket size as full-capacity service time [s]
    pub burst: f64,
    /// priority level, 0 highest
    pub priority: u32,
}

impl TokenBucketAt {
    /// Normalises a bucket in work units by the stage's capacity [work/s].
    pub fn normalised(
        bucket: Bucket,
        capacity: f64,
        priority: u32,
    ) -> Result<TokenBucketAt, DncError> {
        if !(capacity.is_finite() && capacity > 0.0) {
            return Err(DncError::Invalid(format!(
                "stage capacity {capacity} must be finite and > 0 [work/s]"
            )));
        }
        Ok(TokenBucketAt {
            rate: bucket.rate / capacity,
            burst: bucket.burst / capacity,
            priority,
        })
    }
}

/// (B_≤, R_<, R_≤) of one stage for level p, after checking the buckets.
fn sums(stage: &[TokenBucketAt], level: u32) -> Result<(f64, f64, f64), DncError> {
    let (mut b_le, mut r_lt, mut r_le) = (0.0, 0.0, 0.0);
    for (i, j) in stage.iter().enumerate() {
        if !(j.rate.is_finite() && j.rate >= 0.0 && j.burst.is_finite() && j.burst >= 0.0) {
            return Err(DncError::Invalid(format!(
                "bucket {i}: rate {} and burst {} must be finite and >= 0",
                j.rate, j.burst
            )));
        }
        if j.priority <= level {
            b_le += j.burst;
            r_le += j.rate;
        }
        if j.priority < level {
            r_lt += j.rate;
        }
    }
    Ok((b_le, r_lt, r_le))
}

/// Eq. (1) denominator check: the stage must leave capacity to level p and carry its load.
fn stable(r_lt: f64, r_le: f64) -> Result<(), DncError> {
    if r_lt >= 1.0 {
        return Err(DncError::Unstable {
            load: r_lt,
            capacity: 1.0,
        });
    }
    if r_le > 1.0 {
        return Err(DncError::Unstable {
            load: r_le,
            capacity: 1.0,
        });
    }
    Ok(())
}

/// Eq. (1): the latency bound [s] at one stage for a workload at `level`,
/// Σ_{level_j ≤ level} b_j / (1 − Σ_{level_j < level} r_j).
pub fn wc_latency(stage: &[TokenBucketAt], level: u32) -> Result<f64, DncError> {
    let (b_le, r_lt, r_le) = sums(stage, level)?;
    stable(r_lt, r_le)?;
    Ok(b_le / (1.0 - r_lt))
}

/// Eq. (3)'s left-hand side [s]: Σ_{level_j ≤ level} b_j + Σ_{level_j < level} r_j · SLO; the
/// LP constraint is `lhs ≤ slo_s`, equivalent to eq. (1) ≤ SLO when the stage is stable.
pub fn wc_eq3_lhs(stage: &[TokenBucketAt], level: u32, slo_s: f64) -> Result<f64, DncError> {
    let (b_le, r_lt, _) = sums(stage, level)?;
    Ok(b_le + r_lt * slo_s)
}

/// Eq. (5): the latency bound [s] across stages crossed in sequence, the sum of eq. (1) over
/// the stages.
pub fn wc_multi_stage_latency(stages: &[&[TokenBucketAt]], level: u32) -> Result<f64, DncError> {
    stages.iter().map(|s| wc_latency(s, level)).sum()
}

/// The least R_p satisfying eq. (6)'s constraints, max over stages of Σ_{level_j < level} r_j.
pub fn wc_min_rp(stages: &[&[TokenBucketAt]], level: u32) -> Result<f64, DncError> {
    let mut rp: f64 = 0.0;
    for s in stages {
        rp = rp.max(sums(s, level)?.1);
    }
    Ok(rp)
}

/// Eq. (6): the relaxed latency bound [s], Σ_s Σ_{level_j ≤ level} b_j^s / (1 − R_p), for an
/// R_p that satisfies Σ_{level_j < level} r_j^s ≤ R_p at every stage (checked, else
/// [`DncError::Invalid`]: the relaxation would not be a bound). Never below eq. (5).
pub fn wc_relaxed_latency(
    stages: &[&[TokenBucketAt]],
    level: u32,
    rp: f64,
) -> Result<f64, DncError> {
    if !rp.is_finite() {
        return Err(DncError::Invalid(format!("R_p = {rp} is not finite")));
    }
    let mut b_total = 0.0;
    for s in stages {
        let (b_le, r_lt, r_le) = sums(s, level)?;
        stable(r_lt, r_le)?;
        if rp < r_lt {
            return Err(DncError::Invalid(format!(
                "R_p = {rp} is below a stage's higher-priority rate {r_lt}; eq. (6) needs R_p >= every stage's"
            )));
        }
        b_total += b_le;
    }
    if rp >= 1.0 {
        return Err(DncError::Unstable {
            load: rp,
            capacity: 1.0,
        });
    }
    Ok(b_total / (1.0 - rp))
}

/// Eq. (7)'s left-hand side [s]: Σ_s Σ_{level_j ≤ level} b_j^s + R_p · SLO; the LP constraint
/// is `lhs ≤ slo_s` (with R_p's constraints R_p ≥ Σ_{level_j < level} r_j^s per stage).
pub fn wc_eq7_lhs(
    stages: &[&[TokenBucketAt]],
    level: u32,
    rp: f64,
    slo_s: f64,
) -> Result<f64, DncError> {
    let mut b_total = 0.0;
    for s in stages {
        b_total += sums(s, level)?.0;
    }
    Ok(b_total + rp * slo_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rate: f64, burst: f64, priority: u32) -> TokenBucketAt {
        TokenBucketAt {
            rate,
            burst,
            priority,
        }
    }

    #[test]
    fn eq1_reads_level_0_as_highest() {
        let stage = [
            at(0.2, 0.01, 0),
            at(0.3, 0.02, 1),
            at(0.1, 0.04, 1),
            at(0.2, 1.0, 2),
        ];
        // level 0 sees only itself
        assert!((wc_latency(&stage, 0).unwrap() - 0.01).abs() < 1e-12);
        // level 1: bursts of levels 0 and 1, rate of level 0
        assert!((wc_latency(&stage, 1).unwrap() - 0.07 / 0.8).abs() < 1e-12);
        // level 2: everything, rates of levels 0 and 1
        assert!((wc_latency(&stage, 2).unwrap() - 1.07 / 0.4).abs() < 1e-12);
    }

    #[test]
    fn eq1_overload_is_unstable() {
        assert!(matches!(
            wc_latency(&[at(0.6, 0.0, 0), at(0.5, 0.1, 1)], 1),
            Err(DncError::Unstable { .. })
        ));
        assert!(matches!(
            wc_latency(&[at(1.0, 0.0, 0), at(0.0, 0.1, 1)], 1),
            Err(DncError::Unstable { .. })
        ));
        // exactly full is still bounded (eq. (4) allows Σr = 1)
        assert!(wc_latency(&[at(0.5, 0.1, 0), at(0.5, 0.1, 1)], 1).is_ok());
    }

    #[test]
    fn eq6_relaxes_eq5_and_eq7_is_its_lp_form() {
        let net_in = [at(0.2, 0.01, 0), at(0.3, 0.02, 1)];
        let storage = [at(0.4, 0.03, 0), at(0.1, 0.02, 1)];
        let net_out = [at(0.1, 0.01, 0), at(0.3, 0.01, 1)];
        let stages: [&[TokenBucketAt]; 3] = [&net_in, &storage, &net_out];
        let eq5 = wc_multi_stage_latency(&stages, 1).unwrap();
        let expected = 0.03 / 0.8 + 0.05 / 0.6 + 0.02 / 0.9;
        assert!((eq5 - expected).abs() < 1e-12);
        let rp = wc_min_rp(&stages, 1).unwrap();
        assert_eq!(rp, 0.4);
        let eq6 = wc_relaxed_latency(&stages, 1, rp).unwrap();
        assert!((eq6 - 0.10 / 0.6).abs() < 1e-12 && eq6 >= eq5);
        assert!(wc_relaxed_latency(&stages, 1, 0.3).is_err());
        for slo in [0.1, 0.16, 0.17, 0.5] {
            let lhs = wc_eq7_lhs(&stages, 1, rp, slo).unwrap();
            assert_eq!(lhs <= slo, eq6 <= slo, "slo {slo}");
        }
        let lhs3 = wc_eq3_lhs(&storage, 1, 0.1).unwrap();
        assert_eq!(lhs3 <= 0.1, wc_latency(&storage, 1).unwrap() <= 0.1);
    }
}
