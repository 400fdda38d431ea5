//! Statistics for tlblab's experiments: pure functions, no I/O, no clocks.
//!
//! Two kinds of users:
//!
//! * **Multi-seed simulator studies** report a metric as mean ± standard deviation over K seeds
//!   ([`mean_std`]) and a policy relative to a baseline run on the same seeds, with an interval
//!   ([`ratio_to_baseline`], [`ratio_to_baseline_bootstrap`]).
//! * **Live benchmarks** compare a baseline `a` with a candidate `b` ([`compare`]): summaries
//!   ([`Summary`]), Welch's t-test ([`welch_t_test`]), the Mann–Whitney U test
//!   ([`mann_whitney_u`]), the relative change of the means with a bootstrap interval
//!   ([`RelativeChange`]), a hyperfine-style speedup ([`Speedup`]) and a [`Verdict`] by
//!   criterion's rule, with [`cautions`] about the runs.
//! * Both use one verdict rule, [`judge`]: a difference is a change only when significant *and*
//!   its whole interval lies outside the noise band (see [`mod@verdict`]). [`outliers()`] flags suspicious runs by modified z-scores (see
//!   [`mod@outliers`] for the method).
//!
//! Everything random (the bootstraps) is deterministic for a given seed. Distribution functions
//! (Student t, normal) come from `statrs`. All result types serialize with serde.
//!
//! ```
//! use tlblab_stats::{compare, mean_std, CompareOptions, Summary, Verdict};
//!
//! // Ten runs of a benchmark before and after a change, in milliseconds.
//! let before = [41.9, 42.3, 42.0, 42.8, 41.7, 42.1, 42.4, 42.0, 41.8, 42.2];
//! let after = [39.6, 40.1, 39.8, 40.3, 39.9, 39.7, 40.0, 40.2, 39.5, 39.9];
//! let s = Summary::of(&before)?;
//! assert!((s.mean - 42.12).abs() < 1e-12 && s.min == 41.7 && s.max == 42.8);
//!
//! let c = compare(&before, &after, &CompareOptions { seed: 7, ..CompareOptions::default() })?;
//! assert_eq!(c.verdict, Verdict::Improved);
//! assert!(c.welch.p_two_sided < 1e-9);
//! assert!(c.change.ci.contains(c.change.estimate) && c.change.ci.high < -0.04);
//! let speedup = c.speedup.unwrap(); // "after is 1.05 ± 0.01 times faster"
//! assert!((speedup.ratio - 42.12 / 39.9).abs() < 1e-12);
//!
//! // Misses of one policy over five simulator seeds.
//! let m = mean_std(&[1200.0, 1180.0, 1230.0, 1210.0, 1195.0])?;
//! assert_eq!(m.mean, 1203.0);
//! # Ok::<(), tlblab_stats::StatsError>(())
//! ```
//!
//! Numerical notes: means are computed with a two-pass correction and clamped into
//! `[min, max]`, so a constant sample has exactly that constant as its mean (and a bootstrap of
//! it a zero-width interval). Variances use the compensated two-pass formula.
#![deny(missing_docs)]

pub mod bootstrap;
mod compare;
mod error;
mod hypothesis;
pub mod outliers;
mod seeds;
mod summary;
pub mod verdict;

pub use bootstrap::{bootstrap_ci, bootstrap_ci_two_sample, ConfidenceInterval, RelativeChange};
pub use compare::{compare, CompareOptions, Comparison, Speedup};
pub use error::{Group, StatsError};
pub use hypothesis::{
    mann_whitney_u, welch_t_test, MannWhitney, PValueMethod, TTest, MANN_WHITNEY_EXACT_MAX_N,
};
pub use outliers::{
    modified_z_scores, outliers, DEFAULT_OUTLIER_THRESHOLD, HYPERFINE_OUTLIER_THRESHOLD,
    MIN_OUTLIER_DEVIATION,
};
pub use seeds::{
    mean_interval, ratio_to_baseline, ratio_to_baseline_bootstrap, IntervalMethod, RatioToBaseline,
};
pub use summary::{
    geometric_mean, harmonic_mean, mean, mean_std, percentile, MeanStd, Summary, MAD_NORMAL_SCALE,
};
pub use verdict::{
    band, cautions, judge, Caution, Effect, Verdict, DEFAULT_NOISE, HIGH_CV, MIN_RUNS,
};
