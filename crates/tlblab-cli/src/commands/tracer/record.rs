//! `tlblab trace record`.

use super::child::Child;
use crate::cli::TraceRecordArgs;
use crate::commands::{refuse_existing, BadInput};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use nix::sys::signal::Signal;
use std::cell::RefCell;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tlblab_flushtrace::{End, TraceReader, TraceWriter, Trailer};
use tlblab_tracefs::{cleanup_stale, Instance, InstanceOptions, Tracefs};
use tlblab_tracer::{header_for, EventGroup, EventSet, RecordStats, Recorder};

/// Records until the duration ends, the command exits, or a signal arrives.
pub fn record(args: &TraceRecordArgs) -> Result<ExitCode> {
    let groups = args
        .events
        .iter()
        .map(|g| EventGroup::parse(g.trim()).map_err(BadInput))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(d) = args.duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(
                BadInput(format!("--duration {d}: give a positive number of seconds")).into()
            );
        }
    }
    refuse_existing(&args.output, args.force)?;
    let note = |text: &str| {
        if !args.quiet {
            eprintln!("tlblab: {text}");
        }
    };

    // A signal number lands here; the loop below sees it and stops cleanly.
    let signal = Arc::new(AtomicUsize::new(0));
    for s in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_usize(s, signal.clone(), s as usize)
            .context("installing the signal handler")?;
    }

    let tracefs = Tracefs::find_or_mount()?;
    for r in cleanup_stale(&tracefs).unwrap_or_default() {
        if r.result.is_ok() {
            note(&format!("removed {}, left by pid {} (gone)", r.name, r.pid));
        }
    }
    let events = EventSet::of(&groups);
    let options = InstanceOptions {
        buffer_size_kb: args.buffer_kb,
        required_events: events.required,
        optional_events: events.optional,
        pids: Vec::new(),
        follow_forks: false,
        clock: Some("mono".into()),
    };
    let instance = Instance::create(&tracefs, "trace", &options)?;
    // Nothing before the start below belongs in the trace.
    instance.set_tracing_on(false)?;
    instance.clear()?;
    let mut child = match args.command.is_empty() {
        true => None,
        false => Some(Child::spawn(&args.command)?),
    };
    if let (Some(c), true) = (&child, args.only_cmd) {
        instance.set_event_pids(&[c.pid()], true)?;
    }
    let mut header = header_for(&instance)?;
    header.command = (!args.command.is_empty()).then(|| args.command.clone());
    header.only_command = args.only_cmd;
    header.buffer_size_kb = Some(args.buffer_kb);
    for n in &header.notes {
        note(n);
    }
    // Streamed under its own name, not written whole: the trace is readable while it is
    // recorded, and a recorder killed outright keeps all but its last round (docs/tracer.md).
    let writer = TraceWriter::create_streaming(&args.output, &header)?;
    let mut recorder = Recorder::new(&instance, writer)?;
    recorder.start()?;
    if let Some(c) = &child {
        c.start()?;
    }
    let started = Instant::now();
    let deadline = args.duration.map(|d| started + Duration::from_secs_f64(d));

    let progress = Progress::new(args.quiet);
    let child_cell = RefCell::new(child.as_mut());
    let stop = || {
        if signal.load(Ordering::SeqCst) != 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            return true;
        }
        child_cell.borrow_mut().as_mut().is_some_and(|c| c.poll().is_some())
    };
    let mut run_result = Ok(());
    while !stop() {
        // Run in slices so the progress line moves.
        let slice_end = Instant::now() + Duration::from_millis(200);
        let slice_stop = || stop() || Instant::now() >= slice_end;
        if let Err(e) = recorder.run(Duration::from_millis(args.poll_ms), &slice_stop) {
            run_result = Err(e);
            break;
        }
        progress.show(recorder.stats(), started.elapsed(), lost(&recorder.losses()));
    }
    progress.clear();

    let caught = signal.load(Ordering::SeqCst) as i32;
    let end = match (&run_result, caught) {
        (Err(e), _) => End::Failed { error: format!("{e:#}") },
        (Ok(()), 0) => End::Complete,
        (Ok(()), s) => End::Interrupted { signal: signal_name(s) },
    };
    // Stop recording before waiting for the command, so its teardown is not in the trace
    // (tracing off keeps what the buffers hold for the final read).
    let tracing_off = recorder.stop();
    let command_status = child.as_mut().map(|c| match caught {
        0 => c.poll().unwrap_or_else(|| {
            note("the recording ended; waiting for the command to finish");
            c.wait()
        }),
        s => c.stop(Signal::try_from(s).unwrap_or(Signal::SIGTERM)),
    });
    let finished = tracing_off
        .map_err(anyhow::Error::from)
        .and_then(|()| recorder.finish(end, command_status).map_err(anyhow::Error::from));
    instance.remove().context("removing the tracing instance")?;
    if finished.is_err() {
        // A full disk: a file with its header is a truncated trace, which says so to every
        // reader; one without is nothing, and goes.
        if TraceReader::open(&args.output).is_ok() {
            note(&format!(
                "{} holds the records written before the failure: `--allow-truncated` reads them",
                args.output.display()
            ));
        } else {
            let _ = std::fs::remove_file(&args.output);
        }
    }
    run_result?;
    let (_, stats, trailer) = finished?;
    if !args.quiet {
        summarise(args, &stats, &trailer, command_status);
    }
    Ok(ExitCode::from(match (caught, command_status) {
        (0, Some(status)) => status.clamp(0, 255) as u8,
        (0, None) => 0,
        (s, _) => (128 + s).clamp(0, 255) as u8,
    }))
}

fn lost(losses: &[tlblab_flushtrace::Loss]) -> u64 {
    losses.iter().map(|l| l.events).sum()
}

fn signal_name(s: i32) -> String {
    Signal::try_from(s).map_or_else(|_| format!("signal {s}"), |s| s.as_str().to_string())
}

fn summarise(args: &TraceRecordArgs, stats: &RecordStats, trailer: &Trailer, status: Option<i32>) {
    let secs = trailer.duration_ns.unwrap_or(0) as f64 / 1e9;
    let rate = if secs > 0.0 { stats.events as f64 / secs } else { 0.0 };
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "tlblab: recorded {} events ({} tlb_flush) in {secs:.2} s ({rate:.0} events/s), {} records, {:.1} MiB in {}",
        stats.events,
        stats.flushes,
        stats.records,
        size as f64 / (1 << 20) as f64,
        args.output.display()
    );
    let lost = trailer.lost_events();
    if lost > 0 {
        let per_cpu: Vec<String> = trailer
            .losses
            .iter()
            .filter(|l| l.events > 0 || l.pages_with_unknown_loss > 0)
            .map(|l| format!("CPU {}: {}", l.cpu, l.events))
            .collect();
        eprintln!(
            "tlblab: WARNING: {lost} events were lost ({}); a larger --buffer-kb or a shorter --poll-ms keeps them",
            per_cpu.join(", ")
        );
    } else {
        eprintln!("tlblab: no events lost");
    }
    if let End::Interrupted { signal } = &trailer.end {
        eprintln!("tlblab: stopped by {signal}; everything read until then is in the trace");
    }
    if let Some(s) = status {
        eprintln!("tlblab: the command exited with status {s}");
    }
    eprintln!("tlblab: summary: tlblab trace report {}", args.output.display());
}

/// A spinner line on a terminal; nothing otherwise.
struct Progress(Option<ProgressBar>);

impl Progress {
    fn new(quiet: bool) -> Progress {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} recording {msg}").expect("template"));
        Progress(Some(bar))
    }

    fn show(&self, stats: &RecordStats, elapsed: Duration, lost: u64) {
        if let Some(bar) = &self.0 {
            bar.set_message(format!(
                "{:.1} s: {} events, {} tlb_flush, {} lost",
                elapsed.as_secs_f64(),
                stats.events,
                stats.flushes,
                lost
            ));
            bar.tick();
        }
    }

    fn clear(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
