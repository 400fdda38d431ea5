//! A set-associative array of translation entries: the one building block of every TLB and
//! paging-structure cache in the model.
//!
//! Entries carry a 64-bit key (page number and size, or a paging-structure prefix; the caller
//! decides) and a tag made of the PCID and the global bit. The set is `number mod sets`, where
//! `number` is the page number at the entry's own page size (or the prefix, for
//! paging-structure caches). A fully-associative structure is a single set.
//!
//! Replacement, within a set:
//! - [`Replacement::Lru`] (default): true LRU. Each way has a recency rank: the valid entries of a
//!   set hold ranks `0..n` (0 = most recent), empty ways hold 255. A touch gives the entry rank 0
//!   and ages every entry that was more recent by one; the victim is the first empty way, else the
//!   way of rank `ways - 1` (the least recent). Invalidation closes the gap in the ranks.
//! - [`Replacement::Plru`]: bit pseudo-LRU ("MRU bits", PLRUm): one bit per way, set on touch;
//!   when every bit of the set would be 1, all others are cleared. The victim is the first
//!   invalid way, else the first way whose bit is 0 (way 0 in a 1-way set). Works for any
//!   associativity (tree-PLRU needs a power of two, which 6-, 12- and 24-way TLBs are not).
//!   Invalidating a way clears its bit.
//!
//! Both policies leave the state unchanged when the most recently touched entry of a set is
//! touched again, which is what makes collapsed repeats exact (see `TraceEvent::Access`).
//!
//! Layout, for speed: a set is stored as words of 8 byte-lanes (ways beyond the associativity are
//! padding), and each way has a one-byte fingerprint of its key (255 = empty or padding). A
//! lookup compares 8 fingerprints per word with integer arithmetic (SWAR, no `unsafe`) and checks
//! the full key only where one matches; LRU ranks are updated and the victim found the same way.
//! On random traffic this avoids the mispredicted branches of scanning for a hit position or a
//! minimum, which otherwise cost more than the rest of a translation.

use serde::{Deserialize, Serialize};

/// Tag bit for a global entry: it matches whatever the current PCID.
pub(crate) const GLOBAL: u16 = 0x8000;
const PCID_MASK: u16 = 0x0fff;
/// Key of an empty way. Real keys are page numbers shifted left by two, so never all ones.
const INVALID: u64 = u64::MAX;
/// Fingerprint of an empty or padding lane; LRU rank of one too.
const EMPTY: u8 = u8::MAX;
const LANES: usize = 8;
/// Bit 7 of every byte.
const HIGH: u64 = 0x8080_8080_8080_8080;
/// 1 in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;

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
    /// One recency rank per lane (see the module documentation).
    Lru { ranks: Box<[u8]> },
    /// One bitmask per set (up to 128 ways).
    Plru { mru: Box<[u128]> },
}

/// A set-associative structure of `sets × ways` entries.
#[derive(Clone, Debug)]
pub(crate) struct SetAssoc {
    sets: usize,
    ways: usize,
    /// Lanes per set: `ways` rounded up to a multiple of 16.
    lanes: usize,
    /// Bit `w` set for every real way `w`.
    way_mask: u128,
    /// `sets - 1` when `sets` is a power of two, so the modulo is a mask.
    set_mask: Option<u64>,
    fingerprints: Box<[u8]>,
    keys: Box<[u64]>,
    tags: Box<[u16]>,
    repl: ReplState,
    valid: usize,
}

/// A one-byte digest of a key, never [`EMPTY`]. Mixes the high bits: the low bits of the keys
/// in one set are alike (they chose the set).
#[inline]
fn fingerprint(key: u64) -> u8 {
    let h = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8;
    h - u8::from(h == EMPTY)
}

/// The lanes of `bytes` (whole 8-lane words) equal to `value`, as bit `i` for lane `i`.
#[inline]
fn lanes_equal(bytes: &[u8], value: u8) -> u128 {
    let mut mask = 0u128;
    for (w, chunk) in bytes.chunks_exact(LANES).enumerate() {
        let word = u64::from_le_bytes(chunk.try_into().expect("8-lane word"));
        mask |= u128::from(zero_bytes(word ^ (ONES * u64::from(value)))) << (LANES * w);
    }
    mask
}

/// Bit `i` set for every zero byte `i` of `x` (exact: no false positives from borrows).
#[inline]
fn zero_bytes(x: u64) -> u8 {
    // Bit 7 of a byte is set here iff the byte is non-zero.
    let nonzero = ((x & !HIGH) + !HIGH) | x;
    let zero = !nonzero & HIGH;
    // Gather the eight bit-7s into one byte.
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// LRU touch of one 8-lane word of ranks: every valid rank (below 128) smaller than `rank` ages
/// by one. `rank` is the touched way's old rank: below 128, or 255 for an empty way (then every
/// valid rank ages).
#[inline]
fn age_word(word: u64, rank: u8) -> u64 {
    let threshold = ONES * u64::from(rank.min(128));
    // Per byte, (x | 0x80) - r keeps bit 7 iff x >= r (no borrow crosses bytes: x | 0x80 >= r).
    let less = !((word | HIGH) - threshold) & HIGH;
    let valid = !word & HIGH;
    word + ((less & valid) >> 7)
}
impl SetAssoc {
    /// A structure of `entries` entries in `ways`-way sets. `entries` must be a positive multiple
    /// of `ways`, and `ways` at most 128 (checked when the machine spec is validated).
    pub(crate) fn new(entries: usize, ways: usize, replacement: Replacement) -> SetAssoc {
        debug_assert!(ways > 0 && ways <= 128 && entries % ways == 0 && entries > 0);
        let sets = entries / ways;
        let lanes = ways.div_ceil(LANES) * LANES;
        let repl = match replacement {
            Replacement::Lru => {
                ReplState::Lru { ranks: vec![EMPTY; sets * lanes].into_boxed_slice() }
            }
            Replacement::Plru => ReplState::Plru { mru: vec![0; sets].into_boxed_slice() },
        };
        SetAssoc {
            sets,
            ways,
            lanes,
            way_mask: if ways == 128 { u128::MAX } else { (1 << ways) - 1 },
            set_mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            fingerprints: vec![EMPTY; sets * lanes].into_boxed_slice(),
            keys: vec![INVALID; sets * lanes].into_boxed_slice(),
            tags: vec![0; sets * lanes].into_boxed_slice(),
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
    fn lanes_of(&self, set: usize) -> std::ops::Range<usize> {
        set * self.lanes..(set + 1) * self.lanes
    }

    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        let range = self.lanes_of(set);
        match &mut self.repl {
            ReplState::Lru { ranks } => {
                let ranks = &mut ranks[range];
                let rank = ranks[way];
                // Everything more recent ages by one (empty and padding lanes, 255, never do).
                for chunk in ranks.chunks_exact_mut(LANES) {
                    let word = u64::from_le_bytes((&*chunk).try_into().expect("8-lane word"));
                    chunk.copy_from_slice(&age_word(word, rank).to_le_bytes());
                }
                ranks[way] = 0;
            }
            ReplState::Plru { mru } => {
                let bits = mru[set] | (1 << way);
                mru[set] = if bits == self.way_mask { 1 << way } else { bits };
            }
        }
    }

    /// The ways of `set` whose key may be `key` (fingerprint match).
    #[inline]
    fn candidates(&self, set: usize, key: u64) -> u128 {
        lanes_equal(&self.fingerprints[self.lanes_of(set)], fingerprint(key))
    }

    /// Looks up `key` for `pcid` in `set`; a hit touches the entry. A global entry matches any
    /// PCID.
    #[inline]
    pub(crate) fn lookup(&mut self, set: usize, key: u64, pcid: u16) -> bool {
        let base = set * self.lanes;
        let mut candidates = self.candidates(set, key);
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            let tag = self.tags[base + way];
            if self.keys[base + way] == key && (tag & PCID_MASK == pcid || tag & GLOBAL != 0) {
                self.touch(set, way);
                return true;
            }
            candidates &= candidates - 1;
        }
        false
    }

    #[inline]
    fn victim(&self, set: usize) -> usize {
        let range = self.lanes_of(set);
        let empty = lanes_equal(&self.fingerprints[range.clone()], EMPTY) & self.way_mask;
        if empty != 0 {
            return empty.trailing_zeros() as usize;
        }
        match &self.repl {
            // A full set ranks its ways 0..ways: exactly one is the least recent.
            ReplState::Lru { ranks } => {
                lanes_equal(&ranks[range], (self.ways - 1) as u8).trailing_zeros() as usize
            }
            // A 1-way set has no clear bit: its only way is the victim.
            ReplState::Plru { mru } => {
                ((!mru[set] & self.way_mask).trailing_zeros() as usize).min(self.ways - 1)
            }
        }
    }

    /// Inserts an entry (the caller has just missed on it) and touches it.
    #[inline]
    pub(crate) fn insert(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Displaced {
        let way = self.victim(set);
        let index = set * self.lanes + way;
        let displaced = if self.keys[index] == INVALID {
            self.valid += 1;
            Displaced::Nothing
        } else {
            Displaced::Evicted
        };
        self.keys[index] = key;
        self.fingerprints[index] = fingerprint(key);
        self.tags[index] = (pcid & PCID_MASK) | if global { GLOBAL } else { 0 };
        self.touch(set, way);
        displaced
    }

    fn invalidate_way(&mut self, set: usize, way: usize) {
        let index = set * self.lanes + way;
        self.keys[index] = INVALID;
        self.fingerprints[index] = EMPTY;
        self.valid -= 1;
        let range = self.lanes_of(set);
        match &mut self.repl {
            ReplState::Lru { ranks } => {
                let rank = std::mem::replace(&mut ranks[index], EMPTY);
                // Close the gap: the less recent entries move up by one.
                for r in ranks[range].iter_mut() {
                    *r -= u8::from(*r != EMPTY && *r > rank);
                }
            }
            ReplState::Plru { mru } => mru[set] &= !(1 << way),
        }
    }

    /// Drops the entries of `set` with this key whose tag satisfies `drop_tag`; returns how many.
    pub(crate) fn invalidate_key(
        &mut self,
        set: usize,
        key: u64,
        drop_tag: impl Fn(u16, bool) -> bool,
    ) -> u64 {
        let base = set * self.lanes;
        let mut dropped = 0;
        let mut candidates = self.candidates(set, key);
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            let tag = self.tags[base + way];
            if self.keys[base + way] == key && drop_tag(tag & PCID_MASK, tag & GLOBAL != 0) {
                self.invalidate_way(set, way);
                dropped += 1;
            }
            candidates &= candidates - 1;
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
                let index = set * self.lanes + way;
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
        if !cfg!(debug_assertions) {
            return;
        }
        let valid = self.keys.iter().filter(|&&k| k != INVALID).count();
        assert_eq!(valid, self.valid, "valid-entry count out of step");
        for set in 0..self.sets {
            let range = self.lanes_of(set);
            let keys = &self.keys[range.clone()];
            let tags = &self.tags[range.clone()];
            for (way, (&key, &fp)) in keys.iter().zip(&self.fingerprints[range.clone()]).enumerate()
            {
                let expected = if key == INVALID { EMPTY } else { fingerprint(key) };
                assert_eq!(fp, expected, "fingerprint of set {set} way {way}");
                assert!(way < self.ways || key == INVALID, "padding lane in use");
            }
            if let ReplState::Lru { ranks } = &self.repl {
                let ranks = &ranks[range];
                let mut valid: Vec<u8> = keys
                    .iter()
                    .zip(ranks)
                    .filter(|(k, _)| **k != INVALID)
                    .map(|(_, r)| *r)
                    .collect();
                valid.sort_unstable();
                assert!(
                    valid.iter().enumerate().all(|(i, &r)| r as usize == i),
                    "LRU ranks of set {set} are not 0..n"
                );
                assert!(
                    keys.iter().zip(ranks).all(|(k, r)| (*k == INVALID) == (*r == EMPTY)),
                    "empty ways rank 255"
                );
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swar_lane_tricks_match_byte_by_byte_definitions() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let values = [0u8, 1, 5, 126, 127, 128, 200, 254, 255];
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Bytes drawn mostly from a few values, so that equal bytes are common.
            let bytes: [u8; 8] = std::array::from_fn(|i| values[((seed >> (8 * i)) % 9) as usize]);
            let word = u64::from_le_bytes(bytes);
            for &v in &values {
                let expected =
                    bytes.iter().enumerate().fold(0u8, |m, (i, &b)| m | (u8::from(b == v) << i));
                assert_eq!(zero_bytes(word ^ (ONES * u64::from(v))), expected, "{bytes:?} == {v}");
            }
            // Ranks: valid lanes below 128, empty lanes 255.
            let ranks: [u8; 8] = bytes.map(|b| if b >= 128 { 255 } else { b });
            let word = u64::from_le_bytes(ranks);
            for &r in &[0u8, 1, 5, 126, 127, 255] {
                let expected = ranks.map(|x| if x != 255 && x < r { x + 1 } else { x });
                assert_eq!(age_word(word, r).to_le_bytes(), expected, "age {ranks:?} below {r}");
            }
        }
    }

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
