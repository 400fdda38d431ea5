//! The recorder's decoding against the kernel's own text: ring-buffer pages captured on this
//! project's machine (kernel 6.18; tlblab-tracefs's fixtures), decoded by `Decoders` from the
//! captured format files and merged by time, give the same `tlb_flush` and `sched_switch`
//! records as the kernel's `trace` text of the same buffer read by the text importer.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use tlblab_flushtrace::{Record, TextImporter};
use tlblab_tracefs::format::{parse_event_format, parse_header_page};
use tlblab_tracefs::{CpuStream, PageLayout, Reader, Schema};
use tlblab_tracer::{Decoded, Decoders};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tlblab-tracefs/tests/fixtures").join(name)
}

/// Flush and switch records of the captured pages, timestamps cut to µs as the text prints
/// them, in time order.
fn from_pages(dir: &Path) -> Vec<Record> {
    let text = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let layout = PageLayout::from_header(&parse_header_page(&text("header_page"), dir).unwrap());
    let formats = ["tlb_flush.format", "sched_switch.format"]
        .map(|f| parse_event_format(&text(f), &dir.join(f)).unwrap());
    let schema = Schema::new(formats).unwrap();
    let decoders = Decoders::new(&schema).unwrap();
    let streams = (0..2)
        .map(|cpu| {
            let path = dir.join(format!("cpu{cpu}.raw"));
            let bytes = std::fs::read(&path).unwrap();
            CpuStream { cpu, path, stream: Box::new(Cursor::new(bytes)) }
        })
        .collect();
    let mut reader = Reader::from_streams(layout, schema, streams, false);
    let mut out = Vec::new();
    reader
        .finish_merged(&mut |ev| match decoders.decode(ev).unwrap() {
            Decoded::Record(r) => out.push(r),
            other => panic!("unexpected {other:?}"),
        })
        .unwrap();
    out.into_iter().map(to_micros).collect()
}

fn from_text(dir: &Path) -> Vec<Record> {
    let text = std::fs::read(dir.join("trace.txt")).unwrap();
    TextImporter::new(Cursor::new(text), dir.join("trace.txt"), None)
        .map(Result::unwrap)
        .filter(|r| !matches!(r, Record::Task(_)))
        .collect()
}

/// The text's µs, rounded to nearest as the kernel's `ns2usecs()` does.
fn to_micros(r: Record) -> Record {
    let us = |ns: u64| (ns + 500) / 1000 * 1000;
    match r {
        Record::Flush(mut f) => {
            f.ts_ns = us(f.ts_ns);
            Record::Flush(f)
        }
        Record::Switch(mut s) => {
            s.ts_ns = us(s.ts_ns);
            Record::Switch(s)
        }
        other => other,
    }
}

/// Records in a canonical order (the text is merged by the kernel, the pages by the reader;
/// equal timestamps on two CPUs may come in either order).
fn canonical(mut v: Vec<Record>) -> Vec<String> {
    v.sort_by_key(|r| (r.ts_ns(), format!("{r:?}")));
    v.iter().map(|r| format!("{r:?}")).collect()
}

#[test]
fn decoded_pages_match_the_kernels_text() {
    for name in ["6.18-madvise", "6.18-overrun"] {
        let dir = fixture(name);
        let pages = from_pages(&dir);
        let text = from_text(&dir);
        assert!(pages.iter().filter(|r| matches!(r, Record::Flush(_))).count() > 100, "{name}");
        let (pages, text) = (canonical(pages), canonical(text));
        assert_eq!(pages.len(), text.len(), "{name}");
        for (p, t) in pages.iter().zip(&text) {
            assert_eq!(p, t, "{name}");
        }
    }
}
