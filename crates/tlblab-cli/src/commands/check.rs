//! `tlblab sim check`: the safety checker (docs/safety.md) over many perturbed schedules. The
//! check and its report are `tlblab_runs::check`; this module parses, renders and writes.

use crate::cli::CheckArgs;
use crate::render::group;
use anyhow::Result;
use std::fmt::Write;
use std::process::ExitCode;
use tlblab_kernel::exposure::{ExposureReport, Windows};
use tlblab_kernel::{Violation, ViolationKind};
use tlblab_runs::{CheckReport, CheckRequest};
use tlblab_types::Cycles;

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    args.output.check()?;
    let request = CheckRequest {
        machine: args.machine.clone(),
        cpus: args.cpus,
        scenario: args.scenario.clone(),
        params: args.params.to_params(&args.scenario),
        policies: args.policies.clone(),
        schedules: args.schedules,
        first_seed: args.seed,
        max_ipi_delay: args.max_ipi_delay,
        disturb_every: args.disturb_every,
        speed_runs: args.speed_runs,
    };
    let progress = crate::progress::Progress::new("", "schedules", args.schedules, false);
    let reports = tlblab_runs::check(&request, &progress);
    progress.finish();
    let reports = reports?;
    if args.format.json() {
        args.output.emit_data(&tlblab_runs::check_json(&reports)?)?;
    } else {
        let texts: Vec<String> = reports.iter().map(text).collect();
        args.output.emit(&texts.join("\n"))?;
    }
    let violations = reports.iter().any(|r| r.violations > 0);
    Ok(if violations { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn text(r: &CheckReport) -> String {
    let us = |c: Cycles| c.0 as f64 / r.clock_mhz.max(1) as f64;
    let mut out = format!(
        "tlblab sim check: policy {} on scenario {}, {} × {} CPUs\n  policy: {}\n",
        r.policy.name, r.scenario, r.machine, r.cpus, r.policy.mirrors
    );
    let _ = writeln!(
        out,
        "  {} schedules (seeds {}–{}): timer phases and random draws from the seed, every IPI delivered up to {} cycles late (uniform){}",
        group(r.schedules),
        r.first_seed,
        r.first_seed + r.schedules - 1,
        group(r.max_ipi_delay_cycles),
        match r.disturb_every_cycles {
            0 => String::new(),
            every => format!(
                ", and on each CPU every {} cycles on average an interrupts-off window, a kernel-thread preemption or a migration",
                group(every)
            ),
        }
    );
    let _ = writeln!(
        out,
        "  accesses judged: {}; stale uses within an operation's own window (allowed): {}",
        group(r.accesses),
        group(r.window_uses)
    );
    if r.unfinished > 0 {
        let _ = writeln!(out, "  {} schedules did not finish their tasks", group(r.unfinished));
    }
    if let Some(sp) = &r.speed {
        let value = sp.summary.as_ref().map_or("no value (too few operations)".to_string(), |s| {
            format!("{} {}", mean_sd(s.mean, s.stddev), sp.unit)
        });
        let _ = writeln!(
            out,
            "  speed (mean ± sd of {} unperturbed runs without the checker, seeds {}–{}; {} is better): {value}",
            sp.seeds.len(),
            sp.seeds[0],
            sp.seeds[sp.seeds.len() - 1],
            if sp.lower_is_better { "lower" } else { "higher" },
        );
    }
    out += &exposure_text(&r.exposure);
    if r.violations == 0 {
        let _ = writeln!(out, "  no violation in {} schedules", group(r.schedules));
    } else {
        let _ = writeln!(
            out,
            "  VIOLATIONS: {} in {} of {} schedules",
            group(r.violations),
            group(r.schedules_with_violations),
            group(r.schedules)
        );
    }
    for w in &r.witnesses {
        let v = &w.violation;
        let _ = writeln!(out, "\n  witness ({}), seed {}:", kind_text(v.kind), w.seed);
        for (at, event) in witness_trail(v) {
            let _ = writeln!(out, "    {:>12.3} µs  {event}", us(at));
        }
        let _ = writeln!(out, "    replay: {}", w.replay);
    }
    let _ = writeln!(out, "\n  checked in {:.1} s", r.seconds);
    out
}

/// The witness's events, in the order they happened: (cycles, what).
fn witness_trail(v: &Violation) -> Vec<(Cycles, String)> {
    let mut trail = Vec::new();
    if v.kind == ViolationKind::FreedTableCached {
        trail.push((
            v.filled_at,
            format!(
                "CPU {} walked the page table of the 2 MiB block at page {:#x} of mm {} and cached its PDE (table allocation {})",
                v.cpu.0, v.vpn, v.filled_ctx_id, v.filled_version
            ),
        ));
        if let Some((at, cpu, task)) = v.changed {
            trail.push((at, format!("CPU {} (task {}) freed that page table", cpu.0, task.0)));
        }
        trail.push((
            v.used_at,
            format!(
                "the operation that freed it completed; CPU {} still holds the PDE in a PCID it can use without a flush",
                v.cpu.0
            ),
        ));
        return trail;
    }
    trail.push((
        v.filled_at,
        format!(
            "CPU {} walked page {:#x} of mm {} and cached it (PTE version {})",
            v.cpu.0, v.vpn, v.filled_ctx_id, v.filled_version
        ),
    ));
    if let Some((at, cpu, task)) = v.changed {
        trail.push((
            at,
            format!("CPU {} (task {}) changed the PTE (version {})", cpu.0, task.0, v.settled),
        ));
    }
    if let Some(at) = v.settled_at {
        let newer = if v.version > v.settled {
            format!("; version {} is still in its operation", v.version)
        } else {
            String::new()
        };
        trail.push((
            at,
            format!(
                "the operation that changed it completed (version {} settled{newer})",
                v.settled
            ),
        ));
    }
    trail.push((
        v.used_at,
        format!(
            "CPU {} (task {}, mm {}) used the cached translation: {}",
            v.cpu.0,
            v.task.0,
            v.ctx_id,
            kind_text(v.kind)
        ),
    ));
    trail
}

/// `mean ± sd`, both with the decimals that give the mean four significant digits.
fn mean_sd(mean: f64, sd: f64) -> String {
    // log10(0) is −∞, which `as i32` saturates to i32::MIN: subtract without overflow.
    let digits = 3i32.saturating_sub(mean.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{mean:.digits$} ± {sd:.digits$}")
}

/// The declared deferrals and their exposure, as text (nothing when none is declared).
fn exposure_text(e: &ExposureReport) -> String {
    let mut out = String::new();
    for d in &e.declared {
        let _ = writeln!(out, "  declared deferral {}: {}", d.name, d.operations);
        let _ = writeln!(out, "    catch-up: {}", d.catch_up);
    }
    for (what, s) in [("user", &e.user), ("kernel", &e.kernel)] {
        let Some(s) = s else { continue };
        let cpus: Vec<String> =
            s.cpus_exposed.iter().map(|c| format!("{} ×{}", c.cpus, group(c.operations))).collect();
        let _ = writeln!(
            out,
            "  exposure of {what} mappings: {} deferred operations; CPUs exposed per operation: {}",
            group(s.operations),
            if cpus.is_empty() { "-".into() } else { cpus.join(", ") }
        );
        out += &windows_text("per CPU", &s.per_cpu);
        out += &windows_text("per operation (last CPU)", &s.per_operation);
        if let Some(uses) = s.uses {
            let _ = writeln!(
                out,
                "    stale uses inside declared windows (exposure, allowed): {}; declared catch-ups missed: {}",
                group(uses),
                group(s.missed_catch_ups)
            );
        }
    }
    out
}

/// One line of window lengths and one of their log2 histogram.
fn windows_text(what: &str, w: &Windows) -> String {
    let mut out = format!(
        "    {what}: {} windows closed, {} censored (open at the end)",
        group(w.closed),
        group(w.censored)
    );
    if let Some(q) = w.micros {
        let _ = write!(
            out,
            "; µs p50 {:.3}, p90 {:.3}, p99 {:.3}, max {:.3}",
            q.p50, q.p90, q.p99, q.max
        );
    }
    out.push('\n');
    if !w.log2_histogram.is_empty() {
        let buckets: Vec<String> = w
            .log2_histogram
            .iter()
            .map(|b| format!("{}–{}: {}", group(b.from_cycles), group(b.to_cycles), group(b.count)))
            .collect();
        let _ = writeln!(out, "      cycles (log2 buckets): {}", buckets.join(", "));
    }
    out
}

fn kind_text(kind: ViolationKind) -> &'static str {
    match kind {
        ViolationKind::StaleAfterCompletion => {
            "stale after completion: the change's operation had returned"
        }
        ViolationKind::OtherAddressSpace => "another address space's translation",
        ViolationKind::FreedTableCached => {
            "a freed page table still cached: the operation that freed it had returned"
        }
    }
}
