//! Plain-text tables for human-readable output.

use tailbound_model::units::format_duration_s;

/// Renders rows under headers, columns padded to their widest cell. A column whose cells all
/// look numeric (or are `-`) is right-aligned, header included.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cols = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            width[i] = width[i].max(cell.chars().count());
        }
    }
    let numeric = |s: &str| {
        s == "-"
            || s.chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.')
    };
    let right: Vec<bool> = (0..cols)
        .map(|i| i > 0 && rows.iter().all(|r| r.get(i).is_none_or(|c| numeric(c))))
        .collect();
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate().take(cols) {
            let pad = " ".repeat(width[i].saturating_sub(cell.chars().count()));
            if i > 0 {
                out.push_str("  ");
            }
            if right[i] {
                out.push_str(&pad);
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&pad);
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(headers.to_vec());
    let rules: Vec<String> = width.iter().map(|w| "─".repeat(*w)).collect();
    out.push_str(&line(rules.iter().map(String::as_str).collect()));
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

/// A latency bound's cell: the duration, or `unbounded`.
pub fn bound_cell(s: Option<f64>) -> String {
    s.map_or_else(|| "unbounded".to_string(), format_duration_s)
}

/// An SLO's cell: `p99.9 ≤ 20.00 ms`.
pub fn slo_cell(percentile: impl std::fmt::Display, slo_s: f64) -> String {
    format!("p{percentile} ≤ {}", format_duration_s(slo_s))
}

/// A number with 4 significant digits and an SI suffix: 1.235k, 56.78M, 0.5, 1.2e-5.
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    let (x, suffix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|&(div, _)| a >= div)
        .map_or((v, ""), |(div, suffix)| (v / div, suffix));
    if a != 0.0 && a < 0.01 {
        return format!("{v:.3e}");
    }
    let digits = if x == 0.0 {
        0.0
    } else {
        x.abs().log10().floor()
    };
    let decimals = (3.0 - digits).clamp(0.0, 3.0) as usize;
    let mut s = format!("{x:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + suffix
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_columns_and_right_aligns_numbers() {
        let t = render(
            &["name", "n"],
            &[
                vec!["a".into(), "5".into()],
                vec!["bbbb".into(), "123".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "name    n");
        assert_eq!(lines[2], "a       5");
        assert_eq!(lines[3], "bbbb  123");
    }

    #[test]
    fn si_suffixes() {
        assert_eq!(si(125e6), "125M");
        assert_eq!(si(1234.6), "1.235k");
        assert_eq!(si(56.78e6), "56.78M");
        assert_eq!(si(2e-5), "2.000e-5");
        assert_eq!(si(0.5), "0.5");
        assert_eq!(si(f64::NAN), "-");
    }

    #[test]
    fn bounds_and_slos_read_as_durations() {
        assert_eq!(bound_cell(Some(0.0125)), "12.50 ms");
        assert_eq!(bound_cell(None), "unbounded");
        assert_eq!(slo_cell(99.9, 0.02), "p99.9 ≤ 20.00 ms");
    }
}
