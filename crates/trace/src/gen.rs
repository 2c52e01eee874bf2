//! Synthetic tenants: arrival processes and size distributions that produce a [`Trace`].
//!
//! Generation is deterministic for a seed (a `ChaCha8Rng` seeded with
//! `seed_from_u64(seed)`; no global RNG). Times are generated in continuous time, rounded to
//! integer nanoseconds (so the trace is sorted), and cover `[0, duration_s)`. Sizes are
//! rounded to whole bytes and clamped to `[1 B, 1 GiB]`. A spec expected to produce more than
//! [`crate::MAX_REQUESTS`] requests (what a trace may hold) or
//! [`MAX_EVENTS`] events is refused before anything is generated, and generation stops with an
//! error if a draw exceeds the former anyway.
//!
//! Arrival models:
//! * **Poisson**: exponential inter-arrivals at `rate_per_s`.
//! * **MMPP**: a continuous-time Markov-modulated Poisson process. State i emits Poisson
//!   arrivals at `rates_per_s[i]` for an exponential dwell of mean `mean_dwell_s[i]`, then
//!   jumps to one of the other states chosen uniformly. The start state is drawn from the
//!   stationary distribution (∝ mean dwell).
//! * **OnOff**: a two-state MMPP with rates `(on_rate_per_s, 0)`.
//! * **Pareto**: i.i.d. Pareto inter-arrivals with mean `1 / rate_per_s` (scale
//!   `(shape − 1) / (shape · rate)`), `shape > 1`.
//!
//! Fitting models to real traces lives in `tailbound-curves`; this module only samples.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Pareto};
use serde::{Deserialize, Serialize};
use tailbound_model::{Op, Request};

use crate::{Trace, MAX_REQUESTS};

/// Largest generated request \[bytes\]: 1 GiB.
pub const MAX_SIZE_BYTES: u64 = 1 << 30;

/// Most events (arrivals plus MMPP state changes) a spec may be expected to generate.
pub const MAX_EVENTS: f64 = 1e8;

/// When requests arrive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ArrivalModel {
    /// Poisson arrivals
    Poisson {
        /// [requests/s]
        rate_per_s: f64,
    },
    /// continuous-time Markov-modulated Poisson process, uniform jumps between states
    Mmpp {
        /// arrival rate per state [requests/s], ≥ 0, at least one > 0
        rates_per_s: Vec<f64>,
        /// mean time in each state \[s\]
        mean_dwell_s: Vec<f64>,
    },
    /// Poisson bursts separated by silences, both of exponential length
    OnOff {
        /// arrival rate while on [requests/s]
        on_rate_per_s: f64,
        /// mean on period \[s\]
        mean_on_s: f64,
        /// mean off period \[s\]
        mean_off_s: f64,
    },
    /// renewal process with Pareto inter-arrival times
    Pareto {
        /// mean arrival rate [requests/s]
        rate_per_s: f64,
        /// tail index, > 1
        shape: f64,
    },
}

/// How large requests are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum SizeDist {
    /// every request has this size
    Fixed {
        /// \[bytes\]
        bytes: u64,
    },
    /// exponential sizes, rounded up to whole bytes
    Exponential {
        /// \[bytes\]
        mean_bytes: f64,
    },
    /// Pareto sizes (heavy tail), rounded to whole bytes
    Pareto {
        /// scale: the smallest size \[bytes\]
        min_bytes: f64,
        /// tail index, > 1
        shape: f64,
    },
    /// one of these sizes, uniformly \[bytes\]
    Choice { sizes: Vec<u64> },
}

/// Which op names a generated trace uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Vocabulary {
    /// `DiskRead` / `DiskWrite`
    Disk,
    /// `Get` / `Put`
    KeyValue,
}

tailbound_model::names!(Vocabulary, "vocabulary", { Disk => "disk", KeyValue => "key_value" });

/// A synthetic tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GenSpec {
    pub arrival: ArrivalModel,
    pub sizes: SizeDist,
    /// probability that a request reads, in [0, 1]
    pub read_fraction: f64,
    /// length of the trace \[s\]
    pub duration_s: f64,
    pub vocabulary: Vocabulary,
}

/// Why a spec cannot be generated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GenError {
    #[error("{name} = {value} is invalid; expected {expected}")]
    Parameter {
        name: String,
        value: f64,
        expected: &'static str,
    },
    #[error("MMPP has {rates} rates but {dwells} mean dwell times; expected one of each per state, at least one state")]
    MmppShape { rates: usize, dwells: usize },
    #[error("size choice list is empty; expected at least one size")]
    EmptyChoice,
    #[error("the spec would generate about {expected:.3e} events (arrivals and state changes); expected at most {max:e}, lower the rate or the duration")]
    TooLarge { expected: f64, max: f64 },
    #[error("the spec would generate about {expected:.3e} requests; a trace holds at most {max}, lower the rate or the duration")]
    TooManyRequests { expected: f64, max: u64 },
    #[error("the fitted MMPP cannot be sampled: {0}")]
    FittedMmpp(String),
    #[error("no request arrived within {duration_s} s (seed {seed}); expected at least one, raise the rate or the duration")]
    NoRequests { duration_s: f64, seed: u64 },
}

const POSITIVE: &str = "a positive finite number";
const SHAPE: &str = "a finite shape > 1 (so the mean is finite)";
const SIZE: &str = "a size between 1 byte and 1 GiB (1073741824)";
/// Highest accepted rate and shortest accepted time scale: 1 per ns.
const MAX_RATE_PER_S: f64 = 1e9;
const RATE: &str = "a positive finite rate of at most 1e9 per second";
const DWELL: &str = "a finite time of at least 1 ns (1e-9 s)";

fn check(
    name: impl Into<String>,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<(), GenError> {
    if ok {
        Ok(())
    } else {
        Err(GenError::Parameter {
            name: name.into(),
            value,
            expected,
        })
    }
}

fn check_rate(name: impl Into<String>, v: f64) -> Result<(), GenError> {
    check(name, v, v > 0.0 && v <= MAX_RATE_PER_S, RATE)
}

fn check_dwell(name: impl Into<String>, v: f64) -> Result<(), GenError> {
    check(name, v, v.is_finite() && v >= 1e-9, DWELL)
}

fn check_shape(name: impl Into<String>, v: f64) -> Result<(), GenError> {
    check(name, v, v.is_finite() && v > 1.0, SHAPE)
}

impl GenSpec {
    /// Checks every parameter; [`generate`] calls this first.
    pub fn validate(&self) -> Result<(), GenError> {
        let d = self.duration_s;
        // The last nanosecond timestamp must fit in u64.
        check(
            "duration_s",
            d,
            d.is_finite() && d > 0.0 && d < 1.8e10,
            POSITIVE,
        )?;
        let f = self.read_fraction;
        check(
            "read_fraction",
            f,
            (0.0..=1.0).contains(&f),
            "a fraction in [0, 1]",
        )?;
        // An upper bound on the events to generate, to refuse specs that would not finish.
        let events = match &self.arrival {
            ArrivalModel::Poisson { rate_per_s } => {
                check_rate("poisson rate_per_s", *rate_per_s)?;
                rate_per_s * d
            }
            ArrivalModel::Pareto { rate_per_s, shape } => {
                check_rate("pareto rate_per_s", *rate_per_s)?;
                check_shape("pareto shape", *shape)?;
                rate_per_s * d
            }
            ArrivalModel::OnOff {
                on_rate_per_s,
                mean_on_s,
                mean_off_s,
            } => {
                check_rate("on_off on_rate_per_s", *on_rate_per_s)?;
                check_dwell("on_off mean_on_s", *mean_on_s)?;
                check_dwell("on_off mean_off_s", *mean_off_s)?;
                on_rate_per_s * d + 2.0 * d / mean_on_s.min(*mean_off_s)
            }
            ArrivalModel::Mmpp {
                rates_per_s,
                mean_dwell_s,
            } => {
                if rates_per_s.is_empty() || rates_per_s.len() != mean_dwell_s.len() {
                    return Err(GenError::MmppShape {
                        rates: rates_per_s.len(),
                        dwells: mean_dwell_s.len(),
                    });
                }
                let mut max_rate = 0.0f64;
                let mut min_dwell = f64::INFINITY;
                for (i, (&r, &w)) in rates_per_s.iter().zip(mean_dwell_s).enumerate() {
                    check(
                        format!("mmpp rates_per_s[{i}]"),
                        r,
                        (0.0..=MAX_RATE_PER_S).contains(&r),
                        "a finite rate in [0, 1e9] per second",
                    )?;
                    check_dwell(format!("mmpp mean_dwell_s[{i}]"), w)?;
                    max_rate = max_rate.max(r);
                    min_dwell = min_dwell.min(w);
                }
                check(
                    "mmpp max(rates_per_s)",
                    max_rate,
                    max_rate > 0.0,
                    "at least one positive rate",
                )?;
                let switches = if rates_per_s.len() > 1 {
                    d / min_dwell
                } else {
                    0.0
                };
                max_rate * d + switches
            }
        };
        if events > MAX_EVENTS {
            return Err(GenError::TooLarge {
                expected: events,
                max: MAX_EVENTS,
            });
        }
        let requests = self.arrival.max_rate_per_s() * d;
        // a Poisson count rarely exceeds its mean by 1%; generation checks the real count too
        if requests > 0.99 * MAX_REQUESTS as f64 {
            return Err(GenError::TooManyRequests {
                expected: requests,
                max: MAX_REQUESTS,
            });
        }
        match &self.sizes {
            SizeDist::Fixed { bytes } => check(
                "fixed bytes",
                *bytes as f64,
                (1..=MAX_SIZE_BYTES).contains(bytes),
                SIZE,
            )?,
            SizeDist::Exponential { mean_bytes } => check(
                "exponential mean_bytes",
                *mean_bytes,
                mean_bytes.is_finite() && *mean_bytes > 0.0,
                POSITIVE,
            )?,
            SizeDist::Pareto { min_bytes, shape } => {
                check(
                    "pareto min_bytes",
                    *min_bytes,
                    (1.0..=MAX_SIZE_BYTES as f64).contains(min_bytes),
                    SIZE,
                )?;
                check_shape("pareto size shape", *shape)?;
            }
            SizeDist::Choice { sizes } => {
                if sizes.is_empty() {
                    return Err(GenError::EmptyChoice);
                }
                for (i, s) in sizes.iter().enumerate() {
                    check(
                        format!("choice sizes[{i}]"),
                        *s as f64,
                        (1..=MAX_SIZE_BYTES).contains(s),
                        SIZE,
                    )?;
                }
            }
        }
        Ok(())
    }
}

impl ArrivalModel {
    /// The highest arrival rate the model can have [requests/s].
    pub fn max_rate_per_s(&self) -> f64 {
        match self {
            ArrivalModel::Poisson { rate_per_s } | ArrivalModel::Pareto { rate_per_s, .. } => {
                *rate_per_s
            }
            ArrivalModel::OnOff { on_rate_per_s, .. } => *on_rate_per_s,
            ArrivalModel::Mmpp { rates_per_s, .. } => {
                rates_per_s.iter().copied().fold(0.0, f64::max)
            }
        }
    }

    /// A short readable description: `poisson 400/s`, `mmpp [100, 1500]/s`.
    pub fn describe(&self) -> String {
        match self {
            ArrivalModel::Poisson { rate_per_s } => format!("poisson {rate_per_s}/s"),
            ArrivalModel::Mmpp { rates_per_s, .. } => {
                let rates: Vec<String> = rates_per_s.iter().map(f64::to_string).collect();
                format!("mmpp [{}]/s", rates.join(", "))
            }
            ArrivalModel::OnOff { on_rate_per_s, .. } => format!("on-off {on_rate_per_s}/s"),
            ArrivalModel::Pareto { rate_per_s, shape } => {
                format!("pareto {rate_per_s}/s shape {shape}")
            }
        }
    }
}

fn exp(rate: f64, name: &str) -> Result<Exp<f64>, GenError> {
    Exp::new(rate).map_err(|_| GenError::Parameter {
        name: name.to_string(),
        value: rate,
        expected: POSITIVE,
    })
}

/// Arrival times \[s\] in `[0, duration_s)`, ascending.
fn arrivals(
    model: &ArrivalModel,
    duration_s: f64,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<f64>, GenError> {
    let mut out = Vec::new();
    match model {
        ArrivalModel::Poisson { rate_per_s } => {
            renewal(
                &exp(*rate_per_s, "poisson rate_per_s")?,
                duration_s,
                rng,
                &mut out,
            );
        }
        ArrivalModel::Pareto { rate_per_s, shape } => {
            let scale = (shape - 1.0) / (shape * rate_per_s);
            let pareto = Pareto::new(scale, *shape).map_err(|_| GenError::Parameter {
                name: "pareto shape".into(),
                value: *shape,
                expected: SHAPE,
            })?;
            renewal(&pareto, duration_s, rng, &mut out);
        }
        ArrivalModel::OnOff {
            on_rate_per_s,
            mean_on_s,
            mean_off_s,
        } => {
            modulated(
                &[*on_rate_per_s, 0.0],
                &[*mean_on_s, *mean_off_s],
                duration_s,
                rng,
                &mut out,
            )?;
        }
        ArrivalModel::Mmpp {
            rates_per_s,
            mean_dwell_s,
        } => modulated(rates_per_s, mean_dwell_s, duration_s, rng, &mut out)?,
    }
    Ok(out)
}

/// Arrival events of a fitted discrete-time MMPP ([`tailbound_model::Mmpp`], the chain
/// `tailbound-curves` fits): `(time [ns], work)` per event over `[0, duration_s)`, the chain
/// started in its stationary law. Each step of `m.step_s` carries an event with its state's
/// probability, of a work drawn from its state's sizes; stays and gaps between events are
/// drawn as geometric numbers of steps, so the cost is per event and per state change, not
/// per step. Deterministic for a seed.
pub fn fitted_events(
    m: &tailbound_model::Mmpp,
    duration_s: f64,
    seed: u64,
) -> Result<Vec<(u64, f64)>, GenError> {
    use tailbound_model::SizeModel;
    check(
        "duration_s",
        duration_s,
        duration_s.is_finite() && duration_s > 0.0 && duration_s < 1.8e10,
        POSITIVE,
    )?;
    m.validate()
        .map_err(|e| GenError::FittedMmpp(e.to_string()))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let steps = (duration_s / m.step_s).floor() as u64;
    let expected: f64 = m
        .stationary()
        .iter()
        .zip(&m.states)
        .map(|(pi, s)| pi * s.arrival_prob)
        .sum::<f64>()
        * steps as f64;
    if expected > MAX_REQUESTS as f64 {
        return Err(GenError::TooManyRequests {
            expected,
            max: MAX_REQUESTS,
        });
    }
    // geometric number of trials until the first success, ≥ 1; u64::MAX for p = 0
    let geometric = |p: f64, rng: &mut ChaCha8Rng| -> u64 {
        if p >= 1.0 {
            return 1;
        }
        if p <= 0.0 {
            return u64::MAX;
        }
        let u: f64 = 1.0 - rng.gen::<f64>(); // (0, 1]
        let k = (u.ln() / (-p).ln_1p()).floor() + 1.0;
        if k >= u64::MAX as f64 {
            u64::MAX
        } else {
            k as u64
        }
    };
    let pick = |weights: &mut dyn Iterator<Item = f64>, total: f64, rng: &mut ChaCha8Rng| {
        let mut u = rng.gen::<f64>() * total;
        let mut last = 0;
        for (i, w) in weights.enumerate() {
            last = i;
            if u < w {
                return i;
            }
            u -= w;
        }
        last
    };
    let pi = m.stationary();
    let mut state = pick(&mut pi.iter().copied(), pi.iter().sum(), &mut rng);
    let mut out = Vec::new();
    let mut step = 0u64;
    while step < steps {
        let stay = 1.0 - m.transition[state][state];
        let end = step.saturating_add(geometric(stay, &mut rng)).min(steps);
        let s = &m.states[state];
        let mut t = step;
        loop {
            t = t.saturating_add(geometric(s.arrival_prob, &mut rng) - 1);
            if t >= end {
                break;
            }
            let work = match &s.sizes {
                SizeModel::Exponential { mean } => {
                    exp(1.0 / mean, "fitted MMPP mean size")?.sample(&mut rng)
                }
                SizeModel::Empirical { atoms } => {
                    let i = pick(
                        &mut atoms.iter().map(|a| a[1]),
                        atoms.iter().map(|a| a[1]).sum(),
                        &mut rng,
                    );
                    atoms[i][0]
                }
            };
            out.push(((t as f64 * m.step_s * 1e9).round() as u64, work));
            t += 1;
        }
        step = end;
        if step < steps && stay > 0.0 {
            let row = &m.transition[state];
            state = pick(
                &mut row
                    .iter()
                    .enumerate()
                    .map(|(j, &p)| if j == state { 0.0 } else { p }),
                stay,
                &mut rng,
            );
        }
    }
    Ok(out)
}

/// A renewal process: i.i.d. gaps drawn from `gap`.
fn renewal(
    gap: &impl Distribution<f64>,
    duration_s: f64,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<f64>,
) {
    let mut t = 0.0;
    loop {
        t += gap.sample(rng);
        if t.is_nan() || t >= duration_s || full(out) {
            return;
        }
        out.push(t);
    }
}

/// Whether `out` holds as many arrivals as a trace may (generation stops; [`generate`]
/// reports it).
fn full(out: &[f64]) -> bool {
    out.len() as u64 > MAX_REQUESTS
}

/// A continuous-time MMPP with uniform jumps (see the module docs).
fn modulated(
    rates: &[f64],
    dwells: &[f64],
    duration_s: f64,
    rng: &mut ChaCha8Rng,
    out: &mut Vec<f64>,
) -> Result<(), GenError> {
    let n = rates.len().min(dwells.len());
    if n == 0 {
        return Err(GenError::MmppShape {
            rates: rates.len(),
            dwells: dwells.len(),
        });
    }
    let arrival: Vec<Option<Exp<f64>>> = rates[..n]
        .iter()
        .map(|&r| {
            if r > 0.0 {
                exp(r, "mmpp rate").map(Some)
            } else {
                Ok(None)
            }
        })
        .collect::<Result<_, _>>()?;
    let leave: Vec<Exp<f64>> = dwells[..n]
        .iter()
        .map(|&w| exp(1.0 / w, "mmpp mean_dwell_s"))
        .collect::<Result<_, _>>()?;
    // Start in the stationary distribution: P(i) ∝ mean dwell.
    let total: f64 = dwells[..n].iter().sum();
    let mut u = rng.gen::<f64>() * total;
    let mut state = n - 1;
    for (i, w) in dwells[..n].iter().enumerate() {
        if u < *w {
            state = i;
            break;
        }
        u -= w;
    }
    let mut t = 0.0;
    while t < duration_s {
        let end = if n > 1 {
            leave
                .get(state)
                .map_or(f64::INFINITY, |d| t + d.sample(rng))
        } else {
            f64::INFINITY
        };
        let stop = end.min(duration_s);
        if let Some(Some(gap)) = arrival.get(state) {
            loop {
                t += gap.sample(rng);
                if t.is_nan() || t >= stop || full(out) {
                    break;
                }
                out.push(t);
            }
        }
        // Memoryless: the arrival overshooting the state change is discarded.
        t = end;
        if n > 1 {
            // Uniform over the other n − 1 states.
            let j = rng.gen_range(0..n - 1);
            state = if j >= state { j + 1 } else { j };
        }
    }
    Ok(())
}

fn sample_size(dist: &SizeDist, rng: &mut ChaCha8Rng) -> Result<u64, GenError> {
    let bytes = match dist {
        SizeDist::Fixed { bytes } => *bytes as f64,
        SizeDist::Exponential { mean_bytes } => exp(1.0 / mean_bytes, "exponential mean_bytes")?
            .sample(rng)
            .ceil(),
        SizeDist::Pareto { min_bytes, shape } => Pareto::new(*min_bytes, *shape)
            .map_err(|_| GenError::Parameter {
                name: "pareto size shape".into(),
                value: *shape,
                expected: SHAPE,
            })?
            .sample(rng)
            .round(),
        SizeDist::Choice { sizes } => {
            sizes.choose(rng).copied().ok_or(GenError::EmptyChoice)? as f64
        }
    };
    // `as` saturates (NaN → 0); the clamp then keeps sizes in [1 B, 1 GiB].
    Ok((bytes as u64).clamp(1, MAX_SIZE_BYTES))
}

/// Generates a synthetic trace for `spec`, deterministic for `seed`. The trace is named
/// `synthetic <model> seed <seed>`.
pub fn generate(spec: &GenSpec, seed: u64) -> Result<Trace, GenError> {
    spec.validate()?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let times = arrivals(&spec.arrival, spec.duration_s, &mut rng)?;
    if times.is_empty() {
        return Err(GenError::NoRequests {
            duration_s: spec.duration_s,
            seed,
        });
    }
    if full(&times) {
        return Err(GenError::TooManyRequests {
            expected: times.len() as f64,
            max: MAX_REQUESTS,
        });
    }
    let (read, write) = match spec.vocabulary {
        Vocabulary::Disk => (Op::DiskRead, Op::DiskWrite),
        Vocabulary::KeyValue => (Op::Get, Op::Put),
    };
    let mut requests = Vec::with_capacity(times.len());
    for t in times {
        let size_bytes = sample_size(&spec.sizes, &mut rng)?;
        let op = if rng.gen_bool(spec.read_fraction) {
            read
        } else {
            write
        };
        requests.push(Request {
            // t < duration_s < 1.8e10 s, so this fits; rounding keeps the order.
            arrival_ns: (t * 1e9).round() as u64,
            size_bytes,
            op,
        });
    }
    tracing::debug!(requests = requests.len(), seed, "synthetic trace generated");
    Ok(Trace {
        name: format!("synthetic {} seed {seed}", spec.arrival.describe()),
        requests,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailbound_model::{Mmpp, MmppState, SizeModel};

    fn state(arrival_prob: f64, sizes: SizeModel) -> MmppState {
        MmppState {
            rate_per_s: arrival_prob / 1e-5,
            arrival_prob,
            sizes,
            intervals: 1,
            requests: 1,
            work: 1.0,
        }
    }

    /// A slow two-state chain on 10 µs steps: state 0 (an event every 100 steps, 1000 or 3000
    /// work) for 1 s on average, state 1 (every 10 steps, 100 work) for 0.25 s.
    fn two_states() -> Mmpp {
        let stay = |mean_s: f64| 1.0 - 1e-5 / mean_s;
        Mmpp {
            step_s: 1e-5,
            interval_s: 1.0,
            states: vec![
                state(
                    0.01,
                    SizeModel::Empirical {
                        atoms: vec![[1000.0, 0.5], [3000.0, 0.5]],
                    },
                ),
                state(0.1, SizeModel::Exponential { mean: 100.0 }),
            ],
            transition: vec![
                vec![stay(1.0), 1.0 - stay(1.0)],
                vec![1.0 - stay(0.25), stay(0.25)],
            ],
        }
    }

    #[test]
    fn a_fitted_mmpp_is_sampled_at_its_rates_sizes_and_stays() {
        let m = two_states();
        let ev = fitted_events(&m, 400.0, 3).unwrap();
        assert_eq!(ev, fitted_events(&m, 400.0, 3).unwrap(), "deterministic");
        assert_ne!(ev, fitted_events(&m, 400.0, 4).unwrap());
        assert!(
            ev.windows(2).all(|w| w[0].0 < w[1].0),
            "one event per step at most"
        );
        assert!(ev
            .iter()
            .all(|e| e.0 < 400_000_000_000 && e.0 % 10_000 == 0));
        // stationary law (0.8, 0.2): 0.8·1000 + 0.2·10000 = 2800 events/s
        let rate = ev.len() as f64 / 400.0;
        assert!((rate - 2800.0).abs() < 0.05 * 2800.0, "{rate}/s");
        // state 0's events carry its atoms, state 1's are continuous
        let atoms = ev.iter().filter(|e| e.1 == 1000.0 || e.1 == 3000.0).count();
        let expected = 0.8 * 1000.0 * 400.0;
        assert!((atoms as f64 - expected).abs() < 0.1 * expected, "{atoms}");
        // work: 0.8·1000·2000 + 0.2·10000·100 = 1.8 M per second
        let work: f64 = ev.iter().map(|e| e.1).sum::<f64>() / 400.0;
        assert!((work - 1.8e6).abs() < 0.05 * 1.8e6, "{work}");
        // stays: the high state's events come in runs of about 0.25 s
        let fast: Vec<u64> = ev
            .iter()
            .filter(|e| e.1 != 1000.0 && e.1 != 3000.0)
            .map(|e| e.0)
            .collect();
        let runs = 1 + fast.windows(2).filter(|w| w[1] - w[0] > 20_000_000).count();
        let per_run_s = fast.len() as f64 / 10_000.0 / runs as f64;
        assert!((0.15..0.35).contains(&per_run_s), "{per_run_s} s per stay");
    }

    #[test]
    fn a_fitted_mmpp_refuses_bad_durations_and_chains() {
        let m = two_states();
        for d in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = fitted_events(&m, d, 1).unwrap_err().to_string();
            assert!(e.contains("duration_s"), "{e}");
        }
        let mut bad = m.clone();
        bad.transition[0][0] = 0.5;
        let e = fitted_events(&bad, 1.0, 1).unwrap_err().to_string();
        assert!(e.contains("fitted MMPP") && e.contains("row 0"), "{e}");
        // more events than a trace may hold
        let e = fitted_events(&m, 1e7, 1).unwrap_err().to_string();
        assert!(e.contains("requests"), "{e}");
        // a state without arrivals gives none; a chain that never arrives, an empty list
        let mut quiet = m;
        quiet.states[1].arrival_prob = 0.0;
        quiet.states[0].arrival_prob = 0.0;
        assert!(fitted_events(&quiet, 10.0, 1).unwrap().is_empty());
    }

    fn spec(arrival: ArrivalModel) -> GenSpec {
        GenSpec {
            arrival,
            sizes: SizeDist::Fixed { bytes: 4096 },
            read_fraction: 0.5,
            duration_s: 10.0,
            vocabulary: Vocabulary::KeyValue,
        }
    }

    #[test]
    fn rejects_bad_parameters_with_their_name() {
        let bad = [
            spec(ArrivalModel::Poisson { rate_per_s: -1.0 }),
            spec(ArrivalModel::Poisson {
                rate_per_s: f64::NAN,
            }),
            spec(ArrivalModel::Pareto {
                rate_per_s: 10.0,
                shape: 1.0,
            }),
            spec(ArrivalModel::Mmpp {
                rates_per_s: vec![1.0, 2.0],
                mean_dwell_s: vec![1.0],
            }),
            spec(ArrivalModel::Mmpp {
                rates_per_s: vec![0.0, 0.0],
                mean_dwell_s: vec![1.0, 1.0],
            }),
            spec(ArrivalModel::OnOff {
                on_rate_per_s: 10.0,
                mean_on_s: 0.0,
                mean_off_s: 1.0,
            }),
            spec(ArrivalModel::Poisson { rate_per_s: 1e9 }),
            GenSpec {
                read_fraction: 1.5,
                ..spec(ArrivalModel::Poisson { rate_per_s: 1.0 })
            },
            GenSpec {
                duration_s: 0.0,
                ..spec(ArrivalModel::Poisson { rate_per_s: 1.0 })
            },
            GenSpec {
                sizes: SizeDist::Fixed { bytes: 0 },
                ..spec(ArrivalModel::Poisson { rate_per_s: 1.0 })
            },
            GenSpec {
                sizes: SizeDist::Choice { sizes: vec![] },
                ..spec(ArrivalModel::Poisson { rate_per_s: 1.0 })
            },
            GenSpec {
                sizes: SizeDist::Pareto {
                    min_bytes: 0.5,
                    shape: 2.0,
                },
                ..spec(ArrivalModel::Poisson { rate_per_s: 1.0 })
            },
        ];
        for s in bad {
            let err = generate(&s, 1).unwrap_err();
            assert!(!err.to_string().is_empty());
        }
        let err = generate(&spec(ArrivalModel::Poisson { rate_per_s: -1.0 }), 1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "poisson rate_per_s = -1 is invalid; expected a positive finite rate of at most 1e9 per second"
        );
    }

    #[test]
    fn on_off_has_silences() {
        let s = spec(ArrivalModel::OnOff {
            on_rate_per_s: 1000.0,
            mean_on_s: 0.1,
            mean_off_s: 1.0,
        });
        let t = generate(&s, 3).unwrap();
        let max_gap = t
            .requests
            .windows(2)
            .map(|w| w[1].arrival_ns - w[0].arrival_ns)
            .max()
            .unwrap();
        assert!(max_gap > 100_000_000, "max gap {max_gap} ns");
    }

    #[test]
    fn sizes_stay_in_range_and_vocabulary_is_kept() {
        let s = GenSpec {
            sizes: SizeDist::Pareto {
                min_bytes: 1.0,
                shape: 1.01,
            },
            vocabulary: Vocabulary::Disk,
            ..spec(ArrivalModel::Poisson { rate_per_s: 1000.0 })
        };
        let t = generate(&s, 9).unwrap();
        assert!(t
            .requests
            .iter()
            .all(|r| (1..=MAX_SIZE_BYTES).contains(&r.size_bytes)));
        assert!(t
            .requests
            .iter()
            .all(|r| matches!(r.op, Op::DiskRead | Op::DiskWrite)));
    }
}
