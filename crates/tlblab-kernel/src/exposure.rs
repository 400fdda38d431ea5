//! Exposure of declared deferrals (docs/safety.md §4.4).
//!
//! A policy that defers flushes past an operation's completion on purpose (`latr`,
//! `xpfo-deferred`) declares it ([`declared`]). Each deferred operation then leaves some CPUs
//! holding a stale translation until their own catch-up: one **window** per (operation, CPU),
//! from the completion to that CPU's catch-up, or *censored* when the run ends first. A run
//! records them in an [`ExposureLog`]; [`ExposureSummary::of`] summarises any number of logs
//! (the schedules of a check) as distributions. One type serves user mappings (LATR, judged by
//! the safety checker) and kernel mappings (XPFO's direct-map unmaps).
//!
//! ```
//! use tlblab_kernel::exposure::{ExposureLog, ExposureSummary, OperationExposure};
//!
//! // One operation: two CPUs caught up after 1,000 and 3,000 cycles; a third never did.
//! let log = ExposureLog {
//!     operations: vec![OperationExposure {
//!         completed_at: 50,
//!         windows: vec![Some(1_000), Some(3_000), None],
//!     }],
//!     uses: Some(2),
//!     missed_catch_ups: 0,
//! };
//! let s = ExposureSummary::of([&log], 1_000);
//! assert_eq!((s.operations, s.per_cpu.closed, s.per_cpu.censored), (1, 2, 1));
//! assert_eq!(s.per_cpu.cycles.unwrap().max, 3_000.0);
//! assert_eq!(s.per_cpu.micros.unwrap().p50, 2.0); // halfway between 1 and 3 µs
//! assert_eq!((s.per_operation.closed, s.per_operation.censored), (0, 1));
//! assert_eq!(s.cpus_exposed[0].cpus, 3);
//! ```

use crate::policy::{Policy, Xpfo};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which translations a deferral leaves stale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mappings {
    /// User mappings of an mm (judged on every user access by the safety checker).
    User,
    /// Kernel mappings (the model's kernel makes no memory accesses: windows only).
    Kernel,
}

/// A policy's declaration that it defers flushes past completion on purpose.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deferral {
    /// The policy switch that declares it (`latr`, `xpfo-deferred`).
    pub name: String,
    /// Which translations stay stale.
    pub mappings: Mappings,
    /// Which operations' flushes are deferred.
    pub operations: String,
    /// Each CPU's catch-up: where the window of a CPU ends. A stale use after it is a
    /// violation.
    pub catch_up: String,
}

/// The deferrals `policy` declares (none for a kernel that flushes before completion).
pub fn declared(policy: &Policy) -> Vec<Deferral> {
    let mut out = Vec::new();
    if policy.latr {
        out.push(Deferral {
            name: "latr".into(),
            mappings: Mappings::User,
            operations: "the flush of munmap() and MADV_DONTNEED, unless it frees page tables: \
                         no IPI; each CPU that would have been interrupted is left a LATR state"
                .into(),
            catch_up: "the CPU's next scheduler tick or context switch (the prototype's \
                       scheduler_tick() and __schedule() hooks), where it applies its states; a \
                       CPU that was lazy or on another mm then, at its tlb_gen catch-up in \
                       switch_mm_irqs_off()"
                .into(),
        });
    }
    if policy.unmap_flush != crate::policy::UnmapFlush::Off {
        let migrc = policy.unmap_flush == crate::policy::UnmapFlush::Migrc;
        out.push(Deferral {
            name: if migrc { "migrc" } else { "luf" }.into(),
            mappings: Mappings::User,
            operations: "the batched flush of a migration's unmap (move_pages(), \
                         migrate_pages_batch()) of pages every PTE mapped read-only, on every \
                         CPU of the batch, the initiator's included: the source pages are freed \
                         to the page allocator carrying the pending flush"
                .into(),
            catch_up: if migrc {
                "the allocation that next takes one of the pages from its node's free lists \
                 (every batch pending on that node is flushed before the page is handed out), \
                 or direct reclaim (memory pressure flushes everything pending); a CPU that \
                 was lazy or on another mm then, at its tlb_gen catch-up in \
                 switch_mm_irqs_off()"
            } else {
                "the allocation that next takes one of the pages from its node's free lists \
                 (every batch pending on that node is flushed before the page is handed out), \
                 or a fault that sets a writable PTE (everything pending is flushed); a CPU \
                 that was lazy or on another mm then, at its tlb_gen catch-up in \
                 switch_mm_irqs_off()"
            }
            .into(),
        });
    }
    if policy.xpfo == Xpfo::Deferred {
        out.push(Deferral {
            name: "xpfo-deferred".into(),
            mappings: Mappings::Kernel,
            operations: "the direct-map unmap of each page handed to user space: every other \
                         CPU is marked in pending_xpfo_flush"
                .into(),
            catch_up: "the CPU's first __flush_tlb_all() at a switch_mm_irqs_off() after the \
                       unmap; no bound"
                .into(),
        });
    }
    out
}

/// One deferred operation of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationExposure {
    /// When it completed, cycles.
    pub completed_at: u64,
    /// One per exposed CPU (another CPU that could still use a stale translation of it): cycles
    /// from the completion to that CPU's catch-up, `None` if the run ended first.
    pub windows: Vec<Option<u64>>,
}

/// The exposure of one run under one deferral.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExposureLog {
    /// The deferred operations, in completion order.
    pub operations: Vec<OperationExposure>,
    /// Stale uses inside declared windows (allowed, counted); `None` where the model makes no
    /// such accesses (kernel mappings).
    pub uses: Option<u64>,
    /// Declared catch-ups at which a CPU still held what it should have flushed: the deferral
    /// failed, and its later stale uses are violations.
    pub missed_catch_ups: u64,
}

/// The exposure of one run, per kind of mapping (`None` where no deferral of that kind is
/// declared, or, for user mappings, without the safety checker).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunExposure {
    /// User mappings (`latr`).
    pub user: Option<ExposureLog>,
    /// Kernel mappings (`xpfo-deferred`).
    pub kernel: Option<ExposureLog>,
}

/// Percentiles of closed windows (Hyndman & Fan type 7, as `tlblab_stats::percentile`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Closed windows of lengths `from_cycles ..= to_cycles`: `[2^k, 2^(k+1))`, or `[0, 0]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Log2Bucket {
    /// Shortest length in the bucket, cycles.
    pub from_cycles: u64,
    /// Longest length in the bucket, cycles.
    pub to_cycles: u64,
    /// Windows.
    pub count: u64,
}

/// A distribution of window lengths.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    /// Windows that closed (the CPU caught up before the run ended).
    pub closed: u64,
    /// Windows still open when the run ended.
    pub censored: u64,
    /// Closed windows, cycles (`None` when none closed).
    pub cycles: Option<Quantiles>,
    /// The same in µs of the preset's clock.
    pub micros: Option<Quantiles>,
    /// Closed windows by power of two, shortest first, empty buckets left out.
    pub log2_histogram: Vec<Log2Bucket>,
}

impl Windows {
    /// The distribution of `windows` (`None`: censored) at `clock_mhz`.
    pub fn of(windows: impl IntoIterator<Item = Option<u64>>, clock_mhz: u64) -> Windows {
        let mut lengths = Vec::new();
        let mut censored = 0;
        for w in windows {
            match w {
                Some(c) => lengths.push(c),
                None => censored += 1,
            }
        }
        let mut buckets = BTreeMap::<u32, u64>::new();
        for &c in &lengths {
            *buckets.entry(if c == 0 { 0 } else { c.ilog2() + 1 }).or_default() += 1;
        }
        let as_f64: Vec<f64> = lengths.iter().map(|&c| c as f64).collect();
        let cycles = tlblab_stats::Summary::of(&as_f64).ok().map(|s| {
            let p = |p| s.percentile(p).expect("50, 90 and 99 are percentiles");
            Quantiles { p50: p(50.0), p90: p(90.0), p99: p(99.0), max: s.max }
        });
        let mhz = clock_mhz.max(1) as f64;
        Windows {
            closed: lengths.len() as u64,
            censored,
            cycles,
            micros: cycles.map(|q| Quantiles {
                p50: q.p50 / mhz,
                p90: q.p90 / mhz,
                p99: q.p99 / mhz,
                max: q.max / mhz,
            }),
            log2_histogram: buckets
                .into_iter()
                .map(|(k, count)| match k {
                    0 => Log2Bucket { from_cycles: 0, to_cycles: 0, count },
                    k => Log2Bucket {
                        from_cycles: 1 << (k - 1),
                        to_cycles: u64::MAX >> (64 - k),
                        count,
                    },
                })
                .collect(),
        }
    }
}

/// How many deferred operations exposed this many CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpusExposed {
    /// CPUs exposed by one operation.
    pub cpus: u32,
    /// Operations that exposed that many.
    pub operations: u64,
}

/// The exposure of one deferral over any number of runs, as distributions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExposureSummary {
    /// Deferred operations that completed.
    pub operations: u64,
    /// The number of CPUs each operation exposed, fewest first.
    pub cpus_exposed: Vec<CpusExposed>,
    /// One window per (operation, exposed CPU): completion → that CPU's catch-up.
    pub per_cpu: Windows,
    /// One window per operation that exposed a CPU: completion → the last exposed CPU's
    /// catch-up (censored if any CPU's is).
    pub per_operation: Windows,
    /// Stale uses inside declared windows (`None` where the model makes no such accesses).
    pub uses: Option<u64>,
    /// Declared catch-ups missed (see [`ExposureLog::missed_catch_ups`]).
    pub missed_catch_ups: u64,
}

impl ExposureSummary {
    /// Summarises `logs` (in any order: the result does not depend on it) at `clock_mhz`.
    pub fn of<'a>(logs: impl IntoIterator<Item = &'a ExposureLog>, clock_mhz: u64) -> Self {
        let logs: Vec<&ExposureLog> = logs.into_iter().collect();
        let ops = || logs.iter().flat_map(|l| &l.operations);
        let mut cpus = BTreeMap::<u32, u64>::new();
        for op in ops() {
            *cpus.entry(op.windows.len() as u32).or_default() += 1;
        }
        let last =
            |op: &OperationExposure| op.windows.iter().try_fold(0, |m, w| w.map(|w| w.max(m)));
        ExposureSummary {
            operations: ops().count() as u64,
            cpus_exposed: cpus
                .into_iter()
                .map(|(cpus, operations)| CpusExposed { cpus, operations })
                .collect(),
            per_cpu: Windows::of(ops().flat_map(|op| op.windows.iter().copied()), clock_mhz),
            per_operation: Windows::of(
                ops().filter(|op| !op.windows.is_empty()).map(last),
                clock_mhz,
            ),
            uses: logs.iter().map(|l| l.uses).sum(),
            missed_catch_ups: logs.iter().map(|l| l.missed_catch_ups).sum(),
        }
    }
}

/// The exposure a safety check reports (`exposure` of `tlblab.sim.check/1`): what the policy
/// declares, and per kind of mapping the summary over every schedule (`None` where nothing of
/// that kind is declared).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ExposureReport {
    /// The policy's declared deferrals.
    pub declared: Vec<Deferral>,
    /// User mappings (`latr`).
    pub user: Option<ExposureSummary>,
    /// Kernel mappings (`xpfo-deferred`).
    pub kernel: Option<ExposureSummary>,
}

impl ExposureReport {
    /// The report of `runs` (any order) under `policy` at `clock_mhz`.
    pub fn of<'a>(
        policy: &Policy,
        runs: impl IntoIterator<Item = &'a RunExposure>,
        clock_mhz: u64,
    ) -> ExposureReport {
        let runs: Vec<&RunExposure> = runs.into_iter().collect();
        let summary = |logs: Vec<&'a ExposureLog>| {
            (!logs.is_empty()).then(|| ExposureSummary::of(logs, clock_mhz))
        };
        ExposureReport {
            declared: declared(policy),
            user: summary(runs.iter().filter_map(|r| r.user.as_ref()).collect()),
            kernel: summary(runs.iter().filter_map(|r| r.kernel.as_ref()).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_hold_powers_of_two() {
        let w = Windows::of([Some(0), Some(1), Some(2), Some(3), Some(4), Some(1023), None], 1);
        let b: Vec<(u64, u64, u64)> =
            w.log2_histogram.iter().map(|b| (b.from_cycles, b.to_cycles, b.count)).collect();
        assert_eq!(b, [(0, 0, 1), (1, 1, 1), (2, 3, 2), (4, 7, 1), (512, 1023, 1)]);
        assert_eq!((w.closed, w.censored), (6, 1));
        let top = Windows::of([Some(u64::MAX)], 1).log2_histogram[0];
        assert_eq!((top.from_cycles, top.to_cycles), (1 << 63, u64::MAX));
    }

    #[test]
    fn summaries_do_not_depend_on_the_order_of_runs() {
        let a = ExposureLog {
            operations: vec![
                OperationExposure { completed_at: 1, windows: vec![Some(10), Some(30)] },
                OperationExposure { completed_at: 2, windows: vec![] },
            ],
            uses: Some(3),
            missed_catch_ups: 1,
        };
        let b = ExposureLog {
            operations: vec![OperationExposure { completed_at: 5, windows: vec![Some(20)] }],
            uses: Some(4),
            missed_catch_ups: 0,
        };
        let s = ExposureSummary::of([&a, &b], 10);
        assert_eq!(s, ExposureSummary::of([&b, &a], 10));
        assert_eq!(s.operations, 3);
        let cpus: Vec<(u32, u64)> = s.cpus_exposed.iter().map(|c| (c.cpus, c.operations)).collect();
        assert_eq!(cpus, [(0, 1), (1, 1), (2, 1)]);
        assert_eq!(s.per_cpu.cycles.unwrap().p50, 20.0);
        // Per operation: the last CPU's window (30 and 20); the empty operation has none.
        assert_eq!(s.per_operation.closed, 2);
        assert_eq!(s.per_operation.cycles.unwrap().max, 30.0);
        assert_eq!((s.uses, s.missed_catch_ups), (Some(7), 1));
        // Kernel mappings have no uses: the sum of `None`s stays `None`.
        let k = ExposureLog { uses: None, ..ExposureLog::default() };
        assert_eq!(ExposureSummary::of([&k], 10).uses, None);
    }
}
