//! Runs one scenario under one policy and prints the report's headline figures.
//! `cargo run --release -p tlblab-kernel --example scenario -- madv-migrate linux-6.18 2`
use tlblab_kernel::workloads::{scenario, Params};
use tlblab_kernel::{Kernel, KernelConfig, NoObserver, Policy};
use tlblab_types::Cycles;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let s = scenario(&args[1]).unwrap();
    let policy = Policy::named(&args[2]).unwrap();
    let cpus: usize = args[3].parse().unwrap();
    let spec = tlblab_sim::machine::builtin(args.get(4).map_or("skylake", |s| s)).unwrap();
    let config = KernelConfig { nr_cpus: cpus, seed: 1, time_limit: Cycles(u64::MAX) };
    let mut k = Kernel::new(&spec, &policy, config, NoObserver).unwrap();
    s.install(&mut k, &Params::default()).unwrap();
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
}
