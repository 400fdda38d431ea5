//! Multi-seed studies: a policy's metric relative to a baseline's, seed by seed.
//!
//! The simulator runs each policy on the same K seeds. The per-seed values of a policy and of the
//! baseline are therefore *paired*: seed `i` of both saw the same workload. The ratios
//! `rᵢ = policyᵢ / baselineᵢ` cancel most of the seed-to-seed variation, so the statistic is the
//! mean of the per-seed ratios, not the ratio of the means.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::bootstrap::{bootstrap_ci, ConfidenceInterval};
use crate::error::{check_confidence, check_finite, Group, StatsError};
use crate::summary::{mean_std, mean_unchecked, MeanStd};

/// How a [`RatioToBaseline`]'s interval was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IntervalMethod {
    /// Student-t interval of the mean of the paired ratios.
    StudentT,
    /// Percentile bootstrap over the seeds.
    Bootstrap,
}

/// A policy's metric relative to a baseline over paired seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RatioToBaseline {
    /// Mean, standard deviation and standard error of the per-seed ratios
    /// `policyᵢ / baselineᵢ`.
    pub ratios: MeanStd,
    /// Interval of the mean ratio (`ci.point == ratios.mean`).
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

/// The mean of the per-seed ratios `policyᵢ / baselineᵢ` with a paired Student-t interval:
///
/// ```text
/// r̄ ± t_{(1 + confidence)/2, K − 1} · s_r / √K
/// ```
///
/// where `s_r` is the sample standard deviation of the K ratios. This is the one-sample t
/// interval of the ratios, valid when they are roughly normal; it is the right choice for the
/// usual handful of seeds, where a bootstrap interval is too narrow.
///
/// ```
/// use tlblab_stats::ratio_to_baseline;
///
/// let baseline = [100.0, 95.0, 100.0, 101.0, 100.0]; // misses, seeds 0..5
/// let policy = [102.0, 97.0, 110.0, 105.0, 99.0];
/// let r = ratio_to_baseline(&policy, &baseline, 0.95)?;
/// assert!((r.ratios.mean - 1.034_131_318_394_997).abs() < 1e-12);
/// assert!(r.ci.contains(1.0)); // not distinguishable from the baseline with 5 seeds
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
///
/// Errors: [`StatsError::InGroup`] for an empty or non-finite input (group `A` is the baseline,
/// `B` the policy), [`StatsError::LengthMismatch`], [`StatsError::ZeroBaseline`] if a baseline
/// value is 0, [`StatsError::TooFewSamples`] for fewer than 2 seeds,
/// [`StatsError::InvalidConfidence`].
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
    let ms = mean_std(&ratios)?;
    let df = (ratios.len() - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, df)
        .expect("df >= 1 is a valid Student-t")
        .inverse_cdf((1.0 + confidence) / 2.0);
    let half = t * ms.sem;
    Ok(RatioToBaseline {
        ratios: ms,
        ci: ConfidenceInterval {
            low: ms.mean - half,
            high: ms.mean + half,
            point: ms.mean,
            confidence,
        },
        method: IntervalMethod::StudentT,
    })
}

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
