//! What a task does: a [`Program`] yields [`Action`]s, one at a time, as the task runs.

use crate::ids::TaskId;
use crate::mm::VmaId;
use rand_pcg::Pcg64Mcg;
use tlblab_types::{AccessKind, CpuId, Cycles};

/// An eventfd-like counter (by index): `read` blocks while it is 0, `write` adds and wakes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EventFd(pub u32);

/// Most pages a [`Touch::scattered`] touch lists.
pub const SCATTER_PAGES: usize = 16;

/// References to consecutive pages of a region, or to a short list of its pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touch {
    /// The region.
    pub vma: VmaId,
    /// First page, within the region.
    pub first: u64,
    /// Pages referenced, one after another.
    pub pages: u64,
    /// The pages, in the order referenced, when they are not `first..first + pages`: the first
    /// `pages` of the list ([`Touch::scattered`]).
    pub scatter: Option<[u32; SCATTER_PAGES]>,
    /// Loads, stores or instruction fetches.
    pub kind: AccessKind,
    /// Cycles of work per page besides translation (the instructions and cache misses of the
    /// program between two page references).
    pub cycles_per_page: u64,
    /// Each reference's address comes from the one before (pointer chasing: a compiler walking
    /// its IR): its translation is on the dependence chain, so the references cannot overlap
    /// their walks with each other or with the work that uses them (mechanism `pointer-chase`;
    /// `false`: independent references, which `mlp` may overlap).
    pub dependent: bool,
}

impl Touch {
    /// Independent references (not `dependent`) to `pages` pages from `first`.
    pub fn new(
        vma: VmaId,
        first: u64,
        pages: u64,
        kind: AccessKind,
        cycles_per_page: u64,
    ) -> Touch {
        Touch { vma, first, pages, kind, cycles_per_page, scatter: None, dependent: false }
    }

    /// Independent references to the pages of `list` (at most [`SCATTER_PAGES`] of them), in
    /// its order: one action for references that are not consecutive (a program that moves
    /// between its pages as a profile says).
    pub fn scattered(vma: VmaId, list: &[u32], kind: AccessKind, cycles_per_page: u64) -> Touch {
        let n = list.len().min(SCATTER_PAGES);
        let mut pages = [0; SCATTER_PAGES];
        pages[..n].copy_from_slice(&list[..n]);
        Touch { scatter: Some(pages), ..Touch::new(vma, 0, n as u64, kind, cycles_per_page) }
    }

    /// The page (within the region) of the touch's reference number `i`.
    pub fn page(&self, i: u64) -> u64 {
        match &self.scatter {
            Some(list) => u64::from(list[i as usize]),
            None => self.first + i,
        }
    }
}

/// A system call.
pub enum Syscall {
    /// A system call that does nothing (`getppid`).
    Null,
    /// `mmap` of anonymous private pages; the result is [`Outcome::Mapped`].
    Mmap {
        /// Size in pages.
        pages: u64,
    },
    /// `mmap(MAP_FIXED_NOREPLACE)` of anonymous private pages directly beside a region, which
    /// the kernel merges with it (so a later `munmap` of the new pages splits the VMA); the
    /// result is [`Outcome::Mapped`], or a plain placement when the pages beside are taken.
    MmapBeside {
        /// Size in pages.
        pages: u64,
        /// The region beside which it is mapped.
        of: VmaId,
    },
    /// `mmap(PROT_READ, MAP_SHARED)` of `pages` pages of a file already in the page cache; the
    /// result is [`Outcome::Mapped`]. A read fault maps the cached pages around it
    /// (`do_fault_around()`); `munmap` frees none of them.
    MmapFile {
        /// Size in pages.
        pages: u64,
    },
    /// `munmap` of a whole region.
    Munmap {
        /// The region.
        vma: VmaId,
    },
    /// `madvise(MADV_DONTNEED)` of pages of a region.
    MadviseDontneed {
        /// The region.
        vma: VmaId,
        /// First page within it.
        first: u64,
        /// Pages.
        pages: u64,
    },
    /// `madvise(MADV_COLLAPSE)` of pages of a region (6.1+): each 2 MiB block the range covers
    /// whole, with a PTE page, is collapsed as khugepaged collapses it (`collapse_huge_page()`:
    /// `pmdp_collapse_flush()` clears the normal PMD and flushes its 2 MiB with
    /// `flush_tlb_range()`; the PTE page leaves the page-table tree).
    MadviseCollapse {
        /// The region.
        vma: VmaId,
        /// First page within it.
        first: u64,
        /// Pages.
        pages: u64,
    },
    /// `mprotect()` of pages of a region, to read-only or back to read-write (the model keeps no
    /// protection bits): each present PTE changed, then one flush of them; on x86 a change of
    /// the write bit needs a flush either way (`pte_needs_flush()`).
    Mprotect {
        /// The region.
        vma: VmaId,
        /// First page within it.
        first: u64,
        /// Pages.
        pages: u64,
    },
    /// `move_pages()` of pages of a region to another NUMA node: each mapped page is copied to
    /// a new page and its PTE pointed at the copy (the model has one node's costs; only the
    /// unmap, the flush and the page allocator matter here).
    MovePages {
        /// The region.
        vma: VmaId,
        /// First page within it.
        first: u64,
        /// Pages.
        pages: u64,
    },
    /// `sched_setaffinity` to one CPU (the task migrates there if it is elsewhere).
    SetAffinity {
        /// The only CPU allowed.
        cpu: CpuId,
    },
    /// Adds 1 to an eventfd, waking a reader.
    EventfdWrite {
        /// The eventfd.
        fd: EventFd,
    },
    /// Takes the eventfd's count, blocking while it is 0.
    EventfdRead {
        /// The eventfd.
        fd: EventFd,
    },
    /// A new thread in the caller's mm (`clone(CLONE_VM)`), placed on `cpu`; the result is
    /// [`Outcome::Spawned`].
    Clone {
        /// What the thread runs.
        program: Box<dyn Program>,
        /// Its only allowed CPU.
        cpu: CpuId,
    },
    /// `fork()`: a new process with a copy of the caller's mm (private pages become
    /// copy-on-write in both), placed on the least-loaded CPU; the result is
    /// [`Outcome::Spawned`].
    Fork {
        /// What the child runs.
        program: Box<dyn Program>,
    },
    /// `vfork()` (or `posix_spawn()`): a child that shares the caller's mm until it execs or
    /// exits, placed on the least-loaded CPU; nothing is copied or flushed. The result is
    /// [`Outcome::Spawned`]. (The kernel also suspends the caller until the child execs; the
    /// model leaves that to the program, which usually waits for the child anyway.)
    Vfork {
        /// What the child runs (it should exec).
        program: Box<dyn Program>,
    },
    /// `execve()`: the task drops its mm for a fresh, empty one and runs `program` from its
    /// start.
    Exec {
        /// The new program.
        program: Box<dyn Program>,
    },
    /// `waitpid()` on a child: blocks until it has exited.
    Wait {
        /// The child.
        child: TaskId,
    },
    /// Direct reclaim (an allocation that found memory short): unmaps up to `pages` private
    /// pages of other processes, with batched flushes (`arch_tlbbatch_*`).
    Reclaim {
        /// Pages to reclaim.
        pages: u64,
    },
    /// Kernel code flushes kernel addresses, on every CPU: `Some(pages)` unmaps `pages` pages
    /// of vmalloc space and calls `flush_tlb_kernel_range()` on them (a purge of lazily freed
    /// vmalloc areas, `vunmap()`, or `set_memory_*()` through `cpa_flush()`); `None` calls
    /// `flush_tlb_all()` (after `cpa_collapse_large_pages()`, or memory hot-remove).
    KernelFlush {
        /// Pages of the range, or `None` for `flush_tlb_all()`.
        pages: Option<u64>,
    },
    /// Gives up the CPU to another runnable task (`sched_yield`).
    Yield,
    /// Runs with interrupts disabled for a while (a driver or a spinlock section).
    IrqsOff {
        /// How long.
        cycles: u64,
    },
    /// `write()` of one message to a pipe or socket, sleeping while it is full
    /// (`Kernel::channel`).
    ChannelWrite {
        /// The pipe or socket.
        ch: crate::ChannelId,
    },
    /// `read()` of one message from a pipe or socket, sleeping while it is empty.
    ChannelRead {
        /// The pipe or socket.
        ch: crate::ChannelId,
    },
    /// `poll(POLLIN)` on a pipe or socket: sleeps until it holds data, taking none.
    ChannelPoll {
        /// The pipe or socket.
        ch: crate::ChannelId,
    },
}

/// One step of a program.
pub enum Action {
    /// Reference pages (page faults happen as needed).
    Touch(Touch),
    /// Compute in user mode without new page references.
    Compute {
        /// Cycles.
        cycles: u64,
    },
    /// Enter the kernel.
    Syscall(Syscall),
    /// Mark the end of one unit of work (an iteration, an operation): counted, with its time.
    Op,
    /// Mark the start of the timed part of the next operation: the following [`Action::Op`]
    /// adds the time since to the task's `span_cycles` (a latency as the program sees it, such
    /// as one system call's).
    OpBegin,
    /// The task exits.
    Exit,
}

/// The result of the last action.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to report.
    None,
    /// `mmap` made this region.
    Mapped(VmaId),
    /// `clone` made this task.
    Spawned(TaskId),
}

/// What a program sees when asked for its next action.
pub struct Env<'a> {
    /// Current time.
    pub now: Cycles,
    /// The CPU it runs on.
    pub cpu: CpuId,
    /// The task.
    pub task: TaskId,
    /// The task's own random stream (seeded from the run's seed and the task id).
    pub rng: &'a mut Pcg64Mcg,
    /// The result of the previous action.
    pub last: Outcome,
}

/// A task's behaviour: a state machine asked for one action at a time.
pub trait Program {
    /// The next action.
    fn next(&mut self, env: &mut Env<'_>) -> Action;

    /// The user pages one iteration of the program's loop references besides the regions it
    /// maps itself: its code, stack and library data ([`WorkingSet`]); `None` for programs
    /// that do not stand for a measured loop.
    fn working_set(&self) -> Option<WorkingSet> {
        None
    }
}

/// The pages of a live loop's own program image that one iteration references (code fetched;
/// stack and library data written), measured with a Valgrind lackey trace of the live loop
/// (tools/calibrate/working_sets.py; docs/workloads.md, "Working sets"). After a CR3 write that
/// flushes, each costs a TLB refill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkingSet {
    /// Code pages fetched per iteration (the loop and the libc wrappers it calls).
    pub code_pages: u64,
    /// Data pages written or read per iteration (stack, libc and program data), apart from the
    /// regions the loop maps itself.
    pub data_pages: u64,
}
