//! The mechanism switches (`crate::mechanisms`): each, off, gives the model as a preset without
//! its section (or as the model was before it), changes what it should where it acts, and
//! changes nothing where it has nothing to act on.

use super::*;
use crate::mechanisms::{Mechanism, Mechanisms};
use crate::workloads::{scenario, Params};
use tlblab_sim::machine::BUILTIN_PRESETS;

/// A built-in preset's text.
fn preset_text(name: &str) -> &'static str {
    BUILTIN_PRESETS.iter().find(|(n, _)| *n == name).unwrap().1
}

/// A built-in preset, optionally without one of its top-level sections (`"[guest]"`).
fn preset_without(name: &str, section: Option<&str>) -> MachineSpec {
    let text = preset_text(name);
    let Some(header) = section else { return tlblab_sim::machine::builtin(name).unwrap() };
    let start = text.find(&format!("\n{header}\n")).unwrap() + 1;
    let end = text[start + 1..].find("\n[").map_or(text.len(), |i| start + 1 + i + 1);
    let edited = format!("{}{}", &text[..start], &text[end..]);
    MachineSpec::from_toml(&edited, "test").unwrap()
}

/// A kernel of `cpus` CPUs of `spec` under linux-6.18, seed 7, every idle state, with `off`
/// switched off.
fn kernel_without(spec: &MachineSpec, off: &[Mechanism], cpus: usize) -> Kernel<TraceLog> {
    let mechanisms = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
    let config = KernelConfig::new(cpus, 7).with_mechanisms(mechanisms);
    Kernel::new(spec, &Policy::named("linux-6.18").unwrap(), config, TraceLog::default()).unwrap()
}

/// The report as JSON: two runs are the same when these are byte-identical.
fn json(r: &KernelReport) -> String {
    serde_json::to_string(r).unwrap()
}

/// `rounds` one-page DONTNEEDs, each shooting down a sibling spinning on CPU 1.
fn shootdowns(spec: &MachineSpec, off: &[Mechanism], rounds: usize) -> KernelReport {
    madvise_rounds(kernel_without(spec, off, 2), true, rounds)
}

/// Scenario `name` with `p` on `cpus` CPUs of `spec`, with `off` switched off: its report.
fn scenario_report(
    spec: &MachineSpec,
    off: &[Mechanism],
    cpus: usize,
    name: &str,
    p: &Params,
) -> KernelReport {
    let mut k = kernel_without(spec, off, cpus);
    let s = scenario(name).unwrap();
    s.install(&mut k, p).unwrap();
    assert!(s.run(&mut k, p));
    k.report()
}

/// madv-migrate (S2's loop: a page written, DONTNEEDed, the task moved to the other CPU).
fn madv_migrate(spec: &MachineSpec, off: &[Mechanism]) -> KernelReport {
    let p = Params { iterations: 50, ..Params::default() };
    scenario_report(spec, off, 2, "madv-migrate", &p)
}

#[test]
fn guest_off_is_bare_metal_and_lowers_the_ipi_cost() {
    let kvm = preset_without("skylake-kvm", None);
    let rounds = 10;
    let on = shootdowns(&kvm, &[], rounds);
    let off = shootdowns(&kvm, &[Mechanism::Guest], rounds);
    // skylake-kvm: no PV send-IPI, no posted interrupts: an exit to send, one to inject, and
    // the initiator waits through both (kernel/tests/guest.rs).
    let vm_exit = 1_250;
    assert_eq!(on.tasks[0].sys_cycles - off.tasks[0].sys_cycles, 2 * rounds as u64 * vm_exit);
    // Exactly the preset without its [guest] section.
    let bare = shootdowns(&preset_without("skylake-kvm", Some("[guest]")), &[], rounds);
    assert_eq!(json(&off), json(&bare));
    assert!(Mechanism::Guest.present_on(&kvm));
}

#[test]
fn guest_off_changes_nothing_on_bare_metal() {
    let skylake = preset_without("skylake", None);
    assert!(!Mechanism::Guest.present_on(&skylake));
    let on = shootdowns(&skylake, &[], 10);
    assert_eq!(json(&on), json(&shootdowns(&skylake, &[Mechanism::Guest], 10)));
    let on = madv_migrate(&skylake, &[]);
    assert_eq!(json(&on), json(&madv_migrate(&skylake, &[Mechanism::Guest])));
}

#[test]
fn idle_states_off_is_the_preset_without_idle() {
    let skylake = preset_without("skylake", None);
    assert!(Mechanism::IdleStates.present_on(&skylake));
    let on = madv_migrate(&skylake, &[]);
    let off = madv_migrate(&skylake, &[Mechanism::IdleStates]);
    let states = |r: &KernelReport| r.idle_entries.iter().map(|e| e.state.clone()).collect();
    let on_states: Vec<String> = states(&on);
    assert_eq!(on_states[..3], ["POLL", "C1", "C1E"]);
    assert_eq!(states(&off), ["POLL", "idle"]);
    // Every migration wakes the other CPU: from C1 or deeper (2 µs or more) with the table,
    // from the 1 µs idle_exit without it.
    assert!(
        off.elapsed_cycles < on.elapsed_cycles,
        "{} vs {}",
        off.elapsed_cycles,
        on.elapsed_cycles
    );
    let idle = |r: &KernelReport| r.cpu_time.iter().map(|t| t.idle_cycles).sum::<u64>();
    assert!(idle(&off) < idle(&on));
    let without = madv_migrate(&preset_without("skylake", Some("[idle]")), &[]);
    assert_eq!(json(&off), json(&without));
}

#[test]
fn idle_states_off_changes_nothing_without_an_idle_table() {
    let spec = preset_without("skylake", Some("[idle]"));
    assert!(!Mechanism::IdleStates.present_on(&spec));
    let on = madv_migrate(&spec, &[]);
    assert_eq!(json(&on), json(&madv_migrate(&spec, &[Mechanism::IdleStates])));
}

/// Off, the model is as before the csd queue: a target with a call queued is sent one IPI per
/// call (kernel/tests/acct.rs has the queued case: one IPI for both).
#[test]
fn csd_queue_off_sends_an_ipi_per_call() {
    let mechanisms = Mechanisms::all().without(Mechanism::CsdQueue);
    let config = KernelConfig::new(3, 7).with_mechanisms(mechanisms);
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let mut k =
        Kernel::new(&spec, &Policy::named("linux-6.18").unwrap(), config, TraceLog::default())
            .unwrap();
    k.set_max_cstate(1);
    calls_queued_behind_irqs_off(&mut k);
    let r = k.report();
    // As in a_cpu_with_calls_queued_gets_one_ipi_and_runs_them_all, with one more IPI: the
    // second call to CPU 1 is sent its own.
    assert_eq!(r.irq_tlb[1], 2, "{:?}", r.irq_tlb);
    assert_eq!(r.ipis_sent.iter().sum::<u64>(), 4, "{:?}", r.ipis_sent);
}

#[test]
fn csd_queue_off_drops_the_csd_write_and_the_chained_wait() {
    let skylake = preset_without("skylake", None);
    let clt = skylake.raw().kernel.as_ref().unwrap().cache_line_transfer.cycles;
    // One target: the csd's cache line is the only difference.
    let rounds = 10;
    let on = shootdowns(&skylake, &[], rounds);
    let off = shootdowns(&skylake, &[Mechanism::CsdQueue], rounds);
    assert_eq!(on.tasks[0].sys_cycles - off.tasks[0].sys_cycles, rounds as u64 * clt);
    // Three targets that take the IPI together (each ends an interrupts-off section at the
    // same moment): besides three csd writes, the wait for the csds in turn (ipi_ack each)
    // becomes one ipi_ack after the last. Targets that finish further apart than ipi_ack
    // lose only the csd writes.
    let ack = skylake.raw().kernel.as_ref().unwrap().ipi_ack.cycles;
    let three = |off: &[Mechanism], irqs_off: Option<u64>| {
        let mut k = kernel_without(&skylake, off, 4);
        let steps = vec![
            Step::Mmap(2),
            Step::Store(0, 0, 2),
            Step::Compute(200_000),
            Step::Madvise(0, 0, 1),
        ];
        let main = k.spawn_process(script(steps), C0, true);
        k.run_until(Cycles(50_000));
        for c in 1..4 {
            let section = irqs_off.map_or(Step::Compute(1 << 40), Step::IrqsOff);
            k.spawn_thread(main, script(vec![section]), CpuId(c), false);
        }
        k.run();
        k.report()
    };
    let together = |off| three(off, Some(1_000_000));
    let (on, off) = (together(&[]), together(&[Mechanism::CsdQueue]));
    assert_eq!(on.ipis_sent, off.ipis_sent, "one call at a time: one IPI per target either way");
    assert!(on.irq_tlb[1..].iter().all(|&n| n >= 1), "{:?}", on.irq_tlb);
    assert_eq!(on.tasks[0].sys_cycles - off.tasks[0].sys_cycles, 3 * clt + 2 * ack);
    let apart = |off| three(off, None);
    assert_eq!(
        apart(&[]).tasks[0].sys_cycles - apart(&[Mechanism::CsdQueue]).tasks[0].sys_cycles,
        3 * clt
    );
}

#[test]
fn csd_queue_off_changes_nothing_without_cross_cpu_calls() {
    let skylake = preset_without("skylake", None);
    let on = madvise_rounds(kernel_without(&skylake, &[], 2), false, 10);
    assert_eq!(on.ipis_sent.iter().sum::<u64>(), 0);
    let off = madvise_rounds(kernel_without(&skylake, &[Mechanism::CsdQueue], 2), false, 10);
    assert_eq!(json(&on), json(&off));
}

/// skylake with `zap_batch` and `split_vma` set (the built-in preset holds both in its
/// whole-path `madvise` and `munmap`, so it gives 0).
fn skylake_with(batch: u64, split: u64) -> MachineSpec {
    let extra = format!(
        "zap_batch = {{ cycles = {batch}, source = \"test\" }}\n\
         split_vma = {{ cycles = {split}, source = \"test\" }}\nmprotect = "
    );
    let text = preset_text("skylake").replacen("mprotect = ", &extra, 1);
    MachineSpec::from_toml(&text, "test").unwrap()
}

/// storm's munmap loop: a 2-page region mapped beside the anchor, written, unmapped.
fn storm(spec: &MachineSpec, off: &[Mechanism]) -> KernelReport {
    storm_pages(spec, off, 2)
}

#[test]
fn zap_batch_and_vma_merge_off_are_the_preset_without_their_figures() {
    let set = skylake_with(700, 2500);
    let none = skylake_with(0, 0);
    let all_off = [Mechanism::ZapBatch, Mechanism::VmaMerge];
    assert_eq!(json(&storm(&set, &all_off)), json(&storm(&none, &[])));
    // Each alone removes its own cost: 50 splits; 50 munmap gathers and exit_mmap()'s.
    let on = storm(&set, &[]).tasks[0].sys_cycles;
    assert_eq!(on - storm(&set, &[Mechanism::VmaMerge]).tasks[0].sys_cycles, 50 * 2500);
    assert_eq!(on - storm(&set, &[Mechanism::ZapBatch]).tasks[0].sys_cycles, 51 * 700);
    // Where the preset holds them elsewhere (figures 0), the switches change nothing.
    assert!(!Mechanism::ZapBatch.present_on(&none) && !Mechanism::VmaMerge.present_on(&none));
    assert_eq!(json(&storm(&none, &all_off)), json(&storm(&none, &[])));
}

/// A scenario's report on `cpus` CPUs of skylake under `policy`, with `off` switched off.
fn scenario_run(
    name: &str,
    policy: &str,
    off: &[Mechanism],
    cpus: usize,
    p: &Params,
) -> KernelReport {
    let mechanisms = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
    let config = KernelConfig::new(cpus, 7).with_mechanisms(mechanisms);
    run_scenario(&tlblab_sim::machine::builtin("skylake").unwrap(), policy, config, name, p)
}

/// Who takes mmap_lock: before per-VMA locks (4.14) every fault and every MADV_DONTNEED takes
/// it for read; with them (6.18) neither does, but for the region's first write fault, which
/// prepares its anon_vma. The region's mmap takes it for write in both.
#[test]
fn mmap_lock_is_taken_by_faults_and_madvise_only_before_per_vma_locks() {
    let p = Params { busy: 0, iterations: 100, ..Params::default() };
    let new = scenario_run("madvise-busy", "linux-6.18", &[], 1, &p).mmap_lock;
    let old = scenario_run("madvise-busy", "linux-4.14", &[], 1, &p).mmap_lock;
    // One task: nobody ever waits.
    assert_eq!((new.slept, new.spin_cycles, old.slept, old.spin_cycles), (0, 0, 0, 0));
    // Both: the region's mmap and its first write fault (the anchor page's). 4.14 also: 100
    // rounds of a write fault and a DONTNEED, each read-locked.
    assert_eq!(new.acquired, 2, "{new:?}");
    assert_eq!(old.acquired, 2 + 2 * 100, "{old:?}");
    let off = scenario_run("madvise-busy", "linux-4.14", &[Mechanism::MmapLock], 1, &p);
    assert_eq!(off.mmap_lock.acquired, 0);
}

/// pthread-mmap's threads map, write and unmap in a shared mm: on 4.14 their faults wait for
/// each other's munmap, which holds the lock for write through its flush; the waits make the
/// run longer than without the lock, and a sleeper's CPU goes idle.
#[test]
fn mmap_lock_serialises_threads_that_map_and_unmap() {
    let p = Params { tasks: 2, pages: 16, iterations: 50, ..Params::default() };
    let on = scenario_run("pthread-mmap", "linux-4.14", &[], 2, &p);
    let off = scenario_run("pthread-mmap", "linux-4.14", &[Mechanism::MmapLock], 2, &p);
    let waits = on.mmap_lock.slept + u64::from(on.mmap_lock.spin_cycles > 0);
    assert!(waits > 0, "{:?}", on.mmap_lock);
    assert!(on.elapsed_cycles > off.elapsed_cycles, "{} {}", on.elapsed_cycles, off.elapsed_cycles);
    assert_eq!(off.mmap_lock, crate::stats::MmapLockStats::default());
}

/// pingpong's loops reference their own code and data each round trip: without PCID (4.13)
/// every switch flushes, so each side refills its working set ((2 + 6) + (2 + 5) pages) every
/// round trip; with PCID (4.14) the two mms keep their ASIDs and nothing is refilled. (Without
/// wake-up preemption, so that the two sides alternate strictly: a side preempted at its send
/// lets the other run two iterations on one refill.)
#[test]
fn working_set_is_refilled_after_every_flushing_switch_only() {
    let p = Params { iterations: 200, ..Params::default() };
    let scenario_run = |name, policy, off: &[Mechanism], cpus, p: &Params| {
        let off: Vec<_> = off.iter().copied().chain([Mechanism::WakeupPreemption]).collect();
        scenario_run(name, policy, &off, cpus, p)
    };
    let walks = |r: &KernelReport| {
        let h = &r.hw;
        h.dtlb_load_misses.walk_completed
            + h.dtlb_store_misses.walk_completed
            + h.itlb_misses.walk_completed
    };
    let on = scenario_run("pingpong", "linux-4.13", &[], 1, &p);
    let off = scenario_run("pingpong", "linux-4.13", &[Mechanism::WorkingSet], 1, &p);
    let per_trip = (walks(&on) - walks(&off)) as f64 / 200.0;
    assert!((15.0..=15.5).contains(&per_trip), "{per_trip} walks per round trip");
    assert!(on.tasks[0].user_cycles > off.tasks[0].user_cycles);
    let pcid = scenario_run("pingpong", "linux-4.14", &[], 1, &p);
    let pcid_off = scenario_run("pingpong", "linux-4.14", &[Mechanism::WorkingSet], 1, &p);
    // The first round trips fill the TLB; after that nothing is refilled.
    assert!(walks(&pcid) - walks(&pcid_off) <= 2 * 15, "{}", walks(&pcid) - walks(&pcid_off));
}

/// Memory-level parallelism: pingpong --touch 512 refills 512 pages after every flushing switch
/// (4.13); overlapped two at a time (skylake's two page walkers) they cost less user time. A
/// touch that fits the L1 dTLB (16 pages, with PCID: 4.14) misses only on its first round
/// trips: nothing to overlap after them.
#[test]
fn mlp_overlaps_refills_and_changes_nothing_without_misses() {
    let user = |touch: u64, policy: &str, off: &[Mechanism]| {
        let p = Params { touch, iterations: 50, ..Params::default() };
        scenario_run("pingpong", policy, off, 1, &p).tasks[0].user_cycles
    };
    let (on, off) = (user(512, "linux-4.13", &[]), user(512, "linux-4.13", &[Mechanism::Mlp]));
    assert!(on * 10 < off * 8, "{on} {off}: at least 20% less with 2 walkers");
    // The saving is the first round trips' alone: the same after 50 round trips as after 100.
    let saved = |iterations: u64| {
        let user = |off: &[Mechanism]| {
            let p = Params { touch: 16, iterations, ..Params::default() };
            scenario_run("pingpong", "linux-4.14", off, 1, &p).tasks[0].user_cycles
        };
        user(&[Mechanism::Mlp]) - user(&[])
    };
    assert_eq!(saved(50), saved(100), "the first round trips only");
}

/// `compiler-reuse`: the measured cc1 uses a text 16 times its fetch faults and comes back to
/// its code pages as the real one does, so S1's deferred flush (the whole user PCID at the
/// return to user) costs it code refills too, where the assumed compiler's text (one page per
/// fetch fault) fitted its iTLB and cost almost none: deferral's extra iTLB walks grow more
/// than fivefold and its extra translation cycles by more than 40% (seen: 11x and 1.75x in
/// this 60-ms window). Off, the run is the model before the mechanism.
#[test]
fn measured_compiler_reuse_makes_a_deferred_user_flush_cost_code_refills() {
    let p = Params { tasks: 8, window_ms: 60, ..Params::default() };
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    // (iTLB walks, translation cycles of every kind) of a window.
    let run = |policy: &str, off: &[Mechanism]| {
        let mechanisms = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
        let config = KernelConfig::new(4, 7).with_mechanisms(mechanisms);
        let policy = Policy::named(policy).unwrap();
        let mut k = Kernel::new(&spec, &policy, config, crate::observer::NoObserver).unwrap();
        let s = scenario("kbuild").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(!s.run(&mut k, &p), "a window ends before the build");
        let h = k.report().hw;
        let cycles = [&h.dtlb_load_misses, &h.dtlb_store_misses, &h.itlb_misses]
            .iter()
            .map(|m| m.translation_cycles)
            .sum::<u64>();
        (h.itlb_misses.walk_completed as f64, cycles as f64)
    };
    let extra = |off: &[Mechanism]| {
        let (deferred, invpcid) = (run("pti-deferred", off), run("pti-invpcid", off));
        (deferred.0 - invpcid.0, deferred.1 - invpcid.1)
    };
    let (on, off) = (extra(&[]), extra(&[Mechanism::CompilerReuse]));
    assert!(on.0 > 5.0 * off.0, "extra iTLB walks: {} on, {} off", on.0, off.0);
    assert!(on.1 > 1.4 * off.1, "extra translation cycles: {} on, {} off", on.1, off.1);
}

/// A program that maps 64 pages, writes them, then reads a list of them in one scattered
/// touch (`Touch::scattered`), the list ending with a page past the region's end.
struct Scattered {
    step: u32,
    vma: Option<VmaId>,
}

impl Program for Scattered {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        self.step += 1;
        if let crate::program::Outcome::Mapped(v) = env.last {
            self.vma = Some(v);
        }
        match self.step {
            1 => Action::Syscall(crate::program::Syscall::Mmap { pages: 64 }),
            2 => Action::Touch(Touch::new(self.vma.unwrap(), 0, 64, AccessKind::Store, 1)),
            3 => {
                let list = [5, 40, 5, 63, 200, 7];
                Action::Touch(Touch::scattered(self.vma.unwrap(), &list, AccessKind::Load, 100))
            }
            _ => Action::Exit,
        }
    }
}

/// A scattered touch references its listed pages in order, repeats included, each with its
/// work; a listed page past the region's end ends the touch there (a SIGSEGV in the real
/// program), not the run, and faults nothing.
#[test]
fn a_scattered_touch_references_its_list_and_stops_at_a_page_past_the_end() {
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let mut k = kernel_without(&spec, &[], 1);
    k.spawn_process(Box::new(Scattered { step: 0, vma: None }), CpuId(0), true);
    assert!(k.run(), "the program goes on to exit");
    let r = k.report();
    assert_eq!(r.page_faults, 64);
    assert_eq!(r.hw.accesses.load, 4, "pages 5, 40, 5 and 63; 200 and what follows dropped");
    assert_eq!(r.tasks[0].work_cycles, 64 + 4 * 100);
}

/// A program that maps 1,024 pages, writes them, then reads them all 20 times: every reference
/// misses skylake's 64-entry L1 dTLB and hits its 1,536-entry STLB. `dependent`: each touch is a
/// pointer chase.
struct Chaser {
    step: u32,
    vma: Option<VmaId>,
    dependent: bool,
}

impl Program for Chaser {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        self.step += 1;
        if let crate::program::Outcome::Mapped(v) = env.last {
            self.vma = Some(v);
        }
        let touch = |vma, kind, dependent| {
            let t = Touch { dependent, ..Touch::new(vma, 0, 1024, kind, 1) };
            Action::Touch(t)
        };
        match self.step {
            1 => Action::Syscall(crate::program::Syscall::Mmap { pages: 1024 }),
            2 => touch(self.vma.unwrap(), AccessKind::Store, self.dependent),
            3..=22 => touch(self.vma.unwrap(), AccessKind::Load, self.dependent),
            _ => Action::Exit,
        }
    }
}

fn chase(dependent: bool, off: &[Mechanism]) -> KernelReport {
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let mut k = kernel_without(&spec, off, 1);
    k.spawn_process(Box::new(Chaser { step: 0, vma: None, dependent }), CpuId(0), true);
    assert!(k.run());
    k.report()
}

/// Pointer chasing: a reference whose address the one before loads cannot start its walk
/// early, so a dependent stream gets no memory-level parallelism: it runs exactly as with
/// `mlp` off, and slower than the same references made independently (which two walkers and
/// the work overlap). Off, the flag is ignored; independent streams never see the mechanism.
#[test]
fn pointer_chase_gets_no_memory_level_parallelism() {
    let dep = chase(true, &[]);
    assert_eq!(json(&dep), json(&chase(true, &[Mechanism::Mlp])));
    let indep = chase(false, &[]);
    assert_eq!(json(&indep), json(&chase(false, &[Mechanism::PointerChase])));
    assert_eq!(json(&indep), json(&chase(true, &[Mechanism::PointerChase])));
    let (d, i) = (dep.tasks[0].user_cycles, indep.tasks[0].user_cycles);
    // 20 × 1,024 STLB hits of 12 cycles: serial, ≈ 246,000 cycles; overlapped two at a time
    // and under the work, half that.
    let stlb = 20 * 1024 * 12;
    assert!(d >= i + stlb / 2 - 1024, "{d} vs {i}");
    assert_eq!(dep.tasks[0].work_cycles, indep.tasks[0].work_cycles);
}

/// `stlb-pipelined`: 20 independent load touches of 1,024 written pages, all STLB hits after the
/// first (skylake's STLB holds 1,536), cost their work (1 cycle a page, one lookup a cycle)
/// rather than the hits' 12 cycles shared by the two walkers (6 a page): with it off, 5 cycles
/// more per page of those touches. A dependent stream never overlaps, so it is the same either
/// way, and the hardware counts every lookup in full both ways.
#[test]
fn stlb_hits_are_pipelined_one_a_cycle_beside_the_walks() {
    let on = chase(false, &[]);
    let off = chase(false, &[Mechanism::StlbPipelined]);
    let (on_user, off_user) = (on.tasks[0].user_cycles, off.tasks[0].user_cycles);
    let saved = off_user - on_user;
    // The first load touch still walks a few pages; the other 19 hit the STLB throughout.
    let per_page = 12 / 2 - 1;
    assert!(saved >= 19 * 1024 * per_page, "{saved}");
    assert!(saved <= 20 * 1024 * per_page, "{saved}");
    assert_eq!(on.tasks[0].work_cycles, off.tasks[0].work_cycles);
    let hw = |r: &KernelReport| serde_json::to_string(&r.hw).unwrap();
    assert_eq!(hw(&on), hw(&off), "the counters see every lookup either way");
    assert_eq!(json(&chase(true, &[])), json(&chase(true, &[Mechanism::StlbPipelined])));
}

/// `zero-page-line`: pingpong's touches read never-written memory, the zero page, whose one
/// line every page maps: each page's work is the loop's measured cycle, not the 10 of a page of
/// its own (`cycles_per_page`): the programs' work is a tenth, exactly. Other scenarios are the
/// same either way.
#[test]
fn zero_page_loads_cost_the_loop_not_a_page_of_their_own() {
    let p = Params { touch: 512, iterations: 50, ..Params::default() };
    let on = scenario_run("pingpong", "linux-4.14", &[], 1, &p);
    let off = scenario_run("pingpong", "linux-4.14", &[Mechanism::ZeroPageLine], 1, &p);
    let work = |r: &KernelReport| r.tasks.iter().map(|t| t.work_cycles).sum::<u64>();
    assert!(work(&on) > 0);
    assert_eq!(work(&on) * 10, work(&off));
    let zero_page_load = crate::workloads::ZERO_PAGE_LOAD_CYCLES;
    assert_eq!(work(&on), 2 * 50 * 512 * zero_page_load, "each side, each round trip");
    assert!(on.tasks[0].user_cycles < off.tasks[0].user_cycles);
    let skylake = preset_without("skylake", None);
    assert_eq!(json(&storm(&skylake, &[])), json(&storm(&skylake, &[Mechanism::ZeroPageLine])));
}

/// Nested paging: skylake-kvm's guest walks under EPT make host references and cost more; off,
/// the run is exactly the preset without `[guest.nested]`; on bare metal it is not present and
/// off changes nothing.
#[test]
fn nested_paging_off_is_the_preset_without_it() {
    let kvm = preset_without("skylake-kvm", None);
    assert!(Mechanism::NestedPaging.present_on(&kvm));
    let on = madv_migrate(&kvm, &[]);
    let off = madv_migrate(&kvm, &[Mechanism::NestedPaging]);
    let native = madv_migrate(&preset_without("skylake-kvm", Some("[guest.nested]")), &[]);
    assert_eq!(json(&off), json(&native));
    assert!(
        !Mechanism::NestedPaging.present_on(&preset_without("skylake-kvm", Some("[guest.nested]")))
    );
    let nested = on.hw.nested_paging.as_ref().expect("a nested_paging block under EPT");
    assert!(off.hw.nested_paging.is_none());
    assert!(nested.stats.memory_references > 0);
    assert!(nested.stats.translations > on.hw.page_walks.walks, "≥ 2 per walk");
    assert!(on.hw.page_walks.cycles > off.hw.page_walks.cycles);
    let skylake = preset_without("skylake", None);
    assert!(!Mechanism::NestedPaging.present_on(&skylake));
    let on = madv_migrate(&skylake, &[]);
    assert_eq!(json(&on), json(&madv_migrate(&skylake, &[Mechanism::NestedPaging])));
}

/// skylake with INVLPG that drops every translation (`invlpg_tlb_scope = "all"`, as measured
/// in this project's KVM guest) and a kernel refill of `refill` cycles after each ranged flush.
fn skylake_invlpg_all(refill: u64) -> MachineSpec {
    let text = preset_text("skylake")
        .replacen(
            "invlpg_psc_scope = ",
            "invlpg_tlb_scope = \"all\"\ninvlpg_tlb_scope_source = \"test\"\ninvlpg_psc_scope = ",
            1,
        )
        .replacen(
            "mprotect = ",
            &format!("invlpg_refill = {{ cycles = {refill}, source = \"test\" }}\nmprotect = "),
            1,
        );
    MachineSpec::from_toml(&text, "test").unwrap()
}

/// storm's munmap loop of `pages` pages (50 rounds), one CPU.
fn storm_pages(spec: &MachineSpec, off: &[Mechanism], pages: u64) -> KernelReport {
    let p = Params { busy: 0, pages, iterations: 50, ..Params::default() };
    scenario_report(spec, off, 1, "storm", &p)
}

/// invlpg-scope: each ranged flush (one INVLPG here: 2 pages flushed as one range) drops the
/// loop's other translations, which it then walks again, and costs the kernel its refill; a
/// full flush (40 pages, past the ceiling) runs no INVLPG and is unchanged. Off, the run is
/// the preset with the SDM's INVLPG (its refill figure unused); on a preset with the SDM's
/// INVLPG the mechanism is not present.
#[test]
fn invlpg_scope_drops_every_translation_and_charges_the_kernel_refill() {
    let all = skylake_invlpg_all(1000);
    assert!(Mechanism::InvlpgScope.present_on(&all));
    let on = storm_pages(&all, &[], 2);
    let off = storm_pages(&all, &[Mechanism::InvlpgScope], 2);
    let sdm = storm_pages(&skylake_invlpg_all(1000).with_architectural_invlpg(), &[], 2);
    assert_eq!(json(&off), json(&sdm));
    let ranged: u64 =
        on.flush_sizes.by_pages.iter().filter(|(pages, _)| **pages > 0).map(|(_, n)| n.0).sum();
    assert!(ranged >= 50, "a ranged flush per round: {ranged}");
    let sys = |r: &KernelReport| r.tasks[0].sys_cycles;
    assert!(sys(&on) >= sys(&off) + ranged * 1000, "{} vs {}", sys(&on), sys(&off));
    assert!(on.hw.page_walks.walks > off.hw.page_walks.walks + 50, "the rest is walked again");
    // A full flush keeps the globals and needs no INVLPG: nothing changes.
    let full = |off: &[Mechanism]| json(&storm_pages(&all, off, 40));
    assert_eq!(full(&[]), full(&[Mechanism::InvlpgScope]));
    let skylake = preset_without("skylake", None);
    assert!(!Mechanism::InvlpgScope.present_on(&skylake));
    assert_eq!(json(&storm(&skylake, &[])), json(&storm(&skylake, &[Mechanism::InvlpgScope])));
}

/// invlpg-scope on a shootdown: a target pays the kernel's refill after it acknowledged
/// (`csd_unlock()` follows `flush_tlb_func()`), so the initiator does not wait for it. Under
/// 4.14 (the local flush before the IPIs) storm's one-page mprotect with a busy sibling takes
/// the run one refill per flush longer for a refill of R cycles than for none (the initiator's
/// own), not two (its own, then the target's before the ack); the target still pays its own.
#[test]
fn invlpg_scope_refill_on_a_target_comes_after_its_acknowledgement() {
    let run = |refill: u64| {
        let config = KernelConfig::new(2, 7);
        let policy = Policy::named("linux-4.14").unwrap();
        let mut k =
            Kernel::new(&skylake_invlpg_all(refill), &policy, config, TraceLog::default()).unwrap();
        let p = Params {
            busy: 1,
            pages: 1,
            iterations: 50,
            op: crate::workloads::StormOp::Mprotect,
            ..Params::default()
        };
        let s = scenario("storm").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(s.run(&mut k, &p));
        k.report()
    };
    let refill = 50_000;
    let (none, some) = (run(0), run(refill));
    // Two one-page flushes a round (PROT_READ, then back), each one INVLPG that drops all.
    let flushes = some.vmstat.nr_tlb_local_flush_one;
    assert!(flushes >= 100 && none.vmstat.nr_tlb_local_flush_one == flushes, "{flushes}");
    let longer = some.elapsed_cycles - none.elapsed_cycles;
    assert!(longer >= flushes * refill * 9 / 10, "its own refill: {longer}, {flushes} flushes");
    assert!(longer < flushes * refill * 3 / 2, "not the target's too: {longer}, {flushes}");
    let target = |r: &KernelReport| r.tasks[1].irq_in_user_cycles + r.tasks[1].irq_in_sys_cycles;
    assert!(target(&some) >= target(&none) + flushes * refill, "the target pays its refill");
}

/// llc-domains: off, milan is exactly the preset without its `[topology]` (one socket: the
/// section only splits it into CCXs); on, tlb_flush2's four threads (CPUs 0–3, one CCX) move
/// their csd, mmap_lock and page-lock lines within the CCX, cheaper than between CCXs, so the
/// same loop takes less time; without a `[topology]` the mechanism is not present.
#[test]
fn llc_domains_off_is_milan_without_its_topology_and_on_a_ccx_moves_lines_cheaper() {
    let milan = preset_without("milan", None);
    let flat = preset_without("milan", Some("[topology]"));
    assert!(Mechanism::LlcDomains.present_on(&milan));
    assert!(!Mechanism::LlcDomains.present_on(&flat));
    let p = Params { tasks: 4, threads: true, iterations: 64, ..Params::default() };
    let run =
        |spec: &MachineSpec, off: &[Mechanism]| scenario_report(spec, off, 16, "tlb-flush2", &p);
    let off = run(&milan, &[Mechanism::LlcDomains]);
    assert_eq!(json(&off), json(&run(&flat, &[])));
    assert_eq!(json(&run(&flat, &[])), json(&run(&flat, &[Mechanism::LlcDomains])));
    let on = run(&milan, &[]);
    let ops = |r: &KernelReport| r.tasks.iter().map(|t| t.ops).sum::<u64>();
    assert_eq!(ops(&on), ops(&off));
    assert!(
        on.elapsed_cycles < off.elapsed_cycles,
        "{} vs {}",
        on.elapsed_cycles,
        off.elapsed_cycles
    );
}

/// skylake with a fault on a hot frame measured at `hot` cycles.
fn skylake_hot_faults(hot: u64) -> MachineSpec {
    let line =
        format!("page_fault_anon_hot = {{ cycles = {hot}, source = \"test\" }}\nmprotect = ");
    MachineSpec::from_toml(&preset_text("skylake").replacen("mprotect = ", &line, 1), "test")
        .unwrap()
}

/// hot-frames: storm's 2-page loop frees its two frames at each munmap and faults them back at
/// the next round's writes, each at a distance of at most 3 (the last freed first), so every
/// fault but the first round's two costs the hot figure; off, every one costs page_fault_anon,
/// as on a preset that did not measure a hot fault (where the mechanism is not present).
#[test]
fn hot_frames_charge_a_refault_of_a_frame_freed_a_moment_ago_the_hot_figure() {
    let cold = tlblab_sim::machine::builtin("skylake")
        .unwrap()
        .kernel_costs()
        .unwrap()
        .page_fault_anon
        .cycles;
    let spec = skylake_hot_faults(cold / 2);
    assert!(Mechanism::HotFrames.present_on(&spec));
    let on = storm(&spec, &[]);
    let off = storm(&spec, &[Mechanism::HotFrames]);
    let sys = |r: &KernelReport| r.tasks[0].sys_cycles;
    // 50 rounds of 2 faults; the anchor's and the first round's find no freed frame.
    assert_eq!(sys(&off) - sys(&on), 49 * 2 * (cold - cold / 2));
    let plain = preset_without("skylake", None);
    assert!(!Mechanism::HotFrames.present_on(&plain));
    assert_eq!(json(&storm(&plain, &[])), json(&storm(&plain, &[Mechanism::HotFrames])));
    assert_eq!(json(&off), json(&storm(&skylake_hot_faults(0), &[])));
}
