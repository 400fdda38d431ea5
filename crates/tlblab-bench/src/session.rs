//! A session: the runs of some configurations, in order, with the results kept up to date.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use rand_pcg::rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use tlblab_env::{Environment, ProcessSample, Sources};

use crate::error::{BenchError, ExecError};
use crate::executor::Executor;
use crate::results::{BenchConfig, BenchResults, Method, RunRecord};
use crate::store::write_atomic;

/// Told about a session's progress (a progress bar; `()` ignores it).
pub trait Progress {
    /// `total` runs are planned.
    fn start(&mut self, _total: usize) {}
    /// A run of `config` is done (`done` of `total`), or skipped when `record` is `None`.
    fn run_done(&mut self, _config: &BenchConfig, _record: Option<&RunRecord>, _done: usize) {}
}

impl Progress for () {}

/// Runs configurations and keeps their results.
pub struct Session {
    results: BenchResults,
    output: Option<PathBuf>,
    /// Every process's CPU time when the session started, for the competing processes.
    processes: Result<ProcessSample, String>,
}

impl Session {
    /// A session of `configs`, capturing this machine's environment now. With `output`, the
    /// results are written there (atomically) after every run.
    pub fn new(configs: Vec<BenchConfig>, method: Method, output: Option<PathBuf>) -> Session {
        let results = BenchResults::new(configs, method, Environment::capture(), Sources::probe());
        Session { results, output, processes: ProcessSample::take() }
    }

    /// The results so far.
    pub fn results(&self) -> &BenchResults {
        &self.results
    }

    /// The results, to change them (e.g. to add the harness overhead).
    pub fn results_mut(&mut self) -> &mut BenchResults {
        &mut self.results
    }

    /// The order of the runs: `(configuration, run)` pairs. Interleaved, each round runs every
    /// configuration once, in an order drawn from the seed (a Fisher–Yates shuffle per round);
    /// otherwise configuration by configuration.
    pub fn schedule(method: &Method, configs: usize) -> Vec<(usize, usize)> {
        if !method.interleaved {
            return (0..configs).flat_map(|c| (0..method.runs).map(move |r| (c, r))).collect();
        }
        let mut rng = Pcg64Mcg::seed_from_u64(method.seed);
        let mut order = Vec::with_capacity(configs * method.runs);
        for round in 0..method.runs {
            let mut round_order: Vec<usize> = (0..configs).collect();
            for i in (1..configs).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                round_order.swap(i, j);
            }
            order.extend(round_order.into_iter().map(|c| (c, round)));
        }
        order
    }

    /// Makes every planned run with `executor`, until done or until `stop` is set (then the
    /// results say `interrupted`, and keep every finished run). A configuration the executor
    /// finds unsupported is skipped with its reason; any other failure ends the session, after
    /// the results so far are written.
    pub fn run(
        &mut self,
        executor: &mut dyn Executor,
        stop: &AtomicBool,
        progress: &mut dyn Progress,
    ) -> Result<&BenchResults, BenchError> {
        let method = self.results.method.clone();
        let order = Session::schedule(&method, self.results.configs.len());
        progress.start(order.len());
        let mut sequence = self.results.configs.iter().map(|c| c.runs.len()).sum::<usize>();
        for (done, &(c, _round)) in order.iter().enumerate() {
            if stop.load(Ordering::SeqCst) {
                self.results.interrupted = true;
                break;
            }
            let entry = &mut self.results.configs[c];
            if entry.skipped.is_some() {
                progress.run_done(&entry.config, None, done + 1);
                continue;
            }
            match executor.run(&entry.config, &method) {
                Ok(mut record) => {
                    record.sequence = sequence;
                    sequence += 1;
                    entry.runs.push(record);
                    progress.run_done(&entry.config, entry.runs.last(), done + 1);
                }
                Err(ExecError::Interrupted) => {
                    self.results.interrupted = true;
                    break;
                }
                Err(ExecError::Unsupported(reason)) => {
                    entry.skipped = Some(reason);
                    progress.run_done(&entry.config, None, done + 1);
                }
                Err(source) => {
                    let (config, run) = (entry.config.key(), entry.runs.len() + 1);
                    self.results.environment.system_load.finish(&self.processes);
                    self.save()?;
                    return Err(BenchError::Run { config, run, source });
                }
            }
            self.save()?;
        }
        self.results.environment.system_load.finish(&self.processes);
        self.save()?;
        Ok(&self.results)
    }

    /// Writes the results to the output file, if there is one.
    pub fn save(&self) -> Result<(), BenchError> {
        match &self.output {
            Some(path) => write_atomic(path, &self.results),
            None => Ok(()),
        }
    }
}
