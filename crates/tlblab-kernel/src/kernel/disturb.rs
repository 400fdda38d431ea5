//! Disturbances for the safety checker's perturbed schedules ([`Kernel::disturb`]): at random
//! points each CPU's task has interrupts disabled for a while (a driver's irqsave section, or a
//! vCPU preempted by the host with interrupts blocked), is preempted from user mode by a kernel
//! thread (its CPU goes lazy, then switches back), or is migrated to another CPU. Each moves the
//! flush IPIs, lazy periods and mm switches of a run to other places than the scenario's own
//! schedule puts them, deterministically from the run's seed.

use rand::RngExt;

use super::acct::Inserted;
use super::{Event, Frame, Kernel, Phase};
use crate::observer::Observer;
use crate::program::Syscall;
use tlblab_types::{CpuId, Cycles};

/// What a disturbance does to its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Disturbance {
    /// Interrupts off: IPIs wait until the window ends.
    IrqsOff,
    /// A kernel thread runs: the task's mm stays loaded lazily until the task comes back.
    KernelThread,
}

impl<O: Observer> Kernel<O> {
    /// Schedules the first disturbance of every CPU.
    pub(super) fn start_disturbing(&mut self) {
        for c in 0..self.cpus.len() {
            self.next_disturbance(CpuId(c as u16));
        }
    }

    /// Queues `cpu`'s next disturbance, a uniform draw in `[0, 2 × every]` cycles from now.
    fn next_disturbance(&mut self, cpu: CpuId) {
        let Some(p) = self.perturb.as_mut().filter(|p| p.disturb_every > 0) else { return };
        let gap = p.rng.random_range(0..=2 * p.disturb_every);
        let at = Cycles(self.queue.now().0 + gap);
        self.push(at, Event::Disturb { cpu });
    }

    /// A disturbance comes up on `cpu`: one of the three kinds, drawn uniformly. It only
    /// applies where it could happen: to a task with a step under way (not idle, not switching,
    /// interrupts on), and, for a preemption or a migration, in user mode.
    pub(super) fn disturb_now(&mut self, cpu: CpuId) {
        self.next_disturbance(cpu);
        let c = usize::from(cpu.0);
        let nr_cpus = self.cpus.len() as u16;
        let Some(p) = self.perturb.as_mut() else { return };
        let (kind, window, other) = (
            p.rng.random_range(0..3u8),
            p.rng.random_range(0..=p.max_delay),
            p.rng.random_range(1..nr_cpus.max(2)),
        );
        let st = &self.cpus[c];
        let t = st.curr;
        if t == st.idle || st.switch.is_some() || st.resume.is_none() || st.irqs_off || st.disturbed
        {
            return;
        }
        let user = self.in_user_mode(t);
        let now = self.queue.now().0;
        match kind {
            0 => {
                self.cpus[c].irqs_off = true;
                self.cpus[c].disturbed = true;
                self.delay_step(cpu, window);
                self.acct_insert(cpu, window, Inserted::Other);
                let end = Disturbance::IrqsOff;
                self.push(Cycles(now + window), Event::DisturbEnd { cpu, end });
            }
            1 if user => {
                // Preempted at an interrupt's return to user mode: the kernel thread borrows
                // the task's mm lazily (enter_lazy_tlb()).
                let cycles = self.kernel_entry(cpu)
                    + self.costs.context_switch.cycles
                    + self.latr_schedule(cpu)
                    + self.enter_lazy_tlb(cpu);
                self.cpus[c].disturbed = true;
                self.delay_step(cpu, cycles + window);
                self.acct_insert(cpu, cycles + window, Inserted::Other);
                let end = Disturbance::KernelThread;
                self.push(Cycles(now + cycles + window), Event::DisturbEnd { cpu, end });
            }
            2 if user && nr_cpus > 1 => {
                // Migrated at its next step, as by sched_setaffinity() (the stopper moves it).
                let target = CpuId((cpu.0 + other) % nr_cpus);
                let call = Some(Syscall::SetAffinity { cpu: target });
                self.push_frame(t, Frame::Syscall { call, phase: Phase::Entry });
            }
            _ => {}
        }
    }

    /// A disturbance of `cpu` ends: interrupts on again, or the task switches back from the
    /// kernel thread (catching up on its mm if the mm moved on while it was lazy) and returns
    /// to user mode.
    pub(super) fn disturbance_ends(&mut self, cpu: CpuId, end: Disturbance) {
        let c = usize::from(cpu.0);
        self.cpus[c].disturbed = false;
        match end {
            Disturbance::IrqsOff => {
                self.cpus[c].irqs_off = false;
                self.queue_drain(cpu);
            }
            Disturbance::KernelThread => {
                let t = self.cpus[c].curr;
                let mm = self.tasks[t.0 as usize].mm.expect("only user tasks are preempted");
                let cycles = self.costs.context_switch.cycles
                    + self.latr_schedule(cpu)
                    + self.switch_mm_irqs_off(cpu, mm)
                    + self.return_to_user(cpu);
                self.delay_step(cpu, cycles);
                self.acct_insert(cpu, cycles, Inserted::Other);
            }
        }
    }
}
