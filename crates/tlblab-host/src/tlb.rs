//! TLB structures found in CPUID, their plausibility, and the merge with the nearest preset.
//!
//! Each decoder (leaf 0x18, leaf 2, AMD 0x8000_0005/6/19) returns a [`TlbReport`]: the
//! structures it found, those it rejected as implausible, and the (level, access kind, page size)
//! *triples it vouches for*: those it describes, including as absent. Intel's leaves enumerate
//! every TLB, so they vouch for everything; an AMD leaf vouches only for its own sizes and levels,
//! and only when it is present. [`assemble`] then takes every structure found, and copies from
//! the nearest preset whatever no source vouched for (a leaf missing, hidden or implausible),
//! plus any level-1 4K TLB the model requires that the sources left out.

use crate::provenance::{Origin, Provenance};
use tlblab_sim::machine::raw::{RawMachine, RawTlb};
use tlblab_types::{AccessKind, PageSize};

/// Largest entry count believed: no x86 TLB comes near it (the largest known hold 4,096).
pub const MAX_PLAUSIBLE_ENTRIES: u32 = 65_536;
/// Largest associativity the model takes (`tlblab-sim` refuses more).
pub const MAX_MODEL_WAYS: u32 = 128;

/// One TLB structure as a CPUID leaf describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlbFound {
    /// 1 or 2 (anything else is rejected).
    pub level: u8,
    /// Access kinds it serves.
    pub accesses: Vec<AccessKind>,
    /// Page sizes it holds.
    pub page_sizes: Vec<PageSize>,
    /// Entries.
    pub entries: u32,
    /// Ways (equal to `entries` when fully associative).
    pub ways: u32,
    /// 1 GiB translations held as 2 MiB entries.
    pub splinter_1g: bool,
    /// Where: `CPUID leaf 0x18 subleaf 1`.
    pub source: String,
    /// What it says, in words.
    pub detail: String,
}

/// A structure a leaf described but that cannot be believed or modelled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Where.
    pub source: String,
    /// What it said.
    pub detail: String,
    /// Why it was not used.
    pub reason: String,
}

/// What one CPUID source says about the TLBs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlbReport {
    /// Plausible structures, in the order found.
    pub found: Vec<TlbFound>,
    /// Implausible ones.
    pub rejected: Vec<Rejected>,
    /// Triples this source describes (as present or absent).
    pub vouched: Coverage,
    /// Remarks for the provenance (skipped subleaves, assumptions).
    pub notes: Vec<String>,
    /// Why some triples are not vouched for (a leaf missing or hidden, a structure rejected):
    /// the reason given for each structure copied from the preset in their place.
    pub gaps: Vec<String>,
}

impl TlbReport {
    /// An empty report vouching for `vouched`.
    pub fn vouching(vouched: Coverage) -> TlbReport {
        TlbReport { vouched, ..TlbReport::default() }
    }

    /// Adds a structure if plausible; otherwise records it as rejected and stops vouching for
    /// its triples (at both levels when its level is itself implausible), so that the preset
    /// fills them. `note` (may be empty) is appended to its detail.
    pub fn add(&mut self, mut found: TlbFound, note: &str) {
        if !note.is_empty() {
            found.detail = format!("{}; {note}", found.detail);
        }
        match plausible(&found) {
            Ok(()) => self.found.push(found),
            Err(reason) => {
                let levels: &[u8] =
                    if found.level == 1 || found.level == 2 { &[found.level] } else { &[1, 2] };
                for &level in levels {
                    for &a in &found.accesses {
                        for &s in &found.page_sizes {
                            self.vouched.set(level, a, s, false);
                        }
                    }
                }
                self.gaps.push(format!("{} is implausible ({reason})", found.source));
                self.rejected.push(Rejected { source: found.source, detail: found.detail, reason });
            }
        }
    }
}

/// Why a structure cannot be believed, or cannot be modelled.
pub fn plausible(t: &TlbFound) -> Result<(), String> {
    if t.level != 1 && t.level != 2 {
        return Err(format!("level {} (the model has levels 1 and 2)", t.level));
    }
    if t.accesses.is_empty() || t.page_sizes.is_empty() {
        return Err("no access kind or no page size".into());
    }
    if t.entries == 0 || t.ways == 0 {
        return Err(format!("{} entries, {} ways", t.entries, t.ways));
    }
    if t.ways > t.entries || !t.entries.is_multiple_of(t.ways) {
        return Err(format!("{} entries are not a whole number of {}-way sets", t.entries, t.ways));
    }
    if t.entries > MAX_PLAUSIBLE_ENTRIES {
        return Err(format!(
            "{} entries: more than {MAX_PLAUSIBLE_ENTRIES}, no x86 TLB comes near it",
            t.entries
        ));
    }
    if t.ways > MAX_MODEL_WAYS {
        return Err(format!(
            "{} ways: the model takes at most {MAX_MODEL_WAYS} (a larger fully-associative \
             structure cannot be modelled)",
            t.ways
        ));
    }
    Ok(())
}

/// A set of (level 1–2, access kind, page size) triples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coverage([[[bool; 3]; 3]; 2]);

impl Coverage {
    /// Whether the triple is in the set (levels other than 1 and 2 never are).
    pub fn get(&self, level: u8, a: AccessKind, s: PageSize) -> bool {
        matches!(level, 1 | 2) && self.0[usize::from(level - 1)][a.index()][s.index()]
    }

    /// Adds or removes a triple (levels other than 1 and 2 are ignored).
    pub fn set(&mut self, level: u8, a: AccessKind, s: PageSize, value: bool) {
        if matches!(level, 1 | 2) {
            self.0[usize::from(level - 1)][a.index()][s.index()] = value;
        }
    }

    /// Adds every triple of `level` × `accesses` × `sizes`.
    pub fn add(&mut self, level: u8, accesses: &[AccessKind], sizes: &[PageSize]) {
        for &a in accesses {
            for &s in sizes {
                self.set(level, a, s, true);
            }
        }
    }
}

/// Every triple: what an enumeration of all TLBs (Intel leaves 0x18 and 2) vouches for.
pub fn all_triples() -> Coverage {
    Coverage([[[true; 3]; 3]; 2])
}

/// The structures of the host preset and the provenance of each.
#[derive(Clone, Debug)]
pub struct Geometry {
    /// In preset order: found ones first, then copied ones.
    pub tlbs: Vec<RawTlb>,
    /// One entry per structure, plus one per rejection and note.
    pub provenance: Vec<Provenance>,
}

/// The CPUID source chosen for the TLBs, or why there is none.
pub struct TlbSource<'a> {
    /// What it is called in provenance (`CPUID leaf 0x18`).
    pub name: &'a str,
    /// What it said, or why nothing (`Err`).
    pub report: Result<TlbReport, String>,
}

/// Builds the TLB list: every structure CPUID found, then the nearest preset's structures for
/// whatever CPUID did not vouch for, then any level-1 4K TLB the model requires.
/// `virtualised` marks CPUID figures unverified (a hypervisor may fake them).
pub fn assemble(
    source: TlbSource<'_>,
    preset_name: &str,
    preset: &RawMachine,
    virtualised: bool,
) -> Result<Geometry, String> {
    let mut out = Geometry { tlbs: Vec::new(), provenance: Vec::new() };
    let mut occupied = Coverage::default();
    let (vouched, fallback_reason) = match &source.report {
        Ok(report) => {
            for note in &report.notes {
                out.provenance.push(Provenance::new("tlb", "(note)", Origin::Informative, note));
            }
            for r in &report.rejected {
                out.provenance.push(Provenance::new(
                    "tlb",
                    "(rejected)",
                    Origin::Informative,
                    format!("{}: {} — not used: {}", r.source, r.detail, r.reason),
                ));
            }
            for found in &report.found {
                place_found(found, &mut occupied, &mut out, virtualised);
                compare_with_preset(found, preset_name, preset, &mut out);
            }
            let why = if report.gaps.is_empty() {
                format!("{} did not describe it", source.name)
            } else {
                report.gaps.join("; ")
            };
            (report.vouched, why)
        }
        Err(why) => (Coverage::default(), why.clone()),
    };
    // Preset structures for what no source vouched for.
    for tlb in &preset.tlb {
        let free =
            |l: u8, a: AccessKind, s: PageSize| !vouched.get(l, a, s) && !occupied.get(l, a, s);
        if let Some(copy) = fit(tlb, &tlb.accesses, free) {
            let why = format!("{fallback_reason}; copied from preset {preset_name}");
            place_copy(copy, tlb, &why, &mut occupied, &mut out);
        }
    }
    // The model needs a level-1 4K TLB for every access kind.
    let lacking = |occ: &Coverage| -> Vec<AccessKind> {
        AccessKind::ALL.into_iter().filter(|&a| !occ.get(1, a, PageSize::Size4K)).collect()
    };
    let missing = lacking(&occupied);
    if !missing.is_empty() {
        for tlb in preset.tlb.iter().filter(|t| t.level == 1) {
            let wanted: Vec<AccessKind> =
                tlb.accesses.iter().copied().filter(|a| lacking(&occupied).contains(a)).collect();
            if wanted.is_empty() || !tlb.page_sizes.contains(&PageSize::Size4K) {
                continue;
            }
            // Only the 4K part, plus sizes the source did not declare absent.
            let free = |l: u8, a: AccessKind, s: PageSize| {
                !occupied.get(l, a, s) && (s == PageSize::Size4K || !vouched.get(l, a, s))
            };
            if let Some(copy) = fit(tlb, &wanted, free) {
                let names: Vec<&str> = wanted.iter().map(|a| a.name()).collect();
                let why = format!(
                    "{} lists no level-1 TLB for 4K {} pages, which the model requires; copied \
                     from preset {preset_name}",
                    source.name,
                    names.join("/")
                );
                place_copy(copy, tlb, &why, &mut occupied, &mut out);
            }
        }
    }
    let still = lacking(&occupied);
    if !still.is_empty() {
        let names: Vec<&str> = still.iter().map(|a| a.name()).collect();
        return Err(format!(
            "no level-1 4K TLB for {} in CPUID nor in preset {preset_name}",
            names.join("/")
        ));
    }
    unique_names(&mut out.tlbs);
    Ok(out)
}

fn place_found(found: &TlbFound, occupied: &mut Coverage, out: &mut Geometry, virtualised: bool) {
    // A size whose triple another structure already holds is dropped from this one: the model
    // allows one structure per (level, access kind, page size).
    let mut sizes = Vec::new();
    let mut dropped = Vec::new();
    for &s in &found.page_sizes {
        if found.accesses.iter().any(|&a| occupied.get(found.level, a, s)) {
            dropped.push(s);
        } else {
            sizes.push(s);
        }
    }
    let splinter = found.splinter_1g
        && sizes.contains(&PageSize::Size2M)
        && !found.accesses.iter().any(|&a| occupied.get(found.level, a, PageSize::Size1G));
    if sizes.is_empty() {
        out.provenance.push(Provenance::new(
            "tlb",
            "(overlap)",
            Origin::Informative,
            format!(
                "{}: {} — not used: an earlier structure holds the same level, accesses and page \
                 sizes",
                found.source, found.detail
            ),
        ));
        return;
    }
    occupied.add(found.level, &found.accesses, &sizes);
    if splinter {
        occupied.add(found.level, &found.accesses, &[PageSize::Size1G]);
    }
    let name = structure_name(found.level, &found.accesses, &sizes);
    let mut source = format!("{}: {}", found.source, found.detail);
    if !dropped.is_empty() {
        source.push_str(&format!(
            "; {} pages left to an earlier structure of the same level",
            size_list(&dropped)
        ));
    }
    if virtualised {
        source.push_str(" (as the hypervisor reports it)");
    }
    out.provenance.push(Provenance::new(
        format!("tlb {name:?}"),
        geometry_text(found.entries, found.ways),
        Origin::Read,
        source.clone(),
    ));
    out.tlbs.push(RawTlb {
        name,
        level: found.level,
        accesses: found.accesses.clone(),
        page_sizes: sizes,
        splinter_1g: splinter,
        entries: found.entries,
        ways: found.ways,
        source,
        unverified: virtualised,
    });
}

/// Notes where CPUID and the nearest preset disagree on the same structure (same level, accesses
/// and page sizes): a hint that one of them is wrong, or that the preset is for another part.
fn compare_with_preset(
    found: &TlbFound,
    preset_name: &str,
    preset: &RawMachine,
    out: &mut Geometry,
) {
    let same = preset.tlb.iter().find(|t| {
        t.level == found.level && t.accesses == found.accesses && t.page_sizes == found.page_sizes
    });
    if let (Some(t), Some(last)) = (same, out.provenance.last_mut()) {
        if (t.entries, t.ways) != (found.entries, found.ways) && last.origin == Origin::Read {
            last.source.push_str(&format!(
                "; differs from preset {preset_name} ({:?}: {}, from {})",
                t.name,
                geometry_text(t.entries, t.ways),
                t.source
            ));
        }
    }
}

/// The part of `tlb` that fits where `free` allows: the access kinds (among `accesses`) with at
/// least one free page size, and the sizes free for all of them.
fn fit(
    tlb: &RawTlb,
    accesses: &[AccessKind],
    free: impl Fn(u8, AccessKind, PageSize) -> bool,
) -> Option<RawTlb> {
    let held: Vec<PageSize> = tlb.page_sizes.clone();
    let kinds: Vec<AccessKind> =
        accesses.iter().copied().filter(|&a| held.iter().any(|&s| free(tlb.level, a, s))).collect();
    if kinds.is_empty() {
        return None;
    }
    let sizes: Vec<PageSize> =
        held.into_iter().filter(|&s| kinds.iter().all(|&a| free(tlb.level, a, s))).collect();
    if sizes.is_empty() {
        return None;
    }
    let splinter = tlb.splinter_1g
        && sizes.contains(&PageSize::Size2M)
        && kinds.iter().all(|&a| free(tlb.level, a, PageSize::Size1G));
    Some(RawTlb { accesses: kinds, page_sizes: sizes, splinter_1g: splinter, ..tlb.clone() })
}

fn place_copy(
    copy: RawTlb,
    original: &RawTlb,
    why: &str,
    occupied: &mut Coverage,
    out: &mut Geometry,
) {
    occupied.add(copy.level, &copy.accesses, &copy.page_sizes);
    if copy.splinter_1g {
        occupied.add(copy.level, &copy.accesses, &[PageSize::Size1G]);
    }
    let partial = copy.accesses != original.accesses || copy.page_sizes != original.page_sizes;
    let name = if partial {
        structure_name(copy.level, &copy.accesses, &copy.page_sizes)
    } else {
        original.name.clone()
    };
    let mut source = format!("{why}: {}", original.source);
    if partial {
        let kinds: Vec<&str> = copy.accesses.iter().map(|a| a.name()).collect();
        source.push_str(&format!(
            " (only its {} {} part: CPUID gave the rest)",
            kinds.join("/"),
            size_list(&copy.page_sizes)
        ));
    }
    out.provenance.push(Provenance::new(
        format!("tlb {name:?}"),
        geometry_text(copy.entries, copy.ways),
        Origin::Fallback,
        format!("{source} [preset structure {:?}]", original.name),
    ));
    out.tlbs.push(RawTlb { name, source, unverified: true, ..copy });
}

/// `L1 dTLB 4K`, `L1 iTLB 2M`, `STLB 4K+2M`, `L1 dTLB load 4K`, `L2 dTLB 1G`.
pub fn structure_name(level: u8, accesses: &[AccessKind], sizes: &[PageSize]) -> String {
    let has = |a: AccessKind| accesses.contains(&a);
    let kind = match (has(AccessKind::Load), has(AccessKind::Store), has(AccessKind::Fetch)) {
        (true, true, true) if level == 2 => "STLB".to_owned(),
        (true, true, true) => format!("L{level} TLB"),
        (true, true, false) => format!("L{level} dTLB"),
        (true, false, false) => format!("L{level} dTLB load"),
        (false, true, false) => format!("L{level} dTLB store"),
        (false, false, true) => format!("L{level} iTLB"),
        _ => format!("L{level} TLB"),
    };
    format!("{kind} {}", size_list(sizes))
}

/// `4K+2M`.
pub fn size_list(sizes: &[PageSize]) -> String {
    let names: Vec<String> = sizes.iter().map(PageSize::to_string).collect();
    names.join("+")
}

/// `1536 entries, 12-way` or `64 entries, fully associative`.
pub fn geometry_text(entries: u32, ways: u32) -> String {
    if entries == ways {
        format!("{entries} entries, fully associative")
    } else {
        format!("{entries} entries, {ways}-way")
    }
}

fn unique_names(tlbs: &mut [RawTlb]) {
    for i in 1..tlbs.len() {
        let base = tlbs[i].name.clone();
        let mut n = 2;
        while tlbs[..i].iter().any(|t| t.name == tlbs[i].name) {
            tlbs[i].name = format!("{base} #{n}");
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(
        level: u8,
        accesses: &[AccessKind],
        sizes: &[PageSize],
        entries: u32,
        ways: u32,
    ) -> TlbFound {
        TlbFound {
            level,
            accesses: accesses.to_vec(),
            page_sizes: sizes.to_vec(),
            entries,
            ways,
            splinter_1g: false,
            source: "test".into(),
            detail: "test".into(),
        }
    }

    #[test]
    fn implausible_geometries_are_named() {
        use AccessKind::*;
        use PageSize::*;
        assert!(plausible(&found(1, &[Load], &[Size4K], 64, 4)).is_ok());
        assert!(plausible(&found(1, &[Load], &[Size4K], 0, 4)).unwrap_err().contains("0 entries"));
        assert!(plausible(&found(1, &[Load], &[Size4K], 100, 8))
            .unwrap_err()
            .contains("whole number"));
        assert!(plausible(&found(3, &[Load], &[Size4K], 64, 4)).unwrap_err().contains("level 3"));
        assert!(plausible(&found(1, &[Load], &[Size4K], 256, 256)).unwrap_err().contains("128"));
        assert!(plausible(&found(2, &[Load], &[Size4K], 1 << 20, 16)).is_err());
    }

    #[test]
    fn a_rejected_structure_stops_vouching_for_its_triples() {
        use AccessKind::*;
        use PageSize::*;
        let mut r = TlbReport::vouching(all_triples());
        r.add(found(2, &[Load, Store, Fetch], &[Size4K, Size2M], 1536, 0), "");
        assert!(r.found.is_empty() && r.rejected.len() == 1);
        assert!(!r.vouched.get(2, Load, Size4K) && !r.vouched.get(2, Fetch, Size2M));
        assert!(r.vouched.get(2, Load, Size1G) && r.vouched.get(1, Load, Size4K));
    }

    #[test]
    fn duplicate_names_are_numbered() {
        let t = |name: &str| RawTlb {
            name: name.into(),
            level: 1,
            accesses: vec![AccessKind::Load],
            page_sizes: vec![PageSize::Size4K],
            splinter_1g: false,
            entries: 4,
            ways: 4,
            source: String::new(),
            unverified: false,
        };
        let mut tlbs = [t("A 1G"), t("A 1G"), t("A 1G"), t("B")];
        unique_names(&mut tlbs);
        let names: Vec<&str> = tlbs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["A 1G", "A 1G #2", "A 1G #3", "B"]);
    }

    #[test]
    fn names() {
        use AccessKind::*;
        use PageSize::*;
        assert_eq!(structure_name(2, &[Load, Store, Fetch], &[Size4K, Size2M]), "STLB 4K+2M");
        assert_eq!(structure_name(1, &[Load, Store], &[Size1G]), "L1 dTLB 1G");
        assert_eq!(
            structure_name(1, &[Store], &[Size4K, Size2M, Size1G]),
            "L1 dTLB store 4K+2M+1G"
        );
        assert_eq!(structure_name(2, &[Fetch], &[Size4K, Size2M]), "L2 iTLB 4K+2M");
        assert_eq!(geometry_text(64, 64), "64 entries, fully associative");
    }
}
