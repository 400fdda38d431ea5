//! The workloads of S8 (deferred shootdowns, docs/workloads.md):
//!
//! - `munmap-latency`, LATR's munmap microbenchmark (Kumar et al., ASPLOS'18, §6): a process
//!   of `--tasks` threads, one per CPU; thread 0 loops { mmap `--pages` pages, write them,
//!   munmap them } while the others spin in user mode, keeping the mm loaded (and in
//!   `mm_cpumask`) on their CPUs. The metric is the munmap's latency as its caller sees it:
//!   from the system call's entry to its return ([`Action::OpBegin`] to [`Action::Op`]).
//! - `webserver`, LATR's web-server workload as a process of `--tasks` worker threads (one per
//!   CPU, as Apache's worker MPM runs its workers as threads of a few processes) that serve
//!   static files the way Apache httpd does with `EnableMMAP On` (its default): each request
//!   maps the file read-only and shared, reads it (copying it to the socket), and unmaps it.
//!   The files are in the page cache, so a read fault maps cached pages (16 at a time, fault-
//!   around) and the munmap frees nothing but needs a shootdown of every CPU running the mm.
//! - `migrate-readers` (migrc and LUF): `--tasks` reader threads (one per CPU from CPU 1) read
//!   a shared read-only file region (2 MiB, mapped and faulted in by thread 0 first) in a loop
//!   while thread 0 loops { `move_pages()` the next `--pages` pages of that region to the other
//!   node }, round the region: the pages go to the other node and back, as pages do between a
//!   fast and a slow tier under NUMA balancing. The sources are freed to their node's lists,
//!   and the migration that next brings pages back to that node reuses them.

use super::{mapped, store, Params, Spin};
use crate::kernel::Kernel;
use crate::mm::VmaId;
use crate::observer::Observer;
use crate::program::{Action, Env, EventFd, Program, Syscall, Touch};
use rand::RngExt;
use std::cell::Cell;
use std::rc::Rc;
use tlblab_types::{AccessKind, CpuId};

/// Installs `munmap-latency`: the looping thread on CPU 0, `--tasks − 1` spinning siblings on
/// CPUs 1…N.
pub(super) fn install_munmap_latency<O: Observer>(k: &mut Kernel<O>, p: &Params) {
    let main = k.spawn_process(Box::new(MunmapLatency::new(p)), CpuId(0), true);
    for i in 1..p.tasks {
        k.spawn_thread(main, Box::new(Spin), CpuId(i as u16), false);
    }
}

/// Installs `webserver`: `--tasks` worker threads of one process, worker `i` on CPU `i`.
pub(super) fn install_webserver<O: Observer>(k: &mut Kernel<O>, p: &Params) {
    super::spread(k, p.tasks, true, || Box::new(WebWorker::new(p)));
}

/// Installs `migrate-readers`: the migrating thread on CPU 0, `--tasks` reader threads on CPUs
/// 1…N, all of one process; the readers wait (on an eventfd each) until the region is mapped.
pub(super) fn install_migrate_readers<O: Observer>(k: &mut Kernel<O>, p: &Params) {
    let shared = Rc::new(Cell::new(None));
    let fds: Vec<EventFd> = (0..p.tasks).map(|_| k.eventfd()).collect();
    let migrator = Migrator::new(p, shared.clone(), fds.clone());
    let main = k.spawn_process(Box::new(migrator), CpuId(0), true);
    for (i, fd) in fds.into_iter().enumerate() {
        let reader = Reader { shared: shared.clone(), fd, cycles_per_page: p.cycles_per_page };
        k.spawn_thread(main, Box::new(reader), CpuId(i as u16 + 1), false);
    }
}

/// LATR's munmap loop: thread 0 of `munmap-latency`.
struct MunmapLatency {
    p: Params,
    /// One page written once and kept, right above the loop's region (as [`super::peers`]'s
    /// `storm` keeps one): the kernel merges each new mapping with it, so each munmap unmaps
    /// part of a VMA and frees no page table, as in a process whose 2 MiB around the region
    /// holds other mappings.
    anchor: Option<VmaId>,
    vma: Option<VmaId>,
    step: u8,
    i: u64,
}

impl MunmapLatency {
    fn new(p: &Params) -> MunmapLatency {
        MunmapLatency { p: p.clone(), anchor: None, vma: None, step: 0, i: 0 }
    }
}

impl Program for MunmapLatency {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let Some(anchor) = self.anchor else {
            if self.step == 0 {
                self.step = 1;
                return Action::Syscall(Syscall::Mmap { pages: 1 });
            }
            let anchor = mapped(env);
            self.anchor = Some(anchor);
            self.step = 0;
            return store(anchor, 0, 1, &self.p);
        };
        if self.step == 0 && self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 5;
        match self.step {
            1 => Action::Syscall(Syscall::MmapBeside { pages: self.p.pages, of: anchor }),
            2 => {
                let vma = mapped(env);
                self.vma = Some(vma);
                store(vma, 0, self.p.pages, &self.p)
            }
            3 => Action::OpBegin,
            4 => Action::Syscall(Syscall::Munmap { vma: self.vma.expect("mapped") }),
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }
}

/// The static files a `webserver` worker serves, as SPECweb99's file set mixes them (its four
/// size classes and their shares of requests: 35% under 1 KiB, 50% 1–10 KiB, 14% 10–100 KiB,
/// 1% 100 KiB–1 MiB), in 4 KiB pages: the first page count of each class to the last, drawn
/// uniformly. Every file fits APR's mapping limit (4 MiB), so Apache maps each one.
const FILE_CLASSES: [(f64, u64, u64); 4] =
    [(0.35, 1, 1), (0.50, 1, 3), (0.14, 3, 25), (0.01, 25, 256)];

/// The work of a request besides its file (accepting the connection, reading and parsing the
/// request, logging, the socket writes' system calls), cycles. NOTE: an assumption (about 10 µs
/// at 2 GHz, unverified); it is the same under every policy, so it scales the requests per
/// second of all of them alike.
pub const REQUEST_CYCLES: u64 = 20_000;

/// One Apache-like worker thread.
struct WebWorker {
    p: Params,
    vma: Option<VmaId>,
    pages: u64,
    step: u8,
    i: u64,
}

impl WebWorker {
    fn new(p: &Params) -> WebWorker {
        WebWorker { p: p.clone(), vma: None, pages: 0, step: 0, i: 0 }
    }

    /// A file's size in pages, drawn from [`FILE_CLASSES`].
    fn draw(env: &mut Env<'_>) -> u64 {
        let mut u: f64 = env.rng.random();
        for (share, lo, hi) in FILE_CLASSES {
            if u < share {
                return env.rng.random_range(lo..=hi);
            }
            u -= share;
        }
        FILE_CLASSES[3].2
    }
}

impl Program for WebWorker {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        if self.step == 0 && self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 5;
        match self.step {
            1 => Action::Compute { cycles: REQUEST_CYCLES },
            2 => {
                self.pages = Self::draw(env);
                Action::Syscall(Syscall::MmapFile { pages: self.pages })
            }
            // Read the whole file, copying each page to the socket (`--cycles-per-page`).
            3 => {
                let vma = mapped(env);
                self.vma = Some(vma);
                Action::Touch(Touch::new(
                    vma,
                    0,
                    self.pages,
                    AccessKind::Load,
                    self.p.cycles_per_page,
                ))
            }
            4 => Action::Syscall(Syscall::Munmap { vma: self.vma.expect("mapped") }),
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }
}

/// The pages of the region `migrate-readers` shares: a 2 MiB file mapping (one page table),
/// read by every reader.
pub const SHARED_PAGES: u64 = 512;

/// Thread 0 of `migrate-readers`: maps the shared file region, faults it in, wakes the
/// readers, then loops { migrate the next `--pages` of its pages (round the region) }.
struct Migrator {
    p: Params,
    shared: Rc<Cell<Option<VmaId>>>,
    fds: Vec<EventFd>,
    woken: usize,
    next: u64,
    step: u8,
    i: u64,
}

impl Migrator {
    fn new(p: &Params, shared: Rc<Cell<Option<VmaId>>>, fds: Vec<EventFd>) -> Migrator {
        Migrator { p: p.clone(), shared, fds, woken: 0, next: 0, step: 0, i: 0 }
    }
}

impl Program for Migrator {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let Some(shared) = self.shared.get() else {
            if self.step == 0 {
                self.step = 1;
                return Action::Syscall(Syscall::MmapFile { pages: SHARED_PAGES });
            }
            let vma = mapped(env);
            self.shared.set(Some(vma));
            self.step = 0;
            // Fault the whole region in before the readers start reading.
            return Action::Touch(Touch::new(vma, 0, SHARED_PAGES, AccessKind::Load, 0));
        };
        if self.woken < self.fds.len() {
            self.woken += 1;
            return Action::Syscall(Syscall::EventfdWrite { fd: self.fds[self.woken - 1] });
        }
        if self.step == 0 && self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 2;
        let pages = self.p.pages.min(SHARED_PAGES);
        match self.step {
            1 => {
                let first = self.next;
                self.next = (self.next + pages) % (SHARED_PAGES - pages + 1);
                Action::Syscall(Syscall::MovePages { vma: shared, first, pages })
            }
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }
}

/// A `migrate-readers` reader: waits for the shared region, then reads it whole in a loop.
struct Reader {
    shared: Rc<Cell<Option<VmaId>>>,
    fd: EventFd,
    cycles_per_page: u64,
}

impl Program for Reader {
    fn next(&mut self, _env: &mut Env<'_>) -> Action {
        let Some(vma) = self.shared.get() else {
            return Action::Syscall(Syscall::EventfdRead { fd: self.fd });
        };
        Action::Touch(Touch::new(vma, 0, SHARED_PAGES, AccessKind::Load, self.cycles_per_page))
    }
}
