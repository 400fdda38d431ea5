//! The tlblab simulator: a deterministic model of x86 TLB hardware, per CPU, driven by traces of
//! memory accesses and TLB-invalidating instructions.
//!
//! - [`machine`]: machine presets (geometry, latencies, instruction costs, with sources);
//! - [`hw`]: one CPU's TLBs, paging-structure caches, page walk and invalidation semantics;
//! - [`System`]: many CPUs fed by a trace (INVLPGB is broadcast);
//! - [`stats`]: counters, mergeable, converted to an output schema at the end;
//! - [`workload`]: built-in synthetic access streams.
//!
//! ```
//! use tlblab_sim::{machine, System};
//! use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TraceEvent, VirtAddr};
//!
//! let spec = machine::builtin("skylake").unwrap();
//! let mut system = System::new(&spec);
//! let page = Page::containing(VirtAddr(0x7f00_0000_1000), PageSize::Size4K);
//! let load = Access::new(CpuId(0), Pcid::new(1).unwrap(), page, AccessKind::Load);
//! // A cold miss (one walk), then 99 hits on the L1 dTLB.
//! system.apply(&TraceEvent::Access { access: load, repeat: 100 }).unwrap();
//! let total = system.total();
//! assert_eq!(total.total_accesses(), 100);
//! assert_eq!(total.total_walks(), 1);
//! ```
#![deny(missing_docs)]

pub mod hw;
pub mod machine;
pub mod stats;
mod system;
pub mod workload;

pub use system::{SimError, System, MAX_CPUS};
