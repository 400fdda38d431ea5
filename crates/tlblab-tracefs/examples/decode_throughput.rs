//! Measures the reader (run with `--release`):
//!
//! ```text
//! cargo run --release -p tlblab-tracefs --example decode_throughput [-- live]
//! ```
//!
//! * offline: the captured fixture pages replicated to 64 MiB, decoded per CPU
//!   (`decode_page` + `TlbFlushDecoder`) and merged across CPUs (`Reader::from_streams`);
//! * `live` (root): the madvise loop with and without a `FlushCounter`, at several buffer
//!   sizes: tlb_flush events/s seen, lost events, and the loop's own rate; then a flood of
//!   `trace_marker` writes from one thread per CPU, the fastest event source we have, to see
//!   how many events/s the counter's reader keeps up with.

#[path = "../tests/support/madvise.rs"]
mod madvise;

use std::io::Cursor;
use std::path::Path;
use std::time::{Duration, Instant};

use tlblab_tracefs::format::{parse_event_format, parse_header_page};
use tlblab_tracefs::{
    decode_page, CpuLoss, CpuStream, FlushCounter, Instance, InstanceOptions, PageLayout, Reader,
    Schema, TlbFlushDecoder, Tracefs,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    offline()?;
    if std::env::args().any(|a| a == "live") {
        live()?;
        marker_flood()?;
    }
    Ok(())
}

fn offline() -> Result<(), Box<dyn std::error::Error>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/6.18-overrun");
    let text = |f: &str| std::fs::read_to_string(dir.join(f));
    let layout = PageLayout::from_header(&parse_header_page(&text("header_page")?, &dir)?);
    let formats = ["tlb_flush.format", "sched_switch.format"]
        .map(|f| parse_event_format(&text(f).unwrap(), &dir));
    let schema =
        Schema::new(formats.into_iter().collect::<Result<Vec<_>, _>>()?).ok_or("schema")?;
    let tlb = TlbFlushDecoder::new(schema.format_named("tlb_flush").ok_or("tlb_flush")?)?;
    let per_cpu: Vec<Vec<u8>> = (0..2)
        .map(|cpu| {
            let pages = std::fs::read(dir.join(format!("cpu{cpu}.raw"))).unwrap();
            pages.repeat((32 << 20) / pages.len())
        })
        .collect();
    let bytes: usize = per_cpu.iter().map(Vec::len).sum();

    let start = Instant::now();
    let (mut events, mut flushes, mut pages_sum) = (0u64, 0u64, 0i64);
    for (cpu, data) in per_cpu.iter().enumerate() {
        let mut loss = CpuLoss::default();
        for (i, page) in data.chunks(layout.page_size).enumerate() {
            events += decode_page(
                page,
                &layout,
                &schema,
                cpu as u32,
                (i * layout.page_size) as u64,
                &mut loss,
                &mut |e| {
                    if let Ok(Some(f)) = tlb.decode(e) {
                        flushes += 1;
                        pages_sum += f.pages;
                    }
                },
            )?;
        }
    }
    let t = start.elapsed().as_secs_f64();
    println!(
        "offline per-CPU decode: {events} events ({flushes} tlb_flush, pages sum {pages_sum}) from {} MiB in {t:.3} s: {:.1} M events/s, {:.0} MiB/s",
        bytes >> 20,
        events as f64 / t / 1e6,
        bytes as f64 / t / 1048576.0
    );

    let streams = per_cpu
        .into_iter()
        .enumerate()
        .map(|(cpu, data)| CpuStream {
            cpu: cpu as u32,
            path: dir.clone(),
            stream: Box::new(Cursor::new(data)),
        })
        .collect();
    let mut reader = Reader::from_streams(layout, schema, streams, false);
    let start = Instant::now();
    let (mut merged, mut last, mut disorder) = (0u64, 0u64, 0u64);
    let mut sink = |e: &tlblab_tracefs::RawEvent<'_>| {
        merged += 1;
        // The replicated pages repeat their timestamps, so count order breaks instead of
        // asserting: the merge is exercised, not the data's realism.
        disorder += u64::from(e.ts_ns < last);
        last = e.ts_ns;
    };
    loop {
        let p = reader.read_merged(&mut sink)?;
        if p.pages == 0 {
            break;
        }
    }
    reader.finish_merged(&mut sink)?;
    let t = start.elapsed().as_secs_f64();
    println!(
        "offline merged (2 CPUs): {merged} events in {t:.3} s: {:.1} M events/s ({disorder} timestamp steps back from the replication)",
        merged as f64 / t / 1e6
    );
    Ok(())
}

fn live() -> Result<(), Box<dyn std::error::Error>> {
    const N: u64 = 400_000;
    let tracefs = Tracefs::find_or_mount()?;
    let timed = || {
        let start = Instant::now();
        madvise::madvise_loop(N, (0, 1));
        start.elapsed().as_secs_f64()
    };
    // Each configuration runs right after a bare loop, as the machine's speed drifts.
    for (kb, poll_ms) in [(4096, 10), (4096, 10), (256, 10), (64, 10), (64, 1)] {
        let bare = timed();
        let opts = InstanceOptions { buffer_size_kb: kb, ..InstanceOptions::default() };
        let inst = Instance::create(&tracefs, "throughput", &opts)?;
        let counter = FlushCounter::start(&inst, Duration::from_millis(poll_ms))?;
        let t = timed();
        let counts = counter.stop()?;
        inst.remove()?;
        let lost = counts.lost_events();
        println!(
            "live: buffer {kb:>4} KiB/CPU, poll {poll_ms:>2} ms: {:>7} tlb_flush in {t:.2} s = {:>6.0} events/s, \
             lost {lost:>6}; loop {:>6.0} it/s counted vs {:>6.0} bare",
            counts.total(),
            counts.total() as f64 / t,
            N as f64 / t,
            N as f64 / bare,
        );
    }
    Ok(())
}

fn marker_flood() -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    let tracefs = Tracefs::find_or_mount()?;
    for kb in [4096, 16384] {
        let opts = InstanceOptions { buffer_size_kb: kb, ..InstanceOptions::default() };
        let inst = Instance::create(&tracefs, "flood", &opts)?;
        let counter = FlushCounter::start(&inst, Duration::from_millis(10))?;
        let marker = inst.path().join("trace_marker");
        let start = Instant::now();
        let writers: Vec<_> = (0..2)
            .map(|cpu| {
                let marker = marker.clone();
                std::thread::spawn(move || {
                    madvise::pin_to(cpu);
                    let mut f = std::fs::OpenOptions::new().write(true).open(marker).unwrap();
                    let mut n = 0u64;
                    while start.elapsed() < Duration::from_secs(2) {
                        for _ in 0..1000 {
                            f.write_all(b"tlblab flood").unwrap();
                        }
                        n += 1000;
                    }
                    n
                })
            })
            .collect();
        let written: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        let t = start.elapsed().as_secs_f64();
        let counts = counter.stop()?;
        inst.remove()?;
        let lost = counts.lost_events();
        println!(
            "flood: buffer {kb} KiB/CPU: {written} marker writes in {t:.2} s = {:.0}/s; read {} = {:.0} events/s, lost {lost} ({:.1}%)",
            written as f64 / t,
            counts.other_events,
            counts.other_events as f64 / t,
            lost as f64 * 100.0 / written as f64,
        );
    }
    Ok(())
}
