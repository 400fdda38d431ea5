//! migrc and LUF: a migration's flush of read-only pages is left pending on the freed source
//! pages until the page allocator hands one out again; the checker counts the stale uses until
//! then as exposure and catches a reuse without the flush (docs/safety.md §4.4).

use super::*;
use crate::kernel::luf::PageAlloc;
use crate::mm::Pte;
use crate::workloads::{scenario, Params};
use crate::ViolationKind;

/// `migrate-readers` on 4 CPUs (3 readers), 16 pages per migration, with the checker on,
/// IPIs up to 20,000 cycles late and disturbances every 200,000 cycles (as `sim check`).
fn migrate_readers(policy: &str, seed: u64) -> Kernel<TraceLog> {
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let config = KernelConfig::new(4, seed);
    let mut k =
        Kernel::new(&spec, &Policy::named(policy).unwrap(), config, TraceLog::default()).unwrap();
    k.enable_checker();
    k.perturb(Cycles(20_000));
    k.disturb(Cycles(200_000));
    let p = Params { tasks: 3, pages: 16, iterations: 100, ..Params::default() };
    let s = scenario("migrate-readers").unwrap();
    s.install(&mut k, &p).unwrap();
    assert!(s.run(&mut k, &p));
    k
}

#[test]
fn faithful_migrc_and_luf_pass_with_their_exposure_declared() {
    for policy in ["migrc", "luf"] {
        for seed in 1..=3 {
            let k = migrate_readers(policy, seed);
            assert!(k.violations().is_empty(), "{policy} seed {seed}: {:?}", k.violations()[0]);
            let log = k.exposure().user.expect("a declared deferral of user mappings");
            // Every migration of read-only pages, 100 of them, is a deferred operation; the
            // readers hold the old translations, so windows open and the reuse closes them.
            assert_eq!(log.operations.len(), 100, "{policy}");
            assert!(log.operations.iter().flat_map(|o| &o.windows).any(Option::is_some));
            assert!(log.uses.unwrap() > 0, "{policy}: the readers use the old translations");
            assert_eq!(log.missed_catch_ups, 0, "{policy}");
            let r = k.report();
            assert_eq!(r.luf_deferred_pages, 100 * 16, "{policy}");
        }
    }
    // The baseline flushes before the migration returns: nothing declared, nothing stale.
    let k = migrate_readers("linux-6.18", 1);
    assert!(k.violations().is_empty());
    assert!(k.exposure().user.is_none());
    assert_eq!(k.report().luf_deferred_pages, 0);
}

#[test]
fn a_reuse_without_the_pending_flush_is_caught_with_a_witness() {
    let mut caught = 0;
    for seed in 1..=3 {
        let k = migrate_readers("bad-luf-reuse-without-flush", seed);
        let log = k.exposure().user.unwrap();
        assert!(log.missed_catch_ups > 0, "seed {seed}: the reuse is the declared catch-up");
        let Some(v) = k.violations().first() else { continue };
        caught += 1;
        assert_eq!(v.kind, ViolationKind::StaleAfterCompletion);
        // The witness: filled before the migration changed the PTE, used after the migration
        // completed (and after the page's reuse, which ended the window).
        let (changed_at, _, _) = v.changed.unwrap();
        assert!(v.filled_at < changed_at && changed_at <= v.settled_at.unwrap());
        assert!(v.settled_at.unwrap() < v.used_at);
        assert!(v.filled_version < v.settled);
    }
    assert!(caught > 0, "no seed of 1–3 caught the reuse without a flush");
}

#[test]
fn the_allocator_hands_out_the_hottest_page_of_the_cpu_and_node() {
    let mut pa = PageAlloc::new(2);
    let (c0, c1) = (CpuId(0), CpuId(1));
    pa.free(0, c0, None);
    pa.free(0, c0, Some(7));
    // LIFO per CPU (the pcp list's hot end) and per node.
    assert_eq!(pa.take(1, c0), None, "the other node's lists are empty: a fresh page");
    assert_eq!(pa.take(0, c1), None, "another CPU's pcp list is its own");
    assert_eq!(pa.take(0, c0), Some(7));
    assert_eq!(pa.take(0, c0), None);
    // Past pcp->high the coldest pcp->batch pages go to the buddy lists, where another CPU
    // finds them once its own list is empty.
    for i in 0..=378 {
        pa.free(0, c0, Some(i));
    }
    // The 63 coldest moved; the first of them taken is handed out first.
    assert_eq!(pa.take(0, c1), Some(0));
    assert_eq!(pa.take(0, c1), Some(1));
}

#[test]
fn a_read_fault_on_a_file_maps_the_aligned_sixteen_pages_around_it() {
    let mut m = crate::mm::Mm::new(1, 1, 0, 250);
    let vma = m.mmap_file(40);
    let v = m.vma_mut(vma).unwrap();
    let start = v.start.0;
    // The window is the aligned 16 pages holding the faulting page, clipped to the region.
    let page = 20;
    let lo = ((start + page) & !15).max(start) - start;
    let hi = (((start + page) | 15) + 1 - start).min(40);
    assert_eq!(crate::kernel::run::fault_around(v, page), hi - lo);
    assert!((0..40).all(|i| (v.ptes[i as usize] == Pte::File) == (lo..hi).contains(&i)));
    // Pages already mapped are not mapped again.
    assert_eq!(crate::kernel::run::fault_around(v, page), 0);
}

#[test]
fn latr_removes_the_ipi_wait_from_the_munmap_its_caller_sees() {
    let run = |policy: &str| {
        let mut k = kernel(policy, 4);
        let p = Params { tasks: 4, pages: 1, iterations: 50, ..Params::default() };
        let s = scenario("munmap-latency").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(s.run(&mut k, &p));
        let r = k.report();
        assert_eq!(r.tasks[0].spans, 50, "one span per munmap");
        (s.metric.value(&r), r.ipis_sent.iter().sum::<u64>())
    };
    let ((base, base_ipis), (latr, latr_ipis)) = (run("linux-6.18"), run("latr"));
    // 6.18: each munmap interrupts the 3 spinning siblings and waits for them.
    assert_eq!(base_ipis, 50 * 3);
    assert_eq!(latr_ipis, 0);
    assert!(latr < base, "{latr} µs vs {base} µs");
}
