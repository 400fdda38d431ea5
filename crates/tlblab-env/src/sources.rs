//! [`Sources`]: which counter sources this machine offers, for a result's
//! "which sources were available" line.

use crate::interrupts::InterruptSnapshot;
use crate::rusage::RusageSnapshot;
use crate::vmstat::TlbFlushCounters;
use crate::{pmu, Source};
use serde::{Deserialize, Serialize};
use std::fmt;

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

/// Finds the mounted tracefs (as the tracer does, through `/proc/mounts`) and checks that this
/// process may write its `instances/`. Only checks; the tracer crate creates and removes its
/// instance.
pub fn probe_tracefs() -> Source<String> {
    let tracefs = match tlblab_tracefs::Tracefs::find() {
        Ok(t) => t,
        Err(e) => return Source::unavailable(e.to_string()),
    };
    let instances = tracefs.root().join("instances");
    match nix::unistd::access(&instances, nix::unistd::AccessFlags::W_OK) {
        Ok(()) => Source::Available(format!("{} (instances/ writable)", tracefs.root().display())),
        Err(e) => Source::unavailable(format!(
            "tracefs at {} but {} is not writable: {e} (needs root)",
            tracefs.root().display(),
            instances.display()
        )),
    }
}
