//! The text importers against real captures (kernel 6.18, perf 6.1) and hand-made fixtures
//! (tests/fixtures/text/README.md says what each imitates). Counts were taken independently with
//! `grep -c` on the fixture (commands in the README).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use proptest::prelude::*;
use tlblab_flushtrace::import::{
    ImportError, LineProblem, Skipped, TextFormat, TextImporter, UNKNOWN_CPU,
};
use tlblab_flushtrace::{Flush, IpiSend, Loss, Record, Switch, Task, Trailer};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/text").join(name)
}

/// What an import of a whole fixture gave.
struct Imported {
    records: Vec<Record>,
    errors: Vec<ImportError>,
    importer: TextImporter<BufReader<File>>,
}

fn import(name: &str) -> Imported {
    import_as(name, None)
}

fn import_as(name: &str, format: Option<TextFormat>) -> Imported {
    let path = fixture(name);
    let file = File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut importer = TextImporter::new(BufReader::new(file), path, format);
    let (mut records, mut errors) = (Vec::new(), Vec::new());
    for r in importer.by_ref() {
        match r {
            Ok(r) => records.push(r),
            Err(e) => errors.push(e),
        }
    }
    Imported { records, errors, importer }
}

/// Flushes by reason, switches, IPI sends, tasks.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    by_reason: BTreeMap<i32, u64>,
    switches: u64,
    ipi_sends: u64,
}

fn counts(records: &[Record]) -> Counts {
    let mut c = Counts::default();
    for r in records {
        match r {
            Record::Flush(f) => *c.by_reason.entry(f.reason).or_default() += 1,
            Record::Switch(_) => c.switches += 1,
            Record::IpiSend(_) => c.ipi_sends += 1,
            _ => {}
        }
    }
    c
}

fn expect(by_reason: &[(i32, u64)], switches: u64, ipi_sends: u64) -> Counts {
    Counts { by_reason: by_reason.iter().copied().collect(), switches, ipi_sends }
}

/// A fixture, its format, and the counts `grep -c` gave (README: "Counts").
struct Fixture {
    name: &'static str,
    format: TextFormat,
    /// Flushes by reason.
    by_reason: &'static [(i32, u64)],
    switches: u64,
    ipi_sends: u64,
}

const fn fx(
    name: &'static str,
    format: TextFormat,
    by_reason: &'static [(i32, u64)],
    switches: u64,
    ipi_sends: u64,
) -> Fixture {
    Fixture { name, format, by_reason, switches, ipi_sends }
}

use TextFormat::{FtraceText, PerfScript};

const FIXTURES: &[Fixture] = &[
    fx("ftrace-6.18-trace.txt", FtraceText, &[(0, 33), (1, 2), (3, 59), (4, 60)], 90, 7),
    fx("ftrace-6.18-trace-tgid-noirq.txt", FtraceText, &[(0, 27), (1, 2), (3, 52), (4, 54)], 83, 3),
    fx(
        "ftrace-6.18-trace_pipe.txt",
        FtraceText,
        &[(0, 53), (1, 2), (3, 144), (4, 114), (5, 1)],
        174,
        10,
    ),
    fx("ftrace-4.9-hand.txt", FtraceText, &[(0, 5), (1, 7), (2, 1), (3, 3), (4, 5)], 5, 0),
    fx("ftrace-edge-hand.txt", FtraceText, &[(0, 3), (1, 1), (3, 1), (5, 2)], 2, 3),
    fx("perf-6.1-script.txt", PerfScript, &[(0, 29), (1, 3), (3, 68), (4, 58)], 92, 0),
    fx("perf-6.1-script-ns.txt", PerfScript, &[(0, 29), (1, 3), (3, 68), (4, 58)], 92, 0),
    fx("perf-6.1-script-pid-tid.txt", PerfScript, &[(0, 23), (1, 3), (3, 56), (4, 46)], 72, 0),
    fx("perf-6.1-script-nocpu.txt", PerfScript, &[(1, 1), (3, 100), (4, 100)], 0, 0),
    fx("perf-6.1-script-reason5.txt", PerfScript, &[(0, 6), (3, 18), (4, 15), (5, 1)], 20, 0),
    fx("perf-6.1-script-ipi.txt", PerfScript, &[], 0, 24),
    fx("perf-reason5-hand.txt", PerfScript, &[(0, 1), (1, 1), (3, 1), (4, 2), (5, 3)], 1, 0),
];

#[test]
fn every_fixture_imports_without_errors_with_the_grep_counts() {
    for &Fixture { name, format, by_reason, switches, ipi_sends } in FIXTURES {
        let imp = import(name);
        assert!(
            imp.errors.is_empty(),
            "{name}: {:?}",
            imp.errors.iter().map(ToString::to_string).collect::<Vec<_>>()
        );
        assert_eq!(imp.importer.format(), Some(format), "{name}: detected format");
        assert_eq!(counts(&imp.records), expect(by_reason, switches, ipi_sends), "{name}");
    }
}

#[test]
fn forcing_the_right_format_gives_the_same_records() {
    for &Fixture { name, format, .. } in FIXTURES {
        assert_eq!(import_as(name, Some(format)).records, import(name).records, "{name}");
    }
}

#[test]
fn forcing_the_wrong_format_refuses_every_event_line() {
    let imp = import_as("ftrace-6.18-trace.txt", Some(PerfScript));
    assert!(imp.records.is_empty());
    // 263 lines: 12 header comments, 251 events.
    assert_eq!(imp.errors.len(), 251);
    assert_eq!(imp.errors[0].problem(), Some(&LineProblem::NotFormat(TextFormat::PerfScript)));
    assert_eq!(imp.errors[0].line(), 13);
}

#[test]
fn every_line_is_a_record_or_counted_as_skipped() {
    for &Fixture { name, .. } in FIXTURES {
        let imp = import(name);
        let events = imp.records.iter().filter(|r| !matches!(r, Record::Task(_))).count() as u64;
        let lines = std::fs::read_to_string(fixture(name)).unwrap().lines().count() as u64;
        assert_eq!(imp.importer.lines_read(), lines, "{name}");
        assert_eq!(events + imp.importer.skipped().total(), lines, "{name}");
    }
}

#[test]
fn timestamps_never_go_back_on_a_cpu() {
    for &Fixture { name, .. } in FIXTURES {
        let mut last: BTreeMap<u32, u64> = BTreeMap::new();
        for r in import(name).records {
            let cpu = match &r {
                Record::Flush(f) => f.cpu,
                Record::Switch(s) => s.cpu,
                Record::IpiSend(i) => i.cpu,
                _ => continue,
            };
            let prev = last.insert(cpu, r.ts_ns()).unwrap_or(0);
            assert!(r.ts_ns() >= prev, "{name}: cpu {cpu} went from {prev} to {}", r.ts_ns());
        }
    }
}

#[test]
fn tasks_come_first_with_the_timestamp_of_the_event_that_showed_them() {
    for &Fixture { name, .. } in FIXTURES {
        let records = import(name).records;
        let mut known = std::collections::HashSet::new();
        for (i, r) in records.iter().enumerate() {
            match r {
                Record::Task(t) => {
                    known.insert(t.pid);
                    let event =
                        records[i..].iter().find(|r| !matches!(r, Record::Task(_))).unwrap();
                    assert_eq!(t.ts_ns, event.ts_ns(), "{name}: record {i}");
                }
                Record::Flush(Flush { pid, .. }) | Record::IpiSend(IpiSend { pid, .. }) => {
                    assert!(known.contains(pid), "{name}: pid {pid} used before its Task")
                }
                Record::Switch(s) => {
                    assert!(
                        known.contains(&s.prev_pid) && known.contains(&s.next_pid),
                        "{name}: {s:?}"
                    )
                }
                _ => {}
            }
        }
    }
}

#[test]
fn reason_labels_as_the_text_spelt_them() {
    let names = |f: &str| import(f).importer.reason_names().clone();
    let new = names("ftrace-6.18-trace_pipe.txt");
    assert_eq!(new[&3], "local MM shootdown");
    assert_eq!(new[&4], "remote IPI send");
    assert_eq!(new[&5], "remote wrong CPU");
    let old = names("ftrace-4.9-hand.txt");
    assert_eq!(
        old,
        [
            (0, "flush on task switch"),
            (1, "remote shootdown"),
            (2, "local shootdown"),
            (3, "local mm shootdown"),
            (4, "remote ipi send")
        ]
        .into_iter()
        .map(|(r, s)| (r, s.to_string()))
        .collect()
    );
    // `0x5` and an empty label are not names.
    assert!(!names("perf-reason5-hand.txt").contains_key(&5));
    assert!(!names("ftrace-edge-hand.txt").contains_key(&5));
}

#[test]
fn ftrace_trace_pipe_reports_lost_events_per_cpu() {
    let imp = import("ftrace-6.18-trace_pipe.txt");
    // Lines 1 and 92: `CPU:1 [LOST 1880 EVENTS]`, `CPU:0 [LOST 3470 EVENTS]`.
    assert_eq!(
        imp.importer.lost_events(),
        vec![
            Loss { cpu: 0, events: 3470, pages_with_unknown_loss: 0 },
            Loss { cpu: 1, events: 1880, pages_with_unknown_loss: 0 }
        ]
    );
    assert_eq!(imp.importer.skipped().lost_reports, 2);
    assert_eq!(imp.importer.cpus_seen(), vec![0, 1]);
    assert_eq!(imp.importer.ftrace_header().tracer, None);
}

#[test]
fn ftrace_trace_header_block() {
    let imp = import("ftrace-6.18-trace.txt");
    let h = imp.importer.ftrace_header();
    // Line 3: `# entries-in-buffer/entries-written: 1673/1673   #P:2`.
    assert_eq!(
        (h.tracer.as_deref(), h.entries_in_buffer, h.entries_written, h.cpus),
        (Some("nop"), Some(1673), Some(1673), Some(2))
    );
    assert_eq!(h.overwritten(), Some(0));
    assert_eq!(imp.importer.skipped().comments, 12);
    assert_eq!(import("ftrace-4.9-hand.txt").importer.ftrace_header().overwritten(), Some(4));
}

#[test]
fn real_ftrace_line_decoded_exactly() {
    // ftrace-6.18-trace.txt line 13 and the first reason-1 line (line 52):
    //        madv_loop-18419   [001] d.h1. 20013.935411: tlb_flush: pages:-1 reason:remote shootdown (1)
    let records = import("ftrace-6.18-trace.txt").records;
    let first_remote = records.iter().find_map(|r| match r {
        Record::Flush(f) if f.reason == 1 => Some(*f),
        _ => None,
    });
    assert_eq!(
        first_remote,
        Some(Flush { ts_ns: 20_013_935_411_000, cpu: 1, pid: 18419, reason: 1, pages: -1 })
    );
    // The tgid column: `madv_loop-18424   (  18423)`, `madv_loop-18425   (  18423)`; `<idle>-0
    // (-------)`. A thread first named by a sched_switch has no tgid until a context line gives it.
    let tgids = last_tgids(&import("ftrace-6.18-trace-tgid-noirq.txt").records);
    assert_eq!((tgids[&18424], tgids[&18425], tgids[&0]), (18423, 18423, -1));
}

/// The tgid each pid's last Task gave.
fn last_tgids(records: &[Record]) -> BTreeMap<i32, i32> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Task(t) => Some((t.pid, t.tgid)),
            _ => None,
        })
        .collect()
}

#[test]
fn real_ipi_sends() {
    // ftrace-6.18-trace.txt: `ipi_send_cpu: cpu=1 callsite=on_each_cpu_cond_mask+0x20/0x60
    // callback=generic_smp_call_function_single_interrupt+0x0/0x10` and `callback=0x0`.
    let imp = import("ftrace-6.18-trace.txt");
    let sends: Vec<&IpiSend> = imp
        .records
        .iter()
        .filter_map(|r| match r {
            Record::IpiSend(i) => Some(i),
            _ => None,
        })
        .collect();
    assert!(sends.iter().all(|s| s.targets.len() == 1 && s.targets[0] != s.cpu && s.callback == 0));
    let symbols: u64 = imp.importer.callback_symbols().values().sum();
    // grep -c 'callback=generic_smp_call_function_single_interrupt' ftrace-6.18-trace.txt
    assert_eq!(symbols, 7);
    let perf = import("perf-6.1-script-ipi.txt");
    assert_eq!(
        perf.importer.callback_symbols().get("generic_smp_call_function_single_interrupt+0x0"),
        Some(&17)
    );
}

#[test]
fn perf_ns_and_us_prints_of_one_recording_agree() {
    let us = import("perf-6.1-script.txt").records;
    let ns = import("perf-6.1-script-ns.txt").records;
    assert_eq!(us.len(), ns.len());
    let mut finer = 0;
    for (u, n) in us.iter().zip(&ns) {
        // perf prints µs by truncating the ns value.
        assert_eq!(u.ts_ns(), n.ts_ns() / 1000 * 1000, "{u:?} {n:?}");
        finer += usize::from(n.ts_ns() % 1000 != 0);
        let strip = |r: &Record| {
            let mut r = r.clone();
            match &mut r {
                Record::Flush(f) => f.ts_ns = 0,
                Record::Switch(s) => s.ts_ns = 0,
                Record::Task(t) => t.ts_ns = 0,
                _ => {}
            }
            r
        };
        assert_eq!(strip(u), strip(n));
    }
    assert!(finer > 0, "--ns printed no sub-µs digit");
}

#[test]
fn perf_pid_tid_gives_the_tgid() {
    // perf-6.1-script-pid-tid.txt: `madv_loop 18796/18798`, `18796/18799`; pid 0 is announced
    // once, from the first sched_switch (no tgid), and `swapper 0/0` later changes nothing.
    let tgids = last_tgids(&import("perf-6.1-script-pid-tid.txt").records);
    assert_eq!((tgids[&18798], tgids[&18799], tgids[&0]), (18796, 18796, -1));
    // Without pid/tid, perf's single number is the thread, and the tgid unknown.
    let plain = import("perf-6.1-script.txt");
    assert!(plain.records.iter().all(|r| !matches!(r, Record::Task(t) if t.tgid != -1)));
}

#[test]
fn perf_without_the_cpu_field() {
    let imp = import("perf-6.1-script-nocpu.txt");
    assert!(imp.records.iter().all(|r| !matches!(r, Record::Flush(f) if f.cpu != UNKNOWN_CPU)));
    assert!(imp.importer.cpus_seen().is_empty());
    // Line 1: `       madv_loop 18444 20016.988...: tlb:tlb_flush: ...` — read the first flush.
    let first = std::fs::read_to_string(fixture("perf-6.1-script-nocpu.txt")).unwrap();
    let first = first.lines().next().unwrap();
    let Some(Record::Flush(f)) = imp.records.iter().find(|r| matches!(r, Record::Flush(_))) else {
        panic!()
    };
    assert!(first.contains(&format!(" {} ", f.pid)), "{first} vs {f:?}");
}

fn task(ts_ns: u64, pid: i32, tgid: i32, comm: &str) -> Record {
    Record::Task(Task { ts_ns, pid, tgid, comm: comm.into() })
}

fn flush(ts_ns: u64, cpu: u32, pid: i32, reason: i32, pages: i64) -> Record {
    Record::Flush(Flush { ts_ns, cpu, pid, reason, pages })
}

#[test]
fn ftrace_edge_cases_record_by_record() {
    let imp = import("ftrace-edge-hand.txt");
    assert!(imp.errors.is_empty());
    const T: u64 = 100_000_000_000;
    let ipi = |ts: u64, targets: Vec<u32>, callback: u64| {
        Record::IpiSend(IpiSend { ts_ns: T + ts, cpu: 0, pid: 4100, targets, callback })
    };
    assert_eq!(
        imp.records,
        vec![
            task(T + 1000, 4100, 4100, "my prog-x-y"),
            flush(T + 1000, 0, 4100, 0, -1),
            task(T + 2500, 4101, 4100, "my prog-x-y"),
            flush(T + 2500, 1, 4101, 1, 262_144),
            task(T + 3000, 4102, -1, "<...>"),
            flush(T + 3000, 2, 4102, 5, 0),
            task(T + 4000, 4102, 4100, "<...>"),
            flush(T + 4000, 2, 4102, 5, 0),
            ipi(5000, vec![1, 2, 3], 0),
            ipi(6000, vec![1, 2, 3], 0xffff_ffff_8108_5a40),
            ipi(7000, vec![3], 0),
            task(T + 9000, 0, -1, "swapper/1"),
            Record::Switch(Switch {
                ts_ns: T + 9000,
                cpu: 1,
                prev_pid: 4101,
                prev_state: 0x100, // R+: preempted
                next_pid: 0
            }),
            task(T + 10_000, 4102, 4100, "worker"),
            Record::Switch(Switch {
                ts_ns: T + 10_000,
                cpu: 2,
                prev_pid: 0,
                prev_state: 0,
                next_pid: 4102
            }),
            flush(T + 11_000, 2, 4102, 0, -1),
            flush(T + 12_000, 1, 0, 0, 0),
            flush(T + 13_123, 2, 4102, 3, -1),
        ]
    );
    let i = &imp.importer;
    assert_eq!(
        i.lost_events(),
        vec![
            Loss { cpu: 2, events: 5, pages_with_unknown_loss: 0 },
            Loss { cpu: 3, events: 0, pages_with_unknown_loss: 1 }
        ]
    );
    assert_eq!(
        *i.skipped(),
        Skipped {
            blank: 0,
            comments: 12,
            lost_reports: 2,
            stack: 2,
            untagged: 0,
            other_events: [("sched_wakeup".to_string(), 1)].into()
        }
    );
    assert_eq!(i.cpus_seen(), vec![0, 1, 2]);
    assert_eq!(i.callback_symbols().keys().collect::<Vec<_>>(), vec!["flush_tlb_func+0x0/0x2e0"]);
    assert_eq!(i.ftrace_header().overwritten(), Some(5));
}

#[test]
fn perf_reason5_spellings_record_by_record() {
    let imp = import("perf-reason5-hand.txt");
    assert!(imp.errors.is_empty());
    const T: u64 = 7_001_000_000_000;
    assert_eq!(
        imp.records,
        vec![
            task(T + 1000, 4330, 4321, "Web Content"),
            flush(T + 1000, 1, 4330, 5, 0),
            flush(T + 2000, 1, 4330, 5, 0),
            task(T + 3000, 4399, 4399, ":4399"),
            flush(T + 3000, 0, 4399, 5, 0),
            flush(T + 4000, 1, 4330, 1, 1),
            task(T + 5000, 4321, 4321, "Web Content"),
            flush(T + 5000, 0, 4321, 3, 1),
            flush(T + 6000, 0, 4321, 4, 1),
            flush(T + 7000, 0, 4399, 4, -1),
            task(T + 8000, 4399, 4399, "dav1d-worker"),
            Record::Switch(Switch {
                ts_ns: T + 8000,
                cpu: 0,
                prev_pid: 4321,
                prev_state: 1,
                next_pid: 4399
            }),
            flush(T + 9000, 0, 4399, 0, -1),
        ]
    );
}

#[test]
fn old_kernel_states_and_comms() {
    let records = import("ftrace-4.9-hand.txt").records;
    let states: Vec<(i32, i64)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Switch(s) => Some((s.prev_pid, s.prev_state)),
            _ => None,
        })
        .collect();
    // S, D|K (killable: D), R+ (preempted: TASK_REPORT_MAX), x (TASK_DEAD, reported as X), D.
    assert_eq!(states, vec![(2301, 1), (61, 2), (2341, 0x100), (2340, 0x10), (2317, 2)]);
    let comms: Vec<(i32, String)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Task(t) => Some((t.pid, t.comm.clone())),
            _ => None,
        })
        .collect();
    assert!(comms.contains(&(2355, "kworker/u8:2-ev".into())));
    assert!(comms.contains(&(2340, "Web Content".into())));
    // `<...>-2317` until its sched_switch names it.
    assert_eq!(
        comms.iter().filter(|(p, _)| *p == 2317).map(|(_, c)| c.as_str()).collect::<Vec<_>>(),
        vec!["<...>", "gcc"]
    );
}

#[test]
fn errors_name_file_line_and_text_and_the_import_goes_on() {
    let imp = import("ftrace-errors-hand.txt");
    let got: Vec<(u64, Option<LineProblem>)> =
        imp.errors.iter().map(|e| (e.line(), e.problem().cloned())).collect();
    assert_eq!(
        got,
        vec![
            (3, Some(LineProblem::MissingField { event: "tlb_flush", field: "pages:" })),
            (4, Some(LineProblem::NotFormat(TextFormat::FtraceText))),
            (5, Some(LineProblem::UnknownReason("teleport".into()))),
            (6, Some(LineProblem::UnknownTaskState("Q".into()))),
            (7, Some(LineProblem::BadCpuList("ipi_send_cpumask"))),
        ]
    );
    let msg = imp.errors[0].to_string();
    assert!(msg.contains("ftrace-errors-hand.txt:3: tlb_flush without `pages:`"), "{msg}");
    assert!(
        msg.ends_with(
            "`            bash-1 [000] d..1. 1.000002: tlb_flush: reason:remote shootdown (1)`"
        ),
        "{msg}"
    );
    // The lines around the bad ones were imported; a refused line announces nobody.
    assert_eq!(
        imp.records,
        vec![
            task(1_000_001_000, 1, -1, "bash"),
            flush(1_000_001_000, 0, 1, 1, 1),
            flush(1_000_006_000, 0, 1, 3, 2)
        ]
    );
}

#[test]
fn a_line_past_the_cap_is_refused_and_the_next_one_read() {
    let mut text =
        format!("a-1 [000] 1.000001: tlb_flush: pages:1 reason:x ({})\n", "9".repeat(70_000));
    text.push_str("a-1 [000] 1.000002: tlb_flush: pages:1 reason:remote shootdown (1)\n");
    let out: Vec<_> = TextImporter::new(text.as_bytes(), "big.txt", None).collect();
    assert!(matches!(
        out[0],
        Err(ImportError::Line { line: 1, problem: LineProblem::TooLong(_), .. })
    ));
    assert_eq!(out[2].as_ref().unwrap(), &flush(1_000_002_000, 0, 1, 1, 1));
}

/// Names longer than a trace holds are cut to the limit (counted), on a character boundary;
/// a name at the limit is kept whole. What the importer yields, the file format writes.
#[test]
fn task_names_past_the_format_limit_are_cut_to_it() {
    let max = tlblab_flushtrace::MAX_COMM_BYTES;
    for (comm, kept, cut) in [
        ("a".repeat(max), "a".repeat(max), 0),
        ("a".repeat(max + 1), "a".repeat(max), 1),
        (format!("{}é", "a".repeat(max - 1)), "a".repeat(max - 1), 1),
    ] {
        let text = format!("{comm} 7 [000] 1.000001: tlb:tlb_flush: pages:1 reason:x (3)\n");
        let mut imp = TextImporter::new(text.as_bytes(), "long.txt", None);
        let out: Vec<Record> = imp.by_ref().collect::<Result<_, _>>().unwrap();
        assert_eq!(out[0], task(1_000_001_000, 7, -1, &kept));
        assert_eq!(imp.comms_cut(), cut);
    }
}

#[test]
fn a_timestamp_past_the_format_range_is_refused_with_its_line() {
    let text = "a-1 [000] 9223372036.854775807: tlb_flush: pages:1 reason:x (1)\n\
                a-1 [000] 9223372036.854775808: tlb_flush: pages:1 reason:x (1)\n";
    let out: Vec<_> = TextImporter::new(text.as_bytes(), "late.txt", None).collect();
    assert_eq!(out[1].as_ref().unwrap(), &flush(i64::MAX as u64, 0, 1, 1, 1));
    let e = out[2].as_ref().unwrap_err();
    assert!(matches!(
        e,
        ImportError::Line { line: 2, problem: LineProblem::TimestampTooLate(_), .. }
    ));
    assert!(e.to_string().contains("late.txt:2: timestamp 9223372036854775808 ns"), "{e}");
}

#[test]
fn odd_bytes_bom_crlf_and_function_tracer_lines() {
    // A byte-order mark, CRLF ends, a comm that is not UTF-8, a function-tracer line.
    let text = b"\xef\xbb\xbf# tracer: function\r\n  caf\xe9-5 [001] d..1. 2.000001: tlb_flush: pages:1 reason:remote shootdown (1)\r\n  caf\xe9-5 [001] ..... 2.000002: do_madvise <-__x64_sys_madvise\r\n";
    let mut imp = TextImporter::new(&text[..], "odd.txt", None);
    let records: Vec<Record> = imp.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(
        records,
        vec![task(2_000_001_000, 5, -1, "caf\u{fffd}"), flush(2_000_001_000, 1, 5, 1, 1)]
    );
    assert_eq!(imp.reason_names()[&1], "remote shootdown");
    assert_eq!((imp.skipped().comments, imp.skipped().untagged), (1, 1));
    assert_eq!(imp.ftrace_header().tracer.as_deref(), Some("function"));
}

#[test]
fn read_errors_end_the_import() {
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    let mut imp = TextImporter::new(BufReader::new(Failing), "x.txt", None);
    let e = imp.next().unwrap().unwrap_err();
    assert_eq!(e.to_string(), "import: x.txt:1: reading failed");
    assert_eq!(std::error::Error::source(&e).unwrap().to_string(), "disk on fire");
    assert!(imp.next().is_none());
}

#[test]
fn fill_trailer_adds_labels_cpus_and_losses() {
    let imp = import("ftrace-6.18-trace_pipe.txt");
    let mut trailer = Trailer {
        reason_names: [(3, "kept".to_string())].into(),
        cpus_seen: vec![5],
        ..Trailer::default()
    };
    imp.importer.fill_trailer(&mut trailer);
    assert_eq!(trailer.reason_names[&3], "kept");
    assert_eq!(trailer.reason_names[&5], "remote wrong CPU");
    assert_eq!(trailer.cpus_seen, vec![0, 1, 5]);
    assert_eq!(trailer.lost_events(), 3470 + 1880);
}

/// A comm as the kernel allows: 1..=15 bytes, any but NUL and newline (here printable ASCII,
/// with spaces, dashes, colons, brackets).
fn comm() -> impl Strategy<Value = String> {
    "[ -~]{1,15}".prop_filter("no edge whitespace", |c| c.trim() == c)
}

/// Runs `f` on a thread of its own; fails if it panics or takes longer than `bound`.
fn within<T: Send + 'static>(
    bound: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    tlblab_types::bounded::within(bound, f).unwrap_or_else(|e| panic!("{e}"))
}

/// The first lines of a real capture of each format, to mutate.
fn capture_heads() -> Vec<Vec<u8>> {
    ["ftrace-6.18-trace.txt", "perf-6.1-script-ipi.txt", "ftrace-edge-hand.txt"]
        .iter()
        .map(|name| {
            let text = std::fs::read(fixture(name)).unwrap();
            let end = text
                .iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .nth(40)
                .map_or(text.len(), |(i, _)| i + 1);
            text[..end].to_vec()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Captures with bytes flipped, inserted (control bytes, digits that make huge
    /// timestamps and counts) or deleted import line by line or fail with the line, and every
    /// record they yield is one a trace file can hold; each case within 2 s.
    #[test]
    fn mutated_captures_import_cleanly_and_quickly(
        which in 0..3usize,
        edits in proptest::collection::vec((any::<usize>(), prop_oneof![any::<u8>(), Just(b'9'), Just(0x1b)], 0..3u8), 1..8),
    ) {
        let mut bytes = capture_heads().swap_remove(which);
        for (at, byte, op) in edits {
            let at = at % (bytes.len() + 1);
            match op {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ if at < bytes.len() => { bytes.remove(at); }
                _ => {}
            }
        }
        let written = within(std::time::Duration::from_secs(2), move || {
            let mut out = tlblab_flushtrace::TraceWriter::new(Vec::new(), std::path::Path::new("m"), &tlblab_flushtrace::Header::new(tlblab_flushtrace::Origin::FtraceText)).unwrap();
            for r in TextImporter::new(&bytes[..], "fuzz", None) {
                match r {
                    Ok(record) => out.write(&record).map_err(|e| e.to_string())?,
                    Err(e) => assert!(e.line() >= 1 && !e.to_string().contains('\x1b'), "{e}"),
                }
            }
            Ok::<_, String>(())
        });
        prop_assert!(written.is_ok(), "the importer yielded a record the format refuses: {:?}", written);
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        for format in [None, Some(FtraceText), Some(PerfScript)] {
            let mut imp = TextImporter::new(&data[..], "fuzz", format);
            let mut n = 0u64;
            for r in imp.by_ref() {
                if let Err(e) = r {
                    prop_assert!(e.line() >= 1);
                }
                n += 1;
                prop_assert!(n < 10_000);
            }
        }
    }

    #[test]
    fn arbitrary_lines_from_line_fragments_never_panic(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("tlb_flush: ".to_string()), Just("tlb:tlb_flush: ".to_string()), Just("pages:".to_string()),
                Just("reason:".to_string()), Just(" (".to_string()), Just(")".to_string()), Just("[001] ".to_string()),
                Just("-12 ".to_string()), Just("(-------) ".to_string()), Just("1.5: ".to_string()), Just(": ".to_string()),
                Just("sched_switch: prev_comm=".to_string()), Just(" prev_pid=".to_string()), Just(" ==> ".to_string()),
                Just("next_comm=".to_string()), Just(" next_pid=".to_string()), Just("prev_state=".to_string()),
                Just("ipi_send_cpumask: cpumask=".to_string()), Just("ipi_send_cpu: cpu=".to_string()), Just("callback=".to_string()),
                Just("CPU:1 [LOST ".to_string()), Just("EVENTS]".to_string()), Just("\n".to_string()), Just("#".to_string()),
                "[0-9a-fx,|+.-]{0,12}", "[ -~]{0,8}",
            ],
            0..40,
        )
    ) {
        let text = parts.concat();
        for r in TextImporter::new(text.as_bytes(), "fuzz", None) {
            let _ = r;
        }
    }

    #[test]
    fn generated_ftrace_lines_decode_exactly(
        comm in comm(), pid in 1i32..4_194_304, tgid in proptest::option::of(1i32..4_194_304),
        cpu in 0u32..1000, flags in prop_oneof![Just(None), Just(Some("d.h.")), Just(Some("dNh1."))],
        secs in 0u64..10_000_000, frac in 0u64..1_000_000_000, ns in any::<bool>(),
        reason in -3i32..10, pages in any::<i64>(),
    ) {
        let frac_text = if ns { format!("{frac:09}") } else { format!("{:06}", frac / 1000) };
        let ts_ns = secs * 1_000_000_000 + if ns { frac } else { frac / 1000 * 1000 };
        let tgid_col = match tgid { Some(t) => format!("({t:7}) "), None => String::new() };
        let flags = flags.map(|f| format!("{f} ")).unwrap_or_default();
        let line = format!("{comm:>16}-{pid:<7} {tgid_col}[{cpu:03}] {flags}{secs:5}.{frac_text}: tlb_flush: pages:{pages} reason:some label ({reason})\n");
        let out: Vec<Record> = TextImporter::new(line.as_bytes(), "gen", None).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(out, vec![
            Record::Task(Task { ts_ns, pid, tgid: tgid.unwrap_or(-1), comm: comm.clone() }),
            Record::Flush(Flush { ts_ns, cpu, pid, reason, pages }),
        ]);
    }

    #[test]
    fn generated_perf_lines_decode_exactly(
        comm in comm(), tid in 1i32..4_194_304, pid in proptest::option::of(1i32..4_194_304),
        cpu in proptest::option::of(0u32..1000), secs in 0u64..10_000_000, frac in 0u64..1_000_000_000,
        prev_state in prop_oneof![Just(("R+", 0x100i64)), Just(("S", 1)), Just(("I", 0x80)), Just(("D", 2))],
        next in 0i32..100,
    ) {
        let ids = match pid { Some(p) => format!("{p:7}/{tid:<7}"), None => format!("{tid:7}") };
        let cpu_col = cpu.map(|c| format!("[{c:03}] ")).unwrap_or_default();
        let ts_ns = secs * 1_000_000_000 + frac;
        let line = format!(
            "{comm:>16} {ids} {cpu_col}{secs:5}.{frac:09}: sched:sched_switch: prev_comm={comm} prev_pid={tid} prev_prio=120 prev_state={} ==> next_comm=next {next} next_pid={next} next_prio=120\n",
            prev_state.0
        );
        let out: Vec<Record> = TextImporter::new(line.as_bytes(), "gen", None).collect::<Result<_, _>>().unwrap();
        let tasks: Vec<Record> = out.iter().filter(|r| matches!(r, Record::Task(_))).cloned().collect();
        prop_assert_eq!(tasks.first(), Some(&Record::Task(Task { ts_ns, pid: tid, tgid: -1, comm: comm.clone() })));
        prop_assert_eq!(out.last(), Some(&Record::Switch(Switch {
            ts_ns, cpu: cpu.unwrap_or(UNKNOWN_CPU), prev_pid: tid, prev_state: prev_state.1, next_pid: next,
        })));
    }
}
