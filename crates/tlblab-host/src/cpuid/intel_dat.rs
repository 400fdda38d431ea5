//! Intel CPUID leaf 0x18, "deterministic address translation parameters" (Intel SDM vol. 2A,
//! CPUID, leaf 18H).
//!
//! Subleaf 0 EAX is the highest valid subleaf. Each subleaf describes one translation structure:
//! EBX[0..3] the page sizes it holds (4K, 2M, 4M, 1G), EBX[31:16] its ways, ECX its sets,
//! EDX[4:0] its type (0 = this subleaf is invalid, 1 data, 2 instruction, 3 unified, 4 load-only,
//! 5 store-only), EDX[7:5] its level (from 1), EDX[8] fully associative, EDX[25:14] + 1 the
//! logical processors that share it. Valid subleaves need not be contiguous.

use super::{bit, bits, CpuidDump};
use crate::tlb::{all_triples, size_list, TlbFound, TlbReport};
use tlblab_types::{AccessKind, PageSize};

/// The leaf.
pub const LEAF: u32 = 0x18;
/// Subleaves read at most: real CPUs report fewer than 16; a larger maximum is not believed.
pub const MAX_SUBLEAVES: u32 = 64;

/// Decodes leaf 0x18. `Err` says why the leaf gives nothing (absent, empty, all subleaves invalid).
///
/// The leaf enumerates every translation structure, so it vouches for every (level, access,
/// page size): one it does not list does not exist.
pub fn decode(dump: &CpuidDump) -> Result<TlbReport, String> {
    let Some(sub0) = dump.leaf(LEAF, 0) else {
        return Err(match dump.max_basic() {
            Some(max) if max < LEAF => {
                format!("CPUID leaf 0x18 is above the highest basic leaf ({max:#x})")
            }
            _ => "CPUID leaf 0x18 was not read".to_owned(),
        });
    };
    if sub0.is_zero() {
        return Err("CPUID leaf 0x18 subleaf 0 is all zeros (hidden, e.g. by a hypervisor)".into());
    }
    let max_sub = sub0.eax.min(MAX_SUBLEAVES - 1);
    let mut report = TlbReport::vouching(all_triples());
    for sub in 0..=max_sub {
        let Some(r) = dump.get(LEAF, sub) else {
            report.notes.push(format!("CPUID leaf 0x18 subleaf {sub} was not read"));
            continue;
        };
        let kind = bits(r.edx, 0, 4);
        if kind == 0 {
            continue; // an invalid subleaf: allowed between valid ones
        }
        let source = format!("CPUID leaf 0x18 subleaf {sub}");
        let accesses = match kind {
            1 => vec![AccessKind::Load, AccessKind::Store],
            2 => vec![AccessKind::Fetch],
            3 => vec![AccessKind::Load, AccessKind::Store, AccessKind::Fetch],
            4 => vec![AccessKind::Load],
            5 => vec![AccessKind::Store],
            other => {
                report.notes.push(format!("{source}: unknown structure type {other}, ignored"));
                continue;
            }
        };
        let mut page_sizes = Vec::new();
        if bit(r.ebx, 0) {
            page_sizes.push(PageSize::Size4K);
        }
        // 4M pages exist only in 32-bit paging; in 64-bit mode the same entries hold 2M pages.
        if bit(r.ebx, 1) || bit(r.ebx, 2) {
            page_sizes.push(PageSize::Size2M);
        }
        if bit(r.ebx, 3) {
            page_sizes.push(PageSize::Size1G);
        }
        let level = bits(r.edx, 5, 7);
        let ways = bits(r.ebx, 16, 31);
        let sets = r.ecx;
        let fully = bit(r.edx, 8);
        let sharing = bits(r.edx, 14, 25) + 1;
        let entries = ways.saturating_mul(sets);
        let assoc = if fully { "fully associative".to_owned() } else { format!("{ways}-way") };
        let detail = format!(
            "{} {}, {entries} entries ({ways} ways × {sets} sets), {assoc}, shared by up to \
             {sharing} logical processor(s)",
            type_name(kind),
            sizes_text(&page_sizes),
        );
        report.add(
            TlbFound {
                level: u8::try_from(level).unwrap_or(u8::MAX),
                accesses,
                page_sizes,
                entries,
                ways,
                splinter_1g: false,
                source,
                detail,
            },
            "",
        );
    }
    if report.found.is_empty() && report.rejected.is_empty() {
        return Err(format!("CPUID leaf 0x18 lists no valid subleaf (0..={max_sub})"));
    }
    Ok(report)
}

fn type_name(kind: u32) -> &'static str {
    match kind {
        1 => "data TLB",
        2 => "instruction TLB",
        3 => "unified TLB",
        4 => "load-only TLB",
        _ => "store-only TLB",
    }
}

fn sizes_text(sizes: &[PageSize]) -> String {
    if sizes.is_empty() {
        "(no page size)".to_owned()
    } else {
        size_list(sizes)
    }
}
