//! S6 — broadcast invalidation (studies.md, "Beyond the five debates"): will-it-scale's
//! `tlb_flush2_threads` at 1…N tasks on an AMD Milan, a Zen 4 and a Sapphire Rapids, under IPI
//! shootdowns, AMD INVLPGB with the 6.15 global ASIDs (AMD) or Intel RAR (Sapphire Rapids), each
//! with and without the pre-6.15 `lru_add_drain()` in the zap path.

use crate::measure::Measure::*;
use crate::study::{Part, Relative, Size, Sweep, SweepAxis};
use tlblab_kernel::workloads::Params;

/// `CONFIG_HZ` of the mirrored kernels (`Policy::hz`): a jiffy is 4 ms.
const JIFFY_MS: u64 = 4;

/// Warm-up before the window: long enough that, whatever the tasks' pids, one of them has been
/// sampled by `consider_global_asid()` (`(pid & 0x1f) == (jiffies & 0x1f)`) while flushing: 32
/// jiffies cover every residue of a pid, and half a jiffy of margin. The same at every point of
/// a sweep (n consecutive pids would need only `33 − min(n, 32)` jiffies, but a sweep's points
/// differ only in the tasks).
const WARMUP_MS: u64 = 32 * JIFFY_MS + JIFFY_MS / 2;

/// One machine's sweep: its label, preset, why, CPUs, task counts and policies.
struct Machine {
    name: &'static str,
    preset: &'static str,
    why: &'static str,
    cpus: usize,
    full: &'static [usize],
    quick: &'static [usize],
    policies: [&'static str; 4],
}

const MACHINES: [Machine; 3] = [
    Machine {
        name: "Milan",
        preset: "milan",
        why: "studies.md S6: a 36-core AMD Milan (Zen 3); the milan preset: the Zen 3 core of zen3 at an EPYC 7003 clock (2.45 GHz, no SKU named: UNVERIFIED) with CCXs of eight cores (a cache-line transfer ≈ 22 ns within one, ≈ 100 ns between two; secondary source) and the page-freeing locks' [locks]; 36 CPUs, one per core (will-it-scale binds task i to core i): up to 8 tasks share a CCX",
        cpus: 36,
        full: &[1, 2, 4, 8, 16, 24, 36],
        quick: &[4, 8, 16],
        policies: [
            "linux-6.18+lru-drain",
            "linux-6.18",
            "linux-6.18+invlpgb+lru-drain",
            "linux-6.18+invlpgb",
        ],
    },
    Machine {
        name: "Zen 4",
        preset: "zen4",
        why: "studies.md S6: a Zen 4 machine (no SKU named); the zen4 preset (Zen 4 core, INVLPGB, 3 GHz: UNVERIFIED) with [locks]; 32 CPUs, an EPYC 9004 of 32 cores (assumption: studies.md gives no core count)",
        cpus: 32,
        full: &[1, 2, 4, 8, 16, 32],
        quick: &[4, 8, 16],
        policies: [
            "linux-6.18+lru-drain",
            "linux-6.18",
            "linux-6.18+invlpgb+lru-drain",
            "linux-6.18+invlpgb",
        ],
    },
    Machine {
        name: "Sapphire Rapids",
        preset: "sapphire-rapids",
        why: "studies.md S6: Sapphire Rapids, the first Xeon with RAR; the sapphire-rapids preset (Golden Cove core, 2 GHz: UNVERIFIED) with [rar] (every RAR figure unpublished: assumptions) and [locks]; 32 CPUs, a 32-core Xeon (assumption: studies.md gives no core count)",
        cpus: 32,
        full: &[1, 2, 4, 8, 16, 32],
        quick: &[4, 8, 16],
        policies: ["linux-6.18+lru-drain", "linux-6.18", "linux-6.18+rar+lru-drain", "linux-6.18+rar"],
    },
];

/// S6's parts: one sweep over the tasks per machine.
pub(crate) fn s6_parts(size: Size) -> Vec<Part> {
    let mut parts = Vec::new();
    for m in &MACHINES {
        for &n in size.pick(m.full, m.quick) {
            parts.push(Part {
                label: format!("tlb-flush2 threads, {n} tasks on {}", m.name),
                sweep: Some(Sweep {
                    name: sweep_name(m.preset),
                    axis: SweepAxis::Workers,
                    relative: Relative::Slowdown,
                }),
                machine: m.preset,
                machine_why: m.why,
                guest: None,
                cpus: m.cpus,
                scenario: "tlb-flush2",
                params: Params {
                    tasks: n,
                    threads: true,
                    // Never reached: the window ends the run (an iteration is a page).
                    iterations: u64::MAX / 2,
                    // Representative window: 20 ms (quick: 4 ms) after the warm-up.
                    window_ms: size.pick(20, 4),
                    // Quick: 20 ms (the model's first thread has the pid after the idle
                    // tasks', 32 or 36: a residue matches within the first five jiffies).
                    warmup_ms: size.pick(WARMUP_MS, 20),
                    ..Params::default()
                },
                settings_why: "will-it-scale tlb_flush2 as threads of one process (studies.md S6: tlb_flush2_threads exactly, 1 MiB per task, per page write, MADV_DONTNEED, read; then munmap), task i on CPU i. Representative window: 20 ms of simulated time after a warm-up (will-it-scale reports per-second rates of a loop that runs for seconds): the loop is periodic (256 pages then a munmap), and 20 ms holds several passes of it per task at every task count. Warm-up: 130 ms at every point, after which, whatever the threads' pids, consider_global_asid() has sampled one of them (it runs when pid & 0x1f equals jiffies & 0x1f: 32 jiffies at HZ 250, and half a jiffy), so that the window is the benchmark's steady state, where the mm has its global ASID if it is eligible; the per-CPU LRU batches and pcp lists are in steady state well before. Policies: the 2×2 of the 6.15 series' measurement, IPI shootdowns or broadcast (INVLPGB on AMD, RAR on Sapphire Rapids), each with the pre-6.15 lru_add_drain() in the zap path (+lru-drain) or without (6.15+); the baseline is the pre-6.15 kernel's pair (IPIs with the drain)",
                policies: m.policies.to_vec(),
                measures: vec![ScenarioMetric, InvalidationPct, LockWaitPct, FlushLatencyP50Us, IpisPerOp],
            });
        }
    }
    parts
}

fn sweep_name(preset: &str) -> &'static str {
    match preset {
        "milan" => "tlb-flush2 threads on Milan",
        "zen4" => "tlb-flush2 threads on Zen 4",
        _ => "tlb-flush2 threads on Sapphire Rapids",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// consider_global_asid()'s sampling: whatever a task's pid, its low five bits match
    /// `jiffies & 0x1f` within 32 jiffies of the start, inside the warm-up.
    #[test]
    fn the_warm_up_lets_every_pid_residue_be_sampled() {
        for pid in 0..64u64 {
            let first = (0..).find(|j: &u64| j & 0x1f == pid & 0x1f).unwrap();
            assert!((first + 1) * JIFFY_MS <= WARMUP_MS, "pid {pid}");
        }
    }

    /// Every sweep's first policy is the pre-6.15 IPI kernel, and each broadcast policy is the
    /// machine's own (INVLPGB on AMD, RAR on Intel).
    #[test]
    fn each_machine_compares_its_own_broadcast() {
        for p in s6_parts(Size::Full) {
            assert_eq!(p.policies[0], "linux-6.18+lru-drain");
            let broadcast = if p.machine == "sapphire-rapids" { "rar" } else { "invlpgb" };
            assert!(p.policies[2..].iter().all(|q| q.contains(broadcast)), "{}", p.label);
        }
    }
}
