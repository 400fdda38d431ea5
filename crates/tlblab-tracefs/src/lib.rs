//! Low-level tracefs access for tlblab's live benchmarks and tracer.
//!
//! * [`Tracefs`]: find the tracefs mount (`/proc/mounts`, the debugfs `tracing` dir), or mount
//!   it when we may.
//! * [`Instance`]: a private `instances/tlblab-<pid>-<pidns>-<n>-<purpose>` buffer with the events we
//!   want, removed on drop, on panic unwinding, by [`remove_registered_instances`] from a
//!   signal-watching thread, or later by [`cleanup_stale`] once its process is dead.
//! * [`format`]: `events/<sys>/<name>/format` and `events/header_page` parsers.
//! * [`ringbuf`]: the binary pages of `per_cpu/cpuN/trace_pipe_raw`, with lost-event flags.
//! * [`Reader`]: per-CPU streaming, or a k-way merge by timestamp; [`RawEvent`],
//!   [`TlbFlush`] and [`TlbFlushDecoder`] (keyed on the reason integer, never its text).
//! * [`FlushCounter`]: counts `tlb_flush` per CPU and reason on a background thread;
//!   [`count_buffered_flushes`] counts what the buffers hold, with no thread (for benchmarks).
//!
//! Everything about event layout is read from the kernel's format files at run time.
//!
//! ```no_run
//! use std::time::Duration;
//! use tlblab_tracefs::{FlushCounter, Instance, InstanceOptions, Tracefs};
//!
//! let tracefs = Tracefs::find_or_mount()?;
//! let instance = Instance::create(&tracefs, "bench", &InstanceOptions::default())?;
//! let counter = FlushCounter::start(&instance, Duration::from_millis(10))?;
//! // ... run the workload ...
//! let counts = counter.stop()?;
//! println!("received shootdowns: {}", counts.reason_total(1));
//! if counts.lost_any() {
//!     eprintln!("events were lost: {:?}", counts.loss);
//! }
//! instance.remove()?;
//! # Ok::<(), tlblab_tracefs::Error>(())
//! ```
#![deny(missing_docs)]

mod counter;
mod error;
mod event;
pub mod format;
mod instance;
mod mount;
mod reader;
pub mod ringbuf;

pub use counter::{count_buffered_flushes, FlushCounter, FlushCounts, PagesHistogram};
pub use error::{Error, Result, NEED_ROOT};
pub use event::{decode_page, CpuLoss, RawEvent, Schema, TlbFlush, TlbFlushDecoder, TLB_FLUSH_ALL};
pub use format::{EventFormat, EventName, Field, HeaderPage};
pub use instance::{
    cleanup_stale, instance_owner, remove_registered_instances, Instance, InstanceOptions, Owner,
    Removed, INSTANCE_PREFIX,
};
pub use mount::{online_cpus, tracefs_from_mounts, Tracefs, DEFAULT_MOUNT};
pub use reader::{CpuStream, Progress, Reader, MAX_PAGES_PER_ROUND};
pub use ringbuf::PageLayout;
