//! Decoding of the pages that `per_cpu/cpuN/trace_pipe_raw` returns.
//!
//! Layout, as in the kernel's `kernel/trace/ring_buffer.c` and `include/linux/ring_buffer.h`
//! (checked against v6.x; described here in our own words):
//!
//! * A page (sub-buffer) starts with a `u64` timestamp and a commit word (`local_t`, its size
//!   and offset given by `events/header_page`), then the data area. The low bits of the commit
//!   word are the number of data bytes. When the reader was overrun, `ring_buffer_read_page()`
//!   sets bit 31 (`RB_MISSED_EVENTS`); if the count of lost events fitted after the data it
//!   stores it there as an `unsigned long` and also sets bit 30 (`RB_MISSED_STORED`).
//!   NOTE: the kernel adds `RB_MISSED_EVENTS`, an `int` constant `1 << 31`, to a 64-bit
//!   `local_t`, so it arrives sign-extended: bits 31..=63 are all set (seen in this crate's
//!   fixtures). Bits 32.. must therefore be copies of bit 31.
//! * Each event starts with a 32-bit little-endian word: bits 0–4 `type_len`, bits 5–31
//!   `time_delta` (ns since the previous event, added to the running timestamp).
//!   - `type_len` 1..=28: a data record of `type_len * 4` bytes follows.
//!   - `type_len` 0: the next u32 is a length that counts itself; the record follows it.
//!   - 29, padding: with `time_delta` 0 the rest of the page is unused; otherwise the next u32
//!     is the length of a discarded event to skip. Padding does not move the clock.
//!   - 30, time extend: the next u32 holds bits 27.. of a delta whose low 27 bits are
//!     `time_delta`; 8 bytes in all.
//!   - 31, absolute time stamp: same encoding, but it replaces the running timestamp. It has
//!     only 59 bits; the 5 top bits come from the previous timestamp (carrying if it wrapped),
//!     as the kernel's `rb_fix_abs_ts()` does.

use std::ops::Range;

use crate::format::HeaderPage;

/// Bit of the commit word: events were lost before this page.
pub const RB_MISSED_EVENTS: u64 = 1 << 31;
/// Bit of the commit word: the count of lost events is stored after the data.
pub const RB_MISSED_STORED: u64 = 1 << 30;
/// Largest `type_len` of a data record whose length is in the header.
pub const TYPE_LEN_DATA_MAX: u32 = 28;
/// `type_len` of padding.
pub const TYPE_PADDING: u32 = 29;
/// `type_len` of a time extend.
pub const TYPE_TIME_EXTEND: u32 = 30;
/// `type_len` of an absolute time stamp.
pub const TYPE_TIME_STAMP: u32 = 31;
/// Width of `time_delta`.
pub const TS_SHIFT: u32 = 27;
const TS_MSB: u64 = 0xf8 << 56;

/// Where the parts of a page are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Bytes per page (sub-buffer): a read of `trace_pipe_raw` must ask for exactly this.
    pub page_size: usize,
    /// Offset of the commit word.
    pub commit_offset: usize,
    /// Size of the commit word (4 or 8); also the size of the stored missed-events count.
    pub commit_size: usize,
    /// Offset of the first event.
    pub data_offset: usize,
}

impl PageLayout {
    /// The layout of a 64-bit kernel with 4 KiB sub-buffers.
    pub const X86_64: PageLayout =
        PageLayout { page_size: 4096, commit_offset: 8, commit_size: 8, data_offset: 16 };

    /// The layout described by a parsed `events/header_page`.
    pub fn from_header(h: &HeaderPage) -> PageLayout {
        PageLayout {
            page_size: h.data.0 + h.data.1,
            commit_offset: h.commit.0,
            commit_size: h.commit.1,
            data_offset: h.data.0,
        }
    }
}

/// What a page says about events lost before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// Nothing was lost.
    None,
    /// Events were lost but the count did not fit in the page.
    Unknown,
    /// This many events were lost.
    Count(u64),
}

/// The header of one page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Timestamp the first event's delta is relative to.
    pub timestamp: u64,
    /// Number of data bytes (commit without its flag bits).
    pub data_len: usize,
    /// Lost events reported by this page.
    pub missed: Missed,
}

/// A decoding error inside one page: byte offset from the page start, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageError {
    /// Offset in the page.
    pub offset: usize,
    /// What is wrong.
    pub msg: String,
}

fn page_err<T>(offset: usize, msg: impl Into<String>) -> Result<T, PageError> {
    Err(PageError { offset, msg: msg.into() })
}

fn u32_at(page: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(page.get(off..off.checked_add(4)?)?.try_into().ok()?))
}

fn uint_at(page: &[u8], off: usize, size: usize) -> Option<u64> {
    let b = page.get(off..off.checked_add(size)?)?;
    match size {
        4 => Some(u64::from(u32::from_le_bytes(b.try_into().ok()?))),
        8 => Some(u64::from_le_bytes(b.try_into().ok()?)),
        _ => None,
    }
}

/// Reads and checks the header of `page`.
pub fn parse_page_header(page: &[u8], layout: &PageLayout) -> Result<PageHeader, PageError> {
    if page.len() < layout.data_offset {
        return page_err(
            0,
            format!("truncated page: {} bytes, header needs {}", page.len(), layout.data_offset),
        );
    }
    let Some(timestamp) = uint_at(page, 0, 8) else { return page_err(0, "no timestamp") };
    let Some(commit) = uint_at(page, layout.commit_offset, layout.commit_size) else {
        return page_err(layout.commit_offset, "bad commit word size");
    };
    let high = commit >> 32;
    if high != 0 && !(high == u64::from(u32::MAX) && commit & RB_MISSED_EVENTS != 0) {
        return page_err(layout.commit_offset, format!("corrupt commit word {commit:#x}"));
    }
    let data_len = (commit & (RB_MISSED_STORED - 1)) as usize;
    let room = page.len() - layout.data_offset;
    if data_len > room {
        return page_err(
            layout.commit_offset,
            format!("commit {data_len} exceeds the {room} data bytes of the page"),
        );
    }
    let missed = if commit & RB_MISSED_STORED != 0 {
        match uint_at(page, layout.data_offset + data_len, layout.commit_size) {
            Some(n) => Missed::Count(n),
            None => {
                return page_err(
                    layout.data_offset + data_len,
                    "missed-events count past the page end",
                )
            }
        }
    } else if commit & RB_MISSED_EVENTS != 0 {
        Missed::Unknown
    } else {
        Missed::None
    };
    Ok(PageHeader { timestamp, data_len, missed })
}

/// One data record of a page: its timestamp and where its bytes are in the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Timestamp in trace-clock nanoseconds.
    pub ts: u64,
    /// Byte range of the record (starting with `common_type`) within the page.
    pub data: Range<usize>,
}

/// Walks the events of one page, keeping the running timestamp.
#[derive(Debug, Clone)]
pub struct PageCursor {
    pos: usize,
    end: usize,
    ts: u64,
}

impl PageCursor {
    /// A cursor at the first event of a page whose header is `header`.
    pub fn new(header: &PageHeader, layout: &PageLayout) -> PageCursor {
        PageCursor {
            pos: layout.data_offset,
            end: layout.data_offset + header.data_len,
            ts: header.timestamp,
        }
    }

    /// The next data record, `None` at the end of the page, an error on a corrupt event.
    /// After an error the cursor is at the end (the rest of the page cannot be trusted).
    pub fn next_record(&mut self, page: &[u8]) -> Result<Option<Record>, PageError> {
        let r = self.step(page);
        if r.is_err() {
            self.pos = self.end;
        }
        r
    }

    fn step(&mut self, page: &[u8]) -> Result<Option<Record>, PageError> {
        loop {
            let at = self.pos;
            if at >= self.end {
                return Ok(None);
            }
            let Some(word) = u32_at(page, at).filter(|_| at + 4 <= self.end) else {
                return page_err(at, "truncated event header");
            };
            let (type_len, delta) = (word & 0x1f, u64::from(word >> 5));
            // array[0], the u32 after the header, when the event type has one.
            let array0 = || u32_at(page, at + 4).filter(|_| at + 8 <= self.end);
            match type_len {
                TYPE_PADDING if delta == 0 => {
                    self.pos = self.end;
                    return Ok(None);
                }
                TYPE_PADDING => {
                    let Some(len) = array0() else { return page_err(at, "truncated padding") };
                    self.pos = self.checked_end(at, 4 + len as usize, "padding")?;
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let Some(hi) = array0() else { return page_err(at, "truncated time stamp") };
                    let value = (u64::from(hi) << TS_SHIFT) | delta;
                    self.ts = if type_len == TYPE_TIME_EXTEND {
                        self.ts.wrapping_add(value)
                    } else {
                        fix_abs_ts(value, self.ts)
                    };
                    self.pos = at + 8;
                }
                0 => {
                    let Some(len) = array0() else { return page_err(at, "truncated long event") };
                    let len = len as usize; // counts its own 4 bytes
                    if len < 4 {
                        return page_err(at, format!("long event length {len} < 4"));
                    }
                    self.pos = self.checked_end(at, 4 + len, "long event")?;
                    self.ts = self.ts.wrapping_add(delta);
                    return Ok(Some(Record { ts: self.ts, data: at + 8..self.pos }));
                }
                n => {
                    debug_assert!(n <= TYPE_LEN_DATA_MAX);
                    self.pos = self.checked_end(at, 4 + 4 * n as usize, "event")?;
                    self.ts = self.ts.wrapping_add(delta);
                    return Ok(Some(Record { ts: self.ts, data: at + 4..self.pos }));
                }
            }
        }
    }

    fn checked_end(&self, at: usize, len: usize, what: &str) -> Result<usize, PageError> {
        match at.checked_add(len) {
            Some(end) if end <= self.end => Ok(end),
            _ => page_err(at, format!("{what} of {len} bytes runs past the data end {}", self.end)),
        }
    }
}

/// Restores the 5 top bits that an absolute time stamp event cannot hold, from the previous
/// timestamp, carrying into them if the low 59 bits wrapped.
pub fn fix_abs_ts(abs: u64, prev: u64) -> u64 {
    if prev & TS_MSB == 0 {
        return abs;
    }
    let v = abs | (prev & TS_MSB);
    if v < prev {
        v.wrapping_add(1 << 59)
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abs_ts_keeps_top_bits_and_carries() {
        assert_eq!(fix_abs_ts(5, 7), 5, "no top bits in use");
        let prev = (1u64 << 60) | 100;
        assert_eq!(fix_abs_ts(200, prev), (1 << 60) | 200);
        assert_eq!(fix_abs_ts(50, prev), (1 << 60) + (1 << 59) + 50, "low bits wrapped");
    }

    #[test]
    fn header_flags_and_stored_count() {
        let l = PageLayout { page_size: 64, ..PageLayout::X86_64 };
        let mut p = vec![0u8; 64];
        p[0..8].copy_from_slice(&1000u64.to_le_bytes());
        // As the kernel writes it: RB_MISSED_EVENTS sign-extended into the upper half.
        let flags = RB_MISSED_STORED | RB_MISSED_EVENTS | (u64::from(u32::MAX) << 32);
        p[8..16].copy_from_slice(&(8 | flags).to_le_bytes());
        p[24..32].copy_from_slice(&77u64.to_le_bytes());
        let h = parse_page_header(&p, &l).unwrap();
        assert_eq!(h, PageHeader { timestamp: 1000, data_len: 8, missed: Missed::Count(77) });
        p[8..16].copy_from_slice(&(8 | RB_MISSED_EVENTS).to_le_bytes());
        assert_eq!(parse_page_header(&p, &l).unwrap().missed, Missed::Unknown);
        p[8..16].copy_from_slice(&(8u64 | 1 << 40).to_le_bytes());
        assert!(parse_page_header(&p, &l).is_err(), "high bits without bit 31");
        p[8..16].copy_from_slice(&49u64.to_le_bytes());
        assert_eq!(parse_page_header(&p, &l).unwrap_err().offset, 8, "commit past the page");
        assert!(parse_page_header(&p[..10], &l).is_err());
    }
}
