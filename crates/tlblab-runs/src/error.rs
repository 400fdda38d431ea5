//! The crate's error type. The inputs' own errors pass through unchanged (their messages are
//! the ones `tlblab` prints); the kernel model's are boxed, being large.

use thiserror::Error;
use tlblab_kernel::mechanisms::MechanismError;
use tlblab_kernel::policy::PolicyError;
use tlblab_kernel::workloads::ScenarioError;
use tlblab_kernel::KernelError;

/// Why a run or a check cannot be done.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RunsError {
    /// The machine preset is unknown or does not load.
    #[error(transparent)]
    Machine(#[from] tlblab_sim::machine::MachineError),
    /// The `host` preset could not be built from this machine.
    #[error(transparent)]
    Host(#[from] tlblab_host::HostError),
    /// The scenario is unknown, or cannot run on this machine (too few CPUs, …).
    #[error(transparent)]
    Scenario(Box<ScenarioError>),
    /// A policy name is unknown, or a policy file does not load.
    #[error(transparent)]
    Policy(Box<PolicyError>),
    /// A mechanism name is unknown.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The kernel model refuses the configuration.
    #[error(transparent)]
    Kernel(Box<KernelError>),
    /// A number outside its bound ([`tlblab_types::bounds`]), as the command line refuses it.
    #[error(transparent)]
    OutOfBounds(#[from] tlblab_types::bounds::OutOfBounds),
    /// A request with no policy.
    #[error("no policy given: give at least one")]
    NoPolicies,
    /// A request's number outside its range.
    #[error("{field} {value}: give a value {expected}")]
    OutOfRange {
        /// The request's field (the command line's option, less `--`).
        field: &'static str,
        /// The value given.
        value: String,
        /// The values allowed.
        expected: &'static str,
    },
    /// Seeds `first`, `first + 1`, … would pass the largest seed.
    #[error("{count} {what} from seed {first} pass the largest seed, {}", u64::MAX)]
    SeedOverflow {
        /// The first seed.
        first: u64,
        /// How many.
        count: u64,
        /// Of what (seeds, schedules, speed runs).
        what: &'static str,
    },
    /// A policy's metric has no mean (no seed ran: the range check prevents it).
    #[error("the metric: {0}")]
    Stats(#[from] tlblab_stats::StatsError),
    /// A report could not be written as JSON.
    #[error("writing the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl RunsError {
    /// Whether the error is in the input (a name, a file, a number: the command line's exit
    /// status 2) rather than a failure to do what was asked (1).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, RunsError::Host(_) | RunsError::Stats(_) | RunsError::Json(_))
    }
}

impl From<ScenarioError> for RunsError {
    fn from(e: ScenarioError) -> RunsError {
        RunsError::Scenario(Box::new(e))
    }
}

impl From<PolicyError> for RunsError {
    fn from(e: PolicyError) -> RunsError {
        RunsError::Policy(Box::new(e))
    }
}

impl From<KernelError> for RunsError {
    fn from(e: KernelError) -> RunsError {
        RunsError::Kernel(Box::new(e))
    }
}
