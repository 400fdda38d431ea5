//! The result file: every raw sample, the method, and the environment (schema [`SCHEMA`],
//! documented in docs/bench-output.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tlblab_env::{Environment, Sources};

/// The schema name and version of a result file.
pub const SCHEMA: &str = "tlblab.bench/1";

/// The schema name and version of a saved comparison of two sessions (`tlblab compare
/// --format json`, [`crate::ResultsComparison`]).
pub const COMPARE_SCHEMA: &str = "tlblab.bench.compare/1";

/// One configuration: a scenario with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BenchConfig {
    /// The scenario's name (as in the simulator: `madvise-busy`).
    pub scenario: String,
    /// Its parameters, by the simulator's names (`busy` → `1`).
    pub params: BTreeMap<String, String>,
    /// The unit of a run's value (`µs/op`, `ops/s`, `s`).
    pub unit: String,
    /// Whether a smaller value is better.
    pub lower_is_better: bool,
}

impl BenchConfig {
    /// A configuration.
    pub fn new<'a>(
        scenario: &str,
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
        unit: &str,
        lower_is_better: bool,
    ) -> BenchConfig {
        BenchConfig {
            scenario: scenario.to_string(),
            params: params.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            unit: unit.to_string(),
            lower_is_better,
        }
    }

    /// The name under which configurations are matched: the scenario and its parameters in
    /// command-line form (`madvise-busy --busy 1`).
    pub fn key(&self) -> String {
        let mut key = self.scenario.clone();
        for (name, value) in &self.params {
            key.push_str(&format!(" --{name} {value}"));
        }
        key
    }
}

/// How the runs were made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// Measured runs per configuration.
    pub runs: usize,
    /// Warm-up before each measured run (after its setup), ms.
    pub warmup_ms: u64,
    /// Length of each measured run, ms (whole operations until it is reached; a scenario that
    /// is one fixed job, like `pthread-mmap`, ignores it).
    pub run_ms: u64,
    /// Runs of the configurations alternate, round by round, in a seeded random order (else
    /// each configuration's runs follow each other).
    pub interleaved: bool,
    /// Seed of the run order (and of the statistics' bootstrap).
    pub seed: u64,
    /// The CPUs the tasks were placed on, in the kernel's list format, if given (else each
    /// scenario's default placement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<String>,
    /// Whether the `tlb:tlb_flush` tracepoint was enabled during the measured runs (it adds the
    /// cost of recording an event to every flush, on both sides of a comparison).
    #[serde(default)]
    pub flush_trace: bool,
}

impl Default for Method {
    fn default() -> Method {
        Method {
            runs: 10,
            warmup_ms: 100,
            run_ms: 500,
            interleaved: true,
            seed: 0,
            cpus: None,
            flush_trace: false,
        }
    }
}

impl Method {
    /// The settings that make two sessions' values comparable, as (name, value) for listing
    /// where they differ: run length, warm-up, placement, tracing. (Run count, order and seed
    /// only change the precision.)
    pub fn measurement_settings(&self) -> [(&'static str, String); 4] {
        [
            ("method.run_ms", self.run_ms.to_string()),
            ("method.warmup_ms", self.warmup_ms.to_string()),
            ("method.cpus", self.cpus.clone().unwrap_or_else(|| "default".into())),
            ("method.flush_trace", self.flush_trace.to_string()),
        ]
    }
}

/// One measured run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Position of the run in the session (from 0), across configurations.
    pub sequence: usize,
    /// The value, in the configuration's unit.
    pub value: f64,
    /// Operations done in the run (summed over tasks).
    pub ops: u64,
    /// Wall-clock length of the measured part, ns.
    pub elapsed_ns: u64,
    /// Counter deltas over the measured part, by name (`irq.tlb`, `irq.tlb.cpu1`,
    /// `tlb_flush.reason1`, `rusage.minor_faults`, …; docs/bench-output.md lists them). A
    /// counter whose source was unavailable is absent.
    pub counters: BTreeMap<String, u64>,
    /// Anything odd about this run (a partial run, lost trace events).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A configuration and its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    /// The configuration.
    pub config: BenchConfig,
    /// Its measured runs, in the order they ran.
    pub runs: Vec<RunRecord>,
    /// Why it has no (or fewer) runs, if it could not run here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl ConfigResult {
    /// The runs' values.
    pub fn values(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.value).collect()
    }

    /// The names of the counters any run has, sorted.
    pub fn counter_names(&self) -> std::collections::BTreeSet<&str> {
        self.runs.iter().flat_map(|r| r.counters.keys().map(String::as_str)).collect()
    }

    /// The mean over runs of a counter per operation, if every run has it.
    pub fn counter_per_op(&self, name: &str) -> Option<f64> {
        let mut sum = 0.0;
        for r in &self.runs {
            sum += *r.counters.get(name)? as f64 / r.ops.max(1) as f64;
        }
        (!self.runs.is_empty()).then(|| sum / self.runs.len() as f64)
    }
}

/// The cost of the harness's own loop, measured against a bare loop of the same system calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessOverhead {
    /// The configuration it was measured on.
    pub config: String,
    /// Median ns per operation of the bare loop.
    pub bare_ns_per_op: f64,
    /// Median ns per operation with the harness.
    pub harness_ns_per_op: f64,
    /// Median over the paired repeats of `harness / bare − 1`, in percent (negative values are
    /// noise).
    pub percent: f64,
    /// First quartile of the per-repeat percentages.
    pub percent_p25: f64,
    /// Third quartile of the per-repeat percentages.
    pub percent_p75: f64,
    /// Paired repeats behind the medians.
    pub repeats: usize,
    /// The harness's own cost per operation, timed around an empty operation, ns.
    pub machinery_ns_per_op: f64,
    /// `machinery_ns_per_op` as a percentage of `bare_ns_per_op`: the overhead's bound, far
    /// below what the noisy paired repeats can resolve.
    pub machinery_percent: f64,
}

/// A benchmark session's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// [`SCHEMA`].
    pub schema: String,
    /// The machine and kernel.
    pub environment: Environment,
    /// Which counter sources were available.
    pub sources: Sources,
    /// How the runs were made.
    pub method: Method,
    /// The kernel's labels of the `tlb_flush` reasons counted as `tlb_flush.reasonR` (from the
    /// tracepoint's format), when the tracepoint was used.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flush_reasons: BTreeMap<i32, String>,
    /// The harness overhead, if it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_overhead: Option<HarnessOverhead>,
    /// The configurations, in the order given.
    pub configs: Vec<ConfigResult>,
    /// The session was stopped before every run was done.
    pub interrupted: bool,
}

impl BenchResults {
    /// Empty results for `configs`.
    pub fn new(
        configs: Vec<BenchConfig>,
        method: Method,
        environment: Environment,
        sources: Sources,
    ) -> BenchResults {
        BenchResults {
            schema: SCHEMA.to_string(),
            environment,
            sources,
            method,
            flush_reasons: BTreeMap::new(),
            harness_overhead: None,
            configs: configs
                .into_iter()
                .map(|config| ConfigResult { config, runs: Vec::new(), skipped: None })
                .collect(),
            interrupted: false,
        }
    }
}
