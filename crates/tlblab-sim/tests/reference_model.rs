//! The real model checked against an independent brute-force reference on random sequences of
//! accesses and invalidating instructions.
//!
//! The reference keeps each set as a plain list of ways holding entries with explicit ages (LRU:
//! every touch of a set ages all its entries by one and resets the touched one; the victim is the
//! oldest), scans every entry for every invalidation with predicates written straight from the
//! SDM rules, and replays a repeated access as that many separate accesses. Its counters must
//! equal the model's exactly, for both replacement policies, on small machines where evictions,
//! conflicts and splintering happen all the time.

use proptest::prelude::*;
use tlblab_sim::hw::Replacement;
use tlblab_sim::machine::{MachineSpec, PscLevel, PscScope};
use tlblab_sim::stats::{HwStats, OpKind};
use tlblab_sim::System;
use tlblab_types::{
    Access, AccessKind, CpuId, InvlpgbRange, InvlpgbScope, InvpcidType, Page, PageSize, Pcid,
    TlbOp, TraceEvent, VirtAddr, Vpn,
};

/// A small Intel-like machine: split L1 per size, a shared 12-way 4K+2M STLB (wider than 8 ways:
/// the second fingerprint word), a 1G STLB, PSCs.
const TINY_INTEL: &str = r#"
name = "tiny-intel"
description = "test machine"
vendor = "intel"
[features]
pcid = true
invpcid = true
invlpgb = false
la57 = true
page_walkers = 1
invlpg_psc_scope = "pcid"
invlpg_psc_scope_source = "test"
source = "test"
[[tlb]]
name = "d4k"
level = 1
accesses = ["load", "store"]
page_sizes = ["4k"]
entries = 4
ways = 2
source = "test"
[[tlb]]
name = "d2m1g"
level = 1
accesses = ["load", "store"]
page_sizes = ["2m", "1g"]
entries = 2
ways = 2
source = "test"
[[tlb]]
name = "i"
level = 1
accesses = ["fetch"]
page_sizes = ["4k", "2m"]
entries = 3
ways = 3
source = "test"
[[tlb]]
name = "stlb"
level = 2
accesses = ["load", "store", "fetch"]
page_sizes = ["4k", "2m"]
entries = 24
ways = 12
source = "test"
[[tlb]]
name = "stlb1g"
level = 2
accesses = ["load", "store"]
page_sizes = ["1g"]
entries = 2
ways = 1
source = "test"
[[psc]]
level = "pml5e"
entries = 1
ways = 1
source = "test"
[[psc]]
level = "pml4e"
entries = 2
ways = 2
source = "test"
[[psc]]
level = "pdpte"
entries = 2
ways = 1
source = "test"
[[psc]]
level = "pde"
entries = 4
ways = 2
source = "test"
[latency]
stlb_hit = { cycles = 7, source = "test" }
walk_pml5 = { cycles = 50, source = "test" }
walk_pml4 = { cycles = 40, source = "test" }
walk_pdpt = { cycles = 30, source = "test" }
walk_pd = { cycles = 20, source = "test" }
walk_pt = { cycles = 10, source = "test" }
[cost]
invlpg = { cycles = 1, source = "test" }
invpcid_indiv_addr = { cycles = 2, source = "test" }
invpcid_single_ctxt = { cycles = 3, source = "test" }
invpcid_all_incl_global = { cycles = 4, source = "test" }
invpcid_all_non_global = { cycles = 5, source = "test" }
mov_cr3 = { cycles = 6, source = "test" }
mov_cr3_noflush = { cycles = 7, source = "test" }
mov_cr4 = { cycles = 8, source = "test" }
"#;

/// A small AMD-like machine: one fully-associative L1 for all sizes (over 16 ways, the other LRU
/// layout), L2 splintering 1G to 2M,
/// INVLPGB, address-scoped INVLPG.
const TINY_AMD: &str = r#"
name = "tiny-amd"
description = "test machine"
vendor = "amd"
[features]
pcid = true
invpcid = true
invlpgb = true
invlpgb_count_max = 8
la57 = false
page_walkers = 1
invlpg_psc_scope = "address"
invlpg_psc_scope_source = "test"
source = "test"
[[tlb]]
name = "l1d"
level = 1
accesses = ["load", "store"]
page_sizes = ["4k", "2m", "1g"]
entries = 18
ways = 18
source = "test"
[[tlb]]
name = "l1i"
level = 1
accesses = ["fetch"]
page_sizes = ["4k", "2m", "1g"]
entries = 2
ways = 2
source = "test"
[[tlb]]
name = "l2d"
level = 2
accesses = ["load", "store"]
page_sizes = ["4k", "2m"]
splinter_1g = true
entries = 12
ways = 4
source = "test"
[[psc]]
level = "pdpte"
entries = 2
ways = 2
source = "test"
[[psc]]
level = "pde"
entries = 3
ways = 3
source = "test"
[latency]
stlb_hit = { cycles = 5, source = "test" }
walk_pml5 = { cycles = 50, source = "test" }
walk_pml4 = { cycles = 40, source = "test" }
walk_pdpt = { cycles = 30, source = "test" }
walk_pd = { cycles = 20, source = "test" }
walk_pt = { cycles = 10, source = "test" }
[cost]
invlpg = { cycles = 1, source = "test" }
invpcid_indiv_addr = { cycles = 2, source = "test" }
invpcid_single_ctxt = { cycles = 3, source = "test" }
invpcid_all_incl_global = { cycles = 4, source = "test" }
invpcid_all_non_global = { cycles = 5, source = "test" }
mov_cr3 = { cycles = 6, source = "test" }
mov_cr3_noflush = { cycles = 7, source = "test" }
mov_cr4 = { cycles = 8, source = "test" }
invlpgb = { cycles = 9, source = "test" }
tlbsync = { cycles = 10, source = "test" }
"#;

// ------------------------------------------------------------------------------------------------
// The reference.

#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    /// Page number at the entry's size (or a paging-structure prefix).
    number: u64,
    /// 0 = 4K, 1 = 2M, 2 = 1G, 3 = a 2M splinter of a 1G page, 9 = paging-structure entry.
    code: u8,
    pcid: u16,
    global: bool,
    age: u64,
}

/// A set-associative structure as a list of sets, each a list of ways.
struct RefArray {
    ways: Vec<Vec<Option<Entry>>>,
    mru: Vec<Vec<bool>>,
    plru: bool,
}

impl RefArray {
    fn new(entries: usize, ways: usize, plru: bool) -> RefArray {
        let sets = entries / ways;
        RefArray { ways: vec![vec![None; ways]; sets], mru: vec![vec![false; ways]; sets], plru }
    }

    fn touch(&mut self, set: usize, way: usize) {
        for e in self.ways[set].iter_mut().flatten() {
            e.age += 1;
        }
        self.ways[set][way].as_mut().unwrap().age = 0;
        let bits = &mut self.mru[set];
        bits[way] = true;
        if bits.iter().all(|&b| b) {
            bits.iter_mut().for_each(|b| *b = false);
            bits[way] = true;
        }
    }

    fn lookup(&mut self, number: u64, code: u8, pcid: u16) -> bool {
        let set = (number % self.ways.len() as u64) as usize;
        // A PCID's own entry is preferred to a global one for the same page (both can exist).
        let matching = |global: bool| {
            self.ways[set].iter().position(|e| {
                e.is_some_and(|e| {
                    e.number == number
                        && e.code == code
                        && e.global == global
                        && (global || e.pcid == pcid)
                })
            })
        };
        let found = matching(false).or_else(|| matching(true));
        if let Some(way) = found {
            self.touch(set, way);
        }
        found.is_some()
    }

    /// Returns whether a valid entry was evicted.
    fn insert(&mut self, number: u64, code: u8, pcid: u16, global: bool) -> bool {
        let set = (number % self.ways.len() as u64) as usize;
        let way = match self.ways[set].iter().position(Option::is_none) {
            Some(w) => w,
            None if self.plru => self.mru[set].iter().position(|&b| !b).unwrap_or(0),
            None => {
                (0..self.ways[set].len()).max_by_key(|&w| self.ways[set][w].unwrap().age).unwrap()
            }
        };
        let evicted = self.ways[set][way].is_some();
        self.ways[set][way] = Some(Entry { number, code, pcid, global, age: 0 });
        self.touch(set, way);
        evicted
    }

    fn drop_where(&mut self, pred: impl Fn(&Entry) -> bool) -> u64 {
        let mut n = 0;
        for (set, ways) in self.ways.iter_mut().enumerate() {
            for (way, slot) in ways.iter_mut().enumerate() {
                if slot.is_some_and(|e| pred(&e)) {
                    *slot = None;
                    self.mru[set][way] = false;
                    n += 1;
                }
            }
        }
        n
    }

    fn len(&self) -> usize {
        self.ways.iter().flatten().flatten().count()
    }
}

struct RefStructure {
    level: u8,
    serves: Vec<AccessKind>,
    sizes: Vec<PageSize>,
    splinter: bool,
    array: RefArray,
}

impl RefStructure {
    fn holds(&self, size: PageSize) -> bool {
        self.sizes.contains(&size) || (size == PageSize::Size1G && self.splinter)
    }

    /// The `(number, code)` an entry for `page` has here.
    fn key(&self, page: Page) -> (u64, u8) {
        let vpn = page.vpn.0;
        match page.size {
            PageSize::Size4K => (vpn, 0),
            PageSize::Size2M => (vpn >> 9, 1),
            PageSize::Size1G if self.splinter => (vpn >> 9, 3),
            PageSize::Size1G => (vpn >> 18, 2),
        }
    }
}

/// Whether entry `e` translates the 4K page `vpn`.
fn covers(e: &Entry, vpn: u64) -> bool {
    match e.code {
        0 => e.number == vpn,
        1 => e.number == vpn >> 9,
        2 => e.number == vpn >> 18,
        3 => e.number >> 9 == vpn >> 18,
        _ => unreachable!(),
    }
}

struct RefCpu {
    tlbs: Vec<RefStructure>,
    /// Paging-structure caches by level 0 (PML5E) ..= 3 (PDE).
    psc: Vec<Option<RefArray>>,
    levels: usize,
    stlb: u64,
    walk: [u64; 5],
    costs: [u64; OpKind::COUNT],
    scope: PscScope,
    invpcid: bool,
    invlpgb: bool,
    has_pcid: bool,
    pge: bool,
    pcide: bool,
    stats: HwStats,
}

impl RefCpu {
    fn new(spec: &MachineSpec) -> RefCpu {
        let plru = spec.replacement() == Replacement::Plru;
        let raw = spec.raw();
        let psc_level = |l: usize| PscLevel::ALL[l];
        let c = &raw.cost;
        let opt =
            |f: &Option<tlblab_sim::machine::raw::CyclesFigure>| f.as_ref().map_or(0, |f| f.cycles);
        RefCpu {
            tlbs: raw
                .tlb
                .iter()
                .map(|t| RefStructure {
                    level: t.level,
                    serves: t.accesses.clone(),
                    sizes: t.page_sizes.clone(),
                    splinter: t.splinter_1g,
                    array: RefArray::new(t.entries as usize, t.ways as usize, plru),
                })
                .collect(),
            psc: (0..4)
                .map(|l| {
                    raw.psc
                        .iter()
                        .find(|p| p.level == psc_level(l) && (l > 0 || spec.paging_levels() == 5))
                        .map(|p| RefArray::new(p.entries as usize, p.ways as usize, plru))
                })
                .collect(),
            levels: spec.paging_levels() as usize,
            stlb: raw.latency.stlb_hit.cycles,
            walk: [
                raw.latency.walk_pml5.cycles,
                raw.latency.walk_pml4.cycles,
                raw.latency.walk_pdpt.cycles,
                raw.latency.walk_pd.cycles,
                raw.latency.walk_pt.cycles,
            ],
            costs: [
                c.invlpg.cycles,
                opt(&c.invpcid_indiv_addr),
                opt(&c.invpcid_single_ctxt),
                opt(&c.invpcid_all_incl_global),
                opt(&c.invpcid_all_non_global),
                c.mov_cr3.cycles,
                c.mov_cr3_noflush.cycles,
                c.mov_cr4.cycles,
                opt(&c.invlpgb),
                opt(&c.tlbsync),
            ],
            scope: spec.invlpg_psc_scope(),
            invpcid: raw.features.invpcid,
            invlpgb: raw.features.invlpgb,
            has_pcid: raw.features.pcid,
            pge: true,
            pcide: raw.features.pcid,
            stats: HwStats::new(raw.tlb.len()),
        }
    }

    fn find(&self, level: u8, kind: AccessKind, size: PageSize) -> Option<usize> {
        self.tlbs.iter().position(|t| t.level == level && t.serves.contains(&kind) && t.holds(size))
    }

    fn access(&mut self, a: &Access) {
        let kind = a.kind.index();
        let pcid = if self.pcide { a.pcid.get() } else { 0 };
        let global = a.global && self.pge;
        self.stats.accesses[kind] += 1;
        let l1 = self.find(1, a.kind, a.page.size);
        if let Some(i) = l1 {
            let (n, c) = self.tlbs[i].key(a.page);
            if self.tlbs[i].array.lookup(n, c, pcid) {
                self.stats.structures[i].hits += 1;
                return;
            }
            self.stats.structures[i].misses += 1;
        }
        self.stats.misses[kind].l1_miss += 1;
        let mut cycles = 0;
        let l2 = self.find(2, a.kind, a.page.size);
        let mut hit = false;
        if let Some(i) = l2 {
            cycles += self.stlb;
            let (n, c) = self.tlbs[i].key(a.page);
            hit = self.tlbs[i].array.lookup(n, c, pcid);
            if hit {
                self.stats.structures[i].hits += 1;
                self.stats.misses[kind].stlb_hit += 1;
            } else {
                self.stats.structures[i].misses += 1;
            }
        }
        if !hit {
            let walk = self.walk(a.page, pcid);
            cycles += walk;
            self.stats.misses[kind].walk_completed += 1;
            self.stats.misses[kind].walk_active_cycles += walk;
            if let Some(i) = l2 {
                self.fill(i, a.page, pcid, global);
            }
        }
        self.stats.misses[kind].translation_cycles += cycles;
        if let Some(i) = l1 {
            self.fill(i, a.page, pcid, global);
        }
    }

    fn fill(&mut self, i: usize, page: Page, pcid: u16, global: bool) {
        let (n, c) = self.tlbs[i].key(page);
        self.stats.structures[i].fills += 1;
        if self.tlbs[i].array.insert(n, c, pcid, global) {
            self.stats.structures[i].evictions += 1;
        }
    }

    fn walk(&mut self, page: Page, pcid: u16) -> u64 {
        let top = 5 - self.levels;
        let leaf = match page.size {
            PageSize::Size4K => 4,
            PageSize::Size2M => 3,
            PageSize::Size1G => 2,
        };
        let prefix = |level: usize| page.vpn.0 >> (9 * (4 - level));
        let mut start = top;
        for level in (top..leaf).rev() {
            if let Some(cache) = &mut self.psc[level] {
                if cache.lookup(prefix(level), 9, pcid) {
                    self.stats.psc[level].hits += 1;
                    start = level + 1;
                    break;
                }
                self.stats.psc[level].misses += 1;
            }
        }
        let mut cycles = 0;
        for level in start..=leaf {
            cycles += self.walk[level];
            self.stats.walk_refs[level] += 1;
        }
        for level in start..leaf {
            if let Some(cache) = &mut self.psc[level] {
                self.stats.psc[level].fills += 1;
                if cache.insert(prefix(level), 9, pcid, false) {
                    self.stats.psc[level].evictions += 1;
                }
            }
        }
        cycles
    }

    fn drop_tlb(&mut self, pred: impl Fn(&Entry) -> bool) -> u64 {
        let mut total = 0;
        for (i, t) in self.tlbs.iter_mut().enumerate() {
            let n = t.array.drop_where(&pred);
            self.stats.structures[i].invalidated += n;
            total += n;
        }
        total
    }

    fn drop_psc(&mut self, pred: impl Fn(usize, &Entry) -> bool) -> u64 {
        let mut total = 0;
        for (level, cache) in self.psc.iter_mut().enumerate() {
            if let Some(cache) = cache {
                let n = cache.drop_where(|e| pred(level, e));
                self.stats.psc[level].invalidated += n;
                total += n;
            }
        }
        total
    }

    /// Whether PSC entry `e` at `level` is used to translate `vpn`.
    fn psc_covers(level: usize, e: &Entry, vpn: u64) -> bool {
        e.number == vpn >> (9 * (4 - level))
    }

    fn invlpgb_apply(&mut self, s: &InvlpgbScope) -> (u64, u64) {
        let pcid_ok = |p: u16| s.pcid.is_none_or(|q| q.get() == p);
        let tlb_ok = |e: &Entry| if e.global { s.include_global } else { pcid_ok(e.pcid) };
        let vpns: Option<Vec<u64>> = s.range.map(|r| {
            (0..u64::from(r.pages))
                .map(|i| (r.start.0 + i * (r.stride.bytes() >> 12)) & Vpn::MAX)
                .collect()
        });
        let t = self.drop_tlb(|e| {
            tlb_ok(e) && vpns.as_ref().is_none_or(|v| v.iter().any(|&x| covers(e, x)))
        });
        let p = if s.final_only {
            0
        } else {
            self.drop_psc(|l, e| {
                pcid_ok(e.pcid)
                    && vpns.as_ref().is_none_or(|v| v.iter().any(|&x| Self::psc_covers(l, e, x)))
            })
        };
        let o = &mut self.stats.ops[OpKind::Invlpgb.index()];
        o.tlb_entries_dropped += t;
        o.psc_entries_dropped += p;
        (t, p)
    }

    /// Executes an instruction; `Err(())` where the hardware faults.
    fn execute(&mut self, op: &TlbOp) -> Result<(), ()> {
        let cur = |p: Pcid, pcide: bool| if pcide { p.get() } else { 0 };
        let (kind, t, p) = match *op {
            TlbOp::Invlpg { pcid, vpn } => {
                let c = cur(pcid, self.pcide);
                let t = self.drop_tlb(|e| covers(e, vpn.0) && (e.global || e.pcid == c));
                let p = match self.scope {
                    PscScope::Pcid => self.drop_psc(|_, e| e.pcid == c),
                    PscScope::Address => {
                        self.drop_psc(|l, e| e.pcid == c && Self::psc_covers(l, e, vpn.0))
                    }
                };
                (OpKind::Invlpg, t, p)
            }
            TlbOp::Invpcid { kind, pcid, vpn } => {
                if !self.invpcid {
                    return Err(());
                }
                let q = pcid.get();
                match kind {
                    InvpcidType::IndivAddr | InvpcidType::SingleCtxt if !self.pcide && q != 0 => {
                        return Err(())
                    }
                    InvpcidType::IndivAddr => (
                        OpKind::InvpcidIndivAddr,
                        self.drop_tlb(|e| !e.global && e.pcid == q && covers(e, vpn.0)),
                        self.drop_psc(|l, e| e.pcid == q && Self::psc_covers(l, e, vpn.0)),
                    ),
                    InvpcidType::SingleCtxt => (
                        OpKind::InvpcidSingleCtxt,
                        self.drop_tlb(|e| !e.global && e.pcid == q),
                        self.drop_psc(|_, e| e.pcid == q),
                    ),
                    InvpcidType::AllInclGlobal => (
                        OpKind::InvpcidAllInclGlobal,
                        self.drop_tlb(|_| true),
                        self.drop_psc(|_, _| true),
                    ),
                    InvpcidType::AllNonGlobal => (
                        OpKind::InvpcidAllNonGlobal,
                        self.drop_tlb(|e| !e.global),
                        self.drop_psc(|_, _| true),
                    ),
                }
            }
            TlbOp::MovCr3 { noflush: true, .. } if !self.pcide => return Err(()),
            TlbOp::MovCr3 { noflush: true, .. } => (OpKind::MovCr3Noflush, 0, 0),
            TlbOp::MovCr3 { pcid, noflush: false } => {
                let c = cur(pcid, self.pcide);
                (
                    OpKind::MovCr3,
                    self.drop_tlb(|e| !e.global && e.pcid == c),
                    self.drop_psc(|_, e| e.pcid == c),
                )
            }
            TlbOp::MovCr4 { pcide, .. } if pcide && !self.has_pcid => return Err(()),
            TlbOp::MovCr4 { pge, pcide } => {
                let flush = pge != self.pge || (self.pcide && !pcide);
                self.pge = pge;
                self.pcide = pcide;
                if flush {
                    (OpKind::MovCr4, self.drop_tlb(|_| true), self.drop_psc(|_, _| true))
                } else {
                    (OpKind::MovCr4, 0, 0)
                }
            }
            TlbOp::Invlpgb(_) | TlbOp::Tlbsync if !self.invlpgb => return Err(()),
            TlbOp::Invlpgb(s) => {
                self.invlpgb_apply(&s);
                (OpKind::Invlpgb, 0, 0)
            }
            TlbOp::Tlbsync => (OpKind::Tlbsync, 0, 0),
        };
        let o = &mut self.stats.ops[kind.index()];
        o.count += 1;
        o.cycles += self.costs[kind.index()];
        o.tlb_entries_dropped += t;
        o.psc_entries_dropped += p;
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------------
// Random traces over a small address space, so that pages share paging-structure entries.

fn arb_page() -> impl Strategy<Value = Page> + Clone {
    (0u64..2, 0u64..2, 0u64..3, 0u64..3, 0u64..6, prop_oneof![6 => Just(PageSize::Size4K), 2 => Just(PageSize::Size2M), 1 => Just(PageSize::Size1G)])
        .prop_map(|(l5, l4, l3, l2, l1, size)| {
            let vpn = (l5 << 36) | (l4 << 27) | (l3 << 18) | (l2 << 9) | l1;
            Page::containing(Vpn(vpn).addr(), size)
        })
}

fn arb_pcid() -> impl Strategy<Value = Pcid> {
    (0u16..3).prop_map(|p| Pcid::new(p).unwrap())
}

fn arb_event(cpus: u16) -> impl Strategy<Value = TraceEvent> {
    let cpu = (0..cpus).prop_map(CpuId);
    let access = (cpu.clone(), arb_pcid(), arb_page(), any::<bool>(), 0usize..3, 1u32..4).prop_map(
        |(cpu, pcid, page, global, kind, repeat)| TraceEvent::Access {
            access: Access {
                cpu,
                pcid,
                page,
                global: global && page.vpn.0 & 1 == 1,
                kind: AccessKind::ALL[kind],
            },
            repeat,
        },
    );
    let vpn = arb_page().prop_map(|p: Page| p.vpn).boxed();
    let op = prop_oneof![
        (arb_pcid(), vpn.clone()).prop_map(|(pcid, vpn)| TlbOp::Invlpg { pcid, vpn }),
        (0u8..4, arb_pcid(), vpn.clone()).prop_map(|(t, pcid, vpn)| TlbOp::Invpcid {
            kind: InvpcidType::from_number(t).unwrap(),
            pcid,
            vpn
        }),
        (arb_pcid(), any::<bool>()).prop_map(|(pcid, noflush)| TlbOp::MovCr3 { pcid, noflush }),
        (prop::bool::weighted(0.8), prop::bool::weighted(0.8))
            .prop_map(|(pge, pcide)| TlbOp::MovCr4 { pge, pcide }),
        (
            prop::option::of((vpn, 1u32..4, any::<bool>())),
            prop::option::of(arb_pcid()),
            any::<bool>(),
            any::<bool>()
        )
            .prop_map(|(range, pcid, include_global, final_only)| {
                TlbOp::Invlpgb(InvlpgbScope {
                    range: range.map(|(start, pages, huge)| InvlpgbRange {
                        start: if huge { Vpn(start.0 & !0x1ff) } else { start },
                        pages,
                        stride: if huge { PageSize::Size2M } else { PageSize::Size4K },
                    }),
                    pcid,
                    include_global,
                    final_only,
                })
            }),
        Just(TlbOp::Tlbsync),
    ];
    prop_oneof![8 => access, 1 => (cpu, op).prop_map(|(cpu, op)| TraceEvent::Op { cpu, op })]
}

fn check(
    machine: &str,
    replacement: Replacement,
    levels: u8,
    events: &[TraceEvent],
) -> Result<(), TestCaseError> {
    let spec = MachineSpec::from_toml(machine, "test")
        .unwrap()
        .with_replacement(replacement)
        .with_paging_levels(levels)
        .unwrap();
    let mut system = System::new(&spec);
    let mut reference: Vec<(CpuId, RefCpu)> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        let cpu = event.cpu();
        if !reference.iter().any(|(c, _)| *c == cpu) {
            reference.push((cpu, RefCpu::new(&spec)));
        }
        let model = system.apply(event);
        let at = reference.iter().position(|(c, _)| *c == cpu).unwrap();
        let expected = match event {
            TraceEvent::Access { access, repeat } => {
                for _ in 0..*repeat {
                    reference[at].1.access(access);
                }
                Ok(())
            }
            TraceEvent::Op { op, .. } => {
                let r = reference[at].1.execute(op);
                if let (Ok(()), TlbOp::Invlpgb(scope)) = (r, op) {
                    for (j, (_, other)) in reference.iter_mut().enumerate() {
                        if j != at {
                            other.invlpgb_apply(scope);
                        }
                    }
                }
                r
            }
        };
        prop_assert_eq!(
            model.is_ok(),
            expected.is_ok(),
            "event {} {:?}: model {:?}",
            i,
            event,
            model
        );
        if let Some(c) = system.cpu(cpu) {
            c.debug_assert_invariants();
            let occupancy: Vec<usize> =
                reference[at].1.tlbs.iter().map(|t| t.array.len()).collect();
            prop_assert_eq!(c.occupancy(), occupancy, "occupancy after event {} {:?}", i, event);
        }
    }
    let per_cpu = system.per_cpu();
    prop_assert_eq!(per_cpu.len(), reference.len());
    for (cpu, stats) in per_cpu {
        let r = &reference.iter().find(|(c, _)| *c == cpu).unwrap().1;
        prop_assert_eq!(&stats, &r.stats, "{}", cpu);
    }
    Ok(())
}

proptest! {
    // 300 cases per machine in CI; PROPTEST_CASES=N searches deeper.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(300),
        ..ProptestConfig::default()
    })]

    #[test]
    fn intel_like_lru_matches_reference(events in prop::collection::vec(arb_event(2), 1..400), five in any::<bool>()) {
        check(TINY_INTEL, Replacement::Lru, if five { 5 } else { 4 }, &events)?;
    }

    #[test]
    fn intel_like_plru_matches_reference(events in prop::collection::vec(arb_event(2), 1..400)) {
        check(TINY_INTEL, Replacement::Plru, 5, &events)?;
    }

    #[test]
    fn amd_like_lru_matches_reference(events in prop::collection::vec(arb_event(3), 1..400)) {
        check(TINY_AMD, Replacement::Lru, 4, &events)?;
    }

    #[test]
    fn amd_like_plru_matches_reference(events in prop::collection::vec(arb_event(3), 1..400)) {
        check(TINY_AMD, Replacement::Plru, 4, &events)?;
    }
}

#[test]
fn repeats_equal_the_same_accesses_one_by_one() {
    // A direct check of the collapsing rule on a real preset and a long stream.
    let spec = tlblab_sim::machine::builtin("skylake").unwrap();
    let (mut collapsed, mut expanded) = (System::new(&spec), System::new(&spec));
    let mut state = 12345u64;
    for i in 0..20_000u64 {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let page = Page::containing(VirtAddr((state >> 33) % 4096 * 4096), PageSize::Size4K);
        let kind = AccessKind::ALL[(i % 3) as usize];
        let access = Access::new(CpuId(0), Pcid::new(1).unwrap(), page, kind);
        let repeat = 1 + (state >> 60) as u32;
        collapsed.apply(&TraceEvent::Access { access, repeat }).unwrap();
        for _ in 0..repeat {
            expanded.apply(&TraceEvent::Access { access, repeat: 1 }).unwrap();
        }
    }
    assert_eq!(collapsed.total(), expanded.total());
}
