//! Measures this machine (skipping with the reason where it cannot) and checks only wide
//! plausibility bounds: the machine is shared and noisy.

use tlblab_pathcost::{measure_all, names, CacheKey, Options, Outcome};

#[test]
fn live_measurement_is_plausible() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: kernel-path costs are measured on Linux only");
        return;
    }
    let costs = measure_all(&Options::default(), CacheKey::of_this_machine());
    eprintln!("measured in {:.1} s on CPUs {:?} ({:?})", costs.seconds, costs.cpus, costs.key);
    for (name, outcome) in &costs.results {
        match outcome {
            Outcome::Measured(m) => eprintln!(
                "  {name:24} {}{}",
                m.summary(),
                m.ipis_per_op.map(|i| format!(", {i:.2} IPIs/op")).unwrap_or_default()
            ),
            Outcome::Failed(why) => eprintln!("  {name:24} not measured: {why}"),
        }
    }
    assert!(costs.seconds < 60.0, "took {} s", costs.seconds);
    let ns = |name| costs.get(name).map(|m| m.median_ns);
    let syscall = ns(names::NULL_SYSCALL).unwrap();
    assert!((20.0..20_000.0).contains(&syscall), "syscall {syscall} ns");
    let (zero, anon) = (ns(names::FAULT_ZERO).unwrap(), ns(names::FAULT_ANON).unwrap());
    // A zero-page fault allocates and clears nothing, so it is cheaper than an anonymous write
    // fault; on a loaded shared machine the two medians can come within a few percent of each
    // other (1,619 and 1,545 ns once here), so only a wide margin is checked.
    assert!(
        zero < 2.0 * anon,
        "a zero-page fault ({zero} ns) costs less than 2 anon faults ({anon} ns)"
    );
    assert!(anon < 1_000_000.0, "{anon}");
    assert!(ns(names::DONTNEED_SMALL).unwrap() < ns(names::DONTNEED_LARGE).unwrap());
    assert!(ns(names::MADVISE_EMPTY).unwrap() > syscall * 0.5);
    assert!(ns(names::THREAD_SWITCH).unwrap() > syscall);
    // A write and a read are two system calls and more.
    assert!(ns(names::PIPE_PAIR).unwrap() > syscall);
    assert!(ns(names::SOCKET_PAIR).unwrap() > syscall);
    assert!(ns(names::FORK_EXIT).unwrap() > ns(names::THREAD_SWITCH).unwrap());
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if costs.cpus.len() < 2 || cpus < 2 {
        eprintln!("skipped the remote checks: fewer than 2 CPUs");
        assert!(costs.get(names::MIGRATE).is_err());
        return;
    }
    assert!(ns(names::MIGRATE).unwrap() > syscall);
    if let (Ok(ipi), Ok(base)) = (ns(names::MEMBARRIER_IPI), ns(names::MEMBARRIER_NO_IPI)) {
        assert!(base < ipi, "the IPI round trip ({ipi}) costs more than its baseline ({base})");
    }
    // Kept runs delivered an IPI per call (the filter); a perf event needs privileges.
    match costs.get(names::IPI_CALL_REMOTE) {
        Ok(m) => assert!(m.ipis_per_op.unwrap() >= 0.99, "{m:?}"),
        Err(why) => eprintln!("no cross-CPU call: {why}"),
    }
    // A shootdown's target loses at least the interrupt's delivery and return (more than a
    // system call), and less than a millisecond (the sibling's pauses are capped at 200 µs).
    match costs.get(names::SHOOTDOWN_TARGET) {
        Ok(m) => {
            assert!(m.ipis_per_op.unwrap() >= 0.99, "{m:?}");
            assert!((syscall..1_000_000.0).contains(&m.median_ns), "{m:?}");
        }
        Err(why) => eprintln!("no shootdown measured: {why}"),
    }
}
