//! Import throughput on a large synthetic input held in memory (so the disk is not measured):
//! ftrace `trace` lines and `perf script` lines shaped like the real fixtures, 80% tlb_flush,
//! 15% sched_switch, 5% ipi_send_cpu, 2,000 threads on 8 CPUs; the format is auto-detected.
//!
//! Reports wall time and, where `/proc/self/schedstat` exists, the time the thread was on a CPU
//! (a busy shared machine stretches the first, not the second).
//!
//! `cargo run --release -p tlblab-flushtrace --example flushtrace_import_throughput [LINES]`

use std::time::Instant;

use tlblab_flushtrace::import::{TextFormat, TextImporter};

const REASONS: [&str; 5] = [
    "flush on task switch (0)",
    "remote shootdown (1)",
    "local MM shootdown (3)",
    "remote IPI send (4)",
    "remote wrong CPU (5)",
];

/// A deterministic pseudo-random sequence (xorshift), so runs compare.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `lines` lines of `format` text.
fn synthetic(lines: usize, format: TextFormat) -> Vec<u8> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(lines * 130);
    let mut ts_us: u64 = 20_013_000_000;
    for _ in 0..lines {
        ts_us += 1 + rng.next() % 5;
        let r = rng.next();
        let pid = 10_000 + (r % 2000) as i32;
        let cpu = (r >> 16) % 8;
        let comm = if pid % 7 == 0 { "Web Content" } else { "madv_loop" };
        let (secs, us) = (ts_us / 1_000_000, ts_us % 1_000_000);
        let (system, event, body) = match (r >> 24) % 100 {
            0..80 => {
                let pages = [-1i64, 0, 1, 2, 16, 512][((r >> 32) % 6) as usize];
                let reason = REASONS[((r >> 40) % 5) as usize];
                ("tlb", "tlb_flush", format!("pages:{pages} reason:{reason}"))
            }
            80..95 => (
                "sched",
                "sched_switch",
                format!(
                    "prev_comm={comm} prev_pid={pid} prev_prio=120 prev_state=S ==> \
                     next_comm=swapper/{cpu} next_pid=0 next_prio=120"
                ),
            ),
            _ => (
                "ipi",
                "ipi_send_cpu",
                format!(
                    "cpu={} callsite=on_each_cpu_cond_mask+0x20/0x60 \
                     callback=generic_smp_call_function_single_interrupt+0x0/0x10",
                    (cpu + 1) % 8
                ),
            ),
        };
        let line = match format {
            TextFormat::FtraceText => {
                format!("{comm:>16}-{pid:<7} [{cpu:03}] d..2. {secs:5}.{us:06}: {event}: {body}\n")
            }
            TextFormat::PerfScript => {
                let name = format!("{system}:{event}");
                format!("{comm:>16} {pid:7} [{cpu:03}] {secs:5}.{us:06}: {name:>18}: {body}\n")
            }
        };
        out.extend_from_slice(line.as_bytes());
    }
    out
}

/// Nanoseconds this thread has spent on a CPU (`/proc/self/schedstat`, first field).
fn on_cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/self/schedstat").ok()?.split_whitespace().next()?.parse().ok()
}

fn main() {
    let lines: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    for format in [TextFormat::FtraceText, TextFormat::PerfScript] {
        let input = synthetic(lines, format);
        // Best of three: the machine is shared and noisy.
        let (elapsed, cpu_ns, records) = (0..3)
            .map(|_| {
                let start = Instant::now();
                let cpu_start = on_cpu_ns();
                let mut records = 0u64;
                let mut importer = TextImporter::new(&input[..], "synthetic", None);
                for r in importer.by_ref() {
                    r.expect("synthetic input imports");
                    records += 1;
                }
                assert_eq!(importer.format(), Some(format));
                assert_eq!(importer.lines_read(), lines as u64);
                let cpu = on_cpu_ns().zip(cpu_start).map(|(end, start)| end - start);
                (start.elapsed(), cpu, records)
            })
            .min()
            .expect("three runs");
        let secs = elapsed.as_secs_f64();
        let on_cpu = cpu_ns.map_or(String::new(), |ns| {
            let s = ns as f64 / 1e9;
            format!("; on CPU {s:.3} s: {:.2} M lines/s", lines as f64 / s / 1e6)
        });
        println!(
            "{format:<12} {lines} lines ({:.0} MB) -> {records} records; wall {secs:.3} s: \
             {:.2} M lines/s, {:.0} MB/s{on_cpu}",
            input.len() as f64 / 1e6,
            lines as f64 / secs / 1e6,
            input.len() as f64 / secs / 1e6
        );
    }
}
