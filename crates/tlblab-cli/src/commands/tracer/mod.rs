//! `tlblab trace`: record the kernel's tlb:tlb_flush events, remove left-over instances.

mod child;
mod import;
mod record;
mod report;

pub use import::import;
pub use record::record;
pub use report::{open_trace, report};

use crate::cli::TraceDumpArgs;
use crate::render::{stdout_error, stdout_line};
use anyhow::{Context, Result};
use std::io::Write;
use std::process::ExitCode;
use tlblab_flushtrace::{FtraceText, TraceReader};
use tlblab_tracefs::{cleanup_stale, Tracefs};

/// `tlblab trace cleanup`: removes the instances of tlblab processes that are gone.
pub fn cleanup() -> Result<ExitCode> {
    let tracefs = Tracefs::find()?;
    let removed = cleanup_stale(&tracefs).context("looking for left-over instances")?;
    if removed.is_empty() {
        stdout_line(&format!("no left-over tlblab instances under {}", tracefs.root().display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = 0;
    for r in &removed {
        match &r.result {
            Ok(()) => stdout_line(&format!("removed {} (pid {} is gone)", r.name, r.pid))?,
            Err(e) => {
                failed += 1;
                eprintln!("tlblab: could not remove {}: {e}", r.name);
            }
        }
    }
    Ok(if failed > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// `tlblab trace dump`: every record as a line of ftrace text or JSON.
pub fn dump(args: &TraceDumpArgs) -> Result<ExitCode> {
    args.output.check()?;
    let mut reader = TraceReader::open(&args.input)?.allow_truncated(args.allow_truncated);
    let json = args.format.json();
    match &args.output.output {
        Some(path) => super::write_streamed(path, |out| {
            write_dump(&mut reader, json, out).map_err(|e| match e.downcast::<std::io::Error>() {
                Ok(io) => anyhow::Error::new(io).context(format!("writing {}", path.display())),
                Err(e) => e,
            })
        })?,
        // A closed pipe (`tlblab trace dump | head`) ends the command quietly (main.rs).
        None => write_dump(&mut reader, json, &mut std::io::stdout().lock()).map_err(|e| {
            match e.downcast::<std::io::Error>() {
                Ok(io) => stdout_error(io),
                Err(e) => e,
            }
        })?,
    }
    if let Some(at) = reader.truncated_at() {
        eprintln!(
            "tlblab: {} is truncated at byte offset {at}: {} complete records shown",
            args.input.display(),
            reader.records()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes every record to `out`; its write errors are `std::io::Error`s in the chain.
fn write_dump<R: std::io::Read>(
    reader: &mut TraceReader<R>,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let header = reader.header().clone();
    let mut out = std::io::BufWriter::new(out);
    let mut text = FtraceText::new(&header);
    if !json {
        write!(out, "{}", FtraceText::preamble(&header))?;
    }
    while let Some(record) = reader.next_record()? {
        if json {
            serde_json::to_writer(&mut out, &record).map_err(std::io::Error::from)
        } else {
            write!(out, "{}", text.line(&record))
        }
        .and_then(|()| writeln!(out))?;
    }
    if json {
        let ends = serde_json::json!({ "header": header, "trailer": reader.trailer() });
        writeln!(out, "{ends}")?;
    }
    out.flush()?;
    Ok(())
}

/// The hidden `tlblab trace-exec -- CMD`: see [`child::exec`].
pub fn exec(command: &[String]) -> Result<ExitCode> {
    child::exec(command)
}
