//! Accesses simulated per second on one core, for the three reference streams of issue 2:
//! a page-local stream (long runs on 16 hot pages), a loop over 1,024 pages (L1 misses, STLB
//! hits), and random accesses over 65,536 pages (walks). Each is measured twice: decoded from
//! tlblab's compact format in memory (the end-to-end replay path), and from events already in
//! memory (the model alone). Machine: the Skylake preset.
//!
//! Run with `cargo bench -p tlblab-sim --bench throughput`; criterion prints elements/s, where an
//! element is one simulated access.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::io::Cursor;
use std::sync::Arc;
use tlblab_memtrace::{from_reader, CompactWriter, EventSource, Format, ReadOptions};
use tlblab_sim::workload::Workload;
use tlblab_sim::{machine, System};
use tlblab_types::TraceEvent;

fn events(w: Workload, accesses: u64) -> Vec<TraceEvent> {
    let (mut g, mut all, mut batch) = (w.generator(accesses, 1), Vec::new(), Vec::new());
    while g.fill(&mut batch, 4096) {
        all.extend_from_slice(&batch);
    }
    all
}

fn compact(events: &[TraceEvent]) -> Arc<[u8]> {
    let mut w = CompactWriter::new(Vec::new()).unwrap();
    for e in events {
        w.write(e).unwrap();
    }
    w.finish().unwrap().into()
}

fn bench(c: &mut Criterion) {
    let spec = machine::builtin("skylake").unwrap();
    let streams = [
        (Workload::PageLocal, 4_000_000u64),
        (Workload::Loop1024, 1_000_000),
        (Workload::Random65536, 1_000_000),
    ];
    let mut group = c.benchmark_group("skylake");
    group.sample_size(20);
    for (workload, accesses) in streams {
        let events = events(workload, accesses);
        let bytes = compact(&events);
        group.throughput(Throughput::Elements(accesses));
        group.bench_function(format!("{}/compact", workload.name()), |b| {
            b.iter(|| {
                let mut trace = from_reader(
                    "bench.tlbt",
                    Cursor::new(bytes.clone()),
                    Some(Format::Compact),
                    &ReadOptions::default(),
                )
                .unwrap();
                let mut system = System::new(&spec);
                let mut batch = Vec::new();
                loop {
                    let more = trace.read_batch(&mut batch).unwrap();
                    system.apply_all(&batch).unwrap();
                    if !more {
                        break;
                    }
                }
                black_box(system.total().total_walks())
            })
        });
        group.bench_function(format!("{}/model", workload.name()), |b| {
            b.iter(|| {
                let mut system = System::new(&spec);
                system.apply_all(&events).unwrap();
                black_box(system.total().total_walks())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
