//! The error type shared by every reader and the writer.

use std::fmt;
use std::io;

/// Where in a trace an error was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// No particular place (for example, the file could not be opened).
    None,
    /// A 1-based line number of a text trace.
    Line(u64),
    /// A byte offset in the *decompressed* stream.
    Offset(u64),
}

impl Position {
    /// The position as a message prefix: `line 17: `, `byte offset 128: ` or nothing.
    fn prefix(self) -> PositionPrefix {
        PositionPrefix(self)
    }
}

struct PositionPrefix(Position);

impl fmt::Display for PositionPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Position::None => Ok(()),
            Position::Line(line) => write!(f, "line {line}: "),
            Position::Offset(offset) => write!(f, "byte offset {offset}: "),
        }
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceErrorKind {
    /// Reading or writing the underlying file failed.
    #[error("I/O error: {0}")]
    Io(io::Error),
    /// A line of a text trace is not in the expected syntax.
    #[error("cannot parse \"{excerpt}\": {why}")]
    BadLine {
        /// The start of the line (at most 60 characters, non-printable bytes escaped).
        excerpt: String,
        /// What is wrong with it.
        why: String,
    },
    /// The data ends in the middle of a record, a header or a compressed stream.
    #[error("truncated: {why}")]
    Truncated {
        /// What was cut short.
        why: String,
    },
    /// A compact trace does not start with the magic bytes `tlblabMT`.
    #[error("bad magic {found}, expected \"tlblabMT\" (not a tlblab compact trace?)")]
    BadMagic {
        /// The bytes found instead, escaped.
        found: String,
    },
    /// A compact trace has a version this reader does not know.
    #[error("unsupported compact format version {version} (this reader supports version 1)")]
    UnsupportedVersion {
        /// The version in the header.
        version: u16,
    },
    /// A binary record (or the compact header) breaks a rule of its format.
    #[error("{why}")]
    BadRecord {
        /// Which rule, and the offending value.
        why: String,
    },
    /// The checksum in a compact trace's END record does not match its records.
    #[error("checksum mismatch: the END record says {stored:#018x}, the records hash to {computed:#018x}")]
    BadChecksum {
        /// The checksum stored in the END record.
        stored: u64,
        /// The checksum of the records read.
        computed: u64,
    },
    /// A compact trace ends without its END record.
    #[error("the trace ends without an END record after {records} records (incomplete file?)")]
    MissingEnd {
        /// How many records were read.
        records: u64,
    },
    /// A compact trace has data after its END record.
    #[error("data after the END record")]
    TrailingData,
    /// A gzip or xz stream is corrupt.
    #[error("decompression failed: {why}")]
    Decompress {
        /// The decompressor's message.
        why: String,
    },
    /// The compact writer was given an event that the format cannot represent.
    #[error("cannot encode event: {why}")]
    InvalidEvent {
        /// Why the event cannot be written.
        why: String,
    },
}

/// An error reading or writing a trace: which trace, where in it, and what went wrong.
///
/// Displays as `trace.lackey: line 17: cannot parse "I  zz,3": bad hex address`.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {}{kind}", .position.prefix())]
pub struct TraceError {
    name: String,
    position: Position,
    kind: TraceErrorKind,
}

impl TraceError {
    /// An error in the trace called `name` (a path as given, or the name passed to
    /// [`from_reader`](crate::from_reader)).
    pub fn new(name: &str, position: Position, kind: TraceErrorKind) -> TraceError {
        TraceError { name: name.to_owned(), position, kind }
    }

    /// The trace's name: the path as given, or the name passed to
    /// [`from_reader`](crate::from_reader).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where in the trace the error was found.
    pub fn position(&self) -> Position {
        self.position
    }

    /// What went wrong.
    pub fn kind(&self) -> &TraceErrorKind {
        &self.kind
    }

    /// What went wrong, by value.
    pub fn into_kind(self) -> TraceErrorKind {
        self.kind
    }
}

/// The payload of an `io::Error` produced by a gzip or xz decoder (as opposed to the file).
#[derive(Debug)]
pub(crate) struct DecompressFailure {
    /// The compressed stream ended before the decoder expected it to.
    pub(crate) truncated: bool,
    /// The decoder's message.
    pub(crate) why: String,
}

impl fmt::Display for DecompressFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for DecompressFailure {}

/// The error for a failed read of the (decompressed) stream after `offset` bytes.
pub(crate) fn read_failure(name: &str, offset: u64, error: io::Error) -> TraceError {
    let kind = match error.get_ref().and_then(|inner| inner.downcast_ref::<DecompressFailure>()) {
        Some(failure) if failure.truncated => TraceErrorKind::Truncated {
            why: format!("the compressed stream ends early ({})", failure.why),
        },
        Some(failure) => TraceErrorKind::Decompress { why: failure.why.clone() },
        None => TraceErrorKind::Io(error),
    };
    TraceError::new(name, Position::Offset(offset), kind)
}

/// `bytes` as printable text: printable ASCII as is, anything else as `\xNN`.
pub(crate) fn escape_bytes(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte.is_ascii_graphic() || byte == b' ' {
            text.push(char::from(byte));
        } else {
            text.push_str(&format!("\\x{byte:02x}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_formats() {
        let error = TraceError::new(
            "trace.lackey",
            Position::Line(17),
            TraceErrorKind::BadLine { excerpt: "I  zz,3".into(), why: "bad hex address".into() },
        );
        assert_eq!(
            error.to_string(),
            r#"trace.lackey: line 17: cannot parse "I  zz,3": bad hex address"#
        );
        let error = TraceError::new(
            "t.tlbt",
            Position::Offset(4096),
            TraceErrorKind::Truncated { why: "8 bytes of a 16-byte record".into() },
        );
        assert_eq!(
            error.to_string(),
            "t.tlbt: byte offset 4096: truncated: 8 bytes of a 16-byte record"
        );
        let error = TraceError::new("x", Position::None, TraceErrorKind::TrailingData);
        assert_eq!(error.to_string(), "x: data after the END record");
    }

    #[test]
    fn escapes_non_printable_bytes() {
        assert_eq!(escape_bytes(b"ab \x00\xff\n"), "ab \\x00\\xff\\x0a");
    }

    #[test]
    fn decompress_failures_are_recognised() {
        let io = io::Error::new(
            io::ErrorKind::UnexpectedEof,
            DecompressFailure { truncated: true, why: "xz: premature end".into() },
        );
        let error = read_failure("a.xz", 99, io);
        assert!(matches!(error.kind(), TraceErrorKind::Truncated { .. }));
        assert_eq!(error.position(), Position::Offset(99));
        let io = io::Error::new(io::ErrorKind::InvalidData, "disk on fire");
        assert!(matches!(read_failure("a", 0, io).kind(), TraceErrorKind::Io(_)));
    }
}
