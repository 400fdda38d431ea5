//! `tlblab sim replay`: a flush trace through the kernel model, per policy or per ceiling.

use super::load_machine;
use super::tracer::open_trace;
use crate::cli::{RefillArg, ReplayArgs};
use crate::commands::BadInput;
use anyhow::Result;
use std::process::ExitCode;
use tlblab_kernel::Policy;
use tlblab_replay::{
    render_replay, render_sweep, replay, sweep_ceiling, Refill, ReplayError, ReplayOptions,
};

/// Replays `args.input` under each policy, or sweeps the ceiling under the first.
pub fn run(args: &ReplayArgs) -> Result<ExitCode> {
    args.output.check()?;
    let spec = load_machine(&args.machine)?;
    let policies: Vec<Policy> =
        args.policies.iter().map(|p| Policy::load(p)).collect::<Result<_, _>>()?;
    if args.working_set == 0 {
        return Err(BadInput("--working-set 0: give at least one page".into()).into());
    }
    let opts = ReplayOptions {
        cpus: args.cpus,
        seed: args.seed,
        refill: match args.refill {
            RefillArg::None => Refill::None,
            RefillArg::Flushed => Refill::Flushed,
            RefillArg::WorkingSet => Refill::WorkingSet(args.working_set),
        },
        idle_gap_ns: args.idle_gap_us.saturating_mul(1000),
        recorded_ceiling: args.recorded_ceiling,
        ..ReplayOptions::default()
    };
    let mut source = open_trace(&args.input, args.text_format, args.allow_truncated)?;
    let (mut records, mut positions) = (Vec::new(), Vec::new());
    while let Some(r) = source.next_record()? {
        records.push(r);
        positions.push(source.position());
    }
    // An error about the trace names its file, and a record's error where it is in the file.
    let at = |e: ReplayError| -> anyhow::Error {
        let file = args.input.display();
        match e.record().and_then(|i| positions.get(usize::try_from(i).ok()?)) {
            Some(p) => anyhow::Error::from(e).context(format!("{file}: {p}")),
            None if e.is_about_the_trace() => anyhow::Error::from(e).context(file.to_string()),
            None => e.into(),
        }
    };
    let mut header = source.header().clone();
    source.trailer_or_truncation().merge_into(&mut header);
    if let Some(at) = source.truncated_at() {
        eprintln!(
            "tlblab: {} is truncated at byte offset {at}: replaying its {} complete records",
            args.input.display(),
            records.len()
        );
    }
    let text = if args.ceiling.is_empty() {
        let report = replay(&header, records, &spec, &policies, &opts).map_err(at)?;
        if args.format.json() {
            serde_json::to_string_pretty(&report)? + "\n"
        } else {
            render_replay(&report)
        }
    } else {
        let report = sweep_ceiling(&header, records, &spec, &policies[0], &args.ceiling, &opts)
            .map_err(at)?;
        if args.format.json() {
            serde_json::to_string_pretty(&report)? + "\n"
        } else {
            render_sweep(&report)
        }
    };
    if args.format.json() {
        args.output.emit_data(&text)?;
    } else {
        args.output.emit(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}
