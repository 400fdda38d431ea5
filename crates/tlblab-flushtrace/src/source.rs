//! Any trace a user has, read the same way: a tlblab trace file, or ftrace / `perf script`
//! text imported on the fly (so `tlblab trace report` and `tlblab sim replay` take either).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::file::{FileError, TraceReader, MAGIC};
use crate::import::{ImportError, TextFormat, TextImporter};
use crate::model::{End, Header, Record, Trailer};

/// A trace that could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A tlblab trace file is damaged or unreadable.
    #[error(transparent)]
    File(#[from] FileError),
    /// A text trace has a line that cannot be read.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// A text trace held no event at all.
    #[error("{}: no tlb_flush, sched_switch or IPI events in it (is it ftrace or perf script text?)", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// Where a record is in its file: a byte offset in a trace file, a line of text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// The offset of the record's first byte.
    ByteOffset(u64),
    /// The line (1-based) the record was read from.
    Line(u64),
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::ByteOffset(at) => write!(f, "byte offset {at}"),
            Position::Line(n) => write!(f, "line {n}"),
        }
    }
}

enum Inner {
    Binary(Box<TraceReader<BufReader<File>>>),
    Text {
        importer: Box<TextImporter<BufReader<File>>>,
        pending: Option<Record>,
        done: bool,
        /// Records handed out (the trailer a text lacks counts them).
        records: u64,
    },
}

/// Records from a trace file of any kind, with its header and, at the end, its trailer.
pub struct TraceSource {
    inner: Inner,
    header: Header,
    trailer: Option<Trailer>,
    path: PathBuf,
}

impl TraceSource {
    /// Opens `path`: a tlblab trace file (by its magic), else ftrace or perf text (`format`
    /// forces which; otherwise detected from the first event line). `allow_truncated` reads a
    /// truncated trace file up to its last complete record.
    pub fn open(
        path: &Path,
        format: Option<TextFormat>,
        allow_truncated: bool,
    ) -> Result<TraceSource, SourceError> {
        let io = |action, source| FileError::Io { path: path.to_path_buf(), action, source };
        let mut file = File::open(path).map_err(|e| io("open", e))?;
        let mut magic = [0u8; 8];
        let n = read_up_to(&mut file, &mut magic).map_err(|e| io("read", e))?;
        let file = File::open(path).map_err(|e| io("open", e))?;
        if n == magic.len() && &magic == MAGIC {
            let reader = TraceReader::new(BufReader::with_capacity(256 << 10, file), path)?
                .allow_truncated(allow_truncated);
            let header = reader.header().clone();
            return Ok(TraceSource {
                inner: Inner::Binary(Box::new(reader)),
                header,
                trailer: None,
                path: path.to_path_buf(),
            });
        }
        let mut importer =
            Box::new(TextImporter::new(BufReader::with_capacity(256 << 10, file), path, format));
        // The first record decides the format, which the header names.
        let pending = importer.next().transpose()?;
        let Some(format) = importer.format() else {
            return Err(SourceError::Empty { path: path.to_path_buf() });
        };
        let mut header = Header::new(format.origin());
        header.source_path = Some(path.display().to_string());
        Ok(TraceSource {
            inner: Inner::Text { importer, pending, done: false, records: 0 },
            header,
            trailer: None,
            path: path.to_path_buf(),
        })
    }

    /// The header (for text: what the import knows at the start).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where a truncated trace file stopped (with `allow_truncated`).
    pub fn truncated_at(&self) -> Option<u64> {
        match &self.inner {
            Inner::Binary(r) => r.truncated_at(),
            Inner::Text { .. } => None,
        }
    }

    /// Where the last record [`TraceSource::next_record`] returned is in the file (a text
    /// event line gives its thread's `Task` record and its event: both are on that line).
    pub fn position(&self) -> Position {
        match &self.inner {
            Inner::Binary(r) => Position::ByteOffset(r.record_offset()),
            Inner::Text { importer, .. } => Position::Line(importer.lines_read()),
        }
    }

    /// The trailer, after the last record: the file's, or for text one made from what the
    /// import learnt (labels, CPUs, lost events); `None` for a truncated file.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// The trailer to summarise or replay with: the file's, or for a truncated file one that
    /// says so (its end `Failed`, with the offset).
    pub fn trailer_or_truncation(&self) -> Trailer {
        match (&self.trailer, self.truncated_at()) {
            (Some(t), _) => t.clone(),
            (None, at) => Trailer {
                end: End::Failed {
                    error: format!(
                        "the file is truncated at byte offset {} (no trailer: losses, duration and the command's status are unknown)",
                        at.unwrap_or(0)
                    ),
                },
                ..Trailer::default()
            },
        }
    }

    /// The next record; `Ok(None)` at the end.
    pub fn next_record(&mut self) -> Result<Option<Record>, SourceError> {
        match &mut self.inner {
            Inner::Binary(r) => {
                let rec = r.next_record()?;
                if rec.is_none() {
                    self.trailer = r.trailer().cloned();
                }
                Ok(rec)
            }
            Inner::Text { importer, pending, done, records } => {
                if let Some(rec) = pending.take() {
                    *records += 1;
                    return Ok(Some(rec));
                }
                if *done {
                    return Ok(None);
                }
                match importer.next().transpose()? {
                    Some(rec) => {
                        *records += 1;
                        Ok(Some(rec))
                    }
                    None => {
                        *done = true;
                        let mut trailer =
                            Trailer { end: End::Complete, records: *records, ..Trailer::default() };
                        importer.fill_trailer(&mut trailer);
                        self.trailer = Some(trailer);
                        Ok(None)
                    }
                }
            }
        }
    }

    /// For text: how the input was read (lines, skipped kinds); `None` for a trace file.
    pub fn importer(&self) -> Option<&TextImporter<BufReader<File>>> {
        match &self.inner {
            Inner::Text { importer, .. } => Some(importer),
            Inner::Binary(_) => None,
        }
    }
}

impl Iterator for TraceSource {
    type Item = Result<Record, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
