//! Who the CPU is and which TLB-related features it has, from the standard leaves.
//!
//! Bit positions: Intel SDM vol. 2A (CPUID) and AMD APM vol. 3 (appendix E); the same bits name
//! the `/proc/cpuinfo` flags in Linux `arch/x86/include/asm/cpufeatures.h`.

use super::{bit, bits, CpuidDump};
use serde::{Deserialize, Serialize};

/// The CPU vendor, from the leaf 0 signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// `HygonGenuine`: Hygon Dhyana, a licensed AMD Zen design (family 0x18).
    Hygon,
    /// Anything else, with its signature.
    Other(String),
}

impl Vendor {
    /// From the 12-character signature (`vendor_id` in `/proc/cpuinfo`).
    pub fn from_signature(signature: &str) -> Vendor {
        match signature {
            "GenuineIntel" => Vendor::Intel,
            "AuthenticAMD" => Vendor::Amd,
            "HygonGenuine" => Vendor::Hygon,
            other => Vendor::Other(other.to_owned()),
        }
    }

    /// The signature.
    pub fn signature(&self) -> &str {
        match self {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
            Vendor::Hygon => "HygonGenuine",
            Vendor::Other(s) => s,
        }
    }

    /// Whether the AMD extended leaves (0x8000_0005/6/19) describe TLBs.
    pub fn is_amd_like(&self) -> bool {
        matches!(self, Vendor::Amd | Vendor::Hygon)
    }
}

/// Family, model and stepping as Linux computes them (`x86_family()`, `x86_model()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// Display family: base family, plus the extended family when the base is 0xF.
    pub family: u32,
    /// Display model: base model, plus the extended model << 4 when the family is 6 or ≥ 0xF.
    pub model: u32,
    /// Stepping.
    pub stepping: u32,
}

impl Signature {
    /// Decodes CPUID.1:EAX.
    pub fn from_leaf1_eax(eax: u32) -> Signature {
        let base_family = bits(eax, 8, 11);
        let family = if base_family == 0xF { base_family + bits(eax, 20, 27) } else { base_family };
        let model =
            if family >= 6 { bits(eax, 4, 7) | (bits(eax, 16, 19) << 4) } else { bits(eax, 4, 7) };
        Signature { family, model, stepping: bits(eax, 0, 3) }
    }
}

/// The vendor signature of leaf 0 (EBX, EDX, ECX, in that order).
pub fn vendor_signature(dump: &CpuidDump) -> Option<String> {
    let r = dump.get(0, 0)?;
    let mut bytes = Vec::with_capacity(12);
    for reg in [r.ebx, r.edx, r.ecx] {
        bytes.extend_from_slice(&reg.to_le_bytes());
    }
    Some(String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_owned())
}

/// The processor brand string of leaves 0x8000_0002..4, if all three are reported.
pub fn brand_string(dump: &CpuidDump) -> Option<String> {
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002..=0x8000_0004 {
        let r = dump.leaf(leaf, 0)?;
        for reg in [r.eax, r.ebx, r.ecx, r.edx] {
            bytes.extend_from_slice(&reg.to_le_bytes());
        }
    }
    let s = String::from_utf8_lossy(&bytes).trim_matches(|c| c == '\0' || c == ' ').to_owned();
    (!s.is_empty()).then_some(s)
}

/// A feature bit: where it lives, and what `/proc/cpuinfo` calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeatureBit {
    /// The `/proc/cpuinfo` flag name.
    pub flag: &'static str,
    /// Leaf.
    pub leaf: u32,
    /// Subleaf.
    pub subleaf: u32,
    /// Register name.
    pub reg: Reg,
    /// Bit number.
    pub bit: u32,
}

/// A CPUID output register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reg {
    /// EAX.
    Eax,
    /// EBX.
    Ebx,
    /// ECX.
    Ecx,
    /// EDX.
    Edx,
}

impl FeatureBit {
    /// The bit's value, or `None` when the leaf is not reported.
    pub fn read(&self, dump: &CpuidDump) -> Option<bool> {
        let r = dump.leaf(self.leaf, self.subleaf)?;
        let value = match self.reg {
            Reg::Eax => r.eax,
            Reg::Ebx => r.ebx,
            Reg::Ecx => r.ecx,
            Reg::Edx => r.edx,
        };
        Some(bit(value, self.bit))
    }

    /// `CPUID 0x7.0:ECX[16]`.
    pub fn location(&self) -> String {
        let reg = match self.reg {
            Reg::Eax => "EAX",
            Reg::Ebx => "EBX",
            Reg::Ecx => "ECX",
            Reg::Edx => "EDX",
        };
        format!("CPUID {:#x}.{}:{reg}[{}]", self.leaf, self.subleaf, self.bit)
    }
}

/// PSE: 4 MiB pages in 32-bit paging; large pages in general.
pub const PSE: FeatureBit = FeatureBit { flag: "pse", leaf: 1, subleaf: 0, reg: Reg::Edx, bit: 3 };
/// PGE: global pages (CR4.PGE).
pub const PGE: FeatureBit = FeatureBit { flag: "pge", leaf: 1, subleaf: 0, reg: Reg::Edx, bit: 13 };
/// PCID: process-context identifiers (CR4.PCIDE).
pub const PCID: FeatureBit =
    FeatureBit { flag: "pcid", leaf: 1, subleaf: 0, reg: Reg::Ecx, bit: 17 };
/// Set by hypervisors (reserved for that use by Intel and AMD).
pub const HYPERVISOR: FeatureBit =
    FeatureBit { flag: "hypervisor", leaf: 1, subleaf: 0, reg: Reg::Ecx, bit: 31 };
/// INVPCID instruction.
pub const INVPCID: FeatureBit =
    FeatureBit { flag: "invpcid", leaf: 7, subleaf: 0, reg: Reg::Ebx, bit: 10 };
/// LA57: 5-level paging supported (whether the kernel enabled it is another matter).
pub const LA57: FeatureBit =
    FeatureBit { flag: "la57", leaf: 7, subleaf: 0, reg: Reg::Ecx, bit: 16 };
/// 1 GiB pages.
pub const PDPE1GB: FeatureBit =
    FeatureBit { flag: "pdpe1gb", leaf: 0x8000_0001, subleaf: 0, reg: Reg::Edx, bit: 26 };
/// AMD translation cache extension (EFER.TCE): INVLPG then drops only the upper-level entries
/// that translate its address.
pub const TCE: FeatureBit =
    FeatureBit { flag: "tce", leaf: 0x8000_0001, subleaf: 0, reg: Reg::Ecx, bit: 17 };
/// AMD INVLPGB/TLBSYNC.
pub const INVLPGB: FeatureBit =
    FeatureBit { flag: "invlpgb", leaf: 0x8000_0008, subleaf: 0, reg: Reg::Ebx, bit: 3 };

/// Every feature bit the host preset looks at, in display order.
pub const FEATURES: [FeatureBit; 9] =
    [PSE, PGE, PCID, INVPCID, LA57, PDPE1GB, INVLPGB, TCE, HYPERVISOR];

/// INVLPGB's largest page count per instruction: CPUID 0x8000_0008 EDX[15:0] + 1 (AMD APM
/// vol. 3, INVLPGB).
pub fn invlpgb_count_max(dump: &CpuidDump) -> Option<u32> {
    dump.leaf(0x8000_0008, 0).map(|r| bits(r.edx, 0, 15) + 1)
}

/// Linear (virtual) and physical address widths in bits: CPUID 0x8000_0008 EAX[15:8], EAX[7:0].
pub fn address_sizes(dump: &CpuidDump) -> Option<(u32, u32)> {
    dump.leaf(0x8000_0008, 0).map(|r| (bits(r.eax, 8, 15), bits(r.eax, 0, 7)))
}

/// Number of SVM address-space identifiers: CPUID 0x8000_000A EBX (AMD; 0 or absent in most
/// guests).
pub fn svm_asids(dump: &CpuidDump) -> Option<u32> {
    dump.leaf(0x8000_000A, 0).map(|r| r.ebx).filter(|&n| n > 0)
}

/// Processor base frequency in MHz: CPUID 0x16 EAX[15:0] (Intel; 0 when not enumerated).
pub fn base_mhz(dump: &CpuidDump) -> Option<u32> {
    dump.leaf(0x16, 0).map(|r| bits(r.eax, 0, 15)).filter(|&mhz| mhz > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuid::Regs;

    #[test]
    fn signature_of_this_projects_vm_and_of_zen3() {
        // CPUID.1:EAX 0x000c06f2 (this project's KVM guest): family 6, model 0xCF, stepping 2,
        // as /proc/cpuinfo says (model 207).
        assert_eq!(
            Signature::from_leaf1_eax(0x000c_06f2),
            Signature { family: 6, model: 0xCF, stepping: 2 }
        );
        // 0x00a00f11: EPYC Milan, family 0xF + 0xA = 0x19, model 0x01, stepping 1.
        assert_eq!(
            Signature::from_leaf1_eax(0x00a0_0f11),
            Signature { family: 0x19, model: 0x01, stepping: 1 }
        );
        // 0x00050654: Skylake-SP, family 6, model 0x55, stepping 4.
        assert_eq!(
            Signature::from_leaf1_eax(0x0005_0654),
            Signature { family: 6, model: 0x55, stepping: 4 }
        );
    }

    #[test]
    fn vendor_from_leaf_0() {
        let mut dump = CpuidDump::default();
        dump.insert(0, 0, Regs { eax: 0x1c, ebx: 0x756e_6547, ecx: 0x6c65_746e, edx: 0x4965_6e69 });
        assert_eq!(vendor_signature(&dump).as_deref(), Some("GenuineIntel"));
        assert_eq!(Vendor::from_signature("GenuineIntel"), Vendor::Intel);
    }

    #[test]
    fn feature_bits_of_this_projects_vm() {
        let mut dump = CpuidDump::default();
        dump.insert(0, 0, Regs { eax: 0x1c, ..Regs::default() });
        dump.insert(1, 0, Regs { eax: 0x000c_06f2, ebx: 0, ecx: 0xfffa_3203, edx: 0x1f8b_fbff });
        dump.insert(7, 0, Regs { eax: 2, ebx: 0xf1bf_2ffb, ecx: 0x1a41_5f46, edx: 0x2081_4010 });
        for (f, want) in [(PCID, true), (PGE, true), (PSE, true), (INVPCID, true), (LA57, true)] {
            assert_eq!(f.read(&dump), Some(want), "{}", f.flag);
        }
        assert_eq!(HYPERVISOR.read(&dump), Some(true));
        assert_eq!(INVLPGB.read(&dump), None, "no extended leaves in this dump");
        assert_eq!(LA57.location(), "CPUID 0x7.0:ECX[16]");
    }
}
