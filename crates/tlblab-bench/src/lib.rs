//! The harness of tlblab's live benchmarks (`tlblab bench`, `tlblab compare`).
//!
//! It is independent of what a run does: an [`Executor`] performs one measured run of a
//! [`BenchConfig`] (the live scenarios, or [`MockExecutor`]'s scripted samples in tests) and
//! returns a [`RunRecord`] with the run's value and counters. The harness decides the order
//! of runs (interleaved rounds in a seeded random order, so that drifts of a noisy machine
//! fall on every configuration alike), stops cleanly when asked, and keeps every raw sample in
//! a versioned, documented result file ([`BenchResults`], schema [`SCHEMA`]) that is rewritten
//! atomically after every run, so that an interrupted session loses nothing.
//!
//! Results are compared with [`compare_results`] (two sessions, e.g. two kernels, matched
//! configuration by configuration; different scenarios or parameters are refused) or
//! [`compare_within`] (each configuration of one session against its first), with the
//! statistics of `tlblab-stats`: Welch's t-test, a bootstrap interval of the relative change,
//! and criterion's verdict rule. [`render`] prints mmtests-style tables, Markdown, CSV or JSON
//! (a [`ResultsComparison`], schema [`COMPARE_SCHEMA`], which reads back with serde).
//!
//! ```
//! use std::sync::atomic::AtomicBool;
//! use tlblab_bench::{BenchConfig, Method, MockExecutor, Session, compare_within, CompareSettings};
//!
//! let busy0 = BenchConfig::new("madvise-busy", [("busy", "0")], "µs/op", true);
//! let busy1 = BenchConfig::new("madvise-busy", [("busy", "1")], "µs/op", true);
//! let mut mock = MockExecutor::default();
//! mock.script(&busy0, [2.0, 2.1, 1.9, 2.0, 2.05, 1.95]);
//! mock.script(&busy1, [9.0, 9.3, 8.8, 9.1, 9.2, 8.9]);
//! let method = Method { runs: 6, ..Method::default() };
//! let mut session = Session::new(vec![busy0, busy1], method, None);
//! session.run(&mut mock, &AtomicBool::new(false), &mut ())?;
//! let rows = compare_within(session.results(), &CompareSettings::default())?;
//! assert_eq!(rows[0].comparison.verdict, tlblab_stats::Verdict::Regressed);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod compare;
mod error;
mod executor;
pub mod render;
mod results;
mod session;
mod store;

pub use compare::{
    compare_results, compare_within, CompareSettings, ConfigComparison, ResultsComparison, MIN_RUNS,
};
pub use error::{BenchError, ExecError};
pub use executor::{Executor, MockExecutor};
pub use results::{
    BenchConfig, BenchResults, ConfigResult, HarnessOverhead, Method, RunRecord, COMPARE_SCHEMA,
    SCHEMA,
};
pub use session::{Progress, Session};
pub use store::{load_results, write_atomic, BaselineStore};
