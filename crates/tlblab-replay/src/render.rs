//! Plain-text renderings of the reports, every figure with its label and unit.

use crate::plan::{KindCounts, TraceSummary};
use crate::report::{PolicyReplay, ReplayReport, SweepReport};
use std::fmt::Write;

/// Columns of text, right-aligned except the first.
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(head: &[&str]) -> Table {
        Table { rows: vec![head.iter().map(|s| s.to_string()).collect()] }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self, indent: &str) -> String {
        let cols = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let width: Vec<usize> = (0..cols)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            out.push_str(indent);
            for (c, cell) in row.iter().enumerate() {
                let pad = width[c] - cell.chars().count();
                if c == 0 {
                    out.push_str(cell);
                    out.push_str(&" ".repeat(pad));
                } else {
                    out.push_str("  ");
                    out.push_str(&" ".repeat(pad));
                    out.push_str(cell);
                }
            }
            out.push('\n');
        }
        out
    }
}

fn ms(cycles: f64, mhz: u64) -> String {
    format!("{:.3}", cycles / mhz.max(1) as f64 / 1000.0)
}

fn per(total: i64, n: u64) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{:.0}", total as f64 / n as f64)
    }
}

fn kinds(k: &KindCounts) -> String {
    format!("{} ({} full, {} partial, {} none)", k.total, k.full, k.partial, k.none)
}

fn trace_lines(out: &mut String, t: &TraceSummary, assumptions: &[String]) {
    let _ = writeln!(
        out,
        "  trace: {} records over {:.3} ms (clock {}{}), {} CPUs",
        t.records,
        t.span_ns as f64 / 1e6,
        t.clock,
        t.kernel_release.as_deref().map(|k| format!(", kernel {k}")).unwrap_or_default(),
        t.cpus
    );
    if t.quiet_gaps > 0 {
        let _ = writeln!(
            out,
            "  quiet gaps: {} of more than {} s without a record, each replayed as {} s ({:.3} s of trace time skipped)",
            t.quiet_gaps,
            crate::MAX_QUIET_NS / 1_000_000_000,
            crate::MAX_QUIET_NS / 1_000_000_000,
            t.quiet_ns_skipped as f64 / 1e9
        );
    }
    let _ = writeln!(
        out,
        "  schedule: {} ({} threads from sched_switch, {} inferred); {} processes, {} threads ({} without a known thread group); {} kernel threads without requests left out (idle time)",
        match t.schedule {
            crate::plan::ScheduleMode::Switch => "from sched_switch records",
            crate::plan::ScheduleMode::Inferred => "inferred from events",
        },
        t.threads_from_switches,
        t.threads_inferred,
        t.processes,
        t.threads,
        t.threads_without_tgid,
        t.kernel_threads_left_out
    );
    let r = &t.requests;
    let _ = writeln!(
        out,
        "  requests: {} (reason 4+3 pairs {}, reason 3 alone {}, reason 4 alone {}, batched reclaim {}); censored (full at recording) {}, unknown size {}, huge-page stride {}, clamped {}; initiator events without a thread {}",
        r.total, r.paired, r.local_only, r.send_only, r.batches, r.censored, r.unknown_size, r.huge_stride, r.clamped, t.requests_without_thread
    );
    let buckets: [(u64, u64, &str); 6] = [
        (1, 1, "1"),
        (2, 8, "2-8"),
        (9, 33, "9-33"),
        (34, 64, "34-64"),
        (65, 512, "65-512"),
        (513, u64::MAX, ">512"),
    ];
    let sizes: Vec<String> = buckets
        .iter()
        .map(|&(lo, hi, name)| {
            let n: u64 = r.sizes.range(lo..=hi).map(|(_, c)| c).sum();
            format!("{name}: {n}")
        })
        .collect();
    let _ = writeln!(out, "  request sizes (pages, known sizes only): {}", sizes.join(", "));
    let _ = writeln!(out, "  assumptions:");
    for a in assumptions {
        let _ = writeln!(out, "    - {a}");
    }
}

fn flush_table(out: &mut String, p: &PolicyReplay) {
    let mut t = Table::new(&["tlb_flush reason", "recorded", "replayed"]);
    for r in &p.tlb_flush {
        t.row(vec![format!("{} ({})", r.label, r.reason), kinds(&r.recorded), kinds(&r.replayed)]);
    }
    out.push_str(&t.render("    "));
}

/// The replay report as text.
pub fn render_replay(r: &ReplayReport) -> String {
    let mut out = format!("tlblab sim replay on machine {}\n", r.machine);
    trace_lines(&mut out, &r.trace, &r.assumptions);
    out.push('\n');
    let mut t = Table::new(&[
        "policy",
        "ceiling",
        "requests",
        "full",
        "partial",
        "IPIs sent",
        "IPIs recv",
        "initiator cyc/req",
        "receiver cyc/IPI",
        "refill cyc/req",
        "refill walks",
        "sim time ms",
        "late reqs",
        "max slip µs",
    ]);
    for p in &r.policies {
        t.row(vec![
            p.policy.clone(),
            p.ceiling.to_string(),
            p.requests_replayed.to_string(),
            p.requests_full.to_string(),
            p.requests_partial.to_string(),
            p.ipis_sent.to_string(),
            p.ipis_received.to_string(),
            per(p.cost.initiator_cycles, p.requests_replayed),
            per(p.cost.receiver_cycles, p.ipis_received),
            per(p.cost.refill_cycles, p.requests_replayed),
            p.cost.refill_walks.to_string(),
            ms(p.elapsed_cycles as f64, p.clock_mhz),
            p.slip.late_requests.to_string(),
            format!("{:.1}", p.slip.max_ns / 1000.0),
        ]);
    }
    out.push_str(&t.render("  "));
    for p in &r.policies {
        let _ = writeln!(
            out,
            "\n  {} — {}{}",
            p.policy,
            p.mirrors,
            if p.complete {
                String::new()
            } else {
                format!(" [INCOMPLETE: {} threads did not finish]", p.threads_unfinished)
            }
        );
        let c = &p.cost;
        let _ = writeln!(
            out,
            "    flush cost (replay minus twin): initiators {} cycles, receivers {} cycles, refill {} cycles ({} walks), page faults {:+}",
            c.initiator_cycles, c.receiver_cycles, c.refill_cycles, c.refill_walks, c.page_faults
        );
        let _ = writeln!(
            out,
            "    requests: {} replayed, {} full at ceiling {} ({} censored), {} partial, {} batched; slip: {} late by > 1 µs, mean {:.2} µs, max {:.2} µs; setup late for {} threads",
            p.requests_replayed,
            p.requests_full,
            p.ceiling,
            p.requests_censored,
            p.requests_partial,
            p.requests_batch,
            p.slip.late_requests,
            p.slip.mean_ns / 1000.0,
            p.slip.max_ns / 1000.0,
            p.setup_late_threads
        );
        let _ = writeln!(
            out,
            "    IPIs sent per CPU {:?}, received per CPU {:?}",
            p.ipis_sent_per_cpu, p.ipis_received_per_cpu
        );
        flush_table(&mut out, p);
    }
    out
}

/// The ceiling sweep as text.
pub fn render_sweep(r: &SweepReport) -> String {
    let mut out = format!(
        "tlblab sim replay: tlb_single_page_flush_ceiling sweep under {} on machine {}\n",
        r.policy, r.machine
    );
    trace_lines(&mut out, &r.trace, &r.assumptions);
    out.push('\n');
    let mut t = Table::new(&[
        "ceiling",
        "full reqs",
        "partial reqs",
        "censored (full)",
        "local full",
        "local partial",
        "remote flushes",
        "IPIs sent",
        "initiator cyc",
        "receiver cyc",
        "refill cyc",
        "refill walks",
        "total cyc",
        "total cyc/req",
    ]);
    for p in &r.rows {
        let local =
            p.tlb_flush.iter().find(|x| x.reason == 3).map(|x| x.replayed).unwrap_or_default();
        let remote =
            p.tlb_flush.iter().find(|x| x.reason == 1).map(|x| x.replayed).unwrap_or_default();
        let c = &p.cost;
        let total = c.initiator_cycles + c.receiver_cycles + c.refill_cycles;
        t.row(vec![
            p.ceiling.to_string(),
            p.requests_full.to_string(),
            p.requests_partial.to_string(),
            p.requests_censored.to_string(),
            local.full.to_string(),
            local.partial.to_string(),
            remote.total.to_string(),
            p.ipis_sent.to_string(),
            c.initiator_cycles.to_string(),
            c.receiver_cycles.to_string(),
            c.refill_cycles.to_string(),
            c.refill_walks.to_string(),
            total.to_string(),
            per(total, p.requests_replayed),
        ]);
    }
    out.push_str(&t.render("  "));
    let _ = writeln!(
        out,
        "  (full/partial reqs: requests above / at or below the ceiling; censored requests stay full at every ceiling; local = reason 3, remote = reason 1 events of the model; total = initiator + receiver + refill cycles)"
    );
    if r.options.refill == crate::options::Refill::Flushed {
        let _ = writeln!(
            out,
            "  NOTE: refill of the flushed pages only: a full flush costs no more refill than a partial one here; a working set (--refill working-set) shows the ceiling's trade-off"
        );
    }
    if let Some(p) = r.rows.iter().find(|p| !p.complete) {
        let _ = writeln!(
            out,
            "  INCOMPLETE at ceiling {}: {} threads did not finish",
            p.ceiling, p.threads_unfinished
        );
    }
    out
}
