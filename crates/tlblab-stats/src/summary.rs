//! Descriptive statistics of one sample: [`Summary`], [`MeanStd`], percentiles and means.

use serde::{Deserialize, Serialize};

use crate::error::{check_finite, StatsError};

/// The factor that turns a median absolute deviation into a consistent estimator of the standard
/// deviation of a normal distribution: `1 / Φ⁻¹(3/4) ≈ 1.4826`.
pub const MAD_NORMAL_SCALE: f64 = 1.4826;

/// Arithmetic mean of a non-empty slice, clamped into `[min, max]`.
///
/// Uses a two-pass correction (`m + Σ(x − m) / n`) so that, e.g., a constant sample has exactly
/// that constant as its mean; the clamp guards the last ulp. No checks: the callers have checked.
pub(crate) fn mean_unchecked(samples: &[f64]) -> f64 {
    let n = samples.len() as f64;
    let m0 = samples.iter().sum::<f64>() / n;
    let m = m0 + samples.iter().map(|x| x - m0).sum::<f64>() / n;
    let (lo, hi) = min_max(samples);
    m.clamp(lo, hi)
}

fn min_max(samples: &[f64]) -> (f64, f64) {
    samples.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

/// Sample variance (denominator `n − 1`) around `mean`; 0 for a single sample.
pub(crate) fn variance_unchecked(samples: &[f64], mean: f64) -> f64 {
    let n = samples.len();
    if n < 2 {
        return 0.0;
    }
    let (ss, s) = samples.iter().fold((0.0, 0.0), |(ss, s), &x| {
        let d = x - mean;
        (ss + d * d, s + d)
    });
    // The second term is the compensated two-pass correction (Chan, Golub & LeVeque 1983); it is
    // zero in exact arithmetic.
    ((ss - s * s / n as f64) / (n - 1) as f64).max(0.0)
}

/// Percentile `p` (in `[0, 100]`) of samples sorted ascending, by linear interpolation between
/// closest ranks (Hyndman & Fan type 7).
pub(crate) fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * (p / 100.0);
    let lo = h.floor();
    let i = lo as usize;
    if i + 1 >= sorted.len() {
        return sorted[sorted.len() - 1];
    }
    let frac = h - lo;
    let (x0, x1) = (sorted[i], sorted[i + 1]);
    if frac == 0.0 || x0 == x1 {
        x0
    } else {
        // Clamped so that rounding never leaves [x0, x1]; this keeps percentiles monotone in p.
        (x0 + frac * (x1 - x0)).clamp(x0, x1)
    }
}

pub(crate) fn sorted_copy(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

fn check_percentile(p: f64) -> Result<(), StatsError> {
    if (0.0..=100.0).contains(&p) {
        Ok(())
    } else {
        Err(StatsError::InvalidPercentile(p))
    }
}

/// Median absolute deviation of samples sorted ascending, around their `median`.
pub(crate) fn mad_sorted(sorted: &[f64], median: f64) -> f64 {
    let deviations = sorted_copy(&sorted.iter().map(|x| (x - median).abs()).collect::<Vec<_>>());
    percentile_sorted(&deviations, 50.0)
}

/// Arithmetic mean.
///
/// Exact for constant samples and always within `[min, max]` (see the crate docs). Errors:
/// [`StatsError::Empty`], [`StatsError::NonFinite`].
pub fn mean(samples: &[f64]) -> Result<f64, StatsError> {
    check_finite(samples)?;
    Ok(mean_unchecked(samples))
}

/// Percentile `p` (`0 ≤ p ≤ 100`) of unsorted samples; see [`Summary::percentile`] for the
/// definition.
pub fn percentile(samples: &[f64], p: f64) -> Result<f64, StatsError> {
    check_finite(samples)?;
    check_percentile(p)?;
    Ok(percentile_sorted(&sorted_copy(samples), p))
}

/// Harmonic mean `n / Σ(1/xᵢ)`, the right average for rates such as operations per second (what
/// mmtests reports as "Hmean").
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], and [`StatsError::NonPositive`] if
/// any value is ≤ 0.
pub fn harmonic_mean(samples: &[f64]) -> Result<f64, StatsError> {
    check_positive(samples)?;
    let (lo, hi) = min_max(samples);
    let h = samples.len() as f64 / samples.iter().map(|x| 1.0 / x).sum::<f64>();
    Ok(h.clamp(lo, hi))
}

/// Geometric mean `exp(mean(ln xᵢ))`, the right average for ratios (e.g. speedups).
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`], and [`StatsError::NonPositive`] if
/// any value is ≤ 0.
pub fn geometric_mean(samples: &[f64]) -> Result<f64, StatsError> {
    check_positive(samples)?;
    let logs: Vec<f64> = samples.iter().map(|x| x.ln()).collect();
    let (lo, hi) = min_max(samples);
    Ok(mean_unchecked(&logs).exp().clamp(lo, hi))
}

fn check_positive(samples: &[f64]) -> Result<(), StatsError> {
    check_finite(samples)?;
    match samples.iter().position(|&x| x <= 0.0) {
        Some(index) => Err(StatsError::NonPositive { index, value: samples[index] }),
        None => Ok(()),
    }
}

/// Descriptive statistics of one sample.
///
/// All fields are computed once by [`Summary::of`]; the sorted samples are kept (privately) for
/// [`Summary::percentile`]. Serializes to the statistics only (not the samples); a `Summary`
/// read back from JSON (e.g. inside a saved comparison) has every statistic but no samples:
/// [`Summary::sorted_samples`] is empty and [`Summary::percentile`] fails with
/// [`StatsError::Empty`].
///
/// ```
/// use tlblab_stats::Summary;
///
/// let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])?;
/// assert_eq!((s.n, s.mean, s.median, s.mad), (8, 5.0, 4.5, 0.5));
/// assert!((s.stddev - 2.138_089_935_299_395).abs() < 1e-12);
/// assert_eq!(s.percentile(25.0)?, 4.0);
/// # Ok::<(), tlblab_stats::StatsError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples (≥ 1).
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (Bessel-corrected, denominator `n − 1`); 0 when `n = 1`.
    pub stddev: f64,
    /// Standard error of the mean, `stddev / √n`.
    pub sem: f64,
    /// Coefficient of variation `stddev / |mean|`; `None` when the mean is 0.
    pub cv: Option<f64>,
    /// Median (the 50th percentile).
    pub median: f64,
    /// Raw median absolute deviation `median(|xᵢ − median|)`; see [`Summary::mad_normal`].
    pub mad: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    #[serde(skip)]
    sorted: Vec<f64>,
}

impl Summary {
    /// Summarises `samples` (in any order).
    ///
    /// Errors: [`StatsError::Empty`], and [`StatsError::NonFinite`] naming the first NaN or
    /// infinite sample.
    pub fn of(samples: &[f64]) -> Result<Summary, StatsError> {
        check_finite(samples)?;
        let sorted = sorted_copy(samples);
        let n = sorted.len();
        // In input order, so that the results equal those of `mean` and `mean_std` bit for bit.
        let mean = mean_unchecked(samples);
        let stddev = variance_unchecked(samples, mean).sqrt();
        let median = percentile_sorted(&sorted, 50.0);
        Ok(Summary {
            n,
            mean,
            stddev,
            sem: stddev / (n as f64).sqrt(),
            cv: (mean != 0.0).then(|| stddev / mean.abs()),
            median,
            mad: mad_sorted(&sorted, median),
            min: sorted[0],
            max: sorted[n - 1],
            sorted,
        })
    }

    /// Percentile `p`, `0 ≤ p ≤ 100`, by linear interpolation between closest ranks.
    ///
    /// This is Hyndman & Fan's type 7, R's default `quantile(type = 7)` and numpy's default
    /// `percentile(method = "linear")`: with the samples sorted as `x₀ ≤ … ≤ xₙ₋₁` and
    /// `h = (n − 1)·p/100`, the result is `x⌊h⌋ + (h − ⌊h⌋)·(x⌊h⌋₊₁ − x⌊h⌋)`. So `p = 0` is the
    /// minimum, `p = 100` the maximum and `p = 50` the median.
    ///
    /// Errors: [`StatsError::InvalidPercentile`] for `p` outside `[0, 100]` or NaN;
    /// [`StatsError::Empty`] for a summary read back from JSON, which has no samples.
    pub fn percentile(&self, p: f64) -> Result<f64, StatsError> {
        check_percentile(p)?;
        if self.sorted.is_empty() {
            return Err(StatsError::Empty);
        }
        Ok(percentile_sorted(&self.sorted, p))
    }

    /// The MAD scaled by [`MAD_NORMAL_SCALE`] (1.4826), a robust estimate of the standard
    /// deviation that matches it for normally distributed data (scipy's
    /// `median_abs_deviation(scale = "normal")`, R's `mad()` default).
    pub fn mad_normal(&self) -> f64 {
        MAD_NORMAL_SCALE * self.mad
    }

    /// The samples, sorted ascending.
    pub fn sorted_samples(&self) -> &[f64] {
        &self.sorted
    }
}

/// Mean and spread of a handful of values, e.g. one metric over K simulator seeds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MeanStd {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (denominator `n − 1`); 0 when `n = 1`.
    pub stddev: f64,
    /// Standard error of the mean, `stddev / √n`.
    pub sem: f64,
}

/// The [`MeanStd`] of `values`.
///
/// Errors: [`StatsError::Empty`], [`StatsError::NonFinite`].
pub fn mean_std(values: &[f64]) -> Result<MeanStd, StatsError> {
    check_finite(values)?;
    let mean = mean_unchecked(values);
    let stddev = variance_unchecked(values, mean).sqrt();
    Ok(MeanStd { n: values.len(), mean, stddev, sem: stddev / (values.len() as f64).sqrt() })
}
