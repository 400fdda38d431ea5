//! A real lackey trace (the start of `valgrind --tool=lackey --trace-mem=yes /bin/true`).

mod common;

use common::expand;
use std::path::Path;
use tlblab_memtrace::{open, EventSource, Format, ReadOptions};
use tlblab_types::{AccessKind, TraceEvent};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/true.lackey");

/// Counts (fetches, loads, stores) straight from the text: one per line per page touched, two
/// kinds for `M`.
fn count_by_prefix(text: &str) -> [u64; 3] {
    let mut counts = [0; 3];
    for line in text.lines() {
        if line.starts_with("==") {
            continue;
        }
        let Some((kind, rest)) = line.trim_start().split_once(' ') else { continue };
        let Some((addr, size)) = rest.trim().split_once(',') else { continue };
        let addr = u64::from_str_radix(addr, 16).expect("hex address");
        let size: u64 = size.parse().expect("decimal size");
        let pages = if addr >> 12 == (addr + size.max(1) - 1) >> 12 { 1 } else { 2 };
        match kind {
            "I" => counts[2] += pages,
            "L" => counts[0] += pages,
            "S" => counts[1] += pages,
            "M" => {
                counts[0] += pages;
                counts[1] += pages;
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    counts
}

fn counts(events: &[TraceEvent]) -> [u64; 3] {
    let mut counts = [0; 3];
    for event in events {
        if let TraceEvent::Access { access, repeat } = event {
            let index = match access.kind {
                AccessKind::Fetch => 2,
                AccessKind::Load => 0,
                AccessKind::Store => 1,
            };
            counts[index] += u64::from(*repeat);
        }
    }
    counts
}

#[test]
fn real_lackey_trace_parses_with_the_right_counts() {
    let text = std::fs::read_to_string(FIXTURE).expect("fixture");
    assert!(text.lines().filter(|line| line.starts_with("==")).count() >= 6);
    assert!(text.lines().any(|line| line.starts_with(" M ")));
    let expected = count_by_prefix(&text);
    assert!(expected.iter().all(|&count| count > 0), "{expected:?}");

    let options = ReadOptions { coalesce: false, ..ReadOptions::default() };
    let trace = open(Path::new(FIXTURE), None, &options).expect("open");
    assert_eq!(trace.format(), Format::Lackey);
    let plain: Vec<TraceEvent> = trace.events().collect::<Result<_, _>>().expect("valid");
    assert_eq!(counts(&plain), expected);
    assert_eq!(plain.len() as u64, expected.iter().sum::<u64>());

    let trace = open(Path::new(FIXTURE), None, &ReadOptions::default()).expect("open");
    let coalesced: Vec<TraceEvent> = trace.events().collect::<Result<_, _>>().expect("valid");
    assert!(coalesced.len() < plain.len());
    assert_eq!(expand(&coalesced), plain);
}
