//! The compact-format reader.

use super::codec::{decode, decode_access, decode_end, kind_of, KIND_END};
use super::{checksum_step, CHECKSUM_INIT, HEADER_SIZE, MAGIC, RECORD_SIZE, VERSION};
use crate::error::{escape_bytes, read_failure, Position, TraceError, TraceErrorKind};
use crate::input::Input;
use crate::source::{defer, EventSource, BATCH_SIZE};
use std::io::Read;
use tlblab_types::TraceEvent;

/// Read size of the underlying stream.
const CHUNK: usize = 64 * 1024;

/// Reads a compact trace, validating every record, the END record's count and checksum, and
/// that nothing follows END.
pub struct CompactReader<R> {
    name: String,
    input: Input<R>,
    header_done: bool,
    records: u64,
    checksum: u64,
    finished: bool,
    deferred: Option<TraceError>,
}

#[inline(always)]
fn le64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.first_chunk::<8>().copied().unwrap_or_default())
}

/// How a run of records ended.
enum Stop {
    /// The batch is full or the buffer holds no further whole record.
    More,
    /// An END record `(w0, w1)`.
    End(u64, u64),
    /// A bad record.
    Bad(String),
}

impl<R: Read> CompactReader<R> {
    /// A reader of the compact trace `reader`, called `name` in errors.
    pub fn new(name: &str, reader: R) -> CompactReader<R> {
        CompactReader {
            name: name.to_owned(),
            input: Input::new(reader, CHUNK),
            header_done: false,
            records: 0,
            checksum: CHECKSUM_INIT,
            finished: false,
            deferred: None,
        }
    }

    /// The number of records (before END) read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    fn error(&self, offset: u64, kind: TraceErrorKind) -> TraceError {
        TraceError::new(&self.name, Position::Offset(offset), kind)
    }

    fn fail(&mut self, out: &[TraceEvent], error: TraceError) -> Result<bool, TraceError> {
        self.finished = true;
        defer(out, error, &mut self.deferred)
    }

    fn read_header(&mut self) -> Result<(), TraceError> {
        if let Err(error) = self.input.fill_to(HEADER_SIZE) {
            return Err(read_failure(&self.name, self.input.received(), error));
        }
        let data = self.input.data();
        let magic = data.get(..8).unwrap_or(data);
        if !MAGIC.starts_with(magic) {
            let found = format!("\"{}\"", escape_bytes(magic));
            return Err(self.error(0, TraceErrorKind::BadMagic { found }));
        }
        let Some(header) = data.first_chunk::<HEADER_SIZE>() else {
            let why = format!("{} bytes of the {HEADER_SIZE}-byte header", data.len());
            return Err(self.error(0, TraceErrorKind::Truncated { why }));
        };
        let version = u16::from_le_bytes([header[8], header[9]]);
        let length = u16::from_le_bytes([header[10], header[11]]);
        let reserved = u32::from_le_bytes([header[12], header[13], header[14], header[15]]);
        if version != VERSION {
            return Err(self.error(8, TraceErrorKind::UnsupportedVersion { version }));
        }
        if usize::from(length) != HEADER_SIZE {
            let why = format!("header length is {length}, expected {HEADER_SIZE}");
            return Err(self.error(10, TraceErrorKind::BadRecord { why }));
        }
        if reserved != 0 {
            let why = format!("reserved header field is {reserved:#x}, expected 0");
            return Err(self.error(12, TraceErrorKind::BadRecord { why }));
        }
        self.input.consume(HEADER_SIZE);
        self.header_done = true;
        Ok(())
    }

    /// Checks an END record at `offset` and that nothing follows it.
    fn finish(&mut self, offset: u64, w0: u64, w1: u64) -> Result<(), TraceError> {
        let count = decode_end(w0).map_err(|why| {
            self.error(offset, TraceErrorKind::BadRecord { why: why.to_string() })
        })?;
        if count != self.records {
            let why = format!(
                "END record: record count is {count}, but {} records precede it",
                self.records
            );
            return Err(self.error(offset, TraceErrorKind::BadRecord { why }));
        }
        if w1 != self.checksum {
            let kind = TraceErrorKind::BadChecksum { stored: w1, computed: self.checksum };
            return Err(self.error(offset, kind));
        }
        self.input.consume(RECORD_SIZE);
        loop {
            if !self.input.data().is_empty() {
                return Err(self.error(self.input.offset(), TraceErrorKind::TrailingData));
            }
            if self.input.eof() {
                return Ok(());
            }
            if let Err(error) = self.input.fill() {
                return Err(read_failure(&self.name, self.input.received(), error));
            }
        }
    }
}

impl<R: Read> EventSource for CompactReader<R> {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        out.clear();
        if self.finished {
            return self.deferred.take().map_or(Ok(false), Err);
        }
        if !self.header_done {
            if let Err(error) = self.read_header() {
                return self.fail(out, error);
            }
        }
        out.reserve(BATCH_SIZE);
        loop {
            let data = self.input.data();
            let whole = (data.len() / RECORD_SIZE).min(BATCH_SIZE.saturating_sub(out.len()));
            let records = data.get(..whole * RECORD_SIZE).unwrap_or_default();
            let mut checksum = self.checksum;
            let mut done = 0;
            let mut stop = Stop::More;
            for record in records.chunks_exact(RECORD_SIZE) {
                let w0 = le64(record);
                let w1 = le64(record.get(8..).unwrap_or_default());
                if kind_of(w0) == KIND_END {
                    stop = Stop::End(w0, w1);
                    break;
                }
                if let Some(event) = decode_access(w0, w1) {
                    out.push(event);
                    checksum = checksum_step(checksum, w0, w1);
                    done += 1;
                    continue;
                }
                match decode(w0, w1) {
                    Ok(event) => out.push(event),
                    Err(why) => {
                        stop = Stop::Bad(why.to_string());
                        break;
                    }
                }
                checksum = checksum_step(checksum, w0, w1);
                done += 1;
            }
            self.checksum = checksum;
            self.records += done as u64;
            self.input.consume(done * RECORD_SIZE);
            let offset = self.input.offset();
            match stop {
                Stop::End(w0, w1) => {
                    self.finished = true;
                    return match self.finish(offset, w0, w1) {
                        Ok(()) => Ok(false),
                        Err(error) => defer(out, error, &mut self.deferred),
                    };
                }
                Stop::Bad(why) => {
                    let error = self.error(offset, TraceErrorKind::BadRecord { why });
                    return self.fail(out, error);
                }
                Stop::More => {}
            }
            if out.len() >= BATCH_SIZE {
                return Ok(true);
            }
            if self.input.eof() {
                let partial = self.input.data().len();
                let kind = if partial == 0 {
                    TraceErrorKind::MissingEnd { records: self.records }
                } else {
                    let why = format!("{partial} bytes of a {RECORD_SIZE}-byte record");
                    TraceErrorKind::Truncated { why }
                };
                let error = self.error(offset, kind);
                return self.fail(out, error);
            }
            if let Err(error) = self.input.fill() {
                let error = read_failure(&self.name, self.input.received(), error);
                return self.fail(out, error);
            }
        }
    }
}
