//! The hypervisor seen through CPUID, and whether KVM's paravirtual TLB flush is in play.
//!
//! Under KVM paravirtual TLB flush, a guest does not send a shootdown IPI to a vCPU that the host
//! has preempted: it sets a flag in the shared steal-time area and the host flushes on the next
//! entry. So "remote IPI send" events overcount delivered shootdowns (see docs live.md).
//! Constants from Linux `arch/x86/include/uapi/asm/kvm_para.h` and `Documentation/virt/kvm/x86/cpuid.rst`.

use serde::{Deserialize, Serialize};

/// CPUID leaf with the hypervisor vendor signature in EBX, ECX, EDX.
pub const HYPERVISOR_LEAF: u32 = 0x4000_0000;
/// KVM_CPUID_FEATURES: feature bits in EAX, hint bits in EDX.
pub const KVM_CPUID_FEATURES: u32 = 0x4000_0001;
/// KVM's vendor signature.
pub const KVM_SIGNATURE: &str = "KVMKVMKVM";
/// EAX bit: the host offers paravirtual TLB flush.
pub const KVM_FEATURE_PV_TLB_FLUSH: u32 = 9;
/// EAX bit: steal-time area (the PV flush flag lives in it).
pub const KVM_FEATURE_STEAL_TIME: u32 = 5;
/// EDX bit: vCPUs are never preempted, so the guest skips PV flush.
pub const KVM_HINTS_REALTIME: u32 = 0;

/// Raw registers of the two hypervisor CPUID leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HypervisorCpuid {
    /// Leaf 0x40000000: EAX (highest hypervisor leaf), EBX, ECX, EDX (signature).
    pub vendor_leaf: [u32; 4],
    /// Leaf 0x40000001: EAX, EDX (only meaningful for KVM).
    pub features: Option<(u32, u32)>,
}

/// The 12-byte vendor signature of leaf 0x40000000 (EBX, ECX, EDX, little-endian), without the
/// trailing NULs (KVM pads "KVMKVMKVM" with three).
pub fn decode_vendor(ebx: u32, ecx: u32, edx: u32) -> String {
    let mut bytes = Vec::with_capacity(12);
    for reg in [ebx, ecx, edx] {
        bytes.extend_from_slice(&reg.to_le_bytes());
    }
    String::from_utf8_lossy(&bytes).trim_end_matches('\0').to_owned()
}

/// KVM paravirtual TLB flush: what the host offers, and whether the guest kernel's conditions for
/// using it hold (Linux `pv_tlb_flush_supported()` in `arch/x86/kernel/kvm.c`, 6.x).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvmPvTlbFlush {
    /// KVM_FEATURE_PV_TLB_FLUSH (EAX bit 9 of CPUID 0x40000001).
    pub offered: bool,
    /// KVM_FEATURE_STEAL_TIME (EAX bit 5).
    pub steal_time: bool,
    /// KVM_HINTS_REALTIME (EDX bit 0).
    pub hint_realtime: bool,
    /// The guest kernel's conditions hold: offered, steal time, no realtime hint, no MWAIT
    /// (`monitor` cpuinfo flag), more than one possible CPU. Inferred, not read from the kernel.
    pub expected_in_use: bool,
}

impl KvmPvTlbFlush {
    /// Decodes leaf 0x40000001 and combines it with the guest facts the kernel also checks.
    pub fn decode(eax: u32, edx: u32, has_mwait: bool, possible_cpus: usize) -> Self {
        let bit = |reg: u32, n: u32| (reg >> n) & 1 == 1;
        let offered = bit(eax, KVM_FEATURE_PV_TLB_FLUSH);
        let steal_time = bit(eax, KVM_FEATURE_STEAL_TIME);
        let hint_realtime = bit(edx, KVM_HINTS_REALTIME);
        KvmPvTlbFlush {
            offered,
            steal_time,
            hint_realtime,
            expected_in_use: offered
                && steal_time
                && !hint_realtime
                && !has_mwait
                && possible_cpus != 1,
        }
    }
}

/// Reads the hypervisor leaves, or says why not. Leaf 0x40000000 is only defined when the
/// hypervisor bit (CPUID.1:ECX bit 31) is set; on bare metal it returns unrelated data.
pub fn read_hypervisor_cpuid() -> Result<HypervisorCpuid, String> {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        use raw_cpuid::native_cpuid::cpuid_count;
        if (cpuid_count(1, 0).ecx >> 31) & 1 == 0 {
            return Err("CPUID.1:ECX hypervisor bit is clear (bare metal)".to_owned());
        }
        let v = cpuid_count(HYPERVISOR_LEAF, 0);
        let features = (v.eax >= KVM_CPUID_FEATURES).then(|| {
            let f = cpuid_count(KVM_CPUID_FEATURES, 0);
            (f.eax, f.edx)
        });
        Ok(HypervisorCpuid { vendor_leaf: [v.eax, v.ebx, v.ecx, v.edx], features })
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64")))]
    {
        Err("CPUID exists only on x86".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_signature_from_the_kernel_docs() {
        // Documentation/virt/kvm/x86/cpuid.rst: ebx = 0x4b4d564b, ecx = 0x564b4d56, edx = 0x4d.
        assert_eq!(decode_vendor(0x4b4d_564b, 0x564b_4d56, 0x4d), KVM_SIGNATURE);
    }

    #[test]
    fn pv_flush_bits_of_this_machines_leaf() {
        // EAX 0x01007efb as read on the project's KVM guest: bits 5 and 9 set; EDX 0.
        let k = KvmPvTlbFlush::decode(0x0100_7efb, 0, false, 2);
        assert!(k.offered && k.steal_time && !k.hint_realtime && k.expected_in_use);
    }

    #[test]
    fn each_kernel_condition_disables_pv_flush() {
        let eax = (1 << KVM_FEATURE_PV_TLB_FLUSH) | (1 << KVM_FEATURE_STEAL_TIME);
        assert!(KvmPvTlbFlush::decode(eax, 0, false, 4).expected_in_use);
        assert!(!KvmPvTlbFlush::decode(eax, 1, false, 4).expected_in_use); // realtime hint
        assert!(!KvmPvTlbFlush::decode(eax, 0, true, 4).expected_in_use); // MWAIT
        assert!(!KvmPvTlbFlush::decode(eax, 0, false, 1).expected_in_use); // one CPU
        let no_steal = 1 << KVM_FEATURE_PV_TLB_FLUSH;
        assert!(!KvmPvTlbFlush::decode(no_steal, 0, false, 4).expected_in_use);
        let k = KvmPvTlbFlush::decode(1 << KVM_FEATURE_STEAL_TIME, 0, false, 4);
        assert!(!k.offered && !k.expected_in_use);
    }
}
