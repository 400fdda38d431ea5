//! Hardware statistics, kept apart from the model's state so that they can be reset (warm-up),
//! merged across CPUs (`+=`) and converted to the output schema at the end ([`HwReport`]).
//!
//! Names follow the Intel PMU events where one exists: `dtlb_load_misses.stlb_hit`,
//! `dtlb_load_misses.walk_completed`, `dtlb_load_misses.walk_active` (cycles), and the same under
//! `dtlb_store_misses` and `itlb_misses`. Instruction names follow the kernel's
//! (`INVPCID_TYPE_INDIV_ADDR` → `invpcid_indiv_addr`).

use crate::machine::{MachineSpec, PscLevel};
use serde::Serialize;
use std::ops::AddAssign;
use tlblab_types::AccessKind;

/// Counters of one TLB structure or paging-structure cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StructureStats {
    /// Lookups that found the translation.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries inserted.
    pub fills: u64,
    /// Valid entries displaced by a fill.
    pub evictions: u64,
    /// Valid entries dropped by invalidating instructions.
    pub invalidated: u64,
}

/// What happened to the translations that missed the L1 TLB, for one access kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MissStats {
    /// Accesses that missed the L1 TLB (or had no L1 structure for their page size).
    pub l1_miss: u64,
    /// `*.stlb_hit`: L1 misses served by the STLB.
    pub stlb_hit: u64,
    /// `*.walk_completed`: page walks.
    pub walk_completed: u64,
    /// `*.walk_active`: cycles spent walking.
    pub walk_active_cycles: u64,
    /// All cycles of L1 misses: STLB lookups plus walks.
    pub translation_cycles: u64,
}

/// The TLB-invalidating instructions, as counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// INVLPG.
    Invlpg,
    /// INVPCID type 0.
    InvpcidIndivAddr,
    /// INVPCID type 1.
    InvpcidSingleCtxt,
    /// INVPCID type 2.
    InvpcidAllInclGlobal,
    /// INVPCID type 3.
    InvpcidAllNonGlobal,
    /// MOV to CR3 that flushes.
    MovCr3,
    /// MOV to CR3 with NOFLUSH.
    MovCr3Noflush,
    /// MOV to CR4.
    MovCr4,
    /// INVLPGB (counted on the issuer; entries dropped counted on every CPU).
    Invlpgb,
    /// TLBSYNC.
    Tlbsync,
}

impl OpKind {
    /// Number of kinds.
    pub const COUNT: usize = 10;
    /// All kinds, in index order.
    pub const ALL: [OpKind; OpKind::COUNT] = [
        OpKind::Invlpg,
        OpKind::InvpcidIndivAddr,
        OpKind::InvpcidSingleCtxt,
        OpKind::InvpcidAllInclGlobal,
        OpKind::InvpcidAllNonGlobal,
        OpKind::MovCr3,
        OpKind::MovCr3Noflush,
        OpKind::MovCr4,
        OpKind::Invlpgb,
        OpKind::Tlbsync,
    ];

    /// The counter name.
    pub const fn name(self) -> &'static str {
        match self {
            OpKind::Invlpg => "invlpg",
            OpKind::InvpcidIndivAddr => "invpcid_indiv_addr",
            OpKind::InvpcidSingleCtxt => "invpcid_single_ctxt",
            OpKind::InvpcidAllInclGlobal => "invpcid_all_incl_global",
            OpKind::InvpcidAllNonGlobal => "invpcid_all_non_global",
            OpKind::MovCr3 => "mov_cr3",
            OpKind::MovCr3Noflush => "mov_cr3_noflush",
            OpKind::MovCr4 => "mov_cr4",
            OpKind::Invlpgb => "invlpgb",
            OpKind::Tlbsync => "tlbsync",
        }
    }

    /// Dense index.
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// Counters of one kind of invalidating instruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpStats {
    /// Instructions executed.
    pub count: u64,
    /// Cycles charged for them.
    pub cycles: u64,
    /// TLB entries they dropped.
    pub tlb_entries_dropped: u64,
    /// Paging-structure-cache entries they dropped.
    pub psc_entries_dropped: u64,
}

/// Paging levels, top first, as indexed in walk statistics.
pub const WALK_LEVEL_NAMES: [&str; 5] = ["pml5", "pml4", "pdpt", "pd", "pt"];

/// All hardware counters of one CPU (or a sum over CPUs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HwStats {
    /// Accesses by kind (`AccessKind::index`).
    pub accesses: [u64; 3],
    /// Per TLB structure, in the machine's order.
    pub structures: Vec<StructureStats>,
    /// L1-miss outcomes by access kind.
    pub misses: [MissStats; 3],
    /// Per paging-structure cache (`PscLevel` order: PML5E, PML4E, PDPTE, PDE).
    pub psc: [StructureStats; 4],
    /// Memory references made by walks, by paging level (see [`WALK_LEVEL_NAMES`]).
    pub walk_refs: [u64; 5],
    /// Invalidating instructions by kind (`OpKind::index`).
    pub ops: [OpStats; OpKind::COUNT],
    /// The host side of walks under nested paging (zero without it).
    pub nested: NestedStats,
}

/// The host side of two-dimensional walks (docs/hardware-model.md, "Nested paging (EPT/NPT)").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NestedStats {
    /// Guest-physical addresses translated by walks (each guest table a walk references, and
    /// each walk's final address).
    pub translations: u64,
    /// Host (EPT/NPT) table references made for them.
    pub memory_references: u64,
    /// Cycles of those references (included in the walks' cycles).
    pub cycles: u64,
    /// The nested-translation cache's counters.
    pub cache: StructureStats,
}

impl HwStats {
    /// Zeroed counters for a machine with `structures` TLB structures.
    pub fn new(structures: usize) -> HwStats {
        HwStats { structures: vec![StructureStats::default(); structures], ..HwStats::default() }
    }

    /// Total accesses.
    pub fn total_accesses(&self) -> u64 {
        self.accesses.iter().sum()
    }

    /// Total walks.
    pub fn total_walks(&self) -> u64 {
        self.misses.iter().map(|m| m.walk_completed).sum()
    }

    /// The output schema, with names from `spec`.
    pub fn report(&self, spec: &MachineSpec) -> HwReport {
        let by_kind = |kind: AccessKind| self.misses[kind.index()];
        HwReport {
            accesses: AccessCounts {
                load: self.accesses[AccessKind::Load.index()],
                store: self.accesses[AccessKind::Store.index()],
                fetch: self.accesses[AccessKind::Fetch.index()],
                total: self.total_accesses(),
            },
            structures: spec
                .structures()
                .iter()
                .zip(&self.structures)
                .map(|(s, st)| StructureReport {
                    name: s.name.clone(),
                    level: s.level,
                    entries: s.entries,
                    ways: s.ways,
                    stats: *st,
                })
                .collect(),
            dtlb_load_misses: by_kind(AccessKind::Load),
            dtlb_store_misses: by_kind(AccessKind::Store),
            itlb_misses: by_kind(AccessKind::Fetch),
            page_walks: WalkReport {
                walks: self.total_walks(),
                cycles: self.misses.iter().map(|m| m.walk_active_cycles).sum(),
                memory_references: WALK_LEVEL_NAMES
                    .iter()
                    .zip(self.walk_refs)
                    .map(|(name, refs)| (name.to_string(), refs))
                    .collect(),
            },
            paging_structure_caches: spec
                .raw()
                .psc
                .iter()
                .map(|p| PscReport {
                    level: p.level,
                    entries: p.entries,
                    ways: p.ways,
                    stats: self.psc[p.level.index()],
                })
                .collect(),
            invalidations: OpKind::ALL
                .iter()
                .map(|k| (k.name().to_string(), self.ops[k.index()]))
                .collect(),
            nested_paging: spec.nested().map(|n| NestedReport {
                host_page_size: n.host_page_size.name(),
                host_levels: n.host_levels,
                cache_entries: n.cache_entries,
                cache_ways: n.cache_ways,
                stats: self.nested,
            }),
        }
    }
}

impl AddAssign<&HwStats> for HwStats {
    fn add_assign(&mut self, rhs: &HwStats) {
        if self.structures.is_empty() {
            self.structures = vec![StructureStats::default(); rhs.structures.len()];
        }
        assert_eq!(self.structures.len(), rhs.structures.len(), "merging stats of two machines");
        for (a, b) in self.accesses.iter_mut().zip(rhs.accesses) {
            *a += b;
        }
        for (a, b) in self.structures.iter_mut().zip(&rhs.structures) {
            *a += *b;
        }
        for (a, b) in self.misses.iter_mut().zip(rhs.misses) {
            a.l1_miss += b.l1_miss;
            a.stlb_hit += b.stlb_hit;
            a.walk_completed += b.walk_completed;
            a.walk_active_cycles += b.walk_active_cycles;
            a.translation_cycles += b.translation_cycles;
        }
        for (a, b) in self.psc.iter_mut().zip(rhs.psc) {
            *a += b;
        }
        for (a, b) in self.walk_refs.iter_mut().zip(rhs.walk_refs) {
            *a += b;
        }
        let n = &mut self.nested;
        n.translations += rhs.nested.translations;
        n.memory_references += rhs.nested.memory_references;
        n.cycles += rhs.nested.cycles;
        n.cache += rhs.nested.cache;
        for (a, b) in self.ops.iter_mut().zip(rhs.ops) {
            a.count += b.count;
            a.cycles += b.cycles;
            a.tlb_entries_dropped += b.tlb_entries_dropped;
            a.psc_entries_dropped += b.psc_entries_dropped;
        }
    }
}

impl AddAssign for StructureStats {
    fn add_assign(&mut self, b: StructureStats) {
        self.hits += b.hits;
        self.misses += b.misses;
        self.fills += b.fills;
        self.evictions += b.evictions;
        self.invalidated += b.invalidated;
    }
}

/// Accesses by kind.
#[derive(Clone, Debug, Serialize)]
pub struct AccessCounts {
    /// Loads.
    pub load: u64,
    /// Stores.
    pub store: u64,
    /// Instruction fetches.
    pub fetch: u64,
    /// All of them.
    pub total: u64,
}

/// One TLB structure's counters with its geometry.
#[derive(Clone, Debug, Serialize)]
pub struct StructureReport {
    /// Name from the preset.
    pub name: String,
    /// 1 or 2.
    pub level: u8,
    /// Entries.
    pub entries: usize,
    /// Ways.
    pub ways: usize,
    /// Counters.
    #[serde(flatten)]
    pub stats: StructureStats,
}

/// One paging-structure cache's counters with its geometry.
#[derive(Clone, Debug, Serialize)]
pub struct PscReport {
    /// Which entries it caches.
    pub level: PscLevel,
    /// Entries.
    pub entries: u32,
    /// Ways.
    pub ways: u32,
    /// Counters.
    #[serde(flatten)]
    pub stats: StructureStats,
}

/// Walk totals.
#[derive(Clone, Debug, Serialize)]
pub struct WalkReport {
    /// Walks (all access kinds).
    pub walks: u64,
    /// Cycles walking.
    pub cycles: u64,
    /// Memory references by paging level.
    pub memory_references: std::collections::BTreeMap<String, u64>,
}

/// The hardware counters in output form (part of the JSON schema in `docs/sim-output.md`).
#[derive(Clone, Debug, Serialize)]
pub struct HwReport {
    /// Accesses by kind.
    pub accesses: AccessCounts,
    /// TLB structures, in preset order.
    pub structures: Vec<StructureReport>,
    /// Load translations that missed L1.
    pub dtlb_load_misses: MissStats,
    /// Store translations that missed L1.
    pub dtlb_store_misses: MissStats,
    /// Instruction-fetch translations that missed L1.
    pub itlb_misses: MissStats,
    /// Walk totals.
    pub page_walks: WalkReport,
    /// Paging-structure caches, in preset order.
    pub paging_structure_caches: Vec<PscReport>,
    /// Invalidating instructions by name.
    pub invalidations: std::collections::BTreeMap<String, OpStats>,
    /// The host side of walks, only when nested paging is in force (absent otherwise, so that
    /// other machines' output is unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested_paging: Option<NestedReport>,
}

/// Nested paging's counters with its configuration.
#[derive(Clone, Debug, Serialize)]
pub struct NestedReport {
    /// `4k`, `2m` or `1g`: the host page size backing guest memory.
    pub host_page_size: &'static str,
    /// Host table levels.
    pub host_levels: u8,
    /// Nested-translation cache entries.
    pub cache_entries: usize,
    /// Its ways.
    pub cache_ways: usize,
    /// Counters.
    #[serde(flatten)]
    pub stats: NestedStats,
}
