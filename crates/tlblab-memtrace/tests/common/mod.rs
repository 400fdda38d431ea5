//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io::Write;
use tlblab_memtrace::{from_reader, CompactWriter, EventSource, Format, ReadOptions, TraceError};
use tlblab_types::TraceEvent;

/// Reads every event of an in-memory trace through `from_reader`.
pub fn read_all(
    bytes: &[u8],
    format: Option<Format>,
    options: &ReadOptions,
) -> Result<(Format, Vec<TraceEvent>), TraceError> {
    let trace = from_reader("mem", std::io::Cursor::new(bytes.to_vec()), format, options)?;
    let format = trace.format();
    Ok((format, trace.events().collect::<Result<_, _>>()?))
}

/// A compact trace of `events`.
pub fn compact(events: &[TraceEvent]) -> Vec<u8> {
    let mut writer = CompactWriter::new(Vec::new()).expect("in-memory writer");
    for event in events {
        writer.write(event).expect("valid event");
    }
    writer.finish().expect("in-memory writer")
}

/// `bytes` gzip-compressed.
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("in-memory");
    encoder.finish().expect("in-memory")
}

/// `bytes` xz-compressed.
pub fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = liblzma::write::XzEncoder::new(Vec::new(), 6);
    encoder.write_all(bytes).expect("in-memory");
    encoder.finish().expect("in-memory")
}

/// Every access expanded into `repeat` single accesses; operations kept.
pub fn expand(events: &[TraceEvent]) -> Vec<TraceEvent> {
    let mut out = Vec::new();
    for event in events {
        match *event {
            TraceEvent::Access { access, repeat } => {
                out.extend((0..repeat).map(|_| TraceEvent::Access { access, repeat: 1 }))
            }
            TraceEvent::Op { .. } => out.push(*event),
        }
    }
    out
}

/// A lackey trace touching `n` addresses with repeats and page crossings.
pub fn lackey_text(n: usize) -> String {
    let mut text = String::from("==42== Lackey, an example Valgrind tool\n==42== \n");
    for i in 0..n {
        let addr = 0x7_ff00_0000_u64 + (i as u64 / 3) * 0x7f8;
        let line = match i % 4 {
            0 => format!("I  {:08x},{}\n", 0x0401_0000 + i * 3, 3 + i % 5),
            1 => format!(" L {addr:08x},8\n"),
            2 => format!(" S {addr:08x},16\n"),
            _ => format!(" M {addr:08x},4\n"),
        };
        text.push_str(&line);
    }
    text.push_str("==42== \n==42== Exit code: 0\n");
    text
}

/// Runs `f` on a thread of its own and returns what it returns; panics if `f` panics or takes
/// longer than `bound`, so that an input that makes a reader loop fails its case instead of
/// stalling the suite.
pub fn within<T: Send + 'static>(
    bound: std::time::Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    tlblab_types::bounded::within(bound, f).unwrap_or_else(|e| panic!("{e}"))
}
