//! [`Source`]: a value that was read, or the reason it could not be.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A value read from the system, or why it is missing.
///
/// Serialized as `{"available": VALUE}` or `{"unavailable": {"reason": "..."}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source<T> {
    /// The value was read.
    Available(T),
    /// The value could not be read; `reason` says why (missing file, permission, kernel config).
    Unavailable {
        /// Human-readable reason, naming the file or call and what would make it available.
        reason: String,
    },
}

impl<T> Source<T> {
    /// An unavailable value with its reason.
    pub fn unavailable(reason: impl Into<String>) -> Self {
        Source::Unavailable { reason: reason.into() }
    }

    /// The value, if available.
    pub fn available(&self) -> Option<&T> {
        match self {
            Source::Available(v) => Some(v),
            Source::Unavailable { .. } => None,
        }
    }

    /// Whether the value was read.
    pub fn is_available(&self) -> bool {
        matches!(self, Source::Available(_))
    }

    /// The value, or its reason as the error.
    pub fn result(&self) -> Result<&T, String> {
        match self {
            Source::Available(v) => Ok(v),
            Source::Unavailable { reason } => Err(reason.clone()),
        }
    }

    /// The reason, if unavailable.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Source::Available(_) => None,
            Source::Unavailable { reason } => Some(reason),
        }
    }

    /// Applies `f` to an available value.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Source<U> {
        match self {
            Source::Available(v) => Source::Available(f(v)),
            Source::Unavailable { reason } => Source::Unavailable { reason },
        }
    }

    /// Applies a fallible `f` to an available value; its error becomes the reason.
    pub fn and_then<U>(self, f: impl FnOnce(T) -> Result<U, String>) -> Source<U> {
        match self {
            Source::Available(v) => f(v).into(),
            Source::Unavailable { reason } => Source::Unavailable { reason },
        }
    }

    /// Borrows the value.
    pub fn as_ref(&self) -> Source<&T> {
        match self {
            Source::Available(v) => Source::Available(v),
            Source::Unavailable { reason } => Source::unavailable(reason.clone()),
        }
    }
}

impl<T, E: fmt::Display> From<Result<T, E>> for Source<T> {
    fn from(r: Result<T, E>) -> Self {
        match r {
            Ok(v) => Source::Available(v),
            Err(e) => Source::unavailable(e.to_string()),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Source<T> {
    /// The value, or `unavailable (REASON)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Available(v) => v.fmt(f),
            Source::Unavailable { reason } => write!(f, "unavailable ({reason})"),
        }
    }
}

/// A human-readable reason for a failed read of `path`; `hint` (e.g. " (needs root)") says what
/// would make it readable.
pub(crate) fn io_reason(path: &std::path::Path, e: &std::io::Error, hint: &str) -> String {
    let path = path.display();
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("{path} does not exist{hint}"),
        std::io::ErrorKind::PermissionDenied => {
            format!("permission denied reading {path}: {e}{hint}")
        }
        _ => format!("cannot read {path}: {e}{hint}"),
    }
}

/// Reads a whole text file as a [`Source`].
pub(crate) fn read_source(path: &str, hint: &str) -> Source<String> {
    let path = std::path::Path::new(path);
    std::fs::read_to_string(path).map_err(|e| io_reason(path, &e, hint)).into()
}
