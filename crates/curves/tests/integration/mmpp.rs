//! MMPP fits: synthetic traces with known structure, regressions of the original's faults,
//! band construction, and every production trace at every stage.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tailbound_curves::mmpp::{
    count_bands, fit_mmpp, interval_counts, Bands, FitError, MmppFitOptions, SizeKind, StateRate,
};
use tailbound_curves::{stage_work, NetworkCost, StorageProfile, WorkFunction};
use tailbound_model::{Mmpp, Op, Request, SizeModel, Stage};

const NS: f64 = 1e9;

fn req(t_s: f64, size_bytes: u64, op: Op) -> Request {
    Request {
        arrival_ns: (t_s * NS).round() as u64,
        size_bytes,
        op,
    }
}

/// Requests spread evenly over 1 s intervals, `counts[m]` in interval m, starting at `t0_s`.
fn trace_with_counts(t0_s: f64, counts: &[u64]) -> Vec<Request> {
    let mut v = Vec::new();
    for (m, &c) in counts.iter().enumerate() {
        for k in 0..c {
            v.push(req(
                t0_s + m as f64 + k as f64 / c as f64,
                4096,
                Op::DiskRead,
            ));
        }
    }
    v
}

/// Alternating phases of `phase_s` seconds at `low` and `high` requests/s (Poisson within),
/// `cycles` times, low first; a request at t = 0 so that counting intervals align with phases.
/// Sizes are 512 B, 4 KiB or 64 KiB, reads and writes.
fn two_rate_trace(seed: u64, low: f64, high: f64, phase_s: f64, cycles: usize) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let size = |rng: &mut ChaCha8Rng| {
        let s = [512, 4096, 65536][rng.gen_range(0..3)];
        let op = if rng.gen_bool(0.7) {
            Op::DiskRead
        } else {
            Op::DiskWrite
        };
        (s, op)
    };
    let (s, op) = size(&mut rng);
    let mut v = vec![req(0.0, s, op)];
    for phase in 0..2 * cycles {
        let rate = if phase % 2 == 0 { low } else { high };
        let (start, end) = (phase as f64 * phase_s, (phase + 1) as f64 * phase_s);
        let mut t = start;
        loop {
            let u: f64 = rng.gen();
            t += -(1.0 - u).ln() / rate;
            if t >= end {
                break;
            }
            let (s, op) = size(&mut rng);
            v.push(req(t, s, op));
        }
    }
    v
}

fn total_work(reqs: &[Request], w: &dyn WorkFunction) -> f64 {
    reqs.iter().map(|r| w.work(r)).sum()
}

fn occupancy(m: &Mmpp) -> Vec<f64> {
    let n: u64 = m.states.iter().map(|s| s.intervals).sum();
    m.states
        .iter()
        .map(|s| s.intervals as f64 / n as f64)
        .collect()
}

/// Per-step probability of leaving the set of states `group`, weighted by occupancy.
fn group_exit_prob(m: &Mmpp, group: &[usize]) -> f64 {
    let pi = occupancy(m);
    let inside: f64 = group.iter().map(|&i| pi[i]).sum();
    let out: f64 = group
        .iter()
        .map(|&i| {
            let leave: f64 = (0..m.states.len())
                .filter(|j| !group.contains(j))
                .map(|j| m.transition[i][j])
                .sum();
            pi[i] * leave
        })
        .sum();
    out / inside
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

fn check_bands(b: &Bands, min: u64, max: u64, max_states: usize) {
    assert!(!b.bands.is_empty() && b.bands.len() <= max_states, "{b:?}");
    assert_eq!(b.bands[b.bands.len() - 1].upper, max as f64, "{b:?}");
    assert!(
        b.bands[0].lower <= min as f64 && b.bands[0].lower >= 0.0,
        "{b:?}"
    );
    for w in b.bands.windows(2) {
        assert_eq!(w[0].upper, w[1].lower, "bands not contiguous: {b:?}");
        assert!(w[0].centre < w[1].centre);
    }
    for x in &b.bands {
        assert!(x.lower <= x.centre && x.centre <= x.upper, "{x:?}");
        assert!(x.lower.is_finite() && x.upper.is_finite() && x.centre.is_finite());
    }
}

fn check_fit(m: &Mmpp, reqs: &[Request], w: &dyn WorkFunction, opts: &MmppFitOptions) {
    m.validate().expect("fit validates");
    assert!(m.states.len() <= opts.max_states);
    for (i, row) in m.transition.iter().enumerate() {
        let sum: f64 = row.iter().sum();
        assert!((sum - 1.0).abs() <= 1e-12, "row {i} sums to {sum}");
    }
    for (i, s) in m.states.iter().enumerate() {
        assert!(s.intervals > 0, "state {i} has no intervals");
        assert!(s.rate_per_s.is_finite() && s.rate_per_s >= 0.0);
        assert!(s.work.is_finite() && s.sizes.mean().is_finite());
        match &s.sizes {
            SizeModel::Exponential { .. } => assert_eq!(opts.sizes, SizeKind::Exponential),
            SizeModel::Empirical { atoms } => {
                assert_eq!(opts.sizes, SizeKind::Empirical);
                let p: f64 = atoms.iter().map(|a| a[1]).sum();
                assert!((p - 1.0).abs() < 1e-9, "state {i} probabilities sum to {p}");
            }
        }
    }
    let counts = interval_counts(reqs, opts.interval_s).unwrap();
    let intervals: u64 = m.states.iter().map(|s| s.intervals).sum();
    assert_eq!(intervals, counts.len() as u64);
    let requests: u64 = m.states.iter().map(|s| s.requests).sum();
    assert_eq!(requests, reqs.len() as u64);
    let work: f64 = m.states.iter().map(|s| s.work).sum();
    assert!(rel(work, total_work(reqs, w)) < 1e-9);
}

/// 20 cycles of 50 s at 20 requests/s and 50 s at 400 requests/s.
fn two_rate() -> Vec<Request> {
    two_rate_trace(7, 20.0, 400.0, 50.0, 20)
}

#[test]
fn two_rate_trace_fits_its_two_levels() {
    let reqs = two_rate();
    let w = &NetworkCost::REQUEST_DIRECTION;
    let span_s = 2000.0;
    let actual = total_work(&reqs, w) / span_s;
    let opts = MmppFitOptions {
        state_rate: StateRate::Observed,
        ..MmppFitOptions::default()
    };
    let m = fit_mmpp(&reqs, w, &opts).unwrap();
    check_fit(&m, &reqs, w, &opts);
    assert_eq!(interval_counts(&reqs, 1.0).unwrap().len(), 2000);

    // Every state is near one level: Poisson noise at 20 or 400 (±5σ), nothing in between.
    let (low, high): (Vec<usize>, Vec<usize>) =
        (0..m.states.len()).partition(|&i| m.states[i].rate_per_s < 100.0);
    assert!(!low.is_empty() && !high.is_empty(), "{m:#?}");
    for &i in &low {
        let r = m.states[i].rate_per_s;
        assert!((20.0 - 5.0 * 20f64.sqrt()..=20.0 + 5.0 * 20f64.sqrt()).contains(&r));
    }
    for &i in &high {
        let r = m.states[i].rate_per_s;
        assert!((300.0..=500.0).contains(&r), "state {i} rate {r}");
    }
    // Each level holds half the time, at its rate.
    let pi = occupancy(&m);
    let level = |g: &[usize]| {
        let share: f64 = g.iter().map(|&i| pi[i]).sum();
        let rate = g
            .iter()
            .map(|&i| pi[i] * m.states[i].rate_per_s)
            .sum::<f64>()
            / share;
        (share, rate)
    };
    let ((low_share, low_rate), (high_share, high_rate)) = (level(&low), level(&high));
    assert!((low_share - 0.5).abs() < 1e-9 && (high_share - 0.5).abs() < 1e-9);
    assert!(rel(low_rate, 20.0) < 0.05, "low level {low_rate}");
    assert!(rel(high_rate, 400.0) < 0.02, "high level {high_rate}");
    // Dwell per level ≈ 50 s: the chain leaves a level with probability step/50 per step.
    let expect = opts.step_s / 50.0;
    for g in [&low, &high] {
        let p = group_exit_prob(&m, g);
        assert!(rel(p, expect) < 0.1, "exit probability {p}, want {expect}");
    }
    // Observed rates reproduce the trace's mean work rate.
    assert!(rel(m.mean_work_per_s(), actual) < 0.01);

    // Band-centre rates (the original) approximate it.
    let centre = fit_mmpp(&reqs, w, &MmppFitOptions::default()).unwrap();
    check_fit(&centre, &reqs, w, &MmppFitOptions::default());
    assert!(
        rel(centre.mean_work_per_s(), actual) < 0.05,
        "band centres: {} vs {actual}",
        centre.mean_work_per_s()
    );
}

#[test]
fn two_rate_trace_in_two_states_dwells_fifty_seconds() {
    let reqs = two_rate();
    let w = &NetworkCost::RESPONSE_DIRECTION;
    for sizes in [SizeKind::Exponential, SizeKind::Empirical] {
        let opts = MmppFitOptions {
            max_states: 2,
            sizes,
            state_rate: StateRate::Observed,
            ..MmppFitOptions::default()
        };
        let m = fit_mmpp(&reqs, w, &opts).unwrap();
        check_fit(&m, &reqs, w, &opts);
        assert_eq!(m.states.len(), 2, "{m:#?}");
        assert!(rel(m.states[0].rate_per_s, 20.0) < 0.05);
        assert!(rel(m.states[1].rate_per_s, 400.0) < 0.02);
        assert_eq!(m.states[0].intervals, 1000);
        assert_eq!(m.states[1].intervals, 1000);
        let expect = opts.step_s / 50.0;
        assert!(rel(m.transition[0][1], expect) < 0.1, "{:?}", m.transition);
        assert!(rel(m.transition[1][0], expect) < 0.1, "{:?}", m.transition);
        assert!(rel(m.mean_work_per_s(), total_work(&reqs, w) / 2000.0) < 0.01);
    }
}

/// The original counted intervals from t = 0, so a trace starting late got a state for the
/// empty lead-in and transitions out of it.
#[test]
fn intervals_count_from_first_request() {
    let reqs = trace_with_counts(1000.0, &[10; 100]);
    assert_eq!(interval_counts(&reqs, 1.0).unwrap(), vec![10; 100]);
    let w = &NetworkCost::REQUEST_DIRECTION;
    for state_rate in [StateRate::BandCentre, StateRate::Observed] {
        let opts = MmppFitOptions {
            state_rate,
            ..MmppFitOptions::default()
        };
        let m = fit_mmpp(&reqs, w, &opts).unwrap();
        check_fit(&m, &reqs, w, &opts);
        assert_eq!(m.states.len(), 1, "{m:#?}");
        assert_eq!(m.states[0].intervals, 100);
        assert_eq!(m.transition, vec![vec![1.0]]);
    }
}

/// The original kept every band as a state, including bands no interval fell in.
#[test]
fn no_state_without_samples() {
    let counts: Vec<u64> = (0..20)
        .map(|i| if i % 2 == 0 { 1 } else { 10_000 })
        .collect();
    let reqs = trace_with_counts(0.0, &counts);
    let w = &NetworkCost::REQUEST_DIRECTION;
    let opts = MmppFitOptions::default();
    let m = fit_mmpp(&reqs, w, &opts).unwrap();
    check_fit(&m, &reqs, w, &opts);
    assert_eq!(m.states.len(), 2, "{m:#?}");
    assert!(m.states.iter().all(|s| s.intervals == 10 && s.requests > 0));
    // Alternating every interval: leave at every interval, i.e. with probability step/interval.
    assert!(rel(m.transition[0][1], 1e-5) < 1e-12);
    assert!(rel(m.transition[1][0], 1e-5) < 1e-12);
}

#[test]
fn bands_are_contiguous_from_the_largest_count() {
    for (min, max) in [
        (0, 1),
        (0, 500),
        (10, 500),
        (37, 38),
        (1, 2),
        (0, 1_000_000),
    ] {
        let b = count_bands(min, max, 2.0, 100).unwrap();
        check_bands(&b, min, max, 100);
    }
    // Default factor kept when 10 bands suffice: from 500 down to 10 takes exactly 10.
    let b = count_bands(10, 500, 2.0, 10).unwrap();
    check_bands(&b, 10, 500, 10);
    assert_eq!(b.factor, 2.0);
    assert_eq!(b.bands.len(), 10);
}

#[test]
fn band_factor_widens_to_fit_max_states() {
    let b = count_bands(1, 100_000, 2.0, 10).unwrap();
    check_bands(&b, 1, 100_000, 10);
    assert_eq!(b.bands.len(), 10);
    assert!(b.factor > 2.0, "factor {}", b.factor);
    // The least such factor: the lowest band reaches the least count just so, and a slightly
    // narrower factor needs an 11th band.
    assert!(b.bands[0].lower > 1.0 - 1e-6, "{:?}", b.bands[0]);
    let narrower = count_bands(1, 100_000, b.factor * (1.0 - 1e-6), 1000).unwrap();
    assert!(narrower.bands.len() > 10, "{}", narrower.bands.len());
    // Default factor 2 would need many more bands.
    assert!(count_bands(1, 100_000, 2.0, 1000).unwrap().bands.len() > 100);

    // A trace with that dynamic range fits in 10 states.
    let reqs = trace_with_counts(0.0, &[1, 10, 100, 1000, 10_000, 100_000, 1]);
    let w = &NetworkCost::REQUEST_DIRECTION;
    for state_rate in [StateRate::BandCentre, StateRate::Observed] {
        let opts = MmppFitOptions {
            state_rate,
            ..MmppFitOptions::default()
        };
        let m = fit_mmpp(&reqs, w, &opts).unwrap();
        check_fit(&m, &reqs, w, &opts);
        assert!((2..=10).contains(&m.states.len()), "{m:#?}");
    }
}

#[test]
fn production_traces_fit_at_every_stage() {
    let traces = tailbound_trace::list_traces(&tailbound_testdata::production_dir()).unwrap();
    assert_eq!(traces.len(), 42);
    let profile = StorageProfile::intel710_ssd();
    for path in &traces {
        let trace = tailbound_trace::read_trace(path).unwrap();
        let reqs = &trace.requests;
        let n_intervals = interval_counts(reqs, 1.0).unwrap().len() as f64;
        for stage in Stage::ALL {
            let w = stage_work(stage, &profile);
            let total = total_work(reqs, w);
            for sizes in [SizeKind::Exponential, SizeKind::Empirical] {
                let opts = MmppFitOptions {
                    sizes,
                    ..MmppFitOptions::default()
                };
                let m = fit_mmpp(reqs, w, &opts)
                    .unwrap_or_else(|e| panic!("{} {stage:?}: {e}", path.display()));
                check_fit(&m, reqs, w, &opts);
                if sizes == SizeKind::Empirical {
                    // Jensen: E[e^{θW}] ≥ e^{θ·E[W]}.
                    for s in &m.states {
                        let mean = s.sizes.mean();
                        for theta in [0.1 / mean, 1.0 / mean, 3.0 / mean] {
                            if let Some(mgf) = s.sizes.mgf(theta) {
                                assert!(
                                    mgf >= (theta * mean).exp() * (1.0 - 1e-12),
                                    "{} {stage:?}: mgf({theta}) = {mgf}",
                                    path.display()
                                );
                            }
                        }
                    }
                }
            }
            // With observed rates the model's mean load is the trace's, per counted second.
            let opts = MmppFitOptions {
                state_rate: StateRate::Observed,
                ..MmppFitOptions::default()
            };
            let m = fit_mmpp(reqs, w, &opts).unwrap();
            check_fit(&m, reqs, w, &opts);
            assert!(rel(m.mean_work_per_s(), total / n_intervals) < 1e-9);
        }
    }
}

#[test]
fn errors_name_the_problem() {
    let w = &NetworkCost::REQUEST_DIRECTION;
    let d = MmppFitOptions::default();
    assert_eq!(fit_mmpp(&[], w, &d).unwrap_err(), FitError::EmptyTrace);
    let reqs = trace_with_counts(0.0, &[3, 4]);
    let cases = [
        (
            MmppFitOptions {
                interval_s: 0.0,
                ..d
            },
            "interval_s = 0",
        ),
        (MmppFitOptions { step_s: -1.0, ..d }, "step_s = -1"),
        (
            MmppFitOptions {
                band_factor: f64::NAN,
                ..d
            },
            "band_factor = NaN",
        ),
        (MmppFitOptions { max_states: 0, ..d }, "max_states is 0"),
        (
            MmppFitOptions { step_s: 10.0, ..d },
            "use a step of at most the interval",
        ),
    ];
    for (opts, want) in cases {
        let e = fit_mmpp(&reqs, w, &opts).unwrap_err();
        assert!(e.to_string().contains(want), "{e} lacks {want:?}");
    }
    let fast = trace_with_counts(0.0, &[200_000, 200_000]);
    let e = fit_mmpp(&fast, w, &d).unwrap_err();
    assert!(matches!(e, FitError::ArrivalProbability { .. }), "{e}");
    assert!(e.to_string().contains("use a time step of at most"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_counts_fit_a_valid_mmpp(
        inner in proptest::collection::vec(0u64..300, 0..40),
        first in 1u64..300,
        last in 1u64..300,
        factor in 0.25f64..4.0,
        max_states in 1usize..12,
        observed in any::<bool>(),
        empirical in any::<bool>(),
    ) {
        let mut counts = vec![first];
        counts.extend(inner);
        counts.push(last);
        let reqs = trace_with_counts(3.25, &counts);
        let opts = MmppFitOptions {
            band_factor: factor,
            max_states,
            sizes: if empirical { SizeKind::Empirical } else { SizeKind::Exponential },
            state_rate: if observed { StateRate::Observed } else { StateRate::BandCentre },
            ..MmppFitOptions::default()
        };
        let w = &NetworkCost::RESPONSE_DIRECTION;
        let m = fit_mmpp(&reqs, w, &opts).unwrap();
        check_fit(&m, &reqs, w, &opts);
        let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        let b = count_bands(min, max, factor, max_states).unwrap();
        check_bands(&b, min, max, max_states);
        prop_assert!(b.factor >= factor);
        if b.factor > factor {
            prop_assert_eq!(b.bands.len(), max_states);
        }
    }
}
