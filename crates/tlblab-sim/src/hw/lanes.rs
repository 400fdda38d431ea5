//! Byte-lane arithmetic shared by the set layouts: one-byte key fingerprints, compared eight at a
//! time in a `u64` with integer operations (SWAR: no `unsafe`, no target features).

/// Tag bit for a global entry: it matches whatever the current PCID.
pub(crate) const GLOBAL: u16 = 0x8000;
/// PCID bits of a tag.
pub(crate) const PCID_MASK: u16 = 0x0fff;
/// Key of an empty way. Real keys are page numbers shifted left by two, so never all ones.
pub(crate) const INVALID: u64 = u64::MAX;
/// Fingerprint of an empty way or of a lane beyond the associativity.
pub(crate) const EMPTY: u8 = u8::MAX;
/// Bit 7 of every byte.
pub(crate) const HIGH: u64 = 0x8080_8080_8080_8080;
/// 1 in every byte.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;

/// How an entry tagged `tag` serves `pcid`: as its own non-global entry (the preferred match),
/// as a global entry, or not at all.
///
/// Both can exist for one page: a PCID caches it non-global, then another PCID, whose mapping
/// of it is global, misses that entry and fills a global one. The SDM leaves unspecified which
/// a lookup then uses; the model uses the PCID's own entry, so results never depend on which
/// way each entry happens to occupy.
#[inline(always)]
pub(crate) fn tag_match(tag: u16, pcid: u16) -> TagMatch {
    if tag == pcid {
        TagMatch::Own
    } else if tag & GLOBAL != 0 {
        TagMatch::Global
    } else {
        TagMatch::No
    }
}

/// See [`tag_match`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TagMatch {
    /// A non-global entry of the PCID.
    Own,
    /// A global entry.
    Global,
    /// Another PCID's non-global entry.
    No,
}

/// The tag of an entry.
#[inline(always)]
pub(crate) fn make_tag(pcid: u16, global: bool) -> u16 {
    (pcid & PCID_MASK) | if global { GLOBAL } else { 0 }
}

/// The `(pcid, global)` of a tag: the inverse of [`make_tag`].
#[inline(always)]
pub(crate) fn split_tag(tag: u16) -> (u16, bool) {
    (tag & PCID_MASK, tag & GLOBAL != 0)
}

/// A one-byte digest of a key, never [`EMPTY`]. Mixes the high bits: the low bits of the keys
/// in one set are alike (they chose the set).
#[inline(always)]
pub(crate) fn fingerprint(key: u64) -> u8 {
    let h = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8;
    h - u8::from(h == EMPTY)
}

/// Bit 7 of every zero byte of `x`, and no other bit (exact: no false positives from borrows).
#[inline(always)]
pub(crate) fn zero_byte_bits(x: u64) -> u64 {
    // Bit 7 of a byte is set here iff the byte is non-zero.
    let nonzero = ((x & !HIGH) + !HIGH) | x;
    !nonzero & HIGH
}

/// Bit `i` set for every zero byte `i` of `x`.
#[inline(always)]
pub(crate) fn zero_bytes(x: u64) -> u8 {
    // Gather the eight bit-7s into one byte.
    ((zero_byte_bits(x) >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

/// Bit `i` set for every byte `i` of `word` equal to `value`.
#[inline(always)]
pub(crate) fn bytes_equal(word: u64, value: u8) -> u8 {
    zero_bytes(word ^ (ONES * u64::from(value)))
}

/// `word` with byte `lane` set to `value`.
#[inline(always)]
pub(crate) fn with_byte(word: u64, lane: usize, value: u8) -> u64 {
    let shift = 8 * (lane % 8);
    (word & !(0xff << shift)) | u64::from(value) << shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_comparisons_match_the_byte_by_byte_definition() {
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
                assert_eq!(bytes_equal(word, v), expected, "{bytes:?} == {v}");
            }
            for &v in &values {
                let bits = zero_byte_bits(word ^ (ONES * u64::from(v)));
                let expected = bytes
                    .iter()
                    .enumerate()
                    .fold(0u64, |m, (i, &b)| m | (u64::from(b == v) << (8 * i + 7)));
                assert_eq!(bits, expected, "{bytes:?} == {v}");
            }
            let lane = (seed >> 61) as usize;
            let mut expected = bytes;
            expected[lane] = 42;
            assert_eq!(with_byte(word, lane, 42).to_le_bytes(), expected);
        }
    }

    #[test]
    fn fingerprints_never_look_empty() {
        assert!((0..100_000u64).all(|k| fingerprint(k << 2) != EMPTY));
    }
}
