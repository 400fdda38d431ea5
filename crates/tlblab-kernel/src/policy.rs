//! Named policies: which kernel's TLB-flush code runs, and which variants of it.
//!
//! A policy is a set of switches, each a decision the kernel made differently at some point in
//! its history (or in a proposed patch). The named policies set them as the kernel they mirror
//! does; names compose with `+` (`linux-4.14+pti-deferred` applies the `pti-deferred` variant
//! on top of `linux-4.14`), and a TOML file defines a new one from a base.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How CPUs that run a kernel thread treat the user mm they still have loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LazyMode {
    /// ≤ 4.13: the CPU stays lazily on the mm and in its `mm_cpumask`; a flush IPI makes it
    /// `leave_mm()` (switch to `init_mm`, leave the mask).
    LeaveOnIpi,
    /// 4.14: with PCID, `enter_lazy_tlb()` switches to `init_mm` at once (a cheap CR3 write);
    /// without PCID (`tlb_defer_switch_to_init_mm()`) the CPU stays lazy and flush IPIs still
    /// reach it, making it switch to `init_mm`.
    SwitchToInitMm,
    /// 4.20+ (Rik van Riel, "Make lazy TLB mode lazier"): lazy CPUs are skipped by
    /// `should_flush_tlb()` unless page tables were freed; they catch up at their next switch.
    SkipLazy,
}

/// How a single-page user flush reaches the user PCID under PTI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pti {
    /// No page-table isolation.
    Off,
    /// PTI; the user PCID is flushed per page with INVPCID type 0 (6cff64b86aaa, 4.15) when the
    /// CPU has INVPCID, else deferred.
    Invpcid,
    /// PTI; the user PCID is marked in `user_pcid_flush_mask` and flushed whole at the next
    /// return to user (the alternative Dave Hansen measured in 2017).
    Deferred,
}

/// How the kernel tests for 5-level paging, and whether it uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum La57 {
    /// Built for 4-level paging only: `p4d_folded` is a compile-time constant.
    Off,
    /// Able to boot either way; hot paths load and test `p4d_folded` (4.14-rc boot-time switch).
    Runtime,
    /// Able to boot either way; hot paths patched at boot (ALTERNATIVES): no load, no branch.
    Patched,
    /// 5-level paging in use (LA57 hardware): one more level per full walk.
    On,
}

/// Where `flush_tlb_info` lives, and so whether the wait for acknowledgements is preemptible.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlushInfo {
    /// 3db6d5a5ecaf (5.3 to 7.2): one per-CPU, cache-aligned `flush_tlb_info`; preemption is
    /// off from `flush_tlb_mm_range()` until every acknowledgement is in.
    PerCpu,
    /// Chuyi Zhou's series (7.3): on the initiator's stack (alignment capped at 64 bytes);
    /// preemption is enabled again while waiting for acknowledgements.
    Stack,
}

/// XPFO: pages given to user space are unmapped from the kernel's direct map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Xpfo {
    /// Stock kernel (XPFO was never merged).
    Off,
    /// XPFO v9: each unmap from the direct map does `flush_tlb_kernel_range()` on every CPU.
    Sync,
    /// XPFO v9 12/13: the local CPU flushes at once, the others are marked in a pending-flush
    /// cpumask and flush everything at their next context switch.
    Deferred,
}

/// Deferred flushes of unmapped pages until the page allocator hands the pages out again
/// (Byungchul Park's RFC series; docs/kernel-model.md, "migrc and LUF").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnmapFlush {
    /// Every kernel: the batched flush of an unmap is done before the pages are freed.
    #[default]
    Off,
    /// migrc (RFC v1–v8, 2023–2024): the flush of a migration's unmap of source folios mapped
    /// read-only is deferred until a source page leaves the page allocator again, or until
    /// direct reclaim (memory pressure), which flushes everything pending.
    Migrc,
    /// LUF, Lazy Unmap Flush (RFC v9–v12, 2024–2025): migrc's deferral for the unmaps of
    /// migration and of reclaim, until the page leaves the page allocator again, or until a
    /// fault sets a writable PTE, which flushes everything pending.
    Luf,
}

impl UnmapFlush {
    fn is_off(&self) -> bool {
        *self == UnmapFlush::Off
    }
}

/// The fair class's scheduler a kernel has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FairSched {
    /// The Completely Fair Scheduler (2.6.23–6.5): the least vruntime runs next; a woken task
    /// preempts when it is a wake-up granularity behind the running one.
    Cfs,
    /// Earliest Eligible Virtual Deadline First as 6.12+ has it: with `DELAY_DEQUEUE` (a task
    /// that sleeps while not eligible stays queued until it is picked or woken, 152e11f6df29).
    #[default]
    Eevdf,
    /// EEVDF as 6.6–6.11 had it, before `DELAY_DEQUEUE`: a sleeping task leaves its queue at
    /// once, keeping its lag.
    #[serde(rename = "eevdf-6.6")]
    Eevdf66,
}

impl FairSched {
    /// Whether it is 6.12+ EEVDF (the default, not written with a policy).
    pub fn is_eevdf(&self) -> bool {
        *self == FairSched::Eevdf
    }
}

/// A policy: the switches, with the names it goes by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The name it was asked for by (`linux-6.18`, `linux-4.14+pti-deferred`).
    pub name: String,
    /// Which kernel (version, commit or patch series) it mirrors.
    pub mirrors: String,
    /// The policy file it was read from, if any: errors found when it runs name it. Not a
    /// switch, and not written with the policy.
    #[serde(skip)]
    pub file: Option<String>,
    /// Use PCIDs with `TLB_NR_DYN_ASIDS` dynamic ASIDs per CPU when the CPU has them (4.14+).
    pub pcid: bool,
    /// Track `tlb_gen` per mm and per CPU ASID slot, with the partial-flush rules of
    /// `flush_tlb_func()` (4.14+). Without it, every flush does what it was asked.
    pub tlb_gen: bool,
    /// Lazy-TLB behaviour.
    pub lazy: LazyMode,
    /// 6.14 (209954cbc7d0): a CPU's bit in `mm_cpumask` is not cleared when it switches away;
    /// it is cleared by the CPU itself when a flush IPI finds it on another mm.
    pub lazy_cpumask: bool,
    /// 6.14 (6db2526c1d69): at most once a second per mm, a flush also IPIs CPUs whose bit is
    /// stale so that they drop it (`trim_cpumask`).
    pub trim_cpumask: bool,
    /// 6.15 (fea4e317f9e7, CVE-2025-37964): `should_flush_tlb()` also IPIs a CPU whose
    /// `loaded_mm` is `LOADED_MM_SWITCHING`.
    pub loaded_mm_switching_check: bool,
    /// 6.0 (aa44284960d5): `flush_tlb_func()` returns early, without tracing, when the CPU is
    /// already at or past the flush's generation.
    pub early_gen_exit: bool,
    /// 5.12 (4ce94eabac16): the initiator flushes its own TLB while the remote CPUs work;
    /// before, it flushed first and then sent the IPIs.
    pub concurrent_local_flush: bool,
    /// 6.14 (`CONFIG_PT_RECLAIM`, Qi Zheng): `MADV_DONTNEED` over a whole 2 MiB block frees
    /// the PTE page it empties, and its flush then carries `freed_tables`.
    pub pt_reclaim: bool,
    /// Per-VMA locks (`lock_vma_under_rcu()`): anonymous page faults (6.4, Suren Baghdasaryan)
    /// and `MADV_DONTNEED` (6.16, Barry Song: `MADVISE_VMA_READ_LOCK`) leave `mmap_lock`
    /// alone; before, both took it for read.
    #[serde(default)]
    pub vma_locks: bool,
    /// 4.20 (Yang Shi, "mm: mmap: zap pages with read mmap_sem in munmap"): munmap downgrades
    /// `mmap_lock` to read once the VMAs are detached, so the zap and the flush run under read.
    #[serde(default)]
    pub munmap_downgrade: bool,
    /// 5.3 (Waiman Long's rwsem rework, kernel/locking/rwsem.c): `RWSEM_FLAG_HANDOFF` (a writer
    /// beaten for `RWSEM_WAIT_TIMEOUT` reserves the lock), readers taking a lock no writer holds
    /// past sleeping waiters (reader spinning, then 5.12's reader lock stealing) and writers
    /// spinning on a reader-owned lock; before, none of the three (kernel/mmap_lock.rs).
    #[serde(default)]
    pub rwsem_handoff: bool,
    /// Page-table isolation and its user-PCID flush.
    pub pti: Pti,
    /// AMD INVLPGB broadcast flushes with global ASIDs (6.15); needs the CPU feature.
    pub invlpgb: bool,
    /// Intel RAR targeted flushes with the 6.15 global ASIDs (Rik van Riel's RFC series, May
    /// 2025, not merged; kernel/rar.rs); needs a preset with `[rar]`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rar: bool,
    /// Before 6.15 the zap paths of `MADV_DONTNEED` and `munmap` called `lru_add_drain()`
    /// (removed by "mm: remove unnecessary calls to lru_add_drain", Rik van Riel, 6.15): the
    /// CPU's LRU batch goes onto the LRU, under its lock, at every zap (kernel/page_locks.rs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lru_drain_on_zap: bool,
    /// 5-level paging: the kernel's test and the page walk.
    pub la57: La57,
    /// Where `flush_tlb_info` lives.
    pub flush_info: FlushInfo,
    /// XPFO.
    pub xpfo: Xpfo,
    /// `tlb_single_page_flush_ceiling`: a flush of more entries than this is a full flush.
    /// "Each single flush is about 100 ns, so this caps the maximum overhead at about 3,000 ns"
    /// (tlb.c); debugfs-tunable.
    pub tlb_single_page_flush_ceiling: u64,
    /// `CONFIG_HZ`: ticks per second (jiffies drive the cpumask trim and global-ASID sampling).
    pub hz: u64,
    /// The fair class's scheduler (kernel/sched/fair.c; the model's `kernel/fair.rs`, mechanism
    /// `wakeup-preemption`): EEVDF since 6.6 (147f3efaa241, Peter Zijlstra), CFS before.
    #[serde(default, skip_serializing_if = "FairSched::is_eevdf")]
    pub fair_sched: FairSched,
    /// LATR (Kumar et al., ASPLOS'18; prototype sslab-gatech/latr on 4.10): the flushes of
    /// munmap() and MADV_DONTNEED send no IPI. The initiator flushes itself and leaves a state
    /// for the CPUs it would have interrupted; each applies it at its next scheduler tick or
    /// context switch. A declared deferral (docs/safety.md §4.4).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latr: bool,
    /// ≤ 4.14-era `intel_idle()`: before an idle state that loses the TLB
    /// (`CPUIDLE_FLAG_TLB_FLUSHED`), a lazy CPU calls `leave_mm()` and moves to `init_mm`, so
    /// flush IPIs for the mm it kept stop reaching it; at its next switch back it reloads the
    /// mm. Later kernels dropped the call (the lazy CPU is skipped by `should_flush_tlb()`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idle_leave_mm: bool,
    /// In a KVM guest, remote flushes go through `kvm_flush_tlb_multi()` (4.16, 858a43aae236)
    /// when `pv_tlb_flush_supported()` holds: a preempted vCPU is marked for the host to flush
    /// at its next entry instead of being sent an IPI. Off: `native_flush_tlb_multi()` IPIs
    /// every vCPU. Whether the host offers the feature is the preset's (`[guest]
    /// pv_tlb_flush`); it acts only when both say yes.
    #[serde(default = "yes")]
    pub pv_tlb_flush: bool,
    /// migrc or LUF: the flush of unmapped read-only pages deferred until the page allocator
    /// reuses them. A declared deferral (docs/safety.md §4.4).
    #[serde(default, skip_serializing_if = "UnmapFlush::is_off")]
    pub unmap_flush: UnmapFlush,
    /// 5.5–6.13 `pipe_read()`: a read that began with the pipe full wakes a waiting writer even
    /// when it frees no buffer (the writer finds no room and sleeps again). 6.14 (aaec5a95d596,
    /// Oleg Nesterov, "pipe_read: don't wake up the writer if the pipe is still full") wakes it
    /// only when the read frees a buffer of the full pipe (kernel/channel.rs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pipe_wakes_writer_while_full: bool,
    /// A deliberate defect, for the safety checker's tests and for teaching (docs/safety.md);
    /// `None` in every real kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defect: Option<Defect>,
}

/// `serde`'s default for switches that every kernel of the model's era has on.
fn yes() -> bool {
    true
}

/// A known-bad change to a faithful policy: each lets a CPU use a translation the kernel
/// promised was gone. `tlblab sim check` must catch every one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Defect {
    /// A lazy CPU that comes back to the mm it kept loaded never compares its `tlb_gen` with
    /// the mm's, so the flushes it skipped while lazy are never done.
    LazyNoCatchUp,
    /// `flush_tlb_func()` does a partial flush whenever the flush's generation is the mm's,
    /// without `new_tlb_gen == local_tlb_gen + 1`: when two ranged flushes arrive reversed, the
    /// later one marks the earlier one done without flushing its range (the case tlb.c's
    /// comment describes).
    PartialFlushWithoutGenRule,
    /// `native_flush_tlb_multi()` skips lazy CPUs even when the flush frees page tables: a lazy
    /// CPU keeps the freed table in its paging-structure caches under the PCID in its CR3 and
    /// may walk through it speculatively (Rik van Riel's 2018 series before "Only send page
    /// table free TLB flush to lazy TLB CPUs"; docs/safety.md §5).
    LazySkippedOnFreedTables,
    /// PTI whose user-PCID flush is never done: the single-page user flush marks nothing in
    /// `user_pcid_flush_mask`, so the return to user keeps the user PCID's stale entries.
    PtiNoUserFlush,
    /// x86 `flush_tlb_range()` before 3ef938c35035 (Jann Horn, "x86/mm: Fix flush_tlb_range()
    /// when used for zapping normal PMDs", upstream and stable in April 2025; CVE-2025-22045):
    /// it passed `freed_tables = false`, though khugepaged's collapse (`pmdp_collapse_flush()`)
    /// uses it to zap a normal PMD whose PTE page then leaves the tree, so lazy CPUs get no IPI
    /// and keep that table in their paging-structure caches. The fix passes `true`.
    RangeFlushWithoutFreedTables,
    /// The collapse of a normal PMD flushed with the 2 MiB stride (`stride_shift = PMD_SHIFT`,
    /// INVLPGB's ECX bit 31), as if each 2 MiB invalidation covered every translation inside
    /// it: the hardware invalidates only the translations of each stride's address, so the
    /// other 511 4 KiB entries of every 2 MiB stay (docs/safety.md §7 (g)).
    CollapsePmdStride,
    /// migrc or LUF whose page allocator hands out a page with a pending flush without doing
    /// the flush (`luf_takeoff_check_and_fold()` folds nothing): CPUs keep translations to a
    /// page that now holds someone else's data.
    LufReuseWithoutFlush,
}

/// A policy name or file that cannot be used.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// No policy or variant has this name.
    #[error("unknown policy {name:?}{hint} (known: {known})", hint = tlblab_types::names::did_you_mean(name, tlblab_types::names::listed(known)))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names.
        known: String,
    },
    /// A name after `+` is a base kernel, not a variant.
    #[error(
        "policy {name:?}: {part:?} is a base kernel; only variants can follow `+` ({variants})"
    )]
    NotAVariant {
        /// The whole name.
        name: String,
        /// The offending part.
        part: String,
        /// The variant names.
        variants: String,
    },
    /// The TOML file is malformed or has an unknown key.
    #[error("policy file {origin}: {message}")]
    Parse {
        /// The file.
        origin: String,
        /// The parser's message with line and column.
        message: String,
    },
    /// A numeric switch is outside the range the model runs (see [`Policy::out_of_range`]).
    #[error("policy file {origin}{at}: {message}", at = line.map(|l| format!(", line {l}")).unwrap_or_default())]
    OutOfRange {
        /// The file.
        origin: String,
        /// The line that sets the switch (`None` when it comes from the base).
        line: Option<usize>,
        /// The switch.
        key: &'static str,
        /// The value and its range.
        message: String,
    },
    /// The file could not be read.
    #[error("policy file {path}: cannot read it")]
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// A `[set]` value of the wrong type, located in the file's `text`: deserialised from the
/// merged table, the error has no position, only the key (`… in `hz``); `span_of` says where the
/// file sets it.
fn switch_error(
    text: &str,
    e: &toml::de::Error,
    span_of: impl Fn(&str) -> Option<std::ops::Range<usize>>,
) -> String {
    let full = e.to_string();
    let (message, span) = match full.trim_end().rsplit_once("\nin `") {
        Some((m, k)) => (m.to_string(), span_of(k.trim_end_matches('`'))),
        None => (e.message().trim_end().to_string(), None),
    };
    tlblab_types::plain::toml_error(text, &message, span)
}

/// A base kernel: a complete policy.
struct Base {
    name: &'static str,
    build: fn() -> Policy,
}

/// A variant: changes on top of a base.
struct Variant {
    name: &'static str,
    /// The base the variant applies to when named alone (the kernel of its study).
    default_base: &'static str,
    mirrors: &'static str,
    apply: fn(&mut Policy),
}

fn linux_6_18() -> Policy {
    Policy {
        name: "linux-6.18".into(),
        mirrors: "Linux 6.18 arch/x86/mm/tlb.c (lazy mm_cpumask, LOADED_MM_SWITCHING fix)".into(),
        file: None,
        pcid: true,
        tlb_gen: true,
        lazy: LazyMode::SkipLazy,
        lazy_cpumask: true,
        trim_cpumask: true,
        loaded_mm_switching_check: true,
        early_gen_exit: true,
        concurrent_local_flush: true,
        pt_reclaim: true,
        vma_locks: true,
        munmap_downgrade: true,
        rwsem_handoff: true,
        pti: Pti::Off,
        invlpgb: false,
        rar: false,
        lru_drain_on_zap: false,
        la57: La57::Off,
        flush_info: FlushInfo::PerCpu,
        xpfo: Xpfo::Off,
        tlb_single_page_flush_ceiling: 33,
        hz: 250,
        fair_sched: FairSched::Eevdf,
        latr: false,
        idle_leave_mm: false,
        pv_tlb_flush: true,
        unmap_flush: UnmapFlush::Off,
        pipe_wakes_writer_while_full: false,
        defect: None,
    }
}

fn linux_4_14() -> Policy {
    Policy {
        name: "linux-4.14".into(),
        mirrors: "Linux 4.14 (Andy Lutomirski's PCID series: 6 dynamic ASIDs, tlb_gen, ctx_id)"
            .into(),
        lazy: LazyMode::SwitchToInitMm,
        lazy_cpumask: false,
        trim_cpumask: false,
        loaded_mm_switching_check: false,
        early_gen_exit: false,
        concurrent_local_flush: false,
        pt_reclaim: false,
        vma_locks: false,
        munmap_downgrade: false,
        rwsem_handoff: false,
        idle_leave_mm: true,
        // EEVDF came with 6.6.
        fair_sched: FairSched::Cfs,
        // KVM's PV TLB flush came with 4.16.
        pv_tlb_flush: false,
        lru_drain_on_zap: true,
        ..linux_6_18()
    }
}

fn linux_4_14_nopcid() -> Policy {
    Policy {
        name: "linux-4.14-nopcid".into(),
        mirrors: "Linux 4.14 booted with nopcid: tlb_gen tracking, every mm switch flushes".into(),
        pcid: false,
        ..linux_4_14()
    }
}

fn linux_4_13() -> Policy {
    Policy {
        name: "linux-4.13".into(),
        mirrors: "Linux 4.13: no PCID, no tlb_gen; lazy CPUs stay in mm_cpumask and leave_mm() on a flush IPI".into(),
        pcid: false,
        tlb_gen: false,
        lazy: LazyMode::LeaveOnIpi,
        ..linux_4_14()
    }
}

fn linux_6_13() -> Policy {
    Policy {
        name: "linux-6.13".into(),
        mirrors: "Linux 6.13 arch/x86/mm/tlb.c: eager mm_cpumask (a CPU's bit cleared in the previous mm and set in the next at every switch between mms), no trimming".into(),
        // 209954cbc7d0 and 6db2526c1d69 came in 6.14.
        lazy_cpumask: false,
        trim_cpumask: false,
        // fea4e317f9e7 (6.15) only matters with the lazy mask's loaded_mm test.
        loaded_mm_switching_check: false,
        // CONFIG_PT_RECLAIM came in 6.14.
        pt_reclaim: false,
        // NOTE: 6.13's pipe_read() still woke a writer while the pipe stayed full (aaec5a95d596
        // came in 6.14); the 6.14 rule is kept, as `vma_locks` below, so that S7 compares the
        // mm_cpumask rules alone. The variant `pipe-wake-while-full` restores 6.13's.
        // NOTE: 6.13 has per-VMA locks for page faults (6.4) but MADV_DONTNEED still takes
        // mmap_lock for read (6.16 changed that); `vma_locks` covers both, and is kept on so
        // that S7 compares the mm_cpumask rules alone (docs/studies.md, S7).
        ..linux_6_18()
    }
}

const BASES: &[Base] = &[
    Base { name: "linux-4.13", build: linux_4_13 },
    Base { name: "linux-4.14-nopcid", build: linux_4_14_nopcid },
    Base { name: "linux-4.14", build: linux_4_14 },
    Base { name: "linux-6.18", build: linux_6_18 },
    Base { name: "linux-6.13", build: linux_6_13 },
];

const VARIANTS: &[Variant] = &[
    Variant {
        name: "pti-invpcid",
        default_base: "linux-4.14",
        mirrors: "PTI with INVPCID type 0 for single-page user flushes (4.15, 6cff64b86aaa)",
        apply: |p| p.pti = Pti::Invpcid,
    },
    Variant {
        name: "pti-deferred",
        default_base: "linux-4.14",
        mirrors: "PTI with the user-PCID flush deferred to the next return to user (Dave Hansen's 2017 alternative)",
        apply: |p| p.pti = Pti::Deferred,
    },
    Variant {
        name: "la57-off",
        default_base: "linux-4.14",
        mirrors: "4.14-rc kernel built for 4-level paging only",
        apply: |p| p.la57 = La57::Off,
    },
    Variant {
        name: "la57-runtime",
        default_base: "linux-4.14",
        mirrors: "4.14-rc boot-time 4/5-level switching with run-time p4d_folded tests",
        apply: |p| p.la57 = La57::Runtime,
    },
    Variant {
        name: "la57-patched",
        default_base: "linux-4.14",
        mirrors: "boot-time 4/5-level switching with hot paths patched by ALTERNATIVES",
        apply: |p| p.la57 = La57::Patched,
    },
    Variant {
        name: "la57-on",
        default_base: "linux-6.18",
        mirrors: "5-level paging in use on LA57 hardware",
        apply: |p| p.la57 = La57::On,
    },
    Variant {
        name: "flush-info-percpu",
        default_base: "linux-6.18",
        mirrors: "per-CPU flush_tlb_info, preemption off until all acks (3db6d5a5ecaf, 5.3–7.2)",
        apply: |p| p.flush_info = FlushInfo::PerCpu,
    },
    Variant {
        name: "flush-info-stack",
        default_base: "linux-6.18",
        mirrors: "flush_tlb_info on the stack, preemptible ack wait (ed15468787dd, a5a162fe1ae1; 7.3)",
        apply: |p| p.flush_info = FlushInfo::Stack,
    },
    Variant {
        name: "no-xpfo",
        default_base: "linux-4.14",
        mirrors: "stock kernel without XPFO",
        apply: |p| p.xpfo = Xpfo::Off,
    },
    Variant {
        name: "xpfo-sync",
        default_base: "linux-4.14",
        mirrors: "XPFO v9 (Khalid Aziz, 2019): flush_tlb_kernel_range() on every CPU per change",
        apply: |p| p.xpfo = Xpfo::Sync,
    },
    Variant {
        name: "xpfo-deferred",
        default_base: "linux-4.14",
        mirrors: "XPFO v9 12/13: other CPUs flush at their next context switch",
        apply: |p| p.xpfo = Xpfo::Deferred,
    },
    Variant {
        name: "latr",
        default_base: "linux-6.18",
        mirrors: "LATR (ASPLOS'18) asynchronous shootdowns (munmap and MADV_DONTNEED: no IPI; per-CPU states applied at each CPU's next tick or context switch)",
        apply: |p| p.latr = true,
    },
    Variant {
        name: "no-pv-flush",
        default_base: "linux-6.18",
        mirrors: "a KVM guest whose pv_tlb_flush_supported() is false (the host hints KVM_HINTS_REALTIME, e.g. QEMU kvm-hint-dedicated=on, or the guest sees MWAIT): native_flush_tlb_multi() sends every vCPU its IPI, preempted or not",
        apply: |p| p.pv_tlb_flush = false,
    },
    Variant {
        name: "migrc",
        default_base: "linux-6.18",
        mirrors: "migrc (Byungchul Park's RFC, 2023–2024): the flush of a migration's unmap of read-only source pages deferred until a source page is allocated again, or direct reclaim",
        apply: |p| p.unmap_flush = UnmapFlush::Migrc,
    },
    Variant {
        name: "luf",
        default_base: "linux-6.18",
        mirrors: "LUF, Lazy Unmap Flush (Byungchul Park's RFC v12, 2025): migrc's deferral for the unmaps of migration and reclaim, until the page is allocated again or a fault sets a writable PTE",
        apply: |p| p.unmap_flush = UnmapFlush::Luf,
    },
    Variant {
        name: "bad-luf-reuse-without-flush",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): LUF whose page allocator hands out a page with a pending flush without doing it",
        apply: |p| {
            p.unmap_flush = UnmapFlush::Luf;
            p.defect = Some(Defect::LufReuseWithoutFlush);
        },
    },
    Variant {
        name: "bad-lazy-no-catch-up",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): a lazy CPU never catches up on the tlb_gen it missed",
        apply: |p| p.defect = Some(Defect::LazyNoCatchUp),
    },
    Variant {
        name: "bad-partial-flush",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): partial flushes without the new_tlb_gen == local_tlb_gen + 1 rule",
        apply: |p| p.defect = Some(Defect::PartialFlushWithoutGenRule),
    },
    Variant {
        name: "bad-lazy-skip-freed-tables",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): lazy CPUs skipped by flushes that free page tables",
        apply: |p| p.defect = Some(Defect::LazySkippedOnFreedTables),
    },
    Variant {
        name: "bad-pti-no-user-flush",
        default_base: "linux-4.14",
        mirrors: "KNOWN BAD (for the safety checker): PTI with the deferred user-PCID flush never done",
        apply: |p| {
            p.pti = Pti::Deferred;
            p.defect = Some(Defect::PtiNoUserFlush);
        },
    },
    Variant {
        name: "bad-no-switching-check",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): 6.14's should_flush_tlb(), which skips a CPU in LOADED_MM_SWITCHING (CVE-2025-37964, fixed by fea4e317f9e7 in 6.15)",
        apply: |p| p.loaded_mm_switching_check = false,
    },
    Variant {
        name: "pipe-wake-while-full",
        default_base: "linux-6.18",
        mirrors: "5.5–6.13 pipe_read(): a read that began with the pipe full wakes a waiting writer even when it frees no buffer, so the writer sleeps again (before aaec5a95d596, 6.14)",
        apply: |p| p.pipe_wakes_writer_while_full = true,
    },
    Variant {
        name: "no-trim-cpumask",
        default_base: "linux-6.18",
        mirrors: "6.14's lazy mm_cpumask (209954cbc7d0) without its once-a-second trimming (6db2526c1d69): stale bits are dropped only by flushes that reach them anyway",
        apply: |p| p.trim_cpumask = false,
    },
    Variant {
        name: "bad-collapse-no-freed-tables",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): flush_tlb_range() with freed_tables = false, as before 3ef938c35035 (CVE-2025-22045): the collapse of a normal PMD skips lazy CPUs that cache its freed PTE page",
        apply: |p| p.defect = Some(Defect::RangeFlushWithoutFreedTables),
    },
    Variant {
        name: "bad-invlpgb-2m-stride",
        default_base: "linux-6.18",
        mirrors: "KNOWN BAD (for the safety checker): INVLPGB (as +invlpgb) with the collapse of a normal PMD flushed at the 2 MiB stride, leaving its 4 KiB entries stale",
        apply: |p| {
            p.invlpgb = true;
            p.defect = Some(Defect::CollapsePmdStride);
        },
    },
    Variant {
        name: "invlpgb",
        default_base: "linux-6.18",
        mirrors: "AMD INVLPGB broadcast flushes and global ASIDs (6.15, Rik van Riel)",
        apply: |p| p.invlpgb = true,
    },
    Variant {
        name: "rar",
        default_base: "linux-6.18",
        mirrors: "Intel RAR TLB invalidation (RFC series, Rik van Riel, May 2025, not merged): global ASIDs as for INVLPGB, flushes sent by RAR to the CPUs of mm_cpumask and done by their microcode",
        apply: |p| p.rar = true,
    },
    Variant {
        name: "lru-drain",
        default_base: "linux-6.18",
        mirrors: "the pre-6.15 zap path: lru_add_drain() in MADV_DONTNEED's and munmap's zaps (removed by \"mm: remove unnecessary calls to lru_add_drain\", 6.15)",
        apply: |p| p.lru_drain_on_zap = true,
    },
    Variant {
        name: "no-lru-drain",
        default_base: "linux-4.14",
        mirrors: "the 6.15 zap path on an older kernel: no lru_add_drain() in MADV_DONTNEED's and munmap's zaps",
        apply: |p| p.lru_drain_on_zap = false,
    },
];

/// `hz` (`CONFIG_HZ`, ticks per second): [`tlblab_types::bounds::HZ`], where the reason is.
pub const HZ_RANGE: std::ops::RangeInclusive<u64> =
    tlblab_types::bounds::HZ.min..=tlblab_types::bounds::HZ.max;

/// `tlb_single_page_flush_ceiling`: [`tlblab_types::bounds::CEILING`], where the reason is.
pub const CEILING_RANGE: std::ops::RangeInclusive<u64> =
    tlblab_types::bounds::CEILING.min..=tlblab_types::bounds::CEILING.max;

impl Policy {
    /// The first numeric switch outside the range the model runs ([`HZ_RANGE`],
    /// [`CEILING_RANGE`]), with a message that gives its value and range.
    pub fn out_of_range(&self) -> Option<(&'static str, String)> {
        let check = |key, value: u64, range: &std::ops::RangeInclusive<u64>, what| {
            (!range.contains(&value)).then(|| {
                let (lo, hi) = (range.start(), range.end());
                (key, format!("`{key} = {value}` is outside {lo} to {hi} ({what})"))
            })
        };
        check("hz", self.hz, &HZ_RANGE, "CONFIG_HZ, ticks per second; Linux uses 100 to 1000")
            .or_else(|| {
                check(
                    "tlb_single_page_flush_ceiling",
                    self.tlb_single_page_flush_ceiling,
                    &CEILING_RANGE,
                    "pages; Linux's default is 33",
                )
            })
    }

    /// A policy by name: a base (`linux-6.18`), a variant on its study's base (`pti-deferred`),
    /// or a base and variants joined by `+` (`linux-6.18+pti-deferred`).
    pub fn named(name: &str) -> Result<Policy, PolicyError> {
        let mut parts = name.split('+');
        let first = parts.next().unwrap_or_default();
        let mut policy = if let Some(base) = BASES.iter().find(|b| b.name == first) {
            (base.build)()
        } else if let Some(v) = VARIANTS.iter().find(|v| v.name == first) {
            let mut p = Policy::named(v.default_base)?;
            p.mirrors = format!("{} on {}", v.mirrors, p.mirrors);
            (v.apply)(&mut p);
            p
        } else {
            return Err(PolicyError::Unknown { name: first.to_string(), known: known_names() });
        };
        for part in parts {
            let Some(v) = VARIANTS.iter().find(|v| v.name == part) else {
                if BASES.iter().any(|b| b.name == part) {
                    return Err(PolicyError::NotAVariant {
                        name: name.to_string(),
                        part: part.to_string(),
                        variants: VARIANTS.iter().map(|v| v.name).collect::<Vec<_>>().join(", "),
                    });
                }
                return Err(PolicyError::Unknown { name: part.to_string(), known: known_names() });
            };
            (v.apply)(&mut policy);
            policy.mirrors = format!("{}; {}", policy.mirrors, v.mirrors);
        }
        policy.name = name.to_string();
        Ok(policy)
    }

    /// Every built-in name: bases, then variants.
    pub fn builtin_names() -> Vec<&'static str> {
        BASES.iter().map(|b| b.name).chain(VARIANTS.iter().map(|v| v.name)).collect()
    }

    /// A policy from a TOML file (see [`Policy::from_toml`]).
    pub fn from_file(path: &std::path::Path) -> Result<Policy, PolicyError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path)
            .map_err(|source| PolicyError::Io { path: shown.clone(), source })?;
        let text = tlblab_types::plain::utf8_text(&bytes)
            .map_err(|message| PolicyError::Parse { origin: shown.clone(), message })?;
        Ok(Policy { file: Some(shown.clone()), ..Policy::from_toml(text, &shown)? })
    }

    /// A user-defined policy: a `name`, a `base` (any name [`Policy::named`] accepts), an
    /// optional `mirrors`, and a `[set]` table of switches to change, e.g.
    ///
    /// ```
    /// let p = tlblab_kernel::Policy::from_toml(r#"
    ///     name = "ceiling-64"
    ///     base = "linux-6.18"
    ///     mirrors = "6.18 with the debugfs ceiling raised to 64"
    ///     [set]
    ///     tlb_single_page_flush_ceiling = 64
    /// "#, "ceiling-64.toml").unwrap();
    /// assert_eq!(p.tlb_single_page_flush_ceiling, 64);
    /// assert!(p.lazy_cpumask);
    /// ```
    pub fn from_toml(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            name: String,
            base: String,
            mirrors: Option<String>,
            /// Each switch with where its value is, to name the line of a bad one.
            #[serde(default)]
            set: std::collections::BTreeMap<String, toml::Spanned<toml::Value>>,
        }
        let parse = |message: String| PolicyError::Parse { origin: origin.to_string(), message };
        let file: File = toml::from_str(text).map_err(|e| {
            parse(tlblab_types::plain::toml_error(text, e.message().trim_end(), e.span()))
        })?;
        // A bad base is the file's error: name the file and the line that sets it.
        let base = Policy::named(&file.base).map_err(|e| {
            let line = tlblab_types::plain::toml_line_of(text, "", "base");
            parse(match line {
                Some(line) => format!("line {line}, `base`: {e}"),
                None => format!("`base`: {e}"),
            })
        })?;
        // Merge the changes into the base's own table, so that serde checks every key and type.
        let mut table = base.switch_table().map_err(parse)?;
        let known = table.keys().cloned().collect::<Vec<_>>().join(", ");
        let span_of = |key: &str| Some(file.set.get(key)?.span());
        let line_of = |key: &str| {
            let start = span_of(key)?.start;
            Some(text.get(..start)?.matches('\n').count() + 1)
        };
        for (key, value) in &file.set {
            if key == "name" || key == "mirrors" {
                return Err(parse(format!("[set] cannot change {key:?}; set it at the top")));
            }
            if !table.contains_key(key) {
                let hint = tlblab_types::names::did_you_mean(key, table.keys().map(|k| k.as_str()));
                return Err(parse(format!(
                    "[set] has unknown switch {key:?}{hint} (switches: {known})"
                )));
            }
            table.insert(key.clone(), value.get_ref().clone());
        }
        table.insert("name".into(), toml::Value::String(base.name.clone()));
        table.insert("mirrors".into(), toml::Value::String(base.mirrors.clone()));
        let mut policy: Policy = table
            .try_into()
            .map_err(|e: toml::de::Error| parse(switch_error(text, &e, span_of)))?;
        if let Some((key, message)) = policy.out_of_range() {
            let line = line_of(key);
            return Err(PolicyError::OutOfRange { origin: origin.to_string(), line, key, message });
        }
        policy.name = file.name;
        policy.mirrors = file.mirrors.unwrap_or_else(|| format!("{} (changed)", base.mirrors));
        Ok(policy)
    }

    /// Every switch (each field but `name` and `mirrors`), as a policy file's `[set]` names
    /// them.
    fn switch_table(&self) -> Result<toml::Table, String> {
        let mut table = toml::Table::try_from(self).map_err(|e| e.to_string())?;
        table.remove("name");
        table.remove("mirrors");
        // A switch left out of the serialized form when off is still a switch.
        table.entry("latr").or_insert(toml::Value::Boolean(self.latr));
        table.entry("unmap_flush").or_insert(toml::Value::String("off".into()));
        table.entry("fair_sched").or_insert(toml::Value::String("eevdf".into()));
        Ok(table)
    }

    /// Every switch and its value, in the policy file's spelling (`tlblab sim policies show`).
    pub fn switches(&self) -> Vec<(String, String)> {
        self.switch_table()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect()
    }

    /// A policy file (see [`Policy::from_toml`]) whose `base` is `base` (a name this policy was
    /// loaded by) and whose `[set]` lists every switch with its value: a template to edit.
    pub fn policy_file(&self, base: &str) -> String {
        let mut file = toml::Table::new();
        file.insert("name".into(), format!("{}-edited", self.name).into());
        file.insert("base".into(), base.into());
        file.insert("mirrors".into(), format!("{} (edited)", self.mirrors).into());
        file.insert("set".into(), toml::Value::Table(self.switch_table().unwrap_or_default()));
        toml::to_string(&file).unwrap_or_default()
    }

    /// How an error names the policy: its name, and its file when it came from one.
    pub fn shown(&self) -> String {
        tlblab_types::names::with_file(&self.name, self.file.as_deref())
    }

    /// A built-in name, or a path to a TOML file (ends in `.toml` or contains `/`).
    pub fn load(name_or_path: &str) -> Result<Policy, PolicyError> {
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            Policy::from_file(std::path::Path::new(name_or_path))
        } else {
            Policy::named(name_or_path)
        }
    }
}

fn known_names() -> String {
    Policy::builtin_names().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tlblab sim policies show NAME --toml` is a template that reads back as NAME itself,
    /// every switch included, for every built-in policy.
    #[test]
    fn a_policy_file_template_reads_back_as_its_policy() {
        for name in Policy::builtin_names() {
            let p = Policy::named(name).unwrap();
            let mut back = Policy::from_toml(&p.policy_file(name), "template").unwrap();
            assert_eq!(back.name, format!("{name}-edited"));
            back.name = p.name.clone();
            back.mirrors = p.mirrors.clone();
            assert_eq!(back, p, "{name}");
            assert!(p.switches().iter().any(|(k, v)| k == "pcid" && (v == "true" || v == "false")));
        }
    }

    #[test]
    fn every_builtin_name_resolves_and_says_what_it_mirrors() {
        for name in Policy::builtin_names() {
            let p = Policy::named(name).unwrap();
            assert_eq!(p.name, name);
            assert!(!p.mirrors.is_empty());
        }
    }

    #[test]
    fn variants_compose_on_a_base() {
        let p = Policy::named("linux-6.18+pti-deferred+flush-info-stack").unwrap();
        assert_eq!(p.pti, Pti::Deferred);
        assert_eq!(p.flush_info, FlushInfo::Stack);
        assert!(p.lazy_cpumask, "the 6.18 base is kept");
        let alone = Policy::named("pti-deferred").unwrap();
        assert!(!alone.lazy_cpumask, "a variant alone applies to its study's base (4.14)");
    }

    #[test]
    fn bad_names_are_refused_with_the_known_ones() {
        let e = Policy::named("linux-9.9").unwrap_err().to_string();
        assert!(e.contains("linux-9.9") && e.contains("linux-6.18"), "{e}");
        let e = Policy::named("pti-deferred+linux-4.13").unwrap_err().to_string();
        assert!(e.contains("only variants"), "{e}");
    }

    #[test]
    fn latr_is_a_variant_and_a_toml_switch() {
        let p = Policy::named("latr").unwrap();
        assert!(p.latr && p.lazy_cpumask, "latr alone applies to linux-6.18");
        assert!(!Policy::named("linux-6.18").unwrap().latr);
        let text = "name='x'\nbase='linux-4.14'\n[set]\nlatr=true\n";
        assert!(Policy::from_toml(text, "x.toml").unwrap().latr);
    }

    #[test]
    fn toml_rejects_unknown_switches_and_bad_types() {
        let text = "name='x'\nbase='linux-6.18'\n[set]\nceiling=3\n";
        let e = Policy::from_toml(text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("x.toml") && e.contains("ceiling"), "{e}");
        let text = "name='x'\nbase='linux-6.18'\n[set]\npti='sometimes'\n";
        let e = Policy::from_toml(text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("sometimes"), "{e}");
        let text = "name='x'\nbase='linux-6.18'\nextra=1\n";
        let e = Policy::from_toml(text, "x.toml").unwrap_err().to_string();
        assert!(e.contains("extra"), "{e}");
    }

    /// A zero or huge `hz` (a division by zero, a run of hours) and a ceiling past the page
    /// loop's bound are refused with the file, the line and the range; the bounds themselves
    /// are accepted.
    #[test]
    fn numeric_switches_out_of_range_are_refused_with_their_line() {
        let file =
            |set: &str| format!("name = 'x'\nbase = 'linux-6.18'\n[set]\npcid = true\n{set}\n");
        for (set, key) in [
            ("hz = 0", "hz"),
            ("hz = 100000000", "hz"),
            (
                "tlb_single_page_flush_ceiling = 9223372036854775807",
                "tlb_single_page_flush_ceiling",
            ),
        ] {
            let e = Policy::from_toml(&file(set), "p.toml").unwrap_err();
            let PolicyError::OutOfRange { line, key: k, .. } = &e else { panic!("{e:?}") };
            assert_eq!((*line, *k), (Some(5), key), "{set}");
            let shown = e.to_string();
            assert!(shown.starts_with("policy file p.toml, line 5: `"), "{shown}");
            assert!(shown.contains(set) && shown.contains(" to "), "{shown}");
        }
        for set in [
            "hz = 1",
            "hz = 10000",
            "tlb_single_page_flush_ceiling = 0",
            "tlb_single_page_flush_ceiling = 65535",
        ] {
            Policy::from_toml(&file(set), "p.toml").unwrap();
        }
        for name in Policy::builtin_names() {
            assert_eq!(Policy::named(name).unwrap().out_of_range(), None, "{name}");
        }
    }
}
