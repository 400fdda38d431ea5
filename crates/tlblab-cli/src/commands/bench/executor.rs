//! The live executor: each configuration is prepared once, in its own worker process (see
//! [`super::worker`]), and kept, blocked, between its runs; every run is a warm-up slice followed
//! by the measured slice, with the counters read around the request.

use std::collections::BTreeMap;

use tlblab_bench::{BenchConfig, ExecError, Executor, HarnessOverhead, Method, RunRecord};
use tlblab_live::Placement;
use tlblab_tracefs::Instance;

use super::counters;
use super::worker::Worker;

/// Runs configurations on the live kernel.
pub struct LiveExecutor {
    placement: Placement,
    workers: BTreeMap<String, Worker>,
    trace: Option<Instance>,
}

impl LiveExecutor {
    /// An executor placing tasks by `placement`, counting `tlb_flush` events in `trace` when
    /// given.
    pub fn new(placement: Placement, trace: Option<Instance>) -> Self {
        LiveExecutor { placement, workers: BTreeMap::new(), trace }
    }

    /// Measures the harness overhead on the first configuration whose measured loop runs on
    /// one thread (a bare loop of the same system calls is then possible): `None` when no
    /// configuration has one.
    pub fn harness_overhead(
        &mut self,
        configs: &[BenchConfig],
    ) -> Result<Option<HarnessOverhead>, ExecError> {
        for config in configs {
            let worker = worker(&mut self.workers, config, &self.placement);
            let o = match worker.and_then(Worker::overhead) {
                Ok(o) => o,
                Err(ExecError::Unsupported(_)) => continue,
                Err(e) => return Err(e),
            };
            return Ok(Some(HarnessOverhead {
                config: config.key(),
                bare_ns_per_op: o.bare_ns_per_op,
                harness_ns_per_op: o.harness_ns_per_op,
                percent: o.percent,
                percent_p25: o.percent_p25,
                percent_p75: o.percent_p75,
                repeats: o.repeats,
                machinery_ns_per_op: o.machinery_ns_per_op,
                machinery_percent: o.machinery_percent,
            }));
        }
        Ok(None)
    }
}

/// The worker of `config`, started on first use.
fn worker<'w>(
    workers: &'w mut BTreeMap<String, Worker>,
    config: &BenchConfig,
    placement: &Placement,
) -> Result<&'w mut Worker, ExecError> {
    let key = config.key();
    if !workers.contains_key(&key) {
        workers.insert(key.clone(), Worker::start(config, placement)?);
    }
    Ok(workers.get_mut(&key).expect("inserted above"))
}

impl Executor for LiveExecutor {
    fn run(&mut self, config: &BenchConfig, method: &Method) -> Result<RunRecord, ExecError> {
        let worker = worker(&mut self.workers, config, &self.placement)?;
        // The warm-up is a request of its own, so that the counters leave it out.
        if method.warmup_ms > 0 && worker.run(method.warmup_ms)?.0.interrupted {
            return Err(ExecError::Interrupted);
        }
        let trace = self.trace.as_ref();
        let before = counters::before(&worker.pids, trace);
        let result = worker.run(method.run_ms);
        let (mut counters, mut warnings) = counters::after(before, &worker.pids, trace);
        let (sample, pmu) = result?;
        if sample.interrupted {
            // A partial run would bias the sample; the finished ones are kept.
            return Err(ExecError::Interrupted);
        }
        match pmu {
            Some(Ok(reading)) => counters::pmu(&reading, &mut counters, &mut warnings),
            Some(Err(e)) => warnings.push(format!("PMU counters not read: {e}")),
            None => {}
        }
        Ok(RunRecord {
            sequence: 0,
            value: sample.value,
            ops: sample.ops,
            elapsed_ns: sample.elapsed_ns,
            counters,
            warnings,
        })
    }
}
