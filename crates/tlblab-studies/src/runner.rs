//! Runs a study: every (part, policy, seed) run in parallel, results put back in a fixed order,
//! so the report is the same whatever the number of threads.

use crate::beyond_s10::{self, CEILING_SEP, REPLAY_PREFIX};
use crate::error::StudyError;
use crate::inputs::Feed;
use crate::measure::{Measure, Missing};
use crate::report::{
    Answer, CeilingCurve, CeilingPoint, EffectStatus, Explanation, MachineInfo, MeasureInfo,
    MeasureResult, MechanismEffect, NotRun, PartReport, PolicyEffect, PolicyReport, RunSummary,
    ScenarioInfo, StudyReport, CONFIDENCE, SCHEMA,
};
use crate::study::{Part, Size, Study};
use rayon::prelude::*;
use std::sync::Arc;
use tlblab_kernel::workloads;
use tlblab_kernel::{Mechanism, Mechanisms, Policy};
use tlblab_sim::machine::MachineSpec;
use tlblab_stats::{judge, Effect, StatsError};
use tlblab_types::Cycles;

/// How to run a study.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Seeds per policy (K); `None`: the study's default.
    pub seeds: Option<u64>,
    /// The first seed; the others are `first_seed + 1`, … .
    pub first_seed: u64,
    /// Full or quick.
    pub size: Size,
    /// The mechanisms on in every run (`--without` switches some off); by default all.
    pub mechanisms: Mechanisms,
    /// Also run every part with each mechanism that is on and present on its machine switched
    /// off in turn, same seeds, and report its effect on the part's headline (`--explain`).
    pub explain: bool,
    /// The noise band (a fraction, `--noise`): a ratio whose interval reaches into
    /// `[1 − noise, 1 + noise]` is never a change.
    pub noise: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            seeds: None,
            first_seed: 1,
            size: Size::Full,
            mechanisms: Mechanisms::all(),
            explain: false,
            noise: tlblab_stats::DEFAULT_NOISE,
        }
    }
}

/// What a progress display is told while a study runs; it never changes the results.
pub trait Progress: Sync {
    /// The study is about to do `runs` runs.
    fn start(&self, runs: u64);
    /// One more run has finished (runs finish in any order).
    fn finished(&self);
}

/// No progress display.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _runs: u64) {}
    fn finished(&self) {}
}

/// What a part runs: a scenario of the kernel model, or a recorded trace replayed (S10).
enum Source {
    Scenario(&'static workloads::ScenarioInfo),
    Replay(Box<Replayed>),
}

/// A trace ready to replay: its plan built once for every run of the part.
struct Replayed {
    trace: &'static beyond_s10::Trace,
    header: tlblab_flushtrace::Header,
    plan: Arc<tlblab_replay::Plan>,
    opts: tlblab_replay::ReplayOptions,
    /// The highest ceiling of the part's policies: every run is laid out for it, so that one
    /// twin per seed serves every ceiling.
    top: u64,
}

/// A part, ready to run: its machine, scenario and policies loaded.
struct Prepared {
    part: Part,
    spec: MachineSpec,
    source: Source,
    policies: Vec<Policy>,
    /// The part's measures, less those that would say nothing: the scenario's metric where it
    /// repeats the elapsed seconds, the elapsed seconds of a run that is a fixed window.
    measures: Vec<Measure>,
    /// The window of simulated time each run is (none: runs last until their tasks are done).
    window_ms: Option<u64>,
    /// With `--explain`: the mechanisms run off in turn (on in every run and present on the
    /// machine), in [`Mechanism::ALL`] order.
    explained: Vec<Mechanism>,
}

/// What one run leaves: its summary, and each measure's value or why there is none.
struct RunData {
    summary: RunSummary,
    samples: Vec<Result<f64, Missing>>,
}

/// Runs `study`: every part under every policy, once per seed.
///
/// Errors: an unknown machine, scenario or policy in a part (checked before anything runs),
/// a run the kernel model refuses, `--seeds 0`.
pub fn run(study: &'static Study, options: &Options) -> Result<StudyReport, StudyError> {
    run_with_progress(study, options, &NoProgress)
}

/// [`run`], telling `progress` how many runs there are and when each finishes.
pub fn run_with_progress(
    study: &'static Study,
    options: &Options,
    progress: &dyn Progress,
) -> Result<StudyReport, StudyError> {
    let seeds = options.seeds.unwrap_or(study.default_seeds);
    if seeds == 0 {
        return Err(StudyError::NoSeeds);
    }
    // A part whose scenario this build of the kernel model lacks is reported as not run; any
    // other problem stops the study before anything runs.
    let mut parts = Vec::new();
    let mut not_run = Vec::new();
    let mut first_missing = None;
    for part in study.parts(options.size) {
        let (label, scenario) = (part.label.clone(), part.scenario);
        match prepare(study, part) {
            Ok(prepared) => parts.push(prepared),
            Err(e) if e.is_missing_scenario() => {
                not_run.push(NotRun {
                    label,
                    scenario,
                    reason: std::error::Error::source(&e).map_or(String::new(), |s| s.to_string()),
                });
                first_missing.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    if parts.is_empty() {
        if let Some(e) = first_missing {
            return Err(e);
        }
    }
    let inputs = crate::inputs::statement(parts.iter().map(|p| {
        let feed = match &p.source {
            Source::Scenario(s) => Feed::Scenario(s),
            Source::Replay(r) => Feed::Trace(r.trace.name, r.trace.what),
        };
        (&p.spec, feed)
    }));
    let base = options.mechanisms;
    if options.explain {
        // A replay runs with every mechanism on (tlblab-replay has no switch for them).
        for prepared in parts.iter_mut().filter(|p| matches!(p.source, Source::Scenario(_))) {
            prepared.explained = Mechanism::ALL
                .iter()
                .copied()
                .filter(|&m| {
                    base.is_on(m) && m.present_for(&prepared.spec, prepared.policies.iter())
                })
                .collect();
        }
    }
    // Per part: every policy and seed with `base` (variant 0), then with each explained
    // mechanism off too (variant 1 + its index).
    let jobs: Vec<(usize, usize, usize, u64)> = parts
        .iter()
        .enumerate()
        .flat_map(|(p, prepared)| {
            let policies = prepared.policies.len();
            (0..=prepared.explained.len()).flat_map(move |v| {
                (0..policies).flat_map(move |q| (0..seeds).map(move |s| (p, v, q, s)))
            })
        })
        .collect();
    // A replay's costs are against a twin that flushes nothing, the same for every ceiling of
    // a part: one per (replay part, seed), made first.
    let twin_jobs: Vec<(usize, u64)> = parts
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.source, Source::Replay(_)))
        .flat_map(|(p, _)| (0..seeds).map(move |s| (p, s)))
        .collect();
    let twins: Vec<tlblab_replay::Twin> = twin_jobs
        .par_iter()
        .map(|&(p, s)| twin(study, &parts[p], options.first_seed + s))
        .collect::<Result<_, _>>()?;
    let twin_of = |p: usize, s: u64| twin_jobs.iter().position(|&j| j == (p, s)).map(|i| &twins[i]);
    // Each run is independent and deterministic; collecting keeps job order.
    progress.start(jobs.len() as u64);
    let results: Vec<Result<RunData, StudyError>> = jobs
        .par_iter()
        .map(|&(p, v, q, s)| {
            let prepared = &parts[p];
            let mechanisms = match v {
                0 => base,
                v => base.without(prepared.explained[v - 1]),
            };
            let seed = options.first_seed + s;
            let data = match &prepared.source {
                Source::Replay(r) => {
                    replay_one(study, prepared, r, q, seed, twin_of(p, s).expect("a twin per seed"))
                }
                Source::Scenario(_) => {
                    run_one(study, prepared, q, (options.first_seed, seed), mechanisms)
                }
            };
            progress.finished();
            data
        })
        .collect();
    let mut results = results.into_iter();
    let mut reports = Vec::with_capacity(parts.len());
    for mut prepared in parts {
        // Per variant, per policy, the runs of every seed.
        let mut variants: Vec<Vec<Vec<RunData>>> = Vec::with_capacity(1 + prepared.explained.len());
        for _ in 0..=prepared.explained.len() {
            let mut runs: Vec<Vec<RunData>> = Vec::with_capacity(prepared.policies.len());
            for _ in &prepared.policies {
                runs.push(results.by_ref().take(seeds as usize).collect::<Result<_, _>>()?);
            }
            variants.push(runs);
        }
        let mut variants = variants.into_iter();
        let runs = variants.next().expect("the runs with every mechanism asked for on");
        let explained = std::mem::take(&mut prepared.explained);
        let mut report = part_report(prepared, runs, options.noise);
        if options.explain {
            report.explanation =
                Some(explanation(&report, base, &explained, variants, options.noise));
        }
        reports.push(report);
    }
    Ok(StudyReport {
        schema: SCHEMA,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        study: study.name,
        short: study.short,
        title: study.title,
        mirrors: study.mirrors,
        layout: study.layout,
        quick: options.size == Size::Quick,
        seeds,
        first_seed: options.first_seed,
        seeds_why: study.seeds_why,
        confidence: CONFIDENCE,
        noise: options.noise,
        without: base.off(),
        inputs,
        parts: reports,
        not_run,
    })
}

fn prepare(study: &'static Study, part: Part) -> Result<Prepared, StudyError> {
    let machine_error = |source| StudyError::Machine {
        study: study.name,
        part: part.label.clone(),
        machine: part.machine,
        source: Box::new(source),
    };
    let mut spec = tlblab_sim::machine::builtin(part.machine).map_err(machine_error)?;
    if let Some(g) = part.guest {
        let why = format!("the study's setting for this part: {}", g.label());
        spec = spec
            .with_guest_setting(g.posted_interrupts, g.overcommit, &why)
            .map_err(machine_error)?;
    }
    let policies = part
        .policies
        .iter()
        .map(|name| policy_named(name))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| StudyError::Policy {
            study: study.name,
            part: part.label.clone(),
            source: Box::new(source),
        })?;
    if let Some(name) = part.scenario.strip_prefix(REPLAY_PREFIX) {
        let replayed = prepare_replay(study, &part, name, &policies)?;
        let measures = part.measures.clone();
        let source = Source::Replay(Box::new(replayed));
        return Ok(Prepared {
            part,
            spec,
            source,
            policies,
            measures,
            window_ms: None,
            explained: Vec::new(),
        });
    }
    let scenario = workloads::scenario(part.scenario).map_err(|source| StudyError::Scenario {
        study: study.name,
        part: part.label.clone(),
        source: Box::new(source),
    })?;
    // A run that is a window of simulated time (kbuild's default) ends at the window: its
    // elapsed time is the window (the limit less any warm-up), not a result.
    let clock_mhz = spec.raw().kernel.as_ref().map_or(0, |k| k.clock.mhz);
    let limit = scenario.time_limit(&part.params, clock_mhz);
    let window_ms = (limit != Cycles(u64::MAX) && clock_mhz > 0)
        .then(|| limit.0 / (clock_mhz * 1000) - part.params.warmup_ms);
    let dropped = |m: &Measure| match m {
        // The scenario's metric would repeat the elapsed seconds.
        Measure::ScenarioMetric => {
            scenario.metric.unit() == "s" && part.measures.contains(&Measure::ElapsedS)
        }
        Measure::ElapsedS => window_ms.is_some(),
        _ => false,
    };
    let measures = part.measures.iter().copied().filter(|m| !dropped(m)).collect();
    Ok(Prepared {
        part,
        spec,
        source: Source::Scenario(scenario),
        policies,
        measures,
        window_ms,
        explained: Vec::new(),
    })
}

/// A built-in policy, or one at a ceiling: `BASE@ceiling=N` is `BASE` with
/// `tlb_single_page_flush_ceiling` N (the ceiling axis of S10), under that name.
pub(crate) fn policy_named(name: &str) -> Result<Policy, tlblab_kernel::policy::PolicyError> {
    let Some((base, ceiling)) = name.split_once(CEILING_SEP) else {
        return Policy::named(name);
    };
    let mut policy = Policy::named(base)?;
    policy.tlb_single_page_flush_ceiling =
        ceiling.parse().map_err(|_| tlblab_kernel::policy::PolicyError::Unknown {
            name: name.to_string(),
            known: format!("a ceiling is a whole number of pages: BASE{CEILING_SEP}N"),
        })?;
    policy.name = name.to_string();
    Ok(policy)
}

/// The ceiling of a `BASE@ceiling=N` policy name.
fn ceiling_of(name: &str) -> Option<(&str, u64)> {
    let (base, n) = name.split_once(CEILING_SEP)?;
    Some((base, n.parse().ok()?))
}

/// Reads a shipped trace and builds its plan; `params.window_ms` (if not 0) keeps the trace's
/// first that many ms.
fn prepare_replay(
    study: &'static Study,
    part: &Part,
    name: &str,
    policies: &[Policy],
) -> Result<Replayed, StudyError> {
    let replay_err = |source| StudyError::Replay {
        study: study.name,
        part: part.label.clone(),
        source: Box::new(source),
    };
    let trace = beyond_s10::trace(name).ok_or_else(|| StudyError::Trace {
        study: study.name,
        part: part.label.clone(),
        message: format!("no shipped trace called {name:?}"),
    })?;
    let trace_err = |e: tlblab_flushtrace::FileError| StudyError::Trace {
        study: study.name,
        part: part.label.clone(),
        message: e.to_string(),
    };
    let mut reader =
        tlblab_flushtrace::TraceReader::new(trace.bytes, std::path::Path::new(trace.name))
            .map_err(trace_err)?;
    let mut records = Vec::new();
    let mut first = None;
    let window_ns = part.params.window_ms.saturating_mul(1_000_000);
    while let Some(r) = reader.next_record().map_err(trace_err)? {
        let ts = r.ts_ns();
        let start = *first.get_or_insert(ts);
        if window_ns > 0 && ts.saturating_sub(start) > window_ns {
            break;
        }
        records.push(r);
    }
    let mut header = reader.header().clone();
    if let Some(trailer) = reader.trailer() {
        trailer.merge_into(&mut header);
    }
    let opts = tlblab_replay::ReplayOptions {
        cpus: Some(part.cpus),
        refill: tlblab_replay::Refill::WorkingSet(beyond_s10::WORKING_SET_PAGES),
        ..tlblab_replay::ReplayOptions::default()
    };
    let plan = tlblab_replay::Plan::build(&header, records, &opts).map_err(replay_err)?;
    let top = policies.iter().map(|p| p.tlb_single_page_flush_ceiling).max().unwrap_or(0);
    Ok(Replayed { trace, header, plan: Arc::new(plan), opts, top })
}

fn twin(
    study: &'static Study,
    prepared: &Prepared,
    seed: u64,
) -> Result<tlblab_replay::Twin, StudyError> {
    let Source::Replay(r) = &prepared.source else {
        unreachable!("twins are made for replay parts only")
    };
    let opts = tlblab_replay::ReplayOptions { seed, ..r.opts.clone() };
    tlblab_replay::twin_run(&r.plan, &prepared.spec, &prepared.policies[0], r.top, &opts).map_err(
        |source| StudyError::Replay {
            study: study.name,
            part: prepared.part.label.clone(),
            source: Box::new(source),
        },
    )
}

fn replay_one(
    study: &'static Study,
    prepared: &Prepared,
    r: &Replayed,
    policy: usize,
    seed: u64,
    twin: &tlblab_replay::Twin,
) -> Result<RunData, StudyError> {
    let opts = tlblab_replay::ReplayOptions { seed, ..r.opts.clone() };
    let policy = &prepared.policies[policy];
    let (row, kernel) =
        tlblab_replay::replay_point(&r.plan, &r.header, &prepared.spec, policy, twin, &opts)
            .map_err(|source| StudyError::Replay {
                study: study.name,
                part: prepared.part.label.clone(),
                source: Box::new(source),
            })?;
    Ok(RunData {
        samples: prepared.measures.iter().map(|m| m.replay_value(&row, &kernel)).collect(),
        summary: RunSummary::of(seed, row.complete, &kernel),
    })
}

fn run_one(
    study: &'static Study,
    prepared: &Prepared,
    policy: usize,
    (first_seed, seed): (u64, u64),
    mechanisms: Mechanisms,
) -> Result<RunData, StudyError> {
    let part = &prepared.part;
    let policy = &prepared.policies[policy];
    // The kernel is built as `sim run`, `sim check` and `tlblab sweep` build it.
    let cpus = u16::try_from(part.cpus).unwrap_or(u16::MAX);
    let Source::Scenario(scenario) = prepared.source else {
        unreachable!("replay parts run in replay_one")
    };
    let kernel_error = |e| match e {
        tlblab_runs::RunsError::Scenario(source) => {
            StudyError::Scenario { study: study.name, part: part.label.clone(), source }
        }
        tlblab_runs::RunsError::Kernel(source) => StudyError::Kernel {
            study: study.name,
            part: part.label.clone(),
            policy: policy.name.clone(),
            source,
        },
        other => unreachable!("scenario_kernel builds a kernel and installs a scenario: {other}"),
    };
    let mut kernel = tlblab_runs::scenario_kernel(
        &prepared.spec,
        policy,
        (cpus, seed, mechanisms),
        (scenario, &part.params),
        |_| {},
    )
    .map_err(kernel_error)?;
    let finished = scenario.run(&mut kernel, &part.params);
    kernel.event_limit_reached().map_err(|e| kernel_error(e.into()))?;
    let report = kernel.report();
    let metric = scenario.metric;
    let checked = match prepared.measures.iter().any(|m| m.checked()) {
        true => Some(
            check_schedules(prepared, policy, (first_seed, seed), mechanisms)
                .map_err(kernel_error)?,
        ),
        false => None,
    };
    let sample = |m: &Measure| match (&checked, m.checked()) {
        (Some(c), true) => m.check_value(c),
        _ => m.value(&report, metric),
    };
    Ok(RunData {
        samples: prepared.measures.iter().map(sample).collect(),
        summary: RunSummary::of(seed, finished, &report),
    })
}

/// The checked schedules of run seed `seed` ([`crate::measure::CHECK_SCHEDULES_PER_SEED`] of
/// them, numbered so that a study's seeds are `sim check`'s schedules from its first seed),
/// each with the checker on and `sim check`'s default perturbations.
fn check_schedules(
    prepared: &Prepared,
    policy: &Policy,
    (first_seed, seed): (u64, u64),
    mechanisms: Mechanisms,
) -> Result<crate::measure::Checked, tlblab_runs::RunsError> {
    let part = &prepared.part;
    let Source::Scenario(scenario) = prepared.source else {
        unreachable!("replay parts are not checked")
    };
    let cpus = u16::try_from(part.cpus).unwrap_or(u16::MAX);
    let defaults = tlblab_runs::CheckRequest::new(part.scenario, &[]);
    let n = crate::measure::CHECK_SCHEDULES_PER_SEED;
    let clock_mhz = prepared.spec.raw().kernel.as_ref().map_or(0, |k| k.clock.mhz);
    let mut out = crate::measure::Checked {
        declares: tlblab_kernel::exposure::declared(policy)
            .iter()
            .any(|d| d.mappings == tlblab_kernel::exposure::Mappings::User),
        clock_mhz,
        ..Default::default()
    };
    for i in 0..n {
        let schedule = first_seed + (seed - first_seed) * n + i;
        let mut k = tlblab_runs::scenario_kernel(
            &prepared.spec,
            policy,
            (cpus, schedule, mechanisms),
            (scenario, &part.params),
            |k| {
                k.enable_checker();
                k.perturb(Cycles(defaults.max_ipi_delay));
                k.disturb(Cycles(defaults.disturb_every));
            },
        )?;
        scenario.run(&mut k, &part.params);
        k.event_limit_reached()?;
        out.violations += k.violations().len() as u64;
        out.exposure.extend(k.exposure().user);
    }
    Ok(out)
}

fn part_report(prepared: Prepared, runs: Vec<Vec<RunData>>, noise: f64) -> PartReport {
    let Prepared { part, spec, source, policies, measures: prepared_measures, window_ms, .. } =
        prepared;
    // A replay has no scenario: its "scenario" is the trace; its measures name their units.
    let scenario = match &source {
        Source::Scenario(s) => ScenarioInfo {
            name: s.name,
            description: s.description,
            metric: s.metric,
            unit: s.metric.unit(),
        },
        Source::Replay(r) => ScenarioInfo {
            name: r.trace.scenario,
            description: r.trace.what,
            metric: workloads::Metric::Seconds,
            unit: workloads::Metric::Seconds.unit(),
        },
    };
    let metric = scenario.metric;
    let measures: Vec<MeasureInfo> = prepared_measures
        .iter()
        .map(|&m| MeasureInfo {
            key: m.key(),
            label: m.label(metric),
            lower_is_better: m.lower_is_better(metric),
            what: m.describe(),
            measure: m,
            decimals: m.decimals(metric),
        })
        .collect();
    // Per policy, per measure: the values over the seeds, or why there are none.
    let values: Vec<Vec<Result<Vec<f64>, Missing>>> = runs
        .iter()
        .map(|seeds| {
            (0..measures.len())
                .map(|m| seeds.iter().map(|run| run.samples[m]).collect::<Result<Vec<f64>, _>>())
                .collect()
        })
        .collect();
    let k = runs.first().map_or(0, Vec::len);
    let mut out = Vec::with_capacity(policies.len());
    for (q, (policy, seeds)) in policies.into_iter().zip(runs).enumerate() {
        let results = (0..measures.len())
            .map(|m| {
                measure_result(measures[m].key, &values[q][m], &values[0][m], q == 0, (k, noise))
            })
            .collect();
        out.push(PolicyReport {
            policy,
            baseline: q == 0,
            measures: results,
            runs: seeds.into_iter().map(|r| r.summary).collect(),
        });
    }
    let ceiling_curve = ceiling_curve(&measures, &out, noise);
    PartReport {
        label: part.label,
        machine: MachineInfo {
            name: spec.name().to_string(),
            description: spec.raw().description.clone(),
            clock_mhz: spec.raw().kernel.as_ref().map_or(0, |k| k.clock.mhz),
            why: part.machine_why,
            guest: part.guest,
        },
        cpus: part.cpus,
        scenario,
        params: part.params,
        window_ms,
        settings_why: part.settings_why,
        measures,
        policies: out,
        sweep: part.sweep,
        explanation: None,
        ceiling_curve,
    }
}

/// The ceiling axis of a part whose policies are all `BASE@ceiling=N` of one base (S10).
fn ceiling_curve(
    measures: &[MeasureInfo],
    policies: &[PolicyReport],
    noise: f64,
) -> Option<CeilingCurve> {
    let headline = measures.first()?;
    let ceilings: Vec<(&str, u64)> =
        policies.iter().map(|p| ceiling_of(&p.policy.name)).collect::<Option<_>>()?;
    if ceilings.iter().any(|&(base, _)| base != ceilings[0].0) {
        return None;
    }
    let lower = headline.lower_is_better;
    let better = |a: f64, b: f64| if lower { a < b } else { a > b };
    let mut points: Vec<(CeilingPoint, &[f64])> = policies
        .iter()
        .zip(&ceilings)
        .map(|(p, &(_, ceiling))| {
            let m = &p.measures[0];
            let point = CeilingPoint {
                ceiling,
                policy: p.policy.name.clone(),
                mean: m.mean,
                ratio: m.ratio,
                effect: m.effect,
            };
            (point, m.values.as_slice())
        })
        .collect();
    points.sort_by_key(|(p, _)| p.ceiling);
    // The best mean among the baseline (the kernel's choice) and the ceilings the verdict
    // finds better than it (a change in the better direction); the lowest ceiling wins a tie
    // (points are in ascending order).
    let baseline = ceilings[0].1;
    let start = policies[0].measures[0].mean.map(|m| (baseline, m));
    let improves =
        |e: Option<Effect>| e == Some(if lower { Effect::Lower } else { Effect::Higher });
    let best = points
        .iter()
        .filter(|(p, _)| improves(p.effect))
        .filter_map(|(p, _)| Some((p.ceiling, p.mean?)))
        .fold(start, |acc: Option<(u64, f64)>, (c, m)| match acc {
            Some((_, b)) if !better(m, b) => acc,
            _ => Some((c, m)),
        });
    let best_values = best
        .and_then(|(c, _)| points.iter().find(|(p, _)| p.ceiling == c))
        .map(|(_, v)| *v)
        .unwrap_or(&[]);
    let seeds = points.iter().map(|(_, v)| v.len()).min().unwrap_or(0);
    let base_values = policies[0].measures[0].values.as_slice();
    let best_per_seed = (0..seeds)
        .filter_map(|s| {
            let start = base_values.get(s).map(|&v| (baseline, v));
            points.iter().fold(start, |acc: Option<(u64, f64)>, (p, v)| match acc {
                Some((_, b)) if !better(v[s], b) => acc,
                _ => Some((p.ceiling, v[s])),
            })
        })
        .map(|(c, _)| c)
        .collect();
    let tied_with_best = points
        .iter()
        .filter(|(p, v)| {
            Some(p.ceiling) == best.map(|b| b.0)
                || (seeds >= 2
                    && tlblab_stats::ratio_to_baseline(v, best_values, CONFIDENCE)
                        .is_ok_and(|r| !judge(Some(&r.ci), None, 0.05, noise).is_change()))
        })
        .map(|(p, _)| p.ceiling)
        .collect();
    Some(CeilingCurve {
        measure: headline.key,
        lower_is_better: lower,
        baseline,
        best: best.map(|b| b.0),
        best_per_seed,
        tied_with_best,
        points: points.into_iter().map(|(p, _)| p).collect(),
    })
}

/// `--explain` for a part: `report` is its runs with `base`; `variants` the runs with each of
/// `explained` off too, in that order (per policy, per seed).
fn explanation(
    report: &PartReport,
    base: Mechanisms,
    explained: &[Mechanism],
    mut variants: impl Iterator<Item = Vec<Vec<RunData>>>,
    noise: f64,
) -> Explanation {
    let Some(headline) = report.measures.first() else {
        return Explanation { measure: "", mechanisms: Vec::new() };
    };
    let mechanisms = Mechanism::ALL
        .iter()
        .map(|&m| {
            let status = m.effect_status(base, explained.contains(&m));
            let policies = if status == EffectStatus::Ran {
                let runs = variants.next().expect("runs per explained mechanism");
                effects(report, headline.key, &runs, noise)
            } else {
                Vec::new()
            };
            MechanismEffect { mechanism: m, status, policies }
        })
        .collect();
    Explanation { measure: headline.key, mechanisms }
}

/// Each policy's headline (the part's first measure) in `runs` (a mechanism off), set against
/// the part's own runs: the values off with their ratio to the baseline off, as the study
/// computes every ratio, the change of the mean, and the comparison's answer on and off.
fn effects(
    report: &PartReport,
    key: &'static str,
    runs: &[Vec<RunData>],
    noise: f64,
) -> Vec<PolicyEffect> {
    let k = runs.first().map_or(0, Vec::len);
    let values: Vec<Result<Vec<f64>, Missing>> =
        runs.iter().map(|seeds| seeds.iter().map(|run| run.samples[0]).collect()).collect();
    report
        .policies
        .iter()
        .enumerate()
        .map(|(q, pol)| {
            let on = &pol.measures[0];
            let off = measure_result(key, &values[q], &values[0], q == 0, (k, noise));
            let change = on.mean.zip(off.mean).map(|(on, off)| off - on);
            let change_pct =
                change.zip(on.mean).filter(|&(_, on)| on != 0.0).map(|(c, on)| 100.0 * c / on);
            let (answer_on, answer_off) =
                if q == 0 { (None, None) } else { (Answer::of(on), Answer::of(&off)) };
            PolicyEffect {
                policy: pol.policy.name.clone(),
                change,
                change_pct,
                answer_changes: answer_on.zip(answer_off).map(|(a, b)| a != b),
                answer_on,
                answer_off,
                off,
            }
        })
        .collect()
}

fn measure_result(
    key: &'static str,
    values: &Result<Vec<f64>, Missing>,
    baseline: &Result<Vec<f64>, Missing>,
    is_baseline: bool,
    (k, noise): (usize, f64),
) -> MeasureResult {
    let mut r = MeasureResult {
        measure: key,
        values: Vec::new(),
        mean: None,
        stddev: None,
        sem: None,
        ratio: None,
        effect: None,
        significant: None,
        note: None,
    };
    let values = match values {
        Ok(v) => v,
        Err(why) => {
            r.note = Some((*why).to_string());
            return r;
        }
    };
    r.values.clone_from(values);
    match tlblab_stats::mean_std(values) {
        Ok(ms) => {
            r.mean = Some(ms.mean);
            r.stddev = Some(ms.stddev);
            r.sem = Some(ms.sem);
        }
        Err(e) => {
            r.note = Some(format!("no mean: {e}"));
            return r;
        }
    }
    if is_baseline {
        return r;
    }
    if k < 2 {
        r.effect = Some(Effect::NoInterval);
        r.note = Some("one seed: no interval".into());
        return r;
    }
    let Ok(base) = baseline else {
        r.note = Some("no ratio: the baseline has no value".into());
        return r;
    };
    match tlblab_stats::ratio_to_baseline(values, base, CONFIDENCE) {
        Ok(ratio) => {
            let effect = judge(Some(&ratio.ci), None, 0.05, noise);
            r.effect = Some(effect);
            r.significant = Some(effect.is_change());
            r.ratio = Some(ratio);
        }
        Err(StatsError::ZeroBaseline) => {
            r.note = Some("no ratio: the baseline is 0".into());
        }
        Err(e) => r.note = Some(format!("no ratio: {e}")),
    }
    r
}
