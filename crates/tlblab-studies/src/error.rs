//! The crate's error type. Sources are boxed: the kernel model's errors are large, and an
//! error travels through every run's result.

use thiserror::Error;

/// Why a study cannot run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum StudyError {
    /// No study has this name.
    #[error("unknown study {name:?}{hint} (known: {known})", hint = tlblab_types::names::did_you_mean(name, tlblab_types::names::listed(known)))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names, with their short forms.
        known: String,
    },
    /// `--seeds 0`.
    #[error("a study needs at least one seed")]
    NoSeeds,
    /// A part names a machine preset that does not exist or does not load.
    #[error("study {study}, part {part:?}: machine {machine}")]
    Machine {
        /// The study.
        study: &'static str,
        /// The part's label.
        part: String,
        /// The preset name.
        machine: &'static str,
        /// What went wrong.
        #[source]
        source: Box<tlblab_sim::machine::MachineError>,
    },
    /// A part names a scenario this build of the kernel model does not have, or its settings
    /// do not fit the machine.
    #[error("study {study}, part {part:?}")]
    Scenario {
        /// The study.
        study: &'static str,
        /// The part's label.
        part: String,
        /// What went wrong.
        #[source]
        source: Box<tlblab_kernel::workloads::ScenarioError>,
    },
    /// A part names a policy that does not exist.
    #[error("study {study}, part {part:?}")]
    Policy {
        /// The study.
        study: &'static str,
        /// The part's label.
        part: String,
        /// What went wrong.
        #[source]
        source: Box<tlblab_kernel::policy::PolicyError>,
    },
    /// The kernel model refused a run (a policy it does not model, a feature the machine
    /// lacks, a CPU count out of range).
    #[error("study {study}, part {part:?}, policy {policy}")]
    Kernel {
        /// The study.
        study: &'static str,
        /// The part's label.
        part: String,
        /// The policy.
        policy: String,
        /// What went wrong.
        #[source]
        source: Box<tlblab_kernel::KernelError>,
    },
    /// A part's shipped trace does not read (S10).
    #[error("study {study}, part {part:?}: trace: {message}")]
    Trace {
        /// The study.
        study: &'static str,
        /// The part's label.
        part: String,
        /// What went wrong.
        message: String,
    },
    /// A part's trace cannot be replayed (S10).
    #[error("study {study}, part {part:?}")]
    Replay {
        /// The study.
        study: &'static str,
        /// The part's label.
        part: String,
        /// What went wrong.
        #[source]
        source: Box<tlblab_replay::ReplayError>,
    },
}

impl StudyError {
    /// Whether the study could not run because this build of the kernel model lacks a
    /// scenario it needs (rather than a bad name or setting).
    pub fn is_missing_scenario(&self) -> bool {
        matches!(
            self,
            StudyError::Scenario { source, .. }
                if matches!(**source, tlblab_kernel::workloads::ScenarioError::Unknown(_))
        )
    }
}
