//! `tlblab trace report`: the summary of a trace in four formats.

use crate::cli::{OutputFormat, TextFormatArg, TraceReportArgs};
use crate::commands::BadInput;
use anyhow::{Context, Result};
use std::num::NonZeroU64;
use std::process::ExitCode;
use tlblab_flushtrace::summary::{render_csv, render_markdown, render_table};
use tlblab_flushtrace::{SummaryBuilder, SummaryOptions, TextFormat, TraceSource};

/// The format a `--text-format` names.
pub fn text_format(arg: Option<TextFormatArg>) -> Option<TextFormat> {
    arg.map(|f| match f {
        TextFormatArg::Ftrace => TextFormat::FtraceText,
        TextFormatArg::Perf => TextFormat::PerfScript,
    })
}

/// Opens a trace of any kind: a trace file, or text (detected, or as `format` says).
pub fn open_trace(
    path: &std::path::Path,
    format: Option<TextFormatArg>,
    allow_truncated: bool,
) -> Result<TraceSource> {
    Ok(TraceSource::open(path, text_format(format), allow_truncated)?)
}

/// Summarises `args.input`.
pub fn report(args: &TraceReportArgs) -> Result<ExitCode> {
    let interval_ns = match args.interval_ms {
        None => None,
        Some(ms) if ms.is_finite() && ms > 0.0 && ms * 1e6 >= 1.0 => {
            NonZeroU64::new((ms * 1e6).round() as u64)
        }
        Some(ms) => {
            return Err(BadInput(format!("--interval-ms {ms}: give a positive number of ms")).into())
        }
    };
    if let Some(path) = &args.output {
        crate::commands::refuse_existing(path, args.force)?;
    }
    let mut source = open_trace(&args.input, args.text_format, args.allow_truncated)?;
    let mut builder =
        SummaryBuilder::new(source.header(), SummaryOptions { interval_ns, top: args.top });
    while let Some(record) = source.next_record()? {
        builder.add(&record);
    }
    let summary = builder.finish(&source.trailer_or_truncation());
    let text = match args.format.get() {
        OutputFormat::Text => render_table(&summary),
        OutputFormat::Markdown => render_markdown(&summary),
        OutputFormat::Csv => render_csv(&summary),
        OutputFormat::Json => serde_json::to_string_pretty(&summary)? + "\n",
    };
    match &args.output {
        Some(path) => tlblab_types::atomic::write_file(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None if matches!(args.format.get(), OutputFormat::Json | OutputFormat::Csv) => {
            crate::render::stdout_data(&text)?
        }
        None => crate::render::stdout(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
