//! Output is a function of the input only: byte-identical across runs and across `--jobs`.

use crate::common::{golden_machine, golden_trace, stdout_of, tlblab};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A lackey trace of `lines` pseudo-random accesses (a fixed LCG, so the file is always the same)
/// over a few hundred pages of four 2 MiB regions, with runs that coalesce.
fn synthetic_lackey(path: &Path, lines: usize, seed: u64) {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut text = String::from("==1== synthetic\n");
    for _ in 0..lines {
        let r = next();
        let region = [0x0040_0000u64, 0x0060_0000, 0x4000_0000, 0x7ff0_0000][(r % 4) as usize];
        let addr = region + (next() % 96) * 4096 + next() % 4096;
        let letter = ["I ", " L", " S", " M"][(next() % 4) as usize];
        let size = [1u64, 2, 4, 8][(next() % 4) as usize];
        writeln!(text, "{letter} {addr:08x},{size}").unwrap();
        if r % 5 == 0 {
            writeln!(text, "{letter} {addr:08x},{size}").unwrap();
        }
    }
    std::fs::write(path, text).unwrap();
}

/// Trace files of different sizes, so that with 2 jobs the runs finish out of order.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let big = dir.join("big.lackey");
    let small = dir.join("small.lackey");
    synthetic_lackey(&big, 20_000, 1);
    synthetic_lackey(&small, 300, 2);
    vec![big, golden_trace(), small]
}

fn trace_args(machine: &Path, files: &[PathBuf], jobs: &str, json: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["sim".into(), "trace".into(), "--jobs".into(), jobs.into()];
    if json {
        args.push("--json".into());
    } else {
        args.push("--per-cpu".into());
    }
    args.push("--machine".into());
    args.push(machine.into());
    args.extend(files.iter().map(OsString::from));
    args
}

#[test]
fn trace_output_is_identical_across_runs_and_job_counts() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    for machine in [golden_machine(), PathBuf::from("skylake")] {
        for json in [false, true] {
            let reference = stdout_of(trace_args(&machine, &files, "1", json));
            assert!(!reference.is_empty());
            for jobs in ["1", "2", "2"] {
                let again = stdout_of(trace_args(&machine, &files, jobs, json));
                assert!(
                    again == reference,
                    "output differs (machine {}, json {json}, --jobs {jobs})",
                    machine.display()
                );
            }
            if json {
                let report: serde_json::Value = serde_json::from_slice(&reference).unwrap();
                let inputs: Vec<_> =
                    report["runs"].as_array().unwrap().iter().map(|r| r["input"].clone()).collect();
                let given: Vec<serde_json::Value> =
                    files.iter().map(|f| f.display().to_string().into()).collect();
                assert_eq!(inputs, given, "runs are in the order of the files given");
            }
        }
    }
}

#[test]
fn demo_output_is_identical_across_runs() {
    for json in [false, true] {
        let args = |json: bool| {
            let mut a = vec!["sim", "demo", "--accesses", "20000"];
            if json {
                a.push("--json");
            }
            a
        };
        let first = stdout_of(args(json));
        let second = stdout_of(args(json));
        assert!(!first.is_empty());
        assert!(first == second, "sim demo (json {json}) differs between two runs");
    }
}

#[test]
fn demo_seed_changes_the_random_workloads_only() {
    let run = |seed: &str| {
        crate::common::json_of(["sim", "demo", "--json", "--accesses", "20000", "--seed", seed])
    };
    let (a, b) = (run("1"), run("2"));
    let by_name = |report: &serde_json::Value, name: &str| {
        report["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == name)
            .unwrap_or_else(|| panic!("no workload {name}"))["stats"]
            .clone()
    };
    // loop-1024 draws no random numbers; random-65536 does.
    assert_eq!(by_name(&a, "loop-1024"), by_name(&b, "loop-1024"));
    assert_ne!(by_name(&a, "random-65536"), by_name(&b, "random-65536"));
    tlblab().args(["sim", "demo", "--accesses", "1000", "--seed", "2"]).assert().success();
}
