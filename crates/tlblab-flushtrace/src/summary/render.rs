//! Text forms of a [`Summary`]: aligned tables for a terminal, GitHub Markdown for mailing lists
//! and issues, and one long-format CSV for pandas or R.
//!
//! All three are made from the same list of tables, so they say the same thing; the CSV also
//! carries a few columns and tables too wide or long for reading (exact bounds of the size rows,
//! per-bucket counts next to the rates, the size histograms of every reason).
//!
//! # The CSV
//!
//! One header line, [`CSV_HEADER`] (`table,key,column,value`), then one line per value:
//!
//! * `table`: which table (`trace`, `totals`, `reasons`, `cpu_reasons`, `remote`,
//!   `sizes_performed`, `sizes_reason_<N>`, `rate`, `processes`, `losses`, `warnings`,
//!   `notes`);
//! * `key`: the row: a field name (`trace`, `totals`, `remote`), a reason value (`reasons`), a
//!   CPU number (`cpu_reasons`, `losses`), a `pages` row label such as `full`, `0`, `17` or
//!   `65-128` (`sizes_*`), a bucket index from 0 (`rate`), a rank from 1 or `rest`
//!   (`processes`), an index from 1 (`warnings`, `notes`);
//! * `column`: the quantity, named with its unit where it has one (`events`, `percent`,
//!   `cumulative_percent`, `start_ns`, `received_per_s`, `reason_1`, `irq_tlb`…);
//! * `value`: a number (integers as such, percentages with 4 decimals, rates with 3, times in
//!   integer ns) or text (quoted as RFC 4180 says when it holds a comma, quote or line break);
//!   empty when unknown.
//!
//! So `df[df.table == "rate"].pivot(index="key", columns="column", values="value")` gives the
//! rate table back.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::schema::{GroupCounts, GroupRates, IntervalChoice, SizeHistogram, Summary};
use crate::model::{End, Origin};
use tlblab_types::escape::{escape, escape_lines};

/// The CSV's header line.
pub const CSV_HEADER: &str = "table,key,column,value";

/// One value.
#[derive(Debug, Clone)]
enum Cell {
    Count(u64),
    Int(i64),
    /// Shown with 1 decimal, 4 in the CSV.
    Percent(f64),
    /// Per second: 1 decimal, 3 in the CSV.
    Rate(f64),
    /// A ratio: 4 decimals, 6 in the CSV.
    Ratio(f64),
    /// A time, shown in seconds with this many decimals (truncated), integer ns in the CSV.
    Time(u64, usize),
    Text(String),
    Empty,
}

impl Cell {
    fn shown(&self) -> String {
        match self {
            Cell::Count(n) => n.to_string(),
            Cell::Int(n) => n.to_string(),
            Cell::Percent(x) => format!("{x:.1}"),
            Cell::Rate(x) => format!("{x:.1}"),
            Cell::Ratio(x) => format!("{x:.4}"),
            Cell::Time(ns, decimals) => seconds(*ns, *decimals),
            Cell::Text(s) if !s.is_empty() => escape(s).into_owned(),
            Cell::Text(_) | Cell::Empty => "-".into(),
        }
    }

    fn csv(&self) -> String {
        match self {
            Cell::Count(n) => n.to_string(),
            Cell::Int(n) => n.to_string(),
            Cell::Percent(x) => format!("{x:.4}"),
            Cell::Rate(x) => format!("{x:.3}"),
            Cell::Ratio(x) => format!("{x:.6}"),
            Cell::Time(ns, _) => ns.to_string(),
            Cell::Text(s) => csv_field(&escape(s)),
            Cell::Empty => String::new(),
        }
    }

    fn left_aligned(&self) -> bool {
        matches!(self, Cell::Text(_))
    }
}

/// `ns` as seconds with `decimals` digits, truncated (as ftrace prints its timestamps).
fn seconds(ns: u64, decimals: usize) -> String {
    let (s, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    match decimals.min(9) {
        0 => s.to_string(),
        d => format!("{s}.{}", &format!("{frac:09}")[..d]),
    }
}

/// A width in the largest unit that divides it.
fn duration(ns: u64) -> String {
    match ns {
        0 => "0 ns".into(),
        n if n % 1_000_000_000 == 0 => format!("{} s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{} ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{} µs", n / 1_000),
        n => format!("{n} ns"),
    }
}

/// Width of the text report's prose lines (legends, notes, warnings).
const TEXT_WIDTH: usize = 100;

/// `text` in lines of at most [`TEXT_WIDTH`] columns (longer words stay whole), the first
/// starting with `first`, the others indented as deep.
fn wrap(first: &str, text: &str) -> String {
    let indent = " ".repeat(first.chars().count());
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.chars().count() + 1 + word.chars().count() > TEXT_WIDTH {
            out += line.trim_end();
            out.push('\n');
            line = indent.clone();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line += word;
        empty = false;
    }
    out += line.trim_end();
    out.push('\n');
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) || s.trim() != s {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A column: its CSV name, its heading, and whether only the CSV has it.
struct Col {
    id: String,
    header: String,
    csv_only: bool,
}

fn col(id: impl Into<String>, header: impl Into<String>) -> Col {
    Col { id: id.into(), header: header.into(), csv_only: false }
}

fn csv_col(id: impl Into<String>) -> Col {
    let id = id.into();
    Col { header: id.clone(), id, csv_only: true }
}

/// A row: its CSV key, its label in the first column, and one cell per column.
struct Row {
    key: String,
    label: String,
    cells: Vec<Cell>,
}

fn row(key: impl Into<String>, label: impl Into<String>, cells: Vec<Cell>) -> Row {
    Row { key: key.into(), label: label.into(), cells }
}

/// One table of the report.
struct Table {
    id: String,
    title: String,
    /// The heading of the label column.
    key_header: String,
    columns: Vec<Col>,
    rows: Vec<Row>,
    /// Lines under the table saying how to read it.
    legend: Vec<String>,
    /// Only in the CSV.
    csv_only: bool,
}

impl Table {
    fn new(id: impl Into<String>, title: impl Into<String>, key_header: &str) -> Table {
        Table {
            id: id.into(),
            title: title.into(),
            key_header: key_header.into(),
            columns: vec![],
            rows: vec![],
            legend: vec![],
            csv_only: false,
        }
    }

    /// The visible cells: (headers, rows of cells, left-aligned per column).
    fn visible(&self) -> (Vec<String>, Vec<Vec<String>>, Vec<bool>) {
        let shown: Vec<usize> =
            (0..self.columns.len()).filter(|&i| !self.columns[i].csv_only).collect();
        let mut headers = vec![self.key_header.clone()];
        headers.extend(shown.iter().map(|&i| self.columns[i].header.clone()));
        let mut left = vec![true];
        left.extend(
            shown
                .iter()
                .map(|&i| self.rows.iter().any(|r| r.cells.get(i).is_some_and(Cell::left_aligned))),
        );
        let rows = self
            .rows
            .iter()
            .map(|r| {
                let mut cells = vec![escape(&r.label).into_owned()];
                cells.extend(shown.iter().map(|&i| r.cells.get(i).unwrap_or(&Cell::Empty).shown()));
                cells
            })
            .collect();
        (headers, rows, left)
    }
}

/// The value table of key/value sections (`trace`, `totals`, `remote`).
fn key_value(id: &str, title: &str, rows: Vec<(&str, &str, Cell)>) -> Table {
    let mut t = Table::new(id, title, "");
    t.columns = vec![col("value", "")];
    t.rows = rows.into_iter().map(|(k, label, v)| row(k, label, vec![v])).collect();
    t
}

fn opt_text(s: &Option<String>) -> Cell {
    s.as_ref().map_or(Cell::Empty, |s| Cell::Text(s.clone()))
}

fn trace_table(s: &Summary) -> Table {
    let t = &s.trace;
    let origin = match t.origin {
        Origin::Recorded => "recorded (tlblab trace record)",
        Origin::FtraceText => "imported from ftrace text",
        Origin::PerfScript => "imported from perf script",
    };
    let cpus = s.cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    key_value(
        "trace",
        "Trace",
        vec![
            ("origin", "origin", Cell::Text(origin.into())),
            ("source_path", "imported from", opt_text(&t.source_path)),
            ("kernel_release", "kernel", opt_text(&t.kernel_release)),
            ("hostname", "host", opt_text(&t.hostname)),
            (
                "cpu",
                "CPU",
                t.cpu.as_ref().map_or(Cell::Empty, |c| {
                    Cell::Text(format!(
                        "{} ({}; flags: {})",
                        c.model_name,
                        c.vendor,
                        if c.flags.is_empty() { "none kept".into() } else { c.flags.join(" ") }
                    ))
                }),
            ),
            (
                "broadcast_flush",
                "INVLPGB broadcast flushes",
                match t.broadcast_flush {
                    None => Cell::Empty,
                    Some(true) => Cell::Text("possible: not traced (see warnings)".into()),
                    Some(false) => {
                        Cell::Text("no (no invlpgb flag, or a kernel before 6.15)".into())
                    }
                },
            ),
            ("clock", "trace clock", Cell::Text(t.clock.clone())),
            ("cpus", "CPUs", Cell::Text(cpus)),
            ("events", "events enabled", Cell::Text(t.events.join(" "))),
            (
                "buffer_size_kb",
                "buffer per CPU (KiB)",
                t.buffer_size_kb.map_or(Cell::Empty, |k| Cell::Count(k.into())),
            ),
            ("tlblab_version", "written by tlblab", Cell::Text(t.tlblab_version.clone())),
        ],
    )
}

fn totals_table(s: &Summary) -> Table {
    let t = &s.totals;
    let end = match &t.end {
        End::Complete => "complete".to_string(),
        End::Interrupted { signal } => format!("interrupted by {signal}"),
        End::Failed { error } => format!("failed: {error}"),
    };
    let command = t.command.as_ref().map(|c| c.join(" "));
    let time = |ns: Option<u64>, d| ns.map_or(Cell::Empty, |ns| Cell::Time(ns, d));
    let mut table = key_value(
        "totals",
        "Totals",
        vec![
            ("records", "records (all kinds)", Cell::Count(t.records)),
            (
                "records_in_trailer",
                "records the trailer counted",
                Cell::Count(t.records_in_trailer),
            ),
            ("flush_events", "tlb_flush events (all reasons)", Cell::Count(t.flush_events)),
            (
                "flushes_performed",
                "flushes performed (reasons 1-3)",
                Cell::Count(t.flushes_performed),
            ),
            ("switch_records", "sched_switch records", Cell::Count(t.switch_records)),
            ("ipi_send_records", "ipi_send records", Cell::Count(t.ipi_send_records)),
            (
                "call_function_records",
                "call_function records",
                Cell::Count(t.call_function_records),
            ),
            ("task_records", "task records", Cell::Count(t.task_records)),
            ("other_records", "records of other events", Cell::Count(t.other_records)),
            ("first_ts_ns", "first record (s, trace clock)", time(t.first_ts_ns, 6)),
            ("last_ts_ns", "last record (s, trace clock)", time(t.last_ts_ns, 6)),
            ("span_ns", "span, first to last (s)", Cell::Time(t.span_ns, 6)),
            ("duration_ns", "recording wall-clock duration (s)", time(t.duration_ns, 3)),
            ("out_of_order", "records out of time order", Cell::Count(t.out_of_order)),
            ("lost_events", "events lost", Cell::Count(t.lost_events)),
            ("end", "recording ended", Cell::Text(end)),
            ("command", "traced command", opt_text(&command)),
            (
                "only_command",
                "only its process tree",
                Cell::Text(if t.only_command { "yes" } else { "no" }.into()),
            ),
            (
                "command_status",
                "command exit status",
                t.command_status.map_or(Cell::Empty, |c| Cell::Int(c.into())),
            ),
        ],
    );
    table.legend.push(
        "exit status: the command's exit code, or 128 + the signal that ended it".to_string(),
    );
    table
}

fn reasons_table(s: &Summary) -> Table {
    let mut t = Table::new("reasons", "tlb_flush events by reason", "reason");
    t.columns = vec![col("label", "label"), col("events", "events"), col("percent", "% of events")];
    t.rows = s
        .reasons
        .iter()
        .map(|r| {
            row(
                r.reason.to_string(),
                r.reason.to_string(),
                vec![Cell::Text(r.label.clone()), Cell::Count(r.events), Cell::Percent(r.percent)],
            )
        })
        .collect();
    t.rows.push(row(
        "all",
        "all",
        vec![Cell::Empty, Cell::Count(s.totals.flush_events), Cell::Percent(100.0)],
    ));
    t.legend.push(
        "reasons: 0 task switch (mm loaded; pages -1 flushed, 0 reused an up-to-date ASID), \
         1 flush in an IPI handler (received), 2 local flush for batched reclaim, 3 local flush \
         of the initiator's own mm, 4 remote flush requested (before any IPI), 5 request reached \
         a CPU that left the mm"
            .into(),
    );
    if s.totals.flush_events == 0 {
        t.rows.clear();
    }
    t
}

fn cpu_reasons_table(s: &Summary) -> Table {
    let mut t = Table::new("cpu_reasons", "tlb_flush events by CPU and reason", "CPU");
    t.columns = s
        .reasons
        .iter()
        .map(|r| col(format!("reason_{}", r.reason), format!("reason {}", r.reason)))
        .collect();
    t.columns.push(col("events", "all reasons"));
    // The kernel's per-CPU counts, next to the traced ones, when the trailer has them.
    let irq = s.remote.interrupts.as_ref();
    let irq_rows: Vec<&BTreeMap<u32, u64>> = [
        ("irq_tlb", "TLB row", irq.filter(|i| i.tlb.is_some()).map(|i| &i.tlb_per_cpu)),
        ("irq_cal", "CAL row", irq.filter(|i| i.cal.is_some()).map(|i| &i.cal_per_cpu)),
    ]
    .into_iter()
    .filter_map(|(id, header, row)| {
        let row = row?;
        t.columns.push(col(id, header));
        Some(row)
    })
    .collect();
    t.rows = s
        .cpus
        .iter()
        .map(|&cpu| {
            let mut cells: Vec<Cell> = s
                .reasons
                .iter()
                .map(|r| Cell::Count(r.per_cpu.get(&cpu).copied().unwrap_or(0)))
                .collect();
            let sum = s.reasons.iter().filter_map(|r| r.per_cpu.get(&cpu)).sum();
            cells.push(Cell::Count(sum));
            cells.extend(
                irq_rows.iter().map(|r| r.get(&cpu).map_or(Cell::Empty, |&n| Cell::Count(n))),
            );
            row(cpu.to_string(), cpu.to_string(), cells)
        })
        .collect();
    t.legend.push(
        "cells: tlb_flush events of that reason on that CPU (for reason 1: flushes the CPU did \
         on receiving a request; for reason 4: requests it sent)"
            .into(),
    );
    if !irq_rows.is_empty() {
        t.legend.push(
            "TLB row, CAL row: the kernel's /proc/interrupts increments over the recording (TLB: \
             flush requests handled from other CPUs, whether or not they flushed anything; CAL: \
             function-call IPIs)"
                .into(),
        );
    }
    t
}

fn remote_table(s: &Summary) -> Table {
    let r = &s.remote;
    let mut rows = vec![
        ("sends", "remote flush requests (reason 4)", Cell::Count(r.sends)),
        ("received", "shootdowns received (reason 1)", Cell::Count(r.received)),
        ("wrong_cpu", "requests to a CPU that left the mm (reason 5)", Cell::Count(r.wrong_cpu)),
        (
            "received_per_send",
            "received per request (reason 1 / reason 4)",
            r.received_per_send.map_or(Cell::Empty, Cell::Ratio),
        ),
    ];
    if let Some(ipi) = &r.ipi {
        rows.push((
            "ipi_send_records",
            "IPI sends (ipi_send_*, all kinds)",
            Cell::Count(ipi.send_records),
        ));
        rows.push(("ipi_targets", "IPI target CPUs requested", Cell::Count(ipi.targets)));
        rows.push((
            "call_function_entries",
            "function-call IPI handlers run",
            Cell::Count(ipi.call_function_entries),
        ));
    }
    if let Some(i) = &r.interrupts {
        let count = |c: Option<u64>| c.map_or(Cell::Empty, Cell::Count);
        rows.push(("irq_tlb", "kernel: TLB shootdowns handled (TLB row)", count(i.tlb)));
        rows.push(("irq_cal", "kernel: function-call IPIs (CAL row)", count(i.cal)));
    }
    key_value("remote", "Remote flushes: requested against received", rows)
}

/// A size histogram.
fn sizes_table(id: String, title: String, unit: &str, h: &SizeHistogram) -> Table {
    let mut t = Table::new(id, title, unit);
    t.columns = vec![
        csv_col("min"),
        csv_col("max"),
        col("events", "events"),
        col("percent", "% of events"),
        col("cumulative_percent", "cumulative %"),
    ];
    t.rows = h
        .rows
        .iter()
        .map(|r| {
            row(
                r.pages.clone(),
                r.pages.clone(),
                vec![
                    Cell::Int(r.min),
                    Cell::Int(r.max),
                    Cell::Count(r.events),
                    Cell::Percent(r.percent),
                    Cell::Percent(r.cumulative_percent),
                ],
            )
        })
        .collect();
    t
}

fn sizes_tables(s: &Summary) -> Vec<Table> {
    let mut performed = sizes_table(
        "sizes_performed".into(),
        format!(
            "Pages per flush performed (reasons 1, 2, 3; {} flushes)",
            s.sizes.performed.events
        ),
        "pages",
        &s.sizes.performed,
    );
    performed.legend.push(
        "pages: entries flushed one by one (4 KiB pages, or 2 MiB for huge-page ranges); full: the \
         whole TLB (TLB_FLUSH_ALL, beyond the single-page ceiling or for several pending \
         generations); 0: nothing left to flush (already caught up)"
            .into(),
    );
    let mut out = vec![performed];
    for (&r, h) in &s.sizes.by_reason {
        let label =
            s.reasons.iter().find(|c| c.reason == r).map_or(String::new(), |c| c.label.clone());
        let (title, unit, shown) = match r {
            0 => {
                (format!("Task switches (reason 0, {}; {} events)", label, h.events), "pages", true)
            }
            4 => (
                format!(
                    "Remote flush requests by range (reason 4, {}; {} events)",
                    label, h.events
                ),
                "4 KiB pages",
                true,
            ),
            _ => (
                format!("Pages per event, reason {r} ({label}; {} events)", h.events),
                "pages",
                false,
            ),
        };
        let mut t = sizes_table(format!("sizes_reason_{r}"), title, unit, h);
        t.csv_only = !shown;
        match r {
            0 => t.legend.push(
                "full: the switch flushed the new ASID; 0: it reused an ASID that was up to date"
                    .into(),
            ),
            4 => t.legend.push(
                "the range asked for, in 4 KiB pages whatever the stride; full: the whole mm"
                    .into(),
            ),
            _ => {}
        }
        out.push(t);
    }
    out
}

fn groups(c: &GroupCounts) -> [u64; 5] {
    [c.initiated, c.sends, c.received, c.switch, c.other]
}

fn group_rates(r: &GroupRates) -> [f64; 5] {
    [r.initiated, r.sends, r.received, r.switch, r.other]
}

const GROUP_IDS: [&str; 5] = ["initiated", "sends", "received", "switch", "other"];
const GROUP_HEADERS: [&str; 5] =
    ["initiated (2,3)/s", "sends (4)/s", "received (1)/s", "switch (0)/s", "other/s"];

fn rate_table(s: &Summary) -> Table {
    let rate = &s.rate;
    let width = rate.interval_ns;
    let how = match rate.interval {
        IntervalChoice::Auto => "chosen for the span".to_string(),
        IntervalChoice::Requested => "as requested".to_string(),
        IntervalChoice::Widened { requested_ns } => format!(
            "{} requested, widened to keep at most {} buckets",
            duration(requested_ns),
            super::rate::REQUESTED_CAP
        ),
    };
    let mut t = Table::new(
        "rate",
        format!("tlb_flush events per second, in {} intervals ({how})", duration(width)),
        "from (s)",
    );
    // Enough decimals to tell buckets apart: 20 ms → 2.
    let decimals = 9usize.saturating_sub(width.max(1).ilog10() as usize);
    t.columns = vec![csv_col("start_ns"), col("end_ns", "to (s)")];
    t.columns
        .extend(GROUP_IDS.iter().zip(GROUP_HEADERS).map(|(id, h)| col(format!("{id}_per_s"), h)));
    t.columns.extend(GROUP_IDS.iter().map(|id| csv_col(*id)));
    t.columns.push(col("events", "events"));
    t.rows = rate
        .buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let mut cells = vec![Cell::Time(b.start_ns, decimals), Cell::Time(b.end_ns, decimals)];
            cells.extend(group_rates(&b.per_second).map(Cell::Rate));
            let counts = groups(&b.events);
            cells.extend(counts.map(Cell::Count));
            cells.push(Cell::Count(counts.iter().sum()));
            row(i.to_string(), seconds(b.start_ns, decimals), cells)
        })
        .collect();
    if let Some(origin) = rate.origin_ts_ns {
        t.legend.push(format!(
            "times from the first record ({} s on the trace clock); rates are events in the \
             interval / {}; the last interval may be shorter (its end is the last record)",
            seconds(origin, 6),
            duration(width)
        ));
    }
    t
}

fn processes_table(s: &Summary) -> Table {
    let p = &s.processes;
    let mut t = Table::new(
        "processes",
        format!("Processes by tlb_flush events (top {} of {})", p.top.len(), p.count),
        "rank",
    );
    t.columns = vec![
        col("tgid", "tgid"),
        col("pid", "pid"),
        col("comm", "comm"),
        col("threads", "threads"),
        col("initiated", "initiated (2,3)"),
        col("sends", "sends (4)"),
        col("received", "received (1)"),
        col("switch", "switch (0)"),
        col("other", "other"),
        col("total", "total"),
    ];
    for (i, r) in p.top.iter().enumerate() {
        let mut cells = vec![
            if r.tgid == -1 { Cell::Empty } else { Cell::Int(r.tgid.into()) },
            r.pid.map_or(Cell::Empty, |p| Cell::Int(p.into())),
            Cell::Text(r.comm.clone()),
            Cell::Count(r.threads),
        ];
        cells.extend(groups(&r.events).map(Cell::Count));
        cells.push(Cell::Count(r.total));
        let rank = (i + 1).to_string();
        t.rows.push(row(rank.clone(), rank, cells));
    }
    if let Some(rest) = &p.rest {
        let mut cells = vec![
            Cell::Empty,
            Cell::Empty,
            Cell::Text(format!("({} other processes)", rest.processes)),
            Cell::Count(rest.threads),
        ];
        cells.extend(groups(&rest.events).map(Cell::Count));
        cells.push(Cell::Count(rest.total));
        t.rows.push(row("rest", "rest", cells));
    }
    t.legend.push(
        "each event counts for the thread running when it fired: received (1) for the thread \
         the IPI interrupted (often idle or unrelated to the flushed mm), switch (0) for the \
         thread being switched out; pid is shown only for threads whose process is unknown"
            .into(),
    );
    t
}

fn losses_table(s: &Summary) -> Table {
    let mut t = Table::new("losses", "Events lost, by CPU", "CPU");
    t.columns = vec![
        col("events", "events lost"),
        col("pages_with_unknown_loss", "pages with unknown loss"),
    ];
    t.rows = s
        .totals
        .losses
        .iter()
        .map(|l| {
            row(
                l.cpu.to_string(),
                l.cpu.to_string(),
                vec![Cell::Count(l.events), Cell::Count(l.pages_with_unknown_loss)],
            )
        })
        .collect();
    t
}

fn text_list(id: &str, title: &str, items: &[String]) -> Table {
    let mut t = Table::new(id, title, "");
    t.columns = vec![col("text", "")];
    t.rows = items
        .iter()
        .enumerate()
        .map(|(i, s)| row((i + 1).to_string(), (i + 1).to_string(), vec![Cell::Text(s.clone())]))
        .collect();
    t
}

/// Every table, in report order (warnings and notes are rendered as lists by the text forms).
fn tables(s: &Summary) -> Vec<Table> {
    let mut out = vec![trace_table(s), totals_table(s), reasons_table(s), cpu_reasons_table(s)];
    out.push(remote_table(s));
    out.extend(sizes_tables(s));
    out.push(rate_table(s));
    out.push(processes_table(s));
    if !s.totals.losses.is_empty() {
        out.push(losses_table(s));
    }
    out
}

fn title(s: &Summary) -> String {
    format!("tlblab trace report ({})", s.schema)
}

/// Aligned plain-text tables for a terminal.
pub fn render_table(s: &Summary) -> String {
    let mut out = format!("{}\n", title(s));
    for w in &s.warnings {
        out += &wrap("WARNING: ", w);
    }
    for t in tables(s).iter().filter(|t| !t.csv_only && !t.rows.is_empty()) {
        let _ = writeln!(out, "\n{}", t.title);
        let (headers, rows, left) = t.visible();
        let widths: Vec<usize> = (0..headers.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].chars().count())
                    .chain([headers[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut l = String::from(" ");
            for (i, c) in cells.iter().enumerate() {
                let pad = widths[i] - c.chars().count();
                l.push(' ');
                if left[i] {
                    l += c;
                    l += &" ".repeat(pad);
                } else {
                    l += &" ".repeat(pad);
                    l += c;
                }
                l.push(' ');
            }
            l.trim_end().to_string()
        };
        if headers.iter().any(|h| !h.is_empty()) {
            let _ = writeln!(out, "{}", line(&headers));
        }
        for r in &rows {
            let _ = writeln!(out, "{}", line(r));
        }
        for l in &t.legend {
            out += &wrap("  ", &format!("({l})"));
        }
    }
    if !s.notes.is_empty() {
        out.push_str("\nNotes\n");
        for n in &s.notes {
            out += &wrap("  - ", n);
        }
    }
    // Titles, warnings and notes may quote the trace (reason labels, task names).
    escape_lines(&out).into_owned()
}

fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// GitHub-flavoured Markdown: a heading and a table per section.
pub fn render_markdown(s: &Summary) -> String {
    let mut out = format!("## {}\n\n", title(s));
    for w in &s.warnings {
        let _ = writeln!(out, "> **Warning:** {w}\n");
    }
    for t in tables(s).iter().filter(|t| !t.csv_only && !t.rows.is_empty()) {
        let _ = writeln!(out, "### {}\n", t.title);
        let (headers, rows, left) = t.visible();
        let headers: Vec<String> = headers.iter().map(|h| markdown_cell(h)).collect();
        let _ = writeln!(out, "| {} |", headers.join(" | "));
        let align: Vec<&str> = left.iter().map(|&l| if l { "---" } else { "---:" }).collect();
        let _ = writeln!(out, "|{}|", align.join("|"));
        for r in rows {
            let cells: Vec<String> = r.iter().map(|c| markdown_cell(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
        out.push('\n');
        for l in &t.legend {
            let _ = writeln!(out, "_{}_\n", markdown_cell(l));
        }
    }
    if !s.notes.is_empty() {
        out.push_str("### Notes\n\n");
        for n in &s.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    escape_lines(&out).into_owned()
}

/// One long-format CSV of every table (see the module documentation for the columns).
pub fn render_csv(s: &Summary) -> String {
    let mut out = format!("{CSV_HEADER}\n");
    let mut all = tables(s);
    all.push(text_list("warnings", "Warnings", &s.warnings));
    all.push(text_list("notes", "Notes", &s.notes));
    for t in &all {
        for r in &t.rows {
            for (c, cell) in t.columns.iter().zip(&r.cells) {
                let key = csv_field(&escape(&r.key));
                let _ = writeln!(out, "{},{key},{},{}", t.id, c.id, cell.csv());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_truncate_like_ftrace() {
        assert_eq!(seconds(532_678_034_999, 6), "532.678034");
        assert_eq!(seconds(20_000_000, 2), "0.02");
        assert_eq!(seconds(3_000_000_000, 0), "3");
    }

    #[test]
    fn durations_use_the_largest_exact_unit() {
        assert_eq!(duration(20_000_000), "20 ms");
        assert_eq!(duration(2_000_000_000), "2 s");
        assert_eq!(duration(500), "500 ns");
        assert_eq!(duration(5_000), "5 µs");
    }

    #[test]
    fn prose_wraps_at_the_text_width_with_a_hanging_indent() {
        let text = "word ".repeat(50);
        let wrapped = wrap("  - ", &text);
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.chars().count() <= TEXT_WIDTH));
        assert!(lines[0].starts_with("  - word"));
        assert!(lines[1].starts_with("    word"));
        assert_eq!(wrapped.split_whitespace().filter(|w| *w == "word").count(), 50);
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("remote shootdown"), "remote shootdown");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
