//! Any sequence of records is replayed or refused with an error, never a panic.

use proptest::prelude::*;
use tlblab_flushtrace::{
    CallFunction, Flush, Header, IpiSend, Origin, Other, Record, Switch, Task,
};
use tlblab_kernel::Policy;
use tlblab_replay::{replay, Refill, ReplayOptions};

fn record() -> impl Strategy<Value = (u64, Record)> {
    records_with(0u64..400_000)
}

/// Records whose times step by `step`.
fn records_with(step: impl Strategy<Value = u64> + Clone) -> impl Strategy<Value = (u64, Record)> {
    let cpu = 0u32..4;
    let pid = -1i32..6;
    prop_oneof![
        4 => (step.clone(), cpu.clone(), pid.clone(), 0i32..7, -2i64..70)
            .prop_map(|(d, cpu, pid, reason, pages)| (d, Record::Flush(Flush { ts_ns: 0, cpu, pid, reason, pages }))),
        2 => (step.clone(), cpu.clone(), pid.clone(), pid.clone())
            .prop_map(|(d, cpu, prev_pid, next_pid)| (d, Record::Switch(Switch { ts_ns: 0, cpu, prev_pid, prev_state: 0, next_pid }))),
        1 => (step.clone(), cpu.clone(), pid.clone())
            .prop_map(|(d, cpu, pid)| (d, Record::Other(Other { ts_ns: 0, cpu, pid, event_id: 1 }))),
        1 => (step.clone(), cpu.clone(), pid.clone())
            .prop_map(|(d, cpu, pid)| (d, Record::IpiSend(IpiSend { ts_ns: 0, cpu, pid, targets: vec![cpu ^ 1], callback: 0 }))),
        1 => (step.clone(), cpu.clone(), pid.clone(), any::<bool>())
            .prop_map(|(d, cpu, pid, entry)| (d, Record::CallFunction(CallFunction { ts_ns: 0, cpu, pid, vector: 251, entry, single: false }))),
        1 => (step, pid.clone(), pid)
            .prop_map(|(d, pid, tgid)| (d, Record::Task(Task { ts_ns: 0, pid, tgid, comm: "x".into() }))),
    ]
}

fn with_time(steps: Vec<(u64, Record)>, back: Option<(usize, u64)>) -> Vec<Record> {
    let mut ts = 0;
    let mut out = Vec::new();
    for (i, (d, mut r)) in steps.into_iter().enumerate() {
        ts = u64::saturating_add(ts, d);
        let t = match back {
            Some((at, by)) if at == i => ts.saturating_sub(by),
            _ => ts,
        };
        match &mut r {
            Record::Flush(x) => x.ts_ns = t,
            Record::Switch(x) => x.ts_ns = t,
            Record::IpiSend(x) => x.ts_ns = t,
            Record::CallFunction(x) => x.ts_ns = t,
            Record::Task(x) => x.ts_ns = t,
            Record::Other(x) => x.ts_ns = t,
        }
        out.push(r);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn replay_never_panics(
        steps in prop::collection::vec(record(), 0..60),
        back in prop::option::of((0usize..60, 0u64..50_000)),
        cpus in prop::option::of(1usize..5),
        ws in any::<bool>(),
    ) {
        let records = with_time(steps, back);
        let spec = tlblab_sim::machine::builtin("skylake").unwrap();
        let opts = ReplayOptions {
            cpus,
            refill: if ws { Refill::WorkingSet(8) } else { Refill::Flushed },
            ..ReplayOptions::default()
        };
        let policies = [Policy::named("linux-6.18").unwrap(), Policy::named("linux-4.13").unwrap()];
        match replay(&Header::new(Origin::FtraceText), records, &spec, &policies, &opts) {
            Ok(r) => {
                for p in &r.policies {
                    prop_assert!(p.complete, "{}: {} threads unfinished", p.policy, p.threads_unfinished);
                    prop_assert_eq!(p.requests_replayed, r.trace.requests.total);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// Runs `f` on a thread of its own; fails if it panics or takes longer than `bound`.
fn within<T: Send + 'static>(
    bound: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    tlblab_types::bounded::within(bound, f).unwrap_or_else(|e| panic!("{e}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Traces with gaps up to 2^62 ns (and times that saturate at the top of the clock) replay
    /// in time bounded by their records, not their span, or are refused.
    #[test]
    fn replay_time_is_bounded_by_the_records(
        steps in prop::collection::vec(records_with(prop_oneof![6 => 0u64..400_000, 1 => 0u64..(1 << 62)]), 0..24),
    ) {
        let records = with_time(steps, None);
        let outcome = within(std::time::Duration::from_secs(10), move || {
            let spec = tlblab_sim::machine::builtin("skylake").unwrap();
            let policies = [Policy::named("linux-6.18").unwrap()];
            replay(&Header::new(Origin::FtraceText), records, &spec, &policies, &ReplayOptions::default())
                .map(|r| r.policies.iter().all(|p| p.complete))
                .map_err(|e| e.to_string())
        });
        match outcome {
            Ok(complete) => prop_assert!(complete),
            Err(e) => prop_assert!(!e.is_empty()),
        }
    }
}
