//! The local engine: every pending job on this machine's threads (rayon), each row recorded as
//! soon as its job finishes; a stop abandons the running jobs and stops their runs.

use crate::error::SweepError;
use crate::row::execute_until;
use crate::writer::Writer;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// How often the engine asks [`Progress::stopped`] while no job finishes: the longest a stop
/// waits.
const POLL: Duration = Duration::from_millis(50);

/// What a progress display is told while a sweep runs; it never changes the results.
pub trait Progress: Sync {
    /// The sweep has `total` jobs, of which `done` are already recorded (a resumed sweep).
    fn start(&self, total: u64, done: u64);
    /// One more job finished (`ok`) or failed.
    fn finished(&self, ok: bool);
    /// Whether to stop (a signal came): no job starts any more, and the running ones are
    /// abandoned, not recorded. Asked from the thread that called [`run_local`].
    fn stopped(&self) -> bool {
        false
    }
}

/// No progress display, never stopped.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _total: u64, _done: u64) {}
    fn finished(&self, _ok: bool) {}
}

/// Runs `writer`'s pending jobs in parallel, recording each row as it finishes.
///
/// When `progress` says stop, the rows of the jobs that finished are recorded, and the running
/// jobs are abandoned: their rows are never recorded, and their runs stop within a few
/// thousand events ([`tlblab_kernel::STOP_CHECK_EVENTS`]), so that a caller that goes on (a
/// Python session) is not left with jobs running in the background. The journal holds whole
/// rows only, so it stays valid.
///
/// Errors: [`SweepError::JobsFailed`] with the first failed job (in plan order) once every
/// other job has run,
/// [`SweepError::Interrupted`] when `progress` says stop, a journal that cannot be written.
pub fn run_local(writer: &mut Writer, progress: &dyn Progress) -> Result<(), SweepError> {
    let pending = writer.pending();
    let total = writer.plan().jobs().len() as u64;
    progress.start(total, total - pending.len() as u64);
    let (tx, rx) = mpsc::channel();
    let mut failures: Vec<(u64, SweepError)> = Vec::new();
    let mut write_error = None;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    // Not a scoped thread: a stop must not wait for a running job, which may take hours.
    std::thread::spawn(move || {
        pending.par_iter().for_each_with(tx, |tx, job| {
            if stopped.load(Ordering::Relaxed) {
                return;
            }
            let _ = tx.send((job.index, execute_until(job, Some(&stopped))));
        });
    });
    let mut handle = |(index, result): (u64, Result<crate::Row, SweepError>)| match result {
        Ok(row) => {
            if let Err(e) = writer.record(row) {
                write_error.get_or_insert(e);
            }
            progress.finished(true);
        }
        Err(e) => {
            failures.push((index, e));
            progress.finished(false);
        }
    };
    let mut interrupted = false;
    loop {
        if progress.stopped() {
            interrupted = true;
            stop.store(true, Ordering::Relaxed);
            // Jobs that finished before the stop are kept; the running ones are not waited for.
            rx.try_iter().for_each(&mut handle);
            break;
        }
        match rx.recv_timeout(POLL) {
            Ok(done) => handle(done),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Some(e) = write_error {
        return Err(e);
    }
    // Stopped, the failures are not all known: the sweep was interrupted.
    if interrupted && writer.done() < total {
        return Err(SweepError::Interrupted { done: writer.done(), total });
    }
    let failed = failures.len() as u64;
    if let Some((_, first)) = failures.into_iter().min_by_key(|(i, _)| *i) {
        return Err(SweepError::JobsFailed {
            failed,
            done: writer.done(),
            dir: writer.dir().display().to_string(),
            first: Box::new(first),
        });
    }
    if writer.done() < total {
        return Err(SweepError::Interrupted { done: writer.done(), total });
    }
    Ok(())
}
