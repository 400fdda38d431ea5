//! Sweeps: a TOML spec of axes over machines, CPUs, scenarios and their parameters, policies,
//! seeds, the flush ceiling and the checker's schedules (docs/sweep.md); every point realised
//! as a [`Job`] with a content hash and checked before anything runs; an engine that runs the
//! jobs (here [`run_local`]; the Python package's Ray engine drives the same [`Writer`] and
//! [`execute`]); and a directory of results that grows as jobs finish, resumes after an
//! interruption, and ends as JSON Lines, Parquet and a summary per measure.
//!
//! ```no_run
//! use tlblab_sweep::{run_local, NoProgress, Plan, Writer};
//! let plan = Plan::load("ceiling.toml".as_ref())?;
//! let mut writer = Writer::open("ceiling-out".as_ref(), &plan, false, false)?;
//! run_local(&mut writer, &NoProgress)?;
//! let summary = writer.finish()?;
//! println!("{}", tlblab_sweep::summary::render(&summary));
//! # Ok::<(), tlblab_sweep::SweepError>(())
//! ```

#![deny(missing_docs)]

mod error;
mod local;
pub mod plan;
pub mod row;
pub mod spec;
pub mod study;
pub mod summary;
mod writer;

pub use error::SweepError;
pub use local::{run_local, NoProgress, Progress};
pub use plan::{Job, Plan, Point};
pub use row::{execute, execute_until, Row};
pub use spec::{Axis, Kind, Spec};
pub use summary::Summary;
pub use writer::{read_journal, Writer, FILES};

/// A job from its JSON (as another process, a Ray worker, receives it).
pub fn job_from_json(text: &str) -> Result<Job, SweepError> {
    serde_json::from_str(text).map_err(|e| SweepError::Json { what: "job", message: e.to_string() })
}

/// A row from its JSON (as a Ray worker sends it back).
pub fn row_from_json(text: &str) -> Result<Row, SweepError> {
    serde_json::from_str(text).map_err(|e| SweepError::Json { what: "row", message: e.to_string() })
}
