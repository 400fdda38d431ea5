//! The adversarial reproductions of issue 18 (item 4, and item 3's control bytes), one test
//! each: presets and policies that panicked or hung, traces whose time span drove the replay,
//! an import the reader refused, and control bytes that reached the terminal. The inputs are
//! copies of ../shared/repro/ in tests/data/repro/.

use crate::common::{data, json_of, one_error, tlblab};
use std::path::PathBuf;
use std::time::Duration;

/// Exit status for bad input (main.rs).
const BAD_INPUT: i32 = 2;

/// Longer than any of these commands takes in a debug build; the hangs took hours.
const BOUND: Duration = Duration::from_secs(60);

fn repro(name: &str) -> PathBuf {
    data(&format!("repro/{name}"))
}

fn sim_run(policy_or_machine: &[&str]) -> assert_cmd::Command {
    let mut cmd = tlblab();
    cmd.args(["sim", "run", "--scenario", "madv-migrate", "--cpus", "2", "--iterations", "30"])
        .args(policy_or_machine)
        .timeout(BOUND);
    cmd
}

/// `hz = 0` divided by zero and `hz = 10^8` ran for hours, in sim run, sim replay and sim
/// check: each is refused with the file, the line and the range.
#[test]
fn policy_files_out_of_range_are_refused_with_file_key_and_line() {
    for (file, value) in [("policy-panic-hz0.toml", "0"), ("policy-hang-hz1e8.toml", "100000000")] {
        let path = repro(file);
        let p = path.to_str().unwrap();
        let trace = repro("replay-slow-gap1e12ns.flushtrace");
        let mut replay = tlblab();
        replay.args(["sim", "replay", "--policies", p]).arg(&trace).timeout(BOUND);
        let mut check = tlblab();
        check.args(["sim", "check", "--scenario", "madv-migrate", "--policy", p]).timeout(BOUND);
        for mut cmd in [sim_run(&["--policies", p]), replay, check] {
            let stderr = one_error(&mut cmd, BAD_INPUT);
            let want = format!("policy file {p}, line 4: `hz = {value}` is outside 1 to 10000");
            assert!(stderr.contains(&want), "{stderr}");
        }
    }
}

/// A zero clock panicked, costs near u64::MAX panicked or hung: refused, naming the key.
#[test]
fn machine_presets_out_of_range_are_refused_with_file_and_key() {
    for (file, key) in [
        ("machine-panic-migrate-u64max.toml", "line 142, `[kernel] migrate`"),
        ("machine-panic-clock-mhz0.toml", "line 129, `[kernel] clock`"),
        ("machine-hang-syscall-i64max.toml", "line 130, `[kernel] syscall`"),
    ] {
        let path = repro(file);
        let stderr = one_error(&mut sim_run(&["--machine", path.to_str().unwrap()]), BAD_INPUT);
        assert!(stderr.contains(file) && stderr.contains(key), "{stderr}");
    }
}

/// Replays whose trace spans 10^12 ns, 10^15 ns and 2^62 ns (which wrapped the clock) run in
/// the time of their 34 records: each quiet gap is replayed as 2 s.
#[test]
fn replay_time_follows_the_records_not_the_span() {
    for (file, span_s) in [
        ("replay-slow-gap1e12ns.flushtrace", 1_000),
        ("replay-hang-gap1e15ns.flushtrace", 1_000_000),
        ("replay-wrap-gap2e62ns.flushtrace", 4_611_686_018),
    ] {
        let mut cmd = tlblab();
        let started = std::time::Instant::now();
        let out = cmd.args(["sim", "replay", "--json"]).arg(repro(file)).timeout(BOUND).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(started.elapsed() < Duration::from_secs(30), "{file}: {:?}", started.elapsed());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["trace"]["span_ns"].as_u64().unwrap() / 1_000_000_000, span_s, "{file}");
        assert_eq!(v["trace"]["quiet_gaps"], 1, "{file}");
        let p = &v["policies"][0];
        assert_eq!(p["complete"], true, "{file}");
        // The replay ran past the 2 s gap, not a wrapped millisecond.
        let elapsed = p["elapsed_cycles"].as_u64().unwrap();
        assert!(elapsed > 2_000_000_000 && elapsed < 100_000_000_000, "{file}: {elapsed}");
    }
}

/// A timestamp delta that wraps the clock below 0 (the replay ran for ever, the report showed
/// a span of 18446742974 s) and one that wraps it past 2^63 (the replay's "0 ns before") are
/// corruption at the record's byte offset, for every reader.
#[test]
fn wrapped_timestamps_are_refused_at_their_byte_offset() {
    for (file, offset) in
        [("replay-hang-wrapped-ts.flushtrace", 8337), ("replay-msg-0ns-before.flushtrace", 314)]
    {
        let path = repro(file);
        for args in [
            vec!["trace", "report"],
            vec!["trace", "dump"],
            vec!["sim", "replay"],
            vec!["sim", "replay", "--allow-truncated"],
        ] {
            let stderr = one_error(tlblab().args(&args).arg(&path).timeout(BOUND), BAD_INPUT);
            let want = format!("corrupt at byte offset {offset}: timestamp delta -");
            assert!(stderr.contains(&want), "{args:?}: {stderr}");
            assert!(stderr.contains("leaves the range of timestamps"), "{stderr}");
            assert!(!stderr.contains("0 ns before"), "{stderr}");
        }
    }
}

/// A replay refusal about one record names the record's place in the file.
#[test]
fn replay_errors_name_the_records_position() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("back.txt");
    std::fs::write(
        &text,
        "  a-7 [000] 1.000100: tlb_flush: pages:1 reason:local MM shootdown (3)\n\
         \x20 a-7 [000] 1.000200: tlb_flush: pages:1 reason:local MM shootdown (3)\n\
         \x20 a-7 [000] 1.000050: tlb_flush: pages:1 reason:local MM shootdown (3)\n",
    )
    .unwrap();
    let stderr = one_error(tlblab().args(["sim", "replay"]).arg(&text), BAD_INPUT);
    let want = format!(
        "{}: line 3: record 3: timestamp 1000050000 ns is 150000 ns before",
        text.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    let ft = dir.path().join("back.ft");
    tlblab().args(["trace", "import"]).arg(&text).arg("-o").arg(&ft).assert().success();
    let stderr = one_error(tlblab().args(["sim", "replay"]).arg(&ft), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: byte offset ", ft.display())), "{stderr}");
    assert!(stderr.contains(": record 3: timestamp 1000050000 ns is 150000 ns before"), "{stderr}");
}

/// What `trace import` writes, `trace report` reads: a task name of 4097 bytes is cut to the
/// format's 4096 (the import says so), one of 4096 is kept whole, and both report.
#[test]
fn import_never_writes_what_report_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let long = std::fs::read_to_string(repro("import-comm4097.txt")).unwrap();
    let comm = long.split(' ').next().unwrap();
    assert_eq!(comm.len(), 4097);
    let at_limit = dir.path().join("comm4096.txt");
    std::fs::write(&at_limit, long.replace(comm, &comm[1..])).unwrap();
    for (input, kept, cut) in [(repro("import-comm4097.txt"), 4096, true), (at_limit, 4096, false)]
    {
        let ft = dir.path().join("x.ft");
        let out = tlblab()
            .args(["trace", "import", "--force"])
            .arg(&input)
            .arg("-o")
            .arg(&ft)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert_eq!(stderr.contains("1 task name was cut to 4096 bytes"), cut, "{stderr}");
        let report = json_of(["trace", "report", "--format", "json", ft.to_str().unwrap()]);
        assert_eq!(report["totals"]["records"], 3, "{report}");
        let dump = tlblab().args(["trace", "dump"]).arg(&ft).output().unwrap();
        let dump = String::from_utf8(dump.stdout).unwrap();
        let shown = dump.lines().find_map(|l| l.strip_prefix("# task pid=1234 tgid=-1 comm="));
        assert_eq!(shown.map(str::len), Some(kept), "{dump}");
    }
}

/// Runs `args` and returns everything it printed, both streams.
fn printed(args: &[&str], input: PathBuf) -> (Option<i32>, Vec<u8>) {
    let out = tlblab().args(args).arg(input).output().unwrap();
    let mut all = out.stdout;
    all.extend(out.stderr);
    (out.status.code(), all)
}

/// ESC, BEL and other control bytes of inputs are shown as `\x1b`, `\x07`: in an error that
/// quotes a line, in the import summary's event names, in report tables and dump lines.
#[test]
fn control_bytes_from_inputs_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let ft = dir.path().join("y.ft");
    let ft_arg = ft.to_str().unwrap().to_string();
    let comm_ft = dir.path().join("comm.ft");
    let comm_arg = comm_ft.to_str().unwrap().to_string();
    let cases: Vec<(Vec<&str>, PathBuf, Option<i32>, &str)> = vec![
        (
            vec!["trace", "report"],
            repro("text-esc-line.txt"),
            Some(BAD_INPUT),
            "x\\x1b]0;pwned\\x07\\x1b[2J",
        ),
        (
            vec!["trace", "import", "-o", &ft_arg],
            repro("import-esc-eventname.txt"),
            Some(0),
            "other events: ipi:ipi_\\x1b]0;pwned\\x07\\x1b[2Jsend_cpu 1",
        ),
        (vec!["trace", "report"], repro("text-esc-comm.txt"), Some(0), "ev\\x1b[2Jil"),
        (
            vec!["trace", "report", "--format", "markdown"],
            repro("text-esc-comm.txt"),
            Some(0),
            "ev\\x1b[2Jil",
        ),
        (
            vec!["trace", "report", "--format", "csv"],
            repro("text-esc-comm.txt"),
            Some(0),
            "ev\\x1b[2Jil",
        ),
        (vec!["trace", "import", "-o", &comm_arg], repro("text-esc-comm.txt"), Some(0), "imported"),
    ];
    for (args, input, code, shown) in cases {
        let (status, all) = printed(&args, input);
        let text = String::from_utf8_lossy(&all);
        assert_eq!(status, code, "{args:?}: {text}");
        assert!(!all.iter().any(|&b| b == 0x1b || b == 0x07), "{args:?}: {text}");
        assert!(text.contains(shown), "{args:?}: {text}");
    }
    let (status, all) = printed(&["trace", "dump"], comm_ft);
    assert_eq!(status, Some(0));
    let text = String::from_utf8_lossy(&all);
    assert!(!all.contains(&0x1b) && text.contains("ev\\x1b[2Jil-1234 [000]"), "{text}");
}
