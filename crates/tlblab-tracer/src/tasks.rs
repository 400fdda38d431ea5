//! Which process and name each thread has: `/proc` for threads that existed before the
//! recording, `task:task_newtask` and `sched:sched_process_exec` for those created or changed
//! during it (they may be gone before we could look them up).

use std::collections::HashMap;
use std::path::PathBuf;

use tlblab_flushtrace::Task;

/// The threads seen so far.
#[derive(Debug)]
pub struct TaskTable {
    proc_root: PathBuf,
    known: HashMap<i32, (i32, String)>,
}

impl Default for TaskTable {
    fn default() -> Self {
        TaskTable::with_proc("/proc")
    }
}

impl TaskTable {
    /// A table that looks threads up under `proc_root` (`/proc`, or a fake one in tests).
    pub fn with_proc(proc_root: impl Into<PathBuf>) -> TaskTable {
        TaskTable { proc_root: proc_root.into(), known: HashMap::new() }
    }

    /// The first time `pid` is seen: its [`Task`] record (to be written before the event).
    #[inline]
    pub fn first_sight(&mut self, ts_ns: u64, pid: i32) -> Option<Task> {
        if self.known.contains_key(&pid) {
            return None;
        }
        let (tgid, comm) = self.look_up(pid);
        Some(self.learn(ts_ns, pid, tgid, comm))
    }

    /// A task created by `parent`: with `CLONE_THREAD` it joins the parent's process.
    pub fn created(
        &mut self,
        ts_ns: u64,
        parent: i32,
        pid: i32,
        comm: String,
        thread: bool,
    ) -> Task {
        let tgid = if thread {
            match self.known.get(&parent) {
                Some((tgid, _)) => *tgid,
                None => self.look_up(parent).0,
            }
        } else {
            pid
        };
        self.learn(ts_ns, pid, tgid, comm)
    }

    /// A task that called `execve()` (its comm changed; its process did not).
    pub fn exec(&mut self, task: Task) -> Task {
        let tgid = match self.known.get(&task.pid) {
            Some((tgid, _)) => *tgid,
            None => self.look_up(task.pid).0,
        };
        self.learn(task.ts_ns, task.pid, tgid, task.comm)
    }

    fn learn(&mut self, ts_ns: u64, pid: i32, tgid: i32, comm: String) -> Task {
        self.known.insert(pid, (tgid, comm.clone()));
        Task { ts_ns, pid, tgid, comm }
    }

    /// `(tgid, comm)` from `/proc/<pid>/status`; the idle task is `<idle>` (as ftrace prints
    /// it); a thread already gone is `(-1, "<...>")` (ftrace's spelling of an unknown comm).
    fn look_up(&self, pid: i32) -> (i32, String) {
        if pid == 0 {
            return (0, "<idle>".into());
        }
        let Ok(status) = std::fs::read_to_string(self.proc_root.join(format!("{pid}/status")))
        else {
            return (-1, "<...>".into());
        };
        let field = |key: &str| {
            status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::trim))
        };
        let tgid = field("Tgid").and_then(|t| t.parse().ok()).unwrap_or(-1);
        (tgid, field("Name").unwrap_or("<...>").to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_join_their_creator_and_processes_start_their_own() {
        let dir = std::env::temp_dir().join(format!("tlblab-tasks-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("40")).unwrap();
        std::fs::write(dir.join("40/status"), "Name:\tmt madv\nUmask:\t0022\nTgid:\t40\n").unwrap();
        let mut t = TaskTable::with_proc(&dir);
        let first = t.first_sight(5, 40).unwrap();
        assert_eq!((first.tgid, first.comm.as_str()), (40, "mt madv"));
        assert_eq!(t.first_sight(6, 40), None, "reported once");
        assert_eq!(t.created(7, 40, 41, "mt madv".into(), true).tgid, 40);
        assert_eq!(t.created(8, 40, 42, "mt madv".into(), false).tgid, 42);
        assert_eq!(t.first_sight(9, 41), None, "known from its creation");
        let gone = t.first_sight(10, 99).unwrap();
        assert_eq!((gone.tgid, gone.comm.as_str()), (-1, "<...>"));
        assert_eq!(t.first_sight(11, 0).unwrap().comm, "<idle>");
        let exec = t.exec(Task { ts_ns: 12, pid: 42, tgid: -1, comm: "make".into() });
        assert_eq!((exec.tgid, exec.comm.as_str()), (42, "make"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
