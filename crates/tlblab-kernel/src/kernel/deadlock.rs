//! A run that can never end: every task left is blocked and no event that could wake one is
//! queued. Only the periodic events remain (ticks, disturbances, vCPU slices), and none of
//! them wakes a task, so the run would spin through ticks to its event limit and then report
//! a misleading "lower --iterations". It stops at once instead, naming what each task waits
//! on (a workload that waits for what never comes, or a model defect).

use super::{Frame, Kernel, Observer, TaskState};
use crate::program::Syscall;

impl<O: Observer> Kernel<O> {
    /// Whether the run can never end: tasks are left, every queued event is periodic, and every
    /// CPU is idle with nothing queued to run (and the caller asked to stop then:
    /// [`super::KernelConfig::stop_when_blocked`]). Called when a periodic event is popped
    /// (`Kernel::run_until` counts them on push and pop); the first test fails at once unless
    /// nothing else is queued.
    pub(super) fn deadlocked(&self) -> bool {
        self.config.stop_when_blocked
            && self.queue.len() as u64 == self.periodic_queued
            && self.essential_left > 0
            && self.cpus.iter().all(|c| c.curr == c.idle && c.rq.is_empty() && c.switch.is_none())
    }

    /// The tasks left and what each waits on, for the error.
    pub(super) fn blocked_tasks(&self) -> String {
        let described: Vec<String> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| t.state == TaskState::Blocked)
            .map(|(i, t)| {
                let what = match t.frames.last() {
                    Some(Frame::Syscall { call: Some(call), .. }) => match call {
                        Syscall::EventfdRead { fd } => format!("a read of eventfd {}", fd.0),
                        Syscall::Wait { child } => format!("waitpid() for task {}", child.0),
                        Syscall::ChannelRead { ch } => format!("a read of pipe/socket {}", ch.0),
                        Syscall::ChannelWrite { ch } => {
                            format!("a write to pipe/socket {} (full)", ch.0)
                        }
                        Syscall::ChannelPoll { ch } => format!("poll() of pipe/socket {}", ch.0),
                        _ => "a system call".to_owned(),
                    },
                    Some(Frame::MmapLock { write }) => {
                        format!("mmap_lock ({})", if *write { "write" } else { "read" })
                    }
                    Some(Frame::VforkWait { child }) => format!("vfork child task {}", child.0),
                    _ => "an unknown wake-up".to_owned(),
                };
                let essential = if t.essential { "" } else { " (not essential)" };
                format!("task {i}{essential} on CPU {} waits in {what}", t.cpu.0)
            })
            .collect();
        let shown = described.len().min(8);
        let more = described.len() - shown;
        let mut text = described[..shown].join("; ");
        if more > 0 {
            text += &format!("; and {more} more");
        }
        text
    }
}
