//! S8 — asynchronous and deferred shootdowns: LATR on its own workloads (a munmap-latency
//! microbenchmark, a multi-threaded web server that maps and unmaps files) and migrc / LUF on
//! a migration workload, each policy's speed beside the safety checker's verdict and the
//! exposure its deferral leaves (docs/studies.md, S8).

use crate::measure::Measure::{self, *};
use crate::study::{Part, Size};
use tlblab_kernel::workloads::Params;

/// The machine of every part: studies.md names none for S8.
const MACHINE: &str = "skylake-server";
const MACHINE_WHY: &str = "studies.md S8 names no machine; the skylake-server preset (Xeon Platinum 8160, the server core S5 uses, every figure sourced or marked) at 16 or 8 CPUs: enough remote CPUs that a shootdown's IPI round trips dominate a small munmap, few enough to keep the study fast";

/// Speed, IPIs, and the checker's verdict and exposure, side by side.
fn measures() -> Vec<Measure> {
    vec![
        ScenarioMetric,
        IpisPerOp,
        CheckViolations,
        CheckExposedUses,
        CheckExposureMedianUs,
        CheckExposureP99Us,
        CheckExposureMaxUs,
    ]
}

pub(crate) fn s8_parts(size: Size) -> Vec<Part> {
    let latr = || vec!["linux-6.18", "latr"];
    let munmap = |pages: u64, why: &'static str| Part {
        label: format!(
            "munmap-latency, {pages} page{}, 16 threads on 16 CPUs",
            if pages == 1 { "" } else { "s" }
        ),
        sweep: None,
        machine: MACHINE,
        machine_why: MACHINE_WHY,
        guest: None,
        cpus: 16,
        scenario: "munmap-latency",
        params: Params {
            tasks: 16,
            pages,
            // Quick: 200 munmaps.
            iterations: size.pick(2000, 200),
            ..Params::default()
        },
        settings_why: why,
        policies: latr(),
        measures: measures(),
    };
    vec![
        munmap(1, "LATR's munmap microbenchmark (the process of T threads on T CPUs, one thread mapping, touching and unmapping while the others keep the mm loaded; the brief of issue 20): T = 16, one page per munmap, the case LATR's asynchronous shootdown targets (a single-page flush whose cost is all IPI round trip). 2,000 munmaps (quick: 200): every iteration is the same, so the mean settles within a few hundred. The siblings spin in user mode, so no remote CPU caches the region's translations: the checker finds no CPU exposed, which is itself a result (LATR's windows are only exposure where another CPU used the pages)."),
        munmap(64, "the same microbenchmark at 64 pages per munmap: above tlb_single_page_flush_ceiling (33), so each remote CPU would do a full flush; LATR defers that too. 2,000 munmaps (quick: 200)."),
        Part {
            label: "webserver, 16 worker threads on 16 CPUs, SPECweb99 file mix".into(),
            sweep: None,
            machine: MACHINE,
            machine_why: MACHINE_WHY,
            guest: None,
            cpus: 16,
            scenario: "webserver",
            params: Params {
                tasks: 16,
                // Requests per worker; quick: 50.
                iterations: size.pick(500, 50),
                // Copying a 4 KiB page to the socket buffer (≈ 10 bytes per cycle).
                cycles_per_page: 400,
                ..Params::default()
            },
            settings_why: "LATR's web-server workload (Apache serving static files) as 16 worker threads of one process on 16 CPUs (Apache's worker MPM runs its workers as threads, so every request's munmap is a shootdown of the CPUs running the other workers). Each request maps its file shared and read-only from the page cache (Apache's EnableMMAP default), reads it and unmaps it; file sizes from SPECweb99's static mix (35% < 1 KiB, 50% 1–10 KiB, 14% 10–100 KiB, 1% 0.1–1 MiB), the standard static-web mix of LATR's time. 400 cycles per page copy (4 KiB at ≈ 10 bytes/cycle) and 20,000 cycles of other work per request (connection, parsing, logging: an assumption, the same under every policy). 500 requests per worker (quick: 50): 8,000 requests, enough for the 1% of large files to appear ≈ 80 times",
            policies: latr(),
            measures: measures(),
        },
        Part {
            label: "migrate-readers, 16 pages per move_pages(), 7 readers on 8 CPUs".into(),
            sweep: None,
            machine: MACHINE,
            machine_why: MACHINE_WHY,
            guest: None,
            cpus: 8,
            scenario: "migrate-readers",
            params: Params {
                tasks: 7,
                pages: 16,
                // Migrations; quick: 100.
                iterations: size.pick(1000, 100),
                // Reading a cache line or two of each page.
                cycles_per_page: 50,
                ..Params::default()
            },
            settings_why: "the workload migrc and LUF were built for, reduced to its mechanism: pages read by every thread of a process move between a fast and a slow memory node (NUMA balancing, tiering), the readers never write them, and the freed sources are reused when pages move back. One thread migrates 16 pages per move_pages() round a 2 MiB shared read-only file mapping (32 calls a round: each page goes out and comes back every 64 calls), 7 reader threads on the other CPUs read the whole region in a loop (50 cycles per page). migrc and LUF differ only in catch-ups this workload never reaches (migrc: direct reclaim; LUF: a fault setting a writable PTE), so their rows coincide; LATR defers munmap and MADV_DONTNEED only (its lazy migration is not modelled), so it is not run. bad-luf-reuse-without-flush (KNOWN BAD: the allocator hands out a page without its pending flush) is the control of the verdict column. 1,000 migrations (quick: 100)",
            policies: vec!["linux-6.18", "migrc", "luf", "bad-luf-reuse-without-flush"],
            measures: measures(),
        },
    ]
}
