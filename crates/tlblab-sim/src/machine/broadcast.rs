//! `[rar]` and `[locks]`: what study S6 (broadcast invalidation) needs of a machine beyond its
//! TLBs and kernel paths (docs/kernel-model.md, "Intel RAR" and "Page-freeing locks").
//!
//! - `[rar]`: the CPU has Intel's Remote Action Request (a targeted TLB invalidation that the
//!   remote CPUs' microcode carries out, no interrupt handler running); its section holds what
//!   a RAR costs. Absent: no RAR (the `rar` policy is refused).
//! - `[locks]`: the hold times of the two locks of page freeing that serialise `munmap()` and
//!   `madvise(MADV_DONTNEED)` across CPUs: the LRU lock (`lruvec->lru_lock`) and the zone lock
//!   (`zone->lock`). Absent: the kernel model charges no lock (mechanism `page-locks` absent).

use super::raw::KernelFigure;
use serde::{Deserialize, Serialize};

/// Intel RAR's costs. Intel publishes none: every figure is an assumption, marked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRar {
    /// Where the feature comes from.
    pub source: String,
    /// On the initiator, per target CPU: writing the target's payload entry and action vector
    /// and sending the RAR interrupt (an ICR write).
    pub send: KernelFigure,
    /// On each target: the microcode's handling of one action, apart from the invalidation
    /// itself (charged by the TLB model as the INVLPG/INVPCID it is equivalent to).
    pub remote: KernelFigure,
    /// On the initiator, after the last send: until every target's completion status is seen
    /// (delivery, the action, the status line coming back).
    pub wait: KernelFigure,
}

impl RawRar {
    /// Every figure, named as in the file.
    pub fn figures(&self) -> [(&'static str, &KernelFigure); 3] {
        [("send", &self.send), ("remote", &self.remote), ("wait", &self.wait)]
    }

    /// Every figure, mutable, named as in the file.
    pub fn figures_mut(&mut self) -> [(&'static str, &mut KernelFigure); 3] {
        [("send", &mut self.send), ("remote", &mut self.remote), ("wait", &mut self.wait)]
    }
}

/// The page-freeing locks' hold times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLocks {
    /// Per acquisition of `lru_lock`, apart from the lock word's own transfer: the lruvec's
    /// list heads and counters, last written by the previous holder.
    pub lru_lock: KernelFigure,
    /// Per folio moved onto or off an LRU list under `lru_lock`.
    pub lru_folio: KernelFigure,
    /// Per acquisition of `zone->lock`, apart from the lock word's transfer: the free lists'
    /// heads and the zone's counters.
    pub zone_lock: KernelFigure,
    /// Per page moved between a CPU's `pcp` list and the buddy free lists under `zone->lock`.
    pub zone_page: KernelFigure,
}

impl RawLocks {
    /// Every figure, named as in the file.
    pub fn figures(&self) -> [(&'static str, &KernelFigure); 4] {
        [
            ("lru_lock", &self.lru_lock),
            ("lru_folio", &self.lru_folio),
            ("zone_lock", &self.zone_lock),
            ("zone_page", &self.zone_page),
        ]
    }

    /// Every figure, mutable, named as in the file.
    pub fn figures_mut(&mut self) -> [(&'static str, &mut KernelFigure); 4] {
        [
            ("lru_lock", &mut self.lru_lock),
            ("lru_folio", &mut self.lru_folio),
            ("zone_lock", &mut self.zone_lock),
            ("zone_page", &mut self.zone_page),
        ]
    }
}

/// Resolves `[rar]` and `[locks]` at the `[kernel]` clock; the error names the key.
pub(crate) fn resolve(
    rar: Option<&mut RawRar>,
    locks: Option<&mut RawLocks>,
    clock: Option<u64>,
) -> Result<(), String> {
    let mut figures: Vec<(String, &mut KernelFigure)> = Vec::new();
    if let Some(r) = rar {
        figures.extend(r.figures_mut().into_iter().map(|(n, f)| (format!("[rar] {n}"), f)));
    }
    if let Some(l) = locks {
        figures.extend(l.figures_mut().into_iter().map(|(n, f)| (format!("[locks] {n}"), f)));
    }
    for (name, figure) in figures {
        let Some(mhz) = clock else {
            return Err(format!("`{name}` needs a `[kernel]` section: its clock resolves it"));
        };
        figure.cycles = figure.written.resolve(mhz).map_err(|e| format!("`{name}`: {e}"))?;
    }
    Ok(())
}
