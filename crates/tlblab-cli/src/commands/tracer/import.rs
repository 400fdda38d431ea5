//! `tlblab trace import`: ftrace or perf text into a trace file.

use crate::cli::{TextFormatArg, TraceImportArgs};
use crate::commands::refuse_existing;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::BufReader;
use std::process::ExitCode;
use tlblab_flushtrace::{
    Header, ImportError, Record, SourceError, TextFormat, TextImporter, TraceWriter, Trailer,
};

/// Line errors shown with `--skip-bad-lines` before they are only counted.
const SHOWN_ERRORS: u64 = 10;

/// Imports `args.input` into `args.output`, written all or nothing (a failed import leaves no
/// half file).
pub fn import(args: &TraceImportArgs) -> Result<ExitCode> {
    refuse_existing(&args.output, args.force)?;
    let file =
        File::open(&args.input).with_context(|| format!("cannot open {}", args.input.display()))?;
    let format = args.format.map(|f| match f {
        TextFormatArg::Ftrace => TextFormat::FtraceText,
        TextFormatArg::Perf => TextFormat::PerfScript,
    });
    let mut importer =
        TextImporter::new(BufReader::with_capacity(256 << 10, file), &args.input, format);
    let mut bad_lines = 0u64;
    let mut next = |importer: &mut TextImporter<BufReader<File>>| -> Result<Option<Record>> {
        loop {
            match importer.next() {
                Some(Err(e @ ImportError::Line { .. })) if args.skip_bad_lines => {
                    bad_lines += 1;
                    if bad_lines <= SHOWN_ERRORS {
                        eprintln!("tlblab: skipped: {e}");
                    }
                }
                Some(Err(e)) => return Err(SourceError::from(e).into()),
                Some(Ok(r)) => return Ok(Some(r)),
                None => return Ok(None),
            }
        }
    };
    let first = next(&mut importer)?;
    let Some(detected) = importer.format() else {
        return Err(SourceError::Empty { path: args.input.clone() }.into());
    };
    let mut header = Header::new(detected.origin());
    header.source_path = Some(args.input.display().to_string());
    // Before the temporary file exists, so that a signal never leaves it behind.
    let stop = crate::commands::Stop::install()?;
    let mut writer = TraceWriter::create(&args.output, &header)?;
    let result = (|| -> Result<(u64, Trailer)> {
        let mut flushes = 0;
        let mut record = first;
        while let Some(r) = record {
            if writer.records() % 4096 == 0 {
                stop.check()?;
            }
            flushes += u64::from(matches!(r, Record::Flush(_)));
            writer.write(&r)?;
            record = next(&mut importer)?;
        }
        let mut trailer = Trailer::default();
        importer.fill_trailer(&mut trailer);
        Ok((flushes, trailer))
    })();
    // On an error the writer is dropped, and with it the temporary file.
    let (flushes, trailer) = result?;
    let records = writer.records();
    writer.commit(trailer.clone())?;

    let skipped = importer.skipped();
    let others: Vec<String> =
        skipped.other_events.iter().map(|(name, n)| format!("{name} {n}")).collect();
    eprintln!(
        "tlblab: imported {} lines of {detected} from {}: {records} records ({flushes} tlb_flush) into {}",
        importer.lines_read(),
        args.input.display(),
        args.output.display()
    );
    eprintln!(
        "tlblab: skipped {} lines: {} comments, {} blank, {} stack, {} untagged, {} loss reports{}{}",
        skipped.total(),
        skipped.comments,
        skipped.blank,
        skipped.stack,
        skipped.untagged,
        skipped.lost_reports,
        if others.is_empty() { String::new() } else { format!(", other events: {}", others.join(", ")) },
        if bad_lines > 0 { format!("; {bad_lines} lines could not be read") } else { String::new() },
    );
    let lost = trailer.lost_events();
    if lost > 0 {
        eprintln!("tlblab: WARNING: the text reports {lost} lost events");
    }
    if let Some(over) = importer.ftrace_header().overwritten().filter(|n| *n > 0) {
        eprintln!(
            "tlblab: WARNING: the ftrace header says {over} events were overwritten before the text was saved"
        );
    }
    Ok(ExitCode::SUCCESS)
}
