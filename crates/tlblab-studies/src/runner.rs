//! Runs a study: every (part, policy, seed) run in parallel, results put back in a fixed order,
//! so the report is the same whatever the number of threads.

use crate::error::StudyError;
use crate::measure::{Measure, Missing};
use crate::report::{
    MachineInfo, MeasureInfo, MeasureResult, NotRun, PartReport, PolicyReport, RunSummary,
    ScenarioInfo, StudyReport, CONFIDENCE, SCHEMA,
};
use crate::study::{Part, Size, Study};
use rayon::prelude::*;
use tlblab_kernel::workloads;
use tlblab_kernel::{Kernel, KernelConfig, NoObserver, Policy};
use tlblab_sim::machine::MachineSpec;
use tlblab_stats::StatsError;
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
}

impl Default for Options {
    fn default() -> Options {
        Options { seeds: None, first_seed: 1, size: Size::Full }
    }
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
    let jobs: Vec<(usize, usize, u64)> = parts
        .iter()
        .enumerate()
        .flat_map(|(p, prepared)| {
            (0..prepared.policies.len()).flat_map(move |q| (0..seeds).map(move |s| (p, q, s)))
        })
        .collect();
    // Each run is independent and deterministic; collecting keeps job order.
    let results: Vec<Result<RunData, StudyError>> = jobs
        .par_iter()
        .map(|&(p, q, s)| run_one(study, &parts[p], q, options.first_seed + s))
        .collect();
    let mut results = results.into_iter();
    let mut reports = Vec::with_capacity(parts.len());
    for prepared in parts {
        let mut runs: Vec<Vec<RunData>> = Vec::with_capacity(prepared.policies.len());
        for _ in &prepared.policies {
            runs.push(results.by_ref().take(seeds as usize).collect::<Result<_, _>>()?);
        }
        reports.push(part_report(prepared, runs));
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
        parts: reports,
        not_run,
    })
}

fn prepare(study: &'static Study, part: Part) -> Result<Prepared, StudyError> {
    let spec =
        tlblab_sim::machine::builtin(part.machine).map_err(|source| StudyError::Machine {
            study: study.name,
            part: part.label.clone(),
            machine: part.machine,
            source: Box::new(source),
        })?;
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
    Ok(Prepared { part, spec, scenario, policies, measures, window_ms })
}

fn run_one(
    study: &'static Study,
    prepared: &Prepared,
    policy: usize,
    seed: u64,
) -> Result<RunData, StudyError> {
    let part = &prepared.part;
    let config = KernelConfig::new(part.cpus, seed);
    let policy = &prepared.policies[policy];
    let mut kernel = Kernel::new(&prepared.spec, policy, config, NoObserver).map_err(|source| {
        StudyError::Kernel {
            study: study.name,
            part: part.label.clone(),
            policy: policy.name.clone(),
            source: Box::new(source),
        }
    })?;
    prepared.scenario.install(&mut kernel, &part.params).map_err(|source| {
        StudyError::Scenario {
            study: study.name,
            part: part.label.clone(),
            source: Box::new(source),
        }
    })?;
    let finished = prepared.scenario.run(&mut kernel, &part.params);
    let report = kernel.report();
    let metric = prepared.scenario.metric;
    Ok(RunData {
        samples: prepared.measures.iter().map(|m| m.value(&report, metric)).collect(),
        summary: RunSummary::of(seed, finished, &report),
    })
}

fn part_report(prepared: Prepared, runs: Vec<Vec<RunData>>) -> PartReport {
    let Prepared { part, spec, scenario, policies, measures: prepared_measures, window_ms } =
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
            .map(|m| measure_result(measures[m].key, &values[q][m], &values[0][m], q == 0, k))
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
    }
}

fn measure_result(
    key: &'static str,
    values: &Result<Vec<f64>, Missing>,
    baseline: &Result<Vec<f64>, Missing>,
    is_baseline: bool,
    k: usize,
) -> MeasureResult {
    let mut r = MeasureResult {
        measure: key,
        values: Vec::new(),
        mean: None,
        stddev: None,
        sem: None,
        ratio: None,
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
        r.note = Some("ratios need ≥ 2 seeds".into());
        return r;
    }
    let Ok(base) = baseline else {
        r.note = Some("no ratio: the baseline has no value".into());
        return r;
    };
    match tlblab_stats::ratio_to_baseline(values, base, CONFIDENCE) {
        Ok(ratio) => {
            r.significant = Some(ratio.ci.low > 1.0 || ratio.ci.high < 1.0);
            r.ratio = Some(ratio);
        }
        Err(StatsError::ZeroBaseline) => {
            r.note = Some("no ratio: the baseline is 0".into());
        }
        Err(e) => r.note = Some(format!("no ratio: {e}")),
    }
    r
}
