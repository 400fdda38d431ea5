//! One CPU's translation hardware: L1 TLBs, STLB, paging-structure caches, the page walk, and
//! the invalidating instructions with the semantics of the Intel SDM vol. 3 §4.10.4.1 (and the
//! AMD APM for INVLPGB/TLBSYNC).
//!
//! A translation, in this fixed order:
//! 1. the L1 structure that serves the access kind and page size (if any) is looked up; a hit ends
//!    the translation at no extra cost;
//! 2. on a miss, the STLB structure for the kind and size (if any) is looked up, costing
//!    `latency.stlb_hit`; a hit ends the translation;
//! 3. on a miss, the page walk probes the paging-structure caches from the deepest level up, then
//!    references every level below the deepest hit, each costing its `latency.walk_*`; under
//!    nested paging each of those references and the final address also need a host
//!    translation (`super::nested`).
//!
//! Every structure that missed (L1, STLB, and each paging-structure cache probed) is filled with
//! the translation. Structures are independent and non-inclusive: an eviction from one never
//! removes an entry from another, so the model fills each right after its own miss.

use super::nested::Nested;
use super::structure::{Displaced, Outcome, Replacement, Structure};
use crate::machine::{MachineSpec, PscLevel, PscScope, TlbScope};
use crate::stats::{HwStats, OpKind, StructureStats};
use thiserror::Error;
use tlblab_types::{Access, AccessKind, InvlpgbScope, InvpcidType, Page, PageSize, TlbOp, Vpn};

const NONE: u8 = u8::MAX;
/// Size code of a 2 MiB entry that holds part of a 1 GiB page (splintering structures only).
const SPLINTER: u64 = 3;

/// An exception the instruction raises instead of executing.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Fault {
    /// #UD: the CPU does not have the instruction.
    #[error("#UD: {0}")]
    InvalidOpcode(&'static str),
    /// #GP(0): an operand is not allowed in the current state.
    #[error("#GP: {0}")]
    GeneralProtection(&'static str),
    /// An INVLPGB over more strides than the CPU's `invlpgb_count_max` (software splits larger
    /// ranges, as the kernel's `invlpgb_flush_user_nr_nosync()` callers do).
    #[error("INVLPGB over {pages} strides, more than invlpgb_count_max ({max}) of this CPU")]
    InvlpgbTooLong {
        /// Strides asked for.
        pages: u32,
        /// The CPU's limit.
        max: u32,
    },
}

/// The control-register bits that change what the TLB does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cr4 {
    /// CR4.PGE: the G bit of paging entries is honoured.
    pub pge: bool,
    /// CR4.PCIDE: entries are tagged with the PCID of CR3.
    pub pcide: bool,
}

/// One CPU's translation hardware.
#[derive(Clone, Debug)]
pub struct Cpu {
    tlbs: Vec<Structure>,
    splinters: Vec<bool>,
    /// `holds[i][size]`: structure `i` holds translations of that page size.
    holds: Vec<[bool; 3]>,
    /// Structures that may hold splinter entries (set on insert, cleared by a full scan).
    may_hold_splinters: Vec<bool>,
    /// `route[level - 1][kind][size]`: which structure serves it, or `NONE`.
    route: [[[u8; 3]; 3]; 2],
    /// Paging-structure caches by `PscLevel` index (PML5E, PML4E, PDPTE, PDE).
    psc: [Option<Structure>; 4],
    stlb_latency: u64,
    /// Cycles of one memory reference, by paging level (PML5, PML4, PDPT, PD, PT).
    walk_latency: [u64; 5],
    /// 0 for 5-level paging, 1 for 4-level: the first level a full walk references.
    top_level: usize,
    op_cycles: [u64; OpKind::COUNT],
    has_pcid: bool,
    has_invpcid: bool,
    has_invlpgb: bool,
    invlpgb_count_max: u32,
    invlpg_psc_scope: PscScope,
    /// Which TLB entries INVLPG drops (`all`: everything, as a full flush of every tag).
    invlpg_tlb_scope: TlbScope,
    cr4: Cr4,
    /// The host side of walks, when nested paging is in force.
    nested: Option<Box<Nested>>,
    /// The tags this CPU's TLBs and paging-structure caches may hold entries under.
    tags: TagsSeen,
}

/// Which tags (PCIDs, and global) a CPU has translated under since it was made: a superset of
/// those its structures hold, never cleared. A broadcast INVLPGB of a PCID this CPU never
/// used drops nothing here, and is skipped without looking (most CPUs of a big machine never
/// ran a small process).
#[derive(Clone, Debug)]
struct TagsSeen {
    /// One bit per 12-bit PCID (a larger value shares a bit: a harmless false "seen").
    pcids: Box<[u64; 64]>,
    global: bool,
}

impl TagsSeen {
    fn new() -> TagsSeen {
        TagsSeen { pcids: Box::new([0; 64]), global: false }
    }

    #[inline(always)]
    fn bit(pcid: u16) -> (usize, u64) {
        ((usize::from(pcid) >> 6) & 63, 1 << (pcid & 63))
    }

    #[inline(always)]
    fn note(&mut self, pcid: u16, global: bool) {
        let (word, bit) = TagsSeen::bit(pcid);
        self.pcids[word] |= bit;
        self.global |= global;
    }

    /// Whether an entry could match `pcid` (any PCID for `None`), or be global when globals
    /// are included.
    fn may_hold(&self, pcid: Option<u16>, include_global: bool) -> bool {
        let nonglobal = match pcid {
            Some(p) => {
                let (word, bit) = TagsSeen::bit(p);
                self.pcids[word] & bit != 0
            }
            None => self.pcids.iter().any(|&w| w != 0),
        };
        nonglobal || (include_global && self.global)
    }
}

/// The paging-structure-cache key for the entry at `level` (0 = PML5E … 3 = PDE) used to
/// translate `vpn`: the address bits above the region one such entry maps.
const fn psc_prefix(vpn: Vpn, level: usize) -> u64 {
    vpn.0 >> (9 * (4 - level))
}

/// The paging level (2 = PDPT, 3 = PD, 4 = PT) whose entry maps a page of this size.
pub(super) const fn leaf_level(size: PageSize) -> usize {
    match size {
        PageSize::Size4K => 4,
        PageSize::Size2M => 3,
        PageSize::Size1G => 2,
    }
}

impl Cpu {
    /// A CPU with empty TLBs, CR4.PGE set, and CR4.PCIDE set if the machine has PCID (as Linux
    /// configures x86-64 CPUs that have it).
    pub fn new(spec: &MachineSpec) -> Cpu {
        let replacement: Replacement = spec.replacement();
        let raw = spec.raw();
        let mut route = [[[NONE; 3]; 3]; 2];
        for (i, s) in spec.structures().iter().enumerate() {
            for kind in AccessKind::ALL {
                for size in PageSize::ALL {
                    if s.serves[kind.index()] && s.holds[size.index()] {
                        route[s.level as usize - 1][kind.index()][size.index()] = i as u8;
                    }
                }
            }
        }
        let mut psc: [Option<Structure>; 4] = Default::default();
        for p in &raw.psc {
            if p.level != PscLevel::Pml5e || spec.paging_levels() == 5 {
                psc[p.level.index()] =
                    Some(Structure::new(p.entries as usize, p.ways as usize, replacement));
            }
        }
        let l = &raw.latency;
        // An instruction the machine lacks faults before it is charged.
        let op_cycles = OpKind::ALL.map(|k| raw.cost.for_op(k).map_or(0, |f| f.cycles));
        let walk_latency = [
            l.walk_pml5.cycles,
            l.walk_pml4.cycles,
            l.walk_pdpt.cycles,
            l.walk_pd.cycles,
            l.walk_pt.cycles,
        ];
        Cpu {
            tlbs: spec
                .structures()
                .iter()
                .map(|s| Structure::new(s.entries, s.ways, replacement))
                .collect(),
            splinters: spec.structures().iter().map(|s| s.splinter_1g).collect(),
            holds: spec.structures().iter().map(|s| s.holds).collect(),
            may_hold_splinters: vec![false; spec.structures().len()],
            route,
            psc,
            stlb_latency: l.stlb_hit.cycles,
            walk_latency,
            top_level: if spec.paging_levels() == 5 { 0 } else { 1 },
            op_cycles,
            has_pcid: raw.features.pcid,
            has_invpcid: raw.features.invpcid,
            has_invlpgb: raw.features.invlpgb,
            invlpgb_count_max: raw.features.invlpgb_count_max.unwrap_or(0),
            invlpg_psc_scope: spec.invlpg_psc_scope(),
            invlpg_tlb_scope: spec.invlpg_tlb_scope(),
            cr4: Cr4 { pge: true, pcide: raw.features.pcid },
            nested: Nested::new(spec, &walk_latency).map(Box::new),
            tags: TagsSeen::new(),
        }
    }

    /// Cycles of an STLB lookup (an L1 miss's, hit or not): what a translation that hits the
    /// STLB costs.
    pub fn stlb_latency(&self) -> u64 {
        self.stlb_latency
    }

    /// The current CR4 bits.
    pub fn cr4(&self) -> Cr4 {
        self.cr4
    }

    /// Valid entries in each TLB structure, in the machine's order.
    pub fn occupancy(&self) -> Vec<usize> {
        self.tlbs.iter().map(Structure::len).collect()
    }

    /// The PCID tag in force for a CR3 PCID value.
    #[inline]
    fn tag(&self, pcid: tlblab_types::Pcid) -> u16 {
        if self.cr4.pcide {
            pcid.get()
        } else {
            0
        }
    }

    /// `(set, key)` of `page` in structure `i`.
    #[inline(always)]
    fn locate(&self, i: usize, page: Page) -> (usize, u64) {
        let (number, code) = if page.size == PageSize::Size1G && self.splinters[i] {
            (page.vpn.0 >> 9, SPLINTER)
        } else {
            (page.number(), page.size.index() as u64)
        };
        (self.tlbs[i].set_of(number), number << 2 | code)
    }

    /// Whether the access would be translated by a TLB entry (its L1 structure or the STLB)
    /// rather than by a walk, without changing anything: what the safety checker asks before
    /// an access.
    pub fn holds(&self, access: &Access) -> bool {
        let (kind, size) = (access.kind.index(), access.page.size.index());
        let pcid = self.tag(access.pcid);
        [self.route[0][kind][size], self.route[1][kind][size]].into_iter().any(|i| {
            i != NONE && {
                let (set, key) = self.locate(i as usize, access.page);
                self.tlbs[i as usize].contains(set, key, pcid)
            }
        })
    }

    /// Whether the PDE cache holds, under `pcid`, the entry that maps the 2 MiB block of `vpn`
    /// (a reference to that block's page table), without changing any state. False on a
    /// machine without a PDE cache.
    pub fn holds_pde(&self, pcid: tlblab_types::Pcid, vpn: Vpn) -> bool {
        const PDE: usize = 3;
        self.psc[PDE].as_ref().is_some_and(|cache| {
            let prefix = psc_prefix(vpn, PDE);
            cache.contains(cache.set_of(prefix), prefix, self.tag(pcid))
        })
    }

    /// `repeat` identical accesses in a row. The first is translated in full; every later one
    /// finds the translation where the first left it and changes no replacement state, so it is
    /// translated once and counted `repeat - 1` times. Returns the translation cycles of all
    /// of them (beyond L1 hits; see the module documentation).
    #[inline]
    pub fn access(&mut self, access: &Access, repeat: u32, stats: &mut HwStats) -> u64 {
        if repeat == 0 {
            return 0;
        }
        let mut cycles = self.translate(access, 1, stats);
        if repeat > 1 {
            cycles += self.translate(access, u64::from(repeat - 1), stats);
        }
        cycles
    }

    /// Translates one access. The L1 structure, the STLB and each paging-structure cache are
    /// independent, so each is looked up and, on a miss, filled in one step: the order of the
    /// fills among them does not matter. Returns the translation cycles of the `weight` accesses.
    #[inline(always)]
    fn translate(&mut self, access: &Access, weight: u64, stats: &mut HwStats) -> u64 {
        let kind = access.kind.index();
        let size = access.page.size.index();
        let pcid = self.tag(access.pcid);
        let global = access.global && self.cr4.pge;
        stats.accesses[kind] += weight;
        let l1 = self.route[0][kind][size];
        if l1 != NONE {
            let l1 = l1 as usize;
            let (set, key) = self.locate(l1, access.page);
            let outcome = self.tlbs[l1].access(set, key, pcid, global);
            if self.count(l1, outcome, key, weight, stats) {
                return 0;
            }
        }
        // Past an L1 hit (an entry filled, so noted, before): the fills below, and the L1's
        // own on its miss, are under this tag.
        self.tags.note(pcid, global);
        stats.misses[kind].l1_miss += weight;
        let l2 = self.route[1][kind][size];
        let mut cycles = 0;
        let mut hit_l2 = false;
        if l2 != NONE {
            let l2 = l2 as usize;
            cycles += self.stlb_latency;
            let (set, key) = self.locate(l2, access.page);
            let outcome = self.tlbs[l2].access(set, key, pcid, global);
            hit_l2 = self.count(l2, outcome, key, weight, stats);
            if hit_l2 {
                stats.misses[kind].stlb_hit += weight;
            }
        }
        if !hit_l2 {
            let walk = self.walk(access.page, pcid, weight, stats);
            cycles += walk;
            let m = &mut stats.misses[kind];
            m.walk_completed += weight;
            m.walk_active_cycles += walk * weight;
        }
        stats.misses[kind].translation_cycles += cycles * weight;
        cycles * weight
    }

    /// Counts an access to TLB structure `i`; returns whether it hit.
    #[inline(always)]
    fn count(
        &mut self,
        i: usize,
        outcome: Outcome,
        key: u64,
        weight: u64,
        stats: &mut HwStats,
    ) -> bool {
        let hit = record(&mut stats.structures[i], outcome, weight);
        if !hit && key & 3 == SPLINTER {
            self.may_hold_splinters[i] = true;
        }
        hit
    }

    /// Walks the paging structures for `page`; returns the walk's cycles. The caches of the
    /// non-leaf levels are probed deepest first; each probe that misses fills its cache (the walk
    /// references that level), and the walk resumes below the first hit.
    #[inline(always)]
    fn walk(&mut self, page: Page, pcid: u16, weight: u64, stats: &mut HwStats) -> u64 {
        let leaf = leaf_level(page.size);
        let mut start = self.top_level;
        for level in (self.top_level..leaf).rev() {
            if let Some(cache) = &mut self.psc[level] {
                let prefix = psc_prefix(page.vpn, level);
                let set = cache.set_of(prefix);
                if record(&mut stats.psc[level], cache.access(set, prefix, pcid, false), weight) {
                    start = level + 1;
                    break;
                }
            }
        }
        let mut cycles = 0;
        for level in start..=leaf {
            cycles += self.walk_latency[level];
            stats.walk_refs[level] += weight;
        }
        if let Some(nested) = &mut self.nested {
            cycles += nested.walk(page.vpn, start, leaf, weight, stats);
        }
        cycles
    }

    /// Executes an invalidating instruction. INVLPGB only acts on this CPU here; a
    /// [`crate::System`] broadcasts it to the others with [`Cpu::invlpgb_remote`]. Returns the
    /// cycles charged for the instruction (the preset's cost of its kind).
    pub fn execute(&mut self, op: &TlbOp, stats: &mut HwStats) -> Result<u64, Fault> {
        let (kind, tlb, psc) = match *op {
            TlbOp::Invlpg { .. } if self.invlpg_tlb_scope == TlbScope::All => {
                // Measured in a KVM guest: after one INVLPG every translation is gone, the
                // kernel's global ones and the guest-physical ones too (docs/hardware-model.md,
                // "INVLPG that drops everything").
                let (tlb, psc) = self.drop_everything(stats);
                (OpKind::Invlpg, tlb, psc)
            }
            TlbOp::Invlpg { pcid, vpn } => {
                let p = self.tag(pcid);
                let tlb = self.drop_address(vpn, stats, |tp, global| global || tp == p);
                let psc = match self.invlpg_psc_scope {
                    PscScope::Pcid => self.drop_psc(stats, |tp| tp == p),
                    PscScope::Address => self.drop_psc_address(vpn, stats, |tp| tp == p),
                };
                (OpKind::Invlpg, tlb, psc)
            }
            TlbOp::Invpcid { kind, pcid, vpn } => {
                if !self.has_invpcid {
                    return Err(Fault::InvalidOpcode("INVPCID on a CPU without INVPCID"));
                }
                let p = pcid.get();
                let needs_pcid_0 = matches!(kind, InvpcidType::IndivAddr | InvpcidType::SingleCtxt);
                if needs_pcid_0 && !self.cr4.pcide && p != 0 {
                    return Err(Fault::GeneralProtection(
                        "INVPCID type 0 or 1 names a PCID other than 0 while CR4.PCIDE=0",
                    ));
                }
                match kind {
                    InvpcidType::IndivAddr => (
                        OpKind::InvpcidIndivAddr,
                        self.drop_address(vpn, stats, |tp, global| !global && tp == p),
                        // "Mappings used to translate the address": address-scoped.
                        self.drop_psc_address(vpn, stats, |tp| tp == p),
                    ),
                    InvpcidType::SingleCtxt => (
                        OpKind::InvpcidSingleCtxt,
                        self.drop_tlb(stats, |tp, global| !global && tp == p),
                        self.drop_psc(stats, |tp| tp == p),
                    ),
                    InvpcidType::AllInclGlobal => (
                        OpKind::InvpcidAllInclGlobal,
                        self.drop_tlb(stats, |_, _| true),
                        self.drop_psc(stats, |_| true),
                    ),
                    InvpcidType::AllNonGlobal => (
                        OpKind::InvpcidAllNonGlobal,
                        self.drop_tlb(stats, |_, global| !global),
                        self.drop_psc(stats, |_| true),
                    ),
                }
            }
            TlbOp::MovCr3 { pcid, noflush } => {
                if noflush && !self.cr4.pcide {
                    // Bit 63 of CR3 is reserved unless CR4.PCIDE=1.
                    return Err(Fault::GeneralProtection(
                        "MOV CR3 with bit 63 set while CR4.PCIDE=0",
                    ));
                }
                if noflush {
                    (OpKind::MovCr3Noflush, 0, 0)
                } else {
                    let p = self.tag(pcid);
                    (
                        OpKind::MovCr3,
                        self.drop_tlb(stats, |tp, global| !global && tp == p),
                        self.drop_psc(stats, |tp| tp == p),
                    )
                }
            }
            TlbOp::MovCr4 { pge, pcide } => {
                if pcide && !self.has_pcid {
                    return Err(Fault::GeneralProtection(
                        "setting CR4.PCIDE on a CPU without PCID",
                    ));
                }
                let old = self.cr4;
                self.cr4 = Cr4 { pge, pcide };
                // Changing PGE, or clearing PCIDE, invalidates everything, globals included.
                if old.pge != pge || (old.pcide && !pcide) {
                    (
                        OpKind::MovCr4,
                        self.drop_tlb(stats, |_, _| true),
                        self.drop_psc(stats, |_| true),
                    )
                } else {
                    (OpKind::MovCr4, 0, 0)
                }
            }
            TlbOp::Invlpgb(scope) => {
                if !self.has_invlpgb {
                    return Err(Fault::InvalidOpcode("INVLPGB on a CPU without INVLPGB"));
                }
                if let Some(range) = scope.range.filter(|r| r.pages > self.invlpgb_count_max) {
                    return Err(Fault::InvlpgbTooLong {
                        pages: range.pages,
                        max: self.invlpgb_count_max,
                    });
                }
                self.invlpgb_remote(&scope, stats);
                (OpKind::Invlpgb, 0, 0)
            }
            TlbOp::Tlbsync => {
                if !self.has_invlpgb {
                    return Err(Fault::InvalidOpcode("TLBSYNC on a CPU without INVLPGB"));
                }
                (OpKind::Tlbsync, 0, 0)
            }
        };
        let o = &mut stats.ops[kind.index()];
        o.count += 1;
        o.cycles += self.op_cycles[kind.index()];
        o.tlb_entries_dropped += tlb;
        o.psc_entries_dropped += psc;
        Ok(self.op_cycles[kind.index()])
    }

    /// The core powers down in an idle state that loses its TLB contents
    /// (`CPUIDLE_FLAG_TLB_FLUSHED`: C3 and deeper on Intel): every TLB and paging-structure
    /// cache entry is gone, globals included. No instruction is charged. Returns the TLB
    /// entries lost.
    pub fn lose_translations(&mut self, stats: &mut HwStats) -> u64 {
        self.drop_everything(stats).0
    }

    /// Drops every TLB entry (globals too), every paging-structure-cache entry and the nested
    /// cache's guest-physical translations; returns the TLB and PSC entries dropped.
    fn drop_everything(&mut self, stats: &mut HwStats) -> (u64, u64) {
        let tlb = self.drop_tlb(stats, |_, _| true);
        let psc = self.drop_psc(stats, |_| true);
        if let Some(nested) = &mut self.nested {
            nested.clear(stats);
        }
        (tlb, psc)
    }

    /// Applies a broadcast INVLPGB (from this or another CPU) to this CPU's structures; the
    /// entries dropped are counted under `invlpgb` in `stats`, the instruction itself is not.
    pub fn invlpgb_remote(&mut self, scope: &InvlpgbScope, stats: &mut HwStats) {
        let pcid = scope.pcid.map(|p| p.get());
        let include_global = scope.include_global;
        if !self.tags.may_hold(pcid, include_global) {
            return; // nothing here can match: nothing to drop, nothing to count
        }
        let tlb_match = move |tp: u16, global: bool| {
            if global {
                include_global
            } else {
                pcid.is_none_or(|p| tp == p)
            }
        };
        let psc_match = move |tp: u16| pcid.is_none_or(|p| tp == p);
        let (mut tlb, mut psc) = (0, 0);
        match scope.range {
            Some(range) => {
                let step = range.stride.bytes() >> 12;
                for i in 0..u64::from(range.pages) {
                    let vpn = Vpn(range.start.0.wrapping_add(i * step) & Vpn::MAX);
                    tlb += self.drop_address(vpn, stats, tlb_match);
                    if !scope.final_only {
                        psc += self.drop_psc_address(vpn, stats, psc_match);
                    }
                }
            }
            None => {
                tlb += self.drop_tlb(stats, tlb_match);
                if !scope.final_only {
                    psc += self.drop_psc(stats, psc_match);
                }
            }
        }
        let o = &mut stats.ops[OpKind::Invlpgb.index()];
        o.tlb_entries_dropped += tlb;
        o.psc_entries_dropped += psc;
    }

    /// Drops, from every TLB structure, the entries that translate `vpn` (at any page size) and
    /// whose `(pcid, global)` satisfy `matches`.
    fn drop_address(
        &mut self,
        vpn: Vpn,
        stats: &mut HwStats,
        matches: impl Fn(u16, bool) -> bool + Copy,
    ) -> u64 {
        let mut dropped = 0;
        for i in 0..self.tlbs.len() {
            let mut here = 0;
            for size in PageSize::ALL {
                if size == PageSize::Size1G && self.splinters[i] {
                    // Every 2 MiB splinter of the 1 GiB page goes (SDM: all entries for the page).
                    if self.may_hold_splinters[i] {
                        let gb = vpn.0 >> 18;
                        here += self.tlbs[i].invalidate_where(|key, tp, global| {
                            key & 3 == SPLINTER && key >> 2 >> 9 == gb && matches(tp, global)
                        });
                    }
                    continue;
                }
                if self.holds[i][size.index()] {
                    let page = Page::containing(vpn.addr(), size);
                    let (set, key) = self.locate(i, page);
                    here += self.tlbs[i].invalidate_key(set, key, matches);
                }
            }
            stats.structures[i].invalidated += here;
            dropped += here;
        }
        dropped
    }

    /// Drops every TLB entry whose `(pcid, global)` satisfy `matches`.
    fn drop_tlb(&mut self, stats: &mut HwStats, matches: impl Fn(u16, bool) -> bool + Copy) -> u64 {
        let mut dropped = 0;
        for (i, tlb) in self.tlbs.iter_mut().enumerate() {
            let here = tlb.invalidate_where(|_, tp, global| matches(tp, global));
            stats.structures[i].invalidated += here;
            dropped += here;
            if tlb.len() == 0 {
                self.may_hold_splinters[i] = false;
            }
        }
        dropped
    }

    /// Drops every paging-structure-cache entry whose PCID satisfies `matches`.
    fn drop_psc(&mut self, stats: &mut HwStats, matches: impl Fn(u16) -> bool + Copy) -> u64 {
        let mut dropped = 0;
        for (level, cache) in self.psc.iter_mut().enumerate() {
            if let Some(cache) = cache {
                let here = cache.invalidate_where(|_, tp, _| matches(tp));
                stats.psc[level].invalidated += here;
                dropped += here;
            }
        }
        dropped
    }

    /// Drops the paging-structure-cache entries used to translate `vpn` whose PCID satisfies
    /// `matches`.
    fn drop_psc_address(
        &mut self,
        vpn: Vpn,
        stats: &mut HwStats,
        matches: impl Fn(u16) -> bool + Copy,
    ) -> u64 {
        let mut dropped = 0;
        for (level, cache) in self.psc.iter_mut().enumerate() {
            if let Some(cache) = cache {
                let prefix = psc_prefix(vpn, level);
                let set = cache.set_of(prefix);
                let here = cache.invalidate_key(set, prefix, |tp, _| matches(tp));
                stats.psc[level].invalidated += here;
                dropped += here;
            }
        }
        dropped
    }

    /// Checks every structure's invariants (debug builds and tests).
    pub fn debug_assert_invariants(&self) {
        for t in &self.tlbs {
            t.debug_assert_invariants();
        }
        for c in self.psc.iter().flatten() {
            c.debug_assert_invariants();
        }
        if let Some(nested) = &self.nested {
            nested.debug_assert_invariants();
        }
    }
}

/// Counts one access to a TLB structure or paging-structure cache in `st`; returns whether it
/// hit.
#[inline(always)]
pub(super) fn record(st: &mut StructureStats, outcome: Outcome, weight: u64) -> bool {
    match outcome {
        Outcome::Hit => {
            st.hits += weight;
            true
        }
        Outcome::Filled(displaced) => {
            // A fill only happens on the first of a run of repeats (see `Cpu::access`).
            debug_assert_eq!(weight, 1, "a repeated access filled a structure");
            st.misses += weight;
            st.fills += 1;
            st.evictions += u64::from(displaced == Displaced::Evicted);
            false
        }
    }
}

/// Statistics sized for a machine.
pub fn new_stats(spec: &MachineSpec) -> HwStats {
    HwStats::new(spec.structures().len())
}
