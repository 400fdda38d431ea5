//! INVLPGB: global ASIDs for mms busy on more than three CPUs, the transition, broadcasts.

use super::*;

/// A process on CPU 0 with threads spinning on CPUs 1–4 (five CPUs run its mm), on a 6-CPU
/// Zen 4 (CPU 5 is free).
fn five_cpus_on_one_mm(policy: &str) -> (Kernel<TraceLog>, TaskId, MmId) {
    let mut k = kernel_on("zen4", &Policy::named(policy).unwrap(), 6);
    let main = k.spawn_process(
        script(vec![Step::Mmap(1), Step::Store(0, 0, 1), Step::Compute(1 << 40)]),
        C0,
        true,
    );
    for c in 1..5 {
        k.spawn_thread(main, script(vec![Step::Compute(1 << 40)]), CpuId(c), false);
    }
    k.run_until(Cycles(1_000_000));
    let mm = k.task_mm(main).unwrap();
    (k, main, mm)
}

/// consider_global_asid(): sampled when the task's pid matches the jiffy, an mm running on
/// more than three CPUs gets the first global ASID (TLB_NR_DYN_ASIDS) after a system-wide
/// flush; CPUs still on dynamic ASIDs are stragglers until a flush IPI moves them over; then
/// the mm's flushes are one INVLPGB + TLBSYNC, with no IPI and no tracepoint.
#[test]
fn an_mm_on_five_cpus_gets_a_global_asid_and_its_flushes_are_broadcast() {
    let (mut k, main, mm) = five_cpus_on_one_mm("linux-6.18+invlpgb");
    let other_pid = TaskId((k.jiffies() as u32 + 1) & 0x1f);
    assert_eq!(k.consider_global_asid(C0, other_pid, mm), 0, "not sampled");
    assert_eq!(k.mm(mm).global_asid, None);
    let pid = TaskId(k.jiffies() as u32 & 0x1f);
    let reset = k.consider_global_asid(C0, pid, mm);
    assert_eq!(reset, 200 + 1000, "the first allocation flushes everything: INVLPGB + TLBSYNC");
    let g = Asid(crate::ids::TLB_NR_DYN_ASIDS);
    assert_eq!(k.mm(mm).global_asid, Some(g));
    assert!(k.mm(mm).asid_transition);

    // A one-page flush: every CPU still runs the mm under a dynamic ASID.
    let vpn = k.mm(mm).vma(VmaId(0)).unwrap().start.0;
    let info = k.flush_tlb_info(&FlushRequest::pages(mm, vpn, vpn + 1, false), 1, C0);
    let call = k.new_call(info, main);
    assert!(k.asid_stragglers(mm));
    for c in 0..5 {
        k.flush_tlb_func(CpuId(c), call);
        assert_eq!(k.tlb_state(CpuId(c)).loaded_mm_asid, g, "CPU {c} moved to the global ASID");
    }
    assert!(!k.asid_stragglers(mm));
    assert!(!k.mm(mm).asid_transition, "transition over");
    let traced_before = k.observer().events.len();
    assert_eq!(k.broadcast_tlb_flush(C0, call), 200 + 1000, "one INVLPGB of one page, TLBSYNC");
    assert_eq!(k.observer().events.len(), traced_before, "broadcasts fire no tracepoint");
}

/// The whole path: a thread on CPU 5 flushing an mm that five other CPUs run sends IPIs until
/// the mm gets a global ASID, and far fewer after.
#[test]
fn invlpgb_replaces_ipis_once_the_mm_is_global() {
    let ipis = |policy: &str| {
        let (mut k, _, mm) = five_cpus_on_one_mm(policy);
        let t = k.spawn_thread(
            TaskId(k.tasks.iter().position(|t| t.mm == Some(mm)).unwrap() as u32),
            script(
                [Step::Mmap(1)]
                    .into_iter()
                    .chain((0..400).flat_map(|_| {
                        // Spread over ≈ 270 ms (66 jiffies): the pid sampling matches twice.
                        [Step::Store(0, 0, 1), Step::Madvise(0, 0, 1), Step::Compute(2_000_000)]
                    }))
                    .collect(),
            ),
            CpuId(5),
            true,
        );
        k.run_until(Cycles(2_000_000_000));
        assert!(k.tasks[t.0 as usize].report.exited.is_some());
        (k.report().ipis_sent.iter().sum::<u64>(), k.mm(mm).global_asid.is_some())
    };
    let (plain, _) = ipis("linux-6.18");
    let (broadcast, global) = ipis("linux-6.18+invlpgb");
    assert!(global);
    assert!(broadcast * 2 < plain, "{broadcast} IPIs with INVLPGB, {plain} without");
}
