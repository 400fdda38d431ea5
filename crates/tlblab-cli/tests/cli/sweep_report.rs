//! `tlblab report DIR` of a sweep's directory (issue 19, item 2): the summary table per grid and
//! measure, lines against a numeric axis (one per policy), heatmaps over two axes, and text
//! and Markdown forms of tables only, within their width.

use crate::common::{one_error, stdout_of, tlblab};
use std::path::{Path, PathBuf};

/// Runs `tlblab sweep SPEC -o DIR` (SPEC's text written beside DIR) and returns DIR.
fn sweep(tmp: &Path, spec: &str) -> PathBuf {
    let path = tmp.join("spec.toml");
    std::fs::write(&path, spec).unwrap();
    sweep_file(tmp, &path)
}

fn sweep_file(tmp: &Path, spec: &Path) -> PathBuf {
    let dir = tmp.join("out");
    let out = tlblab().arg("sweep").arg(spec).arg("-o").arg(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dir
}

/// The `<svg …>…</svg>` elements of a page.
fn svgs(html: &str) -> Vec<&str> {
    html.match_indices("<svg ")
        .map(|(i, _)| &html[i..i + html[i..].find("</svg>").unwrap()])
        .collect()
}

fn aria(svg: &str) -> &str {
    let start = svg.find("aria-label=\"").unwrap() + "aria-label=\"".len();
    &svg[start..start + svg[start..].find('"').unwrap()]
}

fn assert_within(text: &str, width: usize) {
    for line in text.lines() {
        assert!(line.chars().count() <= width, "longer than {width}: {line:?}");
    }
}

#[test]
fn a_ceiling_sweep_gets_a_heatmap_of_ratios_per_measure() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sweeps/ceiling.toml");
    let dir = sweep_file(tmp.path(), &spec);
    let out = tlblab().arg("report").arg(&dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let report = dir.join("report.html");
    assert!(stderr.contains(&report.display().to_string()), "{stderr}");
    let html = std::fs::read_to_string(&report).unwrap();
    // Three measures over ceiling × pages: one heatmap each, of the ratio to ceiling = 33.
    let plots = svgs(&html);
    assert_eq!(plots.len(), 3, "{:?}", plots.iter().map(|s| aria(s)).collect::<Vec<_>>());
    for svg in &plots {
        assert!(
            aria(svg).starts_with("ratio to ceiling = 33 by tlb_single_page_flush_ceiling"),
            "{}",
            aria(svg)
        );
        // Five ceilings × three sizes, the values printed in the cells, the baseline's marked.
        assert_eq!(svg.matches(">\nbase\n<").count(), 3, "{svg}");
        assert!(svg.contains("3 seeds"));
    }
    assert!(html.contains("Grid ceiling × pages") && html.contains("ratio [95% CI]"));
    assert!(html.contains("regressed") && html.contains("improved"));
    for bad in ["NaN", "inf", "<script"] {
        assert!(!html.contains(bad), "{bad} in the page");
    }
    // A second run keeps the report; --force replaces it; the same bytes every time. The
    // summary.json names the same directory.
    let again = tlblab().arg("report").arg(&dir).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    let forced = tlblab().arg("report").arg(dir.join("summary.json")).arg("--force").output();
    assert!(forced.unwrap().status.success());
    assert_eq!(std::fs::read_to_string(&report).unwrap(), html);
    // Text and Markdown: the tables, no plot, within the width.
    for (format, width) in [("text", "80"), ("markdown", "72")] {
        let text = stdout_of([
            "report",
            dir.to_str().unwrap(),
            "--format",
            format,
            "--width",
            width,
            "-o",
            "-",
        ]);
        let text = String::from_utf8(text).unwrap();
        assert_within(&text, width.parse().unwrap());
        assert!(!text.contains("<svg") && !text.contains("[plot]") && !text.contains("_Plot"));
        assert!(text.contains("verdict") && text.contains("baseline"), "{text}");
        assert!(!text.contains("NaN"));
    }
    let md = tlblab().arg("report").arg(&dir).args(["--format", "markdown"]).output().unwrap();
    assert!(md.status.success());
    assert!(dir.join("report.md").is_file());
}

/// S5's core sweep in small: CPUs (with as many tasks) × three policies.
#[test]
fn a_core_sweep_draws_one_line_per_policy_against_the_cpus() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = sweep(
        tmp.path(),
        r#"
name = "core"
seeds = 2
baseline = { policy = "linux-6.18" }
measures = ["scenario_metric", "ipis_per_op"]

[[sweep]]
label = "cpus × policy"
machine = "skylake-server"
cpus = [4, 8, 16]
tasks = [4, 8, 16]
zip = [["cpus", "tasks"]]
scenario = "munmap-threads"
policy = ["linux-6.18", "linux-4.14", "linux-4.13"]
iterations = 5
pages = 4
"#,
    );
    let html = String::from_utf8(stdout_of(["report", dir.to_str().unwrap(), "-o", "-"])).unwrap();
    let plots = svgs(&html);
    assert_eq!(plots.len(), 2);
    for svg in &plots {
        // The tasks move with the CPUs (a zip group): one axis, not a heatmap's two.
        assert!(
            aria(svg).ends_with("against simulated CPUs (tasks moves with it)"),
            "{}",
            aria(svg)
        );
        assert!(svg.contains("mean of 2 seeds, 95% CI"));
        for policy in ["linux-6.18", "linux-4.14", "linux-4.13"] {
            assert_eq!(svg.matches(&format!(">\n{policy}\n<")).count(), 1, "{policy}: {svg}");
        }
        // The second line's triangles: three points and its legend entry.
        assert_eq!(svg.matches("<polygon").count(), 4);
        // The x axis at 4, 8 and 16 CPUs.
        for x in ["4", "8", "16"] {
            assert!(svg.contains(&format!(">\n{x}\n<")), "{x}");
        }
    }
    assert!(!html.contains("NaN"));
}

#[test]
fn a_directory_that_is_not_a_finished_sweep_is_refused_in_plain_words() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = one_error(tlblab().arg("report").arg(&empty).args(["-o", "-"]), 2);
    assert!(err.contains("without summary.json"), "{err}");
    let unfinished = tmp.path().join("unfinished");
    std::fs::create_dir(&unfinished).unwrap();
    std::fs::write(unfinished.join("journal.jsonl"), "").unwrap();
    let err = one_error(tlblab().arg("report").arg(&unfinished).args(["-o", "-"]), 2);
    assert!(err.contains("has not finished") && err.contains("--resume"), "{err}");
}
