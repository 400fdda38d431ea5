//! tlblab's microbenchmark scenarios as real programs on the running Linux kernel.
//!
//! The scenarios have the simulator's names and parameters (see [`scenarios`]): threads share
//! one mm where the scenario says threads, and separate forked processes where it says
//! processes. This crate sets a scenario up and times single runs of it; the harness on top
//! (warm-up, repetitions, statistics, result files) belongs to the `tlblab bench` command.
//!
//! - [`prepare`] starts and pins the tasks ([`Placement`]), maps the memory at fixed addresses and
//!   touches it once; nothing is measured yet.
//! - [`Prepared::run`] does one measured run of [`RunLength::Ops`] operations or of
//!   [`RunLength::Time`], and returns a [`RunSample`] in the scenario's [`Unit`]. Runs reuse the
//!   setup, so warm-up and measured runs are just calls; between runs every task is blocked.
//! - Dropping the [`Prepared`] stops and joins its threads, kills and reaps its children, and
//!   restores the caller's CPU affinity. A [`StopHandle`] set from a Ctrl-C handler ends a run
//!   early.
//! - [`calibrate_overhead`] measures what the harness adds to one operation against a bare loop
//!   of the same system calls.
//! - The [`aslr`] module explains why the scenarios do not need ASLR turned off.
//!
//! ```
//! use tlblab_live::{prepare, LiveParams, Placement, RunLength, ScenarioSpec};
//!
//! let spec = ScenarioSpec {
//!     name: "madvise-busy".into(),
//!     params: LiveParams { busy: Some(0), ..Default::default() },
//! };
//! let mut prepared = prepare(&spec, &Placement::default())?;
//! prepared.run(RunLength::Ops(1_000))?; // warm-up
//! let sample = prepared.run(RunLength::Ops(10_000))?;
//! assert_eq!(sample.ops, 10_000);
//! println!("{:.3} {}", sample.value, prepared.info().unit.symbol());
//! # Ok::<(), tlblab_live::LiveError>(())
//! ```
#![deny(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!("tlblab-live runs its scenarios on the Linux kernel only (unsupported platform)");

pub mod aslr;
mod cpu;
mod error;
mod measure;
mod overhead;
mod prepared;
mod spec;
mod sys;
mod team;

pub use aslr::{aslr_state, disable_aslr_for_exec, AslrState};
pub use cpu::{online_cpus, thread_affinity};
pub use error::LiveError;
pub use measure::{RunLength, RunSample, StopHandle, BATCH};
pub use overhead::{calibrate_overhead, Overhead};
pub use prepared::{prepare, Placement, Prepared};
pub use spec::{
    scenario, scenarios, LiveParams, LiveScenarioInfo, Mode, ScenarioSpec, StormOp, Unit,
    MAX_PAGES, MAX_TASKS,
};
