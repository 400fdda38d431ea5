//! `tlblab compare`: two saved benchmark results.

use crate::common::{one_error, tlblab};
use std::sync::atomic::AtomicBool;
use tlblab_bench::{BenchConfig, Method, MockExecutor, Session};

/// Writes a result file of `config` with scripted `values`.
fn results_file(dir: &std::path::Path, name: &str, config: &BenchConfig, values: &[f64]) -> String {
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
