//! The crate's error type. Every message names the file and line, the counter, or the call.

use std::path::PathBuf;

/// What went wrong while reading or comparing system counters.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error (permission denied, not found, ...).
        source: std::io::Error,
    },
    /// A line of a kernel text file did not have the expected shape.
    #[error("{what} line {line}: {message}")]
    Parse {
        /// Which file or format (e.g. "/proc/interrupts").
        what: String,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// A CPU list such as "0-3,8-11" was malformed.
    #[error("bad CPU list {input:?}: {message}")]
    IdList {
        /// The text that was parsed.
        input: String,
        /// What was wrong.
        message: String,
    },
    /// A monotonic counter was smaller after a run than before it.
    #[error("counter {counter} went backwards: {before} before the run, {after} after")]
    CounterWentBackwards {
        /// Counter name, with the CPU when per-CPU (e.g. "TLB on CPU1").
        counter: String,
        /// Value before the run.
        before: u64,
        /// Value after the run.
        after: u64,
    },
    /// Two snapshots cover different CPUs (a CPU went on- or offline during the run).
    #[error("{what}: the CPU columns changed during the run ({before} before, {after} after)")]
    CpusChanged {
        /// Which snapshot kind.
        what: String,
        /// CPU list before.
        before: String,
        /// CPU list after.
        after: String,
    },
    /// A system call failed.
    #[error("{call} failed")]
    Syscall {
        /// The call, with its arguments (e.g. "getrusage(RUSAGE_SELF)").
        call: String,
        /// The error.
        source: std::io::Error,
    },
}

/// `after - before`, or [`Error::CounterWentBackwards`].
pub(crate) fn counter_delta(counter: &str, before: u64, after: u64) -> Result<u64, Error> {
    after.checked_sub(before).ok_or_else(|| Error::CounterWentBackwards {
        counter: counter.to_owned(),
        before,
        after,
    })
}
