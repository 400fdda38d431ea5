//! Decoder tests on pages captured on this project's machine (kernel 6.18, 2 vCPUs) by
//! `examples/capture_fixtures.rs`, checked against the kernel's own text rendering of the
//! same buffer (`trace.txt`, read before the pages were consumed) and its `stats` counters.

mod support;

use std::collections::BTreeMap;
use std::io::Cursor;

use support::*;
use tlblab_tracefs::format::parse_event_format;
use tlblab_tracefs::{CpuStream, PageLayout, Reader, TlbFlushDecoder};

#[test]
fn formats_and_header_page_of_6_18() {
    let dir = fixture_dir("6.18-madvise");
    let (layout, schema) = load(&dir);
    assert_eq!(layout, PageLayout::X86_64);
    let tlb = schema.format(188).unwrap();
    assert_eq!(tlb.name, "tlb_flush");
    let reason = tlb.field("reason").unwrap();
    let pages = tlb.field("pages").unwrap();
    assert_eq!(
        (reason.offset, reason.size, reason.signed, reason.type_name.as_str()),
        (8, 4, true, "int")
    );
    assert_eq!(
        (pages.offset, pages.size, pages.signed, pages.type_name.as_str()),
        (16, 8, false, "unsigned long")
    );
    let names: Vec<(i32, String)> =
        TlbFlushDecoder::new(tlb).unwrap().reason_names().clone().into_iter().collect();
    let expected = [
        "flush on task switch",
        "remote shootdown",
        "local shootdown",
        "local MM shootdown",
        "remote IPI send",
        "remote wrong CPU",
    ];
    assert_eq!(
        names,
        expected.iter().enumerate().map(|(i, s)| (i as i32, s.to_string())).collect::<Vec<_>>()
    );
    let sw = schema.format_named("sched_switch").unwrap();
    let comm = sw.field("prev_comm").unwrap();
    assert_eq!((comm.type_name.as_str(), comm.offset, comm.size), ("char[16]", 8, 16));
    assert_eq!(sw.field("next_pid").unwrap().offset, 56);
}

/// Decodes a fixture and compares every tlb_flush and sched_switch with the text trace.
fn check_against_text(name: &str) -> BTreeMap<(u32, i32), u64> {
    let dir = fixture_dir(name);
    let (layout, schema) = load(&dir);
    let tlb = TlbFlushDecoder::new(schema.format_named("tlb_flush").unwrap()).unwrap();
    let sw = schema.format_named("sched_switch").unwrap().clone();
    let mut decoded = Vec::new();
    for cpu in [0, 1] {
        let (events, _) = decode_file(&dir, cpu, &layout, &schema);
        for e in &events {
            let ev = e.raw();
            let fields = if let Some(f) = tlb.decode(&ev).unwrap() {
                ("tlb_flush", vec![f.pages, i64::from(f.reason)])
            } else {
                assert_eq!(e.event_id, sw.id);
                let pid = |n: &str| sw.field(n).unwrap().read_i64(&e.payload).unwrap();
                ("sched_switch", vec![pid("prev_pid"), pid("next_pid")])
            };
            decoded.push((ns2usecs(e.ts_ns), e.cpu, e.pid, fields.0.to_string(), fields.1));
        }
    }
    let mut text: Vec<_> = parse_text_trace(&read(&dir, "trace.txt"))
        .into_iter()
        .map(|l| {
            let values = match l.event.as_str() {
                "tlb_flush" => vec![text_field(&l.fields, "pages:"), text_reason(&l.fields)],
                _ => vec![text_field(&l.fields, "prev_pid="), text_field(&l.fields, "next_pid=")],
            };
            (l.ts_us, l.cpu, l.pid, l.event, values)
        })
        .collect();
    decoded.sort();
    text.sort();
    assert!(!text.is_empty());
    assert_eq!(decoded.len(), text.len(), "{name}: event counts");
    assert_eq!(decoded, text, "{name}: every event, timestamp (µs), CPU, pid and field");

    let mut by_cpu_reason = BTreeMap::new();
    for (_, cpu, _, event, values) in &text {
        if event == "tlb_flush" {
            *by_cpu_reason.entry((*cpu, values[1] as i32)).or_insert(0) += 1;
        }
    }
    by_cpu_reason
}

#[test]
fn madvise_pages_match_the_text_trace() {
    let counts = check_against_text("6.18-madvise");
    // capture.txt: 100 madvise calls on CPU 0 while a sibling thread spun on CPU 1. Each one
    // flushes locally (3) and sends to CPU 1 (4); CPU 1 received all of them (1) here.
    assert_eq!(counts.get(&(0, 3)), Some(&100));
    assert_eq!(counts.get(&(0, 4)), Some(&100));
    assert_eq!(counts.get(&(1, 1)), Some(&100));
    let dir = fixture_dir("6.18-madvise");
    let (layout, schema) = load(&dir);
    for cpu in [0, 1] {
        let (_, loss) = decode_file(&dir, cpu, &layout, &schema);
        assert!(!loss.any(), "no loss in this capture: {loss:?}");
        assert!(read(&dir, &format!("cpu{cpu}.stats")).contains("\noverrun: 0\n"));
    }
}

#[test]
fn overrun_pages_report_exactly_the_kernels_overrun_count() {
    // 3000 madvise calls into an 8 KiB-per-CPU buffer: most events were overwritten.
    check_against_text("6.18-overrun");
    let dir = fixture_dir("6.18-overrun");
    let (layout, schema) = load(&dir);
    for cpu in [0, 1] {
        let (_, loss) = decode_file(&dir, cpu, &layout, &schema);
        let stats = read(&dir, &format!("cpu{cpu}.stats"));
        let overrun = text_field(&stats, "\noverrun: ") as u64;
        assert!(overrun > 0);
        assert_eq!(loss.missed_events, overrun, "CPU {cpu}: stored missed count = stats overrun");
        assert_eq!(loss.pages_with_unknown_loss, 0);
    }
}

#[test]
fn merged_stream_is_time_ordered_and_complete() {
    let dir = fixture_dir("6.18-overrun");
    let (layout, schema) = load(&dir);
    let per_cpu: Vec<_> = [0, 1].map(|c| decode_file(&dir, c, &layout, &schema).0).into();
    let streams = [0, 1]
        .map(|cpu| {
            let path = dir.join(format!("cpu{cpu}.raw"));
            CpuStream { cpu, stream: Box::new(Cursor::new(std::fs::read(&path).unwrap())), path }
        })
        .into();
    let mut reader = Reader::from_streams(layout, schema, streams, false);
    let mut merged = Vec::new();
    reader.read_merged(&mut |e| merged.push(Owned::from(e))).unwrap();
    reader.finish_merged(&mut |e| merged.push(Owned::from(e))).unwrap();
    assert!(merged.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns), "time order");
    assert_eq!(merged.len(), per_cpu[0].len() + per_cpu[1].len());
    for cpu in [0, 1] {
        let mine: Vec<_> = merged.iter().filter(|e| e.cpu == cpu).cloned().collect();
        assert_eq!(mine, per_cpu[cpu as usize], "CPU {cpu}'s events in their own order");
    }
    let losses = reader.losses();
    assert!(losses.iter().all(|l| l.missed_events > 0 && l.pages == 3));
}

#[test]
fn old_kernel_tlb_flush_format() {
    // tlb_flush as 4.x–6.13 kernels print it (written by hand from include/trace/events/tlb.h
    // of that era): five reasons, lower-case "mm" and "ipi", no "remote wrong CPU".
    let text = "name: tlb_flush\nID: 97\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
        \tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:int reason;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:unsigned long pages;\toffset:16;\tsize:8;\tsigned:0;\n\n\
        print fmt: \"pages:%ld reason:%s (%d)\", REC->pages, __print_symbolic(REC->reason, \
        { 0, \"flush on task switch\" }, { 1, \"remote shootdown\" }, { 2, \"local shootdown\" }, \
        { 3, \"local mm shootdown\" }, { 4, \"remote ipi send\" }), REC->reason\n";
    let f = parse_event_format(text, std::path::Path::new("old/tlb_flush/format")).unwrap();
    let d = TlbFlushDecoder::new(&f).unwrap();
    assert_eq!(d.id(), 97);
    assert_eq!(d.reason_name(3), Some("local mm shootdown"));
    assert_eq!(d.reason_name(4), Some("remote ipi send"));
    assert_eq!(d.reason_name(5), None);
    let mut rec = tlb_flush_record(42, 4, -1);
    rec[0..2].copy_from_slice(&97u16.to_le_bytes());
    let ev = tlblab_tracefs::RawEvent { cpu: 1, ts_ns: 5, event_id: 97, pid: 42, payload: &rec };
    let flush = d.decode(&ev).unwrap().unwrap();
    assert_eq!((flush.reason, flush.pages, flush.pid), (4, tlblab_tracefs::TLB_FLUSH_ALL, 42));

    // An enum that the kernel did not export shows up by name; its value stays unknown.
    let unresolved =
        text.replace("{ 4, \"remote ipi send\" }", "{ TLB_REMOTE_SEND_IPI, \"remote ipi send\" }");
    let f = parse_event_format(&unresolved, std::path::Path::new("x")).unwrap();
    let symbols = f.symbols("reason").unwrap();
    assert_eq!((symbols[4].value, symbols[4].expr.as_str()), (None, "TLB_REMOTE_SEND_IPI"));
    assert_eq!(TlbFlushDecoder::new(&f).unwrap().reason_name(4), None);
}

#[test]
fn format_errors_name_file_and_line() {
    let bad = "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:zz;\tsize:4;\tsigned:1;\nprint fmt: \"\"\n";
    let e = parse_event_format(bad, std::path::Path::new("events/a/x/format")).unwrap_err();
    assert_eq!(e.to_string(), "tracefs: events/a/x/format:4: bad offset \"zz\"");
    let e = parse_event_format("name: x\nformat:\n", std::path::Path::new("f")).unwrap_err();
    assert_eq!(e.to_string(), "tracefs: f:0: no `ID:` line");
}
