//! End-to-end tests of the `tlblab` binary: every test runs the real executable, as a user would.
//!
//! One test binary with a module per area (golden counts, bad input, determinism, conversion,
//! help, machine presets, the demo, the output doc, warm-up, sim run and sim study, live
//! benchmarks and their comparison, the tracer, the main job), so that the suite links once and
//! runs in parallel.

mod bench;
mod bounds;
mod check;
mod cliout;
mod common;
mod compare;
mod convert;
mod demo;
mod determinism;
mod docs;
mod errors;
mod escape;
mod golden;
mod help;
mod lab;
mod machines;
mod messages;
mod output_safety;
mod report_summary;
mod robust;
mod sim_run;
mod sim_study;
mod sweep;
mod sweep_report;
mod trace;
mod verdicts;
mod warmup;
