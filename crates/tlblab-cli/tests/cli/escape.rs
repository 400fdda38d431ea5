//! Free text from inputs reaches the terminal escaped (issue 29, item 2; reproductions C1 and
//! C2 of ../shared/repro/more/): a preset's description, a policy's name and `mirrors`, strings
//! of a result file. Text output goes through one function (`render::stdout`, escaping with
//! `tlblab_types::escape`); JSON keeps the text as it was.

use crate::common::{data, golden_trace, tlblab};

/// Whether `out` is free of every byte sequence that acts on a terminal (C0 and C1 controls but
/// the line break, DEL, text-reordering marks), and shows the escape sequence escaped instead.
fn shown_not_sent(out: &[u8]) {
    let text = String::from_utf8_lossy(out);
    let raw: Vec<char> =
        text.chars().filter(|&c| c != '\n' && tlblab_types::escape::needs_escape(c)).collect();
    assert!(raw.is_empty(), "raw controls {raw:?} in {text}");
    assert!(text.contains("\\x1b"), "the escape shown: {text}");
}

fn stdout(args: &[&str]) -> Vec<u8> {
    let out = tlblab().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// C1: a preset's description in `sim trace`'s header and `sim machines show`, a policy's name
/// and `mirrors` in `sim policies show`.
#[test]
fn free_text_of_presets_and_policies_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let golden = std::fs::read_to_string(data("golden-machine.toml")).unwrap();
    let hostile = golden.replace(
        "description = \"tiny test machine for hand-checked counts\"",
        "description = \"\\u001b]0;pwned\\u0007\\u001b[2J\"",
    );
    assert_ne!(golden, hostile);
    let machine = dir.path().join("machine.toml");
    std::fs::write(&machine, hostile).unwrap();
    let machine = machine.to_str().unwrap();
    let trace = golden_trace();
    shown_not_sent(&stdout(&["sim", "trace", "--machine", machine, trace.to_str().unwrap()]));
    shown_not_sent(&stdout(&["sim", "machines", "show", machine]));
    let policy = data("escape/policy-esc-name.toml");
    shown_not_sent(&stdout(&["sim", "policies", "show", policy.to_str().unwrap()]));
    // Data formats keep the text: the TOML template quotes it in its own syntax.
    let toml = stdout(&["sim", "machines", "show", machine, "--toml"]);
    let toml = String::from_utf8(toml).unwrap();
    let again = tlblab_sim::machine::MachineSpec::from_toml(&toml, "again").unwrap();
    assert_eq!(again.raw().description, "\u{1b}]0;pwned\u{7}\u{1b}[2J");
}

/// C2: strings of result files (their environment) in `compare` and `report --format text`;
/// `compare --format json` keeps them as they were.
#[test]
fn strings_of_result_files_are_escaped() {
    let (a, b) = (data("escape/compare-esc-env-a.json"), data("escape/compare-esc-env-b.json"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    shown_not_sent(&stdout(&["compare", a, b]));
    shown_not_sent(&stdout(&["compare", "--format", "markdown", a, b]));
    let report = data("escape/report-esc-bench.json");
    let report = report.to_str().unwrap();
    shown_not_sent(&stdout(&["report", "--format", "text", "-o", "-", report]));
    shown_not_sent(&stdout(&["report", "--format", "markdown", "-o", "-", report]));
    let json = stdout(&["compare", "--format", "json", a, b]);
    let parsed: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(parsed.to_string().contains("\\u001b"), "JSON keeps the ESC, in its own escape");
}
