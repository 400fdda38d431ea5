//! Why a trace cannot be replayed.

use thiserror::Error;

/// A replay that cannot run; each names the record (0-based, in input order) or the setting at
/// fault.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A record goes back in time by more than the tolerance.
    #[error("record {index}: timestamp {ts_ns} ns is {back_ns} ns before the previous record's {previous_ns} ns (tolerance {tolerance_ns} ns): records must be in time order")]
    OutOfOrder {
        /// The record.
        index: u64,
        /// Its timestamp.
        ts_ns: u64,
        /// The latest timestamp before it.
        previous_ns: u64,
        /// How far back it goes.
        back_ns: u64,
        /// The tolerance.
        tolerance_ns: u64,
    },
    /// A record names a CPU the simulated machine does not have.
    #[error("record {index}: CPU {cpu} is beyond the {cpus} simulated CPUs (CPUs 0 to {last})", last = cpus - 1)]
    CpuOutOfRange {
        /// The record.
        index: u64,
        /// Its CPU.
        cpu: u32,
        /// CPUs simulated.
        cpus: usize,
    },
    /// More CPUs than the kernel model runs.
    #[error(
        "{cpus} CPUs: the kernel model runs at most {max} (one more is used for wake-up timers)"
    )]
    TooManyCpus {
        /// CPUs asked for (or seen in the trace).
        cpus: usize,
        /// The model's limit here.
        max: usize,
    },
    /// No flush request to replay.
    #[error("the trace has no flush requests (tlb:tlb_flush reason 2, 3 or 4 with a thread id): nothing to replay")]
    NothingToReplay,
    /// The ceiling is too high for censored requests to be made full.
    #[error("policy {policy}: tlb_single_page_flush_ceiling {ceiling} is above {max}: censored (full) requests cannot be replayed as a range above it")]
    CeilingTooHigh {
        /// The policy.
        policy: String,
        /// Its ceiling.
        ceiling: u64,
        /// The largest ceiling the replay handles.
        max: u64,
    },
    /// The replayed span (quiet gaps shortened) is more than the model's clock runs.
    #[error("the trace's replayed span, {span_ns} ns with every quiet gap shortened to 2 s, is more than the model runs at {mhz} MHz ({max_cycles} cycles)")]
    TooLong {
        /// The replayed span.
        span_ns: u64,
        /// The machine's clock.
        mhz: u64,
        /// The most cycles a replay runs.
        max_cycles: u64,
    },
    /// The sweep has no ceiling values.
    #[error("the ceiling sweep needs at least one value")]
    EmptySweep,
    /// A point of a sweep made against a twin laid out for lower ceilings, or of another seed.
    #[error("a point at ceiling {ceiling} (seed {seed}) needs a twin laid out for ceilings up to at least {ceiling} of the same seed; this twin is for ceilings up to {top}, seed {twin_seed}")]
    TwinMismatch {
        /// The point's ceiling.
        ceiling: u64,
        /// The twin's highest ceiling.
        top: u64,
        /// The point's seed.
        seed: u64,
        /// The twin's seed.
        twin_seed: u64,
    },
    /// The kernel model refused the policy on this machine.
    #[error("{}", naming_the_policy(policy, source))]
    Kernel {
        /// The policy.
        policy: String,
        /// The model's reason.
        source: tlblab_kernel::KernelError,
    },
}

impl ReplayError {
    /// The record (0-based, in input order) the error is about, if it is about one.
    pub fn record(&self) -> Option<u64> {
        match self {
            ReplayError::OutOfOrder { index, .. } | ReplayError::CpuOutOfRange { index, .. } => {
                Some(*index)
            }
            _ => None,
        }
    }

    /// Whether the trace's content is at fault (a record, its span, its CPUs, no request), so
    /// that the message should name the trace's file; a setting's error names the setting.
    pub fn is_about_the_trace(&self) -> bool {
        matches!(
            self,
            ReplayError::OutOfOrder { .. }
                | ReplayError::CpuOutOfRange { .. }
                | ReplayError::TooManyCpus { .. }
                | ReplayError::NothingToReplay
                | ReplayError::TooLong { .. }
        )
    }
}

/// The kernel model's refusal, led by the policy's name unless it already is.
fn naming_the_policy(policy: &str, source: &tlblab_kernel::KernelError) -> String {
    let text = source.to_string();
    if text.starts_with(&format!("policy {policy}")) {
        text
    } else {
        format!("policy {policy}: {text}")
    }
}
