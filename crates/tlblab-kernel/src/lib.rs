//! A model of Linux's x86 TLB-flush machinery (`arch/x86/mm/tlb.c`) on many CPUs, with the
//! kernel's own names, under named policies that mirror kernel versions and proposed patches.
//!
//! - [`Kernel`]: CPUs (each with the TLB hardware of `tlblab-sim`), tasks, mms, a minimal
//!   scheduler, and the flush code: `cpu_tlbstate`, `choose_new_asid()`,
//!   `switch_mm_irqs_off()`, `flush_tlb_mm_range()`, `flush_tlb_func()`,
//!   `native_flush_tlb_multi()`, `should_flush_tlb()`, PTI's user-PCID flushes; IPIs are
//!   events with send, delivery, handler and acknowledgement costs;
//! - [`Policy`]: the named variants and user-defined ones (TOML);
//! - [`program`]: what tasks do (memory references, system calls);
//! - [`observer`]: the `tlb:tlb_flush` tracepoint and the kernel's counters;
//! - [`mechanisms`]: switches that turn the model's mechanisms (guest costs, idle states, the
//!   csd queue) off, to see what each contributes;
//! - [`exposure`]: the windows in which a policy that defers flushes on purpose (`latr`,
//!   `xpfo-deferred`) leaves stale translations usable, as distributions.
//!
//! ```
//! use tlblab_kernel::{Kernel, KernelConfig, Policy, TraceLog};
//! use tlblab_kernel::program::{Action, Env, Program, Syscall};
//! use tlblab_types::CpuId;
//!
//! /// mmap one page, touch it, unmap it, exit.
//! struct OnePage(u32);
//! impl Program for OnePage {
//!     fn next(&mut self, env: &mut Env<'_>) -> Action {
//!         self.0 += 1;
//!         match (self.0, env.last) {
//!             (1, _) => Action::Syscall(Syscall::Mmap { pages: 1 }),
//!             (2, tlblab_kernel::program::Outcome::Mapped(vma)) => {
//!                 self.0 = 10;
//!                 Action::Syscall(Syscall::Munmap { vma })
//!             }
//!             _ => Action::Exit,
//!         }
//!     }
//! }
//! let spec = tlblab_sim::machine::builtin("skylake").unwrap();
//! let config = KernelConfig::new(2, 1);
//! let mut kernel = Kernel::new(&spec, &Policy::named("linux-6.18").unwrap(), config, TraceLog::default()).unwrap();
//! kernel.spawn_process(Box::new(OnePage(0)), CpuId(0), true);
//! assert!(kernel.run());
//! ```
#![deny(missing_docs)]

pub mod cpumask;
pub mod exposure;
pub mod ids;
mod kernel;
pub mod mechanisms;
pub mod mm;
pub mod observer;
pub mod policy;
pub mod program;
pub mod stats;
pub mod tlb_state;
pub mod workloads;

pub use kernel::{
    ChannelId, ChannelKind, ChannelStats, FlushRequest, FlushTlbInfo, Kernel, KernelConfig,
    KernelError, Violation, ViolationKind, FLUSH_ALL_END, PAGE_SHIFT, STOP_CHECK_EVENTS,
};
pub use mechanisms::{EffectStatus, Mechanism, Mechanisms};
pub use observer::{
    NoObserver, Observer, SwitchEvent, SwitchedOut, TlbFlushEvent, TlbFlushReason, TraceLog,
};
pub use policy::Policy;
