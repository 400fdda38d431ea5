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
        self.config.mechanisms.is_on(crate::mechanisms::Mechanism::PollWake)
            && self.cpus[usize::from(cpu.0)].cstate.state == Some(0)
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
        let predicted = self.cpus[c].cstate.predicted(self.tick_cycles);
        let state = (1..self.idle_states.len())
            .rev()
            .find(|&i| self.idle_states[i].residency <= predicted)
            .unwrap_or(0);
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
        let Some(state) = st.state.take() else { return 0 };
        if now <= st.since {
            return 0;
        }
        st.record(now.0 - st.since.0);
        self.idle_states[state].exit
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
