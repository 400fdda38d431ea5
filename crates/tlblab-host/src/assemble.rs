//! [`build`]: from [`HostFacts`] to a checked host preset, with the provenance of every figure.

use crate::cpuid::identity::{self, FeatureBit, Signature, Vendor};
use crate::cpuid::{amd, intel_dat, intel_leaf2, CpuidDump};
use crate::cpuinfo::{self, CpuinfoFacts};
use crate::error::HostError;
use crate::facts::HostFacts;
use crate::nearest::{nearest, Nearest};
use crate::provenance::{Origin, Provenance};
use crate::tlb::{self, TlbSource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Write as _;
use tlblab_env::{hypervisor, parse_id_list, KvmPvTlbFlush};
use tlblab_sim::machine::raw::{
    CyclesFigure, MhzFigure, PscLevel, PscScope, RawCosts, RawFeatures, RawMachine, TlbScope,
};
use tlblab_sim::machine::{builtin, builtin_names, MachineSpec};
use tlblab_sim::stats::OpKind;

/// The preset's name.
pub const HOST_PRESET_NAME: &str = "host";
/// The origin `MachineSpec` errors name.
pub const HOST_ORIGIN: &str = "host preset (built by tlblab-host from this machine)";
/// A `VmallocTotal` above this many KiB (1 PiB) means 5-level paging: the vmalloc area is 32 TiB
/// with 4 levels and 12800 TiB with 5 (Linux Documentation/arch/x86/x86_64/mm.rst).
pub const VMALLOC_5LEVEL_KIB: u64 = 1 << 40;

/// A machine preset for this host.
#[derive(Clone, Debug)]
pub struct HostPreset {
    /// The checked preset, usable wherever a built-in one is; its paging depth is already set to
    /// [`HostPreset::paging_levels`].
    pub spec: MachineSpec,
    /// The TOML text `spec` was parsed from (provenance in its leading comments). Loading it
    /// with `MachineSpec::from_toml` gives 4-level paging, the preset-file default.
    pub toml: String,
    /// Where every figure came from, in preset order.
    pub provenance: Vec<Provenance>,
    /// Paging levels the running kernel uses (4 or 5).
    pub paging_levels: u8,
    /// Online CPUs, if known (a preset has no CPU count; a run chooses its CPUs).
    pub cpus: Option<usize>,
    /// The built-in preset that costs, latencies and caches not visible in CPUID come from.
    pub nearest: String,
}

impl HostPreset {
    /// The provenance, one entry per line.
    pub fn provenance_text(&self) -> String {
        let mut out = String::new();
        for p in &self.provenance {
            let _ = writeln!(out, "{p}");
        }
        out
    }
}

/// Builds the host preset from facts; touches nothing on the system.
pub fn build(facts: &HostFacts) -> Result<HostPreset, HostError> {
    let mut prov = Vec::new();
    let info = facts.cpuinfo.available().map(|t| cpuinfo::parse(t));
    let empty = CpuidDump::default();
    let dump = facts.cpuid.available().unwrap_or(&empty);
    let id = identify(facts, dump, info.as_ref(), &mut prov)?;
    let preset_name = id.nearest.preset;
    let preset = builtin(preset_name)
        .map_err(|source| HostError::Builtin { name: preset_name.to_owned(), source })?
        .raw()
        .clone();
    prov.push(Provenance::new(
        "nearest preset",
        preset_name,
        Origin::Informative,
        format!(
            "{}; instruction costs, latencies, paging-structure caches and walkers, which CPUID \
             does not give and which cannot be measured without a PMU, and the kernel-path costs \
             not measured here, are copied from it",
            id.nearest.explain(&id.vendor, id.sig)
        ),
    ));
    let cpus = count_cpus(facts, info.as_ref(), &mut prov);
    let virtualised = hypervisor_facts(facts, dump, info.as_ref(), &mut prov);
    let mut feats = features(dump, info.as_ref(), &id.vendor, preset_name, &preset, &mut prov);
    let paging_levels = paging_levels(facts, info.as_ref(), feats.la57, &mut prov);
    informative_facts(facts, dump, info.as_ref(), &mut prov);

    let source = tlb_source(dump, &id.vendor, preset_name, &preset);
    let geometry =
        tlb::assemble(source, preset_name, &preset, virtualised).map_err(HostError::Tlb)?;
    prov.extend(geometry.provenance);

    let copied = format!("copied from preset {preset_name}");
    let mut psc = Vec::new();
    for p in &preset.psc {
        if p.level == PscLevel::Pml5e && !feats.la57 {
            continue;
        }
        let source = format!("{copied} (no CPUID leaf gives it): {}", p.source);
        prov.push(Provenance::new(
            format!("psc {}", psc_name(p.level)),
            tlb::geometry_text(p.entries, p.ways),
            Origin::Copied,
            source.clone(),
        ));
        psc.push(tlblab_sim::machine::raw::RawPsc { source, unverified: true, ..p.clone() });
    }
    let latency = relabel(&preset.latency, &copied, "latency", &mut prov)?;
    let mut cost = costs(&preset, preset_name, &id.vendor, &feats, &mut prov)?;
    let mut derivation = None;
    let mut cache = String::new();
    let kernel = match &preset.kernel {
        Some(k) => {
            let mut copy = relabel(k, &copied, "kernel", &mut prov)?;
            copy.clock = clock(facts, dump, info.as_ref(), &copy.clock, preset_name, &mut prov);
            (derivation, cache) = measured_kernel(
                facts,
                k,
                &mut copy,
                (&mut cost, &mut feats.raw),
                virtualised,
                &mut prov,
            );
            Some(copy)
        }
        None => None,
    };
    let mhz = kernel.as_ref().map_or(0, |k| k.clock.mhz);
    let mut guest = if kernel.is_some() {
        crate::guest::section(facts, dump, derivation.as_ref(), mhz, &cache, &mut prov)
    } else {
        None
    };
    if let Some(g) = guest.as_mut() {
        g.nested = crate::guest::nested(id.vendor.is_amd_like(), &mut prov);
    }
    let mitigations = kernel
        .as_ref()
        .and_then(|k| crate::mitigations::section(facts, k, derivation.as_ref(), &mut prov));
    let raw = RawMachine {
        name: HOST_PRESET_NAME.to_owned(),
        description: description(&id, cpus, virtualised, preset_name, derivation.is_some()),
        vendor: if id.vendor.is_amd_like() { "amd" } else { "intel" }.to_owned(),
        replacement: preset.replacement,
        features: feats.raw,
        tlb: geometry.tlbs,
        psc,
        latency,
        cost,
        kernel,
        idle: guest_idle(
            guest.as_ref(),
            derivation.as_ref().and_then(|d| d.halt_wake.as_ref()),
            (crate::guest::haltpoll(facts), facts.cpuidle_driver.available().map(String::as_str)),
            &mut prov,
        )
        .or_else(|| {
            preset.idle.clone().map(|idle| {
                let source = format!("copied from preset {preset_name}: {}", idle.source);
                prov.push(Provenance::new(
                    "idle",
                    format!("{} states", idle.states.len()),
                    Origin::Copied,
                    &source,
                ));
                tlblab_sim::machine::raw::RawIdle { source, unverified: true, ..idle }
            })
        }),
        guest,
        mitigations,
        // One socket assumed: the host's package count is not probed.
        topology: None,
        // Neither is probed on the host: RAR has no CPUID bit Linux reports yet, and the lock
        // hold times are not measured by `tlblab host`.
        rar: None,
        locks: None,
    };
    let body = toml::to_string(&raw).map_err(|e| HostError::Serialize(e.to_string()))?;
    let mut text = String::new();
    let _ = writeln!(text, "# Host preset built by tlblab-host from the machine it ran on.");
    let _ = writeln!(text, "# Provenance of every figure ([read] this machine, [copied]/[fallback] preset {preset_name}):");
    for p in &prov {
        let _ = writeln!(text, "# {}", p.to_string().replace('\n', " "));
    }
    text.push_str(&body);
    let spec = MachineSpec::from_toml(&text, HOST_ORIGIN)
        .and_then(|s| s.with_paging_levels(paging_levels))
        .map_err(|error| HostError::Invalid { error, toml: text.clone() })?;
    Ok(HostPreset {
        spec,
        toml: text,
        provenance: prov,
        paging_levels,
        cpus,
        nearest: preset_name.to_owned(),
    })
}

struct Identity {
    vendor: Vendor,
    sig: Signature,
    model_name: Option<String>,
    nearest: Nearest,
}

fn identify(
    facts: &HostFacts,
    dump: &CpuidDump,
    info: Option<&CpuinfoFacts>,
    prov: &mut Vec<Provenance>,
) -> Result<Identity, HostError> {
    let from_cpuid = identity::vendor_signature(dump).filter(|s| !s.trim().is_empty());
    let from_info = info.and_then(|i| i.vendor_id.clone());
    let (vendor, source) = match (from_cpuid, from_info) {
        (Some(v), _) => (v, "CPUID leaf 0 (EBX, EDX, ECX)"),
        (None, Some(v)) => (v, "/proc/cpuinfo vendor_id"),
        (None, None) => {
            return Err(HostError::NotX86 {
                cpuid: facts.cpuid.reason().unwrap_or("no leaf 0").to_owned(),
                cpuinfo: facts.cpuinfo.reason().unwrap_or("no vendor_id line").to_owned(),
            })
        }
    };
    prov.push(Provenance::new("vendor", &vendor, Origin::Read, source));
    let vendor = Vendor::from_signature(&vendor);
    let info_sig = info.and_then(|i| {
        Some(Signature { family: i.family?, model: i.model?, stepping: i.stepping.unwrap_or(0) })
    });
    let (sig, source) = match (dump.leaf(1, 0), info_sig) {
        (Some(r), other) => {
            let mut sig = Signature::from_leaf1_eax(r.eax);
            let mut s = format!("CPUID leaf 1 EAX = {:#010x}", r.eax);
            // Every AMD x86-64 CPU is family 0xF or later; a lower family in leaf 1 is a
            // hypervisor's mask (Firecracker's T2A template reports Intel Haswell's 6/0x3F).
            // AMD repeats the signature in 0x8000_0001 EAX.
            if vendor.is_amd_like() && sig.family < 0xF {
                if let Some(e) = dump.leaf(0x8000_0001, 0).filter(|e| e.eax != 0) {
                    sig = Signature::from_leaf1_eax(e.eax);
                    s = format!(
                        "CPUID 0x80000001 EAX = {:#010x}: leaf 1 EAX = {:#010x} says family \
                         {:#x}, impossible for an AMD x86-64 CPU (a hypervisor's mask)",
                        e.eax,
                        r.eax,
                        Signature::from_leaf1_eax(r.eax).family
                    );
                }
            }
            match other {
                Some(o) if o == sig => s.push_str("; /proc/cpuinfo agrees"),
                Some(o) => s.push_str(&format!(
                    "; /proc/cpuinfo says family {} model {} stepping {}",
                    o.family, o.model, o.stepping
                )),
                None => {}
            }
            (sig, s)
        }
        (None, Some(o)) => (o, "/proc/cpuinfo cpu family, model, stepping".to_owned()),
        (None, None) => (
            Signature { family: 0, model: 0, stepping: 0 },
            "neither CPUID leaf 1 nor /proc/cpuinfo: unknown".to_owned(),
        ),
    };
    prov.push(Provenance::new(
        "family/model/stepping",
        format!("{:#x} / {:#x} / {}", sig.family, sig.model, sig.stepping),
        Origin::Read,
        source,
    ));
    let model_name = info
        .and_then(|i| i.common.model_name.clone())
        .map(|n| (n, "/proc/cpuinfo model name"))
        .or_else(|| identity::brand_string(dump).map(|n| (n, "CPUID 0x80000002..4 brand string")));
    if let Some((name, source)) = &model_name {
        prov.push(Provenance::new("model name", name, Origin::Informative, *source));
    }
    let nearest = nearest(&vendor, sig)
        .ok_or_else(|| HostError::UnsupportedVendor { vendor: vendor.signature().to_owned() })?;
    Ok(Identity { vendor, sig, model_name: model_name.map(|(n, _)| n), nearest })
}

fn count_cpus(
    facts: &HostFacts,
    info: Option<&CpuinfoFacts>,
    prov: &mut Vec<Provenance>,
) -> Option<usize> {
    let online = facts.online_cpus.available().and_then(|t| parse_id_list(t).ok());
    let (n, source) = match (online, info.map(|i| i.common.processors).filter(|&n| n > 0)) {
        (Some(ids), _) => (ids.len(), format!("{} lists {ids}", crate::facts::ONLINE_PATH)),
        (None, Some(n)) => (n, "processor lines of /proc/cpuinfo".to_owned()),
        (None, None) => {
            prov.push(Provenance::new(
                "cpus",
                "unknown",
                Origin::Informative,
                format!(
                    "{}; no /proc/cpuinfo",
                    facts.online_cpus.reason().unwrap_or("online list unreadable")
                ),
            ));
            return None;
        }
    };
    prov.push(Provenance::new(
        "cpus",
        format!("{n} online"),
        Origin::Informative,
        format!("{source} (not a preset field: a run chooses its CPUs)"),
    ));
    Some(n)
}

/// Records the hypervisor, if any; returns whether there is one.
fn hypervisor_facts(
    facts: &HostFacts,
    dump: &CpuidDump,
    info: Option<&CpuinfoFacts>,
    prov: &mut Vec<Provenance>,
) -> bool {
    let bit = identity::HYPERVISOR.read(dump).or_else(|| info.and_then(|i| i.flag("hypervisor")));
    if bit != Some(true) {
        let source = match bit {
            Some(false) => "CPUID.1:ECX[31] clear (bare metal)",
            _ => "neither CPUID leaf 1 nor the cpuinfo flags were readable: assumed bare metal",
        };
        prov.push(Provenance::new("hypervisor", "none", Origin::Informative, source));
        return false;
    }
    let Some(v) = dump.leaf(crate::cpuid::HYPERVISOR_BASE, 0) else {
        prov.push(Provenance::new(
            "hypervisor",
            "present (vendor unknown)",
            Origin::Informative,
            "CPUID.1:ECX[31] set (or the cpuinfo hypervisor flag); leaf 0x40000000 not read",
        ));
        return true;
    };
    let name = hypervisor::decode_vendor(v.ebx, v.ecx, v.edx);
    prov.push(Provenance::new(
        "hypervisor",
        if name == hypervisor::KVM_SIGNATURE { "KVM".to_owned() } else { name.clone() },
        Origin::Informative,
        format!(
            "CPUID.1:ECX[31] set; leaf 0x40000000 signature {name:?} (decoded by tlblab-env). \
             CPUID figures below are as the hypervisor reports them, hence marked unverified"
        ),
    ));
    if name == hypervisor::KVM_SIGNATURE {
        if let Some(f) = dump.leaf(hypervisor::KVM_CPUID_FEATURES, 0) {
            let mwait = info.and_then(|i| i.flag("monitor")).unwrap_or(false);
            let possible = facts
                .possible_cpus
                .available()
                .and_then(|t| parse_id_list(t).ok())
                .map(|l| l.len());
            let k = KvmPvTlbFlush::decode(f.eax, f.edx, mwait, possible.unwrap_or(0));
            let value = match (k.offered, k.expected_in_use) {
                (true, true) => "offered and in use",
                (true, false) => "offered, not in use",
                (false, _) => "not offered",
            };
            prov.push(Provenance::new(
                "hypervisor.pv_tlb_flush",
                value,
                Origin::Informative,
                format!(
                    "CPUID 0x40000001 EAX = {:#010x} (PV TLB flush bit 9 {}, steal time bit 5 {}), \
                     EDX realtime hint {}, MWAIT {}, possible CPUs {} (tlblab-env \
                     KvmPvTlbFlush). In use, a flush aimed at a preempted vCPU is not an IPI: \
                     the host flushes at the vCPU's next entry. The simulator does not model \
                     this; live IPI counts on this machine undercount shootdowns",
                    f.eax,
                    yes(k.offered),
                    yes(k.steal_time),
                    yes(k.hint_realtime),
                    yes(mwait),
                    possible.map_or("unknown".to_owned(), |n| n.to_string()),
                ),
            ));
        }
    }
    true
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

struct Features {
    raw: RawFeatures,
    la57: bool,
    invpcid: bool,
    invlpgb: bool,
}

/// A feature as the kernel sees it: the cpuinfo flag (the kernel may have cleared a CPUID bit,
/// e.g. `nopcid`), else CPUID, else the preset's value.
fn feature(
    bit: FeatureBit,
    dump: &CpuidDump,
    info: Option<&CpuinfoFacts>,
    preset_value: bool,
    preset_name: &str,
) -> (bool, Origin, String) {
    let cpuid = bit.read(dump);
    match (info.and_then(|i| i.flag(bit.flag)), cpuid) {
        (Some(v), Some(c)) if v == c => {
            (v, Origin::Read, format!("/proc/cpuinfo flag {} and {}", bit.flag, bit.location()))
        }
        (Some(v), Some(c)) => (
            v,
            Origin::Read,
            format!(
                "/proc/cpuinfo flag {} (the kernel's view); {} says {} (the kernel changed it)",
                bit.flag,
                bit.location(),
                yes(c)
            ),
        ),
        (Some(v), None) => (v, Origin::Read, format!("/proc/cpuinfo flag {}", bit.flag)),
        (None, Some(c)) => (c, Origin::Read, bit.location()),
        (None, None) => (
            preset_value,
            Origin::Fallback,
            format!("neither CPUID nor /proc/cpuinfo readable: preset {preset_name}'s value"),
        ),
    }
}

fn features(
    dump: &CpuidDump,
    info: Option<&CpuinfoFacts>,
    vendor: &Vendor,
    preset_name: &str,
    preset: &RawMachine,
    prov: &mut Vec<Provenance>,
) -> Features {
    let pf = &preset.features;
    let mut take = |name: &str, bit: FeatureBit, preset_value: bool| {
        let (v, origin, source) = feature(bit, dump, info, preset_value, preset_name);
        prov.push(Provenance::new(format!("features.{name}"), yes(v), origin, source));
        v
    };
    let pcid = take("pcid", identity::PCID, pf.pcid);
    let invpcid = take("invpcid", identity::INVPCID, pf.invpcid);
    let invlpgb = take("invlpgb", identity::INVLPGB, pf.invlpgb);
    // LA57 here is the capability: CPUID, or the cpuinfo flag (which Linux shows only while it
    // runs 5-level paging, so it implies the capability).
    let la57_cpuid = identity::LA57.read(dump);
    let la57_info = info.and_then(|i| i.flag("la57"));
    let (la57, origin, source) = match (la57_cpuid, la57_info) {
        (None, None) => (
            pf.la57,
            Origin::Fallback,
            format!("neither CPUID nor /proc/cpuinfo readable: preset {preset_name}'s value"),
        ),
        (c, i) => (
            c == Some(true) || i == Some(true),
            Origin::Read,
            format!(
                "{} = {} (the CPU can run 5-level paging); whether the kernel does is \
                 paging_levels below",
                identity::LA57.location(),
                c.map_or("not read", yes)
            ),
        ),
    };
    prov.push(Provenance::new("features.la57", yes(la57), origin, source));
    let invlpgb_count_max = if invlpgb {
        let (n, origin, source) = match identity::invlpgb_count_max(dump) {
            Some(n) => (n, Origin::Read, "CPUID 0x80000008 EDX[15:0] + 1".to_owned()),
            None => (
                pf.invlpgb_count_max.unwrap_or(8),
                Origin::Fallback,
                format!("CPUID 0x80000008 not reported: preset {preset_name}'s value"),
            ),
        };
        prov.push(Provenance::new("features.invlpgb_count_max", n.to_string(), origin, source));
        Some(n)
    } else {
        None
    };
    prov.push(Provenance::new(
        "features.page_walkers",
        pf.page_walkers.to_string(),
        Origin::Copied,
        format!("copied from preset {preset_name} (no CPUID leaf gives it): {}", pf.source),
    ));
    // AMD drops only the address's upper-level entries on INVLPG when EFER.TCE is on; Linux sets
    // it only if the CPU has TCE.
    let tce = info.and_then(|i| i.flag("tce")).or_else(|| identity::TCE.read(dump));
    let (scope, scope_source) = match (vendor.is_amd_like(), pf.invlpg_psc_scope, tce) {
        (true, PscScope::Address, Some(false)) => (
            PscScope::Pcid,
            "no TCE (translation cache extension) flag: without EFER.TCE, INVLPG drops every \
             upper-level entry (AMD APM vol. 2, translation cache extension)"
                .to_owned(),
        ),
        _ => (
            pf.invlpg_psc_scope,
            format!("copied from preset {preset_name}: {}", pf.invlpg_psc_scope_source),
        ),
    };
    prov.push(Provenance::new(
        "features.invlpg_psc_scope",
        match scope {
            PscScope::Pcid => "pcid",
            PscScope::Address => "address",
        },
        if scope == pf.invlpg_psc_scope { Origin::Copied } else { Origin::Read },
        scope_source.clone(),
    ));
    let raw = RawFeatures {
        pcid,
        invpcid,
        invlpgb,
        invlpgb_count_max,
        la57,
        page_walkers: pf.page_walkers,
        invlpg_psc_scope: scope,
        invlpg_psc_scope_source: scope_source,
        // Decided from the measured paths, when there are some (`local_flush::apply`).
        invlpg_tlb_scope: TlbScope::Address,
        invlpg_tlb_scope_source: String::new(),
        source: format!(
            "pcid, invpcid, invlpgb, la57: this machine (/proc/cpuinfo flags and CPUID); \
             page_walkers: copied from preset {preset_name}"
        ),
    };
    Features { raw, la57, invpcid, invlpgb }
}

fn paging_levels(
    facts: &HostFacts,
    info: Option<&CpuinfoFacts>,
    la57: bool,
    prov: &mut Vec<Provenance>,
) -> u8 {
    let by_flag = info.and_then(|i| i.flag("la57")).map(|f| if f { 5u8 } else { 4 });
    let by_vmalloc =
        facts
            .vmalloc_total_kib
            .available()
            .map(|&kib| if kib > VMALLOC_5LEVEL_KIB { 5u8 } else { 4 });
    let config = facts.kernel_config.available();
    let config_levels = config.and_then(|lines| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix("CONFIG_PGTABLE_LEVELS=")?.trim().parse::<u8>().ok())
    });
    let mut evidence = Vec::new();
    if let Some(l) = by_flag {
        evidence.push(format!(
            "/proc/cpuinfo la57 flag {} (Linux shows it only while it runs 5-level paging)",
            if l == 5 { "present" } else { "absent" }
        ));
    }
    if let (Some(l), Some(kib)) = (by_vmalloc, facts.vmalloc_total_kib.available()) {
        evidence.push(format!(
            "/proc/meminfo VmallocTotal {kib} kB ({} TiB: {l}-level layout, \
             Documentation/arch/x86/x86_64/mm.rst)",
            (kib + (1 << 29)) >> 30
        ));
    }
    if let Some(lines) = config {
        if !lines.is_empty() {
            evidence.push(format!("/proc/config.gz: {}", lines.join(", ")));
        }
    }
    let (levels, origin, mut source) = match (by_flag, by_vmalloc, config_levels) {
        (Some(f), _, _) => (f, Origin::Read, evidence.join("; ")),
        (None, Some(v), _) => (v, Origin::Read, evidence.join("; ")),
        (None, None, Some(4)) => (4, Origin::Read, evidence.join("; ")),
        _ => (
            4,
            Origin::Fallback,
            format!(
                "no la57 flag, VmallocTotal or CONFIG_PGTABLE_LEVELS=4 to go by ({}; {}): \
                 4-level assumed, the common case",
                facts.vmalloc_total_kib.reason().unwrap_or("VmallocTotal read"),
                facts.kernel_config.reason().unwrap_or("config read")
            ),
        ),
    };
    if let (Some(f), Some(v)) = (by_flag, by_vmalloc) {
        if f != v {
            source.push_str("; the flag and VmallocTotal disagree: the flag is taken");
        }
    }
    let levels = if levels == 5 && !la57 {
        source.push_str("; but the CPU reports no LA57: 4 taken");
        4
    } else {
        levels
    };
    prov.push(Provenance::new("paging_levels", levels.to_string(), origin, source));
    levels
}

fn informative_facts(
    facts: &HostFacts,
    dump: &CpuidDump,
    info: Option<&CpuinfoFacts>,
    prov: &mut Vec<Provenance>,
) {
    let gb = identity::PDPE1GB.read(dump).or_else(|| info.and_then(|i| i.flag("pdpe1gb")));
    prov.push(Provenance::new(
        "page sizes",
        if gb == Some(true) { "4K, 2M, 1G" } else { "4K, 2M" },
        Origin::Informative,
        format!(
            "4K and 2M in every x86-64 CPU; 1G: {} = {} (the TLB list keeps 1G structures either \
             way: unused pages cost nothing)",
            identity::PDPE1GB.location(),
            gb.map_or("not read", yes)
        ),
    ));
    let pge = identity::PGE.read(dump).or_else(|| info.and_then(|i| i.flag("pge")));
    prov.push(Provenance::new(
        "global pages (PGE)",
        pge.map_or("unknown", yes),
        Origin::Informative,
        format!(
            "{} (not a preset field: the model runs with CR4.PGE=1, as Linux does when PGE \
             exists)",
            identity::PGE.location()
        ),
    ));
    if let Some(pti) = info.and_then(|i| i.flag("pti")) {
        prov.push(Provenance::new(
            "page-table isolation",
            if pti { "on" } else { "off" },
            Origin::Informative,
            "/proc/cpuinfo pti flag (a kernel policy, not a preset field: with PTI each mm has \
             a kernel and a user PCID)",
        ));
    }
    if let Some((virt, phys)) = identity::address_sizes(dump) {
        prov.push(Provenance::new(
            "address sizes",
            format!("{virt}-bit virtual, {phys}-bit physical"),
            Origin::Informative,
            "CPUID 0x80000008 EAX[15:8], EAX[7:0]",
        ));
    }
    if let Some(n) = identity::svm_asids(dump) {
        prov.push(Provenance::new(
            "SVM ASIDs",
            n.to_string(),
            Origin::Informative,
            "CPUID 0x8000000A EBX (not a preset field: the model has no guest ASIDs)",
        ));
    }
    match &facts.caches {
        tlblab_env::Source::Available(caches) => {
            for c in caches {
                let geometry = match (c.ways, c.sets) {
                    (Some(w), Some(s)) => format!(", {w}-way, {s} sets"),
                    _ => String::new(),
                };
                prov.push(Provenance::new(
                    format!("cache {}", c.short_name()),
                    format!("{}{geometry}", c.size),
                    Origin::Informative,
                    format!(
                        "{}/{} (not a preset field: the model charges fixed walk latencies)",
                        crate::facts::CACHE_DIR,
                        c.index
                    ),
                ));
            }
        }
        tlblab_env::Source::Unavailable { reason } => {
            prov.push(Provenance::new("caches", "unknown", Origin::Informative, reason))
        }
    }
}

/// The TLB source: Intel leaf 0x18, else leaf 2; AMD's extended leaves.
fn tlb_source<'a>(
    dump: &CpuidDump,
    vendor: &Vendor,
    preset_name: &str,
    preset: &RawMachine,
) -> TlbSource<'a> {
    if vendor.is_amd_like() {
        return TlbSource {
            name: "CPUID 0x80000005/0x80000006/0x80000019",
            report: amd::decode(dump, preset_name, preset),
        };
    }
    match intel_dat::decode(dump) {
        Ok(report) => TlbSource { name: "CPUID leaf 0x18", report: Ok(report) },
        Err(why18) => match intel_leaf2::decode(dump) {
            Ok(mut report) => {
                report.notes.insert(0, format!("{why18}: TLBs from the legacy leaf 2"));
                TlbSource { name: "CPUID leaf 2", report: Ok(report) }
            }
            Err(why2) => TlbSource {
                name: "CPUID leaves 0x18 and 2",
                report: Err(format!("{why18}; {why2}")),
            },
        },
    }
}

fn psc_name(level: PscLevel) -> &'static str {
    match level {
        PscLevel::Pml5e => "pml5e",
        PscLevel::Pml4e => "pml4e",
        PscLevel::Pdpte => "pdpte",
        PscLevel::Pde => "pde",
    }
}

/// A copy of a preset section in which every figure's source says where it was copied from and is
/// marked unverified (it describes another CPU), with one provenance entry per figure (in key
/// order).
fn relabel<T: Serialize + DeserializeOwned>(
    section: &T,
    copied: &str,
    group: &str,
    prov: &mut Vec<Provenance>,
) -> Result<T, HostError> {
    let bad = |e: &dyn std::fmt::Display| HostError::Serialize(format!("[{group}]: {e}"));
    let mut table = toml::Table::try_from(section).map_err(|e| bad(&e))?;
    for (key, value) in table.iter_mut() {
        let Some(figure) = value.as_table_mut() else { continue };
        let old = figure.get("source").and_then(|s| s.as_str()).unwrap_or("").to_owned();
        let source = format!("{copied}: {old}");
        figure.insert("source".into(), toml::Value::String(source.clone()));
        figure.insert("unverified".into(), toml::Value::Boolean(true));
        let value = match (figure.get("cycles"), figure.get("mhz"), figure.get("ns")) {
            (Some(c), _, _) => format!("{c} cycles"),
            (None, Some(m), _) => format!("{m} MHz"),
            (None, None, Some(ns)) => format!(
                "{ns} ns at {} MHz, scales with {}",
                figure.get("at_mhz").map_or("?".to_owned(), |m| m.to_string()),
                figure.get("scales").and_then(|s| s.as_str()).unwrap_or("?")
            ),
            _ => continue,
        };
        prov.push(Provenance::new(format!("{group}.{key}"), value, Origin::Copied, source));
    }
    toml::Value::Table(table).try_into().map_err(|e| bad(&e))
}

fn costs(
    preset: &RawMachine,
    preset_name: &str,
    vendor: &Vendor,
    feats: &Features,
    prov: &mut Vec<Provenance>,
) -> Result<RawCosts, HostError> {
    let mut cost =
        relabel(&preset.cost, &format!("copied from preset {preset_name}"), "cost", prov)?;
    let wanted = |kind: OpKind| match kind {
        OpKind::InvpcidIndivAddr
        | OpKind::InvpcidSingleCtxt
        | OpKind::InvpcidAllInclGlobal
        | OpKind::InvpcidAllNonGlobal => feats.invpcid,
        OpKind::Invlpgb | OpKind::Tlbsync => feats.invlpgb,
        _ => true,
    };
    for kind in OpKind::ALL {
        // INVLPG and the MOVs are in every preset; only the instruction-dependent costs vary.
        let Some(slot) = optional_cost(&mut cost, kind) else { continue };
        match (wanted(kind), slot.is_some()) {
            (false, true) => {
                *slot = None;
                prov.retain(|p| p.figure != format!("cost.{}", kind.name()));
            }
            (true, false) => {
                let (name, figure) = borrowed_cost(kind, vendor)
                    .ok_or_else(|| HostError::MissingCost { op: kind.name().to_owned() })?;
                let source = format!(
                    "preset {preset_name} lacks it (its CPU lacks the instruction): copied from \
                     preset {name}: {}",
                    figure.source
                );
                prov.push(Provenance::new(
                    format!("cost.{}", kind.name()),
                    format!("{} cycles", figure.cycles),
                    Origin::Fallback,
                    source.clone(),
                ));
                *slot = Some(CyclesFigure { cycles: figure.cycles, source, unverified: true });
            }
            _ => {}
        }
    }
    Ok(cost)
}

/// The cost field of an instruction a CPU may lack; `None` for those every CPU has.
fn optional_cost(cost: &mut RawCosts, kind: OpKind) -> Option<&mut Option<CyclesFigure>> {
    match kind {
        OpKind::InvpcidIndivAddr => Some(&mut cost.invpcid_indiv_addr),
        OpKind::InvpcidSingleCtxt => Some(&mut cost.invpcid_single_ctxt),
        OpKind::InvpcidAllInclGlobal => Some(&mut cost.invpcid_all_incl_global),
        OpKind::InvpcidAllNonGlobal => Some(&mut cost.invpcid_all_non_global),
        OpKind::Invlpgb => Some(&mut cost.invlpgb),
        OpKind::Tlbsync => Some(&mut cost.tlbsync),
        OpKind::Invlpg | OpKind::MovCr3 | OpKind::MovCr3Noflush | OpKind::MovCr4 => None,
    }
}

/// The cost of `kind` from the first built-in preset that has it, same vendor first.
fn borrowed_cost(kind: OpKind, vendor: &Vendor) -> Option<(String, CyclesFigure)> {
    let vendor = if vendor.is_amd_like() { "amd" } else { "intel" };
    let mut names: Vec<&str> = builtin_names().collect();
    let specs: Vec<(String, RawMachine)> = names
        .drain(..)
        .filter_map(|n| builtin(n).ok().map(|s| (n.to_owned(), s.raw().clone())))
        .collect();
    let pick = |same: bool| {
        specs.iter().find_map(|(n, raw)| {
            ((raw.vendor == vendor) == same)
                .then(|| raw.cost.for_op(kind).map(|c| (n.clone(), c.clone())))
                .flatten()
        })
    };
    pick(true).or_else(|| pick(false))
}

fn clock(
    facts: &HostFacts,
    dump: &CpuidDump,
    info: Option<&CpuinfoFacts>,
    preset_clock: &MhzFigure,
    preset_name: &str,
    prov: &mut Vec<Provenance>,
) -> MhzFigure {
    let (mhz, origin, source) = if let Some(&khz) = facts.cpufreq_base_khz.available() {
        (khz / 1000, Origin::Read, format!("{} = {khz} kHz", crate::facts::BASE_FREQUENCY_PATH))
    } else if let Some(mhz) = identity::base_mhz(dump) {
        (u64::from(mhz), Origin::Read, "CPUID leaf 0x16 EAX (processor base frequency)".to_owned())
    } else if let Some(mhz) = info.and_then(|i| i.mhz).filter(|m| *m >= 1.0) {
        (
            mhz.round() as u64,
            Origin::Read,
            format!(
                "/proc/cpuinfo cpu MHz = {mhz} (no cpufreq base_frequency: {}; no CPUID leaf \
                 0x16 figure). The kernel's last reading: under KVM the TSC frequency, on bare \
                 metal whatever the core ran at",
                facts.cpufreq_base_khz.reason().unwrap_or("unreadable")
            ),
        )
    } else {
        (
            preset_clock.mhz,
            Origin::Fallback,
            format!("no frequency readable: preset {preset_name}'s clock"),
        )
    };
    prov.retain(|p| p.figure != "kernel.clock");
    prov.push(Provenance::new("kernel.clock", format!("{mhz} MHz"), origin, source.clone()));
    MhzFigure { mhz, source, unverified: origin != Origin::Read }
}

/// Replaces `copy`'s figures (the nearest preset's, `preset`) with those measured on this
/// machine, when they were; returns the derivation and the cache's description (empty when
/// nothing was measured).
fn measured_kernel(
    facts: &HostFacts,
    preset: &tlblab_sim::machine::raw::RawKernel,
    copy: &mut tlblab_sim::machine::raw::RawKernel,
    (cost, features): (&mut RawCosts, &mut RawFeatures),
    virtualised: bool,
    prov: &mut Vec<Provenance>,
) -> (Option<crate::kernel_costs::Derivation>, String) {
    let Some(cached) = facts.path_costs.available() else {
        let why = facts.path_costs.reason().unwrap_or("not measured");
        prov.push(Provenance::new(
            "kernel paths",
            "copied",
            Origin::Informative,
            format!("kernel-path costs not measured here ({why}): all copied from the preset"),
        ));
        return (None, String::new());
    };
    let cache = crate::kernel_costs::cache_text(cached);
    prov.push(Provenance::new(
        "kernel paths",
        "measured",
        Origin::Informative,
        format!("tlblab-pathcost: {cache}"),
    ));
    // The local flush first, from the same paths: the kernel figures below subtract it. Its
    // pieces, INVLPG's cost and reach, and after them the kernel's refill.
    crate::local_flush::apply_full_flush(cached, copy, cost, prov);
    let mhz = copy.clock.mhz;
    crate::local_flush::apply(&cached.costs, &cache, mhz, &mut cost.invlpg, features, prov);
    let mut flush = crate::kernel_costs::local_flush(copy, cost.invlpg.cycles);
    let ns = |cycles: u64| cycles as f64 * 1000.0 / copy.clock.mhz.max(1) as f64;
    flush.refill = crate::local_flush::refill(
        &cached.costs,
        features.invlpg_tlb_scope,
        ns(cost.invlpg.cycles),
        ns(cost.mov_cr3.cycles),
    );
    let d = crate::kernel_costs::derive(&cached.costs, preset, virtualised, &flush);
    crate::kernel_costs::apply(copy, &d, cached, prov);
    (Some(d), cache)
}

fn description(
    id: &Identity,
    cpus: Option<usize>,
    virtualised: bool,
    preset_name: &str,
    measured: bool,
) -> String {
    let name = id.model_name.clone().unwrap_or_else(|| id.vendor.signature().to_owned());
    let cpus = cpus.map_or(String::new(), |n| format!(", {n} CPUs"));
    let guest = if virtualised { ", virtual machine" } else { "" };
    let costs = if measured {
        format!("kernel-path costs measured here, other costs from preset {preset_name}")
    } else {
        format!("costs from preset {preset_name}")
    };
    format!(
        "This machine: {name} (family {:#x} model {:#x} stepping {}{cpus}{guest}); TLBs from \
         CPUID where given, {costs}",
        id.sig.family, id.sig.model, id.sig.stepping
    )
}

/// A guest's idle states follow from how its vCPUs wait, not from the host CPU's C-states:
/// with `idle=poll` only polling; with HLT (or `haltpoll`) one state, the halted vCPU, whose
/// exit latency is the measured halt wake-up (`halt_wake`, kernel_costs.rs), or else at least
/// one exit round trip (a lower bound), with acpi_idle's target residency rule (twice the
/// latency). Under the haltpoll driver its governor's parameters, when read (`haltpoll`),
/// decide how long a vCPU polls before it halts; with no cpuidle driver (`driver` = `none`)
/// a vCPU halts at once, with no governor and no polling state.
fn guest_idle(
    guest: Option<&tlblab_sim::machine::raw::RawGuest>,
    halt_wake: Option<&Result<crate::kernel_costs::Derived, String>>,
    (haltpoll, driver): (Result<tlblab_sim::machine::raw::RawHaltpoll, String>, Option<&str>),
    prov: &mut Vec<Provenance>,
) -> Option<tlblab_sim::machine::raw::RawIdle> {
    use tlblab_sim::machine::raw::{GuestIdle, RawIdle, RawIdleState};
    let g = guest?;
    let how = g.idle.as_ref()?;
    let (states, source) = match how.value {
        GuestIdle::Poll => {
            (Vec::new(), format!("a guest with idle=poll: its vCPUs only poll ({})", how.source))
        }
        GuestIdle::Halt | GuestIdle::Haltpoll => {
            let exit = g.vm_exit.as_ref()?;
            let (ns, wake) = match halt_wake {
                Some(Ok(d)) => (d.ns.round() as u64, format!("measured here, {}", d.how)),
                other => {
                    let ns = exit.written.ns.unwrap_or(0.0).round() as u64;
                    let why = match other {
                        Some(Err(e)) => format!(" (the halt wake-up was not derived: {e})"),
                        _ => String::new(),
                    };
                    (
                        ns,
                        format!(
                            "at least an exit round trip, guest.vm_exit = {ns} ns (a lower \
                             bound: the host's wake-up of the vCPU comes on top){why}"
                        ),
                    )
                }
            };
            let state = RawIdleState {
                name: "HLT".into(),
                exit_latency_ns: ns,
                target_residency_ns: 2 * ns,
                tlb_flushed: false,
            };
            let source = format!(
                "a guest whose idle vCPUs halt ({}): waking one takes {ns} ns, {wake}; target \
                 residency twice that, as acpi_idle sets it",
                how.source
            );
            (vec![state], source)
        }
    };
    prov.push(Provenance::new("idle", format!("{} states", states.len()), Origin::Read, &source));
    let haltpoll = match (how.value, haltpoll) {
        (GuestIdle::Haltpoll, Ok(h)) => {
            prov.push(Provenance::new(
                "idle.haltpoll",
                format!("guest_halt_poll_ns = {}", h.guest_halt_poll_ns),
                Origin::Read,
                &h.source,
            ));
            Some(h)
        }
        (GuestIdle::Haltpoll, Err(why)) => {
            let source = format!("the haltpoll governor's parameters unread ({why}): menu decides");
            prov.push(Provenance::new("idle.haltpoll", "none", Origin::Read, &source));
            None
        }
        _ => None,
    };
    // No cpuidle driver: default_idle() halts at once, never polling.
    let cpuidle = !(how.value == GuestIdle::Halt && driver == Some("none"));
    if !cpuidle {
        let source = format!(
            "{} = \"none\": do_idle() calls default_idle_call(), which halts \
             at once (no governor, no POLL state)",
            crate::facts::CPUIDLE_DRIVER_PATH
        );
        prov.push(Provenance::new("idle.cpuidle", "no", Origin::Read, &source));
    }
    Some(RawIdle { states, source, unverified: true, haltpoll, cpuidle })
}
