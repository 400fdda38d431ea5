//! A/B comparisons of configurations, with tlblab-stats' tests and verdict.

use serde::{Deserialize, Serialize};
use tlblab_env::{Difference, Environment, SystemLoad};
use tlblab_stats::{compare, harmonic_mean, CompareOptions, Comparison};

use crate::error::BenchError;
use crate::results::{BenchResults, ConfigResult, COMPARE_SCHEMA};

/// Settings of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareSettings {
    /// Changes within ± this fraction are never reported as significant (default 0.01).
    pub noise_threshold: f64,
    /// Significance level of Welch's test (default 0.05).
    pub significance: f64,
    /// Seed of the bootstrap (default 0).
    pub seed: u64,
}

impl Default for CompareSettings {
    fn default() -> CompareSettings {
        CompareSettings {
            noise_threshold: tlblab_stats::DEFAULT_NOISE,
            significance: 0.05,
            seed: 0,
        }
    }
}

/// One configuration of A against the same (or, within a session, another) of B.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConfigComparison {
    /// The baseline configuration's key.
    pub a: String,
    /// The candidate configuration's key.
    pub b: String,
    /// The unit.
    pub unit: String,
    /// Whether smaller is better.
    pub lower_is_better: bool,
    /// Harmonic means (for rates, where the arithmetic mean of rates misleads), when every
    /// value is > 0 and the unit is a rate.
    pub hmean: Option<(f64, f64)>,
    /// Summaries, tests, relative change, speedup and verdict.
    pub comparison: Comparison,
    /// Counters per operation present in both (name, mean per op in A, in B).
    pub counters_per_op: Vec<(String, f64, f64)>,
}

/// Two sessions compared: the document `tlblab compare --format json` prints, schema
/// [`COMPARE_SCHEMA`]. Read back, its summaries have no samples (see [`tlblab_stats::Summary`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultsComparison {
    /// [`COMPARE_SCHEMA`] (first, so that a reader can tell the document's kind at once).
    pub schema: String,
    /// Label of A (a baseline name or file).
    pub a_label: String,
    /// Label of B.
    pub b_label: String,
    /// One row per configuration, in A's order.
    pub rows: Vec<ConfigComparison>,
    /// Where the two environments, or the measurement settings (`method.*`), differ.
    pub environment_differences: Vec<Difference>,
    /// The noise threshold used.
    pub noise_threshold: f64,
    /// The load around A's runs (absent from comparisons saved by older tlblab).
    #[serde(default)]
    pub load_a: SystemLoad,
    /// The load around B's runs.
    #[serde(default)]
    pub load_b: SystemLoad,
}

/// Runs a configuration needs on each side to be compared: the tests need two samples (with
/// one, e.g. `--runs 1` or a session stopped early, the session table still shows the run).
pub const MIN_RUNS: usize = 2;

fn compare_configs(
    a: &ConfigResult,
    b: &ConfigResult,
    settings: &CompareSettings,
) -> Result<ConfigComparison, BenchError> {
    let options = CompareOptions {
        lower_is_better: a.config.lower_is_better,
        noise_threshold: settings.noise_threshold,
        significance: settings.significance,
        seed: settings.seed,
        ..CompareOptions::default()
    };
    let (va, vb) = (a.values(), b.values());
    let comparison = compare(&va, &vb, &options)
        .map_err(|source| BenchError::Stats { config: b.config.key(), source })?;
    let rate = a.config.unit.ends_with("/s");
    let hmean = rate.then(|| Some((harmonic_mean(&va).ok()?, harmonic_mean(&vb).ok()?))).flatten();
    let counters_per_op = a
        .counter_names()
        .into_iter()
        .filter_map(|n| Some((n.to_string(), a.counter_per_op(n)?, b.counter_per_op(n)?)))
        .collect();
    Ok(ConfigComparison {
        a: a.config.key(),
        b: b.config.key(),
        unit: a.config.unit.clone(),
        lower_is_better: a.config.lower_is_better,
        hmean,
        comparison,
        counters_per_op,
    })
}

/// Compares session `b` with session `a`, configuration by configuration. Refused (with the
/// configurations that differ) unless both measured the same scenarios with the same
/// parameters; configurations with fewer than [`MIN_RUNS`] runs in either are left out.
pub fn compare_results(
    (a_label, a): (&str, &BenchResults),
    (b_label, b): (&str, &BenchResults),
    settings: &CompareSettings,
) -> Result<ResultsComparison, BenchError> {
    let keys = |r: &BenchResults| r.configs.iter().map(|c| c.config.key()).collect::<Vec<_>>();
    let (ka, kb) = (keys(a), keys(b));
    let only_in_a: Vec<String> = ka.iter().filter(|k| !kb.contains(k)).cloned().collect();
    let only_in_b: Vec<String> = kb.iter().filter(|k| !ka.contains(k)).cloned().collect();
    if !only_in_a.is_empty() || !only_in_b.is_empty() {
        return Err(BenchError::Mismatch {
            a: a_label.to_string(),
            b: b_label.to_string(),
            only_in_a,
            only_in_b,
        });
    }
    let mut rows = Vec::new();
    for ca in &a.configs {
        let cb = b.configs.iter().find(|c| c.config.key() == ca.config.key()).expect("matched");
        if ca.runs.len() < MIN_RUNS || cb.runs.len() < MIN_RUNS {
            continue;
        }
        rows.push(compare_configs(ca, cb, settings)?);
    }
    Ok(ResultsComparison {
        schema: COMPARE_SCHEMA.to_string(),
        a_label: a_label.to_string(),
        b_label: b_label.to_string(),
        rows,
        environment_differences: differences(a, b),
        noise_threshold: settings.noise_threshold,
        load_a: a.environment.system_load.clone(),
        load_b: b.environment.system_load.clone(),
    })
}

/// Where two sessions' machines, kernels or measurement settings differ.
fn differences(a: &BenchResults, b: &BenchResults) -> Vec<Difference> {
    let mut diffs = Environment::differences(&a.environment, &b.environment);
    let (ma, mb) = (a.method.measurement_settings(), b.method.measurement_settings());
    for ((field, va), (_, vb)) in ma.into_iter().zip(mb) {
        if va != vb {
            diffs.push(Difference { field: field.to_string(), a: va, b: vb });
        }
    }
    diffs
}

/// Compares every configuration of one session with its first configuration of the same
/// scenario (e.g. `--busy 1` against `--busy 0`). Configurations with fewer than [`MIN_RUNS`]
/// runs are left out.
pub fn compare_within(
    results: &BenchResults,
    settings: &CompareSettings,
) -> Result<Vec<ConfigComparison>, BenchError> {
    let mut rows = Vec::new();
    for (i, c) in results.configs.iter().enumerate() {
        let first = results.configs[..i]
            .iter()
            .find(|f| f.config.scenario == c.config.scenario && f.runs.len() >= MIN_RUNS);
        if let Some(first) = first.filter(|_| c.runs.len() >= MIN_RUNS) {
            rows.push(compare_configs(first, c, settings)?);
        }
    }
    Ok(rows)
}
