//! What a flush trace holds: a header, then records in time order, then a trailer.
//!
//! The records mirror the kernel events they come from, with their integer fields as the kernel
//! stores them (reasons as `enum tlb_flush_reason` values, `pages` with -1 for
//! `TLB_FLUSH_ALL`), so that a trace recorded from the ring buffer and one imported from text
//! say the same thing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `pages` of a full flush (`TLB_FLUSH_ALL`, `-1UL` printed with `%ld`).
pub const FLUSH_ALL: i64 = -1;

/// The kernel's `enum tlb_flush_reason` (include/linux/mm_types.h, 6.18). Traces key on these
/// integers; labels differ between kernels and are kept in [`Header::reason_names`].
pub mod reason {
    /// `TLB_FLUSH_ON_TASK_SWITCH`: `switch_mm_irqs_off()` loaded an mm (-1: with a flush, 0:
    /// an up-to-date ASID reused).
    pub const TASK_SWITCH: i32 = 0;
    /// `TLB_REMOTE_SHOOTDOWN`: `flush_tlb_func()` on a CPU that received the request.
    pub const REMOTE_SHOOTDOWN: i32 = 1;
    /// `TLB_LOCAL_SHOOTDOWN`: `flush_tlb_func()` on the initiator for a batched reclaim flush.
    pub const LOCAL_SHOOTDOWN: i32 = 2;
    /// `TLB_LOCAL_MM_SHOOTDOWN`: `flush_tlb_func()` on the initiator for its own mm.
    pub const LOCAL_MM_SHOOTDOWN: i32 = 3;
    /// `TLB_REMOTE_SEND_IPI`: `native_flush_tlb_multi()` on the initiator, before any IPI
    /// (pages in 4 KiB units; emitted even when no IPI is sent, e.g. under paravirtual flush).
    pub const REMOTE_SEND_IPI: i32 = 4;
    /// `TLB_REMOTE_WRONG_CPU` (6.14+): the request reached a CPU that no longer runs its mm.
    pub const REMOTE_WRONG_CPU: i32 = 5;

    /// The 6.18 name of a reason value (the enum constant without `TLB_`), for reasons the
    /// trace did not label.
    pub fn kernel_name(reason: i32) -> Option<&'static str> {
        Some(match reason {
            TASK_SWITCH => "flush on task switch",
            REMOTE_SHOOTDOWN => "remote shootdown",
            LOCAL_SHOOTDOWN => "local shootdown",
            LOCAL_MM_SHOOTDOWN => "local MM shootdown",
            REMOTE_SEND_IPI => "remote IPI send",
            REMOTE_WRONG_CPU => "remote wrong CPU",
            _ => return None,
        })
    }
}

/// One `tlb:tlb_flush` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flush {
    /// Timestamp, ns (of the trace clock named in the header).
    pub ts_ns: u64,
    /// The CPU that flushed (for reason 4: that sent the request).
    pub cpu: u32,
    /// The thread that was running (`common_pid`; in an IPI handler, whoever was interrupted).
    pub pid: i32,
    /// `enum tlb_flush_reason` value (see [`reason`]).
    pub reason: i32,
    /// Entries flushed in stride units, [`FLUSH_ALL`] for a full flush; 4 KiB pages for
    /// reason 4.
    pub pages: i64,
}

/// One `sched:sched_switch` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switch {
    /// Timestamp, ns.
    pub ts_ns: u64,
    /// The CPU.
    pub cpu: u32,
    /// The thread switched out (0: idle).
    pub prev_pid: i32,
    /// Its state as the kernel stores it (`prev_state`: the `TASK_REPORT` bits, 0 = runnable,
    /// 0x100 = `TASK_REPORT_MAX` = preempted, printed `R+`).
    pub prev_state: i64,
    /// The thread switched in (0: idle).
    pub next_pid: i32,
}

/// What an IPI-send event asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpiSend {
    /// Timestamp, ns.
    pub ts_ns: u64,
    /// The sending CPU.
    pub cpu: u32,
    /// The sending thread.
    pub pid: i32,
    /// Target CPUs (`ipi:ipi_send_cpu`'s `cpu`, or `ipi:ipi_send_cpumask`'s mask).
    pub targets: Vec<u32>,
    /// The function the targets will run (`callback`; 0 if the kernel did not say).
    pub callback: u64,
}

/// `irq_vectors:call_function{,_single}_{entry,exit}`: a CPU running (or done with) the
/// function-call IPI handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFunction {
    /// Timestamp, ns.
    pub ts_ns: u64,
    /// The CPU.
    pub cpu: u32,
    /// The interrupted thread.
    pub pid: i32,
    /// The interrupt vector.
    pub vector: i32,
    /// Entry (true) or exit.
    pub entry: bool,
    /// `call_function_single` (one target) rather than `call_function`.
    pub single: bool,
}

/// What is known about a thread: its process (thread group) and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// Timestamp from which this holds, ns (first sight, a fork, or an exec).
    pub ts_ns: u64,
    /// Thread id.
    pub pid: i32,
    /// Thread-group id (the process); -1 if unknown.
    pub tgid: i32,
    /// `comm`.
    pub comm: String,
}

/// An event of a kind the trace does not decode (kept so that counts and rates are whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Other {
    /// Timestamp, ns.
    pub ts_ns: u64,
    /// The CPU.
    pub cpu: u32,
    /// The running thread.
    pub pid: i32,
    /// Its event id on the recording kernel (`common_type`); see [`Header::event_ids`].
    pub event_id: u16,
}

/// One record of a trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    /// `tlb:tlb_flush`.
    Flush(Flush),
    /// `sched:sched_switch`.
    Switch(Switch),
    /// `ipi:ipi_send_cpu` / `ipi:ipi_send_cpumask`.
    IpiSend(IpiSend),
    /// `irq_vectors:call_function*`.
    CallFunction(CallFunction),
    /// A thread's process and name.
    Task(Task),
    /// Another event.
    Other(Other),
}

impl Record {
    /// The record's timestamp, ns.
    pub fn ts_ns(&self) -> u64 {
        match self {
            Record::Flush(r) => r.ts_ns,
            Record::Switch(r) => r.ts_ns,
            Record::IpiSend(r) => r.ts_ns,
            Record::CallFunction(r) => r.ts_ns,
            Record::Task(r) => r.ts_ns,
            Record::Other(r) => r.ts_ns,
        }
    }
}

/// Where a trace came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// `tlblab trace record` from the ring buffer.
    Recorded,
    /// Imported from ftrace text (`trace` or `trace_pipe`).
    FtraceText,
    /// Imported from `perf script` output.
    PerfScript,
}

/// What a trace says about itself; stored as JSON at the start of the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// How it was made.
    pub origin: Origin,
    /// The tlblab version that wrote it.
    pub tlblab_version: String,
    /// The input file, for imports.
    pub source_path: Option<String>,
    /// The command traced (`-- CMD ARGS`), if any.
    pub command: Option<Vec<String>>,
    /// Whether only the command's process tree was recorded (`--only-cmd`).
    pub only_command: bool,
    /// `uname -r` of the recording kernel, when known.
    pub kernel_release: Option<String>,
    /// Host name, when known.
    pub hostname: Option<String>,
    /// The trace clock (`mono`, `local`, `global`…; `unknown` for imports without one).
    pub clock: String,
    /// The CPUs that were online (recorded), or that appear in the input (imports).
    pub cpus: Vec<u32>,
    /// The kernel's label of each reason value (from the format file, or as the text spelt it).
    pub reason_names: BTreeMap<i32, String>,
    /// The events enabled (`system:name`).
    pub events: Vec<String>,
    /// `common_type` id → `system:name` for every event the recording kernel could emit into the
    /// trace (so [`Other`] records can be named).
    pub event_ids: BTreeMap<u16, String>,
    /// The per-CPU buffer size, KiB (recorded).
    pub buffer_size_kb: Option<u32>,
    /// Wall-clock start, ns since the Unix epoch.
    pub started_unix_ns: Option<u64>,
    /// Anything the recorder or importer wants the reader to know.
    pub notes: Vec<String>,
    /// The recording machine's CPU, from `/proc/cpuinfo` (recorded traces since this field was
    /// added; absent in older files and in imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuInfo>,
}

/// The recording machine's CPU as `/proc/cpuinfo` shows it on its first processor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// `vendor_id` (`GenuineIntel`, `AuthenticAMD`).
    pub vendor: String,
    /// `model name`.
    pub model_name: String,
    /// `cpu family`, when shown.
    #[serde(default)]
    pub family: Option<u32>,
    /// `model`, when shown.
    #[serde(default)]
    pub model: Option<u32>,
    /// The flags that change how the kernel flushes, and so what a trace can hold, among
    /// [`CpuInfo::TLB_FLAGS`], in that order, as `/proc/cpuinfo` showed them.
    pub flags: Vec<String>,
}

impl CpuInfo {
    /// The `/proc/cpuinfo` flags kept: `pcid` and `invpcid` (ASIDs, per-PCID flushes), `pti`
    /// (two PCIDs per mm), `invlpgb` (AMD broadcast invalidation, used by Linux 6.15+),
    /// `hypervisor` (a guest, where flushes may be paravirtual).
    pub const TLB_FLAGS: &'static [&'static str] =
        &["pcid", "invpcid", "pti", "invlpgb", "hypervisor"];

    /// Reads the first processor of a `/proc/cpuinfo` text; `None` without a `vendor_id`.
    pub fn parse(cpuinfo: &str) -> Option<CpuInfo> {
        let mut info = CpuInfo::default();
        let mut flags: Vec<&str> = Vec::new();
        for line in cpuinfo.lines() {
            if line.trim().is_empty() && !info.vendor.is_empty() {
                break;
            }
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            match key.trim() {
                "vendor_id" => info.vendor = value.to_string(),
                "model name" => info.model_name = value.to_string(),
                "cpu family" => info.family = value.parse().ok(),
                "model" => info.model = value.parse().ok(),
                "flags" => flags = value.split_whitespace().collect(),
                _ => {}
            }
        }
        info.flags = Self::TLB_FLAGS
            .iter()
            .filter(|f| flags.contains(f))
            .map(|f| (*f).to_string())
            .collect();
        (!info.vendor.is_empty()).then_some(info)
    }

    /// Whether `flag` is among the flags kept.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }
}

/// `major.minor` of a `uname -r` string (`6.18.44-fc` → (6, 18)).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

impl Header {
    /// A header with the given origin and nothing else known.
    pub fn new(origin: Origin) -> Header {
        Header {
            origin,
            tlblab_version: env!("CARGO_PKG_VERSION").to_string(),
            source_path: None,
            command: None,
            only_command: false,
            kernel_release: None,
            hostname: None,
            clock: "unknown".into(),
            cpus: Vec::new(),
            reason_names: BTreeMap::new(),
            events: Vec::new(),
            event_ids: BTreeMap::new(),
            buffer_size_kb: None,
            started_unix_ns: None,
            notes: Vec::new(),
            cpu: None,
        }
    }

    /// Whether the recording machine may have flushed with AMD INVLPGB instead of IPIs: its CPU
    /// shows the `invlpgb` flag and its kernel is 6.15 or later (`CONFIG_BROADCAST_TLB_FLUSH`),
    /// or of unknown version. Such flushes never reach `tlb:tlb_flush` (docs/tracer.md).
    /// `None` when the header does not say (an import, or a file from before the CPU was
    /// recorded).
    pub fn broadcast_flush(&self) -> Option<bool> {
        let cpu = self.cpu.as_ref()?;
        let version = self.kernel_release.as_deref().and_then(kernel_version);
        Some(cpu.has("invlpgb") && version.is_none_or(|v| v >= (6, 15)))
    }

    /// The label of a reason: the trace's own, else the 6.18 one, else `reason N`.
    pub fn reason_label(&self, reason: i32) -> String {
        self.reason_names
            .get(&reason)
            .cloned()
            .or_else(|| self::reason::kernel_name(reason).map(str::to_string))
            .unwrap_or_else(|| format!("reason {reason}"))
    }
}

/// Events lost on one CPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loss {
    /// The CPU.
    pub cpu: u32,
    /// Events known lost (overwritten or dropped).
    pub events: u64,
    /// Pages that said events were lost without saying how many (then `events` is a lower
    /// bound).
    pub pages_with_unknown_loss: u64,
}

/// How a recording ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The duration elapsed, the command exited, or the input ended.
    #[default]
    Complete,
    /// Stopped by a signal (SIGINT/SIGTERM); everything read until then is kept.
    Interrupted {
        /// The signal's name.
        signal: String,
    },
    /// Stopped by an error after the header was written.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// What a trace says at its end; stored as JSON after the last record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailer {
    /// How the recording ended.
    pub end: End,
    /// Records written.
    pub records: u64,
    /// Lost events per CPU (recorded traces; empty for imports).
    pub losses: Vec<Loss>,
    /// Wall-clock duration of the recording, ns.
    pub duration_ns: Option<u64>,
    /// The traced command's exit status (`-- CMD`): its exit code, or 128 + signal.
    pub command_status: Option<i32>,
    /// Reason labels learnt while writing (imports spell them in the text; a recorded trace has
    /// them all in the header). [`Header::reason_label`] should look here too: see
    /// [`Trailer::merge_into`].
    pub reason_names: BTreeMap<i32, String>,
    /// CPUs seen in the records.
    pub cpus_seen: Vec<u32>,
    /// The kernel's own count of shootdowns received while recording (recorded traces).
    #[serde(default)]
    pub interrupts: Option<InterruptCounts>,
}

/// `/proc/interrupts` increments from the start of tracing to its end: the kernel's own count
/// to check the trace against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptCounts {
    /// The CPUs of the columns.
    pub cpus: Vec<u32>,
    /// `TLB` ("TLB shootdowns": remote `flush_tlb_func()` calls) per CPU; `None` without the
    /// row (not x86).
    pub tlb: Option<Vec<u64>>,
    /// `CAL` (function-call IPIs) per CPU.
    pub cal: Option<Vec<u64>>,
}

impl Trailer {
    /// Events known lost on all CPUs.
    pub fn lost_events(&self) -> u64 {
        self.losses.iter().map(|l| l.events).sum()
    }

    /// Adds what the trailer learnt (reason labels, CPUs) to `header`, keeping the header's own
    /// where both have one.
    pub fn merge_into(&self, header: &mut Header) {
        for (r, name) in &self.reason_names {
            header.reason_names.entry(*r).or_insert_with(|| name.clone());
        }
        for cpu in &self.cpus_seen {
            if let Err(at) = header.cpus.binary_search(cpu) {
                header.cpus.insert(at, *cpu);
            }
        }
    }
}
