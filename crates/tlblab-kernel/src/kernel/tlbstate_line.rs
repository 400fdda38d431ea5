//! The cache lines of another CPU's TLB state that a flush initiator reads (mechanism
//! `tlbstate-lines`): `on_each_cpu_cond_mask()` calls the flush's condition function for every
//! CPU of the mask, and it reads that CPU's per-CPU variables.
//!
//! - 4.20–6.13 (`tlb_is_not_lazy()`): `per_cpu(cpu_tlbstate_shared.is_lazy, cpu)`, alone on its
//!   line (`DEFINE_PER_CPU_SHARED_ALIGNED`; split out of `cpu_tlbstate` in 2021 so that it would
//!   not share the busy line), written only when the CPU enters or leaves lazy mode.
//! - 6.14 (6db2526c1d69, `should_flush_tlb()`): `is_lazy`, then, for a CPU that is not lazy,
//!   `per_cpu(cpu_tlbstate.loaded_mm, cpu)`. 6.15+ (fea4e317f9e7) reads `loaded_mm` first, for
//!   every CPU of the mask, then `is_lazy`.
//!
//! `loaded_mm` is the first field of `struct tlb_state` (arch/x86/include/asm/tlbflush.h,
//! v6.13–v6.18; `DECLARE_PER_CPU_ALIGNED`, 64-byte lines): `loaded_mm` (0), `last_user_mm_spec`
//! (8), `loaded_mm_asid`, `next_asid`, `invalidate_other`, `lam`, `user_pcid_flush_mask`
//! (16–23), `cr4` (24), then `ctxs[6]` of 16 bytes from 32: `ctxs[0]` and `ctxs[1]` share the
//! first line with `loaded_mm`, `ctxs[2..5]` fill the second. The CPU itself writes that first
//! line at every `switch_mm_irqs_off()` that loads an mm (`loaded_mm`, `loaded_mm_asid`, the
//! ASID slot) and in `flush_tlb_func()` when the flushed mm's ASID slot is 0 or 1 (its
//! `ctxs[asid].tlb_gen`). So the initiator's read finds the line in the target's cache after
//! each such write: one transfer per target, costed by how far it moves, as `mm_cpumask`'s line
//! (cpumask_line.rs).
//! NOTE: the read is charged in the initiator's IPI loop before that target's csd is queued:
//! each iteration ends in a locked `llist_add()` on the target's queue, which later loads do
//! not pass, so the reads of successive CPUs do not overlap.
//! Not modelled: PTI's `user_pcid_flush_mask` (policies here run without PTI), `cr4` writes.

use super::cpumask_line::Distance;
use super::{FlushTlbInfo, Kernel};
use crate::cpumask::{CpuMask, CpumaskLine};
use crate::ids::Asid;
use crate::mechanisms::Mechanism;
use crate::observer::Observer;
use crate::policy::LazyMode;
use tlblab_types::CpuId;

/// A CPU's two lines of TLB state that other CPUs read.
#[derive(Clone, Debug, Default)]
pub(super) struct TlbstateLines {
    /// `cpu_tlbstate`'s first line: `loaded_mm` … `ctxs[1]`.
    pub(super) tlbstate: CpumaskLine,
    /// `cpu_tlbstate_shared`: `is_lazy`.
    pub(super) shared: CpumaskLine,
}

/// Which of the two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// `cpu_tlbstate`'s first line.
    Tlbstate,
    /// `cpu_tlbstate_shared`.
    Shared,
}

/// Whether ASID slot `asid`'s `struct tlb_context` lies in `cpu_tlbstate`'s first line.
pub(crate) fn ctx_in_first_line(asid: Asid) -> bool {
    asid.is_dynamic() && asid.0 < 2
}

/// The reads of one flush's condition function: for each target, in send order, the cycles
/// spent reading before its csd is queued; then the cycles after the last one.
#[derive(Clone, Debug, Default)]
pub(super) struct CondReads {
    pub(super) before: Vec<u64>,
    pub(super) after: u64,
}

impl<O: Observer> Kernel<O> {
    fn tlbstate_on(&self) -> bool {
        self.config.mechanisms.is_on(Mechanism::TlbstateLines)
    }

    fn tlbstate_line(&mut self, cpu: CpuId, line: Line) -> &mut CpumaskLine {
        let l = &mut self.cpus[usize::from(cpu.0)].tlbstate_lines;
        match line {
            Line::Tlbstate => &mut l.tlbstate,
            Line::Shared => &mut l.shared,
        }
    }

    /// The cycles of one move of a TLB-state line, counted.
    fn tlbstate_transfer(&mut self, d: Distance) -> u64 {
        self.counters.tlbstate.count_transfer(d == Distance::Remote);
        self.line_transfer_cycles(d)
    }

    /// `cpu` stores to its own `line`: the line must be its alone, so copies that readers
    /// took since are invalidated (one transfer when there are any). 0 with the mechanism off.
    pub(crate) fn tlbstate_write(&mut self, cpu: CpuId, line: Line) -> u64 {
        if !self.tlbstate_on() {
            return 0;
        }
        self.counters.tlbstate.writes += 1;
        let mut l = std::mem::take(self.tlbstate_line(cpu, line));
        let moved = self.line_write(&mut l, cpu.0);
        *self.tlbstate_line(cpu, line) = l;
        moved.map_or(0, |d| self.tlbstate_transfer(d))
    }

    /// `reader` reads `owner`'s `line` (`per_cpu(…, owner)`).
    fn tlbstate_read(&mut self, reader: CpuId, owner: CpuId, line: Line) -> u64 {
        self.counters.tlbstate.reads += 1;
        let mut l = std::mem::take(self.tlbstate_line(owner, line));
        let moved = self.line_read(&mut l, reader.0);
        *self.tlbstate_line(owner, line) = l;
        moved.map_or(0, |d| self.tlbstate_transfer(d))
    }

    /// Whether `native_flush_tlb_multi()` filters the mask with a condition function
    /// (`on_each_cpu_cond_mask()`) rather than calling every CPU of it (`on_each_cpu_mask()`):
    /// 4.20+ (lazy CPUs skipped), unless page tables were freed or the mm is in an ASID
    /// transition.
    pub(super) fn uses_cond_func(&self, info: &FlushTlbInfo) -> bool {
        let transition = info.mm.is_some_and(|m| self.mms[m.0 as usize].asid_transition);
        let freed_tables = info.freed_tables
            && self.policy.defect != Some(crate::policy::Defect::LazySkippedOnFreedTables);
        self.policy.lazy == LazyMode::SkipLazy && !freed_tables && !transition
    }

    /// The condition function's reads for each CPU of `mask` but `cpu` (whose own lines are
    /// here), in the order `smp_call_function_many_cond()` walks the mask, grouped by the
    /// target they precede (`targets`, in mask order).
    pub(super) fn cond_func_reads(
        &mut self,
        cpu: CpuId,
        info: &FlushTlbInfo,
        mask: &CpuMask,
        targets: &[CpuId],
    ) -> CondReads {
        let mut reads = CondReads::default();
        if !self.tlbstate_on() || !self.uses_cond_func(info) {
            return reads;
        }
        let mut pending = 0;
        let mut next = targets.iter().peekable();
        for c in mask.iter().filter(|&c| c != cpu) {
            pending += self.cond_func_read(cpu, c, info);
            if next.peek() == Some(&&c) {
                next.next();
                reads.before.push(std::mem::take(&mut pending));
            }
        }
        debug_assert!(next.next().is_none(), "targets come from the mask");
        reads.after = pending;
        reads
    }

    /// What `tlb_is_not_lazy()` / `should_flush_tlb()` reads of CPU `c` for initiator `cpu`.
    fn cond_func_read(&mut self, cpu: CpuId, c: CpuId, info: &FlushTlbInfo) -> u64 {
        if !self.policy.lazy_cpumask {
            // ≤ 6.13: is_lazy alone.
            return self.tlbstate_read(cpu, c, Line::Shared);
        }
        if self.policy.loaded_mm_switching_check {
            // 6.15+: loaded_mm first, for every CPU, then is_lazy.
            return self.tlbstate_read(cpu, c, Line::Tlbstate)
                + self.tlbstate_read(cpu, c, Line::Shared);
        }
        // 6.14: is_lazy; loaded_mm only for a CPU that is not lazy, of an mm flush.
        let mut cycles = self.tlbstate_read(cpu, c, Line::Shared);
        if !self.cpus[usize::from(c.0)].tlb.is_lazy && info.mm.is_some() {
            cycles += self.tlbstate_read(cpu, c, Line::Tlbstate);
        }
        cycles
    }
}
