//! Memory-access traces for tlblab: readers for Valgrind lackey, ChampSim and tlblab's compact
//! binary format, a writer for the compact format, detection of format and compression (gzip,
//! xz), and coalescing of repeated accesses.
//!
//! Readers produce [`TraceEvent`](tlblab_types::TraceEvent)s in batches through the
//! [`EventSource`] trait, the fast path (one call per few thousand events, no allocation per
//! event); [`EventSource::events`] adapts any source into an iterator. [`open`] opens a file and picks the reader; [`from_reader`] does
//! the same for anything that implements [`Read`](std::io::Read). The formats are specified in
//! `docs/trace-formats.md`.
//!
//! ```
//! use tlblab_memtrace::{from_reader, CompactWriter, EventSource, Format, ReadOptions};
//! use tlblab_types::{AccessKind, TraceEvent};
//!
//! # fn main() -> Result<(), tlblab_memtrace::TraceError> {
//! // Two loads of one page, and a store to the next (valgrind lackey's text format).
//! let lackey = "==1== Lackey\n L 7ff000010,8\n L 7ff000018,8\n S 7ff001000,4\n";
//! let trace = from_reader("example.lackey", lackey.as_bytes(), None, &ReadOptions::default())?;
//! assert_eq!(trace.format(), Format::Lackey);
//! let events: Vec<TraceEvent> = trace.events().collect::<Result<_, _>>()?;
//! // Coalescing (on by default) merged the two loads into one event.
//! assert_eq!(events.len(), 2);
//! assert!(matches!(events[0], TraceEvent::Access { repeat: 2, access } if access.kind == AccessKind::Load));
//!
//! // Convert to the compact format and read it back: the same events.
//! let mut writer = CompactWriter::new(Vec::new())?;
//! for event in &events {
//!     writer.write(event)?;
//! }
//! let bytes = writer.finish()?;
//! let mut trace = from_reader("example.tlbt", std::io::Cursor::new(bytes), None, &ReadOptions::default())?;
//! assert_eq!(trace.format(), Format::Compact);
//! let mut batch = Vec::new();
//! let mut again = Vec::new();
//! loop {
//!     let more = trace.read_batch(&mut batch)?;
//!     again.extend_from_slice(&batch);
//!     if !more {
//!         break;
//!     }
//! }
//! assert_eq!(again, events);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod champsim;
mod coalesce;
mod compact;
mod detect;
mod error;
mod input;
mod lackey;
mod options;
mod source;

pub use champsim::ChampSimReader;
pub use coalesce::Coalesce;
pub use compact::{CompactReader, CompactWriter};
pub use detect::{detect_compression, detect_format, from_reader, open, OpenTrace};
pub use error::{Position, TraceError, TraceErrorKind};
pub use lackey::LackeyReader;
pub use options::{Compression, Format, ParseFormatError, ReadOptions};
pub use source::{EventSource, Events, IterSource, BATCH_SIZE};

/// Constants of the trace formats.
pub mod consts {
    pub use crate::champsim::RECORD_SIZE as CHAMPSIM_RECORD_SIZE;
    pub use crate::compact::{
        HEADER_SIZE as COMPACT_HEADER_SIZE, MAGIC as COMPACT_MAGIC,
        RECORD_SIZE as COMPACT_RECORD_SIZE, VERSION as COMPACT_VERSION,
    };
    pub use crate::detect::DETECT_BYTES;
    pub use crate::lackey::MAX_ACCESS_SIZE as LACKEY_MAX_ACCESS_SIZE;
}
