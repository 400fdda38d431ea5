//! Flushing: `flush_tlb_mm_range()`, `native_flush_tlb_multi()`, `should_flush_tlb()`,
//! `flush_tlb_func()` and the primitives under them (arch/x86/mm/tlb.c).

use super::{CallId, Kernel};
use crate::ids::{Asid, MmId, TlbGen, TLB_GENERATION_INVALID};
use crate::observer::{Observer, TlbFlushReason, TLB_FLUSH_ALL};
use crate::policy::{LazyMode, Pti};
use crate::tlb_state::LoadedMm;
use tlblab_sim::machine::TlbScope;
use tlblab_types::{CpuId, InvpcidType, TlbOp, Vpn};

/// `TLB_FLUSH_ALL` as an end address (in pages).
pub const FLUSH_ALL_END: u64 = u64::MAX;

/// 4 KiB pages: `PAGE_SHIFT`.
pub const PAGE_SHIFT: u32 = 12;

/// `struct flush_tlb_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushTlbInfo {
    /// The mm, or `None` for a flush of whatever is loaded (batched reclaim).
    pub mm: Option<MmId>,
    /// First page number.
    pub start: u64,
    /// End page number (exclusive), or [`FLUSH_ALL_END`] for a full flush.
    pub end: u64,
    /// Log2 of the stride in bytes (`PAGE_SHIFT` for 4 KiB pages).
    pub stride_shift: u32,
    /// Page-table pages were freed: lazy CPUs must be flushed too.
    pub freed_tables: bool,
    /// The generation this flush brings the mm to (`TLB_GENERATION_INVALID` for none).
    pub new_tlb_gen: TlbGen,
    /// The CPU that asked.
    pub initiating_cpu: CpuId,
    /// Also IPI CPUs whose `mm_cpumask` bit is stale, so that they drop it.
    pub trim_cpumask: bool,
}

impl FlushTlbInfo {
    /// Entries (of the stride) the flush covers, or `None` for a full flush.
    pub fn entries(&self) -> Option<u64> {
        (self.end != FLUSH_ALL_END)
            .then(|| ((self.end - self.start) << PAGE_SHIFT) >> self.stride_shift)
    }

    /// The `pages` value of `TLB_REMOTE_SEND_IPI`: 4 KiB pages whatever the stride.
    fn send_ipi_pages(&self) -> i64 {
        if self.end == FLUSH_ALL_END {
            TLB_FLUSH_ALL
        } else {
            (self.end - self.start) as i64
        }
    }
}

/// A flush asked for by `flush_tlb_mm_range()` callers (mmu_gather, `flush_tlb_page()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlushRequest {
    /// The mm.
    pub mm: MmId,
    /// First page number.
    pub start: u64,
    /// End page number (exclusive), or [`FLUSH_ALL_END`].
    pub end: u64,
    /// Log2 of the stride.
    pub stride_shift: u32,
    /// Page tables were freed.
    pub freed_tables: bool,
}

impl FlushRequest {
    /// A flush of 4 KiB pages `[start, end)` (`end` may be [`FLUSH_ALL_END`]).
    pub fn pages(mm: MmId, start: u64, end: u64, freed_tables: bool) -> FlushRequest {
        FlushRequest { mm, start, end, stride_shift: PAGE_SHIFT, freed_tables }
    }
}

impl<O: Observer> Kernel<O> {
    /// `get_flush_tlb_info()` / `init_flush_tlb_info()`: a flush of more entries than
    /// `tlb_single_page_flush_ceiling` becomes a full flush.
    pub(crate) fn flush_tlb_info(
        &self,
        req: &FlushRequest,
        new_tlb_gen: TlbGen,
        cpu: CpuId,
    ) -> FlushTlbInfo {
        let mut info = FlushTlbInfo {
            mm: Some(req.mm),
            start: req.start,
            end: req.end,
            stride_shift: req.stride_shift,
            freed_tables: req.freed_tables,
            new_tlb_gen,
            initiating_cpu: cpu,
            trim_cpumask: false,
        };
        if info.entries().is_some_and(|n| n > self.policy.tlb_single_page_flush_ceiling) {
            info.start = 0;
            info.end = FLUSH_ALL_END;
        }
        info
    }

    /// `should_trim_cpumask()`: at most once per second (`HZ` jiffies) per mm.
    pub(crate) fn should_trim_cpumask(&mut self, mm: MmId) -> bool {
        let jiffies = self.jiffies();
        let m = &mut self.mms[mm.0 as usize];
        if jiffies > m.next_trim_cpumask {
            m.next_trim_cpumask = jiffies + self.policy.hz;
            return true;
        }
        false
    }

    /// `should_flush_tlb(cpu, info)`: whether a CPU in the mask gets the IPI.
    pub(crate) fn should_flush_tlb(&self, cpu: CpuId, info: &FlushTlbInfo) -> bool {
        let st = &self.cpus[usize::from(cpu.0)].tlb;
        // Lazy CPUs catch up at their next switch.
        if st.is_lazy {
            return false;
        }
        // NOTE: 4.20–6.13 (`tlb_is_not_lazy()`) tested laziness only; the tests below came
        // with the 6.14 lazy mm_cpumask, whose stale bits they filter.
        if !self.policy.lazy_cpumask {
            return true;
        }
        let Some(mm) = info.mm else { return true };
        // NOTE: before fea4e317f9e7 (6.15, CVE-2025-37964) a CPU between its store of
        // LOADED_MM_SWITCHING and of the new mm was skipped here, though it may already have
        // read the old tlb_gen.
        if self.policy.loaded_mm_switching_check && st.loaded_mm == LoadedMm::Switching {
            return true;
        }
        if st.loaded_mm == LoadedMm::Mm(mm) {
            return true;
        }
        info.trim_cpumask
    }

    /// Whether `native_flush_tlb_multi()` interrupts `cpu` of the mask.
    pub(crate) fn ipi_wanted(&self, cpu: CpuId, info: &FlushTlbInfo) -> bool {
        let transition = info.mm.is_some_and(|m| self.mms[m.0 as usize].asid_transition);
        // Before 4.20 every CPU in the mask was interrupted, lazy or not.
        // KNOWN BAD (Defect::LazySkippedOnFreedTables): freed tables do not reach lazy CPUs.
        let freed_tables = info.freed_tables
            && self.policy.defect != Some(crate::policy::Defect::LazySkippedOnFreedTables);
        self.policy.lazy != LazyMode::SkipLazy
            || freed_tables
            || transition
            || self.should_flush_tlb(cpu, info)
    }

    /// `flush_tlb_func()`: runs on each CPU that flushes (IRQs off); returns its cycles.
    pub(crate) fn flush_tlb_func(&mut self, cpu: CpuId, call: CallId) -> u64 {
        let info = self.calls[call.0 as usize].info;
        let c = usize::from(cpu.0);
        let local = cpu == info.initiating_cpu;
        let cycles = self.costs.flush_tlb_func.cycles;
        if !local {
            self.counters.irq_tlb[c] += 1;
            self.counters.vmstat.nr_tlb_remote_flush_received += 1;
        }
        let loaded = self.cpus[c].tlb.loaded_mm;
        if let Some(mm) = info.mm.filter(|&m| loaded != LoadedMm::Mm(m)) {
            // The IPI found a CPU whose mm_cpumask bit is stale (6.14+ lazy mask): it drops it.
            // NOTE: cpumask_clear_cpu() is a locked RMW even when the bit is already clear, so
            // every queued flush of the mm that a CPU left (e.g. the calls queued while it ran
            // the mm, drained after a lazy flush sent it to init_mm) writes the line again.
            if self.policy.lazy_cpumask {
                let moved = self.cpumask_write(cpu, mm);
                self.mms[mm.0 as usize].cpumask.clear(cpu);
                self.trace(cpu, TlbFlushReason::RemoteWrongCpu, 0);
                return cycles + moved;
            }
            return cycles;
        }
        if loaded == LoadedMm::Mm(MmId::INIT_MM) {
            return cycles;
        }
        let loaded = loaded.mm().expect("IRQs are off while switching");
        if self.global_asid_policy() && !self.cpus[c].tlb.is_lazy {
            // 6.15: a CPU still on a dynamic ASID of an mm that now has a global one moves to
            // it (`mm_needs_global_asid()`); a global ASID is kept current by INVLPGB: nothing
            // to flush here.
            if let Some(g) = self.mms[loaded.0 as usize].global_asid {
                let mut cycles = cycles;
                if self.cpus[c].tlb.loaded_mm_asid != g {
                    cycles += self.switch_mm_irqs_off(cpu, loaded);
                }
                if !self.policy.rar {
                    return cycles;
                }
                // RAR series: RAR keeps a global ASID current only on the CPUs of the mask, and
                // the trim and transition IPIs land here: the flush is done. A global ASID has
                // no per-CPU tlb_gen (the RFC reads ctxs[] with it; the model flushes what was
                // asked).
                let reason = if local {
                    TlbFlushReason::LocalMmShootdown
                } else {
                    TlbFlushReason::RemoteShootdown
                };
                let partial = info.end != FLUSH_ALL_END;
                return self.flush_and_trace(cpu, g, &info, partial, reason, cycles);
            }
        }
        if self.cpus[c].tlb.is_lazy {
            // Lazy: rather than flush, stop using the mm (this traces a task switch). 4.13 calls
            // it leave_mm(), 4.14+ switch_mm_irqs_off(NULL, &init_mm, NULL): the same switch.
            return cycles + self.switch_mm_irqs_off(cpu, MmId::INIT_MM);
        }
        let reason = if !local {
            TlbFlushReason::RemoteShootdown
        } else if info.mm.is_none() {
            TlbFlushReason::LocalShootdown
        } else {
            TlbFlushReason::LocalMmShootdown
        };
        let asid = self.cpus[c].tlb.loaded_mm_asid;
        if !self.policy.tlb_gen {
            // 4.13: flush what was asked, no generations.
            let partial = info.end != FLUSH_ALL_END;
            return self.flush_and_trace(cpu, asid, &info, partial, reason, cycles);
        }
        let slot = usize::from(asid.0);
        let local_tlb_gen = self.cpus[c].tlb.ctxs[slot].tlb_gen;
        // 6.0+: already caught up to (or past) this flush: nothing to do, nothing traced.
        if self.policy.early_gen_exit
            && info.new_tlb_gen != TLB_GENERATION_INVALID
            && info.new_tlb_gen <= local_tlb_gen
        {
            return cycles;
        }
        // Read as late as possible: flushes that raced with this one may be covered too.
        let mm_tlb_gen = self.mms[loaded.0 as usize].tlb_gen;
        if local_tlb_gen == mm_tlb_gen {
            self.trace(cpu, reason, 0);
            return cycles;
        }
        // A partial flush may only advance this CPU by exactly one generation: flushes are
        // not ordered, so a ranged flush (gen n+1) processed before a full flush (gen n) must
        // not mark gen n done. Matching the mm's current gen is an optimisation: if more
        // flushes are pending, one full flush catches up with all of them.
        // KNOWN BAD (Defect::PartialFlushWithoutGenRule) drops the first condition.
        let gen_rule =
            self.policy.defect != Some(crate::policy::Defect::PartialFlushWithoutGenRule);
        let partial = info.end != FLUSH_ALL_END
            && (info.new_tlb_gen == local_tlb_gen + 1 || !gen_rule)
            && info.new_tlb_gen == mm_tlb_gen;
        self.cpus[c].tlb.ctxs[slot].tlb_gen = mm_tlb_gen;
        // ctxs[0] and ctxs[1] share cpu_tlbstate's first line with loaded_mm, which flush
        // initiators read (mechanism tlbstate-lines).
        let stored = if super::tlbstate_line::ctx_in_first_line(asid) {
            self.tlbstate_write(cpu, super::tlbstate_line::Line::Tlbstate)
        } else {
            0
        };
        self.deferral_progress(cpu);
        let cycles = self.flush_and_trace(cpu, asid, &info, partial, reason, cycles) + stored;
        self.debug_assert_invariants(cpu);
        cycles
    }

    /// The flush itself (the range, or everything) and what the kernel records of it: the
    /// vmstat counters of a local flush, the tracepoint, and the flush-size statistics.
    /// Returns `cycles` plus the flush's own.
    fn flush_and_trace(
        &mut self,
        cpu: CpuId,
        asid: Asid,
        info: &FlushTlbInfo,
        partial: bool,
        reason: TlbFlushReason,
        mut cycles: u64,
    ) -> u64 {
        let nr = if partial {
            cycles += self.flush_range(cpu, asid, info);
            info.entries().expect("partial flushes have a range") as i64
        } else {
            cycles += self.flush_tlb_local(cpu);
            TLB_FLUSH_ALL
        };
        if cpu == info.initiating_cpu {
            if nr == TLB_FLUSH_ALL {
                self.counters.vmstat.nr_tlb_local_flush_all += 1;
            } else {
                self.counters.vmstat.nr_tlb_local_flush_one += nr as u64;
            }
        }
        self.trace(cpu, reason, nr);
        self.flush_sizes.record(nr, cycles);
        cycles
    }

    /// The partial flush loop: `flush_tlb_one_user()` per stride. Where INVLPG drops every
    /// translation (mechanism `invlpg-scope`), the kernel's own paths then refill theirs:
    /// owed here, paid by the path that runs next ([`Kernel::kernel_refill`]).
    fn flush_range(&mut self, cpu: CpuId, asid: Asid, info: &FlushTlbInfo) -> u64 {
        let step = 1u64 << (info.stride_shift - PAGE_SHIFT);
        let mut cycles = 0;
        let mut vpn = info.start;
        while vpn < info.end {
            cycles += self.flush_tlb_one_user(cpu, asid, Vpn(vpn));
            vpn += step;
        }
        if vpn > info.start && self.spec.invlpg_tlb_scope() == TlbScope::All {
            self.cpus[usize::from(cpu.0)].kernel_refill_owed = true;
        }
        cycles
    }

    /// The refill of the kernel's own translations an INVLPG that dropped everything left
    /// owed on `cpu` (`invlpg_refill` once, however many flushes dropped them), paid by the
    /// path that runs after the flush: the initiator's own system call, or a target's
    /// interrupt exit, after it acknowledged (`csd_unlock()` follows the function at once).
    /// NOTE: one figure for every path; on the machine what the next path pays depends on
    /// how many kernel pages it touches (the measured figure is what the next mprotect paid).
    pub(crate) fn kernel_refill(&mut self, cpu: CpuId) -> u64 {
        if std::mem::take(&mut self.cpus[usize::from(cpu.0)].kernel_refill_owed) {
            self.costs.invlpg_refill.cycles
        } else {
            0
        }
    }

    /// `flush_tlb_one_user()`: INVLPG in the kernel PCID; with PTI, the user PCID too: INVPCID
    /// type 0 (if the CPU has it and the policy uses it) or a deferred flush of the whole user
    /// PCID at the next return to user.
    pub(crate) fn flush_tlb_one_user(&mut self, cpu: CpuId, asid: Asid, vpn: Vpn) -> u64 {
        let pcid = self.kern_pcid(asid);
        let mut cycles = self.hw_op(cpu, TlbOp::Invlpg { pcid, vpn });
        match self.policy.pti {
            Pti::Off => {}
            _ if !self.pcid => {} // without PCID every return to user flushes anyway
            Pti::Invpcid if self.invpcid => {
                let op =
                    TlbOp::Invpcid { kind: InvpcidType::IndivAddr, pcid: asid.user_pcid(), vpn };
                cycles += self.hw_op(cpu, op);
            }
            // KNOWN BAD (Defect::PtiNoUserFlush): the user PCID is never marked.
            _ if self.policy.defect == Some(crate::policy::Defect::PtiNoUserFlush) => {}
            Pti::Invpcid | Pti::Deferred => self.invalidate_user_asid(cpu, asid),
        }
        cycles
    }

    /// `flush_tlb_local()`: the user PCID at the next return to user, and the kernel PCID now
    /// (CR3 rewritten without NOFLUSH).
    pub(crate) fn flush_tlb_local(&mut self, cpu: CpuId) -> u64 {
        let asid = self.cpus[usize::from(cpu.0)].tlb.loaded_mm_asid;
        self.invalidate_user_asid(cpu, asid);
        self.write_cr3(cpu, asid, false)
    }

    /// `invalidate_user_asid()`: with PTI and PCID, mark the user PCID for a flush at the next
    /// return to user.
    pub(crate) fn invalidate_user_asid(&mut self, cpu: CpuId, asid: Asid) {
        if self.policy.pti != Pti::Off && self.pcid {
            self.cpus[usize::from(cpu.0)].tlb.user_pcid_flush_mask |= 1 << asid.kern_pcid().get();
        }
    }

    /// `native_flush_tlb_multi()`: trace, pick the CPUs to interrupt, send the IPIs, and run
    /// the local flush (before the IPIs before 5.12, while they are in flight after).
    /// Returns the initiator's cycles; the acknowledgements arrive as events.
    pub(crate) fn native_flush_tlb_multi(&mut self, cpu: CpuId, call: CallId) -> u64 {
        let info = self.calls[call.0 as usize].info;
        let mm = info.mm.expect("mm flushes: the mm's cpumask");
        let mask = self.mms[mm.0 as usize].cpumask.clone();
        self.native_flush_tlb_multi_mask(cpu, call, &mask)
    }

    /// `native_flush_tlb_multi(cpumask, info)` with an explicit mask (a reclaim batch's).
    pub(crate) fn native_flush_tlb_multi_mask(
        &mut self,
        cpu: CpuId,
        call: CallId,
        mask: &crate::cpumask::CpuMask,
    ) -> u64 {
        let info = self.calls[call.0 as usize].info;
        if self.pv_tlb_flush() {
            // kvm_flush_tlb_multi() first (kernel/vcpu.rs), on a copy of the mask.
            let mut mask = mask.clone();
            self.kvm_flush_tlb_multi(cpu, &mut mask);
            return self.flush_mask(cpu, call, &info, &mask);
        }
        self.flush_mask(cpu, call, &info, mask)
    }

    /// `on_each_cpu_cond_mask()` / `on_each_cpu_mask()` over `mask`: pick the targets, read
    /// what the condition function reads of each CPU (mechanism `tlbstate-lines`), send.
    fn flush_mask(
        &mut self,
        cpu: CpuId,
        call: CallId,
        info: &FlushTlbInfo,
        mask: &crate::cpumask::CpuMask,
    ) -> u64 {
        let (targets, local) = self.flush_targets(cpu, info, mask);
        let reads = self.cond_func_reads(cpu, info, mask, &targets);
        self.flush_multi_after(cpu, call, &targets, local, &reads)
    }

    /// The CPUs of `mask` to interrupt, and whether the initiator flushes itself.
    pub(super) fn flush_targets(
        &self,
        cpu: CpuId,
        info: &FlushTlbInfo,
        mask: &crate::cpumask::CpuMask,
    ) -> (Vec<CpuId>, bool) {
        let targets = mask.iter().filter(|&c| c != cpu && self.ipi_wanted(c, info)).collect();
        (targets, mask.test(cpu) && self.ipi_wanted(cpu, info))
    }

    /// The body of `native_flush_tlb_multi()` once its targets are known.
    pub(super) fn flush_multi(
        &mut self,
        cpu: CpuId,
        call: CallId,
        targets: &[CpuId],
        local: bool,
    ) -> u64 {
        self.flush_multi_after(cpu, call, targets, local, &Default::default())
    }

    /// [`Kernel::flush_multi`] with the condition function's reads of each CPU: those before
    /// a target delay its csd and IPI, those after the last target the local flush.
    fn flush_multi_after(
        &mut self,
        cpu: CpuId,
        call: CallId,
        targets: &[CpuId],
        local: bool,
        reads: &super::tlbstate_line::CondReads,
    ) -> u64 {
        let info = self.calls[call.0 as usize].info;
        self.counters.vmstat.nr_tlb_remote_flush += 1;
        self.trace(cpu, TlbFlushReason::RemoteSendIpi, info.send_ipi_pages());
        let mut cycles = 0;
        if local && !self.policy.concurrent_local_flush {
            cycles += self.flush_tlb_func(cpu, call) + self.kernel_refill(cpu);
        }
        cycles += self.send_call_ipis_after(
            cpu,
            call,
            targets,
            cycles,
            super::Csd::Flush(call),
            &reads.before,
        );
        cycles += reads.after;
        if local && self.policy.concurrent_local_flush {
            cycles += self.flush_tlb_func(cpu, call) + self.kernel_refill(cpu);
        }
        cycles
    }
}

/// A kernel address for single-page kernel flushes: a page of the direct map (global without
/// PTI), as XPFO unmaps.
pub(crate) const DIRECT_MAP_PAGE: Vpn = Vpn(0xffff_8880_0000_0000 >> 12 & Vpn::MAX);

impl<O: Observer> Kernel<O> {
    /// `flush_tlb_one_kernel()`: INVLPG of one kernel page (a global entry without PTI reaches
    /// every PCID); with PTI kernel entries are per PCID, so the other ASIDs are invalidated at
    /// the next switch (`invalidate_other`).
    pub(crate) fn flush_tlb_one_kernel(&mut self, cpu: CpuId, vpn: Vpn) -> u64 {
        self.counters.vmstat.nr_tlb_local_flush_one += 1;
        let asid = self.cpus[usize::from(cpu.0)].tlb.loaded_mm_asid;
        let pcid = self.kern_pcid(asid);
        let cycles = self.hw_op(cpu, TlbOp::Invlpg { pcid, vpn });
        if self.policy.pti != Pti::Off {
            self.cpus[usize::from(cpu.0)].tlb.invalidate_other = true;
        }
        cycles
    }

    /// `__flush_tlb_all()`: everything, globals included: INVPCID type 2 if the CPU has it,
    /// else two CR4.PGE writes.
    pub(crate) fn flush_tlb_all_local(&mut self, cpu: CpuId) -> u64 {
        if self.invpcid {
            let op = TlbOp::Invpcid {
                kind: InvpcidType::AllInclGlobal,
                pcid: tlblab_types::Pcid::new(0).expect("0"),
                vpn: Vpn(0),
            };
            self.hw_op(cpu, op)
        } else {
            let pcide = self.pcid;
            self.hw_op(cpu, TlbOp::MovCr4 { pge: false, pcide })
                + self.hw_op(cpu, TlbOp::MovCr4 { pge: true, pcide })
        }
    }
}
