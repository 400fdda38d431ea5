//! The host side of a two-dimensional (EPT/NPT) page walk (docs/hardware-model.md, "Nested
//! paging (EPT/NPT)").
//!
//! Under nested paging each guest paging structure the walk reads sits at a guest-physical
//! address, and so does the page it ends at: each must be translated through the host's tables
//! before it can be read (Intel SDM vol. 3C §29.3 "EPT"; AMD APM vol. 2 §15.25 "Nested
//! Paging"). A guest walk that references levels `start..=leaf` therefore makes one host
//! translation per level it references (the level's table) plus one for the final address.
//! Levels above `start` cost nothing on the host side: the paging-structure-cache entry that let
//! the walk skip them holds the host-physical address of the next table (SDM §29.4.3, "combined"
//! paging-structure-cache entries). So a walk with every cache cold makes g guest references
//! and g+1 host walks of h' references: (g+1)·h' + g, which is (g+1)(h+1)−1 with h' = h
//! (4 KiB host pages; 24 for 4 × 4; Bhargava et al., ASPLOS 2008) and 19 with 2 MiB host pages
//! (h' = 3: the host walk ends at its PDE).
//!
//! Each host translation first looks up a small cache of guest-physical → host-physical
//! translations keyed by the host page that holds the address (AMD's nested TLB; Intel's
//! guest-physical mappings, SDM §29.4.2): a hit costs nothing, a miss is a full host walk whose
//! references each cost the preset's native walk latency of that level and fills the cache.
//! NOTE: EPT/NPT paging-structure caches, which would shorten a missing host walk, are not
//! modelled apart: the one cache stands for every host-side cache.
//!
//! NOTE: the model has no physical addresses. A page's guest-physical address is taken to follow
//! its virtual address (a data page at VPN v is guest page v; the table of level L covering a
//! region is one page in an area of its own, the tables of neighbouring regions side by side),
//! and tables are not told apart by process. This is the contiguous end: a guest whose
//! allocator handed out neighbouring frames for neighbouring pages, so that with 2 MiB host
//! pages neighbouring pages share a host translation.
//!
//! Guest INVLPG, INVPCID and MOV to CR3 do not touch this cache (they invalidate linear and
//! combined mappings only; guest-physical mappings go only with INVEPT, SDM §29.4.3.1), nor do
//! they exit to the host under EPT/NPT; a core that loses its TLB state in a deep idle state
//! loses this cache too.

use super::cpu::record;
use super::structure::Structure;
use crate::machine::MachineSpec;
use crate::stats::HwStats;
use tlblab_types::{PageSize, Vpn};

/// Guest page number of the area the model puts guest paging structures in: above every data
/// page (a 57-bit VPN is below 2^45).
const TABLES: u64 = 1 << 50;

/// The host side of walks on one CPU.
#[derive(Clone, Debug)]
pub(super) struct Nested {
    cache: Structure,
    /// log2 of the host page size in 4 KiB pages: 0, 9 or 18.
    shift: u32,
    /// References of a host walk that misses the cache.
    refs: u64,
    /// Their cycles.
    cycles: u64,
}

impl Nested {
    /// The host side for `spec`, if nested paging is in force there. `walk_latency` is the
    /// preset's per-level reference cost (PML5 … PT), which host references also pay: they are
    /// reads of paging structures by the same page walker.
    pub(super) fn new(spec: &MachineSpec, walk_latency: &[u64; 5]) -> Option<Nested> {
        let n = spec.nested()?;
        let leaf = super::cpu::leaf_level(n.host_page_size);
        let top = 5 - n.host_levels as usize;
        debug_assert_eq!((leaf + 1 - top) as u64, n.host_walk_refs());
        Some(Nested {
            cache: Structure::new(n.cache_entries, n.cache_ways, spec.replacement()),
            shift: match n.host_page_size {
                PageSize::Size4K => 0,
                PageSize::Size2M => 9,
                PageSize::Size1G => 18,
            },
            refs: n.host_walk_refs(),
            cycles: walk_latency[top..=leaf].iter().sum(),
        })
    }

    /// The host translations of a guest walk of `vpn` that referenced levels `start..=leaf`
    /// (0 = PML5 … 4 = PT); returns their cycles.
    #[inline]
    pub(super) fn walk(
        &mut self,
        vpn: Vpn,
        start: usize,
        leaf: usize,
        weight: u64,
        stats: &mut HwStats,
    ) -> u64 {
        let mut cycles = 0;
        for level in start..=leaf {
            // The table holding level `level`'s entries for `vpn`: one per region its parent
            // entry maps.
            let region = vpn.0 >> (9 * (5 - level));
            cycles += self.translate(TABLES + ((level as u64) << 46) + region, weight, stats);
        }
        cycles + self.translate(vpn.0, weight, stats)
    }

    /// Translates guest page `gpn`; returns the cycles.
    #[inline]
    fn translate(&mut self, gpn: u64, weight: u64, stats: &mut HwStats) -> u64 {
        let key = gpn >> self.shift;
        let set = self.cache.set_of(key);
        let n = &mut stats.nested;
        n.translations += weight;
        if record(&mut n.cache, self.cache.access(set, key, 0, false), weight) {
            return 0;
        }
        n.memory_references += self.refs * weight;
        n.cycles += self.cycles * weight;
        self.cycles
    }

    /// Drops every entry (the core lost its translation state).
    pub(super) fn clear(&mut self, stats: &mut HwStats) {
        stats.nested.cache.invalidated += self.cache.invalidate_where(|_, _, _| true);
    }

    pub(super) fn debug_assert_invariants(&self) {
        self.cache.debug_assert_invariants();
    }
}
