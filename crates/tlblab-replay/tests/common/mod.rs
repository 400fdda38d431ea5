//! Synthetic traces for the tests.
#![allow(dead_code)]

use tlblab_flushtrace::{Flush, Header, Origin, Other, Record, Switch, Task};

pub fn header(cpus: u32) -> Header {
    let mut h = Header::new(Origin::Recorded);
    h.cpus = (0..cpus).collect();
    h.clock = "mono".into();
    h
}

pub fn flush(ts_ns: u64, cpu: u32, pid: i32, reason: i32, pages: i64) -> Record {
    Record::Flush(Flush { ts_ns, cpu, pid, reason, pages })
}

pub fn task(pid: i32, tgid: i32) -> Record {
    Record::Task(Task { ts_ns: 0, pid, tgid, comm: format!("t{pid}") })
}

pub fn switch(ts_ns: u64, cpu: u32, prev_pid: i32, next_pid: i32) -> Record {
    Record::Switch(Switch { ts_ns, cpu, prev_pid, prev_state: 1, next_pid })
}

pub fn other(ts_ns: u64, cpu: u32, pid: i32) -> Record {
    Record::Other(Other { ts_ns, cpu, pid, event_id: 99 })
}

/// Process 10: thread 10 on CPU 0 makes `n` requests of `pages` pages (reason 4 then 3), 50 µs
/// apart from 1 ms on; with `sibling`, thread 11 of the same process runs on CPU 1 throughout
/// (`switches`: recorded by sched_switch; else shown by an event every 200 µs).
pub fn two_threads(n: u64, pages: i64, sibling: bool, switches: bool) -> Vec<Record> {
    let end = 1_000_000 + n * 50_000 + 500_000;
    let mut r = vec![task(10, 10), task(11, 10)];
    if switches {
        r.push(switch(0, 0, 0, 10));
        if sibling {
            r.push(switch(0, 1, 0, 11));
        }
    }
    let mut ev = Vec::new();
    for i in 0..n {
        let ts = 1_000_000 + i * 50_000;
        ev.push(flush(ts, 0, 10, 4, pages));
        ev.push(flush(ts + 500, 0, 10, 3, pages));
    }
    if sibling && !switches {
        let mut t = 0;
        while t <= end {
            ev.push(other(t, 1, 11));
            t += 200_000;
        }
    }
    if !switches {
        ev.push(other(0, 0, 10));
    }
    ev.push(other(end, 0, 10));
    ev.sort_by_key(|r| r.ts_ns());
    r.extend(ev);
    r
}
