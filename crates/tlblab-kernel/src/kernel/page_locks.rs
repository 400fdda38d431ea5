//! The locks of page allocation and freeing that serialise `munmap()` and
//! `madvise(MADV_DONTNEED)` across CPUs (mechanism `page-locks`; the preset's `[locks]`).
//!
//! - **LRU** (`lruvec->lru_lock`, one per node and memcg: one here, the presets being one
//!   node). A new anonymous folio goes into the CPU's `lru_add` batch (`folio_add_lru()`); a
//!   full batch of [`LRU_BATCH`] is moved onto the LRU under the lock in one acquisition
//!   (`folio_batch_move_lru()`). Freeing a folio that is on the LRU takes the lock once for the
//!   folios freed together (`folios_put_refs()` → `__page_cache_release()`, relocking only when
//!   the lruvec changes). `lru_add_drain()` moves the CPU's batch onto the LRU at once.
//! - **Zone** (`zone->lock`, one zone here). A CPU allocates from and frees to its per-CPU
//!   page list (`pcp`): an empty list is refilled with [`PCP_BATCH`] pages under the lock
//!   (`rmqueue_bulk()`), a list above [`PCP_HIGH`] gives pages back under it
//!   (`free_pcppages_bulk()`).
//!
//! Before 6.15 the zap paths of `MADV_DONTNEED` and `munmap` called `lru_add_drain()`
//! (`zap_page_range_single()`, `unmap_region()`, `free_pages_and_swap_cache()`); Rik van
//! Riel's "mm: remove unnecessary calls to lru_add_drain" (lore 20241219153253.3da9e8aa@fangorn,
//! merged for 6.15) removed them ([`crate::Policy::lru_drain_on_zap`]). With them, a page
//! faulted and freed at once costs two acquisitions of the LRU lock (its batch drained, then its
//! release); without, the folio is still in the faulting CPU's batch when it is unmapped, and it
//! is freed when the batch drains: two acquisitions per [`LRU_BATCH`] folios.
//!
//! Each lock is a FIFO spinlock (qspinlock queues its waiters): an acquisition asked for at `t`
//! waits until the lock is free, takes the lock word's cache line from the last holder's CPU
//! (`cache_line_transfer`), and holds the lock for the path's per-acquisition figure plus its
//! per-item one. Waiting and holding are the acquirer's system time; both are counted.
//! NOTE: acquisitions are ordered as the simulator reaches them (each at the start of the step
//! that takes it), not by the exact cycle within the step.
//! NOTE: the freed pages are taken to be the most recently faulted ones of the CPU that frees
//! them (what `tlb_flush2` does: each thread faults and frees its own page); process exit's
//! teardown takes no lock here.

use super::run::Step;
use super::{Frame, Kernel, Mode};
use crate::ids::TaskId;
use crate::mechanisms::Mechanism;
use crate::observer::Observer;
use std::collections::VecDeque;
use tlblab_sim::machine::broadcast::RawLocks;
use tlblab_types::CpuId;

/// `PAGEVEC_SIZE`, the capacity of a CPU's `lru_add` folio batch (include/linux/pagevec.h: 31
/// since 6.x; it was 15 before).
/// NOTE: the model uses 31 for every kernel it mirrors.
pub(crate) const LRU_BATCH: u32 = 31;

/// `pcp->batch` of a zone larger than 1 GiB (`zone_batchsize()`: a quarter of a megabyte's
/// worth of pages per 1024, rounded to 2^n − 1, capped: 63).
pub(crate) const PCP_BATCH: u32 = 63;

/// `pcp->high`: 6 × batch (`pageset_set_batch()`, before 5.14's `percpu_pagelist_high_fraction`).
/// NOTE: 6.x tunes `high` between its bounds at run time; a steady alloc-free loop stays far
/// below it either way.
pub(crate) const PCP_HIGH: u32 = 6 * PCP_BATCH;

/// A section of the locks that runs as a step of its own with interrupts off (mechanism
/// `lock-irqs-off`); the zap's free after its flush is [`Frame::ZapFree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockOp {
    /// The end of an anonymous fault: `rmqueue_bulk()` when the pcp list is empty, and
    /// `folio_add_lru()` moving a full batch onto the LRU.
    Alloc,
    /// The pre-6.15 `lru_add_drain()` at the start of a zap (`zap_page_range_single()`,
    /// `unmap_region()`), before its flush.
    Drain,
}

/// One of the two locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockId {
    /// `lruvec->lru_lock`.
    Lru,
    /// `zone->lock`.
    Zone,
}

/// A spinlock: when it is free again, and which CPU last wrote its word.
#[derive(Clone, Copy, Debug, Default)]
struct SpinLock {
    free_at: u64,
    owner: Option<u16>,
}

/// A folio on the LRU list (mechanism `lru-list-lines`): the CPU that added it, and the CPU
/// that last wrote the cache line of its `lru` links (its own, or a neighbour's list
/// operation).
#[derive(Clone, Copy, Debug)]
struct LruEntry {
    owner: u16,
    writer: u16,
}

/// The locks, the per-CPU batches and lists, and the hold times (cycles).
#[derive(Clone, Debug)]
pub(crate) struct PageLocks {
    lru_lock: u64,
    lru_folio: u64,
    zone_lock: u64,
    zone_page: u64,
    locks: [SpinLock; 2],
    /// Folios in each CPU's `lru_add` batch.
    lru_batch: Vec<u32>,
    /// Of which already unmapped (freed when the batch drains).
    lru_dead: Vec<u32>,
    /// Pages on each CPU's `pcp` list.
    pcp: Vec<u32>,
    /// The anonymous LRU list, head (newest) first (mechanism `lru-list-lines`; empty when
    /// off). NOTE: only the scenario's own folios: the rest of the LRU sits behind them.
    lru_list: VecDeque<LruEntry>,
}

impl PageLocks {
    /// The locks of `n` CPUs with the preset's figures.
    pub(crate) fn new(raw: &RawLocks, n: usize) -> PageLocks {
        PageLocks {
            lru_lock: raw.lru_lock.cycles,
            lru_folio: raw.lru_folio.cycles,
            zone_lock: raw.zone_lock.cycles,
            zone_page: raw.zone_page.cycles,
            locks: [SpinLock::default(); 2],
            lru_batch: vec![0; n],
            lru_dead: vec![0; n],
            pcp: vec![0; n],
            lru_list: VecDeque::new(),
        }
    }
}

impl<O: Observer> Kernel<O> {
    /// An acquisition of `lock` by `cpu`, asked for `offset` cycles from now, held `hold`
    /// cycles: returns the cycles from the request to the release (wait, transfer, hold).
    fn lock_section(&mut self, cpu: CpuId, lock: LockId, offset: u64, hold: u64) -> u64 {
        let Some(mut pl) = self.page_locks.take() else { return 0 };
        let l = &mut pl.locks[lock as usize];
        let moved = self.line_move_cycles(l.owner.replace(cpu.0), cpu.0);
        let at = self.queue.now().0 + offset;
        let wait = l.free_at.saturating_sub(at);
        let total = wait + moved + hold;
        l.free_at = at + total;
        self.page_locks = Some(pl);
        let s = match lock {
            LockId::Lru => &mut self.counters.broadcast.lru_lock,
            LockId::Zone => &mut self.counters.broadcast.zone_lock,
        };
        s.add(wait, moved + hold);
        total
    }

    /// Whether lock sections run as steps of their own with interrupts off (mechanism
    /// `lock-irqs-off`, with the locks present).
    pub(super) fn lock_irqs_off(&self) -> bool {
        self.page_locks.is_some() && self.config.mechanisms.is_on(Mechanism::LockIrqsOff)
    }

    /// A step of `cycles` in lock sections on `cpu` for task `t`. With `lock-irqs-off` the CPU
    /// has interrupts off throughout (`spin_lock_irqsave()`: from the request, spinning
    /// included, to `spin_unlock_irqrestore()`), so an IPI that reaches it meanwhile waits for
    /// the release ([`Frame::IrqsRestore`]).
    /// NOTE: the few instructions between two sections of one path (unlock, then the zone
    /// lock's relock) are taken to run with interrupts off too.
    pub(super) fn lock_step(&mut self, cpu: CpuId, t: TaskId, cycles: u64) -> Step {
        if cycles == 0 {
            return Step::Next;
        }
        let c = usize::from(cpu.0);
        if self.lock_irqs_off() && !self.cpus[c].irqs_off {
            self.cpus[c].irqs_off = true;
            self.push_frame(t, Frame::IrqsRestore);
        }
        Step::Spend(cycles, Mode::Sys)
    }

    /// The step of `op` on `cpu` for task `t` (mechanism `lock-irqs-off`).
    pub(super) fn page_lock_step(&mut self, cpu: CpuId, t: TaskId, op: LockOp) -> Step {
        let cycles = match op {
            LockOp::Alloc => self.page_alloc_locks(cpu, 0),
            LockOp::Drain => self.lru_batch_drain(cpu, 0),
        };
        self.lock_step(cpu, t, cycles)
    }

    /// `lruvec_add_folio()` of `n` folios of `cpu` at the LRU list's head (mechanism
    /// `lru-list-lines`): the first one's `list_add()` writes the old first folio's `lru.prev`,
    /// a transfer when another CPU wrote that line last; the rest link to `cpu`'s own. Returns
    /// the extra hold cycles.
    fn lru_list_add(&mut self, cpu: CpuId, n: u32) -> u64 {
        if n == 0 || !self.config.mechanisms.is_on(Mechanism::LruListLines) {
            return 0;
        }
        let Some(mut pl) = self.page_locks.take() else { return 0 };
        let mut cycles = 0;
        if let Some(first) = pl.lru_list.front_mut() {
            cycles += self.line_move_cycles(Some(first.writer), cpu.0);
            first.writer = cpu.0;
        }
        for _ in 0..n {
            pl.lru_list.push_front(LruEntry { owner: cpu.0, writer: cpu.0 });
        }
        self.page_locks = Some(pl);
        cycles
    }

    /// `lruvec_del_folio()` of `cpu`'s `n` most recently added folios (mechanism
    /// `lru-list-lines`): each `list_del()` reads the folio's own line (its links), then
    /// writes its two neighbours' (`prev->next`, `next->prev`; the list head's line is in the
    /// per-acquisition figure). The own line is a transfer when another CPU wrote it last (a
    /// neighbour's operation did); the two stores to the neighbours overlap (store misses in
    /// flight together), so they cost one transfer, the farther one's, when either is remote.
    /// Returns the extra hold cycles.
    fn lru_list_del(&mut self, cpu: CpuId, n: u32) -> u64 {
        if n == 0 || !self.config.mechanisms.is_on(Mechanism::LruListLines) {
            return 0;
        }
        let Some(mut pl) = self.page_locks.take() else { return 0 };
        let list = &mut pl.lru_list;
        let mut cycles = 0;
        for _ in 0..n {
            let Some(i) = list.iter().position(|e| e.owner == cpu.0) else { break };
            cycles += self.line_move_cycles(Some(list[i].writer), cpu.0);
            // The two stores overlap: the farther neighbour's line sets their cost.
            let mut neighbours = 0;
            for j in [i.checked_sub(1), Some(i + 1)].into_iter().flatten() {
                if let Some(e) = list.get_mut(j) {
                    neighbours = neighbours.max(self.line_move_cycles(Some(e.writer), cpu.0));
                    e.writer = cpu.0;
                }
            }
            cycles += neighbours;
            list.remove(i);
        }
        self.page_locks = Some(pl);
        cycles
    }

    /// A new anonymous page on `cpu` (`alloc_anon_folio()` + `folio_add_lru()`), from `offset`
    /// cycles into the step: the cycles its locks take.
    pub(super) fn page_alloc_locks(&mut self, cpu: CpuId, offset: u64) -> u64 {
        let c = usize::from(cpu.0);
        let Some(pl) = self.page_locks.as_deref() else { return 0 };
        let (zone_hold, refill) =
            (pl.zone_lock + u64::from(PCP_BATCH) * pl.zone_page, pl.pcp[c] == 0);
        let mut cycles = 0;
        if refill {
            // rmqueue_bulk(): the empty pcp list takes a batch from the buddy lists.
            cycles += self.lock_section(cpu, LockId::Zone, offset, zone_hold);
            self.page_locks.as_deref_mut().expect("checked").pcp[c] += PCP_BATCH;
        }
        let pl = self.page_locks.as_deref_mut().expect("checked");
        pl.pcp[c] -= 1;
        pl.lru_batch[c] += 1;
        if pl.lru_batch[c] >= LRU_BATCH {
            cycles += self.lru_batch_drain(cpu, offset + cycles);
        }
        cycles
    }

    /// `lru_add_drain()` on `cpu` (or a full batch): its folios onto the LRU in one
    /// acquisition; those already unmapped are then released in a second one and freed.
    fn lru_batch_drain(&mut self, cpu: CpuId, offset: u64) -> u64 {
        let c = usize::from(cpu.0);
        let Some(pl) = self.page_locks.as_deref_mut() else { return 0 };
        let (n, dead) = (pl.lru_batch[c], pl.lru_dead[c]);
        pl.lru_batch[c] = 0;
        pl.lru_dead[c] = 0;
        if n == 0 {
            return 0;
        }
        let (lock, folio) = (pl.lru_lock, pl.lru_folio);
        let lines = self.lru_list_add(cpu, n);
        let hold = lock + u64::from(n) * folio + lines;
        let mut cycles = self.lock_section(cpu, LockId::Lru, offset, hold);
        if dead > 0 {
            let hold = lock + u64::from(dead) * folio + self.lru_list_del(cpu, dead);
            cycles += self.lock_section(cpu, LockId::Lru, offset + cycles, hold);
            cycles += self.pcp_free(cpu, dead, offset + cycles);
        }
        cycles
    }

    /// `n` pages back on `cpu`'s pcp list (`free_unref_folios()`); above `high`, the excess
    /// and a batch go back to the buddy lists under the zone lock.
    fn pcp_free(&mut self, cpu: CpuId, n: u32, offset: u64) -> u64 {
        let c = usize::from(cpu.0);
        let Some(pl) = self.page_locks.as_deref_mut() else { return 0 };
        pl.pcp[c] += n;
        if pl.pcp[c] <= PCP_HIGH {
            return 0;
        }
        let give = pl.pcp[c] - PCP_HIGH + PCP_BATCH;
        pl.pcp[c] -= give;
        let hold = pl.zone_lock + u64::from(give) * pl.zone_page;
        self.lock_section(cpu, LockId::Zone, offset, hold)
    }

    /// `tlb_finish_mmu()`'s freeing of `freed` pages on `cpu` after the flush
    /// (`free_pages_and_swap_cache()`), with the pre-6.15 `lru_add_drain()` when the policy
    /// has it: the cycles its locks take.
    pub(super) fn zap_free_locks(&mut self, cpu: CpuId, freed: u64) -> u64 {
        let c = usize::from(cpu.0);
        if self.page_locks.is_none() || freed == 0 {
            return 0;
        }
        let freed = u32::try_from(freed).unwrap_or(u32::MAX);
        let mut cycles = 0;
        if self.policy.lru_drain_on_zap {
            cycles += self.lru_batch_drain(cpu, 0);
        }
        let pl = self.page_locks.as_deref_mut().expect("checked");
        // Folios still in this CPU's batch hold a reference: unmapping them frees nothing yet.
        let in_batch = freed.min(pl.lru_batch[c] - pl.lru_dead[c]);
        pl.lru_dead[c] += in_batch;
        let on_lru = freed - in_batch;
        if on_lru > 0 {
            let hold = pl.lru_lock + u64::from(on_lru) * pl.lru_folio;
            let hold = hold + self.lru_list_del(cpu, on_lru);
            cycles += self.lock_section(cpu, LockId::Lru, cycles, hold);
            cycles += self.pcp_free(cpu, on_lru, cycles);
        }
        cycles
    }
}
