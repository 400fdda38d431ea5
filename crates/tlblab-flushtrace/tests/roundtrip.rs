//! `tlblab trace dump` text read back by the importer gives the same events: the dump writes
//! the kernel's own line layout, and the importer reads the kernel's layout.

use std::io::Cursor;

use tlblab_flushtrace::{
    CallFunction, Flush, FtraceText, Header, IpiSend, Origin, Record, Switch, Task, TextImporter,
};

fn events() -> Vec<Record> {
    let flush =
        |ts_ns, cpu, pid, reason, pages| Record::Flush(Flush { ts_ns, cpu, pid, reason, pages });
    let task =
        |ts_ns, pid, tgid, comm: &str| Record::Task(Task { ts_ns, pid, tgid, comm: comm.into() });
    vec![
        task(1_000, 4100, 4100, "mt madv-x"),
        flush(1_000, 0, 4100, 3, 1),
        flush(1_500, 0, 4100, 4, 1),
        Record::IpiSend(IpiSend {
            ts_ns: 1_600,
            cpu: 0,
            pid: 4100,
            targets: vec![1],
            callback: 0xffff_ffff_8144_1290,
        }),
        Record::IpiSend(IpiSend {
            ts_ns: 1_650,
            cpu: 0,
            pid: 4100,
            targets: vec![1, 2, 5],
            callback: 0,
        }),
        task(2_000, 0, 0, "<idle>"),
        Record::CallFunction(CallFunction {
            ts_ns: 2_000,
            cpu: 1,
            pid: 0,
            vector: 251,
            entry: true,
            single: true,
        }),
        flush(2_100, 1, 0, 1, -1),
        Record::CallFunction(CallFunction {
            ts_ns: 2_200,
            cpu: 1,
            pid: 0,
            vector: 251,
            entry: false,
            single: true,
        }),
        flush(3_000, 1, 0, 5, 0),
        Record::Switch(Switch { ts_ns: 4_000, cpu: 1, prev_pid: 0, prev_state: 0, next_pid: 4100 }),
        flush(4_001, 1, 4100, 0, -1),
        Record::Switch(Switch {
            ts_ns: 5_000,
            cpu: 1,
            prev_pid: 4100,
            prev_state: 0x100,
            next_pid: 0,
        }),
        Record::Switch(Switch { ts_ns: 5_500, cpu: 0, prev_pid: 4100, prev_state: 1, next_pid: 0 }),
        flush(6_000_000_123, 0, 4100, 2, 33),
    ]
}

#[test]
fn dumped_text_imports_to_the_same_events() {
    let mut header = Header::new(Origin::Recorded);
    header.reason_names.insert(3, "local MM shootdown".into());
    let mut text = FtraceText::preamble(&header);
    let mut fmt = FtraceText::new(&header);
    for r in events() {
        text.push_str(&fmt.line(&r));
        text.push('\n');
    }
    let imported: Vec<Record> = TextImporter::new(Cursor::new(text.clone()), "dump.txt", None)
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let without_tasks = |v: &[Record]| -> Vec<Record> {
        v.iter().filter(|r| !matches!(r, Record::Task(_))).cloned().collect()
    };
    assert_eq!(without_tasks(&imported), without_tasks(&events()), "{text}");
    // The thread's name survives through the comm-pid column.
    assert!(imported
        .iter()
        .any(|r| matches!(r, Record::Task(t) if t.pid == 4100 && t.comm == "mt madv-x")));
}
