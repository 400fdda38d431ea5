//! What each built-in scenario takes from outside the model, and from where: the workload half
//! of a study's statement of its inputs (docs/studies.md, "Inputs: measured, copied, assumed").

use super::{BuildMix, Kind, ScenarioInfo};
use tlblab_types::provenance::InputOrigin;

/// One input of a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioInput {
    /// How it was obtained.
    pub origin: InputOrigin,
    /// What it is (`the loop`, `the build's process mix`).
    pub what: &'static str,
    /// Where it comes from, precisely enough to check.
    pub from: String,
}

/// The live loops' own program images (`Program::working_set`): measured here.
const WORKING_SET: (&str, &str) = (
    "the live loop's own code, stack and library pages per iteration",
    "Valgrind lackey traces of the live loop on the project's VM (docs/workloads.md, \"Working sets\")",
);

impl ScenarioInfo {
    /// Its inputs, in the order a statement lists them: the loop or mix it mirrors, then what
    /// was measured for it.
    pub fn inputs(&self) -> Vec<ScenarioInput> {
        let input = |origin, what, from: &str| ScenarioInput { origin, what, from: from.into() };
        let copied = |what, from: &str| input(InputOrigin::Copied, what, from);
        let defined = |what, from: &str| input(InputOrigin::Defined, what, from);
        let working_set = || input(InputOrigin::MeasuredHere, WORKING_SET.0, WORKING_SET.1);
        match self.kind {
            Kind::MadvMigrate | Kind::PingPong => {
                vec![copied("the loop", "studies.md S2"), working_set()]
            }
            Kind::PthreadMmap => vec![copied("the rounds", "studies.md S2"), working_set()],
            Kind::MadviseBusy => vec![copied("the loop", "studies.md S4"), working_set()],
            Kind::MadviseScale => vec![
                copied("the worker counts", "studies.md S4 (mmtests' stressng-madvise)"),
                defined(
                    "the loop",
                    "tlblab's stand-in for stress-ng's madvise stressor (docs/workloads.md)",
                ),
                working_set(),
            ],
            Kind::RtLatency => vec![
                defined("the interrupts-off bursts", "studies.md S4, beyond the study"),
                working_set(),
            ],
            Kind::MunmapThreads => {
                vec![defined("the loop", "tlblab's own (docs/workloads.md)"), working_set()]
            }
            Kind::Storm => vec![
                defined("the loop", "tlblab's own (docs/workloads.md, \"storm\")"),
                working_set(),
            ],
            Kind::VmapPurge => {
                vec![defined(
                    "the loop",
                    "tlblab's own, for S4's vmalloc flushes (docs/workloads.md)",
                )]
            }
            Kind::TlbFlush2 => vec![
                copied(
                    "the loop, its 1 MiB per task and its placement",
                    "will-it-scale's tests/tlb_flush2.c and its runner (docs/workloads.md)",
                ),
                working_set(),
            ],
            Kind::Hackbench => vec![copied(
                "the groups, messages, pipes or sockets and the start handshake",
                "rt-tests' hackbench.c (docs/workloads.md, \"hackbench\")",
            )],
            Kind::MunmapLatency => vec![copied(
                "the munmap microbenchmark",
                "LATR (Kumar et al., ASPLOS'18), as docs/workloads.md describes it",
            )],
            Kind::WebServer => vec![copied(
                "the request loop and the file sizes",
                "LATR's Apache workload and SPECweb99's static file mix (docs/workloads.md)",
            )],
            Kind::MigrateReaders => vec![defined(
                "the readers and the migrating thread",
                "tlblab's own, for migrc and LUF (docs/workloads.md, \"migrate-readers\")",
            )],
            Kind::LazyReaders
            | Kind::SharedWriters
            | Kind::SwitchingReaders
            | Kind::CollapseReaders => vec![defined(
                "the readers and writers",
                "written for the safety checker (docs/workloads.md, docs/safety.md)",
            )],
            Kind::Kbuild(mix) => {
                let measured = BuildMix::measured();
                let mix = mix();
                let mut inputs = vec![input(
                    InputOrigin::MeasuredHere,
                    "the build's process mix (job lengths, fault shares, buffers, forks, make's work)",
                    measured.source,
                ), input(
                    InputOrigin::MeasuredHere,
                    "the compiler's page reuse (references per ms and their LRU stack distances)",
                    "cachegrind and lackey on cc1 compiling Linux 6.12's mm/mmzone.c on the tlblab VM (tools/calibrate/results/cc1-page-reuse-2026-11-30.md)",
                )];
                if mix.source != measured.source {
                    // S5's build has no characterisation of its own: S1's rate stands in.
                    let origin = if mix.source.contains("S1's fault rate") {
                        InputOrigin::Assumed
                    } else {
                        InputOrigin::Copied
                    };
                    inputs.push(input(origin, "the build's fault rate", mix.source));
                }
                inputs
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::{scenario, SCENARIOS};

    /// Every scenario states at least one input, and one of the live loops says its working
    /// set was measured here exactly when its program has one.
    #[test]
    fn every_scenario_states_its_inputs() {
        for s in SCENARIOS {
            assert!(!s.inputs().is_empty(), "{}", s.name);
        }
        let measured = |name| {
            scenario(name)
                .unwrap()
                .inputs()
                .iter()
                .any(|i| i.origin == InputOrigin::MeasuredHere && i.what == WORKING_SET.0)
        };
        assert!(measured("madvise-busy") && measured("tlb-flush2") && measured("pingpong"));
        assert!(!measured("hackbench") && !measured("webserver"));
    }

    /// kbuild's mix and its compiler's page reuse are measured here, its fault rate copied
    /// from studies.md S1; S5's build borrows S1's rate: an assumption.
    #[test]
    fn the_builds_say_which_figure_is_whose() {
        let origins =
            |name| scenario(name).unwrap().inputs().iter().map(|i| i.origin).collect::<Vec<_>>();
        let here = InputOrigin::MeasuredHere;
        assert_eq!(origins("kbuild"), [here, here, InputOrigin::Copied]);
        assert_eq!(origins("kbuild-allmod"), [here, here, InputOrigin::Copied]);
        assert_eq!(origins("kbuild-xpfo"), [here, here, InputOrigin::Assumed]);
    }
}
