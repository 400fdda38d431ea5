//! Format and compression detection.

mod common;

use common::{compact, gzip, lackey_text, read_all, xz};
use tlblab_memtrace::{
    detect_compression, detect_format, from_reader, Compression, Format, ReadOptions,
    TraceErrorKind,
};
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TraceEvent, VirtAddr};

/// A ChampSim record with a fetch of `ip` and a load of `load`.
fn champsim_record(ip: u64, load: u64) -> Vec<u8> {
    let mut bytes = ip.to_le_bytes().to_vec();
    bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
    bytes.extend_from_slice(&[0; 16]);
    bytes.extend_from_slice(&load.to_le_bytes());
    bytes.extend_from_slice(&[0; 24]);
    bytes
}

#[test]
fn compression_by_magic() {
    assert_eq!(detect_compression(&[0x1f, 0x8b, 8, 0]), Compression::Gzip);
    assert_eq!(detect_compression(&[0xfd, b'7', b'z', b'X', b'Z', 0]), Compression::Xz);
    assert_eq!(detect_compression(&[0xfd, b'7', b'z', b'X', b'Z']), Compression::None);
    assert_eq!(detect_compression(b"tlblabMT"), Compression::None);
    assert_eq!(detect_compression(&[]), Compression::None);
    assert_eq!(detect_compression(&gzip(b"x")), Compression::Gzip);
    assert_eq!(detect_compression(&xz(b"x")), Compression::Xz);
}

#[test]
fn format_by_content() {
    assert_eq!(detect_format(&compact(&[])), Format::Compact);
    assert_eq!(detect_format(lackey_text(10).as_bytes()), Format::Lackey);
    assert_eq!(detect_format(b""), Format::Lackey);
    assert_eq!(detect_format(b"I  1000,4\r\n\t L 2000,8\n"), Format::Lackey);
    assert_eq!(detect_format(&champsim_record(0x401000, 0x7fff0000)), Format::ChampSim);
    assert_eq!(detect_format("==1== caf\u{e9}\n".as_bytes()), Format::ChampSim);
    // Only the first 4096 bytes count.
    let mut text = " L 1000,8\n".repeat(500).into_bytes();
    text.push(0);
    assert_eq!(detect_format(&text), Format::Lackey);
    assert_eq!(detect_format(&text[4000..]), Format::ChampSim);
}

#[test]
fn from_reader_detects_and_reads_each_format() {
    let options = ReadOptions { coalesce: false, ..ReadOptions::default() };
    let mut bytes = champsim_record(0x401000, 0x7fff_0000);
    bytes.extend(champsim_record(0x401004, 0));
    for packed in [bytes.clone(), gzip(&bytes), xz(&bytes)] {
        let (format, events) = read_all(&packed, None, &options).expect("champsim");
        assert_eq!(format, Format::ChampSim);
        let access = |addr, kind| TraceEvent::Access {
            access: Access::new(
                CpuId(0),
                Pcid::default(),
                Page::containing(VirtAddr(addr), PageSize::Size4K),
                kind,
            ),
            repeat: 1,
        };
        assert_eq!(
            events,
            vec![
                access(0x401000, AccessKind::Fetch),
                access(0x7fff_0000, AccessKind::Load),
                access(0x401004, AccessKind::Fetch)
            ]
        );
    }
    let (format, events) = read_all(b"", None, &options).expect("empty");
    assert_eq!((format, events.len()), (Format::Lackey, 0));
}

#[test]
fn explicit_format_overrides_detection() {
    let options = ReadOptions::default();
    let text = lackey_text(10);
    let error = read_all(text.as_bytes(), Some(Format::Compact), &options).err();
    assert!(matches!(error.map(|error| error.into_kind()), Some(TraceErrorKind::BadMagic { .. })));
    // Lackey text read as ChampSim: '=' (0x3d) in the is_branch position is implausible.
    let error = read_all(text.as_bytes(), Some(Format::ChampSim), &options).err();
    let message = error.map(|error| error.to_string()).unwrap_or_default();
    assert!(message.contains("expected 0 or 1 (not a ChampSim input_instr trace?)"), "{message}");
    let error = read_all(&compact(&[]), Some(Format::Lackey), &options).err();
    assert!(matches!(error.map(|error| error.into_kind()), Some(TraceErrorKind::BadLine { .. })));
    // The explicit format does not need the 4096-byte look-ahead.
    let trace =
        from_reader("x", std::io::empty(), Some(Format::ChampSim), &options).expect("opens");
    assert_eq!(trace.format(), Format::ChampSim);
}

#[test]
fn traces_and_errors_can_move_between_threads() {
    fn assert_send<T: Send + 'static>() {}
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send::<tlblab_memtrace::OpenTrace>();
    assert_send_sync::<tlblab_memtrace::TraceError>();
    let trace = from_reader("x", std::io::Cursor::new(compact(&[])), None, &ReadOptions::default())
        .expect("opens");
    let events = std::thread::spawn(move || {
        use tlblab_memtrace::EventSource;
        trace.events().count()
    })
    .join()
    .ok();
    assert_eq!(events, Some(0));
}
