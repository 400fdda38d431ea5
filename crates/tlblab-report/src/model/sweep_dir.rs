//! A sweep's output directory (`tlblab sweep SPEC -o DIR`, crates/tlblab-sweep): its
//! `summary.json` (`tlblab.sweep.summary/1`, every point's mean, interval and ratio), and from
//! `results.jsonl` what the summary leaves out: the axes that stay fixed in each grid, and the
//! jobs that did not finish. The sweep's own summary type only serialises, so these read it back.

use serde::Deserialize;
use std::collections::BTreeMap;
use tlblab_stats::{ConfidenceInterval, RatioToBaseline, Verdict};

/// `summary.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct SweepSummary {
    /// The spec's name.
    pub name: String,
    /// `run` or `check`.
    pub kind: String,
    /// Jobs (rows).
    pub jobs: u64,
    /// The noise band, a fraction.
    pub noise: f64,
    /// The intervals' confidence.
    pub confidence: f64,
    /// Every point, in plan order.
    pub points: Vec<SweepPoint>,
}

/// A point of a grid: the varying axes' values and its measures over the seeds.
#[derive(Debug, Clone, Deserialize)]
pub struct SweepPoint {
    /// The grid's label.
    pub grid: String,
    /// `(axis, value)` of each axis that varies in the grid, in the grid's order.
    pub axes: Vec<(String, String)>,
    /// The baseline's `(axis, value)`, when the point has a baseline point.
    #[serde(default)]
    pub baseline: Option<(String, String)>,
    /// Whether it is its own baseline.
    #[serde(default)]
    pub is_baseline: bool,
    /// The measures summarised.
    pub measures: Vec<SweepMeasure>,
}

impl SweepPoint {
    /// The value of `axis` at this point.
    pub fn value(&self, axis: &str) -> Option<&str> {
        self.axes.iter().find(|(a, _)| a == axis).map(|(_, v)| v.as_str())
    }
}

/// One measure at one point.
#[derive(Debug, Clone, Deserialize)]
pub struct SweepMeasure {
    /// Its key (`scenario_metric`, `ipis_per_op`, `violations`, …).
    pub measure: String,
    /// Whether lower is better.
    pub lower_is_better: bool,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// Mean over the seeds.
    #[serde(default)]
    pub mean: Option<f64>,
    /// The interval of the mean.
    #[serde(default)]
    pub ci: Option<ConfidenceInterval>,
    /// The ratio to the baseline point, paired by seed.
    #[serde(default)]
    pub ratio: Option<RatioToBaseline>,
    /// What the ratio says, by the shared verdict rule.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Why a value is missing.
    #[serde(default)]
    pub note: Option<String>,
}

/// What `results.jsonl` adds: per grid (in order of appearance), the values of the axes that
/// stay fixed, the scenarios it ran, and how many of its jobs did not finish.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Per grid.
    pub grids: Vec<GridSetup>,
    /// The seeds of all rows, ascending, without repeats.
    pub seeds: Vec<u64>,
}

/// One grid's setup.
#[derive(Debug, Clone, Default)]
pub struct GridSetup {
    /// The grid's label.
    pub grid: String,
    /// Each axis (a row's column, the seed aside) with its values in order of appearance.
    pub columns: Vec<(String, Vec<String>)>,
    /// Rows whose run did not finish.
    pub unfinished: u64,
    /// Rows.
    pub rows: u64,
}

impl GridSetup {
    /// The axes with one value in every row, and that value.
    pub fn fixed(&self) -> Vec<(&str, &str)> {
        self.columns
            .iter()
            .filter(|(_, v)| v.len() == 1)
            .map(|(k, v)| (k.as_str(), v[0].as_str()))
            .collect()
    }

    /// The scenarios of the grid.
    pub fn scenarios(&self) -> Vec<&str> {
        self.columns
            .iter()
            .find(|(k, _)| k == "scenario")
            .map(|(_, v)| v.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }
}

/// The columns of a row that are not axes.
const NOT_AXES: &[&str] =
    &["index", "hash", "kind", "finished", "measures", "notes", "counters", "seed", "grid"];

impl Setup {
    /// Adds one row of `results.jsonl` (a JSON object).
    pub fn add(&mut self, row: &serde_json::Map<String, serde_json::Value>) {
        let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        let grid = row.get("grid").map(text).unwrap_or_default();
        if let Some(seed) = row.get("seed").and_then(serde_json::Value::as_u64) {
            if let Err(i) = self.seeds.binary_search(&seed) {
                self.seeds.insert(i, seed);
            }
        }
        let g = match self.grids.iter().position(|g| g.grid == grid) {
            Some(i) => &mut self.grids[i],
            None => {
                self.grids.push(GridSetup { grid, ..GridSetup::default() });
                self.grids.last_mut().expect("just pushed")
            }
        };
        g.rows += 1;
        if row.get("finished") == Some(&serde_json::Value::Bool(false)) {
            g.unfinished += 1;
        }
        for (k, v) in row {
            if NOT_AXES.contains(&k.as_str()) {
                continue;
            }
            let v = text(v);
            match g.columns.iter_mut().find(|(c, _)| c == k) {
                Some((_, values)) => {
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                None => g.columns.push((k.clone(), vec![v])),
            }
        }
    }

    /// The setup of `grid`.
    pub fn grid(&self, grid: &str) -> Option<&GridSetup> {
        self.grids.iter().find(|g| g.grid == grid)
    }
}

/// A sweep directory read: the summary, and the setup when `results.jsonl` was there.
#[derive(Debug, Clone)]
pub struct SweepDir {
    /// `summary.json`.
    pub summary: SweepSummary,
    /// From `results.jsonl`.
    pub setup: Option<Setup>,
    /// `spec.toml`'s `description`.
    pub description: Option<String>,
    /// `environment.json`: the machine the sweep ran on.
    pub environment: Option<serde_json::Value>,
}

/// The values of `axis` over `points`, in order of appearance.
pub fn values_of<'a>(points: &[&'a SweepPoint], axis: &str) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for p in points {
        if let Some(v) = p.value(axis) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// The points of each grid, grids in order of appearance.
pub fn grids(summary: &SweepSummary) -> Vec<(&str, Vec<&SweepPoint>)> {
    let mut out: BTreeMap<usize, (&str, Vec<&SweepPoint>)> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for p in &summary.points {
        let i = match order.iter().position(|g| *g == p.grid) {
            Some(i) => i,
            None => {
                order.push(&p.grid);
                order.len() - 1
            }
        };
        out.entry(i).or_insert((&p.grid, Vec::new())).1.push(p);
    }
    out.into_values().collect()
}
