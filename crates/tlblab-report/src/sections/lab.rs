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

/// A measured configuration and its simulation.
#[derive(Debug, Clone)]
pub struct Row {
    /// `scenario --k v …`.
    pub name: String,
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
/// model is calibrated from instruction-level figures, not fitted, and agrees within 10–25% on
/// the configurations whose costs carry over (docs/study-output.md).
pub const AGREEMENT: f64 = 0.25;

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

/// The side-by-side comparison.
#[derive(Debug, Clone)]
pub struct HostComparison {
    /// The preset file.
    pub preset: Option<String>,
    /// Where its figures came from.
    pub provenance: Vec<String>,
    /// The policy simulated.
    pub policy: String,
    /// Per configuration.
    pub rows: Vec<Row>,
    /// Seed of the bootstrap intervals.
    pub seed: u64,
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

/// "Simulated and measured on this machine".
pub fn host(doc: &mut Document, ctx: &Ctx, h: &HostComparison) {
    doc.heading(2, "Simulated and measured on this machine".to_string());
    doc.push(Block::Para(vec![t(format!(
        "Each configuration measured by tlblab bench beside the same scenario simulated under {} \
         on the host preset{}, with the same CPUs and parameters. Measured: mean ± sd of the \
         runs and the bootstrap 95% CI of the mean; simulated: mean ± sd of the seeds. The ratio \
         is simulated / measured; the preset's instruction and kernel-path costs are copied from \
         the nearest built-in preset (see the provenance below), so a large gap points at a cost \
         or a mechanism the model lacks on this machine (e.g. IPIs through a hypervisor).",
        h.policy,
        h.preset.as_ref().map_or(String::new(), |p| format!(" ({p})"))
    ))]));
    let mut table = Table::new(&[
        "configuration",
        "unit",
        "measured mean ± sd (runs)",
        "measured 95% CI",
        "simulated mean ± sd (seeds)",
        "simulated / measured",
        "within ±25%",
    ])
    .numeric_from(2);
    let mut categories = Vec::new();
    let (mut measured_bars, mut simulated_bars) = (Vec::new(), Vec::new());
    let mut summary = Vec::new();
    for r in &h.rows {
        let m = Summary::of(&r.measured).ok();
        let ci = m.as_ref().and_then(|_| {
            bootstrap_ci(&r.measured, |v| mean(v).unwrap_or(f64::NAN), CI_RESAMPLES, 0.95, h.seed)
                .ok()
        });
        let s = Summary::of(&r.simulated).ok();
        let ratio = r.ratio().map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
        let range = match r.ratio() {
            Some(x) if (x - 1.0).abs() <= AGREEMENT => cell("yes", Tone::Plain),
            Some(_) => cell("NO", Tone::Significant),
            None => cell("-", Tone::Missing),
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
            ratio.clone().into(),
            range,
        ]);
        // One chart needs one unit: the µs/op configurations, the most common.
        if r.unit == "µs/op" {
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
            summary.push(format!("{}: ratio {ratio}", r.name));
        }
    }
    doc.push(Block::Table(table));
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
