//! Scenarios for the safety checker.
//!
//! `lazy-readers`: A writer thread and `--tasks` reader
//! threads of one process share a region of `--pages` pages. Each round the writer writes the
//! pages, wakes every reader, waits until each has read them, then `MADV_DONTNEED`s them. A
//! reader reads the pages, answers, and blocks, so its CPU idles lazily with the mm still
//! loaded while the writer's flush runs: a lazy CPU is skipped by the shootdown (4.20+) and
//! must catch up on `tlb_gen` when the reader wakes. Any reader hit on an entry from before
//! the DONTNEED is a stale use after the operation completed.

use super::{mapped, Params};
use crate::mm::VmaId;
use crate::program::{Action, Env, EventFd, Program, Syscall, Touch};
use tlblab_types::{AccessKind, CpuId};

/// The writer (CPU 0).
pub(super) struct Writer {
    p: Params,
    /// Per reader: the eventfd that wakes it, and the one it answers on.
    readers: Vec<(EventFd, EventFd)>,
    vma: Option<VmaId>,
    step: usize,
    round: u64,
}

impl Writer {
    pub(super) fn new(p: &Params, readers: Vec<(EventFd, EventFd)>) -> Writer {
        Writer { p: p.clone(), readers, vma: None, step: 0, round: 0 }
    }
}

impl Program for Writer {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let n = self.readers.len();
        let Some(vma) = self.vma else {
            if self.step == 0 {
                self.step = 1;
                return Action::Syscall(Syscall::Mmap { pages: self.p.pages });
            }
            self.vma = Some(mapped(env));
            self.step = 0;
            return self.next(env);
        };
        // Start-up: one reader thread per CPU after the writer's.
        if self.round == 0 && self.step < n {
            let (wake, answer) = self.readers[self.step];
            self.step += 1;
            let reader = Reader { vma, pages: self.p.pages, wake, answer, step: 0 };
            return Action::Syscall(Syscall::Clone {
                program: Box::new(reader),
                cpu: CpuId(self.step as u16),
            });
        }
        if self.round == self.p.iterations {
            return Action::Exit;
        }
        // A round: write, wake each reader, wait for each answer, DONTNEED, count.
        let phase = self.step - n;
        self.step += 1;
        let dontneed = Syscall::MadviseDontneed { vma, first: 0, pages: self.p.pages };
        let touch = (vma, self.p.pages, self.p.cycles_per_page);
        round_step(phase, &self.readers, touch, dontneed).unwrap_or_else(|| {
            self.step = n;
            self.round += 1;
            Action::Op
        })
    }
}

/// A reader: wait to be woken, read every page, answer.
struct Reader {
    vma: VmaId,
    pages: u64,
    wake: EventFd,
    answer: EventFd,
    step: u8,
}

impl Program for Reader {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        self.step = (self.step + 1) % 3;
        match self.step {
            1 => Action::Syscall(Syscall::EventfdRead { fd: self.wake }),
            2 => Action::Touch(Touch::new(self.vma, 0, self.pages, AccessKind::Load, 0)),
            _ => Action::Syscall(Syscall::EventfdWrite { fd: self.answer }),
        }
    }
}

/// `switching-readers` is `shared-writers` whose readers each share their CPU with a thread of
/// another process, the two yielding to each other after every pass: each reader's CPU switches
/// onto the mm again and again while the writers' flushes of it are dispatched, the window of
/// `LOADED_MM_SWITCHING` in `should_flush_tlb()` (CVE-2025-37964).
///
/// `shared-writers`: two writer threads (CPUs 0 and 1) each own half of a region of 2 ×
/// `--pages` pages and loop { write their half; `MADV_DONTNEED` it }, concurrently, while
/// `--tasks` reader threads (CPUs 2 …) read the whole region in a loop. Each reader's CPU receives
/// both writers' ranged flushes, in either order once IPI delivery is perturbed: the case of the
/// `new_tlb_gen == local_tlb_gen + 1` rule of `flush_tlb_func()`.
pub(super) struct SharedWriter {
    p: Params,
    /// The first writer maps the region and starts the others; the second gets it.
    vma: Option<VmaId>,
    half: u64,
    step: u64,
    round: u64,
    spawned: usize,
    /// The readers yield their CPU after each pass (`switching-readers`).
    readers_yield: bool,
}

impl SharedWriter {
    pub(super) fn first(p: &Params, readers_yield: bool) -> SharedWriter {
        SharedWriter {
            p: p.clone(),
            vma: None,
            half: 0,
            step: 0,
            round: 0,
            spawned: 0,
            readers_yield,
        }
    }
}

impl Program for SharedWriter {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let pages = self.p.pages;
        let Some(vma) = self.vma else {
            if self.step == 0 {
                self.step = 1;
                return Action::Syscall(Syscall::Mmap { pages: 2 * pages });
            }
            self.vma = Some(mapped(env));
            self.step = 0;
            return self.next(env);
        };
        // The first writer starts the second writer (CPU 1), then the readers (CPUs 2 …).
        if self.half == 0 && self.spawned <= self.p.tasks {
            self.spawned += 1;
            let program: Box<dyn Program> = if self.spawned == 1 {
                Box::new(SharedWriter {
                    p: self.p.clone(),
                    vma: Some(vma),
                    half: 1,
                    step: 0,
                    round: 0,
                    spawned: usize::MAX,
                    readers_yield: self.readers_yield,
                })
            } else {
                Box::new(LoopReader { vma, pages: 2 * pages, yields: self.readers_yield, step: 0 })
            };
            return Action::Syscall(Syscall::Clone { program, cpu: CpuId(self.spawned as u16) });
        }
        if self.round == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 3;
        let first = self.half * pages;
        match self.step {
            1 => Action::Touch(Touch::new(
                vma,
                first,
                pages,
                AccessKind::Store,
                self.p.cycles_per_page,
            )),
            2 => Action::Syscall(Syscall::MadviseDontneed { vma, first, pages }),
            _ => {
                self.round += 1;
                Action::Op
            }
        }
    }
}

/// A reader that reads the whole region again and again, yielding its CPU after each pass if
/// `yields`.
struct LoopReader {
    vma: VmaId,
    pages: u64,
    yields: bool,
    step: u8,
}

impl Program for LoopReader {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        self.step = (self.step + 1) % if self.yields { 3 } else { 2 };
        match self.step {
            1 => Action::Touch(Touch::new(self.vma, 0, self.pages, AccessKind::Load, 0)),
            2 => Action::Syscall(Syscall::Yield),
            _ => Action::Compute { cycles: 2_000 },
        }
    }
}

/// `switching-readers`' other process on each reader's CPU: compute a little, yield, so that
/// the reader's CPU switches between the two address spaces after every pass.
pub(super) struct Yielder {
    step: bool,
}

impl Yielder {
    pub(super) fn new() -> Yielder {
        Yielder { step: false }
    }
}

impl Program for Yielder {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        self.step = !self.step;
        if self.step {
            Action::Compute { cycles: 2_000 }
        } else {
            Action::Syscall(Syscall::Yield)
        }
    }
}

/// Warm-up rounds of `collapse-readers` before its first collapse: one flush each, 1 ms apart,
/// so that under an INVLPGB policy `consider_global_asid()` (which samples when the jiffy
/// matches the writer's pid, 1 in 32) meets the mm busy on four CPUs: 200 ms is 32 jiffies
/// or more, each with a flush, at `HZ` 250 or more.
const COLLAPSE_WARMUP_ROUNDS: u64 = 200;

/// Length of one warm-up round, ms: at most one jiffy at `HZ` up to 1000.
const COLLAPSE_WARMUP_MS: u64 = 1;

/// `collapse-readers`: a writer thread (CPU 0), `--tasks` reader threads (CPUs 1 …) that block
/// between rounds, and `--busy` threads spinning on the CPUs after them, share a region of
/// `--pages` pages (at least 1,024, so that it holds a whole 2 MiB block). First
/// `COLLAPSE_WARMUP_ROUNDS` rounds of { write a page; `MADV_DONTNEED` it; compute 1 ms }, which
/// give the mm a global ASID under INVLPGB (the writer and spinners make four busy CPUs). Then
/// `--iterations` rounds: the writer writes the region's first page, wakes the readers, which
/// read every page (4 KiB entries, and PDE-cache entries for each block, on their CPUs; their
/// read faults give every block a PTE page) and block, waits for their answers, and `MADV_COLLAPSE`s the
/// region while the readers' CPUs idle lazily: khugepaged's collapse of a normal PMD. The
/// readers' next pass must not hit an entry from before the collapse, and no lazy CPU may keep
/// the collapsed block's page table cached (CVE-2025-22045).
pub(super) struct Collapser {
    p: Params,
    readers: Vec<(EventFd, EventFd)>,
    spin_cpus: std::ops::Range<usize>,
    warmup_cycles: u64,
    vma: Option<VmaId>,
    step: usize,
    round: u64,
}

impl Collapser {
    pub(super) fn new(p: &Params, readers: Vec<(EventFd, EventFd)>, clock_mhz: u64) -> Collapser {
        let first_spinner = readers.len() + 1;
        Collapser {
            p: p.clone(),
            spin_cpus: first_spinner..first_spinner + p.busy,
            readers,
            warmup_cycles: COLLAPSE_WARMUP_MS * 1000 * clock_mhz,
            vma: None,
            step: 0,
            round: 0,
        }
    }
}

impl Program for Collapser {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let n = self.readers.len();
        let Some(vma) = self.vma else {
            if self.step == 0 {
                self.step = 1;
                return Action::Syscall(Syscall::Mmap { pages: self.p.pages });
            }
            self.vma = Some(mapped(env));
            self.step = 0;
            return self.next(env);
        };
        // Start-up: the readers, then the spinners.
        if self.round == 0 && self.step < n + self.spin_cpus.len() {
            let i = self.step;
            self.step += 1;
            let program: Box<dyn Program> = if i < n {
                let (wake, answer) = self.readers[i];
                Box::new(Reader { vma, pages: self.p.pages, wake, answer, step: 0 })
            } else {
                Box::new(super::Spin)
            };
            let cpu = if i < n { i + 1 } else { self.spin_cpus.start + i - n };
            return Action::Syscall(Syscall::Clone { program, cpu: CpuId(cpu as u16) });
        }
        let started = n + self.spin_cpus.len();
        if self.round < COLLAPSE_WARMUP_ROUNDS {
            let phase = self.step - started;
            self.step += 1;
            return match phase {
                0 => Action::Touch(Touch::new(vma, 0, 1, AccessKind::Store, 0)),
                1 => Action::Syscall(Syscall::MadviseDontneed { vma, first: 0, pages: 1 }),
                _ => {
                    self.step = started;
                    self.round += 1;
                    Action::Compute { cycles: self.warmup_cycles }
                }
            };
        }
        if self.round == COLLAPSE_WARMUP_ROUNDS + self.p.iterations {
            return Action::Exit;
        }
        // A round: write the region's first page, wake and wait for each reader, collapse.
        let phase = self.step - started;
        self.step += 1;
        let collapse = Syscall::MadviseCollapse { vma, first: 0, pages: self.p.pages };
        round_step(phase, &self.readers, (vma, 1, self.p.cycles_per_page), collapse).unwrap_or_else(
            || {
                self.step = started;
                self.round += 1;
                Action::Op
            },
        )
    }
}

/// Step `phase` of a checker writer's round: write `touch` (the VMA, its first pages, the cycles
/// per page), wake each reader, wait for each answer, then `change`, the operation the round is
/// about; `None` once the round is over.
fn round_step(
    phase: usize,
    readers: &[(EventFd, EventFd)],
    (vma, pages, cycles_per_page): (VmaId, u64, u64),
    change: Syscall,
) -> Option<Action> {
    let n = readers.len();
    Some(match phase {
        0 => Action::Touch(Touch::new(vma, 0, pages, AccessKind::Store, cycles_per_page)),
        i if i <= n => Action::Syscall(Syscall::EventfdWrite { fd: readers[i - 1].0 }),
        i if i <= 2 * n => Action::Syscall(Syscall::EventfdRead { fd: readers[i - n - 1].1 }),
        i if i == 2 * n + 1 => Action::Syscall(change),
        _ => return None,
    })
}
