//! Hand-made pages for the event types the captures do not contain (time extend, absolute
//! time stamp, padding, long events, lost-event flags), corrupt pages, and random input.

mod support;

use proptest::prelude::*;
use support::*;
use tlblab_tracefs::ringbuf::Missed;
use tlblab_tracefs::{
    decode_page, CpuLoss, CpuStream, Error, PageLayout, Reader, Schema, TlbFlushDecoder,
    MAX_PAGES_PER_ROUND,
};

fn schema() -> Schema {
    load(&fixture_dir("6.18-madvise")).1
}

fn decode(page: &[u8]) -> (Result<u64, Error>, Vec<Owned>, CpuLoss) {
    let mut out = Vec::new();
    let mut loss = CpuLoss::default();
    let r = decode_page(page, &PageLayout::X86_64, &schema(), 3, 8192, &mut loss, &mut |e| {
        out.push(Owned::from(e))
    });
    (r, out, loss)
}

fn flushes(events: &[Owned]) -> Vec<(u64, i32, i64)> {
    let s = schema();
    let d = TlbFlushDecoder::new(s.format_named("tlb_flush").unwrap()).unwrap();
    events
        .iter()
        .map(|e| {
            let ev = e.raw();
            let f = d.decode(&ev).unwrap().unwrap();
            (f.ts_ns, f.reason, f.pages)
        })
        .collect()
}

#[test]
fn deltas_time_extend_and_absolute_stamp() {
    let big = 5_000_000_000u64; // 5 s: needs a time extend (deltas hold 27 bits ≈ 134 ms)
    let abs = (3u64 << 56) | 123_456_789; // top bits below the 5 the event cannot hold
    let page = PageBuilder::new(1_000)
        .event(10, &tlb_flush_record(7, 3, 1))
        .extend(big)
        .event(20, &tlb_flush_record(7, 4, 2))
        .absolute(abs)
        .event(0, &tlb_flush_record(7, 1, -1))
        .page(None);
    let (r, events, loss) = decode(&page);
    assert_eq!(r.unwrap(), 3);
    assert_eq!(flushes(&events), vec![(1_010, 3, 1), (1_010 + big + 20, 4, 2), (abs, 1, -1)]);
    assert!(events.iter().all(|e| e.cpu == 3 && e.pid == 7));
    assert_eq!((loss.pages, loss.any()), (1, false));
}

#[test]
fn padding_is_skipped_and_does_not_move_the_clock() {
    let page = PageBuilder::new(100)
        .event(1, &tlb_flush_record(1, 0, 0))
        .discarded(28)
        .event(2, &tlb_flush_record(1, 2, 5))
        .null_padding()
        .event(3, &tlb_flush_record(1, 3, 9)) // after null padding: never read
        .page(None);
    let (r, events, _) = decode(&page);
    assert_eq!(r.unwrap(), 2);
    assert_eq!(flushes(&events), vec![(101, 0, 0), (103, 2, 5)]);
}

#[test]
fn long_event_with_length_word() {
    // 120 bytes do not fit type_len (max 28 words = 112 bytes): the length is in array[0].
    let mut rec = tlb_flush_record(9, 4, 33);
    rec.resize(120, 0xab);
    let page =
        PageBuilder::new(0).long_event(7, &rec).event(1, &tlb_flush_record(9, 1, 1)).page(None);
    let (r, events, _) = decode(&page);
    assert_eq!(r.unwrap(), 2);
    assert_eq!(events[0].payload, rec);
    assert_eq!(flushes(&events), vec![(7, 4, 33), (8, 1, 1)]);
}

#[test]
fn lost_event_flags() {
    let b = PageBuilder::new(0).event(1, &tlb_flush_record(1, 1, 1));
    let (_, _, loss) = decode(&b.page(Some(Some(1234))));
    assert_eq!((loss.missed_events, loss.pages_with_unknown_loss), (1234, 0));
    let (_, events, loss) = decode(&b.page(Some(None)));
    assert_eq!((loss.missed_events, loss.pages_with_unknown_loss, events.len()), (0, 1, 1));
    let header =
        tlblab_tracefs::ringbuf::parse_page_header(&b.page(Some(Some(5))), &PageLayout::X86_64)
            .unwrap();
    assert_eq!(header.missed, Missed::Count(5));
}

#[test]
fn corrupt_pages_name_cpu_and_byte_offset() {
    // An event whose type_len claims more bytes than the commit covers.
    let mut b = PageBuilder::new(0).event(1, &tlb_flush_record(1, 1, 1));
    b.data.truncate(20);
    let (r, ..) = decode(&b.page(None));
    let msg = r.unwrap_err().to_string();
    assert!(msg.starts_with("tracefs: CPU 3: byte 8208: event of 28 bytes runs past"), "{msg}");
    // A page shorter than its header.
    let (r, ..) = decode(&[0u8; 12]);
    assert!(r.unwrap_err().to_string().starts_with("tracefs: CPU 3: byte 8192: truncated page"));
    // A record shorter than the common fields (type_len 1: 4 bytes).
    let b = PageBuilder::new(0).event(1, &[188, 0, 0, 0]);
    let (r, ..) = decode(&b.page(None));
    assert_eq!(
        r.unwrap_err().to_string(),
        "tracefs: CPU 3: byte 8212: record shorter than the common fields"
    );
}

#[test]
fn merge_holds_back_other_cpus_behind_a_capped_one() {
    // CPU 0: 600 pages of one event each (ts i·1000 + 10), more than one round may read;
    // CPU 1: five events spread over the same span.
    let stream = |pages: Vec<Vec<u8>>| Box::new(std::io::Cursor::new(pages.concat()));
    let cpu0 = (0..600u64)
        .map(|i| PageBuilder::new(i * 1000).event(10, &tlb_flush_record(1, 3, 1)).page(None));
    let cpu1 = (0..5u64)
        .map(|j| PageBuilder::new(j * 120_000).event(5, &tlb_flush_record(2, 1, 1)).page(None));
    let streams = vec![
        CpuStream { cpu: 0, path: "cpu0".into(), stream: stream(cpu0.collect()) },
        CpuStream { cpu: 1, path: "cpu1".into(), stream: stream(cpu1.collect()) },
    ];
    let mut reader = Reader::from_streams(PageLayout::X86_64, schema(), streams, false);
    let mut ts = Vec::new();
    let first = reader.read_merged(&mut |e| ts.push(e.ts_ns)).unwrap();
    assert_eq!((first.pages, first.drained), (MAX_PAGES_PER_ROUND as u64 + 5, false));
    // CPU 0 may still hold events after its last queued page's time (255 000): nothing later
    // may come out yet, though CPU 1 had its events at 360 005 and 480 005 queued.
    assert_eq!(ts.len(), 255 + 3, "CPU 0 up to 254 010, CPU 1 up to 240 005");
    assert_eq!(ts.last(), Some(&254_010));
    reader.finish_merged(&mut |e| ts.push(e.ts_ns)).unwrap();
    assert_eq!(ts.len(), 605);
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_pages_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4200), commit in 0u64..5000, flags in 0u8..4) {
        let mut page = bytes;
        if page.len() >= 16 {
            // Mostly plausible commits, so the event walker gets exercised, not just the header check.
            let mut c = commit;
            if flags & 1 != 0 { c |= 0xffff_ffff_8000_0000; }
            if flags & 2 != 0 { c |= 1 << 30; }
            page[8..16].copy_from_slice(&c.to_le_bytes());
        }
        let (r, events, _) = decode(&page);
        if let Ok(n) = r {
            prop_assert_eq!(n as usize, events.len());
        }
    }

    #[test]
    fn mutated_real_pages_never_panic(page_index in 0usize..3, flips in proptest::collection::vec((0usize..4096, any::<u8>()), 1..16)) {
        let raw = std::fs::read(fixture_dir("6.18-madvise").join("cpu0.raw")).unwrap();
        let mut page = raw[(page_index % 2) * 4096..][..4096].to_vec();
        for (at, v) in flips {
            page[at] = v;
        }
        let _ = decode(&page);
    }
}
