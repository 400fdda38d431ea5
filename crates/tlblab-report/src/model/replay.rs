//! The fields of `tlblab.sim.replay/1` and `tlblab.sim.replay-sweep/1`
//! (crates/tlblab-replay/src/report.rs, docs/replay.md) that the report shows. The replay's own
//! types only serialise, so these read them back.

use serde::Deserialize;
use std::collections::BTreeMap;

/// `tlblab sim replay FILE --json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Replay {
    /// The machine preset.
    pub machine: String,
    /// The trace.
    pub trace: TraceSummary,
    /// The options, shown as they are.
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    /// What the replay assumed.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// One per policy.
    pub policies: Vec<PolicyReplay>,
}

/// `tlblab sim replay FILE --ceiling … --json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Sweep {
    /// The machine preset.
    pub machine: String,
    /// The policy whose ceiling is swept.
    pub policy: String,
    /// The trace.
    pub trace: TraceSummary,
    /// The options.
    #[serde(default)]
    pub options: BTreeMap<String, serde_json::Value>,
    /// What the replay assumed.
    #[serde(default)]
    pub assumptions: Vec<String>,
    /// One per ceiling.
    pub rows: Vec<PolicyReplay>,
}

/// What the trace holds.
#[derive(Debug, Clone, Deserialize)]
pub struct TraceSummary {
    /// Records read.
    pub records: u64,
    /// From first to last record, ns.
    pub span_ns: u64,
    /// The trace clock.
    pub clock: String,
    /// The recording kernel.
    #[serde(default)]
    pub kernel_release: Option<String>,
    /// CPUs replayed.
    pub cpus: u64,
    /// `switch` or `inferred`.
    pub schedule: String,
    /// Processes.
    pub processes: u64,
    /// Threads.
    pub threads: u64,
    /// The requests reconstructed.
    pub requests: Requests,
}

/// How the requests were reconstructed.
#[derive(Debug, Clone, Deserialize)]
pub struct Requests {
    /// All.
    pub total: u64,
    /// Reason 4 + 3 pairs.
    pub paired: u64,
    /// Reason 3 alone.
    pub local_only: u64,
    /// Reason 4 alone.
    pub send_only: u64,
    /// Batched reclaim.
    pub batches: u64,
    /// Full at recording time.
    pub censored: u64,
}

/// The replay under one policy (or at one ceiling).
#[derive(Debug, Clone, Deserialize)]
pub struct PolicyReplay {
    /// The policy.
    pub policy: String,
    /// What it mirrors.
    pub mirrors: String,
    /// Its `tlb_single_page_flush_ceiling`.
    pub ceiling: u64,
    /// Every thread followed its whole schedule.
    pub complete: bool,
    /// Threads that did not.
    pub threads_unfinished: u64,
    /// Requests made.
    pub requests_replayed: u64,
    /// Full flushes at this ceiling.
    pub requests_full: u64,
    /// Partial flushes.
    pub requests_partial: u64,
    /// Censored requests (full at every ceiling).
    pub requests_censored: u64,
    /// `tlb:tlb_flush` by reason, recorded and replayed.
    #[serde(default)]
    pub tlb_flush: Vec<ReasonRow>,
    /// Flush IPIs sent.
    pub ipis_sent: u64,
    /// Flush IPIs received.
    pub ipis_received: u64,
    /// What the flushes cost.
    pub cost: Cost,
    /// The model's clock, MHz.
    pub clock_mhz: u64,
    /// Simulated time, cycles.
    pub elapsed_cycles: u64,
    /// Lateness of the requests.
    pub slip: Slip,
}

/// `tlb:tlb_flush` events of one reason.
#[derive(Debug, Clone, Deserialize)]
pub struct ReasonRow {
    /// The reason value.
    pub reason: i32,
    /// Its label.
    pub label: String,
    /// In the trace.
    pub recorded: KindCounts,
    /// In the replay.
    pub replayed: KindCounts,
}

/// Events by what they flushed.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct KindCounts {
    /// All.
    pub total: u64,
    /// Full flushes.
    pub full: u64,
    /// Partial.
    pub partial: u64,
    /// Nothing flushed.
    pub none: u64,
}

/// The flushes' cost: the replay minus its twin (can be slightly negative).
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Cost {
    /// Initiators' cycles.
    pub initiator_cycles: i64,
    /// Receivers' interrupt cycles.
    pub receiver_cycles: i64,
    /// Refill translation cycles.
    pub refill_cycles: i64,
    /// Refill page walks.
    pub refill_walks: i64,
}

/// How late the model made the requests.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Slip {
    /// Requests more than 1 µs late.
    pub late_requests: u64,
    /// Largest lateness, ns.
    pub max_ns: f64,
}

impl Cost {
    /// Initiator + receiver + refill cycles.
    pub fn total(&self) -> i64 {
        self.initiator_cycles + self.receiver_cycles + self.refill_cycles
    }
}
