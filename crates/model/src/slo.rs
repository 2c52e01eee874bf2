//! Service-level objectives: "p99.9 of requests within 20 ms".

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SloError {
    #[error(
        "percentile {0} is out of range; expected a number strictly between 0 and 100, e.g. 99.9"
    )]
    Percentile(f64),
    #[error(
        "percentile {0:?} is not a number; expected a number strictly between 0 and 100, e.g. 99.9"
    )]
    PercentileText(String),
    #[error("SLO latency {0} s is not positive; expected a finite latency > 0, e.g. 20ms")]
    Latency(f64),
}

/// A percentile strictly between 0 and 100 (e.g. 99.9). 100 is rejected: no finite bound
/// holds with probability one for the stochastic models.
///
/// It is stored as its violation probability ε = 1 − p/100, so that percentiles with many
/// nines (snc-meister Fig. 13 goes to thirty) keep their precision: `from_nines(30)` is
/// ε = 1e-30, which an `f64` percentile could not tell from 100. Serialized as the percentile
/// value (e.g. `99.9`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Percentile {
    epsilon: f64,
}

impl Percentile {
    pub fn new(p: f64) -> Result<Percentile, SloError> {
        if p.is_finite() && p > 0.0 && p < 100.0 {
            Ok(Percentile {
                epsilon: (100.0 - p) / 100.0,
            })
        } else {
            Err(SloError::Percentile(p))
        }
    }

    /// The percentile whose violation probability is `epsilon`, strictly between 0 and 1.
    pub fn from_epsilon(epsilon: f64) -> Result<Percentile, SloError> {
        if epsilon.is_finite() && epsilon > 0.0 && epsilon < 1.0 {
            Ok(Percentile { epsilon })
        } else {
            Err(SloError::Percentile(100.0 * (1.0 - epsilon)))
        }
    }

    /// The percentile with `n` nines: 3 → p99.9 (ε = 10⁻³).
    pub fn from_nines(n: u32) -> Result<Percentile, SloError> {
        Percentile::from_epsilon(10f64.powi(-(n as i32)))
    }

    /// The percentile value, e.g. 99.9 (rounds to 100 beyond about fourteen nines).
    pub fn value(self) -> f64 {
        100.0 - 100.0 * self.epsilon
    }

    /// The violation probability ε = 1 − p/100.
    pub fn epsilon(self) -> f64 {
        self.epsilon
    }
}

impl TryFrom<f64> for Percentile {
    type Error = SloError;
    fn try_from(p: f64) -> Result<Percentile, SloError> {
        Percentile::new(p)
    }
}

impl From<Percentile> for f64 {
    fn from(p: Percentile) -> f64 {
        p.value()
    }
}

impl fmt::Display for Percentile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epsilon < 1e-12 {
            write!(f, "p(1-{:e})", self.epsilon)
        } else {
            write!(f, "p{}", self.value())
        }
    }
}

impl std::str::FromStr for Percentile {
    type Err = SloError;
    /// `99.9` (a number strictly between 0 and 100)
    fn from_str(s: &str) -> Result<Percentile, SloError> {
        let p: f64 = s
            .trim()
            .parse()
            .map_err(|_| SloError::PercentileText(s.to_string()))?;
        Percentile::new(p)
    }
}

/// The length of the windows an SLO is checked over [s]: both papers check a tenant's
/// percentile in every 3-minute window of its replay.
pub const SLO_WINDOW_S: f64 = 180.0;

/// A tail-latency objective: `percentile` of requests complete within `latency_s`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    /// latency target [s], finite and > 0
    pub latency_s: f64,
    pub percentile: Percentile,
}

impl Slo {
    pub fn new(latency_s: f64, percentile: f64) -> Result<Slo, SloError> {
        if !(latency_s.is_finite() && latency_s > 0.0) {
            return Err(SloError::Latency(latency_s));
        }
        Ok(Slo {
            latency_s,
            percentile: Percentile::new(percentile)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_percentile_100_and_zero_latency() {
        assert!(Percentile::new(100.0).is_err());
        assert!(Percentile::new(0.0).is_err());
        assert!(Percentile::new(f64::NAN).is_err());
        assert!(Slo::new(0.0, 99.9).is_err());
        assert!(Slo::new(f64::INFINITY, 99.9).is_err());
        let slo = Slo::new(0.02, 99.9).unwrap();
        assert!((slo.percentile.epsilon() - 0.001).abs() < 1e-12);
    }

    #[test]
    fn many_nines_keep_their_precision() {
        let p = Percentile::from_nines(30).unwrap();
        assert_eq!(p.epsilon(), 1e-30);
        assert_eq!(p.to_string(), "p(1-1e-30)");
        assert_eq!(Percentile::from_nines(3).unwrap().to_string(), "p99.9");
        assert!(Percentile::from_epsilon(0.0).is_err() && Percentile::from_epsilon(1.0).is_err());
        assert!((Percentile::new(99.9).unwrap().value() - 99.9).abs() < 1e-12);
    }

    #[test]
    fn percentile_parses_from_text_with_its_range_checked() {
        assert_eq!("99.9".parse::<Percentile>().unwrap().value(), 99.9);
        let e = "100".parse::<Percentile>().unwrap_err().to_string();
        assert!(e.contains("100") && e.contains("strictly between"), "{e}");
        let e = "p99".parse::<Percentile>().unwrap_err().to_string();
        assert!(e.contains("\"p99\""), "{e}");
    }

    #[test]
    fn percentile_deserialization_validates() {
        assert!(serde_json::from_str::<Percentile>("100").is_err());
        assert_eq!(
            serde_json::from_str::<Percentile>("99.9").unwrap().value(),
            99.9
        );
    }
}
