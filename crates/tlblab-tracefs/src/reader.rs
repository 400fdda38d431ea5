//! Reading an instance's per-CPU `trace_pipe_raw` files: streamed per CPU, or merged across
//! CPUs by timestamp.
//!
//! Reads are non-blocking and exactly one page long (the kernel hands out whole pages; a
//! shorter read would split one). Memory is bounded: one scratch page when streaming; when
//! merging, at most `MAX_PAGES_PER_ROUND` pages per CPU are held between rounds.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read};
use std::marker::PhantomData;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use crate::error::{read_text, Error, Result};
use crate::event::{decode_page, CpuLoss, RawEvent, Schema};
use crate::instance::Instance;
use crate::ringbuf::{parse_page_header, PageCursor, PageLayout, Record};

/// At most this many pages are read from one CPU per call, so one busy CPU cannot starve the
/// others or make a merge round unbounded.
pub const MAX_PAGES_PER_ROUND: usize = 256;

/// How much one call read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Pages read.
    pub pages: u64,
    /// Events decoded.
    pub events: u64,
    /// Whether every CPU was read until it had nothing more (no CPU hit the per-call cap).
    pub drained: bool,
}

/// One CPU's page stream for [`Reader::from_streams`]: anything that returns whole pages per
/// read (a `trace_pipe_raw` file, or a file of saved pages) and 0 or `WouldBlock` when empty.
pub struct CpuStream {
    /// The CPU the pages came from.
    pub cpu: u32,
    /// The file name, for error messages.
    pub path: PathBuf,
    /// The pages.
    pub stream: Box<dyn Read + Send>,
}

struct CpuSource {
    cpu: u32,
    path: PathBuf,
    stats: Option<PathBuf>,
    file: Box<dyn Read + Send>,
    offset: u64,
    loss: CpuLoss,
    /// Merge state: pages read but not yet fully emitted, the cursor in the front one, and
    /// the next record of the front page.
    pages: VecDeque<(u64, Vec<u8>)>,
    cursor: Option<PageCursor>,
    head: Option<Record>,
    /// The last fill stopped at the per-round cap, so more may be waiting in the kernel.
    capped: bool,
}

/// A reader of an instance's buffers. It borrows the instance: the kernel will not remove an
/// instance while its `trace_pipe_raw` files are open.
pub struct Reader<'i> {
    pub(crate) core: ReaderCore,
    _instance: PhantomData<&'i Instance>,
}

/// The part of a [`Reader`] that owns no borrow, so a reading thread can own it.
pub(crate) struct ReaderCore {
    sources: Vec<CpuSource>,
    layout: PageLayout,
    schema: Schema,
    mono_clock: bool,
    scratch: Vec<u8>,
    pool: Vec<Vec<u8>>,
}

impl Instance {
    /// Opens every online CPU's `trace_pipe_raw` of this instance.
    pub fn reader(&self) -> Result<Reader<'_>> {
        let layout = self.page_layout()?;
        let schema = self.schema()?;
        let mut streams = Vec::new();
        let mut stats = Vec::new();
        for cpu in self.cpus()? {
            let dir = self.cpu_dir(cpu);
            let path = dir.join("trace_pipe_raw");
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                .open(&path)
                .map_err(|e| Error::io("open", &path, e))?;
            streams.push(CpuStream { cpu, path, stream: Box::new(file) });
            stats.push(dir.join("stats"));
        }
        let mut reader = Reader::from_streams(layout, schema, streams, self.clock() == "mono");
        for (src, stats) in reader.core.sources.iter_mut().zip(stats) {
            src.stats = Some(stats);
        }
        Ok(Reader { core: reader.core, _instance: PhantomData })
    }
}

impl Reader<'static> {
    /// A reader over page streams not tied to an instance (saved pages, tests, benchmarks).
    /// `mono_clock` says the timestamps are `CLOCK_MONOTONIC` ns (see [`Reader::read_merged`]).
    pub fn from_streams(
        layout: PageLayout,
        schema: Schema,
        streams: Vec<CpuStream>,
        mono_clock: bool,
    ) -> Reader<'static> {
        let sources = streams
            .into_iter()
            .map(|s| CpuSource {
                cpu: s.cpu,
                path: s.path,
                stats: None,
                file: s.stream,
                offset: 0,
                loss: CpuLoss { cpu: s.cpu, ..CpuLoss::default() },
                pages: VecDeque::new(),
                cursor: None,
                head: None,
                capped: false,
            })
            .collect();
        let core = ReaderCore {
            sources,
            layout,
            schema,
            mono_clock,
            scratch: vec![0; layout.page_size],
            pool: Vec::new(),
        };
        Reader { core, _instance: PhantomData }
    }
}

impl Reader<'_> {
    /// The formats of the recorded events.
    pub fn schema(&self) -> &Schema {
        &self.core.schema
    }

    /// Reads what is available on every CPU and hands each event to `f`, CPU by CPU (in time
    /// order within a CPU, not across CPUs).
    pub fn read_available(&mut self, f: &mut dyn FnMut(&RawEvent<'_>)) -> Result<Progress> {
        self.core.read_available(f)
    }

    /// One round of the merged stream: reads what is available and hands to `f`, in timestamp
    /// order across CPUs, the events that no CPU can still precede. With the `mono` clock that
    /// is everything stamped more than 1 ms before the round began (each CPU was then read to
    /// its end); with another clock, everything read (live CPUs may then be slightly out of
    /// order across rounds; streams of saved pages never are). A CPU that had more than
    /// [`MAX_PAGES_PER_ROUND`] pages waiting holds the others back to its last page's time.
    /// Call [`Reader::finish_merged`] at the end.
    pub fn read_merged(&mut self, f: &mut dyn FnMut(&RawEvent<'_>)) -> Result<Progress> {
        // The margin covers events stamped before `now` whose commit was still in flight when
        // their CPU was read, and the trace clock's fast (slightly lagging) mono reads.
        const MARGIN_NS: u64 = 1_000_000;
        let now =
            if self.core.mono_clock { monotonic_ns().saturating_sub(MARGIN_NS) } else { u64::MAX };
        let mut progress = self.core.fill_queues(MAX_PAGES_PER_ROUND)?;
        let watermark = self.core.watermark(now);
        progress.events = self.core.emit_merged(watermark, f)?;
        Ok(progress)
    }

    /// Reads everything left and emits all queued events in timestamp order (in bounded
    /// rounds; turn tracing off first, or a busy CPU keeps it going).
    pub fn finish_merged(&mut self, f: &mut dyn FnMut(&RawEvent<'_>)) -> Result<Progress> {
        let mut total = Progress { drained: true, ..Progress::default() };
        loop {
            let p = self.core.fill_queues(MAX_PAGES_PER_ROUND)?;
            total.pages += p.pages;
            total.events += self.core.emit_merged(self.core.watermark(u64::MAX), f)?;
            if p.drained {
                return Ok(total);
            }
        }
    }

    /// Lost events per CPU so far, with the kernel's counters.
    pub fn losses(&self) -> Vec<CpuLoss> {
        self.core.losses()
    }
}

fn monotonic_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}

/// Reads one page of `src` into `buf`; `false` when the CPU has nothing more now.
fn read_page(src: &mut CpuSource, buf: &mut [u8]) -> Result<bool> {
    loop {
        match src.file.read(buf) {
            Ok(0) => return Ok(false),
            Ok(n) if n == buf.len() => return Ok(true),
            Ok(n) => {
                return Err(Error::Decode {
                    cpu: src.cpu,
                    offset: src.offset,
                    msg: format!(
                        "short read of {n} bytes from {} (page is {})",
                        src.path.display(),
                        buf.len()
                    ),
                })
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("read", &src.path, e)),
        }
    }
}

impl ReaderCore {
    pub(crate) fn read_available(&mut self, f: &mut dyn FnMut(&RawEvent<'_>)) -> Result<Progress> {
        let mut p = Progress { drained: true, ..Progress::default() };
        for src in &mut self.sources {
            let mut pages = 0;
            while pages < MAX_PAGES_PER_ROUND && read_page(src, &mut self.scratch)? {
                let base = src.offset;
                src.offset += self.scratch.len() as u64;
                pages += 1;
                p.events += decode_page(
                    &self.scratch,
                    &self.layout,
                    &self.schema,
                    src.cpu,
                    base,
                    &mut src.loss,
                    f,
                )?;
            }
            p.drained &= pages < MAX_PAGES_PER_ROUND;
            p.pages += pages as u64;
        }
        Ok(p)
    }

    /// Reads pages into the per-CPU merge queues (at most `cap` per CPU).
    fn fill_queues(&mut self, cap: usize) -> Result<Progress> {
        let mut p = Progress { drained: true, ..Progress::default() };
        for src in &mut self.sources {
            let mut pages = 0;
            while pages < cap {
                let mut buf = self.pool.pop().unwrap_or_else(|| vec![0; self.layout.page_size]);
                if !read_page(src, &mut buf)? {
                    self.pool.push(buf);
                    break;
                }
                src.pages.push_back((src.offset, buf));
                src.offset += self.layout.page_size as u64;
                pages += 1;
            }
            src.capped = pages >= cap;
            p.drained &= !src.capped;
            p.pages += pages as u64;
        }
        Ok(p)
    }

    /// The time before which every CPU's events are all queued: `now`, lowered to the
    /// timestamp of the last page queued from any CPU that was not read to its end.
    fn watermark(&self, now: u64) -> u64 {
        let mut w = now;
        for src in self.sources.iter().filter(|s| s.capped) {
            if let Some(h) =
                src.pages.back().and_then(|(_, p)| parse_page_header(p, &self.layout).ok())
            {
                w = w.min(h.timestamp);
            }
        }
        w
    }

    /// Makes sure `sources[i].head` holds the next record if its queue has one.
    fn fill_head(&mut self, i: usize) -> Result<()> {
        let src = &mut self.sources[i];
        while src.head.is_none() {
            let Some((base, page)) = src.pages.front() else { return Ok(()) };
            let err = |offset: usize, msg: String| Error::Decode {
                cpu: src.cpu,
                offset: base + offset as u64,
                msg,
            };
            let result = match src.cursor.as_mut() {
                Some(cursor) => cursor.next_record(page).map_err(|e| err(e.offset, e.msg)),
                None => match parse_page_header(page, &self.layout) {
                    Ok(h) => {
                        src.loss.note_page(h.missed);
                        src.cursor = Some(PageCursor::new(&h, &self.layout));
                        continue;
                    }
                    Err(e) => Err(err(e.offset, e.msg)),
                },
            };
            match result {
                Ok(Some(rec)) => src.head = Some(rec),
                Ok(None) | Err(_) => {
                    src.cursor = None;
                    if let Some((_, buf)) = src.pages.pop_front() {
                        self.pool.push(buf);
                    }
                    result?;
                }
            }
        }
        Ok(())
    }

    /// Emits queued events with timestamps below `watermark`, merged across CPUs.
    fn emit_merged(&mut self, watermark: u64, f: &mut dyn FnMut(&RawEvent<'_>)) -> Result<u64> {
        let mut heap = BinaryHeap::new();
        for i in 0..self.sources.len() {
            self.fill_head(i)?;
            if let Some(h) = &self.sources[i].head {
                heap.push(Reverse((h.ts, i)));
            }
        }
        let mut n = 0;
        while let Some(Reverse((ts, i))) = heap.pop() {
            if ts >= watermark {
                break;
            }
            let src = &mut self.sources[i];
            if let (Some(rec), Some((base, page))) = (src.head.take(), src.pages.front()) {
                let at = base + rec.data.start as u64;
                let ev = self.schema.event(src.cpu, rec.ts, &page[rec.data]).ok_or_else(|| {
                    Error::Decode {
                        cpu: src.cpu,
                        offset: at,
                        msg: "record shorter than the common fields".into(),
                    }
                })?;
                f(&ev);
                n += 1;
            }
            self.fill_head(i)?;
            if let Some(h) = &self.sources[i].head {
                heap.push(Reverse((h.ts, i)));
            }
        }
        Ok(n)
    }

    pub(crate) fn losses(&self) -> Vec<CpuLoss> {
        self.sources
            .iter()
            .map(|s| {
                let mut loss = s.loss.clone();
                if let Some(Ok(text)) = s.stats.as_ref().map(|p| read_text(p)) {
                    let kernel = crate::instance::parse_cpu_stats(s.cpu, &text);
                    loss.overrun = kernel.overrun;
                    loss.dropped_events = kernel.dropped_events;
                }
                loss
            })
            .collect()
    }
}
