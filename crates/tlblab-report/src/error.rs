//! Why an input could not be added to a report.

use thiserror::Error;

/// An input file (or JSON value) that cannot be reported. Every variant names the input.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The file could not be read.
    #[error("{name}: cannot read it")]
    Read {
        /// The path as given.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text (a binary trace file, for example).
    #[error("{name}: not a text file (byte {offset} is not UTF-8); a tlblab trace file is summarised first with `tlblab trace report --format json`")]
    NotText {
        /// The path as given.
        name: String,
        /// Offset of the first byte that is not UTF-8.
        offset: usize,
    },
    /// The text is not JSON (truncated, or not a tlblab result at all).
    #[error("{name}: not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// The input's name.
        name: String,
        /// Line of the error (from 1).
        line: usize,
        /// Column of the error (from 1).
        column: usize,
        /// What the parser found.
        message: String,
    },
    /// The JSON has no `schema` string, so it is not a tlblab result.
    #[error(
        "{name}: no \"schema\" field: not a tlblab result (expected one of: {})",
        crate::SCHEMAS.join(", ")
    )]
    NoSchema {
        /// The input's name.
        name: String,
    },
    /// The schema is not one this report can render.
    #[error(
        "{name}: schema {schema:?} is not one tlblab-report renders (expected one of: {})",
        crate::SCHEMAS.join(", ")
    )]
    UnknownSchema {
        /// The input's name.
        name: String,
        /// The schema found.
        schema: String,
    },
    /// The schema is known but a field is missing or of the wrong type.
    #[error("{name}: not a valid {schema} document: at {path}: {message}{}", position(*line, *column))]
    Malformed {
        /// The input's name.
        name: String,
        /// The schema it claims.
        schema: String,
        /// Where in the document (`parts[0].policies[1].measures`), or `.` for the top.
        path: String,
        /// What is wrong there.
        message: String,
        /// The line of the text, when the input was text (0 otherwise).
        line: usize,
        /// The column, when the input was text.
        column: usize,
    },
    /// A directory that is not a finished sweep's.
    #[error("{name}: {what}")]
    SweepDir {
        /// The directory as given.
        name: String,
        /// What is missing.
        what: String,
    },
    /// The fields are well-typed but do not agree with each other.
    #[error("{name}: inconsistent {schema} document: {what}")]
    Inconsistent {
        /// The input's name.
        name: String,
        /// The schema it claims.
        schema: String,
        /// What does not agree.
        what: String,
    },
}

fn position(line: usize, column: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(" (line {line}, column {column})")
    }
}
