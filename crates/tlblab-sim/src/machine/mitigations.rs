//! `[mitigations]`: the CPU-vulnerability mitigations the preset's kernel runs, what one event of
//! each costs, and how many events each measured `[kernel]` figure holds (docs/kernel-model.md,
//! "Mitigations").
//!
//! A `[kernel]` figure measured on a kernel that runs mitigations already holds their cost. The
//! `paths` table says how much: per figure, its kernel returns, retpolined indirect branches,
//! entries from user mode (each one return to user mode) and context switches. The kernel model
//! subtracts those events' cost from the figure when its mechanism `mitigations` is off, and so
//! never counts them twice. IBPB is not in any figure: it is charged on its own event (a context
//! switch to another user mm, `cond_mitigation()`).

use super::raw::KernelFigure;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// When `switch_mm_irqs_off()` issues IBPB (`cond_mitigation()`, `spectre_v2_user=`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IbpbMode {
    /// Never (`spectre_v2_user=off`, or no IBPB on the CPU).
    #[default]
    Off,
    /// When the task switched to or from opted in (`TIF_SPEC_IB`: prctl or seccomp) and the
    /// user mm changes (`switch_mm_cond_ibpb`).
    Conditional,
    /// At every switch to another user mm (`switch_mm_always_ibpb`).
    Always,
}

/// A mitigation that runs inside measured paths (IBPB, charged on its own event, is not one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InPath {
    /// Retpoline thunks (`retpoline`, per indirect branch).
    Retpoline,
    /// The SRSO return thunk (`safe_ret`, per `ret`, a retpoline thunk's included).
    SafeRet,
    /// `UNTRAIN_RET` (`untrain_ret`, per entry from user mode).
    UntrainRet,
    /// VERW (`verw`, per return to user mode).
    Verw,
    /// The RSB fill (`rsb_fill`, per context switch).
    RsbFill,
}

impl InPath {
    /// Every one, in the order of the file's keys.
    pub const ALL: [InPath; 5] =
        [InPath::Retpoline, InPath::SafeRet, InPath::UntrainRet, InPath::Verw, InPath::RsbFill];
}

/// The events one `[kernel]` figure holds, per occurrence of the path.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathEvents {
    /// Kernel `ret` instructions (each through the return thunk under Safe RET).
    #[serde(default)]
    pub rets: u32,
    /// Indirect calls and jumps (each through a retpoline thunk).
    #[serde(default)]
    pub indirect: u32,
    /// Entries from user mode (`UNTRAIN_RET`), each with its return to user mode
    /// (`CLEAR_CPU_BUFFERS`).
    #[serde(default)]
    pub entries: u32,
    /// Context switches (`__switch_to_asm`'s `FILL_RETURN_BUFFER`).
    #[serde(default)]
    pub switches: u32,
}

/// `[mitigations]`: what the preset's kernel runs (a missing figure: it does not run that
/// mitigation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMitigations {
    /// Where the set comes from (the vulnerabilities files, the kernel's version and date).
    pub source: String,
    /// Extra cost of an indirect branch through a retpoline thunk over a predicted indirect
    /// branch (`spectre_v2=retpoline`).
    #[serde(default)]
    pub retpoline: Option<KernelFigure>,
    /// Extra cost of a kernel `ret` through `srso_return_thunk` (`jmp` to it, `call
    /// srso_safe_ret`, `lea`, a `ret` that mispredicts) over a predicted `ret` (SRSO Safe RET).
    #[serde(default)]
    pub safe_ret: Option<KernelFigure>,
    /// `UNTRAIN_RET` at each entry from user mode (`srso_untrain_ret` under SRSO, the retbleed
    /// untraining sequence on Zen 1/2).
    #[serde(default)]
    pub untrain_ret: Option<KernelFigure>,
    /// `FILL_RETURN_BUFFER` in `__switch_to_asm`: 32 calls, the stack reset, an LFENCE
    /// (`X86_FEATURE_RSB_CTXSW`).
    #[serde(default)]
    pub rsb_fill: Option<KernelFigure>,
    /// `CLEAR_CPU_BUFFERS` (VERW) at each return to user mode (MDS, TAA, MMIO, RFDS on Intel).
    #[serde(default)]
    pub verw: Option<KernelFigure>,
    /// One IBPB (a WRMSR to `PRED_CMD`); used as `ibpb_mode` says.
    #[serde(default)]
    pub ibpb: Option<KernelFigure>,
    /// When IBPB is issued.
    #[serde(default)]
    pub ibpb_mode: IbpbMode,
    /// Every user task has `TIF_SPEC_IB` (opted in by prctl or seccomp), for
    /// [`IbpbMode::Conditional`].
    #[serde(default)]
    pub ibpb_opted_in: bool,
    /// Per `[kernel]` figure name, the events the figure holds. A figure not listed holds none
    /// of this kernel's mitigations (e.g. one taken from another preset).
    #[serde(default)]
    pub paths: BTreeMap<String, PathEvents>,
    /// Where the event counts come from.
    #[serde(default)]
    pub paths_source: String,
}

impl RawMitigations {
    /// Every per-event figure the preset gives, named as in the file.
    pub fn figures(&self) -> Vec<(&'static str, &KernelFigure)> {
        [
            ("retpoline", self.retpoline.as_ref()),
            ("safe_ret", self.safe_ret.as_ref()),
            ("untrain_ret", self.untrain_ret.as_ref()),
            ("rsb_fill", self.rsb_fill.as_ref()),
            ("verw", self.verw.as_ref()),
            ("ibpb", self.ibpb.as_ref()),
        ]
        .into_iter()
        .filter_map(|(n, f)| f.map(|f| (n, f)))
        .collect()
    }

    /// Every per-event figure, named as in the file.
    pub fn figures_mut(&mut self) -> Vec<(&'static str, &mut KernelFigure)> {
        [
            ("retpoline", self.retpoline.as_mut()),
            ("safe_ret", self.safe_ret.as_mut()),
            ("untrain_ret", self.untrain_ret.as_mut()),
            ("rsb_fill", self.rsb_fill.as_mut()),
            ("verw", self.verw.as_mut()),
            ("ibpb", self.ibpb.as_mut()),
        ]
        .into_iter()
        .filter_map(|(n, f)| f.map(|f| (n, f)))
        .collect()
    }

    fn cycles(f: &Option<KernelFigure>) -> u64 {
        f.as_ref().map_or(0, |f| f.cycles)
    }

    /// Cycles the mitigations add to one occurrence of a path with `events` (resolved figures).
    /// A retpoline thunk ends in a `ret`, which goes through the return thunk too.
    pub fn path_cycles(&self, events: &PathEvents) -> u64 {
        InPath::ALL.iter().fold(0, |sum, &m| sum.saturating_add(self.path_cycles_of(events, m)))
    }

    /// The cycles of mitigation `m` alone in one occurrence of a path with `events`; saturating,
    /// so that absurd event counts in a file are refused by the check against the path's
    /// figure rather than overflow.
    pub fn path_cycles_of(&self, events: &PathEvents, m: InPath) -> u64 {
        let (count, figure) = match m {
            InPath::Retpoline => (u64::from(events.indirect), &self.retpoline),
            InPath::SafeRet => {
                (u64::from(events.rets) + u64::from(events.indirect), &self.safe_ret)
            }
            InPath::UntrainRet => (u64::from(events.entries), &self.untrain_ret),
            InPath::Verw => (u64::from(events.entries), &self.verw),
            InPath::RsbFill => (u64::from(events.switches), &self.rsb_fill),
        };
        count.saturating_mul(Self::cycles(figure))
    }

    /// Whether mitigation `m` costs anything on some listed path.
    pub fn costs_anything_in(&self, m: InPath) -> bool {
        self.paths.values().any(|e| self.path_cycles_of(e, m) > 0)
    }

    /// Whether IBPB is issued and costs anything.
    pub fn ibpb_costs_anything(&self) -> bool {
        self.ibpb_mode != IbpbMode::Off && Self::cycles(&self.ibpb) > 0
    }

    /// Whether any mitigation costs anything: some path holds a cost, or IBPB is issued.
    pub fn costs_anything(&self) -> bool {
        InPath::ALL.iter().any(|&m| self.costs_anything_in(m)) || self.ibpb_costs_anything()
    }
}

/// Resolves the per-event figures at `clock` and checks the table against `kernel`'s figure
/// names and cycles (a path cannot hold more mitigation than its whole cost).
pub(crate) fn resolve(
    m: &mut RawMitigations,
    clock: Option<u64>,
    kernel: Option<&super::raw::RawKernel>,
) -> Result<(), String> {
    let (Some(mhz), Some(kernel)) = (clock, kernel) else {
        return Err("`[mitigations]` needs a `[kernel]` section: its clock resolves the figures \
                    and its figures hold the costs"
            .into());
    };
    for (name, figure) in m.figures_mut() {
        figure.cycles =
            figure.written.resolve(mhz).map_err(|e| format!("`[mitigations] {name}`: {e}"))?;
    }
    if m.ibpb_mode != IbpbMode::Off && m.ibpb.is_none() {
        return Err(format!(
            "`[mitigations] ibpb_mode = {:?}` needs an `ibpb` figure (the cost of one IBPB)",
            m.ibpb_mode
        ));
    }
    let figures = kernel.figures();
    for (path, events) in &m.paths {
        let Some((_, figure)) = figures.iter().find(|(n, _)| n == path) else {
            let known: Vec<&str> = figures.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "`[mitigations.paths] {path}`: no such `[kernel]` figure (known: {})",
                known.join(", ")
            ));
        };
        let held = m.path_cycles(events);
        if held > figure.cycles {
            return Err(format!(
                "`[mitigations.paths] {path}`: its mitigation events cost {held} cycles, more \
                 than the whole `[kernel] {path}` ({} cycles)",
                figure.cycles
            ));
        }
    }
    Ok(())
}
