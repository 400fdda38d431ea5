//! Outlier detection by modified z-scores.
//!
//! Iglewicz & Hoaglin, *How to Detect and Handle Outliers* (ASQC Basic References in Quality
//! Control, vol. 16, 1993), define the modified z-score of `xᵢ` as
//!
//! ```text
//! Mᵢ = 0.6745 · (xᵢ − x̃) / MAD        x̃ = median, MAD = median(|xᵢ − x̃|)
//! ```
//!
//! (`0.6745 ≈ Φ⁻¹(3/4)` makes `MAD / 0.6745` estimate σ for normal data) and recommend labelling
//! values with `|Mᵢ| > 3.5` as potential outliers ([`DEFAULT_OUTLIER_THRESHOLD`]).
//!
//! hyperfine uses the same score (it computes `(xᵢ − x̃) / MAD` and compares it with
//! `1.4826 · 10`, i.e. `|Mᵢ| > 10` on this scale, [`HYPERFINE_OUTLIER_THRESHOLD`]) to warn about
//! outliers among benchmark runs, so its cut-off is much laxer than Iglewicz & Hoaglin's 3.5.
//!
//! # A minimum relative deviation
//!
//! A score measures a run against the spread of the others, not against the value: when the runs
//! agree to 0.01 %, a run 0.1 % from the median scores far above 3.5, yet it changes nothing a
//! verdict could see. [`outliers`] therefore flags a run only if it also lies more than
//! [`MIN_OUTLIER_DEVIATION`] (1 %) from the median. Why 1 %: that is the default noise band of
//! the verdicts ([`DEFAULT_NOISE`](crate::DEFAULT_NOISE)); a run closer to the median than the
//! band cannot move a mean across it.
//!
//! # When the MAD is zero
//!
//! If more than half of the values are equal, the MAD is 0 and the formula divides by zero.
//! Then, following IBM's definition of the modified z-score (IBM Cognos Analytics
//! documentation, "Modified z score"), the mean absolute deviation around the median,
//! `MeanAD = mean(|xᵢ − x̃|)`, is used instead: `Mᵢ = (xᵢ − x̃) / (1.253314 · MeanAD)`, where `1.253314 ≈ √(π/2)` makes
//! `1.253314 · MeanAD` estimate σ for normal data. If the MeanAD is zero as well, all values are
//! equal and every score is 0 (no outliers). So scores are always finite. (hyperfine instead
//! replaces a zero MAD by `f64::EPSILON`, which flags every value that differs from the
//! majority with an enormous score.)

use crate::error::{check_finite, StatsError};
use crate::summary::{mad_sorted, percentile_sorted, sorted_copy};

/// The cut-off of Iglewicz & Hoaglin for [`outliers`]: `|Mᵢ| > 3.5`.
pub const DEFAULT_OUTLIER_THRESHOLD: f64 = 3.5;

/// hyperfine's cut-off expressed on this crate's scale: hyperfine flags `|xᵢ − x̃| / MAD > 1.4826 ·
/// 10`, which is `|Mᵢ| > 0.6745 · 14.826 ≈ 10.0`.
pub const HYPERFINE_OUTLIER_THRESHOLD: f64 = 10.0;

/// A run must lie more than this fraction of the median from the median to be an outlier (see
/// the [module docs](self)).
pub const MIN_OUTLIER_DEVIATION: f64 = 0.01;

/// `Φ⁻¹(3/4)`, rounded as in Iglewicz & Hoaglin.
const Z_SCALE: f64 = 0.6745;

/// `√(π/2)`, the ratio of σ to the mean absolute deviation of a normal distribution.
const MEAN_AD_SCALE: f64 = 1.253_314;

/// The modified z-score of each sample, in input order (see the [module docs](self), including
/// what happens when the MAD is 0).
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`].
pub fn modified_z_scores(samples: &[f64]) -> Result<Vec<f64>, StatsError> {
    check_finite(samples)?;
    let sorted = sorted_copy(samples);
    let median = percentile_sorted(&sorted, 50.0);
    let mad = mad_sorted(&sorted, median);
    let scale = if mad > 0.0 {
        Z_SCALE / mad
    } else {
        let mean_ad =
            samples.iter().map(|x| (x - median).abs()).sum::<f64>() / samples.len() as f64;
        if mean_ad > 0.0 {
            1.0 / (MEAN_AD_SCALE * mean_ad)
        } else {
            0.0
        }
    };
    Ok(samples.iter().map(|x| (x - median) * scale).collect())
}

/// Indices (ascending) of the samples whose modified z-score exceeds `threshold` in absolute
/// value ([`DEFAULT_OUTLIER_THRESHOLD`] is the usual choice) and that lie more than
/// [`MIN_OUTLIER_DEVIATION`] of the median from it (any deviation counts when the median is 0).
///
/// ```
/// use tlblab_stats::{outliers, DEFAULT_OUTLIER_THRESHOLD};
///
/// let runs = [10.1, 10.3, 10.2, 10.4, 10.2, 13.0, 10.3];
/// assert_eq!(outliers(&runs, DEFAULT_OUTLIER_THRESHOLD)?, vec![5]);
/// // 0.1% from the others: a huge score, but not an outlier.
/// let tight = [100.0, 100.001, 100.0, 99.999, 100.0, 100.1, 100.001];
/// assert_eq!(outliers(&tight, DEFAULT_OUTLIER_THRESHOLD)?, Vec::<usize>::new());
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], and
/// [`StatsError::InvalidThreshold`] unless `threshold` is finite and > 0.
pub fn outliers(samples: &[f64], threshold: f64) -> Result<Vec<usize>, StatsError> {
    if !(threshold.is_finite() && threshold > 0.0) {
        return Err(StatsError::InvalidThreshold(threshold));
    }
    let scores = modified_z_scores(samples)?;
    let median = percentile_sorted(&sorted_copy(samples), 50.0);
    let far = |x: f64| median == 0.0 || ((x - median) / median).abs() > MIN_OUTLIER_DEVIATION;
    Ok(scores
        .iter()
        .zip(samples)
        .enumerate()
        .filter(|(_, (m, &x))| m.abs() > threshold && far(x))
        .map(|(i, _)| i)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_must_be_beyond_the_minimum_deviation() {
        // Median 100; the run at 100.9 scores far above 3.5 but is only 0.9% away.
        let near = [100.0, 100.0, 100.001, 99.999, 100.0, 100.9];
        assert!(modified_z_scores(&near).unwrap()[5] > 100.0);
        assert!(outliers(&near, DEFAULT_OUTLIER_THRESHOLD).unwrap().is_empty());
        // 1.1% away: flagged.
        let far = [100.0, 100.0, 100.001, 99.999, 100.0, 101.1];
        assert_eq!(outliers(&far, DEFAULT_OUTLIER_THRESHOLD).unwrap(), vec![5]);
        // Below the median as well.
        let low = [100.0, 100.0, 100.001, 99.999, 100.0, 98.0];
        assert_eq!(outliers(&low, DEFAULT_OUTLIER_THRESHOLD).unwrap(), vec![5]);
    }
}
