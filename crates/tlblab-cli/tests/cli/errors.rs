//! Bad input gives one clear error that names the file and the position in it, exit status 2
//! (bad input; 1 is any other failure), and never a panic. Results of good files are kept.

use crate::common::{golden_machine, golden_trace, json_of, one_error, tlblab, PRESETS};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

/// Exit status for bad input (main.rs).
const BAD_INPUT: i32 = 2;

fn write(path: &Path, bytes: &[u8]) {
    fs::write(path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Converts the golden trace to a compact file in `dir`; returns its path.
fn compact_golden(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("golden.tlbt");
    tlblab().args(["sim", "convert"]).arg(golden_trace()).arg("-o").arg(&out).assert().success();
    out
}

#[test]
fn unparsable_lackey_line_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lackey");
    write(&bad, b"==1== Lackey\nI  00400000,4\n L 00402010,8\n L 0040zz10,8\n S 00402010,8\n");
    let stderr = one_error(tlblab().args(["sim", "trace"]).arg(&bad), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: line 4: ", bad.display())), "{stderr}");
    assert!(stderr.contains("L 0040zz10,8"), "quotes the line: {stderr}");
}

#[test]
fn unknown_lackey_letter_names_the_line_in_json_mode_too() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lackey");
    write(&bad, b"I  00400000,4\n X 00402010,8\n");
    let output = tlblab().args(["sim", "trace", "--json"]).arg(&bad).output().unwrap();
    assert_eq!(output.status.code(), Some(BAD_INPUT));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.matches("tlblab: error:").count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("{}: line 2: ", bad.display())), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["runs"], serde_json::json!([]));
    assert_eq!(report["errors"][0]["input"], bad.display().to_string());
    assert!(report["errors"][0]["message"].as_str().unwrap().contains("line 2: "));
}

#[test]
fn truncated_compact_trace_names_the_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let compact = compact_golden(dir.path());
    let bytes = fs::read(&compact).unwrap();
    // Header (16 bytes), 25 records and END, 16 bytes each.
    assert_eq!(bytes.len(), 16 + 26 * 16);
    let truncated = dir.path().join("truncated.tlbt");
    write(&truncated, &bytes[..bytes.len() - 5]);
    let stderr = one_error(tlblab().args(["sim", "trace"]).arg(&truncated), BAD_INPUT);
    // The END record starts at 16 + 25 × 16 = 416 and has 11 of its 16 bytes.
    assert!(
        stderr.contains(&format!("{}: byte offset 416: truncated", truncated.display())),
        "{stderr}"
    );
}

#[test]
fn compact_trace_without_end_record_is_an_error_not_a_shorter_trace() {
    let dir = tempfile::tempdir().unwrap();
    let compact = compact_golden(dir.path());
    let bytes = fs::read(&compact).unwrap();
    let cut = dir.path().join("cut.tlbt");
    write(&cut, &bytes[..bytes.len() - 16]);
    let stderr = one_error(tlblab().args(["sim", "trace"]).arg(&cut), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: byte offset 416: ", cut.display())), "{stderr}");
    assert!(stderr.contains("END"), "{stderr}");
}

#[test]
fn champsim_format_forced_on_a_lackey_file_is_rejected_at_the_first_record() {
    let stderr = one_error(
        tlblab().args(["sim", "trace", "--format", "champsim"]).arg(golden_trace()),
        BAD_INPUT,
    );
    assert!(stderr.contains(&format!("{}: byte offset 0: ", golden_trace().display())), "{stderr}");
    assert!(stderr.contains("ChampSim"), "{stderr}");
}

#[test]
fn corrupt_gzip_names_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&fs::read(golden_trace()).unwrap()).unwrap();
    let mut bytes = gz.finish().unwrap();
    // Damage the deflate data (the gzip header is 10 bytes) and the trailer's CRC.
    for i in [12, 20, 30] {
        bytes[i] ^= 0xa5;
    }
    let n = bytes.len();
    bytes[n - 8] ^= 0xff;
    let corrupt = dir.path().join("corrupt.lackey.gz");
    write(&corrupt, &bytes);
    let stderr = one_error(tlblab().args(["sim", "trace"]).arg(&corrupt), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: byte offset ", corrupt.display())), "{stderr}");
    assert!(stderr.contains("gzip"), "{stderr}");
}

#[test]
fn truncated_xz_is_an_error_not_a_shorter_trace() {
    let dir = tempfile::tempdir().unwrap();
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(&fs::read(golden_trace()).unwrap()).unwrap();
    let bytes = xz.finish().unwrap();
    let truncated = dir.path().join("truncated.lackey.xz");
    write(&truncated, &bytes[..bytes.len() - 10]);
    let stderr = one_error(tlblab().args(["sim", "trace"]).arg(&truncated), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: byte offset ", truncated.display())), "{stderr}");
    assert!(stderr.contains("truncated"), "{stderr}");
}

#[test]
fn unknown_key_in_a_machine_file_names_the_key_and_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(golden_machine()).unwrap();
    let misspelt = text.replace("page_walkers = 1", "page_walkers = 1\npage_walker = 2");
    assert_ne!(text, misspelt);
    let preset = dir.path().join("misspelt.toml");
    write(&preset, misspelt.as_bytes());
    let stderr = one_error(
        tlblab().args(["sim", "trace", "--machine"]).arg(&preset).arg(golden_trace()),
        BAD_INPUT,
    );
    assert!(stderr.contains(&format!("machine preset {}", preset.display())), "{stderr}");
    assert!(stderr.contains("`[features] page_walker`: unknown key \"page_walker\""), "{stderr}");
    // The line of the unknown key: the one after `page_walkers`.
    let line = text.lines().position(|l| l == "page_walkers = 1").unwrap() + 2;
    assert!(stderr.contains(&format!("line {line}")), "{stderr}");
}

#[test]
fn inconsistent_machine_file_is_rejected_with_the_reason() {
    // features.invpcid = true needs the four cost.invpcid_* figures, which the file lacks.
    let dir = tempfile::tempdir().unwrap();
    let text = fs::read_to_string(golden_machine()).unwrap();
    let preset = dir.path().join("inconsistent.toml");
    write(&preset, text.replace("invpcid = false", "invpcid = true").as_bytes());
    let stderr = one_error(tlblab().args(["sim", "machines", "show"]).arg(&preset), BAD_INPUT);
    assert!(stderr.contains(&format!("machine preset {}", preset.display())), "{stderr}");
    assert!(stderr.contains("cost.invpcid_"), "{stderr}");
}

#[test]
fn unknown_preset_name_lists_the_built_in_ones() {
    let stderr = one_error(
        tlblab().args(["sim", "trace", "--machine", "pentium"]).arg(golden_trace()),
        BAD_INPUT,
    );
    assert!(stderr.contains("\"pentium\""), "{stderr}");
    for name in PRESETS {
        assert!(stderr.contains(name), "{stderr}");
    }
    one_error(tlblab().args(["sim", "machines", "show", "pentium"]), BAD_INPUT);
    one_error(tlblab().args(["sim", "demo", "--machine", "pentium"]), BAD_INPUT);
}

#[test]
fn missing_trace_file_is_bad_input_naming_the_path() {
    // A trace that cannot be opened is a trace error (TraceError, kind Io), hence status 2.
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-trace.lackey");
    let stderr = one_error(tlblab().args(["sim", "trace"]).arg(&missing), BAD_INPUT);
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    let out = dir.path().join("out.tlbt");
    let stderr =
        one_error(tlblab().args(["sim", "convert"]).arg(&missing).arg("-o").arg(&out), BAD_INPUT);
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn missing_machine_file_is_bad_input_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-machine.toml");
    let stderr = one_error(
        tlblab().args(["sim", "trace", "--machine"]).arg(&missing).arg(golden_trace()),
        BAD_INPUT,
    );
    assert!(stderr.contains(&format!("machine preset {}", missing.display())), "{stderr}");
}

#[test]
fn unknown_demo_workload_lists_the_known_ones() {
    let stderr = one_error(tlblab().args(["sim", "demo", "-w", "no-such-workload"]), BAD_INPUT);
    assert!(stderr.contains("\"no-such-workload\""), "{stderr}");
    assert!(stderr.contains("ctx-switch-pcid"), "{stderr}");
}

#[test]
fn five_level_paging_on_a_machine_without_la57_is_refused() {
    let stderr = one_error(
        tlblab()
            .args(["sim", "trace", "--paging-levels", "5", "--machine"])
            .arg(golden_machine())
            .arg(golden_trace()),
        BAD_INPUT,
    );
    assert!(stderr.contains("LA57"), "{stderr}");
}

#[test]
fn convert_onto_an_existing_output_without_force_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("existing.tlbt");
    write(&out, b"precious");
    let stderr = one_error(
        tlblab().args(["sim", "convert"]).arg(golden_trace()).arg("-o").arg(&out),
        BAD_INPUT,
    );
    assert!(stderr.contains(&out.display().to_string()), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(fs::read(&out).unwrap(), b"precious");

    // With --force it is replaced by a valid compact trace.
    tlblab()
        .args(["sim", "convert", "--force"])
        .arg(golden_trace())
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert!(fs::read(&out).unwrap().starts_with(b"tlblabMT"));
}

#[test]
fn failed_convert_leaves_neither_output_nor_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lackey");
    write(&bad, b"I  00400000,4\n L 00402010,8\n L nonsense\n");
    let out = dir.path().join("out.tlbt");
    let stderr =
        one_error(tlblab().args(["sim", "convert"]).arg(&bad).arg("-o").arg(&out), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: line 3: ", bad.display())), "{stderr}");
    let left: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("bad.lackey")], "files left behind");
}

#[test]
fn good_runs_are_kept_when_another_file_fails() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lackey");
    write(&bad, b"I  00400000,4\nnot a lackey line\n");
    let output = tlblab()
        .args(["sim", "trace", "--json", "--machine"])
        .arg(golden_machine())
        .arg(golden_trace())
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(BAD_INPUT));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.matches("tlblab: error:").count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("{}: line 2: ", bad.display())), "{stderr}");

    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["input"], golden_trace().display().to_string());
    assert_eq!(runs[0]["total"]["accesses"]["total"], 30);
    let errors = report["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["input"], bad.display().to_string());
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains(&format!("{}: line 2: ", bad.display())), "{message}");

    // The good run is the same as when simulated alone.
    let alone = json_of([
        "sim".as_ref(),
        "trace".as_ref(),
        "--json".as_ref(),
        "--machine".as_ref(),
        golden_machine().as_os_str(),
        golden_trace().as_os_str(),
    ]);
    assert_eq!(runs[0], alone["runs"][0]);
}

#[test]
fn good_runs_are_kept_in_text_output_too() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.lackey");
    write(&bad, b"I  00400000,4\nnot a lackey line\n");
    let output = tlblab()
        .args(["sim", "trace", "--machine"])
        .arg(golden_machine())
        .arg(&bad)
        .arg(golden_trace())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(BAD_INPUT));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains(&format!("== {} (lackey, 25 events", golden_trace().display())));
    assert!(stdout.contains("accesses: 30 (load 12 · store 6 · fetch 12)"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches("tlblab: error:").count(), 1, "{stderr}");
    assert!(stderr.contains(&format!("{}: line 2: ", bad.display())), "{stderr}");
}

#[test]
fn bad_option_values_are_usage_errors() {
    for args in [
        &["sim", "trace", "--page-size", "3m", "x.lackey"][..],
        &["sim", "trace", "--pcid", "4096", "x.lackey"],
        &["sim", "trace", "--jobs", "0", "x.lackey"],
        &["sim", "trace"],
        &["sim", "demo", "--accesses", "0"],
        &["sim", "convert", "x.lackey"],
    ] {
        let output = tlblab().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn closed_standard_output_is_not_a_panic() {
    // `tlblab sim trace … | head -1`: the reader goes away. More output than a pipe buffers
    // (64 KiB on Linux) makes the write fail with EPIPE whenever the read end is closed.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_tlblab"));
    cmd.args(["sim", "trace", "--json", "--machine"]).arg(golden_machine());
    for _ in 0..12 {
        cmd.arg(golden_trace());
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn failed_write_to_standard_output_is_an_error_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tlblab"))
        .args(["sim", "machines"])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("writing standard output"), "{stderr}");
}

/// A mistyped scenario, policy (also after `+`), machine or study name is refused with the
/// name it most probably meant; a name close to none gets no guess (issue 18: did-you-mean).
#[test]
fn mistyped_names_suggest_the_close_one() {
    let cases: [(&[&str], &str); 6] = [
        (&["sim", "run", "-s", "pingpon"], "pingpong"),
        (&["sim", "run", "-s", "pingpong", "-p", "linux-6.1"], "linux-6.18"),
        (&["sim", "run", "-s", "pingpong", "-p", "pti-deferred+la57-of"], "la57-off"),
        (&["sim", "run", "-s", "pingpong", "-m", "skylak"], "skylake"),
        (&["sim", "study", "s1-pt"], "s1-pti"),
        (&["sim", "check", "-p", "linux-6.18", "-s", "lazy-reader"], "lazy-readers"),
    ];
    for (args, meant) in cases {
        let e = one_error(tlblab().args(args), BAD_INPUT);
        assert!(e.contains(&format!("; did you mean {meant:?}?")), "{args:?}: {e}");
    }
    let e = one_error(tlblab().args(["sim", "study", "zz"]), BAD_INPUT);
    assert!(!e.contains("did you mean") && e.contains("s1-pti (s1)"), "{e}");
}

/// Refusals found after a file is read still name it (issue 29 item 5): a policy file's unknown
/// `base` (with its line), one that needs what the machine lacks, a preset file without
/// `[kernel]`, a flush trace with no request to replay; a non-UTF-8 policy or preset names the
/// byte offset.
#[test]
fn refusals_found_after_reading_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("p.toml");
    write(&policy, b"name = 'x'\n\nbase = 'linux-9.9'\n");
    let run = ["sim", "run", "-s", "storm", "--cpus", "4", "--iterations", "20"];
    let stderr = one_error(tlblab().args(run).arg("-p").arg(&policy), BAD_INPUT);
    assert!(stderr.contains(&format!("{}: line 3, `base`: ", policy.display())), "{stderr}");
    assert!(stderr.contains("unknown policy \"linux-9.9\""), "{stderr}");

    // Found when the model starts: the default machine (skylake) has no INVLPGB.
    write(&policy, b"name = 'x'\nbase = 'linux-6.18'\n[set]\ninvlpgb = true\n");
    let stderr = one_error(tlblab().args(run).arg("-p").arg(&policy), BAD_INPUT);
    let named = format!("policy x ({}) needs INVLPGB", policy.display());
    assert!(stderr.contains(&named), "{stderr}");

    // The golden preset has no [kernel] section: the TLB model runs it, the kernel model not.
    let stderr = one_error(tlblab().args(run).arg("-m").arg(golden_machine()), BAD_INPUT);
    assert!(stderr.contains(&golden_machine().display().to_string()), "{stderr}");
    assert!(stderr.contains("no [kernel] section"), "{stderr}");
    let without = dir.path().join("m.toml");

    let quiet = dir.path().join("quiet.txt");
    write(
        &quiet,
        b"  bash-1  [000] d..1.  1.000000: tlb_flush: pages:-1 reason:flush on task switch (0)\n",
    );
    let stderr = one_error(tlblab().args(["sim", "replay"]).arg(&quiet), BAD_INPUT);
    assert!(
        stderr.contains(&format!("{}: the trace has no flush requests", quiet.display())),
        "{stderr}"
    );

    for (flag, file) in [("-p", &policy), ("-m", &without)] {
        write(file, b"name = 'x\xff'\n");
        let stderr = one_error(tlblab().args(run).arg(flag).arg(file), BAD_INPUT);
        assert!(stderr.contains("byte offset 9 (byte 0xff) is not UTF-8 text"), "{flag}: {stderr}");
        assert!(stderr.contains(&file.display().to_string()), "{flag}: {stderr}");
    }
}
