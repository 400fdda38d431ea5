//! The `[guest]` section of the host preset: what a virtual machine sees of its hypervisor
//! (CPUID's hypervisor leaves, the idle driver, the command line) and its measured VM-exit and
//! IPI round trips.

use crate::cpuid::{identity, CpuidDump, HYPERVISOR_BASE};
use crate::facts::{HostFacts, StealSample, CMDLINE_PATH, CPUIDLE_DRIVER_PATH, PROC_STAT_PATH};
use crate::kernel_costs::{figure_of, Derivation, Derived};
use crate::provenance::{Origin, Provenance};
use tlblab_env::hypervisor;
use tlblab_sim::machine::nested::RawNested;
use tlblab_sim::machine::raw::{
    GuestFact, GuestIdle, KernelFigure, Ratio, RawGuest, RawHaltpoll, Scales, WrittenCost,
    MAX_OVERCOMMIT,
};

/// KVM feature bits of CPUID 0x4000_0001 EAX (Linux UAPI `asm/kvm_para.h`).
const KVM_FEATURE_STEAL_TIME: u32 = hypervisor::KVM_FEATURE_STEAL_TIME;
const KVM_FEATURE_PV_TLB_FLUSH: u32 = hypervisor::KVM_FEATURE_PV_TLB_FLUSH;
const KVM_FEATURE_PV_SEND_IPI: u32 = 11;

/// The section, or `None` on bare metal (or when no hypervisor bit is readable).
pub(crate) fn section(
    facts: &HostFacts,
    dump: &CpuidDump,
    derivation: Option<&Derivation>,
    mhz: u64,
    cache: &str,
    prov: &mut Vec<Provenance>,
) -> Option<RawGuest> {
    if identity::HYPERVISOR.read(dump) != Some(true) {
        return None;
    }
    let mut g = RawGuest::default();
    let mut fact = |name: &str, value: String, origin, source: String| {
        prov.push(Provenance::new(format!("guest.{name}"), value, origin, source));
    };
    let mut kvm = false;
    if let Some(v) = dump.leaf(HYPERVISOR_BASE, 0) {
        let signature = hypervisor::decode_vendor(v.ebx, v.ecx, v.edx);
        kvm = signature == hypervisor::KVM_SIGNATURE;
        let name = hypervisor_name(&signature);
        let source = format!("CPUID 0x40000000 signature {signature:?}");
        fact("hypervisor", name.clone(), Origin::Read, source.clone());
        g.hypervisor = Some(GuestFact { value: name, source, unverified: false });
    }
    if let Some(f) = dump.leaf(hypervisor::KVM_CPUID_FEATURES, 0).filter(|_| kvm) {
        for (name, bit, slot) in [
            ("pv_tlb_flush", KVM_FEATURE_PV_TLB_FLUSH, &mut g.pv_tlb_flush),
            ("pv_send_ipi", KVM_FEATURE_PV_SEND_IPI, &mut g.pv_send_ipi),
            ("steal_time", KVM_FEATURE_STEAL_TIME, &mut g.steal_time),
        ] {
            let on = f.eax >> bit & 1 == 1;
            let source = format!("CPUID 0x40000001 EAX = {:#010x}, bit {bit}", f.eax);
            fact(name, yes(on).into(), Origin::Read, source.clone());
            *slot = Some(GuestFact { value: on, source, unverified: false });
        }
    }
    if let Some((idle, source)) = idle(facts) {
        fact("idle", idle.name().into(), Origin::Read, source.clone());
        g.idle = Some(GuestFact { value: idle, source, unverified: false });
    }
    if let Some(s) = facts.steal.available() {
        preemption(&mut g, s, mhz, &mut fact);
    }
    if let Some(d) = derivation {
        g.vm_exit = timed(&mut fact, "vm_exit", d.vm_exit.as_ref(), mhz, cache);
        g.ipi_round_trip =
            timed(&mut fact, "ipi_round_trip", d.ipi_round_trip.as_ref(), mhz, cache);
    }
    Some(g)
}

/// `[guest.nested]`: a guest cannot see how its host translates guest-physical memory (nor the
/// host's page size: no CPUID leaf or `/sys` file says), so the section is `skylake-kvm`'s, the
/// one built-in guest, every field marked unverified, with EPT or NPT named by the CPU vendor.
/// NOTE: a pointer-chase probe against the preset's native walk figures could tell 4 KiB from
/// 2 MiB host backing; not done.
pub(crate) fn nested(amd: bool, prov: &mut Vec<Provenance>) -> Option<RawNested> {
    const FROM: &str = "skylake-kvm";
    let spec = tlblab_sim::machine::builtin(FROM).ok()?;
    let mut n = spec.raw().guest.as_ref()?.nested.clone()?;
    let copied = |what: &str| format!("copied from preset {FROM} (a guest cannot see it): {what}");
    let (name, param) = if amd { ("NPT", "kvm_amd.npt") } else { ("EPT", "kvm_intel.enable_ept") };
    n.paging = GuestFact {
        value: true,
        source: format!(
            "assumed: the hypervisor uses {name}, as KVM does on every CPU that has it ({param} \
             defaults on); a guest cannot tell"
        ),
        unverified: true,
    };
    n.host_page_size.source = copied(&n.host_page_size.source);
    n.host_page_size.unverified = true;
    n.host_levels.source = copied(&n.host_levels.source);
    n.host_levels.unverified = true;
    n.cache.source = copied(&n.cache.source);
    n.cache.unverified = true;
    for (figure, value, source) in [
        ("paging", yes(true).to_string(), &n.paging.source),
        ("host_page_size", n.host_page_size.value.name().to_string(), &n.host_page_size.source),
        ("host_levels", n.host_levels.value.to_string(), &n.host_levels.source),
        ("cache", format!("{} entries, {}-way", n.cache.entries, n.cache.ways), &n.cache.source),
    ] {
        prov.push(Provenance::new(
            format!("guest.nested.{figure}"),
            value,
            Origin::Copied,
            source.clone(),
        ));
    }
    Some(n)
}

/// `overcommit` from the steal share `f` measured over a short window: a fair host scheduler
/// gives a vCPU `1 / r` of its pCPU when `r` threads share it, so `r = 1 / (1 − f)`. With
/// preemption, the host's slice and tick cannot be seen from the guest: assumed.
fn preemption(
    g: &mut RawGuest,
    s: &StealSample,
    mhz: u64,
    fact: &mut impl FnMut(&str, String, Origin, String),
) {
    let Some(share) = s.share() else { return };
    let r = (1.0 / (1.0 - share).max(1.0 / MAX_OVERCOMMIT) * 100.0).round() / 100.0;
    let source = format!(
        "{PROC_STAT_PATH}: steal {} of {} ticks ({:.1}%) over the {} ms of the kernel-path \
         measurement (cached with it), all CPUs: overcommit = 1 / (1 − steal share) (a fair \
         host scheduler's share; one short window: 0 on a quiet dedicated host)",
        s.steal_ticks,
        s.total_ticks,
        100.0 * share,
        s.window_ms
    );
    fact("overcommit", format!("{r}"), Origin::Measured, source.clone());
    g.overcommit = Some(GuestFact { value: Ratio(r), source, unverified: true });
    if r > 1.0 {
        let source = "assumption: EEVDF's sysctl_sched_base_slice on a host of 8 or more CPUs, \
                      0.75 ms × (1 + ilog2(8)) = 3 ms (kernel/sched/fair.c, 6.6+); the host's \
                      scheduler cannot be seen from the guest"
            .to_string();
        let written = WrittenCost {
            ns: Some(3_000_000.0),
            at_mhz: Some(mhz),
            scales: Some(Scales::Time),
            ..WrittenCost::default()
        };
        fact("host_slice", "3 ms".into(), Origin::Informative, source.clone());
        g.host_slice = Some(KernelFigure { cycles: 0, written, source, unverified: true });
        let source = "assumption: CONFIG_HZ=1000 (RHEL, Fedora, Ubuntu since 24.04); the host's \
                      kernel cannot be seen from the guest"
            .to_string();
        fact("host_hz", "1000".into(), Origin::Informative, source.clone());
        g.host_hz = Some(GuestFact { value: 1000, source, unverified: true });
    }
}

fn timed(
    fact: &mut impl FnMut(&str, String, Origin, String),
    name: &str,
    derived: Option<&Result<Derived, String>>,
    mhz: u64,
    cache: &str,
) -> Option<KernelFigure> {
    match derived? {
        Ok(d) => {
            let figure = figure_of(d, mhz, cache);
            fact(name, figure.written.describe(), Origin::Measured, figure.source.clone());
            Some(figure)
        }
        Err(why) => {
            fact(name, "unknown".into(), Origin::Informative, format!("not measured: {why}"));
            None
        }
    }
}

/// `kvm`, `hyperv`, `vmware`, `xen`, or the signature in lower case.
fn hypervisor_name(signature: &str) -> String {
    match signature {
        hypervisor::KVM_SIGNATURE => "kvm".into(),
        "Microsoft Hv" => "hyperv".into(),
        "VMwareVMware" => "vmware".into(),
        "XenVMMXenVMM" => "xen".into(),
        "TCGTCGTCGTCG" => "tcg".into(),
        other => other.trim().to_lowercase(),
    }
}

/// `idle=poll` on the command line, else the cpuidle driver: `haltpoll`, or HLT for any other.
fn idle(facts: &HostFacts) -> Option<(GuestIdle, String)> {
    let cmdline = facts.cmdline.available();
    if cmdline.is_some_and(|c| c.split_whitespace().any(|w| w == "idle=poll")) {
        return Some((GuestIdle::Poll, format!("{CMDLINE_PATH} has idle=poll")));
    }
    let driver = facts.cpuidle_driver.available()?;
    let no_poll = if cmdline.is_some() { ", no idle=poll in /proc/cmdline" } else { "" };
    let source = format!("{CPUIDLE_DRIVER_PATH} = {driver:?}{no_poll}");
    if driver == "haltpoll" {
        Some((GuestIdle::Haltpoll, source))
    } else {
        Some((GuestIdle::Halt, format!("{source}: an idle vCPU halts (HLT exits)")))
    }
}

/// The haltpoll governor's parameters, when it is the governor in use
/// (`current_governor_ro`); an error says why there is none.
pub(crate) fn haltpoll(facts: &HostFacts) -> Result<RawHaltpoll, String> {
    use crate::facts::{CPUIDLE_GOVERNOR_PATH, HALTPOLL_PARAMETERS_DIR};
    let governor = facts.cpuidle_governor.result()?;
    if governor != "haltpoll" {
        return Err(format!("{CPUIDLE_GOVERNOR_PATH} = {governor:?}"));
    }
    let params = facts.haltpoll_parameters.result()?;
    let get = |name: &str| {
        params.get(name).ok_or_else(|| format!("{HALTPOLL_PARAMETERS_DIR}/{name} is missing"))
    };
    let number = |name: &str| -> Result<u64, String> {
        let v = get(name)?;
        v.parse().map_err(|_| format!("{HALTPOLL_PARAMETERS_DIR}/{name} holds {v:?}"))
    };
    let allow_shrink = match get("guest_halt_poll_allow_shrink")?.as_str() {
        "Y" | "1" => true,
        "N" | "0" => false,
        v => {
            return Err(format!(
                "{HALTPOLL_PARAMETERS_DIR}/guest_halt_poll_allow_shrink holds {v:?}"
            ))
        }
    };
    let h = RawHaltpoll {
        guest_halt_poll_ns: number("guest_halt_poll_ns")?,
        guest_halt_poll_grow: number("guest_halt_poll_grow")?,
        guest_halt_poll_grow_start: number("guest_halt_poll_grow_start")?,
        guest_halt_poll_shrink: number("guest_halt_poll_shrink")?,
        guest_halt_poll_allow_shrink: allow_shrink,
        source: String::new(),
    };
    let source = format!(
        "{CPUIDLE_GOVERNOR_PATH} = \"haltpoll\"; {HALTPOLL_PARAMETERS_DIR}: guest_halt_poll_ns \
         = {}, grow = {}, grow_start = {}, shrink = {}, allow_shrink = {}",
        h.guest_halt_poll_ns,
        h.guest_halt_poll_grow,
        h.guest_halt_poll_grow_start,
        h.guest_halt_poll_shrink,
        yes(allow_shrink)
    );
    Ok(RawHaltpoll { source, ..h })
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
