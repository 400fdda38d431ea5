//! Comparisons between bench sessions: a saved `tlblab compare --format json`
//! (`tlblab.bench.compare/1`), and two or more `tlblab.bench/1` sessions given together, which
//! the report compares with the first. The sessions are the bench fixture (a real
//! `tlblab bench` file) with its runs' values replaced by constructed ones, so that the verdict
//! is known: 10% faster with 1% noise is an improvement; the same values shifted by 0.2% are
//! within the 1% noise band.

mod common;

use common::{assert_self_contained, fixture, parse, rows, Node};
use serde_json::Value;
use tlblab_bench::render::{self, Format};
use tlblab_bench::{compare_results, BenchResults, CompareSettings};
use tlblab_report::{InputKind, Report, ReportError};

/// Session A's runs of `--busy 0` and `--busy 1`, µs/op: about 1% noise.
const A: [&[f64]; 2] = [
    &[3.01, 3.06, 2.97, 3.03, 2.99, 3.02, 2.98, 3.01],
    &[9.00, 9.12, 8.94, 9.06, 8.97, 9.04, 8.95, 9.02],
];
/// Session B: about 10% lower, with noise of its own.
const B: [&[f64]; 2] = [
    &[2.71, 2.74, 2.68, 2.72, 2.69, 2.73, 2.70, 2.71],
    &[8.10, 8.19, 8.06, 8.15, 8.08, 8.13, 8.04, 8.12],
];

/// The bench fixture with each configuration's runs replaced by `values` (copies of its first
/// run, numbered again), on `kernel`.
fn session(values: [&[f64]; 2], kernel: &str) -> Value {
    let text = std::fs::read_to_string(fixture("bench-madvise-busy.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["environment"]["kernel_release"]["available"] = kernel.into();
    v["method"]["runs"] = values[0].len().into();
    let mut sequence = 0;
    for (config, values) in v["configs"].as_array_mut().unwrap().iter_mut().zip(values) {
        let first = config["runs"][0].clone();
        let runs: Vec<Value> = values
            .iter()
            .map(|x| {
                let mut run = first.clone();
                run["value"] = (*x).into();
                run["sequence"] = sequence.into();
                sequence += 1;
                run
            })
            .collect();
        config["runs"] = runs.into();
    }
    v
}

/// Session C: A's values in reverse order, 0.2% higher.
fn same_within_noise() -> Value {
    let c0: Vec<f64> = A[0].iter().rev().map(|x| x * 1.002).collect();
    let c1: Vec<f64> = A[1].iter().rev().map(|x| x * 1.002).collect();
    session([&c0, &c1], "6.18.44-fc-v657")
}

fn report(inputs: &[(&str, Value)]) -> Report {
    let mut r = Report::new("comparison test");
    for (name, v) in inputs {
        r.add_value(name, v.clone()).unwrap_or_else(|e| panic!("{e}"));
    }
    r
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The section whose heading is `h2`.
fn section<'a>(root: &'a Node, h2: &str) -> &'a Node {
    root.find("section")
        .into_iter()
        .find(|s| s.find("h2")[0].text() == h2)
        .unwrap_or_else(|| panic!("no section {h2:?}"))
}

/// The rows of the "Change per configuration" table: configuration, A, B, change, Welch p,
/// Mann–Whitney p, speedup, verdict.
fn change_rows(section: &Node) -> Vec<Vec<String>> {
    rows(section).into_iter().filter(|r| r.len() == 8 && r[0].starts_with("--busy ")).collect()
}

#[test]
fn sessions_given_together_are_each_compared_with_the_first() {
    let r = report(&[
        ("a.json", session(A, "6.18.44-fc-v657")),
        ("b.json", session(B, "6.19.0-test")),
        ("c.json", same_within_noise()),
    ]);
    let html = r.render_html();
    let root = parse(&html).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_self_contained(&html, &[]);
    let h2: Vec<String> = root.find("h2").iter().map(|h| h.text()).collect();
    assert_eq!(
        h2,
        [
            "Benchmark: madvise-busy on 6.18.44-fc-v657",
            "Benchmark: madvise-busy on 6.19.0-test",
            "Comparison: b.json against a.json",
            "Benchmark: madvise-busy on 6.18.44-fc-v657",
            "Comparison: c.json against a.json",
        ]
    );

    // B: 10% lower with 1% noise, improved in both configurations.
    let b = section(&root, "Comparison: b.json against a.json");
    let rows_b = change_rows(b);
    assert_eq!(rows_b.len(), 2);
    for (row, i) in rows_b.iter().zip(0..2) {
        let change = mean(B[i]) / mean(A[i]) - 1.0;
        assert!(change < -0.09 && change > -0.11);
        assert!(row[3].starts_with(&format!("{:+.2}% [", change * 100.0)), "{row:?}");
        assert_eq!(row[7], "improved (beyond noise)", "{row:?}");
        assert!(row[1].ends_with(" (8)") && row[2].ends_with(" (8)"));
        assert!(row[6].starts_with("B 1.1") && row[6].ends_with("times faster"), "{row:?}");
    }
    // --busy 0, by hand: A's mean 24.07 / 8 = 3.00875, sd 0.0290; B's 21.68 / 8 = 2.71, sd
    // 0.0200; change 2.71 / 3.00875 − 1 = −9.93%.
    assert_eq!(rows_b[0][..3], ["--busy 0", "3.009 ± 0.029 (8)", "2.710 ± 0.020 (8)"]);
    assert!(rows_b[0][3].starts_with("-9.93% ["), "{:?}", rows_b[0]);
    let tally = rows(b).into_iter().find(|r| r[0] == "Verdicts").unwrap();
    assert_eq!(tally[1], "2 configurations: 2 improved");
    // Its plot: one bar per configuration, in %, with the zero line.
    let figures = b.find("figure");
    assert_eq!(figures.len(), 1);
    let texts: Vec<String> = figures[0].find("text").iter().map(|t| t.text()).collect();
    for want in ["change of the mean, % (B against A)", "configuration", "--busy 0", "--busy 1"] {
        assert!(texts.iter().any(|t| t.trim() == want), "{want:?} not in {texts:?}");
    }
    assert!(figures[0].text().contains("below the line B is faster"));
    // The kernels differ; the list says so.
    let items: Vec<String> = b.find("li").iter().map(|l| l.text()).collect();
    assert!(items.contains(&"kernel_release: 6.18.44-fc-v657 → 6.19.0-test".to_string()));
    // Counters per op of both sides: the fixture's first run of --busy 1, 6,343 reason-4
    // flushes over 12,096 ops, in every run of both.
    let want = ["--busy 1", "tlb_flush.reason4", "0.5244", "0.5244", "+0.00%"];
    assert!(rows(b).contains(&want.map(String::from).to_vec()));

    // C: the same values 0.2% higher, inside the ±1% band.
    let c = section(&root, "Comparison: c.json against a.json");
    for row in change_rows(c) {
        assert!(row[3].starts_with("+0.20% ["), "{row:?}");
        assert_eq!(row[7], "not significant", "{row:?}");
    }
    assert!(c.text().contains("None: the saved environments"));

    // Markdown: the same sections and verdicts, the plot as a line.
    // Wide enough for the pipe tables, whose padding is squeezed out.
    let md = squeeze(&r.render_markdown_width(1000));
    assert!(md.contains("## Comparison: b.json against a.json"));
    assert!(md.contains("| configuration of madvise-busy (values in µs/op) | A: mean ± sd (runs) | B: mean ± sd (runs) | change of the mean [95% CI] | Welch p | Mann–Whitney p | speedup (± sd) | verdict |"), "{md}");
    assert_eq!(md.matches("| improved (beyond noise) |").count(), 2);
    assert_eq!(md.matches("| not significant |").count(), 2);
    assert!(md.contains("_Plot in the HTML report:_ change of the mean, B against A: --busy 0 -9."));
    assert!(md.contains("- `kernel_release`: 6.18.44-fc-v657 → 6.19.0-test"), "{md}");
}

#[test]
fn a_saved_comparison_shows_what_the_sessions_show() {
    let (a, b) = (session(A, "6.18.44-fc-v657"), session(B, "6.19.0-test"));
    let ra: BenchResults = serde_json::from_value(a.clone()).unwrap();
    let rb: BenchResults = serde_json::from_value(b.clone()).unwrap();
    // What `tlblab compare a.json b.json --format json` prints.
    let cmp =
        compare_results(("a.json", &ra), ("b.json", &rb), &CompareSettings::default()).unwrap();
    let json = render::comparison(&cmp, Format::Json);
    let mut saved = Report::new("comparison test");
    assert_eq!(saved.add_json("b-vs-a.json", &json).unwrap(), InputKind::Compare);
    let from_file = parse(&saved.render_html()).unwrap();
    let from_sessions = parse(&report(&[("a.json", a), ("b.json", b)]).render_html()).unwrap();
    let title = "Comparison: b.json against a.json";
    let (f, s) = (section(&from_file, title), section(&from_sessions, title));
    // Every table of the section is the same but the line saying where it came from.
    let other_than_input = |n: &Node| -> Vec<Vec<String>> {
        rows(n).into_iter().filter(|r| r[0] != "Input").collect()
    };
    assert_eq!(other_than_input(f), other_than_input(s));
    assert_eq!(change_rows(f).len(), 2);
    assert!(change_rows(f).iter().all(|r| r[7] == "improved (beyond noise)"));
    let input = rows(f).into_iter().find(|r| r[0] == "Input").unwrap();
    assert_eq!(input[1], "b-vs-a.json (a saved tlblab compare)");
    assert_eq!(f.find("figure").len(), 1);
    // The Markdown of the saved comparison too.
    let md = squeeze(&saved.render_markdown_width(1000));
    assert!(
        md.starts_with("# comparison test") && md.contains("## Comparison: b.json against a.json")
    );
    assert_eq!(md.matches("| improved (beyond noise) |").count(), 2);
}

#[test]
fn sessions_of_other_configurations_are_shown_alone_with_the_reason() {
    let mut other = session(A, "6.18.44-fc-v657");
    other["configs"][1]["config"]["params"]["busy"] = "2".into();
    let r = report(&[("a.json", session(A, "6.18.44-fc-v657")), ("other.json", other)]);
    let html = r.render_html();
    let root = parse(&html).unwrap();
    assert!(!root.find("h2").iter().any(|h| h.text().starts_with("Comparison:")));
    let note = root
        .find("p")
        .into_iter()
        .find(|p| p.attr("class") == Some("warning") && p.text().starts_with("Not compared"))
        .expect("a note on the session that was not compared");
    assert_eq!(
        note.text(),
        "Not compared with the first session (a.json): cannot compare a.json with other.json: \
         they measured different scenarios or parameters (only in the first: madvise-busy --busy 1) \
         (only in the second: madvise-busy --busy 2)"
    );
    assert!(r.render_markdown().contains("> **Warning:** Not compared with the first session"));
}

#[test]
fn a_comparison_file_that_does_not_fit_is_refused_naming_the_field() {
    let ra: BenchResults = serde_json::from_value(session(A, "x")).unwrap();
    let rb: BenchResults = serde_json::from_value(session(B, "y")).unwrap();
    let cmp = compare_results(("a", &ra), ("b", &rb), &CompareSettings::default()).unwrap();
    let mut v = serde_json::to_value(&cmp).unwrap();
    assert_eq!(v["schema"], "tlblab.bench.compare/1");
    v["rows"][1]["comparison"].as_object_mut().unwrap().remove("welch");
    let e = Report::new("t").add_value("cut.json", v.clone()).unwrap_err();
    assert!(
        matches!(&e, ReportError::Malformed { path, .. } if path == "rows[1].comparison"),
        "{e:?}"
    );
    assert!(e.to_string().contains("the key \"welch\" is missing"), "{e}");
    let mut v = serde_json::to_value(&cmp).unwrap();
    v["noise_threshold"] = (-0.5).into();
    let e = Report::new("t").add_value("noise.json", v).unwrap_err();
    assert!(matches!(e, ReportError::Inconsistent { .. }), "{e:?}");
    assert!(e.to_string().contains("noise_threshold -0.5"), "{e}");
}

#[test]
fn a_comparison_without_rows_says_there_is_nothing_to_compare() {
    let doc = r#"{"schema":"tlblab.bench.compare/1","a_label":"a","b_label":"b","rows":[],
        "environment_differences":[],"noise_threshold":0.01}"#;
    let mut r = Report::new("t");
    assert_eq!(r.add_json("empty.json", doc).unwrap(), InputKind::Compare);
    let html = r.render_html();
    let root = parse(&html).unwrap();
    assert_eq!(root.find("figure").len(), 0);
    assert!(html.contains("No configuration has runs in both sessions: nothing to compare."));
    assert!(rows(&root).contains(&vec!["Verdicts".to_string(), "0 configurations".to_string()]));
}

/// `text` with each run of spaces as one (pipe tables are padded to their columns).
fn squeeze(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if !(ch == ' ' && out.ends_with(' ')) {
            out.push(ch);
        }
    }
    out
}
