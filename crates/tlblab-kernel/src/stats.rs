//! What a run reports: per-task times and operations, kernel counters, flush sizes, hardware
//! counters.

use crate::kernel::Kernel;
use crate::observer::{Observer, TlbFlushReason, Vmstat};
use serde::Serialize;
use std::collections::BTreeMap;
use tlblab_sim::stats::HwReport;
use tlblab_types::Cycles;

/// One user task's results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TaskReport {
    /// Cycles in user mode (work and translation).
    pub user_cycles: u64,
    /// The program's own work in user mode: `Compute` cycles and `cycles_per_page` of the pages
    /// it referenced (translation excluded).
    pub work_cycles: u64,
    /// Cycles in the kernel (system calls, faults, switches, spinning for acknowledgements),
    /// not counting interrupts.
    pub sys_cycles: u64,
    /// Interrupt-handler cycles on the task's CPU while it was in user mode.
    pub irq_in_user_cycles: u64,
    /// Interrupt-handler cycles on the task's CPU while it was in the kernel.
    pub irq_in_sys_cycles: u64,
    /// Operations completed (`Action::Op`).
    pub ops: u64,
    /// Time of the first operation.
    pub first_op: Cycles,
    /// Time of the last operation.
    pub last_op: Cycles,
    /// Cycles from each [`crate::program::Action::OpBegin`] to the next operation's end, summed
    /// (left out of JSON when no program marks spans).
    #[serde(skip_serializing_if = "is_zero")]
    pub span_cycles: u64,
    /// Operations that had an `OpBegin`.
    #[serde(skip_serializing_if = "is_zero")]
    pub spans: u64,
    /// When the open span began.
    #[serde(skip)]
    pub span_begin: Option<Cycles>,
    /// Migrations: by `sched_setaffinity`, and by a wake-up placed on another CPU.
    pub migrations: u64,
    /// Times it was switched out asleep (blocked), as `getrusage()`'s `ru_nvcsw` counts
    /// voluntary switches. NOTE: the last switch of an exiting task, which the kernel also
    /// counts there, is not (no `getrusage()` sees it).
    pub voluntary_switches: u64,
    /// Times it was switched out still runnable (a used slice, a wake-up that preempted it), as
    /// `ru_nivcsw` counts involuntary switches.
    pub involuntary_switches: u64,
    /// When it exited.
    pub exited: Option<Cycles>,
}

impl TaskReport {
    /// User and system time as `time` (`getrusage()`) reports them under tick-based
    /// accounting: an interrupt handler's time goes to the task it interrupted, in the mode it
    /// interrupted (docs/kernel-model.md, "Where time goes").
    pub fn time_as_reported(&self) -> (u64, u64) {
        (self.user_cycles + self.irq_in_user_cycles, self.sys_cycles + self.irq_in_sys_cycles)
    }
}

/// How often CPUs entered one idle state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IdleEntries {
    /// The state's name (`POLL`, `C1`, …).
    pub state: String,
    /// Entries.
    pub entries: u64,
}

/// Where one CPU's time went during the measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CpuTime {
    /// Tasks in user mode.
    pub user_cycles: u64,
    /// Tasks in the kernel, spins for acknowledgements and context switches included.
    pub sys_cycles: u64,
    /// Interrupt handlers (IPIs, ticks), idle exits included.
    pub irq_cycles: u64,
    /// Idle.
    pub idle_cycles: u64,
    /// Disturbances of the safety checker's perturbed schedules (another thread, or an
    /// interrupts-off window); 0 otherwise.
    pub other_cycles: u64,
    /// Steal: the host ran something else on the vCPU (vCPU preemption, docs/kernel-model.md,
    /// "Virtualisation"); 0 otherwise, and then left out of the JSON.
    #[serde(skip_serializing_if = "is_zero")]
    pub steal_cycles: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CpuTime {
    /// Every bucket added up: the measurement window.
    pub fn total(&self) -> u64 {
        self.user_cycles
            + self.sys_cycles
            + self.irq_cycles
            + self.idle_cycles
            + self.other_cycles
            + self.steal_cycles
    }
}

/// Flushes by size, as `flush_tlb_func()` did them: entries flushed (-1 for full) → count and
/// cycles (instructions and the function's own cost).
#[derive(Clone, Debug, Default, Serialize)]
pub struct FlushSizes {
    /// `pages` → (flushes, cycles).
    pub by_pages: BTreeMap<i64, (u64, u64)>,
}

impl FlushSizes {
    /// Counts one flush.
    pub fn record(&mut self, pages: i64, cycles: u64) {
        let e = self.by_pages.entry(pages).or_default();
        e.0 += 1;
        e.1 += cycles;
    }
}

/// XPFO: pages taken out of the kernel's direct map when handed to user space, and how long
/// a stale kernel translation of each stayed usable.
#[derive(Clone, Debug, Default, Serialize)]
pub struct XpfoReport {
    /// Pages unmapped from the direct map (one per page allocated to user space).
    pub kernel_unmaps: u64,
    /// Per unmap whose window closed: cycles from the unmap until the last CPU that could
    /// still hold the kernel translation had flushed it (`xpfo-sync`: the last IPI handler's
    /// flush; `xpfo-deferred`: the last other CPU's full flush at its next mm switch).
    pub exposure_cycles: Vec<u64>,
    /// Windows still open when the run ended (some CPU had not flushed yet).
    pub censored: u64,
    /// Full TLB flushes XPFO caused (deferred flushes at mm switches).
    pub full_flushes: u64,
    /// IPIs XPFO sent (`on_each_cpu()` kernel-range flushes).
    pub ipis: u64,
    /// What XPFO did besides the unmaps, with mechanism `xpfo-events` (else absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<XpfoEventCounts>,
}

/// XPFO's events (mechanism `xpfo-events`). Each unmap counted here is also one of
/// [`XpfoReport::kernel_unmaps`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct XpfoEventCounts {
    /// Unmaps at allocation (`xpfo_alloc_pages()`).
    pub alloc_unmaps: u64,
    /// `xpfo_kmap()`s that mapped a user page back (no flush).
    pub kmaps: u64,
    /// `xpfo_kunmap()`s that unmapped it again (each an unmap with its flush).
    pub kunmaps: u64,
    /// Pages mapped back when freed (`xpfo_free_pages()`, no flush).
    pub frees: u64,
    /// Transfers of `pending_xpfo_flush`'s cache line from another CPU (`xpfo-deferred`).
    pub mask_transfers: u64,
    /// Kernel references to kmapped pages through the 4 KiB direct map
    /// (`xpfo-direct-map-4k`).
    pub direct_map_refs: u64,
    /// Their translation cycles.
    pub direct_map_cycles: u64,
}

/// Everything a run reports.
#[derive(Clone, Debug, Serialize)]
pub struct KernelReport {
    /// The policy's name.
    pub policy: String,
    /// Simulated time measured, in cycles: from the start (or the end of a warm-up) to the end.
    pub elapsed_cycles: u64,
    /// Core clock, MHz.
    pub clock_mhz: u64,
    /// User tasks.
    pub tasks: Vec<TaskReport>,
    /// `CONFIG_DEBUG_TLBFLUSH` counters.
    pub vmstat: Vmstat,
    /// `/proc/interrupts` `TLB` row, per CPU.
    pub irq_tlb: Vec<u64>,
    /// `/proc/interrupts` `CAL` row (kernel-range flush IPIs), per CPU.
    pub irq_cal: Vec<u64>,
    /// IPIs sent (flush IPIs, user and kernel), per CPU.
    pub ipis_sent: Vec<u64>,
    /// Page faults, like `perf stat`'s `page-faults`.
    pub page_faults: u64,
    /// Run-time 5-level-paging tests executed (`la57-runtime`; a load and a branch each).
    pub la57_checks: u64,
    /// Pages unmapped by reclaim (`Syscall::Reclaim`).
    pub reclaimed: u64,
    /// migrc and LUF: pages freed with their flush pending (left out of JSON when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub luf_deferred_pages: u64,
    /// migrc and LUF: catch-ups (flushes of pending batches, at a page's reuse or another
    /// catch-up point; left out of JSON when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub luf_catch_ups: u64,
    /// `mmap_lock` acquisitions and waits.
    pub mmap_lock: MmapLockStats,
    /// `mm_cpumask` writes, reads and cache-line transfers (docs/kernel-model.md).
    pub cpumask: crate::cpumask::CpumaskStats,
    /// The CPUs' `cpu_tlbstate` / `cpu_tlbstate_shared` lines: their stores, flush
    /// initiators' reads of them and the transfers (mechanism `tlbstate-lines`; left out of
    /// JSON when nothing touched them).
    #[serde(skip_serializing_if = "crate::cpumask::CpumaskStats::is_empty")]
    pub tlbstate: crate::cpumask::CpumaskStats,
    /// XPFO's unmaps and exposure windows (`None` without XPFO).
    pub xpfo: Option<XpfoReport>,
    /// `tlb:tlb_flush` events by reason name.
    pub tlb_flush: BTreeMap<&'static str, u64>,
    /// Flushes done by `flush_tlb_func()`, by size.
    pub flush_sizes: FlushSizes,
    /// Durations (cycles) of preemption-disabled sections in `flush_tlb_mm_range()`.
    pub preempt_off_cycles: Vec<u64>,
    /// Where each CPU's time went; per CPU the buckets add up to `elapsed_cycles`.
    pub cpu_time: Vec<CpuTime>,
    /// Idle-state entries by state (`POLL` first), all CPUs.
    pub idle_entries: Vec<IdleEntries>,
    /// Events the engine processed.
    pub events: u64,
    /// Hardware counters summed over CPUs.
    pub hw: HwReport,
    /// The host's preemptions of the vCPUs and KVM's PV flushes (`None` unless the host is
    /// overcommitted: mechanism `vcpu-preemption`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vcpu: Option<VcpuStats>,
    /// Broadcast invalidation, flush latencies and the page-freeing locks (study S6).
    pub broadcast: BroadcastStats,
}

/// An overcommitted host's side of a run (docs/kernel-model.md, "Virtualisation").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VcpuStats {
    /// Preemptions of a vCPU by other host threads, all vCPUs.
    pub preemptions: u64,
    /// Flushes left to the host by `kvm_flush_tlb_multi()` (`KVM_VCPU_FLUSH_TLB` set on a
    /// preempted vCPU instead of an IPI).
    pub pv_marked: u64,
    /// Full flushes the host did at a vCPU's next entry for them.
    pub pv_flushed: u64,
}

impl KernelReport {
    pub(crate) fn new<O: Observer>(
        k: &Kernel<O>,
        hw: HwReport,
        tasks: Vec<TaskReport>,
    ) -> KernelReport {
        let (counters, flush_sizes, cpus) = k.parts();
        KernelReport {
            policy: k.policy().name.clone(),
            elapsed_cycles: k.now().0 - k.measured_from().0,
            clock_mhz: k.clock_mhz(),
            tasks,
            vmstat: counters.vmstat,
            irq_tlb: counters.irq_tlb.clone(),
            irq_cal: counters.irq_cal.clone(),
            ipis_sent: counters.ipis_sent.clone(),
            page_faults: counters.page_faults,
            la57_checks: counters.la57_checks,
            reclaimed: counters.reclaimed,
            luf_deferred_pages: counters.luf_deferred_pages,
            luf_catch_ups: counters.luf_catch_ups,
            mmap_lock: counters.mmap_lock,
            cpumask: counters.cpumask,
            tlbstate: counters.tlbstate,
            xpfo: k.xpfo_report(),
            tlb_flush: TlbFlushReason::ALL
                .iter()
                .map(|r| (r.name(), counters.tlb_flush[*r as usize]))
                .collect(),
            flush_sizes: flush_sizes.clone(),
            preempt_off_cycles: counters.preempt_off.clone(),
            cpu_time: cpus,
            idle_entries: k.idle_entries(),
            events: k.events(),
            hw,
            vcpu: k.vcpu_stats(),
            broadcast: counters.broadcast.clone(),
        }
    }

    /// Cycles to microseconds at the machine's clock.
    pub fn micros(&self, cycles: f64) -> f64 {
        cycles / self.clock_mhz as f64
    }
}

/// `mmap_lock` over a run, every mm together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MmapLockStats {
    /// Acquisitions, for read or write (a downgrade is not one).
    pub acquired: u64,
    /// Acquisitions that slept until a release handed the lock over.
    pub slept: u64,
    /// Cycles writers spent spinning on a running holder.
    pub spin_cycles: u64,
}

/// One spinlock over a run (mechanism `page-locks`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LockStats {
    /// Acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that found the lock held and waited.
    pub contended: u64,
    /// Cycles spent waiting for the lock, summed over acquisitions.
    pub wait_cycles: u64,
    /// Cycles the lock was held (its word's transfer included), summed.
    pub hold_cycles: u64,
}

impl LockStats {
    /// One acquisition that waited `wait` and held `hold` cycles.
    pub(crate) fn add(&mut self, wait: u64, hold: u64) {
        self.acquisitions += 1;
        self.contended += u64::from(wait > 0);
        self.wait_cycles += wait;
        self.hold_cycles += hold;
    }
}

/// What study S6 reads: the flushes' initiator latencies, the cycles every CPU spent on TLB
/// invalidation, RAR's and the global ASIDs' events, and the page-freeing locks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BroadcastStats {
    /// Each `flush_tlb_mm_range()`'s latency on its initiator, from its start to its return
    /// (the wait for acknowledgements, TLBSYNC or RAR completion included), cycles.
    pub flush_latency_cycles: Vec<u64>,
    /// Cycles spent on TLB invalidation by every CPU: the initiators' `flush_tlb_mm_range()`
    /// (waits included, the interrupts they took meanwhile not), the flush IPIs' handlers, and
    /// RAR actions on their targets.
    pub invalidation_cycles: u64,
    /// RAR flushes (`rar_tlb_flush()` calls).
    pub rar_flushes: u64,
    /// RAR actions sent (one per target CPU).
    pub rar_actions: u64,
    /// ASID-space resets (`reset_global_asid_space()`, each a system-wide flush).
    pub global_asid_resets: u64,
    /// `lruvec->lru_lock`.
    pub lru_lock: LockStats,
    /// `zone->lock`.
    pub zone_lock: LockStats,
}
