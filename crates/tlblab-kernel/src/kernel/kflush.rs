//! Flushes of kernel addresses (arch/x86/mm/tlb.c, v6.18): `flush_tlb_kernel_range()` and
//! `flush_tlb_all()`.
//!
//! Kernel mappings are shared by every mm, so these flushes go to every online CPU, lazy or
//! idle: `on_each_cpu()` of `do_kernel_range_flush()` (one INVLPG per page) or, above
//! `tlb_single_page_flush_ceiling` and for `flush_tlb_all()`, of `do_flush_tlb_all()` (everything,
//! globals included). With INVLPGB (6.15+) no IPI is sent: the initiator broadcasts INVLPGB
//! (with `INCLUDE_GLOBAL`, every PCID) and waits with TLBSYNC. None of this is traced by
//! `tlb:tlb_flush`. The caller keeps preemption off throughout (`guard(preempt)` /
//! `get_cpu()`), so the wait is never preempted.
//!
//! Callers in the model: XPFO's unmap of a page from the direct map, and
//! [`Syscall::KernelFlush`](crate::program::Syscall::KernelFlush) (vunmap purges,
//! `set_memory_*()` through `cpa_flush()`, which calls `flush_tlb_kernel_range()` since 6.15,
//! and `flush_tlb_all()` after `cpa_collapse_large_pages()` or memory hot-remove).

use super::run::Step;
use super::{CallId, Csd, FlushPhase, Frame, Kernel, Mode, FLUSH_ALL_END, PAGE_SHIFT};
use crate::ids::{TaskId, TLB_GENERATION_INVALID};
use crate::kernel::flush::FlushTlbInfo;
use crate::observer::Observer;
use tlblab_types::{CpuId, Vpn};

/// A page of vmalloc space, where the kernel-range flushes of
/// [`Syscall::KernelFlush`](crate::program::Syscall::KernelFlush) start.
pub(crate) const VMALLOC_PAGE: Vpn = Vpn(0xffff_c900_0000_0000 >> 12 & Vpn::MAX);

/// What a kernel flush covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelFlush {
    /// First page.
    pub start: u64,
    /// End page (exclusive), or [`FLUSH_ALL_END`].
    pub end: u64,
    /// Entered through `flush_tlb_all()` (counts `NR_TLB_REMOTE_FLUSH`) rather than
    /// `flush_tlb_kernel_range()`.
    pub flush_all: bool,
    /// XPFO's unmap: the flush closes an exposure window.
    pub xpfo: bool,
}

impl KernelFlush {
    /// `flush_tlb_kernel_range()` of `pages` pages from `start`.
    pub(crate) fn range(start: Vpn, pages: u64, xpfo: bool) -> KernelFlush {
        KernelFlush { start: start.0, end: start.0 + pages, flush_all: false, xpfo }
    }

    /// `flush_tlb_all()`.
    pub(crate) fn all() -> KernelFlush {
        KernelFlush { start: 0, end: FLUSH_ALL_END, flush_all: true, xpfo: false }
    }
}

impl<O: Observer> Kernel<O> {
    /// One step of a kernel flush by task `t` on `cpu` (preemption off throughout).
    pub(super) fn kernel_flush_step(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        req: KernelFlush,
        phase: FlushPhase,
        call: Option<CallId>,
    ) -> Step {
        match phase {
            FlushPhase::Start => {
                // get_flush_tlb_info() and the call-function setup: taken as costly as
                // flush_tlb_mm_range()'s own setup.
                let next = Frame::KernelFlush { req, phase: FlushPhase::Dispatch, call: None };
                self.push_frame(t, next);
                Step::Spend(self.costs.flush_tlb_mm_range.cycles, Mode::Sys)
            }
            FlushPhase::Dispatch => {
                let (id, cycles) = self.kernel_flush_dispatch(cpu, t, req);
                let next = Frame::KernelFlush { req, phase: FlushPhase::Wait, call: Some(id) };
                self.push_frame(t, next);
                Step::Spend(cycles, Mode::Sys)
            }
            FlushPhase::Wait | FlushPhase::Done => {
                let id = call.expect("waits follow a call");
                let again = Frame::KernelFlush { req, phase: FlushPhase::Wait, call };
                self.wait_for_acks(t, id, again)
            }
        }
    }

    /// Sends the flush: INVLPGB, or IPIs to every other CPU and the local flush. Returns the
    /// call and the initiator's cycles.
    fn kernel_flush_dispatch(&mut self, cpu: CpuId, t: TaskId, req: KernelFlush) -> (CallId, u64) {
        if req.flush_all {
            self.counters.vmstat.nr_tlb_remote_flush += 1;
        }
        let mut info = FlushTlbInfo {
            mm: None,
            start: req.start,
            end: req.end,
            stride_shift: PAGE_SHIFT,
            freed_tables: false,
            new_tlb_gen: TLB_GENERATION_INVALID,
            initiating_cpu: cpu,
            trim_cpumask: false,
        };
        // init_flush_tlb_info(): above the ceiling, flush everything.
        if info.entries().is_some_and(|n| n > self.policy.tlb_single_page_flush_ceiling) {
            (info.start, info.end) = (0, FLUSH_ALL_END);
        }
        let id = self.new_call(info, t);
        let now = self.queue.now();
        let n = self.cpus.len();
        if self.policy.invlpgb {
            let window = req.xpfo.then(|| self.xpfo.open(now, cpu, 1));
            // invlpgb_flush_all() / invlpgb_kernel_range_flush(): every PCID, globals too.
            let cycles = self.invlpgb_flush_sync(cpu, (info.start, info.end), None, true);
            if let Some(w) = window {
                self.xpfo.flushed(w, now.0 + cycles);
            }
            return (id, cycles);
        }
        if req.xpfo {
            let window = self.xpfo.open(now, cpu, n as u32 - 1);
            self.calls[id.0 as usize].window = Some(window);
        }
        // on_each_cpu(): every other online CPU, lazy or idle, then this one.
        let targets: Vec<CpuId> = (0..n).map(|c| CpuId(c as u16)).filter(|&c| c != cpu).collect();
        let mut cycles = self.send_call_ipis(cpu, id, &targets, 0, Csd::KernelFlush(id));
        if req.xpfo {
            self.xpfo.ipis += targets.len() as u64;
        }
        cycles += self.do_kernel_range_flush(cpu, id, cycles);
        (id, cycles)
    }

    /// `do_kernel_range_flush()` (one INVLPG per page) or, for a full flush,
    /// `do_flush_tlb_all()`, on `cpu`, starting `offset` cycles from now; returns its cycles. On
    /// a remote CPU it closes its share of the XPFO window when the flush is done.
    pub(super) fn do_kernel_range_flush(&mut self, cpu: CpuId, call: CallId, offset: u64) -> u64 {
        let k = &self.calls[call.0 as usize];
        let (info, window) = (k.info, k.window);
        let cycles = if info.end == FLUSH_ALL_END {
            self.counters.vmstat.nr_tlb_remote_flush_received += 1;
            self.flush_tlb_all_local(cpu)
        } else {
            (info.start..info.end).map(|vpn| self.flush_tlb_one_kernel(cpu, Vpn(vpn))).sum()
        };
        if cpu != info.initiating_cpu {
            self.counters.irq_cal[usize::from(cpu.0)] += 1;
            if let Some(w) = window {
                self.xpfo.flushed(w, self.queue.now().0 + offset + cycles);
            }
        }
        cycles
    }
}
