//! [`HostFacts`]: everything the host preset is built from, as plain data.
//!
//! [`HostFacts::gather`] reads them from this machine; [`crate::build`] turns them into a preset
//! without touching the system, so canned facts (tests, or files copied from another machine)
//! give the same preset the machine itself would.

use crate::cpuid::CpuidDump;
use serde::{Deserialize, Serialize};
use tlblab_env::Source;

/// Where [`HostFacts::online_cpus`] is read from.
pub const ONLINE_PATH: &str = "/sys/devices/system/cpu/online";
/// Where [`HostFacts::possible_cpus`] is read from.
pub const POSSIBLE_PATH: &str = "/sys/devices/system/cpu/possible";
/// The cache directories of CPU 0.
pub const CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";
/// `intel_pstate`'s nominal (base) frequency of CPU 0, in kHz.
pub const BASE_FREQUENCY_PATH: &str = "/sys/devices/system/cpu/cpu0/cpufreq/base_frequency";
/// The cpuidle driver in use (`haltpoll` in a KVM guest that polls before HLT).
pub const CPUIDLE_DRIVER_PATH: &str = "/sys/devices/system/cpu/cpuidle/current_driver";
/// The cpuidle governor in use (`haltpoll` with the cpuidle-haltpoll driver).
pub const CPUIDLE_GOVERNOR_PATH: &str = "/sys/devices/system/cpu/cpuidle/current_governor_ro";
/// The haltpoll governor's module parameters (`guest_halt_poll_ns`, …), one file each.
pub const HALTPOLL_PARAMETERS_DIR: &str = "/sys/module/haltpoll/parameters";
/// The kernel command line (`idle=poll`).
pub const CMDLINE_PATH: &str = "/proc/cmdline";
/// Set to `0` to build the host preset without measuring kernel paths (the nearest preset's
/// figures are then used, and the provenance says so).
pub const MEASURE_ENV: &str = "TLBLAB_HOST_MEASURE";
/// The kernel configuration (`CONFIG_IKCONFIG_PROC`), gzip-compressed.
pub const CONFIG_PATH: &str = "/proc/config.gz";

/// The raw facts. Every system-dependent field is a [`Source`]: read, or the reason it could not
/// be.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    /// CPUID leaves of the CPU this ran on (see [`crate::gather::CPUID_LEAVES`]).
    pub cpuid: Source<CpuidDump>,
    /// `/proc/cpuinfo`.
    pub cpuinfo: Source<String>,
    /// `/sys/devices/system/cpu/online`, e.g. `0-1`.
    pub online_cpus: Source<String>,
    /// `/sys/devices/system/cpu/possible` (KVM's PV flush is off with a single possible CPU).
    pub possible_cpus: Source<String>,
    /// CPU 0's caches from sysfs (recorded for the reader; the model has no caches).
    pub caches: Source<Vec<CacheFact>>,
    /// `base_frequency` of cpufreq, in kHz.
    pub cpufreq_base_khz: Source<u64>,
    /// `VmallocTotal` of `/proc/meminfo`, in KiB: its size says whether the kernel runs 4- or
    /// 5-level paging.
    pub vmalloc_total_kib: Source<u64>,
    /// The lines of `/proc/config.gz` that set `CONFIG_PGTABLE_LEVELS` or `CONFIG_X86_5LEVEL`.
    pub kernel_config: Source<Vec<String>>,
    /// This machine's kernel-path costs, measured or from the cache (tlblab-pathcost).
    #[serde(default = "not_gathered")]
    pub path_costs: Source<tlblab_pathcost::Cached>,
    /// `/sys/devices/system/cpu/cpuidle/current_driver`.
    #[serde(default = "not_gathered")]
    pub cpuidle_driver: Source<String>,
    /// `/sys/devices/system/cpu/cpuidle/current_governor_ro`.
    #[serde(default = "not_gathered")]
    pub cpuidle_governor: Source<String>,
    /// `/sys/module/haltpoll/parameters/*`: parameter name to value.
    #[serde(default = "not_gathered")]
    pub haltpoll_parameters: Source<std::collections::BTreeMap<String, String>>,
    /// `/proc/cmdline`.
    #[serde(default = "not_gathered")]
    pub cmdline: Source<String>,
    /// `/sys/devices/system/cpu/vulnerabilities/*`: issue name to state line.
    #[serde(default = "not_gathered")]
    pub vulnerabilities: Source<std::collections::BTreeMap<String, String>>,
    /// Steal time (a guest's vCPUs preempted by its host): over the kernel-path measurement,
    /// cached with it; else over a second now.
    #[serde(default = "not_gathered")]
    pub steal: Source<StealSample>,
}

pub use tlblab_pathcost::steal::{parse_proc_stat_cpu, StealSample, PROC_STAT_PATH};

fn not_gathered<T>() -> Source<T> {
    Source::unavailable("not in these facts")
}

/// One cache of `/sys/devices/system/cpu/cpu0/cache/indexN`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheFact {
    /// `index0`.
    pub index: String,
    /// 1, 2, 3.
    pub level: u32,
    /// `Data`, `Instruction`, `Unified`.
    pub kind: String,
    /// As sysfs prints it: `48K`.
    pub size: String,
    /// `ways_of_associativity`.
    pub ways: Option<u32>,
    /// `number_of_sets`.
    pub sets: Option<u32>,
}

impl CacheFact {
    /// `L1d`, `L1i`, `L2`, `L3`.
    pub fn short_name(&self) -> String {
        match self.kind.as_str() {
            "Data" => format!("L{}d", self.level),
            "Instruction" => format!("L{}i", self.level),
            _ => format!("L{}", self.level),
        }
    }
}

/// The `VmallocTotal` line of `/proc/meminfo`, in KiB.
pub fn parse_vmalloc_total(meminfo: &str) -> Result<u64, String> {
    let line = meminfo
        .lines()
        .find(|l| l.starts_with("VmallocTotal:"))
        .ok_or("no VmallocTotal line in /proc/meminfo")?;
    let mut words = line["VmallocTotal:".len()..].split_whitespace();
    let value = words.next().ok_or_else(|| format!("no value in {line:?}"))?;
    if words.next() != Some("kB") {
        return Err(format!("expected a kB figure in {line:?}"));
    }
    value.parse().map_err(|_| format!("not a number in {line:?}"))
}

/// The lines of a kernel configuration that say how many paging levels it supports.
pub fn paging_config_lines(config: &str) -> Vec<String> {
    config
        .lines()
        .filter(|l| {
            let l = l.trim();
            l.starts_with("CONFIG_PGTABLE_LEVELS=")
                || l.starts_with("CONFIG_X86_5LEVEL=")
                || l == "# CONFIG_X86_5LEVEL is not set"
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmalloc_total_of_this_projects_vm() {
        let meminfo =
            "MemTotal:        8000000 kB\nVmallocTotal:   34359738367 kB\nVmallocUsed: 0 kB\n";
        assert_eq!(parse_vmalloc_total(meminfo), Ok(34_359_738_367));
        assert!(parse_vmalloc_total("MemTotal: 1 kB\n").unwrap_err().contains("VmallocTotal"));
        assert!(parse_vmalloc_total("VmallocTotal: 12 MB\n").unwrap_err().contains("kB"));
    }

    #[test]
    fn paging_lines_are_kept() {
        let config = "CONFIG_X86_64=y\nCONFIG_PGTABLE_LEVELS=5\n# CONFIG_X86_5LEVEL is not set\n";
        assert_eq!(
            paging_config_lines(config),
            vec!["CONFIG_PGTABLE_LEVELS=5", "# CONFIG_X86_5LEVEL is not set"]
        );
    }
}
