//! Idle states (docs/kernel-model.md, "Idle states"): which state an idle CPU enters, what
//! leaving it costs, and what entering it does to the TLB and, before 6.x, to lazy TLB mode.
//!
//! The choice follows the menu governor's core rule (`drivers/cpuidle/governors/menu.c`): the
//! deepest state whose target residency is within the predicted idle length, the prediction
//! being the typical length of the CPU's recent idle periods (`get_typical_interval()`, here
//! their mean over the last 8), bounded by the next timer event (the next tick). A CPU that interrupts and handlers keep waking every few µs
//! predicts short idle periods and stays in a shallow state; only a CPU left alone for long
//! reaches a deep one. An interrupt that arrives in a state waits for its exit latency, during
//! which the CPU is still idle.
//!
//! A KVM guest's cpuidle-haltpoll driver asks for the haltpoll governor instead
//! (`drivers/cpuidle/governors/haltpoll.c`, 5.4+, as of 6.18; preset `[idle.haltpoll]`,
//! mechanism `haltpoll`): an idle vCPU polls for up to its poll window, then halts; the window
//! starts at 0 and adapts after each halt to the halt's length, within `guest_halt_poll_ns`. A
//! window of 0 (with `guest_halt_poll_ns = 0` it never grows) means every idle period halts.

use super::{Kernel, LoadedMm};
use crate::ids::MmId;
use crate::observer::Observer;
use tlblab_sim::machine::MachineSpec;
use tlblab_types::{CpuId, Cycles};

/// Idle periods the prediction looks at (menu.c's `INTERVALS`).
const INTERVALS: usize = 8;

/// One idle state at the machine's clock.
#[derive(Clone, Debug)]
pub(super) struct IdleState {
    /// Its name (`POLL`, `C1`, `C6`).
    pub name: String,
    /// From the wake-up to the CPU running, cycles.
    pub exit: u64,
    /// The shortest idle period it pays off for, cycles.
    pub residency: u64,
    /// `CPUIDLE_FLAG_TLB_FLUSHED`: the core loses its TLBs.
    pub tlb_flushed: bool,
}

/// The machine's idle states, `POLL` first: the preset's `[idle]` table, or without one (or
/// with `table` false: the `idle-states` mechanism off) a single state left at
/// `kernel.idle_exit`.
pub(super) fn idle_states(spec: &MachineSpec, mhz: u64, table: bool) -> Vec<IdleState> {
    let poll = IdleState { name: "POLL".into(), exit: 0, residency: 0, tlb_flushed: false };
    let cycles = |ns: u64| (ns * mhz).div_ceil(1000);
    let mut states = vec![poll];
    match spec.raw().idle.as_ref().filter(|_| table) {
        Some(idle) => states.extend(idle.states.iter().map(|s| IdleState {
            name: s.name.clone(),
            exit: cycles(s.exit_latency_ns),
            residency: cycles(s.target_residency_ns),
            tlb_flushed: s.tlb_flushed,
        })),
        None => {
            let exit = spec.raw().kernel.as_ref().map_or(0, |k| k.idle_exit.cycles);
            states.push(IdleState {
                name: "idle".into(),
                exit,
                residency: exit,
                tlb_flushed: false,
            });
        }
    }
    states
}

/// The haltpoll governor's parameters at the machine's clock (the kernel keeps ns; the model
/// grows and shrinks the window in cycles, which at one clock is the same rule).
#[derive(Clone, Copy, Debug)]
pub(super) struct Haltpoll {
    max: u64,
    grow: u64,
    grow_start: u64,
    shrink: u64,
    allow_shrink: bool,
}

/// Whether the preset says no cpuidle driver runs (`[idle] cpuidle = false`) and the state
/// table is on: an idle CPU then halts at once in the first state, never polling.
pub(super) fn no_cpuidle(spec: &MachineSpec, table: bool) -> bool {
    spec.raw().idle.as_ref().filter(|_| table).is_some_and(|i| !i.cpuidle)
}

/// The preset's haltpoll governor, if it has one and the state table is on (it needs
/// cpuidle-haltpoll's one halt state besides `POLL`).
pub(super) fn haltpoll(spec: &MachineSpec, mhz: u64, table: bool) -> Option<Haltpoll> {
    let h = spec.raw().idle.as_ref().filter(|_| table)?.haltpoll.as_ref()?;
    let cycles = |ns: u64| (ns * mhz).div_ceil(1000);
    Some(Haltpoll {
        max: cycles(h.guest_halt_poll_ns),
        grow: h.guest_halt_poll_grow,
        grow_start: cycles(h.guest_halt_poll_grow_start),
        shrink: h.guest_halt_poll_shrink,
        allow_shrink: h.guest_halt_poll_allow_shrink,
    })
}

impl Haltpoll {
    /// `adjust_poll_limit()`: after a halt of `block` cycles, a halt that a longer window
    /// (within the maximum) would have polled through grows the window, at least to
    /// `grow_start`; a halt longer than the maximum shrinks it (divides it; 0 shrinks to 0).
    fn adjust(&self, limit: u64, block: u64) -> u64 {
        if block > limit && block <= self.max {
            limit.saturating_mul(self.grow).max(self.grow_start).min(self.max)
        } else if block > self.max && self.allow_shrink {
            limit.checked_div(self.shrink).unwrap_or(0)
        } else {
            limit
        }
    }
}

/// A CPU's idle-state bookkeeping.
#[derive(Clone, Debug, Default)]
pub(super) struct CpuIdle {
    /// The state the CPU is in (`None`: running, or waking up).
    pub state: Option<usize>,
    /// When it entered it.
    pub since: Cycles,
    /// The last idle periods' lengths, a ring.
    history: [u64; INTERVALS],
    recorded: usize,
    /// Entries per state, for the report.
    pub entries: Vec<u64>,
    /// The haltpoll governor's poll window (`dev->poll_limit_ns`), cycles; 0 at boot.
    poll_limit: u64,
    /// It left a halting state (any but `POLL`) for the interrupt it is taking: in a guest the
    /// vCPU was out of guest mode, so the interrupt is injected at its entry, with no exit.
    pub left_halt: bool,
}

impl CpuIdle {
    /// With the haltpoll governor: whether a poll that began at `since` has run out of its
    /// window by `now` (`poll_idle()`'s time limit), so that the vCPU halted at its end.
    fn poll_ran_out(&self, now: Cycles) -> bool {
        self.state == Some(0) && self.poll_limit > 0 && now.0 - self.since.0 >= self.poll_limit
    }
}

impl CpuIdle {
    /// The predicted idle length: the mean of the recorded periods, at most `next_timer` (the
    /// governor never predicts past the next timer event; here the next tick, the model's only
    /// timer).
    fn predicted(&self, next_timer: u64) -> u64 {
        let n = self.recorded.min(INTERVALS);
        if n == 0 {
            return next_timer;
        }
        (self.history[..n].iter().sum::<u64>() / n as u64).min(next_timer)
    }

    fn record(&mut self, length: u64) {
        self.history[self.recorded % INTERVALS] = length;
        self.recorded += 1;
    }
}

impl<O: Observer> Kernel<O> {
    /// Limits idle CPUs to the first `n` states of the machine's table besides `POLL`, as the
    /// boot parameters `intel_idle.max_cstate=n` / `processor.max_cstate=n` do (0: poll only,
    /// as `idle=poll`). Call it before the scenario is installed.
    pub fn set_max_cstate(&mut self, n: usize) {
        self.idle_states.truncate(n + 1);
        if n == 0 {
            // Poll only: no state for the haltpoll governor to halt in.
            self.haltpoll = None;
        }
        for c in 0..self.cpus.len() {
            let st = &mut self.cpus[c].cstate;
            if st.state.is_some_and(|s| s > n) {
                st.state = Some(n);
            }
        }
    }

    /// Whether idle `cpu` polls with `TIF_POLLING_NRFLAG` set, so that a wake-up needs no IPI
    /// (mechanism `poll-wake`): it is in the `POLL` state, as every idle CPU with `idle=poll`
    /// (`do_idle()` sets the flag, `cpu_idle_poll()` spins) and a CPU whose governor chose
    /// cpuidle's `POLL` state (`poll_idle()` sets it too). A preempted vCPU keeps the flag:
    /// the wake-up waits for the host to run it.
    pub(super) fn polls(&self, cpu: CpuId) -> bool {
        let st = &self.cpus[usize::from(cpu.0)].cstate;
        self.config.mechanisms.is_on(crate::mechanisms::Mechanism::PollWake)
            && st.state == Some(0)
            && !(self.haltpoll.is_some() && st.poll_ran_out(self.queue.now()))
    }

    /// The deepest state count that keeps the TLB (no `CPUIDLE_FLAG_TLB_FLUSHED`).
    pub(super) fn shallow_cstates(&self) -> usize {
        self.idle_states.iter().skip(1).take_while(|s| !s.tlb_flushed).count()
    }

    /// `cpu` goes idle at `at` (`cpuidle_idle_call()`): the governor picks a state; a state
    /// that powers the core down loses its TLBs, and a kernel that does so calls `leave_mm()`
    /// first (`Policy::idle_leave_mm`).
    pub(super) fn enter_idle(&mut self, cpu: CpuId, at: Cycles) {
        let c = usize::from(cpu.0);
        let state = if self.no_cpuidle && self.idle_states.len() > 1 {
            // default_idle_call(): no driver, no governor: halt at once.
            1
        } else if self.haltpoll.is_some() {
            // haltpoll_select(): halt while the window is 0, else poll first. (A poll that ran
            // out halts within the same idle period: poll_ran_out().)
            usize::from(self.cpus[c].cstate.poll_limit == 0)
        } else {
            let predicted = self.cpus[c].cstate.predicted(self.tick_cycles);
            (1..self.idle_states.len())
                .rev()
                .find(|&i| self.idle_states[i].residency <= predicted)
                .unwrap_or(0)
        };
        let st = &mut self.cpus[c].cstate;
        st.state = Some(state);
        st.since = at;
        if st.entries.len() < self.idle_states.len() {
            st.entries.resize(self.idle_states.len(), 0);
        }
        st.entries[state] += 1;
        if !self.idle_states[state].tlb_flushed {
            return;
        }
        if self.policy.idle_leave_mm && self.cpus[c].tlb.is_lazy {
            // NOTE: intel_idle up to at least 4.14 called leave_mm() before a state with
            // CPUIDLE_FLAG_TLB_FLUSHED, "to avoid costly and often unnecessary wakeups for
            // flushing the user TLB's associated with the active mm": the CPU moves to
            // init_mm (and, before 4.14's rework, out of the mm's cpumask), so flushes stop
            // reaching it. Its cycles are spent before the CPU halts: idle time here.
            if matches!(self.cpus[c].tlb.loaded_mm, LoadedMm::Mm(mm) if mm != MmId::INIT_MM) {
                self.switch_mm_irqs_off(cpu, MmId::INIT_MM);
            }
        }
        self.hw[c].lose_translations(&mut self.hw_stats[c]);
    }

    /// An interrupt reaches idle `cpu` now: returns the exit latency it must wait for before
    /// its handler runs (0 when the CPU polls, or entered its state only now).
    pub(super) fn leave_idle(&mut self, cpu: CpuId) -> u64 {
        let now = self.queue.now();
        let st = &mut self.cpus[usize::from(cpu.0)].cstate;
        if now <= st.since {
            st.state = None;
            return 0;
        }
        let Some(h) = self.haltpoll else {
            let Some(state) = st.state.take() else { return 0 };
            st.record(now.0 - st.since.0);
            st.left_halt = state > 0;
            return self.idle_states[state].exit;
        };
        let mut halted_at = st.since;
        if st.poll_ran_out(now) {
            // The poll ran out of its window: the governor then chose the halt state.
            halted_at = Cycles(st.since.0 + st.poll_limit);
            st.entries[1] += 1;
            st.state = Some(1);
        }
        match st.state.take() {
            Some(0) | None => 0,
            Some(state) => {
                // haltpoll_reflect() after a halt.
                st.poll_limit = h.adjust(st.poll_limit, now.0 - halted_at.0);
                st.left_halt = true;
                self.idle_states[state].exit
            }
        }
    }

    /// Idle-state entries since the start of the measurement, all CPUs, in table order.
    pub(crate) fn idle_entries(&self) -> Vec<crate::stats::IdleEntries> {
        let mut entries: Vec<crate::stats::IdleEntries> = self
            .idle_states
            .iter()
            .map(|s| crate::stats::IdleEntries { state: s.name.clone(), entries: 0 })
            .collect();
        for c in &self.cpus {
            for (e, n) in entries.iter_mut().zip(&c.cstate.entries) {
                e.entries += n;
            }
        }
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::Haltpoll;

    /// `adjust_poll_limit()` (drivers/cpuidle/governors/haltpoll.c) with the module's defaults
    /// (a 200 µs maximum, grow 2 from 50 µs, shrink 2), in µs.
    #[test]
    fn the_poll_window_adapts_as_haltpoll_adjusts_it() {
        let h = Haltpoll { max: 200, grow: 2, grow_start: 50, shrink: 2, allow_shrink: true };
        // A halt a window would have caught grows it: from 0 to grow_start, then doubled, at
        // most to the maximum.
        assert_eq!(h.adjust(0, 30), 50);
        assert_eq!(h.adjust(50, 80), 100);
        assert_eq!(h.adjust(100, 150), 200);
        assert_eq!(h.adjust(150, 180), 200);
        // A halt within the window (it polled out first) or at the maximum leaves it.
        assert_eq!(h.adjust(100, 100), 100);
        assert_eq!(h.adjust(100, 60), 100);
        // A halt longer than the maximum shrinks it, unless shrinking is off; shrink 0 zeroes.
        assert_eq!(h.adjust(200, 201), 100);
        assert_eq!(Haltpoll { allow_shrink: false, ..h }.adjust(200, 500), 200);
        assert_eq!(Haltpoll { shrink: 0, ..h }.adjust(200, 500), 0);
        // guest_halt_poll_ns = 0: the window never opens.
        let off = Haltpoll { max: 0, ..h };
        assert_eq!(off.adjust(0, 1), 0);
        assert_eq!(off.adjust(0, 1_000_000), 0);
    }
}
