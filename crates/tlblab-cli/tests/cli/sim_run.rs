//! `tlblab sim run`: scenarios under policies on the kernel model.

use crate::common::{
    json_keys, json_of, one_error, sim_output_doc, stdout_of, tlblab, undocumented, MECHANISMS,
};

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

/// `--explain` on S2's machine: each mechanism off in turn, same seeds, beside the runs with
/// all on; the guest's exits are the IPI's largest cost there. Deterministic, text and JSON.
#[test]
fn explain_runs_each_mechanism_off_and_is_byte_identical() {
    let args = |json: bool| {
        let mut a = vec!["sim", "run", "-m", "skylake-kvm", "-s", "madv-migrate", "--cpus", "2"];
        a.extend(["-p", "linux-4.13", "--iterations", "100", "--seeds", "2", "--explain"]);
        if json {
            a.push("--json");
        }
        a
    };
    let text = stdout_of(args(false));
    assert_eq!(text, stdout_of(args(false)));
    let text = String::from_utf8(text).unwrap();
    for needle in ["each mechanism off in turn", "guest", "idle-states", "csd-queue"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert_eq!(stdout_of(args(true)), stdout_of(args(true)));
    let r = json_of(args(true));
    assert_eq!(r["without"], serde_json::json!([]));
    let e = r["policies"][0]["explanation"].as_array().unwrap();
    let names: Vec<&str> = e.iter().map(|m| m["mechanism"].as_str().unwrap()).collect();
    assert_eq!(names, MECHANISMS);
    let xpfo = ["xpfo-events", "xpfo-direct-map-4k"];
    let mitigations: Vec<&str> =
        MECHANISMS.into_iter().filter(|n| n.starts_with("mitigation")).collect();
    // skylake-kvm's zap_batch and split_vma are 0 (its madvise and munmap costs hold them).
    let status = |n: &str| e.iter().find(|m| m["mechanism"] == n).unwrap()["status"].clone();
    // Its vCPUs are dedicated (overcommit 1): no preemption, so no PV flush either; XPFO's
    // mechanisms have no event to act on without an XPFO policy; and skylake-kvm has no
    // [mitigations]: its figures are taken as they are.
    // linux-4.13 calls every CPU of the mask: no condition function reads their TLB state.
    // Its idle vCPUs poll (idle=poll): no haltpoll governor.
    let absent =
        ["zap-batch", "vma-merge", "vcpu-preemption", "pv-tlb-flush", "tlbstate-lines", "haltpoll"];
    for n in [&absent[..], &xpfo[..], &mitigations[..]].concat() {
        assert_eq!(status(n), "not-present", "{n}");
    }
    let ran: Vec<_> = e.iter().filter(|m| m["status"] == "ran").collect();
    // skylake-kvm runs under EPT (nested-paging) and its idle vCPUs poll (poll-wake);
    // pointer-chase, stlb-pipelined, zero-page-line, compiler-reuse, rwsem-steal and
    // wakeup-preemption are always present (they change nothing here: madv-migrate chases no
    // pointer, touches one page at a time, reads no zero page, runs no compiler, has one task
    // per mm and one task per CPU).
    assert_eq!(ran.len(), 15, "nested-paging, poll-wake, pointer-chase, rwsem-steal present");
    assert!(ran.iter().all(|m| m["values"].as_array().unwrap().len() == 2));
    // 4.13 sends an IPI per iteration: without the guest's two exits each is cheaper.
    assert!(e[0]["change"].as_f64().unwrap() < 0.0, "{}", e[0]);
    assert_eq!(e[0]["significant"], true);
    let on = r["policies"][0]["mean"].as_f64().unwrap();
    let off = e[0]["mean"].as_f64().unwrap();
    assert!((e[0]["change"].as_f64().unwrap() - (off - on)).abs() < 1e-9);
}

/// A mechanism the machine lacks is listed, not run; one switched off for the run is too.
#[test]
fn explain_lists_absent_and_switched_off_mechanisms_without_running_them() {
    let r = json_of([
        "sim",
        "run",
        "-s",
        "madv-migrate",
        "--cpus",
        "2",
        "--iterations",
        "50",
        "--seeds",
        "2",
        "--without",
        "csd-queue",
        "--explain",
        "--json",
    ]);
    assert_eq!(r["without"], serde_json::json!(["csd-queue"]));
    let e = &r["policies"][0]["explanation"];
    assert_eq!(e[0]["status"], "not-present", "skylake is bare metal: {}", e[0]);
    assert!(e[0]["values"].as_array().unwrap().is_empty() && e[0]["mean"].is_null());
    assert_eq!(e[1]["status"], "ran");
    assert_eq!(e[2]["status"], "off");
    let text = String::from_utf8(stdout_of([
        "sim",
        "run",
        "-s",
        "madv-migrate",
        "--cpus",
        "2",
        "--iterations",
        "50",
        "--seeds",
        "1",
        "--without",
        "csd-queue",
        "--explain",
    ]))
    .unwrap();
    assert!(text.contains("mechanisms off in every run: csd-queue"), "{text}");
    assert!(text.contains("not present on this machine"), "{text}");
    assert!(text.contains("off in every run (--without)"), "{text}");
    assert!(text.contains("one seed: no interval"), "{text}");
}

/// `--without guest` is the preset without its `[guest]` section.
#[test]
fn without_guest_is_the_preset_without_its_guest_section() {
    let toml =
        String::from_utf8(stdout_of(["sim", "machines", "show", "skylake-kvm", "--toml"])).unwrap();
    let i = toml.find("\n[guest]").expect("skylake-kvm has [guest]");
    let end = toml[i + 1..].find("\n[").map_or(toml.len(), |j| i + 1 + j + 1);
    let dir = tempfile::tempdir().unwrap();
    let bare = dir.path().join("bare.toml");
    std::fs::write(&bare, format!("{}{}", &toml[..i + 1], &toml[end..])).unwrap();
    let values = |machine: &str, extra: &[&str]| {
        let mut a = vec!["sim", "run", "-m", machine, "-s", "madvise-busy", "--cpus", "4"];
        a.extend(["--iterations", "50", "--seeds", "2", "--json"]);
        a.extend_from_slice(extra);
        json_of(a)["policies"][0]["values"].clone()
    };
    let off = values("skylake-kvm", &["--without", "guest"]);
    assert_eq!(off, values(bare.to_str().unwrap(), &[]));
    assert_ne!(off, values("skylake-kvm", &[]));
}

#[test]
fn bad_mechanism_names_exit_2_with_the_known_names() {
    let e = one_error(
        tlblab().args(["sim", "run", "-s", "pingpong", "--without", "guest,idle-state"]),
        2,
    );
    assert!(e.contains("unknown mechanism \"idle-state\""), "{e}");
    assert!(e.contains("did you mean \"idle-states\"?"), "{e}");
    assert!(e.contains("guest, idle-states, csd-queue"), "{e}");
    let e = one_error(tlblab().args(["sim", "run", "-s", "pingpong", "--without", "pcid"]), 2);
    let known = MECHANISMS.join(", ");
    assert!(e.contains(&format!("unknown mechanism \"pcid\" (known: {known})")), "{e}");
}

#[test]
fn mechanisms_lists_every_switch_with_its_doc() {
    let text = String::from_utf8(stdout_of(["sim", "mechanisms"])).unwrap();
    for needle in ["guest", "idle-states", "csd-queue", "models:", "off:", "docs/kernel-model.md"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

/// docs/sim-output.md names every field of the run JSON with `--explain` (the kernel reports
/// in `runs` aside).
#[test]
fn run_json_fields_are_documented() {
    let r = json_of([
        "sim",
        "run",
        "-m",
        "skylake-kvm",
        "-s",
        "madv-migrate",
        "--cpus",
        "2",
        "--iterations",
        "50",
        "--seeds",
        "2",
        "-p",
        "linux-6.18,linux-4.14",
        "--explain",
        "--json",
    ]);
    let mut all = std::collections::BTreeSet::new();
    json_keys(&r, &["runs"], &mut all);
    let text = sim_output_doc();
    let missing = undocumented(&all, &text);
    assert!(missing.is_empty(), "docs/sim-output.md does not describe {missing:?}");
    assert!(text.contains("`tlblab.sim.run/1`"));
}

/// `sim scenarios` names every scenario and says which `tlblab bench` also runs; `sim policies`
/// names every policy; `show NAME --toml` is a policy file that runs exactly as NAME does, and a
/// misspelt switch in it is refused with the valid ones listed.
#[test]
fn scenarios_and_policies_are_listed_and_a_policy_template_runs_as_its_policy() {
    let text = String::from_utf8(stdout_of(["sim", "scenarios"])).unwrap();
    for needle in ["pingpong  (sim and live", "kbuild  (sim only", "tlb-flush2", "lazy-readers"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let text = String::from_utf8(stdout_of(["sim", "policies"])).unwrap();
    for needle in ["linux-4.13", "linux-6.18", "pti-deferred", "bad-no-switching-check"] {
        assert!(text.contains(&format!("\n{needle}\n")), "{needle}: {text}");
    }
    let shown = String::from_utf8(stdout_of(["sim", "policies", "show", "linux-4.14"])).unwrap();
    assert!(shown.contains("  pcid = true") && shown.contains("  lazy_cpumask = false"), "{shown}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.toml");
    std::fs::write(&file, stdout_of(["sim", "policies", "show", "linux-4.14", "--toml"])).unwrap();
    let run = |policy: &str| {
        let args = ["sim", "run", "-s", "madv-migrate", "--seeds", "1", "--json", "-p", policy];
        json_of(args)["policies"][0]["values"].clone()
    };
    assert_eq!(run(file.to_str().unwrap()), run("linux-4.14"));
    // A file is a template already: --toml refuses it rather than write an unreadable one.
    let path = file.to_str().unwrap();
    let e = one_error(tlblab().args(["sim", "policies", "show", path, "--toml"]), 2);
    assert!(e.contains("policy file already"), "{e}");
    let text = std::fs::read_to_string(&file).unwrap().replace("\npcid = ", "\npcidd = ");
    std::fs::write(&file, text).unwrap();
    let e =
        one_error(tlblab().args(["sim", "run", "-s", "pingpong", "-p", file.to_str().unwrap()]), 2);
    assert!(
        e.contains("mine.toml") && e.contains("did you mean \"pcid\"?") && e.contains("switches: "),
        "{e}"
    );
}
