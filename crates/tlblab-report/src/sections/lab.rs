//! The parts of `tlblab study`'s `results.json` (schema `tlblab.study/1`) that no other input
//! has: what ran and what was skipped, and each measured configuration beside its simulation on
//! a preset of the same machine (the honest check of the model on a machine we have).

use serde::Deserialize;
use tlblab_stats::{bootstrap_ci, mean, Summary};

use super::{figure, Ctx};
use crate::doc::{b, cell, t, Block, Document, Table, Tone};
use crate::fmt;
use crate::plot::{Bar, BarChart, BarSeries};

/// Resamples of the bootstrap interval of a measured mean (as `tlblab bench`).
const CI_RESAMPLES: usize = 10_000;

/// One step of the main job.
#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    /// What it was.
    pub name: String,
    /// `done`, `skipped` or `failed`.
    pub status: String,
    /// Why it was skipped or failed.
    #[serde(default)]
    pub reason: Option<String>,
    /// Wall-clock seconds.
    #[serde(default)]
    pub seconds: f64,
}

/// Whether a configuration's prediction is mostly one of the host preset's measured loops
/// (`tlblab study` scales each in turn: docs/host-preset.md, "Calibrated and predicted").
#[derive(Debug, Clone, PartialEq)]
pub enum Class {
    /// No measured loop accounts for most of it: evidence about the model.
    Predicted {
        /// The loop with the largest share and that share, if any loop moved it.
        largest: Option<(String, f64)>,
    },
    /// Most of it is one measured loop timed alone: agreement tests the measurement.
    Calibrated {
        /// The loop.
        by: String,
        /// Its share of the predicted value (0–1).
        share: f64,
    },
    /// Not classified (results from before the classification, a built-in preset, no
    /// simulated value): the reason.
    Unclassified(String),
}

impl Class {
    /// From the `calibration` object `tlblab study` writes beside a simulation (absent: older
    /// results).
    pub fn from_json(v: &serde_json::Value) -> Class {
        let largest = || {
            let l = &v["largest"];
            Some((l["loop"].as_str()?.to_string(), l["share"].as_f64()?))
        };
        match v["class"].as_str() {
            Some("predicted") => Class::Predicted { largest: largest() },
            Some("calibrated") => match largest() {
                Some((by, share)) => Class::Calibrated { by, share },
                None => Class::Unclassified("a calibrated row without its loop".into()),
            },
            _ => Class::Unclassified(
                v["why"]
                    .as_str()
                    .unwrap_or("not classified (results written before the classification)")
                    .to_string(),
            ),
        }
    }

    /// The loop and share, in words: `dontneed_1 93%`.
    pub fn share_text(&self) -> String {
        match self {
            Class::Predicted { largest: Some((by, share)) } | Class::Calibrated { by, share } => {
                format!("{by} {:.0}%", share * 100.0)
            }
            Class::Predicted { largest: None } => "none".into(),
            Class::Unclassified(why) => why.clone(),
        }
    }
}

/// A measured configuration and its simulation.
#[derive(Debug, Clone)]
pub struct Row {
    /// `scenario --k v …`.
    pub name: String,
    /// The scenario.
    pub scenario: String,
    /// Its parameters (as the bench records them).
    pub params: std::collections::BTreeMap<String, String>,
    /// Calibrated or predicted.
    pub class: Class,
    /// The metric's unit (as the bench names it).
    pub unit: String,
    /// Measured values, one per run.
    pub measured: Vec<f64>,
    /// Simulated values, one per seed (empty: not simulated, see `note`).
    pub simulated: Vec<f64>,
    /// Why there is no simulation.
    pub note: Option<String>,
}

/// How far simulated / measured may be from 1 before the summary flags a configuration: the
/// band a model built from path-level costs should keep on configurations no measured loop
/// accounts for (issue 28; docs/study-output.md, "Calibrated and predicted").
pub const AGREEMENT: f64 = 0.25;

/// How far a shape (the ratio of two neighbouring configurations, simulated over measured) may
/// be from 1: tighter than [`AGREEMENT`], since a cost the model gets wrong by the same factor
/// on both sides cancels.
pub const SHAPE_AGREEMENT: f64 = 0.15;

/// One side of a shape: a scenario and the parameters that pick the configuration out.
#[derive(Debug, Clone, Deserialize)]
pub struct ShapeSide {
    /// The scenario.
    pub scenario: String,
    /// Parameters the configuration must have (others may be anything).
    #[serde(default)]
    pub params: std::collections::BTreeMap<String, String>,
}

/// A ratio between two neighbouring configurations, measured against simulated.
#[derive(Debug, Clone, Deserialize)]
pub struct Shape {
    /// What it asks, in words.
    pub name: String,
    /// The numerator's configuration.
    pub numerator: ShapeSide,
    /// The denominator's configuration.
    pub denominator: ShapeSide,
}

/// A shape's figures, when both sides were measured and simulated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShapeFigures {
    /// Measured numerator mean over measured denominator mean.
    pub measured: f64,
    /// The same of the simulated means.
    pub simulated: f64,
}

impl ShapeFigures {
    /// Simulated ratio over measured ratio.
    pub fn agreement(&self) -> f64 {
        self.simulated / self.measured
    }

    /// Whether it lies within ± [`SHAPE_AGREEMENT`].
    pub fn within(&self) -> bool {
        (self.agreement() - 1.0).abs() <= SHAPE_AGREEMENT
    }
}

impl Shape {
    /// The shape's figures from `rows`, if both sides are there with both means.
    pub fn figures(&self, rows: &[Row]) -> Option<ShapeFigures> {
        let find = |side: &ShapeSide| {
            rows.iter().find(|r| {
                r.scenario == side.scenario
                    && side.params.iter().all(|(k, v)| r.params.get(k) == Some(v))
            })
        };
        let (n, d) = (find(&self.numerator)?, find(&self.denominator)?);
        let measured = n.measured_mean()? / d.measured_mean()?;
        let simulated = n.simulated_mean()? / d.simulated_mean()?;
        (measured.is_finite() && simulated.is_finite() && measured > 0.0)
            .then_some(ShapeFigures { measured, simulated })
    }
}

/// Whether simulated / measured `ratio` lies within ± [`AGREEMENT`] of 1.
pub fn within_band(ratio: f64) -> bool {
    (ratio - 1.0).abs() <= AGREEMENT
}

/// How many of `rows` of `class` lie outside ± [`AGREEMENT`], and how many were compared.
pub fn outside(rows: &[&Row]) -> (usize, usize) {
    let ratios: Vec<f64> = rows.iter().filter_map(|r| r.ratio()).collect();
    (ratios.iter().filter(|x| !within_band(**x)).count(), ratios.len())
}

impl Row {
    /// The mean of the measured runs.
    pub fn measured_mean(&self) -> Option<f64> {
        mean(&self.measured).ok()
    }

    /// The mean of the simulated seeds.
    pub fn simulated_mean(&self) -> Option<f64> {
        mean(&self.simulated).ok()
    }

    /// Simulated / measured, when both exist and the measured mean is not 0.
    pub fn ratio(&self) -> Option<f64> {
        match (self.measured_mean(), self.simulated_mean()) {
            (Some(m), Some(s)) if m != 0.0 => Some(s / m),
            _ => None,
        }
    }
}

/// Under a table of `rows`: the mechanisms the model is known to lack behind its rows outside
/// the band ([`super::gaps`]), if any.
pub fn gaps_list(doc: &mut Document, rows: &[&Row]) {
    let gaps = super::gaps::behind(rows);
    if gaps.is_empty() {
        return;
    }
    doc.para(vec![b("What the model lacks behind the rows outside the band. ")]);
    doc.push(Block::List(
        gaps.iter()
            .map(|g| {
                let which: Vec<String> = g.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
                vec![b(format!("{} ({}): ", g.scenario, which.join(", "))), t(g.lacks)]
            })
            .collect(),
    ));
}

/// The side-by-side comparison.
#[derive(Debug, Clone)]
pub struct HostComparison {
    /// The preset file.
    pub preset: Option<String>,
    /// Where its figures came from.
    pub provenance: Vec<String>,
    /// The policy simulated.
    pub policy: String,
    /// Per configuration: the main set's, then the predicted set's.
    pub rows: Vec<Row>,
    /// Ratios between neighbouring configurations to check.
    pub shapes: Vec<Shape>,
    /// Peer programs run beside their simulated twins (`tlblab study`'s peers step).
    pub peers: Vec<Row>,
    /// Seed of the bootstrap intervals.
    pub seed: u64,
}

impl HostComparison {
    /// The rows of one class, in order: `predicted`, `calibrated` or anything else.
    pub fn rows_of(&self, kind: &str) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| {
                matches!(
                    (&r.class, kind),
                    (Class::Predicted { .. }, "predicted")
                        | (Class::Calibrated { .. }, "calibrated")
                        | (Class::Unclassified(_), "unclassified")
                )
            })
            .collect()
    }
}

/// "Appendix: what ran": a line of totals, then the steps (folded in HTML), with the reasons
/// for those that did not run. It goes after every result: the bookkeeping, not the findings.
pub fn steps(doc: &mut Document, name: &str, steps: &[Step]) {
    doc.heading(2, format!("Appendix: what ran ({name})"));
    let count = |status: &str| steps.iter().filter(|s| s.status == status).count();
    let seconds: f64 = steps.iter().map(|s| s.seconds).sum();
    doc.para(vec![t(format!(
        "{} steps in {seconds:.0} s: {} done, {} skipped, {} failed.",
        steps.len(),
        count("done"),
        count("skipped"),
        count("failed")
    ))]);
    let mut table = Table::new(&["step", "status", "seconds", "why not"]).numeric_from(2);
    for s in steps {
        let tone = match s.status.as_str() {
            "done" => Tone::Plain,
            "skipped" => Tone::Missing,
            // A failure stands out (bold).
            _ => Tone::Significant,
        };
        table.row(vec![
            s.name.clone().into(),
            cell(s.status.clone(), tone),
            format!("{:.1}", s.seconds).into(),
            s.reason.clone().unwrap_or_default().into(),
        ]);
    }
    doc.push(Block::Details {
        summary: "Every step, its status and time".to_string(),
        blocks: vec![Block::Table(table)],
    });
}

/// "Simulated and measured on this machine": the predicted configurations first (the evidence),
/// then the calibrated ones (mostly a measured loop: they test the measurement), then the
/// shapes, the peers, a chart and the preset's provenance.
pub fn host(doc: &mut Document, ctx: &Ctx, h: &HostComparison) {
    doc.heading(2, "Simulated and measured on this machine".to_string());
    doc.push(Block::Para(vec![t(format!(
        "Each configuration measured by tlblab bench beside the same scenario simulated under {} \
         on the host preset{}, with the same CPUs and parameters. Measured: mean ± sd of the \
         runs and the bootstrap 95% CI of the mean; simulated: mean ± sd of the seeds. The ratio \
         is simulated / measured. Some of the preset's kernel-path costs are loops timed on this \
         machine (tlblab-pathcost; the rest is copied from the nearest built-in preset, see the \
         provenance below): a configuration whose simulated value is more than half one of \
         those loops (found by scaling each measured loop by 10% and simulating again; the \
         largest share is shown) is calibrated, and its agreement tests the measurement, not \
         the model. Only the predicted configurations are evidence about the model.",
        h.policy,
        h.preset.as_ref().map_or(String::new(), |p| format!(" ({p})"))
    ))]));
    let band = format!("±{:.0}%", AGREEMENT * 100.0);
    for (kind, heading) in [
        ("predicted", "Predicted: no measured loop is most of the value"),
        ("calibrated", "Calibrated: the value is mostly one loop the host preset measures"),
        ("unclassified", "Not classified"),
    ] {
        let rows = h.rows_of(kind);
        if rows.is_empty() {
            continue;
        }
        // Older results (no classification) keep the one table they had, without a heading.
        if rows.len() < h.rows.len() || kind != "unclassified" {
            doc.heading(3, heading.to_string());
            let (out, compared) = outside(&rows);
            doc.para(vec![t(format!(
                "{out} of {compared} {kind} configurations outside {band} of measured."
            ))]);
        }
        doc.push(Block::Table(rows_table(&rows, h.seed)));
    }
    if !h.shapes.is_empty() {
        doc.heading(3, "Shapes: ratios between neighbouring configurations".to_string());
        doc.para(vec![t(format!(
            "Each shape divides one configuration's mean by its neighbour's, measured and \
             simulated; agreement is simulated ratio / measured ratio, within ±{:.0}% or not. A \
             shape the run did not measure (quick settings measure fewer) shows -.",
            SHAPE_AGREEMENT * 100.0
        ))]);
        let mut table =
            Table::new(&["shape", "measured ratio", "simulated ratio", "sim/meas", "within"])
                .numeric_from(1);
        for shape in &h.shapes {
            let f = shape.figures(&h.rows);
            let missing = || cell("-", Tone::Missing);
            table.row(vec![
                shape.name.clone().into(),
                f.map_or_else(missing, |f| format!("{:.3}", f.measured).into()),
                f.map_or_else(missing, |f| format!("{:.3}", f.simulated).into()),
                f.map_or_else(missing, |f| format!("{:.2}", f.agreement()).into()),
                f.map_or_else(missing, |f| {
                    if f.within() {
                        cell("yes", Tone::Plain)
                    } else {
                        cell("NO", Tone::Significant)
                    }
                }),
            ]);
        }
        doc.push(Block::Table(table));
    }
    if !h.peers.is_empty() {
        doc.heading(3, "Peers: the real programs beside their simulated twins".to_string());
        let peers: Vec<&Row> = h.peers.iter().collect();
        let (out, compared) = outside(&peers);
        doc.para(vec![t(format!(
            "Programs of other projects, run as they are, each simulated with the same \
             parameters; {out} of {compared} outside {band} of measured."
        ))]);
        doc.push(Block::Table(rows_table(&peers, h.seed)));
        gaps_list(doc, &peers);
    }
    let mut categories = Vec::new();
    let (mut measured_bars, mut simulated_bars) = (Vec::new(), Vec::new());
    let mut summary = Vec::new();
    for r in &h.rows {
        // One chart needs one unit: the µs/op configurations, the most common.
        if r.unit != "µs/op" {
            continue;
        }
        let m = Summary::of(&r.measured).ok();
        let ci = measured_ci(r, h.seed);
        let s = Summary::of(&r.simulated).ok();
        categories.push(r.name.clone());
        measured_bars.push(m.map(|m| {
            let bar = Bar::new(m.mean).samples(r.measured.clone());
            match ci {
                Some(ci) => bar.interval(ci.low, ci.high),
                None => bar,
            }
        }));
        simulated_bars
            .push(s.map(|s| Bar::new(s.mean).interval(s.mean - s.stddev, s.mean + s.stddev)));
        let ratio = r.ratio().map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
        summary.push(format!("{}: ratio {ratio}", r.name));
    }
    if !categories.is_empty() {
        let chart = BarChart::new("configuration", "µs/op", categories)
            .series(BarSeries::new("measured", measured_bars))
            .series(BarSeries::new("simulated on the host preset", simulated_bars));
        doc.push(figure(
            ctx,
            || chart.svg(),
            "µs per operation, measured (bar: mean; whisker: bootstrap 95% CI of the mean; dots: \
             runs) and simulated (bar: mean; whisker: ± 1 sd of the seeds)."
                .to_string(),
            format!("simulated / measured: {}", summary.join("; ")),
        ));
    }
    if !h.provenance.is_empty() {
        doc.push(Block::Details {
            summary: "Where the host preset's figures came from".to_string(),
            blocks: vec![Block::List(h.provenance.iter().map(|l| vec![b(l.clone())]).collect())],
        });
    }
}

/// The bootstrap 95% CI of a row's measured mean.
fn measured_ci(r: &Row, seed: u64) -> Option<tlblab_stats::ConfidenceInterval> {
    Summary::of(&r.measured).ok()?;
    bootstrap_ci(&r.measured, |v| mean(v).unwrap_or(f64::NAN), CI_RESAMPLES, 0.95, seed).ok()
}

/// The table of measured beside simulated for `rows`.
fn rows_table(rows: &[&Row], seed: u64) -> Table {
    let mut table = Table::new(&[
        "configuration",
        "unit",
        "measured mean ± sd (runs)",
        "measured 95% CI",
        "simulated mean ± sd (seeds)",
        "simulated / measured",
        "within ±25%",
        "largest share of one measured loop",
    ])
    .numeric_from(2);
    for r in rows {
        let m = Summary::of(&r.measured).ok();
        let ci = measured_ci(r, seed);
        let s = Summary::of(&r.simulated).ok();
        let ratio = r.ratio().map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
        let range = match r.ratio() {
            Some(x) if within_band(x) => cell("yes", Tone::Plain),
            Some(_) => cell("NO", Tone::Significant),
            None => cell("-", Tone::Missing),
        };
        let share = match &r.class {
            Class::Unclassified(_) => cell("-", Tone::Missing),
            class => class.share_text().into(),
        };
        table.row(vec![
            r.name.clone().into(),
            r.unit.clone().into(),
            m.as_ref().map_or_else(
                || cell("not measured", Tone::Missing),
                |m| format!("{} ({})", fmt::mean_sd(m.mean, m.stddev), m.n).into(),
            ),
            ci.map_or_else(
                || cell("-", Tone::Missing),
                |ci| format!("{} … {}", fmt::num(ci.low), fmt::num(ci.high)).into(),
            ),
            s.as_ref().map_or_else(
                || cell(r.note.clone().unwrap_or_else(|| "-".into()), Tone::Missing),
                |s| format!("{} ({})", fmt::mean_sd(s.mean, s.stddev), s.n).into(),
            ),
            ratio.into(),
            range,
            share,
        ]);
    }
    table
}
