//! `Environment::differences` and serde, on hand-built environments.

use std::collections::BTreeMap;
use tlblab_env::{parse_id_list, Environment, Hypervisor, KvmPvTlbFlush, Source, TlbCpuFlags};

fn sample() -> Environment {
    let mut mitigations = BTreeMap::new();
    mitigations.insert("meltdown".to_owned(), "Not affected".to_owned());
    mitigations.insert("retbleed".to_owned(), "Vulnerable".to_owned());
    Environment {
        tlblab_version: "0.1.0".to_owned(),
        tlblab_commit: "0123456789ab".to_owned(),
        kernel_release: Source::Available("6.18.44".to_owned()),
        kernel_version: Source::Available("#1 SMP PREEMPT_DYNAMIC".to_owned()),
        machine: Source::Available("x86_64".to_owned()),
        kernel_cmdline: Source::Available("console=ttyS0 quiet".to_owned()),
        cpu_model: Source::Available("Intel(R) Xeon(R) Processor".to_owned()),
        cpu_flags: Source::Available(TlbCpuFlags {
            pcid: true,
            invpcid: true,
            la57: false,
            invlpgb: false,
            pge: true,
            pse: true,
            pti: false,
        }),
        pti: Source::Available(false),
        mitigations: Source::Available(mitigations),
        online_cpus: Source::Available(parse_id_list("0-1").unwrap()),
        numa_nodes: Source::Available(parse_id_list("0").unwrap()),
        thp_enabled: Source::Available("madvise".to_owned()),
        thp_defrag: Source::Available("madvise".to_owned()),
        hypervisor: Hypervisor {
            cpuinfo_flag: Source::Available(true),
            sysfs_type: Source::unavailable("/sys/hypervisor/type does not exist"),
            cpuid_vendor: Source::Available("KVMKVMKVM".to_owned()),
        },
        kvm_pv_tlb_flush: Source::Available(KvmPvTlbFlush::decode(0x0100_7efb, 0, false, 2)),
        tlb_single_page_flush_ceiling: Source::unavailable(
            "permission denied reading /sys/kernel/debug/x86/tlb_single_page_flush_ceiling",
        ),
        page_size: Source::Available(4096),
        system_load: tlblab_env::SystemLoad::default(),
    }
}

#[test]
fn identical_environments_have_no_differences() {
    assert_eq!(Environment::differences(&sample(), &sample()), vec![]);
}

#[test]
fn two_changed_fields_give_two_differences() {
    let a = sample();
    let mut b = sample();
    b.kernel_release = Source::Available("6.19.0".to_owned());
    b.cpu_flags = b.cpu_flags.map(|f| TlbCpuFlags { pti: true, ..f });
    let d = Environment::differences(&a, &b);
    assert_eq!(d.len(), 2, "{d:?}");
    assert_eq!(
        (d[0].field.as_str(), d[0].a.as_str(), d[0].b.as_str()),
        ("kernel_release", "6.18.44", "6.19.0")
    );
    assert_eq!(
        (d[1].field.as_str(), d[1].a.as_str(), d[1].b.as_str()),
        ("cpu_flags.pti", "no", "yes")
    );
    assert_eq!(d[0].to_string(), "kernel_release: 6.18.44 vs 6.19.0");
}

#[test]
fn a_mitigation_present_on_one_side_only() {
    let a = sample();
    let mut b = sample();
    if let Source::Available(m) = &mut b.mitigations {
        m.insert("its".to_owned(), "Mitigation: Aligned branch/return thunks".to_owned());
    }
    b.tlb_single_page_flush_ceiling = Source::Available(33);
    let d = Environment::differences(&a, &b);
    let fields: Vec<_> = d.iter().map(|x| x.field.as_str()).collect();
    assert_eq!(fields, ["tlb_single_page_flush_ceiling", "mitigations.its"]);
    assert_eq!(d[1].a, "(absent)");
    assert!(d[0].a.starts_with("unavailable (permission denied"), "{}", d[0].a);
}

#[test]
fn unavailable_group_is_one_field() {
    let a = sample();
    let mut b = sample();
    b.cpu_flags = Source::unavailable("no 'flags' line in /proc/cpuinfo (not x86)");
    let d = Environment::differences(&a, &b);
    // Seven flags on one side, one unavailable field on the other.
    assert_eq!(d.len(), 8, "{d:?}");
    assert!(d.iter().any(|x| x.field == "cpu_flags" && x.a == "(absent)"));
}

#[test]
fn serde_round_trip_and_stable_names() {
    let env = sample();
    let json = serde_json::to_string_pretty(&env).unwrap();
    let back: Environment = serde_json::from_str(&json).unwrap();
    assert_eq!(back, env);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["kernel_release"]["available"], "6.18.44");
    assert_eq!(v["online_cpus"]["available"], "0-1");
    assert_eq!(v["kvm_pv_tlb_flush"]["available"]["offered"], true);
    assert!(v["tlb_single_page_flush_ceiling"]["unavailable"]["reason"]
        .as_str()
        .unwrap()
        .contains("permission denied"));
}
