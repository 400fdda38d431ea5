//! What makes one run: the live scenarios, or scripted samples.

use std::collections::{BTreeMap, VecDeque};

use crate::error::ExecError;
use crate::results::{BenchConfig, Method, RunRecord};

/// Performs one measured run of a configuration: set up, warm up, measure, tear down.
pub trait Executor {
    /// One run. Return [`ExecError::Interrupted`] when stopped, and
    /// [`ExecError::Unsupported`] when the configuration cannot run on this machine.
    fn run(&mut self, config: &BenchConfig, method: &Method) -> Result<RunRecord, ExecError>;
}

/// An executor that returns scripted values, in order, per configuration: for tests of the
/// schedule, the statistics and the exports without timing noise. Each run reports 1,000
/// operations over `value × 1,000` ns and a `calls` counter (the run's number, from 1).
#[derive(Debug, Default)]
pub struct MockExecutor {
    scripts: BTreeMap<String, VecDeque<f64>>,
    unsupported: BTreeMap<String, String>,
    /// Configuration keys in the order their runs were asked for.
    pub calls: Vec<String>,
}

impl MockExecutor {
    /// The values that `config`'s runs return, in order.
    pub fn script(&mut self, config: &BenchConfig, values: impl IntoIterator<Item = f64>) {
        self.scripts.entry(config.key()).or_default().extend(values);
    }

    /// Makes `config` unsupported, for `reason`.
    pub fn refuse(&mut self, config: &BenchConfig, reason: &str) {
        self.unsupported.insert(config.key(), reason.to_string());
    }
}

impl Executor for MockExecutor {
    fn run(&mut self, config: &BenchConfig, _method: &Method) -> Result<RunRecord, ExecError> {
        let key = config.key();
        self.calls.push(key.clone());
        if let Some(reason) = self.unsupported.get(&key) {
            return Err(ExecError::Unsupported(reason.clone()));
        }
        let value = self
            .scripts
            .get_mut(&key)
            .and_then(VecDeque::pop_front)
            .ok_or_else(|| ExecError::Failed(format!("no scripted value left for {key}")))?;
        let calls = self.calls.iter().filter(|k| **k == key).count() as u64;
        Ok(RunRecord {
            sequence: 0,
            value,
            ops: 1000,
            elapsed_ns: (value * 1000.0) as u64,
            counters: BTreeMap::from([("calls".to_string(), calls)]),
            warnings: Vec::new(),
        })
    }
}
