//! The predicted set of `tlblab study`: the live scenarios at parameters the host preset's
//! calibration never ran (docs/study-output.md, "Calibrated and predicted"), and the *shapes*:
//! ratios between neighbouring configurations, measured against simulated.
//!
//! The main set's configurations are mostly the very loops the host preset times
//! (tlblab_pathcost::MEASURED_LOOPS); these are not: storm across the flush ceiling (33 pages)
//! and with mprotect, pingpong reading pages between switches, munmap-threads and pthread-mmap
//! at other page counts, tlb-flush2 at one task. Whether each really is predicted is still
//! decided by [`super::calibration`], configuration by configuration.

use super::steps::{Outcome, Runner};
use super::LiveSettings;
use serde_json::{json, Value};
use std::path::Path;

/// One `tlblab bench` call of the predicted set: a scenario and its options, full and quick.
struct Group {
    scenario: &'static str,
    full: &'static [(&'static str, &'static str)],
    quick: &'static [(&'static str, &'static str)],
}

/// The predicted set. Every option is given explicitly, so that the configurations do not move
/// when a scenario's defaults do; the busy sibling is one CPU (the live part needs two).
const SET: [Group; 6] = [
    Group {
        scenario: "storm",
        full: &[("--op", "munmap"), ("--pages", "8,32,34,64,512"), ("--busy", "0,1")],
        quick: &[("--op", "munmap"), ("--pages", "32,34"), ("--busy", "0,1")],
    },
    Group {
        scenario: "storm",
        full: &[("--op", "mprotect"), ("--pages", "1,32,34,512"), ("--busy", "0,1")],
        quick: &[("--op", "mprotect"), ("--pages", "1"), ("--busy", "0,1")],
    },
    Group {
        scenario: "pingpong",
        full: &[("--touch", "16,128,512,2048")],
        quick: &[("--touch", "512")],
    },
    Group {
        scenario: "munmap-threads",
        full: &[("--tasks", "1"), ("--mode", "threads"), ("--pages", "1,8,64,256")],
        quick: &[("--tasks", "1"), ("--mode", "threads"), ("--pages", "1,256")],
    },
    Group {
        scenario: "pthread-mmap",
        full: &[("--tasks", "2"), ("--pages", "1,16,64")],
        quick: &[("--tasks", "2"), ("--pages", "16")],
    },
    Group {
        scenario: "tlb-flush2",
        full: &[("--tasks", "1"), ("--mode", "threads,processes")],
        quick: &[("--tasks", "1"), ("--mode", "threads,processes")],
    },
];

/// Runs the predicted set: one `tlblab bench` per group, into `DIR/bench-predicted-K.json`.
pub(super) fn bench(
    runner: &mut Runner,
    live: &LiveSettings,
    quick: bool,
    dir: &Path,
    noise: &str,
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for (k, g) in SET.iter().enumerate() {
        let file = dir.join(format!("bench-predicted-{}.json", k + 1));
        let mut a: Vec<String> = vec!["bench".into(), g.scenario.into()];
        for (option, value) in if quick { g.quick } else { g.full } {
            a.extend([option.to_string(), value.to_string()]);
        }
        if g.scenario == "pthread-mmap" {
            a.extend(["--iterations".into(), live.pthread_iterations.to_string()]);
        }
        for (option, value) in [
            ("--runs", live.runs.to_string()),
            ("--run-ms", live.run_ms.to_string()),
            ("--warmup-ms", live.warmup_ms.to_string()),
            ("-o", file.display().to_string()),
            ("--noise", noise.to_string()),
        ] {
            a.extend([option.to_string(), value]);
        }
        // As the main set: timed without the tracepoint, and the harness overhead is the main
        // set's (measured once).
        a.extend(["-q", "--force", "--no-trace", "--no-overhead"].map(String::from));
        let name = format!("live benchmarks, the predicted set: {}", g.scenario);
        out.push(runner.bench(&name, &a, &file));
    }
    out
}

/// A ratio between two neighbouring configurations: `numerator` over `denominator`, each a
/// scenario and the parameters that pick it out (the others may be anything).
struct Shape {
    name: &'static str,
    numerator: (&'static str, &'static [(&'static str, &'static str)]),
    denominator: (&'static str, &'static [(&'static str, &'static str)]),
}

/// The shapes checked: each asks whether the model moves as the machine does when one
/// parameter crosses something that matters (the flush ceiling, a busy sibling that must be
/// interrupted, pages read between switches, a second task).
const SHAPES: [Shape; 12] = [
    Shape {
        name: "storm munmap, busy 0: 34 pages over 32 (past the flush ceiling of 33)",
        numerator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "34")]),
        denominator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "32")]),
    },
    Shape {
        name: "storm munmap, busy 1: 34 pages over 32 (past the flush ceiling of 33)",
        numerator: ("storm", &[("op", "munmap"), ("busy", "1"), ("pages", "34")]),
        denominator: ("storm", &[("op", "munmap"), ("busy", "1"), ("pages", "32")]),
    },
    Shape {
        name: "storm munmap, 1 page: busy 1 over busy 0 (the IPI's share)",
        numerator: ("storm", &[("op", "munmap"), ("busy", "1"), ("pages", "1")]),
        denominator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "1")]),
    },
    Shape {
        name: "storm munmap, 32 pages: busy 1 over busy 0",
        numerator: ("storm", &[("op", "munmap"), ("busy", "1"), ("pages", "32")]),
        denominator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "32")]),
    },
    Shape {
        name: "storm munmap, 64 pages: busy 1 over busy 0",
        numerator: ("storm", &[("op", "munmap"), ("busy", "1"), ("pages", "64")]),
        denominator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "64")]),
    },
    Shape {
        name: "storm munmap, busy 0: 512 pages over 64",
        numerator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "512")]),
        denominator: ("storm", &[("op", "munmap"), ("busy", "0"), ("pages", "64")]),
    },
    Shape {
        name: "storm mprotect, 1 page: busy 1 over busy 0",
        numerator: ("storm", &[("op", "mprotect"), ("busy", "1"), ("pages", "1")]),
        denominator: ("storm", &[("op", "mprotect"), ("busy", "0"), ("pages", "1")]),
    },
    Shape {
        name: "pingpong: --touch 512 over --touch 0",
        numerator: ("pingpong", &[("touch", "512")]),
        denominator: ("pingpong", &[("touch", "0")]),
    },
    Shape {
        name: "pingpong: --touch 2048 over --touch 0",
        numerator: ("pingpong", &[("touch", "2048")]),
        denominator: ("pingpong", &[("touch", "0")]),
    },
    Shape {
        name: "tlb-flush2 threads: 2 tasks over 1",
        numerator: ("tlb-flush2", &[("mode", "threads"), ("tasks", "2")]),
        denominator: ("tlb-flush2", &[("mode", "threads"), ("tasks", "1")]),
    },
    Shape {
        name: "tlb-flush2 processes: 2 tasks over 1",
        numerator: ("tlb-flush2", &[("mode", "processes"), ("tasks", "2")]),
        denominator: ("tlb-flush2", &[("mode", "processes"), ("tasks", "1")]),
    },
    Shape {
        name: "munmap-threads, 1 task: 256 pages over 1",
        numerator: ("munmap-threads", &[("tasks", "1"), ("pages", "256")]),
        denominator: ("munmap-threads", &[("tasks", "1"), ("pages", "1")]),
    },
];

/// The shapes, as `results.json` lists them for the report (which finds each side among the
/// measured configurations; a side that did not run leaves the shape unchecked).
pub(super) fn shapes() -> Vec<Value> {
    let side = |(scenario, params): (&str, &[(&str, &str)])| {
        let params: serde_json::Map<String, Value> =
            params.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect();
        json!({ "scenario": scenario, "params": params })
    };
    SHAPES
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "numerator": side(s.numerator),
                "denominator": side(s.denominator),
            })
        })
        .collect()
}
