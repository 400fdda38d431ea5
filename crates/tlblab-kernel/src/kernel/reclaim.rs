//! Page reclaim with batched flushes (`try_to_unmap_one()` with `TTU_BATCH_FLUSH`,
//! `arch_tlbbatch_add_pending()`, `arch_tlbbatch_flush()`; mm/rmap.c, arch/x86/mm/tlb.c).
//!
//! Reclaim unmaps pages of other processes. A page whose mm may be cached on another CPU is not
//! flushed at once: its mm's `tlb_gen` is bumped and its `mm_cpumask` is added to the batch; one
//! full flush of whatever each CPU has loaded (`flush_tlb_info.mm == NULL`) then covers the
//! whole batch, before the pages are freed. A page whose mm is on no other CPU is flushed at
//! once (`ptep_clear_flush()`). With INVLPGB (6.15+) the batch is one broadcast of every
//! non-global translation instead of IPIs.

use super::run::Step;
use super::{CallId, FlushPhase, Frame, Kernel, Mode, Phase, FLUSH_ALL_END, PAGE_SHIFT};
use crate::cpumask::CpuMask;
use crate::ids::{MmId, TaskId, TLB_GENERATION_INVALID};
use crate::kernel::flush::{FlushRequest, FlushTlbInfo};
use crate::mm::Pte;
use crate::observer::Observer;
use tlblab_types::CpuId;

impl<O: Observer> Kernel<O> {
    /// Direct reclaim by task `t` on `cpu`: unmaps up to `pages` private pages of other
    /// processes (each mm's lowest pages first, mms in turn from a rotating cursor), batching
    /// the flushes it can defer.
    pub(super) fn sys_reclaim(&mut self, cpu: CpuId, t: TaskId, pages: u64) -> Step {
        let own = self.tasks[t.0 as usize].mm;
        let mut batch = CpuMask::new(self.cpus.len());
        let (mut unmapped, mut immediate, mut cleared) = (0, Vec::new(), Vec::new());
        let mut freed = 0;
        let n = self.mms.len();
        for i in 0..n {
            if unmapped == pages {
                break;
            }
            let mm = MmId(((self.reclaim_cursor + i) % n) as u32);
            if mm == MmId::INIT_MM || Some(mm) == own || self.mms[mm.0 as usize].users == 0 {
                continue;
            }
            // arch_tlbbatch_should_defer(): another CPU may cache the mm's translations.
            let defer = self.mms[mm.0 as usize].cpumask.any_but(cpu);
            let m = &mut self.mms[mm.0 as usize];
            for vma in m.vmas.iter_mut().flatten() {
                for (i, pte) in vma.ptes.iter_mut().enumerate() {
                    if unmapped == pages {
                        break;
                    }
                    if matches!(pte, Pte::Present | Pte::Cow) {
                        freed += u64::from(*pte == Pte::Present);
                        *pte = Pte::None;
                        unmapped += 1;
                        let vpn = vma.start.0 + i as u64;
                        cleared.push((mm, vpn));
                        if defer {
                            // arch_tlbbatch_add_pending(): the range is ignored on x86.
                            m.tlb_gen += 1;
                            batch.or(&m.cpumask);
                        } else {
                            immediate.push(FlushRequest::pages(mm, vpn, vpn + 1, false));
                        }
                    }
                }
            }
        }
        self.reclaim_cursor = (self.reclaim_cursor + 1) % n.max(1);
        // The private pages go back to the allocator (COW-shared ones stay mapped elsewhere).
        for _ in 0..freed {
            self.page_freed(cpu);
        }
        // migrc: memory pressure flushes everything pending before direct reclaim.
        let pressure = (self.policy.unmap_flush == crate::policy::UnmapFlush::Migrc)
            .then(|| self.catch_up_all(t))
            .flatten();
        self.counters.reclaimed += unmapped;
        for (mm, vpn) in cleared {
            self.pte_changed(t, mm, vpn);
        }
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        // try_to_unmap_flush(): before the pages are freed, after the immediate flushes.
        if batch.weight() > 0 {
            self.push_frame(
                t,
                Frame::BatchFlush { mask: batch, phase: FlushPhase::Start, call: None },
            );
        }
        for req in immediate.into_iter().rev() {
            self.push_flush(t, req);
        }
        if let Some(mask) = pressure {
            self.push_batch_flush(t, mask);
        }
        Step::Spend(unmapped * self.costs.zap_pte.cycles, Mode::Sys)
    }

    /// One step of `arch_tlbbatch_flush()` (preemption off throughout: `get_cpu()`).
    pub(super) fn batch_flush_step(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        mask: CpuMask,
        phase: FlushPhase,
        call: Option<CallId>,
    ) -> Step {
        match phase {
            FlushPhase::Start => {
                let next = Frame::BatchFlush { mask, phase: FlushPhase::Dispatch, call: None };
                self.push_frame(t, next);
                Step::Spend(self.costs.flush_tlb_mm_range.cycles, Mode::Sys)
            }
            FlushPhase::Dispatch => {
                let info = FlushTlbInfo {
                    mm: None,
                    start: 0,
                    end: FLUSH_ALL_END,
                    stride_shift: PAGE_SHIFT,
                    freed_tables: false,
                    new_tlb_gen: TLB_GENERATION_INVALID,
                    initiating_cpu: cpu,
                    trim_cpumask: false,
                };
                let id = self.new_call(info, t);
                // The batch frame exists only when a page was deferred, so
                // `batch->unmapped_pages` is set.
                let cycles = if self.policy.invlpgb {
                    // invlpgb_flush_all_nonglobals(). NOTE: no CPU's tlb_gen catches up with
                    // the mms' bumped generations, so each CPU still running one of them does
                    // a full catch-up flush at its next flush_tlb_func() for that mm.
                    self.invlpgb_flush_sync(cpu, (0, FLUSH_ALL_END), None, false)
                } else if mask.any_but(cpu) {
                    self.native_flush_tlb_multi_mask(cpu, id, &mask)
                } else if mask.test(cpu) {
                    self.flush_tlb_func(cpu, id) + self.kernel_refill(cpu)
                } else {
                    0
                };
                let next = Frame::BatchFlush { mask, phase: FlushPhase::Wait, call: Some(id) };
                self.push_frame(t, next);
                Step::Spend(cycles, Mode::Sys)
            }
            FlushPhase::Wait | FlushPhase::Done => {
                let id = call.expect("waits follow a call");
                self.wait_for_acks(t, id, Frame::BatchFlush { mask, phase: FlushPhase::Wait, call })
            }
        }
    }
}
