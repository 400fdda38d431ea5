//! A study's results: what JSON (`tlblab.sim.study/1`) prints and the text renderer reads.
//!
//! Big per-run vectors of the kernel model (preemption-off sections, exposure windows, per-CPU
//! counters) are summarised (count, percentiles, sums), never copied whole.

use crate::inputs::StudyInput;
use crate::measure::{percentile_cycles, Measure};
use crate::study::{Layout, Sweep};
use serde::Serialize;
use std::collections::BTreeMap;
use tlblab_kernel::observer::Vmstat;
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::workloads::{Metric, Params};
use tlblab_kernel::{Mechanism, Policy};
use tlblab_sim::stats::{MissStats, OpStats};
use tlblab_stats::{Effect, RatioToBaseline};

/// The schema of a study's JSON.
pub const SCHEMA: &str = "tlblab.sim.study/1";

/// The schema of `tlblab sim study all --json`: the studies' reports in order.
pub const SCHEMA_ALL: &str = "tlblab.sim.study-all/1";

/// Confidence level of every ratio interval.
pub const CONFIDENCE: f64 = 0.95;

/// One study's results.
#[derive(Clone, Debug, Serialize)]
pub struct StudyReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The tlblab version that ran it.
    pub tlblab_version: &'static str,
    /// The study's name (`s2-pcid`).
    pub study: &'static str,
    /// Its short name (`s2`).
    pub short: &'static str,
    /// What it compares.
    pub title: &'static str,
    /// What it mirrors.
    pub mirrors: &'static str,
    /// Its text format.
    pub layout: Layout,
    /// A quick run: every part shrunk; not the study's figures.
    pub quick: bool,
    /// Seeds per policy (K).
    pub seeds: u64,
    /// The first seed; the others follow it.
    pub first_seed: u64,
    /// Why the study's default number of seeds.
    pub seeds_why: &'static str,
    /// Confidence level of the ratio intervals.
    pub confidence: f64,
    /// The noise band (`--noise`, a fraction): a ratio is a change only when its interval
    /// excludes 1 and lies wholly outside `[1 − noise, 1 + noise]`.
    pub noise: f64,
    /// The mechanisms switched off in every run (`--without`); left out when none is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub without: Vec<Mechanism>,
    /// Its inputs: which were measured on the project's machine, copied (from where) or
    /// assumed (docs/studies.md, "Inputs: measured, copied, assumed").
    pub inputs: Vec<StudyInput>,
    /// The parts that ran, in the study's order.
    pub parts: Vec<PartReport>,
    /// The parts that did not run because this build of the kernel model lacks their scenario.
    pub not_run: Vec<NotRun>,
}

/// A part that did not run.
#[derive(Clone, Debug, Serialize)]
pub struct NotRun {
    /// The part's label.
    pub label: String,
    /// Its scenario.
    pub scenario: &'static str,
    /// Why.
    pub reason: String,
}

/// One part's results.
#[derive(Clone, Debug, Serialize)]
pub struct PartReport {
    /// What it is.
    pub label: String,
    /// The machine.
    pub machine: MachineInfo,
    /// Simulated CPUs.
    pub cpus: usize,
    /// The scenario.
    pub scenario: ScenarioInfo,
    /// Its parameters (each scenario uses the ones it names).
    pub params: Params,
    /// Each run is a window of this much simulated time, ms (kbuild's default), rather than
    /// lasting until its tasks are done (`null`).
    pub window_ms: Option<u64>,
    /// Why these settings.
    pub settings_why: &'static str,
    /// What is reported, in order; every policy's `measures` follows this order.
    pub measures: Vec<MeasureInfo>,
    /// The policies, baseline first.
    pub policies: Vec<PolicyReport>,
    /// The sweep this part is a point of (`null` if none): parts with the same sweep name are
    /// one curve per policy along its axis.
    pub sweep: Option<Sweep>,
    /// With `--explain` only: the part's headline with each mechanism off in turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Explanation>,
    /// Only for a part whose policies are one kernel at several ceilings (S10): the headline
    /// along `tlb_single_page_flush_ceiling`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_curve: Option<CeilingCurve>,
}

/// The ceiling axis (S10): a part whose policies are one kernel at several values of
/// `tlb_single_page_flush_ceiling` (`BASE@ceiling=N`), its headline (first measure) per
/// ceiling relative to the baseline's ceiling, and the best ceiling.
#[derive(Clone, Debug, Serialize)]
pub struct CeilingCurve {
    /// The headline measure's key.
    pub measure: &'static str,
    /// Whether a smaller headline is better.
    pub lower_is_better: bool,
    /// The baseline policy's ceiling (33, the kernel's default).
    pub baseline: u64,
    /// One point per ceiling, in ascending order.
    pub points: Vec<CeilingPoint>,
    /// The best ceiling: the best mean headline among the baseline's ceiling and those whose
    /// verdict against it is a change for the better (the lowest ceiling among equal means);
    /// the baseline's when none is.
    pub best: Option<u64>,
    /// The best ceiling of each seed, in seed order: how much the best moves from seed to
    /// seed.
    pub best_per_seed: Vec<u64>,
    /// The ceilings whose headline is no different from the best's: the ratio of their
    /// per-seed values to the best's has an interval that holds 1 or reaches into the noise
    /// band. The best ceiling's interval along the axis.
    pub tied_with_best: Vec<u64>,
}

/// One ceiling of a [`CeilingCurve`].
#[derive(Clone, Debug, Serialize)]
pub struct CeilingPoint {
    /// The ceiling.
    pub ceiling: u64,
    /// The policy's name (`linux-6.18@ceiling=64`).
    pub policy: String,
    /// The headline's mean over the seeds.
    pub mean: Option<f64>,
    /// The headline's ratio to the baseline ceiling, with its interval (none for the
    /// baseline itself).
    pub ratio: Option<RatioToBaseline>,
    /// What the ratio says (the study's verdict rule).
    pub effect: Option<Effect>,
}

/// `--explain`: what each mechanism of the model does to a part's headline measure (its first)
/// and to the study's comparison of the policies on it. The runs with a mechanism off use the
/// same seeds and every other setting of the part's own runs.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// The headline measure's key: the part's first measure.
    pub measure: &'static str,
    /// One entry per mechanism, in [`Mechanism::ALL`] order.
    pub mechanisms: Vec<MechanismEffect>,
}

/// One mechanism's effect on a part's headline.
#[derive(Clone, Debug, Serialize)]
pub struct MechanismEffect {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Whether its runs were made.
    pub status: EffectStatus,
    /// One entry per policy, in the part's order (empty unless `status` is `ran`).
    pub policies: Vec<PolicyEffect>,
}

pub use tlblab_kernel::EffectStatus;

/// One policy's headline with a mechanism off, against its runs with it on.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyEffect {
    /// The policy's name.
    pub policy: String,
    /// The headline measure with the mechanism off, as a policy's measure: values per seed,
    /// mean, … and the ratio to the baseline policy with the mechanism off too.
    pub off: MeasureResult,
    /// Mean off less mean on.
    pub change: Option<f64>,
    /// `change` as a percentage of the mean on (`null` when that is 0).
    pub change_pct: Option<f64>,
    /// The comparison's answer with the mechanism on (every policy but the baseline).
    pub answer_on: Option<Answer>,
    /// Its answer with the mechanism off.
    pub answer_off: Option<Answer>,
    /// Whether switching the mechanism off changes the answer.
    pub answer_changes: Option<bool>,
}

/// What a comparison of a policy with the baseline says about a measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answer {
    /// Lower than the baseline: the ratio's interval is below 1.
    Lower,
    /// Higher than the baseline: the interval is above 1.
    Higher,
    /// No difference beyond the noise band: the interval holds 1 or reaches into the band.
    NoDifference,
}

impl Answer {
    /// The answer of a measure's ratio to the baseline (`None` without a ratio).
    pub fn of(m: &MeasureResult) -> Option<Answer> {
        m.ratio.as_ref()?;
        Some(match m.effect? {
            Effect::Lower => Answer::Lower,
            Effect::Higher => Answer::Higher,
            _ => Answer::NoDifference,
        })
    }

    /// As the text output prints it.
    pub fn text(self) -> &'static str {
        match self {
            Answer::Lower => "lower",
            Answer::Higher => "higher",
            Answer::NoDifference => "no difference",
        }
    }
}

/// The machine of a part.
#[derive(Clone, Debug, Serialize)]
pub struct MachineInfo {
    /// The preset's name.
    pub name: String,
    /// The preset's description.
    pub description: String,
    /// Core clock (MHz) that converts cycles to time.
    pub clock_mhz: u64,
    /// Why this preset stands for the study's machine.
    pub why: &'static str,
    /// A guest preset's host as the part sets it (posted interrupts, overcommit); absent when
    /// the part takes the preset as it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest: Option<crate::study::GuestSetting>,
}

/// The scenario of a part.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioInfo {
    /// Its name.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its own metric.
    pub metric: Metric,
    /// The metric's unit.
    pub unit: &'static str,
}

/// What one measure is.
#[derive(Clone, Debug, Serialize)]
pub struct MeasureInfo {
    /// Its key (`elapsed_s`).
    pub key: &'static str,
    /// As printed.
    pub label: &'static str,
    /// Whether smaller is better.
    pub lower_is_better: bool,
    /// What it is.
    pub what: &'static str,
    /// The measure itself (the renderer's handle; not in JSON).
    #[serde(skip)]
    pub measure: Measure,
    /// Decimals it is printed with.
    #[serde(skip)]
    pub decimals: usize,
}

/// One policy's results in a part.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyReport {
    /// The policy, every switch.
    pub policy: Policy,
    /// The baseline of the part's ratios.
    pub baseline: bool,
    /// One entry per measure, in the part's order.
    pub measures: Vec<MeasureResult>,
    /// One summary per seed, in seed order.
    pub runs: Vec<RunSummary>,
}

/// One measure of one policy over the K seeds.
#[derive(Clone, Debug, Serialize)]
pub struct MeasureResult {
    /// The measure's key.
    pub measure: &'static str,
    /// The value per seed, in seed order (empty when a run has none: see `note`).
    pub values: Vec<f64>,
    /// Mean over the seeds.
    pub mean: Option<f64>,
    /// Sample standard deviation over the seeds (0 for one seed).
    pub stddev: Option<f64>,
    /// Standard error of the mean.
    pub sem: Option<f64>,
    /// The per-seed ratios to the baseline, with the interval of their geometric mean (none
    /// for the baseline, for one seed, or when the baseline has no value or a 0).
    pub ratio: Option<RatioToBaseline>,
    /// What the ratio says by the one verdict rule (`higher`, `lower`, `within-noise`,
    /// `not-significant`, `no-interval`); none for the baseline.
    pub effect: Option<Effect>,
    /// Whether the ratio is a change: its interval excludes 1 and lies wholly outside the noise
    /// band (`effect` is `higher` or `lower`).
    pub significant: Option<bool>,
    /// Why a value or ratio is missing.
    pub note: Option<String>,
}

/// A distribution of cycle counts, summarised.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Distribution {
    /// Number of values.
    pub count: u64,
    /// Mean (absent when empty).
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// Largest value.
    pub max: Option<u64>,
    /// The distribution itself, for a CDF: the value at each of [`QUANTILES`] (empty when
    /// there are no values).
    pub quantiles: Vec<Quantile>,
}

/// The percentiles a [`Distribution`] keeps: enough points for a CDF from the body to the tail.
pub const QUANTILES: [f64; 13] =
    [0.0, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99, 100.0];

/// One point of a distribution.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Quantile {
    /// The percentile, 0–100.
    pub p: f64,
    /// The value at it (interpolated between the two nearest values).
    pub value: f64,
}

impl Distribution {
    pub(crate) fn of(values: &[u64]) -> Distribution {
        Distribution {
            count: values.len() as u64,
            mean: (!values.is_empty())
                .then(|| values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64),
            p50: percentile_cycles(values, 50.0),
            p99: percentile_cycles(values, 99.0),
            max: values.iter().copied().max(),
            quantiles: QUANTILES
                .iter()
                .filter_map(|&p| Some(Quantile { p, value: percentile_cycles(values, p)? }))
                .collect(),
        }
    }
}

/// Flushes of one size.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct FlushSize {
    /// Entries flushed; -1 for a full flush.
    pub pages: i64,
    /// Flushes of this size.
    pub flushes: u64,
    /// Their cycles (instructions and `flush_tlb_func()`'s own cost).
    pub cycles: u64,
}

/// XPFO's figures of one run.
#[derive(Clone, Debug, Serialize)]
pub struct XpfoSummary {
    /// Pages unmapped from the direct map.
    pub kernel_unmaps: u64,
    /// Closed exposure windows, in cycles.
    pub exposure_cycles: Distribution,
    /// Windows still open at the end.
    pub censored: u64,
    /// Full flushes XPFO caused.
    pub full_flushes: u64,
    /// IPIs XPFO sent.
    pub ipis: u64,
}

/// The hardware counters of one run that the studies use (summed over CPUs).
#[derive(Clone, Debug, Serialize)]
pub struct HwSummary {
    /// Translations (accesses) of every kind.
    pub accesses: u64,
    /// Load translations that missed L1.
    pub dtlb_load_misses: MissStats,
    /// Store translations that missed L1.
    pub dtlb_store_misses: MissStats,
    /// Fetch translations that missed L1.
    pub itlb_misses: MissStats,
    /// Invalidating instructions executed (only those with a non-zero count).
    pub invalidations: BTreeMap<String, OpStats>,
}

/// One run (one policy, one seed), summarised.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// Its seed.
    pub seed: u64,
    /// Every task finished before the run ended (`false` when a scenario's window, such as
    /// kbuild's, ended it).
    pub finished: bool,
    /// Simulated time at the end, cycles.
    pub elapsed_cycles: u64,
    /// Events the engine processed.
    pub events: u64,
    /// User tasks.
    pub tasks: u64,
    /// Operations completed, all tasks.
    pub ops: u64,
    /// User cycles, all tasks.
    pub user_cycles: u64,
    /// System cycles, all tasks.
    pub sys_cycles: u64,
    /// Idle cycles, all CPUs.
    pub idle_cycles: u64,
    /// Interrupt-handler cycles, all CPUs.
    pub irq_cycles: u64,
    /// Flush IPIs sent, all CPUs.
    pub ipis_sent: u64,
    /// `/proc/interrupts` `TLB` row, all CPUs.
    pub irq_tlb: u64,
    /// `/proc/interrupts` `CAL` row (kernel-range flushes), all CPUs.
    pub irq_cal: u64,
    /// Page faults of every kind.
    pub page_faults: u64,
    /// Run-time 5-level-paging tests executed.
    pub la57_checks: u64,
    /// `CONFIG_DEBUG_TLBFLUSH` counters.
    pub vmstat: Vmstat,
    /// `tlb:tlb_flush` events by reason.
    pub tlb_flush: BTreeMap<&'static str, u64>,
    /// Flushes by `flush_tlb_func()`, by size (ascending; -1, the full flush, first).
    pub flush_sizes: Vec<FlushSize>,
    /// Preemption-disabled sections of `flush_tlb_mm_range()`, cycles.
    pub preempt_off_cycles: Distribution,
    /// XPFO (absent without XPFO).
    pub xpfo: Option<XpfoSummary>,
    /// Hardware counters.
    pub hw: HwSummary,
}

impl RunSummary {
    /// The summary of a run of `seed` (`finished`: every task finished) from its report.
    pub fn of(seed: u64, finished: bool, r: &KernelReport) -> RunSummary {
        let invalidations =
            r.hw.invalidations
                .iter()
                .filter(|(_, o)| o.count > 0)
                .map(|(k, o)| (k.clone(), *o))
                .collect();
        RunSummary {
            seed,
            finished,
            elapsed_cycles: r.elapsed_cycles,
            events: r.events,
            tasks: r.tasks.len() as u64,
            ops: r.tasks.iter().map(|t| t.ops).sum(),
            user_cycles: r.tasks.iter().map(|t| t.user_cycles).sum(),
            sys_cycles: r.tasks.iter().map(|t| t.sys_cycles).sum(),
            idle_cycles: r.cpu_time.iter().map(|c| c.idle_cycles).sum(),
            irq_cycles: r.cpu_time.iter().map(|c| c.irq_cycles).sum(),
            ipis_sent: r.ipis_sent.iter().sum(),
            irq_tlb: r.irq_tlb.iter().sum(),
            irq_cal: r.irq_cal.iter().sum(),
            page_faults: r.page_faults,
            la57_checks: r.la57_checks,
            vmstat: r.vmstat,
            tlb_flush: r.tlb_flush.clone(),
            flush_sizes: r
                .flush_sizes
                .by_pages
                .iter()
                .map(|(&pages, &(flushes, cycles))| FlushSize { pages, flushes, cycles })
                .collect(),
            preempt_off_cycles: Distribution::of(&r.preempt_off_cycles),
            xpfo: r.xpfo.as_ref().map(|x| XpfoSummary {
                kernel_unmaps: x.kernel_unmaps,
                exposure_cycles: Distribution::of(&x.exposure_cycles),
                censored: x.censored,
                full_flushes: x.full_flushes,
                ipis: x.ipis,
            }),
            hw: HwSummary {
                accesses: r.hw.accesses.total,
                dtlb_load_misses: r.hw.dtlb_load_misses,
                dtlb_store_misses: r.hw.dtlb_store_misses,
                itlb_misses: r.hw.itlb_misses,
                invalidations,
            },
        }
    }
}

/// `tlblab sim study all --json`.
#[derive(Clone, Debug, Serialize)]
pub struct AllReport {
    /// [`SCHEMA_ALL`].
    pub schema: &'static str,
    /// The tlblab version that ran them.
    pub tlblab_version: &'static str,
    /// One report per study that ran, in order.
    pub studies: Vec<StudyReport>,
    /// The studies that did not run because this build of the kernel model has none of their
    /// scenarios.
    pub not_run: Vec<StudyNotRun>,
}

/// A study that did not run.
#[derive(Clone, Debug, Serialize)]
pub struct StudyNotRun {
    /// The study's name.
    pub study: &'static str,
    /// Why.
    pub reason: String,
}
