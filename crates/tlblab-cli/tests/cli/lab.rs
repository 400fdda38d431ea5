//! `tlblab study`: the main job writes results.json with every part, and says what it skipped.

use crate::common::tlblab;
use serde_json::Value;

fn study(extra: &[&str]) -> (std::process::Output, Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out =
        tlblab().args(["study", "--quick", "--out"]).arg(dir.path()).args(extra).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let bytes = std::fs::read(dir.path().join("results.json")).expect("results.json written");
    (out, serde_json::from_slice(&bytes).unwrap(), dir)
}

/// The status and reason (empty when none) of the step called `name`.
fn step_status<'a>(steps: &'a [Value], name: &str) -> (&'a str, &'a str) {
    let step = steps.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{name}"));
    (step["status"].as_str().unwrap(), step["reason"].as_str().unwrap_or(""))
}

#[test]
fn without_the_live_part_the_studies_still_run_and_the_skips_say_why() {
    let (out, v, dir) = study(&["--no-live"]);
    assert_eq!(v["schema"], "tlblab.study/1");
    let studies = v["sim_studies"]["studies"].as_array().unwrap();
    let names: Vec<&str> = studies.iter().map(|s| s["short"].as_str().unwrap()).collect();
    assert_eq!(names, ["s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10"]);
    // The studies beyond the debates run at their quick settings, in a step of their own.
    assert!(studies.iter().all(|s| s["quick"] == true));
    assert_eq!(v["bench"]["skipped"], "--no-live");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps[0]["status"], "done");
    assert_eq!(steps[1]["name"], "simulated studies beyond the debates (quick)");
    assert_eq!(steps[1]["status"], "done");
    // The safety checks are simulations too: they run; every live step is skipped.
    let (checks, live): (Vec<&Value>, Vec<&Value>) =
        steps[2..].iter().partition(|s| s["name"].as_str().unwrap().starts_with("safety check: "));
    assert!(checks.iter().all(|s| s["status"] == "done"), "{checks:?}");
    assert!(live.iter().all(|s| s["status"] == "skipped" && s["reason"] == "--no-live"));
    // Every policy of the studies passes; each known-bad variant is caught somewhere.
    let runs = v["safety"]["runs"].as_array().unwrap();
    for r in runs {
        let (policy, n) = (r["policy"].as_str().unwrap(), r["result"]["violations"].as_u64());
        if !policy.starts_with("bad-") {
            assert_eq!(n, Some(0), "{policy} on {}", r["scenario"]);
        }
    }
    for bad in [
        "bad-lazy-no-catch-up",
        "bad-partial-flush",
        "bad-pti-no-user-flush",
        "bad-collapse-no-freed-tables",
        "bad-invlpgb-2m-stride",
    ] {
        assert!(runs
            .iter()
            .any(|r| r["policy"] == bad && r["result"]["violations"].as_u64() > Some(0)));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The conclusions first: the summary, one verdict line per part, the safety matrix.
    let summary = stdout.find("\nSummary\n").expect("a summary");
    assert!(stdout[summary..].contains("\n- S4 rt-latency"), "{stdout}");
    assert!(stdout.contains("\nlatr ") && stdout.contains("results: "), "{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 80), "{stdout}");
    // One line per phase on the terminal, not one per check.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.lines().count() <= 5, "{stderr}");
    assert!(stderr.contains("tlblab: safety checks: 126 done"), "{stderr}");
    assert!(stderr.contains("tlblab: live part: 5 skipped (--no-live)"), "{stderr}");
    // The report says which parts did not run, and why.
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(page.contains("Appendix: what ran") && page.contains("--no-live"));
    assert!(page.contains("Safety: stale translations each policy lets a CPU use"));
    assert!(stdout
        .trim_end()
        .ends_with(&format!("report: {}", dir.path().join("report.html").display())));
    // A second run into the same directory is refused unless --force.
    let again = tlblab().args(["study", "--quick", "--no-live", "--out"]).arg(dir.path()).output();
    assert_eq!(again.unwrap().status.code(), Some(2));
}

#[test]
fn skipped_parts_are_left_out_and_say_which_flag_left_them() {
    let (out, v, _dir) = study(&["--only", "s2", "--skip", "checks,live,peers"]);
    assert_eq!(v["sim_studies"]["studies"][0]["short"], "s2");
    assert_eq!(v["safety"]["skipped"], "--skip checks");
    assert_eq!(v["bench"]["skipped"], "--skip live");
    assert_eq!(v["peers"]["skipped"], "--skip live", "peers go with the live part");
    let steps = v["steps"].as_array().unwrap();
    let status = |name: &str| step_status(steps, name);
    assert_eq!(status("simulated studies"), ("done", ""));
    assert_eq!(status("safety checks"), ("skipped", "--skip checks"));
    assert_eq!(status("live benchmarks"), ("skipped", "--skip live"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tlblab: safety checks: skipped (--skip checks)"), "{stderr}");
    // A part that does not exist is refused before anything runs, naming the parts.
    let args = ["study", "--quick", "--skip", "tests", "--out", "/nonexistent/x"];
    let bad = tlblab().args(args).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(["checks", "live", "peers"].iter().all(|p| stderr.contains(p)), "{stderr}");
}

#[test]
fn with_root_every_scenario_is_measured_and_one_is_traced_and_replayed() {
    if !nix::unistd::geteuid().is_root() || tlblab_tracefs::Tracefs::find_or_mount().is_err() {
        eprintln!("skipped: needs root and tracefs");
        return;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    // The live part is what this test checks; the studies step and the safety checks run in
    // full in the test above, and here are one study and a part left out.
    let (_, v, dir) = study(&["--only", "s2", "--skip", "checks"]);
    assert_eq!(v["safety"]["skipped"], "--skip checks");
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(step_status(steps, "safety checks"), ("skipped", "--skip checks"));
    assert!(!steps.iter().any(|s| s["name"].as_str().unwrap().starts_with("safety check: ")));
    let configs = v["bench"]["configs"].as_array().unwrap();
    let scenarios: std::collections::BTreeSet<&str> =
        configs.iter().map(|c| c["config"]["scenario"].as_str().unwrap()).collect();
    for s in tlblab_live::scenarios().iter().map(|s| s.name) {
        assert!(scenarios.contains(s), "{s} missing from {scenarios:?}");
    }
    // Raw samples are kept: every measured configuration has its runs.
    assert!(configs.iter().all(|c| !c["runs"].as_array().unwrap().is_empty()));
    assert_eq!(v["trace_report"]["schema"], "tlblab.trace.report/1");
    assert!(v["trace_report"]["totals"]["flush_events"].as_u64().unwrap() > 100);
    assert_eq!(v["replay"]["policies"].as_array().unwrap().len(), 3);
    assert!(dir.path().join("madvise-busy.flushtrace").is_file());
    // Each measured configuration beside its simulation on this machine's preset: every live
    // scenario has a model.
    let sims = v["host_simulations"]["runs"].as_array().unwrap();
    assert_eq!(sims.len(), configs.len());
    for (sim, c) in sims.iter().zip(configs) {
        assert_eq!(sim["scenario"], c["config"]["scenario"]);
        let simulated = sim["result"]["policies"][0]["mean"].as_f64();
        assert!(simulated.is_some_and(|m| m > 0.0), "{sim}");
    }
    assert!(dir.path().join("host.toml").is_file());
    // Every simulated configuration is classified by scaling each measured loop in turn. The
    // model's one-page MADV_DONTNEED is the measured dontneed_1 by construction (zap_batch is
    // its remainder): madvise-busy --busy 0's prediction moves with that loop.
    let predicted = v["host_simulations"]["predicted_runs"].as_array().unwrap();
    for sim in sims.iter().chain(predicted) {
        let class = sim["calibration"]["class"].as_str().unwrap();
        assert!(["calibrated", "predicted"].contains(&class), "{sim}");
    }
    // (Only when zap_batch was derived from the measurement: on a busy machine a noisy
    // dontneed_1 can fall back to the copied figure. Whether it is *most* of the value depends
    // on the measured fault against the measured DONTNEED, so only its presence is asserted.)
    let busy0 = sims.iter().find(|s| s["key"] == "madvise-busy --busy 0").expect("busy 0 ran");
    let zap_batch_measured = v["host_simulations"]["provenance"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l.as_str().unwrap().starts_with("[measured] kernel.zap_batch "));
    if zap_batch_measured {
        let share = busy0["calibration"]["shares"]["dontneed_1"].as_f64().unwrap();
        assert!(share > 0.1, "{busy0}");
    }
    // The predicted set ran (each group a bench of its own), and its configurations were
    // simulated in the same order.
    let groups = v["predicted_bench"].as_array().unwrap();
    assert_eq!(groups.len(), 6);
    let keys: Vec<String> = groups
        .iter()
        .flat_map(|g| g["configs"].as_array().unwrap().iter())
        .map(|c| {
            let p = c["config"]["params"].as_object().unwrap();
            let mut key = c["config"]["scenario"].as_str().unwrap().to_string();
            for (k, v) in p {
                key += &format!(" --{k} {}", v.as_str().unwrap());
            }
            key
        })
        .collect();
    let simulated: Vec<&str> = predicted.iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, simulated);
    assert!(keys.iter().any(|k| k == "storm --busy 1 --op munmap --pages 34"), "{keys:?}");
    assert!(dir.path().join("calibration/host-dontneed_1.toml").is_file());
    // The loops were timed twice, before the live part and after it, in that order; every
    // configuration was simulated on both presets (the first seed on the earlier one).
    let calibrations = v["host_simulations"]["calibrations"].as_array().unwrap();
    assert_eq!(calibrations.len(), 2, "{calibrations:?}");
    let at = |i: usize| calibrations[i]["measured_at_s"].as_f64().unwrap();
    assert!(at(0) < at(1), "{calibrations:?}");
    assert!(dir.path().join("host-before.toml").is_file());
    for c in calibrations {
        let loops = c["loops_ns"].as_object().unwrap();
        assert!(loops["null_syscall"].as_f64().is_some_and(|ns| ns > 0.0), "{c}");
    }
    for sim in sims.iter().chain(predicted) {
        let first = sim["result"]["policies"][0]["values"][0].as_f64().unwrap();
        assert_eq!(sim["drift"]["after"].as_f64(), Some(first), "{sim}");
        assert!(sim["drift"]["before"].as_f64().is_some_and(|x| x > 0.0), "{sim}");
    }
    let steps: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    let place = |name: &str| steps.iter().position(|s| *s == name).expect(name);
    assert!(place("host preset, before the live part") < place("live benchmarks"));
    assert!(place("live benchmarks") < place("host preset, after the live part"));
    // With hackbench installed (the CI installs rt-tests) the peers ran inside the bracket
    // too, and each has its drift as every live row.
    if let Some(runs) = v["peers"]["runs"].as_array() {
        let first = "hackbench -g 1 -l 200 (pipes, processes), run 1 of 3";
        assert!(place(first) < place("host preset, after the live part"));
        for run in runs {
            assert_eq!(run["drift"]["after"].as_f64(), run["simulated"][0].as_f64(), "{run}");
            assert!(run["drift"]["before"].as_f64().is_some_and(|x| x > 0.0), "{run}");
        }
    }
}

fn report_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-report/tests/fixtures")
        .join(name)
}

#[test]
fn report_renders_saved_results_as_html_or_markdown_and_refuses_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let inputs = ["study-s1-quick.json", "bench-madvise-busy.json", "study-results-quick.min.json"];
    let out = tlblab()
        .arg("report")
        .args(inputs.map(report_fixture))
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
    assert!(!page.contains("<script") && !page.contains("https://"));
    assert!(page.contains("Simulated and measured on this machine"));
    let md = tlblab()
        .args(["report", "--format", "markdown", "-o", "-"])
        .arg(report_fixture("bench-madvise-busy.json"))
        .output()
        .unwrap();
    assert!(md.status.success());
    assert!(String::from_utf8_lossy(&md.stdout).contains("## Benchmark: madvise-busy"));
    // An unknown schema: bad input, naming the file.
    let bad = tlblab().arg("report").arg(report_fixture("bad-unknown-schema.json")).output();
    let bad = bad.unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad-unknown-schema.json"));
}
