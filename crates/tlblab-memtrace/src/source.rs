//! The batch-reading interface and its adapters.

use crate::TraceError;
use tlblab_types::TraceEvent;

/// The number of events the readers in this crate append per [`EventSource::read_batch`] call
/// (at most).
pub const BATCH_SIZE: usize = 4096;

/// A stream of trace events, read in batches.
///
/// This is the primary interface: one call per batch rather than per event, so decoding costs
/// no virtual call or allocation per event.
///
/// Errors are deferred: when a reader meets bad data, it first returns the events before it
/// (`Ok(true)`), and the error on the next call. After an error or `Ok(false)`, a source returns
/// `Ok(false)` with an empty batch.
pub trait EventSource {
    /// Clears `out` and appends the next events (at most [`BATCH_SIZE`] for this crate's
    /// readers). Returns `Ok(true)` while more events may follow and `Ok(false)` once the trace
    /// has ended; `out` may hold final events then, or be empty.
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError>;

    /// The events one at a time (a convenience; the batches remain the fast path).
    fn events(self) -> Events<Self>
    where
        Self: Sized,
    {
        Events { source: self, batch: Vec::new(), pos: 0, done: false }
    }
}

impl<S: EventSource + ?Sized> EventSource for &mut S {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        (**self).read_batch(out)
    }
}

impl<S: EventSource + ?Sized> EventSource for Box<S> {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        (**self).read_batch(out)
    }
}

/// The iterator returned by [`EventSource::events`]. It ends after the first error.
pub struct Events<S> {
    source: S,
    batch: Vec<TraceEvent>,
    pos: usize,
    done: bool,
}

impl<S> Events<S> {
    /// The source, for example to ask an [`OpenTrace`](crate::OpenTrace) how far it has read.
    pub fn source(&self) -> &S {
        &self.source
    }
}

impl<S: EventSource> Iterator for Events<S> {
    type Item = Result<TraceEvent, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(event) = self.batch.get(self.pos) {
                self.pos += 1;
                return Some(Ok(*event));
            }
            if self.done {
                return None;
            }
            self.pos = 0;
            match self.source.read_batch(&mut self.batch) {
                Ok(more) => self.done = !more,
                Err(error) => {
                    self.batch.clear();
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
    }
}

/// An [`EventSource`] over any iterator of events (in-memory traces, tests, benchmarks).
#[derive(Clone, Debug)]
pub struct IterSource<I> {
    iter: I,
}

impl<I: Iterator<Item = TraceEvent>> IterSource<I> {
    /// A source yielding the items of `iter`.
    pub fn new(iter: impl IntoIterator<IntoIter = I>) -> IterSource<I> {
        IterSource { iter: iter.into_iter() }
    }
}

impl<I: Iterator<Item = TraceEvent>> EventSource for IterSource<I> {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        out.clear();
        out.extend(self.iter.by_ref().take(BATCH_SIZE));
        Ok(out.len() == BATCH_SIZE)
    }
}

/// The result of a read that failed after `out` already holds events: deliver them now, the
/// error on the next call.
pub(crate) fn defer(
    out: &[TraceEvent],
    error: TraceError,
    slot: &mut Option<TraceError>,
) -> Result<bool, TraceError> {
    if out.is_empty() {
        Err(error)
    } else {
        *slot = Some(error);
        Ok(true)
    }
}
