//! A real trace of a kernel build with context switches (tests/fixtures/kbuild/): 8 s of a
//! `make -j2 kernel/ mm/ fs/` of Linux 6.12 recorded with `tlblab trace record --events
//! tlb,sched` on the project's 2-vCPU KVM guest, reduced to the build's process tree
//! (tools/calibrate/kbuild_switches.py; tools/calibrate/results/kbuild-switches-2026-11-25.md).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use tlblab_flushtrace::{Record, TraceReader};

/// The build blocks and exits as often per CPU-second of its own in the excerpt as the results
/// file says it does over the whole recording: 47 voluntary and exit switch-outs of build tasks
/// per build CPU-second, 10-s intervals from 28 to 64. Every switch in it has a build task on
/// one side, and the build's tasks are the ones it was recorded for (sh, gcc, cc1, as, fixdep,
/// rm, make, …).
#[test]
fn the_kbuild_excerpt_switches_at_the_measured_rate() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kbuild/make-j2-8s.flushtrace");
    let mut reader = TraceReader::open(&path).unwrap();
    let tree: HashSet<i32> = reader
        .header()
        .notes
        .iter()
        .find_map(|n| n.strip_prefix("build tree pids: "))
        .expect("the excerpt names the build's pids")
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    let (mut comms, mut on_cpu) = (HashMap::new(), HashMap::new());
    let (mut cpu_ns, mut blocked, mut exited, mut switches) = (0u64, 0u64, 0u64, 0u64);
    for record in reader.by_ref() {
        match record.unwrap() {
            Record::Task(t) => {
                comms.insert(t.pid, t.comm);
            }
            Record::Switch(s) => {
                switches += 1;
                assert!(tree.contains(&s.prev_pid) || tree.contains(&s.next_pid));
                if let Some((pid, since)) = on_cpu.insert(s.cpu, (s.next_pid, s.ts_ns)) {
                    if pid == s.prev_pid && tree.contains(&pid) {
                        cpu_ns += s.ts_ns - since;
                    }
                }
                // prev_state: bits 4 and 5 (X, Z) on a task's last switch; any other bit set
                // (S, D, …) is a block; none is a preemption.
                let state = s.prev_state & 0xff;
                if tree.contains(&s.prev_pid) && state != 0 {
                    if state & 0x30 != 0 {
                        exited += 1;
                    } else {
                        blocked += 1;
                    }
                }
            }
            _ => {}
        }
    }
    assert!(reader.trailer().is_some(), "a complete file");
    assert!(switches > 1000, "{switches} switches");
    let kinds: HashSet<&str> =
        tree.iter().filter_map(|p| comms.get(p).map(String::as_str)).collect();
    for comm in ["make", "sh", "gcc", "cc1", "as", "fixdep", "rm"] {
        assert!(kinds.contains(comm), "no {comm} in {kinds:?}");
    }
    let cpu_s = cpu_ns as f64 / 1e9;
    assert!(cpu_s > 3.0, "{cpu_s} build CPU-s");
    let rate = (blocked + exited) as f64 / cpu_s;
    assert!((28.0..64.0).contains(&rate), "{rate} switch-outs per build CPU-s");
}
