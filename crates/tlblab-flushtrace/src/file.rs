//! The trace file: `TLBLABFT`, a format version, the [`Header`] as JSON, the records in a
//! compact binary encoding, then an end tag, the [`Trailer`] as JSON and `TLBLABFE`.
//!
//! The layout is documented byte by byte in docs/trace-file.md. In short, after the header
//! every record is a one-byte tag followed by LEB128 varints: the timestamp as a zigzag delta
//! from the previous record's (merged CPUs may step back by a few ns on some trace clocks), the
//! CPU, then the record's own fields (signed ones zigzag-encoded). A `tlb_flush` takes 6–9 bytes.
//!
//! The writer streams (bounded memory) and [`TraceWriter::flush`] makes everything written so
//! far readable, so a recorder killed without warning leaves a file whose records can still be
//! read up to the last flush: [`TraceReader`] reports such a file as truncated, with the offset,
//! and [`TraceReader::allow_truncated`] reads what is there.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use tlblab_types::atomic::AtomicFile;

use thiserror::Error;

use crate::model::{CallFunction, Flush, Header, IpiSend, Other, Record, Switch, Task, Trailer};

/// The first bytes of every trace file.
pub const MAGIC: &[u8; 8] = b"TLBLABFT";
/// The last bytes of a complete trace file.
pub const END_MAGIC: &[u8; 8] = b"TLBLABFE";
/// The format version this code writes and reads.
pub const VERSION: u32 = 1;

/// Record tags (tag 0 is never used, so a run of zeros is recognised as corruption).
mod tag {
    pub const FLUSH: u8 = 1;
    pub const SWITCH: u8 = 2;
    pub const IPI_SEND: u8 = 3;
    pub const CALL_FUNCTION: u8 = 4;
    pub const TASK: u8 = 5;
    pub const OTHER: u8 = 6;
    pub const END: u8 = 0xff;
}

/// Longest `comm` the format holds, in bytes: the kernel's is at most 15 (`TASK_COMM_LEN`), but
/// text imports may carry longer names (perf prints what it was told); a reader takes a longer
/// one for corruption, the writer refuses it and importers cut names to it.
pub const MAX_COMM_BYTES: usize = 4096;
/// Most IPI targets of one record (more than this means corruption, not a big machine).
const MAX_TARGETS: u64 = 1 << 16;
/// Latest timestamp the format holds: 2^63 - 1 ns (292 years of any trace clock), so that the
/// signed delta between any two timestamps fits its 64 bits and a delta that leaves the range
/// (a wrapped clock, corruption) is refused where it is read, with its offset.
pub const MAX_TS_NS: u64 = i64::MAX as u64;
/// Largest header or trailer a reader accepts.
const MAX_JSON: u32 = 64 << 20;

/// A trace file that cannot be written or read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file could not be opened, read or written.
    #[error("{path}: cannot {action} it")]
    Io {
        /// The file.
        path: PathBuf,
        /// What we tried.
        action: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// It does not start with [`MAGIC`].
    #[error("{path}: not a tlblab flush trace (it does not start with {magic:?}); text traces are imported with `tlblab trace import`")]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// The expected magic, for the message.
        magic: &'static str,
    },
    /// It was written in a format version this code does not read.
    #[error("{path}: trace format version {found}; this tlblab reads version {supported}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// [`VERSION`].
        supported: u32,
    },
    /// A byte sequence that no writer produces.
    #[error("{path}: corrupt at byte offset {offset}: {msg}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Offset of the bad data from the start of the file.
        offset: u64,
        /// What is wrong.
        msg: String,
    },
    /// A record the format cannot hold ([`MAX_TS_NS`], [`MAX_COMM_BYTES`], too many IPI
    /// targets): a reader would refuse it, so nothing of it is written.
    #[error("{path}: cannot write record {record}: {msg}")]
    Unwritable {
        /// The file.
        path: PathBuf,
        /// The record's index (0-based).
        record: u64,
        /// What the format cannot hold.
        msg: String,
    },
    /// The file ends before its end marker (a recorder that was killed, a copy that was cut).
    #[error("{path}: truncated at byte offset {offset}, after {records} complete records (no end marker; the recording was killed or the file was cut). `--allow-truncated` reads the complete records")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Where the data stops.
        offset: u64,
        /// Complete records before it.
        records: u64,
    },
}

/// Writes a trace file record by record.
pub struct TraceWriter<W: Write> {
    out: W,
    path: PathBuf,
    last_ts: u64,
    records: u64,
    buf: Vec<u8>,
}

impl TraceWriter<AtomicFile> {
    /// Starts writing `path` (under a temporary name beside it) and writes the header.
    /// [`finish`](Self::finish), then [`AtomicFile::commit`] (or [`commit`](Self::commit), both
    /// at once) puts the file in place; dropped before that, the temporary file is removed.
    pub fn create(path: &Path, header: &Header) -> Result<Self, FileError> {
        let file = AtomicFile::create(path).map_err(|source| FileError::Io {
            path: path.to_path_buf(),
            action: "create",
            source,
        })?;
        TraceWriter::new(file, path, header)
    }

    /// [`finish`](Self::finish)es the file and puts it in place under its name.
    pub fn commit(self, trailer: Trailer) -> Result<(), FileError> {
        let path = self.path.clone();
        self.finish(trailer)?.commit().map_err(|source| FileError::Io {
            path,
            action: "write",
            source,
        })
    }
}

impl TraceWriter<BufWriter<File>> {
    /// Creates (or truncates) `path` and writes the header: a recording, which is readable
    /// under its name while it is written ([`flush`](Self::flush) after each round) and keeps
    /// what was flushed if the process is killed (a truncated file, which readers name as
    /// such). Everything else is written with [`create`](TraceWriter::create), all or nothing.
    pub fn create_streaming(path: &Path, header: &Header) -> Result<Self, FileError> {
        let file = File::create(path).map_err(|source| FileError::Io {
            path: path.to_path_buf(),
            action: "create",
            source,
        })?;
        TraceWriter::new(BufWriter::with_capacity(256 << 10, file), path, header)
    }
}

impl<W: Write> TraceWriter<W> {
    /// Writes the magic, version and header to `out`; `path` names it in errors.
    pub fn new(mut out: W, path: &Path, header: &Header) -> Result<Self, FileError> {
        let json = serde_json::to_vec(header).expect("a header always serializes");
        let mut head = Vec::with_capacity(16 + json.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&json);
        let path = path.to_path_buf();
        out.write_all(&head).map_err(|source| FileError::Io {
            path: path.clone(),
            action: "write",
            source,
        })?;
        Ok(TraceWriter { out, path, last_ts: 0, records: 0, buf: Vec::with_capacity(64) })
    }

    /// Appends one record; refuses one a reader would not read back ([`FileError::Unwritable`]).
    pub fn write(&mut self, record: &Record) -> Result<(), FileError> {
        if let Some(msg) = unwritable(record) {
            return Err(FileError::Unwritable {
                path: self.path.clone(),
                record: self.records,
                msg,
            });
        }
        let buf = &mut self.buf;
        buf.clear();
        let ts = record.ts_ns();
        let delta = ts.wrapping_sub(self.last_ts) as i64;
        self.last_ts = ts;
        let head = |buf: &mut Vec<u8>, tag: u8, cpu: u32| {
            buf.push(tag);
            put_i64(buf, delta);
            put_u64(buf, u64::from(cpu));
        };
        match record {
            Record::Flush(Flush { cpu, pid, reason, pages, .. }) => {
                head(buf, tag::FLUSH, *cpu);
                put_i64(buf, i64::from(*pid));
                put_i64(buf, i64::from(*reason));
                put_i64(buf, *pages);
            }
            Record::Switch(Switch { cpu, prev_pid, prev_state, next_pid, .. }) => {
                head(buf, tag::SWITCH, *cpu);
                put_i64(buf, i64::from(*prev_pid));
                put_i64(buf, *prev_state);
                put_i64(buf, i64::from(*next_pid));
            }
            Record::IpiSend(IpiSend { cpu, pid, targets, callback, .. }) => {
                head(buf, tag::IPI_SEND, *cpu);
                put_i64(buf, i64::from(*pid));
                put_u64(buf, *callback);
                put_u64(buf, targets.len() as u64);
                for t in targets {
                    put_u64(buf, u64::from(*t));
                }
            }
            Record::CallFunction(CallFunction { cpu, pid, vector, entry, single, .. }) => {
                head(buf, tag::CALL_FUNCTION, *cpu);
                put_i64(buf, i64::from(*pid));
                put_i64(buf, i64::from(*vector));
                buf.push(u8::from(*entry) | u8::from(*single) << 1);
            }
            Record::Task(Task { pid, tgid, comm, .. }) => {
                head(buf, tag::TASK, 0);
                put_i64(buf, i64::from(*pid));
                put_i64(buf, i64::from(*tgid));
                put_u64(buf, comm.len() as u64);
                buf.extend_from_slice(comm.as_bytes());
            }
            Record::Other(Other { cpu, pid, event_id, .. }) => {
                head(buf, tag::OTHER, *cpu);
                put_i64(buf, i64::from(*pid));
                put_u64(buf, u64::from(*event_id));
            }
        }
        self.records += 1;
        let path = &self.path;
        self.out.write_all(buf).map_err(|source| FileError::Io {
            path: path.clone(),
            action: "write",
            source,
        })
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Pushes everything written so far to the file (a reader then sees it).
    pub fn flush(&mut self) -> Result<(), FileError> {
        let path = &self.path;
        self.out.flush().map_err(|source| FileError::Io {
            path: path.clone(),
            action: "write",
            source,
        })
    }

    /// Writes the end tag and the trailer (its `records` is set to the count written) and
    /// returns the output.
    pub fn finish(mut self, mut trailer: Trailer) -> Result<W, FileError> {
        trailer.records = self.records;
        let json = serde_json::to_vec(&trailer).expect("a trailer always serializes");
        let mut tail = Vec::with_capacity(16 + json.len());
        tail.push(tag::END);
        tail.extend_from_slice(&(json.len() as u32).to_le_bytes());
        tail.extend_from_slice(&json);
        tail.extend_from_slice(END_MAGIC);
        let path = &self.path;
        let io = |source| FileError::Io { path: path.clone(), action: "write", source };
        self.out.write_all(&tail).map_err(io)?;
        self.out.flush().map_err(io)?;
        Ok(self.out)
    }
}

/// What of `record` the format cannot hold, if anything.
fn unwritable(record: &Record) -> Option<String> {
    let ts = record.ts_ns();
    if ts > MAX_TS_NS {
        return Some(format!("timestamp {ts} ns is past the format's last, {MAX_TS_NS} ns"));
    }
    match record {
        Record::Task(t) if t.comm.len() > MAX_COMM_BYTES => Some(format!(
            "comm of {} bytes is longer than the format's {MAX_COMM_BYTES}",
            t.comm.len()
        )),
        Record::IpiSend(i) if i.targets.len() as u64 > MAX_TARGETS => {
            Some(format!("{} IPI targets, more than the format's {MAX_TARGETS}", i.targets.len()))
        }
        _ => None,
    }
}

fn put_u64(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push(v as u8 | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn put_i64(buf: &mut Vec<u8>, v: i64) {
    put_u64(buf, ((v << 1) ^ (v >> 63)) as u64);
}

/// Why a read stopped short inside a record.
enum Short {
    /// The input ended.
    Eof,
    /// The bytes are impossible.
    Corrupt(String),
    /// The input could not be read.
    Io(io::Error),
}

/// Reads a trace file record by record.
pub struct TraceReader<R: Read> {
    input: R,
    path: PathBuf,
    /// Offset of the next unread byte.
    offset: u64,
    header: Header,
    trailer: Option<Trailer>,
    last_ts: u64,
    records: u64,
    allow_truncated: bool,
    truncated_at: Option<u64>,
    done: bool,
    /// Offset of the last record read.
    record_offset: u64,
}

impl TraceReader<BufReader<File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, FileError> {
        let file = File::open(path).map_err(|source| FileError::Io {
            path: path.to_path_buf(),
            action: "open",
            source,
        })?;
        TraceReader::new(BufReader::with_capacity(256 << 10, file), path)
    }
}

impl<R: Read> TraceReader<R> {
    /// Reads the magic, version and header from `input`; `path` names it in errors.
    pub fn new(input: R, path: &Path) -> Result<Self, FileError> {
        let mut r = TraceReader {
            input,
            path: path.to_path_buf(),
            offset: 0,
            header: crate::model::Header::new(crate::model::Origin::Recorded),
            trailer: None,
            last_ts: 0,
            records: 0,
            allow_truncated: false,
            truncated_at: None,
            done: false,
            record_offset: 0,
        };
        let mut magic = [0u8; 8];
        match r.exact(&mut magic) {
            Ok(()) if &magic == MAGIC => {}
            Ok(()) | Err(Short::Eof) => {
                return Err(FileError::NotATrace { path: r.path, magic: "TLBLABFT" })
            }
            Err(e) => return Err(r.short(e)),
        }
        let version = r.u32_le().map_err(|e| r.short(e))?;
        if version != VERSION {
            return Err(FileError::Version { path: r.path, found: version, supported: VERSION });
        }
        let at = r.offset;
        let json = r.json_block().map_err(|e| r.short(e))?;
        r.header = serde_json::from_slice(&json).map_err(|e| FileError::Corrupt {
            path: r.path.clone(),
            offset: at,
            msg: format!("header: {e}"),
        })?;
        Ok(r)
    }

    /// Reads a truncated file to its last complete record instead of failing; the trailer is
    /// then `None` and [`TraceReader::truncated_at`] says where the data stopped.
    pub fn allow_truncated(mut self, allow: bool) -> Self {
        self.allow_truncated = allow;
        self
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The trailer, once the last record has been read (`None` before, or if truncated).
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The byte offset of the last record [`TraceReader::next_record`] returned.
    pub fn record_offset(&self) -> u64 {
        self.record_offset
    }

    /// Where a truncated file stopped (with [`TraceReader::allow_truncated`]).
    pub fn truncated_at(&self) -> Option<u64> {
        self.truncated_at
    }

    /// The next record; `Ok(None)` after the last one (the trailer is then read).
    pub fn next_record(&mut self) -> Result<Option<Record>, FileError> {
        if self.done {
            return Ok(None);
        }
        let start = self.offset;
        let result = self.decode();
        match result {
            Ok(Some(rec)) => {
                self.records += 1;
                self.record_offset = start;
                Ok(Some(rec))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(Short::Eof) if self.allow_truncated => {
                self.done = true;
                self.truncated_at = Some(start);
                Ok(None)
            }
            Err(Short::Eof) => {
                self.done = true;
                Err(FileError::Truncated {
                    path: self.path.clone(),
                    offset: start,
                    records: self.records,
                })
            }
            Err(Short::Corrupt(msg)) => {
                self.done = true;
                Err(FileError::Corrupt { path: self.path.clone(), offset: start, msg })
            }
            Err(Short::Io(source)) => {
                self.done = true;
                Err(FileError::Io { path: self.path.clone(), action: "read", source })
            }
        }
    }

    fn decode(&mut self) -> Result<Option<Record>, Short> {
        let tag = self.byte()?;
        if tag == tag::END {
            let json = self.json_block()?;
            let trailer: Trailer = serde_json::from_slice(&json)
                .map_err(|e| Short::Corrupt(format!("trailer: {e}")))?;
            let mut end = [0u8; 8];
            self.exact(&mut end)?;
            if &end != END_MAGIC {
                return Err(Short::Corrupt("the end marker is wrong".into()));
            }
            if trailer.records != self.records {
                return Err(Short::Corrupt(format!(
                    "the trailer counts {} records but the file holds {}",
                    trailer.records, self.records
                )));
            }
            self.trailer = Some(trailer);
            return Ok(None);
        }
        if !(tag::FLUSH..=tag::OTHER).contains(&tag) {
            return Err(Short::Corrupt(format!("unknown record tag {tag:#04x}")));
        }
        let delta = self.i64()?;
        let ts_ns =
            self.last_ts.checked_add_signed(delta).filter(|&ts| ts <= MAX_TS_NS).ok_or_else(
                || {
                    Short::Corrupt(format!(
                    "timestamp delta {delta} ns from {} ns leaves the range of timestamps (0 to \
                     {MAX_TS_NS} ns): a wrapped clock or a damaged file",
                    self.last_ts
                ))
                },
            )?;
        self.last_ts = ts_ns;
        let cpu = narrow::<u32>(self.u64()?, "cpu")?;
        let rec = match tag {
            tag::FLUSH => Record::Flush(Flush {
                ts_ns,
                cpu,
                pid: self.i32("pid")?,
                reason: self.i32("reason")?,
                pages: self.i64()?,
            }),
            tag::SWITCH => Record::Switch(Switch {
                ts_ns,
                cpu,
                prev_pid: self.i32("prev_pid")?,
                prev_state: self.i64()?,
                next_pid: self.i32("next_pid")?,
            }),
            tag::IPI_SEND => {
                let pid = self.i32("pid")?;
                let callback = self.u64()?;
                let n = self.u64()?;
                if n > MAX_TARGETS {
                    return Err(Short::Corrupt(format!("{n} IPI targets")));
                }
                let targets = (0..n)
                    .map(|_| self.u64().and_then(|t| narrow::<u32>(t, "target cpu")))
                    .collect::<Result<_, _>>()?;
                Record::IpiSend(IpiSend { ts_ns, cpu, pid, targets, callback })
            }
            tag::CALL_FUNCTION => {
                let pid = self.i32("pid")?;
                let vector = self.i32("vector")?;
                let flags = self.byte()?;
                if flags > 3 {
                    return Err(Short::Corrupt(format!("call-function flags {flags:#x}")));
                }
                Record::CallFunction(CallFunction {
                    ts_ns,
                    cpu,
                    pid,
                    vector,
                    entry: flags & 1 != 0,
                    single: flags & 2 != 0,
                })
            }
            tag::TASK => {
                let pid = self.i32("pid")?;
                let tgid = self.i32("tgid")?;
                let len = self.u64()?;
                if len > MAX_COMM_BYTES as u64 {
                    return Err(Short::Corrupt(format!("comm of {len} bytes")));
                }
                let mut comm = vec![0u8; len as usize];
                self.exact(&mut comm)?;
                let comm = String::from_utf8(comm)
                    .map_err(|_| Short::Corrupt("comm is not UTF-8".into()))?;
                Record::Task(Task { ts_ns, pid, tgid, comm })
            }
            _ => Record::Other(Other {
                ts_ns,
                cpu,
                pid: self.i32("pid")?,
                event_id: narrow::<u16>(self.u64()?, "event id")?,
            }),
        };
        Ok(Some(rec))
    }

    fn short(&self, e: Short) -> FileError {
        match e {
            Short::Eof => FileError::Truncated {
                path: self.path.clone(),
                offset: self.offset,
                records: self.records,
            },
            Short::Corrupt(msg) => {
                FileError::Corrupt { path: self.path.clone(), offset: self.offset, msg }
            }
            Short::Io(source) => FileError::Io { path: self.path.clone(), action: "read", source },
        }
    }

    fn exact(&mut self, buf: &mut [u8]) -> Result<(), Short> {
        let mut got = 0;
        while got < buf.len() {
            match self.input.read(&mut buf[got..]) {
                Ok(0) => return Err(Short::Eof),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Short::Io(e)),
            }
        }
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn byte(&mut self) -> Result<u8, Short> {
        let mut b = [0u8; 1];
        self.exact(&mut b)?;
        Ok(b[0])
    }

    fn u32_le(&mut self) -> Result<u32, Short> {
        let mut b = [0u8; 4];
        self.exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn json_block(&mut self) -> Result<Vec<u8>, Short> {
        let len = self.u32_le()?;
        if len > MAX_JSON {
            return Err(Short::Corrupt(format!("a JSON block of {len} bytes")));
        }
        let mut json = vec![0u8; len as usize];
        self.exact(&mut json)?;
        Ok(json)
    }

    fn u64(&mut self) -> Result<u64, Short> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if shift == 63 && b > 1 {
                    break;
                }
                return Ok(v);
            }
        }
        Err(Short::Corrupt("a varint longer than 64 bits".into()))
    }

    fn i64(&mut self) -> Result<i64, Short> {
        let v = self.u64()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self, what: &str) -> Result<i32, Short> {
        let v = self.i64()?;
        i32::try_from(v).map_err(|_| Short::Corrupt(format!("{what} {v} is out of range")))
    }
}

fn narrow<T: TryFrom<u64>>(v: u64, what: &str) -> Result<T, Short> {
    T::try_from(v).map_err(|_| Short::Corrupt(format!("{what} {v} is out of range")))
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Record, FileError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Origin;
    use proptest::prelude::*;

    fn sample() -> Vec<Record> {
        vec![
            Record::Task(Task { ts_ns: 100, pid: 42, tgid: 40, comm: "mt madv-1".into() }),
            Record::Flush(Flush { ts_ns: 100, cpu: 1, pid: 42, reason: 4, pages: 1 }),
            Record::Flush(Flush { ts_ns: 99, cpu: 0, pid: 0, reason: 1, pages: -1 }),
            Record::Switch(Switch { ts_ns: 200, cpu: 0, prev_pid: 0, prev_state: 0, next_pid: 42 }),
            Record::IpiSend(IpiSend {
                ts_ns: 250,
                cpu: 1,
                pid: 42,
                targets: vec![0, 3, 70],
                callback: 0xffff_ffff_8100_0000,
            }),
            Record::CallFunction(CallFunction {
                ts_ns: 260,
                cpu: 0,
                pid: 7,
                vector: 251,
                entry: true,
                single: true,
            }),
            Record::Other(Other { ts_ns: MAX_TS_NS, cpu: 4095, pid: i32::MIN, event_id: 65535 }),
        ]
    }

    fn trailer() -> Trailer {
        Trailer { duration_ns: Some(5), cpus_seen: vec![0, 1], ..Trailer::default() }
    }

    fn write(records: &[Record]) -> Vec<u8> {
        let mut w =
            TraceWriter::new(Vec::new(), Path::new("t"), &Header::new(Origin::Recorded)).unwrap();
        for r in records {
            w.write(r).unwrap();
        }
        w.finish(trailer()).unwrap()
    }

    fn read_all(bytes: &[u8]) -> Result<(Vec<Record>, Option<Trailer>), FileError> {
        let mut r = TraceReader::new(bytes, Path::new("t"))?;
        let records = r.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok((records, r.trailer().cloned()))
    }

    #[test]
    fn records_and_trailer_roundtrip() {
        let bytes = write(&sample());
        let (records, trailer) = read_all(&bytes).unwrap();
        assert_eq!(records, sample());
        let t = trailer.unwrap();
        assert_eq!(t.records, 7);
        assert_eq!(t.cpus_seen, vec![0, 1]);
    }

    #[test]
    fn a_flush_takes_a_few_bytes() {
        let flush =
            |ts| Record::Flush(Flush { ts_ns: ts, cpu: 1, pid: 12896, reason: 1, pages: 1 });
        let one = write(&[flush(532_678_034_000)]).len();
        let two = write(&[flush(532_678_034_000), flush(532_678_037_000)]).len();
        // tag, delta 3000 ns (2 bytes), cpu, pid (3 bytes), reason, pages.
        assert_eq!(two - one, 9);
    }

    #[test]
    fn every_cut_of_a_file_is_truncated_at_a_record_boundary() {
        let bytes = write(&sample());
        let header_end = {
            let r = TraceReader::new(&bytes[..], Path::new("t")).unwrap();
            r.offset as usize
        };
        for cut in header_end..bytes.len() {
            match read_all(&bytes[..cut]) {
                Err(FileError::Truncated { offset, records, .. }) => {
                    assert!(offset as usize <= cut && records <= 7, "cut {cut}");
                }
                other => panic!("cut at {cut}: {other:?}"),
            }
            let mut r =
                TraceReader::new(&bytes[..cut], Path::new("t")).unwrap().allow_truncated(true);
            let got: Vec<_> = r.by_ref().collect::<Result<_, _>>().unwrap();
            assert_eq!(got[..], sample()[..got.len()], "cut {cut}");
            assert!(r.truncated_at().is_some() && r.trailer().is_none());
        }
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let e = TraceReader::new(&b"pages:1 reason:1"[..], Path::new("x.txt")).err().unwrap();
        assert!(e.to_string().contains("x.txt") && e.to_string().contains("import"), "{e}");
        let mut bytes = write(&sample());
        bytes[8] = 9;
        let e = TraceReader::new(&bytes[..], Path::new("t")).err().unwrap();
        assert!(matches!(e, FileError::Version { found: 9, .. }), "{e}");
        let mut bytes = write(&sample());
        let at = bytes.len() - 8 - trailer_len() - 4 - 1;
        bytes[at] = 0; // the end tag
        let e = read_all(&bytes).unwrap_err();
        assert!(e.to_string().contains("unknown record tag 0x00"), "{e}");
        assert!(e.to_string().contains(&format!("offset {at}")), "{e}");
    }

    /// What a reader would refuse is not written: a timestamp past the range, a comm past the
    /// limit (the limit itself is fine).
    #[test]
    fn the_writer_refuses_what_a_reader_would() {
        let mut w =
            TraceWriter::new(Vec::new(), Path::new("t"), &Header::new(Origin::Recorded)).unwrap();
        let task = |comm: String| Record::Task(Task { ts_ns: 1, pid: 1, tgid: 1, comm });
        w.write(&task("x".repeat(MAX_COMM_BYTES))).unwrap();
        let e = w.write(&task("x".repeat(MAX_COMM_BYTES + 1))).unwrap_err().to_string();
        assert!(e.contains("record 1") && e.contains("comm of 4097 bytes"), "{e}");
        let late =
            Record::Flush(Flush { ts_ns: MAX_TS_NS + 1, cpu: 0, pid: 1, reason: 3, pages: 1 });
        let e = w.write(&late).unwrap_err().to_string();
        assert!(e.contains("timestamp 9223372036854775808 ns"), "{e}");
        assert_eq!(w.records(), 1);
        let (back, _) = read_all(&w.finish(trailer()).unwrap()).unwrap();
        assert_eq!(back, vec![task("x".repeat(MAX_COMM_BYTES))]);
    }

    /// A delta that takes the clock below 0 (or past the range) is corruption at that record.
    #[test]
    fn a_wrapping_timestamp_is_refused_at_its_record() {
        let flush = |ts_ns| Record::Flush(Flush { ts_ns, cpu: 0, pid: 1, reason: 3, pages: 1 });
        let bytes = write(&[flush(5_000), flush(6_000)]);
        let header_end = TraceReader::new(&bytes[..], Path::new("t")).unwrap().offset as usize;
        let second = header_end + write(&[flush(5_000)]).len() - write(&[]).len();
        // The second record's delta (+1000, zigzag 2000: two varint bytes) becomes -6000
        // (zigzag 11999: 0xdf 0x5d).
        assert_eq!(&bytes[second + 1..second + 3], &[0xd0, 0x0f]);
        let mut bad = bytes.clone();
        bad[second + 1..second + 3].copy_from_slice(&[0xdf, 0x5d]);
        let e = read_all(&bad).unwrap_err();
        assert!(matches!(e, FileError::Corrupt { offset, .. } if offset == second as u64), "{e}");
        assert!(e.to_string().contains("delta -6000 ns from 5000 ns"), "{e}");
    }

    /// Runs `f` on a thread of its own; fails if it panics or takes longer than `bound`.
    fn within<T: Send + 'static>(
        bound: std::time::Duration,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        tlblab_types::bounded::within(bound, f).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The trailer's JSON length (the same for 0 and 7 records).
    fn trailer_len() -> usize {
        serde_json::to_vec(&Trailer { records: 7, ..trailer() }).unwrap().len()
    }

    proptest! {
        #[test]
        fn flushes_roundtrip(v in proptest::collection::vec(
            (0..=MAX_TS_NS, 0u32..8192, any::<i32>(), -1i32..8, any::<i64>()), 0..50)) {
            let records: Vec<Record> = v.into_iter().map(|(ts_ns, cpu, pid, reason, pages)| {
                Record::Flush(Flush { ts_ns, cpu, pid, reason, pages })
            }).collect();
            let (back, _) = read_all(&write(&records)).unwrap();
            prop_assert_eq!(back, records);
        }

        /// A trace file with a few bytes flipped, inserted, deleted or cut (timestamps that
        /// wrap included) reads back or fails cleanly, in bounded time.
        #[test]
        fn mutated_files_read_cleanly_and_quickly(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0..4u8), 1..6),
        ) {
            let mut bytes = write(&sample());
            for (at, byte, op) in edits {
                let at = at % (bytes.len() + 1);
                match op {
                    0 if at < bytes.len() => bytes[at] ^= byte | 1,
                    1 => bytes.insert(at, byte),
                    2 if at < bytes.len() => { bytes.remove(at); }
                    _ => bytes.truncate(at),
                }
            }
            let read = within(std::time::Duration::from_secs(2), move || {
                let strict = read_all(&bytes).map(|(r, _)| r.len());
                let lenient = TraceReader::new(&bytes[..], Path::new("t")).map(|r| {
                    r.allow_truncated(true).filter_map(Result::ok).count()
                });
                (strict, lenient)
            });
            if let (Ok(n), Ok(m)) = read {
                prop_assert_eq!(n, m, "a complete file reads the same either way");
            }
        }

        #[test]
        fn garbage_never_panics(tail in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut bytes = write(&[]);
            bytes.truncate(bytes.len() - 8 - trailer_len() - 4 - 1);
            bytes.extend(tail);
            let _ = read_all(&bytes);
        }
    }
}
