//! A replay of a flush trace through the model (`tlblab.sim.replay/1`), per policy, and the
//! ceiling sweep (`tlblab.sim.replay-sweep/1`).

use serde_json::Value;

use super::{figure, Ctx};
use crate::doc::{b, c, cell, t, Block, Document, Span, Table, Tone};
use crate::fmt;
use crate::model::replay::{PolicyReplay, Replay, Sweep, TraceSummary};
use crate::plot::{Bar, BarChart, BarSeries, LineChart, LineSeries, Point, Scale};

const EXACT: &str = "each figure is one deterministic run of the model per policy, so there is no spread to show and nothing to test: a difference is the model's, exactly. Costs are the replay minus a twin run whose requests flush nothing (so they can come out slightly negative when the flushes shift other work in time).";

/// A share of the cost: its name, and how to take it from a replay.
type CostPart = (&'static str, fn(&PolicyReplay) -> i64);

/// `total / n`, or `-` with no `n`.
fn per(total: i64, n: u64) -> String {
    if n == 0 {
        "-".into()
    } else {
        fmt::fixed(total as f64 / n as f64, 0)
    }
}

fn per_f(total: i64, n: u64) -> Option<f64> {
    (n > 0).then(|| total as f64 / n as f64)
}

fn options_text(options: &std::collections::BTreeMap<String, Value>) -> String {
    options
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Value::Object(m) => m
                    .values()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(" "),
                Value::Null => "default".into(),
                Value::Number(n) => n.as_u64().map_or_else(|| n.to_string(), fmt::group),
                other => other.to_string(),
            };
            format!("{k} {v}")
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn trace_kv(
    name: &str,
    machine: &str,
    tr: &TraceSummary,
    options: &std::collections::BTreeMap<String, Value>,
) -> Block {
    let q = &tr.requests;
    let kv: Vec<(String, Vec<Span>)> = vec![
        ("Input".into(), vec![c(name)]),
        ("Machine preset".into(), vec![c(machine)]),
        (
            "Trace".into(),
            vec![t(format!(
                "{} records over {:.3} ms (clock {}, kernel {}), {} CPUs; {} processes, {} threads; schedule from {}",
                fmt::group(tr.records),
                tr.span_ns as f64 / 1e6,
                tr.clock,
                tr.kernel_release.as_deref().unwrap_or("unknown"),
                tr.cpus,
                tr.processes,
                tr.threads,
                if tr.schedule == "switch" { "sched_switch records" } else { "the events (inferred)" }
            ))],
        ),
        (
            "Requests".into(),
            vec![t(format!(
                "{} (reason 4+3 pairs {}, reason 3 alone {}, reason 4 alone {}, batched reclaim {}); {} censored (full at recording)",
                fmt::group(q.total),
                fmt::group(q.paired),
                fmt::group(q.local_only),
                fmt::group(q.send_only),
                fmt::group(q.batches),
                fmt::group(q.censored)
            ))],
        ),
        ("Options".into(), vec![t(options_text(options))]),
    ];
    Block::KeyValues(kv)
}

fn assumptions(doc: &mut Document, list: &[String]) {
    if !list.is_empty() {
        doc.push(Block::Details {
            summary: format!("What the replay assumed ({})", list.len()),
            blocks: vec![Block::List(list.iter().map(|a| vec![t(a)]).collect())],
        });
    }
}

fn incomplete(doc: &mut Document, rows: &[PolicyReplay]) {
    for p in rows.iter().filter(|p| !p.complete) {
        doc.push(Block::Warning(vec![t(format!(
            "{} (ceiling {}): incomplete: {} threads did not finish their schedule; its figures cover less work.",
            p.policy, p.ceiling, p.threads_unfinished
        ))]));
    }
}

/// Adds a replay's section.
pub fn replay(doc: &mut Document, ctx: &Ctx, name: &str, r: &Replay) {
    let names: Vec<&str> = r.policies.iter().map(|p| p.policy.as_str()).collect();
    doc.heading(2, format!("Replay of a flush trace on {}: {}", r.machine, names.join(", ")));
    doc.para(vec![b("How to read: "), t(EXACT)]);
    doc.push(trace_kv(name, &r.machine, &r.trace, &r.options));
    assumptions(doc, &r.assumptions);
    incomplete(doc, &r.policies);
    doc.heading(3, "Cost per policy");
    let mut table = Table::new(&[
        "policy",
        "ceiling",
        "requests",
        "full",
        "partial",
        "IPIs sent",
        "IPIs received",
        "initiator cycles/request",
        "receiver cycles/request",
        "receiver cycles/IPI",
        "refill cycles/request",
        "refill walks",
        "simulated ms",
        "late requests",
        "max slip µs",
    ])
    .numeric_from(1);
    for p in &r.policies {
        let cost = &p.cost;
        table.row(vec![
            p.policy.clone().into(),
            p.ceiling.to_string().into(),
            fmt::group(p.requests_replayed).into(),
            fmt::group(p.requests_full).into(),
            fmt::group(p.requests_partial).into(),
            fmt::group(p.ipis_sent).into(),
            fmt::group(p.ipis_received).into(),
            per(cost.initiator_cycles, p.requests_replayed).into(),
            per(cost.receiver_cycles, p.requests_replayed).into(),
            per(cost.receiver_cycles, p.ipis_received).into(),
            per(cost.refill_cycles, p.requests_replayed).into(),
            fmt::group_i(cost.refill_walks).into(),
            fmt::fixed(p.elapsed_cycles as f64 / p.clock_mhz.max(1) as f64 / 1000.0, 3).into(),
            fmt::group(p.slip.late_requests).into(),
            fmt::fixed(p.slip.max_ns / 1000.0, 1).into(),
        ]);
    }
    doc.table(table.note(
        "cycles: the model's core cycles, replay minus twin; per request: divided by the requests replayed (so the three per-request columns add up to the total cost of a request); per IPI: divided by the IPIs received; full/partial: requests above / at or below the ceiling; slip: requests made more than 1 µs after their recorded time.",
    ));
    // Cycles per request, by where they are spent.
    let parts: [CostPart; 3] = [
        ("initiator", |p| p.cost.initiator_cycles),
        ("receivers", |p| p.cost.receiver_cycles),
        ("refill", |p| p.cost.refill_cycles),
    ];
    let mut chart = BarChart::new(
        "where the cycles are spent",
        "cycles per request",
        parts.iter().map(|p| p.0.to_string()).collect(),
    );
    chart.always_legend = true;
    let mut summary = Vec::new();
    for p in &r.policies {
        let bars = parts
            .iter()
            .map(|(label, get)| {
                let v = per_f(get(p), p.requests_replayed)?;
                summary.push(format!("{} {label} {}", p.policy, fmt::fixed(v, 0)));
                Some(Bar::new(v))
            })
            .collect();
        chart = chart.series(BarSeries::new(&p.policy, bars));
    }
    doc.push(figure(
        ctx,
        || chart.svg(),
        "Cost of a flush request per policy, in model cycles per request replayed (replay minus twin): on the initiator (from the system call to its return, including waiting for acknowledgements), in the receivers' interrupt handlers, and refilling the TLB afterwards. One deterministic run per policy: no error bars.".into(),
        format!("cycles per request: {}", summary.join("; ")),
    ));
    let mut ipis =
        BarChart::new("flush IPIs", "IPIs in the replay", vec!["sent".into(), "received".into()]);
    ipis.always_legend = true;
    let mut ipi_summary = Vec::new();
    for p in &r.policies {
        ipi_summary.push(format!(
            "{} sent {} received {}",
            p.policy,
            fmt::group(p.ipis_sent),
            fmt::group(p.ipis_received)
        ));
        ipis = ipis.series(BarSeries::new(
            &p.policy,
            vec![Some(Bar::new(p.ipis_sent as f64)), Some(Bar::new(p.ipis_received as f64))],
        ));
    }
    doc.push(figure(
        ctx,
        || ipis.svg(),
        "Flush IPIs sent and received (the TLB row of /proc/interrupts) on the trace's CPUs, per policy, in one deterministic run of the model.".into(),
        ipi_summary.join("; "),
    ));
    doc.heading(3, "Recorded and replayed tlb_flush events");
    let mut mirrors = Table::new(&["policy", "mirrors"]);
    for p in &r.policies {
        mirrors.row(vec![p.policy.clone().into(), p.mirrors.clone().into()]);
    }
    doc.table(mirrors);
    doc.table(reason_table(&r.policies));
}

fn kinds(k: &crate::model::replay::KindCounts) -> String {
    format!(
        "{} ({} / {} / {})",
        fmt::group(k.total),
        fmt::group(k.full),
        fmt::group(k.partial),
        fmt::group(k.none)
    )
}

/// Reasons as recorded, and as each policy's replay made them.
fn reason_table(policies: &[PolicyReplay]) -> Table {
    let mut head = vec!["reason".to_string(), "recorded".to_string()];
    head.extend(policies.iter().map(|p| format!("replayed under {}", p.policy)));
    let mut table = Table::new(&head).numeric_from(1);
    let mut reasons: Vec<(i32, &str)> = Vec::new();
    for p in policies {
        for r in &p.tlb_flush {
            if !reasons.iter().any(|(v, _)| *v == r.reason) {
                reasons.push((r.reason, &r.label));
            }
        }
    }
    reasons.sort_by_key(|(v, _)| *v);
    for (reason, label) in reasons {
        let recorded = policies
            .iter()
            .find_map(|p| p.tlb_flush.iter().find(|r| r.reason == reason))
            .map(|r| r.recorded);
        let mut row = vec![
            format!("{label} ({reason})").into(),
            recorded.map_or_else(|| "-".to_string(), |k| kinds(&k)).into(),
        ];
        for p in policies {
            row.push(match p.tlb_flush.iter().find(|r| r.reason == reason) {
                Some(r) => {
                    let changed = r.recorded.total != r.replayed.total;
                    cell(kinds(&r.replayed), if changed { Tone::Significant } else { Tone::Plain })
                }
                None => cell("-", Tone::Missing),
            });
        }
        table.row(row);
    }
    table.note("tlb:tlb_flush events by reason, total (full / partial / none): in the trace, and made by the model under each policy. Requests (reasons 2–4) are replayed; outcomes (reasons 0, 1 and 5) are regenerated by the model and only compared. Bold: the replay's total differs from the recording's.")
}

/// Adds a ceiling sweep's section.
pub fn sweep(doc: &mut Document, ctx: &Ctx, name: &str, s: &Sweep) {
    doc.heading(
        2,
        format!("tlb_single_page_flush_ceiling sweep under {} on {}", s.policy, s.machine),
    );
    doc.para(vec![b("How to read: "), t(EXACT.replace("per policy", "per ceiling"))]);
    doc.push(trace_kv(name, &s.machine, &s.trace, &s.options));
    assumptions(doc, &s.assumptions);
    incomplete(doc, &s.rows);
    let refill_flushed =
        s.options.get("refill").and_then(|v| v.get("kind")).and_then(Value::as_str)
            == Some("flushed");
    if refill_flushed {
        doc.push(Block::Warning(vec![t(
            "Refill of the flushed pages only: a full flush costs no more refill than a partial one here, so the sweep shows the flush side of the trade-off only; a working-set refill (--refill working-set) shows the whole trade-off.",
        )]));
    }
    doc.heading(3, format!("Cost against the ceiling ({} ceilings)", s.rows.len()));
    let mut table = Table::new(&[
        "ceiling",
        "full requests",
        "partial requests",
        "censored (full)",
        "local full",
        "local partial",
        "remote flushes",
        "IPIs sent",
        "initiator cycles",
        "receiver cycles",
        "refill cycles",
        "refill walks",
        "total cycles",
        "total cycles/request",
    ])
    .numeric_from(0);
    for p in &s.rows {
        let local = p.tlb_flush.iter().find(|x| x.reason == 3).map(|x| x.replayed);
        let remote = p.tlb_flush.iter().find(|x| x.reason == 1).map(|x| x.replayed);
        let c = &p.cost;
        table.row(vec![
            p.ceiling.to_string().into(),
            fmt::group(p.requests_full).into(),
            fmt::group(p.requests_partial).into(),
            fmt::group(p.requests_censored).into(),
            fmt::group(local.map_or(0, |l| l.full)).into(),
            fmt::group(local.map_or(0, |l| l.partial)).into(),
            fmt::group(remote.map_or(0, |r| r.total)).into(),
            fmt::group(p.ipis_sent).into(),
            fmt::group_i(c.initiator_cycles).into(),
            fmt::group_i(c.receiver_cycles).into(),
            fmt::group_i(c.refill_cycles).into(),
            fmt::group_i(c.refill_walks).into(),
            fmt::group_i(c.total()).into(),
            per(c.total(), p.requests_replayed).into(),
        ]);
    }
    doc.table(table.note(
        "full/partial: requests above / at or below the ceiling (censored requests stay full at every ceiling); local = reason 3, remote = reason 1 events of the model; total = initiator + receiver + refill cycles, replay minus twin.",
    ));
    let series: [CostPart; 4] = [
        ("total", |p| p.cost.total()),
        ("initiator", |p| p.cost.initiator_cycles),
        ("receivers", |p| p.cost.receiver_cycles),
        ("refill", |p| p.cost.refill_cycles),
    ];
    let mut chart = LineChart::new("tlb_single_page_flush_ceiling, pages", "cycles per request")
        .x_scale(Scale::Log2);
    let mut summary = Vec::new();
    for (label, get) in series {
        let points: Vec<Point> = s
            .rows
            .iter()
            .filter_map(|p| Some(Point::new(p.ceiling as f64, per_f(get(p), p.requests_replayed)?)))
            .collect();
        if label == "total" {
            summary =
                points.iter().map(|p| format!("ceiling {} {}", p.x, fmt::fixed(p.y, 0))).collect();
        }
        chart = chart.series(LineSeries::new(label, points));
    }
    doc.push(figure(
        ctx,
        || chart.svg(),
        format!(
            "Cycles per request replayed against tlb_single_page_flush_ceiling (log₂ axis; a ceiling of 0 cannot be shown on it), in total and by where they are spent, under {}: one deterministic run per ceiling, no error bars.",
            s.policy
        ),
        format!("total cycles per request: {}", summary.join(", ")),
    ));
}
