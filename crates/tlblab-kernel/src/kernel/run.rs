//! The event loop, the scheduler and the steps of each frame.

use super::acct::{Activity, Inserted};
use super::kflush::{KernelFlush, VMALLOC_PAGE};
use super::wake::Kick;
use super::*;
use crate::mm::{Pte, VmaId};
use crate::observer::{SwitchEvent, SwitchedOut};
use crate::policy::{FlushInfo, Pti};
use crate::program::{Action, Env};
use std::sync::atomic::Ordering;
use tlblab_types::{Access, AccessKind, Page, PageSize};

/// What a step did.
pub(super) enum Step {
    /// Go on at once.
    Next,
    /// Spend cycles, then go on.
    Spend(u64, Mode),
    /// Nothing to do until an event arrives (blocked, waiting, idle).
    Wait,
}

impl<O: Observer> Kernel<O> {
    /// Runs until every essential task has exited or the time limit; returns whether all
    /// essential tasks finished.
    pub fn run(&mut self) -> bool {
        self.run_until(self.config.time_limit)
    }

    /// Runs the events up to `limit` (or until every essential task has exited); returns
    /// whether all essential tasks finished.
    pub fn run_until(&mut self, limit: Cycles) -> bool {
        // Only a run to its end stops when it can never end: a caller that runs to an earlier
        // time may wake tasks itself before it goes on.
        let to_the_end = limit >= self.config.time_limit;
        while self.essential_left > 0 {
            if self.queue.peek().is_none_or(|k| k.time > limit) {
                break;
            }
            if self.queue.popped() >= self.config.event_limit {
                self.event_limit_hit = true; // `event_limit_reached` tells the caller
                break;
            }
            // An atomic load every few thousand events: nothing next to an event's cost.
            if self.stopped
                || (self.queue.popped().is_multiple_of(super::STOP_CHECK_EVENTS)
                    && self.stop.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)))
            {
                self.stopped = true; // `event_limit_reached` tells the caller
                break;
            }
            let Some((_, event)) = self.queue.pop() else { break };
            if event.is_periodic() {
                self.periodic_queued -= 1;
                if to_the_end && self.deadlocked() {
                    self.deadlock_hit = true; // `event_limit_reached` tells the caller
                    break;
                }
            }
            match event {
                Event::Resume { cpu, gen } => {
                    let c = usize::from(cpu.0);
                    match self.cpus[c].resume {
                        Some(_) if self.cpus[c].resume_gen != gen => {} // replaced
                        // Interrupts delayed the step: its event moves (one event however
                        // many interrupts came).
                        Some(at) if at > self.queue.now() => {
                            self.push(at, Event::Resume { cpu, gen });
                        }
                        Some(_) => {
                            self.cpus[c].resume = None;
                            self.stepping = Some(cpu);
                            self.run_cpu(cpu);
                            self.stepping = None;
                        }
                        None => {}
                    }
                }
                Event::Ipi { cpu, ipi } => self.ipi_arrives(cpu, ipi),
                Event::IrqDrain { cpu } => self.irq_drain(cpu),
                Event::Ack { call } => self.ack(call),
                Event::Tick { cpu } => self.tick(cpu),
                Event::Disturb { cpu } => {
                    self.disturb_events += 1;
                    self.disturb_now(cpu);
                }
                Event::DisturbEnd { cpu, end } => self.disturbance_ends(cpu, end),
                Event::VcpuPreempt { cpu } => self.vcpu_slice_ends(cpu),
                Event::VcpuResume { cpu } => self.vcpu_resumes(cpu),
            }
        }
        self.essential_left == 0
    }

    pub(super) fn push(&mut self, at: Cycles, event: Event) {
        let cpu = match event {
            Event::Ipi { cpu, .. }
            | Event::IrqDrain { cpu }
            | Event::Resume { cpu, .. }
            | Event::Tick { cpu }
            | Event::Disturb { cpu }
            | Event::DisturbEnd { cpu, .. }
            | Event::VcpuPreempt { cpu }
            | Event::VcpuResume { cpu } => cpu.0,
            Event::Ack { call } => self.calls[call.0 as usize].info.initiating_cpu.0,
        };
        self.periodic_queued += u64::from(event.is_periodic());
        self.queue.push(at, event.class(), u32::from(cpu), event);
    }

    /// Schedules `cpu`'s next step at `at` (replacing any pending one).
    fn resume_at(&mut self, cpu: CpuId, at: Cycles) {
        let c = &mut self.cpus[usize::from(cpu.0)];
        c.resume_gen += 1;
        c.resume = Some(at);
        let gen = c.resume_gen;
        self.push(at, Event::Resume { cpu, gen });
    }

    /// Runs `cpu`'s steps until one costs time or waits.
    fn run_cpu(&mut self, cpu: CpuId) {
        let c = usize::from(cpu.0);
        self.acct_close(cpu);
        loop {
            let step = match self.cpus[c].switch.take() {
                Some(sw) => self.switch_step(cpu, sw),
                None => self.task_step(cpu),
            };
            match step {
                Step::Next => continue,
                Step::Spend(cycles, mode) => {
                    let activity = match mode {
                        Mode::User => Activity::User,
                        Mode::Sys => Activity::Sys,
                    };
                    self.acct_open(cpu, activity, self.cpus[c].curr);
                    let at = Cycles(self.queue.now().0 + cycles);
                    self.resume_at(cpu, at);
                    return;
                }
                Step::Wait => {
                    // Idle, or spinning in csd_lock_wait() until the acknowledgements are in:
                    // system time (accounting defect 1 of issue 17).
                    let curr = self.cpus[c].curr;
                    if curr == self.cpus[c].idle {
                        self.acct_open(cpu, Activity::Idle, curr);
                        self.enter_idle(cpu, self.queue.now());
                    } else {
                        self.acct_open(cpu, Activity::Sys, curr);
                    }
                    return;
                }
            }
        }
    }

    // ----- scheduler -----

    /// Puts a runnable task on its CPU's run queue, waking the CPU if idle; says how the CPU
    /// was told ([`Kick`]). A wake-up by another task goes through
    /// [`Kernel::try_to_wake_up`], which charges the waker for it.
    pub(super) fn enqueue(&mut self, t: TaskId) -> Kick {
        // A delayed sleeper (DELAY_DEQUEUE) is still queued: it is woken in place.
        let queued = self.fair_class() && self.delayed(t);
        let slice_used = self.fair_class() && self.enqueue_entity(t);
        let task = &mut self.tasks[t.0 as usize];
        task.state = TaskState::Runnable;
        let cpu = task.cpu;
        let c = usize::from(cpu.0);
        if !queued {
            self.cpus[c].rq.push_back(t);
        }
        let idle = self.cpus[c].curr == self.cpus[c].idle && self.cpus[c].switch.is_none();
        if !idle && (slice_used || self.fair_class() && self.wakeup_preempt(c, t)) {
            // resched_curr(): the flag now, and a reschedule IPI to another CPU so that it
            // acts on it at its next return from the interrupt. NOTE: a CPU in a long user
            // step (`Compute`) acts on it at the step's end.
            self.cpus[c].need_resched = true;
            if self.stepping != Some(cpu) {
                let at = Cycles(self.queue.now().0 + self.reschedule_ipi_delay());
                self.push(at, Event::Ipi { cpu, ipi: Ipi::Reschedule });
                return Kick::Ipi;
            }
            return Kick::Local;
        }
        if !idle {
            return Kick::Busy;
        }
        if self.cpus[c].resume.is_some() {
            // Already on its way out of idle: the task runs when it gets there.
            return Kick::Local;
        }
        let (at, ipi) = if self.polls(cpu) {
            // resched_curr() (or, across LLCs, ttwu_queue_remote()) finds the idle task's
            // TIF_POLLING_NRFLAG: set_nr_and_not_polling() (set_nr_if_polling()) sets
            // TIF_NEED_RESCHED and sends no IPI; the polling loop sees the flag once its
            // thread_info line, which the waker wrote, reaches it.
            self.counters.poll_wakes += 1;
            (self.costs.cache_line_transfer.cycles, Ipi::PollWake)
        } else {
            // The CPU is halted: the wake-up reaches it as a reschedule IPI, delayed by the
            // waker's ICR write (an exit in a guest, which try_to_wake_up() charges the waker).
            (self.reschedule_ipi_delay(), Ipi::Reschedule)
        };
        self.push(Cycles(self.queue.now().0 + at), Event::Ipi { cpu, ipi });
        if matches!(ipi, Ipi::PollWake) {
            Kick::Polled
        } else {
            Kick::Ipi
        }
    }

    /// How long a reschedule IPI takes to reach its CPU: the sender's exit in a guest, the
    /// IPI's latency and its jitter.
    pub(super) fn reschedule_ipi_delay(&mut self) -> u64 {
        let delay = self.guest_send_cycles(0) + self.costs.ipi_latency.cycles;
        delay + self.ipi_jitter()
    }

    /// Starts a context switch on `cpu` to the next runnable task (or idle). The current task
    /// must already be requeued, blocked or dead.
    pub(super) fn schedule(&mut self, cpu: CpuId) -> Step {
        let c = usize::from(cpu.0);
        let next =
            if self.fair_class() { self.pick_next_fair(c) } else { self.cpus[c].rq.pop_front() };
        let next = next.unwrap_or(self.cpus[c].idle);
        self.cpus[c].need_resched = false;
        if next == self.cpus[c].curr {
            self.tasks[next.0 as usize].state = TaskState::Running;
            return Step::Next;
        }
        let prev = self.cpus[c].curr;
        let idle = self.cpus[c].idle;
        let prev_state = match self.tasks[prev.0 as usize].state {
            _ if prev == idle => SwitchedOut::Idle,
            TaskState::Runnable | TaskState::Running => SwitchedOut::Preempted,
            TaskState::Blocked => SwitchedOut::Blocked,
            TaskState::Dead => SwitchedOut::Exited,
        };
        let report = &mut self.tasks[prev.0 as usize].report;
        match prev_state {
            SwitchedOut::Blocked => report.voluntary_switches += 1,
            SwitchedOut::Preempted => report.involuntary_switches += 1,
            SwitchedOut::Idle | SwitchedOut::Exited => {}
        }
        let event = SwitchEvent {
            time: self.queue.now(),
            cpu,
            prev,
            next,
            prev_state,
            prev_mm: self.tasks[prev.0 as usize].mm,
            next_mm: self.tasks[next.0 as usize].mm,
            next_idle: next == idle,
        };
        self.observer.sched_switch(&event);
        self.cpus[c].switch = Some(Switch { next, phase: SwitchPhase::Start });
        Step::Next
    }

    /// `pick_next_task_fair()`: `cpu`'s current task is put back (requeued, or leaving) and
    /// the next one taken off the queue.
    fn pick_next_fair(&mut self, c: usize) -> Option<TaskId> {
        let prev = self.cpus[c].curr;
        let mut requeued = None;
        if prev != self.cpus[c].idle && self.cpus[c].switch.is_none() {
            let task = &self.tasks[prev.0 as usize];
            let leaves = task.state != TaskState::Runnable || task.moving_to.is_some();
            self.put_prev_entity(c, prev, leaves);
            requeued = Some(prev).filter(|_| !leaves);
        }
        let mut next = self.pick_fair(c, requeued)?;
        while self.delayed(next) {
            // pick_next_entity(): a delayed sleeper picked leaves now; pick again.
            self.finish_delayed_dequeue(c, next);
            next = self.pick_fair(c, requeued)?;
        }
        let rq = &mut self.cpus[c].rq;
        let i = rq.iter().position(|&t| t == next).expect("picked from the queue");
        rq.remove(i);
        if Some(next) != requeued {
            self.set_next_entity(next);
        }
        Some(next)
    }

    /// One step of a context switch (`__schedule()` → `context_switch()`).
    fn switch_step(&mut self, cpu: CpuId, mut sw: Switch) -> Step {
        let c = usize::from(cpu.0);
        let next_mm = self.tasks[sw.next.0 as usize].mm;
        let step = match sw.phase {
            SwitchPhase::Start => {
                self.cpus[c].irqs_off = true;
                sw.phase = SwitchPhase::Mm;
                Step::Spend(self.costs.context_switch.cycles + self.latr_schedule(cpu), Mode::Sys)
            }
            SwitchPhase::Mm => match next_mm {
                // A kernel thread borrows the loaded mm lazily.
                None => {
                    let cycles = self.enter_lazy_tlb(cpu);
                    sw.phase = SwitchPhase::Finish;
                    Step::Spend(cycles, Mode::Sys)
                }
                Some(mm) => {
                    let xpfo = self.xpfo_switch_flush(cpu);
                    let (phase, cycles) = match self.switch_mm_begin(cpu, mm) {
                        // The TLB-state stores of these paths (mechanism tlbstate-lines).
                        switch::SwitchBegin::Done => {
                            (SwitchPhase::Finish, self.take_cpumask_cycles(cpu))
                        }
                        switch::SwitchBegin::Reload(ns) => {
                            (SwitchPhase::Load(Some(ns)), self.take_cpumask_cycles(cpu))
                        }
                        switch::SwitchBegin::Switching => {
                            let checks = self.la57_checks(LA57_CHECKS_SWITCH_MM);
                            let ibpb = self.cond_mitigation(cpu, mm);
                            let cpumask = self.take_cpumask_cycles(cpu);
                            let cycles = self.costs.switch_mm.cycles + checks + ibpb + cpumask;
                            (SwitchPhase::Load(None), cycles)
                        }
                    };
                    sw.phase = phase;
                    match xpfo + cycles {
                        0 => Step::Next,
                        cycles => Step::Spend(cycles, Mode::Sys),
                    }
                }
            },
            SwitchPhase::Load(forced) => {
                let mm = next_mm.expect("user task");
                let (asid, cycles) = self.switch_mm_load(cpu, mm, forced);
                sw.phase = SwitchPhase::End(asid);
                // Perturbed schedules: an NMI or a vCPU preemption may stall the CPU between
                // reading tlb_gen and publishing loaded_mm, interrupts off or not.
                Step::Spend(cycles + self.ipi_jitter(), Mode::Sys)
            }
            SwitchPhase::End(asid) => {
                self.switch_mm_end(cpu, next_mm.expect("user task"), asid);
                sw.phase = SwitchPhase::Finish;
                Step::Next
            }
            SwitchPhase::Finish => {
                return self.finish_switch(cpu, sw.next);
            }
        };
        self.cpus[c].switch = Some(sw);
        step
    }

    /// `finish_task_switch()`: the next task runs; interrupts are enabled again.
    fn finish_switch(&mut self, cpu: CpuId, next: TaskId) -> Step {
        let c = usize::from(cpu.0);
        let now = self.queue.now();
        let prev = self.cpus[c].curr;
        self.cpus[c].curr = next;
        if let Some(target) = self.tasks[prev.0 as usize].moving_to.take() {
            self.tasks[prev.0 as usize].cpu = target;
            self.enqueue(prev);
        }
        let t = &mut self.tasks[next.0 as usize];
        t.state = TaskState::Running;
        t.slice_start = now;
        let mut cycles = 0;
        if next != self.cpus[c].idle && self.in_user_mode(next) {
            // A task that was in user mode (new, or preempted there) returns to it.
            cycles += self.return_to_user(cpu);
        }
        self.irqs_on(cpu);
        if next == self.cpus[c].idle {
            // The idle loop checks need_resched before it halts: a task woken while this CPU
            // was switching to idle (enqueue() sends no IPI to a CPU mid-switch) runs now.
            if !self.cpus[c].rq.is_empty() {
                return self.schedule(cpu);
            }
            return Step::Wait;
        }
        if cycles > 0 {
            Step::Spend(cycles, Mode::Sys)
        } else {
            Step::Next
        }
    }

    /// Interrupts are enabled again: waiting IPIs are taken now, one after another.
    fn irqs_on(&mut self, cpu: CpuId) {
        self.cpus[usize::from(cpu.0)].irqs_off = false;
        self.queue_drain(cpu);
    }

    // ----- interrupts -----

    /// An IPI reaches `cpu`: taken now, or queued behind the interrupts already waiting (in
    /// a handler, or with interrupts off).
    fn ipi_arrives(&mut self, cpu: CpuId, ipi: Ipi) {
        let c = usize::from(cpu.0);
        let busy = self.cpus[c].irqs_off
            || self.cpus[c].irq_free_at > self.queue.now()
            || !self.cpus[c].pending_ipis.is_empty();
        if busy {
            self.cpus[c].pending_ipis.push_back(ipi);
            self.queue_drain(cpu);
        } else {
            self.take_ipi(cpu, ipi);
        }
    }

    /// Queues the event that takes `cpu`'s next waiting IPI when its handler is free.
    pub(super) fn queue_drain(&mut self, cpu: CpuId) {
        let c = &self.cpus[usize::from(cpu.0)];
        if c.irqs_off || c.drain_queued || c.pending_ipis.is_empty() {
            return;
        }
        let at = c.irq_free_at.max(self.queue.now());
        self.cpus[usize::from(cpu.0)].drain_queued = true;
        self.push(at, Event::IrqDrain { cpu });
    }

    fn irq_drain(&mut self, cpu: CpuId) {
        let c = usize::from(cpu.0);
        self.cpus[c].drain_queued = false;
        if self.cpus[c].irqs_off {
            return; // irqs_on() queues it again
        }
        if self.cpus[c].irq_free_at > self.queue.now() {
            self.queue_drain(cpu);
            return;
        }
        if let Some(ipi) = self.cpus[c].pending_ipis.pop_front() {
            self.take_ipi(cpu, ipi);
        }
        self.queue_drain(cpu);
    }

    /// Runs the handler of `ipi` on `cpu` now.
    fn take_ipi(&mut self, cpu: CpuId, ipi: Ipi) {
        let c = usize::from(cpu.0);
        let now = self.queue.now();
        let idle = self.cpus[c].curr == self.cpus[c].idle && self.cpus[c].switch.is_none();
        if idle {
            // The handler runs once the CPU is out of its idle state; interrupts that come
            // meanwhile queue behind this one.
            let exit = self.leave_idle(cpu);
            if exit > 0 {
                self.cpus[c].pending_ipis.push_front(ipi);
                self.cpus[c].irq_free_at = Cycles(now.0 + exit);
                self.queue_drain(cpu);
                return;
            }
        }
        // In a guest without posted interrupts a running vCPU first exits to have the interrupt
        // injected; a halted one is out of guest mode already, and gets it at its entry.
        let injection = if std::mem::take(&mut self.cpus[c].cstate.left_halt) {
            0
        } else {
            self.guest_receive_cycles()
        };
        let mut cycles = match ipi {
            // The polling loop left idle by itself: no handler, nothing to inject.
            Ipi::PollWake if !idle => return,
            Ipi::PollWake => 0,
            _ => self.costs.ipi_handler.cycles + injection,
        };
        let invalidation = self.counters.broadcast.invalidation_cycles;
        match ipi {
            // flush_smp_call_function_queue(): every call queued so far runs in this one
            // interrupt. Calls queued from now on find the queue empty and send a new IPI.
            Ipi::CallFunction => {
                while let Some((csd, slot)) = self.cpus[c].csd_queue.pop_front() {
                    cycles = self.run_csd(cpu, csd, slot, cycles);
                }
            }
            Ipi::Call(csd, slot) => cycles = self.run_csd(cpu, csd, slot as usize, cycles),
            Ipi::Reschedule => self.counters.irq_resched[c] += 1,
            Ipi::PollWake => {}
        }
        // The interrupt's exit and return on a running target, after the calls were
        // acknowledged: the initiators do not wait for it. (A CPU woken from idle pays its
        // state's exit latency instead, which for a halted vCPU is its whole wake-up.)
        // The refill an INVLPG that dropped everything left comes after the acknowledgement
        // too, on a CPU woken from idle as well.
        let exit = self.kernel_refill(cpu)
            + if matches!(ipi, Ipi::PollWake) || idle { 0 } else { self.costs.ipi_return.cycles };
        cycles += exit;
        if self.counters.broadcast.invalidation_cycles != invalidation {
            // The interrupt's entry and exit, once however many flushes it ran.
            self.counters.broadcast.invalidation_cycles += self.costs.ipi_handler.cycles + exit;
        }
        let from_user = !idle
            && self.cpus[c].switch.is_none()
            && self.cpus[c].resume.is_some()
            && self.in_user_mode(self.cpus[c].curr);
        if from_user && self.policy.pti != Pti::Off {
            // The handler entered from user space: SWITCH_TO_KERNEL_CR3 on entry, and
            // SWITCH_TO_USER_CR3 (with any pending user-PCID flush) on the way back.
            cycles += self.kernel_entry(cpu) + self.return_to_user(cpu);
        }
        self.acct_insert(cpu, cycles, Inserted::Irq);
        let end = Cycles(now.0 + cycles);
        self.cpus[c].irq_free_at = end;
        if !self.delay_step(cpu, cycles) && idle {
            if self.cpus[c].rq.is_empty() {
                // Nothing to run: back to idle when the handler ends.
                self.enter_idle(cpu, end);
            } else {
                // Woken from idle: schedule at the end of the handler.
                self.schedule(cpu);
                self.resume_at(cpu, end);
            }
        }
    }

    /// Runs `csd` (its call's `slot`-th) in a handler of `cpu` that has spent `cycles` so far;
    /// returns the handler's cycles after it. The call reads its csd and `flush_tlb_info` from
    /// the initiator's cache and unlocks its csd when done.
    fn run_csd(&mut self, cpu: CpuId, csd: Csd, slot: usize, mut cycles: u64) -> u64 {
        let (Csd::Flush(call) | Csd::KernelFlush(call)) = csd;
        // The csd's line, which its initiator filled.
        let line =
            self.line_move_cycles(Some(self.calls[call.0 as usize].info.initiating_cpu.0), cpu.0);
        cycles += line;
        match csd {
            Csd::Flush(call) => {
                let func = self.flush_tlb_func(cpu, call);
                cycles += func;
                // The handler's share of invalidation: the csd's line and flush_tlb_func() (the
                // interrupt's entry and exit are added once per interrupt).
                self.counters.broadcast.invalidation_cycles += func + line;
            }
            Csd::KernelFlush(call) => cycles += self.do_kernel_range_flush(cpu, call, cycles),
        }
        self.handled(call, slot, Cycles(self.queue.now().0 + cycles));
        cycles
    }

    /// The target whose csd is `call`'s `slot`-th ran its function, finishing at `done` (its
    /// csd unlocked). When every target has, the initiator's `csd_lock_wait()`s end: it waits
    /// for the targets' csds in the order it queued them, each one a cache-line transfer
    /// (`ipi_ack`) once that target is done. Without the csd queue, each target acknowledges
    /// on its own and the wait ends `ipi_ack` after the last one is done.
    fn handled(&mut self, call: CallId, slot: usize, done: Cycles) {
        let k = &mut self.calls[call.0 as usize];
        k.done[slot] = done;
        k.unhandled -= 1;
        if k.unhandled == 0 {
            let ack = self.costs.ipi_ack.cycles;
            let at = if self.config.mechanisms.is_on(Mechanism::CsdQueue) {
                k.done.iter().fold(Cycles(0), |t, &d| Cycles(t.0.max(d.0) + ack))
            } else {
                Cycles(k.done.iter().map(|d| d.0).max().unwrap_or(0) + ack)
            };
            self.push(at, Event::Ack { call });
        }
    }

    /// The last acknowledgement of `call` arrives.
    fn ack(&mut self, call: CallId) {
        let k = &mut self.calls[call.0 as usize];
        k.pending = 0;
        let waiter = k.waiter;
        let cpu = self.tasks[waiter.0 as usize].cpu;
        let c = usize::from(cpu.0);
        if self.cpus[c].curr == waiter && self.waiting_for_acks(cpu) {
            let at = self.cpus[c].irq_free_at.max(self.queue.now());
            self.resume_at(cpu, at);
        }
    }

    fn tick(&mut self, cpu: CpuId) {
        let c = usize::from(cpu.0);
        let now = self.queue.now();
        self.push(Cycles(now.0 + self.tick_cycles), Event::Tick { cpu });
        let curr = self.cpus[c].curr;
        if curr == self.cpus[c].idle || self.cpus[c].irqs_off || self.vcpu_preempted(cpu) {
            // NO_HZ idle; a tick with interrupts off, or on a preempted vCPU, is taken late, at
            // no extra cost here.
            return;
        }
        let cycles = self.costs.timer_tick.cycles + self.latr_tick(cpu);
        self.acct_insert(cpu, cycles, Inserted::Irq);
        self.delay_step(cpu, cycles);
        let resched = if self.fair_class() {
            self.tick_fair(c)
        } else {
            let ran = now.0.saturating_sub(self.tasks[curr.0 as usize].slice_start.0);
            !self.cpus[c].rq.is_empty() && ran >= self.slice_cycles
        };
        if !resched {
            return;
        }
        self.cpus[c].need_resched = true;
        // A task spinning in a preemptible wait for acknowledgements is preempted at once
        // (flush_tlb_mm_range() only: kernel-range flushes keep preemption off).
        let preemptible =
            matches!(self.tasks[curr.0 as usize].frames.last(), Some(Frame::Flush { .. }));
        if self.policy.flush_info == FlushInfo::Stack && preemptible && self.waiting_for_acks(cpu) {
            self.requeue_current(cpu);
            self.schedule(cpu);
            self.resume_at(cpu, Cycles(now.0 + cycles));
        }
    }

    /// An interrupt took `cycles` from `cpu`: its pending step ends that much later. Returns
    /// whether a step was pending.
    pub(super) fn delay_step(&mut self, cpu: CpuId, cycles: u64) -> bool {
        match &mut self.cpus[usize::from(cpu.0)].resume {
            Some(at) => {
                // The step's event is moved when it comes up (see `run_until`).
                *at = Cycles(at.0 + cycles);
                true
            }
            None => false,
        }
    }

    /// Whether task `t` is in user mode: no kernel frame, or between page references.
    pub(super) fn in_user_mode(&self, t: TaskId) -> bool {
        matches!(self.tasks[t.0 as usize].frames.last(), None | Some(Frame::Touch { .. }))
    }

    /// Whether `cpu`'s current task spins in `flush_tlb_mm_range()` waiting for
    /// acknowledgements (no step pending, no switch under way).
    fn waiting_for_acks(&self, cpu: CpuId) -> bool {
        let c = &self.cpus[usize::from(cpu.0)];
        c.resume.is_none()
            && c.switch.is_none()
            && matches!(
                self.tasks[c.curr.0 as usize].frames.last(),
                Some(
                    Frame::Flush { phase: FlushPhase::Wait, .. }
                        | Frame::KernelFlush { phase: FlushPhase::Wait, .. }
                        | Frame::BatchFlush { phase: FlushPhase::Wait, .. }
                )
            )
    }

    fn requeue_current(&mut self, cpu: CpuId) {
        let c = usize::from(cpu.0);
        let curr = self.cpus[c].curr;
        self.tasks[curr.0 as usize].state = TaskState::Runnable;
        self.cpus[c].rq.push_back(curr);
    }

    // ----- tasks -----

    fn task_step(&mut self, cpu: CpuId) -> Step {
        let c = usize::from(cpu.0);
        let t = self.cpus[c].curr;
        if t == self.cpus[c].idle {
            return Step::Wait;
        }
        let Some(frame) = self.tasks[t.0 as usize].frames.pop() else {
            return self.next_action(cpu, t);
        };
        match frame {
            Frame::Touch { touch, done } => self.touch_step(cpu, t, touch, done),
            Frame::Fault { touch, page, phase } => self.fault_step(cpu, t, touch, page, phase),
            Frame::Syscall { call, phase } => self.syscall_step(cpu, t, call, phase),
            Frame::Flush { req, phase, gen, call, since } => {
                self.flush_step(cpu, t, req, phase, gen, call, since)
            }
            Frame::KernelFlush { req, phase, call } => {
                self.kernel_flush_step(cpu, t, req, phase, call)
            }
            Frame::BatchFlush { mask, phase, call } => {
                self.batch_flush_step(cpu, t, mask, phase, call)
            }
            Frame::Exit { phase } => self.exit_step(cpu, t, phase),
            Frame::MmapLock { write } => self.mmap_lock_step(cpu, t, write),
            Frame::MmapUnlock { write } => self.mmap_unlock_step(cpu, t, write),
            Frame::MmapDowngrade { cycles } => self.mmap_downgrade_step(cpu, t, cycles),
            Frame::VforkWait { child } => self.vfork_wait_step(cpu, t, child),
            Frame::ZapFree { freed } => {
                let cycles = self.zap_free_locks(cpu, freed);
                self.lock_step(cpu, t, cycles)
            }
            Frame::PageLock { op } => self.page_lock_step(cpu, t, op),
            Frame::IrqsRestore => {
                self.irqs_on(cpu);
                Step::Next
            }
        }
    }

    pub(super) fn push_frame(&mut self, t: TaskId, frame: Frame) {
        self.tasks[t.0 as usize].frames.push(frame);
    }

    /// Asks the program for its next action (the task is in user mode).
    fn next_action(&mut self, cpu: CpuId, t: TaskId) -> Step {
        if self.cpus[usize::from(cpu.0)].need_resched {
            self.requeue_current(cpu);
            return self.schedule(cpu);
        }
        let now = self.queue.now();
        let task = &mut self.tasks[t.0 as usize];
        let mut program = task.program.take().expect("user tasks have a program");
        let mut env = Env { now, cpu, task: t, rng: &mut task.rng, last: task.last };
        let action = program.next(&mut env);
        let task = &mut self.tasks[t.0 as usize];
        task.program = Some(program);
        task.last = Outcome::None;
        match action {
            Action::Touch(touch) => {
                self.push_frame(t, Frame::Touch { touch, done: 0 });
                Step::Next
            }
            Action::Compute { cycles } => {
                task.report.work_cycles += cycles;
                Step::Spend(cycles, Mode::User)
            }
            Action::Syscall(call) => {
                self.push_frame(t, Frame::Syscall { call: Some(call), phase: Phase::Entry });
                Step::Next
            }
            Action::Op => {
                let r = &mut task.report;
                if r.ops == 0 {
                    r.first_op = now;
                }
                r.ops += 1;
                r.last_op = now;
                if let Some(begin) = r.span_begin.take() {
                    r.span_cycles += now.0 - begin.0;
                    r.spans += 1;
                }
                if let Some(image) = task.image {
                    // The loop's own code and data, once per iteration (its next one).
                    let touch = |vma, pages, kind| Touch::new(vma, 0, pages, kind, 0);
                    let data = touch(image.data, image.ws.data_pages, AccessKind::Store);
                    let code = touch(image.code, image.ws.code_pages, AccessKind::Fetch);
                    self.push_frame(t, Frame::Touch { touch: data, done: 0 });
                    self.push_frame(t, Frame::Touch { touch: code, done: 0 });
                }
                Step::Next
            }
            Action::OpBegin => {
                task.report.span_begin = Some(now);
                Step::Next
            }
            Action::Exit => {
                self.push_frame(t, Frame::Exit { phase: Phase::Entry });
                Step::Next
            }
        }
    }

    /// References pages of a touch, up to a chunk or a page fault.
    fn touch_step(&mut self, cpu: CpuId, t: TaskId, touch: Touch, mut done: u64) -> Step {
        if self.cpus[usize::from(cpu.0)].need_resched {
            self.push_frame(t, Frame::Touch { touch, done });
            self.requeue_current(cpu);
            return self.schedule(cpu);
        }
        let c = usize::from(cpu.0);
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        let pcid = self.cpus[c].cr3;
        let write = touch.kind == AccessKind::Store;
        // The region is borrowed for the whole chunk (the hardware model is a separate field).
        let Some(vma) = self.mms[mm.0 as usize].vma(touch.vma) else {
            // Unmapped under us: the rest of the touch is dropped (a SIGSEGV).
            return Step::Spend(0, Mode::User);
        };
        // A scattered touch lists pages of the region (it was built from its pages).
        let last = match touch.scatter {
            Some(_) => touch.pages,
            None => touch.pages.min(vma.pages().saturating_sub(touch.first)),
        };
        let end = last.min(done + TOUCH_CHUNK);
        let start = done;
        let mut cycles = 0;
        let mut translation = 0;
        let mut fault = None;
        let mut dropped = false;
        let (now, ctx_id) = (self.queue.now(), self.mms[mm.0 as usize].ctx_id);
        let tag = if self.hw[c].cr4().pcide { pcid.get() } else { 0 };
        let stlb_hits_before = self.hw_stats[c].misses[touch.kind.index()].stlb_hit;
        while done < end {
            let index = touch.page(done);
            let Some(&pte) = vma.ptes.get(index as usize) else {
                // A listed page past the region's end: the rest is dropped (a SIGSEGV).
                dropped = true;
                break;
            };
            let faults = match pte {
                Pte::None => true,
                Pte::ZeroPage | Pte::Cow => write,
                // NOTE: a store to a read-only file mapping would be SIGSEGV; the model's
                // programs only read them.
                Pte::Present | Pte::File => false,
            };
            let page = Page::new(vma.vpn(index), PageSize::Size4K)
                .expect("4 KiB pages are always aligned");
            let access = Access::new(cpu, pcid, page, touch.kind);
            let mut walks_pde = false;
            if let Some(ck) = &mut self.check {
                // The hardware uses an entry it holds whatever the page table says now; the
                // model goes on to fault as before, but the checker judges that use.
                if self.hw[c].holds(&access) {
                    ck.used_cached(cpu, t, tag, ctx_id, page.vpn.0, now);
                } else if !faults {
                    ck.filled(cpu, tag, ctx_id, page.vpn.0, now);
                    walks_pde = !self.hw[c].holds_pde(pcid, page.vpn);
                }
            }
            if faults {
                fault = Some(index);
                break;
            }
            translation += self.hw[c].access(&access, 1, &mut self.hw_stats[c]);
            if let Some(ck) = self.check.as_mut().filter(|_| walks_pde) {
                // The walk read this block's page table and cached the PDE pointing at it.
                ck.pde_filled(cpu, tag, ctx_id, page.vpn.0 >> 9 << 9, now);
            }
            done += 1;
        }
        let work = (done - start) * touch.cycles_per_page;
        let stlb_hits = self.hw_stats[c].misses[touch.kind.index()].stlb_hit - stlb_hits_before;
        cycles += self.touch_cycles(cpu, touch, done - start, translation, stlb_hits, work);
        self.tasks[t.0 as usize].report.work_cycles += work;
        if let Some(page) = fault {
            self.push_frame(t, Frame::Touch { touch, done });
            self.push_frame(t, Frame::Fault { touch, page, phase: Phase::Entry });
            return if cycles > 0 { Step::Spend(cycles, Mode::User) } else { Step::Next };
        }
        if done < last && !dropped {
            self.push_frame(t, Frame::Touch { touch, done });
        }
        Step::Spend(cycles, Mode::User)
    }

    /// The time of `pages` page references of one touch whose translations took `translation`
    /// cycles in all (`stlb_hits` of them hits of the STLB, each its latency and no walk) and
    /// whose work between references is `work`. Serially, the sum. With
    /// memory-level parallelism (mechanism `mlp`), a stream of independent loads or stores
    /// overlaps its STLB lookups and page walks, up to the preset's `page_walkers` at once, with
    /// each other and with the work: the throughput bound `max(work, translation / walkers)`,
    /// or, with `stlb-pipelined`, `max(work, STLB hits, walk cycles / walkers)`.
    /// Instruction fetches stall the front end: serial. So do dependent references (pointer
    /// chasing, mechanism `pointer-chase`): each address needs the load before it.
    fn touch_cycles(
        &self,
        cpu: CpuId,
        touch: Touch,
        pages: u64,
        translation: u64,
        stlb_hits: u64,
        work: u64,
    ) -> u64 {
        let mechanisms = self.config.mechanisms;
        let chased = touch.dependent && mechanisms.is_on(Mechanism::PointerChase);
        let overlaps = touch.kind != AccessKind::Fetch
            && !chased
            && pages > 1
            && mechanisms.is_on(Mechanism::Mlp);
        if !overlaps {
            return translation + work;
        }
        let walkers = u64::from(self.spec.raw().features.page_walkers.max(1));
        if !mechanisms.is_on(Mechanism::StlbPipelined) {
            return work.max(translation.div_ceil(walkers));
        }
        // STLB hits need no walker: their lookups are pipelined, one a cycle (a read loop
        // over 1,024 pages, every one an STLB hit, costs per page what one over 32 does:
        // tools/calibrate/results/touch-work-2026-11-30.md); the walks share the walkers.
        let lookups = stlb_hits * self.hw[usize::from(cpu.0)].stlb_latency();
        let walking = translation.saturating_sub(lookups);
        work.max(stlb_hits).max(walking.div_ceil(walkers))
    }

    /// Kernel entry from user mode (system call or exception); returns its cycles.
    pub(super) fn kernel_entry(&mut self, cpu: CpuId) -> u64 {
        if self.policy.pti == Pti::Off {
            return 0;
        }
        // SWITCH_TO_KERNEL_CR3: the kernel PCID, NOFLUSH with PCIDs.
        let asid = self.cpus[usize::from(cpu.0)].tlb.loaded_mm_asid;
        self.write_cr3(cpu, asid, true)
    }

    /// Return to user mode: with PTI, `SWITCH_TO_USER_CR3` flushes the user PCID if it was
    /// marked in `user_pcid_flush_mask`; returns its cycles.
    pub(super) fn return_to_user(&mut self, cpu: CpuId) -> u64 {
        let c = usize::from(cpu.0);
        let asid = self.cpus[c].tlb.loaded_mm_asid;
        if self.policy.pti == Pti::Off {
            self.cpus[c].cr3 = self.kern_pcid(asid);
            return 0;
        }
        if !self.pcid {
            // Without PCIDs, every CR3 write flushes all non-global entries.
            return self
                .hw_op(cpu, TlbOp::MovCr3 { pcid: Pcid::new(0).expect("0"), noflush: false });
        }
        let kpcid = asid.kern_pcid().get();
        let st = &mut self.cpus[c].tlb;
        let flush = st.user_pcid_flush_mask >> kpcid & 1 == 1;
        st.user_pcid_flush_mask &= !(1 << kpcid);
        let pcid = asid.user_pcid();
        self.cpus[c].cr3 = pcid;
        self.hw_op(cpu, TlbOp::MovCr3 { pcid, noflush: !flush })
    }

    fn fault_step(&mut self, cpu: CpuId, t: TaskId, touch: Touch, page: u64, phase: Phase) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        match phase {
            Phase::Entry => {
                self.push_frame(t, Frame::Fault { touch, page, phase: Phase::Body });
                let write = touch.kind == AccessKind::Store;
                if self.fault_takes_mmap_lock(mm, touch.vma, write) {
                    self.push_frame(t, Frame::MmapLock { write: false });
                }
                Step::Spend(self.kernel_entry(cpu), Mode::Sys)
            }
            Phase::Body => {
                self.push_frame(t, Frame::Fault { touch, page, phase: Phase::Exit });
                let write = touch.kind == AccessKind::Store;
                // Released after the fault when it was taken at entry (the test there may
                // not hold now: another thread's fault may have prepared the anon_vma since).
                if self.mms[mm.0 as usize].mmap_lock.readers.contains(&t) {
                    self.push_frame(t, Frame::MmapUnlock { write: false });
                }
                let Some(vma) = self.mms[mm.0 as usize].vma_mut(touch.vma) else {
                    return Step::Next;
                };
                let old = vma.ptes[page as usize];
                let vpn = vma.vpn(page).0;
                if vma.file && old == Pte::None {
                    let mapped = fault_around(vma, page);
                    vma.touched = true;
                    // NOTE: the zero-page fault is the measured path closest to a read fault on
                    // a cached file page (both map an existing page, read-only, with nothing to
                    // allocate or clear); each further page fault-around maps is charged a
                    // PTE's zap cost (a PTE written and a page reference taken; unverified).
                    let cycles = self.costs.page_fault_zero.cycles
                        + (mapped - 1) * self.costs.zap_pte.cycles
                        + self.la57_checks(LA57_CHECKS_FAULT);
                    self.counters.page_faults += 1;
                    return Step::Spend(cycles, Mode::Sys);
                }
                // An anonymous page allocated and zeroed: its cost is decided below, by its
                // frame (mechanism hot-frames).
                let zeroed = matches!((old, write), (Pte::None, true) | (Pte::ZeroPage, _));
                let (new, cost, flush) = match (old, write) {
                    (Pte::None, true) => (Pte::Present, 0, false),
                    (Pte::None, false) => (Pte::ZeroPage, self.costs.page_fault_zero.cycles, false),
                    // A write to the zero page or a shared page: copy, and flush the old PTE
                    // (`ptep_clear_flush()` → `flush_tlb_page()`).
                    (Pte::ZeroPage, _) => (Pte::Present, 0, true),
                    (Pte::Cow, _) => (Pte::Present, self.costs.page_fault_cow.cycles, true),
                    (Pte::Present, _) => (Pte::Present, 0, false),
                    (Pte::File, _) => (Pte::File, 0, false),
                };
                vma.ptes[page as usize] = new;
                vma.touched = true;
                vma.anon_vma |= new == Pte::Present;
                let cost = if zeroed { self.anon_fault_cycles(cpu) } else { cost };
                if new == Pte::Present && old != Pte::Present {
                    // A new page from the allocator: migrc and LUF flush what is pending on it
                    // first; LUF also flushes everything pending when a fault sets a writable
                    // PTE.
                    let mut flush = self.pages_allocated(cpu, t, (0, 1));
                    if self.policy.unmap_flush == crate::policy::UnmapFlush::Luf {
                        if let Some(all) = self.catch_up_all(t) {
                            flush.get_or_insert_with(|| all.clone()).or(&all);
                        }
                    }
                    if let Some(mask) = flush {
                        self.push_batch_flush(t, mask);
                    }
                }
                if flush {
                    self.pte_changed(t, mm, vpn);
                    self.push_flush(t, FlushRequest::pages(mm, vpn, vpn + 1, false));
                }
                let mut cycles = cost + self.la57_checks(LA57_CHECKS_FAULT);
                self.counters.page_faults += 1;
                if new == Pte::Present && old != Pte::Present {
                    cycles += self.xpfo_fault(cpu, t, old);
                    if self.lock_irqs_off() {
                        self.push_frame(t, Frame::PageLock { op: page_locks::LockOp::Alloc });
                    } else {
                        cycles += self.page_alloc_locks(cpu, cycles);
                    }
                }
                Step::Spend(cycles, Mode::Sys)
            }
            Phase::Exit => {
                self.op_completed(t);
                Step::Spend(self.return_to_user(cpu), Mode::Sys)
            }
        }
    }

    pub(super) fn push_flush(&mut self, t: TaskId, req: FlushRequest) {
        let since = self.queue.now();
        self.push_frame(
            t,
            Frame::Flush { req, phase: FlushPhase::Start, gen: 0, call: None, since },
        );
    }

    fn syscall_step(&mut self, cpu: CpuId, t: TaskId, call: Option<Syscall>, phase: Phase) -> Step {
        let half = self.costs.syscall.cycles / 2;
        match phase {
            Phase::Entry => {
                let lock = call.as_ref().and_then(|c| self.mmap_lock_for(c));
                let zaps =
                    matches!(call, Some(Syscall::MadviseDontneed { .. } | Syscall::Munmap { .. }));
                self.push_frame(t, Frame::Syscall { call, phase: Phase::Body });
                if zaps && self.policy.lru_drain_on_zap && self.lock_irqs_off() {
                    // Before 6.15 the zap starts with lru_add_drain(), ahead of its flush.
                    // NOTE: munmap's is taken here, under the write lock, rather than after
                    // the detach and downgrade (once per munmap).
                    self.push_frame(t, Frame::PageLock { op: page_locks::LockOp::Drain });
                }
                if let Some(write) = lock {
                    self.push_frame(t, Frame::MmapLock { write });
                }
                Step::Spend(half + self.kernel_entry(cpu), Mode::Sys)
            }
            Phase::Body => {
                let call = call.expect("the body runs once");
                self.syscall_body(cpu, t, call)
            }
            Phase::Exit => {
                let c = usize::from(cpu.0);
                if self.cpus[c].irqs_off {
                    // A system call never returns to user space with interrupts disabled.
                    self.irqs_on(cpu);
                }
                if let Some(target) = self.tasks[t.0 as usize].migrate_to {
                    // sched_setaffinity: the task leaves this CPU now and returns to user space
                    // on the target (finish_switch queues it there once it is off this CPU).
                    self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
                    self.tasks[t.0 as usize].migrate_to = None;
                    self.tasks[t.0 as usize].moving_to = Some(target);
                    return self.schedule(cpu);
                }
                self.op_completed(t);
                let cycles =
                    half + self.la57_checks(LA57_CHECKS_SYSCALL) + self.return_to_user(cpu);
                Step::Spend(cycles, Mode::Sys)
            }
        }
    }

    /// Zapping `n` present PTEs in one `mmu_gather`: each PTE's `zap_pte`, and once for the
    /// gather when it freed any page, `zap_batch` (`lru_add_drain()` and the batched free).
    pub(super) fn zap_cycles(&mut self, n: u64) -> u64 {
        // XPFO maps the freed pages back (xpfo_free_pages()).
        let xpfo = self.xpfo_free_cycles();
        if n == 0 {
            return xpfo;
        }
        let batch = if self.config.mechanisms.is_on(Mechanism::ZapBatch) {
            self.costs.zap_batch.cycles
        } else {
            0
        };
        n * self.costs.zap_pte.cycles + batch + xpfo
    }

    /// Pushes the system call's exit and, below the call's remaining work, the release of
    /// `mmap_lock` when it holds it (`Some(write)`).
    fn push_exit_unlocking(&mut self, t: TaskId, lock: Option<bool>) {
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        if let Some(write) = lock {
            self.push_frame(t, Frame::MmapUnlock { write });
        }
    }

    /// The body of a system call; pushes the exit frame (and any work before it).
    fn syscall_body(&mut self, cpu: CpuId, t: TaskId, call: Syscall) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        let exit = Frame::Syscall { call: None, phase: Phase::Exit };
        // mmap_lock, when the call took it at entry: released after the call's flush.
        let lock = self.mmap_lock_for(&call);
        match call {
            Syscall::Null | Syscall::Yield => {
                self.push_frame(t, exit);
                if matches!(call, Syscall::Yield) && !self.cpus[usize::from(cpu.0)].rq.is_empty() {
                    if self.fair_class() {
                        self.yield_task_fair(usize::from(cpu.0));
                    }
                    self.cpus[usize::from(cpu.0)].need_resched = true;
                }
                Step::Next
            }
            Syscall::Mmap { .. } | Syscall::MmapBeside { .. } | Syscall::MmapFile { .. } => {
                // NOTE: a merge (vma_expand() of the neighbour) is charged what a new VMA is;
                // the two were not measured apart.
                let cycles = self.costs.mmap.cycles + self.la57_checks(LA57_CHECKS_MMAP);
                let m = &mut self.mms[mm.0 as usize];
                let vma = match call {
                    Syscall::MmapBeside { pages, of } => {
                        m.mmap_beside(of, pages).unwrap_or_else(|| m.mmap(pages))
                    }
                    Syscall::Mmap { pages } => m.mmap(pages),
                    // NOTE: charged what an anonymous mmap is (`mmap_region()` either way; the
                    // file's `->mmap()` hook was not measured apart).
                    Syscall::MmapFile { pages } => m.mmap_file(pages),
                    _ => unreachable!("matched above"),
                };
                self.tasks[t.0 as usize].last = Outcome::Mapped(vma);
                self.push_exit_unlocking(t, lock);
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::Munmap { vma } => {
                let Some(v) = self.mms[mm.0 as usize].vma(vma) else {
                    self.push_exit_unlocking(t, lock);
                    return Step::Next; // EINVAL-like: nothing mapped
                };
                let pages = v.pages();
                let start = v.start.0;
                // Page tables exist only where a page was ever touched.
                let tables = match v.touched {
                    true => self.mms[mm.0 as usize].freed_table_blocks(vma, 0, pages),
                    false => Vec::new(),
                };
                let freed = !tables.is_empty();
                let pages_freed = self.present_pages(mm, vma, 0, pages);
                let splits = self.mms[mm.0 as usize].unmap_splits(vma)
                    && self.config.mechanisms.is_on(Mechanism::VmaMerge);
                let (n, mut lo, mut hi) = self.zap(t, mm, vma, 0, pages);
                self.tables_freed(t, mm, &tables);
                self.mms[mm.0 as usize].vmas[vma.0 as usize] = None;
                let walk = self.zap_cycles(n) + self.la57_checks(LA57_CHECKS_WALK);
                let detach =
                    self.costs.munmap.cycles + if splits { self.costs.split_vma.cycles } else { 0 };
                // From 4.20 munmap detaches its VMAs under write, then downgrades: the zap and
                // the flush run under read.
                let downgrade = lock.is_some() && self.policy.munmap_downgrade;
                let (cycles, unlock) =
                    if downgrade { (detach, Some(false)) } else { (detach + walk, lock) };
                self.push_exit_unlocking(t, unlock);
                self.push_zap_free(t, pages_freed);
                if freed {
                    // pte_free_tlb() adds one page at the address of each freed table to the
                    // range: the region's start for its first 2 MiB, the block's start after.
                    let last_table = (start + pages - 1) >> 9 << 9;
                    lo = lo.min(start);
                    hi = hi.max(last_table.max(start) + 1);
                }
                if n > 0 || freed {
                    // mmu_gather: one flush over the PTEs cleared and the tables freed.
                    self.push_unmap_flush(t, FlushRequest::pages(mm, lo, hi, freed));
                }
                if downgrade {
                    self.push_frame(t, Frame::MmapDowngrade { cycles: walk });
                }
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::MadviseDontneed { vma, first, pages } => {
                let tables = self.pt_reclaim_blocks(mm, vma, first, pages);
                let pages_freed = self.present_pages(mm, vma, first, pages);
                let (n, mut lo, mut hi) = self.zap(t, mm, vma, first, pages);
                self.tables_freed(t, mm, &tables);
                let cycles = self.costs.madvise.cycles
                    + self.zap_cycles(n)
                    + self.la57_checks(LA57_CHECKS_WALK);
                self.push_exit_unlocking(t, lock);
                self.push_zap_free(t, pages_freed);
                if let (Some(&a), Some(&b)) = (tables.first(), tables.last()) {
                    // pte_free_tlb() adds one page at each freed table's block start.
                    (lo, hi) = (lo.min(a), hi.max(b + 1));
                }
                if n > 0 || !tables.is_empty() {
                    self.push_unmap_flush(t, FlushRequest::pages(mm, lo, hi, !tables.is_empty()));
                }
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::MadviseCollapse { vma, first, pages } => {
                let blocks = self.collapse_blocks(mm, vma, first, pages);
                self.push_exit_unlocking(t, lock);
                let cycles = self.costs.madvise.cycles + self.collapse(t, mm, vma, &blocks);
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::Mprotect { vma, first, pages } => {
                self.push_exit_unlocking(t, lock);
                // change_pte_range() changes each present PTE of the range; the flush covers
                // them, first to last (on x86 a write bit set or cleared both need one:
                // pte_needs_flush()).
                let (changed, range) = self.mms[mm.0 as usize].vma(vma).map_or((0, None), |v| {
                    let span = &v.ptes
                        [first.min(v.pages()) as usize..(first + pages).min(v.pages()) as usize];
                    let changed = span.iter().filter(|&&p| p != Pte::None).count() as u64;
                    let range = span
                        .iter()
                        .position(|&p| p != Pte::None)
                        .zip(span.iter().rposition(|&p| p != Pte::None));
                    let range = range.map(|(lo, hi)| {
                        (v.vpn(first + lo as u64).0, v.vpn(first + hi as u64).0 + 1)
                    });
                    (changed, range)
                });
                let cycles = self.costs.mprotect.cycles + changed * self.costs.change_pte.cycles;
                if let Some((lo, hi)) = range {
                    self.push_flush(t, FlushRequest::pages(mm, lo, hi, false));
                }
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::SetAffinity { cpu: target } => {
                let cycles = self.costs.migrate.cycles;
                self.push_frame(t, exit);
                if target == cpu || usize::from(target.0) >= self.cpus.len() {
                    return Step::Spend(cycles, Mode::Sys);
                }
                // The task moves once it is off this CPU (the stopper pushes it).
                self.tasks[t.0 as usize].report.migrations += 1;
                self.tasks[t.0 as usize].migrate_to = Some(target);
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::EventfdWrite { fd } => {
                self.push_frame(t, exit);
                let e = &mut self.eventfds[fd.0 as usize];
                e.0 += 1;
                let waiter = (!e.1.is_empty()).then(|| e.1.remove(0));
                let cycles = waiter.map_or(0, |w| self.try_to_wake_up(cpu, w));
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::EventfdRead { fd } => {
                let e = &mut self.eventfds[fd.0 as usize];
                if e.0 > 0 {
                    e.0 = 0;
                    self.push_frame(t, exit);
                    return Step::Next;
                }
                // Block; read again when woken.
                e.1.push(t);
                self.push_frame(
                    t,
                    Frame::Syscall { call: Some(Syscall::EventfdRead { fd }), phase: Phase::Body },
                );
                self.tasks[t.0 as usize].state = TaskState::Blocked;
                self.schedule(cpu)
            }
            Syscall::Vfork { program } => self.sys_vfork(cpu, t, program),
            Syscall::Reclaim { pages } => self.sys_reclaim(cpu, t, pages),
            Syscall::MovePages { vma, first, pages } => {
                self.sys_move_pages(cpu, t, (vma, first, pages))
            }
            Syscall::KernelFlush { pages } => {
                let req = match pages {
                    Some(n) => KernelFlush::range(VMALLOC_PAGE, n, false),
                    None => KernelFlush::all(),
                };
                // The unmap before the flush (vunmap_range_noflush(), freeing the pages) is
                // not modelled: it costs the same under every policy.
                self.push_frame(t, exit);
                self.push_frame(
                    t,
                    Frame::KernelFlush { req, phase: FlushPhase::Start, call: None },
                );
                Step::Next
            }
            Syscall::Clone { program, cpu: target } => {
                let cycles = self.costs.fork.cycles;
                let child = self.spawn_thread(t, program, target, false);
                self.tasks[t.0 as usize].last = Outcome::Spawned(child);
                self.push_frame(t, exit);
                Step::Spend(cycles, Mode::Sys)
            }
            Syscall::Fork { program } => self.sys_fork(cpu, t, program),
            Syscall::Exec { program } => self.sys_exec(cpu, t, program),
            Syscall::Wait { child } => self.sys_wait(cpu, t, child),
            Syscall::ChannelWrite { ch } => self.sys_channel_write(cpu, t, ch),
            Syscall::ChannelRead { ch } => self.sys_channel_read(cpu, t, ch),
            Syscall::ChannelPoll { ch } => self.sys_channel_poll(cpu, t, ch),
            Syscall::IrqsOff { cycles } => {
                self.cpus[usize::from(cpu.0)].irqs_off = true;
                self.push_frame(
                    t,
                    Frame::Syscall { call: Some(Syscall::Null), phase: Phase::Body },
                );
                Step::Spend(cycles, Mode::Sys)
            }
        }
    }

    /// Zaps present PTEs of `[first, first+pages)`; returns how many, and the page range
    /// (absolute page numbers) the mmu_gather covers.
    /// `CONFIG_PT_RECLAIM` for a `MADV_DONTNEED` of pages `first..first + pages` of `vma`: the
    /// start pages of the 2 MiB blocks whose PTE page the zap will empty and free. A block
    /// qualifies when the range covers all of it (`reclaim_pt_is_enabled()`: at least
    /// `PMD_SIZE` within one PMD), it has a present PTE (so its table exists), and no other
    /// region has a present PTE in it. Call before the zap.
    fn pt_reclaim_blocks(&self, mm: MmId, vma: VmaId, first: u64, pages: u64) -> Vec<u64> {
        let m = &self.mms[mm.0 as usize];
        let Some(v) = m.vma(vma).filter(|_| self.policy.pt_reclaim) else { return Vec::new() };
        let lo = v.start.0 + first;
        let hi = v.start.0 + first.saturating_add(pages).min(v.pages());
        let present = |r: &crate::mm::Vma, a: u64, b: u64| {
            let (s, e) = (a.max(r.start.0), b.min(r.start.0 + r.pages()));
            (s..e).any(|vpn| r.ptes[(vpn - r.start.0) as usize] != Pte::None)
        };
        (lo.div_ceil(512)..hi / 512)
            .map(|block| block * 512)
            .filter(|&a| present(v, a, a + 512))
            .filter(|&a| {
                m.vmas.iter().enumerate().all(|(i, r)| {
                    i == vma.0 as usize || r.as_ref().is_none_or(|r| !present(r, a, a + 512))
                })
            })
            .collect()
    }

    /// Present pages (not the zero page, not shared COW pages) of `vma`'s `first..first+pages`:
    /// the pages a zap frees.
    fn present_pages(&self, mm: MmId, vma: VmaId, first: u64, pages: u64) -> u64 {
        let Some(v) = self.mms[mm.0 as usize].vma(vma) else { return 0 };
        let end = first.saturating_add(pages).min(v.pages());
        v.ptes[first.min(end) as usize..end as usize].iter().filter(|&&p| p == Pte::Present).count()
            as u64
    }

    /// Pushes `tlb_finish_mmu()`'s freeing of `freed` pages after the flush (its locks;
    /// only with mechanism `page-locks` on a preset with `[locks]`).
    fn push_zap_free(&mut self, t: TaskId, freed: u64) {
        if self.page_locks.is_some() && freed > 0 {
            self.push_frame(t, Frame::ZapFree { freed });
        }
    }

    pub(super) fn zap(
        &mut self,
        t: TaskId,
        mm: MmId,
        vma: VmaId,
        first: u64,
        pages: u64,
    ) -> (u64, u64, u64) {
        let Some(v) = self.mms[mm.0 as usize].vma_mut(vma) else { return (0, 0, 0) };
        let (mut n, mut lo, mut hi) = (0, u64::MAX, 0);
        let (mut cleared, mut freed) = (Vec::new(), 0);
        for i in first..first.saturating_add(pages).min(v.pages()) {
            if v.ptes[i as usize] != Pte::None {
                // NOTE: XPFO frees every private page the zap drops, even one a fork still
                // shares.
                self.xpfo.unfreed += u64::from(v.ptes[i as usize] == Pte::Present);
                freed += u64::from(v.ptes[i as usize] == Pte::Present);
                v.ptes[i as usize] = Pte::None;
                n += 1;
                lo = lo.min(v.start.0 + i);
                hi = hi.max(v.start.0 + i + 1);
                if self.check.is_some() {
                    cleared.push(v.start.0 + i);
                }
            }
        }
        for vpn in cleared {
            self.pte_changed(t, mm, vpn);
        }
        let cpu = self.tasks[t.0 as usize].cpu;
        for _ in 0..freed {
            self.page_freed(cpu);
        }
        (n, lo, hi)
    }

    #[allow(clippy::too_many_arguments)]
    fn flush_step(
        &mut self,
        cpu: CpuId,
        t: TaskId,
        req: FlushRequest,
        phase: FlushPhase,
        gen: u64,
        call: Option<CallId>,
        since: Cycles,
    ) -> Step {
        let c = usize::from(cpu.0);
        let frame = |phase, gen, call| Frame::Flush { req, phase, gen, call, since };
        match phase {
            FlushPhase::Start => {
                // get_cpu(); new_tlb_gen = inc_mm_tlb_gen(mm).
                let gen =
                    if self.policy.tlb_gen { self.mms[req.mm.0 as usize].inc_tlb_gen() } else { 0 };
                if let Some(ck) = self.check.as_mut().filter(|_| req.freed_tables) {
                    ck.tables_flush_gen(t, gen);
                }
                let since = self.queue.now();
                self.cpus[c].flush_irq_mark = self.cpus[c].acct.inserted_total();
                self.push_frame(
                    t,
                    Frame::Flush { req, phase: FlushPhase::Dispatch, gen, call: None, since },
                );
                // Perturbed schedules: an NMI or a vCPU preemption may stall the initiator
                // between inc_mm_tlb_gen() and queueing its csds, so that flushes reach a CPU's
                // call queue in another order than their generations (tlb.c's reordering case).
                Step::Spend(self.costs.flush_tlb_mm_range.cycles + self.ipi_jitter(), Mode::Sys)
            }
            FlushPhase::Dispatch => {
                // cpumask_any_but() and the IPI loop read mm_cpumask: its line comes here.
                let read = self.cpumask_read(cpu, req.mm);
                let latr = self.latr_deferrable(t);
                let info = self.flush_tlb_info(&req, gen, cpu);
                let others = self.mms[req.mm.0 as usize].cpumask.any_but(cpu);
                let loaded = self.cpus[c].tlb.loaded_mm == LoadedMm::Mm(req.mm);
                let id = self.new_call(info, t);
                let global =
                    self.global_asid_policy() && self.mms[req.mm.0 as usize].global_asid.is_some();
                // RAR series: the trim is decided before the branch, and a trimming flush of a
                // global-ASID mm goes by IPIs (RAR never clears a stale mm_cpumask bit).
                let rar_trim = (self.policy.rar && self.policy.trim_cpumask)
                    .then(|| self.should_trim_cpumask(req.mm));
                if global && rar_trim != Some(true) {
                    // 6.15: broadcast, then IPIs only for CPUs still on a dynamic ASID.
                    let (mut cycles, rar_wait) = if self.policy.rar {
                        self.rar_tlb_flush(cpu, id)
                    } else {
                        (self.broadcast_tlb_flush(cpu, id), 0)
                    };
                    cycles += read;
                    if self.asid_stragglers(req.mm) {
                        cycles += rar_wait + self.native_flush_tlb_multi(cpu, id);
                        self.push_frame(t, frame(FlushPhase::Wait, gen, Some(id)));
                    } else if rar_wait > 0 {
                        // RAR: the initiator spins on the targets' completion status; it ends
                        // as an acknowledgement does.
                        self.calls[id.0 as usize].pending = 1;
                        let at = Cycles(self.queue.now().0 + cycles + rar_wait);
                        self.push(at, Event::Ack { call: id });
                        self.push_frame(t, frame(FlushPhase::Wait, gen, Some(id)));
                    } else {
                        self.push_frame(t, frame(FlushPhase::Done, gen, Some(id)));
                    }
                    return Step::Spend(cycles, Mode::Sys);
                }
                if others {
                    if self.policy.trim_cpumask {
                        self.calls[id.0 as usize].info.trim_cpumask =
                            rar_trim.unwrap_or_else(|| self.should_trim_cpumask(req.mm));
                    }
                    let mut cycles = read + self.flush_tlb_multi_or_defer(cpu, t, id, latr);
                    cycles += self.consider_global_asid(cpu, t, req.mm);
                    if self.policy.flush_info == FlushInfo::Stack {
                        // 7.3: preemption is enabled again before the wait.
                        self.record_preempt_off(since, cycles);
                    }
                    self.push_frame(t, frame(FlushPhase::Wait, gen, Some(id)));
                    Step::Spend(cycles, Mode::Sys)
                } else {
                    let cycles = read
                        + if loaded {
                            self.flush_tlb_func(cpu, id) + self.kernel_refill(cpu)
                        } else {
                            0
                        };
                    self.push_frame(t, frame(FlushPhase::Done, gen, Some(id)));
                    Step::Spend(cycles, Mode::Sys)
                }
            }
            FlushPhase::Wait => {
                let id = call.expect("waits follow a call");
                if self.calls[id.0 as usize].pending > 0 {
                    self.push_frame(t, frame(FlushPhase::Wait, gen, call));
                    return Step::Wait;
                }
                self.push_frame(t, frame(FlushPhase::Done, gen, call));
                Step::Next
            }
            FlushPhase::Done => {
                if let Some(id) = call {
                    self.free_calls.push(id);
                    let waited = self.calls[id.0 as usize].pending;
                    debug_assert_eq!(waited, 0);
                }
                // The initiator's latency: from flush_tlb_mm_range()'s start to its return; its
                // own invalidation time leaves out the interrupts it took meanwhile (counted
                // where they are flushes: in their handlers).
                let latency = self.queue.now().0.saturating_sub(since.0);
                self.counters.broadcast.flush_latency_cycles.push(latency);
                let irqs = self.cpus[c].acct.inserted_total() - self.cpus[c].flush_irq_mark;
                self.counters.broadcast.invalidation_cycles += latency.saturating_sub(irqs);
                let stack_waited = self.policy.flush_info == FlushInfo::Stack
                    && call.is_some_and(|_| self.mms[req.mm.0 as usize].cpumask.any_but(cpu));
                if !stack_waited {
                    self.record_preempt_off(since, 0);
                }
                Step::Next
            }
        }
    }

    fn record_preempt_off(&mut self, since: Cycles, extra: u64) {
        let d = self.queue.now().0 + extra - since.0;
        self.counters.preempt_off.push(d);
    }

    /// The wait for `id`'s acknowledgements (preemption off): `again` is pushed back while any
    /// is missing; then the call is freed.
    pub(super) fn wait_for_acks(&mut self, t: TaskId, id: CallId, again: Frame) -> Step {
        if self.calls[id.0 as usize].pending > 0 {
            self.push_frame(t, again);
            return Step::Wait;
        }
        self.free_calls.push(id);
        Step::Next
    }

    pub(super) fn new_call(&mut self, info: FlushTlbInfo, waiter: TaskId) -> CallId {
        if let Some(id) = self.free_calls.pop() {
            // Reuse the vectors' storage.
            let k = &mut self.calls[id.0 as usize];
            let mut done = std::mem::take(&mut k.done);
            done.clear();
            *k = Call { info, window: None, pending: 0, unhandled: 0, done, waiter };
            id
        } else {
            let done = Vec::new();
            self.calls.push(Call { info, window: None, pending: 0, unhandled: 0, done, waiter });
            CallId(self.calls.len() as u32 - 1)
        }
    }

    /// Sends `ipi` for `call` to `targets`, one after another, starting `offset` cycles from
    /// now; returns the initiator's sending cycles.
    pub(super) fn send_call_ipis(
        &mut self,
        cpu: CpuId,
        call: CallId,
        targets: &[CpuId],
        offset: u64,
        csd: Csd,
    ) -> u64 {
        self.send_call_ipis_after(cpu, call, targets, offset, csd, &[])
    }

    /// [`Kernel::send_call_ipis`] where the initiator first spends `before[i]` cycles (the
    /// condition function's reads, mechanism `tlbstate-lines`) ahead of target `i`'s csd; an
    /// empty `before` is none.
    pub(super) fn send_call_ipis_after(
        &mut self,
        cpu: CpuId,
        call: CallId,
        targets: &[CpuId],
        offset: u64,
        csd: Csd,
        before: &[u64],
    ) -> u64 {
        // smp_call_function_many_cond(): for each target, lock and fill its csd and add it to
        // the target's call_single_queue (a remote cache line: `cache_line_transfer`); only a
        // target whose queue was empty needs an IPI (an APIC ICR write: `ipi_send`). The IPIs
        // leave as they are written, one after another.
        // With the `csd-queue` mechanism off: one IPI per target carrying its call, no csd
        // written, as the model was before the queue.
        let queue = self.config.mechanisms.is_on(Mechanism::CsdQueue);
        let now = self.queue.now().0 + offset;
        let mut sent = 0;
        let mut k_sent = 0;
        for (i, &target) in targets.iter().enumerate() {
            let t = usize::from(target.0);
            sent += before.get(i).copied().unwrap_or(0);
            let slot = self.calls[call.0 as usize].done.len();
            let ipi = if queue {
                sent += self.line_move_cycles(Some(t as u16), cpu.0);
                let was_empty = self.cpus[t].csd_queue.is_empty();
                self.cpus[t].csd_queue.push_back((csd, slot));
                was_empty.then_some(Ipi::CallFunction)
            } else {
                Some(Ipi::Call(csd, slot as u32))
            };
            if let Some(ipi) = ipi {
                sent += self.costs.ipi_send.cycles + self.guest_send_cycles(k_sent);
                k_sent += 1;
                let at = Cycles(now + sent + self.costs.ipi_latency.cycles + self.ipi_jitter());
                self.push(at, Event::Ipi { cpu: target, ipi });
                self.counters.ipis_sent[usize::from(cpu.0)] += 1;
            }
            let k = &mut self.calls[call.0 as usize];
            k.pending += 1;
            k.unhandled += 1;
            k.done.push(Cycles(0));
        }
        sent
    }

    fn exit_step(&mut self, cpu: CpuId, t: TaskId, phase: Phase) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        match phase {
            Phase::Entry => {
                // exit_mm(): the task stops using its mm; the CPU keeps it loaded, lazily.
                let mut cycles = self.costs.exit.cycles + self.kernel_entry(cpu);
                cycles += self.enter_lazy_tlb(cpu);
                self.push_frame(t, Frame::Exit { phase: Phase::Body });
                cycles += self.mmput(t, mm);
                Step::Spend(cycles, Mode::Sys)
            }
            Phase::Body => {
                // exit_notify(): the task is a zombie, and a parent blocked in waitpid() is
                // woken (and mm_release(): one blocked in vfork(), if the child never
                // exec'd). A waitpid() from now on returns at once: none can block after the
                // wake-up and miss it.
                self.push_frame(t, Frame::Exit { phase: Phase::Exit });
                self.tasks[t.0 as usize].zombie = true;
                let cycles = self.wake_waiters(t) + self.vfork_done(t);
                Step::Spend(cycles, Mode::Sys)
            }
            Phase::Exit => {
                self.op_completed(t);
                let task = &mut self.tasks[t.0 as usize];
                task.state = TaskState::Dead;
                task.report.exited = Some(self.queue.now());
                if task.essential {
                    self.essential_left -= 1;
                }
                self.schedule(cpu)
            }
        }
    }
}

/// `fault_around_bytes` (mm/memory.c; default 64 KiB, debugfs `fault_around_bytes`) in pages.
pub(crate) const FAULT_AROUND_PAGES: u64 = 16;

/// `do_fault_around()` for a read fault on page `page` of file region `vma`: maps every page of
/// the aligned 16-page window around it (clipped to the region) that is not mapped yet, as
/// `filemap_map_pages()` maps the cached pages there; returns how many it mapped (the faulting
/// page included).
pub(super) fn fault_around(vma: &mut crate::mm::Vma, page: u64) -> u64 {
    let vpn = vma.vpn(page).0;
    let lo = (vpn & !(FAULT_AROUND_PAGES - 1)).max(vma.start.0) - vma.start.0;
    let hi = ((vpn | (FAULT_AROUND_PAGES - 1)) + 1 - vma.start.0).min(vma.pages());
    let mut mapped = 0;
    for pte in &mut vma.ptes[lo as usize..hi as usize] {
        if *pte == Pte::None {
            *pte = Pte::File;
            mapped += 1;
        }
    }
    mapped
}
