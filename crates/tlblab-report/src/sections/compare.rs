//! Two benchmark sessions compared configuration by configuration: a saved
//! `tlblab compare --format json` (`tlblab.bench.compare/1`), or two `tlblab.bench/1` sessions
//! given to the same report, which tlblab-bench's `compare_results` compares as `tlblab compare`
//! does. Both are drawn by [`comparison`], so a saved comparison and the sessions behind it give
//! the same tables.

use tlblab_bench::{ConfigComparison, ResultsComparison};
use tlblab_stats::{Summary, Verdict};

use super::bench::{is_per_cpu, test_cells, tests_note, tests_table};
use super::{figure, Ctx};
use crate::doc::{b, c, cell, t, Block, Cell, Document, Span, Table, Tone};
use crate::fmt;
use crate::plot::{Bar, BarChart, BarSeries};

/// Where a comparison came from.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A saved comparison, by the input's name.
    File(&'a str),
    /// Computed by the report from two of its sessions.
    Sessions,
}

/// Adds the comparison's section: "Comparison: B against A".
pub fn comparison(doc: &mut Document, ctx: &Ctx, origin: Origin, cmp: &ResultsComparison) {
    let (a, b_label) = (cmp.a_label.as_str(), cmp.b_label.as_str());
    let noise = cmp.noise_threshold;
    doc.heading(2, format!("Comparison: {b_label} against {a}"));
    doc.para(vec![
        b("How to read: "),
        t(format!(
            "A is the baseline, B the candidate; each configuration measured in both is compared. A figure is the mean ± sample standard deviation over a side's runs. The change is mean(B) / mean(A) − 1 with its 95% percentile-bootstrap interval; Welch's t-test and the Mann–Whitney U test are two-sided; the speedup is hyperfine's ratio of the means (how many times faster, or better, the better side is) with ± propagated from the two standard deviations. A change is significant only when Welch's p < 0.05 and the whole interval lies outside the noise band ±{:.1}% (criterion's rule). Lower is better for a time per operation, so there a negative change is an improvement; higher is better for a rate.",
            noise * 100.0
        )),
    ]);
    let input = match origin {
        Origin::File(name) => vec![c(name), t(" (a saved tlblab compare)")],
        Origin::Sessions => vec![t(
            "computed by this report from the two sessions, as tlblab compare does with its defaults",
        )],
    };
    doc.push(Block::KeyValues(vec![
        ("Input".into(), input),
        ("A (baseline)".into(), vec![c(a)]),
        ("B (candidate)".into(), vec![c(b_label)]),
        (
            "Noise band".into(),
            vec![t(format!("±{:.1}%: a change inside it is never significant", noise * 100.0))],
        ),
        ("Verdicts".into(), vec![t(tally(&cmp.rows))]),
    ]));
    if cmp.rows.is_empty() {
        doc.para(vec![t("No configuration has runs in both sessions: nothing to compare.")]);
    } else {
        changes(doc, ctx, cmp);
        counters(doc, cmp);
    }
    differences(doc, cmp);
}

/// "2 configurations: 1 improved, 1 not significant".
fn tally(rows: &[ConfigComparison]) -> String {
    let count = |v: Verdict| rows.iter().filter(|r| r.comparison.verdict == v).count();
    let parts: Vec<String> = [
        Verdict::Improved,
        Verdict::Regressed,
        Verdict::WithinNoise,
        Verdict::NoSignificantChange,
        Verdict::NoInterval,
    ]
    .into_iter()
    .map(|v| (count(v), v))
    .filter(|(n, _)| *n > 0)
    .map(|(n, v)| format!("{n} {v}"))
    .collect();
    let n = rows.len();
    let configs = if n == 1 { "configuration" } else { "configurations" };
    if parts.is_empty() {
        format!("{n} {configs}")
    } else {
        format!("{n} {configs}: {}", parts.join(", "))
    }
}

/// The scenario every row shares (the first word of its key), if they all share one.
fn common_scenario(rows: &[ConfigComparison]) -> Option<&str> {
    let first = rows.first()?.b.split(' ').next()?;
    rows.iter().all(|r| r.b.split(' ').next() == Some(first)).then_some(first)
}

/// A configuration's name, without the scenario when every row shares it (`--busy 1`).
fn short(row: &ConfigComparison, scenario: Option<&str>) -> String {
    let key = if row.a == row.b { row.b.clone() } else { format!("{} → {}", row.a, row.b) };
    match scenario.and_then(|s| key.strip_prefix(s)).map(str::trim) {
        Some("") => "(defaults)".into(),
        Some(rest) => rest.to_string(),
        None => key,
    }
}

/// `10.08 ± 0.15 (6)`, with the unit after the figures unless the column names it.
fn side(s: &Summary, unit: Option<&str>) -> String {
    let unit = unit.map_or(String::new(), |u| format!(" {u}"));
    format!("{}{unit} ({})", fmt::mean_sd(s.mean, s.stddev), s.n)
}

/// The first column's title: the scenario when every row shares it (the rows then name only
/// their parameters).
fn config_head(scenario: Option<&str>) -> String {
    scenario.map_or("configuration".into(), |s| format!("configuration of {s}"))
}

/// The table of changes, their plot, and each configuration's statistics in full.
fn changes(doc: &mut Document, ctx: &Ctx, cmp: &ResultsComparison) {
    let scenario = common_scenario(&cmp.rows);
    doc.heading(3, "Change per configuration");
    // The unit goes in the header when every configuration has the same.
    let unit = cmp.rows[0].unit.as_str();
    let one_unit = cmp.rows.iter().all(|r| r.unit == unit);
    let first = match (config_head(scenario), one_unit) {
        (head, true) => format!("{head} (values in {unit})"),
        (head, false) => head,
    };
    // A and B are text columns: they may wrap (numeric ones do not), so that the verdict
    // stays on the page.
    let mut table = tests_table(&[&first, "A: mean ± sd (runs)", "B: mean ± sd (runs)"]);
    let mut bars = Vec::new();
    let mut summary = Vec::new();
    for row in &cmp.rows {
        let c = &row.comparison;
        let mut cells: Vec<Cell> = vec![
            short(row, scenario).into(),
            side(&c.summary_a, (!one_unit).then_some(row.unit.as_str())).into(),
            side(&c.summary_b, (!one_unit).then_some(row.unit.as_str())).into(),
        ];
        cells.extend(test_cells(row, "A", "B"));
        table.row(cells);
        let pct = |f: f64| f * 100.0;
        bars.push(Some(
            Bar::new(pct(c.change.estimate)).interval(pct(c.change.ci.low), pct(c.change.ci.high)),
        ));
        summary.push(format!(
            "{} {} [{}, {}] {}",
            short(row, scenario),
            fmt::signed_pct(c.change.estimate),
            fmt::signed_pct(c.change.ci.low),
            fmt::signed_pct(c.change.ci.high),
            c.verdict
        ));
    }
    doc.table(table.note(format!(
        "A: {}; B: {}; mean ± sample standard deviation over a side's runs, their number in parentheses; {}",
        cmp.a_label,
        cmp.b_label,
        tests_note("B", "A", cmp.noise_threshold)
    )));
    let categories = cmp.rows.iter().map(|r| short(r, scenario)).collect();
    let chart = BarChart::new("configuration", "change of the mean, % (B against A)", categories)
        .series(BarSeries::new("B against A", bars))
        .reference(0.0);
    doc.push(figure(
        ctx,
        || chart.svg(),
        format!(
            "Change of the mean per configuration{}, B ({}) against A ({}): bar = mean(B) / mean(A) − 1 in %, whisker = its 95% percentile-bootstrap interval, dashed line = no change. {} A change is significant only when its whole whisker lies outside ±{:.1}% and Welch's p < 0.05.",
            scenario.map_or(String::new(), |s| format!(" of {s}")),
            cmp.b_label,
            cmp.a_label,
            directions(&cmp.rows),
            cmp.noise_threshold * 100.0
        ),
        format!("change of the mean, B against A: {}", summary.join("; ")),
    ));
    doc.push(Block::Details {
        summary: format!(
            "Each configuration in full: runs, mean, sd, CoeffVar, median, range of A and B ({})",
            cmp.rows.len()
        ),
        blocks: cmp.rows.iter().map(full_table).collect(),
    });
}

/// Which way is better, per unit: "µs/op: lower is better (below the line B is faster)."
fn directions(rows: &[ConfigComparison]) -> String {
    let mut seen: Vec<(&str, bool)> = Vec::new();
    for r in rows {
        if !seen.contains(&(r.unit.as_str(), r.lower_is_better)) {
            seen.push((r.unit.as_str(), r.lower_is_better));
        }
    }
    let parts: Vec<String> = seen
        .iter()
        .map(|(unit, lower)| {
            if *lower {
                format!("{unit}: lower is better (below the line B is faster)")
            } else {
                format!("{unit}: higher is better (above the line B is better)")
            }
        })
        .collect();
    format!("{}.", parts.join("; "))
}

/// One configuration's statistics, A beside B, with B's relative difference from A.
fn full_table(row: &ConfigComparison) -> Block {
    let (a, b_) = (&row.comparison.summary_a, &row.comparison.summary_b);
    let better = if row.lower_is_better { "lower is better" } else { "higher is better" };
    let title = format!("{} ({}, {better})", row.b, row.unit);
    let mut table = Table::new(&[title.as_str(), "A", "B", "B / A − 1"]).numeric_from(1);
    let significant = row.comparison.verdict.is_change();
    let mut stats = vec![("mean", a.mean, b_.mean)];
    if let Some((ha, hb)) = row.hmean {
        stats.push(("harmonic mean", ha, hb));
    }
    stats.extend([
        ("sd", a.stddev, b_.stddev),
        ("median", a.median, b_.median),
        ("min", a.min, b_.min),
        ("max", a.max, b_.max),
    ]);
    for (name, x, y) in stats {
        let tone = if name == "mean" && significant { Tone::Significant } else { Tone::Plain };
        table.row(vec![name.into(), fmt::num(x).into(), fmt::num(y).into(), relative(x, y, tone)]);
    }
    let cv = |s: &Summary| {
        s.cv.map_or_else(|| cell("-", Tone::Missing), |v| format!("{:.1}%", v * 100.0).into())
    };
    table.row(vec!["CoeffVar (sd / mean)".into(), cv(a), cv(b_)]);
    table.row(vec!["runs".into(), a.n.to_string().into(), b_.n.to_string().into()]);
    Block::Table(table.note(
        "B / A − 1: B's statistic relative to A's, in bold for the mean when the verdict is significant (the tests are of the means).",
    ))
}

/// `y / x − 1` as a signed percentage, `-` when `x` is 0.
fn relative(x: f64, y: f64, tone: Tone) -> Cell {
    if x == 0.0 {
        cell("-", Tone::Missing)
    } else {
        cell(fmt::signed_pct(y / x - 1.0), tone)
    }
}

/// Counters per operation of A and B, for the configurations that counted them in both.
fn counters(doc: &mut Document, cmp: &ResultsComparison) {
    let scenario = common_scenario(&cmp.rows);
    let head = config_head(scenario);
    let build = |per_cpu: bool| {
        let mut table =
            Table::new(&[head.as_str(), "counter", "A per op", "B per op", "B / A − 1"])
                .numeric_from(2);
        for row in &cmp.rows {
            for (name, pa, pb) in &row.counters_per_op {
                if is_per_cpu(name) != per_cpu || (*pa == 0.0 && *pb == 0.0) {
                    continue;
                }
                let change = relative(*pa, *pb, Tone::Plain);
                table.row(vec![
                    short(row, scenario).into(),
                    name.as_str().into(),
                    fmt::num(*pa).into(),
                    fmt::num(*pb).into(),
                    change,
                ]);
            }
        }
        table
    };
    let all = build(false);
    let cpu = build(true);
    if all.rows.is_empty() && cpu.rows.is_empty() {
        return;
    }
    doc.heading(3, "Counters per operation");
    if !all.rows.is_empty() {
        doc.table(all.note(
            "each counter's delta over a measured run divided by the run's operations, mean over the runs of each side; only counters both sessions recorded, and not zero in both (irq.*: /proc/interrupts rows; tlb_flush.reasonR: tlb:tlb_flush events of reason R; rusage.*: the benchmark's tasks).",
        ));
    }
    if !cpu.rows.is_empty() {
        doc.push(Block::Details {
            summary: format!("Counters per op, by CPU ({} non-zero)", cpu.rows.len()),
            blocks: vec![Block::Table(cpu)],
        });
    }
}

/// Where the two sessions' machines, kernels or measurement settings differ.
fn differences(doc: &mut Document, cmp: &ResultsComparison) {
    doc.heading(3, "Environment and method differences");
    if cmp.environment_differences.is_empty() {
        doc.para(vec![t(
            "None: the saved environments (kernel, CPU, flags, mitigations, settings) and the measurement settings (run length, warm-up, CPUs, tracing) are the same.",
        )]);
        return;
    }
    let n = cmp.environment_differences.len();
    doc.para(vec![t(format!(
        "{n} {}, A's value → B's value (a different kernel is usually the point; anything else may explain a change too):",
        if n == 1 { "difference" } else { "differences" }
    ))]);
    let items: Vec<Vec<Span>> = cmp
        .environment_differences
        .iter()
        .map(|d| vec![c(&d.field), t(format!(": {} → {}", d.a, d.b))])
        .collect();
    doc.push(Block::List(items));
}
