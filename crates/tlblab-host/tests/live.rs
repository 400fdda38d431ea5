//! The host preset of the machine the tests run on. Never fails for lack of a feature: it prints
//! what it found. It fails only if a preset cannot be built on an x86 machine, or the preset
//! cannot be simulated.

use tlblab_host::{host_spec, HostError, HostFacts, Origin};
use tlblab_sim::workload::Workload;
use tlblab_sim::System;

#[test]
fn builds_prints_and_simulates_the_host_preset() {
    let facts = HostFacts::gather();
    let host = match tlblab_host::build(&facts) {
        Ok(h) => h,
        Err(e @ (HostError::NotX86 { .. } | HostError::UnsupportedVendor { .. })) => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    println!("{}", host.toml);
    println!("--- provenance ---\n{}", host.provenance_text());
    println!(
        "paging levels {}, cpus {:?}, nearest preset {}",
        host.paging_levels, host.cpus, host.nearest
    );
    if let Some(dump) = facts.cpuid.available() {
        println!("--- CPUID as read ---\n{}", dump.to_cpuid_r());
    }

    // Kernel-path costs measured here (or the reason they were not), within wide bounds.
    let kernel = host.spec.kernel_costs().expect("the nearest preset has [kernel]");
    match facts.path_costs.available() {
        Some(_) => {
            let p = host.provenance.iter().find(|p| p.figure == "kernel.syscall").unwrap();
            if p.origin == Origin::Measured {
                let ns = kernel.syscall.written.ns.expect("a measured figure is in ns");
                assert!((20.0..20_000.0).contains(&ns), "syscall {ns} ns");
            }
            let (zero, anon) = (&kernel.page_fault_zero, &kernel.page_fault_anon);
            assert!(zero.cycles < anon.cycles, "{} vs {}", zero.cycles, anon.cycles);
        }
        None => println!("kernel paths not measured: {:?}", facts.path_costs.reason()),
    }
    if host.spec.guest().is_some() {
        assert!(host.provenance.iter().any(|p| p.figure == "guest.hypervisor"));
    }

    // The TOML is what the spec was parsed from, and parses again on its own.
    let again = tlblab_sim::machine::MachineSpec::from_toml(&host.toml, "reparse").unwrap();
    assert_eq!(again.raw(), host.spec.raw());
    assert_eq!(host.spec.paging_levels(), host.paging_levels);
    assert_eq!(host.spec.name(), "host");
    // Every structure of the preset has a provenance entry, read or fallback.
    for t in &host.spec.raw().tlb {
        assert!(
            host.provenance.iter().any(|p| p.figure == format!("tlb {:?}", t.name)
                && matches!(p.origin, Origin::Read | Origin::Fallback)),
            "no provenance for {:?}",
            t.name
        );
    }

    // A few thousand accesses of every built-in workload through the host machine (but the PCID
    // workload without PCID, where it faults as on hardware).
    let pcid = host.spec.raw().features.pcid;
    for w in Workload::ALL.into_iter().filter(|&w| pcid || w != Workload::CtxSwitchPcid) {
        let mut system = System::new(&host.spec);
        let mut generator = w.generator(5_000, 1);
        let mut batch = Vec::new();
        while generator.fill(&mut batch, 1024) {
            system.apply_all(&batch).unwrap_or_else(|e| panic!("{}: {e}", w.name()));
        }
        let total = system.total();
        assert_eq!(total.total_accesses(), 5_000, "{}", w.name());
        println!("{}: {} walks", w.name(), total.total_walks());
    }
}

#[test]
fn host_spec_agrees_with_build_of_gathered_facts() {
    // Two readings of the same machine give the same preset (the facts are stable).
    match (host_spec(), tlblab_host::build(&HostFacts::gather())) {
        (Ok(a), Ok(b)) => assert_eq!(a.spec.raw().tlb, b.spec.raw().tlb),
        (Err(e), _) | (_, Err(e)) => eprintln!("skipped: {e}"),
    }
}
