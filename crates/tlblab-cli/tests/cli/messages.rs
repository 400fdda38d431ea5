//! Error messages in plain words (issue 18): bad inputs of every kind give one message that
//! names the file, the key and what was expected, without serde's or Rust's vocabulary
//! (`invalid type:`, `expected usize`, `Refill::…`, `::`) and without a cause said twice.

use crate::common::{stdout_of, tlblab};
use std::path::Path;

/// What no message may contain.
const JARGON: [&str; 6] =
    ["invalid type:", "invalid value:", "expected usize", "expected u64", "::", "Refill::"];

/// Runs `args` in `dir`; it must fail with status 1 or 2, print one `tlblab: error:` line
/// group free of jargon and of repeated causes, and no panic. Returns the message.
fn message(dir: &Path, args: &[&str]) -> String {
    let output = tlblab().current_dir(dir).args(args).output().expect("running tlblab");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let code = output.status.code();
    assert!(matches!(code, Some(1 | 2)), "{args:?}: status {code:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert_eq!(stderr.matches("tlblab: error:").count(), 1, "{args:?}: {stderr}");
    for jargon in JARGON {
        assert!(!stderr.contains(jargon), "{args:?}: {jargon:?} in {stderr}");
    }
    assert!(
        stderr.matches("No such file or directory").count() <= 1,
        "{args:?}: the cause is repeated: {stderr}"
    );
    stderr
}

/// A copy of the skylake preset with `from` replaced by `to` (which must occur).
fn preset_with(dir: &Path, name: &str, from: &str, to: &str) -> String {
    let text = String::from_utf8(stdout_of(["sim", "machines", "show", "skylake", "--toml"]))
        .expect("UTF-8 preset");
    assert!(text.contains(from), "the skylake preset has no {from:?}");
    std::fs::write(dir.join(name), text.replacen(from, to, 1)).unwrap();
    name.to_string()
}

/// A copy of linux-6.18 as a policy file with `from` replaced by `to` (which must occur).
fn policy_with(dir: &Path, name: &str, from: &str, to: &str) -> String {
    let text = String::from_utf8(stdout_of(["sim", "policies", "show", "linux-6.18", "--toml"]))
        .expect("UTF-8 policy");
    assert!(text.contains(from), "the policy file has no {from:?}");
    std::fs::write(dir.join(name), text.replacen(from, to, 1)).unwrap();
    name.to_string()
}

fn sim_run(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec!["sim", "run", "-s", "pingpong", "--iterations", "5", "--seeds", "1"];
    args.extend_from_slice(extra);
    message(dir, &args)
}

#[test]
fn missing_files_are_named_once_with_their_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for args in [
        &["sim", "run", "-s", "pingpong", "-m", "absent.toml"][..],
        &["sim", "run", "-s", "pingpong", "-p", "absent.toml"],
        &["sim", "trace", "absent.lackey"],
        &["compare", "absent-a.json", "absent-b.json"],
        &["report", "absent.json"],
        &["trace", "report", "absent.flushtrace"],
        &["trace", "import", "absent.txt", "-o", "out.flushtrace"],
    ] {
        let m = message(d, args);
        assert!(m.contains("absent"), "{args:?}: the file is not named: {m}");
        assert!(m.contains("No such file or directory"), "{args:?}: no cause: {m}");
    }
}

#[test]
fn preset_values_of_the_wrong_kind_name_line_table_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = preset_with(d, "text.toml", "entries = 64", "entries = \"x\"");
    let m = sim_run(d, &["-m", &text]);
    assert!(m.contains("text.toml: line "), "{m}");
    assert!(m.contains("`[[tlb]] entries`: expected a whole number"), "{m}");
    assert!(m.contains("found the text \"x\""), "{m}");

    let negative = preset_with(d, "negative.toml", "entries = 64", "entries = -3");
    assert!(sim_run(d, &["-m", &negative]).contains("found the number -3"));

    let unknown = preset_with(d, "unknown.toml", "entries = 64", "entries = 64\nbogus = 1");
    let m = sim_run(d, &["-m", &unknown]);
    assert!(m.contains("unknown key \"bogus\" (valid keys: "), "{m}");
    assert!(m.contains("`[[tlb]] bogus`"), "{m}");
}

#[test]
fn policy_switches_of_the_wrong_kind_name_line_and_switch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hz = policy_with(d, "hz.toml", "hz = 250", "hz = \"x\"");
    let m = sim_run(d, &["-p", &hz]);
    assert!(m.contains("hz.toml: line "), "{m}");
    assert!(m.contains("`[set] hz`: expected a whole number"), "{m}");

    let la57 = policy_with(d, "la57.toml", "la57 = \"off\"", "la57 = \"maybe\"");
    let m = sim_run(d, &["-p", &la57]);
    assert!(m.contains("`[set] la57`: \"maybe\" is not one of: off, "), "{m}");

    let unknown = policy_with(d, "unknown.toml", "hz = 250", "hz = 250\nbogus = 1");
    assert!(sim_run(d, &["-p", &unknown]).contains("bogus"));
}

#[test]
fn bad_names_and_result_files_read_plainly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(message(d, &["sim", "run", "-s", "pingpon"]).contains("did you mean \"pingpong\""));
    sim_run(d, &["-p", "linux-6.18+no-such-variant"]);
    std::fs::write(d.join("schema.json"), r#"{"schema": 3}"#).unwrap();
    let m = message(d, &["compare", "schema.json", "schema.json"]);
    assert!(m.contains("schema.json: expected text"), "{m}");
    assert!(m.matches("schema.json").count() == 1, "the file is named twice: {m}");
    std::fs::write(d.join("cut.json"), "[1,2").unwrap();
    message(d, &["report", "cut.json"]);
}
