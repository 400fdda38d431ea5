//! What can go wrong in a sweep.

use crate::plan::Job;
use thiserror::Error;

/// A sweep that cannot go on.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The spec is wrong: `message` names the line and key.
    #[error("sweep spec {origin}: {message}")]
    Spec {
        /// The spec file.
        origin: String,
        /// What is wrong, and where.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A job failed while running.
    #[error("job {index} ({what}): {message}")]
    Job {
        /// Its index.
        index: u64,
        /// Its point in words.
        what: String,
        /// Why.
        message: String,
    },
    /// The output directory holds another sweep's results, or is not a sweep's.
    #[error("{dir}: {message}")]
    Output {
        /// The directory.
        dir: String,
        /// What is wrong with it.
        message: String,
    },
    /// A results file is damaged.
    #[error("{path}, line {line}: {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// Its line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A job or row given as JSON (from another process) is not one.
    #[error("not a sweep {what} in JSON: {message}")]
    Json {
        /// `job` or `row`.
        what: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The Parquet writer failed.
    #[error("{path}: writing Parquet: {message}")]
    Parquet {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
    /// Jobs failed; every other job ran and its row is kept.
    #[error("{failed} job(s) failed (every other job ran); the {done} finished jobs are kept in {dir} and resuming (`--resume`, `resume=True`) runs the rest: {first}")]
    JobsFailed {
        /// Jobs that failed.
        failed: u64,
        /// Jobs recorded.
        done: u64,
        /// The results directory.
        dir: String,
        /// The first failure in plan order.
        first: Box<SweepError>,
    },
    /// The sweep was interrupted (SIGINT or SIGTERM); the finished jobs are kept.
    #[error("interrupted after {done} of {total} jobs; `--resume` runs the rest")]
    Interrupted {
        /// Jobs recorded.
        done: u64,
        /// Jobs in the plan.
        total: u64,
    },
}

impl SweepError {
    /// A job's failure, with its point in words.
    pub fn job(job: &Job, e: &(dyn std::error::Error + 'static)) -> SweepError {
        let p = &job.point;
        SweepError::Job {
            index: job.index,
            what: format!(
                "{}: machine {}, {} CPUs, scenario {}, policy {}, seed {}",
                p.grid, p.machine, p.cpus, p.scenario, p.policy, p.seed
            ),
            message: tlblab_types::plain::error_chain(e),
        }
    }
}
