//! CPUID as data: the registers of the leaves tlblab needs, and their decoding.
//!
//! A [`CpuidDump`] holds what the CPU (or the hypervisor in front of it) answered, one entry per
//! (leaf, subleaf). Decoding never executes CPUID, so it runs on canned dumps in tests and on
//! dumps taken on other machines (`cpuid -r` text, see [`CpuidDump::parse_cpuid_r`]).

pub mod amd;
pub mod identity;
pub mod intel_dat;
pub mod intel_leaf2;

use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// The first hypervisor leaf (vendor signature; EAX is the highest hypervisor leaf).
pub const HYPERVISOR_BASE: u32 = 0x4000_0000;

/// The four output registers of one CPUID execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regs {
    /// EAX.
    pub eax: u32,
    /// EBX.
    pub ebx: u32,
    /// ECX.
    pub ecx: u32,
    /// EDX.
    pub edx: u32,
}

impl Regs {
    /// All four registers are zero: what a CPU returns for a leaf at or below its maximum that it
    /// does not implement (Intel SDM vol. 2A, CPUID), and what hypervisors return for leaves they
    /// hide.
    pub fn is_zero(&self) -> bool {
        self.eax == 0 && self.ebx == 0 && self.ecx == 0 && self.edx == 0
    }
}

/// One (leaf, subleaf) and its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuidEntry {
    /// EAX input.
    pub leaf: u32,
    /// ECX input.
    pub subleaf: u32,
    /// The answer.
    pub regs: Regs,
}

/// The CPUID leaves read from one CPU. A leaf that is absent was not read, normally because it
/// lies above the maximum basic (leaf 0 EAX) or extended (leaf 0x8000_0000 EAX) leaf.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuidDump {
    entries: Vec<CpuidEntry>,
}

/// A line of a `cpuid -r` dump that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}: {text:?}")]
pub struct DumpParseError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
    /// The line.
    pub text: String,
}

impl CpuidDump {
    /// A dump from entries; a later entry for the same (leaf, subleaf) replaces an earlier one.
    pub fn from_entries(entries: impl IntoIterator<Item = CpuidEntry>) -> CpuidDump {
        let mut dump = CpuidDump::default();
        for e in entries {
            dump.insert(e.leaf, e.subleaf, e.regs);
        }
        dump
    }

    /// Adds or replaces one entry.
    pub fn insert(&mut self, leaf: u32, subleaf: u32, regs: Regs) {
        match self.entries.iter_mut().find(|e| e.leaf == leaf && e.subleaf == subleaf) {
            Some(e) => e.regs = regs,
            None => self.entries.push(CpuidEntry { leaf, subleaf, regs }),
        }
    }

    /// The registers of (leaf, subleaf), if read.
    pub fn get(&self, leaf: u32, subleaf: u32) -> Option<Regs> {
        self.entries.iter().find(|e| e.leaf == leaf && e.subleaf == subleaf).map(|e| e.regs)
    }

    /// Every entry, in insertion order.
    pub fn entries(&self) -> &[CpuidEntry] {
        &self.entries
    }

    /// The highest basic leaf (leaf 0 EAX), if leaf 0 was read.
    pub fn max_basic(&self) -> Option<u32> {
        self.get(0, 0).map(|r| r.eax)
    }

    /// The highest extended leaf (leaf 0x8000_0000 EAX), if it was read and is an extended leaf.
    pub fn max_extended(&self) -> Option<u32> {
        self.get(0x8000_0000, 0).map(|r| r.eax).filter(|&m| m >= 0x8000_0000)
    }

    /// The registers of (leaf, subleaf) if the CPU reports the leaf: it was read and lies at or
    /// below the maximum of its range (above it, a CPU returns another leaf's data).
    /// Hypervisor leaves (0x4000_0000 up) are bounded by 0x4000_0000 EAX.
    pub fn leaf(&self, leaf: u32, subleaf: u32) -> Option<Regs> {
        let max = if leaf >= 0x8000_0000 {
            self.max_extended()?
        } else if leaf >= HYPERVISOR_BASE {
            self.get(HYPERVISOR_BASE, 0)?.eax.max(HYPERVISOR_BASE)
        } else {
            self.max_basic()?
        };
        if leaf > max {
            return None;
        }
        self.get(leaf, subleaf)
    }

    /// Reads the raw format of the `cpuid` utility (`cpuid -r -1`), one entry per line:
    /// `   0x00000018 0x01: eax=0x00000000 ebx=0x00080007 ecx=0x00000001 edx=0x00004122`.
    /// Lines that do not start with a `0x` leaf (such as `CPU 0:`) are skipped.
    pub fn parse_cpuid_r(text: &str) -> Result<CpuidDump, DumpParseError> {
        let mut dump = CpuidDump::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if !line.starts_with("0x") {
                continue;
            }
            let bad = |message: &str| DumpParseError {
                line: i + 1,
                message: message.to_owned(),
                text: raw.to_owned(),
            };
            let (key, values) = line.split_once(':').ok_or_else(|| bad("no ':'"))?;
            let mut key = key.split_whitespace();
            let leaf = key.next().and_then(hex).ok_or_else(|| bad("bad leaf"))?;
            let subleaf = key.next().and_then(hex).ok_or_else(|| bad("bad subleaf"))?;
            let mut regs = [None; 4];
            for field in values.split_whitespace() {
                let (name, value) = field.split_once('=').ok_or_else(|| bad("expected reg=0x…"))?;
                let slot = ["eax", "ebx", "ecx", "edx"]
                    .iter()
                    .position(|r| *r == name)
                    .ok_or_else(|| bad("unknown register"))?;
                regs[slot] = Some(hex(value).ok_or_else(|| bad("bad register value"))?);
            }
            let [Some(eax), Some(ebx), Some(ecx), Some(edx)] = regs else {
                return Err(bad("needs eax, ebx, ecx and edx"));
            };
            dump.insert(leaf, subleaf, Regs { eax, ebx, ecx, edx });
        }
        Ok(dump)
    }

    /// The dump in the format [`CpuidDump::parse_cpuid_r`] reads.
    pub fn to_cpuid_r(&self) -> String {
        let mut out = String::new();
        for e in &self.entries {
            let r = e.regs;
            let _ = writeln!(
                out,
                "   {:#010x} {:#04x}: eax={:#010x} ebx={:#010x} ecx={:#010x} edx={:#010x}",
                e.leaf, e.subleaf, r.eax, r.ebx, r.ecx, r.edx
            );
        }
        out
    }
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

/// Bits `lo..=hi` of `value`.
pub(crate) fn bits(value: u32, lo: u32, hi: u32) -> u32 {
    let width = hi - lo + 1;
    if width == 32 {
        value
    } else {
        (value >> lo) & ((1 << width) - 1)
    }
}

/// Bit `n` of `value`.
pub(crate) fn bit(value: u32, n: u32) -> bool {
    (value >> n) & 1 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuid_r_round_trips_and_skips_headers() {
        let text = "CPU 0:\n   0x00000000 0x00: eax=0x0000001c ebx=0x756e6547 ecx=0x6c65746e \
                    edx=0x49656e69\n   0x00000018 0x01: eax=0x00000000 ebx=0x00080007 \
                    ecx=0x00000001 edx=0x00004122\n";
        let dump = CpuidDump::parse_cpuid_r(text).unwrap();
        assert_eq!(dump.max_basic(), Some(0x1c));
        assert_eq!(dump.get(0x18, 1).unwrap().edx, 0x4122);
        assert_eq!(CpuidDump::parse_cpuid_r(&dump.to_cpuid_r()).unwrap(), dump);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err =
            CpuidDump::parse_cpuid_r("0x00000001 0x00: eax=0x1 ebx=zz ecx=0 edx=0\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.to_string().contains("bad register value"), "{err}");
    }

    #[test]
    fn a_leaf_above_the_maximum_is_not_reported() {
        let mut dump = CpuidDump::default();
        dump.insert(0, 0, Regs { eax: 0x16, ..Regs::default() });
        dump.insert(0x18, 0, Regs { eax: 1, ..Regs::default() });
        assert!(dump.get(0x18, 0).is_some());
        assert!(dump.leaf(0x18, 0).is_none(), "0x18 > max basic leaf 0x16");
        assert!(dump.leaf(0x8000_0006, 0).is_none(), "no extended maximum read");
    }

    #[test]
    fn bit_fields() {
        assert_eq!(bits(0xABCD_1234, 16, 31), 0xABCD);
        assert_eq!(bits(0xABCD_1234, 0, 31), 0xABCD_1234);
        assert_eq!(bits(0x0000_4122, 5, 7), 1);
        assert!(bit(0x0000_4122, 8) && !bit(0x0000_4122, 9));
    }
}
