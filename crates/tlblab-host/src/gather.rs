//! Reading [`HostFacts`] from this machine. The only module that touches the system.

use crate::cpuid::CpuidDump;
use crate::facts::{
    paging_config_lines, parse_vmalloc_total, CacheFact, HostFacts, BASE_FREQUENCY_PATH, CACHE_DIR,
    CMDLINE_PATH, CONFIG_PATH, CPUIDLE_DRIVER_PATH, CPUIDLE_GOVERNOR_PATH, HALTPOLL_PARAMETERS_DIR,
    MEASURE_ENV, ONLINE_PATH, POSSIBLE_PATH,
};
use std::io::Read as _;
use std::path::Path;
use tlblab_env::Source;

/// Basic leaves read (when at or below the maximum): identity, leaf 2 descriptors, structured
/// features, frequency, address translation.
pub const BASIC_LEAVES: [u32; 5] = [1, 2, 7, 0x16, 0x18];
/// Extended leaves read: features, brand string, L1/L2 TLBs, address sizes and INVLPGB, SVM
/// ASIDs, 1G TLBs.
pub const EXTENDED_LEAVES: [u32; 9] = [
    0x8000_0001,
    0x8000_0002,
    0x8000_0003,
    0x8000_0004,
    0x8000_0005,
    0x8000_0006,
    0x8000_0008,
    0x8000_000A,
    0x8000_0019,
];
/// Hypervisor leaves (read only when CPUID.1:ECX[31] is set: on bare metal they are not defined).
pub const HYPERVISOR_LEAVES: [u32; 2] = [0x4000_0000, 0x4000_0001];

impl HostFacts {
    /// Reads every fact it can; never fails as a whole (what cannot be read carries its reason).
    /// The kernel paths' costs come from the cache when it has them.
    pub fn gather() -> HostFacts {
        HostFacts::gather_with(false)
    }

    /// [`HostFacts::gather`] with the kernel paths measured now, whatever the cache holds: for
    /// a preset compared with live measurements taken now (a guest's costs drift with its
    /// host's load).
    pub fn gather_afresh() -> HostFacts {
        HostFacts::gather_with(true)
    }

    fn gather_with(afresh: bool) -> HostFacts {
        let path_costs = measure_paths(afresh);
        // Steal time is sampled around the path measurement and cached with it, so a preset
        // built from the cache is the same at every build.
        let steal = match path_costs.available() {
            Some(c) => c.costs.steal.clone().map_err(|e| format!("steal time: {e}")).into(),
            None => {
                Source::unavailable("steal time is sampled with the kernel paths, not measured")
            }
        };
        HostFacts {
            cpuid: read_cpuid(),
            cpuinfo: read_text("/proc/cpuinfo"),
            online_cpus: read_text(ONLINE_PATH).map(|t| t.trim().to_owned()),
            possible_cpus: read_text(POSSIBLE_PATH).map(|t| t.trim().to_owned()),
            caches: read_caches(Path::new(CACHE_DIR)),
            cpufreq_base_khz: read_text(BASE_FREQUENCY_PATH).and_then(|t| {
                t.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("{BASE_FREQUENCY_PATH} holds {:?}", t.trim()))
            }),
            vmalloc_total_kib: read_text("/proc/meminfo").and_then(|t| parse_vmalloc_total(&t)),
            kernel_config: read_config(),
            path_costs,
            cpuidle_driver: read_text(CPUIDLE_DRIVER_PATH).map(|t| t.trim().to_owned()),
            cpuidle_governor: read_text(CPUIDLE_GOVERNOR_PATH).map(|t| t.trim().to_owned()),
            haltpoll_parameters: read_parameters(Path::new(HALTPOLL_PARAMETERS_DIR)),
            cmdline: read_text(CMDLINE_PATH).map(|t| t.trim().to_owned()),
            steal,
            vulnerabilities: tlblab_env::vulnerabilities::read_vulnerability_dir(
                std::path::Path::new("/sys/devices/system/cpu/vulnerabilities"),
            )
            .into(),
        }
    }
}

/// This machine's kernel-path costs: from the cache, else measured (a few seconds, once per
/// CPU model and kernel release).
fn measure_paths(afresh: bool) -> Source<tlblab_pathcost::Cached> {
    if !cfg!(target_os = "linux") {
        return Source::unavailable("kernel paths are measured on Linux only");
    }
    if std::env::var_os(MEASURE_ENV).is_some_and(|v| v == "0") {
        return Source::unavailable(format!("not measured: {MEASURE_ENV}=0"));
    }
    let opts = tlblab_pathcost::Options::default();
    Source::Available(if afresh {
        tlblab_pathcost::measure_afresh(&opts)
    } else {
        tlblab_pathcost::cached_or_measure(&opts)
    })
}

fn read_text(path: &str) -> Source<String> {
    std::fs::read_to_string(path).map_err(|e| reason(path, &e)).into()
}

fn reason(path: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("{path} does not exist"),
        std::io::ErrorKind::PermissionDenied => format!("permission denied reading {path}"),
        _ => format!("cannot read {path}: {e}"),
    }
}

fn read_config() -> Source<Vec<String>> {
    let file = match std::fs::File::open(CONFIG_PATH) {
        Ok(f) => f,
        Err(e) => {
            return Source::unavailable(format!(
                "{} (kernel without CONFIG_IKCONFIG_PROC)",
                reason(CONFIG_PATH, &e)
            ))
        }
    };
    let mut text = String::new();
    match flate2::read::GzDecoder::new(file).read_to_string(&mut text) {
        Ok(_) => Source::Available(paging_config_lines(&text)),
        Err(e) => Source::unavailable(format!("cannot decompress {CONFIG_PATH}: {e}")),
    }
}

/// A module's parameters: each file of `dir`, trimmed, by name.
fn read_parameters(dir: &Path) -> Source<std::collections::BTreeMap<String, String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => return Source::unavailable(reason(&dir.display().to_string(), &e)),
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let value = read_text(&e.path().display().to_string()).result()?.trim().to_owned();
            Ok((name, value))
        })
        .collect::<Result<_, String>>()
        .into()
}

fn read_caches(dir: &Path) -> Source<Vec<CacheFact>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => return Source::unavailable(reason(&dir.display().to_string(), &e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("index"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for index in names {
        let path = dir.join(&index);
        let field =
            |f: &str| std::fs::read_to_string(path.join(f)).ok().map(|s| s.trim().to_owned());
        let number = |f: &str| field(f).and_then(|s| s.parse::<u32>().ok());
        let (Some(level), Some(kind), Some(size)) = (number("level"), field("type"), field("size"))
        else {
            continue;
        };
        out.push(CacheFact {
            index,
            level,
            kind,
            size,
            ways: number("ways_of_associativity"),
            sets: number("number_of_sets"),
        });
    }
    Source::Available(out)
}

#[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
fn read_cpuid() -> Source<CpuidDump> {
    use crate::cpuid::intel_dat::MAX_SUBLEAVES;
    use crate::cpuid::Regs;
    use raw_cpuid::native_cpuid::cpuid_count;

    let read = |leaf: u32, sub: u32| {
        let r = cpuid_count(leaf, sub);
        Regs { eax: r.eax, ebx: r.ebx, ecx: r.ecx, edx: r.edx }
    };
    let mut dump = CpuidDump::default();
    let leaf0 = read(0, 0);
    dump.insert(0, 0, leaf0);
    for leaf in BASIC_LEAVES.into_iter().filter(|&l| l <= leaf0.eax) {
        let r = read(leaf, 0);
        dump.insert(leaf, 0, r);
        if leaf == crate::cpuid::intel_dat::LEAF {
            for sub in 1..=r.eax.min(MAX_SUBLEAVES - 1) {
                dump.insert(leaf, sub, read(leaf, sub));
            }
        }
    }
    let ext = read(0x8000_0000, 0);
    dump.insert(0x8000_0000, 0, ext);
    if ext.eax >= 0x8000_0000 {
        for leaf in EXTENDED_LEAVES.into_iter().filter(|&l| l <= ext.eax) {
            dump.insert(leaf, 0, read(leaf, 0));
        }
    }
    if crate::cpuid::identity::HYPERVISOR.read(&dump) == Some(true) {
        let top = read(0x4000_0000, 0);
        for leaf in HYPERVISOR_LEAVES.into_iter().filter(|&l| l == 0x4000_0000 || l <= top.eax) {
            dump.insert(leaf, 0, read(leaf, 0));
        }
    }
    Source::Available(dump)
}

#[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
fn read_cpuid() -> Source<CpuidDump> {
    Source::unavailable("CPUID exists only on x86")
}
