//! Memory accesses and TLB-invalidating operations: what a trace is made of.

use crate::{CpuId, Page, PageSize, Pcid, Vpn};
use serde::{Deserialize, Serialize};

/// What an access does with the address it translates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    /// A data read.
    Load,
    /// A data write.
    Store,
    /// An instruction fetch.
    Fetch,
}

impl AccessKind {
    /// All kinds, in index order.
    pub const ALL: [AccessKind; 3] = [AccessKind::Load, AccessKind::Store, AccessKind::Fetch];

    /// A dense index (0, 1, 2) for tables indexed by kind.
    pub const fn index(self) -> usize {
        match self {
            AccessKind::Load => 0,
            AccessKind::Store => 1,
            AccessKind::Fetch => 2,
        }
    }

    /// `load`, `store` or `fetch`.
    pub const fn name(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Fetch => "fetch",
        }
    }
}

/// One address translation requested by a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Access {
    /// The CPU that makes the access.
    pub cpu: CpuId,
    /// The PCID in the CPU's CR3 when the access is made (ignored by the model while CR4.PCIDE=0).
    pub pcid: Pcid,
    /// The page touched and the size of the page that maps it.
    pub page: Page,
    /// The G bit of the leaf paging entry (honoured only while CR4.PGE=1, as on hardware).
    pub global: bool,
    /// Load, store or instruction fetch.
    pub kind: AccessKind,
}

/// The four INVPCID types (Intel SDM vol. 2, INVPCID; the kernel's `INVPCID_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvpcidType {
    /// Type 0, `INVPCID_TYPE_INDIV_ADDR`: one address in one PCID, globals excluded.
    IndivAddr,
    /// Type 1, `INVPCID_TYPE_SINGLE_CTXT`: every non-global entry of one PCID.
    SingleCtxt,
    /// Type 2, `INVPCID_TYPE_ALL_INCL_GLOBAL`: everything, globals included.
    AllInclGlobal,
    /// Type 3, `INVPCID_TYPE_ALL_NON_GLOBAL`: every non-global entry of every PCID.
    AllNonGlobal,
}

impl InvpcidType {
    /// The architectural type number (0–3).
    pub const fn number(self) -> u8 {
        match self {
            InvpcidType::IndivAddr => 0,
            InvpcidType::SingleCtxt => 1,
            InvpcidType::AllInclGlobal => 2,
            InvpcidType::AllNonGlobal => 3,
        }
    }

    /// The type with this architectural number.
    pub const fn from_number(number: u8) -> Option<InvpcidType> {
        match number {
            0 => Some(InvpcidType::IndivAddr),
            1 => Some(InvpcidType::SingleCtxt),
            2 => Some(InvpcidType::AllInclGlobal),
            3 => Some(InvpcidType::AllNonGlobal),
            _ => None,
        }
    }
}

/// The address range of an INVLPGB (AMD APM vol. 3, INVLPGB: rAX holds the start, ECX the count
/// and the stride).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InvlpgbRange {
    /// First page of the range, in 4 KiB units.
    pub start: Vpn,
    /// Number of strides to invalidate (ECX[15:0] + 1), at least 1.
    pub pages: u32,
    /// Stride between invalidated addresses: 4 KiB or 2 MiB (ECX bit 31).
    pub stride: PageSize,
}

/// What an INVLPGB invalidates: the valid bits of rAX select which of address and PCID apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InvlpgbScope {
    /// `INVLPGB_FLAG_VA`: only translations of these addresses (else every address).
    pub range: Option<InvlpgbRange>,
    /// `INVLPGB_FLAG_PCID`: only translations of this PCID (else every PCID).
    pub pcid: Option<Pcid>,
    /// `INVLPGB_FLAG_INCLUDE_GLOBAL`: global translations are invalidated too.
    pub include_global: bool,
    /// `INVLPGB_FLAG_FINAL_ONLY`: only leaf translations; paging-structure caches are kept.
    pub final_only: bool,
}

/// An instruction that invalidates translations (Intel SDM vol. 3 §4.10.4.1; AMD APM vol. 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TlbOp {
    /// `INVLPG addr`, executed while CR3 holds `pcid`.
    Invlpg {
        /// The current PCID (from CR3).
        pcid: Pcid,
        /// The page of the address operand.
        vpn: Vpn,
    },
    /// `INVPCID` with a descriptor `(pcid, address)`; types 2 and 3 ignore both.
    Invpcid {
        /// The INVPCID type.
        kind: InvpcidType,
        /// The descriptor's PCID.
        pcid: Pcid,
        /// The page of the descriptor's linear address (type 0 only).
        vpn: Vpn,
    },
    /// `MOV CR3` loading `pcid`; with `noflush`, bit 63 set.
    MovCr3 {
        /// The PCID in bits 11:0 of the new CR3.
        pcid: Pcid,
        /// Bit 63 (`X86_CR3_PCID_NOFLUSH`): keep the new PCID's entries.
        noflush: bool,
    },
    /// `MOV CR4` writing these values of CR4.PGE and CR4.PCIDE. Toggling PGE, the kernel's
    /// `native_flush_tlb_global()` fallback, is two writes.
    MovCr4 {
        /// New CR4.PGE.
        pge: bool,
        /// New CR4.PCIDE.
        pcide: bool,
    },
    /// AMD `INVLPGB`: a broadcast invalidation that reaches every CPU.
    Invlpgb(InvlpgbScope),
    /// AMD `TLBSYNC`: waits until every INVLPGB issued by this CPU has completed.
    Tlbsync,
}

/// One element of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceEvent {
    /// `repeat` consecutive identical accesses (at least 1). Repeats are exact for LRU and the
    /// model's pseudo-LRU: after the first, each is a hit that changes no replacement state.
    Access {
        /// The access.
        access: Access,
        /// How many times it happens in a row.
        repeat: u32,
    },
    /// A TLB-invalidating instruction executed by `cpu`.
    Op {
        /// The executing CPU.
        cpu: CpuId,
        /// The instruction.
        op: TlbOp,
    },
}

impl TraceEvent {
    /// The CPU the event happens on.
    pub const fn cpu(&self) -> CpuId {
        match self {
            TraceEvent::Access { access, .. } => access.cpu,
            TraceEvent::Op { cpu, .. } => *cpu,
        }
    }

    /// Number of accesses this event stands for (0 for an operation).
    pub const fn accesses(&self) -> u64 {
        match self {
            TraceEvent::Access { repeat, .. } => *repeat as u64,
            TraceEvent::Op { .. } => 0,
        }
    }
}

/// A helper for building accesses in tests and workloads: a 4 KiB, non-global access.
impl Access {
    /// A non-global access on `cpu` in `pcid` to `page`.
    pub const fn new(cpu: CpuId, pcid: Pcid, page: Page, kind: AccessKind) -> Access {
        Access { cpu, pcid, page, global: false, kind }
    }
}
