//! The one verdict rule of tlblab, used by the simulator's seed comparisons, `tlblab bench` and
//! `tlblab compare`, and the cautions printed beside it.
//!
//! A difference is called a change only when it is both
//!
//! 1. **statistically significant**: the interval of the ratio candidate / baseline excludes 1
//!    (and, for live runs, Welch's `p` is below the level), and
//! 2. **practically relevant**: that *whole* interval lies outside the noise band
//!    `[1 − noise, 1 + noise]` (`--noise`, [`DEFAULT_NOISE`] = 1 %).
//!
//! This is criterion's rule. A deterministic simulator gives intervals so tight that a 0.2 %
//! difference is "significant"; the band is what keeps such a difference from being called a
//! change. The verdicts are [`Effect`] (higher/lower, for parameter sweeps and answers that have
//! no better direction) and [`Verdict`] (improved/regressed, for a candidate against a baseline).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bootstrap::ConfidenceInterval;
use crate::summary::Summary;

/// The default practical band: changes within ±1 % are noise (criterion's default).
pub const DEFAULT_NOISE: f64 = 0.01;

/// A coefficient of variation above this (5 %) gets a "high variance" caution.
///
/// Why 5 %: with the default ±1 % band a verdict needs the mean known to about 1 %, and the
/// standard error of a mean of `n` runs is `CV / √n`: at a CV of 5 % even 25 runs leave a standard
/// error as wide as the band, so the interval cannot place a change against it. Below 5 % the
/// usual 10 runs resolve the band; above it the runs disagree with each other more than the
/// effects tlblab looks for, which on a quiet machine does not happen.
pub const HIGH_CV: f64 = 0.05;

/// Fewer runs than this in a group (4) get a "few runs" caution.
///
/// Why 4: with 3 runs a side the exact Mann–Whitney test cannot reach `p < 0.05` (its smallest
/// two-sided p is 0.1), and a t interval from 2 or 3 runs has 1–2 degrees of freedom, so its
/// bounds are 4.3–12.7 standard errors wide.
pub const MIN_RUNS: usize = 4;

/// What an interval of a ratio says, without saying which direction is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// Significant, and the whole interval lies above `1 + noise`.
    Higher,
    /// Significant, and the whole interval lies below `1 − noise`.
    Lower,
    /// Significant, but the interval reaches into the noise band: too small to matter.
    WithinNoise,
    /// The interval holds 1 (or the test's p is not below the level).
    NotSignificant,
    /// No interval could be computed (one seed or one run).
    NoInterval,
}

impl Effect {
    /// Whether this is a change: significant and beyond the band.
    pub fn is_change(self) -> bool {
        matches!(self, Effect::Higher | Effect::Lower)
    }

    /// The words for it, e.g. `higher (beyond ±1.0%)`, `within ±1.0% noise`, `not significant`.
    pub fn text(self, noise: f64) -> String {
        match self {
            Effect::Higher => format!("higher (beyond {})", band(noise)),
            Effect::Lower => format!("lower (beyond {})", band(noise)),
            Effect::WithinNoise => format!("within {} noise", band(noise)),
            Effect::NotSignificant => "not significant".into(),
            Effect::NoInterval => "no interval".into(),
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Effect::Higher => "higher",
            Effect::Lower => "lower",
            Effect::WithinNoise => "within noise",
            Effect::NotSignificant => "not significant",
            Effect::NoInterval => "no interval",
        })
    }
}

/// `±1.0%` for a band of 0.01.
pub fn band(noise: f64) -> String {
    format!("±{:.1}%", noise * 100.0)
}

/// The verdict on a ratio `candidate / baseline` with its interval `ratio` (`None`: no interval),
/// by the rule in the [module docs](self).
///
/// `p_value` is the p-value of the test behind the comparison when there is one besides the
/// interval (Welch's, for live runs); it must then also be below `significance`. For paired seeds
/// the interval is the test, so pass `None`.
///
/// ```
/// use tlblab_stats::{judge, ConfidenceInterval, Effect};
///
/// let ci = |low, high| ConfidenceInterval { low, high, point: (low + high) / 2.0, confidence: 0.95 };
/// // 0.2% slower, measured very precisely: significant, but inside the ±1% band.
/// assert_eq!(judge(Some(&ci(1.0019, 1.0021)), None, 0.05, 0.01), Effect::WithinNoise);
/// // 5% slower: beyond the band.
/// assert_eq!(judge(Some(&ci(1.04, 1.06)), None, 0.05, 0.01), Effect::Higher);
/// // The interval holds 1.
/// assert_eq!(judge(Some(&ci(0.97, 1.06)), None, 0.05, 0.01), Effect::NotSignificant);
/// // A Welch p above the level overrules an interval that excludes 1.
/// assert_eq!(judge(Some(&ci(1.04, 1.06)), Some(0.2), 0.05, 0.01), Effect::NotSignificant);
/// assert_eq!(judge(None, None, 0.05, 0.01), Effect::NoInterval);
/// ```
pub fn judge(
    ratio: Option<&ConfidenceInterval>,
    p_value: Option<f64>,
    significance: f64,
    noise: f64,
) -> Effect {
    let Some(ci) = ratio else {
        return Effect::NoInterval;
    };
    let significant = !ci.contains(1.0) && p_value.is_none_or(|p| p < significance);
    if !significant {
        Effect::NotSignificant
    } else if ci.low > 1.0 + noise {
        Effect::Higher
    } else if ci.high < 1.0 - noise {
        Effect::Lower
    } else {
        Effect::WithinNoise
    }
}

/// The outcome of a comparison of a candidate `b` with a baseline `a`, where one direction is
/// better. Serialized by variant name (`"Improved"`, …); results saved before `WithinNoise` and
/// `NoInterval` existed hold only the other three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// `b` is better than `a`: significant, and beyond the noise band.
    Improved,
    /// `b` is worse than `a`: significant, and beyond the noise band.
    Regressed,
    /// Significant, but within the noise band.
    WithinNoise,
    /// Not significant (results saved by older tlblab also use it for changes within the band).
    NoSignificantChange,
    /// No interval (one run or one seed).
    NoInterval,
}

impl Verdict {
    /// The verdict that `effect` (of the ratio `b / a`) means when smaller is better or not.
    pub fn of(effect: Effect, lower_is_better: bool) -> Verdict {
        match (effect, lower_is_better) {
            (Effect::Lower, true) | (Effect::Higher, false) => Verdict::Improved,
            (Effect::Higher, true) | (Effect::Lower, false) => Verdict::Regressed,
            (Effect::WithinNoise, _) => Verdict::WithinNoise,
            (Effect::NotSignificant, _) => Verdict::NoSignificantChange,
            (Effect::NoInterval, _) => Verdict::NoInterval,
        }
    }

    /// Whether this is a change: significant and beyond the band.
    pub fn is_change(self) -> bool {
        matches!(self, Verdict::Improved | Verdict::Regressed)
    }

    /// The direction-free [`Effect`] behind this verdict, for comparisons where "better" does not
    /// apply: a parameter value against another (a sweep) is higher or lower, not improved.
    pub fn effect(self, lower_is_better: bool) -> Effect {
        match (self, lower_is_better) {
            (Verdict::Improved, true) | (Verdict::Regressed, false) => Effect::Lower,
            (Verdict::Improved, false) | (Verdict::Regressed, true) => Effect::Higher,
            (Verdict::WithinNoise, _) => Effect::WithinNoise,
            (Verdict::NoSignificantChange, _) => Effect::NotSignificant,
            (Verdict::NoInterval, _) => Effect::NoInterval,
        }
    }

    /// The words for it, e.g. `improved (beyond ±1.0%)`, `within ±1.0% noise`.
    pub fn text(self, noise: f64) -> String {
        match self {
            Verdict::Improved => format!("improved (beyond {})", band(noise)),
            Verdict::Regressed => format!("regressed (beyond {})", band(noise)),
            Verdict::WithinNoise => format!("within {} noise", band(noise)),
            Verdict::NoSignificantChange => "not significant".into(),
            Verdict::NoInterval => "no interval".into(),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::WithinNoise => "within noise",
            Verdict::NoSignificantChange => "not significant",
            Verdict::NoInterval => "no interval",
        })
    }
}

/// A reason to distrust a comparison, printed as a warning beside its verdict (as hyperfine
/// warns about outliers and suggests a quiet system).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Caution {
    /// A group has fewer than [`MIN_RUNS`] runs.
    FewRuns {
        /// The smaller group's number of runs.
        runs: usize,
    },
    /// A group's coefficient of variation is above [`HIGH_CV`].
    HighVariance {
        /// The larger coefficient of variation of the two groups (a fraction).
        cv: f64,
    },
    /// Welch's test and the Mann–Whitney test disagree on significance.
    TestsDisagree {
        /// Welch's two-sided p.
        welch_p: f64,
        /// Mann–Whitney's two-sided p.
        mann_whitney_p: f64,
    },
}

impl fmt::Display for Caution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Caution::FewRuns { runs } => write!(
                f,
                "few runs ({runs}): the tests cannot resolve a change; use at least {MIN_RUNS} runs"
            ),
            Caution::HighVariance { cv } => write!(
                f,
                "high variance (CV {:.1}%); re-run on a quiet system without other load",
                cv * 100.0
            ),
            Caution::TestsDisagree { welch_p, mann_whitney_p } => write!(
                f,
                "Welch (p = {welch_p:.2e}) and Mann-Whitney (p = {mann_whitney_p:.2e}) disagree: \
                 skewed runs or outliers; re-run with more runs on a quiet system"
            ),
        }
    }
}

/// The cautions about comparing summaries `a` and `b` whose Welch and Mann–Whitney p-values are
/// `welch_p` and `mann_whitney_p`: few runs (below [`MIN_RUNS`]), high variance (CV above
/// [`HIGH_CV`]), and tests that disagree at `significance` (not checked with few runs, where
/// Mann–Whitney cannot be significant).
///
/// ```
/// use tlblab_stats::{cautions, Caution, Summary};
///
/// let a = Summary::of(&[10.0, 12.0, 9.0, 11.5, 8.5])?; // CV 14%
/// let b = Summary::of(&[10.1, 10.0, 10.2, 10.1, 10.0])?;
/// let c = cautions(&a, &b, 0.5, 0.6, 0.05);
/// assert!(matches!(c[..], [Caution::HighVariance { cv }] if cv > 0.13));
/// assert!(c[0].to_string().starts_with("high variance (CV 14"));
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
pub fn cautions(
    a: &Summary,
    b: &Summary,
    welch_p: f64,
    mann_whitney_p: f64,
    significance: f64,
) -> Vec<Caution> {
    let mut out = Vec::new();
    let runs = a.n.min(b.n);
    if runs < MIN_RUNS {
        out.push(Caution::FewRuns { runs });
    }
    let cv = a.cv.unwrap_or(0.0).max(b.cv.unwrap_or(0.0));
    if cv > HIGH_CV {
        out.push(Caution::HighVariance { cv });
    }
    if runs >= MIN_RUNS && (welch_p < significance) != (mann_whitney_p < significance) {
        out.push(Caution::TestsDisagree { welch_p, mann_whitney_p });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compare, CompareOptions};

    fn ci(low: f64, high: f64) -> ConfidenceInterval {
        ConfidenceInterval { low, high, point: (low + high) / 2.0, confidence: 0.95 }
    }

    #[test]
    fn a_tiny_precise_change_is_within_noise_not_a_change() {
        // 0.2% slower with almost no spread: the t test is overwhelmingly significant.
        let a: Vec<f64> = (0..10).map(|i| 100.0 + 0.001 * f64::from(i)).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.002).collect();
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert!(c.welch.p_two_sided < 1e-6);
        assert_eq!(c.verdict, Verdict::WithinNoise);
        assert!(!c.verdict.is_change());
        assert_eq!(c.verdict.text(0.01), "within ±1.0% noise");
    }

    #[test]
    fn a_five_percent_change_is_beyond_the_band() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1];
        let b: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(c.verdict, Verdict::Regressed, "times: higher is worse");
        assert_eq!(c.verdict.text(0.01), "regressed (beyond ±1.0%)");
        let rate = CompareOptions { lower_is_better: false, ..CompareOptions::default() };
        assert_eq!(compare(&a, &b, &rate).unwrap().verdict, Verdict::Improved);
        // A band wider than the change makes it noise.
        let wide = CompareOptions { noise_threshold: 0.06, ..CompareOptions::default() };
        assert_eq!(compare(&a, &b, &wide).unwrap().verdict, Verdict::WithinNoise);
    }

    #[test]
    fn the_band_is_exclusive_of_its_edge_and_symmetric() {
        assert_eq!(judge(Some(&ci(1.01, 1.02)), None, 0.05, 0.01), Effect::WithinNoise);
        assert_eq!(judge(Some(&ci(1.0101, 1.02)), None, 0.05, 0.01), Effect::Higher);
        assert_eq!(judge(Some(&ci(0.97, 0.9899)), None, 0.05, 0.01), Effect::Lower);
        assert_eq!(judge(Some(&ci(0.97, 0.995)), None, 0.05, 0.01), Effect::WithinNoise);
        assert_eq!(judge(Some(&ci(0.9, 1.0)), None, 0.05, 0.01), Effect::NotSignificant);
        // A zero band makes every significant difference a change.
        assert_eq!(judge(Some(&ci(1.001, 1.002)), None, 0.05, 0.0), Effect::Higher);
    }

    #[test]
    fn verdicts_follow_the_better_direction() {
        assert_eq!(Verdict::of(Effect::Lower, true), Verdict::Improved);
        assert_eq!(Verdict::of(Effect::Lower, false), Verdict::Regressed);
        assert_eq!(Verdict::of(Effect::Higher, false), Verdict::Improved);
        assert_eq!(Verdict::of(Effect::NoInterval, true), Verdict::NoInterval);
        assert_eq!(Effect::Lower.text(0.02), "lower (beyond ±2.0%)");
        for e in [Effect::Higher, Effect::Lower, Effect::WithinNoise, Effect::NotSignificant] {
            for lib in [true, false] {
                assert_eq!(Verdict::of(e, lib).effect(lib), e);
            }
        }
    }

    #[test]
    fn cautions_for_few_runs_high_variance_and_disagreeing_tests() {
        let s = |v: &[f64]| Summary::of(v).unwrap();
        let quiet = s(&[10.0, 10.01, 10.02, 9.99, 10.0]);
        assert!(cautions(&quiet, &quiet, 0.9, 0.9, 0.05).is_empty());
        let two = s(&[10.0, 10.01]);
        assert_eq!(cautions(&two, &quiet, 0.01, 0.5, 0.05), [Caution::FewRuns { runs: 2 }]);
        let disagree = cautions(&quiet, &quiet, 0.01, 0.2, 0.05);
        assert_eq!(disagree, [Caution::TestsDisagree { welch_p: 0.01, mann_whitney_p: 0.2 }]);
        let noisy = s(&[8.0, 12.0, 9.0, 11.0, 10.0]);
        assert!(
            matches!(cautions(&quiet, &noisy, 0.9, 0.9, 0.05)[..], [Caution::HighVariance { cv }] if (cv - 0.158).abs() < 1e-3)
        );
    }
}
