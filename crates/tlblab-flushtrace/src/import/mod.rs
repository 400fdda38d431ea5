//! Importers of flush traces printed as text: the ftrace `trace` / `trace_pipe` files (any
//! kernel since the tracepoint's 4.x days) and `perf script` output.
//!
//! [`TextImporter`] reads a [`BufRead`] line by line (one line in memory, capped at
//! [`MAX_LINE`] bytes) and yields [`Record`]s in input order:
//!
//! * `tlb_flush` → [`Record::Flush`], keyed on the reason *integer* in parentheses; the label
//!   beside it is kept in [`TextImporter::reason_names`] as the text spelt it. A body with no
//!   integer at all is matched against [`REASON_SPELLINGS`] (case-insensitively), else refused.
//! * `sched_switch` → [`Record::Switch`], with `prev_state` as the kernel's integer (below).
//! * `ipi_send_cpu` / `ipi_send_cpumask` → [`Record::IpiSend`]. The text prints the callback
//!   with `%pS`, i.e. as a symbol when the kernel knows one: then `callback` is 0 and the symbol
//!   is counted in [`TextImporter::callback_symbols`].
//! * `call_function{,_single}_{entry,exit}` → [`Record::CallFunction`].
//! * A thread seen for the first time, or seen with a new comm or tgid, → a [`Record::Task`]
//!   just before the event that showed it, with the same timestamp. Threads are seen in the
//!   context of every event line and as prev/next of `sched_switch`; the placeholders `<...>`
//!   (ftrace's comm cache lost the pid) and `:PID` (perf) never replace a name; pid 0 (every
//!   CPU's idle task, `swapper/N`) is announced once. A name longer than the trace format holds
//!   ([`crate::MAX_COMM_BYTES`]) is cut to it ([`TextImporter::comms_cut`]).
//! * Other events, function-tracer lines, blank lines, `#` comments, stack-trace lines and
//!   `CPU:N [LOST M EVENTS]` reports are counted in [`TextImporter::skipped`]; losses per CPU
//!   are in [`TextImporter::lost_events`].
//!
//! ## Formats
//!
//! * ftrace: `COMM-PID [(TGID)] [CPU] [FLAGS] TS: EVENT: BODY`, with or without the `# tracer`
//!   header block, with 4- or 5-character irq-info flags or none, with or without the
//!   record-tgid column (`(1234)`; `(-------)` gives tgid -1). The pid is the digits after the
//!   *last* dash before the CPU, so comms may hold dashes, spaces and colons; `<...>` and
//!   `<idle>` are comms like any other.
//! * perf script: `COMM TID [CPU] TS: SYSTEM:EVENT: BODY`, or `PID/TID` (the PID is the tgid);
//!   a single number is the thread, tgid -1. Without the CPU field, records carry
//!   [`UNKNOWN_CPU`].
//! * Timestamps `SECS.FRACTION` with 1 to 9 digits (µs, or ns with `perf script --ns`) become
//!   `ts_ns` digit for digit, without floating point; a bare integer (ftrace's `counter` and
//!   `x86-tsc` clocks) is kept as it is. A timestamp past [`crate::MAX_TS_NS`] is refused.
//! * A reason label that is empty, `0x5` (the kernel's and libtraceevent's fallback for a value
//!   without a name) or a number is not a name and is not kept.
//! * cpumasks: the kernel's default hex bitmap (`00000000,0000000e`: every comma-separated
//!   group 8 hex digits) or the `bitmask-list` option's list (`1-3`); CPUs above [`MAX_CPU`]
//!   are refused.
//!
//! ## `prev_state`
//!
//! The text is `__print_flags()` of the kernel's TASK_REPORT bits (`|`-separated), `R` when
//! none is set, and a `+` suffix for a preempted task. The importer gives the 4.14+ values:
//!
//! | text | value | kernel name |
//! |---|---|---|
//! | `R` | 0 | `TASK_RUNNING` (runnable) |
//! | `+` suffix | 0x100 | `TASK_REPORT_MAX`: preempted (`R+`) |
//! | `S` | 0x01 | `TASK_INTERRUPTIBLE` |
//! | `D` | 0x02 | `TASK_UNINTERRUPTIBLE` |
//! | `T` | 0x04 | `__TASK_STOPPED` |
//! | `t` | 0x08 | `__TASK_TRACED` |
//! | `X` | 0x10 | `EXIT_DEAD` |
//! | `Z` | 0x20 | `EXIT_ZOMBIE` |
//! | `P` | 0x40 | `TASK_PARKED` |
//! | `I` | 0x80 | `TASK_REPORT_IDLE` (`TASK_IDLE`) |
//!
//! Kernels before 4.14 printed raw state bits with other letters; they become what 4.14+
//! reports for the same state: `x` (`TASK_DEAD`) as `X`; `K` (`TASK_WAKEKILL`) and `W`
//! (`TASK_WAKING`) as no bit (a killable sleep reports as `D`); `N` (`TASK_NOLOAD`, with `D`:
//! `TASK_IDLE`) as `I`. A number (`0x1`, `1`: a parser that printed the raw value) is kept.
//!
//! A preempted task is what the ring buffer holds too: the kernel stores `TASK_REPORT_MAX`
//! (0x100 since 4.14) for it and prints `R+`, so `R+` is 0x100 here and recorded and imported
//! traces agree.
//!
//! ## Errors
//!
//! The format is forced or detected from the first event line ([`TextFormat`]). A line that
//! cannot be read yields an [`ImportError`] naming the file and line; the importer then goes on
//! with the next line, so a caller may count bad lines or stop at the first.
//!
//! ```
//! use tlblab_flushtrace::import::{TextFormat, TextImporter};
//! use tlblab_flushtrace::{Flush, Record};
//!
//! let text = "# tracer: nop\n  mt_madv-12896 [001] d.h.. 532.678034: tlb_flush: pages:1 reason:remote shootdown (1)\n";
//! let mut import = TextImporter::new(text.as_bytes(), "trace.txt", None);
//! let records: Vec<Record> = import.by_ref().collect::<Result<_, _>>()?;
//! assert_eq!(import.format(), Some(TextFormat::FtraceText));
//! assert_eq!(records.len(), 2); // the Task of pid 12896, then the Flush
//! assert_eq!(
//!     records[1],
//!     Record::Flush(Flush { ts_ns: 532_678_034_000, cpu: 1, pid: 12896, reason: 1, pages: 1 })
//! );
//! assert_eq!(import.reason_names()[&1], "remote shootdown");
//! # Ok::<(), tlblab_flushtrace::import::ImportError>(())
//! ```

mod context;
mod error;
mod event;
mod num;
mod tasks;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

pub use error::{ImportError, LineProblem};
pub use event::{MAX_CPU, REASON_SPELLINGS};

use crate::model::{CallFunction, Flush, IpiSend, Loss, Origin, Record, Switch, Trailer};
use context::{classify, Context, LineKind};
use event::EventKind;
use tasks::Tasks;

/// Longest line kept, in bytes; the rest of a longer line is discarded and the line refused
/// ([`LineProblem::TooLong`]). An ftrace line is ~130 bytes; a cpumask of 8192 CPUs ~2.3 KiB.
pub const MAX_LINE: usize = 64 * 1024;

/// `cpu` of records from `perf script` output printed without the CPU field.
pub const UNKNOWN_CPU: u32 = u32::MAX;

/// The text formats read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextFormat {
    /// ftrace's `trace` or `trace_pipe` text.
    FtraceText,
    /// `perf script` output.
    PerfScript,
}

impl TextFormat {
    /// The header origin of a trace imported from this format.
    pub fn origin(self) -> Origin {
        match self {
            TextFormat::FtraceText => Origin::FtraceText,
            TextFormat::PerfScript => Origin::PerfScript,
        }
    }
}

impl fmt::Display for TextFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TextFormat::FtraceText => "ftrace text",
            TextFormat::PerfScript => "perf script",
        })
    }
}

/// Lines read but not turned into records, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    /// Empty or whitespace-only lines.
    pub blank: u64,
    /// `#` lines (ftrace's header block, `perf script --header`).
    pub comments: u64,
    /// `CPU:N [LOST ...]` reports (their counts are in [`TextImporter::lost_events`]).
    pub lost_reports: u64,
    /// Stack-trace lines (ftrace's `=> fn`, perf callchains).
    pub stack: u64,
    /// Lines with a thread, CPU and timestamp but no event name (the function tracer's
    /// `fn <-parent`).
    pub untagged: u64,
    /// Events not decoded, by name as printed (`sched_wakeup`, `sched:sched_wakeup`).
    pub other_events: BTreeMap<String, u64>,
}

impl Skipped {
    /// All skipped lines.
    pub fn total(&self) -> u64 {
        self.blank
            + self.comments
            + self.lost_reports
            + self.stack
            + self.untagged
            + self.other_events.values().sum::<u64>()
    }
}

/// What the ftrace `trace` file's header block says (`trace_pipe` has none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FtraceHeader {
    /// `# tracer: NAME`.
    pub tracer: Option<String>,
    /// `# entries-in-buffer/entries-written: IN/WRITTEN   #P:CPUS`: events in the buffer.
    pub entries_in_buffer: Option<u64>,
    /// Events written, including those overwritten since.
    pub entries_written: Option<u64>,
    /// CPUs of the buffer (`#P:`).
    pub cpus: Option<u32>,
}

impl FtraceHeader {
    /// Events overwritten before the file was read (written minus in buffer), if both are known.
    pub fn overwritten(&self) -> Option<u64> {
        Some(self.entries_written?.saturating_sub(self.entries_in_buffer?))
    }
}

/// Losses of one CPU as reported by `CPU:N [LOST ...]` lines.
#[derive(Debug, Clone, Copy, Default)]
struct Lost {
    events: u64,
    without_count: u64,
}

/// A streaming importer of ftrace or perf script text; see the [module docs](self).
pub struct TextImporter<R> {
    reader: R,
    path: PathBuf,
    format: Option<TextFormat>,
    buf: Vec<u8>,
    line: u64,
    done: bool,
    pending: VecDeque<Record>,
    tasks: Tasks,
    reason_names: BTreeMap<i32, String>,
    cpus_seen: BTreeSet<u32>,
    skipped: Skipped,
    lost: BTreeMap<u32, Lost>,
    callback_symbols: BTreeMap<String, u64>,
    header: FtraceHeader,
}

impl<R: BufRead> TextImporter<R> {
    /// An importer of `reader`; `path` names the input in errors; `format` forces a format
    /// (otherwise the first event line decides).
    pub fn new(reader: R, path: impl Into<PathBuf>, format: Option<TextFormat>) -> Self {
        TextImporter {
            reader,
            path: path.into(),
            format,
            buf: Vec::with_capacity(256),
            line: 0,
            done: false,
            pending: VecDeque::with_capacity(4),
            tasks: Tasks::default(),
            reason_names: BTreeMap::new(),
            cpus_seen: BTreeSet::new(),
            skipped: Skipped::default(),
            lost: BTreeMap::new(),
            callback_symbols: BTreeMap::new(),
            header: FtraceHeader::default(),
        }
    }

    /// The format: forced, detected, or `None` while no event line has been read.
    pub fn format(&self) -> Option<TextFormat> {
        self.format
    }

    /// The input's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reason labels as the text spelt them, by reason integer (the first spelling of each).
    pub fn reason_names(&self) -> &BTreeMap<i32, String> {
        &self.reason_names
    }

    /// CPUs of the records so far, ascending (without [`UNKNOWN_CPU`]).
    pub fn cpus_seen(&self) -> Vec<u32> {
        self.cpus_seen.iter().copied().collect()
    }

    /// Lines read so far (including skipped and refused ones).
    pub fn lines_read(&self) -> u64 {
        self.line
    }

    /// Lines skipped so far, by kind.
    pub fn skipped(&self) -> &Skipped {
        &self.skipped
    }

    /// Events reported lost, per CPU, ascending. A `CPU:N [LOST EVENTS]` line without a count
    /// adds to [`Loss::pages_with_unknown_loss`] (here: reports without a count).
    pub fn lost_events(&self) -> Vec<Loss> {
        self.lost
            .iter()
            .map(|(&cpu, l)| Loss {
                cpu,
                events: l.events,
                pages_with_unknown_loss: l.without_count,
            })
            .collect()
    }

    /// Task names cut to the trace format's [`crate::MAX_COMM_BYTES`] so far (the kernel's are
    /// at most 15 bytes; a longer one in text is kept up to the limit).
    pub fn comms_cut(&self) -> u64 {
        self.tasks.cut
    }

    /// IPI callbacks printed as symbols (their records say `callback: 0`), with counts.
    pub fn callback_symbols(&self) -> &BTreeMap<String, u64> {
        &self.callback_symbols
    }

    /// The ftrace `trace` header block, as far as read.
    pub fn ftrace_header(&self) -> &FtraceHeader {
        &self.header
    }

    /// Adds what the import learnt to `trailer`: reason labels (keeping the trailer's own),
    /// CPUs seen, and losses.
    pub fn fill_trailer(&self, trailer: &mut Trailer) {
        for (r, name) in &self.reason_names {
            trailer.reason_names.entry(*r).or_insert_with(|| name.clone());
        }
        let mut cpus: BTreeSet<u32> = trailer.cpus_seen.iter().copied().collect();
        cpus.extend(&self.cpus_seen);
        trailer.cpus_seen = cpus.into_iter().collect();
        trailer.losses.extend(self.lost_events());
    }

    /// Reads the next line into `buf`: `Ok(None)` at the end, else whether it was cut.
    fn read_line(&mut self) -> io::Result<Option<bool>> {
        self.buf.clear();
        let (mut any, mut cut) = (false, false);
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(any.then_some(cut));
            }
            any = true;
            let (n, end) = match num::find_byte(available, b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            let room = MAX_LINE - self.buf.len();
            cut |= n > room;
            self.buf.extend_from_slice(&available[..n.min(room)]);
            self.reader.consume(n);
            if end {
                return Ok(Some(cut));
            }
        }
    }

    /// Turns one line into records (pushed on `pending`) or counts it.
    fn handle(&mut self, line: &[u8]) -> Result<(), LineProblem> {
        // A UTF-8 byte-order mark, if an editor added one.
        let line =
            if self.line == 1 { line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(line) } else { line };
        let (kind, found) = classify(line, self.format)?;
        match kind {
            LineKind::Blank => self.skipped.blank += 1,
            LineKind::Comment => {
                self.skipped.comments += 1;
                self.header_line(line);
            }
            LineKind::Stack => self.skipped.stack += 1,
            LineKind::Untagged => {
                self.skipped.untagged += 1;
                self.format = found;
            }
            LineKind::Lost { cpu, events } => {
                self.skipped.lost_reports += 1;
                let lost = self.lost.entry(cpu).or_default();
                match events {
                    Some(n) => lost.events = lost.events.saturating_add(n),
                    None => lost.without_count += 1,
                }
            }
            LineKind::Event(ctx) => {
                // The context decided the format, even if the body is refused.
                self.format = found;
                self.event(ctx)?;
            }
        }
        Ok(())
    }

    fn event(&mut self, ctx: Context<'_>) -> Result<(), LineProblem> {
        let Some(kind) = EventKind::of(ctx.event) else {
            let name = String::from_utf8_lossy(ctx.event);
            match self.skipped.other_events.get_mut(name.as_ref()) {
                Some(n) => *n += 1,
                None => {
                    self.skipped.other_events.insert(name.into_owned(), 1);
                }
            }
            return Ok(());
        };
        let (ts_ns, pid) = (ctx.ts_ns, ctx.pid);
        if ts_ns > crate::MAX_TS_NS {
            return Err(LineProblem::TimestampTooLate(ts_ns));
        }
        let cpu = ctx.cpu.unwrap_or(UNKNOWN_CPU);
        // Decode the body before announcing anyone, so that a refused line emits nothing.
        let record = match kind {
            EventKind::TlbFlush => {
                let b = event::tlb_flush(ctx.body)?;
                if let Some(label) = b.label {
                    self.reason_names
                        .entry(b.reason)
                        .or_insert_with(|| String::from_utf8_lossy(label).into_owned());
                }
                Record::Flush(Flush { ts_ns, cpu, pid, reason: b.reason, pages: b.pages })
            }
            EventKind::SchedSwitch => {
                let b = event::sched_switch(ctx.body)?;
                // The body's comms are the kernel's own; announce them before the context's
                // (which may be a cache placeholder).
                self.sight(ts_ns, b.prev_pid, b.prev_comm, -1);
                self.sight(ts_ns, b.next_pid, b.next_comm, -1);
                Record::Switch(Switch {
                    ts_ns,
                    cpu,
                    prev_pid: b.prev_pid,
                    prev_state: b.prev_state,
                    next_pid: b.next_pid,
                })
            }
            EventKind::IpiSendCpu | EventKind::IpiSendCpumask => {
                let b = if kind == EventKind::IpiSendCpu {
                    event::ipi_send_cpu(ctx.body)?
                } else {
                    event::ipi_send_cpumask(ctx.body)?
                };
                if let Some(sym) = b.callback_symbol {
                    *self
                        .callback_symbols
                        .entry(String::from_utf8_lossy(sym).into_owned())
                        .or_default() += 1;
                }
                Record::IpiSend(IpiSend {
                    ts_ns,
                    cpu,
                    pid,
                    targets: b.targets,
                    callback: b.callback.unwrap_or(0),
                })
            }
            EventKind::CallFunction { entry, single } => Record::CallFunction(CallFunction {
                ts_ns,
                cpu,
                pid,
                vector: event::call_function_vector(ctx.body)?,
                entry,
                single,
            }),
        };
        if let Some(comm) = ctx.comm {
            self.sight(ts_ns, pid, comm, ctx.tgid);
        }
        if let Some(cpu) = ctx.cpu {
            self.cpus_seen.insert(cpu);
        }
        self.pending.push_back(record);
        Ok(())
    }

    fn sight(&mut self, ts_ns: u64, pid: i32, comm: &[u8], tgid: i32) {
        if let Some(task) = self.tasks.sight(ts_ns, pid, comm, tgid) {
            self.pending.push_back(Record::Task(task));
        }
    }

    /// Reads `# tracer:` and `# entries-in-buffer/entries-written:` of an ftrace header.
    fn header_line(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if let Some(t) = text.strip_prefix("# tracer:") {
            self.header.tracer = Some(t.trim().to_string());
        } else if let Some(rest) = text.strip_prefix("# entries-in-buffer/entries-written:") {
            let mut parts = rest.split_whitespace();
            if let Some((inb, written)) = parts.next().and_then(|p| p.split_once('/')) {
                self.header.entries_in_buffer = inb.parse().ok();
                self.header.entries_written = written.parse().ok();
            }
            self.header.cpus =
                parts.find_map(|p| p.strip_prefix("#P:")).and_then(|n| n.parse().ok());
        }
    }
}

impl<R: BufRead> Iterator for TextImporter<R> {
    type Item = Result<Record, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Some(Ok(r));
            }
            if self.done {
                return None;
            }
            let cut = match self.read_line() {
                Ok(Some(cut)) => cut,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(source) => {
                    // An I/O error may repeat forever; it ends the import.
                    self.done = true;
                    let line = self.line + 1;
                    return Some(Err(ImportError::Read { path: self.path.clone(), line, source }));
                }
            };
            self.line += 1;
            let line = std::mem::take(&mut self.buf);
            let result = if cut { Err(LineProblem::TooLong(MAX_LINE)) } else { self.handle(&line) };
            let err =
                result.err().map(|p| ImportError::line_error(&self.path, self.line, p, &line));
            self.buf = line;
            if let Some(e) = err {
                return Some(Err(e));
            }
        }
    }
}
