//! What a replay assumes where the trace is silent, as options with stated defaults.

use serde::Serialize;

/// Which pages a thread references after setup: the trace records no memory accesses, so the
/// refill cost of a flush depends entirely on this assumption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "pages")]
pub enum Refill {
    /// No references after setup: flush cost only, no refill.
    None,
    /// After each of its requests the initiator references the pages it asked to flush (for a
    /// request whose size is censored: the range the model flushed). A full flush then costs the
    /// same refill as a partial one.
    Flushed,
    /// Each thread uses this many pages of its region: it references them after each of its
    /// requests and each time it starts running again. A full flush then costs a refill of all
    /// of them, a partial one only of the flushed pages among them.
    WorkingSet(u64),
}

/// Settings of a replay.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayOptions {
    /// Simulated CPUs; `None`: one more than the highest CPU of the header or the records. A
    /// record on a CPU at or beyond this is an error.
    pub cpus: Option<usize>,
    /// Seed of the model's random streams (tick phases).
    pub seed: u64,
    /// Page references after flushes.
    pub refill: Refill,
    /// Without `sched_switch` records for a thread: two of its records on the same CPU at most
    /// this far apart mean it ran in between; a longer gap means it slept.
    pub idle_gap_ns: u64,
    /// A reason-4 record and the reason-3 (or 2) record of the same CPU and thread at most this
    /// much later belong to one request.
    pub pair_window_ns: u64,
    /// Records may go back in time by at most this much (per-CPU buffers merged with clock
    /// skew); more is an error.
    pub order_tolerance_ns: u64,
    /// `tlb_single_page_flush_ceiling` of the recording kernel (33 unless changed in debugfs):
    /// only used to explain censored sizes.
    pub recorded_ceiling: u64,
}

impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions {
            cpus: None,
            seed: 1,
            refill: Refill::Flushed,
            idle_gap_ns: 1_000_000,
            pair_window_ns: 1_000_000,
            order_tolerance_ns: 10_000,
            recorded_ceiling: 33,
        }
    }
}
