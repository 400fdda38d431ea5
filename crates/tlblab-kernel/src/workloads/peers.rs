//! Scenarios that reproduce a peer benchmark's loop, or a live program of `tlblab bench`, step
//! for step.
//!
//! `tlb-flush2`: will-it-scale's `tests/tlb_flush2.c` (antonblanchard/will-it-scale). Each task
//! maps 1 MiB of private anonymous memory (`MEMORYSIZE`, 256 pages of 4 KiB) and loops over its
//! pages; per page it stores one byte, `madvise(MADV_DONTNEED)`s that page, and loads it back
//! (the source's `assert(*(addr + i) == 0)`, compiled in at `-O2 -g`: a read fault that maps the
//! zero page); each page is one iteration. After the 256th page it unmaps the region and maps a
//! new one. Tasks are threads of one process (one mm: every DONTNEED must reach the CPUs of the
//! other threads) or processes (`--mode`), task `i` on CPU `i mod N` (will-it-scale binds task
//! `i` to core `i mod cores`). The metric is iterations per second summed over the tasks, as
//! will-it-scale's per-second `total`.
//!
//! `storm`: the live `storm` program (tlblab-live): one thread loops { mmap `--pages` pages,
//! write them, munmap them } (`--op munmap`) or { mprotect them read-only, mprotect them
//! read-write, write them } (`--op mprotect`), while `--busy` sibling threads spin in user space
//! on CPUs 1…N; µs per iteration.
//!
//! Both map one more page first, written once, as the live programs do (the live `tlb-flush2`
//! puts it one page above the region, in the region's 2 MiB, where will-it-scale's region has
//! other mappings, and not adjacent, so that the two never merge into one VMA, as
//! will-it-scale's region never does; `storm` right below, merged), so that a munmap need not
//! free the page table. The model's `mmap` places every new region below the last one and never
//! reuses a hole, so after the first pass the regions leave the anchor's 2 MiB and their munmaps
//! free a page table each time (the flush is then also sent to lazy CPUs); docs/workloads.md
//! says so.

use super::{mapped, store, Params, Region, Spin};
use crate::kernel::Kernel;
use crate::mm::VmaId;
use crate::observer::Observer;
use crate::program::{Action, Env, Program, Syscall, Touch, WorkingSet};
use serde::Serialize;
use tlblab_types::{AccessKind, CpuId};

/// will-it-scale's `MEMORYSIZE` (1 MiB) in 4 KiB pages.
pub const TLB_FLUSH2_PAGES: u64 = 256;

/// `storm --op`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StormOp {
    /// { `mmap` `--pages` pages; write them; `munmap` them }.
    #[default]
    Munmap,
    /// { `mprotect(PROT_READ)`; `mprotect(PROT_READ|PROT_WRITE)`; write the pages }.
    Mprotect,
}

/// Installs `tlb-flush2`: `--tasks` tasks, threads of one process or processes.
pub(super) fn install_tlb_flush2<O: Observer>(k: &mut Kernel<O>, p: &Params) {
    super::spread(k, p.tasks, p.threads, || Box::new(TlbFlush2::new(p)));
}

/// Installs `storm`: the looping thread on CPU 0, `--busy` spinning siblings on CPUs 1…N.
pub(super) fn install_storm<O: Observer>(k: &mut Kernel<O>, p: &Params) {
    let main = k.spawn_process(Box::new(Storm::new(p)), CpuId(0), true);
    for i in 0..p.busy {
        k.spawn_thread(main, Box::new(Spin), CpuId(i as u16 + 1), false);
    }
}

fn load(vma: VmaId, first: u64, pages: u64, p: &Params) -> Action {
    Action::Touch(Touch::new(vma, first, pages, AccessKind::Load, p.cycles_per_page))
}

/// Where a [`TlbFlush2`] task is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flush2Step {
    /// The anchor page is mapped; write it next.
    WriteAnchor,
    /// `mmap` of the 1 MiB region asked; collect it next.
    Mapping,
    /// At page `page` of the region: store, DONTNEED, load back, count.
    Store,
    Dontneed,
    Load,
    Count,
    /// After the region's last page: `munmap` it next.
    Unmap,
    /// No region: map one next.
    Unmapped,
}

/// One will-it-scale `tlb_flush2` task.
struct TlbFlush2 {
    p: Params,
    anchor: Region,
    vma: Option<VmaId>,
    page: u64,
    step: Flush2Step,
    i: u64,
}

impl TlbFlush2 {
    fn new(p: &Params) -> TlbFlush2 {
        TlbFlush2 {
            p: p.clone(),
            anchor: Region::default(),
            vma: None,
            page: 0,
            step: Flush2Step::WriteAnchor,
            i: 0,
        }
    }
}

impl Program for TlbFlush2 {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let anchor = match self.anchor.get(1, env) {
            Ok(vma) => vma,
            Err(mmap) => return mmap,
        };
        use Flush2Step::*;
        match self.step {
            WriteAnchor => {
                self.step = Unmapped;
                store(anchor, 0, 1, &self.p)
            }
            Unmap => {
                if self.i == self.p.iterations {
                    return Action::Exit;
                }
                self.step = Unmapped;
                let vma = self.vma.take().expect("mapped");
                Action::Syscall(Syscall::Munmap { vma })
            }
            Unmapped => {
                self.step = Mapping;
                Action::Syscall(Syscall::Mmap { pages: TLB_FLUSH2_PAGES })
            }
            Mapping => {
                self.vma = Some(mapped(env));
                self.page = 0;
                self.step = Store;
                self.next(env)
            }
            Store => {
                if self.i == self.p.iterations {
                    return Action::Exit;
                }
                self.step = Dontneed;
                store(self.vma.expect("mapped"), self.page, 1, &self.p)
            }
            Dontneed => {
                self.step = Load;
                let vma = self.vma.expect("mapped");
                Action::Syscall(Syscall::MadviseDontneed { vma, first: self.page, pages: 1 })
            }
            Load => {
                self.step = Count;
                load(self.vma.expect("mapped"), self.page, 1, &self.p)
            }
            Count => {
                self.i += 1;
                self.page += 1;
                if self.page < TLB_FLUSH2_PAGES {
                    self.step = Store;
                    return Action::Op;
                }
                // The source counts the last page, then unmaps.
                self.step = Unmap;
                Action::Op
            }
        }
    }

    fn working_set(&self) -> Option<WorkingSet> {
        // lackey, tlb-flush2's loop: 2 code, 4 data pages less the page it writes and reads.
        Some(WorkingSet { code_pages: 2, data_pages: 3 })
    }
}

/// The live `storm` loop (one thread; the siblings are [`Spin`]).
struct Storm {
    p: Params,
    /// munmap: the anchor page; mprotect: the region.
    first: Region,
    written: bool,
    vma: Option<VmaId>,
    step: u8,
    i: u64,
}

impl Storm {
    fn new(p: &Params) -> Storm {
        Storm { p: p.clone(), first: Region::default(), written: false, vma: None, step: 0, i: 0 }
    }
}

impl Program for Storm {
    fn next(&mut self, env: &mut Env<'_>) -> Action {
        let mprotect = self.p.op == StormOp::Mprotect;
        let first_pages = if mprotect { self.p.pages } else { 1 };
        let first = match self.first.get(first_pages, env) {
            Ok(vma) => vma,
            Err(mmap) => return mmap,
        };
        if !self.written {
            // munmap: the anchor page; mprotect: the whole region, as the live setup does.
            self.written = true;
            return store(first, 0, first_pages, &self.p);
        }
        if self.step == 0 && self.i == self.p.iterations {
            return Action::Exit;
        }
        self.step = (self.step + 1) % 4;
        let pages = self.p.pages;
        match (mprotect, self.step) {
            // MAP_FIXED_NOREPLACE beside the anchor, as the live loop maps it: the kernel
            // merges the two VMAs, so each munmap splits the merged one.
            (false, 1) => Action::Syscall(Syscall::MmapBeside { pages, of: first }),
            (false, 2) => {
                let vma = mapped(env);
                self.vma = Some(vma);
                store(vma, 0, pages, &self.p)
            }
            (false, 3) => Action::Syscall(Syscall::Munmap { vma: self.vma.expect("mapped") }),
            // mprotect(PROT_READ), then mprotect(PROT_READ|PROT_WRITE): each changes every
            // present PTE, and on x86 each flushes (pte_needs_flush(): a change of _PAGE_RW
            // either way needs one; a private anonymous page the process alone maps is made
            // writable at once, can_change_pte_writable(), so the writes that follow do not
            // fault).
            (true, 1 | 2) => Action::Syscall(Syscall::Mprotect { vma: first, first: 0, pages }),
            (true, 3) => store(first, 0, pages, &self.p),
            _ => {
                self.i += 1;
                Action::Op
            }
        }
    }

    fn working_set(&self) -> Option<WorkingSet> {
        // lackey, storm's munmap loop at 1 page: 3 code, 5 data pages less its page. The
        // mprotect loop was not measured.
        (self.p.op == StormOp::Munmap).then_some(WorkingSet { code_pages: 3, data_pages: 4 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Kernel, KernelConfig};
    use crate::observer::NoObserver;
    use crate::policy::Policy;
    use crate::stats::KernelReport;
    use crate::workloads::{scenario, Params};

    fn run(name: &str, cpus: usize, seed: u64, p: &Params) -> KernelReport {
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let config = KernelConfig::new(cpus, seed);
        crate::kernel::tests::run_scenario(&spec, "linux-6.18", config, name, p)
    }

    /// One task, 3 passes over the 1 MiB: per iteration a write fault (a page of its own), a
    /// one-page DONTNEED flush and a read fault (the zero page); per pass but the last a munmap
    /// of 256 pages, above the 33-page ceiling: a full flush. Plus the anchor's write fault.
    #[test]
    fn tlb_flush2_counts_follow_from_its_loop() {
        let p = Params { tasks: 1, iterations: 3 * TLB_FLUSH2_PAGES, ..Params::default() };
        for threads in [true, false] {
            let r = run("tlb-flush2", 1, 1, &Params { threads, ..p.clone() });
            assert_eq!(r.tasks[0].ops, 768);
            assert_eq!(r.page_faults, 2 * 768 + 1);
            assert_eq!(r.vmstat.nr_tlb_local_flush_one, 768, "one per DONTNEED");
            assert_eq!(r.vmstat.nr_tlb_local_flush_all, 2, "one per munmap");
            assert_eq!(r.vmstat.nr_tlb_remote_flush, 0);
            assert_eq!(r.tlb_flush["local MM shootdown"], 768 + 2);
        }
    }

    /// Two tasks on two CPUs: threads share the mm, so each DONTNEED (and munmap) of one
    /// interrupts the other's CPU; processes never do.
    #[test]
    fn tlb_flush2_threads_shoot_down_their_sibling_processes_do_not() {
        let p = Params { tasks: 2, iterations: 2 * TLB_FLUSH2_PAGES, ..Params::default() };
        let threads = run("tlb-flush2", 2, 1, &Params { threads: true, ..p.clone() });
        let processes = run("tlb-flush2", 2, 1, &Params { threads: false, ..p.clone() });
        for r in [&threads, &processes] {
            assert_eq!(r.tasks.iter().map(|t| t.ops).sum::<u64>(), 2 * 512);
            assert_eq!(r.page_faults, 2 * (2 * 512 + 1));
        }
        // Every DONTNEED but those while the sibling is off its CPU (at start and end), each
        // task's munmap, and at most one flush of the exit.
        let remote = threads.vmstat.nr_tlb_remote_flush;
        assert!(remote > 900 && remote <= 2 * 512 + 2 + 1, "{remote}");
        assert_eq!(processes.vmstat.nr_tlb_remote_flush, 0);
        assert_eq!(processes.vmstat.nr_tlb_remote_flush_received, 0);
    }

    /// storm's munmap unmaps the part of a VMA that its mmap merged into the anchor's: each
    /// iteration pays `split_vma` once, and `zap_batch` once for its one mmu_gather, on top of
    /// the per-page `zap_pte` (which stays as it was).
    #[test]
    fn storm_munmap_splits_the_merged_vma_and_pays_one_zap_batch() {
        let text = include_str!("../../../../presets/skylake.toml");
        let with = |batch: u64, split: u64| {
            let extra = format!("zap_batch = {{ cycles = {batch}, source = \"test\" }}\nsplit_vma = {{ cycles = {split}, source = \"test\" }}\nmprotect = ");
            let text = text.replacen("mprotect = ", &extra, 1);
            tlblab_sim::machine::MachineSpec::from_toml(&text, "test").unwrap()
        };
        let sys = |spec: &tlblab_sim::machine::MachineSpec| {
            let p = Params {
                busy: 0,
                op: StormOp::Munmap,
                pages: 2,
                iterations: 200,
                ..Params::default()
            };
            let policy = Policy::named("linux-6.18").unwrap();
            let config = KernelConfig::new(1, 1);
            let mut k = Kernel::new(spec, &policy, config, NoObserver).unwrap();
            let s = scenario("storm").unwrap();
            s.install(&mut k, &p).unwrap();
            assert!(s.run(&mut k, &p));
            let r = k.report();
            assert_eq!(r.tasks[0].ops, 200);
            r.tasks[0].sys_cycles
        };
        let base = sys(&with(0, 0));
        assert_eq!(sys(&with(0, 3000)) - base, 200 * 3000, "one split per munmap");
        // One batch per munmap (its two pages) and one for exit_mmap()'s (the anchor page).
        assert_eq!(sys(&with(500, 0)) - base, 201 * 500, "one zap batch per mmu_gather");
    }

    /// storm's mprotect pays `change_pte` once per present PTE of each call (change_pte_range()
    /// visits every one), on top of the call's own `mprotect`: two calls per iteration.
    #[test]
    fn storm_mprotect_pays_change_pte_per_present_pte() {
        let text = include_str!("../../../../presets/skylake.toml");
        let with = |per_pte: u64| {
            let line = text.lines().find(|l| l.starts_with("change_pte = ")).expect("a change_pte");
            let text = text.replacen(
                line,
                &format!("change_pte = {{ cycles = {per_pte}, source = \"test\" }}"),
                1,
            );
            tlblab_sim::machine::MachineSpec::from_toml(&text, "test").unwrap()
        };
        let sys = |spec: &tlblab_sim::machine::MachineSpec| {
            let p = Params {
                busy: 0,
                op: StormOp::Mprotect,
                pages: 8,
                iterations: 50,
                ..Params::default()
            };
            let policy = Policy::named("linux-6.18").unwrap();
            let mut k = Kernel::new(spec, &policy, KernelConfig::new(1, 1), NoObserver).unwrap();
            let s = scenario("storm").unwrap();
            s.install(&mut k, &p).unwrap();
            assert!(s.run(&mut k, &p));
            k.report().tasks[0].sys_cycles
        };
        assert_eq!(sys(&with(1000)) - sys(&with(0)), 50 * 2 * 8 * 1000);
    }

    /// storm: per iteration, munmap: the pages' write faults and one ranged flush of them;
    /// mprotect: no fault after the setup's, two ranged flushes (read-only, then read-write:
    /// on x86 both change `_PAGE_RW`, which `pte_needs_flush()` flushes either way). Each
    /// flush reaches the spinning sibling when there is one.
    #[test]
    fn storm_counts_follow_from_its_loop() {
        for op in [StormOp::Munmap, StormOp::Mprotect] {
            for busy in [0, 1] {
                let p = Params { busy, op, pages: 4, iterations: 100, ..Params::default() };
                let r = run("storm", 2, 1, &p);
                assert_eq!(r.tasks[0].ops, 100);
                let faults = match op {
                    StormOp::Munmap => 1 + 4 * 100,
                    StormOp::Mprotect => 4,
                };
                let flushes = match op {
                    StormOp::Munmap => 100,
                    StormOp::Mprotect => 2 * 100,
                };
                assert_eq!(r.page_faults, faults, "{op:?}");
                assert_eq!(r.vmstat.nr_tlb_local_flush_one, 4 * flushes, "{op:?}");
                assert_eq!(r.vmstat.nr_tlb_remote_flush, flushes * busy as u64, "{op:?} {busy}");
            }
        }
    }

    #[test]
    fn same_seed_same_report() {
        let flush2 = Params { tasks: 2, iterations: 600, ..Params::default() };
        let storm = Params { busy: 1, pages: 8, iterations: 200, ..Params::default() };
        for (name, p) in [("tlb-flush2", flush2), ("storm", storm)] {
            let json = |seed| serde_json::to_string(&run(name, 2, seed, &p)).unwrap();
            assert_eq!(json(3), json(3), "{name}");
        }
    }
}
