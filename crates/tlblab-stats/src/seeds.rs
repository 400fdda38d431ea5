//! Multi-seed studies: a policy's metric relative to a baseline's, seed by seed.
//!
//! The simulator runs each policy on the same K seeds. The per-seed values of a policy and of the
//! baseline are therefore *paired*: seed `i` of both saw the same workload. The ratios
//! `rᵢ = policyᵢ / baselineᵢ` cancel most of the seed-to-seed variation, so the statistic is the
//! mean of the per-seed ratios, not the ratio of the means.
//!
//! A ratio of durations, counts or rates is positive, and so are the bounds of its interval: the
//! interval is a paired Student-t interval of the *logarithms* of the per-seed ratios, taken
//! back with `exp`. Its point is the geometric mean of the ratios (the right mean of ratios:
//! a halving and a doubling average to 1). A t interval of the ratios themselves, as tlblab used
//! before, is symmetric and can reach below 0 with two noisy seeds.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::bootstrap::{bootstrap_ci, ConfidenceInterval};
use crate::error::{check_confidence, check_finite, Group, StatsError};
use crate::summary::{mean_std, mean_unchecked, MeanStd};

/// How a [`RatioToBaseline`]'s interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IntervalMethod {
    /// Student-t interval of the mean of the paired ratios (results of older tlblab only: it
    /// can give a negative bound).
    StudentT,
    /// Student-t interval of the mean of the logarithms of the paired ratios, taken back with
    /// `exp`: always positive, around their geometric mean.
    LogStudentT,
    /// Percentile bootstrap over the seeds.
    Bootstrap,
}

/// A policy's metric relative to a baseline over paired seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioToBaseline {
    /// Mean, standard deviation and standard error of the per-seed ratios
    /// `policyᵢ / baselineᵢ`.
    pub ratios: MeanStd,
    /// Interval of the ratio. Its point is the geometric mean of the per-seed ratios for
    /// [`IntervalMethod::LogStudentT`], their arithmetic mean otherwise.
    pub ci: ConfidenceInterval,
    /// How `ci` was computed.
    pub method: IntervalMethod,
}

fn per_seed_ratios(policy: &[f64], baseline: &[f64]) -> Result<Vec<f64>, StatsError> {
    check_finite(policy).map_err(|e| e.in_group(Group::B))?;
    check_finite(baseline).map_err(|e| e.in_group(Group::A))?;
    if policy.len() != baseline.len() {
        return Err(StatsError::LengthMismatch { a: baseline.len(), b: policy.len() });
    }
    if baseline.contains(&0.0) {
        return Err(StatsError::ZeroBaseline);
    }
    let ratios: Vec<f64> = policy.iter().zip(baseline).map(|(p, b)| p / b).collect();
    // Finite / finite non-zero can still overflow.
    check_finite(&ratios)?;
    Ok(ratios)
}

/// The per-seed ratios `policyᵢ / baselineᵢ` with a paired Student-t interval of their logarithms
/// `lᵢ = ln rᵢ`, taken back with `exp`:
///
/// ```text
/// exp(l̄ ± t_{(1 + confidence)/2, K − 1} · s_l / √K)
/// ```
///
/// where `s_l` is the sample standard deviation of the K log-ratios. The point is `exp(l̄)`, the
/// geometric mean of the ratios; both bounds are > 0 whatever the data. This is the one-sample t
/// interval on the log scale, valid when the ratios are roughly log-normal; it is the right
/// choice for the usual handful of seeds, where a bootstrap interval is too narrow.
///
/// When some policy value is 0 (so its ratio is 0 and has no logarithm) the interval is a
/// percentile bootstrap of the mean ratio over the seeds instead ([`IntervalMethod::Bootstrap`],
/// 10 000 resamples, seed 0): its bounds are ≥ 0.
///
/// ```
/// use tlblab_stats::ratio_to_baseline;
///
/// let baseline = [100.0, 95.0, 100.0, 101.0, 100.0]; // misses, seeds 0..5
/// let policy = [102.0, 97.0, 110.0, 105.0, 99.0];
/// let r = ratio_to_baseline(&policy, &baseline, 0.95)?;
/// assert!((r.ratios.mean - 1.034_131_318_394_997).abs() < 1e-12);
/// assert!(r.ci.point < r.ratios.mean); // the geometric mean
/// assert!(r.ci.contains(1.0)); // not distinguishable from the baseline with 5 seeds
/// // Two wildly different seeds: still a positive lower bound.
/// let wild = ratio_to_baseline(&[1.0, 30.0], &[10.0, 10.0], 0.95)?;
/// assert!(wild.ci.low > 0.0 && wild.ci.high > 3.0);
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
///
/// Errors: [`StatsError::InGroup`] for an empty or non-finite input (group `A` is the baseline,
/// `B` the policy), [`StatsError::LengthMismatch`], [`StatsError::ZeroBaseline`] if a baseline
/// value is 0, [`StatsError::NonPositive`] for a negative ratio, [`StatsError::TooFewSamples`]
/// for fewer than 2 seeds, [`StatsError::InvalidConfidence`].
pub fn ratio_to_baseline(
    policy: &[f64],
    baseline: &[f64],
    confidence: f64,
) -> Result<RatioToBaseline, StatsError> {
    check_confidence(confidence)?;
    let ratios = per_seed_ratios(policy, baseline)?;
    if ratios.len() < 2 {
        return Err(StatsError::TooFewSamples { needed: 2, got: ratios.len() });
    }
    if let Some(index) = ratios.iter().position(|&r| r < 0.0) {
        return Err(StatsError::NonPositive { index, value: ratios[index] });
    }
    let ms = mean_std(&ratios)?;
    if ratios.contains(&0.0) {
        let ci = bootstrap_ci(&ratios, mean_unchecked, ZERO_RATIO_RESAMPLES, confidence, 0)?;
        return Ok(RatioToBaseline { ratios: ms, ci, method: IntervalMethod::Bootstrap });
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let log_ms = mean_std(&logs)?;
    let df = (ratios.len() - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, df)
        .expect("df >= 1 is a valid Student-t")
        .inverse_cdf((1.0 + confidence) / 2.0);
    let half = t * log_ms.sem;
    Ok(RatioToBaseline {
        ratios: ms,
        ci: ConfidenceInterval {
            low: (log_ms.mean - half).exp(),
            high: (log_ms.mean + half).exp(),
            point: log_ms.mean.exp(),
            confidence,
        },
        method: IntervalMethod::LogStudentT,
    })
}

/// Bootstrap resamples of the fallback interval when a ratio is 0.
const ZERO_RATIO_RESAMPLES: usize = 10_000;

/// Like [`ratio_to_baseline`], but the interval is a percentile bootstrap of the mean of the
/// per-seed ratios: the seeds are resampled with replacement, each keeping its pair (see
/// [`crate::bootstrap`] for the algorithm). Needs only one seed, but with fewer than about 10 the
/// interval is too narrow to be trusted.
///
/// Errors: as [`ratio_to_baseline`] (except that one seed is enough), plus
/// [`StatsError::NoResamples`].
pub fn ratio_to_baseline_bootstrap(
    policy: &[f64],
    baseline: &[f64],
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<RatioToBaseline, StatsError> {
    let ratios = per_seed_ratios(policy, baseline)?;
    let ms = mean_std(&ratios)?;
    let ci = bootstrap_ci(&ratios, mean_unchecked, resamples, confidence, seed)?;
    Ok(RatioToBaseline { ratios: ms, ci, method: IntervalMethod::Bootstrap })
}

/// The Student-t interval of the mean of `values` (independent seeds) at `confidence`: the
/// "mean ± CI over seeds" of a sweep's points.
///
/// ```
/// let ci = tlblab_stats::mean_interval(&[9.0, 10.0, 11.0], 0.95).unwrap();
/// // t(0.975, 2) = 4.303, sem = 1 / √3
/// assert!((ci.high - ci.low - 2.0 * 4.303 / 3f64.sqrt()).abs() < 1e-3);
/// assert_eq!(ci.point, 10.0);
/// ```
///
/// Errors: an empty or non-finite input, fewer than 2 values, an invalid confidence.
pub fn mean_interval(values: &[f64], confidence: f64) -> Result<ConfidenceInterval, StatsError> {
    check_confidence(confidence)?;
    let ms = mean_std(values)?;
    if values.len() < 2 {
        return Err(StatsError::TooFewSamples { needed: 2, got: values.len() });
    }
    let t = StudentsT::new(0.0, 1.0, (values.len() - 1) as f64)
        .expect("df >= 1 is a valid Student-t")
        .inverse_cdf((1.0 + confidence) / 2.0);
    let half = t * ms.sem;
    Ok(ConfidenceInterval { low: ms.mean - half, high: ms.mean + half, point: ms.mean, confidence })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the (positive) data, the interval of a ratio is positive and holds its point.
        #[test]
        fn ratio_interval_is_positive_and_holds_its_point(
            pairs in prop::collection::vec((1e-6f64..1e9, 1e-6f64..1e9), 2..12),
        ) {
            let (policy, baseline): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
            let r = ratio_to_baseline(&policy, &baseline, 0.95).unwrap();
            prop_assert!(r.ci.low > 0.0, "{:?}", r.ci);
            prop_assert!(r.ci.low <= r.ci.point && r.ci.point <= r.ci.high, "{:?}", r.ci);
        }
    }

    #[test]
    fn a_t_interval_of_the_raw_ratios_would_go_negative_here() {
        // Ratios 0.1 and 3.0: mean 1.55, sd 2.05, t(1) = 12.7 → raw bounds −16.9 … 20.0.
        let r = ratio_to_baseline(&[1.0, 30.0], &[10.0, 10.0], 0.95).unwrap();
        assert_eq!(r.method, IntervalMethod::LogStudentT);
        assert!((r.ci.point - 0.3f64.sqrt()).abs() < 1e-12, "geometric mean of 0.1 and 3");
        assert!(r.ci.low > 0.0 && r.ci.low < 1e-5 && r.ci.high > 1e4, "{:?}", r.ci);
    }

    #[test]
    fn a_zero_ratio_falls_back_to_a_non_negative_bootstrap() {
        let r = ratio_to_baseline(&[0.0, 0.0, 1.0], &[10.0, 10.0, 10.0], 0.95).unwrap();
        assert_eq!(r.method, IntervalMethod::Bootstrap);
        assert!(r.ci.low >= 0.0 && r.ci.high <= 0.1);
        let negative = ratio_to_baseline(&[-1.0, 1.0], &[1.0, 1.0], 0.95);
        assert!(matches!(negative, Err(StatsError::NonPositive { index: 0, .. })));
    }
}
