//! `tlblab sim convert`: write a trace in tlblab's compact format.

use super::{read_options, refuse_existing};
use crate::cli::ConvertArgs;
use crate::render::group;
use anyhow::{Context, Result};
use std::process::ExitCode;
use tlblab_memtrace::{CompactWriter, EventSource, TraceError, TraceErrorKind, BATCH_SIZE};
use tlblab_types::atomic::AtomicFile;

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    refuse_existing(&args.output, args.force)?;
    let (format, options) =
        read_options(&args.input_args, args.input_args.format.or(args.old_format));
    let mut trace = tlblab_memtrace::open(&args.input, format, &options)?;
    // Before the temporary file exists, so that a signal never leaves it behind.
    let stop = super::Stop::install()?;
    // All or nothing: a failed conversion leaves no partial file (the writer's drop removes it).
    let name = args.output.display().to_string();
    let file = AtomicFile::create(&args.output).with_context(|| format!("creating {name}"))?;
    let mut writer = CompactWriter::with_name(&name, file)?;
    let (mut events, mut accesses) = (0u64, 0u64);
    let mut batch = Vec::with_capacity(BATCH_SIZE);
    loop {
        stop.check()?;
        let more = trace.read_batch(&mut batch)?;
        for event in &batch {
            writer.write(event).map_err(write_failure)?;
            events += 1;
            accesses += event.accesses();
        }
        if !more {
            break;
        }
    }
    writer.finish().map_err(write_failure)?.commit().with_context(|| format!("writing {name}"))?;
    eprintln!(
        "{} ({}) → {}: {} records for {} accesses",
        args.input.display(),
        trace.format().name(),
        args.output.display(),
        group(events),
        group(accesses)
    );
    Ok(ExitCode::SUCCESS)
}

/// A write error of the output (a full disk) is a failure (exit status 1), not the bad input
/// that a [`TraceError`] otherwise means.
fn write_failure(e: TraceError) -> anyhow::Error {
    let (name, position) = (e.name().to_owned(), e.position());
    match e.into_kind() {
        TraceErrorKind::Io(source) => anyhow::Error::new(source).context(format!("writing {name}")),
        kind => TraceError::new(&name, position, kind).into(),
    }
}
