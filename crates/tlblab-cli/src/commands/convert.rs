//! `tlblab sim convert`: write a trace in tlblab's compact format.

use super::{read_options, refuse_existing};
use crate::cli::ConvertArgs;
use crate::render::group;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;
use tlblab_memtrace::{CompactWriter, EventSource, BATCH_SIZE};

pub fn run(args: &ConvertArgs) -> Result<ExitCode> {
    refuse_existing(&args.output, args.force)?;
    let (format, options) =
        read_options(&args.input_args, args.input_args.format.or(args.old_format));
    let mut trace = tlblab_memtrace::open(&args.input, format, &options)?;
    // Write beside the output and rename at the end: a failed conversion leaves no partial file
    // under the real name.
    let mut partial = args.output.clone().into_os_string();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let result = (|| -> Result<(u64, u64)> {
        let file =
            File::create(&partial).with_context(|| format!("creating {}", partial.display()))?;
        let mut writer = CompactWriter::with_name(
            &partial.display().to_string(),
            BufWriter::with_capacity(1 << 20, file),
        )?;
        let (mut events, mut accesses) = (0u64, 0u64);
        let mut batch = Vec::with_capacity(BATCH_SIZE);
        loop {
            let more = trace.read_batch(&mut batch)?;
            for event in &batch {
                writer.write(event)?;
                events += 1;
                accesses += event.accesses();
            }
            if !more {
                break;
            }
        }
        let out = writer.finish()?;
        out.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &args.output).with_context(|| {
            format!("renaming {} to {}", partial.display(), args.output.display())
        })?;
        Ok((events, accesses))
    })();
    match result {
        Ok((events, accesses)) => {
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
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            Err(e)
        }
    }
}
