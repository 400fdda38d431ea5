//! The host preset built from canned facts (tests/fixtures, see its README): which geometry is
//! chosen, from where, and that the result simulates.

use tlblab_env::Source;
use tlblab_host::cpuid::{CpuidDump, Regs};
use tlblab_host::{build, HostFacts, HostPreset, Origin, Provenance, StealSample};
use tlblab_sim::machine::raw::{PscScope, RawTlb};
use tlblab_sim::workload::Workload;
use tlblab_sim::System;
use tlblab_types::{AccessKind, PageSize};

const FOUR_LEVEL_VMALLOC_KIB: u64 = 34_359_738_367; // 32 TiB: as read on this project's VM

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn dump(name: &str) -> CpuidDump {
    CpuidDump::parse_cpuid_r(&fixture(name)).unwrap()
}

fn missing<T>(why: &str) -> Source<T> {
    Source::unavailable(why)
}

fn facts(cpuid: CpuidDump, cpuinfo: Option<&str>, online: &str) -> HostFacts {
    HostFacts {
        cpuid: Source::Available(cpuid),
        cpuinfo: cpuinfo
            .map_or_else(|| missing("no /proc here"), |n| Source::Available(fixture(n))),
        online_cpus: Source::Available(online.to_owned()),
        possible_cpus: Source::Available(online.to_owned()),
        caches: missing("not in this fixture"),
        cpufreq_base_khz: missing("not in this fixture"),
        vmalloc_total_kib: Source::Available(FOUR_LEVEL_VMALLOC_KIB),
        kernel_config: missing("not in this fixture"),
        path_costs: missing("not in this fixture"),
        cpuidle_driver: missing("not in this fixture"),
        cpuidle_governor: missing("not in this fixture"),
        haltpoll_parameters: missing("not in this fixture"),
        cmdline: missing("not in this fixture"),
        steal: missing("not in this fixture"),
        vulnerabilities: missing("not in this fixture"),
    }
}

/// The Emerald Rapids KVM guest's facts with these kernel-path measurements (no cache file).
fn emerald_rapids_vm_measuring<const N: usize>(
    results: [(&str, tlblab_pathcost::Outcome); N],
) -> HostFacts {
    use tlblab_pathcost::{CacheKey, Cached, PathCosts};
    let cached = Cached {
        costs: PathCosts {
            key: CacheKey::from_parts("", "6.18.44-fc-v657"),
            cpus: vec![0, 1],
            seconds: 4.0,
            results: results.into_iter().map(|(n, o)| (n.to_owned(), o)).collect(),
            steal: Err("not sampled".into()),
        },
        file: None,
        from_cache: false,
        notes: vec![],
    };
    let mut f =
        facts(dump("cpuid-kvm-emerald-rapids.txt"), Some("cpuinfo-kvm-emerald-rapids.txt"), "0-1");
    f.path_costs = Source::Available(cached);
    f
}

fn tlb<'a>(host: &'a HostPreset, name: &str) -> &'a RawTlb {
    let tlbs = &host.spec.raw().tlb;
    tlbs.iter().find(|t| t.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = tlbs.iter().map(|t| t.name.as_str()).collect();
        panic!("no TLB {name:?} in {names:?}")
    })
}

fn geometry(t: &RawTlb) -> (u8, u32, u32) {
    (t.level, t.entries, t.ways)
}

fn provenance<'a>(host: &'a HostPreset, figure: &str) -> &'a Provenance {
    host.provenance
        .iter()
        .find(|p| p.figure == figure)
        .unwrap_or_else(|| panic!("no provenance for {figure}:\n{}", host.provenance_text()))
}

/// A few thousand accesses of every built-in workload, through the same entry point as
/// `tlblab sim demo` (but the PCID workload on a machine without PCID, where it faults as on
/// hardware).
fn simulates(host: &HostPreset) {
    let pcid = host.spec.raw().features.pcid;
    for w in Workload::ALL.into_iter().filter(|&w| pcid || w != Workload::CtxSwitchPcid) {
        let mut system = System::new(&host.spec);
        let mut generator = w.generator(4_000, 7);
        let mut batch = Vec::new();
        while generator.fill(&mut batch, 512) {
            system.apply_all(&batch).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
        }
        assert_eq!(system.total().total_accesses(), 4_000, "{}", w.name());
    }
}

#[test]
fn skylake_server_from_leaf_2_descriptors() {
    let host = build(&facts(dump("cpuid-skylake-sp.txt"), Some("cpuinfo-skylake-sp.txt"), "0-95"))
        .unwrap();
    assert_eq!(host.nearest, "skylake-server");
    // Leaf 2 descriptors 0x63, 0x03, 0x76, 0xB5, 0xC3 (SDM table 3-12), all read, none copied.
    assert_eq!(host.spec.raw().tlb.len(), 7);
    assert_eq!(geometry(tlb(&host, "L1 dTLB 4K")), (1, 64, 4));
    assert_eq!(geometry(tlb(&host, "L1 dTLB 2M")), (1, 32, 4));
    assert_eq!(geometry(tlb(&host, "L1 dTLB 1G")), (1, 4, 4));
    assert_eq!(geometry(tlb(&host, "L1 iTLB 4K")), (1, 64, 8));
    assert_eq!(geometry(tlb(&host, "L1 iTLB 2M")), (1, 8, 8));
    // CPUID says 6-way where the optimization manual (and so the preset) says 12-way: CPUID wins,
    // and the provenance names the disagreement.
    let stlb = tlb(&host, "STLB 4K+2M");
    assert_eq!(geometry(stlb), (2, 1536, 6));
    assert_eq!(stlb.accesses, [AccessKind::Load, AccessKind::Store, AccessKind::Fetch]);
    assert!(!stlb.unverified, "bare metal: CPUID is the hardware's own word");
    assert_eq!(geometry(tlb(&host, "STLB 1G")), (2, 16, 4));
    let p = provenance(&host, "tlb \"STLB 4K+2M\"");
    assert_eq!(p.origin, Origin::Read);
    assert!(p.source.starts_with("CPUID leaf 2 descriptor 0xC3"), "{}", p.source);
    assert!(p.source.contains("differs from preset skylake-server") && p.source.contains("12-way"));
    assert!(
        host.provenance.iter().all(|p| p.origin != Origin::Fallback),
        "{}",
        host.provenance_text()
    );
    // Features from the cpuinfo flags (which agree with CPUID here); 4-level paging.
    let f = &host.spec.raw().features;
    assert!(f.pcid && f.invpcid && !f.invlpgb && !f.la57);
    assert_eq!(f.invlpg_psc_scope, PscScope::Pcid);
    assert_eq!(host.paging_levels, 4);
    assert!(host.spec.raw().psc.iter().all(|p| p.level != tlblab_sim::machine::PscLevel::Pml5e));
    // Clock from CPUID leaf 0x16 (2100 MHz), not the momentary cpu MHz of /proc/cpuinfo (3199.9).
    let kernel = host.spec.raw().kernel.as_ref().unwrap();
    assert_eq!(kernel.clock.mhz, 2100);
    assert!(provenance(&host, "kernel.clock").source.contains("0x16"));
    // Costs copied from the preset, and say so.
    let invlpg = &host.spec.raw().cost.invlpg;
    assert_eq!(invlpg.cycles, 200);
    assert!(invlpg.source.starts_with("copied from preset skylake-server") && invlpg.unverified);
    assert_eq!(provenance(&host, "cost.invlpg").origin, Origin::Copied);
    assert_eq!(provenance(&host, "page-table isolation").value, "on");
    assert_eq!(host.cpus, Some(96));
    simulates(&host);
}

#[test]
fn zen3_from_the_amd_leaves() {
    let host = build(&facts(dump("cpuid-zen3-epyc.txt"), Some("cpuinfo-amd-epyc-7763.txt"), "0-3"))
        .unwrap();
    assert_eq!(host.nearest, "zen3");
    assert_eq!(host.spec.raw().vendor, "amd");
    // 0x80000005 and 0x80000019 give 64 fully-associative entries for 4K, 2M and 1G: one L1 dTLB.
    let l1d = tlb(&host, "L1 dTLB 4K+2M+1G");
    assert_eq!(geometry(l1d), (1, 64, 64));
    assert!(l1d.source.contains("EBX[31:16]: 64 entries, fully associative (code 0xff)"));
    assert!(!l1d.source.contains("skewed"), "every size says fully associative: {}", l1d.source);
    assert_eq!(geometry(tlb(&host, "L1 iTLB 4K+2M+1G")), (1, 64, 64));
    // 0x80000006: 2048 entries for 4K (code 6: 8-way) and 2M (code 4: 4-way), a skewed TLB: one
    // structure, ways from the preset (16).
    let l2d = tlb(&host, "L2 dTLB 4K+2M");
    assert_eq!(geometry(l2d), (2, 2048, 16));
    assert!(l2d.source.contains("skewed") && l2d.source.contains("preset zen3"), "{}", l2d.source);
    // 0x80000019 EBX reports a separate 64-entry L2 1G dTLB, so 1G pages are not splintered there.
    assert!(!l2d.splinter_1g);
    assert_eq!(geometry(tlb(&host, "L2 dTLB 1G")), (2, 64, 64));
    // No L2 1G iTLB: the preset's splintering stands, and is attributed.
    let l2i = tlb(&host, "L2 iTLB 4K+2M");
    assert_eq!(geometry(l2i), (2, 512, 8));
    assert!(l2i.splinter_1g && l2i.source.contains("1G pages held as 2M entries, as preset zen3"));
    assert!(
        host.provenance.iter().all(|p| p.origin != Origin::Fallback),
        "{}",
        host.provenance_text()
    );
    let f = &host.spec.raw().features;
    assert!(f.invlpgb && f.pcid && f.invpcid);
    assert_eq!(f.invlpgb_count_max, Some(8), "CPUID 0x80000008 EDX[15:0] = 7, plus one");
    assert_eq!(f.invlpg_psc_scope, PscScope::Address, "tce flag present");
    assert!(host.spec.raw().cost.invlpgb.is_some() && host.spec.raw().cost.tlbsync.is_some());
    assert_eq!(provenance(&host, "SVM ASIDs").value, "32768");
    assert_eq!(provenance(&host, "hypervisor").value, "none");
    simulates(&host);
}

#[test]
fn kvm_guest_with_leaf_0x18_hidden_takes_every_tlb_from_the_nearest_preset() {
    // This project's VM: leaf 0x18 is below the maximum (0x1c) but all zeros, and leaf 2 defers
    // to it with descriptor 0xFE.
    let host = build(&facts(
        dump("cpuid-kvm-emerald-rapids.txt"),
        Some("cpuinfo-kvm-emerald-rapids.txt"),
        "0-1",
    ))
    .unwrap();
    assert_eq!(host.nearest, "sapphire-rapids");
    let preset = tlblab_sim::machine::builtin("sapphire-rapids").unwrap();
    let got: Vec<(&str, u32, u32)> =
        host.spec.raw().tlb.iter().map(|t| (t.name.as_str(), t.entries, t.ways)).collect();
    let want: Vec<(&str, u32, u32)> =
        preset.raw().tlb.iter().map(|t| (t.name.as_str(), t.entries, t.ways)).collect();
    assert_eq!(got, want);
    for t in &host.spec.raw().tlb {
        let p = provenance(&host, &format!("tlb {:?}", t.name));
        assert_eq!(p.origin, Origin::Fallback);
        assert!(p.source.contains("leaf 0x18 subleaf 0 is all zeros"), "{}", p.source);
        assert!(p.source.contains("descriptor 0xFE"), "{}", p.source);
        assert!(t.unverified);
    }
    assert_eq!(provenance(&host, "hypervisor").value, "KVM");
    assert_eq!(provenance(&host, "hypervisor.pv_tlb_flush").value, "offered and in use");
    // The CPU can do LA57 (CPUID 7.0:ECX[16]) but the kernel runs 4-level paging (no la57 flag,
    // 32 TiB vmalloc area).
    assert!(host.spec.raw().features.la57);
    assert_eq!(host.paging_levels, 4);
    assert_eq!(host.spec.paging_levels(), 4);
    // The clock: cpuinfo's cpu MHz (2299.998), there being no cpufreq and no leaf 0x16 figure.
    assert_eq!(host.spec.raw().kernel.as_ref().unwrap().clock.mhz, 2300);
    simulates(&host);
}

#[test]
fn masked_amd_guest_without_proc_uses_cpuid_alone() {
    // Firecracker's T2A template: leaf 1 says Intel Haswell's 6/0x3F, 0x80000005 is zeroed, no
    // TCE, no INVLPGB, no 1G pages; and no /proc/cpuinfo to cross-check.
    let host = build(&facts(dump("cpuid-kvm-zen3-t2a.txt"), None, "0-1")).unwrap();
    let sig = provenance(&host, "family/model/stepping");
    assert_eq!(sig.value, "0x19 / 0x1 / 1");
    assert!(sig.source.contains("0x80000001") && sig.source.contains("mask"), "{}", sig.source);
    assert_eq!(host.nearest, "zen3");
    // L1 4K/2M: 0x80000005 hidden, so the preset's L1 TLBs stand in for 4K and 2M; the 1G part
    // comes from 0x80000019 (64 entries, fully associative).
    let l1d = tlb(&host, "L1 dTLB 4K+2M");
    assert_eq!(geometry(l1d), (1, 64, 64));
    let p = provenance(&host, "tlb \"L1 dTLB 4K+2M\"");
    assert_eq!(p.origin, Origin::Fallback);
    assert!(p.source.starts_with("CPUID 0x80000005 is all zeros"), "{}", p.source);
    assert_eq!(provenance(&host, "tlb \"L1 dTLB 1G\"").origin, Origin::Read);
    assert_eq!(geometry(tlb(&host, "L2 dTLB 4K+2M")), (2, 2048, 16));
    let f = &host.spec.raw().features;
    assert!(!f.invlpgb && f.invlpgb_count_max.is_none());
    assert!(host.spec.raw().cost.invlpgb.is_none(), "no INVLPGB, no cost for it");
    assert_eq!(f.invlpg_psc_scope, PscScope::Pcid, "no TCE: INVLPG drops every upper-level entry");
    assert_eq!(provenance(&host, "page sizes").value, "4K, 2M");
    assert_eq!(provenance(&host, "hypervisor.pv_tlb_flush").value, "offered and in use");
    simulates(&host);
}

/// An Ice-Lake-like leaf 0x18, constructed from the SDM's encoding (values illustrative).
fn leaf_0x18_dump(subleaves: &[Regs]) -> CpuidDump {
    let mut d = dump("cpuid-kvm-emerald-rapids.txt");
    for (i, r) in subleaves.iter().enumerate() {
        d.insert(0x18, i as u32, *r);
    }
    d
}

/// EBX (ways, page-size bits), ECX sets, EDX (type, level, fully associative), one sharer.
fn subleaf(eax: u32, ways: u32, sizes: u32, sets: u32, kind: u32, level: u32, fully: bool) -> Regs {
    Regs {
        eax,
        ebx: (ways << 16) | sizes,
        ecx: sets,
        edx: kind | (level << 5) | (u32::from(fully) << 8),
    }
}

#[test]
fn leaf_0x18_is_read_and_what_it_omits_is_absent() {
    let d = leaf_0x18_dump(&[
        subleaf(4, 8, 0b0001, 16, 2, 1, false), // instruction TLB, 4K, 8 × 16 = 128
        subleaf(0, 4, 0b0001, 16, 4, 1, false), // load-only, 4K, 64
        subleaf(0, 16, 0b1111, 1, 5, 1, true),  // store-only, all sizes, 16 fully associative
        Regs::default(),                        // invalid subleaf between valid ones
        subleaf(0, 16, 0b0011, 128, 3, 2, false), // unified L2, 4K+2M, 2048
    ]);
    let host = build(&facts(d, Some("cpuinfo-kvm-emerald-rapids.txt"), "0-1")).unwrap();
    let names: Vec<&str> = host.spec.raw().tlb.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["L1 iTLB 4K", "L1 dTLB load 4K", "L1 dTLB store 4K+2M+1G", "STLB 4K+2M"]);
    assert_eq!(geometry(tlb(&host, "STLB 4K+2M")), (2, 2048, 16));
    let p = provenance(&host, "tlb \"STLB 4K+2M\"");
    assert!(p.source.starts_with("CPUID leaf 0x18 subleaf 4"), "{}", p.source);
    assert!(tlb(&host, "STLB 4K+2M").unverified, "under KVM");
    // The leaf lists every structure: no 1G STLB, no 2M load TLB, nothing copied.
    assert!(
        host.provenance.iter().all(|p| p.origin != Origin::Fallback),
        "{}",
        host.provenance_text()
    );
    simulates(&host);
}

#[test]
fn an_implausible_subleaf_is_replaced_by_the_presets_structure() {
    let d = leaf_0x18_dump(&[
        subleaf(1, 8, 0b0001, 16, 2, 1, false),  // instruction TLB, 4K
        subleaf(0, 0, 0b0011, 128, 3, 2, false), // unified L2 with 0 ways: implausible
    ]);
    let host = build(&facts(d, Some("cpuinfo-kvm-emerald-rapids.txt"), "0-1")).unwrap();
    let rejected = host.provenance.iter().find(|p| p.value == "(rejected)").unwrap();
    assert!(rejected.source.contains("subleaf 1") && rejected.source.contains("0 ways"));
    // Its triples (L2, all accesses, 4K and 2M) come from sapphire-rapids' STLB.
    let stlb = tlb(&host, "STLB 4K+2M");
    assert_eq!(geometry(stlb), (2, 2048, 16));
    assert_eq!(provenance(&host, "tlb \"STLB 4K+2M\"").origin, Origin::Fallback);
    assert!(provenance(&host, "tlb \"STLB 4K+2M\"").source.contains("subleaf 1 is implausible"));
    // The level-1 data TLBs the model needs were declared absent by the leaf: the preset's load
    // and store TLBs are copied for 4K pages only (the leaf says there are no others).
    let load = tlb(&host, "L1 dTLB load 4K");
    assert_eq!((load.accesses.as_slice(), load.entries), ([AccessKind::Load].as_slice(), 96));
    assert!(provenance(&host, "tlb \"L1 dTLB load 4K\"").source.contains("requires"));
    let store = tlb(&host, "L1 dTLB store 4K");
    assert_eq!(store.page_sizes, [PageSize::Size4K]);
    assert_eq!(host.spec.raw().tlb.len(), 4, "iTLB 4K read, STLB, load and store copied");
    simulates(&host);
}

#[test]
fn without_cpuid_or_cpuinfo_there_is_no_preset() {
    let f = HostFacts {
        cpuid: missing("CPUID exists only on x86"),
        cpuinfo: missing("/proc/cpuinfo does not exist"),
        ..facts(CpuidDump::default(), None, "0")
    };
    let err = build(&f).unwrap_err().to_string();
    assert!(err.contains("CPUID exists only on x86") && err.contains("/proc/cpuinfo"), "{err}");
}

#[test]
fn the_toml_names_its_provenance_and_reloads() {
    let host = build(&facts(dump("cpuid-skylake-sp.txt"), Some("cpuinfo-skylake-sp.txt"), "0-95"))
        .unwrap();
    assert!(host.toml.starts_with("# Host preset built by tlblab-host"));
    assert!(host.toml.contains("# [read] tlb \"STLB 4K+2M\" = 1536 entries, 6-way"));
    let again = tlblab_sim::machine::MachineSpec::from_toml(&host.toml, "again").unwrap();
    assert_eq!(again.raw(), host.spec.raw());
}

/// This VM's facts with the cpuinfo flags edited: `add` appended, `remove` dropped.
fn edited_vm(add: &[&str], remove: &[&str], vmalloc_kib: u64) -> HostFacts {
    let text = fixture("cpuinfo-kvm-emerald-rapids.txt");
    let edited: String = text
        .lines()
        .map(|l| {
            if !l.starts_with("flags") {
                return format!("{l}\n");
            }
            let mut words: Vec<&str> = l.split(' ').filter(|w| !remove.contains(w)).collect();
            words.extend_from_slice(add);
            format!("{}\n", words.join(" "))
        })
        .collect();
    HostFacts {
        cpuinfo: Source::Available(edited),
        vmalloc_total_kib: Source::Available(vmalloc_kib),
        ..facts(dump("cpuid-kvm-emerald-rapids.txt"), None, "0-1")
    }
}

#[test]
fn a_kernel_running_5_level_paging_gets_a_5_level_spec() {
    // The vmalloc area is 12800 TiB under 5-level paging (Documentation/arch/x86/x86_64/mm.rst).
    let host = build(&edited_vm(&["la57"], &[], 13_743_895_347_199)).unwrap();
    assert_eq!(host.paging_levels, 5);
    assert_eq!(host.spec.paging_levels(), 5);
    assert!(host.spec.raw().psc.iter().any(|p| p.level == tlblab_sim::machine::PscLevel::Pml5e));
    simulates(&host);
    // The flag decides when the two disagree, and the provenance says so.
    let host = build(&edited_vm(&[], &[], 13_743_895_347_199)).unwrap();
    assert_eq!(host.paging_levels, 4);
    assert!(provenance(&host, "paging_levels").source.contains("disagree"));
}

#[test]
fn a_feature_the_kernel_turned_off_is_off() {
    // CPUID has PCID and INVPCID; a kernel booted with `nopcid` shows neither flag.
    let host = build(&edited_vm(&[], &["pcid", "invpcid"], FOUR_LEVEL_VMALLOC_KIB)).unwrap();
    let f = &host.spec.raw().features;
    assert!(!f.pcid && !f.invpcid);
    assert!(host.spec.raw().cost.invpcid_indiv_addr.is_none());
    let p = provenance(&host, "features.pcid");
    assert!(p.source.contains("the kernel changed it"), "{}", p.source);
    simulates(&host);
}

/// Kernel-path costs as this project's Intel VM measured them (docs/calibration.md), one IPI
/// measurement failed: the figures come from them by the written rules, the IPI figures stay
/// the preset's with the reason, and `[guest]` is filled.
#[test]
fn measured_kernel_paths_and_the_guest_section() {
    use tlblab_pathcost::{names, CacheKey, Cached, Measurement, Outcome, PathCosts};
    let m =
        |ns: f64| Outcome::Measured(Measurement::of(&[ns * 0.98, ns, ns * 1.03], 3, 100).unwrap());
    let results = [
        (names::NULL_SYSCALL, m(102.5)),
        (names::FAULT_ZERO, m(634.0)),
        (names::FAULT_ANON, m(1497.0)),
        (names::MADVISE_EMPTY, m(402.5)),
        (names::DONTNEED_SMALL, m(20_000.0)),
        (names::DONTNEED_LARGE, m(50_000.0)),
        (names::MMAP_MUNMAP, m(3_205.0)),
        (names::THREAD_SWITCH, m(1_192.5)),
        (names::MEMBARRIER_IPI, Outcome::Failed("no run delivered ≥ 0.99 IPIs per call".into())),
        (names::MEMBARRIER_NO_IPI, m(190.0)),
        (names::VMEXIT_CPUID, m(8_377.0)),
        (names::MIGRATE, m(39_196.0)),
        (names::FORK_EXIT, m(116_337.0)),
    ];
    let cached = Cached {
        costs: PathCosts {
            key: CacheKey::from_parts("", "6.18.44-fc-v657"),
            cpus: vec![0, 1],
            seconds: 4.0,
            results: results.into_iter().map(|(n, o)| (n.to_owned(), o)).collect(),
            steal: Err("not sampled".into()),
        },
        file: Some("/tmp/host-costs-test.json".into()),
        from_cache: true,
        notes: vec![],
    };
    let mut f =
        facts(dump("cpuid-kvm-emerald-rapids.txt"), Some("cpuinfo-kvm-emerald-rapids.txt"), "0-1");
    f.path_costs = Source::Available(cached);
    f.cpuidle_driver = Source::Available("haltpoll".into());
    f.cpuidle_governor = Source::Available("haltpoll".into());
    // The project's VM: haltpoll.guest_halt_poll_ns=0 on its command line.
    f.haltpoll_parameters = Source::Available(
        [
            ("guest_halt_poll_ns", "0"),
            ("guest_halt_poll_grow", "2"),
            ("guest_halt_poll_grow_start", "50000"),
            ("guest_halt_poll_shrink", "2"),
            ("guest_halt_poll_allow_shrink", "Y"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    f.cmdline = Source::Available("console=ttyS0 reboot=k".into());
    // A quiet dedicated host: no steal.
    f.steal = Source::Available(StealSample { window_ms: 1000, steal_ticks: 0, total_ticks: 200 });
    let host = build(&f).unwrap();
    let k = host.spec.kernel_costs().unwrap();
    assert_eq!(k.clock.mhz, 2300);
    // ns at 2300 MHz: 102.5 ns → 236 cycles (235.75).
    assert_eq!((k.syscall.written.ns, k.syscall.written.at_mhz), (Some(102.5), Some(2300)));
    assert_eq!(k.syscall.cycles, 236);
    assert_eq!(k.madvise.written.ns, Some(300.0)); // 402.5 − 102.5
    assert_eq!(k.zap_pte.written.ns, Some(156.3)); // 30,000 / 192
    assert_eq!(k.mmap.written.ns, Some(1500.0)); // (3,205 − 205) / 2
    assert_eq!(k.migrate.cycles, 89_915); // (39,196 − 102.5) ns at 2.3 GHz, scales with time
    let p = provenance(&host, "kernel.syscall");
    assert_eq!(p.origin, Origin::Measured);
    assert!(
        p.source.contains("null_syscall 102.5 ns (p10–p90")
            && p.source.contains("/tmp/host-costs-test.json"),
        "{}",
        p.source
    );
    // The failed IPI round trip: the preset's rule-of-thumb figures, with the reason.
    let p = provenance(&host, "kernel.ipi_latency");
    assert_eq!(p.origin, Origin::Fallback);
    assert!(
        p.source.contains("copied from preset sapphire-rapids") && p.source.contains("0.99 IPIs"),
        "{}",
        p.source
    );
    // 500 ns at the host's 2300 MHz.
    assert_eq!(k.ipi_latency.cycles, 1150);
    // The full flush's pieces need the mprotect loops, not measured here: the copies stay, and
    // say why.
    let p = provenance(&host, "kernel.flush_tlb_func");
    assert_eq!(p.origin, Origin::Fallback);
    assert!(p.source.contains("not measured here: mprotect_64 not measured"), "{}", p.source);
    let g = host.spec.guest().unwrap();
    assert_eq!(g.hypervisor.as_ref().unwrap().value, "kvm");
    assert!(g.pv_tlb_flush.as_ref().unwrap().value && g.pv_send_ipi.as_ref().unwrap().value);
    assert!(g.steal_time.as_ref().unwrap().value);
    assert_eq!(g.idle.as_ref().unwrap().value, tlblab_sim::machine::raw::GuestIdle::Haltpoll);
    assert_eq!(g.vm_exit.as_ref().unwrap().cycles, 19_267); // 8,377 ns at 2.3 GHz
                                                            // The idle vCPU halts: without thread_wake_remote its wake-up is vm_exit, a lower bound;
                                                            // the haltpoll governor's parameters are read.
    let idle = host.spec.raw().idle.as_ref().unwrap();
    assert_eq!(idle.states.len(), 1);
    assert_eq!(idle.states[0].exit_latency_ns, 8_377);
    assert!(idle.source.contains("lower bound"), "{}", idle.source);
    let h = idle.haltpoll.as_ref().unwrap();
    assert_eq!((h.guest_halt_poll_ns, h.guest_halt_poll_grow_start), (0, 50_000));
    assert!(h.guest_halt_poll_allow_shrink);
    assert_eq!(provenance(&host, "idle.haltpoll").origin, Origin::Read);
    // Another governor: no [idle.haltpoll], and the provenance says why.
    let mut menu = f.clone();
    menu.cpuidle_governor = Source::Available("menu".into());
    let m = build(&menu).unwrap();
    assert!(m.spec.raw().idle.as_ref().unwrap().haltpoll.is_none());
    assert!(provenance(&m, "idle.haltpoll").source.contains("current_governor_ro = \"menu\""));
    assert!(g.ipi_round_trip.is_none());
    assert!(provenance(&host, "guest.ipi_round_trip").source.contains("0.99 IPIs"));
    assert!(host.toml.contains("[guest.vm_exit]") || host.toml.contains("[guest]"));
    assert_eq!(g.overcommit.as_ref().unwrap().value.0, 1.0);
    assert!(g.host_slice.is_none() && g.host_hz.is_none(), "no preemption to describe");
    let p = provenance(&host, "guest.overcommit");
    assert_eq!(p.origin, Origin::Measured);
    assert!(
        p.source.contains("steal 0 of 200 ticks (0.0%) over the 1000 ms of the kernel-path"),
        "{}",
        p.source
    );
    let again = tlblab_sim::machine::MachineSpec::from_toml(&host.toml, "again").unwrap();
    assert_eq!(again.raw(), host.spec.raw());
    simulates(&host);
    // A quarter of the time stolen: a fair host gives 3/4 of a pCPU with 4/3 threads on it,
    // and the host's slice and tick are assumed.
    f.steal = Source::Available(StealSample { window_ms: 1000, steal_ticks: 50, total_ticks: 200 });
    let host = build(&f).unwrap();
    let g = host.spec.guest().unwrap();
    assert_eq!(g.overcommit.as_ref().unwrap().value.0, 1.33);
    assert_eq!(g.host_slice.as_ref().unwrap().cycles, 6_900_000); // 3 ms at 2.3 GHz
    assert_eq!(g.host_hz.as_ref().unwrap().value, 1000);
    let again = tlblab_sim::machine::MachineSpec::from_toml(&host.toml, "again").unwrap();
    assert_eq!(again.raw(), host.spec.raw());
    simulates(&host);
}

/// `[mitigations]` from the vulnerabilities files and the measured sequences: each running
/// mitigation's cost is its sequence's extra over its baseline, every measured path gets its
/// estimated events unless they would exceed its figure, and the `[kernel]` figures are the
/// same as without the section.
#[test]
fn mitigations_from_the_vulnerabilities_files_and_the_sequences() {
    use tlblab_pathcost::{names, sequences, Measurement, Outcome};
    let m =
        |ns: f64| Outcome::Measured(Measurement::of(&[ns * 0.98, ns, ns * 1.03], 3, 100).unwrap());
    let results = [
        (names::NULL_SYSCALL, m(100.0)),
        (names::FAULT_ZERO, m(634.0)),
        (names::FAULT_ANON, m(1497.0)),
        (names::MADVISE_EMPTY, m(402.5)),
        (names::THREAD_SWITCH, m(1_192.5)),
        (sequences::PLAIN_CALL, m(1.0)),
        (sequences::INDIRECT_CALL, m(3.0)),
        (sequences::RETPOLINE, m(13.0)),
        // 4 returns of 25 ns and the untraining: more than the 100 ns syscall.
        (sequences::SAFE_RET, m(26.0)),
        (sequences::UNTRAIN_RET, m(21.0)),
        (sequences::RSB_FILL, Outcome::Failed("interrupted".into())),
    ];
    let mut f = emerald_rapids_vm_measuring(results);
    let without = build(&f).unwrap();
    assert!(without.spec.raw().mitigations.is_none());
    f.vulnerabilities = Source::Available(
        [
            ("spectre_v2", "Mitigation: Retpolines; STIBP: disabled; RSB filling"),
            ("spec_rstack_overflow", "Vulnerable: Safe RET, no microcode"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
    );
    let host = build(&f).unwrap();
    assert_eq!(host.spec.kernel_costs(), without.spec.kernel_costs());
    let mit = host.spec.raw().mitigations.as_ref().unwrap();
    assert_eq!(mit.retpoline.as_ref().unwrap().written.ns, Some(10.0)); // 13 − 3
    assert_eq!(mit.safe_ret.as_ref().unwrap().written.ns, Some(25.0)); // 26 − 1
    assert_eq!(mit.untrain_ret.as_ref().unwrap().written.ns, Some(20.0)); // 21 − 1
    assert!(mit.rsb_fill.is_none() && mit.verw.is_none() && mit.ibpb.is_none());
    assert!(provenance(&host, "mitigations.rsb_fill").source.contains("interrupted"));
    assert_eq!(provenance(&host, "mitigations.verw").value, "not run");
    // 4 × 25 + 20 ns > 100 ns: the syscall's estimate is left out, with the reason.
    assert!(!mit.paths.contains_key("syscall"));
    assert!(provenance(&host, "mitigations.paths.syscall").source.contains("exceed"));
    assert!(mit.paths.contains_key("page_fault_anon") && mit.paths.contains_key("context_switch"));
    // Only measured figures: flush_tlb_func is copied.
    assert!(!mit.paths.contains_key("flush_tlb_func") && !mit.paths.contains_key("ipi_handler"));
    let again = tlblab_sim::machine::MachineSpec::from_toml(&host.toml, "again").unwrap();
    assert_eq!(again.raw(), host.spec.raw());
}

/// `build_scaled`: one measurement scaled, every figure derived from it moves by the rules
/// (`madvise = madvise_empty − null_syscall`), the facts are untouched, and a path that was not
/// measured has nothing to scale.
#[test]
fn one_measurement_scaled_moves_the_figures_derived_from_it() {
    use tlblab_host::build_scaled;
    use tlblab_pathcost::{names, Measurement, Outcome};
    let m = |ns: f64| Outcome::Measured(Measurement::of(&[ns, ns, ns], 3, 100).unwrap());
    let results = [
        (names::NULL_SYSCALL, m(100.0)),
        (names::MADVISE_EMPTY, m(400.0)),
        (names::MEMBARRIER_IPI, Outcome::Failed("no run delivered ≥ 0.99 IPIs per call".into())),
    ];
    let f = emerald_rapids_vm_measuring(results);
    let before = f.clone();
    let base = build(&f).unwrap();
    let k = base.spec.kernel_costs().unwrap();
    assert_eq!((k.syscall.written.ns, k.madvise.written.ns), (Some(100.0), Some(300.0)));
    let scaled = build_scaled(&f, names::NULL_SYSCALL, 2.0).unwrap().unwrap();
    let k = scaled.spec.kernel_costs().unwrap();
    assert_eq!((k.syscall.written.ns, k.madvise.written.ns), (Some(200.0), Some(200.0)));
    let scaled = build_scaled(&f, names::MADVISE_EMPTY, 1.1).unwrap().unwrap();
    let k = scaled.spec.kernel_costs().unwrap();
    assert_eq!((k.syscall.written.ns, k.madvise.written.ns), (Some(100.0), Some(340.0)));
    assert_eq!(f, before);
    assert!(build_scaled(&f, names::MEMBARRIER_IPI, 1.1).is_none());
    assert!(build_scaled(&f, names::FORK_EXIT, 1.1).is_none());
}
