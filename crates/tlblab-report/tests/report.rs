//! The report's structure, from the checked-in outputs of the tlblab binary
//! (tests/fixtures/README.md says how each was made): sections per input, one SVG per plot with
//! its axis titles, table headers, numbers equal to the CLI's, a self-contained and well-formed
//! page, byte-identical re-renders, the same tables in Markdown, and errors that name the file.

mod common;

use std::path::Path;

use common::{assert_self_contained, fixture, parse, rows, Node};
use serde_json::Value;
use tlblab_report::{InputKind, Report, ReportError};

const S1: &str = "study-s1-quick.json";
const S2_ONE_SEED: &str = "study-s2-quick-1seed.json";
const ALL: &str = "study-all-quick.min.json";
const BENCH: &str = "bench-madvise-busy.json";
const TRACE: &str = "trace-report-live.json";
const TRACE_TEXT: &str = "trace-report-perf-text.json";
const REPLAY: &str = "replay-live.json";
const SWEEP: &str = "sweep-live-working-set.json";

const EVERY: [&str; 8] = [S1, S2_ONE_SEED, ALL, BENCH, TRACE, TRACE_TEXT, REPLAY, SWEEP];

/// A report of these fixtures, each named by its file name (not the absolute path, so that the
/// output does not depend on where the repository is).
fn report(files: &[&str]) -> Report {
    let mut r = Report::new("tlblab-report test");
    for f in files {
        let text = std::fs::read_to_string(fixture(f)).unwrap();
        r.add_json(f, &text).unwrap_or_else(|e| panic!("{e}"));
    }
    r
}

// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_renders_a_well_formed_self_contained_page() {
    for f in EVERY {
        let html = report(&[f]).render_html();
        parse(&html).unwrap_or_else(|e| panic!("{f}: not well-formed: {e}"));
        assert_self_contained(&html, &[]);
    }
    let html = report(&EVERY).render_html();
    parse(&html).unwrap();
    assert_self_contained(&html, &[]);
}

#[test]
fn user_text_is_escaped_and_is_the_only_place_a_url_may_appear() {
    let mut r = report(&[BENCH]);
    r.describe("Thread: https://lore.kernel.org/linux-mm/x <script>alert(1)</script> & more");
    let html = r.render_html();
    let escaped =
        "Thread: https://lore.kernel.org/linux-mm/x &lt;script&gt;alert(1)&lt;/script&gt; &amp; more";
    assert!(html.contains(escaped));
    assert!(!html.contains("<script"));
    assert_self_contained(&html, &[escaped]);
    // The description is text of the header, nothing else.
    let root = parse(&html).unwrap();
    let header = &root.find("header")[0];
    assert!(header.text().contains("<script>alert(1)</script> & more"));
}

/// Sections: the `h2` of each input (one per study for `study all`), each opening a `<section>`.
#[test]
fn each_input_has_its_section() {
    let cases: [(&str, &[&str]); 8] = [
        (S1, &["Summary", "S1 (s1-pti): PTI user flushes: INVPCID per page vs a deferred CR3 flush (Linux 4.15-era, 2017)"]),
        (S2_ONE_SEED, &["Summary", "S2 (s2-pcid): PCID with 6 dynamic ASIDs, tlb_gen tracking and the reworked lazy TLB mode (Linux 4.14, 2017)"]),
        (ALL, &["Summary", "S1 (s1-pti)", "S2 (s2-pcid)", "S3 (s3-la57)", "S4 (s4-flush-info)", "S5 (s5-xpfo)"]),
        (BENCH, &["Benchmark: madvise-busy on 6.18.44-fc-v657"]),
        (TRACE, &["Flush trace: 429,042 events on 6.18.44-fc-v657"]),
        (TRACE_TEXT, &["Flush trace: 158 events on an unknown kernel"]),
        (REPLAY, &["Replay of a flush trace on skylake: linux-6.18, pti-invpcid"]),
        (SWEEP, &["tlb_single_page_flush_ceiling sweep under linux-6.18 on skylake"]),
    ];
    for (f, expected) in cases {
        let root = parse(&report(&[f]).render_html()).unwrap();
        let sections = root.find("section");
        assert_eq!(sections.len(), expected.len(), "{f}");
        for (s, want) in sections.iter().zip(expected) {
            let first = s.element_children()[0];
            assert_eq!(first.name, "h2", "{f}");
            assert!(first.text().starts_with(want), "{f}: {:?} is not {want:?}", first.text());
            assert!(first.attr("id").is_some_and(|id| !id.is_empty()));
        }
        // The table of contents links every h2 and h3 by its id.
        let links: Vec<String> = root.find("nav")[0]
            .find("a")
            .iter()
            .map(|a| a.attr("href").unwrap().trim_start_matches('#').to_string())
            .collect();
        let mut ids: Vec<String> = root
            .find("h2")
            .into_iter()
            .chain(root.find("h3"))
            .map(|h| h.attr("id").unwrap().to_string())
            .collect();
        let mut sorted = links.clone();
        sorted.sort();
        ids.sort();
        assert_eq!(sorted, ids, "{f}");
    }
}

/// The axis titles of a plot, from its label (`Y by X`, `Y against X`).
fn axis_titles(svg: &Node) -> (String, String) {
    let label = svg.attr("aria-label").expect("aria-label");
    let (y, x) = label
        .rsplit_once(" by ")
        .or_else(|| label.rsplit_once(" against "))
        .unwrap_or_else(|| panic!("label {label:?}"));
    (y.to_string(), x.to_string())
}

fn svg_texts(svg: &Node) -> Vec<String> {
    svg.find("text").iter().map(|t| t.text().trim().to_string()).collect()
}

#[test]
fn one_svg_per_plot_with_its_axis_titles() {
    // Plots per input: S1 CPU-s/s, ratios (two), flush-size shares, cycles per page; S2 with one
    // seed: the main measure of its 4 parts (no ratios); all studies: S1 4, S2 8 (main and
    // ratios of 4 parts), S3 4, S4 10 (madvise-busy and rt-latency: main, ratios, preemption-off
    // max/p99 and CDF; madvise-scale: ops/s and its ratio against workers), S5 10 (2 parts:
    // main, ratios, exposure, IPIs; the core sweep: CPU-s/s and the slowdown against CPUs);
    // bench: 1 scenario; traces: pages histogram and rate; replay: cycles per request and IPIs;
    // sweep: cycles per request against the ceiling. A part whose measures are not all lower-
    // (or all higher-) is-better has two ratio charts, one per direction: S1's kbuild (CPU-s/s
    // beside times and walks), and so four more parts of the other studies (41 = 36 + 5).
    let cases = [
        (S1, 5),
        (S2_ONE_SEED, 4),
        (ALL, 41),
        (BENCH, 1),
        (TRACE, 2),
        (TRACE_TEXT, 2),
        (REPLAY, 2),
        (SWEEP, 1),
    ];
    for (f, plots) in cases {
        let root = parse(&report(&[f]).render_html()).unwrap();
        let figures = root.find("figure");
        assert_eq!(figures.len(), plots, "{f}: figures");
        assert_eq!(root.find("svg").len(), plots, "{f}: every svg is in a figure");
        for fig in figures {
            let kids = fig.element_children();
            assert_eq!(kids.len(), 2, "{f}: svg and caption");
            assert_eq!((kids[0].name.as_str(), kids[1].name.as_str()), ("svg", "figcaption"));
            let svg = kids[0];
            assert_eq!(svg.attr("role"), Some("img"));
            assert_eq!((svg.attr("width"), svg.attr("height")), (Some("720"), Some("360")));
            let (y, x) = axis_titles(svg);
            let texts = svg_texts(svg);
            assert!(texts.contains(&y), "{f}: y title {y:?} not in {texts:?}");
            assert!(texts.contains(&x), "{f}: x title {x:?} not in {texts:?}");
            assert!(kids[1].text().len() > 40, "{f}: caption {:?}", kids[1].text());
        }
    }
}

#[test]
fn s1_histogram_plots_every_size_per_policy() {
    let root = parse(&report(&[S1]).render_html()).unwrap();
    let svgs = root.find("svg");
    let share = svgs
        .iter()
        .find(|s| s.attr("aria-label").unwrap().starts_with("% of flushes"))
        .expect("share plot");
    let texts = svg_texts(share);
    // Sizes 1 and 4 and full flushes occur; both policies are in the legend.
    for want in
        ["1", "4", "full", "pti-invpcid", "pti-deferred", "pages flushed per flush_tlb_func() call"]
    {
        assert!(texts.iter().any(|t| t == want), "{want:?} not in {texts:?}");
    }
    // Two series × three sizes: six bars over the white background and the legend's swatches.
    let bars = share
        .find("rect")
        .iter()
        .filter(|r| r.attr("fill") == Some("#0072B2") || r.attr("fill") == Some("#E69F00"))
        .count();
    assert_eq!(bars, 6 + 2, "bars and legend swatches");
}

fn headers(root: &Node) -> Vec<String> {
    root.find("th").iter().map(|t| t.text()).collect()
}

#[test]
fn tables_have_their_headers() {
    let cases: [(&str, &[&str]); 8] = [
        (
            S1,
            &[
                "measure",
                "policy",
                "mean ± sd (3 runs)",
                "ratio to pti-invpcid [95% CI]",
                "significant",
                "pages",
                "% of flushes",
                "cumulative %",
                "avg cycles",
                "cycles/page",
                "samples",
                "local MM shootdown (3)",
                "mirrors",
            ],
        ),
        (S2_ONE_SEED, &["value (1 run)", "remote IPI send (4)"]),
        (
            ALL,
            &[
                "ratio to la57-off [95% CI]",
                "ratio to flush-info-percpu [95% CI]",
                "ops/s, mean ± sd (3 runs)",
                "workers, policy",
                "ratio to no-xpfo [95% CI]",
            ],
        ),
        (
            BENCH,
            &[
                "configuration",
                "runs",
                "mean ± sd, µs/op",
                "95% CI of the mean",
                "median",
                "min … max",
                "CoeffVar",
                "change of the mean [95% CI]",
                "Welch p",
                "Mann–Whitney p",
                "speedup (± sd)",
                "verdict",
                "counter per op",
                "Kernel release",
                "Method",
            ],
        ),
        (
            TRACE,
            &[
                "reason",
                "CPU 0",
                "CPU 1",
                "all CPUs",
                "% of events",
                "events",
                "comm",
                "initiated (2,3)",
                "total",
            ],
        ),
        (TRACE_TEXT, &["reason", "4 KiB pages requested"]),
        (
            REPLAY,
            &[
                "initiator cycles/request",
                "receiver cycles/IPI",
                "refill cycles/request",
                "recorded",
                "replayed under linux-6.18",
                "replayed under pti-invpcid",
            ],
        ),
        (SWEEP, &["ceiling", "full requests", "total cycles", "total cycles/request"]),
    ];
    for (f, want) in cases {
        let root = parse(&report(&[f]).render_html()).unwrap();
        let got = headers(&root);
        for w in want {
            assert!(got.iter().any(|h| h == w), "{f}: no header {w:?} in {got:?}");
        }
    }
    // One seed: no ratio column at all.
    let root = parse(&report(&[S2_ONE_SEED]).render_html()).unwrap();
    assert!(!headers(&root).iter().any(|h| h.starts_with("ratio to") || h == "significant"));
}

#[test]
fn numbers_are_those_the_cli_prints() {
    // `tlblab sim study s1 --quick` prints (for this fixture's run):
    //   dTLB walks  pti-deferred  163,538.3 ± 1,716.1  9.497 [8.655, 10.340]  yes
    //   flush sizes under pti-invpcid: 1  98.62%  98.62%  1,040  1,040.0  1,864
    let s1 = rows(&parse(&report(&[S1]).render_html()).unwrap());
    assert!(s1.contains(&vec![
        "".into(),
        "pti-deferred".into(),
        "163,538 ± 1,716".into(),
        "9.497 [8.655, 10.340]".into(),
        "yes".into()
    ]));
    assert!(s1.contains(&vec![
        "CPU-s/s (higher is better)".into(),
        "pti-invpcid".into(),
        "3.629 ± 0.005".into(),
        "baseline".into(),
        "-".into()
    ]));
    assert!(s1.contains(&vec![
        "1".into(),
        "98.62%".into(),
        "98.62%".into(),
        "1,040".into(),
        "1,040.0".into(),
        "1,864".into()
    ]));
    assert!(s1.contains(&vec![
        "full".into(),
        "0.05%".into(),
        "100.00%".into(),
        "790".into(),
        "-".into(),
        "1".into()
    ]));
    // `tlblab bench … -o bench.json` printed: µs/op 9.700 ± 2.409, 95% CI 8.279 … 12.480,
    // change of the mean +180.21% [95% CI +115.90%, +260.54%], Welch p = 4.00e-2,
    // Mann-Whitney p = 1.00e-1: higher (a sweep of --busy); 2.802 ± 0.837 times faster.
    let bench = rows(&parse(&report(&[BENCH]).render_html()).unwrap());
    assert!(bench.contains(&vec![
        "madvise-busy --busy 1".into(),
        "3".into(),
        "9.700 ± 2.409".into(),
        "8.279 … 12.48".into(),
        "8.339".into(),
        "8.279 … 12.48".into(),
        "24.8%".into()
    ]));
    assert!(bench.contains(&vec![
        "--busy 0".into(),
        "--busy 1".into(),
        "+180.21% [+115.90%, +260.54%]".into(),
        "0.0400".into(),
        "0.1000".into(),
        "--busy 0 2.802 ± 0.837 times faster".into(),
        "higher (beyond noise)".into()
    ]));
    assert!(bench.contains(&vec!["tlb_flush.reason4".into(), "0".into(), "0.6627".into()]));
    // `tlblab trace report`: reason 1 on CPU 1: 53,704; the TLB row 53,791.
    let trace = rows(&parse(&report(&[TRACE]).render_html()).unwrap());
    assert!(trace.contains(&vec![
        "1".into(),
        "remote shootdown".into(),
        "0".into(),
        "53,704".into(),
        "53,704".into(),
        "12.5".into()
    ]));
    assert!(trace.contains(&vec![
        "kernel".into(),
        "TLB row".into(),
        "0".into(),
        "53,791".into(),
        "53,791".into(),
        "".into()
    ]));
    // `tlblab sim replay … --ceiling …` printed total cyc/req 2726 at every ceiling.
    let sweep = rows(&parse(&report(&[SWEEP]).render_html()).unwrap());
    let per_req: Vec<&String> =
        sweep.iter().filter(|r| r.len() == 14 && r[0] != "ceiling").map(|r| &r[13]).collect();
    assert_eq!(per_req.len(), 7);
    assert!(per_req.iter().all(|v| *v == "2,726"));
}

#[test]
fn rendering_is_byte_identical_whatever_the_route() {
    let a = report(&EVERY);
    let b = report(&EVERY);
    assert_eq!(a.render_html(), b.render_html());
    assert_eq!(a.render_markdown(), b.render_markdown());
    assert_eq!(a.render_html(), a.render_html());
    // A value already parsed (as the CLI may hand over a study it just ran) gives the same page.
    let mut c = Report::new("tlblab-report test");
    for f in EVERY {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(f)).unwrap()).unwrap();
        c.add_value(f, v).unwrap();
    }
    assert_eq!(a.render_html(), c.render_html());
    let kinds: Vec<InputKind> = c.inputs().iter().map(|i| i.1).collect();
    assert_eq!(
        kinds,
        [
            InputKind::Study,
            InputKind::Study,
            InputKind::StudyAll,
            InputKind::Bench,
            InputKind::Trace,
            InputKind::Trace,
            InputKind::Replay,
            InputKind::Sweep
        ]
    );
}

#[test]
fn markdown_has_the_same_headings_tables_and_one_line_per_plot() {
    let r = report(&EVERY);
    let root = parse(&r.render_html()).unwrap();
    // Wide enough that every table is a pipe table.
    let md = r.render_markdown_width(100_000);
    let kv = |t: &&Node| t.attr("class").is_some_and(|c| c.split(' ').any(|c| c == "kv"));
    let html_tables = root.find("table").iter().filter(|t| !kv(t)).count();
    let md_tables = md.lines().filter(|l| l.starts_with("|---")).count();
    assert_eq!(html_tables, md_tables);
    let plots = md.lines().filter(|l| l.starts_with("_Plot in the HTML report:_ ")).count();
    assert_eq!(plots, root.find("figure").len());
    let md_headings: Vec<String> = md
        .lines()
        .filter_map(|l| l.strip_prefix("## ").or_else(|| l.strip_prefix("### ")))
        .map(|h| h.replace('\\', ""))
        .collect();
    let outline: Vec<String> = r.outline().into_iter().map(|(_, t)| t).collect();
    assert_eq!(md_headings, outline);
    // Plain text for a mail: no HTML at all.
    assert!(!md.contains("<svg") && !md.contains("<table") && !md.contains("<p>"));
}

/// A snapshot of the outline: an accidental change of a section or part shows here.
/// `TLBLAB_UPDATE_SNAPSHOTS=1 cargo test -p tlblab-report` rewrites it.
#[test]
fn outline_snapshot() {
    let r = report(&EVERY);
    let text: String = r
        .outline()
        .iter()
        .map(|(level, t)| format!("{}{t}\n", if *level == 2 { "" } else { "  " }))
        .collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/outline.txt");
    if std::env::var_os("TLBLAB_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path)
        .expect("tests/snapshots/outline.txt (run with TLBLAB_UPDATE_SNAPSHOTS=1)");
    assert_eq!(text, want);
}

#[test]
fn a_pair_that_cannot_be_tested_and_an_interrupted_session_are_said_not_hidden() {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(BENCH)).unwrap()).unwrap();
    v["interrupted"] = Value::Bool(true);
    // One run left in the second configuration: Welch's test needs two.
    v["configs"][1]["runs"].as_array_mut().unwrap().truncate(1);
    let mut r = Report::new("t");
    r.add_value("cut.json", v).unwrap();
    let html = r.render_html();
    parse(&html).unwrap();
    assert!(html.contains("The session was interrupted"));
    assert!(
        html.contains("madvise-busy --busy 0 → madvise-busy --busy 1</strong>: no comparison: ")
    );
}

// ---------------------------------------------------------------------------------------------
// Errors name the file and what is wrong, and never panic.

fn add_err(name: &str, text: &str) -> ReportError {
    Report::new("t").add_json(name, text).expect_err("must be refused")
}

#[test]
fn truncated_json_names_the_file_and_the_position() {
    let e = Report::new("t").add_file(fixture("bad-truncated.json")).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ReportError::Json { .. }), "{e:?}");
    assert!(msg.contains("bad-truncated.json") && msg.contains("not valid JSON at line "), "{msg}");
    // The cut is at the end of the file: the error is on its last line.
    let lines = std::fs::read_to_string(fixture("bad-truncated.json")).unwrap().lines().count();
    assert!(matches!(e, ReportError::Json { line, .. } if line == lines), "{e:?}");
}

#[test]
fn unknown_or_missing_schema_is_refused_with_the_schemas_known() {
    let e = Report::new("t").add_file(fixture("bad-unknown-schema.json")).unwrap_err();
    assert!(
        matches!(&e, ReportError::UnknownSchema { schema, .. } if schema == "tlblab.sim.demo/1")
    );
    let msg = e.to_string();
    assert!(msg.contains("bad-unknown-schema.json") && msg.contains("tlblab.bench/1"), "{msg}");
    let e = add_err("plain.json", "[1, 2, 3]");
    assert!(matches!(e, ReportError::NoSchema { .. }) && e.to_string().contains("plain.json"));
    let e = add_err("num.json", r#"{"schema": 7}"#);
    assert!(matches!(e, ReportError::NoSchema { .. }));
}

#[test]
fn a_field_of_the_wrong_type_is_refused_with_its_path_and_line() {
    let text = std::fs::read_to_string(fixture(S1)).unwrap();
    // The first "mean" of the file becomes a string.
    let bad = text.replacen("\"mean\": 3.6288899827246275", "\"mean\": \"fast\"", 1);
    assert_ne!(bad, text);
    let e = add_err("s1-bad.json", &bad);
    let msg = e.to_string();
    match &e {
        ReportError::Malformed { path, line, schema, .. } => {
            assert_eq!(path, "parts[0].policies[0].measures[0].mean");
            assert_eq!(schema, "tlblab.sim.study/1");
            let want = bad.lines().position(|l| l.contains("\"fast\"")).unwrap() + 1;
            assert_eq!(*line, want);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        msg.contains("s1-bad.json") && msg.contains("expected a number, found the text \"fast\""),
        "{msg}"
    );
    // A missing field, through a parsed value (no line to give).
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(REPLAY)).unwrap()).unwrap();
    v["policies"][1].as_object_mut().unwrap().remove("cost");
    let e = Report::new("t").add_value("replay-bad.json", v).unwrap_err();
    assert!(
        matches!(&e, ReportError::Malformed { path, line: 0, .. } if path == "policies[1]"),
        "{e:?}"
    );
    assert!(e.to_string().contains("the key \"cost\" is missing"), "{e}");
}

#[test]
fn results_that_do_not_agree_are_refused() {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(S1)).unwrap()).unwrap();
    v["parts"][0]["policies"][1]["measures"].as_array_mut().unwrap().pop();
    let e = Report::new("t").add_value("s1-short.json", v).unwrap_err();
    assert!(matches!(e, ReportError::Inconsistent { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("s1-short.json") && msg.contains("parts[0].policies[1] (pti-deferred)"),
        "{msg}"
    );
}

#[test]
fn a_binary_file_is_refused_as_not_text() {
    // A tlblab trace file starts with a binary magic; any non-UTF-8 byte does the same here.
    let dir = std::env::temp_dir().join(format!("tlblab-report-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.flushtrace");
    std::fs::write(&path, b"{\"schema\"\xff\xfe").unwrap();
    let e = Report::new("t").add_file(&path).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(e, ReportError::NotText { offset: 9, .. }), "{e:?}");
    assert!(
        e.to_string().contains("t.flushtrace") && e.to_string().contains("tlblab trace report")
    );
}

#[test]
fn a_missing_file_is_a_read_error_naming_it() {
    let e = Report::new("t").add_file("/nonexistent/results.json").unwrap_err();
    assert!(matches!(e, ReportError::Read { .. }));
    assert!(e.to_string().contains("/nonexistent/results.json"));
}

#[test]
fn garbage_never_panics() {
    // Inputs cut at every position of a small valid file, and odd documents: each is refused
    // or rendered, never a panic.
    let text = std::fs::read_to_string(fixture(REPLAY)).unwrap();
    for cut in (0..text.len()).step_by(97) {
        let mut r = Report::new("t");
        if r.add_json("cut.json", &text[..cut]).is_ok() {
            let _ = r.render_html();
        }
    }
    for doc in [
        r#"{"schema":"tlblab.sim.study/1"}"#,
        r#"{"schema":"tlblab.sim.study-all/1","tlblab_version":"x","studies":[]}"#,
        r#"{"schema":"tlblab.sim.replay-sweep/1","machine":"m","policy":"p","trace":{"records":0,"span_ns":0,"clock":"c","cpus":0,"schedule":"switch","processes":0,"threads":0,"requests":{"total":0,"paired":0,"local_only":0,"send_only":0,"batches":0,"censored":0}},"rows":[]}"#,
    ] {
        let mut r = Report::new("t");
        if r.add_json("odd.json", doc).is_ok() {
            let html = r.render_html();
            parse(&html).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// `tlblab study`'s results.json (schema tlblab.study/1): its parts, what ran, and measured
// beside simulated. The fixture is a quick run's results with the simulated studies left out
// (README.md).

const STUDY_RESULTS: &str = "study-results-quick.min.json";

#[test]
fn study_results_render_their_parts_what_ran_and_measured_beside_simulated() {
    let r = report(&[STUDY_RESULTS]);
    let html = r.render_html();
    let root = parse(&html).unwrap();
    assert_self_contained(&html, &[]);
    let h2: Vec<String> = root.find("h2").iter().map(|h| h.text()).collect();
    assert_eq!(h2[0], "Summary");
    assert_eq!(h2.last().unwrap(), &format!("Appendix: what ran ({STUDY_RESULTS})"));
    assert!(h2.iter().any(|h| h.starts_with("Benchmark: ")), "{h2:?}");
    assert!(h2.iter().any(|h| h.starts_with("Flush trace: ")), "{h2:?}");
    assert!(h2.iter().any(|h| h.starts_with("Replay of a flush trace")), "{h2:?}");
    assert!(h2.iter().any(|h| h == "Simulated and measured on this machine"), "{h2:?}");

    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(STUDY_RESULTS)).unwrap()).unwrap();
    let sections = root.find("section");
    let host = sections
        .iter()
        .find(|s| s.find("h2")[0].text() == "Simulated and measured on this machine")
        .unwrap();
    let rows: Vec<Vec<String>> = host.find("table")[0]
        .find("tr")
        .iter()
        .skip(1)
        .map(|tr| tr.find("td").iter().map(|td| td.text()).collect())
        .collect();
    let configs = results["bench"]["configs"].as_array().unwrap();
    assert_eq!(rows.len(), configs.len(), "a row per measured configuration");
    let sims = results["host_simulations"]["runs"].as_array().unwrap();
    for ((row, c), sim) in rows.iter().zip(configs).zip(sims) {
        assert_eq!(row[0].split(' ').next(), c["config"]["scenario"].as_str());
        match sim["result"]["policies"][0]["mean"].as_f64() {
            // simulated / measured, from the numbers in the file.
            Some(simulated) => {
                let measured: Vec<f64> = c["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["value"].as_f64().unwrap())
                    .collect();
                let mean = measured.iter().sum::<f64>() / measured.len() as f64;
                assert_eq!(row[5], format!("{:.2}", simulated / mean), "{row:?}");
            }
            None => {
                assert!(row[4].contains("no model"), "{row:?}");
                assert_eq!(row[5], "-");
            }
        }
    }
    // One plot of the µs/op configurations, measured and simulated.
    let svgs = host.find("svg");
    assert_eq!(svgs.len(), 1);
    let texts = svg_texts(svgs[0]).join(" ");
    assert!(texts.contains("measured") && texts.contains("simulated on the host preset"));
    assert!(texts.contains("µs/op") && texts.contains("configuration"), "{texts}");
    // What ran: every step with its status.
    let steps = sections.last().unwrap().find("tr").len() - 1;
    assert_eq!(steps, results["steps"].as_array().unwrap().len());
    assert_eq!(r.inputs()[0].1, InputKind::StudyResults);
}

/// S4 (results that keep the distribution): the preemption-off sections as a CDF per policy.
#[test]
fn s4_plots_the_preemption_off_distribution_per_policy() {
    const S4: &str = "study-s4-quick.min.json";
    let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(S4)).unwrap()).unwrap();
    let html = report(&[S4]).render_html();
    let root = parse(&html).unwrap();
    let cdfs: Vec<&Node> = root
        .find("figure")
        .into_iter()
        .filter(|f| f.text().contains("Distribution (CDF) of the preemption-disabled sections"))
        .collect();
    // One per part whose runs had preemption-off sections (the madvise-scale parts are drawn
    // together as one ops/s curve instead).
    let with_sections = v["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["label"].as_str().unwrap().starts_with("madvise-scale"))
        .filter(|p| p["policies"][0]["runs"][0]["preempt_off_cycles"]["count"].as_u64() > Some(0))
        .count();
    assert!(with_sections > 0);
    assert_eq!(cdfs.len(), with_sections);
    for fig in cdfs {
        let svg = fig.find("svg");
        assert_eq!(svg.len(), 1);
        let texts = svg_texts(svg[0]).join(" ");
        assert!(
            texts.contains("preemption-off section, µs") && texts.contains("fraction of sections")
        );
        assert!(
            texts.contains("flush-info-percpu") && texts.contains("flush-info-stack"),
            "{texts}"
        );
    }
    // The Markdown keeps a one-line summary with each policy's p99.
    let md = report(&[S4]).render_markdown();
    assert!(md.contains("preemption-off CDF: flush-info-percpu: p99"), "{md}");
}

/// S5's core sweep is drawn as the slowdown of each policy against the number of CPUs, and its
/// table's slowdown is 1 / the ratio in the results, with the interval's bounds inverted.
#[test]
fn s5_core_sweep_plots_the_slowdown_against_cpus() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(ALL)).unwrap()).unwrap();
    let s5 = v["studies"].as_array().unwrap().iter().find(|s| s["short"] == "s5").unwrap();
    let points: Vec<&Value> =
        s5["parts"].as_array().unwrap().iter().filter(|p| p["sweep"]["axis"] == "cpus").collect();
    assert!(points.len() >= 3);
    let root = parse(&report(&[ALL]).render_html()).unwrap();
    let slowdown: Vec<&Node> = root
        .find("figure")
        .into_iter()
        .filter(|f| {
            f.text().contains("How many times as long the same work takes as under no-xpfo")
        })
        .collect();
    assert_eq!(slowdown.len(), 1);
    let svg = slowdown[0].find("svg")[0];
    assert_eq!(axis_titles(svg), ("slowdown against no-xpfo, ×".into(), "CPUs".into()));
    let texts = svg_texts(svg).join(" ");
    assert!(texts.contains("xpfo-sync") && texts.contains("xpfo-deferred"), "{texts}");
    // Every point's xpfo-sync row: 1 / ratio [1 / high, 1 / low].
    let table = rows(&root);
    for p in points {
        let m = &p["policies"][1]["measures"][0];
        let r = &m["ratio"];
        let (mean, low, high) = (
            r["ratios"]["mean"].as_f64().unwrap(),
            r["ci"]["low"].as_f64().unwrap(),
            r["ci"]["high"].as_f64().unwrap(),
        );
        let want = format!("{:.3} [{:.3}, {:.3}]", 1.0 / mean, 1.0 / high, 1.0 / low);
        assert!(
            table.iter().any(|row| row.get(1).map(String::as_str) == Some("xpfo-sync")
                && row.get(3) == Some(&want)),
            "{} CPUs: no row with {want}",
            p["cpus"]
        );
    }
}

/// S3's parts show a `perf stat -r K` table: each counter's mean and relative standard error
/// (sd / √runs / mean), and `<not modelled>` for what the model does not count.
#[test]
fn s3_has_a_perf_stat_table() {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(ALL)).unwrap()).unwrap();
    let s3 = v["studies"].as_array().unwrap().iter().find(|s| s["short"] == "s3").unwrap();
    let part = &s3["parts"][0];
    let key =
        |k: &str| part["measures"].as_array().unwrap().iter().position(|m| m["key"] == k).unwrap();
    let faults = &part["policies"][0]["measures"][key("page_faults")];
    let values: Vec<f64> =
        faults["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let sd = (values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let rse = sd / n.sqrt() / mean * 100.0;
    let root = parse(&report(&[ALL]).render_html()).unwrap();
    let table = rows(&root);
    let row = table.iter().find(|r| r[0] == "page-faults").expect("a page-faults row");
    assert!(row[1].ends_with(&format!("( ± {rse:.2}% )")), "{row:?} against {rse:.2}%");
    let instructions = table.iter().find(|r| r[0] == "instructions").unwrap();
    assert!(instructions[1..].iter().all(|c| c == "<not modelled>"), "{instructions:?}");
    assert!(headers(&root).iter().any(|h| h.starts_with("la57-runtime (")));
}

/// A safety check: its verdict per policy and scenario, the scenario's settings once, and the
/// witness with the command that replays it, in a well-formed page.
#[test]
fn a_safety_check_shows_its_verdict_and_witness() {
    const CHECK: &str = "check-bad-lazy.json";
    let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(CHECK)).unwrap()).unwrap();
    let r = report(&[CHECK]);
    assert_eq!(r.inputs()[0].1, InputKind::Check);
    let root = parse(&r.render_html()).unwrap();
    let table = rows(&root);
    let verdict = format!(
        "VIOLATIONS: {} in {} of {}",
        v["violations"], v["schedules_with_violations"], v["schedules"]
    );
    assert!(
        table.contains(&vec!["bad-lazy-no-catch-up".to_string(), verdict.clone()]),
        "{table:?}"
    );
    let replay = v["witnesses"][0]["replay"].as_str().unwrap();
    assert!(root.text().contains(replay));
    let md = r.render_markdown_width(1000);
    assert!(md.contains(&verdict) && md.contains(replay));
}

/// A declared deferral's exposure: the latr check's row gives the deferred operations, the
/// CPUs left stale per operation and the per-CPU window quantiles (from the fixture's
/// p50 4.02375, p90 19.5777, p99 276.125, max 353.262 µs, to four significant digits); the
/// verdict matrix gives its speed beside the verdict (mean 22.8073 µs/op of 3 runs).
#[test]
fn a_deferred_policy_shows_its_exposure_next_to_its_verdict_and_speed() {
    const CHECK: &str = "check-latr.json";
    let v: Value = serde_json::from_str(&std::fs::read_to_string(fixture(CHECK)).unwrap()).unwrap();
    let root = parse(&report(&[CHECK]).render_html()).unwrap();
    let table = rows(&root);
    let row = table.iter().find(|r| r[0] == "latr" && r.len() > 3).expect("an exposure row");
    let e = &v["exposure"]["user"];
    assert_eq!(row[1..4], ["shared-writers", "user", "364"]);
    let spread: Vec<String> = e["cpus_exposed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| format!("{}: {}", b["cpus"], b["operations"]))
        .collect();
    assert_eq!(row[4], spread.join(", "));
    let per_cpu = &e["per_cpu"];
    let windows = format!("({}; {})", per_cpu["closed"], per_cpu["censored"]);
    assert_eq!(row[5], format!("4.024 / 19.58 / 276.1 / 353.3 {windows}"));
    assert!(table.contains(&vec!["latr".to_string(), "no violation · 22.81".to_string()]));
    assert!(headers(&root).contains(&"shared-writers · µs/op".to_string()));
}
