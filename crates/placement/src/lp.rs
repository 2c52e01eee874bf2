//! wcOptimizer: the LP that decides whether a set of workloads fits on one server and, if so,
//! picks every workload's token bucket at every stage (workload-compactor §2.3.1).
//!
//! Capacities are normalised to 1 per stage (see the crate docs). For workloads j with
//! priority levels ℓ_j (0 highest; dense rank of the SLO on the server), stages
//! s ∈ {net-in, storage, net-out} on the server and the client NIC c of each workload:
//!
//! * variables r_js ∈ [r̲_js, 1] and b_js ≥ b̲_js for every j and every stage including c
//!   (r̲ = the workload's long-term rate, b̲ = the curve's least burst), R_p ∈ [0, 1] for
//!   every level p that has higher levels on the server, M_p ≥ 0 for every level;
//! * on or above the r-b curve, one constraint per segment of the convex curve:
//!   b_js − σ_k·r_js ≥ b_k − σ_k·r_k (σ_k the slope of segment k; segments that start at a
//!   rate ≥ 1 cannot bind and are left out);
//! * eq. (4): Σ_j r_js ≤ 1 at every server stage;
//! * eq. (7)'s R_p: Σ_{ℓ_j < p} r_js ≤ R_p at every server stage;
//! * the client NIC: M_p ≥ b_jc for every j at level p (each workload has its own client NIC,
//!   so no other workload queues there and its bound is b_jc / 1);
//! * eq. (7) with the client NIC: Σ_{ℓ_j ≤ p} Σ_s b_js + M_p + R_p·SLO_p ≤ SLO_p. It implies
//!   Σ_s B_p^s / (1 − R_p) + b_jc ≤ SLO_p for every j at p (multiply by 1 − R_p and use
//!   b_jc·(1 − R_p) ≤ b_jc), i.e. eq. (6) plus the client NIC's eq. (1), which bounds
//!   eq. (5): the linearisation is conservative, never optimistic;
//! * objective: min Σ r over all variables r (the paper's choice; only feasibility decides
//!   the fit).
//!
//! With [`ClientNic::Tandem`] (WorkloadCompactor's topology: the server's workloads share a
//! client host no other server uses) the client NIC adds nothing: it has no variables, no M_p
//! and no term in eq. (7), and its bucket in the answer is net-out's (the response flow, shaped
//! once at net-out, crosses it unchanged). The original's LP (`WorkloadCompactor.cpp`) has the
//! same three stages: one per flow at its first queue.
//!
//! SLO_p here is the budget: the SLO minus the device's profiled latency. The rows of eq. (4)
//! and eq. (7) are tightened by 1e-6 and 1e-7 so that HiGHS's feasibility tolerance cannot
//! push an answer over the limit; every answer is then lifted onto the curve exactly (b at
//! least the curve at the chosen r) and checked with `tailbound-calculus`' eq. (5) ([`check`]).
//! An infeasible LP is `Ok(None)`: the workloads do not fit together. Never zeroed limits.
//!
//! **Solving in two phases.** HiGHS's dual simplex sometimes ends a nearly infeasible
//! problem of this shape in status Unknown instead of proving infeasibility (tiny slopes of
//! the flat ends of the curves, rates of 1e-5). So phase 1 solves the elastic LP, with one
//! column z ≥ 0 subtracted from every eq. (4) and eq. (7) row and objective min z (always
//! feasible and bounded): z* > 1e-9 means "does not fit". Phase 2 solves min Σr without z;
//! should it not reach an optimum, phase 1's point is used (it is feasible and is checked
//! like any answer). Curve segments flatter than 1e-4 s per unit of rate are replaced by a
//! constant lower bound on b (at most 0.1 ms above the curve on r ≤ 1: conservative).

use crate::workload::NormCurve;
use crate::{ClientNic, LpStage, PlacementError};
use highs::{HighsModelStatus, RowProblem, Sense};
use tailbound_calculus::dnc::{wc_multi_stage_latency, TokenBucketAt};
use tailbound_model::Bucket;

/// Slack kept below Σr ≤ 1 [1].
const CAPACITY_SLACK: f64 = 1e-6;
/// Slack kept below each eq. (7) budget [s].
const BUDGET_SLACK_S: f64 = 1e-7;
/// Phase 1's z at or below which the LP counts as feasible.
const ELASTIC_TOLERANCE: f64 = 1e-9;
/// How far the calculus check may exceed the budget before it is an error [s].
const CHECK_TOLERANCE_S: f64 = 1e-6;

/// One workload in a server's LP.
#[derive(Debug, Clone, Copy)]
pub struct LpMember<'a> {
    pub name: &'a str,
    /// normalised curves in [`LpStage::ALL`] order
    pub curves: &'a [NormCurve; 4],
    /// SLO latency, for the priority order [s]
    pub slo_s: f64,
    /// SLO latency minus the device latency: what the queues may use [s]
    pub budget_s: f64,
}

/// The LP's answer for a server that fits.
#[derive(Debug, Clone, PartialEq)]
pub struct LpSolution {
    /// per member, a bucket per stage in [`LpStage::ALL`] order (normalised)
    pub buckets: Vec<[Bucket; 4]>,
    /// per member, its priority level on this server (0 highest)
    pub levels: Vec<u32>,
    /// Σ r at each server stage [1]
    pub rate_sums: [f64; 3],
    /// how the client NIC was modelled (what [`bounds`] adds for it)
    pub client_nic: ClientNic,
}

/// Segments flatter than this are replaced by a constant lower bound on b [s per unit of r].
const FLAT_SLOPE_S: f64 = 1e-4;

/// How many leading segments of `c` become LP rows, and the lower bound of b: segments that
/// start at a rate ≥ 1 cannot bind; from the first segment flatter than [`FLAT_SLOPE_S`] on,
/// the rest of the curve is replaced by b ≥ the burst at that segment's start, which is never
/// below the curve (b is non-increasing) and at most FLAT_SLOPE_S · 1 s above it on r ≤ 1.
/// Nearly parallel rows with tiny coefficients otherwise leave HiGHS in status Unknown.
fn flat_tail(c: &NormCurve) -> (usize, f64) {
    let v = c.vertices();
    for k in 0..v.len().saturating_sub(1) {
        let ([ra, ba], [rc, bc]) = (v[k], v[k + 1]);
        if ra >= 1.0 {
            return (k, c.burst_at(1.0).unwrap_or(ba).max(c.min_burst()));
        }
        if (ba - bc) / (rc - ra) < FLAT_SLOPE_S {
            return (k, ba);
        }
    }
    (v.len() - 1, c.min_burst())
}

/// Dense rank of the SLOs, tightest first.
pub(crate) fn levels_of(slos: impl Iterator<Item = f64> + Clone) -> Vec<u32> {
    let mut distinct: Vec<f64> = slos.clone().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    slos.map(|s| distinct.partition_point(|&d| d < s) as u32)
        .collect()
}

/// Solves the server LP for `members`, each with its own client NIC ([`ClientNic::Own`]).
/// `Ok(None)`: infeasible, they do not fit together.
pub fn optimise(members: &[LpMember<'_>]) -> Result<Option<LpSolution>, PlacementError> {
    optimise_with(members, ClientNic::Own)
}

/// Solves the server LP for `members` with the client NIC modelled as `client_nic`.
/// `Ok(None)`: infeasible, they do not fit together.
pub fn optimise_with(
    members: &[LpMember<'_>],
    client_nic: ClientNic,
) -> Result<Option<LpSolution>, PlacementError> {
    if members.is_empty() {
        return Ok(Some(LpSolution {
            buckets: Vec::new(),
            levels: Vec::new(),
            rate_sums: [0.0; 3],
            client_nic,
        }));
    }
    let levels = levels_of(members.iter().map(|m| m.slo_s));
    let n_levels = levels.iter().max().map_or(0, |&l| l as usize + 1);
    let mut budget = vec![f64::INFINITY; n_levels];
    for (m, &l) in members.iter().zip(&levels) {
        if !(m.budget_s.is_finite() && m.budget_s > BUDGET_SLACK_S) {
            return Ok(None);
        }
        budget[l as usize] = budget[l as usize].min(m.budget_s);
    }
    // a long-term rate above capacity can never fit
    for m in members {
        if m.curves.iter().any(|c| c.min_rate() > 1.0 - CAPACITY_SLACK) {
            return Ok(None);
        }
    }

    // Phase 2 first: HiGHS answers most of these LPs at once, optimal or proven infeasible.
    let (phase2, r_idx, b_idx) = build(members, &levels, &budget, client_nic, false);
    match solve_once(phase2.clone(), &[("presolve", "off")])? {
        (HighsModelStatus::Optimal, Some(x)) => {
            match answer(members, &x, &r_idx, &b_idx, levels.clone(), client_nic) {
                Ok(sol) => return Ok(Some(sol)),
                Err(e) => {
                    tracing::debug!(error = %e, "direct LP answer failed its check; solving in two phases")
                }
            }
        }
        (HighsModelStatus::Infeasible, _) => return Ok(None),
        (other, _) => {
            tracing::debug!(status = ?other, "LP not decided directly; solving in two phases")
        }
    }
    // Phase 1 (elastic): one extra column z ≥ 0 relaxes eq. (4) and eq. (7); min z is always
    // feasible and bounded, and z* = 0 exactly when the LP is feasible. Phase 2: min Σr
    // without z. HiGHS cannot always prove a nearly-feasible LP infeasible (status Unknown);
    // phase 1 turns that question into an optimisation it answers.
    let (phase1, _, _) = build(members, &levels, &budget, client_nic, true);
    let Some(x1) = solve(phase1)? else {
        return Err(PlacementError::Solver(
            "the elastic LP (always feasible) was not solved".into(),
        ));
    };
    let z = x1[x1.len() - 1];
    if z > ELASTIC_TOLERANCE {
        return Ok(None);
    }
    let x = match solve(phase2)? {
        Some(x) => x,
        // phase 1 found a point within tolerance; use it (checked below)
        None => {
            tracing::debug!("phase 2 of the LP not solved; using the feasible point of phase 1");
            x1
        }
    };
    let sol = answer(members, &x, &r_idx, &b_idx, levels, client_nic)?;
    Ok(Some(sol))
}

/// The LP's point `x` lifted exactly onto the curves (b at least the curve at the chosen r)
/// and checked against the calculus.
fn answer(
    members: &[LpMember<'_>],
    x: &[f64],
    r_idx: &[Vec<usize>],
    b_idx: &[Vec<usize>],
    levels: Vec<u32>,
    client_nic: ClientNic,
) -> Result<LpSolution, PlacementError> {
    let mut buckets = Vec::with_capacity(members.len());
    let mut rate_sums = [0.0; 3];
    for (j, m) in members.iter().enumerate() {
        let mut bs = [Bucket {
            rate: 0.0,
            burst: 0.0,
        }; 4];
        for (s, c) in m.curves.iter().enumerate().take(r_idx[j].len()) {
            let r = x[r_idx[j][s]].clamp(c.min_rate(), 1.0);
            let on_curve = c.burst_at(r).unwrap_or(f64::INFINITY).max(flat_tail(c).1);
            let b = x[b_idx[j][s]].max(on_curve).max(0.0);
            if !(r.is_finite() && b.is_finite()) {
                return Err(PlacementError::Solver(format!(
                    "non-finite answer for {}: r = {r}, b = {b}",
                    m.name
                )));
            }
            bs[s] = Bucket { rate: r, burst: b };
            if s < 3 {
                rate_sums[s] += r;
            }
        }
        if client_nic == ClientNic::Tandem {
            bs[LpStage::ClientIn.index()] = bs[LpStage::NetOut.index()];
        }
        buckets.push(bs);
    }
    let sol = LpSolution {
        buckets,
        levels,
        rate_sums,
        client_nic,
    };
    check(members, &sol)?;
    Ok(sol)
}

/// Builds the server LP; with `elastic`, the objective is min z instead of min Σr (z the
/// last column). Returns the problem and the column numbers of r and b per member and stage.
#[allow(clippy::type_complexity)]
fn build(
    members: &[LpMember<'_>],
    levels: &[u32],
    budget: &[f64],
    client_nic: ClientNic,
    elastic: bool,
) -> (RowProblem, Vec<Vec<usize>>, Vec<Vec<usize>>) {
    // the stages with variables: the client NIC only when it is the workload's own
    let n_stages = match client_nic {
        ClientNic::Own => LpStage::ALL.len(),
        ClientNic::Tandem => LpStage::SERVER.len(),
    };
    let n_levels = budget.len();
    let mut pb = RowProblem::default();
    let r_cost = if elastic { 0.0 } else { 1.0 };
    // columns are numbered in the order they are added; the idx vectors keep that number
    let mut r_col = Vec::with_capacity(members.len());
    let mut b_col = Vec::with_capacity(members.len());
    let mut r_idx = Vec::with_capacity(members.len());
    let mut b_idx = Vec::with_capacity(members.len());
    let mut next = 0usize;
    for m in members {
        let (mut rs, mut bs, mut ri, mut bi) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for c in m.curves.iter().take(n_stages) {
            rs.push(pb.add_column(r_cost, c.min_rate()..=1.0));
            ri.push(next);
            bs.push(pb.add_column(0.0, flat_tail(c).1..));
            bi.push(next + 1);
            next += 2;
        }
        r_col.push(rs);
        b_col.push(bs);
        r_idx.push(ri);
        b_idx.push(bi);
    }
    // R_p for levels with higher levels present (level 0 has none: R_0 = 0)
    let rp: Vec<Option<highs::Col>> = (0..n_levels)
        .map(|p| (p > 0).then(|| pb.add_column(0.0, 0.0..)))
        .collect();
    let mp: Vec<Option<highs::Col>> = (0..n_levels)
        .map(|_| (client_nic == ClientNic::Own).then(|| pb.add_column(0.0, 0.0..)))
        .collect();
    // the elastic column, last
    let z = elastic.then(|| pb.add_column(1.0, 0.0..));

    // on or above the r-b curve
    for (j, m) in members.iter().enumerate() {
        for (s, c) in m.curves.iter().enumerate().take(n_stages) {
            let (segments, _) = flat_tail(c);
            for w in c.vertices()[..=segments].windows(2) {
                let ([ra, ba], [rc, bc]) = (w[0], w[1]);
                let slope = (bc - ba) / (rc - ra);
                pb.add_row(
                    (ba - slope * ra)..,
                    [(b_col[j][s], 1.0), (r_col[j][s], -slope)],
                );
            }
        }
    }
    for stage in LpStage::SERVER {
        let s = stage.index();
        // eq. (4)
        let mut row: Vec<(highs::Col, f64)> =
            (0..members.len()).map(|j| (r_col[j][s], 1.0)).collect();
        row.extend(z.map(|z| (z, -1.0)));
        pb.add_row(..=(1.0 - CAPACITY_SLACK), row);
        // R_p ≥ Σ higher-priority rates
        for (p, col) in rp.iter().enumerate() {
            let Some(col) = *col else { continue };
            let higher: Vec<(highs::Col, f64)> = (0..members.len())
                .filter(|&j| (levels[j] as usize) < p)
                .map(|j| (r_col[j][s], 1.0))
                .chain(std::iter::once((col, -1.0)))
                .collect();
            pb.add_row(..=0.0, higher);
        }
    }
    // the client NICs: M_p ≥ b_jc
    if client_nic == ClientNic::Own {
        let c = LpStage::ClientIn.index();
        for (j, &l) in levels.iter().enumerate() {
            if let Some(m) = mp[l as usize] {
                pb.add_row(..=0.0, [(b_col[j][c], 1.0), (m, -1.0)]);
            }
        }
    }
    // eq. (7) per level, with the client NIC's term
    for p in 0..n_levels {
        let mut row: Vec<(highs::Col, f64)> = Vec::new();
        for (j, &l) in levels.iter().enumerate() {
            if (l as usize) <= p {
                for stage in LpStage::SERVER {
                    row.push((b_col[j][stage.index()], 1.0));
                }
            }
        }
        row.extend(mp[p].map(|m| (m, 1.0)));
        let slo = budget[p];
        if let Some(col) = rp[p] {
            row.push((col, slo));
        }
        row.extend(z.map(|z| (z, -1.0)));
        pb.add_row(..=(slo - BUDGET_SLACK_S), row);
    }
    (pb, r_idx, b_idx)
}

/// Solves `pb` (minimise); `Ok(None)` when HiGHS reports no optimum, after retrying without
/// presolve and with the interior-point solver (HiGHS may end a badly scaled problem in status
/// Unknown: small infeasibilities after unscaling).
fn solve(pb: RowProblem) -> Result<Option<Vec<f64>>, PlacementError> {
    let attempts: [&[(&str, &str)]; 3] = [&[], &[("presolve", "off")], &[("solver", "ipm")]];
    for options in attempts {
        match solve_once(pb.clone(), options)? {
            (HighsModelStatus::Optimal, Some(x)) => return Ok(Some(x)),
            (other, _) => tracing::debug!(status = ?other, ?options, "LP not solved; retrying"),
        }
    }
    Ok(None)
}

/// One HiGHS run of `pb` (minimise) with `options`: its status, and the columns when optimal.
fn solve_once(
    pb: RowProblem,
    options: &[(&str, &str)],
) -> Result<(HighsModelStatus, Option<Vec<f64>>), PlacementError> {
    let mut model = pb
        .try_optimise(Sense::Minimise)
        .map_err(|e| PlacementError::Solver(format!("cannot load the LP: {e:?}")))?;
    model.make_quiet();
    for &(k, v) in options {
        model.set_option(k, v);
    }
    let s = model
        .try_solve()
        .map_err(|e| PlacementError::Solver(format!("{e:?}")))?;
    let status = s.status();
    let x = (status == HighsModelStatus::Optimal).then(|| s.get_solution().columns().to_vec());
    Ok((status, x))
}

/// The latency bound of every member under `sol` by the calculus (eq. (5) over the server's
/// stages plus, with [`ClientNic::Own`], its own client NIC's eq. (1)) [s], in member order.
pub fn bounds(sol: &LpSolution) -> Result<Vec<f64>, PlacementError> {
    let stage_buckets = |s: usize| -> Vec<TokenBucketAt> {
        sol.buckets
            .iter()
            .zip(&sol.levels)
            .map(|(b, &priority)| TokenBucketAt {
                rate: b[s].rate,
                burst: b[s].burst,
                priority,
            })
            .collect()
    };
    let [a, b, c] = LpStage::SERVER.map(|s| stage_buckets(s.index()));
    let stages: [&[TokenBucketAt]; 3] = [&a, &b, &c];
    sol.buckets
        .iter()
        .zip(&sol.levels)
        .map(|(bk, &level)| {
            let server = wc_multi_stage_latency(&stages, level)
                .map_err(|e| PlacementError::Solver(format!("calculus check: {e}")))?;
            Ok(match sol.client_nic {
                ClientNic::Own => server + bk[LpStage::ClientIn.index()].burst,
                ClientNic::Tandem => server,
            })
        })
        .collect()
}

/// Checks an LP answer against the calculus: every member's bound within its budget.
pub fn check(members: &[LpMember<'_>], sol: &LpSolution) -> Result<(), PlacementError> {
    for (m, bound) in members.iter().zip(bounds(sol)?) {
        if bound > m.budget_s + CHECK_TOLERANCE_S {
            return Err(PlacementError::Inconsistent {
                name: m.name.to_string(),
                bound_s: bound,
                budget_s: m.budget_s,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::RbCurve;

    fn norm(v: Vec<[f64; 2]>) -> NormCurve {
        NormCurve::new(&RbCurve::new(v).unwrap(), 1.0, 0.0)
    }

    fn same4(c: NormCurve) -> [NormCurve; 4] {
        [c.clone(), c.clone(), c.clone(), c]
    }

    fn member<'a>(name: &'a str, c: &'a [NormCurve; 4], slo: f64) -> LpMember<'a> {
        LpMember {
            name,
            curves: c,
            slo_s: slo,
            budget_s: slo,
        }
    }

    #[test]
    fn one_workload_fits_on_its_curve() {
        // b = 0.2 at r = 0.1, 0 at r = 0.5
        let c = same4(norm(vec![[0.1, 0.2], [0.5, 0.0]]));
        let sol = optimise(&[member("a", &c, 1.0)]).unwrap().unwrap();
        // plenty of budget: every stage at its least rate
        for b in &sol.buckets[0] {
            assert!(
                (b.rate - 0.1).abs() < 1e-6 && (b.burst - 0.2).abs() < 1e-6,
                "{b:?}"
            );
        }
        // budget 0.4 over 4 stages of bursts: the LP must raise rates
        let sol = optimise(&[member("a", &c, 0.4)]).unwrap().unwrap();
        let total_b: f64 = sol.buckets[0].iter().map(|b| b.burst).sum();
        assert!(total_b <= 0.4 + 1e-6, "{total_b}");
        for b in &sol.buckets[0] {
            assert!(b.burst >= c[0].burst_at(b.rate).unwrap() - 1e-12);
        }
        let bound = bounds(&sol).unwrap()[0];
        assert!(bound <= 0.4 + 1e-6, "{bound}");
    }

    #[test]
    fn infeasible_is_none_not_zeroed_limits() {
        // least burst 0.2 per stage × 4 stages > 0.5
        let c = same4(norm(vec![[0.1, 1.0], [0.5, 0.2]]));
        assert_eq!(optimise(&[member("a", &c, 0.5)]).unwrap(), None);
        // long-term rates 0.4 + 0.4 + 0.4 > 1 at every stage
        let c = same4(norm(vec![[0.4, 0.01]]));
        let ms = [
            member("a", &c, 10.0),
            member("b", &c, 10.0),
            member("c", &c, 10.0),
        ];
        assert_eq!(optimise(&ms).unwrap(), None);
        assert!(optimise(&ms[..2]).unwrap().is_some());
    }

    #[test]
    fn priorities_follow_slos() {
        let c = same4(norm(vec![[0.05, 0.05], [0.2, 0.01]]));
        let ms = [
            member("loose", &c, 1.0),
            member("tight", &c, 0.1),
            member("mid", &c, 0.5),
            member("tight2", &c, 0.1),
        ];
        let sol = optimise(&ms).unwrap().unwrap();
        assert_eq!(sol.levels, vec![2, 0, 1, 0]);
        for (m, b) in ms.iter().zip(bounds(&sol).unwrap()) {
            assert!(b <= m.budget_s + 1e-6, "{} {b}", m.name);
        }
    }

    #[test]
    fn device_budget_below_zero_does_not_fit() {
        let c = same4(norm(vec![[0.05, 0.05]]));
        let mut m = member("a", &c, 0.1);
        m.budget_s = -0.01;
        assert_eq!(optimise(&[m]).unwrap(), None);
    }
}
