//! Runs a study: every (part, policy, seed) run in parallel, results put back in a fixed order,
//! so the report is the same whatever the number of threads.

use crate::error::StudyError;
use crate::measure::{Measure, Missing};
use crate::report::{
    Answer, EffectStatus, Explanation, MachineInfo, MeasureInfo, MeasureResult, MechanismEffect,
    NotRun, PartReport, PolicyEffect, PolicyReport, RunSummary, ScenarioInfo, StudyReport,
    CONFIDENCE, SCHEMA,
};
use crate::study::{Part, Size, Study};
use rayon::prelude::*;
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

/// A part, ready to run: its machine, scenario and policies loaded.
struct Prepared {
    part: Part,
    spec: MachineSpec,
    scenario: &'static workloads::ScenarioInfo,
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
    let base = options.mechanisms;
    if options.explain {
        for prepared in &mut parts {
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
            let data = run_one(
                study,
                prepared,
                q,
                (options.first_seed, options.first_seed + s),
                mechanisms,
            );
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
    let scenario = workloads::scenario(part.scenario).map_err(|source| StudyError::Scenario {
        study: study.name,
        part: part.label.clone(),
        source: Box::new(source),
    })?;
    let policies = part
        .policies
        .iter()
        .map(|name| Policy::named(name))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| StudyError::Policy {
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
    Ok(Prepared { part, spec, scenario, policies, measures, window_ms, explained: Vec::new() })
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
        (prepared.scenario, &part.params),
        |_| {},
    )
    .map_err(kernel_error)?;
    let finished = prepared.scenario.run(&mut kernel, &part.params);
    let report = kernel.report();
    let metric = prepared.scenario.metric;
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
            (prepared.scenario, &part.params),
            |k| {
                k.enable_checker();
                k.perturb(Cycles(defaults.max_ipi_delay));
                k.disturb(Cycles(defaults.disturb_every));
            },
        )?;
        prepared.scenario.run(&mut k, &part.params);
        out.violations += k.violations().len() as u64;
        out.exposure.extend(k.exposure().user);
    }
    Ok(out)
}

fn part_report(prepared: Prepared, runs: Vec<Vec<RunData>>, noise: f64) -> PartReport {
    let Prepared { part, spec, scenario, policies, measures: prepared_measures, window_ms, .. } =
        prepared;
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
        scenario: ScenarioInfo {
            name: scenario.name,
            description: scenario.description,
            metric,
            unit: metric.unit(),
        },
        params: part.params,
        window_ms,
        settings_why: part.settings_why,
        measures,
        policies: out,
        sweep: part.sweep,
        explanation: None,
    }
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
