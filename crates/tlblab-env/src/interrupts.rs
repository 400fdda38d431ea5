//! `/proc/interrupts`: every row, and the per-CPU deltas of the `TLB` (TLB shootdowns received) and
//! `CAL` (function-call IPIs) rows around a run.
//!
//! Shape (Linux `arch/x86/kernel/irq.c`, `kernel/irq/proc.c`): a header of `CPUn` columns for the
//! online CPUs, then rows `LABEL: COUNT... DESCRIPTION`. Numbered rows (" 24:") carry a chip and an
//! action name; named rows ("TLB:") a description; a few ("ERR:", "MIS:") have one global count.

use crate::error::counter_delta;
use crate::{Error, Source};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The path read by [`InterruptSnapshot::read`].
pub const PROC_INTERRUPTS: &str = "/proc/interrupts";

/// One row of `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptRow {
    /// The label before the colon, trimmed ("24", "TLB", "ERR").
    pub label: String,
    /// The leading counts: one per CPU column, or fewer for global rows such as "ERR".
    pub counts: Vec<u64>,
    /// The rest of the line, words joined by single spaces ("TLB shootdowns").
    pub description: String,
    /// 1-based line number in the text it was parsed from.
    pub line: usize,
}

/// A parsed `/proc/interrupts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptSnapshot {
    /// The CPU numbers of the header columns (only online CPUs are listed).
    pub cpus: Vec<u32>,
    /// Every row, in file order.
    pub rows: Vec<InterruptRow>,
}

/// Parses the text of `/proc/interrupts`.
pub fn parse_interrupts(text: &str) -> Result<InterruptSnapshot, Error> {
    let err = |line: usize, message: String| Error::Parse {
        what: PROC_INTERRUPTS.to_owned(),
        line,
        message,
    };
    let mut lines = text.lines().enumerate();
    let (_, header) =
        lines.find(|(_, l)| !l.trim().is_empty()).ok_or_else(|| err(1, "empty file".to_owned()))?;
    let cpus = header
        .split_whitespace()
        .map(|col| {
            col.strip_prefix("CPU")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| err(1, format!("header column {col:?} is not CPUn")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if cpus.is_empty() {
        return Err(err(1, "header lists no CPU columns".to_owned()));
    }

    let mut rows = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let (label, rest) = line
            .split_once(':')
            .ok_or_else(|| err(i + 1, format!("no ':' after the row label in {line:?}")))?;
        let label = label.trim();
        if label.is_empty() || label.contains(char::is_whitespace) {
            return Err(err(i + 1, format!("bad row label {label:?}")));
        }
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::with_capacity(cpus.len());
        while counts.len() < cpus.len() {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push(n);
                    words.next();
                }
                None => break,
            }
        }
        rows.push(InterruptRow {
            label: label.to_owned(),
            counts,
            description: words.collect::<Vec<_>>().join(" "),
            line: i + 1,
        });
    }
    Ok(InterruptSnapshot { cpus, rows })
}

impl InterruptSnapshot {
    /// Reads and parses `/proc/interrupts`.
    pub fn read() -> Result<Self, Error> {
        Self::read_from(Path::new(PROC_INTERRUPTS))
    }

    /// Reads and parses a file in `/proc/interrupts` format.
    pub fn read_from(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::Io { path: path.to_owned(), source })?;
        parse_interrupts(&text)
    }

    /// The row with this label.
    pub fn row(&self, label: &str) -> Option<&InterruptRow> {
        self.rows.iter().find(|r| r.label == label)
    }

    /// Per-CPU TLB shootdowns received (the `TLB` row), in header order.
    pub fn tlb(&self) -> Option<&[u64]> {
        self.row("TLB").map(|r| r.counts.as_slice())
    }

    /// Per-CPU function-call interrupts (the `CAL` row), in header order.
    pub fn cal(&self) -> Option<&[u64]> {
        self.row("CAL").map(|r| r.counts.as_slice())
    }
}

/// Per-CPU increments of one row, and their sum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerCpuDelta {
    /// One increment per CPU, in the order of [`InterruptDelta::cpus`].
    pub per_cpu: Vec<u64>,
    /// The sum over CPUs.
    pub total: u64,
}

/// `TLB` and `CAL` increments between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptDelta {
    /// CPU numbers of the columns.
    pub cpus: Vec<u32>,
    /// TLB shootdowns received per CPU.
    pub tlb: Source<PerCpuDelta>,
    /// Function-call IPIs received per CPU.
    pub cal: Source<PerCpuDelta>,
}

impl InterruptDelta {
    /// `after - before` for the `TLB` and `CAL` rows. Fails when the CPU columns differ (hotplug
    /// during the run), a row is shorter than the header, or a counter went backwards.
    pub fn between(before: &InterruptSnapshot, after: &InterruptSnapshot) -> Result<Self, Error> {
        if before.cpus != after.cpus {
            let list = |c: &[u32]| format!("{c:?}");
            return Err(Error::CpusChanged {
                what: PROC_INTERRUPTS.to_owned(),
                before: list(&before.cpus),
                after: list(&after.cpus),
            });
        }
        Ok(InterruptDelta {
            cpus: before.cpus.clone(),
            tlb: row_delta(before, after, "TLB")?,
            cal: row_delta(before, after, "CAL")?,
        })
    }
}

fn row_delta(
    before: &InterruptSnapshot,
    after: &InterruptSnapshot,
    label: &str,
) -> Result<Source<PerCpuDelta>, Error> {
    let (b, a) = match (before.row(label), after.row(label)) {
        (Some(b), Some(a)) => (b, a),
        (None, None) => {
            return Ok(Source::unavailable(format!(
                "{PROC_INTERRUPTS} has no {label} row (only x86 kernels print it)"
            )))
        }
        (b, _) => {
            let (had, lacked) = if b.is_some() { ("before", "after") } else { ("after", "before") };
            return Ok(Source::unavailable(format!(
                "{PROC_INTERRUPTS} had a {label} row {had} the run but not {lacked}"
            )));
        }
    };
    for row in [b, a] {
        if row.counts.len() != before.cpus.len() {
            return Err(Error::Parse {
                what: PROC_INTERRUPTS.to_owned(),
                line: row.line,
                message: format!(
                    "row {label} has {} counts for {} CPU columns",
                    row.counts.len(),
                    before.cpus.len()
                ),
            });
        }
    }
    let mut per_cpu = Vec::with_capacity(b.counts.len());
    for ((cpu, &x), &y) in before.cpus.iter().zip(&b.counts).zip(&a.counts) {
        per_cpu.push(counter_delta(&format!("{label} on CPU{cpu}"), x, y)?);
    }
    let total = per_cpu.iter().sum();
    Ok(Source::Available(PerCpuDelta { per_cpu, total }))
}
