//! `switch_mm_irqs_off()` and `enter_lazy_tlb()` (arch/x86/mm/tlb.c,
//! arch/x86/include/asm/tlbflush.h).
//!
//! `switch_mm_irqs_off()` runs in three parts, because other CPUs can look at this one between
//! them (they read `loaded_mm` in `should_flush_tlb()`):
//! - [`Kernel::switch_mm_begin`]: store `LOADED_MM_SWITCHING`, update `mm_cpumask` (6.13: clear
//!   this CPU in the old mm's and set it in the new one's; 6.14+: set it in the new one's if it
//!   is not set), full barrier;
//! - [`Kernel::switch_mm_load`]: read the new mm's `tlb_gen`, `choose_new_asid()`, write CR3;
//! - [`Kernel::switch_mm_end`]: store the new `loaded_mm` and `loaded_mm_asid`.

use super::tlbstate_line::Line;
use super::Kernel;
use crate::ids::{Asid, MmId};
use crate::observer::{Observer, TlbFlushReason, TLB_FLUSH_ALL};
use crate::policy::LazyMode;
use crate::tlb_state::{LoadedMm, NewAsid};
use tlblab_types::{CpuId, TlbOp};

/// What the first part of a switch decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SwitchBegin {
    /// Nothing more to do (same mm, up to date): no CR3 write, no tracepoint.
    Done,
    /// Same mm, but it went out of date while lazy: reload it into the same ASID, flushed.
    Reload(NewAsid),
    /// A different mm: `loaded_mm` is now `LOADED_MM_SWITCHING`.
    Switching,
}

impl<O: Observer> Kernel<O> {
    /// The first part of `switch_mm_irqs_off(prev, next)`.
    pub(crate) fn switch_mm_begin(&mut self, cpu: CpuId, next: MmId) -> SwitchBegin {
        let c = usize::from(cpu.0);
        let st = &mut self.cpus[c].tlb;
        let prev = st.loaded_mm.mm().expect("switch_mm while already switching");
        let was_lazy = st.is_lazy;
        st.is_lazy = false;
        // 5.13+: is_lazy is written only when it changes (mechanism tlbstate-lines).
        let mut cycles = if was_lazy { self.tlbstate_write(cpu, Line::Shared) } else { 0 };
        if prev == next {
            let r = self.switch_same_mm(cpu, next, was_lazy);
            if matches!(r, SwitchBegin::Reload(_)) {
                // The reload stores the ASID slot and loaded_mm.
                cycles += self.tlbstate_write(cpu, Line::Tlbstate);
            }
            self.cpus[c].cpumask_cycles += cycles;
            return r;
        }
        // LOADED_MM_SWITCHING, then loaded_mm, loaded_mm_asid and last_user_mm_spec: the
        // first line of cpu_tlbstate (mechanism tlbstate-lines).
        cycles += self.tlbstate_write(cpu, Line::Tlbstate);
        let st = &mut self.cpus[c].tlb;
        st.loaded_mm = LoadedMm::Switching;
        if next != MmId::INIT_MM {
            // RAR series: a CPU outside the mask may have missed RAR flushes: flush at load.
            self.cpus[c].rar_flush_on_load =
                self.policy.rar && !self.mms[next.0 as usize].cpumask.test(cpu);
        }
        if self.policy.lazy_cpumask {
            // 6.14 (209954cbc7d0): the old mm's bit stays; the new mm's bit is tested first and
            // set only if clear, so a CPU that comes back to an mm whose bit it kept writes
            // nothing.
            if next != MmId::INIT_MM {
                cycles += self.cpumask_read(cpu, next);
                if !self.mms[next.0 as usize].cpumask.test(cpu) {
                    cycles += self.cpumask_write(cpu, next);
                    self.mms[next.0 as usize].cpumask.set(cpu);
                }
            }
        } else {
            // ≤ 6.13: "stop remote flushes for the previous mm" (not for init_mm, whose mask is
            // never used for flushes), then set this CPU in the new one, both unconditionally.
            if prev != MmId::INIT_MM {
                cycles += self.cpumask_write(cpu, prev);
                self.mms[prev.0 as usize].cpumask.clear(cpu);
            }
            if next != MmId::INIT_MM {
                cycles += self.cpumask_write(cpu, next);
                self.mms[next.0 as usize].cpumask.set(cpu);
            }
        }
        self.cpus[c].cpumask_cycles += cycles;
        SwitchBegin::Switching
    }

    /// `switch_mm_irqs_off()` to the mm already loaded (a thread of the same process, or the
    /// mm kept while lazy).
    fn switch_same_mm(&mut self, cpu: CpuId, next: MmId, was_lazy: bool) -> SwitchBegin {
        let c = usize::from(cpu.0);
        // 6.15: the mm got a global ASID while this CPU ran it under a dynamic one: move
        // to the global ASID (no flush: INVLPGB keeps it current).
        let global = self.mms[next.0 as usize].global_asid.filter(|_| self.global_asid_policy());
        let rar = self.policy.rar;
        let st = &mut self.cpus[c].tlb;
        if let Some(g) = global {
            if st.loaded_mm_asid != g {
                return SwitchBegin::Reload(NewAsid { asid: g, need_flush: false });
            }
            // RAR series: a lazy CPU coming back may have missed flushes. NOTE: the RFC
            // compares ctxs[] generations indexed by the global ASID here; the model
            // flushes the global PCID.
            if rar && was_lazy {
                return SwitchBegin::Reload(NewAsid { asid: g, need_flush: true });
            }
            return SwitchBegin::Done;
        }
        // NOTE (4.13): without tlb_gen a lazy CPU that missed a flush was sent to init_mm by
        // the IPI itself, so coming back to the same mm never needs a flush.
        if !self.policy.tlb_gen || !was_lazy {
            return SwitchBegin::Done;
        }
        // KNOWN BAD (Defect::LazyNoCatchUp): the skipped flushes are never done.
        if self.policy.defect == Some(crate::policy::Defect::LazyNoCatchUp) {
            return SwitchBegin::Done;
        }
        // Back from lazy mode to the mm still loaded: catch up if flushes were skipped.
        let asid = st.loaded_mm_asid;
        let next_tlb_gen = self.mms[next.0 as usize].tlb_gen;
        if st.ctxs[usize::from(asid.0)].tlb_gen == next_tlb_gen {
            return SwitchBegin::Done;
        }
        SwitchBegin::Reload(NewAsid { asid, need_flush: true })
    }

    /// The second part: read `tlb_gen`, choose the ASID (unless `forced`), write CR3 and fire
    /// the tracepoint. Returns the ASID to store and the cycles of the CR3 write.
    pub(crate) fn switch_mm_load(
        &mut self,
        cpu: CpuId,
        next: MmId,
        forced: Option<NewAsid>,
    ) -> (Asid, u64) {
        let c = usize::from(cpu.0);
        let mm = &self.mms[next.0 as usize];
        let (ctx_id, next_tlb_gen, global) = (mm.ctx_id, mm.tlb_gen, mm.global_asid);
        let pcid = self.pcid;
        let st = &mut self.cpus[c].tlb;
        let mut ns =
            forced.unwrap_or_else(|| st.choose_new_asid(ctx_id, next_tlb_gen, pcid, global));
        if std::mem::take(&mut self.cpus[c].rar_flush_on_load) && forced.is_none() {
            ns.need_flush = true;
        }
        let st = &mut self.cpus[c].tlb;
        let cycles = if ns.need_flush {
            if ns.asid.is_dynamic() {
                st.ctxs[usize::from(ns.asid.0)] =
                    crate::tlb_state::TlbContext { ctx_id, tlb_gen: next_tlb_gen };
            }
            self.invalidate_user_asid(cpu, ns.asid);
            let cycles = self.write_cr3(cpu, ns.asid, false);
            self.trace(cpu, TlbFlushReason::FlushOnTaskSwitch, TLB_FLUSH_ALL);
            cycles
        } else {
            let cycles = self.write_cr3(cpu, ns.asid, true);
            self.trace(cpu, TlbFlushReason::FlushOnTaskSwitch, 0);
            cycles
        };
        self.deferral_progress(cpu);
        (ns.asid, cycles)
    }

    /// The third part: the new mm is loaded.
    pub(crate) fn switch_mm_end(&mut self, cpu: CpuId, next: MmId, asid: Asid) {
        let st = &mut self.cpus[usize::from(cpu.0)].tlb;
        st.loaded_mm = LoadedMm::Mm(next);
        st.loaded_mm_asid = asid;
        self.debug_assert_invariants(cpu);
    }

    /// `switch_mm_irqs_off()` in one piece, as it runs inside an interrupt handler or with the
    /// CPU otherwise unobservable; returns its cycles.
    pub(crate) fn switch_mm_irqs_off(&mut self, cpu: CpuId, next: MmId) -> u64 {
        let xpfo = self.xpfo_switch_flush(cpu);
        xpfo + match self.switch_mm_begin(cpu, next) {
            SwitchBegin::Done => self.take_cpumask_cycles(cpu),
            SwitchBegin::Reload(ns) => {
                let stored = self.take_cpumask_cycles(cpu);
                let (asid, cycles) = self.switch_mm_load(cpu, next, Some(ns));
                self.switch_mm_end(cpu, next, asid);
                stored + cycles
            }
            SwitchBegin::Switching => {
                let cpumask = self.take_cpumask_cycles(cpu);
                let (asid, cycles) = self.switch_mm_load(cpu, next, None);
                self.switch_mm_end(cpu, next, asid);
                self.costs.switch_mm.cycles
                    + cpumask
                    + cycles
                    + self.la57_checks(super::LA57_CHECKS_SWITCH_MM)
            }
        }
    }

    /// `enter_lazy_tlb()`: a kernel thread starts running on `cpu`; returns its cycles.
    pub(crate) fn enter_lazy_tlb(&mut self, cpu: CpuId) -> u64 {
        let c = usize::from(cpu.0);
        if self.cpus[c].tlb.loaded_mm == LoadedMm::Mm(MmId::INIT_MM) {
            return 0;
        }
        match self.policy.lazy {
            // 4.14 with PCID: switching to init_mm is cheap, so do it now
            // (`tlb_defer_switch_to_init_mm()` is false).
            LazyMode::SwitchToInitMm if self.pcid => self.switch_mm_irqs_off(cpu, MmId::INIT_MM),
            _ => {
                self.cpus[c].tlb.is_lazy = true;
                self.tlbstate_write(cpu, Line::Shared)
            }
        }
    }

    /// A MOV to CR3 loading `asid`'s kernel PCID (or PCID 0 without PCIDs); user-mode accesses
    /// use the PCID set at the next return to user.
    pub(crate) fn write_cr3(&mut self, cpu: CpuId, asid: Asid, noflush: bool) -> u64 {
        let pcid = self.kern_pcid(asid);
        let noflush = noflush && self.pcid;
        self.cpus[usize::from(cpu.0)].cr3 = pcid;
        self.hw_op(cpu, TlbOp::MovCr3 { pcid, noflush })
    }
}
