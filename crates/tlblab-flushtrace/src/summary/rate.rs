//! `tlb_flush` events per fixed-width interval, counted in bounded memory without knowing the
//! trace's length in advance.
//!
//! Buckets are anchored at the first record. While counting, the width is a power of ten
//! (automatic) or the requested width; whenever a record would need more than a bucket cap, the
//! width grows by 10 (automatic) or 2 (requested) and each run of 10 (2) adjacent buckets merges
//! into one. Since buckets stay anchored at the first record and the new width is a multiple of
//! the old, the merged counts are exactly those of counting at the new width from the start, so
//! the result does not depend on when the growth happened.
//!
//! At the end an automatic width is chosen among 1, 2 and 5 × 10^k ns: the smallest that is a
//! multiple of the counting width and gives at most [`AUTO_MAX_BUCKETS`] buckets. The counting
//! width only grows past 200 buckets' worth of span (cap / 10), so the choice never depends on
//! the counting width and there are always more than 60 / 2.5 = 24 buckets (the steps between
//! nice widths are at most 2.5), unless the whole span is shorter than 24 ns.

use std::num::NonZeroU64;

use super::schema::{GroupCounts, GroupRates, IntervalChoice, Rate, RateBucket};
use crate::model::reason;

/// Reason groups: initiated (2, 3), sends (4), received (1), switch (0), other.
pub(crate) const GROUPS: usize = 5;

/// The group of a reason.
#[inline]
pub(crate) fn group(r: i32) -> usize {
    match r {
        reason::LOCAL_SHOOTDOWN | reason::LOCAL_MM_SHOOTDOWN => 0,
        reason::REMOTE_SEND_IPI => 1,
        reason::REMOTE_SHOOTDOWN => 2,
        reason::TASK_SWITCH => 3,
        _ => 4,
    }
}

/// The most buckets an automatic width gives.
pub(crate) const AUTO_MAX_BUCKETS: u64 = 60;
/// Buckets kept while counting with an automatic width (80 KB).
const AUTO_CAP: usize = 2_000;
/// Buckets a requested width may give before it is doubled.
pub(crate) const REQUESTED_CAP: usize = 10_000;

/// Counts per bucket and group.
#[derive(Debug, Clone)]
pub(crate) struct RateBins {
    requested: Option<NonZeroU64>,
    cap: usize,
    /// The counting width, ns.
    width: u64,
    /// The first record's timestamp; `None` before any record.
    origin: Option<u64>,
    /// The largest offset from the origin seen.
    last_offset: u64,
    bins: Vec<[u64; GROUPS]>,
    /// The bucket of the previous record and its absolute bounds, to skip the division while
    /// records stay in one bucket.
    cur: usize,
    cur_start: u64,
    cur_end: u64,
}

impl RateBins {
    pub(crate) fn new(requested: Option<NonZeroU64>) -> RateBins {
        RateBins::with_cap(requested, if requested.is_some() { REQUESTED_CAP } else { AUTO_CAP })
    }

    fn with_cap(requested: Option<NonZeroU64>, cap: usize) -> RateBins {
        RateBins {
            requested,
            cap: cap.max(2),
            width: requested.map_or(1, NonZeroU64::get),
            origin: None,
            last_offset: 0,
            bins: Vec::new(),
            cur: 0,
            cur_start: 1,
            cur_end: 0,
        }
    }

    /// Counts a record at `ts` in `group` (`None`: a record that only extends the span).
    #[inline]
    pub(crate) fn add(&mut self, ts: u64, group: Option<usize>) {
        let origin = *self.origin.get_or_insert(ts);
        // A record earlier than the first counts in the first bucket.
        let offset = ts.saturating_sub(origin);
        self.last_offset = self.last_offset.max(offset);
        if !(self.cur_start <= ts && ts < self.cur_end) {
            self.locate(origin, offset);
        }
        if let Some(g) = group {
            self.bins[self.cur][g] += 1;
        }
    }

    /// Makes `cur` the bucket of `offset`, growing the width if it lies beyond the cap.
    #[cold]
    fn locate(&mut self, origin: u64, offset: u64) {
        let mut idx = offset / self.width;
        while idx >= self.cap as u64 {
            self.grow();
            idx = offset / self.width;
        }
        let idx = idx as usize;
        if self.bins.len() <= idx {
            self.bins.resize(idx + 1, [0; GROUPS]);
        }
        self.cur = idx;
        self.cur_start = origin.saturating_add(idx as u64 * self.width);
        self.cur_end = self.cur_start.saturating_add(self.width);
    }

    fn grow(&mut self) {
        let factor = if self.requested.is_some() { 2 } else { 10 };
        self.bins = self
            .bins
            .chunks(factor)
            .map(|run| {
                let mut sum = [0; GROUPS];
                for b in run {
                    sum.iter_mut().zip(b).for_each(|(s, c)| *s += c);
                }
                sum
            })
            .collect();
        self.width = self.width.saturating_mul(factor as u64);
    }

    /// The table: the final width, and the buckets from the first to the last record.
    pub(crate) fn finish(&self) -> Rate {
        let interval = match self.requested {
            None => IntervalChoice::Auto,
            Some(r) if r.get() == self.width => IntervalChoice::Requested,
            Some(r) => IntervalChoice::Widened { requested_ns: r.get() },
        };
        let Some(origin) = self.origin else {
            return Rate { interval_ns: self.width, interval, origin_ts_ns: None, buckets: vec![] };
        };
        let span = self.last_offset;
        let width = match self.requested {
            None => nice_width(self.width, span),
            Some(_) => self.width,
        };
        let n = span.div_ceil(width).max(1);
        let ratio = (width / self.width) as usize;
        let mut counts = vec![[0u64; GROUPS]; n as usize];
        for (i, b) in self.bins.iter().enumerate() {
            // A record exactly at the end of the last interval belongs to the last bucket.
            let j = (i / ratio).min(n as usize - 1);
            counts[j].iter_mut().zip(b).for_each(|(s, c)| *s += c);
        }
        let buckets = counts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let start = i as u64 * width;
                let per_second = |x: u64| x as f64 * 1e9 / width as f64;
                RateBucket {
                    start_ns: start,
                    end_ns: start.saturating_add(width).min(span),
                    events: GroupCounts {
                        initiated: c[0],
                        sends: c[1],
                        received: c[2],
                        switch: c[3],
                        other: c[4],
                    },
                    per_second: GroupRates {
                        initiated: per_second(c[0]),
                        sends: per_second(c[1]),
                        received: per_second(c[2]),
                        switch: per_second(c[3]),
                        other: per_second(c[4]),
                    },
                }
            })
            .collect();
        Rate { interval_ns: width, interval, origin_ts_ns: Some(origin), buckets }
    }
}

/// The smallest 1, 2 or 5 × 10^k multiple of `base` (a power of ten) that cuts `span` into at
/// most [`AUTO_MAX_BUCKETS`] buckets.
fn nice_width(base: u64, span: u64) -> u64 {
    let mut decade = base;
    loop {
        for m in [1, 2, 5] {
            let Some(w) = decade.checked_mul(m) else { return u64::MAX };
            if span.div_ceil(w) <= AUTO_MAX_BUCKETS {
                return w;
            }
        }
        decade = match decade.checked_mul(10) {
            Some(d) => d,
            None => return u64::MAX,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn totals(rate: &Rate) -> u64 {
        rate.buckets
            .iter()
            .map(|b| {
                let e = b.events;
                e.initiated + e.sends + e.received + e.switch + e.other
            })
            .sum()
    }

    #[test]
    fn nice_widths_step_through_1_2_5() {
        // 1 s of span: 20 ms gives 50 buckets, 10 ms would give 100.
        assert_eq!(nice_width(1, 1_000_000_000), 20_000_000);
        // 2.5 s: 50 ms → 50 buckets; 20 ms → 125.
        assert_eq!(nice_width(1, 2_500_000_000), 50_000_000);
        // 6 s: 100 ms → 60 buckets, the limit itself.
        assert_eq!(nice_width(1, 6_000_000_000), 100_000_000);
        assert_eq!(nice_width(1, 0), 1);
        assert_eq!(nice_width(1000, 10), 1000);
    }

    #[test]
    fn an_auto_width_is_chosen_from_the_span_only() {
        // 1 s of span: counting grows to 1 ms (1 s / 1 µs = 1e6 buckets > cap 2000, 1 s / 1 ms
        // = 1000), then 20 ms is the smallest nice width with at most 60 buckets.
        let mut r = RateBins::new(None);
        r.add(5, Some(2));
        r.add(5 + 1_000_000_000, Some(3));
        let rate = r.finish();
        assert_eq!(rate.interval_ns, 20_000_000);
        assert_eq!(rate.buckets.len(), 50);
        assert_eq!(rate.buckets[0].events.received, 1);
        // The record at exactly 50 × 20 ms closes the last bucket rather than opening a 51st.
        assert_eq!(rate.buckets[49].events.switch, 1);
        assert_eq!(rate.buckets[49].end_ns, 1_000_000_000);
    }

    #[test]
    fn a_requested_width_that_would_give_too_many_buckets_doubles() {
        let mut r = RateBins::new(NonZeroU64::new(1));
        r.add(0, Some(0));
        r.add(REQUESTED_CAP as u64 * 3, Some(1));
        let rate = r.finish();
        // 3 × cap ns needs width 4 (2 would still leave index 1.5 × cap).
        assert_eq!(rate.interval, IntervalChoice::Widened { requested_ns: 1 });
        assert_eq!(rate.interval_ns, 4);
        assert_eq!(totals(&rate), 2);
        assert_eq!(rate.buckets.last().unwrap().events.sends, 1);
    }

    proptest! {
        /// Counting with a small cap (many merges) gives the same table as counting with a cap
        /// so large that nothing merges, and as binning every record directly at the final
        /// width.
        #[test]
        fn merging_is_exact(
            mut offsets in proptest::collection::vec((0u64..5_000_000_000, 0usize..GROUPS), 1..300),
            base in 0u64..1_000_000_000_000,
        ) {
            offsets.sort();
            let run = |cap| {
                let mut r = RateBins::with_cap(None, cap);
                for &(o, g) in &offsets {
                    r.add(base + o, Some(g));
                }
                r.finish()
            };
            let small = run(700);
            let huge = run(100_000);
            prop_assert_eq!(&small, &huge);
            let first = offsets[0].0;
            let span = offsets.last().unwrap().0 - first;
            let w = small.interval_ns;
            prop_assert_eq!(w, nice_width(1, span));
            let n = small.buckets.len() as u64;
            prop_assert!(n <= AUTO_MAX_BUCKETS);
            prop_assert_eq!(n, span.div_ceil(w).max(1));
            let mut direct = vec![[0u64; GROUPS]; n as usize];
            for &(o, g) in &offsets {
                direct[((o - first) / w).min(n - 1) as usize][g] += 1;
            }
            for (b, d) in small.buckets.iter().zip(&direct) {
                let e = b.events;
                prop_assert_eq!([e.initiated, e.sends, e.received, e.switch, e.other], *d);
            }
            prop_assert_eq!(totals(&small), offsets.len() as u64);
        }
    }
}
