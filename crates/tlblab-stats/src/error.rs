//! The one error type of the crate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which of the two groups of a two-sample function an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Group {
    /// The first argument, the baseline (`a`).
    A,
    /// The second argument, the candidate (`b`).
    B,
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Group::A => "a",
            Group::B => "b",
        })
    }
}

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// The input has no samples.
    #[error("no samples")]
    Empty,
    /// A sample is NaN or infinite.
    #[error("sample {index} is not finite ({value})")]
    NonFinite {
        /// Index of the first offending sample in the input slice.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// The statistic needs more samples than it was given.
    #[error("need at least {needed} samples, got {got}")]
    TooFewSamples {
        /// The minimum number of samples.
        needed: usize,
        /// The number given.
        got: usize,
    },
    /// A sample is zero or negative where only positive values make sense (harmonic and geometric
    /// means, ratios).
    #[error("sample {index} is {value}, but only values > 0 are allowed here")]
    NonPositive {
        /// Index of the first offending sample in the input slice.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// A percentile outside `[0, 100]` (or NaN) was asked for.
    #[error("percentile {0} is outside [0, 100]")]
    InvalidPercentile(f64),
    /// A confidence level outside the open interval `(0, 1)` (or NaN) was given.
    #[error("confidence level {0} is outside (0, 1)")]
    InvalidConfidence(f64),
    /// A bootstrap was asked for with zero resamples.
    #[error("a bootstrap needs at least one resample")]
    NoResamples,
    /// The statistic of a bootstrap returned NaN or an infinity.
    #[error("the statistic is not finite ({value}) on {}", on_what(.resample))]
    NonFiniteStatistic {
        /// Which resample (0-based); `None` for the statistic of the original samples.
        resample: Option<usize>,
        /// What it returned.
        value: f64,
    },
    /// Paired samples (one value per seed) have different lengths.
    #[error("paired samples differ in length: {a} and {b}")]
    LengthMismatch {
        /// Length of the first group.
        a: usize,
        /// Length of the second group.
        b: usize,
    },
    /// A relative change or ratio was asked for against a baseline whose mean is zero.
    #[error("the baseline's mean is zero, so a relative change is undefined")]
    ZeroBaseline,
    /// A noise threshold that is negative or not finite was given.
    #[error("noise threshold {0} must be finite and >= 0")]
    InvalidNoiseThreshold(f64),
    /// A significance level outside the open interval `(0, 1)` (or NaN) was given.
    #[error("significance level {0} is outside (0, 1)")]
    InvalidSignificance(f64),
    /// A threshold for outliers that is not a positive finite number was given.
    #[error("outlier threshold {0} must be finite and > 0")]
    InvalidThreshold(f64),
    /// An error in one group of a two-sample function.
    #[error("group {group}: {source}")]
    InGroup {
        /// The group the error is about.
        group: Group,
        /// The error itself.
        #[source]
        source: Box<StatsError>,
    },
}

fn on_what(resample: &Option<usize>) -> String {
    match resample {
        Some(r) => format!("resample {r}"),
        None => "the original samples".to_owned(),
    }
}

impl StatsError {
    /// Wraps the error with the group it is about.
    pub(crate) fn in_group(self, group: Group) -> StatsError {
        StatsError::InGroup { group, source: Box::new(self) }
    }
}

/// Checks that `samples` is non-empty and has only finite values.
pub(crate) fn check_finite(samples: &[f64]) -> Result<(), StatsError> {
    if samples.is_empty() {
        return Err(StatsError::Empty);
    }
    match samples.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NonFinite { index, value: samples[index] }),
        None => Ok(()),
    }
}

/// Checks that `samples` has at least `needed` values, all of them finite.
pub(crate) fn check_len(samples: &[f64], needed: usize) -> Result<(), StatsError> {
    check_finite(samples)?;
    if samples.len() < needed {
        return Err(StatsError::TooFewSamples { needed, got: samples.len() });
    }
    Ok(())
}

/// Checks a confidence (or coverage) level.
pub(crate) fn check_confidence(confidence: f64) -> Result<(), StatsError> {
    if confidence > 0.0 && confidence < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidConfidence(confidence))
    }
}
