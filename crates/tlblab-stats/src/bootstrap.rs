//! Percentile-bootstrap confidence intervals, deterministic for a given seed.
//!
//! # Algorithm
//!
//! The percentile bootstrap (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993,
//! ch. 13):
//!
//! 1. A [`Pcg64Mcg`] generator is seeded with [`SeedableRng::seed_from_u64`]`(seed)`.
//! 2. For each of `resamples` rounds, a resample of the same size as the input is drawn with
//!    replacement, index by index in order; index `i` is `⌊u·n / 2⁶⁴⌋` for the next 64-bit
//!    output `u` of the generator (Lemire's multiply-shift; its bias, below `n / 2⁶⁴`, is
//!    negligible). For two samples, each round draws group `a`'s resample first, then group
//!    `b`'s: the groups are resampled independently, each from itself.
//! 3. The statistic of every resample is computed, and the replicates are sorted.
//! 4. The interval is `[q(α/2), q(1 − α/2)]` with `α = 1 − confidence`, where `q` is the
//!    type-7 percentile of the replicates (see [`Summary::percentile`](crate::Summary::percentile)).
//!    The point estimate is the statistic of the original samples.
//!
//! The result depends only on the inputs, the seed and the order of the samples; it does not
//! depend on the platform, threads or the version of `rand`, since only the raw output of
//! [`Pcg64Mcg`] (whose stream `rand_pcg` keeps stable) is used.
//!
//! A percentile interval does not always contain the point estimate (for very skewed statistics
//! or tiny samples it may not), and with few samples (say fewer than 10) it is too narrow:
//! prefer [`ratio_to_baseline`](crate::ratio_to_baseline)'s t interval for a handful of seeds.

use rand_pcg::rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use crate::error::{check_confidence, check_finite, Group, StatsError};
use crate::summary::{mean_unchecked, percentile_sorted};

/// A two-sided confidence interval around a point estimate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// The point estimate (the statistic of the original samples).
    pub point: f64,
    /// The confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl ConfidenceInterval {
    /// Whether `x` lies in `[low, high]`.
    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }

    /// `high − low`.
    pub fn width(&self) -> f64 {
        self.high - self.low
    }
}

/// Draws one resample of `from` into `into` (same length).
fn resample(rng: &mut Pcg64Mcg, from: &[f64], into: &mut [f64]) {
    let n = from.len() as u128;
    for slot in into.iter_mut() {
        let i = ((u128::from(rng.next_u64()) * n) >> 64) as usize;
        *slot = from[i];
    }
}

fn check_bootstrap(resamples: usize, confidence: f64) -> Result<(), StatsError> {
    check_confidence(confidence)?;
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    Ok(())
}

fn finite(value: f64, resample: Option<usize>) -> Result<f64, StatsError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(StatsError::NonFiniteStatistic { resample, value })
    }
}

fn interval(
    mut replicates: Vec<f64>,
    point: f64,
    confidence: f64,
) -> Result<ConfidenceInterval, StatsError> {
    replicates.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    Ok(ConfidenceInterval {
        low: percentile_sorted(&replicates, 100.0 * alpha / 2.0),
        high: percentile_sorted(&replicates, 100.0 * (1.0 - alpha / 2.0)),
        point,
        confidence,
    })
}

/// Percentile-bootstrap confidence interval of `statistic` over `samples` (see the
/// [module docs](self) for the exact algorithm).
///
/// `confidence` is the coverage, e.g. 0.95; `resamples` the number of bootstrap rounds (a few
/// thousand is typical: criterion uses 100 000, 10 000 is plenty for 95 % bounds).
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], [`StatsError::InvalidConfidence`],
/// [`StatsError::NoResamples`], and [`StatsError::NonFiniteStatistic`] if `statistic` returns NaN
/// or an infinity.
///
/// ```
/// use tlblab_stats::{bootstrap_ci, mean};
///
/// let xs = [9.8, 10.1, 10.0, 10.3, 9.9, 10.2, 10.0, 10.1];
/// let ci = bootstrap_ci(&xs, |s| mean(s).unwrap(), 2_000, 0.95, 42)?;
/// assert!(ci.low < ci.point && ci.point < ci.high);
/// assert_eq!(ci, bootstrap_ci(&xs, |s| mean(s).unwrap(), 2_000, 0.95, 42)?);
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
pub fn bootstrap_ci(
    samples: &[f64],
    statistic: impl Fn(&[f64]) -> f64,
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<ConfidenceInterval, StatsError> {
    check_finite(samples)?;
    check_bootstrap(resamples, confidence)?;
    let point = finite(statistic(samples), None)?;
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut buf = vec![0.0; samples.len()];
    let mut replicates = Vec::with_capacity(resamples);
    for r in 0..resamples {
        resample(&mut rng, samples, &mut buf);
        replicates.push(finite(statistic(&buf), Some(r))?);
    }
    interval(replicates, point, confidence)
}

/// Percentile-bootstrap confidence interval of a two-sample `statistic(a, b)`, resampling `a`
/// and `b` independently (see the [module docs](self)).
///
/// Errors as for [`bootstrap_ci`], with input errors wrapped in [`StatsError::InGroup`].
pub fn bootstrap_ci_two_sample(
    a: &[f64],
    b: &[f64],
    statistic: impl Fn(&[f64], &[f64]) -> f64,
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<ConfidenceInterval, StatsError> {
    check_finite(a).map_err(|e| e.in_group(Group::A))?;
    check_finite(b).map_err(|e| e.in_group(Group::B))?;
    check_bootstrap(resamples, confidence)?;
    let point = finite(statistic(a, b), None)?;
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let (mut buf_a, mut buf_b) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut replicates = Vec::with_capacity(resamples);
    for r in 0..resamples {
        resample(&mut rng, a, &mut buf_a);
        resample(&mut rng, b, &mut buf_b);
        replicates.push(finite(statistic(&buf_a, &buf_b), Some(r))?);
    }
    interval(replicates, point, confidence)
}

/// The relative change of the mean from a baseline `a` to a candidate `b`,
/// `mean(b) / mean(a) − 1`, with a bootstrap confidence interval.
///
/// `+0.05` means `b`'s mean is 5 % above `a`'s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RelativeChange {
    /// `mean(b) / mean(a) − 1` on the original samples (equal to `ci.point`).
    pub estimate: f64,
    /// Its percentile-bootstrap interval, from [`bootstrap_ci_two_sample`].
    pub ci: ConfidenceInterval,
}

impl RelativeChange {
    /// Estimates the relative change with a two-sample percentile bootstrap.
    ///
    /// Errors as for [`bootstrap_ci_two_sample`], plus [`StatsError::ZeroBaseline`] if
    /// `mean(a)` is 0. If some resample of `a` has mean 0 (possible only when `a` mixes zero or
    /// negative values with positive ones, which makes a relative change meaningless anyway) the
    /// error is [`StatsError::NonFiniteStatistic`].
    pub fn bootstrap(
        a: &[f64],
        b: &[f64],
        resamples: usize,
        confidence: f64,
        seed: u64,
    ) -> Result<RelativeChange, StatsError> {
        check_finite(a).map_err(|e| e.in_group(Group::A))?;
        check_finite(b).map_err(|e| e.in_group(Group::B))?;
        if mean_unchecked(a) == 0.0 {
            return Err(StatsError::ZeroBaseline);
        }
        let ci =
            bootstrap_ci_two_sample(a, b, relative_change_of_means, resamples, confidence, seed)?;
        Ok(RelativeChange { estimate: ci.point, ci })
    }
}

/// `mean(b) / mean(a) − 1` (inputs already checked).
pub(crate) fn relative_change_of_means(a: &[f64], b: &[f64]) -> f64 {
    mean_unchecked(b) / mean_unchecked(a) - 1.0
}
