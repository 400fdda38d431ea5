//! Kernel-address flushes: flush_tlb_kernel_range() and flush_tlb_all(), by IPI or INVLPGB;
//! and reclaim's batch flush by INVLPGB.

use super::*;

/// The outcome of one kernel flush from CPU 0 while a process on CPU 1 has 16 pages in its
/// TLB, which it reads again after the flush.
struct Outcome {
    k: Kernel<TraceLog>,
    /// Page walks of the whole run beyond those of the same run without the flush: the
    /// sibling's re-reads that missed.
    extra_walks: u64,
}

fn run(machine: &str, policy: &str, flush: Option<Step>) -> Kernel<TraceLog> {
    let mut k = kernel_on(machine, &Policy::named(policy).unwrap(), 2);
    let reader =
        vec![Step::Mmap(16), Step::Store(0, 0, 16), Step::Compute(4_000_000), Step::Load(0, 0, 16)];
    k.spawn_process(script(reader), C1, true);
    let mut flusher = vec![Step::Compute(1_000_000)];
    flusher.extend(flush);
    k.spawn_process(script(flusher), C0, true);
    k.run();
    k
}

fn kernel_flush(machine: &str, policy: &str, pages: Option<u64>) -> Outcome {
    let walks = |k: &Kernel<TraceLog>| k.report().hw.page_walks.walks;
    let base = walks(&run(machine, policy, None));
    let k = run(machine, policy, Some(Step::KernelFlush(pages)));
    let extra_walks = walks(&k) - base;
    Outcome { k, extra_walks }
}

/// Kernel flushes fire no `tlb:tlb_flush` event (live.md: not traced at all).
fn no_flush_tracepoints(k: &Kernel<TraceLog>) {
    let reasons: Vec<_> = k.observer().events.iter().map(|e| e.reason).collect();
    assert!(
        reasons.iter().all(|&r| r == TlbFlushReason::FlushOnTaskSwitch),
        "only task switches are traced: {reasons:?}"
    );
}

/// Below the ceiling: on_each_cpu(do_kernel_range_flush): a function-call IPI to the other
/// CPU, one INVLPG per page on each CPU; the sibling's user translations survive.
#[test]
fn a_small_kernel_range_is_flushed_page_by_page_on_every_cpu() {
    let o = kernel_flush("skylake", "linux-6.18", Some(8));
    let r = o.k.report();
    assert_eq!(r.irq_cal, [0, 1], "one CAL interrupt on the other CPU");
    assert_eq!(r.vmstat.nr_tlb_local_flush_one, 2 * 8, "8 pages on each of 2 CPUs");
    assert_eq!(r.vmstat.nr_tlb_remote_flush_received, 0);
    assert_eq!(r.vmstat.nr_tlb_remote_flush, 0, "flush_tlb_kernel_range() counts no send");
    assert_eq!(o.extra_walks, 0, "user translations are untouched");
    no_flush_tracepoints(&o.k);
}

/// Above the ceiling (34 > 33 pages): init_flush_tlb_info() turns the range into a full
/// flush, and kernel_tlb_flush_all() runs do_flush_tlb_all() everywhere: the sibling loses
/// its 16 user translations. Only flush_tlb_all() itself counts NR_TLB_REMOTE_FLUSH.
#[test]
fn a_kernel_range_above_the_ceiling_and_flush_tlb_all_flush_everything_everywhere() {
    for (pages, sends) in [(Some(34), 0), (None, 1)] {
        let o = kernel_flush("skylake", "linux-6.18", pages);
        let r = o.k.report();
        assert_eq!(r.irq_cal, [0, 1], "{pages:?}");
        assert_eq!(r.vmstat.nr_tlb_remote_flush_received, 2, "do_flush_tlb_all() on both CPUs");
        assert_eq!(r.vmstat.nr_tlb_remote_flush, sends, "{pages:?}");
        assert_eq!(r.vmstat.nr_tlb_local_flush_one, 0);
        assert_eq!(o.extra_walks, 16, "{pages:?}: every re-read walks");
        no_flush_tracepoints(&o.k);
    }
}

/// With INVLPGB (6.15+) no IPI is sent: one broadcast (globals included, every PCID) and a
/// TLBSYNC reach the other CPU's TLB directly.
#[test]
fn with_invlpgb_kernel_flushes_send_no_ipi_and_still_reach_every_cpu() {
    for (pages, extra) in [(Some(8), 0), (Some(34), 16), (None, 16)] {
        let o = kernel_flush("zen4", "linux-6.18+invlpgb", pages);
        let r = o.k.report();
        assert_eq!(r.irq_cal, [0, 0], "{pages:?}");
        assert_eq!(r.ipis_sent, [0, 0], "{pages:?}");
        assert_eq!(o.extra_walks, extra, "{pages:?}");
        assert_eq!(r.vmstat.nr_tlb_remote_flush_received, 0, "no handler ran");
        no_flush_tracepoints(&o.k);
    }
    let r = &kernel_flush("zen4", "linux-6.18+invlpgb", Some(8)).k.report().hw.invalidations;
    assert_eq!(r["invlpgb"].count, 1, "8 pages fit in one INVLPGB (invlpgb_count_max 8)");
}

/// Reclaim with INVLPGB: arch_tlbbatch_flush() broadcasts one flush of every non-global
/// translation instead of IPIs. NOTE: the CPUs' tlb_gen does not catch up, so the victim's
/// next one-page flush on CPU 1 finds its generation behind by more than one and flushes
/// everything.
#[test]
fn reclaim_with_invlpgb_broadcasts_and_leaves_the_generations_behind() {
    let mut k = kernel_on("zen4", &Policy::named("linux-6.18+invlpgb").unwrap(), 3);
    let victim = k.spawn_process(
        script(vec![
            Step::Mmap(4),
            Step::Store(0, 0, 4),
            Step::Compute(3_000_000),
            Step::Madvise(0, 3, 1),
            Step::Compute(1 << 40),
        ]),
        C1,
        true,
    );
    k.spawn_thread(victim, script(vec![Step::Compute(1 << 40)]), CpuId(2), false);
    k.spawn_process(script(vec![Step::Compute(1_000_000), Step::Reclaim(3)]), C0, true);
    k.run_until(Cycles(900_000));
    let mm = k.task_mm(victim).unwrap();
    let (gen_before, cpu1_before) = (k.mm(mm).tlb_gen, slot_gen(&k, C1));
    assert_eq!(gen_before, cpu1_before, "CPU 1 is up to date before the reclaim");
    k.run_until(Cycles(2_000_000));
    assert_eq!(k.mm(mm).tlb_gen, gen_before + 3, "arch_tlbbatch_add_pending(), once per page");
    assert_eq!(slot_gen(&k, C1), cpu1_before, "the broadcast left CPU 1's generation behind");
    let r = k.report();
    assert_eq!(r.ipis_sent, [0, 0, 0]);
    assert_eq!(r.hw.invalidations["invlpgb"].count, 1);
    assert!(traced(&k, C0, TlbFlushReason::RemoteSendIpi).is_empty());
    k.run_until(Cycles(10_000_000));
    assert_eq!(
        traced(&k, C1, TlbFlushReason::LocalMmShootdown),
        [TLB_FLUSH_ALL],
        "the one-page madvise flush became a full catch-up flush"
    );
}
