//! Identifiers and units.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A logical CPU number (the kernel's `smp_processor_id()`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct CpuId(pub u16);

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpu{}", self.0)
    }
}

/// A process-context identifier: the 12-bit tag in CR3 bits 11:0 (Intel SDM vol. 3 §4.10.1).
///
/// This is the *hardware* PCID. The kernel's ASIDs and its kPCID/uPCID encodings are separate
/// types in the policy model.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Pcid(u16);

impl Pcid {
    /// Number of PCID bits in CR3.
    pub const BITS: u32 = 12;
    /// The largest PCID (4095).
    pub const MAX: u16 = (1 << Self::BITS) - 1;

    /// A PCID, or `None` if `value` does not fit in 12 bits.
    pub const fn new(value: u16) -> Option<Self> {
        if value <= Self::MAX {
            Some(Self(value))
        } else {
            None
        }
    }

    /// The PCID's numeric value.
    pub const fn get(self) -> u16 {
        self.0
    }
}

impl fmt::Display for Pcid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pcid {}", self.0)
    }
}

/// A duration or cost in core clock cycles.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Cycles(pub u64);

impl std::ops::Add for Cycles {
    type Output = Cycles;
    fn add(self, rhs: Cycles) -> Cycles {
        Cycles(self.0 + rhs.0)
    }
}

impl std::ops::AddAssign for Cycles {
    fn add_assign(&mut self, rhs: Cycles) {
        self.0 += rhs.0;
    }
}

impl std::ops::Mul<u64> for Cycles {
    type Output = Cycles;
    fn mul(self, rhs: u64) -> Cycles {
        Cycles(self.0 * rhs)
    }
}
