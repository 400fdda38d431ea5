//! Wake-up placement (`kernel/wake.rs`): `record_wakee()` and `wake_wide()` of
//! kernel/sched/fair.c.

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
