//! Errors of the harness.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why one run could not be measured. Serializable, so that a run made in another process can
/// report it.
#[derive(Debug, Error, Serialize, Deserialize)]
pub enum ExecError {
    /// The run was stopped (Ctrl-C); nothing was measured.
    #[error("interrupted")]
    Interrupted,
    /// The configuration cannot run here (too few CPUs, a bad parameter): no run of it will.
    #[error("{0}")]
    Unsupported(String),
    /// The run failed.
    #[error("{0}")]
    Failed(String),
}

/// Errors of sessions, result files, baselines and comparisons.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A run failed.
    #[error("{config}: run {run}")]
    Run {
        /// The configuration's key.
        config: String,
        /// The run's number (from 1).
        run: usize,
        /// What failed.
        source: ExecError,
    },
    /// A file could not be read or written.
    #[error("{}: {action}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// A result file is not valid JSON of the schema.
    #[error("{}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A baseline name that cannot be a file name.
    #[error("baseline name {0:?}: use letters, digits, '.', '_' and '-' only")]
    BadBaselineName(String),
    /// No baseline of this name.
    #[error("no baseline {name:?} in {} (saved ones: {known})", dir.display())]
    NoBaseline {
        /// The name.
        name: String,
        /// The baseline directory.
        dir: PathBuf,
        /// The names found there.
        known: String,
    },
    /// Two result sets measured different things.
    #[error(
        "cannot compare {a} with {b}: they measured different scenarios or parameters{}{}",
        list(" (only in the first: ", only_in_a),
        list(" (only in the second: ", only_in_b)
    )]
    Mismatch {
        /// Label of the first.
        a: String,
        /// Label of the second.
        b: String,
        /// Configurations only the first has.
        only_in_a: Vec<String>,
        /// Configurations only the second has.
        only_in_b: Vec<String>,
    },
    /// A configuration has too few runs to compare.
    #[error("{config}")]
    Stats {
        /// The configuration's key.
        config: String,
        /// The statistics error.
        source: tlblab_stats::StatsError,
    },
}

fn list(head: &str, items: &[String]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!("{head}{})", items.join("; "))
    }
}
