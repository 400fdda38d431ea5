//! What can go wrong while importing, with the file and line to look at.

use std::path::PathBuf;

use super::TextFormat;
use tlblab_types::escape::escape;

/// Longest quote of an offending line in an error message, in bytes.
const QUOTE_MAX: usize = 160;

/// An import error. Line errors concern one line: the importer goes on with the next line if
/// asked for more. A read error ends the import.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The input could not be read.
    #[error("import: {}:{line}: reading failed", path.display())]
    Read {
        /// The input file.
        path: PathBuf,
        /// The line being read (1-based).
        line: u64,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line could not be understood.
    #[error("import: {}:{line}: {problem}: `{text}`", path.display())]
    Line {
        /// The input file.
        path: PathBuf,
        /// The line (1-based).
        line: u64,
        /// What is wrong with it.
        problem: LineProblem,
        /// The line as read, truncated to 160 bytes (`…` marks a cut), invalid UTF-8 replaced,
        /// control characters escaped ([`tlblab_types::escape`]).
        text: String,
    },
}

impl ImportError {
    /// The 1-based line the error concerns.
    pub fn line(&self) -> u64 {
        match self {
            ImportError::Read { line, .. } | ImportError::Line { line, .. } => *line,
        }
    }

    /// What was wrong with the line, for line errors.
    pub fn problem(&self) -> Option<&LineProblem> {
        match self {
            ImportError::Line { problem, .. } => Some(problem),
            ImportError::Read { .. } => None,
        }
    }

    pub(super) fn line_error(
        path: &std::path::Path,
        line: u64,
        problem: LineProblem,
        raw: &[u8],
    ) -> Self {
        ImportError::Line { path: path.to_path_buf(), line, problem, text: quote(raw) }
    }
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineProblem {
    /// Before the format was known: the line is neither kind of event line.
    #[error("neither an ftrace nor a perf script event line")]
    Unrecognised,
    /// The line is not an event line of the (forced or detected) format.
    #[error("not an event line of the {0} format")]
    NotFormat(TextFormat),
    /// The event lacks a field.
    #[error("{event} without `{field}`")]
    MissingField {
        /// The event.
        event: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field's value is not a number of the expected kind.
    #[error("{event}: `{field}` is not a valid number")]
    BadNumber {
        /// The event.
        event: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A tlb_flush reason with no integer and no known spelling.
    #[error("tlb_flush reason `{}` has no number and is not a known spelling", escape(.0))]
    UnknownReason(String),
    /// A sched_switch `prev_state` that is neither known letters nor a number.
    #[error("sched_switch: unknown prev_state `{}`", escape(.0))]
    UnknownTaskState(String),
    /// An IPI target list that is neither a CPU list nor a hex mask, or names a CPU past 65535.
    #[error("{0}: bad CPU list or mask")]
    BadCpuList(&'static str),
    /// A timestamp past the trace format's last ([`crate::MAX_TS_NS`], 292 years).
    #[error("timestamp {0} ns is past the last a trace holds ({max} ns, 292 years)", max = crate::MAX_TS_NS)]
    TimestampTooLate(u64),
    /// The line is longer than the importer keeps.
    #[error("line longer than {0} bytes")]
    TooLong(usize),
}

/// The line for an error message: at most [`QUOTE_MAX`] bytes of it, cut on a character
/// boundary, its control characters escaped (the message goes to a terminal).
fn quote(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    let text = text.trim_end_matches(['\r', '\n']);
    if text.len() <= QUOTE_MAX {
        return escape(text).into_owned();
    }
    let mut cut = QUOTE_MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", escape(&text[..cut]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_file_line_and_text() {
        let e = ImportError::line_error(
            std::path::Path::new("t.txt"),
            7,
            LineProblem::MissingField { event: "tlb_flush", field: "pages:" },
            b"x-1 [000] 1.000000: tlb_flush: reason:remote shootdown (1)\n",
        );
        assert_eq!(
            e.to_string(),
            "import: t.txt:7: tlb_flush without `pages:`: `x-1 [000] 1.000000: tlb_flush: reason:remote shootdown (1)`"
        );
        assert_eq!(e.line(), 7);
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let long = "é".repeat(200);
        let q = quote(long.as_bytes());
        assert!(q.ends_with('…'));
        assert!(q.len() <= QUOTE_MAX + '…'.len_utf8());
    }
}
