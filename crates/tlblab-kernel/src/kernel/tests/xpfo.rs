//! XPFO: synchronous and deferred kernel flushes, and their exposure windows.

use super::*;

/// One process on CPU 0 writes one new page (one page handed to user space).
fn one_page(policy: &str, cpus: usize, then: Vec<Step>) -> Kernel<TraceLog> {
    let mut k = kernel(policy, cpus);
    let mut steps = vec![Step::Mmap(1), Step::Store(0, 0, 1)];
    steps.extend(then);
    k.spawn_process(script(steps), C0, true);
    k.run();
    k
}

/// xpfo-sync: flush_tlb_kernel_range() interrupts every other online CPU, idle or not, with a
/// function-call IPI (the CAL row, not TLB), emits no tlb_flush event, and the window closes
/// when the last CPU has flushed: after three sends, the delivery, the wake from idle, the
/// handler's entry, the read of the flush info and one INVLPG.
#[test]
fn xpfo_sync_flushes_every_cpu_before_the_fault_returns() {
    let k = one_page("linux-4.14+xpfo-sync", 4, vec![]);
    let r = k.report();
    let x = r.xpfo.as_ref().unwrap();
    assert_eq!((x.kernel_unmaps, x.ipis, x.censored), (1, 3, 0));
    assert_eq!(r.irq_cal, [0, 1, 1, 1]);
    assert_eq!(r.irq_tlb, [0, 0, 0, 0]);
    assert_eq!(r.tlb_flush["remote shootdown"] + r.tlb_flush["remote IPI send"], 0);
    // Every CPU ran flush_tlb_one_kernel() once.
    assert_eq!(r.vmstat.nr_tlb_local_flush_one, 4);
    let c = k.costs.clone();
    // Each target's csd is queued (a cache-line transfer) and its IPI sent in turn.
    let expected = 3 * (c.cache_line_transfer.cycles + c.ipi_send.cycles)
        + c.ipi_latency.cycles
        + 2_000 * 4 // C1's exit latency, 2 µs at 4000 MHz (kernel_on: max_cstate=1)
        + c.ipi_handler.cycles
        + c.cache_line_transfer.cycles
        + 200; // INVLPG, presets/skylake.toml
    assert_eq!(x.exposure_cycles, [expected]);
}

/// xpfo-deferred on `cpus` CPUs: a process on CPU 0 computes, then writes `pages` new pages
/// (unmaps from the direct map), while CPU 1 runs one process until the tick preempts it and
/// switches to another. Runs to the end.
fn unmaps_while_cpu1_switches(cpus: usize, pages: u64) -> Kernel<TraceLog> {
    let mut k = kernel("linux-4.14+xpfo-deferred", cpus);
    k.spawn_process(
        script(vec![Step::Compute(100_000), Step::Mmap(pages), Step::Store(0, 0, pages)]),
        C0,
        true,
    );
    k.spawn_process(script(vec![Step::Compute(40_000_000)]), C1, true);
    k.spawn_process(script(vec![Step::Compute(1000)]), C1, true);
    assert!(k.run());
    k
}

/// xpfo-deferred: no IPI; each other CPU flushes everything at its next switch_mm_irqs_off(),
/// so the window stays open while a CPU does not switch mm (here: idle CPUs never do).
#[test]
fn xpfo_deferred_windows_stay_open_until_every_other_cpu_switches() {
    let k = one_page("linux-4.14+xpfo-deferred", 2, vec![]);
    let x = k.report().xpfo.unwrap();
    assert_eq!((x.kernel_unmaps, x.ipis, x.full_flushes), (1, 0, 0));
    assert_eq!((x.censored, x.exposure_cycles.len()), (1, 0), "CPU 1 stayed idle: still open");

    // Now CPU 1 runs two processes: the window closes when the tick preempts the first and
    // CPU 1 switches to the second's mm (a full flush, just before that switch's tracepoint).
    let k = unmaps_while_cpu1_switches(2, 1);
    let x = k.report().xpfo.unwrap();
    assert_eq!((x.censored, x.full_flushes), (0, 1));
    let switches: Vec<u64> = k
        .observer()
        .events
        .iter()
        .filter(|e| e.cpu == C1 && e.reason == TlbFlushReason::FlushOnTaskSwitch)
        .map(|e| e.time.0)
        .collect();
    let unmap = 100_000;
    let close = unmap + x.exposure_cycles[0];
    assert!(close > switches[0] && close <= switches[1], "{close} not at switch {switches:?}");
    // (The unmap itself comes a few thousand cycles after 100,000: mmap, the fault.)
    assert!(
        switches[1] - close < 20_000,
        "closed by the switch to the second process: {close} {switches:?}"
    );
}

/// xpfo-deferred's exposure, CPU by CPU: each unmap exposes every other CPU (all are marked);
/// the last CPU's window is the report's window of that unmap, and a CPU that never switched
/// keeps its window open (censored), as the report's.
#[test]
fn xpfo_deferred_exposure_per_cpu_agrees_with_the_report() {
    let k = unmaps_while_cpu1_switches(3, 2);
    let x = k.report().xpfo.unwrap();
    let log = k.exposure().kernel.unwrap();
    assert_eq!(log.operations.len() as u64, x.kernel_unmaps);
    assert_eq!((log.uses, log.missed_catch_ups), (None, 0));
    for op in &log.operations {
        // CPUs 1 and 2; CPU 2 stays idle and never switches.
        assert_eq!(op.windows.len(), 2);
        assert!(op.windows[0].is_some() && op.windows[1].is_none());
    }
    assert_eq!(x.censored, 2);
    // With CPU 2 online the report's windows are all censored; without it, they are CPU 1's.
    let k = unmaps_while_cpu1_switches(2, 2);
    let x = k.report().xpfo.unwrap();
    let per_cpu: Vec<u64> =
        k.exposure().kernel.unwrap().operations.iter().map(|o| o.windows[0].unwrap()).collect();
    assert_eq!(per_cpu, x.exposure_cycles);
    let s = crate::exposure::ExposureSummary::of(k.exposure().kernel.as_ref(), k.clock_mhz());
    assert_eq!(s.per_operation.closed, 2);
    assert_eq!(
        s.per_operation.cycles.unwrap().max,
        *x.exposure_cycles.iter().max().unwrap() as f64
    );
}
