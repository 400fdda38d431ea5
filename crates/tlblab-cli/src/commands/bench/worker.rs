//! One process per configuration.
//!
//! Configurations of one session must not share an mm: a thread that one configuration left on
//! another CPU keeps that CPU in the mm's cpumask, and the next configuration's flushes would
//! look at it (seen: 0.12 IPI sends per op in `madvise-busy --busy 0` when `--busy 1` ran in the
//! same process). So each configuration is prepared and run in its own worker, this binary
//! started again as `tlblab bench-worker`, which takes one JSON request per line on stdin and
//! answers one JSON line on stdout. The parent reads the counters around each request, and
//! sleeps in a read while the worker measures.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tlblab_bench::{BenchConfig, ExecError};
use tlblab_env::{PmuCounters, PmuReading, Source};
use tlblab_live::{
    online_cpus, prepare, LiveError, Overhead, Placement, Prepared, RunLength, RunSample,
    ScenarioSpec, StopHandle,
};

use super::configs::live_params;

/// Length and number of the paired slices of the harness-overhead measurement.
const OVERHEAD_SLICE: Duration = Duration::from_millis(10);
const OVERHEAD_REPEATS: usize = 101;

/// What the parent asks.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
    /// Set the configuration up (once, first).
    Prepare { config: BenchConfig, placement: Placement },
    /// One run of `ms` (warm-up or measured).
    Run { ms: u64 },
    /// The harness overhead against a bare loop.
    Overhead,
}

/// What the worker answers.
#[derive(Debug, Serialize, Deserialize)]
enum Response {
    Prepared { child_pids: Vec<i32> },
    Sample { sample: RunSample, pmu: Option<Result<PmuReading, String>> },
    Overhead(Overhead),
    Error(ExecError),
}

/// How a live error ends a request: the configuration cannot run here, the user stopped, or a
/// failure.
fn failure(e: LiveError) -> ExecError {
    match e {
        LiveError::Interrupted => ExecError::Interrupted,
        LiveError::UnknownScenario { .. }
        | LiveError::BadParameter { .. }
        | LiveError::TooFewCpus { .. }
        | LiveError::CpuNotOnline { .. }
        | LiveError::Unsupported { .. } => {
            ExecError::Unsupported(tlblab_types::plain::error_chain(&e))
        }
        e => ExecError::Failed(tlblab_types::plain::error_chain(&e)),
    }
}

/// `tlblab bench-worker`: serves requests until stdin closes, then tears the scenario down.
pub fn serve() -> Result<ExitCode> {
    // Ctrl-C reaches the whole process group: it ends the current run here, and the parent
    // stops the session.
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, flag.clone()).context("installing a signal handler")?;
    }
    let mut prepared: Option<Prepared> = None;
    // Opened before the tasks start, so that it counts the threads they create.
    let mut pmu = match PmuCounters::open() {
        Source::Available(p) => Some(p),
        Source::Unavailable { .. } => None,
    };
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let request: Request = serde_json::from_str(&line.context("reading a request")?)
            .context("bench-worker: not a request")?;
        let response = match (request, prepared.as_mut()) {
            (Request::Prepare { config, placement }, None) => {
                match prepare_config(&config, &placement, &flag) {
                    Ok(p) => {
                        let child_pids = p.child_pids();
                        prepared = Some(p);
                        Response::Prepared { child_pids }
                    }
                    Err(f) => Response::Error(f),
                }
            }
            (Request::Run { ms }, Some(p)) => {
                let started = pmu.as_mut().map(|c| c.reset().and_then(|()| c.enable()));
                let sample = p.run(RunLength::Time(Duration::from_millis(ms)));
                let reading = pmu.as_mut().zip(started).map(|(c, started)| {
                    started
                        .and_then(|()| c.disable())
                        .and_then(|()| c.read())
                        .map_err(|e| tlblab_types::plain::error_chain(&e))
                });
                match sample {
                    Ok(sample) => Response::Sample { sample, pmu: reading },
                    Err(e) => Response::Error(failure(e)),
                }
            }
            (Request::Overhead, Some(p)) => match overhead(p) {
                Ok(o) => Response::Overhead(o),
                Err(e) => Response::Error(failure(e)),
            },
            (request, _) => Response::Error(ExecError::Failed(format!(
                "bench-worker: {request:?} out of order"
            ))),
        };
        serde_json::to_writer(&mut out, &response)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

fn prepare_config(
    config: &BenchConfig,
    placement: &Placement,
    flag: &Arc<AtomicBool>,
) -> Result<Prepared, ExecError> {
    let params = live_params(&config.params).map_err(ExecError::Unsupported)?;
    let spec = ScenarioSpec { name: config.scenario.clone(), params };
    let mut prepared = prepare(&spec, placement).map_err(failure)?;
    prepared.set_stop_handle(StopHandle::from_flag(flag.clone()));
    Ok(prepared)
}

fn overhead(p: &mut Prepared) -> Result<Overhead, LiveError> {
    p.run_bare(1)?; // refuses scenarios without a single measured loop, before the warm-up
    p.run(RunLength::Time(Duration::from_millis(200)))?;
    p.calibrate_overhead(OVERHEAD_SLICE, OVERHEAD_REPEATS)
}

/// A configuration's worker, seen from the session.
pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The worker and its forked tasks: whose faults and switches a run counts.
    pub pids: Vec<i32>,
}

impl Worker {
    /// Starts a worker and prepares `config` in it.
    pub fn start(config: &BenchConfig, placement: &Placement) -> Result<Worker, ExecError> {
        let exe = std::env::current_exe().map_err(|e| {
            ExecError::Failed(format!("finding this program to start a worker: {e}"))
        })?;
        // Start the worker on its first task's CPU: an mm remembers every CPU it ran on until
        // the kernel trims its cpumask, and a CPU it started on would draw flush IPIs.
        let first_cpu = match &placement.cpus {
            Some(cpus) => cpus.first().copied(),
            None => online_cpus().ok().and_then(|c| c.first().copied()),
        };
        let spawn = || {
            let mut command = Command::new(&exe);
            command.arg("bench-worker").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()
        };
        let mut child = match first_cpu {
            Some(cpu) => with_affinity(cpu, spawn),
            None => spawn(),
        }
        .map_err(|e| ExecError::Failed(format!("starting {} bench-worker: {e}", exe.display())))?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let stdout = BufReader::new(stdout.expect("stdout is piped"));
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        let mut worker = Worker { child, stdin, stdout, pids: vec![pid] };
        let request = Request::Prepare { config: config.clone(), placement: placement.clone() };
        match worker.ask(&request)? {
            Response::Prepared { child_pids } => worker.pids.extend(child_pids),
            other => return Err(unexpected(other)),
        }
        Ok(worker)
    }

    /// One run of `ms`, with the PMU reading taken around it if the worker has a PMU.
    pub fn run(
        &mut self,
        ms: u64,
    ) -> Result<(RunSample, Option<Result<PmuReading, String>>), ExecError> {
        match self.ask(&Request::Run { ms })? {
            Response::Sample { sample, pmu } => Ok((sample, pmu)),
            other => Err(unexpected(other)),
        }
    }

    /// The harness overhead of this configuration's loop.
    pub fn overhead(&mut self) -> Result<Overhead, ExecError> {
        match self.ask(&Request::Overhead)? {
            Response::Overhead(o) => Ok(o),
            other => Err(unexpected(other)),
        }
    }

    fn ask(&mut self, request: &Request) -> Result<Response, ExecError> {
        let lost = |what: &str, e: &dyn std::fmt::Display| {
            ExecError::Failed(format!("bench worker (pid {}): {what}: {e}", self.child.id()))
        };
        let stdin = self.stdin.as_mut().expect("open until drop");
        let mut line = serde_json::to_string(request).map_err(|e| lost("request", &e))?;
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| lost("writing", &e))?;
        let mut answer = String::new();
        match self.stdout.read_line(&mut answer) {
            Ok(0) => {
                let status = self.child.wait().map_or("unknown".into(), |s| s.to_string());
                Err(ExecError::Failed(format!(
                    "bench worker (pid {}) ended ({status})",
                    self.child.id()
                )))
            }
            Ok(_) => match serde_json::from_str(&answer).map_err(|e| lost("answer", &e))? {
                Response::Error(e) => Err(e),
                response => Ok(response),
            },
            Err(e) => Err(lost("reading", &e)),
        }
    }
}

/// Runs `f` with this thread pinned to `cpu`, then restores its affinity (children started in
/// `f` inherit the pinning).
fn with_affinity<T>(cpu: usize, f: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    let this = Pid::from_raw(0);
    let saved = sched_getaffinity(this)?;
    let mut one = CpuSet::new();
    one.set(cpu)?;
    sched_setaffinity(this, &one)?;
    let result = f();
    sched_setaffinity(this, &saved)?;
    result
}

fn unexpected(response: Response) -> ExecError {
    ExecError::Failed(format!("bench worker: unexpected answer {response:?}"))
}

impl Drop for Worker {
    /// Closing stdin ends the worker, which stops its tasks and exits; then it is reaped.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}
