//! From ring-buffer records to events: the common fields (`common_type`, `common_pid`) by the
//! format files, and the typed `tlb:tlb_flush`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::format::{EventFormat, Field};
use crate::ringbuf::{parse_page_header, Missed, PageCursor, PageLayout};

/// One event as read from a CPU's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent<'a> {
    /// The CPU whose buffer held it.
    pub cpu: u32,
    /// Trace-clock timestamp in ns.
    pub ts_ns: u64,
    /// `common_type`: the `ID:` of its format file.
    pub event_id: u16,
    /// `common_pid`: the thread that was running.
    pub pid: i32,
    /// The whole record, starting with the common fields, so that the offsets of the format
    /// file apply directly.
    pub payload: &'a [u8],
}

/// The formats of the events an instance records, by id.
#[derive(Debug, Clone)]
pub struct Schema {
    common_type: Field,
    common_pid: Field,
    formats: BTreeMap<u16, EventFormat>,
}

impl Schema {
    /// Builds a schema; the common fields are taken from the first format (they are the same
    /// for every event). `None` without formats or without `common_type`/`common_pid`.
    pub fn new(formats: impl IntoIterator<Item = EventFormat>) -> Option<Schema> {
        let formats: BTreeMap<u16, EventFormat> = formats.into_iter().map(|f| (f.id, f)).collect();
        let first = formats.values().next()?;
        Some(Schema {
            common_type: first.field("common_type")?.clone(),
            common_pid: first.field("common_pid")?.clone(),
            formats,
        })
    }

    /// The format of event `id`.
    pub fn format(&self, id: u16) -> Option<&EventFormat> {
        self.formats.get(&id)
    }

    /// Every format, by id.
    pub fn formats(&self) -> impl Iterator<Item = &EventFormat> {
        self.formats.values()
    }

    /// The format of the event called `name` (the `name:` line, e.g. `tlb_flush`).
    pub fn format_named(&self, name: &str) -> Option<&EventFormat> {
        self.formats.values().find(|f| f.name == name)
    }

    /// Reads the common fields of `payload`; `None` if it is too short to hold them.
    pub fn event<'a>(&self, cpu: u32, ts_ns: u64, payload: &'a [u8]) -> Option<RawEvent<'a>> {
        let event_id = u16::try_from(self.common_type.read_i64(payload)?).ok()?;
        let pid = i32::try_from(self.common_pid.read_i64(payload)?).ok()?;
        Some(RawEvent { cpu, ts_ns, event_id, pid, payload })
    }
}

/// Events lost on one CPU, as the pages and the per-CPU `stats` file report them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuLoss {
    /// The CPU.
    pub cpu: u32,
    /// Sum of the lost-event counts stored in pages.
    pub missed_events: u64,
    /// Pages flagged as following lost events whose count was not stored.
    pub pages_with_unknown_loss: u64,
    /// Pages read.
    pub pages: u64,
    /// The kernel's `overrun` counter from `per_cpu/cpuN/stats` when read (events overwritten
    /// before we read them).
    pub overrun: Option<u64>,
    /// The kernel's `dropped events` counter (events refused because the buffer was full, in
    /// non-overwrite mode).
    pub dropped_events: Option<u64>,
}

impl CpuLoss {
    /// Whether anything at all was reported lost.
    pub fn any(&self) -> bool {
        self.missed_events > 0
            || self.pages_with_unknown_loss > 0
            || self.overrun.unwrap_or(0) > 0
            || self.dropped_events.unwrap_or(0) > 0
    }

    /// Events known to be lost: overwritten ones (the pages' stored counts and the kernel's
    /// `overrun` counter describe the same events, so the larger of the two) plus those refused
    /// when the buffer was full. A lower bound when `pages_with_unknown_loss` is not zero.
    pub fn lost_events(&self) -> u64 {
        self.missed_events.max(self.overrun.unwrap_or(0)) + self.dropped_events.unwrap_or(0)
    }

    pub(crate) fn note_page(&mut self, missed: Missed) {
        self.pages += 1;
        match missed {
            Missed::None => {}
            Missed::Unknown => self.pages_with_unknown_loss += 1,
            Missed::Count(n) => self.missed_events += n,
        }
    }
}

/// Decodes every event of one page and hands it to `f`. `base` is the byte offset of the page
/// in the CPU's stream (for error messages); lost events are added to `loss`.
pub fn decode_page(
    page: &[u8],
    layout: &PageLayout,
    schema: &Schema,
    cpu: u32,
    base: u64,
    loss: &mut CpuLoss,
    f: &mut dyn FnMut(&RawEvent<'_>),
) -> crate::Result<u64> {
    let err = |offset: usize, msg: String| crate::Error::Decode {
        cpu,
        offset: base + offset as u64,
        msg,
    };
    let header = parse_page_header(page, layout).map_err(|e| err(e.offset, e.msg))?;
    loss.note_page(header.missed);
    let mut cursor = PageCursor::new(&header, layout);
    let mut n = 0;
    while let Some(rec) = cursor.next_record(page).map_err(|e| err(e.offset, e.msg))? {
        let at = rec.data.start;
        let ev = schema
            .event(cpu, rec.ts, &page[rec.data])
            .ok_or_else(|| err(at, "record shorter than the common fields".into()))?;
        f(&ev);
        n += 1;
    }
    Ok(n)
}

/// The value of `pages` meaning "flush everything" (`TLB_FLUSH_ALL`, `-1UL`).
pub const TLB_FLUSH_ALL: i64 = -1;

/// One `tlb:tlb_flush` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbFlush {
    /// The CPU that flushed (or, for reason 4, sent the flush request).
    pub cpu: u32,
    /// Trace-clock timestamp in ns.
    pub ts_ns: u64,
    /// The running thread.
    pub pid: i32,
    /// The kernel's `enum tlb_flush_reason` value (see [`TlbFlushDecoder::reason_name`]).
    pub reason: i32,
    /// Pages flushed; [`TLB_FLUSH_ALL`] (-1) for a full flush.
    pub pages: i64,
}

/// Decodes `tlb:tlb_flush` records by the offsets of its format file.
#[derive(Debug, Clone)]
pub struct TlbFlushDecoder {
    id: u16,
    reason: Field,
    pages: Field,
    reason_names: BTreeMap<i32, String>,
}

impl TlbFlushDecoder {
    /// A decoder for this kernel's `tlb_flush` format; `Err` names the missing field.
    pub fn new(format: &EventFormat) -> Result<TlbFlushDecoder, String> {
        let field = |n: &str| {
            format.field(n).cloned().ok_or_else(|| format!("tlb_flush has no field `{n}`"))
        };
        let reason_names = format
            .symbols("reason")
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| Some((i32::try_from(s.value?).ok()?, s.label)))
            .collect();
        Ok(TlbFlushDecoder {
            id: format.id,
            reason: field("reason")?,
            pages: field("pages")?,
            reason_names,
        })
    }

    /// The event id of `tlb_flush` on this kernel.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The typed event if `ev` is a `tlb_flush`; `Err` if its record is too short.
    pub fn decode(&self, ev: &RawEvent<'_>) -> Result<Option<TlbFlush>, String> {
        if ev.event_id != self.id {
            return Ok(None);
        }
        let short = || format!("tlb_flush record of {} bytes is too short", ev.payload.len());
        let reason = self
            .reason
            .read_i64(ev.payload)
            .and_then(|r| i32::try_from(r).ok())
            .ok_or_else(short)?;
        let pages = self.pages.read_as_signed(ev.payload).ok_or_else(short)?;
        Ok(Some(TlbFlush { cpu: ev.cpu, ts_ns: ev.ts_ns, pid: ev.pid, reason, pages }))
    }

    /// This kernel's label for a reason value, from the format file's `__print_symbolic`.
    pub fn reason_name(&self, reason: i32) -> Option<&str> {
        self.reason_names.get(&reason).map(String::as_str)
    }

    /// All reason values and labels of this kernel.
    pub fn reason_names(&self) -> &BTreeMap<i32, String> {
        &self.reason_names
    }
}
