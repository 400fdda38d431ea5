//! khugepaged's collapse of a normal PMD (`MADV_COLLAPSE`, `collapse-readers`) and the two
//! known-bad variants of its flush: CVE-2025-22045's `flush_tlb_range()` without
//! `freed_tables`, and a 2 MiB-stride INVLPGB over 4 KiB entries.

use super::*;
use crate::kernel::ViolationKind;
use crate::workloads::{scenario, Params};

/// `collapse-readers` on six CPUs: the writer on CPU 0, readers on CPUs 1 and 2, three
/// spinners on CPUs 3–5; one 2 MiB block wholly inside the 1,024 pages.
fn params() -> Params {
    Params { tasks: 2, busy: 3, pages: 1024, iterations: 6, ..Params::default() }
}

const READERS: [CpuId; 2] = [CpuId(1), CpuId(2)];

/// The checked run of `policy` on `machine`, with perturbed IPIs and no disturbances (so no
/// task migrates: the CPUs above are where the tasks run).
fn checked_on(machine: &str, policy: &str, seed: u64) -> Kernel<TraceLog> {
    let spec = tlblab_sim::machine::builtin(machine).unwrap();
    let config = KernelConfig::new(6, seed);
    let mut k =
        Kernel::new(&spec, &Policy::named(policy).unwrap(), config, TraceLog::default()).unwrap();
    k.enable_checker();
    k.perturb(Cycles(20_000));
    let (s, p) = (scenario("collapse-readers").unwrap(), params());
    s.install(&mut k, &p).unwrap();
    assert!(s.run(&mut k, &p), "{policy}: the writer finishes its rounds");
    k
}

/// The writer: the first user task (the idle tasks come first).
fn writer(k: &Kernel<TraceLog>) -> TaskId {
    TaskId(k.tasks.iter().position(|t| t.mm.is_some()).unwrap() as u32)
}

/// The region's mm (the writer's).
fn region_mm(k: &Kernel<TraceLog>) -> MmId {
    k.task_mm(writer(k)).unwrap()
}

/// CVE-2025-22045: before 3ef938c35035 `flush_tlb_range()` passed `freed_tables = false`, so
/// the collapse's flush skipped the readers' lazy CPUs, which still cached the PMD's page table
/// (the PDE of the block) when the collapse returned. The fixed kernel reaches them.
#[test]
fn a_collapse_without_freed_tables_leaves_lazy_cpus_caching_the_page_table() {
    for seed in 1..=3 {
        let good = checked_on("skylake", "linux-6.18", seed);
        assert_eq!(good.violations(), &[], "seed {seed}");
        let bad = checked_on("skylake", "bad-collapse-no-freed-tables", seed);
        let v = bad.violations();
        assert!(!v.is_empty(), "seed {seed}: the defect must be caught");
        for v in v {
            assert_eq!(v.kind, ViolationKind::FreedTableCached, "{v:?}");
            assert!(READERS.contains(&v.cpu), "a lazy reader's CPU, not {:?}", v.cpu);
            assert_eq!(v.vpn % 512, 0, "the collapsed block's first page");
            let (freed_at, freed_on, freed_by) = v.changed.unwrap();
            assert_eq!((freed_on, freed_by), (C0, writer(&bad)), "the writer's collapse");
            assert!(v.filled_at < freed_at && freed_at < v.used_at);
        }
    }
}

/// The collapse's flush at the 2 MiB stride: with the mm on a global ASID it is one INVLPGB of
/// one 2 MiB stride, which (tlblab-sim, per address as the APM describes INVLPGB) removes only
/// the translations of the block's first page. The readers' next pass hits their entries for
/// the other pages, filled before the collapse. The faithful kernel's 512-page flush is over
/// the ceiling: a whole-PCID INVLPGB.
#[test]
fn a_2mib_stride_invlpgb_leaves_the_4k_entries_of_a_collapsed_block_stale() {
    for seed in 1..=3 {
        let good = checked_on("zen4", "linux-6.18+invlpgb", seed);
        assert_eq!(good.violations(), &[], "seed {seed}");
        assert!(good.mm(region_mm(&good)).global_asid.is_some(), "seed {seed}: global ASID");
        let bad = checked_on("zen4", "bad-invlpgb-2m-stride", seed);
        let mm = region_mm(&bad);
        assert!(bad.mm(mm).global_asid.is_some(), "seed {seed}: the flushes were broadcast");
        let v = bad.violations();
        assert!(!v.is_empty(), "seed {seed}: the defect must be caught");
        for v in v {
            assert_eq!(v.kind, ViolationKind::StaleAfterCompletion, "{v:?}");
            assert!(READERS.contains(&v.cpu), "a reader's CPU, not {:?}", v.cpu);
            assert_ne!(v.vpn % 512, 0, "the stride's own address was invalidated");
            let (changed_at, changed_on, _) = v.changed.unwrap();
            assert_eq!(changed_on, C0, "the writer's collapse changed the PTE");
            assert!(v.filled_at < changed_at && v.settled_at.unwrap() < v.used_at);
            assert!(v.filled_version < v.settled);
        }
    }
}

/// The hardware side on its own: after a 2 MiB-stride INVLPGB at a block's first page, a CPU
/// still holds the 4 KiB entries of the block's other pages, and not the first page's.
#[test]
fn the_hardware_invalidates_by_the_strides_addresses_only() {
    let k = checked_on("zen4", "bad-invlpgb-2m-stride", 1);
    let mm = region_mm(&k);
    let block = k.mm(mm).vma(VmaId(0)).unwrap().start.0.div_ceil(512) * 512;
    let pcid = k.mm(mm).global_asid.unwrap().kern_pcid();
    let access = |vpn: u64| {
        let page = tlblab_types::Page::containing(
            tlblab_types::Vpn(vpn).addr(),
            tlblab_types::PageSize::Size4K,
        );
        tlblab_types::Access::new(CpuId(1), pcid, page, AccessKind::Load)
    };
    // The run ends after the last collapse, whose flush left reader 1 holding the block's
    // other pages (it read all of them in the last round, then blocked).
    assert!(!k.hw[1].holds(&access(block)), "the stride's address is gone");
    assert!(k.hw[1].holds(&access(block + 1)), "the next 4 KiB page is still cached");
}
