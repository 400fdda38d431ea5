//! The machine-preset file as written: parsed only, nothing checked beyond the shape.
//!
//! Every field is named; unknown keys are rejected (`deny_unknown_fields`) so a misspelt key can
//! never silently fall back to a default.

use crate::hw::Replacement;
use crate::stats::OpKind;
use serde::{Deserialize, Serialize};
use tlblab_types::provenance::InputOrigin;
use tlblab_types::{AccessKind, PageSize};

/// A figure with its provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CyclesFigure {
    /// The value, in core cycles.
    pub cycles: u64,
    /// Where it comes from.
    pub source: String,
    /// Set when the figure is not confirmed by a primary source (or is an assumption).
    #[serde(default)]
    pub unverified: bool,
}

/// Upper bound of a clock, in MHz (`[kernel].clock`, a figure's `at_mhz`): 100 GHz.
pub const MAX_MHZ: u64 = 100_000;
/// Upper bound of one kernel path's resolved cost, and of a `[latency]` or `[cost]` figure:
/// 10^10 cycles (2.5 s at 4 GHz). Larger figures are typing mistakes, and would overflow the
/// simulator's clock arithmetic.
pub const MAX_PATH_CYCLES: u64 = 10_000_000_000;

/// The most cycles one path or instruction may cost at a clock of `mhz`: 1 s. No kernel path
/// takes that long, and a longer one spans more ticks than a run can simulate (10^10 cycles at
/// 1 MHz are 2.5 million ticks).
pub fn max_cycles_at(mhz: u64) -> u64 {
    mhz.saturating_mul(1_000_000).min(MAX_PATH_CYCLES)
}

/// How a cost measured as a time at one clock carries over to another clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scales {
    /// A core-bound path: its cycle count (`ns × at_mhz / 1000`) is the same at any clock.
    Cycles,
    /// A latency-bound path (an exit to a hypervisor, an interrupt's delivery, DRAM): its time is
    /// the same at any clock, so its cycles are `ns × clock / 1000` at the preset's clock.
    Time,
}

impl Scales {
    /// `cycles` or `time`, as in the file.
    pub fn name(self) -> &'static str {
        match self {
            Scales::Cycles => "cycles",
            Scales::Time => "time",
        }
    }
}

/// A kernel-path figure as written: exactly one of `cycles` (native to the preset's core) or
/// `ns` with `at_mhz` (the clock it was measured at) and `scales`.
#[derive(Clone, Copy, Debug, Default)]
pub struct WrittenCost {
    /// Core cycles of this preset's core.
    pub cycles: Option<u64>,
    /// Nanoseconds, measured at `at_mhz`.
    pub ns: Option<f64>,
    /// The core clock of the machine that `ns` was measured on, in MHz.
    pub at_mhz: Option<u64>,
    /// How `ns` carries over to the preset's clock.
    pub scales: Option<Scales>,
}

impl PartialEq for WrittenCost {
    fn eq(&self, other: &WrittenCost) -> bool {
        self.cycles == other.cycles
            && self.ns.map(f64::to_bits) == other.ns.map(f64::to_bits)
            && self.at_mhz == other.at_mhz
            && self.scales == other.scales
    }
}

// Equality compares the bits of `ns`, so it is reflexive even for a NaN.
impl Eq for WrittenCost {}

impl WrittenCost {
    /// The figure in cycles at a core clock of `clock_mhz`, or what is wrong with it (the message
    /// names the offending key, not the figure: the caller adds that).
    ///
    /// `cycles = N` gives N. `ns = X, at_mhz = M, scales = "cycles"` gives round(X × M / 1000),
    /// whatever the clock; `scales = "time"` gives round(X × clock / 1000). The arithmetic is
    /// IEEE double precision, rounded half away from zero: the same file always gives the same
    /// cycles.
    pub fn resolve(&self, clock_mhz: u64) -> Result<u64, String> {
        let cycles = match (self.cycles, self.ns) {
            (Some(_), Some(_)) => {
                return Err("gives both `cycles` and `ns`; write exactly one of them".into())
            }
            (None, None) => {
                return Err("gives neither `cycles` nor `ns`; write exactly one of them".into())
            }
            (Some(c), None) => {
                if self.at_mhz.is_some() || self.scales.is_some() {
                    return Err("`at_mhz` and `scales` go with `ns`, not with `cycles`".into());
                }
                c
            }
            (None, Some(ns)) => {
                if !ns.is_finite() || ns < 0.0 {
                    return Err(format!("`ns = {ns}` is not a finite, non-negative time"));
                }
                let at_mhz =
                    self.at_mhz.ok_or("`ns` needs `at_mhz`, the clock it was measured at")?;
                if at_mhz == 0 || at_mhz > MAX_MHZ {
                    return Err(format!("`at_mhz = {at_mhz}` is not a clock (1 to {MAX_MHZ} MHz)"));
                }
                let scales = self.scales.ok_or(
                    "`ns` needs `scales = \"cycles\"` (a core-bound path) or `scales = \"time\"` \
                     (a latency-bound one)",
                )?;
                let mhz = match scales {
                    Scales::Cycles => at_mhz,
                    Scales::Time => clock_mhz,
                };
                let cycles = (ns * mhz as f64 / 1000.0).round();
                if cycles > MAX_PATH_CYCLES as f64 {
                    return Err(format!(
                        "`ns = {ns}` is {cycles:e} cycles at {mhz} MHz, above the limit of \
                         {MAX_PATH_CYCLES} cycles"
                    ));
                }
                cycles as u64
            }
        };
        if cycles > MAX_PATH_CYCLES {
            return Err(format!(
                "`cycles = {cycles}` is above the limit of {MAX_PATH_CYCLES} cycles for one path"
            ));
        }
        let second = max_cycles_at(clock_mhz);
        if cycles > second {
            return Err(format!(
                "{cycles} cycles is more than 1 s at the {clock_mhz} MHz clock (at most {second})"
            ));
        }
        Ok(cycles)
    }

    /// The figure in words: `236 cycles`, `102.5 ns at 2300 MHz, scales with cycles`.
    pub fn describe(&self) -> String {
        match (self.cycles, self.ns, self.at_mhz, self.scales) {
            (Some(c), None, None, None) => format!("{c} cycles"),
            (None, Some(ns), Some(m), Some(s)) => {
                format!("{ns} ns at {m} MHz, scales with {}", s.name())
            }
            _ => "invalid".into(),
        }
    }
}

/// A kernel-path cost: written in the unit it was measured in ([`WrittenCost`]), resolved once,
/// when the preset is loaded, to [`KernelFigure::cycles`] at the preset's `[kernel].clock`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "KernelFigureToml", into = "KernelFigureToml")]
pub struct KernelFigure {
    /// The cost in core cycles at the preset's clock. Set by `MachineSpec`'s validation; in a
    /// `RawMachine` deserialized on its own, it is the written `cycles` (0 for an `ns` figure).
    pub cycles: u64,
    /// The figure as written.
    pub written: WrittenCost,
    /// Where it comes from.
    pub source: String,
    /// Set when the figure is not confirmed by a primary source (or is an assumption).
    pub unverified: bool,
}

impl KernelFigure {
    /// A figure native to the preset's core.
    pub fn in_cycles(cycles: u64, source: impl Into<String>, unverified: bool) -> KernelFigure {
        KernelFigure {
            cycles,
            written: WrittenCost { cycles: Some(cycles), ..WrittenCost::default() },
            source: source.into(),
            unverified,
        }
    }

    /// `zap_batch` of a preset that does not give it: held in `madvise` and `munmap`.
    pub fn folded_zap_batch() -> KernelFigure {
        let why = "not separate: held in this preset's madvise and munmap, which were shared out \
                   of whole-path measurements";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `pipe_op` and `socket_op` of a preset that does not give them: the one per-operation
    /// figure the model charged for both transports before they were separate.
    pub fn assumed_channel_op() -> KernelFigure {
        let why = "assumption (UNVERIFIED): the work of one pipe or AF_UNIX stream-socket read or \
                   write of a small message apart from the system call, any wake-up and the line \
                   transfer (the lock, a 100-byte copy, the buffer bookkeeping); no published \
                   figure isolates it (lmbench's pipe and AF_UNIX latencies include two context \
                   switches and two wake-ups); the same for both transports";
        KernelFigure::in_cycles(400, why, true)
    }

    /// `pipe_remote` and `socket_remote` of a preset that does not give them.
    pub fn unmeasured_remote_read() -> KernelFigure {
        let why = "not measured apart: a message read on another CPU than the one that wrote it \
                   costs what one read where it was written does (besides the channel's line)";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `pipe_queued` and `socket_queued` of a preset that does not give them.
    pub fn unmeasured_queued() -> KernelFigure {
        let why = "not measured apart: a message costs the same however many others were written \
                   between its write and its read";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `ipi_return` of a preset that does not give it: held in `ipi_handler`.
    pub fn held_ipi_return() -> KernelFigure {
        let why = "not separate: the interrupt's exit and return are held in this preset's \
                   ipi_handler, charged before the acknowledgement";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `page_fault_anon_hot` of a preset that does not give it.
    pub fn unmeasured_hot_fault() -> KernelFigure {
        let why = "not measured apart: every anonymous write fault costs page_fault_anon, \
                   however recently its frame was freed";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `invlpg_refill` of a preset that does not give it.
    pub fn unmeasured_invlpg_refill() -> KernelFigure {
        let why = "not measured apart: an INVLPG keeps the kernel's own translations (the SDM's \
                   rule), so a ranged flush leaves nothing for the kernel to refill";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `split_vma` of a preset that does not give it.
    pub fn unmeasured_split_vma() -> KernelFigure {
        let why = "not measured apart: a munmap that splits a VMA costs what one that removes a \
                   whole VMA does";
        KernelFigure::in_cycles(0, why, true)
    }

    /// `change_pte` of a preset that does not give it.
    pub fn unmeasured_change_pte() -> KernelFigure {
        let why = "not measured apart: an mprotect costs the same whatever the number of present \
                   pages it changes";
        KernelFigure::in_cycles(0, why, true)
    }

    /// A figure measured as `ns` at `at_mhz`; `cycles` stays 0 until the preset is loaded.
    pub fn in_ns(
        ns: f64,
        at_mhz: u64,
        scales: Scales,
        source: impl Into<String>,
        unverified: bool,
    ) -> KernelFigure {
        KernelFigure {
            cycles: 0,
            written: WrittenCost {
                ns: Some(ns),
                at_mhz: Some(at_mhz),
                scales: Some(scales),
                ..WrittenCost::default()
            },
            source: source.into(),
            unverified,
        }
    }

    /// The figure as a cost.
    pub fn get(&self) -> tlblab_types::Cycles {
        tlblab_types::Cycles(self.cycles)
    }
}

/// [`KernelFigure`] as it appears in a file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KernelFigureToml {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cycles: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at_mhz: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scales: Option<Scales>,
    source: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unverified: bool,
}

impl From<KernelFigureToml> for KernelFigure {
    fn from(t: KernelFigureToml) -> KernelFigure {
        KernelFigure {
            cycles: t.cycles.unwrap_or(0),
            written: WrittenCost { cycles: t.cycles, ns: t.ns, at_mhz: t.at_mhz, scales: t.scales },
            source: t.source,
            unverified: t.unverified,
        }
    }
}

impl From<KernelFigure> for KernelFigureToml {
    fn from(f: KernelFigure) -> KernelFigureToml {
        KernelFigureToml {
            cycles: f.written.cycles,
            ns: f.written.ns,
            at_mhz: f.written.at_mhz,
            scales: f.written.scales,
            source: f.source,
            unverified: f.unverified,
        }
    }
}

/// A fact about a virtual machine, with its provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GuestFact<T> {
    /// The fact.
    pub value: T,
    /// Where it comes from.
    pub source: String,
    /// Set when the fact is not confirmed (an assumption, or what a hypervisor says of itself).
    #[serde(default)]
    pub unverified: bool,
}

/// How an idle vCPU waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuestIdle {
    /// `idle=poll`: the vCPU spins; waking it needs no exit, and an IPI to it is never an idle
    /// exit.
    Poll,
    /// HLT exits to the hypervisor; waking the vCPU is a host wake-up.
    Halt,
    /// The guest's `haltpoll` cpuidle driver: polls a while in the guest, then HLT.
    Haltpoll,
}

impl GuestIdle {
    /// `poll`, `halt` or `haltpoll`, as in the file.
    pub fn name(self) -> &'static str {
        match self {
            GuestIdle::Poll => "poll",
            GuestIdle::Halt => "halt",
            GuestIdle::Haltpoll => "haltpoll",
        }
    }
}

/// The preset's machine is a virtual machine: what the guest kernel sees of its hypervisor and
/// what the virtualised paths cost. Every field is optional (unknown). See
/// docs/hardware-model.md, "The `[guest]` section".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGuest {
    /// The hypervisor: `kvm`, `hyperv`, `xen`, `vmware`, … (lower case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hypervisor: Option<GuestFact<String>>,
    /// One VM-exit round trip (guest → host → guest), e.g. a `CPUID` exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm_exit: Option<KernelFigure>,
    /// A synchronous IPI round trip between two running vCPUs beyond the syscall that sends it
    /// (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` minus its no-IPI baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipi_round_trip: Option<KernelFigure>,
    /// KVM's paravirtual TLB flush (`KVM_FEATURE_PV_TLB_FLUSH`, CPUID 0x40000001 EAX bit 9): a
    /// flush aimed at a preempted vCPU is left to the host, at the vCPU's next entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pv_tlb_flush: Option<GuestFact<bool>>,
    /// KVM's paravirtual IPI (`KVM_FEATURE_PV_SEND_IPI`, bit 11): one hypercall sends to many.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pv_send_ipi: Option<GuestFact<bool>>,
    /// Posted interrupts / IPI virtualisation (APICv, IPIv, AVIC): an IPI delivered without an
    /// exit on the receiver. Not decidable from inside a guest in general.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub posted_interrupts: Option<GuestFact<bool>>,
    /// How an idle vCPU waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<GuestFact<GuestIdle>>,
    /// Steal-time accounting (`KVM_FEATURE_STEAL_TIME`, bit 5): the guest sees when the host ran
    /// something else on its vCPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steal_time: Option<GuestFact<bool>>,
    /// Nested paging (EPT/NPT) and its caches (`[guest.nested]`; docs/hardware-model.md,
    /// "Nested paging (EPT/NPT)"). Absent: walks are modelled as native.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<super::nested::RawNested>,
    /// Host overcommit: runnable host threads per physical CPU the vCPUs run on, on average
    /// (1: dedicated pCPUs, no preemption). The host scheduler shares a pCPU among them, so a
    /// vCPU runs `host_slice`, then waits while others run theirs (docs/kernel-model.md,
    /// "Virtualisation", vCPU preemption).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overcommit: Option<GuestFact<Ratio>>,
    /// The host scheduler's slice: how long a vCPU thread, and each thread it shares its pCPU
    /// with, runs before the host switches (EEVDF's `sysctl_sched_base_slice` since 6.6; CFS's
    /// `sysctl_sched_latency / nr_running` before). Needed when `overcommit` > 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_slice: Option<KernelFigure>,
    /// The host kernel's `CONFIG_HZ`: without `HRTICK` (off by default) the host notices a used
    /// slice at its next tick. Needed when `overcommit` > 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_hz: Option<GuestFact<u64>>,
}

/// A non-negative real number of a preset (finite: checked where it is used).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Ratio(pub f64);

// A preset's ratios are checked finite, so equality is reflexive.
impl Eq for Ratio {}

/// The largest `[guest] overcommit`: far beyond any host that still runs a guest usefully.
pub const MAX_OVERCOMMIT: f64 = 64.0;

impl RawGuest {
    /// The timed figures, named as in the file.
    pub fn figures(&self) -> Vec<(&'static str, &KernelFigure)> {
        [
            ("vm_exit", &self.vm_exit),
            ("ipi_round_trip", &self.ipi_round_trip),
            ("host_slice", &self.host_slice),
        ]
        .into_iter()
        .filter_map(|(n, f)| f.as_ref().map(|f| (n, f)))
        .collect()
    }

    fn figures_mut(&mut self) -> Vec<(&'static str, &mut KernelFigure)> {
        [
            ("vm_exit", &mut self.vm_exit),
            ("ipi_round_trip", &mut self.ipi_round_trip),
            ("host_slice", &mut self.host_slice),
        ]
        .into_iter()
        .filter_map(|(n, f)| f.as_mut().map(|f| (n, f)))
        .collect()
    }

    /// Checks `overcommit` (finite, 1 to [`MAX_OVERCOMMIT`]) and that an overcommitted guest
    /// gives a non-zero `host_slice` (resolved: call after the figures are).
    pub(crate) fn check_preemption(&self) -> Result<(), String> {
        let Some(o) = &self.overcommit else { return Ok(()) };
        let r = o.value.0;
        if !(1.0..=MAX_OVERCOMMIT).contains(&r) {
            return Err(format!(
                "`[guest] overcommit = {r}`: runnable host threads per physical CPU must be \
                 from 1 (dedicated) to {MAX_OVERCOMMIT}"
            ));
        }
        if r > 1.0 && self.host_slice.as_ref().is_none_or(|s| s.cycles == 0) {
            return Err(format!(
                "`[guest] overcommit = {r}` needs a non-zero `host_slice`: how long the host \
                 runs each thread sharing a physical CPU"
            ));
        }
        match self.host_hz.as_ref().map(|f| f.value) {
            None if r > 1.0 => Err(format!(
                "`[guest] overcommit = {r}` needs `host_hz`: the host's CONFIG_HZ, whose tick \
                 ends a slice"
            )),
            Some(hz) if !(100..=10_000).contains(&hz) => {
                Err(format!("`[guest] host_hz = {hz}`: CONFIG_HZ is from 100 to 10000"))
            }
            _ => Ok(()),
        }
    }
}

/// A machine preset file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMachine {
    /// Short name (`skylake`).
    pub name: String,
    /// One line saying which CPU this is.
    pub description: String,
    /// `intel` or `amd`.
    pub vendor: String,
    /// Replacement policy of every TLB and paging-structure cache.
    #[serde(default)]
    pub replacement: Replacement,
    /// Architectural features.
    pub features: RawFeatures,
    /// TLB structures, L1 and L2.
    pub tlb: Vec<RawTlb>,
    /// Paging-structure caches, one per upper paging level that has one.
    #[serde(default)]
    pub psc: Vec<RawPsc>,
    /// Translation latencies.
    pub latency: RawLatency,
    /// Instruction costs.
    pub cost: RawCosts,
    /// Costs of the Linux kernel's code paths on this machine: only the kernel model
    /// (`tlblab-kernel`) needs them, so a preset for trace-driven runs may leave them out.
    #[serde(default)]
    pub kernel: Option<RawKernel>,
    /// The idle states of the cpuidle driver: what leaving idle costs. Only the kernel model
    /// needs them; without them it uses `kernel.idle_exit` for every wake-up.
    #[serde(default)]
    pub idle: Option<RawIdle>,
    /// What the machine is when it is a virtual machine: the kernel model's guest costs
    /// (docs/kernel-model.md, "Virtualisation"). Absent for bare metal or when unknown.
    #[serde(default)]
    pub guest: Option<RawGuest>,
    /// The CPU-vulnerability mitigations its kernel runs and what they cost
    /// (docs/kernel-model.md, "Mitigations"); absent: the figures are taken as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mitigations: Option<super::mitigations::RawMitigations>,
    /// Sockets and SMT, and the cost of a cache line moved between sockets; absent: one
    /// socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<super::topology::RawTopology>,
    /// Intel RAR and its costs (`machine/broadcast.rs`); absent: the CPU has no RAR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rar: Option<super::broadcast::RawRar>,
    /// The page-freeing locks' hold times (`machine/broadcast.rs`); absent: no lock charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<super::broadcast::RawLocks>,
}

/// One figure of a preset with its source, as the file gives them: what `tlblab sim machines`
/// counts and what a study's inputs statement cites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourcedFigure<'a> {
    /// Its name as in the file (`tlb "L1 dTLB 4K"`, `psc pde`, `cost.invlpg`, `kernel.ipi_send`).
    pub name: String,
    /// Where it comes from.
    pub source: &'a str,
    /// Marked `unverified`: no primary source confirms it.
    pub unverified: bool,
}

impl SourcedFigure<'_> {
    /// Where the figure comes from, read from its `source` as the presets write it: an
    /// assumption says so first ("assumed…", "assumption…"); a figure measured on the
    /// project's own machine cites docs/calibration.md, where those measurements are recorded;
    /// any other figure is copied from the source it cites.
    pub fn origin(&self) -> InputOrigin {
        let source = self.source.trim_start().to_ascii_lowercase();
        if source.starts_with("assum") {
            InputOrigin::Assumed
        } else if source.contains("docs/calibration.md") {
            InputOrigin::MeasuredHere
        } else {
            InputOrigin::Copied
        }
    }
}

impl RawMachine {
    /// Every latency and instruction-cost figure, named as in the file.
    pub fn cycles_figures(&self) -> Vec<(String, &CyclesFigure)> {
        let latencies =
            self.latency.figures().into_iter().map(|(n, f)| (format!("latency.{n}"), f));
        let costs = self.cost.figures().into_iter().map(|(n, f)| (format!("cost.{n}"), f));
        latencies.chain(costs).collect()
    }

    /// Every kernel-path figure (`[kernel]`, then `[guest]`'s timed ones, `[mitigations]`'s
    /// per-event costs, `[rar]` and `[locks]`), named as in the file.
    pub fn kernel_figures(&self) -> Vec<(String, &KernelFigure)> {
        fn named<'f>(
            section: &'static str,
            figures: impl IntoIterator<Item = (&'static str, &'f KernelFigure)>,
        ) -> impl Iterator<Item = (String, &'f KernelFigure)> {
            figures.into_iter().map(move |(n, f)| (format!("{section}.{n}"), f))
        }
        let kernel = self.kernel.iter().flat_map(|k| named("kernel", k.figures()));
        let guest = self.guest.iter().flat_map(|g| named("guest", g.figures()));
        let mitigations = self.mitigations.iter().flat_map(|m| named("mitigations", m.figures()));
        let rar = self.rar.iter().flat_map(|r| named("rar", r.figures()));
        let locks = self.locks.iter().flat_map(|l| named("locks", l.figures()));
        kernel.chain(guest).chain(mitigations).chain(rar).chain(locks).collect()
    }

    /// Every figure with its source: the TLBs, the paging-structure caches, the latencies and
    /// instruction costs, then the kernel-path figures.
    pub fn sourced_figures(&self) -> Vec<SourcedFigure<'_>> {
        let tlbs = self.tlb.iter().map(|t| SourcedFigure {
            name: format!("tlb \"{}\"", t.name),
            source: &t.source,
            unverified: t.unverified,
        });
        let pscs = self.psc.iter().map(|p| SourcedFigure {
            name: format!("psc {:?}", p.level).to_lowercase(),
            source: &p.source,
            unverified: p.unverified,
        });
        let cycles = self.cycles_figures().into_iter().map(|(name, f)| SourcedFigure {
            name,
            source: &f.source,
            unverified: f.unverified,
        });
        let kernel = self.kernel_figures().into_iter().map(|(name, f)| SourcedFigure {
            name,
            source: &f.source,
            unverified: f.unverified,
        });
        tlbs.chain(pscs).chain(cycles).chain(kernel).collect()
    }
}

/// How an idle CPU waits (docs/kernel-model.md, "Idle states").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdle {
    /// The driver's states, shallowest first (the cpuidle table order: exit latencies and
    /// target residencies never decrease). The polling state (`POLL`, state 0 on x86: no exit
    /// latency) is always available and is not listed. Empty: the CPU only polls (`idle=poll`).
    pub states: Vec<RawIdleState>,
    /// Where the table comes from (driver and table name).
    pub source: String,
    /// Set when the table is not confirmed.
    #[serde(default)]
    pub unverified: bool,
    /// The `haltpoll` governor's parameters, when it chooses the states (a KVM guest's
    /// cpuidle-haltpoll driver asks for it); absent, the menu governor chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub haltpoll: Option<RawHaltpoll>,
    /// Whether a cpuidle driver runs (absent: yes). `false`: none does
    /// (`/sys/devices/system/cpu/cpuidle/current_driver` = `none`, as in a guest without
    /// cpuidle-haltpoll): `do_idle()` → `cpuidle_idle_call()` finds cpuidle unavailable and
    /// calls `default_idle_call()`, which halts at once in the first state listed, whatever the
    /// idle period: no governor, and no `POLL` state to poll in.
    #[serde(default = "RawIdle::with_cpuidle", skip_serializing_if = "RawIdle::has_cpuidle")]
    pub cpuidle: bool,
}

impl RawIdle {
    fn with_cpuidle() -> bool {
        true
    }

    fn has_cpuidle(cpuidle: &bool) -> bool {
        *cpuidle
    }
}

/// The `haltpoll` cpuidle governor (drivers/cpuidle/governors/haltpoll.c, 5.4+): an idle vCPU
/// polls for up to its `poll_limit_ns`, then halts; the limit starts at 0 and adapts to the
/// halts' lengths within `guest_halt_poll_ns`. The module parameters of the same names
/// (`/sys/module/haltpoll/parameters/`), ns where they are times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHaltpoll {
    /// The largest poll window; 0: never poll (the limit cannot grow).
    pub guest_halt_poll_ns: u64,
    /// The factor a window grows by after a halt that a longer window would have caught.
    pub guest_halt_poll_grow: u64,
    /// The first window after growing from 0.
    pub guest_halt_poll_grow_start: u64,
    /// The divisor a window shrinks by after a halt longer than `guest_halt_poll_ns` (0: to 0).
    pub guest_halt_poll_shrink: u64,
    /// Whether a long halt shrinks the window.
    pub guest_halt_poll_allow_shrink: bool,
    /// Where the parameters come from.
    pub source: String,
}

/// One idle state, as the kernel's cpuidle tables give it (intel_idle's `exit_latency` and
/// `target_residency` are in µs; here in ns).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIdleState {
    /// Its name (`C1`, `C6`).
    pub name: String,
    /// Wall time from the wake-up event to the CPU running again, ns.
    pub exit_latency_ns: u64,
    /// The shortest idle period for which entering the state pays off, ns.
    pub target_residency_ns: u64,
    /// `CPUIDLE_FLAG_TLB_FLUSHED`: the core loses its TLB contents in this state.
    #[serde(default)]
    pub tlb_flushed: bool,
}

/// A clock frequency with its provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MhzFigure {
    /// Core clock in MHz.
    pub mhz: u64,
    /// Where it comes from.
    pub source: String,
    /// Set when the figure is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// Pages of the loop that measures `page_fault_anon_hot` (tlblab-pathcost's
/// `minor_fault_anon_hot`: the same pages freed and refaulted, again and again).
pub const FAULT_HOT_PAGES: u64 = 256;
/// Pages of the loop that measures `page_fault_anon` (`minor_fault_anon`: fresh pages).
pub const FAULT_COLD_PAGES: u64 = 4096;

/// How many messages on average were written between a message's write and its read in the
/// deep rounds that measure `pipe_queued` and `socket_queued` (tlblab-pathcost's
/// `QUEUED_SINCE_MEAN`: 20 channels × 200 messages, halved): the depth at which those figures
/// hold, and up to which the model scales them.
pub const QUEUED_SINCE_MEAN: u64 = 2_000;

/// Costs of kernel code paths, excluding the TLB instructions they execute and the TLB misses
/// they cause (the hardware model charges those). Each is written in the unit it was measured
/// in and resolved to cycles at `clock` when the preset is loaded ([`KernelFigure`]). See
/// docs/kernel-model.md, "Units and scaling".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKernel {
    /// Core clock, to convert cycles to seconds.
    pub clock: MhzFigure,
    /// A null system call: entry, dispatch and exit (without PTI's CR3 writes).
    pub syscall: KernelFigure,
    /// A write fault on an anonymous page: allocate and zero a page, install the PTE.
    pub page_fault_anon: KernelFigure,
    /// The same fault when its frame is one this CPU freed a moment ago
    /// ([`FAULT_HOT_PAGES`] pages freed and refaulted again and again: the frame's lines and its
    /// `struct page` still cached); `page_fault_anon` is then a fault in a loop over
    /// [`FAULT_COLD_PAGES`] fresh pages (mechanism `hot-frames`). 0 (the default) in a preset
    /// that did not measure it apart: every such fault costs `page_fault_anon`.
    #[serde(default = "KernelFigure::unmeasured_hot_fault")]
    pub page_fault_anon_hot: KernelFigure,
    /// A read fault that maps the shared zero page.
    pub page_fault_zero: KernelFigure,
    /// A copy-on-write fault: allocate and copy a page, install the PTE (the flush of the old
    /// PTE is modelled by `flush_tlb_mm_range`).
    pub page_fault_cow: KernelFigure,
    /// Zapping one present PTE in `madvise(MADV_DONTNEED)` / `munmap` (clear, free the page).
    pub zap_pte: KernelFigure,
    /// `madvise(MADV_DONTNEED)` apart from the syscall, the zaps and the flush.
    pub madvise: KernelFigure,
    /// `mmap` of an anonymous region apart from the syscall.
    pub mmap: KernelFigure,
    /// `munmap` apart from the syscall, the zaps and the flush.
    pub munmap: KernelFigure,
    /// Once per zap that clears a present PTE (`madvise(MADV_DONTNEED)`, `munmap`), apart from
    /// the per-page `zap_pte` and the flush: `lru_add_drain()` of the CPU's LRU batch and
    /// `tlb_finish_mmu()`'s batched free of the pages (memcg uncharge, LRU removal, the free).
    /// 0 (the default) in a preset whose `madvise` and `munmap` were shared out of whole-path
    /// measurements that already hold it.
    #[serde(default = "KernelFigure::folded_zap_batch")]
    pub zap_batch: KernelFigure,
    /// The extra of a `munmap` that unmaps part of a VMA (`__split_vma()`: a VMA copied, its
    /// anon_vma chain cloned, the maple tree updated) over one that removes a whole VMA. 0 (the
    /// default) in a preset that did not measure it apart.
    #[serde(default = "KernelFigure::unmeasured_split_vma")]
    pub split_vma: KernelFigure,
    /// `mprotect` apart from the syscall, the PTE changes and the flush, per region.
    pub mprotect: KernelFigure,
    /// Changing one present PTE's protection in `mprotect` (`change_pte_range()`: the PTE
    /// read-modify-written with `ptep_modify_prot_start()`/`_commit()`, the folio checked for a
    /// direct write upgrade, the flush range extended). 0 (the default) in a preset that did not
    /// measure it apart.
    #[serde(default = "KernelFigure::unmeasured_change_pte")]
    pub change_pte: KernelFigure,
    /// One pipe `read()` or `write()` of a small message (hackbench's 100 bytes) apart from the
    /// system call, any wake-up and the cache-line transfer: `pipe_write()`/`pipe_read()`'s
    /// mutex, copy and buffer bookkeeping. Charged per read, write and poll.
    #[serde(default = "KernelFigure::assumed_channel_op")]
    pub pipe_op: KernelFigure,
    /// The same for an `AF_UNIX` stream socket (`unix_stream_sendmsg()`: an skb allocated,
    /// charged and queued; `unix_stream_read_generic()`: dequeued, copied, freed).
    #[serde(default = "KernelFigure::assumed_channel_op")]
    pub socket_op: KernelFigure,
    /// What a pipe message costs its reader more when another CPU wrote it: the misses on the
    /// data and the buffer the writer left in its cache. 0 (the default) in a preset that did not
    /// measure it apart.
    #[serde(default = "KernelFigure::unmeasured_remote_read")]
    pub pipe_remote: KernelFigure,
    /// The same for an `AF_UNIX` stream socket: the skb and its data, and the free and send-buffer
    /// uncharge of the writer's skb from the reader's CPU.
    #[serde(default = "KernelFigure::unmeasured_remote_read")]
    pub socket_remote: KernelFigure,
    /// What a pipe message costs more, written and read, when [`QUEUED_SINCE_MEAN`] other
    /// messages were written on its writer's CPU between the two, than when none was: the misses
    /// on its buffer page and data, gone from the caches meanwhile. The model scales it by the
    /// messages written in between, up to that many (mechanism `queued-messages`). 0 (the
    /// default) in a preset that did not measure it apart.
    #[serde(default = "KernelFigure::unmeasured_queued")]
    pub pipe_queued: KernelFigure,
    /// The same for an `AF_UNIX` stream socket: the skb and its data, and the writes'
    /// allocation of skbs not recently freed.
    #[serde(default = "KernelFigure::unmeasured_queued")]
    pub socket_queued: KernelFigure,
    /// What the kernel's own paths pay after a ranged flush to refill the translations of
    /// their code and data (global, so a CR3 write keeps them), on a machine whose INVLPG drops
    /// every translation (`[features] invlpg_tlb_scope = "all"`): charged once per ranged
    /// flush, on the CPU that flushed. 0 (the default) in a preset whose INVLPG keeps them.
    #[serde(default = "KernelFigure::unmeasured_invlpg_refill")]
    pub invlpg_refill: KernelFigure,
    /// `__schedule()` and `switch_to()` between two tasks, apart from `switch_mm_irqs_off()`.
    pub context_switch: KernelFigure,
    /// The software of `switch_mm_irqs_off()` when the mm changes, apart from the CR3 write.
    pub switch_mm: KernelFigure,
    /// Waking a blocked task (`try_to_wake_up`), on the waker's CPU.
    pub wakeup: KernelFigure,
    /// `sched_setaffinity()` to another CPU, on the calling CPU, apart from the syscall.
    pub migrate: KernelFigure,
    /// `fork()` of a small process: copying the mm's structures, apart from per-page work.
    pub fork: KernelFigure,
    /// Copying one present PTE at fork (and write-protecting it for copy-on-write).
    pub fork_pte: KernelFigure,
    /// `execve()`: a new mm, loading the binary, apart from the faults that follow.
    pub exec: KernelFigure,
    /// Process exit apart from the teardown of its pages (`zap_pte` each).
    pub exit: KernelFigure,
    /// Sending one IPI (an APIC ICR write), per target, on the initiator.
    pub ipi_send: KernelFigure,
    /// From the ICR write to the first instruction of the handler on the target.
    pub ipi_latency: KernelFigure,
    /// Interrupt entry and exit and the call-function dispatch on the target.
    pub ipi_handler: KernelFigure,
    /// From the target's acknowledgement (releasing the call-function lock) to the initiator
    /// seeing it: one cache-line transfer.
    pub ipi_ack: KernelFigure,
    /// The target's time after it acknowledged, until it runs what the interrupt interrupted:
    /// the interrupt's exit and return (in a guest, with the host's side of them), which the
    /// initiator does not wait for. 0 (the default) in a preset whose `ipi_handler` holds it.
    #[serde(default = "KernelFigure::held_ipi_return")]
    pub ipi_return: KernelFigure,
    /// The software of `flush_tlb_func()` apart from the flush instructions.
    pub flush_tlb_func: KernelFigure,
    /// The software of `flush_tlb_mm_range()` apart from `flush_tlb_func()` and the IPIs.
    pub flush_tlb_mm_range: KernelFigure,
    /// A cache line moved from another core's cache (a read of remotely written data).
    pub cache_line_transfer: KernelFigure,
    /// A load that hits the L1 data cache.
    pub l1d_load: KernelFigure,
    /// A mispredicted branch.
    pub branch_mispredict: KernelFigure,
    /// The timer interrupt (tick) apart from any rescheduling.
    pub timer_tick: KernelFigure,
    /// Leaving the idle state when an interrupt or wake-up arrives.
    pub idle_exit: KernelFigure,
}

impl RawKernel {
    /// Every path cost, named as in the file, in file order.
    pub fn figures(&self) -> [(&'static str, &KernelFigure); 40] {
        [
            ("syscall", &self.syscall),
            ("page_fault_anon", &self.page_fault_anon),
            ("page_fault_anon_hot", &self.page_fault_anon_hot),
            ("page_fault_zero", &self.page_fault_zero),
            ("page_fault_cow", &self.page_fault_cow),
            ("zap_pte", &self.zap_pte),
            ("madvise", &self.madvise),
            ("mmap", &self.mmap),
            ("munmap", &self.munmap),
            ("zap_batch", &self.zap_batch),
            ("split_vma", &self.split_vma),
            ("mprotect", &self.mprotect),
            ("change_pte", &self.change_pte),
            ("pipe_op", &self.pipe_op),
            ("socket_op", &self.socket_op),
            ("pipe_remote", &self.pipe_remote),
            ("socket_remote", &self.socket_remote),
            ("pipe_queued", &self.pipe_queued),
            ("socket_queued", &self.socket_queued),
            ("invlpg_refill", &self.invlpg_refill),
            ("context_switch", &self.context_switch),
            ("switch_mm", &self.switch_mm),
            ("wakeup", &self.wakeup),
            ("migrate", &self.migrate),
            ("fork", &self.fork),
            ("fork_pte", &self.fork_pte),
            ("exec", &self.exec),
            ("exit", &self.exit),
            ("ipi_send", &self.ipi_send),
            ("ipi_latency", &self.ipi_latency),
            ("ipi_handler", &self.ipi_handler),
            ("ipi_ack", &self.ipi_ack),
            ("ipi_return", &self.ipi_return),
            ("flush_tlb_func", &self.flush_tlb_func),
            ("flush_tlb_mm_range", &self.flush_tlb_mm_range),
            ("cache_line_transfer", &self.cache_line_transfer),
            ("l1d_load", &self.l1d_load),
            ("branch_mispredict", &self.branch_mispredict),
            ("timer_tick", &self.timer_tick),
            ("idle_exit", &self.idle_exit),
        ]
    }

    /// Every path cost, mutable, named as in the file.
    pub fn figures_mut(&mut self) -> [(&'static str, &mut KernelFigure); 40] {
        [
            ("syscall", &mut self.syscall),
            ("page_fault_anon", &mut self.page_fault_anon),
            ("page_fault_anon_hot", &mut self.page_fault_anon_hot),
            ("page_fault_zero", &mut self.page_fault_zero),
            ("page_fault_cow", &mut self.page_fault_cow),
            ("zap_pte", &mut self.zap_pte),
            ("madvise", &mut self.madvise),
            ("mmap", &mut self.mmap),
            ("munmap", &mut self.munmap),
            ("zap_batch", &mut self.zap_batch),
            ("split_vma", &mut self.split_vma),
            ("mprotect", &mut self.mprotect),
            ("change_pte", &mut self.change_pte),
            ("pipe_op", &mut self.pipe_op),
            ("socket_op", &mut self.socket_op),
            ("pipe_remote", &mut self.pipe_remote),
            ("socket_remote", &mut self.socket_remote),
            ("pipe_queued", &mut self.pipe_queued),
            ("socket_queued", &mut self.socket_queued),
            ("invlpg_refill", &mut self.invlpg_refill),
            ("context_switch", &mut self.context_switch),
            ("switch_mm", &mut self.switch_mm),
            ("wakeup", &mut self.wakeup),
            ("migrate", &mut self.migrate),
            ("fork", &mut self.fork),
            ("fork_pte", &mut self.fork_pte),
            ("exec", &mut self.exec),
            ("exit", &mut self.exit),
            ("ipi_send", &mut self.ipi_send),
            ("ipi_latency", &mut self.ipi_latency),
            ("ipi_handler", &mut self.ipi_handler),
            ("ipi_ack", &mut self.ipi_ack),
            ("ipi_return", &mut self.ipi_return),
            ("flush_tlb_func", &mut self.flush_tlb_func),
            ("flush_tlb_mm_range", &mut self.flush_tlb_mm_range),
            ("cache_line_transfer", &mut self.cache_line_transfer),
            ("l1d_load", &mut self.l1d_load),
            ("branch_mispredict", &mut self.branch_mispredict),
            ("timer_tick", &mut self.timer_tick),
            ("idle_exit", &mut self.idle_exit),
        ]
    }
}

/// Resolves every kernel-path figure (`[kernel]`, and `[guest]`'s timed ones) to cycles at
/// `[kernel].clock`, in place; the error names the key. A preset without `[kernel]` may have no
/// timed `[guest]` figure (there is no clock to resolve it at).
pub(crate) fn resolve_kernel_figures(raw: &mut RawMachine) -> Result<(), String> {
    let clock = match &raw.kernel {
        Some(k) => {
            let mhz = k.clock.mhz;
            if mhz == 0 || mhz > MAX_MHZ {
                return Err(format!(
                    "`[kernel] clock`: `mhz = {mhz}` is not a clock (1 to {MAX_MHZ} MHz)"
                ));
            }
            Some(mhz)
        }
        None => None,
    };
    if let (Some(k), Some(mhz)) = (raw.kernel.as_mut(), clock) {
        for (name, figure) in k.figures_mut() {
            figure.cycles =
                figure.written.resolve(mhz).map_err(|e| format!("`[kernel] {name}`: {e}"))?;
        }
    }
    if let Some(m) = raw.mitigations.as_mut() {
        super::mitigations::resolve(m, clock, raw.kernel.as_ref())?;
    }
    if let Some(t) = raw.topology.as_mut() {
        t.check()?;
        for (name, f) in t.figures_mut() {
            let Some(mhz) = clock else {
                return Err(format!(
                    "`[topology] {name}` needs a `[kernel]` section: its clock resolves the figure"
                ));
            };
            f.cycles = f.written.resolve(mhz).map_err(|e| format!("`[topology] {name}`: {e}"))?;
        }
    }
    super::broadcast::resolve(raw.rar.as_mut(), raw.locks.as_mut(), clock)?;
    if let Some(g) = raw.guest.as_mut() {
        for (name, figure) in g.figures_mut() {
            let Some(mhz) = clock else {
                return Err(format!(
                    "`[guest] {name}` needs a `[kernel]` section: its clock resolves the figure"
                ));
            };
            figure.cycles =
                figure.written.resolve(mhz).map_err(|e| format!("`[guest] {name}`: {e}"))?;
        }
        g.check_preemption()?;
    }
    Ok(())
}

/// Architectural features of the CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeatures {
    /// CR4.PCIDE can be set (`X86_FEATURE_PCID`).
    pub pcid: bool,
    /// INVPCID exists (`X86_FEATURE_INVPCID`).
    pub invpcid: bool,
    /// AMD INVLPGB/TLBSYNC exist (`X86_FEATURE_INVLPGB`).
    pub invlpgb: bool,
    /// `invlpgb_count_max`: CPUID 0x80000008 EDX[15:0] + 1 (only with `invlpgb`).
    #[serde(default)]
    pub invlpgb_count_max: Option<u32>,
    /// 5-level paging (LA57) is available.
    pub la57: bool,
    /// Concurrent page walkers (informative: the sequential trace model walks one at a time).
    pub page_walkers: u32,
    /// Which paging-structure-cache entries INVLPG drops: `pcid` (all of the current PCID) or
    /// `address` (only those that translate the address).
    pub invlpg_psc_scope: PscScope,
    /// Where `invlpg_psc_scope` comes from.
    pub invlpg_psc_scope_source: String,
    /// Which TLB entries INVLPG drops: `address` (those of the address, the SDM's rule; the
    /// default) or `all` (every entry, globals too, with every paging-structure-cache entry and
    /// the cached guest-physical translations), as measured in some guests
    /// (docs/hardware-model.md, "INVLPG that drops everything").
    #[serde(default, skip_serializing_if = "TlbScope::is_address")]
    pub invlpg_tlb_scope: TlbScope,
    /// Where `invlpg_tlb_scope` comes from (empty when it is the default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub invlpg_tlb_scope_source: String,
    /// Where the feature flags come from.
    pub source: String,
}

/// Which paging-structure-cache entries an INVLPG drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PscScope {
    /// Every entry of the current PCID, whatever its address (Intel SDM vol. 3 §4.10.4.1).
    Pcid,
    /// Only entries used to translate the address (AMD with EFER.TCE).
    Address,
}

/// Which TLB entries an INVLPG drops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlbScope {
    /// The entries that translate the address, in every PCID if global (Intel SDM vol. 3
    /// §4.10.4.1; AMD APM vol. 3, INVLPG).
    #[default]
    Address,
    /// Every entry, globals included, with every paging-structure-cache entry and every cached
    /// guest-physical translation: what the SDM allows ("may invalidate more") and what this
    /// project's KVM guest does (measured by tlblab-pathcost's `reread_after_*` loops).
    All,
}

impl TlbScope {
    /// Whether it is the SDM's rule (the default, left out of a preset's TOML).
    pub fn is_address(&self) -> bool {
        *self == TlbScope::Address
    }
}

/// One TLB structure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTlb {
    /// Display name (`L1 dTLB 4K`).
    pub name: String,
    /// 1 (looked up first) or 2 (the STLB, looked up on an L1 miss).
    pub level: u8,
    /// Which accesses it serves.
    pub accesses: Vec<AccessKind>,
    /// Which page sizes it holds.
    pub page_sizes: Vec<PageSize>,
    /// Whether 1 GiB translations are held as 2 MiB entries ("smashed" or splintered).
    #[serde(default)]
    pub splinter_1g: bool,
    /// Number of entries.
    pub entries: u32,
    /// Associativity; equal to `entries` for a fully-associative structure.
    pub ways: u32,
    /// Where the geometry comes from.
    pub source: String,
    /// Set when the geometry is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// An upper paging level: the levels whose entries a paging-structure cache can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PscLevel {
    /// PML5 entries (5-level paging only): each maps 256 TiB.
    Pml5e,
    /// PML4 entries: each maps 512 GiB.
    Pml4e,
    /// PDPT entries that reference a page directory: each maps 1 GiB.
    Pdpte,
    /// PD entries that reference a page table: each maps 2 MiB.
    Pde,
}

impl PscLevel {
    /// Every level, top first: the order of paging-structure-cache statistics.
    pub const ALL: [PscLevel; 4] =
        [PscLevel::Pml5e, PscLevel::Pml4e, PscLevel::Pdpte, PscLevel::Pde];

    /// Index in [`PscLevel::ALL`], which is also the paging level of the entries it caches
    /// (0 = PML5 … 3 = PD).
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// One paging-structure cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPsc {
    /// Which entries it caches.
    pub level: PscLevel,
    /// Number of entries.
    pub entries: u32,
    /// Associativity.
    pub ways: u32,
    /// Where the geometry comes from.
    pub source: String,
    /// Set when the geometry is not confirmed.
    #[serde(default)]
    pub unverified: bool,
}

/// Translation latencies beyond an L1 hit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLatency {
    /// An L1 miss that hits the STLB (also paid before a walk starts).
    pub stlb_hit: CyclesFigure,
    /// One memory reference of a walk to a PML5 entry.
    pub walk_pml5: CyclesFigure,
    /// One memory reference of a walk to a PML4 entry.
    pub walk_pml4: CyclesFigure,
    /// One memory reference of a walk to a PDPT entry.
    pub walk_pdpt: CyclesFigure,
    /// One memory reference of a walk to a PD entry.
    pub walk_pd: CyclesFigure,
    /// One memory reference of a walk to a PT entry.
    pub walk_pt: CyclesFigure,
}

/// Instruction costs (the instruction itself; refills after it are modelled as misses).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCosts {
    /// INVLPG.
    pub invlpg: CyclesFigure,
    /// INVPCID type 0.
    pub invpcid_indiv_addr: Option<CyclesFigure>,
    /// INVPCID type 1.
    pub invpcid_single_ctxt: Option<CyclesFigure>,
    /// INVPCID type 2.
    pub invpcid_all_incl_global: Option<CyclesFigure>,
    /// INVPCID type 3.
    pub invpcid_all_non_global: Option<CyclesFigure>,
    /// MOV to CR3 that flushes.
    pub mov_cr3: CyclesFigure,
    /// MOV to CR3 with bit 63 (NOFLUSH) set.
    pub mov_cr3_noflush: CyclesFigure,
    /// One MOV to CR4.
    pub mov_cr4: CyclesFigure,
    /// INVLPGB (one instruction, whatever its range).
    pub invlpgb: Option<CyclesFigure>,
    /// TLBSYNC.
    pub tlbsync: Option<CyclesFigure>,
}

impl RawLatency {
    /// Every latency, named as in the file.
    pub fn figures(&self) -> [(&'static str, &CyclesFigure); 6] {
        [
            ("stlb_hit", &self.stlb_hit),
            ("walk_pml5", &self.walk_pml5),
            ("walk_pml4", &self.walk_pml4),
            ("walk_pdpt", &self.walk_pdpt),
            ("walk_pd", &self.walk_pd),
            ("walk_pt", &self.walk_pt),
        ]
    }
}

impl RawCosts {
    /// Every instruction cost the file gives, named as in the file.
    pub fn figures(&self) -> Vec<(&'static str, &CyclesFigure)> {
        [
            ("invlpg", Some(&self.invlpg)),
            ("invpcid_indiv_addr", self.invpcid_indiv_addr.as_ref()),
            ("invpcid_single_ctxt", self.invpcid_single_ctxt.as_ref()),
            ("invpcid_all_incl_global", self.invpcid_all_incl_global.as_ref()),
            ("invpcid_all_non_global", self.invpcid_all_non_global.as_ref()),
            ("mov_cr3", Some(&self.mov_cr3)),
            ("mov_cr3_noflush", Some(&self.mov_cr3_noflush)),
            ("mov_cr4", Some(&self.mov_cr4)),
            ("invlpgb", self.invlpgb.as_ref()),
            ("tlbsync", self.tlbsync.as_ref()),
        ]
        .into_iter()
        .filter_map(|(n, f)| f.map(|f| (n, f)))
        .collect()
    }

    /// The cost of an instruction, if the machine has it (the field named like the counter).
    pub fn for_op(&self, kind: OpKind) -> Option<&CyclesFigure> {
        match kind {
            OpKind::Invlpg => Some(&self.invlpg),
            OpKind::InvpcidIndivAddr => self.invpcid_indiv_addr.as_ref(),
            OpKind::InvpcidSingleCtxt => self.invpcid_single_ctxt.as_ref(),
            OpKind::InvpcidAllInclGlobal => self.invpcid_all_incl_global.as_ref(),
            OpKind::InvpcidAllNonGlobal => self.invpcid_all_non_global.as_ref(),
            OpKind::MovCr3 => Some(&self.mov_cr3),
            OpKind::MovCr3Noflush => Some(&self.mov_cr3_noflush),
            OpKind::MovCr4 => Some(&self.mov_cr4),
            OpKind::Invlpgb => self.invlpgb.as_ref(),
            OpKind::Tlbsync => self.tlbsync.as_ref(),
        }
    }
}
