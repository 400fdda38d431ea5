//! `mm->mmap_lock` (`include/linux/mmap_lock.h`, `kernel/locking/rwsem.c`): who takes it, for
//! read or write, in each mirrored kernel; what waiting for it costs; and what a release hands
//! over ([`crate::mechanisms::Mechanism::MmapLock`]).
//!
//! - `mmap`, `munmap`, `mprotect` take it for write. With `Policy::munmap_downgrade` (4.20+)
//!   munmap downgrades to read once its VMAs are detached, so its zap and flush run under read.
//! - Page faults and `MADV_DONTNEED` take it for read before `Policy::vma_locks` (6.4 / 6.16);
//!   after, they take the VMA's own lock and leave `mmap_lock` alone, except the first anonymous
//!   fault of a VMA without an `anon_vma`, which `vmf_anon_prepare()` does under `mmap_lock` for
//!   read.
//! - A writer that finds the lock taken spins while its holder runs on a CPU (rwsem optimistic
//!   spinning; before 5.3 only on a writer, `rwsem_can_spin_on_owner()` giving up on a
//!   reader-owned lock) and sleeps otherwise; a reader sleeps (reader spinning is gone since
//!   5.12, and 4.13/4.14 had none).
//! - A free lock goes to whoever takes it first (mechanism `rwsem-steal`): a writer takes it
//!   past sleeping waiters (`rwsem_try_write_lock_unqueued()`), and 5.3+ a reader takes one no
//!   writer holds (`Policy::rwsem_handoff`). A release (`rwsem_wake()`, `rwsem_mark_wake()`)
//!   grants the lock to the readers at the head of the queue, but only wakes a writer there,
//!   which tries again when it runs and, beaten, sleeps again; 5.3+ a first waiter beaten for
//!   `RWSEM_WAIT_TIMEOUT` (a jiffy at HZ 250) sets `RWSEM_FLAG_HANDOFF`, and the lock waits for
//!   it. The releaser pays each wake-up. Without the mechanism a release hands the lock to
//!   the head of the queue, a writer too, and nobody passes a waiter: a convoy.
//! - Every acquisition and release is an atomic on the semaphore's cache line: a
//!   `cache_line_transfer` when another CPU wrote it last.
//!
//! NOTE: fork's, exec's and exit's uses of `mmap_lock` are not modelled (they serialise with
//! nothing in the scenarios: a process's own threads have exited or wait).

use super::run::Step;
use super::{Frame, Kernel, Mode, TaskState};
use crate::ids::{MmId, TaskId};
use crate::mechanisms::Mechanism;
use crate::mm::{RwsemRules, VmaId, Waiter};
use crate::observer::Observer;
use crate::program::Syscall;
use tlblab_types::CpuId;

/// How long a spinning writer waits before it looks at the lock again (its `cpu_relax()` loop
/// in `rwsem_spin_on_owner()`, coarsened so that a long hold is a few events, not thousands).
const SPIN_CHECK_CYCLES: u64 = 200;

impl<O: Observer> Kernel<O> {
    /// Whether `call` takes `mmap_lock`, and for write; `None` when it does not (or the
    /// mechanism is off).
    pub(super) fn mmap_lock_for(&self, call: &Syscall) -> Option<bool> {
        if !self.config.mechanisms.is_on(Mechanism::MmapLock) {
            return None;
        }
        match call {
            Syscall::Mmap { .. }
            | Syscall::MmapBeside { .. }
            | Syscall::MmapFile { .. }
            | Syscall::Munmap { .. }
            | Syscall::Mprotect { .. } => Some(true),
            Syscall::MadviseDontneed { .. } => (!self.policy.vma_locks).then_some(false),
            // collapse_huge_page() drops the read lock madvise took and retakes it for write
            // around the PMD's replacement: the model holds it for write throughout.
            Syscall::MadviseCollapse { .. } => Some(true),
            _ => None,
        }
    }

    /// Whether a page fault on `vma` takes `mmap_lock` for read: every fault before per-VMA
    /// locks; after, only a write fault that must prepare the VMA's `anon_vma`.
    pub(super) fn fault_takes_mmap_lock(&self, mm: MmId, vma: VmaId, write: bool) -> bool {
        if !self.config.mechanisms.is_on(Mechanism::MmapLock) {
            return false;
        }
        if !self.policy.vma_locks {
            return true;
        }
        write && self.mms[mm.0 as usize].vma(vma).is_some_and(|v| !v.anon_vma)
    }

    /// The atomic on the semaphore's line from `cpu`: a transfer if another CPU wrote it last.
    fn mmap_lock_line(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        let from = self.mms[mm.0 as usize].mmap_lock.line.replace(cpu.0);
        self.line_move_cycles(from, cpu.0)
    }

    /// The rwsem rules of this run: the mechanism and the policy.
    fn rwsem_rules(&self) -> RwsemRules {
        RwsemRules {
            steal: self.config.mechanisms.is_on(Mechanism::RwsemSteal),
            reader_steal: self.policy.rwsem_handoff,
            handoff: self.policy.rwsem_handoff,
        }
    }

    /// `RWSEM_WAIT_TIMEOUT`: `DIV_ROUND_UP(HZ, 250)` jiffies, in cycles.
    fn rwsem_wait_timeout(&self) -> u64 {
        self.tick_cycles * self.policy.hz.div_ceil(250)
    }

    /// `down_read()` / `down_write()` by `t`: takes the lock, spins, or sleeps until a release
    /// hands it over (the frames below then run with it held) or, a writer with stealing, wakes
    /// it to try again.
    pub(super) fn mmap_lock_step(&mut self, cpu: CpuId, t: TaskId, write: bool) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        let line = self.mmap_lock_line(cpu, mm);
        let rules = self.rwsem_rules();
        let (now, timeout) = (self.queue.now().0, self.rwsem_wait_timeout());
        let lock = &mut self.mms[mm.0 as usize].mmap_lock;
        if write && lock.writer == Some(t) {
            // Handed the lock while asleep (a handoff): the release counted it.
            return Step::Spend(line, Mode::Sys);
        }
        let queued = lock.is_woken_writer(t);
        if queued && lock.retry(t, now, timeout, rules) || !queued && lock.can_take(write, rules) {
            if !queued {
                lock.take(t, write);
            }
            self.counters.mmap_lock.acquired += 1;
            return Step::Spend(line, Mode::Sys);
        }
        let lock = &self.mms[mm.0 as usize].mmap_lock;
        let running = |h: &TaskId| self.tasks[h.0 as usize].state == TaskState::Running;
        let (writer_runs, readers_run) =
            (lock.writer.iter().any(running), lock.readers.iter().any(running));
        let spin = if rules.steal {
            // Before 5.3 a writer does not spin on a reader-owned lock; with a handoff pending
            // the lock waits for the first waiter.
            !queued && !lock.handoff && (writer_runs || rules.handoff && readers_run)
        } else {
            (writer_runs || readers_run) && lock.waiters.is_empty()
        };
        if write && spin {
            // Optimistic spinning: look again shortly.
            self.push_frame(t, Frame::MmapLock { write });
            self.counters.mmap_lock.spin_cycles += SPIN_CHECK_CYCLES;
            return Step::Spend(line + SPIN_CHECK_CYCLES, Mode::Sys);
        }
        if write && rules.steal {
            // Woken, it runs this frame again.
            self.push_frame(t, Frame::MmapLock { write });
        }
        if !queued {
            let waiter = Waiter { task: t, write, since: now, woken: false };
            self.mms[mm.0 as usize].mmap_lock.waiters.push_back(waiter);
        }
        self.counters.mmap_lock.slept += 1;
        self.tasks[t.0 as usize].state = TaskState::Blocked;
        self.schedule(cpu)
    }

    /// `up_read()` / `up_write()` by `t`, and the wake-ups of the tasks handed the lock.
    pub(super) fn mmap_unlock_step(&mut self, cpu: CpuId, t: TaskId, write: bool) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        let line = self.mmap_lock_line(cpu, mm);
        self.mms[mm.0 as usize].mmap_lock.release(t, write);
        Step::Spend(line + self.mmap_lock_wake(cpu, mm), Mode::Sys)
    }

    /// `mmap_write_downgrade()` by `t`, then `cycles` of work under read (munmap's zap).
    pub(super) fn mmap_downgrade_step(&mut self, cpu: CpuId, t: TaskId, cycles: u64) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        let line = self.mmap_lock_line(cpu, mm);
        let lock = &mut self.mms[mm.0 as usize].mmap_lock;
        lock.release(t, true);
        lock.take(t, false);
        Step::Spend(line + self.mmap_lock_wake(cpu, mm) + cycles, Mode::Sys)
    }

    /// Hands the lock over and wakes the new holders (or the writer to try again); their
    /// wake-ups' cost, on `cpu`.
    fn mmap_lock_wake(&mut self, cpu: CpuId, mm: MmId) -> u64 {
        let rules = self.rwsem_rules();
        let lock = &mut self.mms[mm.0 as usize].mmap_lock;
        let woken = lock.hand_over(rules);
        let granted = woken.iter().filter(|&&w| !lock.is_woken_writer(w)).count();
        self.counters.mmap_lock.acquired += granted as u64;
        woken.into_iter().map(|w| self.try_to_wake_up(cpu, w)).sum()
    }
}
