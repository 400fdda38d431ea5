//! migrc and LUF (Byungchul Park's RFC series on linux-mm: "migrc" v1–v8, 2023–2024, renamed
//! "LUF (Lazy Unmap Flush)" from v9; the model follows the design of v12, February 2025) on
//! linux-6.18's tlb.c, with the page allocator they need.
//!
//! **What they defer.** An unmap done with a batched flush (`try_to_migrate()` /
//! `try_to_unmap()` with `TTU_BATCH_FLUSH`: `arch_tlbbatch_add_pending()` bumps the mm's
//! `tlb_gen` and adds its `mm_cpumask` to the batch) normally ends with `try_to_unmap_flush()`
//! before the pages are freed. When every PTE that mapped a folio was read-only (not writable,
//! so no CPU can have changed the page through a stale entry), migrc and LUF leave that batch
//! pending instead: the folio is freed to the page allocator carrying a key (`luf_key`) of the
//! pending batch. A stale translation then still reads the page's old contents, which stay the
//! same while the page is free.
//! - migrc: the unmap of a migration's source folios (`migrate_pages_batch()`; v8: any kind of
//!   migration).
//! - LUF (v9+): the same, and the unmap of reclaim (`shrink_folio_list()`).
//!
//! **When they catch up.** Every CPU of a pending batch flushes (one `arch_tlbbatch_flush()`
//! of the batch's CPUs, a full flush of whatever each has loaded) when:
//! - a page that carries the key leaves the page allocator (`luf_takeoff_check_and_fold()` at
//!   the pcp or buddy takeoff, then the flush at `luf_takeoff_end()`, before the page is
//!   handed out): the reuse. Each batch is flushed once (the kernel's `ugen` "done" check
//!   skips batches already flushed).
//! - migrc only: memory pressure (before direct reclaim, migrc flushes everything pending and
//!   pauses).
//! - LUF only: a fault that sets a writable PTE (v10: "cancel LUF after update_mmu_tlb*() if it
//!   is going to set the pte to writable"; the model flushes every pending batch there, the
//!   conservative reading). LUF's other catch-ups (a file written through the page cache,
//!   KASAN poisoning or `init_on_free` at free) have no counterpart in the model.
//!
//! What the model leaves out, and why:
//! - NOTE: the allocator is per-CPU LIFO lists (`pcp`, the hot end handed out first) over one
//!   FIFO list standing for the buddy allocator, with `pcp->batch` = 63 and `pcp->high` =
//!   6 × batch (the pre-5.14 default; later kernels scale `high` per zone). Orders, zones,
//!   migratetypes and LUF v12's separate `pend_list` of key-carrying buddy pages are not
//!   modelled.
//! - NOTE: the model's reclaim unmaps private writable pages (never deferred) and COW-shared
//!   pages whose other mapping keeps them allocated, so LUF's reclaim half defers nothing
//!   here; its deferral shows on migration.
//! - NOTE: a page freed at process exit is not returned to the lists (no study exits while
//!   pages it freed matter).

use super::run::Step;
use super::{FlushPhase, Frame, Kernel, Mode};
use crate::cpumask::CpuMask;
use crate::ids::{MmId, TaskId, TlbGen};
use crate::kernel::flush::FlushRequest;
use crate::mm::{Pte, VmaId};
use crate::observer::Observer;
use crate::policy::{Defect, UnmapFlush};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, VecDeque};
use tlblab_types::CpuId;

/// `pcp->batch`: pages moved between a pcp list and the buddy lists at once.
const PCP_BATCH: usize = 63;
/// `pcp->high`: a pcp list longer than this gives `PCP_BATCH` pages back.
const PCP_HIGH: usize = 6 * PCP_BATCH;
/// Memory nodes: the local one (every CPU's, where faults allocate) and one other, the
/// target of `move_pages()` (a CXL expander or the other socket's memory).
const NODES: usize = 2;

/// A pending batch (`struct luf_batch`): the CPUs to flush and, per mm, the generation its
/// unmap brought the mm to; `node`: where its pages were freed.
#[derive(Clone, Debug)]
struct LufBatch {
    node: usize,
    mask: CpuMask,
    gens: Vec<(MmId, TlbGen)>,
}

/// The page allocator's free lists, per node, and the pending batches.
#[derive(Clone, Debug)]
pub(crate) struct PageAlloc {
    /// Per node, per CPU: free pages, each with its key (`None`: nothing pending), hottest
    /// last.
    pcp: Vec<Vec<Vec<Option<u32>>>>,
    /// Per node: the buddy allocator's free pages, oldest first.
    buddy: Vec<VecDeque<Option<u32>>>,
    /// Pending batches by key.
    pending: BTreeMap<u32, LufBatch>,
    next_key: u32,
    /// The node of each page that was migrated (`(mm, page)`; every other page is local).
    node_of: FxHashMap<(u32, u64), usize>,
    /// Per task: the catch-ups its running operation did (or, with a defect, skipped), judged
    /// when it completes.
    due: Vec<(TaskId, LufBatch)>,
}

impl PageAlloc {
    pub(crate) fn new(nr_cpus: usize) -> PageAlloc {
        PageAlloc {
            pcp: vec![vec![Vec::new(); nr_cpus]; NODES],
            buddy: vec![VecDeque::new(); NODES],
            pending: BTreeMap::new(),
            next_key: 1,
            node_of: FxHashMap::default(),
            due: Vec::new(),
        }
    }

    /// `free_unref_page()` on `cpu` of a page of `node`: to its pcp list there; a list over
    /// `high` gives its coldest `batch` pages to the buddy lists.
    pub(super) fn free(&mut self, node: usize, cpu: CpuId, key: Option<u32>) {
        let pcp = &mut self.pcp[node][usize::from(cpu.0)];
        pcp.push(key);
        if pcp.len() > PCP_HIGH {
            self.buddy[node].extend(pcp.drain(..PCP_BATCH));
        }
    }

    /// `rmqueue()` on `cpu` from `node`: the hottest page of its pcp list, refilled with
    /// `batch` pages from the buddy lists when empty; a page never used before when those are
    /// empty too. Returns the page's key.
    pub(super) fn take(&mut self, node: usize, cpu: CpuId) -> Option<u32> {
        let pcp = &mut self.pcp[node][usize::from(cpu.0)];
        if pcp.is_empty() {
            let n = self.buddy[node].len().min(PCP_BATCH);
            // rmqueue_bulk() adds each page it takes to the list's tail and the allocation
            // takes the head: the first page taken is handed out first.
            pcp.extend(self.buddy[node].drain(..n).rev());
        }
        pcp.pop().flatten()
    }
}

/// migrc and LUF need `tlb_gen` (the catch-up of a CPU that was lazy or on another mm when the
/// batch was flushed is its `tlb_gen` check at the next switch).
pub(super) fn check_policy(policy: &crate::Policy) -> Result<(), super::KernelError> {
    if policy.unmap_flush != UnmapFlush::Off && !policy.tlb_gen {
        let why = "migrc and LUF on a kernel without tlb_gen: CPUs that were lazy or on another mm catch up through tlb_gen";
        return Err(super::KernelError::Unsupported { policy: policy.shown(), why });
    }
    Ok(())
}

impl<O: Observer> Kernel<O> {
    /// A local page freed on `cpu` (no key: nothing pending on it).
    pub(super) fn page_freed(&mut self, cpu: CpuId) {
        if let Some(pa) = self.page_alloc.as_deref_mut() {
            pa.free(0, cpu, None);
        }
        self.frame_freed(cpu);
    }

    /// Task `t` on `cpu` takes `pages` pages from `node`: if one carries a key, every batch
    /// pending on that node is folded into the CPUs to flush before the pages are handed out
    /// (LUF v12 flushes a zone's accumulated batch at once; migrc keeps its requests per
    /// node). `None`: nothing to flush.
    pub(super) fn pages_allocated(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        (node, pages): (usize, u64),
    ) -> Option<CpuMask> {
        let pa = self.page_alloc.as_deref_mut()?;
        let mut keyed = false;
        for _ in 0..pages {
            // A key whose batch was flushed already needs nothing (the kernel's `ugen` check).
            let key = pa.take(node, cpu);
            keyed |=
                key.is_some_and(|k| pa.pending.contains_key(&(k * NODES as u32 + node as u32)));
        }
        keyed.then(|| self.catch_up(t, |b| b.node == node)).flatten()
    }

    /// Flushes every pending batch (migrc's memory pressure, LUF's writable fault).
    pub(super) fn catch_up_all(&mut self, t: TaskId) -> Option<CpuMask> {
        self.catch_up(t, |_| true)
    }

    /// The pending batches `which` picks are caught up by task `t`: removed, their CPUs
    /// returned (for `arch_tlbbatch_flush()`), and their catch-up judged when `t`'s operation
    /// completes. With [`Defect::LufReuseWithoutFlush`] nothing is flushed.
    fn catch_up(&mut self, t: TaskId, which: impl Fn(&LufBatch) -> bool) -> Option<CpuMask> {
        let n = self.cpus.len();
        let pa = self.page_alloc.as_deref_mut()?;
        let keys: Vec<u32> = pa.pending.iter().filter(|(_, b)| which(b)).map(|(&k, _)| k).collect();
        if keys.is_empty() {
            return None;
        }
        let mut all = LufBatch { node: 0, mask: CpuMask::new(n), gens: Vec::new() };
        for k in keys {
            let b = pa.pending.remove(&k).expect("listed above");
            all.mask.or(&b.mask);
            all.gens.extend(b.gens);
        }
        let mask = all.mask.clone();
        pa.due.push((t, all));
        self.counters.luf_catch_ups += 1;
        (self.policy.defect != Some(Defect::LufReuseWithoutFlush)).then_some(mask)
    }

    /// Pushes `arch_tlbbatch_flush()` of `mask` for task `t` (to run next).
    pub(super) fn push_batch_flush(&mut self, t: TaskId, mask: CpuMask) {
        self.push_frame(t, Frame::BatchFlush { mask, phase: FlushPhase::Start, call: None });
    }

    /// Task `t`'s operation completes: the catch-ups it did are declared catch-up points of
    /// every CPU of their batches (a CPU still running the mm behind the generation missed
    /// it: its later stale uses are violations).
    pub(super) fn luf_completed(&mut self, t: TaskId) {
        let Some(pa) = self.page_alloc.as_deref_mut() else { return };
        if pa.due.is_empty() {
            return;
        }
        let (mine, rest): (Vec<_>, Vec<_>) = pa.due.drain(..).partition(|(d, _)| *d == t);
        pa.due = rest;
        for (_, b) in mine {
            for cpu in b.mask.iter() {
                for &(mm, gen) in &b.gens {
                    let ctx_id = self.mms[mm.0 as usize].ctx_id;
                    self.deferral_due_upto(cpu, ctx_id, gen);
                }
            }
        }
    }

    /// `move_pages()` by task `t` on `cpu` of `pages` pages of its region `vma` from page
    /// `first` (to the other node): `migrate_pages_batch()` allocates a destination page for
    /// each mapped page, unmaps them all with a batched flush (`try_to_migrate()`,
    /// `TTU_BATCH_FLUSH`), flushes (`try_to_unmap_flush()`), copies each page, maps the copies
    /// (`remove_migration_ptes()`) and frees the sources. migrc and LUF leave the flush of the
    /// read-only ones pending on the freed sources.
    pub(super) fn sys_move_pages(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        (vma, first, pages): (VmaId, u64, u64),
    ) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        let n = self.cpus.len();
        let defer = self.policy.unmap_flush != UnmapFlush::Off;
        let (mut batch, mut luf) = (CpuMask::new(n), CpuMask::new(n));
        let (mut moved, mut lazy, mut immediate, mut changed) = (0, 0, Vec::new(), Vec::new());
        // should_defer_flush(): another CPU may cache the mm's translations.
        let batched = self.mms[mm.0 as usize].cpumask.any_but(cpu);
        let m = &mut self.mms[mm.0 as usize];
        if let Some(v) = m.vmas.get_mut(vma.0 as usize).and_then(Option::as_mut) {
            for i in first..first.saturating_add(pages).min(v.pages()) {
                let pte = v.ptes[i as usize];
                // The zero page and holes are not migrated.
                if !matches!(pte, Pte::Present | Pte::Cow | Pte::File) {
                    continue;
                }
                moved += 1;
                let vpn = v.start.0 + i;
                // Only folios whose PTEs are all read-only are deferred (migrc: "exclude
                // folios that pte_dirty() == true"; LUF: non-writable).
                let read_only = pte != Pte::Present;
                changed.push((vpn, read_only));
                if batched {
                    m.tlb_gen += 1;
                    let into = if defer && read_only { &mut luf } else { &mut batch };
                    into.or(&m.cpumask);
                    lazy += u64::from(defer && read_only);
                } else {
                    immediate.push(FlushRequest::pages(mm, vpn, vpn + 1, false));
                }
            }
        }
        let gen = self.mms[mm.0 as usize].tlb_gen;
        for &(vpn, _) in &changed {
            self.pte_changed(t, mm, vpn);
        }
        // Each page goes to the other node. The destinations come from the allocator first
        // (migrate_folio_unmap()), per node; the sources are freed to theirs after the copies
        // are mapped, those deferred carrying the key.
        let mut reuse: Option<CpuMask> = None;
        let mut frees = Vec::new();
        if let Some(pa) = self.page_alloc.as_deref_mut() {
            let key = (lazy > 0).then_some(pa.next_key);
            let mut sources = [0u64; NODES];
            for &(vpn, read_only) in &changed {
                let src = pa.node_of.get(&(mm.0, vpn)).copied().unwrap_or(0);
                pa.node_of.insert((mm.0, vpn), 1 - src);
                sources[src] += 1;
                frees.push((src, key.filter(|_| read_only && batched && defer)));
            }
            for (src, &n) in sources.iter().enumerate() {
                if n > 0 {
                    if let Some(m) = self.pages_allocated(cpu, t, (1 - src, n)) {
                        reuse.get_or_insert_with(|| CpuMask::new(self.cpus.len())).or(&m);
                    }
                }
            }
        }
        if lazy > 0 {
            let pa = self.page_alloc.as_deref_mut().expect("migrc and LUF have an allocator");
            let key = pa.next_key;
            pa.next_key += 1;
            for &(node, k) in &frees {
                pa.free(node, cpu, k);
            }
            // One batch per node its deferred sources were freed to (the kernel keeps
            // pending flushes per zone).
            for node in 0..NODES {
                if frees.iter().any(|&(n, k)| n == node && k.is_some()) {
                    let b = LufBatch { node, mask: luf.clone(), gens: vec![(mm, gen)] };
                    pa.pending.insert(key * NODES as u32 + node as u32, b);
                }
            }
            self.counters.luf_deferred_pages += lazy;
            self.deferral_declared_gen(t, mm, gen);
        } else if let Some(pa) = self.page_alloc.as_deref_mut() {
            for &(node, _) in &frees {
                pa.free(node, cpu, None);
            }
        }
        self.push_frame(t, Frame::Syscall { call: None, phase: super::Phase::Exit });
        if batch.weight() > 0 {
            self.push_batch_flush(t, batch);
        }
        for req in immediate.into_iter().rev() {
            self.push_flush(t, req);
        }
        if let Some(mask) = reuse {
            self.push_batch_flush(t, mask);
        }
        // NOTE: per page, a PTE's unmap and the path of a COW fault (allocate a page, copy
        // 4 KiB, map it), as a migration does per page; the COW fault's entry is over-charged.
        let cycles = moved * (self.costs.zap_pte.cycles + self.costs.page_fault_cow.cycles);
        Step::Spend(cycles, Mode::Sys)
    }
}
