//! Text output: a header that says what every number is, then each study in its own format
//! (see [`Layout`]), then the policies and what they mirror.

use crate::measure::Measure;
use crate::report::{
    Answer, EffectStatus, Explanation, MeasureResult, PartReport, PolicyReport, StudyReport,
};
use crate::study::{Layout, Relative, Size, Sweep, SweepAxis, STUDIES};
use crate::text::{count, group, num, wrap, Table};
use std::collections::BTreeMap;
use std::fmt::Write;
use tlblab_kernel::{workloads, Mechanism};
use tlblab_stats::RatioToBaseline;

/// Width prose is wrapped at.
const WIDTH: usize = 100;

/// `tlblab sim study list`.
pub fn list() -> String {
    let mut out = String::from(
        "Built-in studies (`tlblab sim study NAME`, NAME as below or S1…S10; `all` runs them all):\n",
    );
    for s in STUDIES {
        let parts = s.parts(Size::Full);
        let _ = write!(out, "\n{} ({}): {}\n", s.name, s.short.to_uppercase(), s.title);
        out += &wrap("mirrors:   ", s.mirrors, 2, WIDTH);
        let mut machines: Vec<String> = Vec::new();
        let mut scenarios: Vec<String> = Vec::new();
        let mut policies: Vec<&str> = Vec::new();
        for p in &parts {
            let m = format!("{} × {} CPUs", p.machine, p.cpus);
            if !machines.contains(&m) {
                machines.push(m);
            }
            let sc = match workloads::scenario(p.scenario) {
                Ok(_) => p.scenario.to_string(),
                Err(_) => format!("{} (not in this build of the kernel model)", p.scenario),
            };
            if !scenarios.contains(&sc) {
                scenarios.push(sc);
            }
            for q in &p.policies {
                if !policies.contains(q) {
                    policies.push(q);
                }
            }
        }
        out += &wrap("machines:  ", &machines.join(", "), 2, WIDTH);
        out += &wrap("scenarios: ", &scenarios.join(", "), 2, WIDTH);
        out += &wrap(
            "policies:  ",
            &format!("{} (the first is the baseline)", policies.join(", ")),
            2,
            WIDTH,
        );
        out += &wrap("seeds:     ", s.seeds_why, 2, WIDTH);
    }
    out
}

/// One study's results as text.
pub fn study(r: &StudyReport) -> String {
    let mut out = header(r);
    let mut sweeps_done = Vec::new();
    for part in &r.parts {
        // A sweep's points are shown together, where its first point is.
        if let Some(sweep) = part.sweep {
            if !sweeps_done.contains(&sweep.name) {
                sweeps_done.push(sweep.name);
                out += &sweep_tables(r, sweep);
            }
            continue;
        }
        match r.layout {
            Layout::Pti => {
                out += &part_header(part);
                out += &measure_table(part, r);
                out += &flush_histograms(part, r);
            }
            Layout::La57 => {
                out += &part_header(part);
                out += &perf_stat(part, r);
                out += &measure_table(part, r);
            }
            Layout::FlushInfo if part.scenario.name == "rt-latency" => {
                out += &part_header(part);
                out += &measure_table(part, r);
                out.push('\n');
                out += &wrap(
                    "",
                    "A preemption-disabled section on the initiator CPU bounds the scheduling latency of a high-priority task woken there: it cannot run before the section ends (then it still needs the wake-up and the context switch). With flush_tlb_info per CPU the section lasts until the last acknowledgement, so an interrupts-off burst on a remote CPU lengthens it; on the stack the wait is preemptible.",
                    2,
                    WIDTH,
                );
            }
            Layout::Pcid
            | Layout::FlushInfo
            | Layout::Xpfo
            | Layout::LazyCpumask
            | Layout::PvFlush
            | Layout::Broadcast => {
                out += &part_header(part);
                out += &measure_table(part, r);
            }
            Layout::Deferred => {
                out += &part_header(part);
                out += &side_by_side(part);
                out.push('\n');
                out += &measure_table(part, r);
            }
            Layout::Ceiling => {
                out += &part_header(part);
                out += &ceiling_table(part, r);
            }
        }
    }
    if let Some(note) = layout_note(r.layout) {
        out.push('\n');
        out += &wrap("", &note, 2, WIDTH);
    }
    if r.parts.iter().any(|p| p.explanation.is_some()) {
        out += &explanations(r);
    }
    out += &footer(r);
    out
}

/// The note a study's layout prints after its parts: what its own measures mean.
fn layout_note(layout: Layout) -> Option<String> {
    let note = match layout {
        Layout::Broadcast => "Loops/s: will-it-scale's total, pages per second over all tasks. Invalidation % CPU: the share of every CPU's busy time spent on TLB invalidation (initiators in flush_tlb_mm_range() including their waits, flush IPI handlers, RAR actions on their targets); lock wait % CPU: the share spent waiting for lruvec->lru_lock and zone->lock. A broadcast's gain at scale is bounded by what else serialises the path: where the invalidation share falls and the lock-wait share rises, the contention has moved to the LRU lock. +lru-drain is the pre-6.15 zap path (lru_add_drain() at every zap); INVLPGB and RAR act only once the mm has a global ASID (4 or more active CPUs, sampled on jiffies), so 1 to 3 tasks run as under IPIs.".to_string(),
        Layout::Deferred => format!("Checker: each seed also runs {n} perturbed schedules with the safety checker on (IPIs up to 20,000 cycles late, a disturbance every 200,000 cycles per CPU, as `tlblab sim check` runs them); the verdict is the checker's over all of them: pass when no stale translation was used after the kernel promised it gone (a use inside a declared deferral's window is exposure, not a violation). Exposure windows: per deferred operation and exposed CPU, from the operation's completion to that CPU's catch-up (LATR: its next tick or context switch; migrc and LUF: the reuse of a page, or their other catch-ups), over the checked schedules; windows still open at the end are left out. A policy that declares no deferral has none. Replay a part's schedules with `tlblab sim check` and the part's settings, --schedules {n}×seeds.", n = crate::measure::CHECK_SCHEDULES_PER_SEED),
        Layout::Xpfo => "Exposure window: for each page taken out of the kernel direct map, the time until the last CPU that could still use its stale kernel translation has flushed it (xpfo-sync: the last IPI handler's flush; xpfo-deferred: the last other CPU's full flush at its next mm switch). Censored: windows still open when the run ended, not in the percentiles. no-xpfo never unmaps, so a page's kernel mapping stays usable for its whole user lifetime.".to_string(),
        Layout::LazyCpumask => "cpumask line transfers: moves of an mm's mm_cpumask cache line between CPUs. Under 6.13 every switch between two mms clears this CPU's bit in the old mask and sets it in the new one (locked writes), so a mask whose mm runs on several CPUs moves with every switch; from 6.14 a switch only tests the bit (a shared read) and sets it if clear, and a stale bit is dropped by the first flush IPI that finds the CPU elsewhere (or, once a second per mm, by the trimming flush).".to_string(),
        Layout::PvFlush => "PV flush against native IPIs: with dedicated pCPUs (overcommit 1×) no vCPU is ever seen preempted, so kvm_flush_tlb_multi() sends the same IPIs as native_flush_tlb_multi() and the two policies agree. Above 1× the host preempts vCPUs for other threads' slices (steal): a native IPI to a preempted vCPU is handled, and acknowledged, only when the host runs it again, and the initiator waits that long; PV flush marks it instead (PV flushes left to host) and the host flushes its whole TLB at its next entry. Without posted interrupts a running target also exits to have each IPI injected.".to_string(),
        Layout::Pti | Layout::Pcid | Layout::La57 | Layout::FlushInfo | Layout::Ceiling => {
            return None
        }
    };
    Some(note)
}

fn header(r: &StudyReport) -> String {
    let mut out = format!("tlblab sim study {}: {}\n", r.study, r.title);
    out += &wrap("mirrors: ", r.mirrors, 2, WIDTH);
    if r.quick {
        out += &wrap(
            "",
            "QUICK RUN (--quick): every part is shrunk for tests and smoke runs (see each part's params; its why line describes the full study's settings). These are not the study's figures.",
            2,
            WIDTH,
        );
    }
    if !r.without.is_empty() {
        let names: Vec<&str> = r.without.iter().map(|m| m.name()).collect();
        let _ = writeln!(out, "  mechanisms off in every run (--without): {}", names.join(", "));
    }
    let k = r.seeds;
    let seeds = if k == 1 {
        format!("seed {}", r.first_seed)
    } else {
        format!("seeds {}–{}", r.first_seed, r.first_seed + k - 1)
    };
    let mut what = if k == 1 {
        format!("1 run per policy, {seeds} (the study's default: {}). Every figure is that run's value. ", r.seeds_why)
    } else {
        format!(
            "{k} runs per policy, {seeds} (the study's default: {}). Every figure is the mean ± sample standard deviation over the {k} runs unless it says otherwise. ",
            r.seeds_why
        )
    };
    if k >= 2 {
        let _ = write!(
            what,
            "Ratios are to each part's first policy (the baseline): the geometric mean of the per-seed ratios, paired by seed, with its {:.0}% log-t confidence interval. Verdict: a change (improved or regressed) only when the interval excludes 1 and lies wholly outside the {} noise band (--noise); otherwise within noise or not significant. The model is deterministic: seeds change only timer phases and random draws, so tight intervals are expected.",
            r.confidence * 100.0,
            tlblab_stats::band(r.noise)
        );
    } else {
        what += "One seed: no interval, so no ratio or verdict is shown (--seeds 2 or more).";
    }
    out += &wrap("", &what, 2, WIDTH);
    if k == 2 {
        out += &wrap(
            "warning: ",
            "few seeds (2): each interval has 1 degree of freedom and is wide; use --seeds 3 or more",
            2,
            WIDTH,
        );
    }
    for n in &r.not_run {
        out += &wrap(
            "NOT RUN: ",
            &format!("part {:?}: {} (the study's other parts ran)", n.label, n.reason),
            2,
            WIDTH,
        );
    }
    out
}

fn part_header(p: &PartReport) -> String {
    let mut out = format!(
        "\n== {}: scenario {} on {} ({}), {} CPUs ==\n",
        p.label, p.scenario.name, p.machine.name, p.machine.description, p.cpus
    );
    out += &wrap("what:     ", p.scenario.description, 2, WIDTH);
    out += &wrap("params:   ", &params(p), 2, WIDTH);
    if let Some(ms) = p.window_ms {
        out += &wrap(
            "window:   ",
            &format!("each run is a window of {} ms of simulated time (the scenario's own unless params set it): its elapsed time is the window, so the speed to compare is the {}", group(ms), p.scenario.unit),
            2,
            WIDTH,
        );
    }
    out += &wrap("why:      ", p.settings_why, 2, WIDTH);
    out += &wrap("machine:  ", p.machine.why, 2, WIDTH);
    out.push('\n');
    out
}

/// The part's parameters as `name value` pairs (every field of `Params`, as serialised).
fn params(p: &PartReport) -> String {
    let value = serde_json::to_value(&p.params).unwrap_or_default();
    let Some(map) = value.as_object() else {
        return String::new();
    };
    map.iter()
        .map(|(k, v)| match v.as_u64() {
            Some(n) => format!("{k} {}", group(n)),
            None => format!("{k} {v}"),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// `mean ± sd` of a measure, or why it has none.
fn mean_sd(m: &MeasureResult, decimals: usize) -> String {
    match (m.mean, m.stddev) {
        (Some(mean), Some(sd)) if decimals == 0 => format!("{} ± {}", count(mean), count(sd)),
        (Some(mean), Some(sd)) => format!("{} ± {}", num(mean, decimals), num(sd, decimals)),
        _ => m.note.clone().unwrap_or_else(|| "-".into()),
    }
}

/// The value of a one-seed run (no spread to show), or why it has none.
fn single(m: &MeasureResult, decimals: usize) -> String {
    match m.mean {
        Some(v) if decimals == 0 => count(v),
        Some(v) => num(v, decimals),
        None => m.note.clone().unwrap_or_else(|| "-".into()),
    }
}

/// The ratio with enough decimals that an interval that excludes 1 does not print as touching it.
fn ratio_text(r: &RatioToBaseline) -> String {
    let significant = !r.ci.contains(1.0);
    let show = |d: usize| format!("{:.d$} [{:.d$}, {:.d$}]", r.ci.point, r.ci.low, r.ci.high);
    for d in 3..=6 {
        let one = format!("{:.d$}", 1.0);
        let (lo, hi) = (format!("{:.d$}", r.ci.low), format!("{:.d$}", r.ci.high));
        if !significant || (lo != one && hi != one) {
            return show(d);
        }
    }
    show(6)
}

/// Ratio and verdict cells of a policy's measure.
fn ratio_cells(
    m: &MeasureResult,
    baseline: bool,
    lower_is_better: bool,
    noise: f64,
) -> (String, String) {
    if baseline {
        return ("baseline".into(), "-".into());
    }
    match (&m.ratio, m.effect) {
        (Some(r), Some(effect)) => {
            (ratio_text(r), tlblab_stats::Verdict::of(effect, lower_is_better).text(noise))
        }
        _ if m.mean.is_none() => ("-".into(), "-".into()),
        _ => (format!("({})", m.note.as_deref().unwrap_or("no ratio")), "-".into()),
    }
}

/// S8: one row per policy, the mean of every measure side by side, and the checker's verdict
/// (pass, or the violations found over the checked schedules).
fn side_by_side(p: &PartReport) -> String {
    let labels: Vec<String> =
        p.measures.iter().map(|m| crate::text::measure_label(m.label, m.lower_is_better)).collect();
    let mut header = vec!["policy"];
    header.extend(labels.iter().map(String::as_str));
    let checked = p.measures.iter().position(|m| m.measure == Measure::CheckViolations);
    if checked.is_some() {
        header.push("checker");
    }
    let mut t = Table::new(&header);
    for pol in &p.policies {
        let mut row = vec![pol.policy.name.clone()];
        for (info, m) in p.measures.iter().zip(&pol.measures) {
            row.push(single(m, info.decimals));
        }
        if let Some(i) = checked {
            let total: f64 = pol.measures[i].values.iter().sum();
            row.push(if total == 0.0 { "pass".into() } else { format!("FAIL ({})", count(total)) });
        }
        t.row(row);
    }
    t.render(2)
}

/// One row per measure and policy: mean ± sd, ratio to the baseline [95% CI], verdict.
fn measure_table(p: &PartReport, r: &StudyReport) -> String {
    let base = &p.policies[0].policy.name;
    let ratio_head = format!("ratio to {base} [{:.0}% CI]", r.confidence * 100.0);
    // With one seed there is no ratio to show (the header says so).
    let with_ratios = r.seeds >= 2;
    let mut header = vec!["measure", "policy", if with_ratios { "mean ± sd" } else { "value" }];
    if with_ratios {
        header.extend([ratio_head.as_str(), "verdict"]);
    }
    let mut t = Table::new(&header);
    for (i, info) in p.measures.iter().enumerate() {
        for (q, pol) in p.policies.iter().enumerate() {
            let m = &pol.measures[i];
            let label = if q == 0 {
                crate::text::measure_label(info.label, info.lower_is_better)
            } else {
                String::new()
            };
            let value =
                if with_ratios { mean_sd(m, info.decimals) } else { single(m, info.decimals) };
            let mut row = vec![label, pol.policy.name.clone(), value];
            if with_ratios {
                let (ratio, sig) = ratio_cells(m, pol.baseline, info.lower_is_better, r.noise);
                row.extend([ratio, sig]);
            }
            t.row(row);
        }
    }
    t.render(2)
}

/// S10: one row per ceiling (the headline's mean ± sd, its ratio to the baseline ceiling and
/// verdict, the other measures' means), then the best ceiling.
fn ceiling_table(p: &PartReport, r: &StudyReport) -> String {
    let Some(curve) = &p.ceiling_curve else {
        return measure_table(p, r);
    };
    let head = &p.measures[0];
    let ratio_head = format!("ratio to {} [{:.0}% CI]", curve.baseline, r.confidence * 100.0);
    let head_label = crate::text::measure_label(head.label, head.lower_is_better);
    let mut header = vec!["ceiling", head_label.as_str(), ratio_head.as_str(), "verdict"];
    header.extend(p.measures[1..].iter().map(|m| m.label));
    let mut t = Table::new(&header);
    for point in &curve.points {
        let Some(pol) = p.policies.iter().find(|q| q.policy.name == point.policy) else {
            continue;
        };
        let m = &pol.measures[0];
        let (ratio, verdict) = ratio_cells(m, pol.baseline, head.lower_is_better, r.noise);
        let mut row = vec![point.ceiling.to_string(), mean_sd(m, head.decimals), ratio, verdict];
        row.extend(
            p.measures[1..].iter().zip(&pol.measures[1..]).map(|(i, m)| single(m, i.decimals)),
        );
        t.row(row);
    }
    let mut out = t.render(2);
    let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(", ");
    if let Some(best) = curve.best {
        out += &wrap(
            "",
            &format!(
                "best ceiling: {best} (best mean {}); best per seed: {}; no different from the best (the best's interval along the ceiling): {}",
                head.label,
                list(&curve.best_per_seed),
                list(&curve.tied_with_best)
            ),
            2,
            WIDTH,
        );
    }
    out
}

/// S1: per policy, the flushes of `flush_tlb_func()` by size over every seed.
fn flush_histograms(p: &PartReport, r: &StudyReport) -> String {
    let mut out = String::new();
    for pol in &p.policies {
        let mut by: BTreeMap<i64, (u64, u64)> = BTreeMap::new();
        for run in &pol.runs {
            for f in &run.flush_sizes {
                let e = by.entry(f.pages).or_default();
                e.0 += f.flushes;
                e.1 += f.cycles;
            }
        }
        let _ = write!(
            out,
            "\n  flush sizes under {}: flush_tlb_func() flushes of {}\n",
            pol.policy.name,
            if r.seeds == 1 {
                "the run".to_string()
            } else {
                format!("all {} runs together", r.seeds)
            }
        );
        let total: u64 = by.values().map(|e| e.0).sum();
        if total == 0 {
            out += "    no flush\n";
            continue;
        }
        let mut t = Table::new(&[
            "pages",
            "% of flushes",
            "cumulative %",
            "avg cycles",
            "cycles/page",
            "samples",
        ])
        .right(&[0]);
        // Partial flushes by size, then full flushes (-1) last.
        let rows = by.iter().filter(|(&p, _)| p >= 0).chain(by.iter().filter(|(&p, _)| p < 0));
        let mut cumulative = 0;
        for (&pages, &(flushes, cycles)) in rows {
            cumulative += flushes;
            let avg = cycles as f64 / flushes as f64;
            t.row(vec![
                if pages < 0 { "full".into() } else { pages.to_string() },
                format!("{:.2}%", flushes as f64 * 100.0 / total as f64),
                format!("{:.2}%", cumulative as f64 * 100.0 / total as f64),
                num(avg, 0),
                if pages > 0 { num(avg / pages as f64, 1) } else { "-".into() },
                group(flushes),
            ]);
        }
        out += &t.render(4);
    }
    out += &wrap(
        "",
        "pages: entries flushed (full: the whole address space); avg cycles: the flush instructions and flush_tlb_func()'s own cost, per flush; samples: flushes of that size.",
        2,
        WIDTH,
    );
    out
}

/// S3: a `perf stat -r K` block per policy.
fn perf_stat(p: &PartReport, r: &StudyReport) -> String {
    fn find<'a>(p: &PartReport, pol: &'a PolicyReport, m: Measure) -> Option<&'a MeasureResult> {
        p.measures.iter().position(|i| i.measure == m).map(|i| &pol.measures[i])
    }
    let mut out = String::new();
    let rel_err = |m: &MeasureResult| match (m.mean, m.sem) {
        (Some(mean), Some(sem)) if mean != 0.0 => format!("( +- {:>5.2}% )", sem / mean * 100.0),
        _ => String::new(),
    };
    for pol in &p.policies {
        let _ = write!(
            out,
            "  Performance counter stats for '{}' under {} ({} run{}):\n\n",
            p.scenario.name,
            pol.policy.name,
            r.seeds,
            if r.seeds == 1 { "" } else { "s" }
        );
        let mut lines: Vec<(String, &str, String, String)> = Vec::new();
        let elapsed = if pol.runs.is_empty() || p.machine.clock_mhz == 0 {
            None
        } else {
            let cycles: u64 = pol.runs.iter().map(|run| run.elapsed_cycles).sum();
            Some(cycles as f64 / pol.runs.len() as f64 / p.machine.clock_mhz as f64 / 1e6)
        };
        if let Some(m) = find(p, pol, Measure::TaskClockMs) {
            let comment = match (m.mean, elapsed) {
                (Some(ms), Some(s)) if s > 0.0 => format!("# {:>8.3} CPUs utilized", ms / 1e3 / s),
                _ => String::new(),
            };
            lines.push((
                value_or(m, |v| format!("{} msec", num(v, 2))),
                "task-clock",
                comment,
                rel_err(m),
            ));
        }
        if let Some(m) = find(p, pol, Measure::PageFaults) {
            lines.push((value_or(m, count), "page-faults", String::new(), rel_err(m)));
        }
        if let Some(m) = find(p, pol, Measure::Cycles) {
            let ghz = p.machine.clock_mhz as f64 / 1e3;
            lines.push((value_or(m, count), "cycles", format!("# {ghz:>8.3} GHz"), rel_err(m)));
        }
        for name in ["instructions", "branches", "branch-misses"] {
            lines.push(("<not modelled>".into(), name, String::new(), String::new()));
        }
        if let Some(m) = find(p, pol, Measure::La57Checks) {
            lines.push((
                value_or(m, count),
                "la57 run-time checks",
                "# one load + one branch each".into(),
                rel_err(m),
            ));
        }
        if let Some(m) = find(p, pol, Measure::ScenarioMetric) {
            let i = p.measures.iter().position(|i| i.measure == Measure::ScenarioMetric);
            let (label, decimals) =
                i.map_or(("", 3), |i| (p.measures[i].label, p.measures[i].decimals));
            lines.push((
                value_or(m, |v| num(v, decimals)),
                label,
                "# the scenario's own metric".into(),
                rel_err(m),
            ));
        }
        if let Some(m) = find(p, pol, Measure::DtlbWalks) {
            lines.push((value_or(m, count), "dTLB walks", String::new(), rel_err(m)));
        }
        for (value, name, comment, err) in lines {
            let line = format!("  {value:>22}      {name:<22} {comment:<28} {err}");
            out += line.trim_end();
            out.push('\n');
        }
        if let (Some(ms), Some(s)) = (p.window_ms, elapsed) {
            let _ = writeln!(
                out,
                "\n  {s:>14.6} seconds time elapsed (a window of {} ms of the build: compare the {})",
                group(ms),
                p.scenario.unit
            );
        }
        if let Some(m) = find(p, pol, Measure::ElapsedS) {
            match (m.mean, m.sem) {
                (Some(mean), Some(sem)) => {
                    let _ = writeln!(
                        out,
                        "\n  {:>14.6} +- {:.6} seconds time elapsed  ( +- {:>5.2}% )",
                        mean,
                        sem,
                        if mean > 0.0 { sem / mean * 100.0 } else { 0.0 }
                    );
                }
                _ => {
                    let _ = writeln!(out, "\n  seconds time elapsed: {}", mean_sd(m, 6));
                }
            }
        }
        out.push('\n');
    }
    out += &wrap(
        "",
        "Values are means over the runs; ( +- x% ) is the relative standard error (stddev / √runs / mean) and elapsed is ± its standard error, as perf prints them. task-clock and cycles are the user + system time of the user tasks; elapsed is the simulated time of the window. <not modelled>: the model does not count instructions or branches (perf prints <not supported> for events a CPU lacks). Ratios to the baseline, per measure:",
        2,
        WIDTH,
    );
    out.push('\n');
    out
}

/// A measure's mean formatted by `f`, or `<not reported>` with nothing to say.
fn value_or(m: &MeasureResult, f: impl Fn(f64) -> String) -> String {
    match m.mean {
        Some(v) => f(v),
        None => "<not reported>".into(),
    }
}

/// A sweep's parts as mmtests-style tables, one per measure: the Amean per point (workers or
/// CPUs) and policy, with the change (or the slowdown) against the baseline.
fn sweep_tables(r: &StudyReport, sweep: Sweep) -> String {
    let parts: Vec<&PartReport> =
        r.parts.iter().filter(|p| p.sweep.is_some_and(|s| s.name == sweep.name)).collect();
    let first = parts[0];
    let axis = sweep.axis;
    let points: Vec<String> =
        parts.iter().map(|p| axis.value(p.cpus, &p.params).to_string()).collect();
    let cpus = match axis {
        SweepAxis::Workers => format!("{} CPUs", first.cpus),
        SweepAxis::Cpus => format!("{} CPUs", points.join(", ")),
    };
    let mut out = format!(
        "\n== {}: scenario {} on {} ({}), {cpus} ==\n",
        sweep.name, first.scenario.name, first.machine.name, first.machine.description
    );
    out += &wrap("what:     ", first.scenario.description, 2, WIDTH);
    let varies = match axis {
        SweepAxis::Workers => format!("tasks = workers: {}", points.join(", ")),
        SweepAxis::Cpus => format!("tasks = CPUs: {}", points.join(", ")),
    };
    out += &wrap("params:   ", &format!("{} ({varies})", params(first)), 2, WIDTH);
    if let Some(ms) = first.window_ms {
        out += &wrap(
            "window:   ",
            &format!("each run is a window of {} ms of simulated time", group(ms)),
            2,
            WIDTH,
        );
    }
    out += &wrap("why:      ", first.settings_why, 2, WIDTH);
    out += &wrap("machine:  ", first.machine.why, 2, WIDTH);
    let base = &first.policies[0].policy.name;
    let names: Vec<String> = first.policies.iter().map(|p| p.policy.name.clone()).collect();
    for (i, info) in first.measures.iter().enumerate() {
        let slowdown = i == 0 && sweep.relative == Relative::Slowdown && !info.lower_is_better;
        let how = if slowdown {
            format!("(×n) is how many times as long the same work takes as under {base}: 1 / the geometric mean of the per-seed speed ratios")
        } else {
            format!("(%) is the change against {base} (geometric mean of the per-seed ratios)")
        };
        out.push('\n');
        out += &wrap(
            "",
            &format!(
                "{}, Amean over {} runs ({}); {how}; *…* marks a change, higher or lower than {base} (the {:.0}% CI of the paired ratio excludes 1 and lies wholly outside the {} noise band){}.",
                info.label,
                r.seeds,
                if info.lower_is_better { "lower is better" } else { "higher is better" },
                r.confidence * 100.0,
                tlblab_stats::band(r.noise),
                if r.seeds < 2 { "; with one seed no change can be tested" } else { "" }
            ),
            2,
            WIDTH,
        );
        out.push('\n');
        let mut header = vec!["", ""];
        header.extend(names.iter().map(String::as_str));
        let columns: Vec<usize> = (2..header.len()).collect();
        let mut t = Table::new(&header).right(&columns);
        for (p, point) in parts.iter().zip(&points) {
            let mut row =
                vec!["Amean".to_string(), format!("{}-{point}", axis.label().to_lowercase())];
            row.extend(
                p.policies
                    .iter()
                    .map(|pol| sweep_cell(&pol.measures[i], pol.baseline, info.decimals, slowdown)),
            );
            t.row(row);
        }
        out += &t.render(2);
    }
    out
}

/// One policy's cell of a sweep table: the mean, then the change in % or the slowdown.
fn sweep_cell(m: &MeasureResult, baseline: bool, decimals: usize, slowdown: bool) -> String {
    let Some(mean) = m.mean else {
        return m.note.clone().unwrap_or_else(|| "-".into());
    };
    let value = num(mean, decimals);
    let ratio = m.ratio.as_ref().filter(|r| r.ci.point > 0.0);
    match (ratio, m.significant) {
        _ if baseline && slowdown => format!("{value} ( ×{:.3})", 1.0),
        _ if baseline => format!("{value} ({:>7.2}%)", 0.0),
        (Some(r), Some(sig)) => {
            let (open, close) = if sig { ('*', '*') } else { ('(', ')') };
            if slowdown {
                format!("{value} {open}×{:.3}{close}", 1.0 / r.ci.point)
            } else {
                format!("{value} {open}{:>7.2}%{close}", (r.ci.point - 1.0) * 100.0)
            }
        }
        _ => format!("{value} (      -)"),
    }
}

/// `--explain`: per part, one table of its headline with each mechanism off in turn, then what
/// each mechanism models.
fn explanations(r: &StudyReport) -> String {
    let all_on = if r.without.is_empty() { "all on" } else { "as run" };
    let mut out = String::from("\n== each mechanism off in turn (--explain) ==\n");
    let mut what = format!(
        "For each part, its headline measure (its first) for each policy with {} and with each mechanism its machine has switched off in turn, on the same seeds.",
        if r.without.is_empty() { "every mechanism on (all on)".to_string() } else { "the mechanisms of the run (as run)".to_string() }
    );
    if r.seeds >= 2 {
        let _ = write!(
            what,
            " off − on: the change of the mean. The ratio is the study's comparison, made as above with the mechanism off for both policies ({:.0}% CI); answer: lower or higher than the baseline (the interval excludes 1) or no difference; changes answer: YES when switching the mechanism off changes it.",
            r.confidence * 100.0
        );
    } else {
        what += " off − on: the change of the value. Comparisons need ≥ 2 seeds: none are shown.";
    }
    what += " not present: the machine has nothing for the mechanism to act on (not run); off (--without): off in every run.";
    out += &wrap("", &what, 2, WIDTH);
    for p in &r.parts {
        if let Some(e) = &p.explanation {
            out += &explanation_table(p, e, r, all_on);
        }
    }
    out.push('\n');
    for &m in Mechanism::ALL {
        out += &wrap(&format!("{}: ", m.name()), m.description(), 2, WIDTH);
    }
    out
}

/// One part's `--explain` table.
fn explanation_table(p: &PartReport, e: &Explanation, r: &StudyReport, all_on: &str) -> String {
    let Some(info) = p.measures.first() else {
        return String::new();
    };
    let mut out = String::from("\n");
    out += &wrap(
        "",
        &format!(
            "{}: {} on {}, {} CPUs; headline: {}",
            p.label,
            p.scenario.name,
            p.machine.name,
            p.cpus,
            crate::text::measure_label(info.label, info.lower_is_better)
        ),
        2,
        WIDTH,
    );
    let with_ratios = r.seeds >= 2;
    let base = &p.policies[0].policy.name;
    let ratio_head = format!("ratio to {base} [{:.0}% CI]", r.confidence * 100.0);
    let mut header =
        vec!["mechanism", "policy", if with_ratios { "mean ± sd" } else { "value" }, "off − on"];
    if with_ratios {
        header.extend([ratio_head.as_str(), "answer", "changes answer"]);
    }
    let mut t = Table::new(&header);
    let value = |m: &MeasureResult| {
        if with_ratios {
            mean_sd(m, info.decimals)
        } else {
            single(m, info.decimals)
        }
    };
    let answer = |a: Option<Answer>| a.map_or("-", Answer::text).to_string();
    for (q, pol) in p.policies.iter().enumerate() {
        let m = &pol.measures[0];
        let mut row = vec![
            if q == 0 { all_on.to_string() } else { String::new() },
            pol.policy.name.clone(),
            value(m),
            String::new(),
        ];
        if with_ratios {
            let (ratio, _) = ratio_cells(m, pol.baseline, true, r.noise);
            let a = if pol.baseline { "-".to_string() } else { answer(Answer::of(m)) };
            row.extend([ratio, a, String::new()]);
        }
        t.row(row);
    }
    for effect in &e.mechanisms {
        let name = effect.mechanism.name().to_string();
        match effect.status {
            EffectStatus::NotPresent => t.row(vec![name, "not present".into()]),
            EffectStatus::Off => t.row(vec![name, "off (--without)".into()]),
            EffectStatus::Ran => {
                for (q, pe) in effect.policies.iter().enumerate() {
                    let change = match (pe.change, pe.change_pct) {
                        (Some(0.0), _) => "0".into(),
                        // The sign is the change's own, even where its digits round to 0.
                        (Some(c), pct) => {
                            let sign = if c > 0.0 { "+" } else { "-" };
                            let pct = pct.map_or(String::new(), |p| format!(" ({p:+.1}%)"));
                            format!("{sign}{}{pct}", num(c.abs(), info.decimals))
                        }
                        (None, _) => "-".into(),
                    };
                    let mut row = vec![
                        if q == 0 { name.clone() } else { String::new() },
                        pe.policy.clone(),
                        value(&pe.off),
                        change,
                    ];
                    if with_ratios {
                        let baseline = q == 0;
                        let (ratio, _) = ratio_cells(&pe.off, baseline, true, r.noise);
                        let (a, changes) = if baseline {
                            ("-".to_string(), String::new())
                        } else {
                            let changes =
                                pe.answer_changes.map_or("-", |c| if c { "YES" } else { "no" });
                            (answer(pe.answer_off), changes.to_string())
                        };
                        row.extend([ratio, a, changes]);
                    }
                    t.row(row);
                }
            }
        }
    }
    out += &t.render(2);
    out
}

fn footer(r: &StudyReport) -> String {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = String::from("\n  policies:\n");
    for part in &r.parts {
        for pol in &part.policies {
            if !seen.contains(&pol.policy.name.as_str()) {
                seen.push(&pol.policy.name);
                out += &wrap(&format!("{}: ", pol.policy.name), &pol.policy.mirrors, 4, WIDTH);
            }
        }
    }
    if !r.inputs.is_empty() {
        out += "\n  inputs (measured here, copied from where, assumed):\n";
        for input in &r.inputs {
            let line = format!("{} — {}", input.what, input.from);
            out += &wrap(&format!("{}: ", input.origin.label()), &line, 4, WIDTH);
        }
    }
    out
}
