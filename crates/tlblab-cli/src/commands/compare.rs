//! `tlblab compare A B`: two saved benchmark results, configuration by configuration.

use crate::cli::{CompareArgs, OutputFormat};
use crate::commands::noise_fraction;
use anyhow::Result;
use std::process::ExitCode;
use tlblab_bench::render::{self, Format};
use tlblab_bench::{compare_results, BaselineStore, CompareSettings};

/// Runs `tlblab compare`.
pub fn run(args: &CompareArgs) -> Result<ExitCode> {
    let noise_threshold = noise_fraction(args.noise)?;
    args.output.check()?;
    let store =
        args.baseline_dir.as_ref().map_or_else(BaselineStore::default_location, BaselineStore::new);
    // The store's errors name the file (or the baseline and its directory).
    let a = store.load(&args.a)?;
    let b = store.load(&args.b)?;
    let settings = CompareSettings { noise_threshold, ..CompareSettings::default() };
    let cmp = compare_results((&args.a, &a), (&args.b, &b), &settings)?;
    let format = match args.format.get() {
        OutputFormat::Text => Format::Table,
        OutputFormat::Markdown => Format::Markdown,
        OutputFormat::Csv => Format::Csv,
        OutputFormat::Json => Format::Json,
    };
    args.output.emit(&render::comparison(&cmp, format))?;
    Ok(ExitCode::SUCCESS)
}
