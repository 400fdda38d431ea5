//! What a replay reports, per policy and per ceiling, and how it is computed from a run and
//! its twin.

use crate::options::{Refill, ReplayOptions};
use crate::plan::{Kind, KindCounts, Plan, Size, TraceSummary};
use crate::run::RunOutput;
use serde::Serialize;
use tlblab_flushtrace::Header;
use tlblab_kernel::observer::Vmstat;
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::Policy;

/// The JSON schema of [`ReplayReport`].
pub const SCHEMA: &str = "tlblab.sim.replay/1";
/// The JSON schema of [`SweepReport`].
pub const SWEEP_SCHEMA: &str = "tlblab.sim.replay-sweep/1";

/// `tlb:tlb_flush` events of one reason: recorded, and made by the model.
#[derive(Clone, Debug, Serialize)]
pub struct ReasonRow {
    /// The reason value.
    pub reason: i32,
    /// Its label (the trace's, else the 6.18 one).
    pub label: String,
    /// In the trace.
    pub recorded: KindCounts,
    /// In the replay (on the trace's CPUs, from the first record's time).
    pub replayed: KindCounts,
}

/// The cost of the flushes: each figure is the replay's minus its twin's (the same run with
/// every request made on pages that are not present, so that nothing is flushed). A figure can
/// come out slightly negative when the flushes shift other work in time.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Cost {
    /// Initiators: cycles from the requests' system calls to their return (flushing, sending
    /// IPIs, waiting for acknowledgements, and any interrupt taken meanwhile).
    pub initiator_cycles: i64,
    /// Receivers: interrupt-handler cycles on the trace's CPUs (IPI entry and exit, reading
    /// the request, the flush, leaving idle).
    pub receiver_cycles: i64,
    /// Refill: translation cycles (STLB lookups and page walks) of the references after the
    /// flushes, as the refill assumption has them.
    pub refill_cycles: i64,
    /// Page walks among them.
    pub refill_walks: i64,
    /// Page faults (batched reclaim unmaps pages, which fault when referenced again).
    pub page_faults: i64,
}

/// How far behind the recording the model made the requests.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Slip {
    /// Requests made more than 1 µs after their recorded time.
    pub late_requests: u64,
    /// Mean lateness, ns.
    pub mean_ns: f64,
    /// Largest lateness, ns.
    pub max_ns: f64,
}

/// The replay under one policy.
#[derive(Clone, Debug, Serialize)]
pub struct PolicyReplay {
    /// The policy's name.
    pub policy: String,
    /// What it mirrors.
    pub mirrors: String,
    /// Its `tlb_single_page_flush_ceiling`.
    pub ceiling: u64,
    /// Every thread followed its whole schedule.
    pub complete: bool,
    /// Threads that had not when the run was stopped.
    pub threads_unfinished: u64,
    /// Requests made.
    pub requests_replayed: u64,
    /// Range requests above the ceiling, or censored: full flushes at this ceiling.
    pub requests_full: u64,
    /// Range requests at or below the ceiling: partial flushes.
    pub requests_partial: u64,
    /// Censored requests among the full ones.
    pub requests_censored: u64,
    /// Batched reclaim requests (always full).
    pub requests_batch: u64,
    /// `tlb:tlb_flush` by reason, recorded and replayed.
    pub tlb_flush: Vec<ReasonRow>,
    /// Flush IPIs sent, on the trace's CPUs.
    pub ipis_sent: u64,
    /// Flush IPIs received (`/proc/interrupts` TLB row), on the trace's CPUs.
    pub ipis_received: u64,
    /// IPIs sent per CPU.
    pub ipis_sent_per_cpu: Vec<u64>,
    /// IPIs received per CPU.
    pub ipis_received_per_cpu: Vec<u64>,
    /// What the flushes cost.
    pub cost: Cost,
    /// The model's clock, MHz.
    pub clock_mhz: u64,
    /// Simulated time from the first record to the end of the last thread's schedule, cycles.
    pub elapsed_cycles: u64,
    /// Lateness of the requests.
    pub slip: Slip,
    /// Threads whose setup overran their first recorded time.
    pub setup_late_threads: u64,
    /// The model's `CONFIG_DEBUG_TLBFLUSH` counters (whole run).
    pub vmstat: Vmstat,
    /// Events the model processed (replay and twin).
    pub model_events: u64,
}

/// A replay of one trace under several policies.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The machine preset.
    pub machine: String,
    /// The trace.
    pub trace: TraceSummary,
    /// The options.
    pub options: ReplayOptions,
    /// What the replay assumed, in words.
    pub assumptions: Vec<String>,
    /// One per policy, in the order given.
    pub policies: Vec<PolicyReplay>,
}

/// `tlb_single_page_flush_ceiling` swept on one trace under one policy (S10).
#[derive(Clone, Debug, Serialize)]
pub struct SweepReport {
    /// [`SWEEP_SCHEMA`].
    pub schema: &'static str,
    /// The machine preset.
    pub machine: String,
    /// The policy whose ceiling is swept.
    pub policy: String,
    /// The trace.
    pub trace: TraceSummary,
    /// The options.
    pub options: ReplayOptions,
    /// What the replay assumed, in words.
    pub assumptions: Vec<String>,
    /// One per ceiling, in the order given.
    pub rows: Vec<PolicyReplay>,
}

fn translation(k: &KernelReport) -> (u64, u64) {
    let h = &k.hw;
    let cycles = h.dtlb_load_misses.translation_cycles
        + h.dtlb_store_misses.translation_cycles
        + h.itlb_misses.translation_cycles;
    (cycles, h.page_walks.walks)
}

fn diff(a: u64, b: u64) -> i64 {
    a as i64 - b as i64
}

/// The report of a replay under `policy` from its run and its twin's.
pub(crate) fn policy_replay(
    plan: &Plan,
    header: &Header,
    policy: &Policy,
    run: &RunOutput,
    twin: &RunOutput,
) -> PolicyReplay {
    let n = plan.cpus;
    let ceiling = policy.tlb_single_page_flush_ceiling;
    let (mut full, mut partial, mut censored, mut batch) = (0, 0, 0, 0);
    for r in plan.threads.iter().flat_map(|t| &t.requests) {
        match (r.kind, r.size) {
            (Kind::Batch, _) => batch += 1,
            (Kind::Mm, Size::Censored) => {
                censored += 1;
                full += 1;
            }
            (Kind::Mm, Size::Pages(p)) if p > ceiling => full += 1,
            (Kind::Mm, Size::Pages(_)) => partial += 1,
        }
    }
    let k = &run.kernel;
    let t = &twin.kernel;
    let sum = |v: &[u64]| v.iter().take(n).sum::<u64>();
    let irq = |r: &tlblab_kernel::stats::KernelReport| {
        r.cpu_time.iter().take(n).map(|c| c.irq_cycles).sum::<u64>()
    };
    let (tc, tw) = translation(k);
    let (bc, bw) = translation(t);
    let cost = Cost {
        initiator_cycles: diff(run.meter.syscall_cycles, twin.meter.syscall_cycles),
        receiver_cycles: diff(irq(k), irq(t)),
        refill_cycles: diff(tc, bc),
        refill_walks: diff(tw, bw),
        page_faults: diff(k.page_faults, t.page_faults),
    };
    let reasons: std::collections::BTreeSet<i32> =
        (0..6).chain(plan.summary.recorded_tlb_flush.keys().copied()).collect();
    let tlb_flush = reasons
        .into_iter()
        .map(|r| ReasonRow {
            reason: r,
            label: header.reason_label(r),
            recorded: plan.summary.recorded_tlb_flush.get(&r).copied().unwrap_or_default(),
            replayed: usize::try_from(r)
                .ok()
                .and_then(|i| run.flushes.get(i))
                .copied()
                .unwrap_or_default(),
        })
        .collect();
    let m = &run.meter;
    let ns = |cycles: f64| cycles * 1000.0 / k.clock_mhz.max(1) as f64;
    PolicyReplay {
        policy: policy.name.clone(),
        mirrors: policy.mirrors.clone(),
        ceiling,
        complete: run.unfinished == 0,
        threads_unfinished: run.unfinished as u64,
        requests_replayed: m.requests,
        requests_full: full,
        requests_partial: partial,
        requests_censored: censored,
        requests_batch: batch,
        tlb_flush,
        ipis_sent: sum(&k.ipis_sent),
        ipis_received: sum(&k.irq_tlb),
        ipis_sent_per_cpu: k.ipis_sent.iter().take(n).copied().collect(),
        ipis_received_per_cpu: k.irq_tlb.iter().take(n).copied().collect(),
        cost,
        clock_mhz: k.clock_mhz,
        elapsed_cycles: m.finish.saturating_sub(run.lead),
        slip: Slip {
            late_requests: m.late,
            mean_ns: if m.requests == 0 { 0.0 } else { ns(m.slip_sum as f64 / m.requests as f64) },
            max_ns: ns(m.slip_max as f64),
        },
        setup_late_threads: m.setup_late,
        vmstat: k.vmstat,
        model_events: k.events + t.events,
    }
}

/// What a replay of a trace from a machine that may flush with INVLPGB cannot infer
/// (docs/replay.md, rule 19).
pub const BROADCAST_FLUSH: &str = "INVLPGB: the trace comes from a machine that may flush with AMD INVLPGB (the invlpgb CPU flag, Linux 6.15+), where a process active on more than 3 CPUs at once gets a global ASID and its flushes are broadcasts that log no tlb:tlb_flush event: the replay cannot see those requests (it replays only what was logged, so it undercounts the flushes of such processes under every policy), cannot tell which processes had a global ASID or when they got it, and regenerates reasons 0, 1 and 5 as the model's policy has them, not as the recording machine's broadcasts did; compare policies on such a trace only for processes that ran on at most 3 CPUs at once";

/// The assumptions of a replay, in words, for the report.
pub(crate) fn assumptions(plan: &Plan, opts: &ReplayOptions, header: &Header) -> Vec<String> {
    let s = &plan.summary;
    let mut a = Vec::new();
    if header.broadcast_flush() == Some(true) {
        a.push(BROADCAST_FLUSH.to_string());
    }
    a.extend([
        match s.schedule {
            crate::plan::ScheduleMode::Switch => format!(
                "schedule: from sched_switch records ({} threads); threads without any ({}) run on a CPU between their events there when at most {} µs apart",
                s.threads_from_switches, s.threads_inferred, opts.idle_gap_ns / 1000
            ),
            crate::plan::ScheduleMode::Inferred => format!(
                "schedule: inferred (no sched_switch records): a thread runs on a CPU between its events there when at most {} µs apart, and sleeps otherwise",
                opts.idle_gap_ns / 1000
            ),
        },
        format!(
            "requests: from the initiators' events (reason 4 then 3 or 2 on the same CPU and thread within {} µs = one request); reasons 0, 1 and 5 are outcomes, regenerated by the model and only compared",
            opts.pair_window_ns / 1000
        ),
        "each range request is an mprotect() of that many present 4 KiB pages of the thread's own region, at its recorded time, with no page tables freed (the trace cannot say; freed tables would also reach lazy CPUs); a batched reclaim (reason 2) is a direct reclaim of one page of another process".to_string(),
        format!(
            "censored sizes ({} requests recorded as full: an explicit full flush or a range above the recording ceiling {}) are replayed as a range above the policy's ceiling: full at every ceiling",
            s.requests.censored, opts.recorded_ceiling
        ),
        match opts.refill {
            Refill::None => "refill: none (no memory references after setup; the trace has none)".to_string(),
            Refill::Flushed => "refill: after each request its initiator references the pages it flushed (the trace has no memory references)".to_string(),
            Refill::WorkingSet(w) => format!("refill: each thread uses a working set of {w} pages, referenced after each of its requests and each time it wakes (the trace has no memory references)"),
        },
        "costs: each figure is the replay minus a twin run whose requests flush nothing".to_string(),
    ]);
    if s.quiet_gaps > 0 {
        a.push(format!(
            "quiet gaps ({}) of more than {} s without a record are replayed as {} s each ({:.3} s skipped): longer than every time constant of the model, so what follows a gap sees what it would after the whole gap",
            s.quiet_gaps,
            crate::MAX_QUIET_NS / 1_000_000_000,
            crate::MAX_QUIET_NS / 1_000_000_000,
            s.quiet_ns_skipped as f64 / 1e9
        ));
    }
    if s.kernel_threads_left_out > 0 {
        a.push(format!(
            "{} kernel threads (by name) without requests are left out: their CPU time is idle time, in which the previous mm stays loaded lazily",
            s.kernel_threads_left_out
        ));
    }
    if s.requests.send_only > 0 {
        a.push(format!(
            "{} requests were a reason 4 alone (the initiator did not run the mm); they are replayed on the initiator's own mm, which adds a local flush",
            s.requests.send_only
        ));
    }
    a
}
