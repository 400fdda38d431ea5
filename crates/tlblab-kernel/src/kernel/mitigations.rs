//! CPU-vulnerability mitigations (docs/kernel-model.md, "Mitigations"; mechanism
//! `mitigations`).
//!
//! The preset's `[mitigations]` (`tlblab_sim::machine::mitigations`) says what its kernel runs.
//! Mitigations that run inside a measured path (retpolines, Safe RET's return thunk,
//! `UNTRAIN_RET` at entry, VERW at exit, the RSB fill in `__switch_to_asm`) are already in that
//! path's `[kernel]` figure: with the mechanism on the model charges the figures as they are;
//! off, [`base_costs`] takes each figure's mitigation events out. IBPB on a switch to another
//! user mm (`cond_mitigation()` in arch/x86/mm/tlb.c) is in no figure: it is charged where the
//! kernel runs it, [`Kernel::cond_mitigation`], with the mechanism on.

use super::Kernel;
use crate::ids::MmId;
use crate::observer::Observer;
use tlblab_sim::machine::mitigations::{IbpbMode, InPath, RawMitigations};
use tlblab_sim::machine::raw::RawKernel;
use tlblab_types::CpuId;

/// `cpu_tlbstate.last_user_mm_spec`: the last user mm a CPU switched to, with its
/// `TIF_SPEC_IB` bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LastUserMm {
    /// `LAST_USER_MM_INIT` (set at boot by `initialize_tlbstate_and_flush()`): no mm, with the
    /// IBPB bit set, so the first switch to a user task issues IBPB in either mode.
    Init,
    /// A user mm and whether its task had `TIF_SPEC_IB`.
    Mm(MmId, bool),
}

/// The mitigation state of the model: IBPB's mode and cost, and each CPU's last user mm.
#[derive(Clone, Debug)]
pub(crate) struct Mitigations {
    mode: IbpbMode,
    ibpb_cycles: u64,
    opted_in: bool,
    last_user_mm: Vec<LastUserMm>,
    /// IBPBs issued, per CPU.
    pub(crate) ibpbs: Vec<u64>,
}

impl Mitigations {
    /// The state for `n` CPUs; `raw` is `None` without `[mitigations]` or with the mechanism
    /// off.
    pub(crate) fn new(raw: Option<&RawMitigations>, n: usize) -> Mitigations {
        let (mode, ibpb_cycles, opted_in) = match raw {
            Some(m) => (m.ibpb_mode, m.ibpb.as_ref().map_or(0, |f| f.cycles), m.ibpb_opted_in),
            None => (IbpbMode::Off, 0, false),
        };
        Mitigations {
            mode,
            ibpb_cycles,
            opted_in,
            last_user_mm: vec![LastUserMm::Init; n],
            ibpbs: vec![0; n],
        }
    }
}

/// `costs` without the events of the mitigations `off` that its figures hold
/// (`[mitigations.paths]`): with every one off, the base paths. The preset's validation made
/// sure no figure holds more than its cost.
pub(crate) fn base_costs(costs: &mut RawKernel, m: &RawMitigations, off: &[InPath]) {
    for (name, figure) in costs.figures_mut() {
        if let Some(events) = m.paths.get(name) {
            let held: u64 = off.iter().map(|&k| m.path_cycles_of(events, k)).sum();
            figure.cycles = figure.cycles.saturating_sub(held);
        }
    }
}

impl<O: Observer> Kernel<O> {
    /// `cond_mitigation()`, called by `switch_mm_irqs_off()` when a context switch changes the
    /// mm to `next`'s (a user task: `switch_mm_irqs_off()` from `leave_mm()` or `activate_mm()`
    /// passes no task, and `cond_mitigation()` then does nothing); returns its cycles.
    ///
    /// Conditional (`switch_mm_cond_ibpb`): IBPB when the mangled (mm, `TIF_SPEC_IB`) differs
    /// from the CPU's last and either has the bit. Always (`switch_mm_always_ibpb`): IBPB when
    /// the mm differs from the last user mm. The L1D flush on switch (`L1D_FLUSH`, opt-in per
    /// task) is not modelled.
    pub(crate) fn cond_mitigation(&mut self, cpu: CpuId, next: MmId) -> u64 {
        let c = usize::from(cpu.0);
        let m = &mut self.mitigations;
        if m.mode == IbpbMode::Off {
            return 0;
        }
        let next_spec = LastUserMm::Mm(next, m.opted_in);
        let prev = m.last_user_mm[c];
        let ibpb = match m.mode {
            IbpbMode::Off => false,
            IbpbMode::Conditional => {
                let prev_ib = match prev {
                    LastUserMm::Init => true,
                    LastUserMm::Mm(_, ib) => ib,
                };
                next_spec != prev && (m.opted_in || prev_ib)
            }
            IbpbMode::Always => prev != LastUserMm::Mm(next, m.opted_in),
        };
        m.last_user_mm[c] = next_spec;
        if ibpb {
            m.ibpbs[c] += 1;
            m.ibpb_cycles
        } else {
            0
        }
    }

    /// IBPBs issued on each CPU (`cond_mitigation()`).
    #[cfg(test)]
    pub(crate) fn ibpbs(&self) -> &[u64] {
        &self.mitigations.ibpbs
    }
}
