//! `tlblab compare`: two saved benchmark results.

use crate::common::{one_error, tlblab};
use std::sync::atomic::AtomicBool;
use tlblab_bench::{BenchConfig, Method, MockExecutor, Session};

/// Writes a result file of `config` with scripted `values`.
pub fn results_file(
    dir: &std::path::Path,
    name: &str,
    config: &BenchConfig,
    values: &[f64],
) -> String {
    let path = dir.join(name);
    let mut mock = MockExecutor::default();
    mock.script(config, values.iter().copied());
    let method = Method { runs: values.len(), ..Method::default() };
    let mut session = Session::new(vec![config.clone()], method, Some(path.clone()));
    session.run(&mut mock, &AtomicBool::new(false), &mut ()).unwrap();
    path.display().to_string()
}

#[test]
fn compare_prints_the_table_the_verdict_and_refuses_other_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let busy1 = BenchConfig::new("madvise-busy", [("busy", "1")], "µs/op", true);
    let a = results_file(dir.path(), "a.json", &busy1, &[10.0, 10.2, 9.9, 10.1, 10.0, 10.3]);
    let b = results_file(dir.path(), "b.json", &busy1, &[9.0, 9.1, 8.9, 9.2, 9.0, 8.8]);
    let out = tlblab().args(["compare", &a, &b]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    // Means 10.083 and 9.000: (A − B) / A = +10.74%, better, significant.
    let amean = text.lines().find(|l| l.trim_start().starts_with("Amean")).unwrap();
    assert!(amean.contains('*') && amean.contains("10.74%"), "{amean}");
    assert!(text.contains(": improved"), "{text}");
    assert!(text.contains("environment and method: no differences"), "{text}");

    let busy0 = BenchConfig::new("madvise-busy", [("busy", "0")], "µs/op", true);
    let c = results_file(dir.path(), "c.json", &busy0, &[2.0, 2.1]);
    let e = one_error(tlblab().args(["compare", &a, &c]), 2);
    assert!(e.contains("different scenarios or parameters"), "{e}");
    let e = one_error(
        tlblab().args([
            "compare",
            &a,
            "no-such-baseline",
            "--baseline-dir",
            &dir.path().display().to_string(),
        ]),
        2,
    );
    assert!(e.contains("no baseline \"no-such-baseline\""), "{e}");
}

#[test]
fn a_saved_comparison_and_two_sessions_make_the_same_report_section() {
    let dir = tempfile::tempdir().unwrap();
    let busy1 = BenchConfig::new("madvise-busy", [("busy", "1")], "µs/op", true);
    let a = results_file(dir.path(), "a.json", &busy1, &[10.0, 10.2, 9.9, 10.1, 10.0, 10.3]);
    let b = results_file(dir.path(), "b.json", &busy1, &[9.0, 9.1, 8.9, 9.2, 9.0, 8.8]);
    // tlblab compare a.json b.json --format json > c.json
    let json = crate::common::stdout_of(["compare", &a, &b, "--format", "json"]);
    let text = String::from_utf8(json).unwrap();
    assert!(text.starts_with("{\n  \"schema\": \"tlblab.bench.compare/1\","), "{text}");
    let c = dir.path().join("c.json");
    std::fs::write(&c, &text).unwrap();
    // tlblab report c.json -o out.html
    let html = dir.path().join("out.html");
    let out = tlblab().arg("report").arg(&c).arg("-o").arg(&html).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
    assert!(page.contains(&format!("Comparison: {b} against {a}")), "{page}");
    // Means 10.083 and 9.000: −10.74%, improved.
    assert!(page.contains("-10.74% ["), "{page}");
    assert!(page.contains("improved (beyond noise)"));
    // tlblab report a.json b.json: each session, then B against A, with the same verdict.
    let md = String::from_utf8(crate::common::stdout_of([
        "report", "--format", "markdown", "--width", "1000", "-o", "-", &a, &b,
    ]))
    .unwrap();
    assert_eq!(md.matches("\n## Benchmark: ").count(), 2, "{md}");
    assert!(md.contains(&format!("\n## Comparison: {b} against {a}\n")), "{md}");
    assert!(md.contains("-10.74% [") && md.contains("| improved (beyond noise) |"), "{md}");
}
