//! The machine as a KVM guest (docs/kernel-model.md, "Virtualisation"): what an IPI costs
//! when the APIC is emulated, and how an idle vCPU waits.
//!
//! - **Sending.** Without IPI virtualisation (Intel IPIv, AMD AVIC) a guest's ICR write is
//!   intercepted: one VM exit per IPI (`vm_exit`, a round trip, on the sender). With KVM's PV
//!   send-IPI (`KVM_FEATURE_PV_SEND_IPI`, 4.19+ guests, `kvm_send_ipi_mask()`) one hypercall
//!   sends to a whole mask: one exit per batch.
//! - **Receiving.** Without posted interrupts the host kicks the target's physical CPU, the
//!   running vCPU exits and the interrupt is injected at its re-entry: one more exit round trip
//!   before the handler, on the target. With posted interrupts (APICv, AVIC) a running vCPU
//!   takes it directly. The EOI is taken as free (PV EOI or virtual EOI).
//! - **Idle.** With `idle=poll` an idle vCPU spins in the guest and never leaves it; with HLT
//!   (or `haltpoll` with no guest polling) it exits, and waking it is a host wake-up, which the
//!   preset's `[idle]` table describes as the state's exit latency.
//!
//! - **vCPU preemption** (`kernel/vcpu.rs`): an overcommitted host takes vCPUs away for whole
//!   host slices; and with it **KVM's PV TLB flush**, which leaves a preempted vCPU's flush to
//!   the host, at its next VM entry.
//!
//! Not modelled yet: 2-D (EPT/NPT) page walks.

use super::Kernel;
use crate::observer::Observer;
use tlblab_sim::machine::MachineSpec;

/// A guest's virtualisation costs, resolved at the machine's clock.
#[derive(Clone, Debug, Default)]
pub(crate) struct Guest {
    /// One exit round trip, cycles.
    pub vm_exit: u64,
    /// One hypercall sends an IPI to many vCPUs.
    pub pv_send_ipi: bool,
    /// A running vCPU takes an interrupt without an exit.
    pub posted_interrupts: bool,
    /// How the host takes vCPUs away, when it does (`overcommit` > 1).
    pub preemption: Option<HostPreemption>,
    /// The guest uses KVM's PV TLB flush (`pv_tlb_flush_supported()`: the feature and steal
    /// time).
    pub pv_tlb_flush: bool,
}

/// An overcommitted host's scheduling of the vCPU threads (docs/kernel-model.md,
/// "Virtualisation").
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct HostPreemption {
    /// Runnable host threads per physical CPU, > 1.
    pub overcommit: f64,
    /// The host scheduler's slice, cycles.
    pub slice: u64,
    /// The host's tick, cycles.
    pub tick: u64,
}

impl Guest {
    /// The preset's `[guest]` section, when it describes a guest with a known exit cost.
    pub(crate) fn from_spec(spec: &MachineSpec) -> Option<Guest> {
        let g = spec.guest()?;
        let vm_exit = g.vm_exit.as_ref()?.cycles;
        let mhz = spec.kernel_costs().map_or(0, |k| k.clock.mhz);
        let preemption = match (&g.overcommit, &g.host_slice, &g.host_hz) {
            (Some(o), Some(s), Some(hz)) if o.value.0 > 1.0 => Some(HostPreemption {
                overcommit: o.value.0,
                slice: s.cycles,
                tick: mhz * 1_000_000 / hz.value.max(1),
            }),
            _ => None,
        };
        Some(Guest {
            vm_exit,
            pv_send_ipi: g.pv_send_ipi.as_ref().is_some_and(|f| f.value),
            posted_interrupts: g.posted_interrupts.as_ref().is_some_and(|f| f.value),
            preemption,
            // pv_tlb_flush_supported() (arch/x86/kernel/kvm.c) also wants steal time, which
            // carries the flag: an unknown steal_time is taken as offered (KVM offers both).
            pv_tlb_flush: g.pv_tlb_flush.as_ref().is_some_and(|f| f.value)
                && g.steal_time.as_ref().is_none_or(|f| f.value),
        })
    }

    /// The mechanism `vcpu-preemption` has something to act on: the host is overcommitted.
    pub(crate) fn preempts(spec: &MachineSpec) -> bool {
        Guest::from_spec(spec).is_some_and(|g| g.preemption.is_some())
    }

    /// The mechanism `pv-tlb-flush` has something to act on: the guest uses it and vCPUs are
    /// preempted (on dedicated pCPUs no vCPU is ever seen preempted, so it never acts).
    pub(crate) fn pv_flushes(spec: &MachineSpec) -> bool {
        Guest::from_spec(spec).is_some_and(|g| g.pv_tlb_flush && g.preemption.is_some())
    }
}

impl<O: Observer> Kernel<O> {
    /// The sender's extra cycles for its `nth` IPI of one send (0-based): an exit per ICR
    /// write, or one per batch with PV send-IPI; nothing on bare metal.
    pub(super) fn guest_send_cycles(&self, nth: usize) -> u64 {
        match &self.guest {
            Some(g) if !g.pv_send_ipi || nth == 0 => g.vm_exit,
            _ => 0,
        }
    }

    /// The target's extra cycles before its handler runs: the exit and injection of an
    /// interrupt without posted interrupts; nothing on bare metal.
    pub(super) fn guest_receive_cycles(&self) -> u64 {
        match &self.guest {
            Some(g) if !g.posted_interrupts => g.vm_exit,
            _ => 0,
        }
    }
}
