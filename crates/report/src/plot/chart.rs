//! What every figure shares: a colour-blind-safe palette with a marker shape per series (so a
//! figure printed in grey still tells the series apart), axes with round ticks on a linear or
//! log scale labelled in the unit of what they show, panels, legends and the figure's header.
//!
//! Every number on a figure is formatted here with a fixed number of digits, so the same
//! result always draws the same bytes.

use super::svg::{Anchor, Paint, Svg};
use crate::format::grouped;

/// Okabe and Ito's palette ("Color Universal Design", 2008): told apart with every common
/// kind of colour blindness. Yellow goes last: it is faint on white paper.
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// The `i`th colour of [`PALETTE`], repeated beyond eight.
pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Grid lines, frames and secondary text.
const GRID: &str = "#e3e3e3";
const MUTED: &str = "#555555";

/// Figures are drawn for this width; a page scales them down, never up.
pub const WIDTH: f64 = 800.0;

/// A marker's shape. Series differ in shape as well as colour, for a grey print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// ●
    Circle,
    /// ■
    Square,
    /// ▲
    Triangle,
    /// ◆
    Diamond,
    /// ▼
    Down,
}

const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
    Marker::Down,
];

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Style {
    /// Its colour.
    pub colour: &'static str,
    /// Its marker, if points are marked.
    pub marker: Option<Marker>,
    /// Marker size (the circle's radius), px.
    pub size: f64,
    /// Whether the points are joined by a line.
    pub line: bool,
    /// Dash pattern of the line (empty: solid).
    pub dash: &'static str,
}

impl Style {
    /// The `i`th series' style: its colour and marker, joined by a solid line.
    pub fn nth(i: usize) -> Style {
        Style {
            colour: colour(i),
            marker: Some(MARKERS[i % MARKERS.len()]),
            size: 4.0,
            line: true,
            dash: "",
        }
    }

    /// Markers only, no line.
    pub fn points(mut self, size: f64) -> Style {
        self.line = false;
        self.size = size;
        self
    }
}

/// Draws a marker centred on `at`; a hollow one is white inside (a point not to be trusted).
pub fn marker(
    s: &mut Svg,
    shape: Marker,
    at: (f64, f64),
    size: f64,
    colour: &str,
    hollow: bool,
    title: Option<&str>,
) {
    let paint = if hollow {
        Paint {
            fill: "#ffffff",
            stroke: colour,
            stroke_width: 1.6,
            fill_opacity: 1.0,
        }
    } else {
        Paint {
            fill: colour,
            stroke: "#ffffff",
            stroke_width: 0.8,
            fill_opacity: 1.0,
        }
    };
    let (x, y) = at;
    let r = size;
    match shape {
        Marker::Circle => s.circle(at, r, paint, title),
        Marker::Square => {
            let h = r * 0.9;
            s.painted_rect((x - h, y - h), (2.0 * h, 2.0 * h), paint, title)
        }
        Marker::Triangle => s.polygon(
            &[
                (x, y - r * 1.15),
                (x + r, y + r * 0.75),
                (x - r, y + r * 0.75),
            ],
            paint,
            title,
        ),
        Marker::Down => s.polygon(
            &[
                (x, y + r * 1.15),
                (x + r, y - r * 0.75),
                (x - r, y - r * 0.75),
            ],
            paint,
            title,
        ),
        Marker::Diamond => s.polygon(
            &[(x, y - r * 1.2), (x + r, y), (x, y + r * 1.2), (x - r, y)],
            paint,
            title,
        ),
    }
}

/// What an axis measures, which decides its tick labels and the unit in its title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A duration in ns, shown in ns, µs, ms or s.
    Ns,
    /// A count (cycles, events, samples), grouped in threes.
    Count,
    /// A percentage.
    Percent,
    /// A ratio to a reference, shown as a change in percent (`+12 %`).
    Ratio,
    /// A size in MiB.
    MiB,
    /// A plain number (a number of tasks).
    Plain,
}

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps for equal differences.
    Linear,
    /// Equal steps for equal ratios.
    Log,
}

/// How to choose an axis's scale and ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Log when every value is positive and they span more than [`WIDE`], else linear from
    /// zero (costs start at nothing) when `zero`.
    Auto {
        /// Whether a linear axis starts at zero.
        zero: bool,
    },
    /// Linear, from zero when `zero`.
    Linear {
        /// Whether the axis starts at zero.
        zero: bool,
    },
    /// Log, with a tick at each distinct value (a sweep's sizes: 2, 4, 16, 64 tasks).
    AtData,
}

/// Values spanning more than this factor get a log axis: on a linear one the small ones would
/// sit in a heap at zero.
pub const WIDE: f64 = 20.0;

/// An axis: its title, scale, range and labelled ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The title, unit included.
    pub label: String,
    /// The scale.
    pub scale: Scale,
    unit: Unit,
    /// On a linear axis, what a value is divided by before it is shown (1000 for µs).
    factor: f64,
    /// Range in shown units (linear) or in values (log).
    lo: f64,
    hi: f64,
    /// Tick positions (in values) and their labels.
    pub ticks: Vec<(f64, String)>,
}

impl Axis {
    /// An axis titled `name` that holds every finite value of `values`.
    pub fn fit(name: &str, unit: Unit, values: &[f64], fit: Fit) -> Axis {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let positive = !finite.is_empty() && finite.iter().all(|v| *v > 0.0);
        let (lo, hi) = finite
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        let scale = match fit {
            Fit::AtData if positive => Scale::Log,
            Fit::Auto { .. } if positive && hi / lo > WIDE => Scale::Log,
            _ => Scale::Linear,
        };
        let zero = match fit {
            Fit::Auto { zero } | Fit::Linear { zero } => zero,
            Fit::AtData => false,
        };
        match scale {
            Scale::Log => {
                let (lo, hi, ticks) = if matches!(fit, Fit::AtData) {
                    at_data(&finite)
                } else {
                    log_ticks(lo, hi)
                };
                Axis {
                    label: format!("{name} (log scale)"),
                    scale,
                    unit,
                    factor: 1.0,
                    lo,
                    hi,
                    ticks: ticks.into_iter().map(|v| (v, log_label(unit, v))).collect(),
                }
            }
            Scale::Linear => {
                let (lo, hi) = if finite.is_empty() {
                    (0.0, 1.0)
                } else if zero {
                    (lo.min(0.0), hi.max(0.0))
                } else {
                    (lo, hi)
                };
                let (factor, suffix) = linear_unit(unit, lo.abs().max(hi.abs()));
                let shown = |v: f64| match unit {
                    Unit::Ratio => (v - 1.0) * 100.0,
                    _ => v / factor,
                };
                let (lo, hi, step, ticks) = linear_ticks(shown(lo), shown(hi), 5);
                let label = match suffix {
                    Some(s) => format!("{name} ({s})"),
                    None => name.to_owned(),
                };
                let ticks = ticks
                    .into_iter()
                    .map(|t| {
                        let value = match unit {
                            Unit::Ratio => t / 100.0 + 1.0,
                            _ => t * factor,
                        };
                        (value, linear_label(unit, t, step))
                    })
                    .collect();
                Axis {
                    label,
                    scale,
                    unit,
                    factor,
                    lo,
                    hi,
                    ticks,
                }
            }
        }
    }

    /// Where `v` falls from 0 (the low end) to 1 (the high end), kept within the axis.
    pub fn frac(&self, v: f64) -> f64 {
        let t = match self.scale {
            Scale::Linear => {
                let shown = match self.unit {
                    Unit::Ratio => (v - 1.0) * 100.0,
                    _ => v / self.factor,
                };
                (shown - self.lo) / (self.hi - self.lo)
            }
            Scale::Log => {
                let v = v.max(self.lo);
                (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
            }
        };
        if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }
}

/// The factor and unit a linear axis of values up to `max` is shown in.
fn linear_unit(unit: Unit, max: f64) -> (f64, Option<&'static str>) {
    match unit {
        Unit::Ns if max < 1e3 => (1.0, Some("ns")),
        Unit::Ns if max < 1e6 => (1e3, Some("µs")),
        Unit::Ns if max < 1e9 => (1e6, Some("ms")),
        Unit::Ns => (1e9, Some("s")),
        Unit::Percent => (1.0, Some("%")),
        Unit::Ratio => (1.0, None),
        Unit::MiB => (1.0, Some("MiB")),
        Unit::Count | Unit::Plain => (1.0, None),
    }
}

/// A step of 1, 2 or 5 times a power of ten near `rough`.
fn nice_step(rough: f64) -> f64 {
    if !(rough.is_finite() && rough > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= rough * (1.0 - 1e-9))
        .unwrap_or(10.0 * mag)
}

/// About `want` round ticks covering `lo..hi`: (range start, range end, step, ticks).
fn linear_ticks(lo: f64, hi: f64, want: usize) -> (f64, f64, f64, Vec<f64>) {
    let (lo, hi) = if hi - lo > 0.0 {
        (lo, hi)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        // One value: a range around it, from zero when that is near.
        let d = lo.abs() * 0.5;
        ((lo - d).min(if lo > 0.0 { 0.0 } else { lo - d }), hi + d)
    };
    let step = nice_step((hi - lo) / want.max(1) as f64);
    // A bound already on a tick stays there despite rounding.
    let first = (lo / step + 1e-9).floor() as i64;
    let last = (hi / step - 1e-9).ceil() as i64;
    let ticks: Vec<f64> = (first..=last).map(|k| k as f64 * step).collect();
    (first as f64 * step, last as f64 * step, step, ticks)
}

/// Ticks of a log axis covering `lo..hi` (both positive): 1-2-5 in each decade when that gives
/// a handful, every decade when the range is long, 1 to 9 when it is short; the range is
/// widened to the ticks just outside it.
fn log_ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo / 2.0, hi * 2.0)
    };
    let candidates = |mults: &[f64]| -> Vec<f64> {
        let d0 = lo.log10().floor() as i32 - 1;
        let d1 = hi.log10().ceil() as i32 + 1;
        (d0..=d1)
            .flat_map(|d| mults.iter().map(move |m| m * 10f64.powi(d)))
            .collect()
    };
    for mults in [
        &[1.0, 2.0, 5.0][..],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..],
        &[1.0][..],
    ] {
        let all = candidates(mults);
        let start = all
            .iter()
            .copied()
            .filter(|v| *v <= lo * (1.0 + 1e-9))
            .fold(f64::NAN, f64::max);
        let end = all
            .iter()
            .copied()
            .find(|v| *v >= hi * (1.0 - 1e-9))
            .unwrap_or(hi);
        let start = if start.is_nan() { lo } else { start };
        let ticks: Vec<f64> = all
            .into_iter()
            .filter(|v| *v >= start * (1.0 - 1e-9) && *v <= end * (1.0 + 1e-9))
            .collect();
        let enough = ticks.len() >= 3 || mults.len() == 9;
        if enough && ticks.len() <= 10 {
            return (start, end, ticks);
        }
        if mults.len() == 1 {
            // Very long ranges: every other decade, then every third...
            let every = ticks.len().div_ceil(10);
            let kept = ticks.iter().copied().step_by(every.max(1)).collect();
            return (start, end, kept);
        }
    }
    (lo, hi, vec![lo, hi])
}

/// A log axis with a tick at each distinct value (thinned to about ten), its range padded so
/// no point sits on the frame.
fn at_data(values: &[f64]) -> (f64, f64, Vec<f64>) {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| *x > 0.0).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    let (Some(&lo), Some(&hi)) = (v.first(), v.last()) else {
        return (1.0, 10.0, vec![1.0, 10.0]);
    };
    let pad = if hi > lo {
        (hi / lo).powf(0.06).max(1.12)
    } else {
        2.0
    };
    let every = v.len().div_ceil(10);
    let ticks = v.iter().copied().step_by(every.max(1)).collect();
    (lo / pad, hi * pad, ticks)
}

use crate::format::trim;
pub use crate::format::{change, sig, time};

fn log_label(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Ns => time(v),
        Unit::Count if v >= 1.0 => grouped(v),
        Unit::Ratio => change((v - 1.0) * 100.0),
        Unit::MiB => format!("{} MiB", sig(v)),
        Unit::Percent => format!("{} %", sig(v)),
        Unit::Count | Unit::Plain => sig(v),
    }
}

fn linear_label(unit: Unit, shown: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let text = trim(&format!("{shown:.decimals$}"));
    match unit {
        Unit::Ratio if shown > 0.0 => format!("+{text} %"),
        Unit::Ratio => format!("{text} %"),
        Unit::Count if shown.abs() >= 10_000.0 && decimals == 0 => grouped(shown),
        _ => text,
    }
}

/// A point of a series: its value, its confidence interval, and whether it is trusted.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Position along the x axis.
    pub x: f64,
    /// Position along the y axis.
    pub y: f64,
    /// Interval drawn as a whisker around `y`.
    pub ci: Option<[f64; 2]>,
    /// Drawn hollow: a check failed or the figure is flagged.
    pub hollow: bool,
    /// Its tooltip.
    pub tip: String,
}

/// A series of points.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The legend's text.
    pub label: String,
    /// How it is drawn.
    pub style: Style,
    /// Its points, drawn in this order.
    pub points: Vec<Point>,
}

/// A level drawn across a panel (a control, an ideal, a fitted slope), with an optional band.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The legend's text.
    pub label: String,
    /// The level.
    pub y: f64,
    /// A band around it (an interval), shaded.
    pub band: Option<[f64; 2]>,
    /// Colour of the line and band.
    pub colour: &'static str,
    /// Dash pattern of the line.
    pub dash: &'static str,
}

/// A bar from `x0` to `x1` (a histogram bin), `y` high.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Left edge.
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Height.
    pub y: f64,
    /// Text above it (its count).
    pub label: String,
    /// Its tooltip.
    pub tip: String,
}

/// One plot area with its axes and what is drawn in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Printed above it.
    pub title: String,
    /// The x axis.
    pub x: Axis,
    /// The y axis.
    pub y: Axis,
    /// Series.
    pub lines: Vec<Line>,
    /// Levels across it.
    pub refs: Vec<Reference>,
    /// Bars, drawn first.
    pub bars: Vec<Bar>,
}

/// A panel's plotting area, px.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Area {
    /// The px column of value `v` on axis `a`.
    pub fn px(&self, a: &Axis, v: f64) -> f64 {
        self.x + a.frac(v) * self.w
    }

    /// The px row of value `v` on axis `a` (upwards).
    pub fn py(&self, a: &Axis, v: f64) -> f64 {
        self.y + self.h - a.frac(v) * self.h
    }
}

/// Room left of a panel's area for its y tick labels and title, px.
pub const PANEL_LEFT: f64 = 74.0;
/// Room above a panel's area for its title, px.
pub const PANEL_TOP: f64 = 24.0;
/// Room below a panel's area for its x tick labels and title, px.
pub const PANEL_BOTTOM: f64 = 46.0;
/// Room right of a panel's area, px.
pub const PANEL_RIGHT: f64 = 18.0;

/// Draws the x axis's grid lines, ticks and labels under an area; `top` adds the labels above
/// it as well (a tall figure).
pub fn x_axis(s: &mut Svg, a: Area, axis: &Axis, top: bool) {
    for (v, label) in &axis.ticks {
        let x = a.px(axis, *v);
        s.line(x, a.y, x, a.y + a.h, GRID, 1.0);
        s.line(x, a.y + a.h, x, a.y + a.h + 4.0, "#000000", 1.0);
        s.text(x, a.y + a.h + 16.0, 10.5, Anchor::Middle, 0.0, label);
        if top {
            s.text(x, a.y - 6.0, 10.5, Anchor::Middle, 0.0, label);
        }
    }
    s.line(a.x, a.y + a.h, a.x + a.w, a.y + a.h, "#000000", 1.0);
    s.text(
        a.x + a.w / 2.0,
        a.y + a.h + 34.0,
        11.5,
        Anchor::Middle,
        0.0,
        &axis.label,
    );
}

/// Draws the y axis's grid lines, ticks and labels left of an area.
pub fn y_axis(s: &mut Svg, a: Area, axis: &Axis) {
    for (v, label) in &axis.ticks {
        let y = a.py(axis, *v);
        s.line(a.x, y, a.x + a.w, y, GRID, 1.0);
        s.line(a.x - 4.0, y, a.x, y, "#000000", 1.0);
        s.text(a.x - 7.0, y + 3.5, 10.5, Anchor::End, 0.0, label);
    }
    s.line(a.x, a.y, a.x, a.y + a.h, "#000000", 1.0);
    s.text(
        a.x - PANEL_LEFT + 14.0,
        a.y + a.h / 2.0,
        11.5,
        Anchor::Middle,
        -90.0,
        &axis.label,
    );
}

/// The plotting area of a row-per-case panel under `header`: a left margin wide enough for
/// the longest of `labels`, one row of `row_h` per label. Returns it and whether the x axis
/// goes on top as well (a long panel, whose bottom axis is far from its first rows).
pub fn row_area(header: &Header, labels: &[String], row_h: f64) -> (Area, bool) {
    let longest = labels
        .iter()
        .map(|l| text_width(l, 11.0))
        .fold(0.0, f64::max);
    let left = (longest + 24.0).max(90.0);
    let top_axis = labels.len() > 12;
    let area = Area {
        x: left,
        y: header.height() + if top_axis { 22.0 } else { 6.0 },
        w: WIDTH - left - 24.0,
        h: labels.len() as f64 * row_h,
    };
    (area, top_axis)
}

/// Light stripes behind every other row of a row-per-case panel, drawn first so the grid and
/// the data lie on them.
pub fn row_stripes(s: &mut Svg, a: Area, rows: usize, row_h: f64) {
    for i in (0..rows).step_by(2) {
        s.painted_rect(
            (a.x, a.y + i as f64 * row_h),
            (a.w, row_h),
            Paint::fill("#f4f4f4"),
            None,
        );
    }
}

/// A vertical whisker from `lo` to `hi` at column `x`, with short caps.
pub fn whisker(s: &mut Svg, x: f64, lo: f64, hi: f64, colour: &str) {
    s.line(x, lo, x, hi, colour, 1.3);
    s.line(x - 3.0, lo, x + 3.0, lo, colour, 1.3);
    s.line(x - 3.0, hi, x + 3.0, hi, colour, 1.3);
}

impl Panel {
    /// Draws the panel into `a`.
    pub fn draw(&self, s: &mut Svg, a: Area) {
        // A title wider than its panel (wakeup's case id with three percentiles) is set
        // smaller rather than cut by the next panel or the figure's edge (the estimate runs about
        // a tenth wide of bold sans-serif).
        let room = a.w + 24.0;
        let size = (12.0 * room / (text_width(&self.title, 12.0) * 0.9)).clamp(8.0, 12.0);
        s.styled_text(
            (a.x, a.y - 9.0),
            size,
            Anchor::Start,
            true,
            "#000000",
            &self.title,
        );
        x_axis(s, a, &self.x, false);
        y_axis(s, a, &self.y);
        for b in &self.bars {
            let (x0, x1) = (a.px(&self.x, b.x0), a.px(&self.x, b.x1));
            let top = a.py(&self.y, b.y);
            let base = a.y + a.h;
            s.painted_rect(
                (x0 + 1.0, top),
                ((x1 - x0 - 2.0).max(1.0), base - top),
                Paint {
                    fill: PALETTE[0],
                    stroke: "#ffffff",
                    stroke_width: 0.5,
                    fill_opacity: 0.85,
                },
                Some(&b.tip),
            );
            if !b.label.is_empty() {
                s.text(
                    (x0 + x1) / 2.0,
                    top - 4.0,
                    9.5,
                    Anchor::Middle,
                    0.0,
                    &b.label,
                );
            }
        }
        for r in &self.refs {
            if let Some([lo, hi]) = r.band {
                let (top, bottom) = (a.py(&self.y, hi), a.py(&self.y, lo));
                s.painted_rect(
                    (a.x, top),
                    (a.w, bottom - top),
                    Paint {
                        fill: r.colour,
                        stroke: "none",
                        stroke_width: 0.0,
                        fill_opacity: 0.12,
                    },
                    Some(&r.label),
                );
            }
            let y = a.py(&self.y, r.y);
            s.dashed_line((a.x, y), (a.x + a.w, y), r.colour, 1.4, r.dash);
        }
        // Series with intervals at the same x are set a little apart, so whiskers do not hide
        // each other.
        let with_ci = self
            .lines
            .iter()
            .filter(|l| l.points.iter().any(|p| p.ci.is_some()))
            .count();
        let mut k = 0;
        for l in &self.lines {
            let dodge = if with_ci > 1 && l.points.iter().any(|p| p.ci.is_some()) {
                k += 1;
                (k as f64 - 1.0 - (with_ci as f64 - 1.0) / 2.0) * 3.0
            } else {
                0.0
            };
            let pts: Vec<(f64, f64)> = l
                .points
                .iter()
                .map(|p| (a.px(&self.x, p.x) + dodge, a.py(&self.y, p.y)))
                .collect();
            if l.style.line && pts.len() > 1 {
                s.styled_polyline(&pts, l.style.colour, 1.8, l.style.dash, &l.label);
            }
            for (p, &(x, y)) in l.points.iter().zip(&pts) {
                if let Some([lo, hi]) = p.ci {
                    whisker(s, x, a.py(&self.y, lo), a.py(&self.y, hi), l.style.colour);
                }
                if let Some(m) = l.style.marker {
                    marker(
                        s,
                        m,
                        (x, y),
                        l.style.size,
                        l.style.colour,
                        p.hollow,
                        Some(&p.tip),
                    );
                }
            }
        }
    }
}

/// One entry of a legend.
#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    /// A series: its marker and line.
    Series(String, Style),
    /// A reference level: its dashed line.
    Level(String, &'static str, &'static str),
    /// A filled swatch.
    Swatch(String, &'static str),
    /// The hollow marker, and what it means.
    Hollow(String),
}

impl Key {
    fn text(&self) -> &str {
        match self {
            Key::Series(t, _) | Key::Level(t, _, _) | Key::Swatch(t, _) | Key::Hollow(t) => t,
        }
    }
}

/// Width of `text` at `size` px in a sans-serif font, near enough to lay out a legend.
pub fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * 0.56
}

const KEY_ROW: f64 = 18.0;

/// Where each legend entry goes within `width`: (x, row).
fn key_layout(keys: &[Key], width: f64) -> Vec<(f64, usize)> {
    let mut out = Vec::new();
    let (mut x, mut row) = (0.0, 0);
    for k in keys {
        let w = 30.0 + text_width(k.text(), 11.0) + 18.0;
        if x > 0.0 && x + w > width {
            x = 0.0;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    out
}

/// Height of a legend of `keys` laid out within `width`.
pub fn legend_height(keys: &[Key], width: f64) -> f64 {
    key_layout(keys, width)
        .last()
        .map_or(0.0, |(_, row)| (*row + 1) as f64 * KEY_ROW)
}

/// Draws a legend at (`x`, `y`), entries flowing in rows within `width`.
pub fn legend(s: &mut Svg, x: f64, y: f64, width: f64, keys: &[Key]) {
    for (k, (dx, row)) in keys.iter().zip(key_layout(keys, width)) {
        let (kx, ky) = (x + dx, y + row as f64 * KEY_ROW + 9.0);
        match k {
            Key::Series(_, st) => {
                if st.line {
                    s.dashed_line((kx, ky), (kx + 24.0, ky), st.colour, 1.8, st.dash);
                }
                if let Some(m) = st.marker {
                    marker(s, m, (kx + 12.0, ky), st.size, st.colour, false, None);
                }
            }
            Key::Level(_, c, dash) => s.dashed_line((kx, ky), (kx + 24.0, ky), c, 1.4, dash),
            Key::Swatch(_, c) => {
                s.painted_rect((kx + 4.0, ky - 6.0), (16.0, 12.0), Paint::fill(c), None)
            }
            Key::Hollow(_) => marker(s, Marker::Circle, (kx + 12.0, ky), 4.0, MUTED, true, None),
        }
        s.text(kx + 30.0, ky + 4.0, 11.0, Anchor::Start, 0.0, k.text());
    }
}

/// `text` broken at spaces into lines of at most `chars` characters.
pub fn wrap(text: &str, chars: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > chars {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A figure's title and the lines under it, wrapped to the figure's width.
pub struct Header {
    title: String,
    lines: Vec<String>,
}

impl Header {
    /// A title and notes (each wrapped on its own).
    pub fn new(title: &str, notes: &[String]) -> Header {
        // Sans-serif at 11 px averages under 5.5 px a character.
        let chars = ((WIDTH - 32.0) / 5.6) as usize;
        Header {
            title: title.to_owned(),
            lines: notes.iter().flat_map(|n| wrap(n, chars)).collect(),
        }
    }

    /// Its height, px.
    pub fn height(&self) -> f64 {
        32.0 + self.lines.len() as f64 * 15.0 + 8.0
    }

    /// Draws it at the top of the figure (and names the figure after its title).
    pub fn draw(&self, s: &mut Svg) {
        s.set_title(&self.title);
        s.styled_text(
            (16.0, 24.0),
            15.0,
            Anchor::Start,
            true,
            "#000000",
            &self.title,
        );
        for (i, l) in self.lines.iter().enumerate() {
            s.styled_text(
                (16.0, 43.0 + i as f64 * 15.0),
                11.0,
                Anchor::Start,
                false,
                MUTED,
                l,
            );
        }
    }
}

/// A figure of panels in a grid of `cols` columns, each area `panel_h` px high, with the
/// legend under them.
pub fn grid(header: &Header, panels: &[Panel], cols: usize, panel_h: f64, keys: &[Key]) -> String {
    let cols = cols.max(1);
    let rows = panels.len().div_ceil(cols);
    let cell_w = (WIDTH - 8.0) / cols as f64;
    let cell_h = PANEL_TOP + panel_h + PANEL_BOTTOM;
    let top = header.height();
    let legend_w = WIDTH - 32.0;
    let height = top + rows as f64 * cell_h + legend_height(keys, legend_w) + 16.0;
    let mut s = Svg::new(WIDTH, height);
    header.draw(&mut s);
    for (i, p) in panels.iter().enumerate() {
        let (r, c) = (i / cols, i % cols);
        let a = Area {
            x: 4.0 + c as f64 * cell_w + PANEL_LEFT,
            y: top + r as f64 * cell_h + PANEL_TOP,
            w: cell_w - PANEL_LEFT - PANEL_RIGHT,
            h: panel_h,
        };
        p.draw(&mut s, a);
    }
    legend(
        &mut s,
        16.0,
        top + rows as f64 * cell_h + 4.0,
        legend_w,
        keys,
    );
    s.finish()
}

/// A horizontal axis under rows drawn from `y[0]` to `y[1]` between `x[0]` and `x[1]`: a light
/// grid line up through the rows at each tick, the tick's label under the axis line, and the
/// axis's name under those.
pub fn rows_axis(s: &mut Svg, axis: &Axis, x: [f64; 2], y: [f64; 2]) {
    let [x0, x1] = x;
    let [top, bottom] = y;
    let px = |v: f64| x0 + axis.frac(v) * (x1 - x0);
    for (v, label) in &axis.ticks {
        let x = px(*v);
        s.line(x, top, x, bottom, "#e4e4e4", 1.0);
        s.text(x, bottom + 14.0, 11.0, Anchor::Middle, 0.0, label);
    }
    s.line(x0, bottom, x1, bottom, "#888888", 1.0);
    s.text(
        (x0 + x1) / 2.0,
        bottom + 30.0,
        11.0,
        Anchor::Middle,
        0.0,
        &axis.label,
    );
}

#[cfg(test)]
mod tests;
