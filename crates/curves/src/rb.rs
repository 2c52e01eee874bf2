//! Exact r-b curves and arrival curves of one tenant at one stage.
//!
//! Definitions (workload-compactor §2.2, Algorithm 1 of `shared/papers/workload-compactor.txt`).
//! Requests, with requests at the same instant merged into one, arrive at times
//! t_1 < … < t_n [s] with work w_k [stage unit: bytes or busy-s]; S_0 = 0, S_k = Σ_{m≤k} w_m.
//!
//! * **b(r)** [work], for a rate r ≥ 0 [work/s]: the least bucket size under which a token
//!   bucket draining at r never queues the trace, i.e. the peak level of Algorithm 1's
//!   virtual bucket just after a request is added:
//!   b(r) = max_{i ≤ j} (S_j − S_{i−1} − r·(t_j − t_i)).
//! * **α(τ)** [work], for a window length τ ≥ 0 [s]: the arrival curve
//!   α(τ) = min_{r ≥ 0} (b(r) + r·τ). It is the least concave majorant of the points
//!   (t_j − t_i, S_j − S_{i−1}) over all windows i ≤ j, flat at S_n beyond the trace's span;
//!   α(0) is the most work arriving at one instant.
//! * The **r-b curve** lists b at its breakpoints: one vertex `[rate, burst]` per linear piece
//!   of α (slope, intercept), plus `[0, S_n]` for the flat tail. b is linear between its
//!   vertices and constant (= α(0)) beyond the last one.
//!
//! The original rbGen samples b on a grid of rates ([`sampled_b`], [`sampled_rb`], kept for
//! tests and benchmarks) and prunes the result; here α is computed exactly, with no rate grid,
//! by divide and conquer over the requests ([`arrival_curve`]): for a range split at its middle,
//! windows that cross the split are unconstrained pairs (i left, j right), so their upper hull
//! is the Minkowski sum of the upper hull of the right half's (t_j, S_j) and that of the left
//! half's (−t_i, −S_{i−1}); a range's hull is the upper hull of its halves' hulls and the
//! crossing hull. The halves' end and start hulls are chained bottom-up, so a range costs the
//! size of its hulls rather than its length: O(n·h) for hulls of h vertices (on the
//! production traces h is tens; a curve has ~30 vertices on average), O(n log² n) at worst,
//! with no rate grid and no approximation. Times are kept as
//! integer nanoseconds, so window lengths are exact up to 2^53 ns (104 days).
//!
//! [`prune`] reduces a curve to a few pieces while staying an upper bound, as the original
//! does (it keeps at most 12). Work per request comes from [`crate::work`]; effective bandwidth
//! from an r-b curve lives in [`crate::effbw`]; the result types live in `tailbound-model`.

use tailbound_model::{ArrivalCurve, CurveError, RbCurve, Request};

use crate::WorkFunction;

/// Errors of building curves from work series.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RbError {
    #[error("request {index}: work {work} is not finite and non-negative; work functions must return finite work >= 0")]
    InvalidWork { index: usize, work: f64 },
    #[error("total work {total} is not finite; the work values are too large to add up")]
    TotalWork { total: f64 },
    #[error("work series has {times} times but {works} work values; give one work value per time")]
    LengthMismatch { times: usize, works: usize },
    #[error(
        "rate {rate} is not finite and non-negative; token-bucket rates must be >= 0 [work/s]"
    )]
    InvalidRate { rate: f64 },
    #[error("max_pieces is 0; a pruned curve keeps at least one line, so give max_pieces >= 1")]
    NoPieces,
    #[error("invalid arrival curve: {0}")]
    Curve(#[from] CurveError),
}

/// A tenant's work at one stage over time: one entry per distinct arrival instant, with the
/// work of all requests at that instant summed.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkSeries {
    /// arrival instants, strictly ascending [ns]
    times_ns: Vec<u64>,
    /// work arriving at each instant [stage unit], finite and ≥ 0
    work: Vec<f64>,
}

impl WorkSeries {
    /// Builds a series from `(arrival [ns], work)` pairs in any order: sorts by time (stable),
    /// merges equal times and checks that every work value is finite and ≥ 0.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (u64, f64)>) -> Result<WorkSeries, RbError> {
        let mut pairs: Vec<(u64, f64)> = pairs.into_iter().collect();
        if let Some((index, &(_, work))) = pairs
            .iter()
            .enumerate()
            .find(|(_, (_, w))| !(w.is_finite() && *w >= 0.0))
        {
            return Err(RbError::InvalidWork { index, work });
        }
        if !pairs.windows(2).all(|p| p[0].0 <= p[1].0) {
            pairs.sort_by_key(|p| p.0);
        }
        let mut times_ns: Vec<u64> = Vec::with_capacity(pairs.len());
        let mut work: Vec<f64> = Vec::with_capacity(pairs.len());
        for (t, w) in pairs {
            match (times_ns.last(), work.last_mut()) {
                (Some(&last), Some(acc)) if last == t => *acc += w,
                _ => {
                    times_ns.push(t);
                    work.push(w);
                }
            }
        }
        let total: f64 = work.iter().sum();
        if !total.is_finite() {
            return Err(RbError::TotalWork { total });
        }
        Ok(WorkSeries { times_ns, work })
    }

    /// Builds a series from parallel vectors of arrival times [ns] and work values.
    pub fn new(times_ns: Vec<u64>, work: Vec<f64>) -> Result<WorkSeries, RbError> {
        if times_ns.len() != work.len() {
            return Err(RbError::LengthMismatch {
                times: times_ns.len(),
                works: work.len(),
            });
        }
        WorkSeries::from_pairs(times_ns.into_iter().zip(work))
    }

    /// distinct arrival instants, strictly ascending [ns]
    pub fn times_ns(&self) -> &[u64] {
        &self.times_ns
    }

    /// work arriving at each instant [stage unit]
    pub fn work(&self) -> &[f64] {
        &self.work
    }

    /// number of distinct arrival instants
    pub fn len(&self) -> usize {
        self.times_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.times_ns.is_empty()
    }

    /// S_n, all the work of the series [stage unit]
    pub fn total_work(&self) -> f64 {
        self.work.iter().sum()
    }

    /// time from the first to the last arrival [s]; 0 for fewer than two instants
    pub fn span_s(&self) -> f64 {
        match (self.times_ns.first(), self.times_ns.last()) {
            (Some(a), Some(b)) => (b - a) as f64 / 1e9,
            _ => 0.0,
        }
    }
}

/// The work series of `requests` under `work`: one entry per distinct arrival instant.
///
/// Requests need not be sorted. Fails if the work function returns a negative or non-finite
/// value for some request (`index` is the request's position in `requests`).
pub fn work_series(requests: &[Request], work: &dyn WorkFunction) -> Result<WorkSeries, RbError> {
    WorkSeries::from_pairs(requests.iter().map(|r| (r.arrival_ns, work.work(r))))
}

/// A point (window length [ns, integer-valued], work) in the hull computations.
type Pt = (f64, f64);

/// Appends `p` (x ≥ every x in `h`) to the upper hull `h`, dropping points that fall on or
/// below the new chain.
fn push_upper(h: &mut Vec<Pt>, p: Pt) {
    if let Some(&last) = h.last() {
        if p.0 == last.0 {
            if p.1 <= last.1 {
                return;
            }
            h.pop();
        }
    }
    while h.len() >= 2 {
        let o = h[h.len() - 2];
        let a = h[h.len() - 1];
        // a is on or below the segment o→p: not a vertex of the upper hull
        if (a.0 - o.0) * (p.1 - o.1) - (a.1 - o.1) * (p.0 - o.0) >= 0.0 {
            h.pop();
        } else {
            break;
        }
    }
    h.push(p);
}

/// Upper hull of the Minkowski sum of two upper hulls (both sorted by x): merge their edges
/// by decreasing slope.
fn minkowski_upper(a: &[Pt], b: &[Pt], out: &mut Vec<Pt>) {
    let (mut i, mut j) = (0, 0);
    out.push((a[0].0 + b[0].0, a[0].1 + b[0].1));
    while i + 1 < a.len() || j + 1 < b.len() {
        let take_a = if i + 1 == a.len() {
            false
        } else if j + 1 == b.len() {
            true
        } else {
            let (dxa, dya) = (a[i + 1].0 - a[i].0, a[i + 1].1 - a[i].1);
            let (dxb, dyb) = (b[j + 1].0 - b[j].0, b[j + 1].1 - b[j].1);
            dya * dxb >= dyb * dxa
        };
        if take_a {
            i += 1;
        } else {
            j += 1;
        }
        out.push((a[i].0 + b[j].0, a[i].1 + b[j].1));
    }
}

/// Upper hull of the union of three upper hulls, each sorted by x (linear-time merge).
fn merge_upper(lists: [&[Pt]; 3]) -> Vec<Pt> {
    let mut out = Vec::with_capacity(lists.iter().map(|l| l.len()).sum());
    let mut idx = [0usize; 3];
    loop {
        let mut best: Option<usize> = None;
        for k in 0..3 {
            if let Some(p) = lists[k].get(idx[k]) {
                let better = match best {
                    None => true,
                    Some(b) => p.0 < lists[b][idx[b]].0,
                };
                if better {
                    best = Some(k);
                }
            }
        }
        let Some(k) = best else { break };
        push_upper(&mut out, lists[k][idx[k]]);
        idx[k] += 1;
    }
    out
}

/// The hulls of a range [lo, hi) of instants, built bottom-up.
struct RangeHulls {
    /// upper hull of the window points (t_j − t_i, S_j − S_{i−1}), lo ≤ i ≤ j < hi
    windows: Vec<Pt>,
    /// upper hull of the window ends U_j = (t_j, S_j), j in the range
    ends: Vec<Pt>,
    /// upper hull of the negated window starts −L_i = (−t_i, −S_{i−1}), i in the range
    starts: Vec<Pt>,
}

/// [`RangeHulls`] of [lo, hi), where `t` holds times relative to the first instant [ns] and
/// `s` the prefix sums (s[0] = 0, s[k] = S_k of the module docs shifted by one).
///
/// Windows within a half come from the halves; windows crossing the split pair any start in
/// the left half with any end in the right half, so their hull is the Minkowski sum of the
/// right half's `ends` hull and the left half's `starts` hull. A range's `ends`/`starts` hulls
/// are its halves' hulls chained (their x ranges do not overlap), so every step costs the
/// size of the hulls, not of the range.
fn range_hulls(t: &[f64], s: &[f64], lo: usize, hi: usize) -> RangeHulls {
    if hi - lo == 1 {
        return RangeHulls {
            windows: vec![(0.0, s[lo + 1] - s[lo])],
            ends: vec![(t[lo], s[lo + 1])],
            starts: vec![(-t[lo], -s[lo])],
        };
    }
    let mid = lo + (hi - lo) / 2;
    let left = range_hulls(t, s, lo, mid);
    let right = range_hulls(t, s, mid, hi);
    let mut cross = Vec::with_capacity(right.ends.len() + left.starts.len());
    minkowski_upper(&right.ends, &left.starts, &mut cross);
    let windows = merge_upper([&left.windows, &right.windows, &cross]);
    // ends: the left half's x (times) come first; starts: the right half's x (−times) do
    let mut ends = left.ends;
    for &p in &right.ends {
        push_upper(&mut ends, p);
    }
    let mut starts = right.starts;
    for &p in &left.starts {
        push_upper(&mut starts, p);
    }
    RangeHulls {
        windows,
        ends,
        starts,
    }
}

/// The exact arrival curve α of `series` (see the module docs): vertices `[τ [s], work]` from
/// τ = 0 to the last breakpoint, then flat (`tail_rate` 0) at the total work.
///
/// An empty series gives α = 0; a single instant (span 0) gives the constant α = its work.
/// The result passes [`ArrivalCurve::new`]'s checks; an error would mean a bug in the hull.
pub fn arrival_curve(series: &WorkSeries) -> Result<ArrivalCurve, RbError> {
    let n = series.len();
    let Some(&t0) = series.times_ns.first() else {
        return Ok(ArrivalCurve::new(vec![[0.0, 0.0]], 0.0)?);
    };
    let t: Vec<f64> = series.times_ns.iter().map(|&x| (x - t0) as f64).collect();
    let mut s = Vec::with_capacity(n + 1);
    s.push(0.0);
    let mut acc = 0.0;
    for &w in &series.work {
        acc += w;
        s.push(acc);
    }
    let mut hull = range_hulls(&t, &s, 0, n).windows;
    // beyond the point of most work the curve is flat; drop flat trailing pieces (trailing
    // zero-work instants) so the last vertex is where α reaches S_n
    while hull.len() >= 2 && hull[hull.len() - 1].1 <= hull[hull.len() - 2].1 {
        hull.pop();
    }
    let vertices = hull.iter().map(|&(x, y)| [x / 1e9, y]).collect();
    Ok(ArrivalCurve::new(vertices, 0.0)?)
}

/// The arrival curve a decision should use: the exact [`arrival_curve`] continued at the
/// series' mean work rate (`ArrivalCurve::sustained`). The exact curve of a finite trace ends
/// flat at its total work, which would let a deterministic analysis treat an overloaded queue
/// as stable; rates below the mean mean nothing for a stationary tenant. A series of one
/// instant keeps its exact (constant) curve.
pub fn sustained_arrival_curve(series: &WorkSeries) -> Result<ArrivalCurve, RbError> {
    let exact = arrival_curve(series)?;
    let span_s = series.span_s();
    Ok(if span_s > 0.0 {
        exact.sustained(series.total_work() / span_s)
    } else {
        exact
    })
}

/// The exact r-b curve of `series`: the dual of [`arrival_curve`], starting at `[0, S_n]`.
pub fn rb_curve(series: &WorkSeries) -> Result<RbCurve, RbError> {
    Ok(arrival_curve(series)?.to_rb())
}

fn check_rate(rate: f64) -> Result<(), RbError> {
    if rate.is_finite() && rate >= 0.0 {
        Ok(())
    } else {
        Err(RbError::InvalidRate { rate })
    }
}

/// b(`rate`) by replaying the series through Algorithm 1's virtual bucket (O(n)): the
/// original rbGen at one rate [work/s]. Equal to the exact curve's burst at that rate.
pub fn sampled_b(series: &WorkSeries, rate: f64) -> Result<f64, RbError> {
    check_rate(rate)?;
    let mut bucket = 0.0f64;
    let mut peak = 0.0f64;
    let mut prev = series.times_ns.first().copied().unwrap_or(0);
    for (&t, &w) in series.times_ns.iter().zip(&series.work) {
        bucket = (bucket - rate * ((t - prev) as f64 / 1e9)).max(0.0) + w;
        peak = peak.max(bucket);
        prev = t;
    }
    Ok(peak)
}

/// Algorithm 1 at each of `rates`: `[rate, b(rate)]` in the order given (the original
/// method; O(n) per rate).
pub fn sampled_rb(series: &WorkSeries, rates: &[f64]) -> Result<Vec<[f64; 2]>, RbError> {
    rates
        .iter()
        .map(|&r| sampled_b(series, r).map(|b| [r, b]))
        .collect()
}

/// One line b + r·τ of an arrival curve.
#[derive(Debug, Clone, Copy)]
struct Line {
    rate: f64,
    burst: f64,
}

/// Where two lines of different rates cross: (τ, value).
fn crossing(a: Line, b: Line) -> Pt {
    let x = ((b.burst - a.burst) / (a.rate - b.rate)).max(0.0);
    (x, a.burst + a.rate * x)
}

/// Reduces `curve` to at most `max_pieces` linear pieces (token buckets) while staying an
/// upper bound of it.
///
/// α is the minimum of the lines of its pieces (one per piece, the tail included); dropping
/// any of them can only raise α. Greedy, like the original's pruning to 12 segments: while
/// there are too many lines, drop the one whose removal adds the least area under the curve
/// on [0, τ_last] (τ_last = the input's last vertex), keeping at least one line. Because a
/// curve from [`arrival_curve`] is flat beyond τ_last, its rate-0 line adds no area there and
/// goes first: a pruned curve then grows at its smallest remaining rate for ever, and its r-b
/// curve starts at that rate (as the original's pruned curves do). Returns the input unchanged
/// when it already has at most `max_pieces` pieces; errors for `max_pieces` = 0 or an invalid
/// curve.
pub fn prune(curve: &ArrivalCurve, max_pieces: usize) -> Result<ArrivalCurve, RbError> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    if max_pieces == 0 {
        return Err(RbError::NoPieces);
    }
    let v = curve.vertices();
    let m = v.len();
    if m <= max_pieces {
        return Ok(curve.clone());
    }
    // lines in curve order: steepest first, the tail last
    let mut lines: Vec<Line> = Vec::with_capacity(m);
    for k in 0..m {
        let rate = if k + 1 < m {
            (v[k + 1][1] - v[k][1]) / (v[k + 1][0] - v[k][0])
        } else {
            curve.tail_rate()
        };
        lines.push(Line {
            rate,
            burst: v[k][1] - rate * v[k][0],
        });
    }
    let x_end = v[m - 1][0];
    let mut prev: Vec<Option<usize>> = (0..m).map(|k| k.checked_sub(1)).collect();
    let mut next: Vec<Option<usize>> = (0..m).map(|k| (k + 1 < m).then_some(k + 1)).collect();
    let mut version = vec![0u64; m];
    let mut alive = m;

    // area added on [0, x_end] by dropping line k, given its current neighbours
    let cost = |k: usize, prev: &[Option<usize>], next: &[Option<usize>]| -> f64 {
        let l = lines[k];
        let area = match (prev[k], next[k]) {
            (None, None) => f64::INFINITY,
            (None, Some(n)) => {
                let (x, _) = crossing(l, lines[n]);
                (lines[n].burst - l.burst) * x / 2.0
            }
            (Some(p), None) => {
                let (x, _) = crossing(lines[p], l);
                let d = (x_end - x).max(0.0);
                (lines[p].rate - l.rate) * d * d / 2.0
            }
            (Some(p), Some(n)) => {
                let a = crossing(lines[p], l);
                let b = crossing(l, lines[n]);
                let q = crossing(lines[p], lines[n]);
                ((b.0 - a.0) * (q.1 - a.1) - (b.1 - a.1) * (q.0 - a.0)).abs() / 2.0
            }
        };
        if area.is_nan() {
            0.0
        } else {
            area
        }
    };
    let key = |c: f64| Reverse(OrdF64(c));
    let mut heap: BinaryHeap<(Reverse<OrdF64>, usize, u64)> =
        (0..m).map(|k| (key(cost(k, &prev, &next)), k, 0)).collect();
    while alive > max_pieces {
        let Some((_, k, ver)) = heap.pop() else { break };
        if ver != version[k] {
            continue;
        }
        version[k] = u64::MAX;
        alive -= 1;
        let (p, n) = (prev[k], next[k]);
        if let Some(p) = p {
            next[p] = n;
        }
        if let Some(n) = n {
            prev[n] = p;
        }
        for j in [p, n].into_iter().flatten() {
            version[j] += 1;
            heap.push((key(cost(j, &prev, &next)), j, version[j]));
        }
    }
    let mut k = (0..m).find(|&k| version[k] != u64::MAX && prev[k].is_none());
    let mut vertices: Vec<[f64; 2]> = Vec::with_capacity(alive);
    let mut tail_rate = 0.0;
    while let Some(cur) = k {
        let l = lines[cur];
        match vertices.last() {
            None => vertices.push([0.0, l.burst.max(0.0)]),
            Some(_) => {
                if let Some(p) = prev[cur] {
                    let (x, y) = crossing(lines[p], l);
                    if vertices.last().is_some_and(|last| x > last[0]) {
                        vertices.push([x, y]);
                    }
                }
            }
        }
        tail_rate = l.rate.max(0.0);
        k = next[cur];
    }
    Ok(ArrivalCurve::new(vertices, tail_rate)?)
}

/// Total order on f64 for the pruning heap (costs are never NaN).
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(pairs: &[(u64, f64)]) -> WorkSeries {
        WorkSeries::from_pairs(pairs.iter().copied()).unwrap()
    }

    #[test]
    fn decision_curve_continues_at_the_mean_rate() {
        // 10 units at 0 s, 2 at 1 s, 6 at 3 s: mean 18 / 3 s = 6 per s
        let s = series(&[(0, 10.0), (1_000_000_000, 2.0), (3_000_000_000, 6.0)]);
        let exact = arrival_curve(&s).unwrap();
        let d = sustained_arrival_curve(&s).unwrap();
        assert_eq!(exact.tail_rate(), 0.0);
        assert_eq!(d.tail_rate(), 6.0);
        for t in [0.0, 0.5, 1.0, 3.0, 30.0] {
            assert!(d.at(t) >= exact.at(t));
        }
        // long windows grow at the mean rate instead of stopping at the trace's total
        assert!(d.at(30.0) > 18.0 + 6.0 * 26.0);
        let one = series(&[(5, 4.0)]);
        assert_eq!(
            sustained_arrival_curve(&one).unwrap(),
            arrival_curve(&one).unwrap()
        );
    }

    /// α by brute force: the upper hull of all window points.
    fn brute(s: &WorkSeries) -> Vec<Pt> {
        let (t, w) = (s.times_ns(), s.work());
        let mut pts = Vec::new();
        for i in 0..t.len() {
            let mut acc = 0.0;
            for j in i..t.len() {
                acc += w[j];
                pts.push(((t[j] - t[i]) as f64, acc));
            }
        }
        pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut h = Vec::new();
        for p in pts {
            push_upper(&mut h, p);
        }
        h
    }

    #[test]
    fn small_trace_matches_brute_force_and_algorithm_1() {
        let s = series(&[
            (0, 3.0),
            (1_000_000_000, 1.0),
            (1_500_000_000, 4.0),
            (1_500_000_000, 1.0),
            (4_000_000_000, 2.0),
            (4_100_000_000, 0.5),
        ]);
        assert_eq!(s.len(), 5);
        let a = arrival_curve(&s).unwrap();
        assert!(ArrivalCurve::new(a.vertices().to_vec(), a.tail_rate()).is_ok());
        assert_eq!(a.vertices()[0], [0.0, 5.0]);
        assert_eq!(a.at(1e3), 11.5);
        for (x, y) in brute(&s) {
            assert!((a.at(x / 1e9) - y).abs() < 1e-12 || a.at(x / 1e9) > y);
        }
        let rb = rb_curve(&s).unwrap();
        for r in [0.0, 0.1, 0.5, 1.0, 2.0, 3.3, 8.0, 100.0] {
            let exact = rb.burst_at(r).unwrap();
            assert!((exact - sampled_b(&s, r).unwrap()).abs() < 1e-12, "r={r}");
        }
    }

    #[test]
    fn degenerate_series_give_finite_curves() {
        let empty = series(&[]);
        assert_eq!(arrival_curve(&empty).unwrap().vertices(), vec![[0.0, 0.0]]);
        assert_eq!(rb_curve(&empty).unwrap().vertices(), vec![[0.0, 0.0]]);
        let one = series(&[(7, 2.5)]);
        assert_eq!(arrival_curve(&one).unwrap().vertices(), vec![[0.0, 2.5]]);
        assert_eq!(rb_curve(&one).unwrap().vertices(), vec![[0.0, 2.5]]);
        let same = series(&[(7, 2.5), (7, 1.0), (7, 0.5)]);
        assert_eq!(arrival_curve(&same).unwrap().vertices(), vec![[0.0, 4.0]]);
        assert_eq!(sampled_b(&same, 1e9).unwrap(), 4.0);
        // trailing zero-work instants do not add a flat piece
        let zero = series(&[(0, 1.0), (5, 0.0)]);
        assert_eq!(arrival_curve(&zero).unwrap().vertices(), vec![[0.0, 1.0]]);
    }

    #[test]
    fn rejects_bad_work_and_rates() {
        assert!(matches!(
            WorkSeries::from_pairs([(0, 1.0), (1, f64::NAN)]),
            Err(RbError::InvalidWork { index: 1, .. })
        ));
        assert!(WorkSeries::from_pairs([(0, -1.0)]).is_err());
        assert!(WorkSeries::new(vec![1, 2], vec![1.0]).is_err());
        let s = series(&[(0, 1.0)]);
        let e = sampled_b(&s, -1.0).unwrap_err();
        assert!(e.to_string().contains("-1"), "{e}");
        assert!(sampled_rb(&s, &[1.0, f64::INFINITY]).is_err());
    }

    #[test]
    fn unsorted_input_is_sorted() {
        let a = series(&[(2, 1.0), (0, 2.0), (1, 3.0)]);
        assert_eq!(a.times_ns(), &[0, 1, 2]);
        assert_eq!(a.work(), &[2.0, 3.0, 1.0]);
    }

    #[test]
    fn prune_keeps_an_upper_bound() {
        let a = ArrivalCurve::new(
            vec![
                [0.0, 5.0],
                [1.0, 9.0],
                [2.0, 12.0],
                [4.0, 15.0],
                [8.0, 16.0],
            ],
            0.0,
        )
        .unwrap();
        assert_eq!(prune(&a, 5).unwrap(), a);
        assert_eq!(prune(&a, 0), Err(RbError::NoPieces));
        for k in 1..5 {
            let p = prune(&a, k).unwrap();
            assert!(p.vertices().len() <= k);
            assert!(ArrivalCurve::new(p.vertices().to_vec(), p.tail_rate()).is_ok());
            for i in 0..200 {
                let t = i as f64 * 0.05;
                assert!(p.at(t) >= a.at(t) - 1e-9, "k={k} t={t}");
            }
        }
        // the flat tail adds no area before the last vertex: it goes first
        assert_eq!(prune(&a, 4).unwrap().tail_rate(), 0.25);
        assert_eq!(prune(&a, 1).unwrap().vertices().len(), 1);
    }
}
