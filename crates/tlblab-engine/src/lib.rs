//! The discrete-event engine of tlblab: simulated time in cycles and an event queue whose order
//! is total and documented, so that a run is a pure function of its inputs.
//!
//! The engine knows nothing of what an event means: the model (CPUs, kernel, workloads) owns the
//! payloads and decides what each does when it is popped.
//!
//! # The order of events
//! Events pop in increasing [`Key`] order, which compares, in turn:
//! 1. the **time** (cycles since the start of the run);
//! 2. the **class**, a small integer the model gives each kind of event (lower first): at equal
//!    times the model's policy decides, e.g. that an interrupt arriving at the cycle a step ends is
//!    taken before the next step starts;
//! 3. the **CPU** the event belongs to (lower first);
//! 4. the **sequence number**: the order in which events were pushed (first in, first out).
//!
//! The sequence number makes every key unique, so two runs that push the same events in the same
//! order pop them in the same order, whatever the heap's internal layout.
//!
//! Time never goes backwards: pushing an event before the current time, or popping one that
//! would move the clock back, is a bug in the model and panics.
//!
//! ```
//! use tlblab_engine::EventQueue;
//! use tlblab_types::Cycles;
//!
//! let mut queue = EventQueue::new();
//! queue.push(Cycles(10), 1, 0, "tick on cpu0");
//! queue.push(Cycles(10), 0, 1, "interrupt on cpu1");
//! queue.push(Cycles(5), 1, 1, "step on cpu1");
//! let order: Vec<_> = std::iter::from_fn(|| queue.pop().map(|(_, e)| e)).collect();
//! // Time first, then class (0 before 1), then CPU.
//! assert_eq!(order, ["step on cpu1", "interrupt on cpu1", "tick on cpu0"]);
//! assert_eq!(queue.now(), Cycles(10));
//! ```
#![deny(missing_docs)]

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use tlblab_types::Cycles;

/// The total order of events: time, then class, then CPU, then push order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// When the event happens.
    pub time: Cycles,
    /// The model's tie-break rank of the event's kind (lower first).
    pub class: u8,
    /// The CPU the event belongs to (lower first).
    pub cpu: u32,
    /// Push order (first in, first out).
    pub seq: u64,
}

/// An event with its key; ordered by the key alone.
#[derive(Debug)]
struct Entry<E> {
    key: Key,
    payload: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// A queue of future events and the current time.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    now: Cycles,
    next_seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::new(), now: Cycles(0), next_seq: 0, popped: 0 }
    }

    /// The time of the last event popped (0 before the first).
    pub fn now(&self) -> Cycles {
        self.now
    }

    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `payload` at `time`; returns its key.
    ///
    /// # Panics
    /// If `time` is before [`EventQueue::now`]: the model tried to change the past.
    pub fn push(&mut self, time: Cycles, class: u8, cpu: u32, payload: E) -> Key {
        assert!(
            time >= self.now,
            "event scheduled at cycle {} but the clock is already at {}",
            time.0,
            self.now.0
        );
        let key = Key { time, class, cpu, seq: self.next_seq };
        self.next_seq += 1;
        self.heap.push(Reverse(Entry { key, payload }));
        key
    }

    /// The key of the next event, without removing it.
    pub fn peek(&self) -> Option<Key> {
        self.heap.peek().map(|Reverse(e)| e.key)
    }

    /// Removes the next event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(Key, E)> {
        let Reverse(entry) = self.heap.pop()?;
        // Guaranteed by `push`; checked again because a broken order would corrupt every result.
        assert!(entry.key.time >= self.now, "time went backwards");
        self.now = entry.key.time;
        self.popped += 1;
        Some((entry.key, entry.payload))
    }

    /// Removes every waiting event; the clock stays where it is.
    pub fn clear(&mut self) {
        self.heap.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_keys_pop_in_push_order() {
        let mut q = EventQueue::new();
        for i in 0..100 {
            q.push(Cycles(7), 2, 3, i);
        }
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    #[should_panic(expected = "clock is already at 10")]
    fn pushing_into_the_past_panics() {
        let mut q = EventQueue::new();
        q.push(Cycles(10), 0, 0, ());
        q.pop();
        q.push(Cycles(9), 0, 0, ());
    }

    #[test]
    fn an_event_at_the_current_time_is_allowed() {
        let mut q = EventQueue::new();
        q.push(Cycles(10), 1, 0, 'a');
        q.pop();
        q.push(Cycles(10), 0, 0, 'b');
        assert_eq!(q.pop().map(|(k, e)| (k.time, e)), Some((Cycles(10), 'b')));
        assert_eq!(q.popped(), 2);
    }

    proptest! {
        /// Whatever is pushed, events pop in strictly increasing key order and the clock never
        /// goes back.
        #[test]
        fn pops_are_sorted_by_key(events in proptest::collection::vec((0u64..50, 0u8..4, 0u32..4), 0..200)) {
            let mut q = EventQueue::new();
            for (i, &(t, c, cpu)) in events.iter().enumerate() {
                q.push(Cycles(t), c, cpu, i);
            }
            let mut last: Option<Key> = None;
            let mut count = 0;
            while let Some((key, _)) = q.pop() {
                if let Some(prev) = last {
                    prop_assert!(prev < key);
                }
                prop_assert_eq!(q.now(), key.time);
                last = Some(key);
                count += 1;
            }
            prop_assert_eq!(count, events.len());
        }
    }
}
