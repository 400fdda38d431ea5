//! S9: KVM's paravirtual TLB flush against native IPIs in a guest (studies.md, "Beyond the
//! five debates"): with and without posted interrupts, at 4 … 64 vCPUs, on a host with
//! dedicated pCPUs (overcommit 1×) or shared ones (1.5×, 2×), on `madvise-busy` and
//! will-it-scale's `tlb_flush2` (threads).

use crate::measure::Measure::*;
use crate::study::{GuestSetting, Part, Relative, Size, Sweep, SweepAxis};
use tlblab_kernel::workloads::Params;

const MACHINE_WHY: &str = "studies.md S9 names no host: icelake-server-kvm, a 6.x KVM guest on an Intel Ice Lake server (the icelake-server core and kernel-path costs; [guest]: an exit per IPI sent unless PV send-IPI batches them, PV TLB flush and steal time offered, halting idle vCPUs, EEVDF host slices of 3 ms at HZ=1000, EPT). The part sets two host facts over the preset: posted interrupts (APICv; off: a running target exits to have the IPI injected) and overcommit (runnable host threads per pCPU; above 1 the host preempts vCPUs for other threads' slices)";

/// One curve: a scenario under one host setting, over the vCPU counts.
struct Curve {
    name: &'static str,
    scenario: &'static str,
    posted_interrupts: bool,
    overcommit: f64,
}

/// Every curve, in the order printed. Sweep names are static, hence the table.
const CURVES: &[Curve] = &[
    curve("madvise-busy, posted interrupts, overcommit 1×", "madvise-busy", true, 1.0),
    curve("madvise-busy, posted interrupts, overcommit 1.5×", "madvise-busy", true, 1.5),
    curve("madvise-busy, posted interrupts, overcommit 2×", "madvise-busy", true, 2.0),
    curve("madvise-busy, no posted interrupts, overcommit 1×", "madvise-busy", false, 1.0),
    curve("madvise-busy, no posted interrupts, overcommit 1.5×", "madvise-busy", false, 1.5),
    curve("madvise-busy, no posted interrupts, overcommit 2×", "madvise-busy", false, 2.0),
    curve("tlb-flush2 threads, posted interrupts, overcommit 1×", "tlb-flush2", true, 1.0),
    curve("tlb-flush2 threads, posted interrupts, overcommit 1.5×", "tlb-flush2", true, 1.5),
    curve("tlb-flush2 threads, posted interrupts, overcommit 2×", "tlb-flush2", true, 2.0),
    curve("tlb-flush2 threads, no posted interrupts, overcommit 1×", "tlb-flush2", false, 1.0),
    curve("tlb-flush2 threads, no posted interrupts, overcommit 1.5×", "tlb-flush2", false, 1.5),
    curve("tlb-flush2 threads, no posted interrupts, overcommit 2×", "tlb-flush2", false, 2.0),
];

const fn curve(
    name: &'static str,
    scenario: &'static str,
    posted_interrupts: bool,
    overcommit: f64,
) -> Curve {
    Curve { name, scenario, posted_interrupts, overcommit }
}

const MADVISE_BUSY_WHY: &str = "madvise-busy with every other vCPU busy in the same process (busy = vCPUs − 1), so that each MADV_DONTNEED shoots down every other vCPU: the case where a preempted target matters most. Representative window: 4,000 iterations (quick: 400). A native IPI to a preempted vCPU is answered only when the host runs it again, so at overcommit above 1 an iteration can last a host slice (3 ms); 4,000 iterations span several hundred host slices per vCPU at 2×, so preemptions are sampled at their real rate (the seeds draw the host's scheduling)";

const TLB_FLUSH2_WHY: &str = "will-it-scale tlb_flush2 with one thread per vCPU (studies.md S9: tlb_flush2), each looping over its 1 MiB mapping { write a page, MADV_DONTNEED it, read it }; every DONTNEED of a thread interrupts the vCPUs of its siblings. Representative window: 512 pages per thread (2 passes over the mapping; quick: 256). Each pass repeats the same loop, and at 2× overcommit the window spans many host slices per vCPU";

/// S9's parts: every curve at 4, 8, 16, 32, 64 vCPUs (quick: the 1× and 2× curves of
/// madvise-busy at 4, 8, 16).
pub(crate) fn parts(size: Size) -> Vec<Part> {
    let vcpus = size.pick::<&[usize]>(&[4, 8, 16, 32, 64], &[4, 8, 16]);
    let mut parts = Vec::new();
    for c in CURVES {
        let quick = c.scenario == "madvise-busy" && c.overcommit != 1.5;
        if size == Size::Quick && !quick {
            continue;
        }
        for &n in vcpus {
            let guest =
                GuestSetting { posted_interrupts: c.posted_interrupts, overcommit: c.overcommit };
            let (params, settings_why, measures) = match c.scenario {
                "madvise-busy" => (
                    Params { busy: n - 1, iterations: size.pick(4_000, 400), ..Params::default() },
                    MADVISE_BUSY_WHY,
                    vec![ScenarioMetric, IpisSent, PvFlushesMarked, StealPct],
                ),
                _ => (
                    Params {
                        tasks: n,
                        threads: true,
                        iterations: size.pick(512, 256),
                        ..Params::default()
                    },
                    TLB_FLUSH2_WHY,
                    vec![ScenarioMetric, IpisSent, PvFlushesMarked, StealPct],
                ),
            };
            parts.push(Part {
                label: format!("{}, {n} vCPUs", c.name),
                sweep: Some(Sweep {
                    name: c.name,
                    axis: SweepAxis::Cpus,
                    relative: Relative::Change,
                }),
                machine: "icelake-server-kvm",
                machine_why: MACHINE_WHY,
                guest: Some(guest),
                cpus: n,
                scenario: c.scenario,
                params,
                settings_why,
                policies: vec!["linux-6.18+no-pv-flush", "linux-6.18"],
                measures,
            });
        }
    }
    parts
}
