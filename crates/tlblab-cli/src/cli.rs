//! The command line, as clap parses it. Validation beyond clap's lives in the subcommands.

use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use tlblab_types::bounds::{self, Bound};

/// tlblab: a laboratory for x86 TLB-flush policies on Linux.
///
/// It simulates x86 TLB hardware and Linux's flush policies deterministically (`sim`), measures
/// the same scenarios on the running kernel (`bench`, `compare`), and records, summarises and
/// replays the kernel's tlb:tlb_flush events (`trace`, `sim replay`).
#[derive(Debug, Parser)]
#[command(
    name = "tlblab",
    version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("TLBLAB_COMMIT"), ")"),
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate x86 TLB hardware: replay memory traces, run built-in workloads, inspect machines.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Compare two saved benchmark results (baseline names or result files), configuration by
    /// configuration.
    ///
    /// Prints, per configuration, an mmtests-style table (Min, Amean or Hmean for rates,
    /// Stddev, CoeffVar, Max; signed % where positive means better; `*` on a significant
    /// mean), a hyperfine-style "X ± Y times faster" line with Welch's and Mann-Whitney's p and
    /// the 95% bootstrap interval of the change, the verdict (improved / regressed / no
    /// significant change: p < 0.05 and the whole interval outside ±--noise), and the
    /// differences between the two environments. Results of different scenarios or parameters
    /// are refused.
    #[command(
        after_help = "Examples:\n  tlblab bench madvise-busy --save-baseline before    # then change the kernel, and:\n  tlblab bench madvise-busy --save-baseline after\n  tlblab compare before after\n  tlblab compare before.json after.json --format markdown -o compare.md"
    )]
    Compare(CompareArgs),
    /// Measure the scenarios on the running kernel: pinned threads and processes, warm-up,
    /// interleaved measured runs, counters per run, statistics and a significance verdict.
    ///
    /// Every option that takes values accepts a comma-separated list, and each combination is
    /// one configuration: `tlblab bench madvise-busy --busy 0,1` measures both, in interleaved
    /// rounds, and compares `--busy 1` with `--busy 0` (Welch's t-test and Mann-Whitney U, the
    /// 95% bootstrap interval of the change, and the verdict: improved / regressed / no
    /// significant change). With no scenario, every scenario runs at its defaults (those this
    /// machine has too few CPUs for are skipped, with the reason). Per run it records
    /// /proc/interrupts TLB and CAL deltas per CPU, page faults and context switches, PMU dTLB
    /// misses where perf_event_open offers them, and with --trace tlb:tlb_flush counts by
    /// reason and CPU (when tracefs is writable: needs root; recording costs time per flush). Ctrl-C stops cleanly and keeps the runs
    /// finished so far. docs/bench-output.md describes the result file.
    #[command(
        after_help = "Examples:\n  tlblab bench --list\n  sudo env PATH=$PATH tlblab bench madvise-busy --busy 0,1 --runs 20\n  tlblab bench pingpong --touch 0,512 -o pingpong.json --save-baseline before\n  tlblab bench storm --op munmap,mprotect --format json > storm.json"
    )]
    Bench(BenchArgs),
    /// Internal: one configuration's process of `tlblab bench` (JSON requests on stdin).
    #[command(hide = true)]
    BenchWorker,
    /// The main job: the studies S1–S10 in simulation (S6–S10 at their quick settings), the
    /// safety checker on their policies and the known-bad variants, and, on Linux as root, the
    /// microbenchmark scenarios measured on this machine with one of them traced and replayed;
    /// writes DIR/results.json (everything, raw samples included) and prints the key figures.
    ///
    /// A part that cannot run here (not Linux, not root, no tracefs) is skipped with the reason
    /// and the rest still runs. `--quick` shortens every part (a couple of minutes on a 2-core
    /// machine).
    #[command(
        after_help = "Examples:\n  tlblab study --quick\n  sudo env PATH=$PATH tlblab study -o results --force\n  tlblab study --no-live --only s2,s4 --seeds 5\n  tlblab study --skip checks,peers\n  tlblab study --machine skylake -o skylake-study"
    )]
    Study(LabArgs),
    /// Run a sweep: a TOML spec of axes (machine, CPUs, scenario and its parameters, policy,
    /// ceiling, seed, the checker's schedules), every point a job with a content hash, on this
    /// machine's threads or on a Ray cluster (docs/sweep.md).
    ///
    /// Rows go to DIR/journal.jsonl as jobs finish; at the end DIR holds results.jsonl and
    /// results.parquet (one row per job, plan order), summary.json and summary.txt (mean ± 95%
    /// CI over seeds, ratio to the baseline and its verdict), beside the spec and the
    /// environment. Ctrl-C keeps the finished jobs; `--resume` runs the rest. A bad spec is
    /// refused, with its line and key, before any job runs.
    #[command(
        after_help = "Examples:\n  tlblab sweep examples/sweeps/ceiling.toml -o ceiling\n  tlblab sweep examples/sweeps/ceiling.toml -o ceiling --resume\n  tlblab sweep spec.toml --engine ray --address 10.0.0.1:6379 -o big\n  tlblab sweep --print-study s5 --quick > s5.toml && tlblab sweep s5.toml --plan"
    )]
    Sweep(SweepArgs),
    /// Render saved results (tlblab study's results.json, sim study JSON, bench result files,
    /// trace reports, replays) as one self-contained HTML page with plots, or as Markdown or
    /// plain text for mail; the summary first. Written to a file beside the first input.
    ///
    /// Examples: `tlblab report tlblab-study/results.json` (→ tlblab-study/results.html);
    /// `tlblab report results.json --format text -o -`.
    Report(ReportArgs),
    /// Record the kernel's tlb:tlb_flush events (and, on request, context switches and IPIs),
    /// summarise a trace, import ftrace or perf text, remove left-over tracing instances.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Print a shell completion script to standard output.
    ///
    /// Examples: `tlblab completions bash > /etc/bash_completion.d/tlblab`;
    /// `tlblab completions zsh > "${fpath[1]}/_tlblab"`; `tlblab completions fish >
    /// ~/.config/fish/completions/tlblab.fish`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write man pages (roff), one per command and subcommand (tlblab.1, tlblab-sim-run.1, …),
    /// into DIR.
    ///
    /// Example: `tlblab man /usr/local/share/man/man1 && man tlblab-sim-run`.
    Man {
        /// The directory (created if missing). Existing pages of the same names are replaced.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Internal: stops itself, then (once `tlblab trace record` has set up tracing and lets it
    /// continue) executes the command.
    #[command(hide = true)]
    TraceExec {
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
}

/// `tlblab sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The sweep spec (TOML; docs/sweep.md).
    #[arg(value_name = "SPEC.toml", required_unless_present = "print_study")]
    pub spec: Option<PathBuf>,
    /// Where the jobs run: this machine's threads, or a Ray cluster through the Python package
    /// `tlblab` (`pip install` the wheel; docs/python.md).
    #[arg(long, value_enum, default_value_t = EngineArg::Local)]
    pub engine: EngineArg,
    /// `--engine ray`: the cluster's address (`ray start --head` prints it); default: a Ray
    /// started for this sweep on this machine.
    #[arg(long, value_name = "HOST:PORT")]
    pub address: Option<String>,
    /// The results directory. Default: sweep-<spec name> in the current directory.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Continue the sweep whose results are in DIR: jobs already recorded are not run again.
    #[arg(long, conflicts_with = "force")]
    pub resume: bool,
    /// Start over in a DIR that holds a sweep's results.
    #[arg(long)]
    pub force: bool,
    /// Print the plan (one line per job with its hash) and stop.
    #[arg(long)]
    pub plan: bool,
    /// Print a built-in study (s1 … s5) as a sweep spec and stop.
    #[arg(long, value_name = "STUDY", conflicts_with = "spec")]
    pub print_study: Option<String>,
    /// With --print-study: the study's quick settings.
    #[arg(long)]
    pub quick: bool,
    /// The summary printed at the end: text (summary.txt's content) or json (summary.json's).
    #[command(flatten)]
    pub format: TextOrJson,
}

/// `tlblab sweep --engine`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// This machine's threads (rayon).
    Local,
    /// A Ray cluster, through the Python package `tlblab`.
    Ray,
}

/// `tlblab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (JSON written by tlblab) or sweep directories (`tlblab sweep -o DIR`),
    /// rendered in this order.
    #[arg(value_name = "RESULTS.json|DIR", required = true)]
    pub inputs: Vec<PathBuf>,
    /// The output file; `-` for standard output. Default: beside the first input, with the
    /// format's extension (results.json → results.html, results.md or results.txt; a sweep's
    /// DIR → DIR/report.html).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// html: one self-contained page (inline CSS and SVG); markdown and text: for mail, the
    /// summary first, lines at most --width columns.
    #[arg(long, value_enum, default_value_t = ReportFormat::Html)]
    pub format: ReportFormat,
    /// The longest line of the markdown and text forms, in columns.
    #[arg(long, value_name = "N", default_value_t = 80,
          value_parser = clap::value_parser!(u16).range(20..))]
    pub width: u16,
    /// The page's title.
    #[arg(long, default_value = "tlblab report")]
    pub title: String,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
}

/// `--format` of `tlblab report`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ReportFormat {
    /// One self-contained HTML page.
    Html,
    /// Markdown: aligned pipe tables where they fit, else wrapped or `column: value` lines.
    Markdown,
    /// Plain text.
    Text,
}

impl ReportFormat {
    /// The extension of the default output file.
    pub fn extension(self) -> &'static str {
        match self {
            ReportFormat::Html => "html",
            ReportFormat::Markdown => "md",
            ReportFormat::Text => "txt",
        }
    }
}

/// A part of `tlblab study` that `--skip` can leave out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StudyPart {
    /// The safety checks of every policy on every checked scenario.
    Checks,
    /// The live part: benchmarks, trace, replay, the simulations on this machine's preset.
    Live,
    /// The peer programs (rt-tests' hackbench) beside their simulated twins.
    Peers,
}

impl StudyPart {
    /// How the reason of a skipped step names it: `--skip NAME`, NAME as clap parses it.
    pub fn flag(self) -> String {
        let value = self.to_possible_value().expect("every part has a name");
        format!("--skip {}", value.get_name())
    }
}

/// `tlblab study`.
#[derive(Debug, Args)]
pub struct LabArgs {
    /// Shorter settings everywhere (quick studies, 3 runs of 100 ms per configuration).
    #[arg(long)]
    pub quick: bool,
    /// Where the results go. Without it: tlblab-study/ in the current directory, replacing the
    /// results of an earlier run there; a DIR given here that already holds results needs
    /// --force.
    #[arg(short = 'o', long = "output", alias = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The machine preset the measured configurations are simulated on, for the
    /// measured-against-simulated check: `host` (this machine, from CPUID and sysfs), a
    /// built-in preset name or a preset .toml file.
    #[arg(long, short = 'm', default_value = "host", value_name = "NAME|PATH")]
    pub machine: String,
    /// Only the simulated studies, even where the live part could run (as `--skip live`).
    #[arg(long)]
    pub no_live: bool,
    /// Leave these parts out (comma-separated): `checks` (the safety checks), `live` (everything
    /// measured on this machine, as --no-live), `peers` (the peer programs beside their
    /// simulated twins). Each is reported as skipped, with this option as the reason.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PART,...")]
    pub skip: Vec<StudyPart>,
    /// Only these simulated studies (comma-separated: `s2,s4`; default all). The safety checks
    /// and the live part are the same either way.
    #[arg(long, value_name = "STUDY,...")]
    pub only: Option<String>,
    /// Seeds per policy of the simulated studies (default: each study's own; quick: 2).
    #[arg(long, value_parser = bounded::<u64>(bounds::SEEDS))]
    pub seeds: Option<u64>,
    /// Noise band in percent: a difference is called a change only when it is significant and
    /// its whole 95% interval lies outside ±PCT.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub noise: f64,
    /// Replace the results of an earlier run in DIR.
    #[arg(long)]
    pub force: bool,
    /// No progress on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `tlblab trace …`
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Record tlb:tlb_flush into a trace file, system-wide or for one command.
    ///
    /// Uses its own tracefs instance (never the top-level buffer or anyone else's instance),
    /// reads the per-CPU binary buffers, decodes them by this kernel's format files, merges the
    /// CPUs by timestamp and writes the trace as it goes. Without --duration or a command it
    /// records until Ctrl-C. Lost events are counted and reported. Needs root (tracefs).
    /// Exit status: the command's (its exit code, or 128 + the signal that ended it), 130/143
    /// when interrupted, 1 on error.
    #[command(
        after_help = "Examples:\n  sudo tlblab trace record --duration 10\n  sudo tlblab trace record --events tlb,sched,ipi -o build.flushtrace -- make -j8\n  sudo tlblab trace record --only-cmd -o app.flushtrace -- ./app"
    )]
    Record(TraceRecordArgs),
    /// Summarise a trace (recorded, or ftrace/perf text): counts by reason and CPU, received
    /// shootdowns against IPI sends and the kernel's TLB interrupt count, the pages-per-flush
    /// histogram, the flush rate over time, the top processes.
    #[command(
        after_help = "Examples:\n  tlblab trace report tlblab.flushtrace\n  tlblab trace report saved-trace.txt --input-format ftrace --format csv -o report.csv\n  tlblab trace report perf-script.txt --format json"
    )]
    Report(TraceReportArgs),
    /// Print a trace's records as ftrace `trace` text (or JSON lines), like `perf script`.
    #[command(
        after_help = "Examples:\n  tlblab trace dump tlblab.flushtrace | less\n  tlblab trace dump tlblab.flushtrace --format json | head"
    )]
    Dump(TraceDumpArgs),
    /// Convert ftrace text (`trace`, `trace_pipe`; any kernel) or `perf script` output of
    /// tlb:tlb_flush (with sched_switch and IPI events if present) into a trace file.
    ///
    /// Reasons are read from the integer in parentheses, whatever the label says; `pages:-1` is
    /// a full flush. Lines of other events are counted and skipped. The first line that cannot
    /// be read stops the import with its file and line number (`--skip-bad-lines` goes on).
    #[command(
        after_help = "Examples:\n  tlblab trace import saved-trace.txt -o saved.flushtrace\n  perf script > perf.txt && tlblab trace import perf.txt --input-format perf -o perf.flushtrace"
    )]
    Import(TraceImportArgs),
    /// Remove tracing instances left by tlblab processes that no longer exist.
    #[command(after_help = "Example:\n  sudo tlblab trace cleanup")]
    Cleanup,
}

/// `tlblab trace report`.
#[derive(Debug, Args)]
pub struct TraceReportArgs {
    /// The trace: a tlblab trace file, or ftrace / perf script text.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Output format: text, json, csv or markdown (csv: one long table
    /// `table,key,column,value`; json: schema tlblab.trace.report/1).
    #[command(flatten)]
    pub format: AnyFormat,
    /// Width of the rate-over-time buckets, ms (default: 1, 2 or 5 × 10^k giving at most 60).
    #[arg(long, value_name = "MS")]
    pub interval_ms: Option<f64>,
    /// Processes listed.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Read a truncated trace file up to its last complete record.
    #[arg(long)]
    pub allow_truncated: bool,
    /// The format of a text trace: ftrace or perf (default: detected).
    #[arg(long = "input-format", alias = "text-format", value_enum, value_name = "FORMAT")]
    pub text_format: Option<TextFormatArg>,
    /// Write the report to FILE instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
}

/// `tlblab trace import`.
#[derive(Debug, Args)]
pub struct TraceImportArgs {
    /// The text trace.
    #[arg(value_name = "TEXT")]
    pub input: PathBuf,
    /// The trace file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// The text's format: ftrace or perf (default: detected from the first event line).
    #[arg(long = "input-format", alias = "format", value_enum, value_name = "FORMAT")]
    pub format: Option<TextFormatArg>,
    /// Report lines that cannot be read and go on, instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
}

/// Text trace formats.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TextFormatArg {
    /// The kernel's `trace` or `trace_pipe` file (or `trace-cmd report`-like lines).
    Ftrace,
    /// `perf script` output.
    Perf,
}

/// `tlblab trace dump`.
#[derive(Debug, Args)]
pub struct TraceDumpArgs {
    /// The trace file.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// Output format: text (ftrace `trace` lines) or json (one JSON object per line,
    /// `{"kind":"flush",...}`, then the header and trailer).
    #[command(flatten)]
    pub format: TextOrJson,
    /// Where the records go.
    #[command(flatten)]
    pub output: OutputFile,
    /// Read a truncated trace (a recorder that was killed) up to its last complete record.
    #[arg(long)]
    pub allow_truncated: bool,
}

/// `tlblab trace record`.
#[derive(Debug, Args)]
pub struct TraceRecordArgs {
    /// Stop after this many seconds (with a command: stop the recording, not the command).
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Event groups: tlb (always on), sched (sched:sched_switch), ipi (ipi:ipi_send_cpu,
    /// ipi:ipi_send_cpumask, irq_vectors:call_function*).
    #[arg(long, value_delimiter = ',', default_value = "tlb", value_name = "GROUP,...")]
    pub events: Vec<String>,
    /// Record only the command's process tree (its threads and every task it creates).
    #[arg(long, requires = "command")]
    pub only_cmd: bool,
    /// The trace file.
    #[arg(short, long, default_value = "tlblab.flushtrace", value_name = "FILE")]
    pub output: PathBuf,
    /// Replace an existing trace file.
    #[arg(long)]
    pub force: bool,
    /// Ring buffer per CPU, KiB.
    #[arg(long, default_value_t = 8192, value_name = "KIB")]
    pub buffer_kb: u32,
    /// How often to read the buffers when they are drained, ms.
    #[arg(long, default_value_t = 50, value_name = "MS")]
    pub poll_ms: u64,
    /// No progress or summary on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// The command to run and trace (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `tlblab bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    // The help lists every scenario, from the live catalogue.
    #[arg(value_name = "SCENARIO", help = bench_scenarios_help())]
    pub scenarios: Vec<String>,
    /// List the scenarios, their options and defaults, and exit.
    #[arg(long)]
    pub list: bool,
    /// Sibling threads spinning on other CPUs (madvise-busy, storm).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub busy: Vec<String>,
    /// Pages read per round trip (pingpong).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub touch: Vec<String>,
    /// Tasks (munmap-threads, tlb-flush2, madvise-scale, pthread-mmap).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub tasks: Vec<String>,
    /// threads or processes (munmap-threads, tlb-flush2).
    #[arg(long, value_delimiter = ',', value_name = "MODE,...")]
    pub mode: Vec<String>,
    /// Pages per task and operation (munmap-threads, pthread-mmap, storm).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub pages: Vec<String>,
    /// Rounds per thread (pthread-mmap).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub iterations: Vec<String>,
    /// munmap or mprotect (storm).
    #[arg(long, value_delimiter = ',', value_name = "OP,...")]
    pub op: Vec<String>,
    /// CPUs for the tasks, in order (kernel list format, e.g. 0-1); default: each scenario's
    /// own placement (task i on online CPU i).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// Measured runs per configuration.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub runs: usize,
    /// Warm-up before each measured run, ms (0: none).
    #[arg(long, default_value_t = 100, value_name = "MS")]
    pub warmup_ms: u64,
    /// Length of each measured run, ms (pthread-mmap does its fixed work instead).
    #[arg(long, default_value_t = 500, value_name = "MS")]
    pub run_ms: u64,
    /// Run each configuration's runs back to back instead of in interleaved rounds.
    #[arg(long)]
    pub no_interleave: bool,
    /// Seed of the run order and of the bootstrap.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the results (JSON, rewritten after every run) to FILE.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Save the results as baseline NAME (for `--baseline` and `tlblab compare`).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare the results with baseline NAME (or a result file) at the end.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Replace an existing output file or baseline.
    #[arg(long)]
    pub force: bool,
    /// Where baselines are kept (default: $TLBLAB_BASELINES, else
    /// $XDG_DATA_HOME/tlblab/baselines, else ~/.local/share/tlblab/baselines).
    #[arg(long, value_name = "DIR")]
    pub baseline_dir: Option<PathBuf>,
    /// Noise threshold in percent: smaller changes are never called significant.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub noise: f64,
    /// Record the tlb:tlb_flush tracepoint during the measured runs, for its counts by reason
    /// and CPU (needs root and tracefs). Off by default: recording costs time on every flush
    /// (about 11% of tlb-flush2's time here), so untraced runs are the kernel's own time and
    /// compare with the peers' programs.
    #[arg(long, overrides_with = "no_trace")]
    pub trace: bool,
    /// Do not record tlb:tlb_flush (the default); the interrupt and fault counters stay.
    #[arg(long, overrides_with = "trace")]
    pub no_trace: bool,
    /// Trace buffer per CPU, KiB (runs that flush more than it holds report lost events).
    #[arg(long, default_value_t = 16384, value_name = "KIB")]
    pub trace_buffer_kb: u32,
    /// Skip measuring the harness overhead (against a bare loop of the same system calls).
    #[arg(long)]
    pub no_overhead: bool,
    /// Output format: text (tables) or json (the results on standard output; no notes).
    #[command(flatten)]
    pub format: TextOrJson,
    /// No progress or notes on stderr.
    #[arg(short, long)]
    pub quiet: bool,
}

/// `tlblab compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a name saved with `tlblab bench --save-baseline`, or a result file.
    #[arg(value_name = "A")]
    pub a: String,
    /// The candidate, likewise.
    #[arg(value_name = "B")]
    pub b: String,
    /// Output format: text, json, csv or markdown.
    #[command(flatten)]
    pub format: AnyFormat,
    /// Where the comparison goes.
    #[command(flatten)]
    pub output: OutputFile,
    /// Noise threshold in percent: smaller changes are never called significant.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub noise: f64,
    /// Where baselines are kept (default: $TLBLAB_BASELINES, else
    /// $XDG_DATA_HOME/tlblab/baselines, else ~/.local/share/tlblab/baselines).
    #[arg(long, value_name = "DIR")]
    pub baseline_dir: Option<std::path::PathBuf>,
}

/// What a command prints, for every command that prints results: `--format` (and `--json`,
/// the same as `--format json`). Each command accepts the subset that makes sense for it, and
/// its --help lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Plain text: aligned tables (`table` is accepted too, its former name).
    #[value(alias = "table")]
    Text,
    /// JSON (schemas in docs/).
    Json,
    /// CSV.
    Csv,
    /// Markdown tables.
    Markdown,
}

/// A `--format` parser accepting only `allowed` (listed in --help, completed by the shells).
fn formats(allowed: &'static [OutputFormat]) -> impl TypedValueParser<Value = OutputFormat> {
    clap::builder::PossibleValuesParser::new(
        allowed.iter().filter_map(ValueEnum::to_possible_value),
    )
    .map(|s| <OutputFormat as ValueEnum>::from_str(&s, false).expect("an allowed value"))
}

/// The format of `--format` and `--json` (clap keeps only the last given of the two).
fn chosen(format: OutputFormat, json: bool) -> OutputFormat {
    if json {
        OutputFormat::Json
    } else {
        format
    }
}

/// `--format text|json` and its alias `--json`.
#[derive(Debug, Args)]
pub struct TextOrJson {
    /// Output format.
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "text",
        value_parser = formats(&[OutputFormat::Text, OutputFormat::Json])
    )]
    format: OutputFormat,
    /// The same as --format json (of the two, the last given counts).
    #[arg(long, overrides_with = "format")]
    json: bool,
}

impl TextOrJson {
    /// The format asked for.
    pub fn get(&self) -> OutputFormat {
        chosen(self.format, self.json)
    }

    /// Whether it is JSON.
    pub fn json(&self) -> bool {
        self.get() == OutputFormat::Json
    }
}

/// `--format text|json|csv|markdown` and its alias `--json`.
#[derive(Debug, Args)]
pub struct AnyFormat {
    /// Output format.
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "text",
        value_parser = formats(&[
            OutputFormat::Text,
            OutputFormat::Json,
            OutputFormat::Csv,
            OutputFormat::Markdown,
        ])
    )]
    format: OutputFormat,
    /// The same as --format json (of the two, the last given counts).
    #[arg(long, overrides_with = "format")]
    json: bool,
}

impl AnyFormat {
    /// The format asked for.
    pub fn get(&self) -> OutputFormat {
        chosen(self.format, self.json)
    }
}

/// `-o/--output FILE` (and `--force`) of a command that prints its result.
#[derive(Debug, Args)]
pub struct OutputFile {
    /// Write the output to FILE instead of standard output (whole or not at all: it is
    /// written beside FILE and renamed when complete).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing --output file.
    #[arg(long, requires = "output")]
    pub force: bool,
}

/// `tlblab sim …`
#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// Run the built-in workloads through the TLB model of one machine and compare them.
    ///
    /// Five seeded synthetic streams on CPU 0: a page-local stream, a loop over 1,024 pages, random
    /// pages over 256 MiB, and two processes switching with and without PCID. Counts are exact
    /// (deterministic model); the same seed gives the same output.
    #[command(
        after_help = "Examples:\n  tlblab sim demo\n  tlblab sim demo -m zen4 -w loop-1024 --format json -o demo.json"
    )]
    Demo(DemoArgs),
    /// Replay memory traces through the TLB model and print exact hit, miss and walk counts.
    ///
    /// Formats (auto-detected unless --format is given): valgrind lackey text
    /// (`valgrind --tool=lackey --trace-mem=yes`), ChampSim binary `input_instr` traces, and
    /// tlblab's compact format; each raw, gzip- or xz-compressed. Each FILE is an independent run
    /// on a fresh machine; files run in parallel, output is in the order given.
    #[command(
        after_help = "Examples:\n  valgrind --tool=lackey --trace-mem=yes ls 2> ls.lackey && tlblab sim trace ls.lackey\n  tlblab sim trace -m host --input-format champsim a.champsim.xz --per-cpu\n  tlblab sim trace --warmup 1000000 app.ct --format json -o app.json"
    )]
    Trace(TraceArgs),
    /// Convert a lackey or ChampSim trace to tlblab's compact binary format (fast to replay).
    #[command(
        after_help = "Example:\n  tlblab sim convert ls.lackey.gz -o ls.ct && tlblab sim trace ls.ct"
    )]
    Convert(ConvertArgs),
    /// List the built-in machine presets, or show one with every figure's source.
    #[command(
        after_help = "Examples:\n  tlblab sim machines\n  tlblab sim machines show host\n  tlblab sim machines show skylake --toml > mine.toml && tlblab sim run -m mine.toml -s pingpong"
    )]
    Machines(MachinesArgs),
    /// Run a scenario on N simulated CPUs under Linux flush policies and compare them.
    ///
    /// Each policy runs the scenario once per seed on the kernel model (tlblab-kernel); the
    /// metric is reported as the mean ± stddev over seeds, with the ratio to the first policy
    /// and its 95% confidence interval (paired by seed). Policies: linux-4.13,
    /// linux-4.14-nopcid, linux-4.14, linux-6.18, variants such as pti-deferred, compositions
    /// such as linux-6.18+pti-invpcid, or a .toml file. `--explain` adds, per policy, what
    /// each model mechanism contributes to the metric (each switched off in turn).
    #[command(
        after_help = "Examples:\n  tlblab sim run -s pingpong -p linux-4.14,linux-6.18 --seeds 5\n  tlblab sim run -s madvise-busy --busy 3 --explain\n  tlblab sim run -s tlb-flush2 --tasks 8 --cpus 8 --without guest --format json -o run.json"
    )]
    Run(RunArgs),
    /// List the model's mechanisms that `--without` and `--explain` of `sim run` and `sim
    /// study` switch off.
    ///
    /// Each line: the name, what it models, and what the model does with it off
    /// (docs/kernel-model.md, "Mechanisms and their switches").
    #[command(
        after_help = "Examples:\n  tlblab sim mechanisms\n  tlblab sim run -s pingpong --without mlp,working-set"
    )]
    Mechanisms,
    /// List the built-in scenarios: what each does, its metric, and whether `tlblab bench`
    /// also measures it on the running kernel.
    ///
    /// Example: `tlblab sim scenarios`, then `tlblab sim run -s tlb-flush2 --tasks 4`.
    Scenarios,
    /// List the built-in policies (kernel bases and variants), or show one's every switch.
    ///
    /// Examples: `tlblab sim policies`; `tlblab sim policies show linux-4.14`; `tlblab sim
    /// policies show linux-6.18+pti-deferred --toml > mine.toml`, edit its `[set]`, then
    /// `tlblab sim run -s pingpong -p mine.toml`.
    Policies(PoliciesArgs),
    /// Look for stale translations a policy lets a CPU use (docs/safety.md).
    ///
    /// Runs the scenario under many perturbed schedules, deterministically from the seed, with
    /// the safety checker on: every PTE change that needs a flush is versioned, and every access
    /// a TLB entry translates is judged. A use of a translation older than a change whose
    /// operation (system call, fault) has completed is a violation; one during the operation's
    /// own window is allowed and counted. Each violation comes with its witness, and the seed
    /// that replays it. Exit status 1 when any violation was found.
    #[command(
        after_help = "Examples:\n  tlblab sim check -p bad-lazy-no-catch-up -s lazy-readers --cpus 3 --tasks 2 --pages 8 --iterations 20\n  tlblab sim check -p linux-6.18,linux-4.14 -s shared-writers --schedules 200 --format json -o check.json"
    )]
    Check(CheckArgs),
    /// Run a built-in study (S1–S10): the kernel debates of studies.md and what came after, each a set of scenarios
    /// on a machine preset under two or more policies, several seeds each.
    ///
    /// `tlblab sim study list` names the studies; `tlblab sim study s2` (or `s2-pcid`, `S2`) runs
    /// one; `all` runs them one after the other. Every run of every (part, policy, seed) is
    /// independent and deterministic; they run in parallel and the output does not depend on
    /// the number of threads.
    Study(StudyArgs),
    /// Replay a flush trace (recorded, or ftrace/perf text) through the model of Linux's flush
    /// machinery, per policy, or sweep tlb_single_page_flush_ceiling on it (study S10).
    ///
    /// The initiators' requests (reason 4 with the reason 3 or 2 that follows it) are issued at
    /// their recorded times, CPUs and threads; the model regenerates the outcomes (reasons 0, 1,
    /// 5: IPIs, remote flushes, switch flushes) under each policy and they are set beside the
    /// recorded ones. A trace has no memory accesses, so the refill after a flush is an
    /// assumption (--refill, --working-set). docs/replay.md lists every inference.
    #[command(
        after_help = "Examples:\n  tlblab sim replay tlblab.flushtrace -p linux-6.18,pti-deferred\n  tlblab sim replay saved-trace.txt --input-format ftrace --ceiling 1,2,4,8,16,33,64 --format json"
    )]
    Replay(ReplayArgs),
}

/// `tlblab sim replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace: a tlblab trace file, or ftrace / perf script text.
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// The machine.
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Policies: built-in names (`tlblab sim policies`) or policy .toml files, comma-separated
    /// or the option repeated.
    #[arg(
        long,
        short = 'p',
        alias = "policy",
        default_value = "linux-6.18",
        value_delimiter = ',',
        value_name = "POLICY,..."
    )]
    pub policies: Vec<String>,
    /// Sweep tlb_single_page_flush_ceiling over these values under the first policy instead
    /// (e.g. 1,2,4,8,16,33,64,128,256,512).
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = bounded::<u64>(bounds::CEILING))]
    pub ceiling: Vec<u64>,
    /// Simulated CPUs (default: one more than the highest CPU in the trace).
    #[arg(long, value_name = "N")]
    pub cpus: Option<usize>,
    /// Seed of the model's random streams.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// What each thread references after its flushes: none, flushed (the pages it flushed) or
    /// working-set (--working-set pages, after each flush and each time it runs again).
    #[arg(long, value_enum, default_value = "flushed")]
    pub refill: RefillArg,
    /// Pages of each thread's working set (with --refill working-set).
    #[arg(long, default_value_t = 64, value_name = "PAGES", value_parser = bounded::<u64>(bounds::WORKING_SET))]
    pub working_set: u64,
    /// Without sched_switch records: a thread's events on one CPU at most this far apart mean
    /// it ran in between, µs.
    #[arg(long, default_value_t = 1000, value_name = "US")]
    pub idle_gap_us: u64,
    /// tlb_single_page_flush_ceiling of the recording kernel (full flushes above it were
    /// recorded without their size).
    #[arg(long, default_value_t = 33, value_name = "N")]
    pub recorded_ceiling: u64,
    /// Read a truncated trace file up to its last complete record.
    #[arg(long)]
    pub allow_truncated: bool,
    /// The format of a text trace: ftrace or perf (default: detected).
    #[arg(long = "input-format", alias = "text-format", value_enum, value_name = "FORMAT")]
    pub text_format: Option<TextFormatArg>,
    /// Output format: text or json (schema tlblab.sim.replay/1, or tlblab.sim.replay-sweep/1
    /// with --ceiling).
    #[command(flatten)]
    pub format: TextOrJson,
    /// Where the report goes.
    #[command(flatten)]
    pub output: OutputFile,
}

/// `--refill` of `tlblab sim replay`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum RefillArg {
    /// No references: flush cost only.
    None,
    /// The initiator references the pages it flushed.
    Flushed,
    /// Each thread references --working-set pages after each flush and when it runs again.
    WorkingSet,
}

/// Which machine to simulate, and run-time choices about it.
#[derive(Debug, Args)]
pub struct MachineArgs {
    /// A built-in preset name (see `tlblab sim machines`), `host` (this machine, from CPUID and
    /// sysfs, with the nearest preset's costs), or a path to a preset .toml file.
    #[arg(long, short = 'm', default_value = "skylake", value_name = "NAME|PATH")]
    pub machine: String,
    /// Replacement policy of every TLB and paging-structure cache (default: the preset's).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub replacement: Option<ReplacementArg>,
    /// Paging depth: 4, or 5 (LA57; only on presets that have it).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u8).range(4..=5))]
    pub paging_levels: u8,
}

/// Replacement policies.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ReplacementArg {
    /// True least-recently-used.
    Lru,
    /// Bit pseudo-LRU (one MRU bit per way).
    Plru,
}

/// How to read address-only traces (lackey, ChampSim), which carry no CPU, PCID or page size.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// The trace's format: lackey, champsim or compact (default: detected).
    #[arg(
        id = "input_format",
        long = "input-format",
        short_alias = 'f',
        value_enum,
        value_name = "FORMAT"
    )]
    pub format: Option<FormatArg>,
    /// Page size that maps every address of a lackey or ChampSim trace.
    #[arg(long, default_value = "4k", value_parser = parse_page_size, value_name = "4k|2m|1g")]
    pub page_size: tlblab_types::PageSize,
    /// CPU that runs a lackey or ChampSim trace.
    #[arg(long, default_value_t = 0)]
    pub cpu: u16,
    /// PCID of a lackey or ChampSim trace's address space (0–4095).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(0..=4095))]
    pub pcid: u16,
}

/// Trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// valgrind --tool=lackey --trace-mem=yes output.
    Lackey,
    /// ChampSim input_instr records (64 bytes each).
    Champsim,
    /// tlblab's compact binary format (docs/trace-formats.md).
    Compact,
}

/// `--format` of `tlblab sim trace`: an output format, or (hidden, from before
/// `--input-format`) an input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimTraceFormat {
    /// What to print.
    Output(OutputFormat),
    /// The trace's format, in the old spelling.
    Input(FormatArg),
}

fn sim_trace_formats() -> impl TypedValueParser<Value = SimTraceFormat> {
    let shown = [OutputFormat::Text, OutputFormat::Json].map(|f| f.to_possible_value());
    let hidden = FormatArg::value_variants().iter().map(|f| f.to_possible_value());
    let values = shown.into_iter().chain(hidden.map(|v| v.map(|v| v.hide(true)))).flatten();
    clap::builder::PossibleValuesParser::new(values).map(|s| {
        match <OutputFormat as ValueEnum>::from_str(&s, false) {
            Ok(f) => SimTraceFormat::Output(f),
            Err(_) => SimTraceFormat::Input(
                <FormatArg as ValueEnum>::from_str(&s, false).expect("an allowed value"),
            ),
        }
    })
}

impl TraceArgs {
    /// Whether to print JSON.
    pub fn json(&self) -> bool {
        self.json || self.format == SimTraceFormat::Output(OutputFormat::Json)
    }

    /// The trace format given, by --input-format or by the old --format.
    pub fn input_format(&self) -> Option<FormatArg> {
        match self.format {
            SimTraceFormat::Input(f) => Some(f),
            SimTraceFormat::Output(_) => self.input.format,
        }
    }
}

/// The scenarios of the kernel model (`sim run`, `sim check`), marked where `tlblab bench` has
/// no live version: built from the catalogues, so a new scenario is listed without editing this.
fn sim_scenario_names() -> String {
    let live: Vec<&str> = tlblab_live::scenarios().iter().map(|s| s.name).collect();
    let names: Vec<String> = tlblab_kernel::workloads::SCENARIOS
        .iter()
        .map(|s| {
            if live.contains(&s.name) {
                s.name.to_string()
            } else {
                format!("{} (sim only)", s.name)
            }
        })
        .collect();
    names.join(", ")
}

fn sim_scenarios_help() -> String {
    format!(
        "The scenario: {} (`tlblab sim scenarios` describes them; docs/workloads.md).",
        sim_scenario_names()
    )
}

fn check_scenarios_help() -> String {
    format!(
        "The scenario (lazy-readers, shared-writers, switching-readers and collapse-readers are \
         made for the checker; any other works): {}.",
        sim_scenario_names()
    )
}

/// The scenarios `tlblab bench` measures; those the simulator alone has are named apart.
fn bench_scenarios_help() -> String {
    let live: Vec<&str> = tlblab_live::scenarios().iter().map(|s| s.name).collect();
    let sim_only: Vec<&str> = tlblab_kernel::workloads::SCENARIOS
        .iter()
        .map(|s| s.name)
        .filter(|n| !live.contains(n))
        .collect();
    format!(
        "Scenarios to measure (default: all): {} (`--list` shows their options and defaults). \
         Simulated only, not measured here (`tlblab sim run -s NAME`): {}.",
        live.join(", "),
        sim_only.join(", ")
    )
}

/// A number checked against its bound in the one table ([`tlblab_types::bounds`]) where it is
/// parsed: clap's error names the option, the value and the range, exit status 2.
fn bounded<T>(bound: Bound) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |text| {
        let n = bound.parse(text)?;
        T::try_from(n).map_err(|_| format!("{n} is outside {}", bound.range()))
    }
}

fn parse_page_size(text: &str) -> Result<tlblab_types::PageSize, String> {
    tlblab_types::PageSize::parse(text).ok_or_else(|| format!("{text:?} is not 4k, 2m or 1g"))
}

/// `tlblab sim trace`
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Trace files (lackey, ChampSim or compact; raw, .gz or .xz).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub machine: MachineArgs,
    #[command(flatten)]
    pub input: InputArgs,
    /// Output format: text or json (schema in docs/sim-output.md). `--format lackey`,
    /// `champsim` and `compact`, the former spelling of --input-format, still work.
    #[arg(
        long,
        value_name = "FORMAT",
        default_value = "text",
        value_parser = sim_trace_formats()
    )]
    pub format: SimTraceFormat,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Where the report goes.
    #[command(flatten)]
    pub output: OutputFile,
    /// Also print each CPU's counters (text output; JSON always has them).
    #[arg(long)]
    pub per_cpu: bool,
    /// Accesses of each file simulated as warm-up before counting starts (they fill the TLBs and
    /// caches, like ChampSim's warm-up instructions); counts then describe only what follows.
    #[arg(long, default_value_t = 0, value_name = "ACCESSES")]
    pub warmup: u64,
    /// Files simulated at once (default: the number of CPUs). Output does not depend on it.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

/// `tlblab sim convert`
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The trace to convert.
    #[arg(value_name = "INPUT")]
    pub input: PathBuf,
    /// Where to write the compact trace (written to OUTPUT.partial, renamed when complete).
    #[arg(long, short = 'o', value_name = "OUTPUT")]
    pub output: PathBuf,
    /// Replace OUTPUT if it exists.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub input_args: InputArgs,
    /// The former spelling of --input-format.
    #[arg(long = "format", hide = true, value_enum, conflicts_with = "input_format")]
    pub old_format: Option<FormatArg>,
}

/// `tlblab sim machines`
#[derive(Debug, Args)]
pub struct MachinesArgs {
    /// Show one preset instead of listing them.
    #[command(subcommand)]
    pub show: Option<MachinesCommand>,
}

/// `tlblab sim machines show`
#[derive(Debug, Subcommand)]
pub enum MachinesCommand {
    /// Print one preset: every structure and figure, its source, UNVERIFIED marks.
    Show {
        /// A built-in preset name, `host` (this machine), or a path to a preset .toml file.
        #[arg(value_name = "NAME|PATH")]
        name: String,
        /// Print the preset's TOML (a starting point for your own preset file).
        #[arg(long)]
        toml: bool,
    },
}

/// `tlblab sim demo`
#[derive(Debug, Args)]
pub struct DemoArgs {
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Accesses per workload.
    #[arg(long, default_value_t = 2_000_000, value_parser = bounded::<u64>(bounds::ACCESSES))]
    pub accesses: u64,
    /// Seed of the workloads' random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only this workload (repeatable; default: all): page-local, loop-1024, random-65536,
    /// ctx-switch-pcid or ctx-switch-nopcid.
    #[arg(long = "workload", short = 'w', value_name = "NAME")]
    pub workloads: Vec<String>,
    /// Output format: text or json (schema tlblab.sim.demo/1).
    #[command(flatten)]
    pub format: TextOrJson,
    /// Where the report goes.
    #[command(flatten)]
    pub output: OutputFile,
}

/// `tlblab sim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A built-in preset name, `host` (this machine), or a path to a preset .toml file (it needs a
    /// [kernel] section).
    #[arg(long, short = 'm', default_value = "skylake", value_name = "NAME|PATH")]
    pub machine: String,
    /// Simulated CPUs.
    #[arg(long, default_value_t = 4, value_parser = bounded::<u16>(bounds::CPUS))]
    pub cpus: u16,
    // The help lists every scenario, from the kernel model's catalogue.
    #[arg(long, short = 's', help = sim_scenarios_help(), value_name = "NAME")]
    pub scenario: String,
    /// Policies: built-in names (`tlblab sim policies`) or policy .toml files, comma-separated
    /// or the option repeated; the first is the baseline of the ratios.
    #[arg(
        long,
        short = 'p',
        alias = "policy",
        default_value = "linux-6.18",
        value_delimiter = ',',
        value_name = "POLICY,..."
    )]
    pub policies: Vec<String>,
    /// Runs per policy, with seeds seed, seed+1, ….
    #[arg(long, default_value_t = 3, value_parser = bounded::<u64>(bounds::SEEDS))]
    pub seeds: u64,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The scenario's parameters.
    #[command(flatten)]
    pub params: ScenarioParams,
    /// Mechanisms switched off in every run.
    #[command(flatten)]
    pub without: WithoutArg,
    /// Explain each policy's metric by mechanism: run it again with each mechanism off in turn
    /// (same seeds) and show the change from the run with all on. A mechanism the machine does
    /// not have is listed, not run.
    #[arg(long)]
    pub explain: bool,
    /// Noise band in percent: a difference is called a change only when it is significant and
    /// its whole 95% interval lies outside ±PCT.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub noise: f64,
    /// Output format: text or json (schema tlblab.sim.run/1).
    #[command(flatten)]
    pub format: TextOrJson,
    /// Where the report goes.
    #[command(flatten)]
    pub output: OutputFile,
}

/// `--without`, the same for `sim run` and `sim study` (parsed by `WithoutArg::mechanisms`).
#[derive(Debug, Args)]
pub struct WithoutArg {
    /// Switch these model mechanisms off in every run (comma-separated names, e.g. guest,mlp;
    /// `tlblab sim mechanisms` lists and describes them all).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub without: Vec<String>,
}

/// A scenario's parameters (docs/workloads.md; each scenario uses those it names).
#[derive(Debug, Args)]
pub struct ScenarioParams {
    /// Iterations (or rounds) of the measured loop.
    #[arg(long, default_value_t = 2000, value_parser = bounded::<u64>(bounds::ITERATIONS))]
    pub iterations: u64,
    /// pingpong: pages each side touches per round trip.
    #[arg(long, default_value_t = 0, value_parser = bounded::<u64>(bounds::TOUCH))]
    pub touch: u64,
    /// madvise-busy, storm: sibling threads spinning on other CPUs.
    #[arg(long, default_value_t = 3, value_parser = bounded::<usize>(bounds::BUSY))]
    pub busy: usize,
    /// munmap-threads, tlb-flush2, madvise-scale, pthread-mmap: tasks.
    #[arg(long, default_value_t = 4, value_parser = bounded::<usize>(bounds::TASKS))]
    pub tasks: usize,
    /// munmap-threads, tlb-flush2, hackbench: threads of one process, or processes (default:
    /// threads; for hackbench processes, as hackbench's own default).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// storm: munmap or mprotect.
    #[arg(long, value_enum, default_value = "munmap")]
    pub op: StormOpArg,
    /// Pages each task works on (munmap-threads, pthread-mmap, storm; tlb-flush2 always maps
    /// 1 MiB).
    #[arg(long, default_value_t = 256, value_parser = bounded::<u64>(bounds::PAGES))]
    pub pages: u64,
    /// Work per page referenced, in cycles, besides translation (pingpong's loads of the zero
    /// page cost 1, measured, unless `--without zero-page-line`; docs/workloads.md).
    #[arg(long, default_value_t = 10, value_parser = bounded::<u64>(bounds::CYCLES_PER_PAGE))]
    pub cycles_per_page: u64,
    /// kbuild*: compile jobs in the build, run to the end (default 0: a window of a long build).
    #[arg(long, default_value_t = 0, value_parser = bounded::<u64>(bounds::JOBS))]
    pub jobs: u64,
    /// Stop after this much simulated time, ms (default 0: the scenario's own window, which is
    /// 1,000 ms for kbuild* and none for the others).
    #[arg(long, default_value_t = 0, value_parser = bounded::<u64>(bounds::WINDOW_MS))]
    pub window_ms: u64,
    /// rt-latency: length of each interrupts-off burst on the sibling CPU, µs.
    #[arg(long, default_value_t = 20, value_parser = bounded::<u64>(bounds::BURST_US))]
    pub burst_us: u64,
    /// Windowed runs (kbuild* without --jobs): simulated time run before the window but not
    /// measured, ms; every counter starts after it (default 0: none).
    #[arg(long, default_value_t = 0, value_parser = bounded::<u64>(bounds::WARMUP_MS))]
    pub warmup_ms: u64,
    /// hackbench: groups of senders and receivers.
    #[arg(long, default_value_t = 10, value_parser = bounded::<usize>(bounds::GROUPS))]
    pub groups: usize,
    /// hackbench: senders and receivers per group.
    #[arg(long, default_value_t = 20, value_parser = bounded::<usize>(bounds::FDS))]
    pub fds: usize,
    /// hackbench: messages each sender writes to each receiver of its group.
    #[arg(long, default_value_t = 100, value_parser = bounded::<u64>(bounds::LOOPS))]
    pub loops: u64,
    /// hackbench: bytes per message.
    #[arg(long, default_value_t = 100, value_parser = bounded::<u64>(bounds::DATASIZE))]
    pub datasize: u64,
    /// hackbench: pipes instead of AF_UNIX stream sockets.
    #[arg(long)]
    pub pipe: bool,
}

impl ScenarioParams {
    /// As the kernel model takes them, for `scenario` (whose default mode it picks).
    pub fn to_params(&self, scenario: &str) -> tlblab_kernel::workloads::Params {
        let threads = match self.mode {
            Some(mode) => matches!(mode, ModeArg::Threads),
            None => scenario != "hackbench",
        };
        tlblab_kernel::workloads::Params {
            iterations: self.iterations,
            touch: self.touch,
            busy: self.busy,
            tasks: self.tasks,
            threads,
            op: match self.op {
                StormOpArg::Munmap => tlblab_kernel::workloads::StormOp::Munmap,
                StormOpArg::Mprotect => tlblab_kernel::workloads::StormOp::Mprotect,
            },
            pages: self.pages,
            cycles_per_page: self.cycles_per_page,
            jobs: self.jobs,
            window_ms: self.window_ms,
            burst_us: self.burst_us,
            warmup_ms: self.warmup_ms,
            groups: self.groups,
            fds: self.fds,
            loops: self.loops,
            datasize: self.datasize,
            pipe: self.pipe,
        }
    }
}

/// `tlblab sim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Policies to check, one after the other: built-in names (linux-6.18,
    /// bad-lazy-no-catch-up, …; `tlblab sim policies`) or policy .toml files, comma-separated
    /// or the option repeated.
    #[arg(
        long,
        short = 'p',
        alias = "policy",
        required = true,
        value_delimiter = ',',
        value_name = "POLICY,..."
    )]
    pub policies: Vec<String>,
    // The help lists every scenario, from the kernel model's catalogue.
    #[arg(long, short = 's', help = check_scenarios_help(), value_name = "NAME")]
    pub scenario: String,
    /// A built-in preset name, `host`, or a preset .toml file.
    #[arg(long, short = 'm', default_value = "skylake", value_name = "NAME|PATH")]
    pub machine: String,
    /// Simulated CPUs.
    #[arg(long, default_value_t = 4, value_parser = bounded::<u16>(bounds::CPUS))]
    pub cpus: u16,
    /// Perturbed schedules to run, with seeds SEED, SEED+1, …; each changes the timer phases,
    /// the workload's random draws and every IPI's delivery delay.
    #[arg(long, default_value_t = 1000, value_parser = bounded::<u64>(bounds::SCHEDULES))]
    pub schedules: u64,
    /// First seed (a witness names the seed that replays it).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Largest extra delay of an IPI's delivery, cycles (0: the preset's latency only); also
    /// the longest stall inside an mm switch and the longest disturbance window.
    #[arg(long, default_value_t = 20_000, value_parser = bounded::<u64>(bounds::MAX_IPI_DELAY))]
    pub max_ipi_delay: u64,
    /// Mean gap between disturbances on each CPU, cycles: an interrupts-off window, a
    /// preemption from user mode by a kernel thread, or a migration to another CPU, drawn
    /// uniformly at random points (0: none).
    #[arg(long, default_value_t = 200_000, value_parser = bounded::<u64>(bounds::DISTURB_EVERY))]
    pub disturb_every: u64,
    /// Unperturbed runs without the checker (seeds SEED, SEED+1, …) that measure the policy's
    /// speed on the scenario, shown next to its verdict (0: none).
    #[arg(long, default_value_t = 5, value_parser = bounded::<u64>(bounds::SPEED_RUNS))]
    pub speed_runs: u64,
    /// The scenario's parameters.
    #[command(flatten)]
    pub params: ScenarioParams,
    /// Output format: text or json (schema tlblab.sim.check/1; with several policies, a JSON
    /// array of them).
    #[command(flatten)]
    pub format: TextOrJson,
    /// Where the report goes.
    #[command(flatten)]
    pub output: OutputFile,
}

/// What `tlblab sim study --help` says about the output.
const STUDY_AFTER_HELP: &str = "\
Output: a header saying what every number is, then each part of the study (a scenario on a
machine preset, with its settings and why they were chosen), then the policies and the kernels
they mirror. Every figure is the mean ± sample standard deviation over the K seeds; each policy
is compared with the part's first policy (the baseline) by the mean of the per-seed ratios,
paired by seed, with a 95% Student-t confidence interval, and called significant when the
interval excludes 1 (ratios need --seeds 2 or more). Each study has its own format:

  s1-pti         user / system / elapsed seconds, dTLB walks, walker cycles per walk, and a
                 flush-size histogram per policy (pages, % of flushes, cumulative %, avg cycles,
                 cycles/page, samples)
  s2-pcid        one table per scenario (madv-migrate, pthread-mmap, pingpong, pingpong
                 --touch 512), each with its own metric and IPIs (and dTLB walks) per op
  s3-la57        a `perf stat -r K`-like block per policy (task-clock, page-faults, cycles,
                 la57 run-time checks, elapsed ± relative standard error; <not modelled> for
                 events the model lacks), then the ratios
  s4-flush-info  madvise-busy, an mmtests-style madvise-scale table (ops/s Amean per worker
                 count, *…* = significant) and rt-latency (preemption-off max and p99)
  s5-xpfo        system and elapsed seconds, IPIs sent and received, full flushes, and the
                 exposure window (median, p99, max µs; censored windows)
  s6-broadcast   an mmtests-style table per machine and measure over 1…N tasks of
                 tlb_flush2 threads: loops/s, invalidation and lock-wait shares of CPU time,
                 median flush latency
  s7-lazy-cpumask  hackbench seconds (processes and threads, sockets and pipes) and
                 tlb-flush2 ops/s (and per task), IPIs sent, mm_cpumask line transfers and
                 writes
  s8-deferred    per part, speed, IPIs/op, the safety checker's verdict and the exposure
                 (median, p99, max µs) side by side, then the usual measure table
  s9-pv-flush    one mmtests-style table per measure and curve (madvise-busy, tlb-flush2;
                 posted interrupts or not; overcommit 1×, 1.5×, 2×) over 4 … 64 vCPUs: the
                 scenario's metric, IPIs sent, PV flushes left to the host, steal %
  s10-ceiling    per part (a trace replayed, or S1's kbuild) one row per ceiling: the headline
                 (flush cost µs, or the build's CPU-s/s), its ratio to ceiling 33 with verdict,
                 the other measures; then the best ceiling, per seed, and the ceilings tied
                 with it

--without NAME[,NAME…] switches model mechanisms off in every run (`tlblab sim mechanisms`
lists them; the header says which). --explain adds, per part, a table of its headline measure
per policy with each mechanism its machine has switched off in turn (same seeds), the ratio to
the baseline with it off and whether the answer changes; mechanisms the machine lacks are
listed as not present.

--quick shrinks every part for tests and smoke runs and says so in the output. --format json
(or --json) prints the schema tlblab.sim.study/1 (all: tlblab.sim.study-all/1), documented in docs/sim-output.md;
the studies themselves are described in docs/studies.md.

Exit status: 0 when the study ran, 2 for an unknown study or a study this build cannot run
(an unknown preset, scenario or policy), 1 for any other failure. A part whose scenario this
build of the kernel model lacks is reported as NOT RUN (and warned about on standard error)
while the study's other parts run.

Examples:
  tlblab sim study list
  tlblab sim study s2 --seeds 5
  tlblab sim study s2,s4 --quick --format json -o s2-s4.json
  tlblab sim study all --without guest --explain";

/// `tlblab sim study`.
#[derive(Debug, Args)]
#[command(after_help = STUDY_AFTER_HELP)]
pub struct StudyArgs {
    /// The study: s1-pti, s2-pcid, s3-la57, s4-flush-info, s5-xpfo, s6-broadcast, s7-lazy-cpumask,
    /// s8-deferred, s9-pv-flush, s10-ceiling (or S1…S10), a
    /// comma-separated list of them (`s2,s4`: reported as `all` is), `all` to run them all, or
    /// `list` to name them.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Runs per policy, with seeds SEED, SEED+1, … (default: the study's own: 3, or 5 for S3
    /// as `perf stat -r 5`).
    #[arg(long, value_parser = bounded::<u64>(bounds::SEEDS))]
    pub seeds: Option<u64>,
    /// First seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Shrink every part (fewer iterations, smaller windows, fewer worker counts) for tests and
    /// smoke runs; the output says it is a quick run.
    #[arg(long)]
    pub quick: bool,
    /// Mechanisms switched off in every run of the study.
    #[command(flatten)]
    pub without: WithoutArg,
    /// Explain each part by mechanism: run it again with each mechanism its machine has
    /// switched off in turn (same seeds) and show, per policy, the part's headline measure (its
    /// first) on and off, and the study's comparison (the ratio to the baseline) with it off:
    /// does switching it off change the answer? A mechanism the machine does not have is
    /// listed, not run.
    #[arg(long)]
    pub explain: bool,
    /// Noise band in percent: a difference is called a change only when it is significant and
    /// its whole 95% interval lies outside ±PCT.
    #[arg(long, default_value_t = 1.0, value_name = "PCT")]
    pub noise: f64,
    /// Output format: text or json (schema tlblab.sim.study/1; several studies:
    /// tlblab.sim.study-all/1).
    #[command(flatten)]
    pub format: TextOrJson,
    /// Where the report goes.
    #[command(flatten)]
    pub output: OutputFile,
}

/// `--mode` of munmap-threads and tlb-flush2.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Threads sharing one mm.
    Threads,
    /// Processes, one mm each.
    Processes,
}

/// `--op` of storm.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum StormOpArg {
    /// mmap, write and munmap the pages.
    Munmap,
    /// mprotect them read-only, then read-write, and write them.
    Mprotect,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every bounded option of the simulator, with a command line that reaches it.
    fn bounded_options() -> Vec<(&'static [&'static str], Bound)> {
        use bounds::*;
        const RUN: &[&str] = &["tlblab", "sim", "run", "-s", "storm"];
        const CHECK: &[&str] =
            &["tlblab", "sim", "check", "-p", "linux-6.18", "-s", "lazy-readers"];
        const REPLAY: &[&str] = &["tlblab", "sim", "replay", "t.flushtrace"];
        let params = [
            ITERATIONS,
            TOUCH,
            BUSY,
            TASKS,
            PAGES,
            CYCLES_PER_PAGE,
            JOBS,
            WINDOW_MS,
            WARMUP_MS,
            BURST_US,
            GROUPS,
            FDS,
            LOOPS,
            DATASIZE,
        ];
        let mut all: Vec<(&[&str], Bound)> = vec![(RUN, CPUS), (RUN, SEEDS)];
        all.extend(params.iter().map(|&b| (RUN, b)));
        all.extend(params.iter().map(|&b| (CHECK, b)));
        for b in [CPUS, SCHEDULES, SPEED_RUNS, MAX_IPI_DELAY, DISTURB_EVERY] {
            all.push((CHECK, b));
        }
        all.extend([
            (REPLAY, CEILING),
            (REPLAY, WORKING_SET),
            (&["tlblab", "sim", "demo"][..], ACCESSES),
            (&["tlblab", "sim", "study", "s1"][..], SEEDS),
            (&["tlblab", "study"][..], SEEDS),
        ]);
        all
    }

    /// What parsing `--NAME value` did: accepted, or refused with clap's message (exit status
    /// 2 in `main`), on a thread of its own so that no case can stall the run.
    fn parse(line: &'static [&'static str], name: &str, value: String) -> Result<(), String> {
        let args: Vec<String> =
            line.iter().map(|a| a.to_string()).chain([format!("--{name}"), value]).collect();
        tlblab_types::bounded::within(std::time::Duration::from_secs(10), move || {
            Cli::try_parse_from(args).map(drop).map_err(|e| (e.exit_code(), e.to_string()))
        })
        .expect("parsing finishes")
        .map_err(|(code, message)| {
            assert_eq!(code, 2, "{message}");
            message
        })
    }

    /// The values at a bound's edges and just past them, as text.
    fn edges(b: Bound) -> Vec<String> {
        let mut v = vec![b.min, b.max, b.max.saturating_add(1), u64::MAX, 0];
        v.extend(b.min.checked_sub(1));
        let mut text: Vec<String> = v.iter().map(u64::to_string).collect();
        text.push("18446744073709551616".into()); // u64::MAX + 1
        text
    }

    /// Accepted exactly when the table says so; refused with the option, the value and the
    /// range named.
    fn judge(line: &'static [&'static str], b: Bound, value: String) -> Result<bool, String> {
        let inside = value.parse::<u64>().is_ok_and(|n| b.contains(n));
        match parse(line, b.name, value.clone()) {
            Ok(()) if inside => Ok(true),
            Err(m) if !inside => {
                let named = m.contains(&format!("--{}", b.name))
                    && m.contains(&value)
                    && m.contains(&b.range());
                if named {
                    Ok(false)
                } else {
                    Err(format!("{line:?} --{} {value}: message {m}", b.name))
                }
            }
            Ok(()) => Err(format!("{line:?} --{} {value}: accepted, outside {b}", b.name)),
            Err(m) => Err(format!("{line:?} --{} {value}: refused, inside {b}: {m}", b.name)),
        }
    }

    /// Issue 29, items 1 and 6: every bounded option at its edges and one past them.
    #[test]
    fn every_bounded_option_takes_its_edges_and_refuses_one_past_them() {
        for (line, b) in bounded_options() {
            for value in edges(b) {
                judge(line, b, value).unwrap();
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 512, failure_persistence: None, ..Default::default()
        })]

        /// Fuzz: any option of the table, any whole number (near its edges, anywhere below
        /// 2^64, or past it): accepted exactly when in range, else exit 2 naming all three.
        #[test]
        fn any_number_for_any_bounded_option_is_judged_by_the_table(
            which in 0usize..64,
            kind in 0u8..4,
            offset in 0u64..3,
            any in proptest::prelude::any::<u64>(),
        ) {
            let all = bounded_options();
            let (line, b) = all[which % all.len()];
            let value = match kind {
                0 => b.min.saturating_sub(offset).to_string(),
                1 => b.max.saturating_add(offset).to_string(),
                2 => any.to_string(),
                _ => format!("{any}{offset}"), // often past u64::MAX
            };
            if let Err(e) = judge(line, b, value) {
                proptest::prop_assert!(false, "{}", e);
            }
        }
    }
}

/// `tlblab sim policies`.
#[derive(Debug, Args)]
pub struct PoliciesArgs {
    /// `show NAME`: one policy's switches.
    #[command(subcommand)]
    pub show: Option<PoliciesCommand>,
}

/// `tlblab sim policies show`.
#[derive(Debug, Subcommand)]
pub enum PoliciesCommand {
    /// Every switch of one policy (a built-in name, a `+` composition or a .toml file).
    Show {
        /// The policy.
        name: String,
        /// Print it as a policy file to edit: `base` is NAME and `[set]` lists every switch
        /// with its value (`tlblab sim run -p FILE` reads it back).
        #[arg(long)]
        toml: bool,
    },
}
