//! `tlblab sim run`: scenarios under policies on the kernel model.

use crate::common::{json_of, one_error, stdout_of, tlblab};

/// The S2 mechanism, end to end, on S2's machine (a KVM guest with idle=poll, so no idle state
/// makes 4.13's idle CPU leave the mm): with 4.13's lazy mode every madvise interrupts the CPU
/// the thread just left; 4.14 with PCID leaves the mm at lazy entry, so no IPI is sent.
#[test]
fn madv_migrate_ipis_per_op_follow_the_lazy_mode() {
    let r = json_of([
        "sim",
        "run",
        "--machine",
        "skylake-kvm",
        "-s",
        "madv-migrate",
        "--cpus",
        "2",
        "--iterations",
        "200",
        "--seeds",
        "2",
        "--json",
        "-p",
        "linux-4.13,linux-4.14",
    ]);
    assert_eq!(r["schema"], "tlblab.sim.run/1");
    let ipis = |i: usize| {
        r["policies"][i]["runs"][0]["ipis_sent"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(ipis(0), 200, "one IPI per iteration in 4.13");
    assert_eq!(ipis(1), 0, "none in 4.14");
    let mean = |i: usize| r["policies"][i]["mean"].as_f64().unwrap();
    assert!(mean(1) < mean(0));
    assert!(r["policies"][1]["ratio"]["ci"]["high"].as_f64().unwrap() < 1.0);
}

#[test]
fn text_output_names_the_baseline_and_the_mirrored_kernels() {
    let out = String::from_utf8(stdout_of([
        "sim",
        "run",
        "-s",
        "pingpong",
        "--cpus",
        "1",
        "--iterations",
        "50",
        "-p",
        "linux-6.18,linux-4.14-nopcid",
    ]))
    .unwrap();
    assert!(out.contains("baseline"), "{out}");
    assert!(out.contains("linux-4.14-nopcid: Linux 4.14 booted with nopcid"), "{out}");
}

#[test]
fn runs_are_byte_identical() {
    let args = [
        "sim",
        "run",
        "-s",
        "munmap-threads",
        "--cpus",
        "4",
        "--iterations",
        "20",
        "--pages",
        "40",
        "--json",
    ];
    assert_eq!(stdout_of(args), stdout_of(args));
}

#[test]
fn bad_scenarios_policies_and_cpu_counts_exit_2() {
    let e = one_error(tlblab().args(["sim", "run", "-s", "nope"]), 2);
    assert!(e.contains("unknown scenario \"nope\"") && e.contains("madv-migrate"), "{e}");
    let e = one_error(tlblab().args(["sim", "run", "-s", "pingpong", "-p", "linux-9"]), 2);
    assert!(e.contains("unknown policy \"linux-9\""), "{e}");
    let e = one_error(tlblab().args(["sim", "run", "-s", "madvise-busy", "--cpus", "2"]), 2);
    assert!(e.contains("needs at least 4 CPUs"), "{e}");
}

/// kbuild runs as a window of simulated time (`--window-ms`) or as a build of `--jobs` jobs
/// run to the end; the metric is the build's speed either way.
#[test]
fn kbuild_runs_a_window_or_a_number_of_jobs() {
    let run = |extra: &[&str]| {
        let mut args = vec!["sim", "run", "-s", "kbuild", "--cpus", "2", "--tasks", "2"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--seeds", "1", "--json"]);
        json_of(args)
    };
    let window = run(&["--window-ms", "10"]);
    assert_eq!(window["metric"], "CPU-s/s");
    let r = &window["policies"][0]["runs"][0];
    let ms = r["elapsed_cycles"].as_f64().unwrap() / r["clock_mhz"].as_f64().unwrap() / 1e3;
    assert!(ms <= 10.0, "stopped at the window: {ms} ms");
    let speed = window["policies"][0]["mean"].as_f64().unwrap();
    assert!(speed > 0.5 && speed <= 2.0, "two CPUs do at most 2 CPU-s/s: {speed}");

    let build = run(&["--jobs", "2"]);
    let tasks = build["policies"][0]["runs"][0]["tasks"].as_array().unwrap();
    let ops: u64 = tasks.iter().map(|t| t["ops"].as_u64().unwrap()).sum();
    assert_eq!(ops, 2, "both jobs ran to the end");
    assert!(tasks.iter().all(|t| !t["exited"].is_null()));
}
