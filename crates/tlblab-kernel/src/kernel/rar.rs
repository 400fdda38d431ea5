//! Intel RAR (Remote Action Request) TLB invalidation, as Rik van Riel's RFC series "x86/mm:
//! Intel RAR TLB invalidation" (May 2025, not merged) proposes it on top of the 6.15 global
//! ASIDs (policy variant `rar`; the preset's `[rar]`).
//!
//! - An mm gets a global ASID by the same rules as with INVLPGB (`consider_global_asid()`,
//!   kernel/invlpgb.rs); until it has one, its flushes are IPIs.
//! - A flush of an mm with a global ASID is `rar_tlb_flush()`: one RAR action (invalidate these
//!   pages, or the whole PCID, of the global ASID) sent to the CPUs of `mm_cpumask` other than
//!   the initiator (`smp_call_rar_many()`), carried out by each target's microcode with no
//!   interrupt handler and no `flush_tlb_func()`; the initiator waits for every target's
//!   completion status. Unlike INVLPGB's broadcast it reaches only the mask. The initiator
//!   flushes itself in software (`flush_tlb_func()`) when it is in the mask.
//! - Lazy CPUs are in the mask: RAR invalidates their TLBs too (no switch to `init_mm`, no
//!   `tlb_gen` update). A CPU whose bit is stale is invalidated for nothing, and its bit is not
//!   cleared by RAR: so once a second (`should_trim_cpumask()`) the flush goes by IPIs instead,
//!   whose `flush_tlb_func()` trims the mask.
//! - `tlb_gen`: RAR flushes leave every CPU's per-ASID generation alone (a global ASID has
//!   none); a CPU switching to the mm while outside its mask may have missed RAR flushes and
//!   flushes the global PCID at the switch, and so does a lazy CPU coming back to it.
//! - CPUs still on a dynamic ASID during the transition get IPIs (`finish_asid_transition()`),
//!   since a RAR action for the global PCID does not reach their PCID.
//! - The ASID-space reset flushes with `flush_tlb_all()` (IPIs to every CPU) instead of
//!   INVLPGB.
//!
//! NOTE: reclaim's batched flushes (`rar_full_flush()`) and kernel-range flushes stay IPIs
//! here; PTI (a second action for the user PCID) is refused.

use super::acct::Inserted;
use super::{CallId, Kernel};
use crate::kernel::flush::FLUSH_ALL_END;
use crate::observer::Observer;
use tlblab_sim::machine::broadcast::RawRar;
use tlblab_types::{CpuId, InvpcidType, Pcid, TlbOp, Vpn};

/// What a RAR costs (cycles; the preset's `[rar]`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RarCosts {
    pub(super) send: u64,
    pub(super) remote: u64,
    pub(super) wait: u64,
}

impl RarCosts {
    pub(crate) fn new(raw: &RawRar) -> RarCosts {
        RarCosts { send: raw.send.cycles, remote: raw.remote.cycles, wait: raw.wait.cycles }
    }
}

impl<O: Observer> Kernel<O> {
    /// `rar_tlb_flush()` for `call` (an mm with a global ASID): the action to the other CPUs of
    /// `mm_cpumask` and the local flush. Returns the initiator's cycles, and the wait for the
    /// targets' completion after them (0 without targets), which the caller waits out as it
    /// waits for acknowledgements: actions landing on the initiator meanwhile do not lengthen it.
    pub(super) fn rar_tlb_flush(&mut self, cpu: CpuId, call: CallId) -> (u64, u64) {
        let info = self.calls[call.0 as usize].info;
        let mm = info.mm.expect("mm flushes only");
        let asid = self.mms[mm.0 as usize].global_asid.expect("a global ASID");
        let pcid = self.kern_pcid(asid);
        let costs = self.rar.expect("the rar policy needs [rar]");
        let targets: Vec<CpuId> =
            self.mms[mm.0 as usize].cpumask.iter().filter(|&c| c != cpu).collect();
        let mut cycles = 0;
        for &target in &targets {
            cycles += costs.send;
            let work = costs.remote + self.rar_action(target, pcid, info.start, info.end);
            // The target's microcode runs the action whatever the target does (interrupts off
            // included): its time is taken from whatever it was doing.
            self.acct_insert(target, work, Inserted::Irq);
            self.delay_step(target, work);
            self.counters.broadcast.invalidation_cycles += work;
        }
        let wait = if targets.is_empty() { 0 } else { costs.wait };
        self.counters.broadcast.rar_flushes += 1;
        self.counters.broadcast.rar_actions += targets.len() as u64;
        if self.mms[mm.0 as usize].cpumask.test(cpu) {
            cycles += self.flush_tlb_func(cpu, call) + self.kernel_refill(cpu);
        }
        (cycles, wait)
    }

    /// The invalidation one RAR action does on `target`'s TLB: the pages `start..end` of
    /// `pcid`, or the whole PCID. It is what INVPCID types 0 and 1 do, and the hardware
    /// counters show it as those.
    fn rar_action(&mut self, target: CpuId, pcid: Pcid, start: u64, end: u64) -> u64 {
        if end == FLUSH_ALL_END {
            let op = TlbOp::Invpcid { kind: InvpcidType::SingleCtxt, pcid, vpn: Vpn(0) };
            return self.hw_op(target, op);
        }
        (start..end)
            .map(|vpn| {
                let op = TlbOp::Invpcid { kind: InvpcidType::IndivAddr, pcid, vpn: Vpn(vpn) };
                self.hw_op(target, op)
            })
            .sum()
    }

    /// `flush_tlb_all()` from `cpu` (the RAR series' ASID-space reset): every CPU flushes
    /// everything, globals included, in an IPI handler; the initiator waits for the last.
    /// NOTE: done at once here (the reset runs under `global_asid_lock`, rarely), with the
    /// costs of an IPI round trip.
    pub(super) fn rar_flush_all(&mut self, cpu: CpuId) -> u64 {
        let n = self.cpus.len();
        let handler = self.costs.ipi_handler.cycles;
        let mut slowest = 0;
        for c in (0..n).filter(|&c| c != usize::from(cpu.0)) {
            let target = CpuId(c as u16);
            let work = handler + self.flush_tlb_all_local(target);
            self.acct_insert(target, work, Inserted::Irq);
            self.delay_step(target, work);
            self.counters.ipis_sent[usize::from(cpu.0)] += 1;
            self.counters.irq_cal[c] += 1;
            slowest = slowest.max(work);
        }
        let remote = if n > 1 {
            (n as u64 - 1) * self.costs.ipi_send.cycles
                + self.costs.ipi_latency.cycles
                + slowest
                + self.costs.ipi_ack.cycles
        } else {
            0
        };
        remote + self.flush_tlb_all_local(cpu)
    }
}
