//! Quantities with units, parsed at the edge: `20ms`, `1Gbit`, `64KiB`.
//!
//! Inside tailbound quantities are `f64` fields whose names carry their unit (`delay_s`,
//! `rate_bytes_per_s`, `burst_bytes`); these parsers turn what a person types into those base
//! units: seconds, bytes, bytes per second.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnitError {
    #[error("invalid duration {0:?}; expected a positive number with a unit: ns, us, ms, s, min (e.g. 20ms)")]
    Duration(String),
    #[error("invalid rate {0:?}; expected a positive number with a unit: bit, Kbit, Mbit, Gbit (per second), B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s (e.g. 1Gbit)")]
    Rate(String),
    #[error("invalid size {0:?}; expected a positive number of bytes with an optional unit: B, KB, MB, GB, KiB, MiB, GiB (e.g. 64KiB)")]
    Size(String),
    /// A spelling that two readers take for different quantities (tc(8) is one of them).
    #[error("ambiguous {what} {value:?}: {reason}")]
    Ambiguous {
        what: &'static str,
        value: String,
        reason: &'static str,
    },
}

/// Splits `"20ms"` into `(20.0, "ms")`; the number must be finite and non-negative.
fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == 'e' || c == 'E')
                    && s[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+'))
                || ((c == '-' || c == '+') && i > 0 && matches!(&s[i - 1..i], "e" | "E")))
        })
        .map_or(s.len(), |(i, _)| i);
    let value: f64 = s[..end].parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some((value, s[end..].trim()))
}

/// Parses a duration into seconds. A bare number is seconds. Zero is accepted here; callers
/// that need a positive duration (an SLO) check that themselves.
pub fn parse_duration_s(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError::Duration(s.to_string());
    let (v, unit) = split_number(s).ok_or_else(err)?;
    // seconds per unit as a quotient of exact integers: 10us is 10 / 1e6, the f64 nearest
    // 1e-5, where 10 × 1e-6 (1e-6 is not exact) would be 9.999999999999999e-6
    let (num, den) = match unit {
        "" | "s" | "sec" | "secs" => (1.0, 1.0),
        "ms" | "msec" | "msecs" => (1.0, 1e3),
        "us" | "µs" | "usec" | "usecs" => (1.0, 1e6),
        "ns" => (1.0, 1e9),
        "min" => (60.0, 1.0),
        "m" => {
            return Err(UnitError::Ambiguous {
                what: "duration",
                value: s.to_string(),
                reason: "`m` reads as minutes or as milliseconds; write min or ms",
            })
        }
        _ => return Err(err()),
    };
    Ok(v * num / den)
}

/// Parses a rate into bytes per second. Bit units (`1Gbit`, `100Mbit/s`; tc(8) spells them the
/// same and means the same) are decimal and divided by 8; byte units are `B/s` with a decimal
/// (`KB/s`, `MB/s`, `GB/s`) or binary (`KiB/s`, `MiB/s`, `GiB/s`) prefix. A bare number is
/// bytes per second. Spellings two readers take for different rates are refused with
/// [`UnitError::Ambiguous`]: `Mbps` (megabits per second in common use, megabytes per second
/// in tc(8)) and `Mb/s` (one letter's case from `MB/s`).
pub fn parse_rate_bytes_per_s(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError::Rate(s.to_string());
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let bits = |scale: f64| v * scale / 8.0;
    let lower = unit.to_ascii_lowercase();
    let bit_unit = lower.strip_suffix("/s").unwrap_or(&lower);
    let rate = match bit_unit {
        "bit" => bits(1.0),
        "kbit" => bits(1e3),
        "mbit" => bits(1e6),
        "gbit" => bits(1e9),
        "bps" | "kbps" | "mbps" | "gbps" => {
            return Err(UnitError::Ambiguous {
                what: "rate",
                value: s.to_string(),
                reason: "`bps` means bits per second in common use and bytes per second in \
                         tc(8); write Mbit (bits) or MB/s (bytes)",
            })
        }
        _ => match unit {
            "" | "B/s" => v,
            "KB/s" | "kB/s" => v * 1e3,
            "MB/s" => v * 1e6,
            "GB/s" => v * 1e9,
            "KiB/s" => v * 1024.0,
            "MiB/s" => v * 1024.0 * 1024.0,
            "GiB/s" => v * 1024.0 * 1024.0 * 1024.0,
            _ if lower.ends_with("b/s") && !unit.ends_with("B/s") => {
                return Err(UnitError::Ambiguous {
                    what: "rate",
                    value: s.to_string(),
                    reason: "a lower-case b reads as bits, tailbound's byte rates are B/s; \
                             write Mbit (bits) or MB/s (bytes)",
                })
            }
            _ => return Err(err()),
        },
    };
    if rate > 0.0 {
        Ok(rate)
    } else {
        Err(err())
    }
}

/// Parses a size into bytes (`64KiB`, `1MB`, `512`): decimal (`KB`, `MB`, `GB`) or binary
/// (`KiB`, `MiB`, `GiB`) prefixes of `B`. tc(8)'s own spellings (`64k`, `64kb`, `1m`, `1mb`)
/// mean binary multiples there and decimal ones in most other tools: they are refused with
/// [`UnitError::Ambiguous`], as is a lower-case `b` (bits or bytes).
pub fn parse_size_bytes(s: &str) -> Result<f64, UnitError> {
    let err = || UnitError::Size(s.to_string());
    let (v, unit) = split_number(s).ok_or_else(err)?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ if matches!(
            unit.to_ascii_lowercase().as_str(),
            "b" | "k" | "m" | "g" | "kb" | "mb" | "gb"
        ) =>
        {
            return Err(UnitError::Ambiguous {
                what: "size",
                value: s.to_string(),
                reason: "tc(8) reads k, kb, m, mb, g, gb as multiples of 1024 bytes and b as \
                         bytes, other tools as multiples of 1000 and b as bits; write KB (1000) \
                         or KiB (1024), and B for bytes",
            })
        }
        _ => return Err(err()),
    };
    Ok(v * scale)
}

/// A duration [s] as typed on a command line or in a file: `20ms`, `1.5s`, `3min`, or a bare
/// number of seconds. Parsing ([`std::str::FromStr`]) accepts what [`parse_duration_s`] does.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Seconds(pub f64);

/// A rate [bytes/s] as typed: `1Gbit`, `100MB/s`, `64KiB/s` ([`parse_rate_bytes_per_s`]).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct BytesPerSec(pub f64);

/// A size [bytes] as typed: `64KiB`, `1MB`, `512` ([`parse_size_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Bytes(pub f64);

impl std::str::FromStr for Seconds {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Seconds, UnitError> {
        parse_duration_s(s).map(Seconds)
    }
}

impl std::str::FromStr for BytesPerSec {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<BytesPerSec, UnitError> {
        parse_rate_bytes_per_s(s).map(BytesPerSec)
    }
}

impl std::str::FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Bytes, UnitError> {
        parse_size_bytes(s).map(Bytes)
    }
}

/// Formats a duration in seconds with a readable unit: `20.0 ms`, `3.1 us`.
pub fn format_duration_s(s: f64) -> String {
    let a = s.abs();
    if a == 0.0 {
        "0 s".to_string()
    } else if a < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.1} us", s * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.3} s", s)
    }
}

/// Formats a byte count with a binary unit: `4.0 KiB`.
pub fn format_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_s("20ms").unwrap(), 0.02);
        assert_eq!(parse_duration_s("1.5").unwrap(), 1.5);
        // the f64 nearest the decimal written, as a literal gives it
        assert_eq!(parse_duration_s("250us").unwrap(), 250e-6);
        assert_eq!(parse_duration_s("10us").unwrap(), 1e-5);
        assert_eq!(parse_duration_s("3ns").unwrap(), 3e-9);
        assert_eq!(parse_duration_s("0.5ms").unwrap(), 5e-4);
        assert_eq!(parse_duration_s("2min").unwrap(), 120.0);
        assert_eq!(parse_duration_s("1e-3s").unwrap(), 1e-3);
        assert!(parse_duration_s("-3ms").is_err());
        assert!(parse_duration_s("3 fortnights").is_err());
        assert!(parse_duration_s("").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bytes_per_s("1Gbit").unwrap(), 125e6);
        assert_eq!(parse_rate_bytes_per_s("10MB/s").unwrap(), 10e6);
        assert_eq!(parse_rate_bytes_per_s("8bit").unwrap(), 1.0);
        assert!(parse_rate_bytes_per_s("0Gbit").is_err());
        assert!(parse_rate_bytes_per_s("1Gbyte").is_err());
        assert_eq!(parse_rate_bytes_per_s("100Mbit/s").unwrap(), 12.5e6);
        assert_eq!(parse_rate_bytes_per_s("1mbit").unwrap(), 125e3);
        assert_eq!(parse_rate_bytes_per_s("2KiB/s").unwrap(), 2048.0);
    }

    /// Spellings that mean one rate to one reader and another to the next are refused, and
    /// the error says what to write instead.
    #[test]
    fn ambiguous_spellings_are_refused_with_the_alternatives() {
        for rate in ["100Mbps", "1gbps", "8bps", "10Mb/s", "10mb/s", "1kb/s"] {
            let e = parse_rate_bytes_per_s(rate).unwrap_err();
            assert!(matches!(e, UnitError::Ambiguous { .. }), "{rate}: {e}");
            assert!(
                e.to_string().contains("Mbit") && e.to_string().contains("MB/s"),
                "{e}"
            );
        }
        for size in ["64k", "64kb", "1m", "1mb", "2g", "512b", "1Kb"] {
            let e = parse_size_bytes(size).unwrap_err();
            assert!(matches!(e, UnitError::Ambiguous { .. }), "{size}: {e}");
            assert!(e.to_string().contains("KiB"), "{e}");
        }
        let e = parse_duration_s("5m").unwrap_err();
        assert!(e.to_string().contains("min or ms"), "{e}");
        assert_eq!(parse_size_bytes("4kB").unwrap(), 4000.0);
        assert_eq!(parse_duration_s("3min").unwrap(), 180.0);
        assert_eq!(parse_duration_s("2msec").unwrap(), 2e-3);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("64KiB").unwrap(), 65536.0);
        assert_eq!(parse_size_bytes("1MB").unwrap(), 1e6);
        assert_eq!(parse_size_bytes("512").unwrap(), 512.0);
        assert!(parse_size_bytes("NaN").is_err());
        assert!(parse_size_bytes("inf").is_err());
    }
}
