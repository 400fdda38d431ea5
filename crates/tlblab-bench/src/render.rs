//! Text forms of results and comparisons: mmtests-style tables, Markdown, CSV and JSON.
//!
//! In comparison tables every percentage is signed so that **positive means better**: for a
//! lower-is-better unit `(A − B) / A`, for a higher-is-better one `(B − A) / A`; for `Stddev`
//! and `CoeffVar`, where less spread is better, always `(A − B) / A`. A `*` around the mean
//! row's percentage marks a change by the verdict's rule ([`tlblab_stats::judge`]: Welch p below
//! the level and the whole 95% interval of the change outside the noise band), as mmtests marks
//! its rows.

use std::fmt::Write;

use tlblab_stats::{bootstrap_ci, mean, outliers, Group, Summary, MIN_OUTLIER_DEVIATION};

use crate::compare::{ConfigComparison, ResultsComparison};
use crate::results::BenchResults;

/// Output formats of `tlblab compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text.
    Table,
    /// A Markdown table (for mailing lists and reviews).
    Markdown,
    /// One row per statistic.
    Csv,
    /// The whole comparison as JSON.
    Json,
}

/// The modified z-score beyond which a run is flagged (Iglewicz and Hoaglin's 3.5).
const OUTLIER_Z: f64 = 3.5;

fn number(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

/// Bootstrap resamples behind a session table's confidence intervals.
const CI_RESAMPLES: usize = 10_000;

/// What a session measured with: the method, the counter sources and the harness overhead.
pub fn session_header(results: &BenchResults) -> String {
    let m = &results.method;
    let mut out = format!(
        "method: {} measured runs per configuration, {}, {} ms each after {} ms of warm-up; \
         seed {}; CPUs {}; tlb_flush tracepoint {}\n",
        m.runs,
        if m.interleaved {
            "interleaved in seeded random rounds"
        } else {
            "one configuration after another"
        },
        m.run_ms,
        m.warmup_ms,
        m.seed,
        m.cpus.as_deref().unwrap_or("default placement"),
        if m.flush_trace { "on during runs" } else { "off" },
    );
    let _ = writeln!(out, "counter sources: {}", results.sources);
    let _ = writeln!(out, "system: {}", results.environment.system_load.summary());
    if !results.flush_reasons.is_empty() {
        let legend: Vec<String> =
            results.flush_reasons.iter().map(|(r, name)| format!("{r} {name}")).collect();
        let _ = writeln!(out, "tlb_flush reasons (this kernel's): {}", legend.join(", "));
    }
    if let Some(o) = &results.harness_overhead {
        let _ = writeln!(
            out,
            "harness overhead ({}): median {:+.2}% of the op over {} paired slices \
             (quartiles {:+.2}% … {:+.2}%; bare {:.1} ns/op, through the harness {:.1} ns/op); \
             the harness's own work {:.2} ns/op = {:.3}% of the op",
            o.config,
            o.percent,
            o.repeats,
            o.percent_p25,
            o.percent_p75,
            o.bare_ns_per_op,
            o.harness_ns_per_op,
            o.machinery_ns_per_op,
            o.machinery_percent
        );
    }
    out
}

/// A session's configurations: mean ± sd over N runs with the bootstrap 95% CI of the mean,
/// median, range, CV, outliers, and the counters per operation.
pub fn session_table(results: &BenchResults) -> String {
    let mut out = String::new();
    for c in &results.configs {
        let _ = writeln!(out, "{}", c.config.key());
        if let Some(reason) = &c.skipped {
            let _ = writeln!(out, "  not run: {reason}");
        }
        let values = c.values();
        let Ok(s) = Summary::of(&values) else {
            let _ = writeln!(out, "  no runs");
            continue;
        };
        let better = if c.config.lower_is_better { "lower is better" } else { "higher is better" };
        let _ = writeln!(
            out,
            "  {} {} ± {} (mean ± sd of {} runs; {better})",
            c.config.unit,
            number(s.mean),
            number(s.stddev),
            s.n
        );
        let ci = |v: &[f64]| mean(v).unwrap_or(f64::NAN);
        if let Ok(ci) = bootstrap_ci(&values, ci, CI_RESAMPLES, 0.95, results.method.seed) {
            let _ = writeln!(
                out,
                "  95% CI of the mean {} … {} (bootstrap, {CI_RESAMPLES} resamples)",
                number(ci.low),
                number(ci.high)
            );
        }
        let cv = s.cv.map_or("-".to_string(), |cv| format!("{:.1}%", cv * 100.0));
        let _ = writeln!(
            out,
            "  median {}, range {} … {}, CoeffVar {cv}",
            number(s.median),
            number(s.min),
            number(s.max)
        );
        for i in outliers(&values, OUTLIER_Z).unwrap_or_default() {
            let _ = writeln!(
                out,
                "  warning: run {} ({}) is an outlier (modified z-score above {OUTLIER_Z}, \
                 more than {:.0}% from the median)",
                i + 1,
                number(values[i]),
                MIN_OUTLIER_DEVIATION * 100.0
            );
        }
        let per_op = |per_cpu: bool| -> Vec<String> {
            c.counter_names()
                .into_iter()
                .filter(|n| is_per_cpu(n) == per_cpu)
                .filter_map(|n| Some((n, c.counter_per_op(n)?)))
                .filter(|&(_, v)| !per_cpu || v != 0.0)
                .map(|(n, v)| format!("{n} {}", number(v)))
                .collect()
        };
        for (label, list) in [("per op", per_op(false)), ("per op, by CPU", per_op(true))] {
            if !list.is_empty() {
                let _ = writeln!(out, "  {label} (mean of runs): {}", list.join(" · "));
            }
        }
        let warned: Vec<&crate::RunRecord> =
            c.runs.iter().filter(|r| !r.warnings.is_empty()).collect();
        if let Some(first) = warned.first() {
            let _ = writeln!(
                out,
                "  warning: {} of {} runs have warnings, e.g. {}",
                warned.len(),
                c.runs.len(),
                first.warnings[0]
            );
        }
    }
    if results.interrupted {
        out.push_str("interrupted: the results hold the runs finished before the stop\n");
    }
    out
}

/// Whether a counter is one CPU's share (`irq.tlb.cpu1`), shown only where there is room.
fn is_per_cpu(name: &str) -> bool {
    name.rsplit_once(".cpu")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The signed percentage of a statistic, positive = better.
fn better_percent(a: f64, b: f64, lower_is_better: bool) -> f64 {
    if a == 0.0 {
        return 0.0;
    }
    if lower_is_better {
        (a - b) / a * 100.0
    } else {
        (b - a) / a * 100.0
    }
}

/// The rows of one comparison: (statistic, A, B, % for B, significant).
fn rows(c: &ConfigComparison) -> Vec<(&'static str, f64, f64, f64, bool)> {
    let (a, b, lib) = (&c.comparison.summary_a, &c.comparison.summary_b, c.lower_is_better);
    let significant = c.comparison.verdict.is_change();
    let cv = |s: &Summary| s.cv.unwrap_or(0.0) * 100.0;
    let mut rows = vec![("Min", a.min, b.min, better_percent(a.min, b.min, lib), false)];
    match c.hmean {
        Some((ha, hb)) => rows.push(("Hmean", ha, hb, better_percent(ha, hb, lib), significant)),
        None => {
            rows.push(("Amean", a.mean, b.mean, better_percent(a.mean, b.mean, lib), significant))
        }
    }
    rows.push(("Stddev", a.stddev, b.stddev, better_percent(a.stddev, b.stddev, true), false));
    rows.push(("CoeffVar", cv(a), cv(b), better_percent(cv(a), cv(b), true), false));
    rows.push(("Max", a.max, b.max, better_percent(a.max, b.max, lib), false));
    rows
}

/// "B is 1.116 ± 0.029 times faster than A", hyperfine's line, with the test behind it and the
/// verdict against the noise band `noise`.
pub fn verdict_line(c: &ConfigComparison, a: &str, b: &str, noise: f64) -> String {
    let cmp = &c.comparison;
    let speed = match cmp.speedup {
        Some(s) => {
            let (fast, slow) = if s.faster == Group::B { (b, a) } else { (a, b) };
            let word = if c.lower_is_better { "faster" } else { "better" };
            format!("{fast} is {:.3} ± {:.3} times {word} than {slow}", s.ratio, s.stddev)
        }
        None => "no speedup ratio (a mean is not positive)".to_string(),
    };
    format!(
        "{speed}; change of the mean {:+.2}% [95% CI {:+.2}%, {:+.2}%], Welch p = {:.2e}, Mann-Whitney p = {:.2e}: {}",
        cmp.change.estimate * 100.0,
        cmp.change.ci.low * 100.0,
        cmp.change.ci.high * 100.0,
        cmp.welch.p_two_sided,
        cmp.mann_whitney.p_two_sided,
        verdict_text(c, noise)
    )
}

/// The verdict's words. Within a session, a configuration is compared with another parameter
/// value of its scenario (a sweep, e.g. `--busy 1` against `--busy 0`): that is higher or lower,
/// not improved or regressed, so the direction-free words are used.
pub fn verdict_text(c: &ConfigComparison, noise: f64) -> String {
    if c.a == c.b {
        c.comparison.verdict.text(noise)
    } else {
        c.comparison.verdict.effect(c.lower_is_better).text(noise)
    }
}

/// The comparison's cautions, one `warning:` line each (hyperfine-style), indented by `indent`.
pub fn caution_lines(c: &ConfigComparison, indent: &str) -> String {
    c.comparison.cautions.iter().map(|w| format!("{indent}warning: {w}\n")).collect()
}

/// mmtests-style tables, one per configuration, for baseline `a` and candidate `b`.
pub fn comparison_table(rows_of: &[ConfigComparison], a: &str, b: &str, noise: f64) -> String {
    let mut out = String::new();
    for c in rows_of {
        let title = if c.a == c.b { c.a.clone() } else { format!("{} → {}", c.a, c.b) };
        let better = if c.lower_is_better { "lower is better" } else { "higher is better" };
        let (na, nb) = (c.comparison.summary_a.n, c.comparison.summary_b.n);
        let _ = writeln!(out, "{title}  ({}, {better}; {na} vs {nb} runs)", c.unit);
        let _ = writeln!(out, "  {:<9} {:>22} {:>22}", "", a, b);
        for (name, va, vb, pct, star) in rows(c) {
            let b_cell = if star {
                format!("{} *{:>7.2}%*", number(vb), pct)
            } else {
                format!("{} ({:>7.2}%)", number(vb), pct)
            };
            let a_cell = format!("{} ({:>7.2}%)", number(va), 0.0);
            let _ = writeln!(out, "  {name:<9} {a_cell:>22} {b_cell:>22}");
        }
        for (name, pa, pb) in c.counters_per_op.iter().filter(|(n, _, _)| !is_per_cpu(n)) {
            let _ = writeln!(
                out,
                "  {:<9} {:>22} {:>22}   {name} per op",
                "",
                number(*pa),
                number(*pb)
            );
        }
        let _ = writeln!(out, "  {}", verdict_line(c, a, b, noise));
        out += &caution_lines(c, "  ");
    }
    out
}

/// A whole comparison in `format`.
pub fn comparison(cmp: &ResultsComparison, format: Format) -> String {
    let (a, b) = (cmp.a_label.as_str(), cmp.b_label.as_str());
    match format {
        Format::Json => serde_json::to_string_pretty(cmp).expect("serializes") + "\n",
        Format::Table => {
            let mut out = comparison_table(&cmp.rows, a, b, cmp.noise_threshold);
            let _ = writeln!(
                out,
                "positive % = better; * = a change (Welch p < 0.05 and the 95% CI of the change wholly outside the {} noise band)",
                tlblab_stats::band(cmp.noise_threshold)
            );
            out += &system_load(cmp);
            out + &environment_differences(cmp)
        }
        Format::Markdown => {
            let mut out = String::new();
            for c in &cmp.rows {
                let _ = writeln!(
                    out,
                    "**{}** ({}{})\n",
                    c.b,
                    c.unit,
                    if c.lower_is_better { ", lower is better" } else { ", higher is better" }
                );
                let _ = writeln!(out, "| | {a} | {b} |\n|---|---:|---:|");
                for (name, va, vb, pct, star) in rows(c) {
                    let mark = if star { "*" } else { "" };
                    let _ = writeln!(
                        out,
                        "| {name} | {} | {} ({mark}{pct:+.2}%{mark}) |",
                        number(va),
                        number(vb)
                    );
                }
                let _ = writeln!(out, "\n{}\n", verdict_line(c, a, b, cmp.noise_threshold));
                for w in &c.comparison.cautions {
                    let _ = writeln!(out, "warning: {w}\n");
                }
            }
            out + &system_load(cmp) + &environment_differences(cmp)
        }
        Format::Csv => {
            let mut out = String::from("config,unit,statistic,a,b,better_percent,significant\n");
            for c in &cmp.rows {
                for (name, va, vb, pct, star) in rows(c) {
                    let _ = writeln!(
                        out,
                        "\"{}\",{},{name},{va},{vb},{pct:.4},{star}",
                        c.b.replace('"', "\"\""),
                        c.unit
                    );
                }
            }
            out
        }
    }
}

/// The load around each side's runs, one line each.
pub fn system_load(cmp: &ResultsComparison) -> String {
    format!(
        "system during A ({}): {}\nsystem during B ({}): {}\n",
        cmp.a_label,
        cmp.load_a.summary(),
        cmp.b_label,
        cmp.load_b.summary()
    )
}

/// "environment differences" as lines (or a line saying there are none).
pub fn environment_differences(cmp: &ResultsComparison) -> String {
    if cmp.environment_differences.is_empty() {
        return "environment and method: no differences\n".to_string();
    }
    let mut out =
        format!("environment and method differences ({} → {}):\n", cmp.a_label, cmp.b_label);
    for d in &cmp.environment_differences {
        let _ = writeln!(out, "  {}: {} → {}", d.field, d.a, d.b);
    }
    out
}
