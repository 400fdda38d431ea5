//! AMD TLB leaves (AMD APM vol. 3, appendix E; the family 17h/19h PPRs):
//!
//! - 0x8000_0005 (L1): EAX for 2M/4M pages, EBX for 4K pages; each register holds the data TLB in
//!   bits 31:24 (associativity) and 23:16 (entries), the instruction TLB in 15:8 and 7:0.
//!   Associativity: 1 direct mapped, n n-way, 0xFF fully associative.
//! - 0x8000_0006 (L2): EAX for 2M/4M pages, EBX for 4K pages; data TLB in 31:28 (associativity
//!   code) and 27:16 (entries), instruction TLB in 15:12 and 11:0.
//! - 0x8000_0019 (1G pages): EAX for L1, EBX for L2, laid out as 0x8000_0006.
//!
//! The L2 associativity is a code: 0 disabled, 1 direct mapped, 2/3/4 that many ways, 5 6-way,
//! 6 8-way, 8 16-way, 0xA 32-way, 0xB 48-way, 0xC 64-way, 0xD 96-way, 0xE 128-way, 0xF fully
//! associative. There is no code for 12 or 24 ways, and Zen's L2 dTLB is skewed (its ways are
//! split by page size), so the codes for 4K and 2M pages can differ for one shared structure.
//!
//! AMD's TLBs hold several page sizes in the same entries (Zen's L1 dTLB: 64 entries for 4K, 2M
//! and 1G), and the leaves list them once per size. Sizes with the same entry count at the same
//! level and side are therefore taken as one structure.

use super::{bits, CpuidDump, Regs};
use crate::tlb::{Coverage, TlbFound, TlbReport};
use tlblab_sim::machine::raw::RawMachine;
use tlblab_types::{AccessKind, PageSize};

/// L1 TLBs for 4K and 2M pages.
pub const LEAF_L1: u32 = 0x8000_0005;
/// L2 TLBs for 4K and 2M pages.
pub const LEAF_L2: u32 = 0x8000_0006;
/// L1 and L2 TLBs for 1G pages.
pub const LEAF_1G: u32 = 0x8000_0019;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Data,
    Instruction,
}

impl Side {
    fn accesses(self) -> Vec<AccessKind> {
        match self {
            Side::Data => vec![AccessKind::Load, AccessKind::Store],
            Side::Instruction => vec![AccessKind::Fetch],
        }
    }
    fn name(self) -> &'static str {
        match self {
            Side::Data => "dTLB",
            Side::Instruction => "iTLB",
        }
    }
}

/// One (level, side, page size) as a leaf reports it.
#[derive(Clone, Debug)]
struct Field {
    leaf: u32,
    level: u8,
    side: Side,
    size: PageSize,
    entries: u32,
    /// `None`: disabled or a code with no way count.
    ways: Option<u32>,
    /// `CPUID 0x80000006 EBX[31:16]: 2048 entries, 8-way (code 6)`.
    text: String,
}

/// The associativity of an L1 field (0x8000_0005): the byte itself, 0xFF fully associative.
fn l1_ways(code: u32, entries: u32) -> Option<u32> {
    match code {
        0 => None,
        0xFF => Some(entries),
        n => Some(n),
    }
}

/// The associativity code of an L2 or 1G field.
fn l2_ways(code: u32, entries: u32) -> Option<u32> {
    match code {
        1 => Some(1),
        2..=4 => Some(code),
        5 => Some(6),
        6 => Some(8),
        8 => Some(16),
        0xA => Some(32),
        0xB => Some(48),
        0xC => Some(64),
        0xD => Some(96),
        0xE => Some(128),
        0xF => Some(entries),
        _ => None, // 0 disabled; 7 and 9 name no way count for a TLB
    }
}

fn field_text(leaf: u32, reg: &str, hi: u32, entries: u32, ways: Option<u32>, code: u32) -> String {
    let assoc = match ways {
        Some(w) if w == entries && entries > 0 => "fully associative".to_owned(),
        Some(w) => format!("{w}-way"),
        None => "no associativity".to_owned(),
    };
    format!("CPUID {leaf:#x} {reg}[{hi}:{}]: {entries} entries, {assoc} (code {code:#x})", hi - 15)
}

/// The fields of one register laid out as 0x8000_0005 (8-bit fields).
fn l1_fields(leaf: u32, reg_name: &str, reg: u32, size: PageSize) -> Vec<Field> {
    let mut out = Vec::new();
    for (side, lo) in [(Side::Data, 16), (Side::Instruction, 0)] {
        let entries = bits(reg, lo, lo + 7);
        let code = bits(reg, lo + 8, lo + 15);
        let ways = l1_ways(code, entries);
        out.push(Field {
            leaf,
            level: 1,
            side,
            size,
            entries,
            ways,
            text: field_text(leaf, reg_name, lo + 15, entries, ways, code),
        });
    }
    out
}

/// The fields of one register laid out as 0x8000_0006 (12-bit entries, 4-bit code).
fn l2_fields(leaf: u32, reg_name: &str, reg: u32, level: u8, size: PageSize) -> Vec<Field> {
    let mut out = Vec::new();
    for (side, lo) in [(Side::Data, 16), (Side::Instruction, 0)] {
        let entries = bits(reg, lo, lo + 11);
        let code = bits(reg, lo + 12, lo + 15);
        let ways = l2_ways(code, entries);
        out.push(Field {
            leaf,
            level,
            side,
            size,
            entries,
            ways,
            text: field_text(leaf, reg_name, lo + 15, entries, ways, code),
        });
    }
    out
}

/// A leaf's registers if present and not all zero, else why not.
fn present(dump: &CpuidDump, leaf: u32) -> Result<Regs, String> {
    match dump.leaf(leaf, 0) {
        None => Err(format!("CPUID {leaf:#x} is not reported")),
        Some(r) if r.is_zero() => Err(format!("CPUID {leaf:#x} is all zeros (hidden)")),
        Some(r) => Ok(r),
    }
}

/// Decodes the three leaves. Each present leaf vouches for its own levels and sizes; a missing or
/// zeroed leaf leaves them to the preset (noted). `Err` only when no leaf is present.
/// `preset` supplies the associativity of a structure whose page sizes report different codes
/// (a skewed TLB), and the 1G splintering that no leaf reports.
pub fn decode(
    dump: &CpuidDump,
    preset_name: &str,
    preset: &RawMachine,
) -> Result<TlbReport, String> {
    let mut fields = Vec::new();
    let mut vouched = Coverage::default();
    let mut missing = Vec::new();
    let all = [AccessKind::Load, AccessKind::Store, AccessKind::Fetch];
    let small = [PageSize::Size4K, PageSize::Size2M];
    match present(dump, LEAF_L1) {
        Ok(r) => {
            fields.extend(l1_fields(LEAF_L1, "EBX", r.ebx, PageSize::Size4K));
            fields.extend(l1_fields(LEAF_L1, "EAX", r.eax, PageSize::Size2M));
            vouched.add(1, &all, &small);
        }
        Err(why) => missing.push(why),
    }
    match present(dump, LEAF_L2) {
        Ok(r) => {
            fields.extend(l2_fields(LEAF_L2, "EBX", r.ebx, 2, PageSize::Size4K));
            fields.extend(l2_fields(LEAF_L2, "EAX", r.eax, 2, PageSize::Size2M));
            vouched.add(2, &all, &small);
        }
        Err(why) => missing.push(why),
    }
    match present(dump, LEAF_1G) {
        Ok(r) => {
            fields.extend(l2_fields(LEAF_1G, "EAX", r.eax, 1, PageSize::Size1G));
            fields.extend(l2_fields(LEAF_1G, "EBX", r.ebx, 2, PageSize::Size1G));
            vouched.add(1, &all, &[PageSize::Size1G]);
            vouched.add(2, &all, &[PageSize::Size1G]);
        }
        Err(why) => missing.push(why),
    }
    if fields.is_empty() {
        return Err(missing.join("; "));
    }
    let mut report = TlbReport::vouching(vouched);
    report.gaps = missing;
    for level in [1u8, 2] {
        for side in [Side::Data, Side::Instruction] {
            group(&fields, level, side, preset_name, preset, &mut report);
        }
    }
    Ok(report)
}

/// Turns the fields of one (level, side) into structures: sizes with equal entry counts share one.
fn group(
    fields: &[Field],
    level: u8,
    side: Side,
    preset_name: &str,
    preset: &RawMachine,
    report: &mut TlbReport,
) {
    let mine: Vec<&Field> =
        fields.iter().filter(|f| f.level == level && f.side == side && f.entries > 0).collect();
    let mut done = vec![false; mine.len()];
    for i in 0..mine.len() {
        if done[i] {
            continue;
        }
        let picked: Vec<usize> =
            (i..mine.len()).filter(|&j| !done[j] && mine[j].entries == mine[i].entries).collect();
        for &j in &picked {
            done[j] = true;
        }
        let members: Vec<&Field> = picked.iter().map(|&j| mine[j]).collect();
        let entries = members[0].entries;
        let sizes: Vec<PageSize> = members.iter().map(|f| f.size).collect();
        let texts: Vec<&str> = members.iter().map(|f| f.text.as_str()).collect();
        let mut notes = Vec::new();
        let reported: Vec<u32> = members.iter().filter_map(|f| f.ways).collect();
        let matching = preset.tlb.iter().find(|t| {
            t.level == level
                && t.accesses == side.accesses()
                && sizes.iter().all(|s| t.page_sizes.contains(s))
        });
        let ways = if reported.len() == members.len() && reported.iter().all(|&w| w == reported[0])
        {
            reported[0]
        } else {
            let max = reported.iter().copied().max().unwrap_or(0);
            match matching {
                Some(t)
                    if t.entries == entries && t.ways >= max && entries.is_multiple_of(t.ways) =>
                {
                    notes.push(format!(
                        "the page sizes report different associativity (a skewed TLB, which \
                         the model cannot represent): {} ways from preset {preset_name}",
                        t.ways
                    ));
                    t.ways
                }
                _ => {
                    notes.push(format!(
                        "the page sizes report different associativity (a skewed TLB): the \
                         largest, {max}, taken"
                    ));
                    max
                }
            }
        };
        if sizes.len() > 1 {
            notes.push("one structure: the same entry count for each page size".into());
        }
        // No leaf says whether 1G pages are splintered into 2M entries; the preset does.
        let has_1g_here = fields.iter().any(|f| {
            f.level == level && f.side == side && f.size == PageSize::Size1G && f.entries > 0
        });
        let splinter = level == 2
            && sizes.contains(&PageSize::Size2M)
            && !has_1g_here
            && matching.is_some_and(|t| t.splinter_1g);
        if splinter {
            notes.push(format!(
                "1G pages held as 2M entries, as preset {preset_name} says (no leaf reports it)"
            ));
        }
        let mut leaves: Vec<String> = Vec::new();
        for f in &members {
            let leaf = format!("CPUID {:#x}", f.leaf);
            if !leaves.contains(&leaf) {
                leaves.push(leaf);
            }
        }
        report.add(
            TlbFound {
                level,
                accesses: side.accesses(),
                page_sizes: sizes,
                entries,
                ways,
                splinter_1g: splinter,
                source: leaves.join(" and "),
                detail: format!("L{level} {}: {}", side.name(), texts.join("; ")),
            },
            &notes.join("; "),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l2_codes() {
        assert_eq!(l2_ways(6, 2048), Some(8));
        assert_eq!(l2_ways(5, 1536), Some(6));
        assert_eq!(l2_ways(0xF, 64), Some(64));
        assert_eq!(l2_ways(0, 0), None);
        assert_eq!(l2_ways(9, 2048), None);
    }

    #[test]
    fn l1_fields_of_a_zen_l1() {
        // 64 entries fully associative for data and instructions.
        let f = l1_fields(LEAF_L1, "EBX", 0xff40_ff40, PageSize::Size4K);
        assert_eq!((f[0].side, f[0].entries, f[0].ways), (Side::Data, 64, Some(64)));
        assert_eq!((f[1].side, f[1].entries, f[1].ways), (Side::Instruction, 64, Some(64)));
        assert!(
            f[0].text.starts_with("CPUID 0x80000005 EBX[31:16]: 64 entries, fully"),
            "{}",
            f[0].text
        );
    }
}
