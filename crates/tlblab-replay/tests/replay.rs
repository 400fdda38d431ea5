//! Replays of synthetic traces whose outcome under the model follows from tlb.c.

mod common;
use common::*;
use tlblab_kernel::Policy;
use tlblab_replay::*;

fn skylake() -> tlblab_sim::machine::MachineSpec {
    tlblab_sim::machine::builtin("skylake").unwrap()
}

fn named(name: &str) -> Policy {
    Policy::named(name).unwrap()
}

fn replay1(
    records: Vec<tlblab_flushtrace::Record>,
    policy: Policy,
    opts: &ReplayOptions,
) -> PolicyReplay {
    let r = replay(&header(2), records, &skylake(), &[policy], opts).unwrap();
    r.policies.into_iter().next().unwrap()
}

fn replayed(p: &PolicyReplay, reason: i32) -> KindCounts {
    p.tlb_flush.iter().find(|r| r.reason == reason).unwrap().replayed
}

fn recorded(p: &PolicyReplay, reason: i32) -> KindCounts {
    p.tlb_flush.iter().find(|r| r.reason == reason).unwrap().recorded
}

/// flush_tlb_mm_range() sends an IPI to every other CPU that runs the mm (should_flush_tlb():
/// loaded_mm == mm, not lazy), and flush_tlb_func() there traces a remote shootdown.
#[test]
fn a_sibling_thread_on_another_cpu_receives_every_request() {
    for switches in [true, false] {
        let p = replay1(
            two_threads(100, 1, true, switches),
            named("linux-6.18"),
            &ReplayOptions::default(),
        );
        assert!(p.complete);
        assert_eq!(p.requests_replayed, 100);
        assert_eq!(p.ipis_sent_per_cpu, vec![100, 0], "switches: {switches}");
        assert_eq!(p.ipis_received_per_cpu, vec![0, 100], "switches: {switches}");
        let remote = replayed(&p, 1);
        assert_eq!((remote.total, remote.partial), (100, 100), "switches: {switches}");
        assert_eq!(replayed(&p, 3).partial, 100);
        assert_eq!(replayed(&p, 4).total, 100);
        assert_eq!(recorded(&p, 4).total, 100);
        assert_eq!(recorded(&p, 1).total, 0, "the synthetic trace recorded no receiver side");
        assert!(p.cost.initiator_cycles > 0 && p.cost.receiver_cycles > 0);
        assert_eq!(p.cost.refill_walks, 100, "one page re-referenced per request");
        assert_eq!(p.slip.late_requests, 0);
    }
}

/// With no other CPU in mm_cpumask, flush_tlb_mm_range() flushes locally only: no reason 4,
/// no IPI.
#[test]
fn without_the_sibling_nothing_is_sent() {
    for switches in [true, false] {
        let p = replay1(
            two_threads(100, 1, false, switches),
            named("linux-6.18"),
            &ReplayOptions::default(),
        );
        assert!(p.complete);
        assert_eq!(p.requests_replayed, 100);
        assert_eq!(p.ipis_sent, 0);
        assert_eq!(p.ipis_received, 0);
        assert_eq!(replayed(&p, 1).total, 0);
        assert_eq!(replayed(&p, 4).total, 0);
        assert_eq!(replayed(&p, 3).partial, 100);
        assert!(p.cost.receiver_cycles.abs() < 1000, "{:?}", p.cost);
    }
}

/// get_flush_tlb_info(): a range of more entries than the ceiling becomes a full flush, so
/// 40-page requests are full at ceilings below 40 and partial from 40 on.
#[test]
fn the_ceiling_sweep_switches_40_page_requests_exactly_at_40() {
    let s = sweep_ceiling(
        &header(2),
        two_threads(50, 40, true, true),
        &skylake(),
        &named("linux-6.18"),
        &[33, 39, 40, 64],
        &ReplayOptions::default(),
    )
    .unwrap();
    let full: Vec<u64> = s.rows.iter().map(|r| r.requests_full).collect();
    assert_eq!(full, vec![50, 50, 0, 0]);
    let local: Vec<(u64, u64)> =
        s.rows.iter().map(|r| (replayed(r, 3).full, replayed(r, 3).partial)).collect();
    assert_eq!(local, vec![(50, 0), (50, 0), (0, 50), (0, 50)]);
    let remote: Vec<(u64, u64)> =
        s.rows.iter().map(|r| (replayed(r, 1).full, replayed(r, 1).partial)).collect();
    assert_eq!(remote, vec![(50, 0), (50, 0), (0, 50), (0, 50)]);
    for r in &s.rows {
        assert!(r.complete);
        assert_eq!(r.ipis_sent, 50);
    }
    // 40 INVLPGs cost more than one CR3 write on the initiator.
    assert!(s.rows[2].cost.initiator_cycles > s.rows[1].cost.initiator_cycles, "{:?}", s.rows);
    assert!(render_sweep(&s).contains("ceiling"));
}

/// A request recorded as full (-1) has no size: it stays full at every ceiling.
#[test]
fn censored_requests_stay_full_at_every_ceiling() {
    let s = sweep_ceiling(
        &header(2),
        two_threads(30, -1, true, true),
        &skylake(),
        &named("linux-6.18"),
        &[1, 33, 64, 512],
        &ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(s.trace.requests.censored, 30);
    for r in &s.rows {
        assert_eq!((r.requests_full, r.requests_censored, r.requests_partial), (30, 30, 0));
        assert_eq!(replayed(r, 3).full, 30, "ceiling {}", r.ceiling);
        assert_eq!(replayed(r, 1).full, 30, "ceiling {}", r.ceiling);
    }
}

/// PTI, one-page flushes: pti-invpcid adds an INVPCID per page on the initiator and on each
/// receiver; pti-deferred instead marks the user PCID, which is flushed whole on the way back
/// to user space, so a working set larger than the flush is refilled.
#[test]
fn pti_deferred_is_cheaper_to_flush_and_dearer_to_refill_than_pti_invpcid() {
    let invpcid = named("linux-6.18+pti-invpcid");
    let deferred = named("linux-6.18+pti-deferred");
    let opts = ReplayOptions { refill: Refill::WorkingSet(64), ..ReplayOptions::default() };
    let r = replay(
        &header(2),
        two_threads(100, 1, true, true),
        &skylake(),
        &[invpcid, deferred],
        &opts,
    )
    .unwrap();
    let (i, d) = (&r.policies[0], &r.policies[1]);
    assert!(i.cost.initiator_cycles > d.cost.initiator_cycles, "{:?} vs {:?}", i.cost, d.cost);
    assert!(i.cost.receiver_cycles > d.cost.receiver_cycles, "{:?} vs {:?}", i.cost, d.cost);
    assert_eq!(i.cost.refill_walks, 100, "INVPCID drops the one page");
    assert_eq!(d.cost.refill_walks, 6400, "the whole user PCID: 64 pages per request");
}

/// Process 10: thread 11 runs on CPU 1 for the first 0.5 ms, then process 20 takes CPU 1 for
/// 1.5 s; thread 10 on CPU 0 flushes one page every 10 ms.
fn stale_cpumask_trace() -> Vec<tlblab_flushtrace::Record> {
    let end = 1_500_000_000;
    let mut r =
        vec![task(10, 10), task(11, 10), task(20, 20), switch(0, 0, 0, 10), switch(0, 1, 0, 11)];
    r.push(switch(500_000, 1, 11, 20));
    let mut ts = 1_000_000;
    while ts < end {
        r.push(flush(ts, 0, 10, 3, 1));
        ts += 10_000_000;
    }
    r.push(other(end, 0, 10));
    r
}

/// 6.14+ (lazy mm_cpumask): CPU 1 keeps its bit after switching to process 20, so each flush
/// goes through native_flush_tlb_multi() (reason 4) without an IPI (should_flush_tlb(): another
/// mm is loaded) until, a second on, trim_cpumask IPIs it once and it drops the bit (reason 5).
/// Before 6.14 the switch cleared the bit: local flushes only.
#[test]
fn lazy_cpumask_keeps_a_stale_bit_until_the_trim_eager_clears_it_at_the_switch() {
    let lazy = named("linux-6.18");
    let eager =
        Policy { name: "eager".into(), lazy_cpumask: false, trim_cpumask: false, ..lazy.clone() };
    let untrimmed = Policy { name: "untrimmed".into(), trim_cpumask: false, ..lazy.clone() };
    let r = replay(
        &header(2),
        stale_cpumask_trace(),
        &skylake(),
        &[lazy, eager, untrimmed],
        &ReplayOptions::default(),
    )
    .unwrap();
    let (l, e, u) = (&r.policies[0], &r.policies[1], &r.policies[2]);
    for p in [l, e, u] {
        assert!(p.complete, "{}", p.policy);
        assert_eq!(p.requests_replayed, 150);
        assert_eq!(replayed(p, 3).partial, 150, "{}", p.policy);
    }
    assert_eq!((l.ipis_sent, replayed(l, 5).total), (1, 1), "one trim IPI");
    assert!(replayed(l, 4).total >= 99 && replayed(l, 4).total < 150, "{:?}", replayed(l, 4));
    assert_eq!((e.ipis_sent, replayed(e, 4).total, replayed(e, 5).total), (0, 0, 0));
    assert_eq!((u.ipis_sent, replayed(u, 4).total, replayed(u, 5).total), (0, 150, 0));
}

/// Batched reclaim (reason 2) is a direct reclaim of another process's page: its mm runs on
/// CPU 1, so the batch IPIs CPU 1.
#[test]
fn a_batched_reclaim_reaches_the_cpu_of_the_victim() {
    let mut r = vec![task(10, 10), task(20, 20), switch(0, 0, 0, 10), switch(0, 1, 0, 20)];
    for i in 0..20 {
        r.push(flush(1_000_000 + i * 100_000, 0, 10, 2, -1));
    }
    r.push(other(4_000_000, 0, 10));
    let p = replay1(r, named("linux-6.18"), &ReplayOptions::default());
    assert_eq!(p.requests_batch, 20);
    assert_eq!(p.ipis_received_per_cpu, vec![0, 20]);
    assert_eq!(replayed(&p, 1).full, 20, "a batch flush is full");
}

#[test]
fn the_same_input_and_seed_give_the_same_report() {
    let run = || {
        let r = replay(
            &header(2),
            two_threads(60, 3, true, false),
            &skylake(),
            &[named("linux-6.18"), named("linux-4.14")],
            &ReplayOptions { refill: Refill::WorkingSet(16), ..ReplayOptions::default() },
        )
        .unwrap();
        serde_json::to_string(&r).unwrap()
    };
    assert_eq!(run(), run());
}

#[test]
fn records_out_of_order_beyond_the_tolerance_are_refused() {
    let mut r = two_threads(5, 1, false, true);
    r.push(flush(10, 0, 10, 3, 1));
    let n = r.len() as u64 - 1;
    let e = replay(&header(2), r, &skylake(), &[named("linux-6.18")], &ReplayOptions::default())
        .unwrap_err();
    assert!(matches!(e, ReplayError::OutOfOrder { index, .. } if index == n), "{e}");
    assert!(e.to_string().contains(&format!("record {n}")), "{e}");
    // Within the tolerance it is accepted and counted.
    let mut r = two_threads(5, 1, false, true);
    let last = r.last().unwrap().ts_ns();
    r.push(flush(last - 5_000, 0, 10, 3, 1));
    let ok = replay(&header(2), r, &skylake(), &[named("linux-6.18")], &ReplayOptions::default())
        .unwrap();
    assert_eq!(ok.trace.reordered_records, 1);
}

/// A quiet stretch (no record) is replayed as at most 2 s: after a gap of 3 s, of 10^15 ns
/// (11.6 days) or of 2^62 ns (146 years) the policy's figures are the same, and the replay
/// takes as long (the work follows the records, not the span).
#[test]
fn quiet_gaps_are_replayed_as_two_seconds_whatever_their_length() {
    let with_gap = |gap: u64| {
        let r: Vec<_> = two_threads(20, 1, true, true)
            .into_iter()
            .map(|mut r| {
                if r.ts_ns() > 1_520_000 {
                    let ts = r.ts_ns() + gap;
                    match &mut r {
                        tlblab_flushtrace::Record::Flush(f) => f.ts_ns = ts,
                        tlblab_flushtrace::Record::Other(o) => o.ts_ns = ts,
                        other => panic!("{other:?}"),
                    }
                }
                r
            })
            .collect();
        let start = std::time::Instant::now();
        let report =
            replay(&header(2), r, &skylake(), &[named("linux-6.18")], &ReplayOptions::default())
                .unwrap();
        (report, start.elapsed())
    };
    let (short, _) = with_gap(3_000_000_000);
    assert_eq!((short.trace.quiet_gaps, short.trace.quiet_ns_skipped), (1, 1_000_049_500));
    let policy = serde_json::to_value(&short.policies).unwrap();
    assert!(short.policies[0].complete);
    assert_eq!(short.policies[0].ipis_sent_per_cpu, vec![20, 0]);
    for gap in [1_000_000_000_000_000, 1 << 62] {
        let (long, took) = with_gap(gap);
        assert_eq!(long.trace.span_ns + 3_000_000_000, short.trace.span_ns + gap);
        assert_eq!(long.trace.quiet_ns_skipped + 3_000_000_000, short.trace.quiet_ns_skipped + gap);
        assert_eq!(serde_json::to_value(&long.policies).unwrap(), policy, "gap {gap}");
        assert!(took < std::time::Duration::from_secs(20), "gap {gap}: {took:?}");
    }
}

/// A record at the same time as the one before it is in order, even at the top of the u64
/// range, where adding the tolerance would overflow; one far back from it is refused with the
/// true distance.
#[test]
fn order_checks_near_the_top_of_the_clock_do_not_wrap() {
    let top = u64::MAX - 1_000;
    let plan = Plan::build(
        &header(1),
        vec![flush(top, 0, 10, 3, 1), flush(top, 0, 10, 3, 1), flush(u64::MAX, 0, 10, 3, 1)],
        &ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!((plan.summary.records, plan.summary.span_ns), (3, 1_000));
    let e = Plan::build(
        &header(1),
        vec![flush(top, 0, 10, 3, 1), flush(top - 20_000, 0, 10, 3, 1)],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("is 20000 ns before the previous record's"), "{e}");
}

#[test]
fn a_cpu_beyond_the_simulated_ones_is_refused() {
    let mut r = two_threads(5, 1, true, true);
    r.push(flush(100_000_000, 2, 10, 3, 1));
    let opts = ReplayOptions { cpus: Some(2), ..ReplayOptions::default() };
    let e = replay(&header(2), r, &skylake(), &[named("linux-6.18")], &opts).unwrap_err();
    assert!(matches!(e, ReplayError::CpuOutOfRange { cpu: 2, cpus: 2, .. }), "{e}");
    let e = replay(
        &header(2),
        vec![flush(0, 5000, 1, 3, 1)],
        &skylake(),
        &[named("linux-6.18")],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ReplayError::CpuOutOfRange { cpu: 5000, .. }), "{e}");
}

#[test]
fn a_trace_without_requests_and_impossible_settings_are_refused() {
    let only_outcomes = vec![flush(0, 1, 11, 1, 1), switch(10, 0, 0, 10)];
    let e = replay(
        &header(2),
        only_outcomes,
        &skylake(),
        &[named("linux-6.18")],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ReplayError::NothingToReplay), "{e}");
    let high = Policy { tlb_single_page_flush_ceiling: 1 << 20, ..named("linux-6.18") };
    let e = replay(
        &header(2),
        two_threads(2, 1, false, true),
        &skylake(),
        &[high],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ReplayError::CeilingTooHigh { .. }), "{e}");
    let e = sweep_ceiling(
        &header(2),
        two_threads(2, 1, false, true),
        &skylake(),
        &named("linux-6.18"),
        &[],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ReplayError::EmptySweep), "{e}");
    let e = replay(
        &header(2),
        two_threads(2, 1, false, true),
        &skylake(),
        &[named("linux-6.18+invlpgb")],
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(e, ReplayError::Kernel { .. }), "{e}");
}

/// Thread 10 leaves CPU 0 at 1 ms for CPU 1 (sched_setaffinity: 22.5 µs on skylake), where
/// thread 11 stops at 1 ms + `offset`; thread 10 then sleeps until 1.2 ms and flushes at 1.5
/// ms. Some offsets queue thread 10 on CPU 1 while CPU 1 switches to idle: the kernel's idle
/// loop checks need_resched before halting, so the thread must run then (the model once lost
/// this wake-up, and the replay stalled).
#[test]
fn a_thread_queued_while_its_cpu_goes_idle_runs() {
    for offset in (21_000..24_000).step_by(100) {
        let mut r = vec![
            task(10, 10),
            task(11, 10),
            switch(0, 0, 0, 10),
            switch(0, 1, 0, 11),
            switch(1_000_000 + offset, 1, 11, 0),
            switch(1_000_000, 0, 10, 0),
            switch(1_200_000, 1, 0, 10),
            flush(1_500_000, 1, 10, 3, 1),
            other(2_000_000, 1, 10),
        ];
        r.sort_by_key(|r| r.ts_ns());
        let p = replay1(r, named("linux-6.18"), &ReplayOptions::default());
        assert!(p.complete, "offset {offset}");
        assert_eq!(p.requests_replayed, 1);
        assert_eq!(p.slip.late_requests, 0, "offset {offset}: the flush ran late");
    }
}

/// A point made on its own against a shared twin (how study S10 runs the sweep, one job per
/// ceiling) is the row the whole sweep gives for that ceiling: same layout, same twin.
#[test]
fn a_point_against_a_shared_twin_is_the_sweeps_row() {
    let records = two_threads(40, 40, true, true);
    let opts = ReplayOptions { refill: Refill::WorkingSet(64), ..ReplayOptions::default() };
    let policy = named("linux-6.18");
    let ceilings = [1, 39, 40, 64];
    let plan = std::sync::Arc::new(Plan::build(&header(2), records, &opts).unwrap());
    let sweep = sweep_plan(&plan, &header(2), &skylake(), &policy, &ceilings, &opts).unwrap();
    let twin = twin_run(&plan, &skylake(), &policy, 64, &opts).unwrap();
    for (&c, row) in ceilings.iter().zip(&sweep.rows) {
        let at = Policy { tlb_single_page_flush_ceiling: c, ..policy.clone() };
        let (point, kernel) =
            replay_point(&plan, &header(2), &skylake(), &at, &twin, &opts).unwrap();
        assert_eq!(
            (point.requests_full, point.requests_partial, point.ipis_sent),
            (row.requests_full, row.requests_partial, row.ipis_sent),
            "ceiling {c}"
        );
        assert_eq!(
            (point.cost.initiator_cycles, point.cost.receiver_cycles, point.cost.refill_cycles),
            (row.cost.initiator_cycles, row.cost.receiver_cycles, row.cost.refill_cycles),
            "ceiling {c}"
        );
        assert!(kernel.events > 0);
    }
    // A twin laid out for lower ceilings, or of another seed, is refused.
    let low = Policy { tlb_single_page_flush_ceiling: 65, ..policy.clone() };
    assert!(matches!(
        replay_point(&plan, &header(2), &skylake(), &low, &twin, &opts),
        Err(ReplayError::TwinMismatch { ceiling: 65, top: 64, .. })
    ));
    let other = ReplayOptions { seed: 2, ..opts.clone() };
    assert!(replay_point(&plan, &header(2), &skylake(), &policy, &twin, &other).is_err());
}

/// A trace whose header says the machine flushes with INVLPGB (Linux 6.15+): the replay says
/// first what it cannot infer; a trace from the same CPU on 6.14, or without the flag, does not.
#[test]
fn a_trace_from_an_invlpgb_machine_says_what_the_replay_cannot_see() {
    let amd = |release: &str, flags: &[&str]| {
        let mut h = header(2);
        h.kernel_release = Some(release.into());
        h.cpu = Some(tlblab_flushtrace::CpuInfo {
            vendor: "AuthenticAMD".into(),
            model_name: "AMD EPYC 9654 96-Core Processor".into(),
            family: Some(25),
            model: Some(17),
            flags: flags.iter().map(|f| (*f).to_string()).collect(),
        });
        h
    };
    let zen4 = tlblab_sim::machine::builtin("zen4").unwrap();
    let said = |h: &tlblab_flushtrace::Header| {
        let r = replay(
            h,
            two_threads(10, 1, true, true),
            &zen4,
            &[named("linux-6.18")],
            &ReplayOptions::default(),
        )
        .unwrap();
        let s = sweep_ceiling(
            h,
            two_threads(10, 1, true, true),
            &zen4,
            &named("linux-6.18"),
            &[1, 33],
            &ReplayOptions::default(),
        )
        .unwrap();
        assert_eq!(
            r.assumptions.first() == Some(&BROADCAST_FLUSH.to_string()),
            s.assumptions.first() == Some(&BROADCAST_FLUSH.to_string())
        );
        render_replay(&r).contains("cannot see those requests")
            && r.assumptions.first() == Some(&BROADCAST_FLUSH.to_string())
    };
    assert!(said(&amd("6.15.2", &["pcid", "invpcid", "invlpgb"])));
    assert!(!said(&amd("6.14.8", &["pcid", "invpcid", "invlpgb"])));
    assert!(!said(&amd("6.18.44", &["pcid", "invpcid"])));
    assert!(!said(&header(2)));
}
