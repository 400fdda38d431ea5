//! A `host` machine preset for the tlblab simulator, built from the facts of the machine this
//! runs on, so that a scenario can be simulated on a model of the machine that measured it.
//!
//! ```
//! use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TraceEvent, VirtAddr};
//!
//! match tlblab_host::host_spec() {
//!     Ok(host) => {
//!         print!("{}{}", host.toml, host.provenance_text());
//!         let mut system = tlblab_sim::System::new(&host.spec);
//!         let page = Page::containing(VirtAddr(0x7f00_0000_1000), PageSize::Size4K);
//!         let load = Access::new(CpuId(0), Pcid::new(1).unwrap(), page, AccessKind::Load);
//!         system.apply(&TraceEvent::Access { access: load, repeat: 100 }).unwrap();
//!         assert_eq!(system.total().total_walks(), 1); // one cold miss, then L1 hits
//!     }
//!     // Not x86, or a vendor the simulator does not model.
//!     Err(e) => eprintln!("no host preset here: {e}"),
//! }
//! ```
//!
//! The full account, with this project's machine as an example, is `docs/host-preset.md`.
//!
//! # What is read, what is copied, and why
//!
//! **Read from this machine** (marked `[read]` in the provenance):
//! - vendor, family/model/stepping (CPUID leaves 0 and 1, checked against `/proc/cpuinfo`);
//! - the TLB geometry: Intel CPUID leaf 0x18 (deterministic address translation parameters),
//!   else the legacy leaf 2 descriptors; AMD leaves 0x8000_0005 (L1), 0x8000_0006 (L2) and
//!   0x8000_0019 (1G pages). See [`cpuid`] for the decoding rules;
//! - the features that change flushing: PCID, INVPCID, INVLPGB (and its page count, CPUID
//!   0x8000_0008), LA57, AMD's TCE: from the `/proc/cpuinfo` flags (the kernel's view, which
//!   boot options can narrow) and CPUID;
//! - the paging depth the kernel runs (the cpuinfo `la57` flag, which Linux shows only under
//!   5-level paging, cross-checked with the size of the vmalloc area in `/proc/meminfo` and the
//!   `CONFIG_PGTABLE_LEVELS` of `/proc/config.gz`);
//! - the clock: cpufreq `base_frequency`, else CPUID leaf 0x16, else cpuinfo `cpu MHz`.
//!
//! **Measured on this machine** (`[measured]`): the kernel code-path costs (syscall, faults,
//! `madvise`, zap, `mmap`/`munmap`, same-mm thread switch, migration, fork/exit, the IPI round
//! trip), timed by `tlblab-pathcost` when the facts are gathered and cached per CPU and kernel
//! release; [`kernel_costs`] gives the rules that turn them into `[kernel]` figures. Under a
//! hypervisor the `[guest]` section records it, its KVM paravirtual features, the idle mode and the
//! measured VM-exit and IPI round trips.
//!
//! **Copied from the nearest built-in preset** (`[copied]`), chosen by vendor and
//! microarchitecture ([`nearest`]): instruction costs, translation latencies, the kernel costs
//! that are not measured, paging-structure-cache sizes, page walkers and INVLPG's
//! paging-structure-cache scope.
//! CPUID does not give them, and measuring them needs a PMU (this project's machines have none)
//! or privileged microbenchmarks that the rest of tlblab does not run.
//!
//! **Fallback** (`[fallback]`): when a CPUID leaf that should describe a TLB is missing, zeroed
//! or implausible (as hypervisors often make it: this project's KVM guest zeroes leaf 0x18 and
//! its leaf 2 defers to 0x18), the nearest preset's structure stands in for exactly the
//! (level, access kind, page size) that went undescribed.
//!
//! **Informative** (`[info]`): facts that are not preset fields but matter when comparing a
//! simulation with a live run: CPU count, hypervisor and KVM paravirtual TLB flush (via
//! tlblab-env), page sizes, PGE, PTI, address sizes, caches.
//!
//! Under a hypervisor, figures read from CPUID are marked `unverified` in the preset: they are
//! what the hypervisor reports, not necessarily the hardware.
//!
//! The facts are gathered into [`HostFacts`] ([`HostFacts::gather`]); [`build`] is a pure
//! function of them, so canned facts give the preset a machine would.
#![deny(missing_docs)]

mod assemble;
pub mod cpuid;
pub mod cpuinfo;
mod error;
pub mod facts;
mod gather;
mod guest;
pub mod kernel_costs;
pub mod local_flush;
pub mod mitigations;
pub mod nearest;
pub mod provenance;
pub mod tlb;

pub use assemble::{build, HostPreset, HOST_ORIGIN, HOST_PRESET_NAME, VMALLOC_5LEVEL_KIB};
pub use error::HostError;
pub use facts::{CacheFact, HostFacts, StealSample};
pub use gather::{BASIC_LEAVES, EXTENDED_LEAVES, HYPERVISOR_LEAVES};
pub use provenance::{Origin, Provenance};
/// The kernel-path measurements [`HostFacts::path_costs`] holds.
pub use tlblab_pathcost;

/// The host preset of the machine this runs on: [`HostFacts::gather`] then [`build`].
pub fn host_spec() -> Result<HostPreset, HostError> {
    build(&HostFacts::gather())
}

/// The host preset built from `facts` with the measured path `name` (a
/// [`tlblab_pathcost::MEASURED_LOOPS`] name) scaled by `factor`: how `tlblab study` finds which
/// share of a prediction comes from one measured loop (docs/host-preset.md, "Calibrated and
/// predicted"). `None` when `name` was not measured (nothing to scale: its figures are copied).
pub fn build_scaled(
    facts: &HostFacts,
    name: &str,
    factor: f64,
) -> Option<Result<HostPreset, HostError>> {
    let mut facts = facts.clone();
    let cached = match &mut facts.path_costs {
        tlblab_env::Source::Available(cached) => cached,
        tlblab_env::Source::Unavailable { .. } => return None,
    };
    match cached.costs.results.get_mut(name) {
        Some(tlblab_pathcost::Outcome::Measured(m)) => {
            m.median_ns *= factor;
            m.p10_ns *= factor;
            m.p90_ns *= factor;
        }
        _ => return None,
    }
    Some(build(&facts))
}
