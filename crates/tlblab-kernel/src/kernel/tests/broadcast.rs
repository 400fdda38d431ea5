//! Study S6's rules: the 6.15 global-ASID rules (eligibility, sampling, transition, the
//! ASID-space reset, freeing), Intel RAR's targeted flush, and the page-freeing locks.

use super::*;
use crate::ids::TLB_NR_DYN_ASIDS;
use crate::kernel::SwitchPhase;
use tlblab_sim::stats::OpKind;

/// A process on CPU 0 with threads spinning on CPUs 1…`cpus`-1, on a 6-CPU `machine`.
fn on_cpus(machine: &str, policy: &str, cpus: u16) -> (Kernel<TraceLog>, TaskId, MmId) {
    let mut k = kernel_on(machine, &Policy::named(policy).unwrap(), 6);
    let main = k.spawn_process(
        script(vec![Step::Mmap(1), Step::Store(0, 0, 1), Step::Compute(1 << 40)]),
        C0,
        true,
    );
    for c in 1..cpus {
        k.spawn_thread(main, script(vec![Step::Compute(1 << 40)]), CpuId(c), false);
    }
    k.run_until(Cycles(1_000_000));
    let mm = k.task_mm(main).unwrap();
    (k, main, mm)
}

/// A task id whose pid matches the current jiffy in its low five bits, and one that does not.
fn pids(k: &Kernel<TraceLog>) -> (TaskId, TaskId) {
    let j = k.jiffies() as u32;
    (TaskId(j & 0x1f), TaskId((j + 1) & 0x1f))
}

/// `mm_active_cpus_exceeds(mm, 3)`: an mm running on exactly three CPUs never gets a global
/// ASID, even when sampled; on four it gets one, but only when the flushing task's pid matches
/// the jiffy (`(pid & 0x1f) == (jiffies & 0x1f)`).
#[test]
fn a_global_asid_needs_four_active_cpus_and_a_matching_jiffy() {
    let (mut k, _, mm) = on_cpus("zen4", "linux-6.18+invlpgb", 3);
    let (matching, other) = pids(&k);
    assert_eq!(k.mm(mm).cpumask.iter().count(), 3);
    assert_eq!(k.consider_global_asid(C0, matching, mm), 0);
    assert_eq!(k.mm(mm).global_asid, None, "3 CPUs: never");

    let (mut k, _, mm) = on_cpus("zen4", "linux-6.18+invlpgb", 4);
    let (matching, other4) = pids(&k);
    assert_ne!(other, matching);
    k.consider_global_asid(C0, other4, mm);
    assert_eq!(k.mm(mm).global_asid, None, "4 CPUs, pid not sampled");
    k.consider_global_asid(C0, matching, mm);
    assert_eq!(k.mm(mm).global_asid, Some(Asid(TLB_NR_DYN_ASIDS)), "4 CPUs, sampled");
}

/// A lazy CPU does not count as active (`cpu_tlbstate_shared.is_lazy`), though its bit stays
/// in the mask: four CPUs of which one is lazy are three.
#[test]
fn a_lazy_cpu_is_not_active() {
    let (mut k, _, mm) = on_cpus("zen4", "linux-6.18+invlpgb", 4);
    k.cpus[3].tlb.is_lazy = true;
    assert!(k.mm(mm).cpumask.test(CpuId(3)));
    let (matching, _) = pids(&k);
    k.consider_global_asid(C0, matching, mm);
    assert_eq!(k.mm(mm).global_asid, None);
}

/// `finish_asid_transition()`: while CPUs run the mm under a dynamic ASID, every flush also
/// IPIs the whole mask (`mm_in_asid_transition()` in `native_flush_tlb_multi()`); a CPU in
/// `LOADED_MM_SWITCHING` to the mm that will pick the global ASID is not a straggler; once
/// none is left the transition ends.
#[test]
fn during_the_transition_dynamic_asid_cpus_still_get_ipis() {
    let (mut k, main, mm) = on_cpus("zen4", "linux-6.18+invlpgb", 5);
    let (matching, _) = pids(&k);
    k.consider_global_asid(C0, matching, mm);
    let g = k.mm(mm).global_asid.unwrap();
    let vpn = k.mm(mm).vma(VmaId(0)).unwrap().start.0;
    let info = k.flush_tlb_info(&FlushRequest::pages(mm, vpn, vpn + 1, false), 1, C0);
    let call = k.new_call(info, main);
    // CPUs 0–2 move over (a flush IPI's flush_tlb_func() does it); 3 and 4 lag behind.
    for c in 0..3 {
        k.flush_tlb_func(CpuId(c), call);
        assert_eq!(k.tlb_state(CpuId(c)).loaded_mm_asid, g);
    }
    assert!(k.asid_stragglers(mm));
    let mask = k.mm(mm).cpumask.clone();
    let (targets, _) = k.flush_targets(C0, &info, &mask);
    assert_eq!(targets, [1, 2, 3, 4].map(CpuId), "the whole mask, global ASID or not");
    // CPU 3 is switching to the mm and has not chosen its ASID: it will take the global one.
    k.flush_tlb_func(CpuId(4), call);
    k.cpus[3].tlb.loaded_mm = LoadedMm::Switching;
    k.cpus[3].switch = Some(Switch { next: main, phase: SwitchPhase::Load(None) });
    assert!(!k.asid_stragglers(mm), "only CPU 3, which will load the global ASID");
    assert!(!k.mm(mm).asid_transition, "transition over");
    // Had it already chosen a dynamic ASID, it would be a straggler.
    k.mms[mm.0 as usize].asid_transition = true;
    k.cpus[3].switch = Some(Switch { next: main, phase: SwitchPhase::End(Asid(2)) });
    assert!(k.asid_stragglers(mm));
}

/// `allocate_global_asid()` / `reset_global_asid_space()`: the first allocation after boot
/// resets the space (INVLPGB of every non-global translation, TLBSYNC); an mm's freed ASID is
/// reused only after the next reset, which comes when the allocations reach the top of the
/// space; an exhausted space gives nothing.
#[test]
fn the_global_asid_space_resets_with_a_flush_and_recycles_freed_asids() {
    let (mut k, _, mm) = on_cpus("zen4", "linux-6.18+invlpgb", 4);
    let other = k.spawn_process(script(vec![Step::Compute(1 << 40)]), CpuId(5), false);
    k.run_until(Cycles(2_000_000));
    let mm2 = k.task_mm(other).unwrap();
    let first = Asid(TLB_NR_DYN_ASIDS);
    let invlpgbs = |k: &Kernel<TraceLog>| k.hw_stats[0].ops[OpKind::Invlpgb.index()].count;

    assert_eq!(k.use_global_asid(C0, mm), 200 + 1000, "boot: reset = INVLPGB + TLBSYNC");
    assert_eq!(k.counters.broadcast.global_asid_resets, 1);
    assert_eq!(k.mm(mm).global_asid, Some(first));
    k.free_global_asid(mm);
    assert!(k.global_asids.freed[usize::from(first.0)]);

    // Not at the top yet: the next free ASID, not the freed one, and no reset.
    assert_eq!(k.use_global_asid(C0, mm2), 0);
    assert_eq!(k.mm(mm2).global_asid, Some(Asid(TLB_NR_DYN_ASIDS + 1)));
    k.free_global_asid(mm2);

    // The allocations reached the top: the next one resets, with its flush, and reuses.
    k.global_asids.last = k.global_asids.max() - 1;
    let before = invlpgbs(&k);
    assert_eq!(k.use_global_asid(C0, mm2), 200 + 1000);
    assert_eq!(invlpgbs(&k), before + 1, "one INVLPGB of everything non-global");
    assert_eq!(k.counters.broadcast.global_asid_resets, 2);
    assert_eq!(k.mm(mm2).global_asid, Some(first), "the freed ASID is free again");
    assert!(!k.global_asids.freed.iter().any(|&f| f));

    // Exhausted: global_asid_available == 0 gives none (the kernel warns once).
    k.free_global_asid(mm2);
    k.global_asids.available = 0;
    assert_eq!(k.use_global_asid(C0, mm2), 0);
    assert_eq!(k.mm(mm2).global_asid, None);
}

/// mm exit frees its global ASID (`mm_free_global_asid()` from `destroy_context()`): the
/// freed bitmap has it and one more ASID is available.
#[test]
fn an_exiting_mm_frees_its_global_asid() {
    let mut k = kernel_on("zen4", &Policy::named("linux-6.18+invlpgb").unwrap(), 6);
    let main = k.spawn_process(script(vec![Step::Compute(1_000_000)]), C0, true);
    k.run_until(Cycles(100_000));
    let mm = k.task_mm(main).unwrap();
    let available = k.global_asids.available;
    k.use_global_asid(C0, mm);
    assert_eq!(k.global_asids.available, available - 1);
    k.run_until(Cycles(100_000_000));
    assert!(k.tasks[main.0 as usize].report.exited.is_some());
    assert_eq!(k.global_asids.available, available);
    assert!(k.global_asids.freed[usize::from(TLB_NR_DYN_ASIDS)]);
}

/// RAR is refused on a preset without `[rar]`, as INVLPGB is on Intel.
#[test]
fn rar_needs_a_machine_with_rar() {
    let config = KernelConfig::new(2, 1);
    for machine in ["zen4", "skylake"] {
        let spec = tlblab_sim::machine::builtin(machine).unwrap();
        let policy = Policy::named("linux-6.18+rar").unwrap();
        let err = Kernel::new(&spec, &policy, config.clone(), crate::TraceLog::default())
            .err()
            .expect("refused");
        assert!(err.to_string().contains("Intel RAR"), "{err}");
    }
    let spr = tlblab_sim::machine::builtin("sapphire-rapids").unwrap();
    let invlpgb = Policy::named("linux-6.18+invlpgb").unwrap();
    assert!(Kernel::new(&spr, &invlpgb, config, crate::TraceLog::default()).is_err());
}

/// RAR is targeted: a flush of an mm with a global ASID reaches the CPUs of its mm_cpumask
/// only, their TLBs are invalidated by the action (the INVPCID-equivalent counted on each), and
/// no flush handler runs on them (no TLB interrupt, no flush_tlb_func()).
#[test]
fn rar_reaches_only_the_mask_and_runs_no_handler() {
    let (mut k, main, mm) = on_cpus("sapphire-rapids", "linux-6.18+rar", 4);
    let (matching, _) = pids(&k);
    k.consider_global_asid(C0, matching, mm);
    let g = k.mm(mm).global_asid.expect("RAR uses the global ASIDs");
    let vpn = k.mm(mm).vma(VmaId(0)).unwrap().start.0;
    let info = k.flush_tlb_info(&FlushRequest::pages(mm, vpn, vpn + 1, false), 1, C0);
    let call = k.new_call(info, main);
    for c in 0..4 {
        k.flush_tlb_func(CpuId(c), call);
        assert_eq!(k.tlb_state(CpuId(c)).loaded_mm_asid, g);
    }
    assert!(!k.asid_stragglers(mm));
    let irqs: Vec<u64> = k.counters.irq_tlb.clone();
    let invpcid =
        |k: &Kernel<TraceLog>, c: usize| k.hw_stats[c].ops[OpKind::InvpcidIndivAddr.index()].count;
    let before: Vec<u64> = (0..6).map(|c| invpcid(&k, c)).collect();
    let (cycles, wait) = k.rar_tlb_flush(C0, call);
    assert_eq!(k.counters.broadcast.rar_actions, 3, "CPUs 1–3: the mask but the initiator");
    for (c, &b) in before.iter().enumerate() {
        match c {
            1..=3 => assert_eq!(invpcid(&k, c), b + 1, "CPU {c}: the action's invalidation"),
            4 | 5 => assert_eq!(invpcid(&k, c), b, "CPU {c} is outside the mask"),
            _ => {}
        }
    }
    assert_eq!(k.counters.irq_tlb, irqs, "no flush handler ran anywhere");
    let rar = k.rar.unwrap();
    assert!(cycles >= 3 * rar.send, "the initiator sends three");
    assert_eq!(wait, rar.wait, "then waits for their completion");
}

/// The LRU lock: with the pre-6.15 `lru_add_drain()` in the zap path every page of
/// tlb_flush2 costs two acquisitions (its batch drained, its release), and the wait for the
/// lock grows with the tasks sharing it; without the drain a page is freed with its batch,
/// two acquisitions per 31 pages, and far less waiting.
#[test]
fn the_lru_lock_serialises_the_drain_and_its_removal_cuts_the_acquisitions() {
    let spec = tlblab_sim::machine::builtin("milan").unwrap();
    // The lock alone: with mechanism tlbstate-lines the initiators' reads of the targets' TLB
    // state (≈ 4.5 transfers per flush at 4 tasks) shift when the tasks reach the lock, and
    // at 4 tasks they then meet there more often than at 8 (534 against 437 cycles of wait
    // per page); the growth with the tasks holds without them.
    let off =
        crate::mechanisms::Mechanisms::all().without(crate::mechanisms::Mechanism::TlbstateLines);
    let run = |policy: &str, tasks: usize| {
        let p = crate::workloads::Params { tasks, iterations: 512, ..Default::default() };
        let config = KernelConfig::new(tasks, 1).with_mechanisms(off);
        let r = run_scenario(&spec, policy, config, "tlb-flush2", &p);
        let pages: u64 = r.tasks.iter().map(|t| t.ops).sum();
        (r.broadcast.lru_lock, pages)
    };
    let (drain1, pages1) = run("linux-6.18+lru-drain", 1);
    assert!(drain1.acquisitions >= 2 * pages1, "{drain1:?} for {pages1} pages");
    assert_eq!(drain1.wait_cycles, 0, "one task: nobody to wait for");
    let (drain8, pages8) = run("linux-6.18+lru-drain", 8);
    assert!(drain8.acquisitions >= 2 * pages8);
    assert!(drain8.contended > 0);
    let per = |s: crate::stats::LockStats, pages: u64| s.wait_cycles as f64 / pages as f64;
    let (drain4, pages4) = run("linux-6.18+lru-drain", 4);
    assert!(per(drain4, pages4) < per(drain8, pages8), "waits grow with the tasks");
    let (plain8, pages8b) = run("linux-6.18", 8);
    assert!(plain8.acquisitions * 10 < pages8b, "{plain8:?} for {pages8b} pages");
    assert!(per(plain8, pages8b) * 5.0 < per(drain8, pages8));
}

/// `spin_lock_irqsave()` (mechanism `lock-irqs-off`): a CPU waiting for or holding the LRU
/// lock has interrupts off, so a shootdown reaching it waits for the release and the
/// initiator's `csd_lock_wait()` with it. With the pre-6.15 drain under IPIs (two
/// acquisitions a page, contended at 8 tasks) the initiators' median latency grows; the lock
/// work itself is the same (two acquisitions a page either way). Without the locks (a preset
/// without `[locks]`) the switch changes nothing.
#[test]
fn lock_irqs_off_makes_shootdowns_wait_for_the_lock_holders() {
    use crate::mechanisms::{Mechanism, Mechanisms};
    let run = |machine: &str, policy: &str, off: bool| {
        let spec = tlblab_sim::machine::builtin(machine).unwrap();
        // Isolated from tlbstate-lines, whose line reads move the flush timing at the lock.
        let m = Mechanisms::all().without(Mechanism::TlbstateLines);
        let m = if off { m.without(Mechanism::LockIrqsOff) } else { m };
        let config = KernelConfig::new(8, 1).with_mechanisms(m);
        let p = crate::workloads::Params { tasks: 8, iterations: 400, ..Default::default() };
        run_scenario(&spec, policy, config, "tlb-flush2", &p)
    };
    let median = |r: &crate::stats::KernelReport| {
        let mut l = r.broadcast.flush_latency_cycles.clone();
        l.sort_unstable();
        l[l.len() / 2]
    };
    let pages = |r: &crate::stats::KernelReport| r.tasks.iter().map(|t| t.ops).sum::<u64>();
    let on = run("milan", "linux-6.18+lru-drain", false);
    let off = run("milan", "linux-6.18+lru-drain", true);
    assert!(on.broadcast.lru_lock.acquisitions >= 2 * pages(&on));
    assert!(off.broadcast.lru_lock.acquisitions >= 2 * pages(&off));
    assert!(median(&on) > median(&off), "{} vs {}", median(&on), median(&off));
    let json = |r: &crate::stats::KernelReport| serde_json::to_string(r).unwrap();
    let (a, b) =
        (run("zen3", "linux-6.18+lru-drain", false), run("zen3", "linux-6.18+lru-drain", true));
    assert_eq!(json(&a), json(&b), "zen3 has no [locks]");
}

/// The LRU list's lines (mechanism `lru-list-lines`): with the drain every page goes onto the
/// shared list and off it again, so at 8 tasks its neighbours are mostly other CPUs' folios
/// and each acquisition holds the lock longer than the per-folio figure alone; without the
/// drain a CPU's 31 folios go on and off together, next to each other, so the extra per
/// acquisition is at most a transfer or two. Off, the holds are the figures alone.
#[test]
fn lru_list_lines_lengthen_the_holds_of_single_folios_on_a_shared_list() {
    use crate::mechanisms::{Mechanism, Mechanisms};
    let spec = tlblab_sim::machine::builtin("milan").unwrap();
    // CPUs 0–7 share a CCX: a line moved among them costs the transfer within it.
    let topology = spec.raw().topology.clone().unwrap();
    let transfer = topology.cache_line_transfer_llc.unwrap().cycles;
    let run = |policy: &str, off: bool| {
        let m = Mechanisms::all();
        let m = if off { m.without(Mechanism::LruListLines) } else { m };
        let config = KernelConfig::new(8, 1).with_mechanisms(m);
        let p = crate::workloads::Params { tasks: 8, iterations: 400, ..Default::default() };
        run_scenario(&spec, policy, config, "tlb-flush2", &p).broadcast.lru_lock
    };
    let per = |s: crate::stats::LockStats| s.hold_cycles as f64 / s.acquisitions as f64;
    let (on, off) = (run("linux-6.18+lru-drain", false), run("linux-6.18+lru-drain", true));
    assert!(per(on) > per(off) + 0.5 * transfer as f64, "{on:?} vs {off:?}");
    let (on, off) = (run("linux-6.18", false), run("linux-6.18", true));
    assert!(per(on) <= per(off) + 2.0 * transfer as f64, "{on:?} vs {off:?}");
}
