//! Byte-level helpers: numbers and searches on the raw line (lines are bytes, not `str`, because
//! a `comm` may hold any byte the kernel accepted from `prctl(PR_SET_NAME)`).

/// Whitespace as the kernel and perf print it (space, tab) plus the line end.
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// `s` without leading whitespace.
pub(super) fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_space(b)).count();
    &s[n..]
}

/// `s` without trailing whitespace.
pub(super) fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|&&b| is_space(b)).count();
    &s[..s.len() - n]
}

/// `s` without whitespace at either end.
pub(super) fn trim(s: &[u8]) -> &[u8] {
    trim_end(trim_start(s))
}

/// The first position of the byte `b` in `hay`, eight bytes at a time (the newline search of
/// every line and the colon search of every event line run through here).
pub(super) fn find_byte(hay: &[u8], b: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(b);
    let mut chunks = hay.chunks_exact(8);
    let mut at = 0;
    for chunk in chunks.by_ref() {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) ^ pattern;
        // A zero byte in `word` is a match; the lowest flagged byte is the first one.
        let zero = word.wrapping_sub(LO) & !word & HI;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks.remainder().iter().position(|&x| x == b).map(|i| at + i)
}

/// The first position of `needle` in `hay`.
pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut from = 0;
    while let Some(i) = find_byte(&hay[from..], first) {
        let at = from + i;
        if hay[at + 1..].starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The last position of `needle` in `hay`.
pub(super) fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    (0..=hay.len() - needle.len()).rev().find(|&at| hay[at..].starts_with(needle))
}

/// The text after `key` up to the next whitespace (the value of a `key=value` or `key:value`
/// field), if `key` occurs.
pub(super) fn field<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = find(body, key)? + key.len();
    let rest = &body[at..];
    let end = rest.iter().position(|&b| is_space(b)).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// A non-empty run of decimal digits as `u64`, or `None` (also on overflow).
pub(super) fn dec_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// Decimal digits with an optional `-`, as `i64`.
pub(super) fn dec_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', digits)) => {
            let v = dec_u64(digits)?;
            if v == 1 << 63 {
                Some(i64::MIN)
            } else {
                i64::try_from(v).ok().map(|v| -v)
            }
        }
        _ => i64::try_from(dec_u64(s)?).ok(),
    }
}

/// Decimal digits with an optional `-`, as `i32`.
pub(super) fn dec_i32(s: &[u8]) -> Option<i32> {
    i32::try_from(dec_i64(s)?).ok()
}

/// Decimal digits as `u32`.
pub(super) fn dec_u32(s: &[u8]) -> Option<u32> {
    u32::try_from(dec_u64(s)?).ok()
}

/// `0x`-prefixed hexadecimal as `u64`.
pub(super) fn hex_u64(s: &[u8]) -> Option<u64> {
    let digits = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X"))?;
    hex_digits(digits)
}

/// Bare hexadecimal digits (at most 16) as `u64`.
pub(super) fn hex_digits(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in digits {
        v = (v << 4) | u64::from(char::from(b).to_digit(16)?);
    }
    Some(v)
}

/// A `%ld` value printed from an `unsigned long` (tlb_flush's `pages`): decimal with an
/// optional `-`, or hex with `0x` (libtraceevent's raw field dump). Values past `i64::MAX` are
/// the unsigned long itself, so they wrap as the kernel's `%ld` would (`18446744073709551615`
/// is -1, `TLB_FLUSH_ALL`).
pub(super) fn long_value(s: &[u8]) -> Option<i64> {
    if let Some(v) = hex_u64(s) {
        return Some(v as i64);
    }
    if s.first() == Some(&b'-') {
        return dec_i64(s);
    }
    dec_u64(s).map(|v| v as i64)
}

/// A timestamp as ftrace and perf print it, in ns, without going through floating point:
/// `SECS.FRACTION` with 1 to 9 fraction digits (6: µs, the ftrace default; 9: `perf script --ns`),
/// or bare `TICKS` (ftrace's `counter` and `x86-tsc` clocks print raw counts, kept as they are).
pub(super) fn timestamp_ns(s: &[u8]) -> Option<u64> {
    match s.iter().position(|&b| b == b'.') {
        None => dec_u64(s),
        Some(dot) => {
            let secs = dec_u64(&s[..dot])?;
            let frac = &s[dot + 1..];
            if frac.is_empty() || frac.len() > 9 {
                return None;
            }
            let scale = 10u64.pow(9 - frac.len() as u32);
            secs.checked_mul(1_000_000_000)?.checked_add(dec_u64(frac)? * scale)
        }
    }
}

/// Whether `s` has the shape of a timestamp token (digits, optionally `.` and digits).
pub(super) fn looks_like_timestamp(s: &[u8]) -> bool {
    let mut dots = 0;
    !s.is_empty()
        && s[0].is_ascii_digit()
        && s.iter().all(|&b| {
            dots += usize::from(b == b'.');
            b.is_ascii_digit() || b == b'.'
        })
        && dots <= 1
        && s[s.len() - 1] != b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_keep_every_digit() {
        // µs (ftrace), ns (perf --ns), and a value a float would round: 2^53 + 1 ns.
        assert_eq!(timestamp_ns(b"532.678034"), Some(532_678_034_000));
        assert_eq!(timestamp_ns(b"532.678034123"), Some(532_678_034_123));
        assert_eq!(timestamp_ns(b"9007199.254740993"), Some(9_007_199_254_740_993));
        assert_eq!(timestamp_ns(b"0.5"), Some(500_000_000));
        assert_eq!(timestamp_ns(b"123456789"), Some(123_456_789));
        assert_eq!(timestamp_ns(b"1.1234567891"), None);
        assert_eq!(timestamp_ns(b"1."), None);
        assert_eq!(timestamp_ns(b".5"), None);
        assert_eq!(timestamp_ns(b"18446744074.0"), None);
    }

    #[test]
    fn pages_wrap_like_percent_ld() {
        assert_eq!(long_value(b"-1"), Some(-1));
        assert_eq!(long_value(b"18446744073709551615"), Some(-1));
        assert_eq!(long_value(b"0xffffffffffffffff"), Some(-1));
        assert_eq!(long_value(b"0x10"), Some(16));
        assert_eq!(long_value(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(long_value(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(long_value(b"-9223372036854775809"), None);
        assert_eq!(long_value(b"18446744073709551616"), None);
        assert_eq!(long_value(b"1a"), None);
        assert_eq!(long_value(b""), None);
    }

    #[test]
    fn byte_search_agrees_with_position() {
        let hay: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37) % 11 + b'0').collect();
        for len in 0..hay.len() {
            for b in b'0'..=b':' {
                let h = &hay[..len];
                assert_eq!(find_byte(h, b), h.iter().position(|&x| x == b), "{len} {b}");
            }
        }
        // A byte equal to the pattern's high bit set does not flag its neighbour.
        assert_eq!(find_byte(b"\x80\x81\x80\x80\x80\x80\x80\x80\x01", 0x01), Some(8));
        assert_eq!(find_byte(b"\x00\x01\x00\x00\x00\x00\x00\x00", 0x01), Some(1));
    }

    #[test]
    fn searches() {
        assert_eq!(find(b"a: b: c", b": "), Some(1));
        assert_eq!(rfind(b"a: b: c", b": "), Some(4));
        assert_eq!(find(b"abc", b""), None);
        assert_eq!(rfind(b"ab", b"abc"), None);
        assert_eq!(field(b"cpu=1 callsite=x", b"cpu="), Some(&b"1"[..]));
        assert_eq!(field(b"cpu=", b"cpu="), Some(&b""[..]));
    }
}
