//! `tlblab sim run` and `tlblab sim check` (crate `tlblab-runs`): the same requests, the same
//! JSON.

use crate::Failure;
use pyo3::prelude::*;
use std::collections::BTreeMap;
use tlblab_kernel::workloads::{Params, StormOp};
use tlblab_runs::{CheckRequest, NoProgress, RunRequest};

/// A scenario parameter's value as Python gives it.
#[derive(FromPyObject)]
pub enum Value {
    /// A number.
    Number(u64),
    /// A word (`mode`, `op`).
    Word(String),
}

/// The CLI's defaults with `given` set, named as the CLI's options are (`cycles_per_page` or
/// `cycles-per-page`).
fn params(given: BTreeMap<String, Value>) -> Result<Params, Failure> {
    let mut p = Params::default();
    for (name, value) in given {
        let key = name.replace('-', "_");
        let bad = |want: &str| {
            Failure(format!("--{} {}: give {want}", key.replace('_', "-"), shown(&value)))
        };
        match (key.as_str(), &value) {
            ("iterations", Value::Number(n)) => p.iterations = *n,
            ("touch", Value::Number(n)) => p.touch = *n,
            ("busy", Value::Number(n)) => p.busy = *n as usize,
            ("tasks", Value::Number(n)) => p.tasks = *n as usize,
            ("pages", Value::Number(n)) => p.pages = *n,
            ("cycles_per_page", Value::Number(n)) => p.cycles_per_page = *n,
            ("jobs", Value::Number(n)) => p.jobs = *n,
            ("window_ms", Value::Number(n)) => p.window_ms = *n,
            ("burst_us", Value::Number(n)) => p.burst_us = *n,
            ("warmup_ms", Value::Number(n)) => p.warmup_ms = *n,
            ("mode", Value::Word(w)) => {
                p.threads = match w.as_str() {
                    "threads" => true,
                    "processes" => false,
                    _ => return Err(bad("threads or processes")),
                }
            }
            ("op", Value::Word(w)) => {
                p.op = match w.as_str() {
                    "munmap" => StormOp::Munmap,
                    "mprotect" => StormOp::Mprotect,
                    _ => return Err(bad("munmap or mprotect")),
                }
            }
            ("mode" | "op", Value::Number(_)) => return Err(bad("a word")),
            (
                "iterations" | "touch" | "busy" | "tasks" | "pages" | "cycles_per_page" | "jobs"
                | "window_ms" | "burst_us" | "warmup_ms",
                Value::Word(_),
            ) => return Err(bad("a whole number")),
            _ => {
                return Err(Failure(format!(
                    "unknown scenario parameter {name:?} (known: iterations, touch, busy, tasks, mode, op, pages, cycles_per_page, jobs, window_ms, burst_us, warmup_ms)"
                )))
            }
        }
    }
    Ok(p)
}

fn shown(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::Word(w) => w.clone(),
    }
}

/// `tlblab sim run SCENARIO --format json`: the JSON text of one scenario under each policy
/// (the first the baseline), `seeds` runs each. `params`: the scenario's parameters by the
/// CLI's names; `without`: mechanisms switched off; `noise`: the noise band in percent.
#[pyfunction]
#[pyo3(signature = (
    scenario, policies=vec!["linux-6.18".to_owned()], machine="skylake".to_owned(), cpus=4,
    seeds=3, first_seed=1, without=Vec::new(), explain=false, noise=1.0, params=BTreeMap::new()
))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
pub fn run_json(
    py: Python<'_>,
    scenario: String,
    policies: Vec<String>,
    machine: String,
    cpus: u16,
    seeds: u64,
    first_seed: u64,
    without: Vec<String>,
    explain: bool,
    noise: f64,
    params: BTreeMap<String, Value>,
) -> PyResult<String> {
    Ok(py.detach(|| -> Result<String, Failure> {
        if !(noise.is_finite() && (0.0..100.0).contains(&noise)) {
            return Err(Failure(format!("--noise {noise}: give a percentage from 0 to 100")));
        }
        let request = RunRequest {
            machine,
            cpus,
            scenario,
            params: self::params(params)?,
            policies,
            seeds,
            first_seed,
            without: tlblab_runs::mechanisms_without(&without)?,
            explain,
            noise: noise / 100.0,
        };
        Ok(tlblab_runs::run(&request, &NoProgress)?.to_json()?)
    })?)
}

/// `tlblab sim check SCENARIO --format json`: the JSON text of the safety checker over
/// `schedules` perturbed schedules per policy (an object for one policy, a list for several).
#[pyfunction]
#[pyo3(signature = (
    scenario, policies=vec!["linux-6.18".to_owned()], machine="skylake".to_owned(), cpus=4,
    schedules=1000, first_seed=1, max_ipi_delay=20_000, disturb_every=200_000, speed_runs=5,
    params=BTreeMap::new()
))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
pub fn check_json(
    py: Python<'_>,
    scenario: String,
    policies: Vec<String>,
    machine: String,
    cpus: u16,
    schedules: u64,
    first_seed: u64,
    max_ipi_delay: u64,
    disturb_every: u64,
    speed_runs: u64,
    params: BTreeMap<String, Value>,
) -> PyResult<String> {
    Ok(py.detach(|| -> Result<String, Failure> {
        let request = CheckRequest {
            machine,
            cpus,
            scenario,
            params: self::params(params)?,
            policies,
            schedules,
            first_seed,
            max_ipi_delay,
            disturb_every,
            speed_runs,
        };
        Ok(tlblab_runs::check_json(&tlblab_runs::check(&request, &NoProgress)?)?)
    })?)
}
