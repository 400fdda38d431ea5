//! Safety checks (`tlblab sim check --json`, schema `tlblab.sim.check/1`): per policy and
//! scenario, the schedules run, the accesses judged, the stale uses the kernel allows inside an
//! operation's window, the violations and the verdict, then each violation's witness.

use serde::Deserialize;
use serde_json::Value;

use crate::doc::{b, c, cell, t, Block, Document, Table, Tone};
use crate::fmt;

/// One `tlblab sim check` result (the fields the report shows).
#[derive(Debug, Clone, Deserialize)]
pub struct Check {
    /// The policy as `tlblab_kernel::Policy` serialises it (`name`, `mirrors`, …).
    pub policy: Value,
    /// The scenario.
    pub scenario: String,
    /// Simulated CPUs.
    pub cpus: u64,
    /// The scenario's parameters.
    pub params: Value,
    /// Schedules run.
    pub schedules: u64,
    /// The first seed.
    pub first_seed: u64,
    /// Largest extra IPI delay, cycles.
    pub max_ipi_delay_cycles: u64,
    /// Cycles per µs.
    pub clock_mhz: u64,
    /// Accesses judged.
    pub accesses: u64,
    /// Allowed stale uses inside an operation's window.
    pub window_uses: u64,
    /// Violations.
    pub violations: u64,
    /// Schedules with a violation.
    pub schedules_with_violations: u64,
    /// The first violation of each kind, with its seed and replay command.
    #[serde(default)]
    pub witnesses: Vec<Value>,
    /// Mean gap between disturbances per CPU, cycles (absent before disturbances existed).
    #[serde(default)]
    pub disturb_every_cycles: Option<u64>,
    /// The policy's speed on the scenario (unperturbed runs): `unit`, `summary`, `seeds`.
    #[serde(default)]
    pub speed: Option<Value>,
    /// Declared deferrals and their exposure (`declared`, `user`, `kernel`; docs/safety.md §11).
    #[serde(default)]
    pub exposure: Option<Value>,
}

impl Check {
    /// " · mean" of the speed (the column names the unit), or "" without one.
    fn speed_text(&self) -> String {
        let Some(sp) = &self.speed else { return String::new() };
        match sp["summary"]["mean"].as_f64() {
            Some(mean) => format!(" · {}", fmt::num(mean)),
            None => " · no speed (too few operations)".to_string(),
        }
    }

    /// The speed's sample standard deviation relative to its mean, and its runs.
    fn speed_spread(&self) -> Option<(f64, u64)> {
        let s = &self.speed.as_ref()?["summary"];
        let (mean, sd, n) = (s["mean"].as_f64()?, s["stddev"].as_f64()?, s["n"].as_u64()?);
        Some(((sd / mean).abs(), n))
    }

    /// The policy's name.
    pub fn policy_name(&self) -> &str {
        self.policy["name"].as_str().unwrap_or("?")
    }

    /// Whether `other` ran the same scenario at the same settings (a column of the matrix).
    pub fn same_setup(&self, other: &Check) -> bool {
        self.scenario == other.scenario && self.cpus == other.cpus && self.params == other.params
    }

    /// The column's name: the scenario's, with its pages when another column runs the same
    /// scenario at other settings.
    fn column_label(&self, columns: &[&Check]) -> String {
        match columns.iter().any(|c| c.scenario == self.scenario && !c.same_setup(self)) {
            true => format!("{} ({} pages)", self.scenario, self.params["pages"]),
            false => self.scenario.clone(),
        }
    }

    /// The parameters that set the scenario's size.
    fn settings(&self) -> String {
        let p = &self.params;
        let get = |k: &str| p[k].as_u64().unwrap_or(0);
        let mut s = format!("{} CPUs, {} tasks, {} pages", self.cpus, get("tasks"), get("pages"));
        s += &format!(", {} iterations", get("iterations"));
        if self.scenario.starts_with("madvise-busy") {
            s += &format!(", busy {}", get("busy"));
        }
        s
    }
}

/// One section for all the checks given: a table of verdicts, then the witnesses.
pub fn checks(doc: &mut Document, name: &str, checks: &[Check]) {
    doc.heading(2, "Safety: stale translations each policy lets a CPU use".to_string());
    doc.para(vec![
        b("How to read: "),
        t(format!(
            "tlblab sim check ({name}) runs each scenario under many perturbed schedules (the seed sets the timer phases, the random draws, an extra delay of up to the given number of cycles on every IPI, and a stall as long inside each mm switch) with a version on every PTE. Each CPU is also disturbed at random points: interrupts off for a while, preempted from user mode by a kernel thread (so it goes lazy), or migrated. A violation is a user access translated by a TLB entry filled before a change whose operation (system call, fault) had already returned, or filled by another address space; or, when an operation that freed a page table returns, a paging-structure-cache entry still pointing at that table in a PCID the CPU can use without a flush. A stale use while the operation is still running is allowed by the kernel and counted apart. The rule and its sources: docs/safety.md. Kernel-side accesses are not modelled, so XPFO's kernel exposure is measured by its windows (below) rather than by stale uses."
        )),
    ]);
    // Policies down, scenarios across: each cell is a verdict.
    let mut policies: Vec<&str> = Vec::new();
    let mut scenarios: Vec<&Check> = Vec::new();
    for ch in checks {
        if !policies.contains(&ch.policy_name()) {
            policies.push(ch.policy_name());
        }
        if !scenarios.iter().any(|s| s.same_setup(ch)) {
            scenarios.push(ch);
        }
    }
    let mut head = vec!["policy".to_string()];
    head.extend(scenarios.iter().map(|s| match &s.speed {
        Some(sp) => {
            format!("{} · {}", s.column_label(&scenarios), sp["unit"].as_str().unwrap_or("speed"))
        }
        None => s.column_label(&scenarios),
    }));
    // Text cells, so that long verdicts wrap rather than widen the page.
    let mut table = Table::new(&head);
    for policy in &policies {
        let mut row = vec![crate::doc::Cell::from(policy.to_string())];
        for sc in &scenarios {
            let found = checks.iter().find(|c| c.policy_name() == *policy && c.same_setup(sc));
            row.push(match found {
                None => cell("-", Tone::Missing),
                Some(c) if c.violations == 0 => {
                    cell(format!("no violation{}", c.speed_text()), Tone::Plain)
                }
                Some(c) => cell(
                    format!(
                        "VIOLATIONS: {} in {} of {}{}",
                        fmt::group(c.violations),
                        fmt::group(c.schedules_with_violations),
                        fmt::group(c.schedules),
                        c.speed_text()
                    ),
                    Tone::Significant,
                ),
            });
        }
        table.row(row);
    }
    let spread = checks.iter().filter_map(Check::speed_spread);
    let (worst, runs) = spread.fold((0.0f64, 0), |(w, n), (r, k)| (w.max(r), n.max(k)));
    let speed_note = match runs {
        0 => String::new(),
        runs => format!(
            " After the dot, the policy's speed on that scenario: the mean of {runs} unperturbed runs without the checker (seeds from the first schedule's), in the scenario's metric and the unit its column names (µs/op: lower is better); their sample standard deviation is at most {} of their mean anywhere in this table.",
            fmt::signed_pct(worst).trim_start_matches('+')
        ),
    };
    doc.table(table.note(format!(
        "Each cell: the verdict over the schedules run (their number is in the next table).{speed_note} A violation count counts uses: an access retried after a fault judges the same stale entry again. Policies named bad-… are known-bad variants shipped to show that the checker catches them."
    )));
    // The scenarios once: their settings and what was judged over every policy.
    let mut table = Table::new(&[
        "scenario",
        "settings",
        "disturbances",
        "schedules (seeds)",
        "IPI delay, cycles",
        "accesses judged",
        "allowed in-window stale uses",
    ])
    .numeric_from(3);
    for sc in &scenarios {
        let of = || checks.iter().filter(|c| c.same_setup(sc));
        table.row(vec![
            sc.column_label(&scenarios).into(),
            sc.settings().into(),
            match sc.disturb_every_cycles {
                None | Some(0) => "none".to_string(),
                Some(every) => format!("every {} cycles", fmt::group(every)),
            }
            .into(),
            format!(
                "{} ({}–{})",
                fmt::group(sc.schedules),
                sc.first_seed,
                sc.first_seed + sc.schedules.saturating_sub(1)
            )
            .into(),
            format!("0–{}", fmt::group(sc.max_ipi_delay_cycles)).into(),
            fmt::group(of().map(|c| c.accesses).sum()).into(),
            fmt::group(of().map(|c| c.window_uses).sum()).into(),
        ]);
    }
    let table = table.note(
        "Per scenario, over every policy: the schedules each policy ran, the uniform range of each IPI's extra delay (also the longest mm-switch stall and disturbance window), how often each CPU was disturbed, on average (an interrupts-off window, a preemption by a kernel thread or a migration), the accesses judged and the stale uses inside an operation's own window (allowed).".to_string(),
    );
    doc.table(table);
    exposure(doc, checks, &scenarios);
    let witnesses: Vec<(&Check, &Value)> =
        checks.iter().flat_map(|ch| ch.witnesses.iter().map(move |w| (ch, w))).collect();
    if witnesses.is_empty() {
        return;
    }
    doc.heading(3, "Witnesses".to_string());
    let items = witnesses
        .iter()
        .map(|(ch, w)| {
            let v = &w["violation"];
            let us = |x: &Value| {
                x.as_u64().map_or("?".to_string(), |c| {
                    format!("{:.3} µs", c as f64 / ch.clock_mhz.max(1) as f64)
                })
            };
            let changed = &v["changed"];
            vec![
                b(format!("{} on {}, seed {}: ", ch.policy_name(), ch.scenario, w["seed"])),
                t(match v["kind"].as_str() {
                    Some("freed-table-cached") => format!(
                        "CPU {} cached the PDE of the page table of the 2 MiB block at page {:#x} at {} (table allocation {}); CPU {} freed that table at {}; the operation completed at {} with CPU {} still holding the PDE in a PCID it can use without a flush (freed-table-cached). Replay: ",
                        v["cpu"],
                        v["vpn"].as_u64().unwrap_or(0),
                        us(&v["filled_at"]),
                        v["filled_version"],
                        changed[1],
                        us(&changed[0]),
                        us(&v["settled_at"]),
                        v["cpu"],
                    ),
                    _ => format!(
                        "CPU {} cached page {:#x} at {} (PTE version {}); CPU {} changed the PTE at {} (version {}); that operation completed at {}; CPU {} used the cached translation at {} ({}). Replay: ",
                        v["cpu"],
                        v["vpn"].as_u64().unwrap_or(0),
                        us(&v["filled_at"]),
                        v["filled_version"],
                        changed[1],
                        us(&changed[0]),
                        v["settled"],
                        us(&v["settled_at"]),
                        v["cpu"],
                        us(&v["used_at"]),
                        v["kind"].as_str().unwrap_or("?"),
                    ),
                }),
                c(w["replay"].as_str().unwrap_or("")),
            ]
        })
        .collect();
    doc.push(Block::List(items));
}

/// The exposure of the policies that declare a deferral: per policy, scenario and kind of
/// mapping, how many CPUs each deferred operation left holding a stale translation and how
/// long each stayed usable, as a distribution (their verdicts and speeds are in the matrix).
fn exposure(doc: &mut Document, checks: &[Check], scenarios: &[&Check]) {
    let rows: Vec<(&Check, &str, &Value)> = checks
        .iter()
        .flat_map(|ch| {
            ["user", "kernel"].into_iter().filter_map(move |kind| {
                let e = ch.exposure.as_ref()?.get(kind).filter(|e| !e.is_null())?;
                Some((ch, kind, e))
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    doc.heading(3, "Exposure of declared deferrals".to_string());
    let mut table = Table::new(&[
        "policy",
        "scenario",
        "mappings",
        "deferred operations",
        "other CPUs left stale: operations",
        "window per CPU, µs: p50 / p90 / p99 / max (closed; open at the end)",
        "window per operation, µs: p50 / p99 / max",
        "stale uses in windows",
    ]);
    let quantiles = |w: &Value, keys: &[&str]| -> String {
        let m = &w["micros"];
        if m.is_null() {
            return "none closed".to_string();
        }
        keys.iter()
            .map(|k| m[*k].as_f64().map_or("?".into(), fmt::num))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    for (ch, kind, e) in rows {
        let spread: Vec<String> = e["cpus_exposed"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| {
                format!("{}: {}", b["cpus"], fmt::group(b["operations"].as_u64().unwrap_or(0)))
            })
            .collect();
        let per_cpu = &e["per_cpu"];
        table.row(vec![
            ch.policy_name().to_string().into(),
            ch.column_label(scenarios).into(),
            kind.to_string().into(),
            fmt::group(e["operations"].as_u64().unwrap_or(0)).into(),
            spread.join(", ").into(),
            format!(
                "{} ({}; {})",
                quantiles(per_cpu, &["p50", "p90", "p99", "max"]),
                fmt::group(per_cpu["closed"].as_u64().unwrap_or(0)),
                fmt::group(per_cpu["censored"].as_u64().unwrap_or(0))
            )
            .into(),
            quantiles(&e["per_operation"], &["p50", "p99", "max"]).into(),
            e["uses"].as_u64().map_or("not modelled".to_string(), fmt::group).into(),
        ]);
    }
    doc.table(table.note(
        "A policy that defers flushes past an operation's completion on purpose declares it (docs/safety.md §4.4): latr leaves munmap and MADV_DONTNEED flushes to each CPU's next tick or context switch, xpfo-deferred leaves the kernel direct-map flush of a page given to user space to each CPU's next context switch. A stale use before that CPU's catch-up is exposure, counted here; after it, a violation. Each window runs from the operation's completion to one exposed CPU's catch-up (per CPU) or to the last one's (per operation); percentiles (type 7) over the closed windows of every schedule; windows still open when a run ended are counted apart (they are at least as long as the run's remainder). Kernel mappings: the model makes no kernel memory accesses, so their uses are not modelled. Each policy's verdict and speed on the same scenarios are in the table above.".to_string(),
    ));
}
