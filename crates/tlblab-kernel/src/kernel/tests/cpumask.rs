//! `mm_cpumask` rules: 6.13's eager clearing, 6.14's lazy mask (209954cbc7d0) and its trimming
//! (6db2526c1d69), and the cache-line cost of writing the mask.

use super::*;

/// Two processes that have run (on CPU 0) and so have their mms; CPU 1 is idle on init_mm.
fn two_mms(policy: &str) -> (Kernel<TraceLog>, MmId, MmId) {
    let mut k = kernel(policy, 2);
    let a = k.spawn_process(script(vec![Step::Compute(1 << 40)]), C0, true);
    let b = k.spawn_process(script(vec![Step::Compute(1 << 40)]), C0, true);
    k.run_until(Cycles(100_000));
    let (a, b) = (k.task_mm(a).unwrap(), k.task_mm(b).unwrap());
    (k, a, b)
}

fn has(k: &Kernel<TraceLog>, mm: MmId, cpu: CpuId) -> bool {
    k.mm(mm).cpumask.test(cpu)
}

fn flush_of(k: &mut Kernel<TraceLog>, mm: MmId, freed_tables: bool) -> CallId {
    let gen = k.mms[mm.0 as usize].inc_tlb_gen();
    let req = FlushRequest::pages(mm, 0, 1, freed_tables);
    let info = k.flush_tlb_info(&req, gen, C0);
    k.new_call(info, TaskId(0))
}

/// 6.13 switch_mm_irqs_off(): between two real mms the CPU leaves the old mm's mask and joins
/// the new one's; a lazy switch (a kernel thread) keeps the bit, and a flush that reaches the
/// lazy CPU (freed page tables) sends it to init_mm, which clears it.
#[test]
fn linux_6_13_clears_the_old_mms_bit_at_every_switch_and_at_leave_mm() {
    let (mut k, a, b) = two_mms("linux-6.13");
    k.switch_mm_irqs_off(C1, a);
    assert!(has(&k, a, C1));
    k.switch_mm_irqs_off(C1, b);
    assert!(!has(&k, a, C1) && has(&k, b, C1), "eager: left a's mask, joined b's");
    k.enter_lazy_tlb(C1);
    assert!(has(&k, b, C1), "lazy: the bit stays (the flush code checks is_lazy)");
    let call = flush_of(&mut k, b, true);
    assert!(k.ipi_wanted(C1, &k.calls[call.0 as usize].info), "freed tables reach lazy CPUs");
    k.flush_tlb_func(C1, call);
    assert_eq!(loaded(&k, C1), LoadedMm::Mm(MmId::INIT_MM));
    assert!(!has(&k, b, C1), "switch to init_mm (leave_mm) cleared it");
    // Without freed tables a lazy CPU is skipped: 6.13 has no other test.
    k.switch_mm_irqs_off(C1, a);
    k.switch_mm_irqs_off(C1, b);
    let call = flush_of(&mut k, a, false);
    assert!(!has(&k, a, C1), "not in a's mask, so no IPI can reach it");
    assert!(k.should_flush_tlb(C1, &k.calls[call.0 as usize].info), "6.13: only laziness spares");
}

/// 6.14 (209954cbc7d0): the bit is set at switch time if it is not set, and stays when the CPU
/// switches away; the first flush IPI that finds the CPU on another mm clears it
/// (TLB_REMOTE_WRONG_CPU) without flushing. Without trimming, such a CPU gets no IPI.
#[test]
fn linux_6_14_keeps_the_bit_until_a_flush_ipi_finds_the_cpu_elsewhere() {
    let (mut k, a, b) = two_mms("linux-6.18+no-trim-cpumask");
    k.switch_mm_irqs_off(C1, a);
    k.switch_mm_irqs_off(C1, b);
    assert!(has(&k, a, C1) && has(&k, b, C1), "lazy mask: a's bit kept");
    let writes = k.counters.cpumask.writes;
    k.switch_mm_irqs_off(C1, a);
    assert_eq!(k.counters.cpumask.writes, writes, "back to a: the bit is set, nothing written");
    k.switch_mm_irqs_off(C1, b);
    let call = flush_of(&mut k, a, false);
    let info = k.calls[call.0 as usize].info;
    assert!(!info.trim_cpumask);
    assert!(!k.should_flush_tlb(C1, &info), "stale bit, no trim: no IPI");
    // An IPI that reaches it anyway (freed tables go to every CPU of the mask) clears it.
    let call = flush_of(&mut k, a, true);
    assert!(k.ipi_wanted(C1, &k.calls[call.0 as usize].info));
    k.flush_tlb_func(C1, call);
    assert!(!has(&k, a, C1), "the first IPI found CPU 1 on b: it dropped a's bit");
    assert_eq!(traced(&k, C1, TlbFlushReason::RemoteWrongCpu), [0]);
    assert_eq!(loaded(&k, C1), LoadedMm::Mm(b), "no switch, no flush");
    // A CPU running the mm keeps its bit: the IPI flushes.
    let call = flush_of(&mut k, b, false);
    k.flush_tlb_func(C1, call);
    assert!(has(&k, b, C1));
}

/// 6.14 (6db2526c1d69): a flush carries `trim_cpumask` at most once per second (HZ jiffies)
/// per mm; then a CPU whose bit is stale gets the IPI and drops the bit.
#[test]
fn trimming_happens_at_most_once_per_second_per_mm() {
    let (mut k, a, b) = two_mms("linux-6.18");
    let hz = k.policy.hz;
    let created = k.mm(a).next_trim_cpumask - hz;
    assert!(!k.should_trim_cpumask(a), "not within the first second");
    // Run past the first second: jiffies > created + HZ (the clock is the last event's time,
    // a tick at most one tick before the limit).
    let tick = k.tick_cycles;
    k.run_until(Cycles((created + hz + 3) * tick));
    assert!(k.jiffies() > created + hz);
    assert!(k.should_trim_cpumask(a), "a second on: trim");
    assert!(!k.should_trim_cpumask(a), "once per second");
    assert!(k.should_trim_cpumask(b), "per mm: b's second is its own");
    let now = k.jiffies();
    assert_eq!(k.mm(a).next_trim_cpumask, now + hz, "next trim: jiffies + HZ");
    k.run_until(Cycles((now + hz - 1) * tick));
    assert!(k.jiffies() <= now + hz);
    assert!(!k.should_trim_cpumask(a), "time_after: not until jiffies passes jiffies + HZ");
    k.run_until(Cycles((now + hz + 3) * tick));
    assert!(k.should_trim_cpumask(a), "and again after the next second");
    // A trimming flush reaches the stale CPU, which drops its bit.
    k.switch_mm_irqs_off(C1, a);
    k.switch_mm_irqs_off(C1, b);
    let call = flush_of(&mut k, a, false);
    k.calls[call.0 as usize].info.trim_cpumask = true;
    assert!(k.should_flush_tlb(C1, &k.calls[call.0 as usize].info));
    k.flush_tlb_func(C1, call);
    assert!(!has(&k, a, C1));
}

/// The mask's cache line moves when CPUs take turns writing it, and not when one CPU writes it
/// again; a read pulls a shared copy once.
#[test]
fn cpumask_transfers_are_counted_when_cpus_alternate_and_not_when_one_cpu_rewrites() {
    let (mut k, a, _) = two_mms("linux-6.13");
    let line = k.costs.cache_line_transfer.cycles;
    k.mms[a.0 as usize].cpumask_line = Default::default();
    k.counters.cpumask = Default::default();
    assert_eq!(k.cpumask_write(C0, a), 0, "first touch: no other holder");
    assert_eq!(k.cpumask_write(C0, a), 0);
    assert_eq!(k.cpumask_write(C0, a), 0, "one CPU rewriting its own line");
    assert_eq!(k.counters.cpumask.transfers, 0);
    assert_eq!(k.cpumask_write(C1, a), line);
    assert_eq!(k.cpumask_write(C0, a), line);
    assert_eq!(k.cpumask_write(C1, a), line);
    assert_eq!(k.counters.cpumask.transfers, 3, "every alternation moves the line");
    assert_eq!(k.cpumask_read(C0, a), line, "a read of C1's write pulls the line");
    assert_eq!(k.cpumask_read(C0, a), 0, "then C0 holds a copy");
    assert_eq!(k.cpumask_write(C1, a), line, "C1 must invalidate C0's copy");
    assert_eq!(
        k.counters.cpumask,
        crate::cpumask::CpumaskStats { writes: 7, reads: 2, transfers: 5, remote_transfers: 0 }
    );
}

/// On a 2-socket preset a move between sockets costs `cache_line_transfer_remote`.
#[test]
fn a_cpumask_transfer_between_sockets_costs_the_remote_figure() {
    let spec = tlblab_sim::machine::builtin("skylake-sp-2s").unwrap();
    let mut k = booted(&spec, &Policy::named("linux-6.13").unwrap(), 104);
    let t = k.spawn_process(script(vec![Step::Compute(1 << 40)]), C0, true);
    k.run_until(Cycles(100_000));
    let mm = k.task_mm(t).unwrap();
    let topo = spec.raw().topology.clone().unwrap();
    let (local, remote) =
        (k.costs.cache_line_transfer.cycles, topo.cache_line_transfer_remote.unwrap().cycles);
    assert!(remote > local);
    k.mms[mm.0 as usize].cpumask_line = Default::default();
    k.counters.cpumask = Default::default();
    k.cpumask_write(C0, mm);
    assert_eq!(k.cpumask_write(CpuId(52), mm), local, "CPU 52: C0's SMT sibling, socket 0");
    assert_eq!(k.cpumask_write(CpuId(26), mm), remote, "CPU 26: socket 1");
    assert_eq!(k.cpumask_write(CpuId(78), mm), local, "CPU 78: socket 1");
    assert_eq!(k.counters.cpumask.remote_transfers, 1);
}

/// Mechanism `llc-domains` on milan (72 CPUs: 36 cores of two threads, CCXs of eight cores):
/// a line moved within a CCX (SMT siblings included) costs `cache_line_transfer_llc`, one moved
/// between CCXs `cache_line_transfer`; the CCX is the LLC the wake-up placement sees. Off, one
/// LLC and one figure for every move, as the preset without `[topology]`.
#[test]
fn milans_ccxs_are_its_llcs_and_a_line_moved_within_one_costs_less() {
    let spec = tlblab_sim::machine::builtin("milan").unwrap();
    let policy = Policy::named("linux-6.18").unwrap();
    let k = booted(&spec, &policy, 72);
    let topo = spec.raw().topology.clone().unwrap();
    let (within, between) =
        (topo.cache_line_transfer_llc.unwrap().cycles, k.costs.cache_line_transfer.cycles);
    assert!(within > 0 && within < between, "{within} vs {between}");
    for (a, b, same) in [(0, 7, true), (0, 8, false), (0, 36, true), (7, 44, false), (35, 71, true)]
    {
        assert_eq!(k.shares_llc(a, b), same, "CPUs {a} and {b}");
        let cost = if same { within } else { between };
        assert_eq!(k.line_move_cycles(Some(a as u16), b as u16), cost, "CPUs {a} and {b}");
    }
    assert_eq!(k.line_move_cycles(Some(3), 3), 0, "a CPU's own line does not move");
    assert_eq!(k.line_move_cycles(None, 3), 0, "nor does a line nobody held");
    let config = KernelConfig::new(72, 7)
        .with_mechanisms(crate::mechanisms::Mechanisms::all().without(Mechanism::LlcDomains));
    let off = Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap();
    assert!(off.shares_llc(0, 8));
    assert_eq!(off.line_move_cycles(Some(0), 7), between);
    // A 2-socket preset without cores_per_llc: the socket is the LLC; a csd or pipe line moved
    // between sockets costs the remote figure (off: the in-socket one, as before).
    let sp = tlblab_sim::machine::builtin("skylake-sp-2s").unwrap();
    let k = booted(&sp, &policy, 104);
    let remote = sp.raw().topology.clone().unwrap().cache_line_transfer_remote.unwrap().cycles;
    assert!(k.shares_llc(0, 25) && !k.shares_llc(0, 26) && k.shares_llc(26, 78));
    assert_eq!(k.line_move_cycles(Some(0), 26), remote);
    assert_eq!(k.line_move_cycles(Some(0), 52), k.costs.cache_line_transfer.cycles);
}

/// Switching between two processes on one CPU: 6.13 writes both masks at every switch, 6.14
/// writes each once; neither moves a line, since one CPU writes them all.
#[test]
fn eager_writes_at_every_switch_lazy_once_and_one_cpu_moves_no_line() {
    let run = |policy: &str| {
        let mut k = kernel(policy, 1);
        let (x, y) = (k.eventfd(), k.eventfd());
        let mut a = Vec::new();
        let mut b = Vec::new();
        for _ in 0..20 {
            a.extend([Step::Write(x), Step::Read(y)]);
            b.extend([Step::Read(x), Step::Write(y)]);
        }
        k.spawn_process(script(a), C0, true);
        k.spawn_process(script(b), C0, true);
        assert!(k.run());
        k.counters.cpumask
    };
    let (eager, lazy) = (run("linux-6.13"), run("linux-6.18"));
    assert!(eager.writes >= 80, "two writes per switch, ≥ 40 switches: {eager:?}");
    assert!(lazy.writes <= 3, "each mm's bit set once: {lazy:?}");
    assert_eq!((eager.transfers, lazy.transfers), (0, 0));
}
