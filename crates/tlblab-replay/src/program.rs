//! The programs the model runs: one per traced thread, following its schedule and making its
//! requests at their recorded times, and a timer that wakes sleeping threads.

use crate::options::Refill;
use crate::plan::{Kind, Plan, Request, Size};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use tlblab_kernel::mm::VmaId;
use tlblab_kernel::program::{Action, Env, EventFd, Outcome, Program, Syscall, Touch};
use tlblab_types::{AccessKind, CpuId};

/// The longest stretch a thread computes in one step: the model preempts only between steps,
/// so a longer one would keep a woken thread waiting.
const COMPUTE_CHUNK: u64 = 200_000;

/// How one run is set up (the same for a replay and its twin).
#[derive(Clone, Debug)]
pub(crate) struct RunSetup {
    /// Simulated time (cycles) of the first record: setup happens before it.
    pub lead: u64,
    /// Core clock.
    pub mhz: u64,
    /// The twin: every request is made on pages that are not present, so nothing is flushed.
    pub twin: bool,
    pub refill: Refill,
    /// The range of a censored request, in pages (above every ceiling of the run).
    pub censored_pages: u64,
    /// Pages of each process's pool for batched reclaim (0: the trace has no batches).
    pub pool_pages: u64,
}

impl RunSetup {
    /// Simulated time of `ns` after the first record (replay time: quiet gaps shortened);
    /// saturating, though a replay checks its span fits first ([`crate::run::check_span`]).
    pub fn at(&self, ns: u64) -> u64 {
        let cycles = u128::from(ns) * u128::from(self.mhz) / 1000;
        self.lead.saturating_add(u64::try_from(cycles).unwrap_or(u64::MAX))
    }

    /// Pages a request covers in the model.
    pub fn pages(&self, r: &Request) -> u64 {
        match r.size {
            Size::Pages(n) => n,
            Size::Censored => self.censored_pages,
        }
    }

    /// Pages of a thread's main region: its largest request, and its working set.
    pub fn main_pages(&self, requests: &[Request]) -> u64 {
        let largest = requests
            .iter()
            .filter(|r| r.kind == Kind::Mm)
            .map(|r| self.pages(r))
            .max()
            .unwrap_or(0);
        match self.refill {
            Refill::WorkingSet(w) => largest.max(w),
            _ => largest,
        }
    }
}

/// What the programs of one run measure.
#[derive(Clone, Debug, Default)]
pub(crate) struct Meter {
    /// Threads done with their schedule.
    pub done: usize,
    /// When the last of them finished.
    pub finish: u64,
    /// Requests made.
    pub requests: u64,
    /// Cycles from each request's system call to its return, summed.
    pub syscall_cycles: u64,
    /// Lateness of requests (the model behind the recording), summed and largest, cycles.
    pub slip_sum: u64,
    pub slip_max: u64,
    /// Requests made more than 1 µs late.
    pub late: u64,
    /// Threads whose setup ended after their first segment should have begun.
    pub setup_late: u64,
    /// Per thread: wake-ups the timer has written.
    pub writes: Vec<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    MapPool,
    GotPool,
    MapMain,
    GotMain,
    MapShadow,
    GotShadow,
    TouchPool,
    SegStart,
    Sleep,
    Woken,
    Body,
    Issued(u64),
    Done,
}

/// A traced thread.
pub(crate) struct ThreadProgram {
    plan: Arc<Plan>,
    t: usize,
    setup: Arc<RunSetup>,
    meter: Rc<RefCell<Meter>>,
    fd: EventFd,
    main_pages: u64,
    pool_pages: u64,
    main: Option<VmaId>,
    shadow: Option<VmaId>,
    pool: Option<VmaId>,
    st: St,
    seg: usize,
    req: usize,
    started: bool,
    /// Sleeps begun, and wake-ups consumed by reads (a read takes every write so far).
    sleeps: u64,
    absorbed: u64,
    reading: bool,
}

impl ThreadProgram {
    pub fn new(
        plan: Arc<Plan>,
        t: usize,
        setup: Arc<RunSetup>,
        meter: Rc<RefCell<Meter>>,
        fd: EventFd,
        pool_pages: u64,
    ) -> ThreadProgram {
        let main_pages = setup.main_pages(&plan.threads[t].requests);
        ThreadProgram {
            plan,
            t,
            setup,
            meter,
            fd,
            main_pages,
            pool_pages,
            main: None,
            shadow: None,
            pool: None,
            st: St::MapPool,
            seg: 0,
            req: 0,
            started: false,
            sleeps: 0,
            absorbed: 0,
            reading: false,
        }
    }

    fn touch(vma: Option<VmaId>, pages: u64, kind: AccessKind) -> Option<Action> {
        let vma = vma.filter(|_| pages > 0)?;
        Some(Action::Touch(Touch::new(vma, 0, pages, kind, 0)))
    }

    fn request(&self, r: &Request) -> Syscall {
        match (r.kind, self.setup.twin) {
            (Kind::Mm, twin) => {
                let vma = if twin { self.shadow } else { self.main };
                let vma = vma.expect("a thread with requests maps its regions");
                Syscall::Mprotect { vma, first: 0, pages: self.setup.pages(r) }
            }
            (Kind::Batch, false) => Syscall::Reclaim { pages: 1 },
            (Kind::Batch, true) => Syscall::Null,
        }
    }

    /// Pages referenced after a request.
    fn refill(&self, r: &Request) -> u64 {
        match (self.setup.refill, r.kind) {
            (Refill::None, _) | (Refill::Flushed, Kind::Batch) => 0,
            (Refill::Flushed, Kind::Mm) => self.setup.pages(r),
            (Refill::WorkingSet(w), _) => w,
        }
    }
}

fn mapped(env: &Env<'_>) -> Option<VmaId> {
    match env.last {
        Outcome::Mapped(vma) => Some(vma),
        _ => None,
    }
}

impl Program for ThreadProgram {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let now = env.now.0;
        {
            let m = self.meter.borrow_mut();
            if std::mem::take(&mut self.reading) {
                self.absorbed = m.writes[self.t];
            }
        }
        loop {
            let th = &self.plan.threads[self.t];
            match self.st {
                St::MapPool => {
                    self.st = St::GotPool;
                    if self.pool_pages > 0 {
                        return Action::Syscall(Syscall::Mmap { pages: self.pool_pages });
                    }
                }
                St::GotPool => {
                    self.pool = mapped(env).filter(|_| self.pool_pages > 0);
                    self.st = St::MapMain;
                }
                St::MapMain => {
                    if self.main_pages == 0 {
                        self.st = St::TouchPool;
                        continue;
                    }
                    self.st = St::GotMain;
                    return Action::Syscall(Syscall::Mmap { pages: self.main_pages });
                }
                St::GotMain => {
                    self.main = mapped(env);
                    self.st = St::MapShadow;
                }
                St::MapShadow => {
                    self.st = St::GotShadow;
                    return Action::Syscall(Syscall::Mmap { pages: self.main_pages });
                }
                St::GotShadow => {
                    self.shadow = mapped(env);
                    self.st = St::TouchPool;
                    // Written, so that every page is present for the flushes to cover.
                    if let Some(a) = Self::touch(self.main, self.main_pages, AccessKind::Store) {
                        return a;
                    }
                }
                St::TouchPool => {
                    self.st = St::SegStart;
                    if let Some(a) = Self::touch(self.pool, self.pool_pages, AccessKind::Store) {
                        return a;
                    }
                }
                St::SegStart => {
                    let Some(s) = th.segments.get(self.seg) else {
                        let mut m = self.meter.borrow_mut();
                        m.done += 1;
                        m.finish = m.finish.max(now);
                        self.st = St::Done;
                        continue;
                    };
                    if !self.started {
                        self.started = true;
                        if now > self.setup.at(s.from_ns) {
                            self.meter.borrow_mut().setup_late += 1;
                        }
                    }
                    self.st = St::Sleep;
                    // Move first, so that the wake-up finds the thread on its next CPU.
                    if usize::from(s.cpu) != usize::from(env.cpu.0) {
                        return Action::Syscall(Syscall::SetAffinity { cpu: CpuId(s.cpu) });
                    }
                }
                St::Sleep => {
                    self.st = St::Woken;
                    if th.sleeps_before(self.seg) {
                        // The timer writes once per planned sleep, in order; a read takes every
                        // write so far. Skip the read only when this sleep's write has come and
                        // an earlier read took it (the thread is late).
                        let j = self.sleeps;
                        self.sleeps += 1;
                        if self.meter.borrow().writes[self.t] > j && self.absorbed > j {
                            continue;
                        }
                        self.reading = true;
                        return Action::Syscall(Syscall::EventfdRead { fd: self.fd });
                    }
                }
                St::Woken => {
                    self.st = St::Body;
                    let first = th.sleeps_before(self.seg);
                    if let (Refill::WorkingSet(w), true) = (self.setup.refill, first) {
                        if let Some(a) = Self::touch(self.main, w, AccessKind::Load) {
                            return a;
                        }
                    }
                }
                St::Body => {
                    let s = th.segments[self.seg];
                    let req = self.req.max(s.first);
                    if req < s.end {
                        let r = th.requests[req];
                        let at = self.setup.at(r.at_ns);
                        if now < at {
                            return Action::Compute { cycles: (at - now).min(COMPUTE_CHUNK) };
                        }
                        let slip = now - at;
                        let mut m = self.meter.borrow_mut();
                        m.requests += 1;
                        m.slip_sum += slip;
                        m.slip_max = m.slip_max.max(slip);
                        if slip > self.setup.mhz {
                            m.late += 1;
                        }
                        self.req = req;
                        self.st = St::Issued(now);
                        return Action::Syscall(self.request(&r));
                    }
                    let end = self.setup.at(s.to_ns);
                    if now < end {
                        return Action::Compute { cycles: (end - now).min(COMPUTE_CHUNK) };
                    }
                    self.seg += 1;
                    self.st = St::SegStart;
                }
                St::Issued(since) => {
                    self.meter.borrow_mut().syscall_cycles += now - since;
                    let r = th.requests[self.req];
                    self.req += 1;
                    self.st = St::Body;
                    if let Some(a) = Self::touch(self.main, self.refill(&r), AccessKind::Load) {
                        return a;
                    }
                }
                // Blocks for good: no wake-up is planned after the last segment.
                St::Done => return Action::Syscall(Syscall::EventfdRead { fd: self.fd }),
            }
        }
    }
}

/// Wakes sleeping threads at their planned times (the model has no timers: this program, alone
/// on a CPU of its own, stands for the hrtimer interrupt).
pub(crate) struct Timer {
    /// `(cycles, eventfd, thread)`, in time order.
    pub wakes: Vec<(u64, EventFd, usize)>,
    pub next: usize,
    pub meter: Rc<RefCell<Meter>>,
    /// Its own eventfd, never written: it blocks on it when done.
    pub fd: EventFd,
}

impl Program for Timer {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let Some(&(at, fd, t)) = self.wakes.get(self.next) else {
            return Action::Syscall(Syscall::EventfdRead { fd: self.fd });
        };
        if env.now.0 < at {
            return Action::Compute { cycles: at - env.now.0 };
        }
        self.next += 1;
        self.meter.borrow_mut().writes[t] += 1;
        Action::Syscall(Syscall::EventfdWrite { fd })
    }
}
