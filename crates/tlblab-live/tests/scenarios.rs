//! The real scenarios with tiny settings: counts, values, cleanup, affinity, interruption.
//! No timing assertions: these VMs are noisy.

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;
use std::sync::Mutex;
use std::time::Duration;
use tlblab_live::*;

/// Tests count this process's threads, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn spec(name: &str, params: LiveParams) -> ScenarioSpec {
    ScenarioSpec { name: name.into(), params }
}

/// This process's threads that tlblab-live started (named `tlblab-task<i>`): counting all
/// threads would also count the test harness's own, which come and go.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("tlblab-task"))
        .count()
}

fn cpus() -> usize {
    online_cpus().unwrap().len()
}

/// Prepares, runs `len` twice (warm-up, measured), checks the sample's sanity and that the
/// threads, children and affinity are back to what they were after the drop.
fn run_and_check(s: ScenarioSpec, len: RunLength) -> RunSample {
    let (tasks_before, affinity_before) = (threads(), thread_affinity().unwrap());
    let mut p = prepare(&s, &Placement::default()).unwrap_or_else(|e| panic!("{s:?}: {e}"));
    let info = s.info().unwrap();
    if matches!(s.params.mode, None | Some(Mode::Threads))
        && !["pingpong", "madv-migrate", "madvise-scale"].contains(&info.name)
    {
        let expected = s.params.busy.or(s.params.tasks).unwrap_or(0);
        assert_eq!(threads(), tasks_before + expected, "{s:?}: threads started");
    }
    p.run(len).unwrap();
    let sample = p.run(len).unwrap_or_else(|e| panic!("{s:?}: {e}"));
    assert!(sample.value.is_finite() && sample.value > 0.0, "{s:?}: {sample:?}");
    assert!(sample.elapsed_ns > 0 && !sample.interrupted, "{s:?}: {sample:?}");
    assert_eq!(sample.per_task_ops.iter().sum::<u64>(), sample.ops, "{s:?}");
    let pids = p.child_pids();
    drop(p);
    for pid in pids {
        // Reaped: no longer our child.
        assert_eq!(waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)), Err(Errno::ECHILD));
    }
    assert_eq!(threads(), tasks_before, "{s:?}: threads left behind");
    assert_eq!(thread_affinity().unwrap(), affinity_before, "{s:?}: affinity not restored");
    sample
}

#[test]
fn madvise_busy_counts_the_ops_asked() {
    let _g = serial();
    for busy in 0..cpus().min(2) {
        let s = run_and_check(
            spec("madvise-busy", LiveParams { busy: Some(busy), ..Default::default() }),
            RunLength::Ops(1000),
        );
        assert_eq!((s.ops, s.per_task_ops.clone()), (1000, vec![1000]));
    }
}

#[test]
fn madv_migrate_and_storm_count_the_ops_asked() {
    let _g = serial();
    if cpus() < 2 {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    assert_eq!(run_and_check(ScenarioSpec::new("madv-migrate"), RunLength::Ops(200)).ops, 200);
    for op in [StormOp::Munmap, StormOp::Mprotect] {
        let p = LiveParams { op: Some(op), busy: Some(1), pages: Some(4), ..Default::default() };
        assert_eq!(run_and_check(spec("storm", p), RunLength::Ops(300)).ops, 300);
    }
}

#[test]
fn pingpong_round_trips_with_and_without_touching() {
    let _g = serial();
    for touch in [0, 16] {
        let p = LiveParams { touch: Some(touch), ..Default::default() };
        assert_eq!(run_and_check(spec("pingpong", p), RunLength::Ops(500)).ops, 500);
    }
}

#[test]
fn multi_task_scenarios_count_every_tasks_ops() {
    let _g = serial();
    let n = cpus().min(2);
    for mode in [Mode::Threads, Mode::Processes] {
        let p =
            LiveParams { tasks: Some(n), mode: Some(mode), pages: Some(8), ..Default::default() };
        let s = run_and_check(spec("munmap-threads", p), RunLength::Ops(50));
        assert_eq!(s.per_task_ops, vec![50; n], "{mode:?}");
    }
    let s = run_and_check(
        spec("madvise-scale", LiveParams { tasks: Some(3), ..Default::default() }),
        RunLength::Ops(100),
    );
    assert_eq!(s.per_task_ops, vec![100; 3]);
}

#[test]
fn tlb_flush2_counts_pages_across_its_remaps() {
    let _g = serial();
    let n = cpus().min(2);
    for mode in [Mode::Threads, Mode::Processes] {
        let p = LiveParams { tasks: Some(n), mode: Some(mode), ..Default::default() };
        // 600 pages: two munmaps and maps of the 256-page region per run, and runs go on where
        // the last one stopped (the warm-up's 600 and these).
        let s = run_and_check(spec("tlb-flush2", p), RunLength::Ops(600));
        assert_eq!(s.per_task_ops, vec![600; n], "{mode:?}");
    }
    // More tasks than CPUs wrap around them, as will-it-scale's do.
    let p = LiveParams { tasks: Some(cpus() + 1), ..Default::default() };
    let s = run_and_check(spec("tlb-flush2", p), RunLength::Ops(300));
    assert_eq!(s.ops, 300 * (cpus() as u64 + 1));
}

/// The mappings of this process that start in `[lo, hi)`, as (start, end) byte addresses.
fn own_mappings(lo: usize, hi: usize) -> Vec<(usize, usize)> {
    std::fs::read_to_string("/proc/self/maps")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split_whitespace().next()?.split_once('-')?;
            Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?))
        })
        .filter(|&(a, _)| (lo..hi).contains(&a))
        .collect()
}

#[test]
fn tlb_flush2_region_is_a_vma_of_its_own_beside_the_page_that_keeps_its_page_table() {
    // will-it-scale's 1 MiB region never merges with a neighbour (they are libraries, stacks'
    // guard pages: other kinds of mapping), so its munmap removes a VMA rather than splitting
    // one; and its 2 MiB holds other mappings, so the munmap frees no page table. Ours: the
    // region, a one-page hole, the written anchor page, all in one 2 MiB block.
    let _g = serial();
    let p = LiveParams { tasks: Some(1), mode: Some(Mode::Threads), ..Default::default() };
    let mut prepared = prepare(&spec("tlb-flush2", p), &Placement::default()).unwrap();
    let base = prepared.address_base();
    // A run of 300 pages: the region was unmapped and mapped again once.
    prepared.run(RunLength::Ops(300)).unwrap();
    let page = 4096;
    assert_eq!(
        own_mappings(base, base + (1 << 30)),
        [(base, base + (1 << 20)), (base + (1 << 20) + page, base + (1 << 20) + 2 * page)]
    );
    assert_eq!(base % (2 << 20), 0, "region and anchor share the 2 MiB block at {base:#x}");
}

#[test]
fn pthread_mmap_does_its_fixed_work_whatever_the_run_length() {
    let _g = serial();
    let p =
        LiveParams { tasks: Some(3), pages: Some(8), iterations: Some(10), ..Default::default() };
    let s = run_and_check(spec("pthread-mmap", p), RunLength::Ops(1));
    assert_eq!(s.per_task_ops, vec![10; 3]);
    // One run is one execution: the value is its length in seconds.
    assert!((s.value - s.elapsed_ns as f64 / 1e9).abs() < 1e-12);
}

#[test]
fn timed_runs_last_at_least_their_time() {
    let _g = serial();
    let d = Duration::from_millis(50);
    let s = run_and_check(
        spec("madvise-busy", LiveParams { busy: Some(0), ..Default::default() }),
        RunLength::Time(d),
    );
    assert!(s.elapsed_ns >= d.as_nanos() as u64);
    assert_eq!(s.ops % BATCH, 0, "whole batches");
    let p = LiveParams { tasks: Some(cpus().min(2)), pages: Some(4), ..Default::default() };
    let s = run_and_check(spec("munmap-threads", p), RunLength::Time(d));
    assert!(s.per_task_ops.iter().all(|&n| n > 0), "{s:?}");
    assert!(s.elapsed_ns >= d.as_nanos() as u64);
}

/// Sets `stop` from another thread after a moment, while a run meant to last an hour goes on.
fn interrupt_long_run(s: ScenarioSpec) {
    let mut p = prepare(&s, &Placement::default()).unwrap();
    let stop = p.stop_handle();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        stop.stop();
    });
    let sample = p.run(RunLength::Time(Duration::from_secs(3600))).unwrap();
    t.join().unwrap();
    assert!(sample.interrupted && sample.ops > 0, "{s:?}: {sample:?}");
    // Once set, the flag refuses new runs until cleared.
    assert!(matches!(p.run(RunLength::Ops(10)), Err(LiveError::Interrupted)));
    p.stop_handle().clear();
    assert!(!p.run(RunLength::Ops(64)).unwrap().interrupted);
}

#[test]
fn a_stop_flag_set_from_another_thread_ends_a_long_run() {
    let _g = serial();
    let busy = cpus().min(2) - 1;
    interrupt_long_run(spec("madvise-busy", LiveParams { busy: Some(busy), ..Default::default() }));
    let p = LiveParams {
        tasks: Some(2),
        mode: Some(Mode::Processes),
        pages: Some(4),
        ..Default::default()
    };
    interrupt_long_run(spec("munmap-threads", LiveParams { tasks: Some(cpus().min(2)), ..p }));
}

#[test]
fn settings_the_machine_cannot_run_are_refused() {
    let _g = serial();
    let online = online_cpus().unwrap();
    let s = spec("madvise-busy", LiveParams { busy: Some(online.len()), ..Default::default() });
    let err = prepare(&s, &Placement::default()).err().unwrap();
    assert!(
        matches!(err, LiveError::TooFewCpus { needed, .. } if needed == online.len() + 1),
        "{err}"
    );
    let offline = (0..4096).find(|c| !online.contains(c)).unwrap();
    let s = spec("madvise-busy", LiveParams { busy: Some(0), ..Default::default() });
    let err = prepare(&s, &Placement::on(vec![offline])).err().unwrap();
    assert!(matches!(err, LiveError::CpuNotOnline { cpu, .. } if cpu == offline), "{err}");
    let err = prepare(&ScenarioSpec::new("kbuild"), &Placement::default()).err().unwrap();
    assert!(err.to_string().contains("unknown scenario \"kbuild\""), "{err}");
}

#[test]
fn two_configurations_interleave_on_one_thread() {
    let _g = serial();
    let before = thread_affinity().unwrap();
    let busy = cpus().min(2) - 1;
    let mut a = prepare(
        &spec("madvise-busy", LiveParams { busy: Some(0), ..Default::default() }),
        &Placement::default(),
    )
    .unwrap();
    let mut b = prepare(
        &spec("madvise-busy", LiveParams { busy: Some(busy), ..Default::default() }),
        &Placement::default(),
    )
    .unwrap();
    assert_ne!(a.address_base(), b.address_base());
    for _ in 0..3 {
        assert_eq!(a.run(RunLength::Ops(500)).unwrap().ops, 500);
        assert_eq!(b.run(RunLength::Ops(500)).unwrap().ops, 500);
    }
    assert_eq!(thread_affinity().unwrap(), vec![online_cpus().unwrap()[0]]);
    drop(a);
    drop(b);
    assert_eq!(thread_affinity().unwrap(), before);
}

#[test]
fn a_killed_child_is_reported_not_waited_for() {
    let _g = serial();
    let p = LiveParams {
        tasks: Some(1),
        mode: Some(Mode::Processes),
        pages: Some(4),
        ..Default::default()
    };
    let mut prepared = prepare(&spec("munmap-threads", p), &Placement::default()).unwrap();
    let pid = prepared.child_pids()[0];
    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    let err = prepared.run(RunLength::Time(Duration::from_secs(3600))).err().unwrap();
    assert!(matches!(err, LiveError::TaskLost { task: 0, .. }), "{err}");
    assert!(err.to_string().contains("SIGKILL"), "{err}");
}

#[test]
fn overhead_calibration_gives_finite_figures() {
    let _g = serial();
    let s = spec("madvise-busy", LiveParams { busy: Some(0), ..Default::default() });
    let mut p = prepare(&s, &Placement::default()).unwrap();
    let o = p.calibrate_overhead(Duration::from_millis(2), 3).unwrap();
    assert_eq!((o.repeats, o.per_repeat_percent.len()), (3, 3));
    assert!(o.bare_ns_per_op > 0.0 && o.harness_ns_per_op > 0.0 && o.percent.is_finite(), "{o:?}");
    assert!(o.machinery_ns_per_op >= 0.0 && o.machinery_percent.is_finite(), "{o:?}");
    assert!(o.percent_p25 <= o.percent && o.percent <= o.percent_p75);
    let err = calibrate_overhead(
        &spec("madvise-scale", LiveParams { tasks: Some(1), ..Default::default() }),
        &Placement::default(),
    );
    assert!(matches!(err, Err(LiveError::Unsupported { .. })));
}

/// The `TLB` row of /proc/interrupts, summed over CPUs (minimal parse, for this test only).
fn tlb_shootdowns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").ok()?;
    let line = text.lines().find(|l| l.trim_start().starts_with("TLB:"))?;
    Some(line.split_whitespace().skip(1).map_while(|w| w.parse::<u64>().ok()).sum())
}

#[test]
fn madvise_busy_shootdowns_show_in_proc_interrupts() {
    let _g = serial();
    if cpus() < 2 || tlb_shootdowns().is_none() {
        eprintln!("skipped: needs 2 CPUs and a TLB row in /proc/interrupts");
        return;
    }
    let mut p = prepare(
        &spec("madvise-busy", LiveParams { busy: Some(1), ..Default::default() }),
        &Placement::default(),
    )
    .unwrap();
    let before = tlb_shootdowns().unwrap();
    let s = p.run(RunLength::Ops(20_000)).unwrap();
    let after = tlb_shootdowns().unwrap();
    // Counters only grow. With KVM's paravirtual flush few IPIs may be delivered, so the delta
    // is reported, not required to be positive.
    assert!(after >= before);
    eprintln!("madvise-busy --busy 1: {} ops, TLB shootdowns received: {}", s.ops, after - before);
}

const PDEATH_ENV: &str = "TLBLAB_LIVE_PDEATH_HELPER";

/// Not a test on its own: run by `children_die_with_a_killed_harness` in a child process, it
/// prepares a scenario with forked tasks, prints their pids and waits to be killed.
#[test]
fn pdeathsig_helper() {
    if std::env::var(PDEATH_ENV).is_err() {
        return;
    }
    let p = LiveParams { tasks: Some(2), ..Default::default() };
    let prepared = prepare(&spec("madvise-scale", p), &Placement::default()).unwrap();
    println!("pids {:?}", prepared.child_pids());
    std::thread::sleep(Duration::from_secs(3600));
}

/// Whether `pid` has ended (gone, or a zombie that its new parent has not reaped yet).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        }
    }
}

#[test]
fn children_die_with_a_killed_harness() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    if std::env::var(PDEATH_ENV).is_ok() {
        return;
    }
    let mut harness = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "pdeathsig_helper", "--nocapture", "--test-threads=1"])
        .env(PDEATH_ENV, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(harness.stdout.take().unwrap());
    // libtest prints "test pdeathsig_helper ... " on the same line before the helper's output.
    let line =
        out.lines().map_while(Result::ok).find_map(|l| Some(l.split_once("pids [")?.1.to_string()));
    let pids: Vec<i32> =
        line.unwrap().trim_end_matches(']').split(", ").map(|p| p.parse().unwrap()).collect();
    eprintln!("forked tasks of the killed harness: {pids:?}");
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&p| !ended(p)));
    harness.kill().unwrap(); // SIGKILL: no destructor runs, only PR_SET_PDEATHSIG can act
    harness.wait().unwrap();
    // Not a timing assertion: the signal is delivered at once; the wait only bounds a failure.
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    while !pids.iter().all(|&p| ended(p)) && std::time::Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(pids.iter().all(|&p| ended(p)), "children {pids:?} outlived their killed parent");
}
