//! `tlblab report` for mail and for the terminal (issue 18, item 1): the summary first, Markdown
//! and text within their width, and the report written to a file, not poured onto a terminal.

use crate::common::tlblab;
use std::path::{Path, PathBuf};

/// `tlblab study`'s results with the live part (tlblab-report's fixtures, README.md there).
fn study_results() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tlblab-report/tests/fixtures/study-results-live.min.json")
}

/// The fixture copied into a fresh directory as results.json.
fn results_in_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    std::fs::copy(study_results(), &path).unwrap();
    (dir, path)
}

#[test]
fn by_default_the_report_goes_to_a_file_beside_its_input_and_is_not_replaced() {
    let (dir, results) = results_in_tempdir();
    for (format, ext) in [("html", "html"), ("markdown", "md"), ("text", "txt")] {
        let out = tlblab().arg("report").arg(&results).args(["--format", format]).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.stdout.is_empty(), "{format}: the report went to standard output");
        let file = dir.path().join(format!("results.{ext}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&file.display().to_string()), "{stderr}");
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(written.contains("Summary"), "{format}");
        // A second run refuses to replace it (bad input, 2), and leaves it as it was.
        let again = tlblab().arg("report").arg(&results).args(["--format", format]).output();
        let again = again.unwrap();
        assert_eq!(again.status.code(), Some(2), "{format}");
        assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
        let forced =
            tlblab().arg("report").arg(&results).args(["--format", format, "--force"]).output();
        assert!(forced.unwrap().status.success());
    }
}

#[test]
fn dash_writes_to_standard_output() {
    let (dir, results) = results_in_tempdir();
    let out = tlblab().arg("report").arg(&results).args(["--format", "text", "-o", "-"]).output();
    let out = out.unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("tlblab report\n"), "{text}");
    assert!(!dir.path().join("results.txt").exists() && !dir.path().join("-").exists());
}

fn render(format: &str, extra: &[&str]) -> String {
    let out = tlblab()
        .arg("report")
        .arg(study_results())
        .args(["--format", format, "-o", "-"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn markdown_and_text_are_mail_ready_at_80_columns_or_the_width_asked() {
    for format in ["markdown", "text"] {
        let long = |doc: &str, w: usize| -> Vec<String> {
            doc.lines().filter(|l| l.chars().count() > w).map(str::to_string).collect()
        };
        let default = render(format, &[]);
        assert!(long(&default, 80).is_empty(), "{format}: {:#?}", long(&default, 80));
        let narrow = render(format, &["--width", "60"]);
        assert!(long(&narrow, 60).is_empty(), "{format}: {:#?}", long(&narrow, 60));
        // Wider lets lines grow: the width is the one asked for, not a fixed 80.
        let wide = render(format, &["--width", "200"]);
        assert!(!long(&wide, 80).is_empty(), "{format}");
        // The summary opens it: its heading before the first study's.
        let (summary, study) = (default.find("Summary\n"), default.find("S1 (s1-pti)"));
        assert!(summary.is_some() && summary < study, "{format}: {summary:?} {study:?}");
    }
    let bad =
        tlblab().arg("report").arg(study_results()).args(["--width", "5", "-o", "-"]).output();
    assert_eq!(bad.unwrap().status.code(), Some(2));
}

#[test]
fn the_summary_shows_declared_deferrals_stale_uses_as_counts() {
    let text = render("text", &[]);
    let summary = &text[..text.find("S1 (s1-pti)").unwrap()];
    // latr: no violation, and 556,663 and 200,915 stale uses inside its declared windows.
    let latr = summary.lines().find(|l| l.starts_with("latr ")).expect("a latr row");
    let cells: Vec<&str> = latr.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells, ["latr", "D 0", "D 0", "D 557k", "D 201k", "D 0"]);
    assert!(summary.contains("D n: no violation, and n stale uses inside the"), "{summary}");
    // The header names the machine and the moment.
    for key in ["kernel: ", "CPU: ", "hypervisor: ", "date: ", "system load: "] {
        assert!(summary.lines().any(|l| l.starts_with(key)), "{key}");
    }
}
