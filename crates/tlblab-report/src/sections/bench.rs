//! A live benchmark session (`tlblab.bench/1`): the environment and method, and per scenario
//! each configuration's runs summarised, plotted and compared with the scenario's first
//! configuration, with the same statistics as `tlblab bench` prints (tlblab-bench and
//! tlblab-stats do the arithmetic).

use serde_json::Value;
use tlblab_bench::{compare_within, BenchResults, CompareSettings, ConfigComparison, ConfigResult};
use tlblab_stats::{bootstrap_ci, mean, outliers, Summary};

use super::{figure, Ctx};
use crate::doc::{b, c, cell, t, Block, Document, Span, Table, Tone};
use crate::fmt;
use crate::plot::{Bar, BarChart, BarSeries};

/// Bootstrap resamples of a configuration's interval, as `tlblab bench` uses.
const CI_RESAMPLES: usize = 10_000;
/// Iglewicz and Hoaglin's modified z-score threshold, as `tlblab bench` flags outliers.
const OUTLIER_Z: f64 = 3.5;

/// Adds the session's section.
pub fn bench(doc: &mut Document, ctx: &Ctx, name: &str, r: &BenchResults) {
    let mut scenarios: Vec<&str> = Vec::new();
    for c in &r.configs {
        if !scenarios.contains(&c.config.scenario.as_str()) {
            scenarios.push(&c.config.scenario);
        }
    }
    let env = serde_json::to_value(&r.environment).unwrap_or(Value::Null);
    let kernel = env
        .pointer("/kernel_release/available")
        .and_then(Value::as_str)
        .unwrap_or("an unknown kernel");
    doc.heading(2, format!("Benchmark: {} on {kernel}", scenarios.join(", ")));
    let m = &r.method;
    doc.para(vec![
        b("How to read: "),
        t(format!(
            "measured on the live kernel. Each configuration ran {} measured runs of {} ms, each after {} ms of warm-up, {}. A figure is the mean ± sample standard deviation over the runs; the 95% CI of the mean is a percentile bootstrap ({} resamples, seed {}). Each configuration is compared with the first configuration of its scenario: the change of the mean with its 95% bootstrap interval, Welch's t-test and the Mann–Whitney U test. A change is significant only when Welch's p < 0.05 and the whole interval lies outside ±{:.1}% (criterion's rule).",
            m.runs,
            m.run_ms,
            m.warmup_ms,
            if m.interleaved { "interleaved in seeded random rounds" } else { "one configuration after another" },
            fmt::group(CI_RESAMPLES as u64),
            m.seed,
            ctx.noise_threshold * 100.0
        )),
    ]);
    if r.interrupted {
        doc.push(Block::Warning(vec![t(
            "The session was interrupted: the results hold only the runs finished before the stop.",
        )]));
    }
    environment(doc, name, r, &env);
    let settings = CompareSettings {
        noise_threshold: ctx.noise_threshold,
        seed: r.method.seed,
        ..CompareSettings::default()
    };
    for scenario in scenarios {
        let configs: Vec<&ConfigResult> =
            r.configs.iter().filter(|c| c.config.scenario == scenario).collect();
        scenario_section(doc, ctx, r, scenario, &configs, &settings);
    }
}

/// A system-dependent value as text: `available` values as they are, `unavailable` ones with
/// their reason.
fn source_text(v: &Value) -> String {
    match v {
        Value::Object(map) if map.len() == 1 && map.contains_key("available") => {
            plain(&map["available"])
        }
        Value::Object(map) if map.len() == 1 && map.contains_key("unavailable") => {
            let reason = map["unavailable"]
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            format!("unavailable: {reason}")
        }
        other => plain(other),
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        Value::Number(n) => n.as_u64().map_or_else(|| n.to_string(), fmt::group),
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(plain).collect::<Vec<_>>().join(", "),
        Value::Object(map) => {
            // Flags: the ones set, then the ones not.
            if !map.is_empty() && map.values().all(Value::is_boolean) {
                let on: Vec<&str> = map
                    .iter()
                    .filter(|(_, v)| v == &&Value::Bool(true))
                    .map(|(k, _)| k.as_str())
                    .collect();
                let off: Vec<&str> = map
                    .iter()
                    .filter(|(_, v)| v == &&Value::Bool(false))
                    .map(|(k, _)| k.as_str())
                    .collect();
                let mut out = if on.is_empty() { "none".to_string() } else { on.join(" ") };
                if !off.is_empty() {
                    out += &format!(" (not: {})", off.join(" "));
                }
                return out;
            }
            map.iter()
                .map(|(k, v)| format!("{k}: {}", source_text(v)))
                .collect::<Vec<_>>()
                .join("; ")
        }
    }
}

/// Labels of the environment's fields, in the order shown; others follow under their names.
const ENV_FIELDS: [(&str, &str); 17] = [
    ("kernel_release", "Kernel release"),
    ("kernel_version", "Kernel version"),
    ("machine", "Architecture"),
    ("cpu_model", "CPU model"),
    ("online_cpus", "Online CPUs"),
    ("numa_nodes", "NUMA nodes"),
    ("cpu_flags", "TLB-related CPU flags"),
    ("pti", "Page-table isolation (PTI)"),
    ("hypervisor", "Hypervisor"),
    ("kvm_pv_tlb_flush", "KVM paravirtual TLB flush"),
    ("tlb_single_page_flush_ceiling", "tlb_single_page_flush_ceiling"),
    ("page_size", "Page size, bytes"),
    ("thp_enabled", "Transparent huge pages"),
    ("thp_defrag", "THP defrag"),
    ("kernel_cmdline", "Kernel command line"),
    ("tlblab_version", "tlblab version"),
    ("tlblab_commit", "tlblab commit"),
];

fn environment(doc: &mut Document, name: &str, r: &BenchResults, env: &Value) {
    doc.heading(3, "Environment and method");
    let mut kv: Vec<(String, Vec<Span>)> = vec![("Input".into(), vec![c(name)])];
    if let Value::Object(map) = env {
        for (key, label) in ENV_FIELDS {
            if let Some(v) = map.get(key) {
                kv.push((label.into(), vec![t(source_text(v))]));
            }
        }
        for (key, v) in map {
            if key != "mitigations" && !ENV_FIELDS.iter().any(|(k, _)| k == key) {
                kv.push((key.clone(), vec![t(source_text(v))]));
            }
        }
    }
    let m = &r.method;
    kv.push((
        "Method".into(),
        vec![t(format!(
            "{} measured runs per configuration, {}, {} ms each after {} ms of warm-up; seed {}; CPUs {}; tlb_flush tracepoint {}",
            m.runs,
            if m.interleaved { "interleaved in seeded random rounds" } else { "one configuration after another" },
            m.run_ms,
            m.warmup_ms,
            m.seed,
            m.cpus.as_deref().unwrap_or("default placement"),
            if m.flush_trace { "on during runs (it costs time per flush: compare traced with traced)" } else { "off" }
        ))],
    ));
    let sources = serde_json::to_value(&r.sources).unwrap_or(Value::Null);
    if let Value::Object(map) = &sources {
        let list: Vec<String> =
            map.iter().map(|(k, v)| format!("{k}: {}", source_text(v))).collect();
        kv.push(("Counter sources".into(), vec![t(list.join("; "))]));
    }
    if !r.flush_reasons.is_empty() {
        let legend: Vec<String> = r.flush_reasons.iter().map(|(k, v)| format!("{k} {v}")).collect();
        kv.push(("tlb_flush reasons (this kernel's)".into(), vec![t(legend.join(", "))]));
    }
    if let Some(o) = &r.harness_overhead {
        kv.push((
            "Harness overhead".into(),
            vec![t(format!(
                "{}: median {:+.2}% of the op over {} paired slices (quartiles {:+.2}% … {:+.2}%; bare {:.1} ns/op, through the harness {:.1} ns/op); the harness's own work {:.2} ns/op = {:.3}% of the op",
                o.config, o.percent, o.repeats, o.percent_p25, o.percent_p75, o.bare_ns_per_op, o.harness_ns_per_op, o.machinery_ns_per_op, o.machinery_percent
            ))],
        ));
    }
    doc.push(Block::KeyValues(kv));
    if let Some(Value::Object(mit)) = env.pointer("/mitigations/available") {
        let mut table =
            Table::new(&["vulnerability", "status (/sys/devices/system/cpu/vulnerabilities)"]);
        for (k, v) in mit {
            table.row(vec![k.clone().into(), plain(v).into()]);
        }
        doc.push(Block::Details {
            summary: format!("CPU vulnerabilities and mitigations ({})", mit.len()),
            blocks: vec![Block::Table(table)],
        });
    }
}

/// The configuration's name without its scenario (`--busy 1`), or `(defaults)`.
fn short_key(c: &ConfigResult) -> String {
    let key = c.config.key();
    match key.strip_prefix(c.config.scenario.as_str()).map(str::trim) {
        Some("") => "(defaults)".into(),
        Some(rest) => rest.to_string(),
        None => key,
    }
}

/// Whether a counter is one CPU's share (`irq.tlb.cpu1`).
pub(super) fn is_per_cpu(name: &str) -> bool {
    name.rsplit_once(".cpu")
        .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn scenario_section(
    doc: &mut Document,
    ctx: &Ctx,
    r: &BenchResults,
    scenario: &str,
    configs: &[&ConfigResult],
    settings: &CompareSettings,
) {
    doc.heading(3, scenario);
    let unit = configs[0].config.unit.clone();
    let better =
        if configs[0].config.lower_is_better { "lower is better" } else { "higher is better" };
    let mut table = Table::new(&[
        "configuration",
        "runs",
        &format!("mean ± sd, {unit}"),
        "95% CI of the mean",
        "median",
        "min … max",
        "CoeffVar",
    ])
    .numeric_from(1);
    let mut chart =
        BarChart::new("configuration", &unit, configs.iter().map(|c| short_key(c)).collect());
    let mut bars = Vec::new();
    let mut summary = Vec::new();
    let mut notes: Vec<Vec<Span>> = Vec::new();
    for c in configs {
        if let Some(reason) = &c.skipped {
            notes.push(vec![b(c.config.key()), t(format!(": not run: {reason}"))]);
        }
        let values = c.values();
        let Ok(s) = Summary::of(&values) else {
            table.row(vec![c.config.key().into(), "0".into(), cell("no runs", Tone::Missing)]);
            bars.push(None);
            continue;
        };
        let ci = bootstrap_ci(
            &values,
            |v| mean(v).unwrap_or(f64::NAN),
            CI_RESAMPLES,
            0.95,
            r.method.seed,
        )
        .ok();
        let cv = s.cv.map_or("-".to_string(), |cv| format!("{:.1}%", cv * 100.0));
        table.row(vec![
            c.config.key().into(),
            s.n.to_string().into(),
            fmt::mean_sd(s.mean, s.stddev).into(),
            ci.map_or_else(
                || cell("-", Tone::Missing),
                |ci| format!("{} … {}", fmt::num(ci.low), fmt::num(ci.high)).into(),
            ),
            fmt::num(s.median).into(),
            format!("{} … {}", fmt::num(s.min), fmt::num(s.max)).into(),
            cv.into(),
        ]);
        let mut bar = Bar::new(s.mean).samples(values.clone());
        if let Some(ci) = ci {
            bar = bar.interval(ci.low, ci.high);
            summary.push(format!(
                "{} {} [95% CI {}, {}]",
                short_key(c),
                fmt::num(s.mean),
                fmt::num(ci.low),
                fmt::num(ci.high)
            ));
        } else {
            summary.push(format!("{} {}", short_key(c), fmt::num(s.mean)));
        }
        bars.push(Some(bar));
        for i in outliers(&values, OUTLIER_Z).unwrap_or_default() {
            notes.push(vec![
                b(c.config.key()),
                t(format!(
                    ": run {} ({}) is an outlier (modified z-score above {OUTLIER_Z})",
                    i + 1,
                    fmt::num(values[i])
                )),
            ]);
        }
        let warned: Vec<_> = c.runs.iter().filter(|r| !r.warnings.is_empty()).collect();
        if let Some(first) = warned.first() {
            notes.push(vec![
                b(c.config.key()),
                t(format!(
                    ": {} of {} runs have warnings, e.g. {}",
                    warned.len(),
                    c.runs.len(),
                    first.warnings[0]
                )),
            ]);
        }
    }
    doc.table(table.note(format!(
        "{unit}, {better}; mean ± sample standard deviation over the runs; CI: percentile bootstrap of the mean ({} resamples); CoeffVar: sd / mean.",
        fmt::group(CI_RESAMPLES as u64)
    )));
    chart = chart.series(BarSeries::new(scenario, bars));
    chart.color_by_category = true;
    doc.push(figure(
        ctx,
        || chart.svg(),
        format!(
            "{scenario}: {unit} per configuration ({better}): bar = mean of the runs, whisker = 95% bootstrap CI of the mean, dots = the individual runs in measurement order."
        ),
        format!("{unit}: {}", summary.join("; ")),
    ));
    comparisons(doc, r, configs, settings);
    counters(doc, configs);
    if !notes.is_empty() {
        doc.push(Block::Warning(vec![t("Warnings:")]));
        doc.push(Block::List(notes));
    }
}

fn comparisons(
    doc: &mut Document,
    r: &BenchResults,
    configs: &[&ConfigResult],
    settings: &CompareSettings,
) {
    // Compare each pair on its own (tlblab-bench's compare_within on a two-configuration copy of
    // the session), so that one pair that cannot be tested (a single run) leaves the others.
    let mut table = tests_table(&["baseline", "candidate"]);
    let mut failed: Vec<Vec<Span>> = Vec::new();
    for (i, cfg) in configs.iter().enumerate().skip(1) {
        let Some(first) = configs[..i].iter().find(|f| !f.runs.is_empty()) else { continue };
        if cfg.runs.is_empty() {
            continue;
        }
        let fewest = first.runs.len().min(cfg.runs.len());
        if fewest < tlblab_bench::MIN_RUNS {
            failed.push(vec![
                b(format!("{} → {}", first.config.key(), cfg.config.key())),
                t(format!(
                    ": no comparison: {fewest} run on one side; the tests need {} or more",
                    tlblab_bench::MIN_RUNS
                )),
            ]);
            continue;
        }
        let mut pair = r.clone();
        pair.configs = vec![(*first).clone(), (*cfg).clone()];
        match compare_within(&pair, settings) {
            Ok(rows) => {
                for row in rows {
                    let (a, b) = (short_key(first), short_key(cfg));
                    let mut cells = vec![a.as_str().into(), b.as_str().into()];
                    cells.extend(test_cells(&row, &a, &b));
                    table.row(cells);
                }
            }
            Err(e) => failed.push(vec![
                b(format!("{} → {}", first.config.key(), cfg.config.key())),
                t(format!(": no comparison: {}", tlblab_types::plain::error_chain(&e))),
            ]),
        }
    }
    if table.rows.is_empty() && failed.is_empty() {
        return;
    }
    if !table.rows.is_empty() {
        doc.table(table.note(tests_note("candidate", "baseline", settings.noise_threshold)));
    }
    if !failed.is_empty() {
        doc.push(Block::List(failed));
    }
}

/// Columns of a table of comparisons: `first` (what is compared), then those of
/// [`test_cells`], with the numbers right-aligned.
pub(super) fn tests_table(first: &[&str]) -> Table {
    let head: Vec<&str> = first
        .iter()
        .copied()
        .chain([
            "change of the mean [95% CI]",
            "Welch p",
            "Mann–Whitney p",
            "speedup (± sd)",
            "verdict",
        ])
        .collect();
    let n = first.len();
    let mut table = Table::new(&head).numeric_from(n);
    table.numeric[n + 3] = false;
    table.numeric[n + 4] = false;
    table
}

/// The note under a [`tests_table`], `b` and `a` naming the candidate and the baseline.
pub(super) fn tests_note(b: &str, a: &str, noise_threshold: f64) -> String {
    format!(
        "change: mean({b}) / mean({a}) − 1 with its 95% percentile-bootstrap interval; Welch's t-test and the Mann–Whitney U test, two-sided; speedup: how many times faster (or better) the better one is, hyperfine's ratio of the means with ± propagated from the two standard deviations; verdict: significant only when Welch p < 0.05 and the whole interval lies outside ±{:.1}%.",
        noise_threshold * 100.0
    )
}

/// The cells of a [`tests_table`] row after the first columns: the change with its interval,
/// the two p-values, the speedup (`a` and `b` name the sides) and the verdict.
pub(super) fn test_cells(row: &ConfigComparison, a: &str, b: &str) -> Vec<crate::doc::Cell> {
    let cmp = &row.comparison;
    let significant = cmp.verdict.is_change();
    let tone = if significant { Tone::Significant } else { Tone::Plain };
    let speed = match cmp.speedup {
        Some(s) => {
            let who = match s.faster {
                tlblab_stats::Group::A => a,
                tlblab_stats::Group::B => b,
            };
            let word = if row.lower_is_better { "faster" } else { "better" };
            format!("{who} {:.3} ± {:.3} times {word}", s.ratio, s.stddev)
        }
        None => "-".into(),
    };
    vec![
        cell(
            format!(
                "{} [{}, {}]",
                fmt::signed_pct(cmp.change.estimate),
                fmt::signed_pct(cmp.change.ci.low),
                fmt::signed_pct(cmp.change.ci.high)
            ),
            tone,
        ),
        fmt::p_value(cmp.welch.p_two_sided).into(),
        fmt::p_value(cmp.mann_whitney.p_two_sided).into(),
        speed.into(),
        // Another parameter value of the same session is higher or lower, not improved.
        cell(
            format!(
                "{}{}",
                if row.a == row.b {
                    cmp.verdict.to_string()
                } else {
                    cmp.verdict.effect(row.lower_is_better).to_string()
                },
                if significant { " (beyond noise)" } else { "" }
            ),
            tone,
        ),
    ]
}

fn counters(doc: &mut Document, configs: &[&ConfigResult]) {
    let mut names: Vec<&str> = Vec::new();
    for c in configs {
        for n in c.counter_names() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names.sort_unstable();
    let head: Vec<String> = std::iter::once("counter per op".to_string())
        .chain(configs.iter().map(|c| short_key(c)))
        .collect();
    let per_op = |c: &ConfigResult, n: &str| c.counter_per_op(n);
    let build = |per_cpu: bool| {
        let mut table = Table::new(&head).numeric_from(1);
        for n in names.iter().filter(|n| is_per_cpu(n) == per_cpu) {
            let values: Vec<Option<f64>> = configs.iter().map(|c| per_op(c, n)).collect();
            if per_cpu && values.iter().all(|v| v.is_none_or(|v| v == 0.0)) {
                continue;
            }
            let mut row = vec![(*n).into()];
            row.extend(
                values
                    .iter()
                    .map(|v| v.map_or_else(|| cell("-", Tone::Missing), |v| fmt::num(v).into())),
            );
            table.row(row);
        }
        table
    };
    let all = build(false);
    if !all.rows.is_empty() {
        doc.table(all.note(
            "each counter's delta over a measured run divided by the run's operations, mean over the runs (irq.*: /proc/interrupts rows; tlb_flush.reasonR: tlb:tlb_flush events of reason R from tlblab's own trace instance; rusage.*: the benchmark's tasks).",
        ));
    }
    let cpu = build(true);
    if !cpu.rows.is_empty() {
        doc.push(Block::Details {
            summary: format!("Counters per op, by CPU ({} non-zero)", cpu.rows.len()),
            blocks: vec![Block::Table(cpu)],
        });
    }
}
