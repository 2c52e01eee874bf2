//! Operation-script tests for `TokenBucket`: each test is a list of `Op`s run by `check()`.

use tailbound_shaping::{NotReady, TokenBucket};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// One step of a token-bucket script. Times in `Outcome::Wait` are absolute [ns].
#[derive(Debug, Clone, Copy)]
enum Op {
    /// a request of this cost [work] arrives now; it must have this outcome
    Arrive(f64, Outcome),
    /// the clock moves forward by this many ns
    Advance(u64),
    /// new (rate, burst) at the current time
    SetRate(f64, f64),
    /// a check on the state at the current time
    Expect(Check),
}

#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// taken now
    Pass,
    /// refused, retry at this absolute time [ns]
    Wait(u64),
}

#[derive(Debug, Clone, Copy)]
enum Check {
    /// the level now [work] (within 1e-9)
    Tokens(f64),
    /// `ready_at(now, cost)` is exact: `take` succeeds at it and fails 1 ns earlier (if later
    /// than now); and equals the given absolute time [ns]
    ReadyAt(f64, u64),
    /// like `ReadyAt` without a stated time
    ReadyAtExact(f64),
}

use Check::*;
use Op::*;
use Outcome::*;

fn check_ready_at(tb: &TokenBucket, now: u64, cost: f64) -> u64 {
    let t = tb.ready_at(now, cost);
    assert!(t >= now, "ready_at {t} before now {now}");
    let mut at = tb.clone();
    assert_eq!(at.take(t, cost), Ok(()), "take at ready_at {t} must pass");
    if t > now {
        let mut before = tb.clone();
        assert!(
            before.take(t - 1, cost).is_err(),
            "take 1 ns before ready_at {t} must fail (level {})",
            tb.tokens(t - 1)
        );
    }
    t
}

/// Runs `ops` against a bucket of `rate` [work/s] and `burst` [work] created at `start` [ns].
fn check(rate: f64, burst: f64, start: u64, ops: &[Op]) {
    let mut tb = match TokenBucket::new(rate, burst, start) {
        Ok(tb) => tb,
        Err(e) => panic!("bad script parameters: {e}"),
    };
    let mut now = start;
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Arrive(cost, Pass) => assert_eq!(tb.take(now, cost), Ok(()), "op {i}: {op:?}"),
            Arrive(cost, Wait(at)) => {
                let before = tb.clone();
                assert_eq!(
                    tb.take(now, cost),
                    Err(NotReady { ready_at_ns: at }),
                    "op {i}: {op:?}"
                );
                assert_eq!(
                    tb, before,
                    "op {i}: a refused take must not change the bucket"
                );
                check_ready_at(&tb, now, cost);
            }
            Advance(dt) => now += dt,
            SetRate(r, b) => {
                assert_eq!(tb.set_rate(now, r, b), Ok(()), "op {i}: {op:?}");
                assert_eq!((tb.rate(), tb.burst()), (r, b));
            }
            Expect(Tokens(level)) => {
                let got = tb.tokens(now);
                assert!(
                    (got - level).abs() <= 1e-9,
                    "op {i}: tokens {got}, want {level}"
                );
            }
            Expect(ReadyAt(cost, at)) => {
                assert_eq!(check_ready_at(&tb, now, cost), at, "op {i}: {op:?}");
            }
            Expect(ReadyAtExact(cost)) => {
                check_ready_at(&tb, now, cost);
            }
        }
    }
}

#[test]
fn starts_full() {
    check(
        100.0,
        50.0,
        0,
        &[
            Expect(Tokens(50.0)),
            Expect(ReadyAt(50.0, 0)),
            Arrive(50.0, Pass),
            Expect(Tokens(0.0)),
            Arrive(1.0, Wait(10 * MS)),
        ],
    );
}

#[test]
fn starts_full_at_a_nonzero_origin() {
    let t0 = 3_600 * S + 17;
    check(
        1.0,
        2.0,
        t0,
        &[
            Expect(Tokens(2.0)),
            Arrive(2.0, Pass),
            Arrive(1.0, Wait(t0 + S)),
            Advance(S),
            Arrive(1.0, Pass),
        ],
    );
}

#[test]
fn draining_back_to_back() {
    check(
        10.0,
        30.0,
        0,
        &[
            Arrive(10.0, Pass),
            Arrive(10.0, Pass),
            Arrive(10.0, Pass),
            Arrive(10.0, Wait(S)),
            Advance(500 * MS),
            Expect(Tokens(5.0)),
            Arrive(10.0, Wait(S)),
            Advance(500 * MS),
            Arrive(10.0, Pass),
            Expect(Tokens(0.0)),
        ],
    );
}

#[test]
fn refill_is_capped_at_burst() {
    check(
        10.0,
        5.0,
        0,
        &[
            Arrive(5.0, Pass),
            Advance(10 * S),
            Expect(Tokens(5.0)),
            Arrive(5.0, Pass),
            Arrive(0.1, Wait(10 * S + 10 * MS)),
        ],
    );
}

#[test]
fn oversize_request_passes_when_full_and_leaves_a_deficit() {
    check(
        100.0,
        10.0,
        0,
        &[
            // Full bucket: the 25-token request passes and leaves -15.
            Arrive(25.0, Pass),
            Expect(Tokens(-15.0)),
            // Even a 1-token request waits until the deficit is repaid and 1 token is back.
            Arrive(1.0, Wait(160 * MS)),
            Expect(ReadyAt(0.0, 150 * MS)),
            Advance(100 * MS),
            Expect(Tokens(-5.0)),
            // Another oversize request waits for a full bucket (10 tokens): at 250 ms.
            Arrive(25.0, Wait(250 * MS)),
            Advance(150 * MS),
            Expect(Tokens(10.0)),
            Arrive(25.0, Pass),
            Expect(Tokens(-15.0)),
        ],
    );
}

#[test]
fn oversize_request_on_a_partly_full_bucket_waits_for_full() {
    check(
        100.0,
        10.0,
        0,
        &[
            Arrive(5.0, Pass),
            Arrive(1000.0, Wait(50 * MS)),
            Advance(50 * MS),
            Arrive(1000.0, Pass),
            Expect(Tokens(-990.0)),
            Arrive(10.0, Wait(50 * MS + 10 * S)),
        ],
    );
}

#[test]
fn zero_burst_paces_every_request() {
    check(
        1000.0,
        0.0,
        0,
        &[
            Arrive(1.0, Pass),
            Arrive(1.0, Wait(MS)),
            Advance(MS),
            Arrive(3.0, Pass),
            Arrive(1.0, Wait(4 * MS)),
        ],
    );
}

#[test]
fn set_rate_mid_way() {
    check(
        10.0,
        10.0,
        0,
        &[
            Arrive(10.0, Pass),
            Advance(500 * MS),
            Expect(Tokens(5.0)),
            // Faster and bigger: accrued tokens kept, no free tokens for the bigger bucket.
            SetRate(100.0, 20.0),
            Expect(Tokens(5.0)),
            Arrive(10.0, Wait(550 * MS)),
            Advance(50 * MS),
            Arrive(10.0, Pass),
            // Long idle at 100/s fills to 20; shrinking the burst caps the level.
            Advance(10 * S),
            Expect(Tokens(20.0)),
            SetRate(1.0, 2.0),
            Expect(Tokens(2.0)),
            Arrive(2.0, Pass),
            Arrive(1.0, Wait(10 * S + 550 * MS + S)),
        ],
    );
}

#[test]
fn set_rate_keeps_a_deficit_and_repays_it_at_the_new_rate() {
    check(
        10.0,
        1.0,
        0,
        &[
            Arrive(21.0, Pass),
            Expect(Tokens(-20.0)),
            SetRate(40.0, 1.0),
            Arrive(0.0, Wait(500 * MS)),
            Expect(ReadyAt(1.0, 525 * MS)),
        ],
    );
}

#[test]
fn ready_at_is_exact_with_non_integer_ns_waits() {
    // 1/3 s, 1/7 s, 1e9/3 work/s: waits that are not whole nanoseconds.
    check(
        3.0,
        1.0,
        0,
        &[
            Arrive(1.0, Pass),
            Expect(ReadyAt(1.0, 333_333_334)),
            Arrive(1.0, Wait(333_333_334)),
            Advance(333_333_334),
            Arrive(1.0, Pass),
            Expect(ReadyAtExact(0.5)),
            Expect(ReadyAtExact(1.0)),
        ],
    );
    check(
        7.0,
        2.0,
        5,
        &[
            Arrive(1.5, Pass),
            Expect(ReadyAtExact(2.0)),
            Expect(ReadyAtExact(0.7)),
            Advance(13),
            Expect(ReadyAtExact(1.9)),
        ],
    );
    check(
        1e9 / 3.0,
        100.0,
        0,
        &[
            Arrive(100.0, Pass),
            // The f64 nearest 1e9/3 is 333_333_333.333_333_313..., a hair slower than 1e9/3,
            // so 1 token takes a hair over 3 ns: the first whole ns is 4.
            Expect(ReadyAt(1.0, 4)),
            Expect(ReadyAt(0.9, 3)),
            Expect(ReadyAtExact(99.0)),
            Expect(ReadyAtExact(100.0)),
            Expect(ReadyAtExact(1e6)),
        ],
    );
}

#[test]
fn ready_at_is_exact_over_many_awkward_cases() {
    // A deterministic sweep of rates, costs and offsets; every case checks both sides.
    let rates = [0.3, 1.0, 3.0, 7.0, 1e3 / 7.0, 1e6 + 1.0, 1e9 / 3.0, 1.25e11];
    let mut n = 0;
    for &rate in &rates {
        for k in 1..20u64 {
            let cost = k as f64 * 0.37;
            let burst = 2.5;
            let Ok(mut tb) = TokenBucket::new(rate, burst, k * 1_000_003) else {
                panic!("valid parameters");
            };
            let now = k * 1_000_003;
            assert_eq!(tb.take(now, burst), Ok(()));
            for dt in [0, 1, 999, 123_456_789] {
                check_ready_at(&tb, now + dt, cost);
                n += 1;
            }
        }
    }
    assert_eq!(n, rates.len() * 19 * 4);
}
