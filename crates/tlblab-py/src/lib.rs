//! `tlblab._core`: the Rust half of the Python package `tlblab` (python/tlblab/), built by
//! maturin into an abi3 wheel.
//!
//! Thin on purpose: every function takes what the CLI's options give, calls the same library
//! code as the CLI's command, and hands back the CLI's JSON text (`--format json`), byte for byte;
//! the Python side turns it into DataFrames. The GIL is released while anything simulates, and
//! every error is raised as `tlblab.TlblabError` with the text `tlblab: error:` prints.

#![deny(missing_docs)]

mod runs;
mod sweep;

use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use tlblab_flushtrace::{TextFormat, TraceSource};
use tlblab_kernel::Policy;
use tlblab_replay::{Refill, ReplayError, ReplayOptions};
use tlblab_sim::hw::Replacement;
use tlblab_sim::machine::MachineSpec;
use tlblab_studies::{AllReport, Options, Size, Study, StudyNotRun, SCHEMA_ALL, STUDIES};
use tlblab_types::plain::error_chain;

pyo3::create_exception!(
    _core,
    TlblabError,
    pyo3::exceptions::PyValueError,
    "An error from tlblab, with the text the command line prints after `tlblab: error:`."
);

/// An error as Python sees it: its message is the CLI's.
struct Failure(String);

impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(e: E) -> Failure {
        Failure(error_chain(&e))
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        TlblabError::new_err(f.0)
    }
}

/// The CLI's JSON form of a report: pretty, with a final newline.
fn json<T: serde::Serialize>(value: &T) -> Result<String, Failure> {
    Ok(serde_json::to_string_pretty(value)? + "\n")
}

/// The built-in study `name` (or `all`, or a comma-separated list), run as `tlblab sim study
/// NAME --format json` runs it; its JSON text.
fn study(name: &str, options: &Options, warn: &mut dyn FnMut(String)) -> Result<String, Failure> {
    let chosen: Vec<&'static Study> = if name.eq_ignore_ascii_case("all") {
        STUDIES.iter().collect()
    } else if name.contains(',') {
        let mut chosen = Vec::new();
        for one in name.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let study = tlblab_studies::lookup(one)?;
            if !chosen.iter().any(|s: &&Study| std::ptr::eq(*s, study)) {
                chosen.push(study);
            }
        }
        chosen
    } else {
        let report = tlblab_studies::run(tlblab_studies::lookup(name)?, options)?;
        for n in &report.not_run {
            warn(format!("study {}: part {:?} not run: {}", report.study, n.label, n.reason));
        }
        return json(&report);
    };
    let mut all = AllReport {
        schema: SCHEMA_ALL,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        studies: Vec::new(),
        not_run: Vec::new(),
    };
    for study in chosen {
        match tlblab_studies::run(study, options) {
            Ok(report) => {
                for n in &report.not_run {
                    warn(format!(
                        "study {}: part {:?} not run: {}",
                        report.study, n.label, n.reason
                    ));
                }
                all.studies.push(report);
            }
            // As in the CLI: a study whose scenarios this build lacks is reported, not fatal.
            Err(e) if e.is_missing_scenario() => {
                let reason = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
                warn(format!("study {} not run: {reason}", study.name));
                all.not_run.push(StudyNotRun { study: study.name, reason });
            }
            Err(e) => return Err(e.into()),
        }
    }
    json(&all)
}

/// `tlblab sim study NAME --format json`: the JSON text of a built-in study (`s1-pti` … `s5-xpfo`,
/// `S1`…`S5`, `all`, or a comma-separated list). `seeds`: runs per policy (default: the
/// study's); `noise`: the noise band in percent; `without`: mechanisms switched off in every
/// run. Warnings (parts not run) are Python warnings.
#[pyfunction]
#[pyo3(signature = (name, quick=false, seeds=None, first_seed=1, noise=1.0, explain=false, without=Vec::new()))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
fn study_json(
    py: Python<'_>,
    name: &str,
    quick: bool,
    seeds: Option<u64>,
    first_seed: u64,
    noise: f64,
    explain: bool,
    without: Vec<String>,
) -> PyResult<String> {
    if let Some(k) = seeds.filter(|k| !(1..=1000).contains(k)) {
        return Err(Failure(format!("--seeds {k}: give 1 to 1000 runs per policy")).into());
    }
    if !(noise.is_finite() && (0.0..100.0).contains(&noise)) {
        return Err(Failure(format!("--noise {noise}: give a percentage from 0 to 100")).into());
    }
    let options = Options {
        seeds,
        first_seed,
        size: if quick { Size::Quick } else { Size::Full },
        mechanisms: tlblab_runs::mechanisms_without(&without).map_err(Failure::from)?,
        explain,
        noise: noise / 100.0,
    };
    let mut warnings = Vec::new();
    let text = py.detach(|| study(name, &options, &mut |w| warnings.push(w)))?;
    warn_all(py, &warnings)?;
    Ok(text)
}

/// Emits each text as a Python `UserWarning` (the CLI's `tlblab: warning:` lines).
fn warn_all(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for w in warnings {
        PyErr::warn(py, &category, &std::ffi::CString::new(format!("tlblab: {w}"))?, 1)?;
    }
    Ok(())
}

/// The machine `name` (a preset, `host`, or a preset file) with the run-time choices of
/// `--replacement` and `--paging-levels`.
fn machine(
    name: &str,
    replacement: Option<&str>,
    paging_levels: u8,
) -> Result<MachineSpec, Failure> {
    let mut spec =
        if name == "host" { tlblab_host::host_spec()?.spec } else { MachineSpec::load(name)? };
    if !(4..=5).contains(&paging_levels) {
        return Err(Failure(format!("--paging-levels {paging_levels}: give 4 or 5")));
    }
    match replacement {
        None => {}
        Some("lru") => spec = spec.with_replacement(Replacement::Lru),
        Some("plru") => spec = spec.with_replacement(Replacement::Plru),
        Some(other) => {
            return Err(Failure(format!("--replacement {other}: give lru or plru")));
        }
    }
    Ok(spec.with_paging_levels(paging_levels)?)
}

/// What `tlblab sim replay` is given besides the trace, machine and policies.
struct ReplayInput<'a> {
    trace: &'a Path,
    input_format: Option<&'a str>,
    allow_truncated: bool,
    ceiling: &'a [u64],
}

/// `tlblab sim replay`'s work: its JSON text, and the warning it prints for a truncated file.
fn replay(
    input: &ReplayInput<'_>,
    spec: &MachineSpec,
    policies: &[Policy],
    opts: &ReplayOptions,
    warn: &mut dyn FnMut(String),
) -> Result<String, Failure> {
    let format = match input.input_format {
        None => None,
        Some("ftrace") => Some(TextFormat::FtraceText),
        Some("perf") => Some(TextFormat::PerfScript),
        Some(other) => {
            return Err(Failure(format!("--input-format {other}: give ftrace or perf")));
        }
    };
    let mut source = TraceSource::open(input.trace, format, input.allow_truncated)?;
    let (mut records, mut positions) = (Vec::new(), Vec::new());
    while let Some(r) = source.next_record()? {
        records.push(r);
        positions.push(source.position());
    }
    // As in the CLI: an error about a record names where it is in the file.
    let at = |e: ReplayError| -> Failure {
        match e.record().and_then(|i| positions.get(usize::try_from(i).ok()?)) {
            Some(p) => Failure(format!("{}: {p}: {}", input.trace.display(), error_chain(&e))),
            None => e.into(),
        }
    };
    let mut header = source.header().clone();
    let trailer = source.trailer_or_truncation();
    trailer.merge_into(&mut header);
    if let Some(at) = source.truncated_at() {
        warn(format!(
            "{} is truncated at byte offset {at}: replaying its {} complete records",
            input.trace.display(),
            records.len()
        ));
    }
    if input.ceiling.is_empty() {
        json(&tlblab_replay::replay(&header, records, spec, policies, opts).map_err(at)?)
    } else {
        let first = policies.first().ok_or_else(|| Failure("give at least one policy".into()))?;
        json(
            &tlblab_replay::sweep_ceiling(&header, records, spec, first, input.ceiling, opts)
                .map_err(at)?,
        )
    }
}

/// `tlblab sim replay TRACE --format json`: the JSON text of a flush trace (a tlblab trace file,
/// or ftrace / perf script text) replayed under each policy, or, with `ceiling`, a sweep of
/// tlb_single_page_flush_ceiling under the first policy. The options are the CLI's.
#[pyfunction]
#[pyo3(signature = (
    trace, policies=vec!["linux-6.18".to_owned()], machine="skylake", ceiling=None, cpus=None,
    seed=1, refill="flushed", working_set=64, idle_gap_us=1000, recorded_ceiling=33,
    allow_truncated=false, input_format=None, replacement=None, paging_levels=4
))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one per CLI option.
fn replay_json(
    py: Python<'_>,
    trace: PathBuf,
    policies: Vec<String>,
    machine: &str,
    ceiling: Option<Vec<u64>>,
    cpus: Option<usize>,
    seed: u64,
    refill: &str,
    working_set: u64,
    idle_gap_us: u64,
    recorded_ceiling: u64,
    allow_truncated: bool,
    input_format: Option<&str>,
    replacement: Option<&str>,
    paging_levels: u8,
) -> PyResult<String> {
    let mut warnings = Vec::new();
    let text = py.detach(|| -> Result<String, Failure> {
        let spec = self::machine(machine, replacement, paging_levels)?;
        let policies: Vec<Policy> =
            policies.iter().map(|p| Policy::load(p)).collect::<Result<_, _>>()?;
        if policies.is_empty() {
            return Err(Failure("give at least one policy".into()));
        }
        if working_set == 0 {
            return Err(Failure("--working-set 0: give at least one page".into()));
        }
        let refill = match refill {
            "none" => Refill::None,
            "flushed" => Refill::Flushed,
            "working-set" => Refill::WorkingSet(working_set),
            other => {
                return Err(Failure(format!("--refill {other}: give none, flushed or working-set")))
            }
        };
        let opts = ReplayOptions {
            cpus,
            seed,
            refill,
            idle_gap_ns: idle_gap_us.saturating_mul(1000),
            recorded_ceiling,
            ..ReplayOptions::default()
        };
        let input = ReplayInput {
            trace: &trace,
            input_format,
            allow_truncated,
            ceiling: ceiling.as_deref().unwrap_or_default(),
        };
        replay(&input, &spec, &policies, &opts, &mut |w| warnings.push(w))
    })?;
    warn_all(py, &warnings)?;
    Ok(text)
}

/// The version of tlblab this module was built from.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// tlblab's Rust core for Python: studies, replay and sweeps, as the CLI's JSON.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("TlblabError", m.py().get_type::<TlblabError>())?;
    m.add_function(wrap_pyfunction!(study_json, m)?)?;
    m.add_function(wrap_pyfunction!(replay_json, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(runs::run_json, m)?)?;
    m.add_function(wrap_pyfunction!(runs::check_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::execute_jobs, m)?)?;
    m.add_class::<sweep::Sweep>()?;
    Ok(())
}
