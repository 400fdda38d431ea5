//! One TLB structure or paging-structure cache: a set-associative array of translation entries,
//! in the layout that is fastest for its associativity.
//!
//! Entries carry a 64-bit key (page number and size, or a paging-structure prefix; the caller
//! decides) and a tag made of the PCID and the global bit. The set is `number mod sets`, where
//! `number` is the page number at the entry's own page size (or the prefix, for
//! paging-structure caches). A fully-associative structure is a single set.
//!
//! Replacement, within a set:
//! - [`Replacement::Lru`] (default): true LRU. The victim is an empty way if the set has one,
//!   else the least recently used way.
//! - [`Replacement::Plru`]: bit pseudo-LRU ("MRU bits", PLRUm): one bit per way, set on touch;
//!   when every bit of the set would be 1, all others are cleared. The victim is the first empty
//!   way, else the first way whose bit is 0 (way 0 in a 1-way set). Works for any associativity
//!   (tree-PLRU needs a power of two, which 6-, 12- and 24-way TLBs are not). Invalidating a way
//!   clears its bit.
//!
//! Both policies leave the state unchanged when the most recently touched entry of a set is
//! touched again, which is what makes collapsed repeats exact (see `TraceEvent::Access`).
//!
//! Layouts: sets of up to 16 ways ([`Set16Assoc`]: every Intel structure in the presets) keep each
//! set in one cache-aligned block; wider sets (large fully-associative L1s, 24-way STLBs) use
//! [`SetAssoc`]. Both give identical results, checked against a brute-force reference.

use super::set16::Set16Assoc;
use super::set_assoc::SetAssoc;
use serde::{Deserialize, Serialize};

/// Replacement policy of a set-associative structure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// True least-recently-used.
    #[default]
    Lru,
    /// Bit pseudo-LRU (MRU bits).
    Plru,
}

impl Replacement {
    /// `lru` or `plru`.
    pub const fn name(self) -> &'static str {
        match self {
            Replacement::Lru => "lru",
            Replacement::Plru => "plru",
        }
    }
}

/// What an insertion displaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Displaced {
    /// The entry went into an empty way.
    Nothing,
    /// A valid entry was evicted.
    Evicted,
}

/// What [`Structure::access`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The entry was there (and is now the most recent).
    Hit,
    /// It was not, and has been inserted.
    Filled(Displaced),
}

/// A set-associative structure.
#[derive(Clone, Debug)]
pub(crate) enum Structure {
    /// Up to 16 ways.
    Narrow(Set16Assoc),
    /// More.
    Wide(SetAssoc),
}

macro_rules! delegate {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Structure::Narrow($s) => $e,
            Structure::Wide($s) => $e,
        }
    };
}

impl Structure {
    /// A structure of `entries` entries in `ways`-way sets (`entries` a positive multiple of
    /// `ways`, `ways` at most 128: checked when the machine spec is validated).
    pub(crate) fn new(entries: usize, ways: usize, replacement: Replacement) -> Structure {
        if ways <= Set16Assoc::MAX_WAYS {
            Structure::Narrow(Set16Assoc::new(entries, ways, replacement))
        } else {
            Structure::Wide(SetAssoc::new(entries, ways, replacement))
        }
    }

    /// The set that holds entries for `number`.
    #[inline(always)]
    pub(crate) fn set_of(&self, number: u64) -> usize {
        delegate!(self, s => s.set_of(number))
    }

    /// Looks up `key` for `pcid` in `set` (a global entry matches any PCID), and on a miss
    /// inserts it; either way it becomes the most recent entry of its set.
    #[inline(always)]
    pub(crate) fn access(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Outcome {
        delegate!(self, s => s.access(set, key, pcid, global))
    }

    /// Whether `set` holds `key` for `pcid` (or a global entry for it), changing nothing.
    pub(crate) fn contains(&self, set: usize, key: u64, pcid: u16) -> bool {
        delegate!(self, s => s.contains(set, key, pcid))
    }

    /// Drops the entries of `set` with this key whose `(pcid, global)` satisfy `drop_tag`.
    pub(crate) fn invalidate_key(
        &mut self,
        set: usize,
        key: u64,
        drop_tag: impl Fn(u16, bool) -> bool,
    ) -> u64 {
        delegate!(self, s => s.invalidate_key(set, key, drop_tag))
    }

    /// Drops every entry for which `drop(key, pcid, global)` holds.
    pub(crate) fn invalidate_where(&mut self, drop: impl Fn(u64, u16, bool) -> bool) -> u64 {
        delegate!(self, s => s.invalidate_where(drop))
    }

    /// Valid entries.
    pub(crate) fn len(&self) -> usize {
        delegate!(self, s => s.len())
    }

    /// Checks the invariants (debug builds and tests).
    pub(crate) fn debug_assert_invariants(&self) {
        delegate!(self, s => s.debug_assert_invariants())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(entries: usize, ways: usize, r: Replacement) -> [Structure; 2] {
        [
            Structure::Narrow(Set16Assoc::new(entries, ways, r)),
            Structure::Wide(SetAssoc::new(entries, ways, r)),
        ]
    }

    fn hit(s: &mut Structure, key: u64, pcid: u16) -> bool {
        let set = s.set_of(key >> 2);
        s.access(set, key, pcid, false) == Outcome::Hit
    }

    #[test]
    fn lru_evicts_least_recently_used() {
        for mut s in both(2, 2, Replacement::Lru) {
            assert!(!hit(&mut s, 4, 1));
            assert!(!hit(&mut s, 8, 1));
            assert!(hit(&mut s, 4, 1)); // 8 is now the least recent
            assert!(!hit(&mut s, 12, 1)); // evicts 8
            assert!(hit(&mut s, 4, 1));
            assert!(!hit(&mut s, 8, 1));
            s.debug_assert_invariants();
        }
    }

    #[test]
    fn plru_clears_other_bits_when_all_set() {
        for mut s in both(4, 4, Replacement::Plru) {
            for key in [4, 8, 12, 16] {
                assert!(!hit(&mut s, key, 0));
            }
            // The fourth touch set every bit, so only way 3 (key 16) keeps its bit: way 0 is the
            // victim.
            assert!(!hit(&mut s, 20, 0));
            assert!(!hit(&mut s, 4, 0));
            s.debug_assert_invariants();
        }
    }

    #[test]
    fn global_entries_match_any_pcid_and_others_only_their_own() {
        for mut s in both(4, 4, Replacement::Lru) {
            s.access(0, 4, 1, false);
            s.access(0, 8, 1, true);
            assert!(!hit(&mut s, 4, 2));
            assert!(hit(&mut s, 8, 2));
        }
    }

    #[test]
    fn invalidation_frees_ways_and_keeps_the_order_of_the_rest() {
        for mut s in both(3, 3, Replacement::Lru) {
            for key in [4, 8, 12] {
                hit(&mut s, key, 1);
            }
            assert_eq!(s.invalidate_key(0, 8, |_, _| true), 1);
            assert_eq!(s.len(), 2);
            assert!(!hit(&mut s, 16, 1)); // fills the freed way, evicts nothing
            assert_eq!(s.len(), 3);
            assert!(!hit(&mut s, 20, 1)); // evicts 4, the least recent
            assert!(hit(&mut s, 12, 1) && hit(&mut s, 16, 1) && !hit(&mut s, 4, 1));
            s.debug_assert_invariants();
        }
    }

    #[test]
    fn set_index_is_number_mod_sets_even_when_not_a_power_of_two() {
        for s in both(24, 2, Replacement::Lru) {
            assert_eq!(s.set_of(25), 1); // 12 sets
        }
        for s in both(32, 2, Replacement::Lru) {
            assert_eq!(s.set_of(35), 3); // 16 sets
        }
    }
}
