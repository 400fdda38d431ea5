//! Address spaces: `struct mm_struct` reduced to what TLB flushing reads and writes
//! (`mm->context`, `mm_cpumask`) and a page-granular map of its regions.

use crate::cpumask::CpuMask;
use crate::ids::{Asid, TaskId, TlbGen};
use serde::Serialize;
use std::collections::VecDeque;
use tlblab_types::Vpn;

/// A region of an mm (`struct vm_area_struct`), by index in its mm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct VmaId(pub u32);

/// The state of one page's PTE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Pte {
    /// Not present: the next access faults.
    None,
    /// Maps the shared zero page, read-only: a write faults and gets a page of its own.
    ZeroPage,
    /// A private page, writable.
    Present,
    /// A page shared with another mm after fork, read-only until a write copies it.
    Cow,
    /// A page-cache page of a shared file mapping, read-only (the model's file mappings are
    /// `PROT_READ`); unmapping it frees nothing, as the page cache keeps the page.
    File,
}

/// An anonymous private region.
#[derive(Clone, Debug, Serialize)]
pub struct Vma {
    /// First page.
    pub start: Vpn,
    /// PTE of each page.
    pub ptes: Vec<Pte>,
    /// A page was ever mapped, so page tables were allocated for the region.
    pub touched: bool,
    /// The region the kernel merged this mapping into (`vma_merge_new_range()`): the two are
    /// one VMA in the kernel, so unmapping this one alone splits it (`__split_vma()`).
    pub merged_into: Option<VmaId>,
    /// `vma->anon_vma` is set: a write fault allocated a page here (`__anon_vma_prepare()`),
    /// or the region was merged into one that had it.
    pub anon_vma: bool,
    /// A shared, read-only mapping of a file whose pages are in the page cache
    /// (`mmap(PROT_READ, MAP_SHARED)` of a cached file): a read fault maps the cached pages
    /// around it ([`Pte::File`]).
    pub file: bool,
}

impl Vma {
    /// Pages in the region.
    pub fn pages(&self) -> u64 {
        self.ptes.len() as u64
    }

    /// The page number of page `i` of the region.
    pub fn vpn(&self, i: u64) -> Vpn {
        Vpn(self.start.0 + i)
    }
}

/// Where `mmap` places regions: top-down from here, like the kernel's default layout
/// (the page number of 0x7f00_0000_0000).
const MMAP_BASE: u64 = 0x7f00_0000_0000 >> 12;

/// Where a program's image (its code and data, [`Mm::map_image`]) goes: the page number of
/// 0x5555_5555_4000, where Linux loads a position-independent executable, far below the mmap
/// area, so that it shares no page table with the regions a program maps.
const IMAGE_BASE: u64 = 0x5555_5555_4000 >> 12;

/// Gap left between regions, in pages, so that regions do not share page tables by accident
/// of packing (one page, as a guard page would).
const GUARD_PAGES: u64 = 1;

/// `struct mm_struct`: `mm->context` and the regions.
#[derive(Clone, Debug, Serialize)]
pub struct Mm {
    /// `context.ctx_id`: never reused, so ASID slots match on it rather than on pointers.
    pub ctx_id: u64,
    /// `context.tlb_gen`: bumped by every flush request on the mm.
    pub tlb_gen: TlbGen,
    /// `mm_cpumask(mm)`: CPUs that may hold TLB entries of the mm.
    pub cpumask: CpuMask,
    /// `context.next_trim_cpumask`, in jiffies.
    pub next_trim_cpumask: u64,
    /// `context.global_asid` (INVLPGB), `None` for 0.
    pub global_asid: Option<Asid>,
    /// `context.asid_transition`.
    pub asid_transition: bool,
    /// Live tasks using the mm as their own (`mm_users`).
    pub users: u32,
    /// Regions, by [`VmaId`]; `None` once unmapped.
    pub vmas: Vec<Option<Vma>>,
    /// Where the next `mmap` ends (top-down placement).
    pub mmap_next: u64,
    /// `mmap_lock`.
    pub mmap_lock: MmapLock,
    /// Where the next image region starts (bottom-up from the executable's base).
    pub image_next: u64,
    /// Who holds the cache line of `cpumask` (its writes and reads cost transfers).
    pub cpumask_line: crate::cpumask::CpumaskLine,
}

/// `mm->mmap_lock`, a read-write semaphore (`kernel/locking/rwsem.c`): its holders, the tasks
/// asleep on it in arrival order, and the CPU that last wrote its cache line.
#[derive(Clone, Debug, Default, Serialize)]
pub struct MmapLock {
    /// The task holding it for write.
    pub writer: Option<TaskId>,
    /// The tasks holding it for read.
    pub readers: Vec<TaskId>,
    /// Sleeping tasks, first come first served.
    pub waiters: VecDeque<Waiter>,
    /// `RWSEM_FLAG_HANDOFF` (5.3+): the lock is reserved for the first waiter, a writer.
    pub handoff: bool,
    /// The CPU whose cache holds the semaphore's line (its last atomic).
    pub line: Option<u16>,
}

/// A task queued on [`MmapLock`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Waiter {
    /// The task.
    pub task: TaskId,
    /// Whether it wants to write.
    pub write: bool,
    /// When it queued, cycles (the handoff timeout counts from it).
    pub since: u64,
    /// A writer woken by a release but not handed the lock: it tries again when it runs.
    pub woken: bool,
}

/// Which rwsem rules the model follows (`kernel/mmap_lock.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RwsemRules {
    /// Lock stealing (mechanism `rwsem-steal`): a free lock goes to whoever takes it first, a
    /// running writer past sleeping waiters, and a release only wakes a writer, which tries
    /// again when it runs; off, a release hands the lock to the head of the queue.
    pub steal: bool,
    /// 5.3+: a reader takes a lock no writer holds past sleeping waiters (reader optimistic
    /// lock stealing, 5.12; before it, reader spinning); before 5.3 a reader queues behind any
    /// waiter.
    pub reader_steal: bool,
    /// 5.3+: the first waiter, a writer woken and beaten for `RWSEM_WAIT_TIMEOUT`, sets the
    /// handoff flag, which stops the stealing and gives it the lock at the next release.
    pub handoff: bool,
}

impl MmapLock {
    /// Whether `down_read()` / `down_write()` by a task not queued would take it now. Without
    /// stealing a task does not pass a sleeping waiter (as `RWSEM_FLAG_WAITERS` makes the fast
    /// paths fail); with it, a writer takes a lock nobody holds, and a reader (5.3+) one no
    /// writer holds, unless a handoff is pending.
    pub fn can_take(&self, write: bool, rules: RwsemRules) -> bool {
        let no_writer = self.writer.is_none();
        if !rules.steal {
            return no_writer && self.waiters.is_empty() && (!write || self.readers.is_empty());
        }
        if self.handoff {
            return false;
        }
        if write {
            no_writer && self.readers.is_empty()
        } else {
            no_writer && (rules.reader_steal || self.waiters.is_empty())
        }
    }

    /// Takes it (the caller checked [`MmapLock::can_take`] or is handing it over).
    pub fn take(&mut self, t: TaskId, write: bool) {
        if write {
            self.writer = Some(t);
        } else {
            self.readers.push(t);
        }
    }

    /// Releases `t`'s hold.
    pub fn release(&mut self, t: TaskId, write: bool) {
        if write {
            debug_assert_eq!(self.writer, Some(t));
            self.writer = None;
        } else if let Some(i) = self.readers.iter().position(|&r| r == t) {
            self.readers.swap_remove(i);
        }
    }

    /// `rwsem_wake()` once the lock may be free (`rwsem_mark_wake()`): to every reader at the
    /// head of the queue the lock is granted if no writer holds it; a writer at the head is
    /// granted it when nobody holds it without stealing, or with a handoff pending, and with
    /// stealing only woken (once) to try again. Returns the tasks to wake. NOTE: since 5.x
    /// `rwsem_mark_wake()` also wakes readers queued behind a writer; the model wakes the
    /// head's readers only.
    pub fn hand_over(&mut self, rules: RwsemRules) -> Vec<TaskId> {
        let mut woken = Vec::new();
        let free = self.writer.is_none() && self.readers.is_empty();
        match self.waiters.front().copied() {
            Some(w) if w.write && free && (!rules.steal || self.handoff) => {
                self.waiters.pop_front();
                self.handoff = false;
                self.writer = Some(w.task);
                woken.push(w.task);
            }
            Some(w) if w.write && free && !w.woken => {
                self.waiters[0].woken = true;
                woken.push(w.task);
            }
            Some(w) if !w.write && self.writer.is_none() && !self.handoff => {
                while let Some(&r) = self.waiters.front().filter(|r| !r.write) {
                    self.waiters.pop_front();
                    self.readers.push(r.task);
                    woken.push(r.task);
                }
            }
            _ => {}
        }
        woken
    }

    /// Whether `t` is a woken writer of the queue (it tries again: [`MmapLock::retry`]).
    pub fn is_woken_writer(&self, t: TaskId) -> bool {
        self.waiters.iter().any(|w| w.task == t && w.woken)
    }

    /// A woken writer `t` tries again at `now` (`rwsem_down_write_slowpath()`'s loop): takes
    /// the lock if nobody holds it (and no handoff is pending for another), and returns true;
    /// else goes back to sleep, first setting the handoff flag (5.3+) if it is the first
    /// waiter and has waited `timeout` cycles.
    pub fn retry(&mut self, t: TaskId, now: u64, timeout: u64, rules: RwsemRules) -> bool {
        let Some(i) = self.waiters.iter().position(|w| w.task == t) else { return false };
        let free = self.writer.is_none() && self.readers.is_empty();
        if free && (!self.handoff || i == 0) {
            self.waiters.remove(i);
            self.handoff = false;
            self.writer = Some(t);
            return true;
        }
        self.waiters[i].woken = false;
        if rules.handoff && i == 0 && now.saturating_sub(self.waiters[0].since) >= timeout {
            self.handoff = true;
        }
        false
    }
}

impl Mm {
    /// A fresh mm (`init_new_context()`): `tlb_gen` 0, next trim a second from `jiffies`.
    pub fn new(ctx_id: u64, nr_cpus: usize, jiffies: u64, hz: u64) -> Mm {
        Mm {
            ctx_id,
            tlb_gen: 0,
            cpumask: CpuMask::new(nr_cpus),
            next_trim_cpumask: jiffies + hz,
            global_asid: None,
            asid_transition: false,
            users: 0,
            vmas: Vec::new(),
            mmap_next: MMAP_BASE,
            mmap_lock: MmapLock::default(),
            image_next: IMAGE_BASE,
            cpumask_line: Default::default(),
        }
    }

    /// `inc_mm_tlb_gen()`: the new generation.
    pub fn inc_tlb_gen(&mut self) -> TlbGen {
        self.tlb_gen += 1;
        self.tlb_gen
    }

    /// Maps `pages` new pages, not present; returns the region.
    pub fn mmap(&mut self, pages: u64) -> VmaId {
        self.mmap_next -= pages + GUARD_PAGES;
        self.vmas.push(Some(Vma {
            start: Vpn(self.mmap_next),
            ptes: vec![Pte::None; pages as usize],
            touched: false,
            merged_into: None,
            anon_vma: false,
            file: false,
        }));
        VmaId(self.vmas.len() as u32 - 1)
    }

    /// Maps `pages` pages of a cached file, shared and read-only, not present yet; returns the
    /// region (placed as [`Mm::mmap`] places one).
    pub fn mmap_file(&mut self, pages: u64) -> VmaId {
        let vma = self.mmap(pages);
        if let Some(v) = self.vma_mut(vma) {
            v.file = true;
        }
        vma
    }

    /// A region of the program image, loaded with every PTE `pte` (as exec's loading and the
    /// loop's warm-up leave it): no `mmap` and no fault. Placed bottom-up from the executable's
    /// base with a guard page, away from the mmap area.
    pub fn map_image(&mut self, pages: u64, pte: Pte) -> VmaId {
        let start = self.image_next;
        self.image_next += pages + GUARD_PAGES;
        self.vmas.push(Some(Vma {
            start: Vpn(start),
            ptes: vec![pte; pages as usize],
            touched: true,
            merged_into: None,
            anon_vma: pte == Pte::Present,
            file: false,
        }));
        VmaId(self.vmas.len() as u32 - 1)
    }

    /// Maps `pages` new pages directly below region `of`, as `mmap(MAP_FIXED_NOREPLACE)` at
    /// that address does; the kernel merges the two anonymous private VMAs (the model keeps two
    /// regions and records the merge in [`Vma::merged_into`]). `None` if `of` is not mapped or
    /// the pages below it are taken (the kernel's `EEXIST`).
    pub fn mmap_beside(&mut self, of: VmaId, pages: u64) -> Option<VmaId> {
        let end = self.vma(of)?.start.0;
        let start = end.checked_sub(pages)?;
        let taken =
            self.vmas.iter().flatten().any(|v| v.start.0 < end && v.start.0 + v.pages() > start);
        if taken {
            return None;
        }
        self.mmap_next = self.mmap_next.min(start);
        let anon_vma = self.vma(of).is_some_and(|v| v.anon_vma);
        self.vmas.push(Some(Vma {
            start: Vpn(start),
            ptes: vec![Pte::None; pages as usize],
            touched: false,
            merged_into: Some(of),
            anon_vma,
            file: false,
        }));
        Some(VmaId(self.vmas.len() as u32 - 1))
    }

    /// Whether unmapping the whole region splits a VMA of the kernel's: the region was merged
    /// into one that is still mapped.
    pub fn unmap_splits(&self, id: VmaId) -> bool {
        self.vma(id).and_then(|v| v.merged_into).is_some_and(|of| self.vma(of).is_some())
    }

    /// The region, if mapped.
    pub fn vma(&self, id: VmaId) -> Option<&Vma> {
        self.vmas.get(id.0 as usize).and_then(Option::as_ref)
    }

    /// The region, if mapped.
    pub fn vma_mut(&mut self, id: VmaId) -> Option<&mut Vma> {
        self.vmas.get_mut(id.0 as usize).and_then(Option::as_mut)
    }

    /// The 2 MiB blocks (their first pages) whose page-table page unmapping `[first,
    /// first+pages)` of the region frees, as `free_pgtables()` does: a page table maps 2 MiB,
    /// and it is freed when no page that stays mapped, in this region or another, lies in its
    /// 2 MiB.
    pub fn freed_table_blocks(&self, id: VmaId, first: u64, pages: u64) -> Vec<u64> {
        let Some(vma) = self.vma(id).filter(|_| pages > 0) else { return Vec::new() };
        let lo = vma.start.0 + first;
        let hi = lo + pages;
        let mut staying: Vec<(u64, u64)> = vec![(vma.start.0, lo), (hi, vma.start.0 + vma.pages())];
        for (i, v) in self.vmas.iter().enumerate() {
            if let Some(v) = v.as_ref().filter(|_| i != id.0 as usize) {
                staying.push((v.start.0, v.start.0 + v.pages()));
            }
        }
        (lo >> 9..=(hi - 1) >> 9)
            .map(|pt| pt << 9)
            .filter(|&a| !staying.iter().any(|&(s, e)| s < e && s < a + 512 && e > a))
            .collect()
    }

    /// Whether unmapping `[first, first+pages)` of the region frees page-table pages.
    pub fn frees_page_tables(&self, id: VmaId, first: u64, pages: u64) -> bool {
        !self.freed_table_blocks(id, first, pages).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEAL_5_3: RwsemRules = RwsemRules { steal: true, reader_steal: true, handoff: true };
    const STEAL_4_X: RwsemRules = RwsemRules { steal: true, reader_steal: false, handoff: false };
    const CONVOY: RwsemRules = RwsemRules { steal: false, reader_steal: true, handoff: true };

    /// A writer `a` holds the lock and writer `b` sleeps on it since cycle 0.
    fn held_with_a_waiter() -> MmapLock {
        let mut l = MmapLock::default();
        l.take(TaskId(0), true);
        l.waiters.push_back(Waiter { task: TaskId(1), write: true, since: 0, woken: false });
        l
    }

    /// rwsem_down_write_slowpath() / rwsem_mark_wake(): a release only wakes the writer at the
    /// head; a running writer takes the free lock first (rwsem_try_write_lock_unqueued()), and
    /// the woken one, beaten, sleeps again, to be woken by the next release.
    #[test]
    fn a_running_writer_steals_the_lock_from_a_woken_one() {
        let mut l = held_with_a_waiter();
        l.release(TaskId(0), true);
        assert_eq!(l.hand_over(STEAL_5_3), [TaskId(1)]);
        assert_eq!(l.writer, None, "woken, not granted");
        assert!(l.is_woken_writer(TaskId(1)));
        // Woken once only.
        assert!(l.hand_over(STEAL_5_3).is_empty());
        assert!(l.can_take(true, STEAL_5_3));
        l.take(TaskId(2), true);
        assert!(!l.retry(TaskId(1), 100, 1_000, STEAL_5_3));
        assert!(!l.is_woken_writer(TaskId(1)) && !l.handoff);
        l.release(TaskId(2), true);
        assert_eq!(l.hand_over(STEAL_5_3), [TaskId(1)]);
        assert!(l.retry(TaskId(1), 200, 1_000, STEAL_5_3));
        assert_eq!((l.writer, l.waiters.len()), (Some(TaskId(1)), 0));
    }

    /// 5.3+: the first waiter, beaten after RWSEM_WAIT_TIMEOUT, sets RWSEM_FLAG_HANDOFF: nobody
    /// steals any more and the next release gives it the lock. 4.x has no handoff.
    #[test]
    fn a_writer_beaten_past_the_timeout_reserves_the_lock() {
        for (rules, handoff) in [(STEAL_5_3, true), (STEAL_4_X, false)] {
            let mut l = held_with_a_waiter();
            l.release(TaskId(0), true);
            l.hand_over(rules);
            l.take(TaskId(2), true);
            assert!(!l.retry(TaskId(1), 1_000, 1_000, rules));
            assert_eq!(l.handoff, handoff);
            l.release(TaskId(2), true);
            assert_eq!(l.can_take(true, rules), !handoff);
            assert_eq!(l.can_take(false, rules), !handoff && rules.reader_steal);
            assert_eq!(l.hand_over(rules), [TaskId(1)]);
            assert_eq!(l.writer.is_some(), handoff, "granted only with a handoff");
        }
    }

    /// Readers: 5.3+ one takes a lock no writer holds past the sleeping writer; before, it
    /// queues behind any waiter. Readers at the head are granted the lock by the release.
    #[test]
    fn readers_pass_a_waiting_writer_from_5_3_only() {
        let mut l = held_with_a_waiter();
        l.release(TaskId(0), true);
        l.hand_over(STEAL_5_3);
        assert!(l.can_take(false, STEAL_5_3));
        assert!(!l.can_take(false, STEAL_4_X));
        let mut r = MmapLock::default();
        r.take(TaskId(0), true);
        for t in [1, 2] {
            r.waiters.push_back(Waiter { task: TaskId(t), write: false, since: 0, woken: false });
        }
        r.release(TaskId(0), true);
        assert_eq!(r.hand_over(STEAL_5_3), [TaskId(1), TaskId(2)]);
        assert_eq!(r.readers, [TaskId(1), TaskId(2)]);
    }

    /// Without the mechanism: nobody passes a waiter and a release hands the lock over, a
    /// writer included (the convoy the model had before).
    #[test]
    fn without_stealing_the_release_hands_the_lock_to_the_head() {
        let mut l = held_with_a_waiter();
        l.release(TaskId(0), true);
        assert!(!l.can_take(true, CONVOY));
        assert_eq!(l.hand_over(CONVOY), [TaskId(1)]);
        assert_eq!(l.writer, Some(TaskId(1)));
    }

    #[test]
    fn mmap_places_regions_top_down_with_a_gap() {
        let mut mm = Mm::new(2, 4, 0, 250);
        let a = mm.mmap(4);
        let b = mm.mmap(2);
        let (a, b) = (mm.vma(a).unwrap(), mm.vma(b).unwrap());
        assert_eq!(a.start.0 + 4 + GUARD_PAGES, MMAP_BASE);
        assert_eq!(b.start.0 + 2 + GUARD_PAGES, a.start.0);
    }

    #[test]
    fn a_mapping_beside_a_region_merges_and_its_unmap_splits() {
        let mut mm = Mm::new(2, 4, 0, 250);
        let anchor = mm.mmap(1);
        let beside = mm.mmap_beside(anchor, 3).unwrap();
        let (a, b) = (mm.vma(anchor).unwrap(), mm.vma(beside).unwrap());
        assert_eq!(b.start.0 + 3, a.start.0, "adjacent, no guard page");
        assert!(mm.unmap_splits(beside));
        assert!(!mm.unmap_splits(anchor));
        // It shares the anchor's page table, as the live storm's region does.
        assert!(!mm.frees_page_tables(beside, 0, 3));
        // The pages below are taken now: MAP_FIXED_NOREPLACE fails.
        assert!(mm.mmap_beside(anchor, 1).is_none());
        // A plain mmap after it keeps its guard page.
        let next = mm.mmap(1);
        assert_eq!(
            mm.vma(next).unwrap().start.0 + 1 + GUARD_PAGES,
            mm.vma(beside).unwrap().start.0
        );
        // Once the anchor is gone, the region is a VMA of its own.
        mm.vmas[anchor.0 as usize] = None;
        assert!(!mm.unmap_splits(beside));
    }

    /// Without lock stealing, rwsem order: a sleeping writer holds back later readers; a
    /// release hands the lock to the head of the queue: the writer alone, then the readers at
    /// the head together.
    #[test]
    fn mmap_lock_hands_over_in_arrival_order() {
        let (a, b, c, d) = (TaskId(1), TaskId(2), TaskId(3), TaskId(4));
        let waiter = |task, write| Waiter { task, write, since: 0, woken: false };
        let mut l = MmapLock::default();
        assert!(l.can_take(false, CONVOY));
        l.take(a, false);
        assert!(l.can_take(false, CONVOY) && !l.can_take(true, CONVOY), "readers share");
        l.waiters.push_back(waiter(b, true));
        assert!(!l.can_take(false, CONVOY), "a reader queues behind a sleeping writer");
        l.waiters.push_back(waiter(c, false));
        l.waiters.push_back(waiter(d, false));
        assert!(l.hand_over(CONVOY).is_empty(), "a reader still holds it");
        l.release(a, false);
        assert_eq!(l.hand_over(CONVOY), vec![b]);
        assert_eq!(l.writer, Some(b));
        assert!(l.hand_over(CONVOY).is_empty(), "the writer holds it");
        l.release(b, true);
        assert_eq!(l.hand_over(CONVOY), vec![c, d]);
        assert_eq!(l.readers, vec![c, d]);
        assert!(l.waiters.is_empty());
    }

    #[test]
    fn small_unmaps_next_to_other_regions_keep_their_page_table() {
        let mut mm = Mm::new(2, 4, 0, 250);
        let big = mm.mmap(2048);
        let small = mm.mmap(1);
        let _neighbour = mm.mmap(1);
        // The small region shares its page table with its neighbour.
        assert!(!mm.frees_page_tables(small, 0, 1));
        // A 2048-page region spans whole page tables of its own.
        assert!(mm.frees_page_tables(big, 0, 2048));
        // One page out of the middle of the big region frees nothing.
        assert!(!mm.frees_page_tables(big, 1000, 1));
    }
}
