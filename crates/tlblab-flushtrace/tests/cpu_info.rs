//! The recording machine's CPU in the header: what `/proc/cpuinfo` gives, how older files
//! without it read, and the INVLPGB warning of `trace report` (arch/x86/mm/tlb.c, 6.15+).

use tlblab_flushtrace::summary::{render_table, summarize};
use tlblab_flushtrace::{kernel_version, CpuInfo, Flush, Header, Origin, Record, Trailer};

/// The first processor of an AMD EPYC 9004 (Zen 4) `/proc/cpuinfo`, flags cut to a few, then
/// the start of the second processor (whose flags must not be read).
const AMD_INVLPGB: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9654 96-Core Processor\nflags\t\t: fpu vme pcid sse4_2 invpcid invlpgb rdpru\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu pti\n";

fn amd_header(release: Option<&str>) -> Header {
    let mut h = Header::new(Origin::Recorded);
    h.cpus = vec![0, 1, 2, 3];
    h.kernel_release = release.map(str::to_string);
    h.cpu = CpuInfo::parse(AMD_INVLPGB);
    h
}

#[test]
fn the_first_processor_and_only_the_tlb_flags_are_kept() {
    let c = CpuInfo::parse(AMD_INVLPGB).unwrap();
    assert_eq!(c.vendor, "AuthenticAMD");
    assert_eq!(c.model_name, "AMD EPYC 9654 96-Core Processor");
    assert_eq!((c.family, c.model), (Some(25), Some(17)));
    assert_eq!(c.flags, ["pcid", "invpcid", "invlpgb"], "pti is the second processor's");
    assert!(CpuInfo::parse("processor\t: 0\nflags\t: pcid\n").is_none(), "no vendor_id");
}

#[test]
fn kernel_versions_read_from_uname_r() {
    assert_eq!(kernel_version("6.18.44-fc-v657"), Some((6, 18)));
    assert_eq!(kernel_version("6.15"), Some((6, 15)));
    assert_eq!(kernel_version("5.4.0-150-generic"), Some((5, 4)));
    assert_eq!(kernel_version("unknown"), None);
}

/// broadcast_tlb_flush() and the global ASIDs arrived in 6.15: before it, a CPU with INVLPGB
/// still flushed by IPIs, and the tracepoint saw everything.
#[test]
fn broadcast_flushes_need_the_flag_and_linux_6_15() {
    assert_eq!(amd_header(Some("6.15.0")).broadcast_flush(), Some(true));
    assert_eq!(amd_header(Some("6.18.44")).broadcast_flush(), Some(true));
    assert_eq!(amd_header(Some("6.14.11")).broadcast_flush(), Some(false));
    assert_eq!(amd_header(None).broadcast_flush(), Some(true), "unknown version: possible");
    let mut no_flag = amd_header(Some("6.18.44"));
    no_flag.cpu.as_mut().unwrap().flags.retain(|f| f != "invlpgb");
    assert_eq!(no_flag.broadcast_flush(), Some(false));
    assert_eq!(Header::new(Origin::FtraceText).broadcast_flush(), None, "imports do not say");
}

/// Files written before the CPU was recorded have no `cpu` key: they still read, and a header
/// without one writes none.
#[test]
fn a_header_without_a_cpu_reads_and_writes_as_before() {
    let h = Header::new(Origin::Recorded);
    let json = serde_json::to_string(&h).unwrap();
    assert!(!json.contains("\"cpu\""), "{json}");
    let back: Header = serde_json::from_str(&json).unwrap();
    assert_eq!(back.cpu, None);
    let with = amd_header(Some("6.18.44"));
    let back: Header = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back, with);
}

#[test]
fn trace_report_warns_about_invlpgb_machines_only() {
    let records: Vec<Record> = (0..4u64)
        .map(|i| Record::Flush(Flush { ts_ns: i * 1000, cpu: 0, pid: 7, reason: 3, pages: 1 }))
        .collect();
    let trailer = Trailer { records: 4, ..Trailer::default() };
    let warned = |h: &Header| {
        let s = summarize(h, &records, &trailer, Default::default());
        let text = render_table(&s);
        (s.warnings.iter().any(|w| w.contains("INVLPGB")), text.contains("possible: not traced"))
    };
    assert_eq!(warned(&amd_header(Some("6.18.44"))), (true, true));
    assert_eq!(warned(&amd_header(Some("6.14.0"))), (false, false));
    assert_eq!(warned(&Header::new(Origin::Recorded)), (false, false));
}
