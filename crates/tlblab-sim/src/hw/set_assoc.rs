//! A set-associative array of translation entries: the one building block of every TLB and
//! paging-structure cache in the model.
//!
//! Entries carry a 64-bit key (page number and size, or a paging-structure prefix; the caller
//! decides) and a tag made of the PCID and the global bit. The set is `number mod sets`, where
//! `number` is the page number at the entry's own page size (or the prefix, for
//! paging-structure caches). A fully-associative structure is a single set.
//!
//! Replacement, within a set:
//! - [`Replacement::Lru`] (default): true LRU, by a per-structure access clock stamped on every
//!   touch; the victim is an invalid way if there is one, else the way with the oldest stamp.
//! - [`Replacement::Plru`]: bit pseudo-LRU ("MRU bits", PLRUm): one bit per way, set on touch;
//!   when every bit of the set would be 1, all others are cleared. The victim is the first invalid
//!   way, else the first way whose bit is 0 (way 0 in a 1-way set). Works for any associativity (tree-PLRU needs a power
//!   of two, which 6-, 12- and 24-way TLBs are not). Invalidating a way clears its bit.
//!
//! Both policies leave the state unchanged when the most recently touched entry of a set is
//! touched again, which is what makes collapsed repeats exact (see `TraceEvent::Access`).

use serde::{Deserialize, Serialize};

/// Tag bit for a global entry: it matches whatever the current PCID.
pub(crate) const GLOBAL: u16 = 0x8000;
const PCID_MASK: u16 = 0x0fff;
/// Key of an empty way. Real keys are page numbers shifted left by two, so never all ones.
const INVALID: u64 = u64::MAX;

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

#[derive(Clone, Debug)]
enum ReplState {
    /// One stamp per way and a clock that ticks on every touch.
    Lru { stamps: Box<[u64]>, clock: u64 },
    /// One bitmask per set (up to 128 ways).
    Plru { mru: Box<[u128]> },
}

/// A set-associative structure of `sets × ways` entries.
#[derive(Clone, Debug)]
pub(crate) struct SetAssoc {
    sets: usize,
    ways: usize,
    /// `sets - 1` when `sets` is a power of two, so the modulo is a mask.
    set_mask: Option<u64>,
    keys: Box<[u64]>,
    tags: Box<[u16]>,
    repl: ReplState,
    valid: usize,
}

impl SetAssoc {
    /// A structure of `entries` entries in `ways`-way sets. `entries` must be a positive multiple
    /// of `ways`, and `ways` at most 128 (checked when the machine spec is validated).
    pub(crate) fn new(entries: usize, ways: usize, replacement: Replacement) -> SetAssoc {
        debug_assert!(ways > 0 && ways <= 128 && entries % ways == 0 && entries > 0);
        let sets = entries / ways;
        let repl = match replacement {
            Replacement::Lru => {
                ReplState::Lru { stamps: vec![0; entries].into_boxed_slice(), clock: 0 }
            }
            Replacement::Plru => ReplState::Plru { mru: vec![0; sets].into_boxed_slice() },
        };
        SetAssoc {
            sets,
            ways,
            set_mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            keys: vec![INVALID; entries].into_boxed_slice(),
            tags: vec![0; entries].into_boxed_slice(),
            repl,
            valid: 0,
        }
    }

    /// The set that holds entries for `number` (a page number at the entry's size, or a prefix).
    #[inline]
    pub(crate) fn set_of(&self, number: u64) -> usize {
        match self.set_mask {
            Some(mask) => (number & mask) as usize,
            None => (number % self.sets as u64) as usize,
        }
    }

    /// Number of valid entries.
    pub(crate) fn len(&self) -> usize {
        self.valid
    }

    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        match &mut self.repl {
            ReplState::Lru { stamps, clock } => {
                *clock += 1;
                stamps[set * self.ways + way] = *clock;
            }
            ReplState::Plru { mru } => {
                let full = if self.ways == 128 { u128::MAX } else { (1u128 << self.ways) - 1 };
                let bits = mru[set] | (1 << way);
                mru[set] = if bits == full { 1 << way } else { bits };
            }
        }
    }

    /// Looks up `key` for `pcid` in `set`; a hit touches the entry. A global entry matches any
    /// PCID.
    #[inline]
    pub(crate) fn lookup(&mut self, set: usize, key: u64, pcid: u16) -> bool {
        let base = set * self.ways;
        for way in 0..self.ways {
            if self.keys[base + way] == key {
                let tag = self.tags[base + way];
                if tag & PCID_MASK == pcid || tag & GLOBAL != 0 {
                    self.touch(set, way);
                    return true;
                }
            }
        }
        false
    }

    fn victim(&self, set: usize) -> usize {
        let base = set * self.ways;
        if let Some(way) = self.keys[base..base + self.ways].iter().position(|&k| k == INVALID) {
            return way;
        }
        match &self.repl {
            ReplState::Lru { stamps, .. } => {
                let stamps = &stamps[base..base + self.ways];
                let mut oldest = 0;
                for way in 1..self.ways {
                    if stamps[way] < stamps[oldest] {
                        oldest = way;
                    }
                }
                oldest
            }
            // A 1-way set has no clear bit: its only way is the victim.
            ReplState::Plru { mru } => ((!mru[set]).trailing_zeros() as usize).min(self.ways - 1),
        }
    }

    /// Inserts an entry (the caller has just missed on it) and touches it.
    pub(crate) fn insert(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Displaced {
        let way = self.victim(set);
        let index = set * self.ways + way;
        let displaced = if self.keys[index] == INVALID {
            self.valid += 1;
            Displaced::Nothing
        } else {
            Displaced::Evicted
        };
        self.keys[index] = key;
        self.tags[index] = (pcid & PCID_MASK) | if global { GLOBAL } else { 0 };
        self.touch(set, way);
        displaced
    }

    fn invalidate_way(&mut self, set: usize, way: usize) {
        let index = set * self.ways + way;
        self.keys[index] = INVALID;
        self.valid -= 1;
        if let ReplState::Plru { mru } = &mut self.repl {
            mru[set] &= !(1 << way);
        }
    }

    /// Drops the entries of `set` with this key whose tag satisfies `drop_tag`; returns how many.
    pub(crate) fn invalidate_key(
        &mut self,
        set: usize,
        key: u64,
        drop_tag: impl Fn(u16, bool) -> bool,
    ) -> u64 {
        let base = set * self.ways;
        let mut dropped = 0;
        for way in 0..self.ways {
            if self.keys[base + way] == key {
                let tag = self.tags[base + way];
                if drop_tag(tag & PCID_MASK, tag & GLOBAL != 0) {
                    self.invalidate_way(set, way);
                    dropped += 1;
                }
            }
        }
        dropped
    }

    /// Drops every valid entry for which `drop(key, pcid, global)` holds; returns how many.
    pub(crate) fn invalidate_where(&mut self, drop: impl Fn(u64, u16, bool) -> bool) -> u64 {
        if self.valid == 0 {
            return 0;
        }
        let mut dropped = 0;
        for set in 0..self.sets {
            for way in 0..self.ways {
                let index = set * self.ways + way;
                let key = self.keys[index];
                if key != INVALID {
                    let tag = self.tags[index];
                    if drop(key, tag & PCID_MASK, tag & GLOBAL != 0) {
                        self.invalidate_way(set, way);
                        dropped += 1;
                    }
                }
            }
        }
        dropped
    }

    /// Checks the structure's invariants (debug builds and tests).
    pub(crate) fn debug_assert_invariants(&self) {
        if cfg!(debug_assertions) {
            let valid = self.keys.iter().filter(|&&k| k != INVALID).count();
            assert_eq!(valid, self.valid, "valid-entry count out of step");
            for set in 0..self.sets {
                let keys = &self.keys[set * self.ways..(set + 1) * self.ways];
                let tags = &self.tags[set * self.ways..(set + 1) * self.ways];
                for a in 0..self.ways {
                    for b in a + 1..self.ways {
                        assert!(
                            keys[a] == INVALID || keys[a] != keys[b] || tags[a] != tags[b],
                            "duplicate entry in set {set}"
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recently_used() {
        let mut s = SetAssoc::new(2, 2, Replacement::Lru);
        s.insert(0, 4, 1, false);
        s.insert(0, 8, 1, false);
        assert!(s.lookup(0, 4, 1)); // 8 is now LRU
        assert_eq!(s.insert(0, 12, 1, false), Displaced::Evicted);
        assert!(s.lookup(0, 4, 1));
        assert!(!s.lookup(0, 8, 1));
        assert!(s.lookup(0, 12, 1));
        s.debug_assert_invariants();
    }

    #[test]
    fn plru_clears_other_bits_when_all_set() {
        let mut s = SetAssoc::new(4, 4, Replacement::Plru);
        for key in [4, 8, 12, 16] {
            s.insert(0, key, 0, false);
        }
        // The fourth touch set every bit, so only way 3 (key 16) keeps its bit: way 0 is the victim.
        s.insert(0, 20, 0, false);
        assert!(!s.lookup(0, 4, 0));
        assert!(s.lookup(0, 8, 0));
    }

    #[test]
    fn global_entries_match_any_pcid_and_others_only_their_own() {
        let mut s = SetAssoc::new(4, 4, Replacement::Lru);
        s.insert(0, 4, 1, false);
        s.insert(0, 8, 1, true);
        assert!(!s.lookup(0, 4, 2));
        assert!(s.lookup(0, 8, 2));
    }

    #[test]
    fn set_index_is_number_mod_sets_even_when_not_a_power_of_two() {
        let s = SetAssoc::new(24, 2, Replacement::Lru); // 12 sets
        assert_eq!(s.set_of(25), 1);
        let p = SetAssoc::new(32, 2, Replacement::Lru); // 16 sets
        assert_eq!(p.set_of(35), 3);
    }
}
