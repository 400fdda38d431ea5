//! The kernel model: CPUs, tasks, mms and the event loop that runs them.
//!
//! Each CPU runs its current task's frames (a stack of kernel activities on top of the task's
//! program) one step at a time; a step that costs time schedules the CPU's next step as an
//! event. Interrupts (IPIs) are events too: the handler runs when the event pops (or when the
//! CPU enables interrupts again) and delays whatever the CPU was doing by its cost.
//!
//! # Event order at equal times (the `class` of the engine's key)
//! 0. IPI arrival (or the next of the interrupts waiting for a CPU) — an interrupt that
//!    arrives on the cycle a step ends is taken first;
//! 1. acknowledgement of an IPI at its initiator;
//! 2. a CPU's next step;
//! 3. timer tick (and the end of a vCPU's host slice).
//!
//! The end of a vCPU's preemption is class 0 and pushed when the preemption begins, so the
//! host's flush at entry comes before anything the vCPU runs at that time.

mod acct;
mod channel;
mod check;
mod collapse;
mod cpumask_line;
mod deadlock;
mod deferral;
mod disturb;
mod fair;
mod flush;
mod frames;
pub(crate) mod guest;
mod idle;
mod invlpgb;
mod kflush;
mod latr;
mod luf;
mod mitigations;
mod mmap_lock;
mod page_locks;
mod process;
mod rar;
mod reclaim;
mod run;
mod switch;
mod tlbstate_line;
mod vcpu;
mod wake;
mod xpfo;

pub use channel::{ChannelId, ChannelKind, ChannelStats};
pub use check::{Violation, ViolationKind};
pub use flush::{FlushRequest, FlushTlbInfo, FLUSH_ALL_END, PAGE_SHIFT};
pub(crate) use run::FAULT_AROUND_PAGES;

use crate::ids::{Asid, MmId, TaskId};
use crate::mechanisms::{Mechanism, Mechanisms};
use crate::mm::Mm;
use crate::observer::{Observer, TlbFlushEvent, TlbFlushReason, Vmstat};
use crate::policy::{La57, Policy, Pti};
use crate::program::{EventFd, Outcome, Program, Syscall, Touch};
use crate::stats::{FlushSizes, KernelReport, TaskReport};
use crate::tlb_state::{LoadedMm, TlbState};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::VecDeque;
use thiserror::Error;
use tlblab_engine::EventQueue;
use tlblab_sim::hw::{new_stats, Cpu as HwCpu};
use tlblab_sim::machine::raw::RawKernel;
use tlblab_sim::machine::MachineSpec;
use tlblab_sim::stats::HwStats;
use tlblab_types::{CpuId, Cycles, Pcid, TlbOp};

/// Why a kernel model cannot be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The machine preset has no `[kernel]` costs.
    #[error("machine {0}: no [kernel] section: the kernel model needs the costs of kernel code paths (see docs/kernel-model.md)")]
    NoKernelCosts(String),
    /// The policy needs a CPU feature the machine lacks.
    #[error("policy {policy} needs {feature}, which machine {machine} does not have")]
    MissingFeature {
        /// The policy.
        policy: String,
        /// The feature.
        feature: &'static str,
        /// The machine.
        machine: String,
    },
    /// The policy combines switches no kernel runs together.
    #[error("policy {policy}: {why}")]
    Unsupported {
        /// The policy.
        policy: String,
        /// Why.
        why: &'static str,
    },
    /// A numeric switch is outside the range the model runs ([`crate::Policy::out_of_range`]).
    #[error("policy {policy}: {message}")]
    OutOfRange {
        /// The policy.
        policy: String,
        /// The switch, its value and its range.
        message: String,
    },
    /// Too few or too many CPUs.
    #[error("{0} CPUs: the model runs 1 to 4096")]
    CpuCount(usize),
    /// The run passed its event limit ([`KernelConfig::event_limit`]) and was stopped.
    #[error("the run was stopped after {events} events, the limit of one run (docs/sim-output.md, \"Limits\"): {lower}")]
    EventLimit {
        /// Events popped.
        events: u64,
        /// Which parameter to change.
        lower: &'static str,
    },
    /// Every task left is blocked and nothing queued can wake one (`kernel/deadlock.rs`).
    #[error("the run can never end: at {seconds:.6} s simulated every task left was blocked with nothing queued that could wake one (a workload that waits for what never comes, or a defect of the model): {tasks}")]
    Deadlock {
        /// Simulated seconds when it was found.
        seconds: f64,
        /// The blocked tasks and what each waits on.
        tasks: String,
    },
    /// The run's stop flag was set ([`Kernel::stop_when`]) and it stopped before its end.
    #[error("the run was stopped before its end (its caller was stopped): it is no result")]
    Stopped,
    /// The machine preset is unusable with these settings.
    #[error(transparent)]
    Machine(#[from] tlblab_sim::machine::MachineError),
}

/// Index of an in-flight flush (`flush_tlb_info` and its call-function state).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallId(pub u32);

/// An inter-processor interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ipi {
    /// `CALL_FUNCTION_VECTOR`: run every call queued on this CPU's `call_single_queue`
    /// (`flush_smp_call_function_queue()`).
    CallFunction,
    /// With the `csd-queue` mechanism off: an IPI that runs the one call it carries (its csd
    /// and its index in the call's `done`), as the model did before the queue.
    Call(Csd, u32),
    /// Reschedule (a task was woken for an idle CPU).
    Reschedule,
    /// No interrupt: a task was woken for an idle CPU that polls (`TIF_POLLING_NRFLAG`), whose
    /// idle loop sees `TIF_NEED_RESCHED` by itself (mechanism `poll-wake`). Queued as an
    /// interrupt only so that it comes after the CPU's handlers in flight.
    PollWake,
}

/// A cross-CPU call queued for a CPU (`call_single_data_t` on its `call_single_queue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Csd {
    /// Call `flush_tlb_func()` for this flush (the `TLB` row of `/proc/interrupts`).
    Flush(CallId),
    /// Call `do_kernel_range_flush()` for this kernel flush (`on_each_cpu()`: the `CAL` row).
    KernelFlush(CallId),
}

/// Engine payloads.
#[derive(Clone, Copy, Debug)]
enum Event {
    Ipi {
        cpu: CpuId,
        ipi: Ipi,
    },
    /// The CPU takes the first of its waiting interrupts.
    IrqDrain {
        cpu: CpuId,
    },
    Ack {
        call: CallId,
    },
    Resume {
        cpu: CpuId,
        gen: u64,
    },
    Tick {
        cpu: CpuId,
    },
    /// A disturbance of a perturbed schedule ([`Kernel::disturb`]).
    Disturb {
        cpu: CpuId,
    },
    /// A disturbance's window ends (before a step resuming at the same time).
    DisturbEnd {
        cpu: CpuId,
        end: disturb::Disturbance,
    },
    /// A vCPU's host slice ends (`kernel/vcpu.rs`): the host may preempt it.
    VcpuPreempt {
        cpu: CpuId,
    },
    /// The host runs a preempted vCPU again.
    VcpuResume {
        cpu: CpuId,
    },
}

impl Event {
    /// A periodic event: it queues its own next one and never wakes a task.
    fn is_periodic(&self) -> bool {
        self.class() == 3
    }

    fn class(&self) -> u8 {
        match self {
            Event::Ipi { .. }
            | Event::IrqDrain { .. }
            | Event::DisturbEnd { .. }
            | Event::VcpuResume { .. } => 0,
            Event::Ack { .. } => 1,
            Event::Resume { .. } => 2,
            Event::Tick { .. } | Event::Disturb { .. } | Event::VcpuPreempt { .. } => 3,
        }
    }
}

/// Whether cycles are spent for user space or in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    User,
    Sys,
}

/// The state of one in-flight flush.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub info: FlushTlbInfo,
    /// The XPFO exposure window this flush closes.
    pub window: Option<u32>,
    /// Acknowledgements still to come.
    pub pending: u32,
    /// Handlers still to run; the last one schedules the acknowledgement that arrives last
    /// (one event for all of them: the initiator waits for the last).
    pub unhandled: u32,
    /// When each target's function finished (its csd unlocked), in the order the csds were
    /// queued (and are waited for); a queued csd carries its index here.
    pub done: Vec<Cycles>,
    /// The task waiting for them.
    pub waiter: TaskId,
}

/// A kernel activity of a task, resumed step by step.
enum Frame {
    /// User-mode page references.
    Touch { touch: Touch, done: u64 },
    /// A page fault on page `page` of `touch`'s region.
    Fault { touch: Touch, page: u64, phase: Phase },
    /// A system call.
    Syscall { call: Option<Syscall>, phase: Phase },
    /// `flush_tlb_mm_range()`.
    Flush { req: FlushRequest, phase: FlushPhase, gen: u64, call: Option<CallId>, since: Cycles },
    /// `arch_tlbbatch_flush()` of a reclaim batch: a full flush of the CPUs in `mask`.
    BatchFlush { mask: crate::cpumask::CpuMask, phase: FlushPhase, call: Option<CallId> },
    /// `flush_tlb_kernel_range()` or `flush_tlb_all()`.
    KernelFlush { req: kflush::KernelFlush, phase: FlushPhase, call: Option<CallId> },
    /// The task exits.
    Exit { phase: Phase },
    /// `down_read()` / `down_write()` of the task's `mmap_lock`.
    MmapLock { write: bool },
    /// `up_read()` / `up_write()` of the task's `mmap_lock`.
    MmapUnlock { write: bool },
    /// `mmap_write_downgrade()`, then `cycles` of work under read.
    MmapDowngrade { cycles: u64 },
    /// `wait_for_vfork_done()`: the parent of a vfork child sleeps until it execs or exits.
    VforkWait { child: TaskId },
    /// `tlb_finish_mmu()`'s freeing of `freed` pages after its flush: the page-freeing locks
    /// (`kernel/page_locks.rs`).
    ZapFree { freed: u64 },
    /// A section of the page-freeing locks as a step of its own, interrupts off (mechanism
    /// `lock-irqs-off`, `kernel/page_locks.rs`).
    PageLock { op: page_locks::LockOp },
    /// `spin_unlock_irqrestore()` after a page-lock section: interrupts on again.
    IrqsRestore,
}

/// Entry, body, exit of a kernel entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Entry,
    Body,
    Exit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FlushPhase {
    Start,
    Dispatch,
    Wait,
    Done,
}

/// What a context switch is doing.
#[derive(Clone, Copy, Debug)]
struct Switch {
    next: TaskId,
    phase: SwitchPhase,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SwitchPhase {
    Start,
    Mm,
    Load(Option<crate::tlb_state::NewAsid>),
    End(Asid),
    Finish,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TaskState {
    Runnable,
    Running,
    Blocked,
    Dead,
}

/// A task's program image regions and its loop's working set in them.
#[derive(Clone, Copy, Debug)]
struct Image {
    ws: crate::program::WorkingSet,
    code: crate::mm::VmaId,
    data: crate::mm::VmaId,
}

struct Task {
    /// Its own mm (`None`: a kernel thread).
    mm: Option<MmId>,
    /// Its program's image and working set (mechanism `working-set`).
    image: Option<Image>,
    program: Option<Box<dyn Program>>,
    rng: Pcg64Mcg,
    frames: Vec<Frame>,
    state: TaskState,
    /// Where it runs or is queued.
    cpu: CpuId,
    last: Outcome,
    /// The run ends when every essential task has exited.
    essential: bool,
    /// When it last started running, or when `update_curr()` last counted its run (for the
    /// scheduler's slice).
    slice_start: Cycles,
    /// Its fair-class entity (mechanism `wakeup-preemption`, `kernel/fair.rs`).
    se: fair::Entity,
    /// Whom it woke, for wake-up placement (`kernel/wake.rs`).
    wakee: wake::Wakee,
    /// `sched_setaffinity` asked it to move here (set in the system call).
    migrate_to: Option<CpuId>,
    /// It is leaving its CPU for this one (queued there once switched out).
    moving_to: Option<CpuId>,
    /// Tasks blocked in `waitpid()` on this one.
    waiters: Vec<TaskId>,
    /// The parent blocked in `vfork()` until this child execs or exits (mechanism
    /// `vfork-wait`).
    vfork_parent: Option<TaskId>,
    /// `exit_notify()` has run (`EXIT_ZOMBIE`): its waiters were woken, and a `waitpid()` on it
    /// returns at once, though it has not finished exiting.
    zombie: bool,
    report: TaskReport,
}

/// Per-CPU kernel state.
struct PerCpu {
    tlb: TlbState,
    curr: TaskId,
    idle: TaskId,
    rq: VecDeque<TaskId>,
    switch: Option<Switch>,
    /// The pending step event: `(time, generation)`.
    resume: Option<Cycles>,
    resume_gen: u64,
    irqs_off: bool,
    /// Interrupts that arrived while interrupts were off or a handler ran, in arrival order.
    pending_ipis: VecDeque<Ipi>,
    /// `call_single_queue`: calls queued for this CPU and not yet run, each with its index in
    /// its call's `done`.
    csd_queue: VecDeque<(Csd, usize)>,
    /// An `IrqDrain` event is queued.
    drain_queued: bool,
    /// The end of the last interrupt handler.
    irq_free_at: Cycles,
    /// The PCID accesses use now (CR3's).
    cr3: Pcid,
    need_resched: bool,
    /// EEVDF: the run queue's last average vruntime, where a task arriving on an empty queue
    /// is placed; CFS: its `min_vruntime` (`kernel/fair.rs`).
    vclock: i64,
    /// XPFO deferred: flush everything at the next `switch_mm_irqs_off()`.
    xpfo_pending: bool,
    /// A disturbance's window is open ([`Kernel::disturb`]).
    disturbed: bool,
    /// RAR: this CPU joined the next mm's `mm_cpumask` at this switch, so its global PCID may
    /// have missed RAR flushes: the switch flushes it.
    rar_flush_on_load: bool,
    /// Cycles inserted into this CPU's timeline when its current `flush_tlb_mm_range()` began:
    /// the interrupts it took meanwhile are not the initiator's own invalidation time.
    flush_irq_mark: u64,
    /// Where the CPU's time goes.
    acct: acct::Acct,
    /// Its idle state.
    cstate: idle::CpuIdle,
    /// Cycles of `mm_cpumask` line transfers of the switch under way, not yet spent (and of
    /// its own TLB-state lines: mechanism `tlbstate-lines`).
    cpumask_cycles: u64,
    /// Who holds its `cpu_tlbstate` and `cpu_tlbstate_shared` lines (mechanism
    /// `tlbstate-lines`).
    tlbstate_lines: tlbstate_line::TlbstateLines,
    /// An INVLPG that drops everything (mechanism `invlpg-scope`) left the kernel's own
    /// translations to refill: paid by the path that runs next ([`Kernel::kernel_refill`]).
    kernel_refill_owed: bool,
}

/// The counters the kernel keeps.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counters {
    pub vmstat: Vmstat,
    /// `/proc/interrupts` `TLB` row, per CPU.
    pub irq_tlb: Vec<u64>,
    /// `/proc/interrupts` `CAL` row (function-call IPIs other than TLB flushes), per CPU.
    pub irq_cal: Vec<u64>,
    /// IPIs sent, per CPU.
    pub ipis_sent: Vec<u64>,
    /// Page faults (every kind), like the `page-faults` software event.
    pub page_faults: u64,
    /// Run-time tests of 5-level paging executed (`la57-runtime`: a load and a branch each).
    pub la57_checks: u64,
    /// Pages unmapped by reclaim.
    pub reclaimed: u64,
    /// migrc and LUF: pages freed with their flush pending, and catch-ups done.
    pub luf_deferred_pages: u64,
    /// See [`Counters::luf_deferred_pages`].
    pub luf_catch_ups: u64,
    /// Tracepoint events by reason.
    pub tlb_flush: [u64; 6],
    /// Durations of preemption-disabled sections of `flush_tlb_mm_range()`.
    pub preempt_off: Vec<u64>,
    /// `mmap_lock` acquisitions and waits.
    pub mmap_lock: crate::stats::MmapLockStats,
    /// `mm_cpumask` writes, reads and cache-line transfers.
    pub cpumask: crate::cpumask::CpumaskStats,
    /// Stores to the CPUs' own `cpu_tlbstate` / `cpu_tlbstate_shared` lines, flush initiators'
    /// reads of other CPUs' lines, and their transfers (mechanism `tlbstate-lines`).
    pub tlbstate: crate::cpumask::CpumaskStats,
    /// Broadcast invalidation, flush latencies and the page-freeing locks (study S6).
    pub broadcast: crate::stats::BroadcastStats,
    /// Wake-ups of a task on a polling idle CPU that sent no IPI (mechanism `poll-wake`).
    pub poll_wakes: u64,
    /// `/proc/interrupts` `RES` row (reschedule IPIs taken, the wake lists' among them), per
    /// CPU.
    pub irq_resched: Vec<u64>,
}

/// Settings of one run.
#[derive(Clone, Debug)]
pub struct KernelConfig {
    /// CPUs.
    pub nr_cpus: usize,
    /// Seed of every random stream.
    pub seed: u64,
    /// Stop at this time even if tasks remain.
    pub time_limit: Cycles,
    /// The model's mechanisms switched on (all by default).
    pub mechanisms: Mechanisms,
    /// Stop after this many events even if tasks remain, and say so
    /// ([`Kernel::event_limit_reached`]); [`tlblab_types::bounds::MAX_EVENTS`] by default.
    pub event_limit: u64,
    /// Stop, with [`KernelError::Deadlock`], when every task left is blocked and nothing queued
    /// can wake one (`kernel/deadlock.rs`), in a run to its end ([`Kernel::run`], or
    /// [`Kernel::run_until`] the time limit); on by default. A caller that ends runs whose
    /// tasks never finish on its own terms (the trace replay) turns it off.
    pub stop_when_blocked: bool,
}

impl KernelConfig {
    /// `nr_cpus` CPUs from `seed`, no time limit, every mechanism on, the default event limit.
    pub fn new(nr_cpus: usize, seed: u64) -> KernelConfig {
        KernelConfig {
            nr_cpus,
            seed,
            time_limit: Cycles(u64::MAX),
            mechanisms: Mechanisms::all(),
            event_limit: tlblab_types::bounds::MAX_EVENTS,
            stop_when_blocked: true,
        }
    }

    /// This configuration with `mechanisms` on.
    #[must_use]
    pub fn with_mechanisms(self, mechanisms: Mechanisms) -> KernelConfig {
        KernelConfig { mechanisms, ..self }
    }
}

impl Default for KernelConfig {
    /// One CPU, seed 1, no time limit, every mechanism on.
    fn default() -> KernelConfig {
        KernelConfig::new(1, 1)
    }
}

/// The kernel model on a machine, under a policy.
pub struct Kernel<O: Observer> {
    spec: MachineSpec,
    /// Each CPU's freed frames, newest last (mechanism `hot-frames`; `None` without it).
    free_frames: Option<Vec<frames::FreeFrames>>,
    costs: RawKernel,
    /// The machine's idle states, `POLL` first.
    idle_states: Vec<idle::IdleState>,
    /// The haltpoll governor, when it chooses the idle states instead of menu.
    haltpoll: Option<idle::Haltpoll>,
    /// No cpuidle driver runs: an idle CPU halts at once in the first state after `POLL`.
    no_cpuidle: bool,
    /// The machine's virtualisation costs when it is a guest.
    guest: Option<guest::Guest>,
    /// The host's preemption of the vCPUs, when it is overcommitted (`vcpu-preemption`).
    host_sched: Option<Box<vcpu::HostSched>>,
    /// IBPB's mode and each CPU's last user mm (`kernel/mitigations.rs`).
    mitigations: mitigations::Mitigations,
    policy: Policy,
    /// PCIDs are in use (policy and CPU).
    pcid: bool,
    /// The CPU has INVPCID.
    invpcid: bool,
    queue: EventQueue<Event>,
    cpus: Vec<PerCpu>,
    hw: Vec<HwCpu>,
    hw_stats: Vec<HwStats>,
    mms: Vec<Mm>,
    tasks: Vec<Task>,
    calls: Vec<Call>,
    free_calls: Vec<CallId>,
    eventfds: Vec<(u64, Vec<TaskId>)>,
    /// Pipes and sockets (`kernel/channel.rs`).
    channels: Vec<channel::Channel>,
    /// Messages written into any channel on each CPU so far (`kernel/channel.rs`: how many went
    /// through a CPU's caches between a message's write and its read).
    messages_written: Vec<u64>,
    last_mm_ctx_id: u64,
    counters: Counters,
    flush_sizes: FlushSizes,
    xpfo: xpfo::XpfoTracker,
    /// LATR's per-CPU states (`Policy::latr`).
    latr: Option<Box<latr::Latr>>,
    /// The page allocator's free lists and pending batches (`Policy::unmap_flush`).
    page_alloc: Option<Box<luf::PageAlloc>>,
    global_asids: invlpgb::GlobalAsids,
    /// The page-freeing locks (mechanism `page-locks`, the preset's `[locks]`).
    page_locks: Option<Box<page_locks::PageLocks>>,
    /// Intel RAR's costs (`Policy::rar`, the preset's `[rar]`).
    rar: Option<rar::RarCosts>,
    /// The mm reclaim scans first next time.
    reclaim_cursor: usize,
    observer: O,
    config: KernelConfig,
    essential_left: u32,
    tick_cycles: u64,
    slice_cycles: u64,
    /// EEVDF's `sysctl_sched_base_slice`, CFS's `sysctl_sched_min_granularity`, scaled by the
    /// CPU count (`kernel/fair.rs`).
    fair_slice: u64,
    /// The CPU whose steps run now (a wake-up from it needs no reschedule IPI to itself).
    stepping: Option<CpuId>,
    /// When the measurement began (0, or the end of a warm-up): the report covers the time since.
    measured_from: Cycles,
    /// The safety checker, when enabled ([`Kernel::enable_checker`]).
    check: Option<Box<check::Checker>>,
    /// Schedule perturbation ([`Kernel::perturb`], [`Kernel::disturb`]).
    perturb: Option<Perturbation>,
    /// Disturbance events popped (to say what to change when the event limit stops a run).
    disturb_events: u64,
    /// [`Kernel::run_until`] stopped at [`KernelConfig::event_limit`].
    event_limit_hit: bool,
    /// Periodic events queued ([`Event::is_periodic`]), to find a run that can never end.
    periodic_queued: u64,
    /// [`Kernel::run_until`] stopped because the run can never end (`kernel/deadlock.rs`).
    deadlock_hit: bool,
    /// Set from outside to stop the run ([`Kernel::stop_when`]).
    stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// [`Kernel::run_until`] stopped because `stop` was set.
    stopped: bool,
}

/// A perturbed schedule's random stream and bounds.
#[derive(Clone, Debug)]
struct Perturbation {
    rng: Pcg64Mcg,
    /// The largest extra IPI delivery delay, switch stall and disturbance window, cycles.
    max_delay: u64,
    /// The mean gap between a CPU's disturbances, cycles (0: none).
    disturb_every: u64,
}

// Run-time 5-level-paging tests per operation under `la57-runtime` (4.14-rc boot-time
// switching: `p4d_folded`, `PTRS_PER_P4D`, `PGDIR_SHIFT` and `__VIRTUAL_MASK_SHIFT` became
// variables). Counted from the helpers each path calls; see docs/kernel-model.md.
/// A page fault: `pgd_offset()` (PGDIR_SHIFT), `p4d_offset()` (PTRS_PER_P4D), `p4d_alloc()` /
/// `p4d_none()` and `pud_offset()` each test the mode.
const LA57_CHECKS_FAULT: u64 = 4;
/// The system-call return path: the canonical-address check before SYSRET reads
/// `__VIRTUAL_MASK_SHIFT`.
const LA57_CHECKS_SYSCALL: u64 = 1;
/// One page-table walk of a zap or copy (`zap_p4d_range()`, `copy_p4d_range()`): as a fault.
const LA57_CHECKS_WALK: u64 = 4;
/// `mmap`: `TASK_SIZE_MAX` and `mmap_base` depend on the mode.
const LA57_CHECKS_MMAP: u64 = 2;
/// An mm switch: `sync_current_stack_to_mm()` tests the mode.
const LA57_CHECKS_SWITCH_MM: u64 = 1;

/// How often a run looks at its stop flag ([`Kernel::stop_when`]), in events: a stopped run
/// ends within this many more.
pub const STOP_CHECK_EVENTS: u64 = 4096;

/// Page references processed per step of a touch (bounds how stale a step's view can be).
const TOUCH_CHUNK: u64 = 64;

impl<O: Observer> Kernel<O> {
    /// A booted machine: every CPU idle on `init_mm`.
    pub fn new(
        spec: &MachineSpec,
        policy: &Policy,
        config: KernelConfig,
        observer: O,
    ) -> Result<Kernel<O>, KernelError> {
        let costs =
            spec.raw().kernel.clone().ok_or_else(|| KernelError::NoKernelCosts(spec.shown()))?;
        if config.nr_cpus == 0 || config.nr_cpus > usize::from(u16::MAX) || config.nr_cpus > 4096 {
            return Err(KernelError::CpuCount(config.nr_cpus));
        }
        let features = &spec.raw().features;
        let missing = |feature| KernelError::MissingFeature {
            policy: policy.shown(),
            feature,
            machine: spec.shown(),
        };
        if policy.invlpgb && !features.invlpgb {
            return Err(missing("INVLPGB"));
        }
        if policy.rar && spec.raw().rar.is_none() {
            return Err(missing("Intel RAR (Remote Action Request; the preset has no [rar])"));
        }
        if policy.rar && policy.invlpgb {
            return Err(KernelError::Unsupported {
                policy: policy.shown(),
                why: "RAR and INVLPGB together: no CPU has both (the RAR series uses INVLPGB \
                      when the CPU has it)",
            });
        }
        if policy.rar && policy.pti != crate::policy::Pti::Off {
            return Err(KernelError::Unsupported {
                policy: policy.shown(),
                why: "RAR with PTI: the model does not mirror the RFC's second action for the \
                      user PCID",
            });
        }
        let spec = if policy.la57 == La57::On {
            if !features.la57 {
                return Err(missing("LA57 (5-level paging)"));
            }
            spec.clone().with_paging_levels(5)?
        } else {
            spec.clone()
        };
        if policy.invlpgb && policy.pti != crate::policy::Pti::Off {
            return Err(KernelError::Unsupported {
                policy: policy.shown(),
                why:
                    "INVLPGB with PTI: Linux 6.16+ turns INVLPGB off when PTI is on (94a17f2dc90b)",
            });
        }
        latr::check_policy(policy)?;
        luf::check_policy(policy)?;
        if let Some((_, message)) = policy.out_of_range() {
            return Err(KernelError::OutOfRange { policy: policy.shown(), message });
        }
        let pcid = policy.pcid && features.pcid;
        let n = config.nr_cpus;
        let on = |m| config.mechanisms.is_on(m);
        let spec = if on(Mechanism::NestedPaging) { spec } else { spec.without_nested() };
        let spec = if on(Mechanism::InvlpgScope) { spec } else { spec.with_architectural_invlpg() };
        let idle_states = idle::idle_states(&spec, costs.clock.mhz, on(Mechanism::IdleStates));
        let haltpoll = idle::haltpoll(&spec, costs.clock.mhz, on(Mechanism::IdleStates))
            .filter(|_| on(Mechanism::Haltpoll));
        let no_cpuidle = idle::no_cpuidle(&spec, on(Mechanism::IdleStates));
        let guest = guest::Guest::from_spec(&spec).filter(|_| on(Mechanism::Guest));
        let mut costs = costs;
        let raw_mitigations = spec.raw().mitigations.as_ref();
        if let Some(m) = raw_mitigations {
            let all = on(Mechanism::Mitigations);
            let off: Vec<_> = tlblab_sim::machine::mitigations::InPath::ALL
                .into_iter()
                .filter(|&k| !all || !on(Mechanism::of_mitigation(k)))
                .collect();
            mitigations::base_costs(&mut costs, m, &off);
        }
        let mitigations = mitigations::Mitigations::new(
            raw_mitigations.filter(|_| on(Mechanism::Mitigations) && on(Mechanism::MitigationIbpb)),
            n,
        );
        let host_sched = guest
            .as_ref()
            .and_then(|g| Some((g.preemption?, g.pv_tlb_flush)))
            .filter(|_| on(Mechanism::VcpuPreemption))
            .map(|(p, pv)| {
                let pv = pv && policy.pv_tlb_flush && on(Mechanism::PvTlbFlush);
                Box::new(vcpu::HostSched::new(p, pv, n, config.seed))
            });
        let free_frames =
            Self::free_frames(n, costs.page_fault_anon_hot.cycles, on(Mechanism::HotFrames));
        let mut k = Kernel {
            idle_states,
            haltpoll,
            no_cpuidle,
            guest,
            host_sched,
            mitigations,
            costs,
            policy: policy.clone(),
            pcid,
            invpcid: features.invpcid,
            queue: EventQueue::new(),
            cpus: Vec::with_capacity(n),
            hw: Vec::with_capacity(n),
            hw_stats: Vec::with_capacity(n),
            mms: Vec::new(),
            tasks: Vec::new(),
            calls: Vec::new(),
            free_calls: Vec::new(),
            eventfds: Vec::new(),
            channels: Vec::new(),
            messages_written: vec![0; n],
            last_mm_ctx_id: 1,
            counters: Counters {
                irq_tlb: vec![0; n],
                irq_cal: vec![0; n],
                ipis_sent: vec![0; n],
                irq_resched: vec![0; n],
                ..Counters::default()
            },
            flush_sizes: FlushSizes::default(),
            xpfo: xpfo::XpfoTracker::new(n, policy.xpfo == crate::policy::Xpfo::Deferred),
            latr: policy.latr.then(|| Box::new(latr::Latr::new(n))),
            page_alloc: (policy.unmap_flush != crate::policy::UnmapFlush::Off)
                .then(|| Box::new(luf::PageAlloc::new(n))),
            global_asids: invlpgb::GlobalAsids::new(policy.pti != crate::policy::Pti::Off),
            page_locks: spec
                .raw()
                .locks
                .as_ref()
                .filter(|_| config.mechanisms.is_on(Mechanism::PageLocks))
                .map(|l| Box::new(page_locks::PageLocks::new(l, n))),
            rar: spec.raw().rar.as_ref().filter(|_| policy.rar).map(rar::RarCosts::new),
            reclaim_cursor: 0,
            observer,
            essential_left: 0,
            tick_cycles: 0,
            slice_cycles: 0,
            fair_slice: 0,
            stepping: None,
            measured_from: Cycles(0),
            check: None,
            perturb: None,
            disturb_events: 0,
            event_limit_hit: false,
            periodic_queued: 0,
            deadlock_hit: false,
            stop: None,
            stopped: false,
            free_frames,
            spec,
            config,
        };
        let mhz = k.costs.clock.mhz;
        k.tick_cycles = mhz * 1_000_000 / k.policy.hz;
        // EEVDF's base slice (sysctl_sched_base_slice, 0.75 ms since 6.6).
        k.slice_cycles = mhz * 750;
        // SCHED_TUNABLESCALING_LOG: × (1 + ilog2(min(CPUs, 8))).
        k.fair_slice = k.slice_cycles * (1 + u64::from(n.clamp(1, 8).ilog2()));
        // init_mm: ctx_id 1, on every CPU.
        let mut init = Mm::new(1, n, 0, k.policy.hz);
        init.users = 1;
        k.mms.push(init);
        let mut phase = Pcg64Mcg::seed_from_u64(k.config.seed);
        for c in 0..n {
            let cpu = CpuId(c as u16);
            let idle = k.new_task(None, None, cpu, false);
            k.tasks[idle.0 as usize].state = TaskState::Running;
            let mut hw = HwCpu::new(&k.spec);
            if !pcid {
                // Linux leaves CR4.PCIDE clear without PCID (or with `nopcid`). A boot-time
                // write: its counts are thrown away with this scratch copy.
                hw.execute(&TlbOp::MovCr4 { pge: true, pcide: false }, &mut new_stats(&k.spec))
                    .expect("clearing PCIDE never faults");
            }
            k.hw.push(hw);
            k.hw_stats.push(new_stats(&k.spec));
            k.cpus.push(PerCpu {
                tlb: TlbState::new(1, 0),
                curr: idle,
                idle,
                rq: VecDeque::new(),
                switch: None,
                resume: None,
                resume_gen: 0,
                irqs_off: false,
                pending_ipis: VecDeque::new(),
                csd_queue: VecDeque::new(),
                drain_queued: false,
                irq_free_at: Cycles(0),
                // CR3 at boot: init_mm in ASID 0 (`initialize_tlbstate_and_flush()`).
                cr3: k.kern_pcid(Asid(0)),
                need_resched: false,
                vclock: fair::VRUNTIME_ORIGIN,
                xpfo_pending: false,
                disturbed: false,
                rar_flush_on_load: false,
                flush_irq_mark: 0,
                acct: acct::Acct::new(idle, Cycles(0)),
                cstate: idle::CpuIdle::default(),
                cpumask_cycles: 0,
                tlbstate_lines: Default::default(),
                kernel_refill_owed: false,
            });
            k.enter_idle(cpu, Cycles(0));
            // Each CPU's tick phase is drawn from the seed: the one source of variation between
            // seeds besides the programs' own random choices.
            let first_tick = phase.random_range(1..=k.tick_cycles);
            k.push(Cycles(first_tick), Event::Tick { cpu });
        }
        k.start_host_sched();
        Ok(k)
    }

    fn new_task(
        &mut self,
        mm: Option<MmId>,
        program: Option<Box<dyn Program>>,
        cpu: CpuId,
        essential: bool,
    ) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        let seed = self.config.seed ^ (u64::from(id.0) + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.tasks.push(Task {
            mm,
            image: None,
            program,
            rng: Pcg64Mcg::seed_from_u64(seed),
            frames: Vec::new(),
            state: TaskState::Runnable,
            cpu,
            last: Outcome::None,
            essential,
            slice_start: Cycles(0),
            se: fair::Entity::default(),
            wakee: wake::Wakee::default(),
            migrate_to: None,
            moving_to: None,
            waiters: Vec::new(),
            vfork_parent: None,
            zombie: false,
            report: TaskReport::default(),
        });
        if essential {
            self.essential_left += 1;
        }
        id
    }

    /// A new process (a fresh mm) running `program`, pinned to `cpu`. Its end is awaited
    /// (`essential`) or not (helpers that spin forever).
    pub fn spawn_process(
        &mut self,
        program: Box<dyn Program>,
        cpu: CpuId,
        essential: bool,
    ) -> TaskId {
        let mm = self.new_mm();
        self.mms[mm.0 as usize].users += 1;
        let t = self.new_task(Some(mm), Some(program), cpu, essential);
        self.map_working_set(t);
        self.enqueue(t);
        t
    }

    /// A new thread in `task`'s mm running `program`, pinned to `cpu`.
    pub fn spawn_thread(
        &mut self,
        task: TaskId,
        program: Box<dyn Program>,
        cpu: CpuId,
        essential: bool,
    ) -> TaskId {
        let mm = self.tasks[task.0 as usize].mm.expect("threads of user tasks");
        self.mms[mm.0 as usize].users += 1;
        let t = self.new_task(Some(mm), Some(program), cpu, essential);
        self.map_working_set(t);
        self.enqueue(t);
        t
    }

    /// Maps the image regions of `t`'s program's working set, when it has one and the
    /// mechanism is on. NOTE: each task gets its own code region; the threads of a process
    /// share theirs in the kernel, which changes no TLB behaviour (entries are per CPU) and no
    /// flush (the image is never unmapped).
    fn map_working_set(&mut self, t: TaskId) {
        let task = &self.tasks[t.0 as usize];
        let ws = task.program.as_ref().and_then(|p| p.working_set());
        let (Some(ws), Some(mm)) = (ws, task.mm) else { return };
        if !self.config.mechanisms.is_on(crate::mechanisms::Mechanism::WorkingSet) {
            return;
        }
        let m = &mut self.mms[mm.0 as usize];
        // Text is mapped from the page cache: a read mapping, as the zero page stands for.
        let code = m.map_image(ws.code_pages, crate::mm::Pte::ZeroPage);
        let data = m.map_image(ws.data_pages, crate::mm::Pte::Present);
        self.tasks[t.0 as usize].image = Some(Image { ws, code, data });
    }

    /// A new eventfd with count 0.
    pub fn eventfd(&mut self) -> EventFd {
        self.eventfds.push((0, Vec::new()));
        EventFd(self.eventfds.len() as u32 - 1)
    }

    fn new_mm(&mut self) -> MmId {
        self.last_mm_ctx_id += 1;
        let mm =
            Mm::new(self.last_mm_ctx_id, self.cpus.len().max(1), self.jiffies(), self.policy.hz);
        self.mms.push(mm);
        MmId(self.mms.len() as u32 - 1)
    }

    /// Whether the last [`Kernel::run_until`] stopped at the event limit
    /// ([`KernelConfig::event_limit`]), with what to change: a run that would not end in
    /// reasonable time is an error, not a result.
    ///
    /// Also an error when the run was stopped by its flag ([`Kernel::stop_when`]), or found
    /// that it can never end ([`KernelError::Deadlock`]).
    pub fn event_limit_reached(&self) -> Result<(), KernelError> {
        if self.stopped {
            return Err(KernelError::Stopped);
        }
        if self.deadlock_hit {
            let seconds = self.now().0 as f64 / (self.costs.clock.mhz.max(1) as f64 * 1e6);
            return Err(KernelError::Deadlock { seconds, tasks: self.blocked_tasks() });
        }
        if !self.event_limit_hit {
            return Ok(());
        }
        let events = self.queue.popped();
        let lower = if self.disturb_events > events / 2 {
            "most were disturbances: raise --disturb-every (or 0: none)"
        } else {
            "lower --iterations (or --window-ms, --pages, --tasks, hackbench's --loops; sim replay: --working-set)"
        };
        Err(KernelError::EventLimit { events, lower })
    }

    /// Stops the run soon after `flag` is set (within [`STOP_CHECK_EVENTS`] events), as a
    /// stopped sweep stops the jobs it abandons, so that they do not run on in the background
    /// of a process that goes on (a Python session). A stopped run is no result:
    /// [`Kernel::event_limit_reached`] says so. A run whose flag is never set is unchanged.
    pub fn stop_when(&mut self, flag: std::sync::Arc<std::sync::atomic::AtomicBool>) {
        self.stop = Some(flag);
    }

    /// Lowers the run's time limit to `limit` (a scenario's window).
    pub fn limit_time(&mut self, limit: Cycles) {
        self.config.time_limit = self.config.time_limit.min(limit);
    }

    /// Starts the measurement at `at` (the end of a warm-up run with [`Kernel::run_until`];
    /// no earlier than the last event): every counter, time and distribution the report gives
    /// restarts from zero, as `perf stat` started at that moment would see it. The state
    /// (TLBs, page tables, tasks, queued events) is untouched. XPFO exposure windows opened
    /// before are left out of the report, even if they close later.
    pub fn start_measuring(&mut self, at: Cycles) {
        let now = at.max(self.now());
        self.measured_from = now;
        let n = self.cpus.len();
        self.counters = Counters {
            irq_tlb: vec![0; n],
            irq_cal: vec![0; n],
            ipis_sent: vec![0; n],
            irq_resched: vec![0; n],
            ..Counters::default()
        };
        self.flush_sizes = FlushSizes::default();
        self.mitigations.ibpbs = vec![0; n];
        self.xpfo.start_measuring();
        for s in &mut self.hw_stats {
            *s = new_stats(&self.spec);
        }
        for c in &mut self.cpus {
            c.acct.restart(now);
            c.cstate.entries.iter_mut().for_each(|e| *e = 0);
        }
        for t in &mut self.tasks {
            t.report = TaskReport { exited: t.report.exited, ..TaskReport::default() };
        }
    }

    /// Turns the safety checker on (docs/safety.md): from now on every PTE change that needs a
    /// flush is versioned, and every access a TLB entry translates is judged. Call it before the
    /// scenario is installed. It costs time and memory, so only `tlblab sim check` uses it.
    pub fn enable_checker(&mut self) {
        self.check = Some(Box::new(check::Checker::new(self.cpus.len())));
        // Safety may not rest on idle states that happen to lose the TLB: the checker runs as
        // with only the states that keep it (`intel_idle.max_cstate`), the worst case.
        self.set_max_cstate(self.shallow_cstates());
    }

    /// Perturbs the schedule, deterministically from the run's seed: every IPI (flush,
    /// function call, reschedule) reaches its CPU up to `max_ipi_delay` cycles later than the
    /// preset's latency, and every mm switch stalls as long between reading the mm's `tlb_gen`
    /// and publishing `loaded_mm` (an NMI or a vCPU preemption there), each drawn uniformly, so
    /// concurrent flushes, wake-ups and switches interleave differently from seed to seed. For
    /// the safety checker.
    pub fn perturb(&mut self, max_ipi_delay: Cycles) {
        let rng = Pcg64Mcg::seed_from_u64(self.config.seed ^ 0x5afe_c4ec_0000_0001);
        self.perturb = Some(Perturbation { rng, max_delay: max_ipi_delay.0, disturb_every: 0 });
    }

    /// Adds disturbances to a perturbed schedule (call after [`Kernel::perturb`], before the
    /// run): on each CPU, at random points on average `every` cycles apart, an interrupts-off
    /// window, a preemption from user mode by a kernel thread (the CPU goes lazy, then switches
    /// back), or a migration of the task to another CPU, drawn uniformly; windows last up to
    /// the perturbation's `max_ipi_delay` (uniform). Every draw comes from the run's seed.
    pub fn disturb(&mut self, every: Cycles) {
        if let Some(p) = self.perturb.as_mut() {
            p.disturb_every = every.0;
            self.start_disturbing();
        }
    }

    /// The extra delay of the next IPI (0 without perturbation).
    fn ipi_jitter(&mut self) -> u64 {
        match &mut self.perturb {
            Some(p) if p.max_delay > 0 => p.rng.random_range(0..=p.max_delay),
            _ => 0,
        }
    }

    /// The violations found so far (empty without the checker).
    pub fn violations(&self) -> &[Violation] {
        self.check.as_ref().map_or(&[], |c| &c.violations)
    }

    /// The checker's counts: accesses judged, and stale uses within an operation's own window
    /// (allowed); `None` without the checker.
    pub fn check_counts(&self) -> Option<(u64, u64)> {
        self.check.as_ref().map(|c| (c.accesses, c.window_uses))
    }

    /// Checker: task `t`'s running operation changed the PTE of `vpn` in `mm` in a way that
    /// needs a flush.
    fn pte_changed(&mut self, t: TaskId, mm: MmId, vpn: u64) {
        if let Some(ck) = &mut self.check {
            let cpu = self.tasks[t.0 as usize].cpu;
            ck.changed(t, cpu, self.mms[mm.0 as usize].ctx_id, vpn, self.queue.now());
        }
    }

    /// Checker: task `t`'s running operation freed the page tables of these 2 MiB blocks
    /// (first pages) of `mm`.
    fn tables_freed(&mut self, t: TaskId, mm: MmId, blocks: &[u64]) {
        if let Some(ck) = &mut self.check {
            let (cpu, ctx_id) = (self.tasks[t.0 as usize].cpu, self.mms[mm.0 as usize].ctx_id);
            for &block in blocks {
                ck.table_freed(t, cpu, ctx_id, block, self.queue.now());
            }
        }
    }

    /// Checker: task `t`'s operation (a system call, a fault, an exit) has completed. Its PTE
    /// changes settle, and the page tables it freed must be gone from every paging-structure
    /// cache a CPU can translate with before a flush (docs/safety.md §5).
    fn op_completed(&mut self, t: TaskId) {
        self.luf_completed(t);
        let deferred = self.deferred_exposure(t);
        let Some(ck) = &mut self.check else { return };
        let now = self.queue.now();
        ck.completed(t, now, deferred);
        for f in ck.take_freed(t) {
            for c in 0..self.cpus.len() {
                for pcid in self.pcids_usable_without_flush(c, &f) {
                    if self.hw[c].holds_pde(pcid, tlblab_types::Vpn(f.block)) {
                        let tag = if self.hw[c].cr4().pcide { pcid.get() } else { 0 };
                        let ck = self.check.as_mut().expect("checked above");
                        ck.freed_table_cached(CpuId(c as u16), tag, &f, now);
                    }
                }
            }
        }
    }

    /// The PCIDs in which CPU `c` can translate addresses of the mm that freed `f` before any
    /// flush (docs/safety.md §5): the one its CR3 holds while that mm is loaded, lazy or not;
    /// the kernel PCID of each ASID slot of that mm that is at or past the flush's generation
    /// (it would be loaded with NOFLUSH); a global ASID's; and with PTI the user PCID of each of
    /// those whose `user_pcid_flush_mask` bit is clear.
    fn pcids_usable_without_flush(&self, c: usize, f: &check::FreedTable) -> Vec<Pcid> {
        if self.vcpu_flush_on_entry(c) {
            // The host flushes everything before the vCPU runs again (KVM_VCPU_FLUSH_TLB).
            return Vec::new();
        }
        let st = &self.cpus[c].tlb;
        let mut asids = Vec::new();
        if let LoadedMm::Mm(m) = st.loaded_mm {
            if self.mms[m.0 as usize].ctx_id == f.ctx_id {
                asids.push(st.loaded_mm_asid);
            }
        }
        if self.pcid {
            for (s, ctx) in st.ctxs.iter().enumerate() {
                if ctx.ctx_id == f.ctx_id && ctx.tlb_gen >= f.flush_gen {
                    asids.push(Asid(s as u16));
                }
            }
            if let Some(m) = self.mms.iter().find(|m| m.ctx_id == f.ctx_id) {
                // With RAR a CPU outside the mask flushes the global PCID when it switches in.
                let cpu = CpuId(c as u16);
                let kept = self.policy.invlpgb || (self.policy.rar && m.cpumask.test(cpu));
                asids.extend(m.global_asid.filter(|_| kept));
            }
        }
        asids.sort();
        asids.dedup();
        let mut pcids: Vec<Pcid> = asids.iter().map(|&a| self.kern_pcid(a)).collect();
        if self.pcid && self.policy.pti != Pti::Off {
            pcids.extend(
                asids
                    .iter()
                    .filter(|a| st.user_pcid_flush_mask >> a.kern_pcid().get() & 1 == 0)
                    .map(|a| a.user_pcid()),
            );
        }
        pcids
    }

    /// When the measurement began: 0, or when [`Kernel::start_measuring`] was called.
    pub fn measured_from(&self) -> Cycles {
        self.measured_from
    }

    /// The current time.
    pub fn now(&self) -> Cycles {
        self.queue.now()
    }

    /// `jiffies`: ticks since boot.
    pub fn jiffies(&self) -> u64 {
        self.queue.now().0.checked_div(self.tick_cycles).unwrap_or(0)
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The kernel PCID of an ASID, or 0 without PCIDs.
    fn kern_pcid(&self, asid: Asid) -> Pcid {
        if self.pcid {
            asid.kern_pcid()
        } else {
            Pcid::new(0).expect("0 is a PCID")
        }
    }

    /// Executes a TLB instruction on `cpu`'s hardware; returns its cycles.
    fn hw_op(&mut self, cpu: CpuId, op: TlbOp) -> u64 {
        let c = usize::from(cpu.0);
        self.hw[c]
            .execute(&op, &mut self.hw_stats[c])
            .expect("the kernel model only issues valid instructions")
    }

    /// Fires the `tlb:tlb_flush` tracepoint.
    fn trace(&mut self, cpu: CpuId, reason: TlbFlushReason, pages: i64) {
        self.counters.tlb_flush[reason as usize] += 1;
        let event = TlbFlushEvent { time: self.queue.now(), cpu, reason, pages };
        self.observer.tlb_flush(&event);
    }

    /// The state of one CPU's `cpu_tlbstate`.
    pub fn tlb_state(&self, cpu: CpuId) -> &TlbState {
        &self.cpus[usize::from(cpu.0)].tlb
    }

    /// An mm.
    pub fn mm(&self, mm: MmId) -> &Mm {
        &self.mms[mm.0 as usize]
    }

    /// The mm of a task (`None` for kernel threads).
    pub fn task_mm(&self, task: TaskId) -> Option<MmId> {
        self.tasks[task.0 as usize].mm
    }

    /// Counters, summed over CPUs where they are per CPU, with every task's results.
    pub fn report(&self) -> KernelReport {
        let mut hw = new_stats(&self.spec);
        for s in &self.hw_stats {
            hw += s;
        }
        // Activities still open count up to now.
        let mut reports: Vec<TaskReport> = self.tasks.iter().map(|t| t.report.clone()).collect();
        for c in &self.cpus {
            let (activity, task, cycles) = c.acct.open(self.now());
            let r = &mut reports[task.0 as usize];
            match activity {
                acct::Activity::User => r.user_cycles += cycles,
                acct::Activity::Sys => r.sys_cycles += cycles,
                acct::Activity::Idle => {}
            }
        }
        let user_tasks = self.tasks.iter().zip(reports).filter(|(t, _)| t.mm.is_some());
        let report =
            KernelReport::new(self, hw.report(&self.spec), user_tasks.map(|(_, r)| r).collect());
        if cfg!(debug_assertions) {
            // A task never exits holding or waiting for mmap_lock: once every user of an mm
            // is gone, its lock is free.
            for (i, m) in self.mms.iter().enumerate().filter(|(_, m)| m.users == 0) {
                let l = &m.mmap_lock;
                assert!(
                    l.writer.is_none() && l.readers.is_empty() && l.waiters.is_empty(),
                    "mm {i}: mmap_lock left held or waited on after its last user: {l:?}"
                );
            }
            for (c, t) in report.cpu_time.iter().enumerate() {
                assert_eq!(
                    t.total(),
                    report.elapsed_cycles,
                    "cpu{c}: user + sys + irq + idle + other + steal ≠ the window: {t:?}"
                );
            }
        }
        report
    }

    /// Checks the model's invariants on `cpu` (debug builds only).
    ///
    /// - tlb.c: "the TLB will never contain entries that are out-of-date as when that mm
    ///   reached the tlb_gen in the list": a slot never claims a generation its mm has not
    ///   reached.
    /// - A CPU running an mm (not lazily, not switching) is in its `mm_cpumask`.
    /// - The loaded ASID's slot belongs to the loaded mm.
    pub fn debug_assert_invariants(&self, cpu: CpuId) {
        if !cfg!(debug_assertions) {
            return;
        }
        let st = &self.cpus[usize::from(cpu.0)].tlb;
        for ctx in st.ctxs.iter().filter(|c| c.ctx_id != 0) {
            if let Some(mm) = self.mms.iter().find(|m| m.ctx_id == ctx.ctx_id) {
                assert!(
                    ctx.tlb_gen <= mm.tlb_gen,
                    "{cpu}: slot of ctx {} claims gen {} beyond the mm's {}",
                    ctx.ctx_id,
                    ctx.tlb_gen,
                    mm.tlb_gen
                );
            }
        }
        if let LoadedMm::Mm(mm) = st.loaded_mm {
            if mm != MmId::INIT_MM && !st.is_lazy {
                assert!(
                    self.mms[mm.0 as usize].cpumask.test(cpu),
                    "{cpu} runs {mm} but is not in its mm_cpumask"
                );
            }
            if self.pcid && st.loaded_mm_asid.is_dynamic() {
                let slot = st.ctxs[usize::from(st.loaded_mm_asid.0)];
                assert_eq!(
                    slot.ctx_id, self.mms[mm.0 as usize].ctx_id,
                    "{cpu}: loaded ASID's slot belongs to another mm"
                );
            }
        }
    }

    /// Counters, flush sizes and per-CPU times, for the report.
    pub(crate) fn parts(&self) -> (&Counters, &FlushSizes, Vec<crate::stats::CpuTime>) {
        (
            &self.counters,
            &self.flush_sizes,
            (0..self.cpus.len()).map(|c| self.cpu_time(c)).collect(),
        )
    }

    /// XPFO's kernel unmaps and their exposure windows (`None` without XPFO).
    pub(crate) fn xpfo_report(&self) -> Option<crate::stats::XpfoReport> {
        (self.policy.xpfo != crate::policy::Xpfo::Off).then(|| self.xpfo_report_now())
    }

    /// Runs `n` run-time tests of 5-level paging in page-table helpers (`la57-runtime`
    /// only: a load of `p4d_folded` from L1D and a well-predicted branch each); returns
    /// their cycles. See docs/kernel-model.md for where and how many.
    fn la57_checks(&mut self, n: u64) -> u64 {
        if self.policy.la57 != La57::Runtime {
            return 0;
        }
        self.counters.la57_checks += n;
        n * self.costs.l1d_load.cycles
    }

    /// Core clock in MHz.
    pub fn clock_mhz(&self) -> u64 {
        self.costs.clock.mhz
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.queue.popped()
    }
    /// CPUs of the run.
    pub fn nr_cpus(&self) -> usize {
        self.cpus.len()
    }

    /// Whether mechanism `m` is on in this run (workloads that carry a mechanism ask at
    /// install).
    pub fn mechanism_on(&self, m: crate::mechanisms::Mechanism) -> bool {
        self.config.mechanisms.is_on(m)
    }
}

#[cfg(test)]
pub(crate) mod tests;
