//! Builds a synthetic trace of about a million records and times its replay:
//! `cargo run --release -p tlblab-replay --example synthetic -- [RECORDS] [sweep] [inferred]
//! [ws=PAGES]`
//! (`inferred`: the trace below without `sched_switch`; `ws=PAGES`: a working set of that many pages per thread instead of re-referencing the
//! flushed pages).
//!
//! Four CPUs; on each, two threads of different processes (each process has a thread on
//! another CPU too) take turns every 2 ms (`sched_switch`); the running thread makes a flush
//! request every 20 µs (reason 4 then 3), of 1 page mostly, up to 40 pages sometimes, and now
//! and then a full one (-1).
use std::time::Instant;
use tlblab_flushtrace::{Flush, Header, Origin, Record, Switch, Task};
use tlblab_kernel::Policy;
use tlblab_replay::{
    render_replay, render_sweep, replay, sweep_ceiling, Plan, Refill, ReplayOptions,
};

fn trace(target: usize) -> Vec<Record> {
    let cpus = 4u32;
    // Thread of CPU c, turn k: pid 100 + 10·c + k; process: (c + k) mod 4.
    let pid = |c: u32, k: u32| 100 + 10 * c as i32 + k as i32;
    let mut r: Vec<Record> = Vec::with_capacity(target + 64);
    for c in 0..cpus {
        for k in 0..2 {
            let tgid = 1000 + ((c + k) % cpus) as i32;
            r.push(Record::Task(Task { ts_ns: 0, pid: pid(c, k), tgid, comm: format!("w{c}{k}") }));
        }
    }
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut ts = 0u64;
    let mut turn = 0u32;
    while r.len() < target {
        if ts.is_multiple_of(2_000_000) {
            for c in 0..cpus {
                let (prev, next) =
                    if ts == 0 { (0, pid(c, 0)) } else { (pid(c, turn), pid(c, 1 - turn)) };
                r.push(Record::Switch(Switch {
                    ts_ns: ts,
                    cpu: c,
                    prev_pid: prev,
                    prev_state: 1,
                    next_pid: next,
                }));
            }
            if ts > 0 {
                turn = 1 - turn;
            }
        }
        for c in 0..cpus {
            let x = rand() % 100;
            let pages = match x {
                0..=79 => 1,
                80..=94 => 2 + (rand() % 39) as i64,
                _ => -1,
            };
            let t = ts + u64::from(c) * 1_000;
            let p = pid(c, turn);
            r.push(Record::Flush(Flush { ts_ns: t, cpu: c, pid: p, reason: 4, pages }));
            r.push(Record::Flush(Flush { ts_ns: t + 300, cpu: c, pid: p, reason: 3, pages }));
        }
        ts += 20_000;
    }
    r
}

/// Without `sched_switch`: on each of 2 CPUs, runs of 50–500 µs by one of 20 threads (5
/// processes of 4 threads, each thread on one CPU), with an event every 10 µs, 30 % of them
/// requests (reason 4 then 3), and now and then an idle gap of up to 3 ms.
fn inferred_trace(target: usize) -> Vec<Record> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut r: Vec<Record> = (0..40)
        .map(|t| {
            Record::Task(Task {
                ts_ns: 0,
                pid: 200 + t,
                tgid: 200 + t / 8 * 8,
                comm: format!("x{t}"),
            })
        })
        .collect();
    let mut per_cpu: [Vec<Record>; 2] = [Vec::new(), Vec::new()];
    let quota = target / 2;
    for (c, out) in per_cpu.iter_mut().enumerate() {
        let mut ts = 0u64;
        while out.len() < quota {
            let pid = 200 + 2 * rand(20) as i32 + c as i32;
            let end = ts + 50_000 + rand(450_000);
            while ts < end && out.len() < quota {
                if rand(10) < 3 {
                    let pages = if rand(10) < 8 { 1 } else { 1 + rand(40) as i64 };
                    out.push(Record::Flush(Flush {
                        ts_ns: ts,
                        cpu: c as u32,
                        pid,
                        reason: 4,
                        pages,
                    }));
                    out.push(Record::Flush(Flush {
                        ts_ns: ts + 300,
                        cpu: c as u32,
                        pid,
                        reason: 3,
                        pages,
                    }));
                } else {
                    out.push(Record::Other(tlblab_flushtrace::Other {
                        ts_ns: ts,
                        cpu: c as u32,
                        pid,
                        event_id: 7,
                    }));
                }
                ts += 10_000;
            }
            if rand(5) == 0 {
                ts += rand(3_000_000);
            }
        }
    }
    let [a, b] = per_cpu;
    r.extend(a);
    r.extend(b);
    r.sort_by_key(Record::ts_ns);
    r
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let sweep = args.iter().any(|a| a == "sweep");
    let spec = tlblab_sim::machine::builtin("skylake").expect("built-in preset");
    let mut header = Header::new(Origin::Recorded);
    header.cpus = vec![0, 1];
    let t = Instant::now();
    let records = if args.iter().any(|a| a == "inferred") { inferred_trace(n) } else { trace(n) };
    println!("generated {} records in {:.2?}", records.len(), t.elapsed());
    let refill = args
        .iter()
        .find_map(|a| a.strip_prefix("ws="))
        .and_then(|w| w.parse().ok())
        .map_or(Refill::Flushed, Refill::WorkingSet);
    let opts = ReplayOptions { refill, ..ReplayOptions::default() };
    let t = Instant::now();
    let plan = Plan::build(&header, records.clone(), &opts).expect("a valid trace");
    println!(
        "plan: {} requests, {} threads, built in {:.2?}",
        plan.summary.requests.total,
        plan.summary.threads,
        t.elapsed()
    );
    let policy = Policy::named("linux-6.18").expect("built-in policy");
    let t = Instant::now();
    let report = replay(&header, records.clone(), &spec, std::slice::from_ref(&policy), &opts)
        .expect("replay");
    let took = t.elapsed();
    print!("{}", render_replay(&report));
    println!(
        "replay (plan + run + twin run) of {} records: {:.2?}, {} model events",
        records.len(),
        took,
        report.policies[0].model_events
    );
    if sweep {
        let ceilings = [1, 2, 4, 8, 16, 33, 64, 128, 256, 512];
        let t = Instant::now();
        let s = sweep_ceiling(&header, records, &spec, &policy, &ceilings, &opts).expect("sweep");
        let took = t.elapsed();
        print!("{}", render_sweep(&s));
        println!("sweep of {} ceilings: {:.2?}", ceilings.len(), took);
    }
}
