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
    /// The first seed simulated on the preset measured before the live part over the same seed
    /// on the one measured after it (`None`: one calibration only): how far the host's drift
    /// during the live part moves this prediction.
    pub drift: Option<f64>,
}

/// How far simulated / measured may be from 1 before the summary flags a configuration: the
/// band a model built from path-level costs should keep on configurations no measured loop
/// accounts for (issue 28; docs/study-output.md, "Calibrated and predicted").
pub const AGREEMENT: f64 = 0.25;

/// How far a shape (the ratio of two neighbouring configurations, simulated over measured) may
/// be from 1: tighter than [`AGREEMENT`], since a cost the model gets wrong by the same factor
/// on both sides cancels.
pub const SHAPE_AGREEMENT: f64 = 0.15;

/// How far a measured loop's median may move between the calibration before the live part and
/// the one after it before the report lists it as drift.
pub const LOOP_DRIFT: f64 = 0.10;

/// One timing of the host preset's measured loops (`tlblab study` makes two: before and after
/// the live part).
#[derive(Debug, Clone, Deserialize)]
pub struct Calibration {
    /// The preset built from it.
    pub preset: String,
    /// When the loops were timed: seconds after the main job began.
    pub measured_at_s: f64,
    /// Each measured loop's median, ns per operation.
    pub loops_ns: std::collections::BTreeMap<String, f64>,
}

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
    /// The simulated ratio on the preset measured before the live part (each side's mean
    /// moved by its row's drift), when both sides have one.
    pub simulated_before: Option<f64>,
}

impl ShapeFigures {
    /// Simulated ratio over measured ratio.
    pub fn agreement(&self) -> f64 {
        self.simulated / self.measured
    }

    /// Whether it lies within ± [`SHAPE_AGREEMENT`].
    pub fn within(&self) -> bool {
        within_shape_band(self.agreement())
    }

    /// The agreement on the preset measured before the live part.
    pub fn agreement_before(&self) -> Option<f64> {
        Some(self.simulated_before? / self.measured)
    }

    /// Whether the host's drift decides the verdict: within the band on one preset and outside
    /// it on the other.
    pub fn verdict_drifts(&self) -> bool {
        self.agreement_before().is_some_and(|b| within_shape_band(b) != self.within())
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
        let simulated_before = match (n.drift, d.drift) {
            (Some(a), Some(b)) => Some(simulated * a / b).filter(|x| x.is_finite()),
            _ => None,
        };
        (measured.is_finite() && simulated.is_finite() && measured > 0.0).then_some(ShapeFigures {
            measured,
            simulated,
            simulated_before,
        })
    }
}

/// Whether a shape's agreement (simulated ratio / measured ratio) lies within ±
/// [`SHAPE_AGREEMENT`] of 1.
fn within_shape_band(agreement: f64) -> bool {
    (agreement - 1.0).abs() <= SHAPE_AGREEMENT
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

    /// Simulated / measured on the preset measured before the live part (the first seed's drift
    /// applied to the mean), when both calibrations were made.
    pub fn ratio_before(&self) -> Option<f64> {
        Some(self.ratio()? * self.drift?)
    }

    /// Whether the two calibrations disagree on whether this row lies within the band: the
    /// host's drift during the live part, not the model, decides its verdict.
    pub fn verdict_drifts(&self) -> bool {
        match (self.ratio(), self.ratio_before()) {
            (Some(after), Some(before)) => within_band(after) != within_band(before),
            _ => false,
        }
    }
}

/// How many of `rows` lie outside ± [`AGREEMENT`] on both calibrations (so whatever the host's
/// drift), when there were two.
pub fn outside_both(rows: &[&Row]) -> usize {
    rows.iter()
        .filter(|r| r.ratio().is_some_and(|x| !within_band(x)))
        .filter(|r| r.ratio_before().is_none_or(|x| !within_band(x)))
        .count()
}

/// Under a table of `rows`: those whose verdict the host's drift decides (outside the band on
/// one calibration, within it on the other), each with both ratios and the move of the loop
/// with the largest share of its value.
pub fn drift_list(doc: &mut Document, rows: &[&Row], calibrations: &[Calibration]) {
    let drifting: Vec<&&Row> = rows.iter().filter(|r| r.verdict_drifts()).collect();
    let [before, after] = calibrations else { return };
    if drifting.is_empty() {
        return;
    }
    doc.para(vec![
        b("Rows the host's drift decides. "),
        t(format!(
            "The host preset was built from loops timed before the live part and again after it \
             ({:.0} s apart); these rows lie within ±{:.0}% on one and outside on the other, so \
             they say more about the host's load than about the model:",
            after.measured_at_s - before.measured_at_s,
            AGREEMENT * 100.0
        )),
    ]);
    doc.push(Block::List(
        drifting
            .iter()
            .map(|r| {
                let moved = match &r.class {
                    Class::Predicted { largest: Some((by, share)) }
                    | Class::Calibrated { by, share } => {
                        match (before.loops_ns.get(by), after.loops_ns.get(by)) {
                            (Some(x), Some(y)) if *x > 0.0 => format!(
                                "; {by} ({:.0}% of the value) {} → {} ns, ×{:.2}",
                                share * 100.0,
                                fmt::num(*x),
                                fmt::num(*y),
                                y / x
                            ),
                            _ => String::new(),
                        }
                    }
                    _ => String::new(),
                };
                vec![
                    b(format!("{}: ", r.name)),
                    t(format!(
                        "{:.2} on the preset measured after the live part, {:.2} on the one \
                         before it{moved}",
                        r.ratio().unwrap_or(f64::NAN),
                        r.ratio_before().unwrap_or(f64::NAN)
                    )),
                ]
            })
            .collect(),
    ));
}

/// "How the host drifted": each measured loop's median before and after the live part, those
/// that moved beyond ± [`LOOP_DRIFT`] first.
fn drift_table(doc: &mut Document, calibrations: &[Calibration]) {
    let [before, after] = calibrations else { return };
    let mut moves: Vec<(&String, f64, f64)> = before
        .loops_ns
        .iter()
        .filter_map(|(name, x)| Some((name, *x, *after.loops_ns.get(name)?)))
        .filter(|(_, x, _)| *x > 0.0)
        .collect();
    let moved = |(_, x, y): &(&String, f64, f64)| (y / x - 1.0).abs() > LOOP_DRIFT;
    // Stable: the loops that moved first, each group in the loops' order.
    moves.sort_by_key(|m| !moved(m));
    let count = moves.iter().filter(|m| moved(m)).count();
    doc.heading(3, "How the host drifted during the live part".to_string());
    doc.para(vec![t(format!(
        "The loops the host preset measures, timed {:.0} s after the job began (before the live \
         part: {}) and again at {:.0} s (after it: {}, the preset every table here uses). {count} \
         of {} medians moved by more than ±{:.0}% (a median at or below 0, a difference lost \
         in noise, is left out). Each configuration's row in the tables above gives its ratio \
         on both presets.",
        before.measured_at_s,
        before.preset,
        after.measured_at_s,
        after.preset,
        moves.len(),
        LOOP_DRIFT * 100.0
    ))]);
    let mut table =
        Table::new(&["loop", "before, ns (median)", "after, ns (median)", "after / before"])
            .numeric_from(1);
    for m in &moves {
        let (name, x, y) = *m;
        let ratio = format!("{:.2}", y / x);
        table.row(vec![
            name.clone().into(),
            fmt::num(x).into(),
            fmt::num(y).into(),
            if moved(m) { cell(ratio, Tone::Significant) } else { ratio.into() },
        ]);
    }
    doc.push(Block::Details {
        summary: format!("The {} measured loops before and after the live part", moves.len()),
        blocks: vec![Block::Table(table)],
    });
}

/// Under a table of `rows`: the mechanisms the model is known to lack behind its rows outside
/// the band ([`super::gaps`]), if any.
pub fn gaps_list(doc: &mut Document, rows: &[&Row]) {
    let gaps = super::gaps::behind(rows).into_iter().map(|g| {
        let which: Vec<String> = g.params.iter().map(|(k, v)| format!("{k} {v}")).collect();
        (format!("{} ({})", g.scenario, which.join(", ")), g.lacks)
    });
    known_gaps(doc, "rows", gaps.collect());
}

/// "What the model lacks behind the WHAT outside the band", then each gap: what it explains,
/// and the mechanism with its evidence; nothing without gaps.
fn known_gaps(doc: &mut Document, what: &str, gaps: Vec<(String, &str)>) {
    if gaps.is_empty() {
        return;
    }
    doc.para(vec![b(format!("What the model lacks behind the {what} outside the band. "))]);
    doc.push(Block::List(
        gaps.into_iter()
            .map(|(explains, lacks)| vec![b(format!("{explains}: ")), t(lacks)])
            .collect(),
    ));
}

/// Under the shapes: those whose verdict the host's drift decides (within ± [`SHAPE_AGREEMENT`]
/// on one preset, outside on the other), with both agreements.
pub fn shape_drift_list(doc: &mut Document, shapes: &[Shape], rows: &[Row]) {
    let drifting: Vec<(&Shape, ShapeFigures)> = shapes
        .iter()
        .filter_map(|s| Some((s, s.figures(rows)?)))
        .filter(|(_, f)| f.verdict_drifts())
        .collect();
    if drifting.is_empty() {
        return;
    }
    doc.para(vec![
        b("Shapes the host's drift decides. "),
        t(format!(
            "Each side's simulation moved by its row's drift: these shapes lie within ±{:.0}% on \
             one preset and outside on the other:",
            SHAPE_AGREEMENT * 100.0
        )),
    ]);
    doc.push(Block::List(
        drifting
            .iter()
            .map(|(s, f)| {
                vec![
                    b(format!("{}: ", s.name)),
                    t(format!(
                        "{:.2} on the preset measured after the live part, {:.2} on the one \
                         before it",
                        f.agreement(),
                        f.agreement_before().unwrap_or(f64::NAN)
                    )),
                ]
            })
            .collect(),
    ));
}

/// How many of `shapes` lie outside ± [`SHAPE_AGREEMENT`] on both presets (on the one, where
/// there was one calibration).
pub fn shapes_outside_both(shapes: &[ShapeFigures]) -> usize {
    shapes
        .iter()
        .filter(|f| !f.within() && !f.agreement_before().is_some_and(within_shape_band))
        .count()
}

/// Under the shapes: the mechanisms the model lacks behind the shapes outside their band.
pub fn shape_gaps_list(doc: &mut Document, shapes: &[Shape], rows: &[Row]) {
    let out: Vec<&str> = shapes
        .iter()
        .filter(|s| s.figures(rows).is_some_and(|f| !f.within()))
        .map(|s| s.name.as_str())
        .collect();
    let gaps = super::gaps::behind_shapes(&out).into_iter().map(|g| (g.shapes.join("; "), g.lacks));
    known_gaps(doc, "shapes", gaps.collect());
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
    /// The timings of the measured loops the presets were built from, in order: before and
    /// after the live part (one, or none, in older results).
    pub calibrations: Vec<Calibration>,
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
        doc.push(Block::Table(rows_table(&rows, h.seed, !h.calibrations.is_empty())));
        drift_list(doc, &rows, &h.calibrations);
    }
    drift_table(doc, &h.calibrations);
    if !h.shapes.is_empty() {
        doc.heading(3, "Shapes: ratios between neighbouring configurations".to_string());
        doc.para(vec![t(format!(
            "Each shape divides one configuration's mean by its neighbour's, measured and \
             simulated; agreement is simulated ratio / measured ratio, within ±{:.0}% or not. A \
             shape the run did not measure (quick settings measure fewer) shows -.",
            SHAPE_AGREEMENT * 100.0
        ))]);
        let before = h.calibrations.len() == 2;
        let mut header = vec!["shape", "measured ratio", "simulated ratio", "sim/meas", "within"];
        if before {
            header.push("sim/meas on the preset measured before");
        }
        let mut table = Table::new(&header).numeric_from(1);
        for shape in &h.shapes {
            let f = shape.figures(&h.rows);
            let missing = || cell("-", Tone::Missing);
            let mut cells = vec![
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
            ];
            if before {
                let b = f.and_then(|f| f.agreement_before());
                cells.push(b.map_or_else(missing, |b| format!("{b:.2}").into()));
            }
            table.row(cells);
        }
        doc.push(Block::Table(table));
        shape_drift_list(doc, &h.shapes, &h.rows);
        shape_gaps_list(doc, &h.shapes, &h.rows);
    }
    if !h.peers.is_empty() {
        doc.heading(3, "Peers: the real programs beside their simulated twins".to_string());
        let peers: Vec<&Row> = h.peers.iter().collect();
        let (out, compared) = outside(&peers);
        doc.para(vec![t(format!(
            "Programs of other projects, run as they are, each simulated with the same \
             parameters; {out} of {compared} outside {band} of measured."
        ))]);
        doc.push(Block::Table(rows_table(&peers, h.seed, !h.calibrations.is_empty())));
        drift_list(doc, &peers, &h.calibrations);
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

/// The table of measured beside simulated for `rows`; with `before`, the ratio on the preset
/// measured before the live part too.
fn rows_table(rows: &[&Row], seed: u64, before: bool) -> Table {
    let mut header = vec![
        "configuration",
        "unit",
        "measured mean ± sd (runs)",
        "measured 95% CI",
        "simulated mean ± sd (seeds)",
        "simulated / measured",
        "within ±25%",
    ];
    if before {
        header.push("sim/meas on the preset measured before");
    }
    header.push("largest share of one measured loop");
    let mut table = Table::new(&header).numeric_from(2);
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
        let mut cells = vec![
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
        ];
        if before {
            cells.push(match r.ratio_before() {
                Some(x) if within_band(x) => format!("{x:.2}").into(),
                Some(x) => cell(format!("{x:.2} OUT"), Tone::Significant),
                None => cell("-", Tone::Missing),
            });
        }
        cells.push(share);
        table.row(cells);
    }
    table
}
