//! How many events per second `Recorder` writes to a trace file without loss (root; run with
//! `--release`):
//!
//! ```text
//! cargo run --release -p tlblab-tracer --example record_throughput [-- RATE_PER_S SECONDS BUFFER_KB]
//! ```
//!
//! One writer thread per CPU floods the instance's own `trace_marker` (the fastest event
//! source there is: one `write()` per event), paced to RATE_PER_S events/s in total (0: as
//! fast as they can), while the recorder reads the per-CPU buffers, merges them by time and
//! writes every event to a trace file in the temp directory. It prints events written,
//! recorded and lost, and the trace's size.

use std::io::Write;
use std::time::{Duration, Instant};

use tlblab_flushtrace::{End, Header, Origin, TraceWriter};
use tlblab_tracefs::{Instance, InstanceOptions, Tracefs};
use tlblab_tracer::Recorder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = |i: usize, default: f64| {
        std::env::args().nth(i).and_then(|a| a.parse::<f64>().ok()).unwrap_or(default)
    };
    let (rate, seconds, buffer_kb) = (arg(1, 1.2e6), arg(2, 5.0), arg(3, 16384.0) as u32);
    let cpus = std::thread::available_parallelism()?.get();
    let tracefs = Tracefs::find_or_mount()?;
    let opts = InstanceOptions { buffer_size_kb: buffer_kb, ..InstanceOptions::default() };
    let instance = Instance::create(&tracefs, "throughput", &opts)?;
    instance.set_tracing_on(false)?;
    let path =
        std::env::temp_dir().join(format!("tlblab-throughput-{}.flushtrace", std::process::id()));
    let writer = TraceWriter::create_streaming(&path, &Header::new(Origin::Recorded))?;
    let mut recorder = Recorder::new(&instance, writer)?;
    recorder.start()?;

    let marker = instance.path().join("trace_marker");
    let start = Instant::now();
    let length = Duration::from_secs_f64(seconds);
    let writers: Vec<_> = (0..cpus)
        .map(|_| {
            let marker = marker.clone();
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().write(true).open(marker).unwrap();
                let per_thread = rate / cpus as f64;
                let mut n = 0u64;
                while start.elapsed() < length {
                    for _ in 0..100 {
                        f.write_all(b"x").unwrap();
                    }
                    n += 100;
                    if per_thread > 0.0 {
                        let due = Duration::from_secs_f64(n as f64 / per_thread);
                        if let Some(wait) = due.checked_sub(start.elapsed()) {
                            std::thread::sleep(wait);
                        }
                    }
                }
                n
            })
        })
        .collect();
    let done = || writers.iter().all(|w| w.is_finished());
    recorder.run(Duration::from_millis(10), &done)?;
    let written: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let elapsed = start.elapsed().as_secs_f64();
    recorder.stop()?;
    let (_, stats, trailer) = recorder.finish(End::Complete, None)?;
    instance.remove()?;
    let size = std::fs::metadata(&path)?.len();
    std::fs::remove_file(&path)?;
    println!(
        "asked {rate:.0}/s for {seconds} s, buffer {buffer_kb} KiB/CPU, {cpus} CPUs: wrote {written} markers \
         ({:.0}/s); recorded {} events ({:.0}/s) in {} rounds ({} behind); lost {}; trace {:.1} MiB ({:.1} B/event)",
        written as f64 / elapsed,
        stats.events,
        stats.events as f64 / elapsed,
        stats.rounds,
        stats.busy_rounds,
        trailer.lost_events(),
        size as f64 / (1 << 20) as f64,
        size as f64 / stats.events.max(1) as f64,
    );
    Ok(())
}
