//! Synthetic traces: sorted, deterministic per seed, at the requested rate.

use proptest::prelude::*;
use tailbound_trace::{generate, trace_stats, ArrivalModel, GenSpec, SizeDist, Vocabulary};

fn models() -> impl Strategy<Value = ArrivalModel> {
    prop_oneof![
        (1.0f64..2000.0).prop_map(|rate_per_s| ArrivalModel::Poisson { rate_per_s }),
        (1.0f64..2000.0, 1.05f64..4.0)
            .prop_map(|(rate_per_s, shape)| ArrivalModel::Pareto { rate_per_s, shape }),
        (10.0f64..2000.0, 0.001f64..1.0, 0.001f64..1.0).prop_map(|(r, on, off)| {
            ArrivalModel::OnOff {
                on_rate_per_s: r,
                mean_on_s: on,
                mean_off_s: off,
            }
        }),
        proptest::collection::vec((0.0f64..2000.0, 0.01f64..2.0), 1..5).prop_map(|states| {
            let (mut rates, dwells): (Vec<f64>, Vec<f64>) = states.into_iter().unzip();
            rates[0] += 1.0;
            ArrivalModel::Mmpp {
                rates_per_s: rates,
                mean_dwell_s: dwells,
            }
        }),
    ]
}

fn sizes() -> impl Strategy<Value = SizeDist> {
    prop_oneof![
        (1u64..1 << 20).prop_map(|bytes| SizeDist::Fixed { bytes }),
        (1.0f64..1e6).prop_map(|mean_bytes| SizeDist::Exponential { mean_bytes }),
        (1.0f64..1e4, 1.01f64..3.0)
            .prop_map(|(min_bytes, shape)| SizeDist::Pareto { min_bytes, shape }),
        proptest::collection::vec(1u64..1 << 20, 1..5).prop_map(|sizes| SizeDist::Choice { sizes }),
    ]
}

fn spec(arrival: ArrivalModel, sizes: SizeDist, read_fraction: f64) -> GenSpec {
    GenSpec {
        arrival,
        sizes,
        read_fraction,
        duration_s: 5.0,
        vocabulary: Vocabulary::KeyValue,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_traces_are_sorted_valid_and_deterministic(
        arrival in models(), sizes in sizes(), read_fraction in 0.0f64..=1.0, seed in any::<u64>()
    ) {
        let s = spec(arrival, sizes, read_fraction);
        let Ok(a) = generate(&s, seed) else {
            // Only a quiet on/off or MMPP run may produce nothing in 5 s.
            return Ok(());
        };
        prop_assert!(a.requests.windows(2).all(|w| w[0].arrival_ns <= w[1].arrival_ns));
        prop_assert!(a.requests.iter().all(|r| r.arrival_ns < 5_000_000_000));
        prop_assert!(a.requests.iter().all(|r| (1..=1 << 30).contains(&r.size_bytes)));
        let b = generate(&s, seed).unwrap();
        prop_assert_eq!(&a, &b);
        let c = generate(&s, seed.wrapping_add(1));
        prop_assert!(c.map_or(true, |c| c.requests != a.requests));
    }
}

/// Over 100 s at 1000/s the count is Poisson(1e5): sd ≈ 316, so 2 % (≈ 6 sd) never fails
/// by chance in practice.
#[test]
fn poisson_empirical_rate_is_within_2_percent_of_the_requested_rate() {
    for seed in 0..5 {
        let s = GenSpec {
            duration_s: 100.0,
            ..spec(
                ArrivalModel::Poisson { rate_per_s: 1000.0 },
                SizeDist::Fixed { bytes: 1 },
                0.5,
            )
        };
        let t = generate(&s, seed).unwrap();
        let rate = t.requests.len() as f64 / s.duration_s;
        assert!((rate - 1000.0).abs() < 20.0, "seed {seed}: {rate}/s");
        let reads = trace_stats(&t).read_fraction.unwrap();
        assert!(
            (reads - 0.5).abs() < 0.01,
            "seed {seed}: read fraction {reads}"
        );
    }
}

/// Pareto and MMPP keep their mean rates too (looser: heavier tails, fewer independent parts).
#[test]
fn pareto_and_mmpp_mean_rates() {
    let pareto = spec(
        ArrivalModel::Pareto {
            rate_per_s: 500.0,
            shape: 2.5,
        },
        SizeDist::Fixed { bytes: 1 },
        1.0,
    );
    let pareto = GenSpec {
        duration_s: 200.0,
        ..pareto
    };
    let n = generate(&pareto, 7).unwrap().requests.len() as f64;
    assert!((n / 200.0 - 500.0).abs() < 25.0, "pareto {}/s", n / 200.0);

    // Stationary mix of 100/s (mean dwell 1 s) and 900/s (mean dwell 3 s): 700/s.
    let mmpp = spec(
        ArrivalModel::Mmpp {
            rates_per_s: vec![100.0, 900.0],
            mean_dwell_s: vec![1.0, 3.0],
        },
        SizeDist::Fixed { bytes: 1 },
        1.0,
    );
    let mmpp = GenSpec {
        duration_s: 2000.0,
        ..mmpp
    };
    let n = generate(&mmpp, 7).unwrap().requests.len() as f64;
    assert!((n / 2000.0 - 700.0).abs() < 35.0, "mmpp {}/s", n / 2000.0);
}
