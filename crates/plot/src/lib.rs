//! Self-contained SVG charts for tailbound's reports: line and step series on linear or log
//! axes, with ticks, labels, a legend, and several panels side by side in one file.
//!
//! This crate knows nothing about traffic or latency; commands build [`Chart`]s from their
//! results and write [`Figure::to_svg`], and [`Figure::to_csv`] for the data behind it. The SVG uses only basic elements and the generic
//! `sans-serif` font, so it renders the same in browsers and in converters such as rsvg.
//!
//! ```
//! use tailbound_plot::{Chart, Figure, Series};
//! let chart = Chart::new("r-b curve")
//!     .x_label("rate [bytes/s]")
//!     .y_label("burst [bytes]")
//!     .series(Series::line("trace0000", vec![(0.0, 10.0), (1.0, 4.0), (3.0, 1.0)]));
//! let svg = Figure::new(vec![chart]).to_svg().unwrap();
//! assert!(svg.starts_with("<svg"));
//! ```

use std::fmt::Write as _;

/// How an axis maps values to positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// base-10 logarithmic; non-positive values are left out
    Log,
}

/// Radius of a data marker [px].
const MARKER_R: f64 = 3.0;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// straight lines between points
    Line,
    /// horizontal then vertical steps (a value holds until the next point)
    Step,
    /// markers only
    Points,
    /// measurements: markers joined by straight segments on screen (nothing is claimed
    /// between samples, so no interpolation in data space)
    Samples,
}

/// One named data series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: Style::Line,
        }
    }
    pub fn step(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            style: Style::Step,
            ..Series::line(name, points)
        }
    }
    pub fn points(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            style: Style::Points,
            ..Series::line(name, points)
        }
    }
    pub fn samples(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            style: Style::Samples,
            ..Series::line(name, points)
        }
    }
}

/// One panel: axes, labels and series.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// force the y axis to include zero (linear scale only)
    pub y_from_zero: bool,
    pub series: Vec<Series>,
}

impl Chart {
    pub fn new(title: impl Into<String>) -> Chart {
        Chart {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            y_from_zero: true,
            series: Vec::new(),
        }
    }
    pub fn x_label(mut self, l: impl Into<String>) -> Chart {
        self.x_label = l.into();
        self
    }
    pub fn y_label(mut self, l: impl Into<String>) -> Chart {
        self.y_label = l.into();
        self
    }
    pub fn x_scale(mut self, s: Scale) -> Chart {
        self.x_scale = s;
        self
    }
    pub fn y_scale(mut self, s: Scale) -> Chart {
        self.y_scale = s;
        self
    }
    pub fn y_from_zero(mut self, yes: bool) -> Chart {
        self.y_from_zero = yes;
        self
    }
    pub fn series(mut self, s: Series) -> Chart {
        self.series.push(s);
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    #[error("chart {0:?} has no finite points to plot")]
    NoData(String),
    #[error("a figure needs at least one chart")]
    NoCharts,
}

/// Several charts laid out in a grid, written as one SVG document.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub charts: Vec<Chart>,
    /// charts per row
    pub columns: usize,
    /// size of one panel [px]
    pub panel_width: f64,
    pub panel_height: f64,
}

const PALETTE: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

const MARGIN_LEFT: f64 = 78.0;
const MARGIN_RIGHT: f64 = 18.0;
const MARGIN_TOP: f64 = 34.0;
const MARGIN_BOTTOM: f64 = 50.0;

impl Figure {
    pub fn new(charts: Vec<Chart>) -> Figure {
        let columns = charts.len().clamp(1, 2);
        Figure {
            charts,
            columns,
            panel_width: 560.0,
            panel_height: 380.0,
        }
    }

    pub fn columns(mut self, c: usize) -> Figure {
        self.columns = c.max(1);
        self
    }

    /// Renders the figure. Fails only when a chart has nothing to show.
    pub fn to_svg(&self) -> Result<String, PlotError> {
        if self.charts.is_empty() {
            return Err(PlotError::NoCharts);
        }
        let rows = self.charts.len().div_ceil(self.columns);
        let (w, h) = (
            self.panel_width * self.columns as f64,
            self.panel_height * rows as f64,
        );
        let mut out = String::new();
        let _ = writeln!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(out, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        for (i, chart) in self.charts.iter().enumerate() {
            let x0 = (i % self.columns) as f64 * self.panel_width;
            let y0 = (i / self.columns) as f64 * self.panel_height;
            render_chart(&mut out, chart, x0, y0, self.panel_width, self.panel_height)?;
        }
        out.push_str("</svg>\n");
        Ok(out)
    }

    /// The figure's data as CSV, one row per point of every series of every chart:
    /// `chart,series,x,y,x_axis,y_axis`, where the axis columns carry the chart's axis labels
    /// with their units (`time [s]`), so one file holds panels of different quantities.
    /// Values are written in full precision; a non-finite coordinate is an empty field.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("chart,series,x,y,x_axis,y_axis\n");
        for chart in &self.charts {
            for series in &chart.series {
                for &(x, y) in &series.points {
                    let _ = writeln!(
                        out,
                        "{},{},{},{},{},{}",
                        csv_field(&chart.title),
                        csv_field(&series.name),
                        csv_number(x),
                        csv_number(y),
                        csv_field(&chart.x_label),
                        csv_field(&chart.y_label)
                    );
                }
            }
        }
        out
    }
}

/// Maps data values on one axis to pixels.
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    px_lo: f64,
    px_hi: f64,
}

impl Axis {
    fn t(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log => v.log10(),
        }
    }
    fn px(&self, v: f64) -> f64 {
        let (a, b) = (self.t(self.lo), self.t(self.hi));
        self.px_lo + (self.t(v) - a) / (b - a) * (self.px_hi - self.px_lo)
    }
    fn shows(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }
    /// Tick values: 1-2-5 steps on a linear axis, powers of ten on a log axis.
    fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Linear => {
                let step = nice_step((self.hi - self.lo) / 6.0);
                let mut v = (self.lo / step).ceil() * step;
                let mut out = Vec::new();
                while v <= self.hi + step * 1e-9 && out.len() < 50 {
                    out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                    v += step;
                }
                out
            }
            Scale::Log => {
                let (a, b) = (
                    self.lo.log10().floor() as i32,
                    self.hi.log10().ceil() as i32,
                );
                // narrow ranges get 1-2-5 ticks so that at least a few labels show
                let mantissas: &[f64] = if b - a <= 2 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                let stride = ((b - a) / 8 + 1).max(1);
                (a..=b)
                    .step_by(stride as usize)
                    .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
                    .filter(|&v| v >= self.lo * (1.0 - 1e-9) && v <= self.hi * (1.0 + 1e-9))
                    .collect()
            }
        }
    }
}

fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Data range on one axis, padded so that a flat series still has height.
fn range(values: impl Iterator<Item = f64>, scale: Scale, from_zero: bool) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    match scale {
        Scale::Linear => {
            if from_zero {
                lo = lo.min(0.0);
                hi = hi.max(0.0);
            }
            if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
                let pad = hi.abs().max(1.0) * 0.5;
                lo -= pad;
                hi += pad;
            }
            Some((lo, hi + (hi - lo) * 0.04))
        }
        Scale::Log => {
            if hi / lo < 10.0 {
                let mid = (hi * lo).sqrt();
                return Some((mid / 10f64.sqrt(), mid * 10f64.sqrt()));
            }
            Some((lo, hi * 1.3))
        }
    }
}

/// A short, readable tick label: 1.5k, 20M, 0.001, 1e-6.
pub fn format_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if a >= 1e3 {
        for (div, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if a >= div {
                return format!("{}{suffix}", trim(v / div));
            }
        }
    }
    if a < 1e-3 {
        return format!("{v:.0e}");
    }
    trim(v)
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Splits every segment into `parts` equal pieces (in data space).
fn densify(points: &[(f64, f64)], parts: usize) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * parts);
    for (k, &(x, y)) in points.iter().enumerate() {
        if k > 0 {
            let (x0, y0) = points[k - 1];
            for i in 1..parts {
                let f = i as f64 / parts as f64;
                out.push((x0 + f * (x - x0), y0 + f * (y - y0)));
            }
        }
        out.push((x, y));
    }
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn render_chart(
    out: &mut String,
    chart: &Chart,
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
) -> Result<(), PlotError> {
    let (pl, pr) = (x0 + MARGIN_LEFT, x0 + w - MARGIN_RIGHT);
    let (pt, pb) = (y0 + MARGIN_TOP, y0 + h - MARGIN_BOTTOM);
    let probe_x = Axis {
        scale: chart.x_scale,
        lo: 1.0,
        hi: 10.0,
        px_lo: 0.0,
        px_hi: 1.0,
    };
    let probe_y = Axis {
        scale: chart.y_scale,
        ..probe_x
    };
    let visible = |&(x, y): &(f64, f64)| probe_x.shows(x) && probe_y.shows(y);
    let pts = || {
        chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(visible)
    };
    let no_data = || PlotError::NoData(chart.title.clone());
    let (xlo, xhi) = range(pts().map(|p| p.0), chart.x_scale, false).ok_or_else(no_data)?;
    let (ylo, yhi) =
        range(pts().map(|p| p.1), chart.y_scale, chart.y_from_zero).ok_or_else(no_data)?;
    let xa = Axis {
        scale: chart.x_scale,
        lo: xlo,
        hi: xhi,
        px_lo: pl,
        px_hi: pr,
    };
    let ya = Axis {
        scale: chart.y_scale,
        lo: ylo,
        hi: yhi,
        px_lo: pb,
        px_hi: pt,
    };

    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="14" font-weight="bold">{}</text>"#,
        (pl + pr) / 2.0,
        y0 + 20.0,
        escape(&chart.title)
    );
    // grid and ticks
    for v in xa.ticks() {
        let x = xa.px(v);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{pt:.1}" x2="{x:.1}" y2="{pb:.1}" stroke="#e5e5e5"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            pb + 16.0,
            format_tick(v)
        );
    }
    for v in ya.ticks() {
        let y = ya.px(v);
        let _ = writeln!(
            out,
            r##"<line x1="{pl:.1}" y1="{y:.1}" x2="{pr:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            pl - 6.0,
            y + 4.0,
            format_tick(v)
        );
    }
    let _ = writeln!(
        out,
        r##"<rect x="{pl:.1}" y="{pt:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
        pr - pl,
        pb - pt
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (pl + pr) / 2.0,
        pb + 36.0,
        escape(&chart.x_label)
    );
    let (lx, ly) = (x0 + 16.0, (pt + pb) / 2.0);
    let _ = writeln!(
        out,
        r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"#,
        escape(&chart.y_label)
    );

    let _ = writeln!(
        out,
        r#"<svg x="{pl:.1}" y="{pt:.1}" width="{:.1}" height="{:.1}" viewBox="{pl:.1} {pt:.1} {:.1} {:.1}" overflow="hidden">"#,
        pr - pl,
        pb - pt,
        pr - pl,
        pb - pt
    );
    // every drawn point and vertex, for placing the legend where it hides the least
    let mut drawn: Vec<(f64, f64)> = Vec::new();
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        // A line means linear interpolation in data space; on a log axis that is a curve, so
        // each segment is drawn through intermediate points (before dropping the points a
        // log axis cannot show, so a segment from 0 still appears).
        let data = if s.style == Style::Line
            && (chart.x_scale == Scale::Log || chart.y_scale == Scale::Log)
        {
            densify(&s.points, 32)
        } else {
            s.points.clone()
        };
        let mut xy: Vec<(f64, f64)> = data
            .into_iter()
            .filter(visible)
            .map(|(x, y)| (xa.px(x), ya.px(y)))
            .collect();
        if s.style == Style::Step {
            let mut stepped = Vec::with_capacity(xy.len() * 2);
            for (k, &(x, y)) in xy.iter().enumerate() {
                if k > 0 {
                    stepped.push((x, stepped.last().map_or(y, |p: &(f64, f64)| p.1)));
                }
                stepped.push((x, y));
            }
            xy = stepped;
        }
        drawn.extend(&xy);
        match s.style {
            Style::Points => {
                for p in xy {
                    marker(out, p, color);
                    out.push('\n');
                }
            }
            Style::Line | Style::Step | Style::Samples => {
                if s.style == Style::Samples {
                    for &p in &xy {
                        marker(out, p, color);
                        out.push('\n');
                    }
                }
                let mut d = String::with_capacity(xy.len() * 16);
                for (k, (x, y)) in xy.iter().enumerate() {
                    let _ = write!(d, "{}{x:.2},{y:.2}", if k == 0 { "M" } else { " L" });
                }
                let _ = writeln!(
                    out,
                    r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.6"/>"#
                );
            }
        }
    }
    out.push_str("</svg>\n");

    let named: Vec<_> = chart
        .series
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.name.is_empty())
        .collect();
    if !named.is_empty() {
        let longest = named.iter().map(|(_, s)| s.name.len()).max().unwrap_or(0) as f64;
        let bw = 34.0 + longest * 6.6;
        let bh = named.len() as f64 * 16.0 + 6.0;
        let (bx, by) = legend_corner(&drawn, (pl, pt, pr, pb), (bw, bh));
        let _ = writeln!(
            out,
            r##"<rect x="{bx:.1}" y="{by:.1}" width="{bw:.1}" height="{bh:.1}" fill="white" fill-opacity="0.85" stroke="#999"/>"##,
        );
        for (row, (i, s)) in named.iter().enumerate() {
            let y = by + 14.0 + row as f64 * 16.0;
            let color = PALETTE[i % PALETTE.len()];
            // the key is drawn as the series is: a line, a marker, or both
            if s.style != Style::Points {
                let _ = write!(
                    out,
                    r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2.5"/>"#,
                    bx + 6.0,
                    y - 4.0,
                    bx + 24.0,
                    y - 4.0,
                );
            }
            if matches!(s.style, Style::Points | Style::Samples) {
                marker(out, (bx + 15.0, y - 4.0), color);
            }
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
                bx + 28.0,
                y,
                escape(&s.name)
            );
        }
    }
    Ok(())
}

/// A data marker at pixel `(x, y)` (no line break: a legend key continues the line).
fn marker(out: &mut String, (x, y): (f64, f64), color: &str) {
    let _ = write!(
        out,
        r#"<circle cx="{x:.2}" cy="{y:.2}" r="{MARKER_R}" fill="{color}"/>"#
    );
}

/// Where a legend box of `size` (w, h) goes in the plot area `area` (left, top, right, bottom):
/// the inside corner, of top-right, top-left, bottom-right and bottom-left, over the fewest of
/// the `drawn` points (the first of them on a tie).
fn legend_corner(drawn: &[(f64, f64)], area: (f64, f64, f64, f64), size: (f64, f64)) -> (f64, f64) {
    const INSET: f64 = 8.0;
    let (pl, pt, pr, pb) = area;
    let (w, h) = size;
    let corners = [
        (pr - w - INSET, pt + INSET),
        (pl + INSET, pt + INSET),
        (pr - w - INSET, pb - h - INSET),
        (pl + INSET, pb - h - INSET),
    ];
    let hidden = |&(x, y): &(f64, f64)| {
        drawn
            .iter()
            .filter(|&&(px, py)| {
                px >= x - MARKER_R
                    && px <= x + w + MARKER_R
                    && py >= y - MARKER_R
                    && py <= y + h + MARKER_R
            })
            .count()
    };
    corners
        .iter()
        .copied()
        .min_by_key(hidden)
        .unwrap_or(corners[0])
}

/// A CSV field, quoted (RFC 4180) when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A number in full precision (Rust's shortest round-trip form), or nothing when not finite.
fn csv_number(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_holds_every_point_with_its_chart_series_and_axes() {
        let a = Chart::new("rtt, loaded")
            .x_label("time [s]")
            .y_label("RTT [µs]")
            .series(Series::line("p\"99\"", vec![(0.5, 1.0), (1.0, f64::NAN)]));
        let b = Chart::new("cdf")
            .x_label("RTT [µs]")
            .y_label("fraction")
            .series(Series::step("all", vec![(0.1, 1e-7)]));
        let csv = Figure::new(vec![a, b]).to_csv();
        assert_eq!(
            csv,
            "chart,series,x,y,x_axis,y_axis\n\
             \"rtt, loaded\",\"p\"\"99\"\"\",0.5,1,time [s],RTT [µs]\n\
             \"rtt, loaded\",\"p\"\"99\"\"\",1,,time [s],RTT [µs]\n\
             cdf,all,0.1,0.0000001,RTT [µs],fraction\n"
        );
    }

    #[test]
    fn renders_every_series_and_escapes_labels() {
        let c = Chart::new("a <b> & c")
            .x_label("t [s]")
            .series(Series::line("one", vec![(0.0, 1.0), (1.0, 2.0)]))
            .series(Series::step("two", vec![(0.0, 0.5), (2.0, 1.5)]));
        let svg = Figure::new(vec![c]).to_svg().unwrap();
        assert_eq!(svg.matches("<path").count(), 2);
        assert!(svg.contains("a &lt;b&gt; &amp; c"));
        assert!(svg.contains(">one<") && svg.contains(">two<"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn log_axis_drops_non_positive_points_and_errs_when_empty() {
        let c = Chart::new("log").x_scale(Scale::Log).series(Series::points(
            "p",
            vec![(0.0, 1.0), (-1.0, 2.0), (10.0, 3.0)],
        ));
        let svg = Figure::new(vec![c.clone()]).to_svg().unwrap();
        // the one point kept, and the legend's key
        assert_eq!(svg.matches("<circle").count(), 2);
        let empty = Chart::new("empty")
            .x_scale(Scale::Log)
            .series(Series::line("p", vec![(0.0, 1.0), (f64::NAN, 1.0)]));
        assert_eq!(
            Figure::new(vec![empty]).to_svg(),
            Err(PlotError::NoData("empty".into()))
        );
        assert_eq!(Figure::new(vec![]).to_svg(), Err(PlotError::NoCharts));
    }

    #[test]
    fn legend_keys_are_drawn_as_their_series() {
        let c = Chart::new("k")
            .series(Series::line("l", vec![(0.0, 1.0), (1.0, 2.0)]))
            .series(Series::points("p", vec![(0.5, 1.5)]))
            .series(Series::samples("s", vec![(0.0, 2.0), (1.0, 1.0)]));
        let svg = Figure::new(vec![c]).to_svg().unwrap();
        let legend: Vec<&str> = svg
            .lines()
            .filter(|l| {
                l.contains("<text") && (l.contains(">l<") || l.contains(">p<") || l.contains(">s<"))
            })
            .collect();
        assert_eq!(legend.len(), 3, "{svg}");
        // line: a stroke and no marker; points: a marker and no stroke; samples: both
        assert!(legend[0].contains("<line") && !legend[0].contains("<circle"));
        assert!(!legend[1].contains("<line") && legend[1].contains("<circle"));
        assert!(legend[2].contains("<line") && legend[2].contains("<circle"));
    }

    #[test]
    fn legend_moves_off_the_data() {
        let legend_x = |c: Chart| -> f64 {
            let svg = Figure::new(vec![c]).to_svg().unwrap();
            let rect = svg
                .lines()
                .find(|l| l.contains("fill-opacity"))
                .unwrap()
                .to_string();
            let x = rect
                .split("x=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            x.parse().unwrap()
        };
        // data along the bottom: the legend stays top-right
        let low: Vec<(f64, f64)> = (0..20).map(|i| (i as f64, 0.0)).collect();
        let mut c = Chart::new("c").series(Series::points("low", low.clone()));
        let right = legend_x(c.clone());
        // a cluster in the top-right corner moves it to the top left
        c = c.series(Series::points(
            "top right",
            (0..10)
                .map(|i| (19.0 - 0.1 * i as f64, 10.0 - 0.1 * i as f64))
                .collect(),
        ));
        let moved = legend_x(c);
        assert!(moved < right, "legend at x {moved}, before {right}");
    }

    #[test]
    fn samples_are_markers_joined_straight() {
        let c = Chart::new("s").x_scale(Scale::Log).series(Series::samples(
            "m",
            vec![(1.0, 1.0), (100.0, 2.0), (1e4, 3.0)],
        ));
        let svg = Figure::new(vec![c]).to_svg().unwrap();
        // three samples and the legend's key
        assert_eq!(svg.matches("<circle").count(), 4);
        // three points, no interpolated ones: M + 2 L
        let path = svg.lines().find(|l| l.starts_with("<path")).unwrap();
        assert_eq!(path.matches(" L").count(), 2, "{path}");
    }

    #[test]
    fn lines_on_log_axes_follow_linear_interpolation() {
        let pts = densify(&[(1.0, 1.0), (3.0, 5.0)], 4);
        assert_eq!(
            pts,
            vec![(1.0, 1.0), (1.5, 2.0), (2.0, 3.0), (2.5, 4.0), (3.0, 5.0)]
        );
    }

    #[test]
    fn ticks_are_round_numbers_inside_the_range() {
        let a = Axis {
            scale: Scale::Linear,
            lo: 0.0,
            hi: 97.0,
            px_lo: 0.0,
            px_hi: 100.0,
        };
        assert_eq!(a.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0]);
        let l = Axis {
            scale: Scale::Log,
            lo: 0.5,
            hi: 2000.0,
            ..a
        };
        assert_eq!(l.ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
        let narrow = Axis {
            scale: Scale::Log,
            lo: 12.0,
            hi: 60.0,
            ..a
        };
        assert_eq!(narrow.ticks(), vec![20.0, 50.0]);
        assert_eq!(format_tick(125e6), "125M");
        assert_eq!(format_tick(0.25), "0.25");
        assert_eq!(format_tick(2e-5), "2e-5");
    }
}
