//! Reclaim's batched flushes (arch_tlbbatch_add_pending / arch_tlbbatch_flush).

use super::*;
use crate::mm::Pte;

/// A process runs on CPUs 1 and 2 (four pages written); reclaim on CPU 0 takes three of its
/// pages. The mm may be cached elsewhere, so each page only bumps its tlb_gen and adds its
/// cpumask to the batch; one flush of "whatever is loaded" (mm NULL, full) then goes to CPUs
/// 1 and 2, each a full remote shootdown that brings them to the mm's generation.
#[test]
fn reclaim_batches_its_flushes_into_one_full_flush_of_the_cpus_involved() {
    let mut k = kernel("linux-6.18", 3);
    let victim = k.spawn_process(
        script(vec![Step::Mmap(4), Step::Store(0, 0, 4), Step::Compute(1 << 40)]),
        C1,
        true,
    );
    k.spawn_thread(victim, script(vec![Step::Compute(1 << 40)]), CpuId(2), false);
    k.spawn_process(script(vec![Step::Compute(1_000_000), Step::Reclaim(3)]), C0, true);
    k.run_until(Cycles(10_000_000));
    let mm = k.task_mm(victim).unwrap();
    assert_eq!(
        k.mm(mm).vma(VmaId(0)).unwrap().ptes,
        [Pte::None, Pte::None, Pte::None, Pte::Present]
    );
    assert_eq!(k.mm(mm).tlb_gen, 3, "one generation per page (arch_tlbbatch_add_pending)");
    assert_eq!(traced(&k, C0, TlbFlushReason::RemoteSendIpi), [TLB_FLUSH_ALL]);
    for c in [C1, CpuId(2)] {
        assert_eq!(traced(&k, c, TlbFlushReason::RemoteShootdown), [TLB_FLUSH_ALL]);
        assert_eq!(slot_gen(&k, c), 3);
    }
    assert_eq!(k.report().reclaimed, 3);
}
