//! The golden test: a hand-written lackey trace on a tiny machine, with every counter derived by
//! hand below from the documented semantics, not copied from the tool's output.
//!
//! # The machine (`tests/data/golden-machine.toml`)
//!
//! - L1 dTLB 4K: loads and stores, 2 entries, 2-way: one fully-associative set, true LRU.
//! - L1 iTLB 4K: fetches, 2 entries, fully associative.
//! - STLB 4K: every kind, 4 entries, 2-way: 2 sets, set = VPN mod 2 (set 0 even, set 1 odd VPNs).
//! - Paging-structure caches: PDE 2 entries fully associative (key VPN >> 9, one per 2 MiB
//!   region), PDPTE 1 entry (key VPN >> 18, one per 1 GiB region), no PML4E cache.
//! - Latencies: STLB lookup 10 cycles, walk references PML4 1000, PDPT 100, PD 10, PT 1. So a
//!   walk costs 1111 (PDE and PDPTE caches both miss: every level is referenced), 11 (PDPTE hit:
//!   PD and PT), or 1 (PDE hit: PT only); an L1 miss costs 10 more for the STLB lookup.
//!
//! The translation algorithm (crates/tlblab-sim/src/hw/cpu.rs): L1 hit → done, free. L1 miss →
//! STLB lookup (10 cycles); hit → fill L1. STLB miss → probe the PDE cache, then (only if it
//! missed) the PDPTE cache; walk the levels below the deepest hit; fill the PSCs of the non-leaf
//! levels walked (PDPT → PDPTE cache, PD → PDE cache), then the STLB, then L1. An empty way is
//! used before anything is evicted; structures are non-inclusive. The CLI reads lackey with
//! PCID 1, CPU 0, 4 KiB pages; consecutive identical accesses (same page and kind) coalesce into
//! one event whose repeats are L1 hits.
//!
//! # The trace (`tests/data/golden.lackey`), as events
//!
//! Pages are 4 KiB VPNs in hex. 2 MiB regions (PDE keys): 0x2 = VPNs 0x400–0x5ff, 0x3 = VPNs
//! 0x600–0x7ff, 0x200 = VPNs 0x40000–0x401ff. 1 GiB regions (PDPTE keys): 0 (0x2, 0x3) and 1
//! (0x200). Lines 1–2 are `==` lines, skipped. Line 9 (fetch at 0x400ffe, 4 bytes) and line 22
//! (store at 0x402ffc, 8 bytes) cross a 4 KiB boundary and give one access per page; line 10 is
//! the `M`: a load, then a store. Lines 3–5, 6–7, 20–21 and 26–27 coalesce.
//!
//! Columns: VPN of the page touched; the L1 structure of the access kind (dTLB for loads and
//! stores, iTLB for fetches) and its contents after the access, MRU first; the STLB set
//! (VPN mod 2), its result and contents after; then, for walks, the paging-structure-cache
//! probes (`PDE(k)` = PDE cache probed with key k; `+` hit, `-` miss; the PDPTE cache is probed
//! only after a PDE miss), the levels referenced and their cycles; `cyc` = translation cycles
//! (10 for the STLB lookup + the walk); the PDE (MRU first) and PDPTE caches after the fills
//! (blank: unchanged); what was evicted (L = the L1 structure, S = the STLB, PDE, PDPTE).
//!
//! ```text
//! ev   line   kind   VPN       L1: result → after                    STLB set: result → after
//! e1   3-5    fetch  400 ×3    miss → [400]; +2 hits                 0: miss → [400]
//! e2   6-7    load   402 ×2    miss → [402]; +1 hit                  0: miss → [402 400]
//! e3   8      store  402       hit
//! e4   9      fetch  400       hit
//! e5   9      fetch  401       miss → [401 400]                      1: miss → [401]
//! e6   10     load   404       miss → [404 402]                      0: miss → [404 402]
//! e7   10     store  404       hit
//! e8   11     fetch  401       hit
//! e9   12     load   600       miss → [600 404]                      0: miss → [600 404]
//! e10  13     load   402       miss → [402 600]                      0: miss → [402 600]
//! e11  14     load   401       miss → [401 402]                      1: HIT → [401]
//! e12  15     load   40000     miss → [40000 401]                    0: miss → [40000 402]
//! e13  16     store  600       miss → [600 40000]                    0: miss → [600 40000]
//! e14  17     load   40000     hit → [40000 600]
//! e15  18     fetch  40001     miss → [40001 401]                    1: miss → [40001 401]
//! e16  19     fetch  400       miss → [400 40001]                    0: miss → [400 600]
//! e17  20-21  load   40000 ×2  hit, hit (not in the STLB since e16)
//! e18  22     store  402       miss → [402 40000]                    0: miss → [402 400]
//! e19  22     store  403       miss → [403 402]                      1: miss → [403 40001]
//! e20  23     load   401       miss → [401 403]                      1: miss → [401 403]
//! e21  24     fetch  40001     hit → [40001 400]
//! e22  25     fetch  401       miss → [401 40001]                    1: HIT → [401 403]
//! e23  26-27  fetch  400 ×2    miss → [400 401]; +1 hit              0: HIT → [400 402]
//! e24  28     store  600       miss → [600 401]                      0: miss → [600 400]
//! e25  29     load   40002     miss → [40002 600]                    0: miss → [40002 600]
//!
//! ev   walk: PSC probes; levels       cyc   PDE      PDPTE  evicts
//! e1   PDE(2)- PDPTE(0)-; all 1111    1121  [2]      [0]
//! e2   PDE(2)+; PT 1                  11    [2]      [0]
//! e3                                  0
//! e4                                  0
//! e5   PDE(2)+; PT 1                  11    [2]      [0]
//! e6   PDE(2)+; PT 1                  11    [2]      [0]    S 400
//! e7                                  0
//! e8                                  0
//! e9   PDE(3)- PDPTE(0)+; PD PT 11    21    [3 2]    [0]    L 402, S 402
//! e10  PDE(2)+; PT 1                  11    [2 3]    [0]    L 404, S 404
//! e11                                 10                    L 600
//! e12  PDE(200)- PDPTE(1)-; all 1111  1121  [200 2]  [1]    L 402, S 600, PDE 3, PDPTE 0
//! e13  PDE(3)- PDPTE(0)-; all 1111    1121  [3 200]  [0]    L 401, S 402, PDE 2, PDPTE 1
//! e14                                 0
//! e15  PDE(200)+; PT 1                11    [200 3]  [0]    L 400
//! e16  PDE(2)- PDPTE(0)+; PD PT 11    21    [2 200]  [0]    L 401, S 40000, PDE 3
//! e17                                 0
//! e18  PDE(2)+; PT 1                  11    [2 200]  [0]    L 600, S 600
//! e19  PDE(2)+; PT 1                  11    [2 200]  [0]    L 40000, S 401
//! e20  PDE(2)+; PT 1                  11    [2 200]  [0]    L 402, S 40001
//! e21                                 0
//! e22                                 10                    L 400
//! e23                                 10                    L 40001
//! e24  PDE(3)- PDPTE(0)+; PD PT 11    21    [3 2]    [0]    L 403, S 402, PDE 200
//! e25  PDE(200)- PDPTE(1)-; all 1111  1121  [200 3]  [1]    L 401, S 400, PDE 2, PDPTE 0
//! ```
//!
//! What it exercises: LRU, not FIFO: e21's hit makes 40001 the most recent iTLB entry, so e22
//! evicts 400, and e23 misses L1 (FIFO would have evicted 40001, the older fill, and e23 would
//! hit). A unified STLB: e11's load hits the entry e5's fetch filled. Non-inclusion: e17 hits L1
//! after e16 evicted the page from the STLB. PSC probe order: after a PDE hit the PDPTE cache is
//! not probed (e15 hits PDE 0x200 while the PDPTE cache holds region 0). LRU in the PDE cache:
//! e10's hit on region 2 makes e12 evict region 3 instead.
//!
//! # Totals
//!
//! - Events 25; accesses: load 12 (e2×2 e6 e9 e10 e11 e12 e14 e17×2 e20 e25), store 6 (e3 e7
//!   e13 e18 e19 e24), fetch 12 (e1×3 e4 e5 e8 e15 e16 e21 e22 e23×2); total 30.
//! - L1 dTLB: hits 6 (e2's repeat, e3, e7, e14, e17×2), misses 12 (8 loads, 4 stores), fills 12,
//!   evictions 10 (e9 e10 e11 e12 e13 e18 e19 e20 e24 e25: every miss once both ways are full).
//! - L1 iTLB: hits 6 (e1×2, e4, e8, e21, e23's repeat), misses 6 (e1 e5 e15 e16 e22 e23),
//!   fills 6, evictions 4 (e15 e16 e22 e23).
//! - STLB: lookups = the 18 L1 misses; hits 3 (e11: the load finds the translation e5's fetch
//!   put in the unified STLB; e22; e23), misses 15, fills 15, evictions 11 (e6 e9 e10 e12 e13 e16
//!   e18 e19 e20 e24 e25; only e1, e2, e5 and e15 found an empty way).
//! - dtlb_load_misses: l1_miss 8, stlb_hit 1 (e11), walk_completed 7, walk_active_cycles
//!   1+1+11+1+1111+1+1111 = 2237, translation_cycles 8×10 + 2237 = 2317.
//! - dtlb_store_misses: l1_miss 4, stlb_hit 0, walk_completed 4, walk_active_cycles
//!   1111+1+1+11 = 1124, translation_cycles 4×10 + 1124 = 1164.
//! - itlb_misses: l1_miss 6, stlb_hit 2 (e22, e23), walk_completed 4, walk_active_cycles
//!   1111+1+1+11 = 1124, translation_cycles 6×10 + 1124 = 1184.
//! - page_walks: walks 15, cycles 2237+1124+1124 = 4485; memory references: full walks
//!   (e1 e12 e13 e25) reference pml4, pdpt, pd, pt; PDPTE hits (e9 e16 e24) pd, pt; PDE hits
//!   (the other 8) pt only: pml5 0, pml4 4, pdpt 4, pd 4+3 = 7, pt 15.
//! - PDE cache: probed by all 15 walks: hits 8 (e2 e5 e6 e10 e15 e18 e19 e20), misses 7, fills 7
//!   (every miss fills it, as PD is then walked), evictions 5 (fills after the first two).
//! - PDPTE cache: probed only after a PDE miss (7 times): hits 3 (e9 e16 e24), misses 4 (e1 e12
//!   e13 e25), fills 4, evictions 3.
//! - No invalidating instructions: every `invalidations` counter is 0.

use crate::common::{golden_machine, golden_trace, json_of, stdout_of};
use serde_json::{json, Value};

/// The hand-derived `total` of the golden run (see the module documentation), less
/// `invalidations`, which are all 0.
fn expected_total() -> Value {
    json!({
        "accesses": { "load": 12, "store": 6, "fetch": 12, "total": 30 },
        "structures": [
            {
                "name": "L1 dTLB 4K", "level": 1, "entries": 2, "ways": 2,
                "hits": 6, "misses": 12, "fills": 12, "evictions": 10, "invalidated": 0
            },
            {
                "name": "L1 iTLB 4K", "level": 1, "entries": 2, "ways": 2,
                "hits": 6, "misses": 6, "fills": 6, "evictions": 4, "invalidated": 0
            },
            {
                "name": "STLB 4K", "level": 2, "entries": 4, "ways": 2,
                "hits": 3, "misses": 15, "fills": 15, "evictions": 11, "invalidated": 0
            }
        ],
        "dtlb_load_misses": {
            "l1_miss": 8, "stlb_hit": 1, "walk_completed": 7,
            "walk_active_cycles": 2237, "translation_cycles": 2317
        },
        "dtlb_store_misses": {
            "l1_miss": 4, "stlb_hit": 0, "walk_completed": 4,
            "walk_active_cycles": 1124, "translation_cycles": 1164
        },
        "itlb_misses": {
            "l1_miss": 6, "stlb_hit": 2, "walk_completed": 4,
            "walk_active_cycles": 1124, "translation_cycles": 1184
        },
        "page_walks": {
            "walks": 15,
            "cycles": 4485,
            "memory_references": { "pml5": 0, "pml4": 4, "pdpt": 4, "pd": 7, "pt": 15 }
        },
        "paging_structure_caches": [
            {
                "level": "pdpte", "entries": 1, "ways": 1,
                "hits": 3, "misses": 4, "fills": 4, "evictions": 3, "invalidated": 0
            },
            {
                "level": "pde", "entries": 2, "ways": 2,
                "hits": 8, "misses": 7, "fills": 7, "evictions": 5, "invalidated": 0
            }
        ]
    })
}

/// Every instruction name of `invalidations`, each with all-zero counters.
fn no_invalidations() -> Value {
    let zero =
        json!({ "count": 0, "cycles": 0, "tlb_entries_dropped": 0, "psc_entries_dropped": 0 });
    let names = [
        "invlpg",
        "invlpgb",
        "invpcid_all_incl_global",
        "invpcid_all_non_global",
        "invpcid_indiv_addr",
        "invpcid_single_ctxt",
        "mov_cr3",
        "mov_cr3_noflush",
        "mov_cr4",
        "tlbsync",
    ];
    Value::Object(names.iter().map(|n| (n.to_string(), zero.clone())).collect())
}

fn golden_json() -> Value {
    json_of([
        "sim".as_ref(),
        "trace".as_ref(),
        "--json".as_ref(),
        "--machine".as_ref(),
        golden_machine().as_os_str(),
        golden_trace().as_os_str(),
    ])
}

#[test]
fn golden_trace_counts_match_the_hand_derivation() {
    let report = golden_json();
    assert_eq!(report["schema"], "tlblab.sim.trace/1");
    assert_eq!(report["machine"]["name"], "golden");
    assert_eq!(report["machine"]["paging_levels"], 4);
    assert_eq!(report["machine"]["replacement"], "lru");
    assert_eq!(report["errors"], json!([]));
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["input"], golden_trace().display().to_string());
    assert_eq!(run["format"], "lackey");
    assert_eq!(run["compression"], "none");
    assert_eq!(run["events"], 25, "events after coalescing and page splitting");

    let total = &run["total"];
    let expected = expected_total();
    // Field by field first, so that a failure names the counter that differs.
    for (key, want) in expected.as_object().expect("object") {
        assert_eq!(&total[key], want, "total.{key}");
    }
    assert_eq!(total["invalidations"], no_invalidations(), "total.invalidations");
    let mut whole = expected;
    whole["invalidations"] = no_invalidations();
    assert_eq!(total, &whole, "total has exactly the expected fields");

    // One CPU (0, the default of --cpu), whose counters are the total.
    assert_eq!(run["per_cpu"], json!([{ "cpu": 0, "stats": whole }]));
}

#[test]
fn golden_trace_text_output_shows_the_same_counts() {
    let text = String::from_utf8(stdout_of([
        "sim".as_ref(),
        "trace".as_ref(),
        "--machine".as_ref(),
        golden_machine().as_os_str(),
        golden_trace().as_os_str(),
    ]))
    .expect("UTF-8");
    for needle in [
        "machine golden (tiny test machine for hand-checked counts)",
        "4-level paging, lru replacement",
        "Counts are exact",
        "(lackey, 25 events, 1 CPU)",
        "accesses: 30 (load 12 · store 6 · fetch 12)",
        "page walks: 15 (500.00 per 1,000 accesses); 4,485 walk cycles (299.0 per walk, mean)",
        "walk memory references: pml4 4 · pdpt 4 · pd 7 · pt 15",
        "translation cycles (STLB lookups + walks): 4,665 (155.500 per access, mean)",
        "invalidating instructions: none",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    // Rows: name, level, entries, ways, hits, misses, hit rate, fills, evictions, invalidated.
    let rows = [
        ["L1 dTLB 4K", "1", "2", "2", "6", "12", "33.3%", "12", "10", "0"].as_slice(),
        &["L1 iTLB 4K", "1", "2", "2", "6", "6", "50.0%", "6", "4", "0"],
        &["STLB 4K", "2", "4", "2", "3", "15", "16.7%", "15", "11", "0"],
        &["dtlb_load_misses", "8", "1", "7", "2,237", "2,317"],
        &["dtlb_store_misses", "4", "0", "4", "1,124", "1,164"],
        &["itlb_misses", "6", "2", "4", "1,124", "1,184"],
        &["PDPTE", "1", "1", "3", "4", "4", "3", "0"],
        &["PDE", "2", "2", "8", "7", "7", "5", "0"],
    ];
    for row in rows {
        let found = text.lines().any(|line| {
            let cells: Vec<&str> = split_cells(line);
            cells == row
        });
        assert!(found, "no row {row:?} in:\n{text}");
    }
}

/// The cells of a text-table line: separated by two or more spaces.
fn split_cells(line: &str) -> Vec<&str> {
    line.trim().split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()
}

#[test]
fn golden_counts_do_not_depend_on_the_pcid_or_cpu_of_a_single_address_space() {
    // The trace is one address space on one CPU: which PCID or CPU number it gets changes
    // nothing but the CPU number in per_cpu.
    let report = json_of([
        "sim".as_ref(),
        "trace".as_ref(),
        "--json".as_ref(),
        "--pcid".as_ref(),
        "7".as_ref(),
        "--cpu".as_ref(),
        "3".as_ref(),
        "--machine".as_ref(),
        golden_machine().as_os_str(),
        golden_trace().as_os_str(),
    ]);
    let run = &report["runs"][0];
    let mut whole = expected_total();
    whole["invalidations"] = no_invalidations();
    assert_eq!(run["total"], whole);
    assert_eq!(run["per_cpu"], json!([{ "cpu": 3, "stats": whole }]));
}
