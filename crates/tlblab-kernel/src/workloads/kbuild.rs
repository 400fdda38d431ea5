//! `kbuild`: the process mix of a kernel build (`make -jN`) as programs of the model.
//!
//! `N` job slots (make and its shells) each take compile jobs from a shared queue: the slot
//! writes a little of its own memory, forks (`dup_mmap()` write-protects its pages and flushes
//! its mm), and waits; the child (the shell) writes a few inherited pages (copy-on-write
//! faults) and execs the compiler. The compiler maps its text, heap and stack, applies RELRO
//! (`mprotect` of pages it just wrote), then works: it comes back to the pages it has at the
//! rates and LRU stack distances measured for the real cc1 ([`super::reuse`]), while its text
//! and heap grow by page faults at the measured fault rate; now and then it maps a buffer,
//! fills it and unmaps it (malloc's large allocations); then it exits (`exit_mmap()`: a full
//! flush of its mm).
//!
//! A job is kbuild's recipe, process for process (`sh -c 'gcc …; fixdep …; rm …'`): the slot
//! starts the shell, the shell runs the gcc driver, then `fixdep`, then `rm`, one after
//! another; the driver runs the compiler (`cc1`), then the assembler (`as`). Every start is a
//! `vfork()` and an `execve()`, and every parent waits for its child, so each job blocks and
//! wakes its parents a dozen times: the context switches of a real build (measured:
//! tools/calibrate/results/kbuild-switches-2026-11-25.md).
//!
//! A build is far too long to simulate whole: a run simulates a representative window of
//! `jobs` compile jobs with the real per-job sizes, and says so. Every figure of a preset is
//! in [`BuildMix`] with its source.

use super::reuse::{DistanceSampler, LruPages, ReuseProfile};
use super::{mapped, Params};
use crate::kernel::FAULT_AROUND_PAGES;
use crate::mm::VmaId;
use crate::program::{Action, Env, Outcome, Program, Syscall, Touch, SCATTER_PAGES};
use rand::RngExt;
use std::cell::Cell;
use std::rc::Rc;
use tlblab_types::AccessKind;

/// A short-lived process of a compile job's recipe: what it costs besides its start and exit.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Tool {
    /// Pages it faults in (first writes).
    pub pages: u64,
    /// Its user work, ms.
    pub work_ms: f64,
}

/// The parameters of a build's process mix. Figures are per compile job (one `cc1`-like
/// process) unless said otherwise. "Measured" means tools/calibrate/results/kbuild-mix-2026-11-22.md
/// (a partial `make -j2` of Linux 6.12 defconfig on our 2-vCPU KVM guest).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct BuildMix {
    /// Which build this describes, and where its fault rate comes from.
    pub source: &'static str,
    /// Median user time of a compile job, ms (job sizes are log-normal around it). Measured:
    /// cc1 lives 274 ms median (exec to exit) when it has a CPU to itself.
    pub job_user_ms: f64,
    /// Log-normal spread (σ of the log) of job sizes. Measured: p90/median of cc1 lifetimes
    /// 635/274 = 2.3, so σ = ln 2.3 / 1.2816.
    pub job_sigma: f64,
    /// Page faults per ms of user time, all kinds (the study's characterisation).
    pub faults_per_user_ms: f64,
    /// Shares of a job's faults (measured, cc1): instruction fetches of its text (file pages:
    /// nothing allocated), first reads of data (the zero page), and writes to pages first read
    /// (a copy with a one-page flush); the rest are first writes.
    pub fetch_fault_share: f64,
    /// See [`BuildMix::fetch_fault_share`].
    pub read_fault_share: f64,
    /// See [`BuildMix::fetch_fault_share`].
    pub write_after_read_share: f64,
    /// Buffers a job maps, references and unmaps (measured: 5.5 munmaps per cc1).
    pub buffers_per_job: f64,
    /// Smallest and largest buffer, pages, log-uniform between (measured munmap lengths: 9–16
    /// pages 59%, 33–64 23%, 65–256 16%, 257–512 1%). Buffers of up to 16 pages are read (the
    /// dynamic loader's cache), larger ones written.
    pub buffer_pages: (u64, u64),
    /// Pages RELRO write-protects at start-up (one `mprotect`).
    pub relro_pages: u64,
    /// Share of job starts that use `fork()` (the shell) rather than `vfork()`/`posix_spawn()`
    /// (measured: 193 `clone` without CLONE_VM of 2,654 process creations).
    pub fork_share: f64,
    /// Pages make writes between two job starts (copy-on-write faults after a fork).
    pub parent_writes: u64,
    /// Pages of make's own memory.
    pub make_pages: u64,
    /// The compiler's instruction fetches that come back to a text page at a stack distance of
    /// [`super::reuse::FILTER`] pages or more (measured: cachegrind and lackey on `cc1`,
    /// tools/calibrate/results/cc1-page-reuse-2026-11-30.md).
    pub code_reuse: ReuseProfile,
    /// The same for its loads and stores (of its heap).
    pub data_reuse: ReuseProfile,
    /// Share of stores among those data references (measured with them).
    pub store_share: f64,
    /// Run the job's recipe process for process (shell, gcc driver, `as`, `fixdep`, `rm`);
    /// `false`: the slot's child execs the compiler at once (the model before the switch
    /// measurement).
    pub recipe: bool,
    /// The recipe's shell (`sh -c`). Measured: 67 faults per `sh` (kbuild-mix); 1.4 ms on a
    /// CPU per `sh` (kbuild-switches), less its faults at ≈ 1.5 µs each.
    pub sh: Tool,
    /// The gcc driver: measured 106 faults, 2.4 ms on a CPU.
    pub gcc: Tool,
    /// The assembler (`as`): measured 363 faults, 3.9 ms on a CPU.
    pub assembler: Tool,
    /// `scripts/basic/fixdep`: measured 85 faults ("other"), 4.3 ms on a CPU.
    pub fixdep: Tool,
    /// `rm -f` of the dependency file: measured 85 faults ("other"), 1.0 ms on a CPU.
    pub rm: Tool,
    /// make's own work per job, ms (measured: 1.2 ms on a CPU per job).
    pub make_work_ms: f64,
}

impl BuildMix {
    /// S1: `make -j8` of a kernel on a 4-core Skylake (studies.md: ≈ 880 s user, ≈ 58.4 M
    /// minor faults).
    pub fn s1() -> BuildMix {
        BuildMix {
            source:
                "S1 make -j8: 58.4 M faults / 880 user-s = 66.4 faults per user-ms (studies.md)",
            faults_per_user_ms: 58.4e6 / 880e3,
            ..BuildMix::measured()
        }
    }

    /// S3: `make -j100 -B -k` of an allmodconfig kernel (studies.md: 332 M faults over ≈
    /// 17,300 CPU-seconds of task clock).
    pub fn s3() -> BuildMix {
        BuildMix {
            source: "S3 allmodconfig: 332 M faults / 17,300 task-clock s = 19.2 faults per ms (studies.md)",
            faults_per_user_ms: 332e6 / 17_300e3,
            ..BuildMix::measured()
        }
    }

    /// S5: `make -j60 all` / `make -j4 all`; studies.md gives no characterisation, so the S1
    /// (defconfig-like) rate is used.
    pub fn s5() -> BuildMix {
        BuildMix {
            source: "S5 make all: S1's fault rate (no S5 characterisation)",
            ..BuildMix::s1()
        }
    }

    /// The mix measured on our VM, with its own fault rate (35.6 faults per user-ms: 32,100
    /// per build CPU-second at 10.4% system time).
    pub fn measured() -> BuildMix {
        BuildMix {
            source: "measured: make -j2 of Linux 6.12 defconfig on the tlblab VM",
            job_user_ms: 274.0,
            job_sigma: 0.65,
            faults_per_user_ms: 35.6,
            fetch_fault_share: 0.02,
            read_fault_share: 0.08,
            write_after_read_share: 0.06,
            buffers_per_job: 5.5,
            buffer_pages: (9, 512),
            relro_pages: 4,
            fork_share: 0.073,
            parent_writes: 4,
            make_pages: 256,
            code_reuse: CC1_CODE_REUSE,
            data_reuse: CC1_DATA_REUSE,
            store_share: CC1_STORE_SHARE,
            recipe: true,
            sh: Tool { pages: 67, work_ms: 1.3 },
            gcc: Tool { pages: 106, work_ms: 2.2 },
            assembler: Tool { pages: 363, work_ms: 3.4 },
            fixdep: Tool { pages: 85, work_ms: 4.2 },
            rm: Tool { pages: 85, work_ms: 0.9 },
            make_work_ms: 1.2,
        }
    }
}

/// cc1's instruction fetches that come back to a page at a stack distance of 64 pages or more:
/// cachegrind with 4 KiB lines and fully associative L1s of 64 to 1,024 entries over the whole
/// compile of `mm/mmzone.c` (Linux 6.12 defconfig, gcc 12, 1,336 M instructions, 590 ms of
/// user time, median of 5), per ms of that time: 4,495,478 misses at 64 entries, 1,677,778 at
/// 128, 296,744 at 256, 19,865 at 512, 8,556 at 1,024 (the text's first references, under 1%
/// of the rate, are left in). tools/calibrate/results/cc1-page-reuse-2026-11-30.md.
const CC1_CODE_REUSE: ReuseProfile = ReuseProfile {
    refs_per_ms: 4_495_478.0 / 590.0,
    shares: [0.62679, 0.30721, 0.06159, 0.00252, 0.00189, 0.0],
};

/// cc1's loads and stores that come back to a page at distance 64 or more, as
/// [`CC1_CODE_REUSE`]: 5,130,045 misses at 64 entries, 2,313,216 at 128, 918,573 at 256,
/// 286,475 at 512, 107,681 at 1,024; those at 1,024 or more split between the last two buckets
/// as lackey's trace of the compile's first 311 M instructions splits them (2,087 : 395).
const CC1_DATA_REUSE: ReuseProfile = ReuseProfile {
    refs_per_ms: 5_130_045.0 / 590.0,
    shares: [0.54909, 0.27186, 0.12322, 0.03485, 0.01767, 0.00331],
};

/// Stores among [`CC1_DATA_REUSE`]'s references: 418,575 of the 5,130,045.
const CC1_STORE_SHARE: f64 = 418_575.0 / 5_130_045.0;

/// One compile job, as drawn by a slot.
#[derive(Clone, Copy, Debug)]
struct Job {
    /// User cycles of work.
    work: u64,
    /// Fetch faults: each maps [`FAULT_AROUND_PAGES`] pages of the text.
    text: u64,
    /// Heap pages first read, of which `rewritten` are written later.
    read: u64,
    rewritten: u64,
    /// Heap pages first written.
    written: u64,
    /// Buffers mapped and unmapped.
    buffers: u64,
}

/// The compiler's references before the measured profile (mechanism `compiler-reuse` off):
/// assumptions, with no measurement of page-reference rates behind them.
mod assumed {
    /// Work between two page references, cycles.
    pub(super) const REF_CYCLES: u64 = 400;
    /// Pages referenced one after another in a burst.
    pub(super) const BURST_PAGES: u64 = 4;
    /// Share of bursts that go to the hottest fifth of the pages a region has.
    pub(super) const HOT_SHARE: f64 = 0.8;
    /// Share of heap bursts that store.
    pub(super) const STORE_SHARE: f64 = 0.3;
}

/// The installed mix: shared by the slots.
struct Shared {
    mix: BuildMix,
    /// Jobs not yet taken.
    left: Cell<u64>,
    clock_mhz: u64,
    /// The compiler references its pages as measured (mechanism `compiler-reuse`); `false`: as
    /// [`assumed`].
    measured_reuse: bool,
    /// Work between two page references, cycles: a ms of user time split evenly between the
    /// references the reuse profiles give it (without `compiler-reuse`, the assumed figure).
    /// First touches (faults) cost the same.
    ref_cycles: u64,
    /// The mix's reuse profiles, ready to draw from.
    code_distances: DistanceSampler,
    data_distances: DistanceSampler,
}

impl Shared {
    fn new(mix: BuildMix, left: u64, clock_mhz: u64, measured_reuse: bool) -> Shared {
        let clock_mhz = clock_mhz.max(1);
        let ref_cycles = if measured_reuse {
            let per_ms = mix.code_reuse.refs_per_ms + mix.data_reuse.refs_per_ms;
            ((clock_mhz * 1000) as f64 / per_ms.max(1e-9)).round().max(1.0) as u64
        } else {
            assumed::REF_CYCLES
        };
        Shared {
            mix,
            left: Cell::new(left),
            clock_mhz,
            measured_reuse,
            ref_cycles,
            code_distances: mix.code_reuse.sampler(),
            data_distances: mix.data_reuse.sampler(),
        }
    }

    /// Text pages each fetch fault brings in: those `do_fault_around()` maps, or one (the model
    /// before `compiler-reuse`, whose text was anonymous).
    fn text_per_fault(&self) -> u64 {
        if self.measured_reuse {
            FAULT_AROUND_PAGES
        } else {
            1
        }
    }
}

/// Makes the slot programs of a build: `params.tasks` slots (`make -jN`). With
/// `params.jobs` > 0 the build is that many jobs; with 0 the slots never run out of jobs (the
/// run is a window of a long build, ended by its time limit) and each slot's first job is
/// already under way (a random share of it done), so that job starts and ends are spread over
/// the window as in the middle of a build.
/// `measured_reuse`: mechanism `compiler-reuse`.
pub(super) fn slots(
    mix: &BuildMix,
    params: &Params,
    clock_mhz: u64,
    measured_reuse: bool,
) -> Vec<Box<dyn Program>> {
    let left = if params.jobs > 0 { params.jobs } else { u64::MAX };
    let shared = Rc::new(Shared::new(*mix, left, clock_mhz, measured_reuse));
    (0..params.tasks)
        .map(|_| {
            let slot =
                Slot { shared: shared.clone(), step: 0, heap: None, first: params.jobs == 0 };
            Box::new(slot) as Box<dyn Program>
        })
        .collect()
}

/// A job slot: make (and the shell it forks).
struct Slot {
    shared: Rc<Shared>,
    step: u8,
    heap: Option<VmaId>,
    /// The next job is the first of a window: only its remaining part runs.
    first: bool,
}

impl Slot {
    fn draw(&mut self, env: &mut Env<'_>) -> Job {
        let m = &self.shared.mix;
        // Log-normal job size: exp(σ·z) around the median, z standard normal (Box–Muller).
        let (u1, u2): (f64, f64) = (env.rng.random::<f64>().max(1e-12), env.rng.random());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let mut ms = m.job_user_ms * (m.job_sigma * z).exp();
        if std::mem::take(&mut self.first) {
            ms *= env.rng.random::<f64>();
        }
        let faults = ms * m.faults_per_user_ms;
        let count = |share: f64| (faults * share).round() as u64;
        let mean_buffer = ((m.buffer_pages.0 * m.buffer_pages.1) as f64).sqrt();
        let buffers = (m.buffers_per_job * ms / m.job_user_ms).round() as u64;
        let (text, read, rewritten) = (
            count(m.fetch_fault_share),
            count(m.read_fault_share),
            count(m.write_after_read_share),
        );
        let others =
            text + read + rewritten + m.relro_pages + (buffers as f64 * mean_buffer) as u64;
        Job {
            work: (ms * 1000.0) as u64 * self.shared.clock_mhz,
            text: text.max(1),
            read: read.max(rewritten).max(1),
            rewritten,
            written: (faults.round() as u64).saturating_sub(others).max(1),
            buffers,
        }
    }
}

impl Program for Slot {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let m = self.shared.mix;
        self.step += 1;
        match self.step {
            1 => return Action::Syscall(Syscall::Mmap { pages: m.make_pages }),
            2 => {
                let heap = mapped(env);
                self.heap = Some(heap);
                return store(heap, 0, m.make_pages, self.shared.ref_cycles);
            }
            _ => {}
        }
        let heap = self.heap.expect("mapped in step 1");
        // The loop: pick a job, write, start it, wait, count.
        match (self.step - 3) % 4 {
            0 => {
                if self.shared.left.get() == 0 {
                    return Action::Exit;
                }
                self.shared.left.set(self.shared.left.get() - 1);
                let first = env.rng.random_range(0..m.make_pages - m.parent_writes);
                // make's work for a window's first job is done (the job is under way).
                let work = (m.make_work_ms * 1000.0) as u64 * self.shared.clock_mhz;
                let work = if self.first { 0 } else { work };
                let cycles = self.shared.ref_cycles.max(work / m.parent_writes.max(1));
                store(heap, first, m.parent_writes, cycles)
            }
            1 => {
                // A window's first job is under way: its compiler runs at once (its shell and
                // driver are already waiting for it).
                let under_way = self.first;
                let job = self.draw(env);
                let fork = env.rng.random::<f64>() < m.fork_share;
                let what = if m.recipe && !under_way { Role::Sh } else { Role::Cc1 };
                let shell = Shell { shared: self.shared.clone(), job, what, step: 0 };
                let program = Box::new(shell);
                Action::Syscall(if fork {
                    Syscall::Fork { program }
                } else {
                    Syscall::Vfork { program }
                })
            }
            2 => match env.last {
                Outcome::Spawned(child) => Action::Syscall(Syscall::Wait { child }),
                other => panic!("expected the result of fork, got {other:?}"),
            },
            _ => Action::Op,
        }
    }
}

/// The processes of a job's recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Sh,
    Gcc,
    Cc1,
    As,
    Fixdep,
    Rm,
}

impl Role {
    /// The children it runs, one after another.
    fn children(self) -> &'static [Role] {
        match self {
            Role::Sh => &[Role::Gcc, Role::Fixdep, Role::Rm],
            Role::Gcc => &[Role::Cc1, Role::As],
            _ => &[],
        }
    }

    fn tool(self, m: &BuildMix) -> Tool {
        match self {
            Role::Sh => m.sh,
            Role::Gcc => m.gcc,
            Role::As => m.assembler,
            Role::Fixdep => m.fixdep,
            Role::Rm => m.rm,
            Role::Cc1 => unreachable!("the compiler is a program of its own"),
        }
    }
}

/// A forked (or vforked) child before its `execve()`: execs `what` at once.
struct Shell {
    shared: Rc<Shared>,
    job: Job,
    what: Role,
    step: u8,
}

impl Program for Shell {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        self.step += 1;
        assert_eq!(self.step, 1, "exec replaced this program");
        let program: Box<dyn Program> = match self.what {
            Role::Cc1 => Box::new(Compiler::new(self.shared.clone(), self.job)),
            role => Box::new(Recipe {
                shared: self.shared.clone(),
                job: self.job,
                role,
                step: 0,
                heap: None,
                child: 0,
            }),
        };
        Action::Syscall(Syscall::Exec { program })
    }
}

/// A recipe process after its exec: faults in its pages, works, runs its children one after
/// another (`vfork()`, `execve()`, `waitpid()`), exits.
struct Recipe {
    shared: Rc<Shared>,
    job: Job,
    role: Role,
    step: u8,
    heap: Option<VmaId>,
    /// Children started so far.
    child: usize,
}

impl Program for Recipe {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let m = self.shared.mix;
        let tool = self.role.tool(&m);
        self.step += 1;
        match self.step {
            1 => return Action::Syscall(Syscall::Mmap { pages: tool.pages.max(1) }),
            2 => {
                let heap = mapped(env);
                self.heap = Some(heap);
                return store(heap, 0, tool.pages.max(1), self.shared.ref_cycles);
            }
            3 => {
                let cycles = (tool.work_ms * 1000.0) as u64 * self.shared.clock_mhz;
                return Action::Compute { cycles: cycles.max(1) };
            }
            _ => {}
        }
        // Then per child: start it, wait for it.
        let children = self.role.children();
        if (self.step - 4).is_multiple_of(2) {
            let Some(&what) = children.get(self.child) else { return Action::Exit };
            self.child += 1;
            let shell = Shell { shared: self.shared.clone(), job: self.job, what, step: 0 };
            Action::Syscall(Syscall::Vfork { program: Box::new(shell) })
        } else {
            match env.last {
                Outcome::Spawned(child) => Action::Syscall(Syscall::Wait { child }),
                other => panic!("expected the result of vfork, got {other:?}"),
            }
        }
    }
}

/// The compiler process.
struct Compiler {
    shared: Rc<Shared>,
    job: Job,
    step: u32,
    text: Option<VmaId>,
    heap: Option<VmaId>,
    /// Pages faulted in so far: text, heap first written, heap first read, read then written.
    text_in: u64,
    written_in: u64,
    read_in: u64,
    rewritten_in: u64,
    /// The text's and the heap's pages faulted in so far, in LRU order.
    text_lru: LruPages,
    heap_lru: LruPages,
    /// References done, and references in the job.
    refs: u64,
    refs_total: u64,
    buffers_done: u64,
    buffer: Option<VmaId>,
    /// What comes next in the buffer cycle (0: none, 1: reference it, 2: unmap it).
    buffer_step: u8,
    buffer_kind: AccessKind,
}

impl Compiler {
    fn new(shared: Rc<Shared>, job: Job) -> Compiler {
        // Without `compiler-reuse`, a step is a burst of pages (and every step counts).
        let per_step = if shared.measured_reuse { 1 } else { assumed::BURST_PAGES };
        let refs_total = (job.work / (shared.ref_cycles * per_step)).max(1);
        Compiler {
            shared,
            job,
            step: 0,
            text: None,
            heap: None,
            text_in: 0,
            written_in: 0,
            read_in: 0,
            rewritten_in: 0,
            text_lru: LruPages::default(),
            heap_lru: LruPages::default(),
            refs: 0,
            refs_total,
            buffers_done: 0,
            buffer: None,
            buffer_step: 0,
            buffer_kind: AccessKind::Store,
        }
    }

    /// References that come back to pages the compiler has: up to [`SCATTER_PAGES`] of one
    /// stream, fetches of its text or loads or stores of its heap (each stream at its measured
    /// rate), each at a distance drawn from the stream's measured profile. One action for
    /// several references keeps the model's events few (cc1 makes about 16 such references
    /// per µs).
    fn reuse(&mut self, env: &mut Env<'_>, text: VmaId, heap: VmaId) -> Action {
        let shared = &*self.shared;
        let m = &shared.mix;
        let (code, data) = (m.code_reuse.refs_per_ms, m.data_reuse.refs_per_ms);
        let fetch = env.rng.random::<f64>() * (code + data) < code;
        let store = !fetch && env.rng.random::<f64>() < m.store_share;
        let (lru, sampler) = if fetch {
            (&mut self.text_lru, &shared.code_distances)
        } else {
            (&mut self.heap_lru, &shared.data_distances)
        };
        let n = (SCATTER_PAGES as u64).min(self.refs_total - self.refs);
        self.refs += n;
        let mut drawn = [0u32; SCATTER_PAGES];
        let mut stored = [0u32; SCATTER_PAGES];
        let (mut len, mut writable) = (0, 0);
        // Pages first read are written only once their write comes up (the measured
        // write-after-read faults, `grow`): a store drawn to one before that is left out.
        let (written, rewritten) = (self.job.written, self.job.written + self.rewritten_in);
        for _ in 0..n {
            let Some(page) = lru.reference(sampler.draw(&mut *env.rng)) else { break };
            drawn[len] = page as u32;
            len += 1;
            if page < written || (written..rewritten).contains(&page) {
                stored[writable] = page as u32;
                writable += 1;
            }
        }
        let (vma, list, kind) = match (fetch, store && writable > 0) {
            (true, _) => (text, &drawn[..len], AccessKind::Fetch),
            (false, true) => (heap, &stored[..writable], AccessKind::Store),
            (false, false) => (heap, &drawn[..len], AccessKind::Load),
        };
        // A compiler's reuse walks its IR, linked structures (gcc: the insn chain of rtl.h,
        // NEXT_INSN/PREV_INSN; tree_common.chain in tree-core.h): each reference's address is
        // loaded by the one before, and a fetch's miss stalls the front end (NOTE: an
        // assumption about the whole reuse stream).
        Action::Touch(Touch {
            dependent: true,
            ..Touch::scattered(vma, list, kind, shared.ref_cycles)
        })
    }

    /// A burst of references among the first `have` pages of a region, mostly the hottest
    /// fifth (mechanism `compiler-reuse` off: the model before it).
    fn assumed_reuse(&self, env: &mut Env<'_>, vma: VmaId, have: u64, kind: AccessKind) -> Action {
        let hot = (have / 5).max(1);
        let span = if env.rng.random::<f64>() < assumed::HOT_SHARE { hot } else { have.max(1) };
        let first = env.rng.random_range(0..span);
        let pages = assumed::BURST_PAGES.min(have.saturating_sub(first)).max(1);
        let touch = Touch::new(vma, first, pages, kind, assumed::REF_CYCLES);
        Action::Touch(Touch { dependent: true, ..touch })
    }

    /// Grows a region's faulted part from `*have` to `want` pages (pages `base + have` on),
    /// putting them on `lru` (if they are new to it); `None` if already there.
    fn grow(
        have: &mut u64,
        want: u64,
        vma: VmaId,
        base: u64,
        kind: AccessKind,
        cycles: u64,
        lru: Option<&mut LruPages>,
    ) -> Option<Action> {
        if *have >= want {
            return None;
        }
        let first = base + *have;
        let pages = want - *have;
        *have = want;
        if let Some(lru) = lru {
            (first..first + pages).for_each(|p| lru.push(p));
        }
        Some(Action::Touch(Touch::new(vma, first, pages, kind, cycles)))
    }
}

impl Program for Compiler {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        // Shared, not copied: the compiler's next step is the model's hottest path.
        let shared = Rc::clone(&self.shared);
        let m = &shared.mix;
        let job = self.job;
        self.step += 1;
        // Heap layout: first-written pages, then first-read pages, then the RELRO pages.
        let relro_at = job.written + job.read;
        // Start-up: map text and heap, write the RELRO pages, protect them.
        match self.step {
            // The text: cc1's file, in the page cache, mapped and faulted around (without
            // `compiler-reuse`, anonymous pages, one per fetch fault).
            1 => {
                let pages = job.text * shared.text_per_fault();
                return Action::Syscall(if shared.measured_reuse {
                    Syscall::MmapFile { pages }
                } else {
                    Syscall::Mmap { pages }
                });
            }
            2 => {
                self.text = Some(mapped(env));
                return Action::Syscall(Syscall::Mmap { pages: relro_at + m.relro_pages });
            }
            3 => {
                let heap = mapped(env);
                self.heap = Some(heap);
                return store(heap, relro_at, m.relro_pages, shared.ref_cycles);
            }
            4 => {
                let heap = self.heap.expect("mapped");
                return Action::Syscall(Syscall::Mprotect {
                    vma: heap,
                    first: relro_at,
                    pages: m.relro_pages,
                });
            }
            _ => {}
        }
        let (text, heap) = (self.text.expect("mapped"), self.heap.expect("mapped"));
        // A buffer under way: reference it, then unmap it.
        match self.buffer_step {
            1 => {
                let vma = mapped(env);
                self.buffer = Some(vma);
                self.buffer_step = 2;
                // The touch stops at the region's end.
                let cycles = shared.ref_cycles;
                return Action::Touch(Touch::new(vma, 0, u64::MAX, self.buffer_kind, cycles));
            }
            2 => {
                self.buffer_step = 0;
                let vma = self.buffer.take().expect("mapped");
                return Action::Syscall(Syscall::Munmap { vma });
            }
            _ => {}
        }
        if self.refs >= self.refs_total {
            return Action::Exit;
        }
        if !shared.measured_reuse {
            self.refs += 1;
        }
        let progress = |total: u64| total * self.refs / self.refs_total;
        // A buffer when its share of the job comes up (log-uniform size).
        if self.buffers_done < progress(job.buffers) {
            self.buffers_done += 1;
            self.buffer_step = 1;
            let (lo, hi) = (m.buffer_pages.0.max(1) as f64, m.buffer_pages.1.max(1) as f64);
            let pages = ((lo * (hi / lo).powf(env.rng.random::<f64>())).round() as u64).max(1);
            self.buffer_kind = if pages <= 16 { AccessKind::Load } else { AccessKind::Store };
            return Action::Syscall(Syscall::Mmap { pages });
        }
        // Fault in text and heap at their share of the job's progress; pages first read are
        // written later (their share of the job, never ahead of the reads).
        // (One growth per call: each returns its touch.)
        let cycles = shared.ref_cycles;
        // The stacks serve only the measured reuse.
        let measured = shared.measured_reuse;
        let text_pages = Some(&mut self.text_lru).filter(|_| measured);
        // Each fetch fault maps the 16 pages around it (`do_fault_around()`): the measured
        // fetch faults times 16 is the text the compiler comes to use.
        let want = progress(job.text).max(1) * shared.text_per_fault();
        let fetch = AccessKind::Fetch;
        if let Some(a) = Compiler::grow(&mut self.text_in, want, text, 0, fetch, cycles, text_pages)
        {
            return a;
        }
        let want = progress(job.written).max(1);
        let heap_pages = Some(&mut self.heap_lru).filter(|_| measured);
        if let Some(a) = Compiler::grow(
            &mut self.written_in,
            want,
            heap,
            0,
            AccessKind::Store,
            cycles,
            heap_pages,
        ) {
            return a;
        }
        let (want, base) = (progress(job.read), job.written);
        let heap_pages = Some(&mut self.heap_lru).filter(|_| measured);
        if let Some(a) = Compiler::grow(
            &mut self.read_in,
            want,
            heap,
            base,
            AccessKind::Load,
            cycles,
            heap_pages,
        ) {
            return a;
        }
        // Pages first read, now written: already on the heap's stack (NOTE: left where their
        // first read put them).
        let want = progress(job.rewritten).min(self.read_in);
        if let Some(action) = Compiler::grow(
            &mut self.rewritten_in,
            want,
            heap,
            base,
            AccessKind::Store,
            cycles,
            None,
        ) {
            return action;
        }
        if shared.measured_reuse {
            self.reuse(env, text, heap)
        } else if self.refs.is_multiple_of(2) {
            // The model before `compiler-reuse`: fetches, then data, alternately.
            self.assumed_reuse(env, text, self.text_in, AccessKind::Fetch)
        } else {
            let store = env.rng.random::<f64>() < assumed::STORE_SHARE;
            let kind = if store { AccessKind::Store } else { AccessKind::Load };
            self.assumed_reuse(env, heap, self.written_in, kind)
        }
    }
}

fn store(vma: VmaId, first: u64, pages: u64, cycles_per_page: u64) -> Action {
    Action::Touch(Touch::new(vma, first, pages, AccessKind::Store, cycles_per_page))
}

#[cfg(test)]
mod tests {
    use super::BuildMix;
    use crate::workloads::{scenario, Params};
    use crate::{Kernel, KernelConfig, NoObserver, Policy};
    use tlblab_types::Cycles;

    /// An 80 ms window of the S1 build on 4 CPUs: it stops at the window, and the measured
    /// fault mix shows: 6% of faults write a page first read (a copy and a one-page flush), so
    /// one-page flushes come at about 0.06 per fault (the VM build: 0.068 flushes per fault,
    /// 96% of them one page).
    #[test]
    fn a_window_of_the_s1_build_has_the_measured_flush_mix() {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let config = KernelConfig::new(4, 1);
        let mut k =
            Kernel::new(&spec, &Policy::named("linux-6.18").unwrap(), config, NoObserver).unwrap();
        let params = Params { tasks: 8, window_ms: 80, ..Params::default() };
        scenario("kbuild").unwrap().install(&mut k, &params).unwrap();
        assert!(!k.run(), "a window ends before the build");
        let r = k.report();
        assert!(r.elapsed_cycles <= 80_000 * k.clock_mhz());
        let one_page = r.flush_sizes.by_pages.get(&1).map_or(0, |e| e.0) as f64;
        let per_fault = one_page / r.page_faults as f64;
        assert!((0.04..0.08).contains(&per_fault), "{per_fault} one-page flushes per fault");
    }

    /// One compiler alone on a CPU of `skylake` for `ms` of work, at the measured mix's fault
    /// rate: the hardware counters of the run and the work done, in ms.
    fn lone_compiler(ms: u64, seed: u64) -> (crate::stats::KernelReport, f64) {
        use super::{Compiler, Job, Shared};
        use std::rc::Rc;
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let policy = Policy::named("linux-6.18").unwrap();
        let mut k = Kernel::new(&spec, &policy, KernelConfig::new(1, seed), NoObserver).unwrap();
        let mix = BuildMix::measured();
        let faults = ms as f64 * mix.faults_per_user_ms;
        let count = |share: f64| (faults * share).round() as u64;
        let (read, rewritten) = (count(mix.read_fault_share), count(mix.write_after_read_share));
        let job = Job {
            work: ms * 1000 * k.clock_mhz(),
            text: count(mix.fetch_fault_share),
            read,
            rewritten,
            written: faults as u64 - read - rewritten,
            buffers: 0,
        };
        let shared = Rc::new(Shared::new(mix, 0, k.clock_mhz(), true));
        k.spawn_process(Box::new(Compiler::new(shared, job)), tlblab_types::CpuId(0), true);
        assert!(k.run(), "the compiler exits");
        let r = k.report();
        let work: u64 = r.tasks.iter().map(|t| t.work_cycles).sum();
        let work_ms = work as f64 / (1000 * k.clock_mhz()) as f64;
        (r, work_ms)
    }

    /// The compiler misses Skylake's TLBs about as often per ms of its work as cachegrind
    /// counts for the real cc1 with the same geometry (4 KiB lines: dTLB 64 × 4-way, iTLB
    /// 128 × 8-way, STLB 1,536 × 12-way; tools/calibrate/results/cc1-page-reuse-2026-11-30.md:
    /// 11,228, 3,546 and 212 per user-ms). The model draws only references at distance 64 or
    /// more ([`super::reuse::FILTER`]), so it cannot make the set conflicts of nearer ones:
    /// its L1 misses are the fully associative counts (8,695 and 2,844 per ms), below the
    /// set-associative ones; its STLB misses add the faults' walks.
    #[test]
    fn the_compiler_misses_the_tlbs_as_cachegrind_counts_for_cc1() {
        let (r, ms) = lone_compiler(100, 1);
        let per_ms = |n: u64| n as f64 / ms;
        let h = &r.hw;
        let dtlb = per_ms(h.dtlb_load_misses.l1_miss + h.dtlb_store_misses.l1_miss);
        let itlb = per_ms(h.itlb_misses.l1_miss);
        let walks = per_ms(
            h.dtlb_load_misses.walk_completed
                + h.dtlb_store_misses.walk_completed
                + h.itlb_misses.walk_completed,
        );
        assert!((7_000.0..11_228.0).contains(&dtlb), "{dtlb} dTLB misses per ms");
        assert!((2_300.0..3_546.0).contains(&itlb), "{itlb} iTLB misses per ms");
        assert!((100.0..600.0).contains(&walks), "{walks} walks per ms");
    }

    /// Counts `sched_switch` events as tools/calibrate/kbuild_switches.py classifies a real
    /// trace's.
    #[derive(Clone, Copy, Debug, Default)]
    struct Switches {
        /// Switch-outs of a task that blocked, exited, or was preempted.
        blocked: u64,
        exited: u64,
        preempted: u64,
        /// Switch-outs of a user task that blocked or exited, by where the CPU went: a task of
        /// the same mm, of another mm, or idle.
        same_mm: u64,
        cross_mm: u64,
        to_idle: u64,
        /// Switches from idle to a task.
        from_idle: u64,
    }

    impl crate::Observer for Switches {
        fn sched_switch(&mut self, e: &crate::SwitchEvent) {
            use crate::SwitchedOut;
            match e.prev_state {
                SwitchedOut::Idle => self.from_idle += 1,
                SwitchedOut::Preempted => self.preempted += 1,
                SwitchedOut::Blocked | SwitchedOut::Exited => {
                    if e.prev_state == SwitchedOut::Blocked {
                        self.blocked += 1;
                    } else {
                        self.exited += 1;
                    }
                    if e.next_idle {
                        self.to_idle += 1;
                    } else if e.prev_mm == e.next_mm {
                        self.same_mm += 1;
                    } else {
                        self.cross_mm += 1;
                    }
                }
            }
        }
    }

    /// `make -j2` of the measured mix on two CPUs of a KVM guest, for `window_ms`: the switch
    /// counts, the jobs started, and the build's CPU-seconds (user + system of every task).
    fn measured_build(window_ms: u64, seed: u64, mix: BuildMix) -> (Switches, u64, f64) {
        let spec = tlblab_sim::machine::builtin("skylake-kvm").unwrap();
        let policy = Policy::named("linux-6.18").unwrap();
        let mut k =
            Kernel::new(&spec, &policy, KernelConfig::new(2, seed), Switches::default()).unwrap();
        k.limit_time(Cycles(window_ms * 1000 * k.clock_mhz()));
        let params = Params { tasks: 2, ..Params::default() };
        for (i, slot) in super::slots(&mix, &params, k.clock_mhz(), true).into_iter().enumerate() {
            k.spawn_process(slot, tlblab_types::CpuId(i as u16), true);
        }
        assert!(!k.run(), "a window ends before the build");
        let r = k.report();
        let cpu: u64 = r.tasks.iter().map(|t| t.user_cycles + t.sys_cycles).sum();
        let jobs = r.tasks.iter().map(|t| t.ops).sum::<u64>();
        let cpu_s = cpu as f64 / (k.clock_mhz() as f64 * 1e6);
        let o = k.observer();
        let sw = Switches { ..*o };
        (sw, jobs, cpu_s)
    }

    /// The simulated build blocks and exits as often per CPU-second as the real one
    /// (tools/calibrate/results/kbuild-switches-2026-11-25.md: 47 voluntary and exit
    /// switch-outs of build tasks per build CPU-second, 10-s intervals from 28 to 64), and per
    /// job as its recipe says (measured: 14.0 blocks and 7.1 exits per compiled object; the
    /// model's recipe has 12 and 6: make 2, sh 6 and gcc 4 blocks, one vfork and one wait per
    /// child). Without the recipe (the model before the measurement) it blocks twice per job.
    /// (6 s of simulated time: shorter windows hold too few jobs of 0.45 CPU-s.)
    #[test]
    fn the_build_switches_as_often_as_the_measured_one() {
        let (sw, jobs, cpu_s) = measured_build(6000, 1, BuildMix::measured());
        let rate = (sw.blocked + sw.exited) as f64 / cpu_s;
        // Two jobs keep two CPUs busy between their blocks (measured: 1.90 CPUs for make -j2
        // when the build had the machine to itself, kbuild-mix-2026-11-22.md).
        assert!(cpu_s / (2.0 * 6.0) > 0.85, "{cpu_s} CPU-s in 6 s on 2 CPUs");
        assert!((28.0..64.0).contains(&rate), "{rate} switch-outs per CPU-s");
        let jobs = jobs as f64;
        let per_job = |n: u64| n as f64 / jobs;
        // Fewer than 12: a child placed on an idle CPU may exec before its parent's vfork()
        // sleeps.
        assert!((8.0..=12.5).contains(&per_job(sw.blocked)), "{} blocks", per_job(sw.blocked));
        assert!((5.0..=6.5).contains(&per_job(sw.exited)), "{} exits per job", per_job(sw.exited));
        // Every block or exit goes somewhere: to a task of another mm, the same mm (a vfork
        // child before its exec), or idle; and idle leaves as often as it is entered (± the
        // CPUs).
        assert_eq!(sw.same_mm + sw.cross_mm + sw.to_idle, sw.blocked + sw.exited);
        let before = BuildMix { recipe: false, ..BuildMix::measured() };
        let (old, jobs, cpu_s) = measured_build(1000, 1, before);
        // make's vfork and wait per job, and the two slots' jobs under way at the end.
        assert!(old.blocked <= 2 * (jobs + 2), "{} blocks, {jobs} jobs", old.blocked);
        assert!(((old.blocked + old.exited) as f64 / cpu_s) < 28.0);
    }

    /// The three study scenarios (S1 `kbuild`, S3 `kbuild-allmod`, S5 `kbuild-xpfo`) are
    /// deterministic with their recipes: the same seed gives the same switches, flushes and
    /// work; another seed another run. (60 ms is too short for a compile job to end: the
    /// recipes block, starting their first jobs' tools.)
    #[test]
    fn the_study_builds_are_deterministic() {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let run = |name: &str, seed: u64| {
            let policy = if name == "kbuild-xpfo" { "xpfo-deferred" } else { "linux-6.18" };
            let config = KernelConfig::new(4, seed);
            let policy = Policy::named(policy).unwrap();
            let mut k = Kernel::new(&spec, &policy, config, Switches::default()).unwrap();
            let params = Params { tasks: 8, window_ms: 60, ..Params::default() };
            let s = scenario(name).unwrap();
            s.install(&mut k, &params).unwrap();
            assert!(!s.run(&mut k, &params));
            let r = k.report();
            let o = *k.observer();
            let work: u64 = r.tasks.iter().map(|t| t.work_cycles).sum();
            let key = (r.tasks.len(), r.page_faults, r.tlb_flush.clone(), work);
            (key, (o.blocked, o.exited, o.preempted, o.to_idle, o.cross_mm, o.from_idle))
        };
        for name in ["kbuild", "kbuild-allmod", "kbuild-xpfo"] {
            let (a, b) = (run(name, 3), run(name, 3));
            assert_eq!(a, b, "{name}");
            assert!(a.1 .0 > 0, "{name}: the recipes block in 60 ms: {a:?}");
            assert_ne!(a, run(name, 4), "{name}");
        }
    }

    /// A finite build of six 2 ms jobs on two slots runs to completion: each job is a shell
    /// that runs the gcc driver (which runs the compiler and the assembler), fixdep and rm, all
    /// of which exit; the slots count six jobs, and the faults are the jobs' share of the fault
    /// rate plus each tool's pages.
    #[test]
    fn a_finite_build_runs_every_job_to_its_exit() {
        use super::slots;
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let config = KernelConfig::new(2, 3);
        let mut k =
            Kernel::new(&spec, &Policy::named("linux-6.18").unwrap(), config, NoObserver).unwrap();
        // No buffers: a buffer's pages come on top of the job's fault rate.
        let mix = BuildMix {
            job_user_ms: 2.0,
            job_sigma: 0.0,
            buffers_per_job: 0.0,
            ..BuildMix::measured()
        };
        let params = Params { tasks: 2, jobs: 6, ..Params::default() };
        for (i, slot) in slots(&mix, &params, k.clock_mhz(), true).into_iter().enumerate() {
            k.spawn_process(slot, tlblab_types::CpuId(i as u16), true);
        }
        assert!(k.run());
        let r = k.report();
        assert_eq!(r.tasks.iter().map(|t| t.ops).sum::<u64>(), 6);
        // Two slots and six jobs of six processes: sh, gcc, cc1, as, fixdep, rm (a vforked
        // child becomes its program at exec).
        assert_eq!(r.tasks.len(), 2 + 6 * 6);
        assert!(r.tasks.iter().all(|t| t.exited.is_some()));
        let expected = 6.0 * 2.0 * mix.faults_per_user_ms;
        let tools = [mix.sh, mix.gcc, mix.assembler, mix.fixdep, mix.rm];
        let tool_pages = 6 * tools.iter().map(|t| t.pages).sum::<u64>();
        let compiler_faults =
            r.page_faults as f64 - 2.0 * mix.make_pages as f64 - tool_pages as f64;
        assert!((compiler_faults / expected - 1.0).abs() < 0.25, "{compiler_faults} vs {expected}");
    }

    /// A warm-up is run but not measured: a run with `warmup_ms` reports exactly the difference
    /// between two snapshots of the same run taken at the end of the warm-up and at the end of
    /// the window (the measurement changes no state), and its elapsed time is the window.
    #[test]
    fn a_warm_up_leaves_exactly_the_window_in_the_report() {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let kernel = |policy: &str| {
            let config = KernelConfig::new(4, 7);
            Kernel::new(&spec, &Policy::named(policy).unwrap(), config, NoObserver).unwrap()
        };
        let s = scenario("kbuild-xpfo").unwrap();
        let measured = Params { tasks: 6, window_ms: 30, warmup_ms: 20, ..Params::default() };
        for policy in ["no-xpfo", "xpfo-sync", "xpfo-deferred"] {
            let mut k = kernel(policy);
            s.install(&mut k, &measured).unwrap();
            assert!(!s.run(&mut k, &measured), "a window ends before the build");
            let r = k.report();
            let mhz = k.clock_mhz();
            // The window's end is its last event, as in a run without a warm-up: within a step
            // of the limit (a compiler's burst, 4 pages of 400 cycles' work and their
            // translations, charged serially when they chase pointers).
            let window = 30_000 * mhz;
            let step = 4 * (400 + 100);
            let end = r.elapsed_cycles;
            assert!(end <= window && end > window - step, "{policy}: {end} of {window}");
            // The same run, snapshotted at 20 ms and at 50 ms.
            let mut whole = kernel(policy);
            let unmeasured = Params { warmup_ms: 0, window_ms: 50, ..measured };
            s.install(&mut whole, &unmeasured).unwrap();
            whole.run_until(Cycles(20_000 * mhz));
            // The snapshot is taken at the last event up to 20 ms, the window starts at 20 ms:
            // CPU time in between is in the snapshot run's difference only.
            let gap = 20_000 * mhz - whole.now().0;
            let (a, b) = (whole.report(), {
                whole.run();
                whole.report()
            });
            assert_eq!(r.elapsed_cycles, b.elapsed_cycles - 20_000 * mhz, "{policy}");
            let sum = |v: &[u64]| v.iter().sum::<u64>();
            assert!(r.page_faults > 0 && r.page_faults == b.page_faults - a.page_faults);
            assert_eq!(sum(&r.ipis_sent), sum(&b.ipis_sent) - sum(&a.ipis_sent), "{policy}");
            assert_eq!(sum(&r.irq_cal), sum(&b.irq_cal) - sum(&a.irq_cal), "{policy}");
            for (reason, n) in &r.tlb_flush {
                assert_eq!(*n, b.tlb_flush[reason] - a.tlb_flush[reason], "{policy} {reason}");
            }
            let work =
                |r: &crate::stats::KernelReport| r.tasks.iter().map(|t| t.work_cycles).sum::<u64>();
            assert!(work(&r) > 0 && work(&r) == work(&b) - work(&a), "{policy}");
            let idle = |r: &crate::stats::KernelReport| {
                r.cpu_time.iter().map(|c| c.idle_cycles).sum::<u64>()
            };
            let (wr, wba) = (idle(&r), idle(&b) - idle(&a));
            assert!(wba >= wr && wba - wr <= gap * 4, "{policy}: {wr} vs {wba}, gap {gap}");
            if gap == 0 {
                assert_eq!(wr, wba, "{policy}");
            }
            if let (Some(x), Some(xa), Some(xb)) = (&r.xpfo, &a.xpfo, &b.xpfo) {
                assert!(x.kernel_unmaps > 0);
                assert_eq!(x.kernel_unmaps, xb.kernel_unmaps - xa.kernel_unmaps, "{policy}");
                assert_eq!(x.ipis, xb.ipis - xa.ipis, "{policy}");
            }
        }
    }

    /// A warm-up needs a window to end: without one it is refused.
    #[test]
    fn a_warm_up_without_a_window_is_refused() {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let config = KernelConfig::new(4, 1);
        let mut k =
            Kernel::new(&spec, &Policy::named("linux-6.18").unwrap(), config, NoObserver).unwrap();
        let p = Params { warmup_ms: 10, ..Params::default() };
        let err = scenario("madvise-busy").unwrap().install(&mut k, &p).unwrap_err();
        assert!(err.to_string().contains("--warmup-ms needs a window"), "{err}");
    }
}
