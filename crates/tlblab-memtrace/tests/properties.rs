//! Property tests: no input makes a reader panic; round trips and coalescing are exact.

mod common;

use common::{compact, expand, gzip, lackey_text};
use proptest::prelude::*;
use tlblab_memtrace::{
    from_reader, ChampSimReader, Coalesce, CompactReader, EventSource, IterSource, LackeyReader,
    ReadOptions, TraceError,
};
use tlblab_types::{
    Access, AccessKind, CpuId, InvlpgbRange, InvlpgbScope, InvpcidType, Page, PageSize, Pcid,
    TlbOp, TraceEvent, Vpn,
};

/// Reads a source to its end or first error, checking the batch contract on the way.
fn drain(mut source: impl EventSource) -> Result<Vec<TraceEvent>, TraceError> {
    let mut all = Vec::new();
    let mut batch = Vec::new();
    loop {
        let more = source.read_batch(&mut batch)?;
        assert!(batch.len() <= tlblab_memtrace::BATCH_SIZE);
        all.extend_from_slice(&batch);
        if !more {
            // A finished source stays finished.
            assert!(matches!(source.read_batch(&mut batch), Ok(false)));
            assert!(batch.is_empty());
            return Ok(all);
        }
    }
}

/// Feeds `bytes` to every reader, directly and through detection; none may panic.
/// Feeds `bytes` to every reader, each case within 2 s (a reader that loops fails the case).
fn feed_everywhere(bytes: &[u8]) {
    let bytes = bytes.to_vec();
    common::within(std::time::Duration::from_secs(2), move || feed_unbounded(&bytes));
}

fn feed_unbounded(bytes: &[u8]) {
    let options = ReadOptions::default();
    let _ = drain(LackeyReader::new("fuzz", bytes, &options));
    let _ = drain(ChampSimReader::new("fuzz", bytes, &options));
    let _ = drain(CompactReader::new("fuzz", bytes));
    for format in [None, Some(tlblab_memtrace::Format::Compact)] {
        if let Ok(trace) =
            from_reader("fuzz", std::io::Cursor::new(bytes.to_vec()), format, &options)
        {
            let _ = drain(trace);
        }
    }
    let packed = gzip(bytes);
    if let Ok(trace) = from_reader("fuzz.gz", std::io::Cursor::new(packed), None, &options) {
        let _ = drain(trace);
    }
}

fn pcid() -> impl Strategy<Value = Pcid> {
    (0..=Pcid::MAX).prop_map(|value| Pcid::new(value).unwrap_or_default())
}

fn vpn() -> impl Strategy<Value = u64> {
    prop_oneof![0..1024u64, 0..=Vpn::MAX]
}

/// Any event the compact format can represent.
fn valid_event() -> impl Strategy<Value = TraceEvent> {
    let access = (0..3usize, vpn(), 0..3usize, any::<bool>(), any::<u16>(), pcid(), 1..=u32::MAX)
        .prop_map(|(kind, vpn, size, global, cpu, pcid, repeat)| {
            let size = PageSize::from_index(size).unwrap_or(PageSize::Size4K);
            let vpn = if size == PageSize::Size4K { vpn } else { vpn & !0x1ff };
            let kind = AccessKind::ALL[kind];
            let page = Page { vpn: Vpn(vpn), size };
            TraceEvent::Access {
                access: Access { cpu: CpuId(cpu), pcid, page, global, kind },
                repeat,
            }
        });
    let invlpgb = (
        proptest::option::of((vpn(), any::<bool>(), 1..=u32::MAX)),
        proptest::option::of(pcid()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(range, pcid, include_global, final_only)| {
            let range = range.map(|(start, huge, pages)| {
                let (stride, start) = if huge {
                    (PageSize::Size2M, start & !0x1ff)
                } else {
                    (PageSize::Size4K, start)
                };
                InvlpgbRange { start: Vpn(start), pages, stride }
            });
            TlbOp::Invlpgb(InvlpgbScope { range, pcid, include_global, final_only })
        });
    let op = prop_oneof![
        (pcid(), vpn()).prop_map(|(pcid, vpn)| TlbOp::Invlpg { pcid, vpn: Vpn(vpn) }),
        (0..4u8, pcid(), vpn()).prop_map(|(number, pcid, vpn)| {
            let kind = InvpcidType::from_number(number).unwrap_or(InvpcidType::AllInclGlobal);
            let vpn = if number == 0 { vpn } else { 0 };
            let pcid = if number <= 1 { pcid } else { Pcid::default() };
            TlbOp::Invpcid { kind, pcid, vpn: Vpn(vpn) }
        }),
        (pcid(), any::<bool>()).prop_map(|(pcid, noflush)| TlbOp::MovCr3 { pcid, noflush }),
        (any::<bool>(), any::<bool>()).prop_map(|(pge, pcide)| TlbOp::MovCr4 { pge, pcide }),
        invlpgb,
        Just(TlbOp::Tlbsync),
    ];
    let op = (any::<u16>(), op).prop_map(|(cpu, op)| TraceEvent::Op { cpu: CpuId(cpu), op });
    prop_oneof![3 => access, 1 => op]
}

/// Events from a small alphabet, so that runs of identical accesses are common.
fn runny_event() -> impl Strategy<Value = TraceEvent> {
    prop_oneof![
        8 => (0..3u64, 0..2usize, prop_oneof![1..4u32, (u32::MAX - 3)..=u32::MAX]).prop_map(
            |(vpn, kind, repeat)| {
                let page = Page { vpn: Vpn(vpn), size: PageSize::Size4K };
                let access = Access::new(CpuId(0), Pcid::default(), page, AccessKind::ALL[kind]);
                TraceEvent::Access { access, repeat }
            }
        ),
        1 => Just(TraceEvent::Op { cpu: CpuId(0), op: TlbOp::Tlbsync }),
    ]
}

/// Expansion counting repeats, without materialising u32::MAX copies.
fn expand_runs(events: &[TraceEvent]) -> Vec<(TraceEvent, u64)> {
    let mut runs: Vec<(TraceEvent, u64)> = Vec::new();
    for event in events {
        match *event {
            TraceEvent::Access { access, repeat } => {
                let unit = TraceEvent::Access { access, repeat: 1 };
                match runs.last_mut() {
                    Some((last, count)) if *last == unit => *count += u64::from(repeat),
                    _ => runs.push((unit, u64::from(repeat))),
                }
            }
            TraceEvent::Op { .. } => runs.push((*event, 1)),
        }
    }
    runs
}

/// A valid file of each format.
fn valid_files() -> Vec<Vec<u8>> {
    let events: Vec<TraceEvent> = (0..40u64)
        .map(|i| {
            let page = Page { vpn: Vpn(i % 7), size: PageSize::Size4K };
            TraceEvent::Access {
                access: Access::new(CpuId(1), Pcid::default(), page, AccessKind::Load),
                repeat: 2,
            }
        })
        .chain([TraceEvent::Op { cpu: CpuId(1), op: TlbOp::Tlbsync }])
        .collect();
    let mut champsim = Vec::new();
    for i in 0..20u64 {
        champsim.extend_from_slice(&(0x401000 + 4 * i).to_le_bytes());
        champsim.extend_from_slice(&[(i % 2) as u8, 0, 1, 2, 3, 4, 5, 6]);
        for slot in 0..6u64 {
            let addr = if (i + slot) % 3 == 0 { 0 } else { 0x7fff_0000 + 0x800 * (i + slot) };
            champsim.extend_from_slice(&addr.to_le_bytes());
        }
    }
    vec![lackey_text(30).into_bytes(), champsim, compact(&events)]
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip { at: usize, mask: u8 },
    Truncate { at: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Delete { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..20))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1..40usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
    ]
}

fn mutate(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let len = bytes.len();
    if len == 0 {
        return;
    }
    match mutation {
        Mutation::Flip { at, mask } => bytes[at % len] ^= mask,
        Mutation::Truncate { at } => bytes.truncate(at % len),
        Mutation::Insert { at, bytes: extra } => {
            let at = at % (len + 1);
            bytes.splice(at..at, extra.iter().copied());
        }
        Mutation::Delete { at, len: n } => {
            let at = at % len;
            bytes.drain(at..(at + n).min(len));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        feed_everywhere(&bytes);
    }

    #[test]
    fn random_text_never_panics(text in "[ \\tILSM=0-9a-fx,\\n\\r-]{0,400}") {
        feed_everywhere(text.as_bytes());
    }

    #[test]
    fn mutated_valid_files_never_panic(
        which in 0..3usize,
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = valid_files().swap_remove(which);
        for mutation in &mutations {
            mutate(&mut bytes, mutation);
        }
        feed_everywhere(&bytes);
    }

    #[test]
    fn mutated_compact_files_are_rejected(at in any::<usize>(), mask in 1..=255u8) {
        // Any single byte flip of a compact trace is caught (by a field rule or the checksum).
        let mut bytes = valid_files().swap_remove(2);
        let len = bytes.len();
        bytes[at % len] ^= mask;
        prop_assert!(drain(CompactReader::new("t", &bytes[..])).is_err());
    }

    #[test]
    fn compact_round_trip_is_identity(events in proptest::collection::vec(valid_event(), 0..300)) {
        let bytes = compact(&events);
        let read = drain(CompactReader::new("t", &bytes[..]));
        prop_assert_eq!(read.ok(), Some(events));
    }

    #[test]
    fn coalescing_is_exact(events in proptest::collection::vec(runny_event(), 0..200)) {
        let coalesced = drain(Coalesce::new(IterSource::new(events.clone())));
        let coalesced = coalesced.unwrap_or_default();
        prop_assert_eq!(expand_runs(&coalesced), expand_runs(&events));
        // Maximal: neighbours are merged unless the sum would overflow.
        for pair in coalesced.windows(2) {
            if let [TraceEvent::Access { access: a, repeat: r }, TraceEvent::Access { access: b, repeat: s }] = pair {
                prop_assert!(a != b || r.checked_add(*s).is_none());
            }
        }
    }

    #[test]
    fn coalescing_small_repeats_expands_exactly(
        events in proptest::collection::vec(
            (0..3u64, 0..2usize, 1..4u32).prop_map(|(vpn, kind, repeat)| {
                let page = Page { vpn: Vpn(vpn), size: PageSize::Size4K };
                let access = Access::new(CpuId(0), Pcid::default(), page, AccessKind::ALL[kind]);
                TraceEvent::Access { access, repeat }
            }),
            0..300,
        )
    ) {
        let coalesced = drain(Coalesce::new(IterSource::new(events.clone()))).unwrap_or_default();
        prop_assert_eq!(expand(&coalesced), expand(&events));
    }
}

/// Runs of one of a few accesses, long enough to cross batch boundaries, with operations.
fn long_runs() -> impl Strategy<Value = Vec<TraceEvent>> {
    proptest::collection::vec((0..4u64, 1..3000usize, 0..10u8), 0..30).prop_map(|runs| {
        let mut events = Vec::new();
        for (vpn, len, op) in runs {
            let page = Page { vpn: Vpn(vpn % 2), size: PageSize::Size4K };
            let kind = AccessKind::ALL[(vpn / 2) as usize];
            let access = Access::new(CpuId(0), Pcid::default(), page, kind);
            events.extend(
                (0..len).map(|i| TraceEvent::Access { access, repeat: 1 + (i % 3) as u32 }),
            );
            if op == 0 {
                events.push(TraceEvent::Op { cpu: CpuId(0), op: TlbOp::Tlbsync });
            }
        }
        events
    })
}

/// Lackey text for runs like those of `long_runs`.
fn lackey_runs() -> impl Strategy<Value = String> {
    proptest::collection::vec((0..4u64, 1..3000usize, any::<bool>()), 0..12).prop_map(|runs| {
        let mut text = String::new();
        for (which, len, cross) in runs {
            let addr = 0x1000 * (which % 2) + if cross { 0xffc } else { 0x10 };
            let letter = ["L", "S", "M", "I"][which as usize];
            let lead = if letter == "I" { "" } else { " " };
            for _ in 0..len {
                text.push_str(&format!("{lead}{letter} {addr:x},8\n"));
            }
        }
        text
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn coalescing_long_runs_is_exact_and_maximal(events in long_runs()) {
        let coalesced = drain(Coalesce::new(IterSource::new(events.clone()))).unwrap_or_default();
        prop_assert_eq!(expand(&coalesced), expand(&events));
        for pair in coalesced.windows(2) {
            if let [TraceEvent::Access { access: a, .. }, TraceEvent::Access { access: b, .. }] = pair {
                prop_assert!(a != b);
            }
        }
    }

    #[test]
    fn readers_coalesce_like_the_adapter(text in lackey_runs()) {
        let plain = ReadOptions { coalesce: false, ..ReadOptions::default() };
        let merged = drain(LackeyReader::new("t", text.as_bytes(), &ReadOptions::default()));
        let adapter = drain(Coalesce::new(LackeyReader::new("t", text.as_bytes(), &plain)));
        let raw = drain(LackeyReader::new("t", text.as_bytes(), &plain)).unwrap_or_default();
        let merged = merged.unwrap_or_default();
        prop_assert_eq!(&merged, &adapter.unwrap_or_default());
        prop_assert_eq!(expand(&merged), raw);
    }
}
