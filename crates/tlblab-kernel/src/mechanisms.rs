//! Switches for the model's mechanisms (docs/kernel-model.md, "Mechanisms and their switches"),
//! so that a user can see what each contributes: a run with one switched off is the model as it
//! was, or as a preset without that section would make it, without that mechanism.
//!
//! A mechanism is a piece of machine or kernel behaviour the model adds to the flush code
//! itself, not a kernel version's choice (those are [`crate::Policy`] switches) and not a way of
//! accounting time. Adding one is a line in [`mechanisms!`]'s invocation below, a line in
//! [`Mechanism::present_on`], and its check where it acts
//! (`config.mechanisms.is_on(Mechanism::…)`).

use serde::Serialize;
use std::fmt;
use thiserror::Error;
use tlblab_sim::machine::mitigations::InPath;
use tlblab_sim::machine::{MachineSpec, TlbScope};

macro_rules! mechanisms {
    ($($(#[$doc:meta])* $variant:ident => $name:literal, $what:literal, $doc_section:literal, $off:literal;)+) => {
        /// A mechanism of the model that can be switched off.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Mechanism {
            $($(#[$doc])* $variant,)+
        }

        impl Mechanism {
            /// Every mechanism, in the order the docs and `--explain` list them.
            pub const ALL: &'static [Mechanism] = &[$(Mechanism::$variant),+];

            /// Its stable name (kebab-case), as `--without` takes it.
            pub fn name(self) -> &'static str {
                match self { $(Mechanism::$variant => $name,)+ }
            }

            /// What it models, in one line.
            pub fn description(self) -> &'static str {
                match self { $(Mechanism::$variant => $what,)+ }
            }

            /// The doc section that describes it.
            pub fn doc(self) -> &'static str {
                match self { $(Mechanism::$variant => $doc_section,)+ }
            }

            /// What the model does with it off.
            pub fn off_means(self) -> &'static str {
                match self { $(Mechanism::$variant => $off,)+ }
            }
        }
    };
}

mechanisms! {
    /// KVM guest costs (`kernel/guest.rs`).
    Guest => "guest",
        "a KVM guest's VM exits: one per IPI sent (per batch with PV send-IPI), one per IPI received without posted interrupts",
        "docs/kernel-model.md, \"Virtualisation\"",
        "bare metal, as a preset without [guest] (the preset's [idle] table stays)";
    /// Idle states and the governor (`kernel/idle.rs`).
    IdleStates => "idle-states",
        "the C-states of the preset's [idle] table, the menu governor's choice, their exit latencies and TLB loss",
        "docs/kernel-model.md, \"Idle states\"",
        "as a preset without [idle]: one state left at kernel.idle_exit";
    /// `smp_call_function_many_cond()`'s per-CPU call queue (`kernel/run.rs`).
    CsdQueue => "csd-queue",
        "smp_call_function_many's csd queue (a csd per target, an IPI only to an empty queue, one interrupt runs every queued call, the initiator waits for each csd in turn)",
        "docs/kernel-model.md, \"How time is modelled\" (IPIs and cross-CPU calls)",
        "one IPI per call per target carrying its call, no csd write, the wait ends ipi_ack after the last target";
    /// The remote reads of other CPUs' TLB state in the IPI loop (`kernel/tlbstate_line.rs`).
    TlbstateLines => "tlbstate-lines",
        "a flush initiator's condition function reads each CPU's cpu_tlbstate_shared.is_lazy line (4.20+) and, 6.14+, its cpu_tlbstate.loaded_mm line, which that CPU rewrites at each mm load and each flush of ASID slot 0 or 1: a cache-line transfer per CPU of the mask, one after another",
        "docs/kernel-model.md, \"Reading other CPUs' TLB state\"",
        "the condition function is free (the model before this mechanism)";
    /// The fixed cost of an mmu_gather that frees pages (`kernel/run.rs`, `zap_cycles`).
    ZapBatch => "zap-batch",
        "once per mmu_gather that cleared a present PTE: lru_add_drain() and tlb_finish_mmu()'s batched free of the pages (kernel.zap_batch)",
        "docs/kernel-model.md, \"Memory management\" (item 4)",
        "zap_pte per PTE only, as a preset whose zap_batch is 0";
    /// `mm->mmap_lock` (`kernel/mmap_lock.rs`).
    MmapLock => "mmap-lock",
        "mm->mmap_lock: mmap/munmap/mprotect take it for write (munmap downgrades to read from 4.20), faults and MADV_DONTNEED for read before per-VMA locks; writers spin on a running holder, others sleep",
        "docs/kernel-model.md, \"How time is modelled\" (mmap_lock)",
        "no lock: every path runs at once, as if each task had the mm to itself";
    /// The live loops' own program images (`program::WorkingSet`).
    WorkingSet => "working-set",
        "each live loop's own code, stack and library pages, referenced once per iteration (measured with a lackey trace), so that a flushing CR3 write costs their refills",
        "docs/kernel-model.md, \"How time is modelled\" (working sets)",
        "the loops reference only the regions they map (the model before this mechanism)";
    /// Memory-level parallelism of page-strided loads and stores (`Kernel::touch_cycles`).
    Mlp => "mlp",
        "independent page-strided loads and stores overlap their STLB lookups and page walks (up to the preset's page_walkers at once) with each other and with the work between them",
        "docs/hardware-model.md, \"Memory-level parallelism\"",
        "every translation is charged in full, one after the other (the model before this mechanism)";
    /// Dependent references: no overlap of their translations (`Kernel::touch_cycles`).
    PointerChase => "pointer-chase",
        "a program that chases pointers (kbuild's compiler walking its IR through its heap) makes references whose address is the load before: each translation, STLB lookup and walk, stalls the chain, so mlp does not overlap them",
        "docs/hardware-model.md, \"Memory-level parallelism\"",
        "every load and store touch of several pages is independent and overlaps under mlp (the model before this mechanism)";
    /// STLB hits pipelined under `mlp` (`Kernel::touch_cycles`).
    StlbPipelined => "stlb-pipelined",
        "under mlp, the STLB lookups of independent references that hit it are pipelined, one a cycle, beside the work and the walks (measured here: a read loop over 1,024 pages, all STLB hits, costs per page what one over 32 does)",
        "docs/hardware-model.md, \"Memory-level parallelism\"",
        "STLB hits are divided by the page walkers with the walks (the model before this mechanism)";
    /// pingpong's zero-page loads hit one cache line (`workloads/mod.rs`, `PingPong::touch_cycles`).
    ZeroPageLine => "zero-page-line",
        "pingpong's touches load never-written pages, all mapped to the zero page's one physical line: each page's work is the loop's own (ZERO_PAGE_LOAD_CYCLES, measured), not cycles_per_page, which stands for a page of its own",
        "docs/workloads.md, \"Work per page\"",
        "each page pingpong touches costs cycles_per_page (the model before this mechanism)";
    /// kbuild's compiler's measured page reuse (`workloads/reuse.rs`, `Compiler::reuse`).
    CompilerReuse => "compiler-reuse",
        "kbuild's compiler comes back to its pages at the rates and LRU stack distances measured for cc1 (cachegrind and lackey), and each fetch fault maps 16 pages of its text (do_fault_around)",
        "docs/workloads.md, \"kbuild\" (the compiler, step 2)",
        "bursts of 4 pages every 1,600 cycles, 80% of them over the hottest fifth of its pages, one text page per fetch fault (the model before this mechanism)";
    /// VMA merging and splitting (`mm.rs`, `Mm::mmap_beside`).
    VmaMerge => "vma-merge",
        "mmap(MAP_FIXED_NOREPLACE) beside a region merges the two VMAs, and a munmap of the new pages alone splits the merged VMA (kernel.split_vma)",
        "docs/kernel-model.md, \"Memory management\" (item 2)",
        "every mapping is a VMA of its own (placed beside when asked), and no munmap splits one";
    /// Two-dimensional (EPT/NPT) page walks of a guest (`tlblab_sim` `hw/nested.rs`).
    NestedPaging => "nested-paging",
        "a guest's page walks under EPT/NPT: each guest table referenced and the final address translated through the host's tables (shorter with 2M/1G host pages), cut by a nested-translation cache",
        "docs/hardware-model.md, \"Nested paging (EPT/NPT)\"",
        "walks as on bare metal, as a preset without [guest.nested]";
    /// The host preempting vCPUs (`kernel/vcpu.rs`).
    VcpuPreemption => "vcpu-preemption",
        "an overcommitted host takes each vCPU away for other threads' host slices (seeded): it runs nothing meanwhile, time is steal, its interrupts wait",
        "docs/kernel-model.md, \"Virtualisation\"",
        "dedicated pCPUs, as a preset with overcommit = 1 (no preemption, and so no PV flush)";
    /// KVM's paravirtual TLB flush (`kernel/vcpu.rs`, `kvm_flush_tlb_multi()`).
    PvTlbFlush => "pv-tlb-flush",
        "kvm_flush_tlb_multi(): a flush aimed at a preempted vCPU sets KVM_VCPU_FLUSH_TLB instead of an IPI; the host flushes its whole TLB at its next entry",
        "docs/kernel-model.md, \"Virtualisation\"",
        "native_flush_tlb_multi() IPIs preempted vCPUs too, as a preset with pv_tlb_flush = false";
    /// XPFO's events besides the unmap at allocation (`kernel/xpfo.rs`).
    XpfoEvents => "xpfo-events",
        "XPFO v9's whole event set: xpfo_kmap/xpfo_kunmap around the kernel's zeroing and copying of user pages (each kunmap an unmap with its flush), exec's copies, the per-page lock, mapcount and flag atomics, set_kpte's page-table lookups, and pending_xpfo_flush's cache line",
        "docs/kernel-model.md, \"How time is modelled\" (XPFO)",
        "only the unmap at allocation, with its flush (the model before this mechanism)";
    /// XPFO's 4 KiB direct map (`Kernel::xpfo_direct_map_touch`).
    #[serde(rename = "xpfo-direct-map-4k")]
    XpfoDirectMap4k => "xpfo-direct-map-4k",
        "under XPFO the direct map is split to 4 KiB pages: the kernel's reference to each kmapped user page (zeroing, copying) is translated at 4 KiB, and walks since the unmap flushed it",
        "docs/kernel-model.md, \"How time is modelled\" (XPFO)",
        "the kernel's references to the direct map are not modelled, as with its 1 GiB / 2 MiB pages, which they hit";
    /// CPU-vulnerability mitigations (`kernel/mitigations.rs`).
    Mitigations => "mitigations",
        "the preset's [mitigations]: retpolines, Safe RET's return thunk, UNTRAIN_RET at entry, VERW at exit and the RSB fill at context switch inside the measured paths; IBPB in cond_mitigation() at a switch to another user mm",
        "docs/kernel-model.md, \"Mitigations\"",
        "the base paths: every [kernel] figure less its mitigation events ([mitigations.paths]), no IBPB";
    /// Retpolines alone (`kernel/mitigations.rs`).
    MitigationRetpoline => "mitigation-retpoline",
        "retpoline thunks: the extra of each indirect branch of a measured path ([mitigations] retpoline)",
        "docs/kernel-model.md, \"Mitigations\"",
        "the figures less indirect × retpoline (the thunks' returns stay with mitigation-safe-ret)";
    /// The SRSO return thunk alone (`kernel/mitigations.rs`).
    MitigationSafeRet => "mitigation-safe-ret",
        "SRSO Safe RET: every kernel ret of a measured path through srso_return_thunk, a retpoline thunk's included ([mitigations] safe_ret)",
        "docs/kernel-model.md, \"Mitigations\"",
        "the figures less (rets + indirect) × safe_ret";
    /// `UNTRAIN_RET` at entry alone (`kernel/mitigations.rs`).
    MitigationUntrainRet => "mitigation-untrain-ret",
        "UNTRAIN_RET (srso_untrain_ret) at each entry from user mode of a measured path ([mitigations] untrain_ret)",
        "docs/kernel-model.md, \"Mitigations\"",
        "the figures less entries × untrain_ret";
    /// VERW at exit alone (`kernel/mitigations.rs`).
    MitigationVerw => "mitigation-verw",
        "CLEAR_CPU_BUFFERS (VERW) at each return to user mode of a measured path ([mitigations] verw)",
        "docs/kernel-model.md, \"Mitigations\"",
        "the figures less entries × verw";
    /// The RSB fill at context switch alone (`kernel/mitigations.rs`).
    MitigationRsbFill => "mitigation-rsb-fill",
        "FILL_RETURN_BUFFER in __switch_to_asm, per context switch of a measured path ([mitigations] rsb_fill)",
        "docs/kernel-model.md, \"Mitigations\"",
        "the figures less switches × rsb_fill";
    /// IBPB in `cond_mitigation()` alone (`kernel/mitigations.rs`).
    MitigationIbpb => "mitigation-ibpb",
        "IBPB in cond_mitigation() at a context switch to another user mm ([mitigations] ibpb, ibpb_mode)",
        "docs/kernel-model.md, \"Mitigations\"",
        "no IBPB";
    /// The page-freeing locks (`kernel/page_locks.rs`).
    PageLocks => "page-locks",
        "lruvec->lru_lock and zone->lock, shared by every CPU: per-CPU lru_add batches drained under the LRU lock, page frees through per-CPU pcp lists to the zone under its lock, lru_add_drain() in the zap path before 6.15; FIFO spinlocks whose waits and line transfers are counted ([locks])",
        "docs/kernel-model.md, \"Page-freeing locks\"",
        "no lock: page allocation and freeing cost only their path figures, as a preset without [locks]";
    /// Interrupts off around the page-freeing locks (`kernel/page_locks.rs`).
    LockIrqsOff => "lock-irqs-off",
        "spin_lock_irqsave() on lruvec->lru_lock and zone->lock: interrupts off while a CPU waits for and holds either lock, so a flush IPI reaching it waits for the release; each section a step of its own where the kernel takes it (the pre-6.15 lru_add_drain() at the zap's start)",
        "docs/kernel-model.md, \"How time is modelled\" (Page-freeing locks)",
        "lock sections inside the steps that reach them, interrupts on (the model before this mechanism)";
    /// The LRU list's cache lines written under the lock (`kernel/page_locks.rs`).
    LruListLines => "lru-list-lines",
        "the LRU list's own cache lines under lruvec->lru_lock: a folio added at the head writes the old first folio's line, a folio taken off reads its own line and writes its two neighbours', each a cache-line transfer when another CPU wrote it last (a list of who added each folio and who last wrote it)",
        "docs/kernel-model.md, \"How time is modelled\" (Page-freeing locks)",
        "each folio costs lru_folio only, on lines the holder is taken to own (the model before this mechanism)";
    /// vfork()'s suspension of the parent until the child execs or exits (`kernel/process.rs`).
    VforkWait => "vfork-wait",
        "vfork()/posix_spawn() put the parent to sleep until the child execs or exits (wait_for_vfork_done()), a block and a wake-up per child",
        "docs/kernel-model.md, \"Memory management\" (item 8)",
        "the parent runs on after vfork() (the model before this mechanism)";
    /// Wake-ups of polling idle CPUs without an IPI (`kernel/idle.rs`, `Kernel::polls`).
    PollWake => "poll-wake",
        "a task woken for an idle CPU that polls (idle=poll, or cpuidle's POLL state) gets no reschedule IPI: resched_curr()'s set_nr_and_not_polling() sees TIF_POLLING_NRFLAG, and the polling loop sees TIF_NEED_RESCHED one cache-line transfer later (no interrupt, and in a guest no VM exit)",
        "docs/kernel-model.md, \"Idle states\"",
        "every wake-up of an idle CPU is a reschedule IPI, polling or not (the model before this mechanism)";
    /// rwsem lock stealing and writer wake-ups on `mmap_lock` (`kernel/mmap_lock.rs`).
    RwsemSteal => "rwsem-steal",
        "mmap_lock's free lock goes to whoever takes it first: a running writer takes it past sleeping waiters, 5.3+ a reader one no writer holds; a release grants the lock to readers at the head but only wakes a writer there, which tries again when it runs (5.3+: a handoff after RWSEM_WAIT_TIMEOUT)",
        "docs/kernel-model.md, \"How time is modelled\" (mmap_lock)",
        "a release hands the lock to the head of the queue, writer or readers, and nobody passes a sleeping waiter (a convoy; the model before this mechanism)";
    /// The fair class's pick and wake-up preemption, EEVDF or CFS (`kernel/fair.rs`).
    WakeupPreemption => "wakeup-preemption",
        "the fair class as the policy's kernel has it: EEVDF (6.6+: the eligible task with the earliest deadline runs next; a woken task preempts when pick_eevdf() would pick it) or CFS (before: the least vruntime runs next; a woken task preempts one more than the wake-up granularity ahead of it), tunables scaled by 1 + ilog2(min(CPUs, 8))",
        "docs/kernel-model.md, \"Scheduler\"",
        "a round-robin run queue, a slice of 0.75 ms noticed at a tick, and no wake-up preemption (the model before this mechanism)";
    /// The haltpoll cpuidle governor of a KVM guest (`kernel/idle.rs`).
    Haltpoll => "haltpoll",
        "a KVM guest's haltpoll governor ([idle.haltpoll]) chooses the idle state instead of menu: an idle vCPU polls for its poll window, which starts at 0 and adapts to its halts within guest_halt_poll_ns, then halts",
        "docs/kernel-model.md, \"Idle states\"",
        "the menu governor chooses, as on bare metal (polls when the predicted idle period is short)";
    /// Queued pipe and socket messages gone cold (`kernel/channel.rs`).
    QueuedMessages => "queued-messages",
        "a pipe or socket message read after others were written on its writer's CPU costs pipe_queued or socket_queued more (the skb, its data, the buffer page gone from the caches meanwhile), in proportion to how many up to the depth they were measured at",
        "docs/kernel-model.md, \"How time is modelled\" (pipes and sockets)",
        "every message costs the hot write and read, however deep its queue (the model before this mechanism)";
    /// A fault's cost by how recently its frame was freed (`kernel/frames.rs`).
    HotFrames => "hot-frames",
        "a CPU's page allocator hands out the page it freed last (its per-CPU list is LIFO): an anonymous fault whose frame this CPU freed a moment ago costs page_fault_anon_hot (measured refaulting 256 pages), one whose frame is far down the list or new costs page_fault_anon (measured over 4,096 fresh pages), on a log line between by how many frames went through the CPU since",
        "docs/kernel-model.md, \"How time is modelled\" (page faults)",
        "every anonymous write fault costs page_fault_anon (the model before this mechanism)";
    /// Last-level caches smaller than a socket, and lines moved by distance (`[topology]`;
    /// `kernel/cpumask_line.rs`, `kernel/wake.rs`).
    LlcDomains => "llc-domains",
        "a socket's cores split into last-level caches ([topology] cores_per_llc: AMD's CCXs) and every line that moves between CPUs (a csd, a pipe's or socket's, the mmap_lock's, mm_cpumask's, cpu_tlbstate's) costs by how far it goes: cache_line_transfer_llc within an LLC, cache_line_transfer between LLCs, cache_line_transfer_remote between sockets; wake-up placement (wake_affine, select_idle_sibling, wake_wide's sd_llc_size) and ttwu_queue()'s cross-LLC wake list see the CCX",
        "docs/kernel-model.md, \"The cost of writing `mm_cpumask`\"",
        "one LLC per socket; mm_cpumask's and cpu_tlbstate's lines cost cache_line_transfer within a socket and cache_line_transfer_remote across, every other line cache_line_transfer (the model before this mechanism)";
    /// INVLPG as the preset measured it (`[features] invlpg_tlb_scope`; `tlblab-sim`).
    InvlpgScope => "invlpg-scope",
        "INVLPG as the machine does it: on a preset with invlpg_tlb_scope = \"all\" (measured in this project's KVM guest) each INVLPG drops every TLB entry, globals, paging-structure caches and cached guest-physical translations too, so a ranged flush costs the refills a full flush does",
        "docs/hardware-model.md, \"INVLPG that drops everything\"",
        "INVLPG drops the address's entries only (the SDM's rule): exactly the preset with invlpg_tlb_scope = \"address\"";
}

impl Mechanism {
    /// The mechanism named `name`.
    pub fn from_name(name: &str) -> Result<Mechanism, MechanismError> {
        Mechanism::ALL.iter().copied().find(|m| m.name() == name).ok_or_else(|| {
            MechanismError::Unknown {
                name: name.to_string(),
                hint: did_you_mean(name),
                known: Mechanism::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
            }
        })
    }

    /// Whether the mechanism has anything to act on on `spec`: a guest needs a `[guest]` with
    /// an exit cost, idle states an `[idle]` table, the zap batch and VMA merging their
    /// `[kernel]` figure (a preset that gives 0 holds the cost in other figures), nested paging
    /// a `[guest.nested]` that says EPT/NPT is in use, vCPU preemption an overcommitted guest
    /// (`overcommit` > 1), and PV TLB flush that and `pv_tlb_flush`; the csd queue is the
    /// kernel's own.
    pub fn present_on(self, spec: &MachineSpec) -> bool {
        match self {
            Mechanism::Guest => crate::kernel::guest::Guest::from_spec(spec).is_some(),
            Mechanism::IdleStates => spec.raw().idle.is_some(),
            Mechanism::Haltpoll => spec.raw().idle.as_ref().is_some_and(|i| i.haltpoll.is_some()),
            Mechanism::CsdQueue
            | Mechanism::PollWake
            | Mechanism::TlbstateLines
            | Mechanism::MmapLock
            | Mechanism::RwsemSteal
            | Mechanism::WorkingSet
            | Mechanism::Mlp
            | Mechanism::PointerChase
            | Mechanism::StlbPipelined
            | Mechanism::ZeroPageLine
            | Mechanism::CompilerReuse
            | Mechanism::XpfoEvents
            | Mechanism::XpfoDirectMap4k
            | Mechanism::VforkWait
            | Mechanism::WakeupPreemption => true,
            Mechanism::InvlpgScope => spec.invlpg_tlb_scope() == TlbScope::All,
            Mechanism::LlcDomains => spec.raw().topology.is_some(),
            Mechanism::HotFrames => {
                spec.kernel_costs().is_some_and(|k| k.page_fault_anon_hot.cycles > 0)
            }
            Mechanism::QueuedMessages => spec
                .kernel_costs()
                .is_some_and(|k| k.pipe_queued.cycles > 0 || k.socket_queued.cycles > 0),
            Mechanism::PageLocks => spec.raw().locks.is_some(),
            Mechanism::LockIrqsOff => spec.raw().locks.is_some(),
            Mechanism::LruListLines => spec.raw().locks.is_some(),
            Mechanism::ZapBatch => spec.kernel_costs().is_some_and(|k| k.zap_batch.cycles > 0),
            Mechanism::VmaMerge => spec.kernel_costs().is_some_and(|k| k.split_vma.cycles > 0),
            Mechanism::NestedPaging => spec.nested().is_some(),
            Mechanism::VcpuPreemption => crate::kernel::guest::Guest::preempts(spec),
            Mechanism::PvTlbFlush => crate::kernel::guest::Guest::pv_flushes(spec),
            Mechanism::Mitigations => {
                spec.raw().mitigations.as_ref().is_some_and(|m| m.costs_anything())
            }
            Mechanism::MitigationIbpb => {
                spec.raw().mitigations.as_ref().is_some_and(|m| m.ibpb_costs_anything())
            }
            Mechanism::MitigationRetpoline
            | Mechanism::MitigationSafeRet
            | Mechanism::MitigationUntrainRet
            | Mechanism::MitigationVerw
            | Mechanism::MitigationRsbFill => {
                let kind = InPath::ALL
                    .into_iter()
                    .find(|&k| Mechanism::of_mitigation(k) == self)
                    .expect("every per-mitigation switch has its kind");
                spec.raw().mitigations.as_ref().is_some_and(|m| m.costs_anything_in(kind))
            }
        }
    }
}

impl Mechanism {
    /// The switch that takes in-path mitigation `m` out on its own.
    pub fn of_mitigation(m: InPath) -> Mechanism {
        match m {
            InPath::Retpoline => Mechanism::MitigationRetpoline,
            InPath::SafeRet => Mechanism::MitigationSafeRet,
            InPath::UntrainRet => Mechanism::MitigationUntrainRet,
            InPath::Verw => Mechanism::MitigationVerw,
            InPath::RsbFill => Mechanism::MitigationRsbFill,
        }
    }
}

impl Mechanism {
    /// Whether the mechanism has anything to act on in runs of `policies` on `spec`:
    /// [`Mechanism::present_on`], and for XPFO's mechanisms a policy with XPFO (without one
    /// they have no event to act on, so `--explain` need not run them off); for
    /// `tlbstate-lines` a policy whose flushes skip lazy CPUs through a condition function
    /// (4.20+: before, every CPU of the mask was called and nothing was read).
    pub fn present_for<'a>(
        self,
        spec: &MachineSpec,
        mut policies: impl Iterator<Item = &'a crate::Policy>,
    ) -> bool {
        self.present_on(spec)
            && match self {
                Mechanism::XpfoEvents | Mechanism::XpfoDirectMap4k => {
                    policies.any(|p| p.xpfo != crate::policy::Xpfo::Off)
                }
                Mechanism::TlbstateLines => {
                    policies.any(|p| p.lazy == crate::policy::LazyMode::SkipLazy)
                }
                _ => true,
            }
    }
}

/// What an explanation (`--explain`) did with a mechanism.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EffectStatus {
    /// Run again with it off.
    Ran,
    /// The machine has nothing for it to act on ([`Mechanism::present_on`]): not run.
    NotPresent,
    /// Already off in every run (`--without`): not run.
    Off,
}

impl Mechanism {
    /// Whether an explanation runs `self` off, given the run's `base` set and whether the
    /// mechanism is `present` on the machine.
    pub fn effect_status(self, base: Mechanisms, present: bool) -> EffectStatus {
        if !base.is_on(self) {
            EffectStatus::Off
        } else if !present {
            EffectStatus::NotPresent
        } else {
            EffectStatus::Ran
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name `--without` does not know.
#[derive(Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MechanismError {
    /// No mechanism has this name.
    #[error("unknown mechanism {name:?}{hint} (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// `; did you mean "…"?` when a known name is close, else empty.
        hint: String,
        /// The known names.
        known: String,
    },
}

/// `; did you mean "x"?` for the known name closest to `name` (`tlblab_types::names`).
fn did_you_mean(name: &str) -> String {
    tlblab_types::names::did_you_mean(name, Mechanism::ALL.iter().map(|m| m.name()))
}

// One bit per mechanism in `Mechanisms::off`.
const _: () = assert!(Mechanism::ALL.len() <= 64);

/// A set of mechanisms switched on; the default has them all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mechanisms {
    /// Bit `i` set: [`Mechanism::ALL`]`[i]` is off (so that the default is everything on).
    off: u64,
}

impl Mechanisms {
    /// Every mechanism on.
    pub fn all() -> Mechanisms {
        Mechanisms::default()
    }

    /// `m`'s bit: its index in [`Mechanism::ALL`], which is its discriminant (the macro
    /// declares the variants and lists `ALL` in one order), so that `is_on`, asked on the
    /// model's hot paths, is a shift and a mask rather than a search.
    fn bit(m: Mechanism) -> u64 {
        1 << (m as u32)
    }

    /// This set with `m` off.
    #[must_use]
    pub fn without(self, m: Mechanism) -> Mechanisms {
        Mechanisms { off: self.off | Mechanisms::bit(m) }
    }

    /// Whether `m` is on.
    pub fn is_on(self, m: Mechanism) -> bool {
        self.off & Mechanisms::bit(m) == 0
    }

    /// The mechanisms switched off, in [`Mechanism::ALL`] order.
    pub fn off(self) -> Vec<Mechanism> {
        Mechanism::ALL.iter().copied().filter(|&m| !self.is_on(m)).collect()
    }

    /// Every mechanism but those of a comma-separated list of names (`""`: all on).
    pub fn without_list(list: &str) -> Result<Mechanisms, MechanismError> {
        list.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .try_fold(Mechanisms::all(), |set, name| Ok(set.without(Mechanism::from_name(name)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Mechanisms`' bits are the discriminants: each mechanism's is its place in `ALL`.
    #[test]
    fn each_mechanism_is_at_its_own_place_in_all() {
        for (i, &m) in Mechanism::ALL.iter().enumerate() {
            assert_eq!(m as usize, i, "{m}");
        }
    }

    #[test]
    fn names_are_unique_kebab_case_and_parse_back() {
        for &m in Mechanism::ALL {
            assert_eq!(Mechanism::from_name(m.name()), Ok(m));
            assert!(
                m.name().chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{m}"
            );
            assert!(!m.description().is_empty() && m.doc().starts_with("docs/"));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
        }
        let mut names: Vec<_> = Mechanism::ALL.iter().map(|m| m.name()).collect();
        names.dedup();
        assert_eq!(names.len(), Mechanism::ALL.len());
    }

    /// docs/kernel-model.md has a row for each in "Mechanisms and their switches", and the
    /// section each names exists in the file it names.
    #[test]
    fn every_mechanism_is_documented() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kernel-model.md");
        let text = std::fs::read_to_string(path).unwrap();
        let table = &text[text.find("## Mechanisms and their switches").unwrap()..];
        for &m in Mechanism::ALL {
            assert!(table.contains(&format!("\n| `{}` |", m.name())), "no row for {m}");
            let (file, section) = m.doc().split_once(", \"").unwrap();
            let section = &section[..section.find('"').unwrap()];
            let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../");
            let doc = std::fs::read_to_string(format!("{root}{file}")).unwrap();
            assert!(doc.contains(section), "{m}: no section {section:?} in {file}");
        }
    }

    #[test]
    fn a_set_starts_full_and_loses_what_is_switched_off() {
        let all = Mechanisms::all();
        assert!(Mechanism::ALL.iter().all(|&m| all.is_on(m)));
        let s = all.without(Mechanism::Guest).without(Mechanism::CsdQueue);
        assert!(!s.is_on(Mechanism::Guest) && !s.is_on(Mechanism::CsdQueue));
        assert!(s.is_on(Mechanism::IdleStates));
        assert_eq!(s.off(), [Mechanism::Guest, Mechanism::CsdQueue]);
        assert_eq!(Mechanisms::without_list("csd-queue, guest,"), Ok(s));
        assert_eq!(Mechanisms::without_list(""), Ok(all));
    }

    #[test]
    fn a_bad_name_lists_the_known_ones_and_suggests_a_close_one() {
        let e = Mechanisms::without_list("guest,idle-state").unwrap_err().to_string();
        assert!(e.contains("unknown mechanism \"idle-state\""), "{e}");
        assert!(e.contains("did you mean \"idle-states\"?"), "{e}");
        assert!(e.contains("guest, idle-states, csd-queue"), "{e}");
        let e = Mechanism::from_name("pcid").unwrap_err().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }
}
