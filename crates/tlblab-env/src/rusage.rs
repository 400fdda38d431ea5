//! Page faults and context switches of the measuring process and its children (`getrusage(2)`).
//!
//! `RUSAGE_SELF` sums over all threads of the process, so a multi-threaded scenario is covered.
//! `RUSAGE_CHILDREN` covers only children that have terminated and been waited for.

use crate::error::counter_delta;
use crate::Error;
use nix::libc::c_long as libc_long;
use nix::sys::resource::{getrusage, Usage, UsageWho};
use serde::{Deserialize, Serialize};

/// Fault and switch counts of one `getrusage` scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessCounters {
    /// `ru_minflt`: faults served without I/O (including first touches of anonymous memory).
    pub minor_faults: u64,
    /// `ru_majflt`: faults that needed I/O.
    pub major_faults: u64,
    /// `ru_nvcsw`: switches because the task blocked or yielded.
    pub voluntary_switches: u64,
    /// `ru_nivcsw`: switches because the task was preempted.
    pub involuntary_switches: u64,
}

impl ProcessCounters {
    fn from_usage(u: &Usage) -> Self {
        // The kernel fills these from unsigned counters; a negative value cannot occur.
        fn n(v: libc_long) -> u64 {
            u64::try_from(v).unwrap_or(0)
        }
        ProcessCounters {
            minor_faults: n(u.minor_page_faults()),
            major_faults: n(u.major_page_faults()),
            voluntary_switches: n(u.voluntary_context_switches()),
            involuntary_switches: n(u.involuntary_context_switches()),
        }
    }

    /// `after - before`, field by field; `scope` names the counters in errors.
    pub fn delta(scope: &str, before: &Self, after: &Self) -> Result<Self, Error> {
        let d = |name: &str, b, a| counter_delta(&format!("{scope} {name}"), b, a);
        Ok(ProcessCounters {
            minor_faults: d("minor_faults", before.minor_faults, after.minor_faults)?,
            major_faults: d("major_faults", before.major_faults, after.major_faults)?,
            voluntary_switches: d(
                "voluntary_switches",
                before.voluntary_switches,
                after.voluntary_switches,
            )?,
            involuntary_switches: d(
                "involuntary_switches",
                before.involuntary_switches,
                after.involuntary_switches,
            )?,
        })
    }
}

/// The process's own counters (all threads) and those of its waited-for children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RusageSnapshot {
    /// `RUSAGE_SELF`.
    pub process: ProcessCounters,
    /// `RUSAGE_CHILDREN`.
    pub children: ProcessCounters,
}

impl RusageSnapshot {
    /// Calls `getrusage` for both scopes.
    pub fn read() -> Result<Self, Error> {
        let get = |who, name: &str| {
            getrusage(who).map_err(|e| Error::Syscall {
                call: format!("getrusage({name})"),
                source: e.into(),
            })
        };
        Ok(RusageSnapshot {
            process: ProcessCounters::from_usage(&get(UsageWho::RUSAGE_SELF, "RUSAGE_SELF")?),
            children: ProcessCounters::from_usage(&get(
                UsageWho::RUSAGE_CHILDREN,
                "RUSAGE_CHILDREN",
            )?),
        })
    }

    /// `after - before` for both scopes.
    pub fn delta(before: &Self, after: &Self) -> Result<Self, Error> {
        Ok(RusageSnapshot {
            process: ProcessCounters::delta("process", &before.process, &after.process)?,
            children: ProcessCounters::delta("children", &before.children, &after.children)?,
        })
    }
}
