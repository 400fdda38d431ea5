//! A/B comparison of two sets of measurements with a verdict.

use serde::{Deserialize, Serialize};

use crate::bootstrap::{ConfidenceInterval, RelativeChange};
use crate::error::{check_confidence, Group, StatsError};
use crate::hypothesis::{mann_whitney_u, welch_t_test, MannWhitney, TTest};
use crate::summary::Summary;
use crate::verdict::{cautions, judge, Caution, Verdict, DEFAULT_NOISE};

/// Settings of [`compare`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompareOptions {
    /// Whether smaller values are better (times, cycles, misses) rather than larger ones
    /// (throughput). Default `true`.
    pub lower_is_better: bool,
    /// Relative changes within `±noise_threshold` are never reported as significant. Default
    /// 0.01 (1 %), as in criterion.
    pub noise_threshold: f64,
    /// The significance level the Welch p-value must be below. Default 0.05.
    pub significance: f64,
    /// Confidence level of the bootstrap interval of the relative change. Default 0.95.
    pub confidence: f64,
    /// Bootstrap resamples. Default 10 000.
    pub resamples: usize,
    /// Seed of the bootstrap. Default 0.
    pub seed: u64,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            lower_is_better: true,
            noise_threshold: DEFAULT_NOISE,
            significance: 0.05,
            confidence: 0.95,
            resamples: 10_000,
            seed: 0,
        }
    }
}

/// "The faster is `ratio ± stddev` times faster", in hyperfine's style.
///
/// `ratio = μ_worse / μ_better ≥ 1`, where "better" follows
/// [`CompareOptions::lower_is_better`] (for throughput, where higher is better, it is
/// `μ_better / μ_worse`, again ≥ 1). The uncertainty is first-order error propagation for a
/// quotient of independent quantities, as in hyperfine:
/// `stddev = ratio · √((σₐ/μₐ)² + (σ_b/μ_b)²)`, with σ the sample standard deviations (not the
/// standard errors: it describes the spread of single runs, not the precision of the means).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Speedup {
    /// Which group is better (the baseline `a` when the means are equal).
    pub faster: Group,
    /// How many times better it is (≥ 1).
    pub ratio: f64,
    /// The propagated standard deviation of `ratio`.
    pub stddev: f64,
}

impl Speedup {
    /// The speedup between two summaries, or `None` unless both means are > 0.
    pub fn of(a: &Summary, b: &Summary, lower_is_better: bool) -> Option<Speedup> {
        if !(a.mean > 0.0 && b.mean > 0.0) {
            return None;
        }
        let b_better = if lower_is_better { b.mean < a.mean } else { b.mean > a.mean };
        let (better, worse, faster) = if b_better { (b, a, Group::B) } else { (a, b, Group::A) };
        let ratio =
            if lower_is_better { worse.mean / better.mean } else { better.mean / worse.mean };
        let stddev = ratio * ((a.stddev / a.mean).powi(2) + (b.stddev / b.mean).powi(2)).sqrt();
        Some(Speedup { faster, ratio, stddev })
    }
}

/// Everything [`compare`] found. Read back from JSON, its summaries have no samples (see
/// [`Summary`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Summary of the baseline.
    pub summary_a: Summary,
    /// Summary of the candidate.
    pub summary_b: Summary,
    /// Welch's t-test of equal means.
    pub welch: TTest,
    /// Mann–Whitney U test (for reference; the verdict does not use it).
    pub mann_whitney: MannWhitney,
    /// `mean(b) / mean(a) − 1` with its bootstrap interval.
    pub change: RelativeChange,
    /// hyperfine-style speedup; `None` unless both means are > 0.
    pub speedup: Option<Speedup>,
    /// The verdict, by [`judge`]'s rule.
    pub verdict: Verdict,
    /// Reasons to distrust the verdict (few runs, high variance, tests that disagree); absent
    /// from comparisons saved by older tlblab.
    #[serde(default)]
    pub cautions: Vec<Caution>,
}

/// Compares a baseline `a` with a candidate `b`.
///
/// The verdict follows criterion's rule: a change is reported only if it is both statistically
/// significant, Welch's `p < significance`, and larger than the noise, the *whole* bootstrap
/// interval of the relative change `mean(b)/mean(a) − 1` lying outside
/// `[−noise_threshold, +noise_threshold]`. Whether an increase is an improvement or a regression
/// depends on [`CompareOptions::lower_is_better`].
///
/// ```
/// use tlblab_stats::{compare, CompareOptions, Verdict};
///
/// let before = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.1];
/// let after = [9.0, 9.1, 8.9, 9.2, 9.0, 8.8, 9.1, 9.0];
/// let c = compare(&before, &after, &CompareOptions::default())?; // times: lower is better
/// assert_eq!(c.verdict, Verdict::Improved);
/// assert!(c.change.ci.high < -0.05);
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
///
/// Errors: those of [`welch_t_test`] (each group needs ≥ 2 finite samples),
/// [`StatsError::ZeroBaseline`] and the other errors of [`RelativeChange::bootstrap`],
/// [`StatsError::InvalidNoiseThreshold`], [`StatsError::InvalidSignificance`].
pub fn compare(a: &[f64], b: &[f64], options: &CompareOptions) -> Result<Comparison, StatsError> {
    let noise = options.noise_threshold;
    if !(noise.is_finite() && noise >= 0.0) {
        return Err(StatsError::InvalidNoiseThreshold(noise));
    }
    if !(options.significance > 0.0 && options.significance < 1.0) {
        return Err(StatsError::InvalidSignificance(options.significance));
    }
    check_confidence(options.confidence)?;
    let welch = welch_t_test(a, b)?;
    let summary_a = Summary::of(a).map_err(|e| e.in_group(Group::A))?;
    let summary_b = Summary::of(b).map_err(|e| e.in_group(Group::B))?;
    let mann_whitney = mann_whitney_u(a, b)?;
    let change =
        RelativeChange::bootstrap(a, b, options.resamples, options.confidence, options.seed)?;
    // The interval of mean(b)/mean(a) − 1, shifted to the ratio mean(b)/mean(a).
    let ratio = ConfidenceInterval {
        low: change.ci.low + 1.0,
        high: change.ci.high + 1.0,
        point: change.ci.point + 1.0,
        confidence: change.ci.confidence,
    };
    let effect = judge(Some(&ratio), Some(welch.p_two_sided), options.significance, noise);
    let verdict = Verdict::of(effect, options.lower_is_better);
    let cautions = cautions(
        &summary_a,
        &summary_b,
        welch.p_two_sided,
        mann_whitney.p_two_sided,
        options.significance,
    );
    let speedup = Speedup::of(&summary_a, &summary_b, options.lower_is_better);
    Ok(Comparison { summary_a, summary_b, welch, mann_whitney, change, speedup, verdict, cautions })
}
