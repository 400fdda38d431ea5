//! [`Environment`]: the machine and kernel a measurement ran on, and how two of them differ.

use crate::cpuinfo::{parse_bracketed_choice, parse_cpuinfo, pti_enabled, TlbCpuFlags};
use crate::hypervisor::{decode_vendor, read_hypervisor_cpuid, KvmPvTlbFlush, KVM_SIGNATURE};
use crate::idlist::{parse_id_list, IdList};
use crate::load::SystemLoad;
use crate::source::read_source;
use crate::vulnerabilities::read_vulnerability_dir;
use crate::Source;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// Where [`Environment::tlb_single_page_flush_ceiling`] is read from.
pub const TLB_CEILING_PATH: &str = "/sys/kernel/debug/x86/tlb_single_page_flush_ceiling";
const VULNERABILITIES_DIR: &str = "/sys/devices/system/cpu/vulnerabilities";

/// What the machine and kernel were. Every system-dependent field is a [`Source`]: read, or
/// unavailable with the reason. Field names are part of tlblab's result schema: do not rename.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// tlblab's crate version.
    pub tlblab_version: String,
    /// Git commit tlblab was built from (12 hex digits, `-dirty` suffix), or `unknown`.
    pub tlblab_commit: String,
    /// `uname -r`.
    pub kernel_release: Source<String>,
    /// `uname -v` (build number, preemption model, build date).
    pub kernel_version: Source<String>,
    /// `uname -m`.
    pub machine: Source<String>,
    /// `/proc/cmdline` (boot options such as `nopti`, `mitigations=off`).
    pub kernel_cmdline: Source<String>,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: Source<String>,
    /// TLB-relevant cpuinfo flags.
    pub cpu_flags: Source<TlbCpuFlags>,
    /// Page-table isolation on: cpuinfo `pti` flag or meltdown "Mitigation: PTI".
    pub pti: Source<bool>,
    /// `/sys/devices/system/cpu/vulnerabilities/*`: issue name to state line.
    pub mitigations: Source<BTreeMap<String, String>>,
    /// `/sys/devices/system/cpu/online`.
    pub online_cpus: Source<IdList>,
    /// `/sys/devices/system/node/online`.
    pub numa_nodes: Source<IdList>,
    /// The selected value of `/sys/kernel/mm/transparent_hugepage/enabled`.
    pub thp_enabled: Source<String>,
    /// The selected value of `/sys/kernel/mm/transparent_hugepage/defrag`.
    pub thp_defrag: Source<String>,
    /// Evidence of a hypervisor.
    pub hypervisor: Hypervisor,
    /// KVM paravirtual TLB flush; unavailable ("unknown: ...") when not under KVM.
    pub kvm_pv_tlb_flush: Source<KvmPvTlbFlush>,
    /// `tlb_single_page_flush_ceiling` (debugfs): above this many pages a range flush becomes a
    /// full flush.
    pub tlb_single_page_flush_ceiling: Source<u64>,
    /// Base page size in bytes (`sysconf(_SC_PAGESIZE)`).
    pub page_size: Source<u64>,
    /// The load average and the competing processes around the measurement (results saved by
    /// older tlblab read as "not recorded"). Not among [`Environment::fields`]: it describes the
    /// moment, not the machine, so it is shown beside the results rather than as a difference.
    #[serde(default)]
    pub system_load: SystemLoad,
}

/// Three independent signs of virtualization.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hypervisor {
    /// The `hypervisor` flag in `/proc/cpuinfo` (CPUID.1:ECX bit 31).
    pub cpuinfo_flag: Source<bool>,
    /// `/sys/hypervisor/type` (filled in by Xen and a few others; absent under KVM).
    pub sysfs_type: Source<String>,
    /// The vendor signature of CPUID leaf 0x40000000 ("KVMKVMKVM", "Microsoft Hv", ...).
    pub cpuid_vendor: Source<String>,
}

/// One field that differs between two environments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// Dotted field name, e.g. `kernel_release` or `mitigations.meltdown`.
    pub field: String,
    /// The value in the first environment (`(absent)` when it has no such field).
    pub a: String,
    /// The value in the second environment.
    pub b: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} vs {}", self.field, self.a, self.b)
    }
}

fn trimmed(s: Source<String>) -> Source<String> {
    s.map(|t| t.trim().to_owned())
}

impl Environment {
    /// Reads everything it can; never fails as a whole.
    pub fn capture() -> Environment {
        let uts = nix::sys::utsname::uname().map_err(|e| format!("uname() failed: {e}"));
        let uts_field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| -> Source<String> {
            uts.as_ref().map(|u| f(u).to_string_lossy().into_owned()).map_err(Clone::clone).into()
        };
        let cpuinfo = read_source("/proc/cpuinfo", "").map(|t| parse_cpuinfo(&t));
        let flags = cpuinfo.as_ref().and_then(|c| {
            c.flags.clone().ok_or_else(|| "no 'flags' line in /proc/cpuinfo (not x86)".to_owned())
        });
        let mitigations: Source<_> = read_vulnerability_dir(Path::new(VULNERABILITIES_DIR)).into();
        let pti = match pti_enabled(
            flags.available(),
            mitigations.available().and_then(|m| m.get("meltdown")).map(String::as_str),
        ) {
            Some(on) => Source::Available(on),
            None => Source::unavailable(
                "neither the /proc/cpuinfo flags nor the meltdown vulnerability file were readable",
            ),
        };
        let ids = |path: &str, hint: &str| {
            read_source(path, hint).and_then(|t| parse_id_list(&t).map_err(|e| e.to_string()))
        };
        let choice = |path: &str| {
            read_source(path, " (kernel without CONFIG_TRANSPARENT_HUGEPAGE)")
                .and_then(|t| parse_bracketed_choice(&t))
        };
        let cpuid = read_hypervisor_cpuid();
        let vendor: Source<String> = cpuid
            .as_ref()
            .map(|c| decode_vendor(c.vendor_leaf[1], c.vendor_leaf[2], c.vendor_leaf[3]))
            .map_err(Clone::clone)
            .into();
        let kvm_pv_tlb_flush = match (&cpuid, vendor.available()) {
            (Ok(c), Some(v)) if v == KVM_SIGNATURE => match c.features {
                None => Source::unavailable("unknown: KVM exposes no CPUID leaf 0x40000001"),
                Some((eax, edx)) => {
                    let possible = ids("/sys/devices/system/cpu/possible", "");
                    match (flags.available(), possible.available()) {
                        (Some(f), Some(p)) => Source::Available(KvmPvTlbFlush::decode(
                            eax,
                            edx,
                            f.contains("monitor"),
                            p.len(),
                        )),
                        _ => Source::unavailable(format!(
                            "unknown: cannot check the guest's conditions (cpuinfo flags: {}; \
                             possible CPUs: {})",
                            flags.as_ref().map(|_| "ok"),
                            possible
                        )),
                    }
                }
            },
            (Ok(_), Some(v)) => {
                Source::unavailable(format!("unknown: hypervisor is {v:?}, not KVM"))
            }
            _ => Source::unavailable(format!(
                "unknown: no hypervisor CPUID leaf ({})",
                vendor.reason().unwrap_or_default()
            )),
        };
        let page_size = match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
            Ok(Some(n)) => u64::try_from(n).map_err(|_| format!("sysconf(_SC_PAGESIZE) = {n}")),
            Ok(None) => Err("sysconf(_SC_PAGESIZE) has no value".to_owned()),
            Err(e) => Err(format!("sysconf(_SC_PAGESIZE) failed: {e}")),
        };

        Environment {
            tlblab_version: env!("CARGO_PKG_VERSION").to_owned(),
            tlblab_commit: env!("TLBLAB_GIT_COMMIT").to_owned(),
            kernel_release: uts_field(|u| u.release()),
            kernel_version: uts_field(|u| u.version()),
            machine: uts_field(|u| u.machine()),
            kernel_cmdline: trimmed(read_source("/proc/cmdline", "")),
            cpu_model: cpuinfo.as_ref().and_then(|c| {
                c.model_name
                    .clone()
                    .ok_or_else(|| "no 'model name' line in /proc/cpuinfo".to_owned())
            }),
            cpu_flags: flags.as_ref().map(TlbCpuFlags::from_flags),
            pti,
            mitigations,
            online_cpus: ids("/sys/devices/system/cpu/online", ""),
            numa_nodes: ids("/sys/devices/system/node/online", " (kernel without CONFIG_NUMA)"),
            thp_enabled: choice("/sys/kernel/mm/transparent_hugepage/enabled"),
            thp_defrag: choice("/sys/kernel/mm/transparent_hugepage/defrag"),
            hypervisor: Hypervisor {
                cpuinfo_flag: flags.as_ref().map(|f| f.contains("hypervisor")),
                sysfs_type: trimmed(read_source(
                    "/sys/hypervisor/type",
                    " (only some hypervisors, e.g. Xen, fill it in)",
                )),
                cpuid_vendor: vendor,
            },
            kvm_pv_tlb_flush,
            tlb_single_page_flush_ceiling: read_source(
                TLB_CEILING_PATH,
                " (needs root and debugfs mounted at /sys/kernel/debug)",
            )
            .and_then(|t| {
                t.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{TLB_CEILING_PATH} holds {:?}, not a number", t.trim()))
            }),
            page_size: page_size.into(),
            system_load: SystemLoad::start(),
        }
    }

    /// Every field as `(dotted name, rendered value)`, groups (flags, mitigations, hypervisor,
    /// paravirtual flush) expanded into their members.
    pub fn fields(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        let mut one = |name: &str, value: String| out.push((name.to_owned(), value));
        one("tlblab_version", self.tlblab_version.clone());
        one("tlblab_commit", self.tlblab_commit.clone());
        one("kernel_release", self.kernel_release.to_string());
        one("kernel_version", self.kernel_version.to_string());
        one("machine", self.machine.to_string());
        one("kernel_cmdline", self.kernel_cmdline.to_string());
        one("cpu_model", self.cpu_model.to_string());
        let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
        group(
            &mut out,
            "cpu_flags",
            self.cpu_flags
                .as_ref()
                .map(|f| f.named().iter().map(|(n, v)| ((*n).to_owned(), yes_no(*v))).collect()),
        );
        out.push(("pti".to_owned(), self.pti.as_ref().map(|b| yes_no(*b)).to_string()));
        group(
            &mut out,
            "mitigations",
            self.mitigations
                .as_ref()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        );
        let mut one = |name: &str, value: String| out.push((name.to_owned(), value));
        one("online_cpus", self.online_cpus.to_string());
        one("numa_nodes", self.numa_nodes.to_string());
        one("thp_enabled", self.thp_enabled.to_string());
        one("thp_defrag", self.thp_defrag.to_string());
        let h = &self.hypervisor;
        one("hypervisor.cpuinfo_flag", h.cpuinfo_flag.as_ref().map(|b| yes_no(*b)).to_string());
        one("hypervisor.sysfs_type", h.sysfs_type.to_string());
        one("hypervisor.cpuid_vendor", h.cpuid_vendor.to_string());
        group(
            &mut out,
            "kvm_pv_tlb_flush",
            self.kvm_pv_tlb_flush.as_ref().map(|k| {
                [
                    ("offered", k.offered),
                    ("steal_time", k.steal_time),
                    ("hint_realtime", k.hint_realtime),
                    ("expected_in_use", k.expected_in_use),
                ]
                .iter()
                .map(|(n, v)| ((*n).to_owned(), yes_no(*v)))
                .collect()
            }),
        );
        let mut one = |name: &str, value: String| out.push((name.to_owned(), value));
        one("tlb_single_page_flush_ceiling", self.tlb_single_page_flush_ceiling.to_string());
        one("page_size", self.page_size.to_string());
        out
    }

    /// Every field whose rendered value differs between `a` and `b`: in `a`'s field order, then
    /// the fields only `b` has.
    pub fn differences(a: &Environment, b: &Environment) -> Vec<Difference> {
        let (fa, fb) = (a.fields(), b.fields());
        let lookup = |fields: &[(String, String)], name: &str| {
            fields
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(|| "(absent)".to_owned(), |(_, v)| v.clone())
        };
        let mut names: Vec<&String> = fa.iter().map(|(n, _)| n).collect();
        names.extend(fb.iter().map(|(n, _)| n).filter(|n| !fa.iter().any(|(m, _)| m == *n)));
        names
            .into_iter()
            .filter_map(|name| {
                let (va, vb) = (lookup(&fa, name), lookup(&fb, name));
                (va != vb).then(|| Difference { field: name.clone(), a: va, b: vb })
            })
            .collect()
    }
}

/// Pushes `prefix.member` fields, or one `prefix` field with the reason.
fn group(out: &mut Vec<(String, String)>, prefix: &str, members: Source<Vec<(String, String)>>) {
    match members {
        Source::Available(m) => {
            out.extend(m.into_iter().map(|(n, v)| (format!("{prefix}.{n}"), v)));
        }
        Source::Unavailable { reason } => {
            out.push((prefix.to_owned(), format!("unavailable ({reason})")));
        }
    }
}
