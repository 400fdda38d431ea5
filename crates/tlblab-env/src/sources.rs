//! [`Sources`]: which counter sources this machine offers, for a result's
//! "which sources were available" line.

use crate::interrupts::InterruptSnapshot;
use crate::rusage::RusageSnapshot;
use crate::vmstat::TlbFlushCounters;
use crate::{pmu, Source};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// Where tracefs may be mounted, in the order tried.
pub const TRACEFS_CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Availability of each counter source; `Available` carries a short note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sources {
    /// `TLB`/`CAL` rows of `/proc/interrupts`.
    pub interrupts: Source<String>,
    /// `nr_tlb_*` counters of `/proc/vmstat`.
    pub vmstat_tlb: Source<String>,
    /// `getrusage` faults and context switches.
    pub rusage: Source<String>,
    /// `perf_event_open` dTLB counters.
    pub pmu: Source<String>,
    /// A tracefs with a writable `instances/` directory (for the tracer's private instance).
    pub tracefs: Source<String>,
}

impl Sources {
    /// Probes every source once.
    pub fn probe() -> Sources {
        let interrupts = match InterruptSnapshot::read() {
            Err(e) => Source::unavailable(e.to_string()),
            Ok(s) => match (s.tlb(), s.cal()) {
                (Some(_), Some(_)) => {
                    Source::Available(format!("TLB and CAL rows, {} CPU columns", s.cpus.len()))
                }
                (None, _) => Source::unavailable("/proc/interrupts has no TLB row (not x86?)"),
                (Some(_), None) => Source::unavailable("/proc/interrupts has no CAL row"),
            },
        };
        let vmstat_tlb = match TlbFlushCounters::read() {
            Err(e) => Source::unavailable(e.to_string()),
            Ok(s) => s.map(|_| "nr_tlb_* counters (CONFIG_DEBUG_TLBFLUSH)".to_owned()),
        };
        let rusage = match RusageSnapshot::read() {
            Err(e) => Source::unavailable(e.to_string()),
            Ok(_) => Source::Available("getrusage(RUSAGE_SELF, RUSAGE_CHILDREN)".to_owned()),
        };
        Sources { interrupts, vmstat_tlb, rusage, pmu: pmu::probe(), tracefs: probe_tracefs() }
    }

    /// `(name, source)` pairs in field order.
    pub fn named(&self) -> [(&'static str, &Source<String>); 5] {
        [
            ("interrupts", &self.interrupts),
            ("vmstat_tlb", &self.vmstat_tlb),
            ("rusage", &self.rusage),
            ("pmu", &self.pmu),
            ("tracefs", &self.tracefs),
        ]
    }
}

impl fmt::Display for Sources {
    /// One line: `interrupts: yes; vmstat_tlb: no (REASON); ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, source)) in self.named().iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            match source {
                Source::Available(_) => write!(f, "{name}: yes")?,
                Source::Unavailable { reason } => write!(f, "{name}: no ({reason})")?,
            }
        }
        Ok(())
    }
}

/// Finds a mounted tracefs whose `instances/` this process may write. Only checks; the tracer
/// crate creates and removes its instance.
pub fn probe_tracefs() -> Source<String> {
    for dir in TRACEFS_CANDIDATES {
        let dir = Path::new(dir);
        if !dir.join("trace").exists() {
            continue;
        }
        let instances = dir.join("instances");
        return match nix::unistd::access(&instances, nix::unistd::AccessFlags::W_OK) {
            Ok(()) => Source::Available(format!("{} (instances/ writable)", dir.display())),
            Err(e) => Source::unavailable(format!(
                "tracefs at {} but {} is not writable: {e} (needs root)",
                dir.display(),
                instances.display()
            )),
        };
    }
    Source::unavailable(format!(
        "no tracefs at {} (not mounted, or not readable without root)",
        TRACEFS_CANDIDATES.join(" or ")
    ))
}
