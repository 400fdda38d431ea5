//! LATR (Kumar et al., "LATR: Lazy Translation Coherence", ASPLOS'18; prototype
//! sslab-gatech/latr on Linux 4.10) on linux-6.18's tlb.c.
//!
//! The flush of a munmap() or MADV_DONTNEED sends no IPI. `flush_tlb_mm_range()` bumps the mm's
//! `tlb_gen` as usual, the initiator flushes itself, and instead of interrupting the CPUs
//! `should_flush_tlb()` picks it writes a *LATR state* (the range, the stride, the new
//! generation, the CPUs still to flush) into its own per-CPU ring (`native_flush_save_state()`)
//! and returns at once. Every CPU applies the states meant for it, from every CPU's ring, at its
//! next scheduler tick and at the top of every `__schedule()` (the prototype's hooks in
//! `scheduler_tick()` and `__schedule()`, both calling `native_flush_saved_states()`), by running
//! `flush_tlb_func()` locally, which keeps the `tlb_gen` bookkeeping: a CPU that is lazy or on
//! another mm by then catches up through `tlb_gen` at its next `switch_mm_irqs_off()`.
//!
//! What the model leaves out, and why:
//! - NOTE: flushes that free page tables stay synchronous (IPIs, lazy CPUs included). LATR frees
//!   page tables, pages and VMAs lazily (`CONFIG_LAZY_MEM_FREE`, after `2*HZ`); the model frees
//!   them at completion, so deferring their flush would let a CPU walk a freed table.
//! - NOTE: the prototype's background thread (every second, a state still pending after
//!   `TLB_SHOOTDOWN_MAX` = 2 counts falls back to IPIs; docs/safety.md §10 question 4 on how it
//!   really counts) is not modelled. In the model every CPU a state names ran the mm non-lazily
//!   when it was written, and applies it at its next busy tick or context switch.
//! - NOTE: the model's `__schedule()` hook is the start of a context switch; a `schedule()`
//!   that picks the task already running (no switch) applies nothing.
//! - Only munmap and MADV_DONTNEED defer (the prototype's `mm->munmap_inprogress`, here per
//!   task); fork, COW, reclaim, mprotect and exit flush synchronously, as in the prototype
//!   (its lazy AutoNUMA migration, `CONFIG_LAZY_MIGRATION`, has no counterpart in the model).

use super::{CallId, Kernel};
use crate::cpumask::CpuMask;
use crate::ids::TaskId;
use crate::kernel::flush::{FlushRequest, FlushTlbInfo};
use crate::observer::Observer;
use std::collections::VecDeque;
use tlblab_types::CpuId;

/// `LAZY_TLB_NUM_ENTRIES`: states per ring; with the ring full, the flush sends IPIs.
const LAZY_TLB_NUM_ENTRIES: usize = 256;

/// A LATR state (`lazytlb_shootdown_t`).
#[derive(Clone, Debug)]
struct LatrState {
    /// The flush: mm, range, stride, new generation, initiator.
    info: FlushTlbInfo,
    /// The CPUs that have not applied it yet.
    mask: CpuMask,
}

/// LATR's per-CPU rings and the tasks whose next flush may be deferred.
#[derive(Clone, Debug)]
pub(crate) struct Latr {
    /// Per initiating CPU, its states, oldest first.
    rings: Vec<VecDeque<LatrState>>,
    /// Tasks whose pending flush is their munmap's or MADV_DONTNEED's.
    deferrable: Vec<TaskId>,
    /// Test only: a broken LATR that never applies its states.
    #[cfg(test)]
    pub(super) never_apply: bool,
}

impl Latr {
    pub(crate) fn new(nr_cpus: usize) -> Latr {
        Latr {
            rings: vec![VecDeque::new(); nr_cpus],
            deferrable: Vec::new(),
            #[cfg(test)]
            never_apply: false,
        }
    }
}

/// LATR needs `tlb_gen` (its catch-up of CPUs that were lazy or on another mm relies on it),
/// and has nothing to replace under INVLPGB, whose broadcasts send no IPI.
pub(super) fn check_policy(policy: &crate::Policy) -> Result<(), super::KernelError> {
    let why = match policy {
        p if p.latr && !p.tlb_gen => "LATR on a kernel without tlb_gen: its lazy and switched-away CPUs catch up through tlb_gen",
        p if p.latr && p.invlpgb => "LATR with INVLPGB: broadcast flushes send no IPI to defer",
        _ => return Ok(()),
    };
    Err(super::KernelError::Unsupported { policy: policy.shown(), why })
}

impl<O: Observer> Kernel<O> {
    /// Pushes the flush of a munmap or MADV_DONTNEED (task `t`): LATR may defer it unless it
    /// frees page tables.
    pub(super) fn push_unmap_flush(&mut self, t: TaskId, req: FlushRequest) {
        if let Some(l) = self.latr.as_deref_mut().filter(|_| !req.freed_tables) {
            l.deferrable.push(t);
        }
        self.push_flush(t, req);
    }

    /// Whether the flush task `t` dispatches now is one LATR may defer (its munmap's or
    /// MADV_DONTNEED's, freeing no page table). Each such flush is asked once, whether or not
    /// it has other CPUs to reach.
    pub(super) fn latr_deferrable(&mut self, t: TaskId) -> bool {
        let Some(l) = self.latr.as_deref_mut() else { return false };
        let Some(i) = l.deferrable.iter().position(|&d| d == t) else { return false };
        l.deferrable.swap_remove(i);
        true
    }

    /// `native_flush_tlb_multi()` for task `t`'s flush `call`, or, when LATR may defer it,
    /// LATR's replacement: the same counters and tracepoint, the local flush, and a state instead
    /// of the IPIs (the prototype's `native_flush_tlb_others()`). Returns the initiator's cycles.
    pub(super) fn flush_tlb_multi_or_defer(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        call: CallId,
        deferrable: bool,
    ) -> u64 {
        let Some(l) = self.latr.as_deref_mut().filter(|_| deferrable) else {
            return self.native_flush_tlb_multi(cpu, call);
        };
        let ring_full = l.rings[usize::from(cpu.0)].len() >= LAZY_TLB_NUM_ENTRIES;
        let info = self.calls[call.0 as usize].info;
        let mm = info.mm.expect("munmap and MADV_DONTNEED flush an mm");
        let (targets, local) = self.flush_targets(cpu, &info, &self.mms[mm.0 as usize].cpumask);
        if targets.is_empty() || ring_full {
            return self.flush_multi(cpu, call, &targets, local);
        }
        let mut mask = CpuMask::new(self.cpus.len());
        targets.iter().for_each(|&c| mask.set(c));
        let mut cycles = self.flush_multi(cpu, call, &[], local);
        // NOTE: writing the state costs one cache-line transfer: its slot was last read by the
        // CPUs that applied the state before it (the paper's own figure was not read).
        cycles += self.costs.cache_line_transfer.cycles;
        let l = self.latr.as_deref_mut().expect("LATR is on");
        l.rings[usize::from(cpu.0)].push_back(LatrState { info, mask });
        self.deferral_declared(t, &info);
        cycles
    }

    /// `native_flush_saved_states()`: `cpu` applies every state meant for it, from every CPU's
    /// ring, oldest first; returns its cycles. Scanning costs one L1D load per ring (its head
    /// and tail), each state applied a cache-line transfer (reading what the initiator wrote,
    /// as an IPI handler reads `flush_tlb_info`) and `flush_tlb_func()`, which counts and traces
    /// it as the prototype's call does (a TLB interrupt, `NR_TLB_REMOTE_FLUSH_RECEIVED`, a remote
    /// shootdown). Also returns how many states it applied.
    fn latr_apply(&mut self, cpu: CpuId) -> (u64, usize) {
        let Some(l) = self.latr.as_deref_mut() else { return (0, 0) };
        #[cfg(test)]
        if l.never_apply {
            return (0, 0);
        }
        let mut due = Vec::new();
        for ring in &mut l.rings {
            for s in ring.iter_mut().filter(|s| s.mask.test(cpu)) {
                s.mask.clear(cpu);
                due.push(s.info);
            }
            while ring.front().is_some_and(|s| s.mask.weight() == 0) {
                ring.pop_front();
            }
        }
        let mut cycles = self.cpus.len() as u64 * self.costs.l1d_load.cycles;
        let curr = self.cpus[usize::from(cpu.0)].curr;
        for info in &due {
            cycles += self.costs.cache_line_transfer.cycles;
            let id = self.new_call(*info, curr);
            cycles += self.flush_tlb_func(cpu, id) + self.kernel_refill(cpu);
            self.free_calls.push(id);
        }
        (cycles, due.len())
    }

    /// LATR's hook in `scheduler_tick()` (a busy CPU's tick, interrupts on): apply the states,
    /// then judge the declared catch-up. With PTI, a tick that interrupted user mode returns to
    /// it through `SWITCH_TO_USER_CR3`, which does the user-PCID flush a state marked (charged
    /// only when a state was applied: the model's plain ticks leave the entry code out).
    /// Returns the cycles.
    pub(super) fn latr_tick(&mut self, cpu: CpuId) -> u64 {
        if self.latr.is_none() {
            return 0;
        }
        let (mut cycles, applied) = self.latr_apply(cpu);
        let curr = self.cpus[usize::from(cpu.0)].curr;
        if applied > 0
            && self.policy.pti != crate::policy::Pti::Off
            && self.cpus[usize::from(cpu.0)].switch.is_none()
            && self.in_user_mode(curr)
        {
            cycles += self.kernel_entry(cpu) + self.return_to_user(cpu);
        }
        self.deferral_due(cpu);
        cycles
    }

    /// LATR's hook at the top of `__schedule()`, before the switch: apply the states, then
    /// judge the declared catch-up. Returns the cycles.
    pub(super) fn latr_schedule(&mut self, cpu: CpuId) -> u64 {
        if self.latr.is_none() {
            return 0;
        }
        let cycles = self.latr_apply(cpu).0;
        self.deferral_due(cpu);
        cycles
    }
}
