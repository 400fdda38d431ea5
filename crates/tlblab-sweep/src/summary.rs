//! The end of a sweep: per point (every axis but the seed) and measure, the mean ± 95% CI over
//! its seeds, and its ratio to the baseline point judged by the shared verdict rule.

use crate::plan::{Plan, Point};
use crate::row::{lower_is_better, Row};
use crate::spec::{Axis, Kind, Value};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;
use tlblab_stats::{judge, ConfidenceInterval, Effect, RatioToBaseline, Verdict};

/// The JSON schema of `summary.json`.
pub const SCHEMA: &str = "tlblab.sweep.summary/1";

/// Confidence of every interval.
pub const CONFIDENCE: f64 = 0.95;

/// A sweep's summary.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The tlblab version.
    pub tlblab_version: &'static str,
    /// The spec's name.
    pub name: String,
    /// `run` or `check`.
    pub kind: Kind,
    /// Jobs (rows).
    pub jobs: u64,
    /// The noise band, a fraction.
    pub noise: f64,
    /// The confidence of the intervals.
    pub confidence: f64,
    /// One entry per point, in plan order.
    pub points: Vec<PointSummary>,
}

/// A point of a grid: its axes (the seed aside) and its measures over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct PointSummary {
    /// The grid's label.
    pub grid: String,
    /// The axes that vary in the grid, with this point's values.
    pub axes: Vec<(String, String)>,
    /// The baseline's axis and value, when this point has a baseline point.
    pub baseline: Option<(String, String)>,
    /// Whether this point is its own baseline.
    pub is_baseline: bool,
    /// Each summarised measure.
    pub measures: Vec<MeasureSummary>,
}

/// One measure at one point.
#[derive(Clone, Debug, Serialize)]
pub struct MeasureSummary {
    /// Its key (a results column without `m.`).
    pub measure: String,
    /// Whether lower is better.
    pub lower_is_better: bool,
    /// The seeds, ascending, and their values.
    pub seeds: Vec<u64>,
    /// The value per seed (`null`: the run has none).
    pub values: Vec<Option<f64>>,
    /// Mean over the seeds.
    pub mean: Option<f64>,
    /// Sample standard deviation.
    pub stddev: Option<f64>,
    /// The 95% Student-t interval of the mean (≥ 2 seeds).
    pub ci: Option<ConfidenceInterval>,
    /// The ratio to the baseline point, paired by seed (log-t interval).
    pub ratio: Option<RatioToBaseline>,
    /// What the ratio's interval says, by `tlblab_stats::judge`.
    pub effect: Option<Effect>,
    /// The same for a measure with a better direction.
    pub verdict: Option<Verdict>,
    /// Why a value is missing.
    pub note: Option<String>,
}

/// The axes of each grid but the seed: a point is its grid and their values.
fn grid_axes(plan: &Plan) -> HashMap<&str, Vec<Axis>> {
    plan.spec
        .grids
        .iter()
        .map(|g| {
            let axes = g.axes.iter().map(|a| a.axis).filter(|&a| a != Axis::Seed).collect();
            (g.label.as_str(), axes)
        })
        .collect()
}

/// Summarises `rows` (one per job, in plan order).
pub fn summarise(plan: &Plan, rows: &[Row]) -> Summary {
    let spec = &plan.spec;
    let axes_of = grid_axes(plan);
    let key = |p: &Point, axes: &[Axis]| -> (String, Vec<Value>) {
        (p.grid.clone(), axes.iter().map(|&a| p.value(a)).collect())
    };
    // Points in plan order, each with its rows sorted by seed; indexed by their key, so that a
    // sweep of many jobs is summarised in linear time.
    let mut points: Vec<(Point, Vec<&Row>)> = Vec::new();
    let mut index: HashMap<(String, Vec<Value>), usize> = HashMap::new();
    for row in rows {
        let k = key(&row.point, &axes_of[row.point.grid.as_str()]);
        match index.get(&k) {
            Some(&i) => points[i].1.push(row),
            None => {
                index.insert(k, points.len());
                points.push((Point { seed: 0, ..row.point.clone() }, vec![row]));
            }
        }
    }
    for (_, list) in &mut points {
        list.sort_by_key(|r| r.point.seed);
    }
    let varying = |grid: &str| -> Vec<Axis> {
        spec.grids
            .iter()
            .find(|g| g.label == grid)
            .map(|g| {
                g.axes
                    .iter()
                    .filter(|a| a.values.len() > 1 && a.axis != Axis::Seed)
                    .map(|a| a.axis)
                    .collect()
            })
            .unwrap_or_default()
    };
    let out = points
        .iter()
        .map(|(point, list)| {
            let axes = varying(&point.grid);
            let baseline = plan.baseline(&point.grid).cloned();
            // The baseline point: the same value on every axis of the grid but the baseline's.
            let grid_axes = &axes_of[point.grid.as_str()];
            let base = baseline.as_ref().and_then(|(axis, value)| {
                let (grid, mut values) = key(point, grid_axes);
                if let Some(i) = grid_axes.iter().position(|a| a == axis) {
                    values[i] = value.clone();
                }
                index.get(&(grid, values)).map(|&i| &points[i])
            });
            let base_rows = base.map(|(_, l)| l);
            let is_baseline = base.is_some_and(|(q, _)| q == point);
            let measures = plan
                .measures(&point.grid)
                .iter()
                .map(|m| {
                    measure(
                        m,
                        point,
                        list,
                        base_rows.filter(|_| !is_baseline),
                        spec.noise,
                        spec.kind,
                    )
                })
                .collect();
            PointSummary {
                grid: point.grid.clone(),
                axes: axes
                    .iter()
                    .map(|&a| (a.key().to_string(), point.value(a).to_string()))
                    .collect(),
                baseline: baseline
                    .filter(|_| base_rows.is_some())
                    .map(|(a, v)| (a.key().to_string(), v.to_string())),
                is_baseline,
                measures,
            }
        })
        .collect();
    Summary {
        schema: SCHEMA,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        name: spec.name.clone(),
        kind: spec.kind,
        jobs: rows.len() as u64,
        noise: spec.noise,
        confidence: CONFIDENCE,
        points: out,
    }
}

fn measure(
    key: &str,
    point: &Point,
    rows: &[&Row],
    baseline: Option<&Vec<&Row>>,
    noise: f64,
    kind: Kind,
) -> MeasureSummary {
    let values: Vec<Option<f64>> =
        rows.iter().map(|r| r.measures.get(key).copied().flatten()).collect();
    let lower = lower_is_better(key, &point.scenario);
    let mut s = MeasureSummary {
        measure: key.to_string(),
        lower_is_better: lower,
        seeds: rows.iter().map(|r| r.point.seed).collect(),
        values: values.clone(),
        mean: None,
        stddev: None,
        ci: None,
        ratio: None,
        effect: None,
        verdict: None,
        note: None,
    };
    let Some(present) = values.iter().copied().collect::<Option<Vec<f64>>>() else {
        s.note = rows.iter().find_map(|r| r.notes.get(key).cloned()).or(Some("no value".into()));
        return s;
    };
    if let Ok(ms) = tlblab_stats::mean_std(&present) {
        s.mean = Some(ms.mean);
        s.stddev = Some(ms.stddev);
    }
    s.ci = tlblab_stats::mean_interval(&present, CONFIDENCE).ok();
    if present.len() < 2 {
        s.note = Some("one seed: no interval".into());
    }
    // Checker counts are totals to read, not speeds to compare.
    let Some(base) = baseline.filter(|_| kind == Kind::Run) else {
        return s;
    };
    let base_values: Option<Vec<f64>> =
        base.iter().map(|r| r.measures.get(key).copied().flatten()).collect();
    let same_seeds = base.iter().map(|r| r.point.seed).eq(rows.iter().map(|r| r.point.seed));
    match base_values {
        Some(b) if same_seeds && present.len() >= 2 => {
            match tlblab_stats::ratio_to_baseline(&present, &b, CONFIDENCE) {
                Ok(ratio) => {
                    let effect = judge(Some(&ratio.ci), None, 0.05, noise);
                    s.effect = Some(effect);
                    s.verdict = Some(Verdict::of(effect, lower));
                    s.ratio = Some(ratio);
                }
                Err(e) => s.note = Some(format!("no ratio: {e}")),
            }
        }
        Some(_) if !same_seeds => s.note = Some("no ratio: the baseline has other seeds".into()),
        Some(_) => {}
        None => s.note = Some("no ratio: the baseline has no value".into()),
    }
    s
}

/// `summary.txt`: per grid, one line per point and measure.
pub fn render(summary: &Summary) -> String {
    let mut out = format!(
        "tlblab sweep {}: {} jobs ({}); mean ± 95% CI over seeds; ratios to the baseline paired by seed, judged against ±{:.1}% noise\n",
        summary.name,
        summary.jobs,
        match summary.kind {
            Kind::Run => "one run per seed",
            Kind::Check => "the safety checker",
        },
        summary.noise * 100.0
    );
    let mut grid = "";
    for p in &summary.points {
        if p.grid != grid {
            grid = &p.grid;
            let _ = write!(out, "\n{grid}");
            if let Some((a, v)) = &p.baseline {
                let _ = write!(out, " (baseline {a} = {v})");
            }
            out.push('\n');
        }
        let at = if p.axes.is_empty() {
            "(one point)".to_string()
        } else {
            p.axes.iter().map(|(a, v)| format!("{a}={v}")).collect::<Vec<_>>().join(" ")
        };
        for m in &p.measures {
            let value = match (m.mean, &m.ci) {
                (Some(mean), Some(ci)) => {
                    let d = decimals(mean);
                    format!("{mean:.d$} ± {:.d$}", (ci.high - ci.low) / 2.0)
                }
                (Some(mean), None) => format!("{mean:.*}", decimals(mean)),
                _ => "no value".into(),
            };
            let _ = write!(out, "  {at}  {}: {value} (n={})", m.measure, m.seeds.len());
            if p.is_baseline && p.baseline.is_some() {
                out.push_str("  [baseline]");
            } else if let (Some(r), Some(v)) = (&m.ratio, m.verdict) {
                let _ = write!(
                    out,
                    "  ratio {:.3} [{:.3}, {:.3}] {}",
                    r.ci.point,
                    r.ci.low,
                    r.ci.high,
                    v.text(summary.noise)
                );
            } else if let Some(note) = &m.note {
                let _ = write!(out, "  ({note})");
            }
            out.push('\n');
        }
    }
    out
}

/// Decimals that show four significant digits of `v` (at most 6).
fn decimals(v: f64) -> usize {
    if v == 0.0 || !v.is_finite() {
        return 0;
    }
    (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize
}
