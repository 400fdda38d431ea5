//! One module per subcommand, and what they share: loading the machine, exit statuses.

mod bench;
mod catalogue;
mod check;
mod compare;
mod convert;
mod demo;
mod docs;
mod lab;
mod machines;
mod replay;
mod report;
mod run;
mod study;
mod sweep;
mod trace;
mod tracer;

use crate::cli::{
    Cli, Command, FormatArg, InputArgs, MachineArgs, ReplacementArg, SimCommand, TraceCommand,
};
use anyhow::{Context, Result};
use std::process::ExitCode;
use tlblab_kernel::Mechanisms;
use tlblab_memtrace::{Format, ReadOptions, TraceError};
use tlblab_sim::hw::Replacement;
use tlblab_sim::machine::{MachineError, MachineSpec};
use tlblab_sim::SimError;
use tlblab_types::{CpuId, Pcid};

/// Runs a parsed command line; returns the exit status to use.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Sim(SimCommand::Demo(args)) => demo::run(&args),
        Command::Sim(SimCommand::Trace(args)) => trace::run(&args),
        Command::Sim(SimCommand::Convert(args)) => convert::run(&args),
        Command::Sim(SimCommand::Machines(args)) => machines::run(&args),
        Command::Sim(SimCommand::Run(args)) => run::run(&args),
        Command::Sim(SimCommand::Check(args)) => check::run(&args),
        Command::Sim(SimCommand::Mechanisms) => run::list_mechanisms(),
        Command::Sim(SimCommand::Scenarios) => catalogue::scenarios(),
        Command::Sim(SimCommand::Policies(args)) => catalogue::policies(&args),
        Command::Sim(SimCommand::Study(args)) => study::run(&args),
        Command::Sim(SimCommand::Replay(args)) => replay::run(&args),
        Command::Compare(args) => compare::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::BenchWorker => bench::serve_worker(),
        Command::Study(args) => lab::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Trace(TraceCommand::Record(args)) => tracer::record(&args),
        Command::Trace(TraceCommand::Report(args)) => tracer::report(&args),
        Command::Trace(TraceCommand::Dump(args)) => tracer::dump(&args),
        Command::Trace(TraceCommand::Import(args)) => tracer::import(&args),
        Command::Trace(TraceCommand::Cleanup) => tracer::cleanup(),
        Command::TraceExec { command } => tracer::exec(&command),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man { dir } => docs::man_pages(&dir),
    }
}

impl crate::cli::WithoutArg {
    /// Every mechanism but those `--without` names, or the error naming the known ones (exit
    /// status 2).
    pub fn mechanisms(&self) -> Result<Mechanisms, tlblab_runs::RunsError> {
        tlblab_runs::mechanisms_without(&self.without)
    }
}

/// Refuses to replace an existing output file unless `--force` was given, and a directory in
/// any case. A device or a pipe (`-o /dev/stdout`) is written, not replaced: no `--force`.
/// Every command that writes a file asks this first, then writes it with
/// [`tlblab_types::atomic`].
pub fn refuse_existing(path: &std::path::Path, force: bool) -> Result<(), BadInput> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(BadInput(format!("{} is a directory", path.display()))),
        Ok(m) if m.is_file() && !force => {
            Err(BadInput(format!("{} exists (use --force to replace it)", path.display())))
        }
        _ => Ok(()),
    }
}

/// Exit status for an error (the README's "Exit status" table): 2 for bad input (an option, an
/// input file that cannot be read or is invalid, a simulated fault), 1 for any other failure
/// (writing an output file or standard output, a run that failed); 128 + the signal for
/// [`Interrupted`] and [`Stopped`] (130 for SIGINT, 143 for SIGTERM).
pub fn exit_status(error: &anyhow::Error) -> u8 {
    if let Some(Interrupted(signal)) = error.chain().find_map(|c| c.downcast_ref()) {
        return (128 + signal).clamp(0, 255) as u8;
    }
    if let Some(Stopped { signal, .. }) = error.chain().find_map(|c| c.downcast_ref()) {
        return (128 + signal).clamp(0, 255) as u8;
    }
    let bad_input = error.chain().any(|cause| {
        cause.is::<TraceError>()
            || cause.is::<MachineError>()
            || cause.is::<SimError>()
            || cause.is::<BadInput>()
            || cause.is::<tlblab_flushtrace::ImportError>()
            || cause.is::<tlblab_flushtrace::SourceError>()
            || cause.is::<tlblab_replay::ReplayError>()
            || cause.is::<tlblab_report::ReportError>()
            || cause.downcast_ref::<tlblab_flushtrace::FileError>().is_some_and(|e| {
                !matches!(e, tlblab_flushtrace::FileError::Io { action, .. }
                    if *action == "create" || *action == "write")
            })
            || cause.is::<tlblab_kernel::policy::PolicyError>()
            || cause.is::<tlblab_kernel::workloads::ScenarioError>()
            || cause.is::<tlblab_kernel::mechanisms::MechanismError>()
            || cause.is::<tlblab_kernel::KernelError>()
            || cause.is::<tlblab_studies::StudyError>()
            || cause.downcast_ref::<tlblab_runs::RunsError>().is_some_and(|e| e.is_bad_input())
            || cause.downcast_ref::<tlblab_sweep::SweepError>().is_some_and(|e| {
                matches!(
                    e,
                    tlblab_sweep::SweepError::Spec { .. }
                        | tlblab_sweep::SweepError::Output { .. }
                        | tlblab_sweep::SweepError::Corrupt { .. }
                )
            })
            || cause.downcast_ref::<tlblab_live::LiveError>().is_some_and(|e| {
                matches!(
                    e,
                    tlblab_live::LiveError::UnknownScenario { .. }
                        | tlblab_live::LiveError::BadParameter { .. }
                        | tlblab_live::LiveError::TooFewCpus { .. }
                        | tlblab_live::LiveError::CpuNotOnline { .. }
                )
            })
            || cause.downcast_ref::<tlblab_bench::BenchError>().is_some_and(|e| match e {
                tlblab_bench::BenchError::Io { action, .. } => *action == "reading",
                tlblab_bench::BenchError::Run { .. } => false,
                _ => true,
            })
    });
    if bad_input {
        2
    } else {
        1
    }
}

/// SIGINT and SIGTERM for a command that writes a file record by record (`sim convert`,
/// `trace import`): the signal is noted, the loop asks [`Stop::check`] and ends with
/// [`Interrupted`], and the output's temporary file goes with the writer. A second signal ends
/// the process at once.
pub struct Stop(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Stop {
    /// Installs the handlers.
    pub fn install() -> Result<Stop> {
        let caught = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let installed = signal_hook::flag::register_conditional_shutdown(
                signal,
                128 + signal,
                flag.clone(),
            )
            .and_then(|_| signal_hook::flag::register(signal, flag.clone()))
            .and_then(|_| {
                signal_hook::flag::register_usize(signal, caught.clone(), signal as usize)
            });
            installed.context("installing the signal handler")?;
        }
        Ok(Stop(caught))
    }

    /// [`Interrupted`] once a signal came.
    pub fn check(&self) -> Result<(), Interrupted> {
        match self.0.load(std::sync::atomic::Ordering::SeqCst) {
            0 => Ok(()),
            signal => Err(Interrupted(signal as i32)),
        }
    }
}

/// The command was stopped by this signal; its exit status is 128 + the signal's number.
#[derive(Debug, thiserror::Error)]
#[error("stopped by {}; nothing was written", signal_name(*.0))]
pub struct Interrupted(pub i32);

/// A command that keeps what it finished (`sweep`) was stopped by this signal; its exit status
/// is 128 + the signal's number.
#[derive(Debug, thiserror::Error)]
#[error("stopped by {}: {kept}", signal_name(*.signal))]
pub struct Stopped {
    /// The signal.
    pub signal: i32,
    /// What is kept.
    pub kept: String,
}

/// `SIGINT` for 2.
fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_string())
}

/// `--noise PCT` as a fraction, or a usage error.
pub fn noise_fraction(pct: f64) -> Result<f64, BadInput> {
    if pct.is_finite() && (0.0..100.0).contains(&pct) {
        Ok(pct / 100.0)
    } else {
        Err(BadInput(format!("--noise {pct}: give a percentage from 0 to 100")))
    }
}

impl crate::cli::OutputFile {
    /// Refuses an existing --output file without --force: called before the work starts, so a
    /// long run is not lost at its end.
    pub fn check(&self) -> Result<(), BadInput> {
        match &self.output {
            Some(path) => refuse_existing(path, self.force),
            None => Ok(()),
        }
    }

    /// Writes `text` for a reader to the --output file (whole or not at all) or to standard
    /// output, its control characters escaped in both ([`crate::render::stdout`]).
    pub fn emit(&self, text: &str) -> Result<()> {
        match &self.output {
            Some(path) => write_whole(path, tlblab_types::escape::escape_lines(text).as_bytes()),
            None => crate::render::stdout(text),
        }
    }

    /// [`OutputFile::emit`] for a data format (JSON, CSV), written as it is.
    pub fn emit_data(&self, text: &str) -> Result<()> {
        match &self.output {
            Some(path) => write_whole(path, text.as_bytes()),
            None => crate::render::stdout_data(text),
        }
    }
}

/// Writes `bytes` to `path` whole or not at all ([`tlblab_types::atomic`]).
pub fn write_whole(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    tlblab_types::atomic::write_file(path, bytes)
        .with_context(|| format!("writing {}", path.display()))
}

/// Streams output into `path` whole or not at all ([`tlblab_types::atomic::AtomicFile`]):
/// kept when `write` succeeds, removed when it fails, for output too large to hold.
pub fn write_streamed(
    path: &std::path::Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> Result<()>,
) -> Result<()> {
    let mut file = tlblab_types::atomic::AtomicFile::create(path)
        .with_context(|| format!("creating {}", path.display()))?;
    write(&mut file)?;
    file.commit().with_context(|| format!("writing {}", path.display()))
}

/// A usage error found after parsing (e.g. an existing output file).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// The machine the arguments ask for.
pub fn load_machine(args: &MachineArgs) -> Result<MachineSpec> {
    let mut spec = load_preset(&args.machine)?;
    if let Some(r) = args.replacement {
        spec = spec.with_replacement(match r {
            ReplacementArg::Lru => Replacement::Lru,
            ReplacementArg::Plru => Replacement::Plru,
        });
    }
    Ok(spec.with_paging_levels(args.paging_levels)?)
}

/// The preset `name`: built in, `host` (built from this machine's CPUID and sysfs; see
/// docs/host-preset.md), or a preset file ([`tlblab_runs::load_machine`]).
pub fn load_preset(name: &str) -> Result<MachineSpec> {
    Ok(tlblab_runs::load_machine(name)?)
}

/// The name that selects the preset of this machine.
pub const HOST_PRESET: &str = tlblab_runs::HOST_PRESET;

/// One line describing the machine and the run-time choices.
pub fn machine_line(spec: &MachineSpec) -> String {
    format!(
        "machine {} ({}), {}-level paging, {} replacement",
        spec.name(),
        spec.raw().description,
        spec.paging_levels(),
        spec.replacement().name()
    )
}

/// Reader options from the command line; `format` is the trace format given, if any.
pub fn read_options(args: &InputArgs, format: Option<FormatArg>) -> (Option<Format>, ReadOptions) {
    let format = format.map(|f| match f {
        FormatArg::Lackey => Format::Lackey,
        FormatArg::Champsim => Format::ChampSim,
        FormatArg::Compact => Format::Compact,
    });
    let options = ReadOptions {
        cpu: CpuId(args.cpu),
        pcid: Pcid::new(args.pcid).expect("clap limits --pcid to 0..=4095"),
        page_size: args.page_size,
        coalesce: true,
    };
    (format, options)
}
