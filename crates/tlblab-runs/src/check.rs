//! `tlblab sim check`: the safety checker (docs/safety.md) over many perturbed schedules.

use crate::{Progress, RunsError};
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;
use tlblab_kernel::exposure::{ExposureReport, RunExposure};
use tlblab_kernel::workloads::{scenario, Params, ScenarioInfo, StormOp};
use tlblab_kernel::{Mechanisms, Policy, Violation, ViolationKind};
use tlblab_sim::machine::MachineSpec;
use tlblab_stats::Summary;
use tlblab_types::Cycles;

/// The JSON schema of [`CheckReport`].
pub const CHECK_SCHEMA: &str = "tlblab.sim.check/1";

/// What to check: each policy on one scenario under `schedules` perturbed schedules.
#[derive(Clone, Debug)]
pub struct CheckRequest {
    /// A built-in preset name, `host` (this machine), or a path to a preset file.
    pub machine: String,
    /// Simulated CPUs, 1 to 4096.
    pub cpus: u16,
    /// The scenario's name (`tlblab sim scenarios`).
    pub scenario: String,
    /// The scenario's parameters (each scenario uses those it names).
    pub params: Params,
    /// Built-in policy names or policy files, checked one after the other.
    pub policies: Vec<String>,
    /// Perturbed schedules, at least 1, with seeds `first_seed`, `first_seed + 1`, ….
    pub schedules: u64,
    /// The first seed (of the schedules, and of the speed runs).
    pub first_seed: u64,
    /// Largest extra delay of an IPI's delivery, cycles (0: the preset's latency only).
    pub max_ipi_delay: u64,
    /// Mean gap between disturbances on each CPU, cycles (0: none).
    pub disturb_every: u64,
    /// Unperturbed runs without the checker that measure each policy's speed (0: none).
    pub speed_runs: u64,
}

impl CheckRequest {
    /// `scenario` under `policies` with the command line's defaults: machine skylake, 4 CPUs,
    /// default parameters, 1000 schedules from seed 1, IPIs up to 20,000 cycles late, a
    /// disturbance every 200,000 cycles, 5 speed runs.
    pub fn new(scenario: &str, policies: &[&str]) -> CheckRequest {
        CheckRequest {
            machine: "skylake".into(),
            cpus: 4,
            scenario: scenario.into(),
            params: Params::default(),
            policies: policies.iter().map(|p| p.to_string()).collect(),
            schedules: 1000,
            first_seed: 1,
            max_ipi_delay: 20_000,
            disturb_every: 200_000,
            speed_runs: 5,
        }
    }

    /// The `tlblab` command line that checks exactly the schedule of `seed` again, for
    /// `policy` as the request names it.
    pub fn replay_command(&self, policy: &str, seed: u64) -> String {
        let p = &self.params;
        let mode = if p.threads { "threads" } else { "processes" };
        let op = match p.op {
            StormOp::Munmap => "munmap",
            StormOp::Mprotect => "mprotect",
        };
        format!(
            "tlblab sim check --policies {} --scenario {} --machine {} --cpus {} --max-ipi-delay {} --disturb-every {} --iterations {} --touch {} --busy {} --tasks {} --mode {mode} --op {op} --pages {} --cycles-per-page {} --jobs {} --window-ms {} --burst-us {} --warmup-ms {} --schedules 1 --seed {seed}",
            policy,
            self.scenario,
            self.machine,
            self.cpus,
            self.max_ipi_delay,
            self.disturb_every,
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
}

/// One policy's check; its JSON is schema [`CHECK_SCHEMA`] (docs/safety.md).
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// [`CHECK_SCHEMA`].
    pub schema: &'static str,
    /// The version of tlblab that ran it.
    pub tlblab_version: &'static str,
    /// The machine preset's name.
    pub machine: String,
    /// Simulated CPUs.
    pub cpus: u16,
    /// The scenario.
    pub scenario: &'static str,
    /// The scenario's parameters.
    pub params: Params,
    /// The policy checked.
    pub policy: Policy,
    /// Schedules run.
    pub schedules: u64,
    /// The first schedule's seed.
    pub first_seed: u64,
    /// Largest extra delay of an IPI's delivery, cycles.
    pub max_ipi_delay_cycles: u64,
    /// Mean gap between disturbances on each CPU, cycles (0: none).
    pub disturb_every_cycles: u64,
    /// The preset's kernel clock, MHz (0 without a `[kernel]` section).
    pub clock_mhz: u64,
    /// Accesses judged over all schedules.
    pub accesses: u64,
    /// Stale uses within an operation's own window (allowed), over all schedules.
    pub window_uses: u64,
    /// Schedules in which the scenario's essential tasks did not finish (a scenario with a
    /// window, such as kbuild, runs to its end instead: never counted).
    pub unfinished: u64,
    /// Violations over all schedules.
    pub violations: u64,
    /// Schedules with at least one violation.
    pub schedules_with_violations: u64,
    /// The first violation of each kind (lowest seed, then earliest use), to replay.
    pub witnesses: Vec<Witness>,
    /// Declared deferrals (docs/safety.md §4.4) and their exposure over all schedules.
    pub exposure: ExposureReport,
    /// The policy's speed on the scenario, from unperturbed runs without the checker.
    pub speed: Option<Speed>,
    /// Wall-clock seconds the check took (not in the JSON: it differs from run to run).
    #[serde(skip)]
    pub seconds: f64,
}

/// The scenario's metric over unperturbed runs (no IPI delays, no disturbances, no checker).
#[derive(Debug, Serialize)]
pub struct Speed {
    /// The metric's unit (µs/op, ops/s, s, CPU-s/s).
    pub unit: &'static str,
    /// Whether a lower metric is better.
    pub lower_is_better: bool,
    /// The seeds run.
    pub seeds: Vec<u64>,
    /// Each seed's value.
    pub values: Vec<f64>,
    /// Their summary (mean, sample standard deviation, n, …); `None` when a run had no value.
    pub summary: Option<Summary>,
}

/// A violation with the seed and command that replay it.
#[derive(Debug, Serialize)]
pub struct Witness {
    /// The schedule's seed.
    pub seed: u64,
    /// The command line that checks that schedule alone ([`CheckRequest::replay_command`]).
    pub replay: String,
    /// The violation.
    pub violation: Violation,
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

/// Reports as `tlblab sim check --format json` prints them: one report as an object, several
/// as an array; pretty, with a final newline.
pub fn check_json(reports: &[CheckReport]) -> Result<String, RunsError> {
    let json = match reports {
        [one] => serde_json::to_string_pretty(one)?,
        all => serde_json::to_string_pretty(all)?,
    };
    Ok(json + "\n")
}

/// Checks each policy of `request` in turn, its schedules in parallel, telling `progress` as
/// they finish; one report per policy, in the request's order.
///
/// Errors: an unknown machine, scenario or policy, a number out of range (all found before
/// anything runs), a configuration the kernel model refuses.
pub fn check(
    request: &CheckRequest,
    progress: &dyn Progress,
) -> Result<Vec<CheckReport>, RunsError> {
    if request.schedules == 0 {
        return Err(RunsError::OutOfRange {
            field: "schedules",
            value: "0".into(),
            expected: "of at least 1",
        });
    }
    let first = request.first_seed;
    crate::check_cpus_and_seeds(request.cpus, first, request.schedules, "schedules")?;
    crate::check_cpus_and_seeds(request.cpus, first, request.speed_runs, "speed runs")?;
    {
        use tlblab_types::bounds as b;
        b::SCHEDULES.check(request.schedules)?;
        b::SPEED_RUNS.check(request.speed_runs)?;
        b::MAX_IPI_DELAY.check(request.max_ipi_delay)?;
        b::DISTURB_EVERY.check(request.disturb_every)?;
    }
    crate::check_params(&request.params)?;
    let spec = crate::load_machine(&request.machine)?;
    let info = scenario(&request.scenario)?;
    // Every policy is loaded (and a bad one refused) before anything runs.
    let policies = crate::load_policies(&request.policies)?;
    request
        .policies
        .iter()
        .zip(&policies)
        .map(|(name, policy)| {
            let started = Instant::now();
            progress.start(&policy.name, request.schedules);
            let mut report = check_one(request, (&spec, info), (name, policy), progress)?;
            report.seconds = started.elapsed().as_secs_f64();
            Ok(report)
        })
        .collect()
}

/// Checks one policy (`name` as the request gives it) under every schedule.
fn check_one(
    request: &CheckRequest,
    (spec, info): (&MachineSpec, &'static ScenarioInfo),
    (name, policy): (&str, &Policy),
    progress: &dyn Progress,
) -> Result<CheckReport, RunsError> {
    let params = &request.params;
    let seeds: Vec<u64> = (0..request.schedules).map(|i| request.first_seed + i).collect();
    // Each schedule is independent and deterministic; results come back in seed order.
    let outcomes: Vec<Outcome> = seeds
        .par_iter()
        .map(|&seed| -> Result<Outcome, RunsError> {
            let mut k = crate::scenario_kernel(
                spec,
                policy,
                (request.cpus, seed, Mechanisms::all()),
                (info, params),
                |k| {
                    k.enable_checker();
                    k.perturb(Cycles(request.max_ipi_delay));
                    k.disturb(Cycles(request.disturb_every));
                },
            )?;
            // A scenario with a window stops at its end, tasks finished or not.
            let windowed = info.time_limit(params, k.clock_mhz()) != Cycles(u64::MAX);
            let finished = info.run(&mut k, params) || windowed;
            k.event_limit_reached()?;
            let (accesses, window_uses) = k.check_counts().unwrap_or_default();
            progress.finished();
            Ok(Outcome {
                seed,
                finished,
                accesses,
                window_uses,
                violations: k.violations().to_vec(),
                exposure: k.exposure(),
            })
        })
        .collect::<Result<_, _>>()?;
    let speed = speed(request, spec, policy, info)?;
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
                    replay: request.replay_command(name, o.seed),
                    violation: v.clone(),
                });
            }
        }
    }
    Ok(CheckReport {
        schema: CHECK_SCHEMA,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        machine: spec.name().to_string(),
        cpus: request.cpus,
        scenario: info.name,
        params: params.clone(),
        policy: policy.clone(),
        schedules: request.schedules,
        first_seed: request.first_seed,
        max_ipi_delay_cycles: request.max_ipi_delay,
        disturb_every_cycles: request.disturb_every,
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
        seconds: 0.0,
    })
}

/// Runs the scenario unperturbed on `request.speed_runs` seeds; `None` when none are asked
/// for.
fn speed(
    request: &CheckRequest,
    spec: &MachineSpec,
    policy: &Policy,
    info: &ScenarioInfo,
) -> Result<Option<Speed>, RunsError> {
    if request.speed_runs == 0 {
        return Ok(None);
    }
    let params = &request.params;
    let seeds: Vec<u64> = (0..request.speed_runs).map(|i| request.first_seed + i).collect();
    let values = seeds
        .par_iter()
        .map(|&seed| -> Result<f64, RunsError> {
            let mut k = crate::scenario_kernel(
                spec,
                policy,
                (request.cpus, seed, Mechanisms::all()),
                (info, params),
                |_| {},
            )?;
            info.run(&mut k, params);
            k.event_limit_reached()?;
            Ok(info.metric.value(&k.report()))
        })
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(Some(Speed {
        unit: info.metric.unit(),
        lower_is_better: info.metric.lower_is_better(),
        summary: Summary::of(&values).ok(),
        seeds,
        values,
    }))
}
