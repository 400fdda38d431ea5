//! Measures decode throughput from memory: `cargo run --release -p tlblab-memtrace --example
//! throughput [million-events]`.

use std::io::{Cursor, Write};
use std::time::Instant;
use tlblab_memtrace::{
    from_reader, Coalesce, CompactWriter, EventSource, Format, OpenTrace, ReadOptions, TraceError,
};
use tlblab_types::{Access, AccessKind, CpuId, Page, PageSize, Pcid, TraceEvent, Vpn};

/// Reads every batch of a trace in memory; returns (events, seconds), best of three runs.
fn measure(bytes: &[u8], format: Format, options: &ReadOptions) -> Result<(u64, f64), TraceError> {
    measure_format(bytes, format, options, |trace| trace)
}

/// Like `measure`, for a compact trace read through `wrap`.
fn measure_with<S: EventSource>(
    bytes: &[u8],
    wrap: impl Fn(OpenTrace) -> S,
) -> Result<(u64, f64), TraceError> {
    measure_format(bytes, Format::Compact, &ReadOptions::default(), wrap)
}

fn measure_format<S: EventSource>(
    bytes: &[u8],
    format: Format,
    options: &ReadOptions,
    wrap: impl Fn(OpenTrace) -> S,
) -> Result<(u64, f64), TraceError> {
    let mut best = f64::INFINITY;
    let mut events = 0;
    for _ in 0..3 {
        let copy = Cursor::new(bytes.to_vec());
        let start = Instant::now();
        let mut trace = wrap(from_reader("bench", copy, Some(format), options)?);
        let mut batch = Vec::new();
        events = 0;
        let mut check = 0u64;
        loop {
            let more = trace.read_batch(&mut batch)?;
            events += batch.len() as u64;
            check = check.wrapping_add(batch.last().map_or(0, TraceEvent::accesses));
            if !more {
                break;
            }
        }
        std::hint::black_box(check);
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok((events, best))
}

fn report(what: &str, bytes: usize, (events, seconds): (u64, f64)) {
    println!(
        "{what:<28} {events:>10} events  {:>8.1} M events/s  {:>7.0} MB/s",
        events as f64 / seconds / 1e6,
        bytes as f64 / seconds / 1e6
    );
}

fn main() -> Result<(), TraceError> {
    let millions: u64 = std::env::args().nth(1).and_then(|arg| arg.parse().ok()).unwrap_or(8);
    let n = millions * 1_000_000;

    // Compact: mostly distinct accesses (no runs), a few ops.
    let mut writer = CompactWriter::new(Vec::with_capacity((n as usize + 2) * 16))?;
    let mut state = 0x1234_5678_9abc_def1u64;
    for i in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let page = Page { vpn: Vpn(state >> 40), size: PageSize::Size4K };
        let kind = AccessKind::ALL[(i % 3) as usize];
        let access = Access::new(CpuId((i % 4) as u16), Pcid::default(), page, kind);
        writer.write(&TraceEvent::Access { access, repeat: 1 + (i % 2) as u32 })?;
    }
    let compact = writer.finish()?;
    report("compact", compact.len(), measure(&compact, Format::Compact, &ReadOptions::default())?);
    let adapter = measure_with(&compact, Coalesce::new)?;
    report("compact + Coalesce adapter", compact.len(), adapter);

    // Lackey: the mix of a real trace (mostly fetches), no runs to coalesce.
    let mut lackey = String::with_capacity(n as usize * 16);
    let mut state = 0x1234_5678_9abc_def1u64;
    for i in 0..n {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let line = match i % 3 {
            0 | 1 => format!("I  {:08x},{}\n", 0x0400_0000 + (state & 0xff_ffff), 1 + state % 7),
            _ => format!(" L {:09x},8\n", 0x1_fff0_0000 + (state >> 40)),
        };
        lackey.push_str(&line);
    }
    let raw = ReadOptions { coalesce: false, ..ReadOptions::default() };
    report(
        "lackey (no coalescing)",
        lackey.len(),
        measure(lackey.as_bytes(), Format::Lackey, &raw)?,
    );
    let options = ReadOptions::default();
    report(
        "lackey (coalescing)",
        lackey.len(),
        measure(lackey.as_bytes(), Format::Lackey, &options)?,
    );

    // Compressed (fast settings; decoding speed hardly depends on them): a quarter of the
    // lackey text, and the whole compact trace. Bytes/s count compressed bytes.
    let quarter = lackey.len() / 4;
    let end = lackey.get(..quarter).and_then(|text| text.rfind('\n')).map_or(0, |at| at + 1);
    let text = lackey.as_bytes().get(..end).unwrap_or_default();
    for (name, packed, format) in [
        ("lackey.xz (coalescing)", xz(text), Format::Lackey),
        ("lackey.gz (coalescing)", gzip(text), Format::Lackey),
        ("compact.xz", xz(&compact), Format::Compact),
        ("compact.gz", gzip(&compact), Format::Compact),
    ] {
        report(name, packed.len(), measure(&packed, format, &options)?);
    }
    Ok(())
}

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = liblzma::write::XzEncoder::new(Vec::new(), 1);
    encoder.write_all(bytes).and_then(|()| encoder.finish()).unwrap_or_default()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).and_then(|()| encoder.finish()).unwrap_or_default()
}
