//! The shared vocabulary of tlblab.
//!
//! Every number space gets its own type so that a PCID is never confused with a CPU number or a
//! page number with an address. The memory-trace readers (`tlblab-memtrace`) produce
//! [`TraceEvent`]s, and the simulator (`tlblab-sim`) consumes them.
//!
//! ```
//! use tlblab_types::{Page, PageSize, VirtAddr};
//!
//! // The 4 KiB page that holds an address, and the 2 MiB page that holds it.
//! let va = VirtAddr(0x7fff_1234_5678);
//! assert_eq!(Page::containing(va, PageSize::Size4K).vpn.0, 0x7fff_1234_5);
//! let huge = Page::containing(va, PageSize::Size2M);
//! assert_eq!(huge.vpn.0 & 0x1ff, 0, "2 MiB pages keep their VPN 2 MiB-aligned");
//! assert!(huge.contains(va));
//! ```
#![deny(missing_docs)]

pub mod atomic;
pub mod bounded;
pub mod bounds;
pub mod cpulist;
pub mod escape;
mod event;
mod ids;
pub mod names;
mod page;
pub mod plain;
pub mod provenance;

pub use cpulist::{parse_cpu_list, CpuListError};
pub use event::{Access, AccessKind, InvlpgbRange, InvlpgbScope, InvpcidType, TlbOp, TraceEvent};
pub use ids::{CpuId, Cycles, Pcid};
pub use page::{Page, PageSize, VirtAddr, Vpn};
