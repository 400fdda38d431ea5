//! The counters around one measured run: system-wide interrupt and vmstat deltas, the faults and
//! switches of the benchmark's own tasks, `tlb:tlb_flush` events from tlblab's tracefs instance,
//! and the PMU counts a worker took. Names are those of docs/bench-output.md. A source that fails during a run
//! leaves its counters out and adds a warning to the run; it never fails the run.

use std::collections::BTreeMap;

use tlblab_env::{
    InterruptDelta, InterruptSnapshot, PmuReading, ProcessCounters, RusageSnapshot, Source,
    TlbFlushCounters,
};
use tlblab_tracefs::{count_buffered_flushes, Instance};

/// What the counter sources held before the run.
pub struct Before {
    interrupts: Result<InterruptSnapshot, String>,
    vmstat: Option<Result<TlbFlushCounters, String>>,
    tasks: Result<ProcessCounters, String>,
    tracing: Result<(), String>,
}

/// The counters the run's tasks have so far: this process (all threads), its children that
/// have exited and been waited for, and the live processes `tasks` (the workers and theirs).
fn task_counters(tasks: &[i32]) -> Result<ProcessCounters, String> {
    let own = RusageSnapshot::read().map_err(|e| tlblab_types::plain::error_chain(&e))?;
    let mut sum = own.process.plus(&own.children);
    for &pid in tasks {
        let pid = u32::try_from(pid).map_err(|_| format!("bad child pid {pid}"))?;
        sum = sum
            .plus(&ProcessCounters::of_pid(pid).map_err(|e| tlblab_types::plain::error_chain(&e))?);
    }
    Ok(sum)
}

/// Reads every source and starts the trace; call right before the measured run.
pub fn before(tasks: &[i32], trace: Option<&Instance>) -> Before {
    let tracing = match trace {
        Some(instance) => instance
            .clear()
            .and_then(|()| instance.set_tracing_on(true))
            .map_err(|e| format!("tlb_flush trace not started: {e}")),
        None => Ok(()),
    };
    Before {
        interrupts: InterruptSnapshot::read().map_err(|e| tlblab_types::plain::error_chain(&e)),
        vmstat: match TlbFlushCounters::read() {
            Ok(Source::Available(c)) => Some(Ok(c)),
            Ok(Source::Unavailable { .. }) => None,
            Err(e) => Some(Err(tlblab_types::plain::error_chain(&e))),
        },
        tasks: task_counters(tasks),
        tracing,
    }
}

/// Reads every source again, stops the trace, and returns the deltas by name with warnings for
/// the sources that failed. Call right after the measured run, whatever it returned.
pub fn after(
    before: Before,
    tasks: &[i32],
    trace: Option<&Instance>,
) -> (BTreeMap<String, u64>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut put = |name: String, value: u64| {
        out.insert(name, value);
    };
    // First what the run itself left: the trace (stopped at once) and the PMU.
    if let Some(instance) = trace {
        let stopped = instance.set_tracing_on(false);
        match before
            .tracing
            .and_then(|()| stopped.map_err(|e| tlblab_types::plain::error_chain(&e)))
        {
            Err(e) => warnings.push(e),
            Ok(()) => match count_buffered_flushes(instance) {
                Err(e) => warnings.push(format!("tlb_flush events not counted: {e}")),
                Ok(counts) => {
                    for (cpu, reasons) in &counts.by_cpu {
                        for (reason, n) in reasons {
                            put(format!("tlb_flush.reason{reason}.cpu{cpu}"), *n);
                        }
                    }
                    // Every reason the kernel defines, zeros included, so that a comparison
                    // shows a reason that only one side had.
                    let reasons: std::collections::BTreeSet<i32> = counts
                        .by_cpu
                        .values()
                        .flat_map(|m| m.keys().copied())
                        .chain(counts.reason_names.keys().copied())
                        .collect();
                    for reason in reasons {
                        put(format!("tlb_flush.reason{reason}"), counts.reason_total(reason));
                    }
                    let lost = counts.lost_events();
                    put("tlb_flush.lost".into(), lost);
                    if counts.lost_any() {
                        warnings.push(format!(
                            "the trace buffers lost tlb_flush events ({lost} or more): the \
                             tlb_flush counts are low; use a larger --trace-buffer-kb or a \
                             shorter --run-ms"
                        ));
                    }
                }
            },
        }
    }
    match before.interrupts.and_then(|b| {
        let a = InterruptSnapshot::read().map_err(|e| tlblab_types::plain::error_chain(&e))?;
        InterruptDelta::between(&b, &a).map_err(|e| tlblab_types::plain::error_chain(&e))
    }) {
        Err(e) => warnings.push(format!("/proc/interrupts deltas: {e}")),
        Ok(d) => {
            for (row, name) in [(&d.tlb, "irq.tlb"), (&d.cal, "irq.cal")] {
                if let Source::Available(row) = row {
                    put(name.to_string(), row.total);
                    for (cpu, n) in d.cpus.iter().zip(&row.per_cpu) {
                        put(format!("{name}.cpu{cpu}"), *n);
                    }
                }
            }
        }
    }
    if let Some(vmstat) = before.vmstat {
        let delta = vmstat.and_then(|b| match TlbFlushCounters::read() {
            Ok(Source::Available(a)) => {
                TlbFlushCounters::delta(&b, &a).map_err(|e| tlblab_types::plain::error_chain(&e))
            }
            Ok(Source::Unavailable { reason }) => Err(reason),
            Err(e) => Err(tlblab_types::plain::error_chain(&e)),
        });
        match delta {
            Err(e) => warnings.push(format!("/proc/vmstat deltas: {e}")),
            Ok(d) => {
                let values =
                    [d.remote_flush, d.remote_flush_received, d.local_flush_all, d.local_flush_one];
                for (name, v) in TlbFlushCounters::NAMES.iter().zip(values) {
                    put(format!("vmstat.{name}"), v);
                }
            }
        }
    }
    match before.tasks.and_then(|b| {
        let a = task_counters(tasks)?;
        ProcessCounters::delta("tasks", &b, &a).map_err(|e| tlblab_types::plain::error_chain(&e))
    }) {
        Err(e) => warnings.push(format!("fault and switch counts: {e}")),
        Ok(d) => {
            put("rusage.minor_faults".into(), d.minor_faults);
            put("rusage.major_faults".into(), d.major_faults);
            put("rusage.voluntary_switches".into(), d.voluntary_switches);
            put("rusage.involuntary_switches".into(), d.involuntary_switches);
        }
    }
    (out, warnings)
}

/// The PMU counts a worker took around its measured run, by name, with a warning when the
/// kernel multiplexed the counters.
pub fn pmu(reading: &PmuReading, out: &mut BTreeMap<String, u64>, warnings: &mut Vec<String>) {
    out.insert("pmu.dtlb_load_misses".into(), reading.dtlb_load_misses);
    if let Some(c) = reading.cycles {
        out.insert("pmu.cycles".into(), c);
    }
    if reading.time_running_ns < reading.time_enabled_ns {
        warnings.push(format!(
            "the PMU was multiplexed: counted {} of {} ns",
            reading.time_running_ns, reading.time_enabled_ns
        ));
    }
}
