//! The compact-format writer.

use super::codec::{encode, end_record};
use super::{checksum_step, header, CHECKSUM_INIT, RECORD_SIZE};
use crate::error::{Position, TraceError, TraceErrorKind};
use std::io::Write;
use tlblab_types::TraceEvent;

/// Bytes buffered before a write to the underlying writer.
const BUFFER: usize = 64 * 1024;

/// Writes a compact trace: the header at creation, one record per [`write`](Self::write), and
/// the END record at [`finish`](Self::finish). Events are written as given (no coalescing).
///
/// A writer dropped without `finish` leaves a trace without END, which readers reject as
/// incomplete.
pub struct CompactWriter<W: Write> {
    name: String,
    inner: W,
    buffer: Vec<u8>,
    records: u64,
    checksum: u64,
    /// Bytes handed to `inner` so far.
    written: u64,
}

impl<W: Write> CompactWriter<W> {
    /// A writer to `inner`, called `compact output` in errors. Writes the header.
    pub fn new(inner: W) -> Result<CompactWriter<W>, TraceError> {
        CompactWriter::with_name("compact output", inner)
    }

    /// A writer to `inner`, called `name` in errors. Writes the header.
    pub fn with_name(name: &str, inner: W) -> Result<CompactWriter<W>, TraceError> {
        let mut buffer = Vec::with_capacity(BUFFER + RECORD_SIZE);
        buffer.extend_from_slice(&header());
        Ok(CompactWriter {
            name: name.to_owned(),
            inner,
            buffer,
            records: 0,
            checksum: CHECKSUM_INIT,
            written: 0,
        })
    }

    /// The number of records written so far (END not included).
    pub fn records(&self) -> u64 {
        self.records
    }

    fn offset(&self) -> u64 {
        self.written + self.buffer.len() as u64
    }

    /// Appends one event. Fails with [`TraceErrorKind::InvalidEvent`] (writing nothing) for an
    /// event the format cannot represent: an access with `repeat` 0 or a non-canonical page, an
    /// INVPCID whose type ignores a non-zero PCID or VPN, an INVLPGB range of 0 strides, with a
    /// 1 GiB stride or a start not aligned to its stride.
    pub fn write(&mut self, event: &TraceEvent) -> Result<(), TraceError> {
        let (w0, w1) = encode(event).map_err(|why| {
            TraceError::new(
                &self.name,
                Position::Offset(self.offset()),
                TraceErrorKind::InvalidEvent { why },
            )
        })?;
        self.push(w0, w1)?;
        self.checksum = checksum_step(self.checksum, w0, w1);
        self.records += 1;
        Ok(())
    }

    fn push(&mut self, w0: u64, w1: u64) -> Result<(), TraceError> {
        self.buffer.extend_from_slice(&w0.to_le_bytes());
        self.buffer.extend_from_slice(&w1.to_le_bytes());
        if self.buffer.len() >= BUFFER {
            self.flush_buffer()?;
        }
        Ok(())
    }

    fn flush_buffer(&mut self) -> Result<(), TraceError> {
        self.inner.write_all(&self.buffer).map_err(|error| {
            TraceError::new(&self.name, Position::Offset(self.written), TraceErrorKind::Io(error))
        })?;
        self.written += self.buffer.len() as u64;
        self.buffer.clear();
        Ok(())
    }

    /// Writes the END record, flushes, and returns the underlying writer (for example to
    /// `finish()` a compressor).
    pub fn finish(mut self) -> Result<W, TraceError> {
        let (w0, w1) = end_record(self.records, self.checksum).ok_or_else(|| {
            let why = "more than 2^52 records".to_owned();
            TraceError::new(
                &self.name,
                Position::Offset(self.offset()),
                TraceErrorKind::InvalidEvent { why },
            )
        })?;
        self.push(w0, w1)?;
        self.flush_buffer()?;
        self.inner.flush().map_err(|error| {
            TraceError::new(&self.name, Position::Offset(self.written), TraceErrorKind::Io(error))
        })?;
        Ok(self.inner)
    }
}
