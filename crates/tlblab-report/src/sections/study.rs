//! A simulator study (`tlblab.sim.study/1`): setup, a table and plots per part, each study's
//! own extras (S1's flush-size histogram, S4's preemption-off sections and madvise-scale curve,
//! S5's exposure windows and IPIs), and the policies with the kernels they mirror.

use std::collections::BTreeMap;

use super::{figure, Ctx};
use crate::doc::{b, c, cell, t, Block, Document, Span, Table, Tone};
use crate::fmt;
use crate::model::study::{
    CeilingCurve, MeasureResult, Part, PolicyResult, Relative, Study, Sweep, SweepAxis,
};
use crate::plot::{Bar, BarChart, BarSeries, LineChart, LineSeries, Point, Scale};

/// The reasons of `tlb:tlb_flush` in the kernel's order (`enum tlb_flush_reason`, 6.18).
const REASONS: [&str; 6] = [
    "flush on task switch",
    "remote shootdown",
    "local shootdown",
    "local MM shootdown",
    "remote IPI send",
    "remote wrong CPU",
];

/// Adds one study's section.
pub fn study(doc: &mut Document, ctx: &Ctx, name: &str, s: &Study) {
    doc.heading(2, format!("{} ({}): {}", s.short.to_uppercase(), s.study, s.title));
    doc.para(vec![b("Mirrors: "), t(&s.mirrors)]);
    if s.quick {
        doc.push(Block::Warning(vec![t(
            "Quick run (--quick): every part was shrunk (fewer iterations, smaller windows, fewer worker counts) for tests and smoke runs. These are not the study's figures.",
        )]));
    }
    doc.para(how_to_read(s));
    doc.push(Block::KeyValues(vec![
        ("Input".into(), vec![c(name)]),
        ("Written by".into(), vec![t(format!("tlblab {}", s.tlblab_version))]),
        (
            "Runs per policy".into(),
            vec![t(format!("{} ({}): {}", s.seeds, seeds_range(s), s.seeds_why))],
        ),
        (
            "Parts".into(),
            vec![t(s.parts.iter().map(|p| p.label.as_str()).collect::<Vec<_>>().join("; "))],
        ),
    ]));
    if !s.not_run.is_empty() {
        doc.push(Block::Warning(vec![t(format!(
            "{} part(s) not run (this build of the kernel model lacks their scenario); the others ran:",
            s.not_run.len()
        ))]));
        doc.push(Block::List(
            s.not_run
                .iter()
                .map(|n| vec![b(&n.label), t(format!(" (scenario {}): {}", n.scenario, n.reason))])
                .collect(),
        ));
    }
    let mut sweeps_done: Vec<&str> = Vec::new();
    for part in &s.parts {
        // A sweep's points are shown together, where its first point is.
        if let Some(sweep) = &part.sweep {
            if !sweeps_done.contains(&sweep.name.as_str()) {
                sweeps_done.push(&sweep.name);
                sweep_section(doc, ctx, s, sweep);
            }
            continue;
        }
        part_section(doc, ctx, s, part);
    }
    ceiling_curves(doc, ctx, s);
    policies(doc, s);
    inputs(doc, s);
}

/// The study's inputs: measured on the project's machine, copied (and from where), assumed
/// (absent in results of an older tlblab, which did not state them).
fn inputs(doc: &mut Document, s: &Study) {
    if s.inputs.is_empty() {
        return;
    }
    doc.heading(3, format!("{}: inputs, measured here, copied or assumed", s.short.to_uppercase()));
    let mut table = Table::new(&["origin", "input", "from"]);
    for input in &s.inputs {
        table.row(vec![
            input.origin.label().to_string().into(),
            input.what.clone().into(),
            input.from.clone().into(),
        ]);
    }
    table.note = Some(
        "measured here: on the project's 2-vCPU KVM guest; copied: from the document cited; assumed: no source gives the figure; defined: the study's own choice".into(),
    );
    doc.table(table);
}

/// S10: per source (the scenario or trace), the headline's ratio to the baseline ceiling
/// against the ceiling, one line per preset, and the best ceiling of each part.
fn ceiling_curves(doc: &mut Document, ctx: &Ctx, s: &Study) {
    let parts: Vec<(&Part, &CeilingCurve)> =
        s.parts.iter().filter_map(|p| Some((p, p.ceiling_curve.as_ref()?))).collect();
    if parts.is_empty() {
        return;
    }
    doc.heading(3, "Cost curves along the ceiling, per preset");
    let mut table = Table::new(&[
        "part",
        "best ceiling",
        "its mean",
        "best per seed",
        "no different from the best",
        "best's ratio to the baseline [CI]",
    ])
    .numeric_from(1);
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    for (p, c) in &parts {
        let best = c.best.and_then(|b| c.points.iter().find(|q| q.ceiling == b));
        let ratio = best.and_then(|q| Some((q.ratio.as_ref()?, q.effect))).map_or_else(
            || "baseline".to_string(),
            |(r, e)| {
                let verdict = e.map_or(String::new(), |e| format!(", {e}"));
                format!("{:.3} [{:.3}, {:.3}]{verdict}", r.ratios.mean, r.ci.low, r.ci.high)
            },
        );
        let mean = best.and_then(|q| q.mean).map_or("-".into(), |m| format!("{m:.1}"));
        table.row(vec![
            p.label.clone().into(),
            c.best.map_or("-".into(), |b| b.to_string()).into(),
            mean.into(),
            list(&c.best_per_seed).into(),
            list(&c.tied_with_best).into(),
            ratio.into(),
        ]);
    }
    doc.table(table.note(
        "Best ceiling: the best mean headline among the baseline's ceiling and those the verdict finds better than it. Best per seed: the same choice in each seed's runs. No different from the best: the ceilings whose per-seed ratio to the best has an interval that holds 1 or reaches into the noise band.",
    ));
    let mut sources: Vec<&str> = parts.iter().map(|(p, _)| p.scenario.name.as_str()).collect();
    sources.dedup();
    for source in sources {
        let of: Vec<&(&Part, &CeilingCurve)> =
            parts.iter().filter(|(p, _)| p.scenario.name == source).collect();
        let (first, curve) = (of[0].0, of[0].1);
        let label = first.measures.first().map_or(curve.measure.clone(), |m| m.label.clone());
        let y = format!("{label}, ratio to ceiling {}", curve.baseline);
        let mut chart =
            LineChart::new("tlb_single_page_flush_ceiling, pages", &y).x_scale(Scale::Log2);
        chart.y_from_zero = false;
        let mut summary = Vec::new();
        for (p, c) in &of {
            let points: Vec<Point> = c
                .points
                .iter()
                .filter_map(|q| {
                    let x = q.ceiling as f64;
                    if q.ceiling == c.baseline {
                        return Some(Point::new(x, 1.0));
                    }
                    let r = q.ratio.as_ref()?;
                    summary
                        .push(format!("{} at {}: {:.3}", p.machine.name, q.ceiling, r.ratios.mean));
                    Some(Point::new(x, r.ratios.mean).interval(r.ci.low, r.ci.high))
                })
                .collect();
            chart = chart.series(LineSeries::new(&p.machine.name, points));
        }
        doc.push(figure(
            ctx,
            || chart.svg(),
            format!(
                "{source}: {label} at each ceiling relative to ceiling {} ({}), one line per preset; whisker = the ratio's interval over the seeds.",
                curve.baseline,
                if curve.lower_is_better { "lower is better" } else { "higher is better" }
            ),
            summary.join("; "),
        ));
    }
}

fn seeds_range(s: &Study) -> String {
    if s.seeds == 1 {
        format!("seed {}", s.first_seed)
    } else {
        format!("seeds {}–{}", s.first_seed, s.first_seed + s.seeds - 1)
    }
}

fn how_to_read(s: &Study) -> Vec<Span> {
    let conf = s.confidence * 100.0;
    if s.seeds >= 2 {
        vec![
            b("How to read: "),
            t(format!(
                "each run is deterministic; seeds change only timer phases and the workload's random draws. A figure is the mean ± sample standard deviation over the {} runs of a policy. Each policy is compared with its part's first policy (the baseline): the ratio is the geometric mean of the per-seed ratios policy/baseline, paired by seed, with its {conf:.0}% log-t confidence interval; significant means a change: the interval excludes 1 and lies wholly outside the ±1% noise band. Intervals are tight because the model is deterministic: read the size of a ratio, not only its verdict.",
                s.seeds
            )),
        ]
    } else {
        vec![
            b("How to read: "),
            t("one run per policy: every figure is that run's value. One seed gives no interval, so no ratio is shown and nothing is marked significant."),
        ]
    }
}

fn params_text(part: &Part) -> String {
    part.params
        .iter()
        .map(|(k, v)| match v.as_u64() {
            Some(n) => format!("{k} {}", fmt::group(n)),
            None => format!("{k} {v}"),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn setup(part: &Part) -> Block {
    setup_of(part, &part.cpus.to_string(), "")
}

/// The setup table of `part`, its CPUs given as `cpus` and `params_note` after its parameters
/// (a sweep's points differ in those).
fn setup_of(part: &Part, cpus: &str, params_note: &str) -> Block {
    let m = &part.machine;
    let mut kv = vec![
        (
            "Scenario".to_string(),
            vec![c(&part.scenario.name), t(format!(": {}", part.scenario.description))],
        ),
        (
            "Machine".to_string(),
            vec![
                c(&m.name),
                t(format!(
                    " ({}, {:.2} GHz), {cpus} CPUs simulated. {}",
                    m.description,
                    m.clock_mhz as f64 / 1000.0,
                    m.why
                )),
            ],
        ),
        ("Parameters".to_string(), vec![t(params_text(part) + params_note)]),
    ];
    if let Some(ms) = part.window_ms {
        let warmup = part.params.get("warmup_ms").and_then(|v| v.as_u64()).unwrap_or(0);
        kv.push((
            "Window".to_string(),
            vec![t(format!(
                "each run is a window of {} ms of simulated time{}: its elapsed time is the window, so the speed to compare is the {}",
                fmt::group(ms),
                if warmup > 0 {
                    format!(", after a warm-up of {} ms that is simulated but not measured", fmt::group(warmup))
                } else {
                    String::new()
                },
                part.scenario.unit
            ))],
        ));
    }
    kv.push(("Why these settings".to_string(), vec![t(&part.settings_why)]));
    Block::KeyValues(kv)
}

/// The CDF of the preemption-off sections per policy: at each kept percentile, the mean over
/// the seeds of the run's value, in µs (`None` when no run has sections, or the results predate
/// the distribution).
fn preempt_off_cdf(ctx: &Ctx, part: &Part) -> Option<Block> {
    let mhz = part.machine.clock_mhz.max(1) as f64;
    let mut chart = LineChart::new("preemption-off section, µs", "fraction of sections ≤ x")
        .x_scale(Scale::Log10);
    chart.y_from_zero = true;
    let mut summary = Vec::new();
    for pol in &part.policies {
        let runs: Vec<_> = pol
            .runs
            .iter()
            .filter_map(|r| r.preempt_off_cycles.as_ref())
            .filter(|d| !d.quantiles.is_empty())
            .collect();
        let Some(first) = runs.first() else { continue };
        let points: Vec<Point> = first
            .quantiles
            .iter()
            .enumerate()
            .filter_map(|(i, q)| {
                let values: Vec<f64> =
                    runs.iter().filter_map(|d| d.quantiles.get(i)).map(|q| q.value).collect();
                let us = values.iter().sum::<f64>() / values.len() as f64 / mhz;
                // A log axis has no 0: sections shorter than a cycle do not exist.
                (us > 0.0).then(|| Point::new(us, q.p / 100.0))
            })
            .collect();
        if let Some(p99) =
            first.quantiles.iter().position(|q| q.p == 99.0).and_then(|i| points.get(i))
        {
            summary.push(format!("{}: p99 {} µs", pol.policy.name, fmt::num(p99.x)));
        }
        chart = chart.series(LineSeries::new(&pol.policy.name, points));
    }
    if chart.series.is_empty() {
        return None;
    }
    Some(figure(
        ctx,
        || chart.svg(),
        format!(
            "Distribution (CDF) of the preemption-disabled sections of flush_tlb_mm_range(): the fraction of sections no longer than x, at the 0th … 100th percentiles (points), each the mean over the {} runs of a policy; x on a log scale. The right end is the longest section: the worst wait of a high-priority task woken on that CPU.",
            part.policies.first().map_or(0, |p| p.runs.len())
        ),
        format!("preemption-off CDF: {}", summary.join("; ")),
    ))
}

fn part_section(doc: &mut Document, ctx: &Ctx, s: &Study, part: &Part) {
    doc.heading(3, &part.label);
    doc.push(setup(part));
    if s.layout == "la57" {
        doc.table(perf_stat_table(part, s));
    }
    doc.table(measure_table(part, s));
    doc.push(measure_notes(part));
    let main = part.measures.iter().position(|m| m.key == "scenario_metric").unwrap_or(0);
    doc.push(measure_figure(ctx, s, part, main));
    // One chart per direction, so that "up" means the same on each.
    for lower_is_better in [true, false] {
        if let Some(fig) = ratio_figure(ctx, s, part, lower_is_better) {
            doc.push(fig);
        }
    }
    let preempt = [("preempt_off_max_us", "max"), ("preempt_off_p99_us", "p99")];
    if let Some(fig) = grouped_figure(
        ctx,
        s,
        part,
        &preempt,
        "preemption-off section, µs",
        "statistic over the run's sections",
        "Longest (max) and 99th-percentile preemption-disabled section of flush_tlb_mm_range() on the initiator CPU. Such a section bounds the scheduling latency of a high-priority task woken on that CPU: it cannot run before the section ends.",
    ) {
        doc.push(fig);
    }
    // S4 is about these sections; elsewhere the CDF would be a plot nobody asked for.
    if s.layout == "flush-info" {
        if let Some(fig) = preempt_off_cdf(ctx, part) {
            doc.push(fig);
        }
    }
    let exposure =
        [("exposure_median_us", "median"), ("exposure_p99_us", "p99"), ("exposure_max_us", "max")];
    if let Some(fig) = grouped_figure(
        ctx,
        s,
        part,
        &exposure,
        "exposure window, µs",
        "statistic over the closed windows",
        &format!(
            "Exposure window: for each page taken out of the kernel direct map, the time until the last CPU that could still use its stale kernel translation has flushed it (median, p99, max over the windows that closed). {}",
            censored_text(part)
        ),
    ) {
        doc.push(fig);
    }
    let ipis = [("ipis_sent", "IPIs sent"), ("ipis_received", "IPIs received")];
    if let Some(fig) = grouped_figure(
        ctx,
        s,
        part,
        &ipis,
        "IPIs per run",
        "flush IPIs, all CPUs",
        "Flush IPIs sent, and received (the TLB row of /proc/interrupts, plus the CAL row where kernel-range flushes land), summed over all CPUs in one run.",
    ) {
        doc.push(fig);
    }
    if s.layout == "pti" {
        flush_histograms(doc, ctx, s, part);
    }
    if let Some(table) = tlb_flush_table(part, s) {
        doc.table(table);
    }
}

/// S3: the counters as `perf stat -r K` prints them, one column per policy: the mean over the
/// runs and its relative standard error.
fn perf_stat_table(part: &Part, s: &Study) -> Table {
    let mut head = vec!["event".to_string()];
    head.extend(part.policies.iter().map(|p| format!("{} ({} runs)", p.policy.name, s.seeds)));
    let mut table = Table::new(&head).numeric_from(1);
    // perf's event name, the measure's key (None: not modelled), the unit.
    let rows: [(&str, Option<&str>, &str); 9] = [
        ("task-clock", Some("task_clock_ms"), " msec"),
        ("page-faults", Some("page_faults"), ""),
        ("cycles", Some("cycles"), ""),
        ("instructions", None, ""),
        ("branches", None, ""),
        ("branch-misses", None, ""),
        ("la57 run-time checks (one load + one branch each)", Some("la57_checks"), ""),
        ("dTLB walks", Some("dtlb_walks"), ""),
        ("", Some("scenario_metric"), ""),
    ];
    for (name, key, unit) in rows {
        let index = key.map(|key| part.measures.iter().position(|m| m.key == key));
        let name = match index {
            Some(None) => continue, // not among this part's measures
            Some(Some(i)) if name.is_empty() => {
                format!("{} (the scenario's own metric)", part.measures[i].label)
            }
            _ => name.to_string(),
        };
        let mut row = vec![crate::doc::Cell::from(name)];
        for pol in &part.policies {
            row.push(match index.flatten().map(|i| &pol.measures[i]) {
                None => cell("<not modelled>", Tone::Missing),
                Some(m) => match (m.mean, m.stddev) {
                    (Some(mean), Some(sd)) if mean != 0.0 && m.values.len() >= 2 => {
                        let rse = sd / (m.values.len() as f64).sqrt() / mean.abs() * 100.0;
                        format!("{}{unit}  ( ± {rse:.2}% )", fmt::num(mean)).into()
                    }
                    (Some(mean), _) => format!("{}{unit}", fmt::num(mean)).into(),
                    _ => cell(m.note.clone().unwrap_or_else(|| "-".into()), Tone::Missing),
                },
            });
        }
        table.row(row);
    }
    table.note(format!(
        "As perf stat -r {} prints it: the mean over the runs and ( ± x% ), the relative standard error (sample standard deviation / √runs / mean). task-clock and cycles are the user + system time of the build's tasks. <not modelled>: the model does not count instructions or branches (perf prints <not supported> for events a CPU lacks). The table below gives each measure's ratio to the baseline with its interval.",
        s.seeds
    ))
}

/// The measure's value cell: mean ± sd (or the value with one seed), or why there is none.
fn value_cell(m: &MeasureResult, seeds: u64) -> crate::doc::Cell {
    match (m.mean, m.stddev) {
        (Some(mean), Some(sd)) if seeds >= 2 => fmt::mean_sd(mean, sd).into(),
        (Some(mean), _) => fmt::num(mean).into(),
        _ => cell(m.note.clone().unwrap_or_else(|| "-".into()), Tone::Missing),
    }
}

fn ratio_cells(m: &MeasureResult, pol: &PolicyResult) -> (crate::doc::Cell, crate::doc::Cell) {
    if pol.baseline {
        return ("baseline".into(), "-".into());
    }
    match (&m.ratio, m.significant) {
        (Some(r), Some(sig)) => {
            let text = fmt::ratio_ci(r.ratios.mean, r.ci.low, r.ci.high, sig);
            let tone = if sig { Tone::Significant } else { Tone::Plain };
            (cell(text, tone), cell(if sig { "yes" } else { "no" }, tone))
        }
        _ if m.mean.is_none() => ("-".into(), "-".into()),
        _ => (
            cell(format!("({})", m.note.as_deref().unwrap_or("no ratio")), Tone::Missing),
            "-".into(),
        ),
    }
}

fn measure_table(part: &Part, s: &Study) -> Table {
    let base = &part.policies[0].policy.name;
    let with_ratios = s.seeds >= 2;
    let head: Vec<String> = if with_ratios {
        vec![
            "measure".into(),
            "policy".into(),
            format!("mean ± sd ({} runs)", s.seeds),
            format!("ratio to {base} [{:.0}% CI]", s.confidence * 100.0),
            "significant".into(),
        ]
    } else {
        vec!["measure".into(), "policy".into(), "value (1 run)".into()]
    };
    let mut table = Table::new(&head).numeric_from(2);
    for (i, info) in part.measures.iter().enumerate() {
        for (q, pol) in part.policies.iter().enumerate() {
            let m = &pol.measures[i];
            let label = if q == 0 {
                tlblab_studies::text::measure_label(&info.label, info.lower_is_better)
            } else {
                String::new()
            };
            let mut row =
                vec![label.into(), pol.policy.name.clone().into(), value_cell(m, s.seeds)];
            if with_ratios {
                let (r, sig) = ratio_cells(m, pol);
                row.extend([r, sig]);
            }
            table.row(row);
        }
    }
    if with_ratios {
        table.note(format!(
            "mean ± sample standard deviation over {} seeded runs; ratio: the geometric mean of the per-seed ratios policy / {base}, paired by seed, with its {:.0}% log-t interval; significant: a change, the interval excluding 1 and lying wholly outside the ±1% noise band. Unless marked, lower is better.",
            s.seeds,
            s.confidence * 100.0
        ))
    } else {
        table.note("one run per policy; unless marked, lower is better")
    }
}

fn measure_notes(part: &Part) -> Block {
    Block::Details {
        summary: "What each measure is".into(),
        blocks: vec![Block::List(
            part.measures.iter().map(|m| vec![b(&m.label), t(": "), t(&m.what)]).collect(),
        )],
    }
}

/// Bars of one measure per policy: the mean, ± 1 sd, and the runs as dots.
fn measure_figure(ctx: &Ctx, s: &Study, part: &Part, idx: usize) -> Block {
    let info = &part.measures[idx];
    let names: Vec<String> = part.policies.iter().map(|p| p.policy.name.clone()).collect();
    let mut bars = Vec::new();
    let mut summary = Vec::new();
    let mut missing = Vec::new();
    for pol in &part.policies {
        let m = &pol.measures[idx];
        match m.mean {
            Some(mean) => {
                let sd = m.stddev.unwrap_or(0.0);
                let mut bar = Bar::new(mean).samples(m.values.clone());
                if s.seeds >= 2 {
                    bar = bar.interval(mean - sd, mean + sd);
                    summary.push(format!("{} {}", pol.policy.name, fmt::mean_sd(mean, sd)));
                } else {
                    summary.push(format!("{} {}", pol.policy.name, fmt::num(mean)));
                }
                bars.push(Some(bar));
            }
            None => {
                missing.push(format!(
                    "{}: {}",
                    pol.policy.name,
                    m.note.as_deref().unwrap_or("no value")
                ));
                bars.push(None);
            }
        }
    }
    // The scenario's own metric is labelled by its unit alone (`s`): say what it is.
    let y_label = if info.key == "scenario_metric" {
        format!("{} ({})", info.label, part.scenario.metric.replace('_', " "))
    } else {
        info.label.clone()
    };
    let mut chart =
        BarChart::new("policy", &y_label, names).series(BarSeries::new(&info.label, bars));
    chart.color_by_category = true;
    let better = if info.lower_is_better { "lower is better" } else { "higher is better" };
    let spread = if s.seeds >= 2 {
        format!(
            "bar = mean of {} runs ({}), whisker = ± 1 sample standard deviation, dots = the individual runs",
            s.seeds,
            seeds_range(s)
        )
    } else {
        "bar = the single run's value".to_string()
    };
    let mut caption = format!("{} per policy ({better}): {spread}.", info.label);
    if !missing.is_empty() {
        caption += &format!(" No value: {}.", missing.join("; "));
    }
    if let Some(slow) = slowdown(part, idx) {
        caption += &format!(" {slow}.");
        summary.push(slow);
    }
    figure(
        ctx,
        || chart.svg(),
        caption,
        format!("{} ({better}): {}", info.label, summary.join(", ")),
    )
}

/// For a speed (higher is better, e.g. a build's CPU-s/s), how many times longer the same work
/// takes under each other policy: the inverse of the speed ratio and of its interval's bounds.
fn slowdown(part: &Part, idx: usize) -> Option<String> {
    let info = &part.measures[idx];
    if info.lower_is_better || part.policies.len() < 2 {
        return None;
    }
    let base = &part.policies[0].policy.name;
    let items: Vec<String> = part.policies[1..]
        .iter()
        .filter_map(|pol| {
            let m = &pol.measures[idx];
            let r = m.ratio.as_ref().filter(|r| r.ratios.mean > 0.0 && r.ci.low > 0.0)?;
            Some(format!(
                "{} {:.3}× [{:.3}, {:.3}]",
                pol.policy.name,
                1.0 / r.ratios.mean,
                1.0 / r.ci.high,
                1.0 / r.ci.low
            ))
        })
        .collect();
    (!items.is_empty()).then(|| {
        format!(
            "Slowdown against {base} (the same work takes this many times as long: 1 / the speed ratio, 95% interval inverted): {}",
            items.join(", ")
        )
    })
}

/// The ratio to the baseline, with its interval, of every measure for which lower (or higher)
/// is better, for the other policies.
fn ratio_figure(ctx: &Ctx, s: &Study, part: &Part, lower_is_better: bool) -> Option<Block> {
    if s.seeds < 2 || part.policies.len() < 2 {
        return None;
    }
    let base = &part.policies[0].policy.name;
    let shown: Vec<usize> = (0..part.measures.len())
        .filter(|&i| part.measures[i].lower_is_better == lower_is_better)
        .filter(|&i| part.policies[1..].iter().any(|p| p.measures[i].ratio.is_some()))
        .collect();
    if shown.is_empty() {
        return None;
    }
    let direction = if lower_is_better {
        "Lower is better for every measure here: below the line at 1 is better than the baseline"
    } else {
        "Higher is better for every measure here: above the line at 1 is better than the baseline"
    };
    let categories: Vec<String> = shown.iter().map(|&i| part.measures[i].label.clone()).collect();
    let y_label =
        format!("ratio to {base} ({} is better)", if lower_is_better { "lower" } else { "higher" });
    let mut chart = BarChart::new("measure", &y_label, categories).reference(1.0);
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut summary = Vec::new();
    let mut missing = Vec::new();
    for (q, pol) in part.policies.iter().enumerate().skip(1) {
        let bars = shown
            .iter()
            .map(|&i| {
                let m = &pol.measures[i];
                match (&m.ratio, m.significant) {
                    (Some(r), sig) => {
                        lo = lo.min(r.ci.low).min(r.ratios.mean);
                        hi = hi.max(r.ci.high).max(r.ratios.mean);
                        summary.push(format!(
                            "{} {} {}{}",
                            pol.policy.name,
                            part.measures[i].label,
                            fmt::ratio_ci(r.ratios.mean, r.ci.low, r.ci.high, sig == Some(true)),
                            if sig == Some(true) { " significant" } else { "" }
                        ));
                        Some(Bar::new(r.ratios.mean).interval(r.ci.low, r.ci.high))
                    }
                    _ => {
                        missing.push(format!(
                            "{} of {} ({})",
                            part.measures[i].label,
                            pol.policy.name,
                            m.note.as_deref().unwrap_or("no ratio")
                        ));
                        None
                    }
                }
            })
            .collect();
        chart = chart.series(BarSeries::new(&pol.policy.name, bars).color(q));
    }
    chart.always_legend = true;
    // Ratios spanning more than a factor of 4 (9.5× dTLB walks beside 0.99× time) would flatten
    // the small ones on a linear axis.
    if lo > 0.0 && hi / lo > 4.0 {
        chart = chart.y_scale(Scale::Log10);
    }
    let mut caption = format!(
        "Each measure relative to {base}{}: bar = the geometric mean of the per-seed ratios (paired by seed), whisker = its {:.0}% log-t interval; the dashed line at 1 is the baseline. A ratio is significant when its whisker lies wholly outside the ±1% noise band around 1 (see the table). {direction}.",
        chart.scale_note(),
        s.confidence * 100.0
    );
    if !missing.is_empty() {
        caption += &format!(" No ratio: {}.", missing.join("; "));
    }
    Some(figure(ctx, || chart.svg(), caption, format!("ratios to {base}: {}", summary.join("; "))))
}

/// Several measures of the same unit side by side per policy (mean ± sd, runs as dots); only
/// when the part has the first of them.
fn grouped_figure(
    ctx: &Ctx,
    s: &Study,
    part: &Part,
    keys: &[(&str, &str)],
    y_label: &str,
    x_label: &str,
    what: &str,
) -> Option<Block> {
    let idx: Vec<(usize, &str)> = keys
        .iter()
        .filter_map(|(k, label)| {
            part.measures.iter().position(|m| m.key == *k).map(|i| (i, *label))
        })
        .collect();
    if idx.is_empty() || part.measures.iter().all(|m| m.key != keys[0].0) {
        return None;
    }
    let categories: Vec<String> = idx.iter().map(|(_, l)| l.to_string()).collect();
    let mut chart = BarChart::new(x_label, y_label, categories);
    chart.always_legend = true;
    let mut summary = Vec::new();
    let mut missing = Vec::new();
    for (q, pol) in part.policies.iter().enumerate() {
        let values: Vec<&MeasureResult> = idx.iter().map(|(i, _)| &pol.measures[*i]).collect();
        if values.iter().all(|m| m.mean.is_none()) {
            let note =
                values.iter().find_map(|m| m.note.clone()).unwrap_or_else(|| "no value".into());
            missing.push(format!("{}: {note}", pol.policy.name));
            continue;
        }
        let bars = values
            .iter()
            .zip(&idx)
            .map(|(m, (_, label))| {
                let mean = m.mean?;
                let sd = m.stddev.unwrap_or(0.0);
                summary.push(format!("{} {label} {}", pol.policy.name, fmt::mean_sd(mean, sd)));
                let bar = Bar::new(mean).samples(m.values.clone());
                Some(if s.seeds >= 2 { bar.interval(mean - sd, mean + sd) } else { bar })
            })
            .collect();
        chart = chart.series(BarSeries::new(&pol.policy.name, bars).color(q));
    }
    if chart.series.is_empty() {
        return None;
    }
    let mut caption = format!(
        "{what} Per policy: bar = mean of {} runs, whisker = ± 1 sample standard deviation, dots = the runs.",
        s.seeds
    );
    if !missing.is_empty() {
        caption += &format!(" Not shown: {}.", missing.join("; "));
    }
    Some(figure(ctx, || chart.svg(), caption, format!("{y_label}: {}", summary.join("; "))))
}

fn censored_text(part: &Part) -> String {
    let Some(i) = part.measures.iter().position(|m| m.key == "exposure_censored") else {
        return String::new();
    };
    let counts: Vec<String> = part
        .policies
        .iter()
        .filter_map(|p| p.measures[i].mean.map(|m| format!("{} {}", p.policy.name, fmt::num(m))))
        .collect();
    if counts.is_empty() {
        String::new()
    } else {
        format!(
            "Windows still open when the run ended (censored, not in the statistics), mean per run: {}.",
            counts.join(", ")
        )
    }
}

/// Flushes and their cycles by size (-1: full).
type SizeCounts = BTreeMap<i64, (u64, u64)>;

/// S1: `flush_tlb_func()` flushes by size over every run of a policy (as the text output).
fn flush_histograms(doc: &mut Document, ctx: &Ctx, s: &Study, part: &Part) {
    let mut by_policy: Vec<(&str, SizeCounts)> = Vec::new();
    for pol in &part.policies {
        let mut by: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
        for run in &pol.runs {
            for f in &run.flush_sizes {
                let e = by.entry(f.pages).or_default();
                e.0 = e.0.saturating_add(f.flushes);
                e.1 = e.1.saturating_add(f.cycles);
            }
        }
        by_policy.push((&pol.policy.name, by));
    }
    let runs =
        if s.seeds == 1 { "the run".to_string() } else { format!("all {} runs together", s.seeds) };
    // Partial sizes ascending, then full flushes (-1) last, as the study prints them.
    let order = |by: &BTreeMap<i64, (u64, u64)>| -> Vec<i64> {
        by.keys()
            .copied()
            .filter(|p| *p >= 0)
            .chain(by.keys().copied().filter(|p| *p < 0))
            .collect()
    };
    let label = |p: i64| if p < 0 { "full".to_string() } else { p.to_string() };
    for (name, by) in &by_policy {
        let total = by.values().map(|e| e.0).fold(0u64, u64::saturating_add);
        doc.para(vec![
            b(format!("Flush sizes under {name}")),
            t(": flushes of "),
            c("flush_tlb_func()"),
            t(format!(" in {runs}.")),
        ]);
        if total == 0 {
            doc.para(vec![t("No flush.")]);
            continue;
        }
        let mut table = Table::new(&[
            "pages",
            "% of flushes",
            "cumulative %",
            "avg cycles",
            "cycles/page",
            "samples",
        ])
        .numeric_from(0);
        let mut cumulative = 0;
        for p in order(by) {
            let (flushes, cycles) = by[&p];
            cumulative = u64::saturating_add(cumulative, flushes);
            let avg = cycles as f64 / flushes as f64;
            table.row(vec![
                label(p).into(),
                format!("{:.2}%", flushes as f64 * 100.0 / total as f64).into(),
                format!("{:.2}%", cumulative as f64 * 100.0 / total as f64).into(),
                fmt::fixed(avg, 0).into(),
                if p > 0 { fmt::fixed(avg / p as f64, 1).into() } else { "-".into() },
                fmt::group(flushes).into(),
            ]);
        }
        doc.table(table.note(
            "pages: entries flushed (full: the whole address space); avg cycles: the flush instructions and flush_tlb_func()'s own cost, per flush; samples: flushes of that size. Compare with the study's calibration table (cycles per flush and per page by size): the model predicts it, it is not fitted to it.",
        ));
    }
    // One category per size seen under any policy, in the same order.
    let mut all: BTreeMap<i64, ()> = BTreeMap::new();
    for (_, by) in &by_policy {
        for p in by.keys() {
            all.insert(*p, ());
        }
    }
    let sizes: Vec<i64> = {
        let m: BTreeMap<i64, (u64, u64)> = all.keys().map(|p| (*p, (0, 0))).collect();
        order(&m)
    };
    if sizes.is_empty() {
        return;
    }
    let categories: Vec<String> = sizes.iter().map(|p| label(*p)).collect();
    let mut share = BarChart::new(
        "pages flushed per flush_tlb_func() call",
        &format!("% of flushes ({runs})"),
        categories,
    );
    share.always_legend = true;
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    let mut share_summary = Vec::new();
    for (name, by) in &by_policy {
        let total = by.values().map(|e| e.0).fold(0u64, u64::saturating_add);
        let bars = sizes
            .iter()
            .map(|p| {
                let (flushes, _) = by.get(p).copied()?;
                let pct = flushes as f64 * 100.0 / total.max(1) as f64;
                lo = lo.min(pct);
                hi = hi.max(pct);
                Some(Bar::new(pct))
            })
            .collect();
        let first = order(by).first().map(|p| {
            format!(
                "{name}: {:.2}% of flushes are {} page(s)",
                by[p].0 as f64 * 100.0 / total.max(1) as f64,
                label(*p)
            )
        });
        share_summary.extend(first);
        share = share.series(BarSeries::new(*name, bars));
    }
    if lo > 0.0 && hi / lo > 50.0 {
        share = share.y_scale(Scale::Log10);
    }
    let caption = format!(
        "Flush-size histogram: the share of flush_tlb_func() flushes of each size, per policy, over {runs}{} (no spread: the runs are pooled, as in the study's table).",
        share.scale_note()
    );
    doc.push(figure(ctx, || share.svg(), caption, share_summary.join("; ")));

    let partial: Vec<i64> = sizes.iter().copied().filter(|p| *p > 0).collect();
    if partial.is_empty() {
        return;
    }
    let mut per_page = BarChart::new(
        "pages flushed per flush_tlb_func() call",
        "cycles per page flushed",
        partial.iter().map(|p| p.to_string()).collect(),
    );
    per_page.always_legend = true;
    let mut summary = Vec::new();
    for (name, by) in &by_policy {
        let bars = partial
            .iter()
            .map(|p| {
                let (flushes, cycles) = by.get(p).copied()?;
                let v = cycles as f64 / flushes as f64 / *p as f64;
                summary.push(format!("{name} {p} page(s) {}", fmt::fixed(v, 1)));
                Some(Bar::new(v))
            })
            .collect();
        per_page = per_page.series(BarSeries::new(*name, bars));
    }
    let caption = format!(
        "Average cycles per page of a partial flush (the flush instructions and flush_tlb_func()'s own cost, divided by the pages flushed), by flush size, per policy, over {runs}; full flushes have no per-page cost and are left out."
    );
    doc.push(figure(
        ctx,
        || per_page.svg(),
        caption,
        format!("cycles per page: {}", summary.join("; ")),
    ));
}

/// `tlb:tlb_flush` events per run by reason and policy: the tracepoint's own vocabulary.
fn tlb_flush_table(part: &Part, s: &Study) -> Option<Table> {
    let rows: Vec<(String, &PolicyResult)> =
        part.policies.iter().map(|p| (p.policy.name.clone(), p)).collect();
    tlb_flush_rows("policy", &rows, s)
}

/// The table of [`tlb_flush_table`] for any rows of policy results.
fn tlb_flush_rows(first: &str, rows: &[(String, &PolicyResult)], s: &Study) -> Option<Table> {
    let mut reasons: Vec<String> = REASONS.iter().map(|r| r.to_string()).collect();
    for (_, pol) in rows {
        for run in &pol.runs {
            for k in run.tlb_flush.keys() {
                if !reasons.contains(k) {
                    reasons.push(k.clone());
                }
            }
        }
    }
    let mean = |pol: &PolicyResult, reason: &str| -> f64 {
        if pol.runs.is_empty() {
            return 0.0;
        }
        pol.runs.iter().map(|r| r.tlb_flush.get(reason).copied().unwrap_or(0) as f64).sum::<f64>()
            / pol.runs.len() as f64
    };
    reasons.retain(|r| rows.iter().any(|(_, p)| mean(p, r) > 0.0));
    if reasons.is_empty() {
        return None;
    }
    let mut head = vec![first.to_string()];
    head.extend(reasons.iter().map(|r| match REASONS.iter().position(|k| k == r) {
        Some(i) => format!("{r} ({i})"),
        None => r.clone(),
    }));
    let mut table = Table::new(&head).numeric_from(1);
    for (label, pol) in rows {
        let mut row = vec![label.clone().into()];
        row.extend(reasons.iter().map(|r| fmt::fixed(mean(pol, r), 1).into()));
        table.row(row);
    }
    Some(table.note(format!(
        "tlb:tlb_flush events per run, by reason (the kernel's names and values), {}; reasons with no event in any row are left out.",
        if s.seeds == 1 { "one run".to_string() } else { format!("mean of the {} runs", s.seeds) }
    )))
}

/// A sweep's parts together (S4's madvise-scale over workers, S5's build over CPUs): one table
/// of every point and policy, the first measure against the axis per policy, and each other
/// policy against the baseline along the axis (the ratio, or the slowdown of a speed).
fn sweep_section(doc: &mut Document, ctx: &Ctx, s: &Study, sweep: &Sweep) {
    let parts: Vec<&Part> =
        s.parts.iter().filter(|p| p.sweep.as_ref().is_some_and(|w| w.name == sweep.name)).collect();
    let first = parts[0];
    let axis = sweep.axis;
    let at = |p: &Part| match axis {
        SweepAxis::Workers => p.params.get("tasks").and_then(|v| v.as_u64()).unwrap_or(0),
        SweepAxis::Cpus => p.cpus,
    };
    let points: Vec<String> = parts.iter().map(|p| at(p).to_string()).collect();
    doc.heading(3, format!("{}: {} {}", sweep.name, points.join(", "), axis.label()));
    let (cpus, note) = match axis {
        SweepAxis::Workers => {
            (first.cpus.to_string(), format!(" (tasks = workers: {})", points.join(", ")))
        }
        SweepAxis::Cpus => (points.join(", "), " (tasks = CPUs at each point)".to_string()),
    };
    doc.push(setup_of(first, &cpus, &note));
    let base = &first.policies[0].policy.name;
    let with_ratios = s.seeds >= 2;
    let main = &first.measures[0];
    let slowdown = sweep.relative == Relative::Slowdown && !main.lower_is_better;
    let relative_head = if slowdown {
        format!("slowdown against {base} [{:.0}% CI]", s.confidence * 100.0)
    } else {
        format!("ratio to {base} [{:.0}% CI]", s.confidence * 100.0)
    };
    let mut head = vec![
        axis.label().to_string(),
        "policy".to_string(),
        format!("{}, mean ± sd ({} runs)", main.label, s.seeds),
    ];
    if with_ratios {
        head.push(relative_head);
        head.push("significant".into());
    }
    let mut table = Table::new(&head).numeric_from(2);
    for p in &parts {
        for (q, pol) in p.policies.iter().enumerate() {
            let m = &pol.measures[0];
            let mut row = vec![
                if q == 0 { at(p).to_string() } else { String::new() }.into(),
                pol.policy.name.clone().into(),
                value_cell(m, s.seeds),
            ];
            if with_ratios {
                let (r, sig) = if slowdown { slowdown_cells(m, pol) } else { ratio_cells(m, pol) };
                row.extend([r, sig]);
            }
            table.row(row);
        }
    }
    let how = if slowdown {
        format!("slowdown: how many times as long the same work takes as under {base}, 1 / the geometric mean of the per-seed speed ratios, with its {:.0}% log-t interval inverted", s.confidence * 100.0)
    } else {
        format!(
            "ratio: geometric mean of the per-seed ratios to {base} with its {:.0}% log-t interval",
            s.confidence * 100.0
        )
    };
    doc.table(table.note(format!(
        "{} ({}), mean ± sample standard deviation of {} runs per point; {how} (significant: it excludes 1 and lies wholly outside the ±1% noise band).",
        main.label,
        if main.lower_is_better { "lower is better" } else { "higher is better" },
        s.seeds,
    )));
    // The other measures, in a table of their own so that neither is wider than the page.
    if first.measures.len() > 1 {
        let mut head = vec![axis.label().to_string(), "policy".to_string()];
        head.extend(first.measures[1..].iter().map(|m| m.label.clone()));
        let mut others = Table::new(&head).numeric_from(2);
        for p in &parts {
            for (q, pol) in p.policies.iter().enumerate() {
                let mut row = vec![
                    if q == 0 { at(p).to_string() } else { String::new() }.into(),
                    pol.policy.name.clone().into(),
                ];
                row.extend(pol.measures[1..].iter().map(|m| value_cell(m, s.seeds)));
                others.row(row);
            }
        }
        let what: Vec<String> =
            first.measures[1..].iter().map(|m| format!("{}: {}", m.label, m.what)).collect();
        doc.table(others.note(format!(
            "Mean ± sample standard deviation of {} runs per point. {}.",
            s.seeds,
            what.join("; ")
        )));
    }
    // The first measure against the axis, one line per policy.
    let mut chart = LineChart::new(axis.label(), &main.label).x_scale(Scale::Log2);
    let mut summary = Vec::new();
    for (q, pol) in first.policies.iter().enumerate() {
        let points: Vec<Point> = parts
            .iter()
            .filter_map(|p| {
                let m = &p.policies.get(q)?.measures[0];
                let mean = m.mean?;
                let sd = m.stddev.unwrap_or(0.0);
                summary.push(format!(
                    "{} at {}: {}",
                    pol.policy.name,
                    at(p),
                    fmt::mean_sd(mean, sd)
                ));
                let pt = Point::new(at(p) as f64, mean);
                Some(if with_ratios { pt.interval(mean - sd, mean + sd) } else { pt })
            })
            .collect();
        chart = chart.series(LineSeries::new(&pol.policy.name, points));
    }
    doc.push(figure(
        ctx,
        || chart.svg(),
        format!(
            "{} against {} (log₂ axis), per policy: point = mean of {} runs, whisker = ± 1 sample standard deviation ({}).",
            main.label,
            axis.label(),
            s.seeds,
            if main.lower_is_better { "lower is better" } else { "higher is better" }
        ),
        summary.join("; "),
    ));
    if with_ratios && first.policies.len() > 1 {
        let y_label = if slowdown {
            format!("slowdown against {base}, ×")
        } else {
            format!("{} ratio to {base}", main.label)
        };
        let mut chart = LineChart::new(axis.label(), &y_label).x_scale(Scale::Log2);
        chart.y_from_zero = false;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        let mut summary = Vec::new();
        for (q, pol) in first.policies.iter().enumerate().skip(1) {
            let points: Vec<Point> = parts
                .iter()
                .filter_map(|p| {
                    let m = &p.policies.get(q)?.measures[0];
                    let r = m.ratio.as_ref()?;
                    let sig = m.significant == Some(true);
                    let (mean, low, high) = if slowdown {
                        if r.ratios.mean <= 0.0 || r.ci.low <= 0.0 {
                            return None;
                        }
                        (1.0 / r.ratios.mean, 1.0 / r.ci.high, 1.0 / r.ci.low)
                    } else {
                        (r.ratios.mean, r.ci.low, r.ci.high)
                    };
                    lo = lo.min(low);
                    hi = hi.max(high);
                    summary.push(format!(
                        "{} at {}: {}",
                        pol.policy.name,
                        at(p),
                        fmt::ratio_ci(mean, low, high, sig)
                    ));
                    Some(Point::new(at(p) as f64, mean).interval(low, high))
                })
                .collect();
            chart = chart.series(LineSeries::new(&pol.policy.name, points).color(q));
        }
        // A 6× slowdown beside a 1.01× one would flatten the small one on a linear axis.
        if lo > 0.0 && hi / lo > 4.0 {
            chart = chart.y_scale(Scale::Log10);
        }
        let caption = if slowdown {
            format!(
                "How many times as long the same work takes as under {base}, against {} (log₂ axis{}): point = 1 / the geometric mean of the per-seed speed ratios, whisker = its {:.0}% log-t interval inverted; 1 is no slowdown.",
                axis.label(),
                if chart.y_scale == Scale::Log10 { "; log₁₀ y axis" } else { "" },
                s.confidence * 100.0
            )
        } else {
            format!(
                "{} relative to {base} against {} (log₂ axis{}): point = geometric mean of the per-seed ratios, whisker = its {:.0}% log-t interval; above 1 is more of the measure.",
                main.label,
                axis.label(),
                if chart.y_scale == Scale::Log10 { "; log₁₀ y axis" } else { "" },
                s.confidence * 100.0
            )
        };
        doc.push(figure(ctx, || chart.svg(), caption, summary.join("; ")));
    }
    let rows: Vec<(String, &PolicyResult)> = parts
        .iter()
        .flat_map(|p| {
            p.policies
                .iter()
                .map(move |pol| (format!("{} {}, {}", at(p), axis.label(), pol.policy.name), pol))
        })
        .collect();
    if let Some(table) = tlb_flush_rows(&format!("{}, policy", axis.label()), &rows, s) {
        doc.table(table);
    }
}

/// A speed's slowdown against the baseline: 1 / the ratio, its interval inverted.
fn slowdown_cells(m: &MeasureResult, pol: &PolicyResult) -> (crate::doc::Cell, crate::doc::Cell) {
    match (&m.ratio, m.significant) {
        (Some(r), Some(sig)) if !pol.baseline && r.ratios.mean > 0.0 && r.ci.low > 0.0 => {
            let text = fmt::ratio_ci(1.0 / r.ratios.mean, 1.0 / r.ci.high, 1.0 / r.ci.low, sig);
            let tone = if sig { Tone::Significant } else { Tone::Plain };
            (cell(text, tone), cell(if sig { "yes" } else { "no" }, tone))
        }
        _ => ratio_cells(m, pol),
    }
}

fn policies(doc: &mut Document, s: &Study) {
    doc.heading(3, format!("{}: policies and the kernels they mirror", s.short.to_uppercase()));
    let mut seen: Vec<&str> = Vec::new();
    let mut table = Table::new(&["policy", "mirrors", "baseline of"]);
    for part in &s.parts {
        for pol in &part.policies {
            if seen.contains(&pol.policy.name.as_str()) {
                continue;
            }
            seen.push(&pol.policy.name);
            let baseline_of: Vec<&str> = s
                .parts
                .iter()
                .filter(|p| p.policies[0].policy.name == pol.policy.name)
                .map(|p| p.label.as_str())
                .collect();
            table.row(vec![
                pol.policy.name.clone().into(),
                pol.policy.mirrors.clone().into(),
                if baseline_of.is_empty() { "-".to_string() } else { baseline_of.join("; ") }
                    .into(),
            ]);
        }
    }
    doc.table(table);
}
