//! gzip and xz: detection, round trips, truncated and corrupt streams.

mod common;

use common::{compact, gzip, lackey_text, read_all, xz};
use std::io::Write;
use tlblab_memtrace::{
    from_reader, open, Compression, EventSource, Format, Position, ReadOptions, TraceErrorKind,
};
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TlbOp, TraceEvent, Vpn};

fn sample_events() -> Vec<TraceEvent> {
    (0..5000u64)
        .map(|i| {
            if i % 100 == 99 {
                TraceEvent::Op {
                    cpu: CpuId(1),
                    op: TlbOp::MovCr3 { pcid: Pcid::default(), noflush: true },
                }
            } else {
                let page = Page { vpn: Vpn(i * 7 % 1000), size: PageSize::Size4K };
                let access = Access::new(CpuId(1), Pcid::default(), page, AccessKind::Store);
                TraceEvent::Access { access, repeat: 1 + (i % 3) as u32 }
            }
        })
        .collect()
}

type Compress = fn(&[u8]) -> Vec<u8>;
const COMPRESSORS: [(Compression, Compress); 2] =
    [(Compression::Gzip, gzip), (Compression::Xz, xz)];

#[test]
fn compressed_traces_round_trip() {
    let options = ReadOptions::default();
    let text = lackey_text(3000);
    let (_, plain_lackey) = read_all(text.as_bytes(), None, &options).expect("plain lackey");
    let events = sample_events();
    let bytes = compact(&events);
    for (compression, compress) in COMPRESSORS {
        let packed = compress(text.as_bytes());
        let trace =
            from_reader("t", std::io::Cursor::new(packed.clone()), None, &options).expect("opens");
        assert_eq!(trace.compression(), compression);
        assert_eq!(trace.format(), Format::Lackey);
        let (format, got) = read_all(&packed, None, &options).expect("compressed lackey");
        assert_eq!(format, Format::Lackey);
        assert_eq!(got, plain_lackey, "{compression}");

        let packed = compress(&bytes);
        let (format, got) = read_all(&packed, None, &options).expect("compressed compact");
        assert_eq!(format, Format::Compact);
        assert_eq!(got, events, "{compression}");
    }
}

#[test]
fn concatenated_members_and_streams_are_read() {
    let text = lackey_text(100);
    let (half1, half2) = text.split_at(text.find("\n L").unwrap_or(0) + 1);
    for (_, compress) in COMPRESSORS {
        let mut packed = compress(half1.as_bytes());
        packed.extend(compress(half2.as_bytes()));
        let options = ReadOptions { coalesce: false, ..ReadOptions::default() };
        let (_, joined) = read_all(&packed, None, &options).expect("multi-member");
        let (_, plain) = read_all(text.as_bytes(), None, &options).expect("plain");
        assert_eq!(joined, plain);
    }
}

#[test]
fn truncated_streams_are_errors() {
    let text = lackey_text(2000);
    let bytes = compact(&sample_events());
    for (compression, compress) in COMPRESSORS {
        for (what, data) in [("lackey", text.as_bytes()), ("compact", &bytes[..])] {
            let packed = compress(data);
            for cut in
                [packed.len() / 2, packed.len() - 9, packed.len() - 4, packed.len() - 1, 7, 12]
            {
                let result = read_all(&packed[..cut], None, &ReadOptions::default());
                let error = match result {
                    Ok((format, events)) => panic!(
                        "{compression} {what} cut at {cut}/{}: read {} events as {format}",
                        packed.len(),
                        events.len()
                    ),
                    Err(error) => error,
                };
                assert!(
                    matches!(
                        error.kind(),
                        TraceErrorKind::Truncated { .. } | TraceErrorKind::Decompress { .. }
                    ),
                    "{compression} {what} cut at {cut}: {error}"
                );
                assert!(matches!(error.position(), Position::Offset(_)), "{error}");
            }
        }
    }
}

#[test]
fn corrupt_streams_are_errors() {
    let text = lackey_text(2000);
    for (compression, compress) in COMPRESSORS {
        // Garbage in the middle: some error (the decoded garbage may fail to parse before the
        // stream's checksum is reached).
        let mut packed = compress(text.as_bytes());
        let middle = packed.len() / 2;
        for byte in &mut packed[middle..middle + 16] {
            *byte ^= 0x5a;
        }
        assert!(read_all(&packed, None, &ReadOptions::default()).is_err(), "{compression}");

        // A bad checksum in the trailer: the data decodes, the decoder rejects the stream.
        let mut packed = compress(text.as_bytes());
        let at = match compression {
            Compression::Gzip => packed.len() - 8, // CRC32 of the member
            _ => packed.len() - 40,                // inside the xz index/check area
        };
        packed[at] ^= 0x01;
        let error = read_all(&packed, None, &ReadOptions::default()).err();
        assert!(
            matches!(
                error.as_ref().map(|error| error.kind()),
                Some(TraceErrorKind::Decompress { .. } | TraceErrorKind::Truncated { .. })
            ),
            "{compression}: {error:?}"
        );
        let message = error.map(|error| error.to_string()).unwrap_or_default();
        assert!(message.starts_with("mem: byte offset "), "{message}");
    }
}

#[test]
fn open_reads_files_and_counts_bytes() {
    let dir = std::env::temp_dir().join(format!("tlblab-memtrace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("trace.lackey.xz");
    let text = lackey_text(20_000);
    let packed = xz(text.as_bytes());
    std::fs::File::create(&path).and_then(|mut file| file.write_all(&packed)).expect("write");
    let mut trace = open(&path, None, &ReadOptions::default()).expect("open");
    assert_eq!(trace.compression(), Compression::Xz);
    assert_eq!(trace.format(), Format::Lackey);
    assert_eq!(trace.total_bytes(), Some(packed.len() as u64));
    let mut batch = Vec::new();
    let mut events = 0;
    while trace.read_batch(&mut batch).expect("valid") {
        events += batch.len();
        assert!(trace.bytes_read() <= packed.len() as u64);
    }
    events += batch.len();
    assert!(events > 0);
    assert_eq!(trace.bytes_read(), packed.len() as u64);

    let missing = dir.join("missing.lackey");
    let error = open(&missing, None, &ReadOptions::default()).err();
    assert!(matches!(error.as_ref().map(|error| error.kind()), Some(TraceErrorKind::Io(_))));
    let message = error.map(|error| error.to_string()).unwrap_or_default();
    assert!(message.starts_with(&missing.display().to_string()), "{message}");
    std::fs::remove_dir_all(&dir).ok();
}
