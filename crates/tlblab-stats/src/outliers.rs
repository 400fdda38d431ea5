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
/// value; [`DEFAULT_OUTLIER_THRESHOLD`] is the usual choice.
///
/// ```
/// use tlblab_stats::{outliers, DEFAULT_OUTLIER_THRESHOLD};
///
/// let runs = [10.1, 10.3, 10.2, 10.4, 10.2, 13.0, 10.3];
/// assert_eq!(outliers(&runs, DEFAULT_OUTLIER_THRESHOLD)?, vec![5]);
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], and
/// [`StatsError::InvalidThreshold`] unless `threshold` is finite and > 0.
pub fn outliers(samples: &[f64], threshold: f64) -> Result<Vec<usize>, StatsError> {
    if !(threshold.is_finite() && threshold > 0.0) {
        return Err(StatsError::InvalidThreshold(threshold));
    }
    Ok(modified_z_scores(samples)?
        .iter()
        .enumerate()
        .filter(|(_, m)| m.abs() > threshold)
        .map(|(i, _)| i)
        .collect())
}
