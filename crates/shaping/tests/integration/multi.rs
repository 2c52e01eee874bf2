//! `MultiBucket` against a model of independent `TokenBucket`s: a request passes only when
//! every bucket could take its cost, all or none, and `ready_at` is the maximum.

use proptest::prelude::*;
use tailbound_shaping::{MultiBucket, MultiTakeError, TokenBucket};

#[derive(Debug, Clone)]
struct Case {
    params: Vec<(f64, f64)>,
    steps: Vec<(u64, Vec<f64>)>,
}

fn case() -> impl Strategy<Value = Case> {
    prop::collection::vec((1.0f64..1e4, 0.0f64..1e3), 1..5).prop_flat_map(|params| {
        let k = params.len();
        let step = (0u64..50_000_000, prop::collection::vec(0.0f64..2e3, k));
        prop::collection::vec(step, 1..80).prop_map(move |steps| Case {
            params: params.clone(),
            steps,
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn passes_only_when_every_bucket_could(case in case()) {
        let Ok(mut mb) = MultiBucket::new(&case.params, 0) else {
            return Err(TestCaseError::fail("valid parameters rejected"));
        };
        let mut model: Vec<TokenBucket> = mb.buckets().to_vec();
        let mut now = 0;
        for (dt, costs) in &case.steps {
            now += dt;
            let each_ready: Vec<u64> =
                model.iter().zip(costs).map(|(b, &c)| b.ready_at(now, c)).collect();
            let every_bucket_could = each_ready.iter().all(|&t| t == now);
            let expected_ready = each_ready.iter().copied().fold(now, u64::max);
            prop_assert_eq!(mb.ready_at(now, costs), Ok(expected_ready));
            let before = mb.clone();
            match mb.take(now, costs) {
                Ok(()) => {
                    prop_assert!(every_bucket_could, "passed although a bucket lacked tokens");
                    for (b, &c) in model.iter_mut().zip(costs) {
                        prop_assert_eq!(b.take(now, c), Ok(()));
                    }
                }
                Err(MultiTakeError::NotReady(nr)) => {
                    prop_assert!(!every_bucket_could, "refused although every bucket could");
                    prop_assert_eq!(nr.ready_at_ns, expected_ready);
                    prop_assert_eq!(&mb, &before, "a refused take must charge nothing");
                }
                Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e}"))),
            }
            prop_assert_eq!(mb.buckets(), &model[..]);
        }
    }

    #[test]
    fn take_at_ready_at_always_succeeds(case in case()) {
        let Ok(mut mb) = MultiBucket::new(&case.params, 0) else {
            return Err(TestCaseError::fail("valid parameters rejected"));
        };
        let mut now = 0;
        for (dt, costs) in &case.steps {
            now += dt;
            let Ok(t) = mb.ready_at(now, costs) else {
                return Err(TestCaseError::fail("right-length costs rejected"));
            };
            if t > now {
                let mut early = mb.clone();
                prop_assert!(early.take(t - 1, costs).is_err());
            }
            prop_assert_eq!(mb.take(t, costs), Ok(()));
            now = t;
        }
    }
}

#[test]
fn default_bursts_are_one_second_of_rate() {
    let Ok(mb) = MultiBucket::with_default_bursts(&[800.0, 5000.0], 42) else {
        panic!("valid rates");
    };
    let bursts: Vec<f64> = mb.buckets().iter().map(TokenBucket::burst).collect();
    assert_eq!(bursts, vec![800.0, 5000.0]);
    assert_eq!(mb.tokens(42), vec![800.0, 5000.0]);
    assert_eq!(mb.len(), 2);
}
