//! One consistent command line (issue 18, item 3): `--format` everywhere with `--json` its alias,
//! `--input-format` for what is read (the old spellings still work), `-o/--output` with
//! `--force`, `-p/--policies` as a list, scenario lists and examples in every help, and no
//! progress on a standard error that is not a terminal.

use crate::common::{golden_trace, stdout_of, tlblab};

const RUN: [&str; 8] = ["sim", "run", "-s", "pingpong", "--iterations", "20", "--seeds", "2"];

fn run_with(extra: &[&str]) -> Vec<u8> {
    let mut args = RUN.to_vec();
    args.extend_from_slice(extra);
    stdout_of(args)
}

fn help(args: &[&str]) -> String {
    let mut args = args.to_vec();
    args.push("--help");
    String::from_utf8(stdout_of(args)).unwrap()
}

#[test]
fn json_is_format_json_and_table_is_text() {
    let json = run_with(&["--json"]);
    assert!(json.starts_with(b"{"), "{}", String::from_utf8_lossy(&json));
    assert_eq!(run_with(&["--format", "json"]), json);
    assert_eq!(run_with(&["--format", "table"]), run_with(&["--format", "text"]));
    assert_eq!(run_with(&[]), run_with(&["--format", "text"]));
    // A format the command does not print is refused with the ones it does.
    let out = tlblab().args(RUN).args(["--format", "csv"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("text, json"));
}

#[test]
fn policies_are_one_list_however_spelt() {
    let list = run_with(&["-p", "linux-4.14,linux-6.18", "--json"]);
    assert_eq!(run_with(&["-p", "linux-4.14", "-p", "linux-6.18", "--json"]), list);
    assert_eq!(run_with(&["--policy", "linux-4.14", "--policies", "linux-6.18", "--json"]), list);
    let v: serde_json::Value = serde_json::from_slice(&list).unwrap();
    assert_eq!(v["policies"].as_array().unwrap().len(), 2);
}

#[test]
fn output_files_hold_what_stdout_would_and_need_force_to_be_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.json");
    let f = file.to_str().unwrap();
    let printed = run_with(&["--json", "-o", f]);
    assert!(printed.is_empty(), "with -o nothing goes to stdout");
    assert_eq!(std::fs::read(&file).unwrap(), run_with(&["--json"]));
    let again = tlblab().args(RUN).args(["-o", f]).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    run_with(&["-o", f, "--force"]);
    assert_eq!(std::fs::read(&file).unwrap(), run_with(&[]));
    // Nothing half-written is left beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn input_format_and_its_old_spellings_read_the_same() {
    let trace = golden_trace();
    let t = trace.to_str().unwrap();
    let new = stdout_of(["sim", "trace", "--input-format", "lackey", t]);
    assert_eq!(stdout_of(["sim", "trace", "--format", "lackey", t]), new);
    assert_eq!(stdout_of(["sim", "trace", "-f", "lackey", t]), new);
    assert_eq!(stdout_of(["sim", "trace", t]), new);
    let json = stdout_of(["sim", "trace", "-f", "lackey", "--format", "json", t]);
    assert_eq!(stdout_of(["sim", "trace", "--json", t]), json);
}

#[test]
fn sim_check_checks_each_policy_of_a_list() {
    let args = [
        "sim",
        "check",
        "-s",
        "lazy-readers",
        "--cpus",
        "3",
        "--tasks",
        "2",
        "--pages",
        "8",
        "--iterations",
        "5",
        "--schedules",
        "3",
        "--speed-runs",
        "0",
        "-p",
        "linux-4.14,linux-6.18",
    ];
    let text = String::from_utf8(stdout_of(args)).unwrap();
    assert_eq!(text.matches("tlblab sim check: policy ").count(), 2, "{text}");
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let v: serde_json::Value = serde_json::from_slice(&stdout_of(json_args)).unwrap();
    let reports = v.as_array().expect("an array for two policies");
    assert_eq!(reports[0]["policy"]["name"], "linux-4.14");
    assert_eq!(reports[1]["policy"]["name"], "linux-6.18");
}

#[test]
fn helps_list_every_scenario_and_end_with_examples() {
    let live: Vec<&str> = tlblab_live::scenarios().iter().map(|s| s.name).collect();
    for cmd in [&["sim", "run"][..], &["sim", "check"]] {
        let text = help(cmd);
        for s in tlblab_kernel::workloads::SCENARIOS {
            let shown = if live.contains(&s.name) {
                s.name.to_string()
            } else {
                format!("{} (sim only)", s.name)
            };
            // Help text wraps: compare with whitespace squeezed.
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(&shown), "{cmd:?} --help does not list {shown}");
        }
    }
    let bench = help(&["bench"]).split_whitespace().collect::<Vec<_>>().join(" ");
    for name in &live {
        assert!(bench.contains(name), "bench --help does not list {name}");
    }
    assert!(bench.contains("Simulated only, not measured here"), "{bench}");
    for cmd in [
        &["sim", "demo"][..],
        &["sim", "trace"],
        &["sim", "convert"],
        &["sim", "machines"],
        &["sim", "run"],
        &["sim", "mechanisms"],
        &["sim", "check"],
        &["sim", "study"],
        &["sim", "replay"],
        &["compare"],
        &["bench"],
        &["study"],
        &["trace", "record"],
        &["trace", "report"],
        &["trace", "dump"],
        &["trace", "import"],
        &["trace", "cleanup"],
    ] {
        let text = help(cmd);
        let tail = text.trim_end().rsplit_once("\n\n").map_or("", |(_, t)| t);
        assert!(tail.starts_with("Example"), "{cmd:?} --help does not end with examples:\n{text}");
        assert!(tail.contains("tlblab "), "{cmd:?}: {tail}");
    }
}

#[test]
fn no_progress_on_a_stderr_that_is_not_a_terminal() {
    let out = tlblab().args(RUN).args(["-p", "linux-4.14,linux-6.18"]).output().unwrap();
    assert!(out.status.success());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn study_refuses_an_unknown_machine_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("results");
    for flag in ["-o", "--output", "--out"] {
        let out = tlblab()
            .args(["study", "--no-live", flag])
            .arg(&out_dir)
            .args(["--machine", "skylak"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains("skylake"), "no suggestion");
        assert!(!out_dir.exists(), "{flag}: {} was created", out_dir.display());
    }
}

#[test]
fn the_last_of_json_and_format_counts() {
    assert_eq!(run_with(&["--format", "text", "--json"]), run_with(&["--format", "json"]));
    assert_eq!(run_with(&["--json", "--format", "text"]), run_with(&[]));
}

#[test]
fn trace_dump_and_report_read_text_by_input_format_and_write_output_files() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-flushtrace/tests/fixtures/text/ftrace-6.18-trace_pipe.txt");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("pipe.flushtrace");
    let old = dir.path().join("old.flushtrace");
    for (flag, out) in [("--input-format", &trace), ("--format", &old)] {
        let status = tlblab()
            .args(["trace", "import", flag, "ftrace"])
            .arg(&fixture)
            .arg("-o")
            .arg(out)
            .output()
            .unwrap()
            .status;
        assert!(status.success(), "{flag}");
    }
    let dump = |extra: &[&str]| {
        let mut args: Vec<&std::ffi::OsStr> =
            vec!["trace".as_ref(), "dump".as_ref(), trace.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        stdout_of(args)
    };
    let json = dump(&["--format", "json"]);
    assert_eq!(dump(&["--json"]), json);
    let file = dir.path().join("dump.jsonl");
    assert!(dump(&["--json", "-o", file.to_str().unwrap()]).is_empty());
    assert_eq!(std::fs::read(&file).unwrap(), json);
    // The report reads the text with either spelling of its format.
    let report = |flag: &str| {
        let mut cmd = tlblab();
        cmd.args(["trace", "report", flag, "ftrace", "--format", "csv"]).arg(&fixture);
        cmd.output().unwrap().stdout
    };
    assert!(!report("--input-format").is_empty());
    assert_eq!(report("--text-format"), report("--input-format"));
}
