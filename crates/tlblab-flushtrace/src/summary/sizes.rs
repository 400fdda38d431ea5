//! Histograms of `pages` per `tlb_flush` event, one per reason, in fixed slots so that counting
//! is an array increment.
//!
//! Slots: full (`-1`), `0`, each exact value `1..=64` (the kernel's
//! `tlb_single_page_flush_ceiling` is 33, so the exact values around it matter), then the
//! power-of-two ranges `65-128`, `129-256`, … up to `i64::MAX`, and one slot for values below
//! -1 (never written by the kernel, but a decoded field can hold anything).

use std::collections::BTreeMap;

use super::schema::{SizeHistogram, SizeRow};
use crate::model::{reason, FLUSH_ALL};

/// Slots: full, 0, 1..=64, the 57 ranges (2^(k-1), 2^k] for k = 7..=63, negative.
const SLOTS: usize = 2 + 64 + 57 + 1;
const NEGATIVE: usize = SLOTS - 1;
/// Reasons counted in dense arrays; others (new kernels, garbage) go to a map.
const DENSE_REASONS: usize = 8;

type Slots = [u64; SLOTS];

/// The slot of a `pages` value.
fn slot(pages: i64) -> usize {
    match pages {
        FLUSH_ALL => 0,
        0..=64 => pages as usize + 1,
        // (2^(k-1), 2^k] with k = ceil(log2(pages)) = 64 - lzcnt(pages - 1), k in 7..=63.
        p if p > 64 => 66 + (64 - (p as u64 - 1).leading_zeros() as usize - 7),
        _ => NEGATIVE,
    }
}

/// The label and bounds of a slot.
fn bounds(slot: usize) -> (String, i64, i64) {
    match slot {
        0 => ("full".into(), FLUSH_ALL, FLUSH_ALL),
        1..=65 => {
            let v = slot as i64 - 1;
            (v.to_string(), v, v)
        }
        NEGATIVE => ("negative".into(), i64::MIN, -2),
        _ => {
            let k = (slot - 66 + 7) as u32;
            let min = (1i64 << (k - 1)) + 1;
            let max = if k == 63 { i64::MAX } else { 1i64 << k };
            (format!("{min}-{max}"), min, max)
        }
    }
}

/// Per-reason slot counts.
#[derive(Debug, Clone)]
pub(crate) struct SizeCounter {
    dense: Box<[Slots; DENSE_REASONS]>,
    sparse: BTreeMap<i32, Box<Slots>>,
}

impl SizeCounter {
    pub(crate) fn new() -> SizeCounter {
        SizeCounter { dense: Box::new([[0; SLOTS]; DENSE_REASONS]), sparse: BTreeMap::new() }
    }

    #[inline]
    pub(crate) fn add(&mut self, reason: i32, pages: i64) {
        let s = slot(pages);
        match usize::try_from(reason) {
            Ok(r) if r < DENSE_REASONS => self.dense[r][s] += 1,
            _ => self.sparse.entry(reason).or_insert_with(|| Box::new([0; SLOTS]))[s] += 1,
        }
    }

    fn slots(&self, reason: i32) -> Option<&Slots> {
        match usize::try_from(reason) {
            Ok(r) if r < DENSE_REASONS => Some(&self.dense[r]),
            _ => self.sparse.get(&reason).map(|b| &**b),
        }
    }

    /// The histogram of reasons 1, 2 and 3 together (flushes CPUs performed).
    pub(crate) fn performed(&self) -> SizeHistogram {
        let mut sum = [0u64; SLOTS];
        for r in [reason::REMOTE_SHOOTDOWN, reason::LOCAL_SHOOTDOWN, reason::LOCAL_MM_SHOOTDOWN] {
            if let Some(s) = self.slots(r) {
                sum.iter_mut().zip(s).for_each(|(a, b)| *a += b);
            }
        }
        histogram(&sum)
    }

    /// One histogram per reason that occurs.
    pub(crate) fn by_reason(&self) -> BTreeMap<i32, SizeHistogram> {
        let dense = (0..DENSE_REASONS as i32).filter_map(|r| Some((r, self.slots(r)?)));
        let sparse = self.sparse.iter().map(|(r, s)| (*r, &**s));
        dense
            .chain(sparse)
            .filter(|(_, s)| s.iter().any(|&c| c > 0))
            .map(|(r, s)| (r, histogram(s)))
            .collect()
    }
}

/// The rows that occur, with percentages of the whole.
fn histogram(slots: &Slots) -> SizeHistogram {
    let events: u64 = slots.iter().sum();
    let percent = |n: u64| if events == 0 { 0.0 } else { n as f64 * 100.0 / events as f64 };
    let mut cumulative = 0;
    let rows = (0..SLOTS)
        .filter(|&s| slots[s] > 0)
        .map(|s| {
            cumulative += slots[s];
            let (pages, min, max) = bounds(s);
            SizeRow {
                pages,
                min,
                max,
                events: slots[s],
                percent: percent(slots[s]),
                cumulative_percent: percent(cumulative),
            }
        })
        .collect();
    SizeHistogram { events, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_cover_every_value_once_with_their_bounds() {
        for v in
            [i64::MIN, -2, -1, 0, 1, 33, 64, 65, 127, 128, 129, 1 << 40, i64::MAX - 1, i64::MAX]
        {
            let (_, min, max) = bounds(slot(v));
            assert!(min <= v && v <= max, "{v} in slot {} ({min}..={max})", slot(v));
        }
        // Adjacent slots meet without a gap: each range starts one above the previous end.
        for s in 66..NEGATIVE - 1 {
            assert_eq!(bounds(s).2 + 1, bounds(s + 1).1);
        }
        assert_eq!(bounds(65).2 + 1, bounds(66).1);
        assert_eq!(bounds(NEGATIVE - 1).2, i64::MAX);
        assert_eq!(bounds(slot(100)).0, "65-128");
        assert_eq!(bounds(slot(129)).0, "129-256");
    }
}
