//! `/proc/cpuinfo`: the CPU model and the flags that matter for TLB flushing.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What tlblab needs from `/proc/cpuinfo` (the first processor's block; on x86 every block carries
/// the same model and the kernel's common flag set).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuInfo {
    /// The `model name` line, if any (absent on some non-x86 architectures).
    pub model_name: Option<String>,
    /// The words of the `flags` line (x86) or `Features` line (arm64); `None` when neither exists.
    pub flags: Option<BTreeSet<String>>,
    /// How many `processor` lines.
    pub processors: usize,
}

/// Parses `/proc/cpuinfo`. Lines without `key : value` shape are skipped: some architectures
/// print free-form lines, and nothing here depends on them.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let mut info = CpuInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => info.processors += 1,
            "model name" if info.model_name.is_none() => info.model_name = Some(value.to_owned()),
            "flags" | "Features" if info.flags.is_none() => {
                info.flags = Some(value.split_whitespace().map(str::to_owned).collect());
            }
            _ => {}
        }
    }
    info
}

/// CPU features that change how Linux flushes TLBs, as `/proc/cpuinfo` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlbCpuFlags {
    /// Process-context identifiers: lets the kernel keep several address spaces' entries tagged.
    pub pcid: bool,
    /// The INVPCID instruction (flush by PCID without switching CR3).
    pub invpcid: bool,
    /// 5-level paging supported and not disabled by the kernel.
    pub la57: bool,
    /// AMD broadcast TLB invalidation (INVLPGB/TLBSYNC), used instead of IPIs on new kernels.
    pub invlpgb: bool,
    /// Global pages (kernel mappings survive CR3 writes).
    pub pge: bool,
    /// Large (2/4 MiB) pages.
    pub pse: bool,
    /// The kernel's synthetic `pti` flag: page-table isolation is on (two page tables per mm).
    pub pti: bool,
}

impl TlbCpuFlags {
    /// Reads the flags from a cpuinfo flag set.
    pub fn from_flags(flags: &BTreeSet<String>) -> Self {
        let has = |f: &str| flags.contains(f);
        TlbCpuFlags {
            pcid: has("pcid"),
            invpcid: has("invpcid"),
            la57: has("la57"),
            invlpgb: has("invlpgb"),
            pge: has("pge"),
            pse: has("pse"),
            pti: has("pti"),
        }
    }

    /// `(name, value)` pairs in declaration order, for listings and comparisons.
    pub fn named(&self) -> [(&'static str, bool); 7] {
        [
            ("pcid", self.pcid),
            ("invpcid", self.invpcid),
            ("la57", self.la57),
            ("invlpgb", self.invlpgb),
            ("pge", self.pge),
            ("pse", self.pse),
            ("pti", self.pti),
        ]
    }
}

/// Whether page-table isolation is on: the `pti` cpuinfo flag, or else the meltdown vulnerability
/// file saying "Mitigation: PTI". `None` when neither source was readable.
pub fn pti_enabled(flags: Option<&BTreeSet<String>>, meltdown: Option<&str>) -> Option<bool> {
    let from_flags = flags.map(|f| f.contains("pti"));
    let from_sysfs = meltdown.map(|m| m.trim() == "Mitigation: PTI");
    match (from_flags, from_sysfs) {
        (Some(a), Some(b)) => Some(a || b),
        (a, b) => a.or(b),
    }
}

/// The bracketed choice of a sysfs multiple-choice file, e.g. "madvise" from
/// `always [madvise] never` (`/sys/kernel/mm/transparent_hugepage/enabled`).
pub fn parse_bracketed_choice(text: &str) -> Result<String, String> {
    let start =
        text.find('[').ok_or_else(|| format!("no [bracketed] choice in {:?}", text.trim()))?;
    let len =
        text[start + 1..].find(']').ok_or_else(|| format!("unclosed '[' in {:?}", text.trim()))?;
    Ok(text[start + 1..start + 1 + len].to_owned())
}
