//! Records summarised per second by `SummaryBuilder::add`, on a synthetic stream shaped like a
//! `tlblab trace record` of a shootdown-heavy workload on a 2-CPU machine: 1 M records, about
//! 90% `tlb_flush` (reasons 0–5 with a mix of sizes, runs of one thread per CPU) and 10%
//! `sched_switch`, with a task record for each of 64 threads in 8 processes, over 10 s.
//! A second case has 128 CPUs and 4,096 threads, to show the per-thread map's cost.
//!
//! Run with `cargo bench -p tlblab-flushtrace --bench summary`; criterion prints elements/s,
//! where an element is one record.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tlblab_flushtrace::{
    reason, End, Flush, Header, Origin, Record, SummaryBuilder, SummaryOptions, Switch, Task,
    Trailer, FLUSH_ALL,
};

const RECORDS: u64 = 1_000_000;

/// A small xorshift generator: the bench needs repeatable variety, not statistical quality.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn stream(cpus: u32, threads: i32) -> Vec<Record> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut out: Vec<Record> = (0..threads)
        .map(|t| {
            let pid = 1000 + t;
            Record::Task(Task { ts_ns: 0, pid, tgid: 1000 + t / 8 * 8, comm: format!("w{t}") })
        })
        .collect();
    let mut running: Vec<i32> = (0..cpus as i32).map(|c| 1000 + c % threads).collect();
    let step = 10_000_000_000 / RECORDS;
    for i in 0..RECORDS {
        let x = rng.next();
        let ts = i * step + (x & 0xff);
        let cpu = (x >> 8) as u32 % cpus;
        if x >> 60 == 0 {
            let next = 1000 + (x >> 20) as i32 % threads;
            let prev = std::mem::replace(&mut running[cpu as usize], next);
            out.push(Record::Switch(Switch {
                ts_ns: ts,
                cpu,
                prev_pid: prev,
                prev_state: 0,
                next_pid: next,
            }));
            continue;
        }
        let reason = [
            reason::LOCAL_MM_SHOOTDOWN,
            reason::REMOTE_SEND_IPI,
            reason::REMOTE_SEND_IPI,
            reason::REMOTE_SHOOTDOWN,
            reason::TASK_SWITCH,
            reason::LOCAL_SHOOTDOWN,
            reason::LOCAL_MM_SHOOTDOWN,
            reason::REMOTE_WRONG_CPU,
        ][(x >> 16) as usize % 8];
        let pages = match (x >> 24) % 8 {
            0..=2 => 1,
            3 => FLUSH_ALL,
            4 => 0,
            5 => ((x >> 32) % 33) as i64,
            6 => 512,
            _ => ((x >> 32) % 100_000) as i64,
        };
        let pid = running[cpu as usize];
        out.push(Record::Flush(Flush { ts_ns: ts, cpu, pid, reason, pages }));
    }
    out
}

fn bench(c: &mut Criterion) {
    let header = Header::new(Origin::Recorded);
    let trailer = Trailer { end: End::Complete, ..Trailer::default() };
    let mut group = c.benchmark_group("summary");
    for (name, cpus, threads) in [("2cpu_64threads", 2, 64), ("128cpu_4096threads", 128, 4096)] {
        let records = stream(cpus, threads);
        group.throughput(Throughput::Elements(records.len() as u64));
        group.bench_function(format!("add/{name}"), |b| {
            b.iter(|| {
                let mut builder = SummaryBuilder::new(&header, SummaryOptions::default());
                for r in &records {
                    builder.add(black_box(r));
                }
                black_box(builder.finish(&trailer).totals.flush_events)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
