//! `tlblab bench`: the scenarios on the live kernel, with the harness of `tlblab-bench`.

mod configs;
mod counters;
mod executor;
mod worker;

pub use worker::serve as serve_worker;

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tlblab_bench::render::{self, Format};
use tlblab_bench::{
    compare_results, compare_within, BaselineStore, BenchConfig, BenchResults, CompareSettings,
    ExecError, Method, Progress, RunRecord, Session,
};
use tlblab_live::{online_cpus, Placement};
use tlblab_tracefs::{
    cleanup_stale, EventName, Instance, InstanceOptions, TlbFlushDecoder, Tracefs,
};

use crate::cli::BenchArgs;
use crate::commands::{noise_fraction, refuse_existing, BadInput};
use executor::LiveExecutor;

/// Exit status of a session stopped by Ctrl-C (128 + SIGINT, as shells report it), also when
/// the stop came from a worker rather than a signal seen here.
const INTERRUPTED: u8 = 130;

/// Runs `tlblab bench`.
pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    let online = online_cpus().context("reading the online CPUs")?;
    if args.list {
        crate::render::stdout(&configs::list(online.len()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let noise_threshold = noise_fraction(args.noise)?;
    if args.runs == 0 || args.run_ms == 0 {
        return Err(BadInput("--runs and --run-ms must be at least 1".into()).into());
    }
    let configs = configs::configurations(args)?;
    let placement = match &args.cpus {
        None => Placement::default(),
        // In the order given (the first CPU is the measuring task's), so piece by piece.
        Some(list) => Placement::on(
            list.split(',')
                .map(tlblab_types::parse_cpu_list)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| BadInput(format!("--cpus {list}: {e}")))?
                .into_iter()
                .flatten()
                .map(|c| c as usize)
                .collect(),
        ),
    };
    let store =
        args.baseline_dir.as_ref().map_or_else(BaselineStore::default_location, BaselineStore::new);
    let baseline_path = args.save_baseline.as_deref().map(|n| store.path(n)).transpose()?;
    for path in args.output.iter().chain(&baseline_path) {
        refuse_existing(path, args.force)?;
    }
    // Load the baseline before measuring, so that a wrong name fails at once.
    let baseline = match &args.baseline {
        Some(name) => Some(store.load(name).with_context(|| format!("loading baseline {name}"))?),
        None => None,
    };
    let notes = !args.quiet && !args.format.json();
    let note = |text: &str| {
        if notes {
            eprintln!("tlblab: {text}");
        }
    };

    // Ctrl-C (or SIGTERM) sets the flag: the session stops after the current run (which a
    // Ctrl-C from the terminal also ends in the workers, within a few operations), and the
    // drops below tear everything down. A second one exits at once, after removing the trace
    // instance (the workers end when their stdin closes).
    // The exit status names the signal: 130 for SIGINT, 143 for SIGTERM (128 + its number).
    let flag = Arc::new(AtomicBool::new(false));
    let caught = Arc::new(AtomicUsize::new(0));
    watch_signals(flag.clone(), caught.clone())?;

    // Untraced unless asked: recording tlb:tlb_flush costs time on every flush (about 11% of
    // tlb-flush2's here), and a run should be the kernel's own time, as the peers' are.
    let trace = match args.trace && !args.no_trace {
        true => flush_trace(args.trace_buffer_kb, &note),
        false => None,
    };
    let method = Method {
        runs: args.runs,
        warmup_ms: args.warmup_ms,
        run_ms: args.run_ms,
        interleaved: !args.no_interleave,
        seed: args.seed,
        cpus: args.cpus.clone(),
        flush_trace: trace.is_some(),
    };
    let output = args.output.clone().or(baseline_path.clone());
    let mut session = Session::new(configs.clone(), method, output);
    if let Some(instance) = &trace {
        session.results_mut().flush_reasons = flush_reasons(instance);
    }
    let mut executor = LiveExecutor::new(placement, trace);
    let mut result = Ok(());
    if !args.no_overhead {
        note("measuring the harness overhead (about 3 s)");
        match executor.harness_overhead(&configs) {
            Ok(Some(o)) => session.results_mut().harness_overhead = Some(o),
            Ok(None) => note(
                "harness overhead not measured: no configuration has a single measured loop \
                 (madvise-busy, storm, madv-migrate and pingpong have)",
            ),
            Err(ExecError::Interrupted) => session.results_mut().interrupted = true,
            Err(e) => note(&format!("harness overhead not measured: {e}")),
        }
    }
    if !session.results().interrupted {
        let mut progress = Reporter::new(args);
        result = session.run(&mut executor, &flag, &mut progress).map(|_| ());
        progress.finish();
    }
    // End the workers (and their tasks) and remove the trace instance before reporting.
    drop(executor);
    session.save()?;
    let results = session.results();
    if let (Some(name), Some(path)) = (&args.save_baseline, &baseline_path) {
        if args.output.is_some() {
            store.save(name, results)?;
        }
        note(&format!("saved as baseline {name} ({})", path.display()));
    }
    if let Some(path) = &args.output {
        note(&format!("results written to {}", path.display()));
    }
    if args.format.json() {
        crate::render::stdout_data(&(serde_json::to_string_pretty(results)? + "\n"))?;
    } else {
        crate::render::stdout(&report(results, noise_threshold)?)?;
    }
    result?;
    let few = super::compare::too_few_runs(&[results]);
    if !few.is_empty() && results.configs.len() > 1 {
        note(&format!(
            "not compared, fewer than {} runs: {}",
            tlblab_bench::MIN_RUNS,
            few.join(", ")
        ));
    }
    let measured = results.configs.iter().any(|c| !c.runs.is_empty());
    if !measured && !results.interrupted {
        let reasons: Vec<String> = results
            .configs
            .iter()
            .filter_map(|c| Some(format!("{}: {}", c.config.key(), c.skipped.as_ref()?)))
            .collect();
        return Err(BadInput(format!("nothing was measured ({})", reasons.join("; "))).into());
    }
    if let (Some(base), Some(name)) = (&baseline, &args.baseline) {
        let settings = compare_settings(results, noise_threshold);
        let cmp = compare_results((name, base), ("this session", results), &settings)?;
        if !args.format.json() {
            crate::render::stdout(&format!(
                "\nagainst baseline {name}:\n{}",
                render::comparison(&cmp, Format::Table)
            ))?;
        }
    }
    if results.interrupted || flag.load(Ordering::SeqCst) {
        note("interrupted: the results hold the runs finished before the stop");
        let status = match caught.load(Ordering::SeqCst) {
            0 => INTERRUPTED,
            signal => (128 + signal).min(255) as u8,
        };
        return Ok(ExitCode::from(status));
    }
    Ok(ExitCode::SUCCESS)
}

/// SIGINT and SIGTERM, handled on a thread of their own rather than in a signal handler, so
/// that the exit on the second one can remove the trace instance first (removing it is not
/// async-signal-safe): the first sets `flag` and `caught`; the second removes every instance of
/// this process and exits with 128 + its number. Later signals find the process exiting and do
/// nothing, so however many arrive, the instance goes (a SIGKILL leaves it to the next
/// session's `cleanup_stale`).
fn watch_signals(flag: Arc<AtomicBool>, caught: Arc<AtomicUsize>) -> Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("installing the signal handler")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for (n, signal) in signals.forever().enumerate() {
                if n > 0 {
                    let _ = tlblab_tracefs::remove_registered_instances();
                    std::process::exit((128 + signal).min(255));
                }
                caught.store(signal as usize, Ordering::SeqCst);
                flag.store(true, Ordering::SeqCst);
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

/// A private tracefs instance recording `tlb:tlb_flush` of this process and every task it
/// starts, tracing off until a run turns it on; `None`, with a note saying why, when tracefs
/// cannot be used (not mounted, not root).
fn flush_trace(buffer_size_kb: u32, note: &dyn Fn(&str)) -> Option<Instance> {
    let unavailable = |e: &(dyn std::error::Error + 'static)| {
        note(&format!("tlb_flush counts unavailable: {}", tlblab_types::plain::error_chain(e)));
        None
    };
    let tracefs = match Tracefs::find() {
        Ok(t) => t,
        Err(e) => return unavailable(&e),
    };
    // Instances left by a tlblab process that was killed.
    let _ = cleanup_stale(&tracefs);
    let options = InstanceOptions {
        buffer_size_kb,
        // This thread's id is the process id; event-fork adds every thread and process it
        // starts from now on, so other programs' flushes are not counted.
        pids: vec![std::process::id()],
        follow_forks: true,
        ..InstanceOptions::default()
    };
    match Instance::create(&tracefs, "bench", &options) {
        Ok(instance) => match instance.set_tracing_on(false) {
            Ok(()) => Some(instance),
            Err(e) => unavailable(&e),
        },
        Err(e) => unavailable(&e),
    }
}

/// The kernel's labels of the `tlb_flush` reasons, from the tracepoint's format (empty if it
/// cannot be read; the counts still carry the integers).
fn flush_reasons(instance: &Instance) -> BTreeMap<i32, String> {
    instance
        .event_format(&EventName::tlb_flush())
        .ok()
        .and_then(|format| TlbFlushDecoder::new(&format).ok())
        .map(|decoder| decoder.reason_names().clone())
        .unwrap_or_default()
}

/// Comparison settings: the `--noise` threshold, and the session's seed for the bootstrap.
fn compare_settings(results: &BenchResults, noise_threshold: f64) -> CompareSettings {
    CompareSettings { noise_threshold, seed: results.method.seed, ..CompareSettings::default() }
}

/// The session's tables, and each configuration compared with the first of its scenario.
fn report(results: &BenchResults, noise_threshold: f64) -> Result<String> {
    let mut out = render::session_header(results);
    out.push('\n');
    out.push_str(&render::session_table(results));
    for row in compare_within(results, &compare_settings(results, noise_threshold))? {
        out.push('\n');
        out.push_str(&render::comparison_table(
            std::slice::from_ref(&row),
            &row.a,
            &row.b,
            noise_threshold,
        ));
    }
    Ok(out)
}

/// Progress on stderr: a bar on a terminal, a line per run otherwise, nothing with `--quiet`
/// or `--json`.
struct Reporter {
    bar: Option<ProgressBar>,
    lines: bool,
    /// Under `tlblab study`: `tlblab-progress K/N` lines for its bar.
    progress_lines: bool,
    total: usize,
    skipped: BTreeSet<String>,
}

impl Reporter {
    fn new(args: &BenchArgs) -> Reporter {
        let quiet = args.quiet || args.format.json();
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} runs, {elapsed}, ETA {eta} {wide_msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar
        });
        let progress_lines = !quiet && std::env::var_os(crate::progress::LINES_ENV).is_some();
        Reporter {
            bar,
            lines: !quiet && !terminal,
            progress_lines,
            total: 0,
            skipped: BTreeSet::new(),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Reporter {
    fn start(&mut self, total: usize) {
        self.total = total;
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
        }
    }

    fn run_done(&mut self, config: &BenchConfig, record: Option<&RunRecord>, done: usize) {
        let message = match record {
            Some(r) => format!("{}: {:.3} {}", config.key(), r.value, config.unit),
            None if self.skipped.insert(config.key()) => format!("{}: not run here", config.key()),
            None => String::new(),
        };
        match &self.bar {
            Some(bar) => {
                bar.set_position(done as u64);
                if !message.is_empty() {
                    bar.set_message(message);
                }
            }
            None if self.lines && !message.is_empty() => {
                eprintln!("run {done}/{}: {message}", self.total);
            }
            None => {}
        }
        if self.progress_lines {
            eprintln!("{}", crate::progress::line(done as u64, self.total as u64, "runs"));
        }
        if let Some(r) = record {
            for w in &r.warnings {
                let text = format!("warning: {}: {w}", config.key());
                match &self.bar {
                    Some(bar) => bar.println(text),
                    None if self.lines => eprintln!("{text}"),
                    None => {}
                }
            }
        }
    }
}
