//! `tlblab sim check`: the safety checker (docs/safety.md) over many perturbed schedules.

use crate::cli::{CheckArgs, ModeArg, StormOpArg};
use crate::render::group;
use anyhow::Result;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt::Write;
use std::process::ExitCode;
use std::time::Instant;
use tlblab_kernel::exposure::{ExposureReport, RunExposure, Windows};
use tlblab_kernel::workloads::{scenario, Params, ScenarioInfo};
use tlblab_kernel::{Mechanisms, Policy, Violation, ViolationKind};
use tlblab_sim::machine::MachineSpec;
use tlblab_stats::Summary;
use tlblab_types::Cycles;

/// The JSON schema of `tlblab sim check --json`.
pub const SCHEMA: &str = "tlblab.sim.check/1";

/// The JSON output.
#[derive(Serialize)]
struct CheckReport {
    schema: &'static str,
    tlblab_version: &'static str,
    machine: String,
    cpus: u16,
    scenario: &'static str,
    params: Params,
    policy: Policy,
    schedules: u64,
    first_seed: u64,
    max_ipi_delay_cycles: u64,
    disturb_every_cycles: u64,
    clock_mhz: u64,
    /// Accesses judged over all schedules.
    accesses: u64,
    /// Stale uses within an operation's own window (allowed), over all schedules.
    window_uses: u64,
    /// Schedules in which the scenario's essential tasks did not finish (a scenario with a
    /// window, such as kbuild, runs to its end instead: never counted).
    unfinished: u64,
    /// Violations over all schedules.
    violations: u64,
    /// Schedules with at least one violation.
    schedules_with_violations: u64,
    /// The first violation of each kind (lowest seed, then earliest use), to replay.
    witnesses: Vec<Witness>,
    /// Declared deferrals (docs/safety.md §4.4) and their exposure over all schedules.
    exposure: ExposureReport,
    /// The policy's speed on the scenario, from unperturbed runs without the checker.
    speed: Option<Speed>,
}

/// The scenario's metric over unperturbed runs (no IPI delays, no disturbances, no checker).
#[derive(Serialize)]
struct Speed {
    /// The metric's unit (µs/op, ops/s, s, CPU-s/s).
    unit: &'static str,
    lower_is_better: bool,
    /// The seeds run, and each one's value.
    seeds: Vec<u64>,
    values: Vec<f64>,
    /// Their summary (mean, sample standard deviation, n, …); `None` when a run had no value.
    summary: Option<Summary>,
}

/// Runs the scenario unperturbed on `args.speed_runs` seeds; `None` when none are asked for.
fn speed(
    args: &CheckArgs,
    spec: &MachineSpec,
    policy: &Policy,
    info: &ScenarioInfo,
    params: &Params,
) -> Result<Option<Speed>> {
    if args.speed_runs == 0 {
        return Ok(None);
    }
    let seeds: Vec<u64> = (0..args.speed_runs).map(|i| args.seed + i).collect();
    let values = seeds
        .par_iter()
        .map(|&seed| -> Result<f64> {
            let mut k = super::scenario_kernel(
                spec,
                policy,
                (args.cpus, seed, Mechanisms::all()),
                (info, params),
                |_| {},
            )?;
            info.run(&mut k, params);
            Ok(info.metric.value(&k.report()))
        })
        .collect::<Result<Vec<f64>>>()?;
    Ok(Some(Speed {
        unit: info.metric.unit(),
        lower_is_better: info.metric.lower_is_better(),
        summary: Summary::of(&values).ok(),
        seeds,
        values,
    }))
}

/// A violation with the seed and command that replay it.
#[derive(Serialize)]
struct Witness {
    seed: u64,
    replay: String,
    violation: Violation,
}

/// One schedule's outcome.
struct Outcome {
    seed: u64,
    finished: bool,
    accesses: u64,
    window_uses: u64,
    violations: Vec<Violation>,
    exposure: RunExposure,
}

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    args.output.check()?;
    let spec = super::load_preset(&args.machine)?;
    let info = scenario(&args.scenario)?;
    // Every policy is loaded (and a bad one refused) before anything runs.
    let policies: Vec<Policy> =
        args.policies.iter().map(|p| Policy::load(p)).collect::<Result<_, _>>()?;
    let params = args.params.to_params();
    let progress = crate::progress::Progress::new("", "schedules", args.schedules, false);
    let mut reports = Vec::new();
    let mut text = String::new();
    for (name, policy) in args.policies.iter().zip(&policies) {
        let started = Instant::now();
        progress.set_message(&policy.name);
        progress.set_total(args.schedules);
        let report = check_one(args, (&spec, info, &params), (name, policy), &progress)?;
        if !text.is_empty() {
            text.push('\n');
        }
        text += &self::text(&report, started.elapsed().as_secs_f64());
        reports.push(report);
    }
    progress.finish();
    let violations = reports.iter().any(|r| r.violations > 0);
    if args.format.json() {
        // One policy: its report, as before; several: an array of them.
        let json = match reports.as_slice() {
            [one] => serde_json::to_string_pretty(one)?,
            all => serde_json::to_string_pretty(all)?,
        };
        args.output.emit(&(json + "\n"))?;
    } else {
        args.output.emit(&text)?;
    }
    Ok(if violations { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Checks one policy (`name` as given on the command line) under every schedule.
fn check_one(
    args: &CheckArgs,
    (spec, info, params): (&MachineSpec, &'static ScenarioInfo, &Params),
    (name, policy): (&str, &Policy),
    progress: &crate::progress::Progress,
) -> Result<CheckReport> {
    let params = params.clone();
    let seeds: Vec<u64> = (0..args.schedules).map(|i| args.seed + i).collect();
    // Each schedule is independent and deterministic; results come back in seed order.
    let outcomes: Vec<Outcome> = seeds
        .par_iter()
        .map(|&seed| -> Result<Outcome> {
            let mut k = super::scenario_kernel(
                spec,
                policy,
                (args.cpus, seed, Mechanisms::all()),
                (info, &params),
                |k| {
                    k.enable_checker();
                    k.perturb(Cycles(args.max_ipi_delay));
                    k.disturb(Cycles(args.disturb_every));
                },
            )?;
            // A scenario with a window stops at its end, tasks finished or not.
            let windowed = info.time_limit(&params, k.clock_mhz()) != Cycles(u64::MAX);
            let finished = info.run(&mut k, &params) || windowed;
            let (accesses, window_uses) = k.check_counts().unwrap_or_default();
            progress.inc();
            Ok(Outcome {
                seed,
                finished,
                accesses,
                window_uses,
                violations: k.violations().to_vec(),
                exposure: k.exposure(),
            })
        })
        .collect::<Result<_>>()?;
    let speed = speed(args, spec, policy, info, &params)?;
    let clock_mhz = spec.raw().kernel.as_ref().map_or(0, |k| k.clock.mhz);
    let mut witnesses: Vec<Witness> = Vec::new();
    for o in &outcomes {
        for kind in ViolationKind::ALL {
            if witnesses.iter().any(|w| w.violation.kind == kind) {
                continue;
            }
            if let Some(v) =
                o.violations.iter().filter(|v| v.kind == kind).min_by_key(|v| v.used_at)
            {
                witnesses.push(Witness {
                    seed: o.seed,
                    replay: replay(args, name, o.seed),
                    violation: v.clone(),
                });
            }
        }
    }
    let report = CheckReport {
        schema: SCHEMA,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        machine: spec.name().to_string(),
        cpus: args.cpus,
        scenario: info.name,
        params,
        policy: policy.clone(),
        schedules: args.schedules,
        first_seed: args.seed,
        max_ipi_delay_cycles: args.max_ipi_delay,
        disturb_every_cycles: args.disturb_every,
        clock_mhz,
        accesses: outcomes.iter().map(|o| o.accesses).sum(),
        window_uses: outcomes.iter().map(|o| o.window_uses).sum(),
        unfinished: outcomes.iter().filter(|o| !o.finished).count() as u64,
        violations: outcomes.iter().map(|o| o.violations.len() as u64).sum(),
        schedules_with_violations: outcomes.iter().filter(|o| !o.violations.is_empty()).count()
            as u64,
        witnesses,
        speed,
        exposure: ExposureReport::of(policy, outcomes.iter().map(|o| &o.exposure), clock_mhz),
    };
    Ok(report)
}

/// The command that runs exactly the schedule of `seed` again.
fn replay(args: &CheckArgs, policy: &str, seed: u64) -> String {
    let p = &args.params;
    let mode = match p.mode {
        ModeArg::Threads => "threads",
        ModeArg::Processes => "processes",
    };
    let op = match p.op {
        StormOpArg::Munmap => "munmap",
        StormOpArg::Mprotect => "mprotect",
    };
    format!(
        "tlblab sim check --policies {} --scenario {} --machine {} --cpus {} --max-ipi-delay {} --disturb-every {} --iterations {} --touch {} --busy {} --tasks {} --mode {mode} --op {op} --pages {} --cycles-per-page {} --jobs {} --window-ms {} --burst-us {} --warmup-ms {} --schedules 1 --seed {seed}",
        policy,
        args.scenario,
        args.machine,
        args.cpus,
        args.max_ipi_delay,
        args.disturb_every,
        p.iterations,
        p.touch,
        p.busy,
        p.tasks,
        p.pages,
        p.cycles_per_page,
        p.jobs,
        p.window_ms,
        p.burst_us,
        p.warmup_ms,
    )
}

fn text(r: &CheckReport, seconds: f64) -> String {
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
    let _ = writeln!(out, "\n  checked in {seconds:.1} s");
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
