//! XPFO: synchronous and deferred kernel flushes, and their exposure windows.

use super::*;
use crate::kernel::xpfo::{EXEC_EVENTS, LOCKED_RMW_CYCLES};
use crate::mechanisms::{Mechanism, Mechanisms};
use crate::stats::XpfoEventCounts;

/// The model before `xpfo-events`: the unmap at allocation only.
const ALLOC_ONLY: &[Mechanism] = &[Mechanism::XpfoEvents, Mechanism::XpfoDirectMap4k];

/// [`kernel`] with the mechanisms `off` switched off.
fn kernel_off(policy: &str, cpus: usize, off: &[Mechanism]) -> Kernel<TraceLog> {
    let mechanisms = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
    let config = KernelConfig::new(cpus, 7).with_mechanisms(mechanisms);
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let mut k =
        Kernel::new(&spec, &Policy::named(policy).unwrap(), config, TraceLog::default()).unwrap();
    k.set_max_cstate(1);
    k
}

/// One process on CPU 0 writes one new page (one page handed to user space), the model
/// before `xpfo-events`.
fn one_page(policy: &str, cpus: usize, then: Vec<Step>) -> Kernel<TraceLog> {
    one_page_off(policy, cpus, then, ALLOC_ONLY)
}

/// [`one_page`] with the mechanisms `off` switched off.
fn one_page_off(policy: &str, cpus: usize, then: Vec<Step>, off: &[Mechanism]) -> Kernel<TraceLog> {
    let mut k = kernel_off(policy, cpus, off);
    let mut steps = vec![Step::Mmap(1), Step::Store(0, 0, 1)];
    steps.extend(then);
    k.spawn_process(script(steps), C0, true);
    k.run();
    k
}

/// xpfo-sync, the unmap at allocation alone: flush_tlb_kernel_range() interrupts every other
/// online CPU, idle or not, with a function-call IPI (the CAL row, not TLB), emits no tlb_flush event, and the window closes
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
    unmaps_while_cpu1_switches_off(cpus, pages, ALLOC_ONLY)
}

/// [`unmaps_while_cpu1_switches`] with the mechanisms `off` switched off.
fn unmaps_while_cpu1_switches_off(cpus: usize, pages: u64, off: &[Mechanism]) -> Kernel<TraceLog> {
    let mut k = kernel_off("linux-4.14+xpfo-deferred", cpus, off);
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

/// The event counts of a run with `xpfo-events` on.
fn events(k: &Kernel<TraceLog>) -> XpfoEventCounts {
    k.report().xpfo.unwrap().events.expect("xpfo-events is on")
}

/// xpfo-sync, every event: an anonymous write fault is an unmap at allocation and a
/// kmap/kunmap around clear_highpage(), so two flush_tlb_kernel_range()s, each interrupting
/// every other CPU; both windows close before the fault returns. The page is mapped back
/// (no flush) when exit_mmap() frees it.
#[test]
fn xpfo_sync_anon_fault_is_two_flushes_on_every_cpu() {
    let k = one_page_off("linux-4.14+xpfo-sync", 4, vec![], &[]);
    let r = k.report();
    let x = r.xpfo.as_ref().unwrap();
    assert_eq!((x.kernel_unmaps, x.ipis, x.censored), (2, 6, 0));
    assert_eq!(x.exposure_cycles.len(), 2);
    assert_eq!(r.irq_cal, [0, 2, 2, 2]);
    assert_eq!(r.vmstat.nr_tlb_local_flush_one, 8);
    let e = x.events.unwrap();
    assert_eq!((e.alloc_unmaps, e.kmaps, e.kunmaps, e.frees, e.mask_transfers), (1, 1, 1, 1, 0));
    // The zeroing's reference through the 4 KiB direct map walks: the unmap flushed it.
    assert_eq!(e.direct_map_refs, 1);
    assert!(e.direct_map_cycles > 0);
    // Alloc-only, the same fault is one flush.
    let old = one_page("linux-4.14+xpfo-sync", 4, vec![]).report();
    assert_eq!(old.xpfo.unwrap().kernel_unmaps, 1);
    assert!(r.tasks[0].sys_cycles > old.tasks[0].sys_cycles);
}

/// A copy-on-write copy (wp_page_copy() → copy_user_highpage()): an unmap at allocation,
/// then kmap_atomic() of the source and of the copy and their kunmap_atomic()s: three flushes,
/// three IPIs each on 4 CPUs. The child's write to the zero page it inherited is two (an
/// allocation zeroed), as a first write is.
#[test]
fn xpfo_sync_cow_copy_is_three_flushes() {
    // The parent writes page 0 and reads page 1 (the zero page), then forks; the child writes
    // both (a copy-on-write copy, a zero-page copy).
    let with = |cow: bool| {
        let child = Step::Store(0, if cow { 0 } else { 1 }, 1);
        let steps = vec![
            Step::Mmap(2),
            Step::Store(0, 0, 1),
            Step::Load(0, 1, 1),
            Step::Fork(vec![child]),
            Step::Wait,
        ];
        let mut k = kernel_off("linux-4.14+xpfo-sync", 4, &[]);
        k.spawn_process(script(steps), C0, true);
        assert!(k.run());
        k
    };
    let cow = with(true);
    let e = events(&cow);
    let x = cow.report().xpfo.unwrap();
    // Parent: 1 fault (2 unmaps); child: the copy (1 + 2). Every unmap interrupts 3 CPUs.
    assert_eq!((e.alloc_unmaps, e.kmaps, e.kunmaps), (2, 3, 3));
    assert_eq!((x.kernel_unmaps, x.ipis), (5, 15));
    let zero = with(false);
    let (e, x) = (events(&zero), zero.report().xpfo.unwrap());
    assert_eq!((e.alloc_unmaps, e.kmaps, e.kunmaps), (2, 2, 2));
    assert_eq!((x.kernel_unmaps, x.ipis), (4, 12));
}

/// execve() of a dynamically linked binary: the argument page (allocated zeroed, written by
/// three copy_strings()), five kernel_read()s of page-cache pages, two padzero() copies.
#[test]
fn xpfo_exec_events() {
    let mut k = kernel_off("linux-4.14+xpfo-sync", 2, &[]);
    k.spawn_process(script(vec![Step::Exec(vec![])]), C0, true);
    assert!(k.run());
    let e = events(&k);
    let x = k.report().xpfo.unwrap();
    let ex = EXEC_EVENTS;
    assert_eq!(e.alloc_unmaps, 1 + u64::from(ex.cow_copies));
    let pairs = 1 + ex.arg_page_copies + ex.reads + 2 * ex.cow_copies;
    assert_eq!((e.kmaps, e.kunmaps), (u64::from(pairs), u64::from(pairs)));
    assert_eq!(x.kernel_unmaps, e.alloc_unmaps + e.kunmaps);
    assert_eq!((x.ipis, x.censored), (x.kernel_unmaps, 0));
}

/// xpfo-deferred, every event: no IPI; each unmap (two per anonymous fault) flushes locally,
/// marks the other CPUs and opens a window, and each window closes at CPU 1's next mm switch.
/// pending_xpfo_flush's line moves between CPU 0's unmaps and CPU 1's switches.
#[test]
fn xpfo_deferred_events_and_the_pending_mask() {
    let k = unmaps_while_cpu1_switches_off(2, 2, &[]);
    let x = k.report().xpfo.unwrap();
    let e = x.events.unwrap();
    assert_eq!((e.alloc_unmaps, e.kmaps, e.kunmaps), (2, 2, 2));
    assert_eq!((x.kernel_unmaps, x.ipis, x.censored), (4, 0, 0));
    assert_eq!(x.full_flushes, 1, "CPU 1 catches up on all four at one switch");
    let log = k.exposure().kernel.unwrap();
    assert_eq!(log.operations.len(), 4);
    // Every switch_mm_irqs_off() writes the mask (a locked bit operation), and so does every
    // unmap: the line moves each time the writer changes. Writers in order: CPU 0 and CPU 1
    // switch to their first processes (1 transfer), CPU 0's four unmaps (1), CPU 1's switch
    // to its second process at the tick (1), and back to the first when that one exits (0).
    assert_eq!(e.mask_transfers, 3, "{e:?}");
    // On one CPU the line never moves.
    let mut k = kernel_off("linux-4.14+xpfo-deferred", 1, &[]);
    k.spawn_process(script(vec![Step::Mmap(4), Step::Store(0, 0, 4)]), C0, true);
    assert!(k.run());
    assert_eq!(events(&k).mask_transfers, 0);
    // xpfo-sync has no mask.
    let k = one_page_off("linux-4.14+xpfo-sync", 2, vec![], &[]);
    assert_eq!(events(&k).mask_transfers, 0);
}

/// The mask's cost where it is exact: on one CPU under xpfo-deferred (no other CPU to mark,
/// so no transfer), the events cost their locked operations, lookups and one more local
/// INVLPG per kmap pair, and the direct-map reference's walk.
#[test]
fn xpfo_deferred_event_costs_on_one_cpu() {
    let run = |off: &[Mechanism]| {
        let mut k = kernel_off("linux-4.14+xpfo-deferred", 1, off);
        k.spawn_process(script(vec![Step::Mmap(1), Step::Store(0, 0, 1)]), C0, true);
        assert!(k.run());
        k
    };
    let (on, old) = (run(&[]), run(ALLOC_ONLY));
    let e = events(&on);
    let c = on.costs.clone();
    let lookup = 4 * c.l1d_load.cycles;
    let expected = (2 * LOCKED_RMW_CYCLES + 2 * lookup) // xpfo_alloc_pages()
        + (6 * LOCKED_RMW_CYCLES + 3 * lookup + 200) // kmap, kunmap, its INVLPG
        + e.direct_map_cycles
        + (2 * LOCKED_RMW_CYCLES + lookup) // xpfo_free_pages() at exit
        + LOCKED_RMW_CYCLES; // cpumask_test_and_clear_cpu() at the switch to the process
    let sys = |k: &Kernel<TraceLog>| k.report().tasks[0].time_as_reported().1;
    assert_eq!(sys(&on) - sys(&old), expected);
}

/// Off is the model before: without an XPFO policy the mechanisms change nothing, and with
/// xpfo-events off, xpfo-direct-map-4k has nothing to act on.
#[test]
fn xpfo_mechanisms_off_change_nothing_where_they_do_not_act() {
    let json = |policy: &str, off: &[Mechanism]| {
        let k = one_page_off(policy, 3, vec![Step::Fork(vec![Step::Store(0, 0, 1)])], off);
        serde_json::to_string(&k.report()).unwrap()
    };
    assert_eq!(json("linux-4.14", &[]), json("linux-4.14", ALLOC_ONLY));
    for p in ["linux-4.14+xpfo-sync", "linux-4.14+xpfo-deferred"] {
        let events_off = [Mechanism::XpfoEvents];
        assert_eq!(json(p, &events_off), json(p, ALLOC_ONLY), "{p}");
        assert_ne!(json(p, &[]), json(p, ALLOC_ONLY), "{p}");
    }
}
