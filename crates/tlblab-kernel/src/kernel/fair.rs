//! The fair class: its pick, its slices and its wake-up preemption (kernel/sched/fair.c;
//! mechanism `wakeup-preemption`), as EEVDF (6.6–6.18) or, for the policies before 6.6, CFS
//! (`Policy::fair_sched`).
//!
//! Every task is nice 0, so a task's virtual runtime advances as its run time does and the run
//! queue's average is a plain mean. The slices are the scheduler's tunables scaled by
//! `1 + ilog2(min(CPUs, 8))` (`SCHED_TUNABLESCALING_LOG`, `sched_update_scaling()`): the base
//! slice and CFS's minimum granularity 0.75 ms, CFS's latency 6 ms and wake-up granularity 1 ms.
//!
//! **EEVDF.** Per task: `vruntime`, `deadline` (a slice of virtual time past the point it was
//! last given one), `vlag` (how far it stood behind the average when it left a run queue,
//! clamped as `update_entity_lag()` clamps it) and the `RUN_TO_PARITY` protection (6.6's
//! `vlag == deadline` trick of `set_next_entity()`, 6.17's `vprot`).
//! - `place_entity()`: an arriving task (woken, new, migrated) is placed its lag behind the
//!   queue's average, the lag scaled by `(n + 1) / n` so that adding it leaves the average
//!   where it was (`PLACE_LAG`); a new task's first deadline is half a slice away
//!   (`PLACE_DEADLINE_INITIAL`).
//! - `pick_eevdf()`: of the tasks whose vruntime is at most the average (eligible), the one
//!   with the earliest deadline; the current task goes on while it is eligible and has not
//!   used the slice it was picked with (`RUN_TO_PARITY`).
//! - `update_deadline()`, from `update_curr()` at a tick or a wake-up: a task that has used its
//!   slice gets the next one and is rescheduled when others are queued.
//! - `check_preempt_wakeup_fair()` (6.6: `check_preempt_wakeup()`): the woken task preempts the
//!   current one when `pick_eevdf()` would pick it.
//! - 6.12+ (`FairSched::Eevdf`, not `Eevdf66`): `DELAY_DEQUEUE`. A task that sleeps while not
//!   eligible stays queued, delayed, and still counts in the average. Picked, it leaves then,
//!   its lag clipped at 0 (`DELAY_ZERO`); woken first, it is runnable where it stands
//!   (`ttwu_runnable()`: no wake-up placement), placed again only if its lag has become
//!   positive.
//!
//! **CFS** (4.13–6.5). Per run queue a `min_vruntime` that only grows; the least vruntime runs
//! next. A woken sleeper is placed at least half a latency behind `min_vruntime`
//! (`place_entity()`, `GENTLE_FAIR_SLEEPERS`), a new task a slice past it (`START_DEBIT`), a
//! migrated one as far from the new queue's `min_vruntime` as it was from the old one's. A woken
//! task preempts when the running one is more than the wake-up granularity ahead of it
//! (`check_preempt_wakeup()` → `wakeup_preempt_entity()`); at a tick the running task is
//! rescheduled when it has run its share of the latency period since it was picked, or at
//! least the minimum granularity and more than that share ahead of the least
//! (`check_preempt_tick()`). `sched_yield()` makes it the skip buddy: a pick passes it over for
//! the next task when that one is within the wake-up granularity of it.
//!
//! NOTE: CFS's next and last buddies (`LAST_BUDDY`: after a wake-up preemption CFS returns to
//! the preempted task when it is within a granularity of the least), priorities and load
//! balancing are not modelled; steal time counts as run time.

use super::*;
use crate::policy::FairSched;

/// A vruntime far from 0, so that a lag subtracted from it never goes below.
pub(super) const VRUNTIME_ORIGIN: i64 = 1 << 50;

/// A task's fair-class scheduling entity.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entity {
    pub(super) vruntime: i64,
    pub(super) deadline: i64,
    pub(super) vlag: i64,
    /// `RUN_TO_PARITY`: picked and not yet given a new slice.
    protect: bool,
    /// It has never been placed (`ENQUEUE_INITIAL`).
    initial: bool,
    /// Run time in all, and when it was last picked (`sum_exec_runtime`,
    /// `prev_sum_exec_runtime`).
    sum_exec: u64,
    prev_sum_exec: u64,
    /// CFS: the CPU it left, that queue's `min_vruntime` then, and whether it left to sleep.
    left: usize,
    left_min: i64,
    slept: bool,
    /// CFS: `sched_yield()` made it the skip buddy.
    skip: bool,
    /// EEVDF 6.12+: it slept while not eligible and stays queued (`sched_delayed`,
    /// `DELAY_DEQUEUE`) until picked (then it leaves) or woken (then it runs on).
    delayed: bool,
}

impl Default for Entity {
    fn default() -> Entity {
        Entity {
            vruntime: VRUNTIME_ORIGIN,
            deadline: VRUNTIME_ORIGIN,
            vlag: 0,
            protect: false,
            initial: true,
            sum_exec: 0,
            prev_sum_exec: 0,
            left: 0,
            left_min: VRUNTIME_ORIGIN,
            slept: false,
            skip: false,
            delayed: false,
        }
    }
}

impl<O: Observer> Kernel<O> {
    /// Whether the fair class's rules are on, EEVDF or CFS (else a round-robin queue and a
    /// fixed slice).
    pub(super) fn fair_class(&self) -> bool {
        self.config.mechanisms.is_on(Mechanism::WakeupPreemption)
    }

    /// Whether the policy's fair class is CFS.
    fn cfs(&self) -> bool {
        self.policy.fair_sched == FairSched::Cfs
    }

    /// Whether `t` sleeps but stays queued (`DELAY_DEQUEUE`).
    pub(super) fn delayed(&self, t: TaskId) -> bool {
        self.tasks[t.0 as usize].se.delayed
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

    /// The fair class's current task of `cpu` when it runs (not mid-switch).
    pub(super) fn fair_running(&self, c: usize) -> Option<TaskId> {
        self.fair_curr(c).filter(|_| self.cpus[c].switch.is_none())
    }

    /// `update_curr()` of `t`, which runs: its vruntime advances by the time it ran since
    /// last counted; then EEVDF's `update_deadline()` or CFS's `update_min_vruntime()`.
    /// Returns whether it used its slice and got the next one (never under CFS).
    fn update_curr(&mut self, t: TaskId) -> bool {
        let (now, cfs) = (self.queue.now(), self.cfs());
        let task = &mut self.tasks[t.0 as usize];
        let ran = now.0.saturating_sub(task.slice_start.0);
        task.slice_start = now;
        let se = &mut task.se;
        se.vruntime += ran as i64;
        se.sum_exec += ran;
        if cfs {
            let c = usize::from(task.cpu.0);
            self.update_min_vruntime(c);
            return false;
        }
        if se.vruntime < se.deadline {
            return false;
        }
        se.deadline = se.vruntime + self.fair_slice as i64;
        se.protect = false;
        true
    }

    /// `update_curr()` of `cpu`'s current task, if one runs (not mid-switch).
    fn update_curr_of(&mut self, c: usize) -> bool {
        self.fair_running(c).is_some_and(|t| self.update_curr(t))
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

    /// `enqueue_entity()` of `t`, arriving on its CPU's queue (before it is added): first the
    /// queue's `update_curr()`, then `place_entity()`. Returns whether that `update_curr()`
    /// rescheduled the current task: it used its slice while others were queued (with only
    /// the current task queued, the kernel's `nr_queued == 1` return skips it).
    pub(super) fn enqueue_entity(&mut self, t: TaskId) -> bool {
        let c = usize::from(self.tasks[t.0 as usize].cpu.0);
        if self.delayed(t) {
            return self.requeue_delayed_entity(c, t);
        }
        let resched = self.update_curr_of(c) && !self.cpus[c].rq.is_empty();
        self.place_entity(c, t);
        resched
    }

    /// `requeue_delayed_entity()`: `t`, sleeping but still queued on `cpu` (`DELAY_DEQUEUE`),
    /// is woken where it is (`ttwu_runnable()`). With `DELAY_ZERO`, a lag it has come to have
    /// above 0 is dropped and it is placed again; else it keeps its place. Returns whether
    /// the wake-up's `update_curr()` (in `check_preempt_wakeup_fair()`) rescheduled the
    /// current task, which has others queued now.
    fn requeue_delayed_entity(&mut self, c: usize, t: TaskId) -> bool {
        let load = self.fair_load(c, self.fair_curr(c));
        self.update_entity_lag(c, t, load);
        if self.tasks[t.0 as usize].se.vlag > 0 {
            self.tasks[t.0 as usize].se.vlag = 0;
            let rq = &mut self.cpus[c].rq;
            rq.retain(|&x| x != t);
            self.place_entity(c, t);
            self.cpus[c].rq.push_back(t);
        }
        self.tasks[t.0 as usize].se.delayed = false;
        self.update_curr_of(c)
    }

    /// `update_entity_lag()` of `t` on `cpu`, `load` counting it: its distance behind the
    /// average, within ±max(2 slices, a tick).
    fn update_entity_lag(&mut self, c: usize, t: TaskId, load: (i128, i128)) {
        let avg = self.avg_vruntime(c, load);
        let limit = (2 * self.fair_slice).max(self.tick_cycles) as i64;
        let se = &mut self.tasks[t.0 as usize].se;
        se.vlag = (avg - se.vruntime).clamp(-limit, limit);
    }

    /// `place_entity()` of `t` on `cpu`'s queue.
    fn place_entity(&mut self, c: usize, t: TaskId) {
        if self.cfs() {
            return self.place_entity_cfs(c, t);
        }
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
    /// distance behind the average. But under 6.12+ EEVDF a task that blocks while not
    /// eligible stays queued instead (`dequeue_entity()`, `DELAY_DEQUEUE`): it is put back on
    /// the queue, marked delayed.
    pub(super) fn put_prev_entity(&mut self, c: usize, t: TaskId, leaves: bool) {
        self.update_curr(t);
        if !leaves {
            return;
        }
        if self.cfs() {
            // dequeue_entity(): a migrating task's vruntime is kept relative to this queue's
            // min_vruntime; a sleeper's is kept as it is, and made relative only if woken
            // elsewhere (migrate_task_rq_fair()).
            let slept = self.tasks[t.0 as usize].state == TaskState::Blocked;
            let min = self.cpus[c].vclock;
            let se = &mut self.tasks[t.0 as usize].se;
            (se.left, se.left_min, se.slept) = (c, min, slept);
            return;
        }
        let load = self.fair_load(c, Some(t));
        let task = &self.tasks[t.0 as usize];
        let sleeps = task.state == TaskState::Blocked && task.moving_to.is_none();
        if self.policy.fair_sched == FairSched::Eevdf && sleeps && !self.eligible(t, load) {
            self.tasks[t.0 as usize].se.delayed = true;
            self.cpus[c].rq.push_back(t);
            return;
        }
        self.update_entity_lag(c, t, load);
    }

    /// `pick_next_entity()` found `t` delayed: it leaves `cpu`'s queue now
    /// (`DEQUEUE_DELAYED`), with its lag, clipped at 0 (`DELAY_ZERO`: it was picked, so it was
    /// eligible).
    pub(super) fn finish_delayed_dequeue(&mut self, c: usize, t: TaskId) {
        let load = self.fair_load(c, None);
        self.update_entity_lag(c, t, load);
        self.cpus[c].rq.retain(|&x| x != t);
        let se = &mut self.tasks[t.0 as usize].se;
        se.vlag = se.vlag.min(0);
        se.delayed = false;
    }

    /// The next task of `cpu`'s queue, by the policy's fair class ([`Kernel::pick_eevdf`],
    /// [`Kernel::pick_cfs`]).
    pub(super) fn pick_fair(&self, c: usize, curr: Option<TaskId>) -> Option<TaskId> {
        if self.cfs() {
            return self.pick_cfs(c);
        }
        self.pick_eevdf(c, curr)
    }

    /// `pick_eevdf()` over `cpu`'s queue and `curr` (in the queue when it was requeued, or
    /// still running): the eligible task with the earliest deadline, an earlier-queued one on
    /// a tie, `curr` only when strictly earlier; but `curr` while it is eligible and its
    /// picked slice lasts (`RUN_TO_PARITY`).
    fn pick_eevdf(&self, c: usize, curr: Option<TaskId>) -> Option<TaskId> {
        let rq = &self.cpus[c].rq;
        let extra = curr.filter(|t| !rq.contains(t));
        let load = self.fair_load(c, extra);
        let se = |t: TaskId| &self.tasks[t.0 as usize].se;
        let curr = curr.filter(|&t| self.eligible(t, load));
        if let Some(t) = curr.filter(|&t| se(t).protect) {
            return Some(t);
        }
        let keep = |t: TaskId| Some(t) != curr && self.eligible(t, load);
        let best = self.first_queued(c, keep, |e| e.deadline);
        match (best, curr) {
            (Some(b), Some(t)) if se(t).deadline < se(b).deadline => Some(t),
            (Some(b), _) => Some(b),
            (None, t) => t.or_else(|| rq.front().copied()),
        }
    }

    /// `set_next_entity()`: `t` is picked to run; `RUN_TO_PARITY` protects its slice.
    pub(super) fn set_next_entity(&mut self, t: TaskId) {
        let se = &mut self.tasks[t.0 as usize].se;
        se.protect = true;
        se.prev_sum_exec = se.sum_exec;
        se.skip = false;
    }

    /// The tick's `update_curr()`: whether the current task used its slice with others queued
    /// (`resched_curr()`).
    pub(super) fn tick_fair(&mut self, c: usize) -> bool {
        if self.cfs() {
            return self.check_preempt_tick(c);
        }
        self.update_curr_of(c) && !self.cpus[c].rq.is_empty()
    }

    /// `yield_task_fair()`: the current task's deadline moves a slice on.
    pub(super) fn yield_task_fair(&mut self, c: usize) {
        if let Some(t) = self.fair_curr(c) {
            self.update_curr(t);
            if self.cfs() {
                self.tasks[t.0 as usize].se.skip = true;
                return;
            }
            let slice = self.fair_slice as i64;
            let se = &mut self.tasks[t.0 as usize].se;
            se.deadline += slice;
            se.protect = false;
        }
    }

    /// `check_preempt_wakeup_fair()` after `w` was queued on `cpu`: whether the current task
    /// is to be rescheduled for it. Its `update_curr()` finds no time run since
    /// [`Kernel::enqueue_entity`]'s, so it is left out.
    pub(super) fn wakeup_preempt(&self, c: usize, w: TaskId) -> bool {
        let Some(curr) = self.fair_running(c).filter(|&t| t != w) else { return false };
        if self.cfs() {
            // wakeup_preempt_entity(): more than the wake-up granularity ahead.
            let se = |t: TaskId| self.tasks[t.0 as usize].se;
            return se(curr).vruntime - se(w).vruntime > self.wakeup_gran();
        }
        self.pick_eevdf(c, Some(curr)) == Some(w)
    }

    // ----- CFS -----

    /// `sysctl_sched_latency`, scaled: eight minimum granularities.
    fn sched_latency(&self) -> i64 {
        8 * self.fair_slice as i64
    }

    /// `sysctl_sched_wakeup_granularity`, scaled: 1 ms to the minimum granularity's 0.75.
    fn wakeup_gran(&self) -> i64 {
        self.fair_slice as i64 * 4 / 3
    }

    /// `sched_slice()` of a nice-0 task among `nr` runnable: the latency period (stretched to
    /// `nr` minimum granularities past `sched_nr_latency`) shared equally.
    fn sched_slice(&self, nr: i64) -> i64 {
        let nr = nr.max(1);
        self.sched_latency().max(nr * self.fair_slice as i64) / nr
    }

    /// `update_min_vruntime()`: the least vruntime of the running and queued tasks, never going
    /// back.
    fn update_min_vruntime(&mut self, c: usize) {
        let curr = self.fair_running(c);
        let ts = self.cpus[c].rq.iter().copied().chain(curr);
        if let Some(least) = ts.map(|t| self.tasks[t.0 as usize].se.vruntime).min() {
            self.cpus[c].vclock = self.cpus[c].vclock.max(least);
        }
    }

    /// CFS's `place_entity()` (and `enqueue_entity()`'s renormalisation) of `t` on `cpu`.
    fn place_entity_cfs(&mut self, c: usize, t: TaskId) {
        self.update_min_vruntime(c);
        let min = self.cpus[c].vclock;
        let nr = self.cpus[c].rq.len() as i64 + i64::from(self.fair_curr(c).is_some()) + 1;
        let (slice, half_latency) = (self.sched_slice(nr), self.sched_latency() / 2);
        let se = &mut self.tasks[t.0 as usize].se;
        if se.initial {
            // task_fork_fair(): START_DEBIT, a new task owes a slice.
            se.vruntime = se.vruntime.max(min + slice);
            se.initial = false;
            return;
        }
        if se.left != c {
            se.vruntime = se.vruntime - se.left_min + min;
        }
        if se.slept {
            // GENTLE_FAIR_SLEEPERS: a sleeper's credit is at most half a latency.
            se.vruntime = se.vruntime.max(min - half_latency);
        }
        se.slept = false;
    }

    /// CFS's `pick_next_entity()`: the least vruntime, an earlier-queued one on a tie; when that
    /// is the skip buddy, the next one instead if it is within the wake-up granularity of it
    /// (`wakeup_preempt_entity(second, left) < 1`).
    fn pick_cfs(&self, c: usize) -> Option<TaskId> {
        let se = |t: TaskId| &self.tasks[t.0 as usize].se;
        let left = self.leftmost(c, None)?;
        if !se(left).skip {
            return Some(left);
        }
        let second = self.leftmost(c, Some(left));
        let near = |t: TaskId| se(t).vruntime - se(left).vruntime <= self.wakeup_gran();
        Some(second.filter(|&t| near(t)).unwrap_or(left))
    }

    /// The least vruntime of `cpu`'s queue but `except`, an earlier-queued one on a tie
    /// (`__pick_first_entity()`, `__pick_next_entity()`).
    fn leftmost(&self, c: usize, except: Option<TaskId>) -> Option<TaskId> {
        self.first_queued(c, |t| Some(t) != except, |e| e.vruntime)
    }

    /// The task of `cpu`'s queue that `keep` keeps with the least `key`, the earlier queued on
    /// a tie (the rbtree's leftmost: equal keys go right).
    fn first_queued(
        &self,
        c: usize,
        keep: impl Fn(TaskId) -> bool,
        key: impl Fn(&Entity) -> i64,
    ) -> Option<TaskId> {
        let rq = &self.cpus[c].rq;
        let queued = rq.iter().enumerate().filter(|&(_, &t)| keep(t));
        queued.min_by_key(|&(i, &t)| (key(&self.tasks[t.0 as usize].se), i)).map(|(_, &t)| t)
    }

    /// `check_preempt_tick()`: whether the running task has had its share.
    fn check_preempt_tick(&mut self, c: usize) -> bool {
        let Some(curr) = self.fair_running(c) else { return false };
        self.update_curr(curr);
        if self.cpus[c].rq.is_empty() {
            return false;
        }
        let ideal = self.sched_slice(self.cpus[c].rq.len() as i64 + 1);
        let se = self.tasks[curr.0 as usize].se;
        let ran = (se.sum_exec - se.prev_sum_exec) as i64;
        if ran > ideal {
            return true;
        }
        if ran < self.fair_slice as i64 {
            return false;
        }
        let least = self.leftmost(c, None).map(|t| self.tasks[t.0 as usize].se.vruntime);
        least.is_some_and(|v| se.vruntime - v > ideal)
    }
}
