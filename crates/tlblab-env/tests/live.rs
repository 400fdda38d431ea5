//! Live tests on the running machine. They assert properties that hold on any Linux system and
//! print what this machine offered; sources a machine lacks are checked for a reason, not skipped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tlblab_env::{
    Environment, InterruptDelta, InterruptSnapshot, PmuCounters, RusageSnapshot, Source, Sources,
    TlbFlushCounters,
};

#[test]
fn capture_matches_uname_and_proc_interrupts() {
    let env = Environment::capture();
    println!("{}", serde_json::to_string_pretty(&env).unwrap());
    match std::process::Command::new("uname").arg("-r").output() {
        Ok(out) if out.status.success() => {
            let release = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            assert_eq!(env.kernel_release, Source::Available(release));
        }
        _ => println!("skipped the uname comparison: no uname(1)"),
    }
    let Some(online) = env.online_cpus.available() else {
        println!("skipped CPU checks: {:?}", env.online_cpus);
        return;
    };
    // /proc/interrupts lists one column per online CPU: an independent count.
    if let Ok(irq) = InterruptSnapshot::read() {
        assert_eq!(irq.cpus, online.ids());
    }
    let usable = std::thread::available_parallelism().unwrap().get();
    assert!(usable <= online.len(), "{usable} usable CPUs > {} online", online.len());
    // A commit is 12 hex digits, optionally "-dirty", or "unknown" outside a git checkout.
    let c = env.tlblab_commit.trim_end_matches("-dirty");
    assert!(
        c == "unknown" || (c.len() == 12 && c.chars().all(|ch| ch.is_ascii_hexdigit())),
        "{}",
        env.tlblab_commit
    );
    let back: Environment = serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
    assert_eq!(back, env);
    assert_eq!(Environment::differences(&env, &back), vec![]);
}

#[test]
fn pv_flush_is_decoded_exactly_when_the_vendor_is_kvm() {
    let env = Environment::capture();
    let kvm = env.hypervisor.cpuid_vendor.available().map(String::as_str) == Some("KVMKVMKVM");
    if kvm {
        assert!(env.kvm_pv_tlb_flush.is_available(), "{:?}", env.kvm_pv_tlb_flush);
    } else {
        assert!(env.kvm_pv_tlb_flush.reason().unwrap().starts_with("unknown"));
    }
    // Every unavailable field says why.
    for (name, value) in env.fields() {
        if let Some(reason) = value.strip_prefix("unavailable (") {
            assert!(reason.len() > 2, "{name} has an empty reason");
        }
    }
}

/// Pins the calling thread to `cpu` when that CPU exists; a failure only weakens the test.
fn pin(cpu: usize) {
    #[cfg(target_os = "linux")]
    {
        let mut set = nix::sched::CpuSet::new();
        if set.set(cpu).is_ok() {
            let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

#[test]
fn counters_around_a_two_thread_munmap_loop() {
    // A sibling thread spins in the same mm on another CPU while this thread maps, touches and
    // unmaps anonymous memory: each munmap must flush the range on every CPU running the mm
    // (the shape of `storm --op munmap`). Under KVM paravirtual flush a preempted sibling gets no IPI, so
    // only non-negative deltas are required.
    const ITERATIONS: u64 = 2000;
    const PAGES: usize = 16;
    let page = 4096;
    let stop = Arc::new(AtomicBool::new(false));
    let spinner = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            pin(1);
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    };
    pin(0);
    let irq_before = InterruptSnapshot::read();
    let vm_before = TlbFlushCounters::read().unwrap();
    let ru_before = RusageSnapshot::read().unwrap();
    for _ in 0..ITERATIONS {
        let mut map = memmap2::MmapMut::map_anon(PAGES * page).unwrap();
        for p in 0..PAGES {
            map[p * page] = 1;
        }
        drop(map); // munmap
    }
    let ru_after = RusageSnapshot::read().unwrap();
    let irq_after = InterruptSnapshot::read();
    let vm_after = TlbFlushCounters::read().unwrap();
    stop.store(true, Ordering::Relaxed);
    spinner.join().unwrap();

    let ru = RusageSnapshot::delta(&ru_before, &ru_after).unwrap();
    println!("rusage delta: {ru:?}");
    // Each fresh mapping's first touch faults at least once (more with base pages).
    assert!(ru.process.minor_faults >= ITERATIONS, "{ru:?}");

    match (irq_before, irq_after) {
        (Ok(b), Ok(a)) => {
            let d = InterruptDelta::between(&b, &a).unwrap();
            println!(
                "interrupt delta on CPUs {:?}: TLB {} / CAL {}",
                d.cpus,
                per_cpu(&d.tlb),
                per_cpu(&d.cal)
            );
        }
        (b, a) => println!("no /proc/interrupts: {:?} {:?}", b.err(), a.err()),
    }
    match (vm_before, vm_after) {
        (Source::Available(b), Source::Available(a)) => {
            println!("vmstat delta: {:?}", TlbFlushCounters::delta(&b, &a).unwrap());
        }
        (b, _) => println!("vmstat: {b:?}"),
    }
}

fn per_cpu(row: &Source<tlblab_env::PerCpuDelta>) -> String {
    row.as_ref().map(|c| format!("{:?} total {}", c.per_cpu, c.total)).to_string()
}

#[test]
fn pmu_counts_or_says_why_not() {
    match PmuCounters::open() {
        Source::Available(mut c) => {
            c.reset().unwrap();
            c.enable().unwrap();
            let v: Vec<u64> = (0..1_000_000).collect();
            let sum: u64 = v.iter().step_by(512).sum();
            c.disable().unwrap();
            let r = c.read().unwrap();
            println!("PMU reading {r:?} (sum {sum})");
            assert!(r.time_enabled_ns > 0 && r.time_running_ns <= r.time_enabled_ns);
        }
        Source::Unavailable { reason } => {
            println!("PMU: {reason}");
            assert!(reason.contains("perf_event_open"), "{reason}");
        }
    }
}

#[test]
fn sources_summary_names_every_source() {
    let s = Sources::probe();
    let line = s.to_string();
    println!("sources: {line}");
    for name in ["interrupts", "vmstat_tlb", "rusage", "pmu", "tracefs"] {
        assert!(line.contains(&format!("{name}: ")), "{line}");
    }
    assert!(s.rusage.is_available());
    let rows = InterruptSnapshot::read().is_ok_and(|i| i.tlb().is_some() && i.cal().is_some());
    assert_eq!(s.interrupts.is_available(), rows);
}
