//! Mechanism `tlbstate-lines`: what a flush initiator's condition function reads of the other
//! CPUs' TLB state — 6.13's `tlb_is_not_lazy()` (`cpu_tlbstate_shared.is_lazy`, its own line)
//! against 6.15+'s `should_flush_tlb()` (`cpu_tlbstate.loaded_mm` too, on the line the target
//! rewrites when it catches up a flush of ASID slot 0 or 1).

use super::*;
use crate::mechanisms::{Mechanism, Mechanisms};

/// `madvise_rounds` (a sibling spinning on CPU 1 shot down by every DONTNEED) on skylake under
/// `policy`, with or without the mechanism.
fn rounds(policy: &str, on: bool, n: usize) -> KernelReport {
    let mechanisms =
        if on { Mechanisms::all() } else { Mechanisms::all().without(Mechanism::TlbstateLines) };
    let config = KernelConfig::new(2, 7).with_mechanisms(mechanisms);
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let mut k =
        Kernel::new(&spec, &Policy::named(policy).unwrap(), config, TraceLog::default()).unwrap();
    k.set_max_cstate(1);
    madvise_rounds(k, true, n)
}

/// 6.13 reads CPU 1's `is_lazy` once per flush and finds it where it was: CPU 1 never went lazy
/// (it left idle on init_mm, whose `enter_lazy_tlb()` writes nothing), so no line moves.
/// 6.18 also reads `loaded_mm`, whose line CPU 1 rewrote in the previous handler (the mm took
/// ASID slot 1, the first after init_mm's 0: `ctxs[1]` shares the line): every read moves it,
/// and CPU 1's next store takes it back, invalidating the initiator's copy.
#[test]
fn should_flush_tlb_pulls_the_targets_loaded_mm_line_at_every_flush() {
    let n = 10;
    let old = rounds("linux-6.13", true, n);
    assert_eq!((old.tlbstate.reads, old.tlbstate.transfers), (n as u64, 0));
    let new = rounds("linux-6.18", true, n);
    assert_eq!(new.tlbstate.reads, 2 * n as u64, "loaded_mm and is_lazy, per flush");
    assert_eq!(new.tlbstate.transfers, 2 * n as u64, "the read, then the owner's store");
    assert_eq!(new.tlbstate.remote_transfers, 0, "skylake has one socket");
    // Each transfer is a cache_line_transfer (200 cycles on skylake), on the initiator's path
    // (its read) or on CPU 1's handler, which the initiator waits for.
    let extra = new.tasks[0].sys_cycles - rounds("linux-6.18", false, n).tasks[0].sys_cycles;
    assert_eq!(extra, 2 * n as u64 * 200);
}

#[test]
fn off_reads_nothing_and_writes_nothing() {
    for policy in ["linux-6.13", "linux-6.18"] {
        let r = rounds(policy, false, 5);
        assert!(r.tlbstate.is_empty(), "{policy}: {:?}", r.tlbstate);
        assert!(!serde_json::to_string(&r).unwrap().contains("tlbstate"));
    }
}

/// `struct tlb_state` (tlbflush.h, v6.13–v6.18): 32 bytes of fields before `ctxs[]`, 16 bytes
/// per context, 64-byte lines.
#[test]
fn only_the_first_two_asid_slots_share_loaded_mms_line() {
    use crate::kernel::tlbstate_line::ctx_in_first_line;
    let first: Vec<bool> = (0..6).map(|a| ctx_in_first_line(Asid(a))).collect();
    assert_eq!(first, [true, true, false, false, false, false]);
}
