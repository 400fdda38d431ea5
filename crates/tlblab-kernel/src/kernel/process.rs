//! Processes: `fork()` (`dup_mmap()`), `execve()` (`exec_mmap()`), `waitpid()`, and the
//! teardown of an mm by its last user (`mmput()` → `exit_mmap()`).

use super::run::Step;
use super::{Frame, Kernel, Mode, Phase, TaskState, FLUSH_ALL_END, LA57_CHECKS_WALK};
use crate::ids::{MmId, TaskId};
use crate::kernel::flush::FlushRequest;
use crate::mechanisms::Mechanism;
use crate::mm::{Pte, VmaId};
use crate::observer::Observer;
use crate::program::{Outcome, Program, Syscall};
use tlblab_types::CpuId;

impl<O: Observer> Kernel<O> {
    /// `fork()` by task `t` on `cpu`: copies the mm, write-protects private pages in both,
    /// places the child on the least-loaded CPU, and flushes the parent's mm.
    pub(super) fn sys_fork(&mut self, cpu: CpuId, t: TaskId, program: Box<dyn Program>) -> Step {
        let parent = self.tasks[t.0 as usize].mm.expect("user task");
        let child_mm = self.new_mm();
        // copy_page_range(): private writable pages become copy-on-write on both sides.
        let (mut copied, mut walks) = (0, 0);
        let mut protected = Vec::new();
        for vma in self.mms[parent.0 as usize].vmas.iter_mut().flatten() {
            walks += u64::from(vma.touched);
            for (i, pte) in vma.ptes.iter_mut().enumerate() {
                if *pte == Pte::Present {
                    *pte = Pte::Cow;
                    if self.check.is_some() {
                        protected.push(vma.start.0 + i as u64);
                    }
                }
                copied += u64::from(*pte != Pte::None);
            }
        }
        for vpn in protected {
            self.pte_changed(t, parent, vpn);
        }
        let (vmas, mmap_next) = {
            let p = &self.mms[parent.0 as usize];
            (p.vmas.clone(), p.mmap_next)
        };
        let child = &mut self.mms[child_mm.0 as usize];
        child.vmas = vmas;
        child.mmap_next = mmap_next;
        child.users = 1;
        let cycles = self.costs.fork.cycles
            + copied * self.costs.fork_pte.cycles
            + self.la57_checks(walks * LA57_CHECKS_WALK);
        let target = self.least_loaded_cpu(cpu, false);
        let task = self.new_task(Some(child_mm), Some(program), target, false);
        self.tasks[task.0 as usize].wakee = self.tasks[t.0 as usize].wakee;
        self.enqueue(task);
        self.tasks[t.0 as usize].last = Outcome::Spawned(task);
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        // dup_mmap() ends with flush_tlb_mm(oldmm): no CPU may keep a writable translation of
        // a page that is now copy-on-write. flush_tlb_mm() passes freed_tables = true.
        self.push_flush(t, FlushRequest::pages(parent, 0, FLUSH_ALL_END, true));
        Step::Spend(cycles, Mode::Sys)
    }

    /// `vfork()`: a child task in the caller's mm, on the least-loaded CPU.
    pub(super) fn sys_vfork(&mut self, cpu: CpuId, t: TaskId, program: Box<dyn Program>) -> Step {
        let mm = self.tasks[t.0 as usize].mm.expect("user task");
        self.mms[mm.0 as usize].users += 1;
        // The parent is about to sleep until the child's exec: its CPU counts without it and
        // wins ties (fork balancing sees the sleeping parent's low load; the model has no
        // idle balancing to undo a placement beside a busy task).
        let wait = self.config.mechanisms.is_on(Mechanism::VforkWait);
        let target = self.least_loaded_cpu(cpu, wait);
        let child = self.new_task(Some(mm), Some(program), target, false);
        self.tasks[child.0 as usize].wakee = self.tasks[t.0 as usize].wakee;
        self.enqueue(child);
        self.tasks[t.0 as usize].last = Outcome::Spawned(child);
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        if self.config.mechanisms.is_on(Mechanism::VforkWait) {
            // kernel_clone(): CLONE_VFORK waits in wait_for_vfork_done() once the child is
            // woken (after the fork's cost).
            self.tasks[child.0 as usize].vfork_parent = Some(t);
            self.push_frame(t, Frame::VforkWait { child });
        }
        Step::Spend(self.costs.fork.cycles, Mode::Sys)
    }

    /// `wait_for_vfork_done()`: the parent sleeps until its vfork child has exec'd or exited
    /// (the child clears `vfork_parent` and wakes it).
    pub(super) fn vfork_wait_step(&mut self, cpu: CpuId, t: TaskId, child: TaskId) -> Step {
        if self.tasks[child.0 as usize].vfork_parent != Some(t) {
            return Step::Next;
        }
        self.push_frame(t, Frame::VforkWait { child });
        self.tasks[t.0 as usize].state = TaskState::Blocked;
        self.schedule(cpu)
    }

    /// `mm_release()` → `complete_vfork_done()`: a vfork child that execs or exits wakes its
    /// parent; returns the cycles of the wake-up.
    pub(super) fn vfork_done(&mut self, child: TaskId) -> u64 {
        let Some(parent) = self.tasks[child.0 as usize].vfork_parent.take() else { return 0 };
        if self.tasks[parent.0 as usize].state != TaskState::Blocked {
            // Not asleep yet: complete() finds no waiter to wake.
            return self.costs.wakeup.cycles;
        }
        let cpu = self.tasks[child.0 as usize].cpu;
        self.try_to_wake_up(cpu, parent)
    }

    /// `execve()`: a fresh mm replaces the task's (`exec_mmap()` → `activate_mm()`), and the
    /// old one loses a user.
    pub(super) fn sys_exec(&mut self, cpu: CpuId, t: TaskId, program: Box<dyn Program>) -> Step {
        let old = self.tasks[t.0 as usize].mm.expect("user task");
        let new = self.new_mm();
        self.mms[new.0 as usize].users = 1;
        let task = &mut self.tasks[t.0 as usize];
        task.mm = Some(new);
        task.program = Some(program);
        // The old image went with the old mm.
        task.image = None;
        task.last = Outcome::None;
        let mut cycles = self.costs.exec.cycles + self.switch_mm_irqs_off(cpu, new);
        self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
        // Above the exit: XPFO's flushes run before the call returns.
        cycles += self.xpfo_exec(cpu, t);
        cycles += self.vfork_done(t);
        cycles += self.mmput(t, old);
        Step::Spend(cycles, Mode::Sys)
    }

    /// `waitpid()` on `child`: returns at once if it has exited, else blocks until it does.
    pub(super) fn sys_wait(&mut self, cpu: CpuId, t: TaskId, child: TaskId) -> Step {
        let Some(c) = self.tasks.get_mut(child.0 as usize) else {
            self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
            return Step::Next; // ECHILD
        };
        if c.state == TaskState::Dead || c.zombie {
            self.push_frame(t, Frame::Syscall { call: None, phase: Phase::Exit });
            return Step::Next;
        }
        c.waiters.push(t);
        let again = Frame::Syscall { call: Some(Syscall::Wait { child }), phase: Phase::Body };
        self.push_frame(t, again);
        self.tasks[t.0 as usize].state = TaskState::Blocked;
        self.schedule(cpu)
    }

    /// Wakes the tasks waiting for `t` to exit; returns the cycles of the wake-ups.
    pub(super) fn wake_waiters(&mut self, t: TaskId) -> u64 {
        let waiters = std::mem::take(&mut self.tasks[t.0 as usize].waiters);
        let cpu = self.tasks[t.0 as usize].cpu;
        waiters.into_iter().map(|w| self.try_to_wake_up(cpu, w)).sum()
    }

    /// `mmput()`: `mm` loses a user (task `t` stopped using it); the last one tears it down
    /// (`exit_mmap()`: zap every page, free the page tables, one full flush). Returns the
    /// cycles; the flush is pushed as a frame of `t`.
    pub(super) fn mmput(&mut self, t: TaskId, mm: MmId) -> u64 {
        let m = &mut self.mms[mm.0 as usize];
        m.users -= 1;
        if m.users > 0 {
            return 0;
        }
        self.free_global_asid(mm);
        let (mut cycles, mut zapped) = (0, 0);
        for v in 0..self.mms[mm.0 as usize].vmas.len() as u32 {
            let touched = self.mms[mm.0 as usize].vma(VmaId(v)).is_some_and(|v| v.touched);
            zapped += self.zap(t, mm, VmaId(v), 0, u64::MAX).0;
            cycles += self.la57_checks(u64::from(touched) * LA57_CHECKS_WALK);
        }
        // One mmu_gather for the whole address space.
        cycles += self.zap_cycles(zapped);
        self.push_flush(t, FlushRequest::pages(mm, 0, FLUSH_ALL_END, true));
        cycles
    }

    /// Where a new task goes (fork balancing): the CPU with the fewest tasks running or
    /// queued, searching from the one after `from`, so ties spread the tasks. With
    /// `caller_sleeps` (a vfork), the caller running on `from` is not counted and `from` is
    /// searched first, so it wins ties.
    fn least_loaded_cpu(&self, from: CpuId, caller_sleeps: bool) -> CpuId {
        let n = self.cpus.len();
        let first = usize::from(!caller_sleeps);
        (first..first + n)
            .map(|i| (usize::from(from.0) + i) % n)
            .min_by_key(|&c| {
                let cpu = &self.cpus[c];
                let load = cpu.rq.len() + usize::from(cpu.curr != cpu.idle || cpu.switch.is_some());
                load - usize::from(caller_sleeps && c == usize::from(from.0) && load > 0)
            })
            .map_or(from, |c| CpuId(c as u16))
    }
}
