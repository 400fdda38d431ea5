//! Wake-ups (`kernel/wake.rs`): `record_wakee()` and `wake_wide()` of kernel/sched/fair.c, and
//! what `ttwu_queue()` of kernel/sched/core.c costs the waker.

use super::*;

/// `wake_wide()`'s rule, worked by hand: the lesser flip count must reach the LLC's size
/// (`sd_llc_size`) and the greater that many times the lesser. A waker that alternates between
/// two wakees counts a flip at every wake-up; one that keeps waking the same task counts one.
#[test]
fn wake_wide_needs_both_sides_flipping_by_the_llc_size() {
    let mut k = kernel("linux-6.18", 2);
    let [a, b, c] = [0, 1, 2].map(|i| k.spawn_process(script(vec![]), CpuId(i % 2), true));
    for _ in 0..2 {
        k.record_wakee(a, b);
        k.record_wakee(a, c);
    }
    k.record_wakee(b, a);
    k.record_wakee(b, a);
    // a: 4 flips; b: 1 (the same wakee twice) < 2, the LLC's size: not wide.
    assert!(!k.wake_wide(a, b, 2));
    k.record_wakee(b, c);
    // b: 2 flips, a: 4 = 2 × 2: wide on a 2-CPU LLC, not on a 4-CPU one (2 < 4).
    assert!(k.wake_wide(a, b, 2));
    assert!(k.wake_wide(b, a, 2), "symmetric");
    assert!(!k.wake_wide(a, b, 4));
    k.record_wakee(b, a);
    // b: 3, a: 4 < 3 × 2: not wide.
    assert!(!k.wake_wide(a, b, 2));
    // The flips halve at the first wake-up more than HZ jiffies after the last decay.
    let second = k.clock_mhz() * 1_000_000;
    k.spawn_process(script(vec![Step::Compute(2 * second)]), C0, true);
    k.run_until(Cycles(second * 11 / 10));
    assert!(k.jiffies() > k.policy.hz);
    k.record_wakee(a, c);
    k.record_wakee(b, a);
    // a: 4 / 2 = 2 (c was its last wakee: no flip); b: 3 / 2 = 1 (a was its last).
    assert!(k.wake_wide(b, a, 1));
    assert!(!k.wake_wide(b, a, 2), "b: 1 < 2");
    k.record_wakee(b, c);
    // b: 2 (a decay is at most once a second), a: 2 < 2 × 2.
    assert!(!k.wake_wide(a, b, 2));
    assert!(k.wake_wide(a, b, 1));
}

/// `ttwu_queue()` (6.18) sends an IPI, and `try_to_wake_up()` charges the waker its send, only
/// where the kernel sends one: to a busy CPU of another LLC (`ttwu_queue_wakelist()`: the
/// task goes on its wake list) and to a halted idle CPU; a busy CPU of the waker's LLC that the
/// wakee does not preempt (wake-up preemption off here) is queued under its run-queue lock
/// with no IPI, and so is the waker's own CPU.
#[test]
fn a_wake_up_sends_an_ipi_only_where_ttwu_queue_does() {
    let spec = tlblab_sim::machine::builtin("skylake-sp-2s").unwrap();
    let m = Mechanisms::all().without(Mechanism::WakeupPreemption);
    let config = KernelConfig::new(4, 7).with_mechanisms(m);
    let policy = Policy::named("linux-6.18").unwrap();
    let mut k = Kernel::new(&spec, &policy, config, TraceLog::default()).unwrap();
    k.set_max_cstate(1);
    // 4 CPUs of 2 sockets of 2-thread cores: CPUs 0 and 2 share socket 0's LLC, 1 and 3
    // socket 1's.
    assert!(k.shares_llc(0, 2) && !k.shares_llc(0, 1) && !k.shares_llc(0, 3));
    let spin = || script(vec![Step::Compute(1 << 40)]);
    let main = k.spawn_process(spin(), C0, true);
    k.spawn_thread(main, spin(), C1, true);
    k.spawn_thread(main, spin(), CpuId(2), true);
    k.run_until(Cycles(10_000_000));
    assert!(!k.polls(CpuId(3)), "CPU 3 halted in C1");
    let (wakeup, send) = (k.costs.wakeup.cycles, k.costs.ipi_send.cycles);
    assert!(send > 0);
    assert_eq!(woken_from_c0(&mut k, main, CpuId(2)), wakeup, "busy, same LLC");
    assert_eq!(woken_from_c0(&mut k, main, C0), wakeup, "the waker's CPU");
    k.counters.irq_resched = vec![0; 4];
    assert_eq!(woken_from_c0(&mut k, main, C1), wakeup + send, "busy, another LLC");
    assert_eq!(woken_from_c0(&mut k, main, CpuId(3)), wakeup + send, "halted");
    k.run_until(Cycles(11_000_000));
    assert_eq!(k.counters.irq_resched, [0, 1, 0, 1], "the IPIs taken");
}
