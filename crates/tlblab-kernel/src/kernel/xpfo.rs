//! XPFO (eXclusive Page Frame Ownership; Khalid Aziz's RFC v9, 2019-04, never merged): a page
//! handed to user space leaves the kernel's direct map, so a kernel exploit cannot reach user
//! data through it (ret2dir). Removing the mapping needs a kernel TLB flush:
//! - `xpfo-sync` (v9 01–11/13): `flush_tlb_kernel_range()` of the page at once, on every online
//!   CPU (`on_each_cpu(do_kernel_range_flush)`: function-call IPIs to every other CPU, idle or
//!   not, and a wait for all of them);
//! - `xpfo-deferred` (v9 12/13, `xpfo_flush_tlb_kernel_range()`): the local CPU flushes the
//!   page at once; every other CPU is marked in `pending_xpfo_flush` and does
//!   `__flush_tlb_all()` at its next `switch_mm_irqs_off()`.
//!
//! Mapping a page back needs no flush (adding a translation never does). The tracker measures
//! the exposure window of each unmap: how long some CPU could still use the stale kernel
//! translation.
//!
//! The events (mechanism `xpfo-events`; without it only the unmap at allocation is modelled).
//! v9 03/13 `xpfo_alloc_pages()` unmaps every `GFP_HIGHUSER` page at allocation and flushes
//! (NOTE: its `will_map` test never spares one, since `xpfo_free_pages()` cleared
//! `PG_xpfo_user`, so `TestSetPageXpfoUser()` always finds it clear). The kernel then reaches a
//! user page only through `kmap()`/`kmap_atomic()`, which v9 routes to `xpfo_kmap()` (map it
//! back, no flush) and `kunmap()`/`kunmap_atomic()` to `xpfo_kunmap()` (unmap it again and
//! `xpfo_flush_kernel_tlb()`: the same flush as at allocation, sync or deferred). So:
//! - an anonymous write fault (`alloc_zeroed_user_highpage_movable()`: x86 asks for
//!   `__GFP_ZERO`, and `prep_new_page()` runs `clear_highpage()` after `xpfo_alloc_pages()`):
//!   one unmap at allocation, one kmap/kunmap around the zeroing: two flushes;
//! - a write to the zero page: the same (`wp_page_copy()` of the zero pfn allocates zeroed);
//! - a copy-on-write copy (`wp_page_copy()` → `copy_user_highpage()`): one unmap at
//!   allocation, then `kmap_atomic()` of the source and of the copy, and their two
//!   `kunmap_atomic()`s: three flushes;
//! - exec ([`EXEC_EVENTS`]): the argument page, `copy_strings()`, `kernel_read()`s of the ELF
//!   headers through the page cache (page-cache pages are `GFP_HIGHUSER_MOVABLE`, so user pages
//!   to XPFO), and `padzero()`'s copy-on-write faults;
//! - any other copy to or from a user-owned page (pipe buffers, `read()`/`write()` of the page
//!   cache): [`Kernel::xpfo_kmap_user_page`], which such a path must call once per page;
//! - a freed page (`xpfo_free_pages()`): mapped back, no flush.
//!
//! Each event's own cost: the locked operations on `struct page` (v9 keeps `xpfo_lock` and
//! `xpfo_mapcount` per page, so they are uncontended here), `set_kpte()`'s and
//! `xpfo_flush_kernel_tlb()`'s `lookup_address()`, and under `xpfo-deferred` the shared
//! `pending_xpfo_flush` cache line, written by every unmap (`cpumask_or()`) and by every CPU's
//! every `switch_mm_irqs_off()` (`cpumask_test_and_clear_cpu()`, a locked bit operation that
//! takes the line even when the bit is clear: NOTE Peter Zijlstra's review of 12/13, "an
//! unconditional RmW", asked for a test first).
//!
//! Not modelled: the split of a 2 MiB / 1 GiB direct-map page the first time a page in it
//! is unmapped (`set_kpte()` → `__split_large_page()`, whose `flush_tlb_all()` interrupts every
//! CPU): a transient of a machine's first hours, long over mid-build (the direct map is taken
//! as split to 4 KiB, mechanism `xpfo-direct-map-4k`); v9 13/13 (page-allocator batching, not
//! in the compared kernels); `cpumask_or()` being a plain read-modify-write that can race with
//! another CPU's (events here are instants).

use super::kflush::KernelFlush;
use super::{FlushPhase, Frame, Kernel};
use crate::exposure::{ExposureLog, OperationExposure};
use crate::ids::TaskId;
use crate::kernel::flush::DIRECT_MAP_PAGE;
use crate::mechanisms::Mechanism;
use crate::mm::Pte;
use crate::observer::Observer;
use crate::policy::{Pti, Xpfo};
use crate::stats::{XpfoEventCounts, XpfoReport};
use tlblab_types::{Access, AccessKind, CpuId, Cycles, Page, PageSize, Vpn};

/// An uncontended locked read-modify-write on a line in the local cache (`LOCK CMPXCHG`,
/// `LOCK XADD`, `LOCK BTS`/`BTR`): ≈ 18–19 cycles measured throughput (uops.info, `LOCK INC
/// M32` and `LOCK CMPXCHG M64, R64`, Intel cores). UNVERIFIED for Ivy Bridge and Skylake-SP
/// in particular.
pub(crate) const LOCKED_RMW_CYCLES: u64 = 18;

/// `lookup_address()`: the loads of a software walk of the kernel page table (pgd, pud, pmd,
/// pte with 4-level paging; p4d folded). NOTE: each charged as an L1 hit (`l1d_load`); the pte
/// line of a page not touched lately may come from further away.
const LOOKUP_ADDRESS_LOADS: u64 = 4;

/// Locked operations of `xpfo_kmap()` (v9 03/13): `spin_lock_irqsave()`, `atomic_inc_return()`
/// of the mapcount, `TestClearPageXpfoUnmapped()`.
const KMAP_LOCKED: u64 = 3;
/// Locked operations of `xpfo_kunmap()` (v9 11/13): `atomic_dec_return()`, then under the lock
/// `spin_lock_irqsave()` and `SetPageXpfoUnmapped()` (the flush runs after the unlock).
const KUNMAP_LOCKED: u64 = 3;
/// Locked operations of `xpfo_alloc_pages()` per page: `TestSetPageXpfoUser()`,
/// `SetPageXpfoUnmapped()`.
const ALLOC_LOCKED: u64 = 2;
/// Locked operations of `xpfo_free_pages()` per page: `TestClearPageXpfoUser()`,
/// `ClearPageXpfoUnmapped()`.
const FREE_LOCKED: u64 = 2;

/// Pseudo page frames handed out in turn (8 GiB of 4 KiB pages): each page XPFO handles gets
/// its own direct-map address. NOTE: the buddy allocator's reuse of recently freed pages is
/// not modelled.
const FRAMES: u64 = 1 << 21;

/// XPFO events of one `execve()` of a dynamically linked ELF binary (fs/exec.c,
/// fs/binfmt_elf.c, 4.20), each counted once:
/// - the argument page: `get_arg_page()` faults it in (allocated zeroed: an unmap and a
///   kmap pair), then `copy_strings_kernel()` of the file name and `copy_strings()` of the
///   environment and of the arguments each `kmap()` it and `kunmap()` it at their end (NOTE:
///   assumes they fit in one page);
/// - five `kernel_read()`s through the page cache, each a `kmap_atomic()` pair of a page-cache
///   page: `prepare_binprm()`'s header, `load_elf_phdrs()`, the `PT_INTERP` name, the
///   interpreter's header and its `load_elf_phdrs()`;
/// - `padzero()` of the binary's and the interpreter's last data page: a write fault on a
///   private file page (`do_cow_fault()`: an allocation and a `copy_user_highpage()`).
pub(crate) const EXEC_EVENTS: ExecEvents =
    ExecEvents { arg_page_copies: 3, reads: 5, cow_copies: 2 };

/// See [`EXEC_EVENTS`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct ExecEvents {
    /// `copy_strings()` kmap pairs of the argument page.
    pub arg_page_copies: u32,
    /// `kernel_read()`s of page-cache pages.
    pub reads: u32,
    /// Copy-on-write faults.
    pub cow_copies: u32,
}

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
    /// Mechanism `xpfo-events`: what happened since the measurement began.
    pub(super) events: XpfoEventCounts,
    /// The CPU that wrote `pending_xpfo_flush` last, if any has.
    mask_writer: Option<CpuId>,
    /// The next pseudo page frame.
    next_frame: u64,
    /// Pages freed by zaps whose `xpfo_free_pages()` is not charged yet.
    pub(super) unfreed: u64,
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
            events: XpfoEventCounts::default(),
            mask_writer: None,
            next_frame: 0,
            unfreed: 0,
        }
    }

    /// Counts from now on: earlier windows (still tracked, as their flushes may come) and
    /// counts are left out of the report.
    pub(super) fn start_measuring(&mut self) {
        self.measured_from = self.windows.len();
        self.full_flush_count = 0;
        self.ipis = 0;
        self.events = XpfoEventCounts::default();
    }

    /// A new page's direct-map address.
    fn new_frame(&mut self) -> Vpn {
        let vpn = Vpn(DIRECT_MAP_PAGE.0 + self.next_frame);
        self.next_frame = (self.next_frame + 1) % FRAMES;
        vpn
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
    /// Whether mechanism `xpfo-events` acts: an XPFO policy with it on.
    pub(super) fn xpfo_events(&self) -> bool {
        self.policy.xpfo != Xpfo::Off && self.config.mechanisms.is_on(Mechanism::XpfoEvents)
    }

    /// The report: the tracker's, with the event counts when `xpfo-events` acts.
    pub(super) fn xpfo_report_now(&self) -> XpfoReport {
        let mut r = self.xpfo.report(self.cpus.len());
        r.events = self.xpfo_events().then_some(self.xpfo.events);
        r
    }

    /// `lookup_address()` of a direct-map page.
    fn lookup_address_cycles(&self) -> u64 {
        LOOKUP_ADDRESS_LOADS * self.costs.l1d_load.cycles
    }

    /// The page at `vpn` leaves the direct map (`set_kpte(…, 0)` done): its flush,
    /// `xpfo_flush_kernel_tlb()`. Returns the local cycles; a synchronous flush is pushed as a
    /// frame of task `t`.
    fn xpfo_unmap(&mut self, cpu: CpuId, t: TaskId, vpn: Vpn) -> u64 {
        let now = self.queue.now();
        match self.policy.xpfo {
            Xpfo::Off => 0,
            Xpfo::Sync => {
                let req = KernelFlush::range(vpn, 1, true);
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
                let local = self.flush_tlb_one_kernel(cpu, vpn);
                // cpumask_or(&pending_xpfo_flush, …): a plain read and write of the shared line.
                local + if self.xpfo_events() { self.xpfo_mask_write(cpu) } else { 0 }
            }
        }
    }

    /// `cpu` writes `pending_xpfo_flush`: a cache-line transfer when another CPU wrote it last.
    fn xpfo_mask_write(&mut self, cpu: CpuId) -> u64 {
        let moved = self.xpfo.mask_writer.is_some_and(|w| w != cpu);
        self.xpfo.mask_writer = Some(cpu);
        if moved {
            self.xpfo.events.mask_transfers += 1;
            self.costs.cache_line_transfer.cycles
        } else {
            0
        }
    }

    /// A page was just handed to user space: take it out of the direct map
    /// (`xpfo_alloc_pages()`). Returns the local cycles and the page's direct-map address; a
    /// synchronous flush is pushed as a frame of task `t`.
    pub(crate) fn xpfo_alloc(&mut self, cpu: CpuId, t: TaskId) -> (u64, Vpn) {
        if !self.xpfo_events() {
            return (self.xpfo_unmap(cpu, t, DIRECT_MAP_PAGE), DIRECT_MAP_PAGE);
        }
        let vpn = self.xpfo.new_frame();
        self.xpfo.events.alloc_unmaps += 1;
        // TestSetPageXpfoUser(), SetPageXpfoUnmapped(), set_kpte(), and the lookup in
        // xpfo_flush_kernel_tlb().
        let own = ALLOC_LOCKED * LOCKED_RMW_CYCLES + 2 * self.lookup_address_cycles();
        (own + self.xpfo_unmap(cpu, t, vpn), vpn)
    }

    /// `kmap()` … `kunmap()` of the user page at `vpn` (unmapped from the direct map) around one
    /// reference of kind `kind` to it: `xpfo_kmap()` maps it back, `xpfo_kunmap()` unmaps it
    /// and flushes. Returns the local cycles; a synchronous flush is pushed as a frame of `t`.
    fn xpfo_kmap_pair(&mut self, cpu: CpuId, t: TaskId, vpn: Vpn, kind: AccessKind) -> u64 {
        let lookup = self.lookup_address_cycles();
        // xpfo_kmap(): the lock, the mapcount, the flag, set_kpte(PAGE_KERNEL).
        let mut cycles = KMAP_LOCKED * LOCKED_RMW_CYCLES + lookup;
        self.xpfo.events.kmaps += 1;
        cycles += self.xpfo_direct_map_touch(cpu, vpn, kind);
        // xpfo_kunmap(): the mapcount, the lock, the flag, set_kpte(0), then the flush's lookup.
        cycles += KUNMAP_LOCKED * LOCKED_RMW_CYCLES + 2 * lookup;
        self.xpfo.events.kunmaps += 1;
        cycles + self.xpfo_unmap(cpu, t, vpn)
    }

    /// The kernel's reference to a kmapped page through the direct map (mechanism
    /// `xpfo-direct-map-4k`): a data access at 4 KiB, in the kernel's PCID, global without
    /// PTI. The unmap before it removed the translation from this CPU's TLB, so it walks.
    /// Returns its translation cycles.
    fn xpfo_direct_map_touch(&mut self, cpu: CpuId, vpn: Vpn, kind: AccessKind) -> u64 {
        if !self.config.mechanisms.is_on(Mechanism::XpfoDirectMap4k) {
            return 0;
        }
        let c = usize::from(cpu.0);
        let pcid = self.kern_pcid(self.cpus[c].tlb.loaded_mm_asid);
        let page = Page::new(vpn, PageSize::Size4K).expect("4 KiB pages are always aligned");
        let mut access = Access::new(cpu, pcid, page, kind);
        access.global = self.policy.pti == Pti::Off;
        let cycles = self.hw[c].access(&access, 1, &mut self.hw_stats[c]);
        self.xpfo.events.direct_map_refs += 1;
        self.xpfo.events.direct_map_cycles += cycles;
        cycles
    }

    /// The XPFO events of a fault that replaced `old` by a private page of the task's own.
    /// Returns the local cycles; synchronous flushes are pushed as frames of `t`.
    pub(super) fn xpfo_fault(&mut self, cpu: CpuId, t: TaskId, old: Pte) -> u64 {
        if old == Pte::Cow {
            let (cycles, vpn) = self.xpfo_alloc(cpu, t);
            if !self.xpfo_events() {
                return cycles;
            }
            cycles + self.xpfo_cow_copy(cpu, t, vpn)
        } else {
            self.xpfo_alloc_zeroed(cpu, t).0
        }
    }

    /// A page allocated with `__GFP_ZERO`: `xpfo_alloc_pages()`, then `clear_highpage()`'s
    /// kmap pair. Returns the local cycles and the page's direct-map address.
    fn xpfo_alloc_zeroed(&mut self, cpu: CpuId, t: TaskId) -> (u64, Vpn) {
        let (cycles, vpn) = self.xpfo_alloc(cpu, t);
        if !self.xpfo_events() {
            return (cycles, vpn);
        }
        (cycles + self.xpfo_kmap_pair(cpu, t, vpn, AccessKind::Store), vpn)
    }

    /// `copy_user_highpage()` into the new page at `dst` from a user page: `kmap_atomic()` of
    /// the source, then of the copy; `kunmap_atomic()` of the copy, then of the source. The
    /// four halves are two pairs here (the same calls, in a different order).
    fn xpfo_cow_copy(&mut self, cpu: CpuId, t: TaskId, dst: Vpn) -> u64 {
        let src = self.xpfo.new_frame();
        self.xpfo_kmap_pair(cpu, t, src, AccessKind::Load)
            + self.xpfo_kmap_pair(cpu, t, dst, AccessKind::Store)
    }

    /// `kmap()` … `kunmap()` of a user-owned page by a kernel path that copies to or from it
    /// (a pipe buffer in `pipe_write()` / `pipe_read()`, a page-cache page in `read()` /
    /// `write()`): every such path calls this once per page it copies, by task `t` on `cpu`
    /// (`kind`: `Store` when the kernel writes the page). Returns the local cycles, to be spent
    /// as system time; under `xpfo-sync` the flush is pushed as a frame of `t`, so the caller
    /// must let `t`'s frames run before its system call returns. 0 and nothing pushed unless
    /// an XPFO policy and mechanism `xpfo-events` are on.
    pub(crate) fn xpfo_kmap_user_page(&mut self, cpu: CpuId, t: TaskId, kind: AccessKind) -> u64 {
        if !self.xpfo_events() {
            return 0;
        }
        let vpn = self.xpfo.new_frame();
        self.xpfo_kmap_pair(cpu, t, vpn, kind)
    }

    /// `execve()`'s XPFO events ([`EXEC_EVENTS`]), by task `t` on `cpu`. Returns the local
    /// cycles; synchronous flushes are pushed as frames of `t`.
    pub(super) fn xpfo_exec(&mut self, cpu: CpuId, t: TaskId) -> u64 {
        if !self.xpfo_events() {
            return 0;
        }
        let e = EXEC_EVENTS;
        // The argument page: allocated zeroed, then written by copy_strings().
        let (mut cycles, arg) = self.xpfo_alloc_zeroed(cpu, t);
        for _ in 0..e.arg_page_copies {
            cycles += self.xpfo_kmap_pair(cpu, t, arg, AccessKind::Store);
        }
        for _ in 0..e.reads {
            cycles += self.xpfo_kmap_user_page(cpu, t, AccessKind::Load);
        }
        for _ in 0..e.cow_copies {
            cycles += self.xpfo_fault(cpu, t, Pte::Cow);
        }
        cycles
    }

    /// `xpfo_free_pages()` of the pages zaps freed since the last call: each mapped back
    /// (`set_kpte(PAGE_KERNEL)`, no flush). Returns the cycles.
    pub(super) fn xpfo_free_cycles(&mut self) -> u64 {
        let n = std::mem::take(&mut self.xpfo.unfreed);
        if n == 0 || !self.xpfo_events() {
            return 0;
        }
        self.xpfo.events.frees += n;
        n * (FREE_LOCKED * LOCKED_RMW_CYCLES + self.lookup_address_cycles())
    }

    /// `xpfo-deferred`, at the top of `switch_mm_irqs_off()`: `cpumask_test_and_clear_cpu()` of
    /// this CPU in `pending_xpfo_flush` (with `xpfo-events`, its locked operation and the shared
    /// line), and a CPU that was marked flushes everything, globals included. Returns its
    /// cycles.
    pub(super) fn xpfo_switch_flush(&mut self, cpu: CpuId) -> u64 {
        let c = usize::from(cpu.0);
        let mut cycles = 0;
        if self.policy.xpfo == Xpfo::Deferred && self.xpfo_events() {
            cycles += LOCKED_RMW_CYCLES + self.xpfo_mask_write(cpu);
        }
        if !self.cpus[c].xpfo_pending {
            return cycles;
        }
        self.cpus[c].xpfo_pending = false;
        self.xpfo.full_flush_count += 1;
        self.xpfo.full_flushes[c].push(self.queue.now().0);
        cycles + self.flush_tlb_all_local(cpu)
    }
}
