//! The worked examples of the kernel's comments, as tests of the model, and hand-derived
//! tracepoint sequences.

use super::*;
use crate::mm::VmaId;
use crate::observer::TLB_FLUSH_ALL;
use crate::program::{Action, Env};
use crate::TraceLog;
use tlblab_types::AccessKind;

/// A program that plays a fixed list of actions; `Mmap` results are remembered in order and
/// referred to by index with [`Step`].
struct Script {
    steps: VecDeque<Step>,
    vmas: Vec<VmaId>,
    child: Option<TaskId>,
}

enum Step {
    Mmap(u64),
    Store(usize, u64, u64),
    Load(usize, u64, u64),
    Madvise(usize, u64, u64),
    Munmap(usize),
    Write(EventFd),
    Read(EventFd),
    Compute(u64),
    /// fork(); the child runs these steps (its regions are the parent's, same indices).
    Fork(Vec<Step>),
    /// waitpid() on the last child forked.
    Wait,
    /// Count an operation (its time is recorded).
    Op,
    /// Direct reclaim of this many pages of other processes.
    Reclaim(u64),
    /// execve() of a program running these steps.
    Exec(Vec<Step>),
    /// flush_tlb_kernel_range() of this many vmalloc pages, or flush_tlb_all() for `None`.
    KernelFlush(Option<u64>),
    /// A kernel section with interrupts off for this many cycles.
    IrqsOff(u64),
}

impl Program for Script {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        match env.last {
            Outcome::Mapped(v) => self.vmas.push(v),
            Outcome::Spawned(t) => self.child = Some(t),
            Outcome::None => {}
        }
        let touch = |vma, first, pages, kind| Action::Touch(Touch::new(vma, first, pages, kind, 1));
        match self.steps.pop_front() {
            None => Action::Exit,
            Some(Step::Mmap(pages)) => Action::Syscall(Syscall::Mmap { pages }),
            Some(Step::Store(v, f, n)) => touch(self.vmas[v], f, n, AccessKind::Store),
            Some(Step::Load(v, f, n)) => touch(self.vmas[v], f, n, AccessKind::Load),
            Some(Step::Madvise(v, first, pages)) => {
                Action::Syscall(Syscall::MadviseDontneed { vma: self.vmas[v], first, pages })
            }
            Some(Step::Munmap(v)) => Action::Syscall(Syscall::Munmap { vma: self.vmas[v] }),
            Some(Step::Write(fd)) => Action::Syscall(Syscall::EventfdWrite { fd }),
            Some(Step::Read(fd)) => Action::Syscall(Syscall::EventfdRead { fd }),
            Some(Step::Compute(cycles)) => Action::Compute { cycles },
            Some(Step::Fork(steps)) => {
                let child = Script { steps: steps.into(), vmas: self.vmas.clone(), child: None };
                Action::Syscall(Syscall::Fork { program: Box::new(child) })
            }
            Some(Step::Wait) => {
                Action::Syscall(Syscall::Wait { child: self.child.expect("forked first") })
            }
            Some(Step::Op) => Action::Op,
            Some(Step::Reclaim(pages)) => Action::Syscall(Syscall::Reclaim { pages }),
            Some(Step::Exec(steps)) => Action::Syscall(Syscall::Exec { program: script(steps) }),
            Some(Step::KernelFlush(pages)) => Action::Syscall(Syscall::KernelFlush { pages }),
            Some(Step::IrqsOff(cycles)) => Action::Syscall(Syscall::IrqsOff { cycles }),
        }
    }
}

fn script(steps: Vec<Step>) -> Box<dyn Program> {
    Box::new(Script { steps: steps.into(), vmas: Vec::new(), child: None })
}

fn kernel(policy: &str, cpus: usize) -> Kernel<TraceLog> {
    kernel_on("skylake", &Policy::named(policy).unwrap(), cpus)
}

/// A kernel of `cpus` CPUs of `spec` under `policy`, seed 7, no time limit, with every idle
/// state of the machine.
fn booted(spec: &MachineSpec, policy: &Policy, cpus: usize) -> Kernel<TraceLog> {
    let config = KernelConfig::new(cpus, 7);
    Kernel::new(spec, policy, config, TraceLog::default()).unwrap()
}

/// A kernel of `cpus` CPUs of a built-in machine under `policy`, seed 7, no time limit.
fn kernel_on(machine: &str, policy: &Policy, cpus: usize) -> Kernel<TraceLog> {
    let mut k = booted(&tlblab_sim::machine::builtin(machine).unwrap(), policy, cpus);
    // The worked examples time their steps against µs-scale wake-ups: C1 only, as with
    // `intel_idle.max_cstate=1` (kernel/tests/idle.rs tests the deeper states).
    k.set_max_cstate(1);
    k
}

/// A sleeping thread of `of`'s mm on `cpu`, woken by `try_to_wake_up()` from CPU 0: the
/// waker's cycles.
fn woken_from_c0(k: &mut Kernel<TraceLog>, of: TaskId, cpu: CpuId) -> u64 {
    let w = k.new_task(k.task_mm(of), Some(script(vec![])), cpu, false);
    k.tasks[w.0 as usize].state = TaskState::Blocked;
    k.try_to_wake_up(C0, w)
}

/// The csd-queue worked example on a 3-CPU kernel `k`: CPU 1 runs with interrupts off while
/// CPUs 0 and 2 each DONTNEED a page of their shared mm, so two flush calls queue for CPU 1;
/// run until CPU 1 has drained them (its section ends at about 2.04 M cycles), before the last
/// exit's flush (2.17 M).
fn calls_queued_behind_irqs_off(k: &mut Kernel<TraceLog>) {
    let main = k.spawn_process(
        script(vec![
            Step::Mmap(4),
            Step::Store(0, 0, 4),
            Step::Compute(400_000),
            Step::Madvise(0, 0, 1),
        ]),
        CpuId(0),
        true,
    );
    k.run_until(Cycles(100_000));
    k.spawn_thread(main, script(vec![Step::IrqsOff(2_000_000)]), CpuId(1), true);
    let flusher = script(vec![
        Step::Mmap(2),
        Step::Store(0, 0, 2),
        Step::Compute(300_000),
        Step::Madvise(0, 0, 1),
    ]);
    k.spawn_thread(main, flusher, CpuId(2), true);
    k.run_until(Cycles(2_100_000));
}

/// As [`kernel_on`] on skylake, with every idle state of the machine.
fn kernel_with_all_cstates(policy: &Policy, cpus: usize) -> Kernel<TraceLog> {
    booted(&tlblab_sim::machine::builtin("skylake").unwrap(), policy, cpus)
}

/// On `k` (2 CPUs or more), a process on CPU 0 maps and writes a page, then DONTNEEDs it
/// `rounds` times (rewriting it each time); with `sibling`, a thread of it spins in user mode
/// on CPU 1 all along, so every DONTNEED shoots down CPU 1 and waits for its acknowledgement.
/// Runs to the end; the main task is the report's first.
fn madvise_rounds(mut k: Kernel<TraceLog>, sibling: bool, rounds: usize) -> KernelReport {
    let mut steps = vec![Step::Mmap(2), Step::Store(0, 0, 2), Step::Compute(200_000)];
    for _ in 0..rounds {
        steps.extend([Step::Madvise(0, 0, 1), Step::Store(0, 0, 1)]);
    }
    let main = k.spawn_process(script(steps), C0, true);
    if sibling {
        k.run_until(Cycles(50_000));
        k.spawn_thread(main, script(vec![Step::Compute(1 << 40)]), C1, false);
    }
    k.run();
    k.report()
}

const C0: CpuId = CpuId(0);
const C1: CpuId = CpuId(1);

/// Events of `reason` on `cpu`, as `pages` values.
fn traced(k: &Kernel<TraceLog>, cpu: CpuId, reason: TlbFlushReason) -> Vec<i64> {
    k.observer()
        .events
        .iter()
        .filter(|e| e.cpu == cpu && e.reason == reason)
        .map(|e| e.pages)
        .collect()
}

fn loaded(k: &Kernel<TraceLog>, cpu: CpuId) -> LoadedMm {
    k.tlb_state(cpu).loaded_mm
}

fn slot_gen(k: &Kernel<TraceLog>, cpu: CpuId) -> u64 {
    let st = k.tlb_state(cpu);
    st.ctxs[usize::from(st.loaded_mm_asid.0)].tlb_gen
}

/// A process on CPU 0 maps and writes `pages` pages, computes while a thread of it on CPU 1
/// blocks (CPU 1 goes idle, lazily on the mm), then does `op` on the region and wakes the
/// thread. Runs to the end.
fn run_with_lazy_cpu1(k: &mut Kernel<TraceLog>, pages: u64, op: Step) {
    let fd = k.eventfd();
    let main = k.spawn_process(
        script(vec![
            Step::Mmap(pages),
            Step::Store(0, 0, pages),
            Step::Compute(3_000_000),
            op,
            Step::Write(fd),
        ]),
        C0,
        true,
    );
    k.run_until(Cycles(1_000_000));
    k.spawn_thread(main, script(vec![Step::Read(fd)]), C1, true);
    k.run_until(Cycles(2_000_000));
    assert!(k.tlb_state(C1).is_lazy);
    k.run();
}

/// A process on CPU 1 that maps and writes 4 pages, then computes for a long time.
fn running_on_cpu1(k: &mut Kernel<TraceLog>) -> MmId {
    let t = k.spawn_process(
        script(vec![Step::Mmap(4), Step::Store(0, 0, 4), Step::Compute(1 << 40)]),
        C1,
        true,
    );
    k.run_until(Cycles(1_000_000));
    let mm = k.task_mm(t).unwrap();
    assert_eq!(loaded(k, C1), LoadedMm::Mm(mm));
    mm
}

/// tlb.c, flush_tlb_func(): two concurrent flushes, a full one (gen 1) and a ranged one
/// (gen 2), reach a CPU in the reverse order. The ranged one may not advance the CPU by two
/// generations, or the full flush would be lost: it must flush everything.
#[test]
fn two_concurrent_flushes_processed_in_reverse_order() {
    let mut k = kernel("linux-6.18", 2);
    let mm = running_on_cpu1(&mut k);
    assert_eq!(slot_gen(&k, C1), 0);
    let vpn = k.mm(mm).vma(VmaId(0)).unwrap().start.0;
    let full_gen = k.mms[mm.0 as usize].inc_tlb_gen();
    let ranged_gen = k.mms[mm.0 as usize].inc_tlb_gen();
    let info = |start, end, new_tlb_gen| FlushTlbInfo {
        mm: Some(mm),
        start,
        end,
        stride_shift: PAGE_SHIFT,
        freed_tables: false,
        new_tlb_gen,
        initiating_cpu: C0,
        trim_cpumask: false,
    };
    let full = k.new_call(info(0, FLUSH_ALL_END, full_gen), TaskId(0));
    let ranged = k.new_call(info(vpn, vpn + 1, ranged_gen), TaskId(0));
    // The ranged flush arrives first: gen 2 is not local gen (0) + 1, so it is a full flush.
    k.flush_tlb_func(C1, ranged);
    assert_eq!(traced(&k, C1, TlbFlushReason::RemoteShootdown), [TLB_FLUSH_ALL]);
    assert_eq!(slot_gen(&k, C1), 2);
    // The full flush then finds the CPU past its generation: nothing to do, nothing traced.
    k.flush_tlb_func(C1, full);
    assert_eq!(traced(&k, C1, TlbFlushReason::RemoteShootdown), [TLB_FLUSH_ALL]);
    // A single pending ranged flush (gen 3 = 2 + 1 = the mm's gen) is done as a range.
    let next = k.mms[mm.0 as usize].inc_tlb_gen();
    let one = k.new_call(info(vpn, vpn + 1, next), TaskId(0));
    k.flush_tlb_func(C1, one);
    assert_eq!(traced(&k, C1, TlbFlushReason::RemoteShootdown), [TLB_FLUSH_ALL, 1]);
    assert_eq!(k.counters.irq_tlb[1], 3);
}

/// Two threads of one mm; the one on CPU 1 blocks, so CPU 1 idles lazily on the mm. A flush
/// from CPU 0 skips it (`should_flush_tlb()`: lazy); when the thread wakes, `switch_mm_irqs_off()`
/// finds the slot behind the mm's `tlb_gen` and flushes it then.
#[test]
fn a_lazy_cpu_is_skipped_by_the_ipi_and_catches_up_at_its_next_switch() {
    let mut k = kernel("linux-6.18", 2);
    let fd = k.eventfd();
    let main = k.spawn_process(
        script(vec![
            Step::Mmap(8),
            Step::Store(0, 0, 8),
            Step::Compute(2_000_000),
            Step::Madvise(0, 0, 1),
            Step::Compute(100_000),
            Step::Write(fd),
            Step::Compute(2_000_000),
        ]),
        C0,
        true,
    );
    k.run_until(Cycles(1_000_000));
    k.spawn_thread(main, script(vec![Step::Read(fd), Step::Compute(10_000)]), C1, true);
    k.run_until(Cycles(2_000_000));
    let mm = k.task_mm(main).unwrap();
    assert!(k.tlb_state(C1).is_lazy, "CPU 1 idles lazily on the mm");
    assert_eq!(loaded(&k, C1), LoadedMm::Mm(mm));
    let before = k.tlb_state(C1).clone();
    // The madvise is at about 2.04 M cycles, the wake-up 100 k cycles later.
    k.run_until(Cycles(2_100_000));
    // The madvise was traced as an IPI send, but CPU 1 got no interrupt.
    assert_eq!(traced(&k, C0, TlbFlushReason::RemoteSendIpi), [1]);
    assert_eq!(k.counters.irq_tlb[1], 0);
    assert!(slot_gen(&k, C1) < k.mm(mm).tlb_gen, "CPU 1 is behind, lazily");
    assert_eq!(k.tlb_state(C1).ctxs, before.ctxs);
    k.run();
    // CPU 1's task switches: the thread's first switch-in (new ASID: flushed); its wake-up
    // (same mm, was lazy, behind: a flushing reload of the same ASID); and, when the process
    // exits and frees its page tables, the IPI that sends the lazy CPU to init_mm, whose ASID
    // 0 slot is up to date (NOFLUSH, pages 0).
    assert_eq!(
        traced(&k, C1, TlbFlushReason::FlushOnTaskSwitch),
        [TLB_FLUSH_ALL, TLB_FLUSH_ALL, 0]
    );
    assert_eq!(loaded(&k, C1), LoadedMm::Mm(MmId::INIT_MM));
}

/// Freeing page tables must reach lazy CPUs too (they could walk freed tables speculatively):
/// the IPI makes the lazy CPU switch to `init_mm` instead of flushing.
#[test]
fn freed_tables_reach_lazy_cpus() {
    let mut k = kernel("linux-6.18", 2);
    run_with_lazy_cpu1(&mut k, 1024, Step::Munmap(0));
    assert_eq!(k.counters.irq_tlb[1], 1, "the lazy CPU was interrupted");
    // It left the mm (a task switch to init_mm, traced as a full flush) rather than flushing.
    assert!(traced(&k, C1, TlbFlushReason::RemoteShootdown).is_empty());
    assert!(traced(&k, C1, TlbFlushReason::FlushOnTaskSwitch).contains(&TLB_FLUSH_ALL));
}

/// PTI with the deferred user flush: a single-page flush marks the user PCID, and the whole
/// user PCID is flushed by the CR3 write of the return to user — exactly there. With INVPCID
/// the other pages' user translations survive.
#[test]
fn pti_deferred_user_flush_is_applied_at_return_to_user() {
    let run = |policy: &str| {
        let mut k = kernel(policy, 1);
        k.spawn_process(
            script(vec![
                Step::Mmap(3),
                Step::Store(0, 0, 3),
                Step::Madvise(0, 0, 1),
                Step::Load(0, 1, 2),
            ]),
            C0,
            true,
        );
        k.run();
        let hw = k.report().hw;
        let count =
            |name: &str| hw.invalidations.iter().find(|(n, _)| n.as_str() == name).unwrap().1.count;
        (hw.page_walks.walks, count("invpcid_indiv_addr"), count("mov_cr3"))
    };
    let (deferred_walks, deferred_invpcid, deferred_cr3) = run("linux-6.18+pti-deferred");
    let (invpcid_walks, invpcid_count, invpcid_cr3) = run("linux-6.18+pti-invpcid");
    // Deferred: no INVPCID, one more flushing CR3 write (the return to user after madvise).
    assert_eq!((deferred_invpcid, invpcid_count), (0, 1));
    assert_eq!(deferred_cr3, invpcid_cr3 + 1);
    // ... and pages 1 and 2 lost their user translations with it: two more walks.
    assert_eq!(deferred_walks, invpcid_walks + 2);
}

/// CVE-2025-37964 (fea4e317f9e7): CPU 1 is switching to the mm — it has stored
/// `LOADED_MM_SWITCHING` and read the mm's old `tlb_gen`, but not yet stored the new
/// `loaded_mm` — when CPU 0 flushes the mm. Since 6.15 `should_flush_tlb()` sends CPU 1 the
/// IPI; before, CPU 1 was skipped and ran the mm with a stale TLB.
#[test]
fn loaded_mm_switching_window() {
    let outcome = |policy: Policy| {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let config = KernelConfig::new(2, 7);
        let mut k = Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap();
        let t = k.spawn_process(
            script(vec![Step::Mmap(1), Step::Store(0, 0, 1), Step::Compute(1 << 40)]),
            C0,
            true,
        );
        k.run_until(Cycles(1_000_000));
        let mm = k.task_mm(t).unwrap();
        assert_eq!(k.switch_mm_begin(C1, mm), switch::SwitchBegin::Switching);
        let (asid, _) = k.switch_mm_load(C1, mm, None);
        // CPU 0 flushes now, inside CPU 1's window.
        let gen = k.mms[mm.0 as usize].inc_tlb_gen();
        let vpn = k.mm(mm).vma(VmaId(0)).unwrap().start.0;
        let req = FlushRequest {
            mm,
            start: vpn,
            end: vpn + 1,
            stride_shift: PAGE_SHIFT,
            freed_tables: false,
        };
        let info = k.flush_tlb_info(&req, gen, C0);
        let call = k.new_call(info, t);
        k.native_flush_tlb_multi(C0, call);
        let ipis = k.calls[call.0 as usize].pending;
        k.switch_mm_end(C1, mm, asid);
        k.run_until(Cycles(2_000_000));
        (ipis, slot_gen(&k, C1), k.mm(mm).tlb_gen)
    };
    let fixed = Policy::named("linux-6.18").unwrap();
    let mut before = fixed.clone();
    before.loaded_mm_switching_check = false;
    assert_eq!(outcome(fixed), (1, 1, 1), "the IPI reaches CPU 1, which catches up");
    assert_eq!(outcome(before), (0, 0, 1), "skipped: CPU 1 runs the mm one generation behind");
}

/// 4.20–6.13 (`tlb_is_not_lazy()`, no lazy mm_cpumask) interrupted every CPU of the mask that
/// was not lazy, including one in the middle of switching: the CVE-2025-37964 window did not
/// exist there, with or without the 6.15 check.
#[test]
fn before_the_lazy_cpumask_only_laziness_spared_a_cpu() {
    let fixed = Policy::named("linux-6.18").unwrap();
    let mut pre_6_14 = fixed.clone();
    pre_6_14.lazy_cpumask = false;
    pre_6_14.trim_cpumask = false;
    pre_6_14.loaded_mm_switching_check = false;
    let mut k = Kernel::new(
        &tlblab_sim::machine::builtin("skylake").unwrap(),
        &pre_6_14,
        KernelConfig::new(2, 7),
        TraceLog::default(),
    )
    .unwrap();
    let t = k.spawn_process(script(vec![Step::Mmap(1), Step::Compute(1 << 40)]), C0, true);
    k.run_until(Cycles(1_000_000));
    let mm = k.task_mm(t).unwrap();
    assert_eq!(k.switch_mm_begin(C1, mm), switch::SwitchBegin::Switching);
    let req = FlushRequest::pages(mm, 0, 1, false);
    let info = k.flush_tlb_info(&req, 1, C0);
    assert!(k.should_flush_tlb(C1, &info), "a switching CPU is not lazy: interrupted");
    k.cpus[1].tlb.is_lazy = true;
    assert!(!k.should_flush_tlb(C1, &info), "a lazy CPU is spared");
}

/// The tracepoint sequence of a tiny program, derived by hand from tlb.c: map and write a page,
/// `madvise(MADV_DONTNEED)` it, exit.
#[test]
fn tracepoints_of_a_tiny_program_match_the_hand_derived_list() {
    let mut k = kernel("linux-6.18", 2);
    k.spawn_process(
        script(vec![Step::Mmap(1), Step::Store(0, 0, 1), Step::Madvise(0, 0, 1)]),
        C0,
        true,
    );
    assert!(k.run());
    let got: Vec<(u16, TlbFlushReason, i64)> =
        k.observer().events.iter().map(|e| (e.cpu.0, e.reason, e.pages)).collect();
    use TlbFlushReason::*;
    assert_eq!(
        got,
        [
            // Switch to the new mm: ASID 1 is new on this CPU, so CR3 is written with a flush.
            (0, FlushOnTaskSwitch, TLB_FLUSH_ALL),
            // madvise: no other CPU in mm_cpumask, the mm is loaded: a local one-page flush.
            (0, LocalMmShootdown, 1),
            // exit: lazy on the dying mm; exit_mmap's full flush finds the CPU lazy and
            // switches it to init_mm, whose ASID 0 is up to date: NOFLUSH.
            (0, FlushOnTaskSwitch, 0),
        ]
    );
    assert_eq!(k.counters.vmstat, Vmstat { nr_tlb_local_flush_one: 1, ..Vmstat::default() });
}

/// Same inputs and seed, same report, byte for byte.
#[test]
fn runs_are_deterministic() {
    let run = || {
        let mut k = kernel("linux-6.18", 4);
        let s = crate::workloads::scenario("munmap-threads").unwrap();
        let p = crate::workloads::Params { iterations: 50, pages: 40, ..Default::default() };
        s.install(&mut k, &p).unwrap();
        k.run();
        serde_json::to_string(&k.report()).unwrap()
    };
    assert_eq!(run(), run());
}

mod acct;
mod broadcast;
mod check;
mod collapse;
mod cpumask;
mod files;
mod guest;
mod idle;
mod invlpgb;
mod kflush;
mod latr;
mod luf;
mod mechanisms;
mod mitigations;
mod munmap;
mod process;
mod reclaim;
mod tlbstate;
mod vcpu;
mod wake;
mod xpfo;

/// Runs scenario `name` to its end on `cpus` CPUs of `spec` under `policy` (seed `seed`, the
/// given mechanisms); its report. Shared by the scenario tests of every module.
pub(crate) fn run_scenario(
    spec: &MachineSpec,
    policy: &str,
    config: KernelConfig,
    name: &str,
    p: &crate::workloads::Params,
) -> crate::stats::KernelReport {
    let policy = Policy::named(policy).unwrap();
    let mut k = Kernel::new(spec, &policy, config, crate::observer::NoObserver).unwrap();
    let s = crate::workloads::scenario(name).unwrap();
    s.install(&mut k, p).unwrap();
    assert!(s.run(&mut k, p), "{name}: tasks did not finish");
    k.report()
}
