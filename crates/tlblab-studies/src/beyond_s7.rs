//! S7 — lazy `mm_cpumask` and its trimming (6.14) vs eager clearing (6.13): the parts.

use crate::measure::Measure::*;
use crate::study::{Part, Size};
use tlblab_kernel::workloads::Params;

/// The policies: 6.13 first (the baseline), then 6.14's rules as 6.18 has them, and the lazy
/// mask without its trimming.
fn policies() -> Vec<&'static str> {
    vec!["linux-6.13", "linux-6.18", "linux-6.18+no-trim-cpumask"]
}

const MILAN: &str = "studies.md S7: the Milan machine of S6 (a 36-core AMD EPYC Milan, 72 CPUs with SMT): the milan preset (the Zen 3 core at an EPYC 7003 clock) with its [topology]: CCXs of eight cores, each an LLC for wake-up placement, a line moved within a CCX ≈ 22 ns and between CCXs ≈ 100 ns (secondary source), one socket (UNVERIFIED)";

const SKYLAKE_SP_2S: &str = "studies.md S7: tlb_flush2_threads with 104 threads on a 2-socket Skylake-SP; the skylake-sp-2s preset (2 × Xeon Platinum 8170: 26 cores and 52 threads per socket, 104 CPUs, 2.1 GHz), whose [topology] makes a cache line moved between the sockets cost more than one moved within a socket (UNVERIFIED figure)";

const HACKBENCH_WHY: &str = "hackbench's own defaults (rt-tests hackbench.c: 10 groups of 20 senders and 20 receivers = 400 tasks, 100 loops, 100-byte messages), the study naming no other: each receiver gets 2,000 messages, so senders fill the socket (278 messages) or pipe (640) and sleep, and receivers drain and sleep — the wake-ups and switches that write mm_cpumask. The whole run is simulated (no window): hackbench times itself from the start signal to the last worker reaped, and that span is the metric. Processes (one mm per task: every switch between two tasks of a CPU changes mm) and threads (one mm: a switch changes no mm, so the mask is written only when a CPU first runs the mm); pipes and AF_UNIX stream sockets (different capacities and wake-up rules, so different switch rates). On 72 CPUs of the Milan-class machine";

/// One hackbench part.
fn hackbench(size: Size, threads: bool, pipe: bool) -> Part {
    let mode = if threads { "threads" } else { "processes" };
    let transport = if pipe { "pipes" } else { "sockets" };
    Part {
        label: format!("hackbench, {mode}, {transport}"),
        sweep: None,
        machine: "milan",
        machine_why: MILAN,
        guest: None,
        cpus: 72,
        scenario: "hackbench",
        params: Params {
            threads,
            pipe,
            // hackbench's defaults: 10 groups (quick: 2), 100 loops (quick: 30, still more
            // messages per receiver, 600, than a socket holds).
            groups: size.pick(10, 2),
            loops: size.pick(100, 30),
            ..Params::default()
        },
        settings_why: HACKBENCH_WHY,
        policies: policies(),
        measures: vec![ScenarioMetric, CpumaskLineTransfers, CpumaskWrites, IpisSent],
    }
}

/// S7's parts: hackbench's four modes on the Milan-class machine, then tlb_flush2_threads at
/// 104 threads on the 2-socket Skylake-SP.
pub(crate) fn parts(size: Size) -> Vec<Part> {
    let mut parts = Vec::new();
    for threads in [false, true] {
        for pipe in [false, true] {
            parts.push(hackbench(size, threads, pipe));
        }
    }
    parts.push(Part {
        label: "tlb-flush2, 104 threads".into(),
        sweep: None,
        machine: "skylake-sp-2s",
        machine_why: SKYLAKE_SP_2S,
        guest: None,
        cpus: 104,
        scenario: "tlb-flush2",
        params: Params {
            tasks: 104,
            threads: true,
            // Representative window: 512 iterations per thread (quick: 64).
            iterations: size.pick(512, 64),
            ..Params::default()
        },
        settings_why: "studies.md S7: will-it-scale tlb_flush2_threads with 104 threads, one per CPU (will-it-scale binds task i to CPU i). Representative window: 512 iterations per thread, two passes over the 1 MiB region, so each thread's loop includes a munmap and a fresh mmap (with mmap_lock taken for write) besides the per-page store, MADV_DONTNEED and flush of the other 103 CPUs; will-it-scale's own figure is a per-second rate of this same steady loop. NOTE: trimming acts at most once a second per mm, from a second after the mm was created, and this window is far shorter, so linux-6.18 and its no-trim variant can only differ by chance here — as in the first second of a real run; here every CPU runs the mm throughout, so no bit is stale anyway",
        policies: policies(),
        measures: vec![
            ScenarioMetric,
            OpsPerTaskPerSecond,
            IpisSent,
            CpumaskLineTransfers,
            CpumaskWrites,
            TlbstateLineTransfers,
        ],
    });
    parts
}
