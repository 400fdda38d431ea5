//! Live costs of Linux kernel code paths on the machine this runs on, for the `host` machine
//! preset (tlblab-host): each a **path** timed in a loop of its own, never a scenario's loop.
//!
//! | name | one operation |
//! |---|---|
//! | `null_syscall` | `getppid()` |
//! | `minor_fault_zero` | first read of a fresh anonymous page (`MADV_NOHUGEPAGE`): maps the zero page |
//! | `minor_fault_anon` | first write of such a page: allocate, zero, map |
//! | `minor_fault_anon_hot` | first write of one of 256 pages that an untimed `MADV_DONTNEED` of all of them freed just before, again and again: each fault gets a frame this CPU freed a moment ago |
//! | `madvise_empty` | `madvise(MADV_DONTNEED)` of 64 pages none of which is present: syscall, `mmap_lock` and VMA walk; no zap, no flush |
//! | `dontneed_16` | `MADV_DONTNEED` of 16 present pages, their writes untimed: below the flush ceiling, one `INVLPG` per page; with `dontneed_1`, the cost of one more page of a ranged flush |
//! | `dontneed_64`, `dontneed_256` | `MADV_DONTNEED` of 64 / 256 present pages (the writes that make them present are not timed): both flush fully, so their difference is 192 zaps |
//! | `mprotect_1`, `mprotect_64`, `mprotect_256` | `mprotect` of 1 / 64 / 256 present pages, read-only and read-write by turns: each call changes every PTE and flushes (one page by `INVLPG`, 64 and 256 fully, so their difference is 192 PTE changes) |
//! | `mprotect_empty` | `mprotect` of a 1-page VMA never touched, read-only and read-write by turns: the syscall and its VMA work, no PTE changed, nothing flushed |
//! | `mprotect_2_near`, `mprotect_2_far` | `mprotect` of a 34-page VMA whose only present pages are its first two, or its first and last, read-only and read-write by turns: the same two PTE changes, flushed by two `INVLPG`s, or fully (their range exceeds the ceiling of 33) |
//! | `reread_after_none`, `reread_after_invlpg`, `reread_after_flush` | per page: one byte read from each of 64 present pages of another region right after an `mprotect` that flushed nothing (a page never touched), one page (one `INVLPG`), or everything (64 pages, a CR3 write); only the reads timed: whether a one-page flush keeps other pages' translations |
//! | `mmap_munmap_untouched` | `mmap` + `munmap` of 16 untouched pages: no zap, no flush |
//! | `thread_switch` | per switch: two threads of this process on one CPU pass a token through eventfds (same mm) |
//! | `line_pingpong` | per transfer: a counter alone in its cache line, passed to a thread spinning on the other CPU and back (each side waits for the other's store and answers with the next value), half the round trip |
//! | `thread_wake_remote` | per pass: the same token passing with the partner thread on the other CPU, so each pass wakes a thread whose CPU went idle when it blocked |
//! | `membarrier_ipi` | `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` with a sibling thread spinning on the other CPU: one IPI round trip; runs that delivered fewer than 0.99 `CAL` interrupts per call are dropped |
//! | `membarrier_no_ipi` | the same with the sibling blocked in `read()`: no IPI, the syscall alone |
//! | `ipi_call_remote` | `PERF_EVENT_IOC_ENABLE`/`_DISABLE`, alternately, of a software perf event bound to the other CPU, where a sibling spins: `smp_call_function_single(…, wait = 1)`, one synchronous IPI round trip; runs that delivered fewer than 0.99 `CAL` interrupts per call are dropped |
//! | `ipi_call_local` | the same with the event on the own CPU: the function called directly, no IPI |
//! | `shootdown_target` | per flush IPI received: the time a sibling thread spinning in user mode on the other CPU loses while this thread `MADV_DONTNEED`s one present page of their shared mm (each call one shootdown IPI to it); the sibling's clock gaps of 0.5–200 µs, summed, over the `TLB` interrupts it received; runs that delivered fewer than 0.99 per call are dropped |
//! | `pipe_pair`, `socket_pair` | a 100-byte `write()` into a pipe (an `AF_UNIX` stream socket pair) and its `read()`, one thread: no wake-up |
//! | `pipe_remote_read`, `socket_remote_read` | per message: batches of 64 100-byte messages written here and read by a thread on the other CPU that spins for its turn (no wake-up), less the same batches written and read here, alternating: what reading a message another CPU wrote costs more |
//! | `pipe_queued`, `socket_queued` | per message: one thread writes 200 100-byte messages into each of 20 pipes (socket pairs) in turn, as hackbench's senders do, then reads each channel empty; less the same messages written and read with one queued per channel, alternating: what a message costs more, written and read, when [`QUEUED_SINCE_MEAN`] others on average were written between them |
//! | `pipe_write` | a 100-byte pipe `write()` timed alone, nobody waiting (its read untimed) |
//! | `pipe_wake_local`, `pipe_wake_remote` | the same write timed alone while a `SCHED_BATCH` reader is blocked in `read()` on the own (other) CPU: the write's wake-up; runs where the reader did not block before every write are dropped |
//! | `vmexit_cpuid` | `CPUID` leaf 0 (`std::arch::x86_64::__cpuid`): in a guest, a VM-exit round trip |
//! | `migrate` | `sched_setaffinity` to the other CPU (alternating), checked with `sched_getcpu` |
//! | `fork_exit` | by a child of the measuring process that withholds from its own children (`MADV_DONTFORK`) the private anonymous memory it inherited, but the stack it runs on: `clone(SIGCHLD)` (the kernel's fork, without the C library's handlers); the child `_exit(0)`s; the measurer `waitpid`s. A small process's fork and exit, whatever the measuring process's size; with the anonymous pages it still passes on (`/proc/self/smaps`: stacks, file mappings' private copies) |
//! | `fork_exit_grown` | the same, alternating run by run with `fork_exit`, with [`FORK_GROWN_PAGES`] written pages of private anonymous memory passed on too: with `fork_exit`, the cost per page, and so the fork and exit of a process with none |
//!
//! Method (as `tools/calibrate/kernel_costs.c`, whose code is not reused): a thread of its own,
//! pinned to the first CPU this process may use (the remote CPU is the second); the operation
//! count is calibrated until a run lasts [`Options::min_run`] (which warms up), then one untimed
//! warm-up run and [`Options::runs`] timed runs, each timed with `CLOCK_MONOTONIC`
//! (`std::time::Instant`); the figure is the median per-operation time and its p10–p90. Paths
//! that need two CPUs fail with the reason on one. The whole takes a few seconds and is cached
//! ([`cache`]) per CPU model and signature, kernel release and version of this code.
#![deny(missing_docs)]

pub mod cache;
mod error;
pub mod loops;
pub mod measure;
pub mod sequences;
pub mod stats;
pub mod steal;
mod sys;

pub use cache::{cached_or_measure_in, measure_into, CacheKey, Cached};
pub use error::PathCostError;
pub use loops::{MeasuredLoop, MEASURED_LOOPS};
pub use measure::{measure_all, Options};
pub use stats::Measurement;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The measurement names.
pub mod names {
    /// `getppid()`.
    pub const NULL_SYSCALL: &str = "null_syscall";
    /// First read of a fresh anonymous page.
    pub const FAULT_ZERO: &str = "minor_fault_zero";
    /// First write of a fresh anonymous page.
    pub const FAULT_ANON: &str = "minor_fault_anon";
    /// First write of a page that a `MADV_DONTNEED` of the loop's pages just freed.
    pub const FAULT_ANON_HOT: &str = "minor_fault_anon_hot";
    /// `MADV_DONTNEED` of a range with no present page.
    pub const MADVISE_EMPTY: &str = "madvise_empty";
    /// `MADV_DONTNEED` of one present page.
    pub const DONTNEED_ONE: &str = "dontneed_1";
    /// `MADV_DONTNEED` of [`crate::measure::ZAP_RANGE`] present pages (a ranged flush).
    pub const DONTNEED_RANGE: &str = "dontneed_16";
    /// `MADV_DONTNEED` of [`crate::measure::ZAP_SMALL`] present pages.
    pub const DONTNEED_SMALL: &str = "dontneed_64";
    /// `MADV_DONTNEED` of [`crate::measure::ZAP_LARGE`] present pages.
    pub const DONTNEED_LARGE: &str = "dontneed_256";
    /// `mprotect` of one present page (read-only and read-write by turns).
    pub const MPROTECT_ONE: &str = "mprotect_1";
    /// `mprotect` of [`crate::measure::ZAP_SMALL`] present pages.
    pub const MPROTECT_SMALL: &str = "mprotect_64";
    /// `mprotect` of [`crate::measure::ZAP_LARGE`] present pages.
    pub const MPROTECT_LARGE: &str = "mprotect_256";
    /// `mprotect` of a page never touched: the syscall and its VMA work, no PTE to change,
    /// nothing to flush.
    pub const MPROTECT_EMPTY: &str = "mprotect_empty";
    /// `mprotect` of a [`crate::measure::PAIR_SPAN`]-page VMA whose only present pages are its
    /// first two: two PTEs changed, flushed by two INVLPGs.
    pub const MPROTECT_PAIR_NEAR: &str = "mprotect_2_near";
    /// The same with the two present pages at the VMA's ends: the same two PTEs changed,
    /// flushed fully (their range exceeds the ceiling).
    pub const MPROTECT_PAIR_FAR: &str = "mprotect_2_far";
    /// Per page, reading [`crate::measure::REREAD_PAGES`] present pages right after an
    /// `mprotect` that flushed nothing.
    pub const REREAD_AFTER_NONE: &str = "reread_after_none";
    /// The same right after a one-page flush (one `INVLPG` of another page).
    pub const REREAD_AFTER_INVLPG: &str = "reread_after_invlpg";
    /// The same right after a full flush.
    pub const REREAD_AFTER_FLUSH: &str = "reread_after_flush";
    /// `mmap` + `munmap` of an untouched region.
    pub const MMAP_MUNMAP: &str = "mmap_munmap_untouched";
    /// `munmap` of the untouched upper page of a 2-page VMA (`__split_vma()`).
    pub const MUNMAP_SPLIT: &str = "munmap_split";
    /// A same-mm thread switch (per switch).
    pub const THREAD_SWITCH: &str = "thread_switch";
    /// The same token passing with the partner on the other CPU (per pass): a wake-up of an
    /// idle CPU.
    pub const THREAD_WAKE_REMOTE: &str = "thread_wake_remote";
    /// `membarrier` with a spinning sibling: an IPI round trip.
    pub const MEMBARRIER_IPI: &str = "membarrier_ipi";
    /// `membarrier` with a blocked sibling: no IPI.
    pub const MEMBARRIER_NO_IPI: &str = "membarrier_no_ipi";
    /// A perf event on the other CPU enabled or disabled: a synchronous cross-CPU call (one
    /// IPI round trip).
    pub const IPI_CALL_REMOTE: &str = "ipi_call_remote";
    /// The same on the own CPU: the function called directly, no IPI.
    pub const IPI_CALL_LOCAL: &str = "ipi_call_local";
    /// What a running target loses per shootdown IPI: a spinning sibling's stolen time while
    /// this thread `MADV_DONTNEED`s one page of their mm, per `TLB` interrupt it received.
    pub const SHOOTDOWN_TARGET: &str = "shootdown_target";
    /// A 100-byte pipe write and its read, one thread, no wake-up.
    pub const PIPE_PAIR: &str = "pipe_pair";
    /// One cache line passed to a thread spinning on the other CPU and back, halved.
    pub const LINE_PINGPONG: &str = "line_pingpong";
    /// A 100-byte AF_UNIX stream socket write and its read, one thread, no wake-up.
    pub const SOCKET_PAIR: &str = "socket_pair";
    /// Per message, what a 100-byte pipe message costs more when read on another CPU than the
    /// one that wrote it.
    pub const PIPE_REMOTE_READ: &str = "pipe_remote_read";
    /// The same over an `AF_UNIX` stream socket pair.
    pub const SOCKET_REMOTE_READ: &str = "socket_remote_read";
    /// Per message, what a 100-byte pipe message costs more, written and read, in a deep queue
    /// of 20 pipes than with one message queued per pipe.
    pub const PIPE_QUEUED: &str = "pipe_queued";
    /// The same over `AF_UNIX` stream socket pairs.
    pub const SOCKET_QUEUED: &str = "socket_queued";
    /// A 100-byte pipe write timed alone, no reader waiting.
    pub const PIPE_WRITE: &str = "pipe_write";
    /// The same write waking a reader blocked on the same CPU.
    pub const PIPE_WAKE_LOCAL: &str = "pipe_wake_local";
    /// The same write waking a reader blocked on the other CPU.
    pub const PIPE_WAKE_REMOTE: &str = "pipe_wake_remote";
    /// `CPUID`.
    pub const VMEXIT_CPUID: &str = "vmexit_cpuid";
    /// `sched_setaffinity` to the other CPU.
    pub const MIGRATE: &str = "migrate";
    /// `clone(SIGCHLD)` + `_exit` + `waitpid` of a small process.
    pub const FORK_EXIT: &str = "fork_exit";
    /// The same with [`crate::FORK_GROWN_PAGES`] more anonymous pages passed on.
    pub const FORK_EXIT_GROWN: &str = "fork_exit_grown";
    /// Every name, in measuring order.
    pub const ALL: [&str; 41] = [
        NULL_SYSCALL,
        FAULT_ZERO,
        FAULT_ANON,
        FAULT_ANON_HOT,
        MADVISE_EMPTY,
        DONTNEED_ONE,
        DONTNEED_RANGE,
        DONTNEED_SMALL,
        DONTNEED_LARGE,
        MPROTECT_ONE,
        MPROTECT_SMALL,
        MPROTECT_LARGE,
        MPROTECT_EMPTY,
        MPROTECT_PAIR_NEAR,
        MPROTECT_PAIR_FAR,
        REREAD_AFTER_NONE,
        REREAD_AFTER_INVLPG,
        REREAD_AFTER_FLUSH,
        MMAP_MUNMAP,
        MUNMAP_SPLIT,
        THREAD_SWITCH,
        LINE_PINGPONG,
        THREAD_WAKE_REMOTE,
        IPI_CALL_REMOTE,
        IPI_CALL_LOCAL,
        SHOOTDOWN_TARGET,
        MEMBARRIER_IPI,
        MEMBARRIER_NO_IPI,
        PIPE_PAIR,
        SOCKET_PAIR,
        PIPE_REMOTE_READ,
        SOCKET_REMOTE_READ,
        PIPE_QUEUED,
        SOCKET_QUEUED,
        PIPE_WRITE,
        PIPE_WAKE_LOCAL,
        PIPE_WAKE_REMOTE,
        VMEXIT_CPUID,
        MIGRATE,
        FORK_EXIT,
        FORK_EXIT_GROWN,
    ];
}

/// How many pages of written private anonymous memory `fork_exit_grown` passes on (64 MiB): far
/// more than the small process of `fork_exit` has, so that the cost per page, which the fork
/// figures extrapolate back over that process's own pages, is not mostly run-to-run noise.
pub const FORK_GROWN_PAGES: u64 = 16_384;

/// Channels of `pipe_queued` and `socket_queued`: hackbench's receivers per group (`-f 20`).
pub const QUEUED_CHANNELS: usize = 20;
/// Messages queued in each channel in their deep rounds: deep, as hackbench's senders keep a
/// socket (277 skbs before they sleep) or a pipe (640 messages), below either's capacity.
pub const QUEUED_DEPTH: usize = 200;
/// Messages written between a message's write and its read, on average over a deep round of
/// `pipe_queued` and `socket_queued` (each of the 4,000 is followed by 3,999 − i others, read
/// channel by channel): the depth at which their figure holds, which the kernel model's
/// `queued-messages` mechanism scales by (`tlblab_sim`'s `QUEUED_SINCE_MEAN` is the same).
pub const QUEUED_SINCE_MEAN: u64 = (QUEUED_CHANNELS * QUEUED_DEPTH) as u64 / 2;

/// One measurement's outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Measured.
    Measured(Measurement),
    /// Not measured, and why.
    Failed(String),
}

/// Every measurement of one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathCosts {
    /// What it was measured on.
    pub key: CacheKey,
    /// The CPUs used: the local one, then the remote one if there was a second.
    pub cpus: Vec<usize>,
    /// How long measuring took, in seconds.
    pub seconds: f64,
    /// By name ([`names`]).
    pub results: BTreeMap<String, Outcome>,
    /// Steal time over the measurement (a guest's host load while it measured), or why it
    /// could not be read: cached with the costs, so that a preset built from the cache is the
    /// same at every build.
    #[serde(default = "steal_not_sampled")]
    pub steal: Result<steal::StealSample, String>,
}

fn steal_not_sampled() -> Result<steal::StealSample, String> {
    Err("not sampled".into())
}

impl PathCosts {
    /// The measurement `name`, or why there is none.
    pub fn get(&self, name: &str) -> Result<&Measurement, String> {
        match self.results.get(name) {
            Some(Outcome::Measured(m)) => Ok(m),
            Some(Outcome::Failed(reason)) => Err(reason.clone()),
            None => Err(format!("{name} was not measured")),
        }
    }
}

/// This machine's costs: from the cache in [`cache::cache_dir`], else measured with `opts` and
/// cached. Calls in one process are serialised (two measurements at once would disturb each
/// other).
pub fn cached_or_measure(opts: &Options) -> Cached {
    measure_with(opts, false)
}

/// Measures every path now, whatever the cache holds, and caches the result: for a comparison
/// with live measurements taken now (`tlblab study`), since a guest's costs drift with its
/// host's load from one hour to the next.
pub fn measure_afresh(opts: &Options) -> Cached {
    measure_with(opts, true)
}

fn measure_with(opts: &Options, afresh: bool) -> Cached {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let key = CacheKey::of_this_machine();
    let dir = cache::cache_dir();
    let measure = || measure_all(opts, key.clone());
    if afresh {
        cache::measure_into(dir.as_deref(), measure)
    } else {
        cached_or_measure_in(dir.as_deref(), &key, measure)
    }
}
