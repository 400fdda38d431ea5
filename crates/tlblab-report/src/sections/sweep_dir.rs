//! A sweep's directory (`tlblab sweep SPEC -o DIR`): what was swept, then per grid and measure
//! the summary table (mean ± 95% CI over the seeds, ratio to the baseline and its verdict) and
//! a plot: lines against the grid's numeric axis (one per value of the others), a heatmap when
//! two axes vary and no line plot fits, bars for one axis of names.

use super::{figure, Ctx};
use crate::doc::{b, c, cell, t, Block, Cell, Document, Span, Table, Tone};
use crate::fmt;
use crate::model::sweep_dir::{grids, values_of, GridSetup, SweepDir, SweepMeasure, SweepPoint};
use crate::plot::{
    Bar, BarChart, BarSeries, HeatCell, HeatScale, Heatmap, LineChart, LineSeries, Point, Scale,
};
use tlblab_kernel::workloads::{self, Metric};
use tlblab_studies::Measure;

/// Lines in one plot at most (colours and markers stay distinct up to here).
const MAX_LINES: usize = 8;
/// Tables longer than this are folded under their plot in HTML.
const FOLD_ROWS: usize = 24;
/// Heatmaps per measure at most (one per value of the axes beyond the map's two).
const MAX_PANELS: usize = 6;

/// The axes in a spec's order (a row's columns are read in name order).
const ORDER: &[&str] = &[
    "machine",
    "cpus",
    "scenario",
    "policy",
    "ceiling",
    "schedules",
    "max_ipi_delay",
    "disturb_every",
    "iterations",
    "touch",
    "busy",
    "tasks",
    "mode",
    "op",
    "pages",
    "cycles_per_page",
    "jobs",
    "window_ms",
    "burst_us",
    "warmup_ms",
];

/// What an axis is, with its unit, for plot axes.
fn axis_label(axis: &str) -> String {
    match axis {
        "machine" => "machine preset".into(),
        "cpus" => "simulated CPUs".into(),
        "scenario" => "scenario".into(),
        "policy" => "policy".into(),
        "ceiling" => "tlb_single_page_flush_ceiling, pages".into(),
        "schedules" => "perturbed schedules per job".into(),
        "max_ipi_delay" => "longest IPI delay, cycles".into(),
        "disturb_every" => "cycles between disturbances per CPU".into(),
        "iterations" => "iterations of the measured loop".into(),
        "touch" => "pages touched per round trip".into(),
        "busy" => "busy sibling threads".into(),
        "tasks" => "tasks".into(),
        "pages" => "pages per task's region".into(),
        "cycles_per_page" => "work per page, cycles".into(),
        "jobs" => "compile jobs".into(),
        "window_ms" => "window, ms".into(),
        "burst_us" => "interrupts-off burst, µs".into(),
        "warmup_ms" => "warm-up, ms".into(),
        other => other.replace('_', " "),
    }
}

/// A measure's name with its unit, for a grid whose scenarios are `scenarios`.
fn measure_label(key: &str, scenarios: &[&str]) -> String {
    let Some(m) = Measure::ALL.iter().copied().find(|m| m.key() == key) else {
        // The checker's counts.
        return key.replace('_', " ");
    };
    if m != Measure::ScenarioMetric {
        // Only the scenario's metric depends on the scenario.
        return m.label(Metric::MicrosPerOp).to_string();
    }
    let metrics: Vec<Metric> =
        scenarios.iter().filter_map(|s| workloads::scenario(s).ok().map(|i| i.metric)).collect();
    match metrics.first() {
        Some(&first) if metrics.iter().all(|&x| x == first) && scenarios.len() == metrics.len() => {
            format!("{} ({} metric)", first.unit(), scenarios.join(", "))
        }
        _ => "the scenario's metric (its own unit)".into(),
    }
}

/// The unit alone (the axis title of a plot).
fn measure_unit(key: &str, scenarios: &[&str]) -> String {
    let label = measure_label(key, scenarios);
    match label.split_once(" (") {
        Some((unit, _)) if key == "scenario_metric" => unit.to_string(),
        _ => label,
    }
}

/// Whether every value parses as a number.
fn numeric(values: &[&str]) -> bool {
    !values.is_empty() && values.iter().all(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
}

fn number(v: &str) -> f64 {
    v.parse().unwrap_or(f64::NAN)
}

/// How a grid is drawn.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    /// Mean against the numeric axis `x`, a line per combination of `series`.
    Lines { x: String, series: Vec<String> },
    /// Columns `x`, rows `y`, one map per combination of `panels`.
    Heat { x: String, y: String, panels: Vec<String> },
    /// Bars over the one axis of names.
    Bars { axis: String },
    /// No plot, and why.
    None(String),
}

/// Combinations of the values of `axes` present in `points`, in order of appearance.
fn combos<'a>(points: &[&'a SweepPoint], axes: &[String]) -> Vec<Vec<&'a str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for p in points {
        let k: Vec<&str> = axes.iter().map(|a| p.value(a).unwrap_or("")).collect();
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// The grid's dimensions: its varying axes, less those that move with an earlier one (a `zip`
/// group: each value of one goes with one value of the other, both ways), and those companions
/// as `(companion, axis)`.
fn dimensions(points: &[&SweepPoint]) -> (Vec<String>, Vec<(String, String)>) {
    let all: Vec<String> =
        points.first().map(|p| p.axes.iter().map(|(a, _)| a.clone()).collect()).unwrap_or_default();
    let pairs = |a: &str, b: &str| -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> =
            points.iter().filter_map(|p| Some((p.value(a)?, p.value(b)?))).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let together = |a: &str, b: &str| {
        let v = pairs(a, b);
        // Each value of `a` once, and each value of `b` once.
        let unique = |mut keys: Vec<&str>| {
            keys.sort_unstable();
            keys.windows(2).all(|w| w[0] != w[1])
        };
        unique(v.iter().map(|p| p.0).collect()) && unique(v.iter().map(|p| p.1).collect())
    };
    let (mut kept, mut companions): (Vec<String>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    for b in all {
        match kept.iter().find(|a| together(a, &b)) {
            Some(a) => companions.push((b, a.clone())),
            None => kept.push(b),
        }
    }
    (kept, companions)
}

/// An axis' title, naming the axes that move with it.
fn dimension_label(axis: &str, companions: &[(String, String)]) -> String {
    let with: Vec<&str> =
        companions.iter().filter(|(_, a)| a == axis).map(|(c, _)| c.as_str()).collect();
    match with.len() {
        0 => axis_label(axis),
        1 => format!("{} ({} moves with it)", axis_label(axis), with[0]),
        _ => format!("{} ({} move with it)", axis_label(axis), with.join(", ")),
    }
}

fn plan(points: &[&SweepPoint], axes: &[String]) -> Plan {
    let (nums, names): (Vec<&String>, Vec<&String>) =
        axes.iter().partition(|a| numeric(&values_of(points, a)));
    let rest = |skip: &[&String]| -> Vec<String> {
        axes.iter().filter(|a| !skip.contains(a)).cloned().collect()
    };
    if nums.len() == 1 {
        let series = rest(&[nums[0]]);
        if combos(points, &series).len() <= MAX_LINES {
            return Plan::Lines { x: nums[0].clone(), series };
        }
    }
    match axes.len() {
        0 => Plan::None("one point: nothing varies".into()),
        1 => Plan::Bars { axis: axes[0].clone() },
        _ => {
            // The map's two axes: numeric ones first, those with more values first (fewer
            // panels), the one with more values across.
            let count = |a: &&String| std::cmp::Reverse(values_of(points, a).len());
            let (mut nums, mut names) = (nums.clone(), names.clone());
            nums.sort_by_key(count);
            names.sort_by_key(count);
            let mut two: Vec<&String> = nums.iter().chain(names.iter()).take(2).copied().collect();
            if values_of(points, two[1]).len() > values_of(points, two[0]).len() {
                two.swap(0, 1);
            }
            let panels = rest(&two);
            let n = combos(points, &panels).len();
            if n > MAX_PANELS {
                return Plan::None(format!(
                    "{} axes vary: a heatmap of {} × {} for each of {n} combinations of {} would be too many; the table has every point",
                    axes.len(),
                    two[0],
                    two[1],
                    panels.join(", ")
                ));
            }
            Plan::Heat { x: two[0].clone(), y: two[1].clone(), panels }
        }
    }
}

/// `axis=value, …` of a combination (the value alone for one axis).
fn combo_name(axes: &[String], values: &[&str]) -> String {
    if axes.len() == 1 {
        return values[0].to_string();
    }
    axes.iter().zip(values).map(|(a, v)| format!("{a}={v}")).collect::<Vec<_>>().join(", ")
}

fn measure_of<'a>(p: &'a SweepPoint, key: &str) -> Option<&'a SweepMeasure> {
    p.measures.iter().find(|m| m.measure == key)
}

/// `mean ± half the interval`, the mean alone, or why there is none.
fn value_cell(m: &SweepMeasure) -> Cell {
    match (m.mean, &m.ci) {
        (Some(mean), Some(ci)) => fmt::mean_sd(mean, (ci.high - ci.low) / 2.0).into(),
        (Some(mean), None) => fmt::num(mean).into(),
        _ => cell(m.note.clone().unwrap_or_else(|| "no value".into()), Tone::Missing),
    }
}

fn ratio_cells(p: &SweepPoint, m: &SweepMeasure) -> (Cell, Cell) {
    if p.is_baseline {
        return ("baseline".into(), "-".into());
    }
    match (&m.ratio, m.verdict) {
        (Some(r), Some(v)) => {
            let tone = if v.is_change() { Tone::Significant } else { Tone::Plain };
            let significant = !r.ci.contains(1.0);
            (
                cell(fmt::ratio_ci(r.ci.point, r.ci.low, r.ci.high, significant), tone),
                cell(v.to_string(), tone),
            )
        }
        _ if m.mean.is_none() => ("-".into(), "-".into()),
        _ => (
            cell(format!("({})", m.note.as_deref().unwrap_or("no ratio")), Tone::Missing),
            "-".into(),
        ),
    }
}

/// Adds a sweep directory's section.
pub fn sweep_dir(doc: &mut Document, ctx: &Ctx, name: &str, s: &SweepDir) {
    let sum = &s.summary;
    let check = sum.kind == "check";
    let grid_list = grids(sum);
    doc.heading(2, format!("Sweep {}: {} jobs", sum.name, fmt::group(sum.jobs)));
    if let Some(d) = &s.description {
        doc.para(vec![t(d)]);
    }
    let seeds: Vec<u64> = match &s.setup {
        Some(setup) => setup.seeds.clone(),
        None => {
            let mut v: Vec<u64> = sum
                .points
                .iter()
                .flat_map(|p| p.measures.iter().flat_map(|m| &m.seeds))
                .copied()
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    let seed_text = match (seeds.first(), seeds.last()) {
        (Some(a), Some(z)) if seeds.len() as u64 == z - a + 1 && seeds.len() > 1 => {
            format!("{} per point ({a}–{z})", seeds.len())
        }
        _ => format!(
            "{} per point ({})",
            seeds.len(),
            seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut kv: Vec<(String, Vec<Span>)> = vec![
        ("Input".into(), vec![c(name)]),
        ("Spec".into(), vec![c(&sum.name)]),
        (
            "Kind".into(),
            vec![t(if check {
                "check: each job runs the safety checker over its perturbed schedules"
            } else {
                "run: each job runs its scenario once, with one seed"
            })],
        ),
        (
            "Jobs".into(),
            vec![t(format!(
                "{} in {} grid{}, {} points",
                fmt::group(sum.jobs),
                grid_list.len(),
                if grid_list.len() == 1 { "" } else { "s" },
                fmt::group(sum.points.len() as u64)
            ))],
        ),
        ("Seeds".into(), vec![t(seed_text)]),
    ];
    if !check {
        kv.push(("Noise band".into(), vec![t(format!("±{:.1}%", sum.noise * 100.0))]));
    }
    doc.push(Block::KeyValues(kv));
    let conf = sum.confidence * 100.0;
    let how = if check {
        format!("each figure is the mean over the seeds of a job's count, with its {conf:.0}% Student-t interval; the checker's counts are totals to read, so no ratios are taken.")
    } else {
        format!("each job is one deterministic run of the model; the seeds change timer phases and the workload's random draws. A figure is the mean over a point's seeds with its {conf:.0}% Student-t interval. A ratio is to the grid's baseline point (the same values on every other axis), the geometric mean of the per-seed ratios paired by seed with its {conf:.0}% log-t interval; its verdict is improved or regressed when the interval lies wholly beyond the ±{:.1}% noise band (in bold), within noise when it excludes 1 but reaches into the band, not significant when it holds 1. Intervals are tight because the model is deterministic: read the size of a ratio, not only its verdict.", sum.noise * 100.0)
    };
    doc.para(vec![b("How to read: "), t(how)]);
    for (grid, points) in &grid_list {
        grid_section(doc, ctx, s, grid, points);
    }
}

fn grid_section(doc: &mut Document, ctx: &Ctx, s: &SweepDir, grid: &str, points: &[&SweepPoint]) {
    let sum = &s.summary;
    let setup: Option<&GridSetup> = s.setup.as_ref().and_then(|x| x.grid(grid));
    doc.heading(3, format!("Grid {grid}"));
    let axes: Vec<String> = points[0].axes.iter().map(|(a, _)| a.clone()).collect();
    let mut kv: Vec<(String, Vec<Span>)> = Vec::new();
    if let Some(g) = setup {
        let mut fixed: Vec<(&str, &str)> =
            g.fixed().into_iter().filter(|(k, _)| !axes.iter().any(|a| a == k)).collect();
        fixed.sort_by_key(|(k, _)| ORDER.iter().position(|o| o == k).unwrap_or(ORDER.len()));
        let fixed: Vec<String> = fixed.iter().map(|(k, v)| format!("{k} {v}")).collect();
        if !fixed.is_empty() {
            kv.push(("Fixed".into(), vec![t(fixed.join(" · "))]));
        }
    }
    let (dims, companions) = dimensions(points);
    let listed = |a: &str| format!("{a} ({})", values_of(points, a).join(", "));
    // A zip group as one dimension: `cpus (4, 8) with tasks (4, 8)`.
    let varies: Vec<String> = dims
        .iter()
        .map(|d| {
            std::iter::once(listed(d))
                .chain(companions.iter().filter(|(_, a)| a == d).map(|(c, _)| listed(c)))
                .collect::<Vec<_>>()
                .join(" with ")
        })
        .collect();
    kv.push((
        "Varies".into(),
        vec![t(if varies.is_empty() { "nothing (one point)".into() } else { varies.join(" × ") })],
    ));
    let baseline = points.iter().find_map(|p| p.baseline.clone());
    if let Some((a, v)) = &baseline {
        kv.push(("Baseline".into(), vec![t(format!("{a} = {v}: each point's ratios are to the point with {a} = {v} and the same other values"))]));
    }
    doc.push(Block::KeyValues(kv));
    if let Some(g) = setup.filter(|g| g.unfinished > 0) {
        doc.push(Block::Warning(vec![t(format!(
            "{} of {} jobs stopped short of their scenario's work (not at a window that ends them by design), so their figures cover less of it.",
            g.unfinished, g.rows
        ))]));
    }
    let scenarios: Vec<&str> = setup.map(GridSetup::scenarios).unwrap_or_default();
    let plan = plan(points, &dims);
    // The table's axis columns: each dimension, followed by the axes that move with it.
    let columns: Vec<String> = dims
        .iter()
        .flat_map(|d| {
            std::iter::once(d.clone())
                .chain(companions.iter().filter(move |(_, a)| a == d).map(|(c, _)| c.clone()))
        })
        .collect();
    let keys: Vec<&str> = points[0].measures.iter().map(|m| m.measure.as_str()).collect();
    let seeds =
        points.iter().flat_map(|p| p.measures.iter().map(|m| m.seeds.len())).max().unwrap_or(0);
    for key in keys {
        let label = measure_label(key, &scenarios);
        let lower =
            points.iter().find_map(|p| measure_of(p, key)).is_none_or(|m| m.lower_is_better);
        doc.heading(
            4,
            format!("{label}, {}", if lower { "lower is better" } else { "higher is better" }),
        );
        let table = table(points, &columns, key, &baseline, seeds, sum.noise, sum.confidence);
        if ctx.plots && !matches!(plan, Plan::None(_)) {
            let labels = Labels { label: &label, scenarios: &scenarios, companions: &companions };
            plots(doc, ctx, points, &plan, key, &labels, &baseline, seeds, lower);
            // Below its plot, a long table is folded on the page.
            if table.rows.len() > FOLD_ROWS {
                doc.push(Block::Details {
                    summary: format!("Every point of the plot: {} rows", table.rows.len()),
                    blocks: vec![Block::Table(table)],
                });
                continue;
            }
        }
        doc.table(table);
    }
    if let Plan::None(why) = &plan {
        if !axes.is_empty() {
            doc.para(vec![t(format!("No plot: {why}."))]);
        }
    }
}

fn table(
    points: &[&SweepPoint],
    axes: &[String],
    key: &str,
    baseline: &Option<(String, String)>,
    seeds: usize,
    noise: f64,
    confidence: f64,
) -> Table {
    let with_ratio = points.iter().any(|p| measure_of(p, key).is_some_and(|m| m.ratio.is_some()));
    let mut head: Vec<String> = axes.to_vec();
    if head.is_empty() {
        head.push("point".into());
    }
    let first_value = head.len();
    let conf = confidence * 100.0;
    head.push(format!("mean ± {conf:.0}% CI"));
    let mut note = format!("mean over {seeds} seeds ± half its {conf:.0}% Student-t interval");
    if let (true, Some((a, v))) = (with_ratio, baseline) {
        head.push(format!("ratio [{conf:.0}% CI]"));
        head.push("verdict".into());
        note += &format!("; ratio: to the point with {a} = {v}, the geometric mean of the per-seed ratios with its {conf:.0}% log-t interval; verdict against the ±{:.1}% noise band (improved or regressed: beyond it).", noise * 100.0);
    } else {
        note.push('.');
    }
    let mut table = Table::new(&head).numeric_from(first_value);
    for (i, a) in axes.iter().enumerate() {
        table.numeric[i] = numeric(&values_of(points, a));
    }
    for p in points {
        let Some(m) = measure_of(p, key) else { continue };
        let mut row: Vec<Cell> = if axes.is_empty() {
            vec!["(one point)".into()]
        } else {
            axes.iter().map(|a| p.value(a).unwrap_or("-").into()).collect()
        };
        row.push(value_cell(m));
        if with_ratio && baseline.is_some() {
            let (r, v) = ratio_cells(p, m);
            row.extend([r, v]);
        }
        table.row(row);
    }
    table.note(note)
}

/// What a grid's plots are titled with.
struct Labels<'a> {
    /// The measure, with its unit.
    label: &'a str,
    /// The grid's scenarios.
    scenarios: &'a [&'a str],
    /// Axes that move with another.
    companions: &'a [(String, String)],
}

#[allow(clippy::too_many_arguments)]
fn plots(
    doc: &mut Document,
    ctx: &Ctx,
    points: &[&SweepPoint],
    plan: &Plan,
    key: &str,
    labels: &Labels,
    baseline: &Option<(String, String)>,
    seeds: usize,
    lower: bool,
) {
    let label = labels.label;
    let axis_label = |a: &str| dimension_label(a, labels.companions);
    let unit = measure_unit(key, labels.scenarios);
    let better = if lower { "lower is better" } else { "higher is better" };
    let what = format!("mean of {seeds} seeds, 95% CI");
    match plan {
        Plan::Lines { x, series } => {
            let xs: Vec<f64> = values_of(points, x).iter().map(|v| number(v)).collect();
            let (lo, hi) = xs
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), &v| (a.min(v), z.max(v)));
            let log = lo > 0.0 && hi / lo >= 8.0;
            let mut chart = LineChart::new(&axis_label(x), &unit)
                .title(format!("{label}: {what}"))
                .x_scale(if log { Scale::Log2 } else { Scale::Linear });
            let lines = combos(points, series);
            for (i, combo) in lines.iter().enumerate() {
                let mut pts: Vec<Point> = points
                    .iter()
                    .filter(|p| series.iter().zip(combo).all(|(a, v)| p.value(a) == Some(v)))
                    .filter_map(|p| {
                        let m = measure_of(p, key)?;
                        let mean = m.mean?;
                        let pt = Point::new(number(p.value(x)?), mean);
                        Some(match &m.ci {
                            Some(ci) => pt.interval(ci.low, ci.high),
                            None => pt,
                        })
                    })
                    .collect();
                pts.sort_by(|a, b| a.x.total_cmp(&b.x));
                let name =
                    if series.is_empty() { label.to_string() } else { combo_name(series, combo) };
                chart = chart.series(LineSeries::new(name, pts).color(i));
            }
            let per = if series.is_empty() {
                String::new()
            } else {
                format!(", one line per {}", series.join(" × "))
            };
            doc.push(figure(
                ctx,
                || chart.svg(),
                format!(
                    "{label} against {}{}{per}: point = mean of {seeds} seeds, whisker = its 95% Student-t interval ({better}).",
                    axis_label(x),
                    if log { " (log₂ axis)" } else { "" },
                ),
                String::new(),
            ));
        }
        Plan::Heat { x, y, panels } => {
            let ratios = baseline.is_some()
                && points.iter().any(|p| measure_of(p, key).is_some_and(|m| m.ratio.is_some()));
            let mut columns: Vec<&str> = values_of(points, x);
            let mut rows: Vec<&str> = values_of(points, y);
            if numeric(&columns) {
                columns.sort_by(|a, b| number(a).total_cmp(&number(b)));
            }
            // Numbers grow upwards.
            if numeric(&rows) {
                rows.sort_by(|a, b| number(b).total_cmp(&number(a)));
            }
            // One colour scale for every panel of the measure.
            let values: Vec<f64> = points
                .iter()
                .filter_map(|p| measure_of(p, key))
                .filter_map(|m| if ratios { m.ratio.map(|r| r.ci.point) } else { m.mean })
                .filter(|v| v.is_finite())
                .collect();
            let extent = (!values.is_empty()).then(|| {
                values
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), &v| (a.min(v), z.max(v)))
            });
            for (n, combo) in combos(points, panels).into_iter().enumerate() {
                let in_panel: Vec<&&SweepPoint> = points
                    .iter()
                    .filter(|p| panels.iter().zip(&combo).all(|(a, v)| p.value(a) == Some(v)))
                    .collect();
                let mut map = Heatmap::new(
                    &axis_label(x),
                    &axis_label(y),
                    columns.iter().map(|s| s.to_string()).collect(),
                    rows.iter().map(|s| s.to_string()).collect(),
                );
                let panel = if panels.is_empty() {
                    String::new()
                } else {
                    let at: Vec<String> =
                        panels.iter().zip(&combo).map(|(a, v)| format!("{a} = {v}")).collect();
                    format!(" at {}", at.join(", "))
                };
                map.extent = extent;
                let (a, v) = baseline.clone().unwrap_or_default();
                if ratios {
                    map.scale = HeatScale::Ratio { lower_is_better: lower };
                    map.title = Some(format!("{label}{panel}: ratio to {a} = {v}, {seeds} seeds"));
                    map.legend = format!("ratio to {a} = {v}");
                } else {
                    map.title = Some(format!("{label}{panel}: {what}"));
                    map.legend = unit.clone();
                }
                for p in &in_panel {
                    let (Some(i), Some(j)) = (
                        columns.iter().position(|c| Some(*c) == p.value(x)),
                        rows.iter().position(|r| Some(*r) == p.value(y)),
                    ) else {
                        continue;
                    };
                    let Some(m) = measure_of(p, key) else { continue };
                    map.cells[j][i] = if ratios {
                        match (&m.ratio, p.is_baseline) {
                            (_, true) => Some(HeatCell::new(1.0, "base")),
                            (Some(r), _) => Some(
                                HeatCell::new(r.ci.point, format!("{:.3}", r.ci.point))
                                    .strong(m.verdict.is_some_and(|v| v.is_change())),
                            ),
                            _ => None,
                        }
                    } else {
                        m.mean.map(|mean| HeatCell::new(mean, fmt::num(mean)))
                    };
                }
                let caption = if n > 0 {
                    format!("{label}{panel}: as the first map.")
                } else if ratios {
                    format!(
                        "{label}{panel} by {} (across) and {} (down), relative to the point with {a} = {v}: each cell is the geometric mean of the {seeds} per-seed ratios; blue is better, vermillion worse ({better}), on a log scale; bold: improved or regressed beyond the noise band. The table has the means and intervals.",
                        axis_label(x),
                        axis_label(y)
                    )
                } else {
                    format!(
                        "{label}{panel} by {} (across) and {} (down): each cell is the mean of {seeds} seeds, darker is more ({better}); the table has the intervals.",
                        axis_label(x),
                        axis_label(y)
                    )
                };
                doc.push(figure(ctx, || map.svg(), caption, String::new()));
            }
        }
        Plan::Bars { axis } => {
            let cats: Vec<&str> = values_of(points, axis);
            let bars = cats
                .iter()
                .map(|v| {
                    let p = points.iter().find(|p| p.value(axis) == Some(v))?;
                    let m = measure_of(p, key)?;
                    let bar = Bar::new(m.mean?);
                    Some(match &m.ci {
                        Some(ci) => bar.interval(ci.low, ci.high),
                        None => bar,
                    })
                })
                .collect();
            let mut chart = BarChart::new(
                &axis_label(axis),
                &unit,
                cats.iter().map(|s| s.to_string()).collect(),
            )
            .title(format!("{label}: {what}"))
            .series(BarSeries::new(label, bars));
            chart.color_by_category = true;
            doc.push(figure(
                ctx,
                || chart.svg(),
                format!("{label} by {}: bar = mean of {seeds} seeds, whisker = its 95% Student-t interval ({better}).", axis_label(axis)),
                String::new(),
            ));
        }
        Plan::None(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(axes: &[(&str, &str)]) -> SweepPoint {
        SweepPoint {
            grid: "g".into(),
            axes: axes.iter().map(|(a, v)| (a.to_string(), v.to_string())).collect(),
            baseline: None,
            is_baseline: false,
            measures: Vec::new(),
        }
    }

    #[test]
    fn one_numeric_axis_gives_lines_two_numeric_a_heatmap() {
        let mut ps = Vec::new();
        for cpus in ["4", "8", "16"] {
            for policy in ["a", "b", "c"] {
                ps.push(point(&[("cpus", cpus), ("policy", policy)]));
            }
        }
        let refs: Vec<&SweepPoint> = ps.iter().collect();
        assert_eq!(
            plan(&refs, &dimensions(&refs).0),
            Plan::Lines { x: "cpus".into(), series: vec!["policy".into()] }
        );
        let mut ps = Vec::new();
        for ceiling in ["1", "33", "512"] {
            for pages in ["4", "32"] {
                ps.push(point(&[("ceiling", ceiling), ("pages", pages)]));
            }
        }
        let refs: Vec<&SweepPoint> = ps.iter().collect();
        assert_eq!(
            plan(&refs, &dimensions(&refs).0),
            Plan::Heat { x: "ceiling".into(), y: "pages".into(), panels: vec![] }
        );
        let one = [point(&[("policy", "a")]), point(&[("policy", "b")])];
        let refs: Vec<&SweepPoint> = one.iter().collect();
        assert_eq!(plan(&refs, &dimensions(&refs).0), Plan::Bars { axis: "policy".into() });
        let none = [point(&[])];
        let refs: Vec<&SweepPoint> = none.iter().collect();
        assert!(matches!(plan(&refs, &dimensions(&refs).0), Plan::None(_)));
    }

    #[test]
    fn axes_that_move_together_are_one_dimension() {
        let ps: Vec<SweepPoint> = ["4", "8", "16"]
            .iter()
            .flat_map(|c| ["a", "b"].map(|p| point(&[("cpus", c), ("policy", p), ("tasks", c)])))
            .collect();
        let refs: Vec<&SweepPoint> = ps.iter().collect();
        let (dims, companions) = dimensions(&refs);
        assert_eq!(dims, ["cpus", "policy"]);
        assert_eq!(companions, [("tasks".to_string(), "cpus".to_string())]);
        assert_eq!(
            plan(&refs, &dims),
            Plan::Lines { x: "cpus".into(), series: vec!["policy".into()] }
        );
        assert_eq!(dimension_label("cpus", &companions), "simulated CPUs (tasks moves with it)");
    }

    #[test]
    fn too_many_lines_turn_into_a_heatmap() {
        let mut ps = Vec::new();
        for cpus in ["4", "8"] {
            for policy in 0..9 {
                ps.push(point(&[("cpus", cpus), ("policy", &policy.to_string())]));
            }
        }
        // Nine policies are not numbers here only by name: make them names.
        for p in &mut ps {
            p.axes[1].1 = format!("p{}", p.axes[1].1);
        }
        let refs: Vec<&SweepPoint> = ps.iter().collect();
        assert_eq!(
            plan(&refs, &dimensions(&refs).0),
            Plan::Heat { x: "policy".into(), y: "cpus".into(), panels: vec![] }
        );
    }

    /// A summary of `policy × mode` without a baseline: a heatmap of the means; one point has
    /// no value (its note is shown, its cell is grey).
    fn names_only() -> String {
        let mut points = Vec::new();
        for (i, policy) in ["a", "b", "c"].iter().enumerate() {
            for (j, mode) in ["threads", "processes"].iter().enumerate() {
                let missing = i == 2 && j == 1;
                let mean = 10.0 * (i + 1) as f64 + j as f64;
                points.push(serde_json::json!({
                    "grid": "names",
                    "axes": [["policy", policy], ["mode", mode]],
                    "baseline": null,
                    "is_baseline": false,
                    "measures": [{
                        "measure": "ipis_per_op",
                        "lower_is_better": true,
                        "seeds": [1, 2],
                        "values": [mean, mean],
                        "mean": if missing { None } else { Some(mean) },
                        "ci": if missing { None } else {
                            Some(serde_json::json!({"low": mean - 0.5, "high": mean + 0.5, "point": mean, "confidence": 0.95}))
                        },
                        "note": if missing { Some("no operation completed") } else { None },
                    }],
                }));
            }
        }
        serde_json::json!({
            "schema": "tlblab.sweep.summary/1",
            "tlblab_version": "0.1.0",
            "name": "names",
            "kind": "run",
            "jobs": 12,
            "noise": 0.01,
            "confidence": 0.95,
            "points": points,
        })
        .to_string()
    }

    #[test]
    fn two_axes_of_names_give_a_heatmap_of_means() {
        let mut r = crate::Report::new("t");
        assert_eq!(r.add_json("summary.json", &names_only()).unwrap(), crate::InputKind::SweepDir);
        let html = r.render_html();
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(html.contains("aria-label=\"IPIs/op by policy and mode\""), "{html}");
        assert!(html.contains("mean of 2 seeds, 95% CI"));
        // Five cells with values, one grey with `-`; no ratio column without a baseline.
        assert!(html.contains(">\n-\n<") && !html.contains("NaN"));
        assert!(!html.contains("ratio ["));
        let text = r.render_text(60);
        assert!(text.contains("no operation completed"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
    }

    #[test]
    fn a_summary_that_does_not_fit_names_its_field() {
        let bad = names_only().replacen("\"jobs\":12", "\"jobs\":\"many\"", 1);
        let e = crate::Report::new("t").add_json("s.json", &bad).unwrap_err().to_string();
        assert!(e.contains("s.json") && e.contains("jobs"), "{e}");
    }

    #[test]
    fn labels_carry_units() {
        assert_eq!(measure_label("scenario_metric", &["storm"]), "µs/op (storm metric)");
        assert_eq!(measure_unit("scenario_metric", &["storm"]), "µs/op");
        assert_eq!(measure_label("ipis_per_op", &[]), "IPIs/op");
        assert_eq!(measure_label("violations_per_schedule", &[]), "violations per schedule");
        assert_eq!(axis_label("ceiling"), "tlb_single_page_flush_ceiling, pages");
    }
}
