//! tlblab's live tracer: records `tlb:tlb_flush` (and, on request, `sched:sched_switch`, the
//! IPI-send and call-function events) from a private tracefs instance into a flush-trace file
//! (`tlblab_flushtrace`), with bounded memory, merged across CPUs by timestamp, and with the
//! events the ring buffer lost.
//!
//! * [`EventSet`]: which events to enable.
//! * [`Recorder`]: the reading loop; [`header_for`] describes an instance.
//! * [`Decoders`]: ring-buffer records to trace records, by this kernel's format files.
//! * [`TaskTable`]: each thread's process and name.
#![deny(missing_docs)]

mod decode;
mod events;
mod record;
mod tasks;

pub use decode::{Decoded, Decoders, MissingField};
pub use events::{EventGroup, EventSet};
pub use record::{header_for, RecordStats, Recorder};
pub use tasks::TaskTable;

use thiserror::Error;

/// What can stop a recording.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// tracefs refused something (the message says what is missing: root, tracefs, an event).
    #[error(transparent)]
    Tracefs(#[from] tlblab_tracefs::Error),
    /// The trace file could not be written.
    #[error(transparent)]
    File(#[from] tlblab_flushtrace::FileError),
    /// An event's format file lacks a field tlblab needs.
    #[error("tracefs: event {event}: {msg}")]
    Format {
        /// The event.
        event: String,
        /// What is wrong.
        msg: String,
    },
    /// A record did not fit its format.
    #[error("tracefs: CPU {cpu}, event at {ts_ns} ns: {msg}")]
    Decode {
        /// The CPU buffer.
        cpu: u32,
        /// The event's timestamp.
        ts_ns: u64,
        /// What is wrong.
        msg: String,
    },
}
