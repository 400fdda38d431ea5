//! `tlblab report`: saved results as one HTML page, as Markdown or as plain text, written to a
//! file (beside the first input unless `-o` says otherwise; `-o -` is standard output). A
//! sweep's directory (or its `summary.json`) gets `DIR/report.html`.

use crate::cli::{ReportArgs, ReportFormat};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tlblab_report::Report;

/// Renders every input, in order.
pub fn run(args: &ReportArgs) -> Result<ExitCode> {
    let out = match &args.output {
        Some(p) if p.as_os_str() == "-" => None,
        Some(p) => Some(p.clone()),
        None => Some(default_output(&args.inputs[0], args.format)),
    };
    if let Some(out) = &out {
        super::refuse_existing(out, args.force)?;
    }
    let mut report = Report::new(&args.title);
    for input in &args.inputs {
        report.add_file(input)?;
    }
    let text = match args.format {
        ReportFormat::Html => report.render_html(),
        ReportFormat::Markdown => report.render_markdown_width(args.width.into()),
        ReportFormat::Text => report.render_text(args.width.into()),
    };
    match &out {
        Some(path) => {
            tlblab_types::atomic::write_file(path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("tlblab: report written to {}", path.display());
        }
        None if matches!(args.format, ReportFormat::Html) => crate::render::stdout_data(&text)?,
        None => crate::render::stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `DIR/results.json` → `DIR/results.html` (or `.md`, `.txt`); a sweep's `DIR` (or
/// `DIR/summary.json`) → `DIR/report.html`.
fn default_output(first: &Path, format: ReportFormat) -> PathBuf {
    match tlblab_report::sweep_dir_of(first) {
        Some(dir) => dir.join("report").with_extension(format.extension()),
        None => first.with_extension(format.extension()),
    }
}
