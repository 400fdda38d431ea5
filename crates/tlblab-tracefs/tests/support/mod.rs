//! Helpers shared by the integration tests: fixture loading, an independent parser of the
//! ftrace text output, and a builder of hand-made ring-buffer pages.
#![allow(dead_code)]

pub mod madvise;

use std::path::{Path, PathBuf};

use tlblab_tracefs::format::{parse_event_format, parse_header_page};
use tlblab_tracefs::{decode_page, CpuLoss, PageLayout, RawEvent, Schema};

pub fn fixture_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

/// The layout and schema (tlb_flush + sched_switch) of a fixture directory.
pub fn load(dir: &Path) -> (PageLayout, Schema) {
    let header = parse_header_page(&read(dir, "header_page"), &dir.join("header_page")).unwrap();
    let formats = ["tlb_flush.format", "sched_switch.format"]
        .map(|f| parse_event_format(&read(dir, f), &dir.join(f)).unwrap());
    (PageLayout::from_header(&header), Schema::new(formats).unwrap())
}

/// An owned copy of a decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    pub cpu: u32,
    pub ts_ns: u64,
    pub event_id: u16,
    pub pid: i32,
    pub payload: Vec<u8>,
}

impl From<&RawEvent<'_>> for Owned {
    fn from(e: &RawEvent<'_>) -> Owned {
        Owned {
            cpu: e.cpu,
            ts_ns: e.ts_ns,
            event_id: e.event_id,
            pid: e.pid,
            payload: e.payload.to_vec(),
        }
    }
}

impl Owned {
    /// The event borrowed back, for a decoder.
    pub fn raw(&self) -> RawEvent<'_> {
        RawEvent {
            cpu: self.cpu,
            ts_ns: self.ts_ns,
            event_id: self.event_id,
            pid: self.pid,
            payload: &self.payload,
        }
    }
}

/// Decodes every page of a saved `cpuN.raw`.
pub fn decode_file(
    dir: &Path,
    cpu: u32,
    layout: &PageLayout,
    schema: &Schema,
) -> (Vec<Owned>, CpuLoss) {
    let bytes = std::fs::read(dir.join(format!("cpu{cpu}.raw"))).unwrap();
    let mut loss = CpuLoss { cpu, ..CpuLoss::default() };
    let mut out = Vec::new();
    for (i, page) in bytes.chunks(layout.page_size).enumerate() {
        let base = (i * layout.page_size) as u64;
        decode_page(page, layout, schema, cpu, base, &mut loss, &mut |e| out.push(Owned::from(e)))
            .unwrap();
    }
    (out, loss)
}

/// One event line of the ftrace text format, parsed without the library:
/// `comm-pid [cpu] flags secs.usecs: event: fields`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TextLine {
    pub ts_us: u64,
    pub cpu: u32,
    pub pid: i32,
    pub event: String,
    pub fields: String,
}

pub fn parse_text_trace(text: &str) -> Vec<TextLine> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        // The event name is the first `: word: ` after the timestamp; comm may hold spaces.
        let (head, rest) = line.split_once(": ").unwrap();
        let (event, fields) = rest.split_once(": ").unwrap();
        let mut tokens = head.rsplitn(4, char::is_whitespace).filter(|t| !t.is_empty());
        let ts = tokens.next().unwrap();
        let _flags = tokens.next().unwrap();
        let cpu = tokens.next().unwrap();
        let task = tokens.next().unwrap().trim_end();
        let (secs, usecs) = ts.split_once('.').unwrap();
        out.push(TextLine {
            ts_us: secs.parse::<u64>().unwrap() * 1_000_000 + usecs.parse::<u64>().unwrap(),
            cpu: cpu.trim_matches(['[', ']']).parse().unwrap(),
            pid: task.rsplit_once('-').unwrap().1.parse().unwrap(),
            event: event.to_string(),
            fields: fields.to_string(),
        });
    }
    out
}

/// The integer after `key` in a text line's fields (`pages:-1`, `next_pid=21`).
pub fn text_field(fields: &str, key: &str) -> i64 {
    let at = fields.find(key).unwrap_or_else(|| panic!("{key} in {fields}")) + key.len();
    let digits: String =
        fields[at..].chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse().unwrap()
}

/// The reason number in parentheses at the end of a tlb_flush text line.
pub fn text_reason(fields: &str) -> i64 {
    let open = fields.rfind('(').unwrap();
    fields[open + 1..fields.len() - 1].parse().unwrap()
}

/// The kernel prints trace timestamps as microseconds rounded to nearest (`ns2usecs()` adds
/// 500 ns before dividing).
pub fn ns2usecs(ns: u64) -> u64 {
    (ns + 500) / 1000
}

/// Builds a ring-buffer page by hand, in the layout of a 64-bit kernel.
pub struct PageBuilder {
    pub timestamp: u64,
    pub data: Vec<u8>,
}

impl PageBuilder {
    pub fn new(timestamp: u64) -> PageBuilder {
        PageBuilder { timestamp, data: Vec::new() }
    }

    fn word(&mut self, type_len: u32, delta: u32) {
        assert!(type_len < 32 && delta < 1 << 27);
        self.data.extend_from_slice(&(type_len | delta << 5).to_le_bytes());
    }

    /// A data event whose length fits `type_len` (payload length a multiple of 4, ≤ 112).
    pub fn event(mut self, delta: u32, payload: &[u8]) -> Self {
        assert!(payload.len().is_multiple_of(4) && !payload.is_empty() && payload.len() <= 112);
        self.word(payload.len() as u32 / 4, delta);
        self.data.extend_from_slice(payload);
        self
    }

    /// A data event with `type_len` 0: the length word counts itself.
    pub fn long_event(mut self, delta: u32, payload: &[u8]) -> Self {
        assert!(payload.len().is_multiple_of(4));
        self.word(0, delta);
        self.data.extend_from_slice(&(payload.len() as u32 + 4).to_le_bytes());
        self.data.extend_from_slice(payload);
        self
    }

    /// A time extend of `delta` ns (more than 27 bits).
    pub fn extend(mut self, delta: u64) -> Self {
        self.word(30, (delta & ((1 << 27) - 1)) as u32);
        self.data.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
        self
    }

    /// An absolute time stamp (low 59 bits of `ts`).
    pub fn absolute(mut self, ts: u64) -> Self {
        self.word(31, (ts & ((1 << 27) - 1)) as u32);
        self.data.extend_from_slice(&(((ts >> 27) & 0xffff_ffff) as u32).to_le_bytes());
        self
    }

    /// A discarded event of `len` bytes after its header (padding with a length).
    pub fn discarded(mut self, len: u32) -> Self {
        self.word(29, 1);
        self.data.extend_from_slice(&len.to_le_bytes());
        self.data.extend(std::iter::repeat_n(0xee, len as usize - 4));
        self
    }

    /// Padding to the end of the page (null padding event).
    pub fn null_padding(mut self) -> Self {
        self.word(29, 0);
        self
    }

    /// The 4096-byte page; `missed` sets the lost-events flags as the kernel does.
    pub fn page(&self, missed: Option<Option<u64>>) -> Vec<u8> {
        let mut p = vec![0u8; 4096];
        p[0..8].copy_from_slice(&self.timestamp.to_le_bytes());
        let mut commit = self.data.len() as u64;
        p[16..16 + self.data.len()].copy_from_slice(&self.data);
        match missed {
            None => {}
            Some(count) => {
                commit |= 0xffff_ffff_8000_0000; // RB_MISSED_EVENTS, sign-extended
                if let Some(n) = count {
                    commit |= 1 << 30;
                    let at = 16 + self.data.len();
                    p[at..at + 8].copy_from_slice(&n.to_le_bytes());
                }
            }
        }
        p[8..16].copy_from_slice(&commit.to_le_bytes());
        p
    }
}

/// A tlb_flush record in the 6.18 layout (id 188): common fields, reason at 8, pages at 16.
pub fn tlb_flush_record(pid: i32, reason: i32, pages: i64) -> Vec<u8> {
    let mut r = vec![0u8; 24];
    r[0..2].copy_from_slice(&188u16.to_le_bytes());
    r[4..8].copy_from_slice(&pid.to_le_bytes());
    r[8..12].copy_from_slice(&reason.to_le_bytes());
    r[16..24].copy_from_slice(&pages.to_le_bytes());
    r
}
