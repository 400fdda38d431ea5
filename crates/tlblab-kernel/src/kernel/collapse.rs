//! `madvise(MADV_COLLAPSE)` and khugepaged's collapse of a normal PMD (mm/khugepaged.c
//! `collapse_huge_page()`, mm/pgtable-generic.c `pmdp_collapse_flush()`), the path of
//! CVE-2025-22045, and INVLPGB's 2 MiB stride (`broadcast_tlb_flush()` with
//! `stride_shift == PMD_SHIFT`).
//!
//! `pmdp_collapse_flush()` clears a PMD that points at a page table of 4 KiB PTEs and flushes
//! its 2 MiB with `flush_tlb_range()` ("collapse entails shooting down ptes not pmd"). On x86
//! that is `flush_tlb_mm_range(mm, start, end, PAGE_SHIFT, freed_tables)`: 512 pages, past the
//! ceiling of 33, so a full flush. Since 3ef938c35035 (Jann Horn, upstream by April 2025 and
//! backported to the stable branches down to 5.4; CVE-2025-22045) `freed_tables` is `true`, as
//! arm64 always assumed; before, `false`, so lazy CPUs got no IPI though the PMD's page table
//! leaves the tree.
//!
//! NOTE (simplifications): the model has no huge-PMD mappings, so after the collapse the block's
//! pages are not present until touched again (the kernel maps them with one 2 MiB PMD); the
//! copy of the 512 pages into the new huge page (anonymous memory) is not charged; the PTE page
//! counts as freed, as on the file path (`collapse_pte_mapped_thp()` → `pte_free_defer()`, the
//! path the CVE names), where the anonymous path deposits it for a later split — in both it is
//! no longer reachable from the PMD, so a paging-structure-cache entry that still points at it
//! is stale. Every PTE of the block gets a new version: the anonymous collapse copies the pages
//! into a new folio and frees the old ones.

use super::{Kernel, LA57_CHECKS_WALK};
use crate::ids::{MmId, TaskId};
use crate::kernel::flush::{FlushRequest, FlushTlbInfo, FLUSH_ALL_END, PAGE_SHIFT};
use crate::mm::{Pte, VmaId};
use crate::observer::Observer;
use crate::policy::Defect;
use tlblab_types::{CpuId, InvlpgbRange, InvlpgbScope, PageSize, TlbOp, Vpn};

/// `PMD_SHIFT`: a PMD entry maps 2 MiB.
pub const PMD_SHIFT: u32 = 21;

/// 4 KiB pages in a 2 MiB block (`HPAGE_PMD_NR`).
const HPAGE_PMD_NR: u64 = 1 << (PMD_SHIFT - PAGE_SHIFT);

impl<O: Observer> Kernel<O> {
    /// The 2 MiB blocks (their first page numbers) `MADV_COLLAPSE` of pages `first..first +
    /// pages` of `vma` collapses: `madvise_collapse()` rounds the range in to whole PMDs
    /// (`hstart`, `hend`), and a block without a present PTE has no PTE page to collapse (the
    /// model's stand-in for `find_pmd_or_thp_or_none()` failing).
    pub(super) fn collapse_blocks(&self, mm: MmId, vma: VmaId, first: u64, pages: u64) -> Vec<u64> {
        let Some(v) = self.mms[mm.0 as usize].vma(vma) else { return Vec::new() };
        let lo = v.start.0 + first.min(v.pages());
        let hi = v.start.0 + first.saturating_add(pages).min(v.pages());
        (lo.div_ceil(HPAGE_PMD_NR)..hi / HPAGE_PMD_NR)
            .map(|b| b * HPAGE_PMD_NR)
            .filter(|&a| {
                (a..a + HPAGE_PMD_NR).any(|vpn| v.ptes[(vpn - v.start.0) as usize] != Pte::None)
            })
            .collect()
    }

    /// `collapse_huge_page()` of each of `blocks` of `vma` for task `t`: the PMD cleared (every
    /// PTE of the block gone, its page table out of the tree) and `flush_tlb_range()` over the
    /// block pushed, one per block, to run before the system call's exit (already pushed).
    /// Returns the cycles of the PTE clears.
    pub(super) fn collapse(&mut self, t: TaskId, mm: MmId, vma: VmaId, blocks: &[u64]) -> u64 {
        let start = self.mms[mm.0 as usize].vma(vma).map_or(0, |v| v.start.0);
        let mut cleared = 0;
        // Frames are a stack: the last block's flush is pushed first, so the flushes run in
        // block order.
        for &block in blocks.iter().rev() {
            let (n, _, _) = self.zap(t, mm, vma, block - start, HPAGE_PMD_NR);
            cleared += n;
            self.tables_freed(t, mm, &[block]);
            self.push_flush(t, self.collapse_flush(mm, block));
        }
        self.zap_cycles(cleared) + self.la57_checks(LA57_CHECKS_WALK)
    }

    /// The `flush_tlb_range(vma, haddr, haddr + HPAGE_PMD_SIZE)` of `pmdp_collapse_flush()`.
    fn collapse_flush(&self, mm: MmId, block: u64) -> FlushRequest {
        let mut req = FlushRequest::pages(mm, block, block + HPAGE_PMD_NR, true);
        match self.policy.defect {
            // KNOWN BAD: the flush_tlb_range() of before 3ef938c35035.
            Some(Defect::RangeFlushWithoutFreedTables) => req.freed_tables = false,
            // KNOWN BAD: one invalidation per 2 MiB (then under the ceiling: a ranged flush).
            Some(Defect::CollapsePmdStride) => req.stride_shift = PMD_SHIFT,
            _ => {}
        }
        req
    }

    /// The ranged part of `broadcast_tlb_flush()` with `stride_shift == PMD_SHIFT`: INVLPGBs
    /// with the 2 MiB stride (ECX bit 31), each over at most `invlpgb_count_max` strides, then
    /// TLBSYNC. Each invalidates, on every CPU, the translations of its strides' addresses
    /// (tlblab-sim: any page size at each address, AMD APM INVLPGB). Returns the initiator's
    /// cycles.
    pub(super) fn invlpgb_flush_pmd_stride_sync(&mut self, cpu: CpuId, info: &FlushTlbInfo) -> u64 {
        debug_assert!(info.stride_shift == PMD_SHIFT && info.end != FLUSH_ALL_END);
        let mm = info.mm.expect("mm flushes only");
        let pcid = self.mms[mm.0 as usize].global_asid.expect("a global ASID").kern_pcid();
        let max = u64::from(self.spec.raw().features.invlpgb_count_max.unwrap_or(1).max(1));
        let mut cycles = 0;
        let mut addr = info.start;
        loop {
            let nr = ((info.end - addr) / HPAGE_PMD_NR).clamp(1, max);
            let range =
                InvlpgbRange { start: Vpn(addr), pages: nr as u32, stride: PageSize::Size2M };
            let scope = InvlpgbScope {
                range: Some(range),
                pcid: Some(pcid),
                include_global: false,
                final_only: false,
            };
            cycles += self.invlpgb_broadcast(cpu, scope);
            addr += nr * HPAGE_PMD_NR;
            if addr >= info.end {
                break;
            }
        }
        cycles + self.hw_op(cpu, TlbOp::Tlbsync)
    }
}
