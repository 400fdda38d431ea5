//! `/proc/vmstat` TLB flush counters. They exist only in kernels built with
//! `CONFIG_DEBUG_TLBFLUSH` (Linux `include/linux/vm_event_item.h`), which most distributions leave off.

use crate::error::counter_delta;
use crate::{Error, Source};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The path read by [`TlbFlushCounters::read`].
pub const PROC_VMSTAT: &str = "/proc/vmstat";

/// The reason given when the counters are absent.
pub const NO_DEBUG_TLBFLUSH: &str = "not available: kernel built without CONFIG_DEBUG_TLBFLUSH";

/// Parses `/proc/vmstat` (`name value` per line) into a map.
pub fn parse_vmstat(text: &str) -> Result<BTreeMap<String, u64>, Error> {
    let mut map = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
            return Err(Error::Parse {
                what: PROC_VMSTAT.to_owned(),
                line: i + 1,
                message: format!("expected 'name value', found {line:?}"),
            });
        };
        let value = value.parse::<u64>().map_err(|_| Error::Parse {
            what: PROC_VMSTAT.to_owned(),
            line: i + 1,
            message: format!("value of {name} is not an unsigned integer: {value:?}"),
        })?;
        map.insert(name.to_owned(), value);
    }
    Ok(map)
}

/// The four TLB flush event counters (system-wide, summed over CPUs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TlbFlushCounters {
    /// `nr_tlb_remote_flush`: flushes that had to reach other CPUs (counted at the sender).
    pub remote_flush: u64,
    /// `nr_tlb_remote_flush_received`: remote flush requests handled (counted at each receiver).
    pub remote_flush_received: u64,
    /// `nr_tlb_local_flush_all`: full local flushes.
    pub local_flush_all: u64,
    /// `nr_tlb_local_flush_one`: single-page local flushes.
    pub local_flush_one: u64,
}

impl TlbFlushCounters {
    /// The counters' names in `/proc/vmstat`, in field order.
    pub const NAMES: [&'static str; 4] = [
        "nr_tlb_remote_flush",
        "nr_tlb_remote_flush_received",
        "nr_tlb_local_flush_all",
        "nr_tlb_local_flush_one",
    ];

    /// Picks the counters out of a parsed vmstat; unavailable (with the reason) when absent.
    pub fn from_vmstat(map: &BTreeMap<String, u64>) -> Source<Self> {
        let values: Vec<Option<u64>> = Self::NAMES.iter().map(|n| map.get(*n).copied()).collect();
        match values.as_slice() {
            [Some(a), Some(b), Some(c), Some(d)] => Source::Available(TlbFlushCounters {
                remote_flush: *a,
                remote_flush_received: *b,
                local_flush_all: *c,
                local_flush_one: *d,
            }),
            _ if values.iter().all(Option::is_none) => Source::unavailable(NO_DEBUG_TLBFLUSH),
            _ => {
                let missing: Vec<_> = Self::NAMES
                    .iter()
                    .zip(&values)
                    .filter(|(_, v)| v.is_none())
                    .map(|(n, _)| *n)
                    .collect();
                Source::unavailable(format!(
                    "{PROC_VMSTAT} lacks {} (unknown kernel layout)",
                    missing.join(", ")
                ))
            }
        }
    }

    /// Reads `/proc/vmstat`. `Err` when the file cannot be read or parsed; `Ok(Unavailable)` when
    /// the kernel does not count TLB flushes.
    pub fn read() -> Result<Source<Self>, Error> {
        Self::read_from(Path::new(PROC_VMSTAT))
    }

    /// Like [`read`](Self::read), from another file.
    pub fn read_from(path: &Path) -> Result<Source<Self>, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Ok(Self::from_vmstat(&parse_vmstat(&text)?))
    }

    /// `after - before`, field by field.
    pub fn delta(before: &Self, after: &Self) -> Result<Self, Error> {
        let [a, b, c, d] = Self::NAMES;
        Ok(TlbFlushCounters {
            remote_flush: counter_delta(a, before.remote_flush, after.remote_flush)?,
            remote_flush_received: counter_delta(
                b,
                before.remote_flush_received,
                after.remote_flush_received,
            )?,
            local_flush_all: counter_delta(c, before.local_flush_all, after.local_flush_all)?,
            local_flush_one: counter_delta(d, before.local_flush_one, after.local_flush_one)?,
        })
    }
}
