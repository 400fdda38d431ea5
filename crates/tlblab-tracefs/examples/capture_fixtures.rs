//! Captures decoder fixtures on this machine (needs root and tracefs):
//!
//! ```text
//! cargo run -p tlblab-tracefs --example capture_fixtures -- OUT_DIR BUFFER_KB ITERATIONS
//! ```
//!
//! Creates a private instance with `tlb/tlb_flush` and `sched/sched_switch`, runs the two-thread
//! madvise loop pinned on CPUs 0 and 1 (recording only this process's threads), turns tracing off, then saves: the instance's text
//! `trace` (read first: it does not consume), each CPU's `stats`, the raw pages of each CPU's
//! `trace_pipe_raw` (read with plain page-sized reads, not through the library), the format
//! files and `header_page`, and a `capture.txt` describing the run.

#[path = "../tests/support/madvise.rs"]
mod madvise;

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use tlblab_tracefs::{EventName, Instance, InstanceOptions, Tracefs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out, kb, iterations] = args.as_slice() else {
        return Err("usage: capture_fixtures OUT_DIR BUFFER_KB ITERATIONS".into());
    };
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out)?;
    let tracefs = Tracefs::find_or_mount()?;
    let opts = InstanceOptions {
        buffer_size_kb: kb.parse()?,
        optional_events: vec!["sched/sched_switch".parse::<EventName>()?],
        // Only this process and its threads (`set_event_pid` + `event-fork`).
        pids: vec![std::process::id()],
        follow_forks: true,
        ..InstanceOptions::default()
    };
    let inst = Instance::create(&tracefs, "capture", &opts)?;
    let done = madvise::madvise_loop(iterations.parse()?, (0, 1));
    inst.set_tracing_on(false)?;

    let dir = inst.path().to_path_buf();
    std::fs::copy(dir.join("trace"), out.join("trace.txt"))?;
    std::fs::copy(dir.join("events/header_page"), out.join("header_page"))?;
    for e in inst.enabled_events() {
        std::fs::copy(
            inst.path().join(format!("events/{e}/format")),
            out.join(format!("{}.format", e.name)),
        )?;
    }
    let page_size = inst.page_layout()?.page_size;
    for cpu in inst.cpus()? {
        let cpu_dir = dir.join(format!("per_cpu/cpu{cpu}"));
        std::fs::copy(cpu_dir.join("stats"), out.join(format!("cpu{cpu}.stats")))?;
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(cpu_dir.join("trace_pipe_raw"))?;
        let (mut raw, mut page) = (Vec::new(), vec![0u8; page_size]);
        loop {
            match f.read(&mut page) {
                Ok(n) if n == page_size => raw.extend_from_slice(&page),
                Ok(0) => break,
                Ok(n) => return Err(format!("short read of {n} bytes").into()),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e.into()),
            }
        }
        std::fs::write(out.join(format!("cpu{cpu}.raw")), &raw)?;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease")?;
    let meta = format!(
        "kernel: {}\ninstance: {}\ntrace_clock: {}\nbuffer_size_kb: {kb}\nmadvise iterations: {done}\npage_size: {page_size}\n",
        release.trim(),
        inst.name(),
        inst.clock(),
    );
    std::fs::write(out.join("capture.txt"), meta)?;
    inst.remove()?;
    Ok(())
}
