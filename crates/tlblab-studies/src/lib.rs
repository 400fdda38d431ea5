//! The built-in studies of tlblab's simulator: S1–S5, the kernel debates of `studies.md`, and
//! S6–S10, the studies beyond them, each as parts (a scenario on a machine preset) run under two or more policies
//! on the kernel model (`tlblab-kernel`), K seeds each.
//!
//! - [`study`]: the studies and the table of their settings, each with its reason;
//! - [`run`]: every (part, policy, seed) run in parallel, results in a fixed order, so the
//!   output is byte-identical whatever the number of threads;
//! - [`report`]: the results (serde; JSON schema `tlblab.sim.study/1`, docs/sim-output.md):
//!   per measure the per-seed values, mean ± stddev, and the ratio to the baseline policy with
//!   its 95% CI, paired by seed; big per-run vectors summarised;
//! - [`render`]: text, each study in its own format (S1's flush-size histogram, S3's
//!   `perf stat` blocks, S4's mmtests table, …).
//!
//! ```
//! use tlblab_studies::{find, render, run, Options, Size};
//!
//! let s2 = find("S2").unwrap();
//! assert_eq!(s2.name, "s2-pcid");
//! let options = Options { seeds: Some(2), size: Size::Quick, ..Options::default() };
//! let report = run(s2, &options)?;
//! // madv-migrate: Linux 4.13 interrupts the CPU the task just left on every madvise, 4.14 never.
//! let migrate = &report.parts[0];
//! let ipis_per_op = |policy: usize| migrate.policies[policy].measures[1].mean.unwrap();
//! assert_eq!((ipis_per_op(0), ipis_per_op(2)), (1.0, 0.0));
//! assert!(render::study(&report).contains("QUICK RUN"));
//! # Ok::<(), tlblab_studies::StudyError>(())
//! ```
#![deny(missing_docs)]

mod beyond_s10;
mod beyond_s6;
mod beyond_s7;
mod beyond_s8;
mod beyond_s9;
mod error;
pub mod inputs;
pub mod measure;
pub mod render;
pub mod report;
mod runner;
pub mod study;
pub mod text;

pub use error::StudyError;
pub use measure::Measure;
pub use report::{AllReport, Answer, EffectStatus, StudyNotRun, StudyReport, SCHEMA, SCHEMA_ALL};
pub use runner::{run, run_with_progress, NoProgress, Options, Progress};
pub use study::{find, known_names, Part, Relative, Size, Study, Sweep, SweepAxis, STUDIES};

/// The study called `name` (`s2-pcid`, `s2`, `S2`), or an error naming the known ones.
pub fn lookup(name: &str) -> Result<&'static Study, StudyError> {
    find(name).ok_or_else(|| StudyError::Unknown { name: name.to_string(), known: known_names() })
}
