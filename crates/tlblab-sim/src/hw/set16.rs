//! Sets of up to 16 ways, each kept in one cache-aligned block: the fast layout, used by every
//! structure of the Intel presets.
//!
//! Per set: 16 one-byte key fingerprints (two `u64`s; [`EMPTY`] for an empty way or a lane beyond
//! the associativity), the replacement state, 16 tags and 16 keys. A way number is always masked
//! to 0–15, so indexing needs no bounds check.
//!
//! LRU state is the set's recency order as 4-bit way numbers in a `u64`, most recent first, empty
//! ways last, 0xF in places beyond the associativity. The victim is always the last place (an
//! empty way while there is one); a fill moves it to the front; a hit finds its way's place with
//! integer arithmetic and moves it to the front; an invalidation moves the way to the last place.
//! PLRU state is the MRU bits.

use super::lanes::{
    bytes_equal, fingerprint, make_tag, split_tag, tag_match, with_byte, zero_byte_bits, TagMatch,
    EMPTY, INVALID, ONES,
};
use super::structure::{Displaced, Outcome, Replacement};

#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Set16 {
    fingerprints: [u64; 2],
    /// LRU: recency order (see the module doc). PLRU: MRU bits.
    repl: u64,
    tags: [u16; 16],
    keys: [u64; 16],
}

/// `(1 << (4 * nibbles)) - 1`, for 0 to 16 nibbles.
const fn low_nibbles(nibbles: usize) -> u64 {
    if nibbles >= 16 {
        u64::MAX
    } else {
        (1 << (4 * nibbles)) - 1
    }
}

/// Place of way `way` in a recency order (it must be there: places beyond the associativity
/// hold 0xF, and `way` is below 15 whenever there are such places).
#[inline(always)]
fn place_of(order: u64, way: usize) -> usize {
    let x = order ^ (0x1111_1111_1111_1111 * way as u64);
    // Bit 3 of a nibble is set here iff the nibble is non-zero (no carry leaves a nibble).
    let nonzero = ((x & 0x7777_7777_7777_7777) + 0x7777_7777_7777_7777) | x;
    (!nonzero & 0x8888_8888_8888_8888).trailing_zeros() as usize / 4
}

/// `order` with the way at `place` moved to the front.
#[inline(always)]
fn to_front(order: u64, place: usize, way: usize) -> u64 {
    let below = order & ((1 << (4 * place)) - 1);
    let above = order & !((1 << (4 * place)) - 1) & !(0xf << (4 * place));
    above | below << 4 | way as u64
}

/// `order` with the way at `place` moved to the last of `ways` places.
#[inline(always)]
fn to_back(order: u64, place: usize, way: usize, ways: usize) -> u64 {
    if place == ways - 1 {
        return order;
    }
    let below = order & low_nibbles(place);
    let between = (order >> (4 * place + 4)) & low_nibbles(ways - 1 - place);
    let beyond = order & !low_nibbles(ways);
    below | between << (4 * place) | (way as u64) << (4 * (ways - 1)) | beyond
}

/// A set-associative structure with at most 16 ways.
#[derive(Clone, Debug)]
pub(crate) struct Set16Assoc {
    sets: Box<[Set16]>,
    ways: usize,
    lru: bool,
    /// `sets - 1` when the number of sets is a power of two.
    set_mask: Option<u64>,
    /// Bit `w` for every way.
    way_mask: u64,
    /// Whether ways 8–15 exist (their fingerprints are in the second word).
    wide: bool,
    /// LRU: shift of the last place.
    last_shift: u32,
    /// LRU: the places before the last one.
    before_last: u64,
    /// LRU: the places beyond the associativity.
    beyond: u64,
    valid: usize,
}

impl Set16Assoc {
    /// Most ways.
    pub(crate) const MAX_WAYS: usize = 16;

    /// `entries` entries in `ways`-way sets.
    pub(crate) fn new(entries: usize, ways: usize, replacement: Replacement) -> Set16Assoc {
        debug_assert!(
            ways > 0 && ways <= Self::MAX_WAYS && entries.is_multiple_of(ways) && entries > 0
        );
        let lru = replacement == Replacement::Lru;
        let beyond = !low_nibbles(ways);
        // Empty fingerprints everywhere; LRU order: ways 0, 1, … then 0xF.
        let empty = Set16 {
            fingerprints: [u64::MAX; 2],
            repl: if lru { (0..ways).fold(beyond, |o, w| o | (w as u64) << (4 * w)) } else { 0 },
            tags: [0; 16],
            keys: [INVALID; 16],
        };
        let sets = entries / ways;
        Set16Assoc {
            sets: vec![empty; sets].into_boxed_slice(),
            ways,
            lru,
            set_mask: sets.is_power_of_two().then_some(sets as u64 - 1),
            way_mask: (1 << ways) - 1,
            wide: ways > 8,
            last_shift: 4 * (ways as u32 - 1),
            before_last: low_nibbles(ways - 1),
            beyond,
            valid: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn set_of(&self, number: u64) -> usize {
        match self.set_mask {
            Some(mask) => (number & mask) as usize,
            None => (number % self.sets.len() as u64) as usize,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.valid
    }

    /// Ways whose fingerprint is `value`, as bit 7 of byte `w` for way `w` (ways 0–7 in the
    /// first word, 8–15 in the second).
    #[inline(always)]
    fn lanes_equal(s: &Set16, value: u8, wide: bool) -> [u64; 2] {
        let pattern = ONES * u64::from(value);
        let high = if wide { zero_byte_bits(s.fingerprints[1] ^ pattern) } else { 0 };
        [zero_byte_bits(s.fingerprints[0] ^ pattern), high]
    }

    /// The way of `s` holding `key` for `pcid`, if any: its own entry, else a global one (see
    /// [`tag_match`]).
    #[inline(always)]
    fn find(s: &Set16, key: u64, fp: u8, pcid: u16, wide: bool) -> Option<usize> {
        let mut global = None;
        for (word, mut candidates) in Self::lanes_equal(s, fp, wide).into_iter().enumerate() {
            while candidates != 0 {
                let way = (8 * word + candidates.trailing_zeros() as usize / 8) & 15;
                if s.keys[way] == key {
                    match tag_match(s.tags[way], pcid) {
                        TagMatch::Own => return Some(way),
                        TagMatch::Global => global = global.or(Some(way)),
                        TagMatch::No => {}
                    }
                }
                candidates &= candidates - 1;
            }
        }
        global
    }

    /// Looks up `key` for `pcid` in `set`, inserting it on a miss.
    #[inline(always)]
    /// Whether `set` holds `key` for `pcid` (or a global entry for it), changing nothing.
    pub(crate) fn contains(&self, set: usize, key: u64, pcid: u16) -> bool {
        Self::find(&self.sets[set], key, fingerprint(key), pcid, self.wide).is_some()
    }

    pub(crate) fn access(&mut self, set: usize, key: u64, pcid: u16, global: bool) -> Outcome {
        // One specialised body per (policy, width): no flag tests inside.
        match (self.lru, self.wide) {
            (true, false) => self.access_as::<true, false>(set, key, pcid, global),
            (true, true) => self.access_as::<true, true>(set, key, pcid, global),
            (false, false) => self.access_as::<false, false>(set, key, pcid, global),
            (false, true) => self.access_as::<false, true>(set, key, pcid, global),
        }
    }

    #[inline(always)]
    fn access_as<const LRU: bool, const WIDE: bool>(
        &mut self,
        set: usize,
        key: u64,
        pcid: u16,
        global: bool,
    ) -> Outcome {
        let fp = fingerprint(key);
        let (way_mask, last_shift, before_last, beyond) =
            (self.way_mask, self.last_shift, self.before_last, self.beyond);
        let s = &mut self.sets[set];
        if let Some(way) = Self::find(s, key, fp, pcid, WIDE) {
            s.repl = if LRU {
                to_front(s.repl, place_of(s.repl, way), way)
            } else {
                touch_plru(s.repl, way, way_mask)
            };
            return Outcome::Hit;
        }
        let way = if LRU {
            // The last place holds an empty way if there is one, else the least recent.
            (s.repl >> last_shift) as usize & 15
        } else {
            victim_plru(s, way_mask, WIDE)
        };
        let displaced =
            if s.keys[way] == INVALID { Displaced::Nothing } else { Displaced::Evicted };
        s.keys[way] = key;
        s.tags[way] = make_tag(pcid, global);
        s.fingerprints[way >> 3] = with_byte(s.fingerprints[way >> 3], way, fp);
        s.repl = if LRU {
            (s.repl & beyond) | (s.repl & before_last) << 4 | way as u64
        } else {
            touch_plru(s.repl, way, way_mask)
        };
        if displaced == Displaced::Nothing {
            self.valid += 1;
        }
        Outcome::Filled(displaced)
    }

    fn invalidate_way(&mut self, set: usize, way: usize) {
        let (ways, lru) = (self.ways, self.lru);
        let s = &mut self.sets[set];
        s.keys[way] = INVALID;
        s.fingerprints[way >> 3] = with_byte(s.fingerprints[way >> 3], way, EMPTY);
        s.repl = if lru {
            to_back(s.repl, place_of(s.repl, way), way, ways)
        } else {
            s.repl & !(1 << way)
        };
        self.valid -= 1;
    }

    pub(crate) fn invalidate_key(
        &mut self,
        set: usize,
        key: u64,
        drop_tag: impl Fn(u16, bool) -> bool,
    ) -> u64 {
        let mut dropped = 0;
        // Candidates are taken once: invalidating a way changes no other way's fingerprint.
        let words = Self::lanes_equal(&self.sets[set], fingerprint(key), self.wide);
        for (word, mut candidates) in words.into_iter().enumerate() {
            while candidates != 0 {
                let way = (8 * word + candidates.trailing_zeros() as usize / 8) & 15;
                let (k, (pcid, global)) =
                    (self.sets[set].keys[way], split_tag(self.sets[set].tags[way]));
                if k == key && drop_tag(pcid, global) {
                    self.invalidate_way(set, way);
                    dropped += 1;
                }
                candidates &= candidates - 1;
            }
        }
        dropped
    }

    pub(crate) fn invalidate_where(&mut self, drop: impl Fn(u64, u16, bool) -> bool) -> u64 {
        if self.valid == 0 {
            return 0;
        }
        let mut dropped = 0;
        for set in 0..self.sets.len() {
            for word in 0..2 {
                // The ways that hold an entry, from the fingerprints (an empty way's, and a lane
                // beyond the associativity, is EMPTY): an empty set is passed without loading
                // its keys' cache lines. The order (set, then way) is the plain loop's.
                let mut full = !bytes_equal(self.sets[set].fingerprints[word], EMPTY);
                while full != 0 {
                    let way = word * 8 + full.trailing_zeros() as usize;
                    full &= full - 1;
                    let (key, (pcid, global)) =
                        (self.sets[set].keys[way], split_tag(self.sets[set].tags[way]));
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
        let mut valid = 0;
        for (i, s) in self.sets.iter().enumerate() {
            for lane in 0..16 {
                let fp = (s.fingerprints[lane >> 3] >> (8 * (lane & 7))) as u8;
                let expected = match s.keys[lane] {
                    k if lane >= self.ways || k == INVALID => EMPTY,
                    k => fingerprint(k),
                };
                assert_eq!(fp, expected, "fingerprint of set {i} lane {lane}");
                assert!(lane < self.ways || s.keys[lane] == INVALID, "lane beyond the ways in use");
            }
            let n = s.keys.iter().filter(|&&k| k != INVALID).count();
            valid += n;
            if self.lru {
                let order: Vec<usize> =
                    (0..self.ways).map(|p| (s.repl >> (4 * p)) as usize & 15).collect();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    (0..self.ways).collect::<Vec<_>>(),
                    "order of set {i} is not a permutation"
                );
                assert!(
                    order[..n].iter().all(|&w| s.keys[w] != INVALID),
                    "valid ways first in set {i}"
                );
                assert_eq!(s.repl & self.beyond, self.beyond, "places beyond the ways");
            }
            for a in 0..self.ways {
                for b in a + 1..self.ways {
                    let same = s.keys[a] == s.keys[b] && s.tags[a] == s.tags[b];
                    assert!(s.keys[a] == INVALID || !same, "duplicate entry in set {i}");
                }
            }
        }
        assert_eq!(valid, self.valid, "valid-entry count out of step");
    }
}

#[inline(always)]
fn touch_plru(bits: u64, way: usize, way_mask: u64) -> u64 {
    let bits = bits | 1 << way;
    if bits == way_mask {
        1 << way
    } else {
        bits
    }
}

#[inline(always)]
fn victim_plru(s: &Set16, way_mask: u64, wide: bool) -> usize {
    // Lanes beyond the associativity are EMPTY too: keep only real ways.
    let [low, high] = Set16Assoc::lanes_equal(s, EMPTY, wide);
    let gather = |bits: u64| (bits >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56;
    let empty = (gather(low) | gather(high) << 8) & way_mask;
    if empty != 0 {
        empty.trailing_zeros() as usize
    } else if way_mask == 1 {
        // A 1-way set has no clear bit: its only way is the victim.
        0
    } else {
        (!s.repl & way_mask).trailing_zeros() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recency_order_moves_ways_to_front_and_back() {
        // 5 ways; order (most recent first) 3 1 4 0 2, then 0xF.
        let ways = 5;
        let order = [3u64, 1, 4, 0, 2]
            .iter()
            .enumerate()
            .fold(!low_nibbles(5), |o, (p, &w)| o | w << (4 * p));
        let places = |o: u64| (0..ways).map(|p| (o >> (4 * p)) & 0xf).collect::<Vec<_>>();
        assert_eq!(place_of(order, 4), 2);
        assert_eq!(place_of(order, 2), 4);
        assert_eq!(places(to_front(order, 2, 4)), [4, 3, 1, 0, 2]);
        assert_eq!(places(to_back(order, 1, 1, ways)), [3, 4, 0, 2, 1]);
        assert_eq!(
            to_back(order, 1, 1, ways) & !low_nibbles(5),
            !low_nibbles(5),
            "places beyond kept"
        );
        assert_eq!(to_front(order, 2, 4) & !low_nibbles(5), !low_nibbles(5), "places beyond kept");
        // 16 ways: every place used, shifts near 64 bits.
        let full = (0..16u64).fold(0, |o, w| o | w << (4 * w));
        assert_eq!(place_of(full, 15), 15);
        assert_eq!(to_front(full, 15, 15), (full << 4) | 15);
        assert_eq!(to_back(full, 0, 0, 16), full >> 4);
        assert_eq!(to_back(full, 15, 15, 16), full);
    }
}
