//! Flag parsers with ranges: every count, fraction, duration and rate a command takes is
//! checked while the command line is parsed, so that a value out of range fails at once, with
//! clap naming the flag and the value and the message saying what is accepted — before a file
//! is read or anything is allocated for it:
//!
//! `error: invalid value '0' for '--runs <N>': 0 is not in 1..=1000`
//!
//! Use them as `#[arg(long, value_parser = args::count(1, MAX))]`, and state the range in the
//! flag's doc comment (its `--help`). The ranges themselves are the limits of the library
//! that does the work where it has one (`tailbound_trace::MAX_REQUESTS`, ...), otherwise
//! what makes the work finish in reasonable time and memory.

use clap::builder::{RangedU64ValueParser, TypedValueParser};
use tailbound_model::units::{Bytes, BytesPerSec, Seconds};

/// The part of each trace that characterizes a tenant, as an operator chooses it
/// (`--characterize`): `whole` or `first-half` (the second half characterizes nothing an
/// operator runs; the experiments choose their own split).
pub fn characterize() -> impl TypedValueParser<Value = tailbound_trace::Part> {
    |s: &str| -> Result<tailbound_trace::Part, String> {
        match s.parse() {
            Ok(p @ (tailbound_trace::Part::Whole | tailbound_trace::Part::FirstHalf)) => Ok(p),
            _ => Err(format!(
                "{s:?} is not a part to characterize; expected whole or first-half"
            )),
        }
    }
}

/// A whole number in `lo..=hi` (counts of runs, tenants, threads...).
pub fn count(lo: u64, hi: u64) -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::<usize>::new().range(lo..=hi)
}

/// A finite number in `[lo, hi]`, or in `(lo, hi]` when `open_lo` (a factor that must be
/// positive).
pub fn real(lo: f64, hi: f64, open_lo: bool) -> impl TypedValueParser<Value = f64> {
    move |s: &str| -> Result<f64, String> {
        let v: f64 = s.trim().parse().map_err(|_| {
            format!(
                "{s:?} is not a number; expected {}",
                range_text(lo, hi, open_lo, &plain)
            )
        })?;
        within(v, lo, hi, open_lo, &plain)
    }
}

/// A duration (`20ms`, `1.5s`, `3min`) in `[lo_s, hi_s]`, or `(lo_s, hi_s]` when `open_lo`.
pub fn seconds(lo_s: f64, hi_s: f64, open_lo: bool) -> impl TypedValueParser<Value = Seconds> {
    move |s: &str| -> Result<Seconds, String> {
        let v: Seconds = s.parse().map_err(|e| format!("{e}"))?;
        within(v.0, lo_s, hi_s, open_lo, &duration_text).map(Seconds)
    }
}

/// A rate (`1Gbit`, `125MB/s`) in `[lo, hi]` bytes/s.
pub fn rate(lo: f64, hi: f64) -> impl TypedValueParser<Value = BytesPerSec> {
    move |s: &str| -> Result<BytesPerSec, String> {
        let v: BytesPerSec = s.parse().map_err(|e| format!("{e}"))?;
        within(v.0, lo, hi, false, &rate_text).map(BytesPerSec)
    }
}

/// A size (`4KiB`, `1MB`) in `[lo, hi]` bytes.
pub fn size(lo: f64, hi: f64) -> impl TypedValueParser<Value = Bytes> {
    move |s: &str| -> Result<Bytes, String> {
        let v: Bytes = s.parse().map_err(|e| format!("{e}"))?;
        within(v.0, lo, hi, false, &size_text).map(Bytes)
    }
}

/// The most link rate any command accepts: 10 Tbit/s (10000Gbit) [bytes/s].
pub const MAX_LINK_BYTES_PER_S: f64 = 1.25e12;
/// The least: 1 kbit/s [bytes/s].
pub const MIN_LINK_BYTES_PER_S: f64 = 125.0;

/// A link rate from 1 Kbit/s to 10 Tbit/s.
pub fn link() -> impl TypedValueParser<Value = BytesPerSec> {
    rate(MIN_LINK_BYTES_PER_S, MAX_LINK_BYTES_PER_S)
}

fn within(
    v: f64,
    lo: f64,
    hi: f64,
    open_lo: bool,
    show: &dyn Fn(f64) -> String,
) -> Result<f64, String> {
    let above_lo = if open_lo { v > lo } else { v >= lo };
    if v.is_finite() && above_lo && v <= hi {
        Ok(v)
    } else {
        Err(format!(
            "{} is out of range; expected {}",
            show(v),
            range_text(lo, hi, open_lo, show)
        ))
    }
}

fn range_text(lo: f64, hi: f64, open_lo: bool, show: &dyn Fn(f64) -> String) -> String {
    if open_lo {
        format!("more than {} and at most {}", show(lo), show(hi))
    } else {
        format!("{} to {}", show(lo), show(hi))
    }
}

fn plain(v: f64) -> String {
    format!("{v}")
}

/// `1ms`, `2.5s`, `10min`: the unit that gives the shortest exact text.
fn duration_text(s: f64) -> String {
    if !s.is_finite() || s == 0.0 {
        return format!("{s}s");
    }
    // beyond a few hours minutes grow unreadable: seconds in scientific notation (`1e6s`)
    if s.abs() >= 1e4 {
        return format!("{s:e}s");
    }
    for (scale, unit) in [(60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "us")] {
        if s.abs() >= scale {
            return format!("{}{unit}", round_sig(s / scale));
        }
    }
    format!("{}ns", round_sig(s * 1e9))
}

/// `1Kbit`, `10Gbit`, `10000Gbit`: units the rate parser takes (it has none above Gbit).
fn rate_text(bytes_per_s: f64) -> String {
    let bits = bytes_per_s * 8.0;
    for (scale, unit) in [(1e9, "Gbit"), (1e6, "Mbit"), (1e3, "Kbit")] {
        if bits.abs() >= scale {
            return format!("{}{unit}", round_sig(bits / scale));
        }
    }
    format!("{}bit", round_sig(bits))
}

/// `1B`, `4KiB`, `1GiB`.
fn size_text(bytes: f64) -> String {
    for (scale, unit) in [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ] {
        let scale = scale as f64;
        if bytes.abs() >= scale {
            return format!("{}{unit}", round_sig(bytes / scale));
        }
    }
    format!("{}B", round_sig(bytes))
}

/// At most 6 significant digits, no trailing zeros.
fn round_sig(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Flags {
        #[arg(long, value_parser = count(1, 1000), default_value_t = 1)]
        runs: usize,
        #[arg(long, value_parser = real(0.0, 10.0, true), default_value_t = 1.0)]
        speed_up: f64,
        #[arg(long, value_parser = seconds(1e-3, 3600.0, false), default_value = "1s")]
        window: Seconds,
        #[arg(long, value_parser = link(), default_value = "1Gbit")]
        link: BytesPerSec,
    }

    fn err(args: &[&str]) -> String {
        let mut all = vec!["t"];
        all.extend_from_slice(args);
        Flags::try_parse_from(all).unwrap_err().to_string()
    }

    #[test]
    fn out_of_range_values_name_the_flag_and_the_range() {
        let e = err(&["--runs", "0"]);
        assert!(e.contains("--runs") && e.contains("1..=1000"), "{e}");
        let e = err(&["--runs", "100000000"]);
        assert!(e.contains("--runs"), "{e}");
        let e = err(&["--speed-up", "0"]);
        assert!(
            e.contains("--speed-up") && e.contains("more than 0 and at most 10"),
            "{e}"
        );
        let e = err(&["--speed-up", "nan"]);
        assert!(
            e.contains("--speed-up") && e.contains("out of range"),
            "{e}"
        );
        let e = err(&["--window", "0.1ms"]);
        assert!(e.contains("--window") && e.contains("1ms to 60min"), "{e}");
        let e = err(&["--window", "1e12s"]);
        assert!(e.contains("1e12s is out of range"), "{e}");
        let e = err(&["--link", "20000Gbit"]);
        assert!(
            e.contains("--link") && e.contains("1Kbit to 10000Gbit"),
            "{e}"
        );
        let e = err(&["--link", "fast"]);
        assert!(e.contains("--link") && e.contains("invalid rate"), "{e}");
    }

    #[test]
    fn values_in_range_parse() {
        let f = Flags::try_parse_from([
            "t",
            "--runs",
            "1000",
            "--speed-up",
            "10",
            "--link",
            "10000Gbit",
        ])
        .unwrap();
        assert_eq!((f.runs, f.speed_up), (1000, 10.0));
        assert_eq!(f.link.0, 1.25e12);
        assert_eq!(f.window.0, 1.0);
    }
}
