//! Sets of any associativity (up to 128 ways), for structures wider than 16 ways: large
//! fully-associative L1s and 24-way STLBs.
//!
//! Structure of arrays: per set, `words` words of one-byte key fingerprints (8 lanes a word;
//! [`EMPTY`] for an empty way or a lane beyond the associativity), then the keys and tags of its
//! ways. LRU state is a byte rank per way: the valid entries of a set hold ranks `0..n` (0 = most
//! recent), empty ways 255. A touch gives the entry rank 0 and ages every more recent entry by
//! one; the victim is the first empty way, else the way of rank `ways - 1`; an invalidation closes
//! the gap. PLRU state is the MRU bits.

use super::lanes::{
    bytes_equal, fingerprint, make_tag, split_tag, tag_match, with_byte, TagMatch, EMPTY, HIGH,
    INVALID, ONES,
};
use super::structure::{Displaced, Outcome, Replacement};

/// Byte lanes per word.
const LANES: usize = 8;

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

#[derive(Clone, Debug)]
enum ReplState {
    /// One byte rank per lane, `words` words per set.
    Lru { ranks: Box<[u64]> },
    /// One bitmask per set.
    Plru { mru: Box<[u128]> },
}

/// A set-associative structure of `sets × ways` entries.
#[derive(Clone, Debug)]
pub(crate) struct SetAssoc {
    sets: usize,
    ways: usize,
    /// Fingerprint (and rank) words per set.
    words: usize,
    /// Bit `w` set for every real way `w`.
    way_mask: u128,
    /// `sets - 1` when `sets` is a power of two, so the modulo is a mask.
    set_mask: Option<u64>,
    fingerprints: Box<[u64]>,
    keys: Box<[u64]>,
    tags: Box<[u16]>,
    repl: ReplState,
    valid: usize,
}

impl SetAssoc {
    /// `entries` entries in `ways`-way sets (`ways` at most 128).
    pub(crate) fn new(entries: usize, ways: usize, replacement: Replacement) -> SetAssoc {
        debug_assert!(ways > 0 && ways <= 128 && entries.is_multiple_of(ways) && entries > 0);
        let sets = entries / ways;
        let words = ways.div_ceil(LANES);
        let repl = match replacement {
            Replacement::Lru => {
                ReplState::Lru { ranks: vec![u64::MAX; sets * words].into_boxed_slice() }
            }
            Replacement::Plru => ReplState::Plru { mru: vec![0; sets].into_boxed_slice() },
        };
        SetAssoc {
            sets,
            ways,
            words,
            way_mask: if ways == 128 { u128::MAX } else { (1 << ways) - 1 },
            set_mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            fingerprints: vec![u64::MAX; sets * words].into_boxed_slice(),
            keys: vec![INVALID; entries].into_boxed_slice(),
            tags: vec![0; entries].into_boxed_slice(),
            repl,
            valid: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn set_of(&self, number: u64) -> usize {
        match self.set_mask {
            Some(mask) => (number & mask) as usize,
            None => (number % self.sets as u64) as usize,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.valid
    }

    /// The ways of `set` whose lane in `words` equals `value`.
    fn lanes_equal(&self, words: &[u64], set: usize, value: u8) -> u128 {
        words[set * self.words..(set + 1) * self.words]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &w)| m | u128::from(bytes_equal(w, value)) << (LANES * i))
    }

    fn rank(ranks: &[u64], index: usize) -> u8 {
        (ranks[index / LANES] >> (8 * (index % LANES))) as u8
    }

    fn touch(&mut self, set: usize, way: usize) {
        match &mut self.repl {
            ReplState::Lru { ranks } => {
                let words = &mut ranks[set * self.words..(set + 1) * self.words];
                let rank = Self::rank(words, way);
                for w in words.iter_mut() {
                    *w = age_word(*w, rank);
                }
                words[way / LANES] = with_byte(words[way / LANES], way, 0);
            }
            ReplState::Plru { mru } => {
                let bits = mru[set] | (1 << way);
                mru[set] = if bits == self.way_mask { 1 << way } else { bits };
            }
        }
    }

    fn victim(&self, set: usize) -> usize {
        let empty = self.lanes_equal(&self.fingerprints, set, EMPTY) & self.way_mask;
        if empty != 0 {
            return empty.trailing_zeros() as usize;
        }
        match &self.repl {
            // A full set ranks its ways 0..ways: exactly one is the least recent.
            ReplState::Lru { ranks } => {
                self.lanes_equal(ranks, set, (self.ways - 1) as u8).trailing_zeros() as usize
            }
            // A 1-way set has no clear bit: its only way is the victim.
            ReplState::Plru { mru } => {
                ((!mru[set] & self.way_mask).trailing_zeros() as usize).min(self.ways - 1)
            }
        }
    }

    /// Whether `set` holds `key` for `pcid` (or a global entry for it), changing nothing.
    pub(crate) fn contains(&self, set: usize, key: u64, pcid: u16) -> bool {
        let base = set * self.ways;
        let mut candidates = self.lanes_equal(&self.fingerprints, set, fingerprint(key));
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            if self.keys[base + way] == key
                && tag_match(self.tags[base + way], pcid) != TagMatch::No
            {
                return true;
            }
            candidates &= candidates - 1;
        }
        false
    }

    pub(crate) fn access(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Outcome {
        let fp = fingerprint(key);
        let base = set * self.ways;
        // Its own entry, else a global one (see `tag_match`).
        let mut found = None;
        let mut candidates = self.lanes_equal(&self.fingerprints, set, fp);
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            if self.keys[base + way] == key {
                match tag_match(self.tags[base + way], pcid) {
                    TagMatch::Own => {
                        found = Some(way);
                        break;
                    }
                    TagMatch::Global => found = found.or(Some(way)),
                    TagMatch::No => {}
                }
            }
            candidates &= candidates - 1;
        }
        if let Some(way) = found {
            self.touch(set, way);
            return Outcome::Hit;
        }
        let way = self.victim(set);
        let displaced = if self.keys[base + way] == INVALID {
            self.valid += 1;
            Displaced::Nothing
        } else {
            Displaced::Evicted
        };
        self.keys[base + way] = key;
        self.tags[base + way] = make_tag(pcid, global);
        let word = set * self.words + way / LANES;
        self.fingerprints[word] = with_byte(self.fingerprints[word], way, fp);
        self.touch(set, way);
        Outcome::Filled(displaced)
    }

    fn invalidate_way(&mut self, set: usize, way: usize) {
        self.keys[set * self.ways + way] = INVALID;
        let word = set * self.words + way / LANES;
        self.fingerprints[word] = with_byte(self.fingerprints[word], way, EMPTY);
        self.valid -= 1;
        match &mut self.repl {
            ReplState::Lru { ranks } => {
                let words = &mut ranks[set * self.words..(set + 1) * self.words];
                let rank = Self::rank(words, way);
                words[way / LANES] = with_byte(words[way / LANES], way, EMPTY);
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

    pub(crate) fn invalidate_key(
        &mut self,
        set: usize,
        key: u64,
        drop_tag: impl Fn(u16, bool) -> bool,
    ) -> u64 {
        let base = set * self.ways;
        let mut dropped = 0;
        let mut candidates = self.lanes_equal(&self.fingerprints, set, fingerprint(key));
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            let (pcid, global) = split_tag(self.tags[base + way]);
            if self.keys[base + way] == key && drop_tag(pcid, global) {
                self.invalidate_way(set, way);
                dropped += 1;
            }
            candidates &= candidates - 1;
        }
        dropped
    }

    pub(crate) fn invalidate_where(&mut self, drop: impl Fn(u64, u16, bool) -> bool) -> u64 {
        if self.valid == 0 {
            return 0;
        }
        let mut dropped = 0;
        for set in 0..self.sets {
            for word in 0..self.words {
                // The ways that hold an entry, from the fingerprints (an empty way's is EMPTY):
                // a mostly empty structure is scanned without loading the keys of its empty
                // ways. The order (set, then way) is the plain loop's.
                let mut full = !bytes_equal(self.fingerprints[set * self.words + word], EMPTY);
                while full != 0 {
                    let way = word * LANES + full.trailing_zeros() as usize;
                    full &= full - 1;
                    let index = set * self.ways + way;
                    let (key, (pcid, global)) = (self.keys[index], split_tag(self.tags[index]));
                    if key != INVALID && drop(key, pcid, global) {
                        self.invalidate_way(set, way);
                        dropped += 1;
                    }
                }
            }
        }
        dropped
    }

    pub(crate) fn debug_assert_invariants(&self) {
        if !cfg!(debug_assertions) {
            return;
        }
        assert_eq!(
            self.keys.iter().filter(|&&k| k != INVALID).count(),
            self.valid,
            "valid-entry count out of step"
        );
        for set in 0..self.sets {
            let keys = &self.keys[set * self.ways..(set + 1) * self.ways];
            let tags = &self.tags[set * self.ways..(set + 1) * self.ways];
            let lane = |words: &[u64], i: usize| Self::rank(&words[set * self.words..], i);
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
            if let ReplState::Lru { ranks } = &self.repl {
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
    fn aging_matches_the_byte_by_byte_definition() {
        let mut seed = 0x0fed_cba9_8765_4321u64;
        let values = [0u8, 1, 5, 126, 127, 255];
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Valid ranks below 128, empty lanes 255.
            let ranks: [u8; 8] = std::array::from_fn(|i| values[((seed >> (8 * i)) % 6) as usize]);
            let word = u64::from_le_bytes(ranks);
            for &r in &values {
                let expected = ranks.map(|x| if x != 255 && x < r { x + 1 } else { x });
                assert_eq!(age_word(word, r).to_le_bytes(), expected, "age {ranks:?} below {r}");
            }
        }
    }
}
