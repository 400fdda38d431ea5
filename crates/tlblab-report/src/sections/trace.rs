//! A trace summary (`tlblab.trace.report/1`): where the trace came from, `tlb_flush` events by
//! reason and CPU, sends against receipts, pages per flush, the rate over time, the busiest
//! processes, and the summary's own warnings and notes.

use serde_json::Value;
use tlblab_flushtrace::summary::{GroupCounts, SizeHistogram};
use tlblab_flushtrace::Summary;

use super::{figure, Ctx};
use crate::doc::{b, c, cell, t, Block, Document, Span, Table, Tone};
use crate::fmt;
use crate::plot::{Bar, BarChart, BarSeries, LineChart, LineSeries, Point, Scale};

fn snake(v: &impl serde::Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(Value::String(s)) => s.replace('_', " "),
        Ok(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::Object(inner) => format!(
                    "{k} ({})",
                    inner
                        .iter()
                        .map(|(a, b)| format!("{a}: {}", b.as_str().unwrap_or(&b.to_string())))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                other => format!("{k} {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Ok(other) => other.to_string(),
        Err(_) => "-".into(),
    }
}

/// Adds the trace's section.
pub fn trace(doc: &mut Document, ctx: &Ctx, name: &str, s: &Summary) {
    let kernel = s.trace.kernel_release.as_deref().unwrap_or("an unknown kernel");
    doc.heading(
        2,
        format!("Flush trace: {} events on {kernel}", fmt::group(s.totals.flush_events)),
    );
    doc.para(vec![
        b("How to read: "),
        t("every figure is a count of trace records, or computed from the counts beside it; nothing is sampled or estimated. Reasons are the kernel's enum tlb_flush_reason values (0 task switch, 1 flush received in an IPI handler, 2 local flush for batched reclaim, 3 local flush of the initiator's own mm, 4 remote flush requested, 5 request that reached a CPU which had left the mm)."),
    ]);
    for w in &s.warnings {
        doc.push(Block::Warning(vec![t(w)]));
    }
    overview(doc, name, s);
    reasons(doc, s);
    remote(doc, s);
    sizes(doc, ctx, s);
    rate(doc, ctx, s);
    processes(doc, s);
    if !s.notes.is_empty() {
        doc.heading(3, "Notes on this trace");
        doc.push(Block::List(s.notes.iter().map(|n| vec![t(n)]).collect()));
    }
}

fn overview(doc: &mut Document, name: &str, s: &Summary) {
    let tr = &s.trace;
    let to = &s.totals;
    let mut kv: Vec<(String, Vec<Span>)> =
        vec![("Input".into(), vec![c(name)]), ("Origin".into(), vec![t(snake(&tr.origin))])];
    if let Some(p) = &tr.source_path {
        kv.push(("Imported from".into(), vec![c(p)]));
    }
    kv.push(("Kernel".into(), vec![t(tr.kernel_release.as_deref().unwrap_or("-"))]));
    kv.push(("Trace clock".into(), vec![t(&tr.clock)]));
    kv.push((
        "CPUs".into(),
        vec![t(s.cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))],
    ));
    let events = if tr.events.is_empty() { "-".to_string() } else { tr.events.join(" ") };
    kv.push(("Events enabled".into(), vec![t(events)]));
    kv.push((
        "Records".into(),
        vec![t(format!(
            "{} ({} tlb_flush, {} flushes performed by reasons 1–3, {} sched_switch, {} ipi_send, {} call_function)",
            fmt::group(to.records),
            fmt::group(to.flush_events),
            fmt::group(to.flushes_performed),
            fmt::group(to.switch_records),
            fmt::group(to.ipi_send_records),
            fmt::group(to.call_function_records)
        ))],
    ));
    kv.push((
        "Span".into(),
        vec![t(format!(
            "{:.6} s from first to last record{}",
            to.span_ns as f64 / 1e9,
            to.duration_ns
                .map_or(String::new(), |d| format!("; recording lasted {:.3} s", d as f64 / 1e9))
        ))],
    ));
    let lost = if to.lost_events == 0 {
        "none".to_string()
    } else {
        format!("{} (see the warnings)", fmt::group(to.lost_events))
    };
    kv.push(("Events lost".into(), vec![t(lost)]));
    kv.push(("Recording ended".into(), vec![t(snake(&to.end))]));
    if let Some(cmd) = &to.command {
        kv.push((
            "Traced command".into(),
            vec![
                c(cmd.join(" ")),
                t(format!(
                    "{}; exit status {}",
                    if to.only_command { " (only its process tree)" } else { "" },
                    to.command_status.map_or("-".to_string(), |v| v.to_string())
                )),
            ],
        ));
    }
    if to.out_of_order > 0 {
        kv.push(("Records out of time order".into(), vec![t(fmt::group(to.out_of_order))]));
    }
    doc.push(Block::KeyValues(kv));
}

fn reasons(doc: &mut Document, s: &Summary) {
    doc.heading(3, "tlb_flush events by reason and CPU");
    let mut head = vec!["reason".to_string(), "label".to_string()];
    head.extend(s.cpus.iter().map(|c| format!("CPU {c}")));
    head.extend(["all CPUs".to_string(), "% of events".to_string()]);
    let mut table = Table::new(&head).numeric_from(2);
    for r in &s.reasons {
        let mut row = vec![r.reason.to_string().into(), r.label.clone().into()];
        row.extend(
            s.cpus.iter().map(|c| fmt::group(r.per_cpu.get(c).copied().unwrap_or(0)).into()),
        );
        row.push(fmt::group(r.events).into());
        row.push(format!("{:.1}", r.percent).into());
        table.row(row);
    }
    if let Some(irq) = &s.remote.interrupts {
        for (label, total, per_cpu) in
            [("TLB row", irq.tlb, &irq.tlb_per_cpu), ("CAL row", irq.cal, &irq.cal_per_cpu)]
        {
            let Some(total) = total else { continue };
            let mut row = vec![cell("kernel", Tone::Missing), label.into()];
            row.extend(
                s.cpus.iter().map(|c| fmt::group(per_cpu.get(c).copied().unwrap_or(0)).into()),
            );
            row.push(fmt::group(total).into());
            row.push("".into());
            table.row(row);
        }
    }
    doc.table(table.note(
        "cells: tlb_flush events of that reason on that CPU (reason 1: flushes the CPU did on receiving a request; reason 4: requests it sent). TLB row, CAL row: the kernel's /proc/interrupts increments over the recording (TLB: flush requests handled from other CPUs, whether or not they flushed anything; CAL: function-call IPIs).",
    ));
}

fn remote(doc: &mut Document, s: &Summary) {
    let r = &s.remote;
    doc.heading(3, "Remote flushes: requested against received");
    let mut table = Table::new(&["what", "count"]).numeric_from(1);
    table.row(vec!["remote flush requests (reason 4)".into(), fmt::group(r.sends).into()]);
    table.row(vec!["shootdowns received (reason 1)".into(), fmt::group(r.received).into()]);
    table.row(vec![
        "requests to a CPU that left the mm (reason 5)".into(),
        fmt::group(r.wrong_cpu).into(),
    ]);
    if let Some(x) = r.received_per_send {
        table.row(vec![
            "received per request (reason 1 / reason 4)".into(),
            format!("{x:.4}").into(),
        ]);
    }
    if let Some(ipi) = &r.ipi {
        table.row(vec![
            "IPI sends (ipi_send_*, every kind of IPI)".into(),
            fmt::group(ipi.send_records).into(),
        ]);
        table.row(vec!["IPI target CPUs requested".into(), fmt::group(ipi.targets).into()]);
        table.row(vec![
            "function-call IPI handlers run".into(),
            fmt::group(ipi.call_function_entries).into(),
        ]);
    }
    if let Some(irq) = &r.interrupts {
        if let Some(v) = irq.tlb {
            table
                .row(vec!["kernel: TLB shootdowns handled (TLB row)".into(), fmt::group(v).into()]);
        }
        if let Some(v) = irq.cal {
            table.row(vec!["kernel: function-call IPIs (CAL row)".into(), fmt::group(v).into()]);
        }
    }
    doc.table(table.note(
        "reason 4 fires before any IPI is sent, also when none is (lazy CPUs skipped, paravirtual flush): count delivered shootdowns with reason 1 or the TLB row.",
    ));
}

fn histogram_table(h: &SizeHistogram, unit: &str) -> Table {
    let mut table = Table::new(&[unit, "events", "% of events", "cumulative %"]).numeric_from(1);
    for row in &h.rows {
        table.row(vec![
            row.pages.clone().into(),
            fmt::group(row.events).into(),
            format!("{:.3}", row.percent).into(),
            format!("{:.3}", row.cumulative_percent).into(),
        ]);
    }
    table
}

fn sizes(doc: &mut Document, ctx: &Ctx, s: &Summary) {
    let h = &s.sizes.performed;
    doc.heading(
        3,
        format!("Pages per flush performed (reasons 1, 2, 3; {} flushes)", fmt::group(h.events)),
    );
    if h.rows.is_empty() {
        doc.para(vec![t("No flush performed.")]);
    } else {
        let categories: Vec<String> = h.rows.iter().map(|r| r.pages.clone()).collect();
        let bars: Vec<Option<Bar>> =
            h.rows.iter().map(|r| (r.events > 0).then(|| Bar::new(r.events as f64))).collect();
        let (lo, hi) = h
            .rows
            .iter()
            .filter(|r| r.events > 0)
            .fold((u64::MAX, 0), |(lo, hi), r| (lo.min(r.events), hi.max(r.events)));
        let mut chart = BarChart::new("pages flushed (full: the whole TLB)", "flushes", categories)
            .series(BarSeries::new("flushes performed", bars));
        if hi > 0 && hi / lo.max(1) >= 100 {
            chart = chart.y_scale(Scale::Log10);
        }
        let summary: Vec<String> = h
            .rows
            .iter()
            .map(|r| format!("{}: {} ({:.2}%)", r.pages, fmt::group(r.events), r.percent))
            .collect();
        doc.push(figure(
            ctx,
            || chart.svg(),
            format!(
                "Pages per flush performed: flushes of each size by CPUs (reasons 1, 2 and 3), {} in all{}. full: TLB_FLUSH_ALL (beyond the single-page ceiling, or several pending generations); 0: nothing left to flush; ranges above 64 are grouped by powers of two.",
                fmt::group(h.events),
                chart.scale_note()
            ),
            summary.join(", "),
        ));
        doc.table(histogram_table(h, "pages"));
    }
    let mut details = Vec::new();
    for (reason, hist) in &s.sizes.by_reason {
        let label = s.reasons.iter().find(|r| r.reason == *reason).map_or("", |r| r.label.as_str());
        let unit = if *reason == 4 { "4 KiB pages requested" } else { "pages" };
        details.push(Block::Para(vec![b(format!(
            "Reason {reason} ({label}), {} events",
            fmt::group(hist.events)
        ))]));
        details.push(Block::Table(histogram_table(hist, unit)));
    }
    if !details.is_empty() {
        doc.push(Block::Details {
            summary: "Pages per event, each reason on its own".into(),
            blocks: details,
        });
    }
}

/// A reason group of the rate table: its name, and how to take its count.
type RateGroup = (&'static str, fn(&GroupCounts) -> u64);

fn rate(doc: &mut Document, ctx: &Ctx, s: &Summary) {
    let r = &s.rate;
    if r.buckets.is_empty() {
        return;
    }
    let interval_ms = r.interval_ns as f64 / 1e6;
    doc.heading(3, "tlb_flush events per second over time");
    let groups: [RateGroup; 5] = [
        ("initiated (2, 3)", |g| g.initiated),
        ("sends (4)", |g| g.sends),
        ("received (1)", |g| g.received),
        ("switch (0)", |g| g.switch),
        ("other (5, …)", |g| g.other),
    ];
    let mut chart = LineChart::new("time from the first record, s", "tlb_flush events per second")
        .markers(r.buckets.len() <= 30);
    let mut summary = Vec::new();
    for (label, get) in groups {
        // Saturating, like the times below: a damaged file's counts must not overflow.
        let total = r.buckets.iter().fold(0u64, |sum, b| sum.saturating_add(get(&b.events)));
        if total == 0 {
            continue;
        }
        // Each bucket's rate at its middle; rates are per full interval, as the summary has them.
        let points: Vec<Point> = r
            .buckets
            .iter()
            .map(|b| {
                let end = b.start_ns.saturating_add(r.interval_ns).min(b.end_ns.max(b.start_ns));
                let mid = (b.start_ns as f64 + end as f64) / 2e9;
                Point::new(mid, get(&b.events) as f64 / (r.interval_ns as f64 / 1e9))
            })
            .collect();
        let peak = points.iter().map(|p| p.y).fold(0.0, f64::max);
        summary.push(format!("{label}: {} events, peak {}/s", fmt::group(total), fmt::num(peak)));
        chart = chart.series(LineSeries::new(label, points));
    }
    let choice = snake(&r.interval);
    doc.push(figure(
        ctx,
        || chart.svg(),
        format!(
            "tlb_flush events per second by reason group, in {interval_ms} ms intervals ({choice}) from the first record; each point is an interval's count / its width, at the interval's middle (the last interval may be shorter but is still divided by the full width). Groups without events are left out."
        ),
        summary.join("; "),
    ));
    let mut table = Table::new(&[
        "from, s",
        "to, s",
        "initiated (2,3)/s",
        "sends (4)/s",
        "received (1)/s",
        "switch (0)/s",
        "other/s",
        "events",
    ])
    .numeric_from(0);
    // Enough decimals that consecutive interval bounds differ.
    let decimals = ((-(r.interval_ns as f64 / 1e9).log10()).ceil().max(0.0) as usize + 1).max(3);
    for bk in &r.buckets {
        let e = &bk.events;
        let per = |n: u64| fmt::fixed(n as f64 / (r.interval_ns as f64 / 1e9), 0);
        table.row(vec![
            format!("{:.decimals$}", bk.start_ns as f64 / 1e9).into(),
            format!("{:.decimals$}", bk.end_ns as f64 / 1e9).into(),
            per(e.initiated).into(),
            per(e.sends).into(),
            per(e.received).into(),
            per(e.switch).into(),
            per(e.other).into(),
            fmt::group(
                [e.initiated, e.sends, e.received, e.switch, e.other]
                    .into_iter()
                    .fold(0u64, u64::saturating_add),
            )
            .into(),
        ]);
    }
    doc.push(Block::Details {
        summary: format!("Rates per interval ({} intervals)", r.buckets.len()),
        blocks: vec![Block::Table(table)],
    });
}

fn processes(doc: &mut Document, s: &Summary) {
    let p = &s.processes;
    if p.top.is_empty() {
        return;
    }
    doc.heading(3, format!("Processes by tlb_flush events (top {} of {})", p.top.len(), p.count));
    let mut table = Table::new(&[
        "rank",
        "tgid",
        "pid",
        "comm",
        "threads",
        "initiated (2,3)",
        "sends (4)",
        "received (1)",
        "switch (0)",
        "other",
        "total",
    ])
    .numeric_from(4);
    table.numeric[0] = true;
    table.numeric[1] = true;
    table.numeric[2] = true;
    let row = |rank: String,
               tgid: String,
               pid: String,
               comm: String,
               threads: u64,
               e: &GroupCounts,
               total: u64| {
        vec![
            rank.into(),
            tgid.into(),
            pid.into(),
            comm.into(),
            fmt::group(threads).into(),
            fmt::group(e.initiated).into(),
            fmt::group(e.sends).into(),
            fmt::group(e.received).into(),
            fmt::group(e.switch).into(),
            fmt::group(e.other).into(),
            fmt::group(total).into(),
        ]
    };
    for (i, r) in p.top.iter().enumerate() {
        let tgid = if r.tgid < 0 { "-".to_string() } else { r.tgid.to_string() };
        let pid = r.pid.map_or("-".to_string(), |p| p.to_string());
        let comm = if r.comm.is_empty() { "?".to_string() } else { r.comm.clone() };
        table.row(row((i + 1).to_string(), tgid, pid, comm, r.threads, &r.events, r.total));
    }
    if let Some(rest) = &p.rest {
        table.row(row(
            "rest".into(),
            "-".into(),
            "-".into(),
            format!("({} other processes)", rest.processes),
            rest.threads,
            &rest.events,
            rest.total,
        ));
    }
    doc.table(table.note(
        "each event counts for the thread running when it fired: received (1) for the thread the IPI interrupted (often idle or unrelated to the flushed mm), switch (0) for the thread being switched out; pid is shown only for threads whose process is unknown.",
    ));
}
