//! The soundness harness (issue 4): for random small scenarios — 1–8 tenants with Poisson,
//! MMPP or on/off traffic, fixed, exponential or (with empirical fits) Pareto sizes, random
//! SLOs and hosts — no tenant's simulated latency may
//! exceed the bounds the calculus computes for the same inputs:
//!
//! * the DNC bound (a worst case) is checked against the **maximum** simulated latency;
//! * the SNC-Meister bound at ε = 10⁻³ against the simulated **p99.9**;
//! * the martingale bound (`snc-martingale`, per request) against the simulated **p99.9**, and
//!   against the p99.9 of traffic sampled from the fitted models themselves
//!   (`admission::model_traffic`, twice the trace's length): the bound is about the models,
//!   so that check fails only by a fault of the calculus, where the trace's can also fail by
//!   the fit's. At the nightly size the trace's does, for on/off tenants under the 100 ms fit
//!   (seed 0x5eed case 332; seeds 7 and 11, cases 276 and 215: bounds 20.5 / 9.8 / 8.4 ms
//!   against trace p99.9s of 21.2 / 10.0 / 11.0 ms, while the models' own traffic does 12.9 /
//!   3.6 / 3.3 ms).
//!
//! Same inputs means: every flow is characterized on the whole trace (`part = "whole"`,
//! MMPPs counted in [`FIT_INTERVAL`]s) and the whole trace is replayed. The calculus serves
//! fluid work; the simulator serves 1500-byte chunks, store-and-forward, non-preemptive
//! between chunks. Packetization costs each hop at most one chunk of a lower level ahead of
//! ours plus one chunk of store-and-forward, so the bound is compared with an allowance of
//! 2·mtu/R per queue crossed (the packetizer term of network calculus; ≤ 24 µs per hop at
//! 1 Gbit/s) and 1 µs for the engine's ns rounding.
//!
//! It lives with the experiments because it joins scenario files, the calculus and the
//! simulator, which do not know each other. CI runs [`DEFAULT_CASES`] seeded cases;
//! `TAILBOUND_SOUNDNESS_CASES=5000 cargo test --release -p tailbound-experiments soundness` is
//! the nightly size, and
//! `TAILBOUND_SOUNDNESS_SEED=n` varies the seeds. A failure prints the case's scenario file.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use tailbound_calculus::{bound_all, packetization_allowance_s, Bound, BoundOptions, Method};
use tailbound_experiments::admission::model_traffic;
use tailbound_model::{ETHERNET_MTU_BYTES, SLO_WINDOW_S};
use tailbound_sim::{Plan, Replay, Transmission};

const DEFAULT_CASES: u64 = 200;
/// How long each tenant's traffic sampled from its fitted models runs [s] (2× its trace).
const MODEL_S: f64 = 40.0;
/// MMPP counting interval of the characterization. SNC-Meister's 1 s cannot see states that
/// last less than a second: seed 24301072904 (case 1 of the default run) is one tenant whose
/// MMPP alternates 2.6 s at 2,000/s with 0.5 s at 7,900/s of 16 KiB writes, overloading the
/// link in its high state; fitted on 1 s counts the high state is averaged away and the
/// SNC-Meister bound is 8.0 ms while the replay measures a p99.9 of 38.9 ms (DNC: 40.9 ms).
/// At 100 ms (shorter than every generator's mean dwell, on and off time here, 0.1 s and
/// up) the same tenant's bound is 362 ms.
const FIT_INTERVAL: &str = "100ms";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

/// A random scenario file: 1–2 servers and 1–3 clients at 1 Gbit/s, 1–8 tenants whose mean
/// rates keep every link below ~85% utilisation.
fn random_scenario(rng: &mut ChaCha8Rng, heavy: &mut ChaCha8Rng) -> String {
    let servers = rng.gen_range(1..=2);
    let clients = rng.gen_range(1..=3);
    let tenants = rng.gen_range(1..=8);
    let sizes = if rng.gen_bool(0.5) {
        "exponential"
    } else {
        "empirical"
    };
    let mut s = format!(
        "[characterize]\npart = \"whole\"\nsizes = \"{sizes}\"\ninterval = \"{FIT_INTERVAL}\"\n"
    );
    for i in 0..servers {
        s += &format!("[[hosts]]\nname = \"s{i}\"\nlink = \"1Gbit\"\n");
    }
    for i in 0..clients {
        s += &format!("[[hosts]]\nname = \"c{i}\"\nlink = \"1Gbit\"\n");
    }
    // the worst link carries at most all tenants: give each a share of 85% of 125 MB/s
    let budget_bytes_per_s = 0.85 * 125e6 / tenants as f64;
    for t in 0..tenants {
        let mean_bytes = [1024.0, 4096.0, 16384.0, 65536.0][rng.gen_range(0..4)];
        // response work per request ≈ 200 + 1.1·size for reads, the heavier direction
        let work = 200.0 + 1.1 * mean_bytes;
        let mean_rate = (budget_bytes_per_s / work * rng.gen_range(0.05..1.0)).clamp(5.0, 3000.0);
        let arrival = match rng.gen_range(0..3) {
            0 => format!("{{ model = \"poisson\", rate_per_s = {mean_rate:.3} }}"),
            1 => {
                // two states, the high one 4x the low one, mean = mean_rate
                let (dl, dh) = (rng.gen_range(1.0..5.0), rng.gen_range(0.2..2.0));
                let low = mean_rate * (dl + dh) / (dl + 4.0 * dh);
                format!(
                    "{{ model = \"mmpp\", rates_per_s = [{low:.3}, {:.3}], mean_dwell_s = [{dl:.3}, {dh:.3}] }}",
                    4.0 * low
                )
            }
            _ => {
                let (on, off) = (rng.gen_range(0.1..1.0), rng.gen_range(0.1..2.0));
                let on_rate = mean_rate * (on + off) / on;
                format!(
                    "{{ model = \"on_off\", on_rate_per_s = {on_rate:.3}, mean_on_s = {on:.3}, mean_off_s = {off:.3} }}"
                )
            }
        };
        // heavy-tailed sizes, with rare batches hundreds of times the mean (which the
        // martingale bound splits off, its "Heavy batches"), for a third of the tenants where the
        // fit keeps the observed sizes (an exponential fit of Pareto sizes has a lighter tail
        // than they do: a wrong model, not a calculus to test); drawn from a second stream so
        // that the other cases stay as they were
        let fixed = rng.gen_bool(0.5);
        let size = if sizes == "empirical" && heavy.gen_bool(1.0 / 3.0) {
            let shape: f64 = heavy.gen_range(1.3..2.0);
            let min_bytes = mean_bytes * (shape - 1.0) / shape;
            format!("{{ model = \"pareto\", min_bytes = {min_bytes:.1}, shape = {shape:.3} }}")
        } else if fixed {
            format!("{{ model = \"fixed\", bytes = {mean_bytes} }}")
        } else {
            format!("{{ model = \"exponential\", mean_bytes = {mean_bytes} }}")
        };
        let slo_ms = [1, 5, 20, 100][rng.gen_range(0..4)];
        s += &format!(
            "[[tenants]]\nname = \"t{t}\"\nclient = \"c{}\"\nserver = \"s{}\"\nslo = \"{slo_ms}ms\"\n\
             percentile = 99.9\nseed = {}\nmodel = {{ arrival = {arrival}, sizes = {size}, \
             read_fraction = {:.2}, duration_s = 20, vocabulary = \"key_value\" }}\n",
            rng.gen_range(0..clients),
            rng.gen_range(0..servers),
            rng.gen::<u32>(),
            rng.gen_range(0.0..=1.0),
        );
    }
    s
}

#[test]
fn simulated_latency_never_exceeds_the_dnc_snc_meister_or_martingale_bound() {
    let cases = env_u64("TAILBOUND_SOUNDNESS_CASES", DEFAULT_CASES);
    let base = env_u64("TAILBOUND_SOUNDNESS_SEED", 0x5eed);
    let opts = BoundOptions::default();
    let (mut checked_dnc, mut checked_snc, mut checked_mart) = (0u64, 0u64, 0u64);
    let mut slack: Vec<f64> = Vec::new();
    let mut slack_mart: Vec<f64> = Vec::new();
    let mut slack_model: Vec<f64> = Vec::new();
    for case in 0..cases {
        let seed = base.wrapping_mul(1_000_003).wrapping_add(case);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut heavy = ChaCha8Rng::seed_from_u64(seed ^ 0x4ea7_b47c);
        let text = random_scenario(&mut rng, &mut heavy);
        let scenario = tailbound_scenario::own::parse_toml(Path::new("soundness.toml"), &text)
            .unwrap_or_else(|e| panic!("case {case} (seed {seed}): {e}\n{text}"));
        let net = &scenario.network;
        let simulate = |traffic| {
            Replay::new(net, traffic, scenario.works())
                .unwrap()
                .run(
                    &Plan::all(net),
                    Transmission::Chunked {
                        mtu_bytes: ETHERNET_MTU_BYTES,
                    },
                    SLO_WINDOW_S,
                )
                .unwrap()
        };
        let sim = simulate(scenario.replay_requests().unwrap());
        // the fitted models' own traffic, sampled: the calculus bounds the models, so a bound
        // below what they do is the calculus' fault, where a trace above it may be the fit's
        let sampled = (0..net.tenants.len())
            .map(|t| model_traffic(net, t, MODEL_S, seed ^ ((t as u64) << 32)))
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| panic!("case {case} (seed {seed}): {e}\n{text}"));
        let model = simulate(sampled);
        let dnc = bound_all(net, Method::Dnc, &opts).unwrap();
        let snc = bound_all(net, Method::SncMeister, &opts).unwrap();
        let mart = bound_all(net, Method::SncMartingale, &opts)
            .unwrap_or_else(|e| panic!("case {case} (seed {seed}): {e}\n{text}"));
        for (ti, t) in sim.tenants.iter().enumerate() {
            let allowance = packetization_allowance_s(net, ti, ETHERNET_MTU_BYTES);
            let fail = |what: &str, measured: f64, bound: f64| -> String {
                format!(
                    "case {case} (seed {seed}): tenant {} simulated {what} {measured:.6e} s > \
                     bound {bound:.6e} s + allowance {allowance:.3e} s\nscenario:\n{text}",
                    t.name
                )
            };
            if let Bound::Within(b) = dnc[ti].total {
                assert!(
                    t.max_s <= b + allowance,
                    "{}",
                    fail("max (DNC)", t.max_s, b)
                );
                checked_dnc += 1;
            }
            if let Bound::Within(b) = snc[ti].total {
                assert!(
                    t.p999_s <= b + allowance,
                    "{}",
                    fail("p99.9 (SNC-Meister)", t.p999_s, b)
                );
                checked_snc += 1;
                slack.push(t.p999_s / (b + allowance));
            }
            if let Bound::Within(b) = mart[ti].total {
                assert!(
                    t.p999_s <= b + allowance,
                    "{}",
                    fail("p99.9 (snc-martingale)", t.p999_s, b)
                );
                checked_mart += 1;
                slack_mart.push(t.p999_s / (b + allowance));
                let sampled = model.tenants[ti].p999_s;
                assert!(
                    sampled <= b + allowance,
                    "{}",
                    fail("p99.9 of its models' traffic (snc-martingale)", sampled, b)
                );
                slack_model.push(sampled / (b + allowance));
            }
        }
    }
    slack.sort_by(f64::total_cmp);
    slack_mart.sort_by(f64::total_cmp);
    slack_model.sort_by(f64::total_cmp);
    let med = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(f64::NAN);
    eprintln!(
        "{cases} cases: {checked_dnc} tenant checks against DNC, {checked_snc} against \
         SNC-Meister, {checked_mart} against snc-martingale; simulated p99.9 / bound: \
         SNC-Meister median {:.3}, max {:.3}; snc-martingale median {:.3}, max {:.3}; the \
         models' traffic / snc-martingale median {:.3}, max {:.3}",
        med(&slack),
        slack.last().copied().unwrap_or(f64::NAN),
        med(&slack_mart),
        slack_mart.last().copied().unwrap_or(f64::NAN),
        med(&slack_model),
        slack_model.last().copied().unwrap_or(f64::NAN)
    );
    // the harness must actually compare: most tenants are bounded at these loads
    assert!(
        checked_dnc >= cases,
        "only {checked_dnc} DNC checks in {cases} cases"
    );
    assert!(
        checked_snc >= cases,
        "only {checked_snc} SNC checks in {cases} cases"
    );
    assert!(
        checked_mart >= cases,
        "only {checked_mart} snc-martingale checks in {cases} cases"
    );
}
