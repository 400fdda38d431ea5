//! munmap's mmu_gather range: the PTEs cleared, plus one page per freed page table.

use super::*;

fn munmap_flushes(steps: Vec<Step>) -> Vec<i64> {
    let mut k = kernel("linux-6.18", 1);
    k.spawn_process(script(steps), C0, true);
    assert!(k.run());
    traced(&k, C0, TlbFlushReason::LocalMmShootdown)
}

/// A region sharing its page table with a neighbour that stays: only the span of cleared
/// PTEs (pages 3 and 4 of 64) is flushed. (exit_mmap()'s flush finds the CPU lazy, after
/// exit_mm(), and switches it to init_mm instead: no local MM shootdown.)
#[test]
fn munmap_flushes_the_span_of_cleared_ptes() {
    let flushes = munmap_flushes(vec![
        Step::Mmap(64),
        Step::Mmap(1),
        Step::Store(1, 0, 1),
        Step::Store(0, 3, 2),
        Step::Munmap(0),
    ]);
    assert_eq!(flushes, [2]);
}

/// A region with page tables of its own (1024 pages, 4 MiB): its tables are freed, and each
/// adds its address to the range, which then spans from the region's start into its last 2 MiB
/// block: above the ceiling, a full flush, though only one PTE was cleared.
#[test]
fn munmap_that_frees_page_tables_widens_the_range() {
    let flushes = munmap_flushes(vec![Step::Mmap(1024), Step::Store(0, 0, 1), Step::Munmap(0)]);
    assert_eq!(flushes, [TLB_FLUSH_ALL]);
}

/// CONFIG_PT_RECLAIM (6.14+): MADV_DONTNEED over whole 2 MiB blocks frees the PTE pages it
/// empties, so its flush carries freed_tables and reaches the CPU that is only lazily on the
/// mm (it leaves the mm: a switch to init_mm). A DONTNEED of 511 pages covers no whole block,
/// and a 4.14-era kernel never frees tables on DONTNEED: no IPI to the lazy CPU either way.
#[test]
fn madvise_dontneed_of_whole_blocks_frees_their_tables_and_reaches_lazy_cpus() {
    let lazy_cpu_interrupts = |policy: Policy, pages: u64| {
        let mut k = kernel_on("skylake", &policy, 2);
        run_with_lazy_cpu1(&mut k, 2048, Step::Madvise(0, 0, pages));
        k.counters.irq_tlb[1]
    };
    let linux_6_18 = Policy::named("linux-6.18").unwrap();
    assert_eq!(lazy_cpu_interrupts(linux_6_18.clone(), 2048), 1, "freed tables reach it");
    assert_eq!(lazy_cpu_interrupts(linux_6_18.clone(), 511), 0, "no whole block");
    let without = Policy { pt_reclaim: false, ..linux_6_18 };
    assert_eq!(lazy_cpu_interrupts(without, 2048), 0, "no table freed");
}
