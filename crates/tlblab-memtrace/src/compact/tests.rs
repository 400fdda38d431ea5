//! Unit tests of the compact format: every kind round-trips, every rule is enforced.

use super::codec::{self, decode, encode};
use super::*;
use crate::{EventSource, TraceError, TraceErrorKind};
use tlblab_types::{
    Access, AccessKind, CpuId, InvlpgbRange, InvlpgbScope, InvpcidType, Page, PageSize, Pcid,
    TlbOp, TraceEvent, Vpn,
};

fn pcid(value: u16) -> Pcid {
    Pcid::new(value).unwrap_or_default()
}

fn access(kind: AccessKind, vpn: u64, size: PageSize, global: bool, repeat: u32) -> TraceEvent {
    let access = Access {
        cpu: CpuId(2),
        pcid: pcid(4095),
        page: Page { vpn: Vpn(vpn), size },
        global,
        kind,
    };
    TraceEvent::Access { access, repeat }
}

fn op(cpu: u16, op: TlbOp) -> TraceEvent {
    TraceEvent::Op { cpu: CpuId(cpu), op }
}

/// One event of every kind and variant.
fn every_kind() -> Vec<TraceEvent> {
    let mut events = vec![
        access(AccessKind::Load, 0x1234, PageSize::Size4K, false, 1),
        access(AccessKind::Store, 0xf_ffff_ffff_fe00, PageSize::Size2M, true, u32::MAX),
        access(AccessKind::Fetch, 0x40200, PageSize::Size1G, false, 7),
        op(0, TlbOp::Invlpg { pcid: pcid(5), vpn: Vpn(Vpn::MAX) }),
        op(1, TlbOp::Invpcid { kind: InvpcidType::IndivAddr, pcid: pcid(9), vpn: Vpn(0x77) }),
        op(1, TlbOp::Invpcid { kind: InvpcidType::SingleCtxt, pcid: pcid(9), vpn: Vpn(0) }),
        op(1, TlbOp::Invpcid { kind: InvpcidType::AllInclGlobal, pcid: pcid(0), vpn: Vpn(0) }),
        op(1, TlbOp::Invpcid { kind: InvpcidType::AllNonGlobal, pcid: pcid(0), vpn: Vpn(0) }),
        op(u16::MAX, TlbOp::MovCr3 { pcid: pcid(12), noflush: true }),
        op(3, TlbOp::MovCr3 { pcid: pcid(0), noflush: false }),
        op(3, TlbOp::Tlbsync),
    ];
    for (pge, pcide) in [(false, false), (true, false), (false, true), (true, true)] {
        events.push(op(4, TlbOp::MovCr4 { pge, pcide }));
    }
    let ranges = [
        None,
        Some(InvlpgbRange { start: Vpn(0x12345), pages: 1, stride: PageSize::Size4K }),
        Some(InvlpgbRange { start: Vpn(0x200), pages: u32::MAX, stride: PageSize::Size2M }),
    ];
    for range in ranges {
        for pcid in [None, Some(pcid(33))] {
            for (include_global, final_only) in [(false, true), (true, false)] {
                let scope = InvlpgbScope { range, pcid, include_global, final_only };
                events.push(op(6, TlbOp::Invlpgb(scope)));
            }
        }
    }
    events
}

fn write(events: &[TraceEvent]) -> Vec<u8> {
    let mut writer = CompactWriter::new(Vec::new()).unwrap_or_else(|error| panic!("{error}"));
    for event in events {
        writer.write(event).unwrap_or_else(|error| panic!("{error}"));
    }
    writer.finish().unwrap_or_else(|error| panic!("{error}"))
}

fn read(bytes: &[u8]) -> Result<Vec<TraceEvent>, TraceError> {
    CompactReader::new("t.tlbt", bytes).events().collect()
}

fn err(bytes: &[u8]) -> TraceError {
    match read(bytes) {
        Ok(events) => panic!("expected an error, read {events:?}"),
        Err(error) => error,
    }
}

/// A valid trace of `events` with record `index` replaced by `(w0, w1)` and the END record
/// fixed up (so only the replaced record can be at fault).
fn with_record(events: &[TraceEvent], index: usize, w0: u64, w1: u64) -> Vec<u8> {
    let mut records: Vec<(u64, u64)> =
        events.iter().map(|event| encode(event).unwrap_or_default()).collect();
    records[index] = (w0, w1);
    let mut bytes = header().to_vec();
    let mut checksum = CHECKSUM_INIT;
    for &(w0, w1) in &records {
        bytes.extend_from_slice(&w0.to_le_bytes());
        bytes.extend_from_slice(&w1.to_le_bytes());
        checksum = checksum_step(checksum, w0, w1);
    }
    bytes.extend_from_slice(&(15u64 << 56 | records.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&checksum.to_le_bytes());
    bytes
}

#[test]
fn every_kind_round_trips() {
    let events = every_kind();
    let bytes = write(&events);
    assert_eq!(bytes.len(), HEADER_SIZE + (events.len() + 1) * RECORD_SIZE);
    assert_eq!(&bytes[..8], b"tlblabMT");
    assert_eq!(read(&bytes).unwrap_or_else(|error| panic!("{error}")), events);
    for event in &events {
        let (w0, w1) = encode(event).unwrap_or_default();
        assert_eq!(decode(w0, w1), Ok(*event));
    }
}

#[test]
fn empty_trace_and_exact_bytes() {
    let bytes = write(&[]);
    let mut expected = b"tlblabMT\x01\x00\x10\x00\x00\x00\x00\x00".to_vec();
    expected.extend_from_slice(&(15u64 << 56).to_le_bytes());
    expected.extend_from_slice(&CHECKSUM_INIT.to_le_bytes());
    assert_eq!(bytes, expected);
    assert_eq!(read(&bytes).ok(), Some(vec![]));
    // A load of vpn 0x1234, 4K, global, cpu 2, pcid 4095, repeat 3.
    let (w0, w1) =
        encode(&access(AccessKind::Load, 0x1234, PageSize::Size4K, true, 3)).unwrap_or_default();
    assert_eq!(w0, 0x0040_0000_0000_1234);
    assert_eq!(w1, 0x0fff_0002_0000_0003);
}

#[test]
fn documented_example_bytes() {
    // The example of docs/trace-formats.md, byte for byte.
    let load = TraceEvent::Access {
        access: Access {
            cpu: CpuId(2),
            pcid: pcid(5),
            page: Page { vpn: Vpn(0x7fff0), size: PageSize::Size4K },
            global: false,
            kind: AccessKind::Load,
        },
        repeat: 3,
    };
    let cr3 = op(1, TlbOp::MovCr3 { pcid: pcid(12), noflush: true });
    let mut expected = b"tlblabMT\x01\x00\x10\x00\x00\x00\x00\x00".to_vec();
    for word in [
        0x0000_0000_0007_fff0u64,
        0x0005_0002_0000_0003,
        0x0540_0000_0000_0000,
        0x000c_0001_0000_0001,
        0x0f00_0000_0000_0002,
        0x27ce_b701_a5f3_4f30,
    ] {
        expected.extend_from_slice(&word.to_le_bytes());
    }
    assert_eq!(write(&[load, cr3]), expected);
    assert_eq!(read(&expected).ok(), Some(vec![load, cr3]));
}

#[test]
fn many_records_span_chunks_and_batches() {
    let events: Vec<_> = (0..20_000u64)
        .map(|i| access(AccessKind::Load, i, PageSize::Size4K, false, 1 + i as u32))
        .collect();
    assert_eq!(read(&write(&events)).ok(), Some(events));
}

#[test]
fn header_errors() {
    let valid = write(&[]);
    let mut bytes = valid.clone();
    bytes[0] = b'T';
    let error = err(&bytes);
    assert!(matches!(error.kind(), TraceErrorKind::BadMagic { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        r#"t.tlbt: byte offset 0: bad magic "TlblabMT", expected "tlblabMT" (not a tlblab compact trace?)"#
    );
    let mut bytes = valid.clone();
    bytes[8] = 2;
    assert!(matches!(error_kind(&bytes), TraceErrorKind::UnsupportedVersion { version: 2 }));
    let mut bytes = valid.clone();
    bytes[10] = 24;
    assert!(matches!(error_kind(&bytes), TraceErrorKind::BadRecord { .. }));
    let mut bytes = valid.clone();
    bytes[15] = 1;
    assert!(matches!(error_kind(&bytes), TraceErrorKind::BadRecord { .. }));
    for length in [0, 5, 8, 15] {
        assert!(
            matches!(error_kind(&valid[..length]), TraceErrorKind::Truncated { .. }),
            "{length}"
        );
    }
    assert!(matches!(error_kind(b"tlbX"), TraceErrorKind::BadMagic { .. }));
}

fn error_kind(bytes: &[u8]) -> TraceErrorKind {
    err(bytes).into_kind()
}

#[test]
fn record_errors_name_the_offset() {
    let events = every_kind();
    let (w0, w1) = encode(&events[0]).unwrap_or_default();
    let cases: &[(u64, u64, &str)] = &[
        (w0 | 9 << 56, w1, "unknown record kind 9"),
        (w0 | 1 << 62, w1, "reserved bits of w0"),
        (w0, w1 | 1 << 63, "reserved bits of w1"),
        (w0 | 1 << 55, w1, "flag B is 0x1, must be 0"),
        (w0 | 1 << 60, w1, "X is 0x1, must be 0"),
        (w0 | 3 << 52, w1, "3 is not a page size"),
        (w0, w1 & !0xffff_ffff, "count is 0x0, must be at least 1"),
        // vpn 0x1234 is not 2 MiB-aligned: not canonical for a 2M page.
        (w0 | 1 << 52, w1, "not canonical"),
        (w0 | 2 << 52, w1, "not canonical"),
    ];
    for &(bad0, bad1, expected) in cases {
        let bytes = with_record(&events, 0, bad0, bad1);
        let error = err(&bytes);
        assert!(matches!(error.kind(), TraceErrorKind::BadRecord { .. }), "{error}");
        assert_eq!(error.position(), crate::Position::Offset(16), "{error}");
        assert!(error.to_string().contains(expected), "{error} should say {expected}");
    }
    // Errors in later records name their own offsets; the events before come first.
    let bytes = with_record(&events, 3, 3 << 56 | 1 << 54, 1);
    let mut reader = CompactReader::new("t", &bytes[..]);
    let mut batch = Vec::new();
    assert!(matches!(reader.read_batch(&mut batch), Ok(true)));
    assert_eq!(batch, events[..3]);
    let error = reader.read_batch(&mut batch).err().map(|error| error.to_string());
    assert_eq!(
        error.as_deref(),
        Some("t: byte offset 64: INVLPG record: flag A is 0x1, must be 0")
    );
}

#[test]
fn op_rules() {
    let events = every_kind();
    let kind = |kind: u64| kind << 56;
    let bad: &[(u64, u64, &str)] = &[
        (kind(3) | 1 << 52, 1, "size"),
        (kind(3), 2, "count is 0x2, must be 1"),
        (kind(4) | 2 << 60 | 5, 1, "vpn (unused"),
        (kind(4) | 3 << 60, 1 | 1 << 48, "pcid (unused"),
        (kind(4) | 1 << 54, 1, "flag A"),
        (kind(5) | 1, 1, "vpn"),
        (kind(5) | 1 << 55, 1, "flag B"),
        (kind(6), 1 | 1 << 48, "pcid"),
        (kind(6) | 1 << 60, 1, "X"),
        (kind(7) | 1 << 60 | 2 << 52, 1, "must be 0 (4K) or 1 (2M)"),
        (kind(7) | 1 << 60 | 1 << 52 | 0x100, 1, "not aligned to the 2M stride"),
        (kind(7) | 1 << 60, 0, "count (strides) is 0x0"),
        (kind(7) | 5, 1, "vpn (no VA-valid bit)"),
        (kind(7), 1 | 1 << 48, "pcid (no PCID-valid bit)"),
        (kind(7), 2, "count"),
        (kind(8) | 1 << 54, 1, "flag A"),
        (kind(8), 1 | 1 << 48, "pcid"),
        (kind(8), 0, "count"),
        (kind(10), 1, "unknown record kind 10"),
    ];
    for &(w0, w1, expected) in bad {
        let error = err(&with_record(&events, 1, w0, w1));
        assert!(error.to_string().contains(expected), "{error} should say {expected}");
        assert_eq!(error.position(), crate::Position::Offset(32), "{error}");
    }
}

#[test]
fn end_errors() {
    let events = every_kind();
    let valid = write(&events);
    let end = valid.len() - RECORD_SIZE;

    // Missing END: the records are all there, the END is not.
    let error = err(&valid[..end]);
    assert!(
        matches!(error.kind(), TraceErrorKind::MissingEnd { records } if *records == events.len() as u64)
    );
    assert_eq!(error.position(), crate::Position::Offset(end as u64));
    assert!(error.to_string().contains(&format!("after {} records", events.len())));

    // Truncated mid-record.
    let error = err(&valid[..end - 8]);
    assert_eq!(
        error.to_string(),
        format!("t.tlbt: byte offset {}: truncated: 8 bytes of a 16-byte record", end - 16)
    );
    let error = err(&valid[..valid.len() - 1]);
    assert!(matches!(error.kind(), TraceErrorKind::Truncated { .. }));

    // Trailing data.
    let mut bytes = valid.clone();
    bytes.push(0);
    let error = err(&bytes);
    assert!(matches!(error.kind(), TraceErrorKind::TrailingData));
    assert_eq!(error.position(), crate::Position::Offset(valid.len() as u64));

    // A flipped checksum bit, and a flipped bit in a record (caught by the checksum).
    let mut bytes = valid.clone();
    bytes[end + 8] ^= 0x10;
    assert!(matches!(error_kind(&bytes), TraceErrorKind::BadChecksum { .. }));
    let mut bytes = valid.clone();
    bytes[16] ^= 0x01;
    assert!(matches!(error_kind(&bytes), TraceErrorKind::BadChecksum { .. }));

    // A wrong count, and other bits set in END's w0.
    let mut bytes = valid.clone();
    bytes[end] ^= 0x01;
    assert!(err(&bytes).to_string().contains("record count is"));
    let mut bytes = valid.clone();
    bytes[end + 6] = 0x10;
    assert!(matches!(error_kind(&bytes), TraceErrorKind::BadRecord { .. }));
}

#[test]
fn writer_rejects_unrepresentable_events() {
    let bad = [
        access(AccessKind::Load, 0x1234, PageSize::Size4K, false, 0),
        access(AccessKind::Load, 0x1234, PageSize::Size2M, false, 1),
        access(AccessKind::Load, 1 << 52, PageSize::Size4K, false, 1),
        op(0, TlbOp::Invlpg { pcid: pcid(0), vpn: Vpn(1 << 52) }),
        op(0, TlbOp::Invpcid { kind: InvpcidType::AllInclGlobal, pcid: pcid(3), vpn: Vpn(0) }),
        op(0, TlbOp::Invpcid { kind: InvpcidType::SingleCtxt, pcid: pcid(3), vpn: Vpn(1) }),
        op(
            0,
            TlbOp::Invlpgb(InvlpgbScope {
                range: Some(InvlpgbRange { start: Vpn(1), pages: 1, stride: PageSize::Size2M }),
                pcid: None,
                include_global: false,
                final_only: false,
            }),
        ),
        op(
            0,
            TlbOp::Invlpgb(InvlpgbScope {
                range: Some(InvlpgbRange { start: Vpn(0), pages: 0, stride: PageSize::Size4K }),
                pcid: None,
                include_global: false,
                final_only: false,
            }),
        ),
        op(
            0,
            TlbOp::Invlpgb(InvlpgbScope {
                range: Some(InvlpgbRange { start: Vpn(0), pages: 1, stride: PageSize::Size1G }),
                pcid: None,
                include_global: false,
                final_only: false,
            }),
        ),
    ];
    for event in bad {
        let mut writer = CompactWriter::new(Vec::new()).unwrap_or_else(|error| panic!("{error}"));
        let error = writer.write(&event).err();
        assert!(
            matches!(
                error.as_ref().map(TraceError::kind),
                Some(TraceErrorKind::InvalidEvent { .. })
            ),
            "{event:?} gave {error:?}"
        );
        // Nothing was written: the trace is still valid.
        let bytes = writer.finish().unwrap_or_default();
        assert_eq!(read(&bytes).ok(), Some(vec![]));
    }
}

/// Records near the valid ones: every field random, but usually within its range.
fn near_valid_record() -> impl proptest::strategy::Strategy<Value = (u64, u64)> {
    use proptest::prelude::*;
    (
        prop_oneof![0..16u64, Just(0u64), Just(1), Just(2)],
        prop_oneof![Just(0u64), Just(0x200), 0..=codec::VPN_MASK],
        0..4u64,
        0..4u64,
        0..4u64,
        prop_oneof![9 => Just(0u64), 1 => 0..4u64],
        any::<u64>(),
        prop_oneof![Just(1u64), any::<u64>()],
        prop_oneof![9 => Just(0u64), 1 => 0..16u64],
    )
        .prop_map(|(kind, vpn, size, flags, x, top, w1, count, w1_top)| {
            let w0 = vpn | size << 52 | flags << 54 | kind << 56 | x << 60 | top << 62;
            let w1 = (count & 0xffff_ffff) | (w1 & 0x0fff_ffff_0000_0000) | w1_top << 60;
            (w0, w1)
        })
}

proptest::proptest! {
    /// The reader's fast path for accesses agrees with the full decoder.
    #[test]
    fn fast_access_decoding_agrees((w0, w1) in near_valid_record()) {
        let full = decode(w0, w1);
        match codec::decode_access(w0, w1) {
            Some(event) => proptest::prop_assert_eq!(full, Ok(event)),
            None => {
                let is_access = matches!(full, Ok(TraceEvent::Access { .. }));
                proptest::prop_assert!(!is_access, "fast path refused a valid access");
            }
        }
        // Whatever decodes also encodes back to the same words.
        if let Ok(event) = full {
            proptest::prop_assert_eq!(encode(&event), Ok((w0, w1)));
        }
    }
}
