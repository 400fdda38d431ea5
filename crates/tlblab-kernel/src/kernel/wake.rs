//! Where a woken task runs: `select_task_rq_fair()` (kernel/sched/fair.c) for the sync wake-ups
//! of pipes and sockets (`wake_up_interruptible_sync_poll()`), as hackbench makes them.
//!
//! - `record_wakee()`: the waker counts a *flip* each time it wakes another task than the one
//!   it woke last; the count halves once a second (`HZ` jiffies) at the next wake-up.
//! - `wake_wide()`: a waker and wakee whose flips show a one-to-many relation (the lesser at
//!   least the LLC's CPU count, the greater at least that many times the lesser) are spread:
//!   no affine wake-up, the wakee's previous CPU is the target. Since 4.5 (commit 63b0e9edceec,
//!   "sched/fair: Beef up wake_wide()").
//! - Otherwise `wake_affine()`: `wake_affine_idle()` picks the waker's CPU when it is idle (and
//!   shares a cache with the previous one, which is then preferred if idle too) or when the
//!   waker is alone there (a sync wake-up), else the previous CPU when idle. NOTE: the
//!   load-weight comparison that follows (`wake_affine_weight()`, PELT loads) is not modelled:
//!   the previous CPU.
//! - `select_idle_sibling()`: the target if idle, else the previous CPU if idle in the same LLC,
//!   else the first idle CPU of the target's LLC after it, else the target. NOTE:
//!   `recent_used_cpu` and the SMT scan are left out (on the presets' LLCs they pick among idle
//!   CPUs only).
//!
//! Other wake-ups (eventfd, `waitpid()`, futexes) keep the task on its CPU.
//!
//! Every wake-up of a task by another then goes through [`Kernel::try_to_wake_up`], which
//! queues it and charges the waker what 6.18's `ttwu_queue()` costs it: an IPI's send only
//! where the kernel sends one (the function's documentation lists where).

use super::*;

/// A task's wake-up history (`task_struct`'s `last_wakee`, `wakee_flips`,
/// `wakee_flip_decay_ts`); a forked child starts with its parent's, as `dup_task_struct()`
/// copies them.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Wakee {
    last: Option<TaskId>,
    flips: u32,
    decay_jiffies: u64,
}

/// How [`Kernel::enqueue`] told a task's CPU that the task is queued there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kick {
    /// A reschedule IPI: the CPU was halted, or is preempted for the task.
    Ipi,
    /// An idle CPU that polls saw the flag (`set_nr_if_polling()`): no IPI.
    Polled,
    /// The CPU runs another task, which the queued one does not preempt: nothing to tell it.
    Busy,
    /// The CPU is the caller's, or already on its way out of idle: nothing to send.
    Local,
}

impl<O: Observer> Kernel<O> {
    /// `try_to_wake_up()` of the sleeping task `w` on the CPU it is placed on, by a task
    /// running on `cpu`: queues it and returns the waker's cycles, `wakeup` and, for an IPI
    /// to another CPU, its send (`ipi_send`, and in a guest the ICR write's exit). As
    /// `ttwu_queue()` decides in 6.18 (kernel/sched/core.c): a target in another LLC
    /// (`!cpus_share_cache()`) gets the task on its wake list (`ttwu_queue_wakelist()`) and an
    /// IPI; so does an idle one, unless it polls (`set_nr_if_polling()`); a busy one in the
    /// waker's LLC is queued by the waker under its run-queue lock and gets an IPI only when
    /// the task preempts its current one (`wakeup_preempt()` → `resched_curr()`). NOTE: the
    /// wake list's activation on the target is not deferred to its IPI, and the remote
    /// run-queue lock's line is not charged; the `WF_ON_CPU` case (a wakee still switching
    /// out) is left out.
    pub(super) fn try_to_wake_up(&mut self, cpu: CpuId, w: TaskId) -> u64 {
        let target = self.tasks[w.0 as usize].cpu;
        let kick = self.enqueue(w);
        let remote = target != cpu;
        let ipi = match kick {
            Kick::Ipi => remote,
            Kick::Busy if remote && !self.shares_llc(usize::from(cpu.0), usize::from(target.0)) => {
                let at = Cycles(self.queue.now().0 + self.reschedule_ipi_delay());
                self.push(at, Event::Ipi { cpu: target, ipi: Ipi::Reschedule });
                true
            }
            Kick::Busy | Kick::Polled | Kick::Local => false,
        };
        let send = if ipi { self.costs.ipi_send.cycles + self.guest_send_cycles(0) } else { 0 };
        self.costs.wakeup.cycles + send
    }

    /// `cpus_share_cache()`: whether CPUs `a` and `b` share a last-level cache: the same CCX
    /// (`[topology] cores_per_llc`, mechanism `llc-domains`) or socket, or any two CPUs
    /// without a `[topology]`.
    pub(super) fn shares_llc(&self, a: usize, b: usize) -> bool {
        self.llc(a as u16) == self.llc(b as u16)
    }

    /// `record_wakee()`: `waker` wakes `wakee`.
    pub(super) fn record_wakee(&mut self, waker: TaskId, wakee: TaskId) {
        let (now, hz) = (self.jiffies(), self.policy.hz);
        let w = &mut self.tasks[waker.0 as usize].wakee;
        if now > w.decay_jiffies + hz {
            w.flips >>= 1;
            w.decay_jiffies = now;
        }
        if w.last != Some(wakee) {
            w.last = Some(wakee);
            w.flips += 1;
        }
    }

    /// `wake_wide()`: whether `waker` waking `wakee` is one of many, to spread rather than
    /// pull to the waker (`llc` CPUs share the waker's cache: `sd_llc_size`).
    pub(super) fn wake_wide(&self, waker: TaskId, wakee: TaskId, llc: usize) -> bool {
        let flips = |t: TaskId| self.tasks[t.0 as usize].wakee.flips;
        let (a, b) = (flips(waker), flips(wakee));
        let (master, slave) = (a.max(b), a.min(b));
        let factor = llc as u32;
        !(slave < factor || master < slave.saturating_mul(factor))
    }

    /// Whether CPU `c` runs nothing and has nothing queued (`available_idle_cpu()`).
    fn cpu_idle(&self, c: usize) -> bool {
        let p = &self.cpus[c];
        p.curr == p.idle && p.switch.is_none() && p.rq.is_empty()
    }

    /// The CPUs sharing a last-level cache with `c` (`sd_llc`): its CCX or socket, or the whole
    /// machine without a `[topology]`.
    fn llc_of(&self, c: usize) -> Vec<usize> {
        (0..self.cpus.len()).filter(|&x| self.shares_llc(c, x)).collect()
    }

    /// `select_task_rq_fair()` for a sync wake-up of `wakee` by `waker`, which runs on `this`:
    /// the CPU to queue it on (module documentation).
    pub(super) fn select_task_rq_fair(
        &mut self,
        waker: TaskId,
        wakee: TaskId,
        this: usize,
    ) -> usize {
        let prev = usize::from(self.tasks[wakee.0 as usize].cpu.0);
        self.record_wakee(waker, wakee);
        let llc = self.llc_of(this);
        let share = llc.contains(&prev);
        let affine = this != prev && !self.wake_wide(waker, wakee, llc.len());
        // wake_affine(): wake_affine_idle(), and the previous CPU where it has no answer.
        let target = if !affine {
            prev
        } else if self.cpu_idle(this) && share {
            if self.cpu_idle(prev) {
                prev
            } else {
                this
            }
        } else if !self.cpu_idle(this) && self.cpus[this].rq.is_empty() {
            this
        } else {
            prev
        };
        self.select_idle_sibling(prev, target)
    }

    /// `select_idle_sibling()` of a task last on `prev`, aimed at `target`.
    fn select_idle_sibling(&self, prev: usize, target: usize) -> usize {
        if self.cpu_idle(target) {
            return target;
        }
        let scan = self.llc_of(target);
        if prev != target && scan.contains(&prev) && self.cpu_idle(prev) {
            return prev;
        }
        let start = scan.iter().position(|&x| x == target).unwrap_or(0);
        let found =
            (1..scan.len()).map(|i| scan[(start + i) % scan.len()]).find(|&x| self.cpu_idle(x));
        found.unwrap_or(target)
    }
}
