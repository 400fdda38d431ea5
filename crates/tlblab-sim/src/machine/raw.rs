//! The machine-preset file as written: parsed only, nothing checked beyond the shape.
//!
//! Every field is named; unknown keys are rejected (`deny_unknown_fields`) so a misspelt key can
//! never silently fall back to a default.

use crate::hw::Replacement;
use crate::stats::OpKind;
use serde::{Deserialize, Serialize};
use tlblab_types::{AccessKind, PageSize};

/// A figure with its provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CyclesFigure {
    /// The value, in core cycles.
    pub cycles: u64,
    /// Where it comes from.
    pub source: String,
    /// Set when the figure is not confirmed by a primary source (or is an assumption).
    #[serde(default)]
    pub unverified: bool,
}

/// A machine preset file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMachine {
    /// Short name (`skylake`).
    pub name: String,
    /// One line saying which CPU this is.
    pub description: String,
    /// `intel` or `amd`.
    pub vendor: String,
    /// Replacement policy of every TLB and paging-structure cache.
    #[serde(default)]
    pub replacement: Replacement,
    /// Architectural features.
    pub features: RawFeatures,
    /// TLB structures, L1 and L2.
    pub tlb: Vec<RawTlb>,
    /// Paging-structure caches, one per upper paging level that has one.
    #[serde(default)]
    pub psc: Vec<RawPsc>,
    /// Translation latencies.
    pub latency: RawLatency,
    /// Instruction costs.
    pub cost: RawCosts,
    /// Costs of the Linux kernel's code paths on this machine: only the kernel model
    /// (`tlblab-kernel`) needs them, so a preset for trace-driven runs may leave them out.
    #[serde(default)]
    pub kernel: Option<RawKernel>,
    /// The idle states of the cpuidle driver: what leaving idle costs. Only the kernel model
    /// needs them; without them it uses `kernel.idle_exit` for every wake-up.
    #[serde(default)]
    pub idle: Option<RawIdle>,
}

/// How an idle CPU waits (docs/kernel-model.md, "Idle states").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdle {
    /// The driver's states, shallowest first (the cpuidle table order: exit latencies and
    /// target residencies never decrease). The polling state (`POLL`, state 0 on x86: no exit
    /// latency) is always available and is not listed. Empty: the CPU only polls (`idle=poll`).
    pub states: Vec<RawIdleState>,
    /// Where the table comes from (driver and table name).
    pub source: String,
    /// Set when the table is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// One idle state, as the kernel's cpuidle tables give it (intel_idle's `exit_latency` and
/// `target_residency` are in µs; here in ns).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdleState {
    /// Its name (`C1`, `C6`).
    pub name: String,
    /// Wall time from the wake-up event to the CPU running again, ns.
    pub exit_latency_ns: u64,
    /// The shortest idle period for which entering the state pays off, ns.
    pub target_residency_ns: u64,
    /// `CPUIDLE_FLAG_TLB_FLUSHED`: the core loses its TLB contents in this state.
    #[serde(default)]
    pub tlb_flushed: bool,
}

/// A clock frequency with its provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MhzFigure {
    /// Core clock in MHz.
    pub mhz: u64,
    /// Where it comes from.
    pub source: String,
    /// Set when the figure is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// Costs of kernel code paths, in core cycles, excluding the TLB instructions they execute and
/// the TLB misses they cause (the hardware model charges those). See docs/kernel-model.md.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    /// Core clock, to convert cycles to seconds.
    pub clock: MhzFigure,
    /// A null system call: entry, dispatch and exit (without PTI's CR3 writes).
    pub syscall: CyclesFigure,
    /// A write fault on an anonymous page: allocate and zero a page, install the PTE.
    pub page_fault_anon: CyclesFigure,
    /// A read fault that maps the shared zero page.
    pub page_fault_zero: CyclesFigure,
    /// A copy-on-write fault: allocate and copy a page, install the PTE (the flush of the old
    /// PTE is modelled by `flush_tlb_mm_range`).
    pub page_fault_cow: CyclesFigure,
    /// Zapping one present PTE in `madvise(MADV_DONTNEED)` / `munmap` (clear, free the page).
    pub zap_pte: CyclesFigure,
    /// `madvise(MADV_DONTNEED)` apart from the syscall, the zaps and the flush.
    pub madvise: CyclesFigure,
    /// `mmap` of an anonymous region apart from the syscall.
    pub mmap: CyclesFigure,
    /// `munmap` apart from the syscall, the zaps and the flush.
    pub munmap: CyclesFigure,
    /// `mprotect` apart from the syscall and the flush, per region.
    pub mprotect: CyclesFigure,
    /// `__schedule()` and `switch_to()` between two tasks, apart from `switch_mm_irqs_off()`.
    pub context_switch: CyclesFigure,
    /// The software of `switch_mm_irqs_off()` when the mm changes, apart from the CR3 write.
    pub switch_mm: CyclesFigure,
    /// Waking a blocked task (`try_to_wake_up`), on the waker's CPU.
    pub wakeup: CyclesFigure,
    /// `sched_setaffinity()` to another CPU, on the calling CPU, apart from the syscall.
    pub migrate: CyclesFigure,
    /// `fork()` of a small process: copying the mm's structures, apart from per-page work.
    pub fork: CyclesFigure,
    /// Copying one present PTE at fork (and write-protecting it for copy-on-write).
    pub fork_pte: CyclesFigure,
    /// `execve()`: a new mm, loading the binary, apart from the faults that follow.
    pub exec: CyclesFigure,
    /// Process exit apart from the teardown of its pages (`zap_pte` each).
    pub exit: CyclesFigure,
    /// Sending one IPI (an APIC ICR write), per target, on the initiator.
    pub ipi_send: CyclesFigure,
    /// From the ICR write to the first instruction of the handler on the target.
    pub ipi_latency: CyclesFigure,
    /// Interrupt entry and exit and the call-function dispatch on the target.
    pub ipi_handler: CyclesFigure,
    /// From the target's acknowledgement (releasing the call-function lock) to the initiator
    /// seeing it: one cache-line transfer.
    pub ipi_ack: CyclesFigure,
    /// The software of `flush_tlb_func()` apart from the flush instructions.
    pub flush_tlb_func: CyclesFigure,
    /// The software of `flush_tlb_mm_range()` apart from `flush_tlb_func()` and the IPIs.
    pub flush_tlb_mm_range: CyclesFigure,
    /// A cache line moved from another core's cache (a read of remotely written data).
    pub cache_line_transfer: CyclesFigure,
    /// A load that hits the L1 data cache.
    pub l1d_load: CyclesFigure,
    /// A mispredicted branch.
    pub branch_mispredict: CyclesFigure,
    /// The timer interrupt (tick) apart from any rescheduling.
    pub timer_tick: CyclesFigure,
    /// Leaving the idle state when an interrupt or wake-up arrives.
    pub idle_exit: CyclesFigure,
}

/// Architectural features of the CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeatures {
    /// CR4.PCIDE can be set (`X86_FEATURE_PCID`).
    pub pcid: bool,
    /// INVPCID exists (`X86_FEATURE_INVPCID`).
    pub invpcid: bool,
    /// AMD INVLPGB/TLBSYNC exist (`X86_FEATURE_INVLPGB`).
    pub invlpgb: bool,
    /// `invlpgb_count_max`: CPUID 0x80000008 EDX[15:0] + 1 (only with `invlpgb`).
    #[serde(default)]
    pub invlpgb_count_max: Option<u32>,
    /// 5-level paging (LA57) is available.
    pub la57: bool,
    /// Concurrent page walkers (informative: the sequential trace model walks one at a time).
    pub page_walkers: u32,
    /// Which paging-structure-cache entries INVLPG drops: `pcid` (all of the current PCID) or
    /// `address` (only those that translate the address).
    pub invlpg_psc_scope: PscScope,
    /// Where `invlpg_psc_scope` comes from.
    pub invlpg_psc_scope_source: String,
    /// Where the feature flags come from.
    pub source: String,
}

/// Which paging-structure-cache entries an INVLPG drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PscScope {
    /// Every entry of the current PCID, whatever its address (Intel SDM vol. 3 §4.10.4.1).
    Pcid,
    /// Only entries used to translate the address (AMD with EFER.TCE).
    Address,
}

/// One TLB structure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTlb {
    /// Display name (`L1 dTLB 4K`).
    pub name: String,
    /// 1 (looked up first) or 2 (the STLB, looked up on an L1 miss).
    pub level: u8,
    /// Which accesses it serves.
    pub accesses: Vec<AccessKind>,
    /// Which page sizes it holds.
    pub page_sizes: Vec<PageSize>,
    /// Whether 1 GiB translations are held as 2 MiB entries ("smashed" or splintered).
    #[serde(default)]
    pub splinter_1g: bool,
    /// Number of entries.
    pub entries: u32,
    /// Associativity; equal to `entries` for a fully-associative structure.
    pub ways: u32,
    /// Where the geometry comes from.
    pub source: String,
    /// Set when the geometry is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// An upper paging level: the levels whose entries a paging-structure cache can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PscLevel {
    /// PML5 entries (5-level paging only): each maps 256 TiB.
    Pml5e,
    /// PML4 entries: each maps 512 GiB.
    Pml4e,
    /// PDPT entries that reference a page directory: each maps 1 GiB.
    Pdpte,
    /// PD entries that reference a page table: each maps 2 MiB.
    Pde,
}

impl PscLevel {
    /// Every level, top first: the order of paging-structure-cache statistics.
    pub const ALL: [PscLevel; 4] =
        [PscLevel::Pml5e, PscLevel::Pml4e, PscLevel::Pdpte, PscLevel::Pde];

    /// Index in [`PscLevel::ALL`], which is also the paging level of the entries it caches
    /// (0 = PML5 … 3 = PD).
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// One paging-structure cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPsc {
    /// Which entries it caches.
    pub level: PscLevel,
    /// Number of entries.
    pub entries: u32,
    /// Associativity.
    pub ways: u32,
    /// Where the geometry comes from.
    pub source: String,
    /// Set when the geometry is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// Translation latencies beyond an L1 hit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLatency {
    /// An L1 miss that hits the STLB (also paid before a walk starts).
    pub stlb_hit: CyclesFigure,
    /// One memory reference of a walk to a PML5 entry.
    pub walk_pml5: CyclesFigure,
    /// One memory reference of a walk to a PML4 entry.
    pub walk_pml4: CyclesFigure,
    /// One memory reference of a walk to a PDPT entry.
    pub walk_pdpt: CyclesFigure,
    /// One memory reference of a walk to a PD entry.
    pub walk_pd: CyclesFigure,
    /// One memory reference of a walk to a PT entry.
    pub walk_pt: CyclesFigure,
}

/// Instruction costs (the instruction itself; refills after it are modelled as misses).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCosts {
    /// INVLPG.
    pub invlpg: CyclesFigure,
    /// INVPCID type 0.
    pub invpcid_indiv_addr: Option<CyclesFigure>,
    /// INVPCID type 1.
    pub invpcid_single_ctxt: Option<CyclesFigure>,
    /// INVPCID type 2.
    pub invpcid_all_incl_global: Option<CyclesFigure>,
    /// INVPCID type 3.
    pub invpcid_all_non_global: Option<CyclesFigure>,
    /// MOV to CR3 that flushes.
    pub mov_cr3: CyclesFigure,
    /// MOV to CR3 with bit 63 (NOFLUSH) set.
    pub mov_cr3_noflush: CyclesFigure,
    /// One MOV to CR4.
    pub mov_cr4: CyclesFigure,
    /// INVLPGB (one instruction, whatever its range).
    pub invlpgb: Option<CyclesFigure>,
    /// TLBSYNC.
    pub tlbsync: Option<CyclesFigure>,
}

impl RawCosts {
    /// The cost of an instruction, if the machine has it (the field named like the counter).
    pub fn for_op(&self, kind: OpKind) -> Option<&CyclesFigure> {
        match kind {
            OpKind::Invlpg => Some(&self.invlpg),
            OpKind::InvpcidIndivAddr => self.invpcid_indiv_addr.as_ref(),
            OpKind::InvpcidSingleCtxt => self.invpcid_single_ctxt.as_ref(),
            OpKind::InvpcidAllInclGlobal => self.invpcid_all_incl_global.as_ref(),
            OpKind::InvpcidAllNonGlobal => self.invpcid_all_non_global.as_ref(),
            OpKind::MovCr3 => Some(&self.mov_cr3),
            OpKind::MovCr3Noflush => Some(&self.mov_cr3_noflush),
            OpKind::MovCr4 => Some(&self.mov_cr4),
            OpKind::Invlpgb => self.invlpgb.as_ref(),
            OpKind::Tlbsync => self.tlbsync.as_ref(),
        }
    }
}
