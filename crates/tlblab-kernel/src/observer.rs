//! What the model reports as it runs: the kernel's `tlb:tlb_flush` tracepoint through an
//! [`Observer`] (a push-style sink, as ripgrep's `Sink`), and the counters the kernel keeps.

use crate::ids::{MmId, TaskId};
use serde::Serialize;
use std::fmt;
use tlblab_types::{CpuId, Cycles};

/// `enum tlb_flush_reason` (include/linux/mm_types.h), with the kernel's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TlbFlushReason {
    /// 0 `TLB_FLUSH_ON_TASK_SWITCH`: `switch_mm_irqs_off()` loaded a CR3.
    FlushOnTaskSwitch = 0,
    /// 1 `TLB_REMOTE_SHOOTDOWN`: `flush_tlb_func()` on a CPU that received the IPI.
    RemoteShootdown = 1,
    /// 2 `TLB_LOCAL_SHOOTDOWN`: `flush_tlb_func()` on the initiator, for no mm (batched).
    LocalShootdown = 2,
    /// 3 `TLB_LOCAL_MM_SHOOTDOWN`: `flush_tlb_func()` on the initiator, for its mm.
    LocalMmShootdown = 3,
    /// 4 `TLB_REMOTE_SEND_IPI`: `native_flush_tlb_multi()` before it sends IPIs.
    RemoteSendIpi = 4,
    /// 5 `TLB_REMOTE_WRONG_CPU`: the IPI reached a CPU that no longer runs the mm (6.14+).
    RemoteWrongCpu = 5,
}

impl TlbFlushReason {
    /// Every reason, by value.
    pub const ALL: [TlbFlushReason; 6] = [
        TlbFlushReason::FlushOnTaskSwitch,
        TlbFlushReason::RemoteShootdown,
        TlbFlushReason::LocalShootdown,
        TlbFlushReason::LocalMmShootdown,
        TlbFlushReason::RemoteSendIpi,
        TlbFlushReason::RemoteWrongCpu,
    ];

    /// The string the 6.18 tracepoint prints.
    pub const fn name(self) -> &'static str {
        match self {
            TlbFlushReason::FlushOnTaskSwitch => "flush on task switch",
            TlbFlushReason::RemoteShootdown => "remote shootdown",
            TlbFlushReason::LocalShootdown => "local shootdown",
            TlbFlushReason::LocalMmShootdown => "local MM shootdown",
            TlbFlushReason::RemoteSendIpi => "remote IPI send",
            TlbFlushReason::RemoteWrongCpu => "remote wrong CPU",
        }
    }
}

/// The `pages` field of the tracepoint: `TLB_FLUSH_ALL` prints as -1.
pub const TLB_FLUSH_ALL: i64 = -1;

/// One `tlb:tlb_flush` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TlbFlushEvent {
    /// When it fired.
    pub time: Cycles,
    /// The CPU it fired on.
    pub cpu: CpuId,
    /// Why.
    pub reason: TlbFlushReason,
    /// Entries flushed (stride units), -1 for a full flush, 0 for none.
    pub pages: i64,
}

impl fmt::Display for TlbFlushEvent {
    /// The ftrace text form (`pages:1 reason:remote shootdown (1)`), with time in cycles.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:03}] {}: tlb_flush: pages:{} reason:{} ({})",
            self.cpu.0,
            self.time.0,
            self.pages,
            self.reason.name(),
            self.reason as u8
        )
    }
}

/// How the previous task left the CPU at a context switch (`sched_switch`'s `prev_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SwitchedOut {
    /// Still runnable: preempted (`prev_state` R, involuntary).
    Preempted,
    /// Blocked (waiting for a child, an eventfd, …): `prev_state` S or D, voluntary.
    Blocked,
    /// It exited: its last switch (`prev_state` X or Z).
    Exited,
    /// The CPU's idle task, leaving for a task that woke up.
    Idle,
}

/// One `sched:sched_switch` event: the scheduler chose another task for a CPU (fired where the
/// kernel's tracepoint is, in `__schedule()` before `context_switch()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SwitchEvent {
    /// When the switch was decided.
    pub time: Cycles,
    /// The CPU.
    pub cpu: CpuId,
    /// The task leaving.
    pub prev: TaskId,
    /// The task coming (the idle task when nothing else is runnable).
    pub next: TaskId,
    /// How `prev` left.
    pub prev_state: SwitchedOut,
    /// `prev`'s mm (`None`: the idle task or a kernel thread).
    pub prev_mm: Option<MmId>,
    /// `next`'s mm (`None`: the idle task or a kernel thread).
    pub next_mm: Option<MmId>,
    /// `next` is the CPU's idle task.
    pub next_idle: bool,
}

/// A sink for what the model emits. Every method has an empty default.
pub trait Observer {
    /// The `tlb:tlb_flush` tracepoint fired.
    fn tlb_flush(&mut self, _event: &TlbFlushEvent) {}

    /// The `sched:sched_switch` tracepoint fired.
    fn sched_switch(&mut self, _event: &SwitchEvent) {}
}

/// An observer that keeps nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// An observer that keeps every event (for tests and small runs).
#[derive(Clone, Debug, Default)]
pub struct TraceLog {
    /// The events, in the order they fired.
    pub events: Vec<TlbFlushEvent>,
}

impl Observer for TraceLog {
    fn tlb_flush(&mut self, event: &TlbFlushEvent) {
        self.events.push(*event);
    }
}

/// The `CONFIG_DEBUG_TLBFLUSH` vmstat counters (include/linux/vmstat.h), counted as the kernel
/// counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Vmstat {
    /// `nr_tlb_remote_flush`: +1 per `native_flush_tlb_multi()` and per `flush_tlb_all()`.
    pub nr_tlb_remote_flush: u64,
    /// `nr_tlb_remote_flush_received`: +1 per remote `flush_tlb_func()` and per CPU of
    /// `do_flush_tlb_all()`.
    pub nr_tlb_remote_flush_received: u64,
    /// `nr_tlb_local_flush_all`: local full flushes in `flush_tlb_func()`.
    pub nr_tlb_local_flush_all: u64,
    /// `nr_tlb_local_flush_one`: pages of local partial flushes, and each
    /// `flush_tlb_one_kernel()`.
    pub nr_tlb_local_flush_one: u64,
}

impl std::ops::AddAssign for Vmstat {
    fn add_assign(&mut self, o: Vmstat) {
        self.nr_tlb_remote_flush += o.nr_tlb_remote_flush;
        self.nr_tlb_remote_flush_received += o.nr_tlb_remote_flush_received;
        self.nr_tlb_local_flush_all += o.nr_tlb_local_flush_all;
        self.nr_tlb_local_flush_one += o.nr_tlb_local_flush_one;
    }
}
