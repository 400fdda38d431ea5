//! The summary behind `tlblab trace report`: counts by reason and CPU, shootdowns sent against
//! received, pages per flush, the flush rate over time, the busiest processes, and what the
//! recording lost.
//!
//! [`SummaryBuilder`] takes the records one at a time in bounded memory (per distinct CPU,
//! reason, task, `pages` slot and time bucket, never per event), so a trace of any length can
//! be streamed through it; [`render`] turns the [`Summary`] into terminal tables, Markdown or one
//! long-format CSV, and the `Summary` itself serialises as the JSON report (schema
//! [`SCHEMA`]).
//!
//! ```
//! use tlblab_flushtrace::summary::{render_table, SummaryBuilder, SummaryOptions};
//! use tlblab_flushtrace::{reason, End, Flush, Header, Origin, Record, Trailer};
//!
//! let header = Header::new(Origin::Recorded);
//! let mut builder = SummaryBuilder::new(&header, SummaryOptions::default());
//! // CPU 0 asks for a one-page flush; CPU 1 does it in its IPI handler.
//! let sent = (1_000, 0, reason::REMOTE_SEND_IPI);
//! let received = (1_500, 1, reason::REMOTE_SHOOTDOWN);
//! for (ts_ns, cpu, reason) in [sent, received] {
//!     builder.add(&Record::Flush(Flush { ts_ns, cpu, pid: 42, reason, pages: 1 }));
//! }
//! let trailer = Trailer { end: End::Complete, records: 2, ..Trailer::default() };
//! let summary = builder.finish(&trailer);
//! assert_eq!((summary.remote.sends, summary.remote.received), (1, 1));
//! assert!(render_table(&summary).contains("remote shootdown"));
//! ```

mod notes;
mod rate;
pub mod render;
mod schema;
mod sizes;
mod tasks;

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU64;

pub use render::{render_csv, render_markdown, render_table, CSV_HEADER};
pub use schema::{
    FlushSizes, GroupCounts, GroupRates, IntervalChoice, IpiCounts, KernelInterrupts, ProcessRest,
    ProcessRow, Processes, Rate, RateBucket, ReasonCount, Remote, SizeHistogram, SizeRow, Summary,
    Totals, TraceInfo,
};

use crate::model::{reason, Header, Record, Trailer};
use rate::RateBins;
use sizes::SizeCounter;
use tasks::TaskCounter;

/// The `schema` of a [`Summary`] (the JSON report).
pub const SCHEMA: &str = "tlblab.trace.report/1";

/// How to summarise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryOptions {
    /// The rate table's interval; `None` chooses 1, 2 or 5 × 10^k ns giving at most 60 buckets
    /// over the trace's span. A requested interval that would give more than 10,000 buckets is
    /// doubled until it does not (the summary says so).
    pub interval_ns: Option<NonZeroU64>,
    /// Processes listed by name; the others are summed in one row.
    pub top: usize,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions { interval_ns: None, top: 10 }
    }
}

/// Reasons counted per CPU in arrays (0–5 today, room for two more).
const DENSE_REASONS: usize = 8;
/// CPUs counted in arrays; higher numbers (never seen on real machines, but a decoded field can
/// hold anything) go to a map so a bad value cannot allocate gigabytes.
const DENSE_CPUS: u32 = 4096;

/// Record kinds counted.
#[derive(Debug, Clone, Copy, Default)]
struct Kinds {
    flush: u64,
    switch: u64,
    ipi_send: u64,
    call_function: u64,
    task: u64,
    other: u64,
}

/// Takes a trace's records one at a time; [`SummaryBuilder::finish`] makes the [`Summary`].
#[derive(Debug, Clone)]
pub struct SummaryBuilder {
    header: Header,
    options: SummaryOptions,
    records: u64,
    kinds: Kinds,
    first_ts: Option<u64>,
    last_ts: u64,
    prev_ts: u64,
    out_of_order: u64,
    /// Events per CPU and reason: `dense[cpu][reason]`.
    dense: Vec<[u64; DENSE_REASONS]>,
    /// Events of other (reason, CPU) pairs.
    sparse: BTreeMap<(i32, u32), u64>,
    sizes: SizeCounter,
    rate: RateBins,
    tasks: TaskCounter,
    ipi_targets: u64,
    call_function_entries: u64,
}

impl SummaryBuilder {
    /// A builder for a trace with this header.
    pub fn new(header: &Header, options: SummaryOptions) -> SummaryBuilder {
        SummaryBuilder {
            header: header.clone(),
            options,
            records: 0,
            kinds: Kinds::default(),
            first_ts: None,
            last_ts: 0,
            prev_ts: 0,
            out_of_order: 0,
            dense: Vec::new(),
            sparse: BTreeMap::new(),
            sizes: SizeCounter::new(),
            rate: RateBins::new(options.interval_ns),
            tasks: TaskCounter::default(),
            ipi_targets: 0,
            call_function_entries: 0,
        }
    }

    /// Counts one record (records are expected in time order; others are counted and flagged).
    #[inline]
    pub fn add(&mut self, record: &Record) {
        let ts = record.ts_ns();
        self.records += 1;
        match self.first_ts {
            None => {
                self.first_ts = Some(ts);
                self.last_ts = ts;
            }
            Some(first) => {
                if ts < self.prev_ts {
                    self.out_of_order += 1;
                }
                self.first_ts = Some(first.min(ts));
                self.last_ts = self.last_ts.max(ts);
            }
        }
        self.prev_ts = ts;
        let group = match record {
            Record::Flush(f) => {
                self.kinds.flush += 1;
                self.count_reason(f.cpu, f.reason);
                self.sizes.add(f.reason, f.pages);
                let g = rate::group(f.reason);
                self.tasks.event(f.pid, g);
                Some(g)
            }
            Record::Switch(_) => {
                self.kinds.switch += 1;
                None
            }
            Record::IpiSend(i) => {
                self.kinds.ipi_send += 1;
                self.ipi_targets += i.targets.len() as u64;
                None
            }
            Record::CallFunction(c) => {
                self.kinds.call_function += 1;
                self.call_function_entries += u64::from(c.entry);
                None
            }
            Record::Task(t) => {
                self.kinds.task += 1;
                self.tasks.task(t);
                None
            }
            Record::Other(_) => {
                self.kinds.other += 1;
                None
            }
        };
        self.rate.add(ts, group);
    }

    #[inline]
    fn count_reason(&mut self, cpu: u32, reason: i32) {
        match usize::try_from(reason) {
            Ok(r) if r < DENSE_REASONS && cpu < DENSE_CPUS => {
                let c = cpu as usize;
                if self.dense.len() <= c {
                    self.dense.resize(c + 1, [0; DENSE_REASONS]);
                }
                self.dense[c][r] += 1;
            }
            _ => *self.sparse.entry((reason, cpu)).or_default() += 1,
        }
    }

    /// Events by reason, then CPU.
    fn by_reason(&self) -> BTreeMap<i32, BTreeMap<u32, u64>> {
        let mut out: BTreeMap<i32, BTreeMap<u32, u64>> = BTreeMap::new();
        for (cpu, row) in self.dense.iter().enumerate() {
            for (r, &n) in row.iter().enumerate().filter(|(_, &n)| n > 0) {
                out.entry(r as i32).or_default().insert(cpu as u32, n);
            }
        }
        for (&(r, cpu), &n) in &self.sparse {
            out.entry(r).or_default().insert(cpu, n);
        }
        out
    }

    /// The summary, with what the trailer says (end status, losses, reason labels learnt while
    /// writing).
    pub fn finish(&self, trailer: &Trailer) -> Summary {
        let mut header = self.header.clone();
        trailer.merge_into(&mut header);
        let by_reason = self.by_reason();
        let count = |r: i32| by_reason.get(&r).map_or(0, |m| m.values().sum::<u64>());
        let flush_events = self.kinds.flush;
        let reasons = by_reason
            .iter()
            .map(|(&r, per_cpu)| {
                let events: u64 = per_cpu.values().sum();
                ReasonCount {
                    reason: r,
                    label: header.reason_label(r),
                    events,
                    percent: events as f64 * 100.0 / flush_events as f64,
                    per_cpu: per_cpu.clone(),
                }
            })
            .collect();
        let cpus: BTreeSet<u32> = header
            .cpus
            .iter()
            .copied()
            .chain(by_reason.values().flat_map(|m| m.keys().copied()))
            .collect();
        let (sends, received) = (count(reason::REMOTE_SEND_IPI), count(reason::REMOTE_SHOOTDOWN));
        let remote = Remote {
            sends,
            received,
            wrong_cpu: count(reason::REMOTE_WRONG_CPU),
            received_per_send: (sends > 0).then(|| received as f64 / sends as f64),
            ipi: (self.kinds.ipi_send > 0).then_some(IpiCounts {
                send_records: self.kinds.ipi_send,
                targets: self.ipi_targets,
                call_function_entries: self.call_function_entries,
            }),
            interrupts: trailer.interrupts.as_ref().map(|i| {
                let per_cpu = |row: &Option<Vec<u64>>| -> BTreeMap<u32, u64> {
                    row.iter().flat_map(|r| i.cpus.iter().copied().zip(r.iter().copied())).collect()
                };
                KernelInterrupts {
                    tlb: i.tlb.as_ref().map(|r| r.iter().sum()),
                    cal: i.cal.as_ref().map(|r| r.iter().sum()),
                    tlb_per_cpu: per_cpu(&i.tlb),
                    cal_per_cpu: per_cpu(&i.cal),
                }
            }),
        };
        let totals = Totals {
            records: self.records,
            records_in_trailer: trailer.records,
            flush_events,
            flushes_performed: [
                reason::REMOTE_SHOOTDOWN,
                reason::LOCAL_SHOOTDOWN,
                reason::LOCAL_MM_SHOOTDOWN,
            ]
            .into_iter()
            .map(count)
            .sum(),
            switch_records: self.kinds.switch,
            ipi_send_records: self.kinds.ipi_send,
            call_function_records: self.kinds.call_function,
            task_records: self.kinds.task,
            other_records: self.kinds.other,
            first_ts_ns: self.first_ts,
            last_ts_ns: self.first_ts.map(|_| self.last_ts),
            span_ns: self.first_ts.map_or(0, |f| self.last_ts - f),
            out_of_order: self.out_of_order,
            duration_ns: trailer.duration_ns,
            lost_events: trailer.lost_events(),
            losses: trailer.losses.clone(),
            end: trailer.end.clone(),
            command: header.command.clone(),
            only_command: header.only_command,
            command_status: trailer.command_status,
        };
        let mut warnings = notes::warnings(&totals);
        if header.broadcast_flush() == Some(true) {
            warnings.push(notes::BROADCAST_FLUSH.to_string());
        }
        let notes = notes::remote(&remote, flush_events, header.only_command);
        Summary {
            schema: SCHEMA.to_string(),
            trace: TraceInfo {
                origin: header.origin.clone(),
                source_path: header.source_path.clone(),
                tlblab_version: header.tlblab_version.clone(),
                kernel_release: header.kernel_release.clone(),
                hostname: header.hostname.clone(),
                clock: header.clock.clone(),
                events: header.events.clone(),
                buffer_size_kb: header.buffer_size_kb,
                header_notes: header.notes.clone(),
                cpu: header.cpu.clone(),
                broadcast_flush: header.broadcast_flush(),
            },
            totals,
            reasons,
            cpus: cpus.into_iter().collect(),
            remote,
            sizes: FlushSizes {
                performed: self.sizes.performed(),
                by_reason: self.sizes.by_reason(),
            },
            rate: self.rate.finish(),
            processes: self.tasks.finish(self.options.top),
            warnings,
            notes,
        }
    }
}

/// Summarises a whole trace held in memory.
pub fn summarize<'a>(
    header: &Header,
    records: impl IntoIterator<Item = &'a Record>,
    trailer: &Trailer,
    options: SummaryOptions,
) -> Summary {
    let mut builder = SummaryBuilder::new(header, options);
    for r in records {
        builder.add(r);
    }
    builder.finish(trailer)
}
