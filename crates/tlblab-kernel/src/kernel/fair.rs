//! EEVDF, the fair class's pick and its wake-up preemption (kernel/sched/fair.c, 6.6–6.18;
//! mechanism `wakeup-preemption`).
//!
//! Every task is nice 0, so a task's virtual runtime advances as its run time does and the
//! run queue's average is a plain mean. Per task: `vruntime`, `deadline` (a slice of virtual
//! time past the point it was last given one), `vlag` (how far it stood behind the average
//! when it left a run queue, clamped as `update_entity_lag()` clamps it) and the
//! `RUN_TO_PARITY` protection (the kernel's `vlag == deadline` trick of `set_next_entity()`).
//! - `place_entity()`: an arriving task (woken, new, migrated) is placed its lag behind the
//!   queue's average, the lag scaled by `(n + 1) / n` so that adding it leaves the average
//!   where it was (`PLACE_LAG`); a new task's first deadline is half a slice away
//!   (`PLACE_DEADLINE_INITIAL`).
//! - `pick_eevdf()`: of the tasks whose vruntime is at most the average (eligible), the one
//!   with the earliest deadline; the current task goes on while it is eligible and has not
//!   used the slice it was picked with (`RUN_TO_PARITY`).
//! - `update_deadline()`, from `update_curr()` at a tick or a wake-up: a task that has used its
//!   slice gets the next one and is rescheduled when others are queued.
//! - `check_preempt_wakeup_fair()` (6.8: `check_preempt_wakeup_fair()`; 6.6: `check_preempt_
//!   wakeup()`): the woken task preempts the current one when `pick_eevdf()` would pick it.
//!
//! The slice is `sysctl_sched_base_slice`: 0.75 ms × (1 + ilog2(min(CPUs, 8)))
//! (`SCHED_TUNABLESCALING_LOG`, `sched_update_scaling()`).
//!
//! NOTE: every policy runs this scheduler, the pre-6.6 ones (CFS) included; CFS's wake-up
//! preemption (`wakeup_gran()` against the sleeper credit of `GENTLE_FAIR_SLEEPERS`) also lets a
//! woken sleeper preempt a task that has run, so the effect the model needs is common to both,
//! but its thresholds differ. NOTE: 6.12's `DELAY_DEQUEUE` (a sleeper with negative lag stays
//! queued until eligible) and load balancing are not modelled; steal time counts as run time.

use super::*;

/// A vruntime far from 0, so that a lag subtracted from it never goes below.
pub(super) const VRUNTIME_ORIGIN: i64 = 1 << 50;

/// A task's fair-class scheduling entity.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entity {
    vruntime: i64,
    deadline: i64,
    vlag: i64,
    /// `RUN_TO_PARITY`: picked and not yet given a new slice.
    protect: bool,
    /// It has never been placed (`ENQUEUE_INITIAL`).
    initial: bool,
}

impl Default for Entity {
    fn default() -> Entity {
        Entity {
            vruntime: VRUNTIME_ORIGIN,
            deadline: VRUNTIME_ORIGIN,
            vlag: 0,
            protect: false,
            initial: true,
        }
    }
}

impl<O: Observer> Kernel<O> {
    /// Whether the fair class's EEVDF rules are on (else a round-robin queue and a fixed slice).
    pub(super) fn eevdf(&self) -> bool {
        self.config.mechanisms.is_on(Mechanism::WakeupPreemption)
    }

    /// The fair class's current task of `cpu`: the one it runs, or the one it is switching
    /// to; none when it idles or switches to idle.
    fn fair_curr(&self, c: usize) -> Option<TaskId> {
        let p = &self.cpus[c];
        match &p.switch {
            Some(sw) => (sw.next != p.idle).then_some(sw.next),
            None => (p.curr != p.idle && self.tasks[p.curr.0 as usize].state == TaskState::Running)
                .then_some(p.curr),
        }
    }

    /// `update_curr()` of `t`, which runs: its vruntime advances by the time it ran since
    /// last counted; then `update_deadline()`. Returns whether it used its slice (and got the
    /// next one).
    fn update_curr(&mut self, t: TaskId) -> bool {
        let now = self.queue.now();
        let task = &mut self.tasks[t.0 as usize];
        let ran = now.0.saturating_sub(task.slice_start.0);
        task.slice_start = now;
        let se = &mut task.se;
        se.vruntime += ran as i64;
        if se.vruntime < se.deadline {
            return false;
        }
        se.deadline = se.vruntime + self.fair_slice as i64;
        se.protect = false;
        true
    }

    /// `update_curr()` of `cpu`'s current task, if one runs (not mid-switch).
    fn update_curr_of(&mut self, c: usize) -> bool {
        match self.fair_curr(c) {
            Some(t) if self.cpus[c].switch.is_none() => self.update_curr(t),
            _ => false,
        }
    }

    /// The count and vruntime sum of `cpu`'s queued tasks and `extra` (a current task not in
    /// the queue).
    fn fair_load(&self, c: usize, extra: Option<TaskId>) -> (i128, i128) {
        let ts = self.cpus[c].rq.iter().copied().chain(extra);
        ts.fold((0, 0), |(n, sum), t| {
            (n + 1, sum + i128::from(self.tasks[t.0 as usize].se.vruntime))
        })
    }

    /// `avg_vruntime()` of a load (`cpu`'s last one when it is empty).
    fn avg_vruntime(&mut self, c: usize, (n, sum): (i128, i128)) -> i64 {
        if n > 0 {
            self.cpus[c].vclock = (sum / n) as i64;
        }
        self.cpus[c].vclock
    }

    /// `vruntime_eligible()`: at most the average, compared without dividing.
    fn eligible(&self, t: TaskId, (n, sum): (i128, i128)) -> bool {
        i128::from(self.tasks[t.0 as usize].se.vruntime) * n <= sum
    }

    /// `place_entity()` of `t`, arriving on its CPU's queue (before it is added).
    pub(super) fn place_entity(&mut self, t: TaskId) {
        let c = usize::from(self.tasks[t.0 as usize].cpu.0);
        self.update_curr_of(c);
        let load = self.fair_load(c, self.fair_curr(c));
        let avg = self.avg_vruntime(c, load);
        let n = load.0;
        let slice = self.fair_slice as i64;
        let se = &mut self.tasks[t.0 as usize].se;
        let lag = if n > 0 { (i128::from(se.vlag) * (n + 1) / n) as i64 } else { se.vlag };
        se.vruntime = avg - lag;
        se.deadline = se.vruntime + if se.initial { slice / 2 } else { slice };
        se.initial = false;
        se.protect = false;
    }

    /// `cpu`'s current task `t` is switched out: its vruntime is brought up to date and, when
    /// it leaves the queue (blocked, exited or migrating), `update_entity_lag()` keeps its
    /// distance behind the average, within ±max(2 slices, a tick).
    pub(super) fn put_prev_entity(&mut self, c: usize, t: TaskId, leaves: bool) {
        self.update_curr(t);
        if !leaves {
            return;
        }
        let load = self.fair_load(c, Some(t));
        let avg = self.avg_vruntime(c, load);
        let limit = (2 * self.fair_slice).max(self.tick_cycles) as i64;
        let se = &mut self.tasks[t.0 as usize].se;
        se.vlag = (avg - se.vruntime).clamp(-limit, limit);
    }

    /// `pick_eevdf()` over `cpu`'s queue and `curr` (in the queue when it was requeued, or
    /// still running): the eligible task with the earliest deadline, an earlier-queued one on
    /// a tie, `curr` only when strictly earlier; but `curr` while it is eligible and its
    /// picked slice lasts (`RUN_TO_PARITY`).
    pub(super) fn pick_eevdf(&self, c: usize, curr: Option<TaskId>) -> Option<TaskId> {
        let rq = &self.cpus[c].rq;
        let extra = curr.filter(|t| !rq.contains(t));
        let load = self.fair_load(c, extra);
        let se = |t: TaskId| &self.tasks[t.0 as usize].se;
        let curr = curr.filter(|&t| self.eligible(t, load));
        if let Some(t) = curr.filter(|&t| se(t).protect) {
            return Some(t);
        }
        let best = rq
            .iter()
            .enumerate()
            .filter(|&(_, &t)| Some(t) != curr && self.eligible(t, load))
            .min_by_key(|&(i, &t)| (se(t).deadline, i))
            .map(|(_, &t)| t);
        match (best, curr) {
            (Some(b), Some(t)) if se(t).deadline < se(b).deadline => Some(t),
            (Some(b), _) => Some(b),
            (None, t) => t.or_else(|| rq.front().copied()),
        }
    }

    /// `set_next_entity()`: `t` is picked to run; `RUN_TO_PARITY` protects its slice.
    pub(super) fn set_next_entity(&mut self, t: TaskId) {
        self.tasks[t.0 as usize].se.protect = true;
    }

    /// The tick's `update_curr()`: whether the current task used its slice with others queued
    /// (`resched_curr()`).
    pub(super) fn tick_fair(&mut self, c: usize) -> bool {
        self.update_curr_of(c) && !self.cpus[c].rq.is_empty()
    }

    /// `yield_task_fair()`: the current task's deadline moves a slice on.
    pub(super) fn yield_task_fair(&mut self, c: usize) {
        if let Some(t) = self.fair_curr(c) {
            self.update_curr(t);
            let slice = self.fair_slice as i64;
            let se = &mut self.tasks[t.0 as usize].se;
            se.deadline += slice;
            se.protect = false;
        }
    }

    /// `check_preempt_wakeup_fair()` after `w` was queued on `cpu`: whether the current task
    /// is to be rescheduled for it (or for its used slice, `update_deadline()`).
    pub(super) fn wakeup_preempt(&mut self, c: usize, w: TaskId) -> bool {
        let Some(curr) = self.fair_curr(c) else { return false };
        if self.cpus[c].switch.is_some() || curr == w {
            return false;
        }
        if self.update_curr(curr) {
            return true;
        }
        self.pick_eevdf(c, Some(curr)) == Some(w)
    }
}
