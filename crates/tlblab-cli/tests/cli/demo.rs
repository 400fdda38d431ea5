//! `sim demo`: what PCID buys, from the built-in context-switch workloads.

use crate::common::json_of;
use serde_json::Value;

fn workload<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == name)
        .unwrap_or_else(|| panic!("no workload {name} in {report}"))
}

/// Two processes of 512 random pages each switch every 2,000 accesses (99 switches in 200,000
/// accesses), on the default machine (skylake).
///
/// - With PCID (CR4.PCIDE=1) the switch is a MOV to CR3 with bit 63 set: per the Intel SDM vol. 3
///   §4.10.4.1, such a MOV CR3 invalidates nothing, and each process's entries are tagged with its
///   own PCID, so both working sets stay in the TLBs. Skylake's STLB (1,536 entries, 12-way, 128
///   sets) holds both: each set gets 4 pages of each process, 8 ≤ 12 ways. So the only walks are
///   the compulsory ones, one per distinct page: 2 × 512 = 1,024.
/// - Without PCID (CR4.PCIDE=0) bit 63 must be clear (it is reserved; setting it is #GP), and a
///   MOV to CR3 invalidates every non-global TLB entry (and paging-structure-cache entry): after
///   each switch the process refills its pages by walking again.
#[test]
fn pcid_noflush_switches_keep_both_working_sets_and_flushing_switches_do_not() {
    let report = json_of([
        "sim",
        "demo",
        "--json",
        "--accesses",
        "200000",
        "-w",
        "ctx-switch-pcid",
        "-w",
        "ctx-switch-nopcid",
    ]);
    assert_eq!(report["schema"], "tlblab.sim.demo/1");
    assert_eq!(report["accesses_per_workload"], 200_000);
    let names: Vec<_> =
        report["workloads"].as_array().unwrap().iter().map(|w| &w["name"]).collect();
    assert_eq!(names, ["ctx-switch-pcid", "ctx-switch-nopcid"], "in the order asked");

    let pcid = &workload(&report, "ctx-switch-pcid")["stats"];
    let nopcid = &workload(&report, "ctx-switch-nopcid")["stats"];
    for stats in [pcid, nopcid] {
        assert_eq!(stats["accesses"]["total"], 200_000);
    }

    let ops = |s: &Value, op: &str, field: &str| s["invalidations"][op][field].as_u64().unwrap();
    // With PCID: 99 NOFLUSH switches that drop nothing, no flushing MOV CR3.
    assert_eq!(ops(pcid, "mov_cr3_noflush", "count"), 99);
    assert_eq!(ops(pcid, "mov_cr3_noflush", "tlb_entries_dropped"), 0);
    assert_eq!(ops(pcid, "mov_cr3_noflush", "psc_entries_dropped"), 0);
    assert_eq!(ops(pcid, "mov_cr3", "count"), 0);
    assert_eq!(ops(pcid, "mov_cr3", "tlb_entries_dropped"), 0);
    // Without: 99 flushing switches that drop entries.
    assert_eq!(ops(nopcid, "mov_cr3", "count"), 99);
    assert!(ops(nopcid, "mov_cr3", "tlb_entries_dropped") > 99 * 100, "{nopcid}");
    assert_eq!(ops(nopcid, "mov_cr3_noflush", "count"), 0);

    let walks = |s: &Value| s["page_walks"]["walks"].as_u64().unwrap();
    assert_eq!(walks(pcid), 1024, "only compulsory misses with PCID");
    assert!(walks(nopcid) > 10 * walks(pcid), "{} vs {}", walks(nopcid), walks(pcid));
    // Every TLB entry dropped is counted under `invalidated` of its structure.
    let invalidated: u64 = nopcid["structures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["invalidated"].as_u64().unwrap())
        .sum();
    assert_eq!(invalidated, ops(nopcid, "mov_cr3", "tlb_entries_dropped"));
}
