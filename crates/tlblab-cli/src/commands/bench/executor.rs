//! The live executor: each configuration is prepared once (tasks started and pinned, memory
//! mapped at fixed addresses) and kept, blocked, between its runs; every run is a warm-up slice
//! followed by the measured slice, with the counters read around the measured part only.

use std::collections::BTreeMap;
use std::time::Duration;

use tlblab_bench::{BenchConfig, ExecError, Executor, HarnessOverhead, Method, RunRecord};
use tlblab_env::PmuCounters;
use tlblab_live::{prepare, LiveError, Placement, Prepared, RunLength, ScenarioSpec, StopHandle};
use tlblab_tracefs::Instance;

use super::configs::live_params;
use super::counters;

/// Length and number of the paired slices of the harness-overhead measurement.
const OVERHEAD_SLICE: Duration = Duration::from_millis(10);
const OVERHEAD_REPEATS: usize = 101;

/// Runs configurations on the live kernel.
pub struct LiveExecutor {
    placement: Placement,
    stop: StopHandle,
    prepared: BTreeMap<String, Prepared>,
    trace: Option<Instance>,
    pmu: Option<PmuCounters>,
}

/// How a live error ends a run: the configuration cannot run here, the user stopped, or a
/// failure.
fn exec_error(e: LiveError) -> ExecError {
    match e {
        LiveError::Interrupted => ExecError::Interrupted,
        LiveError::UnknownScenario { .. }
        | LiveError::BadParameter { .. }
        | LiveError::TooFewCpus { .. }
        | LiveError::CpuNotOnline { .. }
        | LiveError::Unsupported { .. } => ExecError::Unsupported(e.to_string()),
        e => ExecError::Failed(e.to_string()),
    }
}

impl LiveExecutor {
    /// An executor placing tasks by `placement`, stopped by `stop`, counting `tlb_flush` events
    /// in `trace` and PMU events with `pmu` when given.
    pub fn new(
        placement: Placement,
        stop: StopHandle,
        trace: Option<Instance>,
        pmu: Option<PmuCounters>,
    ) -> LiveExecutor {
        LiveExecutor { placement, stop, prepared: BTreeMap::new(), trace, pmu }
    }

    /// The prepared scenario of `config`, set up on first use.
    fn prepared(&mut self, config: &BenchConfig) -> Result<&mut Prepared, ExecError> {
        let key = config.key();
        if !self.prepared.contains_key(&key) {
            let params = live_params(&config.params).map_err(ExecError::Unsupported)?;
            let spec = ScenarioSpec { name: config.scenario.clone(), params };
            let mut prepared = prepare(&spec, &self.placement).map_err(exec_error)?;
            prepared.set_stop_handle(self.stop.clone());
            self.prepared.insert(key.clone(), prepared);
        }
        Ok(self.prepared.get_mut(&key).expect("inserted above"))
    }

    /// Measures the harness overhead on the first configuration whose measured loop runs on
    /// this thread (a bare loop of the same system calls is then possible): `None` when no
    /// configuration has one.
    pub fn harness_overhead(
        &mut self,
        configs: &[BenchConfig],
    ) -> Result<Option<HarnessOverhead>, ExecError> {
        for config in configs {
            let prepared = match self.prepared(config) {
                Ok(p) => p,
                Err(ExecError::Unsupported(_)) => continue,
                Err(e) => return Err(e),
            };
            match prepared.run_bare(1) {
                Err(LiveError::Unsupported { .. }) => continue,
                other => other.map_err(exec_error)?,
            };
            prepared.run(RunLength::Time(Duration::from_millis(200))).map_err(exec_error)?;
            let o = prepared
                .calibrate_overhead(OVERHEAD_SLICE, OVERHEAD_REPEATS)
                .map_err(exec_error)?;
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

impl Executor for LiveExecutor {
    fn run(&mut self, config: &BenchConfig, method: &Method) -> Result<RunRecord, ExecError> {
        let ms = Duration::from_millis;
        let prepared = self.prepared(config)?;
        if method.warmup_ms > 0 {
            let warm = prepared.run(RunLength::Time(ms(method.warmup_ms))).map_err(exec_error)?;
            if warm.interrupted {
                return Err(ExecError::Interrupted);
            }
        }
        let children = prepared.child_pids();
        // Split borrows: the prepared scenario lives in the map, the sources beside it.
        let prepared = self.prepared.get_mut(&config.key()).expect("prepared above");
        let before = counters::before(&children, self.trace.as_ref(), self.pmu.as_mut());
        let sample = prepared.run(RunLength::Time(ms(method.run_ms)));
        let (counters, warnings) =
            counters::after(before, &children, self.trace.as_ref(), self.pmu.as_mut());
        let sample = sample.map_err(exec_error)?;
        if sample.interrupted {
            // A partial run would bias the sample; the finished ones are kept.
            return Err(ExecError::Interrupted);
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
