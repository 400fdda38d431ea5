//! What machine and kernel a live tlblab measurement ran on, and the system counters around a run.
//!
//! - [`Environment::capture`] records kernel, CPU, mitigations, THP, hypervisor and paravirtual TLB
//!   flush, `tlb_single_page_flush_ceiling` and tlblab's own version; every field that could not be
//!   read is a [`Source::Unavailable`] carrying the reason; [`SystemLoad`] records the load
//!   average and the competing processes around the measurement. [`Environment::differences`] lists what
//!   differs between two results.
//! - Counters read before and after a run, each with a delta that refuses counters going backwards:
//!   [`InterruptSnapshot`] (`/proc/interrupts`, `TLB` and `CAL` rows per CPU),
//!   [`TlbFlushCounters`] (`/proc/vmstat`, only with `CONFIG_DEBUG_TLBFLUSH`),
//!   [`RusageSnapshot`] (faults and context switches), [`PmuCounters`] (dTLB misses, if a PMU exists).
//! - [`Sources::probe`] says which of these (and tracefs) this machine offers.
//!
//! Parsing is done by pure functions over `&str` ([`parse_interrupts`], [`parse_vmstat`],
//! [`parse_cpuinfo`], [`parse_id_list`], ...); only `capture`, `read` and `probe` touch the system.
//!
//! ```
//! use tlblab_env::{parse_interrupts, InterruptDelta};
//!
//! let before = parse_interrupts("  CPU0  CPU1\nTLB:  10  20  TLB shootdowns\nERR: 0\n")?;
//! let after = parse_interrupts("  CPU0  CPU1\nTLB:  15  20  TLB shootdowns\nERR: 0\n")?;
//! let delta = InterruptDelta::between(&before, &after)?;
//! let tlb = delta.tlb.available().expect("TLB row present");
//! assert_eq!((tlb.per_cpu.as_slice(), tlb.total), (&[5, 0][..], 5));
//! assert!(delta.cal.reason().unwrap().contains("no CAL row"));
//! # Ok::<(), tlblab_env::Error>(())
//! ```
#![deny(missing_docs)]

pub mod cpuinfo;
mod environment;
mod error;
pub mod hypervisor;
mod idlist;
pub mod interrupts;
pub mod load;
pub mod pmu;
pub mod rusage;
mod source;
mod sources;
pub mod vmstat;
pub mod vulnerabilities;

pub use cpuinfo::{parse_cpuinfo, CpuInfo, TlbCpuFlags};
pub use environment::{Difference, Environment, Hypervisor, TLB_CEILING_PATH};
pub use error::Error;
pub use hypervisor::KvmPvTlbFlush;
pub use idlist::{parse_id_list, IdList};
pub use interrupts::{
    parse_interrupts, InterruptDelta, InterruptRow, InterruptSnapshot, PerCpuDelta,
};
pub use load::{parse_loadavg, Competitor, LoadAverage, ProcessSample, SystemLoad};
pub use pmu::{PmuCounters, PmuReading};
pub use rusage::{ProcessCounters, RusageSnapshot};
pub use source::Source;
pub use sources::{probe_tracefs, Sources};
pub use vmstat::{parse_vmstat, TlbFlushCounters};
