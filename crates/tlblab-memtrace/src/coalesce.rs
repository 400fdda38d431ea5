//! Merging runs of identical accesses into one event with a repeat count.

use crate::source::{defer, EventSource, BATCH_SIZE};
use crate::TraceError;
use tlblab_types::{Access, TraceEvent};

/// Merges consecutive [`TraceEvent::Access`] events with identical [`Access`]es into one event
/// whose `repeat` is the sum, starting a new event where the sum would overflow a `u32`.
/// Operations are passed through and end a run. Exact: expanding every event into `repeat`
/// copies gives the same sequence of accesses before and after. Runs are merged across the
/// inner source's batch boundaries.
pub struct Coalesce<S> {
    inner: S,
    batch: Vec<TraceEvent>,
    pos: usize,
    carry: Carry,
    inner_done: bool,
    finished: bool,
    deferred: Option<TraceError>,
}

impl<S: EventSource> Coalesce<S> {
    /// Coalesces the events of `inner`.
    pub fn new(inner: S) -> Coalesce<S> {
        Coalesce {
            inner,
            batch: Vec::with_capacity(BATCH_SIZE),
            pos: 0,
            carry: Carry::default(),
            inner_done: false,
            finished: false,
            deferred: None,
        }
    }

    /// The wrapped source.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped source, discarding any events read from it but not yet returned.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: EventSource> EventSource for Coalesce<S> {
    fn read_batch(&mut self, out: &mut Vec<TraceEvent>) -> Result<bool, TraceError> {
        out.clear();
        if self.finished {
            return self.deferred.take().map_or(Ok(false), Err);
        }
        self.carry.restore(out);
        loop {
            // Merge what is left of the inner batch, never overfilling `out`.
            while out.len() < BATCH_SIZE {
                let input = self.batch.get(self.pos..).unwrap_or_default();
                if input.is_empty() {
                    break;
                }
                let room = BATCH_SIZE - out.len();
                let input = input.get(..room).unwrap_or(input);
                for event in input {
                    push_event(out, event);
                }
                self.pos += input.len();
            }
            if out.len() >= BATCH_SIZE {
                self.carry.hold(out, true);
                return Ok(true);
            }
            if self.inner_done {
                self.finished = true;
                return Ok(false);
            }
            self.pos = 0;
            match self.inner.read_batch(&mut self.batch) {
                Ok(more) => self.inner_done = !more,
                Err(error) => {
                    self.batch.clear();
                    self.finished = true;
                    return defer(out, error, &mut self.deferred);
                }
            }
        }
    }
}

/// Appends `event` to `out`, merged into the last event if both are the same access and the
/// sum of their counts fits.
#[inline(always)]
fn push_event(out: &mut Vec<TraceEvent>, event: &TraceEvent) {
    if let TraceEvent::Access { access, repeat } = event {
        if let Some(TraceEvent::Access { access: last, repeat: total }) = out.last_mut() {
            if last == access {
                if let Some(sum) = total.checked_add(*repeat) {
                    *total = sum;
                    return;
                }
            }
        }
    }
    out.push(*event);
}

/// Appends one access to `out`, merged into the last event when `merge` is set and that event
/// is the same access with room in its count: the readers' built-in coalescing.
#[inline(always)]
pub(crate) fn push_access(out: &mut Vec<TraceEvent>, access: Access, merge: bool) {
    let event = TraceEvent::Access { access, repeat: 1 };
    if merge {
        push_event(out, &event);
    } else {
        out.push(event);
    }
}

/// The last access of a full batch, held back by a merging source so that a run continuing
/// into the next batch is still merged.
#[derive(Default)]
pub(crate) struct Carry(Option<TraceEvent>);

impl Carry {
    /// Puts the held event (if any) at the start of a new batch.
    #[inline]
    pub(crate) fn restore(&mut self, out: &mut Vec<TraceEvent>) {
        if let Some(event) = self.0.take() {
            out.push(event);
        }
    }

    /// Holds back the last event of a full batch if it is an access and `merge` is set.
    #[inline]
    pub(crate) fn hold(&mut self, out: &mut Vec<TraceEvent>, merge: bool) {
        if merge && out.len() > 1 && matches!(out.last(), Some(TraceEvent::Access { .. })) {
            self.0 = out.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::IterSource;
    use tlblab_types::{AccessKind, CpuId, Page, PageSize, Pcid, TlbOp, VirtAddr};

    fn access(page: u64, repeat: u32) -> TraceEvent {
        let page = Page::containing(VirtAddr(page << 12), PageSize::Size4K);
        let access = Access::new(CpuId(0), Pcid::default(), page, AccessKind::Load);
        TraceEvent::Access { access, repeat }
    }

    fn coalesce(events: Vec<TraceEvent>) -> Vec<TraceEvent> {
        Coalesce::new(IterSource::new(events))
            .events()
            .collect::<Result<_, _>>()
            .unwrap_or_default()
    }

    #[test]
    fn merges_runs_and_keeps_ops() {
        let op = TraceEvent::Op { cpu: CpuId(0), op: TlbOp::Tlbsync };
        let input = vec![access(1, 1), access(1, 2), access(2, 1), op, access(2, 1), access(2, 1)];
        assert_eq!(coalesce(input), vec![access(1, 3), access(2, 1), op, access(2, 2)]);
    }

    #[test]
    fn overflow_starts_a_new_event() {
        let input = vec![access(1, u32::MAX - 1), access(1, 1), access(1, 1), access(1, 5)];
        assert_eq!(coalesce(input), vec![access(1, u32::MAX), access(1, 6)]);
    }

    #[test]
    fn merges_across_batches() {
        let input = vec![access(7, 1); 3 * BATCH_SIZE + 5];
        assert_eq!(coalesce(input), vec![access(7, 3 * BATCH_SIZE as u32 + 5)]);
        let input: Vec<_> = (0..3 * BATCH_SIZE as u64).map(|page| access(page, 1)).collect();
        assert_eq!(coalesce(input.clone()), input);
    }
}
