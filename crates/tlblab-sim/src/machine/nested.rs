//! `[guest.nested]`: nested paging (Intel EPT, AMD NPT) under a guest, as written and checked
//! (docs/hardware-model.md, "Nested paging (EPT/NPT)").
//!
//! With nested paging every guest paging-structure reference and the final guest-physical
//! address are translated through the host's tables: a cold walk of `g` guest levels under `h`
//! host levels makes (g+1)(h+1)−1 references (Bhargava et al., "Accelerating two-dimensional
//! page walks for virtualized systems", ASPLOS 2008: 24 for 4 × 4).

use super::raw::GuestFact;
use serde::{Deserialize, Serialize};
use tlblab_types::PageSize;

/// The nested-translation cache's geometry, with its provenance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNestedCache {
    /// Entries, each the translation of one host page of guest-physical memory.
    pub entries: u32,
    /// Ways per set.
    pub ways: u32,
    /// Where it comes from.
    pub source: String,
    /// Set when the geometry is not confirmed (no vendor publishes it).
    #[serde(default)]
    pub unverified: bool,
}

/// `[guest.nested]` as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNested {
    /// The hypervisor translates guest-physical addresses with EPT/NPT (false: shadow paging,
    /// or unknown; the walk is then modelled as native).
    pub paging: GuestFact<bool>,
    /// The host page size that backs guest memory (`4k`, `2m` with THP, `1g` with hugetlbfs).
    pub host_page_size: GuestFact<PageSize>,
    /// Levels of the host's EPT/NPT tables (4, or 5 with 5-level EPT).
    pub host_levels: GuestFact<u8>,
    /// The cache of guest-physical → host-physical translations used by walks.
    pub cache: RawNestedCache,
}

/// Checks `[guest.nested]`.
pub(super) fn check(n: &RawNested) -> Result<(), String> {
    let levels = n.host_levels.value;
    if levels != 4 && levels != 5 {
        return Err(format!("[guest.nested] `host_levels` is {levels}; expected 4 or 5"));
    }
    super::spec::check_geometry("[guest.nested] cache", n.cache.entries, n.cache.ways)
}

/// Nested paging as the hardware model uses it: on only when the preset says EPT/NPT is in use
/// and the run did not switch it off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NestedSpec {
    /// The host page size backing guest memory.
    pub host_page_size: PageSize,
    /// 4 or 5.
    pub host_levels: u8,
    /// Cache entries.
    pub cache_entries: usize,
    /// Cache ways.
    pub cache_ways: usize,
}

impl NestedSpec {
    /// From the section, if it says nested paging is in use.
    pub(super) fn from_raw(n: &RawNested) -> Option<NestedSpec> {
        n.paging.value.then_some(NestedSpec {
            host_page_size: n.host_page_size.value,
            host_levels: n.host_levels.value,
            cache_entries: n.cache.entries as usize,
            cache_ways: n.cache.ways as usize,
        })
    }

    /// References of one host walk that misses the cache: `host_levels` for 4 KiB host pages,
    /// one fewer per larger page size (the walk ends at the PDE for 2 MiB, the PDPTE for 1 GiB).
    pub fn host_walk_refs(&self) -> u64 {
        let shorter = match self.host_page_size {
            PageSize::Size4K => 0,
            PageSize::Size2M => 1,
            PageSize::Size1G => 2,
        };
        u64::from(self.host_levels) - shorter
    }
}
