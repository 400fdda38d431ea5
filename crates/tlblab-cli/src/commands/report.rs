//! `tlblab report`: saved results as one HTML page or as Markdown.

use crate::cli::{ReportArgs, ReportFormat};
use anyhow::{Context, Result};
use std::process::ExitCode;
use tlblab_report::Report;

/// Renders every input, in order.
pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    if let Some(out) = &args.output {
        super::refuse_existing(out, args.force)?;
    }
    let mut report = Report::new(&args.title);
    for input in &args.inputs {
        report.add_file(input)?;
    }
    let text = match args.format {
        ReportFormat::Html => report.render_html(),
        ReportFormat::Markdown => report.render_markdown(),
    };
    match &args.output {
        Some(path) => {
            tlblab_types::atomic::write_file(path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("tlblab: report: {}", path.display());
        }
        None => crate::render::stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
