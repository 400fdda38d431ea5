//! `kbuild`: the process mix of a kernel build (`make -jN`) as programs of the model.
//!
//! `N` job slots (make and its shells) each take compile jobs from a shared queue: the slot
//! writes a little of its own memory, forks (`dup_mmap()` write-protects its pages and flushes
//! its mm), and waits; the child (the shell) writes a few inherited pages (copy-on-write
//! faults) and execs the compiler. The compiler maps its text, heap and stack, applies RELRO
//! (`mprotect` of pages it just wrote), then works: page references in bursts, with skewed
//! reuse of the pages it has so far, while its text and heap grow by page faults at the
//! measured fault rate; now and then it maps a buffer, fills it and unmaps it (malloc's large
//! allocations); then it exits (`exit_mmap()`: a full flush of its mm).
//!
//! A build is far too long to simulate whole: a run simulates a representative window of
//! `jobs` compile jobs with the real per-job sizes, and says so. Every figure of a preset is
//! in [`BuildMix`] with its source.

use super::{mapped, Params};
use crate::mm::VmaId;
use crate::program::{Action, Env, Outcome, Program, Syscall, Touch};
use rand::RngExt;
use std::cell::Cell;
use std::rc::Rc;
use tlblab_types::AccessKind;

/// The parameters of a build's process mix. Figures are per compile job (one `cc1`-like
/// process) unless said otherwise.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct BuildMix {
    /// Which build this describes, and where its figures come from.
    pub source: &'static str,
    /// Compile jobs simulated (the representative window); 0: two per job slot.
    pub jobs: u64,
    /// Median user time of a compile job, ms (job sizes are log-normal around it).
    pub job_user_ms: f64,
    /// Log-normal spread (σ of the log) of job sizes.
    pub job_sigma: f64,
    /// Page faults per ms of user time, all kinds.
    pub faults_per_user_ms: f64,
    /// Share of a job's faults on its text (file pages from the page cache: no new page).
    pub text_fault_share: f64,
    /// Buffers a job maps, fills and unmaps, per ms of user time.
    pub buffers_per_user_ms: f64,
    /// Smallest and largest buffer, pages (log-uniform between).
    pub buffer_pages: (u64, u64),
    /// Pages RELRO write-protects at start-up (one `mprotect`).
    pub relro_pages: u64,
    /// Pages the shell child writes before exec (copy-on-write faults).
    pub child_cow_pages: u64,
    /// Pages make writes between two forks (copy-on-write faults after a fork).
    pub parent_cow_pages: u64,
    /// Pages of make's own memory.
    pub make_pages: u64,
    /// Work between two page references, cycles (the compiler moves to another page about
    /// this often).
    pub ref_cycles: u64,
    /// Pages referenced one after another in a burst.
    pub burst_pages: u64,
    /// Share of references that go to the hottest fifth of the pages a region has.
    pub hot_share: f64,
}

impl BuildMix {
    /// S1: `make -j8` of a kernel on a 4-core Skylake (studies.md: ≈ 880 s user, ≈ 58.4 M
    /// minor faults).
    pub fn s1() -> BuildMix {
        BuildMix {
            source:
                "S1 make -j8 (studies.md: 58.4 M faults / 880 user-s = 66.4 faults per user-ms)",
            jobs: 0,
            job_user_ms: 60.0,
            job_sigma: 0.8,
            faults_per_user_ms: 58.4e6 / 880e3,
            ..BuildMix::common()
        }
    }

    /// S3: `make -j100 -B -k` of an allmodconfig kernel (studies.md: 332 M faults over ≈
    /// 17,300 CPU-seconds of task clock).
    pub fn s3() -> BuildMix {
        BuildMix {
            source: "S3 allmodconfig (studies.md: 332 M faults / 17,300 task-clock s = 19.2 faults per ms)",
            jobs: 0,
            job_user_ms: 60.0,
            job_sigma: 0.8,
            faults_per_user_ms: 332e6 / 17_300e3,
            ..BuildMix::common()
        }
    }

    /// S5: `make -j60 all` / `make -j4 all`; studies.md gives no characterisation, so the S1
    /// (defconfig-like) rates are used.
    pub fn s5() -> BuildMix {
        BuildMix {
            source: "S5 make all (S1's rates: no S5 characterisation)",
            jobs: 0,
            ..BuildMix::s1()
        }
    }

    /// Figures shared by the presets (assumptions until measured; see
    /// tools/calibrate/results/).
    fn common() -> BuildMix {
        BuildMix {
            source: "",
            jobs: 0,
            job_user_ms: 60.0,
            job_sigma: 0.8,
            faults_per_user_ms: 66.4,
            text_fault_share: 0.3,
            buffers_per_user_ms: 0.2,
            buffer_pages: (1, 256),
            relro_pages: 4,
            child_cow_pages: 8,
            parent_cow_pages: 4,
            make_pages: 256,
            ref_cycles: 400,
            burst_pages: 4,
            hot_share: 0.8,
        }
    }
}

/// One compile job, as drawn by a slot.
#[derive(Clone, Copy, Debug)]
struct Job {
    /// User cycles of work.
    work: u64,
    /// Text pages faulted in.
    text: u64,
    /// Heap pages faulted in.
    heap: u64,
    /// Buffers mapped and unmapped.
    buffers: u64,
}

/// The installed mix: shared by the slots.
struct Shared {
    mix: BuildMix,
    /// Jobs not yet taken.
    left: Cell<u64>,
    clock_mhz: u64,
}

/// Makes the slot programs of a build: `params.tasks` slots (`make -jN`).
pub(super) fn slots(mix: &BuildMix, params: &Params, clock_mhz: u64) -> Vec<Box<dyn Program>> {
    let jobs = match (params.jobs, mix.jobs) {
        (0, 0) => 2 * params.tasks as u64,
        (0, preset) => preset,
        (asked, _) => asked,
    };
    let shared = Rc::new(Shared { mix: *mix, left: Cell::new(jobs), clock_mhz: clock_mhz.max(1) });
    (0..params.tasks)
        .map(|_| Box::new(Slot { shared: shared.clone(), step: 0, heap: None }) as Box<dyn Program>)
        .collect()
}

/// A job slot: make (and the shell it forks).
struct Slot {
    shared: Rc<Shared>,
    step: u8,
    heap: Option<VmaId>,
}

impl Slot {
    fn draw(&self, env: &mut Env<'_>) -> Job {
        let m = &self.shared.mix;
        // Log-normal job size: exp(σ·z) around the median, z standard normal (Box–Muller).
        let (u1, u2): (f64, f64) = (env.rng.random::<f64>().max(1e-12), env.rng.random());
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let ms = m.job_user_ms * (m.job_sigma * z).exp();
        let faults = (ms * m.faults_per_user_ms).round() as u64;
        let text = (faults as f64 * m.text_fault_share).round() as u64;
        let buffers = (ms * m.buffers_per_user_ms).round() as u64;
        let mean_buffer = (m.buffer_pages.0 + m.buffer_pages.1) / 2;
        let heap = faults.saturating_sub(text + buffers * mean_buffer + m.relro_pages).max(1);
        Job { work: (ms * 1000.0) as u64 * self.shared.clock_mhz, text: text.max(1), heap, buffers }
    }
}

impl Program for Slot {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let m = &self.shared.mix;
        self.step += 1;
        match self.step {
            1 => return Action::Syscall(Syscall::Mmap { pages: m.make_pages }),
            2 => {
                let heap = mapped(env);
                self.heap = Some(heap);
                return store(heap, 0, m.make_pages, m.ref_cycles);
            }
            _ => {}
        }
        let heap = self.heap.expect("mapped in step 1");
        // The loop: pick a job, write, fork, wait, count.
        match (self.step - 3) % 4 {
            0 => {
                if self.shared.left.get() == 0 {
                    return Action::Exit;
                }
                self.shared.left.set(self.shared.left.get() - 1);
                let first = env
                    .rng
                    .random_range(0..m.make_pages - m.parent_cow_pages.min(m.make_pages - 1));
                store(heap, first, m.parent_cow_pages, m.ref_cycles)
            }
            1 => {
                let job = self.draw(env);
                let shell = Shell { shared: self.shared.clone(), job, heap, step: 0 };
                Action::Syscall(Syscall::Fork { program: Box::new(shell) })
            }
            2 => match env.last {
                Outcome::Spawned(child) => Action::Syscall(Syscall::Wait { child }),
                other => panic!("expected the result of fork, got {other:?}"),
            },
            _ => Action::Op,
        }
    }
}

/// The forked shell: a few copy-on-write writes, then exec of the compiler.
struct Shell {
    shared: Rc<Shared>,
    job: Job,
    heap: VmaId,
    step: u8,
}

impl Program for Shell {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let m = &self.shared.mix;
        self.step += 1;
        match self.step {
            1 => {
                let first =
                    env.rng.random_range(0..m.make_pages - m.child_cow_pages.min(m.make_pages - 1));
                store(self.heap, first, m.child_cow_pages, m.ref_cycles)
            }
            2 => {
                let cc = Compiler::new(self.shared.clone(), self.job);
                Action::Syscall(Syscall::Exec { program: Box::new(cc) })
            }
            _ => unreachable!("exec replaced this program"),
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
    /// Pages of text and heap faulted in so far.
    text_in: u64,
    heap_in: u64,
    /// Bursts done, and bursts in the job.
    burst: u64,
    bursts: u64,
    buffers_done: u64,
    buffer: Option<VmaId>,
    /// What comes next in the buffer cycle (0: none, 1: fill, 2: unmap).
    buffer_step: u8,
}

impl Compiler {
    fn new(shared: Rc<Shared>, job: Job) -> Compiler {
        let m = &shared.mix;
        let bursts = (job.work / (m.ref_cycles * m.burst_pages).max(1)).max(1);
        Compiler {
            shared,
            job,
            step: 0,
            text: None,
            heap: None,
            text_in: 0,
            heap_in: 0,
            burst: 0,
            bursts,
            buffers_done: 0,
            buffer: None,
            buffer_step: 0,
        }
    }

    /// A burst of references among `have` pages of a region: mostly the hottest fifth.
    fn reuse(&self, env: &mut Env<'_>, vma: VmaId, have: u64, kind: AccessKind) -> Action {
        let m = &self.shared.mix;
        let hot = (have / 5).max(1);
        let span = if env.rng.random::<f64>() < m.hot_share { hot } else { have.max(1) };
        let first = env.rng.random_range(0..span);
        let pages = m.burst_pages.min(have - first).max(1);
        Action::Touch(Touch { vma, first, pages, kind, cycles_per_page: m.ref_cycles })
    }
}

impl Program for Compiler {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let m = self.shared.mix;
        self.step += 1;
        // Start-up: map text and heap, write the RELRO pages, protect them.
        match self.step {
            1 => return Action::Syscall(Syscall::Mmap { pages: self.job.text }),
            2 => {
                self.text = Some(mapped(env));
                return Action::Syscall(Syscall::Mmap { pages: self.job.heap + m.relro_pages });
            }
            3 => {
                let heap = mapped(env);
                self.heap = Some(heap);
                return store(heap, self.job.heap, m.relro_pages, m.ref_cycles);
            }
            4 => {
                let heap = self.heap.expect("mapped");
                return Action::Syscall(Syscall::Mprotect {
                    vma: heap,
                    first: self.job.heap,
                    pages: m.relro_pages,
                });
            }
            _ => {}
        }
        let (text, heap) = (self.text.expect("mapped"), self.heap.expect("mapped"));
        // A buffer under way: fill it, then unmap it.
        match self.buffer_step {
            1 => {
                let vma = mapped(env);
                self.buffer = Some(vma);
                self.buffer_step = 2;
                let pages = u64::MAX; // the touch stops at the region's end
                return store(vma, 0, pages, m.ref_cycles);
            }
            2 => {
                self.buffer_step = 0;
                let vma = self.buffer.take().expect("mapped");
                return Action::Syscall(Syscall::Munmap { vma });
            }
            _ => {}
        }
        if self.burst == self.bursts {
            return Action::Exit;
        }
        self.burst += 1;
        let progress = |total: u64| total * self.burst / self.bursts;
        // Start a buffer when its share of the job comes up (log-uniform size).
        if self.buffers_done < progress(self.job.buffers) {
            self.buffers_done += 1;
            self.buffer_step = 1;
            let (lo, hi) = (m.buffer_pages.0.max(1) as f64, m.buffer_pages.1.max(1) as f64);
            let pages = (lo * (hi / lo).powf(env.rng.random::<f64>())).round() as u64;
            return Action::Syscall(Syscall::Mmap { pages: pages.max(1) });
        }
        // Grow text and heap to their share of the job's faults.
        let want_text = progress(self.job.text).max(1);
        if self.text_in < want_text {
            let first = self.text_in;
            self.text_in = want_text;
            return Action::Touch(Touch {
                vma: text,
                first,
                pages: want_text - first,
                kind: AccessKind::Fetch,
                cycles_per_page: m.ref_cycles,
            });
        }
        let want_heap = progress(self.job.heap).max(1);
        if self.heap_in < want_heap {
            let first = self.heap_in;
            self.heap_in = want_heap;
            return store(heap, first, want_heap - first, m.ref_cycles);
        }
        // Reuse: instruction fetches, then data, as a compiler alternates between them.
        if self.burst.is_multiple_of(2) {
            self.reuse(env, text, self.text_in, AccessKind::Fetch)
        } else {
            let kind =
                if env.rng.random::<f64>() < 0.3 { AccessKind::Store } else { AccessKind::Load };
            self.reuse(env, heap, self.heap_in, kind)
        }
    }
}

fn store(vma: VmaId, first: u64, pages: u64, cycles_per_page: u64) -> Action {
    Action::Touch(Touch { vma, first, pages, kind: AccessKind::Store, cycles_per_page })
}
