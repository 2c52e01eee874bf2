//! DNC: closed forms, algebraic laws, a fluid-simulation check, WorkloadCompactor's equations
//! against the general algebra, and the network analysis on hand-checked networks.
//!
//! Float tolerance: results are compared with a relative tolerance of 1e-9 (`close`), except
//! against simulations (stated where used).

use proptest::prelude::*;
use tailbound_calculus::dnc::{
    backlog_bound, delay_bound, output, shaper_delay, wc_eq3_lhs, wc_eq7_lhs, wc_latency,
    wc_min_rp, wc_multi_stage_latency, wc_relaxed_latency, DncAnalysis, DncError, Envelope,
    ServiceCurve, ServicePiece, TokenBucketAt,
};
use tailbound_calculus::{bound, Bound, BoundOptions, CalculusError, Method};
use tailbound_model::{
    ArrivalCurve, Bucket, FlowModels, Network, NetworkBuilder, NewTenant, Percentile, RbCurve, Slo,
    Stage,
};

const TOL: f64 = 1e-9;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= TOL * a.abs().max(b.abs()).max(1.0)
}

fn tb(rate: f64, burst: f64) -> Bucket {
    Bucket { rate, burst }
}

fn arrival(rate: f64, burst: f64) -> Envelope {
    Envelope::token_bucket(tb(rate, burst)).unwrap()
}

fn rl(rate: f64, latency_s: f64) -> ServiceCurve {
    ServiceCurve::rate_latency(rate, latency_s).unwrap()
}

/// Delay of α through the leftover of a constant-rate queue C after `cross`; unstable → ∞
/// (test-only convenience for monotonicity comparisons).
fn leftover_delay(a: &Envelope, cross: &Envelope, capacity: f64) -> f64 {
    match ServiceCurve::constant_rate(capacity)
        .unwrap()
        .leftover(cross)
    {
        Ok(s) => delay_bound(a, &s).unwrap_or(f64::INFINITY),
        Err(DncError::Unstable { .. }) => f64::INFINITY,
        Err(e) => panic!("{e}"),
    }
}

// ---------------------------------------------------------------------------------------------
// closed forms

#[test]
fn token_bucket_through_rate_latency_is_t_plus_b_over_r() {
    for (r, b, big_r, t) in [
        (1.0, 2.0, 4.0, 0.5),
        (0.0, 3.0, 1.0, 0.0),
        (9.0, 1e6, 10.0, 1e-3),
    ] {
        let d = delay_bound(&arrival(r, b), &rl(big_r, t)).unwrap();
        assert!(close(d, t + b / big_r), "{d} vs {}", t + b / big_r);
        // output: b + r·T, same rate; backlog b + r·T
        let out = output(&arrival(r, b), &rl(big_r, t)).unwrap();
        assert!(close(out.burst(), b + r * t) && close(out.long_term_rate(), r));
        assert!(close(
            backlog_bound(&arrival(r, b), &rl(big_r, t)).unwrap(),
            b + r * t
        ));
    }
}

#[test]
fn two_hop_tandem_pays_the_burst_once() {
    let (r, b) = (2.0, 10.0);
    let (s1, s2) = (rl(8.0, 0.1), rl(5.0, 0.2));
    let e2e = s1.convolve(&s2);
    let once = delay_bound(&arrival(r, b), &e2e).unwrap();
    assert!(close(once, 0.1 + 0.2 + b / 5.0));
    // hop by hop: the second hop sees the burst grown by r·T1 and pays it again
    let hop1 = delay_bound(&arrival(r, b), &s1).unwrap();
    let out = output(&arrival(r, b), &s1).unwrap();
    let hop2 = delay_bound(&out, &s2).unwrap();
    assert!(close(
        hop1 + hop2,
        0.1 + b / 8.0 + 0.2 + (b + r * 0.1) / 5.0
    ));
    assert!(hop1 + hop2 > once + 1.0);
}

#[test]
fn unstable_configurations_are_typed_errors() {
    let s = rl(10.0, 0.1);
    assert!(matches!(
        s.leftover(&arrival(10.0, 0.0)),
        Err(DncError::Unstable { load, capacity }) if load == 10.0 && capacity == 10.0
    ));
    assert!(matches!(
        delay_bound(&arrival(11.0, 1.0), &s),
        Err(DncError::Unstable { .. })
    ));
    assert!(matches!(
        output(&arrival(11.0, 1.0), &s),
        Err(DncError::Unstable { .. })
    ));
    assert!(matches!(
        backlog_bound(&arrival(11.0, 1.0), &s),
        Err(DncError::Unstable { .. })
    ));
    assert!(matches!(
        shaper_delay(&arrival(11.0, 1.0), tb(10.0, 100.0)),
        Err(DncError::Unstable { .. })
    ));
}

#[test]
fn shaper_delay_of_an_rb_curve_at_its_own_vertex_is_zero() {
    // the tenant's arrival curve is the min of its r-b buckets: a bucket on the curve never
    // delays it, a smaller bucket at the same rate delays it by the missing burst / rate
    let rb = RbCurve::new(vec![[1.0, 100.0], [10.0, 40.0], [50.0, 10.0]]).unwrap();
    let a = Envelope::from(&rb.to_arrival());
    assert_eq!(shaper_delay(&a, tb(10.0, 40.0)).unwrap(), 0.0);
    assert!(close(shaper_delay(&a, tb(10.0, 30.0)).unwrap(), 1.0));
    // between vertices the curve's b(r) is the r-b curve's interpolation
    let b30 = rb.burst_at(30.0).unwrap();
    assert!(close(a.burst_at_rate(30.0).unwrap(), b30));
    assert!(close(shaper_delay(&a, tb(30.0, 0.0)).unwrap(), b30 / 30.0));
}

// ---------------------------------------------------------------------------------------------
// strategies

fn bucket() -> impl Strategy<Value = Bucket> {
    (0.0..50.0f64, 0.0..100.0f64).prop_map(|(rate, burst)| tb(rate, burst))
}

fn concave() -> impl Strategy<Value = Envelope> {
    prop::collection::vec(bucket(), 1..5).prop_map(|b| Envelope::from_buckets(&b).unwrap())
}

/// Convex services: convolutions of 1–3 rate-latency curves and one general piecewise curve.
fn convex() -> impl Strategy<Value = ServiceCurve> {
    (
        prop::collection::vec((1.0..200.0f64, 0.0..1.0f64), 1..4),
        prop::option::of((0.0..0.5f64, 1.0..20.0f64, 0.01..2.0f64, 1.0..10.0f64)),
    )
        .prop_map(|(rls, general)| {
            let mut s = rls
                .iter()
                .map(|&(r, t)| rl(r, t))
                .reduce(|a, b| a.convolve(&b))
                .unwrap();
            if let Some((t, r, d, gain)) = general {
                let g = ServiceCurve::new(
                    t,
                    &[ServicePiece {
                        rate: r,
                        duration_s: d,
                    }],
                    r * (1.0 + gain),
                )
                .unwrap();
                s = s.convolve(&g);
            }
            s
        })
}

fn sample_times() -> Vec<f64> {
    (0..200).map(|i| (i as f64 * 0.037).powf(1.5)).collect()
}

fn same_arrival(a: &Envelope, b: &Envelope) -> bool {
    sample_times().iter().all(|&t| close(a.at(t), b.at(t)))
        && close(a.long_term_rate(), b.long_term_rate())
}

fn same_service(a: &ServiceCurve, b: &ServiceCurve) -> bool {
    sample_times().iter().all(|&t| close(a.at(t), b.at(t)))
        && close(a.rate(), b.rate())
        && close(a.latency_s(), b.latency_s())
}

// ---------------------------------------------------------------------------------------------
// laws and reductions

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn aggregate_is_commutative_and_associative(a in concave(), b in concave(), c in concave()) {
        prop_assert!(same_arrival(&a.plus(&b), &b.plus(&a)));
        prop_assert!(same_arrival(&a.plus(&b).plus(&c), &a.plus(&b.plus(&c))));
        for t in sample_times() {
            prop_assert!(close(a.plus(&b).at(t), a.at(t) + b.at(t)));
        }
    }

    #[test]
    fn convolution_is_commutative_and_associative(a in convex(), b in convex(), c in convex()) {
        prop_assert!(same_service(&a.convolve(&b), &b.convolve(&a)));
        prop_assert!(same_service(&a.convolve(&b).convolve(&c), &a.convolve(&b.convolve(&c))));
        // a convolution of services is never above either (β ⊗ γ ≤ min(β, γ) for β(0) = 0)
        let ab = a.convolve(&b);
        for t in sample_times() {
            prop_assert!(ab.at(t) <= a.at(t).min(b.at(t)) * (1.0 + TOL) + TOL);
        }
    }

    #[test]
    fn convolution_of_rate_latencies_is_min_rate_sum_of_latencies(
        parts in prop::collection::vec((0.1..1e9f64, 0.0..10.0f64), 1..6)
    ) {
        let s = ServiceCurve::convolve_all(parts.iter().map(|&(r, t)| rl(r, t)).collect::<Vec<_>>().iter())
            .unwrap();
        let rate = parts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let latency: f64 = parts.iter().map(|p| p.1).sum();
        let got = s.as_rate_latency().unwrap();
        prop_assert!(close(got.rate, rate) && close(got.latency_s, latency));
    }

    #[test]
    fn priority_leftover_reduces_to_the_rate_latency_formula(
        big_r in 1.0..1e3f64,
        big_t in 0.0..1.0f64,
        high in prop::collection::vec((0.0..1.0f64, 0.0..100.0f64), 0..5),
    ) {
        // rates as fractions of R so that the leftover exists
        let n = high.len().max(1) as f64;
        let high: Vec<Bucket> =
            high.iter().map(|&(f, b)| tb(f * 0.99 * big_r / n, b)).collect();
        let cross = Envelope::sum(high.iter().map(|&b| Envelope::token_bucket(b).unwrap()).collect::<Vec<_>>().iter());
        let left = rl(big_r, big_t).leftover(&cross).unwrap();
        let (sr, sb): (f64, f64) = (high.iter().map(|b| b.rate).sum(), high.iter().map(|b| b.burst).sum());
        let r2 = big_r - sr;
        let t2 = big_t + (sb + sr * big_t) / r2;
        let got = left.as_rate_latency().unwrap();
        prop_assert!(close(got.rate, r2), "{} vs {r2}", got.rate);
        prop_assert!((got.latency_s - t2).abs() <= 1e-9 * t2.max(1.0), "{} vs {t2}", got.latency_s);
    }

    #[test]
    fn output_is_an_arrival_curve_of_the_departures(a in concave(), s in convex()) {
        prop_assume!(a.long_term_rate() <= s.rate());
        let out = output(&a, &s).unwrap();
        // α ⊘ β ≥ α (β(0) = 0) and ≥ α(t + T) (β = 0 on [0, T]); its burst is v(α, β)
        let v = backlog_bound(&a, &s).unwrap();
        prop_assert!(close(out.burst(), v), "{} vs {v}", out.burst());
        for t in sample_times() {
            prop_assert!(out.at(t) >= a.at(t + s.latency_s()) * (1.0 - TOL) - TOL);
        }
        prop_assert!(close(out.long_term_rate(), a.long_term_rate()));
    }

    #[test]
    fn delay_bound_is_monotone(
        own in prop::collection::vec(bucket(), 1..4),
        cross in prop::collection::vec(bucket(), 0..4),
        capacity in 1.0..500.0f64,
        extra in 0.0..20.0f64,
    ) {
        let a = Envelope::from_buckets(&own).unwrap();
        let x = Envelope::from_buckets(&cross).unwrap_or_else(|_| Envelope::zero());
        let base = leftover_delay(&a, &x, capacity);
        let more_burst: Vec<_> = own.iter().map(|b| tb(b.rate, b.burst + extra)).collect();
        let more_rate: Vec<_> = own.iter().map(|b| tb(b.rate + extra, b.burst)).collect();
        let more_cross = x.plus(&Envelope::token_bucket(tb(extra, extra)).unwrap());
        let ge = |hi: f64, lo: f64| hi >= lo * (1.0 - TOL) - TOL;
        prop_assert!(ge(leftover_delay(&Envelope::from_buckets(&more_burst).unwrap(), &x, capacity), base));
        prop_assert!(ge(leftover_delay(&Envelope::from_buckets(&more_rate).unwrap(), &x, capacity), base));
        prop_assert!(ge(leftover_delay(&a, &more_cross, capacity), base));
        prop_assert!(ge(base, leftover_delay(&a, &x, capacity + extra)));
    }
}

// ---------------------------------------------------------------------------------------------
// the bound is never below a fluid simulation

/// Work arriving as impulses `(time [s], work)`, sorted by time.
type Impulses = Vec<(f64, f64)>;

/// A source that conforms to `bucket`: gaps and fractions of the available tokens.
fn conforming(bucket: Bucket, steps: &[(f64, f64)]) -> Impulses {
    let (mut tokens, mut t) = (bucket.burst, 0.0);
    let mut out = Vec::new();
    for &(gap, frac) in steps {
        t += gap;
        tokens = (tokens + bucket.rate * gap).min(bucket.burst);
        let w = tokens * frac;
        tokens -= w;
        if w > 0.0 {
            out.push((t, w));
        }
    }
    out
}

/// Work of `a` arrived strictly before `t` (`strict`) or up to and including `t`.
fn cumulative(a: &[(f64, f64)], t: f64, strict: bool) -> f64 {
    a.iter()
        .filter(|&&(s, _)| if strict { s < t } else { s <= t })
        .map(|&(_, w)| w)
        .sum()
}

/// Departures by time t of a fluid FIFO (or any work-conserving) server of rate c:
/// D(t) = min(A(t−), min_{τ_i ≤ t} [A(τ_i−) + c·(t − τ_i)]).
fn departures(a: &[(f64, f64)], c: f64, t: f64) -> f64 {
    a.iter()
        .filter(|&&(s, _)| s <= t)
        .map(|&(s, _)| cumulative(a, s, true) + c * (t - s))
        .fold(cumulative(a, t, true), f64::min)
}

/// Worst delay of the tagged impulses when `served(t)` is the tagged work served by time t:
/// for each tagged impulse, the least d with served(s + d) ≥ work arrived up to s (bisection).
fn worst_delay(tagged: &[(f64, f64)], served: impl Fn(f64) -> f64) -> f64 {
    let mut worst: f64 = 0.0;
    for &(s, _) in tagged {
        let target = cumulative(tagged, s, false) * (1.0 - 1e-12);
        let mut hi = 1e-3;
        while served(s + hi) < target {
            hi *= 2.0;
        }
        let mut lo = 0.0;
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if served(s + mid) >= target {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        worst = worst.max(hi);
    }
    worst
}

fn merged(a: &[(f64, f64)], b: &[(f64, f64)]) -> Impulses {
    let mut m: Impulses = a.iter().chain(b).copied().collect();
    m.sort_by(|x, y| x.0.total_cmp(&y.0));
    m
}

fn steps() -> impl Strategy<Value = Vec<(f64, f64)>> {
    prop::collection::vec(
        (0.0..0.5f64, prop_oneof![Just(1.0), 0.0..1.0f64, Just(0.0)]),
        1..25,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn bound_is_never_below_a_fluid_simulation(
        own in (1.0..20.0f64, 0.0..30.0f64),
        high in (0.0..20.0f64, 0.0..30.0f64),
        capacity in 10.0..60.0f64,
        own_steps in steps(),
        high_steps in steps(),
    ) {
        let (own, high) = (tb(own.0, own.1), tb(high.0, high.1));
        prop_assume!(own.rate + high.rate < capacity);
        let tagged = conforming(own, &own_steps);
        let cross = conforming(high, &high_steps);
        prop_assume!(!tagged.is_empty());
        let bound = leftover_delay(
            &Envelope::token_bucket(own).unwrap(),
            &Envelope::token_bucket(high).unwrap(),
            capacity,
        );
        let all = merged(&tagged, &cross);
        // static priority, cross traffic first: tagged service = total − cross departures
        let prio = worst_delay(&tagged, |t| departures(&all, capacity, t) - departures(&cross, capacity, t));
        prop_assert!(bound >= prio - 1e-9, "priority: bound {bound} < simulated {prio}");
        // one FIFO level: tagged bits wait for everything that arrived up to them
        let fifo = worst_delay(&tagged, |t| {
            let d = departures(&all, capacity, t);
            // served tagged work: departures beyond the cross work that is ahead in FIFO order
            let mut tag = 0.0;
            let mut left = d;
            for &(s, w) in &all {
                let take = left.min(w);
                left -= take;
                if tagged.contains(&(s, w)) {
                    tag += take;
                }
            }
            tag
        });
        prop_assert!(bound >= fifo - 1e-9, "fifo: bound {bound} < simulated {fifo}");
    }
}

#[test]
fn bound_is_tight_for_greedy_token_buckets() {
    // both sources dump their bucket at 0, then send at their rate (impulses every 1 ms)
    let (own, high, c) = (tb(3.0, 6.0), tb(4.0, 8.0), 10.0);
    let greedy = |b: Bucket| -> Impulses {
        let mut v = vec![(0.0, b.burst)];
        v.extend((1..5000).map(|i| (i as f64 * 1e-3, b.rate * 1e-3)));
        v
    };
    let (tagged, cross) = (greedy(own), greedy(high));
    let all = merged(&tagged, &cross);
    let sim = worst_delay(&tagged[..1], |t| {
        departures(&all, c, t) - departures(&cross, c, t)
    });
    let bound = leftover_delay(&arrival(3.0, 6.0), &arrival(4.0, 8.0), c);
    // (b_H + b) / (C − r_H) = 14 / 6
    assert!(close(bound, 14.0 / 6.0));
    assert!(
        sim <= bound + 1e-9 && sim >= bound - 2e-3,
        "{sim} vs {bound}"
    );
}

// ---------------------------------------------------------------------------------------------
// WorkloadCompactor's equations against the general algebra

fn stage() -> impl Strategy<Value = Vec<TokenBucketAt>> {
    prop::collection::vec((0.0..1.0f64, 0.0..0.2f64, 0u32..4), 1..8).prop_map(|v| {
        let n = v.len() as f64;
        v.into_iter()
            .map(|(r, burst, priority)| TokenBucketAt {
                rate: r * 0.98 / n,
                burst,
                priority,
            })
            .collect()
    })
}

/// Eq. (1) by the algebra: the level's FIFO aggregate through the leftover of the higher levels
/// at a queue of normalised rate 1.
fn eq1_by_algebra(stage: &[TokenBucketAt], level: u32) -> f64 {
    let sum = |pick: &dyn Fn(u32) -> bool| {
        Envelope::sum(
            stage
                .iter()
                .filter(|j| pick(j.priority))
                .map(|j| arrival(j.rate, j.burst))
                .collect::<Vec<_>>()
                .iter(),
        )
    };
    leftover_delay(&sum(&|p| p == level), &sum(&|p| p < level), 1.0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn eq1_agrees_with_the_algebra(stage in stage()) {
        for level in 0..4 {
            if !stage.iter().any(|j| j.priority == level) {
                continue;
            }
            let eq1 = wc_latency(&stage, level).unwrap();
            let alg = eq1_by_algebra(&stage, level);
            prop_assert!(close(eq1, alg), "level {level}: eq1 {eq1} vs algebra {alg}");
            // eq. (3) is eq. (1) ≤ SLO in linear form
            for slo in [0.05, 0.2, 1.0] {
                prop_assert_eq!(wc_eq3_lhs(&stage, level, slo).unwrap() <= slo, eq1 <= slo * (1.0 + 1e-12));
            }
        }
    }

    #[test]
    fn eq5_to_eq7_agree_with_the_algebra(a in stage(), b in stage(), c in stage(), own in 0.0..0.1f64) {
        for level in 0..4 {
            // the workload whose latency is bounded crosses all three stages at `level`
            let with_own = |s: &[TokenBucketAt]| {
                let mut s = s.to_vec();
                s.push(TokenBucketAt { rate: 0.0, burst: own, priority: level });
                s
            };
            let (a, b, c) = (with_own(&a), with_own(&b), with_own(&c));
            let stages: [&[TokenBucketAt]; 3] = [&a, &b, &c];
            let eq5 = wc_multi_stage_latency(&stages, level).unwrap();
            let alg: f64 = stages.iter().map(|s| eq1_by_algebra(s, level)).sum();
            prop_assert!(close(eq5, alg), "eq5 {eq5} vs {alg}");
            let rp = wc_min_rp(&stages, level).unwrap();
            let eq6 = wc_relaxed_latency(&stages, level, rp).unwrap();
            prop_assert!(eq6 >= eq5 * (1.0 - TOL));
            for slo in [0.05, 0.2, 1.0] {
                let lhs = wc_eq7_lhs(&stages, level, rp, slo).unwrap();
                prop_assert_eq!(lhs <= slo, eq6 <= slo * (1.0 + 1e-12));
            }
        }
    }

    #[test]
    fn eq1_matches_the_network_analysis_with_one_workload_per_level(
        buckets in prop::collection::vec((0.0..1.0f64, 0.0..0.2f64), 1..6),
        capacity in 1.0..1e9f64,
    ) {
        let n = buckets.len() as f64;
        let flows: Vec<(Bucket, u32)> = buckets
            .iter()
            .enumerate()
            .map(|(i, &(r, b))| (tb(r * 0.98 / n * capacity, b * capacity), i as u32))
            .collect();
        let net = single_queue(capacity, &flows);
        let got = bound(&net, Method::Dnc, &(0..flows.len()).collect::<Vec<_>>(), &BoundOptions::default()).unwrap();
        let stage: Vec<TokenBucketAt> = flows
            .iter()
            .map(|&(b, p)| TokenBucketAt::normalised(b, capacity, p).unwrap())
            .collect();
        for (i, t) in got.iter().enumerate() {
            let eq1 = wc_latency(&stage, i as u32).unwrap();
            let s = t.total.seconds().unwrap();
            prop_assert!((s - eq1).abs() <= 1e-9 * eq1.max(1e-9), "tenant {i}: {s} vs {eq1}");
        }
    }
}

#[test]
fn same_level_blind_multiplexing_is_above_eq1() {
    // two workloads at one level: eq. (1) assumes FIFO (the aggregate's delay), the network
    // analysis blind multiplexing, which also charges the other's rate: b_1+b_2 over 1 − r_2
    let flows = [(tb(0.3, 0.1), 0), (tb(0.2, 0.05), 0)];
    let net = single_queue(1.0, &flows);
    let got = bound(&net, Method::Dnc, &[0, 1], &BoundOptions::default()).unwrap();
    let stage: Vec<TokenBucketAt> = flows
        .iter()
        .map(|&(b, p)| TokenBucketAt::normalised(b, 1.0, p).unwrap())
        .collect();
    let eq1 = wc_latency(&stage, 0).unwrap();
    assert!(close(eq1, 0.15));
    assert!(close(got[0].total.seconds().unwrap(), 0.15 / 0.8));
    assert!(close(got[1].total.seconds().unwrap(), 0.15 / 0.7));
}

// ---------------------------------------------------------------------------------------------
// network analysis

fn curve(rate: f64, burst: f64) -> ArrivalCurve {
    ArrivalCurve::new(vec![[0.0, burst]], rate).unwrap()
}

struct Builder(NetworkBuilder);

impl Builder {
    fn new(queues: &[(&str, f64)]) -> Builder {
        let mut b = NetworkBuilder::new();
        for &(name, rate) in queues {
            b.queue(name, rate);
        }
        Builder(b)
    }

    fn build(self) -> Network {
        self.0.build().unwrap()
    }

    fn queue(&self, name: &str) -> usize {
        let net = self.0.network();
        net.queues.iter().position(|q| q.name == name).unwrap()
    }

    /// A tenant at `level` with flows `(name, path, (rate, burst))`.
    fn tenant(mut self, name: &str, level: u32, flows: &[(&str, &[&str], (f64, f64))]) -> Builder {
        let tenant = self.0.tenant(NewTenant {
            priority: Some(level),
            ..NewTenant::new(name, Slo::new(2.0, 99.9).unwrap())
        });
        for &(fname, path, (rate, burst)) in flows {
            let path = path.iter().map(|q| self.queue(q)).collect();
            let models = FlowModels {
                mmpp: None,
                arrival: Some(curve(rate, burst)),
            };
            self.0.flow_on(tenant, fname, Stage::NetIn, path, models);
        }
        self
    }
}

fn single_queue(capacity: f64, flows: &[(Bucket, u32)]) -> Network {
    let mut b = Builder::new(&[("q", capacity)]);
    for (i, &(bucket, level)) in flows.iter().enumerate() {
        let name = format!("t{i}");
        b = b.tenant(
            &name,
            level,
            &[(&name, &["q"], (bucket.rate, bucket.burst))],
        );
    }
    b.build()
}

fn seconds(b: &Bound) -> f64 {
    b.seconds().unwrap_or_else(|| panic!("unbounded: {b:?}"))
}

#[test]
fn two_tenants_two_hops_same_level_by_hand() {
    // a: (r 2, b 4), b: (r 3, b 6), both on c-out → s-in (rate 10), one level.
    // hop 1: a's leftover 10t − (6 + 3t) = 7·(t − 6/7); b's 10t − (4 + 2t) = 8·(t − 1/2).
    // at hop 2, b arrives as 6 + 3·½ + 3t = 7.5 + 3t, a as 4 + 2·6/7 + 2t = 40/7 + 2t;
    // a's leftover 7·(t − 7.5/7), b's 8·(t − 5/7).
    // a: 7·(t − 13.5/7) end to end → 13.5/7 + 4/7 = 2.5;  b: 8·(t − ½ − 5/7) → 1.25 + 5/7.
    let net = Builder::new(&[("c-out", 10.0), ("s-in", 10.0)])
        .tenant("a", 0, &[("a-req", &["c-out", "s-in"], (2.0, 4.0))])
        .tenant("b", 0, &[("b-req", &["c-out", "s-in"], (3.0, 6.0))])
        .build();
    let got = bound(&net, Method::Dnc, &[0, 1], &BoundOptions::default()).unwrap();
    assert!(close(seconds(&got[0].total), 2.5), "{:?}", got[0]);
    assert!(
        close(seconds(&got[1].total), 1.25 + 5.0 / 7.0),
        "{:?}",
        got[1]
    );
    assert!(got[1].meets_slo && !got[0].meets_slo); // SLO 2 s
    assert_eq!(got[0].flows[0].epsilon, 0.0);

    let prio = net.priorities();
    let mut an = DncAnalysis::new(&net, &prio).unwrap();
    let b_at_2 = an.arrival_at(1, 1).unwrap().unwrap();
    assert!(close(b_at_2.burst(), 7.5) && close(b_at_2.long_term_rate(), 3.0));
    let a_left_2 = an
        .leftover_at(0, 1)
        .unwrap()
        .unwrap()
        .as_rate_latency()
        .unwrap();
    assert!(close(a_left_2.rate, 7.0) && close(a_left_2.latency_s, 7.5 / 7.0));
    // per-hop sum: 10/7 + (7.5/7 + (40/7)/7), above the pay-once bound
    let per_hop = seconds(&an.flow_bound_per_hop_sum(0).unwrap());
    assert!(close(per_hop, 10.0 / 7.0 + 7.5 / 7.0 + 40.0 / 49.0));
    assert!(per_hop > 2.5);
}

#[test]
fn two_tenants_two_hops_with_priorities_by_hand() {
    // a at level 0 sees no one: 4/10 + 1/10. b at level 1: request leftover 8·(t − ½) at both
    // hops (a leaves hop 1 unchanged: 4 + 2t through 10t), so 1 + 6/8; response: a's 1 + t
    // leaves 9·(t − 1/9) at each hop, 2/9 + 2/9.
    let net = Builder::new(&[
        ("c-out", 10.0),
        ("s-in", 10.0),
        ("s-out", 10.0),
        ("c-in", 10.0),
    ])
    .tenant(
        "a",
        0,
        &[
            ("a-req", &["c-out", "s-in"], (2.0, 4.0)),
            ("a-resp", &["s-out", "c-in"], (1.0, 1.0)),
        ],
    )
    .tenant(
        "b",
        1,
        &[
            ("b-req", &["c-out", "s-in"], (3.0, 6.0)),
            ("b-resp", &["s-out", "c-in"], (1.0, 2.0)),
        ],
    )
    .build();
    let got = bound(&net, Method::Dnc, &[0, 1], &BoundOptions::default()).unwrap();
    assert_eq!((got[0].priority, got[1].priority), (0, 1));
    assert!(close(seconds(&got[0].flows[0].bound), 0.4));
    assert!(close(seconds(&got[0].total), 0.5));
    assert!(close(seconds(&got[1].flows[0].bound), 1.75));
    assert!(close(seconds(&got[1].flows[1].bound), 4.0 / 9.0));
    assert!(close(seconds(&got[1].total), 1.75 + 4.0 / 9.0));
    // worst case: the percentile override changes nothing but the SLO reported
    let opts = BoundOptions {
        percentile: Some(Percentile::new(50.0).unwrap()),
        ..BoundOptions::default()
    };
    let again = bound(&net, Method::Dnc, &[1], &opts).unwrap();
    assert_eq!(again[0].total, got[1].total);
}

#[test]
fn overloaded_queue_is_unbounded_and_misses_the_slo() {
    // level 0: a (6/s) and b (5/s) compete blindly on "q" (10/s): each leaves the other less
    // than its rate. c (level 1) on its own queue is unaffected; d (level 2) on "q2" meets b's
    // output, which has no bound, so d is unbounded too, naming "q".
    let net = Builder::new(&[("q", 10.0), ("q2", 10.0), ("q3", 10.0)])
        .tenant("a", 0, &[("a", &["q"], (6.0, 1.0))])
        .tenant("b", 0, &[("b", &["q", "q2"], (5.0, 1.0))])
        .tenant("c", 1, &[("c", &["q3"], (1.0, 1.0))])
        .tenant("d", 2, &[("d", &["q2"], (1.0, 1.0))])
        .build();
    let got = bound(&net, Method::Dnc, &[0, 1, 2, 3], &BoundOptions::default()).unwrap();
    for t in [&got[0], &got[1], &got[3]] {
        assert!(
            matches!(&t.total, Bound::Unbounded(r) if r.contains("\"q\"")),
            "{t:?}"
        );
        assert!(!t.meets_slo);
    }
    assert!(close(seconds(&got[2].total), 0.1));
    assert!(got[2].meets_slo);
    // a queue whose higher-priority load equals its capacity leaves nothing
    let net = single_queue(10.0, &[(tb(10.0, 0.0), 0), (tb(0.0, 1.0), 1)]);
    let got = bound(&net, Method::Dnc, &[0, 1], &BoundOptions::default()).unwrap();
    assert!(close(seconds(&got[0].total), 0.0));
    assert!(matches!(got[1].total, Bound::Unbounded(_)) && !got[1].meets_slo);
}

#[test]
fn missing_arrival_curve_is_a_missing_model_error() {
    let mut net = single_queue(10.0, &[(tb(1.0, 1.0), 0), (tb(1.0, 1.0), 1)]);
    net.flows[1].arrival = None;
    let err = bound(&net, Method::Dnc, &[0], &BoundOptions::default()).unwrap_err();
    assert!(
        matches!(&err, CalculusError::MissingModel { flow, model: "arrival curve", method: "dnc" } if flow == "t1"),
        "{err}"
    );
}

#[test]
fn cyclic_dependency_is_invalid() {
    let net = Builder::new(&[("q0", 10.0), ("q1", 10.0)])
        .tenant("a", 0, &[("a", &["q0", "q1"], (1.0, 1.0))])
        .tenant("b", 0, &[("b", &["q1", "q0"], (1.0, 1.0))])
        .build();
    let err = bound(&net, Method::Dnc, &[0], &BoundOptions::default()).unwrap_err();
    assert!(
        matches!(&err, CalculusError::Invalid(m) if m.contains("cyclic")),
        "{err}"
    );
    // at different levels the dependency is one-way and fine
    let net = Builder::new(&[("q0", 10.0), ("q1", 10.0)])
        .tenant("a", 0, &[("a", &["q0", "q1"], (1.0, 1.0))])
        .tenant("b", 1, &[("b", &["q1", "q0"], (1.0, 1.0))])
        .build();
    assert!(bound(&net, Method::Dnc, &[0, 1], &BoundOptions::default()).is_ok());
}

#[test]
fn rb_curve_arrivals_go_through_the_analysis() {
    // a concave (two-bucket) flow alone on a queue: h(α, C·t) = max over vertices of α(t)/C − t
    // α = min(10 + 20t, 50 + t); through 15·t the worst delay is at the knee t = 40/19
    let rb = RbCurve::new(vec![[1.0, 50.0], [20.0, 10.0]]).unwrap();
    let mut net = single_queue(15.0, &[(tb(0.0, 0.0), 0)]);
    net.flows[0].arrival = Some(rb.to_arrival());
    let got = bound(&net, Method::Dnc, &[0], &BoundOptions::default()).unwrap();
    let knee = 40.0 / 19.0;
    let at_knee = (10.0 + 20.0 * knee) / 15.0 - knee;
    assert!(at_knee > 10.0 / 15.0);
    assert!(close(seconds(&got[0].total), at_knee));
}

#[test]
fn pay_bursts_once_is_never_above_the_per_hop_sum() {
    let net = Builder::new(&[("h1", 10.0), ("h2", 7.0), ("h3", 12.0)])
        .tenant("a", 0, &[("a", &["h1", "h2", "h3"], (2.0, 4.0))])
        .tenant("b", 1, &[("b", &["h1", "h2"], (1.0, 3.0))])
        .tenant("c", 1, &[("c", &["h2", "h3"], (2.0, 2.0))])
        .tenant("d", 2, &[("d", &["h1", "h2", "h3"], (0.5, 1.0))])
        .build();
    let prio = net.priorities();
    let mut an = DncAnalysis::new(&net, &prio).unwrap();
    for f in 0..net.flows.len() {
        let once = seconds(&an.flow_bound(f).unwrap());
        let sum = seconds(&an.flow_bound_per_hop_sum(f).unwrap());
        assert!(once <= sum * (1.0 + TOL), "flow {f}: {once} > {sum}");
    }
}

// ---------------------------------------------------------------------------------------------
// the original WorkloadCompactor arrival curves on a testbed-sized network

/// A reference arrival curve: rows `x [s], y [bytes], slope [bytes/s]` (slope after x).
fn reference_curve(name: &str) -> ArrivalCurve {
    let path = tailbound_testdata::reference_dir()
        .join("workload-compactor/arrival-curves")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<[f64; 3]> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            [v[0], v[1], v[2]]
        })
        .collect();
    // the original's vertices are not always sorted or concave (repeated x, rounding): take
    // its lines (slope after each vertex) and their lower envelope
    let lines: Vec<Bucket> = rows.iter().map(|r| tb(r[2], r[1] - r[2] * r[0])).collect();
    Envelope::from_buckets(&lines).unwrap().to_model().unwrap()
}

/// `n` tenants over 12 clients and 6 servers on 1 Gb/s links, request and response flows,
/// SLOs from {10, 20, 50, 100} ms (priorities by SLO rank).
fn testbed(n: usize) -> Network {
    let dir = tailbound_testdata::reference_dir().join("workload-compactor/arrival-curves");
    let mut traces: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".networkIn.txt"))
        .map(|n| n.trim_end_matches(".networkIn.txt").to_string())
        .collect();
    traces.sort();
    let mut b = NetworkBuilder::new();
    for i in 0..12 {
        b.host(format!("c{i}"), 125e6, None);
    }
    for i in 0..6 {
        b.host(format!("s{i}"), 125e6, None);
    }
    for i in 0..n {
        let trace = &traces[i % traces.len()];
        let slo = Slo::new([0.01, 0.02, 0.05, 0.1][i % 4], 99.9).unwrap();
        let t = b.tenant(NewTenant::new(format!("t{i}"), slo).between(i % 12, 12 + i % 6));
        for (stage, file) in [(Stage::NetIn, "networkIn"), (Stage::NetOut, "networkOut")] {
            let models = FlowModels {
                mmpp: None,
                arrival: Some(reference_curve(&format!("{trace}.{file}.txt"))),
            };
            b.flow(t, stage, models).unwrap();
        }
    }
    b.build().unwrap()
}

#[test]
fn reference_curves_on_a_testbed_sized_network() {
    let net = testbed(84);
    let all: Vec<usize> = (0..net.tenants.len()).collect();
    let got = bound(&net, Method::Dnc, &all, &BoundOptions::default()).unwrap();
    let prio = net.priorities();
    let mut an = DncAnalysis::new(&net, &prio).unwrap();
    for t in &got {
        // reference curves are flat at the trace's total work: every bound is finite
        let total = seconds(&t.total);
        assert!(total > 0.0, "{t:?}");
        // paying bursts once is never above the per-hop sum
        for f in &t.flows {
            let per_hop = seconds(&an.flow_bound_per_hop_sum(f.flow).unwrap());
            assert!(seconds(&f.bound) <= per_hop * (1.0 + TOL));
        }
    }
    // doubling the bursts of the lowest level (3) leaves every higher level's bound unchanged
    // and never lowers its own
    let mut heavier = net.clone();
    for t in heavier.tenants.iter().filter(|t| t.slo.latency_s == 0.1) {
        for &f in &t.flows {
            let a = Envelope::from(heavier.flows[f].arrival.as_ref().unwrap());
            let doubled: Vec<Bucket> = a
                .buckets()
                .iter()
                .map(|b| tb(b.rate, 2.0 * b.burst))
                .collect();
            heavier.flows[f].arrival = Some(
                Envelope::from_buckets(&doubled)
                    .unwrap()
                    .to_model()
                    .unwrap(),
            );
        }
    }
    let again = bound(&heavier, Method::Dnc, &all, &BoundOptions::default()).unwrap();
    for (before, after) in got.iter().zip(&again) {
        let (b, a) = (seconds(&before.total), seconds(&after.total));
        if before.priority < 3 {
            assert_eq!(a, b, "{}", before.name);
        } else {
            assert!(a >= b, "{}: {a} < {b}", before.name);
        }
    }
}
