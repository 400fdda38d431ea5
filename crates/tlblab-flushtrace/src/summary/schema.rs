//! The summary as data: what `tlblab trace report --json` prints (schema
//! [`SCHEMA`](super::SCHEMA)). Every count is of trace records; every derived figure (percent,
//! rate) is computed from the counts next to it, so a reader can check it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{End, Loss, Origin};

/// The summary of one trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `tlblab.trace.report/1`.
    pub schema: String,
    /// Where the trace came from.
    pub trace: TraceInfo,
    /// Record counts, time span, losses and how the recording ended.
    pub totals: Totals,
    /// `tlb:tlb_flush` events by reason, ascending reason values (only reasons that occur).
    pub reasons: Vec<ReasonCount>,
    /// The CPUs of the per-CPU tables: the header's online CPUs and those seen in the records.
    pub cpus: Vec<u32>,
    /// Shootdowns sent against received.
    pub remote: Remote,
    /// Pages per flush.
    pub sizes: FlushSizes,
    /// `tlb_flush` events over time.
    pub rate: Rate,
    /// The processes with the most `tlb_flush` events.
    pub processes: Processes,
    /// What may make the figures wrong (lost events, an interrupted recording…).
    pub warnings: Vec<String>,
    /// Plain-language readings of the figures (e.g. why sends and receipts differ).
    pub notes: Vec<String>,
}

/// What the trace's header says about where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceInfo {
    /// Recorded or imported.
    pub origin: Origin,
    /// The imported file, if any.
    pub source_path: Option<String>,
    /// The tlblab version that wrote the trace.
    pub tlblab_version: String,
    /// `uname -r` of the recording kernel.
    pub kernel_release: Option<String>,
    /// Host name.
    pub hostname: Option<String>,
    /// The trace clock.
    pub clock: String,
    /// The events enabled.
    pub events: Vec<String>,
    /// The per-CPU buffer size, KiB.
    pub buffer_size_kb: Option<u32>,
    /// The header's own notes.
    pub header_notes: Vec<String>,
    /// The recording machine's CPU (absent in imports and older recordings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<crate::model::CpuInfo>,
    /// Whether the recording machine may have flushed with INVLPGB broadcasts, which the
    /// tracepoint never sees (the `invlpgb` CPU flag on Linux 6.15+); absent when the header
    /// does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_flush: Option<bool>,
}

/// Record counts, time span, losses and end status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Records summarised.
    pub records: u64,
    /// Records the trailer says were written (differs from `records` if the file was cut).
    pub records_in_trailer: u64,
    /// `tlb:tlb_flush` records.
    pub flush_events: u64,
    /// Flushes CPUs performed: reasons 1, 2 and 3.
    pub flushes_performed: u64,
    /// `sched:sched_switch` records.
    pub switch_records: u64,
    /// `ipi:ipi_send_*` records.
    pub ipi_send_records: u64,
    /// `irq_vectors:call_function*` records (entries and exits).
    pub call_function_records: u64,
    /// Task (pid → process, name) records.
    pub task_records: u64,
    /// Records of events the trace does not decode.
    pub other_records: u64,
    /// The earliest timestamp, ns (trace clock); `None` for an empty trace.
    pub first_ts_ns: Option<u64>,
    /// The latest timestamp, ns.
    pub last_ts_ns: Option<u64>,
    /// `last_ts_ns - first_ts_ns`.
    pub span_ns: u64,
    /// Records whose timestamp is earlier than the record before them.
    pub out_of_order: u64,
    /// Wall-clock duration of the recording, ns (from the trailer).
    pub duration_ns: Option<u64>,
    /// Events known lost, all CPUs.
    pub lost_events: u64,
    /// Lost events per CPU (the trailer's list).
    pub losses: Vec<Loss>,
    /// How the recording ended.
    pub end: End,
    /// The traced command (`-- CMD ARGS`).
    pub command: Option<Vec<String>>,
    /// Whether only the command's process tree was recorded.
    pub only_command: bool,
    /// The command's exit code, or 128 + signal.
    pub command_status: Option<i32>,
}

/// `tlb_flush` events of one reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasonCount {
    /// `enum tlb_flush_reason` value.
    pub reason: i32,
    /// Its label (the trace's own, else the 6.18 one).
    pub label: String,
    /// Events.
    pub events: u64,
    /// Percent of all `tlb_flush` events.
    pub percent: f64,
    /// Events per CPU (CPUs without any are left out).
    pub per_cpu: BTreeMap<u32, u64>,
}

/// Shootdowns sent (reason 4) against received (reason 1) and wasted (reason 5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remote {
    /// Reason 4 events: `native_flush_tlb_multi()` calls (not IPIs; see the notes).
    pub sends: u64,
    /// Reason 1 events: flushes done in the IPI handler of a receiving CPU.
    pub received: u64,
    /// Reason 5 events: requests that reached a CPU no longer running the mm.
    pub wrong_cpu: u64,
    /// `received / sends`, when there were sends.
    pub received_per_send: Option<f64>,
    /// From `ipi:ipi_send_*` records, when the trace has any.
    pub ipi: Option<IpiCounts>,
    /// The kernel's own counts over the recording (`/proc/interrupts`; recorded traces).
    pub interrupts: Option<KernelInterrupts>,
}

/// `/proc/interrupts` increments over the recording, from the trailer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInterrupts {
    /// `TLB` row, all CPUs: flush requests handled on a CPU other than the initiator (counted
    /// before `flush_tlb_func()` decides whether there is anything to do). `None` without the
    /// row.
    pub tlb: Option<u64>,
    /// `CAL` row, all CPUs: function-call IPIs.
    pub cal: Option<u64>,
    /// `TLB` per CPU.
    pub tlb_per_cpu: BTreeMap<u32, u64>,
    /// `CAL` per CPU.
    pub cal_per_cpu: BTreeMap<u32, u64>,
}

/// What the IPI events say.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpiCounts {
    /// `ipi:ipi_send_cpu` / `ipi:ipi_send_cpumask` records (every kind of IPI, not only TLB
    /// shootdowns).
    pub send_records: u64,
    /// Target CPUs requested, summed over the records.
    pub targets: u64,
    /// `call_function{,_single}_entry` records: function-call IPI handlers run.
    pub call_function_entries: u64,
}

/// Pages per flush.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlushSizes {
    /// Flushes CPUs performed (reasons 1, 2, 3), in stride-sized entries.
    pub performed: SizeHistogram,
    /// Every reason on its own (reason 0: -1 flushed on switch, 0 reused an up-to-date ASID;
    /// reason 4: 4 KiB pages requested).
    pub by_reason: BTreeMap<i32, SizeHistogram>,
}

/// A histogram of `pages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeHistogram {
    /// Events counted.
    pub events: u64,
    /// Rows in order: full, 0, exact values 1..=64 that occur, then power-of-two ranges.
    pub rows: Vec<SizeRow>,
}

/// One row of a [`SizeHistogram`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeRow {
    /// `full`, `0`, `17`, `65-128`, … (`negative` for values below -1, which the kernel never
    /// writes).
    pub pages: String,
    /// Smallest `pages` value of the row (-1 for full).
    pub min: i64,
    /// Largest `pages` value of the row.
    pub max: i64,
    /// Events in the row.
    pub events: u64,
    /// Percent of the histogram's events.
    pub percent: f64,
    /// Percent of the histogram's events in this row and the rows above it.
    pub cumulative_percent: f64,
}

/// How the rate table's interval was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalChoice {
    /// Chosen to give at most 60 buckets at a width of 1, 2 or 5 × 10^k ns.
    Auto,
    /// As requested.
    Requested,
    /// Requested, but doubled until the trace fit in the bucket limit.
    Widened {
        /// The interval asked for, ns.
        requested_ns: u64,
    },
}

/// `tlb_flush` events per fixed-width interval, from the first record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// The interval, ns.
    pub interval_ns: u64,
    /// How it was chosen.
    pub interval: IntervalChoice,
    /// The first record's timestamp, ns: bucket offsets count from here.
    pub origin_ts_ns: Option<u64>,
    /// The buckets, in time order (none for an empty trace).
    pub buckets: Vec<RateBucket>,
}

/// One interval of a [`Rate`] table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateBucket {
    /// Start, ns from the first record.
    pub start_ns: u64,
    /// End, ns from the first record: `start + interval`, or the last record for the last bucket
    /// (which then covers less than the interval; its rates are still per full interval).
    pub end_ns: u64,
    /// Events in the bucket.
    pub events: GroupCounts,
    /// Events per second: `events / interval`.
    pub per_second: GroupRates,
}

/// `tlb_flush` events by reason group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupCounts {
    /// Reasons 2 and 3: flushes on the initiating CPU.
    pub initiated: u64,
    /// Reason 4: remote flush requests.
    pub sends: u64,
    /// Reason 1: flushes in a receiving CPU's IPI handler.
    pub received: u64,
    /// Reason 0: on task switch.
    pub switch: u64,
    /// Reason 5 and any other value.
    pub other: u64,
}

/// [`GroupCounts`] per second.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupRates {
    /// Reasons 2 and 3.
    pub initiated: f64,
    /// Reason 4.
    pub sends: f64,
    /// Reason 1.
    pub received: f64,
    /// Reason 0.
    pub switch: f64,
    /// Reason 5 and others.
    pub other: f64,
}

/// Flush events by process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Processes {
    /// Processes (or threads of unknown process) with at least one `tlb_flush` event.
    pub count: u64,
    /// The top ones by total events, ties by ascending tgid then pid.
    pub top: Vec<ProcessRow>,
    /// The others together (`None` when none are left out).
    pub rest: Option<ProcessRest>,
}

/// The processes left out of [`Processes::top`], together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRest {
    /// How many.
    pub processes: u64,
    /// Their threads seen with events.
    pub threads: u64,
    /// Their events by group.
    pub events: GroupCounts,
    /// All their `tlb_flush` events.
    pub total: u64,
}

/// One process's `tlb_flush` events. Each event is attributed to `common_pid`, the thread running
/// when it fired: for reason 1 the thread the IPI interrupted (often idle, pid 0, or an
/// unrelated task), for reason 0 the thread being switched out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRow {
    /// The thread-group id; -1 if no task record said (then `pid` is the thread's).
    pub tgid: i32,
    /// The thread, when the process is unknown.
    pub pid: Option<i32>,
    /// The name: the group leader's last known `comm`, else the lowest-numbered named
    /// thread's; empty if unknown.
    pub comm: String,
    /// Threads seen with events.
    pub threads: u64,
    /// Events by group (reasons 2+3, 4, 1, 0, others).
    pub events: GroupCounts,
    /// All its `tlb_flush` events.
    pub total: u64,
}
