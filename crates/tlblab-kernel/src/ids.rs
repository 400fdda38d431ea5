//! The kernel model's number spaces, each its own type (as the glossary at the top of
//! `arch/x86/mm/tlb.c` gives each its own name).

use serde::Serialize;
use std::fmt;
use tlblab_types::Pcid;

/// An address space (`struct mm_struct`), by index. [`MmId::INIT_MM`] is `init_mm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct MmId(pub u32);

impl MmId {
    /// `init_mm`: the kernel's own address space, loaded by idle CPUs that left lazy mode.
    pub const INIT_MM: MmId = MmId(0);
}

impl fmt::Display for MmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == MmId::INIT_MM {
            f.write_str("init_mm")
        } else {
            write!(f, "mm{}", self.0)
        }
    }
}

/// A task (thread), by index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct TaskId(pub u32);

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task{}", self.0)
    }
}

/// `TLB_NR_DYN_ASIDS`: dynamic ASIDs per CPU ("6 should be plenty", tlbflush.h).
pub const TLB_NR_DYN_ASIDS: u16 = 6;

/// Bit of a user PCID that a kernel PCID lacks (`X86_CR3_PTI_PCID_USER_BIT`).
pub const X86_CR3_PTI_PCID_USER_BIT: u16 = 11;

/// `MAX_ASID_AVAILABLE` with PTI compiled in: `(1 << (12 - 1)) - 2`.
pub const MAX_ASID_AVAILABLE: u16 = (1 << (12 - 1)) - 2;

/// A kernel ASID: `0..TLB_NR_DYN_ASIDS` are per-CPU dynamic ASIDs, larger ones are global
/// ASIDs shared by every CPU (INVLPGB only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Asid(pub u16);

impl Asid {
    /// `is_dyn_asid()`.
    pub const fn is_dynamic(self) -> bool {
        self.0 < TLB_NR_DYN_ASIDS
    }

    /// `is_global_asid()`.
    pub const fn is_global(self) -> bool {
        !self.is_dynamic()
    }

    /// `kern_pcid()`: the PCID the kernel half of the address space runs under. ASID + 1, so
    /// that PCID 0 stays with PCID-unaware code and PCID bugs show up at once.
    pub fn kern_pcid(self) -> Pcid {
        Pcid::new(self.0 + 1).expect("ASIDs stay below MAX_ASID_AVAILABLE")
    }

    /// `user_pcid()`: the PCID user space runs under with PTI: the kernel PCID with bit 11 set.
    pub fn user_pcid(self) -> Pcid {
        Pcid::new(self.kern_pcid().get() | (1 << X86_CR3_PTI_PCID_USER_BIT))
            .expect("kernel PCIDs stay below 2048")
    }
}

impl fmt::Display for Asid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "asid {}", self.0)
    }
}

/// A flush generation (`mm->context.tlb_gen`, `cpu_tlbstate.ctxs[].tlb_gen`).
pub type TlbGen = u64;

/// `TLB_GENERATION_INVALID`: a flush with no generation (kernel and batched flushes).
pub const TLB_GENERATION_INVALID: TlbGen = 0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcid_encoding_follows_the_tlb_c_glossary() {
        // Dynamic ASIDs 0..5 run as kernel PCIDs 1..6 and user PCIDs 2049..2054.
        assert_eq!(Asid(0).kern_pcid().get(), 1);
        assert_eq!(Asid(5).kern_pcid().get(), 6);
        assert_eq!(Asid(0).user_pcid().get(), 2049);
        assert_eq!(Asid(5).user_pcid().get(), 2054);
        assert!(Asid(5).is_dynamic() && Asid(6).is_global());
        assert_eq!(MAX_ASID_AVAILABLE, 2046);
    }
}
