//! `tlblab compare A B`: two saved benchmark results, configuration by configuration.

use crate::cli::{CompareArgs, OutputFormat};
use crate::commands::noise_fraction;
use anyhow::Result;
use std::process::ExitCode;
use tlblab_bench::render::{self, Format};
use tlblab_bench::{
    compare_results, BaselineStore, BenchError, BenchResults, CompareSettings, MIN_RUNS,
};

/// Runs `tlblab compare`.
pub fn run(args: &CompareArgs) -> Result<ExitCode> {
    let noise_threshold = noise_fraction(args.noise)?;
    args.output.check()?;
    let store =
        args.baseline_dir.as_ref().map_or_else(BaselineStore::default_location, BaselineStore::new);
    // The store's errors name the file or the baseline.
    let a = store.load(&args.a)?;
    let b = store.load(&args.b)?;
    let settings = CompareSettings { noise_threshold, ..CompareSettings::default() };
    let cmp = compare_results((&args.a, &a), (&args.b, &b), &settings).map_err(|e| {
        // The statistics' errors name the configuration only.
        let files = matches!(e, BenchError::Stats { .. });
        let e = anyhow::Error::new(e);
        if files {
            e.context(format!("comparing {} with {}", args.a, args.b))
        } else {
            e
        }
    })?;
    let format = match args.format.get() {
        OutputFormat::Text => Format::Table,
        OutputFormat::Markdown => Format::Markdown,
        OutputFormat::Csv => Format::Csv,
        OutputFormat::Json => Format::Json,
    };
    let text = render::comparison(&cmp, format);
    if matches!(format, Format::Json | Format::Csv) {
        args.output.emit_data(&text)?;
    } else {
        args.output.emit(&text)?;
    }
    let few = too_few_runs(&[&a, &b]);
    if !few.is_empty() {
        eprintln!("tlblab: not compared, fewer than {MIN_RUNS} runs: {}", few.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

/// The configurations measured, but fewer than [`MIN_RUNS`] times, in any of `sessions`: the
/// comparisons leave them out, and the user is told so.
pub fn too_few_runs(sessions: &[&BenchResults]) -> Vec<String> {
    let mut keys: Vec<String> = sessions
        .iter()
        .flat_map(|s| &s.configs)
        .filter(|c| (1..MIN_RUNS).contains(&c.runs.len()))
        .map(|c| c.config.key())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}
