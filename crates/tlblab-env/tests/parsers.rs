//! Parsers against fixture files: values checked are the ones in the files.

use std::collections::BTreeMap;
use tlblab_env::cpuinfo::{parse_bracketed_choice, pti_enabled};
use tlblab_env::vulnerabilities::parse_vulnerability_listing;
use tlblab_env::{
    parse_cpuinfo, parse_interrupts, parse_vmstat, Error, InterruptDelta, Source, TlbCpuFlags,
    TlbFlushCounters,
};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn this_machines_interrupts_tlb_and_cal_rows() {
    let s = parse_interrupts(&fixture("interrupts-kvm-2cpu.txt")).unwrap();
    assert_eq!(s.cpus, vec![0, 1]);
    assert_eq!(s.tlb(), Some(&[1_141_771, 1_700_656][..]));
    assert_eq!(s.cal(), Some(&[1_494_832, 4_669_865][..]));
    assert_eq!(s.row("TLB").unwrap().description, "TLB shootdowns");
    assert_eq!(s.rows.len(), 35, "every non-header line is a row");
}

#[test]
fn numbered_and_short_rows() {
    let s = parse_interrupts(&fixture("interrupts-kvm-2cpu.txt")).unwrap();
    let r36 = s.row("36").unwrap();
    assert_eq!(r36.counts, vec![0, 448_924]);
    assert_eq!(r36.description, "PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0");
    assert_eq!(r36.line, 13);
    let err = s.row("ERR").unwrap();
    assert_eq!((err.counts.as_slice(), err.description.as_str()), (&[0][..], ""));
    assert_eq!(err.line, 32);
}

#[test]
fn four_cpus_without_tlb_row() {
    let s = parse_interrupts(&fixture("interrupts-arm64-4cpu-no-tlb.txt")).unwrap();
    assert_eq!(s.cpus, vec![0, 1, 2, 3]);
    assert_eq!(s.tlb(), None);
    assert_eq!(s.row("IPI1").unwrap().counts, vec![612, 590, 633, 601]);
    assert_eq!(s.row("Err").unwrap().counts, vec![0]);
    // "GICv3  27 Level": the 27 is part of the description, not a fifth count.
    assert_eq!(s.row("11").unwrap().description, "GICv3 27 Level arch_timer");
    let d = InterruptDelta::between(&s, &s).unwrap();
    assert!(d.tlb.reason().unwrap().contains("no TLB row"), "{:?}", d.tlb);
    assert!(!d.cal.is_available());
}

#[test]
fn tlb_delta_per_cpu_and_total() {
    let before = parse_interrupts(&fixture("interrupts-kvm-2cpu.txt")).unwrap();
    let after_text = fixture("interrupts-kvm-2cpu.txt")
        .replace("TLB:    1141771    1700656", "TLB:    1141771    1700700")
        .replace("CAL:    1494832    4669865", "CAL:    1494900    4669865");
    let after = parse_interrupts(&after_text).unwrap();
    let d = InterruptDelta::between(&before, &after).unwrap();
    let tlb = d.tlb.available().unwrap();
    assert_eq!((tlb.per_cpu.clone(), tlb.total), (vec![0, 44], 44));
    let cal = d.cal.available().unwrap();
    assert_eq!((cal.per_cpu.clone(), cal.total), (vec![68, 0], 68));
}

#[test]
fn backwards_counter_is_an_error_naming_row_and_cpu() {
    let a = parse_interrupts("  CPU0 CPU1\nTLB: 5 7 TLB shootdowns\n").unwrap();
    let b = parse_interrupts("  CPU0 CPU1\nTLB: 5 6 TLB shootdowns\n").unwrap();
    let e = InterruptDelta::between(&a, &b).unwrap_err();
    assert!(matches!(e, Error::CounterWentBackwards { before: 7, after: 6, .. }));
    assert!(e.to_string().contains("TLB on CPU1"), "{e}");
}

#[test]
fn cpu_hotplug_between_snapshots_is_an_error() {
    let a = parse_interrupts("  CPU0 CPU1\nTLB: 5 7 x\n").unwrap();
    let b = parse_interrupts("  CPU0 CPU2\nTLB: 5 7 x\n").unwrap();
    let e = InterruptDelta::between(&a, &b).unwrap_err();
    assert!(matches!(e, Error::CpusChanged { .. }), "{e}");
}

#[test]
fn short_tlb_row_error_names_its_line() {
    let a = parse_interrupts("  CPU0 CPU1\nLOC: 1 2 timer\nTLB: 5 TLB shootdowns\n").unwrap();
    let e = InterruptDelta::between(&a, &a).unwrap_err();
    assert!(e.to_string().contains("line 3"), "{e}");
}

#[test]
fn malformed_interrupts_name_the_line() {
    let e = parse_interrupts("  CPU0\n 0: 1 timer\nno colon here\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 3, .. }), "{e}");
    let e = parse_interrupts("  CPU0 bogus\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 1, .. }), "{e}");
    assert!(parse_interrupts("").is_err());
}

#[test]
fn this_machines_cpuinfo() {
    let c = parse_cpuinfo(&fixture("cpuinfo-kvm-xeon-2cpu.txt"));
    assert_eq!(c.model_name.as_deref(), Some("Intel(R) Xeon(R) Processor"));
    assert_eq!(c.processors, 2);
    let flags = c.flags.unwrap();
    assert!(flags.contains("hypervisor"));
    let f = TlbCpuFlags::from_flags(&flags);
    assert_eq!(
        f,
        TlbCpuFlags {
            pcid: true,
            invpcid: true,
            la57: false,
            invlpgb: false,
            pge: true,
            pse: true,
            pti: false
        }
    );
}

#[test]
fn amd_cpuinfo_with_invlpgb() {
    let c = parse_cpuinfo(&fixture("cpuinfo-amd-epyc-invlpgb.txt"));
    assert_eq!(c.model_name.as_deref(), Some("AMD EPYC 7763 64-Core Processor"));
    assert_eq!(c.processors, 2);
    let flags = c.flags.unwrap();
    let f = TlbCpuFlags::from_flags(&flags);
    assert!(f.invlpgb && f.pcid && f.invpcid && !f.pti);
    assert!(!flags.contains("hypervisor") && flags.contains("monitor"));
    // "invpcid_single" must not be mistaken for anything else: flags are whole words.
    assert!(flags.contains("invpcid_single"));
}

#[test]
fn pti_from_flag_or_meltdown_file() {
    let pti_cpu = parse_cpuinfo(&fixture("cpuinfo-intel-pti.txt")).flags.unwrap();
    let f = TlbCpuFlags::from_flags(&pti_cpu);
    assert!(f.pti && f.pcid && !f.invpcid);
    assert_eq!(pti_enabled(Some(&pti_cpu), None), Some(true));
    let this = parse_cpuinfo(&fixture("cpuinfo-kvm-xeon-2cpu.txt")).flags.unwrap();
    assert_eq!(pti_enabled(Some(&this), Some("Not affected")), Some(false));
    assert_eq!(pti_enabled(None, Some("Mitigation: PTI\n")), Some(true));
    assert_eq!(pti_enabled(None, None), None);
}

#[test]
fn this_machines_vulnerabilities() {
    let v = parse_vulnerability_listing(&fixture("vulnerabilities-kvm-xeon.txt")).unwrap();
    assert_eq!(v.len(), 19);
    assert_eq!(v["meltdown"], "Not affected");
    assert_eq!(v["retbleed"], "Vulnerable");
    assert_eq!(
        v["spectre_v2"],
        "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Retpoline"
    );
    let e = parse_vulnerability_listing("meltdown:Not affected\ngarbage\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 2, .. }), "{e}");
}

#[test]
fn vmstat_without_debug_tlbflush() {
    let m = parse_vmstat(&fixture("vmstat-kvm-no-debug-tlbflush.txt")).unwrap();
    assert_eq!(m.len(), 192);
    assert_eq!(m["pgfault"], 315_785_230);
    assert_eq!(
        TlbFlushCounters::from_vmstat(&m),
        Source::unavailable("not available: kernel built without CONFIG_DEBUG_TLBFLUSH")
    );
}

#[test]
fn vmstat_with_debug_tlbflush_and_delta() {
    let m = parse_vmstat(&fixture("vmstat-debug-tlbflush-excerpt.txt")).unwrap();
    let before = TlbFlushCounters::from_vmstat(&m).available().copied().unwrap();
    assert_eq!(
        before,
        TlbFlushCounters {
            remote_flush: 54_321,
            remote_flush_received: 98_760,
            local_flush_all: 4_567,
            local_flush_one: 890_123
        }
    );
    let after = TlbFlushCounters { remote_flush: 54_400, ..before };
    let d = TlbFlushCounters::delta(&before, &after).unwrap();
    assert_eq!(d, TlbFlushCounters { remote_flush: 79, ..TlbFlushCounters::default() });
    let e = TlbFlushCounters::delta(&after, &before).unwrap_err();
    assert!(e.to_string().contains("nr_tlb_remote_flush went backwards"), "{e}");
}

#[test]
fn vmstat_partial_and_malformed() {
    let m: BTreeMap<String, u64> = parse_vmstat("nr_tlb_remote_flush 3\n").unwrap();
    let s = TlbFlushCounters::from_vmstat(&m);
    assert!(s.reason().unwrap().contains("nr_tlb_local_flush_one"), "{s:?}");
    let e = parse_vmstat("pgfault 1\npgmajfault x\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 2, .. }), "{e}");
    let e = parse_vmstat("pgfault 1 2\n").unwrap_err();
    assert!(matches!(e, Error::Parse { line: 1, .. }), "{e}");
}

#[test]
fn thp_bracketed_choice() {
    assert_eq!(parse_bracketed_choice("always [madvise] never\n").unwrap(), "madvise");
    assert_eq!(
        parse_bracketed_choice("always defer defer+madvise [madvise] never").unwrap(),
        "madvise"
    );
    assert_eq!(parse_bracketed_choice("[always] madvise never").unwrap(), "always");
    assert!(parse_bracketed_choice("always madvise never").is_err());
    assert!(parse_bracketed_choice("always [madvise").is_err());
}
