//! The scenarios of studies.md as programs of the model, with the same names and parameters as
//! the live benchmarks (`tlblab bench`).
//!
//! Each scenario installs its tasks into a [`Kernel`] and defines one metric, computed from the
//! run's report. Memory references are at page granularity; `cycles_per_page` is the work a
//! program does per page besides translation.

mod deferred;
pub mod hackbench;
mod inputs;
mod kbuild;
mod peers;
pub mod reuse;
mod stale;

pub use inputs::ScenarioInput;
pub use kbuild::BuildMix;
pub use peers::{StormOp, TLB_FLUSH2_PAGES};

use crate::kernel::Kernel;
use crate::mm::VmaId;
use crate::observer::Observer;
use crate::program::{Action, Env, EventFd, Outcome, Program, Syscall, Touch, WorkingSet};
use crate::stats::KernelReport;
use serde::Serialize;
use thiserror::Error;
use tlblab_types::{AccessKind, CpuId};

/// A scenario that cannot run as asked.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// No scenario has this name.
    #[error("unknown scenario {0:?}{hint} (known: {known})", hint = tlblab_types::names::did_you_mean(.0, SCENARIOS.iter().map(|s| s.name)), known = SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>().join(", "))]
    Unknown(String),
    /// The machine has too few CPUs.
    #[error("scenario {scenario} needs at least {needed} CPUs, the run has {got}")]
    TooFewCpus {
        /// The scenario.
        scenario: &'static str,
        /// CPUs it needs.
        needed: usize,
        /// CPUs the run has.
        got: usize,
    },
    /// A parameter is out of range.
    #[error("scenario {scenario}: {message}")]
    BadParameter {
        /// The scenario.
        scenario: &'static str,
        /// What is wrong.
        message: String,
    },
}

/// Parameters shared by the scenarios (each uses the ones it names).
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    /// Iterations (or rounds) of the measured loop.
    pub iterations: u64,
    /// `pingpong --touch N`: pages each side touches per round trip.
    pub touch: u64,
    /// `madvise-busy --busy N`: sibling threads spinning on other CPUs.
    pub busy: usize,
    /// `munmap-threads`, `tlb-flush2 --tasks N` / `madvise-scale` workers / `pthread-mmap`
    /// threads.
    pub tasks: usize,
    /// `munmap-threads`, `tlb-flush2 --mode`: `true` for threads (one mm), `false` for
    /// processes.
    pub threads: bool,
    /// `storm --op`.
    pub op: StormOp,
    /// Pages of the region each task works on.
    pub pages: u64,
    /// Work per page referenced, in cycles (a page of its own; pingpong's zero-page loads cost
    /// [`ZERO_PAGE_LOAD_CYCLES`] with mechanism `zero-page-line`).
    pub cycles_per_page: u64,
    /// `kbuild*`: compile jobs in the build (0: jobs never run out; the run is a window).
    pub jobs: u64,
    /// Stop after this much simulated time, ms (0: the scenario's default, which is none
    /// except for `kbuild*` without `jobs`).
    pub window_ms: u64,
    /// `rt-latency`: length of each interrupts-off burst on the sibling CPU, µs.
    pub burst_us: u64,
    /// Windowed runs: simulated time run before the window but not measured, ms (0: none).
    /// Every counter starts after it ([`Kernel::start_measuring`]).
    pub warmup_ms: u64,
    /// `hackbench --groups`: groups of senders and receivers.
    pub groups: usize,
    /// `hackbench --fds`: senders and receivers per group.
    pub fds: usize,
    /// `hackbench --loops`: messages each sender writes to each receiver of its group.
    pub loops: u64,
    /// `hackbench --datasize`: bytes per message.
    pub datasize: u64,
    /// `hackbench --pipe`: pipes instead of AF_UNIX stream sockets.
    pub pipe: bool,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            iterations: 2000,
            touch: 0,
            busy: 3,
            tasks: 4,
            threads: true,
            op: StormOp::Munmap,
            pages: 256,
            cycles_per_page: 10,
            jobs: 0,
            window_ms: 0,
            burst_us: 20,
            warmup_ms: 0,
            // hackbench.c's own defaults.
            groups: 10,
            fds: 20,
            loops: 100,
            datasize: 100,
            pipe: false,
        }
    }
}

/// What a scenario measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Microseconds per iteration of the first task (lower is better).
    MicrosPerOp,
    /// Operations per second over all tasks (higher is better).
    OpsPerSecond,
    /// Seconds until every task finished (lower is better).
    Seconds,
    /// The programs' own work done per second of elapsed time, in CPU-seconds per second
    /// (higher is better): a build's speed, also in a window of it.
    WorkRate,
    /// Microseconds per timed span of the first task (`Action::OpBegin` to `Action::Op`): a
    /// system call's latency as its caller sees it (lower is better).
    MicrosPerSpan,
    /// Seconds between the first and the last operation mark of the task that times itself
    /// (hackbench's `Time:`: from the start signal to the last worker reaped; lower is better).
    TimedSeconds,
}

impl Metric {
    /// The unit as printed.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::MicrosPerOp => "µs/op",
            Metric::OpsPerSecond => "ops/s",
            Metric::Seconds | Metric::TimedSeconds => "s",
            Metric::WorkRate => "CPU-s/s",
            Metric::MicrosPerSpan => "µs/call",
        }
    }

    /// Whether a smaller value is better.
    pub fn lower_is_better(self) -> bool {
        !matches!(self, Metric::OpsPerSecond | Metric::WorkRate)
    }

    /// The metric's value for a run.
    pub fn value(self, r: &KernelReport) -> f64 {
        match self {
            Metric::MicrosPerOp => {
                let t = &r.tasks[0];
                if t.ops < 2 {
                    return f64::NAN;
                }
                r.micros((t.last_op.0 - t.first_op.0) as f64) / (t.ops - 1) as f64
            }
            Metric::OpsPerSecond => {
                let ops: u64 = r.tasks.iter().map(|t| t.ops).sum();
                ops as f64 / (r.micros(r.elapsed_cycles as f64) / 1e6)
            }
            Metric::Seconds => r.micros(r.elapsed_cycles as f64) / 1e6,
            Metric::WorkRate => {
                let work: u64 = r.tasks.iter().map(|t| t.work_cycles).sum();
                work as f64 / r.elapsed_cycles.max(1) as f64
            }
            Metric::MicrosPerSpan => {
                let t = &r.tasks[0];
                if t.spans == 0 {
                    return f64::NAN;
                }
                r.micros(t.span_cycles as f64) / t.spans as f64
            }
            Metric::TimedSeconds => r
                .tasks
                .iter()
                .filter(|t| t.ops >= 2)
                .map(|t| r.micros((t.last_op.0 - t.first_op.0) as f64) / 1e6)
                .fold(f64::NAN, f64::max),
        }
    }
}

/// Which program a scenario installs.
#[derive(Clone, Copy, Debug)]
enum Kind {
    MadvMigrate,
    PingPong,
    MadviseBusy,
    MunmapThreads,
    MadviseScale,
    PthreadMmap,
    RtLatency,
    VmapPurge,
    Kbuild(fn() -> BuildMix),
    LazyReaders,
    SharedWriters,
    SwitchingReaders,
    CollapseReaders,
    TlbFlush2,
    Storm,
    MunmapLatency,
    WebServer,
    MigrateReaders,
    Hackbench,
}

/// A built-in scenario.
pub struct ScenarioInfo {
    /// Its name (as in `tlblab bench`).
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// What it reports.
    pub metric: Metric,
    /// Fewest CPUs it runs on.
    min_cpus: fn(&Params) -> usize,
    /// Simulated time it runs for by default, ms (0: until its tasks are done).
    pub default_window_ms: u64,
    kind: Kind,
}

/// The window of a build simulated by default, ms: long enough for every slot to start and
/// finish a few jobs (a compile job takes 274 ms median).
pub const KBUILD_WINDOW_MS: u64 = 1000;

/// Every built-in scenario.
pub const SCENARIOS: &[ScenarioInfo] = &[
    ScenarioInfo {
        name: "madv-migrate",
        description: "loop { write a page; madvise(MADV_DONTNEED) it; sched_setaffinity to the other CPU } (S2)",
        metric: Metric::MicrosPerOp,
        min_cpus: |_| 2,
        default_window_ms: 0,
        kind: Kind::MadvMigrate,
    },
    ScenarioInfo {
        name: "pingpong",
        description: "two processes on one CPU pass a token through eventfds; each touches --touch pages of zero-page memory per round (S2)",
        metric: Metric::MicrosPerOp,
        min_cpus: |_| 1,
        default_window_ms: 0,
        kind: Kind::PingPong,
    },
    ScenarioInfo {
        name: "madvise-busy",
        description: "one thread loops { write a page; madvise(MADV_DONTNEED) it } while --busy sibling threads spin on other CPUs (S4)",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.busy + 1,
        default_window_ms: 0,
        kind: Kind::MadviseBusy,
    },
    ScenarioInfo {
        name: "munmap-threads",
        description: "--tasks tasks loop { write --pages pages; madvise(MADV_DONTNEED) them all at once }, as threads of one process or as processes (--mode); not will-it-scale's tlb_flush2 (that is tlb-flush2)",
        metric: Metric::OpsPerSecond,
        min_cpus: |p| p.tasks,
        default_window_ms: 0,
        kind: Kind::MunmapThreads,
    },
    ScenarioInfo {
        name: "tlb-flush2",
        description: "will-it-scale tlb_flush2: --tasks tasks (threads of one process or processes, --mode), task i on CPU i mod N, each map 1 MiB and loop over its pages { write the page; madvise(MADV_DONTNEED) it; read it back (the zero page) }, then munmap and map again; an iteration is a page",
        metric: Metric::OpsPerSecond,
        min_cpus: |_| 1,
        default_window_ms: 0,
        kind: Kind::TlbFlush2,
    },
    ScenarioInfo {
        name: "madvise-scale",
        description: "--tasks worker processes spread over the CPUs loop { write a page; madvise(MADV_DONTNEED) it } (S4; not stress-ng's madvise stressor, docs/workloads.md)",
        metric: Metric::OpsPerSecond,
        min_cpus: |_| 1,
        default_window_ms: 0,
        kind: Kind::MadviseScale,
    },
    ScenarioInfo {
        name: "pthread-mmap",
        description: "--tasks threads share the CPUs; --iterations rounds of { mmap --pages pages; write them; munmap } each (S2)",
        metric: Metric::Seconds,
        min_cpus: |_| 1,
        default_window_ms: 0,
        kind: Kind::PthreadMmap,
    },
    ScenarioInfo {
        name: "storm",
        description: "one thread loops { mmap, write and munmap --pages pages } (--op munmap) or { mprotect them read-only, then read-write, and write them } (--op mprotect) while --busy sibling threads spin on CPUs 1…N",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.busy + 1,
        default_window_ms: 0,
        kind: Kind::Storm,
    },
    ScenarioInfo {
        name: "rt-latency",
        description: "madvise-busy while the first sibling CPU runs with interrupts off for bursts of --burst-us µs (as long again between bursts) (S4)",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.busy.max(1) + 1,
        default_window_ms: 0,
        kind: Kind::RtLatency,
    },
    ScenarioInfo {
        name: "vmap-purge",
        description: "one thread loops { unmap --pages pages of vmalloc space; flush_tlb_kernel_range() } (a flush_tlb_all() above the ceiling) while --busy sibling processes each read --touch pages in a loop (spin when 0)",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.busy + 1,
        default_window_ms: 0,
        kind: Kind::VmapPurge,
    },
    ScenarioInfo {
        name: "kbuild",
        description: "make -jN (--tasks) of a kernel at S1's fault rate: slots vfork (or fork) children that exec compilers, which fault in text and heap, map and unmap buffers, and exit; a window of --window-ms of a long build (default 1,000 ms), or --jobs jobs run to the end (docs/workloads.md)",
        metric: Metric::WorkRate,
        min_cpus: |_| 1,
        default_window_ms: KBUILD_WINDOW_MS,
        kind: Kind::Kbuild(BuildMix::s1),
    },
    ScenarioInfo {
        name: "kbuild-allmod",
        description: "kbuild at the allmodconfig build's fault rate (S3)",
        metric: Metric::WorkRate,
        min_cpus: |_| 1,
        default_window_ms: KBUILD_WINDOW_MS,
        kind: Kind::Kbuild(BuildMix::s3),
    },
    ScenarioInfo {
        name: "kbuild-xpfo",
        description: "kbuild for the XPFO study (S5: S1's fault rate, as S5 gives none)",
        metric: Metric::WorkRate,
        min_cpus: |_| 1,
        default_window_ms: KBUILD_WINDOW_MS,
        kind: Kind::Kbuild(BuildMix::s5),
    },
    ScenarioInfo {
        name: "lazy-readers",
        description: "for the safety checker: a writer thread writes --pages pages, wakes --tasks reader threads (one per CPU) that read them and block, then MADV_DONTNEEDs them while the readers' CPUs idle lazily; --iterations rounds",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.tasks + 1,
        default_window_ms: 0,
        kind: Kind::LazyReaders,
    },
    ScenarioInfo {
        name: "shared-writers",
        description: "for the safety checker: two writer threads each loop { write their --pages pages of a shared region; MADV_DONTNEED them } while --tasks reader threads (one per CPU) read the whole region in a loop; --iterations rounds per writer",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.tasks + 2,
        default_window_ms: 0,
        kind: Kind::SharedWriters,
    },
    ScenarioInfo {
        name: "switching-readers",
        description: "for the safety checker: shared-writers whose readers each share their CPU with a thread of another process, the two yielding after every pass, so that the readers' CPUs switch onto the mm while the writers' flushes are dispatched",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.tasks + 2,
        default_window_ms: 0,
        kind: Kind::SwitchingReaders,
    },
    ScenarioInfo {
        name: "collapse-readers",
        description: "for the safety checker: lazy-readers whose writer MADV_COLLAPSEs the region (--pages, at least 1024: a whole 2 MiB block) instead of MADV_DONTNEED, khugepaged's collapse of a normal PMD; --busy threads spin on the CPUs after the readers, and 200 warm-up rounds of 1 ms come first (an INVLPGB policy gives the mm a global ASID); --iterations rounds",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.tasks + p.busy + 1,
        default_window_ms: 0,
        kind: Kind::CollapseReaders,
    },
    ScenarioInfo {
        name: "munmap-latency",
        description: "LATR's munmap microbenchmark (S8): --tasks threads of one process, one per CPU; thread 0 loops { mmap --pages pages beside a kept page; write them; munmap them } while the others spin in user mode; µs per munmap as its caller sees it",
        metric: Metric::MicrosPerSpan,
        min_cpus: |p| p.tasks,
        default_window_ms: 0,
        kind: Kind::MunmapLatency,
    },
    ScenarioInfo {
        name: "webserver",
        description: "LATR's web-server workload (S8): --tasks worker threads of one process, one per CPU, each serving --iterations static-file requests as Apache does with EnableMMAP: mmap the file (shared, read-only, in the page cache; sizes from SPECweb99's file mix), read it (--cycles-per-page to copy a page), munmap; requests/s",
        metric: Metric::OpsPerSecond,
        min_cpus: |p| p.tasks,
        default_window_ms: 0,
        kind: Kind::WebServer,
    },
    ScenarioInfo {
        name: "migrate-readers",
        description: "for migrc and LUF (S8): --tasks reader threads (CPUs 1…N) read a shared read-only 2 MiB file mapping in a loop while thread 0 loops { move_pages() the next --pages of its pages to the other node }, round the region; µs per migration",
        metric: Metric::MicrosPerOp,
        min_cpus: |p| p.tasks + 1,
        default_window_ms: 0,
        kind: Kind::MigrateReaders,
    },
    ScenarioInfo {
        name: "hackbench",
        description: "rt-tests hackbench: --groups groups (default 10) of --fds receivers and --fds senders (default 20) over socketpairs or --pipe pipes, processes or threads (--mode; hackbench's default is processes); each sender writes --loops messages (default 100) of --datasize bytes (default 100) to each receiver of its group; seconds from the start signal to the last worker reaped (hackbench's Time:)",
        metric: Metric::TimedSeconds,
        min_cpus: |_| 1,
        default_window_ms: 0,
        kind: Kind::Hackbench,
    },
];

/// Looks up a scenario.
pub fn scenario(name: &str) -> Result<&'static ScenarioInfo, ScenarioError> {
    SCENARIOS
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| ScenarioError::Unknown(name.to_string()))
}

impl ScenarioInfo {
    /// When a run of the scenario stops: after `--window-ms` (or the scenario's default window),
    /// else when its tasks are done. A `kbuild` with a number of jobs runs to completion.
    pub fn time_limit(&self, p: &Params, clock_mhz: u64) -> tlblab_types::Cycles {
        let window = match (p.window_ms, p.jobs) {
            (0, 0) => self.default_window_ms,
            (0, _) => 0,
            (ms, _) => ms,
        };
        match window {
            0 => tlblab_types::Cycles(u64::MAX),
            ms => tlblab_types::Cycles((p.warmup_ms + ms) * 1000 * clock_mhz),
        }
    }

    /// Runs an installed scenario: its warm-up first, if any, then the measured run (see
    /// [`Params::warmup_ms`]). Returns whether every essential task finished.
    pub fn run<O: Observer>(&self, k: &mut Kernel<O>, p: &Params) -> bool {
        if p.warmup_ms > 0 {
            let end = tlblab_types::Cycles(p.warmup_ms * 1000 * k.clock_mhz());
            if k.run_until(end) {
                return true;
            }
            k.start_measuring(end);
        }
        k.run()
    }

    /// Installs the scenario's tasks, and its window (after any warm-up) as the run's time
    /// limit. Run it with [`ScenarioInfo::run`].
    pub fn install<O: Observer>(&self, k: &mut Kernel<O>, p: &Params) -> Result<(), ScenarioError> {
        let needed = (self.min_cpus)(p);
        if k.nr_cpus() < needed {
            return Err(ScenarioError::TooFewCpus {
                scenario: self.name,
                needed,
                got: k.nr_cpus(),
            });
        }
        if p.iterations < 2 {
            return Err(ScenarioError::BadParameter {
                scenario: self.name,
                message: "--iterations must be at least 2".into(),
            });
        }
        if p.tasks == 0 || p.pages == 0 {
            return Err(ScenarioError::BadParameter {
                scenario: self.name,
                message: "--tasks and --pages must be at least 1".into(),
            });
        }
        let limit = self.time_limit(p, k.clock_mhz());
        if p.warmup_ms > 0 && limit == tlblab_types::Cycles(u64::MAX) {
            return Err(ScenarioError::BadParameter {
                scenario: self.name,
                message: "--warmup-ms needs a window: a kbuild scenario without --jobs".into(),
            });
        }
        k.limit_time(limit);
        let madvise = |pages| Box::new(MadviseLoop::new(p, pages)) as Box<dyn Program>;
        match self.kind {
            Kind::MadvMigrate => {
                k.spawn_process(Box::new(MadvMigrate::new(p)), CpuId(0), true);
            }
            Kind::PingPong => {
                let (a, b) = (k.eventfd(), k.eventfd());
                let line = k.mechanism_on(crate::mechanisms::Mechanism::ZeroPageLine);
                let touch_cycles = PingPong::touch_cycles(p, line);
                let side = |send, recv, first| PingPong::new(p, send, recv, first, touch_cycles);
                k.spawn_process(Box::new(side(b, a, true)), CpuId(0), true);
                k.spawn_process(Box::new(side(a, b, false)), CpuId(0), false);
            }
            Kind::MadviseBusy => {
                let main = k.spawn_process(madvise(1), CpuId(0), true);
                for i in 0..p.busy {
                    k.spawn_thread(main, Box::new(Spin), CpuId(i as u16 + 1), false);
                }
            }
            Kind::MunmapThreads => spread(k, p.tasks, p.threads, || madvise(p.pages)),
            Kind::MadviseScale => spread(k, p.tasks, false, || madvise(1)),
            Kind::TlbFlush2 => peers::install_tlb_flush2(k, p),
            Kind::Storm => peers::install_storm(k, p),
            Kind::MunmapLatency => deferred::install_munmap_latency(k, p),
            Kind::WebServer => deferred::install_webserver(k, p),
            Kind::MigrateReaders => deferred::install_migrate_readers(k, p),
            Kind::Hackbench => {
                if p.groups == 0 || p.fds == 0 || p.loops == 0 {
                    return Err(ScenarioError::BadParameter {
                        scenario: self.name,
                        message: "--groups, --fds and --loops must be at least 1".into(),
                    });
                }
                if !(1..=hackbench::MAX_DATASIZE).contains(&p.datasize) {
                    return Err(ScenarioError::BadParameter {
                        scenario: self.name,
                        message: format!(
                            "--datasize {} is outside 1 to {} bytes (one page: an atomic pipe write, one linear skb)",
                            p.datasize,
                            hackbench::MAX_DATASIZE
                        ),
                    });
                }
                hackbench::install(k, p);
            }
            Kind::PthreadMmap => spread(k, p.tasks, true, || Box::new(MmapRounds::new(p))),
            Kind::RtLatency => {
                let main = k.spawn_process(madvise(1), CpuId(0), true);
                let burst = p.burst_us * k.clock_mhz();
                k.spawn_thread(main, Box::new(IrqsOffBursts(burst, false)), CpuId(1), false);
                for i in 1..p.busy {
                    k.spawn_thread(main, Box::new(Spin), CpuId(i as u16 + 1), false);
                }
            }
            Kind::VmapPurge => {
                k.spawn_process(Box::new(KernelFlushLoop::new(p)), CpuId(0), true);
                for i in 0..p.busy {
                    let sibling: Box<dyn Program> = match p.touch {
                        0 => Box::new(Spin),
                        pages => Box::new(ReadLoop::new(p, pages)),
                    };
                    k.spawn_process(sibling, CpuId(i as u16 + 1), false);
                }
            }
            Kind::LazyReaders => {
                let readers = (0..p.tasks).map(|_| (k.eventfd(), k.eventfd())).collect();
                k.spawn_process(Box::new(stale::Writer::new(p, readers)), CpuId(0), true);
            }
            Kind::CollapseReaders => {
                if p.pages < 1024 {
                    return Err(ScenarioError::BadParameter {
                        scenario: self.name,
                        message: format!(
                            "--pages {} is below 1024: the region must hold a whole 2 MiB block wherever it is placed",
                            p.pages
                        ),
                    });
                }
                let readers = (0..p.tasks).map(|_| (k.eventfd(), k.eventfd())).collect();
                let writer = stale::Collapser::new(p, readers, k.clock_mhz());
                k.spawn_process(Box::new(writer), CpuId(0), true);
            }
            Kind::SharedWriters => {
                k.spawn_process(Box::new(stale::SharedWriter::first(p, false)), CpuId(0), true);
            }
            Kind::SwitchingReaders => {
                k.spawn_process(Box::new(stale::SharedWriter::first(p, true)), CpuId(0), true);
                for i in 0..p.tasks {
                    k.spawn_process(Box::new(stale::Yielder::new()), CpuId(i as u16 + 2), false);
                }
            }
            Kind::Kbuild(mix) => {
                let n = k.nr_cpus();
                let measured = k.mechanism_on(crate::mechanisms::Mechanism::CompilerReuse);
                let slots = kbuild::slots(&mix(), p, k.clock_mhz(), measured);
                for (i, slot) in slots.into_iter().enumerate() {
                    k.spawn_process(slot, CpuId((i % n) as u16), true);
                }
            }
        }
        Ok(())
    }
}

/// Starts `tasks` copies of a program, task `i` on CPU `i mod N`: threads of the first one's
/// process, or processes of their own. The run waits for all of them.
fn spread<O: Observer>(
    k: &mut Kernel<O>,
    tasks: usize,
    threads: bool,
    program: impl Fn() -> Box<dyn Program>,
) {
    let n = k.nr_cpus();
    let first = k.spawn_process(program(), CpuId(0), true);
    for i in 1..tasks {
        let cpu = CpuId((i % n) as u16);
        if threads {
            k.spawn_thread(first, program(), cpu, true);
        } else {
            k.spawn_process(program(), cpu, true);
        }
    }
}

/// The region a program maps before its loop: the first ask returns the `mmap`, the next one
/// collects its result.
#[derive(Default)]
struct Region {
    vma: Option<VmaId>,
    asked: bool,
}

impl Region {
    fn get(&mut self, pages: u64, env: &Env<'_>) -> Result<VmaId, Action> {
        if let Some(vma) = self.vma {
            return Ok(vma);
        }
        if !self.asked {
            self.asked = true;
            return Err(Action::Syscall(Syscall::Mmap { pages }));
        }
        let vma = mapped(env);
        self.vma = Some(vma);
        Ok(vma)
    }
}

fn store(vma: VmaId, first: u64, pages: u64, p: &Params) -> Action {
    Action::Touch(Touch::new(vma, first, pages, AccessKind::Store, p.cycles_per_page))
}

fn mapped(env: &Env<'_>) -> VmaId {
    match env.last {
        Outcome::Mapped(vma) => vma,
        other => panic!("expected the result of mmap, got {other:?}"),
    }
}

/// madv-migrate.
struct MadvMigrate {
    p: Params,
    i: u64,
    step: u8,
    region: Region,
}

impl MadvMigrate {
    fn new(p: &Params) -> MadvMigrate {
        MadvMigrate { p: p.clone(), i: 0, step: 0, region: Region::default() }
    }
}

impl Program for MadvMigrate {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let vma = match self.region.get(1, env) {
            Ok(vma) => vma,
            Err(mmap) => return mmap,
        };
        if self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 4;
        match self.step {
            1 => store(vma, 0, 1, &self.p),
            2 => Action::Syscall(Syscall::MadviseDontneed { vma, first: 0, pages: 1 }),
            3 => Action::Syscall(Syscall::SetAffinity {
                cpu: CpuId(if env.cpu.0 == 0 { 1 } else { 0 }),
            }),
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }

    fn working_set(&self) -> Option<WorkingSet> {
        // lackey, madv-migrate's loop: 3 code pages, 3 data pages less its own page.
        Some(WorkingSet { code_pages: 3, data_pages: 2 })
    }
}

/// Work of a loop's load of one page mapped to the zero page, cycles (mechanism
/// `zero-page-line`): a loop reading one byte of each zero-page page took 0.37 ns a page on this
/// project's VM (Xeon model 0xCF, 2.1 GHz TSC), from 32 to 1,024 pages alike, 0.78 TSC cycles:
/// the loop's own instructions, every such page mapping the same physical line (an L1d hit).
/// Rounded up to the model's whole cycle. tools/calibrate/results/touch-work-2026-11-30.md.
pub const ZERO_PAGE_LOAD_CYCLES: u64 = 1;

/// One side of pingpong.
struct PingPong {
    p: Params,
    /// Work per page of its touches.
    touch_cycles: u64,
    send: EventFd,
    recv: EventFd,
    initiator: bool,
    i: u64,
    step: u8,
    region: Region,
}

impl PingPong {
    fn new(
        p: &Params,
        send: EventFd,
        recv: EventFd,
        initiator: bool,
        touch_cycles: u64,
    ) -> PingPong {
        let region = Region::default();
        PingPong { p: p.clone(), touch_cycles, send, recv, initiator, i: 0, step: 0, region }
    }

    /// The work of one touched page. Its loads read never-written memory, the zero page, whose
    /// one physical line every such page maps (an L1d hit): with `zero-page-line`, the loop's
    /// own measured cycle ([`ZERO_PAGE_LOAD_CYCLES`]) rather than `cycles_per_page`, which
    /// stands for a page of its own (never more than it: 0 stays 0).
    fn touch_cycles(p: &Params, zero_page_line: bool) -> u64 {
        if zero_page_line {
            ZERO_PAGE_LOAD_CYCLES.min(p.cycles_per_page)
        } else {
            p.cycles_per_page
        }
    }
}

impl Program for PingPong {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let vma = if self.p.touch > 0 {
            match self.region.get(self.p.touch, env) {
                Ok(vma) => Some(vma),
                Err(mmap) => return mmap,
            }
        } else {
            None
        };
        if self.initiator && self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 4;
        let touch = || match vma {
            // Loads of never-written anonymous memory: the zero page (few cache misses).
            Some(vma) => {
                Action::Touch(Touch::new(vma, 0, self.p.touch, AccessKind::Load, self.touch_cycles))
            }
            None => Action::Compute { cycles: 0 },
        };
        let (send, recv) =
            (Syscall::EventfdWrite { fd: self.send }, Syscall::EventfdRead { fd: self.recv });
        match (self.initiator, self.step) {
            // The initiator: touch, send, receive, count a round trip.
            (true, 1) => touch(),
            (true, 2) => Action::Syscall(send),
            (true, 3) => Action::Syscall(recv),
            (true, _) => {
                self.i += 1;
                Action::Op
            }
            // The other side: receive, touch, send.
            (false, 1) => Action::Syscall(recv),
            (false, 2) => touch(),
            (false, 3) => Action::Syscall(send),
            // An iteration of the echo's loop (its working set is referenced once per one).
            (false, _) => Action::Op,
        }
    }

    fn working_set(&self) -> Option<WorkingSet> {
        // lackey, pingpong's two loops: the initiator 2 code, 6 data pages; the echo 2 and 5.
        let data_pages = if self.initiator { 6 } else { 5 };
        Some(WorkingSet { code_pages: 2, data_pages })
    }
}

/// loop { write `pages` pages; madvise(MADV_DONTNEED) them }.
struct MadviseLoop {
    p: Params,
    i: u64,
    step: u8,
    region: Region,
    pages: u64,
}

impl MadviseLoop {
    fn new(p: &Params, pages: u64) -> MadviseLoop {
        MadviseLoop { p: p.clone(), i: 0, step: 0, region: Region::default(), pages }
    }
}

impl Program for MadviseLoop {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let fresh = self.region.vma.is_none();
        // One more page than used stays mapped (written once, first), so that the DONTNEED
        // never empties a page table (as the live benchmark does).
        let vma = match self.region.get(self.pages + 1, env) {
            Ok(vma) => vma,
            Err(mmap) => return mmap,
        };
        if fresh {
            return store(vma, self.pages, 1, &self.p);
        }
        if self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 3;
        match self.step {
            1 => store(vma, 0, self.pages, &self.p),
            2 => Action::Syscall(Syscall::MadviseDontneed { vma, first: 0, pages: self.pages }),
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }

    fn working_set(&self) -> Option<WorkingSet> {
        // lackey, madvise-busy's and madvise-scale's loop: 2 code, 3 data pages less the page it
        // madvises (munmap-threads runs the same loop).
        Some(WorkingSet { code_pages: 2, data_pages: 2 })
    }
}

/// pthread-mmap: rounds of mmap, write, munmap.
struct MmapRounds {
    p: Params,
    i: u64,
    step: u8,
    vma: Option<VmaId>,
}

impl MmapRounds {
    fn new(p: &Params) -> MmapRounds {
        MmapRounds { p: p.clone(), i: 0, step: 0, vma: None }
    }
}

impl Program for MmapRounds {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        if self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 4;
        match self.step {
            1 => Action::Syscall(Syscall::Mmap { pages: self.p.pages }),
            2 => {
                let vma = mapped(env);
                self.vma = Some(vma);
                store(vma, 0, self.p.pages, &self.p)
            }
            3 => Action::Syscall(Syscall::Munmap { vma: self.vma.expect("mapped in step 1") }),
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }

    fn working_set(&self) -> Option<WorkingSet> {
        // lackey, pthread-mmap's rounds: 3 code, 260 data pages less its 256 mapped ones.
        Some(WorkingSet { code_pages: 3, data_pages: 4 })
    }
}

/// A thread that alternates interrupts-off bursts of `.0` cycles in the kernel with as long
/// in user space.
struct IrqsOffBursts(u64, bool);

impl Program for IrqsOffBursts {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        self.1 = !self.1;
        if self.1 {
            Action::Syscall(Syscall::IrqsOff { cycles: self.0 })
        } else {
            Action::Compute { cycles: self.0 }
        }
    }
}

/// vmap-purge: kernel-range flushes of `--pages` pages, one per iteration.
struct KernelFlushLoop {
    p: Params,
    i: u64,
    flushed: bool,
}

impl KernelFlushLoop {
    fn new(p: &Params) -> KernelFlushLoop {
        KernelFlushLoop { p: p.clone(), i: 0, flushed: false }
    }
}

impl Program for KernelFlushLoop {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        if self.i == self.p.iterations {
            return Action::Exit;
        }
        self.flushed = !self.flushed;
        if self.flushed {
            Action::Syscall(Syscall::KernelFlush { pages: Some(self.p.pages) })
        } else {
            self.i += 1;
            Action::Op
        }
    }
}

/// A process that maps `pages` pages, writes them once, then reads them over and over: a
/// working set whose translations a full flush throws away.
struct ReadLoop {
    p: Params,
    pages: u64,
    region: Region,
    written: bool,
}

impl ReadLoop {
    fn new(p: &Params, pages: u64) -> ReadLoop {
        ReadLoop { p: p.clone(), pages, region: Region::default(), written: false }
    }
}

impl Program for ReadLoop {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let vma = match self.region.get(self.pages, env) {
            Ok(vma) => vma,
            Err(mmap) => return mmap,
        };
        if !self.written {
            self.written = true;
            return store(vma, 0, self.pages, &self.p);
        }
        Action::Touch(Touch::new(vma, 0, self.pages, AccessKind::Load, self.p.cycles_per_page))
    }
}

/// A thread that spins in user space forever.
pub(super) struct Spin;

impl Program for Spin {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        Action::Compute { cycles: 100_000 }
    }
}
