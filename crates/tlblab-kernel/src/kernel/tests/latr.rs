//! LATR: the flushes of munmap and MADV_DONTNEED send no IPI; the CPU that would have been
//! interrupted applies the state at its next tick, and the checker counts its stale uses until
//! then as exposure (docs/safety.md §4.4).

use super::*;
use crate::workloads::{scenario, Params};

/// CPU `cpu`'s first tick: `Kernel::new` draws each CPU's phase in turn from the run's seed
/// (7, see `kernel_on`), uniformly in `1..=tick`.
fn first_tick(k: &Kernel<TraceLog>, cpu: CpuId) -> u64 {
    let mut phase = Pcg64Mcg::seed_from_u64(7);
    (0..=cpu.0).map(|_| phase.random_range(1..=k.tick_cycles)).last().unwrap()
}

/// Times of the events of `reason` on `cpu`.
fn traced_at(k: &Kernel<TraceLog>, cpu: CpuId, reason: TlbFlushReason) -> Vec<u64> {
    k.observer()
        .events
        .iter()
        .filter(|e| e.cpu == cpu && e.reason == reason)
        .map(|e| e.time.0)
        .collect()
}

/// What one run showed.
struct Run {
    k: Kernel<TraceLog>,
    /// The tick of CPU 1 just before the reader started.
    tick_before: u64,
}

/// A process on CPU 0 maps `regions` regions of 4 pages, writes the first and blocks. Just
/// after one of CPU 1's ticks, a thread of it on CPU 1 reads the 4 pages, wakes the process,
/// computes 200,000 cycles, reads them again, computes for a whole tick period and reads them
/// once more. The process meanwhile does `op` on the first region, counts an operation and
/// exits.
fn reader_across_a_tick(policy: &str, regions: usize, op: Step, never_apply: bool) -> Run {
    let mut k = kernel(policy, 2);
    k.enable_checker();
    if let Some(l) = k.latr.as_deref_mut() {
        l.never_apply = never_apply;
    }
    let tick = k.tick_cycles;
    let fd = k.eventfd();
    let mut steps: Vec<Step> = (0..regions).map(|_| Step::Mmap(4)).collect();
    steps.extend([Step::Store(0, 0, 4), Step::Read(fd), op, Step::Op, Step::Compute(1_000)]);
    let main = k.spawn_process(script(steps), C0, true);
    // The first of CPU 1's ticks after the process has written its pages.
    let t1 = first_tick(&k, C1);
    let tick_before = if t1 >= 1_000_000 { t1 } else { t1 + tick };
    k.run_until(Cycles(tick_before));
    let reader = vec![
        Step::Load(0, 0, 4),
        Step::Write(fd),
        Step::Compute(200_000),
        Step::Load(0, 0, 4),
        Step::Compute(tick),
        Step::Load(0, 0, 4),
    ];
    // The thread shares the process's regions: the first is `VmaId(0)`.
    let reader = Script { steps: reader.into(), vmas: vec![VmaId(0)], child: None };
    k.spawn_thread(main, Box::new(reader), C1, true);
    assert!(k.run());
    Run { k, tick_before }
}

/// MADV_DONTNEED under LATR: no IPI; the process returns at once (its operation completes
/// long before the reader's CPU flushes); CPU 1 flushes at exactly its next tick, and the
/// exposure window is that tick minus the completion. The reader's reads in between use the
/// stale entries: exposure, not violations. Under linux-6.18 the same flush interrupts CPU 1
/// before the process's madvise returns.
#[test]
fn a_latr_madvise_sends_no_ipi_and_the_reader_flushes_at_its_next_tick() {
    let Run { k, tick_before } = reader_across_a_tick("latr", 1, Step::Madvise(0, 0, 4), false);
    let next_tick = tick_before + k.tick_cycles;
    // CPU 0 sent no flush IPI (CPU 1's one is the exit's teardown, which frees page tables).
    assert_eq!(k.counters.ipis_sent, [0, 1]);
    // As the prototype, the initiator traces and counts the remote flush it no longer sends.
    assert_eq!(traced(&k, C0, TlbFlushReason::RemoteSendIpi), [4]);
    // The state, applied by flush_tlb_func() in CPU 1's tick: a 4-page flush, exactly then.
    assert_eq!(traced_at(&k, C1, TlbFlushReason::RemoteShootdown), [next_tick]);
    assert_eq!(traced(&k, C1, TlbFlushReason::RemoteShootdown), [4]);
    // The madvise completed when its system call returned: half a system call before the
    // process counted its operation.
    let r = k.report();
    let completed = r.tasks[0].last_op.0 - k.costs.syscall.cycles / 2;
    assert!(tick_before < completed && completed + 300_000 < next_tick, "returned at once");
    let user = k.exposure().user.unwrap();
    assert_eq!(user.operations.len(), 1);
    assert_eq!(user.operations[0].completed_at, completed);
    assert_eq!(user.operations[0].windows, [Some(next_tick - completed)]);
    // The second read: 4 pages through stale entries, each judged twice (the model faults on
    // the cleared PTE, as without the checker, and the retry hits the same entry).
    assert_eq!(user.uses, Some(8));
    assert_eq!(user.missed_catch_ups, 0);
    assert_eq!(k.violations(), &[]);

    let Run { k, .. } = reader_across_a_tick("linux-6.18", 1, Step::Madvise(0, 0, 4), false);
    assert_eq!(k.counters.ipis_sent, [1, 1]);
    let flushed = traced_at(&k, C1, TlbFlushReason::RemoteShootdown);
    let completed = k.report().tasks[0].last_op.0 - k.costs.syscall.cycles / 2;
    assert!(flushed.len() == 1 && flushed[0] < completed, "{flushed:?} before {completed}");
    assert_eq!(k.exposure().user, None, "linux-6.18 declares no deferral");
    assert_eq!(k.violations(), &[]);
}

/// A munmap that frees no page table (a neighbouring region shares its PTE page) is deferred
/// too; one that frees its page table stays synchronous: the model frees tables at completion.
#[test]
fn a_latr_munmap_is_deferred_unless_it_frees_page_tables() {
    let Run { k, tick_before } = reader_across_a_tick("latr", 2, Step::Munmap(0), false);
    let next_tick = tick_before + k.tick_cycles;
    assert_eq!(k.counters.ipis_sent[0], 0);
    assert_eq!(traced_at(&k, C1, TlbFlushReason::RemoteShootdown), [next_tick]);
    let completed = k.report().tasks[0].last_op.0 - k.costs.syscall.cycles / 2;
    let user = k.exposure().user.unwrap();
    assert_eq!(user.operations[0].windows, [Some(next_tick - completed)]);
    // The reader's later reads find no region (a SIGSEGV in the model): nothing is judged.
    assert_eq!((user.uses, k.violations().len()), (Some(0), 0));

    let Run { k, .. } = reader_across_a_tick("latr", 1, Step::Munmap(0), false);
    assert_eq!(k.counters.ipis_sent[0], 1, "freed tables: an IPI");
    assert_eq!(k.exposure().user.unwrap().operations, []);
}

/// A LATR that never applies its states: CPU 1's tick passes while it still runs the mm with
/// the stale entries, so the deferral failed there; its read after the tick is a violation,
/// its read before it still exposure.
#[test]
fn a_latr_that_never_applies_its_states_is_caught_at_the_next_tick() {
    let Run { k, tick_before } = reader_across_a_tick("latr", 1, Step::Madvise(0, 0, 4), true);
    let next_tick = tick_before + k.tick_cycles;
    assert!(traced(&k, C1, TlbFlushReason::RemoteShootdown).is_empty());
    let user = k.exposure().user.unwrap();
    assert_eq!((user.uses, user.missed_catch_ups), (Some(8), 1));
    let v = k.violations();
    assert_eq!(v.len(), 4, "the third read, one per page: {v:?}");
    for v in v {
        assert_eq!((v.kind, v.cpu), (ViolationKind::StaleAfterCompletion, C1));
        assert!(v.used_at.0 > next_tick && v.filled_at.0 < v.settled_at.unwrap().0);
    }
    // Never flushed while the run lasted: the window is censored.
    assert_eq!(user.operations[0].windows, [None]);
}

/// shared-writers under LATR: readers keep using the writers' pages after each MADV_DONTNEED
/// returns. None of it is a violation, some of it is exposure, and the exposure is the same
/// when the run is repeated.
#[test]
fn shared_writers_under_latr_show_exposure_and_no_violation() {
    let p = Params { tasks: 2, pages: 8, iterations: 10, ..Params::default() };
    let run = |seed: u64| {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let config = KernelConfig::new(4, seed);
        let policy = Policy::named("latr").unwrap();
        let mut k = Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap();
        k.enable_checker();
        k.perturb(Cycles(20_000));
        let s = scenario("shared-writers").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(s.run(&mut k, &p));
        k
    };
    for seed in 1..=3 {
        let k = run(seed);
        assert_eq!(k.violations(), &[], "seed {seed}");
        let user = k.exposure().user.unwrap();
        assert_eq!(user.operations.len(), 20, "every DONTNEED of both writers was deferred");
        assert!(user.uses.unwrap() > 0 && user.missed_catch_ups == 0);
        assert_eq!(k.exposure(), run(seed).exposure(), "deterministic");
    }
}

/// LATR needs tlb_gen, and has nothing to defer under INVLPGB.
#[test]
fn latr_is_refused_where_it_cannot_work() {
    let spec = tlblab_sim::machine::builtin("zen4").unwrap();
    let config = KernelConfig::new(2, 1);
    for name in ["linux-4.13+latr", "latr+invlpgb"] {
        let policy = Policy::named(name).unwrap();
        let e = Kernel::new(&spec, &policy, config.clone(), crate::NoObserver).err().unwrap();
        assert!(e.to_string().contains("LATR"), "{name}: {e}");
    }
}

/// A MADV_DONTNEED with no other CPU to reach is not deferred, and does not leave its task's
/// next flush deferrable: the exit's teardown, which frees page tables, still interrupts the
/// CPU that idles lazily on the mm, as under linux-6.18.
#[test]
fn only_the_unmap_flush_itself_is_deferrable() {
    let ipis = |policy: &str| {
        let mut k = kernel(policy, 2);
        k.enable_checker();
        let fd = k.eventfd();
        let steps =
            vec![Step::Mmap(4), Step::Store(0, 0, 4), Step::Madvise(0, 0, 4), Step::Read(fd)];
        let main = k.spawn_process(script(steps), C0, true);
        k.run_until(Cycles(1_000_000));
        k.spawn_thread(main, script(vec![Step::Write(fd)]), C1, true);
        assert!(k.run());
        (k.counters.ipis_sent.iter().sum::<u64>(), k.exposure().user)
    };
    assert_eq!(ipis("linux-6.18"), (1, None));
    let (sent, user) = ipis("latr");
    assert_eq!(sent, 1, "the teardown's IPI");
    assert_eq!(user.unwrap().operations, []);
}
