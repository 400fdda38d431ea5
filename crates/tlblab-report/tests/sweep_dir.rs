//! A sweep's directory (`tlblab sweep SPEC -o DIR`, tests/fixtures/sweep-ceiling-small): the
//! same page whichever way it is given, well-formed and self-contained, a heatmap per measure
//! with every point's value in its cell, the grid's fixed axes, and tables only in text.

mod common;

use common::{assert_self_contained, fixture, parse, rows, Node};
use tlblab_report::{InputKind, Report, ReportError};

const DIR: &str = "sweep-ceiling-small";

fn report_of(add: impl FnOnce(&mut Report) -> Result<InputKind, ReportError>) -> Report {
    let mut r = Report::new("sweep");
    assert_eq!(add(&mut r).unwrap(), InputKind::SweepDir);
    r
}

#[test]
fn the_directory_or_its_summary_give_the_same_page() {
    let dir = fixture(DIR);
    let a = report_of(|r| r.add_sweep_dir(&dir)).render_html();
    let b = report_of(|r| r.add_file(&dir)).render_html();
    let c = report_of(|r| r.add_file(dir.join("summary.json"))).render_html();
    assert_eq!(a, b);
    assert_eq!(a, c);
    // Rendering twice gives the same bytes.
    assert_eq!(a, report_of(|r| r.add_sweep_dir(&dir)).render_html());
    parse(&a).unwrap_or_else(|e| panic!("not well-formed: {e}"));
    assert_self_contained(&a, &[]);
}

fn texts(node: &Node) -> Vec<String> {
    node.find("text").iter().map(|t| t.text().trim().to_string()).collect()
}

#[test]
fn each_measure_has_its_table_and_a_heatmap_of_ratios() {
    let html = report_of(|r| r.add_sweep_dir(fixture(DIR))).render_html();
    let root = parse(&html).unwrap();
    // The spec's description and the machine the sweep ran on head the page.
    assert!(
        html.contains("storm --op munmap on 8 CPUs: ceilings 1, 33, 512 against 4 and 64 pages")
    );
    assert!(html.contains("KVM"), "the environment's hypervisor in the header");
    assert!(html.contains("machine skylake-server · cpus 8 · scenario storm · policy linux-6.18"));
    let svgs = root.find("svg");
    assert_eq!(svgs.len(), 3);
    for svg in &svgs {
        let t = texts(svg);
        // Three ceilings across, two sizes down (64 above 4), the baseline column marked.
        for label in ["1", "33", "512", "4", "64"] {
            assert!(t.iter().any(|x| x == label), "{label}: {t:?}");
        }
        assert_eq!(t.iter().filter(|x| *x == "base").count(), 2, "{t:?}");
        // Every other cell holds a ratio with three decimals.
        let ratios = t.iter().filter(|x| x.len() == 5 && x.parse::<f64>().is_ok()).count();
        assert!(ratios >= 4, "{t:?}");
        assert!(t.iter().any(|x| x.ends_with("ratio to ceiling = 33, 2 seeds")), "{t:?}");
        assert!(t.iter().any(|x| x == "tlb_single_page_flush_ceiling, pages"));
        assert!(t.iter().any(|x| x == "pages per task's region"));
        assert!(!t.iter().any(|x| x.contains("NaN") || x.contains("inf")));
        let svg_rows: Vec<i64> = t.iter().filter_map(|x| x.parse().ok()).collect();
        let (at64, at4) = (
            svg_rows.iter().position(|&v| v == 64).unwrap(),
            svg_rows.iter().position(|&v| v == 4).unwrap(),
        );
        assert!(at64 < at4, "rows: larger sizes above");
    }
    // The tables: one per measure, six points each, the baseline's rows marked.
    let tables = rows(&root);
    let points: Vec<&Vec<String>> =
        tables.iter().filter(|r| r.len() == 5 && r[0] != "ceiling").collect();
    assert_eq!(tables.iter().filter(|r| r[0] == "ceiling" && r[3] == "ratio [95% CI]").count(), 3);
    assert_eq!(points.len(), 3 * 6, "{points:?}");
    assert_eq!(points.iter().filter(|r| r[3] == "baseline").count(), 3 * 2);
    assert!(points.iter().any(|r| r[4] == "regressed" || r[4] == "improved"), "{points:?}");
}

#[test]
fn text_has_the_tables_alone_within_the_width() {
    let r = report_of(|r| r.add_sweep_dir(fixture(DIR)));
    for width in [60, 80, 100] {
        let text = r.render_text(width);
        assert!(text.lines().all(|l| l.chars().count() <= width), "{width}:\n{text}");
        assert!(!text.contains("[plot]") && text.contains("ratio"), "{text}");
        let md = r.render_markdown_width(width);
        assert!(md.lines().all(|l| l.chars().count() <= width));
        assert!(!md.contains("_Plot in the HTML report:_"));
    }
}

#[test]
fn an_unfinished_or_foreign_directory_is_refused_naming_it() {
    let tmp = std::env::temp_dir().join(format!("tlblab-report-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let err = Report::new("t").add_sweep_dir(&tmp).unwrap_err().to_string();
    assert!(err.starts_with(&tmp.display().to_string()) && err.contains("summary.json"), "{err}");
    std::fs::write(tmp.join("journal.jsonl"), "").unwrap();
    let err = Report::new("t").add_sweep_dir(&tmp).unwrap_err().to_string();
    assert!(err.contains("has not finished"), "{err}");
    // A summary.json of another schema.
    std::fs::write(tmp.join("summary.json"), r#"{"schema": "tlblab.sim.demo/1"}"#).unwrap();
    let err = Report::new("t").add_sweep_dir(&tmp).unwrap_err().to_string();
    assert!(err.contains("tlblab.sim.demo/1"), "{err}");
    // A results.jsonl line that is not JSON names the file and line.
    std::fs::copy(fixture(DIR).join("summary.json"), tmp.join("summary.json")).unwrap();
    std::fs::write(tmp.join("results.jsonl"), "{}\n{not json\n").unwrap();
    let err = Report::new("t").add_sweep_dir(&tmp).unwrap_err().to_string();
    assert!(err.contains("results.jsonl") && err.contains("line 2"), "{err}");
    std::fs::remove_dir_all(&tmp).unwrap();
}
