//! Output safety (issue 18, item 4; ../shared/repro/stdout-and-output.sh): a full or closed
//! standard output, a full disk, existing output files, signals and one-run sessions, and the
//! messages of `compare` for damaged result files. The exit statuses are the README's table.

use crate::common::{data, golden_trace, one_error, tlblab};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use tlblab_bench::{BenchConfig, Method, MockExecutor, Session};

/// Writes a result file of `configs`, each with the scripted `values`.
fn results_file(dir: &Path, name: &str, configs: &[BenchConfig], values: &[f64]) -> String {
    let path = dir.join(name);
    let mut mock = MockExecutor::default();
    for c in configs {
        mock.script(c, values.iter().copied());
    }
    let method = Method { runs: values.len(), ..Method::default() };
    let mut session = Session::new(configs.to_vec(), method, Some(path.clone()));
    session.run(&mut mock, &AtomicBool::new(false), &mut ()).unwrap();
    path.display().to_string()
}

fn busy(n: &str) -> BenchConfig {
    BenchConfig::new("madvise-busy", [("busy", n)], "µs/op", true)
}

/// Two comparable result files in `dir`.
fn two_results(dir: &Path) -> (String, String) {
    let a = results_file(dir, "a.json", &[busy("1")], &[10.0, 10.2, 9.9, 10.1]);
    let b = results_file(dir, "b.json", &[busy("1")], &[9.0, 9.1, 8.9, 9.2]);
    (a, b)
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Standard output to /dev/full, where every write fails with "No space left on device".
fn dev_full() -> Stdio {
    std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap().into()
}

#[test]
fn a_full_standard_output_is_a_failure_with_a_message_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_results(dir.path());
    let check = [
        "sim",
        "check",
        "--policy",
        "bad-lazy-no-catch-up",
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
    ];
    let cases: [Vec<&str>; 4] =
        [vec!["compare", &a, &b], vec!["bench", "--list"], check.to_vec(), vec!["sim", "machines"]];
    for args in cases {
        // Was: status 101, "failed printing to stdout".
        let out = Command::new(env!("CARGO_BIN_EXE_tlblab"))
            .args(&args)
            .stdout(dev_full())
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(
            e.lines().last(),
            Some("tlblab: error: writing standard output: No space left on device (os error 28)"),
            "{args:?}: {e}"
        );
    }
}

#[test]
fn a_closed_pipe_ends_the_command_quietly_with_status_0() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_results(dir.path());
    // The reader is gone before the command writes (`tlblab compare … | true`).
    let mut child = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(["compare", &a, &b])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));

    // `tlblab completions bash | head -1`: more than a pipe holds, so the command is blocked
    // writing when the reader stops.
    let mut child = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(!first.is_empty());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_output_file_is_refused_when_it_exists_unless_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let existing = d.join("exist.txt");
    let trace = d.join("small.flushtrace");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-flushtrace/tests/fixtures/text/ftrace-6.18-trace_pipe.txt");
    let out = tlblab().args(["trace", "import"]).arg(&fixture).arg("-o").arg(&trace).output();
    assert!(out.unwrap().status.success());
    let report = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-report/tests/fixtures/bench-madvise-busy.json");
    std::fs::create_dir(d.join("study")).unwrap();
    std::fs::write(d.join("study/results.json"), "precious\n").unwrap();
    let (o, trace, fixture, report) =
        (path(&existing), path(&trace), path(&fixture), path(&report));
    let golden = path(&golden_trace());
    let study = path(&d.join("study"));
    let cases: Vec<(Vec<&str>, PathBuf)> = vec![
        // Was: replaced silently.
        (vec!["trace", "report", &trace, "-o", &o], existing.clone()),
        (vec!["trace", "import", &fixture, "-o", &o], existing.clone()),
        (vec!["report", &report, "-o", &o], existing.clone()),
        (vec!["sim", "convert", &golden, "-o", &o], existing.clone()),
        (vec!["bench", "madvise-busy", "-o", &o], existing.clone()),
        (vec!["trace", "record", "-o", &o], existing.clone()),
        (vec!["study", "--out", &study], d.join("study/results.json")),
    ];
    for (args, kept) in &cases {
        std::fs::write(&existing, "precious\n").unwrap();
        let e = one_error(tlblab().args(args), 2);
        assert!(e.contains("exists (use --force to replace it)"), "{args:?}: {e}");
        assert_eq!(std::fs::read_to_string(kept).unwrap(), "precious\n", "{args:?}");
    }
    // With --force the file is replaced, and nothing else is left in the directory.
    for (args, _) in &cases[..4] {
        std::fs::write(&existing, "precious\n").unwrap();
        let out = tlblab().args(args).arg("--force").output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_ne!(std::fs::read(&existing).unwrap(), b"precious\n", "{args:?}");
        assert_eq!(names(d), ["exist.txt", "small.flushtrace", "study"], "{args:?}");
    }
    // A device is written, not replaced, and needs no --force; a directory is refused.
    let out = tlblab().args(["trace", "report", &trace, "-o", "/dev/null"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!std::fs::symlink_metadata("/dev/null").unwrap().is_file());
    let e = one_error(tlblab().args(["trace", "report", &trace, "-o", &study]), 2);
    assert!(e.ends_with("study is a directory\n"), "{e}");
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A tmpfs of 64 KiB, filled up, unmounted when dropped; `None` (and why, printed) where it
/// cannot be mounted (not root, no mount permission).
struct FullDisk {
    mount: PathBuf,
    _dir: tempfile::TempDir,
}

impl FullDisk {
    fn new() -> Option<FullDisk> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: mounting a full tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("full");
        std::fs::create_dir(&mount).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&mount)
            .stderr(Stdio::null())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        let disk = FullDisk { mount, _dir: dir };
        let mut filler = std::fs::File::create(disk.mount.join("filler")).unwrap();
        while filler.write_all(&[0; 4096]).is_ok() {}
        Some(disk)
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}

#[test]
fn a_full_disk_is_a_failure_that_leaves_no_file_behind() {
    let Some(disk) = FullDisk::new() else { return };
    let full = |name: &str| path(&disk.mount.join(name));
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-flushtrace/tests/fixtures/text/ftrace-6.18-trace_pipe.txt");
    let report = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-report/tests/fixtures/bench-madvise-busy.json");
    let (fixture, report, golden) = (path(&fixture), path(&report), path(&golden_trace()));
    let (i, r, t, c) = (full("i.ft"), full("r.html"), full("t.txt"), full("c.tlbt"));
    let cases: [Vec<&str>; 4] = [
        vec!["trace", "import", &fixture, "-o", &i],
        vec!["report", &report, "-o", &r],
        vec!["trace", "report", &fixture, "-o", &t],
        // Was: status 2 (bad input).
        vec!["sim", "convert", &golden, "-o", &c],
    ];
    for args in cases {
        let e = one_error(tlblab().args(&args), 1);
        assert!(e.contains("No space left on device"), "{args:?}: {e}");
        assert_eq!(names(&disk.mount), ["filler"], "{args:?} left a file");
    }
}

#[test]
fn a_recording_that_cannot_write_its_header_leaves_no_file() {
    let Some(disk) = FullDisk::new() else { return };
    if let Err(e) = tlblab_tracefs::Tracefs::find_or_mount() {
        eprintln!("skipped: no tracefs: {e}");
        return;
    }
    let file = disk.mount.join("x.flushtrace");
    let mut cmd = tlblab();
    cmd.args(["trace", "record", "-q", "--duration", "0.2", "-o"]).arg(&file);
    let e = one_error(&mut cmd, 1);
    assert!(e.contains("No space left on device"), "{e}");
    assert_eq!(names(&disk.mount), ["filler"]);
}

#[test]
fn bench_results_on_a_full_disk_fail_and_leave_no_temporary_file() {
    let Some(disk) = FullDisk::new() else { return };
    let file = disk.mount.join("b.json");
    let mut cmd = tlblab();
    cmd.args(["bench", "madvise-busy", "--busy", "0", "--runs", "2", "--run-ms", "20"])
        .args(["--warmup-ms", "0", "--no-overhead", "--no-trace", "-q", "-o"])
        .arg(&file);
    let e = one_error(&mut cmd, 1);
    assert!(e.contains("b.json") && e.contains("No space left on device"), "{e}");
    assert_eq!(e.matches("No space left on device").count(), 1, "cause repeated: {e}");
    assert_eq!(names(&disk.mount), ["filler"]);
}

#[test]
fn a_session_with_one_run_per_configuration_is_reported_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r1.json");
    let out = tlblab()
        .args(["bench", "madvise-busy", "--busy", "0,1", "--runs", "1", "--run-ms", "50"])
        .args(["--warmup-ms", "0", "--no-overhead", "--no-trace", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Was: status 2, "need at least 2 samples, got 1" three times.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("madvise-busy --busy 0"));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["configs"][0]["runs"].as_array().unwrap().len(), 1);

    // Two saved one-run sessions compare to nothing, and say why.
    let a = results_file(dir.path(), "a.json", &[busy("0"), busy("1")], &[5.0]);
    let b = results_file(dir.path(), "b.json", &[busy("0"), busy("1")], &[6.0]);
    let out = tlblab().args(["compare", &a, &b]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "not compared, fewer than 2 runs: madvise-busy --busy 0, madvise-busy --busy 1"
        ),
        "{stderr}"
    );
}

#[test]
fn a_signal_stops_a_conversion_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.lackey");
    let mut text = String::with_capacity(3_000_000 * 14);
    for i in 0..3_000_000u64 {
        text += &format!(" L {:x},8\n", 0x1000_0000 + (i * 4096) % (1 << 30));
    }
    std::fs::write(&input, text).unwrap();
    for (signal, status) in [("INT", 130), ("TERM", 143)] {
        let output = dir.path().join("big.tlbt");
        let child = Command::new(env!("CARGO_BIN_EXE_tlblab"))
            .args(["sim", "convert"])
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signalled once it is writing (its temporary file is there).
        let start = Instant::now();
        while names(dir.path()).len() < 2 {
            assert!(start.elapsed() < Duration::from_secs(60), "nothing written");
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = child.id().to_string();
        let kill = Command::new("kill").args([&format!("-{signal}"), &pid]).status();
        assert!(kill.unwrap().success());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{stderr}");
        assert!(
            stderr.contains(&format!("stopped by SIG{signal}; nothing was written")),
            "{stderr}"
        );
        assert_eq!(names(dir.path()), ["big.lackey"], "SIG{signal}");
    }
}

#[test]
fn sigterm_stops_bench_with_status_143_and_keeps_the_finished_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.json");
    let child = Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(["bench", "madvise-busy", "--busy", "0", "--runs", "1000", "--run-ms", "30"])
        .args(["--warmup-ms", "0", "--no-overhead", "--no-trace", "-q", "-o"])
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !std::fs::read_to_string(&file).is_ok_and(|t| t.contains("\"sequence\"")) {
        assert!(start.elapsed() < Duration::from_secs(60), "no run written");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    // Was: 130, as for SIGINT.
    assert_eq!(out.status.code(), Some(143));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(!v["configs"][0]["runs"].as_array().unwrap().is_empty());
    assert_eq!(names(dir.path()), ["long.json"]);
}

#[test]
fn compare_names_the_damaged_file_and_says_what_is_wrong_once() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = two_results(dir.path());
    // Was: status 1, "…: reading: stream did not contain valid UTF-8" with the cause twice.
    let bad = data("compare-nonutf8.json");
    let e = one_error(tlblab().args(["compare", &a]).arg(&bad), 2);
    assert!(
        e.contains(&format!("{}: not a bench result file: byte offset ", bad.display()))
            && e.contains("is not UTF-8 text"),
        "{e}"
    );
    // A run of 1e-320 µs/op. Was: "madvise-busy --busy 0: the statistic is not finite (inf) on
    // resample 29" twice, and no file named.
    let inf = data("compare-msg-inf-statistic.json");
    let b = results_file(dir.path(), "ab.json", &[busy("0"), busy("1")], &[3.0, 3.1, 2.9]);
    let e = one_error(tlblab().args(["compare", "--format", "json"]).arg(&inf).arg(&b), 2);
    assert!(
        e.contains(&format!(
            "{}: madvise-busy --busy 0, run 2 of 3: value 1e-320 µs/op is not a measurement",
            inf.display()
        )),
        "{e}"
    );
    // A file that is not there is bad input too, named once.
    let missing = dir.path().join("missing.json").display().to_string();
    let e = one_error(tlblab().args(["compare", &a, &missing]), 2);
    assert_eq!(e.matches("missing.json").count(), 1, "{e}");
}
