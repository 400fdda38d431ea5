//! Plots as inline SVG, drawn with plotters' SVG backend from plain series, so that any result
//! (today's or a later study's, e.g. a slowdown against core count or a latency CDF) can be fed
//! to them.
//!
//! Two kinds: [`BarChart`] (categories × series, each bar with an optional interval and the
//! individual runs as dots) and [`LineChart`] (series of `(x, y, interval)` points on linear,
//! log₂ or log₁₀ axes). Both choose their own tick marks (round numbers, or whole powers on a
//! log axis), put the legend in a strip above the plot, and rotate or thin category labels
//! that would overlap. No text is measured: widths are estimated from the number of
//! characters, generously, and the browser draws the text.
//!
//! ```
//! use tlblab_report::plot::{Bar, BarChart, BarSeries};
//!
//! let chart = BarChart::new("policy", "µs per op", vec!["percpu".into(), "stack".into()])
//!     .series(BarSeries::new("madvise-busy", vec![
//!         Some(Bar::new(12.0).interval(11.0, 13.0)),
//!         Some(Bar::new(9.5).interval(9.0, 10.0)),
//!     ]));
//! let svg = chart.svg()?;
//! assert!(svg.starts_with("<svg") && svg.contains("µs per op"));
//! # Ok::<(), tlblab_report::plot::PlotError>(())
//! ```

use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use thiserror::Error;

use crate::fmt;

/// Why a plot could not be drawn.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PlotError {
    /// Nothing to draw: no finite value (none above 0 on a log axis).
    #[error("plot: no value to draw")]
    NoData,
    /// The drawing backend failed.
    #[error("plot: {0}")]
    Backend(String),
}

fn backend<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Backend(e.to_string())
}

/// How values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// Evenly spaced values.
    #[default]
    Linear,
    /// Powers of two evenly spaced (ceilings, worker counts); values must be > 0.
    Log2,
    /// Powers of ten evenly spaced (counts spanning decades); values must be > 0.
    Log10,
}

impl Scale {
    fn forward(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }

    fn accepts(self, v: f64) -> bool {
        v.is_finite() && (self == Scale::Linear || v > 0.0)
    }

    fn describe(self) -> &'static str {
        match self {
            Scale::Linear => "",
            Scale::Log2 => " (log₂ scale)",
            Scale::Log10 => " (log scale)",
        }
    }
}

/// The colours of the series, in order: Okabe and Ito's palette, readable with the common
/// colour-vision deficiencies and in grey print.
const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(120, 120, 120),
];

/// Text sizes in plotters' unit (its SVG backend writes size / 1.24 as the CSS pixel size).
const LABEL_SIZE: f64 = 15.0;
const DESC_SIZE: f64 = 16.5;
const FONT: &str = "sans-serif";

/// The CSS pixel size plotters writes for a size.
fn px(size: f64) -> f64 {
    size / 1.24
}

/// A generous estimate of a text's width in pixels: 0.62 em per character (digits and most
/// lower-case letters of a sans-serif face are narrower).
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * px(size) * 0.62
}

fn style(size: f64) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK)
}

/// An axis in the scale's space (log₂ or log₁₀ of the values on a log axis), with its ticks.
#[derive(Debug, Clone, PartialEq)]
struct Axis {
    scale: Scale,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Axis {
    /// An axis that covers `min..=max` (values, not yet transformed), with about `max_ticks`
    /// ticks.
    fn new(scale: Scale, min: f64, max: f64, max_ticks: usize) -> Axis {
        Axis::build(scale, min, max, max_ticks, false)
    }

    /// As [`Axis::new`], and on a log axis the bottom is strictly below `min`, so that the
    /// smallest bar (growing from the bottom) still has a height.
    fn for_bars(scale: Scale, min: f64, max: f64, max_ticks: usize) -> Axis {
        Axis::build(scale, min, max, max_ticks, true)
    }

    fn build(scale: Scale, min: f64, max: f64, max_ticks: usize, room_below: bool) -> Axis {
        let below = if room_below { 0.999 } else { 1.0 };
        let max_ticks = max_ticks.max(2);
        // Values of a damaged file (1e308, infinities): keep every bound and tick count below
        // finite and small, so that no tick list or loop runs away.
        let finite = |v: f64, or: f64| if v.is_finite() { v.clamp(-1e300, 1e300) } else { or };
        let (min, max) = (finite(min, 0.0), finite(max, 1.0));
        let (min, max) = if scale == Scale::Linear || min > 0.0 {
            (min, max.max(min))
        } else {
            (1e-300, max.max(1e-300))
        };
        match scale {
            Scale::Linear => {
                let (mut min, mut max) = (min, max);
                if min == max {
                    let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.1 };
                    min -= if min == 0.0 { 0.0 } else { pad };
                    max += pad;
                }
                let step = nice_step((max - min) / (max_ticks - 1) as f64);
                let lo = snap(min / step, f64::floor) * step;
                let hi = snap(max / step, f64::ceil) * step;
                let count = ((hi - lo) / step).round().clamp(0.0, 1000.0) as i64;
                let ticks = (0..=count)
                    .map(|i| {
                        let v = lo + i as f64 * step;
                        // Snap away the rounding of repeated addition (0.30000000000000004).
                        let v = (v / step).round() * step;
                        (v, fmt::tick(if v.abs() < step * 1e-9 { 0.0 } else { v }, step))
                    })
                    .collect();
                Axis { scale, lo, hi, ticks }
            }
            Scale::Log10 if (max / min).log10() <= 2.5 => {
                // Within a few decades, bounds and ticks at 1, 2 and 5 × 10ᵏ.
                // The bottom strictly below the smallest value, so that its bar has a height.
                let (lo, hi) = (nice_125(min * below, false), nice_125(max, true));
                let hi = if hi <= lo { nice_125(hi * 1.01, true) } else { hi };
                let mut ticks = Vec::new();
                let mut e = lo.log10().floor() as i32;
                while 10f64.powi(e) <= hi * 1.000001 {
                    for m in [1.0, 2.0, 5.0] {
                        let v = m * 10f64.powi(e);
                        if v >= lo * 0.999999 && v <= hi * 1.000001 {
                            ticks.push((v.log10(), fmt::tick(v, v)));
                        }
                    }
                    e += 1;
                }
                Axis { scale, lo: lo.log10(), hi: hi.log10(), ticks }
            }
            Scale::Log2 | Scale::Log10 => {
                let base: f64 = if scale == Scale::Log2 { 2.0 } else { 10.0 };
                let lo = (scale.forward(min) - if room_below { 0.01 } else { 0.0 }).floor();
                let mut hi = scale.forward(max).ceil();
                if hi <= lo {
                    hi = lo + 1.0;
                }
                let count = ((hi - lo) as usize).min(10_000) + 1;
                let every = count.div_ceil(max_ticks).max(1);
                let ticks = (0..count)
                    .step_by(every)
                    .map(|i| {
                        let e = lo + i as f64;
                        let v = base.powf(e);
                        (e, fmt::tick(v, v))
                    })
                    .collect();
                Axis { scale, lo, hi, ticks }
            }
        }
    }

    fn label(&self, v: f64) -> String {
        let tol = (self.hi - self.lo).abs() * 1e-9;
        self.ticks
            .iter()
            .find(|(t, _)| (t - v).abs() <= tol)
            .map(|(_, l)| l.clone())
            .unwrap_or_default()
    }

    /// The pixel width the tick labels need.
    fn label_width(&self) -> f64 {
        self.ticks.iter().map(|(_, l)| text_width(l, LABEL_SIZE)).fold(0.0, f64::max)
    }

    /// A value clamped into the axis, in axis space; `None` if the scale cannot show it.
    fn place(&self, v: f64) -> Option<f64> {
        self.scale.accepts(v).then(|| self.scale.forward(v).clamp(self.lo, self.hi))
    }
}

/// A linear range in axis space whose tick marks are exactly the axis' ticks (plotters' own
/// ranges choose theirs, which on a log axis would fall between powers).
#[derive(Debug, Clone)]
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(axis: &Axis) -> Ticked {
        Ticked { lo: axis.lo, hi: axis.hi, ticks: axis.ticks.iter().map(|t| t.0).collect() }
    }

    /// No tick at all (a category axis: the labels are drawn apart).
    fn bare(lo: f64, hi: f64) -> Ticked {
        Ticked { lo, hi, ticks: Vec::new() }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        if span == 0.0 || !v.is_finite() {
            return limit.0;
        }
        // Values far outside (never drawn: every value is clamped first) stay near the edge.
        let frac = ((v - self.lo) / span).clamp(-1.0, 2.0);
        let length = (limit.1 - limit.0) as f64;
        limit.0 + (length * frac + 1e-3 * length.signum()).trunc() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// `x` rounded down (or up) to a whole number, unless it is within rounding error of one.
fn snap(x: f64, round: fn(f64) -> f64) -> f64 {
    if (x - x.round()).abs() < 1e-9 {
        x.round()
    } else {
        round(x)
    }
}

/// The largest 1, 2 or 5 × 10ᵏ at most `v` (or, `up`, the smallest at least `v`); `v` > 0.
fn nice_125(v: f64, up: bool) -> f64 {
    let p = 10f64.powf(v.log10().floor());
    let candidates = [0.5 * p, p, 2.0 * p, 5.0 * p, 10.0 * p, 20.0 * p];
    let eps = 1e-9 * v;
    if up {
        candidates.into_iter().find(|c| *c >= v - eps).unwrap_or(20.0 * p)
    } else {
        candidates.into_iter().rev().find(|c| *c <= v + eps).unwrap_or(0.5 * p)
    }
}

/// The smallest 1, 2 or 5 × 10ᵏ at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

/// The legend's entries laid out in rows across `width`: (row, x) of each, and the rows.
fn legend_layout(names: &[String], width: u32) -> (Vec<(usize, f64)>, usize) {
    let mut out = Vec::new();
    let (mut row, mut x) = (0, 0.0);
    let limit = width as f64 - 16.0;
    for name in names {
        let w = 18.0 + text_width(name, LABEL_SIZE) + 18.0;
        if x > 0.0 && 60.0 + x + w > limit {
            row += 1;
            x = 0.0;
        }
        out.push((row, x));
        x += w;
    }
    (out, if names.is_empty() { 0 } else { row + 1 })
}

const LEGEND_ROW: u32 = 20;

fn legend_height(names: &[String], width: u32) -> u32 {
    let (_, rows) = legend_layout(names, width);
    if rows == 0 {
        6
    } else {
        rows as u32 * LEGEND_ROW + 10
    }
}

/// The palette's colour `i` (cycling).
fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// How a line series is told from the others beside its colour (so that two that coincide,
/// or a print in grey, still show both): its dash pattern and its marker's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle, solid line.
    Circle,
    /// A filled triangle, dashed line.
    Triangle,
    /// A hollow square, dotted line.
    Square,
    /// A cross, dash-dot line.
    Cross,
}

impl Marker {
    /// The style of series `i` (cycling).
    pub fn of(i: usize) -> Marker {
        [Marker::Circle, Marker::Triangle, Marker::Square, Marker::Cross][i % 4]
    }

    /// Dash and gap lengths in pixels; `None` for a solid line.
    fn dashes(self) -> Option<(u32, u32)> {
        match self {
            Marker::Circle => None,
            Marker::Triangle => Some((8, 4)),
            Marker::Square => Some((2, 3)),
            Marker::Cross => Some((10, 3)),
        }
    }
}

/// A marker of `shape` at (`x`, `y`) (axis space), `size` pixels across its half.
fn draw_marker(
    chart: &mut Chart,
    (x, y): (f64, f64),
    shape: Marker,
    size: i32,
    color: RGBColor,
) -> Result<(), PlotError> {
    let filled = color.filled();
    let stroke = color.stroke_width(2);
    let at = || EmptyElement::at((x, y));
    match shape {
        Marker::Circle => {
            chart.draw_series(std::iter::once(at() + Circle::new((0, 0), size, filled)))
        }
        Marker::Triangle => {
            chart.draw_series(std::iter::once(at() + TriangleMarker::new((0, 0), size + 1, filled)))
        }
        Marker::Square => {
            let r = [(-size, -size), (size, size)];
            chart.draw_series(std::iter::once(
                at() + Rectangle::new(r, WHITE.filled()) + Rectangle::new(r, stroke),
            ))
        }
        Marker::Cross => {
            chart.draw_series(std::iter::once(at() + Cross::new((0, 0), size + 1, stroke)))
        }
    }
    .map_err(backend)?;
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    names: &[String],
    colors: &[usize],
    width: u32,
    markers: Option<&[Marker]>,
) -> Result<(), PlotError> {
    let (places, _) = legend_layout(names, width);
    for (i, ((name, (row, x)), c)) in names.iter().zip(places).zip(colors).enumerate() {
        let x = 60 + x as i32;
        let y = 6 + row as i32 * LEGEND_ROW as i32;
        let color = color(*c);
        match markers.and_then(|m| m.get(i)) {
            // A line series: a piece of its line with its marker, as drawn in the plot.
            Some(&m) => {
                let line = [(x - 2, y + 8), (x + 14, y + 8)];
                match m.dashes() {
                    None => root.draw(&PathElement::new(line, color.stroke_width(2))),
                    Some((dash, gap)) => root.draw(&DashedPathElement::new(
                        line,
                        dash as i32,
                        gap as i32,
                        color.stroke_width(2),
                    )),
                }
                .map_err(backend)?;
                let filled = color.filled();
                let stroke = color.stroke_width(2);
                match m {
                    Marker::Circle => root.draw(&Circle::new((x + 6, y + 8), 3, filled)),
                    Marker::Triangle => root.draw(&TriangleMarker::new((x + 6, y + 8), 4, filled)),
                    Marker::Square => {
                        let r = [(x + 3, y + 5), (x + 9, y + 11)];
                        root.draw(&Rectangle::new(r, WHITE.filled()))
                            .and_then(|_| root.draw(&Rectangle::new(r, stroke)))
                    }
                    Marker::Cross => root.draw(&Cross::new((x + 6, y + 8), 4, stroke)),
                }
                .map_err(backend)?;
            }
            None => root
                .draw(&Rectangle::new([(x, y + 2), (x + 12, y + 14)], color.filled()))
                .map_err(backend)?,
        }
        root.draw_text(
            name,
            &style(LABEL_SIZE).pos(Pos::new(HPos::Left, VPos::Top)),
            (x + 17, y + 1),
        )
        .map_err(backend)?;
    }
    Ok(())
}

/// Height of a title line above a plot.
const TITLE_ROW: u32 = 26;

/// The area below `title` (drawn in bold at the top left), or all of `root` without one.
fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: Option<&str>,
) -> Result<DrawingArea<DB, plotters::coord::Shift>, PlotError> {
    let Some(title) = title else { return Ok(root.clone()) };
    let (top, rest) = root.split_vertically(TITLE_ROW);
    let font = (FONT, DESC_SIZE, FontStyle::Bold).into_font().color(&BLACK);
    top.draw_text(title, &font.pos(Pos::new(HPos::Left, VPos::Top)), (10, 6)).map_err(backend)?;
    Ok(rest)
}

/// A point placed in axis space: x, y and its whisker.
type Placed = (f64, f64, Option<(f64, f64)>);

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Ticked, Ticked>>;

/// A whisker from `lo` to `hi` at `x` (axis space), with caps `half` pixels each side (plotters'
/// error bar also marks the middle with a circle, which hides the runs' dots).
fn draw_whisker(
    chart: &mut Chart,
    x: f64,
    lo: f64,
    hi: f64,
    half: i32,
    color: &RGBColor,
) -> Result<(), PlotError> {
    let style = color.stroke_width(1);
    chart
        .draw_series(std::iter::once(PathElement::new(vec![(x, lo), (x, hi)], style)))
        .map_err(backend)?;
    for y in [lo, hi] {
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((x, y)) + PathElement::new(vec![(-half, 0), (half, 0)], style),
            ))
            .map_err(backend)?;
    }
    Ok(())
}

/// One run: a white dot with a dark ring, visible on a bar and beside it.
fn draw_dot(chart: &mut Chart, x: f64, y: f64) -> Result<(), PlotError> {
    chart
        .draw_series(std::iter::once(
            EmptyElement::at((x, y))
                + Circle::new((0, 0), 3, WHITE.filled())
                + Circle::new((0, 0), 3, RGBColor(30, 30, 30).stroke_width(1)),
        ))
        .map_err(backend)?;
    Ok(())
}

/// Turns plotters' document into an inline element: no namespace URL (HTML does not need
/// it, and the page must name no URL), a class for the style sheet, and a label for readers.
fn inline(svg: String, label: &str) -> String {
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    svg.replacen(
        "<svg ",
        &format!("<svg class=\"plot\" role=\"img\" aria-label=\"{}\" ", crate::html::escape(label)),
        1,
    )
}

/// One bar: a value, an optional interval drawn as a whisker, and the individual runs as dots.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Bar {
    /// The bar's height.
    pub value: f64,
    /// The whisker, `(low, high)`, in the value's unit.
    pub interval: Option<(f64, f64)>,
    /// Individual observations, drawn as dots over the bar.
    pub samples: Vec<f64>,
}

impl Bar {
    /// A bar of this height.
    pub fn new(value: f64) -> Bar {
        Bar { value, interval: None, samples: Vec::new() }
    }

    /// With a whisker from `low` to `high`.
    pub fn interval(mut self, low: f64, high: f64) -> Bar {
        self.interval = Some((low, high));
        self
    }

    /// With the individual observations.
    pub fn samples(mut self, samples: Vec<f64>) -> Bar {
        self.samples = samples;
        self
    }
}

/// A series of bars, one (or none) per category.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    /// The legend's name.
    pub name: String,
    /// One entry per category; `None` leaves a gap.
    pub bars: Vec<Option<Bar>>,
    /// The palette colour (default: the series' position), so that a policy keeps its colour
    /// in every chart even where another policy has no value.
    pub color: Option<usize>,
}

impl BarSeries {
    /// A series.
    pub fn new(name: impl Into<String>, bars: Vec<Option<Bar>>) -> BarSeries {
        BarSeries { name: name.into(), bars, color: None }
    }

    /// With the palette's colour `i`.
    pub fn color(mut self, i: usize) -> BarSeries {
        self.color = Some(i);
        self
    }
}

/// Grouped bars: a group per category, a bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    /// The categories' axis title.
    pub x_label: String,
    /// The values' axis title, with the unit.
    pub y_label: String,
    /// The category labels, left to right.
    pub categories: Vec<String>,
    /// The series, in legend order.
    pub series: Vec<BarSeries>,
    /// The value axis' scale (`Linear` or `Log10`; `Log2` also works).
    pub y_scale: Scale,
    /// Bars grow from this value (e.g. 1 for ratios), drawn as a dashed line; else from 0 (or
    /// the bottom of a log axis).
    pub reference: Option<f64>,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// Show the legend even with one series.
    pub always_legend: bool,
    /// Colour each bar by its category (one series whose categories are policies or
    /// configurations), instead of by series.
    pub color_by_category: bool,
    /// A line above the plot saying what the values are (none by default: the caption says).
    pub title: Option<String>,
}

impl BarChart {
    /// A chart of 720 × 360 pixels with no series yet.
    pub fn new(x_label: &str, y_label: &str, categories: Vec<String>) -> BarChart {
        BarChart {
            x_label: x_label.into(),
            y_label: y_label.into(),
            categories,
            series: Vec::new(),
            y_scale: Scale::Linear,
            reference: None,
            size: (720, 360),
            always_legend: false,
            color_by_category: false,
            title: None,
        }
    }

    /// Sets the title drawn above the plot.
    pub fn title(mut self, title: impl Into<String>) -> BarChart {
        self.title = Some(title.into());
        self
    }

    /// Adds a series.
    pub fn series(mut self, s: BarSeries) -> BarChart {
        self.series.push(s);
        self
    }

    /// Sets the value scale.
    pub fn y_scale(mut self, scale: Scale) -> BarChart {
        self.y_scale = scale;
        self
    }

    /// Bars grow from `r`.
    pub fn reference(mut self, r: f64) -> BarChart {
        self.reference = Some(r);
        self
    }

    /// What the value axis' scale adds to a caption (` (log scale)`), or nothing.
    pub fn scale_note(&self) -> &'static str {
        self.y_scale.describe()
    }

    /// Every value the axis must cover: bars, whiskers, dots and the reference.
    fn extent(&self) -> Option<(f64, f64)> {
        let scale = self.y_scale;
        let mut values: Vec<f64> = Vec::new();
        for bar in self.series.iter().flat_map(|s| s.bars.iter().flatten()) {
            if !scale.accepts(bar.value) {
                continue;
            }
            values.push(bar.value);
            if let Some((lo, hi)) = bar.interval {
                values.extend([lo, hi]);
            }
            values.extend(&bar.samples);
        }
        values.retain(|v| scale.accepts(*v));
        if values.is_empty() {
            return None;
        }
        if scale == Scale::Linear {
            values.push(self.reference.unwrap_or(0.0));
        } else if let Some(r) = self.reference.filter(|r| scale.accepts(*r)) {
            values.push(r);
        }
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some((min, max))
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> Result<String, PlotError> {
        let (min, max) = self.extent().ok_or(PlotError::NoData)?;
        let (w, h) = self.size;
        let axis = Axis::for_bars(self.y_scale, min, max, 7);
        let show_legend = self.series.len() > 1 || self.always_legend;
        let names: Vec<String> = if show_legend {
            self.series.iter().map(|s| s.name.clone()).collect()
        } else {
            Vec::new()
        };
        let colors: Vec<usize> =
            self.series.iter().enumerate().map(|(i, s)| s.color.unwrap_or(i)).collect();
        let legend_h = legend_height(&names, w);
        let y_area = (axis.label_width() + px(DESC_SIZE) + 22.0).ceil() as u32;
        let n = self.categories.len().max(1);
        let plot_w = w.saturating_sub(y_area + 20) as f64;
        let slot = plot_w / n as f64;
        let labels = CategoryLabels::layout(&self.categories, slot, h);
        let x_area =
            labels.height + if self.x_label.is_empty() { 6 } else { px(DESC_SIZE) as u32 + 12 };

        let mut buf = String::new();
        {
            let whole = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
            whole.fill(&WHITE).map_err(backend)?;
            let root = titled(&whole, self.title.as_deref())?;
            draw_legend(&root, &names, &colors, w, None)?;
            let (_, body) = root.split_vertically(legend_h);
            let mut chart = ChartBuilder::on(&body)
                .margin_right(16)
                .margin_top(6)
                .x_label_area_size(x_area)
                .y_label_area_size(y_area)
                .build_cartesian_2d(Ticked::bare(0.0, n as f64), Ticked::new(&axis))
                .map_err(backend)?;
            let y_fmt = |v: &f64| axis.label(*v);
            chart
                .configure_mesh()
                .disable_x_mesh()
                .y_label_formatter(&y_fmt)
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .label_style(style(LABEL_SIZE))
                .axis_desc_style(style(DESC_SIZE))
                .bold_line_style(RGBColor(225, 228, 232).stroke_width(1))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(backend)?;

            let groups = self.series.len().max(1) as f64;
            let bar_w = 0.8 / groups;
            let base = match (self.reference, self.y_scale) {
                (Some(r), s) if s.accepts(r) => axis.place(r).unwrap_or(axis.lo),
                (_, Scale::Linear) => 0.0,
                _ => axis.lo,
            };
            // Whiskers half as wide as a bar, in pixels.
            let bar_px = slot * bar_w;
            let whisker = (bar_px * 0.5).clamp(2.0, 14.0) as u32;
            for (si, series) in self.series.iter().enumerate() {
                for (ci, bar) in series.bars.iter().enumerate().take(n) {
                    let Some(bar) = bar else { continue };
                    let color = color(if self.color_by_category { ci } else { colors[si] });
                    let Some(top) = axis.place(bar.value) else { continue };
                    let x0 = ci as f64 + 0.1 + si as f64 * bar_w;
                    let x1 = x0 + bar_w * 0.9;
                    let xm = (x0 + x1) / 2.0;
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(x0, base), (x1, top)],
                            color.filled(),
                        )))
                        .map_err(backend)?;
                    if let Some((lo, hi)) = bar.interval {
                        let lo = axis.place(lo).unwrap_or(axis.lo);
                        let hi = axis.place(hi).unwrap_or(axis.lo);
                        draw_whisker(&mut chart, xm, lo, hi, whisker as i32, &BLACK)?;
                    }
                    let dots: Vec<f64> =
                        bar.samples.iter().filter_map(|s| axis.place(*s)).collect();
                    // Spread the runs across the middle of the bar so that equal values stay
                    // apart from each other and from the whisker.
                    let spread = bar_w * 0.3;
                    for (k, y) in dots.iter().enumerate() {
                        let dx = if dots.len() > 1 {
                            (k as f64 / (dots.len() - 1) as f64 - 0.5) * spread
                        } else {
                            0.0
                        };
                        draw_dot(&mut chart, xm + dx, *y)?;
                    }
                }
            }
            if let Some(r) = self.reference.and_then(|r| axis.place(r)) {
                chart
                    .draw_series(std::iter::once(DashedPathElement::new(
                        vec![(0.0, r), (n as f64, r)],
                        6,
                        4,
                        BLACK.stroke_width(1),
                    )))
                    .map_err(backend)?;
            }
            let line = CategoryLabels::line_height();
            for (ci, lines) in labels.texts.iter().enumerate() {
                let Some(lines) = lines else { continue };
                let (x, y) = chart.backend_coord(&(ci as f64 + 0.5, axis.lo));
                let (anchor, transform) = if labels.rotated {
                    (Pos::new(HPos::Right, VPos::Center), FontTransform::Rotate270)
                } else {
                    (Pos::new(HPos::Center, VPos::Top), FontTransform::None)
                };
                for (k, text) in lines.iter().enumerate() {
                    let dy = 6 + (k as f64 * line) as i32;
                    whole
                        .draw_text(
                            text,
                            &style(LABEL_SIZE).pos(anchor).transform(transform.clone()),
                            (x, y + dy),
                        )
                        .map_err(backend)?;
                }
            }
            whole.present().map_err(backend)?;
        }
        Ok(inline(buf, &format!("{} by {}", self.y_label, self.x_label)))
    }
}

/// Where category labels go: flat when they fit their slot (on up to three lines, broken at
/// spaces), else turned upright; every k-th one when even upright they would touch; cut with
/// `…` past 28 characters.
#[derive(Debug, Clone, PartialEq)]
struct CategoryLabels {
    /// Per category, its lines (one when upright), or `None` when thinned out.
    texts: Vec<Option<Vec<String>>>,
    rotated: bool,
    height: u32,
}

/// `text` broken at spaces into lines at most `width` pixels wide, or `None` if a word alone
/// is wider or more than `max_lines` are needed.
fn wrap(text: &str, width: f64, max_lines: usize) -> Option<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if text_width(word, LABEL_SIZE) > width {
            return None;
        }
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), LABEL_SIZE) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    (lines.len() <= max_lines).then_some(lines)
}

impl CategoryLabels {
    const MAX_CHARS: usize = 28;
    const MAX_LINES: usize = 3;

    fn line_height() -> f64 {
        px(LABEL_SIZE) * 1.3
    }

    fn layout(categories: &[String], slot: f64, chart_height: u32) -> CategoryLabels {
        let line = Self::line_height();
        let fit = slot * 0.92;
        let wrapped: Option<Vec<Vec<String>>> =
            categories.iter().map(|c| wrap(c, fit, Self::MAX_LINES)).collect();
        if let Some(wrapped) = wrapped {
            let lines = wrapped.iter().map(Vec::len).max().unwrap_or(1).max(1);
            return CategoryLabels {
                texts: wrapped.into_iter().map(Some).collect(),
                rotated: false,
                height: (lines as f64 * line + 10.0) as u32,
            };
        }
        let every = (line / slot).ceil().max(1.0) as usize;
        let texts: Vec<Option<Vec<String>>> = categories
            .iter()
            .enumerate()
            .map(|(i, c)| {
                (i % every == 0).then(|| {
                    vec![if c.chars().count() > Self::MAX_CHARS {
                        let cut: String = c.chars().take(Self::MAX_CHARS - 1).collect();
                        format!("{cut}…")
                    } else {
                        c.clone()
                    }]
                })
            })
            .collect();
        let longest =
            texts.iter().flatten().flatten().map(|c| text_width(c, LABEL_SIZE)).fold(0.0, f64::max);
        // Upright labels take at most 40% of the chart's height.
        let height = (longest + 12.0).min(chart_height as f64 * 0.4) as u32;
        CategoryLabels { texts, rotated: true, height }
    }
}

/// One point of a line, with an optional whisker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Position on the x axis.
    pub x: f64,
    /// Value.
    pub y: f64,
    /// Whisker `(low, high)`.
    pub interval: Option<(f64, f64)>,
}

impl Point {
    /// A point.
    pub fn new(x: f64, y: f64) -> Point {
        Point { x, y, interval: None }
    }

    /// With a whisker.
    pub fn interval(mut self, low: f64, high: f64) -> Point {
        self.interval = Some((low, high));
        self
    }
}

/// A named line.
#[derive(Debug, Clone, PartialEq)]
pub struct LineSeries {
    /// The legend's name.
    pub name: String,
    /// The points, drawn in this order.
    pub points: Vec<Point>,
    /// The palette colour (default: the series' position).
    pub color: Option<usize>,
}

impl LineSeries {
    /// A series.
    pub fn new(name: impl Into<String>, points: Vec<Point>) -> LineSeries {
        LineSeries { name: name.into(), points, color: None }
    }

    /// With the palette's colour `i`.
    pub fn color(mut self, i: usize) -> LineSeries {
        self.color = Some(i);
        self
    }
}

/// Lines (with markers and whiskers) over a numeric x axis.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// The x axis' title, with the unit.
    pub x_label: String,
    /// The y axis' title, with the unit.
    pub y_label: String,
    /// The x axis' scale.
    pub x_scale: Scale,
    /// The y axis' scale.
    pub y_scale: Scale,
    /// Start a linear y axis at 0 (true by default: rates and costs).
    pub y_from_zero: bool,
    /// Draw a marker at every point (true by default; off for dense time series).
    pub markers: bool,
    /// The series, in legend order.
    pub series: Vec<LineSeries>,
    /// Width and height in pixels.
    pub size: (u32, u32),
    /// A line above the plot saying what the values are (none by default: the caption says).
    pub title: Option<String>,
}

impl LineChart {
    /// A chart of 720 × 360 pixels with linear axes and no series yet.
    pub fn new(x_label: &str, y_label: &str) -> LineChart {
        LineChart {
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            y_from_zero: true,
            markers: true,
            series: Vec::new(),
            size: (720, 360),
            title: None,
        }
    }

    /// Sets the title drawn above the plot.
    pub fn title(mut self, title: impl Into<String>) -> LineChart {
        self.title = Some(title.into());
        self
    }

    /// Adds a series.
    pub fn series(mut self, s: LineSeries) -> LineChart {
        self.series.push(s);
        self
    }

    /// Sets the x scale.
    pub fn x_scale(mut self, scale: Scale) -> LineChart {
        self.x_scale = scale;
        self
    }

    /// Sets the y scale.
    pub fn y_scale(mut self, scale: Scale) -> LineChart {
        self.y_scale = scale;
        self
    }

    /// Sets whether each point gets a marker.
    pub fn markers(mut self, on: bool) -> LineChart {
        self.markers = on;
        self
    }

    fn extent(&self) -> Option<((f64, f64), (f64, f64))> {
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for p in self.series.iter().flat_map(|s| &s.points) {
            if !(self.x_scale.accepts(p.x) && self.y_scale.accepts(p.y)) {
                continue;
            }
            xs.push(p.x);
            ys.push(p.y);
            if let Some((lo, hi)) = p.interval {
                ys.extend([lo, hi].into_iter().filter(|v| self.y_scale.accepts(*v)));
            }
        }
        if xs.is_empty() {
            return None;
        }
        if self.y_scale == Scale::Linear && self.y_from_zero {
            ys.push(0.0);
        }
        let span = |v: &[f64]| {
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            )
        };
        Some((span(&xs), span(&ys)))
    }

    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> Result<String, PlotError> {
        let ((x_min, x_max), (y_min, y_max)) = self.extent().ok_or(PlotError::NoData)?;
        let (w, h) = self.size;
        let y_axis = Axis::new(self.y_scale, y_min, y_max, 7);
        let y_area = (y_axis.label_width() + px(DESC_SIZE) + 22.0).ceil() as u32;
        let plot_w = w.saturating_sub(y_area + 20) as f64;
        // As many x ticks as fit with their labels apart.
        let mut x_ticks = 9;
        let mut x_axis = Axis::new(self.x_scale, x_min, x_max, x_ticks);
        while x_ticks > 2 {
            let widest = x_axis.label_width() + 12.0;
            if widest * x_axis.ticks.len() as f64 <= plot_w {
                break;
            }
            x_ticks -= 1;
            x_axis = Axis::new(self.x_scale, x_min, x_max, x_ticks);
        }
        let names: Vec<String> = self.series.iter().map(|s| s.name.clone()).collect();
        let colors: Vec<usize> =
            self.series.iter().enumerate().map(|(i, s)| s.color.unwrap_or(i)).collect();
        let legend_h = legend_height(&names, w);
        let x_area = (px(LABEL_SIZE) * 1.3 + 10.0 + px(DESC_SIZE) + 12.0) as u32;

        let mut buf = String::new();
        {
            let whole = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
            whole.fill(&WHITE).map_err(backend)?;
            let root = titled(&whole, self.title.as_deref())?;
            let shapes: Vec<Marker> = (0..names.len()).map(Marker::of).collect();
            draw_legend(&root, &names, &colors, w, Some(&shapes))?;
            let (_, body) = root.split_vertically(legend_h);
            let mut chart = ChartBuilder::on(&body)
                .margin_right(20)
                .margin_top(6)
                .x_label_area_size(x_area)
                .y_label_area_size(y_area)
                .build_cartesian_2d(Ticked::new(&x_axis), Ticked::new(&y_axis))
                .map_err(backend)?;
            let x_fmt = |v: &f64| x_axis.label(*v);
            let y_fmt = |v: &f64| y_axis.label(*v);
            chart
                .configure_mesh()
                .x_label_formatter(&x_fmt)
                .y_label_formatter(&y_fmt)
                .x_desc(self.x_label.as_str())
                .y_desc(self.y_label.as_str())
                .label_style(style(LABEL_SIZE))
                .axis_desc_style(style(DESC_SIZE))
                .bold_line_style(RGBColor(225, 228, 232).stroke_width(1))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(backend)?;
            let count = self.series.len();
            for (si, series) in self.series.iter().enumerate() {
                let color = color(colors[si]);
                // Earlier lines are wider, so that a line drawn over an equal one still shows
                // the one beneath as a border.
                let width = 2 + 2 * (count - 1 - si).min(2) as u32;
                let points: Vec<Placed> = series
                    .points
                    .iter()
                    .filter(|p| self.x_scale.accepts(p.x) && self.y_scale.accepts(p.y))
                    .map(|p| {
                        let x = self.x_scale.forward(p.x);
                        let y = self.y_scale.forward(p.y);
                        let whisker = p.interval.map(|(lo, hi)| {
                            (
                                y_axis.place(lo).unwrap_or(y_axis.lo),
                                y_axis.place(hi).unwrap_or(y_axis.lo),
                            )
                        });
                        (x, y, whisker)
                    })
                    .collect();
                let shape = Marker::of(si);
                let line: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.1)).collect();
                match shape.dashes() {
                    None => chart.draw_series(std::iter::once(PathElement::new(
                        line,
                        color.stroke_width(width),
                    ))),
                    Some((dash, gap)) => chart.draw_series(std::iter::once(
                        DashedPathElement::new(line, dash, gap, color.stroke_width(width)),
                    )),
                }
                .map_err(backend)?;
                for &(x, y, whisker) in &points {
                    if let Some((lo, hi)) = whisker {
                        draw_whisker(&mut chart, x, lo, hi, 5, &color)?;
                    }
                    if self.markers {
                        draw_marker(&mut chart, (x, y), shape, width as i32 + 1, color)?;
                    }
                }
            }
            whole.present().map_err(backend)?;
        }
        Ok(inline(buf, &format!("{} against {}", self.y_label, self.x_label)))
    }
}

/// One cell of a [`Heatmap`]: the value that sets its colour and the text printed in it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatCell {
    /// The value, coloured by the map's [`HeatScale`].
    pub value: f64,
    /// What the cell shows (the value as the tables print it).
    pub text: String,
    /// Print the text in bold (a significant change).
    pub strong: bool,
}

impl HeatCell {
    /// A cell.
    pub fn new(value: f64, text: impl Into<String>) -> HeatCell {
        HeatCell { value, text: text.into(), strong: false }
    }

    /// With its text in bold.
    pub fn strong(mut self, on: bool) -> HeatCell {
        self.strong = on;
        self
    }
}

/// How a [`Heatmap`] colours its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeatScale {
    /// From white (the smallest value) to dark blue (the largest).
    Sequential,
    /// Ratios: white at 1, blue for better and vermillion for worse, as far as the largest
    /// ratio (or its inverse) goes, on a log scale; `lower_is_better` says which side is better.
    Ratio {
        /// Whether a ratio below 1 is better.
        lower_is_better: bool,
    },
}

/// A grid of coloured cells, columns × rows, with each value printed in its cell and a colour
/// bar beside it: a measure over two axes of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// A line above the map saying what the values are.
    pub title: Option<String>,
    /// The columns' axis title, with the unit.
    pub x_label: String,
    /// The rows' axis title, with the unit.
    pub y_label: String,
    /// Column labels, left to right.
    pub columns: Vec<String>,
    /// Row labels, top to bottom.
    pub rows: Vec<String>,
    /// `cells[row][column]`; `None` draws a grey cell with `-`.
    pub cells: Vec<Vec<Option<HeatCell>>>,
    /// How values map to colours.
    pub scale: HeatScale,
    /// What the map shows, with the unit (its accessible name).
    pub legend: String,
    /// The smallest and largest value the colours span (default: the cells'), so that the maps
    /// of one measure side by side share their colours.
    pub extent: Option<(f64, f64)>,
    /// Width in pixels (the height follows from the rows).
    pub width: u32,
}

const HEAT_LOW: (f64, f64, f64) = (247.0, 251.0, 255.0);
const HEAT_HIGH: (f64, f64, f64) = (8.0, 48.0, 107.0);
const HEAT_BETTER: (f64, f64, f64) = (0.0, 114.0, 178.0);
const HEAT_WORSE: (f64, f64, f64) = (213.0, 94.0, 0.0);
const HEAT_WHITE: (f64, f64, f64) = (255.0, 255.0, 255.0);

fn mix(a: (f64, f64, f64), b: (f64, f64, f64), t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let m = |x: f64, y: f64| (x + (y - x) * t).round().clamp(0.0, 255.0) as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

/// Black or white, whichever reads better on `c`.
fn ink(c: RGBColor) -> RGBColor {
    let l = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if l < 140.0 {
        WHITE
    } else {
        BLACK
    }
}

impl Heatmap {
    /// An empty map 720 pixels wide.
    pub fn new(x_label: &str, y_label: &str, columns: Vec<String>, rows: Vec<String>) -> Heatmap {
        let cells = vec![vec![None; columns.len()]; rows.len()];
        Heatmap {
            title: None,
            x_label: x_label.into(),
            y_label: y_label.into(),
            columns,
            rows,
            cells,
            scale: HeatScale::Sequential,
            legend: String::new(),
            extent: None,
            width: 720,
        }
    }

    /// The colour of `v`, given the values' range `(lo, hi)` (for a ratio map: the largest
    /// |log ratio|, as `hi`).
    fn color(&self, v: f64, (lo, hi): (f64, f64)) -> RGBColor {
        match self.scale {
            HeatScale::Sequential => {
                let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
                mix(HEAT_LOW, HEAT_HIGH, t)
            }
            HeatScale::Ratio { lower_is_better } => {
                if v.is_nan() || v <= 0.0 || hi <= 0.0 {
                    return mix(HEAT_WHITE, HEAT_WHITE, 0.0);
                }
                let t = (v.ln() / hi).clamp(-1.0, 1.0);
                let better = (t < 0.0) == lower_is_better;
                // Never quite the full colour, so that the text stays readable.
                mix(HEAT_WHITE, if better { HEAT_BETTER } else { HEAT_WORSE }, t.abs() * 0.85)
            }
        }
    }

    fn range(&self) -> Option<(f64, f64)> {
        let values: Vec<f64> = self
            .cells
            .iter()
            .flatten()
            .flatten()
            .map(|c| c.value)
            .chain(self.extent.iter().flat_map(|&(lo, hi)| [lo, hi]))
            .filter(|v| v.is_finite() && (self.scale == HeatScale::Sequential || *v > 0.0))
            .collect();
        if values.is_empty() {
            return None;
        }
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(match self.scale {
            HeatScale::Sequential => (lo, hi),
            // At least ±1%, so that a map of equal ratios stays pale.
            HeatScale::Ratio { .. } => (0.0, lo.ln().abs().max(hi.ln().abs()).max(0.01)),
        })
    }

    /// The map as an `<svg>` element.
    pub fn svg(&self) -> Result<String, PlotError> {
        let range = self.range().ok_or(PlotError::NoData)?;
        let (nx, ny) = (self.columns.len().max(1), self.rows.len().max(1));
        let w = self.width;
        let title_h = if self.title.is_some() { TITLE_ROW } else { 0 };
        let row_label_w =
            self.rows.iter().map(|r| text_width(r, LABEL_SIZE)).fold(0.0, f64::max).min(200.0);
        let left = (px(DESC_SIZE) + 14.0 + row_label_w + 10.0).ceil() as i32;
        // The colour bar and its labels.
        let bar_labels = self.bar_ticks(range);
        let bar_label_w =
            bar_labels.iter().map(|(_, l)| text_width(l, LABEL_SIZE)).fold(0.0, f64::max);
        let right = (14.0 + 6.0 + bar_label_w + 12.0).ceil() as i32;
        let plot_w = (w as i32 - left - right).max(nx as i32 * 8);
        let cell_w = plot_w as f64 / nx as f64;
        // Rows tall enough for the rows' axis title beside them (up to 60 pixels each).
        let title_fit = (text_width(&self.y_label, DESC_SIZE) + 24.0) / ny as f64;
        let cell_h = title_fit.clamp(34.0, 60.0);
        let labels = CategoryLabels::layout(&self.columns, cell_w, 360);
        let top = title_h as i32 + 10;
        let plot_h = (cell_h * ny as f64).round() as i32;
        let bottom = labels.height as i32 + px(DESC_SIZE) as i32 + 18;
        let h = (top + plot_h + bottom).max(top + 160) as u32;
        let x_of = |i: usize| left + (i as f64 * cell_w).round() as i32;
        let y_of = |j: usize| top + (j as f64 * cell_h).round() as i32;

        let mut buf = String::new();
        {
            let whole = SVGBackend::with_string(&mut buf, (w, h)).into_drawing_area();
            whole.fill(&WHITE).map_err(backend)?;
            titled(&whole, self.title.as_deref())?;
            // The size that fits the longest cell text in a cell.
            let longest = self
                .cells
                .iter()
                .flatten()
                .flatten()
                .map(|c| c.text.chars().count())
                .max()
                .unwrap_or(1)
                .max(1) as f64;
            let size = (LABEL_SIZE).min((cell_w - 6.0) / (longest * 0.62) * 1.24);
            let show_text = size >= 9.0;
            for (j, row) in self.cells.iter().enumerate().take(ny) {
                for (i, c) in row.iter().enumerate().take(nx) {
                    let (x0, y0, x1, y1) = (x_of(i), y_of(j), x_of(i + 1), y_of(j + 1));
                    let fill = match c {
                        Some(c) if c.value.is_finite() => self.color(c.value, range),
                        _ => RGBColor(235, 235, 235),
                    };
                    whole
                        .draw(&Rectangle::new([(x0, y0), (x1, y1)], fill.filled()))
                        .map_err(backend)?;
                    whole
                        .draw(&Rectangle::new(
                            [(x0, y0), (x1, y1)],
                            RGBColor(215, 219, 224).stroke_width(1),
                        ))
                        .map_err(backend)?;
                    if !show_text {
                        continue;
                    }
                    let (text, strong) = match c {
                        Some(c) => (c.text.as_str(), c.strong),
                        None => ("-", false),
                    };
                    let weight = if strong { FontStyle::Bold } else { FontStyle::Normal };
                    let font = (FONT, size, weight).into_font().color(&ink(fill));
                    whole
                        .draw_text(
                            text,
                            &font.pos(Pos::new(HPos::Center, VPos::Center)),
                            ((x0 + x1) / 2, (y0 + y1) / 2),
                        )
                        .map_err(backend)?;
                }
            }
            // Row labels, right-aligned against the map.
            for (j, r) in self.rows.iter().enumerate() {
                let y = (y_of(j) + y_of(j + 1)) / 2;
                whole
                    .draw_text(
                        r,
                        &style(LABEL_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
                        (left - 8, y),
                    )
                    .map_err(backend)?;
            }
            // Column labels under the map.
            let line = CategoryLabels::line_height();
            for (i, lines) in labels.texts.iter().enumerate() {
                let Some(lines) = lines else { continue };
                let x = (x_of(i) + x_of(i + 1)) / 2;
                let (anchor, transform) = if labels.rotated {
                    (Pos::new(HPos::Right, VPos::Center), FontTransform::Rotate270)
                } else {
                    (Pos::new(HPos::Center, VPos::Top), FontTransform::None)
                };
                for (k, text) in lines.iter().enumerate() {
                    let dy = 6 + (k as f64 * line) as i32;
                    whole
                        .draw_text(
                            text,
                            &style(LABEL_SIZE).pos(anchor).transform(transform.clone()),
                            (x, top + plot_h + dy),
                        )
                        .map_err(backend)?;
                }
            }
            // Axis titles.
            whole
                .draw_text(
                    &self.x_label,
                    &style(DESC_SIZE).pos(Pos::new(HPos::Center, VPos::Top)),
                    (left + plot_w / 2, top + plot_h + labels.height as i32 + 8),
                )
                .map_err(backend)?;
            whole
                .draw_text(
                    &self.y_label,
                    &style(DESC_SIZE)
                        .pos(Pos::new(HPos::Center, VPos::Top))
                        .transform(FontTransform::Rotate270),
                    (4, top + plot_h / 2),
                )
                .map_err(backend)?;
            // The colour bar: 40 steps from the bottom (low) to the top (high).
            let bx = left + plot_w + 14;
            let (b_top, b_bottom) = (top, top + plot_h.max(120));
            let steps = 40;
            let at = |t: f64| b_bottom - ((b_bottom - b_top) as f64 * t).round() as i32;
            for k in 0..steps {
                let t0 = k as f64 / steps as f64;
                let t1 = (k + 1) as f64 / steps as f64;
                let v = self.bar_value(range, (t0 + t1) / 2.0);
                whole
                    .draw(&Rectangle::new(
                        [(bx, at(t1)), (bx + 14, at(t0))],
                        self.color(v, range).filled(),
                    ))
                    .map_err(backend)?;
            }
            whole
                .draw(&Rectangle::new(
                    [(bx, b_top), (bx + 14, b_bottom)],
                    RGBColor(120, 120, 120).stroke_width(1),
                ))
                .map_err(backend)?;
            for (t, label) in &bar_labels {
                let y = at(*t);
                whole
                    .draw(&PathElement::new(
                        vec![(bx + 14, y), (bx + 18, y)],
                        BLACK.stroke_width(1),
                    ))
                    .map_err(backend)?;
                whole
                    .draw_text(
                        label,
                        &style(LABEL_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
                        (bx + 21, y),
                    )
                    .map_err(backend)?;
            }
            whole.present().map_err(backend)?;
        }
        Ok(inline(buf, &format!("{} by {} and {}", self.legend, self.x_label, self.y_label)))
    }

    /// The value at fraction `t` of the colour bar, from bottom to top.
    fn bar_value(&self, (lo, hi): (f64, f64), t: f64) -> f64 {
        match self.scale {
            HeatScale::Sequential => lo + (hi - lo) * t,
            HeatScale::Ratio { .. } => ((2.0 * t - 1.0) * hi).exp(),
        }
    }

    /// Labelled places on the colour bar: the ends and the middle (1 on a ratio bar).
    fn bar_ticks(&self, range: (f64, f64)) -> Vec<(f64, String)> {
        [0.0, 0.5, 1.0]
            .into_iter()
            .map(|t| {
                let v = self.bar_value(range, t);
                let text = match self.scale {
                    HeatScale::Sequential => fmt::num(v),
                    HeatScale::Ratio { .. } => format!("{v:.3}"),
                };
                (t, text)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coinciding_line_series_differ_in_marker_and_dash() {
        let pts = vec![Point::new(1.0, 1.0), Point::new(2.0, 2.0), Point::new(4.0, 3.0)];
        let one = LineChart::new("x", "y").series(LineSeries::new("a", pts.clone()));
        let two = one.clone().series(LineSeries::new("b", pts));
        let (one, two) = (one.svg().unwrap(), two.svg().unwrap());
        // The first series: a solid line with circles; the second adds triangles (three in the
        // plot, one in the legend) and a dashed line drawn as many short pieces.
        assert_eq!(one.matches("<polygon").count(), 0);
        assert_eq!(two.matches("<polygon").count(), 4, "{two}");
        assert_eq!(two.matches("<circle").count(), one.matches("<circle").count());
        assert!(two.matches("<polyline").count() > one.matches("<polyline").count() + 5);
        assert_eq!(Marker::of(0), Marker::Circle);
        assert_eq!(Marker::of(5), Marker::Triangle);
    }

    #[test]
    fn nice_steps_are_1_2_5() {
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(1.0), 1.0);
        assert_eq!(nice_step(1.1), 2.0);
        assert_eq!(nice_step(420.0), 500.0);
    }

    #[test]
    fn linear_axis_covers_the_data_with_round_ticks() {
        // A range starting at 0 starts its axis at 0, not one step below.
        let z = Axis::new(Scale::Linear, 0.0, 3.63, 7);
        assert_eq!(z.lo, 0.0);
        let a = Axis::new(Scale::Linear, 0.0, 9.7, 7);
        assert_eq!(a.lo, 0.0);
        assert_eq!(a.hi, 10.0);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0", "2", "4", "6", "8", "10"]);
        // A tight range around 1, as ratios are.
        let r = Axis::new(Scale::Linear, 0.9949, 1.0, 7);
        assert!(r.lo <= 0.9949 && r.hi >= 1.0);
        assert!(r.ticks.iter().all(|t| t.1.starts_with("0.99") || t.1.starts_with("1.00")));
    }

    #[test]
    fn log_axes_tick_whole_powers() {
        let a = Axis::new(Scale::Log2, 1.0, 64.0, 9);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "2", "4", "8", "16", "32", "64"]);
        // Within 2.5 decades: 1-2-5 bounds and ticks.
        let r = Axis::for_bars(Scale::Log10, 0.906, 10.34, 9);
        let labels: Vec<&str> = r.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["0.5", "1", "2", "5", "10", "20"]);
        let b = Axis::new(Scale::Log10, 3.0, 250_000.0, 9);
        let labels: Vec<&str> = b.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1", "10", "100", "1,000", "10k", "100k", "1M"]);
        // A count of 1 on a log axis still gets a bar: the axis starts below it.
        let c = Axis::for_bars(Scale::Log10, 1.0, 5000.0, 9);
        assert!(c.lo < 0.0);
    }

    #[test]
    fn labels_that_do_not_fit_turn_upright_and_thin_out() {
        let short: Vec<String> = (1..=4).map(|i| i.to_string()).collect();
        assert!(!CategoryLabels::layout(&short, 100.0, 360).rotated);
        let long: Vec<String> = (0..40).map(|i| format!("configuration number {i}")).collect();
        let l = CategoryLabels::layout(&long, 10.0, 360);
        assert!(l.rotated);
        // 10-px slots and ~16-px lines: every second label.
        assert!(l.texts[0].is_some() && l.texts[1].is_none() && l.texts[2].is_some());
        // Labels that fit on two lines wrap instead of turning.
        let two: Vec<String> = vec!["walker cycles/walk".into(), "dTLB walks".into()];
        let w = CategoryLabels::layout(&two, 100.0, 360);
        assert!(!w.rotated);
        assert_eq!(w.texts[0], Some(vec!["walker".to_string(), "cycles/walk".to_string()]));
        assert!(l.height as f64 <= 360.0 * 0.4);
    }

    #[test]
    fn legend_wraps_when_the_names_do_not_fit() {
        let names: Vec<String> = (0..8).map(|i| format!("a rather long policy name {i}")).collect();
        let (_, rows) = legend_layout(&names, 720);
        assert!(rows >= 3, "{rows}");
        let (_, one) = legend_layout(&names[..2], 720);
        assert_eq!(one, 1);
    }

    #[test]
    fn bar_chart_has_axis_titles_and_no_namespace_url() {
        let chart = BarChart::new("policy", "µs per op", vec!["a".into(), "b".into()])
            .series(BarSeries::new("s", vec![Some(Bar::new(1.0).interval(0.5, 1.5)), None]));
        let svg = chart.svg().unwrap();
        assert!(svg.starts_with("<svg class=\"plot\""));
        assert!(!svg.contains("http"));
        assert!(svg.contains("µs per op") && svg.contains(">\npolicy\n<"));
    }

    #[test]
    fn nothing_to_draw_is_an_error_not_a_blank_plot() {
        let chart = BarChart::new("x", "y", vec!["a".into()])
            .series(BarSeries::new("s", vec![Some(Bar::new(0.0))]))
            .y_scale(Scale::Log10);
        assert_eq!(chart.svg(), Err(PlotError::NoData));
        let line =
            LineChart::new("x", "y").series(LineSeries::new("s", vec![Point::new(f64::NAN, 1.0)]));
        assert_eq!(line.svg(), Err(PlotError::NoData));
    }
}
