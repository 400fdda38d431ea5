//! `tlblab sim trace`: replay trace files through the TLB model.

use super::{load_machine, machine_line, read_options};
use crate::cli::TraceArgs;
use crate::render;
use anyhow::{Context, Result};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use serde::Serialize;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tlblab_memtrace::{EventSource, Format, ReadOptions, BATCH_SIZE};
use tlblab_sim::machine::MachineSpec;
use tlblab_sim::stats::HwReport;
use tlblab_sim::System;

/// Identifies the JSON schema (docs/sim-output.md).
pub const SCHEMA: &str = "tlblab.sim.trace/1";

/// The JSON output of `tlblab sim trace`.
#[derive(Serialize)]
pub struct TraceReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// Version of tlblab that wrote it.
    pub tlblab_version: &'static str,
    /// The machine simulated.
    pub machine: MachineInfo,
    /// Runs that completed, in the order of the files given.
    pub runs: Vec<RunReport>,
    /// Files that could not be simulated.
    pub errors: Vec<RunError>,
}

/// The machine and the run-time choices.
#[derive(Serialize)]
pub struct MachineInfo {
    /// Preset name.
    pub name: String,
    /// Built-in name or preset file.
    pub origin: String,
    /// 4 or 5.
    pub paging_levels: u8,
    /// `lru` or `plru`.
    pub replacement: &'static str,
}

impl MachineInfo {
    pub fn of(spec: &MachineSpec) -> MachineInfo {
        MachineInfo {
            name: spec.name().to_string(),
            origin: spec.origin().to_string(),
            paging_levels: spec.paging_levels(),
            replacement: spec.replacement().name(),
        }
    }
}

/// One file's run.
#[derive(Serialize)]
pub struct RunReport {
    /// The path as given.
    pub input: String,
    /// `lackey`, `champsim` or `compact`.
    pub format: &'static str,
    /// `none`, `gzip` or `xz`.
    pub compression: &'static str,
    /// Trace events replayed (an event is a run of identical accesses, or one instruction).
    pub events: u64,
    /// Accesses simulated as warm-up, not counted (`--warmup`).
    pub warmup_accesses: u64,
    /// False if the trace ended before the warm-up did: then nothing was measured.
    pub warmup_complete: bool,
    /// Counters summed over every CPU.
    pub total: HwReport,
    /// Counters of each CPU, by CPU number.
    pub per_cpu: Vec<CpuReport>,
}

/// One CPU's counters.
#[derive(Serialize)]
pub struct CpuReport {
    /// CPU number.
    pub cpu: u16,
    /// Its counters.
    pub stats: HwReport,
}

/// A file that failed.
#[derive(Serialize)]
pub struct RunError {
    /// The path as given.
    pub input: String,
    /// What went wrong, with the position in the file.
    pub message: String,
}

/// Worker threads for `files` files: `--jobs` (default: the CPUs), never more than the files,
/// since each thread simulates whole files (`--jobs 16000` on one file started 16,000 threads).
fn threads(jobs: Option<u16>, files: usize) -> usize {
    jobs.map_or_else(rayon::current_num_threads, usize::from).min(files).max(1)
}

pub fn run(args: &TraceArgs) -> Result<ExitCode> {
    let spec = load_machine(&args.machine)?;
    args.output.check()?;
    let (format, options) = read_options(&args.input, args.input_format());
    let jobs = threads(args.jobs, args.files.len());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .context("starting worker threads")?;
    // Progress on standard error, only for a person watching: output never depends on it.
    let progress = MultiProgress::with_draw_target(if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let results: Vec<Result<RunReport>> = pool.install(|| {
        let run = |f: &PathBuf| simulate(f, format, &options, &spec, args.warmup, &progress);
        args.files.par_iter().map(run).collect()
    });
    let mut report = TraceReport {
        schema: SCHEMA,
        tlblab_version: env!("CARGO_PKG_VERSION"),
        machine: MachineInfo::of(&spec),
        runs: Vec::new(),
        errors: Vec::new(),
    };
    let mut first_error = None;
    for (file, result) in args.files.iter().zip(results) {
        match result {
            Ok(run) => report.runs.push(run),
            Err(e) => {
                report.errors.push(RunError {
                    input: file.display().to_string(),
                    message: format!("{e:#}"),
                });
                first_error.get_or_insert(e);
            }
        }
    }
    if args.json() {
        args.output.emit_data(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else if !report.runs.is_empty() {
        // With no run to show, the error alone is the output.
        args.output.emit(&render_text(&report, &spec, args.per_cpu))?;
    }
    match first_error {
        None => Ok(ExitCode::SUCCESS),
        Some(e) if report.runs.is_empty() && report.errors.len() == 1 && !args.json() => Err(e),
        Some(e) => {
            for err in &report.errors {
                eprintln!("tlblab: error: {}", err.message);
            }
            Ok(ExitCode::from(super::exit_status(&e)))
        }
    }
}

/// Replays one file on a fresh machine.
fn simulate(
    path: &Path,
    format: Option<Format>,
    options: &ReadOptions,
    spec: &MachineSpec,
    warmup: u64,
    progress: &MultiProgress,
) -> Result<RunReport> {
    let mut trace = tlblab_memtrace::open(path, format, options)?;
    let mut system = System::new(spec);
    system.set_warmup(warmup);
    let bar = progress.add(ProgressBar::new(trace.total_bytes().unwrap_or(0)));
    bar.set_style(
        ProgressStyle::with_template("{prefix} {bar:30} {bytes}/{total_bytes} ({eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(path.display().to_string());
    let mut batch = Vec::with_capacity(BATCH_SIZE);
    loop {
        let more = trace.read_batch(&mut batch)?;
        system.apply_all(&batch).with_context(|| path.display().to_string())?;
        bar.set_position(trace.bytes_read());
        if !more {
            break;
        }
    }
    bar.finish_and_clear();
    let warmup_complete = system.warmup_left() == 0;
    if !warmup_complete {
        eprintln!(
            "tlblab: warning: {}: the trace ended during the warm-up ({} of {} accesses): nothing was measured",
            path.display(),
            warmup - system.warmup_left(),
            warmup
        );
    }
    Ok(RunReport {
        input: path.display().to_string(),
        warmup_accesses: warmup,
        warmup_complete,
        format: trace.format().name(),
        compression: trace.compression().name(),
        events: system.events(),
        total: system.total().report(spec),
        per_cpu: system
            .per_cpu()
            .into_iter()
            .map(|(cpu, s)| CpuReport { cpu: cpu.0, stats: s.report(spec) })
            .collect(),
    })
}

fn render_text(report: &TraceReport, spec: &MachineSpec, per_cpu: bool) -> String {
    let mut out = format!(
        "tlblab sim trace: {}\nCounts are exact: one deterministic run of the model per file.\n",
        machine_line(spec)
    );
    if let Some(run) = report.runs.first().filter(|r| r.warmup_accesses > 0) {
        out += &format!(
            "The first {} accesses of each file are warm-up: simulated, not counted.\n",
            render::group(run.warmup_accesses)
        );
    }
    for run in &report.runs {
        out += &format!(
            "\n== {} ({}{}, {} events, {} CPU{}) ==\n",
            run.input,
            run.format,
            if run.compression == "none" {
                String::new()
            } else {
                format!(", {}", run.compression)
            },
            render::group(run.events),
            run.per_cpu.len(),
            if run.per_cpu.len() == 1 { "" } else { "s" }
        );
        out += &render::hw_report(&run.total, 2);
        if per_cpu {
            for cpu in &run.per_cpu {
                out += &format!("\n  -- cpu {} --\n", cpu.cpu);
                out += &render::hw_report(&cpu.stats, 4);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn jobs_never_start_more_threads_than_there_are_files() {
        assert_eq!(super::threads(Some(16_000), 1), 1);
        assert_eq!(super::threads(Some(2), 5), 2);
        assert_eq!(super::threads(None, 1), 1);
    }
}
