//! How cold the page a fault allocates is (mechanism `hot-frames`).
//!
//! A CPU's page allocator hands out the page it freed last: a freed order-0 page goes to the
//! head of the CPU's per-CPU list (`free_frozen_page_commit()` → `list_add()` on
//! `pcp->lists`), and `__rmqueue_pcplist()` takes the list's head (mm/page_alloc.c). A fault
//! in a loop that frees and refaults a few pages therefore gets frames whose lines, and whose
//! `struct page`, this CPU touched a moment ago; zeroing one costs less than zeroing a page that
//! has been out of the caches. Each CPU keeps the order of its frees, and a fault's frame is
//! the last one freed; its *distance* is how many frames this CPU freed or allocated since that
//! one was freed. The host preset measures a fault at both ends: `page_fault_anon_hot` in a
//! loop that refaults the same `FAULT_HOT_PAGES` pages (distances below twice that), and
//! `page_fault_anon` in one that faults `FAULT_COLD_PAGES` fresh pages (about twice that).
//!
//! NOTE: between the two the cost follows a straight line in log2 of the distance (a cache
//! loses a working set gradually as it outgrows its levels); every fault of a frame no list
//! holds (the first of a run, one past [`KEPT`] frees) is charged the cold figure, though one
//! from the buddy allocator after a larger footprint may cost more; frames are not told apart
//! by their other uses (a workload's own data traffic also evicts them); copy-on-write faults
//! keep `page_fault_cow`.

use super::Kernel;
use crate::observer::Observer;
use std::collections::VecDeque;
use tlblab_sim::machine::raw::{FAULT_COLD_PAGES as COLD_PAGES, FAULT_HOT_PAGES as HOT_PAGES};
use tlblab_types::CpuId;

/// Frees remembered per CPU: past the cold loop's distances every frame costs the cold figure.
const KEPT: usize = 2 * COLD_PAGES as usize;

/// One CPU's freed frames, newest last, each by the event count at which it was freed.
#[derive(Clone, Debug, Default)]
pub(crate) struct FreeFrames {
    freed_at: VecDeque<u64>,
    events: u64,
}

impl FreeFrames {
    /// A page freed on this CPU.
    pub(crate) fn free(&mut self) {
        if self.freed_at.len() == KEPT {
            self.freed_at.pop_front();
        }
        self.freed_at.push_back(self.events);
        self.events += 1;
    }

    /// A page allocated on this CPU: how many frames were freed or allocated here since it was
    /// freed, or `None` for a frame no list holds.
    pub(crate) fn alloc(&mut self) -> Option<u64> {
        let distance = self.freed_at.pop_back().map(|at| self.events - at);
        self.events += 1;
        distance
    }
}

impl<O: Observer> Kernel<O> {
    /// The per-CPU free lists, where the preset measured a hot fault apart and the mechanism
    /// is on.
    pub(super) fn free_frames(nr_cpus: usize, hot: u64, on: bool) -> Option<Vec<FreeFrames>> {
        (on && hot > 0).then(|| vec![FreeFrames::default(); nr_cpus])
    }

    /// A page freed on `cpu` (a zap's, a reclaim's).
    pub(super) fn frame_freed(&mut self, cpu: CpuId) {
        if let Some(frames) = self.free_frames.as_deref_mut() {
            frames[usize::from(cpu.0)].free();
        }
    }

    /// An anonymous write fault on `cpu`: `page_fault_anon`, or with `hot-frames` the cost by
    /// its frame's distance.
    pub(super) fn anon_fault_cycles(&mut self, cpu: CpuId) -> u64 {
        let cold = self.costs.page_fault_anon.cycles;
        match self.free_frames.as_deref_mut() {
            Some(frames) => {
                let distance = frames[usize::from(cpu.0)].alloc();
                fault_cycles(self.costs.page_fault_anon_hot.cycles, cold, distance)
            }
            None => cold,
        }
    }
}

/// The cost of a fault whose frame is at `distance` (`None`: cold), between `hot` and `cold`.
pub(crate) fn fault_cycles(hot: u64, cold: u64, distance: Option<u64>) -> u64 {
    let (near, far) = (2 * HOT_PAGES, 2 * COLD_PAGES);
    match distance {
        Some(d) if d <= near => hot,
        Some(d) if d < far => {
            let share = (d as f64 / near as f64).log2() / (far as f64 / near as f64).log2();
            hot + ((cold.saturating_sub(hot)) as f64 * share).round() as u64
        }
        _ => cold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop that frees N pages and refaults them gets them back last-freed first: distances
    /// 1, 3, …, 2N − 1.
    #[test]
    fn the_last_frame_freed_comes_back_first() {
        let mut f = FreeFrames::default();
        for _ in 0..4 {
            f.free();
        }
        let d: Vec<Option<u64>> = (0..5).map(|_| f.alloc()).collect();
        assert_eq!(d, [Some(1), Some(3), Some(5), Some(7), None]);
    }

    /// Hot up to twice the hot loop's pages, cold from twice the cold loop's, halfway between
    /// (in log2) half of each; a frame no list holds is cold.
    #[test]
    fn a_fault_costs_the_hot_figure_near_the_cold_figure_far_and_a_log_line_between() {
        assert_eq!(fault_cycles(1000, 2000, Some(1)), 1000);
        assert_eq!(fault_cycles(1000, 2000, Some(512)), 1000);
        assert_eq!(fault_cycles(1000, 2000, Some(2048)), 1500);
        assert_eq!(fault_cycles(1000, 2000, Some(8192)), 2000);
        assert_eq!(fault_cycles(1000, 2000, None), 2000);
        // Hot dearer than cold (noise): never below the cold figure's side of the line.
        assert_eq!(fault_cycles(2000, 1000, Some(2048)), 2000);
    }

    /// Past KEPT frees the oldest are forgotten: their frames are cold.
    #[test]
    fn only_the_newest_frees_are_kept() {
        let mut f = FreeFrames::default();
        for _ in 0..KEPT + 10 {
            f.free();
        }
        assert_eq!(f.freed_at.len(), KEPT);
    }
}
