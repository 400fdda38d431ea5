//! Tasks that run beside the caller: worker threads (one mm with the caller) or forked child
//! processes (an mm each), all driven through one protocol.
//!
//! Each task pins itself, maps and touches its region, and sends a token on the team's `done`
//! eventfd. Then, per run: it blocks reading its own `start` eventfd, works until it has done
//! `target` operations or sees `stop` in the shared [`Control`] block, stores its count and
//! timestamps there, and sends another `done` token. Between runs every task is blocked, so
//! several prepared scenarios can interleave their runs without disturbing each other. The
//! protocol uses only reads and writes of eventfds and atomics in a `MAP_SHARED` page, which a
//! forked child may use without allocating or locking.

use crate::cpu::pin_current;
use crate::error::{Context, LiveError};
use crate::spec::MAX_TASKS;
use crate::sys::{fork_child, page_size, Region, Shared};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::time::{clock_gettime, ClockId};
use nix::unistd::Pid;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Per-task results, one cache line each so that counting tasks never share a line.
#[repr(C, align(64))]
pub(crate) struct TaskSlot {
    ops: AtomicU64,
    start_ns: AtomicU64,
    end_ns: AtomicU64,
    /// `stage << 32 | errno`, 0 while the task is fine.
    error: AtomicU64,
}

/// The block shared by the caller and its tasks (all-zero is the initial state).
#[repr(C)]
pub(crate) struct Control {
    stop: AtomicBool,
    shutdown: AtomicBool,
    target: AtomicU64,
    spinning: AtomicU64,
    tasks: [TaskSlot; MAX_TASKS],
}

/// What a task was doing when it failed (indexes [`STAGES`]).
#[derive(Clone, Copy)]
enum Stage {
    Pin = 1,
    Map,
    Wait,
    Loop,
}

const STAGES: [&str; 5] =
    ["?", "pin itself to its CPU", "map its region", "wait for a signal", "run its loop"];

/// What a task does.
pub(crate) enum Work {
    /// Loop { write `pages` pages; `MADV_DONTNEED` them }. One more page, written once at setup,
    /// stays mapped so that the DONTNEED never empties the page table (as in the simulator).
    Madvise { pages: usize },
    /// Rounds of { `mmap` `pages` pages at the task's address; write them; `munmap` }.
    MmapRounds { pages: usize },
    /// will-it-scale's `tlb_flush2`: per page of a `pages`-page region, { write it;
    /// `MADV_DONTNEED` it; read it back, which must give 0 }, one operation each; after the last
    /// page, `munmap` the region and map it again. One more page in the region's 2 MiB, written
    /// once at setup, keeps the page table in use, as will-it-scale's neighbouring mappings do;
    /// it lies one page above the region, not right beside it, so that the two never merge into
    /// one VMA (will-it-scale's region never merges either: its neighbours are other kinds of
    /// mapping), and each munmap removes a VMA rather than splitting one.
    TlbFlush2 { pages: usize },
    /// Spin in user space until stopped, without PAUSE (so a vCPU stays in guest mode).
    Spin,
    /// pingpong's second process, forever: { read `ping`; read `touch` never-written pages;
    /// write `pong` }. It takes no part in runs; the harness kills it.
    Echo { ping: Arc<EventFd>, pong: Arc<EventFd>, touch: usize },
}

/// One task: its CPU, the fixed address of its region, its work.
pub(crate) struct TaskSetup {
    pub(crate) cpu: usize,
    pub(crate) addr: usize,
    pub(crate) work: Work,
}

/// CLOCK_MONOTONIC in ns (the same clock in every process; allocation-free).
pub(crate) fn now_ns() -> u64 {
    clock_gettime(ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Reads one token, retrying on EINTR.
fn read_token(fd: &EventFd) -> Result<u64, Errno> {
    loop {
        match fd.read() {
            Err(Errno::EINTR) => continue,
            other => return other,
        }
    }
}

/// Up to `target` operations, checking `stop` every `batch`.
#[inline(always)]
fn run_ops(
    target: u64,
    stop: &AtomicBool,
    batch: u64,
    mut op: impl FnMut() -> Result<(), Errno>,
) -> Result<u64, Errno> {
    let mut done = 0;
    while done < target {
        let n = (target - done).min(batch);
        for _ in 0..n {
            op()?;
        }
        done += n;
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(done)
}

/// A task's whole life; runs on a thread or in a forked child, so it must not allocate.
fn task_main(
    ctl: &Control,
    index: usize,
    setup: &TaskSetup,
    start: &EventFd,
    done: &EventFd,
) -> i32 {
    let Some(slot) = ctl.tasks.get(index) else { return 2 };
    let fail = |stage: Stage, errno: Errno| {
        slot.error.store((stage as u64) << 32 | errno as u32 as u64, Ordering::Release);
        let _ = done.write(1);
        1
    };
    if let Err(e) = pin_current(setup.cpu) {
        return fail(Stage::Pin, e);
    }
    let pages = match setup.work {
        Work::Madvise { pages } => pages + 1,
        Work::Echo { touch, .. } => touch,
        Work::MmapRounds { .. } | Work::Spin | Work::TlbFlush2 { .. } => 0,
    };
    // tlb_flush2: the anchor page (written) past a one-page hole above the region, and the
    // region, untouched.
    let (_anchor, mut flush2) = match setup.work {
        Work::TlbFlush2 { pages } => {
            let anchor = match Region::map_fixed(setup.addr + (pages + 1) * page_size(), 1) {
                Ok(r) => r,
                Err(e) => return fail(Stage::Map, e),
            };
            if let Err(e) = anchor.write(0..1) {
                return fail(Stage::Map, e);
            }
            match Region::map_fixed(setup.addr, pages) {
                Ok(r) => (Some(anchor), Some(r)),
                Err(e) => return fail(Stage::Map, e),
            }
        }
        _ => (None, None),
    };
    // tlb_flush2: the next page to work on.
    let mut next_page = 0;
    let region = match pages {
        0 => None,
        n => match Region::map_fixed(setup.addr, n) {
            Ok(r) => Some(r),
            Err(e) => return fail(Stage::Map, e),
        },
    };
    // Touch once: written (Madvise) or read, which maps the zero page (Echo).
    if let Some(r) = &region {
        match setup.work {
            Work::Madvise { .. } => {
                if let Err(e) = r.write(0..r.pages()) {
                    return fail(Stage::Map, e);
                }
            }
            _ => r.read(0..r.pages()),
        }
    }
    if done.write(1).is_err() {
        return 1;
    }
    if let Work::Echo { ping, pong, touch } = &setup.work {
        loop {
            if let Err(e) = read_token(ping) {
                return fail(Stage::Wait, e);
            }
            if let Some(r) = &region {
                r.read(0..*touch);
            }
            if let Err(e) = pong.write(1) {
                return fail(Stage::Loop, e);
            }
        }
    }
    loop {
        if let Err(e) = read_token(start) {
            return fail(Stage::Wait, e);
        }
        if ctl.shutdown.load(Ordering::Acquire) {
            return 0;
        }
        let target = ctl.target.load(Ordering::Acquire);
        slot.start_ns.store(now_ns(), Ordering::Relaxed);
        let result = match (&setup.work, &region) {
            (Work::Spin, _) => {
                ctl.spinning.fetch_add(1, Ordering::AcqRel);
                // No PAUSE (spin_loop hint): a pause-loop filter could make the vCPU exit to
                // the host, and the point is a sibling running in user space in guest mode.
                #[allow(clippy::missing_spin_loop)]
                while !ctl.stop.load(Ordering::Relaxed) {}
                Ok(0)
            }
            (Work::Madvise { pages }, Some(r)) => {
                // About BATCH pages of work between checks, so a stop is seen as soon after
                // the deadline with 256 pages per op as with one.
                let batch = (crate::measure::BATCH / *pages as u64).max(1);
                run_ops(target, &ctl.stop, batch, || {
                    r.write(0..*pages)?;
                    r.dontneed(0..*pages)
                })
            }
            (Work::MmapRounds { pages }, _) => run_ops(target, &ctl.stop, 1, || {
                let r = Region::map_fixed(setup.addr, *pages)?;
                r.write(0..*pages)?;
                r.unmap()
            }),
            (Work::TlbFlush2 { pages }, _) => {
                run_ops(target, &ctl.stop, crate::measure::BATCH, || {
                    let r = flush2.as_ref().ok_or(Errno::EINVAL)?;
                    let i = next_page;
                    r.write(i..i + 1)?;
                    r.dontneed(i..i + 1)?;
                    if r.load(i) != 0 {
                        // will-it-scale asserts this: the page must read back as zero.
                        return Err(Errno::EIO);
                    }
                    next_page += 1;
                    if next_page == *pages {
                        next_page = 0;
                        flush2.take().ok_or(Errno::EINVAL)?.unmap()?;
                        flush2 = Some(Region::map_fixed(setup.addr, *pages)?);
                    }
                    Ok(())
                })
            }
            _ => Err(Errno::EINVAL),
        };
        slot.end_ns.store(now_ns(), Ordering::Relaxed);
        match result {
            Ok(n) => slot.ops.store(n, Ordering::Release),
            Err(e) => {
                slot.error.store((Stage::Loop as u64) << 32 | e as u32 as u64, Ordering::Release)
            }
        }
        if done.write(1).is_err() {
            return 1;
        }
    }
}

enum Handle {
    Thread(Option<JoinHandle<()>>),
    /// `None` once reaped.
    Process(Option<Pid>),
}

struct Member {
    start: Arc<EventFd>,
    handle: Handle,
}

/// A task's figures for one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskRun {
    pub(crate) ops: u64,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
}

/// How long tasks may take to finish setting up, or to stop once asked.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a waiting caller looks at the stop flag and at the tasks' health.
const POLL_SLICE: Duration = Duration::from_millis(50);

/// Started tasks; dropping the team ends them (threads are woken and joined, children are
/// killed with SIGKILL and reaped).
pub(crate) struct Team {
    ctl: Arc<Shared<Control>>,
    done: Arc<EventFd>,
    members: Vec<Member>,
}

impl Team {
    /// Starts the tasks and waits until all have set up.
    pub(crate) fn spawn(tasks: Vec<TaskSetup>, processes: bool) -> Result<Team, LiveError> {
        let ctl =
            Arc::new(Shared::<Control>::new().call(|| "mmap(MAP_SHARED control block)".into())?);
        let done = Arc::new(EventFd::from_flags(EfdFlags::EFD_CLOEXEC).call(|| "eventfd".into())?);
        let mut team = Team { ctl, done, members: Vec::with_capacity(tasks.len()) };
        for (i, setup) in tasks.into_iter().enumerate() {
            let start =
                Arc::new(EventFd::from_flags(EfdFlags::EFD_CLOEXEC).call(|| "eventfd".into())?);
            let handle = if processes {
                let (ctl, s, d) = (&*team.ctl, &*start, &*team.done);
                let pid = fork_child(|| task_main(ctl, i, &setup, s, d))
                    .call(|| format!("fork (task {i})"))?;
                Handle::Process(Some(pid))
            } else {
                let (ctl, s, d) = (team.ctl.clone(), start.clone(), team.done.clone());
                let h = std::thread::Builder::new()
                    .name(format!("tlblab-task{i}"))
                    .spawn(move || {
                        task_main(&ctl, i, &setup, &s, &d);
                    })
                    .map_err(|e| LiveError::Syscall {
                        what: format!("spawning thread (task {i})"),
                        errno: Errno::from_raw(e.raw_os_error().unwrap_or(0)),
                    })?;
                Handle::Thread(Some(h))
            };
            team.members.push(Member { start, handle });
        }
        team.collect(team.members.len(), None, None, Some(Instant::now() + ANSWER_TIMEOUT))?;
        Ok(team)
    }

    /// Starts a run of `target` operations per task (`u64::MAX`: until [`stop`](Self::stop)).
    pub(crate) fn start(&self, target: u64) -> Result<(), LiveError> {
        self.ctl.stop.store(false, Ordering::Relaxed);
        self.ctl.spinning.store(0, Ordering::Relaxed);
        for slot in &self.ctl.tasks[..self.members.len()] {
            slot.ops.store(0, Ordering::Relaxed);
        }
        self.ctl.target.store(target, Ordering::Release);
        for (i, m) in self.members.iter().enumerate() {
            m.start.write(1).call(|| format!("eventfd write (start task {i})"))?;
        }
        Ok(())
    }

    /// Waits until `n` spinning tasks have started to spin.
    pub(crate) fn wait_spinning(&mut self, n: u64) -> Result<(), LiveError> {
        let give_up = Instant::now() + ANSWER_TIMEOUT;
        while self.ctl.spinning.load(Ordering::Acquire) < n {
            std::thread::yield_now();
            if Instant::now() > give_up {
                self.check_alive()?;
                return Err(LiveError::Timeout {
                    what: "start spinning",
                    secs: ANSWER_TIMEOUT.as_secs(),
                });
            }
        }
        Ok(())
    }

    /// Asks the tasks to end the run.
    pub(crate) fn stop(&self) {
        self.ctl.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for every task to end the run: stops them at `deadline` or when `user` is set.
    /// Returns whether `user` stopped the run.
    pub(crate) fn finish(
        &mut self,
        user: &AtomicBool,
        deadline: Option<Instant>,
    ) -> Result<bool, LiveError> {
        self.collect(self.members.len(), Some(user), deadline, None)
    }

    /// The tasks' figures for the last run.
    pub(crate) fn results(&self) -> Vec<TaskRun> {
        self.ctl.tasks[..self.members.len()]
            .iter()
            .map(|s| TaskRun {
                ops: s.ops.load(Ordering::Acquire),
                start_ns: s.start_ns.load(Ordering::Relaxed),
                end_ns: s.end_ns.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Collects `n` done tokens, stopping the tasks at `deadline` or when `user` is set, and
    /// giving up at `give_up` (set to now + [`ANSWER_TIMEOUT`] once the tasks were asked to
    /// stop). Reports a task's own error first.
    fn collect(
        &mut self,
        n: usize,
        user: Option<&AtomicBool>,
        deadline: Option<Instant>,
        mut give_up: Option<Instant>,
    ) -> Result<bool, LiveError> {
        let mut got = 0u64;
        let mut interrupted = false;
        while got < n as u64 {
            let now = Instant::now();
            let user_stop = user.is_some_and(|u| u.load(Ordering::Relaxed));
            if give_up.is_none() && (user_stop || deadline.is_some_and(|d| now >= d)) {
                self.stop();
                interrupted = user_stop;
                give_up = Some(now + ANSWER_TIMEOUT);
            }
            let mut slice = POLL_SLICE;
            if let (Some(d), None) = (deadline, give_up) {
                slice = slice.min(d.saturating_duration_since(now));
            }
            let timeout = PollTimeout::try_from(slice).unwrap_or(PollTimeout::ZERO);
            let mut fds = [PollFd::new(self.done.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) | Err(Errno::EINTR) => {}
                Ok(_) => got += read_token(&self.done).call(|| "eventfd read (done)".into())?,
                Err(e) => return Err(e).call(|| "poll (done)".into()),
            }
            if got < n as u64 {
                self.check_alive()?;
                if give_up.is_some_and(|g| Instant::now() > g) {
                    return Err(LiveError::Timeout {
                        what: "finish setting up or stop",
                        secs: ANSWER_TIMEOUT.as_secs(),
                    });
                }
            }
        }
        self.check_errors()?;
        Ok(interrupted)
    }

    fn check_errors(&self) -> Result<(), LiveError> {
        for (task, slot) in self.ctl.tasks[..self.members.len()].iter().enumerate() {
            let e = slot.error.load(Ordering::Acquire);
            if e != 0 {
                let stage = STAGES.get((e >> 32) as usize).copied().unwrap_or("?");
                return Err(LiveError::Task {
                    task,
                    stage,
                    errno: Errno::from_raw(e as u32 as i32),
                });
            }
        }
        Ok(())
    }

    /// Fails if a task has ended (reaping it if it is a process).
    fn check_alive(&mut self) -> Result<(), LiveError> {
        for (task, m) in self.members.iter_mut().enumerate() {
            let what = match &mut m.handle {
                Handle::Thread(Some(h)) if h.is_finished() => "(thread) ended".to_string(),
                Handle::Process(pid @ Some(_)) => {
                    let p = pid.unwrap_or(Pid::from_raw(0));
                    match waitpid(p, Some(WaitPidFlag::WNOHANG)) {
                        Ok(WaitStatus::Exited(_, code)) => {
                            *pid = None;
                            format!("(pid {p}) exited with status {code}")
                        }
                        Ok(WaitStatus::Signaled(_, sig, _)) => {
                            *pid = None;
                            format!("(pid {p}) was killed by {sig}")
                        }
                        _ => continue,
                    }
                }
                _ => continue,
            };
            self.check_errors()?;
            return Err(LiveError::TaskLost { task, what });
        }
        Ok(())
    }

    /// Child pids (for tests that check they are gone after drop).
    pub(crate) fn pids(&self) -> Vec<i32> {
        self.members
            .iter()
            .filter_map(|m| match m.handle {
                Handle::Process(Some(p)) => Some(p.as_raw()),
                _ => None,
            })
            .collect()
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.ctl.shutdown.store(true, Ordering::Release);
        self.stop();
        for m in &self.members {
            match m.handle {
                Handle::Thread(_) => {
                    let _ = m.start.write(1);
                }
                Handle::Process(Some(pid)) => {
                    let _ = kill(pid, Signal::SIGKILL);
                }
                Handle::Process(None) => {}
            }
        }
        for m in &mut self.members {
            match &mut m.handle {
                Handle::Thread(h) => {
                    if let Some(h) = h.take() {
                        let _ = h.join();
                    }
                }
                Handle::Process(pid) => {
                    if let Some(p) = pid.take() {
                        while let Err(Errno::EINTR) = waitpid(p, None) {}
                    }
                }
            }
        }
    }
}
