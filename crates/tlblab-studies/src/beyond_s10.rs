//! S10, the `tlb_single_page_flush_ceiling` sweep: two traces recorded on this project's
//! machine (data/traces/, README there) replayed through the kernel model, and S1's kbuild
//! scenario (its measured flush-size distribution), at ceilings 1 … 512 on several presets.
//!
//! A part's policies are one kernel at several ceilings (`linux-6.18@ceiling=N`, the runner's
//! ceiling axis); the first, 33 (the kernel's default), is the baseline of every ratio, so the
//! ratios are the cost curve relative to 33.

use crate::measure::Measure::*;
use crate::study::{Part, Size};
use tlblab_kernel::workloads::Params;

/// The scenario name of a part that replays a trace: `replay:` and the trace's name.
pub(crate) const REPLAY_PREFIX: &str = "replay:";

/// A policy at a ceiling: `BASE@ceiling=N`.
pub(crate) const CEILING_SEP: &str = "@ceiling=";

/// A trace shipped with the study.
pub(crate) struct Trace {
    /// Its name.
    pub name: &'static str,
    /// The scenario name of a part that replays it: `replay:NAME`.
    pub scenario: &'static str,
    /// The file, as `tlblab trace record` wrote it.
    pub bytes: &'static [u8],
    /// What was recorded, in one line.
    pub what: &'static str,
}

/// The traces S10 replays (data/traces/README.md says how each was recorded).
pub(crate) const TRACES: &[Trace] = &[
    Trace {
        name: "kbuild-6.12-make-j2",
        scenario: "replay:kbuild-6.12-make-j2",
        bytes: include_bytes!("../data/traces/kbuild-6.12-make-j2.flushtrace"),
        what: "the first 20 s of `make -j2 vmlinux` of Linux 6.12 (x86_64 defconfig, after `make prepare scripts`) on this project's 2-vCPU AMD EPYC guest, kernel 6.18.44: tlb:tlb_flush and sched_switch of the build's process tree",
    },
    Trace {
        name: "python-regrtest-j2",
        scenario: "replay:python-regrtest-j2",
        bytes: include_bytes!("../data/traces/python-regrtest-j2.flushtrace"),
        what: "the first 20 s of CPython 3.10's regression tests (`python -m test -j2`, 15 test modules) on the same machine: tlb:tlb_flush and sched_switch of the test runner and its two worker processes",
    },
];

/// The trace called `name`.
pub(crate) fn trace(name: &str) -> Option<&'static Trace> {
    TRACES.iter().find(|t| t.name == name)
}

/// The refill assumption of every replay part: each thread references this many pages after
/// each of its requests and each time it wakes (docs/replay.md, rule 18).
pub(crate) const WORKING_SET_PAGES: u64 = 512;

const FULL_CEILINGS: &[&str] = &[
    "linux-6.18@ceiling=33",
    "linux-6.18@ceiling=1",
    "linux-6.18@ceiling=2",
    "linux-6.18@ceiling=4",
    "linux-6.18@ceiling=8",
    "linux-6.18@ceiling=16",
    "linux-6.18@ceiling=64",
    "linux-6.18@ceiling=128",
    "linux-6.18@ceiling=256",
    "linux-6.18@ceiling=512",
];

const QUICK_CEILINGS: &[&str] = &[
    "linux-6.18@ceiling=33",
    "linux-6.18@ceiling=1",
    "linux-6.18@ceiling=8",
    "linux-6.18@ceiling=128",
    "linux-6.18@ceiling=512",
];

struct Preset {
    name: &'static str,
    why: &'static str,
}

const PRESETS: &[Preset] = &[
    Preset {
        name: "skylake",
        why: "the client core S1 ran on (skylake: INVLPG 200 cycles as measured in 2017, the figure behind the kernel's ≈ 100 ns per page)",
    },
    Preset {
        name: "icelake-server",
        why: "an Intel server core (icelake-server, 2.3 GHz): a slower clock and a larger STLB (2,048 entries) than skylake's",
    },
    Preset {
        name: "zen3",
        why: "an AMD core (zen3, EPYC Milan): INVLPGB present, but a 2- or 4-CPU replay never gives an mm a global ASID (more than 3 active CPUs needed)",
    },
    Preset {
        name: "zen4",
        why: "the newest AMD core (zen4, EPYC Genoa); this project's machine is a later AMD EPYC",
    },
];

const TRACE_SETTINGS: &str = "the recorded trace replayed under linux-6.18 at each ceiling (docs/replay.md: requests rebuilt from the initiators' reason 4 and 3 events, the schedule from sched_switch). Refill: each thread references a working set of 512 pages (2 MiB) after each of its requests and each time it wakes: the trace has no memory accesses, so this is an assumption; 512 pages fit the second-level TLB of every preset (1,536 to 3,072 entries), so a full flush costs a refill of all of them and a partial one only of the pages it flushed, which is the trade the ceiling decides. Sizes: the recording kernel ran at the default ceiling 33 (debugfs writes are refused on this machine), so requests above 33 pages were recorded as full flushes (censored) and stay full at every ceiling: above 33 the trace curves can only move by the requests the recording kept sizes for. The kbuild part carries the sizes above 33 (measured munmap lengths)";

const KBUILD_SETTINGS: &str = "S1's kbuild scenario at S1's settings (make -j8 on 4 CPUs, S1's fault rate) under linux-6.18 at each ceiling, in a representative window of 200 ms of simulated time (S1 runs kbuild's own 1,000 ms; 200 keeps the 120 runs of this part within the study's time budget): slots never run out of jobs and their first jobs are already under way, so the window is in steady state from its start; 200 ms on 4 CPUs is ≈ 0.8 CPU-seconds, ≈ 3 compile jobs of 274 ms median, the seeds drawing different job mixes. Its flush sizes are the measured distribution of a kernel build (munmap lengths 9–16 pages 59%, 33–64 23%, 65–256 16%, 257–512 1%; docs/workloads.md), which the traces cannot give above 33, and its memory references are the scenario's own, so refill is not an assumption here. Headline: the build's speed (CPU-seconds of the programs' work per second)";

/// S10's parts: per preset, each trace and the kbuild scenario, at every ceiling.
pub(crate) fn s10_parts(size: Size) -> Vec<Part> {
    let presets: Vec<&Preset> = match size {
        Size::Full => PRESETS.iter().collect(),
        // Quick: one Intel and one AMD preset.
        Size::Quick => vec![&PRESETS[0], &PRESETS[3]],
    };
    let ceilings = size.pick(FULL_CEILINGS, QUICK_CEILINGS).to_vec();
    let mut parts = Vec::new();
    for preset in presets {
        for (trace, window_ms, quick_ms) in [(&TRACES[0], 4_000, 250), (&TRACES[1], 0, 2_000)] {
            parts.push(Part {
                label: format!("{} trace on {}", trace.name, preset.name),
                sweep: None,
                machine: preset.name,
                machine_why: preset.why,
                guest: None,
                // The recording machine's 2 CPUs.
                cpus: 2,
                scenario: trace.scenario,
                params: Params {
                    // Representative window: the first `window_ms` of the trace (0: all of
                    // it). kbuild: 4 s of the 20 (quick: 0.25 s); every second of it is the
                    // same stream of compile jobs. python: all 20 s (quick: 2 s).
                    window_ms: size.pick(window_ms, quick_ms),
                    ..Params::default()
                },
                settings_why: TRACE_SETTINGS,
                policies: ceilings.clone(),
                measures: vec![FlushCostUs, FullFlushRequests, RefillWalks, IpisSent],
            });
        }
        parts.push(Part {
            label: format!("kbuild (make -j8, S1's distribution) on {}", preset.name),
            sweep: None,
            machine: preset.name,
            machine_why: preset.why,
            guest: None,
            // S1: 4 CPUs.
            cpus: 4,
            scenario: "kbuild",
            params: Params {
                // make -j8 (S1).
                tasks: 8,
                // Representative window: 200 ms of simulated time (S1 runs kbuild's own
                // 1,000 ms; 10 ceilings × 3 seeds × 4 presets of it would take ≈ 7 CPU-minutes).
                // Quick: 20 ms.
                window_ms: size.pick(200, 20),
                ..Params::default()
            },
            settings_why: KBUILD_SETTINGS,
            policies: ceilings.clone(),
            measures: vec![ScenarioMetric, DtlbWalks, FullFlushes, SystemS],
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traces_scenario_is_the_prefix_and_its_name() {
        for t in TRACES {
            assert_eq!(t.scenario, format!("{REPLAY_PREFIX}{}", t.name));
        }
    }

    #[test]
    fn every_replay_part_names_a_shipped_trace_that_reads() {
        for size in [Size::Full, Size::Quick] {
            for p in s10_parts(size) {
                if let Some(name) = p.scenario.strip_prefix(REPLAY_PREFIX) {
                    let t = trace(name).unwrap_or_else(|| panic!("{name}"));
                    let mut r =
                        tlblab_flushtrace::TraceReader::new(t.bytes, std::path::Path::new(t.name))
                            .unwrap();
                    assert!(r.next_record().unwrap().is_some(), "{name}");
                }
            }
        }
    }

    /// The quick study, on each replay part, does what get_flush_tlb_info() implies: a higher
    /// ceiling never makes more requests full, and at or above the recording ceiling (33) every
    /// run is the same, since the trace's sizes stop at 33 and larger ones were recorded as
    /// full (censored). (The CLI tests check that the output is the same on 1 and 2 threads.)
    #[test]
    fn the_quick_studys_replays_follow_the_ceiling() {
        let study = crate::find("s10").unwrap();
        let options =
            crate::Options { seeds: Some(2), size: Size::Quick, ..crate::Options::default() };
        let one = crate::run(study, &options).unwrap();
        for part in &one.parts {
            let curve = part.ceiling_curve.as_ref().unwrap_or_else(|| panic!("{}", part.label));
            assert_eq!(curve.baseline, 33);
            let best = curve.best.unwrap();
            assert!(curve.tied_with_best.contains(&best), "{}", part.label);
            assert_eq!(curve.best_per_seed.len(), 2);
            if !part.scenario.name.starts_with(REPLAY_PREFIX) {
                continue;
            }
            let at = |c: u64| {
                let p = curve.points.iter().find(|p| p.ceiling == c).unwrap();
                part.policies.iter().find(|q| q.policy.name == p.policy).unwrap()
            };
            let full = |c: u64| at(c).measures[1].mean.unwrap();
            let ceilings: Vec<u64> = curve.points.iter().map(|p| p.ceiling).collect();
            for w in ceilings.windows(2) {
                assert!(full(w[1]) <= full(w[0]), "{}: {w:?}", part.label);
            }
            assert!(full(1) > full(33), "{}: some recorded sizes are 2…33", part.label);
            for c in ceilings.iter().filter(|&&c| c > 33) {
                assert_eq!(at(*c).measures[0].values, at(33).measures[0].values, "{c}");
            }
        }
    }

    /// `BASE@ceiling=N` is BASE with only its ceiling (and name) changed.
    #[test]
    fn a_policy_at_a_ceiling_is_its_base_with_that_ceiling() {
        let base = tlblab_kernel::Policy::named("linux-6.18").unwrap();
        let at = crate::runner::policy_named("linux-6.18@ceiling=64").unwrap();
        assert_eq!(
            (at.name.as_str(), at.tlb_single_page_flush_ceiling),
            ("linux-6.18@ceiling=64", 64)
        );
        let same = tlblab_kernel::Policy {
            name: base.name.clone(),
            tlb_single_page_flush_ceiling: base.tlb_single_page_flush_ceiling,
            ..at
        };
        assert_eq!(serde_json::to_value(&same).unwrap(), serde_json::to_value(&base).unwrap());
        assert!(crate::runner::policy_named("linux-6.18@ceiling=lots").is_err());
        assert!(crate::runner::policy_named("linux-9.99@ceiling=33").is_err());
    }

    #[test]
    fn the_first_policy_is_the_kernels_default_ceiling() {
        for size in [Size::Full, Size::Quick] {
            for p in s10_parts(size) {
                assert_eq!(p.policies[0], "linux-6.18@ceiling=33", "{}", p.label);
            }
        }
    }
}
