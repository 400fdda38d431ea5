//! Intel CPUID leaf 2: one-byte cache and TLB descriptors (Intel SDM vol. 2A, CPUID, table 3-12
//! "Encoding of CPUID Leaf 2 Descriptors"). Only the TLB descriptors are decoded here.
//!
//! EAX[7:0] is an iteration count to skip; a register with bit 31 set carries no descriptors.
//! Descriptor 0xFE means "TLB information is in leaf 0x18". A descriptor for 4 MByte pages
//! describes the entries that hold 2 MiB pages in 64-bit mode. Level: the "Shared 2nd-Level TLB"
//! descriptors are level 2; the others level 1, except that when two level-1 descriptors cover
//! the same accesses and page size (e.g. "Data TLB0" and "Data TLB1"), the larger one is the
//! second level.

use super::CpuidDump;
use crate::tlb::{all_triples, TlbFound, TlbReport};
use tlblab_types::{AccessKind, PageSize};

/// The leaf.
pub const LEAF: u32 = 2;
/// "CPUID leaf 2 does not report TLB descriptor information; use CPUID leaf 18H".
pub const DEFER_TO_LEAF_18: u8 = 0xFE;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Instruction,
    Data,
    Shared,
}

#[derive(Clone, Copy, Debug)]
enum Assoc {
    Ways(u32),
    Full,
    /// The descriptor gives no associativity.
    NotGiven,
}

#[derive(Clone, Copy, Debug)]
struct Part {
    side: Side,
    sizes: &'static [PageSize],
    entries: u32,
    assoc: Assoc,
}

const K4: &[PageSize] = &[PageSize::Size4K];
const M2: &[PageSize] = &[PageSize::Size2M];
const G1: &[PageSize] = &[PageSize::Size1G];
const K4M2: &[PageSize] = &[PageSize::Size4K, PageSize::Size2M];

const fn part(side: Side, sizes: &'static [PageSize], entries: u32, assoc: Assoc) -> Part {
    Part { side, sizes, entries, assoc }
}

use Assoc::{Full, NotGiven, Ways};
use Side::{Data, Instruction, Shared};

/// (descriptor, SDM wording, structures).
const TABLE: &[(u8, &str, &[Part])] = &[
    (0x01, "Instruction TLB: 4 KByte pages, 4-way set associative, 32 entries", &[part(Instruction, K4, 32, Ways(4))]),
    (0x02, "Instruction TLB: 4 MByte pages, fully associative, 2 entries", &[part(Instruction, M2, 2, Full)]),
    (0x03, "Data TLB: 4 KByte pages, 4-way set associative, 64 entries", &[part(Data, K4, 64, Ways(4))]),
    (0x04, "Data TLB: 4 MByte pages, 4-way set associative, 8 entries", &[part(Data, M2, 8, Ways(4))]),
    (0x05, "Data TLB1: 4 MByte pages, 4-way set associative, 32 entries", &[part(Data, M2, 32, Ways(4))]),
    (0x0B, "Instruction TLB: 4 MByte pages, 4-way set associative, 4 entries", &[part(Instruction, M2, 4, Ways(4))]),
    (0x4F, "Instruction TLB: 4 KByte pages, 32 entries", &[part(Instruction, K4, 32, NotGiven)]),
    (0x50, "Instruction TLB: 4 KByte and 2-MByte or 4-MByte pages, 64 entries", &[part(Instruction, K4M2, 64, NotGiven)]),
    (0x51, "Instruction TLB: 4 KByte and 2-MByte or 4-MByte pages, 128 entries", &[part(Instruction, K4M2, 128, NotGiven)]),
    (0x52, "Instruction TLB: 4 KByte and 2-MByte or 4-MByte pages, 256 entries", &[part(Instruction, K4M2, 256, NotGiven)]),
    (0x55, "Instruction TLB: 2-MByte or 4-MByte pages, fully associative, 7 entries", &[part(Instruction, M2, 7, Full)]),
    (0x56, "Data TLB0: 4 MByte pages, 4-way set associative, 16 entries", &[part(Data, M2, 16, Ways(4))]),
    (0x57, "Data TLB0: 4 KByte pages, 4-way associative, 16 entries", &[part(Data, K4, 16, Ways(4))]),
    (0x59, "Data TLB0: 4 KByte pages, fully associative, 16 entries", &[part(Data, K4, 16, Full)]),
    (0x5A, "Data TLB0: 2 MByte or 4 MByte pages, 4-way set associative, 32 entries", &[part(Data, M2, 32, Ways(4))]),
    (0x5B, "Data TLB: 4 KByte and 4 MByte pages, 64 entries", &[part(Data, K4M2, 64, NotGiven)]),
    (0x5C, "Data TLB: 4 KByte and 4 MByte pages, 128 entries", &[part(Data, K4M2, 128, NotGiven)]),
    (0x5D, "Data TLB: 4 KByte and 4 MByte pages, 256 entries", &[part(Data, K4M2, 256, NotGiven)]),
    (0x61, "Instruction TLB: 4 KByte pages, fully associative, 48 entries", &[part(Instruction, K4, 48, Full)]),
    (0x63, "Data TLB: 2 MByte or 4 MByte pages, 4-way set associative, 32 entries and a separate array with 1 GByte pages, 4-way set associative, 4 entries", &[part(Data, M2, 32, Ways(4)), part(Data, G1, 4, Ways(4))]),
    (0x64, "Data TLB: 4 KByte pages, 4-way set associative, 512 entries", &[part(Data, K4, 512, Ways(4))]),
    (0x6A, "uTLB: 4 KByte pages, 8-way set associative, 64 entries", &[part(Data, K4, 64, Ways(8))]),
    (0x6B, "DTLB: 4 KByte pages, 8-way set associative, 256 entries", &[part(Data, K4, 256, Ways(8))]),
    (0x6C, "DTLB: 2M/4M pages, 8-way set associative, 128 entries", &[part(Data, M2, 128, Ways(8))]),
    (0x6D, "DTLB: 1 GByte pages, fully associative, 16 entries", &[part(Data, G1, 16, Full)]),
    (0x76, "Instruction TLB: 2M/4M pages, fully associative, 8 entries", &[part(Instruction, M2, 8, Full)]),
    (0xA0, "DTLB: 4k pages, fully associative, 32 entries", &[part(Data, K4, 32, Full)]),
    (0xB0, "Instruction TLB: 4 KByte pages, 4-way set associative, 128 entries", &[part(Instruction, K4, 128, Ways(4))]),
    (0xB1, "Instruction TLB: 2M pages, 4-way, 8 entries or 4M pages, 4-way, 4 entries", &[part(Instruction, M2, 8, Ways(4))]),
    (0xB2, "Instruction TLB: 4KByte pages, 4-way set associative, 64 entries", &[part(Instruction, K4, 64, Ways(4))]),
    (0xB3, "Data TLB: 4 KByte pages, 4-way set associative, 128 entries", &[part(Data, K4, 128, Ways(4))]),
    (0xB4, "Data TLB1: 4 KByte pages, 4-way associative, 256 entries", &[part(Data, K4, 256, Ways(4))]),
    (0xB5, "Instruction TLB: 4KByte pages, 8-way set associative, 64 entries", &[part(Instruction, K4, 64, Ways(8))]),
    (0xB6, "Instruction TLB: 4KByte pages, 8-way set associative, 128 entries", &[part(Instruction, K4, 128, Ways(8))]),
    (0xBA, "Data TLB1: 4 KByte pages, 4-way associative, 64 entries", &[part(Data, K4, 64, Ways(4))]),
    (0xC0, "Data TLB: 4 KByte and 4 MByte pages, 4-way associative, 8 entries", &[part(Data, K4M2, 8, Ways(4))]),
    (0xC1, "Shared 2nd-Level TLB: 4 KByte/2MByte pages, 8-way associative, 1024 entries", &[part(Shared, K4M2, 1024, Ways(8))]),
    (0xC2, "DTLB: 4 KByte/2 MByte pages, 4-way associative, 16 entries", &[part(Data, K4M2, 16, Ways(4))]),
    (0xC3, "Shared 2nd-Level TLB: 4 KByte/2 MByte pages, 6-way associative, 1536 entries. Also 1GBbyte pages, 4-way, 16 entries", &[part(Shared, K4M2, 1536, Ways(6)), part(Shared, G1, 16, Ways(4))]),
    (0xC4, "DTLB: 2M/4M Byte pages, 4-way associative, 32 entries", &[part(Data, M2, 32, Ways(4))]),
    (0xCA, "Shared 2nd-Level TLB: 4 KByte pages, 4-way associative, 512 entries", &[part(Shared, K4, 512, Ways(4))]),
];

/// The descriptor bytes of leaf 2, skipping EAX[7:0] and registers with bit 31 set.
pub fn descriptors(dump: &CpuidDump) -> Option<Vec<u8>> {
    let r = dump.leaf(LEAF, 0)?;
    let mut out = Vec::new();
    for (i, reg) in [r.eax, r.ebx, r.ecx, r.edx].into_iter().enumerate() {
        if reg >> 31 == 1 {
            continue;
        }
        let bytes = reg.to_le_bytes();
        let from = if i == 0 { 1 } else { 0 };
        out.extend(bytes[from..].iter().copied().filter(|&b| b != 0));
    }
    Some(out)
}

/// Decodes the TLB descriptors. `Err` says why the leaf gives nothing (absent, deferring to leaf
/// 0x18, or no TLB descriptor).
pub fn decode(dump: &CpuidDump) -> Result<TlbReport, String> {
    let Some(bytes) = descriptors(dump) else {
        return Err("CPUID leaf 2 was not read".into());
    };
    if bytes.contains(&DEFER_TO_LEAF_18) {
        return Err(
            "CPUID leaf 2 carries descriptor 0xFE: its TLB information is in leaf 0x18".into()
        );
    }
    // (descriptor, wording, part, level) for every TLB part, in descriptor order.
    let mut parts: Vec<(u8, &str, Part, u8)> = Vec::new();
    for b in bytes {
        if let Some((code, text, ps)) = TABLE.iter().find(|(code, _, _)| *code == b) {
            for p in ps.iter() {
                parts.push((*code, text, *p, if p.side == Shared { 2 } else { 1 }));
            }
        }
    }
    if parts.is_empty() {
        return Err("CPUID leaf 2 lists no TLB descriptor".into());
    }
    // Two level-1 parts for the same side and size: the larger is the second level.
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| parts[i].2.entries);
    let mut moved = vec![false; parts.len()];
    for (k, &i) in order.iter().enumerate() {
        let (_, _, p, level) = parts[i];
        if level != 1 {
            continue;
        }
        let clash = order[..k].iter().any(|&j| {
            let (_, _, q, lq) = parts[j];
            lq == 1 && overlaps(&p, &q)
        });
        let l2_free = !parts.iter().any(|(_, _, q, lq)| *lq == 2 && overlaps(&p, q));
        if clash && l2_free {
            parts[i].3 = 2;
            moved[i] = true;
        }
    }
    let mut report = TlbReport::vouching(all_triples());
    for (i, (code, text, p, level)) in parts.into_iter().enumerate() {
        let (ways, mut note) = match p.assoc {
            Ways(w) => (w, String::new()),
            Full => (p.entries, String::new()),
            NotGiven => (
                p.entries,
                "associativity not given by the descriptor: fully associative assumed".to_owned(),
            ),
        };
        if moved[i] {
            if !note.is_empty() {
                note.push_str("; ");
            }
            note.push_str("taken as level 2: a smaller level-1 descriptor covers the same pages");
        }
        report.add(
            TlbFound {
                level,
                accesses: accesses(p.side),
                page_sizes: p.sizes.to_vec(),
                entries: p.entries,
                ways,
                splinter_1g: false,
                source: format!("CPUID leaf 2 descriptor {code:#04X}"),
                detail: format!("\"{text}\" (Intel SDM vol. 2A, table 3-12)"),
            },
            &note,
        );
    }
    Ok(report)
}

fn accesses(side: Side) -> Vec<AccessKind> {
    match side {
        Instruction => vec![AccessKind::Fetch],
        Data => vec![AccessKind::Load, AccessKind::Store],
        Shared => vec![AccessKind::Load, AccessKind::Store, AccessKind::Fetch],
    }
}

fn overlaps(a: &Part, b: &Part) -> bool {
    let sides = accesses(a.side).iter().any(|k| accesses(b.side).contains(k));
    sides && a.sizes.iter().any(|s| b.sizes.contains(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::Regs;

    fn dump_with_leaf2(regs: Regs) -> CpuidDump {
        let mut d = CpuidDump::default();
        d.insert(0, 0, Regs { eax: 0x16, ..Regs::default() });
        d.insert(2, 0, regs);
        d
    }

    #[test]
    fn this_projects_vm_defers_to_leaf_0x18() {
        // Leaf 2 as read on the project's KVM guest: 0xFF (caches in leaf 4), 0xFE, 0xF0.
        let d = dump_with_leaf2(Regs { eax: 0x00fe_ff01, ebx: 0xf0, ecx: 0, edx: 0 });
        assert_eq!(descriptors(&d).unwrap(), vec![0xff, 0xfe, 0xf0]);
        assert!(decode(&d).unwrap_err().contains("0xFE"));
    }

    #[test]
    fn a_register_with_bit_31_set_is_skipped() {
        let d = dump_with_leaf2(Regs { eax: 0x0000_0301, ebx: 0x8000_00c3, ecx: 0, edx: 0 });
        assert_eq!(descriptors(&d).unwrap(), vec![0x03]);
    }

    #[test]
    fn data_tlb0_and_tlb1_become_two_levels() {
        // Atom-like: Data TLB0 4K 16 entries (0x57) and Data TLB1 4K 256 entries (0xB4).
        let d = dump_with_leaf2(Regs { eax: 0x00b4_5701, ebx: 0x0000_00b2, ecx: 0, edx: 0 });
        let r = decode(&d).unwrap();
        let l = |e: u32| r.found.iter().find(|f| f.entries == e).unwrap().level;
        assert_eq!((l(16), l(256), l(64)), (1, 2, 1));
    }
}
