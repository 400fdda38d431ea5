//! Sweeps (crate `tlblab-sweep`): the plan and its results directory as a Python object, the
//! local engine on it, and the call a Ray worker makes to run a batch of jobs.

use crate::Failure;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;
use tlblab_sweep::{execute, job_from_json, row_from_json, Plan, SweepError, Writer};

/// A sweep's plan and its results directory (`tlblab sweep SPEC -o DIR`), for an engine: it
/// hands out the jobs still to run, journals each row as it comes back (once per job, whatever
/// retries send it again), and writes the results and summary at the end.
#[pyclass(module = "tlblab._core")]
pub struct Sweep {
    /// `None` once finished.
    writer: Option<Writer>,
    out: PathBuf,
    name: String,
}

impl Sweep {
    fn writer(&mut self) -> Result<&mut Writer, Failure> {
        self.writer.as_mut().ok_or_else(|| Failure("the sweep is already finished".into()))
    }
}

#[pymethods]
impl Sweep {
    /// Loads and checks the whole spec, realising every job (errors name its file, line and
    /// key), and opens the results directory `out` (default `sweep-NAME`) as `tlblab sweep`
    /// does: a directory with results needs `resume` (go on) or `force` (start over).
    #[new]
    #[pyo3(signature = (spec, out=None, resume=false, force=false))]
    fn new(
        py: Python<'_>,
        spec: PathBuf,
        out: Option<PathBuf>,
        resume: bool,
        force: bool,
    ) -> PyResult<Sweep> {
        Ok(py.detach(|| -> Result<Sweep, Failure> {
            let plan = Plan::load(&spec)?;
            let name = plan.spec.name.clone();
            let out = out.unwrap_or_else(|| PathBuf::from(format!("sweep-{name}")));
            let writer = Writer::open(&out, &plan, resume, force)?;
            Ok(Sweep { writer: Some(writer), out, name })
        })?)
    }

    /// The results directory.
    #[getter]
    fn out(&self) -> PathBuf {
        self.out.clone()
    }

    /// The spec's name.
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    /// The number of jobs in the sweep.
    fn total(&mut self) -> PyResult<usize> {
        Ok(self.writer()?.plan().jobs().len())
    }

    /// The number of jobs recorded so far (resumed ones included).
    fn done(&mut self) -> PyResult<u64> {
        Ok(self.writer()?.done())
    }

    /// The number of jobs found recorded when the directory was opened with `resume`.
    fn resumed(&mut self) -> PyResult<u64> {
        Ok(self.writer()?.resumed())
    }

    /// The jobs (each as JSON) with no row in the directory yet, in the sweep's order.
    fn pending(&mut self) -> PyResult<Vec<String>> {
        let jobs = self.writer()?.pending();
        Ok(jobs
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<_, _>>()
            .map_err(Failure::from)?)
    }

    /// Journals one row (its JSON) at once; `False` when its job already has one (a retried
    /// task's), which is then ignored.
    fn record(&mut self, row: &str) -> PyResult<bool> {
        let row = row_from_json(row).map_err(Failure::from)?;
        Ok(self.writer()?.record(row).map_err(Failure::from)?)
    }

    /// Runs the pending jobs on every core of this machine (the local engine, without the GIL),
    /// recording each row as it finishes. `progress(done, total, failed)` is called about every
    /// half second from this thread. Ctrl-C (KeyboardInterrupt) stops the sweep: no job starts,
    /// the running ones are abandoned (not recorded; their runs end within a few thousand
    /// events, not in the background of the session), and the KeyboardInterrupt is raised.
    ///
    /// Raises TlblabError for the first failed job (in plan order) once the others have run.
    #[pyo3(signature = (progress=None))]
    fn run_local(&mut self, py: Python<'_>, progress: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let out = self.out.display().to_string();
        let writer = self.writer()?;
        let counts = Counts::default();
        let (tx, rx) = mpsc::channel();
        // Waited on without the GIL, so shared with that closure.
        let rx = Mutex::new(rx);
        // A KeyboardInterrupt or an error of `progress`: raised once the engine has stopped
        // (at once: it abandons the running jobs).
        let mut raised: Option<PyErr> = None;
        let ran = std::thread::scope(|scope| {
            let counts = &counts;
            scope.spawn(move || {
                let _ = tx.send(tlblab_sweep::run_local(writer, counts));
            });
            loop {
                let waited = py.detach(|| {
                    rx.lock().expect("one waiter").recv_timeout(Duration::from_millis(500))
                });
                if let (Some(p), None) = (&progress, &raised) {
                    if let Err(e) = p.call1(counts.snapshot()) {
                        counts.stop.store(true, Ordering::Relaxed);
                        raised = Some(e);
                    }
                }
                match waited {
                    Ok(ran) => return ran,
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(SweepError::Output {
                            dir: out.clone(),
                            message: "the local engine stopped without a result".into(),
                        })
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
                if raised.is_none() {
                    if let Err(e) = py.check_signals() {
                        counts.stop.store(true, Ordering::Relaxed);
                        raised = Some(e);
                    }
                }
            }
        });
        if let Some(e) = raised {
            return Err(e);
        }
        Ok(ran.map_err(Failure::from)?)
    }

    /// Writes the results (`results.jsonl`, `results.parquet`, in the sweep's order) and the
    /// summary (`summary.json`, `summary.txt`); the summary's JSON as `summary.json` has it
    /// (`tlblab sweep --format json`). Every job must have its row.
    fn finish(&mut self, py: Python<'_>) -> PyResult<String> {
        let writer =
            self.writer.take().ok_or_else(|| Failure("the sweep is already finished".into()))?;
        let summary = py.detach(|| writer.finish()).map_err(Failure::from)?;
        Ok(crate::json(&summary)?)
    }
}

/// The local engine's progress as the Python side polls it, and its stop flag.
#[derive(Default)]
struct Counts {
    total: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    stop: AtomicBool,
}

impl Counts {
    fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.done.load(Ordering::Relaxed),
            self.total.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }
}

impl tlblab_sweep::Progress for Counts {
    fn start(&self, total: u64, done: u64) {
        self.total.store(total, Ordering::Relaxed);
        self.done.store(done, Ordering::Relaxed);
    }

    fn finished(&self, ok: bool) {
        if ok {
            self.done.fetch_add(1, Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs each job (its JSON, from `Sweep.pending()`) in this thread without the GIL; the rows'
/// JSON for `Sweep.record()`, in the jobs' order. What a Ray task of the Ray engine calls in its
/// worker. Raises TlblabError for the first job that fails, naming it.
#[pyfunction]
pub fn execute_jobs(py: Python<'_>, jobs: Vec<String>) -> PyResult<Vec<String>> {
    Ok(py.detach(|| -> Result<Vec<String>, Failure> {
        jobs.iter()
            .map(|text| {
                let row = execute(&job_from_json(text)?)?;
                Ok(serde_json::to_string(&row)?)
            })
            .collect()
    })?)
}
