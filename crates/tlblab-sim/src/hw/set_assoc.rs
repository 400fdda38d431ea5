//! A set-associative array of translation entries: the one building block of every TLB and
//! paging-structure cache in the model.
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
//!   when every bit of the set would be 1, all others are cleared. The victim is the first
//!   invalid way, else the first way whose bit is 0 (way 0 in a 1-way set). Works for any
//!   associativity (tree-PLRU needs a power of two, which 6-, 12- and 24-way TLBs are not).
//!   Invalidating a way clears its bit.
//!
//! Both policies leave the state unchanged when the most recently touched entry of a set is
//! touched again, which is what makes collapsed repeats exact (see `TraceEvent::Access`).
//!
//! How LRU is kept, for speed (a translation that misses does several lookups and fills, and on
//! random traffic scanning for a hit position or a minimum mispredicts branches):
//! - up to 16 ways: the set's recency order is one `u64` of 4-bit way numbers, most recent first,
//!   empty ways last. The victim is always the last nibble; a touch finds the way's nibble with
//!   integer arithmetic (SWAR) and moves it to the front; invalidation moves it to the back.
//! - more ways (large fully-associative L1s): a byte rank per way, valid ranks `0..n` (0 = most
//!   recent), empty ways 255; a touch ages the more recent entries by one, the victim is the first
//!   empty way, else rank `ways - 1`; invalidation closes the gap.
//!
//! Each way also has a one-byte fingerprint of its key (255 = empty or padding), 8 per `u64`; a
//! lookup compares them all at once and checks the full key only where one matches.

use serde::{Deserialize, Serialize};

/// Tag bit for a global entry: it matches whatever the current PCID.
pub(crate) const GLOBAL: u16 = 0x8000;
const PCID_MASK: u16 = 0x0fff;
/// Key of an empty way. Real keys are page numbers shifted left by two, so never all ones.
const INVALID: u64 = u64::MAX;
/// Fingerprint of an empty or padding lane; rank of an empty way.
const EMPTY: u8 = u8::MAX;
/// Byte lanes per word.
const LANES: usize = 8;
/// Bit 7 of every byte.
const HIGH: u64 = 0x8080_8080_8080_8080;
/// 1 in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// Most ways whose recency order fits in one `u64` of nibbles.
const NIBBLE_WAYS: usize = 16;

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

/// What [`SetAssoc::access`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The entry was there (and is now the most recent).
    Hit,
    /// It was not, and has been inserted.
    Filled(Displaced),
}

#[derive(Clone, Debug)]
enum ReplState {
    /// LRU, up to 16 ways: per set, the ways in recency order as nibbles (see module doc).
    LruOrder { order: Box<[u64]> },
    /// LRU, more ways: per set, `words` words of byte ranks.
    LruRanks { ranks: Box<[u64]> },
    /// PLRU: one bitmask per set (up to 128 ways).
    Plru { mru: Box<[u128]> },
}

/// A set-associative structure of `sets × ways` entries.
#[derive(Clone, Debug)]
pub(crate) struct SetAssoc {
    sets: usize,
    ways: usize,
    /// Fingerprint (and rank) words per set: `ways / 8`, rounded up.
    words: usize,
    /// Bit `w` set for every real way `w`.
    way_mask: u128,
    /// `sets - 1` when `sets` is a power of two, so the modulo is a mask.
    set_mask: Option<u64>,
    /// `words` words per set; lanes beyond `ways` are padding (always [`EMPTY`]).
    fingerprints: Box<[u64]>,
    /// `ways` per set.
    keys: Box<[u64]>,
    /// `ways` per set.
    tags: Box<[u16]>,
    repl: ReplState,
    valid: usize,
}

/// A one-byte digest of a key, never [`EMPTY`]. Mixes the high bits: the low bits of the keys
/// in one set are alike (they chose the set).
#[inline(always)]
fn fingerprint(key: u64) -> u8 {
    let h = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8;
    h - u8::from(h == EMPTY)
}

/// Bit `i` set for every zero byte `i` of `x` (exact: no false positives from borrows).
#[inline(always)]
fn zero_bytes(x: u64) -> u8 {
    // Bit 7 of a byte is set here iff the byte is non-zero.
    let nonzero = ((x & !HIGH) + !HIGH) | x;
    let zero = !nonzero & HIGH;
    // Gather the eight bit-7s into one byte.
    ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// Bit `i` set for every byte `i` of `word` equal to `value`.
#[inline(always)]
fn bytes_equal(word: u64, value: u8) -> u8 {
    zero_bytes(word ^ (ONES * u64::from(value)))
}

/// LRU touch of one word of byte ranks: every valid rank (below 128) smaller than `rank` ages
/// by one. `rank` is the touched way's old rank: below 128, or 255 for an empty way (then every
/// valid rank ages).
#[inline(always)]
fn age_word(word: u64, rank: u8) -> u64 {
    let threshold = ONES * u64::from(rank.min(128));
    // Per byte, (x | 0x80) - r keeps bit 7 iff x >= r (no borrow crosses bytes: x | 0x80 >= r).
    let less = !((word | HIGH) - threshold) & HIGH;
    let valid = !word & HIGH;
    word + ((less & valid) >> 7)
}

/// `(1 << bits) - 1`, also for 64 bits.
#[inline(always)]
fn low_bits(bits: usize) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// Position of nibble value `way` in `order` (it must be there; padding nibbles are 0xF and
/// `way` is below 15 whenever there is padding).
#[inline(always)]
fn nibble_position(order: u64, way: usize) -> usize {
    let x = order ^ (0x1111_1111_1111_1111 * way as u64);
    // Bit 3 of a nibble is set here iff the nibble is non-zero (no carry leaves a nibble).
    let nonzero = ((x & 0x7777_7777_7777_7777) + 0x7777_7777_7777_7777) | x;
    (!nonzero & 0x8888_8888_8888_8888).trailing_zeros() as usize / 4
}

/// `order` with the nibble at `position` (holding `way`) moved to the front.
#[inline(always)]
fn to_front(order: u64, position: usize, way: usize) -> u64 {
    let below = order & low_bits(4 * position);
    let above = order & !low_bits(4 * position + 4);
    above | below << 4 | way as u64
}

/// `order` with the nibble at `position` (holding `way`) moved to the last of `ways` places.
#[inline(always)]
fn to_back(order: u64, position: usize, way: usize, ways: usize) -> u64 {
    let below = order & low_bits(4 * position);
    let between = (order >> (4 * position + 4)) & low_bits(4 * (ways - 1 - position));
    let padding = order & !low_bits(4 * ways);
    below | between << (4 * position) | (way as u64) << (4 * (ways - 1)) | padding
}

impl SetAssoc {
    /// A structure of `entries` entries in `ways`-way sets. `entries` must be a positive multiple
    /// of `ways`, and `ways` at most 128 (checked when the machine spec is validated).
    pub(crate) fn new(entries: usize, ways: usize, replacement: Replacement) -> SetAssoc {
        debug_assert!(ways > 0 && ways <= 128 && entries % ways == 0 && entries > 0);
        let sets = entries / ways;
        let words = ways.div_ceil(LANES);
        // Padding lanes are EMPTY fingerprints (never a real one) and EMPTY ranks.
        let padded = |fill: u64| {
            let mut v = vec![0u64; sets * words];
            for set in 0..sets {
                for w in 0..words {
                    v[set * words + w] = fill;
                }
            }
            v.into_boxed_slice()
        };
        let repl = match replacement {
            Replacement::Lru if ways <= NIBBLE_WAYS => {
                // Initial order: ways 0, 1, …; padding nibbles 0xF.
                let identity =
                    (0..ways).fold(!low_bits(4 * ways), |o, w| o | (w as u64) << (4 * w));
                ReplState::LruOrder { order: vec![identity; sets].into_boxed_slice() }
            }
            Replacement::Lru => ReplState::LruRanks { ranks: padded(u64::MAX) },
            Replacement::Plru => ReplState::Plru { mru: vec![0; sets].into_boxed_slice() },
        };
        SetAssoc {
            sets,
            ways,
            words,
            way_mask: if ways == 128 { u128::MAX } else { (1 << ways) - 1 },
            set_mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            fingerprints: padded(u64::MAX),
            keys: vec![INVALID; entries].into_boxed_slice(),
            tags: vec![0; entries].into_boxed_slice(),
            repl,
            valid: 0,
        }
    }

    /// The set that holds entries for `number` (a page number at the entry's size, or a prefix).
    #[inline(always)]
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

    /// The ways of `set` whose fingerprint lane equals `value`.
    #[inline(always)]
    fn lanes_equal(&self, set: usize, value: u8) -> u128 {
        let words = &self.fingerprints[set * self.words..(set + 1) * self.words];
        match *words {
            [w0] => u128::from(bytes_equal(w0, value)),
            [w0, w1] => {
                u128::from(bytes_equal(w0, value)) | u128::from(bytes_equal(w1, value)) << 8
            }
            _ => words
                .iter()
                .enumerate()
                .fold(0, |m, (i, &w)| m | u128::from(bytes_equal(w, value)) << (LANES * i)),
        }
    }

    #[inline(always)]
    fn set_fingerprint(&mut self, set: usize, way: usize, value: u8) {
        let word = &mut self.fingerprints[set * self.words + way / LANES];
        let shift = 8 * (way % LANES);
        *word = (*word & !(0xff << shift)) | u64::from(value) << shift;
    }

    #[inline(always)]
    fn touch(&mut self, set: usize, way: usize) {
        match &mut self.repl {
            ReplState::LruOrder { order } => {
                let o = order[set];
                order[set] = to_front(o, nibble_position(o, way), way);
            }
            ReplState::LruRanks { ranks } => {
                let words = &mut ranks[set * self.words..(set + 1) * self.words];
                let rank = (words[way / LANES] >> (8 * (way % LANES))) as u8;
                for w in words.iter_mut() {
                    *w = age_word(*w, rank);
                }
                words[way / LANES] &= !(0xff << (8 * (way % LANES)));
            }
            ReplState::Plru { mru } => {
                let bits = mru[set] | (1 << way);
                mru[set] = if bits == self.way_mask { 1 << way } else { bits };
            }
        }
    }

    /// The way of `set` holding `key` for `pcid`, if any (a global entry matches any PCID).
    #[inline(always)]
    fn find(&self, set: usize, key: u64, fp: u8, pcid: u16) -> Option<usize> {
        let base = set * self.ways;
        let mut candidates = self.lanes_equal(set, fp);
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            let tag = self.tags[base + way];
            if self.keys[base + way] == key && (tag & PCID_MASK == pcid || tag & GLOBAL != 0) {
                return Some(way);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// Looks up `key` for `pcid` in `set`; a hit touches the entry. A global entry matches any
    /// PCID.
    #[cfg(test)]
    pub(crate) fn lookup(&mut self, set: usize, key: u64, pcid: u16) -> bool {
        match self.find(set, key, fingerprint(key), pcid) {
            Some(way) => {
                self.touch(set, way);
                true
            }
            None => false,
        }
    }

    /// Looks up `key` for `pcid` in `set`, and inserts it on a miss: [`SetAssoc::lookup`] then
    /// [`SetAssoc::insert`] in one step.
    #[inline(always)]
    pub(crate) fn access(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Outcome {
        let fp = fingerprint(key);
        match self.find(set, key, fp, pcid) {
            Some(way) => {
                self.touch(set, way);
                Outcome::Hit
            }
            None => Outcome::Filled(self.insert_with(set, key, fp, pcid, global)),
        }
    }

    #[inline(always)]
    fn victim(&self, set: usize) -> usize {
        match &self.repl {
            // Empty ways are last in the order, so the last place holds the victim either way.
            ReplState::LruOrder { order } => (order[set] >> (4 * (self.ways - 1))) as usize & 0xf,
            ReplState::LruRanks { ranks } => {
                let empty = self.lanes_equal(set, EMPTY) & self.way_mask;
                if empty != 0 {
                    return empty.trailing_zeros() as usize;
                }
                // A full set ranks its ways 0..ways: exactly one is the least recent.
                let words = &ranks[set * self.words..(set + 1) * self.words];
                let oldest = (self.ways - 1) as u8;
                let (i, w) = words
                    .iter()
                    .enumerate()
                    .find(|(_, &w)| bytes_equal(w, oldest) != 0)
                    .expect("a full set has a least recent way");
                LANES * i + bytes_equal(*w, oldest).trailing_zeros() as usize
            }
            ReplState::Plru { mru } => {
                let empty = self.lanes_equal(set, EMPTY) & self.way_mask;
                if empty != 0 {
                    return empty.trailing_zeros() as usize;
                }
                // A 1-way set has no clear bit: its only way is the victim.
                ((!mru[set] & self.way_mask).trailing_zeros() as usize).min(self.ways - 1)
            }
        }
    }

    /// Inserts an entry (the caller has just missed on it) and touches it.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Displaced {
        self.insert_with(set, key, fingerprint(key), pcid, global)
    }

    #[inline(always)]
    fn insert_with(&mut self, set: usize, key: u64, fp: u8, pcid: u16, global: bool) -> Displaced {
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
        self.set_fingerprint(set, way, fp);
        match &mut self.repl {
            // The victim was in the last place: no need to search for it.
            ReplState::LruOrder { order } => order[set] = to_front(order[set], self.ways - 1, way),
            _ => self.touch(set, way),
        }
        displaced
    }

    fn invalidate_way(&mut self, set: usize, way: usize) {
        self.keys[set * self.ways + way] = INVALID;
        self.set_fingerprint(set, way, EMPTY);
        self.valid -= 1;
        match &mut self.repl {
            ReplState::LruOrder { order } => {
                let o = order[set];
                order[set] = to_back(o, nibble_position(o, way), way, self.ways);
            }
            ReplState::LruRanks { ranks } => {
                let words = &mut ranks[set * self.words..(set + 1) * self.words];
                let shift = 8 * (way % LANES);
                let rank = (words[way / LANES] >> shift) as u8;
                words[way / LANES] |= 0xff << shift;
                // Close the gap: the less recent entries move up by one.
                for w in words.iter_mut() {
                    let mut bytes = w.to_le_bytes();
                    for b in bytes.iter_mut() {
                        *b -= u8::from(*b != EMPTY && *b > rank);
                    }
                    *w = u64::from_le_bytes(bytes);
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
        let base = set * self.ways;
        let mut dropped = 0;
        let mut candidates = self.lanes_equal(set, fingerprint(key));
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
        if !cfg!(debug_assertions) {
            return;
        }
        let valid = self.keys.iter().filter(|&&k| k != INVALID).count();
        assert_eq!(valid, self.valid, "valid-entry count out of step");
        for set in 0..self.sets {
            let keys = &self.keys[set * self.ways..(set + 1) * self.ways];
            let tags = &self.tags[set * self.ways..(set + 1) * self.ways];
            let lane = |words: &[u64], i: usize| {
                (words[set * self.words + i / LANES] >> (8 * (i % LANES))) as u8
            };
            for i in 0..self.words * LANES {
                let expected = match keys.get(i) {
                    Some(&k) if k != INVALID => fingerprint(k),
                    _ => EMPTY,
                };
                assert_eq!(
                    lane(&self.fingerprints, i),
                    expected,
                    "fingerprint of set {set} lane {i}"
                );
            }
            let n = keys.iter().filter(|&&k| k != INVALID).count();
            match &self.repl {
                ReplState::LruOrder { order } => {
                    let ways: Vec<usize> =
                        (0..self.ways).map(|p| (order[set] >> (4 * p)) as usize & 0xf).collect();
                    let mut sorted = ways.clone();
                    sorted.sort_unstable();
                    assert_eq!(
                        sorted,
                        (0..self.ways).collect::<Vec<_>>(),
                        "order of set {set} is not a permutation"
                    );
                    assert!(
                        ways[..n].iter().all(|&w| keys[w] != INVALID),
                        "valid ways first in set {set}"
                    );
                    assert_eq!(
                        order[set] & !low_bits(4 * self.ways),
                        !low_bits(4 * self.ways),
                        "padding nibbles"
                    );
                }
                ReplState::LruRanks { ranks } => {
                    let mut valid: Vec<u8> = (0..self.ways)
                        .filter(|&w| keys[w] != INVALID)
                        .map(|w| lane(ranks, w))
                        .collect();
                    valid.sort_unstable();
                    assert!(
                        valid.iter().enumerate().all(|(i, &r)| r as usize == i),
                        "LRU ranks of set {set} are not 0..n"
                    );
                    assert!(
                        (0..self.ways).all(|w| (keys[w] == INVALID) == (lane(ranks, w) == EMPTY)),
                        "empty ways rank 255"
                    );
                }
                ReplState::Plru { .. } => {}
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
    fn nibble_order_moves_ways_to_front_and_back() {
        // 5 ways; order (most recent first) 3 1 4 0 2, padding 0xF.
        let ways = 5;
        let order = [3u64, 1, 4, 0, 2]
            .iter()
            .enumerate()
            .fold(!low_bits(20), |o, (p, &w)| o | w << (4 * p));
        let nibbles = |o: u64| (0..ways).map(|p| (o >> (4 * p)) & 0xf).collect::<Vec<_>>();
        assert_eq!(nibble_position(order, 4), 2);
        assert_eq!(nibble_position(order, 2), 4);
        assert_eq!(nibbles(to_front(order, 2, 4)), [4, 3, 1, 0, 2]);
        assert_eq!(nibbles(to_back(order, 1, 1, ways)), [3, 4, 0, 2, 1]);
        assert_eq!(to_back(order, 1, 1, ways) & !low_bits(20), !low_bits(20), "padding kept");
        // 16 ways: no padding, shifts of 64 bits handled.
        let full = (0..16u64).fold(0, |o, w| o | w << (4 * w));
        assert_eq!(nibble_position(full, 15), 15);
        assert_eq!(to_front(full, 15, 15) & 0xf, 15);
        assert_eq!(to_back(full, 0, 0, 16) >> 60, 0);
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
