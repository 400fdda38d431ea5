//! Where each CPU's time goes: user, system, interrupt, idle, other and steal
//! (docs/kernel-model.md, "Where time goes").
//!
//! A CPU's timeline is a sequence of *activities* (a task's steps in user or kernel mode, a
//! spin waiting for acknowledgements, idle) into which interrupt handlers and disturbances are
//! *inserted*: an insertion delays the activity under way by its length. An activity is
//! closed when it ends, and its length less the insertions made during it goes to its bucket
//! (and, for a task's activity, to the task). So per CPU, at any time T,
//! `user + sys + irq + idle + other + steal = T − start of the measurement`: the accounting invariant,
//! checked by every report in debug builds.

use super::{Kernel, TaskId};
use crate::observer::Observer;
use crate::stats::CpuTime;
use tlblab_types::{CpuId, Cycles};

/// What a CPU is doing between two of its steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Activity {
    /// A task's step in user mode.
    User,
    /// A task's step in the kernel, or its spin in `csd_lock_wait()` for acknowledgements.
    Sys,
    /// The idle loop (halted or polling).
    Idle,
}

/// Time inserted into a CPU's timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Inserted {
    /// An interrupt handler (IPI, tick).
    Irq,
    /// A disturbance of the safety checker (another thread, an interrupts-off window): system
    /// time of nobody the report follows.
    Other,
    /// The host ran something else on the vCPU (`kernel/vcpu.rs`): steal time.
    Steal,
}

/// A CPU's accounting state.
#[derive(Clone, Debug)]
pub(super) struct Acct {
    activity: Activity,
    task: TaskId,
    since: Cycles,
    /// `inserted` when the activity began.
    inserted_mark: u64,
    /// Cycles inserted so far (handlers and disturbances).
    inserted: u64,
    /// The end of the last insertion: insertions are laid end to end.
    inserted_until: Cycles,
    /// The kind of the last insertion (the one that may still be running).
    last_kind: Inserted,
    /// Closed time per bucket.
    time: CpuTime,
}

impl Acct {
    /// A CPU idle from `now`, its idle task `idle`.
    pub(super) fn new(idle: TaskId, now: Cycles) -> Acct {
        Acct {
            activity: Activity::Idle,
            task: idle,
            since: now,
            inserted_mark: 0,
            inserted: 0,
            inserted_until: now,
            last_kind: Inserted::Irq,
            time: CpuTime::default(),
        }
    }

    /// The open activity's own cycles up to `at`: its length less the insertions inside it
    /// (an insertion still running at `at` counts only up to `at`).
    fn open_cycles(&self, at: Cycles) -> u64 {
        let inserted = self.inserted - self.inserted_mark - self.inserted_after(at);
        at.0.saturating_sub(self.since.0).saturating_sub(inserted)
    }

    /// Inserted cycles that lie after `at`.
    fn inserted_after(&self, at: Cycles) -> u64 {
        self.inserted_until.0.saturating_sub(at.0).min(self.inserted - self.inserted_mark)
    }

    /// The CPU's time up to `at`, the open activity included.
    pub(super) fn time_at(&self, at: Cycles) -> CpuTime {
        let mut t = self.time;
        let open = self.open_cycles(at);
        match self.activity {
            Activity::User => t.user_cycles += open,
            Activity::Sys => t.sys_cycles += open,
            Activity::Idle => t.idle_cycles += open,
        }
        // An insertion still running at `at` is cut there.
        let after = self.inserted_until.0.saturating_sub(at.0);
        match self.last_kind {
            Inserted::Irq => t.irq_cycles -= after.min(t.irq_cycles),
            Inserted::Other => t.other_cycles -= after.min(t.other_cycles),
            Inserted::Steal => t.steal_cycles -= after.min(t.steal_cycles),
        }
        t
    }

    /// Every cycle inserted into this CPU's timeline so far (handlers, disturbances, steal).
    pub(super) fn inserted_total(&self) -> u64 {
        self.inserted
    }

    /// The open activity (what it is, whose) and its own cycles up to `at`.
    pub(super) fn open(&self, at: Cycles) -> (Activity, TaskId, u64) {
        (self.activity, self.task, self.open_cycles(at))
    }

    /// Starts the measurement at `now`: every bucket restarts from zero; an insertion still
    /// running counts its rest.
    pub(super) fn restart(&mut self, now: Cycles) {
        let rest = self.inserted_until.0.saturating_sub(now.0);
        self.time = match self.last_kind {
            Inserted::Irq => CpuTime { irq_cycles: rest, ..CpuTime::default() },
            Inserted::Other => CpuTime { other_cycles: rest, ..CpuTime::default() },
            Inserted::Steal => CpuTime { steal_cycles: rest, ..CpuTime::default() },
        };
        self.since = now;
        self.inserted_mark = self.inserted - rest.min(self.inserted);
    }
}

impl<O: Observer> Kernel<O> {
    /// Closes `cpu`'s activity now: its own cycles go to its bucket and to its task.
    pub(super) fn acct_close(&mut self, cpu: CpuId) {
        let now = self.queue.now();
        let a = &mut self.cpus[usize::from(cpu.0)].acct;
        let cycles = a.open_cycles(now);
        let (activity, task) = (a.activity, a.task);
        match activity {
            Activity::User => a.time.user_cycles += cycles,
            Activity::Sys => a.time.sys_cycles += cycles,
            Activity::Idle => a.time.idle_cycles += cycles,
        }
        // An insertion still running (a tick taken during a handler, laid after it) belongs to
        // the next activity's interval: carry it over.
        let running = a.inserted_after(now);
        a.since = now;
        a.inserted_mark = a.inserted - running;
        let r = &mut self.tasks[task.0 as usize].report;
        match activity {
            Activity::User => r.user_cycles += cycles,
            Activity::Sys => r.sys_cycles += cycles,
            Activity::Idle => {}
        }
    }

    /// Opens `cpu`'s next activity now (the last one must be closed).
    pub(super) fn acct_open(&mut self, cpu: CpuId, activity: Activity, task: TaskId) {
        let a = &mut self.cpus[usize::from(cpu.0)].acct;
        debug_assert_eq!(a.since, self.queue.now(), "{cpu}: the last activity is still open");
        a.activity = activity;
        a.task = task;
    }

    /// Inserts `cycles` of `kind` into `cpu`'s timeline from now (after any insertion still
    /// running); returns where it starts. Interrupt time is also charged to the interrupted
    /// task, in the mode it was interrupted in, as tick-based accounting charges it
    /// (`KernelReport::time_as_reported`).
    pub(super) fn acct_insert(&mut self, cpu: CpuId, cycles: u64, kind: Inserted) -> Cycles {
        let now = self.queue.now();
        let a = &mut self.cpus[usize::from(cpu.0)].acct;
        let start = a.inserted_until.max(now);
        a.inserted_until = Cycles(start.0 + cycles);
        a.inserted += cycles;
        a.last_kind = kind;
        match kind {
            Inserted::Irq => a.time.irq_cycles += cycles,
            Inserted::Other => a.time.other_cycles += cycles,
            Inserted::Steal => a.time.steal_cycles += cycles,
        }
        if kind == Inserted::Irq {
            let (activity, task) = (a.activity, a.task);
            let r = &mut self.tasks[task.0 as usize].report;
            match activity {
                Activity::User => r.irq_in_user_cycles += cycles,
                Activity::Sys => r.irq_in_sys_cycles += cycles,
                Activity::Idle => {}
            }
        }
        start
    }

    /// `cpu`'s time since the start of the measurement, up to now.
    pub(super) fn cpu_time(&self, cpu: usize) -> CpuTime {
        self.cpus[cpu].acct.time_at(self.queue.now())
    }
}
