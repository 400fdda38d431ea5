//! tlblab's flush traces: the kernel's `tlb:tlb_flush` stream (with, on request, context
//! switches and IPI events) as a versioned file that `tlblab trace record` writes, text imports
//! write, `tlblab trace report` summarises and `tlblab sim replay` replays.
//!
//! * [`model`]: the records, the header and the trailer.
//! * [`mod@file`]: the versioned binary file ([`TraceWriter`], [`TraceReader`]).
//! * [`dump`]: records as ftrace `trace` text ([`FtraceText`]).
//! * [`import`]: streaming importers of ftrace `trace`/`trace_pipe` text and `perf script` output.
//! * [`source`]: either kind of input, read the same way ([`TraceSource`]).
//! * [`summary`]: what `tlblab trace report` prints (counts, sizes, rates, processes, losses).
#![deny(missing_docs)]

pub mod dump;
pub mod file;
pub mod import;
pub mod model;
pub mod source;
pub mod summary;

pub use dump::FtraceText;
pub use file::{FileError, TraceReader, TraceWriter, MAX_COMM_BYTES, MAX_TS_NS};
pub use import::{ImportError, TextFormat, TextImporter};
pub use model::{
    kernel_version, reason, CallFunction, CpuInfo, End, Flush, Header, InterruptCounts, IpiSend,
    Loss, Origin, Other, Record, Switch, Task, Trailer, FLUSH_ALL,
};
pub use source::{Position, SourceError, TraceSource};
pub use summary::{Summary, SummaryBuilder, SummaryOptions};
