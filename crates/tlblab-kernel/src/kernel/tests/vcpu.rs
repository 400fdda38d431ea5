//! vCPU preemption by an overcommitted host and KVM's PV TLB flush (issue 17, mechanism 1;
//! `kernel/vcpu.rs`).

use super::*;
use crate::mechanisms::{Mechanism, Mechanisms};
use crate::workloads::{scenario, Params};
use tlblab_sim::machine::BUILTIN_PRESETS;

/// skylake-kvm with `overcommit`, a host slice of `slice_us` µs, a 100 µs host tick
/// (`host_hz = 10000`, so that short runs see many slices) and PV TLB flush on or off.
fn vm(overcommit: f64, slice_us: u64, pv: bool) -> MachineSpec {
    let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake-kvm").unwrap().1;
    let slice_ns = slice_us * 1000;
    let edited = text
        .replace("overcommit = { value = 1.0,", &format!("overcommit = {{ value = {overcommit:?},"))
        .replace("host_slice = { ns = 9000000,", &format!("host_slice = {{ ns = {slice_ns},"))
        .replace("host_hz = { value = 250,", "host_hz = { value = 10000,")
        .replace("pv_tlb_flush = { value = false", &format!("pv_tlb_flush = {{ value = {pv}"));
    MachineSpec::from_toml(&edited, "test").unwrap()
}

/// 100 µs at 2.3 GHz.
const TICK: u64 = 230_000;

fn kernel_of(spec: &MachineSpec, cpus: usize, seed: u64, off: &[Mechanism]) -> Kernel<TraceLog> {
    kernel_under("linux-6.18", spec, cpus, seed, off)
}

/// [`kernel_of`] under the policy `policy`.
fn kernel_under(
    policy: &str,
    spec: &MachineSpec,
    cpus: usize,
    seed: u64,
    off: &[Mechanism],
) -> Kernel<TraceLog> {
    let mechanisms = off.iter().fold(Mechanisms::all(), |s, &m| s.without(m));
    let config = KernelConfig::new(cpus, seed).with_mechanisms(mechanisms);
    Kernel::new(spec, &Policy::named(policy).unwrap(), config, TraceLog::default()).unwrap()
}

/// `rounds` one-page DONTNEEDs on CPU 0, each aimed at a sibling spinning on CPU 1; the kernel
/// after the run.
fn shootdowns(spec: &MachineSpec, seed: u64, off: &[Mechanism], rounds: usize) -> Kernel<TraceLog> {
    shootdowns_under("linux-6.18", spec, seed, rounds, off)
}

/// [`shootdowns`] under the policy `policy`.
fn shootdowns_under(
    policy: &str,
    spec: &MachineSpec,
    seed: u64,
    rounds: usize,
    off: &[Mechanism],
) -> Kernel<TraceLog> {
    let mut k = kernel_under(policy, spec, 2, seed, off);
    let mut steps = vec![Step::Mmap(2), Step::Store(0, 0, 2), Step::Compute(200_000)];
    for _ in 0..rounds {
        steps.extend([Step::Madvise(0, 0, 1), Step::Store(0, 0, 1), Step::Compute(20_000)]);
    }
    let main = k.spawn_process(script(steps), C0, true);
    k.run_until(Cycles(50_000));
    k.spawn_thread(main, script(vec![Step::Compute(1 << 40)]), C1, false);
    assert!(k.run());
    k
}

fn json(r: &KernelReport) -> String {
    serde_json::to_string(r).unwrap()
}

/// madvise-busy (3 spinning siblings) for a few hundred iterations on 4 vCPUs.
fn madvise_busy(spec: &MachineSpec, seed: u64, off: &[Mechanism]) -> KernelReport {
    let mut k = kernel_of(spec, 4, seed, off);
    let p = Params { iterations: 300, ..Params::default() };
    let s = scenario("madvise-busy").unwrap();
    s.install(&mut k, &p).unwrap();
    assert!(s.run(&mut k, &p));
    k.report()
}

/// (a) On dedicated pCPUs nothing changes: the preset as it was before `overcommit` and
/// `host_slice` existed, the one with overcommit 1, and either with the mechanisms off all give
/// byte-identical reports.
#[test]
fn dedicated_vcpus_change_nothing() {
    let text = BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake-kvm").unwrap().1;
    let before: String = text
        .lines()
        .filter(|l| !l.starts_with("overcommit") && !l.starts_with("host_slice"))
        .map(|l| format!("{l}\n"))
        .collect();
    let before = MachineSpec::from_toml(&before, "test").unwrap();
    let dedicated = vm(1.0, 9_000, true);
    assert!(!Mechanism::VcpuPreemption.present_on(&dedicated));
    assert!(!Mechanism::PvTlbFlush.present_on(&dedicated));
    let base = json(&madvise_busy(&before, 3, &[]));
    assert_eq!(base, json(&madvise_busy(&dedicated, 3, &[])));
    assert_eq!(base, json(&madvise_busy(&dedicated, 3, &[Mechanism::VcpuPreemption])));
    assert!(!base.contains("steal_cycles"), "no steal key without preemption");
}

/// Off, `vcpu-preemption` is the preset at overcommit 1, and `pv-tlb-flush` the preset with
/// `pv_tlb_flush = false`: byte-identical reports.
#[test]
fn the_switches_are_the_presets_without_them() {
    let pv = vm(2.0, 100, true);
    assert!(Mechanism::VcpuPreemption.present_on(&pv));
    assert!(Mechanism::PvTlbFlush.present_on(&pv));
    let native = vm(2.0, 100, false);
    assert!(!Mechanism::PvTlbFlush.present_on(&native));
    let r = |spec: &MachineSpec, off: &[Mechanism]| json(&madvise_busy(spec, 5, off));
    assert_eq!(r(&pv, &[Mechanism::PvTlbFlush]), r(&native, &[]));
    assert_eq!(r(&pv, &[Mechanism::VcpuPreemption]), r(&vm(1.0, 100, true), &[]));
    assert_ne!(r(&pv, &[]), r(&native, &[]), "PV flush changes the run");
    assert_ne!(r(&native, &[]), r(&vm(1.0, 100, false), &[]), "preemption changes the run");
}

/// (b) With native IPIs, a shootdown of a preempted target waits out the rest of its
/// preemption: at overcommit 2 a preemption is one other thread's run (a slice, until the next
/// host tick), so the flush sections that waited for one last about half of that on average,
/// and grow with the slice; on dedicated pCPUs none waits.
#[test]
fn a_native_shootdown_waits_out_the_targets_preemption() {
    let rounds = 400;
    // The flush sections (preemption-disabled, wall time) longer than any unpreempted one.
    let waits = |k: &Kernel<TraceLog>| -> Vec<u64> {
        k.report().preempt_off_cycles.into_iter().filter(|&c| c > 50_000).collect()
    };
    let mut means = Vec::new();
    for slice_us in [50, 400] {
        let slice = slice_us * 2_300;
        let k = shootdowns(&vm(2.0, slice_us, false), 11, &[], rounds);
        assert_eq!(k.report().irq_tlb[1], rounds as u64, "every round interrupts CPU 1");
        let w = waits(&k);
        assert!(!w.is_empty(), "{slice_us} µs: some shootdown found CPU 1 preempted");
        // At most the target's preemption and the initiator's own, each under slice + tick.
        assert!(w.iter().all(|&c| c < 2 * (slice + TICK) + 50_000), "{slice_us} µs: {w:?}");
        means.push(w.iter().sum::<u64>() / w.len() as u64);
    }
    assert!(means[1] > 2 * means[0], "mean wait by slice (50, 400 µs): {means:?}");
    let dedicated = shootdowns(&vm(1.0, 50, false), 11, &[], rounds);
    assert_eq!(waits(&dedicated), Vec::<u64>::new());
}

/// (c) With PV flush a preempted target is sent no IPI and runs no `flush_tlb_func()` (no
/// `remote shootdown` event); the host flushes it in full before it runs again.
#[test]
fn a_preempted_target_is_flushed_by_the_host_instead_of_an_ipi() {
    let rounds = 400;
    let k = shootdowns(&vm(2.0, 50, true), 11, &[], rounds);
    let r = k.report();
    let (preemptions, marked, flushed) = k.vcpu_counts();
    assert!(preemptions > 0 && marked > 0, "{preemptions} preemptions, {marked} marked");
    // Every round either interrupted CPU 1 or left its flush to the host.
    assert_eq!(r.irq_tlb[1] + marked, rounds as u64);
    assert_eq!(traced(&k, C1, TlbFlushReason::RemoteShootdown).len() as u64, r.irq_tlb[1]);
    // The guest traces every send all the same (native_flush_tlb_multi() runs).
    assert_eq!(traced(&k, C0, TlbFlushReason::RemoteSendIpi).len(), rounds);
    // One host flush per preemption that had one or more flushes left to it.
    assert!(flushed >= 1 && flushed <= marked, "{flushed} host flushes, {marked} marked");
    // The initiator spins far less: it no longer waits for preempted targets (only for one
    // preempted after the IPI left).
    let native = shootdowns(&vm(2.0, 50, false), 11, &[], rounds).report();
    let (pv_sys, native_sys) = (r.tasks[0].sys_cycles, native.tasks[0].sys_cycles);
    assert!(2 * pv_sys < native_sys, "initiator system cycles: PV {pv_sys}, native {native_sys}");
}

/// A checked run of `name` with PV flush, the host flushing at entry or (`broken`) not.
fn checked(name: &str, cpus: usize, seed: u64, broken: bool) -> Kernel<TraceLog> {
    let mut k = kernel_of(&vm(2.0, 30, true), cpus, seed, &[]);
    if broken {
        k.skip_host_flush();
    }
    k.enable_checker();
    let p = Params { tasks: 2, pages: 8, iterations: 200, ..Params::default() };
    let s = scenario(name).unwrap();
    s.install(&mut k, &p).unwrap();
    assert!(s.run(&mut k, &p), "{name}: finishes");
    k
}

/// (c) The safety checker sees no stale use with PV flush: the readers of `lazy-readers` and
/// the siblings of `madvise-busy`, preempted while their flushes are left to the host, never
/// translate with an entry the host has not flushed. A host that marked but did not flush
/// would leave them stale, and the checker says so.
#[test]
fn pv_flush_leaves_no_stale_translation_in_use() {
    let broken = checked("lazy-readers", 3, 1, true);
    assert!(!broken.violations().is_empty(), "without the host's flush the readers go stale");
    for (name, cpus) in [("lazy-readers", 3), ("madvise-busy", 4)] {
        for seed in 1..=3 {
            let k = checked(name, cpus, seed, false);
            let (_, marked, _) = k.vcpu_counts();
            assert!(marked > 0, "{name} seed {seed}: some flush was left to the host");
            assert_eq!(k.violations(), &[], "{name} seed {seed}");
        }
    }
}

/// (d) The host's draws come from the run's seed: the same seed gives the same report, another
/// seed another one.
#[test]
fn preemption_replays_from_its_seed() {
    let spec = vm(1.5, 100, true);
    assert_eq!(json(&madvise_busy(&spec, 9, &[])), json(&madvise_busy(&spec, 9, &[])));
    assert_ne!(json(&madvise_busy(&spec, 9, &[])), json(&madvise_busy(&spec, 10, &[])));
}

/// (e) Steal is a time category of its own: per CPU user + sys + irq + idle + other + steal is
/// the window, and a vCPU's share is about 1 / overcommit (each slice it runs is followed by
/// ⌊r − 1⌋ or ⌈r − 1⌉ other slices).
#[test]
fn steal_is_the_hosts_share_and_the_accounting_holds() {
    for (overcommit, share) in [(2.0, 0.5), (1.5, 1.0 / 3.0), (3.0, 2.0 / 3.0)] {
        let k = shootdowns(&vm(overcommit, 20, false), 4, &[], 300);
        let r = k.report();
        for (c, t) in r.cpu_time.iter().enumerate() {
            assert_eq!(t.total(), r.elapsed_cycles, "cpu{c}");
            let steal = t.steal_cycles as f64 / r.elapsed_cycles as f64;
            // Some slices either way at the window's ends and, at 1.5, the draws.
            assert!((steal - share).abs() < 0.1, "r = {overcommit}, cpu{c}: steal {steal:.3}");
        }
    }
}

/// `no-pv-flush` (a guest whose `pv_tlb_flush_supported()` is false) sends every target its
/// IPI even when the host offers PV flush: nothing is left to the host, the preempted target is
/// waited for, and its handler runs `flush_tlb_func()` once the host runs it again. The
/// report says how much was left (`vcpu.pv_marked`).
#[test]
fn without_pv_flush_in_the_guest_every_target_gets_its_ipi() {
    let rounds = 400;
    let spec = vm(2.0, 50, true);
    let run = |policy: &str| shootdowns_under(policy, &spec, 11, rounds, &[]);
    let native = run("linux-6.18+no-pv-flush");
    let r = native.report();
    let v = r.vcpu.expect("an overcommitted host reports its side");
    assert!(v.preemptions > 0, "the host preempted the vCPUs");
    assert_eq!((v.pv_marked, v.pv_flushed), (0, 0), "nothing left to the host");
    assert_eq!(r.irq_tlb[1], rounds as u64, "every round interrupted CPU 1");
    let pv = run("linux-6.18").report();
    assert!(pv.vcpu.unwrap().pv_marked > 0);
    assert!(pv.tasks[0].sys_cycles < r.tasks[0].sys_cycles, "PV flush waits less");
    // The switch is the guest's: on a host that does not offer the feature, both agree.
    let no_offer = vm(2.0, 50, false);
    let report = |policy: &str| {
        let mut k = kernel_under(policy, &no_offer, 4, 5, &[]);
        let p = Params { iterations: 300, ..Params::default() };
        let s = scenario("madvise-busy").unwrap();
        s.install(&mut k, &p).unwrap();
        assert!(s.run(&mut k, &p));
        let mut r = k.report();
        r.policy.clear();
        json(&r)
    };
    assert_eq!(report("linux-6.18"), report("linux-6.18+no-pv-flush"));
}
