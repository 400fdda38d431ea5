//! One scenario of the kernel model under several policies and seeds (`tlblab sim run`), and
//! the safety checker over many perturbed schedules (`tlblab sim check`, docs/safety.md), as
//! serializable reports.
//!
//! The `tlblab` binary and the Python package both call [`run`] and [`check`] and print the
//! reports with [`RunReport::to_json`] and [`check_json`], so the JSON is the same bytes from
//! either (schemas `tlblab.sim.run/1` and `tlblab.sim.check/1`, docs/sim-output.md and
//! docs/safety.md). Every run is independent and deterministic and results are put back in a
//! fixed order: a report does not depend on the number of rayon threads.
//!
//! ```
//! use tlblab_runs::{run, NoProgress, RunRequest};
//!
//! let mut request = RunRequest::new("pingpong", &["linux-4.13", "linux-4.14"]);
//! request.params.iterations = 50;
//! request.seeds = 2;
//! let report = run(&request, &NoProgress)?;
//! assert_eq!(report.policies.len(), 2);
//! assert!(report.to_json()?.starts_with("{\n  \"schema\": \"tlblab.sim.run/1\""));
//! # Ok::<(), tlblab_runs::RunsError>(())
//! ```
#![deny(missing_docs)]

mod check;
mod error;
mod run;

pub use check::{check, check_json, CheckReport, CheckRequest, Speed, Witness, CHECK_SCHEMA};
pub use error::RunsError;
pub use run::{run, MechanismEffect, PolicyResult, RunReport, RunRequest, RUN_SCHEMA};

use tlblab_kernel::workloads::{Params, ScenarioInfo};
use tlblab_kernel::{Kernel, KernelConfig, Mechanisms, NoObserver, Policy};
use tlblab_sim::machine::MachineSpec;

/// What a progress display is told while runs go on; it never changes the results.
pub trait Progress: Sync {
    /// A step starts: `what` (the scenario of [`run`], the policy [`check`] is on) will take
    /// `total` runs or schedules.
    fn start(&self, what: &str, total: u64);
    /// One more has finished (they finish in any order).
    fn finished(&self);
}

/// No progress display.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _what: &str, _total: u64) {}
    fn finished(&self) {}
}

/// Every mechanism but those named (`tlblab sim mechanisms` lists them), for
/// [`RunRequest::without`].
pub fn mechanisms_without<S: AsRef<str>>(names: &[S]) -> Result<Mechanisms, RunsError> {
    names.iter().try_fold(Mechanisms::all(), |set, name| {
        Ok(tlblab_kernel::Mechanism::from_name(name.as_ref()).map(|m| set.without(m))?)
    })
}

/// The name that selects the preset of this machine.
pub const HOST_PRESET: &str = "host";

/// The machine preset `name`: built in, `host` (built from this machine's CPUID and sysfs; see
/// docs/host-preset.md), or a preset file.
pub fn load_machine(name: &str) -> Result<MachineSpec, RunsError> {
    if name == HOST_PRESET {
        return Ok(tlblab_host::host_spec()?.spec);
    }
    Ok(MachineSpec::load(name)?)
}

/// A kernel model of `cpus` CPUs running `policy` on `spec` from `seed` with `mechanisms` on,
/// with `info`'s scenario installed; `prepare` runs first (the safety checker and perturbations
/// must be set before the scenario's tasks start). Run it with [`ScenarioInfo::run`].
pub fn scenario_kernel(
    spec: &MachineSpec,
    policy: &Policy,
    (cpus, seed, mechanisms): (u16, u64, Mechanisms),
    (info, params): (&ScenarioInfo, &Params),
    prepare: impl FnOnce(&mut Kernel<NoObserver>),
) -> Result<Kernel<NoObserver>, RunsError> {
    let config = KernelConfig::new(usize::from(cpus), seed).with_mechanisms(mechanisms);
    let mut kernel = Kernel::new(spec, policy, config, NoObserver)?;
    prepare(&mut kernel);
    info.install(&mut kernel, params)?;
    Ok(kernel)
}

/// Refuses a scenario parameter outside its bound ([`tlblab_types::bounds`]), as the command
/// line refuses it where it is parsed: a library or Python caller gets the same error.
pub fn check_params(p: &Params) -> Result<(), RunsError> {
    use tlblab_types::bounds as b;
    let usize = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    for (bound, value) in [
        (b::ITERATIONS, p.iterations),
        (b::TOUCH, p.touch),
        (b::BUSY, usize(p.busy)),
        (b::TASKS, usize(p.tasks)),
        (b::PAGES, p.pages),
        (b::CYCLES_PER_PAGE, p.cycles_per_page),
        (b::JOBS, p.jobs),
        (b::WINDOW_MS, p.window_ms),
        (b::WARMUP_MS, p.warmup_ms),
        (b::BURST_US, p.burst_us),
        (b::GROUPS, usize(p.groups)),
        (b::FDS, usize(p.fds)),
        (b::LOOPS, p.loops),
        (b::DATASIZE, p.datasize),
    ] {
        bound.check(value)?;
    }
    Ok(())
}

/// Simulated CPUs a request may ask for (as `--cpus` allows).
const CPUS: std::ops::RangeInclusive<u16> = 1..=4096;

/// Refuses a CPU count outside [`CPUS`], and `count` seeds from `first` that pass `u64::MAX`.
fn check_cpus_and_seeds(
    cpus: u16,
    first: u64,
    count: u64,
    what: &'static str,
) -> Result<(), RunsError> {
    if !CPUS.contains(&cpus) {
        return Err(RunsError::OutOfRange {
            field: "cpus",
            value: cpus.to_string(),
            expected: "from 1 to 4096",
        });
    }
    if count > 0 && first.checked_add(count - 1).is_none() {
        return Err(RunsError::SeedOverflow { first, count, what });
    }
    Ok(())
}

/// Loads every policy (names or policy files) before anything runs; at least one.
fn load_policies(names: &[String]) -> Result<Vec<Policy>, RunsError> {
    if names.is_empty() {
        return Err(RunsError::NoPolicies);
    }
    names.iter().map(|p| Ok(Policy::load(p)?)).collect()
}
