//! The crate's error type.

use nix::errno::Errno;
use thiserror::Error;

/// Why a scenario could not be set up or run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LiveError {
    /// No live scenario has this name.
    #[error("unknown scenario {name:?}{hint} (known: {known})", hint = tlblab_types::names::did_you_mean(name, tlblab_types::names::listed(known)))]
    UnknownScenario {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A parameter is out of range or does not apply to the scenario.
    #[error("{scenario}: {message}")]
    BadParameter {
        /// The scenario.
        scenario: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The machine (or the placement) has too few CPUs for the settings.
    #[error("{scenario}{settings} needs {needed} CPUs, this machine has {online} online")]
    TooFewCpus {
        /// The scenario.
        scenario: &'static str,
        /// The settings that set the need, as options (e.g. " --busy 2").
        settings: String,
        /// CPUs needed.
        needed: usize,
        /// CPUs online.
        online: usize,
    },
    /// The placement names a CPU that is not online.
    #[error("placement names CPU {cpu}, which is not online (online: {})", online.iter().map(usize::to_string).collect::<Vec<_>>().join(","))]
    CpuNotOnline {
        /// The CPU.
        cpu: usize,
        /// The online CPUs.
        online: Vec<usize>,
    },
    /// A system call failed in the harness (`what` names the call and its arguments).
    #[error("{what}: {errno} ({desc})", desc = errno.desc())]
    Syscall {
        /// The call, e.g. "sched_setaffinity(CPU 3)".
        what: String,
        /// The error.
        errno: Errno,
    },
    /// A task (worker thread or child process) failed at one stage.
    #[error("task {task} failed to {stage}: {errno} ({desc})", desc = errno.desc())]
    Task {
        /// The task's index.
        task: usize,
        /// What it was doing.
        stage: &'static str,
        /// The error.
        errno: Errno,
    },
    /// A task died or did not answer in time.
    #[error("task {task} {what}")]
    TaskLost {
        /// The task's index.
        task: usize,
        /// What happened (e.g. "(pid 123) exited with status 9").
        what: String,
    },
    /// Tasks did not answer in time.
    #[error("tasks did not {what} within {secs} s")]
    Timeout {
        /// What they were asked to do.
        what: &'static str,
        /// The time allowed.
        secs: u64,
    },
    /// A file could not be read.
    #[error("reading {path}")]
    Io {
        /// The file.
        path: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// A file's contents could not be parsed.
    #[error("{path}: cannot parse {text:?}")]
    Parse {
        /// The file.
        path: &'static str,
        /// What it said.
        text: String,
    },
    /// The stop flag was set before the run began, or before its first operation ended.
    #[error("interrupted")]
    Interrupted,
    /// The operation needs a scenario with a single measured loop.
    #[error("{scenario}: {what} needs a scenario with one measured loop on the caller")]
    Unsupported {
        /// The scenario.
        scenario: &'static str,
        /// The operation.
        what: &'static str,
    },
}

/// A failed system call inside a measured loop: the call's name and the error.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpError {
    pub(crate) what: &'static str,
    pub(crate) errno: Errno,
}

impl From<OpError> for LiveError {
    fn from(e: OpError) -> LiveError {
        LiveError::Syscall { what: e.what.to_string(), errno: e.errno }
    }
}

/// Tags an errno with the call that returned it.
pub(crate) trait Context<T> {
    fn op(self, what: &'static str) -> Result<T, OpError>;
    fn call(self, what: impl FnOnce() -> String) -> Result<T, LiveError>;
}

impl<T> Context<T> for Result<T, Errno> {
    #[inline(always)]
    fn op(self, what: &'static str) -> Result<T, OpError> {
        self.map_err(|errno| OpError { what, errno })
    }

    fn call(self, what: impl FnOnce() -> String) -> Result<T, LiveError> {
        self.map_err(|errno| LiveError::Syscall { what: what(), errno })
    }
}
