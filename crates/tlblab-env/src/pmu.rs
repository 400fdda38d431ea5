//! Hardware counters through `perf_event_open(2)`: dTLB load misses and CPU cycles for the calling
//! process, inherited by threads created after opening.
//!
//! Many VMs (this project's included) expose no PMU: opening fails with ENOENT or EOPNOTSUPP. That is
//! a normal outcome, reported as [`Source::Unavailable`] with the error, not a failure.
//! Only user-space events are counted, so `perf_event_paranoid` up to 2 allows it without root.

#[cfg(target_os = "linux")]
use crate::Error;
use crate::Source;
use serde::{Deserialize, Serialize};

/// One reading of the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmuReading {
    /// Generic `dTLB-load-misses` (PERF_COUNT_HW_CACHE_DTLB, READ, MISS), user space only.
    pub dtlb_load_misses: u64,
    /// PERF_COUNT_HW_CPU_CYCLES, user space only; `None` when only the dTLB event could be opened.
    pub cycles: Option<u64>,
    /// Nanoseconds the dTLB counter was enabled, and was actually on the PMU. They differ when the
    /// kernel multiplexed counters; the count then covers only the running share.
    pub time_enabled_ns: u64,
    /// See `time_enabled_ns`.
    pub time_running_ns: u64,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Hardware};
    use perf_event::{Builder, Counter};

    const DTLB_LOAD_MISSES: Cache =
        Cache { which: CacheId::DTLB, operation: CacheOp::READ, result: CacheResult::MISS };

    /// Open counters, disabled until [`enable`](Self::enable).
    #[derive(Debug)]
    pub struct PmuCounters {
        dtlb: Counter,
        cycles: Option<Counter>,
    }

    fn open<E: perf_event::events::Event>(event: E) -> std::io::Result<Counter> {
        Builder::new(event).observe_self().any_cpu().inherit(true).build()
    }

    fn syscall(what: &str, source: std::io::Error) -> Error {
        Error::Syscall { call: format!("perf event {what}"), source }
    }

    impl PmuCounters {
        /// Opens the counters for this process (any CPU, inherited by new threads).
        pub fn open() -> Source<PmuCounters> {
            match open(DTLB_LOAD_MISSES) {
                Ok(dtlb) => {
                    Source::Available(PmuCounters { dtlb, cycles: open(Hardware::CPU_CYCLES).ok() })
                }
                Err(e) => Source::unavailable(match open(Hardware::CPU_CYCLES) {
                    Ok(_) => format!(
                        "PMU present but no generic dTLB event: \
                         perf_event_open(dTLB-load-misses) failed: {e}"
                    ),
                    Err(_) => format!("no PMU: perf_event_open(dTLB-load-misses) failed: {e}"),
                }),
            }
        }

        /// Whether the cycles counter could be opened too.
        pub fn has_cycles(&self) -> bool {
            self.cycles.is_some()
        }

        /// Starts counting.
        pub fn enable(&mut self) -> Result<(), Error> {
            self.dtlb.enable().map_err(|e| syscall("enable", e))?;
            if let Some(c) = &mut self.cycles {
                c.enable().map_err(|e| syscall("enable", e))?;
            }
            Ok(())
        }

        /// Stops counting.
        pub fn disable(&mut self) -> Result<(), Error> {
            self.dtlb.disable().map_err(|e| syscall("disable", e))?;
            if let Some(c) = &mut self.cycles {
                c.disable().map_err(|e| syscall("disable", e))?;
            }
            Ok(())
        }

        /// Sets the counts to zero.
        pub fn reset(&mut self) -> Result<(), Error> {
            self.dtlb.reset().map_err(|e| syscall("reset", e))?;
            if let Some(c) = &mut self.cycles {
                c.reset().map_err(|e| syscall("reset", e))?;
            }
            Ok(())
        }

        /// Reads the current counts.
        pub fn read(&mut self) -> Result<PmuReading, Error> {
            let d = self.dtlb.read_full().map_err(|e| syscall("read", e))?;
            let cycles = match &mut self.cycles {
                Some(c) => Some(c.read().map_err(|e| syscall("read", e))?),
                None => None,
            };
            let ns = |t: Option<std::time::Duration>| {
                t.map_or(0, |t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
            };
            Ok(PmuReading {
                dtlb_load_misses: d.count(),
                cycles,
                time_enabled_ns: ns(d.time_enabled()),
                time_running_ns: ns(d.time_running()),
            })
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    /// Never constructed off Linux: `perf_event_open` is Linux-only.
    #[derive(Debug)]
    pub struct PmuCounters(std::convert::Infallible);

    impl PmuCounters {
        /// Always unavailable off Linux.
        pub fn open() -> Source<PmuCounters> {
            Source::unavailable("no PMU access: perf_event_open exists only on Linux")
        }

        /// Unreachable: no value exists.
        pub fn has_cycles(&self) -> bool {
            match self.0 {}
        }
    }
}

pub use imp::PmuCounters;

/// Whether the PMU offers the dTLB event here: `Available` with a short note, or the reason.
pub fn probe() -> Source<String> {
    PmuCounters::open().map(|c| {
        format!(
            "perf_event_open: dTLB-load-misses{}",
            if c.has_cycles() { " and cycles" } else { "" }
        )
    })
}
