//! What a study reports: each [`Measure`] is one number per run, computed from the kernel
//! model's report, with its unit and which direction is better.

use serde::Serialize;
use tlblab_kernel::stats::KernelReport;
use tlblab_kernel::workloads::Metric;
use tlblab_replay::PolicyReplay;

/// One number per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Measure {
    /// The scenario's own metric (`workloads::Metric`): µs/op, ops/s, seconds, … .
    ScenarioMetric,
    /// User time: `user_cycles` summed over the user tasks, in seconds.
    UserS,
    /// System time: `sys_cycles` summed over the user tasks (system calls, faults, context
    /// switches; not interrupt handlers), in seconds.
    SystemS,
    /// System time as `time` prints it for a whole build, per CPU-second of the build's own
    /// work: tick-based accounting (an interrupt handler's time goes to the task it
    /// interrupted, in the mode it interrupted; `TaskReport::time_as_reported`) over the
    /// programs' work (`work_cycles`). A build's work is the same under every policy, so the
    /// ratio of this measure between policies is the ratio of the whole build's system times.
    TimeSystemPerWork,
    /// Simulated time from boot until the last task exited, in seconds.
    ElapsedS,
    /// dTLB page walks completed: `dtlb_load_misses.walk_completed +
    /// dtlb_store_misses.walk_completed`.
    DtlbWalks,
    /// Page-walker cycles per dTLB walk: `walk_active_cycles / walk_completed` (loads and
    /// stores).
    WalkCyclesPerWalk,
    /// Flush IPIs sent per operation (`ipis_sent` summed over CPUs / operations).
    IpisPerOp,
    /// dTLB page walks per operation.
    DtlbWalksPerOp,
    /// `perf stat`'s task-clock: user + system time of the user tasks, in ms.
    TaskClockMs,
    /// Page faults of every kind (`perf stat`'s `page-faults`).
    PageFaults,
    /// Cycles of the user tasks, user + system (`perf stat`'s `cycles`).
    Cycles,
    /// Run-time tests of 5-level paging executed (one load and one branch each).
    La57Checks,
    /// Longest preemption-disabled section of `flush_tlb_mm_range()`, in µs.
    PreemptOffMaxUs,
    /// 99th percentile of the preemption-disabled sections of `flush_tlb_mm_range()`, in µs.
    PreemptOffP99Us,
    /// Flush IPIs sent, summed over CPUs (user-mm shootdowns and kernel-range flushes).
    IpisSent,
    /// Flush IPIs received: the `TLB` and `CAL` rows of `/proc/interrupts` (kernel-range
    /// flushes land in `CAL`), summed over CPUs.
    IpisReceived,
    /// Full flushes done by `flush_tlb_func()` (flush size -1).
    FullFlushes,
    /// Full flushes XPFO caused (deferred flushes at the next mm switch).
    XpfoFullFlushes,
    /// Median exposure window of a page unmapped from the direct map, in µs.
    ExposureMedianUs,
    /// 99th percentile of the exposure windows, in µs.
    ExposureP99Us,
    /// Longest exposure window, in µs.
    ExposureMaxUs,
    /// Exposure windows still open when the run ended (censored).
    ExposureCensored,
    /// Flushes KVM's PV TLB flush left to the host (a preempted vCPU marked instead of sent an
    /// IPI).
    PvFlushesMarked,
    /// Steal: the share of the vCPUs' time the host ran something else, in %.
    StealPct,
    /// The safety checker's violations over the run's checked schedules
    /// ([`CHECK_SCHEDULES_PER_SEED`] perturbed runs with the checker on, as `tlblab sim
    /// check` runs them): 0 is the checker's pass.
    CheckViolations,
    /// Stale uses inside declared deferral windows over the checked schedules (allowed).
    CheckExposedUses,
    /// Median exposure window of a user mapping (per exposed CPU) over the checked schedules,
    /// µs.
    CheckExposureMedianUs,
    /// 99th percentile of those windows, µs.
    CheckExposureP99Us,
    /// Longest of those windows, µs.
    CheckExposureMaxUs,
    /// Moves of `mm_cpumask` cache lines between CPUs (locked bit writes and reads that found
    /// the line in another CPU's cache), every mm together.
    CpumaskLineTransfers,
    /// Locked `mm_cpumask` bit sets and clears, every mm together.
    CpumaskWrites,
    /// Moves of the CPUs' `cpu_tlbstate` / `cpu_tlbstate_shared` lines: flush initiators'
    /// reads of another CPU's lines and the owners' stores after such reads (mechanism
    /// `tlbstate-lines`).
    TlbstateLineTransfers,
    /// will-it-scale's per-thread figure: operations per second per task (the tasks that did
    /// any), higher is better.
    OpsPerTaskPerSecond,
    /// A replayed trace's flush cost (S10): initiator + receiver + refill cycles, each the
    /// replay's minus its twin's, in µs.
    FlushCostUs,
    /// A replayed trace's requests flushed in full (above the ceiling, or censored).
    FullFlushRequests,
    /// A replayed trace's refill page walks (the replay's minus its twin's).
    RefillWalks,
    /// Share of the CPUs' busy time (user + system + interrupts, summed over CPUs) spent on
    /// TLB invalidation (`BroadcastStats::invalidation_cycles`), in %.
    InvalidationPct,
    /// Median initiator latency of a `flush_tlb_mm_range()`, in µs.
    FlushLatencyP50Us,
    /// Share of the CPUs' busy time spent waiting for the page-freeing locks (LRU and zone),
    /// in %.
    LockWaitPct,
}

/// Checked schedules per seed when a part reports a `Check*` measure: seed `s` of a study
/// whose first seed is `f` checks schedules `f + (s − f) × N` … `f + (s − f) × N + N − 1`, so
/// K seeds are the K × N schedules `tlblab sim check --schedules K×N --seed f` runs.
pub const CHECK_SCHEDULES_PER_SEED: u64 = 4;

/// What the checked schedules of one run left: their violations and declared exposure.
#[derive(Clone, Debug, Default)]
pub struct Checked {
    /// Violations, over the schedules.
    pub violations: u64,
    /// Each schedule's exposure of user mappings (`None`: the policy declares no deferral of
    /// user mappings).
    pub exposure: Vec<tlblab_kernel::exposure::ExposureLog>,
    /// Whether the policy declares a deferral of user mappings.
    pub declares: bool,
    /// The preset's clock, MHz.
    pub clock_mhz: u64,
}

/// Why a run has no value for a measure.
pub type Missing = &'static str;

/// A replay-only measure in a scenario run.
const REPLAY_ONLY: &str = "measured only in a replay of a trace";

/// No exposure window: the policy never unmaps the direct map.
pub(crate) const NEVER_UNMAPPED: &str = "unbounded (never unmapped)";

/// No user-mapping exposure: the policy declares no deferral (it flushes before completion).
pub(crate) const NOTHING_DECLARED: &str = "nothing deferred";

impl Measure {
    /// Every measure, in declaration order.
    pub const ALL: &'static [Measure] = &[
        Measure::ScenarioMetric,
        Measure::UserS,
        Measure::SystemS,
        Measure::TimeSystemPerWork,
        Measure::ElapsedS,
        Measure::DtlbWalks,
        Measure::WalkCyclesPerWalk,
        Measure::IpisPerOp,
        Measure::DtlbWalksPerOp,
        Measure::TaskClockMs,
        Measure::PageFaults,
        Measure::Cycles,
        Measure::La57Checks,
        Measure::PreemptOffMaxUs,
        Measure::PreemptOffP99Us,
        Measure::IpisSent,
        Measure::IpisReceived,
        Measure::FullFlushes,
        Measure::XpfoFullFlushes,
        Measure::ExposureMedianUs,
        Measure::ExposureP99Us,
        Measure::ExposureMaxUs,
        Measure::ExposureCensored,
        Measure::PvFlushesMarked,
        Measure::StealPct,
        Measure::CheckViolations,
        Measure::CheckExposedUses,
        Measure::CheckExposureMedianUs,
        Measure::CheckExposureP99Us,
        Measure::CheckExposureMaxUs,
        Measure::CpumaskLineTransfers,
        Measure::CpumaskWrites,
        Measure::TlbstateLineTransfers,
        Measure::OpsPerTaskPerSecond,
        Measure::FlushCostUs,
        Measure::FullFlushRequests,
        Measure::RefillWalks,
        Measure::InvalidationPct,
        Measure::FlushLatencyP50Us,
        Measure::LockWaitPct,
    ];

    /// Whether the measure comes from checked schedules rather than the run's report.
    pub fn checked(self) -> bool {
        matches!(
            self,
            Measure::CheckViolations
                | Measure::CheckExposedUses
                | Measure::CheckExposureMedianUs
                | Measure::CheckExposureP99Us
                | Measure::CheckExposureMaxUs
        )
    }

    /// A `Check*` measure's value from a run's checked schedules, or why there is none.
    pub fn check_value(self, c: &Checked) -> Result<f64, Missing> {
        if self == Measure::CheckViolations {
            return Ok(c.violations as f64);
        }
        if !c.declares {
            return Err(NOTHING_DECLARED);
        }
        if self == Measure::CheckExposedUses {
            return Ok(c.exposure.iter().filter_map(|l| l.uses).sum::<u64>() as f64);
        }
        let s = tlblab_kernel::exposure::ExposureSummary::of(&c.exposure, c.clock_mhz);
        // None: no CPU held a stale translation when a deferred operation completed.
        let q = s.per_cpu.micros.ok_or("no window")?;
        Ok(match self {
            Measure::CheckExposureMedianUs => q.p50,
            Measure::CheckExposureP99Us => q.p99,
            _ => q.max,
        })
    }

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Measure::ScenarioMetric => "scenario_metric",
            Measure::UserS => "user_s",
            Measure::SystemS => "system_s",
            Measure::TimeSystemPerWork => "time_system_per_work",
            Measure::ElapsedS => "elapsed_s",
            Measure::DtlbWalks => "dtlb_walks",
            Measure::WalkCyclesPerWalk => "walk_cycles_per_walk",
            Measure::IpisPerOp => "ipis_per_op",
            Measure::DtlbWalksPerOp => "dtlb_walks_per_op",
            Measure::TaskClockMs => "task_clock_ms",
            Measure::PageFaults => "page_faults",
            Measure::Cycles => "cycles",
            Measure::La57Checks => "la57_checks",
            Measure::PreemptOffMaxUs => "preempt_off_max_us",
            Measure::PreemptOffP99Us => "preempt_off_p99_us",
            Measure::IpisSent => "ipis_sent",
            Measure::IpisReceived => "ipis_received",
            Measure::FullFlushes => "full_flushes",
            Measure::XpfoFullFlushes => "xpfo_full_flushes",
            Measure::ExposureMedianUs => "exposure_median_us",
            Measure::ExposureP99Us => "exposure_p99_us",
            Measure::ExposureMaxUs => "exposure_max_us",
            Measure::ExposureCensored => "exposure_censored",
            Measure::PvFlushesMarked => "pv_flushes_marked",
            Measure::StealPct => "steal_pct",
            Measure::CheckViolations => "check_violations",
            Measure::CheckExposedUses => "check_exposed_uses",
            Measure::CheckExposureMedianUs => "check_exposure_median_us",
            Measure::CheckExposureP99Us => "check_exposure_p99_us",
            Measure::CheckExposureMaxUs => "check_exposure_max_us",
            Measure::CpumaskLineTransfers => "cpumask_line_transfers",
            Measure::CpumaskWrites => "cpumask_writes",
            Measure::TlbstateLineTransfers => "tlbstate_line_transfers",
            Measure::OpsPerTaskPerSecond => "ops_per_task_per_second",
            Measure::FlushCostUs => "flush_cost_us",
            Measure::FullFlushRequests => "full_flush_requests",
            Measure::RefillWalks => "refill_walks",
            Measure::InvalidationPct => "invalidation_pct",
            Measure::FlushLatencyP50Us => "flush_latency_p50_us",
            Measure::LockWaitPct => "lock_wait_pct",
        }
    }

    /// The name printed in tables; `metric` is the scenario's.
    pub fn label(self, metric: Metric) -> &'static str {
        match self {
            Measure::ScenarioMetric => metric.unit(),
            Measure::UserS => "user s",
            Measure::SystemS => "system s",
            Measure::TimeSystemPerWork => "time(1) system s per work s",
            Measure::ElapsedS => "elapsed s",
            Measure::DtlbWalks => "dTLB walks",
            Measure::WalkCyclesPerWalk => "walker cycles/walk",
            Measure::IpisPerOp => "IPIs/op",
            Measure::DtlbWalksPerOp => "dTLB walks/op",
            Measure::TaskClockMs => "task-clock ms",
            Measure::PageFaults => "page-faults",
            Measure::Cycles => "cycles",
            Measure::La57Checks => "la57 run-time checks",
            Measure::PreemptOffMaxUs => "preempt-off max µs",
            Measure::PreemptOffP99Us => "preempt-off p99 µs",
            Measure::IpisSent => "IPIs sent",
            Measure::IpisReceived => "IPIs received",
            Measure::FullFlushes => "full flushes",
            Measure::XpfoFullFlushes => "XPFO full flushes",
            Measure::ExposureMedianUs => "exposure median µs",
            Measure::ExposureP99Us => "exposure p99 µs",
            Measure::ExposureMaxUs => "exposure max µs",
            Measure::ExposureCensored => "exposure censored",
            Measure::PvFlushesMarked => "PV flushes left to host",
            Measure::StealPct => "steal %",
            Measure::CheckViolations => "checker violations",
            Measure::CheckExposedUses => "stale uses in windows",
            Measure::CheckExposureMedianUs => "user exposure median µs",
            Measure::CheckExposureP99Us => "user exposure p99 µs",
            Measure::CheckExposureMaxUs => "user exposure max µs",
            Measure::CpumaskLineTransfers => "cpumask line transfers",
            Measure::CpumaskWrites => "cpumask writes",
            Measure::TlbstateLineTransfers => "tlbstate line transfers",
            Measure::OpsPerTaskPerSecond => "ops/s per task",
            Measure::FlushCostUs => "flush cost µs",
            Measure::FullFlushRequests => "full-flush requests",
            Measure::RefillWalks => "refill walks",
            Measure::InvalidationPct => "invalidation % CPU",
            Measure::FlushLatencyP50Us => "flush latency p50 µs",
            Measure::LockWaitPct => "lock wait % CPU",
        }
    }

    /// Whether a smaller value is better (exposure, times, counts); only throughput is the
    /// other way.
    pub fn lower_is_better(self, metric: Metric) -> bool {
        match self {
            Measure::ScenarioMetric => metric.lower_is_better(),
            Measure::OpsPerTaskPerSecond => false,
            _ => true,
        }
    }

    /// Decimals to print a value with (counts: none).
    pub(crate) fn decimals(self, metric: Metric) -> usize {
        match self {
            // By unit, so that a metric added to the kernel model later prints too.
            Measure::ScenarioMetric => match metric.unit() {
                "ops/s" => 0,
                "s" => 4,
                _ => 3,
            },
            Measure::UserS | Measure::SystemS | Measure::ElapsedS => 4,
            Measure::TimeSystemPerWork => 5,
            Measure::TaskClockMs => 2,
            Measure::WalkCyclesPerWalk | Measure::IpisPerOp | Measure::DtlbWalksPerOp => 2,
            Measure::PreemptOffMaxUs
            | Measure::PreemptOffP99Us
            | Measure::ExposureMedianUs
            | Measure::ExposureP99Us
            | Measure::ExposureMaxUs
            | Measure::StealPct
            | Measure::CheckExposureMedianUs
            | Measure::CheckExposureP99Us
            | Measure::CheckExposureMaxUs => 2,
            Measure::FlushCostUs => 1,
            Measure::FullFlushRequests | Measure::RefillWalks => 0,
            Measure::FlushLatencyP50Us => 2,
            Measure::InvalidationPct | Measure::LockWaitPct => 1,
            Measure::DtlbWalks
            | Measure::PageFaults
            | Measure::Cycles
            | Measure::La57Checks
            | Measure::IpisSent
            | Measure::IpisReceived
            | Measure::FullFlushes
            | Measure::XpfoFullFlushes
            | Measure::ExposureCensored
            | Measure::PvFlushesMarked
            | Measure::CheckViolations
            | Measure::CheckExposedUses
            | Measure::CpumaskLineTransfers
            | Measure::CpumaskWrites
            | Measure::TlbstateLineTransfers
            | Measure::OpsPerTaskPerSecond => 0,
        }
    }

    /// The measure's value for one run, or why there is none.
    /// Its value in a run's report (`metric` is the scenario's), or why the run has none.
    pub fn value(self, r: &KernelReport, metric: Metric) -> Result<f64, Missing> {
        let seconds = |cycles: u64| r.micros(cycles as f64) / 1e6;
        let user: u64 = r.tasks.iter().map(|t| t.user_cycles).sum();
        let sys: u64 = r.tasks.iter().map(|t| t.sys_cycles).sum();
        let ops: u64 = r.tasks.iter().map(|t| t.ops).sum();
        let dtlb = [&r.hw.dtlb_load_misses, &r.hw.dtlb_store_misses];
        let walks: u64 = dtlb.iter().map(|m| m.walk_completed).sum();
        let per_op = |n: u64| {
            if ops == 0 {
                Err("no operation completed")
            } else {
                Ok(n as f64 / ops as f64)
            }
        };
        match self {
            Measure::ScenarioMetric => {
                let v = metric.value(r);
                if v.is_finite() {
                    Ok(v)
                } else {
                    Err("the scenario's metric is undefined for this run")
                }
            }
            Measure::UserS => Ok(seconds(user)),
            Measure::SystemS => Ok(seconds(sys)),
            Measure::TimeSystemPerWork => {
                let work: u64 = r.tasks.iter().map(|t| t.work_cycles).sum();
                let sys: u64 = r.tasks.iter().map(|t| t.time_as_reported().1).sum();
                if work == 0 {
                    Err("no work done")
                } else {
                    Ok(sys as f64 / work as f64)
                }
            }
            Measure::ElapsedS => Ok(seconds(r.elapsed_cycles)),
            Measure::DtlbWalks => Ok(walks as f64),
            Measure::WalkCyclesPerWalk => {
                let cycles: u64 = dtlb.iter().map(|m| m.walk_active_cycles).sum();
                if walks == 0 {
                    Err("no dTLB walk")
                } else {
                    Ok(cycles as f64 / walks as f64)
                }
            }
            Measure::IpisPerOp => per_op(r.ipis_sent.iter().sum()),
            Measure::DtlbWalksPerOp => per_op(walks),
            Measure::TaskClockMs => Ok(r.micros((user + sys) as f64) / 1e3),
            Measure::PageFaults => Ok(r.page_faults as f64),
            Measure::Cycles => Ok((user + sys) as f64),
            Measure::La57Checks => Ok(r.la57_checks as f64),
            Measure::PreemptOffMaxUs | Measure::PreemptOffP99Us => {
                let p = if self == Measure::PreemptOffMaxUs { 100.0 } else { 99.0 };
                percentile_cycles(&r.preempt_off_cycles, p)
                    .map(|c| r.micros(c))
                    .ok_or("no preemption-disabled flush section")
            }
            Measure::IpisSent => Ok(r.ipis_sent.iter().sum::<u64>() as f64),
            Measure::IpisReceived => {
                let (tlb, cal): (u64, u64) = (r.irq_tlb.iter().sum(), r.irq_cal.iter().sum());
                Ok((tlb + cal) as f64)
            }
            Measure::FullFlushes => {
                Ok(r.flush_sizes.by_pages.get(&-1).map_or(0, |&(flushes, _)| flushes) as f64)
            }
            Measure::XpfoFullFlushes => Ok(r.xpfo.as_ref().map_or(0, |x| x.full_flushes) as f64),
            Measure::CheckViolations
            | Measure::CheckExposedUses
            | Measure::CheckExposureMedianUs
            | Measure::CheckExposureP99Us
            | Measure::CheckExposureMaxUs => Err("measured on the checked schedules"),
            Measure::ExposureMedianUs
            | Measure::ExposureP99Us
            | Measure::ExposureMaxUs
            | Measure::ExposureCensored => {
                let x = r.xpfo.as_ref().ok_or(NEVER_UNMAPPED)?;
                let exposure = |p| {
                    percentile_cycles(&x.exposure_cycles, p)
                        .map(|c| r.micros(c))
                        .ok_or("no exposure window closed in the run")
                };
                match self {
                    Measure::ExposureMedianUs => exposure(50.0),
                    Measure::ExposureP99Us => exposure(99.0),
                    Measure::ExposureMaxUs => exposure(100.0),
                    _ => Ok(x.censored as f64),
                }
            }
            Measure::PvFlushesMarked => Ok(r.vcpu.map_or(0, |v| v.pv_marked) as f64),
            Measure::StealPct => {
                let steal: u64 = r.cpu_time.iter().map(|c| c.steal_cycles).sum();
                let total: u64 = r.cpu_time.iter().map(|c| c.total()).sum();
                if total == 0 {
                    Err("no CPU time measured")
                } else {
                    Ok(100.0 * steal as f64 / total as f64)
                }
            }
            Measure::CpumaskLineTransfers => Ok(r.cpumask.transfers as f64),
            Measure::CpumaskWrites => Ok(r.cpumask.writes as f64),
            Measure::TlbstateLineTransfers => Ok(r.tlbstate.transfers as f64),
            Measure::OpsPerTaskPerSecond => {
                let tasks = r.tasks.iter().filter(|t| t.ops > 0).count();
                if tasks == 0 || r.elapsed_cycles == 0 {
                    return Err("no operation completed");
                }
                Ok(ops as f64 / (r.micros(r.elapsed_cycles as f64) / 1e6) / tasks as f64)
            }
            Measure::InvalidationPct | Measure::LockWaitPct => {
                let busy: u64 =
                    r.cpu_time.iter().map(|t| t.user_cycles + t.sys_cycles + t.irq_cycles).sum();
                let b = &r.broadcast;
                let part = match self {
                    Measure::InvalidationPct => b.invalidation_cycles,
                    _ => b.lru_lock.wait_cycles + b.zone_lock.wait_cycles,
                };
                if busy == 0 {
                    Err("no busy CPU time")
                } else {
                    Ok(100.0 * part as f64 / busy as f64)
                }
            }
            Measure::FlushLatencyP50Us => {
                percentile_cycles(&r.broadcast.flush_latency_cycles, 50.0)
                    .map(|c| r.micros(c))
                    .ok_or("no flush_tlb_mm_range() in the run")
            }
            Measure::FlushCostUs | Measure::FullFlushRequests | Measure::RefillWalks => {
                Err(REPLAY_ONLY)
            }
        }
    }

    /// Its value in a replay of a trace (S10), or why there is none: the replay's own figures
    /// (costs against its twin), and the kernel model's report of the replay run for the
    /// measures a scenario run has too.
    pub fn replay_value(self, row: &PolicyReplay, r: &KernelReport) -> Result<f64, Missing> {
        let c = &row.cost;
        match self {
            Measure::FlushCostUs => {
                let cycles = c.initiator_cycles + c.receiver_cycles + c.refill_cycles;
                Ok(cycles as f64 / row.clock_mhz.max(1) as f64)
            }
            Measure::FullFlushRequests => Ok(row.requests_full as f64),
            Measure::RefillWalks => Ok(c.refill_walks as f64),
            Measure::IpisSent => Ok(row.ipis_sent as f64),
            Measure::IpisReceived => Ok(row.ipis_received as f64),
            Measure::FullFlushes
            | Measure::DtlbWalks
            | Measure::WalkCyclesPerWalk
            | Measure::PageFaults
            | Measure::PreemptOffMaxUs
            | Measure::PreemptOffP99Us => self.value(r, Metric::Seconds),
            _ => Err("not measured in a replay (the trace has no workload to time)"),
        }
    }

    /// One sentence saying what the number is (for `study list`, docs and JSON).
    pub fn describe(self) -> &'static str {
        match self {
            Measure::ScenarioMetric => "the scenario's own metric (workloads::Metric: µs per iteration of the first task, ops/s over all tasks, seconds until every task finished, …)",
            Measure::UserS => "user_cycles summed over the user tasks, in seconds",
            Measure::SystemS => "sys_cycles summed over the user tasks (system calls, faults, context switches, spins for acknowledgements; not interrupt handlers), in seconds",
            Measure::TimeSystemPerWork => "system time as time(1) reports it (tick-based: sys_cycles plus the interrupt handlers that interrupted the task in the kernel; handlers that interrupted user mode are user time) over the programs' own work (work_cycles), summed over the user tasks: the whole build's system time divided by its work, which no policy changes",
            Measure::ElapsedS => "simulated time until the last task exited, in seconds",
            Measure::DtlbWalks => "dtlb_load_misses.walk_completed + dtlb_store_misses.walk_completed, summed over CPUs",
            Measure::WalkCyclesPerWalk => "walk_active_cycles / walk_completed of dTLB loads and stores",
            Measure::IpisPerOp => "flush IPIs sent (ipis_sent summed over CPUs) per operation",
            Measure::DtlbWalksPerOp => "dTLB page walks per operation",
            Measure::TaskClockMs => "user + system time of the user tasks, in ms (perf stat task-clock)",
            Measure::PageFaults => "page faults of every kind (perf stat page-faults)",
            Measure::Cycles => "user + system cycles of the user tasks (perf stat cycles)",
            Measure::La57Checks => "run-time 5-level-paging tests executed (la57-runtime), one load and one branch each",
            Measure::PreemptOffMaxUs => "longest preemption-disabled section of flush_tlb_mm_range(), µs",
            Measure::PreemptOffP99Us => "99th percentile of the preemption-disabled sections of flush_tlb_mm_range(), µs",
            Measure::IpisSent => "flush IPIs sent, summed over CPUs",
            Measure::IpisReceived => "flush IPIs received: /proc/interrupts TLB and CAL rows (kernel-range flushes are CAL), summed over CPUs",
            Measure::FullFlushes => "full flushes done by flush_tlb_func() (flush size -1)",
            Measure::XpfoFullFlushes => "full flushes caused by XPFO (deferred flushes at the next mm switch)",
            Measure::ExposureMedianUs => "median time from a page's removal from the direct map until the last CPU that could use the stale translation flushed it, µs",
            Measure::ExposureP99Us => "99th percentile of the exposure windows, µs",
            Measure::ExposureMaxUs => "longest exposure window, µs",
            Measure::ExposureCensored => "exposure windows still open when the run ended",
            Measure::PvFlushesMarked => "flushes kvm_flush_tlb_multi() left to the host: a preempted vCPU marked KVM_VCPU_FLUSH_TLB instead of sent an IPI (0 with native IPIs or dedicated pCPUs)",
            Measure::StealPct => "steal time (the host ran other threads on the vCPU's pCPU) over all the vCPUs' time, in %",
            Measure::CheckViolations => "the safety checker's violations over the run's checked schedules (CHECK_SCHEDULES_PER_SEED perturbed runs with the checker on, as tlblab sim check runs them: IPIs up to 20,000 cycles late, a disturbance every 200,000 cycles per CPU); 0 is a pass",
            Measure::CheckExposedUses => "stale uses inside declared deferral windows over the checked schedules (allowed: the policy declares them)",
            Measure::CheckExposureMedianUs => "median exposure window of a user mapping over the checked schedules: from the deferred operation's completion to one exposed CPU's catch-up, µs (windows still open at the end left out)",
            Measure::CheckExposureP99Us => "99th percentile of the user-mapping exposure windows over the checked schedules, µs",
            Measure::CheckExposureMaxUs => "longest user-mapping exposure window over the checked schedules, µs",
            Measure::CpumaskLineTransfers => "moves of mm_cpumask cache lines between CPUs: locked bit sets and clears, and reads (the 6.14 test before a set, flush initiators' mask scans), that found the line in another CPU's cache; every mm together (docs/kernel-model.md)",
            Measure::CpumaskWrites => "locked mm_cpumask bit sets and clears (switches, and 6.14's clear by a flush IPI on a CPU that left the mm), every mm together",
            Measure::TlbstateLineTransfers => "moves of the CPUs' cpu_tlbstate (loaded_mm) and cpu_tlbstate_shared (is_lazy) cache lines: a flush initiator's condition function reading another CPU's line that CPU rewrote since, and the owner's store after such reads (mechanism tlbstate-lines; docs/kernel-model.md)",
            Measure::OpsPerTaskPerSecond => "operations per second per task that did any (will-it-scale's per-thread ops)",
            Measure::FlushCostUs => "a replayed trace's flush cost: the initiators' flushing system calls, the receivers' IPI handlers and the refill of the working set after the flushes, each the replay's cycles minus its twin's (the same run flushing nothing), in µs",
            Measure::FullFlushRequests => "a replayed trace's requests flushed in full: ranges above the ceiling, and requests recorded as full (censored)",
            Measure::RefillWalks => "a replayed trace's page walks of the references after the flushes, the replay's minus its twin's",
            Measure::InvalidationPct => "share of the CPUs' busy time (user + system + interrupts, all CPUs) spent on TLB invalidation: initiators in flush_tlb_mm_range() (waits for acknowledgements, TLBSYNC or RAR completion included), flush IPI handlers, RAR actions on their targets, in %",
            Measure::FlushLatencyP50Us => "median initiator latency of flush_tlb_mm_range(), from its start to its return, µs",
            Measure::LockWaitPct => "share of the CPUs' busy time spent waiting for lruvec->lru_lock and zone->lock (mechanism page-locks), in %",
        }
    }
}

/// Percentile `p` of cycle counts (`None` when there are none).
pub(crate) fn percentile_cycles(values: &[u64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let v: Vec<f64> = values.iter().map(|&c| c as f64).collect();
    tlblab_stats::percentile(&v, p).ok()
}
