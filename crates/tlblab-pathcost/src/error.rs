//! Cache errors.

use std::path::PathBuf;
use thiserror::Error;

/// A cache file that cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PathCostError {
    /// The file exists but is not a measurement this code wrote.
    #[error("kernel-path cost cache {path} is corrupt: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The file cannot be read or written.
    #[error("kernel-path cost cache {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}
