//! Where each figure of the host preset came from.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How a figure was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Read from this machine (CPUID, `/proc`, `/sys`).
    Read,
    /// Measured on this machine (kernel-path costs: tlblab-pathcost).
    Measured,
    /// Not measurable here (costs, latencies, paging-structure caches, walkers): copied from the
    /// nearest built-in preset.
    Copied,
    /// This machine should have said but did not (leaf missing, hidden or implausible): the
    /// nearest preset's figure stands in.
    Fallback,
    /// A fact recorded for the reader that is not a preset field (caches, hypervisor, page sizes).
    Informative,
}

impl Origin {
    /// `read`, `measured`, `copied`, `fallback`, `info`.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Read => "read",
            Origin::Measured => "measured",
            Origin::Copied => "copied",
            Origin::Fallback => "fallback",
            Origin::Informative => "info",
        }
    }
}

/// One figure and its source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Which figure: a preset path (`tlb "STLB 4K+2M"`, `features.pcid`, `cost.invlpg`,
    /// `kernel.clock`) or a fact (`cpus`, `paging_levels`, `hypervisor`, `cache L1d`).
    pub figure: String,
    /// Its value, in words (`1536 entries, 12-way`, `yes`, `2300 MHz`).
    pub value: String,
    /// How it was obtained.
    pub origin: Origin,
    /// Where from, precisely enough to check (`CPUID leaf 0x18 subleaf 1`,
    /// `copied from preset skylake-server: …`).
    pub source: String,
}

impl Provenance {
    /// A new entry.
    pub fn new(
        figure: impl Into<String>,
        value: impl Into<String>,
        origin: Origin,
        source: impl Into<String>,
    ) -> Provenance {
        Provenance { figure: figure.into(), value: value.into(), origin, source: source.into() }
    }
}

impl fmt::Display for Provenance {
    /// `[read] tlb "L1 dTLB 4K" = 64 entries, 4-way — CPUID leaf 2 descriptor 0x03 (…)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {} = {} — {}", self.origin.label(), self.figure, self.value, self.source)
    }
}
