//! `prepare`: a scenario's tasks started, pinned, with memory mapped and touched; `run`: one
//! measured run of it.

use crate::cpu::{one_cpu, online_cpus, pin_current, AffinityGuard};
use crate::error::{Context, LiveError, OpError};
use crate::measure::{bare, measure, Measured, RunLength, RunSample, StopHandle};
use crate::spec::{Kind, LiveParams, LiveScenarioInfo, Mode, ScenarioSpec, StormOp, Unit};
use crate::sys::{page_size, Region};
use crate::team::{now_ns, TaskSetup, Team, Work};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which CPU each task gets.
///
/// Tasks, in order: `madv-migrate`: the two CPUs it alternates between (it starts on the
/// first); `pingpong`: the caller's process, then the forked one (by default both on the first
/// online CPU, as S2 has it); `madvise-busy`, `storm`: the measuring thread (the caller), then
/// the spinning siblings; `munmap-threads`, `tlb-flush2`, `madvise-scale`, `pthread-mmap`: the
/// tasks. The
/// default puts task `i` on online CPU `i` (wrapping around). An explicit list needs as many
/// CPUs as the scenario's minimum; tasks beyond it wrap around the list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The CPUs, by task; `None` for the default.
    pub cpus: Option<Vec<usize>>,
}

impl Placement {
    /// Tasks on these CPUs.
    pub fn on(cpus: Vec<usize>) -> Placement {
        Placement { cpus: Some(cpus) }
    }

    /// The CPU of each of `tasks` tasks.
    fn assign(
        &self,
        info: &LiveScenarioInfo,
        params: &LiveParams,
        tasks: usize,
        online: &[usize],
    ) -> Result<Vec<usize>, LiveError> {
        let list = match &self.cpus {
            Some(list) => {
                if let Some(&cpu) = list.iter().find(|c| !online.contains(c)) {
                    return Err(LiveError::CpuNotOnline { cpu, online: online.to_vec() });
                }
                let needed = info.min_cpus(params);
                if list.len() < needed {
                    return Err(LiveError::BadParameter {
                        scenario: info.name,
                        message: format!(
                            "the placement lists {} CPUs, the settings need {needed}",
                            list.len()
                        ),
                    });
                }
                list.clone()
            }
            None if info.kind == Kind::PingPong => vec![online[0]],
            None => online.to_vec(),
        };
        Ok((0..tasks).map(|i| list[i % list.len()]).collect())
    }
}

/// Where scenarios map their memory: 64 slots of 1 TiB from 32 TiB up, task `i`'s region at
/// `i` GiB into its slot. These addresses are far from where the kernel places the heap, the
/// libraries and `mmap(NULL, …)` results, and `MAP_FIXED_NOREPLACE` makes every run of a
/// configuration use the same ones, so its page-table layout does not vary with ASLR.
const BASE: usize = 0x2000_0000_0000;
const SLOT_SPAN: usize = 1 << 40;
const TASK_SPAN: usize = 1 << 30;
static USED_SLOTS: Mutex<u64> = Mutex::new(0);

/// A slot of address space held by one `Prepared` (the lowest free one, so a configuration
/// prepared alone always gets slot 0).
struct AddrSlot(usize);

impl AddrSlot {
    fn take() -> Result<AddrSlot, LiveError> {
        let mut used = USED_SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        let free = (!*used).trailing_zeros() as usize;
        if free >= 64 {
            return Err(LiveError::BadParameter {
                scenario: "prepare",
                message: "64 prepared scenarios are alive already".into(),
            });
        }
        *used |= 1 << free;
        Ok(AddrSlot(free))
    }

    fn task(&self, i: usize) -> usize {
        BASE + self.0 * SLOT_SPAN + i * TASK_SPAN
    }
}

impl Drop for AddrSlot {
    fn drop(&mut self) {
        *USED_SLOTS.lock().unwrap_or_else(|e| e.into_inner()) &= !(1 << self.0);
    }
}

/// The operation of a scenario whose measured loop runs on the caller.
enum LoopOp {
    MadvMigrate { region: Region, sets: Box<[CpuSet; 2]>, next: usize },
    PingPong { ping: Arc<EventFd>, pong: Arc<EventFd>, region: Option<Region> },
    Madvise { region: Region },
    StormMunmap { _anchor: Region, addr: usize, pages: usize },
    StormMprotect { region: Region },
}

/// Expands `$body` once per operation kind with `$f` bound to that operation's closure, so the
/// measured and the bare loop run the very same code, each monomorphised.
macro_rules! with_op {
    ($op:expr, |$f:ident| $body:expr) => {
        match $op {
            LoopOp::MadvMigrate { region, sets, next } => {
                let $f = || {
                    region.write(0..1).op("write")?;
                    region.dontneed(0..1).op("madvise(MADV_DONTNEED)")?;
                    *next ^= 1;
                    sched_setaffinity(Pid::from_raw(0), &sets[*next]).op("sched_setaffinity")
                };
                $body
            }
            LoopOp::PingPong { ping, pong, region } => {
                let $f = || {
                    if let Some(r) = region.as_ref() {
                        r.read(0..r.pages());
                    }
                    ping.write(1).op("eventfd write")?;
                    pong.read().op("eventfd read")?;
                    Ok(())
                };
                $body
            }
            LoopOp::Madvise { region } => {
                let $f = || {
                    region.write(0..1).op("write")?;
                    region.dontneed(0..1).op("madvise(MADV_DONTNEED)")
                };
                $body
            }
            LoopOp::StormMunmap { addr, pages, .. } => {
                let $f = || {
                    let r = Region::map_fixed(*addr, *pages).op("mmap(MAP_FIXED_NOREPLACE)")?;
                    r.write(0..*pages).op("write")?;
                    r.unmap().op("munmap")
                };
                $body
            }
            LoopOp::StormMprotect { region } => {
                let $f = || {
                    region.protect_cycle().op("mprotect")?;
                    region.write(0..region.pages()).op("write")
                };
                $body
            }
        }
    };
}

enum Body {
    /// The caller runs the measured loop on `cpu`; `helpers` spin (`spinners` of them) or echo.
    Loop { cpu: usize, op: LoopOp, helpers: Option<Team>, spinners: u64 },
    /// Tasks run the measured loops; `rounds` is the fixed work of `pthread-mmap`.
    Tasks { team: Team, rounds: Option<u64> },
}

/// A scenario ready to run: tasks started and pinned, memory mapped and touched once.
///
/// After an error from [`run`](Self::run), drop it: its tasks may be mid-run.
///
/// Dropping it ends every task (threads via the shared stop flag and joined, child processes
/// killed with SIGKILL and reaped) and restores the calling thread's CPU affinity. It is not
/// `Send`: it pins, and restores, the thread that prepared it. Forked children also die when
/// that thread exits (`PR_SET_PDEATHSIG`), should it end without dropping this.
///
/// ```compile_fail
/// fn send<T: Send>() {}
/// send::<tlblab_live::Prepared>();
/// ```
pub struct Prepared {
    body: Body,
    slot: AddrSlot,
    spec: ScenarioSpec,
    info: &'static LiveScenarioInfo,
    stop: StopHandle,
    _affinity: AffinityGuard,
}

/// Sets up a scenario (nothing is measured yet). The caller's thread is pinned to task 0's CPU
/// for the scenarios that measure on it (see [`Placement`]).
pub fn prepare(spec: &ScenarioSpec, placement: &Placement) -> Result<Prepared, LiveError> {
    let info = spec.info()?;
    let online = online_cpus()?;
    let p = info.validate(&spec.params, online.len())?;
    let (busy, tasks, pages) =
        (p.busy.unwrap_or(0), p.tasks.unwrap_or(1), p.pages.unwrap_or(1) as usize);
    let n_tasks = match info.kind {
        Kind::MadvMigrate | Kind::PingPong => 2,
        Kind::MadviseBusy | Kind::Storm => busy + 1,
        Kind::MunmapThreads | Kind::TlbFlush2 | Kind::MadviseScale | Kind::PthreadMmap => tasks,
    };
    let cpus = placement.assign(info, &p, n_tasks, &online)?;
    let affinity = AffinityGuard::save()?;
    let slot = AddrSlot::take()?;
    let spin = |cpus: &[usize]| -> Result<Option<Team>, LiveError> {
        if cpus.is_empty() {
            return Ok(None);
        }
        let setups = cpus.iter().map(|&cpu| TaskSetup { cpu, addr: 0, work: Work::Spin }).collect();
        Team::spawn(setups, false).map(Some)
    };
    let map = |addr: usize, pages: usize| {
        Region::map_fixed(addr, pages)
            .call(|| format!("mmap({pages} pages at {addr:#x}, MAP_FIXED_NOREPLACE)"))
    };
    let body = match info.kind {
        Kind::MadvMigrate => {
            let region = map(slot.task(0), 2)?;
            region.write(0..2).call(|| "write".into())?;
            let set = |c| one_cpu(c).call(|| format!("CPU {c}"));
            Body::Loop {
                cpu: cpus[0],
                op: LoopOp::MadvMigrate {
                    region,
                    sets: Box::new([set(cpus[0])?, set(cpus[1])?]),
                    next: 0,
                },
                helpers: None,
                spinners: 0,
            }
        }
        Kind::PingPong => {
            let touch = p.touch.unwrap_or(0) as usize;
            let efd = || {
                EventFd::from_flags(EfdFlags::EFD_CLOEXEC).call(|| "eventfd".into()).map(Arc::new)
            };
            let (ping, pong) = (efd()?, efd()?);
            let work = Work::Echo { ping: ping.clone(), pong: pong.clone(), touch };
            // Fork before mapping: the child maps its own never-written region at the same
            // address, so both sides read the zero page through the same page-table layout.
            let echo =
                Team::spawn(vec![TaskSetup { cpu: cpus[1], addr: slot.task(0), work }], true)?;
            let region = match touch {
                0 => None,
                n => Some(map(slot.task(0), n)?),
            };
            if let Some(r) = &region {
                r.read(0..r.pages());
            }
            Body::Loop {
                cpu: cpus[0],
                op: LoopOp::PingPong { ping, pong, region },
                helpers: Some(echo),
                spinners: 0,
            }
        }
        Kind::MadviseBusy | Kind::Storm => {
            let base = slot.task(0);
            let op = match (info.kind, p.op) {
                (Kind::Storm, Some(StormOp::Munmap)) => {
                    // The anchor page stays mapped so that munmap never frees the page table.
                    let anchor = map(base, 1)?;
                    anchor.write(0..1).call(|| "write".into())?;
                    let addr = base + page_size();
                    map(addr, pages)?.write(0..pages).call(|| "write".into())?;
                    LoopOp::StormMunmap { _anchor: anchor, addr, pages }
                }
                (Kind::Storm, _) => {
                    let region = map(base, pages)?;
                    region.write(0..pages).call(|| "write".into())?;
                    LoopOp::StormMprotect { region }
                }
                _ => {
                    // Page 1 is the anchor, written once, that keeps the page table in use.
                    let region = map(base, 2)?;
                    region.write(0..2).call(|| "write".into())?;
                    LoopOp::Madvise { region }
                }
            };
            Body::Loop { cpu: cpus[0], op, helpers: spin(&cpus[1..])?, spinners: busy as u64 }
        }
        Kind::MunmapThreads | Kind::TlbFlush2 | Kind::MadviseScale | Kind::PthreadMmap => {
            let (work, processes): (fn(usize) -> Work, bool) = match info.kind {
                Kind::MunmapThreads => {
                    (|pages| Work::Madvise { pages }, p.mode == Some(Mode::Processes))
                }
                // will-it-scale's MEMORYSIZE, 1 MiB.
                Kind::TlbFlush2 => (
                    |_| Work::TlbFlush2 { pages: (1 << 20) / page_size() },
                    p.mode == Some(Mode::Processes),
                ),
                Kind::MadviseScale => (|_| Work::Madvise { pages: 1 }, true),
                _ => (|pages| Work::MmapRounds { pages }, false),
            };
            let setups = (0..tasks)
                .map(|i| TaskSetup { cpu: cpus[i], addr: slot.task(i), work: work(pages) })
                .collect();
            let rounds = (info.kind == Kind::PthreadMmap).then(|| p.iterations.unwrap_or(1));
            Body::Tasks { team: Team::spawn(setups, processes)?, rounds }
        }
    };
    if let Body::Loop { cpu, .. } = body {
        pin_current(cpu).call(|| format!("sched_setaffinity(CPU {cpu})"))?;
    }
    Ok(Prepared {
        body,
        slot,
        spec: ScenarioSpec { name: spec.name.clone(), params: p },
        info,
        stop: StopHandle::new(),
        _affinity: affinity,
    })
}

impl Prepared {
    /// The spec, with every default filled in.
    pub fn spec(&self) -> &ScenarioSpec {
        &self.spec
    }

    /// The scenario.
    pub fn info(&self) -> &'static LiveScenarioInfo {
        self.info
    }

    /// The flag that ends this scenario's runs early (clones share it).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Uses `stop` as this scenario's stop flag (one flag for every prepared configuration).
    pub fn set_stop_handle(&mut self, stop: StopHandle) {
        self.stop = stop;
    }

    /// The pids of its child processes.
    pub fn child_pids(&self) -> Vec<i32> {
        match &self.body {
            Body::Loop { helpers, .. } => helpers.as_ref().map(Team::pids).unwrap_or_default(),
            Body::Tasks { team, .. } => team.pids(),
        }
    }

    /// The first byte of its address-space slot (all its regions lie in the 1 TiB above).
    pub fn address_base(&self) -> usize {
        self.slot.task(0)
    }

    /// One measured run. `RunLength::Ops(0)` is refused; `pthread-mmap` ignores the length (one
    /// run is its whole fixed work).
    ///
    /// If the stop flag is already set this returns [`LiveError::Interrupted`]; if it is set
    /// during the run, the run ends within [`BATCH`](crate::BATCH) operations and returns the
    /// partial sample with `interrupted` set (or `Interrupted` if no operation finished).
    pub fn run(&mut self, len: RunLength) -> Result<RunSample, LiveError> {
        if len == RunLength::Ops(0) {
            return Err(LiveError::BadParameter {
                scenario: self.info.name,
                message: "a run needs at least one op".into(),
            });
        }
        if self.stop.is_stopped() {
            return Err(LiveError::Interrupted);
        }
        let stop = self.stop.flag();
        match &mut self.body {
            Body::Loop { cpu, op, helpers, spinners } => {
                let m = with_helpers(*cpu, helpers, *spinners, stop, || {
                    with_op!(op, |f| measure(len, stop, f))
                })?;
                let Measured { ops, elapsed, interrupted } = m;
                if ops == 0 {
                    return Err(LiveError::Interrupted);
                }
                let elapsed_ns = elapsed.as_nanos() as u64;
                let value = elapsed_ns as f64 / ops as f64 / 1000.0;
                Ok(RunSample { ops, elapsed_ns, value, per_task_ops: vec![ops], interrupted })
            }
            Body::Tasks { team, rounds } => {
                let (target, deadline) = match (len, *rounds) {
                    (_, Some(r)) => (r, None),
                    (RunLength::Ops(n), None) => (n, None),
                    (RunLength::Time(d), None) => (u64::MAX, Some(Instant::now() + d)),
                };
                let t0 = now_ns();
                team.start(target)?;
                let interrupted = team.finish(stop, deadline)?;
                let runs = team.results();
                let per_task_ops: Vec<u64> = runs.iter().map(|r| r.ops).collect();
                let ops = per_task_ops.iter().sum();
                if ops == 0 {
                    return Err(LiveError::Interrupted);
                }
                let end = runs.iter().map(|r| r.end_ns).max().unwrap_or(t0);
                let elapsed_ns = end.saturating_sub(t0);
                let value = match self.info.unit {
                    Unit::OpsPerSecond => runs
                        .iter()
                        .filter(|r| r.end_ns > r.start_ns)
                        .map(|r| r.ops as f64 * 1e9 / (r.end_ns - r.start_ns) as f64)
                        .sum(),
                    _ => elapsed_ns as f64 / 1e9,
                };
                Ok(RunSample { ops, elapsed_ns, value, per_task_ops, interrupted })
            }
        }
    }

    /// `n` operations of the measured loop with no harness around them (no stop flag, no
    /// counting, no clock but at the ends), helpers running as in [`run`](Self::run): the
    /// baseline that the harness overhead is measured against.
    pub fn run_bare(&mut self, n: u64) -> Result<Duration, LiveError> {
        match &mut self.body {
            Body::Loop { cpu, op, helpers, spinners } => {
                let stop = self.stop.flag();
                with_helpers(*cpu, helpers, *spinners, stop, || with_op!(op, |f| bare(n, f)))
            }
            Body::Tasks { .. } => {
                Err(LiveError::Unsupported { scenario: self.info.name, what: "a bare run" })
            }
        }
    }
}

/// Pins the caller to `cpu`, starts the spinners (and waits until they spin), runs `body`, and
/// parks the spinners again whatever `body` returned.
fn with_helpers<T>(
    cpu: usize,
    helpers: &mut Option<Team>,
    spinners: u64,
    stop: &std::sync::atomic::AtomicBool,
    body: impl FnOnce() -> Result<T, OpError>,
) -> Result<T, LiveError> {
    pin_current(cpu).call(|| format!("sched_setaffinity(CPU {cpu})"))?;
    let team = helpers.as_mut().filter(|_| spinners > 0);
    if let Some(team) = team {
        team.start(u64::MAX)?;
        if let Err(e) = team.wait_spinning(spinners) {
            team.stop();
            let _ = team.finish(stop, None);
            return Err(e);
        }
        let result = body();
        team.stop();
        team.finish(stop, None)?;
        Ok(result?)
    } else {
        Ok(body()?)
    }
}
