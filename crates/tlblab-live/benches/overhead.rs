//! Harness overhead of `madvise-busy --busy 0`: the bare loop of { write a page;
//! madvise(MADV_DONTNEED) it } against the same loop through `Prepared::run` (issue 4: the
//! harness should add at most 1% to the measured op).

use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;
use tlblab_live::{prepare, LiveParams, Placement, RunLength, ScenarioSpec};

fn overhead(c: &mut Criterion) {
    let spec = ScenarioSpec {
        name: "madvise-busy".into(),
        params: LiveParams { busy: Some(0), ..Default::default() },
    };
    let mut p = match prepare(&spec, &Placement::default()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let mut group = c.benchmark_group("madvise-busy-0");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("bare", |b| b.iter_custom(|n| p.run_bare(n).expect("bare loop")));
    group.bench_function("harness", |b| {
        b.iter_custom(|n| {
            Duration::from_nanos(p.run(RunLength::Ops(n.max(1))).expect("run").elapsed_ns)
        })
    });
    group.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
