//! `tlblab sweep`: a bad spec refused before anything runs, resuming after Ctrl-C, the same
//! results whatever the thread count, and a study run as a sweep giving the study's values.

use crate::common::{one_error, tlblab};
use serde_json::Value;
use std::path::Path;

/// A small sweep: 2 policies × 2 CPU counts × 2 seeds of a short pingpong.
const SMALL: &str = r#"
name = "small"
seeds = 2
baseline = "linux-4.13"
measures = ["scenario_metric", "ipis_per_op"]

[[sweep]]
machine = "skylake"
cpus = [2, 4]
scenario = "pingpong"
policy = ["linux-4.13", "linux-4.14"]
iterations = 100
touch = 8
"#;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn run_sweep(spec: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    tlblab().arg("sweep").arg(spec).arg("-o").arg(out).args(extra).output().unwrap()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn a_sweep_writes_one_row_per_job_and_the_same_bytes_with_any_thread_count() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write(tmp.path(), "small.toml", SMALL);
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let out = tmp.path().join(format!("out-{threads}"));
        let o = tlblab()
            .env("RAYON_NUM_THREADS", threads)
            .arg("sweep")
            .arg(&spec)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        outputs.push(out);
    }
    for file in ["results.jsonl", "results.parquet", "summary.json", "summary.txt"] {
        let a = std::fs::read(outputs[0].join(file)).unwrap();
        let b = std::fs::read(outputs[1].join(file)).unwrap();
        assert!(a == b, "{file} differs between 1 and 2 threads");
    }
    let rows = lines(&outputs[0].join("results.jsonl"));
    assert_eq!(rows.len(), 8, "2 policies × 2 CPU counts × 2 seeds");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["index"], i as u64, "plan order");
        assert!(r["measures"]["scenario_metric"].as_f64().unwrap() > 0.0);
        assert!(r["counters"]["events"].as_u64().unwrap() > 0);
    }
    // The Parquet file is a real one: its magic bytes at both ends.
    let parquet = std::fs::read(outputs[0].join("results.parquet")).unwrap();
    assert!(parquet.starts_with(b"PAR1") && parquet.ends_with(b"PAR1"));
    // Ratios against linux-4.13 at the same CPU count: PCID keeps pingpong's translations
    // across the switches, so 4.14 is faster at both counts.
    let summary: Value =
        serde_json::from_slice(&std::fs::read(outputs[0].join("summary.json")).unwrap()).unwrap();
    let points = summary["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let faster = points
        .iter()
        .filter(|p| !p["is_baseline"].as_bool().unwrap())
        .map(|p| p["measures"][0]["ratio"]["ci"]["point"].as_f64().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(faster.len(), 2);
    assert!(faster.iter().all(|&r| r < 1.0), "{faster:?}");
}

#[test]
fn a_bad_spec_is_refused_with_its_line_and_key_before_any_job_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &[&str])] = &[
        ("unknown axis", "cpuss = [2, 4]", &["line 9", "cpuss", "did you mean \"cpus\""]),
        ("unknown policy", "policy = [\"linux-4.13\", \"linux-9.99\"]", &["line 11", "linux-9.99"]),
        ("empty grid", "cpus = []", &["line 9", "cpus = [] leaves the grid empty"]),
        ("out of range", "cpus = [2, 5000]", &["line 9", "cpus = 5000 is outside 1 to 4096"]),
        ("wrong type", "cpus = \"four\"", &["line 9", "cpus must be a whole number"]),
        (
            "too few CPUs",
            "scenario = \"madvise-busy\"",
            &["line 9, `[[sweep]] cpus`", "madvise-busy needs at least 4 CPUs"],
        ),
    ];
    for (what, line, expected) in cases {
        let replaced = SMALL
            .lines()
            .map(|l| {
                let key = line.split('=').next().unwrap().trim();
                let own = l.split('=').next().unwrap().trim();
                if own == key || (key == "cpuss" && own == "cpus") {
                    line.to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let spec = write(tmp.path(), "bad.toml", &replaced);
        let out = tmp.path().join("never");
        let err = one_error(tlblab().arg("sweep").arg(&spec).arg("-o").arg(&out), 2);
        assert!(err.contains("bad.toml"), "{what}: {err}");
        for e in *expected {
            assert!(err.contains(e), "{what}: expected {e:?} in {err}");
        }
        assert!(!out.exists(), "{what}: nothing is written before the spec is accepted");
    }
    // Neither a missing grid nor an unknown top-level key slips through.
    let spec = write(tmp.path(), "empty.toml", "name = \"x\"\n");
    let err = one_error(tlblab().arg("sweep").arg(&spec), 2);
    assert!(err.contains("no [[sweep]] table"), "{err}");
    let spec = write(tmp.path(), "typo.toml", &format!("seed = 3\n{SMALL}"));
    let err = one_error(tlblab().arg("sweep").arg(&spec), 2);
    assert!(err.contains("line 1") && err.contains("seed"), "{err}");
}

#[test]
fn an_existing_results_directory_needs_resume_or_force() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write(tmp.path(), "small.toml", SMALL);
    let out = tmp.path().join("out");
    assert!(run_sweep(&spec, &out, &[]).status.success());
    let err = one_error(tlblab().arg("sweep").arg(&spec).arg("-o").arg(&out), 2);
    assert!(err.contains("--resume") && err.contains("--force"), "{err}");
    // Resuming a finished sweep runs nothing and writes the same results.
    let before = std::fs::read(out.join("results.jsonl")).unwrap();
    let o = run_sweep(&spec, &out, &["--resume"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("8 of 8 jobs already recorded"));
    assert_eq!(lines(&out.join("journal.jsonl")).len(), 8, "no job ran twice");
    assert_eq!(std::fs::read(out.join("results.jsonl")).unwrap(), before);
    assert!(run_sweep(&spec, &out, &["--force"]).status.success());
}

#[test]
fn resume_after_ctrl_c_runs_only_the_rest_and_equals_an_uninterrupted_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    // Jobs of a few hundred ms each, so that Ctrl-C lands mid-sweep.
    let spec = write(
        tmp.path(),
        "slow.toml",
        &SMALL.replace("iterations = 100", "iterations = 4000").replace("seeds = 2", "seeds = 6"),
    );
    let whole = tmp.path().join("whole");
    assert!(run_sweep(&spec, &whole, &[]).status.success());
    let out = tmp.path().join("cut");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .env("RAYON_NUM_THREADS", "1")
        .arg("sweep")
        .arg(&spec)
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let journal = out.join("journal.jsonl");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 2 {
        assert!(started.elapsed().as_secs() < 120, "no job finished");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    let kept = lines(&journal).len();
    assert!((2..24).contains(&kept), "{kept} of 24 jobs kept");
    assert!(!out.join("results.jsonl").exists(), "no results before every job has run");
    let o = run_sweep(&spec, &out, &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let journal = lines(&journal);
    assert_eq!(journal.len(), 24, "every job exactly once: {kept} kept + {} run", 24 - kept);
    let hashes: std::collections::BTreeSet<String> =
        journal.iter().map(|r| r["hash"].as_str().unwrap().to_string()).collect();
    assert_eq!(hashes.len(), 24);
    for file in ["results.jsonl", "results.parquet", "summary.json"] {
        assert!(
            std::fs::read(out.join(file)).unwrap() == std::fs::read(whole.join(file)).unwrap(),
            "{file} of the resumed sweep differs from the uninterrupted one"
        );
    }
}

#[test]
fn a_journal_cut_mid_line_loses_only_that_row() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write(tmp.path(), "small.toml", SMALL);
    let out = tmp.path().join("out");
    assert!(run_sweep(&spec, &out, &[]).status.success());
    let results = std::fs::read(out.join("results.jsonl")).unwrap();
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let keep: Vec<&str> = journal.lines().take(5).collect();
    let cut = format!("{}\n{}", keep.join("\n"), &journal.lines().nth(5).unwrap()[..40]);
    std::fs::write(out.join("journal.jsonl"), cut).unwrap();
    let o = run_sweep(&spec, &out, &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("5 of 8 jobs already recorded"));
    assert_eq!(std::fs::read(out.join("results.jsonl")).unwrap(), results);
    // A damaged line in the middle is an error that names the file and line.
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let mut damaged: Vec<String> = journal.lines().map(str::to_string).collect();
    damaged[2] = "{\"index\": oops}".into();
    std::fs::write(out.join("journal.jsonl"), damaged.join("\n") + "\n").unwrap();
    let err = one_error(tlblab().arg("sweep").arg(&spec).arg("-o").arg(&out).arg("--resume"), 2);
    assert!(err.contains("journal.jsonl, line 3"), "{err}");
}

/// S2 at its quick settings as a sweep (`--print-study`) gives every run the value
/// `tlblab sim study` gives it: one machinery.
#[test]
fn a_study_run_as_a_sweep_gives_the_studys_values() {
    let tmp = tempfile::tempdir().unwrap();
    let spec_text = crate::common::stdout_of(["sweep", "--print-study", "s2", "--quick"]);
    let spec = tmp.path().join("s2.toml");
    std::fs::write(&spec, &spec_text).unwrap();
    let out = tmp.path().join("s2");
    let o = run_sweep(&spec, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = lines(&out.join("results.jsonl"));
    let study = crate::common::json_of(["sim", "study", "s2", "--quick", "--format", "json"]);
    let mut compared = 0;
    for part in study["parts"].as_array().unwrap() {
        for policy in part["policies"].as_array().unwrap() {
            let name = policy["policy"]["name"].as_str().unwrap();
            for m in policy["measures"].as_array().unwrap() {
                let key = m["measure"].as_str().unwrap();
                let values = m["values"].as_array().unwrap();
                let mine: Vec<&Value> = rows
                    .iter()
                    .filter(|r| r["grid"] == part["label"] && r["policy"] == name)
                    .map(|r| &r["measures"][key])
                    .collect();
                assert_eq!(mine.len(), values.len(), "{} {name} {key}", part["label"]);
                for (a, b) in mine.iter().zip(values) {
                    assert_eq!(a.as_f64(), b.as_f64(), "{} {name} {key}", part["label"]);
                    compared += 1;
                }
            }
        }
    }
    assert!(compared >= 20, "only {compared} values compared");
}

/// A checker sweep's job of seed s and n schedules is `tlblab sim check --seed s·n --schedules
/// n`: the same accesses judged and the same violations; the faithful policy has none, the
/// known-bad one many.
#[test]
fn a_checker_sweep_counts_what_sim_check_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write(
        tmp.path(),
        "check.toml",
        r#"
kind = "check"
seeds = 2
measures = ["violations", "deferred_uses"]

[[sweep]]
machine = "skylake"
cpus = 3
scenario = "lazy-readers"
policy = ["linux-6.18", "bad-pti-no-user-flush"]
tasks = 2
pages = 8
iterations = 20
schedules = 5
"#,
    );
    let out = tmp.path().join("out");
    let o = run_sweep(&spec, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = lines(&out.join("results.jsonl"));
    assert_eq!(rows.len(), 4);
    for row in &rows {
        let (policy, seed) = (row["policy"].as_str().unwrap(), row["seed"].as_u64().unwrap());
        // `sim check` exits 1 when it finds violations; its JSON is complete either way.
        let output = tlblab()
            .args([
                "sim",
                "check",
                "-p",
                policy,
                "--scenario",
                "lazy-readers",
                "--cpus",
                "3",
                "--tasks",
                "2",
                "--pages",
                "8",
                "--iterations",
                "20",
                "--schedules",
                "5",
                "--seed",
                &(seed * 5).to_string(),
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        let check: Value = serde_json::from_slice(&output.stdout).expect("sim check's JSON");
        for key in ["accesses", "violations", "window_uses", "schedules_with_violations"] {
            assert_eq!(row["counters"][key], check[key], "{policy} seed {seed}: {key}");
        }
        let violations = row["measures"]["violations"].as_f64().unwrap();
        match policy {
            "linux-6.18" => assert_eq!(violations, 0.0),
            _ => assert!(violations > 100.0, "{policy}: {violations}"),
        }
    }
}

/// X1: a spec that is not UTF-8 is bad input (exit 2) named with its byte offset, as a preset
/// or a result file is; U1: `measures = []` is refused before anything runs or is written.
#[test]
fn a_spec_not_utf8_or_with_no_measures_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut bytes = SMALL.as_bytes().to_vec();
    let at = SMALL.find("pingpong").unwrap();
    bytes[at] = 0xff;
    let spec = tmp.path().join("bad.toml");
    std::fs::write(&spec, bytes).unwrap();
    let out = tmp.path().join("out");
    let err = one_error(tlblab().arg("sweep").arg(&spec).arg("-o").arg(&out), 2);
    assert!(
        err.contains(&format!(
            "sweep spec {}: byte offset {at} (byte 0xff) is not UTF-8 text",
            spec.display()
        )),
        "{err}"
    );
    let empty = write(
        tmp.path(),
        "empty.toml",
        &SMALL.replace(r#"measures = ["scenario_metric", "ipis_per_op"]"#, "measures = []"),
    );
    let err = one_error(tlblab().arg("sweep").arg(&empty).arg("-o").arg(&out), 2);
    assert!(err.contains(&format!("sweep spec {}: line 5", empty.display())), "{err}");
    assert!(err.contains("measures is empty"), "{err}");
    assert!(!out.exists(), "nothing written");
}

/// R1: a journal whose last line was cut inside a multi-byte character (a SIGKILL during the
/// write) loses that row only, as a cut anywhere else does.
#[test]
fn a_journal_cut_inside_a_character_loses_only_that_row() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write(
        tmp.path(),
        "small.toml",
        &SMALL.replace("[[sweep]]\n", "[[sweep]]\nlabel = \"a × b\"\n"),
    );
    let out = tmp.path().join("out");
    assert!(run_sweep(&spec, &out, &[]).status.success());
    let results = std::fs::read(out.join("results.jsonl")).unwrap();
    let journal = std::fs::read(out.join("journal.jsonl")).unwrap();
    let sixth = journal.iter().enumerate().filter(|(_, &b)| b == b'\n').nth(4).unwrap().0 + 1;
    let times = sixth + journal[sixth..].windows(2).position(|w| w == "×".as_bytes()).unwrap();
    std::fs::write(out.join("journal.jsonl"), &journal[..times + 1]).unwrap();
    let o = run_sweep(&spec, &out, &["--resume"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("5 of 8 jobs already recorded"));
    assert_eq!(std::fs::read(out.join("results.jsonl")).unwrap(), results);
}

/// A value changed in a journal row no longer matches the row's checksum: refused, exit 2,
/// naming the file and line, before any job runs.
#[test]
fn a_changed_journal_row_is_refused_naming_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = write(tmp.path(), "small.toml", SMALL);
    let out = tmp.path().join("out");
    assert!(run_sweep(&spec, &out, &[]).status.success());
    let journal = std::fs::read_to_string(out.join("journal.jsonl")).unwrap();
    let rows: Vec<Value> = lines(&out.join("journal.jsonl"));
    assert!(rows.iter().all(|r| r["row_sha256"].as_str().is_some_and(|s| s.len() == 64)));
    let mut damaged: Vec<String> = journal.lines().map(str::to_string).collect();
    damaged[3] = damaged[3].replacen("\"finished\":true", "\"finished\":false", 1);
    assert_ne!(damaged[3], journal.lines().nth(3).unwrap());
    std::fs::write(out.join("journal.jsonl"), damaged.join("\n") + "\n").unwrap();
    let err = one_error(tlblab().arg("sweep").arg(&spec).arg("-o").arg(&out).arg("--resume"), 2);
    assert!(err.contains("journal.jsonl, line 4: the row does not match its checksum"), "{err}");
}

/// One SIGINT (or SIGTERM) stops a sweep whose only job runs for minutes: the job is
/// abandoned, not recorded, the journal stays empty and valid, and the exit status is 130
/// (143). Had the sweep waited for the job, its row would be in the journal.
#[test]
fn one_signal_stops_a_sweep_while_its_job_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // One job of about half a minute in a release build, much longer in this debug one.
    let slow = SMALL
        .replace("seeds = 2", "seeds = 1")
        .replace("cpus = [2, 4]", "cpus = 2")
        .replace(r#"policy = ["linux-4.13", "linux-4.14"]"#, r#"policy = "linux-4.13""#)
        .replace("iterations = 100", "iterations = 10000000");
    let spec = write(tmp.path(), "slow.toml", &slow);
    for (signal, status) in [(nix::sys::signal::SIGINT, 130), (nix::sys::signal::SIGTERM, 143)] {
        let out = tmp.path().join(format!("out-{status}"));
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tlblab"))
            .arg("sweep")
            .arg(&spec)
            .arg("-o")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        // The environment is written just before the job starts.
        let started = std::time::Instant::now();
        while !out.join("environment.json").exists() {
            assert!(started.elapsed().as_secs() < 120, "the sweep did not start");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        nix::sys::signal::kill(pid, signal).unwrap();
        // A guard, not a measurement: a sweep that waits for its job is killed after 2 minutes
        // and then fails below on its status.
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ended = done.clone();
        let guard = std::thread::spawn(move || {
            for _ in 0..1200 {
                if ended.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::SIGKILL);
        });
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        // The guard is done before the child is reaped, so that its pid cannot be another's.
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        guard.join().unwrap();
        let status_code = child.wait().unwrap().code();
        assert_eq!(status_code, Some(status), "{stderr}");
        assert!(stderr.contains("0 of 1 jobs are recorded"), "{stderr}");
        assert_eq!(std::fs::read(out.join("journal.jsonl")).unwrap(), b"", "nothing recorded");
        assert!(!out.join("results.jsonl").exists());
    }
}
