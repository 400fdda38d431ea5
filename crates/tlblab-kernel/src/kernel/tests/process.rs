//! fork, exec, waitpid and exit, and the flushes they cause; 5-level-paging check costs.

use super::*;
use crate::mm::Pte;

/// A parent on CPU 0 writes two pages, forks, and waits; the child (placed on idle CPU 1)
/// writes one of them.
fn fork_and_write(policy: &str) -> (Kernel<TraceLog>, TaskId) {
    let mut k = kernel(policy, 2);
    let child = vec![Step::Store(0, 0, 1)];
    let parent = k.spawn_process(
        script(vec![
            Step::Mmap(2),
            Step::Store(0, 0, 2),
            Step::Fork(child),
            Step::Wait,
            Step::Op,
            Step::Compute(1 << 40),
        ]),
        C0,
        true,
    );
    k.run_until(Cycles(10_000_000));
    (k, parent)
}

/// dup_mmap(): the parent's private pages become copy-on-write, and the parent's mm is
/// flushed whole (flush_tlb_mm()); the child's write copies the page and flushes it alone
/// (ptep_clear_flush()); waitpid() returns once the child has exited.
#[test]
fn fork_write_protects_the_parent_and_the_childs_write_copies_one_page() {
    let (k, parent) = fork_and_write("linux-6.18");
    let mm = k.task_mm(parent).unwrap();
    assert_eq!(k.mm(mm).vma(VmaId(0)).unwrap().ptes, [Pte::Cow, Pte::Cow]);
    // On CPU 0: the parent's fork flush, a full one of its own (loaded) mm.
    assert_eq!(traced(&k, C0, TlbFlushReason::LocalMmShootdown), [TLB_FLUSH_ALL]);
    // On CPU 1: the child's copy-on-write fault flushes its one page.
    assert_eq!(traced(&k, C1, TlbFlushReason::LocalMmShootdown), [1]);
    let tasks = &k.report().tasks;
    let (p, c) = (&tasks[0], &tasks[1]);
    assert_eq!(p.ops, 1);
    assert!(c.exited.unwrap() < p.first_op, "the parent waited for the child");
    // Write faults: 2 anonymous (parent) + 1 copy-on-write (child).
    assert_eq!(k.report().page_faults, 3);
}

/// execve(): the task gets a fresh mm; the old one, used by nobody now, is torn down.
#[test]
fn exec_replaces_the_mm_and_tears_the_old_one_down() {
    let mut k = kernel("linux-6.18", 1);
    let t = k.spawn_process(
        script(vec![
            Step::Mmap(4),
            Step::Store(0, 0, 4),
            Step::Exec(vec![Step::Mmap(1), Step::Store(0, 0, 1), Step::Compute(1 << 40)]),
        ]),
        C0,
        true,
    );
    let old = k.task_mm(t).unwrap();
    k.run_until(Cycles(10_000_000));
    let new = k.task_mm(t).unwrap();
    assert_ne!(new, old);
    assert_eq!(k.mm(old).users, 0);
    assert!(k.mm(old).vmas.iter().flatten().all(|v| v.ptes.iter().all(|&p| p == Pte::None)));
    assert_eq!(k.mm(new).vmas.len(), 1);
    assert_eq!(loaded(&k, C0), LoadedMm::Mm(new));
}

fn exit_time(policy: &str) -> (u64, u64) {
    let mut k = kernel(policy, 1);
    k.spawn_process(script(vec![Step::Mmap(4), Step::Store(0, 0, 4)]), C0, true);
    assert!(k.run());
    let r = k.report();
    (r.tasks[0].exited.unwrap().0, r.la57_checks)
}

/// la57-runtime pays one L1D load per run-time test of the paging mode, on the critical
/// path; la57-patched and la57-off pay nothing. Tests of a tiny program, hand-counted:
/// switch to its mm 1; mmap 2 + the system call's return 1; four write faults 4 × 4;
/// exit_mmap() walks the one touched region 4; exit switches to init_mm (4.14 with PCID) 1.
#[test]
fn la57_runtime_pays_a_load_per_check_and_patched_pays_nothing() {
    let (off, none) = exit_time("linux-4.14+la57-off");
    let (runtime, checks) = exit_time("linux-4.14+la57-runtime");
    let (patched, _) = exit_time("linux-4.14+la57-patched");
    assert_eq!(none, 0);
    assert_eq!(checks, 1 + 2 + 1 + 4 * 4 + 4 + 1);
    let l1d_load = 5; // presets/skylake.toml
    assert_eq!(runtime - off, checks * l1d_load);
    assert_eq!(patched, off);
}

/// `getrusage()`'s switch counts: a pingpong round trip is two switches, one per side, as
/// live. Here 300 round trips take less of each side's run time than its first deadline (half
/// a slice of 2.25 ms on 4 CPUs), so `RUN_TO_PARITY` keeps every waker on the CPU and each side
/// blocks once per round trip (longer runs are preempted: kernel/tests/mechanisms.rs); two compute-bound
/// tasks on one CPU never block and are switched out still runnable when a slice (0.75 ms) is
/// used up, which the scheduler notices at a tick (HZ 250): every tick while both run.
#[test]
fn switches_are_counted_as_getrusage_counts_them() {
    let p = crate::workloads::Params { iterations: 300, ..Default::default() };
    let policy = Policy::named("linux-6.18").unwrap();
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let mut k = Kernel::new(&spec, &policy, KernelConfig::new(4, 1), TraceLog::default()).unwrap();
    let s = crate::workloads::scenario("pingpong").unwrap();
    s.install(&mut k, &p).unwrap();
    assert!(s.run(&mut k, &p));
    for t in &k.report().tasks {
        assert_eq!((t.ops, t.voluntary_switches, t.involuntary_switches), (300, 300, 0));
    }

    let mut k = kernel("linux-6.18", 1);
    let ms = k.clock_mhz() * 1000;
    // 0.1 ms steps: a need_resched set at a tick is acted on at the end of a step.
    for _ in 0..2 {
        k.spawn_process(script((0..400).map(|_| Step::Compute(ms / 10)).collect()), C0, true);
    }
    assert!(k.run());
    let r = k.report();
    let ticks = r.elapsed_cycles / (4 * ms);
    let involuntary: u64 = r.tasks.iter().map(|t| t.involuntary_switches).sum();
    assert!(r.tasks.iter().all(|t| t.voluntary_switches == 0 && t.involuntary_switches > 0));
    assert!((ticks - 2..=ticks).contains(&involuntary), "{involuntary} for {ticks} ticks");
}

/// The fair class's wake-up preemption (kernel/sched/fair.c): a task sleeping on an eventfd
/// shares CPU 0 with a CPU hog, and a task on CPU 1 wakes it every 4 ms, ten times.
/// - CFS (4.14; on 2 CPUs the wake-up granularity is 2 ms and the latency 12 ms): the sleeper
///   comes back 4 ms of vruntime behind the hog (its credit is capped at half the latency, not
///   reached here), more than the granularity, and preempts it at once. Its first wake is the
///   exception: `START_DEBIT` placed the new task a slice (12 ms / 3) past `min_vruntime`, so the
///   hog is not yet far enough ahead, and the sleeper waits for the hog's tick.
/// - EEVDF (6.18): the hog has run past the average while the sleeper kept its lag, so the hog
///   is not eligible and `pick_eevdf()` picks the sleeper: it preempts at every wake.
/// - Without the mechanism the sleeper waits for a tick that finds the hog's slice used.
#[test]
fn a_woken_sleeper_preempts_a_cpu_hog_by_its_fair_class_rules() {
    let run = |policy: &str, on: bool| {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let mut mechanisms = crate::Mechanisms::all();
        if !on {
            mechanisms = mechanisms.without(crate::Mechanism::WakeupPreemption);
        }
        let config = KernelConfig::new(2, 7).with_mechanisms(mechanisms);
        let policy = Policy::named(policy).unwrap();
        let mut k = Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap();
        let ms = k.clock_mhz() * 1000;
        let fd = k.eventfd();
        k.spawn_process(script((0..4500).map(|_| Step::Compute(ms / 100)).collect()), C0, true);
        let sleeper = (0..10).flat_map(|_| [Step::Read(fd), Step::Compute(ms / 100), Step::Op]);
        // Not awaited: two writes before one read are one wake-up (an eventfd counter).
        k.spawn_process(script(sleeper.collect()), C0, false);
        let waker = (0..10).flat_map(|_| [Step::Compute(4 * ms), Step::Write(fd), Step::Op]);
        k.spawn_process(script(waker.collect()), CpuId(1), true);
        assert!(k.run());
        let r = k.report();
        let (hog, sleeper, waker) = (&r.tasks[0], &r.tasks[1], &r.tasks[2]);
        // How long after the last write the sleeper's last operation ended, in ms.
        let late = (sleeper.last_op.0 - waker.last_op.0) as f64 / ms as f64;
        (sleeper.ops, hog.involuntary_switches, late)
    };
    let (ops, preempted, late) = run("linux-4.14", true);
    assert_eq!((ops, preempted), (9, 9), "CFS: all but the first wake-up preempt");
    assert!(late < 0.05, "{late} ms");
    let (ops, preempted, late) = run("linux-6.18", true);
    assert_eq!(ops, 10);
    assert!(preempted >= 10, "{preempted}");
    assert!(late < 0.05, "{late} ms");
    for policy in ["linux-4.14", "linux-6.18"] {
        let (_, _, late) = run(policy, false);
        assert!(late > 1.0, "{policy}: {late} ms");
    }
}

/// EEVDF's `enqueue_entity()` calls `update_curr()` before placing the woken task: a running
/// task that has used its slice while another waits is rescheduled there (`update_deadline()`,
/// then `resched_curr()`), even when the woken task is not the one `pick_eevdf()` would pick
/// (v6.18 kernel/sched/fair.c). Two CPU hogs share CPU 0 and a sleeper with a negative lag
/// (it ran more than its share) wakes between the hog's slice end and the next tick.
#[test]
fn a_wake_up_reschedules_a_task_past_its_slice_even_for_another_pick() {
    let mut k = kernel("linux-6.18", 2);
    let us = k.clock_mhz();
    let fd = k.eventfd();
    for _ in 0..2 {
        k.spawn_process(script((0..2000).map(|_| Step::Compute(10 * us)).collect()), C0, true);
    }
    let sleeper = k.spawn_process(script(vec![Step::Read(fd), Step::Op]), C0, false);
    let slice_used = |k: &Kernel<TraceLog>| {
        let p = &k.cpus[0];
        let Some(curr) = k.fair_running(0) else { return false };
        let se = &k.tasks[curr.0 as usize].se;
        let ran = k.queue.now().0 - k.tasks[curr.0 as usize].slice_start.0;
        let blocked = k.tasks[sleeper.0 as usize].state == TaskState::Blocked;
        blocked && !p.need_resched && !p.rq.is_empty() && se.vruntime + ran as i64 >= se.deadline
    };
    let mut now = 0;
    while !slice_used(&k) {
        now += 20 * us;
        assert!(now < 100_000 * us, "no moment found with the slice used before a tick");
        k.run_until(Cycles(now));
    }
    // Its lag at the limit: placed a slice and more right of the average, so not eligible.
    k.tasks[sleeper.0 as usize].se.vlag = -2 * k.fair_slice as i64;
    k.enqueue(sleeper);
    assert!(!k.wakeup_preempt(0, sleeper), "the woken task is not the pick");
    assert!(k.cpus[0].need_resched, "the used slice reschedules at the wake-up");
}

/// 6.12's `DELAY_DEQUEUE` (152e11f6df29): a task that sleeps while not eligible (it ran more
/// than its share) stays queued, delayed. Woken before it is picked, it runs on from its place
/// (`ttwu_runnable()` → `requeue_delayed_entity()`); picked first, it leaves then, with its
/// lag clipped to 0 (`DELAY_ZERO`: being picked, it was eligible). Before 6.12 it leaves at
/// once with its negative lag. On CPU 0 a task computes 0.5 ms while two CPU hogs wait, then
/// sleeps on an eventfd.
#[test]
fn a_sleeper_past_its_share_stays_queued_under_delay_dequeue() {
    let blocked = |fair_sched: crate::policy::FairSched| {
        let mut policy = Policy::named("linux-6.18").unwrap();
        policy.fair_sched = fair_sched;
        let mut k = kernel_on("skylake", &policy, 2);
        let ms = k.clock_mhz() * 1000;
        let fd = k.eventfd();
        // First queued, it runs first, and less than its first deadline (half a slice).
        let s = k.spawn_process(script(vec![Step::Compute(ms / 2), Step::Read(fd)]), C0, false);
        for _ in 0..2 {
            k.spawn_process(script((0..2000).map(|_| Step::Compute(ms / 100)).collect()), C0, true);
        }
        let mut now = 0;
        while k.tasks[s.0 as usize].state != TaskState::Blocked || k.cpus[0].switch.is_some() {
            now += ms / 50;
            assert!(now < 100 * ms, "the sleeper never slept");
            k.run_until(Cycles(now));
        }
        (k, s)
    };
    let queued = |k: &Kernel<TraceLog>, s| k.cpus[0].rq.iter().filter(|&&t| t == s).count();
    // 6.6-6.11: it leaves at once, its lag negative (it ran ahead of the average).
    let (k, s) = blocked(crate::policy::FairSched::Eevdf66);
    assert_eq!(queued(&k, s), 0);
    assert!(k.tasks[s.0 as usize].se.vlag < 0);
    // 6.12+: it stays queued, delayed.
    let (mut k, s) = blocked(crate::policy::FairSched::Eevdf);
    assert!(k.delayed(s) && queued(&k, s) == 1);
    // Woken now: runnable where it stands, queued once, its vruntime unchanged.
    let vruntime = k.tasks[s.0 as usize].se.vruntime;
    let mut woken = blocked(crate::policy::FairSched::Eevdf).0;
    woken.enqueue(s);
    assert_eq!(woken.tasks[s.0 as usize].state, TaskState::Runnable);
    assert!(!woken.delayed(s) && queued(&woken, s) == 1);
    assert_eq!(woken.tasks[s.0 as usize].se.vruntime, vruntime);
    // Not woken: the hogs run until it is picked, and it leaves with a lag of exactly 0.
    let mut now = k.queue.now().0;
    while queued(&k, s) == 1 {
        now += k.clock_mhz() * 20;
        assert!(now < k.clock_mhz() * 200_000, "never picked");
        k.run_until(Cycles(now));
    }
    assert!(!k.delayed(s));
    assert_eq!(k.tasks[s.0 as usize].state, TaskState::Blocked);
    assert_eq!(k.tasks[s.0 as usize].se.vlag, 0);
}

/// `exit_notify()` makes the exiting child a zombie as it wakes its waiters, so a `waitpid()`
/// retried by the woken parent before the child has finished exiting returns at once. Before,
/// the retry found the child alive and slept again, for a wake-up that had already happened
/// (hackbench's main task hung so under DELAY_DEQUEUE's timings). The parent waits for a child
/// on the other CPU; in the window between the wake-up and the end of the exit, its retry is
/// made.
#[test]
fn a_waitpid_retried_during_the_childs_exit_returns() {
    let mut k = kernel("linux-6.18", 2);
    let us = k.clock_mhz();
    let parent = vec![Step::Fork(vec![Step::Compute(100 * us)]), Step::Wait, Step::Op];
    let parent = k.spawn_process(script(parent), C0, true);
    let child = TaskId(parent.0 + 1);
    let in_window = |k: &Kernel<TraceLog>| {
        k.tasks.get(child.0 as usize).is_some_and(|c| c.zombie && c.state != TaskState::Dead)
    };
    let mut now = 0;
    while !in_window(&k) {
        now += 10;
        assert!(now < 1_000 * us, "the child never exited");
        k.run_until(Cycles(now));
    }
    assert_eq!(k.tasks[child.0 as usize].cpu, C1);
    k.sys_wait(C0, parent, child);
    assert!(k.tasks[child.0 as usize].waiters.is_empty(), "it would sleep for a past wake-up");
    assert_ne!(k.tasks[parent.0 as usize].state, TaskState::Blocked);
}

/// A run that can never end stops at once with the reason: two tasks each wait for the other's
/// eventfd write, which comes after its own read, and a third waits for nothing it can get
/// (non-essential). Ticks keep coming on both idle CPUs, but nothing they do wakes a task, so
/// the run stops at the first tick after the last task blocked, not at the event limit, and the
/// error names every blocked task and what it waits on. A run that does end is not affected.
#[test]
fn a_run_whose_tasks_all_wait_forever_stops_at_once_and_says_on_what() {
    let mut k = kernel("linux-6.18", 2);
    let (a, b) = (k.eventfd(), k.eventfd());
    let t0 = k.spawn_process(script(vec![Step::Read(a), Step::Write(b), Step::Op]), C0, true);
    let t1 = k.spawn_process(script(vec![Step::Read(b), Step::Write(a), Step::Op]), C1, true);
    let c = k.eventfd();
    let t2 = k.spawn_process(script(vec![Step::Read(c)]), C1, false);
    // A run to an earlier time goes on to it (its caller may wake a task before it goes on).
    let tick = k.tick_cycles;
    assert!(!k.run_until(Cycles(3 * tick)));
    assert!(k.event_limit_reached().is_ok());
    assert!(k.now().0 > 2 * tick, "ticks went on to the time asked for");
    assert!(!k.run());
    let events = k.events();
    assert!(events < 50, "stopped after {events} events, not at the event limit");
    let err = k.event_limit_reached().unwrap_err().to_string();
    assert!(err.starts_with("the run can never end"), "{err}");
    for task in [
        format!("task {} on CPU 0 waits in a read of eventfd {}", t0.0, a.0),
        format!("task {} on CPU 1 waits in a read of eventfd {}", t1.0, b.0),
        format!("task {} (not essential) on CPU 1 waits in a read of eventfd {}", t2.0, c.0),
    ] {
        assert!(err.contains(&task), "{task}: {err}");
    }
    // The same pair with one side writing first ends, with no error.
    let mut k = kernel("linux-6.18", 2);
    let (a, b) = (k.eventfd(), k.eventfd());
    k.spawn_process(script(vec![Step::Read(a), Step::Write(b), Step::Op]), C0, true);
    k.spawn_process(script(vec![Step::Write(a), Step::Read(b), Step::Op]), C1, true);
    assert!(k.run());
    assert!(k.event_limit_reached().is_ok());
}
