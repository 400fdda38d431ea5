//! `tlblab sim run`: one scenario under several policies, several seeds each.

use crate::{Progress, RunsError};
use rayon::prelude::*;
use serde::Serialize;
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::workloads::{scenario, Params};
use tlblab_kernel::{EffectStatus, Mechanism, Mechanisms, Policy};
use tlblab_stats::{judge, Effect, RatioToBaseline, Verdict};

/// The JSON schema of [`RunReport`].
pub const RUN_SCHEMA: &str = "tlblab.sim.run/1";

/// What to run: one scenario on one machine under each policy, `seeds` times each.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// A built-in preset name, `host` (this machine), or a path to a preset file.
    pub machine: String,
    /// Simulated CPUs, 1 to 4096.
    pub cpus: u16,
    /// The scenario's name (`tlblab sim scenarios`).
    pub scenario: String,
    /// The scenario's parameters (each scenario uses those it names).
    pub params: Params,
    /// Built-in policy names or policy files; the first is the baseline of the ratios.
    pub policies: Vec<String>,
    /// Runs per policy, 1 to 1000, with seeds `first_seed`, `first_seed + 1`, ….
    pub seeds: u64,
    /// The first seed.
    pub first_seed: u64,
    /// The mechanisms on in every run (the command line's `--without` switches some off).
    pub without: Mechanisms,
    /// Also run each policy with each mechanism that is on and present off in turn.
    pub explain: bool,
    /// The noise band, a fraction from 0 to 1: a difference inside it is never a change.
    pub noise: f64,
}

impl RunRequest {
    /// `scenario` under `policies` with the command line's defaults: machine skylake, 4 CPUs,
    /// default parameters, 3 seeds from 1, every mechanism on, no explanation, a 1% band.
    pub fn new(scenario: &str, policies: &[&str]) -> RunRequest {
        RunRequest {
            machine: "skylake".into(),
            cpus: 4,
            scenario: scenario.into(),
            params: Params::default(),
            policies: policies.iter().map(|p| p.to_string()).collect(),
            seeds: 3,
            first_seed: 1,
            without: Mechanisms::all(),
            explain: false,
            noise: tlblab_stats::DEFAULT_NOISE,
        }
    }
}

/// The report of [`run`]; its JSON is schema [`RUN_SCHEMA`] (docs/sim-output.md).
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// [`RUN_SCHEMA`].
    pub schema: &'static str,
    /// The version of tlblab that ran it.
    pub tlblab_version: &'static str,
    /// The machine preset's name.
    pub machine: String,
    /// Simulated CPUs.
    pub cpus: u16,
    /// The scenario.
    pub scenario: &'static str,
    /// The unit of the scenario's metric (µs/op, ops/s, s, CPU-s/s).
    pub metric: &'static str,
    /// Whether a lower metric is better.
    pub lower_is_better: bool,
    /// The scenario's parameters.
    pub params: Params,
    /// The mechanisms off in every run (`--without`).
    pub without: Vec<Mechanism>,
    /// The noise band (`--noise`, a fraction): a difference inside it is never a change.
    pub noise: f64,
    /// Each policy's results, in the request's order; the first is the baseline.
    pub policies: Vec<PolicyResult>,
}

/// One policy's runs.
#[derive(Debug, Serialize)]
pub struct PolicyResult {
    /// The policy.
    pub policy: Policy,
    /// The metric per seed, in seed order.
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation.
    pub stddev: f64,
    /// Per-seed ratios to the baseline, with the 95% log-ratio interval (absent for the
    /// baseline and with one seed).
    pub ratio: Option<RatioToBaseline>,
    /// The verdict against the baseline (absent for the baseline itself).
    pub verdict: Option<Verdict>,
    /// With `--explain`: the metric with each mechanism off in turn, beside these runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Vec<MechanismEffect>>,
    /// The kernel model's report of each run, in seed order.
    pub runs: Vec<KernelReport>,
}

/// One mechanism's part in a policy's metric: the runs with it off against those with it on.
#[derive(Debug, Serialize)]
pub struct MechanismEffect {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// What it models.
    pub description: &'static str,
    /// Whether it ran off, is off in every run, or is not present on the machine.
    pub status: EffectStatus,
    /// The metric per seed with the mechanism off (empty unless it ran).
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: Option<f64>,
    /// Their sample standard deviation.
    pub stddev: Option<f64>,
    /// Mean with it off less mean with it on.
    pub change: Option<f64>,
    /// `change` as a percentage of the mean with it on.
    pub change_pct: Option<f64>,
    /// Per-seed ratios off / on, with the 95% log-ratio interval (≥ 2 seeds).
    pub ratio: Option<RatioToBaseline>,
    /// What switching the mechanism off does to the metric: higher, lower, within the noise
    /// band, not significant, or no interval (one seed).
    pub effect: Option<Effect>,
    /// Whether that is a change: the interval excludes 1 and lies wholly outside the band.
    pub significant: Option<bool>,
}

impl RunReport {
    /// The report as `tlblab sim run --format json` prints it: pretty, with a final newline.
    pub fn to_json(&self) -> Result<String, RunsError> {
        Ok(serde_json::to_string_pretty(self)? + "\n")
    }
}

/// The ratio of `values` to `base` (paired by seed) and its effect by the one verdict rule;
/// no ratio with fewer than 2 seeds or a zero in `base` (then the effect is `NoInterval`).
fn paired_ratio(values: &[f64], base: &[f64], noise: f64) -> (Option<RatioToBaseline>, Effect) {
    let q = tlblab_stats::ratio_to_baseline(values, base, 0.95).ok();
    (q, judge(q.as_ref().map(|q| &q.ci), None, 0.05, noise))
}

/// Runs `request`: every policy (and, with `explain`, every mechanism off in turn) on every
/// seed, in parallel, telling `progress` as runs finish.
///
/// Errors: an unknown machine, scenario or policy, a number out of range (all found before
/// anything runs), a configuration the kernel model refuses.
pub fn run(request: &RunRequest, progress: &dyn Progress) -> Result<RunReport, RunsError> {
    let noise = request.noise;
    if !(noise.is_finite() && (0.0..1.0).contains(&noise)) {
        return Err(RunsError::OutOfRange {
            field: "noise",
            value: noise.to_string(),
            expected: "from 0 to 1 (a fraction)",
        });
    }
    if !tlblab_types::bounds::SEEDS.contains(request.seeds) {
        return Err(RunsError::OutOfRange {
            field: "seeds",
            value: request.seeds.to_string(),
            expected: "from 1 to 1000",
        });
    }
    crate::check_cpus_and_seeds(request.cpus, request.first_seed, request.seeds, "seeds")?;
    crate::check_params(&request.params)?;
    let spec = crate::load_machine(&request.machine)?;
    let info = scenario(&request.scenario)?;
    let policies = crate::load_policies(&request.policies)?;
    let base = request.without;
    let params = &request.params;
    // The runs of each policy: with `base`, then (with `explain`) with each mechanism that is
    // on and present also off.
    let mut variants = vec![(None, base)];
    if request.explain {
        variants.extend(
            Mechanism::ALL
                .iter()
                .filter(|&&m| base.is_on(m) && m.present_for(&spec, policies.iter()))
                .map(|&m| (Some(m), base.without(m))),
        );
    }
    let seeds = request.seeds;
    let jobs: Vec<(usize, usize, u64)> = (0..policies.len())
        .flat_map(|p| (0..variants.len()).flat_map(move |v| (0..seeds).map(move |s| (p, v, s))))
        .collect();
    // Each run is independent and deterministic; results are put back in job order. Only the
    // runs with `base` keep their report.
    progress.start(info.name, jobs.len() as u64);
    let outcomes: Vec<(f64, Option<KernelReport>)> = jobs
        .par_iter()
        .map(|&(p, v, s)| -> Result<(f64, Option<KernelReport>), RunsError> {
            let scenario = (info, params);
            let run = (request.cpus, request.first_seed + s, variants[v].1);
            let mut kernel = crate::scenario_kernel(&spec, &policies[p], run, scenario, |_| {})?;
            info.run(&mut kernel, params);
            kernel.event_limit_reached()?;
            let report = kernel.report();
            progress.finished();
            Ok((info.metric.value(&report), (v == 0).then_some(report)))
        })
        .collect::<Result<_, _>>()?;
    let mut results = Vec::new();
    let mut outcomes = outcomes.into_iter();
    for policy in &policies {
        let mut per_variant: Vec<(Vec<f64>, Vec<KernelReport>)> = Vec::new();
        for _ in &variants {
            let (values, runs) = outcomes.by_ref().take(seeds as usize).unzip::<_, _, _, Vec<_>>();
            per_variant.push((values, runs.into_iter().flatten().collect()));
        }
        let mut per_variant = per_variant.into_iter();
        let (values, runs) = per_variant.next().unwrap_or_default();
        let ms = tlblab_stats::mean_std(&values)?;
        let explanation = request.explain.then(|| {
            let mut ran = per_variant.map(|(v, _)| v);
            Mechanism::ALL
                .iter()
                .map(|&m| {
                    let status = m.effect_status(base, m.present_for(&spec, policies.iter()));
                    // One variant ran per mechanism whose status is `Ran`, in this order.
                    let off = match status {
                        EffectStatus::Ran => ran.next().unwrap_or_default(),
                        _ => Vec::new(),
                    };
                    effect(m, status, off, &values, ms.mean, noise)
                })
                .collect()
        });
        results.push(PolicyResult {
            policy: policy.clone(),
            values,
            mean: ms.mean,
            stddev: ms.stddev,
            ratio: None,
            verdict: None,
            explanation,
            runs,
        });
    }
    let base_values = results[0].values.clone();
    let lower_is_better = info.metric.lower_is_better();
    for r in results.iter_mut().skip(1) {
        let (ratio, effect) = paired_ratio(&r.values, &base_values, noise);
        r.ratio = ratio;
        r.verdict = Some(Verdict::of(effect, lower_is_better));
    }
    Ok(RunReport {
        schema: RUN_SCHEMA,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        machine: spec.name().to_string(),
        cpus: request.cpus,
        scenario: info.name,
        metric: info.metric.unit(),
        lower_is_better,
        params: params.clone(),
        without: base.off(),
        noise,
        policies: results,
    })
}

/// Mechanism `m`'s effect: `off`, the metric per seed with it off (empty unless it ran),
/// against `on` (mean `on_mean`).
fn effect(
    m: Mechanism,
    status: EffectStatus,
    off: Vec<f64>,
    on: &[f64],
    on_mean: f64,
    noise: f64,
) -> MechanismEffect {
    let ms = tlblab_stats::mean_std(&off).ok();
    let change = ms.map(|ms| ms.mean - on_mean);
    let (ratio, effect) = paired_ratio(&off, on, noise);
    let effect = (status == EffectStatus::Ran).then_some(effect);
    MechanismEffect {
        mechanism: m,
        description: m.description(),
        status,
        mean: ms.map(|ms| ms.mean),
        stddev: ms.map(|ms| ms.stddev),
        change,
        change_pct: change.filter(|_| on_mean != 0.0).map(|c| 100.0 * c / on_mean),
        ratio,
        effect,
        significant: effect.filter(|e| *e != Effect::NoInterval).map(Effect::is_change),
        values: off,
    }
}
