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

impl<O: Observer> Kernel<O> {
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

    /// The CPUs sharing a last-level cache with `c`: its socket (`[topology]`), or the whole
    /// machine. NOTE: Zen's LLC is a CCX (8 cores on Zen 3), smaller than a socket; the
    /// presets do not describe it.
    fn llc_of(&self, c: usize) -> Vec<usize> {
        let n = self.cpus.len();
        match self.spec.raw().topology.as_ref() {
            Some(t) => {
                let s = t.socket_of(c, n);
                (0..n).filter(|&x| t.socket_of(x, n) == s).collect()
            }
            None => (0..n).collect(),
        }
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
