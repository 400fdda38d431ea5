//! Page reuse drawn from a measured LRU stack-distance profile.
//!
//! A program's references to its pages are described, per stream (instruction fetches, data),
//! by their *stack distance*: how many other pages the stream referenced since it last
//! referenced this one (Mattson et al., 1970). A fully associative LRU TLB of `E` entries
//! misses exactly the references at distance `E` or more, so a stream drawn from a measured
//! distance profile misses a TLB of any size as the program does, and after a flush it
//! refills the pages the program would have found in the TLB: the pages it comes back to.
//!
//! Only references at distance [`FILTER`] or more are drawn: nearer ones hit any L1 TLB
//! of the presets and cost the model nothing, and drawing them would multiply the events
//! (a compiler changes page about once per instruction). NOTE: so after a full flush the
//! model refills the pages the program comes back to at [`FILTER`] or more, not the few
//! dozen it never leaves; tools/calibrate/results/cc1-page-reuse-2026-11-30.md.

use rand::RngExt;

/// References nearer than this many distinct pages are not drawn (see the module).
pub const FILTER: u64 = 64;

/// A stream's measured reuse: how many references per ms of the program's user time come
/// back to a page at distance [`FILTER`] or more, and how their distances are spread.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ReuseProfile {
    /// References at distance [`FILTER`] or more per ms of user time.
    pub refs_per_ms: f64,
    /// Shares of those references by distance: bucket `i` holds distances
    /// `FILTER << i` to `(FILTER << (i + 1)) - 1`; the shares sum to 1.
    pub shares: [f64; 6],
}

impl ReuseProfile {
    /// The profile ready to draw from.
    pub fn sampler(&self) -> DistanceSampler {
        let mut thresholds = [u32::MAX; 6];
        let mut sum = 0.0;
        for (t, share) in thresholds.iter_mut().zip(self.shares) {
            sum += share;
            *t = (sum.min(1.0) * f64::from(u32::MAX)) as u32;
        }
        thresholds[5] = u32::MAX;
        DistanceSampler { thresholds }
    }
}

/// Draws distances from a [`ReuseProfile`]: a bucket by its share, then uniformly within it,
/// both from one 64-bit draw (the model's hottest path).
#[derive(Clone, Copy, Debug)]
pub struct DistanceSampler {
    /// Bucket `i` is drawn when the high 32 bits are below `thresholds[i]` and not below the
    /// one before (cumulative shares of `u32::MAX`).
    thresholds: [u32; 6],
}

impl DistanceSampler {
    /// A distance drawn from the profile.
    pub fn draw(&self, rng: &mut impl RngExt) -> u64 {
        let u: u64 = rng.random();
        let high = (u >> 32) as u32;
        let bucket = self.thresholds.iter().position(|t| high < *t).unwrap_or(5);
        let lo = FILTER << bucket;
        // The low 32 bits scaled to the bucket's width (Lemire's multiply: no division).
        lo + (((u & u64::from(u32::MAX)) * lo) >> 32)
    }
}

/// A region's pages in LRU order: the stack a [`ReuseProfile`] indexes.
#[derive(Clone, Debug, Default)]
pub struct LruPages {
    /// Pages (within their region), least recently referenced first: 32 bits halve what a
    /// reference moves.
    pages: Vec<u32>,
}

impl LruPages {
    /// `page` was just referenced for the first time.
    pub fn push(&mut self, page: u64) {
        self.pages.push(u32::try_from(page).expect("a region has under 2^32 pages"));
    }

    /// Pages on the stack.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// References the page `distance` other pages down the stack (the oldest if the stack is
    /// not that deep) and returns it; `None` on an empty stack.
    pub fn reference(&mut self, distance: u64) -> Option<u64> {
        let top = self.pages.len().checked_sub(1)?;
        let at = top - (distance as usize).min(top);
        let page = self.pages.remove(at);
        self.pages.push(page);
        Some(u64::from(page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The stack is LRU: a page referenced goes to the top, and distance `d` is the page with
    /// `d` others referenced since.
    #[test]
    fn a_reference_at_distance_d_skips_d_pages_referenced_since() {
        let mut s = LruPages::default();
        assert_eq!(s.reference(0), None);
        for p in 0..5 {
            s.push(p);
        }
        assert_eq!(s.reference(0), Some(4));
        assert_eq!(s.reference(4), Some(0)); // 4, 3, 2, 1 since page 0
        assert_eq!(s.reference(1), Some(4)); // 0 since page 4
        assert_eq!(s.reference(99), Some(1), "deeper than the stack: the oldest");
        assert_eq!(s.len(), 5);
    }

    /// Draws fall in their buckets at the profile's shares.
    #[test]
    fn distances_are_drawn_at_the_profile_shares() {
        let p = ReuseProfile { refs_per_ms: 1.0, shares: [0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0] };
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let sampler = p.sampler();
        let mut counts = [0u64; 6];
        let n = 200_000;
        for _ in 0..n {
            let d = sampler.draw(&mut rng);
            assert!((FILTER..FILTER << 6).contains(&d), "{d}");
            counts[(d / FILTER).ilog2() as usize] += 1;
        }
        for (i, c) in counts.iter().enumerate() {
            let share = *c as f64 / n as f64;
            assert!((share - p.shares[i]).abs() < 0.005, "bucket {i}: {share}");
        }
    }
}
