//! XPFO (eXclusive Page Frame Ownership; Khalid Aziz's RFC v9, 2019-04, never merged): a page
//! handed to user space leaves the kernel's direct map, so a kernel exploit cannot reach user
//! data through it (ret2dir). Removing the mapping needs a kernel TLB flush:
//! - `xpfo-sync`: `flush_tlb_kernel_range()` of the page at once, on every online CPU
//!   (`on_each_cpu(do_kernel_range_flush)`: function-call IPIs to every other CPU, idle or
//!   not, and a wait for all of them);
//! - `xpfo-deferred` (v9 12/13): the local CPU flushes the page at once; every other CPU is
//!   marked in `pending_xpfo_flush` and does `__flush_tlb_all()` at its next
//!   `switch_mm_irqs_off()`.
//!
//! Mapping a freed page back needs no flush (adding a translation never does), so only
//! allocations cost. The tracker measures the exposure window of each unmap: how long some
//! CPU could still use the stale kernel translation.

use super::kflush::KernelFlush;
use super::{FlushPhase, Frame, Kernel};
use crate::exposure::{ExposureLog, OperationExposure};
use crate::ids::TaskId;
use crate::kernel::flush::DIRECT_MAP_PAGE;
use crate::observer::Observer;
use crate::policy::Xpfo;
use crate::stats::XpfoReport;
use tlblab_types::{CpuId, Cycles};

/// One unmap from the direct map.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: u64,
    cpu: CpuId,
    /// Synchronous flush: the end of the last remote flush so far, and the remote flushes
    /// still to come. Deferred windows use the per-CPU flush times instead.
    end: u64,
    remaining: u32,
}

/// Unmaps, and the flushes that close their windows.
#[derive(Clone, Debug)]
pub(crate) struct XpfoTracker {
    windows: Vec<Window>,
    /// `xpfo-deferred`: per CPU, the times of its full flushes, in order.
    full_flushes: Vec<Vec<u64>>,
    full_flush_count: u64,
    pub(super) ipis: u64,
    /// `xpfo-deferred` (windows close at full flushes) rather than `xpfo-sync`.
    deferred: bool,
    /// The first window opened since the measurement began.
    measured_from: usize,
}

impl XpfoTracker {
    pub(crate) fn new(nr_cpus: usize, deferred: bool) -> XpfoTracker {
        XpfoTracker {
            deferred,
            windows: Vec::new(),
            full_flushes: vec![Vec::new(); nr_cpus],
            full_flush_count: 0,
            ipis: 0,
            measured_from: 0,
        }
    }

    /// Counts from now on: earlier windows (still tracked, as their flushes may come) and
    /// counts are left out of the report.
    pub(super) fn start_measuring(&mut self) {
        self.measured_from = self.windows.len();
        self.full_flush_count = 0;
        self.ipis = 0;
    }

    pub(super) fn open(&mut self, start: Cycles, cpu: CpuId, remaining: u32) -> u32 {
        self.windows.push(Window { start: start.0, cpu, end: start.0, remaining });
        self.windows.len() as u32 - 1
    }

    /// A remote CPU has flushed the page of window `w` at `at`.
    pub(super) fn flushed(&mut self, w: u32, at: u64) {
        let w = &mut self.windows[w as usize];
        w.remaining -= 1;
        w.end = w.end.max(at);
    }

    /// The report at time `now`. A deferred window closes at the first full flush, after it
    /// opened, of the last other CPU to do one; windows whose close is not yet known are
    /// censored.
    pub(crate) fn report(&self, nr_cpus: usize) -> XpfoReport {
        let mut r = XpfoReport {
            kernel_unmaps: (self.windows.len() - self.measured_from) as u64,
            full_flushes: self.full_flush_count,
            ipis: self.ipis,
            ..XpfoReport::default()
        };
        // Windows open in time order, so each CPU's pointer into its flush times only moves on.
        let mut next = vec![0usize; nr_cpus];
        for w in &self.windows[self.measured_from..] {
            let end = if self.deferred && nr_cpus > 1 {
                self.deferred_end(w, &mut next)
            } else {
                (w.remaining == 0).then_some(w.end)
            };
            match end {
                Some(end) => r.exposure_cycles.push(end - w.start),
                None => r.censored += 1,
            }
        }
        r
    }

    fn deferred_end(&self, w: &Window, next: &mut [usize]) -> Option<u64> {
        self.cpu_ends(w, next).into_iter().try_fold(w.start, |end, e| Some(end.max(e?)))
    }

    /// `xpfo-deferred`: per other CPU (all are marked), its first full flush at or after the
    /// window opened, `None` if it has not done one yet. `next` as in [`XpfoTracker::report`].
    fn cpu_ends(&self, w: &Window, next: &mut [usize]) -> Vec<Option<u64>> {
        let mut ends = Vec::with_capacity(self.full_flushes.len());
        for (c, times) in self.full_flushes.iter().enumerate() {
            if c == usize::from(w.cpu.0) {
                continue;
            }
            while next[c] < times.len() && times[next[c]] < w.start {
                next[c] += 1;
            }
            ends.push(times.get(next[c]).copied());
        }
        ends
    }

    /// `xpfo-deferred`'s windows per (unmap, other CPU), measured ones only: the same windows as
    /// [`XpfoTracker::report`]'s, CPU by CPU. The kernel makes no memory accesses in the model,
    /// so there are no uses to count.
    pub(super) fn exposure_log(&self, nr_cpus: usize) -> ExposureLog {
        let mut next = vec![0usize; nr_cpus];
        ExposureLog {
            operations: self.windows[self.measured_from..]
                .iter()
                .map(|w| OperationExposure {
                    completed_at: w.start,
                    windows: self
                        .cpu_ends(w, &mut next)
                        .into_iter()
                        .map(|e| e.map(|e| e - w.start))
                        .collect(),
                })
                .collect(),
            uses: None,
            missed_catch_ups: 0,
        }
    }
}

impl<O: Observer> Kernel<O> {
    /// A page was just handed to user space: take it out of the direct map. Returns the local
    /// cycles; a synchronous flush is pushed as a frame of task `t`.
    pub(super) fn xpfo_alloc(&mut self, cpu: CpuId, t: TaskId) -> u64 {
        let now = self.queue.now();
        match self.policy.xpfo {
            Xpfo::Off => 0,
            Xpfo::Sync => {
                let req = KernelFlush::range(DIRECT_MAP_PAGE, 1, true);
                self.push_frame(
                    t,
                    Frame::KernelFlush { req, phase: FlushPhase::Start, call: None },
                );
                0
            }
            Xpfo::Deferred => {
                for (i, other) in self.cpus.iter_mut().enumerate() {
                    if i != usize::from(cpu.0) {
                        other.xpfo_pending = true;
                    }
                }
                self.xpfo.open(now, cpu, 0);
                self.flush_tlb_one_kernel(cpu, DIRECT_MAP_PAGE)
            }
        }
    }

    /// `xpfo-deferred`, at the top of `switch_mm_irqs_off()`: a CPU marked in
    /// `pending_xpfo_flush` flushes everything, globals included. Returns its cycles.
    pub(super) fn xpfo_switch_flush(&mut self, cpu: CpuId) -> u64 {
        let c = usize::from(cpu.0);
        if !self.cpus[c].xpfo_pending {
            return 0;
        }
        self.cpus[c].xpfo_pending = false;
        self.xpfo.full_flush_count += 1;
        self.xpfo.full_flushes[c].push(self.queue.now().0);
        self.flush_tlb_all_local(cpu)
    }
}
