//! The harness with scripted samples: schedule, interruption, result files, baselines,
//! comparisons and their tables, without timing noise.

use std::sync::atomic::{AtomicBool, Ordering};

use tlblab_bench::render::{self, Format};
use tlblab_bench::{
    compare_results, compare_within, load_results, BaselineStore, BenchConfig, BenchError,
    BenchResults, CompareSettings, ExecError, Executor, Method, MockExecutor, ResultsComparison,
    RunRecord, Session, COMPARE_SCHEMA,
};
use tlblab_stats::Verdict;

fn cfg(busy: &str) -> BenchConfig {
    BenchConfig::new("madvise-busy", [("busy", busy)], "µs/op", true)
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tlblab-bench-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A session of `configs`, each scripted with `values[i]`, run to the end.
fn session(configs: &[(BenchConfig, Vec<f64>)], method: Method) -> (Session, MockExecutor) {
    let mut mock = MockExecutor::default();
    for (c, v) in configs {
        mock.script(c, v.iter().copied());
    }
    let mut s = Session::new(configs.iter().map(|(c, _)| c.clone()).collect(), method, None);
    s.run(&mut mock, &AtomicBool::new(false), &mut ()).unwrap();
    (s, mock)
}

#[test]
fn interleaved_rounds_run_every_configuration_once_in_a_seeded_order() {
    let method = Method { runs: 20, seed: 3, ..Method::default() };
    let order = Session::schedule(&method, 3);
    assert_eq!(order.len(), 60);
    for round in order.chunks(3) {
        let mut configs: Vec<usize> = round.iter().map(|&(c, _)| c).collect();
        configs.sort();
        assert_eq!(configs, [0, 1, 2], "each round runs each configuration once");
    }
    assert_eq!(order, Session::schedule(&method, 3), "same seed, same order");
    let other = Session::schedule(&Method { seed: 4, ..method.clone() }, 3);
    assert_ne!(order, other, "another seed, another order");
    let firsts: std::collections::BTreeSet<usize> = order.chunks(3).map(|r| r[0].0).collect();
    assert_eq!(firsts.len(), 3, "over 20 rounds every configuration sometimes goes first");
    let sequential = Session::schedule(&Method { interleaved: false, ..method }, 2);
    assert_eq!(&sequential[..3], [(0, 0), (0, 1), (0, 2)]);
}

#[test]
fn a_session_keeps_every_raw_sample_in_run_order() {
    let (a, b) = (cfg("0"), cfg("1"));
    let method = Method { runs: 4, seed: 9, ..Method::default() };
    let (s, mock) = session(
        &[(a.clone(), vec![1.0, 2.0, 3.0, 4.0]), (b.clone(), vec![5.0, 6.0, 7.0, 8.0])],
        method.clone(),
    );
    let r = s.results();
    assert_eq!(r.configs[0].values(), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(r.configs[1].values(), [5.0, 6.0, 7.0, 8.0]);
    let expected: Vec<String> =
        Session::schedule(&method, 2).iter().map(|&(c, _)| [&a, &b][c].key()).collect();
    assert_eq!(mock.calls, expected, "runs follow the schedule");
    let mut seq: Vec<usize> =
        r.configs.iter().flat_map(|c| c.runs.iter().map(|x| x.sequence)).collect();
    seq.sort();
    assert_eq!(seq, (0..8).collect::<Vec<_>>());
    assert!(!r.interrupted);
    assert_eq!(r.schema, "tlblab.bench/1");
}

/// Stops the session (as Ctrl-C does) after `after` runs.
struct StopAfter<'a> {
    inner: MockExecutor,
    after: usize,
    stop: &'a AtomicBool,
}

impl Executor for StopAfter<'_> {
    fn run(&mut self, config: &BenchConfig, method: &Method) -> Result<RunRecord, ExecError> {
        let r = self.inner.run(config, method);
        if self.inner.calls.len() == self.after {
            self.stop.store(true, Ordering::SeqCst);
        }
        r
    }
}

#[test]
fn an_interrupted_session_keeps_its_finished_runs_on_disk() {
    let dir = tmp("interrupt");
    let out = dir.join("results.json");
    let stop = AtomicBool::new(false);
    let mut inner = MockExecutor::default();
    inner.script(&cfg("0"), [1.0; 10]);
    inner.script(&cfg("1"), [2.0; 10]);
    let mut exec = StopAfter { inner, after: 5, stop: &stop };
    let method = Method { runs: 10, ..Method::default() };
    let mut s = Session::new(vec![cfg("0"), cfg("1")], method, Some(out.clone()));
    s.run(&mut exec, &stop, &mut ()).unwrap();
    let on_disk = load_results(&out).unwrap();
    assert!(on_disk.interrupted);
    assert_eq!(on_disk.configs.iter().map(|c| c.runs.len()).sum::<usize>(), 5);
    assert_eq!(&on_disk, s.results());
    let leftovers: Vec<_> =
        std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers, ["results.json"], "no temporary file left");
}

#[test]
fn unsupported_configurations_are_skipped_with_the_reason_and_failures_name_the_run() {
    let mut mock = MockExecutor::default();
    mock.script(&cfg("0"), [1.0, 1.1]);
    mock.refuse(&cfg("2"), "madvise-busy --busy 2 needs 3 CPUs; this machine has 2");
    let method = Method { runs: 2, ..Method::default() };
    let mut s = Session::new(vec![cfg("0"), cfg("2")], method.clone(), None);
    s.run(&mut mock, &AtomicBool::new(false), &mut ()).unwrap();
    assert_eq!(s.results().configs[0].runs.len(), 2);
    assert!(s.results().configs[1].skipped.as_deref().unwrap().contains("needs 3 CPUs"));
    assert!(
        render::session_table(s.results()).contains("not run: madvise-busy --busy 2 needs 3 CPUs")
    );

    let mut short = MockExecutor::default();
    short.script(&cfg("0"), [1.0]);
    let mut s = Session::new(vec![cfg("0")], method, None);
    let e = s.run(&mut short, &AtomicBool::new(false), &mut ()).unwrap_err();
    assert!(matches!(e, BenchError::Run { run: 2, .. }), "{e}");
    assert_eq!(s.results().configs[0].runs.len(), 1, "the finished run is kept");
}

#[test]
fn busy_one_against_busy_zero_is_a_significant_regression_with_a_star() {
    let zero = vec![2.00, 2.10, 1.90, 2.05, 1.95, 2.02, 1.98, 2.01];
    let one = vec![9.00, 9.30, 8.80, 9.10, 9.20, 8.90, 9.05, 8.95];
    let (s, _) =
        session(&[(cfg("0"), zero), (cfg("1"), one)], Method { runs: 8, ..Method::default() });
    let rows = compare_within(s.results(), &CompareSettings::default()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].comparison.verdict, Verdict::Regressed);
    let table = render::comparison_table(&rows, "busy 0", "busy 1", 0.01);
    let amean = table.lines().find(|l| l.trim_start().starts_with("Amean")).unwrap();
    // Means 2.00125 and 9.0375: (A − B) / A = −351.59 %, negative = worse, starred.
    assert!(amean.contains("*-351.59%*"), "{amean}");
    let min = table.lines().find(|l| l.trim_start().starts_with("Min")).unwrap();
    assert!(!min.contains('*'), "only the mean row carries the star: {min}");
    assert!(table.contains("busy 0 is 4.516"), "{table}");
    // Another parameter value of the scenario: the time is higher, not "regressed".
    assert!(table.contains(": higher (beyond ±1.0%)\n"), "{table}");
    assert!(!table.contains("regressed"), "{table}");
}

#[test]
fn a_shift_inside_the_noise_band_is_within_noise_even_with_a_tiny_p() {
    let a: Vec<f64> = (0..10).map(|i| 100.0 + f64::from(i) * 0.01).collect();
    let b: Vec<f64> = a.iter().map(|x| x * 1.005).collect();
    let (s, _) = session(&[(cfg("0"), a), (cfg("1"), b)], Method { runs: 10, ..Method::default() });
    let rows = compare_within(s.results(), &CompareSettings::default()).unwrap();
    assert!(rows[0].comparison.welch.p_two_sided < 1e-6);
    assert_eq!(rows[0].comparison.verdict, Verdict::WithinNoise, "0.5% < 1% noise");
    let strict = CompareSettings { noise_threshold: 0.001, ..CompareSettings::default() };
    let rows = compare_within(s.results(), &strict).unwrap();
    assert_eq!(rows[0].comparison.verdict, Verdict::Regressed, "0.5% > 0.1% noise");
}

#[test]
fn rates_use_the_harmonic_mean_and_positive_percent_means_more() {
    let c = BenchConfig::new("munmap-threads", [("tasks", "2")], "ops/s", false);
    let (a, _) =
        session(&[(c.clone(), vec![100.0, 400.0])], Method { runs: 2, ..Method::default() });
    let (b, _) = session(&[(c, vec![200.0, 800.0])], Method { runs: 2, ..Method::default() });
    let cmp = compare_results(("A", a.results()), ("B", b.results()), &CompareSettings::default())
        .unwrap();
    assert_eq!(cmp.rows[0].hmean, Some((160.0, 320.0)), "2 / (1/100 + 1/400) = 160");
    let text = render::comparison(&cmp, Format::Table);
    let hmean = text.lines().find(|l| l.trim_start().starts_with("Hmean")).unwrap();
    assert!(hmean.contains("100.00%"), "{hmean}");
    assert!(render::comparison(&cmp, Format::Csv).starts_with("config,unit,statistic"));
    assert!(render::comparison(&cmp, Format::Markdown).contains("| Hmean |"));
    let json: serde_json::Value =
        serde_json::from_str(&render::comparison(&cmp, Format::Json)).unwrap();
    assert_eq!(json["rows"][0]["hmean"][1], 320.0);
}

/// `a` and `b` have the same shape, strings and booleans, and numbers within 2 ulp.
fn assert_close(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 2.0 * f64::EPSILON * x.abs().max(y.abs()), "{path}: {x} {y}");
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{path}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_close(x, y, &format!("{path}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{path}");
            for (k, x) in x {
                assert_close(x, &y[k], &format!("{path}.{k}"));
            }
        }
        (x, y) => assert_eq!(x, y, "{path}"),
    }
}

#[test]
fn compare_json_names_its_schema_first_and_reads_back_to_the_same_document() {
    let m = Method { runs: 6, ..Method::default() };
    let (a, _) = session(&[(cfg("1"), vec![10.0, 10.2, 9.9, 10.1, 10.0, 10.3])], m.clone());
    let (b, _) = session(&[(cfg("1"), vec![9.0, 9.1, 8.9, 9.2, 9.0, 8.8])], m);
    let cmp = compare_results(("a", a.results()), ("b", b.results()), &CompareSettings::default())
        .unwrap();
    let text = render::comparison(&cmp, Format::Json);
    assert_eq!(COMPARE_SCHEMA, "tlblab.bench.compare/1");
    assert!(
        text.starts_with("{\n  \"schema\": \"tlblab.bench.compare/1\",\n"),
        "the schema is the first field: {text}"
    );
    let back: ResultsComparison = serde_json::from_str(&text).unwrap();
    assert_eq!(back.rows[0].comparison.verdict, Verdict::Improved);
    assert_eq!((back.a_label.as_str(), back.b_label.as_str()), ("a", "b"));
    // Every field survives, to the last bit or one unit in the last place: serde_json's
    // default parser (without its `float_roundtrip` feature) may round a long decimal to the
    // neighbouring double. The printed tables, with their 2 to 4 decimals, are the same.
    let (v0, v1): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&text).unwrap(), serde_json::to_value(&back).unwrap());
    assert_close(&v0, &v1, "");
    assert_eq!(render::comparison(&back, Format::Table), render::comparison(&cmp, Format::Table));
}

#[test]
fn comparing_different_scenarios_or_parameters_is_refused_with_the_differences() {
    let m = Method { runs: 2, ..Method::default() };
    let (a, _) = session(&[(cfg("0"), vec![1.0, 2.0])], m.clone());
    let (b, _) = session(&[(cfg("1"), vec![1.0, 2.0])], m);
    let e =
        compare_results(("base", a.results()), ("new", b.results()), &CompareSettings::default())
            .unwrap_err()
            .to_string();
    assert!(e.contains("different scenarios or parameters"), "{e}");
    assert!(e.contains("only in the first: madvise-busy --busy 0"), "{e}");
    assert!(e.contains("only in the second: madvise-busy --busy 1"), "{e}");
}

#[test]
fn a_comparison_lists_measurement_settings_that_differ_but_not_the_run_count() {
    let m = Method { runs: 3, ..Method::default() };
    let (a, _) = session(&[(cfg("0"), vec![1.0, 2.0, 1.5])], m.clone());
    let other = Method { runs: 4, run_ms: 250, flush_trace: true, seed: 9, ..m };
    let (b, _) = session(&[(cfg("0"), vec![1.0, 2.0, 1.5, 1.2])], other);
    let cmp =
        compare_results(("base", a.results()), ("new", b.results()), &CompareSettings::default())
            .unwrap();
    let diffs: Vec<String> = cmp
        .environment_differences
        .iter()
        .map(|d| format!("{}: {} → {}", d.field, d.a, d.b))
        .collect();
    assert_eq!(diffs, ["method.run_ms: 500 → 250", "method.flush_trace: false → true"]);
    let text = render::comparison(&cmp, Format::Table);
    assert!(text.contains("method.run_ms: 500 → 250"), "{text}");
}

#[test]
fn baselines_round_trip_and_bad_files_get_clear_errors() {
    let dir = tmp("baselines");
    let store = BaselineStore::new(dir.join("b"));
    let (s, _) =
        session(&[(cfg("0"), vec![1.0, 2.0, 3.0])], Method { runs: 3, ..Method::default() });
    let path = store.save("before-6.18", s.results()).unwrap();
    assert_eq!(store.load("before-6.18").unwrap(), *s.results());
    assert_eq!(store.names(), ["before-6.18"]);
    assert_eq!(load_results(&path).unwrap(), *s.results());
    assert!(matches!(store.path("../x"), Err(BenchError::BadBaselineName(_))));
    let missing = store.load("after").unwrap_err().to_string();
    assert!(
        missing.contains("no baseline \"after\"") && missing.contains("before-6.18"),
        "{missing}"
    );

    let text = std::fs::read_to_string(&path).unwrap();
    let truncated = dir.join("truncated.json");
    std::fs::write(&truncated, &text[..text.len() / 2]).unwrap();
    let e = load_results(&truncated).unwrap_err().to_string();
    assert!(e.contains("truncated.json") && e.contains("line"), "{e}");
    let other = dir.join("other.json");
    std::fs::write(&other, "{\"schema\": \"tlblab.sim.study/1\"}").unwrap();
    let e = load_results(&other).unwrap_err().to_string();
    assert!(e.contains("\"tlblab.sim.study/1\" is not \"tlblab.bench/1\""), "{e}");
    let results: BenchResults = serde_json::from_str(&text).unwrap();
    assert_eq!(results.configs[0].runs[2].value, 3.0);
}
