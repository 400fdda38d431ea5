//! One job's results: a row of every axis, every measure and the run's counters.

use crate::error::SweepError;
use crate::plan::{Job, Point};
use crate::spec::Kind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tlblab_kernel::exposure::RunExposure;
use tlblab_kernel::{Kernel, Mechanisms, NoObserver, ViolationKind};
use tlblab_studies::report::RunSummary;
use tlblab_studies::Measure;
use tlblab_types::Cycles;

/// One job's results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The job's place in the plan.
    pub index: u64,
    /// The job's content hash.
    pub hash: String,
    /// What the job did.
    pub kind: Kind,
    /// The job's axes.
    #[serde(flatten)]
    pub point: Point,
    /// Every task finished, or the run ended at its scenario's window as designed (kbuild's);
    /// `check`: the same for every schedule. `false` means a run that stopped short.
    pub finished: bool,
    /// The measures ([`measure_keys`]), `null` where the run has none (see `notes`).
    pub measures: BTreeMap<String, Option<f64>>,
    /// Why a measure has no value.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub notes: BTreeMap<String, String>,
    /// The run's counters (`run`: the study report's run summary, flattened with `.`; `check`:
    /// accesses judged, violations by kind, …).
    pub counters: BTreeMap<String, u64>,
}

/// The measures of a checker job.
const CHECK_MEASURES: &[&str] = &[
    "violations",
    "schedules_with_violations",
    "violations_per_schedule",
    "deferred_uses",
    "missed_catch_ups",
    "window_uses",
];

/// The measure keys rows of `kind` carry, in column order.
pub fn measure_keys(kind: Kind) -> Vec<&'static str> {
    match kind {
        Kind::Run => Measure::ALL.iter().map(|m| m.key()).collect(),
        Kind::Check => CHECK_MEASURES.to_vec(),
    }
}

/// Whether a lower value of measure `key` is better, for a scenario whose metric is `metric`.
pub fn lower_is_better(key: &str, scenario: &str) -> bool {
    let metric = tlblab_kernel::workloads::scenario(scenario).map(|s| s.metric);
    match (Measure::ALL.iter().find(|m| m.key() == key), metric) {
        (Some(m), Ok(metric)) => m.lower_is_better(metric),
        // Checker measures are counts of bad outcomes.
        _ => true,
    }
}

/// Runs `job` in this thread: deterministic, whatever the thread or machine.
pub fn execute(job: &Job) -> Result<Row, SweepError> {
    execute_until(job, None)
}

/// Runs `job` in this thread, and stops it soon after `stop` is set (a stopped sweep's
/// abandoned job): it then returns [`SweepError::Job`] saying so, which is no row. Until then,
/// the same as [`execute`].
pub fn execute_until(job: &Job, stop: Option<&Arc<AtomicBool>>) -> Result<Row, SweepError> {
    match job.kind {
        Kind::Run => execute_run(job, stop),
        Kind::Check => execute_check(job, stop),
    }
}

/// The job's kernel with its scenario installed, built as `sim run`, `sim check` and the
/// studies build it; `prepare` runs first (the checker must be on before any task starts).
fn kernel(
    job: &Job,
    (seed, stop): (u64, Option<&Arc<AtomicBool>>),
    info: &tlblab_kernel::workloads::ScenarioInfo,
    prepare: impl FnOnce(&mut Kernel<NoObserver>),
) -> Result<Kernel<NoObserver>, SweepError> {
    let machine = job.machine()?;
    let cpus = u16::try_from(job.point.cpus).unwrap_or(u16::MAX);
    tlblab_runs::scenario_kernel(
        &machine,
        &job.policy,
        (cpus, seed, Mechanisms::all()),
        (info, &job.point.params()),
        |k| {
            if let Some(stop) = stop {
                k.stop_when(stop.clone());
            }
            prepare(k)
        },
    )
    .map_err(|e| SweepError::job(job, &e))
}

fn execute_run(job: &Job, stop: Option<&Arc<AtomicBool>>) -> Result<Row, SweepError> {
    let info = tlblab_kernel::workloads::scenario(&job.point.scenario)
        .map_err(|e| SweepError::job(job, &e))?;
    let params = job.point.params();
    let mut k = kernel(job, (job.point.seed, stop), info, |_| {})?;
    // A scenario with a window stops at its end, tasks finished or not.
    let windowed = info.time_limit(&params, k.clock_mhz()) != Cycles(u64::MAX);
    let finished = info.run(&mut k, &params);
    k.event_limit_reached().map_err(|e| SweepError::job(job, &e))?;
    let report = k.report();
    let (mut measures, mut notes) = (BTreeMap::new(), BTreeMap::new());
    for m in Measure::ALL {
        match m.value(&report, info.metric) {
            Ok(v) => {
                measures.insert(m.key().to_string(), Some(v));
            }
            Err(why) => {
                measures.insert(m.key().to_string(), None);
                notes.insert(m.key().to_string(), why.to_string());
            }
        }
    }
    let summary = RunSummary::of(job.point.seed, finished, &report);
    let mut counters = BTreeMap::new();
    flatten("", &serde_json::to_value(&summary).expect("a summary serializes"), &mut counters);
    counters.remove("seed");
    Ok(Row {
        index: job.index,
        hash: job.hash.clone(),
        kind: job.kind,
        point: job.point.clone(),
        finished: finished || windowed,
        measures,
        notes,
        counters,
    })
}

/// The whole-number leaves of `v`, named by their path (`vmstat.nr_tlb_remote_flush`); lists
/// (histograms, quantiles) are left to the run's own JSON.
fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, u64>) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                let name = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&name, v, out);
            }
        }
        serde_json::Value::Number(n) => {
            if let Some(n) = n.as_u64() {
                out.insert(prefix.to_string(), n);
            }
        }
        _ => {}
    }
}

fn execute_check(job: &Job, stop: Option<&Arc<AtomicBool>>) -> Result<Row, SweepError> {
    let info = tlblab_kernel::workloads::scenario(&job.point.scenario)
        .map_err(|e| SweepError::job(job, &e))?;
    let params = job.point.params();
    let schedules = job.point.schedules.unwrap_or(1);
    let first = job.point.seed.saturating_mul(schedules);
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut add = |key: &str, n: u64| *counters.entry(key.to_string()).or_default() += n;
    let (mut deferred_uses, mut missed) = (0, 0);
    let mut all_finished = true;
    for seed in first..first + schedules {
        let mut k = kernel(job, (seed, stop), info, |k| {
            k.enable_checker();
            k.perturb(Cycles(job.point.max_ipi_delay.unwrap_or(0)));
            k.disturb(Cycles(job.point.disturb_every.unwrap_or(0)));
        })?;
        // A scenario with a window stops at its end, tasks finished or not.
        let windowed = info.time_limit(&params, k.clock_mhz()) != Cycles(u64::MAX);
        let finished = info.run(&mut k, &params) || windowed;
        k.event_limit_reached().map_err(|e| SweepError::job(job, &e))?;
        all_finished &= finished;
        let (accesses, window_uses) = k.check_counts().unwrap_or_default();
        add("schedules", 1);
        add("unfinished", u64::from(!finished));
        add("accesses", accesses);
        add("window_uses", window_uses);
        let violations = k.violations();
        add("violations", violations.len() as u64);
        add("schedules_with_violations", u64::from(!violations.is_empty()));
        for kind in ViolationKind::ALL {
            let n = violations.iter().filter(|v| v.kind == kind).count() as u64;
            add(&format!("violations.{}", serde_name(&kind)), n);
        }
        let RunExposure { user, kernel } = k.exposure();
        for log in [user, kernel].into_iter().flatten() {
            deferred_uses += log.uses.unwrap_or(0);
            missed += log.missed_catch_ups;
        }
    }
    add("deferred_uses", deferred_uses);
    add("missed_catch_ups", missed);
    let n = |key: &str| counters.get(key).copied().unwrap_or(0) as f64;
    let measures = CHECK_MEASURES
        .iter()
        .map(|&key| {
            let v = match key {
                "violations_per_schedule" => n("violations") / schedules as f64,
                key => n(key),
            };
            (key.to_string(), Some(v))
        })
        .collect();
    Ok(Row {
        index: job.index,
        hash: job.hash.clone(),
        kind: job.kind,
        point: job.point.clone(),
        finished: all_finished,
        measures,
        notes: BTreeMap::new(),
        counters,
    })
}

/// A value's serde name (`stale_after_completion`).
fn serde_name(v: &impl Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}
