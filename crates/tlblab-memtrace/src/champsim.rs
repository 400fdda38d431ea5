//! ChampSim binary traces: 64-byte little-endian `input_instr` records, no header
//! (ChampSim's `inc/trace_instruction.h`).
//!
//! ```text
//! offset  size  field
//!      0     8  ip
//!      8     1  is_branch
//!      9     1  branch_taken
//!     10     2  destination_registers[2]
//!     12     4  source_registers[4]
//!     16    16  destination_memory[2]   (u64 each, 0 = unused)
//!     32    32  source_memory[4]        (u64 each, 0 = unused)
//! ```

use crate::coalesce::{push_access, Carry};
use crate::error::{read_failure, Position, TraceError, TraceErrorKind};
use crate::input::Input;
use crate::source::{defer, EventSource, BATCH_SIZE};
use crate::ReadOptions;
use std::io::Read;
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TraceEvent, VirtAddr};

/// Size of one `input_instr` record.
pub const RECORD_SIZE: usize = 64;
/// Read size of the underlying stream.
const CHUNK: usize = 64 * 1024;
/// Most events one record produces: a fetch, four loads and two stores.
const MAX_PER_RECORD: usize = 7;

/// Reads a ChampSim trace: per record, a fetch of `ip`, a load of each non-zero
/// `source_memory` address, then a store of each non-zero `destination_memory` address. Every
/// access gets the CPU, PCID and page size of the [`ReadOptions`] and is non-global. With
/// [`ReadOptions::coalesce`], runs of identical accesses are merged as
/// [`Coalesce`](crate::Coalesce) would (but faster, while decoding).
pub struct ChampSimReader<R> {
    name: String,
    input: Input<R>,
    cpu: CpuId,
    pcid: Pcid,
    page_size: PageSize,
    merge: bool,
    carry: Carry,
    finished: bool,
    deferred: Option<TraceError>,
}

impl<R: Read> ChampSimReader<R> {
    /// A reader of the ChampSim trace `reader`, called `name` in errors.
    pub fn new(name: &str, reader: R, options: &ReadOptions) -> ChampSimReader<R> {
        ChampSimReader {
            name: name.to_owned(),
            input: Input::new(reader, CHUNK),
            cpu: options.cpu,
            pcid: options.pcid,
            page_size: options.page_size,
            merge: options.coalesce,
            carry: Carry::default(),
            finished: false,
            deferred: None,
        }
    }

    fn fail(&mut self, out: &[TraceEvent], error: TraceError) -> Result<bool, TraceError> {
        self.finished = true;
        defer(out, error, &mut self.deferred)
    }

    fn error(&self, offset: u64, kind: TraceErrorKind) -> TraceError {
        TraceError::new(&self.name, Position::Offset(offset), kind)
    }
}

#[inline]
fn word(record: &[u8], at: usize) -> u64 {
    let bytes = record.get(at..at + 8).and_then(|bytes| bytes.first_chunk::<8>());
    u64::from_le_bytes(bytes.copied().unwrap_or_default())
}

impl<R: Read> EventSource for ChampSimReader<R> {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        out.clear();
        if self.finished {
            return self.deferred.take().map_or(Ok(false), Err);
        }
        self.carry.restore(out);
        loop {
            let data = self.input.data();
            let mut used = 0;
            let mut failure = None;
            for record in data.chunks_exact(RECORD_SIZE) {
                if out.len() + MAX_PER_RECORD > BATCH_SIZE {
                    break;
                }
                let is_branch = record.get(8).copied().unwrap_or_default();
                let branch_taken = record.get(9).copied().unwrap_or_default();
                if is_branch > 1 || branch_taken > 1 {
                    let (field, value) = if is_branch > 1 {
                        ("is_branch", is_branch)
                    } else {
                        ("branch_taken", branch_taken)
                    };
                    let why = format!(
                        "{field} byte is {value:#04x}, expected 0 or 1 (not a ChampSim input_instr trace?)"
                    );
                    failure = Some((used, why));
                    break;
                }
                let mut push = |addr: u64, kind| {
                    let page = Page::containing(VirtAddr(addr), self.page_size);
                    let access = Access::new(self.cpu, self.pcid, page, kind);
                    push_access(out, access, self.merge);
                };
                push(word(record, 0), AccessKind::Fetch);
                for at in [32, 40, 48, 56] {
                    let addr = word(record, at);
                    if addr != 0 {
                        push(addr, AccessKind::Load);
                    }
                }
                for at in [16, 24] {
                    let addr = word(record, at);
                    if addr != 0 {
                        push(addr, AccessKind::Store);
                    }
                }
                used += RECORD_SIZE;
            }
            let offset = self.input.offset();
            self.input.consume(used);
            if let Some((at, why)) = failure {
                let error = self.error(offset + at as u64, TraceErrorKind::BadRecord { why });
                return self.fail(out, error);
            }
            if out.len() + MAX_PER_RECORD > BATCH_SIZE {
                self.carry.hold(out, self.merge);
                return Ok(true);
            }
            if self.input.eof() {
                let partial = self.input.data().len();
                self.finished = true;
                if partial == 0 {
                    return Ok(false);
                }
                let why = format!("{partial} bytes of a {RECORD_SIZE}-byte record");
                let error = self.error(self.input.offset(), TraceErrorKind::Truncated { why });
                return self.fail(out, error);
            }
            if let Err(error) = self.input.fill() {
                let error = read_failure(&self.name, self.input.received(), error);
                return self.fail(out, error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tlblab_types::Vpn;

    /// A record with these fields.
    pub(crate) fn record(ip: u64, branch: [u8; 2], dst: [u64; 2], src: [u64; 4]) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(RECORD_SIZE);
        bytes.extend_from_slice(&ip.to_le_bytes());
        bytes.extend_from_slice(&branch);
        bytes.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
        for addr in dst.iter().chain(&src) {
            bytes.extend_from_slice(&addr.to_le_bytes());
        }
        bytes
    }

    fn access(kind: AccessKind, vpn: u64) -> TraceEvent {
        let page = Page { vpn: Vpn(vpn), size: PageSize::Size4K };
        TraceEvent::Access { access: Access::new(CpuId(0), Pcid::default(), page, kind), repeat: 1 }
    }

    fn read(bytes: &[u8]) -> Result<Vec<TraceEvent>, TraceError> {
        let options = ReadOptions { coalesce: false, ..ReadOptions::default() };
        ChampSimReader::new("x.champsim", bytes, &options).events().collect()
    }

    #[test]
    fn two_records() {
        let mut bytes = record(0x40_1000, [0, 0], [0, 0x7000_0010], [0x5000, 0, 0x6000_0008, 0]);
        bytes.extend(record(0x40_1004, [1, 1], [0x8000, 0x9000], [0, 0, 0, 0]));
        assert_eq!(bytes.len(), 128);
        assert_eq!(
            read(&bytes).unwrap_or_default(),
            vec![
                access(AccessKind::Fetch, 0x401),
                access(AccessKind::Load, 0x5),
                access(AccessKind::Load, 0x60000),
                access(AccessKind::Store, 0x70000),
                access(AccessKind::Fetch, 0x401),
                access(AccessKind::Store, 0x8),
                access(AccessKind::Store, 0x9),
            ]
        );
    }

    #[test]
    fn empty_is_valid() {
        assert_eq!(read(&[]).ok(), Some(vec![]));
    }

    #[test]
    fn implausible_branch_bytes() {
        let mut bytes = record(1, [0, 0], [0; 2], [0; 4]);
        bytes.extend(record(2, [0, 1], [0; 2], [0; 4]));
        bytes.extend(record(3, [b'0', 0], [0; 2], [0; 4]));
        let error = read(&bytes).err().map(|error| error.to_string());
        assert_eq!(
            error.as_deref(),
            Some("x.champsim: byte offset 128: is_branch byte is 0x30, expected 0 or 1 (not a ChampSim input_instr trace?)")
        );
        let bytes = record(3, [1, 2], [0; 2], [0; 4]);
        assert!(read(&bytes)
            .is_err_and(|error| error.to_string().contains("branch_taken byte is 0x02")));
    }

    #[test]
    fn partial_record_is_truncated() {
        let mut bytes = record(1, [0, 0], [0; 2], [0; 4]);
        bytes.extend_from_slice(&[0; 10]);
        let error = read(&bytes).err().map(|error| error.to_string());
        assert_eq!(
            error.as_deref(),
            Some("x.champsim: byte offset 64: truncated: 10 bytes of a 64-byte record")
        );
    }

    #[test]
    fn many_records_span_batches() {
        let bytes =
            record(0x1000, [0, 0], [0x2000, 0x3000], [0x4000, 0x5000, 0x6000, 0x7000]).repeat(5000);
        assert_eq!(read(&bytes).map(|events| events.len()).ok(), Some(35_000));
    }

    #[test]
    fn coalescing_merges_repeated_accesses() {
        // Each record: fetch of one page, load of the same page twice: F, L(2) per record, and
        // consecutive records alternate fetch and load, so nothing merges across records.
        let bytes = record(0x1000, [0, 0], [0, 0], [0x1008, 0x1010, 0, 0]).repeat(3000);
        let events: Vec<TraceEvent> = ChampSimReader::new("t", &bytes[..], &ReadOptions::default())
            .events()
            .collect::<Result<_, _>>()
            .unwrap_or_default();
        assert_eq!(events.len(), 6000);
        let load = TraceEvent::Access {
            access: Access::new(
                CpuId(0),
                Pcid::default(),
                Page { vpn: Vpn(1), size: PageSize::Size4K },
                AccessKind::Load,
            ),
            repeat: 2,
        };
        assert!(events.iter().skip(1).step_by(2).all(|event| *event == load));
        // Records with only a fetch of one page merge into one event, across batches.
        let bytes = record(0x1000, [0, 0], [0, 0], [0; 4]).repeat(10_000);
        let events: Vec<TraceEvent> = ChampSimReader::new("t", &bytes[..], &ReadOptions::default())
            .events()
            .collect::<Result<_, _>>()
            .unwrap_or_default();
        assert_eq!(events.iter().map(TraceEvent::accesses).collect::<Vec<_>>(), vec![10_000]);
    }
}
