//! Runs one scenario under one policy and prints the report's headline figures.
//! `cargo run --release -p tlblab-kernel --example scenario -- SCENARIO POLICY CPUS [MACHINE [TASKS]]`,
//! e.g. `… -- kbuild pti-deferred 4 skylake 8`
use tlblab_kernel::workloads::{scenario, Params};
use tlblab_kernel::{Kernel, KernelConfig, NoObserver, Policy};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let s = scenario(&args[1]).unwrap();
    let policy = Policy::named(&args[2]).unwrap();
    let cpus: usize = args[3].parse().unwrap();
    let spec = tlblab_sim::machine::builtin(args.get(4).map_or("skylake", |s| s)).unwrap();
    let config = KernelConfig::new(cpus, 1);
    let mut k = Kernel::new(&spec, &policy, config, NoObserver).unwrap();
    let mut params = Params::default();
    if let Some(tasks) = args.get(5) {
        params.tasks = tasks.parse().unwrap();
    }
    s.install(&mut k, &params).unwrap();
    let t = std::time::Instant::now();
    let done = k.run();
    let r = k.report();
    println!(
        "done={done} {} = {:.3} in {:?}, {} events",
        s.metric.unit(),
        s.metric.value(&r),
        t.elapsed(),
        r.events
    );
    println!(
        "tlb_flush {:?}\nirq_tlb {:?} vmstat {:?}\nflush sizes {:?}",
        r.tlb_flush, r.irq_tlb, r.vmstat, r.flush_sizes.by_pages
    );
    let user: u64 = r.tasks.iter().map(|t| t.user_cycles).sum();
    let sys: u64 = r.tasks.iter().map(|t| t.sys_cycles).sum();
    let walks = r.hw.dtlb_load_misses.walk_completed + r.hw.dtlb_store_misses.walk_completed;
    println!(
        "user {:.1} ms, sys {:.1} ms, elapsed {:.1} ms, {} tasks, {} faults, {} dTLB walks, {} la57 checks, ipis {}",
        r.micros(user as f64) / 1e3,
        r.micros(sys as f64) / 1e3,
        r.micros(r.elapsed_cycles as f64) / 1e3,
        r.tasks.len(),
        r.page_faults,
        walks,
        r.la57_checks,
        r.ipis_sent.iter().sum::<u64>()
    );
    if let Some(x) = &r.xpfo {
        let mut e = x.exposure_cycles.clone();
        e.sort_unstable();
        let q = |f: f64| {
            e.get(((e.len() as f64 - 1.0) * f) as usize).map_or(0.0, |&c| r.micros(c as f64))
        };
        println!(
            "xpfo: {} unmaps, {} censored, {} full flushes, {} ipis, exposure µs median {:.1} p99 {:.1} max {:.1}",
            x.kernel_unmaps, x.censored, x.full_flushes, x.ipis, q(0.5), q(0.99), q(1.0)
        );
    }
}
