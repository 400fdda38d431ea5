//! The fields of `tlblab.sim.study/1` and `tlblab.sim.study-all/1` (docs/sim-output.md) that
//! the report shows. Other fields are ignored, so a later tlblab that adds some still reads.

use serde::Deserialize;
use std::collections::BTreeMap;
pub use tlblab_studies::inputs::StudyInput;
pub use tlblab_studies::{Relative, SweepAxis};

/// `tlblab sim study NAME --json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Study {
    /// Version of the tlblab that ran it.
    pub tlblab_version: String,
    /// `s1-pti`.
    pub study: String,
    /// `s1`.
    pub short: String,
    /// What it compares.
    pub title: String,
    /// The kernel debate it mirrors.
    pub mirrors: String,
    /// `pti`, `pcid`, `la57`, `flush-info` or `xpfo`.
    pub layout: String,
    /// `--quick`: the figures are not the study's.
    pub quick: bool,
    /// Runs per policy.
    pub seeds: u64,
    /// The first seed.
    pub first_seed: u64,
    /// Why that many seeds.
    pub seeds_why: String,
    /// Confidence level of every ratio's interval.
    pub confidence: f64,
    /// The practical band of its verdicts (`--noise`; absent in results of older tlblab).
    #[serde(default)]
    pub noise: Option<f64>,
    /// Its inputs by origin (absent in results of older tlblab).
    #[serde(default)]
    pub inputs: Vec<StudyInput>,
    /// The parts that ran.
    pub parts: Vec<Part>,
    /// The parts that could not run.
    #[serde(default)]
    pub not_run: Vec<NotRunPart>,
}

/// A part the kernel model could not run.
#[derive(Debug, Clone, Deserialize)]
pub struct NotRunPart {
    /// The part.
    pub label: String,
    /// Its scenario.
    pub scenario: String,
    /// The kernel model's error.
    pub reason: String,
}

/// `tlblab sim study all --json`.
#[derive(Debug, Clone, Deserialize)]
pub struct StudyAll {
    /// One study per entry, S1 … S5.
    pub studies: Vec<Study>,
    /// Studies that could not run at all.
    #[serde(default)]
    pub not_run: Vec<NotRunStudy>,
}

/// A study none of whose parts could run.
#[derive(Debug, Clone, Deserialize)]
pub struct NotRunStudy {
    /// Its name.
    pub study: String,
    /// Why.
    pub reason: String,
}

/// One scenario on one machine, under every policy.
#[derive(Debug, Clone, Deserialize)]
pub struct Part {
    /// `pingpong --touch 512`.
    pub label: String,
    /// The preset.
    pub machine: Machine,
    /// Simulated CPUs.
    pub cpus: u64,
    /// The workload.
    pub scenario: Scenario,
    /// The scenario's parameters, as serialised.
    #[serde(default)]
    pub params: BTreeMap<String, serde_json::Value>,
    /// The window of simulated time each run covers, ms (windowed parts only).
    #[serde(default)]
    pub window_ms: Option<u64>,
    /// Why these settings.
    pub settings_why: String,
    /// What is reported, in order.
    pub measures: Vec<MeasureInfo>,
    /// The policies, the baseline first.
    pub policies: Vec<PolicyResult>,
    /// The sweep this part is a point of (older results have none).
    #[serde(default)]
    pub sweep: Option<Sweep>,
    /// S10's ceiling axis: the headline per `tlb_single_page_flush_ceiling` (absent elsewhere).
    #[serde(default)]
    pub ceiling_curve: Option<CeilingCurve>,
}

/// A part whose policies are one kernel at several ceilings (S10).
#[derive(Debug, Clone, Deserialize)]
pub struct CeilingCurve {
    /// The headline measure's key.
    pub measure: String,
    /// Whether a smaller headline is better.
    pub lower_is_better: bool,
    /// The baseline's ceiling.
    pub baseline: u64,
    /// One point per ceiling, ascending.
    pub points: Vec<CeilingPoint>,
    /// The best ceiling.
    pub best: Option<u64>,
    /// The best ceiling of each seed.
    pub best_per_seed: Vec<u64>,
    /// The ceilings no different from the best.
    pub tied_with_best: Vec<u64>,
}

/// One ceiling of a [`CeilingCurve`].
#[derive(Debug, Clone, Deserialize)]
pub struct CeilingPoint {
    /// The ceiling.
    pub ceiling: u64,
    /// The headline's mean.
    pub mean: Option<f64>,
    /// Its ratio to the baseline ceiling.
    pub ratio: Option<Ratio>,
    /// The verdict (`higher`, `lower`, `within-noise`, …).
    pub effect: Option<tlblab_stats::Effect>,
}

/// Parts that repeat one scenario along one axis: one curve per policy.
#[derive(Debug, Clone, Deserialize)]
pub struct Sweep {
    /// Its name, shared by its parts.
    pub name: String,
    /// What varies.
    pub axis: SweepAxis,
    /// How the other policies are set against the baseline.
    pub relative: Relative,
}

/// The machine preset of a part.
#[derive(Debug, Clone, Deserialize)]
pub struct Machine {
    /// Preset name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Clock, MHz.
    pub clock_mhz: u64,
    /// Why it stands for the study's machine.
    pub why: String,
}

/// The scenario of a part.
#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its own metric.
    pub metric: String,
    /// That metric's unit.
    pub unit: String,
}

/// One reported measure.
#[derive(Debug, Clone, Deserialize)]
pub struct MeasureInfo {
    /// `scenario_metric`, `user_s`, ….
    pub key: String,
    /// As printed (`µs/op`).
    pub label: String,
    /// Whether smaller is better.
    pub lower_is_better: bool,
    /// What it is.
    pub what: String,
}

/// One policy's results in a part.
#[derive(Debug, Clone, Deserialize)]
pub struct PolicyResult {
    /// The policy (only its name and what it mirrors are shown).
    pub policy: Policy,
    /// The part's first policy.
    pub baseline: bool,
    /// One per measure of the part, in the part's order.
    pub measures: Vec<MeasureResult>,
    /// One per seed.
    #[serde(default)]
    pub runs: Vec<Run>,
}

/// A policy's name and the kernel it mirrors.
#[derive(Debug, Clone, Deserialize)]
pub struct Policy {
    /// `linux-4.14`.
    pub name: String,
    /// What it mirrors.
    pub mirrors: String,
}

/// A measure of a policy over the seeds.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "RawMeasureResult")]
pub struct MeasureResult {
    /// The measure's key.
    pub measure: String,
    /// One value per run, in seed order.
    pub values: Vec<f64>,
    /// Mean over the runs.
    pub mean: Option<f64>,
    /// Sample standard deviation.
    pub stddev: Option<f64>,
    /// The paired ratio to the baseline.
    pub ratio: Option<Ratio>,
    /// Whether the ratio is a change by the one verdict rule (its interval excludes 1 and lies
    /// wholly outside the noise band). Results saved before the rule carried `effect` held the
    /// interval alone here; for them it is judged again against the default ±1% band.
    pub significant: Option<bool>,
    /// Why a value or ratio is missing.
    pub note: Option<String>,
}

/// [`MeasureResult`] as saved.
#[derive(Deserialize)]
struct RawMeasureResult {
    measure: String,
    #[serde(default)]
    values: Vec<f64>,
    mean: Option<f64>,
    stddev: Option<f64>,
    #[serde(default)]
    ratio: Option<Ratio>,
    #[serde(default)]
    effect: Option<tlblab_stats::Effect>,
    #[serde(default)]
    significant: Option<bool>,
    #[serde(default)]
    note: Option<String>,
}

impl From<RawMeasureResult> for MeasureResult {
    fn from(raw: RawMeasureResult) -> MeasureResult {
        let significant = match (raw.effect, &raw.ratio) {
            (Some(effect), _) => Some(effect.is_change()),
            (None, Some(r)) => {
                let ci = tlblab_stats::ConfidenceInterval {
                    low: r.ci.low,
                    high: r.ci.high,
                    point: r.ratios.mean,
                    confidence: 0.95,
                };
                let effect =
                    tlblab_stats::judge(Some(&ci), None, 0.05, tlblab_stats::DEFAULT_NOISE);
                Some(effect.is_change())
            }
            (None, None) => raw.significant,
        };
        MeasureResult {
            measure: raw.measure,
            values: raw.values,
            mean: raw.mean,
            stddev: raw.stddev,
            ratio: raw.ratio,
            significant,
            note: raw.note,
        }
    }
}

/// Per-seed ratios to the baseline, summarised.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "RawRatio")]
pub struct Ratio {
    /// Their summary.
    pub ratios: RatioSummary,
    /// The interval of their mean.
    pub ci: Interval,
}

/// The summary of the per-seed ratios.
#[derive(Debug, Clone, Deserialize)]
pub struct RatioSummary {
    /// The ratio's point: the interval's point when saved (the geometric mean of the per-seed
    /// ratios, at the centre of the log-ratio interval), else their arithmetic mean (results of
    /// older tlblab, whose interval was centred on it).
    pub mean: f64,
}

/// [`Ratio`] as saved.
#[derive(Deserialize)]
struct RawRatio {
    ratios: RatioSummary,
    ci: RawInterval,
}

/// [`Interval`] as saved; `point` is absent in results of older tlblab.
#[derive(Deserialize)]
struct RawInterval {
    low: f64,
    high: f64,
    #[serde(default)]
    point: Option<f64>,
}

impl From<RawRatio> for Ratio {
    fn from(raw: RawRatio) -> Ratio {
        Ratio {
            ratios: RatioSummary { mean: raw.ci.point.unwrap_or(raw.ratios.mean) },
            ci: Interval { low: raw.ci.low, high: raw.ci.high },
        }
    }
}

/// A confidence interval.
#[derive(Debug, Clone, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
}

/// One run's counters (only those the report shows).
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    /// `tlb:tlb_flush` events by reason string.
    #[serde(default)]
    pub tlb_flush: BTreeMap<String, u64>,
    /// Flushes of `flush_tlb_func()` by size.
    #[serde(default)]
    pub flush_sizes: Vec<FlushSize>,
    /// Preemption-disabled sections of `flush_tlb_mm_range()` (absent in older results).
    #[serde(default)]
    pub preempt_off_cycles: Option<Distribution>,
}

/// A distribution of cycles, as far as the report uses it.
#[derive(Debug, Clone, Deserialize)]
pub struct Distribution {
    /// The value at each percentile (none in results written before tlblab kept them).
    #[serde(default)]
    pub quantiles: Vec<Quantile>,
}

/// One point of a distribution.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Quantile {
    /// The percentile, 0–100.
    pub p: f64,
    /// Cycles at it.
    pub value: f64,
}

/// Flushes of one size in one run.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct FlushSize {
    /// Entries flushed; -1 = a full flush.
    pub pages: i64,
    /// How many.
    pub flushes: u64,
    /// Their cycles (the flush instructions and the function's own cost).
    pub cycles: u64,
}

impl Study {
    /// Checks what the types cannot: every policy has one result per measure, in the part's
    /// order, and the baseline is first.
    pub fn check(&self) -> Result<(), String> {
        for (pi, part) in self.parts.iter().enumerate() {
            if part.policies.is_empty() {
                return Err(format!("{}: parts[{pi}] ({}) has no policy", self.study, part.label));
            }
            if !part.policies[0].baseline {
                return Err(format!(
                    "{}: parts[{pi}] ({}): the first policy is not the baseline",
                    self.study, part.label
                ));
            }
            for (qi, pol) in part.policies.iter().enumerate() {
                let keys: Vec<&str> = pol.measures.iter().map(|m| m.measure.as_str()).collect();
                let expected: Vec<&str> = part.measures.iter().map(|m| m.key.as_str()).collect();
                if keys != expected {
                    return Err(format!(
                        "{}: parts[{pi}].policies[{qi}] ({}) has measures {keys:?}, the part lists {expected:?}",
                        self.study, pol.policy.name
                    ));
                }
            }
        }
        Ok(())
    }
}
