//! The local engine: every pending job on this machine's threads (rayon), each row recorded as
//! soon as its job finishes.

use crate::error::SweepError;
use crate::row::execute;
use crate::writer::Writer;
use rayon::prelude::*;
use std::sync::mpsc;

/// What a progress display is told while a sweep runs; it never changes the results.
pub trait Progress: Sync {
    /// The sweep has `total` jobs, of which `done` are already recorded (a resumed sweep).
    fn start(&self, total: u64, done: u64);
    /// One more job finished (`ok`) or failed.
    fn finished(&self, ok: bool);
    /// Whether to stop starting jobs (a signal came); the running ones finish and are kept.
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
    std::thread::scope(|scope| {
        scope.spawn(move || {
            pending.par_iter().for_each_with(tx, |tx, job| {
                if progress.stopped() {
                    return;
                }
                let _ = tx.send((job.index, execute(job)));
            });
        });
        for (index, result) in rx {
            match result {
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
            }
        }
    });
    if let Some(e) = write_error {
        return Err(e);
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
