//! Mitigations (`kernel/mitigations.rs`, mechanism `mitigations`): on, a preset's figures are
//! charged as they are (byte-identical to the preset without `[mitigations]`); off, each
//! figure loses exactly its mitigation events' cost; IBPB is charged where `cond_mitigation()`
//! issues it.

use super::*;
use crate::mechanisms::{Mechanism, Mechanisms};
use crate::workloads::Params;
use tlblab_sim::machine::BUILTIN_PRESETS;

const RETPOLINE: u64 = 30;
const SAFE_RET: u64 = 20;
const UNTRAIN: u64 = 50;
const RSB: u64 = 200;
const VERW: u64 = 40;
const IBPB: u64 = 4000;

/// skylake with a `[mitigations]` block: every per-event figure, IBPB as `ibpb_mode` says, and
/// the events of the syscall, fault, context-switch and wake-up paths.
fn skylake_with(ibpb_mode: &str, opted_in: bool, paths: &str) -> MachineSpec {
    let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1;
    let block = format!(
        "\n[mitigations]\nsource = \"test\"\n\
         retpoline = {{ cycles = {RETPOLINE}, source = \"test\" }}\n\
         safe_ret = {{ cycles = {SAFE_RET}, source = \"test\" }}\n\
         untrain_ret = {{ cycles = {UNTRAIN}, source = \"test\" }}\n\
         rsb_fill = {{ cycles = {RSB}, source = \"test\" }}\n\
         verw = {{ cycles = {VERW}, source = \"test\" }}\n\
         ibpb = {{ cycles = {IBPB}, source = \"test\", unverified = true }}\n\
         ibpb_mode = \"{ibpb_mode}\"\nibpb_opted_in = {opted_in}\n{paths}"
    );
    MachineSpec::from_toml(&format!("{text}{block}"), "test").unwrap()
}

const PATHS: &str = "[mitigations.paths.syscall]\nrets = 4\nentries = 1\n\
    [mitigations.paths.page_fault_anon]\nrets = 30\nentries = 1\n\
    [mitigations.paths.context_switch]\nrets = 10\nindirect = 2\nswitches = 1\n\
    [mitigations.paths.wakeup]\nrets = 8\nindirect = 3\n";

fn run(
    spec: &MachineSpec,
    scenario: &str,
    off: &[Mechanism],
    cpus: usize,
    p: &Params,
) -> KernelReport {
    let mechanisms = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
    run_scenario(
        spec,
        "linux-6.18",
        KernelConfig::new(cpus, 7).with_mechanisms(mechanisms),
        scenario,
        p,
    )
}

fn json(r: &KernelReport) -> String {
    serde_json::to_string(r).unwrap()
}

/// On, the figures are charged as measured: the same report, byte for byte, as the preset
/// without `[mitigations]` (IBPB, which no figure holds, is off here).
#[test]
fn on_the_figures_are_charged_as_they_are() {
    let plain = tlblab_sim::machine::builtin("skylake").unwrap();
    let with = skylake_with("off", false, PATHS);
    for (scenario, cpus, p) in [
        ("pingpong", 1, Params { iterations: 200, ..Params::default() }),
        ("madvise-busy", 2, Params { busy: 1, iterations: 200, ..Params::default() }),
        ("munmap-threads", 2, Params { tasks: 2, iterations: 50, ..Params::default() }),
    ] {
        let a = run(&plain, scenario, &[], cpus, &p);
        let b = run(&with, scenario, &[], cpus, &p);
        assert_eq!(json(&a), json(&b), "{scenario}");
        // Off on the preset without [mitigations]: nothing to act on.
        assert_eq!(json(&a), json(&run(&plain, scenario, &[Mechanism::Mitigations], cpus, &p)));
    }
    assert!(Mechanism::Mitigations.present_on(&with));
    assert!(!Mechanism::Mitigations.present_on(&plain));
}

/// Off, each listed figure loses exactly its events' cost, and the others keep theirs.
#[test]
fn off_each_figure_loses_exactly_its_events() {
    let spec = skylake_with("off", false, PATHS);
    let full = spec.kernel_costs().unwrap().clone();
    let kernel = |off: &[Mechanism]| kernel_off(&spec, off);
    let on = kernel(&[]);
    let off = kernel(&[Mechanism::Mitigations]);
    assert_eq!(on.costs, full);
    let ret_thunk = SAFE_RET;
    assert_eq!(off.costs.syscall.cycles, full.syscall.cycles - (4 * ret_thunk + UNTRAIN + VERW));
    assert_eq!(
        off.costs.page_fault_anon.cycles,
        full.page_fault_anon.cycles - (30 * ret_thunk + UNTRAIN + VERW)
    );
    assert_eq!(
        off.costs.context_switch.cycles,
        full.context_switch.cycles - (10 * ret_thunk + 2 * (RETPOLINE + ret_thunk) + RSB)
    );
    assert_eq!(
        off.costs.wakeup.cycles,
        full.wakeup.cycles - (8 * ret_thunk + 3 * (RETPOLINE + ret_thunk))
    );
    assert_eq!(off.costs.page_fault_zero, full.page_fault_zero);
    assert_eq!(off.costs.switch_mm, full.switch_mm);
    assert_eq!(off.costs.madvise, full.madvise);
}

/// A process pingpong on one CPU: every switch goes to the other mm, so with conditional IBPB
/// and both tasks opted in each round trip issues two IBPBs (plus one for the boot's
/// `LAST_USER_MM_INIT`), and off removes exactly those and the two RSB fills per round trip:
/// the tasks' system time differs by IBPBs × IBPB + switches × RSB fill.
#[test]
fn pingpong_pays_two_ibpbs_and_two_rsb_fills_per_round_trip() {
    let rounds = 200;
    let p = Params { iterations: rounds, ..Params::default() };
    let rsb_only = "[mitigations.paths.context_switch]\nswitches = 1\n";
    let spec = skylake_with("conditional", true, rsb_only);
    let policy = Policy::named("linux-6.18").unwrap();
    let go = |off: &[Mechanism]| {
        let m = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
        let mut k = Kernel::new(
            &spec,
            &policy,
            KernelConfig::new(1, 7).with_mechanisms(m),
            crate::observer::NoObserver,
        )
        .unwrap();
        let s = crate::workloads::scenario("pingpong").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(s.run(&mut k, &p));
        let ibpbs: u64 = k.ibpbs().iter().sum();
        (k.report(), ibpbs)
    };
    let (on, ibpbs) = go(&[]);
    let (off, none) = go(&[Mechanism::Mitigations]);
    assert_eq!(none, 0);
    // In the measured window every switch goes from one process to the other: one IBPB and
    // one RSB fill each, two per round trip (a round trip's last switch may fall outside).
    assert!(ibpbs.abs_diff(2 * rounds) <= 2, "{ibpbs} IBPBs for {rounds} round trips");
    let sys = |r: &KernelReport| r.tasks.iter().map(|t| t.sys_cycles).sum::<u64>();
    // One CPU, never idle: the run is longer by exactly those. The tasks' system time holds
    // all but the switch away from the task that exits last (a switch is the time of the task
    // switched away from; the exited one is no longer followed).
    assert_eq!(on.elapsed_cycles - off.elapsed_cycles, ibpbs * (IBPB + RSB));
    let extra = sys(&on) - sys(&off);
    assert!((ibpbs - 1..=ibpbs).any(|n| extra == n * (IBPB + RSB)), "{extra} for {ibpbs}");
    // Not opted in: conditional IBPB fires only at the CPU's first switch to a user task
    // (NOTE: LAST_USER_MM_INIT carries the IBPB bit).
    let spec = skylake_with("conditional", false, rsb_only);
    let mut k =
        Kernel::new(&spec, &policy, KernelConfig::new(1, 7), crate::observer::NoObserver).unwrap();
    let s = crate::workloads::scenario("pingpong").unwrap();
    s.install(&mut k, &p).unwrap();
    assert!(s.run(&mut k, &p));
    assert_eq!(k.ibpbs().iter().sum::<u64>(), 1);
}

/// A thread pingpong (one mm) never changes the mm: no IBPB, even always-on.
#[test]
fn threads_of_one_mm_never_ibpb() {
    let p = Params { iterations: 100, tasks: 2, ..Params::default() };
    let spec = skylake_with("always", false, "");
    let policy = Policy::named("linux-6.18").unwrap();
    let mut k =
        Kernel::new(&spec, &policy, KernelConfig::new(2, 7), crate::observer::NoObserver).unwrap();
    let s = crate::workloads::scenario("munmap-threads").unwrap();
    s.install(&mut k, &Params { threads: true, ..p.clone() }).unwrap();
    assert!(s.run(&mut k, &Params { threads: true, ..p }));
    // One IBPB per CPU: the first switch to the process's mm after boot.
    assert!(k.ibpbs().iter().all(|&n| n <= 1), "{:?}", k.ibpbs());
}

/// Bad `[mitigations]` values are refused with the reason.
#[test]
fn bad_blocks_are_refused() {
    let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1;
    let err = |block: &str| {
        MachineSpec::from_toml(&format!("{text}\n[mitigations]\nsource = \"t\"\n{block}"), "t")
            .unwrap_err()
            .to_string()
    };
    let e = err("[mitigations.paths.sycall]\nrets = 1\n");
    assert!(e.contains("sycall") && e.contains("no such `[kernel]` figure"), "{e}");
    let e = err(
        "safe_ret = { cycles = 100000, source = \"t\" }\n[mitigations.paths.syscall]\nrets = 10\n",
    );
    assert!(e.contains("more than the whole `[kernel] syscall`"), "{e}");
    let e = err("ibpb_mode = \"always\"\n");
    assert!(e.contains("needs an `ibpb` figure"), "{e}");
}

/// Each per-mitigation switch takes out exactly its own events; all of them off is
/// `mitigations` off; `mitigation-ibpb` off issues no IBPB and leaves the figures alone.
#[test]
fn each_mitigation_switch_takes_out_its_own_events() {
    let spec = skylake_with("always", false, PATHS);
    let full = spec.kernel_costs().unwrap().clone();
    let kernel = |off: &[Mechanism]| kernel_off(&spec, off);
    let cs = |off: &[Mechanism]| kernel(off).costs.context_switch.cycles;
    let sys = |off: &[Mechanism]| kernel(off).costs.syscall.cycles;
    let full_cs = full.context_switch.cycles;
    assert_eq!(cs(&[Mechanism::MitigationRetpoline]), full_cs - 2 * RETPOLINE);
    assert_eq!(cs(&[Mechanism::MitigationSafeRet]), full_cs - (10 + 2) * SAFE_RET);
    assert_eq!(cs(&[Mechanism::MitigationRsbFill]), full_cs - RSB);
    assert_eq!(cs(&[Mechanism::MitigationUntrainRet]), full_cs);
    assert_eq!(sys(&[Mechanism::MitigationUntrainRet]), full.syscall.cycles - UNTRAIN);
    assert_eq!(sys(&[Mechanism::MitigationVerw]), full.syscall.cycles - VERW);
    let each = [
        Mechanism::MitigationRetpoline,
        Mechanism::MitigationSafeRet,
        Mechanism::MitigationUntrainRet,
        Mechanism::MitigationVerw,
        Mechanism::MitigationRsbFill,
        Mechanism::MitigationIbpb,
    ];
    assert_eq!(kernel(&each).costs, kernel(&[Mechanism::Mitigations]).costs);
    for &m in &each {
        assert!(m.present_on(&spec), "{m}");
    }
    assert!(!Mechanism::MitigationIbpb.present_on(&skylake_with("off", false, PATHS)));
    assert!(!Mechanism::MitigationVerw.present_on(&skylake_with("off", false, "")));
    // IBPB: a process pingpong with it always on, then off alone.
    let p = Params { iterations: 50, ..Params::default() };
    let ibpbs = |off: &[Mechanism]| {
        let mut k = kernel(off);
        let s = crate::workloads::scenario("pingpong").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(s.run(&mut k, &p));
        (k.ibpbs().iter().sum::<u64>(), k.costs.switch_mm.cycles)
    };
    let (on, switch_mm) = ibpbs(&[]);
    assert!(on >= 2 * 50 - 2, "{on}");
    assert_eq!(ibpbs(&[Mechanism::MitigationIbpb]), (0, switch_mm));
}

/// A one-CPU linux-6.18 kernel on `spec` with the mechanisms `off` switched off.
fn kernel_off(spec: &MachineSpec, off: &[Mechanism]) -> Kernel<crate::observer::NoObserver> {
    let m = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
    Kernel::new(
        spec,
        &Policy::named("linux-6.18").unwrap(),
        KernelConfig::new(1, 7).with_mechanisms(m),
        crate::observer::NoObserver,
    )
    .unwrap()
}
