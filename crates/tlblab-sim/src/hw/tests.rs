//! One test per invalidating instruction for each of: an entry of the current PCID, an entry of
//! another PCID, a global entry, and a paging-structure-cache entry. Expected outcomes are the
//! SDM vol. 3 §4.10.4.1 rules (and the AMD APM for INVLPGB); an instruction may architecturally
//! drop more, and the model drops exactly what the rules require.

use super::{new_stats, Cpu};
use crate::machine::{builtin, MachineSpec};
use crate::stats::HwStats;
use tlblab_types::{
    Access, AccessKind, CpuId, InvlpgbRange, InvlpgbScope, InvpcidType, Page, PageSize, Pcid,
    TlbOp, Vpn,
};

const CUR: u16 = 1;
const OTHER: u16 = 2;
/// A user page, cached for both PCIDs.
const X: u64 = 0x12345;
/// A fresh page in X's 2 MiB region: its walk can use the PDE-cache entry that X's walk made.
const X_NEIGHBOUR: u64 = 0x12346;
/// A global (kernel-like) page, in another 1 GiB region.
const G: u64 = 0x40000;
/// A page of the current PCID in an unrelated region (2 GiB).
const FAR: u64 = 0x80000;
const FAR_NEIGHBOUR: u64 = 0x80001;

fn pcid(p: u16) -> Pcid {
    Pcid::new(p).unwrap()
}

fn access(p: u16, vpn: u64, global: bool) -> Access {
    let page = Page::new(Vpn(vpn), PageSize::Size4K).unwrap();
    Access { global, ..Access::new(CpuId(0), pcid(p), page, AccessKind::Load) }
}

struct Fixture {
    cpu: Cpu,
    stats: HwStats,
}

impl Fixture {
    /// A CPU of `machine` with X cached for both PCIDs, G cached as global, FAR cached for CUR.
    fn new(machine: &str) -> Fixture {
        let spec: MachineSpec = builtin(machine).unwrap();
        let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
        for a in [
            access(CUR, X, false),
            access(OTHER, X, false),
            access(CUR, G, true),
            access(CUR, FAR, false),
        ] {
            f.cpu.access(&a, 1, &mut f.stats);
        }
        assert_eq!(f.stats.total_walks(), 4, "fixture: four cold walks");
        f
    }

    fn run(mut self, op: TlbOp) -> Fixture {
        self.cpu.execute(&op, &mut self.stats).unwrap();
        self.cpu.debug_assert_invariants();
        self
    }

    /// Whether an access is served without a walk (by any TLB level).
    fn cached(&mut self, p: u16, vpn: u64) -> bool {
        let walks = self.stats.total_walks();
        self.cpu.access(&access(p, vpn, false), 1, &mut self.stats);
        self.stats.total_walks() == walks
    }

    /// Whether a walk of a fresh page is served by the PDE cache (one memory reference).
    fn pde_cached(&mut self, p: u16, fresh_vpn: u64) -> bool {
        let (pde_hits, refs) = (self.stats.psc[3].hits, self.stats.walk_refs.iter().sum::<u64>());
        self.cpu.access(&access(p, fresh_vpn, false), 1, &mut self.stats);
        assert_eq!(self.stats.total_walks(), 5, "the probe page must walk");
        let pde_hit = self.stats.psc[3].hits > pde_hits;
        assert_eq!(self.stats.walk_refs.iter().sum::<u64>() - refs, if pde_hit { 1 } else { 4 });
        pde_hit
    }
}

fn invlpg(p: u16, vpn: u64) -> TlbOp {
    TlbOp::Invlpg { pcid: pcid(p), vpn: Vpn(vpn) }
}

fn invpcid(kind: InvpcidType, p: u16, vpn: u64) -> TlbOp {
    TlbOp::Invpcid { kind, pcid: pcid(p), vpn: Vpn(vpn) }
}

fn invlpgb(range: Option<u64>, p: Option<u16>, include_global: bool) -> TlbOp {
    TlbOp::Invlpgb(InvlpgbScope {
        range: range.map(|start| InvlpgbRange {
            start: Vpn(start),
            pages: 1,
            stride: PageSize::Size4K,
        }),
        pcid: p.map(pcid),
        include_global,
        final_only: false,
    })
}

/// `(machine, op aimed at X, the same op aimed at G)` for each instruction under test.
fn op(name: &str) -> (&'static str, Vec<TlbOp>, Vec<TlbOp>) {
    use InvpcidType::*;
    let same = |op: TlbOp| (vec![op], vec![op]);
    let (machine, (at_x, at_g)) = match name {
        "invlpg" => ("skylake", (vec![invlpg(CUR, X)], vec![invlpg(CUR, G)])),
        "invlpg_tce" => ("zen3", (vec![invlpg(CUR, X)], vec![invlpg(CUR, G)])),
        "invpcid_indiv_addr" => {
            ("skylake", (vec![invpcid(IndivAddr, CUR, X)], vec![invpcid(IndivAddr, CUR, G)]))
        }
        "invpcid_single_ctxt" => ("skylake", same(invpcid(SingleCtxt, CUR, 0))),
        "invpcid_all_incl_global" => ("skylake", same(invpcid(AllInclGlobal, 0, 0))),
        "invpcid_all_non_global" => ("skylake", same(invpcid(AllNonGlobal, 0, 0))),
        "mov_cr3" => ("skylake", same(TlbOp::MovCr3 { pcid: pcid(CUR), noflush: false })),
        "mov_cr3_noflush" => ("skylake", same(TlbOp::MovCr3 { pcid: pcid(CUR), noflush: true })),
        "cr4_pge_toggle" => {
            let toggle = vec![
                TlbOp::MovCr4 { pge: false, pcide: true },
                TlbOp::MovCr4 { pge: true, pcide: true },
            ];
            ("skylake", (toggle.clone(), toggle))
        }
        "invlpgb_va" => (
            "zen3",
            (vec![invlpgb(Some(X), Some(CUR), false)], vec![invlpgb(Some(G), Some(CUR), false)]),
        ),
        "invlpgb_pcid" => ("zen3", same(invlpgb(None, Some(CUR), false))),
        "invlpgb_va_global" => {
            ("zen3", (vec![invlpgb(Some(X), None, true)], vec![invlpgb(Some(G), None, true)]))
        }
        "tlbsync" => ("zen3", same(TlbOp::Tlbsync)),
        _ => unreachable!("no such op {name}"),
    };
    (machine, at_x, at_g)
}

fn after(machine: &str, ops: &[TlbOp]) -> Fixture {
    ops.iter().fold(Fixture::new(machine), |f, op| f.run(*op))
}

/// Expected survival of: the current PCID's entry for X, another PCID's entry for X, the global
/// entry G, the current PCID's PDE-cache entry for X's region, and for an unrelated region.
macro_rules! invalidation_tests {
    ($($name:ident: current $cur:literal, other $other:literal, global $global:literal, psc $psc:literal, psc_elsewhere $far:literal;)*) => {
        mod current_pcid {
            use super::*;
            $(#[test] fn $name() {
                let (machine, at_x, _) = op(stringify!($name));
                assert_eq!(after(machine, &at_x).cached(CUR, X), $cur == "kept");
            })*
        }
        mod other_pcid {
            use super::*;
            $(#[test] fn $name() {
                let (machine, at_x, _) = op(stringify!($name));
                assert_eq!(after(machine, &at_x).cached(OTHER, X), $other == "kept");
            })*
        }
        mod global_entry {
            use super::*;
            $(#[test] fn $name() {
                // Probed from the other PCID: a global entry matches in every PCID.
                let (machine, _, at_g) = op(stringify!($name));
                assert_eq!(after(machine, &at_g).cached(OTHER, G), $global == "kept");
            })*
        }
        mod psc_entry {
            use super::*;
            $(#[test] fn $name() {
                let (machine, at_x, _) = op(stringify!($name));
                assert_eq!(after(machine, &at_x).pde_cached(CUR, X_NEIGHBOUR), $psc == "kept", "same region");
                assert_eq!(after(machine, &at_x).pde_cached(CUR, FAR_NEIGHBOUR), $far == "kept", "other region");
            })*
        }
    };
}

invalidation_tests! {
    // SDM: the current PCID's entry and any global entry for the address; *all* PSC entries of the
    // current PCID, whatever their address.
    invlpg: current "dropped", other "kept", global "dropped", psc "dropped", psc_elsewhere "dropped";
    // AMD with EFER.TCE: only the PSC entries that translate the address.
    invlpg_tce: current "dropped", other "kept", global "dropped", psc "dropped", psc_elsewhere "kept";
    // Type 0: the address in the given PCID, globals excluded; mappings used for that address.
    invpcid_indiv_addr: current "dropped", other "kept", global "kept", psc "dropped", psc_elsewhere "kept";
    invpcid_single_ctxt: current "dropped", other "kept", global "kept", psc "dropped", psc_elsewhere "dropped";
    invpcid_all_incl_global: current "dropped", other "dropped", global "dropped", psc "dropped", psc_elsewhere "dropped";
    invpcid_all_non_global: current "dropped", other "dropped", global "kept", psc "dropped", psc_elsewhere "dropped";
    // PCIDE=1, bit 63 clear: non-global entries and PSC entries of the loaded PCID only.
    mov_cr3: current "dropped", other "kept", global "kept", psc "dropped", psc_elsewhere "dropped";
    mov_cr3_noflush: current "kept", other "kept", global "kept", psc "kept", psc_elsewhere "kept";
    // Changing CR4.PGE invalidates everything, globals included.
    cr4_pge_toggle: current "dropped", other "dropped", global "dropped", psc "dropped", psc_elsewhere "dropped";
    invlpgb_va: current "dropped", other "kept", global "kept", psc "dropped", psc_elsewhere "kept";
    invlpgb_pcid: current "dropped", other "kept", global "kept", psc "dropped", psc_elsewhere "dropped";
    invlpgb_va_global: current "dropped", other "dropped", global "dropped", psc "dropped", psc_elsewhere "kept";
    tlbsync: current "kept", other "kept", global "kept", psc "kept", psc_elsewhere "kept";
}

#[test]
fn without_pcide_every_cr3_write_flushes_non_global_entries() {
    let spec = builtin("skylake").unwrap();
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    let f2 = {
        f.cpu.execute(&TlbOp::MovCr4 { pge: true, pcide: false }, &mut f.stats).unwrap();
        f.cpu.access(&access(CUR, X, false), 1, &mut f.stats);
        f.cpu.access(&access(CUR, G, true), 1, &mut f.stats);
        // The PCID in an access is ignored: everything is PCID 0, so X hits from "another" PCID.
        assert!(f.cached(OTHER, X));
        f.run(TlbOp::MovCr3 { pcid: pcid(0), noflush: false })
    };
    let mut f2 = f2;
    assert!(!f2.cached(CUR, X));
    assert!(f2.cached(CUR, G));
}

#[test]
fn faults_follow_the_sdm() {
    let spec = builtin("skylake").unwrap();
    let mut cpu = Cpu::new(&spec);
    let mut stats = new_stats(&spec);
    let ud = cpu.execute(&invlpgb(None, None, false), &mut stats).unwrap_err();
    assert!(ud.to_string().starts_with("#UD"), "{ud}");
    cpu.execute(&TlbOp::MovCr4 { pge: true, pcide: false }, &mut stats).unwrap();
    let gp = cpu.execute(&TlbOp::MovCr3 { pcid: pcid(0), noflush: true }, &mut stats).unwrap_err();
    assert!(gp.to_string().starts_with("#GP"), "{gp}");
    let gp = cpu.execute(&invpcid(InvpcidType::SingleCtxt, 5, 0), &mut stats).unwrap_err();
    assert!(gp.to_string().starts_with("#GP"), "{gp}");
    // Faulting instructions are not counted.
    assert_eq!(stats.ops.iter().map(|o| o.count).sum::<u64>(), 1);
}

#[test]
fn global_bit_is_ignored_while_pge_is_clear() {
    let spec = builtin("skylake").unwrap();
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    f.cpu.execute(&TlbOp::MovCr4 { pge: false, pcide: true }, &mut f.stats).unwrap();
    f.cpu.access(&access(CUR, G, true), 1, &mut f.stats);
    assert!(!f.cached(OTHER, G), "not global, so another PCID misses");
}

#[test]
fn invlpg_drops_every_splinter_of_a_1g_page() {
    // Zen's L2 dTLB holds 1G pages as 2M entries; an INVLPG anywhere in the 1G page drops all.
    let spec = builtin("zen3").unwrap();
    let mut cpu = Cpu::new(&spec);
    let mut stats = new_stats(&spec);
    let huge = |vpn: u64| {
        Access::new(
            CpuId(0),
            pcid(CUR),
            Page::new(Vpn(vpn), PageSize::Size1G).unwrap(),
            AccessKind::Load,
        )
    };
    let small = |vpn: u64| access(CUR, vpn, false);
    // Eight 2M regions of one 1G page; after each, 64 other pages push the 1G entry out of the
    // 64-entry L1, so the next region misses L1 and gets its own splinter in L2.
    for region in 0..8u64 {
        cpu.access(&huge(0x40000 + region * 512), 1, &mut stats);
        for p in 0..64 {
            cpu.access(&small(0x100 + p), 1, &mut stats);
        }
    }
    let (l1, l2) = (0, 2); // "L1 dTLB", "L2 dTLB 4K+2M"
    assert_eq!(cpu.occupancy()[l2], 64 + 8);
    cpu.access(&huge(0x40000), 1, &mut stats); // back into L1, from its L2 splinter
    assert_eq!(cpu.occupancy()[l1], 64);
    cpu.execute(&invlpg(CUR, 0x40000 + 7 * 512 + 3), &mut stats).unwrap();
    assert_eq!(cpu.occupancy()[l2], 64, "all eight splinters are gone");
    assert_eq!(cpu.occupancy()[l1], 63, "and the L1 entry of the 1G page");
    cpu.debug_assert_invariants();
}

#[test]
fn invalidation_cost_comes_from_the_preset() {
    let f = after("skylake", &[invlpg(CUR, X), invpcid(InvpcidType::IndivAddr, CUR, X)]);
    assert_eq!(f.stats.ops[0].cycles, 200); // Dave Hansen: INVLPG ≈ 200 cycles
    assert_eq!(f.stats.ops[1].cycles, 350); // INVPCID ≈ 350 more
    assert_eq!(f.stats.ops[0].tlb_entries_dropped, 2, "L1 dTLB and STLB entries of X");
}

#[test]
fn a_pcid_prefers_its_own_entry_to_a_global_one_for_the_same_page() {
    // Found by the reference-model property test. PCID 1 caches X non-global; PCID 2, whose
    // mapping of X is global, misses that entry and fills a global one: both now match X for
    // PCID 1. The SDM leaves the choice unspecified; the model uses PCID 1's own entry, so an
    // INVPCID of PCID 1 (globals kept) leaves only the global entry, which still serves X.
    let mut f = Fixture {
        cpu: Cpu::new(&builtin("skylake").unwrap()),
        stats: new_stats(&builtin("skylake").unwrap()),
    };
    f.cpu.access(&access(CUR, X, false), 1, &mut f.stats);
    f.cpu.access(&access(OTHER, X, true), 1, &mut f.stats);
    assert_eq!(f.stats.total_walks(), 2, "the global access missed the non-global entry");
    let mut f = f.run(invpcid(InvpcidType::SingleCtxt, CUR, 0));
    assert_eq!(
        f.stats.ops[InvpcidType::SingleCtxt.number() as usize + 1].tlb_entries_dropped,
        2,
        "L1 and STLB"
    );
    assert!(f.cached(CUR, X), "the global entry remains and serves PCID 1");
}

#[test]
fn invlpgb_longer_than_invlpgb_count_max_is_refused() {
    let spec = builtin("zen3").unwrap();
    let max = spec.raw().features.invlpgb_count_max.unwrap();
    let mut cpu = Cpu::new(&spec);
    let mut stats = new_stats(&spec);
    let range = |pages| {
        TlbOp::Invlpgb(InvlpgbScope {
            range: Some(InvlpgbRange { start: Vpn(0), pages, stride: PageSize::Size4K }),
            pcid: None,
            include_global: false,
            final_only: false,
        })
    };
    assert!(cpu.execute(&range(max), &mut stats).is_ok());
    let err = cpu.execute(&range(max + 1), &mut stats).unwrap_err();
    assert!(err.to_string().contains("invlpgb_count_max"), "{err}");
}

/// `holds` answers whether an access would hit a TLB entry, for its own PCID only, and changes
/// nothing: the walk and fill statistics of the accesses around it are as without it.
#[test]
fn holds_probes_without_changing_anything() {
    let spec = builtin("skylake").unwrap();
    let run = |probe: bool| {
        let mut cpu = Cpu::new(&spec);
        let mut stats = new_stats(&spec);
        assert!(!cpu.holds(&access(CUR, X, false)));
        cpu.access(&access(CUR, X, false), 1, &mut stats);
        assert!(cpu.holds(&access(CUR, X, false)));
        assert!(!cpu.holds(&access(OTHER, X, false)), "another PCID's entry is not used");
        // Fill the STLB's set of X and more, probing between accesses.
        for i in 1..4096 {
            if probe {
                assert!(!cpu.holds(&access(CUR, X + (i << 12), false)));
            }
            cpu.access(&access(CUR, X + (i << 12), false), 1, &mut stats);
        }
        cpu.execute(&invlpg(CUR, X + (4095 << 12)), &mut stats).unwrap();
        assert!(!cpu.holds(&access(CUR, X + (4095 << 12), false)));
        stats
    };
    assert_eq!(format!("{:?}", run(true)), format!("{:?}", run(false)));
}

/// `holds_pde` sees the PDE-cache entry a walk leaves for its 2 MiB block, under its own PCID
/// only, and sees it go with an INVLPG anywhere in the PCID (Intel drops every PSC entry of the
/// PCID, SDM 4.10.4.1), without changing the statistics of later accesses.
#[test]
fn holds_pde_sees_the_walks_pde_cache_entry_until_it_is_invalidated() {
    let spec = builtin("skylake").unwrap();
    let run = |probe: bool| {
        let mut cpu = Cpu::new(&spec);
        let mut stats = new_stats(&spec);
        assert!(!cpu.holds_pde(pcid(CUR), Vpn(X)));
        cpu.access(&access(CUR, X, false), 1, &mut stats);
        if probe {
            assert!(cpu.holds_pde(pcid(CUR), Vpn(X)));
            assert!(cpu.holds_pde(pcid(CUR), Vpn(X_NEIGHBOUR)), "the same 2 MiB block");
            assert!(!cpu.holds_pde(pcid(CUR), Vpn(X + 512)), "the next block");
            assert!(!cpu.holds_pde(pcid(OTHER), Vpn(X)), "another PCID");
        }
        cpu.execute(&invlpg(CUR, G), &mut stats).unwrap();
        assert!(!cpu.holds_pde(pcid(CUR), Vpn(X)));
        cpu.access(&access(CUR, X_NEIGHBOUR, false), 1, &mut stats);
        stats
    };
    assert_eq!(format!("{:?}", run(true)), format!("{:?}", run(false)));
}

/// A core that powers down in a deep idle state (`CPUIDLE_FLAG_TLB_FLUSHED`) keeps nothing:
/// every PCID's entries, globals and paging-structure-cache entries are gone, and no
/// instruction is counted.
#[test]
fn a_powered_down_core_loses_every_translation() {
    let spec = builtin("skylake").unwrap();
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    f.cpu.access(&access(CUR, X, false), 1, &mut f.stats);
    f.cpu.access(&access(OTHER, X, false), 1, &mut f.stats);
    f.cpu.access(&access(CUR, G, true), 1, &mut f.stats);
    assert!(f.cached(CUR, X) && f.cached(OTHER, X) && f.cached(CUR, G));
    assert!(f.cpu.holds_pde(pcid(CUR), Vpn(X)));
    assert!(f.cpu.lose_translations(&mut f.stats) >= 3);
    assert!(!f.cpu.holds_pde(pcid(CUR), Vpn(X)));
    assert_eq!(f.stats.ops.iter().map(|o| o.count).sum::<u64>(), 0);
    // (`cached` probes by accessing, which refills: checked last.)
    assert!(!f.cached(CUR, X) && !f.cached(OTHER, X) && !f.cached(CUR, G));
}

/// skylake (4-level paging, every walk reference 20 cycles) as a guest under nested paging
/// backed by `host` pages, with a nested-translation cache of `entries` in `ways`.
fn nested_skylake(host: &str, entries: u32, ways: u32) -> MachineSpec {
    MachineSpec::from_toml(&nested_skylake_text(host, entries, ways), "test").unwrap()
}

/// The preset text of [`nested_skylake`].
fn nested_skylake_text(host: &str, entries: u32, ways: u32) -> String {
    let text = crate::machine::BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1;
    let section = format!(
        "\n[guest]\nhypervisor = {{ value = \"kvm\", source = \"test\" }}\n\
         [guest.nested]\npaging = {{ value = true, source = \"test\" }}\n\
         host_page_size = {{ value = \"{host}\", source = \"test\" }}\n\
         host_levels = {{ value = 4, source = \"test\" }}\n\
         cache = {{ entries = {entries}, ways = {ways}, source = \"test\" }}\n"
    );
    format!("{text}{section}")
}

/// `(guest references, host references, walk cycles)` added by one access.
fn walk_refs(f: &mut Fixture, vpn: u64) -> (u64, u64, u64) {
    let before =
        (f.stats.walk_refs.iter().sum::<u64>(), f.stats.nested.memory_references, walk_cycles(f));
    f.cpu.access(&access(CUR, vpn, false), 1, &mut f.stats);
    f.cpu.debug_assert_invariants();
    (
        f.stats.walk_refs.iter().sum::<u64>() - before.0,
        f.stats.nested.memory_references - before.1,
        walk_cycles(f) - before.2,
    )
}

fn walk_cycles(f: &Fixture) -> u64 {
    f.stats.misses.iter().map(|m| m.walk_active_cycles).sum()
}

/// The worked example of a two-dimensional walk with every cache cold: 4 guest levels under 4
/// host levels make (g+1)(h+1)−1 = 24 references (Bhargava et al., ASPLOS 2008): the 4 guest
/// entries, and a 4-reference host walk for each of the 4 guest tables and the final address.
#[test]
fn a_cold_nested_walk_makes_24_references() {
    let spec = nested_skylake("4k", 16, 4);
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    let (guest, host, cycles) = walk_refs(&mut f, X);
    assert_eq!((guest, host), (4, 20));
    assert_eq!(guest + host, (4 + 1) * (4 + 1) - 1);
    assert_eq!(cycles, 24 * 20, "every reference costs skylake's 20-cycle walk latency");
    assert_eq!(f.stats.nested.translations, 5);
    assert_eq!((f.stats.nested.cache.misses, f.stats.nested.cache.hits), (5, 0));
}

/// With guest memory backed by 2 MiB host pages each host walk ends at its PDE (h' = 3): a
/// cold walk makes (g+1)·h' + g = 5 × 3 + 4 = 19 references.
#[test]
fn host_2m_pages_shorten_every_host_walk_to_three_references() {
    let spec = nested_skylake("2m", 16, 4);
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    let (guest, host, _) = walk_refs(&mut f, X);
    assert_eq!((guest, host), (4, 5 * 3));
    assert_eq!(guest + host, 19);
    let spec = nested_skylake("1g", 16, 4);
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    assert_eq!(walk_refs(&mut f, X), (4, 5 * 2, 14 * 20), "1 GiB: h' = 2");
}

/// The next page of the same 2 MiB region: the guest's PDE cache leaves one guest reference
/// (its PTE), whose table's host translation is cached; only the final address is new, a host
/// walk with 4 KiB backing and a cache hit with 2 MiB backing (the same host page).
#[test]
fn nested_cache_hits_cut_host_references() {
    for (host, expected) in [("4k", (1, 4)), ("2m", (1, 0))] {
        let spec = nested_skylake(host, 16, 4);
        let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
        walk_refs(&mut f, X);
        let (guest, refs, _) = walk_refs(&mut f, X_NEIGHBOUR);
        assert_eq!((guest, refs), expected, "{host} host pages");
    }
    // A one-entry cache keeps only the last translation (the final address): the neighbour's
    // PT table must be walked again.
    let spec = nested_skylake("4k", 1, 1);
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    walk_refs(&mut f, X);
    assert_eq!(walk_refs(&mut f, X_NEIGHBOUR), (1, 8, 9 * 20));
}

/// Guest INVLPG drops the guest's TLB and paging-structure-cache entries but not the
/// guest-physical translations (only INVEPT does: SDM vol. 3C §29.4.3.1): the walk that
/// follows is a full guest walk with every host translation cached. A core that powers down
/// loses them too.
#[test]
fn guest_invalidations_keep_nested_translations_and_power_down_drops_them() {
    let spec = nested_skylake("4k", 16, 4);
    let mut f = Fixture { cpu: Cpu::new(&spec), stats: new_stats(&spec) };
    walk_refs(&mut f, X);
    f.cpu.execute(&invlpg(CUR, X), &mut f.stats).unwrap();
    assert_eq!(walk_refs(&mut f, X), (4, 0, 4 * 20));
    f.cpu.lose_translations(&mut f.stats);
    assert_eq!(f.stats.nested.cache.invalidated, 5);
    assert_eq!(walk_refs(&mut f, X), (4, 20, 24 * 20));
}

/// With `invlpg_tlb_scope = "all"` (this project's KVM guest, measured), one INVLPG of X drops
/// what a powered-down core loses: FAR of the same PCID, X of the other PCID, the global G,
/// the PDE-cache entries and the guest-physical translations; it counts as one INVLPG. The
/// spec with the SDM's rule restored keeps them, as the plain preset does.
#[test]
fn an_invlpg_that_drops_everything_leaves_no_translation() {
    let all = nested_skylake_text("4k", 16, 4).replacen(
        "invlpg_psc_scope = ",
        "invlpg_tlb_scope = \"all\"\ninvlpg_tlb_scope_source = \"test\"\ninvlpg_psc_scope = ",
        1,
    );
    let spec = MachineSpec::from_toml(&all, "test").unwrap();
    assert_eq!(spec.invlpg_tlb_scope(), crate::machine::TlbScope::All);
    let fixture = |spec: &MachineSpec| {
        let mut f = Fixture { cpu: Cpu::new(spec), stats: new_stats(spec) };
        for a in [access(CUR, X, false), access(OTHER, X, false), access(CUR, G, true)] {
            f.cpu.access(&a, 1, &mut f.stats);
        }
        f.cpu.access(&access(CUR, FAR, false), 1, &mut f.stats);
        f.cpu.execute(&invlpg(CUR, X), &mut f.stats).unwrap();
        f.cpu.debug_assert_invariants();
        f
    };
    let mut f = fixture(&spec);
    assert_eq!(f.stats.ops[crate::stats::OpKind::Invlpg.index()].count, 1);
    assert!(!f.cpu.holds_pde(pcid(CUR), Vpn(FAR)));
    // FAR's walk is a cold one: 4 guest references, each table's and the page's host walk.
    assert_eq!(walk_refs(&mut f, FAR), (4, 20, 24 * 20));
    assert!(!f.cached(OTHER, X) && !f.cached(CUR, G));
    let mut kept = fixture(&spec.with_architectural_invlpg());
    assert!(!kept.cached(CUR, X), "the address's own entry goes either way");
    assert!(kept.cached(CUR, FAR) && kept.cached(OTHER, X) && kept.cached(CUR, G));
}

/// A preset whose `[guest.nested]` says no EPT/NPT, and a spec with nested paging switched off,
/// walk exactly as the machine without the section; the report has no `nested_paging` block.
#[test]
fn nested_paging_off_is_the_native_walk() {
    let native = builtin("skylake").unwrap();
    let off = nested_skylake("4k", 16, 4).without_nested();
    let run = |spec: &MachineSpec| {
        let mut f = Fixture { cpu: Cpu::new(spec), stats: new_stats(spec) };
        for vpn in [X, X_NEIGHBOUR, G, FAR, FAR_NEIGHBOUR, X] {
            walk_refs(&mut f, vpn);
        }
        let report = f.stats.report(spec).nested_paging.is_some();
        (f.stats, report)
    };
    let (a, b) = (run(&native), run(&off));
    assert_eq!(a, b);
    assert!(!a.1, "no nested_paging block");
    let on = run(&nested_skylake("4k", 16, 4));
    assert!(on.1 && on.0 != a.0);
    // Deterministic: the same accesses give the same counters.
    assert_eq!(on, run(&nested_skylake("4k", 16, 4)));
}

#[test]
fn bad_nested_sections_are_refused() {
    let text = crate::machine::BUILTIN_PRESETS.iter().find(|(n, _)| *n == "skylake").unwrap().1;
    let with = |levels: u32, entries: u32, ways: u32| {
        let section = format!(
            "\n[guest.nested]\npaging = {{ value = true, source = \"t\" }}\n\
             host_page_size = {{ value = \"2m\", source = \"t\" }}\n\
             host_levels = {{ value = {levels}, source = \"t\" }}\n\
             cache = {{ entries = {entries}, ways = {ways}, source = \"t\" }}\n"
        );
        MachineSpec::from_toml(&format!("{text}{section}"), "t")
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    assert!(with(4, 16, 4).is_ok());
    assert!(with(3, 16, 4).unwrap_err().contains("host_levels"));
    assert!(with(4, 10, 4).unwrap_err().contains("[guest.nested] cache"));
    assert!(with(4, 0, 1).is_err());
}
